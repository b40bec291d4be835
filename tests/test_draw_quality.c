// Tests of cli/draw_quality's arithmetic on hand-made classifier outputs: the legible share
// (top probability at least 0.9, a float 0.9 included), the entropy of the predicted-class
// histogram against log K, the share and per-class share labelled as the class asked
// for, and the confusion counts (asked k, predicted j); no match for unconditional
// samples; ties to the lower class; counts summed over batches; the legible share's Wilson
// interval and the entropy's delta-method standard error.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/draw_quality.h"
#include "core/binomial.h"
#include "datasets/mnist2.h"
#include "tests/support/test.h"

// Four samples of three classes, asked for 0, 1, 2, 2:
//   [0.95 0.03 0.02] -> 0, legible, asked 0: match
//   [0.2  0.7  0.1 ] -> 1, not legible, asked 1: match
//   [0.05 0.9  0.05] -> 1, legible (0.9 exactly), asked 2: no match
//   [0.1  0.1  0.8 ] -> 2, not legible, asked 2: match
// legible 2/4; histogram (1, 2, 1)/4, entropy 1.5 ln 2; match 3/4, per class 1, 1, 1/2.
static const float PROBS[4 * 3] = {0.95f, 0.03f, 0.02f, 0.2f, 0.7f,  0.1f,
                                   0.05f, 0.9f,  0.05f, 0.1f, 0.1f,  0.8f};
static const int ASKED[4] = {0, 1, 2, 2};

static void test_hand_made_conditional(void) {
    SampleQualityCounts n = {0};
    sample_quality_add(&n, PROBS, ASKED, 4, 3);
    SampleQuality q;
    sample_quality_finish(&q, &n);
    EXPECT(q.n == 4 && q.classes == 3 && q.conditional, "n %ld, classes %d", q.n, q.classes);
    EXPECT_NEAR(q.legible, 0.5, 0, 1e-12);
    EXPECT_NEAR(q.entropy, 1.5 * log(2.0), 0, 1e-12);
    EXPECT_NEAR(q.entropy_max, log(3.0), 0, 1e-12);
    EXPECT_NEAR(q.predicted_share[0], 0.25, 0, 1e-12);
    EXPECT_NEAR(q.predicted_share[1], 0.5, 0, 1e-12);
    EXPECT_NEAR(q.match, 0.75, 0, 1e-12);
    EXPECT_NEAR(q.match_per_class[0], 1.0, 0, 1e-12);
    EXPECT_NEAR(q.match_per_class[1], 1.0, 0, 1e-12);
    EXPECT_NEAR(q.match_per_class[2], 0.5, 0, 1e-12);
    // confusion: asked 0 -> 0, asked 1 -> 1, asked 2 -> 1 and 2
    static const long CONFUSION[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 1, 1}};
    int same = 1;
    for (int k = 0; k < 3; k++)
        for (int j = 0; j < 3; j++) same &= q.confusion[k][j] == CONFUSION[k][j];
    EXPECT(same, "confusion row 2: %ld %ld %ld", q.confusion[2][0], q.confusion[2][1], q.confusion[2][2]);
}

// The same samples in two batches give the same figures.
static void test_batches_add_up(void) {
    SampleQualityCounts one = {0}, two = {0};
    sample_quality_add(&one, PROBS, ASKED, 4, 3);
    sample_quality_add(&two, PROBS, ASKED, 1, 3);
    sample_quality_add(&two, PROBS + 3, ASKED + 1, 3, 3);
    SampleQuality a, b;
    sample_quality_finish(&a, &one);
    sample_quality_finish(&b, &two);
    EXPECT(a.legible == b.legible && a.entropy == b.entropy && a.match == b.match,
           "one batch %g %g %g, two %g %g %g", a.legible, a.entropy, a.match, b.legible, b.entropy,
           b.match);
    EXPECT(memcmp(a.confusion, b.confusion, sizeof a.confusion) == 0, "confusion differs");
}

