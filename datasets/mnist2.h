// mnist2.h: two-digit MNIST, the data of DRAW's two-digit generation experiment (Gregor et
// al. 2015, section 4.2: two 28 x 28 MNIST digits chosen at random and placed at random in
// a 60 x 60 black image; where they overlap the intensities are added and clipped at 1).
//
// Image i of a split is a pure function of (seed, split, i): a stream seeded from them
// picks the two source digits (uniformly, with replacement, from the split's range) and
// their top-left corners (uniformly in [0, 60 - 28], so both 28 x 28 digit boxes lie
// wholly inside the image); the pixels are min(255, a + b) of the two placed digits.
// Sources: train takes the first 55,000 images of MNIST's training file, valid its last
// 5,000, test the 10,000 of the test file, so no split shares a source digit with
// another (the splits of datasets/mnist.h). Default counts: 55,000, 5,000, 10,000.
// Needs ROOT/mnist/ (`make data`). Generating a whole split takes well under a second.
#ifndef DATASETS_MNIST2_H
#define DATASETS_MNIST2_H

#include <stdint.h>

#include "core/error.h"
#include "datasets/idx.h"
#include "datasets/mnist.h"
#include "datasets/split.h"

#define MNIST2_SIZE 60   // image side
#define MNIST2_DIGIT 28  // digit side
#define MNIST2_DEFAULT_SEED 2u

typedef struct {
    int source[2];  // index of each digit in its file (training file for train and valid)
    int label[2];   // its class 0..9
    int x[2], y[2]; // top-left corner of its 28 x 28 box, in [0, 32]
} Mnist2Item;

typedef struct {
    Idx images[2], labels[2];  // [0] MNIST's training file, [1] its test file
    uint64_t seed;
} Mnist2;

// Loads MNIST's files under root (NULL: "data"); fails naming a missing or bad file.
int mnist2_open(Mnist2 *m, const char *root, uint64_t seed, Error *err);
void mnist2_close(Mnist2 *m);
// Images in a split (55,000, 5,000, 10,000) and the source range its digits come from:
// file 0 (training) or 1 (test), indices [*first, *first + *n).
int mnist2_count(Split split);
void mnist2_sources(Split split, int *file, int *first, int *n);
// The two digits of image i of split (cheap: no pixels).
void mnist2_describe(Mnist2Item *item, const Mnist2 *m, Split split, int i);
// Renders image i into out (60 * 60 grey levels, row-major); item may be NULL.
void mnist2_render(uint8_t *out, Mnist2Item *item, const Mnist2 *m, Split split, int i);
// The first count images of split (0: all) as an ImageSet named "mnist2" (grey levels;
// valid and test with their float copy), for `draw --data mnist2`.
void mnist2_load(ImageSet *set, const Mnist2 *m, Split split, int count);

#endif
