// text_escape.c: see text_escape.h.
#include "core/text_escape.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/strbuf.h"

int text_utf8_seq_len(const unsigned char *s) {
    const unsigned c = s[0];
    if (c < 0x80) return 1;
    const int n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (n == 0 || c > 0xF4) return 0;
    for (int k = 1; k < n; k++)  // stops at a NUL: 0x00 is not a continuation byte
        if ((s[k] & 0xC0) != 0x80) return 0;
    if (n == 3 && c == 0xE0 && s[1] < 0xA0) return 0;   // overlong
    if (n == 3 && c == 0xED && s[1] >= 0xA0) return 0;  // UTF-16 surrogate
    if (n == 4 && c == 0xF0 && s[1] < 0x90) return 0;   // overlong
    if (n == 4 && c == 0xF4 && s[1] >= 0x90) return 0;  // above U+10FFFF
    return n;
}

int text_is_utf8(const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        const int n = text_utf8_seq_len(p);
        if (n == 0) return 0;
        p += n;
    }
    return 1;
}

static void buf_hex_byte(StrBuf *b, unsigned c) {
    static const char digits[] = "0123456789abcdef";
    const char e[4] = {'\\', 'x', digits[c >> 4], digits[c & 15]};
    strbuf_put(b, e, 4);
}

// The escape notation over s. field: the field form (also tab, newline, CR and the other
// control characters escaped); else the escaped name form (backslash and invalid bytes).
static char *escape(const char *s, int field) {
    StrBuf b = {0};
    strbuf_put(&b, "", 0);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        const int n = text_utf8_seq_len(p);
        const unsigned c = *p;
        if (n == 0) {
            buf_hex_byte(&b, c);
            p++;
        } else if (c == '\\') {
            strbuf_put(&b, "\\\\", 2);
            p++;
        } else if (field && (c < 0x20 || c == 0x7F)) {
            if (c == '\t') strbuf_put(&b, "\\t", 2);
            else if (c == '\n') strbuf_put(&b, "\\n", 2);
            else if (c == '\r') strbuf_put(&b, "\\r", 2);
            else buf_hex_byte(&b, c);
            p++;
        } else {
            strbuf_put(&b, p, (size_t)n);
            p += n;
        }
    }
    return b.s;
}

char *text_field(const char *s) { return escape(s, 1); }

char *text_field_into(char *buf, size_t cap, const char *s) {
    char *f = text_field(s);
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)f; *p;) {
        // One unit: an escape (\\ \t ... 2 bytes, \xNN 4) or one UTF-8 character.
        size_t k = *p == '\\' ? (p[1] == 'x' ? 4 : 2) : (size_t)text_utf8_seq_len(p);
        if (n + k + 1 > cap) break;
        memcpy(buf + n, p, k);
        n += k;
        p += k;
    }
    buf[n] = 0;
    free(f);
    return buf;
}

void text_field_in_place(char *msg, size_t cap) {
    char *copy = xstrdup(msg);
    text_field_into(msg, cap, copy);
    free(copy);
}

void text_write_field(FILE *fp, const char *s) {
    char *e = text_field(s);
    fputs(e, fp);
    free(e);
}

void text_write_line(FILE *fp, const char *msg) {
    text_write_field(fp, msg);
    fputc('\n', fp);
}

void text_write_linef(FILE *fp, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *msg = xmalloc(n > 0 ? (size_t)n + 1 : 1);
    msg[0] = 0;
    va_start(ap, fmt);
    if (n > 0) vsnprintf(msg, (size_t)n + 1, fmt, ap);
    va_end(ap);
    text_write_line(fp, msg);
    free(msg);
}

char *text_name(const char *name, int *escaped) {
    const int valid = text_is_utf8(name);
    if (escaped) *escaped = !valid;
    return valid ? xstrdup(name) : escape(name, 0);
}

void text_json_string(FILE *fp, const char *s) {
    char *form = text_name(s, NULL);  // valid UTF-8 from here on
    fputc('"', fp);
    for (const unsigned char *p = (const unsigned char *)form; *p; p++) {
        const unsigned c = *p;
        if (c == '"' || c == '\\') fprintf(fp, "\\%c", c);
        else if (c == '\n') fputs("\\n", fp);
        else if (c == '\t') fputs("\\t", fp);
        else if (c < 0x20) fprintf(fp, "\\u%04x", c);
        else fputc((int)c, fp);
    }
    fputc('"', fp);
    free(form);
}

void text_json_name(FILE *fp, const char *key, const char *name) {
    int escaped;
    char *form = text_name(name, &escaped);
    text_json_string(fp, key);
    fputs(": ", fp);
    text_json_string(fp, form);
    free(form);
    if (escaped) {
        char *hex = text_hex(name);
        fputs(", ", fp);
        fputc('"', fp);
        fputs(key, fp);  // a key is ours: plain ASCII
        fputs("_hex\": \"", fp);
        fputs(hex, fp);
        fputc('"', fp);
        free(hex);
    }
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int text_unescape(const char *s, char **out, size_t *len) {
    StrBuf b = {0};
    strbuf_put(&b, "", 0);
    for (const char *p = s; *p; p++) {
        if (*p != '\\') {
            strbuf_put(&b, p, 1);
            continue;
        }
        char c;
        switch (p[1]) {
        case '\\': c = '\\'; break;
        case 't': c = '\t'; break;
        case 'n': c = '\n'; break;
        case 'r': c = '\r'; break;
        case 'x': {
            const int hi = hex_value(p[2]), lo = hi < 0 ? -1 : hex_value(p[3]);
            if (lo < 0) goto bad;
            c = (char)(hi * 16 + lo);
            p += 2;
            break;
        }
        default: goto bad;
        }
        strbuf_put(&b, &c, 1);
        p++;
    }
    *out = b.s;
    if (len) *len = b.n;
    return 0;
bad:
    free(b.s);
    *out = NULL;
    if (len) *len = 0;
    return -1;
}

char *text_hex(const char *s) {
    static const char digits[] = "0123456789abcdef";
    const size_t n = strlen(s);
    char *h = xmalloc(2 * n + 1);
    for (size_t i = 0; i < n; i++) {
        h[2 * i] = digits[(unsigned char)s[i] >> 4];
        h[2 * i + 1] = digits[(unsigned char)s[i] & 15];
    }
    h[2 * n] = 0;
    return h;
}
