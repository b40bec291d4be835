#include "datasets/mnist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/fileio.h"

static const char *const DIGIT_WORDS[10] = {"zero", "one", "two",   "three", "four",
                                            "five", "six", "seven", "eight", "nine"};
static const char *const FASHION_WORDS[10] = {"top",  "trousers", "pullover", "dress", "coat",
                                              "sandal", "shirt",  "sneaker",  "bag",   "boot"};

const char *mnist_class_word(const char *data, int label) {
    if (!data || label < 0 || label > 9) return NULL;
    if (!strcmp(data, "mnist")) return DIGIT_WORDS[label];
    if (!strcmp(data, "fashion-mnist")) return FASHION_WORDS[label];
    return NULL;
}

static int is_named(const char *data) {
    return !strcmp(data, "mnist") || !strcmp(data, "fashion-mnist");
}

// PATH's labels sibling: in the file name, the last "images" replaced by "labels" and an
// "idx3" after it by "idx1" (the MNIST naming); failing that, "images" replaced alone.
static int labels_sibling(char *out, size_t size, const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *hit = NULL;
    for (const char *p = strstr(base, "images"); p; p = strstr(p + 1, "images")) hit = p;
    if (!hit) return 0;
    int n = snprintf(out, size, "%.*slabels%s", (int)(hit - path), path, hit + 6);
    if (n <= 0 || (size_t)n >= size) return 0;
    char *idx3 = strstr(out + (hit - path), "idx3");
    if (idx3) {
        idx3[3] = '1';
        if (file_exists(out)) return 1;
        idx3[3] = '3';
    }
    return file_exists(out);
}

static int check_images(const Idx *im, const char *path, Error *err) {
    if (im->type != IDX_U8 || im->ndim != 3)
        return error_set(err, "%s: expected uint8 images (N, rows, cols), got type 0x%02x with %d "
                         "dimensions", path, (int)im->type, im->ndim);
    if (im->dims[1] > 4096 || im->dims[2] > 4096)
        return error_set(err, "%s: images of %lld x %lld pixels are too large (4096 max)", path,
                         (long long)im->dims[1], (long long)im->dims[2]);
    return 0;
}

static int check_labels(const Idx *lb, const Idx *im, const char *path, Error *err) {
    if (lb->type != IDX_U8 || lb->ndim != 1)
        return error_set(err, "%s: expected uint8 labels (N), got type 0x%02x with %d dimensions",
                         path, (int)lb->type, lb->ndim);
    if (lb->dims[0] != im->dims[0])
        return error_set(err, "%s: %lld labels for %lld images", path, (long long)lb->dims[0],
                         (long long)im->dims[0]);
    for (size_t i = 0; i < lb->count; i++)
        if (lb->data[i] > 9)
            return error_set(err, "%s: label %d of item %zu is outside 0..9", path, lb->data[i], i);
    return 0;
}

int mnist_load_files(Idx *images, Idx *labels, const char *data, const char *root,
                     int test_file, Error *err) {
    memset(images, 0, sizeof *images);
    memset(labels, 0, sizeof *labels);
    if (!data || !data[0]) return error_set(err, "--data: empty (mnist, fashion-mnist or a PATH)");
    char ipath[1024], lpath[1024];
    int named = is_named(data);
    if (named) {
        const char *r = root ? root : "data";
        const char *pre = test_file ? "t10k" : "train";
        const char *gz = strcmp(data, "mnist") ? ".gz" : "";
        snprintf(ipath, sizeof ipath, "%s/%s/%s-images-idx3-ubyte%s", r, data, pre, gz);
        snprintf(lpath, sizeof lpath, "%s/%s/%s-labels-idx1-ubyte%s", r, data, pre, gz);
        if (!file_exists(ipath))
            return error_set(err, "%s: missing (run `make data` to fetch MNIST and Fashion-MNIST)",
                             ipath);
        if (!file_exists(lpath))
            return error_set(err, "%s: missing (run `make data` to fetch MNIST and Fashion-MNIST)",
                             lpath);
    } else {
        if (!file_exists(data))
            return error_set(err, "--data: '%s' is neither mnist, fashion-mnist nor an existing "
                             "IDX file", data);
        snprintf(ipath, sizeof ipath, "%s", data);
        if (!labels_sibling(lpath, sizeof lpath, data)) lpath[0] = 0;
    }
    if (idx_load(images, ipath, err) || check_images(images, ipath, err)) goto fail;
    if (lpath[0] && (idx_load(labels, lpath, err) || check_labels(labels, images, lpath, err)))
        goto fail;
    return 0;
fail:
    idx_free(images);
    idx_free(labels);
    return -1;
}

// Fills set with items [first, first + n) of the loaded files.
static void make_set(ImageSet *set, const Idx *im, const Idx *lb, int first, int n, Split split,
                     const char *name) {
    memset(set, 0, sizeof *set);
    set->n = n;
    set->channels = 1;
    set->rows = (int)im->dims[1];
    set->cols = (int)im->dims[2];
    set->dim = set->rows * set->cols;
    set->split = split;
    set->first = first;
    snprintf(set->name, sizeof set->name, "%s", name);
    size_t total = (size_t)n * set->dim;
    set->pixels = xmalloc(total);
    memcpy(set->pixels, im->data + (size_t)first * set->dim, total);
    if (split != SPLIT_TRAIN) {
        set->images = xmalloc(total * sizeof(float));
        imageset_copy(set->images, set, 0, n);
    }
    if (lb->data) {
        set->labels = xmalloc((size_t)n * sizeof(int));
        for (int i = 0; i < n; i++) set->labels[i] = lb->data[first + i];
    }
}

