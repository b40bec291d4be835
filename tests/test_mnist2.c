// test_mnist2.c: two-digit MNIST (datasets/mnist2.h) on the real MNIST files: both digits
// wholly inside the 60 x 60 image, pixels equal to the clipped sum of the two placed
// source digits, reproducible (a pure function of seed, split and index, whatever order
// images are asked for), seeds that matter, splits disjoint in their source digits, the
// ImageSet for `draw --data mnist2`, and a missing data root.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "datasets/mnist2.h"
#include "tests/support/test.h"

#define CHECKED 600  // images per split

static Mnist2 m2;  // opened once in main; read-only afterwards
static int loaded;

static const uint8_t *source_pixels(Split split, int source) {
    return m2.images[split == SPLIT_TEST].data + (size_t)source * MNIST2_DIGIT * MNIST2_DIGIT;
}

static void test_digits_inside_and_pixels_agree(void) {
    if (!loaded) return;
    uint8_t img[MNIST2_SIZE * MNIST2_SIZE], want[MNIST2_SIZE * MNIST2_SIZE];
    for (int s = 0; s < SPLIT_COUNT; s++)
        for (int i = 0; i < CHECKED; i++) {
            Mnist2Item it;
            mnist2_render(img, &it, &m2, (Split)s, i);
            int ink[2] = {0, 0};
            memset(want, 0, sizeof want);
            for (int k = 0; k < 2; k++) {
                EXPECT(it.x[k] >= 0 && it.y[k] >= 0 && it.x[k] + MNIST2_DIGIT <= MNIST2_SIZE &&
                           it.y[k] + MNIST2_DIGIT <= MNIST2_SIZE,
                       "%s %d: digit %d at (%d, %d) is not inside", split_name(s), i, k, it.x[k],
                       it.y[k]);
                const uint8_t *d = source_pixels((Split)s, it.source[k]);
                for (int r = 0; r < MNIST2_DIGIT; r++)
                    for (int c = 0; c < MNIST2_DIGIT; c++) {
                        int o = (it.y[k] + r) * MNIST2_SIZE + it.x[k] + c, v = want[o] + d[r * 28 + c];
                        want[o] = (uint8_t)(v > 255 ? 255 : v);
                        ink[k] += d[r * 28 + c] > 0;
                    }
            }
            EXPECT(ink[0] > 20 && ink[1] > 20, "%s %d: a digit has no ink", split_name(s), i);
            EXPECT(!memcmp(img, want, sizeof img), "%s %d: pixels are not the clipped sum",
                   split_name(s), i);
            Mnist2Item d;
            mnist2_describe(&d, &m2, (Split)s, i);
            EXPECT(!memcmp(&d, &it, sizeof d), "describe and render disagree");
            EXPECT(it.label[0] == m2.labels[s == SPLIT_TEST].data[it.source[0]], "label");
        }
}

static void test_positions_spread(void) {
    if (!loaded) return;
    // Corners take every value of [0, 32] in a few thousand draws, and the two digits of
    // an image are placed independently.
    int seen[33] = {0}, same = 0;
    for (int i = 0; i < 3000; i++) {
        Mnist2Item it;
        mnist2_describe(&it, &m2, SPLIT_TRAIN, i);
        seen[it.x[0]]++, seen[it.y[1]]++;
        same += it.x[0] == it.x[1] && it.y[0] == it.y[1];
    }
    for (int v = 0; v <= 32; v++) EXPECT(seen[v] > 0, "corner %d never drawn", v);
    EXPECT(same < 30, "%d images with both digits at one corner", same);
}

