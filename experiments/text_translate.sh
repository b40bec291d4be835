#!/bin/sh
# text_translate.sh [dates | dates-kinds | dates-tries | dates-recipe] [bible] ...
#
# Issue 58's experiments with the encoder-decoder translator (`text translate`,
# models/translator.h), written as experiments/results/text_translate.md:
#
#   dates   the synthetic date task (datasets/dates.h), in the stages of DATES_STAGES
#           (default "kinds tries recipe"; dates-STAGE runs one), each resumable:
#           kinds   every attention kind (DATES_KINDS: bahdanau, luong-dot, luong-general,
#                   luong-concat, local-m, local-p, none, and transformer: the Transformer
#                   translator, --model transformer) trained DATES_STEPS steps (default
#                   3,500, batch 64, the program's default model) on 20,000 examples, seed
#                   1; exact match and alignment accuracy (the attention's peak on the
#                   source characters a target digit comes from; the Transformer's from its
#                   last decoder layer's cross-attention, mean over heads) on the 1,000 test
#                   examples, greedy decoding (`text translate eval`), where the peaks miss
#                   (--misses), and exact match by source length with 95 % Wilson intervals;
#                   the long-inputs note on the test split's first DATES_LONG examples
#           tries   the levers tried on the way to the recipe (DATES_TRIES), each scored on
#                   the 500 validation examples only, with where its peaks miss: the recipe
#                   is chosen on these
#           recipe  the alignment recipe (DATES_RECIPE) with each seed of DATES_SEEDS
#                   (default 1 2 3 4 5): its figures on the validation split, then on the
#                   test split (exact match, alignment, misses, by source length), every
#                   seed's and their mean and range, against issue 58's targets
#           A flag "--steps N" among a lever's or the recipe's flags trains that run N steps
#           instead of DATES_STEPS.
#   bible   English to Spanish (bible-en-es: World English Bible -> Reina-Valera 1909 verse
#           pairs; one joint BPE of 8,000 merges): BIBLE_KINDS (none, bahdanau,
#           luong-general, transformer) each trained until BIBLE_MINUTES minutes of wall time in all
#           (default 20, summed over every session that trained it: a later session with a
#           larger BIBLE_MINUTES continues each run from its checkpoint); BLEU and chrF on
#           the 1,587 test verses as sacreBLEU computes them, each with its 95 % bootstrap
#           interval over the verses (1,000 resamples), and BLEU by source length
#           (`text translate score`); greedy decoding. BIBLE_STEPS=N instead trains each
#           run until N steps in all (the same data seen by each, whatever the load).
#           Then each SYSTEM:BASELINE of BIBLE_PAIRS (default bahdanau:none
#           luong-general:none transformer:luong-general) whose runs have the same steps
#           gets sacreBLEU's paired bootstrap (`score --baseline-hyps` on the outputs each
#           run's score wrote, test.hyps): the difference in BLEU and chrF with its 95 %
#           interval and the p-value, in bible-SYSTEM/paired-BASELINE.json
#
# Every run is a folder RUNS/text_translate/NAME (dates-KIND, dates-recipe-seedN,
# bible-KIND) trained with
# --resume, so a killed training continues from its last checkpoint (bible: every 100
# steps; dates: each epoch) and a larger budget continues a finished run; a run's figures
# (eval.json, score.json) are computed again when its checkpoint is newer than them. Each
# run also gets `text translate show` (its alignments, show/) and `text translate report`
# (report.html). The page is written from every run found each time, so running one part
# keeps the other's tables. Each section (the date task; English to Spanish) is written
# whole from this run folder's runs; a run folder without runs of a section keeps that
# whole section of the page it rewrites, marked as kept (never a mix of the two).
#
# Environment: ATTEND_BIN (default bin), RUNS (default runs), THREADS (default 1),
# DATA_ROOT (default data: the folder holding bible/), DATES_STAGES, DATES_KINDS,
# DATES_STEPS (default 3500), DATES_LONG (default 20000; 0: the long-inputs note on the
# 1,000 test examples), DATES_RECIPE (default below), DATES_SEEDS (default
# "1 2 3 4 5"; empty: no recipe runs), DATES_TRIES (lines "NAME FLAGS...": the levers'
# runs, dates-try-NAME; empty: none),
# BIBLE_KINDS, BIBLE_MINUTES, BIBLE_STEPS (default none: the minutes decide), BIBLE_PAIRS,
# TRANSFORMER_FLAGS (the transformer rows' recipe, default "--warmup 400 --lr 1e-3
# --dropout 0.1 --label-smoothing 0.1": README's date-task run; the other flags at the
# program's defaults, d 128, 4 heads, d_ff 256, 2 + 2 layers), SAMPLES (bootstrap resamples, default 1000), NICE (default
# 0: the niceness of the trainings), RESULTS (default $RESULTS_DIR/text_translate.md,
# RESULTS_DIR experiments/results).
set -eu

