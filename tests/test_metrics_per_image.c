// test_metrics_per_image.c: per-image BLEU (seq/metrics.h metric_bleu_per_image), the list
// coco-caption's bleu_scorer returns beside the corpus score, worked out by hand; and that
// asking for it leaves the corpus figures as they were.
#include <math.h>
#include <stdlib.h>

#include "core/check.h"
#include "seq/metrics.h"
#include "seq/tokenizer.h"
#include "tests/support/hand_corpus.h"
#include "tests/support/test.h"

// bleu_scorer's per-image formula on counts: m (4) clipped matches, g (4) candidate n-grams,
// c the candidate length, r the closest reference length.
static void by_hand(double *out, const double *m, const double *g, double c, double r) {
    const double tiny = 1e-15, small = 1e-9;
    double prod = 1, ratio = (c + tiny) / (r + small);
    for (int k = 0; k < 4; k++) {
        prod *= (m[k] + tiny) / (g[k] + small);
        out[k] = pow(prod, 1.0 / (k + 1));
        if (ratio < 1) out[k] *= exp(1 - 1 / ratio);
    }
}

static void test_bleu_per_image_by_hand(void) {
    // Image 0: clipped 1..4-gram matches 5/6, 3/5, 1/4, 0/3; length 6, closest reference 6.
    // Image 1 ("a dog a dog"): 2/4, 1/3, 0/2, 0/1; length 4, references 5 and 6: r = 5, so
    //   its own brevity penalty exp(1 - 5/4) applies (the corpus has one penalty in all).
    // Image 2: 4/4, 3/3, 2/2, 1/1; references 3 and 5 tie at distance 1: r = 3, no penalty.
    HandCorpus h;
    hand_corpus(&h);
    double per[3][4], want[3][4];
    metric_bleu_per_image(&per[0][0], h.items, 3);
    by_hand(want[0], (double[]){5, 3, 1, 0}, (double[]){6, 5, 4, 3}, 6, 6);
    by_hand(want[1], (double[]){2, 1, 0, 0}, (double[]){4, 3, 2, 1}, 4, 5);
    by_hand(want[2], (double[]){4, 3, 2, 1}, (double[]){4, 3, 2, 1}, 4, 3);
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 4; k++) EXPECT_NEAR(per[i][k], want[i][k], 0, 1e-12);
    // In plain words: image 0's BLEU-1 is 5/6, BLEU-2 sqrt(5/6 * 3/5); image 1's BLEU-1 is
    // 1/2 e^(-1/4); image 2 scores 1 throughout.
    EXPECT_NEAR(per[0][0], 5.0 / 6.0, 0, 1e-9);
    EXPECT_NEAR(per[0][1], sqrt(0.5), 0, 1e-9);
    EXPECT_NEAR(per[1][0], 0.5 * exp(-0.25), 0, 1e-9);
    for (int k = 0; k < 4; k++) EXPECT_NEAR(per[2][k], 1.0, 0, 1e-9);
    EXPECT(per[0][3] < 1e-4 && per[0][3] > 0, "image 0 BLEU-4 = %g (smoothed, not zero)", per[0][3]);
    hand_corpus_free(&h);
}

static void test_bleu_per_image_of_one_image_is_the_corpus_score(void) {
    HandCorpus h;
    hand_corpus(&h);
    for (int i = 0; i < 3; i++) {
        double per[4], corpus[4];
        metric_bleu_per_image(per, &h.items[i], 1);
        metric_bleu(corpus, &h.items[i], 1);
        for (int k = 0; k < 4; k++) EXPECT(per[k] == corpus[k], "image %d BLEU-%d: %.17g vs %.17g", i, k + 1, per[k], corpus[k]);
    }
    hand_corpus_free(&h);
}

static void test_bleu_corpus_unchanged_and_not_the_mean(void) {
    // The corpus score pools counts: matches 11/14, 7/11, 3/8, 1/5, c = 14, r = 14 (no
    // penalty). It is not the mean of the per-image scores.
    HandCorpus h;
    hand_corpus(&h);
    double corpus[4], want[4], per[3][4];
    metric_bleu(corpus, h.items, 3);
    by_hand(want, (double[]){11, 7, 3, 1}, (double[]){14, 11, 8, 5}, 14, 14);
    for (int k = 0; k < 4; k++) EXPECT_NEAR(corpus[k], want[k], 0, 1e-12);
    metric_bleu_per_image(&per[0][0], h.items, 3);
    double mean1 = (per[0][0] + per[1][0] + per[2][0]) / 3;
    EXPECT(fabs(mean1 - corpus[0]) > 1e-3, "mean BLEU-1 %g equals the corpus's %g", mean1, corpus[0]);
    hand_corpus_free(&h);
}

static void test_cider_d_per_image_mean_is_the_corpus_score(void) {
    HandCorpus h;
    hand_corpus(&h);
    double per[3];
    double corpus = metric_cider_d(per, h.items, 3);
    EXPECT_NEAR((per[0] + per[1] + per[2]) / 3, corpus, 0, 1e-12);
    EXPECT(corpus == metric_cider_d(NULL, h.items, 3), "CIDEr-D depends on per_image");
    hand_corpus_free(&h);
}

int main(void) {
    RUN(test_bleu_per_image_by_hand);
    RUN(test_bleu_per_image_of_one_image_is_the_corpus_score);
    RUN(test_bleu_corpus_unchanged_and_not_the_mean);
    RUN(test_cider_d_per_image_mean_is_the_corpus_score);
    return test_summary();
}
