"""draw_ref.py: DRAW (Gregor et al. 2015) in PyTorch, tensor for tensor as models/draw.c.

The parameters are a dict keyed by the toolkit's Block names (models/draw.c draw_layout):
    enc.W (4E, R + D + E), enc.b (4E)      encoder LSTM on [[r_t, h_dec_{t-1}], h_enc_{t-1}]
    q.W (2Z, E), q.b (2Z)                  rows mu then log sigma
    dec.W (4D, Z + D), dec.b (4D)          decoder LSTM on [z_t, h_dec_{t-1}]
    write.W (Wr, D), write.b (Wr)
    read_attn.W (5, D), read_attn.b (5), write_attn.W (5, D), write_attn.b (5)  (attention)
LSTM gates are ordered i, f, g, o (seq/lstm.h). The filterbank follows vision/filterbank.h:
1-based pixel grid, g_X = (W + 1)/2 (g~_X + 1), delta = (max(W, H) - 1)/(N - 1) exp(log delta~),
each row of F a softmax over pixels of -(a - mu)^2 / (2 sigma^2), log sigma^2 clamped to
[-80, 80]; read = gamma F_Y img F_X^T (first x, then x_hat), write = (1/gamma) F_Y^T w F_X.
The noise eps (T, B, Z) is an input, so the C and PyTorch runs see the same draws.

Used by make_fixtures.py (float64, fixed weights) and, as a program, by bench_train.py:
    python3 draw_ref.py --steps 3 --batch 100 [--threads 1] [--data data/mnist] [--model M]
trains the paper's configuration (or continues a bin/draw model.safetensors: load_model
reads the toolkit's checkpoints) on dynamically binarised MNIST and prints one JSON object
with images_per_s and peak_rss_mib.
"""
import argparse
import json
import math
import os
import resource
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402


class DrawConfig:
    def __init__(self, W=28, H=28, T=64, read_n=2, write_n=5, enc=256, dec=256, z=100,
                 attention=1, peepholes=0):
        self.W, self.H, self.T = W, H, T
        self.read_n, self.write_n = read_n, write_n
        self.enc, self.dec, self.z = enc, dec, z
        self.attention = attention
        self.peepholes = peepholes

    def read_size(self):
        return 2 * self.read_n ** 2 if self.attention else 2 * self.W * self.H

    def write_size(self):
        return self.write_n ** 2 if self.attention else self.W * self.H

    def as_meta(self):
        return {k: str(v) for k, v in vars(self).items()}

    @staticmethod
    def from_meta(meta):
        c = DrawConfig(**{k: int(meta[k]) for k in
                          ("W", "H", "T", "read_n", "write_n", "enc", "dec", "z", "attention")})
        c.peepholes = int(meta.get("peepholes", "0"))
        return c


def param_shapes(c):
    """(name, shape) in the toolkit's layout order."""
    R, Wr, E, D, Z = c.read_size(), c.write_size(), c.enc, c.dec, c.z
    out = [("enc.W", (4 * E, R + D + E)), ("enc.b", (4 * E,)),
           ("q.W", (2 * Z, E)), ("q.b", (2 * Z,)),
           ("dec.W", (4 * D, Z + D)), ("dec.b", (4 * D,)),
           ("write.W", (Wr, D)), ("write.b", (Wr,))]
    if c.attention:
        out += [("read_attn.W", (5, D)), ("read_attn.b", (5,)),
                ("write_attn.W", (5, D)), ("write_attn.b", (5,))]
    if c.peepholes:
        out += [("enc.peep", (3 * E,)), ("dec.peep", (3 * D,))]
    return out


def init_params(c, gen, dtype=torch.float64, bias_scale=0.0):
    """PyTorch's own initialisation, same distributions as draw_init: weights
    U(+-1/sqrt(fan_in)); biases and peepholes 0 (LSTM forget gates 1), plus
    bias_scale * U(-1, 1) so a test also exercises them."""
    p = {}
    for name, shape in param_shapes(c):
        if len(shape) == 2:
            r = 1.0 / math.sqrt(shape[1])
            t = (torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1) * r
        else:
            t = (torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1) * bias_scale
            if name in ("enc.b", "dec.b"):
                n = shape[0] // 4
                t[n:2 * n] += 1.0
        p[name] = t.to(dtype)
    return p


def load_model(path):
    """A bin/draw model.safetensors: (DrawConfig from its draw.* metadata, float32 params)."""
    tensors, meta = safetensors_io.load(path)
    c = DrawConfig(**{k: int(meta["draw." + k]) for k in
                      ("W", "H", "T", "read_n", "write_n", "enc", "dec", "z", "attention")})
    c.peepholes = int(meta.get("draw.peepholes", "0"))
    return c, {name: torch.from_numpy(tensors[name]).float() for name, _ in param_shapes(c)}


