// translate_bench.h: what the two translator benchmarks (bench_translate, the LSTM
// translator; bench_translate_transformer, the Transformer) share with each other and with
// their PyTorch sides in bench/reference: the batch shapes, the random ids, and the file of
// a beam check (the weights, a batch and the toolkit's beam results, which the Python side
// decodes again and compares word for word).
#ifndef BENCH_TRANSLATE_BENCH_H
#define BENCH_TRANSLATE_BENCH_H

#include "core/block.h"
#include "core/rng.h"

// translator_ref.py bench_lengths(): src_len (B) over [S/2, S], lens (B) over
// [max_len/2, max_len] in descending order.
void translate_bench_lengths(int *src_len, int *lens, int B, int S, int max_len);

// Random ids: src (B, S) source tokens 1..Vs-1 up to each row's length (0 after), words
// (B, max_len) target words among the V - VOCAB_NSPECIAL non-special ones.
void translate_bench_batch(int *src, int *words, const int *src_len, int B, int S, int Vs,
                           int max_len, int V, Rng *rng);

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
