"""bench_text.py: training throughput and peak memory of the sentence classifier
(models/textclass.h, the Keras attention demo's model: T 32, embed 32, LSTM 100 with
variational dropout 0.3 / 0.2, keras pooling, unmasked, sigmoid, embedding L2 1e-3, batch
100) in the toolkit against its PyTorch version (textclass_ref.py), on the same threads.

    /usr/bin/python3 bench/reference/bench_text.py [--bin bin] [--steps 200] [--reps 3]

run from the repository root (bench/run.sh does). For threads 1 and 2, each side runs --reps
times, in rounds that run every setting once (the machine's speed drifts over minutes; the
rounds spread that over both sides), and the median round counts:
  the toolkit: `bin/text classify train --data sentiment --steps STEPS --threads N --json`
      on the demo's 1,600 training sentences; sentences_per_s is the step time only;
  PyTorch: `textclass_ref.py bench --threads N --vocab V` with the toolkit's vocabulary
      size V, on random word ids made outside the timed region (the speed does not depend
      on them), torch.optim.Adam with Keras's settings. Two versions:
        cells   the toolkit's model exactly: Keras's variational dropout with one mask per
                gate (4 on x_t, 4 on h_{t-1}, the same for the whole sentence; Keras's
                implementation 1, which tf.keras uses whenever recurrent_dropout > 0), which
                no torch LSTM kernel applies: the LSTM is a loop of steps, each gate's input
                product one GEMM over all steps before it (the masks do not change), each
                step one addmm per gate (textclass_ref.py lstm_dropout, checked against the
                fixtures' plain gate loop before every run);
        fused   torch's own LSTM kernel (torch._VF.lstm, what nn.LSTM runs), which has no
                recurrent dropout and takes one input for all four gates: both sides train
                with --rec-dropout 0 in this row, PyTorch with one input mask shared by the
                gates, the toolkit with its four (the same products; the nearest model the
                kernel runs, not the same one).
      PyTorch on 2 threads: the faster of torch.set_num_threads(2) and one intra-op thread,
      each with 2 OpenBLAS threads, every round.
Peak memory: each process's ru_maxrss (from wait4 for the toolkit; PyTorch's own, which
includes the interpreter and torch's libraries). OPENBLAS_CORETYPE is set for both (the
user's value, else what core/gemm.c would choose). On a machine shared with other work the
wall-clock rates swing with the load; the last rows, sentences per CPU-second on one thread
(the toolkit's from the CPU-time difference of a long and a short run, PyTorch's from
time.process_time() around its timed steps), show what an idle core would do.
"""
import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_rounds  # noqa: E402  (run_wait, last_json, bench_env, load1)

HERE = os.path.relpath(os.path.dirname(os.path.abspath(__file__)))


def toolkit(bin_dir, threads, steps, rec_dropout, env, tmp):
    """(sentences per second of step time, CPU seconds, peak RSS MiB, vocabulary size)."""
    out = os.path.join(tmp, f"run{threads}")
    shutil.rmtree(out, ignore_errors=True)
    cmd = [os.path.join(bin_dir, "text"), "classify", "train", "--data", "sentiment",
           "--steps", str(steps), "--batch", "100", "--threads", str(threads),
           "--rec-dropout", str(rec_dropout), "--valid-every", str(10 * steps),
           "--log-every", "10", "--out", out, "--json"]
    text, etext, cpu, rss = bench_rounds.run_wait(cmd, env)
    j = bench_rounds.last_json(text)
    m = re.search(r"sentences, (\d+) words", etext)
    if not j or not m:
        raise SystemExit(f"bench_text: {' '.join(cmd)} printed no JSON or no vocabulary")
    return j["sentences_per_s"], cpu, rss, int(m.group(1)) + 1  # + the padding's row