BIN=${ATTEND_BIN:-bin}
RUNS=${RUNS:-runs}
THREADS=${THREADS:-1}
DATA_ROOT=${DATA_ROOT:-data}
DATES_KINDS=${DATES_KINDS:-bahdanau luong-dot luong-general luong-concat local-m local-p none transformer}
DATES_STEPS=${DATES_STEPS:-3500}
DATES_LONG=${DATES_LONG:-20000}
DATES_RECIPE_DEFAULT="--attention luong-concat --forward-only --annot-embed --dropout 0.2"
DATES_RECIPE=${DATES_RECIPE-$DATES_RECIPE_DEFAULT}
DATES_STAGES=${DATES_STAGES-kinds tries recipe}
DATES_SEEDS=${DATES_SEEDS-1 2 3 4 5}
DATES_TRIES=${DATES_TRIES-"fwd-dropout-0.1-seed2 --attention luong-concat --forward-only --dropout 0.1 --seed 2
annot-seed1 --attention luong-concat --annot-embed --dropout 0.1 --seed 1
annot-seed2 --attention luong-concat --annot-embed --dropout 0.1 --seed 2
annot-rev-seed2 --attention luong-concat --reverse-only --annot-embed --dropout 0.1 --seed 2
annot-fwd-local-p-seed2 --attention local-p --forward-only --annot-embed --dropout 0.1 --seed 2
annot-fwd-seed1 --attention luong-concat --forward-only --annot-embed --dropout 0.1 --seed 1
annot-fwd-seed2 --attention luong-concat --forward-only --annot-embed --dropout 0.1 --seed 2
annot-fwd-seed3 --attention luong-concat --forward-only --annot-embed --dropout 0.1 --seed 3
annot-fwd-7000-seed2 --attention luong-concat --forward-only --annot-embed --dropout 0.1 --seed 2 --steps 7000
annot-fwd-dropout-0.2-7000-seed2 --attention luong-concat --forward-only --annot-embed --dropout 0.2 --seed 2 --steps 7000
annot-fwd-hidden-128-seed1 --attention luong-concat --forward-only --annot-embed --dropout 0.1 --hidden 128 --seed 1
annot-fwd-hidden-128-seed2 --attention luong-concat --forward-only --annot-embed --dropout 0.1 --hidden 128 --seed 2
annot-fwd-hidden-128-seed3 --attention luong-concat --forward-only --annot-embed --dropout 0.1 --hidden 128 --seed 3
annot-fwd-hidden-128-seed4 --attention luong-concat --forward-only --annot-embed --dropout 0.1 --hidden 128 --seed 4
annot-fwd-hidden-128-seed5 --attention luong-concat --forward-only --annot-embed --dropout 0.1 --hidden 128 --seed 5"}
BIBLE_KINDS=${BIBLE_KINDS:-none bahdanau luong-general transformer}
TRANSFORMER_FLAGS=${TRANSFORMER_FLAGS:---warmup 400 --lr 1e-3 --dropout 0.1 --label-smoothing 0.1}
BIBLE_MINUTES=${BIBLE_MINUTES:-20}
BIBLE_STEPS=${BIBLE_STEPS:-}
BIBLE_PAIRS=${BIBLE_PAIRS:-bahdanau:none luong-general:none transformer:luong-general}
SAMPLES=${SAMPLES:-1000}
NICE=${NICE:-0}
RESULTS=${RESULTS:-${RESULTS_DIR:-experiments/results}/text_translate.md}
store=$RUNS/text_translate
here=$(dirname "$0")

[ $# -gt 0 ] || set -- dates bible
for stage in $DATES_STAGES; do
    case $stage in
    kinds | tries | recipe) ;;
    *) echo "text_translate.sh: unknown date stage '$stage' in DATES_STAGES (kinds, tries, recipe)" >&2; exit 2 ;;
    esac
done
. "$here/common.sh"  # json_field, train_wall, require_current_program
require_current_program text_translate.sh "$BIN/text"
mkdir -p "$store"

# newer A B: A exists and B is missing or older.
newer() { [ -f "$1" ] && { [ ! -s "$2" ] || [ "$1" -nt "$2" ]; }; }

# figures DIR COMMAND FILE FLAGS...: runs `text translate COMMAND --model DIR ... --json`
# into DIR/FILE when the checkpoint is newer than it.
figures() {
    dir=$1 cmd=$2 file=$3
    shift 3
    if newer "$dir/model.safetensors" "$dir/$file"; then
        # shellcheck disable=SC2068
        "$BIN/text" translate "$cmd" --model "$dir/model.safetensors" --data-root "$DATA_ROOT" \
            --threads "$THREADS" $@ --json > "$dir/$file.part" 2> "$dir/$cmd.log" || {
            echo "text_translate.sh: $cmd failed ($dir): $(tail -n 1 "$dir/$cmd.log")" >&2
            exit 1
        }
        mv "$dir/$file.part" "$dir/$file"
    fi
}

# pictures DIR: the run's alignments and report, when the checkpoint is newer.
pictures() {
    if newer "$1/model.safetensors" "$1/report.html"; then
        "$BIN/text" translate show --model "$1" --data-root "$DATA_ROOT" --threads "$THREADS" --count 12 \
            --out "$1/show" 2> "$1/show.log"
        "$BIN/text" translate report --model "$1" 2> "$1/report.log"
    fi
}

# train DIR FLAGS...: text translate train --resume into DIR (its log in DIR/train.log).
train() {
    dir=$1
    shift
    mkdir -p "$dir"
    # shellcheck disable=SC2068
    nice -n "$NICE" "$BIN/text" translate train $@ --data-root "$DATA_ROOT" --threads "$THREADS" \
        --resume --json --out "$dir" > "$dir/train.json.part" 2> "$dir/train.log" || {
        echo "text_translate.sh: training failed ($dir): $(tail -n 1 "$dir/train.log")" >&2
        exit 1
    }
    mv "$dir/train.json.part" "$dir/train.json"
}

# model_flags KIND: the training flags that make a KIND row: the LSTM translator with that
# attention, or the Transformer translator with TRANSFORMER_FLAGS.
model_flags() {
    case $1 in
    transformer) echo "--model transformer $TRANSFORMER_FLAGS" ;;
    *) echo "--attention $1" ;;
    esac
}

# step_of DIR: the steps its last training reached (train.json), or, while one is under way
# or after a kill, the last step its log.csv recorded; 0 without either.
step_of() {
    if [ -s "$1/train.json" ] && ! newer "$1/log.csv" "$1/train.json"; then json_field steps < "$1/train.json"
    elif [ -s "$1/log.csv" ]; then tail -n 1 "$1/log.csv" | cut -d, -f1 | awk '{ print $1 + 0 }'
    else echo 0; fi
}

