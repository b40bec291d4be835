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
//                  softmax (renormalised); p = t (monotonic) or p = (S - 1) * sigmoid(v^T tanh(W_p q))
//                  (predictive, gradient flows through p); details below
//   none           alpha_i = 1/S (over unmasked positions): the mean annotation
// alpha = softmax(e) with masked positions at probability 0; context = sum_i alpha_i k_i.
// For multi-head, alpha reported is the mean over heads.
//
// Masks. Two, which combine: a row's length S = lengths[b] (lengths (B), 0 <= S <= L; NULL:
// every row has S = L), for annotations padded to L (a text encoder's states); and a mask
// (B, L) of 1 = keep (NULL: keep all). Positions at or past S, and masked ones, get alpha
// exactly 0 and no gradient (nor do their keys); every kind then computes row b exactly as
// it would on that row alone with L = S: the local window is clipped to [0, S) and its centre
// uses S. Without lengths (NULL) the kernels compute what they did before lengths existed,
// bit for bit (the captioner passes NULL).
//
// Local attention, precisely (Luong et al. 2015 style, with these choices):
//   - centre p: monotonic p = min(t, S - 1) (t >= 0); predictive
//     p = (S - 1) * sigmoid(v_p^T tanh(W_p q)) (Luong's p_t = S sigmoid(...), less one so
//     that p is always a valid position in [0, S - 1]).
//   - window: the integer positions [round(p) - W, round(p) + W] intersected with [0, S)
//     (round = floor(p + 0.5)); positions outside it, and masked ones, get alpha exactly 0.
//   - alpha_i = s_i g_i / sum_j s_j g_j over the window, s = softmax of the scores over the
//     window, g_i = exp(-(i - p)^2 / (2 sigma^2)), sigma = W / 2: the Gaussian is applied to
//     the probabilities and alpha renormalised to sum to 1 (Luong leaves it unnormalised).
//     Computed as softmax_i(e_i - (i - p)^2 / (2 sigma^2)), which is the same and stable.
//   - gradient: flows through p (into W_p, v_p and the query) via the Gaussian; the window
//     membership is treated as fixed (round() has no gradient).
//   - score: additive, dot, scaled-dot or multiplicative; ATTN_NONE (the zero value of the
//     field) means the default, multiplicative. Parameters are those of the score kind plus
//     W_p, v_p for predictive (additive score and W_p share the size A).
// Validity (CHECKed, programming errors): B, L, D, H >= 1; dot / scaled-dot scores need
// H == D; additive, multi-head and predictive need A >= 1; heads >= 1 divides A; window >= 1.
// lengths outside [0, L] are CHECKed too. A row whose unmasked positions are all gone (fully
// masked, length 0, or nothing unmasked inside the window) gets alpha = 0 and context = 0,
// never NaN; its gradients are 0.
// The masked softmax is private to attention.c (seq/softmax.h semantics).
//
// Work that depends on the keys only (W_k k_i, the multi-head projections) is done
// once per sequence by attn_prepare(), not at every decoder step. Projections over B*L or
// B rows use gemm(); the per-step scores and weighted sums are batched GEMV-like loops.
//
// Typical use for a sequence of T decoder steps (sizes from the *_floats functions):
//     attn_prepare(prep, keys, &p, &c, B, L);
//     for t: attn_forward(ctx_t, alpha_t, cache_t, prep, keys, h_t, mask, lengths, &p, &c, t,
//                         B, L);
//     ... backward, t = T-1..0, accumulating into dprep (zeroed once) ...
//     for t: attn_backward(dkeys, dprep, dh_t, &dp, dctx_t, dalpha_t, cache_t, prep, ...);
//     attn_prepare_backward(dkeys, &dp, dprep, keys, &p, &c, B, L);
#ifndef SEQ_ATTENTION_H
#define SEQ_ATTENTION_H

#include <stddef.h>

