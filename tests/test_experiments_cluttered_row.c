// test_experiments_cluttered_row.c: the table row experiments/draw_cluttered.sh writes, and
// the learning-rate schedule it trains with. The program is a stand-in (newer than the
// sources; tests/support/stand_in.h) that records its arguments and prints fixed JSON for `classify train` and
// `classify eval`, so the test trains nothing and takes milliseconds; what it checks is the
// script: the phases of DECAY_STEPS, a learning rate, seed or schedule other than the
// defaults in the model column, the test error with its 95 % interval as `classify eval --json` gives
// them, and a row that goes into the table when notes follow it. Run from the repository
// root (as tests/run.sh is).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/support/scratch.h"
#include "tests/support/stand_in.h"
#include "tests/support/test.h"

static char dir[256];

static const char *dir_runs(void) {
    static char runs[300];
    snprintf(runs, sizeof runs, "%s/runs", dir);
    return runs;
}

// bin/draw: train and eval print what the real program's --json prints (the fields the
// script reads), show writes nothing.
static void write_stand_in(void) {
    EXPECT(stand_in_write(dir, "draw",
                          "case \"$1 $2\" in\n"
                          "'classify train') echo '{\"steps\": 300, \"final_loss\": 0.1, "
                          "\"images_per_s\": 1234.5}' ;;\n"
                          "'classify eval') echo '{\"error\": 0.035000, \"error_low95\": 0.031573, "
                          "\"error_high95\": 0.038784, \"loss\": 0.12, \"correct\": 9650, "
                          "\"images\": 10000, \"step\": 1200}' ;;\n"
                          "esac\n"
                          "exit 0\n") == 0,
           "cannot write the stand-in");
}

// Runs the script for configuration cfg with env (assignments) in front; its exit status.
static int run_script_config(const char *env, const char *cfg) {
    char all[1024], cmd[128];
    snprintf(all, sizeof all, "%s STEPS=300 THREADS=1", env);
    snprintf(cmd, sizeof cmd, "draw_cluttered.sh %s", cfg);
    return stand_in_run(dir, NULL, all, cmd);
}
static int run_script(const char *env) { return run_script_config(env, "dram8"); }

static void test_row_with_rate_and_seed(void) {
    write_stand_in();
    int st = run_script("LR=2e-4 SEED=3 DECAY_STEPS='100 200'");
    char *err = stand_in_read(dir, "err.txt");
    EXPECT(st == 0, "exit status %d: %s", st, err ? err : "");
    char *called = stand_in_read(dir, "called.txt");
    // Three phases: 2e-4 to step 100, a tenth of it to 200, a hundredth to 300.
    const char *phases[3] = {"--lr 2e-4 --clip 5 --seed 3 --steps 100 ",
                             "--lr 2e-05 --clip 5 --seed 3 --steps 200 ",
                             "--lr 2e-06 --clip 5 --seed 3 --steps 300 "};
    const char *at = called;
    for (int i = 0; i < 3; i++) {
        const char *hit = at ? strstr(at, phases[i]) : NULL;
        EXPECT(hit != NULL, "phase %d (%s) missing or out of order in: %s", i + 1, phases[i],
               called ? called : "(not run)");
        at = hit;
    }
    EXPECT(called && strstr(called, "classify eval --model ") && strstr(called, "--split test"),
           "no test evaluation: %s", called ? called : "(not run)");
    EXPECT(called && strstr(called, "classify show --model ") && strstr(called, "--errors --count 8"),
           "no pictures of the errors: %s", called ? called : "(not run)");
    char *table = stand_in_read(dir, "results.md");
    char row[1024];
    stand_in_last_row(table, row, sizeof row);
    EXPECT(strstr(row, "| dram8 | --T 8 --read 12 --hidden 256 --lr 2e-4 --seed 3 (rate / 10 at 100,200 of 300 steps) | 300 | ") != NULL,
           "model column: %s", row);
    EXPECT(strstr(row, "| 1234 | 3.50 % (3.16-3.88) | 3.36 % |") != NULL, "figures: %s", row);
    EXPECT(table && strstr(table, "95 % Wilson interval"), "the table's header does not say what the brackets are");
    free(err), free(called), free(table);
}

static void test_row_with_defaults(void) {
    write_stand_in();
    // Notes under the first run's table: the next row still goes into the table.
    char path[600];
    snprintf(path, sizeof path, "%s/results.md", dir);
    EXPECT(scratch_append_text(path, "\nNotes under the table.\n") == 0, "cannot append to %s", path);
    int st = run_script("");  // LR 5e-4, SEED 1: neither is written
    char *called = stand_in_read(dir, "called.txt");
    EXPECT(called && strstr(called, "--lr 5e-4 --clip 5 --seed 1 --steps 300 "), "the defaults: %s",
           called ? called : "(not run)");
    free(called);
    EXPECT(st == 0, "exit status %d", st);
    char *table = stand_in_read(dir, "results.md");
    char row[1024];
    stand_in_last_row(table, row, sizeof row);
    EXPECT(strstr(row, "| dram8 | --T 8 --read 12 --hidden 256 | 300 | ") != NULL, "model column: %s", row);
    int rows = stand_in_count_rows(table);
    EXPECT(rows == 2, "%d rows, expected this run's appended to the first", rows);
    const char *notes = table ? strstr(table, "\n\nNotes under the table.\n") : NULL;
    EXPECT(notes && notes[strlen("\n\nNotes under the table.\n")] == 0 && strstr(table, row) < notes,
           "the row is not in the table, above the notes:\n%s", table ? table : "");
    free(table);
}

