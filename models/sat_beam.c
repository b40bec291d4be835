#include "models/sat_beam.h"

#include <math.h>
#include <string.h>

#include "seq/vocab.h"

void sat_next_word_logprobs(float *logprobs, const float *logits, int n, int V) {
    for (int r = 0; r < n; r++) {
        const float *z = logits + (size_t)r * V;
        float *lp = logprobs + (size_t)r * V;
        float mx = z[0];
        for (int i = 1; i < V; i++) mx = z[i] > mx ? z[i] : mx;
        double s = 0.0;
        for (int i = 0; i < V; i++) s += exp((double)(z[i] - mx));
        float lse = mx + (float)log(s);
        for (int i = 0; i < V; i++) lp[i] = z[i] - lse;
        lp[VOCAB_PAD] = -1e9f;
        lp[VOCAB_START] = -1e9f;
    }
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
