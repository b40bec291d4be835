#!/bin/sh
# draw_mnist.sh [quick | quick-noattn | paper | paper-noattn | paper-ema | paper-long |
#                paper-peephole | paper-peephole-long | paper-peephole-batch50 |
#                paper-peephole-batch50-long | paper-peephole-cosine |
#                paper-peephole-cosine300 | paper-noattn-peephole-cosine300] ...
#
# Trains DRAW on dynamically binarised MNIST, evaluates the test bound and an
# importance-weighted NLL estimate on the test set (binarised once with the fixed seed
# 0x5EED, datasets/mnist.h), and appends one markdown row per configuration to
# experiments/results/draw_mnist.md.
#
#   quick         T 32, read 5x5, write 5x5, LSTM 160, z 50: sized for about 30 minutes
#                 on 2 cores (QUICK_STEPS steps, about 11 epochs). Read 5x5 rather than the
#                 paper's 2x2: in short trials the 2x2 read left the bound near the
#                 mean-image level (~200 nats) for hundreds of steps, 5x5 did not.
#   quick-noattn  the same without attention (the figure to show beside it)
#   paper         Gregor et al. 2015's configuration (their table 3): T 64, read 2x2,
#                 write 5x5, LSTM 256, z 100, batch 100, trained until the validation bound
#                 stops improving, in milestones of MILESTONE_EPOCHS (25) epochs; see
#                 "The paper configuration to convergence" below
#   paper-noattn  the same without attention, to the same budget: as many epochs as the
#                 paper run has trained (its last milestone), with the same schedule
#   paper-ema     the paper configuration with a weight average (draw train --ema
#                 PAPER_EMA): the schedule's checks, the test bound and the IW NLL are the
#                 average's (draw eval evaluates it); see "The weight average" below
#   paper-long    the paper run continued from its final model with a warm restart and a
#                 cosine schedule to LONG_EPOCHS (300) epochs; see "The warm restart" below
#   paper-peephole  the paper configuration with peephole LSTMs (draw train --peepholes);
#                 see "The peepholes" below
#   paper-peephole-long  paper-long's warm restart of paper-peephole's final model
#   paper-peephole-batch50  paper-peephole at batch 50 (epochs of 1,100 steps), and
#                 paper-peephole-batch50-long its warm restart; see "The half batch" below
#   paper-peephole-cosine  paper-peephole from scratch with the weight average and a half
#                 cosine from LR to 0 at COSINE_EPOCHS (150); see "One cosine" below
#   paper-peephole-cosine300  the same with a cosine of 300 epochs, in its own folder
#   paper-noattn-peephole-cosine300  paper-peephole-cosine300 without attention: the
#                 no-attention run to that run's budget and recipe
#
# The paper configuration to convergence (paper, paper-noattn)
#   At each milestone (every MILESTONE_EPOCHS epochs of 550 steps) the run is evaluated:
#   the validation bound (all 5,000 validation images, fixed noise seed), the test bound
#   (all 10,000 test images) and the importance-weighted NLL from IW_SAMPLES (1000)
#   posterior samples per image on the first IW_IMAGES test images (default 1000:
#   K = 1000 on all 10,000 is 10^7 forward passes of the paper's model; measured 239 per
#   second on 2 threads at load 10, that is about 12 hours, longer than the 25 epochs of
#   training it would follow; 1,000 images take about 70 minutes at that rate;
#   IW_IMAGES=0 takes all). One row per
#   milestone goes into the "paper configuration to convergence" table of the results,
#   beside the paper's 80.97 (attention) and 87.40 (no attention) nats, and one more for
#   the model the run ends with when that falls between milestones; and one row per
#   check of the schedule (below) into the table of checks (the rate trained at, the
#   validation bound, the best so far, the decision).
#   Learning rate: Adam (beta1 0.9) at 1e-3, gradients clipped at a global norm of 10.
#   Every SCHEDULE_EPOCHS (5) epochs the validation bound (all 5,000 validation images,
#   about 20 s) is compared with the best so far: not at least MIN_DELTA (0.1) nats better,
#   the rate is halved; training stops (converged) after PATIENCE (3) such checks in a
#   row (three halvings that bought nothing), or at MAX_EPOCHS (1000). Why: 1e-3 is the
#   rate the quick runs train well at, with the fastest early progress; at a fixed rate
#   Adam's steps leave the bound on a noise floor that a smaller rate lowers (the public
#   Theano reproduction ran 3e-4 throughout and needed about 300 epochs for 81.9 nats);
#   deciding on the validation bound needs no guess of how many epochs the run will take;
#   and the comparison is paired (the same validation images, the same noise seed), so 0.1
#   nats is a change of the model rather than evaluation noise. Until epoch 50 of the
#   first run this check came only with the milestones (every 25 epochs, patience 2): at
#   about 5-10 minutes an epoch on 2 shared cores, that would have held a rate that had
#   stopped paying for up to 25 epochs before halving it.
#   Resumable across sessions: the run lives in RUNS/draw-paper (RUNS defaults to runs/,
#   which git ignores; no build product lives there and `make clean` leaves it), the
#   schedule's state in RUNS/draw-paper/schedule (steps at the last check, learning
#   rate, best validation bound, checks without improvement, converged). Re-run the
#   same command after the session that ran it ended: training continues from the last
#   checkpoint (--resume) to the next check; a check is recorded in the schedule only
#   after its row (if any) is written, so one whose evaluation was cut off is evaluated
#   again (its training already done); the IW estimate keeps each image's figures in
#   RUNS/draw-paper/test_iw.stepSTEPS.txt as its batches finish (draw eval --per-image), so
#   one cut off goes on from its last whole batch, not from the first image.
#   MILESTONE_STEPS and SCHEDULE_STEPS override the two lengths in steps (to check the
#   machinery on a short run; the epoch column then shows fractions).
#
# The weight average (paper-ema)
#   The third paper run's schedule halved the rate five times by epoch 80, each halving
#   buying most of its gain at its first check and little after (results, "The paper
#   configuration to convergence"): at each rate the weights sit on a noise floor, and a
#   halving lowers the floor but slows the descent under it. An average of the weights
#   (Polyak) removes the floor's noise without lowering the rate: paper-ema trains at
#   1e-3 and decides on the average's validation bound, so that a halving comes when the
#   average stops improving rather than the weights' noisy value. PAPER_EMA (0.999) is
#   its decay: a time constant of 1,000 steps, about 2 epochs. Same schedule, milestones
#   and rows as paper; its folder RUNS/draw-paper-ema.
#
# The warm restart (paper-long)
#   The paper run stopped at epoch 100 (three halvings without a gain) with a test bound
#   of 82.32, and paper-ema came level with it: each rate's gains die out within about
#   ten epochs, and the halvings then stop the run while its training bound is still
#   falling. The public Theano reproduction needed about 300 epochs for 81.9. paper-long
#   spends that budget on the paper run's final model rather than from scratch: it
#   copies RUNS/draw-paper/model.safetensors (refused while that run has not converged),
#   raises the rate to LONG_LR (5e-4) and lowers it along a half cosine to 0 at
#   LONG_EPOCHS (300) epochs in total (SGDR's warm restart, Loshchilov & Hutter 2017),
#   each check's segment at the cosine's value at its middle, with the weight average
#   (PAPER_EMA) deciding nothing but evaluated in the weights' place. No halvings and no
#   early stop: the checks record the validation bound, the milestones (every 25 epochs,
#   counted from the paper run's start) the test bound and IW NLL as for paper. Its
#   folder RUNS/draw-paper-long; RUNS/draw-paper-long/restart holds the step it
#   started from, the step where its cosine ends and its peak rate, as they were at its
#   start: later calls keep them whatever LONG_* say then (and say so).
#
# The peepholes (paper-peephole)
#   The public Theano reproduction (jbornschein/draw) builds DRAW's two LSTMs from Blocks'
#   LSTM brick (mila-iqia/blocks, bricks/recurrent/architectures.py), which has peephole
#   connections from the cell to the input, forget and output gates, as in Graves 2013
#   (eq. 7-11); the toolkit's LSTM had none. paper-peephole is the paper run with them, the
#   same schedule, milestones and rows, to see what they change; its folder
#   RUNS/draw-paper-peephole. paper-peephole-long is paper-long for it: the same warm
#   restart and cosine from paper-peephole's final model (refused until that run has
#   converged), its folder RUNS/draw-paper-peephole-long.
#
# The half batch (paper-peephole-batch50)
#   The paper runs stop while their training bound is still falling (paper-long, above),
#   and paper-peephole converged at epoch 110: what limits the model is how far the
#   optimiser gets in the epochs it has. On the 2-core machine a batch of 50 trains nearly
#   as many images a second as a batch of 100 (490 and 562 against 501 and 585: two rounds
#   of 12,000 images of the peephole model on 2 threads, alone), so at batch 50 an epoch
#   costs about the same time and takes twice the Adam steps. paper-peephole-batch50 is
#   paper-peephole with it, the same rate, schedule, milestones and rows, its checks and
#   milestones counted in epochs (1,100 steps each); its folder
#   RUNS/draw-paper-peephole-batch50, and paper-peephole-batch50-long the warm restart of
#   its final model.
#
# One cosine (paper-peephole-cosine)
#   The halving schedule decides on checks that are noisy by about a nat at 1e-3 (the
#   third run halved at epoch 30, paper-peephole at epoch 50, on one check each), and
#   each rate's gains die out within about ten epochs, so paper-peephole spent its last
#   forty epochs at an eighth of the rate or less and gained 0.74 nats in them; and the
#   model underfits (paper-peephole-batch50's training bound stood level with its
#   validation bound). paper-peephole-cosine fixes the length instead: paper-peephole's
#   model, seed and batch, trained from scratch with the rate falling along one half
#   cosine from LR (1e-3) at step 0 to 0 at COSINE_EPOCHS (150) epochs, each check's
#   segment at the cosine's value at its middle (as the warm restarts do), so that it is
#   above 5e-4 until epoch 75, where paper-peephole had come down to 1.25e-4; and with the
#   weight average (PAPER_EMA), which the checks and milestones evaluate, for the noise
#   that a higher rate leaves in the weights (at epoch 25, both at 1e-3, paper-ema's test
#   bound was 1.97 below the third run's). No halvings and no early stop; the cosine is
#   pinned in RUNS/draw-paper-peephole-cosine/cosine at the first call (its end step and
#   peak rate), as a warm restart's is in its restart file.
#   paper-peephole-cosine300 is the same recipe with a cosine twice as long, from
#   scratch in RUNS/draw-paper-peephole-cosine300: paper-peephole-cosine's validation bound
#   fell at every check of its cosine's second half, by 0.64 nats from epoch 75 to 125,
#   while its training bound (log.csv, the mean of the last 50 steps) stood level with the
#   average's validation bound at the epochs' ends (0.05 below it on average, each within
#   about a nat): the model still underfits there, and the question is what twice the
#   epochs at each rate buy (the public Theano reproduction trained about 300). The number
#   after "cosine" in the name is the cosine's length in epochs; COSINE_STEPS overrides it
#   as it does COSINE_EPOCHS.
#   paper-noattn-peephole-cosine300 is paper-peephole-cosine300 with --no-attention in
#   place of the read and write (paper-noattn's model with peepholes and the average,
#   beside the paper's 87.40): paper-noattn was trained to the paper run's budget and
#   schedule, and this is the no-attention run to the budget and recipe of the attention
#   run that ends longest, so that the two differ in the attention alone.
#
# Each run folder gets the pictures and page of `draw report` (cli/report_draw.h):
# samples/, reconstructions/, film/ and report.html; a paper run's, of its model at each
# row (milestone or end), replaced at the next.
#
# Resumable: each configuration trains with --resume into RUNS/NAME, and the step or
# epoch target is a total, so re-running the same command after an interruption
# continues where the last checkpoint left off and ends with the same weights.
#
# The script refuses (exit 2) a $BIN/draw older than any of the checkout's C sources: run
# make first (experiments/common.sh, require_current_program).
#
# Environment: ATTEND_BIN (default bin), RUNS (default runs), THREADS (default 2),
# QUICK_STEPS (default 6000), QUICK_NOATTN_STEPS (default QUICK_STEPS), SAMPLES
# (importance samples per test image of the quick runs, default 10), SEED (default 1),
# RESULTS (the table, default $RESULTS_DIR/draw_mnist.md, RESULTS_DIR experiments/results);
# for paper and paper-noattn: MILESTONE_EPOCHS (25), MILESTONE_STEPS (0: from the epochs),
# SCHEDULE_EPOCHS (5), SCHEDULE_STEPS (0: from the epochs), IW_SAMPLES (1000), IW_IMAGES
# (1000; 0: all), LR (1e-3), MIN_DELTA (0.1), PATIENCE (3), MAX_EPOCHS (1000), MAX_STEPS
# (0: from the epochs), PAPER_EMA (0.999; the average of paper-ema and the warm restarts),
# NOATTN_EPOCHS and NOATTN_STEPS (paper-noattn's budget, steps unless 0; unset, the paper
# run's last milestone, refused with one line while the paper run has none), LONG_LR
# (5e-4), LONG_EPOCHS (300), LONG_STEPS (0: from the epochs), COSINE_EPOCHS (150; not read
# by the cosine300 runs), COSINE_STEPS (0: from the epochs), CHECKPOINT_EVERY (0: a
# checkpoint at each check, once an epoch; N > 0 also every N steps, so that a run cut off
# loses less and a slow run has checkpoints to judge between its epochs).
set -eu

