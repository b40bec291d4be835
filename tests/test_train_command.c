// test_train_command.c: the trainers' command driver, in one process
// (cli/train_command.h), run in-process on a toy trainer (one weight halved at each step,
// its loss the weight): a new run's header, summary, --json object, log.csv, checkpoint
// and run.json; --resume with a replaced setting, and at its end (no step left); a folder
// that holds a run refused before the data is read; data refused before the folder is made;
// a step that fails (run.json "failed", the lock released, the trainer's memory freed
// however far it got); SIGINT between steps (run.json "interrupted", last).
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/train_command.h"
#include "core/block.h"
#include "core/fileio.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"

static char tmp[256];

typedef struct {
    TrainCommandRun cmd;
    long step;
    int batch;
    float lr;         // a setting --resume may replace (said in the header)
    Block params;
    float *w;         // (1) the toy's one weight
    bool allocated;
    double last_loss;
    long fail_step;   // the step that fails (0: none)
    long stop_step;   // the step after which SIGINT arrives (0: none)
    bool bad_data;    // load_data refuses
    int loads, frees;
} Toy;

static int toy_resume(void *p, const SafetensorsFile *file, Error *err) {
    Toy *t = p;
    if (safetensors_meta_long(file, t->cmd.paths.model, "toy.step", NULL, 0, LONG_MAX, &t->step, err)) return -1;
    flag_diffs_float(&t->cmd.resumed_with, "lr", true, 2.0, t->lr);
    t->lr = 2.0f;
    return 0;
}

static int toy_load_data(void *p, Error *err) {
    Toy *t = p;
    t->loads++;
    return t->bad_data ? error_set(err, "toy: no data") : 0;
}

static int toy_init_model(void *p, const SafetensorsFile *file, Error *err) {
    Toy *t = p;
    block_add(&t->params, &t->w, "w", 1, 1);
    block_alloc(&t->params);
    t->allocated = true;
    if (t->cmd.resumed) return train_checkpoint_read(&t->params, NULL, NULL, file, t->cmd.paths.model, err);
    t->w[0] = 1.0f;
    return 0;
}

static long toy_alloc(void *p) { return 4; }

static void toy_header(const void *p, char *buf, size_t n) {
    const Toy *t = p;
    snprintf(buf, n, "toy model, batch %d, lr %g", t->batch, t->lr);
}

static int toy_step(void *p, double *loss, Error *err) {
    Toy *t = p;
    if (t->step + 1 == t->fail_step) return error_set(err, "toy step %ld failed", t->step + 1);
    t->w[0] *= 0.5f;
    *loss = t->w[0];
    t->step++;
    if (t->step == t->stop_step) raise(SIGINT);  // read by the loop after this step
    return 0;
}

static int toy_save(void *p, Error *err) {
    Toy *t = p;
    char text[32];
    snprintf(text, sizeof text, "%ld", t->step);
    const SafetensorsMeta meta[] = {{"toy.step", text}};
    return train_checkpoint_save(t->cmd.paths.model, &t->params, NULL, NULL, meta, 1, err);
}

static int toy_after(void *p, double loss, bool last, Error *err) {
    Toy *t = p;
    t->last_loss = loss;
    TrainDue due = train_due(&t->cmd.cadence, t->step, last);
    if (due.log) {
        const double row[2] = {(double)t->step, loss};
        csvlog_row(&t->cmd.log, row, 2);
    }
    return due.save ? toy_save(t, err) : 0;
}

static void toy_status(const void *p, double loss, char *buf, size_t n) {
    snprintf(buf, n, "loss %.3f", loss);
}

static void toy_valid(const void *p, char *buf, size_t n) {
    const Toy *t = p;
    if (t->cmd.meter.steps) snprintf(buf, n, "toy loss %.4f", t->last_loss);
}

static void toy_json(const void *p, FILE *out) {
    const Toy *t = p;
    fprintf(out, "\"final_loss\": %g, ", t->last_loss);
}

