"""bench_translate_transformer.py: training and beam-decoding throughput of the Transformer
translator (models/translator_transformer.h, `text translate train --model transformer`'s
default sizes on the date task: source vocabulary 42, S 40; target vocabulary 15, max_len
10; d_model 128, 4 heads, d_ff 256, 2 + 2 layers, pre-LN; batch 64) in the toolkit against
the same model on PyTorch's nn.TransformerEncoder / nn.TransformerDecoder
(translator_transformer_ref.Translator), on the same threads.

    /usr/bin/python3 bench/reference/bench_translate_transformer.py [--build build] [--reps 3]

run from the repository root (bench/run.sh does). For threads 1 and 2, each side runs --reps
times, in rounds that run every setting once (the machine's speed drifts; the rounds spread
that over both sides), and the median round counts:
  the toolkit: `BUILD/bench/bench_translate_transformer THREADS STEPS 64 BEAM`
      (bench/bench_translate_transformer.c: the trainer's step, tt_forward, tt_backward,
      clipping and Adam, then tt_decode with beam 5 and length alpha 0.7);
  PyTorch: this script with --side pytorch: the same model, sizes and lengths on random ids,
      torch.optim.Adam and clip_grad_norm_, then translator_transformer_ref.beam_search
      (seq/beam.c's rules, batched over sentences x beams, the whole decoder run on each
      prefix: nn.TransformerDecoder has no key/value cache); torch.set_num_threads(N) with
      N OpenBLAS threads, and on 2 threads also one intra-op thread with 2 OpenBLAS threads,
      the better of the two for each figure (torch's own threads on a busy machine can be
      ten times slower than one).
Both sides time the same work: pairs per second of training steps (inputs made outside the
timed region) and sentences per second of beam-5 decoding. Before the rounds the two beam
searches are checked against each other: `bench_translate_transformer 1 20 64 1 DUMP`
writes the weights (the source embedding and the cross-attention output projections x8, the
output layer x3, so that the words depend on the sentence), 64
sentences and the toolkit's beam-5 words; --side beamcheck decodes them in float32 and
float64 and the table's heading says on how many the words agree. On a machine shared with other
work the wall-clock rates swing with the load; the per-CPU-second rows (one thread, each
side's CPU time over its timed region) show what an idle core would do. OPENBLAS_CORETYPE is
set for both (the user's value, else what core/gemm.c would choose).
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_rounds  # noqa: E402  (run_json, bench_env, translate_rounds, print_ratio_table)

HERE = os.path.relpath(os.path.dirname(os.path.abspath(__file__)))
BATCH = 64
TARGET = 3.0  # issue 59's: at least 3x PyTorch's nn.Transformer version of the same model
KEYS = ("pairs_per_s", "pairs_per_cpu_s", "beam_sentences_per_s", "beam_sentences_per_cpu_s")
CONFIG = {"Vs": 42, "V": 15, "S": 40, "max_len": 10, "d_model": 128, "heads": 4, "d_ff": 256,
          "enc_layers": 2, "dec_layers": 2, "post_ln": 0, "label_smoothing": 0.0,
          "map_layer": 1}


def bench_lengths(B, S, max_len):
    """bench_translate_transformer.c's: sources over [S/2, S], targets over
    [max_len/2, max_len] in descending order."""
    import torch
    src = [S - (b * 7) % (S - S // 2 + 1) for b in range(B)]
    tgt = sorted((max_len - (b * 3) % (max_len - max_len // 2 + 1) for b in range(B)),
                 reverse=True)
    return torch.tensor(src), torch.tensor(tgt)


def timed(fn, runs, warmup=1):
    """fn() runs warmup + runs times; (wall seconds, CPU seconds) of the last runs."""
    wall = cpu = 0.0
    for it in range(warmup + runs):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        if it >= warmup:
            wall += time.perf_counter() - t0
            cpu += time.process_time() - c0
    return wall, cpu


def pytorch_side(a):
    """The PyTorch side, in this process: prints one JSON object with KEYS."""
    import torch
    import translator_transformer_ref as ref
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    gen = torch.Generator().manual_seed(1)
    model = ref.Translator(CONFIG, capture=False)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    src_len, lens = bench_lengths(BATCH, CONFIG["S"], CONFIG["max_len"])

    def batch():
        src, _ = ref.draw_sources(CONFIG, gen, src_len.tolist())
        words = torch.randint(ref.NSPECIAL, CONFIG["V"], (BATCH, CONFIG["max_len"]),
                              generator=gen)
        return src, words

    batches = [batch() for _ in range(1 + a.steps)]
    it = iter(batches)
    loss = [float("nan")]

    def step():
        src, words = next(it)
        out, _ = ref.loss_of(model, src, src_len, words, lens, 0.0)
        opt.zero_grad(set_to_none=True)
        out.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        loss[0] = float(out)

    wall, cpu = timed(step, a.steps)
    model.eval()
    srcs = iter([batch()[0] for _ in range(1 + a.beam_decode)])
    lens_out = []

    def beam():
        _, n, _ = ref.beam_search(model, next(srcs), src_len, 5, 0.7)
        lens_out.append(float(n.double().mean()))

    bwall, bcpu = timed(beam, a.beam_decode)
    print(json.dumps({"model": "translator_transformer", "impl": "pytorch",
                      "threads": a.threads, "batch": BATCH, "steps": a.steps,
                      "pairs_per_s": BATCH * a.steps / wall, "pairs_per_cpu_s": BATCH * a.steps / cpu,
                      "final_loss": loss[0], "beam": 5, "length_alpha": 0.7,
                      "beam_sentences_per_s": BATCH * a.beam_decode / bwall,
                      "beam_sentences_per_cpu_s": BATCH * a.beam_decode / bcpu,
                      "beam_mean_words": statistics.mean(lens_out[1:])}))
    return 0


def beamcheck_side(path):
    """translator_transformer_ref.beam_search on the weights and sentences that
    `bench_translate_transformer ... DUMP` wrote, in float32 and float64, against the toolkit's
    words: prints one JSON object (sentences, agree_float32, agree_float64, the largest score
    differences); each disagreement on stderr."""
    import torch
    import safetensors_io
    import translator_transformer_ref as ref
    torch.set_num_threads(1)
    t, meta = safetensors_io.load(path)
    src = torch.from_numpy(t["check/src"]).long()
    src_len = torch.from_numpy(t["check/src_len"]).long()
    want = torch.from_numpy(t["check/beam_words"]).long()
    want_len = torch.from_numpy(t["check/beam_len"]).long()
    want_score = torch.from_numpy(t["check/beam_score"]).double()
    res = {"sentences": int(src.shape[0]), "beam": int(meta.get("beam", "5")),
           "length_alpha": float(meta.get("length_alpha", "0.7"))}
    for name, dt in (("float32", torch.float32), ("float64", torch.float64)):
        model = ref.Translator(CONFIG, capture=False).to(dt).eval()
        with torch.no_grad():
            for k, p in model.toolkit_names().items():
                p.copy_(torch.from_numpy(t["param/" + k]).to(dt))
        words, lens, scores = ref.beam_search(model, src, src_len, res["beam"],
                                              res["length_alpha"])
        same = (words == want).all(1) & (lens == want_len)
        res[f"agree_{name}"] = int(same.sum())
        res["distinct"] = len({tuple(r) for r in want.tolist()})
        res[f"max_score_diff_{name}"] = float((scores.double() - want_score).abs().max())
        for b in torch.nonzero(~same).flatten().tolist():
            print(f"beamcheck {name} sentence {b}: toolkit {want[b, :want_len[b]].tolist()} "
                  f"({float(want_score[b]):.6f}), PyTorch {words[b, :lens[b]].tolist()} "
                  f"({float(scores[b]):.6f})", file=sys.stderr)
    print(json.dumps(res))
    return 0


def beam_agreement(build, env):
    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "beam.safetensors")
        bench_rounds.run_json([os.path.join(build, "bench", "bench_translate_transformer"), "1", "20",
                  str(BATCH), "1", dump], env)
        return bench_rounds.run_json(["/usr/bin/python3", os.path.abspath(__file__), "--side", "beamcheck",
                         "--dump", dump], dict(env, OPENBLAS_NUM_THREADS="1"))


def toolkit(build, threads, steps, beam, env):
    return bench_rounds.run_json([os.path.join(build, "bench", "bench_translate_transformer"), str(threads),
                     str(steps), str(BATCH), str(beam)], env)


def pytorch(threads, steps, beam, env, blas_only=False):
    """blas_only: torch on one intra-op thread, its products on `threads` OpenBLAS threads."""
    cmd = ["/usr/bin/python3", os.path.abspath(__file__), "--side", "pytorch", "--threads",
           "1" if blas_only else str(threads), "--torch-steps", str(steps), "--torch-beam",
           str(beam)]
    # Debian's torch calls OpenBLAS, whose own thread pool ignores torch.set_num_threads.
    return bench_rounds.run_json(cmd, dict(env, OPENBLAS_NUM_THREADS=str(threads)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--steps", type=int, default=20, help="toolkit timed steps per run")
    ap.add_argument("--beam", type=int, default=4, help="toolkit timed beam-5 batches")
    ap.add_argument("--torch-steps", type=int, default=20,
                    help="PyTorch timed steps per run (as many as the toolkit's: the decoding "
                    "that follows depends on how far the model has trained)")
    ap.add_argument("--torch-beam", type=int, default=1, help="PyTorch timed beam-5 batches")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--side", choices=("both", "pytorch", "beamcheck"), default="both",
                    help="pytorch: run only the PyTorch side in this process (the rounds do); "
                    "beamcheck: compare the beam words of --dump (the check before the rounds)")
    ap.add_argument("--dump", help="--side beamcheck's file (bench_translate_transformer DUMP)")
    ap.add_argument("--threads", type=int, default=1, help="--side pytorch's threads")
    a = ap.parse_args()
    if a.side == "pytorch":
        a.steps, a.beam_decode = a.torch_steps, a.torch_beam
        return pytorch_side(a)
    if a.side == "beamcheck":
        return beamcheck_side(a.dump)
    env, ct = bench_rounds.bench_env()
    agree = beam_agreement(a.build, env)
    runs, loads = bench_rounds.translate_rounds(
        a.reps, lambda t: toolkit(a.build, t, a.steps, a.beam, env),
        lambda t, blas_only: pytorch(t, a.torch_steps, a.torch_beam, env, blas_only), KEYS)

    print("Transformer translator, text translate train --model transformer's date-task sizes "
          "(batch 64: source 42, S 40; target 15, max_len 10; d_model 128, 4 heads, d_ff 256, "
          "2 + 2 layers, pre-LN)")
    print(f"(OPENBLAS_CORETYPE={ct or 'default'}; 1-minute load at the start of each round and "
          f"at the end {', '.join(loads)}; median of {a.reps} rounds)")
    print(f"(beam {agree['beam']}, length alpha {agree['length_alpha']}: PyTorch's words equal "
          f"the toolkit's on {agree['agree_float32']} of {agree['sentences']} sentences in "
          f"float32, {agree['agree_float64']} in float64; largest score difference "
          f"{agree['max_score_diff_float32']:.2g}; {agree['distinct']} distinct results)")
    mw = {side: statistics.median(r["beam_mean_words"] for r in runs[(side, 1)])
          for side in ("toolkit", "pytorch")}
    print(f"(beam-5 results, words per sentence, median over the 1-thread runs: toolkit "
          f"{mw['toolkit']:.2f}, PyTorch {mw['pytorch']:.2f})")
    bench_rounds.print_ratio_table(runs, (("training", "pairs/s", "pairs_per_s"),
                                 ("beam-5 decoding", "sentences/s", "beam_sentences_per_s")), KEYS, TARGET)
    return 0


if __name__ == "__main__":
    sys.exit(main())
