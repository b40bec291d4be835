// translate_bench.h: what the two translator benchmarks (bench_translate, the LSTM
// translator; bench_translate_transformer, the Transformer) share with each other and with
// their PyTorch sides in bench/reference: the batch shapes, the random ids, and the file of
// a beam check (the weights, a batch and the toolkit's beam results, which the Python side
// decodes again and compares word for word).
#ifndef BENCH_TRANSLATE_BENCH_H
#define BENCH_TRANSLATE_BENCH_H

#include "core/adam.h"
#include "core/block.h"
#include "core/rng.h"

// translator_ref.py bench_lengths(): src_len (B) over [S/2, S], lens (B) over
// [max_len/2, max_len] in descending order.
void translate_bench_lengths(int *src_len, int *lens, int B, int S, int max_len);

// Random ids: src (B, S) source tokens 1..Vs-1 up to each row's length (0 after), words
// (B, max_len) target words among the V - VOCAB_NSPECIAL non-special ones.
void translate_bench_batch(int *src, int *words, const int *src_len, int B, int S, int Vs,
                           int max_len, int V, Rng *rng);

// A bench's batch and results: src (B, S), words (B, max_len), src_len and lens (B: the
// lengths of translate_bench_lengths, fixed), and the decodings' out (B, max_len), out_len
// (B) and score (B); Vs and V the source and target vocabularies of the ids.
typedef struct {
    int B, S, max_len, Vs, V;
    int *src, *words, *src_len, *lens, *out, *out_len;
    float *score;
} TranslateBenchBatch;

void translate_bench_batch_alloc(TranslateBenchBatch *b, int B, int S, int max_len, int Vs,
                                 int V);
void translate_bench_batch_free(TranslateBenchBatch *b);

// rounds + 1 times: fresh ids into b (translate_bench_batch from rng), then run(ctx, b,
// timed). Every round but the first (the warm-up, timed 0) is timed: its wall
// (CLOCK_MONOTONIC) and CPU (CLOCK_PROCESS_CPUTIME_ID) seconds, the drawing of the ids
// left out, are added to *wall and *cpu.
void translate_bench_time(TranslateBenchBatch *b, int rounds, Rng *rng,
                          void (*run)(void *ctx, TranslateBenchBatch *b, int timed), void *ctx,
                          double *wall, double *cpu);

// The update of cli/text_translate.c's training step: the gradients clipped to a global
// norm of 5, then Adam (lr 1e-3) with the moments kept here, its steps counted from 1.
typedef struct {
    Block m1, m2;
    AdamConfig adam;
    int step;
} TranslateBenchAdam;

void translate_bench_adam_init(TranslateBenchAdam *a, const Block *params);
void translate_bench_adam_step(TranslateBenchAdam *a, Block *params, Block *grads);
void translate_bench_adam_free(TranslateBenchAdam *a);

// The beam search a check file records: its width and length normalisation.
typedef struct {
    int beam;
    float length_alpha;
} TranslateBenchBeam;

// Writes path: params under "param/", and under "check/" the batch (src (B, S), src_len (B))
// and the beam results (beam_words (B, max_len), 0 past each length; beam_len (B);
// beam_score (B)), all as floats, with the beam's width and alpha in the metadata. On
// failure prints "prog: message" on stderr and returns -1.
int translate_bench_save_check(const char *path, const char *prog, const Block *params,
                               const int *src, const int *src_len, int B, int S,
                               const int *words, const int *lens, const float *score,
                               int max_len, TranslateBenchBeam beam);

#endif
