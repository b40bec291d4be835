#include "models/sat_beam.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"

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

void sat_beam_decode(int *tokens, int *lens, float *alphas, int B, int beam, float length_alpha,
                     int V, int ML, int L, void *model, BeamStepFn step, const float *alpha_hist,
                     int R) {
    const int TS = ML + 1;
    CHECK(beam >= 1 && B >= 1, "beam %d B %d", beam, B);
    int *tok = xmalloc((size_t)B * TS * sizeof(int) * 2);
    int *rows = tok + (size_t)B * TS;
    int *ln = xmalloc((size_t)B * sizeof(int));
    float *sc = xmalloc((size_t)B * sizeof(float));
    BeamConfig bc = {.beam = beam, .max_len = TS, .length_alpha = length_alpha,
                     .start_id = VOCAB_START, .end_id = VOCAB_END, .V = V};
    beam_search(tok, ln, sc, rows, B, model, step, &bc);
    sat_decode_collect(tokens, lens, alphas, tok, ln, rows, alpha_hist, B, R, ML, L);
    free(tok);
    free(ln);
    free(sc);
}
