// End-to-end tests of bin/draw (found in $ATTEND_BIN, default "bin") on real MNIST
// (data/mnist, fetched by `make data`): train a tiny model for a few steps, evaluate
// with --json, generate and reconstruct frames, resume bit for bit, and refuse bad
// input with one line on stderr and a non-zero exit. Issue 17: a new run refuses a folder
// holding one (--force starts over); --resume refuses model flags that differ from the
// checkpoint and takes new training settings, naming them (and --data, where a run's IDX
// file moved); the default thread count
// follows the CPU affinity mask and the header says it; a --minutes run's progress line
// counts steps and images; --ema's weight average is validated, saved, resumed and
// evaluated. Issue 60: the class-conditional model (train --conditional, generate --digit)
// and eval --sample-quality.
#define _GNU_SOURCE  // sched_setaffinity, CPU_SET
#include <cJSON.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/safetensors.h"
#include "datasets/idx.h"
#include "tests/support/checkpoint.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"

static Scratch sc;  // BIN/draw and its scratch folder
static const char *tmpdir;  // sc.dir

// A tiny configuration: seconds on one core, but every part of the model runs.
#define TINY "--data mnist --T 4 --read 2 --write 3 --hidden 24 --z 6 --batch 16 " \
             "--valid-every 3 --valid-images 64 --log-every 1"

// Runs "BIN/draw ARGS" with stdout and stderr captured into DIR/stdout.txt and
// DIR/stderr.txt; returns the exit status (or -1 if it did not exit normally).
#define run_draw(...) scratch_run(&sc, __VA_ARGS__)

// DIR/NAME as text; NULL when it cannot be read.
static char *read_text(const char *name) { return scratch_read(&sc, name, NULL); }

// Whether DIR/REL exists (REL from a format).
#define exists(...) scratch_exists(&sc, __VA_ARGS__)

static int trained;  // the shared model of later tests exists

static void test_train_writes_outputs(void) {
    int rc = run_draw("train " TINY " --steps 6 --out %s/run --json", tmpdir);
    char *err = read_text("stderr.txt");
    EXPECT(rc == 0, "train exited %d: %s", rc, err ? err : "");
    // The summary says which time is which: the wall time, and the rate of step time that
    // the JSON's images_per_s gives.
    const char *summary = err ? strstr(err, "draw train: 6 steps in ") : NULL;
    const char *rate = summary ? strstr(summary, " s wall; ") : NULL;
    double summary_ips = rate ? atof(rate + strlen(" s wall; ")) : -1;
    EXPECT(rate && strstr(rate, " images/s of step time; valid bound "), "summary: %s", err ? err : "");
    free(err);
    EXPECT(exists("run/model.safetensors"), "no model.safetensors");
    EXPECT(exists("run/loss.png"), "no loss.png");
    char *log = read_text("run/log.csv");
    EXPECT(log && strncmp(log, "step,train_bound,valid_bound,grad_norm,grad_norm_max,seconds\n", 61) == 0, "log.csv header");
    EXPECT(scratch_count_lines(log) == 7, "log.csv has %d lines, expected 1 + 6",
           scratch_count_lines(log));
    // Step 6 validated: its row has a value in every column.
    const char *last = log ? strstr(log, "\n6,") : NULL;
    EXPECT(last && !strstr(last, ",,"), "no complete row for step 6");
    // A row per step: its window's mean gradient norm is its largest, a positive number.
    double row_step = 0, train = 0, valid = 0, norm = 0, norm_max = 0, secs = 0;
    EXPECT(last && sscanf(last, "\n%lf,%lf,%lf,%lf,%lf,%lf", &row_step, &train, &valid, &norm, &norm_max, &secs) == 6);
    EXPECT(norm > 0 && norm == norm_max, "grad_norm %g, grad_norm_max %g", norm, norm_max);
    free(log);
    char *out = read_text("stdout.txt");
    cJSON *j = cJSON_Parse(out ? out : "");
    EXPECT(j != NULL, "train --json printed no JSON: %s", out ? out : "");
    cJSON *step = cJSON_GetObjectItem(j, "steps"), *ips = cJSON_GetObjectItem(j, "images_per_s");
    EXPECT(cJSON_IsNumber(step) && step->valuedouble == 6, "steps");
    EXPECT(cJSON_IsNumber(cJSON_GetObjectItem(j, "final_loss")), "final_loss");
    EXPECT(cJSON_IsNumber(ips) && ips->valuedouble > 0, "images_per_s");
    EXPECT(cJSON_IsNumber(ips) && fabs(summary_ips - ips->valuedouble) <= 0.051,
           "the summary's %g images/s, the JSON's %g", summary_ips, cJSON_IsNumber(ips) ? ips->valuedouble : NAN);
    cJSON_Delete(j);
    free(out);
    trained = rc == 0;
}

static void test_eval_json(void) {
    if (!trained) return test_fail_(__FILE__, __LINE__, "no model (train failed)");
    int rc = run_draw("eval --model %s/run/model.safetensors --data mnist --split test --json "
                      "--limit 40 --samples 3 --batch 16", tmpdir);
    EXPECT(rc == 0, "eval exited %d", rc);
    char *out = read_text("stdout.txt");
    cJSON *j = cJSON_Parse(out ? out : "");
    EXPECT(j != NULL, "not JSON: %s", out ? out : "");
    const char *keys[] = {"nll_bound", "recon", "kl", "images", "nll_iw", "nll_bound_se", "nll_iw_se"};
    double v[7] = {0};
    for (int i = 0; i < 7; i++) {
        cJSON *it = cJSON_GetObjectItem(j, keys[i]);
        EXPECT(cJSON_IsNumber(it), "key %s missing", keys[i]);
        if (cJSON_IsNumber(it)) v[i] = it->valuedouble;
    }
    EXPECT(v[3] == 40, "images = %g, expected 40", v[3]);
    EXPECT_NEAR(v[0], v[1] + v[2], 1e-3, 1e-6);
    EXPECT(v[2] >= 0, "KL %g is negative", v[2]);
    // An untrained binary-MNIST model sits near 784 ln 2 = 543 nats; anything far outside
    // (0, 1000) means a wrong sum.
    EXPECT(v[0] > 100 && v[0] < 1000, "bound %g nats", v[0]);
    EXPECT(v[5] > 0 && v[5] < 100 && v[6] > 0 && v[6] < 100, "standard errors %g and %g", v[5], v[6]);
    // Its progress counts samples, an image once per pass: 40 images x 3.
    char *err = read_text("stderr.txt");
    EXPECT(err && strstr(err, "eval: 120/120 samples done in "), "progress: %s", err ? err : "(none)");
    free(err);
    cJSON_Delete(j);
    free(out);
}

// The bound of DIR/run's model on the first n test images (eval --json) and its standard
// error (NAN where the JSON has null).
static void eval_first(int n, double *bound, double *se) {
    int rc = run_draw("eval --model %s/run/model.safetensors --data mnist --split test --json --limit %d",
                      tmpdir, n);
    char *out = read_text("stdout.txt");
    cJSON *j = rc == 0 ? cJSON_Parse(out ? out : "") : NULL;
    const cJSON *b = cJSON_GetObjectItem(j, "nll_bound"), *s = cJSON_GetObjectItem(j, "nll_bound_se");
    EXPECT(cJSON_IsNumber(b) && (cJSON_IsNumber(s) || cJSON_IsNull(s)), "eval --limit %d: %s", n,
           out ? out : "(none)");
    *bound = cJSON_IsNumber(b) ? b->valuedouble : NAN;
    *se = cJSON_IsNumber(s) ? s->valuedouble : NAN;
    cJSON_Delete(j);
    free(out);
}

