// test_activations.c: the vectorisable approximations of core/activations.h (exp_fast,
// sigmoid_fast, tanh_fast) against double-precision libm, and the array forwards built on
// them against the scalar functions and the libm references.
//
// Tolerances are the header's stated bounds, fixed (measured when written: 8.3e-8, 1.9e-7
// and 3.3e-7, with and without fused multiply-add):
//   exp_fast      |got - e^x| <= 1.5e-7 e^x for x in [-87.3, 88.7] (normal results);
//                 <= 1.5e-7 e^x + 2^-149 down to -103.9 (subnormal results); 0 below -104;
//                 +inf above 88.73
//   sigmoid_fast  |got - s| <= 3e-7 s for x >= -87.3; |got - s| <= 2e-7 everywhere
//   tanh_fast     |got - t| <= 4e-7 and <= 4e-7 |t|
//   sigmoid_tanh_fast  |got - s| <= 2e-7 everywhere, got in [0, 1]
// The grid: every 1/1024 over [-110, 110] (225,281 points, exact in float) plus 20,000
// uniform random points in [-30, 30]. The checker must be able to fail: an approximation
// off by 1e-6 relative is caught.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/activations.h"
#include "core/check.h"
#include "core/rng.h"
#include "tests/support/test.h"

#define EXP_RTOL 1.5e-7
#define SIG_RTOL 3e-7
#define SIG_ATOL 2e-7
#define TANH_TOL 4e-7
#define SUBNORMAL_MIN 1.401298464324817e-45  // 2^-149

// Worst errors of f against ref over the grid, in the ranges each bound covers.
typedef struct {
    double rel, abs;  // worst |got - ref| / |ref| and |got - ref| over x in [lo, hi]
    float at_rel, at_abs;
} Worst;

static int grid_size(void) { return 2 * 110 * 1024 + 1 + 20000; }

static float grid_point(int i, Rng *rng) {
    int ng = 2 * 110 * 1024 + 1;
    return i < ng ? (float)(i - 110 * 1024) / 1024.0f : 60.0f * rng_uniform(rng) - 30.0f;
}

static Worst worst_error(float (*f)(float), double (*ref)(double), float lo, float hi) {
    Worst w = {0, 0, 0, 0};
    Rng rng;
    rng_seed(&rng, 11);
    for (int i = 0; i < grid_size(); i++) {
        float x = grid_point(i, &rng);
        if (x < lo || x > hi) continue;
        double want = ref((double)x), got = f(x), err = fabs(got - want);
        if (err > w.abs) w.abs = err, w.at_abs = x;
        if (want != 0.0 && err / fabs(want) > w.rel) w.rel = err / fabs(want), w.at_rel = x;
    }
    return w;
}

static double sigmoid_d(double x) { return 1.0 / (1.0 + exp(-x)); }
static float exp_fast_f(float x) { return exp_fast(x); }
static float sigmoid_fast_f(float x) { return sigmoid_fast(x); }
static float tanh_fast_f(float x) { return tanh_fast(x); }
static float sigmoid_tanh_fast_f(float x) { return sigmoid_tanh_fast(x); }
static float expf_off_by_1e6(float x) { return (float)(exp((double)x) * (1.0 + 1e-6)); }

static void test_checker_can_fail(void) {
    Worst w = worst_error(expf_off_by_1e6, exp, -80.0f, 80.0f);
    EXPECT(w.rel > EXP_RTOL, "a 1e-6 relative error measured as %.3g", w.rel);
    Worst exact = worst_error(exp_fast_f, exp, 0.0f, 0.0f);  // e^0 = 1 exactly
    EXPECT(exact.abs == 0.0, "exp_fast(0) = %.9g", exp_fast(0.0f));
}

static void test_exp_fast_accuracy(void) {
    Worst w = worst_error(exp_fast_f, exp, -87.3f, 88.7f);
    EXPECT(w.rel <= EXP_RTOL, "exp_fast relative error %.3g at x = %.9g", w.rel, w.at_rel);
    // Subnormal results: the bound plus one unit of the smallest subnormal.
    Rng rng;
    rng_seed(&rng, 12);
    int bad = 0;
    float bad_x = 0;
    for (int i = 0; i < grid_size(); i++) {
        float x = grid_point(i, &rng);
        double want = exp((double)x), got = exp_fast(x);
        int ok;
        if (x < -104.0f)
            ok = got == 0.0;
        else if (x > 88.73f)
            ok = isinf(got) && got > 0;
        else if (x < -87.3f)
            ok = fabs(got - want) <= EXP_RTOL * want + SUBNORMAL_MIN;
        else
            continue;
        if (!ok) bad++, bad_x = x;
    }
    EXPECT(bad == 0, "%d points outside the bounds, e.g. x = %.9g: %.9g", bad, bad_x,
           exp_fast(bad_x));
}

static void test_exp_fast_special_values(void) {
    EXPECT(isnan(exp_fast(NAN)) && isnan(exp_fast(-NAN)), "NaN does not propagate");
    EXPECT(exp_fast(INFINITY) == INFINITY, "exp(inf) = %g", exp_fast(INFINITY));
    EXPECT(exp_fast(-INFINITY) == 0.0f, "exp(-inf) = %g", exp_fast(-INFINITY));
    EXPECT(exp_fast(-100.0f) > 0.0f && exp_fast(-100.0f) < 1e-40f, "exp(-100) = %g",
           exp_fast(-100.0f));
    EXPECT(exp_fast(1.0f) > 2.7182816f && exp_fast(1.0f) < 2.7182820f, "e = %.9g",
           exp_fast(1.0f));
}

