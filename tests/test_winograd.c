// test_winograd.c: Winograd F(2x2, 3x3) convolution (vision/winograd.h) against the plain
// loops of vision/conv.h (conv2d_forward_ref, conv2d_backward_ref): forward, backward-data,
// backward-filter and bias gradient on odd shapes; each transform against its adjoint;
// a gradient check; and the CNN encoder (vision/cnn.h) through Winograd against im2col.
//
// Tolerances: data are O(1) (uniform in [-1, 1]) and the reference sums in double, so the
// difference is float32 rounding only: |got - want| <= 1e-4 + 1e-4 |want|. The transforms
// add and subtract up to 16 values (and U carries halves) around a C-term product, so
// Winograd rounds a few times worse than a direct float sum (about 1e-6 on these sizes);
// a wrong tap, tile edge or missing overlap shows up as O(0.1) errors.
#include <stdlib.h>
#include <string.h>

#include "core/block.h"
#include "core/check.h"
#include "core/rng.h"
#include "tests/support/cnn_check.h"
#include "tests/support/gradcheck.h"
#include "tests/support/test.h"
#include "vision/cnn.h"
#include "vision/conv.h"
#include "vision/winograd.h"

#define ATOL 1e-4
#define RTOL 1e-4

// Number of elements outside |got - want| <= ATOL + RTOL |want|; *worst gets the largest
// difference.
static int count_far(const float *got, const float *want, size_t n, double *worst) {
    int bad = 0;
    *worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        if (d > *worst) *worst = d;
        bad += !(d <= ATOL + RTOL * fabs((double)want[i]));
    }
    return bad;
}

// B, C, H, W, OC: channel counts not multiples of 8, one to three images, the smallest
// image (one tile), non-square ones, a single row or column of tiles.
static const int shapes[][5] = {
    {1, 1, 2, 2, 1}, {2, 3, 4, 6, 5}, {3, 5, 10, 8, 7}, {1, 9, 6, 2, 3},
    {2, 2, 2, 12, 11}, {3, 17, 8, 8, 13}, {1, 4, 14, 4, 2},
};
#define N_SHAPES (int)(sizeof shapes / sizeof shapes[0])

// Forward (with and without bias) for groups of 1, 2 and the whole batch; then backward
// accumulating onto non-zero gradients, every subset of (dinp, dweight, dbias).
static void test_winograd_matches_reference(void) {
    Rng rng;
    rng_seed(&rng, 61);
    for (int s = 0; s < N_SHAPES; s++) {
        const int B = shapes[s][0], C = shapes[s][1], H = shapes[s][2], W = shapes[s][3];
        const int OC = shapes[s][4];
        size_t ni = (size_t)B * C * H * W, nw = (size_t)OC * C * 9, no = (size_t)B * OC * H * W;
        float *inp = xmalloc(ni * 4), *w = xmalloc(nw * 4), *bias = xmalloc(OC * 4);
        float *out = xmalloc(no * 4), *ref = xmalloc(no * 4), *dout = xmalloc(no * 4);
        fill_uniform(inp, ni, -1, 1, &rng);
        fill_uniform(w, nw, -1, 1, &rng);
        fill_uniform(bias, OC, -1, 1, &rng);
        fill_uniform(dout, no, -1, 1, &rng);
        const int groups[3] = {1, 2, B};
        for (int gi = 0; gi < 3; gi++) {
            const int group = groups[gi];
            float *scratch = xmalloc(winograd_scratch_size(group, C, H, W, OC) * 4);
            for (int with_bias = 0; with_bias < 2; with_bias++) {
                const float *bb = with_bias ? bias : NULL;
                fill_uniform(out, no, -9, 9, &rng);  // every element must be written
                winograd_conv3x3_forward(out, inp, w, bb, scratch, group, B, C, H, W, OC);
                conv2d_forward_ref(ref, inp, w, bb, B, C, H, W, OC, 3, 1);
                double worst;
                int bad = count_far(out, ref, no, &worst);
                EXPECT(bad == 0, "shape %d group %d bias %d: %d outputs off (worst %g)", s, group,
                       with_bias, bad, worst);
            }
            for (int mask = 1; mask < 8; mask++) {
                size_t n[3] = {ni, nw, (size_t)OC};
                float *g[3], *gref[3];
                for (int k = 0; k < 3; k++) {
                    g[k] = xmalloc(n[k] * 4), gref[k] = xmalloc(n[k] * 4);
                    fill_uniform(g[k], n[k], -1, 1, &rng);
                    memcpy(gref[k], g[k], n[k] * 4);
                }
                float *gp[3];
                for (int k = 0; k < 3; k++) gp[k] = mask >> k & 1 ? g[k] : NULL;
                winograd_conv3x3_backward(gp[0], gp[1], gp[2], dout, inp, w, scratch, group, B, C,
                                          H, W, OC);
                conv2d_backward_ref(mask & 1 ? gref[0] : NULL, mask & 2 ? gref[1] : NULL,
                                    mask & 4 ? gref[2] : NULL, dout, inp, w, B, C, H, W, OC, 3, 1);
                static const char *what[3] = {"dinp", "dweight", "dbias"};
                for (int k = 0; k < 3; k++) {
                    double worst;
                    int bad = count_far(g[k], gref[k], n[k], &worst);
                    EXPECT(bad == 0, "shape %d group %d mask %d: %s: %d off (worst %g)", s, group,
                           mask, what[k], bad, worst);
                    free(g[k]), free(gref[k]);
                }
            }
            free(scratch);
        }
        free(inp), free(w), free(bias), free(out), free(ref), free(dout);
    }
}

