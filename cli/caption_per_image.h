// caption_per_image.h: what `caption eval` can write about each image of the split it
// scores, beside the corpus metrics: --per-image FILE (scores per image, JSON) and
// --attention-out DIR (attention strips of chosen images). `caption report` shows both.
//
// --per-image FILE, one JSON document:
//     {"split": "test", "images": 1000, "beam": 3,
//      "items": [{"index": 0,                 the image's place in the split
//                 "image_id": "test_0000.png", as in the COCO results JSON (string or number)
//                 "caption": "a red 3 ...",   the generated caption, as scored
//                 "references": ["...", ...], the reference captions as the data give them
//                 "bleu4": 0.7598,            coco-caption's per-image BLEU-4 (bleu_scorer's
//                                             list; seq/metrics.h metric_bleu_per_image)
//                 "cider_d": 4.91,            CIDEr-D of this image, IDF over the split's
//                                             references (the corpus figure is their mean)
//                 "object_words": 2, "grounded": 2, "grounding": 1.0,   scenes only:
//                                             object words, those whose attention peak lies in
//                                             a box of that object, and their ratio (null
//                                             when the caption names no object)
//                 "objects_named": 2, "objects_true": 3, "objects_right": 2,   scenes only:
//                                             the distinct colour+class objects the caption
//                                             names, the scene's objects, and the named ones
//                                             that are in the scene (seq/object_f1.h)
//                 "strip": "00000.png"},      its strip in --attention-out DIR, or null
//                ...]}
//   Numbers are printed with 9 significant digits.
// --attention-out DIR: one PNG per chosen image, named by its index ("%05d.png"): the
//   image, then one heat map per generated word (the strips of `caption predict`). The
//   chosen images are the first K of the split, the K with the highest CIDEr-D and the K
//   with the lowest (ties by index), K = --attention-count.
#ifndef CLI_CAPTION_PER_IMAGE_H
#define CLI_CAPTION_PER_IMAGE_H

#include "cli/caption_data.h"
#include "core/error.h"
#include "seq/metrics.h"
#include "seq/object_f1.h"
#include "seq/vocab.h"
#include "vision/image.h"

typedef struct {
    const char *per_image;  // --per-image FILE, or NULL
    const char *strips;     // --attention-out DIR, or NULL
    int strips_each;        // --attention-count K (>= 0)
    int beam;               // recorded in the file
} CaptionEvalOutputs;

// A decoded split, as caption eval scored it.
typedef struct {
    const CaptionData *data;
    Split split;
    int n;                             // images 0 .. n-1 of the split
    const CaptionPair *pairs;          // (n) candidate and references, as scored
    const GroundingImage *grounding;   // (n), or NULL when the data are not scenes
    const ObjectCounts *objects;       // (n) object F1's counts, or NULL (not scenes)
    const Vocab *vocab;
    const int *tokens;                 // (n, max_len) generated word ids
    const int *lens;                   // (n)
    const float *alphas;               // (n, max_len, G * G) attention, or NULL (no strips)
    int max_len, G, S;                 // caption length bound, attention grid, image side
} DecodedSplit;

// Writes what o asks for (nothing when both are NULL). Fails with "PATH: reason".
int caption_per_image_write(const CaptionEvalOutputs *o, const DecodedSplit *d, Error *err);

// One strip: the image chw (3, S, S), then the image under each word's attention map
// (alphas (n, G, G)), the word written below; written as a PNG. Small images are shown
// enlarged to at least 128 pixels.
int caption_write_strip(const char *path, const float *chw, int S, const float *alphas, int G,
                        char *const *words, int n, Error *err);

#endif
