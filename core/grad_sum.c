#include "core/grad_sum.h"

#include <pthread.h>

#include "core/check.h"

typedef struct {
    float *dst;
    const float *const *srcs;
    const float *weights;
    int n_src;
    size_t lo, hi;
} GradSumSlice;

static void *slice_run(void *arg) {
    const GradSumSlice *s = arg;
    float *d = s->dst;
    for (size_t i = s->lo; i < s->hi; i++) d[i] = 0.0f;
    for (int k = 0; k < s->n_src; k++) {
        const float w = s->weights[k], *g = s->srcs[k];
        for (size_t i = s->lo; i < s->hi; i++) d[i] += w * g[i];
    }
    return NULL;
}

void grad_sum_threads(float *dst, const float *const *srcs, const float *weights, int n_src,
                      size_t lo, size_t hi, int n_threads) {
    const int k = n_threads < 1 ? 1 : n_threads > GRAD_SUM_MAX_THREADS ? GRAD_SUM_MAX_THREADS
                                                                        : n_threads;
    const size_t n = hi - lo;
    GradSumSlice s[GRAD_SUM_MAX_THREADS];
    pthread_t th[GRAD_SUM_MAX_THREADS];
    for (int t = 0; t < k; t++) {
        s[t] = (GradSumSlice){.dst = dst, .srcs = srcs, .weights = weights, .n_src = n_src};
        s[t].lo = lo + ((n / k * t) & ~(size_t)15);
        s[t].hi = t + 1 == k ? hi : lo + ((n / k * (t + 1)) & ~(size_t)15);
    }
    for (int t = 1; t < k; t++)
        CHECK(pthread_create(&th[t], NULL, slice_run, &s[t]) == 0, "pthread_create");
    slice_run(&s[0]);
    for (int t = 1; t < k; t++) pthread_join(th[t], NULL);
}
