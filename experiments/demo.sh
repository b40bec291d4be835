#!/bin/sh
# demo.sh: the toolkit's main job on the embedded default data, run by `make demo`. It ends
# on what a run looks like: a report page for each model it trains (`draw report`,
# `caption report`: cli/report_draw.h, cli/report_caption.h), with every section filled.
#   1. trains a small DRAW on MNIST for a few minutes and writes, in its run folder, what
#      its report shows: the test evaluation (eval.json), 16 digits drawn step by step
#      (samples/: PNG frames per step and an animated GIF, write windows shown), one of them
#      as a film strip (film/), and reconstructions of test digits with their read and
#      write windows (reconstructions/); then its report.html;
#   2. trains a small Show-Attend-Tell captioner on synthetic scenes for a few minutes and
#      evaluates it on the held-out test scenes with beam search: eval.json, per_image.json
#      (each image's caption, references and scores) and strips/ (the image, then where it
#      looked for each word); then its report.html; and captions a folder of new scenes
#      with `caption predict` (captions.tsv, an attention strip per image), as one would
#      caption one's own images;
#   3. trains the sentence classifier of the Keras attention demo (bin/text: embedding, LSTM,
#      attention pooling) on UCI's Amazon and Yelp sentences, evaluates it on the demo's
#      validation split (eval.json), shades the words it attends to (show/), then its
#      report.html;
#   4. prints the report pages, then the folders.
# Everything goes under OUT (default demo-out/, emptied first). Minutes: DRAW_MINUTES,
# SAT_MINUTES; THREADS (default 2). The whole demo takes about 7 minutes on 2 cores
# (README.md). DEMO_SCALE=tiny runs the same steps on stand-in sizes (tiny models, tens
# of steps, a few hundred images) in seconds: the test of the demo
# (tests/test_experiments_demo.c) and the browser test (tests/browser/run.sh) use it.
set -eu
BIN=${ATTEND_BIN:-bin}
OUT=${OUT:-demo-out}
DRAW_MINUTES=${DRAW_MINUTES:-3}
SAT_MINUTES=${SAT_MINUTES:-3.5}
THREADS=${THREADS:-2}
DEMO_SCALE=${DEMO_SCALE:-full}

# Each scale's model sizes, budgets and evaluation sizes. The captioner's data flags go to
# training and evaluation alike (the scenes are generated from them).
case $DEMO_SCALE in
full)
    draw_model="--T 32 --read 5 --write 5 --hidden 160 --z 50 --batch 100"
    draw_budget="--minutes $DRAW_MINUTES --valid-every 500 --valid-images 1000"
    draw_says="for $DRAW_MINUTES minutes (T 32, read 5x5, write 5x5, LSTM 160, z 50)"
    draw_eval=""
    sat_model=""
    sat_data=""
    sat_budget="--minutes $SAT_MINUTES --val-count 200"
    sat_says="for $SAT_MINUTES minutes"
    beam=3
    new_scenes=60
    text_model=""
    text_budget="--epochs 10"
    text_says="(10 epochs on UCI's Amazon and Yelp sentences)"
    ;;
tiny)
    draw_model="--T 4 --read 3 --write 3 --hidden 16 --z 4 --batch 20"
    draw_budget="--steps 10 --valid-every 5 --valid-images 100 --log-every 5"
    draw_says="for 10 steps (DEMO_SCALE=tiny)"
    draw_eval="--limit 100"
    sat_model="--image-size 64 --channels 4,8,16 --embed 8 --hidden 16 --attn-dim 8 --batch 8"
    sat_data="--train-count 32 --val-count-scenes 8 --test-count 8"
    sat_budget="--steps 8 --log-every 2"
    sat_says="for 8 steps (DEMO_SCALE=tiny)"
    beam=2
    new_scenes=20
    text_model="--embed 8 --hidden 8"
    text_budget="--steps 4 --log-every 2"
    text_says="for 4 steps (DEMO_SCALE=tiny)"
    ;;
*)
    echo "demo.sh: DEMO_SCALE must be full or tiny, not '$DEMO_SCALE'" >&2
    exit 2
    ;;
esac

