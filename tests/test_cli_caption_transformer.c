// test_cli_caption_transformer.c: bin/caption with --decoder transformer end to end on small
// scenes: train (--json, log.csv with a validation grounding), eval --json with grounding and
// --per-image, predict with attention strips, report (its loss caption), --resume against an uninterrupted run (the same
// parameters and Adam moments), the refusals of bad sizes (heads that do not divide --d-model, a --d-model the 2-D
// positions cannot take, --max-len past --positions, the other decoder's flags: one line
// naming the flags, no folder),
// and a checkpoint of one decoder kind resumed as the other, both ways; eval --map-layer and
// --map-head (the maps of one layer and head, the captions the same).
// Finds the binary in $ATTEND_BIN (default "bin").
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/safetensors.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"
#include "vision/png.h"

static Scratch sc;
static const char *tmp;

#define DATA " --train-count 64 --val-count-scenes 8 --test-count 8 --threads 1"
#define TF                                                                                    \
    " --decoder transformer --d-model 16 --heads 2 --d-ff 32 --layers 1 --enc-layers 1"      \
    " --image-size 64 --channels 4,8,16 --batch 8 --quiet" DATA
#define LSTM " --image-size 64 --channels 4,8,16 --embed 16 --hidden 32 --attn-dim 16 --batch 8 --quiet" DATA

#define run(...) scratch_run(&sc, __VA_ARGS__)

static char *slurp(const char *name) {
    char *text = scratch_read(&sc, name, NULL);
    return text ? text : calloc(1, 1);
}

static void expect_one_line_error(int status, const char *want) {
    char *err = slurp("stderr.txt");
    EXPECT(status != 0, "exit status 0 for a bad command");
    EXPECT(scratch_count_lines(err) == 1, "stderr should be one line, got: %s", err);
    EXPECT(strstr(err, want) != NULL, "stderr '%s' does not mention '%s'", err, want);
    free(err);
}

static void test_train_eval_predict(void) {
    int st = run("train --out %s/run --steps 6 --seed 3 --log-every 2 --json" TF, tmp);
    char *out = slurp("stdout.txt"), *err = slurp("stderr.txt");
    EXPECT(st == 0, "train failed (%d): %s", st, err);
    EXPECT(strstr(out, "\"final_loss\": ") && strstr(out, "\"attention\": \"transformer\""), "train --json: %s", out);
    free(out), free(err);
    char *csv = slurp("run/log.csv");
    EXPECT(strstr(csv, "\n6,") != NULL, "log.csv has no row for step 6: %s", csv);
    free(csv);
    EXPECT(scratch_exists(&sc, "run/model.safetensors") && scratch_exists(&sc, "run/state.safetensors"),
           "no checkpoint");
    st = run("eval --model %s/run/model.safetensors --data scenes --split test --beam 2 --json "
             "--per-image %s/per.json --attention-out %s/estrips --attention-count 1 --quiet" DATA,
             tmp, tmp, tmp);
    out = slurp("stdout.txt");
    EXPECT(st == 0, "eval failed (%d): %s", st, out);
    EXPECT(out[0] == '{' && strstr(out, "\"bleu4\"") && strstr(out, "\"cider\"") &&
               strstr(out, "\"grounding\"") && strstr(out, "\"attention\": \"transformer\""),
           "eval --json: %s", out);
    free(out);
    char *per = slurp("per.json");
    EXPECT(strstr(per, "\"grounding\"") != NULL, "per-image JSON without grounding: %.300s", per);
    free(per);
    EXPECT(scratch_exists(&sc, "estrips/00000.png"), "eval wrote no attention strip");
    // predict on a folder of two PNGs, with a strip each.
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/photos", tmp);
    mkdir(dir, 0755);
    unsigned char pix[64 * 64 * 3];
    for (int i = 0; i < 64 * 64 * 3; i++) pix[i] = (unsigned char)((i * 37) & 255);
    Error e;
    snprintf(path, sizeof path, "%s/a.png", dir);
    EXPECT(write_png_u8(path, pix, 64, 64, 3, &e) == 0, "%s", e.msg);
    snprintf(path, sizeof path, "%s/b.png", dir);
    EXPECT(write_png_u8(path, pix, 64, 64, 1, &e) == 0, "%s", e.msg);
    st = run("predict --model %s/run/model.safetensors --images %s --beam 3 --attention-out "
             "%s/strips --results %s/pred.json --threads 1", tmp, dir, tmp, tmp);
    out = slurp("stdout.txt");
    EXPECT(st == 0, "predict failed (%d)", st);
    EXPECT(scratch_count_lines(out) == 2 && strncmp(out, "a.png\t", 6) == 0, "predict: %s", out);
    EXPECT(scratch_exists(&sc, "strips/a.png") && scratch_exists(&sc, "strips/b.png"), "strips missing");
    free(out);
    // The report's loss caption says the Transformer's loss has no attention regulariser.
    st = run("report %s/run", tmp);
    EXPECT(st == 0, "report failed (%d)", st);
    char *html = slurp("run/report.html");
    EXPECT(strstr(html, "the Transformer decoder has no attention regulariser") &&
               !strstr(html, "cross-entropy plus the attention regulariser"),
           "report's loss caption");
    free(html);
}

