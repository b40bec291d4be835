"""translator_transformer_ref.py: the Transformer translator of models/translator_transformer.c
(`text translate train --model transformer`) in PyTorch, on PyTorch's own blocks
(tests/test_parity_translate_transformer.c).

    python3 translator_transformer_ref.py fixture OUTDIR

writes OUTDIR/translate_tf_{pre,post,smooth}.safetensors. The model, as
models/translator_transformer.h writes it:
    x = sqrt(d) E_src[src] + P                   P: sin at even, cos at odd columns
    m = nn.TransformerEncoder(x, src_key_padding_mask from the source lengths)
    y = sqrt(d) E_tgt[<start>, w_1..w_n] + P
    h = nn.TransformerDecoder(y, m, tgt_mask causal, tgt_key_padding_mask from n + 1,
                              memory_key_padding_mask from the source lengths)
    logits = h W_o^T + b_o;  loss = (1/B) sum CE(logits, w_1..w_n, <end>), with
    F.cross_entropy's label_smoothing (q = (1 - eps) onehot + eps / V) when eps > 0
with relu layers, dropout 0, norm_first True (pre-LN, both stacks with a final LayerNorm,
norm=) or False (post-LN, no final norm). The weights are PyTorch's initialisation (fixed
seed) with the norms and biases moved off 1 and 0, embeddings N(0, 1/d), the output layer
three times PyTorch's nn.Linear scale (so that greedy decoding emits more than one word),
rounded to float32; then everything is computed in float64.
Tensors: param/NAME and grad/NAME under the toolkit's Block names (src.embed, encoder.<the
state_dict name>, tgt.embed, decoder.<...>, out.weight, out.bias); input/src (B, S) (0 past
each length), input/src_len (B), input/words (B, max_len) (0 past each length), input/lens
(B); output/loss (1); output/alpha (B, T, Sb): the teacher-forced cross-attention weights of
decoder layer map_layer (mean over heads, tt_attention's layout; T = max n + 1, Sb = the
longest source); greedy decoding (beam 1: every special but <end> forbidden, at most max_len
words) of input/decode_src, input/decode_src_len: output/greedy_words (B, max_len) (0 past
each end), output/greedy_len (B), output/greedy_alpha (max_len + 1, B, S): the map layer's
weights of the step that produced each kept word, zero elsewhere (tt_decode's layout). The
reference decodes by running the whole decoder on each prefix (no key/value cache), and
every greedy choice in the fixtures is at least 1e-3 from a tie. Metadata: the configuration
(TtConfig's field names) and B.
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import beam_ref  # noqa: E402  (BeamSearch)
import safetensors_io  # noqa: E402

PAD, START, END, NSPECIAL = 0, 1, 2, 4  # seq/vocab.h


def f32(t):
    return t.detach().float().double()


def padding_mask(lengths, n):
    """True = a padded key (PyTorch's key_padding_mask)."""
    return torch.arange(n)[None, :] >= lengths[:, None]


def causal_mask(n):
    return torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)


def sinusoids(n, d):
    """seq/positions.c's table (n, d), rounded to float32 as the C side keeps it."""
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    i = torch.arange(d // 2, dtype=torch.float64)[None, :]
    angle = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64), 2.0 * i / d)
    table = torch.zeros(n, d, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle)
    return f32(table)


class Translator(nn.Module):
    def __init__(self, cfg, capture=True):
        """capture: keep the map layer's cross-attention weights (the fixtures read them;
        the benchmark does not, and runs PyTorch's decoder layers as they come)."""
        super().__init__()
        d, h, ff = cfg["d_model"], cfg["heads"], cfg["d_ff"]
        pre = not cfg["post_ln"]
        self.cfg = cfg
        enc_layer = nn.TransformerEncoderLayer(d, h, ff, dropout=0.0, batch_first=True,
                                               norm_first=pre)
        dec_layer = nn.TransformerDecoderLayer(d, h, ff, dropout=0.0, batch_first=True,
                                               norm_first=pre)
        self.src_embed = nn.Parameter(torch.randn(cfg["Vs"], d) / math.sqrt(d))
        self.encoder = nn.TransformerEncoder(enc_layer, cfg["enc_layers"],
                                             norm=nn.LayerNorm(d) if pre else None,
                                             enable_nested_tensor=False)
        self.tgt_embed = nn.Parameter(torch.randn(cfg["V"], d) / math.sqrt(d))
        self.decoder = nn.TransformerDecoder(dec_layer, cfg["dec_layers"],
                                             norm=nn.LayerNorm(d) if pre else None)
        self.out = nn.Linear(d, cfg["V"])
        self.weights = []  # the map layer's cross-attention weights, one entry per call
        if capture:
            self._capture(self.decoder.layers[cfg["map_layer"]].multihead_attn)

    def _capture(self, mha):
        """Makes the map layer's cross-attention return and keep its weights (the decoder
        layer asks for none)."""
        plain = mha.forward

        def forward(*args, **kwargs):
            kwargs["need_weights"] = True
            kwargs["average_attn_weights"] = True
            out, w = plain(*args, **kwargs)
            self.weights.append(w)
            return out, w
        mha.forward = forward

    def toolkit_names(self):
        """name -> parameter under the toolkit's Block names."""
        rename = {"src_embed": "src.embed", "tgt_embed": "tgt.embed"}
        return {rename.get(k, k): v for k, v in self.named_parameters()}

    def encode(self, src, src_len):
        d = self.cfg["d_model"]
        S = src.shape[1]
        x = math.sqrt(d) * self.src_embed[src] + sinusoids(S, d).to(self.src_embed.dtype)[None]
        return self.encoder(x, src_key_padding_mask=padding_mask(src_len, S))

    def decode(self, tok, steps, mem, src_len):
        """tok (B, T) -> logits (B, T, V); steps (B) the positions each row reads."""
        d = self.cfg["d_model"]
        T = tok.shape[1]
        y = math.sqrt(d) * self.tgt_embed[tok] + sinusoids(T, d).to(self.tgt_embed.dtype)[None]
        self.weights.clear()
        h = self.decoder(y, mem, tgt_mask=causal_mask(T),
                         tgt_key_padding_mask=padding_mask(steps, T),
                         memory_key_padding_mask=padding_mask(src_len, mem.shape[1]))
        return self.out(h)


