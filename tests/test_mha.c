// test_mha.c: sequence multi-head attention with masks and the key/value cache (seq/mha.h).
// - Gradient checks (gradcheck.h: central differences, eps 1e-3, |analytic - numeric| <=
//   1e-3 + 1e-2 max, every element) of the inputs and all four parameter tensors: causal
//   self-attention with ragged lengths (the two masks together), and cross-attention of 3
//   queries over 5 keys with lengths 5 and 2; both again with dropout factors (0 or 1 / 0.7)
//   on the probabilities. The checked output is out (the weights are read for pictures and
//   alignments, not differentiated).
// - The GEMM path against the plain double loop (mha_forward_ref): out and weights within
//   1e-5 + 1e-4 |ref|, for both set-ups.
// - Masks: hidden keys (past the length, after the query when causal) have probability
//   exactly 0 in every head and get exactly 0 gradient; the weights of each query sum to 1.
// - A row of length 0 gives out = out_proj.bias and finite gradients.
// - The cache: decoding steps 0..T-1 one at a time (mha_kv_write, mha_step_forward) give the
//   full causal pass's rows (1e-5 + 1e-4 |ref|), and so does cross-attention over a memory
//   written once, weights included.
// - One head's step weights (weights_head) against a plain double loop; the heads' mean is
//   the default weights, out the same.
// - mha_config_check refuses heads that do not divide d, in one line naming both.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/block.h"
#include "core/rng.h"
#include "seq/mha.h"
#include "tests/support/gradcheck.h"
#include "tests/support/test.h"

typedef struct {
    MhaConfig c;
    int B, T, S, causal, self;
    Block params, grads, acts;
    MhaParams p, g;
    MhaActs x;
    float *xq, *xkv, *dxq, *dxkv;
    float *drop;  // (B, heads, T, S) dropout factors, or NULL
    int *lengths;
} Fx;

static void fx_init(Fx *f, int d, int heads, int B, int T, int S, int causal, int self,
                    const int *lengths, uint64_t seed) {
    memset(f, 0, sizeof *f);
    f->c = (MhaConfig){.d = d, .heads = heads};
    f->B = B, f->T = T, f->S = S, f->causal = causal, f->self = self;
    mha_params_layout(&f->params, &f->p, &f->c, "attn");
    mha_params_layout(&f->grads, &f->g, &f->c, "attn");
    mha_acts_layout(&f->acts, &f->x, &f->c, B, T, S, "attn");
    block_alloc(&f->params), block_alloc(&f->grads), block_alloc(&f->acts);
    Rng rng;
    rng_seed(&rng, seed);
    fill_uniform(f->params.data, f->params.numel, -0.6f, 0.6f, &rng);
    f->xq = malloc((size_t)B * T * d * sizeof(float));
    f->dxq = calloc((size_t)B * T * d, sizeof(float));
    fill_uniform(f->xq, (size_t)B * T * d, -1.0f, 1.0f, &rng);
    f->xkv = self ? f->xq : malloc((size_t)B * S * d * sizeof(float));
    f->dxkv = self ? f->dxq : calloc((size_t)B * S * d, sizeof(float));
    if (!self) fill_uniform(f->xkv, (size_t)B * S * d, -1.0f, 1.0f, &rng);
    if (lengths) {
        f->lengths = malloc((size_t)B * sizeof(int));
        memcpy(f->lengths, lengths, (size_t)B * sizeof(int));
    }
}

static void fx_free(Fx *f) {
    block_free(&f->params), block_free(&f->grads), block_free(&f->acts);
    if (!f->self) free(f->xkv), free(f->dxkv);
    free(f->xq), free(f->dxq), free(f->lengths), free(f->drop);
}

static size_t out_n(const Fx *f) { return (size_t)f->B * f->T * f->c.d; }
static size_t w_n(const Fx *f) { return (size_t)f->B * f->T * f->S; }

static void fx_forward(void *ctx, float *out) {
    Fx *f = ctx;
    mha_forward(out, &f->x, f->xq, f->xkv, f->lengths, f->causal, f->drop, &f->p, &f->c, f->B,
                f->T, f->S);
}

static void fx_backward(void *ctx, const float *dout) {
    Fx *f = ctx;
    mha_backward(f->dxq, f->self ? f->dxq : f->dxkv, &f->g, dout, &f->x, f->xq, f->xkv,
                 f->lengths, f->causal, f->drop, &f->p, &f->c, f->B, f->T, f->S);
}