static void toy_free(void *p) {
    Toy *t = p;
    if (t->allocated) block_free(&t->params);
    t->allocated = false;
    t->frees++;
}

static const TrainCommand TOY = {
    .command = "toy train", .program = "toy", .found_as = "toy",
    .log_columns = "step,train_loss",
    .curves = {{"train_loss", "train_loss"}, {"train loss", "train loss"}, 1.0f, "toy", "loss"},
    .save_with_validation = true,
    .resume = toy_resume, .load_data = toy_load_data, .init_model = toy_init_model,
    .alloc = toy_alloc, .header = toy_header,
    .steps = {toy_step, toy_after, toy_status, "toys"}, .save = toy_save,
    .valid_summary = toy_valid, .json_fields = toy_json, .free = toy_free};

// One invocation with stdout and stderr captured into tmp/stdout.txt and tmp/stderr.txt.
static int run_toy(Toy *t, TrainCommandFlags *f) {
    char out[300], err[300];
    snprintf(out, sizeof out, "%s/stdout.txt", tmp);
    snprintf(err, sizeof err, "%s/stderr.txt", tmp);
    fflush(stdout), fflush(stderr);
    int o = dup(1), e = dup(2);
    if (!freopen(out, "w", stdout) || !freopen(err, "w", stderr)) abort();
    t->cmd = (TrainCommandRun){.flags = f, .step = &t->step, .batch = &t->batch};
    char *argv[] = {"train", "--out", (char *)f->out};
    int rc = train_command_main(&TOY, &t->cmd, t, 3, argv);
    fflush(stdout), fflush(stderr);
    dup2(o, 1), dup2(e, 2);
    close(o), close(e);
    return rc;
}

static char *read_tmp(const char *name) {
    char path[300];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    char *s = scratch_read_text(path, NULL);
    return s ? s : calloc(1, 1);
}

static void test_new_run_and_resume(void) {
    char out[300], want[700];
    snprintf(out, sizeof out, "%s/run", tmp);
    TrainCommandFlags f = {.out = out, .json = true, .threads = 1,
                           .plan = {.steps = 3, .log_every = 1}};
    Toy t = {.batch = 2, .lr = 1.0f};
    EXPECT(run_toy(&t, &f) == 0, "new run failed");
    char *err = read_tmp("stderr.txt"), *js = read_tmp("stdout.txt");
    EXPECT(strstr(err, "toy train: toy model, batch 2, lr 1; step 0 of 3\n"), "header: %s", err);
    EXPECT(strstr(err, "toy train: 3 steps in ") && strstr(err, " toys/s of step time; toy loss 0.1250; wrote "),
           "summary: %s", err);
    EXPECT(!strncmp(js, "{\"steps\": 3, \"final_loss\": 0.125, \"toys_per_s\": ", 48), "json: %s", js);
    snprintf(want, sizeof want, "\"model\": \"%s/model.safetensors\"}\n", out);
    EXPECT(strstr(js, want), "json model: %s", js);
    free(err), free(js);
    char *log = read_tmp("run/log.csv"), *info = read_tmp("run/run.json");
    EXPECT(scratch_count_lines(log) == 4 && !strncmp(log, "step,train_loss\n1,", 18), "log: %s", log);
    EXPECT(strstr(info, "\"status\":\t\"finished\"") && strstr(info, "\"steps\":\t3,"), "run.json: %s", info);
    free(log), free(info);
    EXPECT(t.frees == 1 && !t.allocated, "freed %d times", t.frees);

    // --resume: the checkpoint's step, a replaced setting said before the header.
    Toy r = {.batch = 2, .lr = 1.0f};
    f.resume = true, f.json = false, f.plan.steps = 5;
    EXPECT(run_toy(&r, &f) == 0, "resume failed");
    err = read_tmp("stderr.txt");
    EXPECT(strstr(err, "toy train: resuming with --lr 2 (checkpoint: 1)\n"
                       "toy train: toy model, batch 2, lr 2; step 3 of 5\n"), "resume: %s", err);
    EXPECT(r.step == 5 && r.last_loss == 1.0 / 32, "step %ld, loss %g", r.step, r.last_loss);
    free(err);
    log = read_tmp("run/log.csv");
    EXPECT(scratch_count_lines(log) == 6, "resumed log: %s", log);
    free(log);

    // At its end: no step, no validation, the checkpoint kept.
    Toy z = {.batch = 2, .lr = 1.0f};
    EXPECT(run_toy(&z, &f) == 0, "resume at the end failed");
    err = read_tmp("stderr.txt");
    EXPECT(strstr(err, "toy train: 0 steps in ") && strstr(err, "; no validation in this run; wrote "), "%s", err);
    free(err);

    // A new run into it: refused before the data is read, its memory freed.
    Toy n = {.batch = 2};
    f.resume = false;
    EXPECT(run_toy(&n, &f) == 1 && n.loads == 0 && n.frees == 1, "refusal: loads %d", n.loads);
    err = read_tmp("stderr.txt");
    snprintf(want, sizeof want, "toy: %s already holds a run", out);
    EXPECT(!strncmp(err, want, strlen(want)), "%s", err);
    free(err);
}

