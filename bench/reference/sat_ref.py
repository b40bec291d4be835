"""sat_ref.py: Show, Attend and Tell (Xu et al. 2015) in PyTorch, as models/sat_lstm.c computes it
with soft additive attention, a scalar or vector gate beta, no dropout.

Parameters are a dict keyed by the toolkit's Block names (models/sat.c layout_):
    enc.conv{i}.weight (c_i, c_{i-1}, 3, 3), enc.conv{i}.bias   conv 3x3 pad 1 -> ReLU -> maxpool 2
    init.W_h, init.W_c (H, D), init.b_h, init.b_c (H)          h_0, c_0 = tanh(W mean(a) + b)
    embed (V, E)
    lstm.W (4H, E + D + H), lstm.b (4H)                        on [[E y_t, z_t], h_t], gates i f g o
    attn.W_k (A, D), attn.W_q (A, H), attn.b (A), attn.w (A)  e = w . tanh(W_k a + W_q h + b)
    gate.W (nb, H), gate.b (nb)                                beta = sigmoid(gate.W h + gate.b)
    out.L_h (E, H), out.L_z (E, D), out.L_o (V, E), out.b_o (V)
Annotations a (B, L, D): the last feature map (B, D, G, G) read position-major (l = y G + x).
Step t = 0..n uses h_t (h_0 from the mean annotation): alpha_t, ctx_t = attention(h_t, a),
z_t = beta_t ctx_t, h_{t+1} = LSTM([E y_t, z_t], h_t), logits = L_o(E y_t + L_h h_{t+1} +
L_z z_t) + b_o; input tokens <start>, w_1..w_n, target w_1..w_n, <end> (ids: <pad> 0,
<start> 1, <end> 2). loss = (sum_b sum_{t <= n_b} CE + lambda sum_b sum_l
(1 - sum_{t <= n_b} alpha_btl)^2) / B. With query "current" the step reads first and
attends after: h_{t+1} = LSTM([E y_t, z_{t-1}], h_t) (z_{-1} = 0), then alpha_t, ctx_t =
attention(h_{t+1}, a) and beta_t from h_{t+1}; the output layer is the same.

As a program (bench/reference/bench_train.py runs it):
    sat_ref.py train --captions captions.tsv --vocab 51 --batch 32 [--steps 8] [--threads 1]
trains the default configuration on random images of its size and random word ids with
caption lengths drawn from the TSV (a step costs what it costs on the real scenes);
    sat_ref.py decode --model model.safetensors [--images 128] [--beam 3] [--threads 1]
loads a bin/caption model and times batched beam search (batches of 32) on random images.
Each prints one JSON object with images_per_s and peak_rss_mib.
"""
import argparse
import json
import math
import os
import resource
import sys
import time

import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

PAD, START, END = 0, 1, 2


class SatConfig:
    def __init__(self, image_size=64, channels=(32, 64, 128), in_channels=3, E=128, H=256,
                 V=0, max_len=16, A=128, beta_vector=0, lam=1.0, query="previous"):
        self.image_size, self.channels, self.in_channels = image_size, tuple(channels), in_channels
        self.E, self.H, self.V, self.max_len, self.A = E, H, V, max_len, A
        self.beta_vector, self.lam, self.query = beta_vector, lam, query

    @property
    def D(self):
        return self.channels[-1]

    @property
    def G(self):
        return self.image_size >> len(self.channels)

    @property
    def L(self):
        return self.G * self.G

    def as_meta(self):
        return {"image_size": self.image_size, "channels": ",".join(map(str, self.channels)),
                "in_channels": self.in_channels, "embed": self.E, "hidden": self.H,
                "vocab": self.V, "max_len": self.max_len, "attn_dim": self.A,
                "beta_vector": self.beta_vector, "lambda": repr(float(self.lam)),
                "query": self.query}

    def c_config(self):
        """The same configuration in sat_config_parse's key=value form."""
        m = self.as_meta()
        return " ".join(f"{k}={m[k]}" for k in ("image_size", "channels", "in_channels", "embed",
                                                   "hidden", "vocab", "max_len", "attn_dim",
                                                   "beta_vector", "lambda", "query")) + \
            " attention=additive hard=0 dropout=0"