// The same tensors with the same bytes in DIR/a and DIR/b (the metadata aside: the best
// validation of the interrupted run may be its first half's).
static int same_tensors(const char *a, const char *b) {
    char pa[512], pb[512];
    snprintf(pa, sizeof pa, "%s/%s", tmp, a);
    snprintf(pb, sizeof pb, "%s/%s", tmp, b);
    SafetensorsFile x, y;
    Error e;
    if (safetensors_load(&x, pa, &e)) return 0;
    if (safetensors_load(&y, pb, &e)) {
        safetensors_free(&x);
        return 0;
    }
    int same = x.count == y.count && x.count > 10;
    for (int i = 0; same && i < x.count; i++) {
        const SafetensorsTensor *t = safetensors_find(&y, x.tensors[i].name);
        same = t && t->numel == x.tensors[i].numel &&
               !memcmp(t->data, x.tensors[i].data, t->numel * sizeof(float));
    }
    same = same && !strcmp(safetensors_meta(&x, "step"), safetensors_meta(&y, "step"));
    safetensors_free(&x);
    safetensors_free(&y);
    return same;
}

// 6 steps at once against 3, then --resume to 6 (dropout 0.1 on: the masks are the step's;
// the Noam warm-up: the learning rate is the step's).
static void test_resume_bit_identical(void) {
    int st = run("train --out %s/full --steps 6 --seed 5 --warmup 4" TF, tmp);
    EXPECT(st == 0, "full run failed");
    st = run("train --out %s/part --steps 3 --seed 5 --warmup 4" TF, tmp);
    EXPECT(st == 0, "first part failed");
    st = run("train --out %s/part --steps 6 --resume --quiet" DATA, tmp);
    char *err = slurp("stderr.txt");
    EXPECT(st == 0, "resume failed: %s", err);
    free(err);
    EXPECT(same_tensors("full/state.safetensors", "part/state.safetensors"),
           "the states' parameters or Adam moments differ");
}

static void test_bad_sizes(void) {
    expect_one_line_error(run("train --out %s/b1 --steps 1" TF " --heads 3", tmp),
                          "--heads 3: must divide --d-model 16");
    expect_one_line_error(run("train --out %s/b2 --steps 1" TF " --d-model 18", tmp),
                          "--d-model 18: must be a multiple of 4");
    expect_one_line_error(run("train --out %s/b3 --steps 1" TF " --max-len 20 --positions 16", tmp),
                          "--max-len 20: a caption of 20 words takes 21 positions (with <start>), more "
                          "than --positions 16 allow");
    expect_one_line_error(run("train --out %s/b4 --steps 1" TF " --decoder gru", tmp), "--decoder");
    // The other decoder's flags would be ignored: refused.
    expect_one_line_error(run("train --out %s/b5 --steps 1" TF " --hidden 64", tmp),
                          "--hidden: the LSTM decoder's flag, not with --decoder transformer");
    expect_one_line_error(run("train --out %s/b6 --steps 1" LSTM " --d-model 64", tmp),
                          "--d-model: the Transformer decoder's flag, not with --decoder lstm");
    for (int i = 1; i <= 6; i++) EXPECT(!scratch_exists(&sc, "b%d", i), "folder b%d made", i);
}

// 1 when DIR/a and DIR/b both exist and differ.
static int files_differ(const char *a, const char *b) {
    size_t na = 0, nb = 0;
    char *x = scratch_read(&sc, a, &na), *y = scratch_read(&sc, b, &nb);
    int differ = x && y && na > 0 && nb > 0 && (na != nb || memcmp(x, y, na) != 0);
    free(x), free(y);
    return differ;
}

