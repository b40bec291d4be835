#include "tests/support/test.h"

#include <stdarg.h>
#include <string.h>

int test_current_failed_;
int test_total_failed_;
int test_total_passed_;
char test_current_msg_[512];

void test_fail_(const char *file, int line, const char *fmt, ...) {
    if (test_current_failed_++) return;
    int n = snprintf(test_current_msg_, sizeof test_current_msg_, "%s:%d: ", file, line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(test_current_msg_ + n, sizeof test_current_msg_ - (size_t)n, fmt, ap);
    va_end(ap);
}

void test_run_(const char *name, void (*fn)(void)) {
    test_current_failed_ = 0;
    test_current_msg_[0] = 0;
    fn();
    if (test_current_failed_) {
        test_total_failed_++;
        printf("FAIL %s: %s\n", name, test_current_msg_);
    } else {
        test_total_passed_++;
        printf("ok %s\n", name);
    }
    fflush(stdout);
}

int test_summary(void) { return test_total_failed_ ? 1 : 0; }

float test_max_abs_diff(const float *a, const float *ref, size_t n, float *scale) {
    float worst = 0.0f, s = 0.0f;
    for (size_t i = 0; i < n; i++) {
        float d = fabsf(a[i] - ref[i]);
        if (d > worst) worst = d;
        if (fabsf(ref[i]) > s) s = fabsf(ref[i]);
    }
    if (scale) *scale = s;
    return worst;
}

double test_worst_relative_gap(const float *a, const float *ref, size_t n) {
    double top = 0.0, gap = 0.0;
    for (size_t i = 0; i < n; i++) {
        top = fmax(top, fabs((double)ref[i]));
        gap = fmax(gap, fabs((double)a[i] - ref[i]));
    }
    return top > 0 ? gap / top : gap;
}
