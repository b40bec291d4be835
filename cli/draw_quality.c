// draw_quality.c: DRAW's samples judged by a classifier (cli/draw_quality.h).
#include "cli/draw_quality.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/binomial.h"
#include "core/check.h"
#include "core/rng.h"
#include "datasets/mnist2.h"

void sample_quality_add(SampleQualityCounts *n, const float *probs, const int *asked, int B,
                        int K) {
    CHECK(K >= 2 && K <= SAMPLE_QUALITY_MAX_CLASSES, "%d classes", K);
    CHECK(!n->classes || n->classes == K, "%d classes, then %d", n->classes, K);
    n->classes = K;
    if (asked) n->conditional = 1;
    for (int b = 0; b < B; b++) {
        const float *pb = probs + (size_t)b * K;
        int best = 0;
        for (int k = 1; k < K; k++) best = pb[k] > pb[best] ? k : best;
        n->n++;
        n->legible += pb[best] >= (float)SAMPLE_QUALITY_CONFIDENCE;  // a float 0.9 counts
        n->predicted[best]++;
        if (asked) {
            CHECK(asked[b] >= 0 && asked[b] < K, "asked class %d of %d", asked[b], K);
            n->asked[asked[b]]++;
            n->matched[asked[b]] += best == asked[b];
            n->confusion[asked[b]][best]++;
        }
    }
}

void sample_quality_add_pairs(SampleQualityCounts *n, const float *probs, int B, int K) {
    sample_quality_add(n, probs, NULL, 2 * B, K);
    for (int b = 0; b < B; b++) {
        int both = 1;
        for (int d = 0; d < 2; d++) {
            const float *pb = probs + (size_t)(2 * b + d) * K;
            float top = pb[0];
            for (int k = 1; k < K; k++) top = pb[k] > top ? pb[k] : top;
            both &= top >= (float)SAMPLE_QUALITY_CONFIDENCE;
        }
        n->pairs++;
        n->pairs_legible += both;
    }
}

void sample_quality_finish(SampleQuality *q, const SampleQualityCounts *n) {
    memset(q, 0, sizeof *q);
    const int K = n->classes;
    q->classes = K;
    q->n = n->n;
    q->conditional = n->conditional;
    q->entropy_max = K > 0 ? log((double)K) : NAN;
    q->legible = n->n ? (double)n->legible / (double)n->n : NAN;
    q->legible_low = q->legible_high = NAN;
    if (n->n) {
        const BinomialInterval ci = binomial_wilson95(n->legible, n->n);
        q->legible_low = ci.low, q->legible_high = ci.high;
    }
    long matched = 0;
    double sq = 0;  // sum_k p_k log^2 p_k
    for (int k = 0; k < K; k++) {
        const double share = n->n ? (double)n->predicted[k] / (double)n->n : 0.0;
        q->predicted_share[k] = share;
        if (share > 0) q->entropy -= share * log(share), sq += share * log(share) * log(share);
        q->match_per_class[k] = n->asked[k] ? (double)n->matched[k] / (double)n->asked[k] : NAN;
        matched += n->matched[k];
    }
    const double var = sq - q->entropy * q->entropy;  // >= 0 but for rounding
    q->entropy_se = n->n ? sqrt(var > 0 ? var / (double)n->n : 0.0) : NAN;
    memcpy(q->confusion, n->confusion, sizeof q->confusion);
    q->match = n->conditional && n->n ? (double)matched / (double)n->n : NAN;
    q->digits = n->pairs ? 2 : 1;
    q->samples = n->pairs ? n->pairs : n->n;
    q->both_legible = n->pairs ? (double)n->pairs_legible / (double)n->pairs : NAN;
    q->both_low = q->both_high = NAN;
    if (n->pairs) {
        const BinomialInterval ci = binomial_wilson95(n->pairs_legible, n->pairs);
        q->both_low = ci.low, q->both_high = ci.high;
    }
}

// Squared distance of pixel (x, y) from centre c (x, y).
static double dist2(int x, int y, const double *c) {
    const double dx = x - c[0], dy = y - c[1];
    return dx * dx + dy * dy;
}

// The ink pixel farthest from c (the first in raster order of equals); 0 with no ink.
static void farthest_ink(double *out, const float *img, int W, int H, const double *c) {
    double best = -1.0;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            if (img[(size_t)y * W + x] >= SAMPLE_QUALITY_INK && dist2(x, y, c) > best)
                best = dist2(x, y, c), out[0] = x, out[1] = y;
}

