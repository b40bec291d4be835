// tiny.h: the tiny configurations and batches that the model tests of one kind share, so
// that a gradient check of one decoder and of the other run on the same data.
//
// Captioning (tests/test_sat.c, tests/test_sat_transformer.c): TINY_CAP_B images of 3 x S x S
// (S = TINY_CAP_S), caption lengths 2, 4 and 0 of at most TINY_CAP_ML words from a
// vocabulary of TINY_CAP_V. Translation (tests/test_translator*.c): TINY_PAIRS_B ragged
// pairs, sources of 4 and 2 of TINY_PAIRS_S ids (vocabulary 7), targets of 3 and 1 of
// TINY_PAIRS_ML words (vocabulary 8).
#ifndef TESTS_SUPPORT_TINY_H
#define TESTS_SUPPORT_TINY_H

#include <stddef.h>

#include "core/rng.h"
#include "models/sat_config.h"

enum { TINY_CAP_B = 3, TINY_CAP_S = 8, TINY_CAP_V = 9, TINY_CAP_ML = 4 };
enum { TINY_PAIRS_B = 2, TINY_PAIRS_S = 4, TINY_PAIRS_ML = 3 };

// The defaults with the tiny image and vocabulary: images of TINY_CAP_S, a two-layer CNN of 3
// and 4 channels (grid 2 x 2: L = 4, D = 4), V TINY_CAP_V, max_len TINY_CAP_ML. Not finished
// (sat_config_finish): the caller sets its decoder first.
void tiny_caption_config(SatConfig *c);

// The caption batch from rng: images (TINY_CAP_B * 3 * S * S) uniform in [0, 1), then each
// row's words (TINY_CAP_B, TINY_CAP_ML: drawn below V past the specials, 0 after the row's
// length) and lens (TINY_CAP_B).
void tiny_caption_batch(float *images, int *words, int *lens, Rng *rng);

// The translation batch: src (TINY_PAIRS_B, TINY_PAIRS_S), src_len (TINY_PAIRS_B), words
// (TINY_PAIRS_B, TINY_PAIRS_ML), lens (TINY_PAIRS_B).
void tiny_pairs(int *src, int *src_len, int *words, int *lens);

#endif
