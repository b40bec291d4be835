// test_cli_caption.c: bin/caption end to end on small scenes: train a few steps (--json
// with a finite final_loss matching log.csv), eval --json, predict on a folder of PNGs
// (some broken), the scenes folder round trip, --resume against an uninterrupted run, and
// one-line errors for bad input (a missing required flag; --help says "(required)").
// Issue 17: a new run refuses a folder holding one (--force starts over); --resume takes
// the checkpoint's value for a model flag left out and refuses one that differs; no
// sentinel (-1, nan) in the validation and summary lines; a --minutes run's progress
// counts steps; a six-image COCO set holds out a validation and a test image (--held-out
// sets the share); --attention dot says what --hidden to give; --cpu-budget stops a run
// by CPU seconds counted across --resume.
// Finds the binary in $ATTEND_BIN (default "bin").
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/safetensors.h"
#include "tests/support/checkpoint.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"
#include "vision/png.h"

static Scratch sc;  // bin/caption and its scratch folder
static const char *tmp;  // sc.dir

// Small and fast: 64 x 64 scenes, a narrow CNN and decoder.
#define SMALL                                                                              \
    " --image-size 64 --channels 4,8,16 --embed 16 --hidden 32 --attn-dim 16 --batch 8"   \
    " --train-count 64 --val-count-scenes 16 --test-count 16 --threads 1 --quiet"
#define DATA_SMALL " --train-count 64 --val-count-scenes 16 --test-count 16 --threads 1"

// Runs "bin/caption ARGS", stdout to DIR/stdout.txt and stderr to DIR/stderr.txt; returns
// the exit status (-1 if it did not exit normally).
#define run(...) scratch_run(&sc, __VA_ARGS__)

// Reads DIR/NAME whole (an empty string when missing); *len (if non-NULL) its size.
static char *slurp_n(const char *name, size_t *len) {
    char *text = scratch_read(&sc, name, len);
    return text ? text : calloc(1, 1);
}

static char *slurp(const char *name) { return slurp_n(name, NULL); }

static int exists(const char *fmt, const char *a) {
    char path[1024];
    snprintf(path, sizeof path, fmt, tmp, a);
    struct stat st;
    return stat(path, &st) == 0 && st.st_size > 0;
}

// A failing command: non-zero status and exactly one line on stderr containing want.
static void expect_one_line_error(int status, const char *want) {
    char *err = slurp("stderr.txt");
    EXPECT(status != 0, "exit status 0 for a bad command");
    EXPECT(scratch_count_lines(err) == 1, "stderr should be one line, got: %s", err);
    EXPECT(strstr(err, want) != NULL, "stderr '%s' does not mention '%s'", err, want);
    free(err);
}

// The loss column of log.csv's row for step (a training row, not a validation one); NAN
// when there is none.
static double logged_loss(const char *csv, long step) {
    char want[32];
    int n = snprintf(want, sizeof want, "\n%ld,", step);
    for (const char *p = strstr(csv, want); p; p = strstr(p + 1, want)) {
        const char *q = strchr(p + n, ',');  // past the epoch column
        if (q && q[1] != ',') return atof(q + 1);
    }
    return NAN;
}

// The last column (val_grounding) of log.csv's validation row for step: that row leaves
// the loss column empty. NAN when there is no such row or the cell is empty.
static double logged_val_grounding(const char *csv, long step) {
    char want[32];
    int n = snprintf(want, sizeof want, "\n%ld,", step);
    for (const char *p = strstr(csv, want); p; p = strstr(p + 1, want)) {
        const char *q = strchr(p + n, ',');  // past the epoch column
        if (!q || q[1] != ',') continue;
        const char *end = strchr(q, '\n'), *last = q;
        for (const char *c = q; *c && c != end; c++)
            if (*c == ',') last = c;
        return last[1] && last[1] != '\n' ? atof(last + 1) : NAN;
    }
    return NAN;
}

