"""textclass_ref.py: the sentence classifier of models/textclass.c (`text classify`) in
PyTorch, tensor for tensor.

The parameters are a dict keyed by the toolkit's Block names (models/textclass.c text_layout):
    emb (vocab, E)                          row 0: the padding's (learned like any row)
    lstm.W (4H, E + H), lstm.b (4H)         forward LSTM; lstm_rev.* the backward one
    att.w (D), att.b (T)                    keras pooling: e_t = tanh(h_t . w + b_t)
    query (D)                               query pooling: the learned query
    attn.W_k (A, D), attn.W_q (A, D),       query pooling, additive kernel:
    attn.b (A), attn.w (A)                  e_t = w . tanh(W_k h_t + W_q q + b)
    out.W (O, D), out.b (O)                 O = 1 (sigmoid) for two classes, else classes
Gate order. The toolkit's W holds the rows of the gates i, f, g, o and its columns [x, h]:
PyTorch's nn.LSTM keeps the same gate order (weight_ih_l0 (4H, E), weight_hh_l0 (4H, H),
b_ih + b_hh) and so does Keras's kernel (its columns i, f, c, o), so the mapping is
weight_ih = W[:, :E], weight_hh = W[:, E:], b_ih = b, b_hh = 0 (for Keras: kernel = W[:, :E]^T,
recurrent_kernel = W[:, E:]^T). The unmasked LSTM runs through torch's own nn.LSTM with those
weights; the masked one (padding steps leave the state alone, as seq/lstm_seq.h) through a
loop of its cells, checked against nn.LSTM on the unmasked input every time it runs.
Loss: mean binary cross-entropy of sigmoid(logit) (two classes) or mean cross-entropy of the
softmax, plus embed_l2 * sum(emb^2). No dropout (evaluation semantics).

    python3 textclass_ref.py fixture OUTDIR
writes OUTDIR/text_*.safetensors for tests/test_parity_text.c: param/NAME (float64 drawn,
rounded to float32), input/ids (B, T), input/lengths (B), input/labels (B), output/states
(B, T, D), output/alpha (B, T), output/pooled (B, D), output/logits (B, O), output/probs
(B, O), output/loss (1), grad/NAME; the configuration in the metadata. All computed in
float64 from the float32 values. Also text_lstm_dropout*.safetensors: the LSTM alone
(seq/lstm_seq.h, lstm_seq_forward) with fixed variational dropout masks shared by the four
gates, through torch's own cell; and text_lstm_gated*.safetensors: the LSTM with one mask
per gate (lstm_seq_forward_gated, Keras's implementation 1, what the toolkit trains with),
in_mask (B, 4, E), rec_mask (B, 4, H) in gate order i, f, g, o, through a loop of gates
checked against torch's cell when the four masks are equal.
    python3 textclass_ref.py bench --threads N [--impl cells|fused] [--steps 20] [--batch 100]
trains the demo's model (vocab 5000, T 32, embed 32, LSTM 100 with variational dropout 0.3 /
0.2, keras pooling, unmasked, sigmoid, embedding L2 1e-3; bench_text.py passes the
vocabulary) on random word ids with torch.optim.Adam (Keras's settings: lr 1e-3, eps 1e-7)
and prints one JSON object with sentences_per_s and peak_rss_mib. --impl cells (the
default): the toolkit's model exactly, one dropout mask per gate (lstm_dropout below: each
gate's input product of all steps at once, a loop over the steps for the recurrent ones, as
Keras's recurrent dropout needs); fused: torch's LSTM kernel on the dropped input, with
--rec-dropout 0 (the kernel has no recurrent dropout, and it takes one input for all four
gates, so its input mask is shared by the gates: the nearest model it can run).
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
import safetensors_io  # noqa: E402

POOLS = ("keras", "final-dot", "query", "last", "mean")


class TextConfig:
    def __init__(self, vocab=9, T=6, embed=4, hidden=5, bidirectional=0, pool="keras",
                 attn_kind="additive", attn_size=0, masked=0, classes=2, embed_l2=1e-2):
        assert pool in POOLS
        self.vocab, self.T, self.embed, self.hidden = vocab, T, embed, hidden
        self.bidirectional, self.pool, self.attn_kind = bidirectional, pool, attn_kind
        self.attn_size, self.masked, self.classes, self.embed_l2 = attn_size, masked, classes, embed_l2

    def D(self):
        return self.hidden * (2 if self.bidirectional else 1)

    def outputs(self):
        return 1 if self.classes == 2 else self.classes

    def A(self):
        return self.attn_size if self.attn_size > 0 else self.D()

    def as_meta(self):
        return {k: str(v) for k, v in vars(self).items()}


def param_shapes(c):
    E, H, D, O = c.embed, c.hidden, c.D(), c.outputs()
    s = {"emb": (c.vocab, E), "lstm.W": (4 * H, E + H), "lstm.b": (4 * H,)}
    if c.bidirectional:
        s["lstm_rev.W"] = (4 * H, E + H)
        s["lstm_rev.b"] = (4 * H,)
    if c.pool == "keras":
        s["att.w"] = (D,)
        s["att.b"] = (c.T,)
    if c.pool == "query":
        s["query"] = (D,)
        assert c.attn_kind == "additive", "the reference has the additive kernel only"
        A = c.A()
        s.update({"attn.W_k": (A, D), "attn.W_q": (A, D), "attn.b": (A,), "attn.w": (A,)})
    s["out.W"] = (O, D)
    s["out.b"] = (O,)
    return s


def init_params(c, gen, scale=0.5, dtype=torch.float64):
    """Every parameter uniform in +-scale (larger than Keras's initial values, so that every
    path carries a gradient worth comparing)."""
    return {k: (torch.rand(*shape, generator=gen, dtype=torch.float64) * 2 - 1).mul(scale).to(dtype)
            for k, shape in param_shapes(c).items()}


def lstm_torch(x, W, b, E, H, reverse):
    """torch's LSTM (the kernel nn.LSTM calls, torch._VF.lstm, which takes its weights as
    arguments) with the toolkit's W (4H, E + H), b (4H): x (T, B, E) -> hs (T, B, H)."""
    T, B, _ = x.shape
    inp = x.flip(0) if reverse else x
    h0 = x.new_zeros(1, B, H)
    weights = [W[:, :E], W[:, E:], b, torch.zeros_like(b)]
    hs, _, _ = torch._VF.lstm(inp, (h0, h0), weights, True, 1, 0.0, False, False, False)
    return hs.flip(0) if reverse else hs


