// fuzz_sentences.c: libFuzzer target for the labelled-sentence readers (datasets/sentences.h).
//
// Returns 1 when the reader accepted the input, 0 when it refused it.
// Input: byte 0 picks the reader (bit 0: 0 JSON, 1 TSV), the rest is the file, parsed from
// memory under the name "in.json" / "in.tsv". Properties: a failure is one line naming the
// file and leaves the set empty; a success holds n >= 1 sentences and n_classes >= 2 with
// class values strictly ascending, every class used, each label in range, each sentence
// non-empty, at most SENTENCE_MAX_BYTES and valid UTF-8; Keras's split point lies in
// [0, n]; a stratified 2..5-fold split puts each sentence in a fold and keeps every
// fold's size within one of n / k; the Keras tokenizer (seq/keras_tokenizer.h) takes every
// accepted sentence, its words non-empty, valid UTF-8, free of spaces, filter characters and
// ASCII capitals, and a word index fitted on the set knows each of them.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/text_escape.h"
#include "datasets/sentences.h"
#include "seq/keras_tokenizer.h"
#include "tests/fuzz/fuzz_util.h"

static void fuzz_sentences_tokenize(const SentenceSet *s) {
    KerasTokenizer t;
    Error err = {{0}};
    fuzz_require(keras_tokenizer_fit(&t, (const char *const *)s->text, s->n, &err) == 0,
                 "tokenizer refused an accepted set: %s", err.msg);
    for (int i = 0; i < s->n; i++) {
        char **w;
        int n;
        fuzz_require(keras_words(&w, &n, s->text[i], &err) == 0, "keras_words: %s", err.msg);
        for (int j = 0; j < n; j++) {
            fuzz_require(w[j][0] && text_is_utf8(w[j]), "word %d of sentence %d", j, i);
            for (const char *p = w[j]; *p; p++)
                fuzz_require(*p != ' ' && *p != '\t' && *p != '\n' && !(*p >= 'A' && *p <= 'Z') &&
                                 !strchr("!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~", *p),
                             "word '%s' keeps a filtered character", w[j]);
            fuzz_require(keras_tokenizer_index(&t, w[j]) >= 1, "word '%s' not in the index", w[j]);
        }
        keras_words_free(w, n);
    }
    keras_tokenizer_free(&t);
}

static void fuzz_sentences_check(const SentenceSet *s) {
    fuzz_require(s->n >= 1 && s->n_classes >= 2, "%d sentences, %d classes", s->n, s->n_classes);
    for (int k = 1; k < s->n_classes; k++)
        fuzz_require(s->class_value[k - 1] < s->class_value[k], "class values not ascending");
    int *used = xcalloc((size_t)s->n_classes, sizeof *used);
    for (int i = 0; i < s->n; i++) {
        fuzz_require(s->label[i] >= 0 && s->label[i] < s->n_classes, "label %d", s->label[i]);
        used[s->label[i]] = 1;
        size_t len = strlen(s->text[i]);
        fuzz_require(len >= 1 && len <= SENTENCE_MAX_BYTES, "sentence of %zu bytes", len);
        fuzz_require(text_is_utf8(s->text[i]), "sentence %d not valid UTF-8", i);
    }
    for (int k = 0; k < s->n_classes; k++) fuzz_require(used[k], "class %d unused", k);
    free(used);
    int at = sentences_keras_split_at(s->n, 0.2);
    fuzz_require(at >= 0 && at <= s->n, "split at %d of %d", at, s->n);
    int k = s->n < 5 ? s->n : 5;
    if (k >= 2) {
        int *fold = xmalloc((size_t)s->n * sizeof *fold);
        int size[5] = {0};
        Error err = {{0}};
        fuzz_require(sentences_kfold(fold, s->label, s->n, s->n_classes, k, 7, &err) == 0,
                     "k-fold refused: %s", err.msg);
        for (int i = 0; i < s->n; i++) {
            fuzz_require(fold[i] >= 0 && fold[i] < k, "fold %d", fold[i]);
            size[fold[i]]++;
        }
        for (int f = 0; f < k; f++)
            fuzz_require(size[f] == s->n / k || size[f] == s->n / k + 1, "fold size %d", size[f]);
        free(fold);
    }
}

int fuzz_sentences_one(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int tsv = data[0] & 1;
    const char *name = tsv ? "in.tsv" : "in.json";
    SentenceSet s;
    Error err = {{0}};
    int rc = tsv ? sentences_parse_tsv(&s, (const char *)data + 1, size - 1, name, &err)
                 : sentences_parse_json(&s, (const char *)data + 1, size - 1, name, &err);
    if (rc != 0) {
        fuzz_require(rc == -1, "returned %d", rc);
        fuzz_require_error(&err, name);
        fuzz_require(s.n == 0 && s.text == NULL && s.label == NULL && s.class_value == NULL,
                     "failed read left a set behind");
        sentences_free(&s);
        return 0;
    }
    fuzz_sentences_check(&s);
    fuzz_sentences_tokenize(&s);
    sentences_free(&s);
    return 1;
}

#ifndef FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_sentences_one(data, size);
    return 0;
}
#endif
