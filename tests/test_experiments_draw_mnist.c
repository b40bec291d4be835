// test_experiments_draw_mnist.c: experiments/draw_mnist.sh's paper runs, on a stand-in
// program (tests/support/stand_in.h, newer than the sources) whose validation bound
// improves at every call, so the schedule never converges early; milestones and checks
// are shortened with MILESTONE_STEPS and SCHEDULE_STEPS. Checked: the budget paper-noattn
// trains to, the paper run's last milestone (no paper run, and a paper run short of its
// first milestone, are refused with one line before anything trains: the second used to
// count as "finished at step 0"; a paper run past its second milestone gives paper-noattn
// that milestone, not its own step); and paper-ema, which trains every part with its weight
// average (--ema PAPER_EMA) into its own folder and rows; and, on a stand-in whose bound
// never improves, the table of checks (each check's rate and decision: a gain, two
// halvings, convergence); a milestone row goes into the milestone table when another
// table opens the paper section; each milestone's IW estimate keeps its images' figures in a
// --per-image file of its step; and paper-long, refused until the paper run has converged,
// then trained on from a copy of its model with the average and the cosine's rates, the
// cosine pinned at its start; and
// paper-peephole, whose every training call has --peepholes, and paper-peephole-long, its
// warm restart; paper-peephole-batch50, at batch 50 with epochs of 1,100 steps, and its
// warm restart; and paper-peephole-cosine, one cosine from scratch with the average, its
// cosine pinned at its first call, and paper-peephole-cosine300, whose name gives its
// cosine's length, and paper-noattn-peephole-cosine300, the same without attention; a
// budget for paper-noattn set by NOATTN_STEPS or NOATTN_EPOCHS (a bad one refused); and an
// unknown configuration, refused with the list of known ones, which the script's usage
// line and experiments/README.md must both hold. Run from the repository root (as
// tests/run.sh is).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/scratch.h"
#include "tests/support/stand_in.h"
#include "tests/support/test.h"

static char dir[256];

// bin/draw: eval prints a bound `drop` lower than the call before (0: always the same).
static void write_stand_in_dropping(int drop) {
    char cmd[1200], body[1200];
    snprintf(cmd, sizeof cmd, "rm -rf %s/runs %s/count %s/results.md", dir, dir, dir);
    EXPECT(system(cmd) == 0, "set-up");
    snprintf(body, sizeof body,
             "case $1 in\n"
             "train) echo '{\"steps\": 1}' ;;\n"
             "eval) n=$(cat \"$dir/count\" 2>/dev/null || echo 0); n=$((n + 1)); "
             "echo $n > \"$dir/count\"\n"
             "      echo \"{\\\"nll_bound\\\": $((100 - %d * n)).5, \\\"recon\\\": 60.0, "
             "\\\"kl\\\": 30.0, \\\"nll_iw\\\": 85.0, \\\"images\\\": 10, "
             "\\\"nll_bound_se\\\": 0.25, \\\"nll_iw_se\\\": 0.5}\" ;;\n"
             "esac\n"
             "exit 0\n",
             drop);
    EXPECT(stand_in_write(dir, "draw", body) == 0, "cannot write the stand-in");
}

static void write_stand_in(void) { write_stand_in_dropping(1); }

// Writes RUNS/draw-paper/schedule as a paper run at step `at` leaves it.
static void paper_at(int at) {
    char cmd[800];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/runs/draw-paper && echo '%d 1e-3 90.5 0 0' > %s/runs/draw-paper/schedule",
             dir, at, dir);
    EXPECT(system(cmd) == 0, "paper schedule");
}

// Leaves RUNS/draw-NAME as a converged run at step `at`, its model file holding the text
// "final NAME".
static void converged_at(const char *name, int at) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/runs/draw-%s && echo '%d 3.9e-06 83.4 3 1' > %s/runs/draw-%s/schedule"
             " && echo 'final %s' > %s/runs/draw-%s/model.safetensors",
             dir, name, at, dir, name, name, dir, name);
    EXPECT(system(cmd) == 0, "%s run", name);
}

static void paper_converged_at(int at) { converged_at("paper", at); }

// Runs paper-noattn with checks every 50 steps and milestones every 100; its exit status.
static int run_noattn(void) {
    return stand_in_run(dir, NULL, "MILESTONE_STEPS=100 SCHEDULE_STEPS=50 THREADS=1",
                        "draw_mnist.sh paper-noattn");
}

// One line on stderr holding `want`, nothing trained, from run().
static void expect_refused_by(int (*run)(void), const char *want) {
    int st = run();
    char *err = stand_in_read(dir, "err.txt"), *called = stand_in_read(dir, "called.txt");
    EXPECT(st == 2, "exit status %d (stderr: %s)", st, err ? err : "");
    EXPECT(err && strstr(err, want) && strchr(err, '\n') == err + strlen(err) - 1,
           "stderr is not one line saying '%s': %s", want, err ? err : "(none)");
    EXPECT(called == NULL, "the program was called: %s", called);
    free(err), free(called);
}

