"""translator_ref.py: the encoder-decoder translator of models/translator.c (`text translate`)
in PyTorch, written from the equations of models/translator.h and models/decoder.h.

The parameters are a dict keyed by the toolkit's Block names, in its layout's order:
    src.embed (Vs, Es)
    enc.fwd.W (4 He, Es + He), enc.fwd.b (4 He); enc.rev.*   the two encoder directions
    init.W_h, init.W_c (H, D), init.b_h, init.b_c (H)        D = 2 He
    embed (V, E)
    lstm.W (4H, E + D + H), lstm.b (4H)                       on [E y_t, z, h_t], gates i f g o
    attn.*  bahdanau, luong-concat: W_k (A, D), W_q (A, H), b (A), w (A)
            luong-general, local-m: W (H, D);  local-p: W (H, D), W_p (A, H), v_p (A)
            luong-dot, none: no parameters
    gate.W (1, H), gate.b (1)                                 beta = sigmoid(gate.W q + gate.b)
    out.L_h (E, H), out.L_z (E, D), out.L_o (V, E), out.b_o (V)
The model, for B pairs (source ids (B, S) padded, with lengths n_b; target words):
    x = E_src src; f = LSTM_fwd(x), r = LSTM_rev(x) over each row's length (a padding step
    leaves the state alone; the reverse direction starts at the row's last word); a_i = [f_i; r_i]
    none: one annotation per row, the final states [f_{n-1}; r_0]
    h_0 = tanh(W_h0 mean(a) + b_h0), c_0 = tanh(W_c0 mean(a) + b_c0)   mean over i < n_b
    step t (input <start>, w_1..w_n; target w_1..w_n, <end>):
      bahdanau (query previous): alpha_t, ctx_t = attend(h_t); z_t = beta(h_t) ctx_t;
                                 h_{t+1} = LSTM([E y_t, z_t], h_t)
      the others (query current): h_{t+1} = LSTM([E y_t, z_{t-1}], h_t) (z_{-1} = 0);
                                 alpha_t, ctx_t = attend(h_{t+1}); z_t = beta(h_{t+1}) ctx_t
      logits_t = L_o (E y_t + L_h h_{t+1} + L_z z_t) + b_o
    attend(q): scores over the row's positions i < n_b, softmax (padding at 0):
      additive        e_i = w . tanh(W_k a_i + W_q q + b)    (bahdanau, luong-concat)
      dot             e_i = q . a_i                           (luong-dot: H = D)
      multiplicative  e_i = q^T W a_i                         (luong-general)
      local-m / local-p: the multiplicative score on the window [round(p) - W, round(p) + W]
        clipped to [0, n), alpha = softmax_i(e_i - (i - p)^2 / (2 (W/2)^2)) over it;
        p = min(t, n - 1) (local-m) or (n - 1) sigmoid(v_p . tanh(W_p q)) (local-p, the
        gradient flows through p, not through the window's bounds)
      none            alpha = 1 on the one fixed context
    loss = (1/B) sum_b sum_t CE(logits_t, target_t)
Greedy decoding (translator_greedy): <start> first, each step feeds the previous step's most
likely word among <end> and the non-special words (ties to the lower id, <end> first), up to
max_len words and then <end> at the last step.
The encoder LSTM is textclass_ref.py's loop of cells (checked against torch's nn.LSTM kernel
where nothing is masked); the decoder's LSTM cell, initial state and token packing are
sat_ref.py's.

    python3 translator_ref.py fixture OUTDIR
writes OUTDIR/translate_*.safetensors for tests/test_parity_translate.c: param/NAME (drawn in
float64, rounded to float32), input/src (B, S), input/src_len (B), input/words (B, max_len),
input/lens (B) (descending, as the toolkit packs its rows), output/annot (B, L, D),
output/alpha (T, B, L) of the teacher-forced pass (T = max(lens) + 1; rows past their <end>
hold zeros), output/loss (1), grad/NAME; greedy decoding of
input/decode_src (B, S) with input/decode_src_len (B) by the weights with decode_param/NAME
(weights of their own, the embeddings and output layer scaled up, so that the tiny model
does not write one word over and over): output/greedy_words (B, max_len, 0 past the end),
output/greedy_len (B), output/greedy_alpha (max_len + 1, B, L). Everything computed in
float64 from the float32 values; every greedy choice and every local window's rounding is
at least 1e-3 away from a tie (the sources are drawn again until it is). The configuration
is in the metadata.
    python3 translator_ref.py bench --threads N [--steps 8] [--batch 64] [sizes]
trains the same model in float32 with torch.optim.Adam (lr 1e-3) and global-norm clipping 5
on random ids with the lengths bench_lengths() gives (bench/bench_translate.c draws the
same), then times greedy decoding of --decode batches and beam decoding (beam_search,
--beam 5, --length-alpha 0.7) of --beam-decode batches; prints one JSON object with
pairs_per_s, pairs_per_cpu_s, sentences_per_s (greedy), sentences_per_cpu_s,
beam_sentences_per_s, beam_sentences_per_cpu_s and peak_rss_mib.
    python3 translator_ref.py beamcheck DUMP
decodes the sentences of a bench/bench_translate.c DUMP with its weights by beam_search in
float32 and float64 and prints, as one JSON object, on how many the words equal the
toolkit's (each disagreement on stderr).
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
import beam_ref  # noqa: E402  (BeamSearch)
import sat_ref  # noqa: E402  (lstm, init_state, tokens; PAD, START, END)
import textclass_ref  # noqa: E402  (the encoder's LSTM over lengths, masked_softmax)

NSPECIAL = 4  # <pad>, <start>, <end>, <unk> (seq/vocab.h)
ATTENTIONS = ("bahdanau", "luong-dot", "luong-general", "luong-concat", "local-m", "local-p",
              "none")


class TranslatorConfig:
    def __init__(self, Vs=7, Es=3, He=2, S=5, max_len=4, E=3, H=4, V=9, attention="bahdanau",
                 A=3, window=1):
        assert attention in ATTENTIONS
        self.Vs, self.Es, self.He, self.S, self.max_len = Vs, Es, He, S, max_len
        self.E, self.H, self.V, self.attention, self.A, self.window = E, H, V, attention, A, window
        if attention == "luong-dot":
            assert H == 2 * He, "luong-dot needs the decoder's H = D = 2 He"

    @property
    def D(self):
        return 2 * self.He

    @property
    def L(self):
        return 1 if self.attention == "none" else self.S

    @property
    def score(self):
        return {"bahdanau": "additive", "luong-concat": "additive", "luong-dot": "dot",
                "none": "none"}.get(self.attention, "multiplicative")

    @property
    def query_current(self):
        return self.attention != "bahdanau"

    def as_meta(self):
        return {k: str(v) for k, v in vars(self).items()}


def param_shapes(c):
    Es, He, D, E, H, V, A = c.Es, c.He, c.D, c.E, c.H, c.V, c.A
    s = [("src.embed", (c.Vs, Es)), ("enc.fwd.W", (4 * He, Es + He)), ("enc.fwd.b", (4 * He,)),
         ("enc.rev.W", (4 * He, Es + He)), ("enc.rev.b", (4 * He,)),
         ("init.W_h", (H, D)), ("init.b_h", (H,)), ("init.W_c", (H, D)), ("init.b_c", (H,)),
         ("embed", (V, E)), ("lstm.W", (4 * H, E + D + H)), ("lstm.b", (4 * H,))]
    if c.score == "additive":
        s += [("attn.W_k", (A, D)), ("attn.W_q", (A, H)), ("attn.b", (A,)), ("attn.w", (A,))]
    elif c.score == "multiplicative":
        s += [("attn.W", (H, D))]
    if c.attention == "local-p":
        s += [("attn.W_p", (A, H)), ("attn.v_p", (A,))]
    s += [("gate.W", (1, H)), ("gate.b", (1,)), ("out.L_h", (E, H)), ("out.L_z", (E, D)),
          ("out.L_o", (V, E)), ("out.b_o", (V,))]
    return s


# init_params's scale for the source embedding, the encoder and the attention: larger than
# the rest, so that the annotations differ from position to position and the scores move the
# loss (at +-0.5 everywhere the attention's gradients were 1e-6 of the largest in the model,
# inside the float32 rounding of the rest).
SCALE_UP = {"src.": 3.0, "enc.": 3.0, "attn.": 4.0}


def init_params(c, gen, scale=0.5, dtype=torch.float64):
    """Every parameter uniform in +-scale (larger than the toolkit's initial values, so that
    every path carries a gradient worth comparing; SCALE_UP times that for the source side
    and the attention), the forget gates' biases + 1."""
    p = {}
    for name, shape in param_shapes(c):
        up = next((f for pre, f in SCALE_UP.items() if name.startswith(pre)), 1.0)
        t = (torch.rand(*shape, generator=gen, dtype=torch.float64) * 2 - 1) * scale * up
        if name in ("enc.fwd.b", "enc.rev.b"):
            t[c.He:2 * c.He] += 1.0
        if name == "lstm.b":
            t[c.H:2 * c.H] += 1.0
        p[name] = t.to(dtype)
    return p


