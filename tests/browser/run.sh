#!/bin/sh
# run.sh BINDIR OUTDIR: the browser test of the reports (`make test-browser`).
#
# Makes a short captioner run, a short DRAW run and a short translator run (the date task)
# with their reports (and the translator's alignment page), the experiments
# index over them, and the demo's three report pages (experiments/demo.sh at DEMO_SCALE=tiny,
# its stand-in size: seconds; DEMO_OUT=DIR checks the pages a `make demo` wrote into DIR
# instead, e.g. DEMO_OUT=demo-out make test-browser), then loads each page from disk in
# headless Chromium (Debian's chromium; `make test-browser` installs it through deps.sh
# when missing). A page fails when the browser logs any console message (a script error, a
# failed load), when any image did not load, when it has a "missing" section (an input of
# a report not made: class "missing"), when it is wider than the window (a horizontal
# scroll bar) or absurdly long, or when printing it to PDF fails. Screenshots (1280 pixels
# wide, the whole page) and the PDFs go to OUTDIR/screenshots/. Ends with "N passed, N failed" like tests/run.sh.
#
# How the checks see the page: a small harness page (written here, next to the pages)
# loads it in an iframe and, once it has loaded, writes the image count, the images that
# did not decode, the "missing" sections and the page's scroll size into its own DOM, which --dump-dom prints.
# --allow-file-access-from-files lets the harness read a file:// iframe.
set -u
bindir=${1:-bin}
out=${2:-build/browser}
chrome=${CHROMIUM:-chromium}
width=1280
max_height=60000  # a report; the index, which holds every table of experiments/results, gets index_height
index_height=100000
command -v "$chrome" >/dev/null 2>&1 || { echo "run.sh: $chrome not found (make test-browser installs it)"; exit 1; }
rm -rf "$out"
mkdir -p "$out/runs" "$out/screenshots"
abs_out=$(cd "$out" && pwd)
log="$out/make-runs.log"

demo=${DEMO_OUT:-}
if [ -n "$demo" ]; then demo_says="(the demo's pages: $demo)"; else demo_says="and the tiny demo"; fi
echo "browser test: making a captioner run, a DRAW run, a translator run, their reports $demo_says (log: $log)"
cap="$out/runs/captioner"
drw="$out/runs/draw"
mt="$out/runs/translator"
small="--image-size 64 --channels 8,16,32 --embed 32 --hidden 64 --attn-dim 32 --batch 16 --train-count 2000 --val-count-scenes 100 --test-count 100 --threads 2 --quiet"
data="--data scenes --train-count 2000 --val-count-scenes 100 --test-count 100 --threads 2 --quiet"
{
    "$bindir/caption" train --out "$cap" --steps 300 $small &&
    "$bindir/caption" eval --model "$cap/model.safetensors" --split test --beam 3 --json \
        --per-image "$cap/per_image.json" --attention-out "$cap/strips" --attention-count 6 $data > "$cap/eval.json" &&
    "$bindir/caption" report "$cap" --ranked 6 &&
    "$bindir/draw" train --data mnist --out "$drw" --T 10 --read 3 --write 4 --hidden 64 --z 10 --batch 100 \
        --steps 150 --valid-every 50 --valid-images 500 --threads 2 &&
    "$bindir/draw" eval --model "$drw/model.safetensors" --split test --samples 2 --limit 1000 --threads 2 --json > "$drw/eval.json" &&
    "$bindir/draw" generate --model "$drw/model.safetensors" --count 16 --show-attention --scale 4 --out "$drw/samples" &&
    "$bindir/draw" reconstruct --model "$drw/model.safetensors" --count 16 --scale 4 --out "$drw/reconstructions" &&
    "$bindir/draw" generate --model "$drw/model.safetensors" --count 1 --show-attention --scale 3 --out "$drw/film" &&
    "$bindir/draw" report "$drw" &&
    "$bindir/text" translate train --data dates --train-size 2000 --steps 100 --out "$mt" &&
    "$bindir/text" translate eval --model "$mt/model.safetensors" --json > "$mt/eval.json" &&
    "$bindir/text" translate show --model "$mt" --count 6 --out "$mt/show" &&
    "$bindir/text" translate report --model "$mt" &&
    RUNS="$out/runs" OUT="$out/index.html" sh experiments/index.sh &&
    if [ -z "$demo" ]; then
        ATTEND_BIN="$bindir" DEMO_SCALE=tiny OUT="$out/demo" THREADS=2 sh experiments/demo.sh
    fi
} > "$log" 2>&1 || { echo "FAIL browser: making the runs failed:"; tail -n 20 "$log"; echo "0 passed, 1 failed"; exit 1; }

