// sat.h: Show, Attend and Tell (Xu et al. 2015): a CNN encoder, an attention LSTM
// decoder and its training loss (teacher forcing, doubly stochastic regulariser, hard
// attention by REINFORCE), forward and backward, on the shared decoder's parameters,
// initial state and gate (models/decoder.h; SatParams.dec). Beside it: its configuration
// (models/sat_config.h), the training step over sorted rows and threads
// (models/sat_parallel.h) and decoding, greedy or by beam search (models/sat_decode.h).
//
// Model (REFERENCE.md section 2), for a batch of B images and captions of n words:
//   a = cnn(image)                                  annotations (B, L, D)
//   h_0 = tanh(W_h0 mean(a) + b), c_0 = tanh(W_c0 mean(a) + b)
//   step t = 0..n (input y_t = <start>, w_1..w_n; target w_1..w_n, <end>):
//     alpha_t, ctx_t = attention(query h_t, keys a)       (seq/attention.h; any kind)
//     soft:  z_t = beta_t * ctx_t;   hard: s_t ~ alpha_t, z_t = beta_t * a_{s_t}
//     beta_t = sigmoid(W_beta h_t + b_beta)           scalar (1) or vector (D) gate
//     h_{t+1}, c_{t+1} = LSTM([E y_t, z_t], h_t, c_t)
//     logits_t = L_o (E y_t + L_h drop(h_{t+1}) + L_z z_t) + b_o    (deep output)
// With query = SAT_QUERY_CURRENT (the order of Lu et al. 2017, "Knowing When to Look",
// with the previous context fed back as in Luong et al. 2015) the step reads its word
// first and attends with the new state, so the attention knows the word it follows:
//     h_{t+1}, c_{t+1} = LSTM([E y_t, z_{t-1}], h_t, c_t)     (z_{-1} = 0)
//     alpha_t, ctx_t = attention(query h_{t+1}, keys a); beta_t from h_{t+1}
//     logits_t as above.
// That order is the default (sat_config_default). Under Xu et al.'s, a noun's attention
// is chosen before the step reads the word in front of it, and the scenes' captions name
// each object by colour then class in either order, so that attention cannot know which
// object its noun is: it stayed at about 0.5 grounding where the current order reaches
// 0.8 (experiments/results/sat_scenes.md).
//   loss = (1/B) [ sum_t CE(logits_t, target_t) + lambda sum_b sum_i (1 - sum_t alpha_bti)^2 ]
//   hard attention adds (1/B) sum_b [-(R_b - baseline) sum_t log alpha_{t,b,s_t}]
//   - entropy_weight (1/B) sum_{b,t} H(alpha_bt), R_b = sum_t log p(target) (the
//   log-likelihood reward), baseline a moving average of mean R (decay baseline_decay),
//   started at the first batch's mean R (arctic-captions' capgen.py starts it at 0; the
//   first batch's mean spares the first steps an advantage of the whole reward).
// Sums over t run over each caption's own steps (n_b + 1), never the padding.
//
// Memory: parameters, gradients and the two Adam moments are four Blocks with one
// layout; activations one Block sized for (max_len + 1, batch) (sat_alloc_acts), so
// the training step does no allocation. Decoding (sat_decode) uses its own workspace,
// allocated once per call for (B images x beam rows).
// Limits: captions of at most max_len words; images square (3, S, S); B <= acts batch.
#ifndef MODELS_SAT_H
#define MODELS_SAT_H

#include <stddef.h>
#include <stdint.h>

#include "core/block.h"
#include "core/error.h"
#include "core/gemm_packed.h"
#include "core/rng.h"
#include "models/decoder.h"
#include "models/sat_config.h"
#include "models/sat_transformer.h"
#include "seq/attention.h"
#include "vision/cnn.h"

// The encoder's parameters (none with features) and the shared decoder's (models/decoder.h),
// in that order in one Block.
typedef struct {
    CnnParams cnn;
    DecoderParams dec;
} SatParams;

// The activations are the shared decoder's (DecoderActs, models/decoder.h), with the
// annotations the CNN writes (or the features) in a.annot.

