"""bench_sat_features.py: training on cached features and extracting them, on this machine.

    /usr/bin/python3 bench/reference/bench_sat_features.py [--build build] [--bin bin]
        [--threads 2] [--steps 5] [--images 24]

run from the repository root (bench/run.sh does). Each measurement is its own process,
peak resident memory its ru_maxrss (from wait4):
  1. decoder-only training, Xu et al.'s decoder sizes (embedding 512, LSTM 1800, attention
     512, 10,000 words) on 14 x 14 x 512 F16 features, batch 64: build/bench/
     bench_sat_features (which writes the 256-image stand-in cache first) against
     sat_features_ref.py reading the same file, both on --threads threads (PyTorch's
     intra-op threads; the toolkit's data-parallel workers), OPENBLAS_CORETYPE as
     core/gemm.c chooses it; images/s, images per CPU-second and peak RSS, and the ratios;
  2. extraction: `bin/caption features` with a full-width VGG-19 (torchvision's
     architecture, random weights, converted by pth_to_safetensors.py) at 224 px over
     --images photographs-sized JPEGs (500 x 375, noise) on --threads threads: images/s as
     the command reports it (decoding, preprocessing, the network and the writes).
Needs python3-torch, python3-torchvision, python3-numpy and python3-pil. Prints the figures
and a markdown table; a machine shared with other work moves them, so say the load.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.relpath(os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
from bench_train import coretype, run  # noqa: E402


def extraction(a, env, tmp, log):
    import numpy as np
    import torch
    import torchvision
    from PIL import Image
    torch.manual_seed(0)
    pth = os.path.join(tmp, "vgg19.pth")
    torch.save(torchvision.models.vgg19().state_dict(), pth)
    weights = os.path.join(tmp, "vgg19.safetensors")
    subprocess.run([sys.executable, os.path.join(HERE, "pth_to_safetensors.py"), pth, weights,
                    "--no-classifier"], check=True, stdout=subprocess.DEVNULL)
    os.remove(pth)
    img_dir = os.path.join(tmp, "photos")
    os.makedirs(img_dir)
    rng = np.random.default_rng(0)
    with open(os.path.join(tmp, "captions.tsv"), "w") as f:
        for i in range(a.images):
            name = f"photo_{i:03d}.jpg"
            Image.fromarray(rng.integers(0, 256, (375, 500, 3), dtype=np.uint8)).save(
                os.path.join(img_dir, name), quality=90)
            f.write(f"{name}\ta photograph number {i}\n")
    cmd = [os.path.join(a.bin, "caption"), "features", "--encoder", f"vgg19:{weights}",
           "--data", f"tsv:{tmp}/captions.tsv:{img_dir}", "--out", os.path.join(tmp, "f.features"),
           "--threads", str(a.threads), "--quiet"]
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stderr=subprocess.PIPE, env=env, text=True)
    _, status, ru = os.wait4(p.pid, 0)
    err = p.stderr.read()
    wall = time.perf_counter() - t0
    print(f"$ {' '.join(cmd)}".replace(tmp, "$TMP"), file=log)
    print("  " + err.strip().replace(tmp, "$TMP").replace("\n", "\n  "), file=log)
    m = re.search(r"\(([0-9.]+) images/s\)", err)
    if os.waitstatus_to_exitcode(status) != 0 or not m:
        print("  FAILED", file=log)
        return None
    return {"images_per_s": float(m.group(1)), "peak_rss_mib": ru.ru_maxrss / 1024.0,
            "wall_s": wall}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--bin", default="bin")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--images", type=int, default=24)
    a = ap.parse_args()
    env = dict(os.environ)
    if coretype():
        env["OPENBLAS_CORETYPE"] = coretype()
    tmp = tempfile.mkdtemp(prefix="bench_sat_features_")
    log = sys.stdout
    try:
        load0 = open("/proc/loadavg").read().split()[:3]
        cache = os.path.join(tmp, "bench.features")
        c_res, c_rss, _ = run([os.path.join(a.build, "bench", "bench_sat_features"), cache,
                               str(a.threads), str(a.steps), "64"], env, tmp, log)
        # PyTorch (Debian's, on OpenBLAS) runs its products on OpenBLAS's own threads, which
        # torch.set_num_threads does not reach: give OpenBLAS the same count. On several
        # threads, PyTorch's faster use of the cores is taken: its intra-op threads, or one
        # intra-op thread with OpenBLAS's threads.
        tenv = dict(env, OPENBLAS_NUM_THREADS=str(a.threads))
        t_res, t_rss = None, 0
        for torch_threads in sorted({a.threads, 1}, reverse=True):
            r, rss, _ = run([sys.executable, os.path.join(HERE, "sat_features_ref.py"), cache,
                             "--threads", str(torch_threads), "--steps", str(a.steps)],
                            tenv, tmp, log)
            if r and (not t_res or r["images_per_s"] > t_res["images_per_s"]):
                t_res, t_rss = r, rss
        ext = extraction(a, env, tmp, log)
        load1 = open("/proc/loadavg").read().split()[:3]
        print(f"\nload average before {' '.join(load0)}, after {' '.join(load1)}; "
              f"{a.threads} threads; OPENBLAS_CORETYPE={env.get('OPENBLAS_CORETYPE', '')}")
        print("\n| decoder-only training, batch 64 | images/s | images/CPU-s | peak RSS MiB |")
        print("|---|---|---|---|")
        torch_name = (f"PyTorch ({t_res['threads']} intra-op, {a.threads} OpenBLAS threads)"
                      if t_res else "PyTorch")
        for name, r, rss in (("toolkit", c_res, c_rss), (torch_name, t_res, t_rss)):
            if r:
                print(f"| {name} | {r['images_per_s']:.2f} | {r['images_per_cpu_s']:.2f} | {rss:.0f} |")
        if c_res and t_res:
            print(f"| toolkit / PyTorch | {c_res['images_per_s'] / t_res['images_per_s']:.2f}x | "
                  f"{c_res['images_per_cpu_s'] / t_res['images_per_cpu_s']:.2f}x | "
                  f"{c_rss / t_rss:.2f}x |")
        if ext:
            print(f"\nVGG-19 extraction (caption features, 224 px, {a.images} JPEGs 500 x 375): "
                  f"{ext['images_per_s']:.2f} images/s, peak RSS {ext['peak_rss_mib']:.0f} MiB")
        return 0 if c_res and t_res and ext else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
