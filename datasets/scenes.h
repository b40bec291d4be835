// scenes.h: the captioner's built-in dataset: synthetic RGB scenes of coloured MNIST
// digits and Fashion-MNIST items with five reference captions each.
//
// A scene is a square canvas (64 x 64 by default) on a dark background (a random
// colour with every channel in [0, 0.12]) holding 1 to 3 objects. Each object is an
// MNIST digit or a Fashion-MNIST item, scaled (bilinear) to a square of 20..32 px,
// tinted with a palette colour (red, green, blue, yellow, purple, cyan, white; the
// objects of one scene have different colours) and placed so that the squares of
// two objects never overlap. An object's box is the tight box of its ink (pixels
// with alpha >= SCENES_INK) inside its square, in pixels, x1 and y1 exclusive.
//
// Object images come from the matching split: train scenes take any of the 60,000
// training images, valid scenes the first 5,000 of the test files, test scenes the
// last 5,000, so test objects are never seen in training. Loading needs both data
// sets under ROOT (`make data`).
//
// Captions are lowercase words separated by single spaces, no punctuation, from a
// small grammar with paraphrases (templates in scenes.c), for example
//     "a red seven to the left of a blue bag"   "there is a blue bag right of a red seven"
//     "a red seven and a blue bag"              "a single red seven"
//     "a red seven above a green boot and a blue bag left of a green boot"
// Every caption names every object of its scene by "COLOUR WORD" (the colour
// identifies the object within the scene). Relations come from the tight boxes and are
// strict: "X left of Y" / "X to the left of Y" means X.x1 <= Y.x0, "right of" means
// X.x0 >= Y.x1, "above" X.y1 <= Y.y0, "below" / "under" X.y0 >= Y.y1. Scenes with two or
// more objects always get two captions with relations; the five captions differ.
//
// Everything about scene i of a split (objects, pixels, captions) is a pure function
// of (config seed, split, i), so scenes are generated on demand: rendering one
// 64 x 64 scene takes about 20 microseconds (-O3), cheap enough to re-render every epoch
// (no cache needed); scenes_render_range fills a bulk buffer for callers that
// prefer to keep them.
#ifndef DATASETS_SCENES_H
#define DATASETS_SCENES_H

#include <stdint.h>

#include "core/error.h"
#include "datasets/idx.h"
#include "datasets/split.h"

#define SCENES_MAX_OBJECTS 3
#define SCENES_CAPTIONS 5
#define SCENES_CAPTION_MAX 160  // bytes including the terminating 0
#define SCENES_INK 0.25f        // alpha threshold for an object's tight box
#define SCENES_CLASS_COUNT 20   // 10 digits then 10 fashion items
#define SCENES_COLOUR_COUNT 7

typedef struct {
    int size;                    // canvas height = width in pixels (default 64)
    int counts[SPLIT_COUNT];     // scenes per split (default 100000, 1000, 1000)
    uint64_t seed;               // default 1
    int min_objects, max_objects;  // 1 <= min <= max <= SCENES_MAX_OBJECTS (1, 3)
    int min_scale, max_scale;    // object square side in pixels (20, 32); <= size
    const char *root;            // data root, NULL = "data"
} ScenesConfig;

typedef struct {
    int cls;                 // 0..9 digit "zero".."nine", 10..19 fashion item
    int colour;              // palette index 0..SCENES_COLOUR_COUNT-1
    const char *word;        // class word, e.g. "seven" or "bag"
    const char *colour_word; // e.g. "red"
    int x0, y0, x1, y1;      // tight box in pixels, x1/y1 exclusive
    int sx, sy, side;        // the square the object was drawn in
    int source;              // image index in its source file
} SceneObject;

typedef struct {
    int n_objects;
    SceneObject objects[SCENES_MAX_OBJECTS];
    char captions[SCENES_CAPTIONS][SCENES_CAPTION_MAX];
} SceneInfo;

typedef struct {
    ScenesConfig cfg;
    Idx digits[2], digit_labels[2];    // [0] training file, [1] test file (uint8)
    Idx fashion[2], fashion_labels[2];
} Scenes;

void scenes_config_default(ScenesConfig *cfg);
// Checks the configuration (fails naming the bad field) and loads the object images.
int scenes_open(Scenes *s, const ScenesConfig *cfg, Error *err);
void scenes_close(Scenes *s);

int scenes_count(const Scenes *s, Split split);
// Objects and captions of scene i, without pixels (cheap). 0 <= i < scenes_count.
void scenes_describe(SceneInfo *info, const Scenes *s, Split split, int i);
// Renders scene i into chw (3, size, size), values in [0, 1]; info may be NULL.
void scenes_render(float *chw, SceneInfo *info, const Scenes *s, Split split, int i);
// Renders scenes start..start+n-1 into out (n, 3, size, size); infos (n) may be NULL.
void scenes_render_range(float *out, SceneInfo *infos, const Scenes *s, Split split,
                         int start, int n);

// Word lists: class words (SCENES_CLASS_COUNT), colour words (SCENES_COLOUR_COUNT),
// and every word the caption grammar can produce (for building a vocabulary).
const char *scenes_class_word(int cls);
const char *scenes_colour_word(int colour);
// Sets *n and returns the array of all grammar words (static storage).
const char *const *scenes_vocabulary(int *n);
// 1 when word is an object (class) word, e.g. "seven", "bag"; else 0.
int scenes_word_is_object(const char *word);
// 1 when word is a colour word; else 0.
int scenes_word_is_colour(const char *word);

#endif