BIN=${ATTEND_BIN:-bin}
RUNS=${RUNS:-runs}
THREADS=${THREADS:-2}
QUICK_STEPS=${QUICK_STEPS:-6000}
QUICK_NOATTN_STEPS=${QUICK_NOATTN_STEPS:-$QUICK_STEPS}
MILESTONE_EPOCHS=${MILESTONE_EPOCHS:-25}
MILESTONE_STEPS=${MILESTONE_STEPS:-0}
SCHEDULE_EPOCHS=${SCHEDULE_EPOCHS:-5}
SCHEDULE_STEPS=${SCHEDULE_STEPS:-0}
IW_SAMPLES=${IW_SAMPLES:-1000}
IW_IMAGES=${IW_IMAGES:-1000}
LR=${LR:-1e-3}
MIN_DELTA=${MIN_DELTA:-0.1}
PATIENCE=${PATIENCE:-3}
MAX_EPOCHS=${MAX_EPOCHS:-1000}
MAX_STEPS=${MAX_STEPS:-0}
PAPER_EMA=${PAPER_EMA:-0.999}
LONG_LR=${LONG_LR:-5e-4}
LONG_EPOCHS=${LONG_EPOCHS:-300}
LONG_STEPS=${LONG_STEPS:-0}
COSINE_EPOCHS=${COSINE_EPOCHS:-150}
COSINE_STEPS=${COSINE_STEPS:-0}
CHECKPOINT_EVERY=${CHECKPOINT_EVERY:-0}
TRAIN_IMAGES=55000  # MNIST's first 55,000; run_to_convergence's epochs are TRAIN_IMAGES / batch steps
PAPER_MODEL="--T 64 --read 2 --write 5 --hidden 256 --z 100"  # the paper's table 3, MNIST
PAPER_NOATTN_MODEL="--T 64 --hidden 256 --z 100 --no-attention"
SAMPLES=${SAMPLES:-10}
SEED=${SEED:-1}
# The configurations run_config knows, as the usage line above and experiments/README.md
# list them (tests/test_experiments_draw_mnist.c checks the three agree).
CONFIGS="quick quick-noattn paper paper-noattn paper-ema paper-long paper-peephole paper-peephole-long \
paper-peephole-batch50 paper-peephole-batch50-long paper-peephole-cosine paper-peephole-cosine300 \
paper-noattn-peephole-cosine300"
RESULTS=${RESULTS:-${RESULTS_DIR:-experiments/results}/draw_mnist.md}

