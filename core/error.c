#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/text_escape.h"

int error_set(Error *err, const char *fmt, ...) {
    if (!err) return -1;
    char raw[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    text_field_into(err->msg, sizeof err->msg, raw);  // one line, whatever a name holds
    return -1;
}

static void prefix_message(Error *err, const char *fmt, va_list ap) {
    char raw[256], prefix[256];
    vsnprintf(raw, sizeof raw, fmt, ap);
    text_field_into(prefix, sizeof prefix, raw);  // the old message is in the field form already
    char old[sizeof err->msg];
    memcpy(old, err->msg, sizeof old);
    size_t n = strlen(prefix);
    if (n > sizeof err->msg - 3) n = sizeof err->msg - 3;
    memcpy(err->msg, prefix, n);
    memcpy(err->msg + n, ": ", 2);
    size_t room = sizeof err->msg - n - 3;
    // The old message cut to fit at a whole unit (an escape of the field form or a UTF-8
    // character), so it stays valid UTF-8 that unescapes.
    size_t m = 0;
    for (const unsigned char *p = (const unsigned char *)old; *p;) {
        int k = *p == '\\' ? (p[1] == 'x' ? 4 : 2) : text_utf8_seq_len(p);
        if (k < 1) k = 1;
        if (m + (size_t)k > room) break;
        m += (size_t)k;
        p += k;
    }
    memcpy(err->msg + n + 2, old, m);
    err->msg[n + 2 + m] = 0;
}

int error_prefix(Error *err, const char *fmt, ...) {
    if (!err) return -1;
    va_list ap;
    va_start(ap, fmt);
    prefix_message(err, fmt, ap);
    va_end(ap);
    return -1;
}

int error_wrap(Error *err, const Error *inner, const char *fmt, ...) {
    if (!err) return -1;
    *err = *inner;
    va_list ap;
    va_start(ap, fmt);
    prefix_message(err, fmt, ap);
    va_end(ap);
    return -1;
}
