// mnist.h: the grey image sets behind `--data mnist | fashion-mnist | PATH`.
//
//   "mnist"          ROOT/mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte (raw IDX)
//   "fashion-mnist"  ROOT/fashion-mnist/{train,t10k}-...-ubyte.gz (gzipped IDX)
//   PATH             any IDX image file (N, rows, cols) of uint8; labels are optional:
//                    the sibling whose file name has "images" replaced by "labels" (and
//                    "idx3" by "idx1", the MNIST naming) is used when it exists.
// ROOT is the data-root argument (NULL = "data"). A missing file fails naming it and
// suggesting `make data`.
//
// Splits: for the named sets, train = the first 55,000 images of the training file,
// valid = its last 5,000, test = the 10,000 of the test file. For PATH, train = the
// first 90 % of the file, valid = the last 10 % (at least one image), and test = the
// same images as valid (there is no separate test file).
//
// Images are held as bytes, (n, rows * cols) row-major, and become floats in [0, 1]
// (pixel / 255) when a batch is made (imageset_batch, imageset_copy). The valid and test
// splits also keep a float copy, `images`, which evaluation reads whole; the train split
// has none (images = NULL) and is read through imageset_batch only.
// Binarisation (the DRAW setting, see REFERENCE.md section 3):
//   - training batches: dynamic, a fresh Bernoulli(pixel / 255) sample every time a batch
//     is drawn, from the Rng the caller passes (so every epoch sees new samples); one
//     draw per pixel, in pixel order, whatever its value;
//   - valid/test: imageset_binarize_fixed() once after loading, with
//     MNIST_FIXED_BINARIZE_SEED, so every evaluation sees the same 0/1 images; the
//     sample is a pure function of (seed, split, image index), identical across loads;
//   - grey levels: pass rng = NULL to imageset_batch and skip the fixed binarisation.
// Memory: 1 byte per pixel for train (the 55,000-image split is 43 MB), 5 for valid and
// test (bytes and floats: 20 MB for the 5,000 validation images).
#ifndef DATASETS_MNIST_H
#define DATASETS_MNIST_H

#include <stdint.h>

#include "core/error.h"
#include "core/rng.h"
#include "datasets/idx.h"
#include "datasets/split.h"

#define MNIST_FIXED_BINARIZE_SEED 0x5EEDu
#define MNIST_TRAIN_COUNT 55000
#define MNIST_VALID_COUNT 5000
#define MNIST_CLASSES 10  // labels 0..9 (every set of the family)

typedef struct {
    int n;             // images
    int channels;      // 1 grey; 3 for colour sets (pixels then (n, 3, rows, cols))
    int rows, cols;    // image height and width
    int dim;           // channels * rows * cols
    uint8_t *pixels;   // (n, dim) grey levels 0..255, or 0 / 255 once binarised; owned
    float *images;     // (n, dim) pixels / 255 in [0, 1] for the valid and test splits;
                       // NULL for the train split; owned
    int *labels;       // (n) class 0..9, or NULL when the set has no labels; owned
    Split split;       // which split this is
    int first;         // index of images[0] in the source file (for reproducible seeds)
    char name[256];    // "mnist", "fashion-mnist" or the PATH
} ImageSet;

// Loads one split of DATA ("mnist", "fashion-mnist" or an IDX PATH) under ROOT.
// Grey levels; call imageset_binarize_fixed for evaluation sets.
int mnist_load(ImageSet *out, const char *data, const char *root, Split split, Error *err);
// Loads any of the three splits reading each file once; NULL outputs are skipped.
int mnist_load_splits(ImageSet *train, ImageSet *valid, ImageSet *test, const char *data,
                      const char *root, Error *err);
void imageset_free(ImageSet *set);

// A set built by a generator (two-digit MNIST, scenes): imageset_alloc zeroes set and
// allocates pixels (n, channels * rows * cols) for the caller to fill; imageset_finish then
// makes the float copy of a valid or test set. first: the source index of image 0 (the
// fixed binarisation's seed uses it).
void imageset_alloc(ImageSet *set, int n, int channels, int rows, int cols, Split split,
                    int first, const char *name);
void imageset_finish(ImageSet *set);

// Replaces every pixel p by a Bernoulli(p / 255) sample, 0 or 255 (0 or 1 in `images`),
// from a stream seeded by (seed, set->split, source index), so two loads give identical
// images.
void imageset_binarize_fixed(ImageSet *set, uint64_t seed);

// Writes images idx[0..B) of set into out (B, dim) as floats. With rng non-NULL each
// pixel is a fresh Bernoulli(pixel / 255) sample, 0 or 1 (dynamic binarisation); with
// rng NULL the values are pixel / 255. idx (B) are image indices, e.g. perm + start of a
// shuffled order.
void imageset_batch(float *out, const ImageSet *set, const int *idx, int B, Rng *rng);
// Writes images [first, first + count) of set into out (count, dim) as pixel / 255.
void imageset_copy(float *out, const ImageSet *set, int first, int count);

// The raw files behind DATA: the training file (test_file = 0) or the test file (1) of
// "mnist" / "fashion-mnist", or PATH itself (test_file ignored). images: uint8
// (N, rows, cols); labels: uint8 (N) with values 0..9, or left empty ({0}) when PATH has
// no labels file (named sets require theirs). Checks types, shapes and label range.
int mnist_load_files(Idx *images, Idx *labels, const char *data, const char *root,
                     int test_file, Error *err);

// The class word of label (0..9) for "mnist" ("zero".."nine") or "fashion-mnist"
// ("top", "trousers", "pullover", "dress", "coat", "sandal", "shirt", "sneaker",
// "bag", "boot"); NULL for other sets or labels.
const char *mnist_class_word(const char *data, int label);

#endif