typedef struct {
    SatConfig cfg;
    SatParams p, g, m, v;  // params, grads, Adam moments (views into the Blocks below)
    Block params, grads, adam_m, adam_v;
    Block acts_block;
    DecoderActs a;
    CnnWorkspace cnn_ws;
    float baseline;        // hard attention's moving-average reward
    int baseline_set;
    int Tb;                // steps of the last forward batch
    int Bb;                // batch of the last forward
    double sample_logp;    // hard: the last training forward's sum over rows and steps of the
                           // sampled locations' log alpha (0 otherwise)
    const float *images;   // the last forward's images (kept alive by the caller until backward)
    int replica;           // 1: parameters borrowed from another model (not freed here)
    // sat_forward_backward's copy of its batch in descending order of caption length:
    // images (cap, per) (NULL with features: they go into a.annot), words (cap, max_len),
    // lens, and each row's place in the caller's batch (cap); grown as needed, freed by
    // sat_free.
    float *sorted_images;
    int *sorted_ints;
    int sorted_cap;
    const int *row_ids;    // non-NULL during sat_forward_backward: row b's noise stream is
                           // image row_ids[b]'s (else first + b)
    // The LSTM weights packed for the step products (core/gemm_packed.h): W^T for the
    // forward's gates, W for the backward's input gradients. pack_Wt and pack_Wn point to
    // packs of the current parameters only during sat_forward_backward (its own, or the
    // parallel step's, packed once for all workers); otherwise NULL, and sat_forward and
    // sat_backward multiply by lstm_W itself. own_Wt, own_Wn: this model's packs
    // (allocated on first use, 2 x the size of lstm_W).
    // With an additive score the attention's W_q likewise (own_Wq_t: W_q^T for the query
    // projection, own_Wq_n: W_q for its backward), lent through p.attn.W_q_t and W_q_n
    // (seq/attention.h) for the same span.
    const PackedMatrix *pack_Wt, *pack_Wn;
    PackedMatrix own_Wt, own_Wn, own_Wq_t, own_Wq_n;
    int own_packs;
    int annot_grad;        // with features: 1 makes sat_backward also leave d loss / d annotations
                           // (B, L, D) in a.dannot (fine-tuning an encoder stage,
                           // vision/encoder_stage.h); 0 (default): annotations are data
    // cfg.decoder = SAT_DECODER_TRANSFORMER: the model is this one (models/sat_transformer.h),
    // and params, grads, adam_m and adam_v are copies of its Blocks' descriptors (the same
    // data, freed through it), so that optimiser, checkpoints and weight average see one kind
    // of model. sat_init, sat_alloc_acts, sat_free, sat_check_sizes, sat_decode (and
    // sat_check_decode_sizes) and the training steps of models/sat_parallel.h hand it the
    // call, and so do sat_forward and sat_backward (fine-tuning's step); p, g, a (but a.B, the
    // activations' batch) and the LSTM's fields stay unused (Bb is set); a replica
    // (sat_replica_init) holds a replica of it.
    SatTfModel *tf;
} SatModel;

// The row of step t, batch row b in the per-step activations of the last forward (alpha,
// ctx, z, beta, sample, the logits, ...; h_{t+1} is row B + this of hs), or -1 when step t
// did not compute row b (past its caption's end and every later row's).
static inline int sat_step_row(const SatModel *m, int t, int b) {
    if (t < 0 || t >= m->Tb || b < 0 || b >= m->a.active[t]) return -1;
    return m->a.off[t] + b;
}

// Registers and allocates parameters, gradients and Adam moments; initialises with rng. With
// cfg->decoder = SAT_DECODER_TRANSFORMER, the Transformer captioner (see SatModel.tf).
void sat_init(SatModel *m, const SatConfig *cfg, Rng *rng);
// A replica for data parallelism: shares m's parameters (r->p points into m->params),
// owns its gradients and activations (call sat_alloc_acts on it); no Adam moments.
// Free with sat_free (which leaves the shared parameters alone).
void sat_replica_init(SatModel *r, const SatModel *m);
// 0 when batches of up to B fit what the kernels index: every parameter and activation
// tensor holds at most DIMS_MAX floats (core/dims.h), and so does each buffer of the CNN's
// workspace (cnn_check_sizes); else -1 with one line naming the flags whose product passes
// (e.g. --batch x annotation positions x --attn-dim). Call before sat_init and
// sat_alloc_acts: both CHECK nothing of this and would index past 2^31.
int sat_check_sizes(const SatConfig *c, int B, Error *err);
// Registers the parameter tensors in b (empty; not allocated): the one layout of the
// parameters, gradients and Adam moments (sat_init), which tests read as sat_acts_layout's.
void sat_params_layout(Block *b, SatParams *p, const SatConfig *c);
// Registers the activation tensors for batches of up to B in k (empty; not allocated) and
// sets a->T, a->B: sat_alloc_acts's layout, which tests read to check sat_check_sizes.
void sat_acts_layout(Block *k, DecoderActs *a, const SatConfig *c, int B);
// Activations for batches of up to B (call once before sat_forward).
void sat_alloc_acts(SatModel *m, int B);
void sat_free(SatModel *m);

typedef struct {
    double loss;       // the objective (per image), everything included
    double ce;         // summed cross-entropy / B
    double tokens;     // number of target tokens
    double ds;         // doubly stochastic term / B (lambda included)
    double reward;     // hard: mean log-likelihood reward
} SatLoss;

// Teacher-forced forward. images (B, 3, S, S), or with features annotations (B, L, D); words (B, max_len) word ids (no <start>
// or <end>), lens (B) in [0, max_len]. train = 1 enables dropout and hard sampling;
// train = 0 uses the expected context for hard attention (seed and first unused).
// Row b is image first + b of a larger batch (0 when this call has the whole batch): its
// dropout masks, then its hard-attention samples, come from one stream of its own seeded
// with rng_mix(seed, first + b), whatever the split of the batch into calls (workers,
// ranks) and the batch's longest caption. Keeps every activation for sat_backward.
void sat_forward(SatModel *m, SatLoss *out, const float *images, const int *words,
                 const int *lens, int B, int train, uint64_t seed, int first);
// Accumulates the gradient of out->loss into m->g (and updates the hard baseline). The
// images given to sat_forward must still be valid.
void sat_backward(SatModel *m);
// d loss / d annotations (B, L, D) of the last sat_backward (the CNN's input gradient, or with
// features and annot_grad the annotations'), whichever decoder.
const float *sat_annotation_grads(const SatModel *m);
// sat_backward's two halves, for a step that overlaps the encoder's with other work
// (models/sat_parallel.h): the decoder's, after which every parameter's gradient but the
// CNN's is complete (and the hard baseline updated), then the CNN's from the annotations'
// gradient (nothing with features).
void sat_backward_decoder(SatModel *m);
void sat_backward_encoder(SatModel *m);

#endif

