// split.h: the three data splits every dataset in datasets/ offers.
//
// "train" fits parameters, "valid" (also spelt "val") picks checkpoints and
// hyper-parameters, "test" is reported once. What each split holds is defined by
// the dataset (see mnist.h and scenes.h).
#ifndef DATASETS_SPLIT_H
#define DATASETS_SPLIT_H

#include "core/error.h"

typedef enum { SPLIT_TRAIN = 0, SPLIT_VALID = 1, SPLIT_TEST = 2 } Split;

#define SPLIT_COUNT 3

// "train", "valid", "test".
const char *split_name(Split split);
// Accepts "train", "valid", "val", "test"; otherwise fails naming the value.
int split_parse(const char *name, Split *out, Error *err);

#endif
