// test_experiments_pretrained.c: experiments/sat_flickr8k.sh and sat_coco.sh end to end on
// a small stand-in (experiments/scenes_standin.sh: a Flickr8k-layout folder and a
// Karpathy-style JSON written from the synthetic scenes) with the reduced-width
// random-weight VGG-19 of tests/fixtures/encoders and a tiny decoder for a few steps:
// every stage ran (features, train, eval, table), the table row was written beside the
// paper's numbers, and a second run resumes (the cache left alone, training continued).
// Runs the scripts with sh from the repository root; the programs from $ATTEND_BIN.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/support/scratch.h"
#include "tests/support/test.h"

static char dir[256], bin[600], vgg19[600];

static char *run_to_text(const char *cmd, int *status) {
    char out[600], full[8192];
    snprintf(out, sizeof out, "%s/out.txt", dir);
    snprintf(full, sizeof full, "%s > %s 2>&1", cmd, out);
    *status = system(full);
    char *t = scratch_read_text(out, NULL);
    return t ? t : calloc(1, 1);
}

static int exists(const char *rel) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    struct stat st;
    return stat(path, &st) == 0 && st.st_size > 0;
}

// The environment every script run gets: the stand-in, the tiny decoder, a step budget.
#define SMALL "IMAGE_SIZE=64 EMBED=16 HIDDEN=32 ATTN_DIM=16 BATCH=8 THREADS=1 VAL_COUNT=3"

static void check_run(const char *text, int st, const char *name, const char *variant,
                      const char *paper_bleu4) {
    EXPECT(st == 0, "%s %s: status %d: %s", name, variant, st, text);
    char stage[64];
    for (int k = 1; k <= 4; k++) {
        snprintf(stage, sizeof stage, "%s [%d/4]", name, k);
        EXPECT(strstr(text, stage) != NULL, "%s did not run: %s", stage, text);
    }
    char table[600];
    snprintf(table, sizeof table, "%s/tables/%s.md", dir, name);
    char *t = scratch_read_text(table, NULL);
    EXPECT(t != NULL, "no table %s", table);
    if (!t) return;
    char row[64];
    snprintf(row, sizeof row, "| %s |", variant);
    const char *r = strstr(t, row);
    EXPECT(r != NULL && strstr(r, paper_bleu4) != NULL, "no %s row beside the paper's %s: %s",
           variant, paper_bleu4, t);
    EXPECT(strstr(t, "| paper BLEU-4 |") != NULL, "no paper columns: %s", t);
    free(t);
}

static void test_flickr8k_soft(void) {
    char cmd[4096];
    int st;
    snprintf(cmd, sizeof cmd, "BIN=%s sh experiments/scenes_standin.sh %s/standin 40", bin, dir);
    char *text = run_to_text(cmd, &st);
    EXPECT(st == 0 && exists("standin/flickr8k/Flickr8k.token.txt") &&
               exists("standin/flickr8k/Flickr_8k.devImages.txt") &&
               exists("standin/coco/dataset_coco.json"),
           "stand-in: %d %s", st, text);
    free(text);
    snprintf(cmd, sizeof cmd,
             "FLICKR8K=%s/standin/flickr8k VGG19=%s BIN=%s RUNS=%s/runs RESULTS_DIR=%s/tables "
             SMALL " STEPS=6 sh experiments/sat_flickr8k.sh", dir, vgg19, bin, dir, dir);
    text = run_to_text(cmd, &st);
    check_run(text, st, "sat_flickr8k", "soft", "| 19.5 |");
    EXPECT(exists("runs/sat_flickr8k_vgg19_64.features") && exists("runs/sat_flickr8k_soft/model.safetensors") &&
               exists("runs/sat_flickr8k_soft/eval.json") && exists("runs/sat_flickr8k_soft/results_test.json"),
           "stage outputs missing");
    free(text);
    // Run again with a larger budget: the cache is complete, training continues.
    snprintf(cmd, sizeof cmd,
             "FLICKR8K=%s/standin/flickr8k VGG19=%s BIN=%s RUNS=%s/runs RESULTS_DIR=%s/tables "
             SMALL " STEPS=9 sh experiments/sat_flickr8k.sh", dir, vgg19, bin, dir, dir);
    text = run_to_text(cmd, &st);
    EXPECT(st == 0 && strstr(text, "nothing to do"), "the cache was extracted again: %s", text);
    free(text);
    char path[600];
    snprintf(path, sizeof path, "%s/runs/sat_flickr8k_soft/train.json", dir);
    text = scratch_read_text(path, NULL);
    EXPECT(text && strstr(text, "\"steps\": 9"), "training did not continue to step 9: %s", text ? text : "-");
    free(text);
    snprintf(path, sizeof path, "%s/tables/sat_flickr8k.md", dir);
    text = scratch_read_text(path, NULL);
    int rows = 0;
    for (const char *p = text; p && (p = strstr(p, "| soft |")); p++) rows++;
    EXPECT(rows == 2, "%d soft rows, expected 2", rows);
    free(text);
}

static void test_coco_hard_and_early_stop(void) {
    char cmd[4096];
    int st;
    // Karpathy-style JSON, hard attention, epochs with early stopping (patience 1).
    snprintf(cmd, sizeof cmd,
             "COCO_JSON=%s/standin/coco/dataset_coco.json COCO_IMAGES=%s/standin/coco/images "
             "VGG19=%s BIN=%s RUNS=%s/runs RESULTS_DIR=%s/tables " SMALL
             " MAX_EPOCHS=3 PATIENCE=1 sh experiments/sat_coco.sh --hard", dir, dir, vgg19, bin, dir, dir);
    char *text = run_to_text(cmd, &st);
    check_run(text, st, "sat_coco", "hard", "| 25.0 |");
    EXPECT(strstr(text, "epoch 1") != NULL, "no epoch loop: %s", text);
    free(text);
    snprintf(cmd, sizeof cmd, "COCO_JSON=x COCO_IMAGES=y VGG19=%s BIN=%s sh experiments/sat_coco.sh --soft",
             vgg19, bin);
    text = run_to_text(cmd, &st);
    EXPECT(st != 0 && strstr(text, "unknown argument"), "a bad argument accepted: %s", text);
    free(text);
    text = run_to_text("sh experiments/sat_flickr8k.sh", &st);
    EXPECT(st != 0 && strstr(text, "FLICKR8K"), "FLICKR8K unset not named: %s", text);
    free(text);
}

int main(void) {
    if (system(NULL) == 0) return 1;
    if (scratch_make(dir, sizeof dir, "test_experiments_pretrained")) return 1;
    const char *b = getenv("ATTEND_BIN"), *fx = getenv("ATTEND_FIXTURES");
    snprintf(bin, sizeof bin, "%s", b && b[0] ? b : "bin");
    snprintf(vgg19, sizeof vgg19, "%s/encoders/vgg19.safetensors", fx && fx[0] ? fx : "tests/fixtures");
    RUN(test_flickr8k_soft);
    RUN(test_coco_hard_and_early_stop);
    scratch_remove(dir);
    return test_summary();
}
