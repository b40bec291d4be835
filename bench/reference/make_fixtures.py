"""make_fixtures.py OUTDIR [NAME ...]: the parity fixtures tests/test_parity_*.c
compare against; with NAMEs, only those of the DRAW and captioner files below (the others in
OUTDIR stay as they are).

For tiny configurations of DRAW (draw_ref.py) and the captioner (sat_ref.py) it draws weights,
inputs and noise with PyTorch's generator (fixed seeds), rounds them to float32 (what the C side
loads), then computes in float64: the forward outputs, the loss, the gradient of the loss for
every parameter, and the loss before each of five Adam steps on the same batch (global-norm
clipping and Adam exactly as core/adam.c). One safetensors file per configuration:
    param/NAME, grad/NAME           every parameter of the model's Block, by its C name
    input/...                       x and eps (DRAW); images, words, lens, decode_images
                                    (captioner)
    output/...                      forward outputs, output/loss (1); captioner: also
                                    beam{1,3}_tokens (B, max_len) and beam{1,3}_lens (B) of
                                    decoding input/decode_images with decode_param/NAME
                                    (seq/beam.c's rules)
    train/loss (5)                  the loss before each Adam step
    __metadata__                    the configuration, the Adam and clipping settings
Then glimpse_ref.py's, textclass_ref.py's, translator_ref.py's and translator_transformer_ref.py's
(the glimpse and sentence classifiers, the translator and the Transformer translator, see there), transformer_ref.py's (the Transformer blocks against
PyTorch's own) and encoders_ref.py's fixtures of the pretrained encoders (tests/fixtures/encoders/, see there).
Run by `make fixtures` as: /usr/bin/python3 bench/reference/make_fixtures.py tests/fixtures
"""
import math
import os
import sys

import torch

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import draw_ref  # noqa: E402
import encoders_ref  # noqa: E402
import glimpse_ref  # noqa: E402
import safetensors_io  # noqa: E402
import sat_ref  # noqa: E402
import textclass_ref  # noqa: E402
import translator_ref  # noqa: E402
import translator_transformer_ref  # noqa: E402
import transformer_ref  # noqa: E402

ADAM = {"lr": 0.01, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8}
STEPS = 5


def f32(t):
    """Rounded to float32, computed in float64."""
    return t.float().double()


def train_curve(params, loss_fn, clip):
    """Loss before each of STEPS Adam steps (float64, core/adam.c semantics)."""
    p = {k: v.clone().requires_grad_() for k, v in params.items()}
    names = list(p)
    m = [torch.zeros_like(p[k]) for k in names]
    v = [torch.zeros_like(p[k]) for k in names]
    losses = []
    for step in range(1, STEPS + 1):
        loss = loss_fn(p)
        grads = torch.autograd.grad(loss, [p[k] for k in names])
        grads = [g.clone() for g in grads]
        draw_ref.clip_global_norm(grads, clip)
        draw_ref.adam_update([p[k] for k in names], grads, m, v, step, ADAM["lr"], ADAM["beta1"],
                             ADAM["beta2"], ADAM["eps"])
        losses.append(float(loss))
    return torch.tensor(losses, dtype=torch.float64)


def grads_of(params, loss_fn):
    p = {k: v.clone().requires_grad_() for k, v in params.items()}
    loss = loss_fn(p)
    names = list(p)
    gs = torch.autograd.grad(loss, [p[k] for k in names])
    norm = float(torch.sqrt(sum((g * g).sum() for g in gs)))
    return {k: g for k, g in zip(names, gs)}, norm


def meta_common(clip, norm):
    m = {f"adam.{k}": repr(v) for k, v in ADAM.items()}
    m["clip"] = repr(clip)
    m["grad_norm"] = repr(norm)
    m["steps"] = str(STEPS)
    m["generator"] = "bench/reference/make_fixtures.py (PyTorch " + torch.__version__ + ")"
    return m


