// pairs.c: the sentence-pair reader and the translator's data specs (datasets/pairs.h).
#include "datasets/pairs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/fileio.h"
#include "core/text_escape.h"

void pairs_free(PairSet *p) {
    for (int i = 0; i < p->n; i++) {
        free(p->src[i]);
        free(p->tgt[i]);
    }
    free(p->src);
    free(p->tgt);
    memset(p, 0, sizeof *p);
}

static char *copy(const char *s, size_t len) {
    char *t = xmalloc(len + 1);
    memcpy(t, s, len);
    t[len] = 0;
    return t;
}

// 1 when the l bytes are all spaces (or none).
static int all_space(const char *s, size_t l) {
    for (size_t i = 0; i < l; i++)
        if (s[i] != ' ') return 0;
    return 1;
}

// The byte checks of one line: NUL and UTF-8. 0, or -1 with err set.
static int check_bytes(const char *p, size_t l, const char *name, int line, Error *err) {
    for (size_t i = 0; i < l;) {
        if (p[i] == 0)
            return error_set(err, "%s: line %d: a NUL byte at byte %zu", name, line, i + 1);
        // text_utf8_seq_len reads up to a NUL: give it the bytes left, at most 4, ended.
        unsigned char q[5] = {0};
        memcpy(q, p + i, l - i < 4 ? l - i : 4);
        int n = text_utf8_seq_len(q);
        if (n == 0)
            return error_set(err, "%s: line %d: not valid UTF-8 at byte %zu", name, line, i + 1);
        i += (size_t)n;
    }
    return 0;
}

int pairs_parse(PairSet *p, const char *data, size_t len, const char *name, Error *err) {
    memset(p, 0, sizeof *p);
    if (len == 0) return error_set(err, "%s: empty file", name);
    int cap = 0, line = 0;
    for (size_t at = 0; at < len;) {
        line++;
        const char *s = data + at;
        const char *nl = memchr(s, '\n', len - at);
        size_t l = nl ? (size_t)(nl - s) : len - at;
        at += l + (nl != NULL);
        if (l && s[l - 1] == '\r') l--;
        size_t blank = 0;
        while (blank < l && (s[blank] == ' ' || s[blank] == '\t')) blank++;
        if (blank == l) continue;
        int rc = 0;
        const char *tab = memchr(s, '\t', l);
        if (l > PAIRS_MAX_LINE_BYTES)
            rc = error_set(err, "%s: line %d: a line of %zu bytes (at most %d)", name, line, l,
                           PAIRS_MAX_LINE_BYTES);
        else if (check_bytes(s, l, name, line, err))
            rc = -1;
        else if (!tab)
            rc = error_set(err, "%s: line %d: no tab between the source and the target", name,
                           line);
        else if (memchr(tab + 1, '\t', l - (size_t)(tab - s) - 1))
            rc = error_set(err, "%s: line %d: more than one tab (one SOURCE<TAB>TARGET a line)",
                           name, line);
        else if (all_space(s, (size_t)(tab - s)))
            rc = error_set(err, "%s: line %d: empty source", name, line);
        else if (all_space(tab + 1, l - (size_t)(tab - s) - 1))
            rc = error_set(err, "%s: line %d: empty target", name, line);
        if (rc) {
            pairs_free(p);
            return -1;
        }
        if (p->n == cap) {
            cap = cap ? 2 * cap : 256;
            p->src = xrealloc(p->src, (size_t)cap * sizeof *p->src);
            p->tgt = xrealloc(p->tgt, (size_t)cap * sizeof *p->tgt);
        }
        p->src[p->n] = copy(s, (size_t)(tab - s));
        p->tgt[p->n] = copy(tab + 1, l - (size_t)(tab - s) - 1);
        p->n++;
    }
    if (p->n == 0) {
        pairs_free(p);
        return error_set(err, "%s: no sentence pairs", name);
    }
    return 0;
}

int pairs_read(PairSet *p, const char *path, Error *err) {
    memset(p, 0, sizeof *p);
    unsigned char *data;
    size_t len;
    if (file_read_all(path, &data, &len, PAIRS_MAX_FILE_BYTES, err)) return -1;
    int rc = pairs_parse(p, (const char *)data, len, path, err);
    free(data);
    return rc;
}

int pairs_spec_parse(PairsSpec *s, const char *spec, Error *err) {
    memset(s, 0, sizeof *s);
    if (strcmp(spec, "dates") == 0) {
        s->kind = PAIRS_SPEC_DATES;
        return 0;
    }
    if (strcmp(spec, "bible-en-es") == 0) {
        s->kind = PAIRS_SPEC_BIBLE;
        return 0;
    }
    if (strncmp(spec, "pairs:", 6) == 0 && spec[6]) {
        s->kind = PAIRS_SPEC_FILE;
        s->file = spec + 6;
        return 0;
    }
    return error_set(err, "--data: '%s' is not a translation data set (dates, bible-en-es, "
                          "pairs:FILE)", spec);
}

char *pairs_bible_path(char *buf, size_t cap, const char *root, const char *split) {
    snprintf(buf, cap, "%s/bible/%s.tsv", root, split);
    return buf;
}

int pairs_read_bible(PairSet *p, const char *root, const char *split, Error *err) {
    char path[1200];
    pairs_bible_path(path, sizeof path, root, split);
    if (!file_exists(path)) {
        memset(p, 0, sizeof *p);
        return error_set(err, "%s: missing (make data extracts the Bible verse pairs)", path);
    }
    return pairs_read(p, path, err);
}
