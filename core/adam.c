#include "core/adam.h"

#include <math.h>
#include <pthread.h>

#include "core/check.h"

AdamConfig adam_defaults(float lr) {
    return (AdamConfig){.lr = lr, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.0f};
}

// Kingma & Ba 2015, Algorithm 1, with the bias corrections folded into the step size
// only where it is exact: m_hat = m / (1 - b1^t), v_hat = v / (1 - b2^t),
// p -= lr * (m_hat / (sqrt(v_hat) + eps) + wd * p)   (AdamW, Loshchilov & Hutter 2019:
// the decay is decoupled from the gradient and scaled by the learning rate).
// The update of n parameters from the gradient grad * gs (gs = 1: grad itself, as x * 1 == x
// for every float).
static void adam_update_scaled_(float *param, const float *grad, float gs, float *m, float *v,
                                size_t n, const AdamConfig *cfg, long step, float lr) {
    CHECK(step >= 1, "adam step counts from 1, got %ld", step);
    CHECK(cfg->beta1 >= 0.0f && cfg->beta1 < 1.0f && cfg->beta2 >= 0.0f && cfg->beta2 < 1.0f);
    const float b1 = cfg->beta1, b2 = cfg->beta2, eps = cfg->eps, wd = cfg->weight_decay;
    // pow in double: for large steps b^t underflows to 0 cleanly and the corrections go to 1.
    const float c1 = (float)(1.0 / (1.0 - pow((double)b1, (double)step)));
    const float c2 = (float)(1.0 / (1.0 - pow((double)b2, (double)step)));
    for (size_t i = 0; i < n; i++) {
        float g = grad[i] * gs;
        float mi = b1 * m[i] + (1.0f - b1) * g;
        float vi = b2 * v[i] + (1.0f - b2) * g * g;
        m[i] = mi;
        v[i] = vi;
        float update = (mi * c1) / (sqrtf(vi * c2) + eps);
        param[i] -= lr * (update + wd * param[i]);
    }
}

void adam_update(float *param, const float *grad, float *m, float *v, size_t n,
                 const AdamConfig *cfg, long step, float lr) {
    adam_update_scaled_(param, grad, 1.0f, m, v, n, cfg, step, lr);
}

// Slices of n over up to n_threads threads (at least MIN_SLICE elements each, each a
// multiple of 16 floats but the last): slice_run on each, slice 0 on the caller's thread.
enum { MAX_THREADS = 64, MIN_SLICE = 1 << 16 };

typedef struct {
    float *param, *m, *v;
    const float *grad;
    float gs;
    size_t lo, hi;
    const AdamConfig *cfg;
    long step;
    float lr;
    double sumsq;  // grad_sumsq's part
} AdamSlice;