// Weighted 2-means of the ink on its coordinates into c (4: x0 y0 x1 y1); 0 when no ink.
static int two_means(double *c, const float *img, int W, int H) {
    double mass = 0.0, g[2] = {0.0, 0.0};
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const double v = img[(size_t)y * W + x];
            if (v >= SAMPLE_QUALITY_INK) mass += v, g[0] += v * x, g[1] += v * y;
        }
    if (mass <= 0.0) return 0;
    g[0] /= mass, g[1] /= mass;
    farthest_ink(c, img, W, H, g);
    farthest_ink(c + 2, img, W, H, c);
    for (int it = 0, moved = 1; moved && it < 1000; it++) {
        double m[2] = {0.0, 0.0}, s[4] = {0.0, 0.0, 0.0, 0.0};
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                const double v = img[(size_t)y * W + x];
                if (v < SAMPLE_QUALITY_INK) continue;
                const int k = dist2(x, y, c + 2) < dist2(x, y, c);
                m[k] += v, s[2 * k] += v * x, s[2 * k + 1] += v * y;
            }
        moved = 0;
        for (int k = 0; k < 2; k++) {
            if (m[k] <= 0.0) continue;  // an empty side keeps its centre
            const double nx = s[2 * k] / m[k], ny = s[2 * k + 1] / m[k];
            moved |= nx != c[2 * k] || ny != c[2 * k + 1];
            c[2 * k] = nx, c[2 * k + 1] = ny;
        }
    }
    return 1;
}

// The top-left corner of the D-wide window centred on centre (MNIST's centre of mass at
// (D - 1) / 2 in pixel-centre coordinates), inside [0, side - D].
static int window_start(double centre, int side, int D) {
    long s = lround(centre - (D - 1) / 2.0);
    return s < 0 ? 0 : s > side - D ? side - D : (int)s;
}

void sample_quality_cut_two(float *out, double *centres, const float *img, int W, int H, int D) {
    CHECK(D >= 1 && D <= W && D <= H, "a %dx%d cut of a %dx%d image", D, D, W, H);
    double c[4] = {(W - 1) / 2.0, (H - 1) / 2.0, (W - 1) / 2.0, (H - 1) / 2.0};
    const int ink = two_means(c, img, W, H);
    if (ink && (c[2] < c[0] || (c[2] == c[0] && c[3] < c[1]))) {  // the left digit first
        double t[2] = {c[0], c[1]};
        c[0] = c[2], c[1] = c[3], c[2] = t[0], c[3] = t[1];
    }
    for (int k = 0; k < 2; k++) {
        const int x0 = window_start(c[2 * k], W, D), y0 = window_start(c[2 * k + 1], H, D);
        float *o = out + (size_t)k * D * D;
        for (int r = 0; r < D; r++)
            for (int q = 0; q < D; q++) {
                const int x = x0 + q, y = y0 + r;
                const double own = dist2(x, y, c + 2 * k), other = dist2(x, y, c + 2 * (1 - k));
                // a pixel as near to both goes to both
                o[r * D + q] = !ink || own <= other ? img[(size_t)y * W + x] : 0.0f;
            }
    }
    if (centres) memcpy(centres, c, sizeof c);
}

int draw_quality_digits(const DrawConfig *c, int cls_W, int cls_H) {
    if (draw_channels(c) != 1) return 0;
    if (cls_W == c->W && cls_H == c->H) return 1;
    return c->W == MNIST2_SIZE && c->H == MNIST2_SIZE && !c->classes && cls_W == MNIST2_DIGIT &&
                   cls_H == MNIST2_DIGIT
               ? 2
               : 0;
}