[ $# -gt 0 ] || set -- quick quick-noattn

. "$(dirname "$0")/common.sh"  # json_field, train_wall, require_current_program, table_row, draw_report_pictures
require_current_program draw_mnist.sh "$BIN/draw"

run_config() {
    name=$1
    case $name in
    quick) model="--T 32 --read 5 --write 5 --hidden 160 --z 50"; budget="--steps $QUICK_STEPS" ;;
    quick-noattn) model="--T 32 --hidden 160 --z 50 --no-attention"; budget="--steps $QUICK_NOATTN_STEPS" ;;
    paper) run_to_convergence paper "$PAPER_MODEL" 80.97; return ;;
    paper-noattn) run_to_convergence paper-noattn "$PAPER_NOATTN_MODEL" 87.40; return ;;
    paper-ema) run_to_convergence paper-ema "$PAPER_MODEL --ema $PAPER_EMA" 80.97; return ;;
    paper-long) run_to_convergence paper-long "$PAPER_MODEL --ema $PAPER_EMA" 80.97; return ;;
    paper-peephole) run_to_convergence paper-peephole "$PAPER_MODEL --peepholes" 80.97; return ;;
    paper-peephole-long) run_to_convergence paper-peephole-long "$PAPER_MODEL --peepholes --ema $PAPER_EMA" 80.97; return ;;
    paper-peephole-batch50) run_to_convergence paper-peephole-batch50 "$PAPER_MODEL --peepholes" 80.97 50; return ;;
    paper-peephole-batch50-long) run_to_convergence paper-peephole-batch50-long "$PAPER_MODEL --peepholes --ema $PAPER_EMA" 80.97 50; return ;;
    paper-peephole-cosine | paper-peephole-cosine300)
        run_to_convergence "$name" "$PAPER_MODEL --peepholes --ema $PAPER_EMA" 80.97; return ;;
    paper-noattn-peephole-cosine300)
        run_to_convergence "$name" "$PAPER_NOATTN_MODEL --peepholes --ema $PAPER_EMA" 87.40; return ;;
    *) echo "draw_mnist.sh: unknown configuration '$name' (one of: $CONFIGS)" >&2; exit 2 ;;
    esac
    dir=$RUNS/draw-$name
    mkdir -p "$dir"
    # shellcheck disable=SC2086
    "$BIN/draw" train --data mnist $model --batch 100 --lr 1e-3 --seed "$SEED" $budget \
        --threads "$THREADS" --valid-every 1000 --valid-images 1000 --resume --out "$dir" --json \
        > "$dir/train.json"
    wall=$(train_wall "$dir")  # over every (resumed or killed) invocation

    "$BIN/draw" eval --model "$dir/model.safetensors" --data mnist --split test \
        --samples "$SAMPLES" --threads "$THREADS" --json > "$dir/test.json"
    bound=$(json_field nll_bound < "$dir/test.json")
    recon=$(json_field recon < "$dir/test.json")
    kl=$(json_field kl < "$dir/test.json")
    iw=$(json_field nll_iw < "$dir/test.json")
    step=$(json_field steps < "$dir/train.json")

    draw_report_pictures "$BIN" "$dir" mnist 4
    ips=$(json_field images_per_s < "$dir/train.json")

    mkdir -p "$(dirname "$RESULTS")"
    row=$(printf '| %s | %s | %s | %s | %s | %.0f | %.2f | %.2f + %.2f | %.2f (%s) |' \
        "$(date -u +%Y-%m-%d)" "$name" "$model" "$step" "$wall" "$ips" "$bound" "$recon" "$kl" \
        "$iw" "$SAMPLES")
    table_row "$RESULTS" "| date | config |" "$(quick_header)" "$row"
    echo "draw_mnist.sh: $name: test bound $bound nats, IW NLL $iw (K = $SAMPLES); row added to $RESULTS" >&2
}

