// test_mnist.c: the MNIST-family image sets (datasets/mnist.h) on the real files under
// data/ (`make test` fetches them first, so they are required, not skipped) and on a
// small IDX file this test writes: split sizes, pixel range, labels, the PATH mode with
// and without a labels sibling, missing-file errors, fixed and dynamic binarisation, and
// the byte storage (train has no float copy; floats made from bytes equal pixel / 255 and
// binarise with the same random draws as the float formula p = pixel / 255).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/check.h"
#include "core/rng.h"
#include "datasets/mnist.h"
#include "tests/support/test.h"

#define ROOT "data"

static char tmpdir[256];

static void expect_range(const ImageSet *s) {
    int lo = 255, hi = 0;
    size_t total = (size_t)s->n * s->dim;
    for (size_t i = 0; i < total; i++) {
        if (s->pixels[i] < lo) lo = s->pixels[i];
        if (s->pixels[i] > hi) hi = s->pixels[i];
    }
    EXPECT(lo == 0 && hi == 255, "%s %s: pixel range [%d, %d]", s->name, split_name(s->split),
           lo, hi);
    // Evaluation splits carry floats equal to pixel / 255; train carries none.
    if (s->split == SPLIT_TRAIN) {
        EXPECT(s->images == NULL, "%s: the train split holds a float copy", s->name);
    } else {
        int same = s->images != NULL;
        for (size_t i = 0; same && i < total; i++) same &= s->images[i] == s->pixels[i] / 255.0f;
        EXPECT(same, "%s %s: floats are not pixel / 255", s->name, split_name(s->split));
    }
    int bad = 0;
    for (int i = 0; s->labels && i < s->n; i++) bad += s->labels[i] < 0 || s->labels[i] > 9;
    EXPECT(s->labels && !bad, "%s: labels missing or outside 0..9", s->name);
}

static void check_named_set(const char *name) {
    ImageSet tr, va, te;
    Error err = {{0}};
    EXPECT(mnist_load_splits(&tr, &va, &te, name, ROOT, &err) == 0, "%s", err.msg);
    EXPECT(tr.n == 55000 && va.n == 5000 && te.n == 10000, "%s: %d / %d / %d", name, tr.n, va.n,
           te.n);
    EXPECT(tr.rows == 28 && tr.cols == 28 && tr.dim == 784 && te.dim == 784);
    EXPECT(tr.split == SPLIT_TRAIN && va.split == SPLIT_VALID && te.split == SPLIT_TEST);
    expect_range(&tr), expect_range(&va), expect_range(&te);
    // Every class occurs in every split, none dominates (MNIST and Fashion-MNIST are
    // near-balanced: each class 9..11 % of a split).
    const ImageSet *sets[3] = {&tr, &va, &te};
    for (int k = 0; k < 3; k++) {
        int hist[10] = {0};
        for (int i = 0; i < sets[k]->n; i++) hist[sets[k]->labels[i]]++;
        for (int c = 0; c < 10; c++)
            EXPECT(hist[c] > sets[k]->n / 12 && hist[c] < sets[k]->n / 8, "%s %s class %d: %d",
                   name, split_name(sets[k]->split), c, hist[c]);
    }
    // The single-split loader gives the same valid images.
    ImageSet va2;
    EXPECT(mnist_load(&va2, name, ROOT, SPLIT_VALID, &err) == 0, "%s", err.msg);
    EXPECT(va2.n == va.n && !memcmp(va2.images, va.images, (size_t)va.n * va.dim * 4));
    EXPECT(!memcmp(va2.pixels, va.pixels, (size_t)va.n * va.dim));
    EXPECT(va2.first == 55000 && va.first == 55000 && tr.first == 0);
    imageset_free(&va2);
    imageset_free(&tr), imageset_free(&va), imageset_free(&te);
    EXPECT(tr.pixels == NULL && tr.n == 0, "imageset_free leaves the set empty");
}

static void test_mnist_real_splits(void) { check_named_set("mnist"); }
static void test_fashion_mnist_real_splits(void) { check_named_set("fashion-mnist"); }

static void test_mnist_class_words(void) {
    EXPECT(!strcmp(mnist_class_word("mnist", 7), "seven"));
    EXPECT(!strcmp(mnist_class_word("fashion-mnist", 8), "bag"));
    EXPECT(!strcmp(mnist_class_word("fashion-mnist", 9), "boot"));
    EXPECT(mnist_class_word("mnist", 10) == NULL && mnist_class_word("x.idx", 1) == NULL);
}