def lstm_cells(x, W, b, E, H, reverse, lengths):
    """The same LSTM as a loop of cells (gates i, f, g, o); lengths (B) or None: steps
    t >= lengths[b] leave row b's state unchanged (seq/lstm_seq.h)."""
    T, B, _ = x.shape
    h = x.new_zeros(B, H)
    c = x.new_zeros(B, H)
    out = [None] * T
    for s in range(T):
        t = T - 1 - s if reverse else s
        g = x[t] @ W[:, :E].T + h @ W[:, E:].T + b
        i, f, gg, o = g.split(H, dim=1)
        c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(gg)
        h_new = torch.sigmoid(o) * torch.tanh(c_new)
        if lengths is not None:
            act = (t < lengths).unsqueeze(1)
            h_new = torch.where(act, h_new, h)
            c_new = torch.where(act, c_new, c)
        h, c = h_new, c_new
        out[t] = h
    return torch.stack(out)


def lstm(x, W, b, c, reverse, lengths):
    E, H = c.embed, c.hidden
    if c.masked:
        with torch.no_grad():  # the cell loop is nn.LSTM where nothing is masked
            ref = lstm_torch(x, W, b, E, H, reverse)
            mine = lstm_cells(x, W, b, E, H, reverse, None)
            assert float((ref - mine).abs().max()) < 1e-10, "cell loop differs from nn.LSTM"
        return lstm_cells(x, W, b, E, H, reverse, lengths)
    return lstm_torch(x, W, b, E, H, reverse)


def masked_softmax(e, mask):
    """Softmax over dim 1 with masked positions at 0; a row with nothing unmasked gets 0."""
    if mask is None:
        return torch.softmax(e, dim=1)
    e = e.masked_fill(~mask, float("-inf"))
    any_ = mask.any(dim=1, keepdim=True)
    e = torch.where(any_, e, torch.zeros_like(e))
    return torch.where(any_, torch.softmax(e, dim=1), torch.zeros_like(e))