int mnist_load_splits(ImageSet *train, ImageSet *valid, ImageSet *test, const char *data,
                      const char *root, Error *err) {
    if (train) memset(train, 0, sizeof *train);
    if (valid) memset(valid, 0, sizeof *valid);
    if (test) memset(test, 0, sizeof *test);
    Idx im, lb;
    if (!data) return error_set(err, "--data: missing (mnist, fashion-mnist or a PATH)");
    if (!is_named(data)) {
        if (mnist_load_files(&im, &lb, data, root, 0, err)) return -1;
        int n = (int)im.dims[0];
        if (n < 2) {
            idx_free(&im);
            idx_free(&lb);
            return error_set(err, "%s: %d image; a train/valid split needs at least 2", data, n);
        }
        int nv = n / 10 > 0 ? n / 10 : 1;
        if (train) make_set(train, &im, &lb, 0, n - nv, SPLIT_TRAIN, data);
        if (valid) make_set(valid, &im, &lb, n - nv, nv, SPLIT_VALID, data);
        if (test) make_set(test, &im, &lb, n - nv, nv, SPLIT_TEST, data);
        idx_free(&im);
        idx_free(&lb);
        return 0;
    }
    if (train || valid) {
        if (mnist_load_files(&im, &lb, data, root, 0, err)) return -1;
        int n = (int)im.dims[0];
        if (n <= MNIST_VALID_COUNT) {
            idx_free(&im);
            idx_free(&lb);
            return error_set(err, "%s: training file has %d images, expected %d", data, n,
                             MNIST_TRAIN_COUNT + MNIST_VALID_COUNT);
        }
        if (train) make_set(train, &im, &lb, 0, n - MNIST_VALID_COUNT, SPLIT_TRAIN, data);
        if (valid)
            make_set(valid, &im, &lb, n - MNIST_VALID_COUNT, MNIST_VALID_COUNT, SPLIT_VALID, data);
        idx_free(&im);
        idx_free(&lb);
    }
    if (test) {
        if (mnist_load_files(&im, &lb, data, root, 1, err)) {
            imageset_free(train);
            imageset_free(valid);
            return -1;
        }
        make_set(test, &im, &lb, 0, (int)im.dims[0], SPLIT_TEST, data);
        idx_free(&im);
        idx_free(&lb);
    }
    return 0;
}

int mnist_load(ImageSet *out, const char *data, const char *root, Split split, Error *err) {
    return mnist_load_splits(split == SPLIT_TRAIN ? out : NULL, split == SPLIT_VALID ? out : NULL,
                             split == SPLIT_TEST ? out : NULL, data, root, err);
}

void imageset_alloc(ImageSet *set, int n, int channels, int rows, int cols, Split split,
                    int first, const char *name) {
    CHECK(n >= 1 && channels >= 1 && rows >= 1 && cols >= 1);
    memset(set, 0, sizeof *set);
    set->n = n;
    set->channels = channels;
    set->rows = rows;
    set->cols = cols;
    set->dim = channels * rows * cols;
    set->split = split;
    set->first = first;
    snprintf(set->name, sizeof set->name, "%s", name);
    set->pixels = xcalloc((size_t)n * set->dim, 1);
}

void imageset_finish(ImageSet *set) {
    if (set->split == SPLIT_TRAIN || set->images) return;
    set->images = xmalloc((size_t)set->n * set->dim * sizeof(float));
    imageset_copy(set->images, set, 0, set->n);
}

void imageset_free(ImageSet *set) {
    if (!set) return;
    free(set->pixels);
    free(set->images);
    free(set->labels);
    memset(set, 0, sizeof *set);
}

// splitmix64 finaliser: spreads (seed, split, index) over the 64-bit seed space.
static uint64_t mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// The float of each grey level, v / 255 (the probability a binarised pixel is 1).
static void level_table(float table[256]) {
    for (int v = 0; v < 256; v++) table[v] = (float)v / 255.0f;
}

void imageset_binarize_fixed(ImageSet *set, uint64_t seed) {
    float p[256];
    level_table(p);
    for (int i = 0; i < set->n; i++) {
        Rng rng;
        rng_seed(&rng, mix64(mix64(seed) ^ ((uint64_t)set->split << 32 | (uint32_t)(set->first + i))));
        uint8_t *x = set->pixels + (size_t)i * set->dim;
        float *f = set->images ? set->images + (size_t)i * set->dim : NULL;
        for (int j = 0; j < set->dim; j++) {
            int on = rng_bernoulli(&rng, p[x[j]]);
            x[j] = on ? 255 : 0;
            if (f) f[j] = (float)on;
        }
    }
}

void imageset_batch(float *out, const ImageSet *set, const int *idx, int B, Rng *rng) {
    float p[256];
    level_table(p);
    for (int b = 0; b < B; b++) {
        CHECK(idx[b] >= 0 && idx[b] < set->n, "image %d of %d", idx[b], set->n);
        const uint8_t *x = set->pixels + (size_t)idx[b] * set->dim;
        float *o = out + (size_t)b * set->dim;
        if (rng) {
            for (int j = 0; j < set->dim; j++) o[j] = (float)rng_bernoulli(rng, p[x[j]]);
        } else {
            for (int j = 0; j < set->dim; j++) o[j] = p[x[j]];
        }
    }
}

void imageset_copy(float *out, const ImageSet *set, int first, int count) {
    CHECK(first >= 0 && count >= 0 && first <= set->n - count, "images [%d, %d) of %d", first,
          first + count, set->n);
    float p[256];
    level_table(p);
    const uint8_t *x = set->pixels + (size_t)first * set->dim;
    for (size_t i = 0; i < (size_t)count * set->dim; i++) out[i] = p[x[i]];
}