static void test_mnist_missing_files_suggest_make_data(void) {
    ImageSet s;
    Error err = {{0}};
    EXPECT(mnist_load(&s, "mnist", "no-such-root", SPLIT_TEST, &err) == -1);
    EXPECT(strstr(err.msg, "no-such-root/mnist/t10k-images-idx3-ubyte: missing") == err.msg,
           "message: %s", err.msg);
    EXPECT(strstr(err.msg, "make data") != NULL, "message: %s", err.msg);
    EXPECT(mnist_load(&s, "fashion-mnist", "no-such-root", SPLIT_TRAIN, &err) == -1);
    EXPECT(strstr(err.msg, "fashion-mnist/train-images-idx3-ubyte.gz: missing") != NULL,
           "message: %s", err.msg);
    EXPECT(mnist_load(&s, "no-such-file.idx", NULL, SPLIT_TRAIN, &err) == -1);
    EXPECT(strstr(err.msg, "--data: 'no-such-file.idx'") == err.msg, "message: %s", err.msg);
    EXPECT(s.images == NULL && s.pixels == NULL);
}

// A 25-image IDX file with a labels sibling: train 23 (90 %), valid 2, test = valid.
static void test_mnist_path_mode(void) {
    char ipath[512], lpath[512];
    snprintf(ipath, sizeof ipath, "%s/tiny-images-idx3-ubyte", tmpdir);
    snprintf(lpath, sizeof lpath, "%s/tiny-labels-idx1-ubyte", tmpdir);
    enum { N = 25, R = 3, C = 4 };
    unsigned char px[N * R * C], lab[N];
    for (int i = 0; i < N * R * C; i++) px[i] = (unsigned char)((i * 53) % 256);
    for (int i = 0; i < N; i++) lab[i] = (unsigned char)(i % 10);
    int64_t idims[3] = {N, R, C}, ldims[1] = {N};
    size_t ilen, llen;
    unsigned char *ib = idx_encode(IDX_U8, 3, idims, px, &ilen);
    unsigned char *lb = idx_encode(IDX_U8, 1, ldims, lab, &llen);
    FILE *fp = fopen(ipath, "wb");
    CHECK(fp && fwrite(ib, 1, ilen, fp) == ilen && fclose(fp) == 0);
    ImageSet tr, va, te;
    Error err = {{0}};
    // Without the labels file first.
    EXPECT(mnist_load_splits(&tr, &va, &te, ipath, NULL, &err) == 0, "%s", err.msg);
    EXPECT(tr.labels == NULL && va.labels == NULL, "labels appeared from nowhere");
    imageset_free(&tr), imageset_free(&va), imageset_free(&te);
    fp = fopen(lpath, "wb");
    CHECK(fp && fwrite(lb, 1, llen, fp) == llen && fclose(fp) == 0);
    EXPECT(mnist_load_splits(&tr, &va, &te, ipath, NULL, &err) == 0, "%s", err.msg);
    EXPECT(tr.n == 23 && va.n == 2 && te.n == 2, "%d / %d / %d", tr.n, va.n, te.n);
    EXPECT(tr.rows == R && tr.cols == C && tr.dim == R * C);
    EXPECT(va.labels && va.labels[0] == 3 && va.labels[1] == 4, "valid labels");
    EXPECT(te.labels && !memcmp(te.images, va.images, sizeof(float) * 2 * R * C),
           "test differs from valid");
    int same = tr.images == NULL;
    float *trf = xmalloc(sizeof(float) * 23 * R * C);
    imageset_copy(trf, &tr, 0, 23);
    for (int i = 0; i < 23 * R * C; i++) same &= tr.pixels[i] == px[i] && trf[i] == px[i] / 255.0f;
    for (int i = 0; i < 2 * R * C; i++) same &= va.images[i] == px[23 * R * C + i] / 255.0f;
    // imageset_copy of a range in the middle.
    imageset_copy(trf, &tr, 5, 3);
    for (int i = 0; i < 3 * R * C; i++) same &= trf[i] == px[5 * R * C + i] / 255.0f;
    EXPECT(same, "pixels are not p / 255 of the file");
    free(trf);
    imageset_free(&tr), imageset_free(&va), imageset_free(&te);
    // A labels file that disagrees in count is an error naming it.
    int64_t bad_dims[1] = {N - 1};
    unsigned char *bad = idx_encode(IDX_U8, 1, bad_dims, lab, &llen);
    fp = fopen(lpath, "wb");
    CHECK(fp && fwrite(bad, 1, llen, fp) == llen && fclose(fp) == 0);
    EXPECT(mnist_load(&tr, ipath, NULL, SPLIT_TRAIN, &err) == -1, "mismatched labels accepted");
    EXPECT(strstr(err.msg, "24 labels for 25 images") != NULL && strstr(err.msg, lpath) == err.msg,
           "message: %s", err.msg);
    unlink(ipath), unlink(lpath);
    free(ib), free(lb), free(bad);
}