# steps_in FLAGS...: the N of a "--steps N" among FLAGS (a lever or recipe trained longer
# than the others), else DATES_STEPS.
steps_in() {
    n=$DATES_STEPS
    while [ $# -gt 0 ]; do
        [ "$1" = --steps ] && [ $# -gt 1 ] && n=$2
        shift
    done
    echo "$n"
}

# without_steps FLAGS...: FLAGS less any "--steps N".
without_steps() {
    out=""
    while [ $# -gt 0 ]; do
        if [ "$1" = --steps ] && [ $# -gt 1 ]; then shift 2; continue; fi
        out="$out${out:+ }$1"
        shift
    done
    echo "$out"
}

# run_dates DIR FLAGS...: the date run DIR trained with FLAGS to their steps (steps_in)
# unless it has reached them already.
run_dates() {
    dir=$1
    shift
    n=$(steps_in "$@")
    # shellcheck disable=SC2046
    [ "$(step_of "$dir")" -ge "$n" ] 2> /dev/null || train "$dir" --data dates $(without_steps "$@") --steps "$n"
}

# stage_kinds: every attention kind of DATES_KINDS, seed 1; figures on the test split.
stage_kinds() {
    for kind in $DATES_KINDS; do
        dir=$store/dates-$kind
        run_dates "$dir" $(model_flags "$kind")
        figures "$dir" eval eval.json --misses "$dir/misses.tsv"
        [ "$DATES_LONG" -le 0 ] || figures "$dir" eval eval-long.json --dates-examples "$DATES_LONG"
        pictures "$dir"
        echo "text_translate.sh: dates $kind done" >&2
    done
}

# stage_tries: the levers (DATES_TRIES, one "NAME FLAGS..." a line), each run
# dates-try-NAME; figures on the validation split only (eval-valid.json,
# misses-valid.tsv): the recipe is chosen on these, and the test split is left to it.
stage_tries() {
    newline='
'
    old_ifs=$IFS IFS=$newline
    for try in $DATES_TRIES; do
        IFS=$old_ifs
        name=${try%% *} dir=$store/dates-try-${try%% *}
        # shellcheck disable=SC2086
        run_dates "$dir" ${try#* }
        figures "$dir" eval eval-valid.json --split valid --misses "$dir/misses-valid.tsv"
        echo "text_translate.sh: dates try $name done" >&2
    done
    IFS=$old_ifs
}

# stage_recipe: DATES_RECIPE with each seed of DATES_SEEDS (dates-recipe-seedN); figures on
# the validation split (eval-valid.json: the choice) and on the test split (eval.json,
# misses.tsv: the report).
stage_recipe() {
    for seed in $DATES_SEEDS; do
        dir=$store/dates-recipe-seed$seed
        # shellcheck disable=SC2086
        run_dates "$dir" $DATES_RECIPE --seed "$seed"
        figures "$dir" eval eval-valid.json --split valid
        figures "$dir" eval eval.json --misses "$dir/misses.tsv"
        pictures "$dir"
        echo "text_translate.sh: dates recipe seed $seed done" >&2
    done
}

# part_dates [STAGE]: the stages of DATES_STAGES in order (kinds, tries, recipe), or the one
# named; each is resumable (a run trained to its steps is not trained again, figures are
# computed again only when the checkpoint is newer).
part_dates() {
    for stage in ${1:-$DATES_STAGES}; do
        case $stage in
        kinds) stage_kinds ;;
        tries) stage_tries ;;
        recipe) stage_recipe ;;
        *) echo "text_translate.sh: unknown date stage '$stage' (kinds, tries, recipe)" >&2; exit 2 ;;
        esac
    done
}

part_bible() {
    for kind in $BIBLE_KINDS; do
        dir=$store/bible-$kind
        if [ -n "$BIBLE_STEPS" ]; then
            [ "$(step_of "$dir")" -ge "$BIBLE_STEPS" ] 2> /dev/null ||
                train "$dir" --data bible-en-es $(model_flags "$kind") --steps "$BIBLE_STEPS" --checkpoint-every 100
        else
            left=$(awk -v m="$BIBLE_MINUTES" -v s="$(train_wall "$dir")" 'BEGIN { l = m - s / 60; print (l > 0.25 ? l : 0) }')
            if [ "$left" != 0 ]; then
                train "$dir" --data bible-en-es $(model_flags "$kind") --minutes "$left" --checkpoint-every 100
            fi
        fi
        [ -s "$dir/test.hyps" ] || rm -f "$dir/score.json"  # scored before its outputs were kept
        figures "$dir" score score.json --samples "$SAMPLES" --write-hyps "$dir/test.hyps"
        pictures "$dir"
        echo "text_translate.sh: bible $kind done" >&2
    done
    paired_scores
}

# paired_scores: for each SYSTEM:BASELINE of BIBLE_PAIRS whose two runs have outputs
# (test.hyps) at the same steps, sacreBLEU's paired bootstrap of SYSTEM against BASELINE
# (`score --hyps --baseline-hyps`: no decoding) into bible-SYSTEM/paired-BASELINE.json,
# when either's outputs are newer than it. A pair at unequal steps is not compared (its
# old figures are removed): the claim is about attention, not about more training.
paired_scores() {
    for pair in $BIBLE_PAIRS; do
        sys=$store/bible-${pair%%:*} base=$store/bible-${pair#*:}
        out=$sys/paired-${pair#*:}.json
        [ -s "$sys/test.hyps" ] && [ -s "$base/test.hyps" ] || continue
        if [ "$(step_of "$sys")" != "$(step_of "$base")" ]; then
            echo "text_translate.sh: $pair not paired: $(step_of "$sys") and $(step_of "$base") steps" >&2
            rm -f "$out"
            continue
        fi
        if newer "$sys/test.hyps" "$out" || newer "$base/test.hyps" "$out"; then
            "$BIN/text" translate score --model "$sys/model.safetensors" --data-root "$DATA_ROOT" \
                --threads "$THREADS" --hyps "$sys/test.hyps" --baseline-hyps "$base/test.hyps" \
                --samples "$SAMPLES" --json > "$out.part" 2> "$sys/paired.log" || {
                echo "text_translate.sh: paired score failed ($pair): $(tail -n 1 "$sys/paired.log")" >&2
                exit 1
            }
            mv "$out.part" "$out"
        fi
    done
}

for part in "$@"; do
    case $part in
    dates) part_dates ;;
    dates-kinds | dates-tries | dates-recipe) part_dates "${part#dates-}" ;;
    bible) part_bible ;;
    *) echo "text_translate.sh: unknown part '$part' (dates, dates-kinds, dates-tries, dates-recipe, bible)" >&2; exit 2 ;;
    esac
done