static void expect_refused(const char *want) { expect_refused_by(run_noattn, want); }

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
    char *err = stand_in_read(dir, "err.txt"), *called = stand_in_read(dir, "called.txt");
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
    char *table = stand_in_read(dir, "results.md");
    int rows = stand_in_count_rows(table);
    EXPECT(rows == 2, "%d rows, expected one per milestone (100 and 200)", rows);
    EXPECT(table && strstr(table, "| paper-noattn | ") && strstr(table, "| 87.40 |"), "rows: %s",
           table ? table : "(none)");
    EXPECT(table && strstr(table, ".50 ± 0.25 | 60.00 + 30.00 | 85.00 ± 0.50 (1000, 10; bound "),
           "no standard errors in the rows: %s", table ? table : "(none)");
    // Each row's model gets the report's pictures and page.
    int reports = 0, samples = 0;
    for (const char *p = called; p && (p = strstr(p, "\nreport ")); p++) reports++;
    for (const char *p = called; p && (p = strstr(p, "draw-paper-noattn/samples")); p++) samples++;
    EXPECT(reports == 2 && samples == 2, "%d report and %d samples calls for 2 rows: %s", reports,
           samples, called ? called : "(not run)");
    // Each IW estimate keeps its images' figures in a file of its own step (one cut off goes
    // on from it; the next milestone's weights are another evaluation).
    EXPECT(called && strstr(called, "--per-image ") &&
           strstr(called, "draw-paper-noattn/test_iw.step100.txt --json") &&
           strstr(called, "draw-paper-noattn/test_iw.step200.txt --json"),
           "no --per-image file for each milestone's IW estimate: %s", called ? called : "(not run)");
    free(err), free(called), free(table);
}

// The training calls the stand-in recorded in `called`: their number into *trains; returns
// how many of them have both `flag` and `folder` on their line.
static int trains_with(const char *called, const char *flag, const char *folder, int *trains) {
    int with = 0;
    *trains = 0;
    for (const char *p = called; p && (p = strstr(p, "train ")); p++) {
        const char *eol = strchr(p, '\n'), *end = eol ? eol : p + strlen(p);
        const char *f = strstr(p, flag), *d = strstr(p, folder);
        (*trains)++;
        with += f && f < end && d && d < end;
    }
    return with;
}

// paper-ema: every training call carries --ema PAPER_EMA (0.999 unless set), into
// RUNS/draw-paper-ema; its rows are marked paper-ema, beside the paper's 80.97.
static void test_paper_ema_trains_with_the_average(void) {
    write_stand_in();
    int st = stand_in_run(dir, NULL, "MILESTONE_STEPS=275 SCHEDULE_STEPS=275 MAX_EPOCHS=1 THREADS=1",
                          "draw_mnist.sh paper-ema");
    char *err = stand_in_read(dir, "err.txt"), *called = stand_in_read(dir, "called.txt");
    EXPECT(st == 0, "exit status %d: %s", st, err ? err : "");
    int trains = 0, with_ema = trains_with(called, "--ema 0.999 ", "draw-paper-ema", &trains);
    EXPECT(trains == 2 && with_ema == 2, "%d training calls, %d with --ema 0.999 into draw-paper-ema: %s",
           trains, with_ema, called ? called : "(not run)");
    char *table = stand_in_read(dir, "results.md");
    EXPECT(stand_in_count_rows(table) == 2 && strstr(table, "| paper-ema | ") && strstr(table, "| 80.97 |"),
           "rows: %s", table ? table : "(none)");
    free(err), free(called), free(table);
    // Another decay through PAPER_EMA.
    write_stand_in();
    st = stand_in_run(dir, NULL, "MILESTONE_STEPS=275 SCHEDULE_STEPS=275 MAX_EPOCHS=1 THREADS=1 PAPER_EMA=0.99",
                      "draw_mnist.sh paper-ema");
    called = stand_in_read(dir, "called.txt");
    EXPECT(st == 0 && called && strstr(called, "--ema 0.99 ") && !strstr(called, "--ema 0.999"),
           "PAPER_EMA=0.99: %s", called ? called : "(not run)");
    free(called);
}

// paper-peephole: every training call carries --peepholes, into RUNS/draw-paper-peephole,
// and its rows are marked paper-peephole.
static void test_paper_peephole_trains_with_peepholes(void) {
    write_stand_in();
    int st = stand_in_run(dir, NULL, "MILESTONE_STEPS=275 SCHEDULE_STEPS=275 MAX_EPOCHS=1 THREADS=1",
                          "draw_mnist.sh paper-peephole");
    char *err = stand_in_read(dir, "err.txt"), *called = stand_in_read(dir, "called.txt");
    EXPECT(st == 0, "exit status %d: %s", st, err ? err : "");
    int trains = 0, with_peep = trains_with(called, "--peepholes ", "draw-paper-peephole", &trains);
    EXPECT(trains == 2 && with_peep == 2, "%d training calls, %d with --peepholes into draw-paper-peephole: %s",
           trains, with_peep, called ? called : "(not run)");
    char *table = stand_in_read(dir, "results.md");
    EXPECT(stand_in_count_rows(table) == 2 && strstr(table, "| paper-peephole | "),
           "rows: %s", table ? table : "(none)");
    free(err), free(called), free(table);
}

