// text_data.c: data specs, splits and encoding for `text classify` (cli/text_data.h).
#include "cli/text_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"

static int read_named(SentenceSet *set, const char *root, const char *name, Error *err) {
    char path[1100];
    snprintf(path, sizeof path, "%s/sentiment/%s.json", root, name);
    if (sentences_read(set, path, err)) return -1;
    return 0;
}

// The files of a sentiment spec, appended in order.
static int read_list(SentenceSet *set, const char *root, const char *const *names, int n,
                     Error *err) {
    if (read_named(set, root, names[0], err)) return -1;
    for (int i = 1; i < n; i++) {
        SentenceSet more;
        if (read_named(&more, root, names[i], err)) {
            sentences_free(set);
            return -1;
        }
        sentences_append(set, &more);
        sentences_free(&more);
    }
    return 0;
}

int text_data_read(SentenceSet *set, const char *spec, const char *root, Error *err) {
    memset(set, 0, sizeof *set);
    static const char *const all[] = {"amazon", "yelp", "imdb"};
    if (strcmp(spec, "sentiment") == 0) return read_list(set, root, all, 2, err);
    if (strncmp(spec, "sentiment:", 10) == 0) {
        const char *name = spec + 10;
        if (strcmp(name, "all") == 0) return read_list(set, root, all, 3, err);
        for (int i = 0; i < 3; i++)
            if (strcmp(name, all[i]) == 0) return read_list(set, root, all + i, 1, err);
        return error_set(err, "--data: '%s' names no sentiment file (amazon, yelp, imdb, all)", spec);
    }
    return sentences_read(set, spec, err);
}

int text_split_mark(unsigned char *in_valid, const SentenceSet *set, const TextSplit *s,
                    Error *err) {
    if (s->folds >= 2) {
        if (s->fold < 0 || s->fold >= s->folds)
            return error_set(err, "--fold: %d is not one of the %d folds (0..%d)", s->fold, s->folds,
                             s->folds - 1);
        int *fold = xmalloc((size_t)set->n * sizeof *fold);
        if (sentences_kfold(fold, set->label, set->n, set->n_classes, s->folds, s->fold_seed, err)) {
            free(fold);
            return -1;
        }
        for (int i = 0; i < set->n; i++) in_valid[i] = fold[i] == s->fold;
        free(fold);
        return 0;
    }
    int at = sentences_keras_split_at(set->n, s->valid_share);
    for (int i = 0; i < set->n; i++) in_valid[i] = i >= at;
    return 0;
}

int text_encode(TextEncoded *e, const SentenceSet *set, const int *idx, int n,
                const KerasTokenizer *tok, int T, int padding, int truncating, Error *err) {
    memset(e, 0, sizeof *e);
    e->n = n, e->T = T;
    e->ids = xmalloc((size_t)(n ? n : 1) * T * sizeof *e->ids);
    e->lengths = xmalloc((size_t)(n ? n : 1) * sizeof *e->lengths);
    e->labels = xmalloc((size_t)(n ? n : 1) * sizeof *e->labels);
    for (int i = 0; i < n; i++) {
        int j = idx ? idx[i] : i, *ids, len;
        if (keras_tokenizer_sequence(tok, set->text[j], 0, &ids, &len, err)) {
            text_encoded_free(e);
            return error_prefix(err, "sentence %d", j + 1);
        }
        keras_pad(e->ids + (size_t)i * T, ids, len, T, padding, truncating, &e->lengths[i]);
        e->labels[i] = set->label[j];
        free(ids);
    }
    return 0;
}

void text_encoded_free(TextEncoded *e) {
    free(e->ids);
    free(e->lengths);
    free(e->labels);
    memset(e, 0, sizeof *e);
}
