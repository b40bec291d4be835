// test_vision_conv.c: conv2d (im2col + gemm) against its plain-loop reference, batched
// im2col / col2im against the plain loops, gradient checks of conv2d, max-pooling and the
// whole CNN encoder, and the encoder's fused, grouped forward and backward against a
// composition of the reference ops (vision/conv.h, vision/cnn.h).
#include <stdlib.h>
#include <string.h>

#include "core/activations.h"
#include "core/block.h"
#include "core/check.h"
#include "core/rng.h"
#include "tests/support/cnn_check.h"
#include "tests/support/gradcheck.h"
#include "tests/support/test.h"
#include "vision/cnn.h"
#include "vision/conv.h"

// Fast conv (forward and all three gradients) against the reference for several shapes.
static void test_conv2d_matches_reference(void) {
    const int shapes[][7] = {
        // B, C, H, W, OC, K, P
        {2, 3, 8, 8, 4, 3, 1}, {1, 1, 5, 7, 2, 3, 0}, {3, 2, 6, 5, 3, 1, 0},
        {2, 4, 9, 6, 5, 5, 2}, {1, 3, 4, 4, 2, 3, 2},
    };
    Rng rng;
    rng_seed(&rng, 1);
    for (int s = 0; s < 5; s++) {
        int B = shapes[s][0], C = shapes[s][1], H = shapes[s][2], W = shapes[s][3];
        int OC = shapes[s][4], K = shapes[s][5], P = shapes[s][6];
        int Ho = conv2d_out_size(H, K, P), Wo = conv2d_out_size(W, K, P);
        size_t ni = (size_t)B * C * H * W, nw = (size_t)OC * C * K * K, no = (size_t)B * OC * Ho * Wo;
        float *inp = xmalloc(ni * 4), *w = xmalloc(nw * 4), *bias = xmalloc(OC * 4);
        float *out = xmalloc(no * 4), *out_ref = xmalloc(no * 4), *dout = xmalloc(no * 4);
        float *col = xmalloc(conv2d_col_size(C, H, W, K, P) * 4);
        fill_uniform(inp, ni, -1, 1, &rng);
        fill_uniform(w, nw, -1, 1, &rng);
        fill_uniform(bias, OC, -1, 1, &rng);
        fill_uniform(dout, no, -1, 1, &rng);
        conv2d_forward(out, inp, w, bias, col, B, C, H, W, OC, K, P);
        conv2d_forward_ref(out_ref, inp, w, bias, B, C, H, W, OC, K, P);
        float scale, d = test_max_abs_diff(out, out_ref, no, &scale);
        EXPECT(d <= 1e-5f * (1 + scale), "shape %d: forward differs by %g (scale %g)", s, d, scale);

        // Backward accumulates: start both from the same non-zero values.
        float *g[3], *g_ref[3];
        size_t n[3] = {ni, nw, (size_t)OC};
        for (int k = 0; k < 3; k++) {
            g[k] = xmalloc(n[k] * 4), g_ref[k] = xmalloc(n[k] * 4);
            fill_uniform(g[k], n[k], -1, 1, &rng);
            memcpy(g_ref[k], g[k], n[k] * 4);
        }
        conv2d_backward(g[0], g[1], g[2], dout, inp, w, col, B, C, H, W, OC, K, P);
        conv2d_backward_ref(g_ref[0], g_ref[1], g_ref[2], dout, inp, w, B, C, H, W, OC, K, P);
        for (int k = 0; k < 3; k++) {
            d = test_max_abs_diff(g[k], g_ref[k], n[k], &scale);
            EXPECT(d <= 1e-5f * (1 + scale), "shape %d grad %d differs by %g (scale %g)", s, k, d, scale);
            free(g[k]), free(g_ref[k]);
        }
        // NULL gradients are skipped.
        conv2d_backward(NULL, NULL, NULL, dout, inp, w, col, B, C, H, W, OC, K, P);
        free(inp), free(w), free(bias), free(out), free(out_ref), free(dout), free(col);
    }
}

