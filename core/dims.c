#include "core/dims.h"

#include <stdio.h>
#include <string.h>

#include "core/check.h"

bool dims_mul(size_t *out, size_t a, size_t b) {
    size_t p;
    if (__builtin_mul_overflow(a, b, &p)) return false;
    *out = p;
    return true;
}

uint64_t dims_product(const DimTerm *terms, int n) {
    uint64_t p = 1;
    bool wrapped = false;
    for (int i = 0; i < n; i++) {
        CHECK(terms[i].n >= 0, "%s: negative dimension %lld", terms[i].name, (long long)terms[i].n);
        if (terms[i].n == 0) return 0;
        if (wrapped || __builtin_mul_overflow(p, (uint64_t)terms[i].n, &p)) wrapped = true;
    }
    return wrapped ? UINT64_MAX : p;
}

int dims_check(Error *err, const char *what, const DimTerm *terms, int n) {
    uint64_t p = dims_product(terms, n);
    if (p <= (uint64_t)DIMS_MAX) return 0;
    char line[sizeof err->msg];
    size_t k = 0;
    for (int i = 0; i < n && k < sizeof line; i++) {
        const char *sep = i ? " x " : "";
        long long v = (long long)terms[i].n;
        int w = strncmp(terms[i].name, "--", 2) == 0
                    ? snprintf(line + k, sizeof line - k, "%s%s %lld", sep, terms[i].name, v)
                    : snprintf(line + k, sizeof line - k, "%s%lld %s", sep, v, terms[i].name);
        k += w > 0 ? (size_t)w : 0;
    }
    if (k >= sizeof line) k = sizeof line - 1;
    if (p == UINT64_MAX)
        return error_set(err, "%s = more than 2^64 floats (%s) exceeds %lld, the most one tensor "
                              "may hold", line, what, (long long)DIMS_MAX);
    return error_set(err, "%s = %llu floats (%s) exceeds %lld, the most one tensor may hold", line,
                     (unsigned long long)p, what, (long long)DIMS_MAX);
}
