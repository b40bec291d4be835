// bpe.c: byte-pair-encoding subwords: learning with incremental pair counts, applying,
// the vocabulary, and the text form of the merges.
#include "seq/bpe.h"

#include <assert.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"

static const char *const special_names[BPE_N_SPECIAL] = {"<pad>", "<bos>", "<eos>", "<unk>"};

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

static uint64_t hash_pair(int64_t key) {
    uint64_t x = (uint64_t)key * 0x9e3779b97f4a7c15ull;
    return x ^ (x >> 31);
}

static int is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// Bytes of the UTF-8 character at p (n bytes left): 1..4, or 0 when invalid.
static int utf8_len(const unsigned char *p, size_t n) {
    unsigned c = p[0];
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (!len || (size_t)len > n) return 0;
    uint32_t v = len == 1 ? c : len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
    for (int j = 1; j < len; j++) {
        if ((p[j] & 0xc0) != 0x80) return 0;
        v = (v << 6) | (p[j] & 0x3f);
    }
    if ((len == 2 && v < 0x80) || (len == 3 && v < 0x800) || (len == 4 && (v < 0x10000 || v > 0x10ffff)) ||
        (v >= 0xd800 && v <= 0xdfff))
        return 0;
    return len;
}

// --- the model's tables ------------------------------------------------------------------

static const char *sym_str(const Bpe *b, int32_t id) { return b->vocab[id + BPE_N_SPECIAL]; }

static int32_t sym_find(const Bpe *b, const char *s, size_t n) {
    if (!b->sym_cap) return -1;
    size_t mask = b->sym_cap - 1;
    for (size_t i = hash_bytes(s, n) & mask;; i = (i + 1) & mask) {
        int32_t id = b->sym_table[i];
        if (id < 0) return -1;
        const char *t = sym_str(b, id);
        if (strlen(t) == n && memcmp(t, s, n) == 0) return id;
    }
}

static void sym_insert_slot(Bpe *b, int32_t id) {
    const char *t = sym_str(b, id);
    size_t mask = b->sym_cap - 1, i = hash_bytes(t, strlen(t)) & mask;
    while (b->sym_table[i] >= 0) i = (i + 1) & mask;
    b->sym_table[i] = id;
}

// The id of symbol s (n bytes), added when new.
static int32_t sym_intern(Bpe *b, const char *s, size_t n) {
    int32_t id = sym_find(b, s, n);
    if (id >= 0) return id;
    id = b->n_vocab - BPE_N_SPECIAL;
    if ((size_t)(id + 1) * 2 > b->sym_cap) {
        free(b->sym_table);
        b->sym_cap = b->sym_cap ? b->sym_cap * 2 : 64;
        b->sym_table = xmalloc(b->sym_cap * sizeof *b->sym_table);
        for (size_t i = 0; i < b->sym_cap; i++) b->sym_table[i] = -1;
        for (int32_t k = 0; k < id; k++) sym_insert_slot(b, k);
    }
    b->vocab = xrealloc(b->vocab, (size_t)(b->n_vocab + 1) * sizeof *b->vocab);
    char *copy = xmalloc(n + 1);
    memcpy(copy, s, n);
    copy[n] = 0;
    b->vocab[b->n_vocab++] = copy;
    sym_insert_slot(b, id);
    return id;
}

static int64_t pair_key(int32_t l, int32_t r) { return ((int64_t)l << 32) | (uint32_t)r; }

static int32_t rank_find(const Bpe *b, int32_t l, int32_t r) {
    if (!b->rank_cap) return -1;
    int64_t key = pair_key(l, r);
    size_t mask = b->rank_cap - 1;
    for (size_t i = hash_pair(key) & mask;; i = (i + 1) & mask) {
        if (b->rank_key[i] == -1) return -1;
        if (b->rank_key[i] == key) return b->rank_val[i];
    }
}

static void rank_slot(Bpe *b, int64_t key, int32_t val) {
    size_t mask = b->rank_cap - 1, i = hash_pair(key) & mask;
    while (b->rank_key[i] != -1) i = (i + 1) & mask;
    b->rank_key[i] = key;
    b->rank_val[i] = val;
}

