// linear.h: fully connected layer, out = inp @ weight^T + bias, via gemm().
#ifndef SEQ_LINEAR_H
#define SEQ_LINEAR_H

// out (B, OC), inp (B, C), weight (OC, C), bias (OC) or NULL.
void linear_forward(float *out, const float *inp, const float *weight, const float *bias, int B,
                    int C, int OC);
// Accumulates: dinp (B, C) or NULL, dweight (OC, C), dbias (OC) or NULL; dout (B, OC).
void linear_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                     const float *inp, const float *weight, int B, int C, int OC);
// Accumulates dbias (OC) += the column sums of dout (B, OC): a bias's gradient.
void linear_bias_backward(float *dbias, const float *dout, int B, int OC);
// Accumulates the weight gradient of a layer applied at steps t0..T-1 of a recurrent sweep:
// dweight (OC, C; row stride ldw) += the sum over t of dout_t^T (OC, B) @ inp_{t - shift}
// (B, C), where step t's rows sit at dout_all + t Bmax OC and inp_all + t Bmax ldin (row
// strides OC and ldin). One GEMM over all (T - t0) B rows when the batch fills its Bmax
// slots, so the steps' rows follow one another; one per step otherwise.
void linear_weight_backward_steps(float *dweight, int ldw, const float *dout_all,
                                  const float *inp_all, int ldin, int t0, int shift, int T,
                                  int B, int Bmax, int OC, int C);
// Plain-loop reference of linear_forward for tests.
void linear_forward_ref(float *out, const float *inp, const float *weight, const float *bias,
                        int B, int C, int OC);

#endif