def param_shapes(c):
    out = []
    prev = c.in_channels
    for i, ch in enumerate(c.channels):
        out += [(f"enc.conv{i}.weight", (ch, prev, 3, 3)), (f"enc.conv{i}.bias", (ch,))]
        prev = ch
    D, E, H, V, A = c.D, c.E, c.H, c.V, c.A
    nb = D if c.beta_vector else 1
    out += [("init.W_h", (H, D)), ("init.b_h", (H,)), ("init.W_c", (H, D)), ("init.b_c", (H,)),
            ("embed", (V, E)), ("lstm.W", (4 * H, E + D + H)), ("lstm.b", (4 * H,)),
            ("attn.W_k", (c.A, D)), ("attn.W_q", (A, H)), ("attn.b", (A,)), ("attn.w", (A,)),
            ("gate.W", (nb, H)), ("gate.b", (nb,)),
            ("out.L_h", (E, H)), ("out.L_z", (E, D)), ("out.L_o", (V, E)), ("out.b_o", (V,))]
    return out


def init_params(c, gen, dtype=torch.float64, bias_scale=0.0):
    """PyTorch's own draws with sat_init's distributions (He normal convolutions, uniform
    +-1/sqrt(fan_in) matrices, embedding U(+-0.1), forget-gate bias 1), plus
    bias_scale * U(-1, 1) on every bias so a test exercises them."""
    p = {}
    for name, shape in param_shapes(c):
        if name.endswith(".weight"):
            fan = shape[1] * 9
            t = torch.randn(shape, generator=gen, dtype=torch.float64) * math.sqrt(2.0 / fan)
        elif name == "embed":
            t = (torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1) * 0.1
        elif len(shape) == 2:
            t = (torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1) / math.sqrt(shape[1])
        elif name == "attn.w":
            t = (torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1) / math.sqrt(shape[0])
        else:
            t = (torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1) * bias_scale
            if name == "lstm.b":
                t[c.H:2 * c.H] += 1.0
        p[name] = t.to(dtype)
    return p


def encode(p, c, images):
    """images (B, C, S, S) -> annotations (B, L, D)."""
    x = images
    for i in range(len(c.channels)):
        x = F.max_pool2d(F.relu(F.conv2d(x, p[f"enc.conv{i}.weight"], p[f"enc.conv{i}.bias"],
                                         padding=1)), 2)
    B = x.shape[0]
    return x.permute(0, 2, 3, 1).reshape(B, c.L, c.D)


def init_state(p, annot):
    mean = annot.mean(1)
    return (torch.tanh(torch.addmm(p["init.b_h"], mean, p["init.W_h"].t())),
            torch.tanh(torch.addmm(p["init.b_c"], mean, p["init.W_c"].t())))


def attend(p, annot, prep, q):
    """Additive attention and the gate with query q (B, H): alpha (B, L), z (B, D)."""
    qp = torch.addmm(p["attn.b"], q, p["attn.W_q"].t())
    e = torch.tanh(prep + qp[:, None, :]) @ p["attn.w"]
    alpha = torch.softmax(e, dim=1)
    ctx = torch.bmm(alpha[:, None, :], annot)[:, 0]
    beta = torch.sigmoid(torch.addmm(p["gate.b"], q, p["gate.W"].t()))
    return alpha, beta * ctx


def lstm(p, x, h, cst):
    pre = torch.addmm(p["lstm.b"], torch.cat([x, h], dim=1), p["lstm.W"].t())
    i, f, g, o = pre.chunk(4, dim=1)
    cn = torch.sigmoid(f) * cst + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(cn), cn


