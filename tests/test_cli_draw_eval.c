// End-to-end tests of `draw eval --per-image FILE` (cli/draw_eval_record.h) on real MNIST:
// the file holds each image's figures, averaging to the printed bound; an evaluation cut off
// after a whole batch goes on from the file to the uninterrupted one's figures and file; a
// finished file is read, not computed again; a file of another evaluation, a damaged one and
// a folder that cannot be written are refused with one line, the file untouched.
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/eval_record.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"

static Scratch sc;  // BIN/draw and its scratch folder
static const char *tmpdir;
static int trained;

// 48 images in batches of 16, 3 samples each: three whole batches.
#define EVAL "eval --model %s/run/model.safetensors --data mnist --split test --limit 48 " \
             "--batch 16 --samples 3 --threads 1 --json --per-image %s/%s"
#define HEADER_LINES 9  // magic, six identity lines, done, the columns' names

// stdout.txt up to its "seconds" (the rest is the same for the same figures).
static char *figures_printed(void) {
    char *out = scratch_read(&sc, "stdout.txt", NULL);
    char *t = out ? strstr(out, "\"seconds\"") : NULL;
    if (t) *t = 0;
    return out;
}

// A figure of figures_printed's text (its JSON closed again).
static double json_number(const char *printed, const char *key) {
    char text[4096];
    snprintf(text, sizeof text, "%s\"seconds\": 0}", printed ? printed : "");
    cJSON *j = cJSON_Parse(text);
    cJSON *it = cJSON_GetObjectItem(j, key);
    double v = cJSON_IsNumber(it) ? it->valuedouble : NAN;
    cJSON_Delete(j);
    return v;
}

// Writes DIR/NAME as a kill leaves it: the first `rows` images of text, "done DONE".
static void write_cut(const char *text, const char *name, int done, int rows) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    EXPECT(eval_record_cut(text, path, done, rows) == 0, "cannot write %s", path);
}

static void test_train(void) {
    int rc = scratch_run(&sc, "train --data mnist --T 4 --read 2 --write 3 --hidden 24 --z 6 "
                              "--batch 16 --steps 3 --valid-images 32 --out %s/run", tmpdir);
    EXPECT(rc == 0, "train exited %d", rc);
    trained = rc == 0;
}

static char *whole, *whole_file;  // the uninterrupted evaluation's output and file

static void test_file_holds_each_image(void) {
    if (!trained) return test_fail_(__FILE__, __LINE__, "no model (train failed)");
    EXPECT(scratch_run(&sc, EVAL, tmpdir, tmpdir, "whole.txt") == 0, "eval failed");
    whole = figures_printed();
    whole_file = scratch_read(&sc, "whole.txt", NULL);
    EXPECT(whole_file && strncmp(whole_file, "draw eval per-image figures\n", 28) == 0,
           "the file's first line: %.40s", whole_file ? whole_file : "(none)");
    EXPECT(whole_file && strstr(whole_file, "\nimages 48\n") && strstr(whole_file, "\nsamples 3\n") &&
           strstr(whole_file, "\nbatch 16\n") && strstr(whole_file, "\ndone 48\n"),
           "header: %.300s", whole_file ? whole_file : "");
    EXPECT(scratch_count_lines(whole_file) == HEADER_LINES + 48, "%d lines",
           scratch_count_lines(whole_file));
    // The rows average to the printed figures: reconstruction, KL and IW.
    const char *row = whole_file ? strstr(whole_file, "kl iw\n") : NULL;
    double sum[3] = {0};
    for (int i = 0; row && i < 48; i++) {
        int index;
        double r, k, w;
        row = strchr(row, '\n') + 1;
        EXPECT(sscanf(row, "%d %lf %lf %lf", &index, &r, &k, &w) == 4 && index == i, "row %d", i);
        sum[0] += r, sum[1] += k, sum[2] += w;
    }
    EXPECT_NEAR(sum[0] / 48, json_number(whole, "recon"), 1e-6, 1e-6);
    EXPECT_NEAR(sum[1] / 48, json_number(whole, "kl"), 1e-6, 1e-6);
    EXPECT_NEAR(sum[2] / 48, json_number(whole, "nll_iw"), 1e-6, 1e-6);
}

// Cut off after its first batch (the file as a kill then leaves it): the next run evaluates
// the last two batches only and ends with the uninterrupted figures and file, bit for bit.
static void test_goes_on_after_a_cut(void) {
    if (!whole_file) return test_fail_(__FILE__, __LINE__, "no whole evaluation");
    write_cut(whole_file, "cut.txt", 16, 16);
    EXPECT(scratch_run(&sc, EVAL, tmpdir, tmpdir, "cut.txt") == 0, "eval failed");
    char *out = figures_printed(), *err = scratch_read(&sc, "stderr.txt", NULL);
    char *file = scratch_read(&sc, "cut.txt", NULL);
    EXPECT(out && whole && strcmp(out, whole) == 0, "\n%s\nvs the whole run's\n%s",
           out ? out : "", whole ? whole : "");
    EXPECT(file && strcmp(file, whole_file) == 0, "the file differs from the whole run's");
    EXPECT(err && strstr(err, "16 of 48 images done before, going on from there"), "%s",
           err ? err : "");
    EXPECT(err && strstr(err, "eval: 96/96 samples done"), "progress: %s", err ? err : "");  // 32 x 3
    free(out), free(err), free(file);
}