// Unconditional: no match; one class for everything: entropy 0; every class equally often:
// log K; a tie goes to the lower class; a class nobody asked for has no per-class share.
static void test_edges(void) {
    SampleQualityCounts n = {0};
    sample_quality_add(&n, PROBS, NULL, 1, 3);
    sample_quality_add(&n, PROBS, NULL, 1, 3);
    SampleQuality q;
    sample_quality_finish(&q, &n);
    EXPECT(!q.conditional && isnan(q.match), "unconditional match %g", q.match);
    EXPECT(q.entropy == 0.0 && q.legible == 1.0, "entropy %g, legible %g", q.entropy, q.legible);
    float uniform[4 * 4] = {0};
    for (int k = 0; k < 4; k++) uniform[k * 4 + k] = 1.0f;
    SampleQualityCounts u = {0};
    sample_quality_add(&u, uniform, NULL, 4, 4);
    sample_quality_finish(&q, &u);
    EXPECT_NEAR(q.entropy, log(4.0), 0, 1e-12);
    const float tie[2] = {0.5f, 0.5f};
    const int asked1[1] = {1};
    SampleQualityCounts t = {0};
    sample_quality_add(&t, tie, asked1, 1, 2);
    sample_quality_finish(&q, &t);
    EXPECT(q.predicted_share[0] == 1.0 && q.match == 0.0 && q.legible == 0.0,
           "tie: shares %g %g, match %g", q.predicted_share[0], q.predicted_share[1], q.match);
    EXPECT(isnan(q.match_per_class[0]) && q.match_per_class[1] == 0.0, "per class %g %g",
           q.match_per_class[0], q.match_per_class[1]);
}

// The intervals: legible 2 of 4 -> Wilson's [0.150039, 0.849961] (worked by hand from
// (p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n), z 1.959964); the histogram
// (1/4, 1/2, 1/4): sum p log^2 p = 2.5 ln^2 2 and H = 1.5 ln 2, so the delta method's
// variance (2.5 - 2.25) ln^2 2 / 4 and standard error 0.25 ln 2; one class for all: 0.
static void test_intervals(void) {
    SampleQualityCounts n = {0};
    sample_quality_add(&n, PROBS, NULL, 4, 3);
    SampleQuality q;
    sample_quality_finish(&q, &n);
    const BinomialInterval ci = binomial_wilson95(2, 4);
    EXPECT_NEAR(q.legible_low, ci.low, 0, 1e-12);
    EXPECT_NEAR(q.legible_high, ci.high, 0, 1e-12);
    EXPECT_NEAR(q.legible_low, 0.150039, 0, 1e-6);
    EXPECT_NEAR(q.legible_high, 0.849961, 0, 1e-6);
    EXPECT_NEAR(q.entropy_se, 0.25 * log(2.0), 0, 1e-12);
    SampleQualityCounts one = {0};
    sample_quality_add(&one, PROBS, NULL, 1, 3);
    sample_quality_add(&one, PROBS, NULL, 1, 3);
    sample_quality_finish(&q, &one);
    EXPECT(q.entropy_se == 0.0 && q.legible_high == 1.0 && q.legible_low < 1.0,
           "one class: se %g, legible [%g, %g]", q.entropy_se, q.legible_low, q.legible_high);
}

// Two-digit samples: rows 2b, 2b + 1 are sample b's digits; both legible for sample 0 only
// (sample 1's second digit at 0.89 is not); the digit figures count 4 digits.
static void test_pairs(void) {
    static const float P[4 * 2] = {0.95f, 0.05f, 0.9f, 0.1f, 0.99f, 0.01f, 0.11f, 0.89f};
    SampleQualityCounts n = {0};
    sample_quality_add_pairs(&n, P, 2, 2);
    SampleQuality q;
    sample_quality_finish(&q, &n);
    EXPECT(q.digits == 2 && q.samples == 2 && q.n == 4, "digits %d, samples %ld, n %ld", q.digits,
           q.samples, q.n);
    EXPECT_NEAR(q.both_legible, 0.5, 0, 1e-12);
    // its Wilson interval over the 2 samples (not the 4 digits): 1 of 2 -> [0.0945312,
    // 0.9054688] by the formula of test_intervals
    EXPECT_NEAR(q.both_low, 0.0945312, 0, 1e-6);
    EXPECT_NEAR(q.both_high, 0.9054688, 0, 1e-6);
    EXPECT_NEAR(q.legible_low, binomial_wilson95(3, 4).low, 0, 1e-12);
    EXPECT_NEAR(q.legible, 0.75, 0, 1e-12);
    EXPECT_NEAR(q.predicted_share[0], 0.75, 0, 1e-12);
    SampleQualityCounts one = {0};  // one-digit samples have no pair figure
    sample_quality_add(&one, P, NULL, 4, 2);
    sample_quality_finish(&q, &one);
    EXPECT(q.digits == 1 && q.samples == 4 && isnan(q.both_legible) && isnan(q.both_low) &&
               isnan(q.both_high), "one digit: %d %ld %g", q.digits, q.samples, q.both_legible);
}

