// test_core_rng.c: determinism and the distributions of core/rng.h.
//
// Statistical bounds are about 5 standard deviations of the estimate for the stated number
// of draws, so a correct generator fails with probability well under 1e-5 per check, and
// the seeds are fixed, so a run is reproducible.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "tests/support/test.h"

#define DRAWS 100000

static void test_rng_same_seed_same_stream(void) {
    Rng a, b;
    rng_seed(&a, 42);
    rng_seed(&b, 42);
    int same = 1;
    for (int i = 0; i < 1000; i++) same &= rng_u64(&a) == rng_u64(&b);
    EXPECT(same, "two generators seeded 42 diverged");
    EXPECT(rng_uniform(&a) == rng_uniform(&b));
    EXPECT(rng_normal(&a) == rng_normal(&b));
}

static void test_rng_different_seeds_differ(void) {
    Rng a, b;
    rng_seed(&a, 1);
    rng_seed(&b, 2);
    int equal = 0;
    for (int i = 0; i < 1000; i++) equal += rng_u64(&a) == rng_u64(&b);
    EXPECT(equal == 0, "%d equal words out of 1000", equal);
    // Seed 0 must not give a stuck all-zero state.
    Rng z;
    rng_seed(&z, 0);
    uint64_t x = rng_u64(&z), y = rng_u64(&z);
    EXPECT(x != 0 || y != 0);
    EXPECT(x != y);
}

static void test_rng_split_is_independent(void) {
    Rng a;
    rng_seed(&a, 7);
    Rng c = rng_split(&a);
    int equal = 0;
    for (int i = 0; i < 1000; i++) equal += rng_u64(&a) == rng_u64(&c);
    EXPECT(equal == 0, "split stream matches its parent %d times", equal);
}

static void test_rng_uniform_mean_variance(void) {
    Rng r;
    rng_seed(&r, 3);
    double s = 0, ss = 0;
    float lo = 1, hi = 0;
    for (int i = 0; i < DRAWS; i++) {
        float u = rng_uniform(&r);
        if (u < lo) lo = u;
        if (u > hi) hi = u;
        s += u;
        ss += (double)u * u;
    }
    double mean = s / DRAWS, var = ss / DRAWS - mean * mean;
    EXPECT(lo >= 0.0f && hi < 1.0f, "range [%g, %g]", lo, hi);
    EXPECT(lo < 1e-3f && hi > 0.999f, "range [%g, %g] does not fill [0, 1)", lo, hi);
    EXPECT(fabs(mean - 0.5) < 0.005, "mean %g", mean);           // sd 0.0009
    EXPECT(fabs(var - 1.0 / 12) < 0.0015, "variance %g", var);   // sd 0.00024
}

static void test_rng_normal_mean_variance(void) {
    Rng r;
    rng_seed(&r, 4);
    double s = 0, ss = 0, s4 = 0;
    int beyond2 = 0;
    for (int i = 0; i < DRAWS; i++) {
        double x = rng_normal(&r);
        EXPECT(isfinite(x));
        s += x;
        ss += x * x;
        s4 += x * x * x * x;
        beyond2 += fabs(x) > 2.0;
    }
    double mean = s / DRAWS, var = ss / DRAWS - mean * mean;
    EXPECT(fabs(mean) < 0.02, "mean %g", mean);          // sd 0.0032
    EXPECT(fabs(var - 1.0) < 0.03, "variance %g", var);  // sd 0.0045
    EXPECT(fabs(s4 / DRAWS - 3.0) < 0.2, "fourth moment %g", s4 / DRAWS);  // sd 0.03
    // P(|x| > 2) = 0.0455; sd of the fraction 0.00066.
    EXPECT(fabs(beyond2 / (double)DRAWS - 0.0455) < 0.004, "tail fraction %g", beyond2 / (double)DRAWS);
}

static void test_rng_bernoulli_rate(void) {
    Rng r;
    rng_seed(&r, 5);
    const float ps[] = {0.0f, 0.3f, 0.9f, 1.0f};
    for (int k = 0; k < 4; k++) {
        int ones = 0;
        for (int i = 0; i < DRAWS; i++) ones += rng_bernoulli(&r, ps[k]);
        double rate = ones / (double)DRAWS;
        EXPECT(fabs(rate - ps[k]) < 0.008, "p = %g: rate %g", ps[k], rate);  // sd <= 0.0015
        if (ps[k] == 0.0f) EXPECT(ones == 0);
        if (ps[k] == 1.0f) EXPECT(ones == DRAWS);
    }
}

