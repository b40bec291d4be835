// mha.h: multi-head scaled-dot attention over sequences (Vaswani et al. 2017), as PyTorch's
// nn.MultiheadAttention(d, heads, batch_first=True) computes it, with masks and a cache of
// keys and values for decoding one step at a time.
//
// T queries xq (B, T, d) attend over S keys xkv (B, S, d) (xkv = xq: self-attention):
//     Q = xq Wq^T + bq,  K = xkv Wk^T + bk,  V = xkv Wv^T + bv       (rows of in_proj)
//     per head h (size dh = d / heads, columns [h dh, (h + 1) dh)):
//         P_h = softmax(Q_h K_h^T / sqrt(dh)) over the visible keys,  C_h = P_h V_h
//     out = concat_h(C_h) Wo^T + bo
// Masks. Key j is visible to query i of row b when j < kv_lengths[b] (padding; NULL: all S)
// and, when causal, j <= i. Hidden keys get probability exactly 0 and no gradient, as in
// seq/attention.h (the softmax is seq/softmax.h's over the visible prefix); a query that
// sees no key (length 0) gets P = 0 and out = bo, never NaN (PyTorch gives NaN there).
// Queries at padded positions are computed like any other (as PyTorch does); the caller
// ignores them.
// weights (B, T, S): the mean of P over the heads, PyTorch's average_attn_weights=True; the
// captioner's attention pictures and the translator's alignments read it.
// Dropout of the probabilities (PyTorch's dropout inside nn.MultiheadAttention): drop
// (B, heads, T, S) holds inverted-dropout factors (0 or 1 / (1 - rate), seq/lstm_seq.h
// lstm_dropout_mask), and C_h = (P_h * drop_h) V_h; NULL: none. weights stay the mean of the
// undropped P (PyTorch returns the dropped ones).
//
// Parameters in PyTorch's layout, under PyTorch's names (so a state_dict maps one to one):
//     PREFIX.in_proj_weight (3d, d): rows [Wq; Wk; Wv],  PREFIX.in_proj_bias (3d),
//     PREFIX.out_proj.weight (d, d),                     PREFIX.out_proj.bias (d).
// Products run through core/gemm: the projections over all B T (B S) rows at once, the scores
// and contexts one GEMM per (row, head). mha_forward_ref is the plain loop beside them.
//
// Decoding with the cache. K and V (B, cap, d) hold the projected keys and values of each
// image's positions, per image contiguous (image b's are rows [b cap, (b + 1) cap), so beam
// search may copy or reorder them by image). mha_kv_write projects n new positions into
// [pos, pos + n): at decoder step t, the step's input (n = 1, pos = t); for cross-attention,
// the whole memory once (n = S, pos = 0). mha_step_forward then attends one query per image
// over the cached positions [0, n) (and below kv_lengths); step t over positions 0..t gives
// what the full causal pass gives in row t.
#ifndef SEQ_MHA_H
#define SEQ_MHA_H

#include <stddef.h>

#include "core/block.h"
#include "core/error.h"
#include "core/rng.h"

typedef struct {
    int d;      // model size
    int heads;  // divides d
    // mha_step_forward's weights: 0 (the default) the mean over heads; h >= 1 the
    // probabilities of head h - 1 alone (the captioner's per-head maps). mha_forward's are
    // always the mean.
    int weights_head;
} MhaConfig;

typedef struct {
    float *in_w, *in_b;    // (3d, d), (3d)
    float *out_w, *out_b;  // (d, d), (d)
} MhaParams;

// What one forward keeps for its backward, and the backward's scratch.
typedef struct {
    float *q, *k, *v;         // (B, T, d), (B, S, d), (B, S, d)
    float *probs;             // (B, heads, T, S)
    float *concat;            // (B, T, d)
    float *weights;           // (B, T, S): mean over heads
    float *scores, *dprobs;   // (T, S) scratch (dprobs: also the dropped P_h)
    float *dq, *dk, *dv, *dconcat;  // (B, T, d), (B, S, d), (B, S, d), (B, T, d) scratch
} MhaActs;

// 0 when heads >= 1 divides d >= 1; else -1 with a one-line reason.
int mha_config_check(const MhaConfig *c, Error *err);
// 0 when every tensor of mha_acts_layout for (B, T, S) fits DIMS_MAX floats, else -1 naming it.
int mha_check_sizes(const MhaConfig *c, int B, int T, int S, Error *err);

void mha_params_layout(Block *b, MhaParams *p, const MhaConfig *c, const char *prefix);
// PyTorch's initialisation: in_proj_weight Xavier-uniform, out_proj.weight uniform in
// +-1/sqrt(d), biases 0. Only after block_alloc.
void mha_params_init(MhaParams *p, const MhaConfig *c, Rng *rng);
void mha_acts_layout(Block *a, MhaActs *x, const MhaConfig *c, int B, int T, int S,
                     const char *prefix);

// out (B, T, d); x: the forward's record; xq (B, T, d); xkv (B, S, d) (may be xq);
// kv_lengths (B) each in [0, S], or NULL; drop (B, heads, T, S) or NULL.
void mha_forward(float *out, MhaActs *x, const float *xq, const float *xkv,
                 const int *kv_lengths, int causal, const float *drop, const MhaParams *p,
                 const MhaConfig *c, int B, int T, int S);
// Accumulates dxq (B, T, d), dxkv (B, S, d) (either NULL, or the same pointer for
// self-attention) and dp from dout (B, T, d); the rest as the forward had them.
void mha_backward(float *dxq, float *dxkv, MhaParams *dp, const float *dout, MhaActs *x,
                  const float *xq, const float *xkv, const int *kv_lengths, int causal,
                  const float *drop, const MhaParams *p, const MhaConfig *c, int B, int T,
                  int S);
// Plain loops in double: out (B, T, d) and weights (B, T, S) or NULL, as mha_forward's.
void mha_forward_ref(float *out, float *weights, const float *xq, const float *xkv,
                     const int *kv_lengths, int causal, const MhaParams *p, const MhaConfig *c,
                     int B, int T, int S);

// K, V (B, cap, d): positions [pos, pos + n) of each image from x (B, n, d).
void mha_kv_write(float *K, float *V, const float *x, const MhaParams *p, const MhaConfig *c,
                  int B, int n, int pos, int cap);
size_t mha_step_scratch_floats(const MhaConfig *c, int B, int cap);
// out (B, d) for one query per image xq (B, d) over cached positions [0, n) below
// kv_lengths (B) or NULL; weights (B, cap) or NULL: mean over heads, or one head's
// (c->weights_head) (0 past the visible ones);
// scratch: mha_step_scratch_floats floats.
void mha_step_forward(float *out, float *weights, float *scratch, const float *xq,
                      const float *K, const float *V, int n, const int *kv_lengths,
                      const MhaParams *p, const MhaConfig *c, int B, int cap);

#endif
