// winograd.h: 3x3 convolutions (pad 1, stride 1) by Winograd minimal filtering F(2x2, 3x3)
// (Lavin & Gray 2015, "Fast Algorithms for Convolutional Neural Networks"), forward,
// backward-data and backward-filter. The contract of conv2d in vision/conv.h restricted to
// K = 3, P = 1, H and W even, W <= 2048 (everything else keeps im2col); conv2d_forward_ref and
// conv2d_backward_ref there are the plain-loop references the tests compare against.
//
// The output is cut into 2x2 tiles, T = (H/2) (W/2) per image; tile t = ty (W/2) + tx
// covers outputs (2ty.., 2tx..) and reads the 4x4 input patch from (2ty - 1, 2tx - 1)
// (zero outside the image: adjacent patches overlap by two rows or columns). With
//     B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],  G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1],
//     A^T = [1 1 1 0; 0 1 -1 -1]
// and xi = 4 i + j indexing the 16 entries of a 4x4 transform:
//     U[xi] (OC, C) = (G g G^T)[xi]              filter transform, U laid out (16, OC, C)
//     V[xi] (C, N)  = (B^T d B)[xi]              input transform, V laid out (16, C, N)
//     M[xi] (OC, N) = U[xi] V[xi]                16 GEMMs (core/gemm.h), M (16, OC, N)
//     Y (2x2 per tile) = A^T m A                 output transform
// N = n T columns: the tiles of n images side by side (image b's T tiles at b T), so one
// GEMM can cover a group of images (its K = C is small; on the captioner's layers one
// image per GEMM still measured fastest, vision/cnn.h). V and M are 16
// matrices one after the other with a gap of WINOGRAD_GAP floats after each: V[xi] starts
// at xi winograd_stride(C, N), M[xi] at xi winograd_stride(OC, N). The transforms read or
// write all 16 at once; without the gap, when rows N is a multiple of a large power of
// two (the CNN's layers), the 16 streams fall into the same cache sets and evict each
// other (bench/bench_cnn.c: forward + backward 100 ms per batch without the gap, 58 with).
// Backward applies the adjoint (transpose) of each linear map: dM = A dY A^T per tile,
// dV[xi] = U[xi]^T dM[xi] then dX += the scatter-add of B dV B^T (patches overlap),
// dU[xi] += dM[xi] V[xi]^T with V recomputed from the input (not kept), dg += G^T dU G.
// These are exact adjoints of the forward's transforms, so the backward is the gradient
// of the computed forward, rounding aside.
//
// Arithmetic: 16 OC C multiplies per tile of 4 outputs against 36 OC C (im2col), 2.25x
// fewer. Float32 rounding is a little larger than the direct sum's (the transforms add
// and subtract up to 16 values, and U carries halves); on O(1) data it stays within the
// tests' 1e-4 of a double-precision reference, and the captioner's PyTorch parity fixtures
// (tests/test_parity_sat.c) pass with every layer forced through Winograd (annotations
// within 1e-6, as with im2col).
//
// No allocation inside: the whole-op functions take scratch of winograd_scratch_size
// floats; backward ACCUMULATES into dinp, dweight, dbias (each may be NULL to skip).
#ifndef VISION_WINOGRAD_H
#define VISION_WINOGRAD_H

#include <stddef.h>

// Tiles per image (H, W even, >= 2).
static inline int winograd_tiles(int H, int W) { return (H / 2) * (W / 2); }
// Tiles along a side of any length n >= 1 (winograd_input_transform_planes): an odd side's
// last tile hangs one row or column over the edge.
static inline int winograd_tile_side(int n) { return (n + 1) / 2; }
// Floats of U (or dU): 16 OC C (no gap).
static inline size_t winograd_filter_size(int OC, int C) { return (size_t)16 * OC * C; }
#define WINOGRAD_GAP 16
// Floats from one of the 16 matrices (rows, N) of V or M to the next, and all 16.
static inline size_t winograd_stride(int rows, int N) { return (size_t)rows * N + WINOGRAD_GAP; }
static inline size_t winograd_transformed_size(int rows, int N) {
    return 16 * winograd_stride(rows, N);
}
// Scratch floats for winograd_conv3x3_forward / _backward with groups of `group` images:
// U and dU (16 OC C each), V (16, C, group T) and M (16, OC, group T) with their gaps.
// CHECKs the shape.
size_t winograd_scratch_size(int group, int C, int H, int W, int OC);

