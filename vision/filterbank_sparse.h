// filterbank_sparse.h: DRAW's read (vision/filterbank.h) on images that are mostly zeros,
// with the image held as its nonzero pixels.
//
// The read's two large products per image and step are u = F_Y img (N x H x W multiply-
// adds) in the forward and dF_Y += Z img^T (as many) in the backward. A cluttered-MNIST
// image of 100 x 100 has about 300 nonzero pixels (3 %: the digit and 8 fragments on a
// black ground; 510 at most in 1000 images), so over its nonzero pixels alone each product
// is about 300 N multiply-adds instead of 10,000 N. Pixels that are exactly zero add
// exactly zero to every sum, so the results are the dense read's up to the order of the
// float summation (tests/test_filterbank.c: against the plain loops of the dense read).
//
// The layout: u is kept transposed, uT (W, S) with S = filterbank_sparse_stride(N) (N
// rounded up to 16, the lanes past N zero), so that a nonzero pixel (h, a, v) adds v times
// row h of F_Y^T (S floats) to row a of uT, one vector operation for N <= 16; and the
// backward's Z likewise as ZT (W, S), so dF_Y^T row h is the sum over the row's nonzeros of
// v ZT[a]. The small products (patch = gamma u F_X^T, P = u F_X^T, dF_X += gamma G^T u,
// Z = gamma G F_X, N x N x W each) run as sums of 16-lane rows on the transposed operands
// (OpenBLAS's transposed small kernels took about twice as long on them).
// There is no image gradient: the images are data (the glimpse classifier's input).
#ifndef VISION_FILTERBANK_SPARSE_H
#define VISION_FILTERBANK_SPARSE_H

#include <stddef.h>

// The nonzero pixels of B images of C channels, H rows of W, row by row: row r = (b C + ch)
// H + h holds its nonzeros at [row_start[r], row_start[r + 1]) of col (the column a) and val.
// Image channel ic = b C + ch has a nonzero in the columns cols[cols_start[ic] ..
// cols_start[ic + 1]), ascending (the read's products run over those columns only); the
// nonzeros of column cols[k] are at [col_nz_start[k], col_nz_start[k + 1]) of col_nz_row
// (the row h, ascending) and col_nz_val (the same nonzeros, column by column).
typedef struct {
    int B, C, W, H;       // of the last build
    size_t cap;           // room for this many nonzeros
    size_t rows_cap;      // room for this many rows (B C H)
    size_t images_cap;    // room for this many image channels (B C)
    int W_cap;            // and this many columns each
    int *row_start;       // (rows_cap + 1)
    int *col;             // (cap)
    float *val;           // (cap)
    int *cols;            // (images_cap W_cap)
    int *cols_start;      // (images_cap + 1)
    int *col_nz_start;    // (images_cap W_cap + 1)
    int *col_nz_row;      // (cap)
    float *col_nz_val;    // (cap)
    int *seen, *cursor;   // (W_cap) scratch of the build; seen is all zero between builds
} SparseImages;

// Room for up to `images` image channels (B C) of H rows of W, and cap nonzeros.
void sparse_images_alloc(SparseImages *s, int images, int W, int H, size_t cap);
void sparse_images_free(SparseImages *s);
// The nonzeros of img (B, C, H, W) into s: 0, or -1 when there are more than s->cap of them
// (s is then unusable until the next successful build). NaN and infinities count as nonzero.
int sparse_images_build(SparseImages *s, const float *img, int B, int C, int W, int H);

// S: N rounded up to a multiple of 16.
int filterbank_sparse_stride(int N);
// Floats of scratch the two functions below need.
int filterbank_sparse_scratch_floats(int N, int W, int H);

// Floats the forward keeps for the backward per image and channel: u^T = (F_Y img)^T
// (W, S) and P^T = (u F_X^T)^T (N, S).
int filterbank_sparse_kept_floats(int N, int W);

// patch (B rows of stride ld_patch, C N^2 used; channel ch's N x N at ch N^2) = gamma F_Y
// img F_X^T per image and channel, as filterbank_read_channels_forward; kept (B, C,
// filterbank_sparse_kept_floats) receives u^T and P^T for the backward. Fx (B, N, W),
// Fy (B, N, H), gamma (B).
void filterbank_read_sparse_forward(float *patch, int ld_patch, const SparseImages *img,
                                    const float *Fx, const float *Fy, const float *gamma,
                                    float *kept, float *scratch, int B, int C, int N, int W,
                                    int H);
// Accumulates dFx (B, N, W), dFy (B, N, H), dgamma (B) from dpatch (B rows of stride
// ld_patch), as filterbank_read_channels_backward with no image gradient; kept from the
// forward on the same images and filters (which is all it needs of F_Y).
void filterbank_read_sparse_backward(float *dFx, float *dFy, float *dgamma, const float *dpatch,
                                     int ld_patch, const SparseImages *img, const float *Fx,
                                     const float *gamma, const float *kept, float *scratch,
                                     int B, int C, int N, int W, int H);

#endif
