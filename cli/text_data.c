// text_data.c: data specs, splits and encoding for `text classify` (cli/text_data.h).
#include "cli/text_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/rng.h"

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

// The inner folds of text_split_mark: the sentences the outer split trains on (held[i]
// 0) get a stratified J-fold of their own, dealt by a stream of its own (salt); the others
// are held out. With an inner tail, only the last inner_tail of those are dealt; the
// earlier ones always train.
static int mark_inner(unsigned char *mark, const SentenceSet *set, const unsigned char *held,
                      const TextSplit *s, uint64_t salt, Error *err) {
    if (s->inner_fold < 0 || s->inner_fold >= s->inner_folds)
        return error_set(err, "--inner-fold: %d is not one of the %d inner folds (0..%d)",
                         s->inner_fold, s->inner_folds, s->inner_folds - 1);
    int *at = xmalloc((size_t)set->n * sizeof *at), *lab = xmalloc((size_t)set->n * sizeof *lab);
    int m = 0;
    for (int i = 0; i < set->n; i++)
        if (!held[i]) at[m] = i, lab[m++] = set->label[i];
    if (s->inner_tail < 0 || s->inner_tail > m) {
        free(at), free(lab);
        return error_set(err, "--inner-tail: %d sentences, but the outer split trains on %d",
                         s->inner_tail, m);
    }
    // The first `first` training sentences train in every inner fold.
    int first = s->inner_tail ? m - s->inner_tail : 0;
    int *inner = xmalloc((size_t)(m ? m : 1) * sizeof *inner);
    int rc = sentences_kfold(inner, lab + first, m - first, set->n_classes, s->inner_folds,
                             rng_mix(s->fold_seed, salt), err);
    for (int i = 0; i < set->n && rc == 0; i++) mark[i] = TEXT_SPLIT_HELD_OUT;
    for (int j = 0; j < m && rc == 0; j++)
        mark[at[j]] = j >= first && inner[j - first] == s->inner_fold ? TEXT_SPLIT_VALID
                                                                       : TEXT_SPLIT_TRAIN;
    free(at), free(lab), free(inner);
    return rc ? error_prefix(err, "--inner-folds") : 0;
}

int text_split_mark(unsigned char *in_valid, const SentenceSet *set, const TextSplit *s,
                    Error *err) {
    if (s->inner_folds != 0 && s->inner_folds < 2)
        return error_set(err, "--inner-folds: %d inner folds; they are >= 2", s->inner_folds);
    if (s->inner_tail != 0 && s->inner_folds < 2)
        return error_set(err, "--inner-tail: %d needs --inner-folds", s->inner_tail);
    unsigned char *held = xmalloc((size_t)(set->n ? set->n : 1));
    uint64_t salt;
    if (s->folds >= 2) {
        if (s->fold < 0 || s->fold >= s->folds) {
            free(held);
            return error_set(err, "--fold: %d is not one of the %d folds (0..%d)", s->fold, s->folds,
                             s->folds - 1);
        }
        int *fold = xmalloc((size_t)set->n * sizeof *fold);
        if (sentences_kfold(fold, set->label, set->n, set->n_classes, s->folds, s->fold_seed, err)) {
            free(fold), free(held);
            return -1;
        }
        for (int i = 0; i < set->n; i++) held[i] = fold[i] == s->fold;
        free(fold);
        salt = 0x1AAE0000ULL + (uint64_t)s->fold;
    } else {
        int at = sentences_keras_split_at(set->n, s->valid_share);
        for (int i = 0; i < set->n; i++) held[i] = i >= at;
        // Its own stream, apart from every outer fold's.
        salt = 0x1AAE4B45ULL << 20;
    }
    int rc = 0;
    if (s->inner_folds >= 2) rc = mark_inner(in_valid, set, held, s, salt, err);
    else
        for (int i = 0; i < set->n; i++) in_valid[i] = held[i] ? TEXT_SPLIT_VALID : TEXT_SPLIT_TRAIN;
    free(held);
    return rc;
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
