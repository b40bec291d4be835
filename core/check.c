#include "core/check.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void check_fail_(const char *file, int line, const char *cond, const char *fmt, ...) {
    fprintf(stderr, "%s:%d: check failed: %s", file, line, cond);
    if (fmt && fmt[0]) {
        va_list ap;
        va_start(ap, fmt);
        fputs(": ", stderr);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
    }
    fputc('\n', stderr);
    abort();
}

void *xmalloc_(size_t size, const char *file, int line) {
    void *p = malloc(size ? size : 1);
    if (!p) check_fail_(file, line, "malloc", "out of memory allocating %zu bytes", size);
    return p;
}

void *xcalloc_(size_t count, size_t size, const char *file, int line) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) check_fail_(file, line, "calloc", "out of memory allocating %zu x %zu bytes", count, size);
    return p;
}

void *xrealloc_(void *ptr, size_t size, const char *file, int line) {
    void *p = realloc(ptr, size ? size : 1);
    if (!p) check_fail_(file, line, "realloc", "out of memory reallocating to %zu bytes", size);
    return p;
}

char *xstrdup_(const char *s, const char *file, int line) {
    size_t n = strlen(s) + 1;
    char *p = xmalloc_(n, file, line);
    memcpy(p, s, n);
    return p;
}
