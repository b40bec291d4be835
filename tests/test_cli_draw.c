// End-to-end tests of bin/draw (found in $ATTEND_BIN, default "bin") on real MNIST
// (data/mnist, fetched by `make data`): train a tiny model for a few steps, evaluate
// with --json, generate and reconstruct frames, resume bit for bit, and refuse bad
// input with one line on stderr and a non-zero exit.
#include <cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/safetensors.h"
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

static int exists(const char *fmt, ...) {
    char path[1200], rel[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rel, sizeof rel, fmt, ap);
    va_end(ap);
    snprintf(path, sizeof path, "%s/%s", tmpdir, rel);
    return file_exists(path);
}

static int trained;  // the shared model of later tests exists

static void test_train_writes_outputs(void) {
    int rc = run_draw("train " TINY " --steps 6 --out %s/run --json", tmpdir);
    char *err = read_text("stderr.txt");
    EXPECT(rc == 0, "train exited %d: %s", rc, err ? err : "");
    free(err);
    EXPECT(exists("run/model.safetensors"), "no model.safetensors");
    EXPECT(exists("run/loss.png"), "no loss.png");
    char *log = read_text("run/log.csv");
    EXPECT(log && strncmp(log, "step,train_bound,valid_bound,seconds\n", 37) == 0, "log.csv header");
    EXPECT(scratch_count_lines(log) == 7, "log.csv has %d lines, expected 1 + 6",
           scratch_count_lines(log));
    // Step 6 validated: its row has a value in every column.
    const char *last = log ? strstr(log, "\n6,") : NULL;
    EXPECT(last && !strstr(last, ",,"), "no complete row for step 6");
    free(log);
    char *out = read_text("stdout.txt");
    cJSON *j = cJSON_Parse(out ? out : "");
    EXPECT(j != NULL, "train --json printed no JSON: %s", out ? out : "");
    cJSON *step = cJSON_GetObjectItem(j, "steps"), *ips = cJSON_GetObjectItem(j, "images_per_s");
    EXPECT(cJSON_IsNumber(step) && step->valuedouble == 6, "steps");
    EXPECT(cJSON_IsNumber(cJSON_GetObjectItem(j, "final_loss")), "final_loss");
    EXPECT(cJSON_IsNumber(ips) && ips->valuedouble > 0, "images_per_s");
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
    const char *keys[] = {"nll_bound", "recon", "kl", "images", "nll_iw"};
    double v[5] = {0};
    for (int i = 0; i < 5; i++) {
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
    cJSON_Delete(j);
    free(out);
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

// Each bad invocation must exit non-zero with exactly one line on stderr.
static void expect_one_line_failure(const char *args) {
    int rc = run_draw("%s", args);
    char *err = read_text("stderr.txt");
    EXPECT(rc != 0, "'draw %s' exited 0", args);
    EXPECT(scratch_count_lines(err) == 1, "'draw %s' wrote %d lines on stderr: %s", args,
           scratch_count_lines(err), err ? err : "");
    free(err);
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
    RUN(test_generate_frames);
    RUN(test_reconstruct_frames);
    RUN(test_resume_bit_identical);
    RUN(test_bad_input_one_line);
    int rc = test_summary();
    if (rc == 0) scratch_remove(tmpdir);
    return rc;
}