def pytorch(impl, threads, steps, vocab, rec_dropout, env, blas_only=False):
    """(sentences per second, per CPU-second of its timed steps, peak RSS MiB). blas_only:
    torch on one intra-op thread, its products on `threads` OpenBLAS threads."""
    cmd = ["/usr/bin/python3", os.path.join(HERE, "textclass_ref.py"), "bench", "--impl", impl,
           "--threads", "1" if blas_only else str(threads), "--steps", str(steps),
           "--vocab", str(vocab), "--rec-dropout", str(rec_dropout)]
    # Debian's torch calls OpenBLAS, whose own thread pool ignores torch.set_num_threads.
    env = dict(env, OPENBLAS_NUM_THREADS=str(threads))
    text, etext, _, rss = bench_rounds.run_wait(cmd, env)
    j = bench_rounds.last_json(text)
    if not j:
        raise SystemExit(f"bench_text: {' '.join(cmd)} printed no JSON: {etext.strip()[-300:]}")
    return j["sentences_per_s"], j["sentences_per_cpu_s"], rss


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="bin")
    ap.add_argument("--steps", type=int, default=200, help="toolkit steps per run")
    ap.add_argument("--torch-steps", type=int, default=20, help="PyTorch timed steps per run")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    env, ct = bench_rounds.bench_env()
    rows = (("cells", 0.2), ("fused", 0.0))  # (PyTorch version, recurrent dropout)
    rate, rss, cpu = {}, {}, {}
    short = max(1, a.steps // 4)
    loads = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(a.reps):
            loads.append(bench_rounds.load1())
            for impl, rd in rows:
                for threads in (1, 2):
                    sps, c_long, m, vocab = toolkit(a.bin, threads, a.steps, rd, env, tmp)
                    rate.setdefault((impl, "toolkit", threads), []).append(sps)
                    rss.setdefault((impl, "toolkit", threads), []).append(m)
                    if threads == 1:  # CPU per sentence: a long run less a short one
                        _, c_short, _, _ = toolkit(a.bin, 1, short, rd, env, tmp)
                        cpu.setdefault((impl, "toolkit"), []).append(
                            100 * (a.steps - short) / max(1e-9, c_long - c_short))
                    sps, spc, m = pytorch(impl, threads, a.torch_steps, vocab, rd, env)
                    if threads > 1:
                        sps2, _, m2 = pytorch(impl, threads, a.torch_steps, vocab, rd, env,
                                              blas_only=True)
                        if sps2 > sps:
                            sps, m = sps2, m2
                    rate.setdefault((impl, "pytorch", threads), []).append(sps)
                    rss.setdefault((impl, "pytorch", threads), []).append(m)
                    if threads == 1:
                        cpu.setdefault((impl, "pytorch"), []).append(spc)
    end_load = bench_rounds.load1()
    print(f"sentence classifier training, the Keras demo's model (vocabulary {vocab}, T 32, "
          f"embed 32, LSTM 100, keras pooling, batch 100)")
    print(f"(OPENBLAS_CORETYPE={ct or 'default'}; 1-minute load at the start of each round "
          f"{', '.join(loads)}, at the end {end_load}; median of {a.reps} rounds; "
          f"sentences/s of step time)")
    print("| PyTorch version | threads | toolkit sentences/s | PyTorch sentences/s | ratio | "
          "peak RSS toolkit / PyTorch (MiB) |")
    print("|---|---|---|---|---|---|")
    for impl, rd in rows:
        for threads in (1, 2):
            t = statistics.median(rate[(impl, "toolkit", threads)])
            p = statistics.median(rate[(impl, "pytorch", threads)])
            mt = max(rss[(impl, "toolkit", threads)])
            mp = max(rss[(impl, "pytorch", threads)])
            name = f"{impl} (rec. dropout {rd:g})"
            print(f"| {name} | {threads} | {t:.0f} | {p:.0f} | {t / p:.2f}x | {mt:.0f} / {mp:.0f} |")
        t, p = statistics.median(cpu[(impl, "toolkit")]), statistics.median(cpu[(impl, "pytorch")])
        print(f"| {impl} (rec. dropout {rd:g}) | 1, per CPU-second | {t:.0f} | {p:.0f} | "
              f"{t / p:.2f}x | |")
    for impl, rd in rows:
        for side in ("toolkit", "pytorch"):
            for threads in (1, 2):
                r = rate[(impl, side, threads)]
                print(f"# {impl} {side} threads {threads}: " + ", ".join(f"{v:.0f}" for v in r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