// The standard error of the bound over images: null for one image; for two, whose bounds
// are b1 (the first alone: each image's noise is its own) and b2 = 2 mean - b1, the
// sample standard deviation |b1 - b2| / sqrt 2 over sqrt 2, that is |mean - b1|.
static void test_eval_standard_error(void) {
    if (!trained) return test_fail_(__FILE__, __LINE__, "no model (train failed)");
    double b1, se1, mean2, se2;
    eval_first(1, &b1, &se1);
    eval_first(2, &mean2, &se2);
    EXPECT(isnan(se1), "one image: standard error %g, expected null", se1);
    EXPECT(fabs(mean2 - b1) > 1e-3, "the two images have the same bound: the check is void");
    EXPECT_NEAR(se2, fabs(mean2 - b1), 1e-4, 1e-4);
}

static void test_generate_frames(void) {
    if (!trained) return test_fail_(__FILE__, __LINE__, "no model (train failed)");
    int rc = run_draw("generate --model %s/run/model.safetensors --count 9 --out %s/gen "
                      "--seed 3 --show-attention", tmpdir, tmpdir);
    EXPECT(rc == 0, "generate exited %d", rc);
    for (int t = 1; t <= 4; t++) EXPECT(exists("gen/step_%02d.png", t), "no step_%02d.png", t);
    EXPECT(!exists("gen/step_05.png") && !exists("gen/step_00.png"), "frames beyond T");
    EXPECT(exists("gen/draw.gif"), "no draw.gif");
    EXPECT(exists("gen/final.png"), "no final.png");
    // GIF magic
    char *gif = read_text("gen/draw.gif");
    EXPECT(gif && strncmp(gif, "GIF89a", 6) == 0, "draw.gif is not a GIF89a file");
    free(gif);
}

// Issue 56: a film of fewer steps into a folder holding a longer one replaces it whole: the
// longer film's later frames (and frames numbered with other padding) are removed and
// counted; files of other names stay.
static void test_generate_removes_stale_frames(void) {
    if (!trained) return test_fail_(__FILE__, __LINE__, "no model (train failed)");
    int rc = run_draw("train " TINY " --T 11 --steps 1 --out %s/long", tmpdir);
    EXPECT(rc == 0, "training the T 11 model exited %d", rc);
    rc = run_draw("generate --model %s/long/model.safetensors --count 2 --out %s/film", tmpdir, tmpdir);
    EXPECT(rc == 0 && exists("film/step_11.png"), "T 11 generate exited %d", rc);
    const char *kept[] = {"step_00.png", "step_5.png", "step_notes.png", "step_07.png.txt", "notes.txt"};
    char path[700];
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
        snprintf(path, sizeof path, "%s/film/%s", tmpdir, kept[i]);
        scratch_write_text(path, "not a frame\n");
    }
    snprintf(path, sizeof path, "%s/film/step_001.png", tmpdir);  // a film of 100 steps or more
    scratch_write_text(path, "a frame\n");
    rc = run_draw("generate --model %s/run/model.safetensors --count 2 --out %s/film", tmpdir, tmpdir);
    char *err = read_text("stderr.txt");
    EXPECT(rc == 0 && err && strstr(err, "removed 8 step_*.png of an earlier film"), "exit %d, stderr: %s", rc,
           err ? err : "");
    free(err);
    for (int t = 1; t <= 4; t++) EXPECT(exists("film/step_%02d.png", t), "no step_%02d.png", t);
    for (int t = 5; t <= 11; t++) EXPECT(!exists("film/step_%02d.png", t), "step_%02d.png is left", t);
    EXPECT(!exists("film/step_001.png"), "step_001.png is left");
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        EXPECT(exists("film/%s", kept[i]), "%s was removed", kept[i]);
    // Nothing stale: the line says nothing of it.
    rc = run_draw("generate --model %s/run/model.safetensors --count 2 --out %s/film", tmpdir, tmpdir);
    err = read_text("stderr.txt");
    EXPECT(rc == 0 && err && !strstr(err, "removed"), "again: exit %d, stderr: %s", rc, err ? err : "");
    free(err);
}

static void test_reconstruct_frames(void) {
    if (!trained) return test_fail_(__FILE__, __LINE__, "no model (train failed)");
    int rc = run_draw("reconstruct --model %s/run/model.safetensors --data mnist --count 4 "
                      "--out %s/rec", tmpdir, tmpdir);
    EXPECT(rc == 0, "reconstruct exited %d", rc);
    EXPECT(exists("rec/input.png") && exists("rec/step_01.png") && exists("rec/step_04.png") &&
               exists("rec/draw.gif"),
           "missing reconstruct outputs");
}

static void test_resume_bit_identical(void) {
    int rc = run_draw("train " TINY " --steps 7 --seed 5 --out %s/full", tmpdir);
    EXPECT(rc == 0, "uninterrupted run exited %d", rc);
    rc = run_draw("train " TINY " --steps 3 --seed 5 --out %s/part", tmpdir);
    EXPECT(rc == 0, "first half exited %d", rc);
    rc = run_draw("train --steps 7 --resume --valid-every 3 --valid-images 64 --out %s/part", tmpdir);
    EXPECT(rc == 0, "resumed run exited %d", rc);
    char a[600], b[600], why[700] = "";
    snprintf(a, sizeof a, "%s/full/model.safetensors", tmpdir);
    snprintf(b, sizeof b, "%s/part/model.safetensors", tmpdir);
    EXPECT(checkpoints_identical(a, b, NULL, why, sizeof why), "resume differs: %s", why);
    // Resuming a finished run does no step: it says so, and its JSON has no NaN in it.
    rc = run_draw("train --steps 7 --resume --json --out %s/part", tmpdir);
    char *out = read_text("stdout.txt"), *err = read_text("stderr.txt");
    EXPECT(rc == 0, "resuming a finished run exited %d", rc);
    EXPECT(out && strstr(out, "\"steps\": 7") && strstr(out, "\"final_loss\": null") &&
               strstr(out, "\"valid_bound\": null") && !strstr(out, "nan"),
           "JSON of a run with no step left: %s", out ? out : "(none)");
    EXPECT(err && strstr(err, "0 steps") && strstr(err, "no validation in this run"),
           "stderr: %s", err ? err : "(none)");
    free(out), free(err);
    // And the check can fail: a different seed gives different weights.
    rc = run_draw("train " TINY " --steps 7 --seed 6 --out %s/other", tmpdir);
    snprintf(b, sizeof b, "%s/other/model.safetensors", tmpdir);
    EXPECT(rc == 0 && !checkpoints_identical(a, b, NULL, why, sizeof why),
           "seeds 5 and 6 gave the same weights");
}