static void test_mnist_fixed_binarization_reproducible(void) {
    ImageSet a, b;
    Error err = {{0}};
    EXPECT(mnist_load(&a, "mnist", ROOT, SPLIT_TEST, &err) == 0, "%s", err.msg);
    EXPECT(mnist_load(&b, "mnist", ROOT, SPLIT_TEST, &err) == 0, "%s", err.msg);
    if (!a.images || !b.images) return;
    size_t total = (size_t)a.n * a.dim;
    double grey = 0, ones = 0;
    for (size_t i = 0; i < total; i++) grey += a.images[i];
    imageset_binarize_fixed(&a, MNIST_FIXED_BINARIZE_SEED);
    imageset_binarize_fixed(&b, MNIST_FIXED_BINARIZE_SEED);
    EXPECT(!memcmp(a.images, b.images, total * sizeof(float)), "two loads binarise differently");
    int binary = 1;
    for (size_t i = 0; i < total; i++) binary &= a.images[i] == 0.0f || a.images[i] == 1.0f;
    for (size_t i = 0; i < total; i++) binary &= a.pixels[i] == (a.images[i] ? 255 : 0);
    for (size_t i = 0; i < total; i++) ones += a.images[i];
    EXPECT(binary, "values other than 0 and 1");
    // The sample mean matches the grey mean: 7.84 M Bernoulli draws, sd of the mean of
    // ones < 0.5 / sqrt(7.84e6) = 1.8e-4 per pixel; allow 5e-4 relative to the count.
    EXPECT_NEAR(ones / total, grey / total, 5e-4, 0);
    // Another seed gives another sample.
    ImageSet c;
    EXPECT(mnist_load(&c, "mnist", ROOT, SPLIT_TEST, &err) == 0, "%s", err.msg);
    imageset_binarize_fixed(&c, MNIST_FIXED_BINARIZE_SEED + 1);
    EXPECT(memcmp(a.images, c.images, total * sizeof(float)) != 0, "seed ignored");
    imageset_free(&a), imageset_free(&b), imageset_free(&c);
}

static void test_mnist_dynamic_binarization_per_epoch(void) {
    ImageSet s;
    Error err = {{0}};
    EXPECT(mnist_load(&s, "mnist", ROOT, SPLIT_VALID, &err) == 0, "%s", err.msg);
    if (!s.images) return;
    enum { B = 64 };
    int idx[B];
    for (int i = 0; i < B; i++) idx[i] = (i * 71) % s.n;
    float *e1 = xmalloc(sizeof(float) * B * s.dim), *e2 = xmalloc(sizeof(float) * B * s.dim);
    float *grey = xmalloc(sizeof(float) * B * s.dim), *r1 = xmalloc(sizeof(float) * B * s.dim);
    Rng rng, again;
    rng_seed(&rng, 3);
    rng_seed(&again, 3);
    imageset_batch(e1, &s, idx, B, &rng);  // epoch 1
    imageset_batch(e2, &s, idx, B, &rng);  // epoch 2: the same images, a fresh sample
    imageset_batch(r1, &s, idx, B, &again);
    imageset_batch(grey, &s, idx, B, NULL);
    EXPECT(!memcmp(e1, r1, sizeof(float) * B * s.dim), "same seed, different sample");
    int differ = 0, binary = 1, consistent = 1, exact = 1;
    for (int i = 0; i < B * s.dim; i++) {
        differ += e1[i] != e2[i];
        binary &= (e1[i] == 0.0f || e1[i] == 1.0f);
        // A pixel that is exactly 0 or 1 is sampled as itself.
        if (grey[i] == 0.0f || grey[i] == 1.0f) consistent &= e1[i] == grey[i];
    }
    for (int b = 0; b < B; b++)
        exact &= !memcmp(grey + (size_t)b * s.dim, s.images + (size_t)idx[b] * s.dim,
                         sizeof(float) * s.dim);
    // The sample is the one the float formula gives: one draw per pixel, p = pixel / 255.
    Rng ref;
    rng_seed(&ref, 3);
    int same_draws = 1;
    for (int b = 0; b < B; b++)
        for (int j = 0; j < s.dim; j++)
            same_draws &= e1[(size_t)b * s.dim + j] ==
                          (float)rng_bernoulli(&ref, s.pixels[(size_t)idx[b] * s.dim + j] / 255.0f);
    EXPECT(same_draws, "the byte images binarise with other draws than pixel / 255 would");
    EXPECT(differ > 100, "epochs differ in only %d pixels", differ);
    EXPECT(binary && consistent, "binary %d, consistent %d", binary, consistent);
    EXPECT(exact, "rng = NULL does not copy the grey images");
    free(e1), free(e2), free(grey), free(r1);
    imageset_free(&s);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_mnist_XXXXXX");
    CHECK(mkdtemp(tmpdir), "cannot make a temporary folder");
    RUN(test_mnist_real_splits);
    RUN(test_fashion_mnist_real_splits);
    RUN(test_mnist_class_words);
    RUN(test_mnist_missing_files_suggest_make_data);
    RUN(test_mnist_path_mode);
    RUN(test_mnist_fixed_binarization_reproducible);
    RUN(test_mnist_dynamic_binarization_per_epoch);
    rmdir(tmpdir);
    return test_summary();
}
