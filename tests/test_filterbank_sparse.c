// Tests of vision/filterbank_sparse: the nonzero lists (what they hold, the room they
// refuse to exceed, NaN kept), and the sparse read's forward and backward against the
// dense read's plain loops (FILTERBANK_PATH_LOOPS, gradient-checked in test_filterbank)
// and the double-precision reference, on images with few nonzero pixels, an empty image,
// a full row, colour, N = 1 and N > 16 (more than one vector of lanes).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/rng.h"
#include "tests/support/gradcheck.h"
#include "tests/support/test.h"
#include "vision/filterbank.h"
#include "vision/filterbank_sparse.h"

static void test_build_lists_nonzeros(void) {
    enum { B = 2, C = 1, W = 37, H = 3 };
    float img[B * C * H * W] = {0};
    img[0 * W + 5] = 0.5f;
    img[0 * W + 36] = -1.0f;   // the last column, past two vectors of 16
    img[2 * W + 16] = NAN;     // NaN counts as nonzero
    img[(H + 1) * W + 0] = 2.0f;
    SparseImages s;
    sparse_images_alloc(&s, B * C, W, H, 4);
    EXPECT(sparse_images_build(&s, img, B, C, W, H) == 0, "4 nonzeros fit a room of 4");
    int want_start[B * H + 1] = {0, 2, 2, 3, 3, 4, 4};
    for (int r = 0; r <= B * H; r++)
        EXPECT(s.row_start[r] == want_start[r], "row_start[%d] %d, want %d", r, s.row_start[r],
               want_start[r]);
    EXPECT(s.col[0] == 5 && s.val[0] == 0.5f && s.col[1] == 36 && s.val[1] == -1.0f &&
               s.col[2] == 16 && isnan(s.val[2]) && s.col[3] == 0 && s.val[3] == 2.0f,
           "the nonzeros in row order");
    // Image 0's nonzero columns 5, 16 and 36; image 1's column 0.
    EXPECT(s.cols_start[0] == 0 && s.cols_start[1] == 3 && s.cols_start[2] == 4 && s.cols[0] == 5 &&
               s.cols[1] == 16 && s.cols[2] == 36 && s.cols[3] == 0,
           "the nonzero columns of each image, ascending");
    // Column-major: image 0's column 5 holds (row 0, 0.5), 16 (row 2, NaN), 36 (row 0, -1);
    // image 1's column 0 (row 1, 2).
    EXPECT(s.col_nz_start[0] == 0 && s.col_nz_start[1] == 1 && s.col_nz_start[2] == 2 &&
               s.col_nz_start[3] == 3 && s.col_nz_start[4] == 4 && s.col_nz_row[0] == 0 &&
               s.col_nz_val[0] == 0.5f && s.col_nz_row[1] == 2 && isnan(s.col_nz_val[1]) &&
               s.col_nz_row[2] == 0 && s.col_nz_val[2] == -1.0f && s.col_nz_row[3] == 1 &&
               s.col_nz_val[3] == 2.0f,
           "the nonzeros column by column");
    img[W + 1] = 1.0f;
    EXPECT(sparse_images_build(&s, img, B, C, W, H) == -1, "5 nonzeros must not fit a room of 4");
    img[W + 1] = 0.0f;  // a failed build leaves the next one right
    EXPECT(sparse_images_build(&s, img, B, C, W, H) == 0 && s.cols_start[1] == 3,
           "after a failed build");
    sparse_images_free(&s);
}