static int fx_gradcheck(Fx *f, const char *name) {
    GradcheckInput in[8];
    int n = 0;
    in[n++] = (GradcheckInput){"xq", f->xq, f->dxq, out_n(f)};
    if (!f->self) in[n++] = (GradcheckInput){"xkv", f->xkv, f->dxkv, (size_t)f->B * f->S * f->c.d};
    for (int k = 0; k < f->params.count; k++) {
        const BlockTensor *t = &f->params.tensors[k];
        in[n++] = (GradcheckInput){t->name, f->params.data + t->offset, f->grads.data + t->offset, t->numel};
    }
    GradcheckOp op = {.ctx = f, .forward = fx_forward, .backward = fx_backward, .n_out = out_n(f),
                      .inputs = in, .n_inputs = n};
    Rng rng;
    rng_seed(&rng, 9);
    return gradcheck(name, &op, &rng);
}

static const int self_lengths[] = {4, 2, 3};
static const int cross_lengths[] = {5, 2};

static void test_mha_gradcheck_causal_self(void) {
    Fx f;
    fx_init(&f, 6, 2, 3, 4, 4, 1, 1, self_lengths, 11);
    EXPECT(fx_gradcheck(&f, "mha causal self") == 0, "causal self-attention gradient check failed");
    fx_free(&f);
}

static void test_mha_gradcheck_cross(void) {
    Fx f;
    fx_init(&f, 6, 3, 2, 3, 5, 0, 0, cross_lengths, 12);
    EXPECT(fx_gradcheck(&f, "mha cross") == 0, "cross-attention gradient check failed");
    fx_free(&f);
}

// Dropout factors 0 or 1 / 0.7 on the probabilities: the same gradient check must hold.
static void test_mha_gradcheck_dropout(void) {
    for (int cross = 0; cross <= 1; cross++) {
        Fx f;
        if (cross) fx_init(&f, 6, 3, 2, 3, 5, 0, 0, cross_lengths, 20);
        else fx_init(&f, 6, 2, 3, 4, 4, 1, 1, self_lengths, 21);
        size_t n = (size_t)f.B * f.c.heads * f.T * f.S;
        f.drop = malloc(n * sizeof(float));
        Rng rng;
        rng_seed(&rng, 22);
        for (size_t i = 0; i < n; i++) f.drop[i] = rng_uniform(&rng) < 0.3f ? 0.0f : 1.0f / 0.7f;
        EXPECT(fx_gradcheck(&f, cross ? "mha cross dropout" : "mha self dropout") == 0,
               "%s attention with dropout: gradient check failed", cross ? "cross" : "self");
        fx_free(&f);
    }
}

static void compare_ref(Fx *f) {
    float *out = malloc(out_n(f) * sizeof(float)), *ref = malloc(out_n(f) * sizeof(float));
    float *wref = malloc(w_n(f) * sizeof(float));
    mha_forward(out, &f->x, f->xq, f->xkv, f->lengths, f->causal, NULL, &f->p, &f->c, f->B, f->T, f->S);
    mha_forward_ref(ref, wref, f->xq, f->xkv, f->lengths, f->causal, &f->p, &f->c, f->B, f->T, f->S);
    for (size_t i = 0; i < out_n(f); i++) EXPECT_NEAR(out[i], ref[i], 1e-5, 1e-4);
    for (size_t i = 0; i < w_n(f); i++) EXPECT_NEAR(f->x.weights[i], wref[i], 1e-5, 1e-4);
    free(out), free(ref), free(wref);
}

static void test_mha_matches_plain_loops(void) {
    Fx f;
    fx_init(&f, 8, 2, 3, 4, 4, 1, 1, self_lengths, 13);
    compare_ref(&f);
    fx_free(&f);
    fx_init(&f, 6, 3, 2, 3, 5, 0, 0, cross_lengths, 14);
    compare_ref(&f);
    fx_free(&f);
}

