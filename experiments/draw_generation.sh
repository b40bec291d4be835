#!/bin/sh
# draw_generation.sh [mnist2 | colour | conditional | quality] ...: DRAW's generation experiments beyond MNIST
# (Gregor et al. 2015, sections 4.2 and 4.3), at a step budget, each with its run page.
#
#   mnist2  two-digit MNIST (datasets/mnist2.h: two 28 x 28 digits at random positions in a
#           60 x 60 image, the paper's two-digit experiment), dynamically binarised like
#           MNIST, tested on the 10,000 test images binarised once (seed 0x5EED). Model:
#           T 32, read 5x5, write 5x5, LSTM 256, z 100 (the paper gives no table entry for
#           this data; this is the MNIST model with draw_mnist.sh quick's read and T).
#           Checkpoints every 250 steps. Sample quality (cli/draw_quality.h): QUALITY_N
#           samples, each cut into its two digits' 28 x 28 views, judged by the 28 x 28 CNN
#           of `conditional` (RUNS/cnn28, trained first when missing): the share with both
#           digits legible (confidence >= 0.9 each, a 95 % Wilson interval), the digits'
#           legible share and class entropy, beside the same figures of as many test images.
#           CURVE_EVERY > 0: training stops at every multiple of it, keeps that checkpoint
#           (RUN/snapshots/step-N.safetensors) and judges CURVE_N of its samples and its
#           bound on CURVE_IMAGES test images (RUN/curve.tsv, a table of the page); a re-run
#           judges only the checkpoints not judged yet. Rows in results/draw_mnist2.md, the
#           samples beside test images in results/draw_mnist2/ (the last row's).
#   colour  the colour scenes (datasets/scenes.h at 64 x 64, 3 channels, 20,000 training
#           scenes) with the paper's SVHN configuration, `--preset svhn`: T 32, read 12x12,
#           write 12x12, LSTM 800, z 100, the filters shared by the three channels
#           (SVHN and CIFAR-10 cannot be fetched here). Likelihood: Bernoulli
#           cross-entropy on each channel's intensity (the paper does not state its colour
#           likelihood; most reproductions use this). Bound in nats per image and per
#           dimension (64 x 64 x 3 = 12,288), on the 1,000 test scenes. Row in
#           results/draw_colour.md.
#   conditional  class-conditional DRAW on MNIST (draw train --conditional: a model with
#           attention, the label one-hot into both LSTMs at every step; COND_MODEL, by
#           default T 16, read 5x5, write 5x5, LSTM 256, z 100: a quarter of the paper's
#           steps, so that 20,000 steps fit in an hour of one core) and the sample-quality
#           measure (cli/draw_quality.h): a CNN trained on plain 28 x 28 MNIST (draw
#           classify train --model cnn --size 28 --fragments 0, CNN_STEPS steps of 64)
#           judges QUALITY_N samples, each class asked for in turn; the row gives the
#           worst class's match beside the overall one, and test.json the confusion
#           matrix. Its bound is -log p(x | label)'s. Row in results/draw_conditional.md
#           (not run with the defaults: mnist2 colour).
#   quality  the sample quality of the unconditional models (issue 60's target: at least
#           90 % legible, class entropy at least 0.95 log 10 = 2.1874): the same judge
#           (RUNS/cnn28, trained as for conditional, or QUALITY_JUDGE, a checkpoint used as
#           it is) on QUALITY_N samples of each run in QUALITY_RUNS that has a checkpoint
#           (default the paper configuration with and without attention, draw_mnist.sh's
#           paper-peephole-cosine300 and paper-noattn-peephole-cosine300, and the
#           conditional model of `conditional`), at each temperature of QUALITY_T
#           (default 1, the paper's prior; any other is a stated protocol, z_t ~ N(0, t^2),
#           and 1 is always measured first). It trains nothing but the judge: the runs
#           train in draw_mnist.sh, resumably, and each call of this stage adds one row per
#           run and temperature at the step the run has reached, so the rows of a run are
#           its curve; a row says how far the run is through its budget and whether the
#           figures moved since the run's previous row (beyond both rows' 95 % intervals).
#           Rows in the unconditional table of results/draw_conditional.md (the page of
#           the judge and of the conditional row, so that every figure of the one judge
#           stands on one page; draw_mnist.md is the bound's).
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
# RESULTS_DIR (default experiments/results); for conditional COND_MODEL (default
# "--T 16 --read 5 --write 5"; "" for the paper's MNIST model), COND_STEPS (default 20000),
# CNN_STEPS (default 4300, 5 epochs), QUALITY_N (default 10000) and EVAL_LIMIT (test images
# evaluated, default 0: all 10,000; smaller only to try the script out); for quality
# QUALITY_RUNS (default "draw-paper-peephole-cosine300 draw-paper-noattn-peephole-cosine300
# draw-conditional", folders under RUNS), QUALITY_T (default 1) and QUALITY_JUDGE (default:
# RUNS/cnn28, trained when absent); for mnist2
# CURVE_EVERY (default 0: no curve), CURVE_N (default 2000), CURVE_IMAGES (default 1000).
set -eu