// Appends the merge (l, r) -> the symbol of their joined strings.
static void add_merge(Bpe *b, int32_t l, int32_t r) {
    int k = b->n_merges;
    if ((size_t)(k + 1) * 2 > b->rank_cap) {
        free(b->rank_key);
        free(b->rank_val);
        b->rank_cap = b->rank_cap ? b->rank_cap * 2 : 64;
        b->rank_key = xmalloc(b->rank_cap * sizeof *b->rank_key);
        b->rank_val = xmalloc(b->rank_cap * sizeof *b->rank_val);
        for (size_t i = 0; i < b->rank_cap; i++) b->rank_key[i] = -1;
        for (int j = 0; j < k; j++) rank_slot(b, pair_key(b->merge_left[j], b->merge_right[j]), j);
    }
    size_t nl = strlen(sym_str(b, l)), nr = strlen(sym_str(b, r));
    char *joined = xmalloc(nl + nr + 1);
    memcpy(joined, sym_str(b, l), nl);
    memcpy(joined + nl, sym_str(b, r), nr + 1);
    int32_t out = sym_intern(b, joined, nl + nr);
    free(joined);
    b->merge_left = xrealloc(b->merge_left, (size_t)(k + 1) * sizeof *b->merge_left);
    b->merge_right = xrealloc(b->merge_right, (size_t)(k + 1) * sizeof *b->merge_right);
    b->merge_out = xrealloc(b->merge_out, (size_t)(k + 1) * sizeof *b->merge_out);
    b->merge_left[k] = l;
    b->merge_right[k] = r;
    b->merge_out[k] = out;
    b->n_merges = k + 1;
    rank_slot(b, pair_key(l, r), k);
}

// An empty model: the specials and the end-of-word marker (symbol 0).
static void bpe_init(Bpe *b) {
    memset(b, 0, sizeof *b);
    b->vocab = xmalloc(BPE_N_SPECIAL * sizeof *b->vocab);
    for (int i = 0; i < BPE_N_SPECIAL; i++) b->vocab[i] = xstrdup(special_names[i]);
    b->n_vocab = BPE_N_SPECIAL;
    sym_intern(b, BPE_EOW, strlen(BPE_EOW));
}

void bpe_free(Bpe *b) {
    for (int i = 0; i < b->n_vocab; i++) free(b->vocab[i]);
    free(b->vocab);
    free(b->merge_left);
    free(b->merge_right);
    free(b->merge_out);
    free(b->sym_table);
    free(b->rank_key);
    free(b->rank_val);
    memset(b, 0, sizeof *b);
}

// --- learning ----------------------------------------------------------------------------

typedef struct {
    int32_t *sym;
    int len;
    int64_t freq;
} LWord;

typedef struct {
    int32_t l, r;
    int64_t count;
    int prev, next;       // bucket list of its count, -1 ends
    int *words;           // words that held it (may repeat or be stale)
    int n_words, cap_words;
    int key_word, key_pos; // its first occurrence, valid when !dirty
    int dirty;
} LPair;

typedef struct {
    LWord *w;
    int n_w;
    LPair *p;
    int n_p, cap_p;
    int64_t *hkey;
    int32_t *hval;
    size_t hcap;
    int *head;            // (max_count + 1) first pair of each count, -1 none
    int64_t max_count, top;
    int *stamp;           // (n_w) for deduplicating word lists
    int stamp_now;
} Learner;

static void lp_rehash(Learner *L) {
    free(L->hkey);
    free(L->hval);
    L->hcap = L->hcap ? L->hcap * 2 : 1024;
    L->hkey = xmalloc(L->hcap * sizeof *L->hkey);
    L->hval = xmalloc(L->hcap * sizeof *L->hval);
    for (size_t i = 0; i < L->hcap; i++) L->hkey[i] = -1;
    size_t mask = L->hcap - 1;
    for (int k = 0; k < L->n_p; k++) {
        int64_t key = pair_key(L->p[k].l, L->p[k].r);
        size_t i = hash_pair(key) & mask;
        while (L->hkey[i] != -1) i = (i + 1) & mask;
        L->hkey[i] = key;
        L->hval[i] = k;
    }
}