# num FILE KEY [SCALE] [DECIMALS]: a top-level figure of a JSON file (the buckets of
# by_length and by_source_length left out),
# "-" when absent or not a number.
num() {
    v=$( [ -s "$1" ] && sed 's/"by_[a-z_]*length": *\[[^]]*\]//g' "$1" | json_field "$2" | head -n 1 ) || v=""
    [ -n "$v" ] || { echo "-"; return; }
    awk -v v="$v" -v s="${3:-1}" -v d="${4:-2}" 'BEGIN { if (v !~ /^-?[0-9.]/) print "-"; else printf "%.*f\n", d, v * s }'
}

# epochs DIR STEPS: the epochs STEPS batches of 64 make of the 27,839 training pairs.
epochs() { awk -v s="$2" 'BEGIN { printf "%.1f", s * 64 / 27839 }'; }

dates_table() {
    echo "## The date task: every attention kind"
    echo
    echo "Dates written in one of many formats (\"3 mar 87\", \"Tuesday, March 3, 1987\", ...) to"
    echo "\"1987-03-03\", one character a token (datasets/dates.h); 20,000 training examples, the"
    echo "program's default model (embedding 32, bidirectional LSTM 64 per direction, decoder 128),"
    echo "batch 64, Adam 1e-3, seed 1, $DATES_STEPS steps each. Test split (1,000 examples), greedy"
    echo "decoding. Alignment accuracy: the share of target digits whose attention peak falls on"
    echo "the source characters the digit comes from (none has no attention: no figure). One"
    echo "run each (seed 1): an exact match of 95 % on 1,000 examples has a binomial standard"
    echo "error of about 0.7 points, and seeds move a short run more than that; compare kinds over"
    echo "seeds before ranking them."
    echo "Training wall: seconds on $(nproc) cores shared with other jobs, one thread a run (the"
    echo "load moved it by several times: compare steps, not seconds)."
    [ ! -s "$store/dates-transformer/eval.json" ] || {
        echo "transformer: the Transformer translator (d 128, 4 heads, d_ff 256, 2 + 2 layers),"
        echo "trained with \`$TRANSFORMER_FLAGS\`; its alignment accuracy is the last decoder"
        echo "layer's cross-attention, mean over heads."
    }
    echo
    echo "| attention | steps | exact match (%) | alignment accuracy (%) | valid loss | training wall (s) |"
    echo "|---|---|---|---|---|---|"
    for kind in bahdanau luong-dot luong-general luong-concat local-m local-p none transformer; do
        dir=$store/dates-$kind
        [ -s "$dir/eval.json" ] || continue
        echo "| $kind | $(step_of "$dir") | $(num "$dir/eval.json" exact_match 100) | $(num "$dir/eval.json" alignment_accuracy 100) | $(num "$dir/train.json" valid_loss 1 3) | $(train_wall "$dir") |"
    done
}

# bucket FILE FROM: eval.json's bucket of sources from FROM characters as "pairs exact lo hi"
# (percent, the 95 % Wilson interval); nothing when the file lacks it.
bucket() {
    sed 's/.*"by_source_length": \[//; s/\].*//' "$1" | tr '}' '\n' |
        sed -n "s/.*\"from\": $2, \"to\": [0-9]*, \"pairs\": \([0-9]*\), \"exact_match\": \([-0-9.eE+]*\).*/\1 \2/p" |
        awk 'BEGIN { z = 1.96 } { n = $1; p = $2; d = 1 + z * z / n; c = (p + z * z / (2 * n)) / d
             h = z * sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
             printf "%d %.1f %.1f %.1f\n", n, 100 * p, 100 * (c - h), 100 * (c + h) }'
}

# length_cells FILE: eval.json's exact match by source length, one cell a bucket: the
# percentage with its 95 % Wilson interval, "-" for a bucket the file lacks (buckets 1-10 ..
# 31-40: dates have at most 40 characters).
length_cells() {
    for from in 1 11 21 31; do
        b=$(bucket "$1" $from)
        if [ -n "$b" ]; then echo "$b" | awk '{ printf " %s [%s, %s] |", $2, $3, $4 }'; else printf ' - |'; fi
    done
}

# long_inputs: issue 58's "the no-attention model is measurably worse on long inputs", from
# the kinds' test figures: none's exact match on the longest sources (31-40 characters)
# against each attention kind's, "above" where the kind's 95 % Wilson interval lies wholly
# above none's, "overlaps" otherwise; and the same on the shortest (1-10), so that a gap on
# long inputs is not read as one that grows with length when it does not.
long_inputs() {
    # the test split extended to DATES_LONG examples (eval-long.json) where the kinds have it:
    # the test split's own 1,000 hold few long sources
    long=eval.json
    [ ! -s "$store/dates-none/eval-long.json" ] || long=eval-long.json
    f=$store/dates-none/$long
    [ -s "$f" ] || return 0
    for from in 31 1; do
        nb=$(bucket "$f" $from)
        [ -n "$nb" ] || continue
        set -- $nb
        n=$1 pn=$2 lo=$3 hi=$4
        cells=""
        for kind in bahdanau luong-dot luong-general luong-concat local-m local-p transformer; do
            g=$store/dates-$kind/$long
            [ -s "$g" ] || continue
            kb=$(bucket "$g" $from)
            [ -n "$kb" ] || continue
            cells="$cells${cells:+, }$(echo "$kb" | awk -v k="$kind" -v hi="$hi" -v lo="$lo" '{ printf "%s %s [%s, %s] (%s)", k, $2, $3, $4, ($3 > hi ? "above" : ($4 < lo ? "below" : "overlaps")) }')"
        done
        to=$((from + 9))
        if [ "$from" = 31 ]; then
            above=$(echo "$cells" | grep -o '(above)' | wc -l | tr -d ' ')
            kinds=$(echo "$cells" | grep -o '(above)\|(below)\|(overlaps)' | wc -l | tr -d ' ')
            echo "Issue 58's \"the no-attention model is measurably worse on long inputs\": on the"
            echo "longest sources $above of the $kinds attention kinds lie above none beyond the 95 % intervals."
            [ "$long" = eval.json ] || {
                echo "Counted on the test split's first $DATES_LONG examples (\`text translate eval"
                echo "--dates-examples $DATES_LONG\`: each example a function of the split and its index, no"
                echo "source in two splits), as the split's own 1,000 hold few long sources."
            }
        fi
        echo "At $from-$to characters ($n test examples) none's exact match is $pn [$lo, $hi] %; the"
        echo "attention kinds': $cells."
    done
}