BIN=${ATTEND_BIN:-bin}
RUNS=${RUNS:-runs}
THREADS=${THREADS:-2}
SEED=${SEED:-1}
MNIST2_STEPS=${MNIST2_STEPS:-3000}
COLOUR_STEPS=${COLOUR_STEPS:-1000}
SAMPLES=${SAMPLES:-10}
RESULTS_DIR=${RESULTS_DIR:-experiments/results}
COND_MODEL=${COND_MODEL---T 16 --read 5 --write 5}
COND_STEPS=${COND_STEPS:-20000}
CNN_STEPS=${CNN_STEPS:-4300}
QUALITY_N=${QUALITY_N:-10000}
EVAL_LIMIT=${EVAL_LIMIT:-0}
QUALITY_RUNS=${QUALITY_RUNS:-draw-paper-peephole-cosine300 draw-paper-noattn-peephole-cosine300 draw-conditional}
QUALITY_T=${QUALITY_T:-1}
QUALITY_JUDGE=${QUALITY_JUDGE:-}
CURVE_EVERY=${CURVE_EVERY:-0}
CURVE_N=${CURVE_N:-2000}
CURVE_IMAGES=${CURVE_IMAGES:-1000}

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

header_mnist2_quality() {
    cat <<'EOF'
Sample quality (cli/draw_quality.h): each 60 x 60 sample (the Bernoulli means of its last
canvas) cut into its two digits' 28 x 28 views (2-means of the ink, each window centred on
its cluster's centre of mass, the other cluster's pixels left out), each view judged by a
CNN trained on plain 28 x 28 MNIST (its test error in the row). Both legible: the share of
samples whose two digits both have top probability >= 0.9 (95 % Wilson interval); digits:
the share of the cut digits legible and the entropy of their predicted classes against
log 10 = 2.3026. The same measure on as many test images (binarised once) is beside it: the
ceiling the cut and the judge allow on this data, where the two digits often overlap. And
on as many noise images (`draw eval --quality-of noise`: each pixel on, independently,
with the test images' mean intensity): the floor, what the judge makes of ink without
shape.

| date | steps | samples | classifier test error (%) | both legible (%) [95 %] | digits legible (%) | class entropy (nats) | test images: both legible (%) [95 %] | digits legible (%) | class entropy (nats) | noise: both legible (%) [95 %] | digits legible (%) |
|---|---|---|---|---|---|---|---|---|---|---|---|
EOF
}

header_mnist2_curve() {
    cat <<'EOF'
The measure at the run's checkpoints (CURVE_EVERY; CURVE_N samples each, the bound on the
first CURVE_IMAGES test images with K 1):

| steps | samples | test bound (nats, first images) | both legible (%) [95 %] | digits legible (%) | class entropy (nats) |
|---|---|---|---|---|---|
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

