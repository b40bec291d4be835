"""glimpse_ref.py: the glimpse classifier of models/glimpse.c ("Differentiable RAM", Gregor
et al. 2015, section 4) in PyTorch, tensor for tensor.

The parameters are a dict keyed by the toolkit's Block names (models/glimpse.c glimpse_layout):
    lstm.W (4H, R + H), lstm.b (4H)        LSTM on [r_t, h_{t-1}], gates i, f, g, o
    read_attn.W (5, H), read_attn.b (5)    attention only: the read window from h_{t-1}
    out.W (classes, H), out.b (classes)    the softmax layer on h_T
The filterbank is vision/filterbank.h's (as draw_ref.filterbank); r_t = gamma F_Y x F_X^T
(N x N), or the whole image without attention. Loss: mean cross-entropy over the batch.

    python3 glimpse_ref.py bench --steps 20 --batch 64 [--threads 1]
trains the paper's configuration (100 x 100, T 8, read 12, LSTM 256) on random images with
random labels (the speed does not depend on the pixels) with torch.optim.Adam and prints one
JSON object with images_per_s.
    python3 glimpse_ref.py fixture OUTDIR
writes OUTDIR/glimpse_attention.safetensors and glimpse_plain.safetensors (float64 weights
rounded to float32, inputs, logits, loss, every gradient, a five-step Adam curve) for
tests/test_parity_glimpse.c.
"""
import argparse
import json
import os
import resource
import sys
import time

import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import draw_ref  # noqa: E402
import safetensors_io  # noqa: E402


class GlimpseConfig:
    def __init__(self, W=100, H=100, T=8, read_n=12, hidden=256, classes=10, attention=1):
        self.W, self.H, self.T, self.read_n = W, H, T, read_n
        self.hidden, self.classes, self.attention = hidden, classes, attention

    def read_size(self):
        return self.read_n ** 2 if self.attention else self.W * self.H

    def as_meta(self):
        return {k: str(v) for k, v in vars(self).items()}


def param_shapes(c):
    R, Hd = c.read_size(), c.hidden
    s = {"lstm.W": (4 * Hd, R + Hd), "lstm.b": (4 * Hd,)}
    if c.attention:
        s["read_attn.W"] = (5, Hd)
        s["read_attn.b"] = (5,)
    s["out.W"] = (c.classes, Hd)
    s["out.b"] = (c.classes,)
    return s


def init_params(c, gen, dtype=torch.float64, bias_scale=0.0):
    """Uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) weights; biases as glimpse_init plus
    bias_scale * uniform(-1, 1) (fixtures use non-zero biases so every path is exercised)."""
    p = {}
    for k, shape in param_shapes(c).items():
        if len(shape) == 2:
            s = 1.0 / shape[1] ** 0.5
            p[k] = (torch.rand(shape, generator=gen, dtype=dtype) * 2 - 1) * s
        else:
            p[k] = (torch.rand(shape, generator=gen, dtype=dtype) * 2 - 1) * bias_scale
    p["lstm.b"][c.hidden:2 * c.hidden] += 1.0
    if c.attention:
        p["read_attn.W"] *= 0.5
        mx, N = max(c.W, c.H), c.read_n
        cell = mx / N
        p["read_attn.b"][2] += 2 * torch.log(torch.tensor(0.5 * cell, dtype=dtype))
        p["read_attn.b"][3] += torch.log(torch.tensor((N - 1) / N, dtype=dtype)) if N > 1 else 0.0
    return p


def forward(p, c, x, labels):
    """x (B, H W), labels (B); returns dict with logits (B, classes), loss (mean), rparams
    (T, B, 5) when attention."""
    B = x.shape[0]
    Hd = c.hidden
    h = torch.zeros(B, Hd, dtype=x.dtype)
    cst = torch.zeros(B, Hd, dtype=x.dtype)
    img = x.reshape(B, c.H, c.W)
    rps = []
    for t in range(c.T):
        if c.attention:
            rp = torch.addmm(p["read_attn.b"], h, p["read_attn.W"].t()) if t else \
                p["read_attn.b"].expand(B, 5)
            Fx, Fy, gamma = draw_ref.filterbank(rp, c.read_n, c.W, c.H)
            r = gamma[:, None, None] * torch.bmm(torch.bmm(Fy, img), Fx.transpose(1, 2))
            r = r.reshape(B, -1)
            rps.append(rp)
        else:
            r = x
        h, cst = draw_ref.lstm_step(r, h, cst, p["lstm.W"], p["lstm.b"])
    logits = torch.addmm(p["out.b"], h, p["out.W"].t())
    loss = F.cross_entropy(logits, labels)
    out = {"logits": logits, "loss": loss}
    if rps:
        out["rparams"] = torch.stack(rps)
    return out


# --- parity fixtures ---------------------------------------------------------------------

ADAM = {"lr": 0.01, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8}
STEPS = 5


