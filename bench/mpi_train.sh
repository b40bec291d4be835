#!/bin/sh
# mpi_train.sh: training throughput of both programs as 1 rank x 2 threads against 2 ranks
# x 1 thread on this machine (the same global batch, the same computation: cli/train_dist.h),
# then the cluster model on paper (bench_allreduce_model). Images per second are the
# programs' own training figures (step time only; start-up and validation left out).
# Usage: mpi_train.sh BUILD [BIN=bin]
build=${1:-build}
bin=${2:-bin}
mpirun_local="sh tests/mpirun_local.sh"
[ -n "${ATTEND_MPIRUN:-}" ] && mpirun_local=$ATTEND_MPIRUN
if ! command -v mpirun > /dev/null 2>&1 && [ -z "${ATTEND_MPIRUN:-}" ]; then
    echo "mpi_train: skipped, no mpirun (make deps installs Open MPI)"
    exit 0
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
ips() { sed -n 's/.*"images_per_s": \([0-9.e+]*\).*/\1/p' "$1" | tail -n 1; }
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"

# DRAW, the paper's MNIST configuration (T 64, read 2, write 5, 256, z 100), batch 100.
d="train --data mnist --steps 30 --batch 100 --valid-every 100000 --valid-images 100 --json --force"
"$bin"/draw $d --threads 2 --out "$out/d1" > "$out/d1.json" 2> /dev/null || echo "FAILED: draw, 1 rank"
$mpirun_local -np 2 "$bin"/draw $d --threads 1 --out "$out/d2" > "$out/d2.json" 2> /dev/null || echo "FAILED: draw, 2 ranks"
echo "draw (paper MNIST, batch 100, 30 steps): 1 rank x 2 threads $(ips "$out/d1.json") images/s," \
     "2 ranks x 1 thread $(ips "$out/d2.json") images/s"

# The captioner, bin/caption's defaults on scenes, batch 32.
c="train --steps 20 --batch 32 --val-count 8 --val-beam 1 --json --quiet --force"
"$bin"/caption $c --threads 2 --out "$out/c1" > "$out/c1.json" 2> /dev/null || echo "FAILED: caption, 1 rank"
$mpirun_local -np 2 "$bin"/caption $c --threads 1 --out "$out/c2" > "$out/c2.json" 2> /dev/null || echo "FAILED: caption, 2 ranks"
$mpirun_local -np 2 "$bin"/caption $c --threads 1 --overlap-sums --out "$out/c3" > "$out/c3.json" 2> /dev/null || echo "FAILED: caption, 2 ranks, --overlap-sums"
echo "caption (defaults, scenes, batch 32, 20 steps): 1 rank x 2 threads $(ips "$out/c1.json") images/s," \
     "2 ranks x 1 thread $(ips "$out/c2.json") images/s, with --overlap-sums $(ips "$out/c3.json") images/s"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
# Where a rank's step goes: compute, wait, allreduce; the captioner's CNN backward and its
# step with the decoder's sum overlapped.
$mpirun_local -np 2 "$build"/bench/bench_allreduce_model 1 5
echo
"$build"/bench/bench_allreduce_model 2 3
