// keras_tokenizer.h: Keras's text Tokenizer() with its defaults, and pad_sequences.
//
// The words of a text (keras.preprocessing.text.text_to_word_sequence):
//   1. lower-cased as Python's str.lower does: Unicode's simple lower-case mapping of every
//      code point (Unicode 14, seq/ptb_chars.h), and U+0130 (capital I with a dot) becomes
//      "i" + U+0307 as in Python. One difference: Python lower-cases a capital sigma at the
//      end of a word to the final form U+03C2; here it is always U+03C3.
//   2. each of the filter characters  !"#$%&()*+,-./:;<=>?@[\]^_`{|}~  TAB  LF  becomes a
//      space (ASCII only: other punctuation, CR, U+00A0 and the like stay inside words, as
//      in Keras);
//   3. split at single spaces (Python's str.split(' ')), empty pieces dropped.
// The word index (Tokenizer.fit_on_texts): every word of the fitted texts, ordered by
// descending count, ties in order of first appearance (Python's stable sort of an
// insertion-ordered dict); indices 1, 2, ...; 0 is reserved for padding.
// texts_to_sequences: each word's index, unknown words dropped (Keras's behaviour when
// num_words and oov_token are unset); with max_index > 0 indices >= max_index are dropped
// too (Keras's num_words).
//
//     KerasTokenizer t;
//     keras_tokenizer_fit(&t, texts, n, &err);       // texts: valid UTF-8
//     int *ids, len;
//     keras_tokenizer_sequence(&t, "Good case!", 0, &ids, &len, &err);
//     int row[32], kept;
//     keras_pad(row, ids, len, 32, KERAS_POST, KERAS_POST, &kept);
//     free(ids);
//     keras_tokenizer_free(&t);
#ifndef SEQ_KERAS_TOKENIZER_H
#define SEQ_KERAS_TOKENIZER_H

#include "core/error.h"

typedef struct {
    int n_words;   // indices 1..n_words
    char **word;   // (n_words + 1) word[i] has index i; word[0] is NULL (padding); owned
    long *count;   // (n_words + 1) occurrences in the fitted texts (count[0] = 0)
    int *slot;     // (cap) open-addressing table of indices, 0 = empty
    int cap;       // a power of two, > 2 * n_words
} KerasTokenizer;

// The words of text (valid UTF-8, else -1 with "invalid UTF-8 at byte N", N from 1) as
// *n malloc'd strings in *words (free each, then the array; keras_words_free does).
int keras_words(char ***words, int *n, const char *text, Error *err);
void keras_words_free(char **words, int n);

// Fits the word index on n texts (in order). On failure (invalid UTF-8: "text I: invalid
// UTF-8 at byte N", I from 1) t is empty.
int keras_tokenizer_fit(KerasTokenizer *t, const char *const *texts, int n, Error *err);
// Rebuilds a tokenizer from its words in index order (words[0] gets index 1), as a
// checkpoint stores them; counts are 0. Fails on an empty or repeated word.
int keras_tokenizer_from_words(KerasTokenizer *t, const char *const *words, int n, Error *err);
void keras_tokenizer_free(KerasTokenizer *t);

// The index of word, 0 when unknown.
int keras_tokenizer_index(const KerasTokenizer *t, const char *word);

// texts_to_sequences of one text into a malloc'd *ids (*len of them; *ids may be NULL
// when *len is 0). max_index 0: every known word. Fails only on invalid UTF-8.
int keras_tokenizer_sequence(const KerasTokenizer *t, const char *text, int max_index,
                             int **ids, int *len, Error *err);

enum { KERAS_PRE = 0, KERAS_POST = 1 };

// pad_sequences of one sequence (len ids) to out (maxlen), padded with 0:
// padding KERAS_PRE puts the zeros first, KERAS_POST after the ids; a longer sequence is
// cut: truncating KERAS_PRE drops its first len - maxlen ids (Keras's default),
// KERAS_POST its last. *kept (may be NULL) gets the number of ids kept, min(len, maxlen).
// Keras's defaults are padding and truncating 'pre'; the attention demo calls
// pad_sequences(maxlen=32, padding='post'), so it truncates 'pre' (no Amazon or Yelp
// sentence has more than 32 words, so only IMDb sentences are ever cut).
void keras_pad(int *out, const int *ids, int len, int maxlen, int padding, int truncating,
               int *kept);

#endif
