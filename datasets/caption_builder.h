// caption_builder.h: what the caption-file readers (datasets/captions_text.h,
// datasets/captions_json.h) share: the builder each fills with images and caption records
// (checking, warning and counting as datasets/captions.h promises), the lines of a text
// file, fields as C strings, paths, split words and a string -> index map. Not an API of
// its own: datasets/captions.h is.
//
//     CaptionBuilder b;
//     caption_builder_init(&b, set, opts, path);
//     int i = caption_builder_add_image(&b, key, image_path, id, -1, split, hashed, where);
//     caption_builder_add_caption(&b, i, text, len, where);   // skipped ones are warned
//     return caption_builder_finish(&b, err);                 // or caption_builder_fail(&b)
#ifndef DATASETS_CAPTION_BUILDER_H
#define DATASETS_CAPTION_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "datasets/captions.h"
#include "datasets/split.h"

// FNV-1a 64 of len bytes of s: the held-out hash, and the map's.
uint64_t caption_fnv1a64(const char *s, size_t len);

// Open-addressing map from owned strings to ints (>= 0). Zeroed, it is empty.
typedef struct {
    char **keys;  // (cap) NULL = free slot
    int *vals;    // (cap)
    size_t cap, n;
} CaptionKeys;

void caption_keys_free(CaptionKeys *m);
int caption_keys_get(const CaptionKeys *m, const char *key);  // -1 when absent
void caption_keys_put(CaptionKeys *m, const char *key, int val);

// out = a/b[/c] (c may be NULL); -1 when it does not fit in cap bytes.
int caption_join_path(char *out, size_t cap, const char *a, const char *b, const char *c);
int caption_is_dir(const char *path);
int caption_is_file(const char *path);  // exists and is not a folder
// train | restval -> train, val | valid | dev -> valid, test -> test; -1 otherwise.
int caption_split_from_word(const char *w, size_t len, Split *out);

// The images by key and the caption records of one reader, grouped into the set at the end.
typedef struct {
    CaptionSet *set;  // warnings and skip counts go here
    const CaptionOptions *opts;
    CaptionImage *images;   // (n_images) first_caption unused until the end
    unsigned char *usable;  // (n_images) 0: records of this image are skipped
    unsigned char *warned;  // (n_images) 1: a warning already named this image
    int n_images, cap_images;
    int *cap_image;   // (n_caps) image of each caption record
    char **cap_text;  // (n_caps)
    int n_caps, cap_caps;
    CaptionKeys keys;  // key -> image index
} CaptionBuilder;

// An empty set named source, and a builder filling it.
void caption_builder_init(CaptionBuilder *b, CaptionSet *set, const CaptionOptions *opts,
                          const char *source);
void caption_builder_free(CaptionBuilder *b);
// Adds an image under key (NULL: no lookup key); hashed: its split came from the held-out
// hash. where: "FILE:LINE" or "FILE: images[K]" for the missing-file warning. Returns the
// new index (usable or not).
int caption_builder_add_image(CaptionBuilder *b, const char *key, const char *path,
                              const char *id, long long numeric_id, Split split, int hashed,
                              const char *where);
// One caption record for image i, checked and normalised (whitespace controls become
// spaces, surrounding whitespace trimmed). Returns 0 when used, -1 when skipped (warned as
// where).
int caption_builder_add_caption(CaptionBuilder *b, int i, const char *text, size_t len,
                                const char *where);
// Moves the usable images with captions into the set, grouped, and frees the builder.
// Fails (-1, err naming the source, the set freed) when nothing is usable.
int caption_builder_finish(CaptionBuilder *b, Error *err);
// Frees the builder and the set; returns -1 (for a reader's failure path).
int caption_builder_fail(CaptionBuilder *b);

// A caption record that cannot be used: warned as "WHERE: WHY" and counted.
void caption_skip(CaptionSet *set, const char *where, const char *why);

// The lines of a text file held in memory (a UTF-8 byte order mark skipped).
typedef struct {
    const char *p, *end;
    int line;  // 1-based number of the line last returned
} CaptionLines;

void caption_lines_init(CaptionLines *l, const unsigned char *data, size_t len);
// Next line without its "\n" / "\r\n"; 0 at the end.
int caption_lines_next(CaptionLines *l, const char **s, size_t *len);
// Next line that is not blank, with where (cap bytes) set to "PATH:LINE"; 0 at the end.
int caption_lines_next_record(CaptionLines *l, const char **s, size_t *len, char *where,
                              size_t cap, const char *path);
int caption_blank(const char *s, size_t len);  // only white space

// A field of a line as a C string in buf (no NUL bytes, valid UTF-8, fits cap); else NULL
// with why (why_cap bytes) saying which of those failed, naming the field as what.
const char *caption_field_str(char *buf, size_t cap, const char *s, size_t len,
                              const char *what, char *why, size_t why_cap);

// Start of every reader: an empty set, and opts or (when NULL) the defaults in *defaults.
const CaptionOptions *caption_reader_begin(CaptionSet *set, const CaptionOptions *opts,
                                           CaptionOptions *defaults);

#endif
