// attention.h: the attention kernels both models share (REFERENCE.md section 1).
//
// Shapes: batch B, L keys (annotations) of size D, query of size H.
//   additive       e_i = w^T tanh(W_k k_i + W_q q + b)
//   dot            e_i = q . k_i                      (H == D)
//   scaled-dot     e_i = q . k_i / sqrt(D)            (H == D)
//   multiplicative e_i = q^T W k_i                    (Luong "general")
//   multi-head     per head h: scaled-dot of (W_q q)_h and (W_k k_i)_h over head size A/heads,
//                  context_h = sum_i alpha_hi (W_v k_i)_h; context = W_o concat_h(context_h)
//   local-*        the `score` kind (default multiplicative) restricted to the window
//                  [p - W, p + W] and multiplied by exp(-(i - p)^2 / (2 (W/2)^2)) after the
//                  softmax (renormalised); p = t (monotonic) or p = L * sigmoid(v^T tanh(W_p q))
//                  (predictive, gradient flows through p)
//   none           alpha_i = 1/L (over unmasked positions): the mean annotation
// alpha = softmax(e) with masked positions at probability 0; context = sum_i alpha_i k_i.
// For multi-head, alpha reported is the mean over heads.
//
// Work that depends on the keys only (W_k k_i, the multi-head projections) is done
// once per sequence by attn_prepare(), not at every decoder step.
#ifndef SEQ_ATTENTION_H
#define SEQ_ATTENTION_H

#include <stddef.h>

#include "core/block.h"
#include "core/rng.h"

typedef enum {
    ATTN_NONE,
    ATTN_ADDITIVE,
    ATTN_DOT,
    ATTN_SCALED_DOT,
    ATTN_MULTIPLICATIVE,
    ATTN_MULTIHEAD,
    ATTN_LOCAL_MONOTONIC,
    ATTN_LOCAL_PREDICTIVE,
} AttnKind;

typedef struct {
    AttnKind kind;
    int D;             // key / value size
    int H;             // query size
    int A;             // additive hidden size; multi-head model size (divisible by heads)
    int heads;         // multi-head only
    int window;        // local only: half-width W
    AttnKind score;    // local only: the score kind inside the window
} AttnConfig;

// "additive", "dot", "scaled-dot", "multiplicative", "multi-head", "local-monotonic",
// "local-predictive", "none". Returns 0, or -1 for an unknown name.
int attn_kind_parse(const char *name, AttnKind *kind);
const char *attn_kind_name(AttnKind kind);

// Parameter views; those a kind does not use stay NULL.
typedef struct {
    float *W_k, *W_q, *b, *w;   // additive: W_k (A, D), W_q (A, H), b (A), w (A)
    float *W;                   // multiplicative: (H, D)
    float *Wq, *Wk, *Wv, *Wo;   // multi-head: Wq (A, H), Wk (A, D), Wv (A, D), Wo (D, A)
    float *W_p, *v_p;           // local-predictive: W_p (A, H), v_p (A)
} AttnParams;

// Registers the kind's parameters in b under "PREFIX.name".
void attn_params_layout(Block *b, AttnParams *p, const AttnConfig *c, const char *prefix);
// Random initialisation (uniform in +-1/sqrt(fan_in)); only after block_alloc.
void attn_params_init(AttnParams *p, const AttnConfig *c, Rng *rng);

// Per-sequence precomputation from keys (B, L, D) into prep (attn_prep_floats floats;
// may be 0 for kinds that need none).
size_t attn_prep_floats(const AttnConfig *c, int B, int L);
void attn_prepare(float *prep, const float *keys, const AttnParams *p, const AttnConfig *c, int B,
                  int L);
// Accumulates dkeys (B, L, D) and dp from dprep (the gradient attn_backward left in dprep).
void attn_prepare_backward(float *dkeys, AttnParams *dp, const float *dprep, const float *keys,
                           const AttnParams *p, const AttnConfig *c, int B, int L);

// Per-step: cache holds what backward needs (attn_step_cache_floats floats).
size_t attn_step_cache_floats(const AttnConfig *c, int B, int L);
// context (B, D), alpha (B, L); keys (B, L, D); query (B, H); mask (B, L) 1 = keep, or NULL;
// t: the decoder step (local-monotonic centres its window at min(t, L - 1)).
void attn_forward(float *context, float *alpha, float *cache, const float *prep,
                  const float *keys, const float *query, const unsigned char *mask,
                  const AttnParams *p, const AttnConfig *c, int t, int B, int L);
// Accumulates dkeys (B, L, D), dprep, dquery (B, H), dp; from dcontext (B, D) and dalpha
// (B, L) or NULL (the doubly stochastic regulariser supplies dalpha).
void attn_backward(float *dkeys, float *dprep, float *dquery, AttnParams *dp,
                   const float *dcontext, const float *dalpha, const float *cache,
                   const float *prep, const float *keys, const float *query,
                   const unsigned char *mask, const AttnParams *p, const AttnConfig *c, int t,
                   int B, int L);

// Shared with DRAW's filterbank: out (B, D) = sum_i w (B, L)_i * values (B, L, D)_i (batched
// GEMV), and its backward (accumulates dw (B, L) and dvalues (B, L, D); either may be NULL).
void weighted_sum_forward(float *out, const float *w, const float *values, int B, int L, int D);
void weighted_sum_backward(float *dw, float *dvalues, const float *dout, const float *w,
                           const float *values, int B, int L, int D);

#endif
