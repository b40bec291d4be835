// test_experiments_stale_bin.c: experiments/draw_cluttered.sh refuses a program older than
// the checkout's sources (experiments/common.sh, require_current_program). A bin/draw
// built before a merge trains the model of its own day under the new one's name; a
// "from scratch" ram8 row was measured that way. The program here is a stand-in
// (tests/support/stand_in.h) that records its arguments, so the test trains nothing and
// takes milliseconds. Run from the repository root (as tests/run.sh is).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/support/scratch.h"
#include "tests/support/stand_in.h"
#include "tests/support/test.h"

static char dir[256];

// Runs the experiment script for ram8 with ATTEND_BIN=bin_dir and every output under the
// scratch folder; returns its exit status (-1 when it did not exit) and its stderr.
static int run_script(const char *bin_dir, char **err_text) {
    int st = stand_in_run(dir, bin_dir, "STEPS=1", "draw_cluttered.sh ram8");
    *err_text = stand_in_read(dir, "err.txt");
    return st;
}

static int exists(const char *name) {
    char path[600];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &sb) == 0;
}

// bin/draw: fails after recording its arguments (the script stops there); touched with
// `touch MTIME` ("" for now).
static void write_stand_in(const char *mtime) {
    EXPECT(stand_in_write(dir, "draw", "exit 1\n") == 0, "cannot write the stand-in program");
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "touch %s %s/bin/draw", mtime, dir);
    EXPECT(system(cmd) == 0, "cannot touch the stand-in program");
}

static void test_stale_program_refused(void) {
    write_stand_in("-d 2000-01-01");  // older than any source of the checkout
    char bin[300], *err = NULL;
    snprintf(bin, sizeof bin, "%s/bin", dir);
    int st = run_script(bin, &err);
    EXPECT(st == 2, "exit status %d, expected 2", st);
    EXPECT(err && strstr(err, "draw_cluttered.sh: ") == err, "stderr: %s", err ? err : "(none)");
    EXPECT(err && strstr(err, "/bin/draw is older than its source "), "stderr: %s", err ? err : "(none)");
    EXPECT(err && strstr(err, "run make first"), "stderr: %s", err ? err : "(none)");
    EXPECT(scratch_count_lines(err) == 1, "%d lines on stderr: %s", scratch_count_lines(err), err ? err : "(none)");
    EXPECT(!exists("called.txt"), "the stale program was run");
    EXPECT(!exists("runs") && !exists("results.md"), "the refused run left files");
    free(err);
}

static void test_missing_program_refused(void) {
    char bin[300], *err = NULL;
    snprintf(bin, sizeof bin, "%s/no-such-bin", dir);
    int st = run_script(bin, &err);
    EXPECT(st == 2, "exit status %d, expected 2", st);
    EXPECT(err && strstr(err, "no-such-bin/draw not found"), "stderr: %s", err ? err : "(none)");
    EXPECT(scratch_count_lines(err) == 1, "%d lines on stderr", scratch_count_lines(err));
    free(err);
}

// A program newer than the sources is run, with the configuration's flags.
static void test_current_program_runs(void) {
    write_stand_in("");  // now
    char bin[300], *err = NULL;
    snprintf(bin, sizeof bin, "%s/bin", dir);
    int st = run_script(bin, &err);
    EXPECT(st != 0, "the stand-in fails, so the script should too (status %d)", st);
    EXPECT(err && !strstr(err, "older than"), "refused a current program: %s", err ? err : "(none)");
    char *called = stand_in_read(dir, "called.txt");
    EXPECT(called && strstr(called, "classify train --T 8 --read 12 --hidden 256 --hard"),
           "the program was not run as ram8: %s", called ? called : "(not run)");
    free(called);
    free(err);
}

int main(void) {
    if (scratch_make(dir, sizeof dir, "test_experiments_stale_bin")) return 1;
    RUN(test_missing_program_refused);
    RUN(test_stale_program_refused);
    RUN(test_current_program_runs);
    scratch_remove(dir);
    return test_summary();
}
