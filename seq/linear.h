// linear.h: fully connected layer, out = inp @ weight^T + bias, via gemm().
#ifndef SEQ_LINEAR_H
#define SEQ_LINEAR_H

// out (B, OC), inp (B, C), weight (OC, C), bias (OC) or NULL.
void linear_forward(float *out, const float *inp, const float *weight, const float *bias, int B,
                    int C, int OC);
// Accumulates: dinp (B, C) or NULL, dweight (OC, C), dbias (OC) or NULL; dout (B, OC).
void linear_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                     const float *inp, const float *weight, int B, int C, int OC);
// Plain-loop reference of linear_forward for tests.
void linear_forward_ref(float *out, const float *inp, const float *weight, const float *bias,
                        int B, int C, int OC);

#endif