// The table of checks: one row per check with the rate it trained at, and the decision.
// A bound that never improves: the first check is a gain (nothing before it), the next two
// halve the rate, the third of them stops the run, whose last model gets a milestone row.
static void test_checks_table_records_each_decision(void) {
    write_stand_in_dropping(0);
    int st = stand_in_run(dir, NULL, "MILESTONE_STEPS=1000 SCHEDULE_STEPS=50 THREADS=1",
                          "draw_mnist.sh paper");
    char *err = stand_in_read(dir, "err.txt"), *called = stand_in_read(dir, "called.txt");
    char *table = stand_in_read(dir, "results.md");
    EXPECT(st == 0, "exit status %d: %s", st, err ? err : "");
    const char *want[4] = {
        "| paper | 0.09 | 50 | 1e-3 | 100.50 | 100.50 | a gain: the new best |",
        "| paper | 0.18 | 100 | 1e-3 | 100.50 | 100.50 | no gain (1 in a row): halved to 0.0005 |",
        "| paper | 0.27 | 150 | 0.0005 | 100.50 | 100.50 | no gain (2 in a row): halved to 0.00025 |",
        "| paper | 0.36 | 200 | 0.00025 | 100.50 | 100.50 | no gain, 3 in a row: converged |"};
    const char *at = table ? strstr(table, "### The schedule's checks") : NULL;
    for (int i = 0; i < 4; i++) {
        const char *hit = at ? strstr(at, want[i]) : NULL;
        EXPECT(hit, "no check row '%s' in order: %s", want[i], table ? table : "(none)");
        at = hit;
    }
    EXPECT(called && strstr(called, "--lr 0.00025 ") && !strstr(called, "--steps 250 "),
           "trained: %s", called ? called : "(not run)");
    EXPECT(stand_in_count_rows(table) == 1, "%d milestone rows, expected the converged model's",
           stand_in_count_rows(table));
    free(err), free(called), free(table);
}

// A results page whose paper section opens with another table (a summary of the runs) gets
// its milestone row in the milestone table, and the summary stays as it was.
static void test_milestone_row_goes_to_the_milestone_table(void) {
    write_stand_in();
    char path[400];
    snprintf(path, sizeof path, "%s/results.md", dir);
    const char *page =
        "# DRAW on MNIST\n\n"
        "## The paper configuration to convergence (draw_mnist.sh paper, paper-noattn)\n\n"
        "| run | test bound |\n|---|---|\n| paper | 82.32 |\n\n"
        "| date | run | epoch | steps | lr | valid bound | test bound | recon + KL | IW NLL (K, images; "
        "their bound) | train wall (s) | load | paper |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|\n"
        "| 2026-11-25 | paper | 25 | 13750 | 1e-3 | 86.83 | 85.98 | 56.75 + 29.23 | 80.11 (1000, 1000; bound "
        "84.60) | 6949 | 2.59 | 80.97 |\n\nThe record.\n";
    EXPECT(scratch_write_text(path, page) == 0, "cannot write %s", path);
    paper_at(200);
    int st = run_noattn();
    char *err = stand_in_read(dir, "err.txt"), *table = stand_in_read(dir, "results.md");
    EXPECT(st == 0, "exit status %d: %s", st, err ? err : "");
    const char *summary = table ? strstr(table, "| run | test bound |\n|---|---|\n| paper | 82.32 |\n\n| date |") : NULL;
    EXPECT(summary != NULL, "the summary table changed: %s", table ? table : "(none)");
    const char *first = table ? strstr(table, "| 2026-11-25 | paper | 25 |") : NULL;
    const char *row = first ? strstr(first, "\n| 2") : NULL;
    const char *record = table ? strstr(table, "\nThe record.") : NULL;
    EXPECT(row && strstr(row, " | paper-noattn | ") && record && row < record,
           "the milestone row is not below the milestone table's first: %s", table ? table : "(none)");
    EXPECT(stand_in_count_rows(table) == 3, "%d dated rows, expected the old one and two milestones",
           stand_in_count_rows(table));
    free(err), free(table);
}

// A warm restart (MODE paper-long or paper-peephole-long) with checks every 50 steps,
// milestones every 100 and the end at step 400.
static int run_restart(const char *mode) {
    char cmd[100];
    snprintf(cmd, sizeof cmd, "draw_mnist.sh %s", mode);
    return stand_in_run(dir, NULL, "MILESTONE_STEPS=100 SCHEDULE_STEPS=50 LONG_STEPS=400 LONG_LR=4e-4 THREADS=1",
                        cmd);
}

static int run_long(void) { return run_restart("paper-long"); }
static int run_peephole_long(void) { return run_restart("paper-peephole-long"); }

// Refused with one line, nothing trained, while the paper run has not converged.
static void test_paper_long_needs_the_converged_paper_run(void) {
    write_stand_in();
    paper_at(250);  // not converged (and no model)
    expect_refused_by(run_long, "holds no converged run: run 'paper' to its end first");
}

// The calls recorded trained, in order, at the four rates of a half cosine from 4e-4 to 0
// over four equal segments, each at its middle: 4e-4 * (1 + cos(pi x)) / 2, x = 1/8, 3/8,
// 5/8, 7/8.
static void expect_quarter_cosine_rates(const char *called) {
    const char *rates[4] = {"--lr 0.000384776 ", "--lr 0.000276537 ", "--lr 0.000123463 ",
                            "--lr 1.52241e-05 "};
    const char *at = called;
    for (int i = 0; i < 4; i++) {
        const char *hit = at ? strstr(at, rates[i]) : NULL;
        EXPECT(hit, "no training at '%s' in order: %s", rates[i], called ? called : "(not run)");
        at = hit;
    }
}