// A finished file is read: changing one image's reconstruction by +48 nats moves the bound
// by 1 and nothing is evaluated.
static void test_finished_file_is_read(void) {
    if (!whole_file) return test_fail_(__FILE__, __LINE__, "no whole evaluation");
    const char *columns_end = "kl iw\n0 ", *first = strstr(whole_file, columns_end);
    const char *row = first ? first + strlen(columns_end) : NULL;  // image 0's reconstruction
    const char *rest = row ? strchr(row, ' ') : NULL;
    if (!rest) return test_fail_(__FILE__, __LINE__, "no first image's row:\n%s", whole_file);
    size_t size = strlen(whole_file) + 64;
    char path[512], *edited = malloc(size);
    if (!edited) return test_fail_(__FILE__, __LINE__, "out of memory");
    snprintf(path, sizeof path, "%s/read.txt", tmpdir);
    snprintf(edited, size, "%.*s%.17g%s", (int)(row - whole_file), whole_file,
             strtod(row, NULL) + 48.0, rest);
    EXPECT(scratch_write_text(path, edited) == 0, "cannot write %s", path);
    free(edited);
    EXPECT(scratch_run(&sc, EVAL, tmpdir, tmpdir, "read.txt") == 0, "eval failed");
    char *out = figures_printed(), *err = scratch_read(&sc, "stderr.txt", NULL);
    EXPECT_NEAR(json_number(out, "nll_bound"), json_number(whole, "nll_bound") + 1.0, 1e-5, 0);
    EXPECT(err && strstr(err, "48 of 48 images done before\n") && !strstr(err, "samples"),
           "%s", err ? err : "");
    free(out), free(err);
}

// Refused with one line naming the file, which stays as it was.
static void expect_refused(const char *name, const char *flags, const char *reason) {
    char *before = scratch_read(&sc, name, NULL);
    int rc = scratch_run(&sc, EVAL " %s", tmpdir, tmpdir, name, flags);
    char *err = scratch_read(&sc, "stderr.txt", NULL), *after = scratch_read(&sc, name, NULL);
    EXPECT(rc == 1, "%s %s: exit %d", name, flags, rc);
    EXPECT(err && scratch_count_lines(err) == 1 && strstr(err, name) && strstr(err, reason),
           "%s %s: %s", name, flags, err ? err : "");
    EXPECT(before && after && strcmp(before, after) == 0, "%s changed", name);
    free(before), free(err), free(after);
}

static void test_refusals(void) {
    if (!whole_file) return test_fail_(__FILE__, __LINE__, "no whole evaluation");
    expect_refused("whole.txt", "--samples 4", "made by another evaluation (samples 3, this one's 4)");
    expect_refused("whole.txt", "--seed 9", "made by another evaluation (seed 1, this one's 9)");
    write_cut(whole_file, "ragged.txt", 20, 20);  // not whole batches
    expect_refused("ragged.txt", "", "done 20: not a count of whole batches of 16 up to 48");
    write_cut(whole_file, "short.txt", 32, 31);
    expect_refused("short.txt", "", "line 41: expected image 31's figures");
    write_cut(whole_file, "long.txt", 16, 17);
    expect_refused("long.txt", "", "line 26: more than the 16 images it says are done");
    char path[512];
    snprintf(path, sizeof path, "%s/other.txt", tmpdir);
    scratch_write_text(path, "step,bound\n1,2\n");
    expect_refused("other.txt", "", "not a draw eval --per-image file");
    int rc = scratch_run(&sc, EVAL, tmpdir, tmpdir, "no/such/folder.txt");
    char *err = scratch_read(&sc, "stderr.txt", NULL);
    EXPECT(rc == 1 && err && scratch_count_lines(err) == 1 && strstr(err, "no/such/folder.txt"),
           "a folder that does not exist: exit %d, %s", rc, err ? err : "");
    free(err);
}

int main(void) {
    if (scratch_open(&sc, "test_cli_draw_eval", "draw")) {
        printf("FAIL setup: mkdtemp\n");
        return 1;
    }
    tmpdir = sc.dir;
    RUN(test_train);
    RUN(test_file_holds_each_image);
    RUN(test_goes_on_after_a_cut);
    RUN(test_finished_file_is_read);
    RUN(test_refusals);
    free(whole), free(whole_file);
    int rc = test_summary();
    if (rc == 0) scratch_remove(tmpdir);
    return rc;
}
