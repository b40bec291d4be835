"""transformer_ref.py: PyTorch's own Transformer blocks as the reference of seq/mha.h and
seq/transformer.h (tests/test_parity_transformer.c).

    python3 transformer_ref.py fixture OUTDIR

writes OUTDIR/transformer_*.safetensors, each for one tiny configuration of one of
    nn.MultiheadAttention(d, heads, batch_first=True)      self-attention, causal (attn_mask
                                                           upper triangle) with padding
                                                           (key_padding_mask from lengths); and
                                                           cross-attention with padding
    nn.TransformerEncoderLayer(d, heads, d_ff, dropout=0, batch_first=True, norm_first=...)
                                                           src_key_padding_mask from lengths
    nn.TransformerDecoderLayer(same)                       tgt_mask causal, tgt_key_padding_mask
                                                           and memory_key_padding_mask
    nn.TransformerEncoder / nn.TransformerDecoder          two pre-LN layers and a final
                                                           LayerNorm (norm=)
with relu activations and norm_first True and False; d 8, 2 heads, d_ff 12 (the stacks: d 4,
d_ff 6). Weights come from PyTorch's own
initialisation (fixed seed) with the norms' weights and biases and the attention biases moved
off 1 and 0, rounded to float32; then everything is computed in float64: the outputs, the
attention weights (nn.MultiheadAttention's average over heads), and the gradients of
sum(out * R) for a fixed random R, for every parameter and the inputs.
Tensors: param/NAME and grad/NAME under the toolkit's Block names (PREFIX + "." + the
state_dict name: the C side registers PyTorch's names; a single layer is written as the one
layer of a stack without the final norm, PREFIX.layers.0.NAME), input/x (B, T, d), input/mem (B, S, d),
input/lengths (B), input/mem_lengths (B), input/R (B, T, d), output/out (B, T, d),
output/weights (B, T, S) (attention alone), input_grad/x, input_grad/mem. Metadata: the
configuration.
Padded positions (t >= lengths) are computed like the others, as PyTorch does; every length
is at least 1 (PyTorch gives NaN for a query that sees no key, the toolkit 0).
"""
import os
import sys

import torch
import torch.nn as nn

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

D, HEADS, FF = 8, 2, 12


def f32(t):
    return t.detach().float().double()


def padding_mask(lengths, n):
    """True = a padded key (PyTorch's key_padding_mask)."""
    return torch.arange(n)[None, :] >= torch.tensor(lengths)[:, None]


def causal_mask(n):
    """True = hidden: key j > query i."""
    return torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)


