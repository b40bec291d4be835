// End-to-end tests of `draw classify` (bin/draw in $ATTEND_BIN) on real MNIST under data/:
// train a tiny glimpse classifier for a few steps (log.csv, loss.png, --json), evaluate
// with --json, the glimpse pictures, the PNG export, resume bit for bit, refusing a folder
// holding a run and model flags that differ on --resume, and bad input refused with one
// line on stderr and a non-zero exit.
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/binomial.h"
#include "core/fileio.h"
#include "tests/support/checkpoint.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"

static Scratch sc;
static const char *tmpdir;

#define TINY "--T 2 --read 4 --hidden 8 --batch 8 --valid-every 3 --valid-images 16 --log-every 1"
#define run_draw(...) scratch_run(&sc, __VA_ARGS__)

static char *read_text(const char *name) { return scratch_read(&sc, name, NULL); }

// Whether DIR/REL exists (REL from a format).
#define exists(...) scratch_exists(&sc, __VA_ARGS__)

// The last run failed with exactly one line on stderr that contains each of the strings.
static void expect_one_line(int rc, const char *what, const char *a, const char *b) {
    char *err = read_text("stderr.txt");
    EXPECT(rc != 0, "%s: exit 0", what);
    EXPECT(err && scratch_count_lines(err) == 1 && strstr(err, a) && (!b || strstr(err, b)),
           "%s: stderr '%s' (want one line with '%s'%s%s)", what, err ? err : "", a, b ? " and " : "",
           b ? b : "");
    free(err);
}

static int trained;

static void test_train_writes_outputs(void) {
    int rc = run_draw("classify train " TINY " --steps 6 --out %s/run --json", tmpdir);
    char *err = read_text("stderr.txt");
    EXPECT(rc == 0, "train exited %d: %s", rc, err ? err : "");
    EXPECT(err && strstr(err, "2 glimpses of 4x4") && strstr(err, "8 fragments of 8x8"), "header: %s", err ? err : "");
    // The summary says which time is which: wall time, and images/s of step time (the
    // JSON's images_per_s).
    const char *summary = err ? strstr(err, "draw classify train: 6 steps in ") : NULL;
    const char *rate = summary ? strstr(summary, " s wall; ") : NULL;
    double summary_ips = rate ? atof(rate + strlen(" s wall; ")) : -1;
    EXPECT(rate && strstr(rate, " images/s of step time; valid error "), "summary: %s", err ? err : "");
    free(err);
    EXPECT(exists("run/model.safetensors") && exists("run/loss.png") && exists("run/run.json"), "missing outputs");
    char *log = read_text("run/log.csv");
    EXPECT(log && strncmp(log, "step,train_loss,train_error,valid_error,grad_norm,grad_norm_max,seconds\n", 72) == 0, "log.csv header");
    EXPECT(scratch_count_lines(log) == 7, "log.csv has %d lines, expected 1 + 6", scratch_count_lines(log));
    const char *row6 = log ? strstr(log, "\n6,") : NULL;
    EXPECT(row6 && !strstr(row6, ",,"), "no complete row for step 6");
    free(log);
    char *out = read_text("stdout.txt");
    cJSON *j = cJSON_Parse(out ? out : "");
    EXPECT(j != NULL, "no JSON: %s", out ? out : "");
    cJSON *steps = cJSON_GetObjectItem(j, "steps"), *ve = cJSON_GetObjectItem(j, "valid_error");
    EXPECT(cJSON_IsNumber(steps) && steps->valuedouble == 6, "steps");
    EXPECT(cJSON_IsNumber(ve) && ve->valuedouble >= 0 && ve->valuedouble <= 1, "valid_error");
    EXPECT(cJSON_IsNumber(cJSON_GetObjectItem(j, "final_loss")), "final_loss");
    const cJSON *ips = cJSON_GetObjectItem(j, "images_per_s");
    EXPECT(cJSON_IsNumber(ips) && ips->valuedouble > 0 && fabs(summary_ips - ips->valuedouble) <= 0.051,
           "the summary's %g images/s, the JSON's %g", summary_ips, cJSON_IsNumber(ips) ? ips->valuedouble : NAN);
    cJSON_Delete(j);
    free(out);
    trained = rc == 0;
}