// From the paper run's step 200 to 400: its model copied, four checks each training with
// the average at the cosine's rate at the segment's middle (4e-4 * (1 + cos(pi x)) / 2,
// x = 1/8, 3/8, 5/8, 7/8), no halving, milestone rows at 300 and 400.
static void test_paper_long_restarts_along_the_cosine(void) {
    write_stand_in();
    paper_converged_at(200);
    int st = run_long();
    char *err = stand_in_read(dir, "err.txt"), *called = stand_in_read(dir, "called.txt");
    char *table = stand_in_read(dir, "results.md");
    char *copy = stand_in_read(dir, "runs/draw-paper-long/model.safetensors");
    EXPECT(st == 0, "exit status %d: %s", st, err ? err : "");
    EXPECT(copy && strcmp(copy, "final paper\n") == 0, "model: %s", copy ? copy : "(none)");
    expect_quarter_cosine_rates(called);
    int trains = 0, with_ema = 0;
    for (const char *p = called; p && (p = strstr(p, "train ")); p++) {
        const char *eol = strchr(p, '\n'), *end = eol ? eol : p + strlen(p);
        const char *e = strstr(p, "--ema 0.999 "), *out = strstr(p, "draw-paper-long");
        trains++;
        with_ema += e && e < end && out && out < end;
    }
    EXPECT(trains == 4 && with_ema == 4, "%d training calls, %d with --ema 0.999 into draw-paper-long: %s",
           trains, with_ema, called ? called : "(not run)");
    EXPECT(stand_in_count_rows(table) == 2 && strstr(table, "| paper-long | ") &&
               strstr(table, "| paper-long | 0.73 | 400 | 1.52241e-05 | 94.50 | 94.50 | a gain: the new best |"),
           "rows: %s", table ? table : "(none)");
    EXPECT(err && strstr(err, "paper-long: finished at step 400"), "stderr: %s", err ? err : "");
    free(err), free(called), free(table), free(copy);
}

// Leaves RUNS/draw-paper-long as a warm restart from step 200 checked up to step 300, its
// restart file holding `restart`, and runs it again under `env`; its exit status.
static int resume_long_at_300(const char *restart, const char *env) {
    write_stand_in();
    paper_converged_at(200);
    char cmd[1600];
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/runs/draw-paper-long && echo '%s' > %s/runs/draw-paper-long/restart"
             " && echo '300 4e-4 94.5 0 0' > %s/runs/draw-paper-long/schedule"
             " && echo model > %s/runs/draw-paper-long/model.safetensors",
             dir, restart, dir, dir, dir);
    EXPECT(system(cmd) == 0, "paper-long run");
    return stand_in_run(dir, NULL, env, "draw_mnist.sh paper-long");
}

// Whether the calls recorded trained the last two segments (x = 5/8, 7/8) of the cosine
// from 4e-4 at step 200 to 0 at step 400, and nothing else.
static int trained_last_two_segments(const char *called) {
    const char *first = called ? strstr(called, "--lr 0.000123463 --clip 10 --seed 1 --steps 350 ") : NULL;
    int trains = 0;
    trains_with(called, "", "", &trains);
    return first && strstr(first, "--lr 1.52241e-05 --clip 10 --seed 1 --steps 400 ") && trains == 2;
}

// A warm restart resumed under other LONG_* settings keeps the cosine it started with:
// paper-long pinned at "from step 200 to 0 at step 400, peak 4e-4", called with
// LONG_STEPS=800 LONG_LR=1e-3, trains its last two segments at the pinned cosine's rates,
// ends at step 400 and says why. A restart file of the older form (the start step alone)
// takes the cosine from LONG_*, silently.
static void test_paper_long_keeps_its_pinned_cosine(void) {
    int st = resume_long_at_300("200 400 4e-4", "MILESTONE_STEPS=100 SCHEDULE_STEPS=50 LONG_STEPS=800 LONG_LR=1e-3 THREADS=1");
    char *err = stand_in_read(dir, "err.txt"), *called = stand_in_read(dir, "called.txt");
    EXPECT(st == 0, "exit status %d: %s", st, err ? err : "");
    EXPECT(trained_last_two_segments(called), "not the pinned cosine's rates: %s", called ? called : "(not run)");
    EXPECT(err && strstr(err, "goes on from 4e-4 to 0 at step 400 (LONG_* now give 1e-3 and step 800)") &&
               strstr(err, "paper-long: finished at step 400"),
           "stderr: %s", err ? err : "");
    free(err), free(called);

    st = resume_long_at_300("200", "MILESTONE_STEPS=100 SCHEDULE_STEPS=50 LONG_STEPS=400 LONG_LR=4e-4 THREADS=1");
    err = stand_in_read(dir, "err.txt"), called = stand_in_read(dir, "called.txt");
    EXPECT(st == 0, "older restart file: exit status %d: %s", st, err ? err : "");
    EXPECT(trained_last_two_segments(called), "older restart file: not LONG_*'s cosine: %s", called ? called : "(not run)");
    EXPECT(err && !strstr(err, "goes on from") && strstr(err, "paper-long: finished at step 400"),
           "older restart file: stderr: %s", err ? err : "");
    free(err), free(called);
}