def step(p, c, annot, prep, h, cst, zprev, tok_emb):
    """One decoder step: returns alpha (B, L), z (B, D), h', c', logits (B, V).
    query previous (Xu et al.): attend with h, the LSTM reads [E y, z]; query current:
    the LSTM reads [E y, zprev] (the previous step's z), then attends with h'."""
    if c.query == "current":
        hn, cn = lstm(p, torch.cat([tok_emb, zprev], dim=1), h, cst)
        alpha, z = attend(p, annot, prep, hn)
    else:
        alpha, z = attend(p, annot, prep, h)
        hn, cn = lstm(p, torch.cat([tok_emb, z], dim=1), h, cst)
    out = tok_emb + hn @ p["out.L_h"].t() + z @ p["out.L_z"].t()
    logits = torch.addmm(p["out.b_o"], out, p["out.L_o"].t())
    return alpha, z, hn, cn, logits


def tokens(words, lens, max_len):
    """words (B, max_len) ids, lens (B) -> in_tok, target (T, B) with T = max(lens) + 1;
    target -1 past each caption's <end>."""
    B = words.shape[0]
    T = int(lens.max()) + 1
    in_tok = torch.full((T, B), PAD, dtype=torch.long)
    target = torch.full((T, B), -1, dtype=torch.long)
    for b in range(B):
        n = int(lens[b])
        in_tok[0, b] = START
        in_tok[1:n + 1, b] = words[b, :n]
        target[:n, b] = words[b, :n]
        target[n, b] = END
    return in_tok, target


def forward(p, c, images, words, lens, keep=False):
    """Teacher-forced loss; with keep also alpha (T, B, L), logits (T, B, V), annot."""
    return forward_annot(p, c, encode(p, c, images), words, lens, keep)


def forward_annot(p, c, annot, words, lens, keep=False):
    """forward on given annotations (B, L, D): the decoder alone (cached features)."""
    B = annot.shape[0]
    h, cst = init_state(p, annot)
    prep = annot @ p["attn.W_k"].t()
    in_tok, target = tokens(words, lens, c.max_len)
    emb = p["embed"][in_tok]  # (T, B, E)
    alphas, logits = [], []
    z = torch.zeros(B, c.D, dtype=annot.dtype)
    for t in range(in_tok.shape[0]):
        alpha, z, h, cst, lg = step(p, c, annot, prep, h, cst, z, emb[t])
        alphas.append(alpha)
        logits.append(lg)
    alpha = torch.stack(alphas)
    logit = torch.stack(logits)
    valid = target >= 0
    ce = F.cross_entropy(logit[valid], target[valid], reduction="sum")
    ds = (((1.0 - (alpha * valid[:, :, None]).sum(0)) ** 2).sum()) * c.lam
    out = {"loss": (ce + ds) / B, "ce": ce / B, "ds": ds / B}
    if keep:
        out.update(alpha=alpha, logits=logit, annot=annot)
    return out