def lstm_step(x, h, cst, W, b, peep=None):
    """Gates i, f, g, o from one product on [x, h]; returns h, c. peep (3H): peephole
    weights [w_i, w_f, w_o] (Graves 2013, eq. 7-11): i and f see the previous cell, o the
    new one."""
    xh = torch.cat([x, h], dim=1)
    pre = torch.addmm(b, xh, W.t())
    i, f, g, o = pre.chunk(4, dim=1)
    if peep is not None:
        wi, wf, wo = peep.chunk(3)
        i, f = i + wi * cst, f + wf * cst
    cn = torch.sigmoid(f) * cst + torch.sigmoid(i) * torch.tanh(g)
    if peep is not None:
        o = o + wo * cn
    return torch.sigmoid(o) * torch.tanh(cn), cn


def filterbank(params, N, W, H):
    """Fx (B, N, W), Fy (B, N, H), gamma (B) from params (B, 5)."""
    dt = params.dtype
    gx = 0.5 * (W + 1) * (params[:, 0] + 1)
    gy = 0.5 * (H + 1) * (params[:, 1] + 1)
    s2 = torch.exp(params[:, 2].clamp(-80.0, 80.0))
    mx = max(W, H)
    scale = (mx - 1) / (N - 1) if N > 1 else float(mx - 1)
    delta = scale * torch.exp(params[:, 3])
    gamma = torch.exp(params[:, 4])
    off = torch.arange(N, dtype=dt) + 0.5 - 0.5 * N
    mux = gx[:, None] + off[None, :] * delta[:, None]
    muy = gy[:, None] + off[None, :] * delta[:, None]
    ax = torch.arange(1, W + 1, dtype=dt)
    ay = torch.arange(1, H + 1, dtype=dt)
    inv = 0.5 / s2[:, None, None]
    Fx = torch.softmax(-(ax[None, None, :] - mux[:, :, None]) ** 2 * inv, dim=2)
    Fy = torch.softmax(-(ay[None, None, :] - muy[:, :, None]) ** 2 * inv, dim=2)
    return Fx, Fy, gamma


def forward(p, c, x, eps, keep=False):
    """x (B, H W), eps (T, B, Z). Returns a dict: loss (mean bound), recon (B), kl (B) and,
    with keep, canvas (T, B, H W) (the logits c_1..c_T)."""
    B = x.shape[0]
    HW, E, D, Z = c.W * c.H, c.enc, c.dec, c.z
    dt = x.dtype
    canvas = torch.zeros(B, HW, dtype=dt)
    h_enc = torch.zeros(B, E, dtype=dt)
    c_enc = torch.zeros(B, E, dtype=dt)
    h_dec = torch.zeros(B, D, dtype=dt)
    c_dec = torch.zeros(B, D, dtype=dt)
    kl = torch.zeros(B, dtype=dt)
    canvases = []
    img = x.view(B, c.H, c.W)
    for t in range(c.T):
        xhat = x - torch.sigmoid(canvas)
        if c.attention:
            N = c.read_n
            rp = torch.addmm(p["read_attn.b"], h_dec, p["read_attn.W"].t())
            Fx, Fy, g = filterbank(rp, N, c.W, c.H)
            FxT = Fx.transpose(1, 2)
            rx = torch.bmm(torch.bmm(Fy, img), FxT) * g[:, None, None]
            rh = torch.bmm(torch.bmm(Fy, xhat.view(B, c.H, c.W)), FxT) * g[:, None, None]
            r = torch.cat([rx.reshape(B, N * N), rh.reshape(B, N * N)], dim=1)
        else:
            r = torch.cat([x, xhat], dim=1)
        h_enc, c_enc = lstm_step(torch.cat([r, h_dec], dim=1), h_enc, c_enc, p["enc.W"],
                                 p["enc.b"], p.get("enc.peep"))
        q = torch.addmm(p["q.b"], h_enc, p["q.W"].t())
        mu, ls = q[:, :Z], q[:, Z:]
        s = torch.exp(ls)
        z = mu + s * eps[t]
        kl = kl + 0.5 * (mu * mu + s * s - 2 * ls - 1).sum(1)
        h_dec, c_dec = lstm_step(z, h_dec, c_dec, p["dec.W"], p["dec.b"], p.get("dec.peep"))
        w = torch.addmm(p["write.b"], h_dec, p["write.W"].t())
        if c.attention:
            N = c.write_n
            wp = torch.addmm(p["write_attn.b"], h_dec, p["write_attn.W"].t())
            Fx, Fy, g = filterbank(wp, N, c.W, c.H)
            patch = torch.bmm(torch.bmm(Fy.transpose(1, 2), w.view(B, N, N)), Fx)
            canvas = canvas + (patch / g[:, None, None]).reshape(B, HW)
        else:
            canvas = canvas + w
        if keep:
            canvases.append(canvas)
    recon = F.binary_cross_entropy_with_logits(canvas, x, reduction="none").sum(1)
    out = {"loss": (recon + kl).mean(), "recon": recon, "kl": kl}
    if keep:
        out["canvas"] = torch.stack(canvases)
    return out


