// test_cluttered.c: cluttered translated MNIST (datasets/cluttered.h) on the real MNIST
// files under data/: the digit present and fully inside, the clutter's count and size (the
// image rebuilt from the reported layout with a plain loop equals the generator's, and
// nothing lies outside the boxes), reproducibility as a pure function of (seed, split,
// index), splits disjoint in their source digits, and the PNG folder with its labels.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/check.h"
#include "datasets/cluttered.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"
#include "vision/image.h"

static ImageSet train, valid, test;

// Plain-loop rebuild from the layout: the fragments, then the digit, each added and
// clipped at 1, in double.
static void rebuild(double *img, const ClutterSample *s, const ImageSet *src, const ClutterConfig *c) {
    memset(img, 0, sizeof(double) * c->W * c->H);
    for (int f = 0; f < c->fragments; f++)
        for (int r = 0; r < c->fragment; r++)
            for (int k = 0; k < c->fragment; k++) {
                double v = src->pixels[(size_t)s->frag_src[f] * src->dim +
                                       (s->frag_sy[f] + r) * src->cols + s->frag_sx[f] + k] / 255.0;
                double *o = &img[(s->frag_y[f] + r) * c->W + s->frag_x[f] + k];
                *o = fmin(1.0, *o + v);
            }
    for (int r = 0; r < src->rows; r++)
        for (int k = 0; k < src->cols; k++) {
            double *o = &img[(s->y + r) * c->W + s->x + k];
            *o = fmin(1.0, *o + src->pixels[(size_t)s->digit * src->dim + r * src->cols + k] / 255.0);
        }
}

static int in_box(int px, int py, int x, int y, int w, int h) {
    return px >= x && px < x + w && py >= y && py < y + h;
}

static void check_images(const ImageSet *src, long first_index, int count) {
    ClutterConfig c = clutter_config_default();
    float *img = xmalloc(sizeof(float) * c.W * c.H);
    double *ref = xmalloc(sizeof(double) * c.W * c.H);
    for (int i = 0; i < count; i++) {
        ClutterSample s;
        long index = first_index + i;
        int label = cluttered_image(img, &s, src, &c, 7, index);
        EXPECT(label == src->labels[s.digit] && s.digit == index % src->n, "%s %ld: label %d digit %d",
               split_name(src->split), index, label, s.digit);
        // The digit: a whole 28 x 28 box inside the 100 x 100 image, every pixel at least the
        // digit's own (clutter only adds, clipped at 1).
        EXPECT(s.x >= 0 && s.y >= 0 && s.x + 28 <= c.W && s.y + 28 <= c.H, "digit at %d,%d", s.x, s.y);
        int below = 0;
        for (int r = 0; r < 28; r++)
            for (int k = 0; k < 28; k++)
                below += img[(s.y + r) * c.W + s.x + k] <
                         src->pixels[(size_t)s.digit * 784 + r * 28 + k] / 255.0f;
        EXPECT(below == 0, "%d digit pixels dimmed", below);
        // The clutter: 8 fragments of 8 x 8, inside, from other digits; the image is exactly
        // the rebuild, and zero outside every box.
        for (int f = 0; f < c.fragments; f++) {
            EXPECT(s.frag_src[f] != s.digit && s.frag_src[f] >= 0 && s.frag_src[f] < src->n,
                   "fragment %d from %d (digit %d)", f, s.frag_src[f], s.digit);
            EXPECT(s.frag_x[f] >= 0 && s.frag_x[f] + 8 <= c.W && s.frag_y[f] >= 0 && s.frag_y[f] + 8 <= c.H &&
                       s.frag_sx[f] >= 0 && s.frag_sx[f] + 8 <= 28 && s.frag_sy[f] >= 0 && s.frag_sy[f] + 8 <= 28,
                   "fragment %d out of bounds", f);
        }
        rebuild(ref, &s, src, &c);
        int differ = 0, outside = 0, clutter_pixels = 0;
        for (int py = 0; py < c.H; py++)
            for (int px = 0; px < c.W; px++) {
                float v = img[py * c.W + px];
                differ += fabs(v - ref[py * c.W + px]) > 1e-6;
                int boxed = in_box(px, py, s.x, s.y, 28, 28);
                for (int f = 0; f < c.fragments; f++) {
                    int fb = in_box(px, py, s.frag_x[f], s.frag_y[f], 8, 8);
                    boxed |= fb;
                    clutter_pixels += fb && !in_box(px, py, s.x, s.y, 28, 28) && v > 0;
                }
                outside += !boxed && v != 0.0f;
            }
        EXPECT(differ == 0, "%d pixels differ from the rebuild", differ);
        EXPECT(outside == 0, "%d lit pixels outside the digit and fragment boxes", outside);
        if (i == 0) EXPECT(clutter_pixels > 0, "no visible clutter");
    }
    free(img);
    free(ref);
}