// The first line of stderr that starts with prefix (a static copy); "" when none.
static const char *stderr_line(const char *prefix) {
    static char line[2048];
    line[0] = 0;
    char *err = read_text("stderr.txt");
    for (char *p = err; p && *p;) {
        char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        if (strncmp(p, prefix, strlen(prefix)) == 0) {
            snprintf(line, sizeof line, "%.*s", (int)n, p);
            break;
        }
        p = eol ? eol + 1 : p + n;
    }
    free(err);
    return line;
}

// The last valid_bound of DIR/log.csv (its third column); NAN when there is none.
static double last_valid_bound(const char *dir) {
    char name[64];
    snprintf(name, sizeof name, "%s/log.csv", dir);
    char *log = read_text(name);
    double v = NAN;
    for (char *line = log ? strchr(log, '\n') : NULL; line && line[1]; line = strchr(line + 1, '\n')) {
        const char *c = strchr(line + 1, ',');
        c = c ? strchr(c + 1, ',') : NULL;
        if (c && c[1] != ',') v = strtod(c + 1, NULL);
    }
    free(log);
    return v;
}

// `draw eval --json` of DIR's model on the 64 validation images training validates on
// (extra: more flags); its bound, and in weights what it evaluated ("average" or
// "trained"). NAN when it failed.
static double eval_valid(const char *dir, const char *extra, char weights[16]) {
    int rc = run_draw("eval --model %s/%s/model.safetensors --data mnist --split valid --limit 64 --json%s",
                      tmpdir, dir, extra);
    char *out = read_text("stdout.txt");
    cJSON *j = rc == 0 ? cJSON_Parse(out ? out : "") : NULL;
    const cJSON *b = cJSON_GetObjectItem(j, "nll_bound"), *w = cJSON_GetObjectItem(j, "weights");
    double v = cJSON_IsNumber(b) ? b->valuedouble : NAN;
    snprintf(weights, 16, "%s", cJSON_IsString(w) ? w->valuestring : "");
    cJSON_Delete(j);
    free(out);
    return v;
}

// --ema: the weight average is what training validates (log.csv's valid_bound is eval's
// bound of the average on the same images) and what eval evaluates (--no-average: the
// trained weights, another bound); a resumed run continues it bit for bit; --resume turns
// it on (from the weights) and off, naming the change.
static void test_weight_average(void) {
    int rc = run_draw("train " TINY " --steps 6 --seed 5 --ema 0.9 --out %s/avg", tmpdir);
    EXPECT(rc == 0, "train --ema exited %d", rc);
    char weights[16];
    const double logged = last_valid_bound("avg"), avg = eval_valid("avg", "", weights);
    EXPECT(fabs(avg - logged) <= 1e-6 * fabs(logged), "eval of the average %.9g, logged %.9g", avg, logged);
    EXPECT(!strcmp(weights, "average"), "weights '%s'", weights);
    const double trained = eval_valid("avg", " --no-average", weights);
    EXPECT(!strcmp(weights, "trained") && isfinite(trained) && trained != avg,
           "--no-average: '%s', bound %.9g (average %.9g)", weights, trained, avg);
    // Stopped at step 3 and resumed: the same weights, moments and average.
    rc = run_draw("train " TINY " --steps 3 --seed 5 --ema 0.9 --out %s/avg_part", tmpdir);
    EXPECT(rc == 0, "first half exited %d", rc);
    rc = run_draw("train --steps 6 --resume --valid-every 3 --valid-images 64 --out %s/avg_part", tmpdir);
    EXPECT(rc == 0, "resumed run exited %d", rc);
    char a[600], b[600], why[700] = "";
    snprintf(a, sizeof a, "%s/avg/model.safetensors", tmpdir);
    snprintf(b, sizeof b, "%s/avg_part/model.safetensors", tmpdir);
    EXPECT(checkpoints_identical(a, b, NULL, why, sizeof why), "resume with --ema differs: %s", why);
    // Turned on by --resume, then off.
    rc = run_draw("train " TINY " --steps 3 --seed 5 --out %s/avg_on", tmpdir);
    EXPECT(rc == 0, "run without --ema exited %d", rc);
    rc = run_draw("train --steps 6 --resume --ema 0.9 --out %s/avg_on", tmpdir);
    EXPECT(rc == 0 && strstr(stderr_line("draw train: resuming"), "--ema 0.9 (checkpoint: 0)"),
           "turned on: exit %d, '%s'", rc, stderr_line("draw train: resuming"));
    eval_valid("avg_on", "", weights);
    EXPECT(!strcmp(weights, "average"), "turned on: weights '%s'", weights);
    rc = run_draw("train --steps 7 --resume --ema 0 --out %s/avg_on", tmpdir);
    EXPECT(rc == 0 && strstr(stderr_line("draw train: resuming"), "--ema 0 (checkpoint: 0.9)"),
           "turned off: exit %d, '%s'", rc, stderr_line("draw train: resuming"));
    eval_valid("avg_on", "", weights);
    EXPECT(!strcmp(weights, "trained"), "turned off: weights '%s'", weights);
}

// A new run refuses a folder that holds one (a trained model was once replaced by a 5-step
// one): one line naming the run and the way out, the model and log untouched. --force
// starts over; --resume continues.
static void test_refuses_to_overwrite_a_run(void) {
    int rc = run_draw("train " TINY " --steps 3 --out %s/kept", tmpdir);
    EXPECT(rc == 0, "first run exited %d", rc);
    size_t n0 = 0, n1 = 0;
    char *model0 = scratch_read(&sc, "kept/model.safetensors", &n0), *log0 = read_text("kept/log.csv");
    rc = run_draw("train " TINY " --steps 1 --out %s/kept", tmpdir);
    char *err = read_text("stderr.txt");
    EXPECT(rc != 0 && scratch_count_lines(err) == 1, "exit %d, stderr: %s", rc, err ? err : "");
    EXPECT(err && strstr(err, "already holds a run") && strstr(err, "kept/model.safetensors") &&
               strstr(err, "--resume") && strstr(err, "--force"),
           "stderr: %s", err ? err : "");
    char *model1 = scratch_read(&sc, "kept/model.safetensors", &n1), *log1 = read_text("kept/log.csv");
    EXPECT(model0 && model1 && n0 == n1 && !memcmp(model0, model1, n0), "the model changed");
    EXPECT(log0 && log1 && !strcmp(log0, log1), "the log changed");
    free(err), free(model1), free(log1);
    rc = run_draw("train " TINY " --steps 1 --force --out %s/kept", tmpdir);
    model1 = scratch_read(&sc, "kept/model.safetensors", &n1);
    log1 = read_text("kept/log.csv");
    EXPECT(rc == 0 && model1 && (n1 != n0 || memcmp(model0, model1, n0)), "--force: exit %d", rc);
    EXPECT(log1 && scratch_count_lines(log1) == 2, "--force: log.csv %s", log1 ? log1 : "");
    free(model0), free(model1), free(log0), free(log1);
}

