"""What the benches against PyTorch (bench_glimpse.py, bench_text.py, bench_translate.py,
bench_translate_transformer.py) do alike: run a side and read its JSON line (run_wait,
last_json, run_json), set OPENBLAS_CORETYPE for both sides (bench_env), note the load
(load1), run the translators' rounds (translate_rounds) and print their table
(print_ratio_table). In the translators' figures runs maps (side, threads) to the list of
each round's figures (side "toolkit" or "pytorch", threads 1 or 2); every figure is the
median over the rounds."""
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_train  # noqa: E402  (coretype())


def prog():
    """The running bench's name, for its error messages."""
    return os.path.splitext(os.path.basename(sys.argv[0]))[0]


def last_json(text):
    """The last line of text that is a JSON value, or None."""
    for line in reversed(text.strip().splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    return None


def run_wait(cmd, env):
    """Runs cmd; returns (stdout, stderr, CPU seconds user + system, peak RSS MiB), from wait4."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err)
        _, status, ru = os.wait4(proc.pid, 0)
        out.seek(0), err.seek(0)
        text, etext = out.read().decode(), err.read().decode()
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{prog()}: {' '.join(cmd)} failed: {etext.strip()[-300:]}")
    return text, etext, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0


def run_json(cmd, env):
    """Runs cmd; its last JSON line, with the process's peak RSS (MiB) as "rss"."""
    text, etext, _, rss = run_wait(cmd, env)
    j = last_json(text)
    if not j:
        raise SystemExit(f"{prog()}: {' '.join(cmd)} printed no JSON: {etext.strip()[-300:]}")
    j["rss"] = rss
    return j


def bench_env():
    """(the environment for both sides, OPENBLAS_CORETYPE or None): the user's value, else
    what core/gemm.c would choose."""
    env = dict(os.environ)
    ct = bench_train.coretype()
    if ct:
        env["OPENBLAS_CORETYPE"] = ct
    return env, ct


def load1():
    """The 1-minute load average, as /proc/loadavg writes it."""
    return open("/proc/loadavg").read().split()[0]


def translate_rounds(reps, toolkit, pytorch, keys):
    """reps rounds, each of threads 1 and 2: toolkit(threads) and pytorch(threads, blas_only)
    return a run's figures; on 2 threads PyTorch's are the better of its two ways (torch's
    threads, or one intra-op thread on OpenBLAS's) for each of keys and rss. Returns (runs,
    the 1-minute load at the start of each round and at the end)."""
    runs, loads = {}, []
    for _ in range(reps):
        loads.append(load1())
        for threads in (1, 2):
            runs.setdefault(("toolkit", threads), []).append(toolkit(threads))
            best = pytorch(threads, False)
            if threads > 1:
                alt = pytorch(threads, True)
                best = best | {k: max(best[k], alt[k]) for k in keys} | {"rss": max(best["rss"], alt["rss"])}
            runs.setdefault(("pytorch", threads), []).append(best)
    loads.append(load1())
    return runs, loads


def median(runs, side, threads, key):
    return statistics.median(r[key] for r in runs[(side, threads)])


def print_ratio_table(runs, works, keys, target=3):
    """The markdown table of toolkit against PyTorch: for each (work, unit, key) of works a
    row per thread count (figures, their ratio, peak RSS) and a 1-thread row per CPU-second
    (the key with _per_s replaced by _per_cpu_s); then each round's figures of keys as
    comment lines."""
    print(f"| work | threads | toolkit | PyTorch | ratio (target {target:.0f}x) | "
          "peak RSS toolkit / PyTorch (MiB) |")
    print("|---|---|---|---|---|---|")
    for work, unit, key in works:
        for threads in (1, 2):
            t, p = median(runs, "toolkit", threads, key), median(runs, "pytorch", threads, key)
            mt = max(r["rss"] for r in runs[("toolkit", threads)])
            mp = max(r["rss"] for r in runs[("pytorch", threads)])
            print(f"| {work}, {unit} | {threads} | {t:.0f} | {p:.0f} | {t / p:.2f}x | "
                  f"{mt:.0f} / {mp:.0f} |")
        cpu_key = key.replace("_per_s", "_per_cpu_s")
        t, p = median(runs, "toolkit", 1, cpu_key), median(runs, "pytorch", 1, cpu_key)
        print(f"| {work}, {unit.split('/')[0]} per CPU-second | 1 | {t:.0f} | {p:.0f} | "
              f"{t / p:.2f}x | |")
    for side in ("toolkit", "pytorch"):
        for threads in (1, 2):
            for key in keys:
                print(f"# {side} threads {threads} {key}: "
                      + ", ".join(f"{r[key]:.0f}" for r in runs[(side, threads)]))
