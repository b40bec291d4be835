#include "datasets/mnist2.h"

#include <string.h>

#include "core/check.h"
#include "core/rng.h"

// splitmix64 finaliser: spreads (seed, split, index) over the 64-bit seed space.
static uint64_t mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

int mnist2_open(Mnist2 *m, const char *root, uint64_t seed, Error *err) {
    memset(m, 0, sizeof *m);
    m->seed = seed;
    for (int f = 0; f < 2; f++) {
        if (mnist_load_files(&m->images[f], &m->labels[f], "mnist", root, f, err)) {
            mnist2_close(m);
            return -1;
        }
        const Idx *im = &m->images[f];
        int need = f ? 10000 : MNIST_TRAIN_COUNT + MNIST_VALID_COUNT;
        if (im->dims[1] != MNIST2_DIGIT || im->dims[2] != MNIST2_DIGIT || im->dims[0] < need) {
            int d1 = (int)im->dims[1], d2 = (int)im->dims[2], n = (int)im->dims[0];
            mnist2_close(m);
            return error_set(err, "mnist2: MNIST's %s file has %d images of %dx%d, expected %d "
                             "of 28x28", f ? "test" : "training", n, d2, d1, need);
        }
    }
    return 0;
}

void mnist2_close(Mnist2 *m) {
    for (int f = 0; f < 2; f++) idx_free(&m->images[f]), idx_free(&m->labels[f]);
}

int mnist2_count(Split split) {
    int file, first, n;
    mnist2_sources(split, &file, &first, &n);
    return n;
}

void mnist2_sources(Split split, int *file, int *first, int *n) {
    switch (split) {
    case SPLIT_TRAIN: *file = 0, *first = 0, *n = MNIST_TRAIN_COUNT; break;
    case SPLIT_VALID: *file = 0, *first = MNIST_TRAIN_COUNT, *n = MNIST_VALID_COUNT; break;
    default: *file = 1, *first = 0, *n = 10000; break;
    }
}

void mnist2_describe(Mnist2Item *item, const Mnist2 *m, Split split, int i) {
    int file, first, n;
    mnist2_sources(split, &file, &first, &n);
    CHECK(i >= 0 && i < n, "mnist2 %s image %d of %d", split_name(split), i, n);
    Rng rng;
    rng_seed(&rng, mix64(mix64(m->seed) ^ ((uint64_t)split << 32 | (uint32_t)i)));
    const int span = MNIST2_SIZE - MNIST2_DIGIT + 1;
    for (int k = 0; k < 2; k++) {
        item->source[k] = first + (int)rng_below(&rng, (uint32_t)n);
        item->x[k] = (int)rng_below(&rng, span);
        item->y[k] = (int)rng_below(&rng, span);
        item->label[k] = m->labels[file].data[item->source[k]];
    }
}

void mnist2_render(uint8_t *out, Mnist2Item *item, const Mnist2 *m, Split split, int i) {
    Mnist2Item it;
    mnist2_describe(&it, m, split, i);
    const Idx *im = &m->images[split == SPLIT_TEST];
    memset(out, 0, MNIST2_SIZE * MNIST2_SIZE);
    for (int k = 0; k < 2; k++) {
        const uint8_t *d = im->data + (size_t)it.source[k] * MNIST2_DIGIT * MNIST2_DIGIT;
        for (int r = 0; r < MNIST2_DIGIT; r++) {
            uint8_t *o = out + (size_t)(it.y[k] + r) * MNIST2_SIZE + it.x[k];
            for (int c = 0; c < MNIST2_DIGIT; c++) {
                int v = o[c] + d[r * MNIST2_DIGIT + c];
                o[c] = (uint8_t)(v > 255 ? 255 : v);
            }
        }
    }
    if (item) *item = it;
}

void mnist2_load(ImageSet *set, const Mnist2 *m, Split split, int count) {
    int n = mnist2_count(split);
    if (count > 0 && count < n) n = count;
    imageset_alloc(set, n, 1, MNIST2_SIZE, MNIST2_SIZE, split, 0, "mnist2");
    for (int i = 0; i < n; i++)
        mnist2_render(set->pixels + (size_t)i * set->dim, NULL, m, split, i);
    imageset_finish(set);
}
