// Tests of vision/filterbank: the grid geometry, the stable normalisation, the fast
// products against plain loops, and gradient checks of read, write and the filterbank
// parameters (all five) against central differences.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/rng.h"
#include "tests/support/gradcheck.h"
#include "tests/support/test.h"
#include "vision/filterbank.h"

// Centre of row i of F (N, L) in 1-based pixel units: sum_a a F[i, a].
static double row_mean(const float *F, int i, int L) {
    double s = 0.0;
    for (int a = 0; a < L; a++) s += (a + 1) * (double)F[i * L + a];
    return s;
}

static void test_grid_spans_image(void) {
    // g~ = 0, delta~ = 1 (log 0), tiny sigma: mu_1 = 1 and mu_N = W (and H for Fy).
    int N = 5, W = 29, H = 21;
    float params[5] = {0.0f, 0.0f, logf(1e-4f), 0.0f, 0.0f};
    float Fx[5 * 29], Fy[5 * 21], gamma;
    filterbank_forward(Fx, Fy, &gamma, params, 1, N, W, H);
    EXPECT_NEAR(row_mean(Fx, 0, W), 1.0, 1e-4, 0);
    EXPECT_NEAR(row_mean(Fx, N - 1, W), (double)W, 1e-4, 0);
    EXPECT_NEAR(row_mean(Fx, 2, W), (W + 1) / 2.0, 1e-4, 0);
    // Fy: centre (H + 1)/2 = 11, stride from max(W, H): (W - 1)/(N - 1) = 7
    EXPECT_NEAR(row_mean(Fy, 2, H), (H + 1) / 2.0, 1e-4, 0);
    EXPECT_NEAR(row_mean(Fy, 1, H), (H + 1) / 2.0 - 7.0, 1e-4, 0);
    EXPECT_NEAR(gamma, 1.0, 1e-6, 0);
    FilterbankWindow w = filterbank_window(params, N, W, H);
    EXPECT_NEAR(w.x0, 0.0, 1e-5, 0);
    EXPECT_NEAR(w.x1, W - 1.0, 1e-5, 0);
    EXPECT_NEAR(w.delta, 7.0, 1e-5, 0);
}

static void test_rows_normalised_and_match_reference(void) {
    Rng rng;
    rng_seed(&rng, 3);
    int B = 4, N = 3, W = 12, H = 9;
    float params[4 * 5], Fx[4 * 3 * 12], Fy[4 * 3 * 9], g[4];
    float Fx2[4 * 3 * 12], Fy2[4 * 3 * 9], g2[4];
    fill_uniform(params, 20, -1.0f, 1.0f, &rng);
    filterbank_forward(Fx, Fy, g, params, B, N, W, H);
    filterbank_forward_ref(Fx2, Fy2, g2, params, B, N, W, H);
    for (int r = 0; r < B * N; r++) {
        double s = 0.0;
        for (int a = 0; a < W; a++) s += Fx[r * W + a];
        EXPECT_NEAR(s, 1.0, 1e-5, 0);
    }
    for (int i = 0; i < B * N * W; i++) EXPECT_NEAR(Fx[i], Fx2[i], 1e-6, 1e-5);
    for (int i = 0; i < B * N * H; i++) EXPECT_NEAR(Fy[i], Fy2[i], 1e-6, 1e-5);
    for (int i = 0; i < B; i++) EXPECT_NEAR(g[i], g2[i], 0, 1e-6);
}

// filterbank_forward against a double-precision softmax over pixels (the maximum shifted
// out, so it stays exact where the textbook form underflows), for 20,000 random windows
// (centres on and off the image, log sigma^2 in [-8, 8], strides up to 7x the span):
// the bounds filterbank.h states: 2e-6 relative for entries >= 1e-7, 6e-7 for entries
// >= 1e-2, 1e-7 absolute everywhere (the shifted logit is rounded to float before exp:
// 1e-6 relative at 1e-7, where the logit is -16; measured when written, with and without
// fused multiply-add: 9.9e-7, 3.3e-7 and 5.1e-8).
static void softmax_axis_d(double *F, double mu0, double delta, double s2, int N, int L) {
    for (int i = 0; i < N; i++) {
        double mu = mu0 + ((double)i + 0.5 - 0.5 * N) * delta, best = -INFINITY, z = 0.0;
        for (int a = 1; a <= L; a++) best = fmax(best, -(a - mu) * (a - mu) / (2 * s2));
        for (int a = 1; a <= L; a++) z += exp(-(a - mu) * (a - mu) / (2 * s2) - best);
        for (int a = 1; a <= L; a++) F[i * L + a - 1] = exp(-(a - mu) * (a - mu) / (2 * s2) - best) / z;
    }
}

