// test_cli_finetune.c: caption train --fine-tune end to end on a folder of scenes with the
// reduced-width random-weight VGG-19 and ResNet-18 of tests/fixtures/encoders: a few steps
// lower the loss, the checkpoint holds a stage that moved away from the weights file's (and
// its Adam moments in the state), eval and predict run the fine-tuned stage (a checkpoint
// with the file's stage written back scores differently), an interrupted run resumed ends
// in the same bytes as an uninterrupted one, and each refusal is one line.
// Issue 59: the same fine-tuning with --decoder transformer.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/safetensors.h"
#include "tests/support/cli_check.h"
#include "tests/support/fixture.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"
#include "vision/encoder.h"

static Scratch sc;
static const char *tmp;
static char vgg19[600], vgg16[600], resnet18[600], data[1200];

#define run(...) scratch_run(&sc, __VA_ARGS__)
#define DECODER " --embed 16 --hidden 32 --attn-dim 16 --batch 8 --threads 1 --quiet"

#define slurp(name) cli_slurp(&sc, (name))
#define expect_one_line_error(status, want) EXPECT_ONE_LINE_ERROR(&sc, (status), (want))
#define read_all(path, len) ((unsigned char *)scratch_read_text((path), (len)))

// The losses of log.csv's training rows: the first and the last.
static void first_last_loss(const char *run_dir, double *first, double *last) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s/log.csv", tmp, run_dir);
    char *text = scratch_read_text(path, NULL);
    *first = *last = NAN;
    if (!text) return;
    for (char *line = strchr(text, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
        const char *c = strchr(line + 1, ',');
        c = c ? strchr(c + 1, ',') : NULL;  // step,epoch,loss
        if (!c || c[1] == ',') continue;    // a validation row
        double v = strtod(c + 1, NULL);
        if (isnan(*first)) *first = v;
        *last = v;
    }
    free(text);
}

// model (in tmp) must hold a fine-tuned stage of arch that differs from the weights file's;
// with state, also its Adam moments. Writes a copy with the file's stage written back into
// `reset` (NULL: none).
static void check_stage(const char *model, const char *arch, const char *weights,
                        const char *stage, int state, const char *reset) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", tmp, model);
    Encoder *enc = NULL;
    Error e;
    if (encoder_load(&enc, arch, weights, &e)) {
        EXPECT(0, "%s", e.msg);
        return;
    }
    EncoderStage st;
    encoder_last_stage(enc, &st);
    SafetensorsFile f;
    if (safetensors_open(&f, path, &e)) {
        EXPECT(0, "%s", e.msg);
        encoder_stage_free(&st), encoder_free(enc);
        return;
    }
    const char *ft = safetensors_meta(&f, "finetune"), *pre = safetensors_meta(&f, "preprocess");
    EXPECT(ft && !strcmp(ft, stage), "%s records fine-tuning '%s'", model, ft ? ft : "-");
    EXPECT(pre && strstr(pre, "ImageNet"), "%s records preprocessing '%s'", model, pre ? pre : "-");
    const SafetensorsTensor *t = safetensors_find(&f, "finetune.stage");
    EXPECT(t && t->numel == st.n_params, "%s: no stage of %zu values", model, st.n_params);
    if (t && t->numel == st.n_params) {
        float *w = malloc(st.n_params * sizeof(float));
        EXPECT(safetensors_read_floats(w, &f, t, &e) == 0, "%s", e.msg);
        double moved = 0.0;
        for (size_t i = 0; i < st.n_params; i++) moved += fabs((double)w[i] - st.params[i]);
        EXPECT(moved > 1e-3, "%s: the stage did not move from the file's (%g)", model, moved);
        free(w);
        if (reset) {  // the same file with the stage's bytes replaced by the file's weights
            size_t len;
            unsigned char *bytes = read_all(path, &len);
            uint64_t hl = 0;
            for (int k = 7; bytes && k >= 0; k--) hl = hl << 8 | bytes[k];
            size_t at = 8 + (size_t)hl + t->offset;
            EXPECT(bytes && t->dtype == ST_F32 && at + st.n_params * 4 <= len, "stage bytes");
            if (bytes && t->dtype == ST_F32 && at + st.n_params * 4 <= len) {
                memcpy(bytes + at, st.params, st.n_params * 4);  // little-endian F32 here
                snprintf(path, sizeof path, "%s/%s", tmp, reset);
                EXPECT(file_write_atomic(path, bytes, len, &e) == 0, "%s", e.msg);
            }
            free(bytes);
        }
    }
    for (int k = 0; k < 2; k++) {
        const SafetensorsTensor *m = safetensors_find(&f, k ? "finetune.adam_v" : "finetune.adam_m");
        EXPECT(state ? m && m->numel == st.n_params : m == NULL, "%s: Adam moments %s", model,
               state ? "missing" : "in a model file");
    }
    safetensors_free(&f);
    encoder_stage_free(&st);
    encoder_free(enc);
}