# --- the model -----------------------------------------------------------------------------

def lstm_packed(x, p, c, src_len):
    """Both encoder directions through torch's own LSTM kernel (torch._VF.lstm, what nn.LSTM
    runs) on a packed sequence (torch.nn.utils.rnn): the same recurrence over each row's
    length, the reverse direction starting at its last word. x (S, B, Es) -> f, r (S, B, He),
    zeros past each row's length (the toolkit holds the last state there; nothing reads it)."""
    S, B, _ = x.shape
    Es, He = c.Es, c.He
    packed = torch.nn.utils.rnn.pack_padded_sequence(x, src_len, enforce_sorted=False)
    weights = []
    for d in ("fwd", "rev"):
        W, b = p[f"enc.{d}.W"], p[f"enc.{d}.b"]
        weights += [W[:, :Es], W[:, Es:], b, torch.zeros_like(b)]
    h0 = x.new_zeros(2, B, He)
    out, _, _ = torch._VF.lstm(packed.data, packed.batch_sizes, (h0, h0), weights, True, 1, 0.0,
                               False, True)
    hs, _ = torch.nn.utils.rnn.pad_packed_sequence(
        torch.nn.utils.rnn.PackedSequence(out, packed.batch_sizes, packed.sorted_indices,
                                          packed.unsorted_indices), total_length=S)
    return hs[:, :, :He], hs[:, :, He:]