// The number after "KEY": in text; NAN when it is not there.
static double json_after(const char *text, const char *key) {
    char want[64];
    snprintf(want, sizeof want, "\"%s\":", key);
    const char *p = strstr(text, want);
    return p ? atof(p + strlen(want)) : NAN;
}

// caption eval --map-layer, --map-head: the maps of one decoder layer and one head; the
// captions (BLEU-4, CIDEr-D) stay those of the default maps (the last layer's mean over
// heads), the maps do not (the strips of two heads differ), and the JSON names both. Out
// of range, or given for an LSTM model: one line.
#define TF2                                                                                   \
    " --decoder transformer --d-model 16 --heads 2 --d-ff 32 --layers 2"                      \
    " --image-size 64 --channels 4,8,16 --batch 8 --quiet" DATA
#define EVAL " --data scenes --split test --beam 2 --json --attention-count 1 --quiet" DATA
static void test_eval_maps_of_a_layer_and_head(void) {
    EXPECT(run("train --out %s/tf2 --steps 6 --seed 4" TF2, tmp) == 0, "2-layer run failed");
    EXPECT(run("eval --model %s/tf2/model.safetensors --attention-out %s/m_def" EVAL, tmp, tmp) == 0, "eval");
    char *def = slurp("stdout.txt");
    EXPECT(json_after(def, "map_layer") == 1 && json_after(def, "map_head") == -1, "default maps: %s", def);
    const char *cases[][3] = {{"--map-layer 0", "m_l0", "0 -1"}, {"--map-head 0", "m_h0", "1 0"},
                              {"--map-layer 1 --map-head 1", "m_h1", "1 1"}};
    for (int i = 0; i < 3; i++) {
        int st = run("eval --model %s/tf2/model.safetensors %s --attention-out %s/%s" EVAL, tmp,
                     cases[i][0], tmp, cases[i][1]);
        char *out = slurp("stdout.txt");
        int layer = -9, head = -9;
        sscanf(cases[i][2], "%d %d", &layer, &head);
        EXPECT(st == 0 && json_after(out, "map_layer") == layer && json_after(out, "map_head") == head,
               "%s: %s", cases[i][0], out);
        EXPECT(json_after(out, "bleu4") == json_after(def, "bleu4") &&
                   json_after(out, "cider") == json_after(def, "cider"),
               "%s changed the captions: %s against %s", cases[i][0], out, def);
        free(out);
    }
    free(def);
    EXPECT(files_differ("m_h0/00000.png", "m_h1/00000.png"), "heads 0 and 1 drew the same strip");
    EXPECT(files_differ("m_def/00000.png", "m_l0/00000.png"), "layers 0 and 1 drew the same strip");
    expect_one_line_error(run("eval --model %s/tf2/model.safetensors --map-layer 2" EVAL, tmp),
                          "--map-layer 2: ");
    expect_one_line_error(run("eval --model %s/tf2/model.safetensors --map-head 2" EVAL, tmp),
                          "has 2 heads (0 .. 1, or -1 the mean)");
    EXPECT(run("train --out %s/lstm_maps --steps 1" LSTM, tmp) == 0, "LSTM run failed");
    expect_one_line_error(run("eval --model %s/lstm_maps/model.safetensors --map-head 0" EVAL, tmp),
                          "has the LSTM decoder");
}

static void test_wrong_kind_both_ways(void) {
    EXPECT(run("train --out %s/lstm --steps 2" LSTM, tmp) == 0, "LSTM run failed");
    expect_one_line_error(run("train --out %s/lstm --steps 4 --resume --decoder transformer" DATA, tmp),
                          "--decoder transformer (checkpoint: lstm)");
    EXPECT(run("train --out %s/tf --steps 2" TF, tmp) == 0, "Transformer run failed");
    expect_one_line_error(run("train --out %s/tf --steps 4 --resume --decoder lstm" DATA, tmp),
                          "--decoder lstm (checkpoint: transformer)");
}

int main(void) {
    if (scratch_open(&sc, "test_cli_caption_transformer", "caption")) {
        printf("FAIL main: cannot make a temporary folder\n");
        return 1;
    }
    tmp = sc.dir;
    RUN(test_bad_sizes);
    RUN(test_train_eval_predict);
    RUN(test_resume_bit_identical);
    RUN(test_wrong_kind_both_ways);
    RUN(test_eval_maps_of_a_layer_and_head);
    scratch_remove(tmp);
    return test_summary();
}