static void test_eval_json(void) {
    if (!trained) return test_fail_(__FILE__, __LINE__, "no model (train failed)");
    int rc = run_draw("classify eval --model %s/run/model.safetensors --limit 50 --json", tmpdir);
    char *out = read_text("stdout.txt");
    EXPECT(rc == 0, "eval exited %d", rc);
    cJSON *j = cJSON_Parse(out ? out : "");
    cJSON *e = cJSON_GetObjectItem(j, "error"), *n = cJSON_GetObjectItem(j, "images"),
          *c = cJSON_GetObjectItem(j, "correct");
    EXPECT(cJSON_IsNumber(e) && cJSON_IsNumber(n) && n->valuedouble == 50 && cJSON_IsNumber(c) &&
               fabs(e->valuedouble - (1.0 - c->valuedouble / 50.0)) < 1e-6,
           "eval JSON: %s", out ? out : "");
    // The 95 % interval is the Wilson interval of (images - correct) of images.
    cJSON *lo = cJSON_GetObjectItem(j, "error_low95"), *hi = cJSON_GetObjectItem(j, "error_high95");
    if (cJSON_IsNumber(c)) {
        BinomialInterval ci = binomial_wilson95(50 - (long)c->valuedouble, 50);
        EXPECT(cJSON_IsNumber(lo) && cJSON_IsNumber(hi) && fabs(lo->valuedouble - ci.low) < 2e-6 &&
                   fabs(hi->valuedouble - ci.high) < 2e-6 && lo->valuedouble <= e->valuedouble &&
                   e->valuedouble <= hi->valuedouble,
               "interval: %s", out ? out : "");
    }
    cJSON *split = cJSON_GetObjectItem(j, "split");
    EXPECT(cJSON_IsString(split) && strcmp(split->valuestring, "test") == 0, "split");
    cJSON_Delete(j);
    free(out);
    // Evaluation is a pure function of the model: twice the same.
    char *first = NULL;
    for (int k = 0; k < 2; k++) {
        run_draw("classify eval --model %s/run/model.safetensors --split valid --limit 20", tmpdir);
        char *o = read_text("stdout.txt");
        if (k == 0) first = o;
        else {
            EXPECT(first && o && strcmp(first, o) == 0 && strstr(o, "error"), "eval differs: %s / %s", first, o);
            free(o);
        }
    }
    free(first);
}

static void test_show_and_export(void) {
    if (!trained) return test_fail_(__FILE__, __LINE__, "no model (train failed)");
    int rc = run_draw("classify show --model %s/run/model.safetensors --count 2 --out %s/show", tmpdir, tmpdir);
    EXPECT(rc == 0 && exists("show/glimpses.png") && exists("show/patches.png"), "show: %d", rc);
    // --errors: of the first 64 test images the model of 6 steps gets some right; the 64
    // that --errors picks are all wrong.
    rc = run_draw("classify show --model %s/run/model.safetensors --count 64 --out %s/first", tmpdir, tmpdir);
    char *err = read_text("stderr.txt");
    const char *at = err ? strstr(err, "64 test images (") : NULL;
    int right = at ? atoi(at + strlen("64 test images (")) : -1;
    EXPECT(rc == 0 && right > 0, "show --count 64: %d, %s (the check below needs some right)", rc,
           err ? err : "");
    free(err);
    rc = run_draw("classify show --model %s/run/model.safetensors --errors --count 64 --out %s/errors",
                  tmpdir, tmpdir);
    err = read_text("stderr.txt");
    EXPECT(rc == 0 && exists("errors/glimpses.png") && err &&
               strstr(err, "64 test images (0 right), the first it gets wrong"),
           "show --errors: %d, %s", rc, err ? err : "");
    free(err);
    // --first past the test split's end is refused naming the split's size, before any
    // folder is made; near the end fewer images are shown than --count asks.
    rc = run_draw("classify show --model %s/run/model.safetensors --errors --first 1000000 --out %s/far",
                  tmpdir, tmpdir);
    expect_one_line(rc, "--errors --first 1000000", "--first 1000000: the test split of mnist holds 10000 images",
                    "--first 0 to 9999");
    EXPECT(!exists("far"), "show --first 1000000 made its folder");
    rc = run_draw("classify show --model %s/run/model.safetensors --first 10000 --out %s/far", tmpdir, tmpdir);
    expect_one_line(rc, "--first 10000", "holds 10000 images", NULL);
    rc = run_draw("classify show --model %s/run/model.safetensors --first 9998 --count 8 --out %s/end",
                  tmpdir, tmpdir);
    err = read_text("stderr.txt");
    EXPECT(rc == 0 && exists("end/glimpses.png") && err && strstr(err, "show: 2 test images ("),
           "show --first 9998 --count 8: %d, %s", rc, err ? err : "");
    free(err);
    rc = run_draw("classify export --count 3 --out %s/pngs", tmpdir);
    EXPECT(rc == 0 && exists("pngs/00000.png") && exists("pngs/00002.png") && !exists("pngs/00003.png"),
           "export: %d", rc);
    char *labels = read_text("pngs/labels.txt");
    EXPECT(labels && scratch_count_lines(labels) == 3 && strncmp(labels, "00000.png ", 10) == 0,
           "labels.txt: %s", labels ? labels : "");
    free(labels);
}

