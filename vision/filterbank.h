// filterbank.h: DRAW's read and write attention (Gregor et al. 2015, section 3.2;
// REFERENCE.md section 3), forward and backward, batched.
//
// An image has W columns (the paper's A) and H rows (the paper's B), stored row-major
// (H, W). A glimpse is an N x N grid of 2-D Gaussians whose five parameters come from a
// linear layer (the caller's) as raw values per batch row:
//     params (B, 5) = (g~_X, g~_Y, log sigma^2, log delta~, log gamma)
//     g_X = (W + 1)/2 (g~_X + 1),  g_Y = (H + 1)/2 (g~_Y + 1)
//     delta = (max(W, H) - 1)/(N - 1) * exp(log delta~)      (N = 1: the offset is 0)
//     mu_X,i = g_X + (i - N/2 - 0.5) delta, i = 1..N;  mu_Y,j alike with g_Y
//     F_X[i, a] = exp(-(a - mu_X,i)^2 / (2 sigma^2)) / Z_i over a = 1..W (1-based pixels)
// The grid is 1-based: g~ = 0, delta~ = 1 put mu_1 = 1 and mu_N = W.
// Normalisation: each row of F is a softmax over pixels of -(a - mu)^2 / (2 sigma^2), i.e.
// the maximum is subtracted before exp, so Z >= 1 after the shift and never 0. It equals
// the paper's Z-normalised Gaussian whenever that is defined; when every exp would
// underflow (tiny sigma, mu off the image) the row becomes the nearest edge pixel instead
// of 0/0. log sigma^2 is clamped to [-80, 80] inside (gradient 0 beyond). The shifted
// logits are formed in double and exponentiated in float by core/activations.h's
// vectorised exp_fast, with shifted logits below -64 taken as -64 (no subnormal floats):
// F is within 2e-6 relative of the double-precision softmax for entries >= 1e-7, 6e-7 for
// entries >= 1e-2, and within 1e-7 absolute everywhere.
//
//     read:  patch = gamma * F_Y img F_X^T              (N, N) per image
//     write: out  += (1/gamma) F_Y^T patch F_X          (H, W) per image
// DRAW reads x and x_hat (two calls) with N_read and writes with its own N_write.
// The products run per batch row. The write, and the read on images of at most 28 x 28
// pixels (DRAW on MNIST), run as plain loops (axpy over image rows and 8-way dot products,
// vectorised over W); the read on larger images (the cluttered classifier's 100 x 100,
// two-digit 60 x 60, colour 64 x 64) runs as GEMMs through core/gemm.h, 3x to 4x faster
// there on one thread (bench/bench_filterbank.c). The two read paths sum in different
// orders: they agree to float rounding (tests/test_filterbank.c: 1e-5 relative), not bit
// for bit. *_ref are plain double-precision loops for the tests. Images that are mostly
// zeros (cluttered MNIST) have a faster read over their nonzero pixels alone:
// vision/filterbank_sparse.h.
#ifndef VISION_FILTERBANK_H
#define VISION_FILTERBANK_H

enum { FILTERBANK_PARAMS = 5 };

// Fx (B, N, W), Fy (B, N, H), gamma (B); params (B, 5) as above.
void filterbank_forward(float *Fx, float *Fy, float *gamma, const float *params, int B, int N,
                        int W, int H);
// Accumulates dparams (B, 5) from dFx (B, N, W), dFy (B, N, H) and dgamma (B) (either of the
// F gradients or dgamma may be NULL); Fx, Fy, params as in forward.
void filterbank_backward(float *dparams, const float *dFx, const float *dFy, const float *dgamma,
                         const float *Fx, const float *Fy, const float *params, int B, int N,
                         int W, int H);

// Floats of scratch the read/write functions need (reused across the batch).
int filterbank_scratch_floats(int N, int W, int H);

// patch (B rows of stride ld_patch, first N*N used) = gamma * F_Y img F_X^T;
// img (B, H, W); Fx (B, N, W); Fy (B, N, H); gamma (B).
void filterbank_read_forward(float *patch, int ld_patch, const float *img, const float *Fx,
                             const float *Fy, const float *gamma, float *scratch, int B, int N,
                             int W, int H);
// Accumulates dimg (B, H, W) or NULL, dFx (B, N, W), dFy (B, N, H), dgamma (B) from dpatch
// (B rows of stride ld_patch).
void filterbank_read_backward(float *dimg, float *dFx, float *dFy, float *dgamma,
                              const float *dpatch, int ld_patch, const float *img,
                              const float *Fx, const float *Fy, const float *gamma,
                              float *scratch, int B, int N, int W, int H);

// out (B, H, W) += (1/gamma) F_Y^T patch F_X; patch (B, N, N).
void filterbank_write_forward(float *out, const float *patch, const float *Fx, const float *Fy,
                              const float *gamma, float *scratch, int B, int N, int W, int H);
// out (B, H, W) = prev (B, H, W) + (1/gamma) F_Y^T patch F_X in one pass (a canvas update
// without copying the previous canvas first); prev NULL means zeros, prev == out is
// filterbank_write_forward. The same float operations in the same order as copy-then-add.
void filterbank_write_forward_from(float *out, const float *prev, const float *patch,
                                   const float *Fx, const float *Fy, const float *gamma,
                                   float *scratch, int B, int N, int W, int H);