static void test_digit_and_clutter(void) {
    check_images(&train, 0, 40);
    check_images(&train, 55000 * 3L + 11, 10);  // a later epoch
    check_images(&test, 9990, 10);
}

static void test_reproducible(void) {
    ClutterConfig c = clutter_config_default();
    size_t n = (size_t)c.W * c.H;
    float *a = xmalloc(sizeof(float) * n), *b = xmalloc(sizeof(float) * n);
    ClutterSample sa, sb;
    cluttered_image(a, &sa, &test, &c, 5, 123);
    cluttered_image(b, &sb, &test, &c, 5, 123);
    EXPECT(memcmp(a, b, sizeof(float) * n) == 0 && memcmp(&sa, &sb, sizeof sa) == 0, "not reproducible");
    cluttered_image(b, &sb, &test, &c, 6, 123);
    EXPECT(memcmp(a, b, sizeof(float) * n) != 0 && sb.digit == sa.digit, "seed changes nothing");
    cluttered_image(b, &sb, &test, &c, 5, 123 + test.n);
    EXPECT(sb.digit == sa.digit && memcmp(a, b, sizeof(float) * n) != 0,
           "index + n: same digit %d/%d, fresh clutter", sa.digit, sb.digit);
    // The batch is the images one by one.
    long idx[3] = {4, 123, 9};
    int labels[3];
    float *batch = xmalloc(sizeof(float) * 3 * n);
    cluttered_batch(batch, labels, &test, &c, 5, idx, 3);
    EXPECT(memcmp(batch + n, a, sizeof(float) * n) == 0 && labels[1] == sa.label);
    // And on threads (parts of 2 and 1, 1 each, one thread, more threads than images):
    // the same batch bit for bit.
    float *tb = xmalloc(sizeof(float) * 3 * n);
    for (int threads = 1; threads <= 4; threads++) {
        int tl[3] = {-1, -1, -1};
        memset(tb, 0xff, sizeof(float) * 3 * n);
        cluttered_batch_threads(tb, tl, &test, &c, 5, idx, 3, threads);
        EXPECT(memcmp(tb, batch, sizeof(float) * 3 * n) == 0 && memcmp(tl, labels, sizeof tl) == 0,
               "the batch on %d threads differs", threads);
    }
    free(a), free(b), free(batch), free(tb);
}

// Train, valid and test draw digit and clutter from their own MNIST images only: the
// positions in the source files never overlap (train and valid share the training file,
// in disjoint ranges; test has its own file).
static void test_splits_disjoint(void) {
    EXPECT(train.split == SPLIT_TRAIN && valid.split == SPLIT_VALID && test.split == SPLIT_TEST);
    EXPECT(train.first == 0 && train.first + train.n <= valid.first, "train [%d, %d), valid from %d",
           train.first, train.first + train.n, valid.first);
    ClutterConfig c = clutter_config_default();
    float *img = xmalloc(sizeof(float) * c.W * c.H);
    const ImageSet *sets[3] = {&train, &valid, &test};
    for (int k = 0; k < 3; k++) {
        int bad = 0;
        for (long i = 0; i < 200; i++) {
            ClutterSample s;
            cluttered_image(img, &s, sets[k], &c, 3, i * 7919);
            int lo = sets[k]->first, hi = sets[k]->first + sets[k]->n;
            bad += s.digit + lo < lo || s.digit + lo >= hi;
            for (int f = 0; f < c.fragments; f++) bad += s.frag_src[f] < 0 || s.frag_src[f] >= sets[k]->n;
        }
        EXPECT(bad == 0, "%s: %d sources outside the split", split_name(sets[k]->split), bad);
    }
    // The same index in two splits is two different images (the split is in the seed).
    float *other = xmalloc(sizeof(float) * c.W * c.H);
    ClutterSample s1, s2;
    cluttered_image(img, &s1, &train, &c, 3, 17);
    cluttered_image(other, &s2, &valid, &c, 3, 17);
    EXPECT(s1.x != s2.x || s1.y != s2.y || memcmp(img, other, sizeof(float) * c.W * c.H) != 0);
    free(img), free(other);
}