def make_draw(path, cfg, B, seed, clip_frac=0.5):
    gen = torch.Generator().manual_seed(seed)
    params = {k: f32(v) for k, v in draw_ref.init_params(cfg, gen, bias_scale=0.1).items()}
    x = (torch.rand(B, cfg.W * cfg.H, generator=gen, dtype=torch.float64) < 0.4).double()
    eps = f32(torch.randn(cfg.T, B, cfg.z, generator=gen, dtype=torch.float64))
    with torch.no_grad():
        out = draw_ref.forward(params, cfg, x, eps, keep=True)

    def loss_fn(p):
        return draw_ref.forward(p, cfg, x, eps)["loss"]

    grads, norm = grads_of(params, loss_fn)
    clip = float(f"{clip_frac * norm:.3g}")  # makes clipping act on (at least) the first step
    curve = train_curve(params, loss_fn, clip)
    t = {f"param/{k}": v for k, v in params.items()}
    t.update({f"grad/{k}": v for k, v in grads.items()})
    t.update({"input/x": x, "input/eps": eps, "output/canvas": out["canvas"],
              "output/recon": out["recon"], "output/kl": out["kl"],
              "output/loss": out["loss"].reshape(1), "train/loss": curve})
    meta = cfg.as_meta()
    meta.update(meta_common(clip, norm))
    meta["B"] = str(B)
    safetensors_io.save(path, {k: v.detach().numpy() for k, v in t.items()}, meta)
    return float(out["loss"]), curve


def make_sat(path, cfg, B, lens, seed, clip_frac=0.5):
    gen = torch.Generator().manual_seed(seed)
    params = {k: f32(v) for k, v in sat_ref.init_params(cfg, gen, bias_scale=0.1).items()}
    S = cfg.image_size
    images = f32(torch.randn(B, cfg.in_channels, S, S, generator=gen, dtype=torch.float64))
    words = torch.randint(4, cfg.V, (B, cfg.max_len), generator=gen)
    lens = torch.tensor(lens, dtype=torch.long)
    for b in range(B):
        words[b, int(lens[b]):] = sat_ref.PAD
    with torch.no_grad():
        out = sat_ref.forward(params, cfg, images, words, lens, keep=True)

    def loss_fn(p):
        return sat_ref.forward(p, cfg, images, words, lens)["loss"]

    grads, norm = grads_of(params, loss_fn)
    clip = float(f"{clip_frac * norm:.3g}")
    curve = train_curve(params, loss_fn, clip)
    # Beam search (seq/beam.c's rules, length_alpha 0) on images of their own, drawn again
    # until every ranking decision is at least 1e-3 clear (float32 scores differ by ~1e-6),
    # with the word embedding and output layer scaled by 3 (decode_param/): at their initial
    # scale these tiny models emit one word over and over, which tests little.
    dparams = dict(params)
    dparams["embed"] = f32(params["embed"] * 3)
    dparams["out.L_o"] = f32(params["out.L_o"] * 3)
    for attempt in range(100):
        dgen = torch.Generator().manual_seed(1000 * seed + attempt)
        dimages = f32(torch.randn(B, cfg.in_channels, S, S, generator=dgen, dtype=torch.float64))
        decoded, margin = {"input/decode_images": dimages}, math.inf
        for beam in (1, 3):
            margins = []
            hyps = sat_ref.beam_search(dparams, cfg, dimages, beam, margins)
            margin = min(margin, min(margins))
            toks = torch.full((B, cfg.max_len), sat_ref.PAD, dtype=torch.float64)
            for b, h in enumerate(hyps):
                h = h[:cfg.max_len]
                toks[b, :len(h)] = torch.tensor(h, dtype=torch.float64)
            decoded[f"output/beam{beam}_tokens"] = toks
            decoded[f"output/beam{beam}_lens"] = torch.tensor(
                [min(len(h), cfg.max_len) for h in hyps], dtype=torch.float64)
        if margin >= 1e-3:
            print(f"{path}: decoding images {attempt}, smallest ranking gap {margin:.2g}")
            break
    else:
        raise SystemExit(f"{path}: no decoding images without near ties")
    t = {f"param/{k}": v for k, v in params.items()}
    t.update({f"decode_param/{k}": v for k, v in dparams.items()})
    t.update(decoded)
    t.update({f"grad/{k}": v for k, v in grads.items()})
    t.update({"input/images": images, "input/words": words.double(), "input/lens": lens.double(),
              "output/annot": out["annot"], "output/alpha": out["alpha"],
              "output/logits": out["logits"], "output/loss": out["loss"].reshape(1),
              "output/ce": out["ce"].reshape(1), "output/ds": out["ds"].reshape(1),
              "train/loss": curve})
    meta = {k: str(v) for k, v in cfg.as_meta().items()}
    meta["sat_config"] = cfg.c_config()
    meta.update(meta_common(clip, norm))
    meta["B"] = str(B)
    safetensors_io.save(path, {k: v.detach().numpy() for k, v in t.items()}, meta)
    return float(out["loss"]), curve


