#include "core/strbuf.h"

#include <string.h>

#include "core/check.h"

void strbuf_put(StrBuf *b, const void *bytes, size_t n) {
    if (b->n + n + 1 > b->cap) {
        b->cap = 2 * (b->n + n + 1) + 16;
        b->s = xrealloc(b->s, b->cap);
    }
    if (n) memcpy(b->s + b->n, bytes, n);
    b->n += n;
    b->s[b->n] = 0;
}

void strbuf_ch(StrBuf *b, char c) { strbuf_put(b, &c, 1); }