int draw_quality_load_classifier(ClassifyModel *m, const char *path, const DrawConfig *c,
                                 Error *err) {
    if (classify_load_model(m, path, err)) return -1;
    const ClassifyState *s = &m->state;
    const int W = classifier_width(&s->cfg), H = classifier_height(&s->cfg);
    const int K = s->cfg.kind == CLASSIFIER_CNN ? s->cfg.cnn.classes : 0;
    static const char HOW[] = "draw classify train --model cnn --size 28 --fragments 0 makes one";
    int rc = 0;
    if (s->cfg.kind != CLASSIFIER_CNN)
        rc = error_set(err, "%s: a %s classifier; --sample-quality takes a cnn one (%s)", path,
                       classifier_kind_name(s->cfg.kind), HOW);
    else if (!draw_quality_digits(c, W, H) || s->clutter.fragments != 0)
        rc = error_set(err, "%s: a classifier of %dx%d images with %d clutter fragments; the model "
                       "draws %dx%d%s images, which --sample-quality needs a classifier of (or of "
                       "28x28 for a 60x60 two-digit model), without clutter (%s)", path, W, H,
                       s->clutter.fragments, c->W, c->H, draw_channels(c) > 1 ? " colour" : "", HOW);
    else if (K > SAMPLE_QUALITY_MAX_CLASSES || (c->classes && K != c->classes))
        rc = error_set(err, "%s: a classifier of %d classes; the model %s", path, K,
                       c->classes ? "is conditional on a different number of classes"
                                  : "needs at most 64");
    if (rc) classify_model_free(m);
    return rc;
}

// images (B, H W) = sigmoid(c_T): the Bernoulli means of the last canvas.
static void final_means(float *images, const DrawActs *a, const DrawConfig *c, int B) {
    const int IMG = draw_image_size(c);
    const float *cT = draw_at(a, a->canvas, c->T - 1, IMG);
    for (size_t i = 0; i < (size_t)B * IMG; i++) images[i] = (float)(1.0 / (1.0 + exp(-(double)cT[i])));
}

// What judging needs: the classifier's activations for 2 B views, the cut views, labels.
typedef struct {
    const ClassifyModel *cls;
    int digits, B;
    ConvnetActs ca;
    float *views;  // (2 B, 28 28): two-digit images' cut digits
    int *zeros;    // convnet_forward's loss wants labels
} Judge;

static void judge_alloc(Judge *j, const ClassifyModel *cls, const DrawConfig *c, int B) {
    const ConvnetConfig *cc = &cls->state.cfg.cnn;
    j->cls = cls;
    j->B = B;
    j->digits = draw_quality_digits(c, classifier_width(&cls->state.cfg),
                                    classifier_height(&cls->state.cfg));
    CHECK(j->digits == 1 || j->digits == 2, "a classifier the model's images do not fit");
    convnet_acts_alloc(&j->ca, cc, j->digits * B);
    j->views = j->digits == 2 ? xmalloc(sizeof(float) * 2 * (size_t)B * MNIST2_DIGIT * MNIST2_DIGIT)
                              : NULL;
    j->zeros = xcalloc((size_t)j->digits * B, sizeof(int));
}

static void judge_free(Judge *j) {
    convnet_acts_free(&j->ca);
    free(j->views), free(j->zeros);
}

// Classifies nb <= B images (nb, H W) of c's size into n.
static void judge_batch(SampleQualityCounts *n, Judge *j, const float *images, int nb,
                        const DrawConfig *c, const int *asked) {
    const ConvnetConfig *cc = &j->cls->state.cfg.cnn;
    if (j->digits == 1) {
        convnet_forward(&j->ca, &j->cls->p.cnn, cc, images, j->zeros, nb, NULL);
        sample_quality_add(n, j->ca.probs, asked, nb, cc->classes);
        return;
    }
    const size_t V = (size_t)MNIST2_DIGIT * MNIST2_DIGIT;
    for (int b = 0; b < nb; b++)
        sample_quality_cut_two(j->views + 2 * b * V, NULL, images + (size_t)b * draw_image_size(c),
                               c->W, c->H, MNIST2_DIGIT);
    convnet_forward(&j->ca, &j->cls->p.cnn, cc, j->views, j->zeros, 2 * nb, NULL);
    sample_quality_add_pairs(n, j->ca.probs, nb, cc->classes);
}

void draw_images_quality(SampleQuality *q, const float *images, int n, const DrawConfig *c,
                         const ClassifyModel *cls, int B) {
    CHECK(n >= 1 && B >= 1);
    if (B > n) B = n;
    Judge j;
    judge_alloc(&j, cls, c, B);
    SampleQualityCounts counts = {0};
    for (int start = 0; start < n; start += B) {
        const int nb = n - start < B ? n - start : B;
        judge_batch(&counts, &j, images + (size_t)start * draw_image_size(c), nb, c, NULL);
    }
    sample_quality_finish(q, &counts);
    judge_free(&j);
}

