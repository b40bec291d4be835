// draw_eval_quality.c: see draw_eval_quality.h.
#include "cli/draw_eval_quality.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/draw_frames.h"
#include "cli/train_run.h"
#include "core/check.h"
#include "core/text_escape.h"
#include "vision/png.h"

const char *const DRAW_QUALITY_OF_NAMES[] = {"samples", "data", "reconstructions", "noise", NULL};

// Whether the folder a file would be written into exists and may be written to.
static bool folder_writable(const char *path) {
    char dir[1024];
    const char *slash = strrchr(path, '/');
    if (!slash) return access(".", W_OK) == 0;
    const size_t len = slash == path ? 1 : (size_t)(slash - path);
    if (len >= sizeof dir) return false;
    memcpy(dir, path, len), dir[len] = 0;
    return access(dir, W_OK) == 0;
}

// --quality-illegible: the samples kept (n of them) as a grid of 8 a row, and one line on
// stderr with each one's top class and probability, row by row.
static int write_illegible(const char *path, const float *images, const float *top, const int *cls,
                           int n, const DrawConfig *c, Error *err) {
    if (n == 0) {
        text_write_linef(stderr, "draw eval: no sample was illegible; %s not written", path);
        return 0;
    }
    const DrawFrameStyle st = {.scale = 2, .cols = 8, .margin = 2};
    Image grid = draw_render_frame(images, 0, n, c, NULL, NULL, &st);
    int rc = write_png_image(path, &grid, err);
    image_free(&grid);
    if (rc) return rc;
    fprintf(stderr, "draw eval: wrote %s: the first %d samples not legible (top class, probability):", path, n);
    for (int i = 0; i < n; i++) fprintf(stderr, "%s %d %.2f", i ? "," : "", cls[i], top[i]);
    fprintf(stderr, "\n");
    return 0;
}

int draw_eval_quality_check(const DrawEvalQuality *a) {
    if (a->classifier && a->illegible && !folder_writable(a->illegible)) {
        text_write_linef(stderr, "draw eval: --quality-illegible %s: its folder does not exist or cannot be written to",
                         a->illegible);
        return 1;
    }
    const bool samples = a->of == DRAW_QUALITY_OF_SAMPLES;
    if (!a->classifier && (a->illegible || a->temperature != 1.0 || !samples)) {
        text_write_linef(stderr, "draw eval: --%s works on --sample-quality's samples; give --sample-quality CLASSIFIER",
                         a->illegible ? "quality-illegible" : !samples ? "quality-of" : "quality-temperature");
        return 2;
    }
    if (!samples && (a->illegible || a->temperature != 1.0)) {
        text_write_linef(stderr, "draw eval: --quality-of %s judges no samples from the prior, so it takes no --%s",
                         DRAW_QUALITY_OF_NAMES[a->of], a->illegible ? "quality-illegible" : "quality-temperature");
        return 2;
    }
    return 0;
}

bool draw_eval_quality_beside(const DrawEvalQuality *a) {
    return a->of == DRAW_QUALITY_OF_SAMPLES || a->of == DRAW_QUALITY_OF_RECONSTRUCTIONS;
}

// --quality-of noise: n noise images as dense as the first n of images (D pixels each).
static void noise_quality(SampleQuality *q, const float *images, int n, const DrawConfig *c,
                          const ClassifyModel *cls, const DrawEvalQuality *a) {
    const size_t D = (size_t)draw_image_size(c);
    double ink = 0.0;
    for (size_t i = 0; i < (size_t)n * D; i++) ink += images[i];
    float *noise = xmalloc(sizeof(float) * (size_t)n * D);
    draw_noise_images(noise, n, (int)D, ink / ((double)n * D), a->seed);
    draw_images_quality(q, noise, n, c, cls, a->batch);
    free(noise);
}