// --resume: model flags that differ are refused, each named with both values; a flag
// left out takes the checkpoint's; training settings given (--lr) are taken and named.
static void test_resume_checks_flags(void) {
    int rc = run_draw("train " TINY " --steps 2 --out %s/flags", tmpdir);
    EXPECT(rc == 0, "first run exited %d", rc);
    rc = run_draw("train --steps 3 --resume --T 5 --hidden 24 --z 7 --out %s/flags", tmpdir);
    char *err = read_text("stderr.txt");
    EXPECT(rc != 0 && scratch_count_lines(err) == 1, "exit %d, stderr: %s", rc, err ? err : "");
    EXPECT(err && strstr(err, "--T 5 (checkpoint: 4), --z 7 (checkpoint: 6)") && !strstr(err, "--hidden"),
           "stderr: %s", err ? err : "");
    free(err);
    rc = run_draw("train --steps 3 --resume --no-attention --out %s/flags", tmpdir);
    err = read_text("stderr.txt");
    EXPECT(rc != 0 && err && strstr(err, "--no-attention (checkpoint: off)"), "stderr: %s", err ? err : "");
    free(err);
    rc = run_draw("train --steps 3 --resume --lr 0.002 --valid-every 3 --valid-images 64 --out %s/flags", tmpdir);
    EXPECT(rc == 0, "resume with a new --lr exited %d", rc);
    EXPECT(strstr(stderr_line("draw train: resuming"), "--lr 0.002 (checkpoint: 0.001)"),
           "no line names the new --lr: '%s'", stderr_line("draw train: resuming"));
    EXPECT(strstr(stderr_line("draw train: mnist"), "T 4,") && strstr(stderr_line("draw train: mnist"), "lr 0.002"),
           "header: %s", stderr_line("draw train: mnist"));
}

// --peepholes: the header says so, the checkpoint carries draw.peepholes = 1 and the two
// LSTMs' peephole weights (trained away from their initial zeros), a resumed run goes on
// bit for bit, eval reads the model, and the flag is a model flag on --resume (refused
// against a run without peepholes, named with the checkpoint's value); a bad value of the
// field is one line naming it.
static void test_peepholes(void) {
    int rc = run_draw("train " TINY " --peepholes --steps 5 --seed 5 --out %s/peep", tmpdir);
    EXPECT(rc == 0 && strstr(stderr_line("draw train: LSTMs"), "peepholes"), "exit %d, header '%s'",
           rc, stderr_line("draw train: LSTMs"));
    char path[600], why[700] = "";
    snprintf(path, sizeof path, "%s/peep/model.safetensors", tmpdir);
    SafetensorsFile f;
    Error err;
    EXPECT(safetensors_load(&f, path, &err) == 0, "%s", err.msg);
    const char *meta = safetensors_meta(&f, "draw.peepholes");
    EXPECT(meta && !strcmp(meta, "1"), "draw.peepholes = %s", meta ? meta : "(absent)");
    const char *names[] = {"enc.peep", "dec.peep"};
    for (int i = 0; i < 2; i++) {
        const SafetensorsTensor *t = safetensors_find(&f, names[i]);
        double s = 0;
        for (size_t k = 0; t && t->data && k < t->numel; k++) s += fabs(t->data[k]);
        EXPECT(t && t->numel == 3 * 24 && s > 0, "%s: %s", names[i], t ? "all zero" : "absent");
    }
    safetensors_free(&f);
    rc = run_draw("train " TINY " --peepholes --steps 3 --seed 5 --out %s/peep_part", tmpdir);
    rc |= run_draw("train --steps 5 --resume --valid-every 3 --valid-images 64 --out %s/peep_part", tmpdir);
    char part[600];
    snprintf(part, sizeof part, "%s/peep_part/model.safetensors", tmpdir);
    EXPECT(rc == 0 && checkpoints_identical(path, part, NULL, why, sizeof why), "resume: %s", why);
    char w[16];
    EXPECT(isfinite(eval_valid("peep", "", w)), "eval of the peephole model failed");
    rc = run_draw("report %s/peep", tmpdir);
    char *page = read_text("peep/report.html");
    EXPECT(rc == 0 && page && strstr(page, "with peephole connections"), "report: exit %d, %s", rc,
           page ? "the page does not name the peepholes" : "no page");
    free(page);
    rc = run_draw("train " TINY " --steps 2 --out %s/nopeep", tmpdir);
    rc = run_draw("train --steps 3 --resume --peepholes --out %s/nopeep", tmpdir);
    char *e = read_text("stderr.txt");
    EXPECT(rc != 0 && scratch_count_lines(e) == 1 && strstr(e, "--peepholes (checkpoint: off)"),
           "stderr: %s", e ? e : "");
    free(e);
    char bad[600];
    snprintf(bad, sizeof bad, "%s/peep_bad.safetensors", tmpdir);
    EXPECT(checkpoint_rewrite_meta(path, bad, "draw.peepholes", "2") == 0);
    rc = run_draw("eval --model %s --data mnist --split valid --limit 64", bad);
    e = read_text("stderr.txt");
    EXPECT(rc != 0 && scratch_count_lines(e) == 1 && strstr(e, "peep_bad.safetensors") &&
               strstr(e, "draw.peepholes = 2"),
           "stderr: %s", e ? e : "");
    free(e);
}

// An IDX file that moved: --resume without --data refuses with the checkpoint's path;
// --data gives the new place, named on one line, and the run goes on as an unbroken one
// on the same images (the checkpoint then records the new path); images of another size
// are refused, the checkpoint left as it was.
static void test_resume_where_the_data_moved(void) {
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "cp data/mnist/t10k-images-idx3-ubyte %s/before.idx", tmpdir);
    EXPECT(system(cmd) == 0, "copying an IDX file");
#define IDX_TINY "--T 4 --read 2 --write 3 --hidden 24 --z 6 --batch 16 --valid-every 3 " \
                 "--valid-images 64 --log-every 1 --seed 3"
    int rc = run_draw("train --data %s/before.idx " IDX_TINY " --steps 6 --out %s/unbroken", tmpdir, tmpdir);
    EXPECT(rc == 0, "the unbroken run exited %d", rc);
    rc = run_draw("train --data %s/before.idx " IDX_TINY " --steps 3 --out %s/moved", tmpdir, tmpdir);
    EXPECT(rc == 0, "the first half exited %d", rc);
    snprintf(cmd, sizeof cmd, "mv %s/before.idx %s/after.idx", tmpdir, tmpdir);
    EXPECT(system(cmd) == 0, "moving the IDX file");
    rc = run_draw("train --resume --steps 6 --valid-every 3 --valid-images 64 --out %s/moved", tmpdir);
    char *err = read_text("stderr.txt");
    EXPECT(rc != 0 && scratch_count_lines(err) == 1 && strstr(err, "before.idx"),
           "resume without --data: exit %d, stderr: %s", rc, err ? err : "");
    free(err);
    rc = run_draw("train --resume --data mnist2 --steps 6 --out %s/moved", tmpdir);
    err = read_text("stderr.txt");
    EXPECT(rc != 0 && scratch_count_lines(err) == 1 &&
               strstr(err, "model is for 28x28x1 images, mnist2 has 60x60x1"),
           "resume on 60 x 60 images: exit %d, stderr (one line): %s", rc, err ? err : "");
    free(err);
    rc = run_draw("train --resume --data %s/after.idx --steps 6 --valid-every 3 --valid-images 64 --out %s/moved",
                  tmpdir, tmpdir);
    EXPECT(rc == 0, "resume with the new --data exited %d", rc);
    const char *said = stderr_line("draw train: resuming");
    EXPECT(strstr(said, "after.idx (checkpoint: ") && strstr(said, "before.idx)"), "line: '%s'", said);
    char a[600], b[600], why[700] = "";
    snprintf(a, sizeof a, "%s/unbroken/model.safetensors", tmpdir);
    snprintf(b, sizeof b, "%s/moved/model.safetensors", tmpdir);
    EXPECT(checkpoints_identical(a, b, NULL, why, sizeof why), "resumed on the moved file: %s", why);
    // The checkpoint now names the new place: resuming again needs no --data.
    rc = run_draw("train --resume --steps 9 --valid-every 3 --valid-images 64 --out %s/moved", tmpdir);
    EXPECT(rc == 0, "resuming again without --data exited %d", rc);