quick_header() {
    cat <<'EOF'
# DRAW on MNIST

Training data: MNIST train (first 55,000), binarised dynamically (a fresh Bernoulli sample
per batch). Test data: the 10,000 MNIST test images binarised once with seed 0x5EED
(datasets/mnist.h), not Larochelle's fixed binarisation used by the paper, so figures
are close to but not the same as the paper's 80.97 nats. Bound = reconstruction + KL in
nats per image; IW NLL = importance-weighted estimate from K posterior samples per image.

| date | config | model | steps | wall time (s) | images/s (last run) | test bound | recon + KL | IW NLL (K) |
|---|---|---|---|---|---|---|---|---|
EOF
}

# The milestone and check tables are found by their header lines (table_row), so other
# tables may stand before them in their sections.
PAPER_MARKER="| date | run | epoch | steps | lr | valid bound | test bound |"

CHECKS_MARKER="| run | epoch | steps | lr | valid bound | best | decision |"

checks_header() {
    cat <<'EOF'
### The schedule's checks

Every check of the paper runs' schedule (draw_mnist.sh writes a row at each): the
validation bound (all 5,000 images, the same noise) of the model after training at the
rate given, the best bound so far after the check (it moves only on a gain of at least
0.1 nats), and what the schedule did.

| run | epoch | steps | lr | valid bound | best | decision |
|---|---|---|---|---|---|---|
EOF
}

