#!/bin/sh
# demo.sh: the toolkit's main job on the embedded default data, run by `make demo`.
#   1. trains a small DRAW on MNIST for a few minutes and draws 16 digits step by step
#      (PNG frames per step and an animated GIF, write windows shown), plus reconstructions
#      of test digits with their read and write windows;
#   2. trains a small Show-Attend-Tell captioner on synthetic scenes for a few minutes,
#      writes a held-out folder of new scenes, captions it with beam search and writes one
#      attention strip per image (the image, then where it looked for each word).
# Everything goes under OUT (default demo-out/). Minutes: DRAW_MINUTES, SAT_MINUTES.
set -eu
BIN=${ATTEND_BIN:-bin}
OUT=${OUT:-demo-out}
DRAW_MINUTES=${DRAW_MINUTES:-3}
SAT_MINUTES=${SAT_MINUTES:-4}
THREADS=${THREADS:-2}

rm -rf "$OUT"
mkdir -p "$OUT"

echo "== DRAW: training for $DRAW_MINUTES minutes (T 32, read 5x5, write 5x5, LSTM 160, z 50)"
"$BIN/draw" train --data mnist --T 32 --read 5 --write 5 --hidden 160 --z 50 --batch 100 \
    --minutes "$DRAW_MINUTES" --threads "$THREADS" --valid-every 500 --valid-images 1000 \
    --out "$OUT/draw-model"
"$BIN/draw" eval --model "$OUT/draw-model/model.safetensors" --data mnist --split test \
    --threads "$THREADS" | tee "$OUT/draw-model/test.txt"
"$BIN/draw" generate --model "$OUT/draw-model/model.safetensors" --count 16 --show-attention \
    --scale 4 --out "$OUT/draw-samples"
"$BIN/draw" reconstruct --model "$OUT/draw-model/model.safetensors" --data mnist --count 16 \
    --scale 4 --out "$OUT/draw-reconstructions"

echo "== Captioner: training for $SAT_MINUTES minutes on synthetic scenes (soft additive attention)"
"$BIN/caption" train --data scenes --attention additive --minutes "$SAT_MINUTES" \
    --threads "$THREADS" --val-count 200 --out "$OUT/caption-model"
"$BIN/caption" scenes --out "$OUT/scenes-new" --count 60 --seed 7
mkdir -p "$OUT/held-out"
cp "$OUT"/scenes-new/test_*.png "$OUT/held-out/"
"$BIN/caption" predict --model "$OUT/caption-model/model.safetensors" --images "$OUT/held-out" \
    --beam 3 --attention-out "$OUT/attention" --results "$OUT/captions.json" \
    --threads "$THREADS" > "$OUT/captions.tsv"
cat "$OUT/captions.tsv"

cat <<MSG

Done. What the demo wrote:
  $OUT/draw-samples/step_01.png ... final.png, draw.gif   DRAW drawing 16 digits step by step
  $OUT/draw-reconstructions/                              test digits redrawn, read/write windows
  $OUT/draw-model/                                        model.safetensors, log.csv, loss.png
  $OUT/captions.tsv, captions.json                        captions of held-out scenes
  $OUT/attention/*.png                                    attention strips, one per image
  $OUT/caption-model/                                     model.safetensors, log.csv, curves
MSG
