// layernorm.h: layer normalisation over the last dimension (Ba et al. 2016), as PyTorch's
// nn.LayerNorm(C, eps) computes it:
//     out[n, i] = (x[n, i] - mean_n) * rstd_n * weight[i] + bias[i],
//     mean_n = sum_i x[n, i] / C,  rstd_n = 1 / sqrt(sum_i (x[n, i] - mean_n)^2 / C + eps)
// (the biased variance). Rows are N independent vectors of C floats (B T rows of a
// Transformer's (B, T, d) states). The sums run in double. mean and rstd (N) are what the
// backward pass needs.
#ifndef SEQ_LAYERNORM_H
#define SEQ_LAYERNORM_H

// PyTorch's default eps.
#define LAYERNORM_EPS 1e-5f

// out (N, C), mean (N), rstd (N); inp (N, C); weight (C), bias (C). out may not alias inp.
void layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                       const float *weight, const float *bias, float eps, int N, int C);
// Accumulates dinp (N, C), dweight (C), dbias (C) from dout (N, C); inp, mean, rstd as the
// forward left them.
void layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                        const float *inp, const float *mean, const float *rstd,
                        const float *weight, int N, int C);

// Plain loops (one running double sum per row, the backward's terms in double) beside the
// two above, which run their sums in lanes (tests/test_layernorm.c compares them).
void layernorm_forward_ref(float *out, float *mean, float *rstd, const float *inp,
                           const float *weight, const float *bias, float eps, int N, int C);
void layernorm_backward_ref(float *dinp, float *dweight, float *dbias, const float *dout,
                            const float *inp, const float *mean, const float *rstd,
                            const float *weight, int N, int C);

#endif
