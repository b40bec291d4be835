// vocab.c: see vocab.h.
#include "seq/vocab.h"

#include <cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"

#define VOCAB_MAX_SIZE (1 << 24)  // a parsed vocabulary larger than this is rejected

static const char *const special_words[VOCAB_NSPECIAL] = {"<pad>", "<start>", "<end>", "<unk>"};

static uint32_t hash_str(const char *s) {
    uint32_t h = 2166136261u;  // FNV-1a
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) h = (h ^ *p) * 16777619u;
    return h;
}

static int is_special(const char *w) {
    for (int i = 0; i < VOCAB_NSPECIAL; i++)
        if (strcmp(w, special_words[i]) == 0) return 1;
    return 0;
}

// --- a string -> slot hash shared by the counter and the vocabulary ---------------------

// Finds word in table (cap a power of two) whose entries index into words; returns the
// slot holding it or the empty slot where it would go.
static int find_slot(const int *table, int cap, char *const *words, const char *word) {
    uint32_t mask = (uint32_t)cap - 1;
    for (uint32_t i = hash_str(word) & mask;; i = (i + 1) & mask) {
        int id = table[i];
        if (id < 0 || strcmp(words[id], word) == 0) return (int)i;
    }
}

static int table_cap_for(int n) {
    int cap = 16;
    while (cap < 2 * n) cap *= 2;
    return cap;
}

static void vocab_index(Vocab *v) {
    v->table_cap = table_cap_for(v->size);
    v->table = xmalloc((size_t)v->table_cap * sizeof *v->table);
    for (int i = 0; i < v->table_cap; i++) v->table[i] = -1;
    for (int id = 0; id < v->size; id++) {
        int s = find_slot(v->table, v->table_cap, v->words, v->words[id]);
        CHECK(v->table[s] < 0, "duplicate word in vocabulary");
        v->table[s] = id;
    }
}

// --- building ---------------------------------------------------------------------------

static void counter_grow_table(VocabCounter *c) {
    c->table_cap = c->table_cap ? 2 * c->table_cap : 1024;
    free(c->table);
    c->table = xmalloc((size_t)c->table_cap * sizeof *c->table);
    for (int i = 0; i < c->table_cap; i++) c->table[i] = -1;
    for (int k = 0; k < c->n; k++)
        c->table[find_slot(c->table, c->table_cap, c->words, c->words[k])] = k;
}

// Counts word unless it is a special (a copy is kept the first time it is seen).
static void counter_add(VocabCounter *c, const char *word) {
    if (2 * (c->n + 1) > c->table_cap) counter_grow_table(c);
    int s = find_slot(c->table, c->table_cap, c->words, word);
    if (c->table[s] < 0) {
        if (c->n == c->cap) {
            c->cap = c->cap ? 2 * c->cap : 1024;
            c->words = xrealloc(c->words, (size_t)c->cap * sizeof *c->words);
            c->counts = xrealloc(c->counts, (size_t)c->cap * sizeof *c->counts);
        }
        c->words[c->n] = xstrdup(word);
        c->counts[c->n] = 0;
        c->table[s] = c->n++;
    }
    if (!is_special(word)) c->counts[c->table[s]]++;
}

void vocab_counter_add(VocabCounter *c, const Tokens *t) {
    for (int i = 0; i < t->n; i++) counter_add(c, t->tok[i]);
}

void vocab_counter_free(VocabCounter *c) {
    for (int k = 0; k < c->n; k++) free(c->words[k]);
    free(c->words);
    free(c->counts);
    free(c->table);
    memset(c, 0, sizeof *c);
}

typedef struct {
    const char *word;
    int count;
} WordCount;

static int cmp_word_count(const void *a, const void *b) {
    const WordCount *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return strcmp(x->word, y->word);
}

void vocab_build(Vocab *v, const Tokens *captions, int n_captions, int min_count) {
    CHECK(v && n_captions >= 0 && (n_captions == 0 || captions) && min_count >= 1);
    VocabCounter c = {0};
    for (int i = 0; i < n_captions; i++) vocab_counter_add(&c, &captions[i]);
    vocab_from_counter(v, &c, min_count);
    vocab_counter_free(&c);
}