void draw_noise_images(float *out, int n, int D, double p, uint64_t seed) {
    CHECK(n >= 0 && D >= 1 && p >= 0.0 && p <= 1.0, "%d noise images of %d pixels, p %g", n, D, p);
    Rng rng;
    rng_seed(&rng, seed);
    for (size_t i = 0; i < (size_t)n * D; i++) out[i] = (double)rng_uniform(&rng) < p ? 1.0f : 0.0f;
}

void draw_reconstruction_quality(SampleQuality *q, const DrawParams *p, const DrawConfig *c,
                                 const ClassifyModel *cls, const float *images, const int *labels,
                                 int n, int B, uint64_t seed) {
    CHECK(n >= 1 && B >= 1);
    if (B > n) B = n;
    const int IMG = draw_image_size(c);
    DrawActs acts;
    draw_acts_alloc(&acts, c, B);
    Judge j;
    judge_alloc(&j, cls, c, B);
    float *means = xmalloc(sizeof(float) * (size_t)B * IMG);
    Rng rng;
    rng_seed(&rng, seed);
    SampleQualityCounts counts = {0};
    for (int start = 0; start < n; start += B) {
        const int nb = n - start < B ? n - start : B;
        draw_fill_noise(&acts, c, nb, &rng);
        if (c->classes) memcpy(acts.labels, labels + start, sizeof(int) * (size_t)nb);
        draw_forward(&acts, p, c, images + (size_t)start * IMG, nb, NULL, NULL);
        final_means(means, &acts, c, nb);
        judge_batch(&counts, &j, means, nb, c, NULL);
    }
    sample_quality_finish(q, &counts);
    free(means);
    judge_free(&j);
    draw_acts_free(&acts);
}

// Copies the samples of the batch just judged (j's probabilities) that are not legible into
// how's buffers, while there is room: of a two-digit sample, its less legible digit.
static void keep_illegible(const SampleQualityDraw *how, const Judge *j, const float *images,
                           int nb, int IMG) {
    const int K = j->cls->state.cfg.cnn.classes;
    for (int b = 0; b < nb && *how->kept < how->keep; b++) {
        float top = 2.0f;
        int top_class = 0;
        for (int d = 0; d < j->digits; d++) {
            const float *pb = j->ca.probs + (size_t)(j->digits * b + d) * K;
            int best = 0;
            for (int k = 1; k < K; k++) best = pb[k] > pb[best] ? k : best;
            if (pb[best] < top) top = pb[best], top_class = best;
        }
        if (top >= (float)SAMPLE_QUALITY_CONFIDENCE) continue;
        const int i = (*how->kept)++;
        memcpy(how->illegible + (size_t)i * IMG, images + (size_t)b * IMG, sizeof(float) * IMG);
        how->illegible_top[i] = top;
        how->illegible_class[i] = top_class;
    }
}

void draw_sample_quality(SampleQuality *q, const DrawParams *p, const DrawConfig *c,
                         const ClassifyModel *cls, int N, int B, uint64_t seed,
                         const SampleQualityDraw *how) {
    CHECK(N >= 1 && B >= 1);
    const double temperature = how ? how->temperature : 1.0;
    if (how && how->keep > 0) *how->kept = 0;
    if (B > N) B = N;
    DrawActs acts;
    draw_acts_alloc(&acts, c, B);
    Judge j;
    judge_alloc(&j, cls, c, B);
    float *images = xmalloc(sizeof(float) * (size_t)B * draw_image_size(c));
    Rng rng;
    rng_seed(&rng, seed);
    SampleQualityCounts n = {0};
    for (int start = 0; start < N; start += B) {
        const int nb = N - start < B ? N - start : B;
        for (int b = 0; c->classes && b < nb; b++) acts.labels[b] = (start + b) % c->classes;
        draw_generate_tempered(&acts, p, c, nb, &rng, temperature);
        final_means(images, &acts, c, nb);
        judge_batch(&n, &j, images, nb, c, c->classes ? acts.labels : NULL);
        if (how && how->keep > 0) keep_illegible(how, &j, images, nb, draw_image_size(c));
    }
    sample_quality_finish(q, &n);
    free(images);
    judge_free(&j);
    draw_acts_free(&acts);
}