def prepare(module, gen):
    """Moves the norms and biases off their initial 1 and 0 (so that they matter), rounds
    every parameter to float32, and returns the module in float64."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if "norm" in name or name.endswith("bias"):
                p.add_(0.2 * torch.randn(p.shape, generator=gen))
            p.copy_(p.float())
    return module.double()


def run(module, prefix, gen, forward, B, T, S, meta, path, d=D, ff=FF):
    x = f32(torch.randn(B, T, d, generator=gen)).requires_grad_()
    mem = f32(torch.randn(B, S, d, generator=gen)).requires_grad_()
    R = f32(torch.randn(B, T, d, generator=gen))
    out, weights = forward(module, x, mem)
    (out * R).sum().backward()
    t = {}
    for name, p in module.named_parameters():
        t[f"param/{prefix}.{name}"] = p.detach()
        t[f"grad/{prefix}.{name}"] = p.grad.detach()
    t.update({"input/x": x.detach(), "input/mem": mem.detach(), "input/R": R,
              "output/out": out.detach(), "input_grad/x": x.grad})
    if mem.grad is not None:
        t["input_grad/mem"] = mem.grad
    if weights is not None:
        t["output/weights"] = weights.detach()
    for k in ("lengths", "mem_lengths"):
        if k in meta:
            t[f"input/{k}"] = torch.tensor(meta[k], dtype=torch.float64)
    m = {k: (",".join(map(str, v)) if isinstance(v, list) else str(v)) for k, v in meta.items()}
    m.update({"d": str(d), "heads": str(HEADS), "d_ff": str(ff), "B": str(B), "T": str(T),
              "S": str(S), "generator": "bench/reference/transformer_ref.py (PyTorch "
              + torch.__version__ + ")"})
    safetensors_io.save(path, {k: v.numpy() for k, v in t.items()}, m)


def mha_self(path, seed):
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    B, T, lengths = 3, 5, [5, 2, 4]
    mod = prepare(nn.MultiheadAttention(D, HEADS, batch_first=True), gen)

    def fwd(m, x, mem):
        return m(x, x, x, key_padding_mask=padding_mask(lengths, T), attn_mask=causal_mask(T),
                 need_weights=True)

    run(mod, "attn", gen, fwd, B, T, T, {"kind": "mha", "causal": 1, "self": 1,
                                        "lengths": lengths}, path)


def mha_cross(path, seed):
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    B, T, S, lengths = 2, 3, 6, [6, 3]
    mod = prepare(nn.MultiheadAttention(D, HEADS, batch_first=True), gen)

    def fwd(m, x, mem):
        return m(x, mem, mem, key_padding_mask=padding_mask(lengths, S), need_weights=True)

    run(mod, "attn", gen, fwd, B, T, S, {"kind": "mha", "causal": 0, "self": 0,
                                        "mem_lengths": lengths}, path)


def encoder_layer(path, seed, norm_first, layers=1, d=D, ff=FF):
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    B, T, lengths = 3, 5, [5, 3, 1]
    layer = nn.TransformerEncoderLayer(d, HEADS, ff, dropout=0.0, batch_first=True,
                                       norm_first=norm_first)
    if layers > 1:
        mod = nn.TransformerEncoder(layer, layers, norm=nn.LayerNorm(d),
                                    enable_nested_tensor=False)
    else:
        mod = layer
    mod = prepare(mod, gen)

    def fwd(m, x, mem):
        return m(x, src_key_padding_mask=padding_mask(lengths, T)), None

    run(mod, "enc" if layers > 1 else "enc.layers.0", gen, fwd, B, T, T, {"kind": "encoder", "norm_first": int(norm_first),
                                       "layers": layers, "final_norm": int(layers > 1),
                                       "lengths": lengths}, path, d, ff)


def decoder_layer(path, seed, norm_first, layers=1, d=D, ff=FF):
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    B, T, S, lengths, mem_lengths = 2, 4, 5, [4, 2], [5, 3]
    layer = nn.TransformerDecoderLayer(d, HEADS, ff, dropout=0.0, batch_first=True,
                                       norm_first=norm_first)
    mod = nn.TransformerDecoder(layer, layers, norm=nn.LayerNorm(d)) if layers > 1 else layer
    mod = prepare(mod, gen)

    def fwd(m, x, mem):
        return m(x, mem, tgt_mask=causal_mask(T), tgt_key_padding_mask=padding_mask(lengths, T),
                 memory_key_padding_mask=padding_mask(mem_lengths, S)), None

    run(mod, "dec" if layers > 1 else "dec.layers.0", gen, fwd, B, T, S, {"kind": "decoder", "norm_first": int(norm_first),
                                       "layers": layers, "final_norm": int(layers > 1),
                                       "lengths": lengths, "mem_lengths": mem_lengths}, path, d, ff)


FIXTURES = [
    ("transformer_mha_self.safetensors", lambda p: mha_self(p, 1)),
    ("transformer_mha_cross.safetensors", lambda p: mha_cross(p, 2)),
    ("transformer_enc_pre.safetensors", lambda p: encoder_layer(p, 3, True)),
    ("transformer_enc_post.safetensors", lambda p: encoder_layer(p, 4, False)),
    ("transformer_dec_pre.safetensors", lambda p: decoder_layer(p, 5, True)),
    ("transformer_dec_post.safetensors", lambda p: decoder_layer(p, 6, False)),
    # The stacks narrower (d 4, d_ff 6): what they add is the chaining and the final norm.
    ("transformer_enc_stack.safetensors", lambda p: encoder_layer(p, 7, True, 2, d=4, ff=6)),
    ("transformer_dec_stack.safetensors", lambda p: decoder_layer(p, 8, True, 2, d=4, ff=6)),
]


def fixtures(outdir):
    os.makedirs(outdir, exist_ok=True)
    torch.set_num_threads(1)
    for name, fn in FIXTURES:
        path = os.path.join(outdir, name)
        fn(path)
        print(f"{path}: ({os.path.getsize(path)} bytes)")


def main():
    if len(sys.argv) != 3 or sys.argv[1] != "fixture":
        print("usage: transformer_ref.py fixture OUTDIR", file=sys.stderr)
        return 2
    fixtures(sys.argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
