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
void adam_update(float *param, const float *grad, float *m, float *v, size_t n,
                 const AdamConfig *cfg, long step, float lr) {
    CHECK(step >= 1, "adam step counts from 1, got %ld", step);
    CHECK(cfg->beta1 >= 0.0f && cfg->beta1 < 1.0f && cfg->beta2 >= 0.0f && cfg->beta2 < 1.0f);
    const float b1 = cfg->beta1, b2 = cfg->beta2, eps = cfg->eps, wd = cfg->weight_decay;
    // pow in double: for large steps b^t underflows to 0 cleanly and the corrections go to 1.
    const float c1 = (float)(1.0 / (1.0 - pow((double)b1, (double)step)));
    const float c2 = (float)(1.0 / (1.0 - pow((double)b2, (double)step)));
    for (size_t i = 0; i < n; i++) {
        float g = grad[i];
        float mi = b1 * m[i] + (1.0f - b1) * g;
        float vi = b2 * v[i] + (1.0f - b2) * g * g;
        m[i] = mi;
        v[i] = vi;
        float update = (mi * c1) / (sqrtf(vi * c2) + eps);
        param[i] -= lr * (update + wd * param[i]);
    }
}

typedef struct {
    float *param, *m, *v;
    const float *grad;
    size_t n;
    const AdamConfig *cfg;
    long step;
    float lr;
} AdamSlice;

static void *adam_slice_run(void *arg) {
    AdamSlice *s = arg;
    adam_update(s->param, s->grad, s->m, s->v, s->n, s->cfg, s->step, s->lr);
    return NULL;
}

void adam_update_threads(float *param, const float *grad, float *m, float *v, size_t n,
                         const AdamConfig *cfg, long step, float lr, int n_threads) {
    enum { MAX_THREADS = 64, MIN_SLICE = 1 << 16 };
    size_t k = n_threads < 1 ? 1 : n_threads > MAX_THREADS ? MAX_THREADS : (size_t)n_threads;
    if (k > n / MIN_SLICE) k = n / MIN_SLICE ? n / MIN_SLICE : 1;
    AdamSlice s[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    for (size_t t = 0; t < k; t++) {
        // Slices of a multiple of 16 floats, the last one takes the rest.
        size_t lo = (n / k * t) & ~(size_t)15, hi = t + 1 == k ? n : (n / k * (t + 1)) & ~(size_t)15;
        s[t] = (AdamSlice){param + lo, m + lo, v + lo, grad + lo, hi - lo, cfg, step, lr};
    }
    for (size_t t = 1; t < k; t++) started[t] = pthread_create(&th[t], NULL, adam_slice_run, &s[t]) == 0;
    adam_slice_run(&s[0]);
    for (size_t t = 1; t < k; t++) {
        if (started[t])
            pthread_join(th[t], NULL);
        else
            adam_slice_run(&s[t]);
    }
}

float clip_global_norm(float *grad, size_t n, float max_norm) {
    // The squares summed in 8 interleaved double partial sums, combined in a fixed order:
    // it vectorises (one chain of n dependent double adds took 1.3 % of the glimpse
    // classifier's training step), and a given vector always gives the same norm.
    double part[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) part[k] += (double)grad[i + k] * grad[i + k];
    double ss = ((part[0] + part[4]) + (part[1] + part[5])) + ((part[2] + part[6]) + (part[3] + part[7]));
    for (; i < n; i++) ss += (double)grad[i] * grad[i];
    double norm = sqrt(ss);
    if (max_norm > 0.0f && norm > max_norm) {
        float scale = (float)(max_norm / norm);
        for (size_t i = 0; i < n; i++) grad[i] *= scale;
    }
    return (float)norm;
}

float lr_exponential(float base, float decay, long decay_steps, long step) {
    if (decay_steps <= 0) return base;
    CHECK(decay > 0.0f && decay <= 1.0f, "lr decay must be in (0, 1], got %g", (double)decay);
    return (float)(base * pow((double)decay, (double)step / (double)decay_steps));
}

void ema_update(float *avg, const float *param, size_t n, float decay, long step) {
    CHECK(step >= 1 && decay >= 0.0f && decay < 1.0f, "ema: step %ld, decay %g", step, (double)decay);
    const double warm = (1.0 + (double)step) / (10.0 + (double)step);
    const float d = (float)(decay < warm ? decay : warm);
    for (size_t i = 0; i < n; i++) avg[i] = d * avg[i] + (1.0f - d) * param[i];
}
