// tiny.c: see tiny.h.
#include "tests/support/tiny.h"

#include <string.h>

#include "seq/vocab.h"
#include "tests/support/gradcheck.h"

void tiny_caption_config(SatConfig *c) {
    sat_config_default(c);
    c->image_size = TINY_CAP_S;
    c->cnn.n_layers = 2;
    c->cnn.channels[0] = 3;
    c->cnn.channels[1] = 4;
    c->V = TINY_CAP_V;
    c->max_len = TINY_CAP_ML;
}

void tiny_caption_batch(float *images, int *words, int *lens, Rng *rng) {
    fill_uniform(images, (size_t)TINY_CAP_B * 3 * TINY_CAP_S * TINY_CAP_S, 0.0f, 1.0f, rng);
    static const int len[TINY_CAP_B] = {2, 4, 0};
    for (int b = 0; b < TINY_CAP_B; b++) {
        lens[b] = len[b];
        for (int k = 0; k < TINY_CAP_ML; k++)
            words[b * TINY_CAP_ML + k] =
                k < len[b] ? VOCAB_NSPECIAL + (int)rng_below(rng, TINY_CAP_V - VOCAB_NSPECIAL) : 0;
    }
}

void tiny_pairs(int *src, int *src_len, int *words, int *lens) {
    static const int s[TINY_PAIRS_B * TINY_PAIRS_S] = {4, 6, 5, 3, 2, 5, 0, 0};
    static const int w[TINY_PAIRS_B * TINY_PAIRS_ML] = {4, 7, 5, 6, 0, 0};
    memcpy(src, s, sizeof s);
    memcpy(words, w, sizeof w);
    src_len[0] = 4, src_len[1] = 2;
    lens[0] = 3, lens[1] = 1;
}