// im2col_batch over n images equals the plain loop image by image, laid side by side; and
// col2im_batch_add equals col2im_add_ref image by image. Both exactly: they copy, and
// col2im adds each element's contributions in the same (c, i, j) order as the loop.
static void test_im2col_batch_matches_reference(void) {
    const int shapes[][6] = {
        // n, C, H, W, K, P: "same" (the fast path), valid, wide padding, 1-pixel outputs
        {3, 2, 5, 4, 3, 1}, {2, 3, 6, 6, 3, 0}, {2, 1, 4, 5, 5, 2}, {1, 2, 3, 3, 3, 2},
        {2, 2, 3, 3, 5, 1}, {3, 1, 1, 1, 3, 1}, {2, 2, 7, 1, 3, 1}, {1, 3, 4, 4, 1, 0},
    };
    Rng rng;
    rng_seed(&rng, 11);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int n = shapes[s][0], C = shapes[s][1], H = shapes[s][2], W = shapes[s][3];
        int K = shapes[s][4], P = shapes[s][5];
        int Ho = conv2d_out_size(H, K, P), Wo = conv2d_out_size(W, K, P);
        size_t N = (size_t)Ho * Wo, rows = (size_t)C * K * K, plane = (size_t)C * H * W;
        float *img = xmalloc(n * plane * 4), *col = xmalloc(rows * n * N * 4);
        float *one = xmalloc(rows * N * 4);
        fill_uniform(img, n * plane, -1, 1, &rng);
        fill_uniform(col, rows * n * N, -1, 1, &rng);  // every element must be written
        im2col_batch(col, img, n, C, H, W, K, P);
        int bad = 0;
        for (int b = 0; b < n; b++) {
            im2col_ref(one, img + b * plane, C, H, W, K, P);
            for (size_t r = 0; r < rows; r++)
                bad += memcmp(col + (r * n + b) * N, one + r * N, N * 4) != 0;
        }
        EXPECT(bad == 0, "shape %zu: %d im2col rows differ", s, bad);

        float *acc = xmalloc(n * plane * 4), *acc_ref = xmalloc(n * plane * 4);
        fill_uniform(acc, n * plane, -1, 1, &rng);
        memcpy(acc_ref, acc, n * plane * 4);
        fill_uniform(col, rows * n * N, -1, 1, &rng);
        col2im_batch_add(acc, col, n, C, H, W, K, P);
        for (int b = 0; b < n; b++) {
            for (size_t r = 0; r < rows; r++) memcpy(one + r * N, col + (r * n + b) * N, N * 4);
            col2im_add_ref(acc_ref + b * plane, one, C, H, W, K, P);
        }
        EXPECT(memcmp(acc, acc_ref, n * plane * 4) == 0, "shape %zu: col2im differs", s);
        free(img), free(col), free(one), free(acc), free(acc_ref);
    }
}