static void test_mha_masks(void) {
    Fx f;
    fx_init(&f, 6, 2, 3, 4, 4, 1, 1, self_lengths, 15);
    float *out = malloc(out_n(&f) * sizeof(float));
    fx_forward(&f, out);
    int T = f.T, S = f.S;
    for (int b = 0; b < f.B; b++)
        for (int i = 0; i < T; i++) {
            double sum = 0;
            for (int j = 0; j < S; j++) {
                int hidden = j >= self_lengths[b] || j > i;
                for (int h = 0; h < f.c.heads; h++) {
                    float pr = f.x.probs[(((size_t)b * f.c.heads + h) * T + i) * S + j];
                    if (hidden) EXPECT(pr == 0.0f, "row %d query %d key %d head %d: p = %g", b, i, j, h, pr);
                }
                sum += f.x.weights[((size_t)b * T + i) * S + j];
            }
            EXPECT_NEAR(sum, 1.0, 1e-6, 0);
        }
    // Keys past a row's length get no gradient (cross-attention: dxkv is the keys' alone).
    Fx g;
    fx_init(&g, 6, 3, 2, 3, 5, 0, 0, cross_lengths, 16);
    float *o2 = malloc(out_n(&g) * sizeof(float)), *d2 = malloc(out_n(&g) * sizeof(float));
    fx_forward(&g, o2);
    for (size_t i = 0; i < out_n(&g); i++) d2[i] = 1.0f;
    fx_backward(&g, d2);
    for (int j = cross_lengths[1]; j < g.S; j++)
        for (int k = 0; k < g.c.d; k++) {
            float v = g.dxkv[((size_t)1 * g.S + j) * g.c.d + k];
            EXPECT(v == 0.0f, "padded key %d gets gradient %g", j, v);
        }
    free(o2), free(d2), free(out);
    fx_free(&g);
    fx_free(&f);
}

static void test_mha_length_zero(void) {
    static const int lengths[] = {0, 3};
    Fx f;
    fx_init(&f, 4, 2, 2, 3, 3, 0, 0, lengths, 17);
    float *out = malloc(out_n(&f) * sizeof(float)), *dout = malloc(out_n(&f) * sizeof(float));
    fx_forward(&f, out);
    for (int i = 0; i < f.T; i++)
        for (int k = 0; k < f.c.d; k++) EXPECT(out[i * f.c.d + k] == f.p.out_b[k], "length 0: out %g", out[i * f.c.d + k]);
    for (size_t i = 0; i < out_n(&f); i++) dout[i] = 1.0f;
    fx_backward(&f, dout);
    for (size_t i = 0; i < f.grads.numel; i++) EXPECT(isfinite(f.grads.data[i]), "gradient %zu not finite", i);
    free(out), free(dout);
    fx_free(&f);
}

// Steps 0..T-1 through the cache against the full pass; cross: memory written once.
static void check_steps(Fx *f) {
    int B = f->B, T = f->T, S = f->S, d = f->c.d, cap = S;
    float *full = malloc(out_n(f) * sizeof(float)), *step = malloc((size_t)B * d * sizeof(float));
    float *K = malloc((size_t)B * cap * d * sizeof(float)), *V = malloc((size_t)B * cap * d * sizeof(float));
    float *xt = malloc((size_t)B * d * sizeof(float)), *w = malloc((size_t)B * cap * sizeof(float));
    float *scratch = malloc(mha_step_scratch_floats(&f->c, B, cap) * sizeof(float));
    mha_forward(full, &f->x, f->xq, f->xkv, f->lengths, f->causal, NULL, &f->p, &f->c, B, T, S);
    if (!f->self) mha_kv_write(K, V, f->xkv, &f->p, &f->c, B, S, 0, cap);
    for (int t = 0; t < T; t++) {
        for (int b = 0; b < B; b++) memcpy(xt + (size_t)b * d, f->xq + ((size_t)b * T + t) * d, (size_t)d * sizeof(float));
        if (f->self) mha_kv_write(K, V, xt, &f->p, &f->c, B, 1, t, cap);
        mha_step_forward(step, w, scratch, xt, K, V, f->self ? t + 1 : S, f->lengths, &f->p, &f->c, B, cap);
        for (int b = 0; b < B; b++) {
            for (int k = 0; k < d; k++)
                EXPECT_NEAR(step[(size_t)b * d + k], full[((size_t)b * T + t) * d + k], 1e-5, 1e-4);
            int n = f->self ? t + 1 : S;
            for (int j = 0; j < n; j++)
                EXPECT_NEAR(w[(size_t)b * cap + j], f->x.weights[((size_t)b * T + t) * S + j], 1e-6, 1e-5);
        }
    }
    free(full), free(step), free(K), free(V), free(xt), free(w), free(scratch);
}

static void test_mha_cache_equals_full_pass(void) {
    Fx f;
    fx_init(&f, 8, 4, 2, 5, 5, 1, 1, NULL, 18);
    check_steps(&f);
    fx_free(&f);
    fx_init(&f, 6, 3, 2, 3, 5, 0, 0, cross_lengths, 19);
    check_steps(&f);
    fx_free(&f);
}