static void test_resume_bit_identical(void) {
    int rc = run_draw("classify train " TINY " --steps 7 --seed 5 --out %s/full", tmpdir);
    EXPECT(rc == 0, "uninterrupted run exited %d", rc);
    rc = run_draw("classify train " TINY " --steps 3 --seed 5 --out %s/part", tmpdir);
    EXPECT(rc == 0, "first part exited %d", rc);
    rc = run_draw("classify train --steps 7 --resume --valid-every 3 --valid-images 16 --out %s/part", tmpdir);
    EXPECT(rc == 0, "resumed run exited %d", rc);
    char a[600], b[600], c[600], why[700] = "";
    snprintf(a, sizeof a, "%s/full/model.safetensors", tmpdir);
    snprintf(b, sizeof b, "%s/part/model.safetensors", tmpdir);
    EXPECT(checkpoints_identical(a, b, "train.step", why, sizeof why), "resume differs: %s", why);
    // The check can fail: another seed gives other weights.
    rc = run_draw("classify train " TINY " --steps 7 --seed 6 --out %s/other", tmpdir);
    snprintf(c, sizeof c, "%s/other/model.safetensors", tmpdir);
    EXPECT(rc == 0 && !checkpoints_identical(a, c, NULL, why, sizeof why), "seed 6 gives seed 5's weights");
    // Resuming a finished run does no step, and its JSON has no NaN.
    rc = run_draw("classify train --steps 7 --resume --json --out %s/part", tmpdir);
    char *out = read_text("stdout.txt");
    EXPECT(rc == 0 && out && strstr(out, "\"steps\": 7") && strstr(out, "\"valid_error\": null") &&
               !strstr(out, "nan"),
           "finished run: %s", out ? out : "");
    free(out);
    // A new --lr on --resume is named with the checkpoint's.
    rc = run_draw("classify train --steps 8 --resume --lr 0.002 --valid-every 3 --valid-images 16 --out %s/part",
                  tmpdir);
    char *err = read_text("stderr.txt");
    EXPECT(rc == 0 && err && strstr(err, "draw classify train: resuming with --lr 0.002 (checkpoint: "),
           "resume with --lr: %d, %s", rc, err ? err : "");
    free(err);
}

static void test_refusals(void) {
    if (!trained) return test_fail_(__FILE__, __LINE__, "no model (train failed)");
    // A folder holding a run.
    int rc = run_draw("classify train " TINY " --steps 2 --out %s/run", tmpdir);
    expect_one_line(rc, "new run over a run", "already holds a run", "--force");
    // Model flags differing on --resume are named with both values.
    rc = run_draw("classify train --steps 8 --resume --T 3 --out %s/run", tmpdir);
    expect_one_line(rc, "--resume --T 3", "--T 3 (checkpoint: 2)", NULL);
    rc = run_draw("classify train --steps 8 --resume --no-attention --out %s/run", tmpdir);
    expect_one_line(rc, "--resume --no-attention", "no-attention", NULL);
    // A new --lr is said once the run is set up: a refusal after it (no digits under
    // --data-root) stays the only line.
    rc = run_draw("classify train --steps 8 --resume --lr 0.002 --data-root %s/nowhere --out %s/run",
                  tmpdir, tmpdir);
    expect_one_line(rc, "--resume --lr with no data", "nowhere", NULL);
}