static void test_finetune_vgg(void) {
    int st = run("scenes --out %s/scenes --count 40 --image-size 64", tmp);
    EXPECT(st == 0, "scenes: %d", st);
    st = run("train --data %s --encoder vgg19:%s --fine-tune conv5 --fine-tune-lr 1e-3 --out "
             "%s/run --steps 24 --log-every 4" DECODER, data, vgg19, tmp);
    char *err = slurp("stderr.txt");
    EXPECT(st == 0, "train: %d %s", st, err);
    free(err);
    double first, last;
    first_last_loss("run", &first, &last);
    EXPECT(isfinite(first) && last < first, "the loss did not fall: %g -> %g", first, last);
    check_stage("run/model.safetensors", "vgg19", vgg19, "conv5", 0, "reset.safetensors");
    check_stage("run/state.safetensors", "vgg19", vgg19, "conv5", 1, NULL);
    // eval runs the encoder with the checkpoint's stage: the file's stage scores otherwise.
    st = run("eval --model %s/run/model.safetensors --data %s --split test --json --quiet", tmp, data);
    char *tuned = slurp("stdout.txt");
    EXPECT(st == 0 && strstr(tuned, "\"bleu4\""), "eval: %d %s", st, tuned);
    st = run("eval --model %s/reset.safetensors --data %s --split test --json --quiet", tmp, data);
    char *reset = slurp("stdout.txt");
    EXPECT(st == 0 && strstr(reset, "\"bleu4\""), "eval of the reset stage: %d %s", st, reset);
    EXPECT(strcmp(tuned, reset) != 0, "the fine-tuned stage and the file's score the same: %s", tuned);
    free(reset);
    // The weights elsewhere: --encoder names them (the same bytes; other weights refused).
    char copy[1200];
    snprintf(copy, sizeof copy, "%s/moved.safetensors", tmp);
    size_t wl = 0;
    unsigned char *w = read_all(vgg19, &wl);
    Error e;
    EXPECT(w && file_write_atomic(copy, w, wl, &e) == 0, "copy of the weights");
    free(w);
    st = run("eval --model %s/run/model.safetensors --data %s --split test --json --quiet "
             "--encoder vgg19:%s", tmp, data, copy);
    char *moved = slurp("stdout.txt");
    EXPECT(st == 0 && !strcmp(moved, tuned), "eval --encoder: %d %s (recorded: %s)", st, moved, tuned);
    free(moved), free(tuned);
    st = run("eval --model %s/run/model.safetensors --data %s --split test --quiet --encoder "
             "vgg16:%s", tmp, data, vgg16);
    expect_one_line_error(st, "another encoder");
    // predict: the fine-tuned encoder on image files.
    st = run("predict --model %s/run/model.safetensors --images %s/scenes --threads 1", tmp, tmp);
    char *out = slurp("stdout.txt");
    EXPECT(st == 0 && scratch_count_lines(out) == 40 && strstr(out, "test_000000.png\t"),
           "predict: %d %s", st, out);
    free(out);
    // Interrupted at step 12 and resumed (the flags from the state) to 24: the same bytes.
    st = run("train --data %s --encoder vgg19:%s --fine-tune conv5 --fine-tune-lr 1e-3 --out "
             "%s/half --steps 12 --log-every 4" DECODER, data, vgg19, tmp);
    EXPECT(st == 0, "first half: %d", st);
    st = run("train --data %s --out %s/half --steps 24 --log-every 4 --resume" DECODER, data, tmp);
    EXPECT(st == 0, "resume: %d", st);
    char pa[1200], pb[1200];
    snprintf(pa, sizeof pa, "%s/run/state.safetensors", tmp);
    snprintf(pb, sizeof pb, "%s/half/state.safetensors", tmp);
    size_t la = 0, lb = 0;
    unsigned char *a = read_all(pa, &la), *b = read_all(pb, &lb);
    EXPECT(a && b && la == lb && !memcmp(a, b, la), "the resumed state differs from the uninterrupted one");
    free(a), free(b);
    // A new --fine-tune-lr on --resume is said (so without --quiet) and stored.
#define DECODER_SAID " --embed 16 --hidden 32 --attn-dim 16 --batch 8 --threads 1"
    st = run("train --data %s --out %s/half --steps 26 --log-every 4 --resume --fine-tune-lr 5e-4"
             DECODER_SAID, data, tmp);
    char *said = slurp("stderr.txt");
    EXPECT(st == 0 && strstr(said, "caption train: resuming with --fine-tune-lr 0.0005 "
                                   "(checkpoint: 0.001)\n"), "resume --fine-tune-lr: %d %s", st, said);
    free(said);
    SafetensorsFile f;
    Error e2;
    if (safetensors_open(&f, pb, &e2)) {
        EXPECT(0, "%s", e2.msg);
        return;
    }
    const char *stored = safetensors_meta(&f, "finetune.lr");
    EXPECT(stored && !strcmp(stored, "0.0005"), "finetune.lr stored: %s", stored ? stored : "none");
    safetensors_free(&f);
}

