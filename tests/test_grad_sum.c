// test_grad_sum.c: the weighted sum of workers' gradients (core/grad_sum.h) against a
// plain loop, bit for bit on any thread count, and only inside the range asked for.
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/grad_sum.h"
#include "core/rng.h"
#include "tests/support/gradcheck.h"
#include "tests/support/test.h"

enum { N = 1031, SOURCES = 3 };

static void test_matches_plain_loop(void) {
    Rng rng;
    rng_seed(&rng, 5);
    float *src[SOURCES], weights[SOURCES] = {0.5f, 0.3125f, 0.1875f};
    for (int k = 0; k < SOURCES; k++) {
        src[k] = xmalloc(N * sizeof(float));
        fill_uniform(src[k], N, -2.0f, 2.0f, &rng);
    }
    const size_t ranges[3][2] = {{0, N}, {5, 900}, {17, 18}};
    float *want = xmalloc(N * sizeof(float)), *got = xmalloc(N * sizeof(float));
    for (int r = 0; r < 3; r++) {
        const size_t lo = ranges[r][0], hi = ranges[r][1];
        for (size_t i = 0; i < N; i++) want[i] = -7.0f;  // outside [lo, hi): left alone
        for (size_t i = lo; i < hi; i++) {
            want[i] = 0.0f;
            for (int k = 0; k < SOURCES; k++) want[i] += weights[k] * src[k][i];
        }
        for (int threads = 1; threads <= 5; threads++) {
            for (size_t i = 0; i < N; i++) got[i] = -7.0f;
            grad_sum_threads(got, (const float *const *)src, weights, SOURCES, lo, hi, threads);
            EXPECT(!memcmp(got, want, N * sizeof(float)), "range [%zu, %zu), %d threads differ",
                   lo, hi, threads);
        }
    }
    for (int k = 0; k < SOURCES; k++) free(src[k]);
    free(want), free(got);
}

int main(void) {
    RUN(test_matches_plain_loop);
    return test_summary();
}
