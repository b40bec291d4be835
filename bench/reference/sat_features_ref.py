"""sat_features_ref.py: decoder-only Show-Attend-Tell training on a feature cache in PyTorch,
the reference for build/bench/bench_sat_features (same file, same model, same batches'
shapes).

    sat_features_ref.py CACHE [--threads 1] [--steps 5] [--batch 64] [--embed 512]
                        [--hidden 1800] [--attn-dim 512] [--vocab 10000]

CACHE is a feature cache (datasets/featcache.h) written by bench_sat_features; its
annotations (N, L, D) F16 are memory-mapped with numpy (the header parsed here) and each
batch widened to float32, as the toolkit reads them. The decoder is sat_ref.py's
forward_annot (soft additive attention queried by the previous state, scalar gate, lambda
1, no dropout), float32 parameters drawn directly in float32, torch.optim.Adam at 2e-4,
global-norm clipping at 5. Caption lengths 8 + (7 k mod 9) for the k-th caption, as the C
benchmark. One warm-up step, then STEPS timed. Prints one JSON object: images_per_s,
images_per_cpu_s, peak_rss_mib (this process's ru_maxrss).
"""
import argparse
import json
import math
import os
import resource
import struct
import sys
import time

import numpy as np
import torch

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sat_ref  # noqa: E402


def open_cache(path):
    """The annotations of a feature cache as a read-only (N, L, D) float16 memmap."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    t = header["annotations"]
    assert t["dtype"] == "F16", "the benchmark cache is F16"
    shape = tuple(t["shape"])
    return np.memmap(path, dtype=np.float16, mode="r", offset=8 + n + t["data_offsets"][0],
                     shape=shape)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cache")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--embed", type=int, default=512)
    ap.add_argument("--hidden", type=int, default=1800)
    ap.add_argument("--attn-dim", type=int, default=512)
    ap.add_argument("--vocab", type=int, default=10000)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    feats = open_cache(a.cache)
    N, L, D = feats.shape
    G = int(round(math.sqrt(L)))
    assert G * G == L
    # channels (D,) over a G-grid: sat_ref's config for annotations (L, D); no CNN is used.
    c = sat_ref.SatConfig(image_size=2 * G, channels=(D,), E=a.embed, H=a.hidden, V=a.vocab,
                          max_len=16, A=a.attn_dim, lam=1.0, query="previous")
    gen = torch.Generator().manual_seed(1)
    params = {}
    for name, shape in sat_ref.param_shapes(c):
        if name.startswith("enc."):
            continue
        r = 0.1 if name == "embed" else (1.0 / math.sqrt(shape[-1]) if len(shape) == 2 else 0.0)
        t = torch.empty(shape, dtype=torch.float32)
        if r > 0:
            t.uniform_(-r, r, generator=gen)
        else:
            t.zero_()
        if name == "lstm.b":
            t[c.H:2 * c.H] = 1.0
        params[name] = t.requires_grad_()
    opt = torch.optim.Adam(list(params.values()), lr=2e-4)
    order = torch.randperm(N, generator=gen).tolist()
    times, cpu, k, pos, loss = [], [], 0, 0, float("nan")
    for it in range(a.steps + 1):
        t0, c0 = time.perf_counter(), time.process_time()
        idx = [order[(pos + b) % N] for b in range(a.batch)]
        pos += a.batch
        annot = torch.from_numpy(np.ascontiguousarray(feats[sorted(idx)]).astype(np.float32))
        lens = torch.tensor([8 + (7 * (k + b)) % 9 for b in range(a.batch)])
        k += a.batch
        words = torch.randint(4, c.V, (a.batch, c.max_len), generator=gen)
        out = sat_ref.forward_annot(params, c, annot, words, lens)
        opt.zero_grad(set_to_none=True)
        out["loss"].backward()
        torch.nn.utils.clip_grad_norm_(list(params.values()), 5.0)
        opt.step()
        loss = float(out["loss"])
        if it > 0:
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    print(json.dumps({"model": "sat-features", "impl": "pytorch", "threads": a.threads,
                      "batch": a.batch, "steps": len(times),
                      "images_per_s": round(a.batch * len(times) / sum(times), 3),
                      "images_per_cpu_s": round(a.batch * len(cpu) / sum(cpu), 3),
                      "final_loss": round(loss, 4),
                      "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)}))


if __name__ == "__main__":
    sys.exit(main())