passed=0
failed=0
# check NAME PAGE: loads PAGE (a path) through the harness.
check() {
    name=$1
    if [ ! -f "$2" ]; then
        failed=$((failed + 1))
        echo "FAIL $name: no page $2"
        return
    fi
    page=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
    harness="$out/harness-$name.html"
    cat > "$harness" <<EOF
<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>harness</title></head><body>
<iframe id="page" src="file://$page" style="width:${width}px;height:900px;border:0"></iframe>
<pre id="result">RESULT none</pre>
<script>
var frame = document.getElementById('page');
frame.addEventListener('load', function () {
  var doc = frame.contentDocument;
  if (!doc) { document.getElementById('result').textContent = 'RESULT no-access'; return; }
  var broken = [];
  for (var i = 0; i < doc.images.length; i++) {
    var im = doc.images[i];
    if (!im.complete || im.naturalWidth === 0) broken.push(im.getAttribute('src'));
  }
  document.getElementById('result').textContent = 'RESULT images=' + doc.images.length +
    ' broken=' + broken.length + ' missing=' + doc.querySelectorAll('.missing').length +
    ' width=' + doc.documentElement.scrollWidth +
    ' height=' + doc.documentElement.scrollHeight + ' first_broken=' + (broken[0] || '-');
});
</script>
</body></html>
EOF
    flags="--headless --no-sandbox --disable-gpu --hide-scrollbars --allow-file-access-from-files"
    # shellcheck disable=SC2086
    timeout 120 "$chrome" $flags --enable-logging=stderr --v=0 --virtual-time-budget=10000 \
        --dump-dom "file://$abs_out/harness-$name.html" > "$out/$name.dom" 2> "$out/$name.log"
    result=$(grep -o 'RESULT [^<]*' "$out/$name.dom" | head -n 1)
    consoles=$(grep 'CONSOLE' "$out/$name.log")
    images=$(echo "$result" | sed -n 's/.* images=\([0-9]*\).*/\1/p')
    broken=$(echo "$result" | sed -n 's/.* broken=\([0-9]*\).*/\1/p')
    missing=$(echo "$result" | sed -n 's/.* missing=\([0-9]*\).*/\1/p')
    w=$(echo "$result" | sed -n 's/.* width=\([0-9]*\).*/\1/p')
    h=$(echo "$result" | sed -n 's/.* height=\([0-9]*\).*/\1/p')
    why=""
    if [ -z "$images" ] || [ -z "$h" ]; then why="the harness saw no result ($result)"
    elif [ -n "$consoles" ]; then why="console: $(echo "$consoles" | head -n 3)"
    elif [ "$broken" != 0 ]; then why="$broken of $images images did not load ($result)"
    elif [ "$missing" != 0 ]; then why="$missing missing sections (an input of the report not made)"
    elif [ "$w" -gt "$width" ]; then why="page is $w pixels wide in a $width-pixel window"
    elif [ "$h" -gt "$(if [ "$name" = index ]; then echo "$index_height"; else echo "$max_height"; fi)" ] ||
        [ "$h" -lt 300 ]; then why="page height $h pixels"
    fi
    if [ -z "$why" ]; then
        # shellcheck disable=SC2086
        timeout 120 "$chrome" $flags --window-size="$width,$h" --virtual-time-budget=10000 \
            --screenshot="$abs_out/screenshots/$name.png" "file://$page" > /dev/null 2>> "$out/$name.log"
        # shellcheck disable=SC2086
        timeout 120 "$chrome" $flags --virtual-time-budget=10000 --no-pdf-header-footer \
            --print-to-pdf="$abs_out/screenshots/$name.pdf" "file://$page" > /dev/null 2>> "$out/$name.log"
        if [ ! -s "$out/screenshots/$name.png" ]; then why="no screenshot"
        elif [ ! -s "$out/screenshots/$name.pdf" ] || ! head -c 5 "$out/screenshots/$name.pdf" | grep -q '%PDF'; then why="printing to PDF failed"
        fi
    fi
    if [ -z "$why" ]; then
        passed=$((passed + 1))
        echo "ok $name: $images images, ${w}x$h pixels; $out/screenshots/$name.png"
    else
        failed=$((failed + 1))
        echo "FAIL $name: $why"
    fi
}

check captioner "$out/runs/captioner/report.html"
check draw "$out/runs/draw/report.html"
check translator "$mt/report.html"
check translator-show "$mt/show/alignments.html"
check index "$out/index.html"
demo_pages=${demo:-$out/demo}
check demo-draw "$demo_pages/draw-model/report.html"
check demo-caption "$demo_pages/caption-model/report.html"
check demo-text "$demo_pages/text-model/report.html"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