// weights_head: one head's probabilities (the captioner's per-head maps) against a plain
// double loop over the projections (Q_h K_h^T / sqrt(dh), softmax over the visible keys);
// out is the same whichever weights are kept, and the heads' mean is weights_head 0's.
static void test_mha_step_weights_of_one_head(void) {
    Fx f;
    fx_init(&f, 6, 3, 2, 3, 5, 0, 0, cross_lengths, 21);
    const int B = f.B, T = f.T, S = f.S, d = f.c.d, H = f.c.heads, dh = d / H, cap = S;
    float *K = malloc((size_t)B * cap * d * sizeof(float)), *V = malloc((size_t)B * cap * d * sizeof(float));
    float *xt = malloc((size_t)B * d * sizeof(float)), *w = malloc((size_t)B * cap * sizeof(float));
    float *mean = malloc((size_t)B * cap * sizeof(float)), *sum = calloc((size_t)B * cap, sizeof(float));
    float *out0 = malloc((size_t)B * d * sizeof(float)), *out = malloc((size_t)B * d * sizeof(float));
    float *scratch = malloc(mha_step_scratch_floats(&f.c, B, cap) * sizeof(float));
    mha_kv_write(K, V, f.xkv, &f.p, &f.c, B, S, 0, cap);
    const int t = T - 1;
    for (int b = 0; b < B; b++) memcpy(xt + (size_t)b * d, f.xq + ((size_t)b * T + t) * d, (size_t)d * sizeof(float));
    mha_step_forward(out0, mean, scratch, xt, K, V, S, f.lengths, &f.p, &f.c, B, cap);
    for (int h = 0; h < H; h++) {
        MhaConfig one = f.c;
        one.weights_head = h + 1;
        mha_step_forward(out, w, scratch, xt, K, V, S, f.lengths, &f.p, &one, B, cap);
        for (int i = 0; i < B * d; i++) EXPECT(out[i] == out0[i], "head %d: out %d differs", h, i);
        for (int b = 0; b < B; b++) {
            const int n = f.lengths[b];
            double q[8], sc[8], z = 0, mx = -1e300;
            for (int k = 0; k < dh; k++) {
                const int row = h * dh + k;  // Wq's row of this head's column k
                q[k] = f.p.in_b[row];
                for (int i = 0; i < d; i++) q[k] += (double)f.p.in_w[(size_t)row * d + i] * xt[(size_t)b * d + i];
            }
            for (int j = 0; j < n; j++) {
                sc[j] = 0;
                for (int k = 0; k < dh; k++) {
                    const int row = d + h * dh + k;  // Wk's
                    double kj = f.p.in_b[row];
                    for (int i = 0; i < d; i++)
                        kj += (double)f.p.in_w[(size_t)row * d + i] * f.xkv[((size_t)b * S + j) * d + i];
                    sc[j] += q[k] * kj;
                }
                sc[j] /= sqrt((double)dh);
                if (sc[j] > mx) mx = sc[j];
            }
            for (int j = 0; j < n; j++) z += exp(sc[j] - mx);
            for (int j = 0; j < cap; j++) {
                double want = j < n ? exp(sc[j] - mx) / z : 0.0;
                EXPECT_NEAR(w[(size_t)b * cap + j], want, 1e-6, 1e-5);
                sum[(size_t)b * cap + j] += w[(size_t)b * cap + j] / (float)H;
            }
        }
    }
    for (int i = 0; i < B * cap; i++) EXPECT_NEAR(sum[i], mean[i], 1e-6, 1e-5);
    free(K), free(V), free(xt), free(w), free(mean), free(sum), free(out0), free(out), free(scratch);
    fx_free(&f);
}

static void test_mha_config_check(void) {
    Error err = {{0}};
    MhaConfig bad = {.d = 10, .heads = 4}, good = {.d = 12, .heads = 4};
    EXPECT(mha_config_check(&bad, &err) == -1, "heads 4 of d 10 accepted");
    EXPECT(strstr(err.msg, "4 heads") && strstr(err.msg, "10"), "message: %s", err.msg);
    EXPECT(!strchr(err.msg, '\n'), "message is more than one line");
    EXPECT(mha_config_check(&good, &err) == 0, "heads 4 of d 12 refused");
}

int main(void) {
    RUN(test_mha_gradcheck_causal_self);
    RUN(test_mha_gradcheck_cross);
    RUN(test_mha_gradcheck_dropout);
    RUN(test_mha_matches_plain_loops);
    RUN(test_mha_masks);
    RUN(test_mha_length_zero);
    RUN(test_mha_cache_equals_full_pass);
    RUN(test_mha_step_weights_of_one_head);
    RUN(test_mha_config_check);
    return test_summary();
}
