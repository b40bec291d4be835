// lstm_seq.h: an LSTM unrolled over a whole sequence, one direction, with variational
// dropout and sentence lengths: the encoder of the sentence classifier (run it twice, once
// with reverse, for a bidirectional LSTM). Steps are seq/lstm.h's cell (gate order i, f, g,
// o; W (4H, I + H), b (4H)).
//
// Variational dropout (Gal & Ghahramani 2016), as Keras's LSTM(dropout, recurrent_dropout)
// applies it: ONE mask per sequence, the same at every step. in_mask (B, I) multiplies the
// input x_t and rec_mask (B, H) multiplies h_{t-1} where it enters the gates; the state
// carried to the next step and the cell are not dropped. Masks hold 0 or 1 / (1 - rate)
// (lstm_dropout_mask), or are NULL (no dropout: evaluation). lstm_seq_forward uses one input
// mask and one recurrent mask for all four gates (Keras 2.3's implementation 2).
// lstm_seq_forward_gated draws on one mask per gate, as Keras's implementation 1 does: the
// default of Keras <= 2.2, and what tf.keras 2 switches to whenever recurrent_dropout > 0
// ("RNN `implementation=2` is not supported when `recurrent_dropout` is set"): gate q's
// pre-activation is W_q [x_t * m_q, h_{t-1} * r_q] + b_q with in_mask (B, 4, I) and
// rec_mask (B, 4, H) (gate order i, f, g, o): four GEMMs of (B, I + H) x (I + H, H) a step
// forward; backward splits each gate's products into input and recurrent parts small enough
// for OpenBLAS's unpacked kernel (seq/lstm_seq.c says what was measured, and what did not
// pay: the input products of all steps in one GEMM before the recurrence).
//
// lengths (B) or NULL: with lengths, steps t >= lengths[b] of row b are padding and leave
// its state unchanged (h_t = h_{t-1}, c_t = c_{t-1}; reverse: the state stays zero until
// t = lengths[b] - 1), so a forward direction's last state is hs at lengths[b] - 1 and a
// reverse direction's is hs at 0. NULL runs every step on every row (Keras without
// mask_zero: the padding's embedding goes through the LSTM, as in the attention demo).
//
// Layout: x (T, B, I), hs (T, B, H) in time order whatever the direction. cache
// (lstm_seq_cache_floats) keeps xh (T, B, I + H), gates (T, B, 4H) and c (T, B, H).
#ifndef SEQ_LSTM_SEQ_H
#define SEQ_LSTM_SEQ_H

#include <stddef.h>

#include "core/rng.h"

size_t lstm_seq_cache_floats(int T, int B, int I, int H);
size_t lstm_seq_scratch_floats(int B, int I, int H);

// mask (n): each entry 0 with probability rate, else 1 / (1 - rate). 0 <= rate < 1.
void lstm_dropout_mask(float *mask, size_t n, float rate, Rng *rng);

// hs (T, B, H); cache; x (T, B, I); W (4H, I + H); b (4H); lengths (B) or NULL; in_mask
// (B, I) or NULL; rec_mask (B, H) or NULL; reverse: run t = T - 1 .. 0.
void lstm_seq_forward(float *hs, float *cache, const float *x, const float *W, const float *b,
                      const int *lengths, const float *in_mask, const float *rec_mask,
                      int reverse, int T, int B, int I, int H);
// Accumulates dx (T, B, I) (may be NULL), dW (4H, I + H), db (4H) from dhs (T, B, H), the
// gradient reaching every step's h. scratch: lstm_seq_scratch_floats floats.
void lstm_seq_backward(float *dx, float *dW, float *db, const float *dhs, const float *cache,
                       const float *W, const int *lengths, const float *in_mask,
                       const float *rec_mask, int reverse, float *scratch, int T, int B, int I,
                       int H);

// The same with one mask per gate: in_mask (B, 4, I) or NULL, rec_mask (B, 4, H) or NULL;
// cache lstm_seq_gated_cache_floats (each gate's inputs xh (4, T, B, I + H) = [x_t * m_q,
// h_{t-1} * r_q], gates, c), scratch lstm_seq_gated_scratch_floats. The backward consumes
// the cache: it turns the saved gates into the gate gradients of every step, in place (so
// that each gate's weight gradient is one GEMM over all steps); run the forward again
// before another backward. With all four masks of a row equal, the results are
// lstm_seq_forward's up to rounding. The plain-loop reference it is tested against is
// tests/test_lstm_seq.c's (seq/lstm.h's double cell once per gate), with gradient checks of
// every mask combination.
// act: the gates i, f, o's activation, LSTM_GATE_SIGMOID (what lstm_seq_forward uses) or
// LSTM_GATE_HARD_SIGMOID, max(0, min(1, 0.2 x + 0.5)): standalone Keras <= 2.2's default
// recurrent_activation (keras/layers/recurrent.py, keras/backend's hard_sigmoid), the
// Keras of the attention demo; tf.keras and Keras >= 2.3 use the sigmoid.
typedef enum { LSTM_GATE_SIGMOID = 0, LSTM_GATE_HARD_SIGMOID = 1 } LstmGateAct;
// "sigmoid", "hard_sigmoid"; parse returns 0 or -1.
const char *lstm_gate_act_name(LstmGateAct a);
int lstm_gate_act_parse(const char *name, LstmGateAct *a);
size_t lstm_seq_gated_cache_floats(int T, int B, int I, int H);
size_t lstm_seq_gated_scratch_floats(int T, int B, int I, int H);
void lstm_seq_forward_gated(float *hs, float *cache, const float *x, const float *W,
                            const float *b, const int *lengths, const float *in_mask,
                            const float *rec_mask, int reverse, LstmGateAct act, int T, int B,
                            int I, int H);
void lstm_seq_backward_gated(float *dx, float *dW, float *db, const float *dhs,
                             float *cache, const float *W, const int *lengths,
                             const float *in_mask, const float *rec_mask, int reverse,
                             LstmGateAct act, float *scratch, int T, int B, int I, int H);

#endif
