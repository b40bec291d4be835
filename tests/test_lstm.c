// test_lstm.c: lstm_forward_xh, the LSTM step on an input the caller assembled in place
// (seq/lstm.h), against lstm_forward (bit for bit: the same GEMM and elementwise code on
// the same values) and against the plain double-precision reference lstm_forward_ref; and
// lstm_forward_packed (the weights packed, core/gemm_packed.h) against the reference, and
// lstm_forward_packed_from (the input's first columns' product taken beforehand); and
// lstm_gates_backward with its caller's GEMM against lstm_backward;
// and lstm_backward_packed against lstm_backward and a double sum for the input gradients.
// (The cell's gradient checks and its other reference tests are in test_ops.c.)
//
// Tolerance against lstm_forward_ref: |fast - ref| <= 1e-5 + 1e-5 |ref| (float GEMM vs
// double sums of <= 60 terms, and the 4e-7 approximations of core/activations.h).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/rng.h"
#include "seq/lstm.h"
#include "tests/support/gradcheck.h"
#include "tests/support/test.h"

#define REF_ATOL 1e-5
#define REF_RTOL 1e-5

static float *uniform(size_t n, float lo, float hi, Rng *rng) {
    float *x = xmalloc((n ? n : 1) * sizeof(float));
    fill_uniform(x, n, lo, hi, rng);
    return x;
}

// One shape: xh rows of stride ld > I + H (the extra columns hold garbage that must not
// be read), with and without a previous state.
static void check_shape(int B, int I, int H, int pad, int with_state, Rng *rng) {
    int K = I + H, ld = K + pad;
    size_t bh = (size_t)B * H;
    float *x = uniform((size_t)B * I, -1, 1, rng), *hp = uniform(bh, -1, 1, rng);
    float *cp = uniform(bh, -2, 2, rng), *W = uniform((size_t)4 * H * K, -0.7f, 0.7f, rng);
    float *b = uniform((size_t)4 * H, -0.5f, 0.5f, rng);
    float *xh_wide = uniform((size_t)B * ld, 1e6f, 2e6f, rng);  // garbage everywhere first
    for (int r = 0; r < B; r++) {
        memcpy(xh_wide + (size_t)r * ld, x + (size_t)r * I, sizeof(float) * I);
        for (int k = 0; k < H; k++) xh_wide[(size_t)r * ld + I + k] = with_state ? hp[r * H + k] : 0.0f;
    }
    float *h1 = xmalloc(bh * sizeof(float)), *c1 = xmalloc(bh * sizeof(float));
    float *g1 = xmalloc(4 * bh * sizeof(float)), *xh = xmalloc((size_t)B * K * sizeof(float));
    float *h2 = xmalloc(bh * sizeof(float)), *c2 = xmalloc(bh * sizeof(float));
    float *g2 = xmalloc(4 * bh * sizeof(float));
    float *h3 = xmalloc(bh * sizeof(float)), *c3 = xmalloc(bh * sizeof(float));
    float *g3 = xmalloc(4 * bh * sizeof(float));
    float *h4 = xmalloc(bh * sizeof(float)), *c4 = xmalloc(bh * sizeof(float));
    float *g4 = xmalloc(4 * bh * sizeof(float));
    PackedMatrix Wt;
    packed_alloc(&Wt, K, 4 * H);
    packed_pack(&Wt, true, W, K);
    lstm_forward_packed(h4, c4, g4, xh_wide, ld, with_state ? cp : NULL, &Wt, b, NULL, B, I, H);
    packed_free(&Wt);
    // The first S input columns' product beforehand: pre0 = b + xh[:, :S] W[:, :S]^T.
    int S = I / 2;
    float *h5 = xmalloc(bh * sizeof(float)), *c5 = xmalloc(bh * sizeof(float));
    float *g5 = xmalloc(4 * bh * sizeof(float)), *pre0 = xmalloc(4 * bh * sizeof(float));
    for (int r = 0; r < B; r++) memcpy(pre0 + (size_t)r * 4 * H, b, sizeof(float) * 4 * H);
    if (S) gemm(false, true, B, 4 * H, S, 1.0f, xh_wide, ld, W, K, 1.0f, pre0, 4 * H);
    packed_alloc(&Wt, K - S, 4 * H);
    packed_pack(&Wt, true, W + S, K);
    lstm_forward_packed_from(h5, c5, g5, pre0, xh_wide + S, ld, with_state ? cp : NULL, &Wt, NULL,
                             B, I - S, H);
    packed_free(&Wt);
    lstm_forward(h1, c1, g1, xh, x, with_state ? hp : NULL, with_state ? cp : NULL, W, b, B, I, H);
    lstm_forward_xh(h2, c2, g2, xh_wide, ld, with_state ? cp : NULL, W, b, B, I, H);
    lstm_forward_ref(h3, c3, g3, x, with_state ? hp : NULL, with_state ? cp : NULL, W, b, NULL, B, I,
                     H);
    EXPECT(!memcmp(h1, h2, bh * sizeof(float)) && !memcmp(c1, c2, bh * sizeof(float)) &&
               !memcmp(g1, g2, 4 * bh * sizeof(float)),
           "B %d I %d H %d pad %d state %d: lstm_forward_xh differs from lstm_forward", B, I, H,
           pad, with_state);
    for (size_t i = 0; i < bh; i++) {
        EXPECT_NEAR(h2[i], h3[i], REF_ATOL, REF_RTOL);
        EXPECT_NEAR(c2[i], c3[i], REF_ATOL, REF_RTOL);
        EXPECT_NEAR(h4[i], h3[i], REF_ATOL, REF_RTOL);
        EXPECT_NEAR(c4[i], c3[i], REF_ATOL, REF_RTOL);
        EXPECT_NEAR(h5[i], h3[i], REF_ATOL, REF_RTOL);
        EXPECT_NEAR(c5[i], c3[i], REF_ATOL, REF_RTOL);
    }
    for (size_t i = 0; i < 4 * bh; i++) {
        EXPECT_NEAR(g2[i], g3[i], REF_ATOL, REF_RTOL);
        EXPECT_NEAR(g4[i], g3[i], REF_ATOL, REF_RTOL);
        EXPECT_NEAR(g5[i], g3[i], REF_ATOL, REF_RTOL);
    }
    float *bufs[] = {x,  hp, cp, W,  b,  xh_wide, h1, c1, g1, xh, h2,  c2,
                     g2, h3, c3, g3, h4, c4,      g4, h5, c5, g5, pre0};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
}

