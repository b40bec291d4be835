// test_pooling.c: the sequence poolings (seq/pooling.h).
// - Gradient checks (tests/support/gradcheck.h: central differences with the loss summed in
//   double, eps = 1e-3, |analytic - numeric| <= 1e-4 + 1e-3 max(|analytic|, |numeric|), every
//   element) of the Keras attention pooling (output [out, alpha], so dalpha is exercised;
//   inputs h, w and the per-step bias b), the mean and the last state (forward and
//   bidirectional columns), each with lengths (one of them 0) and without.
// - The Keras attention's float backward against central differences of a double-precision
//   forward (eps 1e-6, |analytic - numeric| <= 1e-5 + 1e-3 |numeric|, every element).
// - The Keras attention against a plain double-precision loop (|float - double| <= 1e-6 +
//   1e-5 |double|); alpha sums to 1 over the sentence and is exactly 0 past it; a sentence of
//   length 0 pools to zeros; the bias is per step (changing b_t moves only what depends on t).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/rng.h"
#include "seq/pooling.h"
#include "tests/support/gradcheck.h"
#include "tests/support/test.h"

enum { B = 3, T = 5, D = 4 };

typedef enum { KIND_KERAS, KIND_MEAN, KIND_LAST } Kind;

typedef struct {
    Kind kind;
    const int *lengths;
    int d_fwd;
    float h[B * T * D], dh[B * T * D];
    float w[D], dw[D], b[T], db[T];
    float alpha[B * T], score[B * T];
} Fix;

static void fix_forward(void *ctx, float *out) {
    Fix *f = ctx;
    if (f->kind == KIND_KERAS) {
        pool_keras_attention_forward(out, f->alpha, f->score, f->h, f->w, f->b, f->lengths, B, T, D);
        memcpy(out + B * D, f->alpha, sizeof f->alpha);
    } else if (f->kind == KIND_MEAN) {
        pool_mean_forward(out, f->h, f->lengths, B, T, D);
    } else {
        pool_last_forward(out, f->h, f->lengths, B, T, D, f->d_fwd);
    }
}

static void fix_backward(void *ctx, const float *dout) {
    Fix *f = ctx;
    if (f->kind == KIND_KERAS) {
        float out[B * D];  // forward again: alpha and score for these inputs
        pool_keras_attention_forward(out, f->alpha, f->score, f->h, f->w, f->b, f->lengths, B, T, D);
        pool_keras_attention_backward(f->dh, f->dw, f->db, dout, dout + B * D, f->alpha, f->score,
                                      f->h, f->w, f->lengths, B, T, D);
    } else if (f->kind == KIND_MEAN) {
        pool_mean_backward(f->dh, dout, f->lengths, B, T, D);
    } else {
        pool_last_backward(f->dh, dout, f->lengths, B, T, D, f->d_fwd);
    }
}

static void fix_init(Fix *f, Kind kind, const int *lengths, int d_fwd, uint64_t seed) {
    memset(f, 0, sizeof *f);
    f->kind = kind, f->lengths = lengths, f->d_fwd = d_fwd;
    Rng rng;
    rng_seed(&rng, seed);
    fill_uniform(f->h, B * T * D, -1.0f, 1.0f, &rng);
    fill_uniform(f->w, D, -1.0f, 1.0f, &rng);
    fill_uniform(f->b, T, -1.0f, 1.0f, &rng);
}

static int check(Fix *f, const char *name) {
    GradcheckInput in[3] = {{"h", f->h, f->dh, B * T * D}, {"w", f->w, f->dw, D}, {"b", f->b, f->db, T}};
    GradcheckOp op = {.ctx = f, .forward = fix_forward, .backward = fix_backward,
                      .n_out = f->kind == KIND_KERAS ? B * D + B * T : B * D,
                      .inputs = in, .n_inputs = f->kind == KIND_KERAS ? 3 : 1,
                      .eps = 1e-3, .atol = 1e-4, .rtol = 1e-3};
    Rng rng;
    rng_seed(&rng, 7);
    return gradcheck(name, &op, &rng);
}

static const int g_lengths[B] = {5, 2, 0};
static const int g_full[B] = {5, 3, 1};