#undef IDX_TINY
}

// A read or write grid larger than the images (issue 56): one line naming the flag, where
// its value came from, the data file, the images' size and the bound; no run folder made.
static void test_grid_larger_than_images(void) {
    uint8_t pixels[20];
    for (int i = 0; i < 20; i++) pixels[i] = (uint8_t)(i * 12);
    const int64_t dims[3] = {20, 1, 1};
    size_t len = 0;
    unsigned char *bytes = idx_encode(IDX_U8, 3, dims, pixels, &len);
    char path[600];
    snprintf(path, sizeof path, "%s/dot-images.idx", tmpdir);
    FILE *f = fopen(path, "wb");
    EXPECT(f && fwrite(bytes, 1, len, f) == len, "writing %s", path);
    if (f) fclose(f);
    free(bytes);
    struct {
        const char *flags, *want[4];
    } cases[] = {
        {"--read 2 --write 1", {"--read 2:", "dot-images.idx are 1 x 1 pixels", "so --read must be 1", NULL}},
        {"--read 1", {"--write 5 (the default value):", "1 x 1 pixels", "so --write must be 1", NULL}},
        {"--read 1 --preset svhn", {"--write 12 (from --preset svhn):", "--write must be 1", NULL}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = run_draw("train --data %s %s --batch 4 --steps 1 --out %s/dot", path, cases[i].flags, tmpdir);
        char *err = read_text("stderr.txt");
        EXPECT(rc != 0 && scratch_count_lines(err) == 1, "%s: exit %d, stderr: %s", cases[i].flags, rc,
               err ? err : "");
        for (int k = 0; cases[i].want[k]; k++)
            EXPECT(err && strstr(err, cases[i].want[k]), "%s: stderr lacks '%s': %s", cases[i].flags,
                   cases[i].want[k], err ? err : "");
        free(err);
        EXPECT(!exists("dot"), "%s: the run folder was made", cases[i].flags);
    }
    int rc = run_draw("train " TINY " --write 40 --steps 1 --out %s/wide", tmpdir);
    char *err = read_text("stderr.txt");
    EXPECT(rc != 0 && err && strstr(err, "--write 40: the images of mnist are 28 x 28 pixels, so --write must be at most 28"),
           "--write 40 on MNIST: exit %d, stderr: %s", rc, err ? err : "");
    free(err);
    // Without attention the grids are not used: the same flags train.
    rc = run_draw("train --data %s --read 2 --no-attention --T 2 --hidden 4 --z 2 --batch 4 --steps 1 --out %s/dot",
                  path, tmpdir);
    EXPECT(rc == 0, "--no-attention on 1 x 1 images exited %d", rc);
}

// Issue 56: a flag given that the run does not use is warned of, one line per reason (for
// a new run from its flags, on --resume from the checkpoint).
static void test_unused_flags_warned(void) {
    int rc = run_draw("train " TINY " --no-attention --steps 1 --epochs 2 --out %s/whole", tmpdir);
    EXPECT(rc == 0 && !strcmp(stderr_line("draw train: --read"), "draw train: --read, --write have no effect: a model "
                                                                  "without attention reads the whole image and writes the whole canvas"),
           "--read, --write with --no-attention: exit %d, '%s'", rc, stderr_line("draw train: --read"));
    EXPECT(!strcmp(stderr_line("draw train: --epochs"), "draw train: --epochs has no effect: --steps sets the run's length"),
           "--epochs with --steps: '%s'", stderr_line("draw train: --epochs"));
    rc = run_draw("train --resume --preset mnist --steps 2 --valid-images 64 --out %s/whole", tmpdir);
    EXPECT(rc == 0 && *stderr_line("draw train: --preset has no effect: --resume takes the model's configuration"),
           "--resume --preset: exit %d", rc);
    rc = run_draw("train " TINY " --steps 1 --out %s/attends", tmpdir);
    char *err = read_text("stderr.txt");
    EXPECT(rc == 0 && err && !strstr(err, "no effect"), "an attention model with --read, --write: %s", err ? err : "");
    free(err);
}

// --threads left out: every CPU of the affinity mask, and the header says how many.
static void test_threads_default_to_affinity(void) {
    cpu_set_t saved, one;
    EXPECT(sched_getaffinity(0, sizeof saved, &saved) == 0);
    char want[32];
    int all = CPU_COUNT(&saved);
    snprintf(want, sizeof want, ", %d thread%s;", all, all == 1 ? "" : "s");
    int rc = run_draw("train " TINY " --steps 1 --out %s/threads_all", tmpdir);
    EXPECT(rc == 0 && strstr(stderr_line("draw train: mnist"), want), "want '%s': %s", want,
           stderr_line("draw train: mnist"));
    int first = 0;
    while (first < CPU_SETSIZE && !CPU_ISSET(first, &saved)) first++;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    EXPECT(sched_setaffinity(0, sizeof one, &one) == 0, "cannot set the affinity");
    rc = run_draw("train " TINY " --steps 1 --out %s/threads_one", tmpdir);  // inherits the mask
    sched_setaffinity(0, sizeof saved, &saved);
    EXPECT(rc == 0 && strstr(stderr_line("draw train: mnist"), ", 1 thread;"), "one CPU: %s",
           stderr_line("draw train: mnist"));
}

// A --minutes run's progress lines count steps, with images/s and the time left (6 s: a
// log gets its first line after 5, and one at the end): the first line's count is at most
// the run's, and the last line's is the run's step count, which the JSON gives, whatever
// the machine's speed (under valgrind a step takes a third of a second; the test once asked
// for more than 20 steps in 5 s, which only a fast machine gives).
static void test_minutes_progress_counts_steps(void) {
    int rc = run_draw("train " TINY " --minutes 0.1 --valid-every 100000 --log-every 1000 --threads 1 --json --out %s/minutes", tmpdir);
    EXPECT(rc == 0, "exited %d", rc);
    char *out = read_text("stdout.txt"), *err = read_text("stderr.txt");
    const char *at = out ? strstr(out, "\"steps\": ") : NULL;
    long total = at ? atol(at + 9) : -1;
    const char *first = stderr_line("train: ");
    EXPECT(strstr(first, " steps (") && strstr(first, " steps/s, ") && strstr(first, " images/s, ") &&
               strstr(first, " left") && !strstr(first, "nan") && atol(first + 7) >= 1 &&
               atol(first + 7) <= total,
           "first progress line: '%s' (%ld steps in all)", first, total);
    const char *last = NULL;
    for (const char *p = err; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, "train: ", 7)) last = p;
    char line[512] = "";
    if (last) snprintf(line, sizeof line, "%.*s", (int)strcspn(last, "\n"), last);
    EXPECT(total > 0 && strstr(line, " steps done in ") && atol(line + 7) == total,
           "%ld steps in the JSON, the last line: '%s'", total, line);
    free(out), free(err);
}