// U (16, OC, C) = G g G^T from weight (OC, C, 3, 3).
void winograd_filter_transform(float *U, const float *weight, int OC, int C);
// The adjoint, accumulated: dweight (OC, C, 3, 3) += G^T dU G, dU (16, OC, C).
void winograd_filter_transform_adjoint_add(float *dweight, const float *dU, int OC, int C);

// V (16, C, n T) from imgs (n, C, H, W).
void winograd_input_transform(float *V, const float *imgs, int n, int C, int H, int W);
// The input transform of the rows of tiles ty0 <= ty < ty1 of P planes (H, W) one after
// the other, H and W any sides >= 1 (W <= 2048; an odd side's last row or column of tiles
// reads zeros past the edge): V (16, P, Tb) with Tb = (ty1 - ty0) winograd_tile_side(W)
// tiles per plane, plane p's tiles at
// p Tb of each of the 16 matrices (gaps as above, winograd_stride(P, Tb)). With the planes
// of n images stored channel-major, (C, n, H, W) (vision/conv_infer.h), P = C n makes V
// (16, C, n Tb): one GEMM per entry covers a band of rows of every image.
void winograd_input_transform_planes(float *V, const float *planes, int P, int H, int W,
                                     int ty0, int ty1);
// The adjoint, accumulated: dimgs (n, C, H, W) += the patches B dV B^T, dV (16, C, n T).
void winograd_input_transform_adjoint_add(float *dimgs, const float *dV, int n, int C, int H,
                                          int W);

// M (16, OC, N) = U (16, OC, C) V (16, C, N): 16 GEMMs (V, M with gaps, as above).
void winograd_multiply(float *M, const float *U, const float *V, int OC, int C, int N);
// Backward of winograd_multiply: dU (16, OC, C) += dM V^T when dU is non-NULL (this reads
// V); then, when dV is non-NULL, dV (16, C, N) = U^T dM (overwritten; dV may be V itself,
// whose values are then spent). dM (16, OC, N).
void winograd_multiply_backward(float *dV, float *dU, const float *dM, const float *U,
                                const float *V, int OC, int C, int N);

// out = A^T m A (+ bias[oc] when bias is non-NULL) for every tile of n images, M (16, OC,
// n T) with gaps; out[b image_stride + oc channel_stride + y W + x]: (n, OC, H, W) with strides
// (OC H W, H W), or (OC, n, H, W) with (H W, n H W).
void winograd_output_transform(float *out, const float *M, const float *bias, int n, int OC,
                               int H, int W, size_t image_stride, size_t channel_stride);
// The adjoint: dM (16, OC, n T) = A dY A^T per tile (overwritten), dout strided as above.
void winograd_output_transform_adjoint(float *dM, const float *dout, int n, int OC, int H,
                                       int W, size_t image_stride, size_t channel_stride);

// The output transform of `count` consecutive tiles, for callers that fuse it with what
// follows (vision/cnn.c: bias, ReLU and 2x2 pooling, whose windows are the tiles):
// m[xi stride + t] is entry xi of tile t; y00, y01, y10, y11 (count) get the tile's
// outputs at (row, column) (0, 0), (0, 1), (1, 0), (1, 1).
void winograd_output_tiles(float *y00, float *y01, float *y10, float *y11, const float *m,
                           size_t stride, int count);
// Its adjoint: dm[xi stride + t] (overwritten) from the four output gradients.
void winograd_output_tiles_adjoint(float *dm, size_t stride, const float *dy00,
                                   const float *dy01, const float *dy10, const float *dy11,
                                   int count);

// The whole convolution, conv2d_forward's contract with K = 3, P = 1 (H, W even):
// out (B, OC, H, W), inp (B, C, H, W), weight (OC, C, 3, 3), bias (OC) or NULL, scratch
// (winograd_scratch_size(group, C, H, W, OC) floats); images in groups of `group`.
void winograd_conv3x3_forward(float *out, const float *inp, const float *weight,
                              const float *bias, float *scratch, int group, int B, int C, int H,
                              int W, int OC);
// accumulates: dinp (B, C, H, W) or NULL, dweight (OC, C, 3, 3) or NULL, dbias (OC) or NULL;
// dout (B, OC, H, W), inp, weight, scratch, group as forward.
void winograd_conv3x3_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                               const float *inp, const float *weight, float *scratch, int group,
                               int B, int C, int H, int W, int OC);

#endif