void vocab_from_counter(Vocab *v, const VocabCounter *c, int min_count) {
    CHECK(v && c && min_count >= 1);
    WordCount *wc = xmalloc((size_t)(c->n ? c->n : 1) * sizeof *wc);
    int kept = 0;
    for (int i = 0; i < c->n; i++)  // a special's count stays 0: never kept as a word
        if (c->counts[i] >= min_count) wc[kept++] = (WordCount){c->words[i], c->counts[i]};
    qsort(wc, (size_t)kept, sizeof *wc, cmp_word_count);

    memset(v, 0, sizeof *v);
    v->min_count = min_count;
    v->size = VOCAB_NSPECIAL + kept;
    v->words = xmalloc((size_t)v->size * sizeof *v->words);
    for (int i = 0; i < VOCAB_NSPECIAL; i++) v->words[i] = xstrdup(special_words[i]);
    for (int i = 0; i < kept; i++) v->words[VOCAB_NSPECIAL + i] = xstrdup(wc[i].word);
    vocab_index(v);
    free(wc);
}

// --- lookups ------------------------------------------------------------------------------

int vocab_id(const Vocab *v, const char *word) {
    int s = find_slot(v->table, v->table_cap, v->words, word);
    return v->table[s] >= 0 ? v->table[s] : VOCAB_UNK;
}

int vocab_encode(int *ids, const Vocab *v, const Tokens *t, int max_len) {
    CHECK(max_len >= 0);
    int n = t->n < max_len ? t->n : max_len;
    for (int i = 0; i < n; i++) ids[i] = vocab_id(v, t->tok[i]);
    return n;
}

// 1 if the decode rules keep id (ids stopping the decode are handled by the caller).
static int decode_keep(const Vocab *v, int id, int keep_unk) {
    CHECK(id >= 0 && id < v->size, "token id %d outside the vocabulary of %d", id, v->size);
    if (id == VOCAB_PAD || id == VOCAB_START) return 0;
    if (id == VOCAB_UNK) return keep_unk;
    return 1;
}

void vocab_decode_tokens(Tokens *out, const Vocab *v, const int *ids, int n, int keep_unk) {
    memset(out, 0, sizeof *out);
    int count = 0;
    for (int i = 0; i < n && ids[i] != VOCAB_END; i++) count += decode_keep(v, ids[i], keep_unk);
    if (count == 0) return;
    out->tok = xmalloc((size_t)count * sizeof *out->tok);
    for (int i = 0; i < n && ids[i] != VOCAB_END; i++)
        if (decode_keep(v, ids[i], keep_unk)) out->tok[out->n++] = xstrdup(v->words[ids[i]]);
}

char *vocab_decode(const Vocab *v, const int *ids, int n, int keep_unk) {
    Tokens t;
    vocab_decode_tokens(&t, v, ids, n, keep_unk);
    char *s = tokens_join(&t);
    tokens_free(&t);
    return s;
}

// --- JSON ---------------------------------------------------------------------------------

char *vocab_to_json(const Vocab *v) {
    cJSON *root = cJSON_CreateObject();
    cJSON *words = cJSON_CreateArray();
    CHECK(root && words, "out of memory");
    cJSON_AddStringToObject(root, "format", "attend-vocab");
    cJSON_AddNumberToObject(root, "version", 1);
    cJSON_AddNumberToObject(root, "min_count", v->min_count);
    for (int i = 0; i < v->size; i++) {
        cJSON *w = cJSON_CreateString(v->words[i]);
        CHECK(w, "out of memory");
        cJSON_AddItemToArray(words, w);
    }
    cJSON_AddItemToObject(root, "words", words);
    char *printed = cJSON_PrintUnformatted(root);
    CHECK(printed, "out of memory");
    char *s = xstrdup(printed);
    cJSON_free(printed);
    cJSON_Delete(root);
    return s;
}

static int is_int_value(const cJSON *x, double lo, double hi) {
    if (!cJSON_IsNumber(x)) return 0;
    double d = x->valuedouble;
    return d >= lo && d <= hi && d == floor(d);
}