def beam_search(p, c, images, beam, margins=None):
    """Beam search as seq/beam.c does it (length_alpha 0: scores are summed log-probs),
    batched over the images with tensor ops. Per image and step: the candidates ranked;
    an <end> among the top `beam` finishes a hypothesis (the best finished is kept); the
    first `beam` other candidates stay live; an image stops when its best finished score is
    at least its best live one (scores only fall; beam 1, greedy, stops at its first <end>),
    and its rows leave the batch. <pad> and <start> are never emitted. After max_len + 1
    steps the best live hypothesis competes with the best finished one.
    Returns a list of token lists (no <start>/<end>), one per image. margins, a list, gets
    the smallest gap between ranked candidate scores and between the best finished and best
    live scores (a test fixture needs every decision clear of float32 rounding)."""
    with torch.no_grad():
        B, K, V = images.shape[0], beam, c.V
        annot = encode(p, c, images)
        h, cst = init_state(p, annot)
        z = torch.zeros(B, c.D, dtype=annot.dtype)
        prep = annot @ p["attn.W_k"].t()
        act = torch.arange(B)                  # images still decoding
        row_img = act.clone()                  # image of each row
        toks = torch.full((B,), START, dtype=torch.long)
        scores = torch.zeros(B, 1, dtype=annot.dtype)
        hist = torch.zeros(B, 0, dtype=torch.long)
        fin_score = torch.full((B,), -math.inf, dtype=annot.dtype)
        fin_hyp = [None] * B
        n_fin = torch.zeros(B, dtype=torch.long)
        kr = 1
        for t in range(c.max_len + 1):
            _, z, h, cst, lg = step(p, c, annot[row_img], prep[row_img], h, cst, z,
                                    p["embed"][toks])
            lp = torch.log_softmax(lg, dim=1)
            lp[:, PAD] = -1e9
            lp[:, START] = -1e9
            na = act.shape[0]
            cand = (scores[:, :, None] + lp.view(na, kr, V)).view(na, kr * V)
            top, idx = cand.topk(min(2 * K, kr * V), dim=1)
            tok, par = idx % V, idx // V
            if margins is not None:
                margins.append(float((top[:, :-1] - top[:, 1:]).min()))
            is_end = tok == END
            end_ok = is_end & (torch.arange(top.shape[1])[None, :] < K)
            n_fin[act] += end_ok.sum(1)
            best_end, best_pos = torch.where(end_ok, top, torch.full_like(top, -math.inf)).max(1)
            for i in torch.nonzero(best_end > fin_score[act]).flatten().tolist():
                b = int(act[i])
                fin_score[b] = best_end[i]
                fin_hyp[b] = hist[i * kr + int(par[i, best_pos[i]])].tolist()
            live = ~is_end
            sel = live & (live.long().cumsum(1) <= K)
            pos = torch.nonzero(sel)[:, 1].view(na, K)
            scores = top.gather(1, pos)
            parent = (torch.arange(na)[:, None] * kr + par.gather(1, pos)).view(-1)
            toks = tok.gather(1, pos).view(-1)
            hist = torch.cat([hist[parent], toks[:, None]], dim=1)
            h, cst, z = h[parent], cst[parent], z[parent]
            kr = K
            if t == c.max_len:
                break
            if margins is not None and bool(torch.isfinite(fin_score[act]).any()):
                gap = (fin_score[act] - scores[:, 0]).abs()
                margins.append(float(gap[torch.isfinite(gap)].min()))
            keep = ~(((K == 1) & (n_fin[act] >= 1)) | (fin_score[act] >= scores[:, 0]))
            if not bool(keep.all()):
                rows = keep.repeat_interleave(K)
                act, scores = act[keep], scores[keep]
                hist, h, cst, z, toks = hist[rows], h[rows], cst[rows], z[rows], toks[rows]
            if act.shape[0] == 0:
                break
            row_img = act.repeat_interleave(K)
        out = [fin_hyp[b] for b in range(B)]
        for i, b in enumerate(act.tolist()):
            if fin_hyp[b] is None or float(scores[i, 0]) > float(fin_score[b]):
                out[b] = hist[i * K].tolist()
        return out


def load_model(path):
    """A bin/caption model.safetensors: (SatConfig, params as float32 tensors by name)."""
    tensors, meta = safetensors_io.load(path)
    kv = dict(item.split("=", 1) for item in meta["sat.config"].split())
    if kv.get("attention") != "additive" or kv.get("hard") != "0":
        raise ValueError(f"{path}: the reference has soft additive attention only")
    c = SatConfig(image_size=int(kv["image_size"]),
                  channels=tuple(int(x) for x in kv["channels"].split(",")),
                  in_channels=int(kv["in_channels"]), E=int(kv["embed"]), H=int(kv["hidden"]),
                  V=int(kv["vocab"]), max_len=int(kv["max_len"]), A=int(kv["attn_dim"]),
                  beta_vector=int(kv["beta_vector"]), lam=float(kv["lambda"]),
                  query=kv.get("query", "previous"))
    params = {name: torch.from_numpy(tensors[name]).float() for name, _ in param_shapes(c)}
    return c, params


