"""bench_glimpse.py: training throughput of the glimpse classifier (models/glimpse.h, the
paper's configuration: 100 x 100, 8 glimpses of 12 x 12, LSTM 256, batch 64) in the toolkit
against its PyTorch version (glimpse_ref.py), on the same threads.

    /usr/bin/python3 bench/reference/bench_glimpse.py [--bin bin] [--steps 60] [--reps 3]

run from the repository root (bench/run.sh does). For threads 1 and 2, each side runs --reps
times, in rounds that run every setting once (the machine's speed drifts over minutes; the
rounds spread that over both sides), and the median round counts:
  the toolkit: `bin/draw classify train --steps STEPS --batch 64 --threads N --json` on real
      cluttered MNIST; images_per_s is the step time only (the clutter of each batch is made
      inside the step, so it counts against the toolkit);
  PyTorch: `glimpse_ref.py bench --threads N` (torch intra-op threads, and OpenBLAS's
      threads set to N too; the batches are random tensors made outside the timed region),
      torch.optim.Adam and gradient clipping as the toolkit does.
OPENBLAS_CORETYPE is set for both (the user's value, else what core/gemm.c would choose).
On a machine shared with other work the wall-clock rates swing with the load; the last row,
images per CPU-second on one thread (the toolkit's from the CPU-time difference of a long
and a short run, PyTorch's from time.process_time() around its timed steps), shows what an
idle core would do.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_rounds  # noqa: E402  (run_wait, last_json, bench_env)

HERE = os.path.relpath(os.path.dirname(os.path.abspath(__file__)))


def toolkit(bin_dir, threads, steps, env, tmp):
    """(images per second of step time, the run's CPU seconds)."""
    out = os.path.join(tmp, f"run{threads}")
    shutil.rmtree(out, ignore_errors=True)
    cmd = [os.path.join(bin_dir, "draw"), "classify", "train", "--steps", str(steps),
           "--batch", "64", "--threads", str(threads), "--valid-every", str(10 * steps),
           "--valid-images", "64", "--log-every", "10", "--out", out, "--json"]
    text, _, cpu, _ = bench_rounds.run_wait(cmd, env)
    j = bench_rounds.last_json(text)
    if not j:
        raise SystemExit(f"bench_glimpse: {' '.join(cmd)} printed no JSON")
    return j["images_per_s"], cpu


def pytorch(threads, steps, env, blas_only=False):
    """(images per second, images per CPU-second of its timed steps). blas_only: torch on one
    intra-op thread, its products on `threads` OpenBLAS threads."""
    cmd = ["/usr/bin/python3", os.path.join(HERE, "glimpse_ref.py"), "bench", "--threads",
           "1" if blas_only else str(threads), "--steps", str(max(5, steps // 4))]
    # Debian's torch calls OpenBLAS, whose own thread pool ignores torch.set_num_threads:
    # unset, a one-thread run ran OpenBLAS on two threads (about 850 images per CPU-second
    # against about 1340 with one, on the same machine and load).
    env = dict(env, OPENBLAS_NUM_THREADS=str(threads))
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    j = bench_rounds.last_json(p.stdout)
    if p.returncode or not j:
        raise SystemExit(f"bench_glimpse: {' '.join(cmd)} failed: {p.stderr.strip()[-300:]}")
    return j["images_per_s"], j["images_per_cpu_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="bin")
    ap.add_argument("--steps", type=int, default=60, help="toolkit steps per run")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    env, ct = bench_rounds.bench_env()
    results, cpu = {}, {}
    short = max(1, a.steps // 3)
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(a.reps):
            for threads in (1, 2):
                ips, c_long = toolkit(a.bin, threads, a.steps, env, tmp)
                results.setdefault(("toolkit", threads), []).append(ips)
                if threads == 1:  # CPU per image: a long run less a short one (start-up cancels)
                    _, c_short = toolkit(a.bin, 1, short, env, tmp)
                    cpu.setdefault("toolkit", []).append(64 * (a.steps - short) / max(1e-9, c_long - c_short))
                ips, ipc = pytorch(threads, a.steps, env)
                if threads > 1:  # PyTorch's faster use of the cores: its threads, or OpenBLAS's
                    ips = max(ips, pytorch(threads, a.steps, env, blas_only=True)[0])
                results.setdefault(("pytorch", threads), []).append(ips)
                if threads == 1:
                    cpu.setdefault("pytorch", []).append(ipc)
    load = open("/proc/loadavg").read().split()[:3]
    print(f"glimpse classifier training, 100x100, T 8, read 12x12, LSTM 256, batch 64 "
          f"(OPENBLAS_CORETYPE={ct or 'default'}; load {' '.join(load)}; median of {a.reps})")
    print("(PyTorch on 2 threads: the faster of torch.set_num_threads(2) with 2 OpenBLAS threads\n"
          " and one intra-op thread with 2 OpenBLAS threads, each round)")
    print("| threads | toolkit images/s | PyTorch images/s | ratio |")
    print("|---|---|---|---|")
    for threads in (1, 2):
        t = statistics.median(results[("toolkit", threads)])
        p = statistics.median(results[("pytorch", threads)])
        print(f"| {threads} | {t:.0f} | {p:.0f} | {t / p:.2f}x |")
    t, p = statistics.median(cpu["toolkit"]), statistics.median(cpu["pytorch"])
    print(f"| 1, per CPU-second | {t:.0f} | {p:.0f} | {t / p:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
