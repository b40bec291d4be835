// utf8_check.h: a strict UTF-8 check for tests, written apart from the library's own
// (core/text_escape.h), so that a test of the library's outputs does not trust the code it
// tests: code points by arithmetic, RFC 3629 (no overlong forms, no surrogates, nothing
// above U+10FFFF).
#ifndef TESTS_SUPPORT_UTF8_CHECK_H
#define TESTS_SUPPORT_UTF8_CHECK_H

#include <stddef.h>

// 1 when s[0..n) is valid UTF-8; else 0 and *bad (may be NULL) the offset of the first
// byte of the first invalid sequence.
int utf8_check(const unsigned char *s, size_t n, size_t *bad);

#endif