def last_states(states, lengths, c):
    """(B, D): the forward half at the last word, the backward half at the first."""
    B, T, D = states.shape
    H = c.hidden
    n = lengths if c.masked else torch.full((B,), T, dtype=torch.long)
    rows = torch.arange(B)
    idx = (n - 1).clamp(min=0)
    fwd = states[rows, idx, :H] * (n > 0).unsqueeze(1).to(states.dtype)
    if not c.bidirectional:
        return fwd
    bwd = states[:, 0, H:] * (n > 0).unsqueeze(1).to(states.dtype)
    return torch.cat([fwd, bwd], dim=1)


def forward(p, c, ids, lengths, labels, masks=None, impl="cells"):
    """ids (B, T) long, lengths (B) long, labels (B) long. masks: None, or (in, rec)
    variational dropout masks of the forward LSTM (the benchmark's training, unmasked, one
    direction): impl "cells" runs lstm_dropout with one mask per gate, in (B, 4, E) and rec
    (B, 4, H) or None; "fused" torch's LSTM kernel on x * in, in (B, E) shared by the gates
    (rec must be None: that kernel has no recurrent dropout)."""
    B, T = ids.shape
    E, H = c.embed, c.hidden
    x = p["emb"][ids].transpose(0, 1)  # (T, B, E)
    L = lengths if c.masked else None
    mask = (torch.arange(T).unsqueeze(0) < lengths.unsqueeze(1)) if c.masked else None
    if masks is None:
        hs = lstm(x, p["lstm.W"], p["lstm.b"], c, False, L)
        parts = [hs]
        if c.bidirectional:
            parts.append(lstm(x, p["lstm_rev.W"], p["lstm_rev.b"], c, True, L))
    else:
        assert not c.masked and not c.bidirectional
        if impl == "fused":
            assert masks[1] is None, "torch's LSTM kernel has no recurrent dropout"
            parts = [lstm_torch(x * masks[0], p["lstm.W"], p["lstm.b"], E, H, False)]
        else:
            parts = [lstm_dropout(x, p["lstm.W"], p["lstm.b"], c, masks[0], masks[1])]
    states = torch.cat(parts, dim=2).transpose(0, 1)  # (B, T, D)
    if c.pool == "keras":
        e = torch.tanh(states @ p["att.w"] + p["att.b"])
        alpha = masked_softmax(e, mask)
        pooled = (alpha.unsqueeze(2) * states).sum(1)
    elif c.pool in ("final-dot", "query"):
        if c.pool == "final-dot":
            q = last_states(states, lengths, c)
            e = (states * q.unsqueeze(1)).sum(2)
        else:
            q = p["query"]
            pre = states @ p["attn.W_k"].T + q @ p["attn.W_q"].T + p["attn.b"]
            e = torch.tanh(pre) @ p["attn.w"]
        alpha = masked_softmax(e, mask)
        pooled = (alpha.unsqueeze(2) * states).sum(1)
    elif c.pool == "last":
        pooled = last_states(states, lengths, c)
        alpha = None
    else:  # mean
        if mask is None:
            pooled = states.mean(1)
        else:
            m = mask.to(states.dtype)
            pooled = (states * m.unsqueeze(2)).sum(1) / m.sum(1, keepdim=True).clamp(min=1)
        alpha = None
    logits = pooled @ p["out.W"].T + p["out.b"]
    if c.outputs() == 1:
        probs = torch.sigmoid(logits)
        ce = F.binary_cross_entropy_with_logits(logits[:, 0], labels.to(logits.dtype))
    else:
        probs = torch.softmax(logits, dim=1)
        ce = F.cross_entropy(logits, labels)
    loss = ce + c.embed_l2 * (p["emb"] ** 2).sum()
    return {"states": states, "alpha": alpha, "pooled": pooled, "logits": logits,
            "probs": probs, "loss": loss}


# --- fixtures ------------------------------------------------------------------------------

