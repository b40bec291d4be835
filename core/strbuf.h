// strbuf.h: a growing byte string, for text built piece by piece (escaping, markup
// stripping, tokenizing). Zero-initialise one (StrBuf b = {0}); after the first put, b.s
// holds b.n bytes and a terminating 0 byte not counted in n. The caller frees b.s.
#ifndef CORE_STRBUF_H
#define CORE_STRBUF_H

#include <stddef.h>

typedef struct {
    char *s;
    size_t n, cap;
} StrBuf;

// Appends n bytes (n may be 0: then b.s is at least the empty string).
void strbuf_put(StrBuf *b, const void *bytes, size_t n);
// Appends one byte.
void strbuf_ch(StrBuf *b, char c);

#endif
