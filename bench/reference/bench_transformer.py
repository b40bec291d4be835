"""bench_transformer.py: one Transformer layer's training step (forward, then backward of
sum(out * R)) in the toolkit (bench/bench_transformer.c, seq/transformer.h) against PyTorch's
nn.TransformerEncoderLayer / nn.TransformerDecoderLayer on the same sizes, one thread each.

    /usr/bin/python3 bench/reference/bench_transformer.py [--build build] [--reps 3]
        [--B 16] [--T 32] [--d 256] [--heads 4] [--d-ff 1024] [--seconds 1]

run from the repository root. Both layers pre-LN (norm_first=True), ReLU, dropout 0,
batch_first, float32, no masks (every length T; the decoder's self-attention causal, its
memory S = T). PyTorch: torch.set_num_threads(1), the same OPENBLAS_CORETYPE as the toolkit
(bench_train.coretype()), autograd's backward with the parameters' gradients zeroed each
step (set_to_none=False, as the toolkit zeroes its block). Each of --reps rounds runs every
(layer, side) once, so the machine's drift over minutes spreads over both sides; the median
round counts. Reported: wall ms per step and CPU ms per step (the process's CPU time over the
timed steps: on a loaded machine, what an idle core would take), and the load average
(/proc/loadavg) before and after.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_train  # noqa: E402  (coretype())


def torch_step_times(layer, B, T, d, heads, d_ff, seconds):
    """The PyTorch side, in this process: (wall ms per step, CPU ms per step, steps)."""
    import torch
    import torch.nn as nn
    torch.set_num_threads(1)
    torch.manual_seed(1)
    cls = nn.TransformerDecoderLayer if layer == "decoder" else nn.TransformerEncoderLayer
    mod = cls(d, heads, d_ff, dropout=0.0, batch_first=True, norm_first=True)
    x = torch.rand(B, T, d) * 2 - 1
    mem = torch.rand(B, T, d) * 2 - 1
    R = torch.rand(B, T, d) * 2 - 1
    causal = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)

    def step():
        mod.zero_grad(set_to_none=False)
        xi = x.clone().requires_grad_()
        if layer == "decoder":
            mi = mem.clone().requires_grad_()
            out = mod(xi, mi, tgt_mask=causal)
        else:
            out = mod(xi)
        (out * R).sum().backward()

    step(), step()
    n, t0, c0 = 0, time.perf_counter(), time.process_time()
    while n < 3 or time.perf_counter() - t0 < seconds:
        step()
        n += 1
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return 1e3 * wall / n, 1e3 * cpu / n, n


def run_side(side, layer, a, env):
    if side == "toolkit":
        cmd = [os.path.join(a.build, "bench", "bench_transformer"), layer, str(a.B), str(a.T),
               str(a.d), str(a.heads), str(a.d_ff), str(a.seconds)]
    else:
        cmd = [sys.executable, os.path.abspath(__file__), "--torch-side", layer, "--B", str(a.B),
               "--T", str(a.T), "--d", str(a.d), "--heads", str(a.heads), "--d-ff", str(a.d_ff),
               "--seconds", str(a.seconds)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default="build")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--B", type=int, default=16)
    p.add_argument("--T", type=int, default=32)
    p.add_argument("--d", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--d-ff", type=int, default=1024)
    p.add_argument("--seconds", type=float, default=1.0)
    p.add_argument("--torch-side", choices=("encoder", "decoder"))
    a = p.parse_args()
    if a.torch_side:
        wall, cpu, n = torch_step_times(a.torch_side, a.B, a.T, a.d, a.heads, a.d_ff, a.seconds)
        print(json.dumps({"impl": "pytorch", "layer": a.torch_side, "steps": n,
                          "ms_per_step": round(wall, 3), "cpu_ms_per_step": round(cpu, 3)}))
        return 0
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    ct = bench_train.coretype()
    if ct:
        env["OPENBLAS_CORETYPE"] = ct
    print(f"load average before: {loadavg()}")
    print(f"B {a.B}, T {a.T}, d {a.d}, heads {a.heads}, d_ff {a.d_ff}, one thread, "
          f"OPENBLAS_CORETYPE={env.get('OPENBLAS_CORETYPE', 'default')}, {a.reps} rounds")
    rows = {}
    for _ in range(a.reps):
        for layer in ("encoder", "decoder"):
            for side in ("toolkit", "pytorch"):
                r = run_side(side, layer, a, env)
                rows.setdefault((layer, side), []).append(r)
    print(f"load average after: {loadavg()}")
    print("| layer | side | wall ms/step (median) | CPU ms/step (median) | rounds (CPU ms) |")
    print("|---|---|---|---|---|")
    for (layer, side), rs in rows.items():
        wall = statistics.median(r["ms_per_step"] for r in rs)
        cpu = statistics.median(r["cpu_ms_per_step"] for r in rs)
        each = ", ".join(f"{r['cpu_ms_per_step']:.1f}" for r in rs)
        print(f"| {layer} | {side} | {wall:.1f} | {cpu:.1f} | {each} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