def make_fixture(path, c, B, lengths, seed):
    gen = torch.Generator().manual_seed(seed)
    params = {k: v.float().double() for k, v in init_params(c, gen).items()}
    lengths = torch.tensor(lengths, dtype=torch.long)
    ids = torch.randint(1, c.vocab, (B, c.T), generator=gen)
    for b in range(B):
        ids[b, int(lengths[b]):] = 0  # post-padding, id 0
    labels = torch.randint(0, c.classes, (B,), generator=gen)
    labels[:c.classes] = torch.arange(min(B, c.classes))  # every class present
    p = {k: v.clone().requires_grad_() for k, v in params.items()}
    out = forward(p, c, ids, lengths, labels)
    names = list(p)
    grads = torch.autograd.grad(out["loss"], [p[k] for k in names])
    t = {f"param/{k}": v for k, v in params.items()}
    t.update({f"grad/{k}": g for k, g in zip(names, grads)})
    t.update({"input/ids": ids.double(), "input/lengths": lengths.double(),
              "input/labels": labels.double(), "output/states": out["states"],
              "output/pooled": out["pooled"], "output/logits": out["logits"],
              "output/probs": out["probs"], "output/loss": out["loss"].reshape(1)})
    if out["alpha"] is not None:
        t["output/alpha"] = out["alpha"]
    meta = c.as_meta()
    meta["B"] = str(B)
    meta["generator"] = "bench/reference/textclass_ref.py (PyTorch " + torch.__version__ + ")"
    safetensors_io.save(path, {k: v.detach().numpy() for k, v in t.items()}, meta)
    return float(out["loss"])


# Each configuration small (a few KB); lengths T, a short one, one word and none: padding,
# the last word, an empty sentence. Between them every pooling, masked and not, one
# direction and both, sigmoid and softmax.
FIXTURES = [
    ("text_keras_demo.safetensors",  # the Keras demo: forward, unmasked, sigmoid
     TextConfig(pool="keras", masked=0, bidirectional=0, classes=2), 4, [6, 3, 1, 0], 21),
    ("text_keras_masked_bi.safetensors",
     TextConfig(pool="keras", masked=1, bidirectional=1, classes=3), 4, [6, 3, 1, 0], 22),
    ("text_final_dot.safetensors",  # the PyTorch tutorial's: both directions
     TextConfig(pool="final-dot", masked=0, bidirectional=1, classes=2), 3, [6, 2, 0], 23),
    ("text_final_dot_masked.safetensors",
     TextConfig(pool="final-dot", masked=1, bidirectional=1, classes=2), 4, [6, 3, 1, 0], 24),
    ("text_query_additive.safetensors",
     TextConfig(pool="query", attn_kind="additive", attn_size=3, masked=1, bidirectional=0,
                classes=3), 4, [6, 3, 1, 0], 25),
    # A learned query moves every step's score by the same W_q q + b, which the softmax
    # mostly cancels: attn.W_q's and attn.b's gradients are 100-200x smaller than the LSTM's
    # in every seed tried (26-39); tests/test_parity_text.c's tolerance says what follows.
    ("text_query_unmasked_bi.safetensors",
     TextConfig(pool="query", attn_kind="additive", attn_size=0, masked=0, bidirectional=1,
                classes=2), 3, [6, 2, 0], 37),
    ("text_last.safetensors",  # the demo's baseline
     TextConfig(pool="last", masked=0, bidirectional=0, classes=2), 3, [6, 2, 1], 27),
    ("text_last_masked_bi.safetensors",
     TextConfig(pool="last", masked=1, bidirectional=1, classes=3), 4, [6, 3, 1, 0], 28),
    ("text_mean.safetensors",
     TextConfig(pool="mean", masked=0, bidirectional=1, classes=3), 3, [6, 2, 0], 29),
    ("text_mean_masked.safetensors",
     TextConfig(pool="mean", masked=1, bidirectional=0, classes=2), 4, [6, 3, 1, 0], 30),
]


def keep_past_length(t, lengths, h_new, c_new, h, c):
    """Step t's states: the new ones, but row b's old ones where t >= lengths[b] (all new
    without lengths)."""
    if lengths is None:
        return h_new, c_new
    act = (t < lengths).unsqueeze(1)
    return torch.where(act, h_new, h), torch.where(act, c_new, c)


def lstm_masked_dropout(x, W, b, H, reverse, lengths, m_in, m_rec):
    """seq/lstm_seq.h's LSTM with variational dropout and lengths, as a loop of torch's own
    cell (torch.lstm_cell, gates i, f, g, o): x_t * m_in and h_{t-1} * m_rec enter the gates,
    the carried state is not dropped; steps t >= lengths[b] leave row b's state alone."""
    T, B, E = x.shape
    h = x.new_zeros(B, H)
    c = x.new_zeros(B, H)
    out = [None] * T
    zero = torch.zeros_like(b)
    for s in range(T):
        t = T - 1 - s if reverse else s
        h_new, c_new = torch.lstm_cell(x[t] * m_in, (h * m_rec, c), W[:, :E], W[:, E:], b, zero)
        h, c = keep_past_length(t, lengths, h_new, c_new, h, c)
        out[t] = h
    return torch.stack(out)


