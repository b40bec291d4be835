#!/bin/sh
# draw_cluttered.sh [dram8 | dram4 | ram8 | ram4 | ram8-gnet | ram8-60 | ram8-60-gnet | dram8-noattn | cnn] ...
#
# DRAW's first experiment (Gregor et al. 2015, section 4, table 1): the recurrent attention
# classifier ("Differentiable RAM", models/glimpse.h) on 100 x 100 cluttered translated
# MNIST (datasets/cluttered.h: one MNIST digit and 8 fragments of 8 x 8 from other digits,
# after DeepMind's mnist-cluttered generator used by Mnih et al. 2014), trained with
# `draw classify train`, scored on the 10,000 test images (test digits only, clutter seed
# 0xC1), one markdown row per configuration in experiments/results/draw_cluttered.md,
# beside the paper's table (experiments/papers.md, section draw_cluttered).
#
#   dram8         8 glimpses of 12 x 12, LSTM 256: the paper's hyper-parameter table
#   dram4         4 glimpses, otherwise the same (the paper's 4-glimpse row)
#   ram8, ram4    hard attention, the RAM baseline (Mnih et al. 2014, "Recurrent Models of
#                 Visual Attention": 4 scales of 12 x 12 on 100 x 100 cluttered MNIST): a
#                 retina of 4 fixed windows of 12, 24, 48 and 96 pixels, each read as
#                 12 x 12, at a centre sampled from a Gaussian policy (--loc-std, the
#                 image spans [-1, 1]; the sample is not back-propagated through), the
#                 LSTM reading the patches and the centre; classification by cross-entropy,
#                 the policy by REINFORCE with reward 1 for a right answer less a baseline
#                 learned per step (RAM's hybrid loss). Where RAM differs: its glimpse and
#                 core networks (ReLU layers and a plain RNN, here DRAW's LSTM) and its
#                 optimiser (momentum SGD; here the same Adam as the other rows)
#   ram8-gnet     ram8 with RAM's glimpse network between the retina and the LSTM
#                 (--glimpse-net 128: what and where ReLU layers of 128 units, combined into
#                 256 ReLU units, as Mnih et al.'s h_g, h_l and g), the rest as ram8
#   ram8-60       ram8 on Mnih et al.'s 60 x 60 cluttered set (--size 60 --fragments 4: one
#                 digit and 4 fragments of 8 x 8) with their 3-scale retina for it
#                 (--scales 3: windows of 12, 24 and 48 pixels, each seen as 12 x 12)
#   ram8-60-gnet  ram8-60 with RAM's glimpse network (--glimpse-net 128)
#   dram8-noattn  8 steps that each read the whole 100 x 100 image (no attention; not in
#                 the paper: what the attention buys at the same budget)
#   cnn           the convolutional baseline (models/convnet.h: 2 layers of 3 x 3 convolution,
#                 ReLU and 2 x 2 max-pooling with 16 and 32 channels, fc 256; the paper
#                 says only "2 layers", so this network is ours)
# The paper states glimpses, glimpse size and LSTM size only; the rest is ours: Adam with
# learning rate 5e-4 (beta1 0.9; see "Learning rate" below), batch 64, the global gradient norm clipped at 5, every
# training digit once per epoch in fresh clutter at a fresh place.
#
# Budget: STEPS (total steps per configuration, default 20000: about 23 epochs of the
# 55,000 training digits at batch 64). Resumable: each configuration trains with --resume
# into RUNS/cluttered-NAME and STEPS is a total, so running the same command again after a
# kill continues from the last checkpoint (every VALID_EVERY steps) and ends with the same
# weights as an uninterrupted run (same machine and thread count); a finished run is only
# evaluated again. The run toward the paper's 3.36 %: STEPS=200000 sh experiments/draw_cluttered.sh
# dram8 (3.19 % and 3.31 % test error with seeds 1 and 2, about 1.5 hours each on one thread).
#
# Learning rate: LR (5e-4), divided by 10 at each step of DECAY_STEPS ("100000 150000")
# below STEPS, the Adam moments carried over (--resume with a new --lr). Why the cuts: at
# 1e-3 the long dram8 run's validation error (1,000 images) came down to about 4 % by step
# 30,000 and then wandered between 3.7 and 6.4 % up to step 68,000 without a trend: the
# noise floor of Adam's steps at that rate, which a tenth of the rate lowers (after step
# 100,000 at 1e-4 it was 2.7-3.4 %, and the training error still fell). Why 5e-4 and not the
# 1e-3 of the first long run (3.50 %, seed 1): with seed 2, 1e-3 collapsed at step 16,740
# (the gradient's norm from a median of 8 to one of 2,000 within 50 steps, the windows
# drifting off the image, the loss back at ln 10) and did not recover; at 5e-4 neither seed
# collapsed (experiments/results/draw_cluttered.md). Budgets of 100,000 steps or fewer
# (every short run) train at LR alone.
#
# The script refuses (exit 2) a $BIN/draw older than any of the checkout's C sources: run
# make first. Environment: ATTEND_BIN (default bin), RUNS (default runs), THREADS (default
# 2), SEED (default 1), STEPS, LR (a SEED or LR other than the default is written into
# the row's model column), DECAY_STEPS ("": never; cuts other than the default are written
# into the model column too, with STEPS: a CHECKPOINT=1 row takes the run's), VALID_EVERY (default 1000), RESULTS
# (the table, default $RESULTS_DIR/draw_cluttered.md, RESULTS_DIR experiments/results).
# CHECKPOINT=1 trains nothing: it evaluates each configuration's last checkpoint as it
# stands (the run may still be training, in another process) on the test set and adds its
# row, the steps column "STEP (checkpoint)", the wall time log.csv's up to that step and
# images/s "-"; exit 2 with one line when the configuration has no checkpoint yet.
set -eu