static double dot(const float *a, const float *b, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

// Each transform T and its adjoint T*: <T x, y> = <x, T* y> for random x, y (relative
// 1e-5 of sum |x| |T* y|, float rounding of the sums). The input transform's adjoint is
// the one with overlapping tiles, and an identity like this is what the backward relies on.
static void test_winograd_transforms_are_adjoint(void) {
    Rng rng;
    rng_seed(&rng, 62);
    const int n = 2, C = 3, H = 6, W = 10, OC = 5, T = winograd_tiles(H, W), N = n * T;
    // V and M with their gaps (left zero by the transforms' outputs below: tx is cleared).
    size_t nx = (size_t)n * C * H * W, nv = winograd_transformed_size(C, N);
    size_t nm = winograd_transformed_size(OC, N);
    size_t nw = (size_t)OC * C * 9, nu = winograd_filter_size(OC, C);
    size_t ny = (size_t)n * OC * H * W;
    size_t big = nm > nx ? nm : nx;
    big = big > nv ? big : nv;
    big = big > ny ? big : ny;
    float *x = xmalloc(big * 4), *y = xmalloc(big * 4), *tx = xmalloc(big * 4), *ty = xmalloc(big * 4);
    double lhs, rhs, scale;
    // Input transform: x (n, C, H, W) -> (16, C, N).
    fill_uniform(x, nx, -1, 1, &rng), fill_uniform(y, nv, -1, 1, &rng);
    memset(tx, 0, big * 4);
    winograd_input_transform(tx, x, n, C, H, W);
    memset(ty, 0, nx * 4);
    winograd_input_transform_adjoint_add(ty, y, n, C, H, W);
    lhs = dot(tx, y, nv), rhs = dot(x, ty, nx), scale = (double)nv;
    EXPECT(fabs(lhs - rhs) <= 1e-5 * scale, "input transform: %g vs %g", lhs, rhs);
    // Adjoint accumulates.
    memcpy(tx, ty, nx * 4);
    winograd_input_transform_adjoint_add(ty, y, n, C, H, W);
    int bad = 0;
    for (size_t i = 0; i < nx; i++) bad += fabsf(ty[i] - 2 * tx[i]) > 1e-5f * (1 + fabsf(tx[i]));
    EXPECT(bad == 0, "input adjoint does not accumulate (%d elements)", bad);
    // Filter transform: (OC, C, 3, 3) -> (16, OC, C).
    fill_uniform(x, nw, -1, 1, &rng), fill_uniform(y, nu, -1, 1, &rng);
    winograd_filter_transform(tx, x, OC, C);
    memset(ty, 0, nw * 4);
    winograd_filter_transform_adjoint_add(ty, y, OC, C);
    lhs = dot(tx, y, nu), rhs = dot(x, ty, nw);
    EXPECT(fabs(lhs - rhs) <= 1e-5 * (double)nu, "filter transform: %g vs %g", lhs, rhs);
    // Output transform: (16, OC, N) -> out (OC, n, H, W) (channel-major strides).
    fill_uniform(x, nm, -1, 1, &rng), fill_uniform(y, ny, -1, 1, &rng);
    winograd_output_transform(tx, x, NULL, n, OC, H, W, (size_t)H * W, (size_t)n * H * W);
    memset(ty, 0, big * 4);  // the adjoint leaves M's gaps alone
    winograd_output_transform_adjoint(ty, y, n, OC, H, W, (size_t)H * W, (size_t)n * H * W);
    lhs = dot(tx, y, ny), rhs = dot(x, ty, nm);
    EXPECT(fabs(lhs - rhs) <= 1e-5 * (double)nm, "output transform: %g vs %g", lhs, rhs);
    // Sanity of the identity itself: it fails for a wrong adjoint (y shifted by one).
    lhs = dot(tx, y + 1, ny - 1), rhs = dot(x, ty, nm);
    EXPECT(fabs(lhs - rhs) > 1e-3, "the adjoint identity cannot fail");
    free(x), free(y), free(tx), free(ty);
}

typedef struct {
    float *inp, *w, *bias, *dinp, *dw, *dbias, *scratch;
    int B, C, H, W, OC, group;
} ConvCtx;

static void conv_fwd(void *v, float *out) {
    ConvCtx *c = v;
    winograd_conv3x3_forward(out, c->inp, c->w, c->bias, c->scratch, c->group, c->B, c->C, c->H,
                             c->W, c->OC);
}

static void conv_bwd(void *v, const float *dout) {
    ConvCtx *c = v;
    winograd_conv3x3_backward(c->dinp, c->dw, c->dbias, dout, c->inp, c->w, c->scratch, c->group,
                              c->B, c->C, c->H, c->W, c->OC);
}

// Central differences of the (linear) convolution: eps 1e-2 (no kinks, so a large step
// costs no truncation error and keeps float cancellation small), atol 1e-3, rtol 1e-2,
// every element.
static void test_winograd_gradcheck(void) {
    const int B = 2, C = 3, H = 4, W = 6, OC = 5, group = 1;
    size_t ni = (size_t)B * C * H * W, nw = (size_t)OC * C * 9;
    Rng rng;
    rng_seed(&rng, 63);
    ConvCtx c = {.B = B, .C = C, .H = H, .W = W, .OC = OC, .group = group};
    c.inp = xmalloc(ni * 4), c.w = xmalloc(nw * 4), c.bias = xmalloc(OC * 4);
    c.dinp = xmalloc(ni * 4), c.dw = xmalloc(nw * 4), c.dbias = xmalloc(OC * 4);
    c.scratch = xmalloc(winograd_scratch_size(group, C, H, W, OC) * 4);
    fill_uniform(c.inp, ni, -1, 1, &rng);
    fill_uniform(c.w, nw, -1, 1, &rng);
    fill_uniform(c.bias, OC, -1, 1, &rng);
    GradcheckInput in[3] = {{"input", c.inp, c.dinp, ni}, {"weight", c.w, c.dw, nw},
                            {"bias", c.bias, c.dbias, (size_t)OC}};
    GradcheckOp op = {.ctx = &c, .forward = conv_fwd, .backward = conv_bwd,
                      .n_out = (size_t)B * OC * H * W, .inputs = in, .n_inputs = 3,
                      .eps = 1e-2, .atol = 1e-3, .rtol = 1e-2};
    EXPECT(gradcheck("winograd_conv3x3", &op, &rng) == 0, "gradient check failed");
    free(c.inp), free(c.w), free(c.bias), free(c.dinp), free(c.dw), free(c.dbias), free(c.scratch);
}

// The CNN encoder with its layers through Winograd against the same encoder through im2col
// (which test_vision_conv checks against the reference ops): annotations, every parameter
// gradient and the image gradient, after a forward and two backward passes accumulating
// onto non-zero gradients, for groups of 1, 2 and the whole batch. Tolerance 1e-4 (1 +
// the largest magnitude), float rounding only: a ReLU input or pool gap within rounding of
// its kink could flip a window's winner, which the fixed seed avoids here (the test would
// show it as one large difference).
static void check_cnn_paths(const CnnConfig *cfg, int B, int S, CnnConv conv,
                            const int *want_winograd, Rng *rng) {
    CnnCase c;
    cnn_case_init(&c, cfg, B, S, rng);
    CnnWorkspace ws_ref;
    cnn_workspace_alloc_conv(&ws_ref, cfg, B, S, 1, CNN_CONV_IM2COL);
    for (int i = 0; i < cfg->n_layers; i++) EXPECT(!ws_ref.winograd[i], "im2col layer %d", i);
    cnn_case_reference_start(&c);
    cnn_forward(c.annot_ref, &ws_ref, c.img, &c.p, B);
    for (int k = 0; k < 2; k++) cnn_backward(&c.g_ref, c.dimg_ref, c.dannot, &ws_ref, c.img, &c.p, B);
    cnn_case_expect_mixed(&c);
    const int groups[3] = {1, 2, B};
    for (int t = 0; t < 3; t++) {
        CnnWorkspace ws;
        cnn_workspace_alloc_conv(&ws, cfg, B, S, groups[t], conv);
        for (int i = 0; i < cfg->n_layers; i++)
            EXPECT(ws.winograd[i] == want_winograd[i], "layer %d: winograd %d", i, ws.winograd[i]);
        cnn_case_check(&c, &ws, 9.0f, 1e-4f, groups[t], rng);
        cnn_workspace_free(&ws);
    }
    cnn_workspace_free(&ws_ref);
    cnn_case_free(&c);
}

static void test_cnn_winograd_matches_im2col(void) {
    Rng rng;
    rng_seed(&rng, 64);
    // Every even-sided layer forced through Winograd (the first with 3 input channels);
    // the third layer's side is 5, odd: im2col.
    CnnConfig three = {.in_channels = 3, .n_layers = 3, .channels = {9, 10, 12}};
    const int want3[3] = {1, 1, 0};
    check_cnn_paths(&three, 3, 20, CNN_CONV_WINOGRAD, want3, &rng);
    // The automatic choice: im2col for 2 input channels, Winograd from 8 on; then one layer
    // on 132 x 132 (rows of 66 windows: longer than the fused pooling's row block of 64).
    CnnConfig two = {.in_channels = 2, .n_layers = 2, .channels = {8, 5}};
    const int want2[2] = {0, 1};
    check_cnn_paths(&two, 2, 12, CNN_CONV_AUTO, want2, &rng);
    CnnConfig wide = {.in_channels = 8, .n_layers = 1, .channels = {3}};
    const int want1[1] = {1};
    check_cnn_paths(&wide, 2, 132, CNN_CONV_AUTO, want1, &rng);
}

int main(void) {
    RUN(test_winograd_matches_reference);
    RUN(test_winograd_transforms_are_adjoint);
    RUN(test_winograd_gradcheck);
    RUN(test_cnn_winograd_matches_im2col);
    return test_summary();
}
