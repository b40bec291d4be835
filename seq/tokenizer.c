// tokenizer.c: see tokenizer.h for the rules; the lexer itself is seq/ptb_lexer.c.
#include "seq/tokenizer.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "seq/ptb_chars.h"
#include "seq/ptb_lexer.h"

int utf8_valid(const char *s, long *bad_offset) {
    const unsigned char *p = (const unsigned char *)s;
    long i = 0;
    while (p[i]) {
        unsigned c = p[i];
        int len;
        unsigned cp, min;
        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; min = 0x80; }
        else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; min = 0x800; }
        else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; min = 0x10000; }
        else goto bad;  // continuation byte, 0xC0/0xC1 (overlong), or > 0xF4
        for (int k = 1; k < len; k++) {
            unsigned cc = p[i + k];  // a NUL here is not a continuation: stops the loop
            if ((cc & 0xC0) != 0x80) goto bad;
            cp = (cp << 6) | (cc & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) goto bad;
        i += len;
    }
    return 1;
bad:
    if (bad_offset) *bad_offset = i;
    return 0;
}

typedef struct {
    Tokens *t;
    int cap;         // capacity of t->tok
    int max_tokens;
} TokenSink;

static void sink_push(TokenSink *s, const char *word, size_t len) {
    if (len == 0) return;
    Tokens *t = s->t;
    if (t->n >= s->max_tokens) {
        t->dropped++;
        return;
    }
    if (t->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 16;
        t->tok = xrealloc(t->tok, (size_t)s->cap * sizeof *t->tok);
    }
    char *w = xmalloc(len + 1);
    memcpy(w, word, len);
    w[len] = 0;
    t->tok[t->n++] = w;
}

// Valid UTF-8 (checked) -> UTF-16 units u (room for strlen(text) units), then a line break
// (each caption is followed by one in the file coco-caption tokenises). Returns the count.
static int utf8_to_utf16(uint16_t *u, const char *text) {
    const unsigned char *p = (const unsigned char *)text;
    int n = 0;
    while (*p) {
        unsigned c = *p, cp;
        if (c < 0x80) cp = c, p += 1;
        else if (c < 0xE0) cp = (c & 0x1F) << 6 | (p[1] & 0x3F), p += 2;
        else if (c < 0xF0) cp = (c & 0x0F) << 12 | (p[1] & 0x3F) << 6 | (p[2] & 0x3F), p += 3;
        else cp = (c & 0x07) << 18 | (p[1] & 0x3F) << 12 | (p[2] & 0x3F) << 6 | (p[3] & 0x3F), p += 4;
        if (cp < 0x10000) {
            u[n++] = (uint16_t)cp;
        } else {  // four UTF-8 bytes, two units
            u[n++] = (uint16_t)(0xD800 + ((cp - 0x10000) >> 10));
            u[n++] = (uint16_t)(0xDC00 + ((cp - 0x10000) & 0x3FF));
        }
    }
    u[n++] = '\n';
    return n;
}