def lstm_gated_dropout(x, W, b, H, reverse, lengths, m_in, m_rec):
    """seq/lstm_seq.h's gated LSTM (lstm_seq_forward_gated) as a plain loop over steps and
    gates: gate q's pre-activation (x_t * m_in[:, q]) W_q^x + (h_{t-1} * m_rec[:, q]) W_q^h +
    b_q with m_in (B, 4, E), m_rec (B, 4, H) in gate order i, f, g, o; the carried state is
    not dropped; steps t >= lengths[b] leave row b's state alone."""
    T, B, E = x.shape
    h = x.new_zeros(B, H)
    c = x.new_zeros(B, H)
    out = [None] * T
    for s in range(T):
        t = T - 1 - s if reverse else s
        pre = [(x[t] * m_in[:, q]) @ W[q * H:(q + 1) * H, :E].T
               + (h * m_rec[:, q]) @ W[q * H:(q + 1) * H, E:].T + b[q * H:(q + 1) * H]
               for q in range(4)]
        c_new = torch.sigmoid(pre[1]) * c + torch.sigmoid(pre[0]) * torch.tanh(pre[2])
        h_new = torch.sigmoid(pre[3]) * torch.tanh(c_new)
        h, c = keep_past_length(t, lengths, h_new, c_new, h, c)
        out[t] = h
    return torch.stack(out)


def make_lstm_fixture(path, T, B, E, H, reverse, lengths, seed, rate=0.3, rec_rate=0.2,
                      gated=False):
    """The LSTM alone with fixed dropout masks: x (T, B, E), W, b, lengths or none, in_mask
    and rec_mask (0 or 1 / (1 - rate)), and the gradient of sum(hs * R) for a fixed random R
    (T, B, H): output/hs, grad/x, grad/W, grad/b. The masks are (B, E) and (B, H), torch's
    cell with shared masks (lstm_masked_dropout); gated, (B, 4, E) and (B, 4, H), one per
    gate (lstm_gated_dropout, metadata gated 1), the gate loop first checked against
    torch.lstm_cell with each row's four masks made equal."""
    gen = torch.Generator().manual_seed(seed)
    u = lambda *shape: (torch.rand(*shape, generator=gen, dtype=torch.float64) * 2 - 1).float().double()
    x, W, b, R = u(T, B, E), u(4 * H, E + H), u(4 * H), u(T, B, H)
    gates = (4,) if gated else ()
    m_in = (torch.rand(B, *gates, E, generator=gen) >= rate).double() / (1 - rate)
    m_rec = (torch.rand(B, *gates, H, generator=gen) >= rec_rate).double() / (1 - rec_rate)
    m_in, m_rec = m_in.float().double(), m_rec.float().double()
    L = torch.tensor(lengths, dtype=torch.long) if lengths is not None else None
    if gated:
        with torch.no_grad():  # equal masks: the gate loop is torch's cell with shared masks
            ref = lstm_masked_dropout(x, W, b, H, reverse, L, m_in[:, 0], m_rec[:, 0])
            mine = lstm_gated_dropout(x, W, b, H, reverse, L, m_in[:, :1].expand(-1, 4, -1),
                                      m_rec[:, :1].expand(-1, 4, -1))
            assert float((ref - mine).abs().max()) < 1e-12, "gate loop differs from torch.lstm_cell"
    xs, Ws, bs = (v.clone().requires_grad_() for v in (x, W, b))
    lstm = lstm_gated_dropout if gated else lstm_masked_dropout
    hs = lstm(xs, Ws, bs, H, reverse, L, m_in, m_rec)
    gx, gW, gb = torch.autograd.grad((hs * R).sum(), [xs, Ws, bs])
    t = {"input/x": x, "input/W": W, "input/b": b, "input/in_mask": m_in,
         "input/rec_mask": m_rec, "input/dhs": R, "output/hs": hs.detach(), "grad/x": gx,
         "grad/W": gW, "grad/b": gb}
    if L is not None:
        t["input/lengths"] = L.double()
    meta = {"T": str(T), "B": str(B), "E": str(E), "H": str(H), "reverse": str(int(reverse))}
    if gated:
        meta["gated"] = "1"
    meta["generator"] = "bench/reference/textclass_ref.py (PyTorch " + torch.__version__ + ")"
    safetensors_io.save(path, {k: v.detach().numpy() for k, v in t.items()}, meta)


