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
    size_t m = strlen(old);
    if (m > room) m = room;
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
