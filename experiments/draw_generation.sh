#!/bin/sh
# draw_generation.sh [mnist2 | colour] ...: DRAW's generation experiments beyond MNIST
# (Gregor et al. 2015, sections 4.2 and 4.3), at a step budget, each with its run page.
#
#   mnist2  two-digit MNIST (datasets/mnist2.h: two 28 x 28 digits at random positions in a
#           60 x 60 image, the paper's two-digit experiment), dynamically binarised like
#           MNIST, tested on the 10,000 test images binarised once (seed 0x5EED). Model:
#           T 32, read 5x5, write 5x5, LSTM 256, z 100 (the paper gives no table entry for
#           this data; this is the MNIST model with draw_mnist.sh quick's read and T).
#           Row in results/draw_mnist2.md.
#   colour  the colour scenes (datasets/scenes.h at 64 x 64, 3 channels, 20,000 training
#           scenes) with the paper's SVHN configuration, `--preset svhn`: T 32, read 12x12,
#           write 12x12, LSTM 800, z 100, the filters shared by the three channels
#           (SVHN and CIFAR-10 cannot be fetched here). Likelihood: Bernoulli
#           cross-entropy on each channel's intensity (the paper does not state its colour
#           likelihood; most reproductions use this). Bound in nats per image and per
#           dimension (64 x 64 x 3 = 12,288), on the 1,000 test scenes. Row in
#           results/draw_colour.md.
#
# Each run gets samples/, film/, reconstructions/ (colour frames and GIFs for colour),
# test.json and report.html (`draw report`). Resumable: the step budget is a total and
# training runs with --resume into RUNS/draw-NAME, so re-running after a kill continues.
#
# The script refuses (exit 2) a $BIN/draw older than any of the checkout's C sources: run
# make first (experiments/common.sh, require_current_program).
#
# Environment: ATTEND_BIN (default bin), RUNS (default runs), THREADS (default 2), SEED
# (default 1), MNIST2_STEPS (default 3000), COLOUR_STEPS (default 1000), BATCH (default
# 100 for mnist2, 50 for colour), SAMPLES (importance samples per test image, default 10),
# RESULTS_DIR (default experiments/results).
set -eu

BIN=${ATTEND_BIN:-bin}
RUNS=${RUNS:-runs}
THREADS=${THREADS:-2}
SEED=${SEED:-1}
MNIST2_STEPS=${MNIST2_STEPS:-3000}
COLOUR_STEPS=${COLOUR_STEPS:-1000}
SAMPLES=${SAMPLES:-10}
RESULTS_DIR=${RESULTS_DIR:-experiments/results}

[ $# -gt 0 ] || set -- mnist2 colour

. "$(dirname "$0")/common.sh"  # json_field, train_wall, require_current_program, table_row, draw_report_pictures
require_current_program draw_generation.sh "$BIN/draw"

header_mnist2() {
    cat <<'EOF'
# DRAW on two-digit MNIST

Data: datasets/mnist2.h, two MNIST digits at random positions in 60 x 60 (Gregor et al.
2015, section 4.2); training images from MNIST's first 55,000 training digits, binarised
dynamically; test: 10,000 images from the test digits, binarised once (seed 0x5EED). The
paper shows samples only (no bound), so there is no paper figure beside these rows.

    sh experiments/draw_generation.sh mnist2     # MNIST2_STEPS, THREADS, SEED

| date | model | steps | batch | wall time (s) | load | images/s | test bound (nats) | per dimension | recon + KL | IW NLL (K) |
|---|---|---|---|---|---|---|---|---|---|---|
EOF
}

header_colour() {
    cat <<'EOF'
# DRAW in colour: the synthetic scenes with the paper's SVHN configuration

Data: the captioner's colour scenes (datasets/scenes.h), 64 x 64 x 3: 20,000 training
scenes, 1,000 test scenes whose objects come from the test files. Model: `--preset svhn`,
Gregor et al. 2015's SVHN model (T 32, read 12x12, write 12x12, LSTM 800, z 100), the
read and write filters shared by the three channels. Likelihood: Bernoulli cross-entropy
on each channel's intensity in [0, 1] (the paper does not state its colour likelihood;
most public reproductions use this), so the bound is in nats but not a density of
continuous pixels: it is comparable between runs on these scenes only, and its floor is
the entropy of the intensities, above 0. The paper reports pictures for SVHN and CIFAR-10,
no bound.

    sh experiments/draw_generation.sh colour     # COLOUR_STEPS, BATCH, THREADS, SEED

| date | model | steps | batch | wall time (s) | load | images/s | test bound (nats) | per dimension | recon + KL | IW NLL (K) |
|---|---|---|---|---|---|---|---|---|---|---|
EOF
}

run_config() {
    name=$1
    case $name in
    mnist2)
        data=mnist2 model="--T 32 --read 5 --write 5 --hidden 256 --z 100"
        steps=$MNIST2_STEPS batch=${BATCH:-100} table=$RESULTS_DIR/draw_mnist2.md ;;
    colour)
        data=scenes model="--preset svhn"
        steps=$COLOUR_STEPS batch=${BATCH:-50} table=$RESULTS_DIR/draw_colour.md ;;
    *) echo "draw_generation.sh: unknown configuration '$name' (mnist2, colour)" >&2; exit 2 ;;
    esac
    dir=$RUNS/draw-$name
    mkdir -p "$dir"
    # shellcheck disable=SC2086
    "$BIN/draw" train --data "$data" $model --batch "$batch" --lr 1e-3 --seed "$SEED" \
        --steps "$steps" --threads "$THREADS" --valid-every 500 --valid-images 500 --resume \
        --out "$dir" --json > "$dir/train.json"
    wall=$(train_wall "$dir")  # over every (resumed or killed) invocation
    load=$(cut -d' ' -f1 /proc/loadavg)

    m="$dir/model.safetensors"
    "$BIN/draw" eval --model "$m" --data "$data" --split test --samples "$SAMPLES" \
        --threads "$THREADS" --json > "$dir/test.json"
    bound=$(json_field nll_bound < "$dir/test.json")
    per_dim=$(json_field nll_bound_per_dim < "$dir/test.json")
    recon=$(json_field recon < "$dir/test.json")
    kl=$(json_field kl < "$dir/test.json")
    iw=$(json_field nll_iw < "$dir/test.json")
    step=$(json_field steps < "$dir/train.json")
    ips=$(json_field images_per_s < "$dir/train.json")

    draw_report_pictures "$BIN" "$dir" "$data" 3

    # A resumed run with no step left reports no images/s.
    case $ips in [0-9]*) ips=$(printf '%.0f' "$ips") ;; *) ips=- ;; esac
    row=$(printf '| %s | %s | %s | %s | %s | %s | %s | %.2f | %.5f | %.2f + %.2f | %.2f (%s) |' \
        "$(date -u +%Y-%m-%d)" "$model" "$step" "$batch" "$wall" "$load" "$ips" "$bound" \
        "$per_dim" "$recon" "$kl" "$iw" "$SAMPLES")
    table_row "$table" "| date | model |" "$("header_$name")" "$row"
    echo "draw_generation.sh: $name: test bound $bound nats ($per_dim per dimension), IW NLL $iw (K = $SAMPLES); row added to $table" >&2
}

for cfg in "$@"; do run_config "$cfg"; done
