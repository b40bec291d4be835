#!/bin/sh
# run_fuzz.sh: runs the libFuzzer targets one after the other and reports how deep each went.
# Called by `make fuzz` (tests/fuzz/fuzz.mk), which passes its settings in the environment:
#   FUZZ_BUILD FUZZ_TARGETS FUZZ_SECONDS FUZZ_RUNS FUZZ_MAX_LEN FUZZ_NICE FUZZ_STATS
# FUZZ_RUNS (executions) and FUZZ_SECONDS (seconds) both bound a run, whichever comes first;
# 0 leaves that bound off. Each target's whole libFuzzer log is kept in
# FUZZ_BUILD/logs/NAME.log; its summary is printed and appended to FUZZ_STATS as one
# tab-separated line:
#   date target executions seconds exec_per_sec cov ft corpus crashes
# where executions, exec_per_sec come from libFuzzer's -print_final_stats=1
# (stat::number_of_executed_units, stat::average_exec_per_sec), cov and ft are the
# coverage counters (edges, features) of its last status line, seconds is wall time, and
# crashes counts the files the run left under FUZZ_BUILD/crashes/NAME. The exit status is
# non-zero when any crashing input exists.
set -u
: "${FUZZ_BUILD:=build-fuzz}" "${FUZZ_TARGETS:=image idx captions safetensors tokenizer encoder}"
: "${FUZZ_SECONDS:=60}" "${FUZZ_RUNS:=0}" "${FUZZ_MAX_LEN:=8192}" "${FUZZ_NICE:=nice -n 10}"
: "${FUZZ_STATS:=$FUZZ_BUILD/fuzz-stats.tsv}"

mkdir -p "$FUZZ_BUILD/logs"
[ -f "$FUZZ_STATS" ] ||
    printf 'date\ttarget\texecutions\tseconds\texec_per_sec\tcov\tft\tcorpus\tcrashes\n' >"$FUZZ_STATS"
printf '%-12s %12s %8s %10s %7s %7s %7s %8s\n' target executions seconds exec/s cov ft corpus crashes

# Per-target longest input: the encoder's seeds (whole narrow networks) are ~11 KB.
max_len_of() {
    case "$1" in
    encoder) echo 24576 ;;
    *) echo "$FUZZ_MAX_LEN" ;;
    esac
}

for t in $FUZZ_TARGETS; do
    corpus="$FUZZ_BUILD/corpus/$t" crashes="$FUZZ_BUILD/crashes/$t" log="$FUZZ_BUILD/logs/$t.log"
    mkdir -p "$corpus" "$crashes" "tests/fuzz/regressions/$t"
    dict=
    [ -f "tests/fuzz/$t.dict" ] && dict="-dict=tests/fuzz/$t.dict"
    start=$(date +%s)
    # shellcheck disable=SC2086 # FUZZ_NICE and dict are word lists
    # libFuzzer: -runs=0 would only replay the corpus; -1 is no bound.
    runs=$FUZZ_RUNS
    [ "$runs" -gt 0 ] || runs=-1
    $FUZZ_NICE "$FUZZ_BUILD/fuzz_$t" -max_total_time="$FUZZ_SECONDS" -runs="$runs" \
        -max_len="$(max_len_of "$t")" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        $dict -artifact_prefix="$crashes/" \
        "$corpus" "tests/fuzz/corpus/$t" "tests/fuzz/regressions/$t" >"$log" 2>&1
    end=$(date +%s)
    grep -E '^(==[0-9]+==ERROR|SUMMARY|fuzz property violated|Test unit written)' "$log" | head -5
    awk -v t="$t" -v secs=$((end - start)) -v date="$(date -u +%Y-%m-%dT%H:%MZ)" \
        -v crashes="$(find "$crashes" -type f | wc -l)" -v stats="$FUZZ_STATS" '
        /^#[0-9]+/ && / cov: / {
            for (i = 1; i <= NF; i++) {
                if ($i == "cov:") cov = $(i + 1)
                if ($i == "ft:") ft = $(i + 1)
                if ($i == "corp:") corp = $(i + 1)
            }
        }
        /^stat::number_of_executed_units:/ { execs = $2 }
        /^stat::average_exec_per_sec:/ { rate = $2 }
        END {
            if (execs == "") execs = "?"
            printf "%-12s %12s %8d %10s %7s %7s %7s %8d\n", t, execs, secs, rate, cov, ft, corp, crashes
            printf "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%d\n", date, t, execs, secs, rate, cov, ft, corp,
                crashes >> stats
        }' "$log"
done
n=$(find "$FUZZ_BUILD/crashes" -type f | wc -l)
echo "fuzz: $n crashing input(s) under $FUZZ_BUILD/crashes; logs in $FUZZ_BUILD/logs, figures appended to $FUZZ_STATS"
[ "$n" -eq 0 ]
