"""bench_encoders.py: pretrained-encoder inference, the toolkit against PyTorch, on this machine.

    /usr/bin/python3 bench/reference/bench_encoders.py [--build build] [--threads 2]
        [--batch 16] [--size 224] [--reps 3] [--archs vgg19,resnet101]

run from the repository root (bench/run.sh does). For VGG-19 to conv5_4 and ResNet-101 to
layer4, batch 16 of 224 px images, on the same number of threads: build/bench/bench_encoder
(vision/encoder.h: THREADS workers each with one-thread GEMMs, groups of 4 images; the
weights read from a safetensors file of random torchvision weights, classifier included, as
a user's file would be) against PyTorch 1.13 (the same torchvision modules, random weights,
eval mode under torch.no_grad, torch.set_num_threads(THREADS); its convolutions run through
oneDNN). Only the encoder part is built on the PyTorch side (no classifier to allocate).
The toolkit runs the kernels it chose for this machine (core/gemm.h; the table prints them).
Each side is its own process: one warm-up batch, then 3 timed batches, the median batch
counts; peak resident memory is the process's ru_maxrss (wait4), PyTorch's import included;
images per CPU-second (process CPU time over the timed batches) show what idle cores would
do when the machine is shared (PyTorch's OpenMP threads lose more to a loaded machine).
A third side, ONNX Runtime (npm's onnxruntime-node, its CPU library, which `make
bench-deps` installs under bench-deps/ort), runs the same networks with the same weights,
exported by export_onnx.py (torch.onnx), through bench_ort.js: THREADS intra-op threads,
graph optimisation level 'all'; its first batch is checked against torchvision's output (the
largest absolute difference is printed) so that it computes the same network. Without node
or the package (--ort names its node_modules folder) its columns say "n/a".
Every setting runs --reps rounds, the sides alternating, and the table gives the median
round. The convolutions' FLOP rate (2 K K C OC Ho Wo per convolution, counted as a direct
convolution whatever the method) is also given as a share of the sgemm peak (1024^3 through
build/bench/bench_gemm on the same threads). The load average is printed beside the figures:
on a shared machine, re-run when it is quiet.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_train  # noqa: E402

# PyTorch is imported only by the child processes (--torch-side, --write-weights): a parent
# holding it would hand its resident memory to every child it forks, whose peak (ru_maxrss)
# counts the pages it had before exec.


def torch_side(arch, batch, size, threads, batches):
    """One PyTorch measurement; prints a JSON object."""
    import torch
    import encoders_ref
    torch.set_num_threads(threads)
    gen = torch.Generator().manual_seed(1)
    net = cut_network(arch, gen)
    x = torch.randn(batch, 3, size, size, generator=gen)
    times = []
    with torch.no_grad():
        net(x)
        c0 = time.process_time()
        for _ in range(batches):
            t = time.perf_counter()
            y = net(x)
            times.append(time.perf_counter() - t)
    cpu = time.process_time() - c0
    med = statistics.median(times)
    print(json.dumps({"arch": arch, "images_per_s": batch / med, "ms_per_batch": 1e3 * med,
                      "images_per_cpu_s": batch * batches / cpu, "out": list(y.shape)}))


def cut_network(arch, gen):
    """The encoder part of arch (VGG to its last ReLU, ResNet to layer4) with random weights
    drawn from gen: what the PyTorch side times and export_onnx.py exports."""
    import encoders_ref
    if arch in encoders_ref.VGG_CFG:
        net = torchvision_vgg_features(arch)
    else:
        m = encoders_ref.build(arch)
        del m.fc
        import torch
        net = torch.nn.Sequential(m.conv1, m.bn1, m.relu, m.maxpool, m.layer1, m.layer2,
                                  m.layer3, m.layer4)
    return encoders_ref.randomize(net, gen)


def torchvision_vgg_features(arch):
    import torch
    import torchvision
    import encoders_ref
    layers = torchvision.models.vgg.make_layers(encoders_ref.VGG_CFG[arch])
    return torch.nn.Sequential(*list(layers)[:-1])  # to the last ReLU


def write_weights(arch, path):
    """Random torchvision weights of the full model (classifier included) as safetensors."""
    import torch
    import encoders_ref
    import safetensors_io
    model = encoders_ref.randomize(encoders_ref.build(arch), torch.Generator().manual_seed(3))
    sd = model.state_dict()
    del model
    safetensors_io.save(path, {k: v.numpy() for k, v in sd.items()}, {"arch": arch},
                        {k: ("F32" if v.is_floating_point() else "I64") for k, v in sd.items()})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--group", type=int, default=4)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--archs", default="vgg19,resnet101")
    ap.add_argument("--ort", default=os.path.join("bench-deps", "ort", "node_modules"),
                    help="the node_modules folder holding onnxruntime-node")
    ap.add_argument("--torch-side", nargs=2, metavar=("ARCH", "BATCHES"), help=argparse.SUPPRESS)
    ap.add_argument("--write-weights", nargs=2, metavar=("ARCH", "PATH"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.torch_side:
        torch_side(a.torch_side[0], a.batch, a.size, a.threads, int(a.torch_side[1]))
        return 0
    if a.write_weights:
        write_weights(*a.write_weights)
        return 0
    py = sys.executable or "/usr/bin/python3"
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)
    # The toolkit's side runs the kernels it chooses (core/gemm.h: measured once per machine,
    # or ATTEND_GEMM as you set it); PyTorch's side gets the core type the table would pick
    # (its convolutions run through oneDNN, not OpenBLAS).
    core = bench_train.coretype()
    torch_env = dict(env)
    if core:
        torch_env["OPENBLAS_CORETYPE"] = core
    tmp = tempfile.mkdtemp(prefix="attend-bench-enc-")
    log = sys.stdout
    print(time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()) +
          f", {os.cpu_count()} CPUs, PyTorch's OPENBLAS_CORETYPE={core or 'default'}, threads {a.threads}, "
          f"batch {a.batch}, {a.size} px, load average {open('/proc/loadavg').read().split()[0:3]}")
    gemm, _, _ = bench_train.run([os.path.join(a.build, "bench", "bench_gemm"), "0.5"], env, tmp,
                                 open(os.devnull, "w"))
    text = open(os.path.join(tmp, "stdout")).read()
    peak = bench_train.parse_gemm(text).get(a.threads)
    ort = ort_available(a.ort)
    if not ort:
        print(f"ONNX Runtime: skipped (no node, or no onnxruntime-node under {a.ort}: "
              "make bench-deps installs it)")
    rows = []
    kernels = "?"
    try:
        for arch in a.archs.split(","):
            wpath = os.path.join(tmp, arch + ".safetensors")
            subprocess.run([py, os.path.relpath(__file__), "--write-weights", arch, wpath], check=True)
            onnx = ort and export_for_ort(py, arch, a, tmp)
            c_runs, t_runs, o_runs = [], [], []
            for _ in range(a.reps):
                r, rss, _ = bench_train.run(
                    [os.path.join(a.build, "bench", "bench_encoder"), arch, wpath, str(a.batch),
                     str(a.size), str(a.threads), str(min(a.group, a.batch)), "auto", "3"],
                    env, tmp, log)
                if r:
                    c_runs.append((r["images_per_s"], rss, r["conv_gflops"], r["images_per_cpu_s"]))
                    kernels = r.get("gemm_kernels", "?")
                r, rss, _ = bench_train.run(
                    [py, os.path.relpath(__file__), "--batch", str(a.batch), "--size", str(a.size), "--threads",
                     str(a.threads), "--torch-side", arch, "3"], torch_env, tmp, log)
                if r:
                    t_runs.append((r["images_per_s"], rss, r["images_per_cpu_s"]))
                if onnx:
                    o_runs.extend(run_ort(onnx, a, env, tmp, log))
            os.remove(wpath)
            for f in onnx or ():
                os.remove(f)
            if not c_runs or not t_runs:
                print(f"{arch}: a side failed, see above")
                continue
            c = sorted(c_runs)[len(c_runs) // 2]
            t = sorted(t_runs)[len(t_runs) // 2]
            o = sorted(o_runs)[len(o_runs) // 2] if o_runs else None
            rows.append((arch, c, t, o))
    finally:
        for f in os.listdir(tmp):
            os.remove(os.path.join(tmp, f))
        os.rmdir(tmp)
    print(f"\nload average now {open('/proc/loadavg').read().split()[0:3]}; sgemm 1024^3 peak on "
          f"{a.threads} thread(s): {peak} GFLOP/s; the toolkit's kernels: {kernels}")
    print("| encoder | toolkit images/s | PyTorch images/s | ORT images/s | toolkit / PyTorch | "
          "toolkit / ORT | peak RSS MiB, toolkit / PyTorch / ORT | conv GFLOP/s | share of "
          "sgemm peak | images per CPU-s, toolkit / PyTorch / ORT |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for arch, c, t, o in rows:
        share = f"{c[2] / peak:.2f}" if peak else "n/a"
        o_rate, o_ratio, o_rss, o_cpu = ((f"{o[0]:.2f}", f"{c[0] / o[0]:.2f}", f"{o[1]:.0f}",
                                          f"{o[2]:.2f}") if o else ("n/a",) * 4)
        print(f"| {arch} | {c[0]:.2f} | {t[0]:.2f} | {o_rate} | {c[0] / t[0]:.2f} | {o_ratio} "
              f"| {c[1]:.0f} / {t[1]:.0f} / {o_rss} | {c[2]:.1f} | {share} "
              f"| {c[3]:.2f} / {t[2]:.2f} / {o_cpu} |")
    return 0


def ort_available(modules):
    """True when node runs and onnxruntime-node is installed under modules."""
    if not os.path.isfile(os.path.join(modules, "onnxruntime-node", "package.json")):
        return False
    try:
        return subprocess.run(["node", "--version"], capture_output=True).returncode == 0
    except OSError:
        return False


def export_for_ort(py, arch, a, tmp):
    """Exports arch's cut network (export_onnx.py) with a check batch into tmp; returns
    (model, input, reference) paths, or None when the export failed."""
    paths = tuple(os.path.join(tmp, f"{arch}{ext}") for ext in (".onnx", "_in.bin", "_ref.bin"))
    r = subprocess.run([py, os.path.join(os.path.dirname(os.path.relpath(__file__)), "export_onnx.py"),
                        arch, paths[0], "--batch", str(a.batch), "--size", str(a.size),
                        "--check", paths[1], paths[2]], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"{arch}: the ONNX export failed: {r.stderr[-600:]}")
        return None
    return paths


def run_ort(onnx, a, env, tmp, log):
    """One ONNX Runtime measurement: [(images/s, peak RSS MiB, images per CPU-s)] or []."""
    ort_env = dict(env, ORT_NODE_MODULES=os.path.abspath(a.ort))
    script = os.path.join(os.path.dirname(os.path.relpath(__file__)), "bench_ort.js")
    r, rss, _ = bench_train.run(["node", script, onnx[0], str(a.batch), str(a.size),
                                 str(a.threads), "3", onnx[1], onnx[2]], ort_env, tmp, log)
    if not r:
        return []
    print(f"  {r['runtime']}: output {r['out']}, largest |ORT - torchvision| "
          f"{r['max_abs_diff']:.3g}", file=log)
    return [(r["images_per_s"], rss, r["images_per_cpu_s"])]


if __name__ == "__main__":
    sys.exit(main())
