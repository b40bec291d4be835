"""bench_train.py: the toolkit against PyTorch on training throughput, peak memory and caption
decoding, on this machine, with the same OpenBLAS core type for both sides.

    /usr/bin/python3 bench/reference/bench_train.py [--build build] [--bin bin] [--reps 3] [--quick]

run from the repository root (bench/run.sh does). It runs, each as its own process (peak
resident memory is that process's ru_maxrss, from wait4):
  1. sgemm 1024^3 through the toolkit (build/bench/bench_gemm) on 1 and 2 threads: the peak;
  2. DRAW, the paper's configuration (T 64, read 2, write 5, 256 units, z 100, batch 100) on
     MNIST: `bin/draw train ... --json` on 1 and 2 threads, and draw_ref.py with torch
     intra-op threads 1 and 2 x OPENBLAS_NUM_THREADS 1 and 2;
  3. the captioner's default configuration on the synthetic scenes, batch 32: `bin/caption
     train --data scenes ... --json` on 1 and 2 threads, and sat_ref.py train (random pixels
     and word ids, caption lengths drawn from the scenes' captions.tsv) on the same grid;
  4. caption inference, beam 3, batches of 32, with the weights the toolkit just trained:
     build/bench/bench_decode against sat_ref.py decode.
Every setting of both sides runs --reps times (3), in rounds that each run every setting once,
so that a slow spell of the machine (its speed drifts by 20 % over minutes) falls on both
sides; per setting the median round counts, and each side keeps its fastest setting. A second table gives one-thread rates per CPU-second
(the toolkit's training from the CPU-time difference of a long and a short run, PyTorch's
from time.process_time() around its timed steps, decoding from the process CPU clock):
on a machine shared with other work they show what an idle core would do. OPENBLAS_CORETYPE is set for every process (the user's
value, else the one core/gemm.c would choose for this CPU). The table gives the ratios and
the fraction of the sgemm peak (same thread count) that DRAW training sustains, counting the
FLOPs of the GEMMs the model needs: forward F, backward 2F (input and weight gradients).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.relpath(os.path.dirname(os.path.abspath(__file__)))


def coretype():
    """What core/gemm.c picks: SKYLAKEX with AVX-512 F/BW/VL, HASWELL with AVX2 + FMA."""
    if os.environ.get("OPENBLAS_CORETYPE"):
        return os.environ["OPENBLAS_CORETYPE"]
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    if {"avx512f", "avx512bw", "avx512vl"} <= flags:
        return "SKYLAKEX"
    if {"avx2", "fma"} <= flags:
        return "HASWELL"
    return ""


def run(cmd, env, tmp, log, cpu_out=None):
    """Runs cmd; returns (last JSON object on stdout or None, peak RSS MiB, wall seconds).
    cpu_out, a list, gets the process's CPU seconds (user + system)."""
    out_path, err_path = os.path.join(tmp, "stdout"), os.path.join(tmp, "stderr")
    with open(out_path, "w") as out, open(err_path, "w") as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
    if cpu_out is not None:
        cpu_out.append(ru.ru_utime + ru.ru_stime)
    text = open(out_path).read()
    shown = " ".join(f"{k}={v}" for k, v in env.items()
                     if k in ("OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE"))
    print(f"$ {shown} {' '.join(cmd)}".replace(os.path.dirname(out_path), "$TMP"), file=log)
    if p.returncode != 0:
        print(f"  FAILED (status {p.returncode}): {open(err_path).read()[-600:]}", file=log)
        return None, ru.ru_maxrss / 1024.0, wall
    result = None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                result = json.loads(line)
            except ValueError:
                pass
    print(f"  {json.dumps(result) if result else text[-300:]}  peak RSS "
          f"{ru.ru_maxrss / 1024.0:.1f} MiB, {wall:.1f} s", file=log)
    log.flush()
    return result, ru.ru_maxrss / 1024.0, wall


def draw_gemm_flops_per_image(T=64, N_r=2, N_w=5, E=256, D=256, Z=100, W=28, H=28):
    """GEMM FLOPs per image of one DRAW training step: 3x the forward's products (the
    backward takes the input and the weight gradient of each)."""
    R, Wr = 2 * N_r * N_r, N_w * N_w
    per_step = 2 * (4 * E * (R + D + E)      # encoder LSTM gates
                    + 2 * Z * E              # q: mu, log sigma
                    + 4 * D * (Z + D)        # decoder LSTM gates
                    + Wr * D                 # write patch
                    + 2 * 5 * D)             # read and write attention parameters
    per_step += 2 * (2 * (H * N_r * W + N_r * N_r * H))  # read x and x_hat: F_Y img F_X^T
    per_step += 2 * (N_w * W * N_w + H * W * N_w)        # write: F_Y^T w F_X
    return 3.0 * T * per_step