static void test_bad_data_makes_no_folder(void) {
    char out[300];
    snprintf(out, sizeof out, "%s/never", tmp);
    TrainCommandFlags f = {.out = out, .threads = 1, .plan = {.steps = 3, .log_every = 1}};
    Toy t = {.batch = 2, .bad_data = true};
    EXPECT(run_toy(&t, &f) == 1 && t.frees == 1, "bad data accepted");
    char *err = read_tmp("stderr.txt");
    EXPECT(!strcmp(err, "toy: toy: no data\n"), "%s", err);
    free(err);
    EXPECT(!file_exists(out), "a refused run made its folder");
}

static void test_failed_step(void) {
    char out[300];
    snprintf(out, sizeof out, "%s/fail", tmp);
    TrainCommandFlags f = {.out = out, .threads = 1, .plan = {.steps = 4, .log_every = 1}};
    Toy t = {.batch = 2, .fail_step = 2};
    EXPECT(run_toy(&t, &f) == 1 && t.frees == 1, "a failed step went unnoticed");
    char *err = read_tmp("stderr.txt"), *info = read_tmp("fail/run.json");
    EXPECT(strstr(err, "toy: toy step 2 failed\n"), "%s", err);
    EXPECT(strstr(info, "\"status\":\t\"failed\"") && strstr(info, "\"steps\":\t1,"), "run.json: %s", info);
    free(err), free(info);
    // The lock went with the run: the folder opens again.
    TrainLock lock = {0};
    Error e;
    static const char *const files[] = {"model.safetensors"};
    EXPECT(train_out_open(&lock, out, files, 1, true, false, &e) == 0, "still locked: %s", e.msg);
    train_lock_release(&lock);
}

static void test_interrupted(void) {
    char out[300];
    snprintf(out, sizeof out, "%s/stop", tmp);
    TrainCommandFlags f = {.out = out, .threads = 1, .plan = {.steps = 10, .log_every = 1}};
    Toy t = {.batch = 2, .stop_step = 2};
    EXPECT(run_toy(&t, &f) == 1 && t.step == 2, "SIGINT: step %ld", t.step);
    char *err = read_tmp("stderr.txt"), *info = read_tmp("stop/run.json");
    EXPECT(strstr(err, "toy: interrupted by SIGINT after step 2; --resume continues from the last checkpoint\n"),
           "%s", err);
    EXPECT(strstr(info, "\"status\":\t\"interrupted\""), "run.json: %s", info);
    free(err), free(info);
}

int main(void) {
    if (scratch_make(tmp, sizeof tmp, "test_train_command")) return 1;
    RUN(test_new_run_and_resume);
    RUN(test_bad_data_makes_no_folder);
    RUN(test_failed_step);
    RUN(test_interrupted);  // last: the signal's flag stays set for the process
    scratch_remove(tmp);
    return test_summary();
}