# The LSTM with Keras's variational dropout (fixed masks): forward without lengths (the
# demo's), and backward in time with lengths (a bidirectional masked model's second half).
LSTM_FIXTURES = [
    ("text_lstm_dropout.safetensors", dict(T=5, B=3, E=4, H=5, reverse=False, lengths=None,
                                           seed=48)),
    ("text_lstm_dropout_rev_masked.safetensors", dict(T=5, B=4, E=3, H=4, reverse=True,
                                                      lengths=[5, 2, 1, 0], seed=42)),
]

# The same two with one mask per gate (what training runs).
LSTM_GATED_FIXTURES = [
    ("text_lstm_gated.safetensors", dict(T=5, B=3, E=4, H=5, reverse=False, lengths=None,
                                         seed=49)),
    ("text_lstm_gated_rev_masked.safetensors", dict(T=5, B=4, E=3, H=4, reverse=True,
                                                    lengths=[5, 2, 1, 0], seed=43)),
]


def fixtures(outdir):
    os.makedirs(outdir, exist_ok=True)
    torch.set_num_threads(1)
    for name, c, B, lengths, seed in FIXTURES:
        path = os.path.join(outdir, name)
        loss = make_fixture(path, c, B, lengths, seed)
        print(f"{path}: loss {loss:.6f} ({os.path.getsize(path)} bytes)")
    for name, kw in LSTM_FIXTURES:
        path = os.path.join(outdir, name)
        make_lstm_fixture(path, **kw)
        print(f"{path}: the LSTM with dropout masks ({os.path.getsize(path)} bytes)")
    for name, kw in LSTM_GATED_FIXTURES:
        path = os.path.join(outdir, name)
        make_lstm_fixture(path, **kw, gated=True)
        print(f"{path}: the LSTM with per-gate dropout masks ({os.path.getsize(path)} bytes)")


# --- benchmark -----------------------------------------------------------------------------

def lstm_dropout(x, W, b, c, m_in, m_rec):
    """The forward LSTM with Keras's variational dropout, one mask per gate (Keras's
    implementation 1, seq/lstm_seq.h's lstm_seq_forward_gated), unmasked: what the toolkit
    trains by default. m_in (B, 4, E), m_rec (B, 4, H) or None, gate order i, f, g, o; the
    masks are the same at every step. Its fastest form in PyTorch found here (forward and
    backward of T 32, B 100, E 32, H 100 on one thread: 50-70 ms of CPU, against 190 ms with
    the four gates in one torch.bmm a step, whose CPU kernel is a plain loop here): since x
    and the input masks are known up front, each gate's input product of all T steps is one
    GEMM (torch.addmm over T B rows, the bias folded in) before the loop; each step then
    takes gate q's pre-activation as one torch.addmm of h_{t-1} * r_q with its recurrent
    block (without recurrent masks, one addmm of (B, H) x (H, 4H) for all four), and the
    cell's elementwise ops. Autograd differentiates it."""
    T, B, E = x.shape
    H = c.hidden
    xf = x.reshape(T * B, E)
    xg = [torch.addmm(b[q * H:(q + 1) * H], xf * m_in[:, q].repeat(T, 1),
                      W[q * H:(q + 1) * H, :E].t()).view(T, B, H) for q in range(4)]
    h = x.new_zeros(B, H)
    cell = x.new_zeros(B, H)
    out = []
    for t in range(T):
        if m_rec is not None:
            pre = [torch.addmm(xg[q][t], h * m_rec[:, q], W[q * H:(q + 1) * H, E:].t())
                   for q in range(4)]
        else:
            pre = (h @ W[:, E:].t()).split(H, dim=1)
            pre = [xg[q][t] + pre[q] for q in range(4)]
        cell = torch.sigmoid(pre[1]) * cell + torch.sigmoid(pre[0]) * torch.tanh(pre[2])
        h = torch.sigmoid(pre[3]) * torch.tanh(cell)
        out.append(h)
    return torch.stack(out)