# sgemm 1024^3 through numpy (Debian's numpy calls the system libblas.so.3, OpenBLAS), timed
# by the process's CPU clock for at least a second: GFLOP per CPU-second.
SGEMM_CPU = """
import time, numpy as np
a = np.random.rand(1024, 1024).astype(np.float32); b = np.random.rand(1024, 1024).astype(np.float32)
a @ b
n, c0 = 0, time.process_time()
while time.process_time() - c0 < 1.0:
    a @ b
    n += 1
print(2 * 1024 ** 3 * n / (time.process_time() - c0) / 1e9)
"""


def parse_gemm(text):
    """{threads: GFLOP/s} of the 1024x1024x1024 lines of bench_gemm's first table (the
    kernels chosen); its second table, every OpenBLAS copy side by side with '*' on the
    chosen one, repeats the shape and is read past."""
    out = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 3 and f[0] == "1024x1024x1024" and int(f[1]) not in out:
            out[int(f[1])] = float(f[2].rstrip("*"))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--bin", default="bin")
    ap.add_argument("--data", default="data")
    ap.add_argument("--quick", action="store_true", help="fewer steps, one round (a smoke run)")
    ap.add_argument("--reps", type=int, default=3, help="rounds of every setting (the median counts)")
    a = ap.parse_args()
    py = sys.executable or "/usr/bin/python3"
    core = coretype()
    base = dict(os.environ)
    base.pop("OMP_NUM_THREADS", None)
    if core:
        base["OPENBLAS_CORETYPE"] = core
    tmp = tempfile.mkdtemp(prefix="attend-bench-")  # shown as $TMP
    log = sys.stdout
    draw_steps, tdraw_steps, sat_steps, tsat_steps, dec_images = \
        (2, 1, 4, 2, 32) if a.quick else (20, 6, 60, 12, 256)
    reps = 1 if a.quick else a.reps
    try:
        print(time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()) +
              f"; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; "
              f"OPENBLAS_CORETYPE={core or '(OpenBLAS default)'}; raw results:", file=log)
        # 1. sgemm peak
        env = dict(base, OPENBLAS_NUM_THREADS="2")
        p = subprocess.run([os.path.join(a.build, "bench", "bench_gemm"), "0.5"], env=env,
                           capture_output=True, text=True)
        peak = parse_gemm(p.stdout)
        print(f"$ {a.build}/bench/bench_gemm 0.5\n  sgemm 1024^3 GFLOP/s by threads: {peak}",
              file=log)
        # The same OpenBLAS (numpy links it as libblas.so.3) timed by CPU time, one thread.
        p = subprocess.run([py, "-c", SGEMM_CPU], env=dict(base, OPENBLAS_NUM_THREADS="1"),
                           capture_output=True, text=True)
        try:
            peak_cpu = float(p.stdout.split()[0])
        except (IndexError, ValueError):
            peak_cpu = float("nan")
        print(f"$ OPENBLAS_NUM_THREADS=1 {py} -c SGEMM_CPU (numpy, 1024^3)\n"
              f"  sgemm {peak_cpu:.1f} GFLOP per CPU-second", file=log)

        single = {}  # what = (JSON, CPU seconds) of the one-thread runs

        def median(runs):
            """The run (JSON, peak RSS, CPU seconds) with the median images_per_s."""
            ok = sorted((x for x in runs if x[0]), key=lambda x: x[0]["images_per_s"])
            return ok[len(ok) // 2] if ok else None

        def compare(what, make_cmd, script_args):
            """Both sides on every setting, REPS rounds, each round running every setting of
            both once (so a slow spell of the machine falls on both); per setting the median
            round counts, and each side keeps its fastest setting. Returns (toolkit, torch)
            bests as (JSON, peak RSS, setting[, threads])."""
            tk = {t: [] for t in (1, 2)}
            pt = {(t, ob): [] for t in (1, 2) for ob in (1, 2)}
            for _ in range(reps):
                for t in tk:
                    cpu = []
                    r, rss, _ = run(make_cmd(t), dict(base), tmp, log, cpu)
                    tk[t].append((r, rss, cpu[0]))
                for t, ob in pt:
                    env = dict(base, OPENBLAS_NUM_THREADS=str(ob))
                    r, rss, _ = run([py] + script_args + ["--threads", str(t)], env, tmp, log)
                    pt[(t, ob)].append((r, rss, None))
            best_c = best_t = None
            for t, runs in tk.items():
                m = median(runs)
                if m and t == 1:
                    single["toolkit " + what] = (m[0], m[2])
                if m and (best_c is None or m[0]["images_per_s"] > best_c[0]["images_per_s"]):
                    best_c = (m[0], m[1], f"{t} thread{'s' if t > 1 else ''}", t)
            for (t, ob), runs in pt.items():
                m = median(runs)
                if m and t == 1 and ob == 1:
                    single["torch " + what] = m[0]
                if m and (best_t is None or m[0]["images_per_s"] > best_t[0]["images_per_s"]):
                    best_t = (m[0], m[1], f"intra-op {t}, OpenBLAS {ob}")
            print(f"  {what}, medians of {reps}: toolkit "
                  + ", ".join(f"{t} thread(s) {median(r)[0]['images_per_s']}" for t, r in tk.items()
                              if median(r))
                  + "; PyTorch " + ", ".join(f"intra-op {t} OpenBLAS {ob} {median(r)[0]['images_per_s']}"
                                             for (t, ob), r in pt.items() if median(r)), file=log)
            return best_c, best_t

        def cpu_rate(what, make_cmd, short, long, batch):
            """Images per CPU-second of training on one thread: the CPU times of the grid's
            one-thread run (long steps) and of a short run differ by the steps between them
            (start-up and the final validation cost both the same)."""
            cpu = []
            r, _, _ = run(make_cmd(1, short), dict(base), tmp, log, cpu)
            if not r or ("toolkit " + what) not in single:
                return float("nan")
            d = single["toolkit " + what][1] - cpu[0]
            return (long - short) * batch / d if d > 0 else float("nan")

        def torch_cpu(what):
            r = single.get("torch " + what)
            return r["images_per_cpu_s"] if r else float("nan")

        # 2. DRAW
        def draw_cmd(t, steps=draw_steps):
            out = os.path.join(tmp, f"draw{t}")
            shutil.rmtree(out, ignore_errors=True)
            return [os.path.join(a.bin, "draw"), "train", "--data", "mnist", "--data-root",
                    a.data, "--out", out, "--steps", str(steps), "--batch", "100",
                    "--valid-images", "100", "--valid-every", "1000000", "--json",
                    "--threads", str(t)]
        draw_args = [os.path.join(HERE, "draw_ref.py"), "--data", os.path.join(a.data, "mnist"),
                     "--steps", str(tdraw_steps), "--batch", "100", "--budget", "20"]
        draw_c, draw_t = compare("draw", draw_cmd, draw_args)
        cpu_rows = [("DRAW training", cpu_rate("draw", draw_cmd, 1, draw_steps, 100),
                     torch_cpu("draw"))]

        # 3. the captioner
        scenes = os.path.join(tmp, "scenes")
        run([os.path.join(a.bin, "caption"), "scenes", "--out", scenes, "--count", "200",
             "--data-root", a.data], dict(base), tmp, log)

        def sat_cmd(t, steps=sat_steps):
            out = os.path.join(tmp, f"sat{t}" if steps == sat_steps else f"sat{t}_{steps}")
            shutil.rmtree(out, ignore_errors=True)
            return [os.path.join(a.bin, "caption"), "train", "--data", "scenes", "--data-root",
                    a.data, "--out", out, "--steps", str(steps), "--batch", "32", "--json",
                    "--quiet", "--val-count", "8", "--threads", str(t)]
        # PyTorch's vocabulary: the size of the toolkit's on the scenes, from a short run.
        run(sat_cmd(1, 2), dict(base), tmp, log)
        first = os.path.join(tmp, "sat1_2", "model.safetensors")
        vocab = 51
        if os.path.exists(first):
            sys.dont_write_bytecode = True
            sys.path.insert(0, HERE)
            import safetensors_io
            vocab = int(safetensors_io.load(first)[0]["embed"].shape[0])
        sat_args = [os.path.join(HERE, "sat_ref.py"), "train", "--captions",
                    os.path.join(scenes, "captions.tsv"), "--vocab", str(vocab),
                    "--steps", str(tsat_steps), "--batch", "32", "--budget", "15"]
        sat_c, sat_t = compare("sat", sat_cmd, sat_args)
        model = os.path.join(tmp, "sat1", "model.safetensors")  # decoded below
        cpu_rows.append(("captioner training", cpu_rate("sat", sat_cmd, 2, sat_steps, 32),
                         torch_cpu("sat")))

        # 4. decoding, beam 3
        dec_args = [os.path.join(HERE, "sat_ref.py"), "decode", "--model", model,
                    "--images", str(dec_images), "--beam", "3", "--batch", "32", "--budget", "10"]
        dec_c, dec_t = compare("decode", lambda t: [os.path.join(a.build, "bench", "bench_decode"),
                                                    model, str(dec_images), "3", str(t), "32"],
                               dec_args)
        r1 = single.get("toolkit decode")
        cpu_rows.append(("caption decoding, beam 3", r1[0]["images_per_cpu_s"] if r1 else
                         float("nan"), torch_cpu("decode")))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def ips(x):
        return x[0]["images_per_s"] if x else float("nan")

    def rss(x):
        return x[1] if x else float("nan")

    def setting(x):
        return x[2] if x else "failed"

    def ratio(a_, b_):
        return a_ / b_ if b_ and b_ == b_ and a_ == a_ else float("nan")

    rows = [
        ("DRAW training (images/s)", ips(draw_c), setting(draw_c), ips(draw_t), setting(draw_t),
         ratio(ips(draw_c), ips(draw_t)), ">= 3x"),
        ("DRAW peak RSS (MiB)", rss(draw_c), setting(draw_c), rss(draw_t), setting(draw_t),
         ratio(rss(draw_c), rss(draw_t)), "<= 0.5x"),
        ("captioner training (images/s)", ips(sat_c), setting(sat_c), ips(sat_t),
         setting(sat_t), ratio(ips(sat_c), ips(sat_t)), ">= 2x"),
        ("captioner peak RSS (MiB)", rss(sat_c), setting(sat_c), rss(sat_t), setting(sat_t),
         ratio(rss(sat_c), rss(sat_t)), "<= 0.5x"),
        ("caption decoding, beam 3 (images/s)", ips(dec_c), setting(dec_c), ips(dec_t),
         setting(dec_t), ratio(ips(dec_c), ips(dec_t)), ""),
    ]
    print()
    print("| measure | toolkit | (setting) | PyTorch | (setting) | toolkit / PyTorch | target |")
    print("|---|---:|---|---:|---|---:|---|")
    for name, c, cs, t, ts, r, goal in rows:
        print(f"| {name} | {c:.1f} | {cs} | {t:.1f} | {ts} | {r:.2f}x | {goal} |")
    print("\nOne thread each (toolkit --threads 1; PyTorch intra-op 1, OpenBLAS 1), images per "
          "CPU-second: the rate an otherwise idle core would give, robust to other load")
    print("\n| measure | toolkit | PyTorch | toolkit / PyTorch |")
    print("|---|---:|---:|---:|")
    for name, c, t in cpu_rows:
        print(f"| {name} (images/CPU-s) | {c:.1f} | {t:.1f} | {ratio(c, t):.2f}x |")
    fl = draw_gemm_flops_per_image()
    if draw_c:
        th = draw_c[3]
        sustained = fl * ips(draw_c) / 1e9
        pk = peak.get(th, float("nan"))
        print(f"\nDRAW training needs {fl / 1e9:.3f} GFLOP of GEMM per image (forward + backward);"
              f" at {ips(draw_c):.1f} images/s on {th} thread(s) that is {sustained:.1f} GFLOP/s,"
              f" {100 * sustained / pk:.1f} % of the measured sgemm peak {pk:.1f} GFLOP/s "
              f"(1024^3, {th} thread(s); target >= 40 %).")
    if cpu_rows and cpu_rows[0][1] == cpu_rows[0][1]:
        sustained = fl * cpu_rows[0][1] / 1e9
        print(f"By CPU time on one thread: {cpu_rows[0][1]:.1f} images per CPU-second is "
              f"{sustained:.1f} GFLOP per CPU-second, {100 * sustained / peak_cpu:.1f} % of sgemm's "
              f"{peak_cpu:.1f} GFLOP per CPU-second (1024^3, same OpenBLAS, 1 thread).")
    print(f"Load average at the end: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs (the "
          "figures are wall-clock rates: other work on the machine lowers both sides).")
    ok = all(x is not None for x in (draw_c, draw_t, sat_c, sat_t, dec_c, dec_t))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
