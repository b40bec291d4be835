#!/bin/sh
# sat_decoders.sh: the captioner's two decoders on synthetic scenes, Show-Attend-Tell's
# attention LSTM against the Transformer decoder (cli/caption_train.h, --decoder), at the
# same budget of CPU seconds, over several seeds; the test split scored with beam 3: BLEU-4,
# CIDEr-D, grounding and object F1 (mean and spread over seeds). Then the Transformer's
# grounding by decoder layer and by cross-attention head (caption eval --map-layer,
# --map-head: the same model, its maps read from another layer or head), for every seed's
# run and for the first seed's runs of other depths (DEPTHS, at the same budget). Writes
# experiments/results/sat_decoders.md.
#
#   CPU_SECONDS=300 sh experiments/sat_decoders.sh     (the default: 300 CPU seconds a run)
#   CPU_SECONDS=600 SEEDS="1 2" DEPTHS="" sh experiments/sat_decoders.sh
#   QUICK=1 sh experiments/sat_decoders.sh             (make reproduce's quick path: one
#                                                      seed, STEPS steps, EVAL_COUNT scenes)
# The budget rule: each run trains until the first step that ends past CPU_SECONDS of its
# process's CPU time (user + system, all its threads; steps, validations and checkpoints;
# caption train --cpu-budget), counted across --resume. CPU time, unlike wall time, does not
# grow with the load of a shared machine, so runs trained at different loads get the same
# budget. MINUTES instead gives a wall-clock budget per invocation (the old rule), STEPS a
# step count.
# Runs go two at a time (PAIRED=1, the default: each seed's LSTM and Transformer, then the
# depth runs in pairs; PAIRED=0 one after another). Resumable: a run already trained and
# scored at this budget is not run again (its flags are in RUNS/sat_decoders_*/budget.txt);
# a CPU- or step-budget run that was cut off continues from its last checkpoint (every
# CHECKPOINT_EVERY steps, default 200) with --resume; a wall-clock run cut short starts
# again. A run scored before `caption eval` reported object F1 is scored again, not trained.
# Other knobs: BIN (or ATTEND_BIN), RUNS (default runs), EVAL_COUNT (test scenes scored, 0 =
# all 1,000), LAYERS (the Transformer's decoder layers, default 2), DEPTHS (other layer
# counts trained for the first seed, default "1 3"), HEADS (its heads, default 4: the
# per-head rows), EXTRA (more flags for caption train), RESULTS (the page, default
# $RESULTS_DIR/sat_decoders.md, RESULTS_DIR experiments/results).
set -eu
. "$(dirname "$0")/common.sh"
QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
    SEEDS=${SEEDS:-1} STEPS=${STEPS:-100} EVAL_COUNT=${EVAL_COUNT:-100} DEPTHS=${DEPTHS:-}
fi
CPU_SECONDS=${CPU_SECONDS:-300}
MINUTES=${MINUTES:-}
STEPS=${STEPS:-}
SEEDS=${SEEDS:-"1 2 3"}
THREADS=${THREADS:-1}
PAIRED=${PAIRED:-1}
EVAL_COUNT=${EVAL_COUNT:-0}
LAYERS=${LAYERS:-2}
DEPTHS=${DEPTHS-"1 3"}
HEADS=${HEADS:-4}
CHECKPOINT_EVERY=${CHECKPOINT_EVERY:-200}
EXTRA=${EXTRA:-}
BIN=${ATTEND_BIN:-${BIN:-bin}}
RUNS=${RUNS:-runs}
table=${RESULTS:-${RESULTS_DIR:-experiments/results}/sat_decoders.md}
require_current_program sat_decoders.sh "$BIN/caption"
mkdir -p "$(dirname "$table")" "$RUNS"

if [ -n "$STEPS" ]; then
    budget="--steps $STEPS" budget_words="$STEPS steps" budget_env="STEPS=$STEPS" resumable=1
elif [ -n "$MINUTES" ]; then
    budget="--minutes $MINUTES" budget_words="$MINUTES minutes of training (wall clock)"
    budget_env="MINUTES=$MINUTES" resumable=0
else
    budget="--cpu-budget $CPU_SECONDS" resumable=1 budget_env="CPU_SECONDS=$CPU_SECONDS"
    budget_words="$CPU_SECONDS CPU seconds of training (the first step past them ends it)"
