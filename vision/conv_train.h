// conv_train.h: the backward pass of vision/conv_infer.h's convolution (any kernel size,
// stride and zero padding, with bias), in the same channel-major group layout (C, n, H, W):
// channel c of image b is the plane at (c n + b) H W. It lets a pretrained encoder's last
// stage be fine-tuned (vision/encoder_stage.h): the forward pass stays conv_infer_forward.
//
// With out[oc, b, y, x] = bias[oc] + sum_{c, i, j} weight[oc, c, i, j]
//                                    inp[c, b, y s + i - P, x s + j - P]   (zero outside),
// conv_train_backward ACCUMULATES
//     dweight[oc, c, i, j] += sum_{b, y, x} dout[oc, b, y, x] inp[c, b, y s + i - P, x s + j - P]
//     dbias[oc]            += sum_{b, y, x} dout[oc, b, y, x]
//     dinp[c, b, y s + i - P, x s + j - P] += sum_oc weight[oc, c, i, j] dout[oc, b, y, x]
// (each of dinp, dweight, dbias may be NULL to skip it). One image at a time: its column
// matrix col (C K K, Ho Wo) is built (im2col with stride), dweight += dout_b col^T is one
// GEMM, then col is overwritten by weight^T dout_b (one GEMM) and scattered back into dinp
// (col2im). dout_b is read in place: image b's rows of dout are Ho Wo floats at stride
// n Ho Wo. No allocation inside: col is the caller's, conv_train_col_floats floats.
//
// ReLU's backward on the same layout is core/activations.h's relu_backward (elementwise).
#ifndef VISION_CONV_TRAIN_H
#define VISION_CONV_TRAIN_H

#include <stddef.h>

// Scratch floats of conv_train_backward: one image's column matrix, C K K Ho Wo.
size_t conv_train_col_floats(int C, int H, int W, int K, int stride, int pad);

// Accumulates dinp (C, n, H, W) or NULL, dweight (OC, C, K, K) or NULL, dbias (OC) or NULL;
// dout (OC, n, Ho, Wo), inp (C, n, H, W), weight (OC, C, K, K), col (conv_train_col_floats).
void conv_train_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                         const float *inp, const float *weight, float *col, int n, int C, int H,
                         int W, int OC, int K, int stride, int pad);
// Plain loops (double accumulation for dweight and dbias), the same contract, no scratch.
void conv_train_backward_ref(float *dinp, float *dweight, float *dbias, const float *dout,
                             const float *inp, const float *weight, int n, int C, int H, int W,
                             int OC, int K, int stride, int pad);

// One image's strided column matrix and its transpose-scatter: col (C K K, Ho Wo) from image
// b of inp (C, n, H, W); col2im adds col back into image b of img (the adjoint of im2col).
void conv_train_im2col(float *col, const float *inp, int b, int n, int C, int H, int W, int K,
                       int stride, int pad);
void conv_train_col2im_add(float *img, const float *col, int b, int n, int C, int H, int W,
                           int K, int stride, int pad);

#endif