// The pair (l, r)'s index, created with count 0 when new.
static int lp_get(Learner *L, int32_t l, int32_t r) {
    int64_t key = pair_key(l, r);
    size_t mask = L->hcap - 1, i = hash_pair(key) & mask;
    for (; L->hkey[i] != -1; i = (i + 1) & mask)
        if (L->hkey[i] == key) return L->hval[i];
    if ((size_t)(L->n_p + 1) * 2 > L->hcap) {
        lp_rehash(L);
        return lp_get(L, l, r);
    }
    if (L->n_p == L->cap_p) L->p = xrealloc(L->p, (size_t)(L->cap_p = L->cap_p ? L->cap_p * 2 : 1024) * sizeof *L->p);
    int k = L->n_p++;
    L->p[k] = (LPair){.l = l, .r = r, .prev = -1, .next = -1, .dirty = 1};
    L->hkey[i] = key;
    L->hval[i] = k;
    return k;
}

static void bucket_remove(Learner *L, int k) {
    LPair *p = &L->p[k];
    if (p->prev >= 0) L->p[p->prev].next = p->next;
    else L->head[p->count] = p->next;
    if (p->next >= 0) L->p[p->next].prev = p->prev;
    p->prev = p->next = -1;
}

static void bucket_insert(Learner *L, int k) {
    LPair *p = &L->p[k];
    p->prev = -1;
    p->next = L->head[p->count];
    if (p->next >= 0) L->p[p->next].prev = k;
    L->head[p->count] = k;
    if (p->count > L->top) L->top = p->count;
}

// count += delta for pair (l, r); word w gains an occurrence when delta > 0.
static void lp_add(Learner *L, int32_t l, int32_t r, int64_t delta, int w) {
    int k = lp_get(L, l, r);
    LPair *p = &L->p[k];
    if (L->head && p->count > 0) bucket_remove(L, k);
    p->count += delta;
    assert(p->count >= 0);
    p->dirty = 1;
    if (delta > 0 && (p->n_words == 0 || p->words[p->n_words - 1] != w)) {
        if (p->n_words == p->cap_words)
            p->words = xrealloc(p->words, (size_t)(p->cap_words = p->cap_words ? p->cap_words * 2 : 4) * sizeof *p->words);
        p->words[p->n_words++] = w;
    }
    if (L->head && p->count > 0) {
        assert(p->count <= L->max_count);
        bucket_insert(L, k);
    }
}

// First position of (l, r) in word w, or -1.
static int first_pos(const LWord *w, int32_t l, int32_t r) {
    for (int i = 0; i + 1 < w->len; i++)
        if (w->sym[i] == l && w->sym[i + 1] == r) return i;
    return -1;
}

// Recomputes pair k's first occurrence; drops stale and repeated words from its list.
static void lp_key(Learner *L, int k) {
    LPair *p = &L->p[k];
    L->stamp_now++;
    int keep = 0;
    p->key_word = INT_MAX;
    p->key_pos = INT_MAX;
    for (int i = 0; i < p->n_words; i++) {
        int w = p->words[i];
        if (L->stamp[w] == L->stamp_now) continue;
        L->stamp[w] = L->stamp_now;
        int pos = first_pos(&L->w[w], p->l, p->r);
        if (pos < 0) continue;
        p->words[keep++] = w;
        if (w < p->key_word) {
            p->key_word = w;
            p->key_pos = pos;
        }
    }
    p->n_words = keep;
    p->dirty = 0;
}

// The best pair (see bpe.h), or -1 when the best count is below min_count.
static int lp_best(Learner *L, int64_t min_count) {
    while (L->top > 0 && L->head[L->top] < 0) L->top--;
    if (L->top < min_count || L->top == 0) return -1;
    int best = -1;
    for (int k = L->head[L->top]; k >= 0; k = L->p[k].next) {
        if (L->p[k].next < 0 && best < 0) return k;  // alone in its bucket
        if (L->p[k].dirty) lp_key(L, k);
        if (best < 0 || L->p[k].key_word < L->p[best].key_word ||
            (L->p[k].key_word == L->p[best].key_word && L->p[k].key_pos < L->p[best].key_pos))
            best = k;
    }
    return best;
}

