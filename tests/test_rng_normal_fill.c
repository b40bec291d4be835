// test_rng_normal_fill.c: the bulk normal generator of core/rng.h against its plain-loop
// reference (libm double log/sqrt/cos/sin on the same words) and against N(0, 1).
//
// Reference agreement: |fast - reference| <= 2e-6 (1 + |reference|) per draw, the float
// polynomials' error with margin (measured worst about 1e-6). Statistical bounds are
// 5 standard deviations of each estimate for 2^20 draws (KS: sqrt(N) D < 2.5, p < 1e-5),
// with a fixed seed, so a run is reproducible and a correct generator passes.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "tests/support/test.h"

#define N (1 << 20)

static void test_fill_matches_reference(void) {
    static const size_t sizes[] = {0, 1, 2, 3, 127, 128, 129, 130, 1001, 200001};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        size_t n = sizes[si];
        float *fast = malloc(sizeof(float) * (n + 1)), *ref = malloc(sizeof(float) * (n + 1));
        Rng a, b;
        rng_seed(&a, 7 + si);
        rng_seed(&b, 7 + si);
        fast[n] = ref[n] = 12345.0f;  // a guard past the end
        rng_normal_fill(&a, fast, n);
        rng_normal_fill_reference(&b, ref, n);
        double worst = 0.0;
        for (size_t i = 0; i < n; i++) {
            double err = fabs((double)fast[i] - ref[i]) / (1.0 + fabs(ref[i]));
            if (!(err <= worst)) worst = err;  // NaN sticks
        }
        EXPECT(worst <= 2e-6, "n=%zu: worst scaled error %.3g", n, worst);
        EXPECT(fast[n] == 12345.0f, "n=%zu: wrote past the end", n);
        // Both consumed the same words, one per pair.
        EXPECT(memcmp(&a, &b, sizeof a) == 0, "n=%zu: streams left in different states", n);
        Rng c;
        rng_seed(&c, 7 + si);
        for (size_t k = 0; k < (n + 1) / 2; k++) rng_u64(&c);
        EXPECT(memcmp(&a, &c, sizeof a) == 0, "n=%zu: not one word per pair", n);
        free(fast);
        free(ref);
    }
}

static void test_fill_is_deterministic(void) {
    float *x = malloc(sizeof(float) * 1000), *y = malloc(sizeof(float) * 1000);
    Rng a, b;
    rng_seed(&a, 99);
    rng_seed(&b, 99);
    rng_normal_fill(&a, x, 1000);
    rng_normal_fill(&b, y, 1000);
    EXPECT(memcmp(x, y, sizeof(float) * 1000) == 0);
    free(x);
    free(y);
}

static int cmp_float(const void *p, const void *q) {
    float a = *(const float *)p, b = *(const float *)q;
    return (a > b) - (a < b);
}

static void test_fill_is_standard_normal(void) {
    float *z = malloc(sizeof(float) * N);
    Rng rng;
    rng_seed(&rng, 2015);
    rng_normal_fill(&rng, z, N);
    double m1 = 0, m2 = 0, m3 = 0, m4 = 0, pair = 0, pair_sq = 0, lag = 0;
    int finite = 1;
    for (size_t i = 0; i < N; i++) {
        double v = z[i];
        finite &= isfinite(v);
        m1 += v;
        m2 += v * v;
        m3 += v * v * v;
        m4 += v * v * v * v;
        if (i % 2 == 0) {
            pair += v * z[i + 1];               // the two halves of a Box-Muller pair
            pair_sq += v * v * z[i + 1] * z[i + 1];
        } else if (i + 1 < N) {
            lag += v * z[i + 1];                // neighbours from different words
        }
    }
    EXPECT(finite, "a non-finite draw");
    m1 /= N; m2 /= N; m3 /= N; m4 /= N;
    double half = N / 2.0;
    EXPECT(fabs(m1) < 5.0 * sqrt(1.0 / N), "mean %.5f", m1);
    EXPECT(fabs(m2 - 1.0) < 5.0 * sqrt(2.0 / N), "E z^2 %.5f", m2);
    EXPECT(fabs(m3) < 5.0 * sqrt(15.0 / N), "E z^3 %.5f", m3);
    EXPECT(fabs(m4 - 3.0) < 5.0 * sqrt(96.0 / N), "E z^4 %.5f", m4);
    EXPECT(fabs(pair / half) < 5.0 * sqrt(1.0 / half), "pair correlation %.5f", pair / half);
    EXPECT(fabs(pair_sq / half - 1.0) < 5.0 * sqrt(8.0 / half), "E z0^2 z1^2 %.5f", pair_sq / half);
    EXPECT(fabs(lag / half) < 5.0 * sqrt(1.0 / half), "lag correlation %.5f", lag / half);
    // Kolmogorov-Smirnov distance to the normal CDF.
    qsort(z, N, sizeof(float), cmp_float);
    double d = 0.0;
    for (size_t i = 0; i < N; i++) {
        double cdf = 0.5 * erfc(-(double)z[i] / sqrt(2.0));
        double lo = cdf - (double)i / N, hi = (double)(i + 1) / N - cdf;
        if (lo > d) d = lo;
        if (hi > d) d = hi;
    }
    EXPECT(sqrt((double)N) * d < 2.5, "KS sqrt(N) D = %.3f", sqrt((double)N) * d);
    free(z);
}

int main(void) {
    RUN(test_fill_matches_reference);
    RUN(test_fill_is_deterministic);
    RUN(test_fill_is_standard_normal);
    return test_summary();
}