static void test_gradcheck_keras_attention(void) {
    Fix f;
    fix_init(&f, KIND_KERAS, NULL, D, 1);
    EXPECT(check(&f, "keras attention, unmasked") == 0);
    fix_init(&f, KIND_KERAS, g_lengths, D, 2);
    EXPECT(check(&f, "keras attention, masked") == 0);
    fix_init(&f, KIND_KERAS, g_full, D, 3);
    EXPECT(check(&f, "keras attention, masked, no empty row") == 0);
}

static void test_gradcheck_mean_and_last(void) {
    Fix f;
    fix_init(&f, KIND_MEAN, NULL, D, 4);
    EXPECT(check(&f, "mean") == 0);
    fix_init(&f, KIND_MEAN, g_lengths, D, 5);
    EXPECT(check(&f, "mean, masked") == 0);
    fix_init(&f, KIND_LAST, NULL, D, 6);
    EXPECT(check(&f, "last") == 0);
    fix_init(&f, KIND_LAST, g_full, D / 2, 7);
    EXPECT(check(&f, "last, bidirectional, masked") == 0);
    fix_init(&f, KIND_LAST, g_lengths, 0, 8);
    EXPECT(check(&f, "last, backward only, masked") == 0);
}

// The demo's attention in double, one sentence: out (D), alpha (T).
static void keras_ref(double *out, double *alpha, const float *h, const float *w, const float *b,
                      int n) {
    double e[T], mx = -1e300, sum = 0;
    for (int t = 0; t < n; t++) {
        double z = b[t];
        for (int d = 0; d < D; d++) z += (double)h[t * D + d] * w[d];
        e[t] = tanh(z);
        mx = e[t] > mx ? e[t] : mx;
    }
    for (int t = 0; t < T; t++) alpha[t] = t < n ? exp(e[t] - mx) : 0, sum += alpha[t];
    for (int t = 0; t < n; t++) alpha[t] /= sum;
    for (int d = 0; d < D; d++) {
        out[d] = 0;
        for (int t = 0; t < n; t++) out[d] += alpha[t] * h[t * D + d];
    }
}

static void test_keras_attention_values(void) {
    for (int masked = 0; masked < 2; masked++) {
        Fix f;
        fix_init(&f, KIND_KERAS, masked ? g_lengths : NULL, D, 10 + masked);
        float out[B * D];
        pool_keras_attention_forward(out, f.alpha, f.score, f.h, f.w, f.b, f.lengths, B, T, D);
        for (int i = 0; i < B; i++) {
            int n = masked ? g_lengths[i] : T;
            double ro[D], ra[T], s = 0;
            keras_ref(ro, ra, f.h + i * T * D, f.w, f.b, n);
            for (int d = 0; d < D; d++) EXPECT_NEAR(out[i * D + d], ro[d], 1e-6, 1e-5);
            for (int t = 0; t < T; t++) {
                EXPECT_NEAR(f.alpha[i * T + t], ra[t], 1e-6, 1e-5);
                if (t >= n) EXPECT(f.alpha[i * T + t] == 0.0f, "alpha past the sentence");
                s += f.alpha[i * T + t];
            }
            EXPECT(n == 0 ? s == 0 : fabs(s - 1) <= 1e-5, "row %d: alpha sums to %g", i, s);
            if (n == 0)
                for (int d = 0; d < D; d++) EXPECT(out[i * D + d] == 0.0f);
        }
        // One bias per step: moving b_1 changes e_1 only.
        float score0[B * T];
        memcpy(score0, f.score, sizeof score0);
        f.b[1] += 0.5f;
        pool_keras_attention_forward(out, f.alpha, f.score, f.h, f.w, f.b, f.lengths, B, T, D);
        for (int i = 0; i < B; i++)
            for (int t = 0; t < T; t++)
                EXPECT((f.score[i * T + t] != score0[i * T + t]) == (t == 1), "b_1 moved e_%d", t);
    }
}