# length_table: exact match by source length for every date run (the kinds, then the recipe).
length_table() {
    echo "### Exact match by source length"
    echo
    echo "The test examples by source length in characters (their count in the header), each"
    echo "cell the exact match (%) with its 95 % Wilson interval: Bahdanau et al. 2015's figure"
    echo "2 on the date task, where a fixed context (none) must carry the whole source."
    echo
    f=$(ls "$store"/dates-*/eval.json | head -n 1)
    header=$(sed 's/.*"by_source_length": \[//; s/\].*//' "$f" | tr '}' '\n' |
        sed -n 's/.*"from": \([0-9]*\), "to": \([0-9]*\), "pairs": \([0-9]*\).*/\1 \2 \3/p' |
        awk '{ printf " %s-%s (%s) |", $1, $2, $3 }')
    echo "| run |$header"
    echo "|---$(echo "$header" | sed 's/[^|]*|/|---/g')|"
    for name in bahdanau luong-dot luong-general luong-concat local-m local-p none transformer $(recipe_names); do
        f=$store/dates-$name/eval.json
        [ -s "$f" ] || continue
        echo "| $name |$(length_cells "$f")"
    done
}

# misses_table: where the attention peaks that miss fall (each run's misses file, written by
# `text translate eval --misses`: misses.tsv on the test split for the kinds and the recipe,
# misses-valid.tsv on the validation split for the levers): before or after the digit's
# span, one character off, and the commonest miss (target character, offset, the character
# the peak fell on).
misses_table() {
    echo "### Where the missed peaks fall"
    echo
    echo "Of the test split's 8,000 digits (the validation split's 4,000 for the levers), those whose"
    echo "attention peak lies outside their span, by side (offset from the span's nearest edge,"
    echo "negative before it) and their commonest kind: target character t of \"yyyy-mm-dd\" (0-3"
    echo "the year, 5-6 the month, 8-9 the day), the offset and the source character the peak fell on;"
    echo "last, the misses that are the \"0\" written before a one-digit month or day (t5 or t8, a"
    echo "span of one character)."
    echo
    echo "| run | split | missed | before the span | after it | one character off | commonest (t, offset, on) | a one-digit field's 0 |"
    echo "|---|---|---|---|---|---|---|---|"
    for name in bahdanau luong-dot luong-general luong-concat local-m local-p transformer $(try_names) $(recipe_names); do
        case $name in
        try-*) f=$store/dates-$name/misses-valid.tsv split=valid ;;
        *) f=$store/dates-$name/misses.tsv split=test ;;
        esac
        [ -s "$f" ] || continue
        awk -F '\t' -v name="$name" -v sp="$split" 'NR > 1 { n++; b += $12 < 0; a += $12 > 0; one += $12 == 1 || $12 == -1
                 z += ($5 == 5 || $5 == 8) && $9 - $8 == 1 && substr($4, $5 + 1, 1) == "0"
                 k = "t" $5 ", " ($12 > 0 ? "+" : "") $12 ", \"" $11 "\""; c[k]++ }
                 END { top = ""; for (k in c) if (top == "" || c[k] > c[top] || (c[k] == c[top] && k < top)) top = k
                       if (n) printf "| %s | %s | %d | %d | %d | %d | %s (%d) | %d |\n", name, sp, n, b, a, one, top, c[top], z
                       else printf "| %s | %s | 0 | 0 | 0 | 0 | - | 0 |\n", name, sp }' "$f"
    done
}

# try_names: the levers' run folders found (dates-try-NAME), less "dates-".
try_names() { ls -d "$store"/dates-try-* 2> /dev/null | sed 's#.*/dates-##'; }

# tries_table: each lever's run (its flags from run.json's first command), figures on the
# validation split.
tries_table() {
    echo "### The levers tried (validation split)"
    echo
    echo "One run each (seed 1 unless its flags say otherwise, the rest as above),"
    echo "scored on the validation split (500 examples, 4,000 digits): the recipe below was chosen"
    echo "on these figures, and the test split was kept for it."
    echo
    echo "| run | flags | steps | exact match (%) | alignment accuracy (%) | valid loss | training wall (s) |"
    echo "|---|---|---|---|---|---|---|"
    for name in $(try_names); do
        dir=$store/dates-$name
        [ -s "$dir/eval-valid.json" ] || continue
        flags=$(sed -n 's/.*"command":[^"]*"text translate train --data dates \(.*\) --steps .*/\1/p' "$dir/run.json" 2> /dev/null | head -n 1)
        echo "| ${name#try-} | \`${flags:-?}\` | $(step_of "$dir") | $(num "$dir/eval-valid.json" exact_match 100) | $(num "$dir/eval-valid.json" alignment_accuracy 100) | $(num "$dir/train.json" valid_loss 1 3) | $(train_wall "$dir") |"
    done
}

# seeds_table: the levers by their flags less the seed (a name's "-seedN" dropped), over the
# seeds each was run on, and the recipe's runs beside them: on the validation split, the
# lowest and the mean exact match and alignment over the seeds and how many seeds meet both
# of issue 58's targets. The recipe was chosen on this table.
seeds_table() {
    echo "### The levers over seeds (validation split)"
    echo
    echo "Each lever of the table above by its flags less the seed (its runs' names less"
    echo "\"-seedN\"), and the recipe's runs (below) beside them, on the validation split:"
    echo "the lowest and the mean over its seeds, and the seeds meeting both targets (exact match at"
    echo "least 99 %, alignment at least 95 %)."
    echo
    echo "| lever | seeds | exact match, lowest (%) | exact match, mean (%) | alignment, lowest (%) | alignment, mean (%) | seeds meeting both |"
    echo "|---|---|---|---|---|---|---|"
    for name in $(try_names) $(recipe_names); do
        f=$store/dates-$name/eval-valid.json
        [ -s "$f" ] || continue
        group=$(echo "${name#try-}" | sed 's/-seed[0-9]*$//')
        echo "$group $(num "$f" exact_match 100) $(num "$f" alignment_accuracy 100)"
    done | awk '$2 != "-" && $3 != "-" { g = $1; if (!(g in n)) order[++groups] = g
                    n[g]++; se[g] += $2; sa[g] += $3; met[g] += ($2 >= 99 && $3 >= 95)
                    if (n[g] == 1 || $2 < le[g]) le[g] = $2
                    if (n[g] == 1 || $3 < la[g]) la[g] = $3 }
                END { for (i = 1; i <= groups; i++) { g = order[i]
                          printf "| %s | %d | %.2f | %.2f | %.2f | %.2f | %d of %d |\n", g, n[g], le[g], se[g] / n[g], la[g], sa[g] / n[g], met[g], n[g] } }'
}

