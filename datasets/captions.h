// captions.h: captioning datasets read from disk — Flickr8k, COCO captions JSON,
// Karpathy split JSON and a plain TSV — into one in-memory type.
//
// A CaptionSet is a list of images (path, id string, split), each with its raw
// caption strings (valid UTF-8, surrounding whitespace trimmed, tabs / newlines inside
// turned into spaces, no other control characters, never empty), so a caption can be
// written back to a TSV line unchanged. Pixels are not read here: see imagecache.h.
// Readers are chosen by a spec string:
//
//   flickr8k:DIR          DIR/Flickr8k.token.txt ("NAME.jpg#k<TAB>caption" per line)
//                         and the split lists DIR/Flickr_8k.{train,dev,test}Images.txt
//                         (one file name per line; dev -> valid). Images are looked up
//                         in DIR/Flicker8k_Dataset/ (the archive's own spelling) when
//                         that folder exists, else directly in DIR. An image named in no
//                         list is skipped (one summary warning). When none of the three
//                         lists exists, splits come from the held-out hash below (with
//                         a warning); when only some exist, that is an error.
//   coco:JSON:IMAGES      COCO captions JSON: "images" [{id, file_name}], "annotations"
//                         [{image_id, caption}]; path IMAGES/file_name, id the decimal
//                         image id (numeric_id too). No split in the file: the held-out
//                         hash decides.
//   karpathy:JSON:IMAGES  Karpathy split JSON (dataset_*.json): "images" [{filename,
//                         [filepath], split, sentences [{raw | tokens}], [cocoid]}];
//                         path IMAGES/filepath/filename when filepath is present, else
//                         IMAGES/filename; split train | val | test | restval (restval
//                         counts as train); a sentence without "raw" uses its "tokens"
//                         joined by spaces. id: cocoid when present (numeric_id too),
//                         else the file name.
//   tsv:FILE:IMAGES       "file<TAB>caption[<TAB>split]" per line (split train | val |
//                         valid | test); path IMAGES/file, id the file column. Lines of
//                         one file are one image; a line without split takes the hash;
//                         a first line starting "file<TAB>" or "image<TAB>" is a header.
//                         The file column is in core/text_escape.h's field form, as
//                         caption predict writes it (\t \n \r \\ \xNN reversed, so its
//                         output reads back); a file without backslashes reads as it
//                         is, a backslash starting no escape skips the line with a
//                         warning, and a name must be valid UTF-8 once unescaped.
//   scenes                the built-in synthetic scenes (datasets/scenes.h); the spec
//                         parser recognises it, the readers here do not handle it.
// The kind is the text before the first ':'; for the two-part kinds the JSON/FILE part
// runs to the NEXT ':' and IMAGES is everything after it (so IMAGES may contain ':',
// the JSON path may not). Lines may end in "\n" or "\r\n"; '#' starts no comment.
//
// Held-out hash (COCO, and TSV lines / Flickr8k without a split): u = FNV-1a 64 of the
// id string mod 10000; u < valid_share*10000 -> valid, else u < (valid_share +
// test_share)*10000 -> test, else train. Pure function of the id: reproducible across
// runs, machines and file orders. On a small set the shares may round to nothing (six
// images at 5% each hold none out), so caption_set_read then moves images, see
// caption_set_ensure_heldout: a set of at least 3 images always has a validation and a
// test image when its splits came from the hash.
//
// Bad records never abort. A record that cannot be used — image file missing, caption
// empty after trimming, caption longer than CAPTION_MAX_BYTES, invalid UTF-8, a JSON
// field of the wrong type, an unknown split, an annotation for an unknown image — is
// skipped and named as "FILE:LINE: reason" (text files) or "FILE: images[K]: reason" /
// "FILE: annotations[K]: reason" (JSON, K counting from 0) in set->warnings (kept, not
// printed, so the CLI decides; at most CAPTION_MAX_WARNINGS are kept, the rest only
// counted in warnings_dropped). An image whose captions were all skipped is itself
// skipped. A file with nothing usable is an error (-1) naming the file.
//
// Limits: text/JSON files larger than opts.max_file_bytes (default 1 GiB) are refused
// before reading; a whole file is read into memory (file size + for JSON the cJSON
// tree: a 23 MB COCO-style captions JSON peaks at about 135 MB resident). JSON nested
// deeper than cJSON's CJSON_NESTING_LIMIT (1000) is refused with its own message before
// parsing (cJSON would refuse it too), never a stack overflow.
// Every image path is checked for existence (one stat per image).
//
//     CaptionSpec spec; CaptionSet set; CaptionOptions opts; Error err;
//     caption_options_default(&opts);
//     if (caption_spec_parse(&spec, "flickr8k:data/flickr8k", &err) ||
//         caption_set_read(&set, &spec, &opts, &err)) { fprintf(stderr, "%s\n", err.msg); ... }
//     for (int i = 0; i < set.n_warnings; i++) fprintf(stderr, "warning: %s\n", set.warnings[i]);
//     for (int i = 0; i < set.n_images; i++)
//         for (int k = 0; k < set.images[i].n_captions; k++)
//             use(set.images[i].path, caption_set_caption(&set, i, k));
//     caption_set_free(&set);
#ifndef DATASETS_CAPTIONS_H
#define DATASETS_CAPTIONS_H

#include <stddef.h>

#include "core/error.h"
#include "datasets/split.h"

#define CAPTION_MAX_BYTES 4096     // a longer caption is skipped with a warning
#define CAPTION_MAX_WARNINGS 1000  // warnings kept; further ones are only counted
#define CAPTION_PATH_MAX 1024      // longest image path / spec part accepted
#define CAPTION_DEFAULT_MAX_FILE_BYTES ((size_t)1 << 30)
#define CAPTION_DEFAULT_HELDOUT_SHARE 0.05  // valid and test share each, hash split