static void test_train_eval_predict(void) {
    int st = run("train --out %s/run --steps 4 --seed 3 --log-every 2 --json" SMALL, tmp);
    char *err = slurp("stderr.txt");
    EXPECT(st == 0, "train failed (%d): %s", st, err);
    free(err);
    // train --json: one JSON object with steps, images_per_s and final_loss (issue 6), the
    // mean loss per image over the last logging window: log.csv's row for step 4.
    char *out = slurp("stdout.txt");
    cJSON *j = cJSON_Parse(out);
    EXPECT(j != NULL && scratch_count_lines(out) == 1, "train --json: not one JSON object: %s", out);
    cJSON *steps = cJSON_GetObjectItem(j, "steps"), *ips = cJSON_GetObjectItem(j, "images_per_s");
    cJSON *fl = cJSON_GetObjectItem(j, "final_loss");
    EXPECT(cJSON_IsNumber(steps) && steps->valuedouble == 4, "steps: %s", out);
    EXPECT(cJSON_IsNumber(ips) && ips->valuedouble > 0, "images_per_s: %s", out);
    EXPECT(cJSON_IsNumber(fl) && isfinite(fl->valuedouble) && fl->valuedouble > 0, "final_loss: %s", out);
    char *csv = slurp("run/log.csv");
    double logged = logged_loss(csv, 4);
    EXPECT(isfinite(logged), "log.csv has no training row for step 4: %s", csv);
    // %.6g in the JSON against %.9g in the CSV: 1e-5 relative covers the rounding.
    if (cJSON_IsNumber(fl) && isfinite(logged)) EXPECT_NEAR(fl->valuedouble, logged, 0.0, 1e-5);
    // Scenes have boxes, so the end-of-run validation row carries a grounding accuracy.
    EXPECT(strncmp(csv, "step,epoch,loss,ce_per_token,grad_norm,grad_norm_max,lr,images_per_s,val_bleu4,val_grounding\n",
                   93) == 0, "log.csv header: %.100s", csv);
    // Step 4's training row closes a window of 2 steps: its mean norm is positive and at
    // most its largest.
    double row_step, epoch, loss, ce, norm = 0, norm_max = 0;
    const char *row4 = strstr(csv, "\n4,");
    EXPECT(row4 && sscanf(row4, "\n%lf,%lf,%lf,%lf,%lf,%lf", &row_step, &epoch, &loss, &ce, &norm,
                          &norm_max) == 6 && norm > 0 && norm <= norm_max,
           "log.csv row for step 4: grad_norm %g, grad_norm_max %g", norm, norm_max);
    double vg = logged_val_grounding(csv, 4);
    EXPECT(vg >= 0.0 && vg <= 1.0, "log.csv validation row for step 4: val_grounding %g: %s", vg, csv);
    free(csv);
    cJSON_Delete(j);
    free(out);
    EXPECT(exists("%s/run/%s", "model.safetensors"), "no model.safetensors");
    EXPECT(exists("%s/run/%s", "state.safetensors"), "no state.safetensors");
    EXPECT(exists("%s/run/%s", "log.csv"), "no log.csv");
    EXPECT(exists("%s/run/%s", "curves.png"), "no curves.png");

    st = run("eval --model %s/run/model.safetensors --data scenes --split test --beam 2 --json "
             "--results %s/results.json --quiet" DATA_SMALL, tmp, tmp);
    out = slurp("stdout.txt");
    EXPECT(st == 0, "eval failed (%d)", st);
    const char *keys[] = {"\"bleu1\"", "\"bleu2\"", "\"bleu3\"", "\"bleu4\"", "\"cider\"",
                          "\"rougeL\"", "\"grounding\"", "\"object_f1\"", "\"object_precision\"",
                          "\"object_recall\"", "\"objects_named\"", "\"objects_right\""};
    for (int i = 0; i < 12; i++) EXPECT(strstr(out, keys[i]) != NULL, "%s missing in %s", keys[i], out);
    // Object F1 counts every object of the 16 test scenes (1 to 3 each).
    const char *ot = strstr(out, "\"objects_true\": ");
    EXPECT(ot && atoi(ot + 16) >= 16 && atoi(ot + 16) <= 48, "objects_true: %s", out);
    EXPECT(out[0] == '{' && scratch_count_lines(out) == 1, "not one JSON object: %s", out);
    const char *b4 = strstr(out, "\"bleu4\": ");
    if (b4) {
        double v = atof(b4 + 9);
        EXPECT(v >= 0.0 && v <= 1.0, "bleu4 %g", v);
    }
    free(out);
    char *res = slurp("results.json");
    EXPECT(strstr(res, "\"image_id\": \"test_000000.png\"") != NULL, "results JSON: %.200s", res);
    EXPECT(strstr(res, "\"caption\"") != NULL, "results JSON has no caption");
    free(res);

    // predict on a folder: two good PNGs (colour 64 x 64, grey 90 x 70) and a broken one.
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/photos", tmp);
    mkdir(dir, 0755);
    unsigned char *pix = malloc(90 * 70 * 3);
    for (int i = 0; i < 90 * 70 * 3; i++) pix[i] = (unsigned char)((i * 37) & 255);
    Error e;
    snprintf(path, sizeof path, "%s/a.png", dir);
    EXPECT(write_png_u8(path, pix, 64, 64, 3, &e) == 0, "%s", e.msg);
    snprintf(path, sizeof path, "%s/b.png", dir);
    EXPECT(write_png_u8(path, pix, 70, 90, 1, &e) == 0, "%s", e.msg);
    free(pix);
    snprintf(path, sizeof path, "%s/broken.png", dir);
    FILE *fp = fopen(path, "wb");
    fputs("\x89PNG\r\n\x1a\n this is not a png", fp);
    fclose(fp);
    st = run("predict --model %s/run/model.safetensors --images %s --beam 2 --attention-out "
             "%s/strips --results %s/pred.json --threads 1", tmp, dir, tmp, tmp);
    out = slurp("stdout.txt");
    err = slurp("stderr.txt");
    EXPECT(st != 0, "a broken file was skipped, the status must be non-zero");
    EXPECT(scratch_count_lines(out) == 2, "two captions expected, got: %s", out);
    EXPECT(strncmp(out, "a.png\t", 6) == 0, "first line: %s", out);
    EXPECT(strstr(out, "\nb.png\t") != NULL, "b.png line missing: %s", out);
    EXPECT(strstr(err, "broken.png") != NULL, "broken file not named: %s", err);
    EXPECT(exists("%s/strips/%s", "a.png") && exists("%s/strips/%s", "b.png"), "strips missing");
    char *pj = slurp("pred.json");
    EXPECT(strstr(pj, "\"image_id\": \"a.png\"") && strstr(pj, "\"image_id\": \"b.png\""),
           "results: %s", pj);
    EXPECT(strstr(pj, "broken") == NULL, "broken file in results");
    free(pj);
    free(out);
    free(err);
}

// Issue 56: a.png, a.jpg and a.PNG share the stem "a": each keeps its extension in its
// strip's name (a.png.png, a.jpg.png, a.PNG.png) where one strip overwrote the others; a
// name whose stem is its own keeps STEM.png; strips.tsv names each image's strip.
static void test_predict_strips_of_shared_stems(void) {
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/stems", tmp);
    mkdir(dir, 0755);
    const char *names[] = {"a.PNG", "a.jpg", "a.png", "c.png"};
    unsigned char pix[64 * 64 * 3];
    for (int n = 0; n < 4; n++) {
        for (int i = 0; i < (int)sizeof pix; i++) pix[i] = (unsigned char)(i * (n + 3));
        snprintf(path, sizeof path, "%s/%s", dir, names[n]);
        Error e;
        EXPECT(write_png_u8(path, pix, 64, 64, 3, &e) == 0, "%s", e.msg);
    }
    int st = run("predict --model %s/run/model.safetensors --images %s --beam 1 --attention-out "
                 "%s/stem_strips --threads 1", tmp, dir, tmp);
    char *err = slurp("stderr.txt");
    EXPECT(st == 0, "predict failed (%d): %s", st, err);
    free(err);
    const char *strips[] = {"a.PNG.png", "a.jpg.png", "a.png.png", "c.png"};
    for (int n = 0; n < 4; n++)
        EXPECT(exists("%s/stem_strips/%s", strips[n]), "no strip %s for %s", strips[n], names[n]);
    EXPECT(!scratch_exists(&sc, "stem_strips/a.png"), "a shared stem's strip a.png was written");
    char *tsv = slurp("stem_strips/strips.tsv");
    EXPECT(!strcmp(tsv, "a.PNG\ta.PNG.png\na.jpg\ta.jpg.png\na.png\ta.png.png\nc.png\tc.png\n"),
           "strips.tsv: %s", tsv);
    free(tsv);
}