# recipe_names: the recipe's run folders found (dates-recipe-seedN, N ascending), less "dates-".
recipe_names() {
    ls -d "$store"/dates-recipe-seed* 2> /dev/null | sed 's#.*/dates-##' | sort -t d -k 2 -n
}

# recipe_summary SPLIT_FILE: the recipe seeds' exact match and alignment (SPLIT_FILE:
# eval.json or eval-valid.json) as one row: the mean with a 95 % interval over the seeds
# (Student's t, n - 1 degrees of freedom, cut at 0 and 100 %) and the range; then how many seeds meet both
# targets. Two lines, tab-separated.
recipe_summary() {
    for name in $(recipe_names); do
        f=$store/dates-$name/$1
        [ -s "$f" ] && echo "$(num "$f" exact_match 100) $(num "$f" alignment_accuracy 100)"
    done | awk 'BEGIN { split("12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262", tq, " ") }
                $1 != "-" && $2 != "-" { n++; e[n] = $1; a[n] = $2; if ($1 >= 99 && $2 >= 95) met++ }
                function cell(x,   i, m, v, h, lo, hi) {
                    m = 0; for (i = 1; i <= n; i++) m += x[i]; m /= n
                    lo = hi = x[1]; v = 0
                    for (i = 1; i <= n; i++) { v += (x[i] - m) ^ 2; if (x[i] < lo) lo = x[i]; if (x[i] > hi) hi = x[i] }
                    if (n > 1 && n - 1 <= 9) { h = tq[n - 1] * sqrt(v / (n - 1) / n)
                                               return sprintf("%.2f [%.2f, %.2f] (%.2f-%.2f)", m, (m - h < 0 ? 0 : m - h), (m + h > 100 ? 100 : m + h), lo, hi) }
                    return sprintf("%.2f (%.2f-%.2f)", m, lo, hi) }
                END { if (n) printf "%s\t%s\t%d\t%d\n", cell(e), cell(a), met + 0, n }'
}

# recipe_why_text: the reasons for DATES_RECIPE_DEFAULT, as the levers' runs showed them.
recipe_why_text() {
    cat <<'WHY'
Why it: the spans are the fields as written (test_dates checks every format), so a miss is
the model's, and the table of missed peaks says where they go. With both directions
(annot) the state beside a field already holds it, and the peaks that miss fall on a
neighbour of the field, before it about as often as after; one direction reading right to
left (annot-rev) puts most of them before it. An encoder reading left to right
(--forward-only) has no state before a field that knows it, and with each character's
embedding beside its state in the annotations (--annot-embed) the score sees which
character a position holds: its misses are then mostly one character after the span, and
most of those are the "0" written before a one-digit month or day (the table's last
column: about as many in every run with --annot-embed), its peak on the separator after
the digit, the first position where a forward state knows that the field has one digit.
Without --annot-embed (fwd-dropout-0.1) fewer of these zeros miss but more of the other
digits do. At the default width (annot-fwd) that left one seed of three short of 95 %;
twice the steps or dropout 0.2 lift that seed over it. Of the candidates run on all five
seeds, the recipe is the one that meets both targets on every seed of the validation split
with the highest lowest alignment (the levers over seeds); local-p attention with the
same encoder (annot-fwd-local-p) is far below.
WHY
}

# recipe_why: why the default recipe, from the runs of the levers (the evidence this page's
# tables show); nothing for another DATES_RECIPE.
recipe_why() {
    [ "$DATES_RECIPE" = "$DATES_RECIPE_DEFAULT" ] || return 0
    echo
    recipe_why_text
}

# recipe_table: the recipe's rows, one a seed, on both splits, and their summary.
recipe_table() {
    echo "### The alignment recipe over seeds"
    echo
    echo "The LSTM translator trained \`$DATES_RECIPE\` (otherwise as above), $(steps_in $DATES_RECIPE) steps,"
    echo "one run a seed; issue 58's targets: exact match at least 99 % and alignment accuracy at"
    echo "least 95 %. The validation split (500 examples, 4,000 digits) chose it; the test split"
    echo "(1,000 examples, 8,000 digits) reports it."
    recipe_why
    echo
    echo "| seed | steps | valid exact match (%) | valid alignment (%) | test exact match (%) | test alignment (%) | valid loss | training wall (s) |"
    echo "|---|---|---|---|---|---|---|---|"
    for name in $(recipe_names); do
        dir=$store/dates-$name
        [ -s "$dir/eval.json" ] || continue
        echo "| ${name#recipe-seed} | $(step_of "$dir") | $(num "$dir/eval-valid.json" exact_match 100) | $(num "$dir/eval-valid.json" alignment_accuracy 100) | $(num "$dir/eval.json" exact_match 100) | $(num "$dir/eval.json" alignment_accuracy 100) | $(num "$dir/train.json" valid_loss 1 3) | $(train_wall "$dir") |"
    done
    valid=$(recipe_summary eval-valid.json) test=$(recipe_summary eval.json)
    [ -n "$test" ] || return 0
    tab=$(printf '\t')
    field() { echo "$1" | cut -d "$tab" -f "$2"; }
    echo
    echo "Over the seeds, the mean [its 95 % t-interval over seeds, cut at 0 and 100] (min-max):"
    echo
    echo "| split | seeds | exact match (%) | alignment accuracy (%) | seeds meeting both targets |"
    echo "|---|---|---|---|---|"
    [ -z "$valid" ] || echo "| valid | $(field "$valid" 4) | $(field "$valid" 1) | $(field "$valid" 2) | $(field "$valid" 3) of $(field "$valid" 4) |"
    echo "| test | $(field "$test" 4) | $(field "$test" 1) | $(field "$test" 2) | $(field "$test" 3) of $(field "$test" 4) |"
    echo
    echo "Both targets met on $(field "$test" 3) of the $(field "$test" 4) seeds (test split)."
    lowest_seed_wilson
}