fi

# field KEY FILE: KEY's number in FILE's JSON; nothing (and status 0) when FILE is missing.
field() {
    [ ! -s "$2" ] || json_field "$1" < "$2"
}

# flags_of DECODER [LAYERS]: caption train's flags for that decoder.
flags_of() {
    case "$1" in
        lstm) echo "--decoder lstm" ;;
        transformer) echo "--decoder transformer --layers ${2:-$LAYERS}" ;;
    esac
}

# train_and_score DIR DECODER SEED [LAYERS]: trains and scores one run unless DIR holds one
# at this budget already; resumes one cut off (resumable budgets, the same flags); non-zero
# when either step failed (called under ||, where set -e does not stop it, so each step
# says so itself).
train_and_score() {
    out=$1
    flags="$budget $(flags_of "$2" "${4:-}") --seed $3 $EXTRA"
    want="$flags eval-count $EVAL_COUNT"
    if [ -s "$out/eval.json" ] && [ "$(cat "$out/budget.txt" 2> /dev/null)" = "$want" ]; then
        if [ -n "$(field object_f1 "$out/eval.json")" ]; then
            echo "sat_decoders.sh: $out is trained and scored at this budget already" >&2
            return 0
        fi
        echo "scoring $out again (its eval.json has no object F1)" >&2
        score "$out" || return 1
        return 0
    fi
    resume=""
    if [ "$resumable" = 1 ] && [ -s "$out/state.safetensors" ] &&
        [ "$(cat "$out/train_flags.txt" 2> /dev/null)" = "$flags" ]; then
        resume=--resume
        echo "resuming $out ($flags)" >&2
    else
        rm -rf "$out"
        mkdir -p "$out"
        echo "$flags" > "$out/train_flags.txt"
        echo "training $out ($want)" >&2
    fi
    # shellcheck disable=SC2086
    "$BIN/caption" train --data scenes --out "$out" $flags --checkpoint-every "$CHECKPOINT_EVERY" \
        --threads "$THREADS" --quiet --json $resume > "$out/train.json.tmp" || return 1
    mv "$out/train.json.tmp" "$out/train.json"
    score "$out" || return 1
    echo "$want" > "$out/budget.txt"
}