paper_header() {
    cat <<'EOF'
## The paper configuration to convergence (draw_mnist.sh paper, paper-noattn)

T 64, read 2x2, write 5x5 (paper-noattn: none), LSTM 256, z 100, batch 100, Adam at 1e-3
halved when the validation bound, checked every 5 epochs, is not 0.1 nats better than the
best so far, stopped after three such checks in a row (experiments/draw_mnist.sh gives the
reasons). One row per milestone (every 25 epochs) and for the final model: the learning
rate it trained at last, the validation
bound (5,000 images) that drives the schedule, the test bound (10,000 images), the
importance-weighted NLL from K posterior samples per image on the first N test images
(with the bound of those same samples and images beside it: the IW figure is never above
it), the cumulative training wall time, the load average when the row was written, and the
paper's figure for the kind of model. Test binarisation as above (seed 0x5EED). Rows
written since draw eval reports it give each test figure's standard error over the images
(± SE: the sample standard deviation of the images' figures over the square root of their
number).

    sh experiments/draw_mnist.sh paper          # resumable; run again after an interruption
    sh experiments/draw_mnist.sh paper-noattn   # to the paper run's budget

| date | run | epoch | steps | lr | valid bound | test bound | recon + KL | IW NLL (K, images; their bound) | train wall (s) | load | paper |
|---|---|---|---|---|---|---|---|---|---|---|---|
EOF
}