static void run_slices_(void *(*slice_run)(void *), AdamSlice *proto, size_t n, int n_threads) {
    size_t k = n_threads < 1 ? 1 : n_threads > MAX_THREADS ? MAX_THREADS : (size_t)n_threads;
    if (k > n / MIN_SLICE) k = n / MIN_SLICE ? n / MIN_SLICE : 1;
    AdamSlice s[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    for (size_t t = 0; t < k; t++) {
        s[t] = *proto;
        s[t].lo = (n / k * t) & ~(size_t)15;
        s[t].hi = t + 1 == k ? n : (n / k * (t + 1)) & ~(size_t)15;
    }
    for (size_t t = 1; t < k; t++) started[t] = pthread_create(&th[t], NULL, slice_run, &s[t]) == 0;
    slice_run(&s[0]);
    for (size_t t = 1; t < k; t++) {
        if (started[t])
            pthread_join(th[t], NULL);
        else
            slice_run(&s[t]);
    }
    proto->sumsq = 0.0;
    for (size_t t = 0; t < k; t++) proto->sumsq += s[t].sumsq;
}

static void *adam_slice_run(void *arg) {
    AdamSlice *s = arg;
    adam_update_scaled_(s->param + s->lo, s->grad + s->lo, s->gs, s->m + s->lo, s->v + s->lo,
                        s->hi - s->lo, s->cfg, s->step, s->lr);
    return NULL;
}

void adam_update_scaled_threads(float *param, const float *grad, float grad_scale, float *m,
                                float *v, size_t n, const AdamConfig *cfg, long step, float lr,
                                int n_threads) {
    AdamSlice proto = {.param = param, .m = m, .v = v, .grad = grad, .gs = grad_scale, .cfg = cfg,
                       .step = step, .lr = lr};
    run_slices_(adam_slice_run, &proto, n, n_threads);
}

void adam_update_threads(float *param, const float *grad, float *m, float *v, size_t n,
                         const AdamConfig *cfg, long step, float lr, int n_threads) {
    adam_update_scaled_threads(param, grad, 1.0f, m, v, n, cfg, step, lr, n_threads);
}

// Sum of (double) g^2 with 8 partial sums, which GCC vectorises (a single sum is one
// dependent chain of additions: 40 ms for the 31 M parameters of Xu et al.'s decoder).
double grad_sumsq(const float *g, size_t n) {
    double acc[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += (double)g[i + j] * (double)g[i + j];
    double s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (; i < n; i++) s += (double)g[i] * (double)g[i];
    return s;
}

static void *sumsq_slice_run(void *arg) {
    AdamSlice *s = arg;
    s->sumsq = grad_sumsq(s->grad + s->lo, s->hi - s->lo);
    return NULL;
}

double grad_sumsq_threads(const float *grad, size_t n, int n_threads) {
    AdamSlice proto = {.grad = grad};
    run_slices_(sumsq_slice_run, &proto, n, n_threads);
    return proto.sumsq;
}

float clip_factor(double norm, float max_norm) {
    return max_norm > 0.0f && norm > max_norm ? (float)(max_norm / norm) : 1.0f;
}

float adam_clip_update_threads(float *param, const float *grad, float *m, float *v, size_t n,
                               const AdamConfig *cfg, long step, float lr, float max_norm,
                               int n_threads) {
    const double norm = sqrt(grad_sumsq_threads(grad, n, n_threads));
    adam_update_scaled_threads(param, grad, clip_factor(norm, max_norm), m, v, n, cfg, step, lr,
                               n_threads);
    return (float)norm;
}

float clip_global_norm(float *grad, size_t n, float max_norm) {
    // grad_sumsq's 8 partial sums vectorise (one chain of n dependent double adds took 1.3 %
    // of the glimpse classifier's training step), and a given vector always gives the same
    // norm.
    double norm = sqrt(grad_sumsq(grad, n));
    if (max_norm > 0.0f && norm > max_norm) {
        float scale = clip_factor(norm, max_norm);
        for (size_t i = 0; i < n; i++) grad[i] *= scale;
    }
    return (float)norm;
}

float lr_exponential(float base, float decay, long decay_steps, long step) {
    if (decay_steps <= 0) return base;
    CHECK(decay > 0.0f && decay <= 1.0f, "lr decay must be in (0, 1], got %g", (double)decay);
    return (float)(base * pow((double)decay, (double)step / (double)decay_steps));
}

float lr_noam(float peak, long warmup, long step) {
    CHECK(warmup >= 1 && step >= 1, "noam: warmup %ld, step %ld", warmup, step);
    const double w = (double)warmup, t = (double)step;
    return (float)(peak * fmin(t / w, sqrt(w / t)));
}

void ema_update(float *avg, const float *param, size_t n, float decay, long step) {
    CHECK(step >= 1 && decay >= 0.0f && decay < 1.0f, "ema: step %ld, decay %g", step, (double)decay);
    const double warm = (1.0 + (double)step) / (10.0 + (double)step);
    const float d = (float)(decay < warm ? decay : warm);
    for (size_t i = 0; i < n; i++) avg[i] = d * avg[i] + (1.0f - d) * param[i];
}
