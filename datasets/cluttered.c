#include "datasets/cluttered.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/fileio.h"
#include "core/rng.h"
#include "vision/png.h"

ClutterConfig clutter_config_default(void) {
    return (ClutterConfig){.W = 100, .H = 100, .fragments = 8, .fragment = 8};
}

int clutter_config_check(const ClutterConfig *c, int digit_rows, int digit_cols, Error *err) {
    if (c->W < 1 || c->H < 1 || c->W > 4096 || c->H > 4096)
        return error_set(err, "cluttered image size %dx%d out of range [1, 4096]", c->W, c->H);
    if (digit_cols > c->W || digit_rows > c->H)
        return error_set(err, "a %dx%d digit does not fit a %dx%d cluttered image", digit_cols,
                         digit_rows, c->W, c->H);
    if (c->fragments < 0 || c->fragments > CLUTTER_MAX_FRAGMENTS)
        return error_set(err, "clutter fragments %d out of range [0, %d]", c->fragments,
                         CLUTTER_MAX_FRAGMENTS);
    if (c->fragment < 1 || c->fragment > digit_rows || c->fragment > digit_cols)
        return error_set(err, "clutter fragment size %d out of range [1, %d]", c->fragment,
                         digit_rows < digit_cols ? digit_rows : digit_cols);
    return 0;
}

// splitmix64 finaliser: spreads (seed, split, index) over the 64-bit seed space.
static uint64_t mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// out (H, W) += the w x h block of source image src_idx at (sx, sy), placed at (x, y);
// clipped at 1.
static void add_block(float *out, int W, const ImageSet *src, int src_idx, int sx, int sy,
                      int w, int h, int x, int y) {
    const uint8_t *pix = src->pixels + (size_t)src_idx * src->dim;
    for (int r = 0; r < h; r++) {
        const uint8_t *s = pix + (size_t)(sy + r) * src->cols + sx;
        float *o = out + (size_t)(y + r) * W + x;
        for (int k = 0; k < w; k++) {
            float v = o[k] + (float)s[k] * (1.0f / 255.0f);
            o[k] = v > 1.0f ? 1.0f : v;
        }
    }
}

int cluttered_image(float *out, ClutterSample *info, const ImageSet *src, const ClutterConfig *c,
                    uint64_t seed, long index) {
    CHECK(src->n >= 2 && index >= 0, "%d source images, index %ld", src->n, index);
    CHECK(c->fragments <= CLUTTER_MAX_FRAGMENTS && c->W >= src->cols && c->H >= src->rows &&
              c->fragment <= src->cols && c->fragment <= src->rows,
          "clutter config does not fit %dx%d digits", src->cols, src->rows);
    ClutterSample local;
    ClutterSample *s = info ? info : &local;
    memset(s, 0, sizeof *s);
    Rng rng;
    rng_seed(&rng, mix64(mix64(mix64(seed) ^ (uint64_t)src->split) ^ (uint64_t)index));
    memset(out, 0, sizeof(float) * (size_t)c->W * c->H);
    s->digit = (int)(index % src->n);
    s->label = src->labels ? src->labels[s->digit] : -1;
    const int F = c->fragment;
    for (int f = 0; f < c->fragments; f++) {
        // Any source image but the digit itself.
        int j = (int)rng_below(&rng, (uint32_t)(src->n - 1));
        if (j >= s->digit) j++;
        s->frag_src[f] = j;
        s->frag_sx[f] = (int)rng_below(&rng, (uint32_t)(src->cols - F + 1));
        s->frag_sy[f] = (int)rng_below(&rng, (uint32_t)(src->rows - F + 1));
        s->frag_x[f] = (int)rng_below(&rng, (uint32_t)(c->W - F + 1));
        s->frag_y[f] = (int)rng_below(&rng, (uint32_t)(c->H - F + 1));
        add_block(out, c->W, src, j, s->frag_sx[f], s->frag_sy[f], F, F, s->frag_x[f],
                  s->frag_y[f]);
    }
    s->x = (int)rng_below(&rng, (uint32_t)(c->W - src->cols + 1));
    s->y = (int)rng_below(&rng, (uint32_t)(c->H - src->rows + 1));
    add_block(out, c->W, src, s->digit, 0, 0, src->cols, src->rows, s->x, s->y);
    return s->label;
}

void cluttered_batch(float *out, int *labels, const ImageSet *src, const ClutterConfig *c,
                     uint64_t seed, const long *idx, int B) {
    for (int b = 0; b < B; b++)
        labels[b] = cluttered_image(out + (size_t)b * c->W * c->H, NULL, src, c, seed, idx[b]);
}

typedef struct {
    float *out;
    int *labels;
    const ImageSet *src;
    const ClutterConfig *c;
    uint64_t seed;
    const long *idx;
    int B;
} BatchPart;

static void *batch_part_run(void *arg) {
    BatchPart *p = arg;
    cluttered_batch(p->out, p->labels, p->src, p->c, p->seed, p->idx, p->B);
    return NULL;
}

void cluttered_batch_threads(float *out, int *labels, const ImageSet *src, const ClutterConfig *c,
                             uint64_t seed, const long *idx, int B, int threads) {
    enum { MAX_PARTS = 64 };
    threads = threads < 1 ? 1 : threads > MAX_PARTS ? MAX_PARTS : threads > B ? B : threads;
    BatchPart parts[MAX_PARTS];
    pthread_t th[MAX_PARTS];
    for (int k = 0, s = 0; k < threads; k++) {
        int nk = B / threads + (k < B % threads);
        parts[k] = (BatchPart){out + (size_t)s * c->W * c->H, labels + s, src, c, seed, idx + s, nk};
        s += nk;
    }
    for (int k = 1; k < threads; k++)
        CHECK(pthread_create(&th[k], NULL, batch_part_run, &parts[k]) == 0, "pthread_create");
    batch_part_run(&parts[0]);
    for (int k = 1; k < threads; k++) pthread_join(th[k], NULL);
}

int cluttered_write_folder(const char *dir, const ImageSet *src, const ClutterConfig *c,
                           uint64_t seed, int count, Error *err) {
    if (make_dirs(dir, err)) return -1;
    char path[1200];
    snprintf(path, sizeof path, "%s/labels.txt", dir);
    FILE *labels = fopen(path, "w");
    if (!labels) return error_set(err, "%s: %s", path, strerror(errno));
    float *img = xmalloc(sizeof(float) * (size_t)c->W * c->H);
    int rc = 0;
    for (int i = 0; i < count && rc == 0; i++) {
        int label = cluttered_image(img, NULL, src, c, seed, i);
        snprintf(path, sizeof path, "%s/%05d.png", dir, i);
        rc = write_png_grey(path, img, c->H, c->W, err);
        if (rc == 0 && fprintf(labels, "%05d.png %d\n", i, label) < 0)
            rc = error_set(err, "%s/labels.txt: %s", dir, strerror(errno));
    }
    free(img);
    if (fclose(labels) != 0 && rc == 0) rc = error_set(err, "%s/labels.txt: %s", dir, strerror(errno));
    return rc;
}