// A 60 x 60 image holding a D x D pattern (pattern k: a ring for 0, a cross for 1, values
// in (0, 1]) with its top-left corner at (x, y); the rest 0.
static void place(float *img, int k, int x, int y) {
    for (int r = 0; r < 28; r++)
        for (int c = 0; c < 28; c++) {
            const int dr = r - 14, dc = c - 14;  // around the box's centre
            float v = 0.0f;
            if (k == 0 && dr * dr + dc * dc >= 36 && dr * dr + dc * dc <= 64) v = 1.0f;
            if (k == 1 && ((dr >= -1 && dr <= 0 && dc >= -8 && dc <= 7) || (dc >= -1 && dc <= 0 && dr >= -8 && dr <= 7)))
                v = 0.8f;
            if (v > 0) img[(y + r) * 60 + x + c] = v;
        }
}

// The views of two patterns far apart are the patterns themselves, each where it sat in
// its box (the window centred on its centre of mass), the left one first whatever order
// they were drawn in; the centres are the patterns' centres of mass.
static void test_cut_separated(void) {
    static float img[60 * 60], want[60 * 60], views[2 * 784];
    memset(img, 0, sizeof img);
    place(img, 1, 31, 4);  // the cross on the right, drawn first
    place(img, 0, 1, 29);  // the ring on the left
    double c[4];
    sample_quality_cut_two(views, c, img, 60, 60, 28);
    // the ring is symmetric about (14, 14) of its box, the cross about (13.5, 13.5)
    EXPECT(fabs(c[0] - 15.0) < 1e-9 && fabs(c[1] - 43.0) < 1e-9, "left centre (%g, %g)", c[0], c[1]);
    EXPECT(fabs(c[2] - 44.5) < 1e-9 && fabs(c[3] - 17.5) < 1e-9, "right centre (%g, %g)", c[2], c[3]);
    for (int k = 0; k < 2; k++) {
        memset(want, 0, sizeof want);
        place(want, k == 0 ? 0 : 1, 0, 0);  // the pattern in the window's own coordinates
        // the window starts at round(centre - 13.5): the ring's (centre 15) at 2, a pixel
        // right of its box, the cross's (centre 44.5) at 31, its box; compare in image
        // coordinates
        const int x0 = (int)lround(c[2 * k] - 13.5), y0 = (int)lround(c[2 * k + 1] - 13.5);
        const int bx = k == 0 ? 1 : 31, by = k == 0 ? 29 : 4;
        int same = 1;
        for (int r = 0; r < 28; r++)
            for (int q = 0; q < 28; q++) {
                const int sr = y0 + r - by, sq = x0 + q - bx;  // in the pattern's box
                const float w = sr >= 0 && sr < 28 && sq >= 0 && sq < 28 ? want[sr * 60 + sq] : 0.0f;
                same &= views[k * 784 + r * 28 + q] == w;
            }
        EXPECT(same, "view %d is not pattern %d", k, k);
    }
}

// A neighbour that reaches into a view is left out of it: two crosses 18 pixels apart,
// each view holds its own cross's ink and none of the other's.
static void test_cut_masks_neighbour(void) {
    static float img[60 * 60], views[2 * 784];
    memset(img, 0, sizeof img);
    place(img, 1, 5, 10);
    place(img, 1, 23, 10);
    double c[4];
    sample_quality_cut_two(views, c, img, 60, 60, 28);
    double ink[2] = {0, 0}, total = 0;
    for (int i = 0; i < 3600; i++) total += img[i];
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 784; i++) ink[k] += views[k * 784 + i];
    EXPECT(fabs(c[2] - c[0] - 18.0) < 1e-9 && fabs(c[1] - c[3]) < 1e-9, "centres (%g, %g), (%g, %g)",
           c[0], c[1], c[2], c[3]);
    EXPECT(fabs(ink[0] - total / 2) < 1e-4 && fabs(ink[1] - total / 2) < 1e-4,
           "views' ink %g and %g of %g", ink[0], ink[1], total);
}

// No ink: both views are the image's centre window (here all zeros but a faint pixel,
// below SAMPLE_QUALITY_INK, which stays in both).
static void test_cut_no_ink(void) {
    static float img[60 * 60], views[2 * 784];
    memset(img, 0, sizeof img);
    img[30 * 60 + 30] = 0.1f;
    double c[4];
    sample_quality_cut_two(views, c, img, 60, 60, 28);
    EXPECT(c[0] == 29.5 && c[2] == 29.5, "centres %g %g", c[0], c[2]);
    // window start round(29.5 - 13.5) = 16: pixel (30, 30) at (14, 14)
    EXPECT(views[14 * 28 + 14] == 0.1f && views[784 + 14 * 28 + 14] == 0.1f, "faint pixel lost");
}

