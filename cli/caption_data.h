// caption_data.h: bin/caption's view of its data: the built-in scenes or a caption set
// on disk (datasets/captions.h, decoded once into datasets/imagecache.h), behind one
// interface: per split, a count, image i's pixels (3, S, S) in [0, 1], its reference
// captions and an id for results JSON.
//
// A separate translation unit because datasets/captions.h and seq/tokenizer.h both
// declare utf8_valid with different signatures and cannot be included together.
#ifndef CLI_CAPTION_DATA_H
#define CLI_CAPTION_DATA_H

#include <stdbool.h>
#include <stdio.h>

#include "core/error.h"
#include "datasets/featcache.h"
#include "datasets/scenes.h"
#include "datasets/split.h"

typedef struct {
    const char *data;   // "scenes" or a caption spec (flickr8k:DIR, coco:JSON:IMAGES, ...)
    const char *root;   // scenes: data root
    int train_count, val_count, test_count;  // scenes per split
    long scenes_seed;
    int cache_mb;       // disk data: decoded-image cache bound (MiB)
    double held_out;    // disk data without splits: validation share and test share, each
    const char *features;  // a feature cache (datasets/featcache.h) of this data, or NULL:
                           // images are then its annotations (L, D), never decoded
    bool verify_features;  // check the cache's checksum on opening (one pass over the
                           // file); otherwise its header, metadata, sizes and status only
} CaptionDataFlags;

// --held-out's help line (train and eval must agree on it to see the same test split).
#define HELD_OUT_HELP                                                                      \
    "caption sets without splits (coco:, tsv: lines, flickr8k: without lists): the share of " \
    "images held out for validation, and again for test, chosen by a hash of the image id; "  \
    "at least one each when there are 3 images or more"

// --features and --verify-features' help lines (train and eval).
#define FEATURES_HELP                                                                     \
    "a feature cache of --data (caption features): the decoder runs on its annotations, no "  \
    "image is decoded"
#define VERIFY_FEATURES_HELP                                                              \
    "check the feature cache's checksum first, one pass over the whole file (opening "      \
    "checks its header, sizes and status; caption features checks the checksum when it "     \
    "writes the cache and when it finds it complete)"

// The data flags that train and eval share beyond --data: the scenes' counts, seed and
// digit folder, and an image folder's cache bound (df a CaptionDataFlags *; ArgSpec
// entries of cli/args.h).
#define SCENES_AND_CACHE_SPECS(df)                                                                         \
    {"train-count", ARG_INT, &(df)->train_count, "scenes: training scenes", .has_min = true, .min = 1},    \
    {"val-count-scenes", ARG_INT, &(df)->val_count, "scenes: validation scenes", .has_min = true, .min = 1}, \
    {"test-count", ARG_INT, &(df)->test_count, "scenes: test scenes", .has_min = true, .min = 1},           \
    {"scenes-seed", ARG_LONG, &(df)->scenes_seed, "scenes: generator seed", .given = NULL},                 \
    {"data-root", ARG_STRING, &(df)->root, "scenes: folder holding mnist/ and fashion-mnist/",              \
     .metavar = "DIR", .given = NULL},                                                                      \
    {"cache-mb", ARG_INT, &(df)->cache_mb, "image folders: decoded-image cache bound in MiB",               \
     .has_min = true, .min = 1}

// Reference captions read per image at most (caption_data_captions' max, for the metrics and
// for training's draw of one).
#define CAPTION_DATA_MAX_REFS 64

typedef struct CaptionData CaptionData;

void caption_data_flags_default(CaptionDataFlags *f);
// S: image side. quiet: no decode progress bar. Fails with one line ("--data: ...",
// "PATH: reason"); warnings about skipped records go to stderr.
int caption_data_open(CaptionData **d, const CaptionDataFlags *f, int S, int quiet, Error *err);
void caption_data_close(CaptionData *d);  // NULL is fine

int caption_data_is_scenes(const CaptionData *d);
const Scenes *caption_data_scenes(const CaptionData *d);  // scenes only
int caption_data_count(const CaptionData *d, Split s);
// What to do about an empty training or validation split, as the tail of an error line
// ("; ..."); "" when there is nothing to add.
const char *caption_data_hint(const CaptionData *d);
// chw (3, S, S) of image i; info (scenes only; may be NULL) its objects and captions.
// With features: image i's annotations (L, D) instead. caption_data_read fails where
// annotations read from a feature cache hold NaN or infinity, naming the cache and the
// image (datasets/featcache.h, featcache_read); caption_data_image does not check.
int caption_data_read(const CaptionData *d, Split s, int i, float *chw, SceneInfo *info, Error *err);
void caption_data_image(const CaptionData *d, Split s, int i, float *chw, SceneInfo *info);
// chw (3, S, S): image i's pixels, also with features (decoded from its file, as
// caption_load_image; mid-grey when it cannot be read), for pictures.
void caption_data_picture(const CaptionData *d, Split s, int i, float *chw);

// With --features: the open cache (NULL otherwise). The data were checked against it:
// the same image list; images the extraction could not read are left out of every split
// (named in a warning). NULL for d NULL.
const FeatCache *caption_data_features(const CaptionData *d);
// Points out[0..n) at image i's reference captions (at most max); info is scratch for
// scenes. Returns n.
int caption_data_captions(const CaptionData *d, Split s, int i, const char **out, int max,
                          SceneInfo *info);
// Writes image i's id as the JSON member `"image_id": ID` (a number, or a file name in
// core/text_escape.h's name form, with "image_id_hex" beside it when that is escaped).
void caption_data_write_id(FILE *fp, const CaptionData *d, Split s, int i);
// Decodes an image file the way the caption sets are cached (centre square, area
// resize to S, 8-bit rounding): chw (3, S, S) in [0, 1]; "PATH: reason" on failure.
int caption_load_image(float *chw, const char *path, int S, Error *err);

#endif