# run_to_convergence NAME MODEL_FLAGS PAPER_FIGURE [BATCH]: BATCH images a step (100).
run_to_convergence() {
    name=$1 model=$2 paper=$3 batch=${4:-100}
    STEPS_PER_EPOCH=$((TRAIN_IMAGES / batch))
    dir=$RUNS/draw-$name
    per=$(in_steps "$MILESTONE_STEPS" "$MILESTONE_EPOCHS" MILESTONE)
    check=$(in_steps "$SCHEDULE_STEPS" "$SCHEDULE_EPOCHS" SCHEDULE)
    max_steps=$(in_steps "$MAX_STEPS" "$MAX_EPOCHS" MAX)
    if [ "$name" = paper-noattn ]; then
        # The attention run's budget: its last milestone.
        if [ -n "${NOATTN_STEPS:-}${NOATTN_EPOCHS:-}" ]; then
            max_steps=$(in_steps "${NOATTN_STEPS:-0}" "${NOATTN_EPOCHS:-0}" NOATTN)
        elif [ -s "$RUNS/draw-paper/schedule" ]; then
            at_paper=$(cut -d' ' -f1 "$RUNS/draw-paper/schedule")
            max_steps=$((at_paper / per * per))
            [ "$max_steps" -gt 0 ] || {
                echo "draw_mnist.sh: paper-noattn trains to the paper run's last milestone, and $RUNS/draw-paper is at step $at_paper, before its first ($per): run 'paper' further or set NOATTN_EPOCHS" >&2
                exit 2
            }
        else
            echo "draw_mnist.sh: paper-noattn trains to the paper run's budget: run 'paper' first or set NOATTN_EPOCHS" >&2
            exit 2
        fi
    fi
    mkdir -p "$dir"
    # A warm restart (paper-long, paper-peephole-long) or one cosine from scratch
    # (paper-peephole-cosine; paper-peephole-cosineN, one of N epochs): the cosine decides
    # the rate.
    by_cosine=0
    case $name in
    *-long)
        by_cosine=1 max_steps=$(in_steps "$LONG_STEPS" "$LONG_EPOCHS" LONG)
        long_start "$dir" "${name%-long}" "$max_steps"
        cosine_pinned "$name" "$dir/restart" "$max_steps" "$LONG_LR" LONG_ ;;
    *-cosine | *-cosine[0-9]*)
        epochs=${name##*-cosine}
        by_cosine=1 max_steps=$(in_steps "$COSINE_STEPS" "${epochs:-$COSINE_EPOCHS}" COSINE)
        [ -s "$dir/cosine" ] || echo "0 $max_steps $LR" > "$dir/cosine"
        cosine_pinned "$name" "$dir/cosine" "$max_steps" "$LR" "LR and COSINE_" ;;
    esac
    # schedule: STEPS_AT_LAST_CHECK LR BEST STALE CONVERGED
    [ -s "$dir/schedule" ] || echo "0 $LR inf 0 0" > "$dir/schedule"
    while :; do
        read -r at lr best stale converged < "$dir/schedule"
        if [ "$converged" = 1 ] || [ "$at" -ge "$max_steps" ]; then
            echo "draw_mnist.sh: $name: finished at step $at (learning rate $lr, best valid bound $best)" >&2
            return
        fi
        # The next check, not past the next milestone nor the budget.
        target=$((at + check))
        milestone=$(((at / per + 1) * per))
        [ "$target" -le "$milestone" ] || target=$milestone
        [ "$target" -le "$max_steps" ] || target=$max_steps
        [ "$by_cosine" = 0 ] || lr=$(cosine_rate "$from" "$at" "$target" "$max_steps" "$peak")
        # shellcheck disable=SC2086
        "$BIN/draw" train --data mnist $model --batch "$batch" --lr "$lr" --clip 10 --seed "$SEED" \
            --steps "$target" --threads "$THREADS" --valid-every "$STEPS_PER_EPOCH" \
            --valid-images 1000 --checkpoint-every "$CHECKPOINT_EVERY" --resume --out "$dir" --json \
            > "$dir/train.json"
        schedule_check "$name" "$dir" "$target" "$lr" "$paper"
    done
}

