// test.h: the smallest test framework that can fail loudly.
//
// Each test program defines test functions and runs them from main():
//
//     static void test_rng_uniform_range(void) { EXPECT(x < 1.0f, "x = %g", x); }
//     int main(void) { RUN(test_rng_uniform_range); return test_summary(); }
//
// Every RUN prints "ok NAME" or "FAIL NAME: file:line: message" (the first failed
// expectation); tests/run.sh counts those lines across programs. test_summary()
// returns non-zero when anything failed, so the program's exit status agrees.
#ifndef TESTS_SUPPORT_TEST_H
#define TESTS_SUPPORT_TEST_H

#include <math.h>
#include <stddef.h>
#include <stdio.h>

extern int test_current_failed_;
extern int test_total_failed_;
extern int test_total_passed_;
extern char test_current_msg_[512];

void test_fail_(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void test_run_(const char *name, void (*fn)(void));
int test_summary(void);

// The largest |a[i] - ref[i]| over the largest |ref[i]| (the gap itself when ref is all
// zeros): how two paths that sum in different orders are compared at float rounding.
double test_worst_relative_gap(const float *a, const float *ref, size_t n);

// The largest |a[i] - ref[i]| (float), and the largest |ref[i]| into *scale when scale is
// not NULL: for tolerances of the form tol * (1 + scale).
float test_max_abs_diff(const float *a, const float *ref, size_t n, float *scale);

// Records a failure (the first one per test is printed) and carries on.
#define EXPECT(cond, ...)                                                   \
    do {                                                                    \
        if (!(cond)) test_fail_(__FILE__, __LINE__, "" __VA_ARGS__);        \
    } while (0)

// |a - b| <= atol + rtol * |b|
#define EXPECT_NEAR(a, b, atol, rtol)                                                    \
    do {                                                                                 \
        double a_ = (a), b_ = (b);                                                       \
        if (!(fabs(a_ - b_) <= (atol) + (rtol) * fabs(b_)))                              \
            test_fail_(__FILE__, __LINE__, "%s = %.9g, expected %s = %.9g", #a, a_, #b, b_); \
    } while (0)

#define RUN(fn) test_run_(#fn, fn)

#endif
