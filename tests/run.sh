#!/bin/sh
# run.sh BUILD BINDIR [NAME...]: run every test program in BUILD/tests (or only the named
# ones, e.g. test_args), count "ok" and "FAIL" lines, and end with "N passed, N failed".
# A program that crashes or exits non-zero without printing FAIL counts as one failure.
# ATTEND_GEMM=isa unless set (below).
# Exits non-zero on any failure.
#
# ATTEND_VALGRIND="valgrind FLAGS" (set by `make valgrind`) runs each test program under
# that command, and the CLI programs the tests spawn too: ATTEND_BIN then points at small
# wrapper scripts that exec the same command on BINDIR/draw and BINDIR/caption (cheaper
# than --trace-children=yes, which would also run every /bin/sh of system() under
# valgrind). Every process writes its own log (--log-file=.../%p.log); a test with a log
# that reports an error (ERROR SUMMARY above 0, or an error record in the log of a process
# killed before its summary) counts one more failure, and its logs are kept under
# BUILD/valgrind-logs/NAME/. ATTEND_VALGRIND_CHILDREN=0 leaves the spawned programs
# native (the CLI tests then take a few seconds instead of minutes).
build=${1:-build}
bindir=${2:-bin}
[ $# -gt 2 ] && shift 2 || set --
export ATTEND_BIN="$bindir"
# The matrix-multiply kernels come from the CPU's instruction set, never from a measurement
# (core/gemm.h), so that no result of the suite depends on the load of the moment; a
# choice you set (ATTEND_GEMM=openblas, say) is kept.
export ATTEND_GEMM="${ATTEND_GEMM:-isa}"
passed=0
failed=0
skipped=0
log=$(mktemp)
vg=${ATTEND_VALGRIND:-}
if [ -n "$vg" ]; then
    vgdir=$(mktemp -d)
    mkdir -p "$vgdir/bin" "$vgdir/logs"
    absbin=$(cd "$bindir" && pwd)
    # A rank started by mpirun (OMPI_COMM_WORLD_RANK set) is checked for everything but
    # leaks: Open MPI's own allocations in MPI_Init are never freed, as under `make check`
    # (tests/support/scratch.c, scratch_run_mpi); the one-process tests leak-check the same
    # code paths.
    for p in draw caption text; do
        printf '#!/bin/sh\nleaks=\n[ -z "${OMPI_COMM_WORLD_RANK:-}" ] || leaks=--leak-check=no\nexec %s $leaks --log-file=%s/logs/%%p.log "%s/%s" "$@"\n' \
            "$vg" "$vgdir" "$absbin" "$p" > "$vgdir/bin/$p"
        chmod +x "$vgdir/bin/$p"
    done
    [ "${ATTEND_VALGRIND_CHILDREN:-1}" = 0 ] || export ATTEND_BIN="$vgdir/bin"
    rm -rf "$build/valgrind-logs"
fi
# Error records of memcheck, and a process ended by a signal (valgrind's own failure on an
# instruction it cannot run is a SIGILL) other than SIGTERM: the killed-rank tests of
# test_cli_mpi end the surviving rank with it on purpose (mpirun does, once a rank is lost).
vg_errors='ERROR SUMMARY: [1-9]|Invalid (read|write|free)|uninitialised|Mismatched free|overlap in|fishy|are definitely lost|unhandled instruction|Process terminating with default action of signal ([1-9]|1[0-4]|1[6-9]|[2-9][0-9]) '
for t in "$build"/tests/test_*; do
    case "$t" in *.d|*.o) continue ;; esac
    [ -x "$t" ] || continue
    name=$(basename "$t")
    if [ $# -gt 0 ]; then
        case " $* " in *" $name "*) ;; *) continue ;; esac
    fi
    start=$(date +%s)
    if [ -n "$vg" ]; then
        rm -f "$vgdir"/logs/*.log
        $vg --log-file="$vgdir/logs/%p.log" "$t" > "$log" 2>&1
    else
        "$t" > "$log" 2>&1
    fi
    status=$?
    p=$(grep -c '^ok ' "$log")
    f=$(grep -c '^FAIL ' "$log")
    # Under valgrind, status 99 (--error-exitcode) is reported with the logs below.
    if [ "$status" -ne 0 ] && [ "$f" -eq 0 ] && { [ -z "$vg" ] || [ "$status" -ne 99 ]; }; then
        f=1
        echo "FAIL $name: exited with status $status"
        tail -n 20 "$log"
    fi
    grep '^FAIL \|^skip \|^  ' "$log"
    skipped=$((skipped + $(grep -c '^skip ' "$log")))
    if [ -n "$vg" ]; then
        bad=$(grep -lE "$vg_errors" "$vgdir"/logs/*.log 2>/dev/null)
        if [ -z "$bad" ] && [ "$status" -eq 99 ] && [ "$f" -eq 0 ]; then
            f=1
            echo "FAIL $name: exited with status 99 (valgrind errors?) and no log shows why"
        fi
        if [ -n "$bad" ]; then
            f=$((f + 1))
            mkdir -p "$build/valgrind-logs/$name"
            cp "$vgdir"/logs/*.log "$build/valgrind-logs/$name/"
            echo "FAIL $name: valgrind found errors in $(echo "$bad" | wc -l) process(es);" \
                "logs in $build/valgrind-logs/$name"
            for b in $bad; do
                echo "  --- $(grep -m1 'Command:' "$b" | sed 's/^==[0-9]*== *//')"
                grep -v '^==[0-9]*== *$' "$b" | grep -A 24 -m 3 -E "$vg_errors" | head -n 60 | sed 's/^/  /'
            done
        fi
    fi
    passed=$((passed + p))
    failed=$((failed + f))
    echo "$name: $p passed, $f failed ($(( $(date +%s) - start ))s)"
done
rm -f "$log"
[ -n "$vg" ] && rm -rf "$vgdir"
[ "$skipped" -gt 0 ] && echo "$skipped skipped (reasons above)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