typedef enum {
    CAPTION_SOURCE_SCENES = 0,
    CAPTION_SOURCE_FLICKR8K,
    CAPTION_SOURCE_COCO,
    CAPTION_SOURCE_KARPATHY,
    CAPTION_SOURCE_TSV,
} CaptionSource;

typedef struct {
    CaptionSource kind;
    char file[CAPTION_PATH_MAX];    // flickr8k: DIR; coco/karpathy: JSON; tsv: FILE; scenes: ""
    char images[CAPTION_PATH_MAX];  // coco/karpathy/tsv: IMAGES folder; else ""
} CaptionSpec;

typedef struct {
    size_t max_file_bytes;  // refuse bigger caption files (default 1 GiB); 0 = no limit
    double valid_share;     // hash split shares (default 0.05 each); each in [0, 1],
    double test_share;      //   valid_share + test_share <= 1
    int check_images;       // 1 (default): skip records whose image file is missing
} CaptionOptions;

typedef struct {
    char *path;            // image file path (as built from the spec), owned
    char *id;              // id string: file name, or the decimal COCO id, owned
    long long numeric_id;  // COCO / Karpathy cocoid, else -1
    Split split;
    int split_hashed;      // 1: split from the held-out hash; 0: given by the file
    int first_caption;  // this image's captions are set->captions[first .. first+n)
    int n_captions;     // >= 1
} CaptionImage;

typedef struct {
    char source[CAPTION_PATH_MAX];  // the file that was read (for messages)
    CaptionImage *images;           // (n_images), in first-seen order of the source file
    int n_images;
    char **captions;  // (n_captions), grouped by image, file order within an image
    int n_captions;
    // What was left out (for the run's report).
    int images_skipped;    // images named in the source but not used
    int captions_skipped;  // caption records not used (incl. those of skipped images)
    char **warnings;       // (n_warnings) "FILE:LINE: reason", owned
    int n_warnings;
    int warnings_dropped;  // warnings beyond CAPTION_MAX_WARNINGS, counted only
} CaptionSet;

void caption_options_default(CaptionOptions *opts);

// Parses "scenes", "flickr8k:DIR", "coco:JSON:IMAGES", "karpathy:JSON:IMAGES",
// "tsv:FILE:IMAGES". Fails with one line naming the spec and what is wrong (unknown
// kind, missing or empty part, part longer than CAPTION_PATH_MAX), e.g.
//     "data spec 'coco:ann.json': expected coco:JSON:IMAGES"
// (no flag name in it: the caller may prefix "--data").
int caption_spec_parse(CaptionSpec *spec, const char *text, Error *err);
const char *caption_source_name(CaptionSource kind);  // "scenes", "flickr8k", ...
// 1 when specs a and b name the same source: the same kind and the same files, each pair
// of paths equal as given or once resolved (realpath: "data/x" and "./data/x", a symbolic
// link and its target); 0 otherwise, or when either does not parse.
int caption_spec_same(const char *a, const char *b);

// Reads the source named by spec (not scenes: that fails with a message saying so).
// opts may be NULL for the defaults. On failure set is left empty (safe to free).
// Also checks the held-out shares in opts, and applies caption_set_ensure_heldout (the
// individual readers do neither).
int caption_set_read(CaptionSet *set, const CaptionSpec *spec, const CaptionOptions *opts,
                     Error *err);
// The individual readers (same contract as caption_set_read): datasets/captions_text.h
// (flickr8k, tsv) and datasets/captions_json.h (coco, karpathy).

void caption_set_free(CaptionSet *set);  // frees everything and zeroes; safe on a zeroed set

static inline const char *caption_set_caption(const CaptionSet *set, int image, int k) {
    return set->captions[set->images[image].first_caption + k];
}
// Number of images / captions in one split.
int caption_set_count(const CaptionSet *set, Split split, int *n_captions);
// Indices (into set->images) of the images of one split, in set order; returns the
// count, *out xmalloc'd (caller frees; NULL when the count is 0).
int caption_set_split_indices(const CaptionSet *set, Split split, int **out);

// Keeps only the images with keep[i] != 0 (e.g. after decoding failed), renumbering
// images and captions in order; the dropped ones are added to the skip counts.
void caption_set_filter(CaptionSet *set, const unsigned char *keep);
// Appends a warning (formatted, then written in core/text_escape.h's field form: one line)
// to the set's list, honouring CAPTION_MAX_WARNINGS.
void caption_set_warn(CaptionSet *set, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// Appends an Error's message as a warning as it is (it is in the field form already:
// core/error.h), so its escapes are not doubled.
void caption_set_warn_error(CaptionSet *set, const Error *err);

// The hash split described above (shares as in CaptionOptions).
Split caption_heldout_split(const char *id, double valid_share, double test_share);
// With at least 3 images, each empty split (validation, then test, then training) gets one
// image moved from the fullest split that has 2 or more (training first on a tie): the
// image of that split whose split came from the hash and whose u (then whole hash, then
// index) is smallest, so the choice depends on the ids alone. Images with a split given in
// the file never move. Returns how many moved (0 to 3); call it again after
// caption_set_filter to keep the promise.
int caption_set_ensure_heldout(CaptionSet *set);
// 1 when the len bytes at s are valid UTF-8 (no overlong forms, surrogates or code
// points past U+10FFFF); *bad_offset (may be NULL) gets the first bad byte's offset.
int caption_utf8_valid(const char *s, size_t len, size_t *bad_offset);

#endif