// Merges pair k everywhere, into symbol c.
static void lp_merge(Learner *L, int k, int32_t c) {
    int32_t a = L->p[k].l, bs = L->p[k].r;
    int *words = L->p[k].words, n_words = L->p[k].n_words;
    L->p[k].words = NULL;
    L->p[k].n_words = L->p[k].cap_words = 0;
    L->stamp_now++;
    int stamp = L->stamp_now;
    int32_t *tmp = NULL;
    int tmp_cap = 0;
    for (int i = 0; i < n_words; i++) {
        int wi = words[i];
        if (L->stamp[wi] == stamp) continue;
        L->stamp[wi] = stamp;
        LWord *w = &L->w[wi];
        if (first_pos(w, a, bs) < 0) continue;
        for (int j = 0; j + 1 < w->len; j++) lp_add(L, w->sym[j], w->sym[j + 1], -w->freq, wi);
        if (w->len > tmp_cap) tmp = xrealloc(tmp, (size_t)(tmp_cap = w->len) * sizeof *tmp);
        int m = 0;
        for (int j = 0; j < w->len;) {
            if (j + 1 < w->len && w->sym[j] == a && w->sym[j + 1] == bs) {
                tmp[m++] = c;
                j += 2;
            } else {
                tmp[m++] = w->sym[j++];
            }
        }
        memcpy(w->sym, tmp, (size_t)m * sizeof *tmp);
        w->len = m;
        for (int j = 0; j + 1 < w->len; j++) lp_add(L, w->sym[j], w->sym[j + 1], w->freq, wi);
    }
    free(tmp);
    free(words);
}

static int check_words(const char *const *words, int n_words, const char *name, Error *err) {
    for (int i = 0; i < n_words; i++) {
        const unsigned char *p = (const unsigned char *)words[i];
        size_t n = strlen(words[i]);
        if (n == 0) return error_set(err, "%s: word %d is empty", name, i + 1);
        if (strstr(words[i], BPE_EOW))
            return error_set(err, "%s: word %d holds the end-of-word marker " BPE_EOW, name, i + 1);
        for (size_t j = 0; j < n;) {
            int k = utf8_len(p + j, n - j);
            if (!k) return error_set(err, "%s: word %d: invalid UTF-8 at byte %zu", name, i + 1, j + 1);
            if (is_space(p[j])) return error_set(err, "%s: word %d holds whitespace", name, i + 1);
            j += (size_t)k;
        }
    }
    return 0;
}

int bpe_learn_words(Bpe *b, const char *const *words, const int64_t *freq, int n_words,
                    int n_merges, int min_count, const char *name, Error *err) {
    assert(n_merges >= 0 && n_merges <= BPE_MAX_MERGES && min_count >= 1);
    bpe_init(b);
    if (check_words(words, n_words, name, err)) {
        bpe_free(b);
        return -1;
    }
    Learner L = {0};
    L.n_w = n_words;
    L.w = xcalloc((size_t)n_words + 1, sizeof *L.w);
    L.stamp = xcalloc((size_t)n_words + 1, sizeof *L.stamp);
    lp_rehash(&L);
    for (int i = 0; i < n_words; i++) {
        assert(freq[i] >= 1);
        size_t n = strlen(words[i]);
        LWord *w = &L.w[i];
        w->sym = xmalloc((n + 1) * sizeof *w->sym);
        w->freq = freq[i];
        for (size_t j = 0; j < n;) {
            int k = utf8_len((const unsigned char *)words[i] + j, n - j);
            w->sym[w->len++] = sym_intern(b, words[i] + j, (size_t)k);
            j += (size_t)k;
        }
        w->sym[w->len++] = 0;  // the marker
        for (int j = 0; j + 1 < w->len; j++) lp_add(&L, w->sym[j], w->sym[j + 1], w->freq, i);
    }
    b->n_alphabet = b->n_vocab - BPE_N_SPECIAL - 1;
    for (int k = 0; k < L.n_p; k++)
        if (L.p[k].count > L.max_count) L.max_count = L.p[k].count;
    L.head = xmalloc((size_t)(L.max_count + 1) * sizeof *L.head);
    for (int64_t c = 0; c <= L.max_count; c++) L.head[c] = -1;
    for (int k = L.n_p - 1; k >= 0; k--)
        if (L.p[k].count > 0) bucket_insert(&L, k);
    while (b->n_merges < n_merges) {
        int k = lp_best(&L, min_count);
        if (k < 0) break;
        int32_t l = L.p[k].l, r = L.p[k].r;
        add_merge(b, l, r);
        lp_merge(&L, k, b->merge_out[b->n_merges - 1]);
    }
    for (int i = 0; i < n_words; i++) free(L.w[i].sym);
    for (int k = 0; k < L.n_p; k++) free(L.p[k].words);
    free(L.w);
    free(L.p);
    free(L.hkey);
    free(L.hval);
    free(L.head);
    free(L.stamp);
    return 0;
}

