// keras_tokenizer.c: Keras's Tokenizer() and pad_sequences (seq/keras_tokenizer.h).
#include "seq/keras_tokenizer.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/text_escape.h"
#include "seq/ptb_chars.h"

// Keras's default filters: '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n'
static int is_filter(unsigned char c) {
    return c == '\t' || c == '\n' ||
           (c >= '!' && c <= '/' && c != '\'') ||  // ! " # $ % & ( ) * + , - . /
           (c >= ':' && c <= '@') ||               // : ; < = > ? @
           (c >= '[' && c <= '`') ||               // [ \ ] ^ _ `
           (c >= '{' && c <= '~');                 // { | } ~
}

static size_t put_utf8(char *q, unsigned cp) {
    if (cp < 0x80) {
        q[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        q[0] = (char)(0xC0 | (cp >> 6));
        q[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        q[0] = (char)(0xE0 | (cp >> 12));
        q[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        q[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    q[0] = (char)(0xF0 | (cp >> 18));
    q[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    q[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    q[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static unsigned get_utf8(const unsigned char *p, int n) {
    if (n == 1) return p[0];
    unsigned cp = p[0] & (0xFF >> (n + 1));
    for (int i = 1; i < n; i++) cp = (cp << 6) | (p[i] & 0x3F);
    return cp;
}

void keras_words_free(char **words, int n) {
    for (int i = 0; i < n; i++) free(words[i]);
    free(words);
}

int keras_words(char ***words, int *n, const char *text, Error *err) {
    *words = NULL;
    *n = 0;
    size_t len = strlen(text);
    // Lower-casing grows a code point by at most half its bytes (U+0130: 2 to 3).
    char *buf = xmalloc(3 * len + 2);
    size_t b = 0;
    for (size_t i = 0; i < len;) {
        const unsigned char *p = (const unsigned char *)text + i;
        int k = text_utf8_seq_len(p);
        if (k == 0) {
            free(buf);
            return error_set(err, "invalid UTF-8 at byte %zu", i + 1);
        }
        unsigned cp = get_utf8(p, k);
        if (cp == 0x130) {
            b += put_utf8(buf + b, 'i');
            b += put_utf8(buf + b, 0x307);
        } else if (cp < 0x80) {
            unsigned char c = (unsigned char)cp;
            if (c >= 'A' && c <= 'Z') c = (unsigned char)(c - 'A' + 'a');
            buf[b++] = is_filter(c) ? ' ' : (char)c;
        } else {
            b += put_utf8(buf + b, ptb_lower(cp));
        }
        i += (size_t)k;
    }
    buf[b] = 0;
    int cap = 0;
    for (size_t i = 0; i < b;) {
        while (i < b && buf[i] == ' ') i++;
        size_t j = i;
        while (j < b && buf[j] != ' ') j++;
        if (j > i) {
            if (*n == cap) {
                cap = cap ? 2 * cap : 16;
                *words = xrealloc(*words, (size_t)cap * sizeof **words);
            }
            char *w = xmalloc(j - i + 1);
            memcpy(w, buf + i, j - i);
            w[j - i] = 0;
            (*words)[(*n)++] = w;
        }
        i = j;
    }
    free(buf);
    return 0;
}

// --- the table ---------------------------------------------------------------------------

static uint64_t hash_word(const char *s) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

// The slot holding word, or the empty slot where it would go.
static int find_slot(const KerasTokenizer *t, const char *word) {
    int mask = t->cap - 1;
    int s = (int)(hash_word(word) & (uint64_t)mask);
    while (t->slot[s] && strcmp(t->word[t->slot[s]], word) != 0) s = (s + 1) & mask;
    return s;
}

static void rehash(KerasTokenizer *t, int want) {
    int cap = 16;
    while (cap <= 2 * want) cap *= 2;
    free(t->slot);
    t->slot = xcalloc((size_t)cap, sizeof *t->slot);
    t->cap = cap;
    for (int i = 1; i <= t->n_words; i++) t->slot[find_slot(t, t->word[i])] = i;
}

// Appends word (owned by t from now) with count c; returns its index.
static int add_word(KerasTokenizer *t, char *word, long c, int *cap_words) {
    if (t->n_words + 1 >= *cap_words) {
        *cap_words *= 2;
        t->word = xrealloc(t->word, (size_t)*cap_words * sizeof *t->word);
        t->count = xrealloc(t->count, (size_t)*cap_words * sizeof *t->count);
    }
    int i = ++t->n_words;
    t->word[i] = word;
    t->count[i] = c;
    if (2 * t->n_words >= t->cap) rehash(t, t->n_words);
    else t->slot[find_slot(t, word)] = i;
    return i;
}

static void init(KerasTokenizer *t, int *cap_words) {
    memset(t, 0, sizeof *t);
    *cap_words = 256;
    t->word = xmalloc((size_t)*cap_words * sizeof *t->word);
    t->count = xmalloc((size_t)*cap_words * sizeof *t->count);
    t->word[0] = NULL;
    t->count[0] = 0;
    rehash(t, 0);
}

void keras_tokenizer_free(KerasTokenizer *t) {
    if (t->word)
        for (int i = 1; i <= t->n_words; i++) free(t->word[i]);
    free(t->word);
    free(t->count);
    free(t->slot);
    memset(t, 0, sizeof *t);
}

int keras_tokenizer_index(const KerasTokenizer *t, const char *word) {
    if (!t->cap) return 0;
    return t->slot[find_slot(t, word)];
}

// Orders by descending count, then by first appearance (the index given while counting).
typedef struct {
    long count;
    int first;
} Rank;
static int cmp_rank(const void *a, const void *b) {
    const Rank *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return (x->first > y->first) - (x->first < y->first);
}

int keras_tokenizer_fit(KerasTokenizer *t, const char *const *texts, int n, Error *err) {
    int cap_words;
    KerasTokenizer seen;  // words in order of first appearance, with their counts
    init(&seen, &cap_words);
    for (int k = 0; k < n; k++) {
        char **w;
        int m;
        if (keras_words(&w, &m, texts[k], err)) {
            keras_tokenizer_free(&seen);
            memset(t, 0, sizeof *t);
            return error_prefix(err, "text %d", k + 1);
        }
        for (int j = 0; j < m; j++) {
            int i = keras_tokenizer_index(&seen, w[j]);
            if (i) {
                seen.count[i]++;
                free(w[j]);
            } else {
                add_word(&seen, w[j], 1, &cap_words);
            }
        }
        free(w);
    }
    Rank *r = xmalloc((size_t)(seen.n_words + 1) * sizeof *r);
    for (int i = 1; i <= seen.n_words; i++) r[i - 1] = (Rank){seen.count[i], i};
    qsort(r, (size_t)seen.n_words, sizeof *r, cmp_rank);
    int cap2;
    init(t, &cap2);
    for (int i = 0; i < seen.n_words; i++) {
        add_word(t, seen.word[r[i].first], r[i].count, &cap2);
        seen.word[r[i].first] = NULL;
    }
    free(r);
    for (int i = 1; i <= seen.n_words; i++) CHECK(seen.word[i] == NULL);
    seen.n_words = 0;
    keras_tokenizer_free(&seen);
    return 0;
}

int keras_tokenizer_from_words(KerasTokenizer *t, const char *const *words, int n, Error *err) {
    int cap_words;
    init(t, &cap_words);
    for (int i = 0; i < n; i++) {
        if (!words[i][0] || keras_tokenizer_index(t, words[i])) {
            int repeated = words[i][0] != 0;
            keras_tokenizer_free(t);
            return error_set(err, "word %d: %s", i + 1, repeated ? "repeated" : "empty");
        }
        add_word(t, xstrdup(words[i]), 0, &cap_words);
    }
    return 0;
}

int keras_tokenizer_sequence(const KerasTokenizer *t, const char *text, int max_index,
                             int **ids, int *len, Error *err) {
    *ids = NULL;
    *len = 0;
    char **w;
    int m;
    if (keras_words(&w, &m, text, err)) return -1;
    if (m) *ids = xmalloc((size_t)m * sizeof **ids);
    for (int j = 0; j < m; j++) {
        int i = keras_tokenizer_index(t, w[j]);
        if (i && (max_index <= 0 || i < max_index)) (*ids)[(*len)++] = i;
    }
    keras_words_free(w, m);
    if (*len == 0) {
        free(*ids);
        *ids = NULL;
    }
    return 0;
}

void keras_pad(int *out, const int *ids, int len, int maxlen, int padding, int truncating,
               int *kept) {
    CHECK(maxlen >= 1 && len >= 0);
    int k = len < maxlen ? len : maxlen;
    const int *src = truncating == KERAS_PRE ? ids + (len - k) : ids;
    int at = padding == KERAS_PRE ? maxlen - k : 0;
    for (int i = 0; i < maxlen; i++) out[i] = 0;
    for (int i = 0; i < k; i++) out[at + i] = src[i];
    if (kept) *kept = k;
}