header_conditional() {
    cat <<'EOF'
# Class-conditional DRAW on MNIST, and its samples judged by a classifier

Model: DRAW with attention (the model column: draw train flags beside the MNIST preset,
LSTM 256, z 100) with the label, one-hot, into the encoder and the decoder LSTM at every
step (`draw train --conditional`, models/draw.h: the conditional VAE's scheme of Sohn et
al. 2015, y joining the encoder's and the decoder's inputs, per step as alignDRAW feeds its
caption to DRAW's decoder). The bound is conditional on the label, -log p(x | label), on
the 10,000 test images binarised once (seed 0x5EED): not comparable with the paper's
unconditional 80.97. Sample quality (cli/draw_quality.h): QUALITY_N samples from the prior,
class i mod 10 asked for sample i, judged by a CNN trained on plain 28 x 28 MNIST (its test
error in the row): legible = top probability >= 0.9; entropy of the predicted classes
against log 10 = 2.3026; match = labelled as the class asked for, overall and for the worst
class (the target: every class at least 98 %).

    sh experiments/draw_generation.sh conditional     # COND_MODEL, COND_STEPS, CNN_STEPS, QUALITY_N, THREADS, SEED

| date | model | steps | wall time (s) | load | test bound given the label (nats) | classifier test error (%) | samples | legible (%) | class entropy (nats) | match (%) | worst class: match (%) |
|---|---|---|---|---|---|---|---|---|---|---|---|
EOF
}

# train_judge: the judge of the samples, a CNN on plain 28 x 28 MNIST in RUNS/cnn28
# (resumable), and its test figures in RUNS/cnn28/test.json; sets cls (the folder) and
# cls_error.
train_judge() {
    cls=$RUNS/cnn28
    mkdir -p "$cls"
    "$BIN/draw" classify train --model cnn --size 28 --fragments 0 --seed "$SEED" \
        --steps "$CNN_STEPS" --threads "$THREADS" --valid-images 5000 --resume --out "$cls" > /dev/null
    "$BIN/draw" classify eval --model "$cls/model.safetensors" --split test --json > "$cls/test.json"
    cls_error=$(json_field error < "$cls/test.json")
}

# wilson SHARE N: SHARE (of N) in per cent and its 95 % Wilson interval, "p [lo, hi]".
wilson() {
    awk -v p="$1" -v n="$2" 'BEGIN { z = 1.959964; d = 1 + z * z / n
        c = (p + z * z / (2 * n)) / d; h = z * sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
        printf "%.2f [%.2f, %.2f]", 100 * p, 100 * (c - h), 100 * (c + h) }'
}

# quality_field OBJECT KEY < eval JSON: KEY's number inside the member OBJECT.
quality_field() {
    sed -n "s/.*\"$1\": {\([^}]*\)}.*/\1/p" | json_field "$2"
}

# mnist2_curve DIR: train_step to each multiple of CURVE_EVERY up to $steps, each checkpoint
# kept and judged once (DIR/curve.tsv: steps, samples, bound, both legible, legible, entropy).
mnist2_curve() {
    cdir=$1
    s=$CURVE_EVERY
    while [ "$s" -le "$steps" ]; do
        if [ ! -f "$cdir/snapshots/step-$s.safetensors" ]; then
            train_step "$s"
            mkdir -p "$cdir/snapshots"
            cp "$cdir/model.safetensors" "$cdir/snapshots/step-$s.safetensors"
        fi
        if ! grep -q "^$s	" "$cdir/curve.tsv" 2>/dev/null; then
            "$BIN/draw" eval --model "$cdir/snapshots/step-$s.safetensors" --data mnist2 --split test \
                --limit "$CURVE_IMAGES" --threads "$THREADS" --sample-quality "$cls/model.safetensors" \
                --quality-samples "$CURVE_N" --json > "$cdir/curve-eval.json"
            printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$CURVE_N" \
                "$(json_field nll_bound < "$cdir/curve-eval.json")" \
                "$(quality_field sample_quality both_legible < "$cdir/curve-eval.json")" \
                "$(quality_field sample_quality legible < "$cdir/curve-eval.json")" \
                "$(quality_field sample_quality entropy < "$cdir/curve-eval.json")" >> "$cdir/curve.tsv"
        fi
        s=$((s + CURVE_EVERY))
    done
}