# score DIR [LAYER HEAD]: DIR/eval.json, the test split with beam 3 (written whole or not at
# all); with LAYER and HEAD, DIR/eval_map_LAYER_HEAD.json, the maps of that decoder layer
# and head (-1: the mean over heads).
score() {
    name=eval.json maps=""
    if [ $# -ge 3 ]; then name="eval_map_$2_$3.json" maps="--map-layer $2 --map-head $3"; fi
    # shellcheck disable=SC2086
    "$BIN/caption" eval --model "$1/model.safetensors" --data scenes --split test --beam 3 \
        --count "$EVAL_COUNT" --threads "$THREADS" $maps --quiet --json > "$1/$name.tmp" || return 1
    mv "$1/$name.tmp" "$1/$name"
}

# score_maps DIR LAYERS: every layer's maps (mean over heads) and every (layer, head)'s,
# each scored once (a run trained again starts in an emptied DIR).
score_maps() {
    l=0
    while [ "$l" -lt "$2" ]; do
        for h in -1 $(seq 0 $((HEADS - 1))); do
            f="$1/eval_map_${l}_$h.json"
            [ -s "$f" ] || score "$1" "$l" "$h" || return 1
        done
        l=$((l + 1))
    done
}

run_dir() { echo "$RUNS/sat_decoders_$1_seed$2"; }
depth_dir() { echo "$RUNS/sat_decoders_transformer_L$1_seed$2"; }

# pair A B: two commands (each a quoted word list), side by side with PAIRED=1; sets failed.
failed=0
pair() {
    if [ "$PAIRED" = 1 ] && [ -n "$2" ]; then
        eval "$1" & p1=$!
        eval "$2" & p2=$!
        wait "$p1" || failed=1
        wait "$p2" || failed=1
    else
        eval "$1" || failed=1
        [ -z "$2" ] || eval "$2" || failed=1
    fi
}

first=${SEEDS%% *}
for seed in $SEEDS; do
    pair "train_and_score $(run_dir lstm "$seed") lstm $seed" \
        "train_and_score $(run_dir transformer "$seed") transformer $seed"
done
# The depths other than LAYERS, first seed, two at a time.
depths=""
for n in $DEPTHS; do [ "$n" = "$LAYERS" ] || depths="$depths $n"; done
# shellcheck disable=SC2086
set -- $depths
while [ $# -gt 0 ]; do
    a="train_and_score $(depth_dir "$1" "$first") transformer $first $1"
    b=""
    [ $# -lt 2 ] || b="train_and_score $(depth_dir "$2" "$first") transformer $first $2"
    pair "$a" "$b"
    shift
    [ $# -eq 0 ] || shift
done
# Grounding by layer and head: eval only, on the trained models (every seed's).
for seed in $SEEDS; do
    [ ! -s "$(run_dir transformer "$seed")/eval.json" ] || score_maps "$(run_dir transformer "$seed")" "$LAYERS" || failed=1
done
for n in $depths; do
    [ ! -s "$(depth_dir "$n" "$first")/eval.json" ] || score_maps "$(depth_dir "$n" "$first")" "$n" || failed=1
done
[ "$failed" = 0 ] || { echo "sat_decoders.sh: a run failed (see above)" >&2; exit 1; }

# stats KEY DECODER: "mean +- spread (n)" over the seeds' runs; spread = the sample
# standard deviation (n - 1), "-" with one seed.
stats() {
    for seed in $SEEDS; do field "$1" "$(run_dir "$2" "$seed")/eval.json"; done |
        awk '$1 != "" && $1 != "nan" && $1 != "null" { x[n++] = $1; s += $1 }
             END {
                 if (!n) { print "- | -"; exit }
                 m = s / n; v = 0
                 for (i = 0; i < n; i++) v += (x[i] - m) ^ 2
                 if (n > 1) printf "%.4f | %.4f\n", m, sqrt(v / (n - 1)); else printf "%.4f | -\n", m
             }'
}
# wilson FILE: the 95 % Wilson interval of FILE's grounding over its object_words (the
# words taken as independent trials), "[lo, hi]"; "-" without them.
wilson() {
    awk -v p="$(field grounding "$1")" -v n="$(field object_words "$1")" 'BEGIN {
        if (p == "" || n == "" || n + 0 <= 0) { print "-"; exit }
        z = 1.959964; c = (p + z * z / (2 * n)) / (1 + z * z / n)
        h = z * sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        printf "[%.3f, %.3f]\n", c - h, c + h
    }'
}
per_seed() {
    for seed in $SEEDS; do
        d=$(run_dir "$1" "$seed")
        printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$1" "$seed" "$(field steps "$d/train.json")" \
            "$(field cpu_seconds "$d/train.json")" \
            "$(field bleu4 "$d/eval.json")" "$(field cider "$d/eval.json")" "$(field grounding "$d/eval.json")" \
            "$(wilson "$d/eval.json")" "$(field object_f1 "$d/eval.json")"
    done
}
# map_rows DIR LAYERS SEED: a row per layer: the mean over heads' grounding, then each head's.
map_rows() {
    l=0
    while [ "$l" -lt "$2" ]; do
        row="| $3 | $2 | $l | $(field grounding "$1/eval_map_${l}_-1.json")"
        for h in $(seq 0 $((HEADS - 1))); do
            row="$row | $(field grounding "$1/eval_map_${l}_$h.json")"
        done
        echo "$row |"
        l=$((l + 1))
    done
}
count_words="the 1,000 test scenes"
[ "$EVAL_COUNT" = 0 ] || count_words="the first $EVAL_COUNT test scenes"
{
    echo "# Decoders on synthetic scenes: the attention LSTM against the Transformer"
    echo
    echo "Command: \`$budget_env SEEDS=\"$SEEDS\" THREADS=$THREADS PAIRED=$PAIRED EVAL_COUNT=$EVAL_COUNT LAYERS=$LAYERS DEPTHS=\"$DEPTHS\" EXTRA=\"$EXTRA\" sh experiments/sat_decoders.sh\`, $(date -u +%Y-%m-%d), $(uname -m), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg) when the page was written."
    echo
    echo "The budget: $budget_words on $THREADS thread(s)$( [ "$PAIRED" = 1 ] && echo ", two runs side by side")."
    echo "CPU seconds are the training process's CPU time (user + system, all its threads: steps,"
    echo "validations, checkpoints; \`caption train --cpu-budget\`), counted across --resume: unlike"
    echo "wall time they do not grow with the load of a shared machine, so two runs at different"
    echo "loads get the same budget. Each run: its decoder's default sizes (the LSTM: embedding 128,"
    echo "hidden 256, additive attention 128; the Transformer: d_model 128, 4 heads, d_ff 256, $LAYERS"
    echo "decoder layers, no encoder layers, dropout 0.1, maps from the last layer's mean over heads)"
    echo "on the default CNN over 64 x 64 scenes; the model kept: the best on validation BLEU-4"
    echo "(validated at each epoch's end and when the budget ran out),"
    echo "$count_words with beam 3. Scores 0..1 (CIDEr-D unscaled; both as coco-caption computes them);"
    echo "grounding = the share of object words whose attention peak falls in that object's box;"
    echo "object F1 = the colour+class objects the captions name (\"a red seven\") against the"
    echo "scenes' objects, micro-averaged over the scenes scored (seq/object_f1.h)."
    echo
    echo "| decoder | BLEU-4 mean | spread | CIDEr-D mean | spread | grounding mean | spread | object F1 mean | spread |"
    echo "|---|---|---|---|---|---|---|---|---|"
    for dec in lstm transformer; do
        echo "| $dec | $(stats bleu4 "$dec") | $(stats cider "$dec") | $(stats grounding "$dec") | $(stats object_f1 "$dec") |"
    done
    echo
    echo "Spread: the standard deviation over the seeds (n - 1; \"-\" with one seed). Each seed (CPU s:"
    echo "the CPU seconds its training spent, the last step's and the final validation's overshoot"
    echo "included; the grounding's interval: Wilson's 95 % over the run's object words, taken as"
    echo "independent, so it says what the test set's size allows, not what a seed does):"
    echo
    echo "| decoder | seed | steps | CPU s | BLEU-4 | CIDEr-D | grounding | its 95 % interval | object F1 |"
    echo "|---|---|---|---|---|---|---|---|---|"
    per_seed lstm
    per_seed transformer
    echo
    echo "## Grounding by layer, head and depth (Transformer)"
    echo
    echo "Each row is one trained model read from one decoder layer's cross-attention (caption eval"
    echo "--map-layer, --map-head): the mean over heads, then each head alone (a head's number is"
    echo "its place in its layer, nothing shared between seeds). The captions are the model's"
    echo "whichever maps are read (the Transformer's loss has no attention term), so BLEU-4,"
    echo "CIDEr-D and object F1 are those of the run's row above or below. Every seed's $LAYERS-layer"
    echo "run, then seed $first's runs of other depths at the same budget."
    echo
    hrow="| seed | decoder layers | layer | mean over heads"
    hsep="|---|---|---|---"
    for h in $(seq 0 $((HEADS - 1))); do hrow="$hrow | head $h"; hsep="$hsep|---"; done
    echo "$hrow |"
    echo "$hsep|"
    for seed in $SEEDS; do
        d=$(run_dir transformer "$seed")
        [ ! -s "$d/eval.json" ] || map_rows "$d" "$LAYERS" "$seed"
    done
    for n in $depths; do
        d=$(depth_dir "$n" "$first")
        [ ! -s "$d/eval.json" ] || map_rows "$d" "$n" "$first"
    done
    echo
    echo "Depth (seed $first, the same budget):"
    echo
    echo "| decoder layers | steps | CPU s | BLEU-4 | CIDEr-D | grounding (last layer) | object F1 |"
    echo "|---|---|---|---|---|---|---|"
    for n in $LAYERS $depths; do
        if [ "$n" = "$LAYERS" ]; then d=$(run_dir transformer "$first"); else d=$(depth_dir "$n" "$first"); fi
        [ -s "$d/eval.json" ] || continue
        echo "| $n | $(field steps "$d/train.json") | $(field cpu_seconds "$d/train.json") | $(field bleu4 "$d/eval.json") | $(field cider "$d/eval.json") | $(field grounding "$d/eval.json") | $(field object_f1 "$d/eval.json") |"
    done
} > "$table"
cat "$table"
echo "wrote $table" >&2