// Samples from the prior, and the split's own images beside them; with --quality-illegible,
// the first KEEP samples that are not legible written as a grid.
static int samples_quality(SampleQuality *q, SampleQuality *dq, const DrawEvalQuality *a,
                           const DrawParams *p, const DrawConfig *c, const ClassifyModel *cls,
                           const ImageSet *set, Error *err) {
    enum { KEEP = 64 };
    const int IMG = draw_image_size(c);
    int kept = 0, keep_class[KEEP];
    float *keep_img = a->illegible ? xmalloc(sizeof(float) * (size_t)KEEP * IMG) : NULL, keep_top[KEEP];
    SampleQualityDraw how = {.temperature = a->temperature, .keep = a->illegible ? KEEP : 0, .kept = &kept,
                             .illegible = keep_img, .illegible_top = keep_top, .illegible_class = keep_class};
    draw_sample_quality(q, p, c, cls, a->n, a->batch, a->seed, &how);
    draw_images_quality(dq, set->images, a->n < set->n ? a->n : set->n, c, cls, a->batch);
    int rc = a->illegible ? write_illegible(a->illegible, keep_img, keep_top, keep_class, kept, c, err) : 0;
    free(keep_img);
    return rc;
}

int draw_eval_quality_run(SampleQuality *q, SampleQuality *dq, const DrawEvalQuality *a,
                          const DrawParams *p, const DrawConfig *c, const ClassifyModel *cls,
                          const ImageSet *set, int limit, Error *err) {
    const int n = limit > 0 && limit < set->n ? limit : set->n;
    switch ((DrawQualityOf)a->of) {
    case DRAW_QUALITY_OF_DATA:
        draw_images_quality(q, set->images, n, c, cls, a->batch);
        return 0;
    case DRAW_QUALITY_OF_NOISE:
        noise_quality(q, set->images, n, c, cls, a);
        return 0;
    case DRAW_QUALITY_OF_RECONSTRUCTIONS:
        draw_reconstruction_quality(q, p, c, cls, set->images, set->labels, n, a->batch, a->seed);
        draw_images_quality(dq, set->images, n, c, cls, a->batch);
        return 0;
    case DRAW_QUALITY_OF_SAMPLES:
        break;
    }
    return samples_quality(q, dq, a, p, c, cls, set, err);
}

// The classes each asked class is taken for, largest share first, at most three a class
// (the whole matrix is in --json): one line, or none when every sample matched.
static void print_confusions(const SampleQuality *q) {
    enum { SHOWN = 3 };
    int any = 0;
    for (int k = 0; k < q->classes; k++) {
        long asked = 0;
        for (int j = 0; j < q->classes; j++) asked += q->confusion[k][j];
        int shown[SHOWN], n = 0;
        while (n < SHOWN) {  // the next largest wrong class not yet shown
            int best = -1;
            for (int j = 0; j < q->classes; j++) {
                int seen = j == k;
                for (int i = 0; i < n; i++) seen |= shown[i] == j;
                if (!seen && q->confusion[k][j] > 0 && (best < 0 || q->confusion[k][j] > q->confusion[k][best]))
                    best = j;
            }
            if (best < 0) break;
            shown[n++] = best;
        }
        if (!n) continue;
        printf("%s %d as", any ? ";" : "taken for another class (asked: predicted):", k);
        for (int i = 0; i < n; i++)
            printf("%s %d %.1f%%", i ? "," : "", shown[i], 100.0 * q->confusion[k][shown[i]] / asked);
        any = 1;
    }
    if (any) printf("\n");
}

