// utf8_check.c: see utf8_check.h.
#include "tests/support/utf8_check.h"

int utf8_check(const unsigned char *s, size_t n, size_t *bad) {
    static const unsigned long min_cp[4] = {0, 0x80, 0x800, 0x10000};
    size_t i = 0;
    while (i < n) {
        const unsigned c = s[i];
        const int extra = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2
                                     : (c & 0xF8) == 0xF0   ? 3 : -1;
        int ok = extra >= 0;
        unsigned long cp = extra == 0 ? c : extra == 1 ? c & 0x1F : extra == 2 ? c & 0x0F : c & 0x07;
        for (int k = 1; ok && k <= extra; k++) {
            ok = i + (size_t)k < n && (s[i + (size_t)k] & 0xC0) == 0x80;
            cp = (cp << 6) | (s[i + (size_t)k < n ? i + (size_t)k : i] & 0x3F);
        }
        if (ok) ok = cp >= min_cp[extra] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
        if (!ok) {
            if (bad) *bad = i;
            return 0;
        }
        i += (size_t)extra + 1;
    }
    return 1;
}