rm -rf "$OUT"
mkdir -p "$OUT"
reports=""  # the report pages made, one a line (path, then what it shows), printed first
# entry PATH TEXT: one line of the list printed at the end.
entry() { printf '  %-38s %s\n' "$1" "$2"; }

draw="$OUT/draw-model"
echo "== DRAW: training $draw_says"
# shellcheck disable=SC2086
"$BIN/draw" train --data mnist $draw_model $draw_budget --threads "$THREADS" --out "$draw"
# shellcheck disable=SC2086
"$BIN/draw" eval --model "$draw/model.safetensors" --data mnist --split test $draw_eval \
    --threads "$THREADS" --json > "$draw/eval.json"
cat "$draw/eval.json"
"$BIN/draw" generate --model "$draw/model.safetensors" --count 16 --show-attention --scale 4 \
    --out "$draw/samples"
"$BIN/draw" generate --model "$draw/model.safetensors" --count 1 --show-attention --scale 3 \
    --out "$draw/film"
"$BIN/draw" reconstruct --model "$draw/model.safetensors" --data mnist --count 16 --scale 4 \
    --out "$draw/reconstructions"
"$BIN/draw" report "$draw"
reports="$reports$(entry "$draw/report.html" "DRAW: test bound, curves, samples, one drawn step by step, reconstructions")
"

cap="$OUT/caption-model"
echo "== Captioner: training $sat_says on synthetic scenes (soft additive attention)"
# shellcheck disable=SC2086
"$BIN/caption" train --data scenes $sat_data $sat_model --attention additive $sat_budget \
    --threads "$THREADS" --out "$cap"
# shellcheck disable=SC2086
"$BIN/caption" eval --model "$cap/model.safetensors" --data scenes $sat_data --split test \
    --beam "$beam" --threads "$THREADS" --json --per-image "$cap/per_image.json" \
    --attention-out "$cap/strips" > "$cap/eval.json"
cat "$cap/eval.json"
"$BIN/caption" report "$cap"
reports="$reports$(entry "$cap/report.html" "captioner: test scores, curves, held-out scenes with their attention strips")
"
"$BIN/caption" scenes --out "$OUT/scenes-new" --count "$new_scenes" --seed 7
mkdir -p "$OUT/held-out"
cp "$OUT"/scenes-new/test_*.png "$OUT/held-out/"
"$BIN/caption" predict --model "$cap/model.safetensors" --images "$OUT/held-out" \
    --beam "$beam" --attention-out "$OUT/attention" --results "$OUT/captions.json" \
    --threads "$THREADS" > "$OUT/captions.tsv"
cat "$OUT/captions.tsv"

txt="$OUT/text-model"
echo "== Sentence classifier: the Keras attention demo's recipe $text_says"
# shellcheck disable=SC2086
"$BIN/text" classify train --data sentiment $text_model $text_budget --threads "$THREADS" \
    --out "$txt"
"$BIN/text" classify eval --model "$txt/model.safetensors" --json > "$txt/eval.json"
cat "$txt/eval.json"
"$BIN/text" classify show --model "$txt/model.safetensors" --out "$txt/show"
"$BIN/text" classify report "$txt"
reports="$reports$(entry "$txt/report.html" "sentence classifier: validation accuracy, curves, words shaded by attention")
"

echo
echo "Done. The report pages (open them in a browser):"
printf '%s' "$reports"
echo "And the folders:"
entry "$draw/samples/" "step_01.png ... final.png, draw.gif: DRAW drawing 16 digits step by step"
entry "$draw/film/" "one sample, the canvas after each step"
entry "$draw/reconstructions/" "test digits redrawn, read (green) and write (red) windows"
entry "$draw/" "model.safetensors, log.csv, loss.png, eval.json"
entry "$cap/strips/" "attention strips of the test scenes the report shows"
entry "$cap/" "model.safetensors, log.csv, curves.png, eval.json, per_image.json"
entry "$OUT/captions.tsv, captions.json" "captions of new scenes (caption predict)"
entry "$OUT/attention/" "their attention strips, one per image"
entry "$txt/show/" "attention.html, attention.png: validation sentences, each word shaded"
entry "$txt/" "model.safetensors, log.csv, loss.png, eval.json"