# in_steps STEPS EPOCHS NAME: a length in steps, STEPS unless 0, else EPOCHS epochs (the
# settings NAME_STEPS and NAME_EPOCHS); refused with one line (exit 2) unless both are
# whole numbers and the length is not 0, before anything trains or is pinned.
in_steps() {
    for v in "$1" "$2"; do
        case $v in '' | *[!0-9]*)
            echo "draw_mnist.sh: $3_STEPS and $3_EPOCHS must be whole numbers, not '$1' and '$2'" >&2
            exit 2 ;;
        esac
    done
    n=$1
    [ "$n" -gt 0 ] || n=$(($2 * STEPS_PER_EPOCH))
    [ "$n" -gt 0 ] || { echo "draw_mnist.sh: $3_STEPS and $3_EPOCHS are both 0: no steps to train" >&2; exit 2; }
    echo "$n"
}

# long_start DIR FROM END: a warm restart's first call copies run FROM's final model into
# DIR and starts DIR's schedule at its step (the model first: cut off before the schedule,
# the copy is made again), and pins its cosine in DIR/restart: the step it starts from,
# the step END where it reaches 0 and its peak rate LONG_LR; refused with one line while
# run FROM has not converged.
long_start() {
    [ ! -s "$1/schedule" ] || return 0
    src=$RUNS/draw-$2
    from=0 ended=0
    [ ! -s "$src/schedule" ] || read -r from _ _ _ ended < "$src/schedule"
    if [ "$ended" != 1 ] || [ ! -s "$src/model.safetensors" ]; then
        echo "draw_mnist.sh: $2-long continues the $2 run's final model, and $src holds no converged run: run '$2' to its end first" >&2
        exit 2
    fi
    cp "$src/model.safetensors" "$1/model.safetensors"
    echo "$from $3 $LONG_LR" > "$1/restart"
    echo "$from $LONG_LR inf 0 0" > "$1/schedule"
}

# cosine_pinned NAME FILE END PEAK SETTINGS: sets from, max_steps and peak to the cosine
# pinned in FILE (DIR/restart, DIR/cosine), so that a resume under other settings does not
# bend the cosine half-way (a restart file of the older form, the start step alone, takes
# END and PEAK); says so on stderr, naming the SETTINGS, when they differ from the pinned
# ones.
cosine_pinned() {
    read -r from pinned_end pinned_peak < "$2"
    max_steps=${pinned_end:-$3} peak=${pinned_peak:-$4}
    if [ "$max_steps" != "$3" ] || [ "$peak" != "$4" ]; then
        echo "draw_mnist.sh: $1: the cosine started in $(dirname "$2") goes on from $peak to 0 at step $max_steps ($5* now give $4 and step $3)" >&2
    fi
}

# cosine_rate FROM AT TARGET END PEAK: a cosine run's rate for the steps AT..TARGET, the
# half cosine from PEAK at step FROM to 0 at END, taken at the segment's middle.
cosine_rate() {
    awk -v lr="$5" -v f="$1" -v a="$2" -v t="$3" -v e="$4" \
        'BEGIN { x = ((a + t) / 2 - f) / (e - f); printf "%g", lr * 0.5 * (1 + cos(3.14159265358979 * x)) }'
}