// --resume from step 3 to step 6 gives bit-identical parameters and Adam moments (and with
// --ema the weight average) to an uninterrupted run to step 6.
// threads: 1 (one model) or 2 (two data-parallel workers); ema: the --ema decay, 0 for none.
static void resume_bit_identical(int threads, double ema) {
    int st = run("train --out %s/full%d_%g --steps 6 --seed 5 --dropout 0.2 --ema %g" SMALL " --threads %d",
                 tmp, threads, ema, ema, threads);
    EXPECT(st == 0, "uninterrupted run failed");
    st = run("train --out %s/part%d_%g --steps 3 --seed 5 --dropout 0.2 --ema %g" SMALL " --threads %d",
             tmp, threads, ema, ema, threads);
    EXPECT(st == 0, "first half failed");
    st = run("train --out %s/part%d_%g --steps 6 --seed 5 --dropout 0.2 --ema %g --resume" SMALL
             " --threads %d", tmp, threads, ema, ema, threads);
    char *err = slurp("stderr.txt");
    EXPECT(st == 0, "resume failed: %s", err);
    free(err);
    char pa[512], pb[512];
    snprintf(pa, sizeof pa, "%s/full%d_%g/state.safetensors", tmp, threads, ema);
    snprintf(pb, sizeof pb, "%s/part%d_%g/state.safetensors", tmp, threads, ema);
    SafetensorsFile a, b;
    Error e;
    if (safetensors_load(&a, pa, &e)) {
        EXPECT(0, "%s", e.msg);
        return;
    }
    if (safetensors_load(&b, pb, &e)) {
        EXPECT(0, "%s", e.msg);
        safetensors_free(&a);
        return;
    }
    EXPECT(a.count == b.count && a.count > 10, "tensor counts %d %d", a.count, b.count);
    int differ = 0;
    for (int i = 0; i < a.count; i++) {
        const SafetensorsTensor *t = safetensors_find(&b, a.tensors[i].name);
        if (!t || t->numel != a.tensors[i].numel ||
            memcmp(t->data, a.tensors[i].data, t->numel * sizeof(float))) {
            if (!differ) EXPECT(0, "tensor %s differs", a.tensors[i].name);
            differ++;
        }
    }
    EXPECT(strcmp(safetensors_meta(&a, "step"), "6") == 0 && strcmp(safetensors_meta(&b, "step"), "6") == 0,
           "steps");
    // The state holds the average exactly when --ema is on; the uninterrupted run's only
    // validation is at step 6, so its model file is that step's average, not the weights.
    const char *w = "embed";
    char ew[64];
    snprintf(ew, sizeof ew, "ema/%s", w);
    const SafetensorsTensor *tw = safetensors_find(&a, w), *te = safetensors_find(&a, ew);
    EXPECT(tw, "state has no %s", w);
    EXPECT((te != NULL) == (ema > 0), "state %s %s", ema > 0 ? "lacks" : "holds", ew);
    char pm[512];
    snprintf(pm, sizeof pm, "%s/full%d_%g/model.safetensors", tmp, threads, ema);
    SafetensorsFile m;
    if (tw && safetensors_load(&m, pm, &e) == 0) {
        const SafetensorsTensor *tm = safetensors_find(&m, w);
        const SafetensorsTensor *want = ema > 0 ? te : tw;
        EXPECT(tm && want && tm->numel == want->numel &&
                   !memcmp(tm->data, want->data, tm->numel * sizeof(float)),
               "model's %s is not the state's %s", w, ema > 0 ? ew : w);
        if (te) EXPECT(memcmp(te->data, tw->data, tw->numel * sizeof(float)), "the average equals the weights");
        safetensors_free(&m);
    } else if (tw) {
        EXPECT(0, "%s", e.msg);
    }
    safetensors_free(&a);
    safetensors_free(&b);
    // Resuming with a different architecture is refused with one line.
    st = run("train --out %s/part%d_%g --steps 8 --seed 5 --resume" SMALL " --hidden 24", tmp, threads, ema);
    expect_one_line_error(st, "--hidden 24 (checkpoint: 32)");
}

static void test_resume_bit_identical(void) { resume_bit_identical(1, 0); }
static void test_resume_bit_identical_two_threads(void) { resume_bit_identical(2, 0); }
static void test_resume_bit_identical_ema(void) { resume_bit_identical(1, 0.9); }

// Bad input: one line on stderr and a non-zero status.
static void test_errors(void) {
    expect_one_line_error(run("train --out %s/x --bogus 3", tmp), "--bogus");
    expect_one_line_error(run("train --out %s/x --batch zero", tmp), "--batch");
    expect_one_line_error(run("train --out %s/x --attention sideways", tmp), "--attention");
    expect_one_line_error(run("train --out %s/x --attention dot --hidden 100", tmp), "--attention");
    expect_one_line_error(run("frobnicate"), "frobnicate");
    expect_one_line_error(run("eval --model %s/missing.safetensors", tmp), "missing.safetensors");
    char path[512];
    snprintf(path, sizeof path, "%s/garbage.safetensors", tmp);
    FILE *fp = fopen(path, "wb");
    fputs("not a checkpoint at all, just text", fp);
    fclose(fp);
    expect_one_line_error(run("eval --model %s", path), "garbage.safetensors");
    expect_one_line_error(run("predict --model %s/run/model.safetensors --images %s/nothing-here", tmp, tmp),
                          "nothing-here");
    expect_one_line_error(run("train --out %s/x --resume --steps 2" SMALL, tmp), "--resume");
    // Issue 56: scenes on a canvas too small for their objects name the flag and the
    // smallest size that works (not "object scale 20..32").
    expect_one_line_error(run("scenes --out %s/sc32 --image-size 32 --count 5", tmp), "--image-size: must be >= 64");
    expect_one_line_error(run("train --out %s/x32 --steps 1 --image-size 32 --train-count 8 --quiet", tmp),
                          "--image-size: 32 is too small for the built-in scenes (objects of 20..32 px, up to 3 "
                          "to a scene): give --image-size 64 or more");
    EXPECT(!scratch_exists(&sc, "x32/model.safetensors") && !scratch_exists(&sc, "sc32/captions.tsv"),
           "output written for a canvas too small");
    expect_one_line_error(run("train --out %s/x --data tsv:%s/none.tsv:%s --steps 2" SMALL, tmp, tmp, tmp),
                          "none.tsv");
    // Required flags: the parser names the missing one; --help marks them.
    expect_one_line_error(run("train --steps 1" SMALL), "--out: missing (required)");
    expect_one_line_error(run("predict --model %s/run/model.safetensors", tmp), "--images: missing (required)");
    EXPECT(run("train --help") == 0, "--help should exit 0");
    char *out = slurp("stdout.txt");
    EXPECT(strstr(out, "--attention") != NULL, "help lists flags");
    const char *line = strstr(out, "\n  --out DIR");
    const char *eol = line ? strchr(line + 1, '\n') : NULL;
    const char *req = line ? strstr(line, "(required)") : NULL;
    EXPECT(req && eol && req < eol, "--help does not mark --out (required): %s", out);
    free(out);
}