def make_fixture(path, c, B, seed):
    gen = torch.Generator().manual_seed(seed)
    params = {k: v.float().double() for k, v in init_params(c, gen, bias_scale=0.2).items()}
    x = torch.rand(B, c.W * c.H, generator=gen, dtype=torch.float64).float().double()
    labels = torch.randint(0, c.classes, (B,), generator=gen)
    p = {k: v.clone().requires_grad_() for k, v in params.items()}
    out = forward(p, c, x, labels)
    names = list(p)
    gs = torch.autograd.grad(out["loss"], [p[k] for k in names])
    norm = float(torch.sqrt(sum((g * g).sum() for g in gs)))
    clip = float(f"{0.5 * norm:.3g}")
    # Five Adam steps (core/adam.c semantics, clipping at half the first step's norm).
    q = {k: v.clone().requires_grad_() for k, v in params.items()}
    m = [torch.zeros_like(q[k]) for k in names]
    v = [torch.zeros_like(q[k]) for k in names]
    curve = []
    for step in range(1, STEPS + 1):
        loss = forward(q, c, x, labels)["loss"]
        g = [t.clone() for t in torch.autograd.grad(loss, [q[k] for k in names])]
        draw_ref.clip_global_norm(g, clip)
        draw_ref.adam_update([q[k] for k in names], g, m, v, step, ADAM["lr"], ADAM["beta1"],
                             ADAM["beta2"], ADAM["eps"])
        curve.append(float(loss))
    t = {f"param/{k}": params[k] for k in names}
    t.update({f"grad/{k}": g for k, g in zip(names, gs)})
    t.update({"input/x": x, "input/labels": labels.double(), "output/logits": out["logits"],
              "output/loss": out["loss"].reshape(1),
              "train/loss": torch.tensor(curve, dtype=torch.float64)})
    meta = c.as_meta()
    meta.update({f"adam.{k}": repr(val) for k, val in ADAM.items()})
    meta.update({"clip": repr(clip), "grad_norm": repr(norm), "steps": str(STEPS), "B": str(B),
                 "generator": "bench/reference/glimpse_ref.py (PyTorch " + torch.__version__ + ")"})
    safetensors_io.save(path, {k: val.detach().numpy() for k, val in t.items()}, meta)
    return float(out["loss"]), curve


def fixtures(outdir):
    os.makedirs(outdir, exist_ok=True)
    torch.set_num_threads(1)
    # Non-square image and a grid that does not divide it: a swapped axis shows.
    jobs = [("glimpse_attention.safetensors",
             GlimpseConfig(W=13, H=11, T=3, read_n=4, hidden=6, classes=5, attention=1), 3, 12),
            ("glimpse_plain.safetensors",
             GlimpseConfig(W=7, H=6, T=2, read_n=2, hidden=5, classes=3, attention=0), 2, 13)]
    for name, c, B, seed in jobs:
        path = os.path.join(outdir, name)
        loss, curve = make_fixture(path, c, B, seed)
        print(f"{path}: loss {loss:.6f}, five-step curve " + " ".join(f"{v:.6f}" for v in curve))


# --- benchmark -----------------------------------------------------------------------------

def bench(a):
    torch.set_num_threads(a.threads)
    c = GlimpseConfig(T=a.T, read_n=a.read, hidden=a.hidden)
    gen = torch.Generator().manual_seed(1)
    params = {k: v.float().requires_grad_() for k, v in init_params(c, gen).items()}
    opt = torch.optim.Adam(list(params.values()), lr=1e-3)
    times, cpu, loss = [], [], float("nan")
    for step in range(a.warmup + a.steps):
        x = torch.rand(a.batch, c.W * c.H, generator=gen)
        labels = torch.randint(0, 10, (a.batch,), generator=gen)
        t0, c0 = time.perf_counter(), time.process_time()
        out = forward(params, c, x, labels)
        opt.zero_grad(set_to_none=True)
        out["loss"].backward()
        torch.nn.utils.clip_grad_norm_(list(params.values()), 5.0)
        opt.step()
        loss = float(out["loss"])
        if step >= a.warmup:
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    times.sort()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps({"model": "glimpse", "impl": "pytorch", "threads": a.threads,
                      "images_per_s": round(a.batch * len(times) / sum(times), 3),
                      "images_per_s_median_step": round(a.batch / times[len(times) // 2], 3),
                      "images_per_cpu_s": round(a.batch * len(cpu) / sum(cpu), 3),
                      "steps": len(times), "final_loss": round(loss, 4),
                      "peak_rss_mib": round(rss, 1)}))


def main():
    ap = argparse.ArgumentParser(description="the glimpse classifier in PyTorch")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("bench")
    b.add_argument("--steps", type=int, default=20)
    b.add_argument("--warmup", type=int, default=2)
    b.add_argument("--batch", type=int, default=64)
    b.add_argument("--T", type=int, default=8)
    b.add_argument("--read", type=int, default=12)
    b.add_argument("--hidden", type=int, default=256)
    b.add_argument("--threads", type=int, default=1)
    f = sub.add_parser("fixture")
    f.add_argument("outdir")
    a = ap.parse_args()
    if a.cmd == "bench":
        bench(a)
    else:
        fixtures(a.outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