static void test_lstm_forward_xh_matches(void) {
    Rng rng;
    rng_seed(&rng, 4071);
    const int shapes[][4] = {{1, 1, 1, 0}, {3, 5, 4, 3}, {7, 20, 16, 9}, {5, 33, 9, 1}, {4, 0, 12, 5}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int with_state = 0; with_state < 2; with_state++)
            check_shape(shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], with_state, &rng);
}

// lstm_gates_backward (in place on the gates) then dxh = dgates @ W is lstm_backward: the
// same gate gradients bit for bit, the same dc_prev and bias gradient, and dx, dh_prev to float rounding
// (one GEMM against another of the same product), with and without a previous state.
static void test_gates_backward_matches(void) {
    Rng rng;
    rng_seed(&rng, 812);
    const int B = 5, I = 7, H = 6, K = I + H, G = 4 * H;
    for (int with_state = 0; with_state < 2; with_state++) {
        float *x = uniform((size_t)B * I, -1, 1, &rng), *hp = uniform((size_t)B * H, -1, 1, &rng);
        float *cp = uniform((size_t)B * H, -2, 2, &rng), *W = uniform((size_t)G * K, -0.7f, 0.7f, &rng);
        float *b = uniform(G, -0.5f, 0.5f, &rng), *dh = uniform((size_t)B * H, -1, 1, &rng);
        float *dc = uniform((size_t)B * H, -1, 1, &rng);
        float *h = xmalloc(sizeof(float) * B * H), *c = xmalloc(sizeof(float) * B * H);
        float *gates = xmalloc(sizeof(float) * B * G), *xh = xmalloc(sizeof(float) * B * K);
        lstm_forward(h, c, gates, xh, x, with_state ? hp : NULL, with_state ? cp : NULL, W, b, B, I, H);
        float *scratch = xcalloc((size_t)lstm_scratch_floats(B, I, H), sizeof(float));
        float *dx1 = xcalloc((size_t)B * I, sizeof(float)), *dhp1 = xcalloc((size_t)B * H, sizeof(float));
        float *dcp1 = xcalloc((size_t)B * H, sizeof(float)), *db = xcalloc(G, sizeof(float));
        lstm_backward(dx1, with_state ? dhp1 : NULL, with_state ? dcp1 : NULL, NULL, db, dh, dc, gates,
                      xh, with_state ? cp : NULL, c, W, scratch, B, I, H);
        float *dcp2 = xcalloc((size_t)B * H, sizeof(float)), *dxh = xmalloc(sizeof(float) * B * K);
        float *db2 = xcalloc(G, sizeof(float));
        lstm_gates_backward(gates, with_state ? dcp2 : NULL, dh, dc, with_state ? cp : NULL, c, NULL, NULL,
                            db2, B, H);
        EXPECT(!memcmp(gates, scratch, sizeof(float) * B * G), "state %d: gate gradients differ", with_state);
        EXPECT(!memcmp(dcp1, dcp2, sizeof(float) * B * H), "state %d: dc_prev differs", with_state);
        EXPECT(!memcmp(db, db2, sizeof(float) * G), "state %d: bias gradients differ", with_state);
        gemm(false, false, B, K, G, 1.0f, gates, G, W, K, 0.0f, dxh, K);
        for (int r = 0; r < B; r++) {
            for (int k = 0; k < I; k++) EXPECT_NEAR(dxh[r * K + k], dx1[r * I + k], 1e-6, 1e-5);
            if (with_state)
                for (int k = 0; k < H; k++) EXPECT_NEAR(dxh[r * K + I + k], dhp1[r * H + k], 1e-6, 1e-5);
        }
        float *bufs[] = {x, hp, cp, W, b, dh, dc, h, c, gates, xh, scratch, dx1, dhp1, dcp1, db, dcp2, dxh, db2};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    }
}