def lstm_cells(x, p, c, src_len):
    """Both directions as textclass_ref.py's loop of cells (seq/lstm_seq.h's lengths; checked
    there against nn.LSTM on the unmasked input): f, r (S, B, He)."""
    tc = textclass_ref.TextConfig(embed=c.Es, hidden=c.He, masked=1)
    return (textclass_ref.lstm(x, p["enc.fwd.W"], p["enc.fwd.b"], tc, False, src_len),
            textclass_ref.lstm(x, p["enc.rev.W"], p["enc.rev.b"], tc, True, src_len))


def encode(p, c, src, src_len, packed=False):
    """src (B, S) long, src_len (B) long -> annotations (B, L, D), their lengths (B) or None
    (none: the one fixed context). packed: torch's LSTM kernel (lstm_packed), else the cells."""
    B = src.shape[0]
    x = p["src.embed"][src].transpose(0, 1)  # (S, B, Es)
    f, r = (lstm_packed if packed else lstm_cells)(x, p, c, src_len)
    if c.attention == "none":
        rows = torch.arange(B)
        return torch.cat([f[src_len - 1, rows], r[0]], dim=1)[:, None, :], None
    return torch.cat([f, r], dim=2).transpose(0, 1), src_len


def mean_annotations(annot, lengths):
    if lengths is None:
        return annot.mean(1)
    m = (torch.arange(annot.shape[1])[None, :] < lengths[:, None]).to(annot.dtype)
    return (annot * m[:, :, None]).sum(1) / lengths[:, None].to(annot.dtype)


def local_centre(p, c, q, n, t):
    """The window's centre (B) for row lengths n (B) at step t."""
    if c.attention == "local-m":
        return torch.clamp(n - 1, max=t).to(q.dtype)
    s = torch.sigmoid(torch.tanh(q @ p["attn.W_p"].T) @ p["attn.v_p"])
    return (n - 1).to(q.dtype) * s