static void test_matches_double_softmax(void) {
    enum { N = 5, W = 29, H = 21 };
    Rng rng;
    rng_seed(&rng, 17);
    float p[5], Fx[N * W], Fy[N * H], g;
    double Rx[N * W], Ry[N * H], rel7 = 0, rel2 = 0, abs_err = 0;
    for (int it = 0; it < 20000; it++) {
        for (int k = 0; k < 5; k++) p[k] = 2.0f * rng_uniform(&rng) - 1.0f;
        p[0] *= 1.5f, p[1] *= 1.5f, p[2] *= 8.0f, p[3] *= 2.0f;
        filterbank_forward(Fx, Fy, &g, p, 1, N, W, H);
        double s2 = exp((double)p[2]), delta = (double)(W - 1) / (N - 1) * exp((double)p[3]);
        softmax_axis_d(Rx, 0.5 * (W + 1) * ((double)p[0] + 1.0), delta, s2, N, W);
        softmax_axis_d(Ry, 0.5 * (H + 1) * ((double)p[1] + 1.0), delta, s2, N, H);
        for (int k = 0; k < N * (W + H); k++) {
            double got = k < N * W ? Fx[k] : Fy[k - N * W];
            double want = k < N * W ? Rx[k] : Ry[k - N * W], err = fabs(got - want);
            abs_err = fmax(abs_err, err);
            if (want >= 1e-7) rel7 = fmax(rel7, err / want);
            if (want >= 1e-2) rel2 = fmax(rel2, err / want);
        }
    }
    EXPECT(rel7 <= 2e-6, "relative error %.3g on entries >= 1e-7", rel7);
    EXPECT(rel2 <= 6e-7, "relative error %.3g on entries >= 1e-2", rel2);
    EXPECT(abs_err <= 1e-7, "absolute error %.3g", abs_err);
}