// Each bad invocation must exit non-zero with exactly one line on stderr.
static void expect_one_line_failure(const char *args) {
    int rc = run_draw("%s", args);
    char *err = read_text("stderr.txt");
    EXPECT(rc != 0, "'draw %s' exited 0", args);
    EXPECT(scratch_count_lines(err) == 1, "'draw %s' wrote %d lines on stderr: %s", args,
           scratch_count_lines(err), err ? err : "");
    free(err);
}

// The one line of stderr of a failed 'draw ARGS' (a static copy), after checking that it
// failed with one line that starts with prefix; "" when it did not.
static const char *one_line_failure(const char *prefix, const char *fmt, const char *a, const char *b) {
    static char line[2048];
    char args[1600];
    snprintf(args, sizeof args, fmt, a, b);
    expect_one_line_failure(args);
    char *err = read_text("stderr.txt");
    snprintf(line, sizeof line, "%s", err && !strncmp(err, prefix, strlen(prefix)) ? err : "");
    EXPECT(line[0], "'draw %s': stderr does not start '%s': %s", args, prefix, err ? err : "");
    free(err);
    return line;
}

// Issue 60: draw train --conditional says so, records draw.classes = 10 and the label
// weights, resumes bit for bit, and is a model flag on --resume; an unconditional
// checkpoint carries no draw.classes (so those of before the flag load as unconditional);
// eval says the bound is conditional; generate --digit draws a chosen class, and refuses a
// class the model lacks and an unconditional model, each with one line.
static void test_conditional(void) {
    int rc = run_draw("train " TINY " --conditional --steps 5 --seed 5 --out %s/cond", tmpdir);
    EXPECT(rc == 0 && strstr(stderr_line("draw train: class-conditional"), "10 classes"),
           "exit %d, header '%s'", rc, stderr_line("draw train: class-conditional"));
    char path[600], part[600], why[700] = "";
    snprintf(path, sizeof path, "%s/cond/model.safetensors", tmpdir);
    SafetensorsFile f;
    Error err;
    EXPECT(safetensors_load(&f, path, &err) == 0, "%s", err.msg);
    const char *meta = safetensors_meta(&f, "draw.classes");
    EXPECT(meta && !strcmp(meta, "10"), "draw.classes = %s", meta ? meta : "(absent)");
    const char *names[] = {"enc.label_W", "dec.label_W"};
    for (int i = 0; i < 2; i++) {
        const SafetensorsTensor *t = safetensors_find(&f, names[i]);
        EXPECT(t && t->numel == 4 * 24 * 10, "%s: %s", names[i], t ? "wrong size" : "absent");
    }
    safetensors_free(&f);
    rc = run_draw("train " TINY " --conditional --steps 3 --seed 5 --out %s/cond_part", tmpdir);
    rc |= run_draw("train --steps 5 --resume --valid-every 3 --valid-images 64 --out %s/cond_part", tmpdir);
    snprintf(part, sizeof part, "%s/cond_part/model.safetensors", tmpdir);
    EXPECT(rc == 0 && checkpoints_identical(path, part, "draw.classes", why, sizeof why), "resume: %s", why);
    // --resume: the flag must match the checkpoint, either way
    rc = run_draw("train " TINY " --steps 2 --out %s/uncond", tmpdir);
    EXPECT(rc == 0, "unconditional run exited %d", rc);
    char uncond[600];
    snprintf(uncond, sizeof uncond, "%s/uncond/model.safetensors", tmpdir);
    EXPECT(safetensors_load(&f, uncond, &err) == 0, "%s", err.msg);
    EXPECT(!safetensors_meta(&f, "draw.classes") && !safetensors_find(&f, "enc.label_W"),
           "an unconditional checkpoint with draw.classes or label weights");
    safetensors_free(&f);
    rc = run_draw("train --steps 3 --resume --conditional --out %s/uncond", tmpdir);
    char *e = read_text("stderr.txt");
    EXPECT(rc != 0 && scratch_count_lines(e) == 1 && strstr(e, "--conditional (checkpoint: off)"),
           "stderr: %s", e ? e : "");
    free(e);
    // eval: the bound is conditional, in the text and the JSON
    rc = run_draw("eval --model %s --data mnist --split test --limit 32", path);
    char *out = read_text("stdout.txt");
    EXPECT(rc == 0 && out && strstr(out, "-log p(x | label)"), "eval: %s", out ? out : "");
    free(out);
    rc = run_draw("eval --model %s --data mnist --split test --limit 32 --json", path);
    out = read_text("stdout.txt");
    cJSON *j = cJSON_Parse(out ? out : "");
    EXPECT(rc == 0 && cJSON_IsTrue(cJSON_GetObjectItem(j, "conditional")), "eval --json: %s", out ? out : "");
    cJSON_Delete(j);
    free(out);
    // generate --digit 7: the frames and the GIF
    rc = run_draw("generate --model %s --digit 7 --count 16 --out %s/cond/gen7", path, tmpdir);
    EXPECT(rc == 0 && strstr(stderr_line("draw generate: wrote"), "16 samples of class 7"),
           "generate --digit: exit %d, '%s'", rc, stderr_line("draw generate: wrote"));
    for (int t = 1; t <= 4; t++) EXPECT(exists("cond/gen7/step_%02d.png", t), "no step_%02d.png", t);
    EXPECT(exists("cond/gen7/draw.gif") && exists("cond/gen7/final.png"), "no draw.gif or final.png");
    // the class matters: another digit, other pictures from the same seed
    rc = run_draw("generate --model %s --digit 1 --count 16 --out %s/cond/gen1", path, tmpdir);
    size_t n7 = 0, n1 = 0;
    char *g7 = scratch_read(&sc, "cond/gen7/final.png", &n7), *g1 = scratch_read(&sc, "cond/gen1/final.png", &n1);
    EXPECT(rc == 0 && g7 && g1 && (n7 != n1 || memcmp(g7, g1, n7)), "digits 7 and 1 drew the same");
    free(g7), free(g1);
    // bad input: a class the model lacks, a class of an unconditional model
    const char *line = one_line_failure("draw generate: --digit 10", "generate --model %s --digit 10 --out %s/x", path, tmpdir);
    EXPECT(strstr(line, "0 to 9"), "%s", line);
    line = one_line_failure("draw generate: --digit 3", "generate --model %s --digit 3 --out %s/x", uncond, tmpdir);
    EXPECT(strstr(line, "unconditional"), "%s", line);
    EXPECT(!exists("x"), "a refused generate made its folder");
}

