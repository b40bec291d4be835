// transformer_decode.h: incremental decoding with a Transformer decoder stack
// (seq/transformer.h), one position per image per call, for greedy and beam search.
//
// Every layer keeps its self-attention's projected keys and values of the positions decoded so
// far (B, cap, d), and the memory's projected once by tf_decode_start (B, S, d). Step t takes
// the inputs of position t (B, d) (the embedded previous token plus its position), writes its
// keys and values at t, attends over positions 0..t (seq/mha.h mha_step_forward) and over the
// memory below mem_lengths, and returns what tf_decoder_forward returns in row t of a causal
// pass over positions 0..T-1 (tests/test_transformer_decode.c). No dropout (evaluation).
// Every cache is per image contiguous (image b's rows [b cap, (b + 1) cap)), so beam search
// may copy or reorder them by image.
// cross_weights[l] (B, S): layer l's cross-attention weights (mean over heads) of the last
// step, for attention pictures and alignments.
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
    int B, cap, S;
} TfDecodeState;

// Registers the state for B images, up to cap positions, a memory of S, in a.
void tf_decode_layout(Block *a, TfDecodeState *s, const TransformerConfig *c, int B, int cap,
                      int S, const char *prefix);
// Projects the memory (B, S, d) into every layer's cross-attention keys and values.
void tf_decode_start(TfDecodeState *s, const float *mem, const TfDecoderParams *p,
                     const TransformerConfig *c);
// out (B, d): the stack's output at position t (0 <= t < cap; steps 0..t-1 done before) from
// its inputs x_t (B, d); mem_lengths (B) in [0, S] or NULL.
void tf_decode_step(float *out, TfDecodeState *s, const float *x_t, int t, const int *mem_lengths,
                    const TfDecoderParams *p, const TransformerConfig *c);

#endif