static void test_sigmoid_fast_accuracy(void) {
    Worst w = worst_error(sigmoid_fast_f, sigmoid_d, -87.3f, 110.0f);
    EXPECT(w.rel <= SIG_RTOL, "sigmoid_fast relative error %.3g at x = %.9g", w.rel, w.at_rel);
    Worst all = worst_error(sigmoid_fast_f, sigmoid_d, -110.0f, 110.0f);
    EXPECT(all.abs <= SIG_ATOL, "sigmoid_fast absolute error %.3g at x = %.9g", all.abs,
           all.at_abs);
    EXPECT(sigmoid_fast(0.0f) == 0.5f, "sigmoid(0) = %.9g", sigmoid_fast(0.0f));
    EXPECT(sigmoid_fast(-100.0f) > 0.0f && sigmoid_fast(-100.0f) < 1e-40f, "sigmoid(-100) = %g",
           sigmoid_fast(-100.0f));
    EXPECT(sigmoid_fast(100.0f) == 1.0f && sigmoid_fast(INFINITY) == 1.0f);
    EXPECT(sigmoid_fast(-INFINITY) == 0.0f && isnan(sigmoid_fast(NAN)));
    // Within [0, 1] everywhere on the grid.
    Rng rng;
    rng_seed(&rng, 13);
    int out = 0;
    for (int i = 0; i < grid_size(); i++) {
        float s = sigmoid_fast(grid_point(i, &rng));
        out += !(s >= 0.0f && s <= 1.0f);
    }
    EXPECT(out == 0, "%d values outside [0, 1]", out);
}

static void test_tanh_fast_accuracy(void) {
    Worst w = worst_error(tanh_fast_f, tanh, -110.0f, 110.0f);
    EXPECT(w.abs <= TANH_TOL, "tanh_fast absolute error %.3g at x = %.9g", w.abs, w.at_abs);
    EXPECT(w.rel <= TANH_TOL, "tanh_fast relative error %.3g at x = %.9g", w.rel, w.at_rel);
    // Odd, exactly; tiny arguments keep their value; NaN propagates.
    Rng rng;
    rng_seed(&rng, 14);
    int odd = 1;
    for (int i = 0; i < grid_size(); i++) {
        float x = grid_point(i, &rng);
        odd &= tanh_fast(-x) == -tanh_fast(x);
    }
    EXPECT(odd, "tanh_fast(-x) != -tanh_fast(x) somewhere");
    EXPECT(fabs(tanh_fast(1e-30f) - 1e-30) <= TANH_TOL * 1e-30 && tanh_fast(0.0f) == 0.0f,
           "tanh(1e-30) = %g", tanh_fast(1e-30f));
    EXPECT(isnan(tanh_fast(NAN)));
    EXPECT(fabs(tanh_fast(INFINITY) - 1.0) <= TANH_TOL && fabs(tanh_fast(-INFINITY) + 1.0) <= TANH_TOL);
}

static void test_sigmoid_tanh_fast_accuracy(void) {
    Worst w = worst_error(sigmoid_tanh_fast_f, sigmoid_d, -110.0f, 110.0f);
    EXPECT(w.abs <= SIG_ATOL, "sigmoid_tanh_fast absolute error %.3g at x = %.9g", w.abs,
           w.at_abs);
    Rng rng;
    rng_seed(&rng, 16);
    int out = 0;
    for (int i = 0; i < grid_size(); i++) {
        float s = sigmoid_tanh_fast(grid_point(i, &rng));
        out += !(s >= 0.0f && s <= 1.0f);
    }
    EXPECT(out == 0, "%d values outside [0, 1]", out);
    EXPECT(isnan(sigmoid_tanh_fast(NAN)) && sigmoid_tanh_fast(0.0f) == 0.5f);
}

// The array forwards: element for element the scalar functions (the vector loop and its
// scalar tail agree), on a length that is no multiple of any vector width and a pointer
// that is not vector-aligned; against the libm references within the bounds.
static void test_array_forwards(void) {
    enum { N = 1003 };
    float *buf = xmalloc(sizeof(float) * (N + 1)), *x = buf + 1;
    float y[N], r[N];
    Rng rng;
    rng_seed(&rng, 15);
    for (int i = 0; i < N; i++) x[i] = 40.0f * rng_uniform(&rng) - 20.0f;
    x[0] = -100.0f, x[1] = 100.0f, x[2] = 0.0f;
    sigmoid_forward(y, x, N);
    sigmoid_forward_ref(r, x, N);
    int same = 1, near = 1;
    for (int i = 0; i < N; i++) {
        same &= y[i] == sigmoid_fast(x[i]);
        near &= fabs(y[i] - r[i]) <= SIG_ATOL && fabs(y[i] - r[i]) <= 2 * SIG_RTOL * r[i];
    }
    EXPECT(same, "sigmoid_forward differs from sigmoid_fast");
    EXPECT(near, "sigmoid_forward far from sigmoid_forward_ref");
    tanh_forward(y, x, N);
    tanh_forward_ref(r, x, N);
    same = 1, near = 1;
    for (int i = 0; i < N; i++) {
        same &= y[i] == tanh_fast(x[i]);
        near &= fabs(y[i] - r[i]) <= 2 * TANH_TOL;
    }
    EXPECT(same, "tanh_forward differs from tanh_fast");
    EXPECT(near, "tanh_forward far from tanh_forward_ref");
    free(buf);
}

int main(void) {
    RUN(test_checker_can_fail);
    RUN(test_exp_fast_accuracy);
    RUN(test_exp_fast_special_values);
    RUN(test_sigmoid_fast_accuracy);
    RUN(test_tanh_fast_accuracy);
    RUN(test_sigmoid_tanh_fast_accuracy);
    RUN(test_array_forwards);
    return test_summary();
}