// Issue 60: eval --sample-quality with a 28x28 CNN: the figures in --json (N samples, shares
// in [0, 1], the entropy at most log 10, a conditional model's match per class and its
// confusion matrix, and the text's line of what each class is taken for); a
// classifier file of another kind (a DRAW model, a CNN of 100x100 cluttered images) is one
// line naming it.
static void test_sample_quality(void) {
    int rc = run_draw("classify train --model cnn --size 28 --fragments 0 --steps 3 --batch 16 "
                      "--valid-images 16 --out %s/cnn28", tmpdir);
    EXPECT(rc == 0, "classify train --size 28 exited %d", rc);
    rc = run_draw("eval --model %s/cond/model.safetensors --data mnist --split test --limit 16 "
                  "--sample-quality %s/cnn28/model.safetensors --quality-samples 30 --json",
                  tmpdir, tmpdir);
    char *out = read_text("stdout.txt");
    cJSON *j = cJSON_Parse(out ? out : "");
    const cJSON *q = cJSON_GetObjectItem(j, "sample_quality");
    const cJSON *n = cJSON_GetObjectItem(q, "samples"), *leg = cJSON_GetObjectItem(q, "legible");
    const cJSON *h = cJSON_GetObjectItem(q, "entropy"), *hmax = cJSON_GetObjectItem(q, "entropy_max");
    const cJSON *m = cJSON_GetObjectItem(q, "match"), *per = cJSON_GetObjectItem(q, "match_per_class");
    EXPECT(rc == 0 && cJSON_IsNumber(n) && n->valuedouble == 30, "eval --sample-quality: %s", out ? out : "");
    EXPECT(cJSON_IsNumber(leg) && leg->valuedouble >= 0 && leg->valuedouble <= 1, "legible");
    EXPECT(cJSON_IsNumber(h) && cJSON_IsNumber(hmax) && fabs(hmax->valuedouble - log(10.0)) < 1e-6 &&
               h->valuedouble >= 0 && h->valuedouble <= hmax->valuedouble + 1e-9, "entropy");
    EXPECT(cJSON_IsNumber(m) && cJSON_GetArraySize(per) == 10 &&
               cJSON_GetArraySize(cJSON_GetObjectItem(q, "predicted_share")) == 10, "match");
    // the confusion matrix: 10 rows of 10 counts, each row the 3 samples asked for its class,
    // its diagonal the matches
    const cJSON *conf = cJSON_GetObjectItem(q, "confusion");
    int rows_ok = cJSON_GetArraySize(conf) == 10;
    for (int k = 0; rows_ok && k < 10; k++) {
        const cJSON *row = cJSON_GetArrayItem(conf, k), *pk = cJSON_GetArrayItem(per, k);
        double sum = 0;
        rows_ok = cJSON_GetArraySize(row) == 10 && cJSON_IsNumber(pk);
        for (int i = 0; rows_ok && i < 10; i++) sum += cJSON_GetArrayItem(row, i)->valuedouble;
        rows_ok = rows_ok && sum == 3 &&
                  fabs(cJSON_GetArrayItem(row, k)->valuedouble / 3 - pk->valuedouble) < 1e-6;
    }
    EXPECT(rows_ok, "confusion: %s", out ? out : "");
    // one digit a sample: no pair figure; the test images beside them (never conditional)
    const cJSON *dq = cJSON_GetObjectItem(j, "data_quality");
    const cJSON *digits = cJSON_GetObjectItem(q, "digits"), *dn = cJSON_GetObjectItem(dq, "samples");
    EXPECT(cJSON_IsNumber(digits) && digits->valuedouble == 1 &&
               cJSON_IsNull(cJSON_GetObjectItem(q, "both_legible")) && cJSON_IsNumber(dn) &&
               dn->valuedouble == 30 && cJSON_IsNull(cJSON_GetObjectItem(dq, "match")),
           "one digit a sample, data_quality: %s", out ? out : "");
    cJSON_Delete(j);
    // draw report shows them from RUN/eval.json, and says the bound is conditional
    char evalpath[600];
    snprintf(evalpath, sizeof evalpath, "%s/cond/eval.json", tmpdir);
    FILE *fp = fopen(evalpath, "w");
    if (fp) fputs(out ? out : "", fp), fclose(fp);
    free(out);
    rc = run_draw("report %s/cond", tmpdir);
    char *page = read_text("cond/report.html");
    EXPECT(rc == 0 && page && strstr(page, "data-key=\"legible\"") && strstr(page, "data-key=\"match_class\"") &&
               strstr(page, "data-key=\"confusion\"") &&
               strstr(page, "-log p(x | label)") && strstr(page, "given the label") &&
               strstr(page, "class-conditional: the label (10 classes)"),
           "report: exit %d, %s", rc, page ? "the page lacks the sample quality" : "no page");
    free(page);
    // the text names the classes a sample is taken for, from the matrix
    rc = run_draw("eval --model %s/cond/model.safetensors --data mnist --split test --limit 16 "
                  "--sample-quality %s/cnn28/model.safetensors --quality-samples 30", tmpdir, tmpdir);
    out = read_text("stdout.txt");
    EXPECT(rc == 0 && out && strstr(out, "labelled as the class asked for") &&
               (strstr(out, "100.0%") || strstr(out, "taken for another class (asked: predicted):")),
           "eval --sample-quality text: %s", out ? out : "");
    free(out);
    // an unconditional model: no match
    rc = run_draw("eval --model %s/uncond/model.safetensors --data mnist --split test --limit 16 "
                  "--sample-quality %s/cnn28/model.safetensors --quality-samples 20 --json", tmpdir, tmpdir);
    out = read_text("stdout.txt");
    j = cJSON_Parse(out ? out : "");
    q = cJSON_GetObjectItem(j, "sample_quality");
    EXPECT(rc == 0 && cJSON_IsNull(cJSON_GetObjectItem(q, "match")) &&
               cJSON_GetArraySize(cJSON_GetObjectItem(q, "confusion")) == 0 &&
               cJSON_IsFalse(cJSON_GetObjectItem(q, "conditional")), "unconditional: %s", out ? out : "");
    // the intervals: the legible share inside its Wilson interval, the entropy's standard
    // error; temperature 1 unless asked
    const cJSON *lo = cJSON_GetObjectItem(q, "legible_low95"), *hi = cJSON_GetObjectItem(q, "legible_high95");
    leg = cJSON_GetObjectItem(q, "legible");
    EXPECT(cJSON_IsNumber(lo) && cJSON_IsNumber(hi) && cJSON_IsNumber(leg) && lo->valuedouble <= leg->valuedouble &&
               leg->valuedouble <= hi->valuedouble && hi->valuedouble - lo->valuedouble > 0.05 &&
               cJSON_IsNumber(cJSON_GetObjectItem(q, "entropy_se")) &&
               cJSON_GetObjectItem(q, "temperature")->valuedouble == 1.0, "intervals: %s", out ? out : "");
    cJSON_Delete(j);
    free(out);
    // --quality-temperature 0: z at the prior's mean, every sample the same image, so one
    // class takes all (entropy 0); stated in the text; --quality-illegible writes the grid
    rc = run_draw("eval --model %s/uncond/model.safetensors --data mnist --split test --limit 16 "
                  "--sample-quality %s/cnn28/model.safetensors --quality-samples 20 --quality-temperature 0 --json",
                  tmpdir, tmpdir);
    out = read_text("stdout.txt");
    j = cJSON_Parse(out ? out : "");
    q = cJSON_GetObjectItem(j, "sample_quality");
    EXPECT(rc == 0 && cJSON_GetObjectItem(q, "temperature")->valuedouble == 0.0 &&
               cJSON_GetObjectItem(q, "entropy")->valuedouble == 0.0 &&
               cJSON_GetObjectItem(q, "entropy_se")->valuedouble == 0.0, "temperature 0: %s", out ? out : "");
    cJSON_Delete(j);
    free(out);
    rc = run_draw("eval --model %s/uncond/model.safetensors --data mnist --split test --limit 16 "
                  "--sample-quality %s/cnn28/model.safetensors --quality-samples 20 --quality-temperature 0.5 "
                  "--quality-illegible %s/illegible.png", tmpdir, tmpdir, tmpdir);
    out = read_text("stdout.txt");
    char *err = read_text("stderr.txt");
    // a 3-step judge finds nearly nothing legible: the grid is there and listed
    EXPECT(rc == 0 && out && strstr(out, "at temperature 0.5 (not the paper's 1)") &&
               (exists("illegible.png") ? err && strstr(err, "not legible (top class, probability):")
                                        : err && strstr(err, "no sample was illegible")),
           "--quality-illegible: %s %s", out ? out : "", err ? err : "");
    free(out), free(err);
    // --quality-of data and reconstructions: the 16 test images (or their reconstructions)
    // judged in place of samples, said in the JSON; the same 16 images beside the
    // reconstructions (data_quality), none beside the data (they are the data); noise: 16
    // noise images as dense as the 16 test images, none beside
    for (int k = 0; k < 3; k++) {
        const char *of_name = k == 2 ? "noise" : k ? "reconstructions" : "data";
        rc = run_draw("eval --model %s/uncond/model.safetensors --data mnist --split test --limit 16 "
                      "--sample-quality %s/cnn28/model.safetensors --quality-of %s --json", tmpdir, tmpdir, of_name);
        out = read_text("stdout.txt");
        j = cJSON_Parse(out ? out : "");
        q = cJSON_GetObjectItem(j, "sample_quality");
        const cJSON *of = cJSON_GetObjectItem(q, "of");
        const cJSON *beside = cJSON_GetObjectItem(j, "data_quality");
        EXPECT(rc == 0 && cJSON_GetObjectItem(q, "samples")->valuedouble == 16 && cJSON_IsString(of) &&
                   !strcmp(of->valuestring, of_name), "--quality-of %s: %s", of_name, out ? out : "");
        EXPECT(k == 1 ? cJSON_IsObject(beside) && cJSON_GetObjectItem(beside, "samples")->valuedouble == 16 &&
                       !strcmp(cJSON_GetObjectItem(beside, "of")->valuestring, "data")
                 : beside == NULL,
               "--quality-of %s, data_quality: %s", of_name, out ? out : "");
        cJSON_Delete(j);
        free(out);
    }
    char um[600], cnn[600];
    snprintf(um, sizeof um, "%s/uncond/model.safetensors", tmpdir);
    snprintf(cnn, sizeof cnn, "%s/cnn28/model.safetensors", tmpdir);
    const char *tline = one_line_failure("draw eval: --quality-temperature", "eval --model %s --limit 16 "
                                         "--quality-temperature 0.5%s", um, "");
    EXPECT(strstr(tline, "--sample-quality"), "%s", tline);
    tline = one_line_failure("draw", "eval --model %s --limit 16 --sample-quality %s "
                             "--quality-temperature -1", um, cnn);
    EXPECT(strstr(tline, "quality-temperature"), "%s", tline);
    tline = one_line_failure("draw eval: --quality-of data", "eval --model %s --limit 16 --sample-quality %s "
                             "--quality-of data --quality-temperature 0.5", um, cnn);
    EXPECT(strstr(tline, "no --quality-temperature"), "%s", tline);
    // 4 samples judged by a 3-step CNN: not legible, so the grid is due and cannot be written
    tline = one_line_failure("draw eval: ", "eval --model %s --limit 16 --quality-samples 4 --sample-quality %s "
                             "--quality-illegible no/such/dir/x.png", um, cnn);
    EXPECT(strstr(tline, "no/such/dir/x.png"), "%s", tline);
    char model[600];
    snprintf(model, sizeof model, "%s/cond/model.safetensors", tmpdir);
    const char *line = one_line_failure("draw eval: ", "eval --model %s --limit 16 --sample-quality %s", model, model);
    EXPECT(strstr(line, "not a classifier checkpoint"), "%s", line);
    rc = run_draw("classify train --model cnn --steps 1 --batch 8 --valid-images 8 --out %s/cnn100", tmpdir);
    EXPECT(rc == 0, "classify train (100x100) exited %d", rc);
    char cnn100[600];
    snprintf(cnn100, sizeof cnn100, "%s/cnn100/model.safetensors", tmpdir);
    line = one_line_failure("draw eval: ", "eval --model %s --limit 16 --sample-quality %s", model, cnn100);
    EXPECT(strstr(line, "100x100") && strstr(line, "--size 28"), "%s", line);
}