def main():
    if len(sys.argv) < 2:
        print("usage: make_fixtures.py OUTDIR [NAME ...]", file=sys.stderr)
        return 2
    out, only = sys.argv[1], set(sys.argv[2:])
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    jobs = [
        # Non-square image, different encoder/decoder sizes and grids: a swapped axis or
        # size shows up as a mismatch.
        ("draw_attention.safetensors", lambda p: make_draw(
            p, draw_ref.DrawConfig(W=12, H=10, T=4, read_n=2, write_n=3, enc=16, dec=12, z=5,
                                   attention=1), B=3, seed=6)),
        ("draw_plain.safetensors", lambda p: make_draw(
            p, draw_ref.DrawConfig(W=7, H=5, T=3, read_n=2, write_n=5, enc=9, dec=8, z=4,
                                   attention=0), B=2, seed=7)),
        # Peepholes in both LSTMs (draw --peepholes).
        ("draw_peepholes.safetensors", lambda p: make_draw(
            p, draw_ref.DrawConfig(W=9, H=8, T=4, read_n=2, write_n=3, enc=10, dec=7, z=3,
                                   attention=1, peepholes=1), B=3, seed=12)),
        # Captions of 4, 0 and 2 words: padding, the lone <end>, per-caption sums.
        ("sat_scalar_gate.safetensors", lambda p: make_sat(
            p, sat_ref.SatConfig(image_size=16, channels=(4, 6), in_channels=3, E=5, H=7, V=11,
                                 max_len=4, A=8, beta_vector=0, lam=1.0),
            B=3, lens=[4, 0, 2], seed=8)),
        ("sat_vector_gate.safetensors", lambda p: make_sat(
            p, sat_ref.SatConfig(image_size=8, channels=(3,), in_channels=1, E=4, H=6, V=9,
                                 max_len=3, A=5, beta_vector=1, lam=0.5),
            B=2, lens=[3, 1], seed=9)),
        # Query current (the LSTM reads the previous z, the new state queries). Seed 10 drew
        # an attn.W_q gradient ~1000x smaller than the other tensors', below the float32
        # rounding the rest of the graph leaves in it (the tests' atol scales with each
        # tensor's own largest element); seed 11 does not.
        ("sat_query_current.safetensors", lambda p: make_sat(
            p, sat_ref.SatConfig(image_size=16, channels=(4, 6), in_channels=3, E=5, H=7, V=11,
                                 max_len=4, A=8, beta_vector=0, lam=1.0, query="current"),
            B=3, lens=[4, 0, 2], seed=11)),
    ]
    unknown = only - {name for name, _ in jobs}
    if unknown:
        print("make_fixtures.py: no fixture named " + ", ".join(sorted(unknown)), file=sys.stderr)
        return 2
    for name, fn in jobs:
        if only and name not in only:
            continue
        path = os.path.join(out, name)
        loss, curve = fn(path)
        print(f"{path}: loss {loss:.6f}, five-step curve "
              + " ".join(f"{v:.6f}" for v in curve.tolist())
              + f" ({os.path.getsize(path)} bytes)")
    if only:
        return 0
    # The glimpse classifier's (tests/test_parity_glimpse.c).
    glimpse_ref.fixtures(out)
    # The sentence classifier's (tests/test_parity_text.c).
    textclass_ref.fixtures(out)
    # The translator's (tests/test_parity_translate.c).
    translator_ref.fixtures(out)
    # The Transformer translator's (tests/test_parity_translate_transformer.c).
    translator_transformer_ref.fixtures(out)
    # The Transformer blocks' (tests/test_parity_transformer.c).
    transformer_ref.fixtures(out)
    # The pretrained encoders' fixtures (tests/test_encoder.c, tests/test_preprocess.c).
    encoders_ref.make_fixtures(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
