#!/bin/sh
# run.sh BUILD BINDIR: run every test program in BUILD/tests, count "ok" and "FAIL"
# lines, and end with "N passed, N failed". A program that crashes or exits non-zero
# without printing FAIL counts as one failure. Exits non-zero on any failure.
build=${1:-build}
bindir=${2:-bin}
export ATTEND_BIN="$bindir"
passed=0
failed=0
log=$(mktemp)
for t in "$build"/tests/test_*; do
    case "$t" in *.d|*.o) continue ;; esac
    [ -x "$t" ] || continue
    name=$(basename "$t")
    start=$(date +%s)
    "$t" > "$log" 2>&1
    status=$?
    p=$(grep -c '^ok ' "$log")
    f=$(grep -c '^FAIL ' "$log")
    if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1
        echo "FAIL $name: exited with status $status"
        tail -n 20 "$log"
    fi
    grep '^FAIL \|^  ' "$log"
    passed=$((passed + p))
    failed=$((failed + f))
    echo "$name: $p passed, $f failed ($(( $(date +%s) - start ))s)"
done
rm -f "$log"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