// paper-peephole-long: refused while paper-peephole has not converged (a converged paper
// run is not its source); then paper-peephole's model copied into its own folder, every
// training call with both --peepholes and the average, its rows marked with its name.
static void test_paper_peephole_long_restarts_the_peephole_run(void) {
    write_stand_in();
    paper_converged_at(200);
    expect_refused_by(run_peephole_long, "holds no converged run: run 'paper-peephole' to its end first");
    converged_at("paper-peephole", 200);
    int st = run_peephole_long();
    char *err = stand_in_read(dir, "err.txt"), *called = stand_in_read(dir, "called.txt");
    char *table = stand_in_read(dir, "results.md");
    char *copy = stand_in_read(dir, "runs/draw-paper-peephole-long/model.safetensors");
    EXPECT(st == 0, "exit status %d: %s", st, err ? err : "");
    EXPECT(copy && strcmp(copy, "final paper-peephole\n") == 0, "model: %s", copy ? copy : "(none)");
    int trains = 0, with_peep = trains_with(called, "--peepholes --ema 0.999 ", "draw-paper-peephole-long", &trains);
    EXPECT(trains == 4 && with_peep == 4, "%d training calls, %d with --peepholes --ema 0.999 into draw-paper-peephole-long: %s",
           trains, with_peep, called ? called : "(not run)");
    EXPECT(stand_in_count_rows(table) == 2 && strstr(table, "| paper-peephole-long | 0.73 | 400 | 1.52241e-05 |"),
           "rows: %s", table ? table : "(none)");
    EXPECT(err && strstr(err, "paper-peephole-long: finished at step 400"), "stderr: %s", err ? err : "");
    free(err), free(called), free(table), free(copy);
}

// paper-peephole-batch50: batch 50 on every training call, its epochs 1,100 steps (checks
// and milestones counted in them), --peepholes, its own folder and rows; and its warm
// restart trains the batch-50 run's final model at batch 50 too.
static void test_paper_peephole_batch50_counts_epochs_of_1100_steps(void) {
    write_stand_in();
    int st = stand_in_run(dir, NULL, "MILESTONE_EPOCHS=1 SCHEDULE_EPOCHS=1 MAX_EPOCHS=2 THREADS=1",
                          "draw_mnist.sh paper-peephole-batch50");
    char *err = stand_in_read(dir, "err.txt"), *called = stand_in_read(dir, "called.txt");
    char *table = stand_in_read(dir, "results.md");
    EXPECT(st == 0, "exit status %d: %s", st, err ? err : "");
    int trains = 0, with_batch = trains_with(called, "--peepholes --batch 50 ", "draw-paper-peephole-batch50", &trains);
    EXPECT(trains == 2 && with_batch == 2, "%d training calls, %d with --peepholes --batch 50 into its folder: %s",
           trains, with_batch, called ? called : "(not run)");
    EXPECT(called && strstr(called, "--steps 1100 ") && strstr(called, "--steps 2200 ") &&
           strstr(called, "--valid-every 1100 "), "not epochs of 1,100 steps: %s", called ? called : "(not run)");
    EXPECT(stand_in_count_rows(table) == 2 && strstr(table, "| paper-peephole-batch50 | 1 | 1100 | 1e-3 |") &&
           strstr(table, "| paper-peephole-batch50 | 2 | 2200 | 1e-3 |"), "rows: %s", table ? table : "(none)");
    EXPECT(err && strstr(err, "paper-peephole-batch50: finished at step 2200"), "stderr: %s", err ? err : "");
    free(err), free(called), free(table);

    write_stand_in();
    converged_at("paper-peephole-batch50", 2200);
    st = stand_in_run(dir, NULL, "MILESTONE_EPOCHS=1 SCHEDULE_EPOCHS=1 LONG_EPOCHS=4 THREADS=1",
                      "draw_mnist.sh paper-peephole-batch50-long");
    err = stand_in_read(dir, "err.txt"), called = stand_in_read(dir, "called.txt");
    char *copy = stand_in_read(dir, "runs/draw-paper-peephole-batch50-long/model.safetensors");
    EXPECT(st == 0, "exit status %d: %s", st, err ? err : "");
    EXPECT(copy && strcmp(copy, "final paper-peephole-batch50\n") == 0, "model: %s", copy ? copy : "(none)");
    trains = 0, with_batch = trains_with(called, "--peepholes --ema 0.999 --batch 50 ", "draw-paper-peephole-batch50-long",
                                         &trains);
    EXPECT(trains == 2 && with_batch == 2, "%d training calls, %d at batch 50 with the average: %s", trains,
           with_batch, called ? called : "(not run)");
    EXPECT(called && strstr(called, "--steps 3300 ") && strstr(called, "--steps 4400 "),
           "the restart's epochs are not 1,100 steps: %s", called ? called : "(not run)");
    free(err), free(called), free(copy);
}

