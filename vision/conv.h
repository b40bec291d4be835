// conv.h: 2-D convolution (stride 1, zero padding) and 2x2 max-pooling, NCHW,
// forward and backward, each with a plain-loop reference for the tests.
//
// conv2d: out[b, o, y, x] = bias[o] + sum_{c, i, j} weight[o, c, i, j] *
//         inp[b, c, y + i - P, x + j - P]   (zero outside the input)
// The fast version unrolls each image into a column matrix (im2col, (C*K*K, Ho*Wo))
// and calls gemm (core/gemm.h); col is caller-provided scratch of
// conv2d_col_size(...) floats (no allocation inside). Output size Ho = H + 2P - K + 1.
// im2col copies each shifted row with a branch-free loop, and a "same" convolution
// (Ho = H, Wo = W) each shifted plane with one memcpy plus a zeroed edge column. The
// batched im2col / col2im let a caller put several images into one GEMM (vision/cnn.c
// builds its encoder from them, with bias, ReLU and pooling fused).
// Backward ACCUMULATES into dinp, dweight, dbias (each may be NULL to skip).
//
// maxpool2: 2x2 windows, stride 2, out (B, C, H/2, W/2) (floor: an odd last row or
// column is ignored); argmax keeps, per output, the index y*W + x of the winner in its
// input plane (first maximum in row-major order wins ties); backward routes dout there.
#ifndef VISION_CONV_H
#define VISION_CONV_H

#include <stddef.h>

static inline int conv2d_out_size(int n, int K, int P) { return n + 2 * P - K + 1; }
// Scratch floats needed by conv2d_forward / conv2d_backward (one image at a time:
// the column matrix and, for backward, its gradient).
size_t conv2d_col_size(int C, int H, int W, int K, int P);

// out (B, OC, Ho, Wo), inp (B, C, H, W), weight (OC, C, K, K), bias (OC) or NULL,
// col scratch (conv2d_col_size floats)
void conv2d_forward(float *out, const float *inp, const float *weight, const float *bias,
                    float *col, int B, int C, int H, int W, int OC, int K, int P);
// accumulates: dinp (B, C, H, W) or NULL, dweight (OC, C, K, K) or NULL, dbias (OC) or NULL;
// dout (B, OC, Ho, Wo), inp (B, C, H, W), weight (OC, C, K, K), col scratch as forward
void conv2d_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                     const float *inp, const float *weight, float *col, int B, int C, int H,
                     int W, int OC, int K, int P);

// Plain loops, same contracts (no scratch).
void conv2d_forward_ref(float *out, const float *inp, const float *weight, const float *bias,
                        int B, int C, int H, int W, int OC, int K, int P);
void conv2d_backward_ref(float *dinp, float *dweight, float *dbias, const float *dout,
                         const float *inp, const float *weight, int B, int C, int H, int W,
                         int OC, int K, int P);

// im2col for one image: col (C*K*K, Ho*Wo) from img (C, H, W); col2im accumulates back.
void im2col(float *col, const float *img, int C, int H, int W, int K, int P);
void col2im_add(float *img, const float *col, int C, int H, int W, int K, int P);
// The same over n images side by side, so one GEMM covers them all: col (C*K*K, n*Ho*Wo),
// image b's Ho*Wo columns at offset b*Ho*Wo of every row; imgs (n, C, H, W). For
// n = 1 these are im2col and col2im_add. col2im_batch_add accumulates into imgs.
void im2col_batch(float *col, const float *imgs, int n, int C, int H, int W, int K, int P);
void col2im_batch_add(float *imgs, const float *col, int n, int C, int H, int W, int K, int P);
// Plain loops (a bounds test per element), same contracts as im2col and col2im_add.
void im2col_ref(float *col, const float *img, int C, int H, int W, int K, int P);
void col2im_add_ref(float *img, const float *col, int C, int H, int W, int K, int P);

// out (B, C, H/2, W/2), argmax (B, C, H/2, W/2), inp (B, C, H, W)
void maxpool2_forward(float *out, int *argmax, const float *inp, int B, int C, int H, int W);
// accumulates: dinp (B, C, H, W); dout, argmax (B, C, H/2, W/2)
void maxpool2_backward(float *dinp, const float *dout, const int *argmax, int B, int C, int H,
                       int W);

#endif