def teacher_tokens(words, lens):
    """in_tok, target (B, T), T = max(lens) + 1; target -1 past each row's <end>."""
    B = words.shape[0]
    T = int(lens.max()) + 1
    tok = torch.full((B, T), PAD, dtype=torch.long)
    target = torch.full((B, T), -1, dtype=torch.long)
    for b in range(B):
        n = int(lens[b])
        tok[b, 0] = START
        tok[b, 1:n + 1] = words[b, :n]
        target[b, :n] = words[b, :n]
        target[b, n] = END
    return tok, target


def loss_of(model, src, src_len, words, lens, eps):
    Sb = int(src_len.max())
    mem = model.encode(src[:, :Sb], src_len)
    tok, target = teacher_tokens(words, lens)
    logits = model.decode(tok, lens + 1, mem, src_len)
    valid = target >= 0
    loss = F.cross_entropy(logits[valid], target[valid], reduction="sum",
                           label_smoothing=eps) / src.shape[0]
    return loss, model.weights[0] if model.weights else None


def greedy(model, src, src_len):
    """tt_decode with beam 1: words (B, max_len), lengths (B), alpha (max_len + 1, B, S),
    and the smallest gap between the best and the runner-up over the steps that chose."""
    c = model.cfg
    B, S, ML = src.shape[0], src.shape[1], c["max_len"]
    words = torch.zeros(B, ML, dtype=torch.long)
    lens = torch.zeros(B, dtype=torch.long)
    alpha = torch.zeros(ML + 1, B, S, dtype=torch.float64)
    margin = math.inf
    with torch.no_grad():
        for b in range(B):
            n = int(src_len[b])
            mem = model.encode(src[b:b + 1, :n], src_len[b:b + 1])
            tok = [START]
            for t in range(ML + 1):
                lg = model.decode(torch.tensor([tok]), torch.tensor([t + 1]), mem,
                                  src_len[b:b + 1])[0, t]
                lp = torch.log_softmax(lg, 0)
                lp[[i for i in range(NSPECIAL) if i != END]] = -1e9
                top = lp.topk(2)
                best = int(top.indices[0])
                if t == ML:
                    break  # the limit: whatever comes, the row keeps its max_len words
                margin = min(margin, float(top.values[0] - top.values[1]))
                if best == END:
                    break
                words[b, t] = best
                alpha[t, b, :n] = model.weights[0][0, t]
                tok.append(best)
            lens[b] = len(tok) - 1
    return words, lens, alpha, margin


def beam_search(model, src, src_len, beam, length_alpha=0.7):
    """tt_decode with beam > 1 (seq/beam.c's rules as beam_ref.BeamSearch keeps them, as for
    translator_ref.beam_search), batched over sentences x beams with tensor ops: the only
    Python loop is over the max_len + 1 steps, and each step runs the whole decoder on every
    live row's prefix (nn.TransformerDecoder keeps no key/value cache). Words are scored by
    log-softmax with every special but <end> at -1e9. Returns words (B, max_len) (0 past
    each end), lengths (B), scores (B) (normalised)."""
    with torch.no_grad():
        c = model.cfg
        Sb = int(src_len.max())
        mem_all = model.encode(src[:, :Sb], src_len)
        search = beam_ref.BeamSearch(src.shape[0], beam, c["V"], c["max_len"], END,
                                     length_alpha, mem_all.dtype)
        forbid = torch.tensor([i for i in range(NSPECIAL) if i != END])
        for t in range(search.T):
            rows = search.act.repeat_interleave(search.kr)
            tok = torch.cat([torch.full((rows.shape[0], 1), START, dtype=torch.long),
                             search.hist], 1)
            lg = model.decode(tok, torch.full((rows.shape[0],), t + 1), mem_all[rows],
                              src_len[rows])[:, t]
            lp = torch.log_softmax(lg, dim=1)
            lp[:, forbid] = -1e9
            search.advance(lp, t)
            search.retire()
            if search.done():
                break
        return search.result()