// Hard attention (sampled locations, REINFORCE) and the none baseline train and decode.
static void test_hard_and_none(void) {
    const char *kinds[] = {"hard", "none", "multi-head --heads 2", "local-predictive --window 2"};
    for (int i = 0; i < 4; i++) {
        int st = run("train --out %s/k%d --steps 2 --attention %s --beta-vector" SMALL, tmp, i, kinds[i]);
        char *err = slurp("stderr.txt");
        EXPECT(st == 0, "train --attention %s failed: %s", kinds[i], err);
        free(err);
        st = run("eval --model %s/k%d/model.safetensors --beam 2 --count 8 --json --quiet" DATA_SMALL,
                 tmp, i);
        char *out = slurp("stdout.txt");
        EXPECT(st == 0 && strstr(out, "\"bleu4\""), "eval of %s: %s", kinds[i], out);
        free(out);
    }
}

// A run that diverges (an absurd learning rate makes the loss non-finite) stops with a
// non-zero status, names the step, and leaves the last good checkpoint untouched.
static void test_nonfinite_stops(void) {
    int st = run("train --out %s/nan --steps 2" SMALL, tmp);
    EXPECT(st == 0, "first run failed");
    size_t nb, na;
    char *before = slurp_n("nan/model.safetensors", &nb);
    st = run("train --out %s/nan --steps 8 --resume --lr 1e30" SMALL, tmp);
    char *err = slurp("stderr.txt");
    EXPECT(st != 0, "a diverging run must fail");
    EXPECT(strstr(err, "step ") != NULL && (strstr(err, "loss") || strstr(err, "gradient")),
           "stderr: %s", err);
    char *after = slurp_n("nan/model.safetensors", &na);
    EXPECT(nb > 0 && na == nb && memcmp(before, after, (size_t)nb) == 0,
           "model.safetensors changed");
    free(before);
    free(after);
    free(err);
}

// caption scenes writes PNGs and captions.tsv; training from that folder works.
static void test_scenes_folder(void) {
    int st = run("scenes --out %s/sc --count 30 --seed 2", tmp);
    EXPECT(st == 0, "scenes failed");
    EXPECT(exists("%s/sc/%s", "captions.tsv"), "no captions.tsv");
    EXPECT(exists("%s/sc/%s", "train_000000.png"), "no train_000000.png");
    st = run("train --out %s/fromdir --data tsv:%s/sc/captions.tsv:%s/sc --steps 2" SMALL, tmp, tmp, tmp);
    char *err = slurp("stderr.txt");
    EXPECT(st == 0, "training from the folder failed: %s", err);
    free(err);
    EXPECT(exists("%s/fromdir/%s", "model.safetensors"), "no model from the folder run");
    // Evaluating a split the captions file has no image of: one line naming the data.
    char in[700], out[700], line[512];
    snprintf(in, sizeof in, "%s/sc/captions.tsv", tmp);
    snprintf(out, sizeof out, "%s/sc/no_test.tsv", tmp);
    FILE *src = fopen(in, "r"), *dst = fopen(out, "w");
    EXPECT(src && dst, "cannot copy captions.tsv");
    while (src && dst && fgets(line, sizeof line, src))
        if (!strstr(line, "\ttest")) fputs(line, dst);
    if (src) fclose(src);
    if (dst) fclose(dst);
    char want[2200];
    snprintf(want, sizeof want, "caption eval: tsv:%s:%s/sc: split test has no images", out, tmp);
    st = run("eval --model %s/fromdir/model.safetensors --data tsv:%s:%s/sc --split test --threads 1 --quiet",
             tmp, out, tmp);
    err = slurp("stderr.txt");  // after the loader's line of what it read
    const char *at = strstr(err, want);
    EXPECT(st == 1 && at && (at == err || at[-1] == '\n') && !strcmp(at + strlen(want), "\n"),
           "exit %d, stderr: %s", st, err);
    free(err);
}

// Issue 56: --resume with another --data than the run's (fromdir trained on the scenes
// folder of test_scenes_folder) was accepted silently; now it is refused as a changed model
// flag is, and a --data left out takes the run's (stored as train.data in both
// checkpoints). The same files named another way are the same data; a state written before
// train.data was stored resumes with the --data given, as before.
static int open_state(SafetensorsFile *f, const char *rel);  // below

static void test_resume_refuses_other_data(void) {
    char spec[1200], same[1200];
    snprintf(spec, sizeof spec, "tsv:%s/sc/captions.tsv:%s/sc", tmp, tmp);
    snprintf(same, sizeof same, "tsv:%s/sc/./captions.tsv:%s/sc/", tmp, tmp);
    SafetensorsFile f;
    if (open_state(&f, "fromdir/state.safetensors") == 0) {
        const char *d = safetensors_meta(&f, "train.data");
        EXPECT(d && !strcmp(d, spec), "state train.data: %s", d ? d : "(none)");
        safetensors_free(&f);
    } else {
        EXPECT(0, "no fromdir/state.safetensors");
    }
    if (open_state(&f, "fromdir/model.safetensors") == 0) {
        const char *d = safetensors_meta(&f, "train.data");
        EXPECT(d && !strcmp(d, spec), "model train.data: %s", d ? d : "(none)");
        safetensors_free(&f);
    }
    size_t n0 = 0, n1 = 0;
    char *before = slurp_n("fromdir/state.safetensors", &n0);
    int st = run("train --out %s/fromdir --steps 3 --resume --data scenes" SMALL, tmp);
    char want[1400];
    snprintf(want, sizeof want, "--data scenes (checkpoint: %s)", spec);
    expect_one_line_error(st, want);
    char *after = slurp_n("fromdir/state.safetensors", &n1);
    EXPECT(n0 == n1 && n0 > 0 && !memcmp(before, after, n0), "a refused resume changed the state");
    free(before), free(after);
    // Left out: the run's data (30 scenes in the folder, not SMALL's 64 built-in ones).
    st = run("train --out %s/fromdir --steps 3 --resume" SMALL, tmp);
    char *err = slurp("stderr.txt");
    EXPECT(st == 0 && strstr(err, "sc/captions.tsv: using 30 images"), "resume without --data: %d %s", st, err);
    free(err);
    st = run("train --out %s/fromdir --steps 4 --resume --data %s" SMALL, tmp, same);
    err = slurp("stderr.txt");
    EXPECT(st == 0, "resume with the same files named another way: %d %s", st, err);
    free(err);
    // An older state: no train.data, nothing to check (the --data given is used).
    char path[700];
    snprintf(path, sizeof path, "%s/fromdir/state.safetensors", tmp);
    EXPECT(checkpoint_rewrite_meta(path, path, "train.data", NULL) == 0, "cannot drop train.data");
    st = run("train --out %s/fromdir --steps 5 --resume --data %s" SMALL, tmp, spec);
    err = slurp("stderr.txt");
    EXPECT(st == 0, "resume from a state without train.data: %d %s", st, err);
    free(err);
}