# The classifier, the conditional model and the row of results/draw_conditional.md.
run_conditional() {
    train_judge
    dir=$RUNS/draw-conditional table=$RESULTS_DIR/draw_conditional.md
    mkdir -p "$dir"
    # shellcheck disable=SC2086
    "$BIN/draw" train --data mnist --conditional $COND_MODEL --lr 1e-3 --seed "$SEED" \
        --steps "$COND_STEPS" --threads "$THREADS" --valid-every 500 --valid-images 500 \
        --checkpoint-every 250 --resume --out "$dir" --json > "$dir/train.json"
    wall=$(train_wall "$dir")
    load=$(cut -d' ' -f1 /proc/loadavg)
    "$BIN/draw" eval --model "$dir/model.safetensors" --data mnist --split test --limit "$EVAL_LIMIT" \
        --threads "$THREADS" --sample-quality "$cls/model.safetensors" --quality-samples "$QUALITY_N" \
        --json > "$dir/test.json"
    bound=$(json_field nll_bound < "$dir/test.json")
    legible=$(quality_field sample_quality legible < "$dir/test.json")
    entropy=$(quality_field sample_quality entropy < "$dir/test.json")
    match=$(quality_field sample_quality match < "$dir/test.json")
    # the worst class and its match, from match_per_class (a JSON array of 10 shares)
    worst=$(sed -n 's/.*"sample_quality": {\([^}]*\)}.*/\1/p' "$dir/test.json" |
        sed -n 's/.*"match_per_class": \[\([^]]*\)\].*/\1/p' | tr ',' '\n' |
        awk '{ v = $1 + 0; if (NR == 1 || v < m) { m = v; k = NR - 1 } } END { printf "%d: %.2f", k, 100 * m }')
    step=$(json_field steps < "$dir/train.json")
    draw_report_pictures "$BIN" "$dir" mnist 3
    row=$(awk -v d="$(date -u +%Y-%m-%d)" -v md="${COND_MODEL:-paper MNIST}" -v s="$step" -v w="$wall" \
        -v l="$load" -v b="$bound" -v e="$cls_error" -v n="$QUALITY_N" -v g="$legible" -v h="$entropy" \
        -v m="$match" -v wc="$worst" \
        'BEGIN { printf "| %s | %s | %s | %s | %s | %.2f | %.2f | %s | %.2f | %.4f | %.2f | %s |", d, md, s, w, l, b, 100 * e, n, 100 * g, h, 100 * m, wc }')
    table_row "$table" "| date | steps |" "$(header_conditional)" "$row"
    echo "draw_generation.sh: conditional: test bound given the label $bound nats; legible $legible, entropy $entropy, match $match (worst class $worst %) of $QUALITY_N samples; row added to $table" >&2
}