// paper-peephole-cosine: from scratch (no other run needed), every training call with
// --peepholes and the average into its own folder, at the cosine's rates from LR at step
// 0 to 0 at COSINE_STEPS (4e-4 to 0 at step 400: the same four rates as the warm restart
// above); on a bound that never improves, no halving and no early stop, milestone rows at
// 200 and 400, the last check's decision the cosine's end; and resumed at step 200 under other settings, the cosine pinned at its
// first call goes on, and the script says so.
static void test_paper_peephole_cosine_runs_one_cosine_from_scratch(void) {
    write_stand_in_dropping(0);
    int st = stand_in_run(dir, NULL, "MILESTONE_STEPS=200 SCHEDULE_STEPS=100 COSINE_STEPS=400 LR=4e-4 THREADS=1",
                          "draw_mnist.sh paper-peephole-cosine");
    char *err = stand_in_read(dir, "err.txt"), *called = stand_in_read(dir, "called.txt");
    char *table = stand_in_read(dir, "results.md");
    EXPECT(st == 0, "exit status %d: %s", st, err ? err : "");
    expect_quarter_cosine_rates(called);
    int trains = 0, with = trains_with(called, "--peepholes --ema 0.999 ", "draw-paper-peephole-cosine", &trains);
    EXPECT(trains == 4 && with == 4, "%d training calls, %d with --peepholes --ema 0.999 into its folder: %s", trains,
           with, called ? called : "(not run)");
    EXPECT(stand_in_count_rows(table) == 2 &&
               strstr(table, "| paper-peephole-cosine | 0.55 | 300 | 0.000123463 | 100.50 | 100.50 | no gain (the cosine goes on) |") &&
               strstr(table, "| paper-peephole-cosine | 0.73 | 400 | 1.52241e-05 | 100.50 | 100.50 | no gain (the cosine's end) |"),
           "rows: %s", table ? table : "(none)");
    EXPECT(err && strstr(err, "paper-peephole-cosine: finished at step 400"), "stderr: %s", err ? err : "");
    free(err), free(called), free(table);

    write_stand_in();
    char cmd[1200];
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/runs/draw-paper-peephole-cosine && cd %s/runs/draw-paper-peephole-cosine"
             " && echo '0 400 4e-4' > cosine && echo '200 4e-4 94.5 0 0' > schedule && echo model > model.safetensors",
             dir, dir);
    EXPECT(system(cmd) == 0, "paper-peephole-cosine run");
    st = stand_in_run(dir, NULL, "MILESTONE_STEPS=200 SCHEDULE_STEPS=100 COSINE_STEPS=800 LR=1e-3 THREADS=1",
                      "draw_mnist.sh paper-peephole-cosine");
    err = stand_in_read(dir, "err.txt"), called = stand_in_read(dir, "called.txt");
    EXPECT(st == 0, "resumed: exit status %d: %s", st, err ? err : "");
    const char *first = called ? strstr(called, "--lr 0.000123463 --clip 10 --seed 1 --steps 300 ") : NULL;
    trains_with(called, "", "", &trains);
    EXPECT(first && strstr(first, "--lr 1.52241e-05 --clip 10 --seed 1 --steps 400 ") && trains == 2,
           "resumed: not the pinned cosine's last two segments: %s", called ? called : "(not run)");
    EXPECT(err && strstr(err, "goes on from 4e-4 to 0 at step 400 (LR and COSINE_* now give 1e-3 and step 800)") &&
               strstr(err, "paper-peephole-cosine: finished at step 400"),
           "resumed: stderr: %s", err ? err : "");
    free(err), free(called);
}

static int run_cosine_of_abc_epochs(void) {
    return stand_in_run(dir, NULL, "COSINE_EPOCHS=abc THREADS=1", "draw_mnist.sh paper-peephole-cosine");
}
static int run_cosine_of_no_steps(void) {
    return stand_in_run(dir, NULL, "COSINE_EPOCHS=0 COSINE_STEPS=0 THREADS=1", "draw_mnist.sh paper-peephole-cosine");
}

// A cosine length that is not a whole number, or 0 steps, is refused with one line before
// anything trains or is pinned (a pinned cosine of 0 steps would hold on every resume).
static void test_paper_peephole_cosine_refuses_a_bad_length(void) {
    write_stand_in();
    expect_refused_by(run_cosine_of_abc_epochs, "COSINE_STEPS and COSINE_EPOCHS must be whole numbers, not '0' and 'abc'");
    expect_refused_by(run_cosine_of_no_steps, "COSINE_STEPS and COSINE_EPOCHS are both 0: no steps to train");
    char *pin = stand_in_read(dir, "runs/draw-paper-peephole-cosine/cosine");
    EXPECT(pin == NULL, "a cosine was pinned: %s", pin);
    free(pin);
}

