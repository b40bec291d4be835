// bible.h: verse-aligned English-Spanish pairs from two SWORD Bible modules, as
// `make data` makes them (datasets/fetch.sh, through build/tools/bible_pairs).
//
// Input: a module exported by libsword-utils' `mod2imp MODULE` (raw, native markup): each
// entry is a line "$$$KEY" and the entry's text on the lines up to the next "$$$". Keys
// "BOOK C:V" with C, V >= 1 are verses; the rest (module and testament headings, book
// introductions "BOOK 0:0", chapter headings "BOOK C:0") are skipped. Book names are
// SWORD's English ones whatever the module's language, so keys from two modules compare.
// mod2imp was chosen over reading zText (.bzs/.bzv/.bzz) directly: it applies each module's
// versification and key names, which pairing by reference needs, and its raw output is
// OSIS that one small stripper handles.
//
// Markup (OSIS, both modules): every tag is removed; <note> (footnotes, variant readings,
// cross references) goes with its content, as do headings (<title> unless
// canonical="true": psalm superscriptions stay, as the Spanish text has them inline) and
// <speaker> labels; line, paragraph and milestone tags (l, lg, lb, div, p, milestone,
// chapter, list, item) and removed notes leave a space where words would otherwise join,
// dropped before closing punctuation and after opening punctuation; the text ends at the
// end of a book or the start of back matter (the English module appends its glossary to the
// last verse of Revelation); the five XML entities
// are decoded; white space is collapsed to single spaces and trimmed. Tabs and line ends
// never survive, so a verse fits a SOURCE<TAB>TARGET line.
//
// Pairing is by key, never by position: a verse is paired when both modules have it with
// non-empty text. The rest is reported (counts and keys): verses of one module only (the
// English module's deuterocanon, versification differences) and verses empty on one side.
// Pairing by reference still pairs neighbours where a module numbers a whole chapter another
// way (the Spanish module follows the Hebrew numbering in a few chapters): bible_flag_shifted
// finds those chapters by their verse lengths, and bible_pairs leaves them out.
//
// Split: by a seeded hash of the key (FNV-1a 64 of "SEED:KEY", then splitmix64): 90 % train,
// 5 % valid, 5 % test. A verse is in exactly one split, and the split of a verse does not
// depend on what else is in the modules. A hash rather than whole books, so that the three
// splits share the style of every book (law, poetry, genealogies, letters) and their sizes do
// not hinge on which books fall where; the cost is that near-identical verses (parallel
// gospel passages, repeated refrains) can sit on both sides of a split.
#ifndef DATASETS_BIBLE_H
#define DATASETS_BIBLE_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

#define BIBLE_SPLIT_SEED 58u
#define BIBLE_MAX_FILE_BYTES (256u << 20)

typedef struct {
    int n;        // verses, in module order
    char **key;   // (n) "Genesis 1:1", owned
    char **text;  // (n) plain text (may be empty: a verse the module leaves out), owned
} BibleVerses;

// Markup to plain text (see above): a new string.
char *bible_strip_osis(const char *s, size_t len);

// Parses mod2imp's output (data need not be NUL-terminated); name stands for the file.
// Refused: an empty input, text before the first "$$$" line, a verse key twice, bytes that
// are not UTF-8, and fewer than min_verses verses with text (at least one is needed). mod2imp exits 0 on
// a truncated or missing .bzz file, writing every key of the versification with empty text
// where it could not read: that is how a damaged module shows here.
int bible_parse_imp(BibleVerses *v, const char *data, size_t len, const char *name,
                    int min_verses, Error *err);
int bible_read_imp(BibleVerses *v, const char *path, int min_verses, Error *err);
void bible_verses_free(BibleVerses *v);

// 0 train, 1 valid, 2 test.
int bible_split_of(const char *key, uint64_t seed);

typedef struct {
    int n;                  // pairs, in the first module's order
    char **key, **src, **tgt;  // (n) borrowed from the two BibleVerses
    int n_src_only;         // verses with text in the source module only (absent or empty in the target)
    int n_tgt_only;         // verses with text in the target module only (absent or empty in the source)
    char **src_only, **tgt_only;  // their keys, borrowed
    int n_empty_src, n_empty_tgt; // of those, present but empty on the other side
    int n_no_text;          // keys with no text on either side (empty, or empty and absent)
} BiblePairs;

// Pairs two modules by key. The pairs borrow the verses' strings: free them after.
void bible_pair(BiblePairs *p, const BibleVerses *src, const BibleVerses *tgt);
void bible_pairs_free(BiblePairs *p);

// Chapters the two modules number differently. The Spanish module counts some chapters as the
// Hebrew text does (its Numbers 13:1 is the English 12:16, and so on through the chapter),
// so pairing by reference pairs each verse there with its neighbour. Such a chapter shows in
// the verse lengths: pairing English verse v with Spanish verse v + s for some shift
// 0 < |s| <= BIBLE_MAX_SHIFT fits the words per verse better than s = 0. The measure is the
// mean |log((english words + 1) / (spanish words + 1))| over the chapter's pairs: a chapter of
// 3 or more pairs is flagged when that mean is above BIBLE_SHIFT_MIN_COST at s = 0 (the 99th
// percentile over all chapters is about 0.23) and some shift brings it under
// BIBLE_SHIFT_RATIO times that. shifted (p->n) gets 1 for each pair of a flagged chapter;
// returns how many. A heuristic: it finds whole shifted chapters, not single merged verses.
#define BIBLE_MAX_SHIFT 5
#define BIBLE_SHIFT_MIN_COST 0.25
#define BIBLE_SHIFT_RATIO 0.7
int bible_flag_shifted(const BiblePairs *p, unsigned char *shifted);

#endif
