// test_layernorm.c: seq/layernorm.h.
// - Gradient check (tests/support/gradcheck.h: central differences, eps 1e-3, |analytic -
//   numeric| <= 1e-3 + 1e-2 max) of input, weight and bias, every element, on rows with an
//   offset and a scale far from 0 and 1 so that the mean and variance terms matter.
// - Each output row has mean bias-free 0 and variance 1 / (1 + eps / var) with weight 1 and
//   bias 0; mean and rstd agree with a double loop (1e-6 relative).
// - A constant row gives exactly 0 (x - mean = 0), not NaN.
// - The lane-summing kernels against the plain loops (layernorm_*_ref) on rows of 133 (the
//   lanes and a tail), offset far from 0: forward and backward within 1e-5 relative.
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

static float max_rel_diff(const float *a, const float *b, size_t n) {
    float worst = 0.0f;
    for (size_t i = 0; i < n; i++) {
        float d = fabsf(a[i] - b[i]) / (1.0f + fabsf(b[i]));
        if (d > worst) worst = d;
    }
    return worst;
}

static void test_layernorm_against_reference(void) {
    enum { RN = 6, RC = 133 };
    static float x[RN * RC], w[RC], b[RC], dout[RN * RC], out[RN * RC], out_ref[RN * RC];
    static float dx[RN * RC], dx_ref[RN * RC], dw[RC], dw_ref[RC], db[RC], db_ref[RC];
    float mean[RN], rstd[RN], mean_ref[RN], rstd_ref[RN];
    Rng rng;
    rng_seed(&rng, 11);
    for (int i = 0; i < RN * RC; i++) {
        x[i] = 30.0f + 4.0f * (rng_uniform(&rng) - 0.5f) * (float)(1 + i / RC);
        dout[i] = rng_uniform(&rng) - 0.5f;
    }
    for (int i = 0; i < RC; i++) w[i] = 0.5f + rng_uniform(&rng), b[i] = rng_uniform(&rng) - 0.5f;
    layernorm_forward(out, mean, rstd, x, w, b, LAYERNORM_EPS, RN, RC);
    layernorm_forward_ref(out_ref, mean_ref, rstd_ref, x, w, b, LAYERNORM_EPS, RN, RC);
    EXPECT(max_rel_diff(out, out_ref, RN * RC) < 1e-5f, "forward differs by %g",
           (double)max_rel_diff(out, out_ref, RN * RC));
    EXPECT(max_rel_diff(rstd, rstd_ref, RN) < 1e-6f, "rstd differs");
    memset(dx, 0, sizeof dx), memset(dx_ref, 0, sizeof dx_ref);
    memset(dw, 0, sizeof dw), memset(dw_ref, 0, sizeof dw_ref);
    memset(db, 0, sizeof db), memset(db_ref, 0, sizeof db_ref);
    layernorm_backward(dx, dw, db, dout, x, mean, rstd, w, RN, RC);
    layernorm_backward_ref(dx_ref, dw_ref, db_ref, dout, x, mean, rstd, w, RN, RC);
    EXPECT(max_rel_diff(dx, dx_ref, RN * RC) < 1e-5f, "dinp differs by %g",
           (double)max_rel_diff(dx, dx_ref, RN * RC));
    EXPECT(max_rel_diff(dw, dw_ref, RC) < 1e-5f, "dweight differs by %g",
           (double)max_rel_diff(dw, dw_ref, RC));
    EXPECT(max_rel_diff(db, db_ref, RC) < 1e-6f, "dbias differs");
}

int main(void) {
    RUN(test_layernorm_gradcheck);
    RUN(test_layernorm_statistics);
    RUN(test_layernorm_constant_row);
    RUN(test_layernorm_against_reference);
    return test_summary();
}