def clip_global_norm(grads, max_norm):
    """As core/adam.c: scale by max_norm / norm when the norm exceeds it."""
    norm = math.sqrt(sum(float((g.double() ** 2).sum()) for g in grads))
    if max_norm > 0 and norm > max_norm:
        for g in grads:
            g.mul_(max_norm / norm)
    return norm


def adam_update(params, grads, m, v, step, lr, beta1=0.9, beta2=0.999, eps=1e-8):
    """As core/adam.c (Kingma & Ba, bias-corrected; same as torch.optim.Adam)."""
    c1 = 1.0 / (1.0 - beta1 ** step)
    c2 = 1.0 / (1.0 - beta2 ** step)
    with torch.no_grad():
        for p, g, mi, vi in zip(params, grads, m, v):
            mi.mul_(beta1).add_((1 - beta1) * g)
            vi.mul_(beta2).add_((1 - beta2) * g * g)
            p.sub_(lr * (mi * c1) / (torch.sqrt(vi * c2) + eps))


# --- benchmark --------------------------------------------------------------------------

def load_idx_images(path):
    with open(path, "rb") as f:
        raw = bytearray(f.read())  # writable, so torch.from_numpy may share it
    magic, n, rows, cols = np.frombuffer(raw, dtype=">u4", count=4)
    if magic != 2051:
        raise ValueError(f"{path}: not an IDX image file")
    return (np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(n, rows * cols), int(cols),
            int(rows))


def main():
    ap = argparse.ArgumentParser(description="DRAW training throughput in PyTorch")
    ap.add_argument("--data", default="data/mnist")
    ap.add_argument("--steps", type=int, default=6, help="timed steps (after --warmup)")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--T", type=int, default=64)
    ap.add_argument("--read", type=int, default=2)
    ap.add_argument("--write", type=int, default=5)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--z", type=int, default=100)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    ap.add_argument("--model", help="start from a bin/draw model.safetensors (its configuration "
                                    "replaces --T, --read, --write, --hidden, --z)")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--clip", type=float, default=10.0)
    ap.add_argument("--budget", type=float, default=0.0,
                    help="stop timing after this many seconds, at least one step (0: no limit)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    imgs, W, H = load_idx_images(os.path.join(a.data, "train-images-idx3-ubyte"))
    gen = torch.Generator().manual_seed(1)
    if a.model:
        c, start = load_model(a.model)
        if (c.W, c.H) != (W, H):
            raise SystemExit(f"{a.model}: images {c.W}x{c.H}, data {W}x{H}")
    else:
        c = DrawConfig(W=W, H=H, T=a.T, read_n=a.read, write_n=a.write, enc=a.hidden,
                       dec=a.hidden, z=a.z, attention=1)
        start = init_params(c, gen)
    params = {k: v.float().requires_grad_() for k, v in start.items()}
    opt = torch.optim.Adam(list(params.values()), lr=a.lr)
    rng = np.random.default_rng(1)
    data = torch.from_numpy(imgs)  # kept as bytes; each batch converted to [0, 1] floats
    times, warm, cpu, wcpu, loss = [], [], [], [], float("nan")
    start = time.perf_counter()
    for step in range(a.warmup + a.steps):
        if step >= a.warmup and a.budget > 0 and time.perf_counter() - start > a.budget:
            break  # over budget: time what ran (the warm-up steps when nothing else did)
        t0, c0 = time.perf_counter(), time.process_time()
        idx = torch.from_numpy(rng.integers(0, data.shape[0], a.batch))
        x = torch.bernoulli(data[idx].float() / 255.0, generator=gen)  # dynamic binarisation
        eps = torch.randn(c.T, a.batch, c.z, generator=gen)
        out = forward(params, c, x, eps)
        opt.zero_grad(set_to_none=True)
        out["loss"].backward()
        torch.nn.utils.clip_grad_norm_(list(params.values()), a.clip)
        opt.step()
        loss = float(out["loss"])
        (times if step >= a.warmup else warm).append(time.perf_counter() - t0)
        (cpu if step >= a.warmup else wcpu).append(time.process_time() - c0)
    warmup_only = not times
    if warmup_only:
        times, cpu = warm, wcpu
    ips = a.batch * len(times) / sum(times)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps({"model": "draw", "impl": "pytorch", "threads": a.threads,
                      "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS", ""),
                      "images_per_s": round(ips, 3),
                      "images_per_cpu_s": round(a.batch * len(cpu) / sum(cpu), 3),
                      "steps": len(times),
                      "final_loss": round(loss, 4), "warmup_only": warmup_only,
                      "peak_rss_mib": round(rss, 1)}))


if __name__ == "__main__":
    sys.exit(main())