def attend(p, c, annot, lengths, q, t, margins=None, prep=None):
    """Attention with query q (B, H) at step t: alpha (B, L), ctx (B, D). margins, a list,
    gets each local window's distance of p from a rounding tie. prep (B, L, A) or None: the
    additive score's key projection annot W_k^T, computed once per sentence (beam_search).
    annot, lengths and prep may also be per sentence for G consecutive rows of q each (q
    (B G, H): beam_search's hypotheses): alpha (B G, L), ctx (B G, D)."""
    G = q.shape[0] // annot.shape[0]
    if G > 1:
        return attend_grouped(p, c, annot, lengths, q, t, margins, prep, G)
    B, L, D = annot.shape
    if c.attention == "none":
        return annot.new_ones(B, 1), annot[:, 0]
    n = lengths
    pos = torch.arange(L)[None, :]
    keep = pos < n[:, None]
    if c.score == "additive":
        qp = q @ p["attn.W_q"].T + p["attn.b"]
        kp = annot @ p["attn.W_k"].T if prep is None else prep
        e = torch.tanh(kp + qp[:, None, :]) @ p["attn.w"]
    elif c.score == "dot":
        e = (annot * q[:, None, :]).sum(2)
    else:
        e = (annot * (q @ p["attn.W"])[:, None, :]).sum(2)
    if c.attention in ("local-m", "local-p"):
        W = c.window
        centre = local_centre(p, c, q, n, t)
        with torch.no_grad():  # the window's bounds carry no gradient
            cl = torch.minimum(torch.clamp(centre, min=-W - 1.0), (n + W).to(centre.dtype))
            r = torch.floor(cl + 0.5).long()
            if margins is not None and c.attention == "local-p":
                frac = cl + 0.5 - r.to(cl.dtype)  # rounding ties at 0 and 1
                margins.append(float(torch.minimum(frac, 1 - frac).min()))
        keep = keep & (pos >= r[:, None] - W) & (pos <= r[:, None] + W)
        sigma = W / 2.0
        e = e - (pos.to(e.dtype) - centre[:, None]) ** 2 / (2 * sigma * sigma)
    alpha = textclass_ref.masked_softmax(e, keep)
    return alpha, torch.bmm(alpha[:, None, :], annot)[:, 0]


def attend_grouped(p, c, annot, lengths, q, t, margins, prep, G):
    """attend for G rows of q per sentence of annot (B, L, D): the additive score (bahdanau,
    luong-concat) and the context straight from the sentences' tensors (no copy per row);
    the other kinds on the rows' copies."""
    B, L, D = annot.shape
    if c.score != "additive" or c.attention in ("local-m", "local-p"):
        rep = [None if x is None else x.repeat_interleave(G, 0) for x in (annot, lengths, prep)]
        return attend(p, c, rep[0], rep[1], q, t, margins, rep[2])
    qp = (q @ p["attn.W_q"].T + p["attn.b"]).view(B, G, 1, -1)
    kp = annot @ p["attn.W_k"].T if prep is None else prep
    e = (torch.tanh(kp[:, None] + qp) @ p["attn.w"]).view(B * G, L)
    keep = (torch.arange(L)[None, :] < lengths[:, None]).repeat_interleave(G, 0)
    alpha = textclass_ref.masked_softmax(e, keep)
    return alpha, torch.bmm(alpha.view(B, G, L), annot).view(B * G, D)


def step(p, c, annot, lengths, h, cst, zprev, emb, t, margins=None, prep=None):
    """Decoder step t: alpha (B, L), z (B, D), h_{t+1}, c_{t+1}, logits (B, V)."""
    def gated(q):
        alpha, ctx = attend(p, c, annot, lengths, q, t, margins, prep)
        beta = torch.sigmoid(q @ p["gate.W"].T + p["gate.b"])
        return alpha, beta * ctx

    if c.query_current:
        hn, cn = sat_ref.lstm(p, torch.cat([emb, zprev], dim=1), h, cst)
        alpha, z = gated(hn)
    else:
        alpha, z = gated(h)
        hn, cn = sat_ref.lstm(p, torch.cat([emb, z], dim=1), h, cst)
    o = emb + hn @ p["out.L_h"].T + z @ p["out.L_z"].T
    return alpha, z, hn, cn, o @ p["out.L_o"].T + p["out.b_o"]


def start(p, c, src, src_len, packed=False):
    annot, lengths = encode(p, c, src, src_len, packed)
    h, cst = sat_ref.init_state(p, mean_annotations(annot, lengths)[:, None, :])
    z = annot.new_zeros(annot.shape[0], c.D)
    return annot, lengths, h, cst, z


