// grad_sum.h: data-parallel workers' gradients summed into the model's, each weighted by
// its worker's share of the batch (models/classifier.c, models/sat.c).
#ifndef CORE_GRAD_SUM_H
#define CORE_GRAD_SUM_H

#include <stddef.h>

#define GRAD_SUM_MAX_THREADS 64

// dst[lo, hi) = the sum over k < n_src, in k order, of weights[k] * srcs[k][lo, hi), on
// n_threads threads (clamped to 1 .. GRAD_SUM_MAX_THREADS), each over a slice of [lo, hi)
// that starts a multiple of 16 floats from lo. Each element is summed by one thread in the
// same order, so the result is the same bits for any n_threads.
void grad_sum_threads(float *dst, const float *const *srcs, const float *weights, int n_src,
                      size_t lo, size_t hi, int n_threads);

#endif
