#define _GNU_SOURCE  // program_invocation_short_name
#include "core/check.h"

#include <errno.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

// The program's name for the out-of-memory line: set once, before any work, by the
// command (a process-wide label, not state that any result depends on).
static char program[64];

void check_set_program(const char *name) { snprintf(program, sizeof program, "%s", name); }

void check_out_of_memory(size_t bytes, const char *what) {
    const double b = (double)bytes;
    char size[32];
    if (b >= 1e9)
        snprintf(size, sizeof size, "%.1f GB", b / 1e9);
    else if (b >= 1e6)
        snprintf(size, sizeof size, "%.1f MB", b / 1e6);
    else
        snprintf(size, sizeof size, "%zu bytes", bytes);
    fflush(stdout);
    fprintf(stderr, "%s: cannot allocate %s for %s: out of memory\n",
            program[0] ? program : program_invocation_short_name, size, what);
    exit(1);
}

static _Noreturn void out_of_memory_at(size_t bytes, const char *file, int line) {
    char what[300];
    snprintf(what, sizeof what, "the buffer of %s:%d", file, line);
    check_out_of_memory(bytes, what);
}

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
    if (!p) out_of_memory_at(size, file, line);
    return p;
}

void *xcalloc_(size_t count, size_t size, const char *file, int line) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) out_of_memory_at(count > 0 && size > SIZE_MAX / count ? SIZE_MAX : count * size, file, line);
    return p;
}

void *xrealloc_(void *ptr, size_t size, const char *file, int line) {
    void *p = realloc(ptr, size ? size : 1);
    if (!p) out_of_memory_at(size, file, line);
    return p;
}

char *xstrdup_(const char *s, const char *file, int line) {
    size_t n = strlen(s) + 1;
    char *p = xmalloc_(n, file, line);
    memcpy(p, s, n);
    return p;
}
