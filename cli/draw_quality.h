// draw_quality.h: a measure of DRAW's samples that needs no person (draw eval
// --sample-quality). N samples from the prior (a conditional model's asked for class
// i mod K in turn, so every class the same number of times) are classified by a CNN
// trained on plain 28 x 28 digits (draw classify train --model cnn --size 28 --fragments 0),
// each sample's image being sigmoid(c_T), the Bernoulli means. From the classifier's
// probabilities p_i (K each):
//   legibility  the share of samples whose largest p_i(k) is at least 0.9
//   coverage    the entropy (nats) of the histogram of predicted classes (argmax p_i),
//               against log K (every class predicted equally often); 0 when one class
//               takes everything
//   match       conditional models: the share whose predicted class is the class asked
//               for, overall and per asked class
//   confusion   conditional models: how many samples asked to be class k the classifier
//               labels j, for every k and j (what a class that lags is taken for)
// The figures say how legible and how varied the samples look to that classifier, whose
// own test error bounds how far they can be trusted; they are not a likelihood.
//
// Two-digit images (a 60 x 60 grey model, --data mnist2) are cut into their two digits'
// 28 x 28 views first (sample_quality_cut_two) and each view is judged: the figures above
// are then over the 2 N cut digits, and both_legible is the share of samples whose two
// digits are both legible. The cut needs nothing but the image, so the same measure scores
// the model's samples, the test images beside them (draw eval prints both) and noise: the
// known placement of datasets/mnist2.h exists for data only, and the model's attention
// windows only for a model (and are where it looked, not where the digits are).
//
//     SampleQualityCounts n = {0};
//     sample_quality_add(&n, probs, asked, B, K);   // once per batch
//     SampleQuality q;
//     sample_quality_finish(&q, &n);
#ifndef CLI_DRAW_QUALITY_H
#define CLI_DRAW_QUALITY_H

#include <stdint.h>

#include "cli/classify_common.h"
#include "core/error.h"
#include "models/draw.h"

#define SAMPLE_QUALITY_CONFIDENCE 0.9      // legible: the top probability at least this
#define SAMPLE_QUALITY_MAX_CLASSES 64
#define SAMPLE_QUALITY_DEFAULT_N 10000

// Counts over the samples classified so far; zeroed to start.
typedef struct {
    int classes;  // K, set by the first sample_quality_add
    long n, legible;
    long predicted[SAMPLE_QUALITY_MAX_CLASSES];  // samples whose argmax is k
    long asked[SAMPLE_QUALITY_MAX_CLASSES];      // conditional: samples asked to be class k
    long matched[SAMPLE_QUALITY_MAX_CLASSES];    // ... and predicted as k
    // conditional: [k][j] samples asked to be class k and predicted as j
    long confusion[SAMPLE_QUALITY_MAX_CLASSES][SAMPLE_QUALITY_MAX_CLASSES];
    int conditional;  // 1 once a batch came with asked classes
    long pairs, pairs_legible;  // two-digit images: samples, and those with both digits legible
} SampleQualityCounts;

// Adds B samples: probs (B, K), each row a distribution; asked (B) the class each sample
// was asked to be, or NULL (unconditional). Ties in the argmax go to the lower class.
void sample_quality_add(SampleQualityCounts *n, const float *probs, const int *asked, int B,
                        int K);
// Adds B two-digit samples: probs (2 B, K), rows 2b and 2b + 1 sample b's two cut digits
// (counted as 2 B digits by the figures above, unconditionally).
void sample_quality_add_pairs(SampleQualityCounts *n, const float *probs, int B, int K);

// The cut of a two-digit image img (H, W; intensities in [0, 1]) into two D x D views, out
// (2, D, D), the left digit (smaller centre column; then row) first. The ink, the pixels of
// at least SAMPLE_QUALITY_INK, weighted by intensity, is split in two by 2-means on the
// pixel coordinates (started from the ink pixel farthest from the ink's centre of mass and
// the one farthest from that; Lloyd's iterations until no pixel changes side). View k is
// the D x D window centred on cluster k's centre of mass (where MNIST centres a digit's
// mass in its box), moved inside the image, holding the pixels nearer that centre than the
// other (every pixel of the image, faint ones too; the rest 0), so a neighbour that reaches
// into the window is left out. centres (4, may be NULL): x0 y0 x1 y1, the two centres
// (image coordinates, pixel centres at integers). Without ink both views are the window at
// the image centre. Two digits drawn over each other, or one digit alone, are cut as
// two-means cuts them: the judge then sees halves and overlaps, which score low.
#define SAMPLE_QUALITY_INK 0.25
void sample_quality_cut_two(float *out, double *centres, const float *img, int W, int H, int D);

