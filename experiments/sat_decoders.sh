#!/bin/sh
# sat_decoders.sh: the captioner's two decoders on synthetic scenes, Show-Attend-Tell's
# attention LSTM against the Transformer decoder (cli/caption_train.h, --decoder), at the
# same wall-clock budget, over several seeds; the test split scored with beam 3: BLEU-4,
# CIDEr-D, grounding and object F1 (mean and spread over seeds). Then, for the first seed, the
# Transformer's grounding by the decoder layer whose cross-attention makes the maps
# (--map-layer, each layer of the 2-layer default). Writes experiments/results/sat_decoders.md.
#
#   MINUTES=30 sh experiments/sat_decoders.sh          (30 minutes of training per run)
#   MINUTES=2 SEEDS="1 2 3" sh experiments/sat_decoders.sh   (an early point)
#   QUICK=1 sh experiments/sat_decoders.sh             (make reproduce's quick path: one
#                                                      seed, STEPS steps, EVAL_COUNT scenes)
# Each seed's LSTM and Transformer train side by side (PAIRED=1, the default: two processes
# of THREADS threads each at once), so the two decoders of a seed see the same load of the
# machine; PAIRED=0 trains one after the other. A run already trained and scored at this
# budget is not run again (its budget is in RUNS/sat_decoders_*/budget.txt), so a killed
# script picks up at the run it was in; a wall-clock run that was cut short starts again.
# A run scored before `caption eval` reported object F1 is scored again, not trained.
# Other knobs: BIN (or ATTEND_BIN), RUNS (default runs), STEPS (a step budget instead of
# MINUTES), EVAL_COUNT (test scenes scored, 0 = all 1,000), LAYERS (Transformer decoder
# layers, default 2), EXTRA (more flags for caption train), RESULTS (the page, default
# $RESULTS_DIR/sat_decoders.md, RESULTS_DIR experiments/results).
set -eu
. "$(dirname "$0")/common.sh"
QUICK=${QUICK:-0}
if [ "$QUICK" = 1 ]; then
    SEEDS=${SEEDS:-1} STEPS=${STEPS:-100} EVAL_COUNT=${EVAL_COUNT:-100}
fi
MINUTES=${MINUTES:-30}
STEPS=${STEPS:-}
SEEDS=${SEEDS:-"1 2 3"}
THREADS=${THREADS:-1}
PAIRED=${PAIRED:-1}
EVAL_COUNT=${EVAL_COUNT:-0}
LAYERS=${LAYERS:-2}
EXTRA=${EXTRA:-}
BIN=${ATTEND_BIN:-${BIN:-bin}}
RUNS=${RUNS:-runs}
table=${RESULTS:-${RESULTS_DIR:-experiments/results}/sat_decoders.md}
require_current_program sat_decoders.sh "$BIN/caption"
mkdir -p "$(dirname "$table")" "$RUNS"

if [ -n "$STEPS" ]; then
    budget="--steps $STEPS" budget_words="$STEPS steps"
else
    budget="--minutes $MINUTES" budget_words="$MINUTES minutes of training"
fi

field() { json_field "$1" < "$2"; }

# flags_of DECODER MAP_LAYER: caption train's flags for that decoder.
flags_of() {
    case "$1" in
        lstm) echo "--decoder lstm" ;;
        transformer) echo "--decoder transformer --layers $LAYERS --map-layer $2" ;;
    esac
}

# train_and_score DIR DECODER SEED MAP_LAYER [BUDGET]: trains and scores one run (BUDGET:
# caption train's budget flags, default the script's) unless DIR holds one at this budget
# already; non-zero when either step failed (called under ||, where
# set -e does not stop it, so each step says so itself).
train_and_score() {
    out=$1 run_budget=${5:-$budget}
    want="$run_budget $(flags_of "$2" "$4") --seed $3 $EXTRA eval-count $EVAL_COUNT"
    if [ -s "$out/eval.json" ] && [ "$(cat "$out/budget.txt" 2> /dev/null)" = "$want" ]; then
        if [ -n "$(field object_f1 "$out/eval.json")" ]; then
            echo "sat_decoders.sh: $out is trained and scored at this budget already" >&2
            return 0
        fi
        echo "scoring $out again (its eval.json has no object F1)" >&2
        score "$out" || return 1
        return 0
    fi
    rm -rf "$out"
    mkdir -p "$out"
    echo "training $out ($want)" >&2
    # shellcheck disable=SC2046,SC2086
    "$BIN/caption" train --data scenes --out "$out" $run_budget $(flags_of "$2" "$4") \
        --threads "$THREADS" --seed "$3" --quiet --json $EXTRA > "$out/train.json" || return 1
    score "$out" || return 1
    echo "$want" > "$out/budget.txt"
}

# score DIR: DIR/eval.json, the test split with beam 3 (written whole or not at all).
score() {
    "$BIN/caption" eval --model "$1/model.safetensors" --data scenes --split test --beam 3 \
        --count "$EVAL_COUNT" --threads "$THREADS" --quiet --json > "$1/eval.json.tmp" || return 1
    mv "$1/eval.json.tmp" "$1/eval.json"
}

