#!/bin/sh
# scenes_standin.sh OUT [COUNT]: a small stand-in for Flickr8k and COCO, written by the
# toolkit from its synthetic scenes (`caption scenes`), for running experiments/
# sat_flickr8k.sh and sat_coco.sh end to end where the real data sets are not at hand:
#   OUT/flickr8k/          the Flickr8k archive's layout: Flicker8k_Dataset/*.png,
#                          Flickr8k.token.txt ("NAME#k<TAB>caption"), and the split lists
#                          Flickr_8k.trainImages.txt, .devImages.txt, .testImages.txt
#   OUT/coco/dataset_coco.json   a Karpathy-style split file ({"images": [{"filepath",
#                          "filename", "split", "cocoid", "sentences": [{"raw"}]}]}) over
#                          OUT/coco/images/<split folder>/*.png
# COUNT scenes (default 60: 80% train, 10% validation, 10% test), 64 x 64 pixels.
# Environment: BIN (default bin), SEED (scenes seed, default 1).
set -eu
out=${1:?usage: scenes_standin.sh OUT [COUNT]}
count=${2:-60}
BIN=${BIN:-bin}
mkdir -p "$out"
"$BIN/caption" scenes --out "$out/scenes" --count "$count" --image-size 64 --seed "${SEED:-1}"
tsv="$out/scenes/captions.tsv"

# Flickr8k: the images in Flicker8k_Dataset/, captions numbered per image from 0.
f="$out/flickr8k"
mkdir -p "$f/Flicker8k_Dataset"
cp "$out"/scenes/*.png "$f/Flicker8k_Dataset/"
awk -F '\t' '{ k[$1]++; printf "%s#%d\t%s\n", $1, k[$1] - 1, $2 }' "$tsv" > "$f/Flickr8k.token.txt"
for s in train:train dev:valid test:test; do
    name=${s%%:*} split=${s#*:}
    awk -F '\t' -v s="$split" '$3 == s || ($3 == "val" && s == "valid") { if (!seen[$1]++) print $1 }' \
        "$tsv" > "$f/Flickr_8k.${name}Images.txt"
done

# Karpathy-style JSON: COCO's folders (train2014 for train, val2014 for val and test).
c="$out/coco"
mkdir -p "$c/images/train2014" "$c/images/val2014"
awk -F '\t' '
function esc(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); return s }
{
    if (!($1 in id)) { id[$1] = n; order[n++] = $1; split_of[$1] = $3 }
    caps[$1] = caps[$1] (caps[$1] == "" ? "" : ", ") "{\"raw\": \"" esc($2) "\"}"
}
END {
    printf "{\"dataset\": \"coco\", \"images\": ["
    for (i = 0; i < n; i++) {
        f = order[i]; s = split_of[f]
        if (s == "valid") s = "val"
        folder = s == "train" ? "train2014" : "val2014"
        printf "%s\n{\"filepath\": \"%s\", \"filename\": \"%s\", \"split\": \"%s\", \"cocoid\": %d, \"sentences\": [%s]}", \
            i ? "," : "", folder, f, s, 100000 + i, caps[f]
        print folder "/" f > "/dev/stderr"
    }
    printf "\n]}\n"
}' "$tsv" > "$c/dataset_coco.json" 2> "$c/files.txt"
while read -r rel; do
    cp "$out/scenes/$(basename "$rel")" "$c/images/$rel"
done < "$c/files.txt"
rm -f "$c/files.txt"
echo "scenes_standin.sh: $out/flickr8k (Flickr8k layout) and $out/coco/dataset_coco.json (Karpathy-style) from $count scenes" >&2