// The first line of stderr that starts with prefix (a static copy); "" when none.
static const char *stderr_line(const char *prefix) {
    static char line[4096];
    line[0] = 0;
    char *err = slurp("stderr.txt");
    for (char *p = err; *p;) {
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

// A new run refuses a folder that holds one, leaving its files as they were; --force
// starts over.
static void test_refuses_to_overwrite_a_run(void) {
    int st = run("train --out %s/kept --steps 2" SMALL, tmp);
    EXPECT(st == 0, "first run failed");
    size_t n0 = 0, s0 = 0, n1 = 0, s1 = 0;
    char *model0 = slurp_n("kept/model.safetensors", &n0), *state0 = slurp_n("kept/state.safetensors", &s0);
    st = run("train --out %s/kept --steps 1" SMALL, tmp);
    expect_one_line_error(st, "already holds a run");
    char *err = slurp("stderr.txt");
    EXPECT(strstr(err, "kept/state.safetensors") && strstr(err, "--resume") && strstr(err, "--force"),
           "stderr: %s", err);
    free(err);
    char *model1 = slurp_n("kept/model.safetensors", &n1), *state1 = slurp_n("kept/state.safetensors", &s1);
    EXPECT(n0 > 0 && n0 == n1 && !memcmp(model0, model1, n0), "the model changed");
    EXPECT(s0 > 0 && s0 == s1 && !memcmp(state0, state1, s0), "the state changed");
    free(state1);
    st = run("train --out %s/kept --steps 1 --force --json" SMALL, tmp);
    char *out = slurp("stdout.txt");
    EXPECT(st == 0 && strstr(out, "\"steps\": 1,"), "--force: %d %s", st, out);
    free(out);
    free(model0), free(model1), free(state0);
}

// --resume: model flags left out take the checkpoint's values (the run was trained with
// SMALL's sizes, not the defaults); a given one that differs is refused.
static void test_resume_takes_left_out_flags(void) {
    int st = run("train --out %s/left --steps 2 --seed 5" SMALL, tmp);
    EXPECT(st == 0, "first run failed");
    st = run("train --out %s/left --steps 3 --seed 5 --resume --batch 8 --quiet" DATA_SMALL, tmp);
    char *err = slurp("stderr.txt");
    EXPECT(st == 0, "resume without the model flags failed (%d): %s", st, err);
    free(err);
    st = run("train --out %s/left --steps 4 --resume --attention dot --channels 4,8,32" DATA_SMALL, tmp);
    expect_one_line_error(st, "--channels 4,8,32 (checkpoint: 4,8,16), --attention dot (checkpoint: additive)");
}

// The training row's cell under column name of log.csv for step; NAN when there is none.
static double logged_column(const char *csv, long step, const char *name) {
    int col = 0;  // name's index in the header row
    for (const char *f = csv;; col++) {
        size_t len = strcspn(f, ",\n");
        if (len == strlen(name) && !strncmp(f, name, len)) break;
        f += len;
        if (*f != ',') return NAN;
        f++;
    }
    char want[32];
    int n = snprintf(want, sizeof want, "\n%ld,", step);
    for (const char *p = strstr(csv, want); p; p = strstr(p + 1, want)) {
        const char *q = strchr(p + n, ',');  // past the epoch column
        if (!q || q[1] == ',') continue;     // a validation row: no loss
        for (int c = 2; c < col && q; c++) q = strchr(q + 1, ',');
        return q ? atof(q + 1) : NAN;
    }
    return NAN;
}

// Opens checkpoint TMP/rel (its header alone): 0, or -1 when it cannot be read.
static int open_state(SafetensorsFile *f, const char *rel) {
    char path[700];
    snprintf(path, sizeof path, "%s/%s", tmp, rel);
    Error e;
    return safetensors_open(f, path, &e);
}

// Metadata key of checkpoint TMP/name as a number; NAN when it cannot be read.
static double state_meta(const char *name, const char *key) {
    SafetensorsFile f;
    if (open_state(&f, name)) return NAN;
    const char *v = safetensors_meta(&f, key);
    double x = v ? atof(v) : NAN;
    safetensors_free(&f);
    return x;
}

// The number of tensors of a state whose names start with prefix; -1 if it does not load.
static int state_tensor_count(const char *rel, const char *prefix) {
    SafetensorsFile f;
    if (open_state(&f, rel)) return -1;
    int n = 0;
    for (int i = 0; i < f.count; i++) n += !strncmp(f.tensors[i].name, prefix, strlen(prefix));
    safetensors_free(&f);
    return n;
}

// Optimiser flags other than the defaults (batch 32, lr 0.002, lr-decay 0.7, clip 5,
// seed 1, ema 0.999), on 16 training scenes: two steps per epoch, so the decay shows by
// step 3.
#define OPTIM " --seed 7 --lr 0.005 --lr-decay 0.5 --clip 1 --ema 0.9 --batch 8 --train-count 16 --log-every 1"
// The data alone (the model flags come from the state): no optimiser flag.
#define DATA_ONLY DATA_SMALL " --train-count 16 --log-every 1"
static const char *const OPTIM_KEYS[] = {"train.batch", "train.lr", "train.lr_decay", "train.clip",
                                         "train.seed", "train.ema"};
enum { N_OPTIM_KEYS = sizeof OPTIM_KEYS / sizeof OPTIM_KEYS[0] };

// Interrupted and resumed with no optimiser flag, a run continues at its own batch, lr,
// lr-decay, clip, seed and weight average's decay: bit for bit the uninterrupted run
// (before they were stored, it went on at the defaults).
static void test_resume_keeps_optimiser_settings(void) {
    int st = run("train --out %s/opt_full --steps 4" SMALL OPTIM, tmp);
    EXPECT(st == 0, "uninterrupted run failed");
    st = run("train --out %s/opt_part --steps 2" SMALL OPTIM, tmp);
    EXPECT(st == 0, "first half failed");
    st = run("train --out %s/opt_part --steps 4 --resume" DATA_ONLY, tmp);
    char *err = slurp("stderr.txt");
    EXPECT(st == 0, "resume without optimiser flags failed: %s", err);
    EXPECT(!strstr(err, "resuming with"), "no flag was given, yet: %s", err);
    free(err);
    EXPECT(strstr(stderr_line("caption train: 16 training images"), "batch 8, lr 0.005,"),
           "header: %s", stderr_line("caption train: 16 training images"));
    char a[600], b[600], why[256];
    snprintf(a, sizeof a, "%s/opt_full/state.safetensors", tmp);
    snprintf(b, sizeof b, "%s/opt_part/state.safetensors", tmp);
    for (int i = 0; i < N_OPTIM_KEYS; i++)
        EXPECT(checkpoints_identical(a, b, OPTIM_KEYS[i], why, sizeof why), "resume differs: %s", why);
    EXPECT(state_meta("opt_part/state.safetensors", "train.batch") == 8, "train.batch");
    EXPECT_NEAR(state_meta("opt_part/state.safetensors", "train.lr"), 0.005, 0, 1e-6);
    EXPECT_NEAR(state_meta("opt_part/state.safetensors", "train.lr_decay"), 0.5, 0, 1e-6);
    EXPECT_NEAR(state_meta("opt_part/state.safetensors", "train.clip"), 1.0, 0, 1e-6);
    EXPECT(state_meta("opt_part/state.safetensors", "train.seed") == 7, "train.seed");
    EXPECT_NEAR(state_meta("opt_part/state.safetensors", "train.ema"), 0.9, 0, 1e-6);
    // The resumed step 3 ran at the run's lr, decayed by its own factor (0.005 * 0.5^1.5).
    char *csv = slurp("opt_part/log.csv");
    EXPECT_NEAR(logged_column(csv, 3, "lr"), 0.005 * pow(0.5, 1.5), 0, 1e-4);
    free(csv);
}

// Resumed with a new --lr: one line names it beside the state's, and the run uses it (the
// log's lr column, the state it writes); the flags left out keep the state's values.
static void test_resume_with_new_lr(void) {
    int st = run("train --out %s/opt_lr --steps 2" SMALL OPTIM, tmp);
    EXPECT(st == 0, "first run failed");
    st = run("train --out %s/opt_lr --steps 3 --resume --lr 0.001" DATA_ONLY, tmp);
    char *err = slurp("stderr.txt");
    EXPECT(st == 0, "resume with --lr failed: %s", err);
    free(err);
    EXPECT(!strcmp(stderr_line("caption train: resuming"),
                   "caption train: resuming with --lr 0.001 (checkpoint: 0.005)"),
           "the line: '%s'", stderr_line("caption train: resuming"));
    EXPECT_NEAR(state_meta("opt_lr/state.safetensors", "train.lr"), 0.001, 0, 1e-6);
    EXPECT(state_meta("opt_lr/state.safetensors", "train.batch") == 8, "train.batch");
    EXPECT_NEAR(state_meta("opt_lr/state.safetensors", "train.lr_decay"), 0.5, 0, 1e-6);
    char *csv = slurp("opt_lr/log.csv");
    EXPECT_NEAR(logged_column(csv, 3, "lr"), 0.001 * pow(0.5, 1.5), 0, 1e-4);
    free(csv);
    // --ema likewise; --ema 0 turns the average off (the state keeps no ema/ weights), and
    // resumed again without the flag the run stays without it.
    st = run("train --out %s/opt_lr --steps 4 --resume --ema 0.5" DATA_ONLY, tmp);
    EXPECT(st == 0 && !strcmp(stderr_line("caption train: resuming"),
                              "caption train: resuming with --ema 0.5 (checkpoint: 0.9)"),
           "the line: '%s'", stderr_line("caption train: resuming"));
    EXPECT_NEAR(state_meta("opt_lr/state.safetensors", "train.ema"), 0.5, 0, 1e-6);
    EXPECT(state_tensor_count("opt_lr/state.safetensors", "ema/") > 0, "no ema/ weights");
    st = run("train --out %s/opt_lr --steps 5 --resume --ema 0" DATA_ONLY, tmp);
    EXPECT(st == 0, "resume with --ema 0 failed");
    st = run("train --out %s/opt_lr --steps 6 --resume" DATA_ONLY, tmp);
    EXPECT(st == 0 && !stderr_line("caption train: resuming")[0], "a line: '%s'",
           stderr_line("caption train: resuming"));
    EXPECT(state_meta("opt_lr/state.safetensors", "train.ema") == 0, "train.ema");
    EXPECT(state_tensor_count("opt_lr/state.safetensors", "ema/") == 0, "ema/ weights kept");
}

// A state written before the settings were stored (no train.* keys) still resumes, at the
// flags' values as it did then: given, the uninterrupted run bit for bit; left out, the
// defaults. A state with a bad or a missing setting is refused in one line naming it.
static void test_resume_old_and_bad_states(void) {
    int st = run("train --out %s/opt_old --steps 2" SMALL OPTIM, tmp);
    EXPECT(st == 0, "first half failed");
    char old[600], full[600], bad[600], why[256];
    snprintf(old, sizeof old, "%s/opt_old/state.safetensors", tmp);
    snprintf(full, sizeof full, "%s/opt_full/state.safetensors", tmp);
    for (int i = 0; i < N_OPTIM_KEYS; i++) checkpoint_rewrite_meta(old, old, OPTIM_KEYS[i], NULL);
    EXPECT(isnan(state_meta("opt_old/state.safetensors", "train.lr")), "train.lr not removed");
    st = run("train --out %s/opt_old --steps 4 --resume" SMALL OPTIM, tmp);
    char *err = slurp("stderr.txt");
    EXPECT(st == 0, "an old state with the flags failed: %s", err);
    EXPECT(!strstr(err, "resuming with"), "stderr: %s", err);
    free(err);
    EXPECT(checkpoints_identical(full, old, "train.lr", why, sizeof why), "old state resumed: %s", why);
    for (int i = 0; i < N_OPTIM_KEYS; i++) checkpoint_rewrite_meta(old, old, OPTIM_KEYS[i], NULL);
    st = run("train --out %s/opt_old --steps 5 --resume" DATA_ONLY, tmp);
    err = slurp("stderr.txt");
    EXPECT(st == 0, "an old state without flags failed: %s", err);
    free(err);
    EXPECT_NEAR(state_meta("opt_old/state.safetensors", "train.lr"), 0.002, 0, 1e-6);
    EXPECT(state_meta("opt_old/state.safetensors", "train.batch") == 32, "train.batch");
    // Bad values, each refused in one line naming the file and the key.
    static const struct {
        const char *key, *value;
    } cases[] = {{"step", "12x"}, {"best_step", "-3"}, {"best_val_bleu4", "good"},
                 {"baseline", "inf"}, {"baseline_set", "2"},
                 {"train.lr", "fast"}, {"train.lr", "-1"}, {"train.batch", "0"},
                 {"train.batch", "8.5"}, {"train.lr_decay", "2"}, {"train.clip", "nan"},
                 {"train.seed", "7x"}, {"train.seed", NULL}, {"train.ema", "1"},
                 {"train.ema", "-0.1"}, {"train.ema", "x"}};
    mkdir(strcat(strcpy(bad, tmp), "/opt_bad"), 0755);
    strcat(bad, "/state.safetensors");
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        if (checkpoint_rewrite_meta(full, bad, cases[i].key, cases[i].value)) continue;
        st = run("train --out %s/opt_bad --steps 6 --resume" DATA_ONLY, tmp);
        expect_one_line_error(st, "opt_bad/state.safetensors");
        expect_one_line_error(st, cases[i].key);
    }
}

// The validation and summary lines never print a placeholder (best -1, nan); the header
// says how many threads.
static void test_no_sentinels_in_messages(void) {
    int st = run("train --out %s/talk --steps 2 --log-every 1" DATA_SMALL
                 " --image-size 64 --channels 4,8,16 --embed 16 --hidden 32 --attn-dim 16 --batch 8", tmp);
    char *err = slurp("stderr.txt");
    EXPECT(st == 0, "train failed: %s", err);
    EXPECT(strstr(err, "validation BLEU-4") && strstr(err, "(the best so far)"), "stderr: %s", err);
    EXPECT(strstr(stderr_line("caption train: 64 training images"), ", 1 thread;"), "header: %s",
           stderr_line("caption train: 64 training images"));
    EXPECT(!strstr(err, "-1.0") && !strstr(err, "nan"), "a placeholder in: %s", err);
    free(err);
    // A finished run resumed: nothing measured, JSON nulls; the best so far still named.
    st = run("train --out %s/talk --steps 2 --resume --json" DATA_SMALL " --batch 8", tmp);
    char *out = slurp("stdout.txt");
    EXPECT(st == 0 && strstr(out, "\"final_loss\": null") && strstr(out, "\"val_bleu4\": null") &&
               strstr(out, "\"best_step\": 2") && !strstr(out, "nan") && !strstr(out, ": -1"),
           "JSON: %s", out);
    free(out);
}

// A --minutes run's progress lines count steps, not seconds (6 s: a log gets its first
// line after 5, and one at the end): the last line's count is the run's step count, which
// the JSON gives, whatever the machine's speed (under valgrind a step takes seconds; the
// test once asked for more than 20 steps in 5 s, which only a fast machine gives).
static void test_minutes_progress_counts_steps(void) {
    int st = run("train --out %s/minutes --minutes 0.1 --val-count 2 --val-beam 1 --json" DATA_SMALL
                 " --image-size 64 --channels 4,8,16 --embed 16 --hidden 32 --attn-dim 16 --batch 8", tmp);
    EXPECT(st == 0, "train failed");
    char *out = slurp("stdout.txt"), *err = slurp("stderr.txt");
    const char *at = strstr(out, "\"steps\": ");
    long total = at ? atol(at + 9) : -1;
    const char *last = NULL;  // the last progress line
    for (const char *p = err; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, "train: ", 7)) last = p;
    const char *first = stderr_line("train: ");
    EXPECT(strstr(first, " steps (") && strstr(first, " steps/s, ") && strstr(first, " images/s, ") &&
               strstr(first, " left") && atol(first + 7) >= 1 && atol(first + 7) <= total,
           "first progress line: '%s' (%ld steps in all)", first, total);
    char line[512] = "";
    if (last) snprintf(line, sizeof line, "%.*s", (int)strcspn(last, "\n"), last);
    EXPECT(total > 0 && strstr(line, " steps done in ") && atol(line + 7) == total,
           "%ld steps in the JSON, the last line: '%s'", total, line);
    free(out), free(err);
}