def forward(p, c, src, src_len, words, lens, margins=None, packed=False):
    """Teacher-forced: loss, annot (B, L, D), alpha (T, B, L), logits (T, B, V) (steps past a
    row's <end> zeroed)."""
    B = src.shape[0]
    annot, lengths, h, cst, z = start(p, c, src, src_len, packed)
    in_tok, target = sat_ref.tokens(words, lens, c.max_len)
    emb = p["embed"][in_tok]
    alphas, logits = [], []
    for t in range(in_tok.shape[0]):
        alpha, z, h, cst, lg = step(p, c, annot, lengths, h, cst, z, emb[t], t, margins)
        alphas.append(alpha)
        logits.append(lg)
    alpha, logit = torch.stack(alphas), torch.stack(logits)
    valid = target >= 0
    loss = F.cross_entropy(logit[valid], target[valid], reduction="sum") / B
    return {"loss": loss, "annot": annot, "alpha": alpha * valid[:, :, None],
            "logits": logit * valid[:, :, None]}


def greedy(p, c, src, src_len, margins=None, packed=False):
    """translator_greedy: words (B, max_len) (0 past each row's end), lengths (B), alpha
    (max_len + 1, B, L). margins, a list, gets each choice's gap to the runner-up and the
    local windows' distances from rounding ties, on every row's steps up to its <end>."""
    with torch.no_grad():
        B, ML = src.shape[0], c.max_len
        annot, lengths, h, cst, z = start(p, c, src, src_len, packed)
        tok = torch.full((B,), sat_ref.START, dtype=torch.long)
        cand = torch.tensor([sat_ref.END] + list(range(NSPECIAL, c.V)))
        out = torch.zeros(B, ML, dtype=torch.long)
        out_len = torch.full((B,), -1, dtype=torch.long)
        alphas = []
        for t in range(ML + 1):
            going = out_len < 0
            win = [] if margins is not None else None
            alpha, z, h, cst, lg = step(p, c, annot, lengths, h, cst, z, p["embed"][tok], t, win)
            alphas.append(alpha)
            scores = lg[:, cand]
            best = cand[scores.argmax(1)]
            if margins is not None and bool(going.any()):
                if win and c.attention == "local-p":  # per batch, conservative: all rows
                    margins.extend(win)
                if t < ML:
                    top = scores.topk(2, dim=1).values
                    margins.append(float((top[:, 0] - top[:, 1])[going].min()))
            if t == ML:
                best = torch.full_like(best, sat_ref.END)
            ends = going & (best == sat_ref.END)
            if t < ML:
                out[going & ~ends, t] = best[going & ~ends]
            out_len[ends] = t
            tok = best
        return out, out_len, torch.stack(alphas)


def beam_search(p, c, src, src_len, beam, length_alpha=0.7, packed=False):
    """translator_beam (models/translator_beam.h, seq/beam.c's rules as beam_ref.BeamSearch
    keeps them), batched over sentences x beams with tensor ops (the only Python loop is over
    the max_len + 1 steps). Words are scored by log-softmax with every special but <end> at
    -1e9. Returns words (B, max_len) (0 past each end), lengths (B), scores (B)
    (normalised)."""
    with torch.no_grad():
        annot, lengths, h, cst, z = start(p, c, src, src_len, packed)
        prep = annot @ p["attn.W_k"].T if c.score == "additive" else None
        search = beam_ref.BeamSearch(src.shape[0], beam, c.V, c.max_len, sat_ref.END,
                                     length_alpha, annot.dtype)
        forbid = torch.tensor([i for i in range(NSPECIAL) if i != sat_ref.END])
        toks = torch.full((src.shape[0],), sat_ref.START, dtype=torch.long)
        for t in range(search.T):
            act = search.act
            _, z, h, cst, lg = step(p, c, annot[act], None if lengths is None else lengths[act],
                                    h, cst, z, p["embed"][toks], t,
                                    prep=None if prep is None else prep[act])
            lp = torch.log_softmax(lg, dim=1)
            lp[:, forbid] = -1e9
            parent, toks = search.advance(lp, t)
            h, cst, z = h[parent], cst[parent], z[parent]
            rows = search.retire()
            if rows is not None:
                h, cst, z, toks = h[rows], cst[rows], z[rows], toks[rows]
            if search.done():
                break
        return search.result()


# --- fixtures ------------------------------------------------------------------------------

def f32(t):
    return t.float().double()


