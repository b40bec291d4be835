// stand_in.h: tests of the experiment scripts (experiments/*.sh) with a stand-in for the
// program they call. The stand-in is a shell script DIR/bin/NAME that appends its
// arguments to DIR/called.txt and then runs a body of shell text answering each command
// with what the real program's --json prints (the fields the script reads); in the body,
// $dir is DIR. So a test checks the script's own logic (its schedule, its refusals, the
// table rows it writes) without training anything, in milliseconds.
//
//     stand_in_write(dir, "draw", "case $1 in eval) echo '{\"nll_bound\": 90.5}' ;; esac\n");
//     int status = stand_in_run(dir, NULL, "STEPS=300", "draw_cluttered.sh dram8");
//     char *called = stand_in_read(dir, "called.txt");   // every call, one line each
//
// Run from the repository root (as tests/run.sh does): scripts are found as experiments/.
#ifndef TESTS_SUPPORT_STAND_IN_H
#define TESTS_SUPPORT_STAND_IN_H

#include <stddef.h>

// Writes the executable DIR/bin/NAME with body after the recording line, and removes
// DIR/called.txt. Returns 0, or -1 after printing why.
int stand_in_write(const char *dir, const char *name, const char *body);

// Runs "ENV ATTEND_BIN=BIN RUNS=DIR/runs RESULTS=DIR/results.md sh experiments/SCRIPT_ARGS
// > DIR/out.txt 2> DIR/err.txt" (bin NULL: DIR/bin; env may be ""). Returns the exit
// status, or -1 when the script did not exit normally.
int stand_in_run(const char *dir, const char *bin, const char *env, const char *script_args);

// DIR/NAME's text (malloc'd), or NULL when it cannot be read.
char *stand_in_read(const char *dir, const char *name);

// The dated rows of a results table in text: lines that start with "| 2".
int stand_in_count_rows(const char *text);
// The last of them, copied into buf (cap bytes, cut to fit); "" when there is none.
const char *stand_in_last_row(const char *text, char *buf, size_t cap);

#endif
