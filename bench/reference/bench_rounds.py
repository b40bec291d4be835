"""What the translator benches (bench_translate.py, bench_translate_transformer.py) print
alike from their rounds: runs maps (side, threads) to the list of each round's figures
(side "toolkit" or "pytorch", threads 1 or 2); every figure is the median over the rounds."""
import statistics


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