def decode_params(c, gen):
    """Weights of their own for greedy decoding: at init_params's scale these tiny models
    write one word over and over or stop at once, which tests little; the word embeddings and
    the output layer's L_z and L_o scaled by 3, its bias dropped, make the words depend on
    the state."""
    p = {k: f32(v) for k, v in init_params(c, gen).items()}
    for k in ("embed", "out.L_z", "out.L_o"):
        p[k] = f32(p[k] * 3)
    p["out.b_o"] = torch.zeros_like(p["out.b_o"])
    return p


def draw_source(c, gen, B, src_len):
    src = torch.randint(1, c.Vs, (B, c.S), generator=gen)
    for b in range(B):
        src[b, int(src_len[b]):] = 0
    return src


def make_fixture(path, c, src_len, lens, seed):
    B = len(src_len)
    src_len = torch.tensor(src_len, dtype=torch.long)
    lens = torch.tensor(lens, dtype=torch.long)
    assert all(lens[i] >= lens[i + 1] for i in range(B - 1)), "lens must descend"
    for attempt in range(100):
        gen = torch.Generator().manual_seed(1000 * seed + attempt)
        params = {k: f32(v) for k, v in init_params(c, gen).items()}
        src = draw_source(c, gen, B, src_len)
        words = torch.randint(NSPECIAL, c.V, (B, c.max_len), generator=gen)
        for b in range(B):
            words[b, int(lens[b]):] = sat_ref.PAD
        margins = [1.0]
        with torch.no_grad():
            forward(params, c, src, src_len, words, lens, margins)
        if min(margins) >= 1e-3:
            break
    else:
        raise SystemExit(f"{path}: no draw without a local window's rounding near a tie")
    p = {k: v.clone().requires_grad_() for k, v in params.items()}
    out = forward(p, c, src, src_len, words, lens)
    with torch.no_grad():  # the benchmark's encoder (torch's packed LSTM) is the same
        fast = forward(params, c, src, src_len, words, lens, packed=True)
        assert float((fast["loss"] - out["loss"]).abs()) < 1e-10, "packed LSTM differs"
    names = list(p)
    grads = torch.autograd.grad(out["loss"], [p[k] for k in names])
    for attempt in range(200):
        dgen = torch.Generator().manual_seed(7919 * seed + attempt)
        dparams = decode_params(c, dgen)
        dlen = torch.randint(1, c.S + 1, (B,), generator=dgen)
        dlen[0] = c.S
        dsrc = draw_source(c, dgen, B, dlen)
        margins = []
        words_g, len_g, alpha_g = greedy(dparams, c, dsrc, dlen, margins)
        n_words = int(len_g.sum())
        distinct = len(set(words_g[words_g > 0].tolist()))
        if min(margins) >= 1e-3 and n_words >= B and distinct >= 2:
            break
    else:
        raise SystemExit(f"{path}: no decoding weights and sources without near ties")
    t = {f"param/{k}": v for k, v in params.items()}
    t.update({f"grad/{k}": g for k, g in zip(names, grads)})
    t.update({f"decode_param/{k}": v for k, v in dparams.items()})
    t.update({"input/src": src.double(), "input/src_len": src_len.double(),
              "input/words": words.double(), "input/lens": lens.double(),
              "output/annot": out["annot"], "output/alpha": out["alpha"],
              "output/loss": out["loss"].reshape(1),
              "input/decode_src": dsrc.double(), "input/decode_src_len": dlen.double(),
              "output/greedy_words": words_g.double(), "output/greedy_len": len_g.double(),
              "output/greedy_alpha": alpha_g})
    meta = c.as_meta()
    meta["B"] = str(B)
    meta["generator"] = "bench/reference/translator_ref.py (PyTorch " + torch.__version__ + ")"
    safetensors_io.save(path, {k: v.detach().numpy() for k, v in t.items()}, meta)
    return float(out["loss"]), words_g, len_g


