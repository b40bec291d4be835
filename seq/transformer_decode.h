// transformer_decode.h: incremental decoding with a Transformer decoder stack
// (seq/transformer.h), one position per image per call, for greedy and beam search.
//
// Every layer keeps its self-attention's projected keys and values of the positions decoded so
// far (B, cap, d), and the memory's projected once by tf_decode_start (B, S, d). Step t takes
// the inputs of position t (B, d) (the embedded previous token plus its position), writes its
// keys and values at t, attends over positions 0..t (seq/mha.h mha_step_forward) and over the
// memory below mem_lengths, and returns what tf_decoder_forward returns in row t of a causal
// pass over positions 0..T-1 (tests/test_transformer_decode.c). No dropout (evaluation).
// The state holds up to B rows (beam search: images x beam); a call works on rows [0, n).
// Every cache is per row contiguous (row r's positions at [r cap, (r + 1) cap)), and
// tf_decode_gather makes rows continue others' hypotheses (seq/beam.h's parent rows).
// cross_weights[l] (B, S): layer l's cross-attention weights (mean over heads, or with
// cross_head h >= 1 head h - 1's alone) of the last step, for attention pictures and
// alignments.
#ifndef SEQ_TRANSFORMER_DECODE_H
#define SEQ_TRANSFORMER_DECODE_H

#include "core/block.h"
#include "seq/transformer.h"

typedef struct {
    float *self_k[TRANSFORMER_MAX_LAYERS], *self_v[TRANSFORMER_MAX_LAYERS];  // (B, cap, d)
    float *mem_k[TRANSFORMER_MAX_LAYERS], *mem_v[TRANSFORMER_MAX_LAYERS];    // (B, S, d)
    float *cross_weights[TRANSFORMER_MAX_LAYERS];                            // (B, S)
    float *h[2], *normed, *fout, *sum;  // (B, d) scratch
    float *mean, *rstd;                 // (B)
    float *ffn_pre, *ffn_hidden;        // (B, d_ff)
    float *mha_scratch;                 // mha_step_scratch_floats(B, max(cap, S))
    float *gather;                      // (B, max(cap, S), d) tf_decode_gather's copy
    int B, cap, S;
    int cross_head;  // cross_weights: 0 (tf_decode_layout's) the mean over heads; h >= 1 head h - 1
} TfDecodeState;

// Registers the state for B rows, up to cap positions, a memory of S, in a.
void tf_decode_layout(Block *a, TfDecodeState *s, const TransformerConfig *c, int B, int cap,
                      int S, const char *prefix);
// Projects the memory (n, S, d) of rows [0, n) into every layer's cross-attention keys and
// values.
void tf_decode_start(TfDecodeState *s, const float *mem, int n, const TfDecoderParams *p,
                     const TransformerConfig *c);
// out (n, d): the stack's output at position t (0 <= t < cap; steps 0..t-1 done before) of
// rows [0, n) from their inputs x_t (n, d); mem_lengths (n) in [0, S] or NULL.
void tf_decode_step(float *out, TfDecodeState *s, const float *x_t, int n, int t,
                    const int *mem_lengths, const TfDecoderParams *p, const TransformerConfig *c);
// Row r of [0, n) becomes a copy of row parent[r] (in [0, B)) in every cache: the
// self-attention keys and values of positions [0, t) and the memory's. n <= B.
void tf_decode_gather(TfDecodeState *s, int n, const int *parent, int t,
                      const TransformerConfig *c);
// The same with the memory's keys and values of row r taken from row mem_parent[r]: a
// caller that knows which rows hold the same sentence's memory (a beam's rows) names r
// itself for those, and their copies are skipped.
void tf_decode_gather_split(TfDecodeState *s, int n, const int *parent, const int *mem_parent,
                            int t, const TransformerConfig *c);

#endif