static void test_rng_categorical_frequencies(void) {
    Rng r;
    rng_seed(&r, 6);
    // Unnormalised weights, a zero in the middle that must never be drawn.
    const float p[5] = {1.0f, 2.0f, 0.0f, 3.0f, 4.0f};
    int count[5] = {0};
    for (int i = 0; i < DRAWS; i++) {
        int k = rng_categorical(&r, p, 5);
        EXPECT(k >= 0 && k < 5, "index %d", k);
        if (k >= 0 && k < 5) count[k]++;
    }
    EXPECT(count[2] == 0, "zero-weight category drawn %d times", count[2]);
    for (int k = 0; k < 5; k++) {
        double f = count[k] / (double)DRAWS, want = p[k] / 10.0;
        EXPECT(fabs(f - want) < 0.008, "category %d: %g, want %g", k, f, want);  // sd <= 0.0016
    }
}

static void test_rng_below_uniform(void) {
    Rng r;
    rng_seed(&r, 8);
    int count[6] = {0};
    for (int i = 0; i < DRAWS; i++) {
        uint32_t k = rng_below(&r, 6);
        EXPECT(k < 6, "rng_below(6) = %u", k);
        if (k < 6) count[k]++;
    }
    // Chi-square with 5 degrees of freedom: 99.999th percentile is about 28.
    double chi2 = 0, e = DRAWS / 6.0;
    for (int k = 0; k < 6; k++) chi2 += (count[k] - e) * (count[k] - e) / e;
    EXPECT(chi2 < 28.0, "chi-square %g over 6 bins", chi2);
    for (int i = 0; i < 100; i++) EXPECT(rng_below(&r, 1) == 0);
    // A bound that is not a power of two and above 2^31: the mean is n / 2.
    const uint32_t n = 3000000000u;
    double s = 0;
    for (int i = 0; i < DRAWS; i++) {
        uint32_t k = rng_below(&r, n);
        EXPECT(k < n);
        s += k;
    }
    EXPECT(fabs(s / DRAWS / n - 0.5) < 0.005, "mean / n = %g", s / DRAWS / n);
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

static void test_rng_shuffle_is_permutation(void) {
    Rng r;
    rng_seed(&r, 9);
    enum { N = 100 };
    int a[N], moved = 0;
    for (int i = 0; i < N; i++) a[i] = i;
    rng_shuffle(&r, a, N);
    for (int i = 0; i < N; i++) moved += a[i] != i;
    EXPECT(moved > N / 2, "only %d of %d elements moved", moved, N);
    qsort(a, N, sizeof a[0], cmp_int);
    for (int i = 0; i < N; i++) EXPECT(a[i] == i, "a[%d] = %d after sorting", i, a[i]);
    // Each of 4 elements lands in each of 4 places about a quarter of the time.
    int where[4][4] = {{0}};
    for (int t = 0; t < 40000; t++) {
        int b[4] = {0, 1, 2, 3};
        rng_shuffle(&r, b, 4);
        for (int i = 0; i < 4; i++) where[b[i]][i]++;
    }
    for (int v = 0; v < 4; v++)
        for (int i = 0; i < 4; i++)
            EXPECT(fabs(where[v][i] / 40000.0 - 0.25) < 0.012, "value %d at %d: %d times", v, i,
                   where[v][i]);  // sd 0.0022
    int one[1] = {5};
    rng_shuffle(&r, one, 1);
    EXPECT(one[0] == 5);
    rng_shuffle(&r, one, 0);
}

int main(void) {
    RUN(test_rng_same_seed_same_stream);
    RUN(test_rng_different_seeds_differ);
    RUN(test_rng_split_is_independent);
    RUN(test_rng_uniform_mean_variance);
    RUN(test_rng_normal_mean_variance);
    RUN(test_rng_bernoulli_rate);
    RUN(test_rng_categorical_frequencies);
    RUN(test_rng_below_uniform);
    RUN(test_rng_shuffle_is_permutation);
    return test_summary();
}
