// sentences.c: the labelled-sentence readers and splits (datasets/sentences.h).
#include "datasets/sentences.h"

#include <cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/fileio.h"
#include "core/rng.h"
#include "core/text_escape.h"

// What a reader gathers before the classes are numbered: the labels as written.
typedef struct {
    SentenceSet *s;
    int cap;
} Gather;

static void gather_add(Gather *g, const char *text, size_t len, int value) {
    SentenceSet *s = g->s;
    if (s->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 256;
        s->text = xrealloc(s->text, (size_t)g->cap * sizeof *s->text);
        s->label = xrealloc(s->label, (size_t)g->cap * sizeof *s->label);
    }
    char *t = xmalloc(len + 1);
    memcpy(t, text, len);
    t[len] = 0;
    s->text[s->n] = t;
    s->label[s->n] = value;
    s->n++;
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

// s->label holds label values: make them class indices over the sorted distinct values.
static void number_classes(SentenceSet *s) {
    int *v = xmalloc((size_t)(s->n ? s->n : 1) * sizeof *v);
    memcpy(v, s->label, (size_t)s->n * sizeof *v);
    qsort(v, (size_t)s->n, sizeof *v, cmp_int);
    int k = 0;
    for (int i = 0; i < s->n; i++)
        if (k == 0 || v[k - 1] != v[i]) v[k++] = v[i];
    free(s->class_value);
    s->class_value = xrealloc(v, (size_t)(k ? k : 1) * sizeof *v);
    s->n_classes = k;
    for (int i = 0; i < s->n; i++) {
        const int *at = bsearch(&s->label[i], s->class_value, (size_t)k, sizeof *v, cmp_int);
        s->label[i] = (int)(at - s->class_value);
    }
}

void sentences_free(SentenceSet *s) {
    for (int i = 0; i < s->n; i++) free(s->text[i]);
    free(s->text);
    free(s->label);
    free(s->class_value);
    memset(s, 0, sizeof *s);
}

// The checks every sentence gets; where is "line N" or "entry N". 0, or -1 with err set.
static int check_sentence(const char *t, size_t len, const char *name, const char *where,
                          Error *err) {
    if (len == 0) return error_set(err, "%s: %s: empty sentence", name, where);
    if (len > SENTENCE_MAX_BYTES)
        return error_set(err, "%s: %s: a sentence of %zu bytes (at most %d)", name, where, len,
                         SENTENCE_MAX_BYTES);
    for (size_t i = 0; i < len;) {
        const unsigned char *p = (const unsigned char *)t + i;
        if (*p == 0) return error_set(err, "%s: %s: a NUL byte at byte %zu", name, where, i + 1);
        // text_utf8_seq_len reads up to a NUL: give it the bytes left, at most 4, ended.
        unsigned char q[5] = {0};
        memcpy(q, p, len - i < 4 ? len - i : 4);
        int n = text_utf8_seq_len(q);
        if (n == 0)
            return error_set(err, "%s: %s: not valid UTF-8 at byte %zu of the sentence", name,
                             where, i + 1);
        i += (size_t)n;
    }
    return 0;
}

// The checks of the whole set, then the class numbering. Frees *s on failure.
static int finish(SentenceSet *s, const char *name, Error *err) {
    if (s->n == 0) {
        sentences_free(s);
        return error_set(err, "%s: no sentences", name);
    }
    number_classes(s);
    if (s->n_classes < 2) {
        int v = s->class_value[0];
        sentences_free(s);
        return error_set(err, "%s: one class only (label %d): a classifier needs two or more",
                         name, v);
    }
    return 0;
}

// --- JSON ------------------------------------------------------------------------------

// A whole JSON number within int into *v.
static int json_int(const cJSON *c, int *v) {
    if (!cJSON_IsNumber(c)) return 0;
    double d = c->valuedouble;
    if (!(d == floor(d)) || d < INT_MIN || d > INT_MAX) return 0;
    *v = (int)d;
    return 1;
}

int sentences_parse_json(SentenceSet *s, const char *data, size_t len, const char *name,
                         Error *err) {
    memset(s, 0, sizeof *s);
    if (len == 0) return error_set(err, "%s: empty file", name);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(data, len, &end, 0);
    if (root) {  // only white space may follow the value
        size_t i = (size_t)(end - data);
        while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r'))
            i++;
        if (i < len) {
            cJSON_Delete(root);
            root = NULL;
            end = data + i;
        }
    }
    if (!root) {
        size_t off = end ? (size_t)(end - data) : 0;
        int line = 1;
        for (size_t i = 0; i < off && i < len; i++) line += data[i] == '\n';
        return error_set(err, "%s: invalid JSON at line %d (byte %zu)", name, line, off);
    }
    if (!cJSON_IsArray(root)) {
        cJSON_Delete(root);
        return error_set(err, "%s: the JSON top level is not an array of {\"text\", \"class\"}",
                         name);
    }
    Gather g = {s, 0};
    int entry = 0, count = cJSON_GetArraySize(root);
    for (const cJSON *e = root->child; e; e = e->next) {
        entry++;
        char where[48];
        snprintf(where, sizeof where, "entry %d", entry);
        const cJSON *text = cJSON_IsObject(e) ? cJSON_GetObjectItemCaseSensitive(e, "text") : NULL;
        const cJSON *cls = cJSON_IsObject(e) ? cJSON_GetObjectItemCaseSensitive(e, "class") : NULL;
        int value = 0;
        const char *why = NULL;
        if (!cJSON_IsObject(e)) why = "not an object";
        else if (!cJSON_IsString(text)) why = text ? "\"text\" is not a string" : "no \"text\"";
        else if (entry == count && cJSON_IsNull(cls) && text->valuestring[0] == 0) break;
        else if (!cls) why = "no \"class\"";
        else if (!json_int(cls, &value)) why = "\"class\" is not an integer";
        if (why) {
            cJSON_Delete(root);
            sentences_free(s);
            return error_set(err, "%s: %s: %s", name, where, why);
        }
        size_t tl = strlen(text->valuestring);
        if (check_sentence(text->valuestring, tl, name, where, err)) {
            cJSON_Delete(root);
            sentences_free(s);
            return -1;
        }
        gather_add(&g, text->valuestring, tl, value);
    }
    cJSON_Delete(root);
    return finish(s, name, err);
}

// --- TSV -------------------------------------------------------------------------------

// "[+-]digits" within int, the whole of l bytes.
static int parse_label(const char *p, size_t l, int *v) {
    size_t i = 0;
    int neg = 0;
    if (i < l && (p[i] == '+' || p[i] == '-')) neg = p[i++] == '-';
    if (i == l) return 0;
    long long x = 0;
    for (; i < l; i++) {
        if (p[i] < '0' || p[i] > '9') return 0;
        x = x * 10 + (p[i] - '0');
        if (x > (long long)INT_MAX + 1) return 0;
    }
    x = neg ? -x : x;
    if (x < INT_MIN || x > INT_MAX) return 0;
    *v = (int)x;
    return 1;
}

int sentences_parse_tsv(SentenceSet *s, const char *data, size_t len, const char *name,
                        Error *err) {
    memset(s, 0, sizeof *s);
    if (len == 0) return error_set(err, "%s: empty file", name);
    Gather g = {s, 0};
    int line = 0;
    for (size_t at = 0; at < len;) {
        line++;
        const char *p = data + at;
        const char *nl = memchr(p, '\n', len - at);
        size_t l = nl ? (size_t)(nl - p) : len - at;
        at += l + (nl != NULL);
        if (l && p[l - 1] == '\r') l--;
        size_t blank = 0;
        while (blank < l && (p[blank] == ' ' || p[blank] == '\t')) blank++;
        if (blank == l) continue;
        char where[48];
        snprintf(where, sizeof where, "line %d", line);
        const char *tab = memchr(p, '\t', l);
        int value;
        if (!tab) {
            sentences_free(s);
            return error_set(err, "%s: %s: no tab between the label and the sentence", name,
                             where);
        }
        size_t ll = (size_t)(tab - p);
        if (!parse_label(p, ll, &value)) {
            char shown[40];
            size_t k = 0;
            for (; k < ll && k < 16 && (unsigned char)p[k] >= 0x20 && (unsigned char)p[k] < 0x7F; k++)
                shown[k] = p[k];
            shown[k] = 0;
            sentences_free(s);
            return error_set(err, "%s: %s: the label '%s%s' is not an integer", name, where, shown,
                             k < ll ? "..." : "");
        }
        const char *t = tab + 1;
        size_t tl = l - ll - 1;
        if (check_sentence(t, tl, name, where, err)) {
            sentences_free(s);
            return -1;
        }
        gather_add(&g, t, tl, value);
    }
    return finish(s, name, err);
}

// --- files -----------------------------------------------------------------------------

static int read_file(const char *path, unsigned char **data, size_t *len, Error *err) {
    if (file_read_all(path, data, len, SENTENCES_MAX_FILE_BYTES, err)) return -1;
    return 0;
}

int sentences_read_json(SentenceSet *s, const char *path, Error *err) {
    memset(s, 0, sizeof *s);
    unsigned char *data;
    size_t len;
    if (read_file(path, &data, &len, err)) return -1;
    int rc = sentences_parse_json(s, (const char *)data, len, path, err);
    free(data);
    return rc;
}

int sentences_read_tsv(SentenceSet *s, const char *path, Error *err) {
    memset(s, 0, sizeof *s);
    unsigned char *data;
    size_t len;
    if (read_file(path, &data, &len, err)) return -1;
    int rc = sentences_parse_tsv(s, (const char *)data, len, path, err);
    free(data);
    return rc;
}

int sentences_read(SentenceSet *s, const char *path, Error *err) {
    memset(s, 0, sizeof *s);
    unsigned char *data;
    size_t len;
    if (read_file(path, &data, &len, err)) return -1;
    size_t i = 0;
    while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r'))
        i++;
    int rc = i < len && data[i] == '['
                 ? sentences_parse_json(s, (const char *)data, len, path, err)
                 : sentences_parse_tsv(s, (const char *)data, len, path, err);
    free(data);
    return rc;
}

void sentences_append(SentenceSet *a, const SentenceSet *b) {
    // Back to label values, add b's, renumber.
    for (int i = 0; i < a->n; i++) a->label[i] = a->class_value[a->label[i]];
    Gather g = {a, a->n};
    for (int i = 0; i < b->n; i++)
        gather_add(&g, b->text[i], strlen(b->text[i]), b->class_value[b->label[i]]);
    number_classes(a);
}

// --- splits ----------------------------------------------------------------------------

int sentences_keras_split_at(int n, double share) {
    CHECK(n >= 0 && share >= 0 && share < 1, "n %d, share %g", n, share);
    // keras.engine.training_utils: split_at = int(num_samples * (1. - validation_split))
    return (int)((double)n * (1. - share));
}

int sentences_kfold(int *fold, const int *label, int n, int n_classes, int k, uint64_t seed,
                    Error *err) {
    if (k < 2 || k > n)
        return error_set(err, "k-fold: %d folds of %d sentences (need 2 <= k <= n)", k, n);
    Rng rng;
    rng_seed(&rng, seed);
    int *idx = xmalloc((size_t)n * sizeof *idx);
    int next = 0;
    for (int c = 0; c < n_classes; c++) {
        int m = 0;
        for (int i = 0; i < n; i++)
            if (label[i] == c) idx[m++] = i;
        rng_shuffle(&rng, idx, m);
        for (int j = 0; j < m; j++) {
            fold[idx[j]] = next;
            next = (next + 1) % k;
        }
    }
    free(idx);
    return 0;
}
