#!/bin/sh
# sat_pretrained.sh: Xu et al.'s (2015) recipe on a frozen VGG-19, shared by
# sat_flickr8k.sh and sat_coco.sh (which set NAME, TITLE, DATA and the paper's numbers and
# say where each setting comes from). Four stages, each resumable:
#   1. features  caption features: VGG-19 conv5_4 at IMAGE_SIZE px over every image, once
#                (FEATURES; a complete cache is left alone, an interrupted one resumed)
#   2. train     caption train --features, one epoch per invocation (--resume), validating
#                BLEU-4 (beam VAL_BEAM) each epoch, until PATIENCE epochs pass without a
#                better validation BLEU-4 or MAX_EPOCHS; with STEPS, one run to that step
#   3. eval      caption eval on the test split with the best model, beam BEAM
#   4. table     a row appended to RESULTS_DIR/NAME.md beside the paper's BLEU-1..4 (x100)
# Usage: sh experiments/sat_pretrained.sh [--hard]   (with the variables below set)
# --hard trains hard (stochastic) attention instead of soft.
set -eu
: "${NAME:?}" "${TITLE:?}" "${DATA:?}" "${VGG19:?set VGG19 to the VGG-19 weights (safetensors; README: weights)}"
: "${PAPER_SOFT:?}" "${PAPER_HARD:?}"
variant=soft
attention=additive
for a in "$@"; do
    case $a in
    --hard) variant=hard attention=hard ;;
    *) echo "$NAME: unknown argument '$a' (--hard or nothing)" >&2; exit 2 ;;
    esac
done
BIN=${BIN:-bin}
RUNS=${RUNS:-runs}
THREADS=${THREADS:-2}
IMAGE_SIZE=${IMAGE_SIZE:-224}
FEATURES=${FEATURES:-$RUNS/${NAME}_vgg19_${IMAGE_SIZE}.features}
EMBED=${EMBED:-512} HIDDEN=${HIDDEN:-1800} ATTN_DIM=${ATTN_DIM:-512}
DROPOUT=${DROPOUT:-0.5} LAMBDA=${LAMBDA:-1} LR=${LR:-0.0002} BATCH=${BATCH:-64}
MIN_COUNT=${MIN_COUNT:-1} MAX_LEN=${MAX_LEN:-40}
PATIENCE=${PATIENCE:-10} MAX_EPOCHS=${MAX_EPOCHS:-100}
BEAM=${BEAM:-5} VAL_COUNT=${VAL_COUNT:-0}
VAL_BEAM=${VAL_BEAM:-$BEAM}
STEPS=${STEPS:-}
SEED=${SEED:-1}
out="$RUNS/${NAME}_$variant"
table="${RESULTS_DIR:-experiments/results}/$NAME.md"
mkdir -p "$RUNS" "$out" "$(dirname "$table")"
field() { sed -n "s/.*\"$1\": \([^,}]*\).*/\1/p" "$2" | tr -d '"'; }

echo "$NAME [1/4] features: $FEATURES" >&2
"$BIN/caption" features --encoder "vgg19:$VGG19" --data "$DATA" --out "$FEATURES" \
    --image-size "$IMAGE_SIZE" --threads "$THREADS" --quiet

# One invocation of caption train up to budget $1 (--epochs N or --steps N).
train_to() {
    resume=""
    [ -f "$out/state.safetensors" ] && resume="--resume"
    # shellcheck disable=SC2086
    "$BIN/caption" train --data "$DATA" --features "$FEATURES" --out "$out" $1 $resume \
        --attention "$attention" --query previous --lambda "$LAMBDA" --dropout "$DROPOUT" \
        --embed "$EMBED" --hidden "$HIDDEN" --attn-dim "$ATTN_DIM" --batch "$BATCH" \
        --lr "$LR" --lr-decay 1 --ema 0 --min-count "$MIN_COUNT" --max-len "$MAX_LEN" \
        --val-beam "$VAL_BEAM" --length-alpha 0 --val-count "$VAL_COUNT" \
        --threads "$THREADS" --seed "$SEED" --quiet --json > "$out/train.json.new"
    mv "$out/train.json.new" "$out/train.json"
}

if [ -n "$STEPS" ]; then
    echo "$NAME [2/4] train ($variant attention) to step $STEPS" >&2
    train_to "--steps $STEPS"
    stop="step budget $STEPS"
else
    epoch=1
    if [ -s "$out/train.json" ]; then
        epoch=$(awk -v e="$(field epochs "$out/train.json")" 'BEGIN { printf "%d", e + 1.5 }')
    fi
    stop="$MAX_EPOCHS epochs"
    while [ "$epoch" -le "$MAX_EPOCHS" ]; do
        echo "$NAME [2/4] train ($variant attention): epoch $epoch" >&2
        train_to "--epochs $epoch"
        since=$(awk -v s="$(field steps "$out/train.json")" -v e="$(field epochs "$out/train.json")" \
            -v b="$(field best_step "$out/train.json")" \
            'BEGIN { if (b == "null" || e <= 0) print 0; else printf "%d", (s - b) / (s / e) + 0.5 }')
        if [ "$since" -ge "$PATIENCE" ]; then
            stop="early stop: no better validation BLEU-4 in $PATIENCE epochs"
            break
        fi
        epoch=$((epoch + 1))
    done
fi

echo "$NAME [3/4] eval: test split, beam $BEAM" >&2
"$BIN/caption" eval --model "$out/model.safetensors" --data "$DATA" --features "$FEATURES" \
    --split test --beam "$BEAM" --length-alpha 0 --threads "$THREADS" --quiet --json \
    --results "$out/results_test.json" > "$out/eval.json"

echo "$NAME [4/4] table: $table" >&2
if [ ! -f "$table" ]; then
    {
        echo "# Show, Attend and Tell on $TITLE: frozen VGG-19 features"
        echo
        echo "Rows from \`sh experiments/$NAME.sh [--hard]\`, one per run: VGG-19 conv5_4 (at $IMAGE_SIZE px;"
        echo "14 x 14 x 512 at 224) computed once (\`caption features\`), the decoder trained on them (\`caption train"
        echo "--features\`), the best model on validation BLEU-4 decoded on the test split with beam $BEAM."
        echo "BLEU x100 (coco-caption's BLEU); the paper's are Xu et al. 2015, Table 1."
        echo
        echo "| date | attention | epochs | steps | stopped | images/s (train) | BLEU-1 | BLEU-2 | BLEU-3 | BLEU-4 | paper BLEU-1 | paper BLEU-2 | paper BLEU-3 | paper BLEU-4 |"
        echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    } > "$table"
fi
paper=$PAPER_SOFT
[ "$variant" = soft ] || paper=$PAPER_HARD
t="$out/train.json" e="$out/eval.json"
x100() { awk -v v="$1" 'BEGIN { printf "%.1f", v * 100 }'; }
echo "| $(date -u +%Y-%m-%d) | $variant | $(awk -v e="$(field epochs "$t")" "BEGIN { printf \"%.2f\", e }") | $(field steps "$t") | $stop | $(field images_per_s "$t") | $(x100 "$(field bleu1 "$e")") | $(x100 "$(field bleu2 "$e")") | $(x100 "$(field bleu3 "$e")") | $(x100 "$(field bleu4 "$e")") | $paper |" >> "$table"
tail -n 1 "$table"
echo "$NAME: appended a row to $table" >&2