# Sources of S words, fewer and one; targets of max_len words, fewer and none (a lone <end>),
# in descending order of length. luong-dot needs H = D (He 2, H 4 in all of them).
FIXTURES = [
    ("translate_bahdanau.safetensors", dict(attention="bahdanau"), [5, 2, 1], [4, 2, 0], 1),
    ("translate_luong_general.safetensors", dict(attention="luong-general"), [3, 5, 1],
     [4, 3, 1], 2),
    ("translate_luong_dot.safetensors", dict(attention="luong-dot"), [5, 1, 4], [3, 3, 0], 3),
    ("translate_luong_concat.safetensors", dict(attention="luong-concat", A=4), [2, 5, 3],
     [4, 1, 0], 4),
    ("translate_local_m.safetensors", dict(attention="local-m", window=1), [5, 4, 2], [4, 2, 1],
     5),
    ("translate_local_p.safetensors", dict(attention="local-p", window=1), [5, 3, 1], [4, 3, 0],
     6),
    ("translate_none.safetensors", dict(attention="none"), [4, 5, 1], [4, 2, 0], 7),
]


def fixtures(outdir):
    os.makedirs(outdir, exist_ok=True)
    torch.set_num_threads(1)
    for name, kw, src_len, lens, seed in FIXTURES:
        path = os.path.join(outdir, name)
        loss, words, n = make_fixture(path, TranslatorConfig(**kw), src_len, lens, seed)
        greedy_txt = "; ".join(" ".join(str(int(w)) for w in words[b, :int(n[b])])
                               for b in range(words.shape[0]))
        print(f"{path}: loss {loss:.6f}, greedy {greedy_txt} ({os.path.getsize(path)} bytes)")


# --- benchmark -----------------------------------------------------------------------------

