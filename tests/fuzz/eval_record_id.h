// eval_record_id.h: the evaluation the draw eval --per-image fuzz target reads every input
// as (tests/fuzz/fuzz_eval_record.c), and whose records make_seeds.c writes as its seeds:
// 5 images in batches of 2, K 3, seed 1, two made-up digests.
#ifndef TESTS_FUZZ_EVAL_RECORD_ID_H
#define TESTS_FUZZ_EVAL_RECORD_ID_H

#include "cli/draw_eval_record.h"

#define FUZZ_RECORD_ID                                                                      \
    ((DrawEvalIdentity){                                                                     \
        .weights_sha256 = "5a0c31f25a0c31f25a0c31f25a0c31f25a0c31f25a0c31f25a0c31f25a0c31f2", \
        .images_sha256 = "0d4e9a170d4e9a170d4e9a170d4e9a170d4e9a170d4e9a170d4e9a170d4e9a17",  \
        .images = 5, .samples = 3, .seed = 1, .batch = 2})

#endif
