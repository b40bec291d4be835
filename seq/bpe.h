// bpe.h: byte-pair-encoding subwords (Sennrich, Haddow and Birch 2016, "Neural Machine
// Translation of Rare Words with Subword Units"), learned on a training split, for the
// translator's source and target text.
//
// Why subwords rather than words with a vocabulary cap and <unk>: Spanish inflects verbs
// for person, number, tense and mood and adjectives for gender and number (amar: amo, amas,
// ama, amamos, amaron, amaba, amará, ...), so a word-level vocabulary of the Reina-Valera
// text is large and its tail is rare; a capped one turns many test words into <unk>. BPE
// keeps a fixed vocabulary (alphabet + merges) and spells any word of known characters as
// pieces (stem + ending), so nothing known becomes <unk> and rare forms share their stems.
//
// Words are the text split at ASCII whitespace (space, \t, \n, \v, \f, \r); a word is its
// UTF-8 characters (an invalid byte is a character of its own) followed by the end-of-word
// marker "</w>", a symbol of its own, as in the paper's Algorithm 1. Decoding joins the
// pieces of a word and the words with one space each, so decode(segment(text)) == text for
// text whose words are separated by single spaces with none at either end.
//
// Learning (the paper's algorithm): count the words of the corpus; repeat n_merges times:
// take the most frequent adjacent symbol pair (weighted by word frequency) and merge every
// occurrence of it, left to right, into one symbol (symbols are strings: "ab"+"c" and
// "a"+"bc" make the same "abc"); stop early when the best pair occurs fewer than min_count
// times. Ties: the pair whose first occurrence comes first, reading the words in order of
// their first appearance in the corpus and each word left to right — what the paper's
// Python code (max over a dict filled in that order) does, so its example
// {low: 5, lower: 2, newest: 6, widest: 3} gives e s, es t, est </w>, l o, lo w, n e, ne w,
// new est</w>, low </w>, w i. The pair counts are updated incrementally: a merge revisits
// only the words that hold the pair (each pair keeps the list of its words), counts sit in
// buckets by frequency, and the first-occurrence key of a pair is recomputed only after one
// of its words changed. Words holding the literal text "</w>" are refused when learning.
//
// Applying to new text replays the merges in learned order on each word (a merge applies
// to the pairs present after the earlier ones), which segments every training word exactly
// as learning left it. A character not in the training alphabet stays a piece of its own and
// takes the id of <unk> (its text survives in bpe_segment's pieces).
//
// Vocabulary ids: 0 <pad>, 1 <bos>, 2 <eos>, 3 <unk>, 4 "</w>", then the alphabet in order
// of first appearance, then each merge's new symbol in merge order. bpe_to_text writes the
// alphabet and merges as a short text (fits a safetensors metadata string); bpe_from_text
// rebuilds the same ids:
//     #attend-bpe 1
//     alphabet l o w e r n s t i d
//     e s
//     es t
//     ...
#ifndef SEQ_BPE_H
#define SEQ_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

enum { BPE_PAD = 0, BPE_BOS = 1, BPE_EOS = 2, BPE_UNK = 3, BPE_N_SPECIAL = 4 };
#define BPE_EOW "</w>"
#define BPE_MAX_MERGES 1000000
#define BPE_MAX_TEXT ((size_t)64 << 20)  // bpe_from_text's limit

typedef struct {
    int n_vocab;          // specials + symbols
    char **vocab;         // (n_vocab) piece strings; merged pieces that end a word end in "</w>"
    int n_alphabet;       // characters (the marker not counted)
    int n_merges;
    int32_t *merge_left;  // (n_merges) symbol ids (vocab id - BPE_N_SPECIAL)
    int32_t *merge_right; // (n_merges)
    int32_t *merge_out;   // (n_merges)
    // lookup tables (private)
    int32_t *sym_table;   // open addressing over symbol strings -> symbol id, -1 empty
    size_t sym_cap;
    int64_t *rank_key;    // open addressing over (left, right) -> rank, key -1 empty
    int32_t *rank_val;
    size_t rank_cap;
} Bpe;

// Learns from texts (n) at most n_merges merges, each occurring at least min_count >= 1
// times. Fails (one line, naming `name`) on a word holding "</w>"; an empty corpus gives an
// empty model.
int bpe_learn(Bpe *b, const char *const *texts, int n, int n_merges, int min_count,
              const char *name, Error *err);
// The same from a word list: words (n_words), distinct, in corpus order, with freq >= 1.
int bpe_learn_words(Bpe *b, const char *const *words, const int64_t *freq, int n_words,
                    int n_merges, int min_count, const char *name, Error *err);
// The plain-loop reference of bpe_learn_words, for the tests: every pair recounted over
// every word for each merge, ties to the first pair met (the paper's code, step by step).
int bpe_learn_words_reference(Bpe *b, const char *const *words, const int64_t *freq,
                              int n_words, int n_merges, int min_count, const char *name,
                              Error *err);
void bpe_free(Bpe *b);

// Pieces of text: *pieces (malloc'd array of malloc'd strings), *n of them; the piece that
// ends a word ends in "</w>" (or is "</w>"). Free with bpe_pieces_free.
void bpe_segment(const Bpe *b, const char *text, char ***pieces, int *n);
void bpe_pieces_free(char **pieces, int n);
// Pieces back to text: each word's pieces joined, "</w>" ending a word, words joined by
// one space.
char *bpe_join(char *const *pieces, int n);

// Vocabulary ids of text's pieces (*ids malloc'd, *n); unknown characters -> BPE_UNK.
void bpe_encode(const Bpe *b, const char *text, int **ids, int *n);
// Text of ids (n): <pad>, <bos> and <eos> skipped, <unk> written "<unk>". Malloc'd.
char *bpe_decode(const Bpe *b, const int *ids, int n);
// The id of a piece string, or BPE_UNK.
int bpe_piece_id(const Bpe *b, const char *piece);

// The alphabet and merges as text (malloc'd), and back. bpe_from_text checks the header,
// that each alphabet entry is one character (not "</w>", no repeats), that each merge line
// is two known symbols separated by one space and no pair repeats, and the limits above;
// a failure is one line naming `name` and the line.
char *bpe_to_text(const Bpe *b);
int bpe_from_text(Bpe *b, const char *text, size_t len, const char *name, Error *err);

#endif
