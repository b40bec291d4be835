# common.sh: shell functions the DRAW experiment scripts share; sourced, not run.

# json_field KEY < one-line JSON object: the number (or nan/inf) under KEY.
json_field() {
    sed -n "s/.*\"$1\": *\([-0-9.eE+naifl]*\).*/\1/p"
}

# train_wall DIR [STEP]: seconds of training that DIR/log.csv records, over every process
# that trained the run. Its last column (seconds since that process started) starts again
# at each --resume, so the last figure before each restart is summed; a killed process
# counts up to its last row. With STEP, only the rows of steps up to STEP count (a
# checkpoint's share of a run still training). 0 when there is no log.
train_wall() {
    [ -s "$1/log.csv" ] || { echo 0; return; }
    awk -F, -v upto="${2:-}" 'NR > 1 && (upto == "" || $1 + 0 <= upto + 0) {
                 s = $NF + 0; if (s < last) total += last; last = s }
             END { printf "%.0f\n", total + last }' "$1/log.csv"
}

# require_current_program SCRIPT PROGRAM: exits 2 with one line on stderr (naming SCRIPT)
# unless PROGRAM (a path such as bin/draw) exists and is newer than every C source and
# header the programs are built from (cli/ core/ seq/ vision/ datasets/ models/ of the
# checkout holding the running script). A run must measure the model the checkout
# describes: a bin/ left from before a merge trains the old model under the new name (a
# "from scratch" ram8 row came from a binary built before the retina it was meant to test).
require_current_program() {
    [ -x "$2" ] || { echo "$1: $2 not found (run make first, or set ATTEND_BIN)" >&2; exit 2; }
    rcp_abs=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
    rcp_newer=$(cd "$(dirname "$0")/.." && find cli core seq vision datasets models -name '*.[ch]' \
        -newer "$rcp_abs" 2>/dev/null | head -n 1)
    [ -z "$rcp_newer" ] || {
        echo "$1: $2 is older than its source $rcp_newer: run make first (or set ATTEND_BIN to a current build)" >&2
        exit 2
    }
}

# table_row FILE MARKER HEADER ROW: inserts ROW after the last line of the first table at
# or after the first line that starts with MARKER; when no line does, HEADER (which holds
# such a line and the table's head) is appended to FILE first. So a row lands in its own
# table whatever prose follows it (draw_mnist.sh's quick and paper-configuration tables,
# the notes under a results page's table).
table_row() {
    file=$1 marker=$2 header=$3 row=$4
    mkdir -p "$(dirname "$file")"
    touch "$file"
    if ! awk -v m="$marker" 'index($0, m) == 1 { found = 1 } END { exit !found }' "$file"; then
        [ -s "$file" ] && echo >> "$file"
        printf '%s\n' "$header" >> "$file"
    fi
    awk -v marker="$marker" -v row="$row" '
        { line[NR] = $0 }
        index($0, marker) == 1 && !start { start = NR }
        END {
            last = 0
            for (i = start; i <= NR; i++) {
                if (line[i] ~ /^\|/) last = i
                else if (last) break
            }
            for (i = 1; i <= NR; i++) {
                print line[i]
                if (i == last) print row
            }
        }' "$file" > "$file.tmp.$$" && mv "$file.tmp.$$" "$file"
}

# draw_report_pictures BIN DIR DATA SCALE: the pictures and page of `draw report`
# (cli/report_draw.h) for DIR's model: 16 samples and 16 reconstructions of DATA's test
# images at SCALE pixels per image pixel, one sample's film at 3, and report.html with the
# test figures of DIR/test.json. MODEL (a fifth argument; default DIR/model.safetensors):
# the checkpoint drawn, a kept snapshot of DIR's run say.
draw_report_pictures() {
    drp_model=${5:-$2/model.safetensors}
    "$1/draw" generate --model "$drp_model" --count 16 --show-attention --scale "$4" --out "$2/samples"
    "$1/draw" reconstruct --model "$drp_model" --data "$3" --count 16 --scale "$4" --out "$2/reconstructions"
    "$1/draw" generate --model "$drp_model" --count 1 --show-attention --scale 3 --out "$2/film"
    "$1/draw" report "$2" --eval test.json
}