# lowest_seed_wilson: the recipe seeds' lowest test exact match and lowest test alignment,
# each with its 95 % Wilson interval (over the test examples, and over their digits, 8 an
# example, for the alignment: the digits of one example are not independent, so that
# interval is too narrow): how far one seed's figure can be from its model's.
lowest_seed_wilson() {
    for name in $(recipe_names); do
        f=$store/dates-$name/eval.json
        [ -s "$f" ] && echo "$(num "$f" pairs 1 0) $(num "$f" exact_match 1 6) $(num "$f" alignment_accuracy 1 6)"
    done | awk '$1 != "-" && $2 != "-" && $3 != "-" { if (!n || $2 < e) { e = $2; ne = $1 } if (!n || $3 < a) { a = $3; na = 8 * $1 }; n++ }
                function wilson(p, m,   z, d, c, h) { z = 1.96; d = 1 + z * z / m; c = (p + z * z / (2 * m)) / d
                    h = z * sqrt(p * (1 - p) / m + z * z / (4 * m * m)) / d
                    return sprintf("%.2f [%.2f, %.2f] %%", 100 * p, 100 * (c - h), 100 * (c + h)) }
                END { if (n) { print ""
                      printf "The lowest seed'"'"'s test figures with their 95 %% Wilson intervals: exact match %s of\n", wilson(e, ne)
                      printf "%d examples, alignment %s of %d digits (too narrow: the digits of one example\n", ne, wilson(a, na), na
                      print "are not independent)." } }'
}

bible_tables() {
    echo "## English to Spanish: the Bible's verses"
    echo
    echo "World English Bible to Reina-Valera 1909, 27,839 training, 1,527 validation and 1,587"
    echo "test verse pairs (\`bible-en-es\`); one joint BPE of 8,000 merges learned on the training"
    echo "verses, sources and targets cut at 64 pieces; the program's default model (embedding 32,"
    echo "bidirectional LSTM 64 per direction, decoder 128), batch 64, Adam 1e-3, clip 5, seed 1."
    echo "Test BLEU (13a) and chrF2 as sacreBLEU computes them on the detokenized text (seq/sacrebleu.h),"
    echo "each as \"score (bootstrap mean +- half-width of the 95 % interval)\" over $SAMPLES"
    if [ -n "$BIBLE_STEPS" ]; then
        echo "resamples of the test verses; greedy decoding. Budget: $BIBLE_STEPS steps each (the same"
        echo "batches for every run), on $(nproc) cores shared with other jobs."
    else
        echo "resamples of the test verses; greedy decoding. Budget: wall time, on $(nproc) cores shared"
        echo "with other jobs, one run after another."
    fi
    [ ! -s "$store/bible-transformer/score.json" ] || {
        echo "transformer: the Transformer translator (d 128, 4 heads, d_ff 256, 2 + 2 layers),"
        echo "trained with \`$TRANSFORMER_FLAGS\` to the same budget."
    }
    echo
    echo "| attention | training wall (min) | steps | epochs | valid loss | BLEU | chrF |"
    echo "|---|---|---|---|---|---|---|"
    for kind in none bahdanau luong-general luong-dot luong-concat local-m local-p transformer; do
        dir=$store/bible-$kind f=$store/bible-$kind/score.json
        [ -s "$f" ] || continue
        st=$(step_of "$dir")
        echo "| $kind | $(awk -v s="$(train_wall "$dir")" 'BEGIN { printf "%.1f", s / 60 }') | $st | $(epochs "$dir" "$st") | $(num "$dir/train.json" valid_loss 1 1) | $(num "$f" bleu) ($(num "$f" bleu_mean) +- $(num "$f" bleu_ci)) | $(num "$f" chrf) ($(num "$f" chrf_mean) +- $(num "$f" chrf_ci)) |"
    done
    if ls "$store"/bible-*/paired-*.json > /dev/null 2>&1; then
        echo
        bible_paired_table
    fi
    echo
    echo "### BLEU by source length"
    echo
    echo "Test verses by the number of English words (Bahdanau et al. 2015's figure 2 buckets);"
    echo "each cell is the corpus BLEU of the bucket's verses (their count in the header)."
    echo
    header=""
    for kind in none bahdanau luong-general luong-dot luong-concat local-m local-p transformer; do
        f=$store/bible-$kind/score.json
        [ -s "$f" ] || continue
        if [ -z "$header" ]; then
            header=$(sed 's/.*"by_length": \[//; s/\].*//' "$f" | tr '}' '\n' |
                sed -n 's/.*"lo": \([0-9]*\), "hi": \(-*[0-9]*\), "sentences": \([0-9]*\).*/\1 \2 \3/p' |
                awk '{ printf " %s%s (%s) |", $1, ($2 < 0 ? "+" : "-" $2), $3 }')
            echo "| attention |$header"
            echo "|---$(echo "$header" | sed 's/[^|]*|/|---/g')|"
        fi
        cells=$(sed 's/.*"by_length": \[//; s/\].*//' "$f" | tr '}' '\n' |
            sed -n 's/.*"bleu": \([-0-9.eE+naif]*\).*/\1/p' | awk '{ printf " %.2f |", $1 }')
        echo "| $kind |$cells"
    done
}

# verdict FILE METRIC: better or worse when the paired difference's interval lies above or
# below 0, within when it holds 0 ("-" without figures).
verdict() {
    awk -v lo="$(num "$1" "$2_diff_lower" 1 6)" -v hi="$(num "$1" "$2_diff_upper" 1 6)" \
        'BEGIN { if (lo == "-" || hi == "-") print "-"; else if (lo > 0) print "better"; else if (hi < 0) print "worse"; else print "within" }'
}