// The convolutional baseline trains, evaluates and resumes through the same command; show
// refuses it (it takes no glimpses); --resume refuses another --model.
static void test_cnn_baseline(void) {
    int rc = run_draw("classify train --model cnn --batch 4 --steps 2 --valid-every 2 --valid-images 8 --out %s/cnn --json", tmpdir);
    char *err = read_text("stderr.txt");
    EXPECT(rc == 0 && err && strstr(err, "convolutional baseline"), "cnn train: %d %s", rc, err ? err : "");
    free(err);
    rc = run_draw("classify eval --model %s/cnn/model.safetensors --limit 8 --json", tmpdir);
    char *out = read_text("stdout.txt");
    EXPECT(rc == 0 && out && strstr(out, "\"model\": \"cnn\""), "cnn eval: %s", out ? out : "");
    free(out);
    rc = run_draw("classify show --model %s/cnn/model.safetensors --out %s/cnnshow", tmpdir, tmpdir);
    expect_one_line(rc, "show of a cnn", "takes no glimpses", NULL);
    rc = run_draw("classify train --model glimpse --steps 4 --resume --out %s/cnn", tmpdir);
    expect_one_line(rc, "--resume --model glimpse", "--model glimpse (checkpoint: cnn)", NULL);
    rc = run_draw("classify train --steps 3 --resume --valid-every 3 --valid-images 8 --out %s/cnn", tmpdir);
    EXPECT(rc == 0, "cnn resume exited %d", rc);
}

// --resume keeps run.json's invocations of earlier runs of the same program only: a folder
// whose run.json another program wrote starts a new list (and reading it once read freed
// memory). Without a checkpoint, --resume starts from scratch. The command recorded is the
// one that ran, `draw classify train ...`.
static void test_run_record_of_another_program(void) {
    char path[1200];
    snprintf(path, sizeof path, "%s/foreign", tmpdir);
    EXPECT(make_dirs(path, NULL) == 0, "mkdir %s", path);
    snprintf(path, sizeof path, "%s/foreign/run.json", tmpdir);
    if (scratch_write_text(path, "{\"program\": \"caption\", \"invocations\": [{\"command\": \"caption train\"}]}\n"))
        return;
    int rc = run_draw("classify train " TINY " --steps 1 --resume --out %s/foreign", tmpdir);
    char *err = read_text("stderr.txt");
    EXPECT(rc == 0, "train exited %d: %s", rc, err ? err : "");
    free(err);
    char *text = read_text("foreign/run.json");
    cJSON *doc = cJSON_Parse(text ? text : "");
    const cJSON *prog = cJSON_GetObjectItemCaseSensitive(doc, "program");
    const cJSON *inv = cJSON_GetObjectItemCaseSensitive(doc, "invocations");
    const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(inv, 0), "command");
    EXPECT(cJSON_IsString(prog) && !strcmp(prog->valuestring, "draw classify") &&
               cJSON_GetArraySize(inv) == 1 && cJSON_IsString(cmd) &&
               !strncmp(cmd->valuestring, "draw classify train --T 2 ", 26),
           "run.json: %s", text ? text : "(none)");
    cJSON_Delete(doc);
    free(text);
    // A record that an older build wrote for a classify run (program "draw") is kept.
    if (scratch_write_text(path, "{\"program\": \"draw\", \"invocations\": [{\"command\": \"draw train --T 2\"}]}\n"))
        return;
    rc = run_draw("classify train " TINY " --steps 2 --resume --out %s/foreign", tmpdir);
    text = read_text("foreign/run.json");
    doc = cJSON_Parse(text ? text : "");
    inv = cJSON_GetObjectItemCaseSensitive(doc, "invocations");
    EXPECT(rc == 0 && cJSON_GetArraySize(inv) == 2, "older record: %d, %s", rc, text ? text : "(none)");
    cJSON_Delete(doc);
    free(text);
}

