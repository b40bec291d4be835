#include "datasets/split.h"

#include <string.h>

const char *split_name(Split split) {
    switch (split) {
    case SPLIT_TRAIN: return "train";
    case SPLIT_VALID: return "valid";
    case SPLIT_TEST: return "test";
    }
    return "?";
}

int split_parse(const char *name, Split *out, Error *err) {
    if (!name) return error_set(err, "--split: missing value (train, valid or test)");
    if (!strcmp(name, "train")) *out = SPLIT_TRAIN;
    else if (!strcmp(name, "valid") || !strcmp(name, "val")) *out = SPLIT_VALID;
    else if (!strcmp(name, "test")) *out = SPLIT_TEST;
    else return error_set(err, "--split: unknown split '%s' (train, valid or test)", name);
    return 0;
}
