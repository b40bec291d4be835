// draw_quality.c: DRAW's samples judged by a classifier (cli/draw_quality.h).
#include "cli/draw_quality.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/binomial.h"
#include "core/check.h"
#include "core/rng.h"

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
    else if (W != c->W || H != c->H || draw_channels(c) != 1 || s->clutter.fragments != 0)
        rc = error_set(err, "%s: a classifier of %dx%d images with %d clutter fragments; the model "
                       "draws %dx%d%s images, which --sample-quality needs a classifier of, without "
                       "clutter (%s)", path, W, H, s->clutter.fragments, c->W, c->H,
                       draw_channels(c) > 1 ? " colour" : "", HOW);
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

void draw_data_quality(SampleQuality *q, const float *images, int n, const ClassifyModel *cls, int B) {
    CHECK(n >= 1 && B >= 1);
    const ConvnetConfig *cc = &cls->state.cfg.cnn;
    if (B > n) B = n;
    ConvnetActs ca;
    convnet_acts_alloc(&ca, cc, B);
    int *zeros = xcalloc((size_t)B, sizeof(int));
    const size_t IMG = (size_t)cc->S * cc->S;
    SampleQualityCounts counts = {0};
    for (int start = 0; start < n; start += B) {
        const int nb = n - start < B ? n - start : B;
        convnet_forward(&ca, &cls->p.cnn, cc, images + (size_t)start * IMG, zeros, nb, NULL);
        sample_quality_add(&counts, ca.probs, NULL, nb, cc->classes);
    }
    sample_quality_finish(q, &counts);
    free(zeros);
    convnet_acts_free(&ca);
}

void draw_reconstruction_quality(SampleQuality *q, const DrawParams *p, const DrawConfig *c,
                                 const ClassifyModel *cls, const float *images, const int *labels,
                                 int n, int B, uint64_t seed) {
    CHECK(n >= 1 && B >= 1);
    const ConvnetConfig *cc = &cls->state.cfg.cnn;
    if (B > n) B = n;
    const int IMG = draw_image_size(c);
    DrawActs acts;
    draw_acts_alloc(&acts, c, B);
    ConvnetActs ca;
    convnet_acts_alloc(&ca, cc, B);
    float *means = xmalloc(sizeof(float) * (size_t)B * IMG);
    int *zeros = xcalloc((size_t)B, sizeof(int));
    Rng rng;
    rng_seed(&rng, seed);
    SampleQualityCounts counts = {0};
    for (int start = 0; start < n; start += B) {
        const int nb = n - start < B ? n - start : B;
        draw_fill_noise(&acts, c, nb, &rng);
        if (c->classes) memcpy(acts.labels, labels + start, sizeof(int) * (size_t)nb);
        draw_forward(&acts, p, c, images + (size_t)start * IMG, nb, NULL, NULL);
        final_means(means, &acts, c, nb);
        convnet_forward(&ca, &cls->p.cnn, cc, means, zeros, nb, NULL);
        sample_quality_add(&counts, ca.probs, NULL, nb, cc->classes);
    }
    sample_quality_finish(q, &counts);
    free(means), free(zeros);
    convnet_acts_free(&ca);
    draw_acts_free(&acts);
}

// Copies the samples of the batch that are not legible into how's buffers, while there is room.
static void keep_illegible(const SampleQualityDraw *how, const float *images, const float *probs,
                           int nb, int K, int IMG) {
    for (int b = 0; b < nb && *how->kept < how->keep; b++) {
        const float *pb = probs + (size_t)b * K;
        int best = 0;
        for (int k = 1; k < K; k++) best = pb[k] > pb[best] ? k : best;
        if (pb[best] >= (float)SAMPLE_QUALITY_CONFIDENCE) continue;
        const int i = (*how->kept)++;
        memcpy(how->illegible + (size_t)i * IMG, images + (size_t)b * IMG, sizeof(float) * IMG);
        how->illegible_top[i] = pb[best];
        how->illegible_class[i] = best;
    }
}

void draw_sample_quality(SampleQuality *q, const DrawParams *p, const DrawConfig *c,
                         const ClassifyModel *cls, int N, int B, uint64_t seed,
                         const SampleQualityDraw *how) {
    CHECK(N >= 1 && B >= 1);
    const double temperature = how ? how->temperature : 1.0;
    if (how && how->keep > 0) *how->kept = 0;
    const ConvnetConfig *cc = &cls->state.cfg.cnn;
    if (B > N) B = N;
    DrawActs acts;
    draw_acts_alloc(&acts, c, B);
    ConvnetActs ca;
    convnet_acts_alloc(&ca, cc, B);
    float *images = xmalloc(sizeof(float) * (size_t)B * draw_image_size(c));
    int *zeros = xcalloc((size_t)B, sizeof(int));  // convnet_forward's loss wants labels
    Rng rng;
    rng_seed(&rng, seed);
    SampleQualityCounts n = {0};
    for (int start = 0; start < N; start += B) {
        const int nb = N - start < B ? N - start : B;
        for (int b = 0; c->classes && b < nb; b++) acts.labels[b] = (start + b) % c->classes;
        draw_generate_tempered(&acts, p, c, nb, &rng, temperature);
        final_means(images, &acts, c, nb);
        convnet_forward(&ca, &cls->p.cnn, cc, images, zeros, nb, NULL);
        if (how && how->keep > 0) keep_illegible(how, images, ca.probs, nb, cc->classes, draw_image_size(c));
        sample_quality_add(&n, ca.probs, c->classes ? acts.labels : NULL, nb, cc->classes);
    }
    sample_quality_finish(q, &n);
    free(images), free(zeros);
    convnet_acts_free(&ca);
    draw_acts_free(&acts);
}