// Accumulates dpatch (B, N, N), dFx, dFy, dgamma from dout (B, H, W).
void filterbank_write_backward(float *dpatch, float *dFx, float *dFy, float *dgamma,
                               const float *dout, const float *patch, const float *Fx,
                               const float *Fy, const float *gamma, float *scratch, int B, int N,
                               int W, int H);

// Colour (or any C-channel) images: the same filters (Fx, Fy, gamma) applied to every
// channel, as DRAW's colour models do (Gregor et al. 2015, section 3.3: "the same reading
// and writing filters are used for all three channels"). Images are (B, C, H, W); a read
// patch row holds the C channels' N x N glimpses one after another (C N^2 values), a write
// patch is (B, C, N, N). The gradients of the shared Fx, Fy and gamma are summed over the
// channels. With C = 1 these are the functions above, operation for operation (those are
// these with C = 1).
void filterbank_read_channels_forward(float *patch, int ld_patch, const float *img,
                                      const float *Fx, const float *Fy, const float *gamma,
                                      float *scratch, int B, int C, int N, int W, int H);
// Accumulates dimg (B, C, H, W) or NULL, dFx (B, N, W), dFy (B, N, H), dgamma (B) from
// dpatch (B rows of stride ld_patch, C N^2 used).
void filterbank_read_channels_backward(float *dimg, float *dFx, float *dFy, float *dgamma,
                                       const float *dpatch, int ld_patch, const float *img,
                                       const float *Fx, const float *Fy, const float *gamma,
                                       float *scratch, int B, int C, int N, int W, int H);
// out (B, C, H, W) = prev + (1/gamma) F_Y^T patch_c F_X per channel; prev NULL: zeros;
// prev == out: accumulate. patch (B, C, N, N).
void filterbank_write_channels_forward_from(float *out, const float *prev, const float *patch,
                                            const float *Fx, const float *Fy, const float *gamma,
                                            float *scratch, int B, int C, int N, int W, int H);
// Accumulates dpatch (B, C, N, N), dFx, dFy, dgamma from dout (B, C, H, W).
void filterbank_write_channels_backward(float *dpatch, float *dFx, float *dFy, float *dgamma,
                                        const float *dout, const float *patch, const float *Fx,
                                        const float *Fy, const float *gamma, float *scratch,
                                        int B, int C, int N, int W, int H);

// The read's two ways, for tests and benchmarks: the loops above (axpy and dot8) or GEMMs
// (core/gemm.h): u = Fy img, patch = gamma u Fx^T per image and channel, and the backward's
// five products likewise. AUTO is what the functions above do: filterbank_read_uses_gemm.
typedef enum { FILTERBANK_PATH_AUTO, FILTERBANK_PATH_LOOPS, FILTERBANK_PATH_GEMM } FilterbankPath;
int filterbank_read_uses_gemm(int N, int W, int H);
void filterbank_read_channels_forward_path(float *patch, int ld_patch, const float *img,
                                           const float *Fx, const float *Fy, const float *gamma,
                                           float *scratch, int B, int C, int N, int W, int H,
                                           FilterbankPath path);
void filterbank_read_channels_backward_path(float *dimg, float *dFx, float *dFy, float *dgamma,
                                            const float *dpatch, int ld_patch, const float *img,
                                            const float *Fx, const float *Fy, const float *gamma,
                                            float *scratch, int B, int C, int N, int W, int H,
                                            FilterbankPath path);

// The GEMM path keeping u = F_Y img (B, C, N, W) from the forward for the backward, which
// otherwise recomputes it (a third of the backward's multiply-adds at 100 x 100, N 12): for
// a caller that keeps per-step buffers anyway (models/glimpse.c). The same products in the
// same order as FILTERBANK_PATH_GEMM, so the same results bit for bit.
void filterbank_read_channels_forward_keep(float *patch, int ld_patch, const float *img,
                                           const float *Fx, const float *Fy, const float *gamma,
                                           float *u, float *scratch, int B, int C, int N, int W,
                                           int H);
void filterbank_read_channels_backward_kept(float *dimg, float *dFx, float *dFy, float *dgamma,
                                            const float *dpatch, int ld_patch, const float *img,
                                            const float *Fx, const float *Fy, const float *gamma,
                                            const float *u, float *scratch, int B, int C, int N,
                                            int W, int H);

// Plain-loop references (double accumulation) of the forwards, for tests.
void filterbank_forward_ref(float *Fx, float *Fy, float *gamma, const float *params, int B, int N,
                            int W, int H);
void filterbank_read_forward_ref(float *patch, int ld_patch, const float *img, const float *Fx,
                                 const float *Fy, const float *gamma, int B, int N, int W, int H);
void filterbank_write_forward_ref(float *out, const float *patch, const float *Fx,
                                  const float *Fy, const float *gamma, int B, int N, int W, int H);

// The glimpse geometry of one params row, in 0-based pixel coordinates (pixel k covers
// [k - 0.5, k + 0.5]): centre, stride, sigma, gamma, and the box through the outer
// Gaussian centres (x0, y0) - (x1, y1), for drawing the window.
typedef struct {
    float gx, gy, delta, sigma, gamma;
    float x0, y0, x1, y1;
} FilterbankWindow;
FilterbankWindow filterbank_window(const float *params, int N, int W, int H);

#endif