BIN=${ATTEND_BIN:-bin}
RUNS=${RUNS:-runs}
THREADS=${THREADS:-2}
SEED=${SEED:-1}
STEPS=${STEPS:-20000}
LR=${LR:-5e-4}
DECAY_STEPS=${DECAY_STEPS-100000 150000}
VALID_EVERY=${VALID_EVERY:-1000}
CHECKPOINT=${CHECKPOINT:-0}
RESULTS=${RESULTS:-${RESULTS_DIR:-experiments/results}/draw_cluttered.md}

[ $# -gt 0 ] || set -- dram8 dram4 cnn

. "$(dirname "$0")/common.sh"  # json_field, train_wall, require_current_program, table_row
require_current_program draw_cluttered.sh "$BIN/draw"

# results_header: the results page's title, its description and the table's head, for a
# new page (table_row).
results_header() {
    cat <<'EOF'
# DRAW's glimpse classifier on cluttered MNIST

Gregor et al. 2015, section 4: 100 x 100 cluttered translated MNIST (one digit, 8 fragments
of 8 x 8 from other digits of the same split), test error on the 10,000 test digits in
clutter drawn with seed 0xC1. Training: Adam 5e-4 (divided by 10 at steps 100,000 and
150,000), batch 64, gradient norm clipped at 5 (the paper gives only glimpses, glimpse size
and LSTM size). The paper's figure of the same configuration is beside each row; the test
error's 95 % Wilson interval on the 10,000 images follows it in brackets (`draw classify
eval`, core/binomial.h). The ram rows are this toolkit's hard-attention variant (RAM's
4-scale retina at a centre sampled and trained by REINFORCE; models/glimpse.h).

| date | config | model | steps | wall time (s) | images/s (last run) | test error | paper |
|---|---|---|---|---|---|---|---|
EOF
}

# train_phase STEPS LR: trains (or resumes) the configuration in $dir with $model up to a
# total of STEPS steps at learning rate LR.
train_phase() {
    # shellcheck disable=SC2086
    "$BIN/draw" classify train $model --batch 64 --lr "$2" --clip 5 --seed "$SEED" \
        --steps "$1" --threads "$THREADS" --valid-every "$VALID_EVERY" --valid-images 1000 \
        --resume --out "$dir" --json > "$dir/train.json"
}

run_config() {
    name=$1
    case $name in
    dram8) model="--T 8 --read 12 --hidden 256"; paper="3.36 %" ;;
    dram4) model="--T 4 --read 12 --hidden 256"; paper="4.18 %" ;;
    ram8) model="--T 8 --read 12 --hidden 256 --hard --loc-std 0.1"; paper="8.11 % (RAM, 4 scales)" ;;
    ram4) model="--T 4 --read 12 --hidden 256 --hard --loc-std 0.1"; paper="9.41 % (RAM, 4 scales)" ;;
    ram8-gnet) model="--T 8 --read 12 --hidden 256 --hard --loc-std 0.1 --glimpse-net 128"; paper="8.11 % (RAM, 4 scales)" ;;
    ram8-60) model="--size 60 --fragments 4 --T 8 --read 12 --hidden 256 --hard --scales 3 --loc-std 0.1"; paper="8.11 % (RAM, 60 x 60, 3 scales)" ;;
    ram8-60-gnet) model="--size 60 --fragments 4 --T 8 --read 12 --hidden 256 --hard --scales 3 --loc-std 0.1 --glimpse-net 128"; paper="8.11 % (RAM, 60 x 60, 3 scales)" ;;
    dram8-noattn) model="--T 8 --hidden 256 --no-attention"; paper="-" ;;
    cnn) model="--model cnn"; paper="14.35 % (theirs)" ;;
    *) echo "draw_cluttered.sh: unknown configuration '$name' (dram8, dram4, ram8, ram4, ram8-gnet, ram8-60, ram8-60-gnet, dram8-noattn, cnn)" >&2; exit 2 ;;
    esac
    dir=$RUNS/cluttered-$name
    if [ "$CHECKPOINT" = 1 ]; then  # the run as its last checkpoint stands; nothing trained
        if [ ! -s "$dir/model.safetensors" ]; then
            echo "draw_cluttered.sh: CHECKPOINT=1: $dir/model.safetensors: no checkpoint of $name to evaluate (train it first)" >&2
            exit 2
        fi
        test_json=$dir/test-checkpoint.json
        "$BIN/draw" classify eval --model "$dir/model.safetensors" --split test --threads "$THREADS" \
            --json > "$test_json"
        step=$(json_field step < "$test_json")
        wall=$(train_wall "$dir" "$step")  # the log's seconds up to the checkpoint's step
        ips=-  # the run's images/s is known when its process ends
        step="$step (checkpoint)"
    else
        mkdir -p "$dir"
        lr=$LR
        for at in $DECAY_STEPS; do
            [ "$at" -lt "$STEPS" ] || continue
            train_phase "$at" "$lr"  # a no-op once the run is past step at
            lr=$(awk -v l="$lr" 'BEGIN { printf "%g", l / 10 }')
        done
        train_phase "$STEPS" "$lr"
        wall=$(train_wall "$dir")  # over every (resumed or killed) process

        test_json=$dir/test.json
        "$BIN/draw" classify eval --model "$dir/model.safetensors" --split test --threads "$THREADS" \
            --json > "$test_json"
        if [ "$name" != cnn ]; then  # the glimpses of the first test images, and of the first it gets wrong
            "$BIN/draw" classify show --model "$dir/model.safetensors" --count 8 --out "$dir/glimpses"
            "$BIN/draw" classify show --model "$dir/model.safetensors" --errors --count 8 --out "$dir/errors"
        fi
        step=$(json_field steps < "$dir/train.json")
        ips=$(printf '%.0f' "$(json_field images_per_s < "$dir/train.json")")
    fi
    err=$(json_field error < "$test_json")
    low=$(json_field error_low95 < "$test_json")
    high=$(json_field error_high95 < "$test_json")

    shown=$model  # the model column; a rate or seed other than the defaults is part of the recipe
    [ "$LR" = 5e-4 ] || shown="$shown --lr $LR"
    [ "$SEED" = 1 ] || shown="$shown --seed $SEED"
    if [ "$DECAY_STEPS" != "100000 150000" ]; then  # a schedule of cuts other than the default
        cuts=
        for at in $DECAY_STEPS; do
            if [ "$at" -lt "$STEPS" ]; then cuts="$cuts${cuts:+,}$at"; fi
        done
        if [ -n "$cuts" ]; then shown="$shown (rate / 10 at $cuts of $STEPS steps)"; else shown="$shown (no rate cut)"; fi
    fi
    row=$(printf '| %s | %s | %s | %s | %s | %s | %s | %s |' "$(date -u +%Y-%m-%d)" "$name" \
        "$shown" "$step" "$wall" "$ips" \
        "$(echo "$err $low $high" | awk '{ printf "%.2f %% (%.2f-%.2f)", 100 * $1, 100 * $2, 100 * $3 }')" \
        "$paper")
    table_row "$RESULTS" "| date | config |" "$(results_header)" "$row"
    echo "draw_cluttered.sh: $name: test error $err after $step steps; row added to $RESULTS" >&2
}

for cfg in "$@"; do run_config "$cfg"; done