// Runs MODE with COSINE_EPOCHS=150 and checks that its name's 300 epochs (of 550 steps: 0
// to 165,000) set its cosine, pinned at the first call in RUNS/draw-MODE: two segments of
// 82,500 steps at the cosine's value at their middles, 1e-3 * (1 + cos(pi x)) / 2 at x =
// 1/4 and 3/4, each training call with FLAGS into that folder.
static void expect_300_epoch_cosine(const char *mode, const char *flags) {
    char cmd[200], folder[200], pin_file[200], finished[200];
    snprintf(cmd, sizeof cmd, "draw_mnist.sh %s", mode);
    snprintf(folder, sizeof folder, "draw-%s", mode);
    snprintf(pin_file, sizeof pin_file, "runs/draw-%s/cosine", mode);
    snprintf(finished, sizeof finished, "%s: finished at step 165000", mode);
    write_stand_in();
    int st = stand_in_run(dir, NULL, "MILESTONE_STEPS=82500 SCHEDULE_STEPS=82500 COSINE_EPOCHS=150 THREADS=1", cmd);
    char *err = stand_in_read(dir, "err.txt"), *called = stand_in_read(dir, "called.txt");
    char *pin = stand_in_read(dir, pin_file);
    EXPECT(st == 0, "%s: exit status %d: %s", mode, st, err ? err : "");
    EXPECT(pin && strcmp(pin, "0 165000 1e-3\n") == 0, "%s: pinned cosine: %s", mode, pin ? pin : "(none)");
    int trains = 0, with = trains_with(called, flags, folder, &trains);
    EXPECT(trains == 2 && with == 2, "%d training calls, %d with '%s' into %s: %s", trains, with, flags, folder,
           called ? called : "(not run)");
    const char *first = called ? strstr(called, "--lr 0.000853553 --clip 10 --seed 1 --steps 82500 ") : NULL;
    EXPECT(first && strstr(first, "--lr 0.000146447 --clip 10 --seed 1 --steps 165000 "),
           "%s: not the 300-epoch cosine's two segments: %s", mode, called ? called : "(not run)");
    EXPECT(err && strstr(err, finished), "%s: stderr: %s", mode, err ? err : "");
    free(err), free(called), free(pin);
}

// paper-peephole-cosine300: the number in the name is the cosine's length in epochs,
// whatever COSINE_EPOCHS says; with the average and peepholes.
static void test_paper_peephole_cosine300_takes_its_length_from_its_name(void) {
    expect_300_epoch_cosine("paper-peephole-cosine300", "--read 2 --write 5 --hidden 256 --z 100 --peepholes --ema 0.999 ");
}

// paper-noattn-peephole-cosine300: paper-peephole-cosine300's recipe (peepholes, the
// average, the 300-epoch cosine) on paper-noattn's model, into its own folder and rows
// beside the paper's 87.40; its budget is its cosine, so it needs no paper run (which
// paper-noattn does).
static void test_paper_noattn_peephole_cosine300_is_the_recipe_without_attention(void) {
    expect_300_epoch_cosine("paper-noattn-peephole-cosine300",
                            "--T 64 --hidden 256 --z 100 --no-attention --peepholes --ema 0.999 ");
    char *table = stand_in_read(dir, "results.md");
    EXPECT(table && strstr(table, "| paper-noattn-peephole-cosine300 | 150 | 82500 | ") &&
               strstr(table, "| paper-noattn-peephole-cosine300 | 300 | 165000 | ") && strstr(table, "| 87.40 |") &&
               !strstr(table, "| 80.97 |"),
           "rows: %s", table ? table : "(none)");
    free(table);
}

static int run_paper_of_abc_epochs(void) {
    return stand_in_run(dir, NULL, "MAX_EPOCHS=abc THREADS=1", "draw_mnist.sh paper-peephole");
}

// The budget of a run to convergence: MAX_STEPS when set, else MAX_EPOCHS epochs, both
// whole numbers or refused with one line before anything trains.
static void test_paper_budget_is_max_steps_or_max_epochs(void) {
    write_stand_in();
    expect_refused_by(run_paper_of_abc_epochs, "MAX_STEPS and MAX_EPOCHS must be whole numbers, not '0' and 'abc'");
    write_stand_in();
    int st = stand_in_run(dir, NULL, "MILESTONE_STEPS=275 SCHEDULE_STEPS=275 MAX_STEPS=275 MAX_EPOCHS=1 THREADS=1",
                          "draw_mnist.sh paper-peephole");
    char *err = stand_in_read(dir, "err.txt"), *called = stand_in_read(dir, "called.txt");
    int trains = 0;
    trains_with(called, "", "", &trains);
    EXPECT(st == 0 && trains == 1 && strstr(called, "--steps 275 "), "MAX_STEPS=275: exit status %d, %d training calls: %s",
           st, trains, called ? called : "(not run)");
    EXPECT(err && strstr(err, "paper-peephole: finished at step 275"), "stderr: %s", err ? err : "");
    free(err), free(called);
}

static int run_noattn_of_abc_epochs(void) {
    return stand_in_run(dir, NULL, "NOATTN_EPOCHS=abc THREADS=1", "draw_mnist.sh paper-noattn");
}

