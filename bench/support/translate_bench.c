// translate_bench.c: see translate_bench.h.
#include "bench/support/translate_bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/check.h"
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

void translate_bench_batch_alloc(TranslateBenchBatch *b, int B, int S, int max_len, int Vs,
                                 int V) {
    *b = (TranslateBenchBatch){.B = B, .S = S, .max_len = max_len, .Vs = Vs, .V = V};
    b->src = xmalloc((size_t)B * S * sizeof(int));
    b->words = xmalloc((size_t)B * max_len * sizeof(int));
    b->src_len = xmalloc((size_t)B * sizeof(int));
    b->lens = xmalloc((size_t)B * sizeof(int));
    b->out = xmalloc((size_t)B * max_len * sizeof(int));
    b->out_len = xmalloc((size_t)B * sizeof(int));
    b->score = xmalloc((size_t)B * sizeof(float));
    translate_bench_lengths(b->src_len, b->lens, B, S, max_len);
}

void translate_bench_batch_free(TranslateBenchBatch *b) {
    free(b->src), free(b->words), free(b->src_len), free(b->lens), free(b->out);
    free(b->out_len), free(b->score);
}

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void translate_bench_time(TranslateBenchBatch *b, int rounds, Rng *rng,
                          void (*run)(void *ctx, TranslateBenchBatch *b, int timed), void *ctx,
                          double *wall, double *cpu) {
    for (int it = 0; it <= rounds; it++) {
        translate_bench_batch(b->src, b->words, b->src_len, b->B, b->S, b->Vs, b->max_len, b->V,
                              rng);
        const double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        run(ctx, b, it > 0);
        if (it > 0) {  // round 0 warms up
            *wall += clock_s(CLOCK_MONOTONIC) - t0;
            *cpu += clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
        }
    }
}

void translate_bench_adam_init(TranslateBenchAdam *a, const Block *params) {
    *a = (TranslateBenchAdam){.adam = adam_defaults(1e-3f)};
    block_layout_like(&a->m1, params);
    block_layout_like(&a->m2, params);
    block_alloc(&a->m1);
    block_alloc(&a->m2);
}

void translate_bench_adam_step(TranslateBenchAdam *a, Block *params, Block *grads) {
    clip_global_norm(grads->data, grads->numel, 5.0f);
    adam_update(params->data, grads->data, a->m1.data, a->m2.data, params->numel, &a->adam,
                ++a->step, a->adam.lr);
}

void translate_bench_adam_free(TranslateBenchAdam *a) {
    block_free(&a->m1);
    block_free(&a->m2);
}
