// conv_infer.h: the layers of the pretrained encoders (vision/encoder.h) at inference:
// convolution of any kernel size, stride and zero padding with its bias, an optional
// residual and ReLU in one call, and max pooling (3x3 stride 2 pad 1, 2x2 stride 2). No
// backward: the encoders are frozen. Each fast kernel has a plain-loop reference beside it
// (the tests compare them on every path).
//
// Layout: a group of n images is stored channel-major, (C, n, H, W): channel c of image b is
// the plane at (c n + b) H W. A convolution of the whole group is then one GEMM,
//     out (OC, n Ho Wo) = weight (OC, C K K) @ col (C K K, n Ho Wo)
// whose output is already the next layer's (OC, n, Ho, Wo) input, and a 1x1 stride-1
// convolution needs no copy at all (col is the input itself). Strided 1x1 convolutions
// (ResNet's downsampling) gather every stride-th pixel, a quarter of the input, not a
// K*K-fold im2col.
//
// conv_infer_forward:
//     out[oc, b, y, x] = act(bias[oc] + residual[oc, b, y, x] +
//         sum_{c, i, j} weight[oc, c, i, j] inp[c, b, y s + i - P, x s + j - P])
// (zero outside the input), act = ReLU or identity, Ho = (H + 2P - K) / s + 1 (floor).
// Methods (ConvInferMethod):
//   - im2col: the column matrix is built for a chunk of whole output rows at a time (at most
//     CONV_INFER_CHUNK_FLOATS floats, or one row), multiplied (core/gemm.h), and bias,
//     residual and ReLU are applied to that chunk of the output while it is in cache;
//   - Winograd F(2x2, 3x3) (vision/winograd.h) for 3x3, stride 1, pad 1, any H and W (W <=
//     2048): the input transform of a band of tile rows of every image, 16 GEMMs, and the
//     output transform fused with bias, residual and ReLU; U (16, OC, C) is the filter
//     transform of weight (winograd_filter_transform), made once when the weights load. An
//     odd side is covered by ceil(side / 2) tiles, the last one hanging over the edge (its
//     input reads zeros there, its outputs there are dropped): on ResNet's 7 x 7 layer4,
//     16 tiles of 4 outputs for 49, 256 multiplies per channel pair against im2col's 441.
// When residual == out, out holds the residual on entry and the GEMM accumulates into it
// (beta = 1: a downsampling branch computed into out first costs no extra pass).
// No allocation inside: the caller's scratch sets the chunk (or band) size: as many output
// rows (rows of tiles) as it holds; conv_infer_scratch_floats is the size used by default
// (chunks of about CONV_INFER_CHUNK_FLOATS, bands of about 16 MiB), at least
// conv_infer_min_scratch_floats (one row) is needed.
#ifndef VISION_CONV_INFER_H
#define VISION_CONV_INFER_H

#include <stddef.h>

typedef enum { CONV_INFER_IM2COL, CONV_INFER_WINOGRAD } ConvInferMethod;

// Floats of the default im2col chunk: 4 MiB, so a chunk and its slice of the output stay in
// the last-level cache.
#define CONV_INFER_CHUNK_FLOATS ((size_t)1 << 20)

static inline int conv_infer_out_size(int n, int K, int stride, int pad) {
    return (n + 2 * pad - K) / stride + 1;
}
// Whether Winograd F(2x2, 3x3) can run this shape (3x3, stride 1, pad 1, W <= 2048).
int conv_infer_winograd_fits(int H, int W, int K, int stride, int pad);
// Scratch floats for conv_infer_forward on this shape and method (0 for 1x1 stride-1
// im2col, which reads its input in place).
size_t conv_infer_scratch_floats(int n, int C, int H, int W, int OC, int K, int stride, int pad,
                                 ConvInferMethod method);
size_t conv_infer_min_scratch_floats(int n, int C, int H, int W, int OC, int K, int stride,
                                     int pad, ConvInferMethod method);

// out (OC, n, Ho, Wo); inp (C, n, H, W); weight (OC, C, K, K); wino_u (16, OC, C) for
// CONV_INFER_WINOGRAD (else unused, may be NULL); bias (OC) or NULL; residual (OC, n, Ho,
// Wo), out itself, or NULL; scratch (scratch_floats >= conv_infer_min_scratch_floats). out
// must not overlap inp.
void conv_infer_forward(float *out, const float *inp, const float *weight, const float *wino_u,
                        const float *bias, const float *residual, float *scratch,
                        size_t scratch_floats, int n, int C, int H, int W, int OC, int K,
                        int stride, int pad, int relu, ConvInferMethod method);
// Plain loops (double accumulation), the same contract; residual may not be out here.
void conv_infer_forward_ref(float *out, const float *inp, const float *weight,
                            const float *bias, const float *residual, int n, int C, int H,
                            int W, int OC, int K, int stride, int pad, int relu);

// Max pooling of P planes (H, W) (any layout that stores planes whole: P = C n):
// 3x3 windows, stride 2, padding 1 (padding never wins: torchvision's MaxPool2d(3, 2, 1)),
// out (P, Ho, Wo), Ho = (H - 1) / 2 + 1; and 2x2 windows, stride 2, Ho = H / 2 (an odd last
// row or column is dropped: MaxPool2d(2, 2)).
static inline int maxpool3s2_out_size(int n) { return (n - 1) / 2 + 1; }
void maxpool3s2_forward(float *out, const float *inp, int P, int H, int W);
void maxpool3s2_forward_ref(float *out, const float *inp, int P, int H, int W);
void maxpool2s2_forward(float *out, const float *inp, int P, int H, int W);
void maxpool2s2_forward_ref(float *out, const float *inp, int P, int H, int W);

// (n, C, H, W) <-> (C, n, H, W): images as the caller holds them to the group layout, and
// the last feature map (D, n, G, G) to annotations (n, L, D), L = G G.
void nchw_to_cnhw(float *dst, const float *src, int n, int C, int HW);
void cnhw_to_annotations(float *annot, const float *feat, int n, int D, int L);

#endif