def bench_lengths(B, S, max_len):
    """Source and target lengths of a benchmark batch (bench/bench_translate.c draws the
    same): source lengths spread over [S/2, S], targets over [max_len/2, max_len] in
    descending order (the toolkit packs its rows by target length)."""
    src = [S - (b * 7) % (S - S // 2 + 1) for b in range(B)]
    tgt = sorted((max_len - (b * 3) % (max_len - max_len // 2 + 1) for b in range(B)),
                 reverse=True)
    return torch.tensor(src), torch.tensor(tgt)


def bench(a):
    torch.set_num_threads(a.threads)
    c = bench_config(a)
    gen = torch.Generator().manual_seed(1)
    params = {k: (v * 0.2).float().requires_grad_()
              for k, v in init_params(c, gen, dtype=torch.float32).items()}
    opt = torch.optim.Adam(list(params.values()), lr=1e-3)
    src_len, lens = bench_lengths(a.batch, c.S, c.max_len)
    times, cpu, loss = [], [], float("nan")
    for it in range(a.warmup + a.steps):
        src = draw_source(c, gen, a.batch, src_len)
        words = torch.randint(NSPECIAL, c.V, (a.batch, c.max_len), generator=gen)
        t0, c0 = time.perf_counter(), time.process_time()
        out = forward(params, c, src, src_len, words, lens, packed=True)
        opt.zero_grad(set_to_none=True)
        out["loss"].backward()
        torch.nn.utils.clip_grad_norm_(list(params.values()), 5.0)
        opt.step()
        loss = float(out["loss"])
        if it >= a.warmup:
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    res = {"model": "translator", "impl": "pytorch", "attention": a.attention,
           "threads": a.threads, "pairs_per_s": round(a.batch * len(times) / sum(times), 3),
           "pairs_per_cpu_s": round(a.batch * len(cpu) / sum(cpu), 3), "steps": len(times),
           "final_loss": round(loss, 4)}
    # Greedy decoding (translator_greedy) of --decode batches of --batch sources.
    dtimes, dcpu = [], []
    with torch.no_grad():
        dp = {k: v.detach() for k, v in params.items()}
        for it in range(1 + a.decode):
            src = draw_source(c, gen, a.batch, src_len)
            t0, c0 = time.perf_counter(), time.process_time()
            greedy(dp, c, src, src_len, packed=True)
            if it >= 1:
                dtimes.append(time.perf_counter() - t0)
                dcpu.append(time.process_time() - c0)
        # Beam decoding (translator_beam: beam_search) of --beam-decode batches after a
        # warm-up one, the sources drawn as for greedy.
        btimes, bcpu = [], []
        for it in range(1 + a.beam_decode):
            src = draw_source(c, gen, a.batch, src_len)
            t0, c0 = time.perf_counter(), time.process_time()
            beam_search(dp, c, src, src_len, a.beam, a.length_alpha, packed=True)
            if it >= 1:
                btimes.append(time.perf_counter() - t0)
                bcpu.append(time.process_time() - c0)
    res.update(sentences_per_s=round(a.batch * len(dtimes) / sum(dtimes), 3),
               sentences_per_cpu_s=round(a.batch * len(dcpu) / sum(dcpu), 3),
               beam=a.beam, length_alpha=a.length_alpha,
               beam_sentences_per_s=round(a.batch * len(btimes) / sum(btimes), 3),
               beam_sentences_per_cpu_s=round(a.batch * len(bcpu) / sum(bcpu), 3))
    res["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)
    print(json.dumps(res))


def beamcheck(a):
    """Beam search (beam_search) on the weights and sentences bench_translate DUMP wrote, in
    float32 (as the benchmark runs it) and float64, against the toolkit's words: prints one
    JSON object with the sentences, how many have the same words (and length) on each
    precision, and the largest score difference; each disagreement's sentence on stderr."""
    torch.set_num_threads(1)
    t, meta = safetensors_io.load(a.dump)
    c = bench_config(a)
    beam, alpha = int(meta.get("beam", "5")), float(meta.get("length_alpha", "0.7"))
    src = torch.from_numpy(t["check/src"]).long()
    src_len = torch.from_numpy(t["check/src_len"]).long()
    want = torch.from_numpy(t["check/beam_words"]).long()
    want_len = torch.from_numpy(t["check/beam_len"]).long()
    want_score = torch.from_numpy(t["check/beam_score"]).double()
    res = {"sentences": int(src.shape[0]), "beam": beam, "length_alpha": alpha}
    for name, dt in (("float32", torch.float32), ("float64", torch.float64)):
        p = {k[len("param/"):]: torch.from_numpy(v).to(dt) for k, v in t.items()
             if k.startswith("param/")}
        words, lens, scores = beam_search(p, c, src, src_len, beam, alpha, packed=True)
        same = (words == want).all(1) & (lens == want_len)
        res[f"agree_{name}"] = int(same.sum())
        res[f"max_score_diff_{name}"] = float((scores.double() - want_score).abs().max())
        for b in torch.nonzero(~same).flatten().tolist():
            print(f"translator_ref.py beamcheck: {name} sentence {b}: toolkit "
                  f"{want[b, :want_len[b]].tolist()} ({float(want_score[b]):.6f}), PyTorch "
                  f"{words[b, :lens[b]].tolist()} ({float(scores[b]):.6f})", file=sys.stderr)
    print(json.dumps(res))


def bench_config(a):
    return TranslatorConfig(Vs=a.src_vocab, Es=a.embed, He=a.hidden, S=a.max_src,
                            max_len=a.max_len, E=a.dec_embed, H=2 * a.hidden, V=a.tgt_vocab,
                            attention=a.attention, A=a.attn_size, window=a.window)


def add_sizes(b):
    b.add_argument("--attention", choices=ATTENTIONS, default="bahdanau")
    # text translate train's defaults on the date task (datasets/dates.h)
    b.add_argument("--src-vocab", type=int, default=42)
    b.add_argument("--tgt-vocab", type=int, default=15)
    b.add_argument("--max-src", type=int, default=40)
    b.add_argument("--max-len", type=int, default=10)
    b.add_argument("--embed", type=int, default=32)
    b.add_argument("--hidden", type=int, default=64)
    b.add_argument("--dec-embed", type=int, default=32)
    b.add_argument("--attn-size", type=int, default=64)
    b.add_argument("--window", type=int, default=5)


def main():
    ap = argparse.ArgumentParser(description="the encoder-decoder translator in PyTorch")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("bench")
    b.add_argument("--steps", type=int, default=8)
    b.add_argument("--warmup", type=int, default=1)
    b.add_argument("--decode", type=int, default=4, help="timed greedy batches")
    b.add_argument("--batch", type=int, default=64)
    b.add_argument("--beam-decode", type=int, default=2, help="timed beam batches")
    b.add_argument("--beam", type=int, default=5)
    b.add_argument("--length-alpha", type=float, default=0.7)
    add_sizes(b)
    b.add_argument("--threads", type=int, default=1)
    k = sub.add_parser("beamcheck")
    k.add_argument("dump", help="bench_translate's DUMP file")
    add_sizes(k)
    f = sub.add_parser("fixture")
    f.add_argument("outdir")
    a = ap.parse_args()
    if a.cmd == "bench":
        bench(a)
    elif a.cmd == "beamcheck":
        beamcheck(a)
    else:
        fixtures(a.outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
