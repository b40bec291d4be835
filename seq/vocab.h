// vocab.h: the caption vocabulary: words <-> ids, built from tokenised captions,
// kept as a JSON string (e.g. in a checkpoint's metadata).
//
// Ids: <pad> = 0, <start> = 1, <end> = 2, <unk> = 3, then the words whose count is at
// least min_count, by descending count, ties in byte-wise (strcmp) order. Words are
// the tokens of seq/tokenizer.h; lookups are exact (the tokeniser already lower-cased).
//
// JSON form (what vocab_to_json writes and vocab_from_json accepts):
//     {"format": "attend-vocab", "version": 1, "min_count": 5,
//      "words": ["<pad>", "<start>", "<end>", "<unk>", "a", "dog", ...]}
// The parser rejects (with one line in err): text that is not JSON, a missing or wrong
// "format"/"version", "words" not an array of non-empty strings, the four specials not
// first and in order, a duplicate word, invalid UTF-8, whitespace inside a word.
#ifndef SEQ_VOCAB_H
#define SEQ_VOCAB_H

#include "core/error.h"
#include "seq/tokenizer.h"

enum { VOCAB_PAD = 0, VOCAB_START = 1, VOCAB_END = 2, VOCAB_UNK = 3, VOCAB_NSPECIAL = 4 };

typedef struct {
    int size;       // number of ids, specials included
    char **words;   // (size) owned; words[id]
    int min_count;  // the threshold it was built with (kept in the JSON)
    int *table;     // (table_cap) open-addressing hash of ids, -1 = empty
    int table_cap;  // power of two >= 2 * size
} Vocab;

// Counts the words of n_captions tokenised captions and keeps those seen at least
// min_count (>= 1) times. A caption's own "<pad>"/"<start>"/"<end>"/"<unk>" tokens are
// not counted as words.
void vocab_build(Vocab *v, const Tokens *captions, int n_captions, int min_count);

// The same count a caption at a time, for a corpus too large to keep tokenised: the
// counter keeps a copy of each distinct token (specials too, never counted as words).
typedef struct {
    char **words;   // (n) owned, in order of first appearance
    int *counts;    // (n)
    int n, cap;
    int *table;     // open-addressing hash of numbers, -1 = empty
    int table_cap;
} VocabCounter;

// Counts t's words into c (zero-initialised before the first call).
void vocab_counter_add(VocabCounter *c, const Tokens *t);
// vocab_build's result for the captions counted so far.
void vocab_from_counter(Vocab *v, const VocabCounter *c, int min_count);
void vocab_counter_free(VocabCounter *c);

// The id of word, or VOCAB_UNK if it is not in the vocabulary.
int vocab_id(const Vocab *v, const char *word);

// ids (max_len): the ids of the first min(t->n, max_len) tokens (words only, no
// <start>/<end> added); returns how many were written.
int vocab_encode(int *ids, const Vocab *v, const Tokens *t, int max_len);

// ids (n) -> malloc'd text (free()): words joined by single spaces, stopping at the first
// <end>, skipping <pad> and <start>; <unk> is written as "<unk>" when keep_unk, else
// skipped. Ids outside [0, size) are a programming error (CHECK).
char *vocab_decode(const Vocab *v, const int *ids, int n, int keep_unk);

// Same rules as vocab_decode, into owned Tokens (for the metrics).
void vocab_decode_tokens(Tokens *out, const Vocab *v, const int *ids, int n, int keep_unk);

// Serialises to a malloc'd compact JSON string (free()).
char *vocab_to_json(const Vocab *v);

// Parses JSON written by vocab_to_json. Returns 0, or -1 with err set (v left empty).
int vocab_from_json(Vocab *v, const char *json, Error *err);

void vocab_free(Vocab *v);

#endif