// NOATTN_EPOCHS or NOATTN_STEPS set paper-noattn's budget in place of the paper run's, a
// whole number or refused with one line before anything trains or any folder is made.
static void test_paper_noattn_budget_may_be_set(void) {
    write_stand_in();
    expect_refused_by(run_noattn_of_abc_epochs, "NOATTN_STEPS and NOATTN_EPOCHS must be whole numbers, not '0' and 'abc'");
    char cmd[400];
    snprintf(cmd, sizeof cmd, "test -e %s/runs/draw-paper-noattn", dir);
    EXPECT(system(cmd) != 0, "a refused run left its folder");
    write_stand_in();  // a bad NOATTN_EPOCHS is refused even beside a good NOATTN_STEPS
    int st = stand_in_run(dir, NULL, "MILESTONE_STEPS=100 SCHEDULE_STEPS=50 NOATTN_STEPS=150 NOATTN_EPOCHS=abc THREADS=1",
                          "draw_mnist.sh paper-noattn");
    char *called = stand_in_read(dir, "called.txt");
    int trains = 0;
    trains_with(called, "", "", &trains);
    EXPECT(st == 2 && trains == 0, "NOATTN_EPOCHS=abc beside NOATTN_STEPS: exit status %d, %d training calls", st, trains);
    free(called);
    write_stand_in();  // no paper run: the setting alone gives the budget
    st = stand_in_run(dir, NULL, "MILESTONE_STEPS=100 SCHEDULE_STEPS=50 NOATTN_STEPS=150 THREADS=1",
                      "draw_mnist.sh paper-noattn");
    char *err = stand_in_read(dir, "err.txt");
    called = stand_in_read(dir, "called.txt");
    int with = trains_with(called, "--no-attention ", "draw-paper-noattn", &trains);
    EXPECT(st == 0 && trains == 3 && with == 3 && strstr(called, "--steps 150 ") && !strstr(called, "--steps 200 "),
           "NOATTN_STEPS=150: exit status %d, %d training calls: %s", st, trains, called ? called : "(not run)");
    EXPECT(err && strstr(err, "paper-noattn: finished at step 150"), "stderr: %s", err ? err : "");
    free(err), free(called);
}

static int run_unknown(void) { return stand_in_run(dir, NULL, "THREADS=1", "draw_mnist.sh nosuch"); }

// An unknown configuration is refused with one line listing the known ones, and each of
// those is listed in the script's usage line and in experiments/README.md too.
static void test_unknown_configuration_lists_the_known_ones(void) {
    write_stand_in();
    expect_refused_by(run_unknown, "unknown configuration 'nosuch' (one of: quick quick-noattn paper ");
    char *err = stand_in_read(dir, "err.txt"), *script = stand_in_read(".", "experiments/draw_mnist.sh");
    char *readme = stand_in_read(".", "experiments/README.md");
    const char *list = err ? strstr(err, "(one of: ") : NULL;
    EXPECT(list && script && readme, "cannot read the list, the script or the README");
    if (!list || !script || !readme) goto done;
    const char *usage_end = strstr(script, "\n#\n"), *row = strstr(readme, "| `draw_mnist.sh [");
    const char *row_end = row ? strchr(row, ']') : NULL;
    EXPECT(usage_end && row_end, "no usage line in the script or no draw_mnist.sh row in the README");
    if (!usage_end || !row_end) goto done;
    int names = 0;
    for (const char *p = list + strlen("(one of: "); *p && *p != ')';) {
        size_t n = strcspn(p, " )");
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)n, p);
        names++;
        // A whole word in each: after '[' or a space, before a space, '|' or ']' (so that
        // "paper" is not found inside "paper-ema").
        int in_usage = 0, in_readme = 0;
        for (const char *q = script + 1; (q = strstr(q, name)) && q < usage_end; q++)
            if (strchr("[ ", q[-1]) && q[n] && strchr(" |]", q[n])) in_usage = 1;
        for (const char *q = row + 1; (q = strstr(q, name)) && q < row_end; q++)
            if (strchr("[ ", q[-1]) && q[n] && strchr(" ]", q[n])) in_readme = 1;
        EXPECT(in_usage, "'%s' is not in the script's usage line", name);
        EXPECT(in_readme, "'%s' is not in experiments/README.md's draw_mnist.sh row", name);
        p += n;
        if (*p == ' ') p++;
    }
    EXPECT(names == 13, "%d configurations listed", names);
done:
    free(err), free(script), free(readme);
}

int main(void) {
    if (scratch_make(dir, sizeof dir, "test_experiments_draw_mnist")) return 1;
    RUN(test_no_paper_run_refused);
    RUN(test_paper_run_before_first_milestone_refused);
    RUN(test_budget_is_paper_runs_last_milestone);
    RUN(test_paper_ema_trains_with_the_average);
    RUN(test_paper_peephole_trains_with_peepholes);
    RUN(test_checks_table_records_each_decision);
    RUN(test_milestone_row_goes_to_the_milestone_table);
    RUN(test_paper_long_needs_the_converged_paper_run);
    RUN(test_paper_long_restarts_along_the_cosine);
    RUN(test_paper_long_keeps_its_pinned_cosine);
    RUN(test_paper_peephole_long_restarts_the_peephole_run);
    RUN(test_paper_peephole_batch50_counts_epochs_of_1100_steps);
    RUN(test_paper_peephole_cosine_runs_one_cosine_from_scratch);
    RUN(test_paper_peephole_cosine_refuses_a_bad_length);
    RUN(test_paper_peephole_cosine300_takes_its_length_from_its_name);
    RUN(test_paper_noattn_peephole_cosine300_is_the_recipe_without_attention);
    RUN(test_paper_budget_is_max_steps_or_max_epochs);
    RUN(test_paper_noattn_budget_may_be_set);
    RUN(test_unknown_configuration_lists_the_known_ones);
    scratch_remove(dir);
    return test_summary();
}