// The number after "KEY": in text (a JSON summary or run.json); NAN when it is not there.
static double json_after(const char *text, const char *key) {
    char want[64];
    snprintf(want, sizeof want, "\"%s\":", key);
    const char *p = strstr(text, want);
    return p ? atof(p + strlen(want)) : NAN;
}

// --cpu-budget: the run stops at the first step past that many CPU seconds of the process,
// records what it spent (the state's train.cpu_seconds, the summary, run.json), and a
// --resume counts on from there: at the same budget it trains no more steps, at a larger
// one it goes on to it. Given with another budget, or not > 0: one line.
static void test_cpu_budget(void) {
    int st = run("train --out %s/cpu --cpu-budget 1 --val-count 2 --val-beam 1 --json" SMALL, tmp);
    char *out = slurp("stdout.txt");
    double steps = json_after(out, "steps"), cpu = json_after(out, "cpu_seconds");
    EXPECT(st == 0 && steps >= 1 && json_after(out, "cpu_budget") == 1 && cpu >= 1, "JSON: %s", out);
    free(out);
    double saved = state_meta("cpu/state.safetensors", "train.cpu_seconds");
    EXPECT(saved >= 1 && saved <= cpu + 1e-6, "train.cpu_seconds %g (summary %g)", saved, cpu);
    // The same budget again: spent already, no step more.
    st = run("train --out %s/cpu --cpu-budget 1 --resume --val-count 2 --val-beam 1 --json" DATA_SMALL, tmp);
    out = slurp("stdout.txt");
    EXPECT(st == 0 && json_after(out, "steps") == steps, "resumed at a spent budget: %s (%g steps before)",
           out, steps);
    free(out);
    // A larger one: more steps, and the CPU counts on from the state's.
    st = run("train --out %s/cpu --cpu-budget 2.5 --resume --val-count 2 --val-beam 1 --json" DATA_SMALL, tmp);
    out = slurp("stdout.txt");
    double steps2 = json_after(out, "steps");
    EXPECT(st == 0 && steps2 > steps && json_after(out, "cpu_seconds") >= 2.5, "resumed to 2.5: %s", out);
    free(out);
    double saved2 = state_meta("cpu/state.safetensors", "train.cpu_seconds");
    EXPECT(saved2 >= 2.5 && saved2 > saved, "train.cpu_seconds %g after %g", saved2, saved);
    char *ri = slurp("cpu/run.json");  // three invocations; the last records the budget
    const char *last = strrchr(ri, '{');
    EXPECT(last && json_after(last, "cpu_budget") == 2.5 && json_after(last, "cpu_seconds") >= 2.5,
           "run.json: %s", ri);
    free(ri);
    expect_one_line_error(run("train --out %s/cpu2 --cpu-budget 1 --steps 3" SMALL, tmp),
                          "--epochs, --steps, --minutes, --cpu-budget: give at most one");
    expect_one_line_error(run("train --out %s/cpu2 --cpu-budget 0" SMALL, tmp), "--cpu-budget");
}