static void test_config_check(void) {
    Error err = {{0}};
    ClutterConfig c = clutter_config_default();
    EXPECT(clutter_config_check(&c, 28, 28, &err) == 0, "%s", err.msg);
    c.W = 20;
    EXPECT(clutter_config_check(&c, 28, 28, &err) != 0 && strstr(err.msg, "does not fit"), "%s", err.msg);
    c = clutter_config_default();
    c.fragment = 29;
    EXPECT(clutter_config_check(&c, 28, 28, &err) != 0, "fragment 29 accepted");
    c = clutter_config_default();
    c.fragments = CLUTTER_MAX_FRAGMENTS + 1;
    EXPECT(clutter_config_check(&c, 28, 28, &err) != 0, "too many fragments accepted");
}

static void test_write_folder(void) {
    char dir[256];
    if (scratch_make(dir, sizeof dir, "test_cluttered")) return test_fail_(__FILE__, __LINE__, "no scratch folder");
    char sub[300], path[400];
    snprintf(sub, sizeof sub, "%s/pngs", dir);
    ClutterConfig c = clutter_config_default();
    Error err = {{0}};
    EXPECT(cluttered_write_folder(sub, &test, &c, CLUTTER_TEST_SEED, 3, &err) == 0, "%s", err.msg);
    snprintf(path, sizeof path, "%s/labels.txt", sub);
    FILE *f = fopen(path, "r");
    EXPECT(f != NULL, "no labels.txt");
    float *img = xmalloc(sizeof(float) * c.W * c.H);
    for (int i = 0; f && i < 3; i++) {
        char name[64];
        int label;
        EXPECT(fscanf(f, "%63s %d", name, &label) == 2, "labels.txt line %d", i + 1);
        int want = cluttered_image(img, NULL, &test, &c, CLUTTER_TEST_SEED, i);
        EXPECT(label == want, "line %d: label %d, want %d", i + 1, label, want);
        snprintf(path, sizeof path, "%s/%s", sub, name);
        Image png;
        EXPECT(image_load(path, &png, 1, &err) == 0, "%s", err.msg);
        EXPECT(png.h == 100 && png.w == 100);
        float worst = 0.0f;
        for (int k = 0; k < c.W * c.H && png.data; k++) worst = fmaxf(worst, fabsf(png.data[k] - img[k]));
        EXPECT(worst <= 0.5f / 255.0f + 1e-6f, "PNG differs from the image by %g", worst);
        image_free(&png);
        unlink(path);
    }
    if (f) fclose(f);
    snprintf(path, sizeof path, "%s/labels.txt", sub);
    unlink(path);
    rmdir(sub);
    scratch_remove(dir);
    free(img);
}

int main(void) {
    Error err = {{0}};
    if (mnist_load_splits(&train, &valid, &test, "mnist", "data", &err)) {
        printf("FAIL load: %s\n", err.msg);
        return 1;
    }
    RUN(test_digit_and_clutter);
    RUN(test_reproducible);
    RUN(test_splits_disjoint);
    RUN(test_config_check);
    RUN(test_write_folder);
    imageset_free(&train), imageset_free(&valid), imageset_free(&test);
    return test_summary();
}
