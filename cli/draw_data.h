// draw_data.h: the image sets bin/draw trains and evaluates on, by --data name.
//
//   mnist, fashion-mnist, PATH  datasets/mnist.h: grey 28 x 28 (PATH: any IDX file)
//   mnist2                      datasets/mnist2.h: two digits in 60 x 60, grey (MNIST's files)
//   scenes                      datasets/scenes.h: colour 64 x 64 scenes of 1-3 tinted MNIST
//                               and Fashion-MNIST objects (the captioner's scenes, seed 1);
//                               train DRAW_SCENES_TRAIN of them, valid and test 1,000 each
// Sets are ImageSets of bytes (colour ones (n, 3, 64, 64), the scene intensities rounded
// to 1/255). Grey sets are binarised for DRAW as MNIST is (datasets/mnist.h); colour sets
// never are: draw_data_binarizable says which.
#ifndef CLI_DRAW_DATA_H
#define CLI_DRAW_DATA_H

#include "core/error.h"
#include "datasets/mnist.h"
#include "datasets/split.h"

#define DRAW_SCENES_TRAIN 20000

// Any of the three splits of DATA under ROOT; NULL outputs are skipped. On failure all
// are left empty.
int draw_data_load_splits(ImageSet *train, ImageSet *valid, ImageSet *test, const char *data,
                          const char *root, Error *err);
int draw_data_load(ImageSet *set, const char *data, const char *root, Split split, Error *err);
// 1 for the grey sets (Bernoulli binarisation applies), 0 for colour.
int draw_data_binarizable(const char *data);

#endif
