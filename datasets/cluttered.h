// cluttered.h: cluttered translated MNIST (Mnih et al. 2014, "Recurrent Models of Visual
// Attention", section 4.1; the set DRAW classifies in Gregor et al. 2015, section 4).
//
// One image is W x H (100 x 100 by default) of grey levels in [0, 1]:
//   1. clutter: F fragments (8 by default) of S x S pixels (8 by default), each cut at a
//      uniformly random offset from a random *other* digit of the same source set and added
//      at a uniformly random position fully inside the image, values clipped at 1;
//   2. the digit: one whole 28 x 28 MNIST image added at a uniformly random position fully
//      inside the image (no border), values clipped at 1. Its label is the image's.
// This is the procedure of DeepMind's public generator (google-deepmind/mnist-cluttered,
// mnist_cluttered.lua: distractors of width dist_w = 8 placed first, then the digit; its
// README's 100 x 100 example uses num_dist = 8), which is the data of the RAM and DRAW
// papers' 100 x 100 cluttered experiments.
//
// Reproducibility: image `index` of a split is a pure function of (seed, split, index, the
// source set): its digit is source image index mod n and every random choice comes from a
// stream seeded with (seed, split, index). So index + k n shows the same digit in fresh
// clutter at a fresh place (training walks through epochs that way), and the 10,000 test
// images with indices 0..9999 show each test digit once.
// Splits: the source of each split is the MNIST split of the same name (datasets/mnist.h:
// train = the first 55,000 training images, valid = the last 5,000, test = the test file),
// and both the digit and its clutter come from that source only, so the splits share no
// source digit.
#ifndef DATASETS_CLUTTERED_H
#define DATASETS_CLUTTERED_H

#include <stdint.h>

#include "core/error.h"
#include "datasets/mnist.h"

#define CLUTTER_MAX_FRAGMENTS 64
#define CLUTTER_TEST_SEED 0xC1u  // the test (and validation) images every evaluation uses

typedef struct {
    int W, H;       // image width and height
    int fragments;  // clutter fragments per image
    int fragment;   // fragment side in pixels
} ClutterConfig;

// 100 x 100, 8 fragments of 8 x 8 (the papers' setting).
ClutterConfig clutter_config_default(void);
// Fails when the image cannot hold a source digit (rows x cols) or a fragment, or the
// counts are out of range.
int clutter_config_check(const ClutterConfig *c, int digit_rows, int digit_cols, Error *err);

// Where everything went (0-based pixel coordinates of top-left corners; source indices are
// positions in the source ImageSet, add src->first for the position in its file).
typedef struct {
    int label;                                // the digit's class (-1: the source has none)
    int digit;                                // source index of the digit
    int x, y;                                 // the digit's box: [x, x + cols) x [y, y + rows)
    int frag_src[CLUTTER_MAX_FRAGMENTS];      // source index each fragment was cut from
    int frag_sx[CLUTTER_MAX_FRAGMENTS];       // where in that digit (column, row)
    int frag_sy[CLUTTER_MAX_FRAGMENTS];
    int frag_x[CLUTTER_MAX_FRAGMENTS];        // where in the image
    int frag_y[CLUTTER_MAX_FRAGMENTS];
} ClutterSample;

// Writes image `index` (>= 0) of src's split into out (H, W) and returns its label; info
// (may be NULL) receives the layout. src needs at least 2 images.
int cluttered_image(float *out, ClutterSample *info, const ImageSet *src, const ClutterConfig *c,
                    uint64_t seed, long index);

// A batch: out (B, H W) and labels (B) of images idx[0..B).
void cluttered_batch(float *out, int *labels, const ImageSet *src, const ClutterConfig *c,
                     uint64_t seed, const long *idx, int B);

// The same batch made on `threads` threads (contiguous parts of the batch): the same
// images bit for bit, each being a pure function of its index.
void cluttered_batch_threads(float *out, int *labels, const ImageSet *src, const ClutterConfig *c,
                             uint64_t seed, const long *idx, int B, int threads);

// Writes images [0, count) as DIR/00000.png ... and DIR/labels.txt ("00000.png 7" per line).
int cluttered_write_folder(const char *dir, const ImageSet *src, const ClutterConfig *c,
                           uint64_t seed, int count, Error *err);

#endif
