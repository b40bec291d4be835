#include "models/sat_beam.h"

#include <math.h>
#include <string.h>

#include "seq/beam.h"
#include "seq/vocab.h"

void sat_next_word_logprobs(float *logprobs, const float *logits, int n, int V) {
    static const int never[] = {VOCAB_PAD, VOCAB_START};
    beam_word_logprobs(logprobs, logits, n, V, never, 2);
}

void sat_decode_collect(int *tokens, int *lens, float *alphas, const int *tok, const int *ln,
                        const int *rows, const float *alpha_hist, int B, int R, int ML, int L) {
    const int TS = ML + 1;
    for (int b = 0; b < B; b++) {
        int n = ln[b] < ML ? ln[b] : ML;
        lens[b] = n;
        for (int k = 0; k < ML; k++) tokens[(size_t)b * ML + k] = k < n ? tok[(size_t)b * TS + k] : VOCAB_PAD;
        if (alphas)
            for (int k = 0; k < ML; k++) {
                float *dst = alphas + ((size_t)b * ML + k) * L;
                if (k < n)
                    memcpy(dst, alpha_hist + ((size_t)k * R + rows[(size_t)b * TS + k]) * L,
                           (size_t)L * sizeof(float));
                else
                    memset(dst, 0, (size_t)L * sizeof(float));
            }
    }
}