int bpe_learn_words_reference(Bpe *b, const char *const *words, const int64_t *freq,
                              int n_words, int n_merges, int min_count, const char *name,
                              Error *err) {
    assert(n_merges >= 0 && n_merges <= BPE_MAX_MERGES && min_count >= 1);
    bpe_init(b);
    if (check_words(words, n_words, name, err)) {
        bpe_free(b);
        return -1;
    }
    LWord *w = xcalloc((size_t)n_words + 1, sizeof *w);
    for (int i = 0; i < n_words; i++) {
        size_t n = strlen(words[i]);
        w[i].sym = xmalloc((n + 1) * sizeof *w[i].sym);
        w[i].freq = freq[i];
        for (size_t j = 0; j < n;) {
            int k = utf8_len((const unsigned char *)words[i] + j, n - j);
            w[i].sym[w[i].len++] = sym_intern(b, words[i] + j, (size_t)k);
            j += (size_t)k;
        }
        w[i].sym[w[i].len++] = 0;
    }
    b->n_alphabet = b->n_vocab - BPE_N_SPECIAL - 1;
    int32_t *pl = NULL, *pr = NULL;
    int64_t *pc = NULL;
    while (b->n_merges < n_merges) {
        // Pairs in order of first occurrence, with their counts (a plain list search).
        int np = 0;
        for (int i = 0; i < n_words; i++)
            for (int j = 0; j + 1 < w[i].len; j++) {
                int k = 0;
                while (k < np && !(pl[k] == w[i].sym[j] && pr[k] == w[i].sym[j + 1])) k++;
                if (k == np) {
                    pl = xrealloc(pl, (size_t)(np + 1) * sizeof *pl);
                    pr = xrealloc(pr, (size_t)(np + 1) * sizeof *pr);
                    pc = xrealloc(pc, (size_t)(np + 1) * sizeof *pc);
                    pl[np] = w[i].sym[j];
                    pr[np] = w[i].sym[j + 1];
                    pc[np++] = 0;
                }
                pc[k] += w[i].freq;
            }
        int best = -1;
        for (int k = 0; k < np; k++)
            if (best < 0 || pc[k] > pc[best]) best = k;
        if (best < 0 || pc[best] < min_count) break;
        int32_t l = pl[best], r = pr[best];
        add_merge(b, l, r);
        int32_t c = b->merge_out[b->n_merges - 1];
        for (int i = 0; i < n_words; i++) {
            int m = 0;
            for (int j = 0; j < w[i].len;) {
                if (j + 1 < w[i].len && w[i].sym[j] == l && w[i].sym[j + 1] == r) {
                    w[i].sym[m++] = c;
                    j += 2;
                } else {
                    w[i].sym[m++] = w[i].sym[j++];
                }
            }
            w[i].len = m;
        }
    }
    for (int i = 0; i < n_words; i++) free(w[i].sym);
    free(w);
    free(pl);
    free(pr);
    free(pc);
    return 0;
}