// The weighted sum of the keras pooling's outputs [out, alpha], all in double, for central
// differences without float rounding.
static double keras_loss_ref(const double *h, const double *w, const double *b, const int *lengths,
                             const float *wts) {
    double loss = 0;
    for (int i = 0; i < B; i++) {
        int n = lengths ? lengths[i] : T;
        double e[T], a[T], mx = -1e300, sum = 0;
        for (int t = 0; t < n; t++) {
            double z = b[t];
            for (int d = 0; d < D; d++) z += h[(i * T + t) * D + d] * w[d];
            e[t] = tanh(z);
            mx = e[t] > mx ? e[t] : mx;
        }
        for (int t = 0; t < T; t++) a[t] = t < n ? exp(e[t] - mx) : 0, sum += a[t];
        for (int t = 0; t < n; t++) a[t] /= sum;
        for (int d = 0; d < D; d++) {
            double o = 0;
            for (int t = 0; t < n; t++) o += a[t] * h[(i * T + t) * D + d];
            loss += wts[i * D + d] * o;
        }
        for (int t = 0; t < T; t++) loss += wts[B * D + i * T + t] * a[t];
    }
    return loss;
}

// The float backward against central differences (eps 1e-6) of the double forward above:
// |analytic - numeric| <= 1e-5 + 1e-3 |numeric| for every element of h, w and b.
static void test_keras_attention_double_gradcheck(void) {
    for (int masked = 0; masked < 2; masked++) {
        Fix f;
        fix_init(&f, KIND_KERAS, masked ? g_lengths : NULL, D, 40 + masked);
        Rng rng;
        rng_seed(&rng, 41);
        float wts[B * D + B * T];
        fill_uniform(wts, B * D + B * T, -1.0f, 1.0f, &rng);
        fix_backward(&f, wts);
        double h[B * T * D], w[D], b[T];
        for (int i = 0; i < B * T * D; i++) h[i] = f.h[i];
        for (int i = 0; i < D; i++) w[i] = f.w[i];
        for (int i = 0; i < T; i++) b[i] = f.b[i];
        double *xs[3] = {h, w, b};
        const float *gs[3] = {f.dh, f.dw, f.db};
        const int ns[3] = {B * T * D, D, T};
        const char *names[3] = {"h", "w", "b"};
        for (int k = 0; k < 3; k++)
            for (int i = 0; i < ns[k]; i++) {
                double keep = xs[k][i], eps = 1e-6;
                xs[k][i] = keep + eps;
                double up = keras_loss_ref(h, w, b, f.lengths, wts);
                xs[k][i] = keep - eps;
                double down = keras_loss_ref(h, w, b, f.lengths, wts);
                xs[k][i] = keep;
                double num = (up - down) / (2 * eps), ana = gs[k][i];
                EXPECT(fabs(ana - num) <= 1e-5 + 1e-3 * fabs(num), "%s, d/d%s[%d]: analytic %.9g, numeric %.9g",
                       masked ? "masked" : "unmasked", names[k], i, ana, num);
            }
    }
}

static void test_mean_and_last_values(void) {
    Fix f;
    fix_init(&f, KIND_MEAN, g_lengths, D, 20);
    float out[B * D];
    pool_mean_forward(out, f.h, g_lengths, B, T, D);
    EXPECT_NEAR(out[1 * D + 2], (f.h[(1 * T + 0) * D + 2] + f.h[(1 * T + 1) * D + 2]) / 2, 1e-7, 1e-6);
    for (int d = 0; d < D; d++) EXPECT(out[2 * D + d] == 0.0f);
    pool_last_forward(out, f.h, g_lengths, B, T, D, 3);
    EXPECT(out[1 * D + 0] == f.h[(1 * T + 1) * D + 0] && out[1 * D + 3] == f.h[(1 * T + 0) * D + 3]);
    pool_last_forward(out, f.h, NULL, B, T, D, D);
    EXPECT(out[2 * D + 1] == f.h[(2 * T + T - 1) * D + 1]);
}

int main(void) {
    RUN(test_gradcheck_keras_attention);
    RUN(test_gradcheck_mean_and_last);
    RUN(test_keras_attention_values);
    RUN(test_keras_attention_double_gradcheck);
    RUN(test_mean_and_last_values);
    return test_summary();
}