run_dir() { echo "$RUNS/sat_decoders_$1_seed$2"; }

failed=0
for seed in $SEEDS; do
    if [ "$PAIRED" = 1 ]; then
        train_and_score "$(run_dir lstm "$seed")" lstm "$seed" -1 & p1=$!
        train_and_score "$(run_dir transformer "$seed")" transformer "$seed" -1 & p2=$!
        wait "$p1" || failed=1
        wait "$p2" || failed=1
    else
        train_and_score "$(run_dir lstm "$seed")" lstm "$seed" -1 || failed=1
        train_and_score "$(run_dir transformer "$seed")" transformer "$seed" -1 || failed=1
    fi
done
# The map layers of the first seed: the default run above maps from the last layer; every
# other layer is a run of its own (the flag chooses the maps the model keeps and scores,
# nothing of its training), trained to the steps the default run reached: the same seed
# and steps give the same weights, so the rows differ in the map layer alone.
first=${SEEDS%% *}
last_layer=$((LAYERS - 1))
first_steps=$(field steps "$(run_dir transformer "$first")/train.json" 2> /dev/null || true)
layer=0
while [ "$layer" -lt "$last_layer" ] && [ -n "$first_steps" ]; do
    train_and_score "$RUNS/sat_decoders_transformer_seed${first}_map$layer" transformer "$first" "$layer" \
        "--steps $first_steps" || failed=1
    layer=$((layer + 1))
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
per_seed() {
    for seed in $SEEDS; do
        d=$(run_dir "$2" "$seed")
        printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$2" "$seed" "$(field steps "$d/train.json")" \
            "$(field bleu4 "$d/eval.json")" "$(field cider "$d/eval.json")" "$(field grounding "$d/eval.json")" \
            "$(field object_f1 "$d/eval.json")"
    done
}
count_words="the 1,000 test scenes"
[ "$EVAL_COUNT" = 0 ] || count_words="the first $EVAL_COUNT test scenes"
{
    echo "# Decoders on synthetic scenes: the attention LSTM against the Transformer"
    echo
    echo "Command: \`$( [ -n "$STEPS" ] && echo "STEPS=$STEPS" || echo "MINUTES=$MINUTES") SEEDS=\"$SEEDS\" THREADS=$THREADS PAIRED=$PAIRED EVAL_COUNT=$EVAL_COUNT LAYERS=$LAYERS EXTRA=\"$EXTRA\" sh experiments/sat_decoders.sh\`, $(date -u +%Y-%m-%d), $(uname -m), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg) when the page was written."
    echo "Each run: default configuration of its decoder (the Transformer with $LAYERS decoder layers,"
    echo "maps from the last), $budget_words on $THREADS thread(s)$( [ "$PAIRED" = 1 ] && echo ", a seed's two runs side by side"),"
    echo "the model kept: the best on validation BLEU-4 (the weight average, validated at each epoch's"
    echo "end and when the budget ran out),"
    echo "$count_words with beam 3. Scores 0..1 (CIDEr-D unscaled); grounding = the share of"
    echo "object words whose attention peak falls in that object's box; object F1 = the"
    echo "colour+class objects the captions name (\"a red seven\") against the scenes' objects,"
    echo "micro-averaged over the scenes scored (seq/object_f1.h)."
    echo
    echo "| decoder | BLEU-4 mean | spread | CIDEr-D mean | spread | grounding mean | spread | object F1 mean | spread |"
    echo "|---|---|---|---|---|---|---|---|---|"
    for dec in lstm transformer; do
        echo "| $dec | $(stats bleu4 "$dec") | $(stats cider "$dec") | $(stats grounding "$dec") | $(stats object_f1 "$dec") |"
    done
    echo
    echo "Spread: the standard deviation over the seeds (n - 1). Each seed:"
    echo
    echo "| decoder | seed | steps | BLEU-4 | CIDEr-D | grounding | object F1 |"
    echo "|---|---|---|---|---|---|---|"
    per_seed x lstm
    per_seed x transformer
    echo
    echo "## Grounding by map layer (Transformer, seed $first)"
    echo
    echo "| map layer | steps | BLEU-4 | CIDEr-D | grounding |"
    echo "|---|---|---|---|---|"
    layer=0
    while [ "$layer" -le "$last_layer" ]; do
        if [ "$layer" = "$last_layer" ]; then d=$(run_dir transformer "$first"); else d="$RUNS/sat_decoders_transformer_seed${first}_map$layer"; fi
        echo "| $layer | $(field steps "$d/train.json") | $(field bleu4 "$d/eval.json") | $(field cider "$d/eval.json") | $(field grounding "$d/eval.json") |"
        layer=$((layer + 1))
    done
    echo
    echo "Each layer's row is a model trained with that --map-layer; its maps are the mean over"
    echo "heads of that layer's cross-attention (no figure per head: \`caption eval\` scores the"
    echo "mean). The flag chooses only which maps are kept (the Transformer's loss has no attention"
    echo "term), and the other layers' runs train to the steps the last layer's run reached, so"
    echo "with the same seed the rows are one model whose maps are read from another layer"
    echo "(so their captions, and object F1, are the same)."
} > "$table"
cat "$table"
echo "wrote $table" >&2