static void test_conv2d_known_values(void) {
    // One 3x3 input, a 3x3 kernel of ones, pad 1: each output is the sum of its neighbourhood.
    float inp[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[9], out[9], col[2 * 9 * 9];
    for (int i = 0; i < 9; i++) w[i] = 1.0f;
    float bias = 0.5f;
    conv2d_forward(out, inp, w, &bias, col, 1, 1, 3, 3, 1, 3, 1);
    const float want[9] = {12, 21, 16, 27, 45, 33, 24, 39, 28};
    for (int i = 0; i < 9; i++) EXPECT_NEAR(out[i], want[i] + 0.5f, 1e-5, 0);
}

typedef struct {
    float *inp, *w, *bias, *col;
    float *dinp, *dw, *dbias;
    int B, C, H, W, OC, K, P;
} ConvCtx;

static void conv_fwd(void *p, float *out) {
    ConvCtx *c = p;
    conv2d_forward(out, c->inp, c->w, c->bias, c->col, c->B, c->C, c->H, c->W, c->OC, c->K, c->P);
}

static void conv_bwd(void *p, const float *dout) {
    ConvCtx *c = p;
    conv2d_backward(c->dinp, c->dw, c->dbias, dout, c->inp, c->w, c->col, c->B, c->C, c->H, c->W,
                    c->OC, c->K, c->P);
}

static void test_conv2d_gradcheck(void) {
    Rng rng;
    rng_seed(&rng, 2);
    ConvCtx c = {.B = 2, .C = 2, .H = 5, .W = 4, .OC = 3, .K = 3, .P = 1};
    size_t ni = (size_t)c.B * c.C * c.H * c.W, nw = (size_t)c.OC * c.C * 9;
    size_t no = (size_t)c.B * c.OC * c.H * c.W;
    c.inp = xmalloc(ni * 4), c.w = xmalloc(nw * 4), c.bias = xmalloc(c.OC * 4);
    c.dinp = xmalloc(ni * 4), c.dw = xmalloc(nw * 4), c.dbias = xmalloc(c.OC * 4);
    c.col = xmalloc(conv2d_col_size(c.C, c.H, c.W, 3, 1) * 4);
    fill_uniform(c.inp, ni, -1, 1, &rng);
    fill_uniform(c.w, nw, -1, 1, &rng);
    fill_uniform(c.bias, c.OC, -1, 1, &rng);
    GradcheckInput in[3] = {{"inp", c.inp, c.dinp, ni}, {"weight", c.w, c.dw, nw},
                            {"bias", c.bias, c.dbias, (size_t)c.OC}};
    // eps 1e-3 on a linear op: float rounding of the loss dominates; atol 1e-3, rtol 1e-2.
    GradcheckOp op = {.ctx = &c, .forward = conv_fwd, .backward = conv_bwd, .n_out = no,
                      .inputs = in, .n_inputs = 3, .eps = 1e-3, .atol = 1e-3, .rtol = 1e-2};
    EXPECT(gradcheck("conv2d", &op, &rng) == 0, "conv2d gradient check failed");
    free(c.inp), free(c.w), free(c.bias), free(c.dinp), free(c.dw), free(c.dbias), free(c.col);
}

typedef struct {
    float *inp, *dinp;
    int *argmax;
    int B, C, H, W;
} PoolCtx;

static void pool_fwd(void *p, float *out) {
    PoolCtx *c = p;
    maxpool2_forward(out, c->argmax, c->inp, c->B, c->C, c->H, c->W);
}

static void pool_bwd(void *p, const float *dout) {
    PoolCtx *c = p;
    maxpool2_backward(c->dinp, dout, c->argmax, c->B, c->C, c->H, c->W);
}

// Values are a shuffled ladder 0.05 apart, so no perturbation of eps = 1e-3 changes a winner.
static void fill_ladder(float *x, size_t n, Rng *rng) {
    int *perm = xmalloc(n * sizeof(int));
    for (size_t i = 0; i < n; i++) perm[i] = (int)i;
    rng_shuffle(rng, perm, (int)n);
    for (size_t i = 0; i < n; i++) x[i] = -1.0f + 0.05f * perm[i];
    free(perm);
}

static void test_maxpool_forward_and_gradcheck(void) {
    Rng rng;
    rng_seed(&rng, 3);
    PoolCtx c = {.B = 2, .C = 2, .H = 5, .W = 6};  // odd H: the last row is ignored
    size_t ni = (size_t)c.B * c.C * c.H * c.W, no = (size_t)c.B * c.C * 2 * 3;
    c.inp = xmalloc(ni * 4), c.dinp = xmalloc(ni * 4), c.argmax = xmalloc(no * sizeof(int));
    fill_ladder(c.inp, ni, &rng);
    float *out = xmalloc(no * 4);
    maxpool2_forward(out, c.argmax, c.inp, c.B, c.C, c.H, c.W);
    for (int p = 0; p < c.B * c.C; p++)
        for (int y = 0; y < 2; y++)
            for (int x = 0; x < 3; x++) {
                const float *s = c.inp + (size_t)p * c.H * c.W;
                float m = s[2 * y * c.W + 2 * x];
                for (int dy = 0; dy < 2; dy++)
                    for (int dx = 0; dx < 2; dx++) m = fmaxf(m, s[(2 * y + dy) * c.W + 2 * x + dx]);
                int k = (p * 2 + y) * 3 + x;
                EXPECT(out[k] == m, "pool out %d = %g, max %g", k, out[k], m);
                EXPECT(s[c.argmax[k]] == m, "argmax %d points at %g", k, s[c.argmax[k]]);
            }
    GradcheckInput in[1] = {{"inp", c.inp, c.dinp, ni}};
    GradcheckOp op = {.ctx = &c, .forward = pool_fwd, .backward = pool_bwd, .n_out = no,
                      .inputs = in, .n_inputs = 1, .eps = 1e-3, .atol = 1e-3, .rtol = 1e-2};
    EXPECT(gradcheck("maxpool2", &op, &rng) == 0, "maxpool gradient check failed");
    free(c.inp), free(c.dinp), free(c.argmax), free(out);
}

// The CNN's annotations equal conv_ref -> ReLU -> pool, layer by layer, transposed to (B, L, D).
static void test_cnn_forward_matches_composition(void) {
    CnnConfig cfg;
    cnn_config_default(&cfg);
    Error err;
    EXPECT(cnn_config_parse(&cfg, "4,6", "--cnn", &err) == 0, "%s", err.msg);
    EXPECT(cfg.n_layers == 2 && cfg.channels[1] == 6 && cfg.in_channels == 3, "parsed config");
    EXPECT(cnn_config_parse(&cfg, "4,,6", "--cnn", &err) == -1 && strstr(err.msg, "--cnn"), "bad list accepted");
    EXPECT(cnn_config_parse(&cfg, "4,x", "--cnn", &err) == -1, "bad list accepted");
    EXPECT(cnn_config_parse(&cfg, "", "--cnn", &err) == -1, "empty list accepted");
    EXPECT(cnn_config_parse(&cfg, "0", "--cnn", &err) == -1, "zero channels accepted");
    EXPECT(cfg.n_layers == 2, "failed parse changed the config");
    int B = 2, S = 12, G = cnn_grid_size(&cfg, S), D = cnn_dim(&cfg), L = G * G;
    EXPECT(G == 3 && D == 6, "grid %d, dim %d", G, D);
    CnnParams p;
    Block params = {0};
    cnn_register(&p, &params, "enc", &cfg);
    block_alloc(&params);
    EXPECT(block_find(&params, "enc.conv1.weight") != NULL, "tensor name");
    size_t total = 0;
    for (int i = 0; i < params.count; i++) total += params.tensors[i].numel;
    EXPECT(params.count == 4 && total == (size_t)4 * 3 * 9 + 4 + 6 * 4 * 9 + 6, "%d tensors, %zu floats",
           params.count, total);
    Rng rng;
    rng_seed(&rng, 4);
    cnn_init(&p, &rng);
    // He init: weight variance about 2 / fan_in.
    double ss = 0;
    for (int i = 0; i < 6 * 4 * 9; i++) ss += p.weight[1][i] * p.weight[1][i];
    EXPECT(fabs(ss / (6 * 4 * 9) - 2.0 / 36) < 0.5 * 2.0 / 36, "weight variance %g", ss / 216);
    fill_uniform(p.bias[0], 4, -0.1f, 0.1f, &rng);
    fill_uniform(p.bias[1], 6, -0.1f, 0.1f, &rng);

    float *img = xmalloc((size_t)B * 3 * S * S * 4);
    fill_uniform(img, (size_t)B * 3 * S * S, 0, 1, &rng);
    CnnWorkspace ws;
    cnn_workspace_alloc(&ws, &cfg, B + 1, S);  // capacity larger than used
    EXPECT(ws.bytes == cnn_workspace_bytes(&cfg, B + 1, S), "workspace bytes");
    float *annot = xmalloc((size_t)B * L * D * 4);
    cnn_forward(annot, &ws, img, &p, B);

    float *c1 = xmalloc((size_t)B * 4 * S * S * 4), *p1 = xmalloc((size_t)B * 4 * 6 * 6 * 4);
    float *c2 = xmalloc((size_t)B * 6 * 6 * 6 * 4), *p2 = xmalloc((size_t)B * 6 * 3 * 3 * 4);
    int *am = xmalloc((size_t)B * 4 * 6 * 6 * sizeof(int));
    conv2d_forward_ref(c1, img, p.weight[0], p.bias[0], B, 3, S, S, 4, 3, 1);
    for (int i = 0; i < B * 4 * S * S; i++) c1[i] = fmaxf(c1[i], 0.0f);
    maxpool2_forward(p1, am, c1, B, 4, S, S);
    conv2d_forward_ref(c2, p1, p.weight[1], p.bias[1], B, 4, 6, 6, 6, 3, 1);
    for (int i = 0; i < B * 6 * 36; i++) c2[i] = fmaxf(c2[i], 0.0f);
    maxpool2_forward(p2, am, c2, B, 6, 6, 6);
    int nonzero = 0;
    for (int b = 0; b < B; b++)
        for (int l = 0; l < L; l++)
            for (int d = 0; d < D; d++) {
                float want = p2[((size_t)b * D + d) * L + l], got = annot[((size_t)b * L + l) * D + d];
                EXPECT_NEAR(got, want, 1e-5, 1e-5);
                nonzero += want != 0.0f;
            }
    EXPECT(nonzero > B * L * D / 4, "only %d non-zero annotations: test too weak", nonzero);
    free(c1), free(p1), free(c2), free(p2), free(am), free(annot), free(img);
    cnn_workspace_free(&ws);
    block_free(&params);
}

// The reference CNN: conv2d_forward_ref, ReLU, maxpool2_forward per layer; backward through
// maxpool2_backward, the ReLU mask and conv2d_backward_ref. Accumulates into g and dimg.
static void cnn_reference(float *annot, CnnParams *g, float *dimg, const float *dannot,
                          const CnnConfig *cfg, const CnnParams *p, const float *img, int B, int S) {
    int nl = cfg->n_layers;
    float *act[CNN_MAX_LAYERS + 1], *relu[CNN_MAX_LAYERS];
    int *am[CNN_MAX_LAYERS];
    act[0] = (float *)img;
    for (int i = 0, C = cfg->in_channels; i < nl; i++) {
        int s = S >> i, OC = cfg->channels[i];
        size_t n = (size_t)B * OC * s * s, np = (size_t)B * OC * (s / 2) * (s / 2);
        relu[i] = xmalloc(n * 4), act[i + 1] = xmalloc(np * 4), am[i] = xmalloc(np * sizeof(int));
        conv2d_forward_ref(relu[i], act[i], p->weight[i], p->bias[i], B, C, s, s, OC, 3, 1);
        for (size_t k = 0; k < n; k++) relu[i][k] = fmaxf(relu[i][k], 0.0f);
        maxpool2_forward(act[i + 1], am[i], relu[i], B, OC, s, s);
        C = OC;
    }
    int G = cnn_grid_size(cfg, S), L = G * G, D = cnn_dim(cfg);
    float *dout = xmalloc((size_t)B * L * D * 4);
    for (int b = 0; b < B; b++)
        for (int l = 0; l < L; l++)
            for (int d = 0; d < D; d++) {
                annot[((size_t)b * L + l) * D + d] = act[nl][((size_t)b * D + d) * L + l];
                dout[((size_t)b * D + d) * L + l] = dannot[((size_t)b * L + l) * D + d];
            }
    for (int i = nl - 1; i >= 0; i--) {
        int s = S >> i, OC = cfg->channels[i], C = i ? cfg->channels[i - 1] : cfg->in_channels;
        size_t n = (size_t)B * OC * s * s;
        float *dconv = xcalloc(n, 4), *dpre = xcalloc(n, 4);
        maxpool2_backward(dconv, dout, am[i], B, OC, s, s);
        relu_backward(dpre, dconv, relu[i], n);
        float *din = i ? xcalloc((size_t)B * C * s * s, 4) : dimg;
        conv2d_backward_ref(din, g->weight[i], g->bias[i], dpre, act[i], p->weight[i], B, C, s, s,
                            OC, 3, 1);
        free(dout), free(dconv), free(dpre);
        dout = din;
    }
    for (int i = 0; i < nl; i++) free(relu[i]), free(act[i + 1]), free(am[i]);
}

// cnn_forward and cnn_backward (fused bias, ReLU and pooling; images in groups) against
// the reference composition, for several group sizes (one, uneven, the whole batch, more
// than the batch). Backward runs twice (it must leave the forward's activations intact) and
// accumulates onto non-zero gradients. Configurations: 20 x 20 input through three layers
// (rows of 10, 5 and 2 windows: the row kernels' 8-wide part and their remainder; the
// 5 x 5 third layer has an odd row and column that pooling drops), and one layer on
// 130 x 130 (rows of 65 windows: longer than one row block). Tolerance 1e-5 (1 + the
// largest magnitude of the reference): the fused, grouped encoder sums in another order
// (GEMM, partial sums) than the reference's double loops.
static void check_cnn_against_reference(const CnnConfig *cfg, int B, int S, Rng *rng) {
    const int groups[] = {1, 2, 3, B, B + 3};
    CnnCase c;
    cnn_case_init(&c, cfg, B, S, rng);
    cnn_case_reference_start(&c);
    for (int k = 0; k < 2; k++)
        cnn_reference(c.annot_ref, &c.g_ref, c.dimg_ref, c.dannot, cfg, &c.p, c.img, B, S);
    cnn_case_expect_mixed(&c);
    for (size_t t = 0; t < sizeof groups / sizeof groups[0]; t++) {
        CnnWorkspace ws;
        cnn_workspace_alloc_grouped(&ws, cfg, B, S, groups[t]);
        EXPECT(ws.group == (groups[t] < B ? groups[t] : B), "group %d", ws.group);
        cnn_case_check(&c, &ws, 1.0f, 1e-5f, groups[t], rng);
        cnn_workspace_free(&ws);
    }
    cnn_case_free(&c);
}

static void test_cnn_matches_reference_composition(void) {
    Rng rng;
    rng_seed(&rng, 12);
    CnnConfig three = {.in_channels = 2, .n_layers = 3, .channels = {3, 4, 5}};
    check_cnn_against_reference(&three, 5, 20, &rng);
    CnnConfig wide = {.in_channels = 1, .n_layers = 1, .channels = {2}};
    check_cnn_against_reference(&wide, 2, 130, &rng);
}

// Exact ties: with small integer images and weights many windows hold equal positive
// maxima. The workspace's window codes must name the first maximum in row-major order
// (maxpool2_forward's winner) and mark the windows the ReLU passed.
static void test_cnn_pool_ties_pick_first_maximum(void) {
    CnnConfig cfg = {.in_channels = 1, .n_layers = 1, .channels = {4}};
    const int B = 3, S = 12, OC = 4, h = S / 2;
    CnnParams p;
    Block params = {0};
    cnn_register(&p, &params, "enc", &cfg);
    block_alloc(&params);
    Rng rng;
    rng_seed(&rng, 13);
    for (int k = 0; k < OC * 9; k++) p.weight[0][k] = (float)((int)rng_below(&rng, 3) - 1);
    for (int k = 0; k < OC; k++) p.bias[0][k] = 0.5f;
    float *img = xmalloc((size_t)B * S * S * 4), *annot = xmalloc((size_t)B * OC * h * h * 4);
    for (int k = 0; k < B * S * S; k++) img[k] = (float)rng_below(&rng, 2);
    CnnWorkspace ws;
    cnn_workspace_alloc(&ws, &cfg, B, S);
    cnn_forward(annot, &ws, img, &p, B);
    float *relu = xmalloc((size_t)B * OC * S * S * 4), *pool = xmalloc((size_t)B * OC * h * h * 4);
    int *am = xmalloc((size_t)B * OC * h * h * sizeof(int));
    conv2d_forward_ref(relu, img, p.weight[0], p.bias[0], B, 1, S, S, OC, 3, 1);
    for (int k = 0; k < B * OC * S * S; k++) relu[k] = fmaxf(relu[k], 0.0f);
    maxpool2_forward(pool, am, relu, B, OC, S, S);
    int ties = 0, wrong = 0;
    for (int q = 0; q < B * OC; q++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < h; x++) {
                size_t k = ((size_t)q * h + y) * h + x;
                const float *w = relu + (size_t)q * S * S + 2 * y * S + 2 * x;
                int eq = (w[0] == pool[k]) + (w[1] == pool[k]) + (w[S] == pool[k]) + (w[S + 1] == pool[k]);
                ties += pool[k] > 0.0f && eq > 1;
                int pos = am[k] - (2 * y * S + 2 * x), want = (pos >= S ? 2 : 0) + (pos % S);
                want += pool[k] > 0.0f ? 4 : 0;
                wrong += ws.argmax[0][k] != want;
            }
    EXPECT(ties >= 10, "only %d windows with tied positive maxima: test too weak", ties);
    EXPECT(wrong == 0, "%d window codes differ from maxpool2_forward's winners", wrong);
    free(img), free(annot), free(relu), free(pool), free(am);
    cnn_workspace_free(&ws);
    block_free(&params);
}

typedef struct {
    CnnParams *p, *g;
    CnnWorkspace *ws;
    float *img, *dimg;
    int B;
} CnnCtx;

static void cnn_fwd(void *v, float *out) {
    CnnCtx *c = v;
    cnn_forward(out, c->ws, c->img, c->p, c->B);
}

static void cnn_bwd(void *v, const float *dout) {
    CnnCtx *c = v;
    cnn_backward(c->g, c->dimg, dout, c->ws, c->img, c->p, c->B);
}

// How far the CNN's forward pass at these values is from a kink: the smallest |ReLU input|
// and the smallest gap between the winner and the runner-up of a pool window, over all
// units (recomputed with the reference ops). Central differences are only valid when a
// perturbation of eps cannot cross a kink.
static float kink_distance(const CnnConfig *cfg, const CnnParams *p, const float *img, int B, int S) {
    float dist = INFINITY;
    int C = cfg->in_channels, s = S;
    float *in = xmalloc((size_t)B * C * S * S * sizeof(float));
    memcpy(in, img, (size_t)B * C * S * S * sizeof(float));
    for (int i = 0; i < cfg->n_layers; i++) {
        int OC = cfg->channels[i];
        size_t n = (size_t)B * OC * s * s;
        float *pre = xmalloc(n * sizeof(float));
        conv2d_forward_ref(pre, in, p->weight[i], p->bias[i], B, C, s, s, OC, 3, 1);
        for (size_t k = 0; k < n; k++) {
            dist = fminf(dist, fabsf(pre[k]));
            pre[k] = fmaxf(pre[k], 0.0f);
        }
        free(in);
        in = xmalloc((size_t)B * OC * (s / 2) * (s / 2) * sizeof(float));
        for (int q = 0; q < B * OC; q++)
            for (int y = 0; y < s / 2; y++)
                for (int x = 0; x < s / 2; x++) {
                    const float *w = pre + (size_t)q * s * s + 2 * y * s + 2 * x;
                    float v[4] = {w[0], w[1], w[s], w[s + 1]}, best = -INFINITY, second = -INFINITY;
                    for (int k = 0; k < 4; k++) {
                        if (v[k] > best) second = best, best = v[k];
                        else if (v[k] > second) second = v[k];
                    }
                    // A tie among zeros (all four ReLU inputs negative) is flat, not a kink.
                    if (best > 0.0f) dist = fminf(dist, best - second);
                    in[((size_t)q * (s / 2) + y) * (s / 2) + x] = best;
                }
        free(pre);
        C = OC, s /= 2;
    }
    free(in);
    return dist;
}

// B images through the CNN in groups of `group` (the last group shorter when it does not
// divide B).
static void check_cnn_gradients(int B, int group) {
    CnnConfig cfg = {.in_channels = 1, .n_layers = 2, .channels = {2, 3}};
    int S = 8;
    CnnParams p, g;
    Block params = {0}, grads = {0};
    cnn_register(&p, &params, "cnn", &cfg);
    cnn_register(&g, &grads, "cnn", &cfg);
    block_alloc(&params);
    block_alloc(&grads);
    size_t ni = (size_t)B * 1 * S * S;
    float *img = xmalloc(ni * 4), *dimg = xmalloc(ni * 4);
    Rng rng;
    rng_seed(&rng, 4 + (uint64_t)group);
    // Draw values until every ReLU input and pool gap is at least `margin` from its kink:
    // an eps = 1e-3 step moves any unit by far less, so the loss is smooth where probed.
    const float margin = 0.01f;
    int tries = 0;
    float dist = 0.0f;
    do {
        cnn_init(&p, &rng);
        fill_uniform(p.bias[0], 2, 0.0f, 0.2f, &rng);
        fill_uniform(p.bias[1], 3, 0.0f, 0.2f, &rng);
        fill_uniform(img, ni, -1, 1, &rng);
        dist = kink_distance(&cfg, &p, img, B, S);
    } while (dist < margin && ++tries < 20000);
    EXPECT(dist >= margin, "no kink-free draw in %d tries", tries);
    if (getenv("VISION_TEST_VERBOSE")) printf("  kink-free draw after %d tries (distance %g)\n", tries, dist);
    CnnWorkspace ws;
    cnn_workspace_alloc_grouped(&ws, &cfg, B, S, group);
    CnnCtx c = {&p, &g, &ws, img, dimg, B};
    int L = cnn_grid_size(&cfg, S) * cnn_grid_size(&cfg, S);
    // One gradient input per parameter tensor, plus the images.
    GradcheckInput in[5] = {{"images", img, dimg, ni}};
    int k = 1;
    for (int i = 0; i < 2; i++) {
        const BlockTensor *tw = &params.tensors[2 * i], *tb = &params.tensors[2 * i + 1];
        in[k++] = (GradcheckInput){tw->name, p.weight[i], g.weight[i], tw->numel};
        in[k++] = (GradcheckInput){tb->name, p.bias[i], g.bias[i], tb->numel};
    }
    // eps 1e-3, atol 2e-3, rtol 2e-2 (two stacked layers of float rounding); all elements.
    GradcheckOp op = {.ctx = &c, .forward = cnn_fwd, .backward = cnn_bwd,
                      .n_out = (size_t)B * L * cnn_dim(&cfg), .inputs = in, .n_inputs = 5,
                      .eps = 1e-3, .atol = 2e-3, .rtol = 2e-2};
    EXPECT(gradcheck("cnn", &op, &rng) == 0, "cnn gradient check failed (B %d, group %d)", B, group);
    free(img), free(dimg);
    cnn_workspace_free(&ws);
    block_free(&params);
    block_free(&grads);
}

static void test_cnn_gradcheck(void) {
    check_cnn_gradients(2, 1);
    check_cnn_gradients(3, 2);
}

int main(void) {
    RUN(test_conv2d_matches_reference);
    RUN(test_conv2d_known_values);
    RUN(test_im2col_batch_matches_reference);
    RUN(test_conv2d_gradcheck);
    RUN(test_maxpool_forward_and_gradcheck);
    RUN(test_cnn_forward_matches_composition);
    RUN(test_cnn_matches_reference_composition);
    RUN(test_cnn_pool_ties_pick_first_maximum);
    RUN(test_cnn_gradcheck);
    return test_summary();
}