// Real two-digit test images (datasets/mnist2.h, grey levels / 255) whose digits' boxes do
// not overlap: each view holds all of its digit's ink and nothing of the other's, in a
// window within 3 pixels of the digit's known box, the left digit first (MNIST centres a
// digit's mass in its box, so the window centred on the mass is near the box). Pairs whose
// boxes overlap are what the cut cannot undo; they are not asked for here.
static void test_cut_real_pairs(void) {
    Mnist2 m;
    Error err = {{0}};
    const int opened = mnist2_open(&m, "data", MNIST2_DEFAULT_SEED, &err) == 0;
    EXPECT(opened, "mnist2_open: %s", err.msg);
    if (!opened) return;
    static uint8_t px[60 * 60];
    static float img[60 * 60], views[2 * 784];
    int apart = 0, whole = 0, near_box = 0;
    for (int i = 0; i < 2000; i++) {
        Mnist2Item it;
        mnist2_render(px, &it, &m, SPLIT_TEST, i);
        if (abs(it.x[0] - it.x[1]) < 28 && abs(it.y[0] - it.y[1]) < 28) continue;
        apart++;
        for (int p = 0; p < 3600; p++) img[p] = px[p] / 255.0f;
        double c[4];
        sample_quality_cut_two(views, c, img, 60, 60, 28);
        // the known digit k that view v holds: the one whose box centre is nearer
        int ok = 1, close = 1;
        for (int v = 0; v < 2; v++) {
            const double d0 = hypot(it.x[0] + 13.5 - c[2 * v], it.y[0] + 13.5 - c[2 * v + 1]);
            const double d1 = hypot(it.x[1] + 13.5 - c[2 * v], it.y[1] + 13.5 - c[2 * v + 1]);
            const int k = d1 < d0;
            const uint8_t *d = m.images[1].data + (size_t)it.source[k] * 784;
            double mass = 0, got = 0;
            for (int p = 0; p < 784; p++) mass += d[p] / 255.0, got += views[v * 784 + p];
            ok &= fabs(got - mass) < 1e-3;
            const int x0 = (int)lround(c[2 * v] - 13.5), y0 = (int)lround(c[2 * v + 1] - 13.5);
            close &= abs(x0 - it.x[k]) <= 3 && abs(y0 - it.y[k]) <= 3;
        }
        whole += ok, near_box += close;
        EXPECT(c[0] < c[2] || (c[0] == c[2] && c[1] <= c[3]), "image %d: the right digit first", i);
    }
    mnist2_close(&m);
    printf("  %d of 2000 test images with boxes apart: views whole %d, windows near the box %d\n",
           apart, whole, near_box);
    EXPECT(apart > 50 && whole >= apart * 0.97 && near_box >= apart * 0.97,
           "of %d pairs apart, %d views whole, %d windows within 3 pixels", apart, whole, near_box);
}

// Noise images: pixels 0 or 1, on with probability p (the share of 200,000 within 5
// standard errors of p), the same images from the same seed and others from another; p 0
// and 1 give all off and all on.
static void test_noise_images(void) {
    enum { N = 250, D = 800 };
    static float a[N * D], b[N * D];
    const double p = 0.13;
    draw_noise_images(a, N, D, p, 7);
    long on = 0, binary = 1;
    for (int i = 0; i < N * D; i++) on += a[i] == 1.0f, binary &= a[i] == 0.0f || a[i] == 1.0f;
    const double share = (double)on / (N * D), se = sqrt(p * (1 - p) / (N * D));
    EXPECT(binary && fabs(share - p) < 5 * se, "share on %g, want %g (se %g)", share, p, se);
    draw_noise_images(b, N, D, p, 7);
    EXPECT(!memcmp(a, b, sizeof a), "the same seed gave other images");
    draw_noise_images(b, N, D, p, 8);
    EXPECT(memcmp(a, b, sizeof a), "another seed gave the same images");
    draw_noise_images(a, 2, D, 0.0, 1);
    draw_noise_images(b, 2, D, 1.0, 1);
    int ends = 1;
    for (int i = 0; i < 2 * D; i++) ends &= a[i] == 0.0f && b[i] == 1.0f;
    EXPECT(ends, "p 0 and 1");
}

int main(void) {
    RUN(test_intervals);
    RUN(test_hand_made_conditional);
    RUN(test_batches_add_up);
    RUN(test_edges);
    RUN(test_pairs);
    RUN(test_cut_separated);
    RUN(test_cut_masks_neighbour);
    RUN(test_cut_no_ink);
    RUN(test_cut_real_pairs);
    RUN(test_noise_images);
    return test_summary();
}