static void test_bad_input_one_line(void) {
    char buf[1024];
    expect_one_line_failure("");
    expect_one_line_failure("paint");
    expect_one_line_failure("train --T abc --out x");
    expect_one_line_failure("train --bogus 1");
    expect_one_line_failure("train --lr -1 --out x");
    expect_one_line_failure("train --data no/such/file-images.idx --out x");
    expect_one_line_failure("eval --model no/such/model.safetensors");
    expect_one_line_failure("eval");
    expect_one_line_failure("generate --model no/such/model.safetensors --out x");
    expect_one_line_failure("eval --split nope --model x");
    // A truncated checkpoint.
    char path[600];
    snprintf(path, sizeof path, "%s/bad.safetensors", tmpdir);
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite("\x40\0\0\0\0\0\0\0{\"a\":", 1, 13, f);
        fclose(f);
    }
    snprintf(buf, sizeof buf, "eval --model %s", path);
    expect_one_line_failure(buf);
    // --help succeeds.
    EXPECT(run_draw("train --help") == 0, "train --help failed");
    EXPECT(run_draw("--help") == 0, "--help failed");
}

int main(void) {
    if (scratch_open(&sc, "test_cli_draw", "draw")) {
        printf("FAIL setup: mkdtemp\n");
        return 1;
    }
    tmpdir = sc.dir;
    RUN(test_train_writes_outputs);
    RUN(test_eval_json);
    RUN(test_eval_standard_error);
    RUN(test_generate_frames);
    RUN(test_generate_removes_stale_frames);
    RUN(test_reconstruct_frames);
    RUN(test_resume_bit_identical);
    RUN(test_bad_input_one_line);
    RUN(test_refuses_to_overwrite_a_run);
    RUN(test_resume_checks_flags);
    RUN(test_resume_where_the_data_moved);
    RUN(test_weight_average);
    RUN(test_peepholes);
    RUN(test_grid_larger_than_images);
    RUN(test_unused_flags_warned);
    RUN(test_threads_default_to_affinity);
    RUN(test_minutes_progress_counts_steps);
    RUN(test_conditional);
    RUN(test_sample_quality);
    int rc = test_summary();
    if (rc == 0) scratch_remove(tmpdir);
    return rc;
}