static void test_tiny_sigma_off_image_is_finite(void) {
    // sigma^2 = e^-60 and the centre far outside: every Gaussian underflows (Z = 0 in the
    // textbook form); the stable form must stay finite and normalised, read and write too.
    int N = 3, W = 10, H = 8;
    float params[5] = {25.0f, -30.0f, -60.0f, 0.5f, 0.0f};
    float Fx[3 * 10], Fy[3 * 8], gamma;
    filterbank_forward(Fx, Fy, &gamma, params, 1, N, W, H);
    for (int i = 0; i < N; i++) {
        double s = 0.0;
        for (int a = 0; a < W; a++) {
            EXPECT(isfinite(Fx[i * W + a]), "Fx[%d] = %g", i * W + a, Fx[i * W + a]);
            s += Fx[i * W + a];
        }
        EXPECT_NEAR(s, 1.0, 1e-5, 0);
        // All the mass on the nearest edge pixel: the last column (centre far right).
        EXPECT_NEAR(Fx[i * W + W - 1], 1.0, 1e-5, 0);
        EXPECT_NEAR(Fy[i * H + 0], 1.0, 1e-5, 0);
    }
    float img[80], patch[9], out[80] = {0}, scratch[256];
    for (int i = 0; i < 80; i++) img[i] = (float)i / 80.0f;
    filterbank_read_forward(patch, 9, img, Fx, Fy, &gamma, scratch, 1, N, W, H);
    for (int i = 0; i < 9; i++) EXPECT(isfinite(patch[i]), "patch[%d] = %g", i, patch[i]);
    EXPECT_NEAR(patch[0], img[0 * W + W - 1], 1e-6, 1e-5);  // top-right pixel
    float w[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    filterbank_write_forward(out, w, Fx, Fy, &gamma, scratch, 1, N, W, H);
    for (int i = 0; i < 80; i++) EXPECT(isfinite(out[i]), "out[%d] = %g", i, out[i]);
    // Gradients stay finite as well.
    float dFx[30], dFy[24], dparams[5] = {0};
    for (int i = 0; i < 30; i++) dFx[i] = 1.0f + i;
    for (int i = 0; i < 24; i++) dFy[i] = 1.0f - i;
    float dg = 1.0f;
    filterbank_backward(dparams, dFx, dFy, &dg, Fx, Fy, params, 1, N, W, H);
    for (int k = 0; k < 5; k++) EXPECT(isfinite(dparams[k]), "dparams[%d] = %g", k, dparams[k]);
    // All the mass sits on one pixel per row, so moving the centres or changing sigma
    // changes nothing: the pixels far in the tails (held at the logit floor) must not
    // contribute (e^-64 (a - mu)^2 / sigma^2 is about 1 here).
    for (int k = 0; k < 3; k++)
        EXPECT(fabsf(dparams[k]) < 1e-6f, "dparams[%d] = %g, expected about 0", k, dparams[k]);
}

static void test_products_match_reference(void) {
    Rng rng;
    rng_seed(&rng, 5);
    enum { B = 3, N = 4, W = 11, H = 7 };
    float params[B * 5], Fx[B * N * W], Fy[B * N * H], g[B], img[B * H * W];
    float patch[B * 20], patch_ref[B * 20], w[B * N * N], out[B * H * W], out_ref[B * H * W];
    float *scratch = xmalloc(sizeof(float) * filterbank_scratch_floats(N, W, H));
    fill_uniform(params, B * 5, -0.8f, 0.8f, &rng);
    fill_uniform(img, B * H * W, 0.0f, 1.0f, &rng);
    fill_uniform(w, B * N * N, -1.0f, 1.0f, &rng);
    filterbank_forward(Fx, Fy, g, params, B, N, W, H);
    filterbank_read_forward(patch, 20, img, Fx, Fy, g, scratch, B, N, W, H);
    filterbank_read_forward_ref(patch_ref, 20, img, Fx, Fy, g, B, N, W, H);
    for (int b = 0; b < B; b++)
        for (int k = 0; k < N * N; k++) EXPECT_NEAR(patch[b * 20 + k], patch_ref[b * 20 + k], 1e-6, 1e-5);
    for (int i = 0; i < B * H * W; i++) out[i] = out_ref[i] = 0.25f;
    filterbank_write_forward(out, w, Fx, Fy, g, scratch, B, N, W, H);
    filterbank_write_forward_ref(out_ref, w, Fx, Fy, g, B, N, W, H);
    for (int i = 0; i < B * H * W; i++) EXPECT_NEAR(out[i], out_ref[i], 1e-6, 1e-5);
    free(scratch);
}

// The read's GEMM path against its loops (the old path, gradient-checked below) and the
// double-precision reference: forward, and the backward with d image, onto nonzero dFx, dFy,
// d gamma (both accumulate). The paths sum in different orders, so they agree to float
// rounding, measured against the largest magnitude of each array: |gemm - loops| <=
// 1e-5 max |loops| (measured when written: 2.8e-7 at worst, in dFx). The GEMM path with u
// kept from the forward (filterbank_read_channels_forward_keep / _backward_kept) equals the
// GEMM path bit for bit.
static void check_read_paths(int B, int C, int N, int W, int H, unsigned seed) {
    Rng rng;
    rng_seed(&rng, seed);
    int ld = C * N * N + 2;
    size_t nimg = (size_t)B * C * H * W, nfx = (size_t)B * N * W, nfy = (size_t)B * N * H;
    float *params = xcalloc(B * 5, sizeof(float)), *g = xcalloc(B, sizeof(float));
    float *Fx = xcalloc(nfx, sizeof(float)), *Fy = xcalloc(nfy, sizeof(float));
    float *img = xcalloc(nimg, sizeof(float)), *G = xcalloc((size_t)B * ld, sizeof(float));
    float *scratch = xcalloc(filterbank_scratch_floats(N, W, H), sizeof(float));
    fill_uniform(params, B * 5, -0.6f, 0.6f, &rng);
    fill_uniform(img, nimg, 0.0f, 1.0f, &rng);
    fill_uniform(G, (size_t)B * ld, -1.0f, 1.0f, &rng);
    filterbank_forward(Fx, Fy, g, params, B, N, W, H);
    // [0] loops, [1] gemm
    float *patch[2], *dimg[2], *dFx[2], *dFy[2], *dg[2];
    for (int k = 0; k < 2; k++) {
        FilterbankPath path = k ? FILTERBANK_PATH_GEMM : FILTERBANK_PATH_LOOPS;
        patch[k] = xcalloc((size_t)B * ld, sizeof(float));
        dimg[k] = xcalloc(nimg, sizeof(float));
        dFx[k] = xcalloc(nfx, sizeof(float));
        dFy[k] = xcalloc(nfy, sizeof(float));
        dg[k] = xcalloc(B, sizeof(float));
        for (size_t i = 0; i < nimg; i++) dimg[k][i] = 0.5f;
        for (size_t i = 0; i < nfx; i++) dFx[k][i] = 0.25f;
        for (size_t i = 0; i < nfy; i++) dFy[k][i] = -0.25f;
        for (int b = 0; b < B; b++) dg[k][b] = 1.0f;
        filterbank_read_channels_forward_path(patch[k], ld, img, Fx, Fy, g, scratch, B, C, N, W,
                                              H, path);
        filterbank_read_channels_backward_path(dimg[k], dFx[k], dFy[k], dg[k], G, ld, img, Fx, Fy,
                                               g, scratch, B, C, N, W, H, path);
    }
    double tol = 1e-5;
    double gaps[5] = {test_worst_relative_gap(patch[1], patch[0], (size_t)B * ld),
                      test_worst_relative_gap(dimg[1], dimg[0], nimg),
                      test_worst_relative_gap(dFx[1], dFx[0], nfx),
                      test_worst_relative_gap(dFy[1], dFy[0], nfy),
                      test_worst_relative_gap(dg[1], dg[0], B)};
    const char *names[5] = {"patch", "d image", "dFx", "dFy", "d gamma"};
    for (int k = 0; k < 5; k++)
        EXPECT(gaps[k] <= tol, "B %d C %d N %d %dx%d: %s gemm vs loops %.3g of the largest", B,
               C, N, W, H, names[k], gaps[k]);
    {  // u kept from the forward: the GEMM path bit for bit, with scratch full of garbage
        float *u = xcalloc((size_t)B * C * N * W, sizeof(float));
        float *kp = xcalloc((size_t)B * ld, sizeof(float)), *kimg = xcalloc(nimg, sizeof(float));
        float *kfx = xcalloc(nfx, sizeof(float)), *kfy = xcalloc(nfy, sizeof(float));
        float *kg = xcalloc(B, sizeof(float));
        for (size_t i = 0; i < nimg; i++) kimg[i] = 0.5f;
        for (size_t i = 0; i < nfx; i++) kfx[i] = 0.25f;
        for (size_t i = 0; i < nfy; i++) kfy[i] = -0.25f;
        for (int b = 0; b < B; b++) kg[b] = 1.0f;
        filterbank_read_channels_forward_keep(kp, ld, img, Fx, Fy, g, u, scratch, B, C, N, W, H);
        for (int i = 0; i < filterbank_scratch_floats(N, W, H); i++) scratch[i] = 1e30f;
        filterbank_read_channels_backward_kept(kimg, kfx, kfy, kg, G, ld, img, Fx, Fy, g, u, scratch,
                                               B, C, N, W, H);
        EXPECT(!memcmp(kp, patch[1], sizeof(float) * B * ld) && !memcmp(kimg, dimg[1], sizeof(float) * nimg) &&
                   !memcmp(kfx, dFx[1], sizeof(float) * nfx) && !memcmp(kfy, dFy[1], sizeof(float) * nfy) &&
                   !memcmp(kg, dg[1], sizeof(float) * B),
               "B %d C %d N %d %dx%d: the kept-u read differs from the GEMM path", B, C, N, W, H);
        free(u), free(kp), free(kimg), free(kfx), free(kfy), free(kg);
    }
    if (C == 1) {  // the forward against the double-precision reference, too
        float *ref = xcalloc((size_t)B * ld, sizeof(float));
        filterbank_read_forward_ref(ref, ld, img, Fx, Fy, g, B, N, W, H);
        for (int b = 0; b < B; b++)
            for (int k = 0; k < N * N; k++)
                EXPECT_NEAR(patch[1][b * ld + k], ref[b * ld + k], 1e-6, 1e-5);
        free(ref);
    }
    for (int k = 0; k < 2; k++) free(patch[k]), free(dimg[k]), free(dFx[k]), free(dFy[k]), free(dg[k]);
    free(params), free(g), free(Fx), free(Fy), free(img), free(G), free(scratch);
}

static void test_read_gemm_matches_loops(void) {
    check_read_paths(3, 1, 12, 100, 100, 21);  // the cluttered classifier's read
    check_read_paths(2, 3, 5, 37, 29, 22);     // colour, W != H, odd sizes
    check_read_paths(2, 1, 1, 30, 31, 23);     // N = 1
}

// The plain functions take the loops up to 28 x 28 (DRAW on MNIST: its results unchanged
// bit for bit) and the GEMMs above; they are those paths exactly.
static void test_read_picks_path_by_image_size(void) {
    EXPECT(!filterbank_read_uses_gemm(2, 28, 28) && !filterbank_read_uses_gemm(12, 28, 28),
           "28 x 28 must keep the loops");
    EXPECT(filterbank_read_uses_gemm(12, 100, 100) && filterbank_read_uses_gemm(5, 29, 28),
           "larger images take the GEMMs");
    int sizes[2] = {28, 100};
    for (int s = 0; s < 2; s++) {
        enum { B = 2, N = 6 };
        int W = sizes[s], H = sizes[s];
        FilterbankPath path = filterbank_read_uses_gemm(N, W, H) ? FILTERBANK_PATH_GEMM
                                                                 : FILTERBANK_PATH_LOOPS;
        Rng rng;
        rng_seed(&rng, 31 + s);
        float params[B * 5], g[B], p0[B * N * N], p1[B * N * N];
        float *Fx = xcalloc(B * N * W, sizeof(float)), *Fy = xcalloc(B * N * H, sizeof(float));
        float *img = xcalloc(B * H * W, sizeof(float));
        float *scratch = xcalloc(filterbank_scratch_floats(N, W, H), sizeof(float));
        float *dfx[2], *dfy[2], dg[2][B] = {{0}};
        fill_uniform(params, B * 5, -0.5f, 0.5f, &rng);
        fill_uniform(img, B * H * W, 0.0f, 1.0f, &rng);
        filterbank_forward(Fx, Fy, g, params, B, N, W, H);
        filterbank_read_forward(p0, N * N, img, Fx, Fy, g, scratch, B, N, W, H);
        filterbank_read_channels_forward_path(p1, N * N, img, Fx, Fy, g, scratch, B, 1, N, W, H,
                                              path);
        EXPECT(!memcmp(p0, p1, sizeof p0), "%d x %d: read forward is not its path", W, H);
        for (int k = 0; k < 2; k++) {
            dfx[k] = xcalloc(B * N * W, sizeof(float));
            dfy[k] = xcalloc(B * N * H, sizeof(float));
        }
        filterbank_read_backward(NULL, dfx[0], dfy[0], dg[0], p0, N * N, img, Fx, Fy, g, scratch,
                                 B, N, W, H);
        filterbank_read_channels_backward_path(NULL, dfx[1], dfy[1], dg[1], p0, N * N, img, Fx,
                                               Fy, g, scratch, B, 1, N, W, H, path);
        EXPECT(!memcmp(dfx[0], dfx[1], sizeof(float) * B * N * W) &&
                   !memcmp(dfy[0], dfy[1], sizeof(float) * B * N * H) &&
                   !memcmp(dg[0], dg[1], sizeof dg[0]),
               "%d x %d: read backward is not its path", W, H);
        for (int k = 0; k < 2; k++) free(dfx[k]), free(dfy[k]);
        free(Fx), free(Fy), free(img), free(scratch);
    }
}

// write_forward_from(out, prev, ...) is copy-then-write_forward bit for bit (the canvas
// update of DRAW relies on it for determinism), and prev NULL is a write into zeros.
static void test_write_from_is_copy_then_write(void) {
    Rng rng;
    rng_seed(&rng, 8);
    enum { B = 3, N = 5, W = 13, H = 9 };
    float params[B * 5], Fx[B * N * W], Fy[B * N * H], g[B], w[B * N * N];
    float prev[B * H * W], copy[B * H * W], from[B * H * W], zero[B * H * W], from0[B * H * W];
    float *scratch = xmalloc(sizeof(float) * filterbank_scratch_floats(N, W, H));
    fill_uniform(params, B * 5, -0.8f, 0.8f, &rng);
    fill_uniform(w, B * N * N, -1.0f, 1.0f, &rng);
    fill_uniform(prev, B * H * W, -2.0f, 2.0f, &rng);
    filterbank_forward(Fx, Fy, g, params, B, N, W, H);
    memcpy(copy, prev, sizeof copy);
    filterbank_write_forward(copy, w, Fx, Fy, g, scratch, B, N, W, H);
    for (int i = 0; i < B * H * W; i++) from[i] = 99.0f;  // every element must be written
    filterbank_write_forward_from(from, prev, w, Fx, Fy, g, scratch, B, N, W, H);
    EXPECT(memcmp(copy, from, sizeof copy) == 0, "prev + write differs from copy then write");
    memset(zero, 0, sizeof zero);
    filterbank_write_forward(zero, w, Fx, Fy, g, scratch, B, N, W, H);
    for (int i = 0; i < B * H * W; i++) from0[i] = 99.0f;
    filterbank_write_forward_from(from0, NULL, w, Fx, Fy, g, scratch, B, N, W, H);
    for (int i = 0; i < B * H * W; i++) EXPECT(from0[i] == zero[i], "element %d: %g vs %g", i, from0[i], zero[i]);
    free(scratch);
}

// Gradient checks through the whole attention: params -> F -> read/write.
typedef struct {
    int B, C, N, W, H, write;
    FilterbankPath path;  // of the read
    float *params, *img, *patch;     // inputs
    float *dparams, *dimg, *dpatch;  // their gradients
    float *Fx, *Fy, *g, *dFx, *dFy, *dg, *scratch, *ld_out;
} Ctx;

// The read patch row stride is C*N*N + 3, to exercise ld_patch. C = 1 runs the grey
// functions, C > 1 the channel functions with shared filters.
#define LD (c->C * c->N * c->N + 3)

static void ctx_forward(void *vc, float *out) {
    Ctx *c = vc;
    filterbank_forward(c->Fx, c->Fy, c->g, c->params, c->B, c->N, c->W, c->H);
    if (c->write) {
        memset(out, 0, sizeof(float) * c->B * c->C * c->H * c->W);
        if (c->C == 1)
            filterbank_write_forward(out, c->patch, c->Fx, c->Fy, c->g, c->scratch, c->B, c->N,
                                     c->W, c->H);
        else
            filterbank_write_channels_forward_from(out, out, c->patch, c->Fx, c->Fy, c->g,
                                                   c->scratch, c->B, c->C, c->N, c->W, c->H);
    } else {
        memset(out, 0, sizeof(float) * c->B * LD);
        if (c->path != FILTERBANK_PATH_AUTO)
            filterbank_read_channels_forward_path(out, LD, c->img, c->Fx, c->Fy, c->g, c->scratch,
                                                  c->B, c->C, c->N, c->W, c->H, c->path);
        else if (c->C == 1)
            filterbank_read_forward(out, LD, c->img, c->Fx, c->Fy, c->g, c->scratch, c->B, c->N,
                                    c->W, c->H);
        else
            filterbank_read_channels_forward(out, LD, c->img, c->Fx, c->Fy, c->g, c->scratch,
                                             c->B, c->C, c->N, c->W, c->H);
    }
}

static void ctx_backward(void *vc, const float *dout) {
    Ctx *c = vc;
    int B = c->B, N = c->N, W = c->W, H = c->H;
    memset(c->dFx, 0, sizeof(float) * B * N * W);
    memset(c->dFy, 0, sizeof(float) * B * N * H);
    memset(c->dg, 0, sizeof(float) * B);
    if (c->write && c->C == 1)
        filterbank_write_backward(c->dpatch, c->dFx, c->dFy, c->dg, dout, c->patch, c->Fx, c->Fy,
                                  c->g, c->scratch, B, N, W, H);
    else if (c->write)
        filterbank_write_channels_backward(c->dpatch, c->dFx, c->dFy, c->dg, dout, c->patch,
                                           c->Fx, c->Fy, c->g, c->scratch, B, c->C, N, W, H);
    else if (c->path != FILTERBANK_PATH_AUTO)
        filterbank_read_channels_backward_path(c->dimg, c->dFx, c->dFy, c->dg, dout, LD, c->img,
                                               c->Fx, c->Fy, c->g, c->scratch, B, c->C, N, W, H,
                                               c->path);
    else if (c->C == 1)
        filterbank_read_backward(c->dimg, c->dFx, c->dFy, c->dg, dout, LD, c->img, c->Fx, c->Fy,
                                 c->g, c->scratch, B, N, W, H);
    else
        filterbank_read_channels_backward(c->dimg, c->dFx, c->dFy, c->dg, dout, LD, c->img,
                                          c->Fx, c->Fy, c->g, c->scratch, B, c->C, N, W, H);
    filterbank_backward(c->dparams, c->dFx, c->dFy, c->dg, c->Fx, c->Fy, c->params, B, N, W, H);
}

static void run_gradcheck_path(int write, int N, int C, FilterbankPath path) {
    Rng rng;
    rng_seed(&rng, 11 + write * 7 + N + 100 * (C - 1));
    Ctx c = {.B = 2, .C = C, .N = N, .W = 9, .H = 6, .write = write, .path = path};
    int B = c.B, W = c.W, H = c.H;
    c.params = xcalloc(B * 5, sizeof(float));
    c.dparams = xcalloc(B * 5, sizeof(float));
    c.img = xcalloc(B * C * H * W, sizeof(float));
    c.dimg = xcalloc(B * C * H * W, sizeof(float));
    c.patch = xcalloc(B * C * N * N, sizeof(float));
    c.dpatch = xcalloc(B * C * N * N, sizeof(float));
    c.Fx = xcalloc(B * N * W, sizeof(float));
    c.Fy = xcalloc(B * N * H, sizeof(float));
    c.dFx = xcalloc(B * N * W, sizeof(float));
    c.dFy = xcalloc(B * N * H, sizeof(float));
    c.g = xcalloc(B, sizeof(float));
    c.dg = xcalloc(B, sizeof(float));
    c.scratch = xcalloc(filterbank_scratch_floats(N, W, H), sizeof(float));
    // Window centred-ish, sigma ~ 1 pixel, stride ~ half the span, gamma in [0.6, 1.6].
    for (int b = 0; b < B; b++) {
        float *p = c.params + b * 5;
        p[0] = 0.3f * (2 * rng_uniform(&rng) - 1);
        p[1] = 0.3f * (2 * rng_uniform(&rng) - 1);
        p[2] = 0.5f * (2 * rng_uniform(&rng) - 1);
        p[3] = -0.7f + 0.3f * rng_uniform(&rng);
        p[4] = 0.5f * (2 * rng_uniform(&rng) - 1);
    }
    fill_uniform(c.img, B * C * H * W, -1.0f, 1.0f, &rng);
    fill_uniform(c.patch, B * C * N * N, -1.0f, 1.0f, &rng);
    GradcheckInput in_read[] = {{"params", c.params, c.dparams, B * 5},
                                {"img", c.img, c.dimg, B * C * H * W}};
    GradcheckInput in_write[] = {{"params", c.params, c.dparams, B * 5},
                                 {"patch", c.patch, c.dpatch, B * C * N * N}};
    // eps 1e-2 on float inputs, values O(1): tolerance atol 2e-3 + rtol 1e-2.
    GradcheckOp op = {.ctx = &c, .forward = ctx_forward, .backward = ctx_backward,
                      .n_out = write ? (size_t)B * C * H * W : (size_t)B * (C * N * N + 3),
                      .inputs = write ? in_write : in_read, .n_inputs = 2, .eps = 1e-2,
                      .atol = 2e-3, .rtol = 1e-2};
    EXPECT(gradcheck(write ? "filterbank write" : "filterbank read", &op, &rng) == 0,
           "write %d N %d C %d: see the gradcheck line above", write, N, C);
    // Every one of the five parameters must get a gradient (the check above would pass
    // trivially for a parameter the forward ignored).
    for (int k = 0; k < 5; k++)
        EXPECT(fabsf(c.dparams[k]) > 1e-6f, "d param %d is %g", k, c.dparams[k]);
    free(c.params), free(c.dparams), free(c.img), free(c.dimg), free(c.patch), free(c.dpatch);
    free(c.Fx), free(c.Fy), free(c.dFx), free(c.dFy), free(c.g), free(c.dg), free(c.scratch);
}

static void run_gradcheck(int write, int N, int C) {
    run_gradcheck_path(write, N, C, FILTERBANK_PATH_AUTO);
}

static void test_gradcheck_read_n2(void) { run_gradcheck(0, 2, 1); }
static void test_gradcheck_read_n3(void) { run_gradcheck(0, 3, 1); }
static void test_gradcheck_write_n3(void) { run_gradcheck(1, 3, 1); }
static void test_gradcheck_write_n5(void) { run_gradcheck(1, 5, 1); }
// Colour: three channels through one set of filters; the filter parameters' gradients
// are sums over the channels.
static void test_gradcheck_read_colour(void) { run_gradcheck(0, 3, 3); }
static void test_gradcheck_write_colour(void) { run_gradcheck(1, 3, 3); }
// The read's two paths, each forced (the 9 x 6 image above takes the loops by itself).
static void test_gradcheck_read_loops_and_gemm(void) {
    run_gradcheck_path(0, 3, 1, FILTERBANK_PATH_LOOPS);
    run_gradcheck_path(0, 3, 1, FILTERBANK_PATH_GEMM);
    run_gradcheck_path(0, 3, 3, FILTERBANK_PATH_GEMM);
}

// Channel c of a colour read or write is the grey function on channel c alone, bit for
// bit; and the filter gradients are the sums of the per-channel ones.
static void test_channels_are_per_channel_grey(void) {
    enum { B = 2, C = 3, N = 3, W = 7, H = 5 };
    Rng rng;
    rng_seed(&rng, 77);
    float params[B * 5], Fx[B * N * W], Fy[B * N * H], g[B];
    for (int i = 0; i < B * 5; i++) params[i] = 0.4f * (2 * rng_uniform(&rng) - 1);
    filterbank_forward(Fx, Fy, g, params, B, N, W, H);
    float img[B * C * H * W], patch[B * C * N * N], out[B * C * H * W];
    fill_uniform(img, B * C * H * W, 0.0f, 1.0f, &rng);
    fill_uniform(patch, B * C * N * N, -1.0f, 1.0f, &rng);
    float *scratch = xcalloc(filterbank_scratch_floats(N, W, H), sizeof(float));
    float rc[B * C * N * N];
    filterbank_read_channels_forward(rc, C * N * N, img, Fx, Fy, g, scratch, B, C, N, W, H);
    memset(out, 0, sizeof out);
    filterbank_write_channels_forward_from(out, NULL, patch, Fx, Fy, g, scratch, B, C, N, W, H);
    float dFx_c[B * N * W] = {0}, dFy_c[B * N * H] = {0}, dg_c[B] = {0}, dimg_c[B * C * H * W] = {0};
    filterbank_read_channels_backward(dimg_c, dFx_c, dFy_c, dg_c, patch, C * N * N, img, Fx, Fy,
                                      g, scratch, B, C, N, W, H);
    double dfx_sum[B * N * W] = {0}, dg_sum[B] = {0};
    int same = 1;
    for (int b = 0; b < B; b++)
        for (int ch = 0; ch < C; ch++) {
            const float *x1 = img + ((size_t)b * C + ch) * H * W;
            const float *p1 = patch + ((size_t)b * C + ch) * N * N;
            float r1[N * N], o1[H * W], di1[H * W] = {0}, dfx1[N * W] = {0}, dfy1[N * H] = {0},
                  dg1 = 0.0f;
            filterbank_read_forward(r1, N * N, x1, Fx + b * N * W, Fy + b * N * H, g + b, scratch,
                                    1, N, W, H);
            filterbank_write_forward_from(o1, NULL, p1, Fx + b * N * W, Fy + b * N * H, g + b,
                                          scratch, 1, N, W, H);
            filterbank_read_backward(di1, dfx1, dfy1, &dg1, p1, N * N, x1, Fx + b * N * W,
                                     Fy + b * N * H, g + b, scratch, 1, N, W, H);
            same &= !memcmp(r1, rc + ((size_t)b * C + ch) * N * N, sizeof r1);
            same &= !memcmp(o1, out + ((size_t)b * C + ch) * H * W, sizeof o1);
            same &= !memcmp(di1, dimg_c + ((size_t)b * C + ch) * H * W, sizeof di1);
            for (int k = 0; k < N * W; k++) dfx_sum[b * N * W + k] += dfx1[k];
            dg_sum[b] += dg1;
        }
    EXPECT(same, "a channel of the colour read/write/backward differs from the grey function");
    for (int k = 0; k < B * N * W; k++)
        EXPECT_NEAR(dFx_c[k], dfx_sum[k], 1e-5, 1e-5);
    for (int b = 0; b < B; b++)
        EXPECT_NEAR(dg_c[b], dg_sum[b], 1e-5, 1e-5);
    free(scratch);
}

int main(void) {
    RUN(test_grid_spans_image);
    RUN(test_rows_normalised_and_match_reference);
    RUN(test_matches_double_softmax);
    RUN(test_tiny_sigma_off_image_is_finite);
    RUN(test_products_match_reference);
    RUN(test_read_gemm_matches_loops);
    RUN(test_read_picks_path_by_image_size);
    RUN(test_write_from_is_copy_then_write);
    RUN(test_gradcheck_read_n2);
    RUN(test_gradcheck_read_n3);
    RUN(test_gradcheck_write_n3);
    RUN(test_gradcheck_write_n5);
    RUN(test_gradcheck_read_colour);
    RUN(test_gradcheck_write_colour);
    RUN(test_gradcheck_read_loops_and_gemm);
    RUN(test_channels_are_per_channel_grey);
    return test_summary();
}