// Six COCO images, no splits in the file: at the default shares the hash held none out and
// training was refused; now one each goes to validation and test. Two images cannot be
// split: the error says what to do.
static void test_small_coco_set(void) {
    char dir[512], path[700];
    snprintf(dir, sizeof dir, "%s/coco6", tmp);
    mkdir(dir, 0755);
    unsigned char pix[32 * 32 * 3];
    char json[2048] = "{\"images\": [", ann[1024] = "\"annotations\": [";
    for (int id = 1; id <= 6; id++) {
        for (int i = 0; i < (int)sizeof pix; i++) pix[i] = (unsigned char)(i * id * 7);
        snprintf(path, sizeof path, "%s/%d.png", dir, id);
        Error e;
        EXPECT(write_png_u8(path, pix, 32, 32, 3, &e) == 0, "%s", e.msg);
        size_t k = strlen(json), a = strlen(ann);
        snprintf(json + k, sizeof json - k, "%s{\"id\": %d, \"file_name\": \"%d.png\"}", id > 1 ? ", " : "", id, id);
        snprintf(ann + a, sizeof ann - a, "%s{\"image_id\": %d, \"caption\": \"a %s square\"}",
                 id > 1 ? ", " : "", id, id % 2 ? "red" : "blue");
    }
    size_t k = strlen(json);
    snprintf(json + k, sizeof json - k, "], %s]}", ann);
    snprintf(path, sizeof path, "%s/captions.json", dir);
    EXPECT(scratch_write_text(path, json) == 0, "cannot write %s", path);
    int st = run("train --out %s/c6 --data coco:%s:%s --steps 2 --json" SMALL, tmp, path, dir);
    char *err = slurp("stderr.txt"), *out = slurp("stdout.txt");
    EXPECT(st == 0 && strstr(out, "\"steps\": 2"), "training on six COCO images failed: %s", err);
    free(err), free(out);
    st = run("eval --model %s/c6/model.safetensors --data coco:%s:%s --split test --json --quiet",
             tmp, path, dir);
    out = slurp("stdout.txt");
    EXPECT(st == 0 && strstr(out, "\"images\": 1,"), "eval on the test image: %s", out);
    free(out);
    // --held-out: a larger share is taken; one outside (0, 0.5) is refused with one line.
    st = run("train --out %s/c6h --data coco:%s:%s --steps 1 --held-out 0.3" SMALL, tmp, path, dir);
    EXPECT(st == 0, "--held-out 0.3 failed");
    expect_one_line_error(run("train --out %s/c6x --data coco:%s:%s --held-out 0.5" SMALL, tmp, path, dir),
                          "--held-out");
    // Two images.
    snprintf(path, sizeof path, "%s/two.json", dir);
    scratch_write_text(path, "{\"images\": [{\"id\": 1, \"file_name\": \"1.png\"}, {\"id\": 2, \"file_name\": "
                             "\"2.png\"}], \"annotations\": [{\"image_id\": 1, \"caption\": \"a\"}, "
                             "{\"image_id\": 2, \"caption\": \"b\"}]}");
    st = run("train --out %s/c2 --data coco:%s:%s --steps 1" SMALL, tmp, path, dir);
    err = slurp("stderr.txt");  // the set's summary line, then the error
    EXPECT(st != 0 && strstr(err, "needs at least one training and one validation image (has 2, 0); "
                                  "fewer than 3 images"), "status %d: %s", st, err);
    free(err);
}

