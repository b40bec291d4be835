// pooling.h: sequence poolings for the sentence classifier: states (B, T, D) of an encoder
// to one vector (B, D) per sentence.
//
//   keras attention  e_t = tanh(h_t . w + b_t), one bias per time step (b has T entries);
//                    alpha = softmax over t of e; out = sum_t alpha_t h_t. The attention
//                    layer of the Keras sentence demo (REFERENCE.md section 7): w (D, 1) and
//                    b (T, 1) there. The demo does not mask the padding: lengths NULL.
//   mean             out = the mean of h_t over the sentence.
//   last             out = the last state: h_{len-1} for the first D_fwd columns (a forward
//                    LSTM), h_0 for the remaining D - D_fwd (a backward LSTM, whose last
//                    state is at the first word).
// lengths (B) or NULL: with lengths, only t < lengths[b] are pooled (masked: alpha and the
// mean ignore the padding, the last state is at lengths[b] - 1); NULL pools all T steps
// (the last state at T - 1). With lengths, a sentence of length 0 pools to zeros (alpha 0,
// never NaN; its gradients are 0).
// Backward functions accumulate (+=); gradients that are not wanted may be NULL.
#ifndef SEQ_POOLING_H
#define SEQ_POOLING_H

// out (B, D), alpha (B, T), score (B, T): e_t = tanh(h_t . w + b_t) (saved for backward);
// h (B, T, D), w (D), b (T), lengths (B) or NULL.
void pool_keras_attention_forward(float *out, float *alpha, float *score, const float *h,
                                  const float *w, const float *b, const int *lengths, int B,
                                  int T, int D);
// Accumulates dh (B, T, D), dw (D), db (T) from dout (B, D) and dalpha (B, T) or NULL.
void pool_keras_attention_backward(float *dh, float *dw, float *db, const float *dout,
                                   const float *dalpha, const float *alpha, const float *score,
                                   const float *h, const float *w, const int *lengths, int B,
                                   int T, int D);

// out (B, D) = mean of h (B, T, D) over t < lengths[b] (all T when lengths is NULL).
void pool_mean_forward(float *out, const float *h, const int *lengths, int B, int T, int D);
// Accumulates dh (B, T, D) from dout (B, D).
void pool_mean_backward(float *dh, const float *dout, const int *lengths, int B, int T, int D);

// out (B, D): columns [0, D_fwd) from h at t = lengths[b] - 1 (T - 1 when lengths is NULL),
// columns [D_fwd, D) from t = 0. 0 <= D_fwd <= D.
void pool_last_forward(float *out, const float *h, const int *lengths, int B, int T, int D,
                       int D_fwd);
// Accumulates dh (B, T, D) from dout (B, D).
void pool_last_backward(float *dh, const float *dout, const int *lengths, int B, int T, int D,
                        int D_fwd);

#endif