// ram8-gnet: RAM's glimpse network (--glimpse-net 128) on the ram8 recipe, beside RAM's figure.
static void test_row_glimpse_net(void) {
    write_stand_in();
    int st = run_script_config("", "ram8-gnet");
    char *called = stand_in_read(dir, "called.txt");
    EXPECT(st == 0 && called && strstr(called, "classify train --T 8 --read 12 --hidden 256 --hard --loc-std 0.1 --glimpse-net 128 "),
           "exit %d, the model flags: %s", st, called ? called : "(not run)");
    char *table = stand_in_read(dir, "results.md");
    char row[1024];
    stand_in_last_row(table, row, sizeof row);
    EXPECT(strstr(row, "| ram8-gnet | --T 8 --read 12 --hidden 256 --hard --loc-std 0.1 --glimpse-net 128 | 300 | ") &&
               strstr(row, "| 8.11 % (RAM, 4 scales) |"),
           "row: %s", row);
    free(called), free(table);
}

// ram8-60: Mnih et al.'s 60 x 60 set with 4 fragments and their 3-scale retina; a schedule
// other than the default (here none) is written into the model column.
static void test_row_60(void) {
    write_stand_in();
    int st = run_script_config("DECAY_STEPS=''", "ram8-60-gnet");
    char *called = stand_in_read(dir, "called.txt");
    EXPECT(st == 0 && called &&
               strstr(called, "classify train --size 60 --fragments 4 --T 8 --read 12 --hidden 256 --hard "
                              "--scales 3 --loc-std 0.1 --glimpse-net 128 "),
           "exit %d, the model flags: %s", st, called ? called : "(not run)");
    char *table = stand_in_read(dir, "results.md");
    char row[1024];
    stand_in_last_row(table, row, sizeof row);
    EXPECT(strstr(row, "| ram8-60-gnet | --size 60 --fragments 4 ") && strstr(row, "--glimpse-net 128 (no rate cut) | 300 |") &&
               strstr(row, "| 8.11 % (RAM, 60 x 60, 3 scales) |"),
           "row: %s", row);
    free(called), free(table);
}

// CHECKPOINT=1: no training; the last checkpoint's test error, at its step, with the log's
// seconds up to that step; a configuration with no checkpoint is refused in one line.
static void test_row_checkpoint(void) {
    write_stand_in();
    char path[600];
    snprintf(path, sizeof path, "%s/runs/cluttered-ram8-60", dir);
    mkdir(dir_runs(), 0755);
    EXPECT(mkdir(path, 0755) == 0, "cannot make %s", path);
    int st = run_script_config("CHECKPOINT=1", "ram8-60");
    char *err = stand_in_read(dir, "err.txt");
    EXPECT(st == 2 && err && strstr(err, "draw_cluttered.sh: CHECKPOINT=1: ") && strstr(err, "no checkpoint of ram8-60") &&
               scratch_count_lines(err) == 1,
           "no checkpoint: exit %d, %s", st, err ? err : "");
    free(err);
    snprintf(path, sizeof path, "%s/runs/cluttered-ram8-60/model.safetensors", dir);
    EXPECT(scratch_write_text(path, "stand-in checkpoint") == 0, "cannot write %s", path);
    // A run resumed once: 600 s to step 1200 over two processes; the rows after it do not count.
    snprintf(path, sizeof path, "%s/runs/cluttered-ram8-60/log.csv", dir);
    EXPECT(scratch_write_text(path, "step,train_loss,seconds\n500,2,250\n1000,2,500\n1100,2,550\n"
                                    "1050,2,25\n1200,2,100\n1300,2,150\n") == 0,
           "cannot write %s", path);
    st = run_script_config("CHECKPOINT=1 DECAY_STEPS='200 250 400'", "ram8-60");
    char *called = stand_in_read(dir, "called.txt");
    EXPECT(st == 0 && called && !strstr(called, "classify train") && strstr(called, "classify eval --model "),
           "exit %d, a checkpoint row trains nothing and evaluates: %s", st, called ? called : "(not run)");
    char *table = stand_in_read(dir, "results.md");
    char row[1024];
    stand_in_last_row(table, row, sizeof row);
    EXPECT(strstr(row, "| ram8-60 | --size 60 --fragments 4 --T 8 --read 12 --hidden 256 --hard --scales 3 --loc-std 0.1 "
                       "(rate / 10 at 200,250 of 300 steps) | 1200 (checkpoint) | 650 | - | 3.50 % (3.16-3.88) | "
                       "8.11 % (RAM, 60 x 60, 3 scales) |"),
           "row: %s", row);
    free(called), free(table);
}

int main(void) {
    if (scratch_make(dir, sizeof dir, "test_experiments_cluttered_row")) return 1;
    RUN(test_row_with_rate_and_seed);
    RUN(test_row_with_defaults);
    RUN(test_row_glimpse_net);
    RUN(test_row_60);
    RUN(test_row_checkpoint);
    scratch_remove(dir);
    return test_summary();
}
