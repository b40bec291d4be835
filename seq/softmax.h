// softmax.h: row softmax with an optional mask.
#ifndef SEQ_SOFTMAX_H
#define SEQ_SOFTMAX_H

// out (N, L) = softmax of each row of x (N, L); mask (N, L) with 1 = keep, 0 = masked
// (masked entries get probability exactly 0), or NULL. A row with every entry masked
// is all zeros.
void softmax_forward(float *out, const float *x, const unsigned char *mask, int N, int L);
// dx (N, L) += out * (dout - sum_j dout_j out_j)
void softmax_backward(float *dx, const float *dout, const float *out, int N, int L);

#endif