// lstm_backward_packed (dxh through the packed W) against lstm_backward (OpenBLAS) and
// against dxh = dgates W summed in double from the dgates both leave in their scratch.
static void check_backward_shape(int B, int I, int H, int with_state, Rng *rng) {
    const int K = I + H;
    const size_t bh = (size_t)B * H, G = (size_t)4 * H;
    float *x = uniform((size_t)B * I, -1, 1, rng), *hp = uniform(bh, -1, 1, rng);
    float *cp = uniform(bh, -2, 2, rng), *W = uniform(G * K, -0.7f, 0.7f, rng);
    float *b = uniform(G, -0.5f, 0.5f, rng), *dh = uniform(bh, -1, 1, rng), *dc = uniform(bh, -1, 1, rng);
    float *h = xmalloc(bh * sizeof(float)), *c = xmalloc(bh * sizeof(float));
    float *gates = xmalloc(G * B * sizeof(float)), *xh = xmalloc((size_t)B * K * sizeof(float));
    lstm_forward(h, c, gates, xh, x, with_state ? hp : NULL, with_state ? cp : NULL, W, b, B, I, H);
    float *out[2][4];  // dx, dh_prev, dc_prev, db per path
    float *scratch[2];
    PackedMatrix Wn;
    packed_alloc(&Wn, (int)G, K);
    packed_pack(&Wn, false, W, K);
    for (int path = 0; path < 2; path++) {
        out[path][0] = calloc((size_t)B * I + 1, sizeof(float));
        out[path][1] = calloc(bh, sizeof(float));
        out[path][2] = calloc(bh, sizeof(float));
        out[path][3] = calloc(G, sizeof(float));
        scratch[path] = xmalloc((size_t)lstm_scratch_floats(B, I, H) * sizeof(float));
        float *dxo = I > 0 ? out[path][0] : NULL;
        float *dhp = with_state ? out[path][1] : NULL, *dcp = with_state ? out[path][2] : NULL;
        const float *cprev = with_state ? cp : NULL;
        if (path == 0)
            lstm_backward(dxo, dhp, dcp, NULL, out[path][3], dh, dc, gates, xh, cprev, c, W,
                          scratch[path], B, I, H);
        else
            lstm_backward_packed(dxo, dhp, dcp, out[path][3], dh, dc, gates, xh, cprev, c, &Wn,
                                 scratch[path], B, I, H);
    }
    packed_free(&Wn);
    // The elementwise part is shared: dgates, dc_prev and db equal bit for bit.
    EXPECT(!memcmp(scratch[0], scratch[1], G * B * sizeof(float)), "B %d I %d H %d: dgates differ", B, I, H);
    EXPECT(!memcmp(out[0][2], out[1][2], bh * sizeof(float)) && !memcmp(out[0][3], out[1][3], G * sizeof(float)),
           "B %d I %d H %d: dc_prev or db differ", B, I, H);
    for (int r = 0; r < B; r++)
        for (int k = 0; k < K; k++) {
            double want = 0.0;
            for (size_t j = 0; j < G; j++) want += (double)scratch[0][r * G + j] * W[j * K + k];
            if (k >= I && !with_state) continue;
            const float *o0 = k < I ? out[0][0] + (size_t)r * I + k : out[0][1] + (size_t)r * H + k - I;
            const float *o1 = k < I ? out[1][0] + (size_t)r * I + k : out[1][1] + (size_t)r * H + k - I;
            EXPECT_NEAR(*o0, want, REF_ATOL, REF_RTOL);
            EXPECT_NEAR(*o1, want, REF_ATOL, REF_RTOL);
        }
    for (int path = 0; path < 2; path++) {
        for (int k = 0; k < 4; k++) free(out[path][k]);
        free(scratch[path]);
    }
    float *bufs[] = {x, hp, cp, W, b, dh, dc, h, c, gates, xh};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
}

static void test_lstm_backward_packed_matches(void) {
    Rng rng;
    rng_seed(&rng, 4072);
    const int shapes[][3] = {{1, 1, 1}, {3, 5, 4}, {7, 20, 16}, {11, 33, 9}, {4, 0, 12}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int with_state = 0; with_state < 2; with_state++)
            check_backward_shape(shapes[s][0], shapes[s][1], shapes[s][2], with_state, &rng);
}

int main(void) {
    RUN(test_lstm_forward_xh_matches);
    RUN(test_gates_backward_matches);
    RUN(test_lstm_backward_packed_matches);
    return test_summary();
}