// Hard attention (REINFORCE, the RAM baseline): trains, resumes bit for bit (the learned
// reward baseline is a parameter like the others), evaluates at the policy's means; --resume refuses
// --hard on a soft model and another --loc-std on a hard one.
static void test_hard_attention(void) {
    int rc = run_draw("classify train " TINY " --hard --loc-std 0.3 --steps 6 --seed 3 --out %s/hardfull", tmpdir);
    char *err = read_text("stderr.txt");
    EXPECT(rc == 0 && err && strstr(err, "hard (REINFORCE)"), "hard train: %d %s", rc, err ? err : "");
    free(err);
    rc = run_draw("classify train " TINY " --hard --loc-std 0.3 --steps 2 --seed 3 --out %s/hardpart", tmpdir);
    EXPECT(rc == 0, "first part exited %d", rc);
    rc = run_draw("classify train --steps 6 --resume --valid-every 3 --valid-images 16 --out %s/hardpart", tmpdir);
    EXPECT(rc == 0, "resume exited %d", rc);
    char a[600], b[600], why[700] = "";
    snprintf(a, sizeof a, "%s/hardfull/model.safetensors", tmpdir);
    snprintf(b, sizeof b, "%s/hardpart/model.safetensors", tmpdir);
    EXPECT(checkpoints_identical(a, b, "train.step", why, sizeof why), "hard resume differs: %s", why);
    rc = run_draw("classify eval --model %s --limit 16 --json", a);
    char *out = read_text("stdout.txt");
    EXPECT(rc == 0 && out && strstr(out, "\"error\""), "hard eval: %s", out ? out : "");
    free(out);
    rc = run_draw("classify train --steps 8 --resume --loc-std 0.5 --out %s/hardfull", tmpdir);
    expect_one_line(rc, "--resume --loc-std 0.5", "--loc-std 0.5 (checkpoint: 0.3)", NULL);
    if (trained) {
        rc = run_draw("classify train --steps 8 --resume --hard --out %s/run", tmpdir);
        expect_one_line(rc, "--resume --hard on a soft model", "--hard", "checkpoint");
    }
    rc = run_draw("classify train --hard --no-attention --out %s/hardx", tmpdir);
    expect_one_line(rc, "--hard --no-attention", "hard attention needs attention", "--hard with --no-attention: ");
    rc = run_draw("classify train " TINY " --hard --scales 2 --steps 2 --out %s/hard2", tmpdir);
    EXPECT(rc == 0, "--scales 2 exited %d", rc);
    rc = run_draw("classify train --steps 4 --resume --scales 3 --out %s/hard2", tmpdir);
    expect_one_line(rc, "--resume --scales 3", "--scales 3 (checkpoint: 2)", NULL);
    // A hard checkpoint from before the retina (no glimpse.scales; renamed in place, the
    // header keeping its length) is refused in one line, not read as another model.
    snprintf(a, sizeof a, "%s/hard2/model.safetensors", tmpdir);
    FILE *f = fopen(a, "r+b");
    EXPECT(f != NULL, "open %s", a);
    if (f) {
        char head[65536];
        size_t n = fread(head, 1, sizeof head - 1, f);
        head[n] = 0;
        char *k = NULL;
        for (size_t i = 8; i + 14 <= n && !k; i++)
            if (memcmp(head + i, "glimpse.scales", 14) == 0) k = head + i;
        EXPECT(k != NULL, "no glimpse.scales in the header");
        if (k) {
            k[13] = 'Z';
            fseek(f, (long)(k - head), SEEK_SET);
            fwrite(k, 1, 14, f);
        }
        fclose(f);
        rc = run_draw("classify eval --model %s --limit 16", a);
        expect_one_line(rc, "a hard model from before the retina", "before the retina", "model.safetensors");
    }
}

