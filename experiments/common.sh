# common.sh: shell functions the DRAW experiment scripts share; sourced, not run.

# json_field KEY < one-line JSON object: the number (or nan/inf) under KEY.
json_field() {
    sed -n "s/.*\"$1\": *\([-0-9.eE+naifl]*\).*/\1/p"
}

# train_wall DIR: seconds of training that DIR/log.csv records, over every process that
# trained the run. Its last column (seconds since that process started) starts again at
# each --resume, so the last figure before each restart is summed; a killed process counts
# up to its last row. 0 when there is no log.
train_wall() {
    [ -s "$1/log.csv" ] || { echo 0; return; }
    awk -F, 'NR > 1 { s = $NF + 0; if (s < last) total += last; last = s }
             END { printf "%.0f\n", total + last }' "$1/log.csv"
}