static void test_reproducible_and_seeded(void) {
    if (!loaded) return;
    Mnist2 other;
    Error err = {{0}};
    EXPECT(mnist2_open(&other, "data", m2.seed, &err) == 0, "%s", err.msg);
    uint8_t a[MNIST2_SIZE * MNIST2_SIZE], b[MNIST2_SIZE * MNIST2_SIZE];
    // Another handle, the images asked for backwards: the same pixels.
    for (int i = 99; i >= 0; i--) {
        mnist2_render(a, NULL, &m2, SPLIT_VALID, i);
        mnist2_render(b, NULL, &other, SPLIT_VALID, i);
        EXPECT(!memcmp(a, b, sizeof a), "valid %d differs between two loads", i);
    }
    mnist2_close(&other);
    EXPECT(mnist2_open(&other, "data", m2.seed + 1, &err) == 0, "%s", err.msg);
    int differ = 0;
    for (int i = 0; i < 50; i++) {
        mnist2_render(a, NULL, &m2, SPLIT_TRAIN, i);
        mnist2_render(b, NULL, &other, SPLIT_TRAIN, i);
        differ += memcmp(a, b, sizeof a) != 0;
    }
    EXPECT(differ >= 49, "another seed changed only %d of 50 images", differ);
    mnist2_close(&other);
}

static void test_splits_disjoint(void) {
    if (!loaded) return;
    // Train and valid come from one file in disjoint ranges; test from the other file.
    int file[3], first[3], n[3];
    for (int s = 0; s < 3; s++) mnist2_sources((Split)s, &file[s], &first[s], &n[s]);
    EXPECT(file[0] == 0 && file[1] == 0 && file[2] == 1, "files %d %d %d", file[0], file[1],
           file[2]);
    EXPECT(first[0] + n[0] <= first[1], "train [%d, %d) and valid from %d overlap", first[0],
           first[0] + n[0], first[1]);
    for (int s = 0; s < SPLIT_COUNT; s++) {
        int lo = 1 << 30, hi = -1;
        for (int i = 0; i < mnist2_count((Split)s); i += 7) {
            Mnist2Item it;
            mnist2_describe(&it, &m2, (Split)s, i);
            for (int k = 0; k < 2; k++) {
                lo = it.source[k] < lo ? it.source[k] : lo;
                hi = it.source[k] > hi ? it.source[k] : hi;
            }
        }
        EXPECT(lo >= first[s] && hi < first[s] + n[s], "%s sources [%d, %d] outside [%d, %d)",
               split_name(s), lo, hi, first[s], first[s] + n[s]);
        // The whole range is used, not a corner of it.
        EXPECT(hi - lo > n[s] * 9 / 10, "%s sources span only [%d, %d]", split_name(s), lo, hi);
    }
}

static void test_imageset(void) {
    if (!loaded) return;
    ImageSet set;
    mnist2_load(&set, &m2, SPLIT_TEST, 40);
    EXPECT(set.n == 40 && set.rows == 60 && set.cols == 60 && set.channels == 1 &&
               set.dim == 3600 && set.images && !set.labels,
           "set %d x %dx%dx%d", set.n, set.channels, set.rows, set.cols);
    uint8_t img[MNIST2_SIZE * MNIST2_SIZE];
    mnist2_render(img, NULL, &m2, SPLIT_TEST, 39);
    EXPECT(!memcmp(img, set.pixels + 39 * 3600, sizeof img), "image 39");
    EXPECT(set.images[39 * 3600 + 1234] == img[1234] / 255.0f, "float copy");
    imageset_free(&set);
    mnist2_load(&set, &m2, SPLIT_VALID, 0);
    EXPECT(set.n == 5000, "valid has %d images", set.n);
    imageset_free(&set);
}

static void test_missing_root(void) {
    Mnist2 m;
    Error err = {{0}};
    EXPECT(mnist2_open(&m, "no-such-root", 1, &err) == -1 && strstr(err.msg, "no-such-root") &&
               strstr(err.msg, "make data"),
           "%s", err.msg);
}

int main(void) {
    Error err = {{0}};
    loaded = mnist2_open(&m2, "data", MNIST2_DEFAULT_SEED, &err) == 0;
    if (!loaded) printf("FAIL mnist2_open: %s\n", err.msg);
    RUN(test_digits_inside_and_pixels_agree);
    RUN(test_positions_spread);
    RUN(test_reproducible_and_seeded);
    RUN(test_splits_disjoint);
    RUN(test_imageset);
    RUN(test_missing_root);
    mnist2_close(&m2);
    return loaded ? test_summary() : 1;
}