def check_lstm_dropout(c, gen):
    """lstm_dropout (the benchmark's fast form) against the fixtures' plain gate loop, in
    float64 on a small batch, forward and gradients; raises on a difference."""
    T, B, E, H = 5, 3, c.embed, c.hidden
    u = lambda *shape: torch.rand(*shape, generator=gen, dtype=torch.float64) * 2 - 1
    x, W, b = u(T, B, E), u(4 * H, E + H) * 0.3, u(4 * H)
    for rec in (True, False):
        m_in = (torch.rand(B, 4, E, generator=gen) >= 0.3).double() / 0.7
        m_rec = (torch.rand(B, 4, H, generator=gen) >= 0.2).double() / 0.8 if rec else None
        ones = torch.ones(B, 4, H, dtype=torch.float64)
        outs = []
        for fn in (lambda: lstm_dropout(xs, Ws, bs, c, m_in, m_rec),
                   lambda: lstm_gated_dropout(xs, Ws, bs, H, False, None, m_in,
                                              m_rec if rec else ones)):
            xs, Ws, bs = (v.clone().requires_grad_() for v in (x, W, b))
            hs = fn()
            outs.append([hs] + list(torch.autograd.grad(hs.sum(), [xs, Ws, bs])))
        for a, ref in zip(*outs):
            assert float((a - ref).abs().max()) < 1e-10, "lstm_dropout differs from the gate loop"


def bench(a):
    torch.set_num_threads(a.threads)
    c = TextConfig(vocab=a.vocab, T=a.T, embed=a.embed, hidden=a.hidden, pool="keras",
                   masked=0, classes=2, embed_l2=1e-3)
    gen = torch.Generator().manual_seed(1)
    check_lstm_dropout(c, gen)
    params = {k: (v * 0.1).float().requires_grad_()
              for k, v in init_params(c, gen, dtype=torch.float32).items()}
    opt = torch.optim.Adam(list(params.values()), lr=1e-3, betas=(0.9, 0.999), eps=1e-7)
    times, cpu, loss = [], [], float("nan")
    keep_in, keep_rec = 1 - a.dropout, 1 - a.rec_dropout
    for step in range(a.warmup + a.steps):
        ids = torch.randint(0, c.vocab, (a.batch, c.T), generator=gen)
        lengths = torch.full((a.batch,), c.T, dtype=torch.long)
        labels = torch.randint(0, 2, (a.batch,), generator=gen)
        t0, c0 = time.perf_counter(), time.process_time()
        m_rec = None
        if a.impl == "cells":  # one mask per gate, as the toolkit (none at rate 0)
            m_in = (torch.rand(a.batch, 4, c.embed) < keep_in).float() / keep_in
            if a.rec_dropout > 0:
                m_rec = (torch.rand(a.batch, 4, c.hidden) < keep_rec).float() / keep_rec
        else:  # torch's kernel takes one input for all four gates
            m_in = (torch.rand(a.batch, c.embed) < keep_in).float() / keep_in
        out = forward(params, c, ids, lengths, labels, masks=(m_in, m_rec), impl=a.impl)
        opt.zero_grad(set_to_none=True)
        out["loss"].backward()
        opt.step()
        loss = float(out["loss"])
        if step >= a.warmup:
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps({"model": "textclass", "impl": "pytorch-" + a.impl, "threads": a.threads,
                      "sentences_per_s": round(a.batch * len(times) / sum(times), 3),
                      "sentences_per_cpu_s": round(a.batch * len(cpu) / sum(cpu), 3),
                      "steps": len(times), "final_loss": round(loss, 4),
                      "peak_rss_mib": round(rss, 1)}))


def main():
    ap = argparse.ArgumentParser(description="the sentence classifier in PyTorch")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("bench")
    b.add_argument("--steps", type=int, default=20)
    b.add_argument("--warmup", type=int, default=2)
    b.add_argument("--batch", type=int, default=100)
    b.add_argument("--vocab", type=int, default=5000)
    b.add_argument("--T", type=int, default=32)
    b.add_argument("--embed", type=int, default=32)
    b.add_argument("--hidden", type=int, default=100)
    b.add_argument("--dropout", type=float, default=0.3)
    b.add_argument("--rec-dropout", type=float, default=0.2)
    b.add_argument("--threads", type=int, default=1)
    b.add_argument("--impl", choices=("cells", "fused"), default="cells")
    f = sub.add_parser("fixture")
    f.add_argument("outdir")
    a = ap.parse_args()
    if a.cmd == "bench" and a.impl == "fused" and a.rec_dropout != 0:
        ap.error("--impl fused: torch's LSTM kernel has no recurrent dropout (--rec-dropout 0)")
    if a.cmd == "bench":
        bench(a)
    else:
        fixtures(a.outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
