// pairs.h: sentence pairs for the translator (SOURCE<TAB>TARGET files), and the data specs
// of `text translate --data`.
//
// File format: one SOURCE<TAB>TARGET per line, UTF-8; a trailing CR is dropped; blank lines
// (nothing but spaces and tabs) are skipped. Refused, each with one line
// "FILE: line N: REASON" (lines counted from 1): a line longer than PAIRS_MAX_LINE_BYTES;
// a NUL byte; bytes that are not valid UTF-8; no tab, or more than one; an empty (or
// all-space) source or target. Also refused: a file that cannot be read, is empty or larger
// than PAIRS_MAX_FILE_BYTES, or holds no pair at all. The sides are kept as written (no
// trimming, no case folding: tokenizers do that).
//
//     PairSet p;
//     if (pairs_read(&p, "data/bible/train.tsv", &err)) { print err.msg; }
//     ... p.src[i], p.tgt[i] ...
//     pairs_free(&p);
//
// Data specs (`text translate train --data SPEC`), parsed by pairs_spec_parse:
//   dates        the synthetic date task (datasets/dates.h), made on the fly
//   bible-en-es  the World English Bible and Reina-Valera 1909 verse pairs that `make data`
//                writes to ROOT/bible/{train,valid,test}.tsv (datasets/bible.h)
//   pairs:FILE   a SOURCE<TAB>TARGET file of your own (FILE non-empty)
#ifndef DATASETS_PAIRS_H
#define DATASETS_PAIRS_H

#include <stddef.h>

#include "core/error.h"

#define PAIRS_MAX_LINE_BYTES 16384
#define PAIRS_MAX_FILE_BYTES (512u << 20)

typedef struct {
    int n;       // pairs
    char **src;  // (n) NUL-terminated UTF-8, owned
    char **tgt;  // (n) NUL-terminated UTF-8, owned
} PairSet;

// Reads a file. On failure *p is empty (pairs_free is harmless) and err names the file.
int pairs_read(PairSet *p, const char *path, Error *err);
// The same from bytes in memory (data need not be NUL-terminated); name stands for the file.
int pairs_parse(PairSet *p, const char *data, size_t len, const char *name, Error *err);
void pairs_free(PairSet *p);

typedef enum { PAIRS_SPEC_DATES, PAIRS_SPEC_BIBLE, PAIRS_SPEC_FILE } PairsSpecKind;

typedef struct {
    PairsSpecKind kind;
    const char *file;  // PAIRS_SPEC_FILE: points into the spec string; else NULL
} PairsSpec;

// Parses a --data spec. Fails with "--data: 'SPEC' ..." naming the accepted forms.
int pairs_spec_parse(PairsSpec *s, const char *spec, Error *err);

// The file of one split of bible-en-es under root: "ROOT/bible/SPLIT.tsv" into buf (cap
// bytes); split is "train", "valid" or "test". Returns buf.
char *pairs_bible_path(char *buf, size_t cap, const char *root, const char *split);

// Reads that split. A missing file says how to make it: "ROOT/bible/SPLIT.tsv: missing (make data
// extracts the Bible verse pairs)"; any other failure is pairs_read's.
int pairs_read_bible(PairSet *p, const char *root, const char *split, Error *err);

#endif