// Words of s: (start, length) pairs at ASCII whitespace; returns their number.
static int split_spans(size_t **start, size_t **len, const char *s) {
    int n = 0, cap = 16;
    size_t *st = xmalloc((size_t)cap * sizeof *st), *ln = xmalloc((size_t)cap * sizeof *ln);
    for (size_t i = 0; s[i];) {
        while (s[i] && is_space((unsigned char)s[i])) i++;
        if (!s[i]) break;
        size_t j = i;
        while (s[j] && !is_space((unsigned char)s[j])) j++;
        if (n == cap) {
            cap *= 2;
            st = xrealloc(st, (size_t)cap * sizeof *st);
            ln = xrealloc(ln, (size_t)cap * sizeof *ln);
        }
        st[n] = i;
        ln[n++] = j - i;
        i = j;
    }
    *start = st;
    *len = ln;
    return n;
}

int bpe_learn(Bpe *b, const char *const *texts, int n, int n_merges, int min_count,
              const char *name, Error *err) {
    // Distinct words in order of first appearance, with counts.
    size_t cap = 1024, mask;
    int *table = xmalloc(cap * sizeof *table);
    for (size_t i = 0; i < cap; i++) table[i] = -1;
    char **words = NULL;
    int64_t *freq = NULL;
    int n_words = 0;
    for (int t = 0; t < n; t++) {
        size_t *st, *ln;
        int m = split_spans(&st, &ln, texts[t]);
        for (int j = 0; j < m; j++) {
            const char *w = texts[t] + st[j];
            mask = cap - 1;
            size_t i = hash_bytes(w, ln[j]) & mask;
            for (; table[i] >= 0; i = (i + 1) & mask)
                if (strlen(words[table[i]]) == ln[j] && memcmp(words[table[i]], w, ln[j]) == 0) break;
            if (table[i] >= 0) {
                freq[table[i]]++;
                continue;
            }
            words = xrealloc(words, (size_t)(n_words + 1) * sizeof *words);
            freq = xrealloc(freq, (size_t)(n_words + 1) * sizeof *freq);
            words[n_words] = xmalloc(ln[j] + 1);
            memcpy(words[n_words], w, ln[j]);
            words[n_words][ln[j]] = 0;
            freq[n_words] = 1;
            table[i] = n_words++;
            if ((size_t)n_words * 2 > cap) {
                cap *= 2;
                free(table);
                table = xmalloc(cap * sizeof *table);
                for (size_t q = 0; q < cap; q++) table[q] = -1;
                for (int k = 0; k < n_words; k++) {
                    size_t q = hash_bytes(words[k], strlen(words[k])) & (cap - 1);
                    while (table[q] >= 0) q = (q + 1) & (cap - 1);
                    table[q] = k;
                }
            }
        }
        free(st);
        free(ln);
    }
    free(table);
    int rc = bpe_learn_words(b, (const char *const *)words, freq, n_words, n_merges, min_count, name, err);
    for (int i = 0; i < n_words; i++) free(words[i]);
    free(words);
    free(freq);
    return rc;
}

// --- applying ----------------------------------------------------------------------------

typedef struct {
    size_t start, end;  // bytes of the word
    int eow;            // ends with the marker
    int32_t id;         // symbol id, -1 unknown
} Piece;

// The pieces of word w (n bytes) into *out (malloc'd); returns their number.
static int segment_word(const Bpe *b, const char *w, size_t n, Piece **out) {
    Piece *p = xmalloc((n + 1) * sizeof *p);
    int m = 0;
    for (size_t j = 0; j < n;) {
        int k = utf8_len((const unsigned char *)w + j, n - j);
        if (!k) k = 1;
        p[m++] = (Piece){j, j + (size_t)k, 0, sym_find(b, w + j, (size_t)k)};
        j += (size_t)k;
    }
    p[m++] = (Piece){n, n, 1, 0};
    int32_t last = -1;
    for (;;) {
        int32_t best = INT32_MAX;
        for (int i = 0; i + 1 < m; i++) {
            if (p[i].id < 0 || p[i + 1].id < 0) continue;
            int32_t r = rank_find(b, p[i].id, p[i + 1].id);
            if (r > last && r < best) best = r;
        }
        if (best == INT32_MAX) break;
        int32_t l = b->merge_left[best], r = b->merge_right[best];
        int q = 0;
        for (int i = 0; i < m;) {
            if (i + 1 < m && p[i].id == l && p[i + 1].id == r) {
                p[q] = (Piece){p[i].start, p[i + 1].end, p[i + 1].eow, b->merge_out[best]};
                i += 2;
            } else {
                p[q] = p[i++];
            }
            q++;
        }
        m = q;
        last = best;
    }
    *out = p;
    return m;
}

