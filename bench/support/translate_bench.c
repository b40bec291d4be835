// translate_bench.c: see translate_bench.h.
#include "bench/support/translate_bench.h"

#include <stdio.h>

#include "core/error.h"
#include "core/safetensors.h"
#include "seq/vocab.h"

void translate_bench_lengths(int *src_len, int *lens, int B, int S, int max_len) {
    for (int b = 0; b < B; b++) {
        src_len[b] = S - (b * 7) % (S - S / 2 + 1);
        lens[b] = max_len - (b * 3) % (max_len - max_len / 2 + 1);
    }
    for (int i = 1; i < B; i++)  // descending (insertion sort)
        for (int j = i; j > 0 && lens[j - 1] < lens[j]; j--) {
            int t = lens[j];
            lens[j] = lens[j - 1], lens[j - 1] = t;
        }
}

void translate_bench_batch(int *src, int *words, const int *src_len, int B, int S, int Vs,
                           int max_len, int V, Rng *rng) {
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < S; t++)
            src[(size_t)b * S + t] =
                t < src_len[b] ? 1 + (int)(rng_uniform(rng) * (float)(Vs - 1)) % (Vs - 1) : 0;
        for (int t = 0; t < max_len; t++)
            words[(size_t)b * max_len + t] =
                VOCAB_NSPECIAL + (int)(rng_uniform(rng) * (float)(V - VOCAB_NSPECIAL)) %
                                     (V - VOCAB_NSPECIAL);
    }
}

int translate_bench_save_check(const char *path, const char *prog, const Block *params,
                               const int *src, const int *src_len, int B, int S,
                               const int *words, const int *lens, const float *score,
                               int max_len, TranslateBenchBeam beam) {
    Block chk = {0};
    float *fsrc, *flen, *fwords, *fwlen, *fscore;
    block_add(&chk, &fsrc, "src", 2, B, S);
    block_add(&chk, &flen, "src_len", 1, B);
    block_add(&chk, &fwords, "beam_words", 2, B, max_len);
    block_add(&chk, &fwlen, "beam_len", 1, B);
    block_add(&chk, &fscore, "beam_score", 1, B);
    block_alloc(&chk);
    for (int i = 0; i < B * S; i++) fsrc[i] = (float)src[i];
    for (int b = 0; b < B; b++) {
        flen[b] = (float)src_len[b], fwlen[b] = (float)lens[b], fscore[b] = score[b];
        for (int t = 0; t < max_len; t++)
            fwords[b * max_len + t] = t < lens[b] ? (float)words[b * max_len + t] : 0.0f;
    }
    char width[16], alpha[32];
    snprintf(width, sizeof width, "%d", beam.beam);
    snprintf(alpha, sizeof alpha, "%g", (double)beam.length_alpha);
    const Block *blocks[] = {params, &chk};
    const char *prefixes[] = {"param/", "check/"};
    const SafetensorsMeta meta[] = {{"beam", width}, {"length_alpha", alpha}};
    Error err;
    const int r = safetensors_save(path, blocks, prefixes, 2, meta, 2, &err);
    if (r != 0) fprintf(stderr, "%s: %s\n", prog, err.msg);
    block_free(&chk);
    return r;
}