// Sparse against the dense loops: forward; backward onto nonzero dFx, dFy, d gamma (both
// accumulate). Image 0 of the batch has no nonzero pixel, image 1 a full row, the rest
// about 4 % nonzero pixels. Measured against each array's largest magnitude, the paths
// agree to 1e-5 (float summation in another order).
static void check_sparse_read(int B, int C, int N, int W, int H, unsigned seed) {
    Rng rng;
    rng_seed(&rng, seed);
    int ld = C * N * N + 2;
    size_t nimg = (size_t)B * C * H * W, nfx = (size_t)B * N * W, nfy = (size_t)B * N * H;
    float *params = xcalloc(B * 5, sizeof(float)), *g = xcalloc(B, sizeof(float));
    float *Fx = xcalloc(nfx, sizeof(float)), *Fy = xcalloc(nfy, sizeof(float));
    float *img = xcalloc(nimg, sizeof(float)), *G = xcalloc((size_t)B * ld, sizeof(float));
    int dense_scratch = filterbank_scratch_floats(N, W, H);
    float *scratch = xcalloc(dense_scratch, sizeof(float));
    float *sp_scratch = xcalloc(filterbank_sparse_scratch_floats(N, W, H), sizeof(float));
    float *uT = xcalloc((size_t)B * C * filterbank_sparse_kept_floats(N, W), sizeof(float));
    fill_uniform(params, B * 5, -0.6f, 0.6f, &rng);
    fill_uniform(G, (size_t)B * ld, -1.0f, 1.0f, &rng);
    for (size_t i = (size_t)C * H * W; i < nimg; i++)
        if (rng_uniform(&rng) < 0.04f) img[i] = rng_uniform(&rng);
    if (B > 1)
        for (int a = 0; a < W; a++) img[((size_t)1 * C * H + H / 2) * W + a] = 0.5f + 0.01f * a;
    filterbank_forward(Fx, Fy, g, params, B, N, W, H);
    SparseImages s;
    sparse_images_alloc(&s, B * C, W, H, nimg / 4);
    EXPECT(sparse_images_build(&s, img, B, C, W, H) == 0, "the test images must fit");
    // [0] dense loops, [1] sparse
    float *patch[2], *dFx[2], *dFy[2], *dg[2];
    for (int k = 0; k < 2; k++) {
        patch[k] = xcalloc((size_t)B * ld, sizeof(float));
        dFx[k] = xcalloc(nfx, sizeof(float));
        dFy[k] = xcalloc(nfy, sizeof(float));
        dg[k] = xcalloc(B, sizeof(float));
        for (size_t i = 0; i < nfx; i++) dFx[k][i] = 0.25f;
        for (size_t i = 0; i < nfy; i++) dFy[k][i] = -0.25f;
        for (int b = 0; b < B; b++) dg[k][b] = 1.0f;
    }
    filterbank_read_channels_forward_path(patch[0], ld, img, Fx, Fy, g, scratch, B, C, N, W, H,
                                          FILTERBANK_PATH_LOOPS);
    filterbank_read_channels_backward_path(NULL, dFx[0], dFy[0], dg[0], G, ld, img, Fx, Fy, g,
                                           scratch, B, C, N, W, H, FILTERBANK_PATH_LOOPS);
    filterbank_read_sparse_forward(patch[1], ld, &s, Fx, Fy, g, uT, sp_scratch, B, C, N, W, H);
    // The backward must not depend on the scratch's contents.
    for (int i = 0; i < filterbank_sparse_scratch_floats(N, W, H); i++) sp_scratch[i] = 1e30f;
    filterbank_read_sparse_backward(dFx[1], dFy[1], dg[1], G, ld, &s, Fx, g, uT, sp_scratch, B, C,
                                    N, W, H);
    double gaps[4] = {test_worst_relative_gap(patch[1], patch[0], (size_t)B * ld),
                      test_worst_relative_gap(dFx[1], dFx[0], nfx), test_worst_relative_gap(dFy[1], dFy[0], nfy),
                      test_worst_relative_gap(dg[1], dg[0], B)};
    const char *names[4] = {"patch", "dFx", "dFy", "d gamma"};
    for (int k = 0; k < 4; k++)
        EXPECT(gaps[k] <= 1e-5, "B %d C %d N %d %dx%d: %s sparse vs loops %.3g of the largest", B,
               C, N, W, H, names[k], gaps[k]);
    for (int b = 0; b < B; b++)  // the padding between patch rows is left alone
        for (int k = C * N * N; k < ld; k++) EXPECT(patch[1][b * ld + k] == 0.0f, "padding written");
    if (C == 1) {  // the forward against the double-precision reference
        float *ref = xcalloc((size_t)B * ld, sizeof(float));
        filterbank_read_forward_ref(ref, ld, img, Fx, Fy, g, B, N, W, H);
        for (int b = 0; b < B; b++)
            for (int k = 0; k < N * N; k++) EXPECT_NEAR(patch[1][b * ld + k], ref[b * ld + k], 1e-6, 1e-5);
        for (int k = 0; k < N * N; k++)
            EXPECT(patch[1][k] == 0.0f, "the empty image's patch must be 0, not %g", patch[1][k]);
        free(ref);
    }
    for (int k = 0; k < 2; k++) free(patch[k]), free(dFx[k]), free(dFy[k]), free(dg[k]);
    sparse_images_free(&s);
    free(params), free(g), free(Fx), free(Fy), free(img), free(G), free(scratch), free(sp_scratch);
    free(uT);
}

static void test_sparse_read_matches_loops(void) {
    check_sparse_read(4, 1, 12, 100, 100, 41);  // the cluttered classifier's read
    check_sparse_read(3, 3, 5, 37, 29, 42);     // colour, W != H, odd sizes
    check_sparse_read(3, 1, 1, 30, 31, 43);     // N = 1
    check_sparse_read(3, 1, 17, 40, 33, 44);    // N > 16: two vectors of lanes
}

int main(void) {
    RUN(test_build_lists_nonzeros);
    RUN(test_sparse_read_matches_loops);
    return test_summary();
}