void bpe_segment(const Bpe *b, const char *text, char ***pieces, int *n) {
    size_t *st, *ln;
    int nw = split_spans(&st, &ln, text);
    char **out = NULL;
    int m = 0;
    for (int i = 0; i < nw; i++) {
        Piece *p;
        int k = segment_word(b, text + st[i], ln[i], &p);
        out = xrealloc(out, (size_t)(m + k) * sizeof *out);
        for (int j = 0; j < k; j++) {
            size_t len = p[j].end - p[j].start;
            char *s = xmalloc(len + (p[j].eow ? strlen(BPE_EOW) : 0) + 1);
            memcpy(s, text + st[i] + p[j].start, len);
            s[len] = 0;
            if (p[j].eow) strcat(s, BPE_EOW);
            out[m++] = s;
        }
        free(p);
    }
    free(st);
    free(ln);
    *pieces = out;
    *n = m;
}

void bpe_pieces_free(char **pieces, int n) {
    for (int i = 0; i < n; i++) free(pieces[i]);
    free(pieces);
}

char *bpe_join(char *const *pieces, int n) {
    size_t total = 1;
    for (int i = 0; i < n; i++) total += strlen(pieces[i]) + 1;
    char *out = xmalloc(total);
    size_t at = 0, eow = strlen(BPE_EOW);
    for (int i = 0; i < n; i++) {
        size_t len = strlen(pieces[i]);
        int ends = len >= eow && strcmp(pieces[i] + len - eow, BPE_EOW) == 0;
        if (ends) len -= eow;
        memcpy(out + at, pieces[i], len);
        at += len;
        if (ends) out[at++] = ' ';
    }
    if (at > 0 && out[at - 1] == ' ') at--;
    out[at] = 0;
    return out;
}

void bpe_encode(const Bpe *b, const char *text, int **ids, int *n) {
    size_t *st, *ln;
    int nw = split_spans(&st, &ln, text);
    int *out = NULL, m = 0;
    for (int i = 0; i < nw; i++) {
        Piece *p;
        int k = segment_word(b, text + st[i], ln[i], &p);
        out = xrealloc(out, (size_t)(m + k) * sizeof *out);
        for (int j = 0; j < k; j++) out[m++] = p[j].id < 0 ? BPE_UNK : p[j].id + BPE_N_SPECIAL;
        free(p);
    }
    free(st);
    free(ln);
    *ids = out;
    *n = m;
}

char *bpe_decode(const Bpe *b, const int *ids, int n) {
    char **pieces = xmalloc((size_t)(n + 1) * sizeof *pieces);
    int m = 0;
    for (int i = 0; i < n; i++) {
        assert(ids[i] >= 0 && ids[i] < b->n_vocab);
        if (ids[i] == BPE_PAD || ids[i] == BPE_BOS || ids[i] == BPE_EOS) continue;
        pieces[m++] = b->vocab[ids[i]];
    }
    char *s = bpe_join(pieces, m);
    free(pieces);
    return s;
}

int bpe_piece_id(const Bpe *b, const char *piece) {
    int32_t id = sym_find(b, piece, strlen(piece));
    return id < 0 ? BPE_UNK : id + BPE_N_SPECIAL;
}

// --- text form ---------------------------------------------------------------------------

#define BPE_HEADER "#attend-bpe 1"