typedef struct {
    int classes;
    long n;
    double legible;               // share in [0, 1]
    double legible_low, legible_high;  // its Wilson 95 % interval (core/binomial.h)
    double entropy, entropy_max;  // nats; entropy_max = log K
    // the entropy's standard error by the delta method over the N samples' multinomial:
    // sqrt((sum_k p_k log^2 p_k - H^2) / N) (0 when one class takes everything)
    double entropy_se;
    int conditional;
    double match;                 // share in [0, 1]; NAN when unconditional
    double match_per_class[SAMPLE_QUALITY_MAX_CLASSES];  // NAN where no sample asked for k
    double predicted_share[SAMPLE_QUALITY_MAX_CLASSES];  // the histogram, normalised
    // conditional: [k][j] samples asked to be class k and predicted as j (counts, so that
    // the row sums are the samples asked for k); zeros when unconditional
    long confusion[SAMPLE_QUALITY_MAX_CLASSES][SAMPLE_QUALITY_MAX_CLASSES];
    int digits;           // digits judged in each sample: 1, or 2 (two-digit images)
    long samples;         // samples (n / digits)
    double both_legible;  // two-digit: share of samples with both digits legible; else NAN
    double both_low, both_high;  // its Wilson 95 % interval over the samples; else NAN
} SampleQuality;

void sample_quality_finish(SampleQuality *q, const SampleQualityCounts *n);

// The classifier at path for a DRAW model of config c: a CNN of c's W x H grey images
// without clutter, of c->classes classes for a conditional model, or for a two-digit model
// (60 x 60 grey, unconditional) a CNN of 28 x 28. Else -1 with one line naming the file
// and what it is.
int draw_quality_load_classifier(ClassifyModel *m, const char *path, const DrawConfig *c,
                                 Error *err);
// Digits judged in each of c's images with a classifier of cls_W x cls_H: 1 when the sizes
// agree, 2 for a 60 x 60 grey unconditional model and a 28 x 28 classifier, else 0.
int draw_quality_digits(const DrawConfig *c, int cls_W, int cls_H);

// How draw_sample_quality draws and what it keeps besides the figures.
typedef struct {
    double temperature;  // z_t ~ N(0, temperature^2 I) (draw_generate_tempered); 1: the paper's
    // With keep > 0: the first keep samples that are not legible (for two-digit images: whose
    // two digits are not both legible), their images (keep, H W) in illegible (sigmoid(c_T),
    // as judged) and the top probability and class of their least legible digit in
    // illegible_top and illegible_class; *kept gets how many there were (at most keep).
    int keep, *kept;
    float *illegible, *illegible_top;
    int *illegible_class;
} SampleQualityDraw;

// N samples of the model in batches of B, from seed; the classifier's verdict in q.
// how NULL: temperature 1, nothing kept.
void draw_sample_quality(SampleQuality *q, const DrawParams *p, const DrawConfig *c,
                         const ClassifyModel *cls, int N, int B, uint64_t seed,
                         const SampleQualityDraw *how);

// The same measure on n images (n, H W) of c's size, in batches of B: the split's own
// images as the model sees them (MNIST binarised once), the measure's ceiling, judged
// unconditionally (never against a label).
void draw_images_quality(SampleQuality *q, const float *images, int n, const DrawConfig *c,
                         const ClassifyModel *cls, int B);

// n noise images (n, H W) of D pixels each into out: every pixel independently 1 with
// probability p, else 0 (from seed): what the judge makes of ink without shape, as dense as
// the data's when p is the data's mean intensity (the measure's floor, judged by
// draw_images_quality like the data).
void draw_noise_images(float *out, int n, int D, double p, uint64_t seed);

// The same measure on the model's reconstructions of n images (sigmoid(c_T) with z from the
// posterior, noise from seed; labels (n) for a conditional model, else NULL), judged
// unconditionally: how legibly the model draws what its encoder saw, beside its samples
// from the prior.
void draw_reconstruction_quality(SampleQuality *q, const DrawParams *p, const DrawConfig *c,
                                 const ClassifyModel *cls, const float *images, const int *labels,
                                 int n, int B, uint64_t seed);

#endif