// --attention dot needs --hidden equal to the annotation size: --help says so, and the
// error names the value to give.
static void test_dot_attention_says_what_to_set(void) {
    EXPECT(run("train --help") == 0, "--help failed");
    char *out = slurp("stdout.txt");
    EXPECT(strstr(out, "dot and scaled-dot need --hidden equal to the annotation size"), "help: %s", out);
    free(out);
    expect_one_line_error(run("train --out %s/dot --attention dot --hidden 100", tmp),
                          "add --hidden 128, or end --channels with 100");
}

int main(void) {
    if (scratch_open(&sc, "test_cli_caption", "caption")) {
        printf("FAIL main: cannot make a temporary folder\n");
        return 1;
    }
    tmp = sc.dir;
    RUN(test_train_eval_predict);
    RUN(test_predict_strips_of_shared_stems);
    RUN(test_resume_bit_identical);
    RUN(test_resume_bit_identical_two_threads);
    RUN(test_resume_bit_identical_ema);
    RUN(test_errors);
    RUN(test_hard_and_none);
    RUN(test_nonfinite_stops);
    RUN(test_scenes_folder);
    RUN(test_resume_refuses_other_data);
    RUN(test_refuses_to_overwrite_a_run);
    RUN(test_resume_takes_left_out_flags);
    RUN(test_resume_keeps_optimiser_settings);
    RUN(test_resume_with_new_lr);
    RUN(test_resume_old_and_bad_states);
    RUN(test_no_sentinels_in_messages);
    RUN(test_minutes_progress_counts_steps);
    RUN(test_cpu_budget);
    RUN(test_small_coco_set);
    RUN(test_dot_attention_says_what_to_set);
    scratch_remove(tmp);
    return test_summary();
}
