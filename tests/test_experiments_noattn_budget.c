// test_experiments_noattn_budget.c: the budget experiments/draw_mnist.sh paper-noattn trains
// to, the paper run's last milestone. The program is a stand-in script (newer than the
// sources) that records its arguments and prints JSON of the fields the script reads (a
// validation bound that improves at every call, so the schedule never converges early);
// milestones and checks are shortened with MILESTONE_STEPS and SCHEDULE_STEPS. Checked: no
// paper run, and a paper run short of its first milestone, are refused with one line
// before anything trains (the second used to count as "finished at step 0"); a paper run
// past its second milestone gives paper-noattn that milestone, not its own step. Run from
// the repository root (as tests/run.sh is).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tests/support/scratch.h"
#include "tests/support/test.h"

static char dir[256];

// bin/draw: appends its arguments to called.txt; eval prints a bound one lower than the
// call before.
static void write_stand_in(void) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "rm -rf %s/bin %s/runs %s/called.txt %s/count %s/results.md && mkdir -p %s/bin",
             dir, dir, dir, dir, dir, dir);
    EXPECT(system(cmd) == 0, "set-up");
    char path[600];
    snprintf(path, sizeof path, "%s/bin/draw", dir);
    FILE *fp = fopen(path, "w");
    EXPECT(fp != NULL, "cannot write %s", path);
    if (!fp) return;
    fprintf(fp,
            "#!/bin/sh\n"
            "echo \"$*\" >> %s/called.txt\n"
            "case $1 in\n"
            "train) echo '{\"steps\": 1}' ;;\n"
            "eval) n=$(cat %s/count 2>/dev/null || echo 0); n=$((n + 1)); echo $n > %s/count\n"
            "      echo \"{\\\"nll_bound\\\": $((100 - n)).5, \\\"recon\\\": 60.0, \\\"kl\\\": 30.0, "
            "\\\"nll_iw\\\": 85.0, \\\"images\\\": 10}\" ;;\n"
            "esac\n"
            "exit 0\n",
            dir, dir, dir);
    fclose(fp);
    snprintf(cmd, sizeof cmd, "chmod +x %s", path);
    EXPECT(system(cmd) == 0, "chmod");
}

// Writes RUNS/draw-paper/schedule as a paper run at step `at` leaves it.
static void paper_at(int at) {
    char cmd[800];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/runs/draw-paper && echo '%d 1e-3 90.5 0 0' > %s/runs/draw-paper/schedule",
             dir, at, dir);
    EXPECT(system(cmd) == 0, "paper schedule");
}

// Runs paper-noattn with checks every 50 steps and milestones every 100; its exit status.
static int run_noattn(void) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "ATTEND_BIN=%s/bin RUNS=%s/runs RESULTS=%s/results.md MILESTONE_STEPS=100 "
             "SCHEDULE_STEPS=50 THREADS=1 sh experiments/draw_mnist.sh paper-noattn > %s/out.txt "
             "2> %s/err.txt",
             dir, dir, dir, dir, dir);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *read_file(const char *name) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return scratch_read_text(path, NULL);
}

// One line on stderr holding `want`, nothing trained.
static void expect_refused(const char *want) {
    int st = run_noattn();
    char *err = read_file("err.txt"), *called = read_file("called.txt");
    EXPECT(st == 2, "exit status %d (stderr: %s)", st, err ? err : "");
    EXPECT(err && strstr(err, want) && strchr(err, '\n') == err + strlen(err) - 1,
           "stderr is not one line saying '%s': %s", want, err ? err : "(none)");
    EXPECT(called == NULL, "the program was called: %s", called);
    free(err), free(called);
}

static void test_no_paper_run_refused(void) {
    write_stand_in();
    expect_refused("run 'paper' first or set NOATTN_EPOCHS");
}

static void test_paper_run_before_first_milestone_refused(void) {
    write_stand_in();
    paper_at(90);
    expect_refused("is at step 90, before its first (100): run 'paper' further or set NOATTN_EPOCHS");
}

static void test_budget_is_paper_runs_last_milestone(void) {
    write_stand_in();
    paper_at(250);  // milestones at 100 and 200: the budget is 200
    int st = run_noattn();
    char *err = read_file("err.txt"), *called = read_file("called.txt");
    EXPECT(st == 0, "exit status %d: %s", st, err ? err : "");
    const char *steps[4] = {"--steps 50 ", "--steps 100 ", "--steps 150 ", "--steps 200 "};
    const char *at = called;
    for (int i = 0; i < 4; i++) {
        const char *hit = at ? strstr(at, steps[i]) : NULL;
        EXPECT(hit && strstr(called, "--no-attention"), "no training to %s in order: %s", steps[i],
               called ? called : "(not run)");
        at = hit;
    }
    EXPECT(called && !strstr(called, "--steps 250"), "trained past the budget: %s", called);
    EXPECT(err && strstr(err, "paper-noattn: finished at step 200"), "stderr: %s", err ? err : "");
    char *table = read_file("results.md");
    int rows = 0;
    for (const char *p = table; p && (p = strstr(p, "\n| 2")); p++) rows++;
    EXPECT(rows == 2, "%d rows, expected one per milestone (100 and 200)", rows);
    EXPECT(table && strstr(table, "| paper-noattn | ") && strstr(table, "| 87.40 |"), "rows: %s",
           table ? table : "(none)");
    free(err), free(called), free(table);
}

int main(void) {
    if (scratch_make(dir, sizeof dir, "test_experiments_noattn_budget")) return 1;
    RUN(test_no_paper_run_refused);
    RUN(test_paper_run_before_first_milestone_refused);
    RUN(test_budget_is_paper_runs_last_milestone);
    scratch_remove(dir);
    return test_summary();
}