// --hard --glimpse-net (RAM's glimpse network): trains, says so in its header, resumes bit
// for bit, evaluates; --resume refuses another --glimpse-net; without --hard it is warned
// of as having no effect.
static void test_hard_glimpse_net(void) {
    int rc = run_draw("classify train " TINY " --hard --glimpse-net 6 --steps 6 --seed 3 --out %s/gnfull", tmpdir);
    char *err = read_text("stderr.txt");
    EXPECT(rc == 0 && err && strstr(err, "glimpse network 6"), "glimpse net train: %d %s", rc, err ? err : "");
    free(err);
    rc = run_draw("classify train " TINY " --hard --glimpse-net 6 --steps 2 --seed 3 --out %s/gnpart", tmpdir);
    EXPECT(rc == 0, "first part exited %d", rc);
    rc = run_draw("classify train --steps 6 --resume --out %s/gnpart", tmpdir);
    EXPECT(rc == 0, "resume exited %d", rc);
    char a[600], b[600], why[700] = "";
    snprintf(a, sizeof a, "%s/gnfull/model.safetensors", tmpdir);
    snprintf(b, sizeof b, "%s/gnpart/model.safetensors", tmpdir);
    EXPECT(checkpoints_identical(a, b, "train.step", why, sizeof why), "glimpse net resume differs: %s", why);
    rc = run_draw("classify eval --model %s --limit 16 --json", a);
    char *out = read_text("stdout.txt");
    EXPECT(rc == 0 && out && strstr(out, "\"error\""), "glimpse net eval: %s", out ? out : "");
    free(out);
    rc = run_draw("classify train --steps 8 --resume --glimpse-net 7 --out %s/gnfull", tmpdir);
    expect_one_line(rc, "--resume --glimpse-net 7", "--glimpse-net 7 (checkpoint: 6)", NULL);
    rc = run_draw("classify train " TINY " --glimpse-net 6 --steps 1 --out %s/gnsoft", tmpdir);
    err = read_text("stderr.txt");
    EXPECT(rc == 0 && err && strstr(err, "--glimpse-net has no effect: only a --hard model has a glimpse network"),
           "--glimpse-net without --hard: %d %s", rc, err ? err : "");
    free(err);
}