def prepare(model, gen):
    """Norms and biases off 1 and 0, the output layer x3, every parameter rounded to float32;
    the model in float64."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name or name.endswith("bias"):
                p.add_(0.2 * torch.randn(p.shape, generator=gen))
            if name == "out.weight":
                p.mul_(3.0)
            p.copy_(p.float())
    return model.double()


def draw_sources(c, gen, src_len):
    src = torch.randint(NSPECIAL, c["Vs"], (len(src_len), c["S"]), generator=gen)
    for b, n in enumerate(src_len):
        src[b, n:] = PAD
    return src, torch.tensor(src_len)


def make_fixture(path, cfg, src_len, lens, seed):
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    c = dict(cfg)
    c["map_layer_index"] = c["map_layer"] if c["map_layer"] >= 0 else c["dec_layers"] - 1
    model = Translator({**c, "map_layer": c["map_layer_index"]})
    model = prepare(model, gen)
    B = len(src_len)
    src, src_len_t = draw_sources(c, gen, src_len)
    words = torch.randint(NSPECIAL, c["V"], (B, c["max_len"]), generator=gen)
    lens_t = torch.tensor(lens)
    for b, n in enumerate(lens):
        words[b, n:] = PAD
    loss, alpha = loss_of(model, src, src_len_t, words, lens_t, c["label_smoothing"])
    loss.backward()
    # Decoding sources of their own, drawn again until every greedy choice is clear.
    for attempt in range(100):
        dgen = torch.Generator().manual_seed(1000 * seed + attempt)
        dsrc, dsrc_len = draw_sources(c, dgen, [c["S"], 2, 3][:B])
        gw, gl, ga, margin = greedy(model, dsrc, dsrc_len)
        if margin >= 1e-3 and len(set(gw.flatten().tolist()) - {PAD}) > 1:
            break
    else:
        raise SystemExit(f"{path}: no decoding sources without near ties")
    t = {}
    for name, p in model.toolkit_names().items():
        t[f"param/{name}"] = p.detach()
        t[f"grad/{name}"] = p.grad.detach()
    dbl = torch.float64
    t.update({"input/src": src.to(dbl), "input/src_len": src_len_t.to(dbl),
              "input/words": words.to(dbl), "input/lens": lens_t.to(dbl),
              "input/decode_src": dsrc.to(dbl), "input/decode_src_len": dsrc_len.to(dbl),
              "output/loss": loss.detach().reshape(1), "output/alpha": alpha.detach(),
              "output/greedy_words": gw.to(dbl), "output/greedy_len": gl.to(dbl),
              "output/greedy_alpha": ga})
    meta = {k: str(v) for k, v in cfg.items()}
    meta.update({"B": str(B), "generator": "bench/reference/translator_transformer_ref.py "
                 "(PyTorch " + torch.__version__ + ")"})
    safetensors_io.save(path, {k: v.numpy() for k, v in t.items()}, meta)
    return float(loss), gw, gl, margin


def config(post_ln, label_smoothing, map_layer):
    return {"Vs": 7, "V": 9, "S": 5, "max_len": 4, "d_model": 8, "heads": 2, "d_ff": 8,
            "enc_layers": 2, "dec_layers": 2, "post_ln": post_ln,
            "label_smoothing": label_smoothing, "map_layer": map_layer}


# Three pairs with ragged sources (S words, fewer, one) and targets (max_len words, fewer,
# none: a lone <end>).
FIXTURES = [
    ("translate_tf_pre.safetensors", config(0, 0.0, -1), [5, 3, 1], [4, 2, 0], 1),
    ("translate_tf_post.safetensors", config(1, 0.0, 0), [2, 5, 4], [1, 4, 3], 2),
    ("translate_tf_smooth.safetensors", config(0, 0.1, 0), [4, 1, 5], [3, 0, 4], 3),
]


def fixtures(outdir):
    os.makedirs(outdir, exist_ok=True)
    torch.set_num_threads(1)
    for name, cfg, src_len, lens, seed in FIXTURES:
        path = os.path.join(outdir, name)
        loss, gw, gl, margin = make_fixture(path, cfg, src_len, lens, seed)
        greedy_txt = "; ".join(" ".join(str(int(w)) for w in gw[b, :int(gl[b])])
                               for b in range(gw.shape[0]))
        print(f"{path}: loss {loss:.6f}, greedy {greedy_txt} (gap {margin:.2g}, "
              f"{os.path.getsize(path)} bytes)")


def main():
    if len(sys.argv) != 3 or sys.argv[1] != "fixture":
        print("usage: translator_transformer_ref.py fixture OUTDIR", file=sys.stderr)
        return 2
    fixtures(sys.argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
