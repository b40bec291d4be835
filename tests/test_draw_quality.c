// Tests of cli/draw_quality's arithmetic on hand-made classifier outputs: the legible share
// (top probability at least 0.9, a float 0.9 included), the entropy of the predicted-class
// histogram against log K, the share and per-class share labelled as the class asked
// for, and the confusion counts (asked k, predicted j); no match for unconditional
// samples; ties to the lower class; counts summed over batches; the legible share's Wilson
// interval and the entropy's delta-method standard error.
#include <math.h>
#include <string.h>

#include "cli/draw_quality.h"
#include "core/binomial.h"
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

int main(void) {
    RUN(test_intervals);
    RUN(test_hand_made_conditional);
    RUN(test_batches_add_up);
    RUN(test_edges);
    return test_summary();
}