def caption_lengths(path, max_len):
    """Word counts of the captions in a `file<TAB>caption` TSV (bin/caption scenes)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 2:
                out.append(min(max_len, max(1, len(parts[1].split()))))
    if not out:
        raise ValueError(f"{path}: no captions")
    return torch.tensor(out)


def main():
    ap = argparse.ArgumentParser(description="Show-Attend-Tell throughput in PyTorch")
    ap.add_argument("mode", choices=["train", "decode"])
    ap.add_argument("--model", help="decode: a bin/caption model.safetensors")
    ap.add_argument("--captions", help="train: captions.tsv whose caption lengths to sample")
    ap.add_argument("--vocab", type=int, default=51, help="train: vocabulary size")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--images", type=int, default=128, help="decode: images")
    ap.add_argument("--beam", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--clip", type=float, default=5.0)
    ap.add_argument("--budget", type=float, default=0.0,
                    help="stop timing after this many seconds, at least one step or batch "
                         "(0: no limit)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    gen = torch.Generator().manual_seed(1)
    res = {"model": "sat" if a.mode == "train" else "sat-decode", "impl": "pytorch",
           "threads": a.threads, "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "")}
    if a.mode == "train":
        c = SatConfig(V=a.vocab, lam=3.0, query="current")  # bin/caption train's defaults
        lengths = caption_lengths(a.captions, c.max_len) if a.captions else torch.tensor([9])
        params = {k: v.float().requires_grad_() for k, v in init_params(c, gen).items()}
        opt = torch.optim.Adam(list(params.values()), lr=a.lr)
        S = c.image_size
        times, warm, cpu, wcpu, loss = [], [], [], [], float("nan")
        start = time.perf_counter()
        for it in range(a.warmup + a.steps):
            if it >= a.warmup and a.budget > 0 and time.perf_counter() - start > a.budget:
                break  # over budget: time what ran (the warm-up steps when nothing else did)
            t0, c0 = time.perf_counter(), time.process_time()
            images = torch.rand(a.batch, 3, S, S, generator=gen)
            lens = lengths[torch.randint(0, len(lengths), (a.batch,), generator=gen)]
            words = torch.randint(4, c.V, (a.batch, c.max_len), generator=gen)
            out = forward(params, c, images, words, lens)
            opt.zero_grad(set_to_none=True)
            out["loss"].backward()
            torch.nn.utils.clip_grad_norm_(list(params.values()), a.clip)
            opt.step()
            loss = float(out["loss"])
            (times if it >= a.warmup else warm).append(time.perf_counter() - t0)
            (cpu if it >= a.warmup else wcpu).append(time.process_time() - c0)
        warmup_only = not times
        if warmup_only:
            times, cpu = warm, wcpu
        res.update(images_per_s=round(a.batch * len(times) / sum(times), 3),
                   images_per_cpu_s=round(a.batch * len(cpu) / sum(cpu), 3), steps=len(times),
                   final_loss=round(loss, 4), warmup_only=warmup_only)
    else:
        c, params = load_model(a.model)
        S = c.image_size
        images = torch.rand(a.images, c.in_channels, S, S, generator=gen)
        beam_search(params, c, images[:a.batch], a.beam)  # warm-up
        t0, c0 = time.perf_counter(), time.process_time()
        words = done = 0
        for b0 in range(0, a.images, a.batch):
            if done and a.budget > 0 and time.perf_counter() - t0 > a.budget:
                break
            hyps = beam_search(params, c, images[b0:b0 + a.batch], a.beam)
            words += sum(min(len(w), c.max_len) for w in hyps)
            done += len(hyps)
        secs, cpu_secs = time.perf_counter() - t0, time.process_time() - c0
        res.update(beam=a.beam, images=done, images_per_s=round(done / secs, 3),
                   images_per_cpu_s=round(done / cpu_secs, 3),
                   seconds=round(secs, 3), mean_words=round(words / done, 2))
    res["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)
    print(json.dumps(res))


if __name__ == "__main__":
    sys.exit(main())