char *bpe_to_text(const Bpe *b) {
    size_t total = strlen(BPE_HEADER) + strlen("alphabet") + 3;
    for (int i = 0; i < b->n_alphabet; i++) total += strlen(sym_str(b, i + 1)) + 1;
    for (int k = 0; k < b->n_merges; k++)
        total += strlen(sym_str(b, b->merge_left[k])) + strlen(sym_str(b, b->merge_right[k])) + 2;
    char *s = xmalloc(total + 1), *p = s;
    p += sprintf(p, "%s\nalphabet", BPE_HEADER);
    for (int i = 0; i < b->n_alphabet; i++) p += sprintf(p, " %s", sym_str(b, i + 1));
    *p++ = '\n';
    for (int k = 0; k < b->n_merges; k++)
        p += sprintf(p, "%s %s\n", sym_str(b, b->merge_left[k]), sym_str(b, b->merge_right[k]));
    *p = 0;
    return s;
}

int bpe_from_text(Bpe *b, const char *text, size_t len, const char *name, Error *err) {
    bpe_init(b);
    int line = 0;
    if (len > BPE_MAX_TEXT) {
        bpe_free(b);
        return error_set(err, "%s: merges text of %zu bytes, more than %zu", name, len, BPE_MAX_TEXT);
    }
    if (memchr(text, 0, len)) {
        bpe_free(b);
        return error_set(err, "%s: merges text holds a NUL byte", name);
    }
    size_t at = 0;
    int rc = 0;
    while (at < len && rc == 0) {
        const char *ln = text + at;
        const char *nl = memchr(ln, '\n', len - at);
        size_t n = nl ? (size_t)(nl - ln) : len - at;
        at += n + (nl ? 1 : 0);
        line++;
        if (line == 1) {
            if (n != strlen(BPE_HEADER) || memcmp(ln, BPE_HEADER, n) != 0)
                rc = error_set(err, "%s: line 1: not a BPE merges text (expected \"%s\")", name, BPE_HEADER);
            continue;
        }
        if (line == 2) {
            if (n < 8 || memcmp(ln, "alphabet", 8) != 0 || (n > 8 && ln[8] != ' ')) {
                rc = error_set(err, "%s: line 2: expected the alphabet line", name);
                continue;
            }
            for (size_t i = 8; i < n && rc == 0;) {
                size_t j = i + 1, e = j;
                while (e < n && ln[e] != ' ') e++;
                int k = j < n ? utf8_len((const unsigned char *)ln + j, e - j) : 0;
                if (e == j || k == 0 || (size_t)k != e - j || is_space((unsigned char)ln[j]))
                    rc = error_set(err, "%s: line 2: alphabet entry %d is not one UTF-8 character",
                                   name, b->n_alphabet + 1);
                else if (sym_find(b, ln + j, e - j) >= 0)
                    rc = error_set(err, "%s: line 2: alphabet entry %d repeats", name, b->n_alphabet + 1);
                else {
                    sym_intern(b, ln + j, e - j);
                    b->n_alphabet++;
                }
                i = e;
            }
            continue;
        }
        if (n == 0 && at >= len) break;  // the final newline
        if (b->n_merges >= BPE_MAX_MERGES) {
            rc = error_set(err, "%s: line %d: more than %d merges", name, line, BPE_MAX_MERGES);
            continue;
        }
        const char *sp = memchr(ln, ' ', n);
        if (!sp || sp == ln || sp == ln + n - 1 || memchr(sp + 1, ' ', (size_t)(ln + n - sp - 1))) {
            rc = error_set(err, "%s: line %d: a merge is two symbols separated by one space", name, line);
            continue;
        }
        int32_t l = sym_find(b, ln, (size_t)(sp - ln));
        int32_t r = sym_find(b, sp + 1, (size_t)(ln + n - sp - 1));
        if (l < 0 || r < 0)
            rc = error_set(err, "%s: line %d: merge of a symbol not made by the lines before", name, line);
        else if (rank_find(b, l, r) >= 0)
            rc = error_set(err, "%s: line %d: merge repeats an earlier one", name, line);
        else
            add_merge(b, l, r);
    }
    if (rc == 0 && line < 2) rc = error_set(err, "%s: merges text ends before the alphabet line", name);
    if (rc) bpe_free(b);
    return rc;
}