header_quality() {
    cat <<'EOF'
## Unconditional samples judged by the same classifier

Issue 60's target for the paper configuration without a label: at least 90 % of the
samples legible (the judge's top probability at least 0.9) and a class entropy of at least
0.95 log 10 = 2.1874 nats. The models (the run column: draw_mnist.sh's folders; `make
reproduce` judges its quick runs, draw-quick and draw-quick-noattn, T 32 and not the
paper's size): by default paper-peephole-cosine300 (T 64, read 2x2, write 5x5, LSTM 256,
z 100, peepholes, weight average 0.999, one cosine from 1e-3 to 0 over 300 epochs: the
recipe of draw_mnist.md's 80.56 nats), its no-attention twin
paper-noattn-peephole-cosine300 (83.38 nats there), and the conditional model of the table
above where it exists (marked "conditional": each class asked for in turn). The curve: each
call of the stage keeps the run's current checkpoint as RUN/snapshots/step-N.safetensors
and judges every snapshot not judged before, a row each, in the order of their steps (so
the rows of a run are its legible share and entropy against its steps and bound).
Samples: QUALITY_N, z_t ~ N(0, t^2 I) at the temperature t of the row; t = 1 is the
paper's prior, and only those rows answer the target (another t is a stated protocol
beside them). The judge is the conditional table's (its test error in the row).
Intervals: the legible share's Wilson 95 % interval; the entropy ± 1.96 standard errors
(delta method over the samples). "moved": whether the legible share or the entropy differs
from the run's previous row at the same t by more than 1.96 standard errors of the
difference; "-" for a first row. The test bound is the row's model (its weight average) on
the test images (all 10,000 unless EVAL_LIMIT). "reconstructions": the share legible of
the model's reconstructions of the first 1,000 test images (z from the posterior, `draw
eval --quality-of reconstructions`), beside the samples' share (z from the prior): where
the two part, the decoder draws legibly what its encoder saw and the prior's draws land
where the posterior puts no code. "test images": the same judge on the first QUALITY_N
test images themselves (binarised once, as the model sees them): the ceiling the measure
allows on this data.

    sh experiments/draw_mnist.sh paper-peephole-cosine300 paper-noattn-peephole-cosine300   # the runs, resumable
    sh experiments/draw_generation.sh quality     # QUALITY_RUNS, QUALITY_T, QUALITY_N, QUALITY_JUDGE

| date | run (unconditional) | step | of budget | test bound (nats) | judge test error (%) | samples | t | legible (%) [95 %] | class entropy (nats) ± 1.96 SE | entropy / log 10 | target met | moved | reconstructions legible (%) [95 %] | test images legible (%) [95 %], entropy | load |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
EOF
}

# quality_moved TABLE RUN T LEGIBLE ENTROPY LEG_SE ENT_SE: "yes" or "no" against RUN's last
# row at temperature T in TABLE's unconditional table (either figure's difference beyond
# 1.96 times the root of the two squared standard errors; the old row's from its interval
# and its ± 1.96 SE), "-" when there is none.
quality_moved() {
    awk -F'|' -v run="$2" -v t="$3" -v l="$4" -v h="$5" -v ls="$6" -v hs="$7" '
        index($0, "| date | run (unconditional) |") == 1 { on = 1; next }
        on && !/^\|/ { on = 0 }
        on && $3 == " " run " " && $9 + 0 == t + 0 {
            n = split($10, a, /[][, ]+/)   # " 71.20 [70.30, 72.08] "
            k = 0; for (i = 1; i <= n; i++) if (a[i] != "") v[++k] = a[i]
            split($11, b, /±/)
            pl = v[1] / 100; pls = (v[3] - v[2]) / 100 / 3.92; ph = b[1] + 0; phs = (b[2] + 0) / 1.96
            found = 1
        }
        END {
            if (!found) { print "-"; exit }
            dl = l - pl; dh = h - ph
            if (dl < 0) dl = -dl
            if (dh < 0) dh = -dh
            print (dl > 1.96 * sqrt(ls * ls + pls * pls) || dh > 1.96 * sqrt(hs * hs + phs * phs)) ? "yes" : "no"
        }' "$1"
}

# checkpoint_step FILE: the step a checkpoint was saved at (the train.step metadata of its
# safetensors header: a little-endian 8-byte length, then that much JSON).
checkpoint_step() {
    cs_len=$(od -An -t u8 -N 8 "$1" | tr -d ' ')
    head -c $((8 + cs_len)) "$1" | tail -c "$cs_len" | sed -n 's/.*"train\.step":"\([0-9]*\)".*/\1/p'
}

# percent_ci OBJECT FILE: the legible share of member OBJECT of eval JSON FILE and its
# Wilson interval, "p [lo, hi]" in per cent.
percent_ci() {
    awk -v g="$(quality_field "$1" legible < "$2")" -v lo="$(quality_field "$1" legible_low95 < "$2")" \
        -v hi="$(quality_field "$1" legible_high95 < "$2")" \
        'BEGIN { printf "%.2f [%.2f, %.2f]", 100 * g, 100 * lo, 100 * hi }'
}

# quality_row RUN STEP MODEL T: judges MODEL (RUN's checkpoint of STEP) at temperature T and
# adds its row to $table (the eval's JSON in $qdir/RUN-stepSTEP-tT.json); then STEP T is
# noted in $qdir/RUN.judged, so that a later call judges it no more.
quality_row() {
    out=$qdir/$1-step$2-t$4.json
    "$BIN/draw" eval --model "$3" --data mnist --split test --limit "$EVAL_LIMIT" \
        --threads "$THREADS" --sample-quality "$judge" --quality-samples "$QUALITY_N" \
        --quality-temperature "$4" --json > "$out.tmp"
    mv "$out.tmp" "$out"
    name=$1
    ! grep -q '"conditional": true' "$out" || name="$1 (conditional)"
    bound=$(json_field nll_bound < "$out")
    legible=$(quality_field sample_quality legible < "$out")
    low=$(quality_field sample_quality legible_low95 < "$out")
    high=$(quality_field sample_quality legible_high95 < "$out")
    entropy=$(quality_field sample_quality entropy < "$out")
    ent_se=$(quality_field sample_quality entropy_se < "$out")
    ceiling="$(percent_ci data_quality "$out"), $(quality_field data_quality entropy < "$out" | awk '{ printf "%.4f", $1 }')"
    leg_se=$(awk -v a="$low" -v b="$high" 'BEGIN { print (b - a) / 3.92 }')
    moved=$(quality_moved "$table" "$name" "$4" "$legible" "$entropy" "$leg_se" "$ent_se")
    recon=-
    if [ "$4" = 1 ]; then
        "$BIN/draw" eval --model "$3" --data mnist --split test --limit 1000 --threads "$THREADS" \
            --sample-quality "$judge" --quality-of reconstructions --json > "$qdir/$1-step$2-recon.json"
        recon=$(percent_ci sample_quality "$qdir/$1-step$2-recon.json")
    fi
    load=$(cut -d' ' -f1 /proc/loadavg)
    row=$(awk -v d="$(date -u +%Y-%m-%d)" -v r="$name" -v s="$2" -v bg="${budget:-0}" \
        -v b="$bound" -v e="$cls_error" -v n="$QUALITY_N" -v t="$4" -v g="$legible" -v lo="$low" \
        -v hi="$high" -v h="$entropy" -v hs="$ent_se" -v mv="$moved" -v rc="$recon" -v cl="$ceiling" -v l="$load" '
        BEGIN {
            met = t + 0 != 1 ? "(not t = 1)" : (g >= 0.9 && h >= 0.95 * log(10)) ? "yes" : "no"
            of = bg + 0 > 0 ? sprintf("%.1f %% of %d", 100 * s / bg, bg) : "-"
            printf "| %s | %s | %s | %s | %.2f | %.2f | %s | %s | %.2f [%.2f, %.2f] | %.4f ± %.4f | %.3f | %s | %s | %s | %s | %s |",
                d, r, s, of, b, 100 * e, n, t, 100 * g, 100 * lo, 100 * hi, h, 1.96 * hs, h / log(10), met, mv, rc, cl, l }')
    table_row "$table" "| date | run (unconditional) |" "$(header_quality)" "$row"
    echo "$2 $4" >> "$qdir/$1.judged"
    echo "draw_generation.sh: quality: $name at step $2, t = $4: legible $legible [$low, $high], class entropy $entropy (SE $ent_se); moved: $moved; test images $ceiling; row added to $table" >&2
}

header_quality_noise() {
    cat <<'EOF'
The same judge on noise (`draw eval --quality-of noise`: QUALITY_N 28 x 28 images, each
pixel on, independently, with the mean intensity of as many test images): the measure's
floor, what the judge makes of ink without shape, once per judge.

| date | noise images | judge test error (%) | legible (%) [95 %] | class entropy (nats) ± 1.96 SE |
|---|---|---|---|---|
EOF
}

# quality_noise MODEL: the judge on noise of MODEL's size, once ($qdir/noise.json), a row
# in $table's noise table.
quality_noise() {
    out=$qdir/noise.json
    [ ! -s "$out" ] || return 0
    "$BIN/draw" eval --model "$1" --data mnist --split test --limit "$QUALITY_N" --threads "$THREADS" \
        --sample-quality "$judge" --quality-of noise --json > "$out.tmp"
    mv "$out.tmp" "$out"
    row=$(awk -v d="$(date -u +%Y-%m-%d)" -v n="$QUALITY_N" -v e="$cls_error" -v c="$(percent_ci sample_quality "$out")" \
        -v h="$(quality_field sample_quality entropy < "$out")" -v hs="$(quality_field sample_quality entropy_se < "$out")" \
        'BEGIN { printf "| %s | %s | %.2f | %s | %.4f ± %.4f |", d, n, 100 * e, c, h, 1.96 * hs }')
    table_row "$table" "| date | noise images |" "$(header_quality_noise)" "$row"
    echo "draw_generation.sh: quality: noise: legible $(percent_ci sample_quality "$out"); row added to $table" >&2
}

# The judge, then for each run of QUALITY_RUNS that has a checkpoint: its current
# checkpoint kept as a snapshot, and a row per snapshot and temperature not judged before.
run_quality() {
    table=$RESULTS_DIR/draw_conditional.md qdir=$RUNS/draw-quality
    mkdir -p "$qdir" "$RESULTS_DIR"
    touch "$table"
    if [ -n "$QUALITY_JUDGE" ]; then
        [ -s "$QUALITY_JUDGE" ] || { echo "draw_generation.sh: QUALITY_JUDGE $QUALITY_JUDGE: no such checkpoint" >&2; exit 2; }
        judge=$QUALITY_JUDGE
        "$BIN/draw" classify eval --model "$judge" --split test --json > "$qdir/judge-test.json"
        cls_error=$(json_field error < "$qdir/judge-test.json")
    else
        train_judge
        judge=$cls/model.safetensors
    fi
    temps=1
    for t in $QUALITY_T; do [ "$t" = 1 ] || temps="$temps $t"; done
    rows=0
    for run in $QUALITY_RUNS; do
        dir=$RUNS/$run
        if [ ! -s "$dir/model.safetensors" ]; then
            echo "draw_generation.sh: quality: $dir has no checkpoint; no row for $run" >&2
            continue
        fi
        # the budget: a cosine run's end step (draw_mnist.sh pins it in DIR/cosine), else
        # the step target of its last training call (run.json); "-" when neither says
        budget=
        [ ! -s "$dir/cosine" ] || budget=$(cut -d' ' -f2 "$dir/cosine")
        [ -n "$budget" ] || [ ! -s "$dir/run.json" ] ||
            budget=$(sed -n 's/.*"command":.* --steps \([0-9]*\).*/\1/p' "$dir/run.json" | tail -n 1)
        quality_noise "$dir/model.safetensors"
        # the current checkpoint kept (copied first, so that a save under way is not split)
        mkdir -p "$dir/snapshots"
        cp "$dir/model.safetensors" "$dir/snapshots/current.tmp"
        now=$(checkpoint_step "$dir/snapshots/current.tmp")
        if [ -n "$now" ] && [ ! -s "$dir/snapshots/step-$now.safetensors" ]; then
            mv "$dir/snapshots/current.tmp" "$dir/snapshots/step-$now.safetensors"
        else
            rm -f "$dir/snapshots/current.tmp"
        fi
        for snap in $(for f in "$dir"/snapshots/step-*.safetensors; do
            [ -e "$f" ] || continue
            f=${f##*/step-}
            echo "${f%.safetensors}"
        done | sort -n); do
            for t in $temps; do
                ! grep -qx "$snap $t" "$qdir/$run.judged" 2>/dev/null || continue
                quality_row "$run" "$snap" "$dir/snapshots/step-$snap.safetensors" "$t"
                rows=$((rows + 1))
            done
        done
    done
    [ "$rows" -gt 0 ] || echo "draw_generation.sh: quality: no checkpoint of $QUALITY_RUNS under $RUNS left to judge: no row" >&2
}

# train_step N: the run in $dir trained (resumed) to N steps in all; its figures in train.json.
train_step() {
    # shellcheck disable=SC2086
    "$BIN/draw" train --data "$data" $model --batch "$batch" --lr 1e-3 --seed "$SEED" \
        --steps "$1" --threads "$THREADS" --valid-every 500 --valid-images 500 $ckpt --resume \
        --out "$dir" --json > "$dir/train.json"
}

# The mnist2 run's sample quality and its rows (the quality table, the curve), and its
# samples beside test images in RESULTS_DIR/draw_mnist2/; after run_config's figures.
mnist2_quality() {
    qj=$dir/test.json  # run_config's eval, with --sample-quality
    # the floor: as many noise images as dense as the test images, cut and judged the same way
    nj=$dir/noise.json
    "$BIN/draw" eval --model "$m" --data mnist2 --split test --limit "$QUALITY_N" --threads "$THREADS" \
        --sample-quality "$cls/model.safetensors" --quality-of noise --json > "$nj"
    row=$(printf '| %s | %s | %s | %.2f | %s | %.2f | %.4f | %s | %.2f | %.4f | %s | %.2f |' \
        "$(date -u +%Y-%m-%d)" "$step" "$QUALITY_N" "$(awk -v e="$cls_error" 'BEGIN { print 100 * e }')" \
        "$(wilson "$(quality_field sample_quality both_legible < "$qj")" "$QUALITY_N")" \
        "$(awk -v v="$(quality_field sample_quality legible < "$qj")" 'BEGIN { print 100 * v }')" \
        "$(quality_field sample_quality entropy < "$qj")" \
        "$(wilson "$(quality_field data_quality both_legible < "$qj")" "$(quality_field data_quality samples < "$qj")")" \
        "$(awk -v v="$(quality_field data_quality legible < "$qj")" 'BEGIN { print 100 * v }')" \
        "$(quality_field data_quality entropy < "$qj")" \
        "$(wilson "$(quality_field sample_quality both_legible < "$nj")" "$(quality_field sample_quality samples < "$nj")")" \
        "$(awk -v v="$(quality_field sample_quality legible < "$nj")" 'BEGIN { print 100 * v }')")
    table_row "$table" "| date | steps | samples |" "$(header_mnist2_quality)" "$row"
    # the curve: a row for each checkpoint judged (curve.tsv) that the page lacks
    [ ! -s "$dir/curve.tsv" ] || sort -n "$dir/curve.tsv" | while IFS='	' read -r cs cn cb cboth cleg cent; do
        grep -q "^| $cs | $cn |" "$table" && continue
        table_row "$table" "| steps | samples | test bound" "$(header_mnist2_curve)" \
            "$(printf '| %s | %s | %.2f | %s | %.2f | %.4f |' "$cs" "$cn" "$cb" "$(wilson "$cboth" "$cn")" \
                "$(awk -v v="$cleg" 'BEGIN { print 100 * v }')" "$cent")"
    done
    pics=$RESULTS_DIR/draw_mnist2
    mkdir -p "$pics"
    "$BIN/draw" generate --model "$m" --count 16 --scale 2 --out "$dir/samples-plain" 2> /dev/null
    cp "$dir/samples-plain/final.png" "$pics/samples.png"
    cp "$dir/reconstructions/input.png" "$pics/test-images.png"
    echo "draw_generation.sh: mnist2: both digits legible $(quality_field sample_quality both_legible < "$qj") of $QUALITY_N samples (test images: $(quality_field data_quality both_legible < "$qj")); pictures in $pics" >&2
}

run_config() {
    name=$1
    [ "$name" != conditional ] || { run_conditional; return; }
    [ "$name" != quality ] || { run_quality; return; }
    case $name in
    mnist2)
        data=mnist2 model="--T 32 --read 5 --write 5 --hidden 256 --z 100"
        steps=$MNIST2_STEPS batch=${BATCH:-100} table=$RESULTS_DIR/draw_mnist2.md ;;
    colour)
        data=scenes model="--preset svhn"
        steps=$COLOUR_STEPS batch=${BATCH:-50} table=$RESULTS_DIR/draw_colour.md ;;
    *) echo "draw_generation.sh: unknown configuration '$name' (mnist2, colour, conditional, quality)" >&2; exit 2 ;;
    esac
    dir=$RUNS/draw-$name
    mkdir -p "$dir"
    ckpt=
    if [ "$name" = mnist2 ]; then
        ckpt="--checkpoint-every 250"
        train_judge
        [ "$CURVE_EVERY" -le 0 ] || mnist2_curve "$dir"
    fi
    # (the curve's last stop may be the budget: its train.json then stands, and the row is
    # that snapshot's, whatever training went on after it)
    m="$dir/model.safetensors"
    if [ -f "$dir/snapshots/step-$steps.safetensors" ]; then
        m="$dir/snapshots/step-$steps.safetensors"
    else
        train_step "$steps"
    fi
    wall=$(train_wall "$dir")  # over every (resumed or killed) invocation
    qflags=
    [ "$name" != mnist2 ] || qflags="--sample-quality $cls/model.safetensors --quality-samples $QUALITY_N"
    load=$(cut -d' ' -f1 /proc/loadavg)

    # shellcheck disable=SC2086
    "$BIN/draw" eval --model "$m" --data "$data" --split test --samples "$SAMPLES" \
        --threads "$THREADS" $qflags --json > "$dir/test.json"
    bound=$(json_field nll_bound < "$dir/test.json")
    per_dim=$(json_field nll_bound_per_dim < "$dir/test.json")
    recon=$(json_field recon < "$dir/test.json")
    kl=$(json_field kl < "$dir/test.json")
    iw=$(json_field nll_iw < "$dir/test.json")
    step=$(json_field step < "$dir/test.json")  # the evaluated checkpoint's
    ips=-
    [ ! -s "$dir/train.json" ] || ips=$(json_field images_per_s < "$dir/train.json")

    draw_report_pictures "$BIN" "$dir" "$data" 3 "$m"

    # A resumed run with no step left reports no images/s; SAMPLES 1 gives no IW estimate.
    case $ips in [0-9]*) ips=$(printf '%.0f' "$ips") ;; *) ips=- ;; esac
    case $iw in [0-9]*) iw=$(printf '%.2f' "$iw") ;; *) iw=- ;; esac
    row=$(printf '| %s | %s | %s | %s | %s | %s | %s | %.2f | %.5f | %.2f + %.2f | %s (%s) |' \
        "$(date -u +%Y-%m-%d)" "$model" "$step" "$batch" "$wall" "$load" "$ips" "$bound" \
        "$per_dim" "$recon" "$kl" "$iw" "$SAMPLES")
    table_row "$table" "| date | model |" "$("header_$name")" "$row"
    echo "draw_generation.sh: $name: test bound $bound nats ($per_dim per dimension), IW NLL $iw (K = $SAMPLES); row added to $table" >&2
    [ "$name" != mnist2 ] || mnist2_quality
}

for cfg in "$@"; do run_config "$cfg"; done