void draw_eval_quality_print(const DrawEvalQuality *a, const SampleQuality *q, const char *key,
                             int of, bool json) {
    char buf[32];
    const double t = of == DRAW_QUALITY_OF_SAMPLES ? a->temperature : 1.0;
    if (json) {
        char lo[32], hi[32], se[32], both[32], blo[32], bhi[32];
        printf(", \"%s\": {\"samples\": %ld, \"of\": \"%s\", \"temperature\": %g, \"digits\": %d, "
               "\"digits_judged\": %ld, \"confidence\": %.2f, \"legible\": %.6f, \"legible_low95\": %s, "
               "\"legible_high95\": %s, \"both_legible\": %s, \"both_legible_low95\": %s, "
               "\"both_legible_high95\": %s, \"entropy\": %.6f, \"entropy_se\": %s, "
               "\"entropy_max\": %.6f, \"conditional\": %s, \"match\": %s, \"predicted_share\": [",
               key, q->samples, DRAW_QUALITY_OF_NAMES[of], t, q->digits, q->n, SAMPLE_QUALITY_CONFIDENCE,
               q->legible, json_number(lo, q->legible_low), json_number(hi, q->legible_high),
               json_number(both, q->both_legible), json_number(blo, q->both_low),
               json_number(bhi, q->both_high), q->entropy, json_number(se, q->entropy_se),
               q->entropy_max, q->conditional ? "true" : "false", json_number(buf, q->match));
        for (int k = 0; k < q->classes; k++) printf("%s%.6f", k ? ", " : "", q->predicted_share[k]);
        printf("], \"match_per_class\": [");
        for (int k = 0; q->conditional && k < q->classes; k++)
            printf("%s%s", k ? ", " : "", json_number(buf, q->match_per_class[k]));
        printf("], \"confusion\": [");  // rows: the class asked for; columns: predicted
        for (int k = 0; q->conditional && k < q->classes; k++) {
            printf("%s[", k ? ", " : "");
            for (int j = 0; j < q->classes; j++) printf("%s%ld", j ? ", " : "", q->confusion[k][j]);
            printf("]");
        }
        printf("]}");
        return;
    }
    char what[128];
    if (of == DRAW_QUALITY_OF_SAMPLES && t != 1.0)
        snprintf(what, sizeof what, "%ld samples from the prior at temperature %g (not the paper's 1)",
                 q->samples, t);
    else if (of == DRAW_QUALITY_OF_SAMPLES)
        snprintf(what, sizeof what, "%ld samples%s", q->samples,
                 q->conditional ? ", each class asked for in turn" : " from the prior");
    else if (of == DRAW_QUALITY_OF_NOISE)
        snprintf(what, sizeof what, "%ld noise images, each pixel on with the %s images' mean intensity",
                 q->samples, a->split);
    else
        snprintf(what, sizeof what, "%sthe first %ld %s images",
                 of == DRAW_QUALITY_OF_DATA ? "" : "the model's reconstructions of ", q->samples, a->split);
    const char *name = of == DRAW_QUALITY_OF_SAMPLES ? "sample quality" : of == DRAW_QUALITY_OF_DATA ? "image quality"
                       : of == DRAW_QUALITY_OF_NOISE ? "noise quality" : "reconstruction quality";
    if (q->digits == 2)
        printf("%s (%s, each cut into its two digits, %s): both digits legible (top probability "
               ">= %.1f each) %.2f%% [%.2f, %.2f]; of the %ld digits %.2f%% legible [%.2f, %.2f]; "
               "predicted-class entropy %.4f nats (standard error %.4f) of log %d = %.4f\n",
               name, what, a->classifier, SAMPLE_QUALITY_CONFIDENCE, 100.0 * q->both_legible,
               100.0 * q->both_low, 100.0 * q->both_high, q->n, 100.0 * q->legible,
               100.0 * q->legible_low, 100.0 * q->legible_high, q->entropy, q->entropy_se,
               q->classes, q->entropy_max);
    else
        printf("%s (%s, %s): legible (top probability >= %.1f) %.2f%% [%.2f, %.2f]; "
               "predicted-class entropy %.4f nats (standard error %.4f) of log %d = %.4f\n",
               name, what, a->classifier, SAMPLE_QUALITY_CONFIDENCE, 100.0 * q->legible,
               100.0 * q->legible_low, 100.0 * q->legible_high, q->entropy, q->entropy_se,
               q->classes, q->entropy_max);
    if (!q->conditional) return;
    printf("labelled as the class asked for: %.2f%%; per class:", 100.0 * q->match);
    for (int k = 0; k < q->classes; k++) printf(" %d %.1f%%", k, 100.0 * q->match_per_class[k]);
    printf("\n");
    print_confusions(q);
}

