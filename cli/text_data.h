// text_data.h: the sentences of `text classify`, from a data spec to padded word ids.
//
// Data specs (--data):
//   sentiment          the attention demo's set: data/sentiment/amazon.json then yelp.json,
//                      concatenated in file order (2,000 sentences; `make data` fetches them)
//   sentiment:NAME     one of amazon, yelp, imdb, or all (the three, in that order)
//   PATH               a file of your own: the sentiment package's JSON or LABEL<TAB>SENTENCE
//                      (datasets/sentences.h; any number of classes)
// DIR (--data-root, default data) holds sentiment/.
//
// Splits: by default Keras's validation_split (the last `valid_share` of the sentences in
// file order, before any shuffling: the demo's last 400); with folds K >= 2, fold `fold`
// (0..K-1) of datasets/sentences.h's stratified k-fold (seeded) is the validation set and
// the other folds train. With inner folds J >= 2 as well (a model selection inside the
// training part, which never sees what the outer split validates): the outer validation
// sentences (fold `fold`, or Keras's last share: the demo's last 400) are held out (used by
// neither), and the outer training sentences are dealt by a second stratified J-fold
// (seeded by fold_seed and fold, or by fold_seed alone on Keras's split) of which inner fold
// `inner_fold` validates and the rest train. With an inner tail N > 0 as well, only the
// last N of the outer training sentences (in file order) are dealt to the inner folds; the
// earlier ones train in every inner fold (a selection scored on the sentences nearest the
// outer validation ones in file order: on the demo's split, --inner-tail 600 scores on the
// 600 Yelp sentences of its training part, as its validation 400 are Yelp's).
//
// Encoding: the Keras tokenizer (seq/keras_tokenizer.h) fitted on every sentence of the
// set, validation included, as the demo's t.fit_on_texts(corpus) does (the word index sees
// no labels); ids padded to T with padding and truncating KERAS_PRE or KERAS_POST (the
// demo: padding post, truncating pre, Keras's default). Lengths are the ids kept.
#ifndef CLI_TEXT_DATA_H
#define CLI_TEXT_DATA_H

#include <stdint.h>

#include "core/error.h"
#include "datasets/sentences.h"
#include "seq/keras_tokenizer.h"

// Reads the set a spec names. On failure set is empty and err names the file or the spec.
int text_data_read(SentenceSet *set, const char *spec, const char *root, Error *err);

typedef struct {
    double valid_share;  // Keras's validation_split (0.2); used when folds < 2
    int folds, fold;     // k-fold: folds >= 2, fold in [0, folds)
    uint64_t fold_seed;
    int inner_folds, inner_fold;  // 0: none; else >= 2 and in [0, inner_folds)
    int inner_tail;               // inner folds only: deal only the last N training sentences (0: all)
} TextSplit;

// The marks of text_split_mark.
enum { TEXT_SPLIT_TRAIN = 0, TEXT_SPLIT_VALID = 1, TEXT_SPLIT_HELD_OUT = 2 };

// in_valid (n): TEXT_SPLIT_TRAIN, _VALID or _HELD_OUT (inner folds only) for each sentence.
// Fails on a bad fold or k-fold setting.
int text_split_mark(unsigned char *in_valid, const SentenceSet *set, const TextSplit *s,
                    Error *err);

// Sentences as the model reads them.
typedef struct {
    int n, T;
    int *ids;      // (n, T) padded
    int *lengths;  // (n)
    int *labels;   // (n) class indices
} TextEncoded;

// Encodes sentences idx[0..n) of set (idx NULL: all, in order). Fails only on invalid
// UTF-8 (the readers never let it through).
int text_encode(TextEncoded *e, const SentenceSet *set, const int *idx, int n,
                const KerasTokenizer *tok, int T, int padding, int truncating, Error *err);
void text_encoded_free(TextEncoded *e);

#endif
