// tokenizer.c: see tokenizer.h for the rules.
#include "seq/tokenizer.h"

#include <stdlib.h>
#include <string.h>

#include "core/check.h"

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

static int is_space(unsigned char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
static int is_ascii_alpha(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
// Letters, digits and any byte of a non-ASCII code point count as "word-like" for the
// hyphen and apostrophe rules.
static int is_wordlike(unsigned char c) { return is_ascii_alpha(c) || is_digit(c) || c >= 0x80; }
static unsigned char lower(unsigned char c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

// Punctuation that is always split off and dropped (except the numeric cases for . and ,).
static int is_punct(unsigned char c) { return c && strchr(".,!?;:\"()[]{}`", c) != NULL; }

// Length of the clitic starting at p ("'s", "'re", "'ve", "'ll", "'d", "'m", "n't"),
// case-insensitive, when it ends the word (followed by a non-letter); else 0.
static size_t clitic_len(const unsigned char *p) {
    static const char *const clitics[] = {"n't", "'s", "'re", "'ve", "'ll", "'d", "'m"};
    for (size_t k = 0; k < sizeof clitics / sizeof *clitics; k++) {
        size_t n = strlen(clitics[k]);
        size_t j = 0;
        while (j < n && p[j] && lower(p[j]) == (unsigned char)clitics[k][j]) j++;
        if (j == n && !is_ascii_alpha(p[n])) return n;
    }
    return 0;
}

int tokenize(Tokens *out, const char *text, int max_tokens, Error *err) {
    CHECK(out && text && max_tokens >= 0);
    memset(out, 0, sizeof *out);
    long bad;
    if (!utf8_valid(text, &bad)) return error_set(err, "invalid UTF-8 at byte %ld", bad);

    const unsigned char *p = (const unsigned char *)text;
    size_t n = strlen(text);
    char *word = xmalloc(n + 1);  // the word being built (never longer than the text)
    size_t wl = 0;
    TokenSink sink = {out, 0, max_tokens};

    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        unsigned char next = p[i + 1];  // 0 at the end: the text is NUL-terminated
        if (is_space(c)) {
            sink_push(&sink, word, wl), wl = 0;
            i++;
        } else if ((c == '.' || c == ',') && wl > 0 && is_digit((unsigned char)word[wl - 1]) &&
                   is_digit(next)) {
            word[wl++] = (char)c;  // 3.5, 1,000
            i++;
        } else if (is_punct(c)) {
            sink_push(&sink, word, wl), wl = 0;
            i++;
        } else if (c == '-') {
            if (wl > 0 && is_wordlike((unsigned char)word[wl - 1]) && is_wordlike(next)) {
                word[wl++] = '-';  // black-and-white
            } else {
                sink_push(&sink, word, wl), wl = 0;
            }
            i++;
        } else if (wl > 0 && (c == '\'' || ((c == 'n' || c == 'N') && next == '\'')) &&
                   clitic_len(p + i) > 0) {
            // "dog's" -> dog 's; "don't" -> do n't (the 'n' belongs to the clitic)
            size_t cl = clitic_len(p + i);
            sink_push(&sink, word, wl), wl = 0;
            char cbuf[4];
            for (size_t k = 0; k < cl; k++) cbuf[k] = (char)lower(p[i + k]);
            sink_push(&sink, cbuf, cl);
            i += cl;
        } else if (c == '\'') {
            if (wl > 0 && is_wordlike((unsigned char)word[wl - 1]) && is_ascii_alpha(next)) {
                word[wl++] = '\'';  // o'clock
            } else {
                sink_push(&sink, word, wl), wl = 0;  // a quote: dropped
            }
            i++;
        } else {
            word[wl++] = (char)lower(c);
            i++;
        }
    }
    sink_push(&sink, word, wl);
    free(word);
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
