#!/bin/sh
# mpi_translate.sh: text translate train on the date task as 1 process x 2 threads against
# 2 ranks x 1 thread (the same global batch, the same steps: cli/train_command.h), with
# 1 process x 1 thread beside them for scale; ROUNDS rounds, the sides one after the other
# in each round (their order turning), then each side's median. Per run: pairs/s of step time (the program's own figure, --json's
# pairs_per_s: start-up and validation left out), wall seconds and CPU seconds of the whole
# command (user + sys of it and its children, mpirun's included), and pairs per CPU-second
# (steps x batch / CPU seconds). The 1-minute load before and after each run is printed
# beside it.
# Usage: mpi_translate.sh [BIN=bin] [ROUNDS=3] [STEPS=100] [MODEL=lstm] [OUT=temporary]
bin=${1:-bin}
rounds=${2:-3}
steps=${3:-100}
model=${4:-lstm}
keep=${5:-}
batch=64
mpirun_local="sh tests/mpirun_local.sh"
[ -n "${ATTEND_MPIRUN:-}" ] && mpirun_local=$ATTEND_MPIRUN
if ! command -v mpirun > /dev/null 2>&1 && [ -z "${ATTEND_MPIRUN:-}" ]; then
    echo "mpi_translate: skipped, no mpirun (make deps installs Open MPI)"
    exit 0
fi
if [ -n "$keep" ]; then
    out=$keep
    mkdir -p "$out"
else
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
fi
load() { cut -d' ' -f1 /proc/loadavg; }
pps() { sed -n 's/.*"pairs_per_s": \([0-9.e+]*\).*/\1/p' "$1" | tail -n 1; }
# --valid-every past the run: the one validation is the last step's (outside the step time).
t="translate train --data dates --model $model --steps $steps --batch $batch --valid-every 100000 --json --force"

# run NAME SIDE: one run of a side (one: 1 process x 2 threads; two: 2 ranks x 1 thread;
# single: 1 process x 1 thread);
# prints "SIDE pairs/s wall cpu pairs-per-cpu-s load-before load-after".
run() {
    before=$(load)
    if [ "$2" = one ] || [ "$2" = single ]; then
        threads=2
        [ "$2" = single ] && threads=1
        /usr/bin/time -f "%e %U %S" -o "$out/$1.time" "$bin"/text $t --threads $threads --out "$out/$1" \
            > "$out/$1.json" 2> "$out/$1.err" || { echo "FAILED: $1"; cat "$out/$1.err"; return; }
    else
        /usr/bin/time -f "%e %U %S" -o "$out/$1.time" $mpirun_local -np 2 "$bin"/text $t --threads 1 \
            --out "$out/$1" > "$out/$1.json" 2> "$out/$1.err" || { echo "FAILED: $1"; cat "$out/$1.err"; return; }
    fi
    read -r wall user sys < "$out/$1.time"
    awk -v side="$2" -v p="$(pps "$out/$1.json")" -v w="$wall" -v u="$user" -v s="$sys" \
        -v n="$((steps * batch))" -v lb="$before" -v la="$(load)" \
        'BEGIN { printf "%s %s %s %.2f %.1f %s %s\n", side, p, w, u + s, n / (u + s), lb, la }'
}

echo "text translate train --model $model, dates, batch $batch, $steps steps, $rounds rounds" \
     "($(nproc) cores; load $(load))"
echo "side pairs_per_s wall_s cpu_s pairs_per_cpu_s load_before load_after"
: > "$out/rows"
r=1
while [ "$r" -le "$rounds" ]; do
    case $((r % 3)) in
    1) sides="one two single" ;;
    2) sides="two single one" ;;
    *) sides="single one two" ;;
    esac
    for side in $sides; do run "r${r}_$side" "$side" | tee -a "$out/rows"; done
    r=$((r + 1))
done
for side in one two single; do
    label="1 process x 2 threads"
    [ "$side" = two ] && label="2 ranks x 1 thread"
    [ "$side" = single ] && label="1 process x 1 thread"
    grep "^$side " "$out/rows" | awk -v label="$label" '
        { p[NR] = $2; c[NR] = $5 }
        function median(a, n,   i, j, t) {
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        END { if (NR) printf "median, %s: %.1f pairs/s of step time, %.1f pairs per CPU-second (%d rounds)\n", label, median(p, NR), median(c, NR), NR }'
done
