// sat_lstm.h: the captioner's attention LSTM decoder, Show, Attend and Tell's (Xu et al.
// 2015), one of the two behind models/sat.h's interface (sat_lstm_ops; cfg.decoder =
// SAT_DECODER_LSTM, the default): the encoder (a CNN, or a feature cache's annotations), the
// shared decoder's parameters, initial state, gate and steps (models/decoder.h;
// SatLstmParams.dec) and the training loss (teacher forcing, doubly stochastic regulariser,
// hard attention by REINFORCE), forward and backward. Its decoding, greedy or by beam search:
// models/sat_lstm_decode.h.
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
//
// Memory: parameters, gradients and the two Adam moments are four Blocks with one layout
// (sat_lstm_params_layout); activations one Block sized for (max_len + 1, batch)
// (sat_lstm_acts_layout), so the training step does no allocation.
#ifndef MODELS_SAT_LSTM_H
#define MODELS_SAT_LSTM_H

#include <stddef.h>

#include "core/block.h"
#include "core/error.h"
#include "core/gemm_packed.h"
#include "models/decoder.h"
#include "models/sat.h"
#include "models/sat_config.h"
#include "vision/cnn.h"

// The encoder's parameters (none with features) and the shared decoder's (models/decoder.h),
// in that order in one Block.
typedef struct {
    CnnParams cnn;
    DecoderParams dec;
} SatLstmParams;

// The decoder's state (SatModel.dec). The activations are the shared decoder's (DecoderActs,
// models/decoder.h), with the annotations the CNN writes (or the features) in a.annot.
typedef struct {
    SatLstmParams p, g, m, v;  // params, grads, Adam moments (views into the Blocks below)
    Block params, grads, adam_m, adam_v;
    Block acts_block;
    DecoderActs a;
    CnnWorkspace cnn_ws;
    int Tb;                // steps of the last forward batch
    const float *images;   // the last forward's images (kept alive by the caller until backward)
    int replica;           // 1: parameters borrowed from another model (not freed here)
    // The LSTM weights packed for the step products (core/gemm_packed.h): W^T for the
    // forward's gates, W for the backward's input gradients. pack_Wt and pack_Wn point to
    // packs of the current parameters only during a training step (models/sat_parallel.h:
    // this model's own, or the parallel step's, packed once for all workers); otherwise NULL,
    // and the forward and backward multiply by lstm_W itself. own_Wt, own_Wn: this model's
    // packs (allocated on first use, 2 x the size of lstm_W).
    // With an additive score the attention's W_q likewise (own_Wq_t: W_q^T for the query
    // projection, own_Wq_n: W_q for its backward), lent through p.dec.attn.W_q_t and W_q_n
    // (seq/attention.h) for the same span.
    const PackedMatrix *pack_Wt, *pack_Wn;
    PackedMatrix own_Wt, own_Wn, own_Wq_t, own_Wq_n;
    int own_packs;
} SatLstm;

// The LSTM decoder's operations (models/sat.h SatDecoderOps).
extern const SatDecoderOps sat_lstm_ops;

// The LSTM state of a model whose decoder it is (CHECKs so): for tests and benchmarks that
// read its parameters and activations.
SatLstm *sat_lstm(const SatModel *m);

// The row of step t, batch row b in the per-step activations of the last forward (alpha,
// ctx, z, beta, sample, the logits, ...; h_{t+1} is row B + this of hs), or -1 when step t
// did not compute row b (past its caption's end and every later row's).
static inline int sat_lstm_step_row(const SatLstm *l, int t, int b) {
    if (t < 0 || t >= l->Tb || b < 0 || b >= l->a.active[t]) return -1;
    return l->a.off[t] + b;
}

// sat_check_sizes of an LSTM configuration (models/sat.h).
int sat_lstm_check_sizes(const SatConfig *c, int B, Error *err);
// Registers the parameter tensors in b (empty; not allocated): the one layout of the
// parameters, gradients and Adam moments, which tests read as sat_lstm_acts_layout's.
void sat_lstm_params_layout(Block *b, SatLstmParams *p, const SatConfig *c);
// Registers the activation tensors for batches of up to B in k (empty; not allocated) and
// sets a->T, a->B: the layout of the activations, which tests read to check
// sat_lstm_check_sizes.
void sat_lstm_acts_layout(Block *k, DecoderActs *a, const SatConfig *c, int B);

#endif
