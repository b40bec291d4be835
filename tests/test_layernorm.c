// test_layernorm.c: seq/layernorm.h.
// - Gradient check (tests/support/gradcheck.h: central differences, eps 1e-3, |analytic -
//   numeric| <= 1e-3 + 1e-2 max) of input, weight and bias, every element, on rows with an
//   offset and a scale far from 0 and 1 so that the mean and variance terms matter.
// - Each output row has mean bias-free 0 and variance 1 / (1 + eps / var) with weight 1 and
//   bias 0; mean and rstd agree with a double loop (1e-6 relative).
// - A constant row gives exactly 0 (x - mean = 0), not NaN.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "seq/layernorm.h"
#include "tests/support/gradcheck.h"
#include "tests/support/test.h"

enum { N = 5, C = 7 };

typedef struct {
    float x[N * C], w[C], b[C], dx[N * C], dw[C], db[C], mean[N], rstd[N];
} Ln;

static void ln_forward(void *ctx, float *out) {
    Ln *l = ctx;
    layernorm_forward(out, l->mean, l->rstd, l->x, l->w, l->b, LAYERNORM_EPS, N, C);
}

static void ln_backward(void *ctx, const float *dout) {
    Ln *l = ctx;
    layernorm_backward(l->dx, l->dw, l->db, dout, l->x, l->mean, l->rstd, l->w, N, C);
}

static void ln_init(Ln *l, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed);
    memset(l, 0, sizeof *l);
    fill_uniform(l->x, N * C, -2.0f, 3.0f, &rng);
    for (int n = 0; n < N; n++)
        for (int i = 0; i < C; i++) l->x[n * C + i] = 0.5f + (1.0f + n) * l->x[n * C + i];
    fill_uniform(l->w, C, 0.5f, 1.5f, &rng);
    fill_uniform(l->b, C, -0.5f, 0.5f, &rng);
}

static void test_layernorm_gradcheck(void) {
    Ln l;
    ln_init(&l, 3);
    GradcheckInput in[] = {{"x", l.x, l.dx, N * C}, {"weight", l.w, l.dw, C}, {"bias", l.b, l.db, C}};
    GradcheckOp op = {.ctx = &l, .forward = ln_forward, .backward = ln_backward,
                      .n_out = N * C, .inputs = in, .n_inputs = 3};
    Rng rng;
    rng_seed(&rng, 4);
    EXPECT(gradcheck("layernorm", &op, &rng) == 0, "layernorm gradient check failed");
}

static void test_layernorm_statistics(void) {
    Ln l;
    ln_init(&l, 5);
    for (int i = 0; i < C; i++) l.w[i] = 1.0f, l.b[i] = 0.0f;
    float out[N * C];
    ln_forward(&l, out);
    for (int n = 0; n < N; n++) {
        double m = 0, v = 0, om = 0, ov = 0;
        for (int i = 0; i < C; i++) m += l.x[n * C + i], om += out[n * C + i];
        m /= C, om /= C;
        for (int i = 0; i < C; i++) {
            v += (l.x[n * C + i] - m) * (l.x[n * C + i] - m);
            ov += (out[n * C + i] - om) * (out[n * C + i] - om);
        }
        v /= C, ov /= C;
        EXPECT_NEAR(l.mean[n], m, 1e-6, 1e-6);
        EXPECT_NEAR(l.rstd[n], 1.0 / sqrt(v + LAYERNORM_EPS), 1e-6, 1e-6);
        EXPECT_NEAR(om, 0.0, 1e-6, 0);
        EXPECT_NEAR(ov, v / (v + LAYERNORM_EPS), 1e-5, 1e-5);
    }
}

static void test_layernorm_constant_row(void) {
    float x[C], w[C], b[C], out[C], mean, rstd;
    for (int i = 0; i < C; i++) x[i] = 2.5f, w[i] = 1.0f, b[i] = 0.0f;
    layernorm_forward(out, &mean, &rstd, x, w, b, LAYERNORM_EPS, 1, C);
    for (int i = 0; i < C; i++) EXPECT(out[i] == 0.0f, "out[%d] = %g", i, out[i]);
}

int main(void) {
    RUN(test_layernorm_gradcheck);
    RUN(test_layernorm_statistics);
    RUN(test_layernorm_constant_row);
    return test_summary();
}
