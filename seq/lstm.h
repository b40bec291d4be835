// lstm.h: one step of an LSTM cell for a batch; all four gates from one GEMM.
//
//   xh = [x, h_prev]                                   (B, I + H)
//   pre = xh @ W^T + b, W (4H, I + H), rows in gate order i, f, g, o
//   i = sigmoid, f = sigmoid, g = tanh, o = sigmoid of their pre-activations
//   c = f * c_prev + i * g;  h = o * tanh(c)
// Peepholes (optional; Gers & Schmidhuber 2000, in the form of Graves 2013, "Generating
// sequences with recurrent neural networks", eq. 7-11, and of the Blocks LSTM that the
// public Theano DRAW (jbornschein/draw) trains): diagonal weights peep (3H) = [w_i, w_f,
// w_o] from the cell into three gates, pre_i += w_i * c_prev, pre_f += w_f * c_prev,
// pre_o += w_o * c (the new cell). The functions that take `peep` accept NULL (none); the
// others have none.
// The nonlinearities are core/activations.h's vectorised sigmoid_tanh_fast (gates i, f, o:
// absolute error <= 2e-7) and tanh_fast (<= 4e-7), so lstm_forward_ref (double, libm)
// agrees to about 1e-6.
// Unrolling over T steps is the caller's: it keeps one (xh, gates, c, h) per step.
#ifndef SEQ_LSTM_H
#define SEQ_LSTM_H

#include "core/gemm_packed.h"

// Outputs: h, c (B, H); gates (B, 4H) post-activation i, f, g, o (saved for backward);
// xh (B, I + H) the concatenated input (saved for backward).
// Inputs: x (B, I); h_prev, c_prev (B, H) (NULL means zeros); W (4H, I + H); b (4H).
void lstm_forward(float *h, float *c, float *gates, float *xh, const float *x,
                  const float *h_prev, const float *c_prev, const float *W, const float *b, int B,
                  int I, int H);

// lstm_forward on an input the caller has assembled: xh (B, I + H) = [x, h_prev] with
// zeros where there is no h_prev (so a model can write x straight into xh and skip the
// copies). Outputs h, c, gates and inputs c_prev (NULL: zeros), W, b as lstm_forward.
// ldxh: the row stride of xh (>= I + H).
void lstm_forward_xh(float *h, float *c, float *gates, const float *xh, int ldxh,
                     const float *c_prev, const float *W, const float *b, int B, int I, int H);
// lstm_forward_xh with W given packed as op(B) = W^T (K = I + H, N = 4H; packed_pack with
// trans), for a caller that runs many steps with the same weights (core/gemm_packed.h).
// peep (3H) the peepholes, NULL: none.
void lstm_forward_packed(float *h, float *c, float *gates, const float *xh, int ldxh,
                         const float *c_prev, const PackedMatrix *Wt, const float *b,
                         const float *peep, int B, int I, int H);
// lstm_forward_packed with the pre-activations starting from pre0 (B, 4H) instead of the
// bias broadcast: pre = pre0 + xh @ W'^T, where xh (B, I + H) and W' (4H, I + H) are the
// input's and the weights' remaining columns. For a caller that has taken the product of a
// part of the input that is the same at every step once (pre0 = b + x_part W_part^T).
void lstm_forward_packed_from(float *h, float *c, float *gates, const float *pre0,
                              const float *xh, int ldxh, const float *c_prev,
                              const PackedMatrix *Wt, const float *peep, int B, int I, int H);
// lstm_forward_packed at a first step (h_prev and c_prev zero): the gates from xh's first
// I columns alone (gemm_packed_k); the same results as lstm_forward_packed with the h_prev
// columns of xh zero (which the caller keeps for the weight gradient).
void lstm_forward_packed_first(float *h, float *c, float *gates, const float *xh, int ldxh,
                               const PackedMatrix *Wt, const float *b, int B, int I, int H);

// Given dh (B, H) and dc (B, H) (gradient reaching this step's h and c from later;
// dc may be NULL), accumulates dx (B, I) (may be NULL), dh_prev, dc_prev (B, H) (may be
// NULL when h_prev/c_prev were NULL), dW (4H, I + H), db (4H).
// scratch: at least lstm_scratch_floats(B, I, H) floats. On return its first B * 4H
// floats hold this step's pre-activation gate gradients dgates (B, 4H), so a caller that
// unrolls T steps may pass dW = NULL and add dW += dgates^T @ xh for all steps in one
// GEMM afterwards (K = T * B instead of B: far less packing overhead).
void lstm_backward(float *dx, float *dh_prev, float *dc_prev, float *dW, float *db,
                   const float *dh, const float *dc, const float *gates, const float *xh,
                   const float *c_prev, const float *c, const float *W, float *scratch, int B,
                   int I, int H);
int lstm_scratch_floats(int B, int I, int H);
// lstm_backward with W given packed as op(B) = W (K = 4H, N = I + H; packed_pack without
// trans) for the input gradients dxh = dgates W, and no dW (the caller adds dgates^T xh
// over its steps from the scratch's dgates).
void lstm_backward_packed(float *dx, float *dh_prev, float *dc_prev, float *db,
                          const float *dh, const float *dc, const float *gates, const float *xh,
                          const float *c_prev, const float *c, const PackedMatrix *Wn,
                          float *scratch, int B, int I, int H);

// The elementwise half of an LSTM step's backward (gate order i, f, g, o as above), in
// place: gates (B, 4H) holds the post-activation gates on entry and the pre-activation gate
// gradients on return. From dh, dc (B, H); accumulates dc_prev (B, H) and the bias's
// gradient db (4H), the gate gradients' column sums. c_prev and dc_prev are both NULL at
// t = 0, where c_prev = 0; dc may not be NULL (zeros at the last step). With peepholes peep
// (3H) the gradient reaching them is accumulated into dpeep (3H); both NULL without. The
// matrix products are the caller's (dxh = gates @ W, e.g. gemm_packed on W packed without
// trans; dW as one GEMM over all steps, linear_weight_backward_steps): models/draw.c and
// models/glimpse.c.
void lstm_gates_backward(float *gates, float *dc_prev, const float *dh, const float *dc,
                         const float *c_prev, const float *c, const float *peep, float *dpeep,
                         float *db, int B, int H);

// lstm_gates_backward without peepholes for gates i, f, o made by Keras's hard_sigmoid,
// max(0, min(1, 0.2 x + 0.5)), instead of the sigmoid: each such gate's derivative is 0.2
// where its value lies strictly inside (0, 1) (pre-activation inside (-2.5, 2.5)), else 0.
void lstm_gates_backward_hard(float *gates, float *dc_prev, const float *dh, const float *dc,
                              const float *c_prev, const float *c, float *db, int B, int H);

// Plain-loop reference of lstm_forward for tests (double accumulation, no GEMM, no xh).
// Outputs h, c (B, H) and gates (B, 4H) post-activation; same inputs as lstm_forward, and
// the peepholes peep (3H, NULL: none).
void lstm_forward_ref(float *h, float *c, float *gates, const float *x, const float *h_prev,
                      const float *c_prev, const float *W, const float *b, const float *peep,
                      int B, int I, int H);

#endif