# schedule_check NAME DIR STEPS LR PAPER: the validation bound and the schedule's decision;
# at a milestone, at the budget or on convergence also the test evaluations and the row.
schedule_check() {
    name=$1 dir=$2 steps=$3 lr=$4 paper=$5
    "$BIN/draw" eval --model "$dir/model.safetensors" --data mnist --split valid \
        --threads "$THREADS" --json > "$dir/valid.json"
    vb=$(json_field nll_bound < "$dir/valid.json")
    # An improvement of MIN_DELTA resets the count; otherwise halve and count.
    read -r _ _ best stale _ < "$dir/schedule"
    better=$(awk -v v="$vb" -v b="$best" -v d="$MIN_DELTA" 'BEGIN { print (b == "inf" || v + 0 < b - d) ? 1 : 0 }')
    next_lr=$lr
    if [ "$better" = 1 ]; then
        best=$vb stale=0
    elif [ "$by_cosine" = 0 ]; then
        stale=$((stale + 1))
        next_lr=$(awk -v l="$lr" 'BEGIN { printf "%g", l / 2 }')
    fi
    converged=0
    [ "$stale" -lt "$PATIENCE" ] || converged=1
    epoch=$(awk -v s="$steps" -v e="$STEPS_PER_EPOCH" 'BEGIN { r = s / e; if (r == int(r)) printf "%d", r; else printf "%.2f", r }')
    if [ $((steps % per)) -eq 0 ] || [ "$steps" -ge "$max_steps" ] || [ "$converged" = 1 ]; then
        milestone_row "$name" "$dir" "$steps" "$epoch" "$lr" "$vb" "$paper"
    fi
    if [ "$better" = 1 ]; then decision="a gain: the new best"
    elif [ "$by_cosine" = 1 ] && [ "$steps" -ge "$max_steps" ]; then decision="no gain (the cosine's end)"
    elif [ "$by_cosine" = 1 ]; then decision="no gain (the cosine goes on)"
    elif [ "$converged" = 1 ]; then decision="no gain, $stale in a row: converged"
    else decision="no gain ($stale in a row): halved to $next_lr"; fi
    check_row "$name" "$steps" "$epoch" "$lr" "$vb" "$best" "$decision"
    echo "$steps $next_lr $best $stale $converged" > "$dir/schedule"
    echo "draw_mnist.sh: $name: epoch $epoch: valid $vb (best $best); next learning rate $next_lr, converged $converged" >&2
}

# check_row NAME STEPS EPOCH LR VALID BEST DECISION: the check's row in the results'
# table of checks. Written just before the schedule file: a check cut off before its row
# is evaluated again and written then (cut off in the moment between the two, its row
# would stand twice).
check_row() {
    row=$(printf '| %s | %s | %s | %s | %.2f | %.2f | %s |' "$1" "$3" "$2" "$4" "$5" "$6" "$7")
    table_row "$RESULTS" "$CHECKS_MARKER" "$(checks_header)" "$row"
}

# with_se FILE KEY: FILE's (draw eval --json) figure under KEY to two decimals, with its
# standard error over the images (KEY_se) as "± SE" where the file has one.
with_se() {
    v=$(json_field "$2" < "$1")
    se=$(json_field "$2_se" < "$1")
    if [ -n "$se" ]; then printf '%.2f ± %.2f' "$v" "$se"; else printf '%.2f' "$v"; fi
}

# milestone_row NAME DIR STEPS EPOCH LR VALID PAPER: the test bound and the
# importance-weighted NLL, and the row.
milestone_row() {
    name=$1 dir=$2 steps=$3 epoch=$4 lr=$5 vb=$6 paper=$7
    m="$dir/model.safetensors"
    "$BIN/draw" eval --model "$m" --data mnist --split test --threads "$THREADS" --json > "$dir/test.json"
    "$BIN/draw" eval --model "$m" --data mnist --split test --samples "$IW_SAMPLES" \
        --limit "$IW_IMAGES" --threads "$THREADS" --per-image "$dir/test_iw.step$steps.txt" \
        --json > "$dir/test_iw.json"
    tb=$(with_se "$dir/test.json" nll_bound)
    recon=$(json_field recon < "$dir/test.json")
    kl=$(json_field kl < "$dir/test.json")
    iw=$(with_se "$dir/test_iw.json" nll_iw)
    iw_n=$(json_field images < "$dir/test_iw.json")
    iw_bound=$(json_field nll_bound < "$dir/test_iw.json")  # the bound of the same samples
    load=$(cut -d' ' -f1 /proc/loadavg)
    row=$(printf '| %s | %s | %s | %s | %s | %.2f | %s | %.2f + %.2f | %s (%s, %s; bound %.2f) | %s | %s | %s |' \
        "$(date -u +%Y-%m-%d)" "$name" "$epoch" "$steps" "$lr" "$vb" "$tb" "$recon" "$kl" "$iw" \
        "$IW_SAMPLES" "$iw_n" "$iw_bound" "$(train_wall "$dir")" "$load" "$paper")
    table_row "$RESULTS" "$PAPER_MARKER" "$(paper_header)" "$row"
    draw_report_pictures "$BIN" "$dir" mnist 4
    echo "draw_mnist.sh: $name: epoch $epoch: test $tb, IW NLL $iw (K $IW_SAMPLES, $iw_n images)" >&2
}

for cfg in "$@"; do run_config "$cfg"; done