bible_paired_table() {
    echo "### Paired: each system against its baseline"
    echo
    echo "sacreBLEU's paired bootstrap (its --paired-bs): both systems' outputs scored on the same"
    echo "$SAMPLES resamples of the test verses. The difference is the system's score minus the"
    echo "baseline's on all verses; [lower, upper] is the 95 % interval of the resampled differences"
    echo "(the same order statistics as the intervals above); p is sacreBLEU's p-value, (c + 1) /"
    echo "(n + 1) with c the resamples whose centred absolute difference exceeds the observed one."
    echo "Only runs of the same steps are paired. Beyond the interval: the system is better (or"
    echo "worse) when [lower, upper] lies above (below) 0, within when it holds 0."
    echo
    echo "| system | baseline | steps | BLEU difference [95 %] | p (BLEU) | BLEU verdict | chrF difference [95 %] | p (chrF) | chrF verdict |"
    echo "|---|---|---|---|---|---|---|---|---|"
    for pair in $BIBLE_PAIRS; do
        a=${pair%%:*} b=${pair#*:}
        f=$store/bible-$a/paired-$b.json
        [ -s "$f" ] || continue
        echo "| $a | $b | $(step_of "$store/bible-$a") | $(num "$f" bleu_diff 1 2) [$(num "$f" bleu_diff_lower 1 2), $(num "$f" bleu_diff_upper 1 2)] | $(num "$f" bleu_p 1 4) | $(verdict "$f" bleu) | $(num "$f" chrf_diff 1 2) [$(num "$f" chrf_diff_lower 1 2), $(num "$f" chrf_diff_upper 1 2)] | $(num "$f" chrf_p 1 4) | $(verdict "$f" chrf) |"
    done
}

# kept_section HEADING: the section of the page being rewritten whose heading line starts
# with HEADING, up to the next "## " heading (runs of blank lines as one, the trailing ones
# dropped), marked as kept (once) under its heading.
kept_section() {
    note="(Kept from the previous page: the run folder that wrote this page holds no such runs.)"
    awk -v h="$1" -v note="$note" '
        !on && index($0, h) == 1 { on = 1; print; print ""; print note; next }
        on && /^## / { exit }
        on && $0 != note { if ($0 == "") blank = 1; else { if (blank) print ""; blank = 0; print } }
    ' "$RESULTS"
}

bible_budget() {
    echo "### Budget reached, and how to continue"
    echo
    most=0 steps=0
    for kind in none bahdanau luong-general luong-dot luong-concat local-m local-p transformer; do
        dir=$store/bible-$kind
        [ -f "$dir/model.safetensors" ] || continue
        m=$(awk -v s="$(train_wall "$dir")" 'BEGIN { printf "%.1f", s / 60 }')
        most=$(awk -v a="$most" -v b="$m" 'BEGIN { print (b > a ? b : a) }')
        st=$(step_of "$dir")
        steps=$(awk -v a="$steps" -v b="$st" 'BEGIN { print (b > a ? b : a) }')
        echo "- $kind: $m minutes of training, $st steps ($(epochs "$dir" "$st") epochs)."
    done
    next=$(awk -v m="$most" 'BEGIN { printf "%d", m + 20.5 }')
    echo
    echo "These budgets are far below a converged model (Bahdanau et al. trained for days on a GPU):"
    echo "read the table as an early point on each curve. Each run continues from its checkpoint"
    echo "with a larger budget, e.g. $next minutes each in all:"
    echo
    echo "    RUNS=$RUNS BIBLE_MINUTES=$next NICE=15 sh experiments/text_translate.sh bible"
    echo
    echo "or the same number of steps for each (a wall-time budget gives a run fewer steps when"
    echo "the machine is busier, and attention costs more per step than none):"
    echo
    echo "    RUNS=$RUNS BIBLE_STEPS=$steps NICE=15 sh experiments/text_translate.sh bible"
}

# any_file PATTERN...: one of the patterns names a file (ls fails when any one names none).
any_file() {
    for pattern in "$@"; do
        ls $pattern > /dev/null 2>&1 && return 0
    done
    return 1
}

# have_date_runs: the run folder holds a date run with figures (any stage's).
have_date_runs() { any_file "$store/dates-*/eval.json" "$store/dates-try-*/eval-valid.json"; }

# dates_section: the whole date section, every table from this run folder's runs (none
# kept from an earlier page): the kinds, exact match by length, the levers, the misses, the
# recipe over seeds.
dates_section() {
    if ls "$store"/dates-*/eval.json > /dev/null 2>&1; then
        dates_table
        echo
        length_table
        if [ -s "$store/dates-none/eval.json" ]; then
            echo
            long_inputs
        fi
    else
        echo "## The date task: every attention kind"
    fi
    if ls "$store"/dates-try-*/eval-valid.json > /dev/null 2>&1; then
        echo
        tries_table
        echo
        seeds_table
    fi
    if any_file "$store/dates-*/misses.tsv" "$store/dates-try-*/misses-valid.tsv"; then
        echo
        misses_table
    fi
    if ls "$store"/dates-recipe-seed*/eval.json > /dev/null 2>&1; then
        echo
        recipe_table
    fi
}

mkdir -p "$(dirname "$RESULTS")"
{
    echo "# Attention for translation: the encoder-decoder translator"
    echo
    echo "Written by \`sh experiments/text_translate.sh\` ($(date -u +%Y-%m-%d), $(uname -m), $(nproc) cores,"
    echo "$THREADS thread per training) from the runs in its run folder. Each run's folder holds"
    echo "its report (report.html) and alignment pictures (show/)."
    if have_date_runs; then
        echo
        dates_section
    elif [ -s "$RESULTS" ] && grep -q '^## The date task' "$RESULTS"; then
        echo
        kept_section "## The date task"
    fi
    if ls "$store"/bible-*/model.safetensors > /dev/null 2>&1; then
        if ls "$store"/bible-*/score.json > /dev/null 2>&1; then
            echo
            bible_tables
        fi
        echo
        bible_budget
    elif [ -s "$RESULTS" ] && grep -q '^## English to Spanish' "$RESULTS"; then
        echo
        kept_section "## English to Spanish"
    fi
} > "$RESULTS.tmp.$$"
mv "$RESULTS.tmp.$$" "$RESULTS"
echo "text_translate.sh: wrote $RESULTS" >&2