#include "core/block.h"
#include "core/gemm_packed.h"
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
    AttnKind score;    // local only: the score kind inside the window (ATTN_NONE: multiplicative)
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
    // Optional, additive only (attn_params_layout sets them NULL): W_q packed for the step
    // products (core/gemm_packed.h), by a caller that multiplies the same W_q at many steps
    // and packs it again after every change of it. W_q_t: op = W_q^T (H, A), attn_forward's
    // query projection; W_q_n: op = W_q (A, H), attn_backward's dquery. NULL: gemm() on W_q.
    // The packed kernel sums each element in one FMA chain, so the results differ from
    // gemm()'s in the last bits only.
    const PackedMatrix *W_q_t, *W_q_n;
} AttnParams;

// Registers the kind's parameters in b under "PREFIX.name".
void attn_params_layout(Block *b, AttnParams *p, const AttnConfig *c, const char *prefix);
// Random initialisation (uniform in +-1/sqrt(fan_in)); only after block_alloc.
void attn_params_init(AttnParams *p, const AttnConfig *c, Rng *rng);

// Per-sequence precomputation from keys (B, L, D) into prep (attn_prep_floats floats;
// may be 0 for kinds that need none). prep is per image contiguous: image b's part is the
// floats [b n1, (b + 1) n1) with n1 = attn_prep_floats(c, 1, L), and equals what
// attn_prepare computes for that image alone, so beam search may copy or reorder it by image.
size_t attn_prep_floats(const AttnConfig *c, int B, int L);
void attn_prepare(float *prep, const float *keys, const AttnParams *p, const AttnConfig *c, int B,
                  int L);
// Accumulates dkeys (B, L, D) and dp from dprep (the gradient attn_backward left in dprep).
void attn_prepare_backward(float *dkeys, AttnParams *dp, const float *dprep, const float *keys,
                           const AttnParams *p, const AttnConfig *c, int B, int L);

// Per-step: cache holds what backward needs (attn_step_cache_floats floats).
size_t attn_step_cache_floats(const AttnConfig *c, int B, int L);
// context (B, D), alpha (B, L); keys (B, L, D); query (B, H); mask (B, L) 1 = keep, or NULL;
// lengths (B) each in [0, L], or NULL (all L); t: the decoder step (local-monotonic centres
// its window at min(t, S - 1)).
void attn_forward(float *context, float *alpha, float *cache, const float *prep,
                  const float *keys, const float *query, const unsigned char *mask,
                  const int *lengths, const AttnParams *p, const AttnConfig *c, int t, int B,
                  int L);
// attn_forward for B query rows that share the keys and prep of n_src sources: row b reads
// source src[b]'s (keys (n_src, L, D), prep attn_prep_floats(c, n_src, L) floats; each
// src[b] in [0, n_src)); the rest (cache, query, mask, lengths, the outputs) is per row.
// src NULL is attn_forward (row b reads source b). The same operations on the same floats
// as attn_forward on keys and prep copied per row, without the copies: beam search's
// hypotheses of one sentence read its annotations where they are. Forward only (decoding).
void attn_forward_shared(float *context, float *alpha, float *cache, const float *prep,
                         const float *keys, const int *src, int n_src, const float *query,
                         const unsigned char *mask, const int *lengths, const AttnParams *p,
                         const AttnConfig *c, int t, int B, int L);
// Accumulates dkeys (B, L, D), dprep, dquery (B, H), dp; from dcontext (B, D) and dalpha
// (B, L) or NULL (the doubly stochastic regulariser supplies dalpha). dkeys, dprep, dquery
// and dcontext may be NULL (that gradient is neither taken nor given). cache, prep: as the
// matching attn_forward / attn_prepare left them; mask and lengths: attn_forward's.
void attn_backward(float *dkeys, float *dprep, float *dquery, AttnParams *dp,
                   const float *dcontext, const float *dalpha, const float *cache,
                   const float *prep, const float *keys, const float *query,
                   const unsigned char *mask, const int *lengths, const AttnParams *p,
                   const AttnConfig *c, int t, int B, int L);

// Shared with DRAW's filterbank: out (B, D) = sum_i w (B, L)_i * values (B, L, D)_i (batched
// GEMV), and its backward (accumulates dw (B, L) and dvalues (B, L, D); either may be NULL).
void weighted_sum_forward(float *out, const float *w, const float *values, int B, int L, int D);
void weighted_sum_backward(float *dw, float *dvalues, const float *dout, const float *w,
                           const float *values, int B, int L, int D);

#endif
