// check.h: always-on assertions and checked allocation / file helpers.
//
// Programming errors (a violated invariant) stop the program with file:line and a hint;
// an allocation that fails ends it with one line and exit status 1 (check_out_of_memory). Bad *input* never goes through here: it
// returns a status with an Error (see error.h).
#ifndef CORE_CHECK_H
#define CORE_CHECK_H

#include <stddef.h>
#include <stdio.h>

// Stays on in release builds (unlike assert).
#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) check_fail_(__FILE__, __LINE__, #cond, "" __VA_ARGS__);   \
    } while (0)

_Noreturn void check_fail_(const char *file, int line, const char *cond, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

// An allocation that fails (out of memory, or past ulimit -v) is no programming error:
// it ends the program with one line naming what was being allocated and its size, and
// exit status 1 (files written atomically, such as checkpoints, stay as they were):
//     "draw train: cannot allocate 12.3 GB for 30 tensors (canvas, ...): out of memory"
// The line starts with the name given to check_set_program (a command sets it once, e.g.
// "draw train"), else the executable's name. what: a phrase after "for".
void check_set_program(const char *name);
_Noreturn void check_out_of_memory(size_t bytes, const char *what);

// The x* wrappers end the program so, naming their caller's file:line.
void *xmalloc_(size_t size, const char *file, int line);
void *xcalloc_(size_t count, size_t size, const char *file, int line);
void *xrealloc_(void *ptr, size_t size, const char *file, int line);
char *xstrdup_(const char *s, const char *file, int line);

#define xmalloc(size) xmalloc_((size), __FILE__, __LINE__)
#define xcalloc(count, size) xcalloc_((count), (size), __FILE__, __LINE__)
#define xrealloc(ptr, size) xrealloc_((ptr), (size), __FILE__, __LINE__)
#define xstrdup(s) xstrdup_((s), __FILE__, __LINE__)

#endif