static size_t put_utf8(char *q, unsigned cp) {
    if (cp < 0x80) return q[0] = (char)cp, 1;
    if (cp < 0x800) return q[0] = (char)(0xC0 | cp >> 6), q[1] = (char)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000) {
        q[0] = (char)(0xE0 | cp >> 12);
        q[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        q[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    q[0] = (char)(0xF0 | cp >> 18);
    q[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    q[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    q[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

// Code point at unit k of u (len units), and its width in units; a lone surrogate (a pair
// the lexer cut) is U+FFFF-free '?' as Java's UTF-8 encoder writes it.
static unsigned code_at(const uint16_t *u, int len, int k, int *width) {
    unsigned a = u[k];
    *width = 1;
    if (a >= 0xD800 && a <= 0xDBFF && k + 1 < len && u[k + 1] >= 0xDC00 && u[k + 1] <= 0xDFFF) {
        *width = 2;
        return 0x10000 + ((a - 0xD800) << 10) + (u[k + 1] - 0xDC00);
    }
    return a >= 0xD800 && a <= 0xDFFF ? '?' : a;
}

// A letter of a script with upper and lower case (Latin, Greek, Cyrillic, Armenian,
// Georgian and their extensions): what decides a final sigma.
static int is_cased(unsigned u) {
    static const unsigned ranges[][2] = {{0x41, 0x24F}, {0x370, 0x52F}, {0x531, 0x587},
                                         {0x10A0, 0x10FF}, {0x1E00, 0x1FFF}, {0x2C00, 0x2D2F},
                                         {0xA640, 0xA69F}, {0xA720, 0xA7FF}, {0xFF21, 0xFF5A}};
    if (!ptb_is_letter(u)) return 0;
    for (size_t k = 0; k < sizeof ranges / sizeof *ranges; k++)
        if (u >= ranges[k][0] && u <= ranges[k][1]) return 1;
    return 0;
}

// Java lower-cases a capital sigma at u[k] to the final form when a cased letter comes
// before it in the same word and none after. It asks a word-break iterator, taken here as:
// a word runs over letters, digits and '_', and over one '.', '-', ':' or apostrophe
// between two letters.
static int is_mid_word(unsigned u) { return u == '.' || u == '-' || u == ':' || u == '\''; }
static int is_word_unit(unsigned u) { return ptb_is_letter(u) || ptb_is_digit(u); }
static int cased_in_word(const uint16_t *u, int len, int k, int step) {
    for (int m = k + step; m >= 0 && m < len; m += step) {
        if (is_cased(u[m])) return 1;
        if (is_word_unit(u[m]) || u[m] == '_') continue;
        int next = m + step;
        if (!(is_mid_word(u[m]) && ptb_is_letter(u[m - step]) && next >= 0 && next < len &&
              ptb_is_letter(u[next])))
            return 0;
    }
    return 0;
}
static int is_final_sigma(const uint16_t *u, int len, int k) {
    return cased_in_word(u, len, k, -1) && !cased_in_word(u, len, k, +1);
}

// Java's String.toLowerCase (Locale.ENGLISH) of the token u (len units), as UTF-8 in q
// (room for 3 bytes a unit + 1); returns the byte count. U+0130 becomes "i" + U+0307,
// and a capital sigma may take the final form (is_final_sigma).
static size_t lower_utf8(char *q, const uint16_t *u, int len) {
    size_t b = 0;
    for (int k = 0, w; k < len; k += w) {
        unsigned cp = code_at(u, len, k, &w);
        if (cp == 0x130) {
            b += put_utf8(q + b, 'i');
            b += put_utf8(q + b, 0x307);
            continue;
        }
        if (cp == 0x3A3) {
            b += put_utf8(q + b, is_final_sigma(u, len, k) ? 0x3C2 : 0x3C3);
            continue;
        }
        b += put_utf8(q + b, ptb_lower(cp));
    }
    return b;
}

// The tokens coco-caption's ptbtokenizer.py drops after PTBTokenizer (its PUNCTUATIONS;
// the upper-case -LRB- -RRB- -LCB- -RCB- of that list cannot match a lower-cased token).
static int is_dropped_punctuation(const char *w, size_t len) {
    static const char *const drop[] = {"''", "'", "``", "`", ".", "?", "!", ",", ":",
                                       "-", "--", "...", ";"};
    for (size_t k = 0; k < sizeof drop / sizeof *drop; k++)
        if (strlen(drop[k]) == len && memcmp(drop[k], w, len) == 0) return 1;
    return 0;
}

static int is_ascii_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// One PTB token: lower-cased, dropped if punctuation, split at ASCII white space.
static void emit_token(TokenSink *sink, char *buf, const uint16_t *u, int len) {
    size_t b = lower_utf8(buf, u, len);
    if (is_dropped_punctuation(buf, b)) return;
    size_t start = 0;
    for (size_t k = 0; k <= b; k++) {
        if (k == b || is_ascii_space(buf[k])) {
            sink_push(sink, buf + start, k - start);
            start = k + 1;
        }
    }
}

int tokenize(Tokens *out, const char *text, int max_tokens, Error *err) {
    CHECK(out && text && max_tokens >= 0);
    memset(out, 0, sizeof *out);
    long bad;
    if (!utf8_valid(text, &bad)) return error_set(err, "invalid UTF-8 at byte %ld", bad);

    size_t bytes = strlen(text);
    CHECK(bytes < (size_t)INT32_MAX / 8, "caption of %zu bytes", bytes);
    uint16_t *u = xmalloc((bytes + 1) * sizeof *u);
    int n = utf8_to_utf16(u, text);
    uint16_t *tok = xmalloc((size_t)PTB_OUT_MAX(n) * sizeof *tok);
    char *utf8 = xmalloc((size_t)PTB_OUT_MAX(n) * 3 + 1);
    TokenSink sink = {out, 0, max_tokens};
    PtbLexeme lx;
    // A short caption's runs are short: finding their ends first would cost more than it saves.
    PtbRuns *runs = n > 256 ? ptb_runs_make(u, n) : NULL;
    for (int pos = 0; pos < n; pos += lx.advance) {
        ptb_next_runs(&lx, u, n, pos, tok, runs);
        if (lx.kind == PTB_TOKEN) emit_token(&sink, utf8, tok, lx.len);
    }
    ptb_runs_free(runs);
    free(utf8);
    free(tok);
    free(u);
    return 0;
}

void tokens_from_words(Tokens *out, const char *const *words, int n) {
    CHECK(out && n >= 0 && (n == 0 || words));
    memset(out, 0, sizeof *out);
    if (n == 0) return;
    out->tok = xmalloc((size_t)n * sizeof *out->tok);
    for (int i = 0; i < n; i++) out->tok[i] = xstrdup(words[i]);
    out->n = n;
}

char *tokens_join(const Tokens *t) {
    size_t len = 1;
    for (int i = 0; i < t->n; i++) len += strlen(t->tok[i]) + 1;
    char *s = xmalloc(len), *q = s;
    for (int i = 0; i < t->n; i++) {
        if (i) *q++ = ' ';
        size_t l = strlen(t->tok[i]);
        memcpy(q, t->tok[i], l);
        q += l;
    }
    *q = 0;
    return s;
}

void tokens_free(Tokens *t) {
    if (!t) return;
    for (int i = 0; i < t->n; i++) free(t->tok[i]);
    free(t->tok);
    memset(t, 0, sizeof *t);
}