// The fields beside the words: format, version and min_count; words an array of a
// size the vocabulary allows.
static int check_fields(const cJSON *root, Error *err) {
    const cJSON *format = cJSON_GetObjectItemCaseSensitive(root, "format");
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(root, "version");
    const cJSON *min_count = cJSON_GetObjectItemCaseSensitive(root, "min_count");
    const cJSON *words = cJSON_GetObjectItemCaseSensitive(root, "words");
    if (!cJSON_IsObject(root)) return error_set(err, "vocabulary: JSON is not an object");
    if (!cJSON_IsString(format) || strcmp(format->valuestring, "attend-vocab") != 0)
        return error_set(err, "vocabulary: \"format\" is missing or not \"attend-vocab\"");
    if (!is_int_value(version, 1, 1))
        return error_set(err, "vocabulary: unsupported \"version\" (expected 1)");
    if (!is_int_value(min_count, 1, 2147483647.0))
        return error_set(err, "vocabulary: \"min_count\" is missing or not a positive integer");
    if (!cJSON_IsArray(words)) return error_set(err, "vocabulary: \"words\" is missing or not an array");
    int size = cJSON_GetArraySize(words);
    if (size < VOCAB_NSPECIAL || size > VOCAB_MAX_SIZE)
        return error_set(err, "vocabulary: \"words\" has %d entries (need %d..%d)", size,
                         VOCAB_NSPECIAL, VOCAB_MAX_SIZE);
    return 0;
}

// Copies the words into v, each checked: a non-empty string of valid UTF-8 without
// whitespace, the specials first and only there.
static int read_words(Vocab *v, const cJSON *words, Error *err) {
    v->words = xcalloc((size_t)cJSON_GetArraySize(words), sizeof *v->words);
    const cJSON *w;
    int i = 0;
    cJSON_ArrayForEach(w, words) {
        if (!cJSON_IsString(w) || !w->valuestring || !w->valuestring[0])
            return error_set(err, "vocabulary: words[%d] is not a non-empty string", i);
        const char *s = w->valuestring;
        long bad;
        if (!utf8_valid(s, &bad)) return error_set(err, "vocabulary: words[%d] is not valid UTF-8", i);
        if (strpbrk(s, " \t\n\r\v\f")) return error_set(err, "vocabulary: words[%d] contains whitespace", i);
        if (i < VOCAB_NSPECIAL ? strcmp(s, special_words[i]) != 0 : is_special(s))
            return error_set(err, "vocabulary: words[%d] = \"%.40s\": the specials must be exactly "
                             "<pad> <start> <end> <unk>, first", i, s);
        v->words[i] = xstrdup(s);
        v->size = ++i;
    }
    return 0;
}

// The hash table of v's words, indexed one by one so that the first repeat is named.
static int index_words(Vocab *v, Error *err) {
    v->table_cap = table_cap_for(v->size);
    v->table = xmalloc((size_t)v->table_cap * sizeof *v->table);
    for (int k = 0; k < v->table_cap; k++) v->table[k] = -1;
    for (int id = 0; id < v->size; id++) {
        int s = find_slot(v->table, v->table_cap, v->words, v->words[id]);
        if (v->table[s] >= 0)
            return error_set(err, "vocabulary: words[%d] = \"%.40s\" repeats words[%d]", id,
                             v->words[id], v->table[s]);
        v->table[s] = id;
    }
    return 0;
}

int vocab_from_json(Vocab *v, const char *json, Error *err) {
    CHECK(v && json);
    memset(v, 0, sizeof *v);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(json, &end, 1);
    if (!root) {
        long at = end ? (long)(end - json) : 0;
        return error_set(err, "vocabulary: malformed JSON near byte %ld", at);
    }
    int rc = check_fields(root, err) ||
             read_words(v, cJSON_GetObjectItemCaseSensitive(root, "words"), err) ||
             index_words(v, err) ? -1 : 0;
    if (!rc) v->min_count = (int)cJSON_GetObjectItemCaseSensitive(root, "min_count")->valuedouble;
    cJSON_Delete(root);
    if (rc) vocab_free(v);
    return rc;
}

void vocab_free(Vocab *v) {
    if (!v) return;
    for (int i = 0; i < v->size; i++) free(v->words[i]);
    free(v->words);
    free(v->table);
    memset(v, 0, sizeof *v);
}