// Whether the last run's stderr holds line as a whole line.
static int stderr_has_line(const char *line) {
    char *err = read_text("stderr.txt");
    size_t n = strlen(line);
    int found = 0;
    for (const char *p = err; p && *p && !found; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        found = !strncmp(p, line, n) && p[n] == '\n';
    free(err);
    return found;
}

// Issue 56: a flag given that the run does not use is warned of, one line per reason naming
// the flags (cli/args.h args_warn_unused), for a new run from its flags and on --resume from
// the checkpoint's model; flags the run uses are not named.
static void test_unused_flags_warned(void) {
    int rc = run_draw("classify train --model cnn --T 3 --hidden 4 --batch 4 --steps 1 --valid-every 1 "
                      "--valid-images 8 --out %s/cnnw", tmpdir);
    EXPECT(rc == 0 && stderr_has_line("draw classify train: --T, --hidden have no effect: a cnn model takes no glimpses"),
           "cnn with --T --hidden: exit %d", rc);
    rc = run_draw("classify train --resume --T 3 --steps 2 --valid-every 1 --valid-images 8 --out %s/cnnw", tmpdir);
    EXPECT(rc == 0 && stderr_has_line("draw classify train: --T has no effect: a cnn model takes no glimpses"),
           "--resume --T on a cnn: exit %d", rc);
    rc = run_draw("classify train " TINY " --loc-std 0.3 --scales 2 --steps 1 --epochs 2 --out %s/softw", tmpdir);
    EXPECT(rc == 0 && stderr_has_line("draw classify train: --loc-std has no effect: only a --hard model samples where to look") &&
               stderr_has_line("draw classify train: --scales has no effect: only a --hard model has a retina of scales") &&
               stderr_has_line("draw classify train: --epochs has no effect: --steps sets the run's length"),
           "--loc-std, --scales without --hard, --epochs with --steps: exit %d", rc);
    rc = run_draw("classify train " TINY " --no-attention --steps 1 --out %s/wholew", tmpdir);
    EXPECT(rc == 0 && stderr_has_line("draw classify train: --read has no effect: a model without attention reads the whole image"),
           "--read with --no-attention: exit %d", rc);
    // Flags the run uses: no line says "no effect".
    rc = run_draw("classify train " TINY " --hard --loc-std 0.3 --scales 2 --steps 1 --out %s/hardw", tmpdir);
    char *err = read_text("stderr.txt");
    EXPECT(rc == 0 && err && !strstr(err, "no effect"), "--hard --loc-std --scales: exit %d, %s", rc, err ? err : "");
    free(err);
}

static void test_bad_input_one_line(void) {
    char path[600];
    int rc = run_draw("classify train --out %s/x --T 0", tmpdir);
    expect_one_line(rc, "--T 0", "--T", NULL);
    rc = run_draw("classify train --T 4");
    expect_one_line(rc, "no --out", "--out", "missing");
    rc = run_draw("classify train --out %s/x --bogus 1", tmpdir);
    expect_one_line(rc, "unknown flag", "--bogus", NULL);
    rc = run_draw("classify train --out %s/x --data %s/nothing.idx", tmpdir, tmpdir);
    expect_one_line(rc, "--data PATH", "not a digit source", NULL);
    rc = run_draw("classify train --out %s/x --read 200", tmpdir);
    expect_one_line(rc, "--read 200", "--read", NULL);
    rc = run_draw("classify frobnicate");
    expect_one_line(rc, "unknown subcommand", "frobnicate", NULL);
    rc = run_draw("classify eval --model %s/missing.safetensors", tmpdir);
    expect_one_line(rc, "missing model", "missing.safetensors", NULL);
    // A file that is not a checkpoint, and a truncated checkpoint.
    snprintf(path, sizeof path, "%s/junk.safetensors", tmpdir);
    scratch_write_text(path, "this is not a checkpoint");
    rc = run_draw("classify eval --model %s", path);
    expect_one_line(rc, "junk checkpoint", "junk.safetensors", NULL);
    if (trained) {
        size_t len = 0;
        char src[600];
        snprintf(src, sizeof src, "%s/run/model.safetensors", tmpdir);
        char *bytes = scratch_read_text(src, &len);
        snprintf(path, sizeof path, "%s/cut.safetensors", tmpdir);
        Error werr;
        EXPECT(bytes && file_write_atomic(path, bytes, len / 2, &werr) == 0, "cannot write %s", path);
        free(bytes);
        rc = run_draw("classify eval --model %s", path);
        expect_one_line(rc, "truncated checkpoint", "cut.safetensors", NULL);
        rc = run_draw("classify show --model %s/run/model.safetensors --count 0 --out %s/s0", tmpdir, tmpdir);
        expect_one_line(rc, "--count 0", "--count", NULL);
        // A run whose data cannot be loaded now: the checkpoint is named as its source.
        char dir[500];
        snprintf(dir, sizeof dir, "%s/nodata", tmpdir);
        Error mk;
        EXPECT(make_dirs(dir, &mk) == 0, "%s", mk.msg);
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        if (checkpoint_rewrite_meta(src, path, "train.data", "gone-digits") == 0) {
            rc = run_draw("classify train --steps 8 --resume --out %s", dir);
            expect_one_line(rc, "resume with data gone", "nodata/model.safetensors: the run's data", "gone-digits");
        }
    }
    // A DRAW generator's checkpoint is named as such.
    rc = run_draw("train --data mnist --T 2 --read 2 --write 2 --hidden 4 --z 2 --batch 8 --steps 1 "
                  "--valid-images 8 --out %s/gen", tmpdir);
    if (rc == 0) {
        rc = run_draw("classify eval --model %s/gen/model.safetensors", tmpdir);
        expect_one_line(rc, "DRAW checkpoint", "not a classifier checkpoint", "DRAW");
    }
    EXPECT(run_draw("classify --help") == 0 && run_draw("classify train --help") == 0 &&
               run_draw("classify eval --help") == 0,
           "--help failed");
}

int main(void) {
    if (scratch_open(&sc, "test_cli_classify", "draw")) {
        printf("FAIL setup: mkdtemp\n");
        return 1;
    }
    tmpdir = sc.dir;
    RUN(test_train_writes_outputs);
    RUN(test_eval_json);
    RUN(test_show_and_export);
    RUN(test_resume_bit_identical);
    RUN(test_refusals);
    RUN(test_cnn_baseline);
    RUN(test_run_record_of_another_program);
    RUN(test_hard_attention);
    RUN(test_hard_glimpse_net);
    RUN(test_unused_flags_warned);
    RUN(test_bad_input_one_line);
    int rc = test_summary();
    if (rc == 0) scratch_remove(tmpdir);
    return rc;
}