static void test_finetune_resnet(void) {
    int st = run("train --data %s --encoder resnet18:%s --fine-tune layer4 --fine-tune-lr 1e-3 "
                 "--out %s/res --steps 8" DECODER, data, resnet18, tmp);
    char *err = slurp("stderr.txt");
    EXPECT(st == 0, "train resnet18 layer4: %d %s", st, err);
    free(err);
    check_stage("res/state.safetensors", "resnet18", resnet18, "layer4", 1, NULL);
    st = run("eval --model %s/res/model.safetensors --data %s --split test --json --quiet", tmp, data);
    char *out = slurp("stdout.txt");
    EXPECT(st == 0 && strstr(out, "\"bleu4\""), "eval resnet18: %d %s", st, out);
    free(out);
}

// Issue 59: the Transformer decoder fine-tunes the stage too (its d annotations go back).
static void test_finetune_transformer(void) {
    int st = run("train --data %s --encoder vgg19:%s --fine-tune conv5 --fine-tune-lr 1e-3 --out "
                 "%s/tf --steps 8 --decoder transformer --d-model 16 --heads 2 --d-ff 32 --layers 1 "
                 "--batch 8 --threads 1 --quiet", data, vgg19, tmp);
    char *err = slurp("stderr.txt");
    EXPECT(st == 0, "train: %d %s", st, err);
    free(err);
    check_stage("tf/state.safetensors", "vgg19", vgg19, "conv5", 1, NULL);
    st = run("eval --model %s/tf/model.safetensors --data %s --split test --json --quiet", tmp, data);
    char *out = slurp("stdout.txt");
    EXPECT(st == 0 && strstr(out, "\"transformer\""), "eval: %d %s", st, out);
    free(out);
}

static void test_finetune_refusals(void) {
#define TRAIN "train --data %s --out %s/bad --steps 2" DECODER
    int st = run(TRAIN " --encoder resnet18:%s --fine-tune conv5", data, tmp, resnet18);
    expect_one_line_error(st, "conv5 is VGG's");
    st = run(TRAIN " --encoder vgg19:%s --fine-tune layer4", data, tmp, vgg19);
    expect_one_line_error(st, "its last stage is conv5");
    st = run(TRAIN " --encoder resnet18@layer3:%s --fine-tune layer4", data, tmp, resnet18);
    expect_one_line_error(st, "ends at layer3");
    st = run(TRAIN " --encoder vgg19:%s --fine-tune conv4", data, tmp, vgg19);
    expect_one_line_error(st, "expected conv5 (VGG) or layer4 (ResNet)");
    st = run(TRAIN " --fine-tune conv5", data, tmp);
    expect_one_line_error(st, "--encoder ARCH:FILE");
    st = run(TRAIN " --encoder vgg19:%s", data, tmp, vgg19);
    expect_one_line_error(st, "only with --fine-tune");
    st = run(TRAIN " --encoder vgg19:%s --fine-tune conv5 --features %s/none.safetensors", data,
             tmp, vgg19, tmp);
    expect_one_line_error(st, "stale");
    // --resume with another encoder or stage: the flag-diff line.
    st = run("train --data %s --out %s/run --steps 30 --resume --encoder vgg16:%s" DECODER, data,
             tmp, vgg16);
    expect_one_line_error(st, "--encoder vgg16");
    st = run("train --data %s --out %s/run --steps 30 --resume --encoder resnet18:%s "
             "--fine-tune layer4" DECODER, data, tmp, resnet18);
    expect_one_line_error(st, "--fine-tune layer4 (checkpoint: conv5)");
    // A fine-tuned model reads no feature cache in eval.
    st = run("eval --model %s/run/model.safetensors --data %s --features %s/none.safetensors "
             "--split test --quiet", tmp, data, tmp);
    expect_one_line_error(st, "not from --features");
    // Several ranks: each says it (one line per rank).
    st = scratch_run_mpi(&sc, 2, TRAIN " --encoder vgg19:%s --fine-tune conv5", data, tmp, vgg19);
    char *err = slurp("stderr.txt");
    EXPECT(st != 0 && strstr(err, "--fine-tune: one process only"), "under mpirun: %d %s", st, err);
    free(err);
#undef TRAIN
}

int main(void) {
    if (scratch_open(&sc, "test_cli_finetune", "caption")) return 1;
    tmp = sc.dir;
    fixture_path(vgg19, sizeof vgg19, "encoders/vgg19.safetensors");
    fixture_path(vgg16, sizeof vgg16, "encoders/vgg16.safetensors");
    fixture_path(resnet18, sizeof resnet18, "encoders/resnet18.safetensors");
    snprintf(data, sizeof data, "tsv:%s/scenes/captions.tsv:%s/scenes", tmp, tmp);
    RUN(test_finetune_vgg);
    RUN(test_finetune_resnet);
    RUN(test_finetune_transformer);
    RUN(test_finetune_refusals);
    scratch_remove(tmp);
    return test_summary();
}
