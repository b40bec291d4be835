// test_attention.c: the shared attention kernels (seq/attention.h).
//
// - Gradient checks for every kind, with and without a mask, through attn_prepare plus TWO
//   decoder steps sharing one prep (so dprep accumulation across steps is exercised); the
//   checked output is [context, alpha] of both steps, so dalpha is exercised too. Inputs
//   checked: keys, query, and every parameter tensor. Central differences, eps = 1e-3,
//   |analytic - numeric| <= 1e-3 + 1e-2 * max(|analytic|, |numeric|) (gradcheck.h), every
//   element checked.
// - alpha sums to 1 over unmasked positions (|sum - 1| <= 1e-5) and masked ones are exactly 0;
//   fully masked rows give alpha = 0, context = 0 and finite gradients.
// - Plain-loop double-precision references of additive and multi-head forward against the
//   fast path (|fast - ref| <= 1e-5 + 1e-4 |ref|); W_q packed for the step products against
//   gemm() on it, forward and backward.
// - Lengths (B): every kind's gradient check also runs with ragged lengths (and with lengths
//   and a mask); a row of length S padded to L equals that row alone with L = S, forward and
//   backward (up to 1e-6 + 1e-5 |ref|: gemm() of other sizes), with alpha and dkeys exactly 0
//   past S; lengths all L equal NULL lengths bit for bit; a length-0 row gives zeros, and
//   NaN keys past a row's length are never read forward.
// - none returns the mean of unmasked keys; local windows put exactly 0 outside
//   [round(p) - W, round(p) + W], and the Gaussian has sigma = W / 2; a NaN centre gives
//   that row NaN weights and context (no undefined float-to-int conversion).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/block.h"
#include "core/check.h"
#include "core/gemm_packed.h"
#include "core/rng.h"
#include "seq/attention.h"
#include "tests/support/gradcheck.h"
#include "tests/support/test.h"

enum { STEPS = 2 };

// Everything one attention instance needs for a test: config, parameters, gradients,
// inputs (keys, STEPS queries, mask) and buffers.
typedef struct {
    AttnConfig c;
    int B, L, t0;
    Block params, grads;
    AttnParams p, dp;
    float *keys, *query, *dkeys, *dquery;  // query, dquery: (STEPS, B, H)
    unsigned char *mask;                   // (B, L) or NULL
    int *lengths;                          // (B) or NULL
    float *prep, *dprep, *cache;           // cache: (STEPS, cache floats)
    size_t prep_n, cache_n;
} Fixture;

static AttnConfig config(AttnKind kind, AttnKind score, int D, int H, int A, int heads,
                         int window) {
    AttnConfig c = {.kind = kind, .D = D, .H = H, .A = A, .heads = heads, .window = window,
                    .score = score};
    return c;
}

// Ragged lengths: row b has L - 2 b positions, at least 1.
static int ragged_length(int b, int L) { return L - 2 * b >= 1 ? L - 2 * b : 1; }

// masked: MASK_POSITIONS for the mask (i + b) % 3 != 1, MASK_LENGTHS for ragged_length's
// lengths, both, or 0.
enum { MASK_POSITIONS = 1, MASK_LENGTHS = 2 };

static void fixture_init(Fixture *f, AttnConfig c, int B, int L, int t0, int masked,
                         uint64_t seed) {
    memset(f, 0, sizeof *f);
    f->c = c, f->B = B, f->L = L, f->t0 = t0;
    Rng rng;
    rng_seed(&rng, seed);
    attn_params_layout(&f->params, &f->p, &c, "att");
    attn_params_layout(&f->grads, &f->dp, &c, "att");
    block_alloc(&f->params);
    block_alloc(&f->grads);
    attn_params_init(&f->p, &c, &rng);
    // Larger than the init scale so that the attention is peaked and gradients are not tiny.
    fill_uniform(f->params.data, f->params.numel, -1.0f, 1.0f, &rng);
    size_t nk = (size_t)B * L * c.D, nq = (size_t)STEPS * B * c.H;
    f->keys = xmalloc(nk * sizeof(float));
    f->dkeys = xcalloc(nk, sizeof(float));
    f->query = xmalloc(nq * sizeof(float));
    f->dquery = xcalloc(nq, sizeof(float));
    fill_uniform(f->keys, nk, -1.0f, 1.0f, &rng);
    fill_uniform(f->query, nq, -1.0f, 1.0f, &rng);
    if (masked & MASK_LENGTHS) {
        f->lengths = xmalloc((size_t)B * sizeof(int));
        for (int b = 0; b < B; b++) f->lengths[b] = ragged_length(b, L);
    }
    if (masked & MASK_POSITIONS) {
        // Row b keeps positions i with (i + b) % 3 != 1; at least one position stays.
        f->mask = xmalloc((size_t)B * L);
        for (int b = 0; b < B; b++)
            for (int i = 0; i < L; i++) f->mask[(size_t)b * L + i] = (i + b) % 3 != 1;
    }
    f->prep_n = attn_prep_floats(&c, B, L);
    f->cache_n = attn_step_cache_floats(&c, B, L);
    f->prep = xcalloc(f->prep_n + 1, sizeof(float));
    f->dprep = xcalloc(f->prep_n + 1, sizeof(float));
    f->cache = xcalloc(STEPS * f->cache_n + 1, sizeof(float));
}

static void fixture_free(Fixture *f) {
    block_free(&f->params);
    block_free(&f->grads);
    free(f->keys), free(f->dkeys), free(f->query), free(f->dquery), free(f->mask);
    free(f->lengths);
    free(f->prep), free(f->dprep), free(f->cache);
}

static size_t out_per_step(const Fixture *f) { return (size_t)f->B * (f->c.D + f->L); }

// out: per step, context (B, D) then alpha (B, L).
static void fixture_forward(void *ctx, float *out) {
    Fixture *f = ctx;
    int B = f->B, L = f->L, D = f->c.D, H = f->c.H;
    attn_prepare(f->prep, f->keys, &f->p, &f->c, B, L);
    for (int s = 0; s < STEPS; s++) {
        float *o = out + s * out_per_step(f);
        attn_forward(o, o + (size_t)B * D, f->cache + s * f->cache_n, f->prep, f->keys,
                     f->query + (size_t)s * B * H, f->mask, f->lengths, &f->p, &f->c, f->t0 + s,
                     B, L);
    }
}

static void fixture_backward(void *ctx, const float *dout) {
    Fixture *f = ctx;
    int B = f->B, L = f->L, D = f->c.D, H = f->c.H;
    memset(f->dprep, 0, f->prep_n * sizeof(float));
    for (int s = STEPS - 1; s >= 0; s--) {
        const float *d = dout + s * out_per_step(f);
        attn_backward(f->dkeys, f->dprep, f->dquery + (size_t)s * B * H, &f->dp, d,
                      d + (size_t)B * D, f->cache + s * f->cache_n, f->prep, f->keys,
                      f->query + (size_t)s * B * H, f->mask, f->lengths, &f->p, &f->c,
                      f->t0 + s, B, L);
    }
    attn_prepare_backward(f->dkeys, &f->dp, f->dprep, f->keys, &f->p, &f->c, B, L);
}

static int fixture_gradcheck(Fixture *f, const char *name, uint64_t seed) {
    GradcheckInput in[16];
    int n = 0;
    in[n++] = (GradcheckInput){"keys", f->keys, f->dkeys, (size_t)f->B * f->L * f->c.D};
    in[n++] = (GradcheckInput){"query", f->query, f->dquery, (size_t)STEPS * f->B * f->c.H};
    for (int k = 0; k < f->params.count && n < 16; k++) {
        const BlockTensor *t = &f->params.tensors[k];
        in[n++] = (GradcheckInput){t->name, f->params.data + t->offset, f->grads.data + t->offset,
                                   t->numel};
    }
    GradcheckOp op = {.ctx = f,
                      .forward = fixture_forward,
                      .backward = fixture_backward,
                      .n_out = STEPS * out_per_step(f),
                      .inputs = in,
                      .n_inputs = n,
                      .eps = 1e-3,
                      .atol = 1e-3,
                      .rtol = 1e-2};
    Rng rng;
    rng_seed(&rng, seed);
    return gradcheck(name, &op, &rng);
}

// Plain-loop centre of local-predictive attention for row b of the query q (B, H).
static double predictive_centre(const Fixture *f, const float *q, int b) {
    const AttnConfig *c = &f->c;
    double z = 0.0;
    for (int a = 0; a < c->A; a++) {
        double h = 0.0;
        for (int k = 0; k < c->H; k++) h += (double)f->p.W_p[a * c->H + k] * q[b * c->H + k];
        z += (double)f->p.v_p[a] * tanh(h);
    }
    int n = f->lengths ? f->lengths[b] : f->L;
    return (n - 1) / (1.0 + exp(-z));
}

// Redraws the queries until every predicted centre is at least `margin` away from a rounding
// boundary (x.5), so that no finite-difference step moves the window (which has no gradient).
static void keep_centres_off_boundaries(Fixture *f, double margin, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed);
    for (int tries = 0; tries < 1000; tries++) {
        int ok = 1;
        for (int s = 0; s < STEPS; s++)
            for (int b = 0; b < f->B; b++) {
                double p = predictive_centre(f, f->query + (size_t)s * f->B * f->c.H, b);
                double frac = p - floor(p);
                if (fabs(frac - 0.5) < margin) ok = 0;
            }
        if (ok) return;
        fill_uniform(f->query, (size_t)STEPS * f->B * f->c.H, -1.0f, 1.0f, &rng);
    }
    CHECK(0, "no query keeps the centres off rounding boundaries");
}

// --- gradient checks, one per kind, with and without a mask -----------------------------------

// Without a mask, with one, with ragged lengths (ragged_length), and with both.
static void check_kind(AttnConfig c, int B, int L, int t0, const char *name) {
    static const char *const what[] = {"without a mask", "with a mask", "with ragged lengths",
                                       "with a mask and ragged lengths"};
    for (int masked = 0; masked <= (MASK_POSITIONS | MASK_LENGTHS); masked++) {
        Fixture f;
        fixture_init(&f, c, B, L, t0, masked, 1000 + (uint64_t)c.kind * 10 + masked);
        if (c.kind == ATTN_LOCAL_PREDICTIVE) keep_centres_off_boundaries(&f, 0.05, 77);
        int rc = fixture_gradcheck(&f, name, 42 + masked);
        EXPECT(rc == 0, "%s gradient check failed (%s)", name, what[masked]);
        fixture_free(&f);
    }
}

static void test_gradcheck_additive(void) {
    check_kind(config(ATTN_ADDITIVE, 0, 4, 3, 5, 0, 0), 3, 6, 0, "additive");
}
static void test_gradcheck_dot(void) {
    check_kind(config(ATTN_DOT, 0, 4, 4, 0, 0, 0), 3, 6, 0, "dot");
}
static void test_gradcheck_scaled_dot(void) {
    check_kind(config(ATTN_SCALED_DOT, 0, 4, 4, 0, 0, 0), 3, 6, 0, "scaled-dot");
}
static void test_gradcheck_multiplicative(void) {
    check_kind(config(ATTN_MULTIPLICATIVE, 0, 4, 3, 0, 0, 0), 3, 6, 0, "multiplicative");
}
static void test_gradcheck_multihead(void) {
    check_kind(config(ATTN_MULTIHEAD, 0, 4, 3, 6, 2, 0), 3, 6, 0, "multi-head");
}
static void test_gradcheck_none(void) {
    check_kind(config(ATTN_NONE, 0, 4, 3, 0, 0, 0), 3, 6, 0, "none");
}
// Windows [0, 3] and [0, 4] at t = 1, 2 with W = 2, L = 7: clipped on the left only.
static void test_gradcheck_local_monotonic(void) {
    check_kind(config(ATTN_LOCAL_MONOTONIC, ATTN_NONE, 4, 3, 0, 0, 2), 3, 7, 1,
               "local-monotonic (multiplicative)");
    check_kind(config(ATTN_LOCAL_MONOTONIC, ATTN_ADDITIVE, 4, 3, 5, 0, 2), 3, 7, 4,
               "local-monotonic (additive)");
    check_kind(config(ATTN_LOCAL_MONOTONIC, ATTN_SCALED_DOT, 4, 4, 0, 0, 1), 3, 7, 5,
               "local-monotonic (scaled-dot)");
}
static void test_gradcheck_local_predictive(void) {
    check_kind(config(ATTN_LOCAL_PREDICTIVE, ATTN_MULTIPLICATIVE, 4, 3, 5, 0, 2), 3, 9, 0,
               "local-predictive (multiplicative)");
    check_kind(config(ATTN_LOCAL_PREDICTIVE, ATTN_ADDITIVE, 4, 3, 5, 0, 2), 3, 9, 0,
               "local-predictive (additive)");
    check_kind(config(ATTN_LOCAL_PREDICTIVE, ATTN_DOT, 4, 4, 3, 0, 1), 3, 9, 0,
               "local-predictive (dot)");
    // A window wider than the sequence: membership never changes, the Gaussian still does.
    check_kind(config(ATTN_LOCAL_PREDICTIVE, ATTN_MULTIPLICATIVE, 4, 3, 5, 0, 12), 3, 9, 0,
               "local-predictive (wide window)");
}

// --- alpha and masks ---------------------------------------------------------------------------

static const AttnConfig *all_configs(int *n) {
    static AttnConfig cs[10];
    cs[0] = config(ATTN_NONE, 0, 4, 3, 0, 0, 0);
    cs[1] = config(ATTN_ADDITIVE, 0, 4, 3, 5, 0, 0);
    cs[2] = config(ATTN_DOT, 0, 4, 4, 0, 0, 0);
    cs[3] = config(ATTN_SCALED_DOT, 0, 4, 4, 0, 0, 0);
    cs[4] = config(ATTN_MULTIPLICATIVE, 0, 4, 3, 0, 0, 0);
    cs[5] = config(ATTN_MULTIHEAD, 0, 4, 3, 6, 3, 0);
    cs[6] = config(ATTN_LOCAL_MONOTONIC, 0, 4, 3, 0, 0, 3);
    cs[7] = config(ATTN_LOCAL_MONOTONIC, ATTN_ADDITIVE, 4, 3, 5, 0, 3);
    cs[8] = config(ATTN_LOCAL_PREDICTIVE, 0, 4, 3, 5, 0, 3);
    cs[9] = config(ATTN_LOCAL_PREDICTIVE, ATTN_ADDITIVE, 4, 3, 5, 0, 3);
    *n = 10;
    return cs;
}

// With W = 3, L = 8 every window holds 4..7 positions, and the mask (i + b) % 3 != 1 leaves
// unmasked positions in each, so alpha must sum to 1 in every row.
static void test_alpha_sums_to_one_masked_zero(void) {
    int n;
    const AttnConfig *cs = all_configs(&n);
    for (int k = 0; k < n; k++) {
        Fixture f;
        int B = 3, L = 8;
        fixture_init(&f, cs[k], B, L, 2, 1, 500 + (uint64_t)k);
        float *out = xmalloc(STEPS * out_per_step(&f) * sizeof(float));
        fixture_forward(&f, out);
        for (int s = 0; s < STEPS; s++) {
            const float *alpha = out + s * out_per_step(&f) + (size_t)B * f.c.D;
            for (int b = 0; b < B; b++) {
                double sum = 0.0;
                for (int i = 0; i < L; i++) {
                    float a = alpha[b * L + i];
                    EXPECT(a >= 0.0f, "%s: alpha %g < 0", attn_kind_name(cs[k].kind), a);
                    if (!f.mask[b * L + i])
                        EXPECT(a == 0.0f, "%s: masked alpha[%d][%d] = %g",
                               attn_kind_name(cs[k].kind), b, i, a);
                    sum += a;
                }
                EXPECT(fabs(sum - 1.0) <= 1e-5, "%s: row %d sums to %.9g",
                       attn_kind_name(cs[k].kind), b, sum);
            }
        }
        free(out);
        fixture_free(&f);
    }
}

// A row with every position masked: alpha 0, context 0, and finite (zero) gradients.
static void test_all_masked_row_no_nan(void) {
    int n;
    const AttnConfig *cs = all_configs(&n);
    for (int k = 0; k < n; k++) {
        Fixture f;
        int B = 2, L = 5, D = cs[k].D;
        fixture_init(&f, cs[k], B, L, 0, 1, 700 + (uint64_t)k);
        memset(f.mask + L, 0, (size_t)L);  // row 1 fully masked
        size_t no = STEPS * out_per_step(&f);
        float *out = xmalloc(no * sizeof(float)), *dout = xmalloc(no * sizeof(float));
        for (size_t i = 0; i < no; i++) dout[i] = 1.0f;
        fixture_forward(&f, out);
        fixture_backward(&f, dout);
        const char *name = attn_kind_name(cs[k].kind);
        for (int s = 0; s < STEPS; s++) {
            const float *o = out + s * out_per_step(&f);
            for (int d = 0; d < D; d++) EXPECT(o[D + d] == 0.0f, "%s: context %g", name, o[D + d]);
            for (int i = 0; i < L; i++)
                EXPECT(o[B * D + L + i] == 0.0f, "%s: alpha %g", name, o[B * D + L + i]);
        }
        for (size_t i = 0; i < no; i++) EXPECT(isfinite(out[i]), "%s: out[%zu] not finite", name, i);
        for (size_t i = 0; i < f.grads.numel; i++)
            EXPECT(isfinite(f.grads.data[i]), "%s: grad[%zu] not finite", name, i);
        for (size_t i = 0; i < (size_t)B * L * D; i++)
            EXPECT(isfinite(f.dkeys[i]), "%s: dkeys[%zu] not finite", name, i);
        for (int i = L * D; i < B * L * D; i++)  // the masked row's keys get nothing
            EXPECT(f.dkeys[i] == 0.0f, "%s: dkeys of masked row %g", name, f.dkeys[i]);
        for (size_t i = 0; i < (size_t)STEPS * B * f.c.H; i++)
            EXPECT(isfinite(f.dquery[i]), "%s: dquery[%zu] not finite", name, i);
        free(out), free(dout);
        fixture_free(&f);
    }
}

// --- plain-loop references ---------------------------------------------------------------------

static void expect_close(const float *fast, const double *ref, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++)
        EXPECT(fabs(fast[i] - ref[i]) <= 1e-5 + 1e-4 * fabs(ref[i]), "%s[%zu]: fast %.9g, ref %.9g",
               what, i, fast[i], ref[i]);
}

// Masked softmax in double over x (n) into out.
static void ref_softmax(double *out, const double *x, const unsigned char *m, int n) {
    double mx = -INFINITY, sum = 0.0;
    for (int i = 0; i < n; i++)
        if (!m || m[i]) mx = fmax(mx, x[i]);
    for (int i = 0; i < n; i++) {
        out[i] = (!m || m[i]) ? exp(x[i] - mx) : 0.0;
        sum += out[i];
    }
    for (int i = 0; i < n; i++) out[i] = sum > 0 ? out[i] / sum : 0.0;
}

// A = 24 runs the score's plain tail loop only; A = 80 its 32-lane blocks and a tail.
static void additive_matches_reference(int A) {
    int B = 4, L = 13, D = 16, H = 12;
    Fixture f;
    fixture_init(&f, config(ATTN_ADDITIVE, 0, D, H, A, 0, 0), B, L, 0, 1, 11);
    float *out = xmalloc(STEPS * out_per_step(&f) * sizeof(float));
    fixture_forward(&f, out);
    double *ctx = xmalloc((size_t)B * D * sizeof(double)), *alpha = xmalloc((size_t)B * L * sizeof(double));
    double *e = xmalloc((size_t)L * sizeof(double));
    const AttnParams *p = &f.p;
    for (int s = 0; s < STEPS; s++) {
        const float *q = f.query + (size_t)s * B * H;
        for (int b = 0; b < B; b++) {
            for (int i = 0; i < L; i++) {
                const float *k = f.keys + ((size_t)b * L + i) * D;
                e[i] = 0.0;
                for (int a = 0; a < A; a++) {
                    double pre = p->b[a];
                    for (int d = 0; d < D; d++) pre += (double)p->W_k[a * D + d] * k[d];
                    for (int h = 0; h < H; h++) pre += (double)p->W_q[a * H + h] * q[b * H + h];
                    e[i] += p->w[a] * tanh(pre);
                }
            }
            ref_softmax(alpha + b * L, e, f.mask + b * L, L);
            for (int d = 0; d < D; d++) {
                ctx[b * D + d] = 0.0;
                for (int i = 0; i < L; i++) ctx[b * D + d] += alpha[b * L + i] * f.keys[((size_t)b * L + i) * D + d];
            }
        }
        const float *o = out + s * out_per_step(&f);
        expect_close(o, ctx, (size_t)B * D, "additive context");
        expect_close(o + B * D, alpha, (size_t)B * L, "additive alpha");
    }
    free(ctx), free(alpha), free(e), free(out);
    fixture_free(&f);
}

static void test_additive_matches_reference(void) {
    additive_matches_reference(24);
    additive_matches_reference(80);
}

static void test_multihead_matches_reference(void) {
    int B = 4, L = 13, D = 16, H = 12, A = 24, NH = 4, dh = A / NH;
    Fixture f;
    fixture_init(&f, config(ATTN_MULTIHEAD, 0, D, H, A, NH, 0), B, L, 0, 1, 12);
    float *out = xmalloc(STEPS * out_per_step(&f) * sizeof(float));
    fixture_forward(&f, out);
    const AttnParams *p = &f.p;
    double *K = xmalloc((size_t)L * A * sizeof(double)), *V = xmalloc((size_t)L * A * sizeof(double));
    double *Q = xmalloc((size_t)A * sizeof(double)), *cat = xmalloc((size_t)A * sizeof(double));
    double *e = xmalloc((size_t)L * sizeof(double)), *ah = xmalloc((size_t)L * sizeof(double));
    double *ctx = xmalloc((size_t)B * D * sizeof(double)), *alpha = xmalloc((size_t)B * L * sizeof(double));
    for (int s = 0; s < STEPS; s++) {
        const float *q = f.query + (size_t)s * B * H;
        for (int b = 0; b < B; b++) {
            for (int i = 0; i < L; i++)
                for (int a = 0; a < A; a++) {
                    K[i * A + a] = V[i * A + a] = 0.0;
                    for (int d = 0; d < D; d++) {
                        float k = f.keys[((size_t)b * L + i) * D + d];
                        K[i * A + a] += (double)p->Wk[a * D + d] * k;
                        V[i * A + a] += (double)p->Wv[a * D + d] * k;
                    }
                }
            for (int a = 0; a < A; a++) {
                Q[a] = 0.0;
                for (int h = 0; h < H; h++) Q[a] += (double)p->Wq[a * H + h] * q[b * H + h];
            }
            for (int i = 0; i < L; i++) alpha[b * L + i] = 0.0;
            for (int h = 0; h < NH; h++) {
                for (int i = 0; i < L; i++) {
                    e[i] = 0.0;
                    for (int j = 0; j < dh; j++) e[i] += Q[h * dh + j] * K[i * A + h * dh + j];
                    e[i] /= sqrt((double)dh);
                }
                ref_softmax(ah, e, f.mask + b * L, L);
                for (int j = 0; j < dh; j++) {
                    cat[h * dh + j] = 0.0;
                    for (int i = 0; i < L; i++) cat[h * dh + j] += ah[i] * V[i * A + h * dh + j];
                }
                for (int i = 0; i < L; i++) alpha[b * L + i] += ah[i] / NH;
            }
            for (int d = 0; d < D; d++) {
                ctx[b * D + d] = 0.0;
                for (int a = 0; a < A; a++) ctx[b * D + d] += (double)p->Wo[d * A + a] * cat[a];
            }
        }
        const float *o = out + s * out_per_step(&f);
        expect_close(o, ctx, (size_t)B * D, "multi-head context");
        expect_close(o + B * D, alpha, (size_t)B * L, "multi-head alpha");
    }
    free(K), free(V), free(Q), free(cat), free(e), free(ah), free(ctx), free(alpha), free(out);
    fixture_free(&f);
}

// dot, scaled-dot and multiplicative against plain loops in double.
static void test_simple_scores_match_reference(void) {
    int B = 3, L = 9, D = 6;
    AttnKind kinds[] = {ATTN_DOT, ATTN_SCALED_DOT, ATTN_MULTIPLICATIVE};
    for (int k = 0; k < 3; k++) {
        int H = kinds[k] == ATTN_MULTIPLICATIVE ? 5 : D;
        Fixture f;
        fixture_init(&f, config(kinds[k], 0, D, H, 0, 0, 0), B, L, 0, 1, 13 + (uint64_t)k);
        float *out = xmalloc(STEPS * out_per_step(&f) * sizeof(float));
        fixture_forward(&f, out);
        double *ctx = xmalloc((size_t)B * D * sizeof(double));
        double *alpha = xmalloc((size_t)B * L * sizeof(double)), e[9];
        for (int s = 0; s < STEPS; s++) {
            const float *q = f.query + (size_t)s * B * H;
            for (int b = 0; b < B; b++) {
                for (int i = 0; i < L; i++) {
                    const float *key = f.keys + ((size_t)b * L + i) * D;
                    e[i] = 0.0;
                    for (int h = 0; h < H; h++)
                        for (int d = 0; d < D; d++) {
                            double w = kinds[k] == ATTN_MULTIPLICATIVE ? f.p.W[h * D + d] : (h == d);
                            e[i] += q[b * H + h] * w * key[d];
                        }
                    if (kinds[k] == ATTN_SCALED_DOT) e[i] /= sqrt((double)D);
                }
                ref_softmax(alpha + b * L, e, f.mask + b * L, L);
                for (int d = 0; d < D; d++) {
                    ctx[b * D + d] = 0.0;
                    for (int i = 0; i < L; i++)
                        ctx[b * D + d] += alpha[b * L + i] * f.keys[((size_t)b * L + i) * D + d];
                }
            }
            const float *o = out + s * out_per_step(&f);
            expect_close(o, ctx, (size_t)B * D, attn_kind_name(kinds[k]));
            expect_close(o + B * D, alpha, (size_t)B * L, attn_kind_name(kinds[k]));
        }
        free(ctx), free(alpha), free(out);
        fixture_free(&f);
    }
}

// Backward adds to what the gradient buffers already hold (no kernel overwrites with beta = 0):
// starting from random gradients, two backward passes add the same amount each.
static void test_backward_accumulates(void) {
    int n;
    const AttnConfig *cs = all_configs(&n);
    for (int k = 0; k < n; k++) {
        Fixture f;
        int B = 3, L = 8;
        fixture_init(&f, cs[k], B, L, 2, 1, 900 + (uint64_t)k);
        Rng rng;
        rng_seed(&rng, 3);
        size_t no = STEPS * out_per_step(&f), nk = (size_t)B * L * f.c.D;
        size_t nq = (size_t)STEPS * B * f.c.H, np = f.grads.numel;
        float *out = xmalloc(no * sizeof(float)), *dout = xmalloc(no * sizeof(float));
        fill_uniform(dout, no, -1.0f, 1.0f, &rng);
        fill_uniform(f.dkeys, nk, -1.0f, 1.0f, &rng);
        fill_uniform(f.dquery, nq, -1.0f, 1.0f, &rng);
        fill_uniform(f.grads.data, np, -1.0f, 1.0f, &rng);
        size_t total = nk + nq + np;
        float *g[3];
        for (int r = 0; r < 3; r++) {
            if (r > 0) {
                fixture_forward(&f, out);
                fixture_backward(&f, dout);
            }
            g[r] = xmalloc(total * sizeof(float));
            memcpy(g[r], f.dkeys, nk * sizeof(float));
            memcpy(g[r] + nk, f.dquery, nq * sizeof(float));
            memcpy(g[r] + nk + nq, f.grads.data, np * sizeof(float));
        }
        for (size_t i = 0; i < total; i++) {
            double d1 = (double)g[1][i] - g[0][i], d2 = (double)g[2][i] - g[1][i];
            EXPECT(fabs(d2 - d1) <= 1e-5 + 1e-4 * fabs(d1), "%s: gradient %zu: +%g then +%g",
                   attn_kind_name(cs[k].kind), i, d1, d2);
        }
        for (int r = 0; r < 3; r++) free(g[r]);
        free(out), free(dout);
        fixture_free(&f);
    }
}

// W_q packed (p.W_q_t, p.W_q_n, core/gemm_packed.h) against gemm() on W_q: the same
// contexts, alphas and gradients up to summation order (|packed - plain| <= 1e-5 +
// 1e-4 |plain|), with H and A off the packed kernel's 32-column panels (A = 40, H = 45) and
// on them (A = 64, H = 32); additive and local-predictive with the additive score.
static void packed_query_matches(AttnConfig c, const char *name) {
    const int B = 5, L = 9;
    float *res[3];
    size_t no = 0, total = 0;
    // packed 2: the packs of 2 W_q, to see that attn_forward and attn_backward read them
    for (int packed = 0; packed <= 2; packed++) {
        Fixture f;
        fixture_init(&f, c, B, L, 1, 1, 4242);
        PackedMatrix qt, qn;
        float *wq = xmalloc((size_t)c.A * c.H * sizeof(float));
        for (size_t i = 0; i < (size_t)c.A * c.H; i++) wq[i] = (packed == 2 ? 2.0f : 1.0f) * f.p.W_q[i];
        if (packed) {
            packed_alloc(&qt, c.H, c.A);
            packed_alloc(&qn, c.A, c.H);
            packed_pack(&qt, true, wq, c.H);
            packed_pack(&qn, false, wq, c.H);
            f.p.W_q_t = &qt;
            f.p.W_q_n = &qn;
        }
        no = STEPS * out_per_step(&f);
        size_t nk = (size_t)B * L * c.D, nq = (size_t)STEPS * B * c.H, np = f.grads.numel;
        total = no + nk + nq + np;
        float *dout = xmalloc(no * sizeof(float));
        Rng rng;
        rng_seed(&rng, 5);
        fill_uniform(dout, no, -1.0f, 1.0f, &rng);
        res[packed] = xmalloc(total * sizeof(float));
        fixture_forward(&f, res[packed]);
        fixture_backward(&f, dout);
        memcpy(res[packed] + no, f.dkeys, nk * sizeof(float));
        memcpy(res[packed] + no + nk, f.dquery, nq * sizeof(float));
        memcpy(res[packed] + no + nk + nq, f.grads.data, np * sizeof(float));
        if (packed) packed_free(&qt), packed_free(&qn);
        free(wq), free(dout);
        fixture_free(&f);
    }
    double moved = 0.0;
    for (size_t i = 0; i < total; i++) {
        const double plain = res[0][i], fast = res[1][i];
        EXPECT(fabs(fast - plain) <= 1e-5 + 1e-4 * fabs(plain), "%s: %s %zu: packed %.9g, gemm %.9g",
               name, i < no ? "output" : "gradient", i, fast, plain);
        if (i < no) moved = fmax(moved, fabs((double)res[2][i] - plain));
    }
    EXPECT(moved > 1e-3, "%s: packs of 2 W_q moved the outputs by %g only", name, moved);
    free(res[0]), free(res[1]), free(res[2]);
}

static void test_packed_query_matches_gemm(void) {
    packed_query_matches(config(ATTN_ADDITIVE, 0, 16, 45, 40, 0, 0), "additive 45 x 40");
    packed_query_matches(config(ATTN_ADDITIVE, 0, 16, 32, 64, 0, 0), "additive 32 x 64");
    packed_query_matches(config(ATTN_LOCAL_PREDICTIVE, ATTN_ADDITIVE, 16, 45, 40, 0, 2),
                         "local-predictive, additive score");
}

// prep is per image: image b's slice equals prepare on that image alone, and a batch built
// from reordered slices (as beam search does) attends exactly like the original rows.
static void test_prep_is_per_image(void) {
    int n;
    const AttnConfig *cs = all_configs(&n);
    for (int k = 0; k < n; k++) {
        Fixture f;
        int B = 3, L = 8, D = cs[k].D, H = cs[k].H;
        fixture_init(&f, cs[k], B, L, 2, 0, 1100 + (uint64_t)k);
        const char *name = attn_kind_name(cs[k].kind);
        size_t n1 = attn_prep_floats(&f.c, 1, L);
        EXPECT(f.prep_n == (size_t)B * n1, "%s: prep %zu != B * %zu", name, f.prep_n, n1);
        attn_prepare(f.prep, f.keys, &f.p, &f.c, B, L);
        float *one = xmalloc((n1 + 1) * sizeof(float));
        float *rprep = xmalloc((f.prep_n + 1) * sizeof(float));
        float *rkeys = xmalloc((size_t)B * L * D * sizeof(float));
        float *rquery = xmalloc((size_t)B * H * sizeof(float));
        for (int b = 0; b < B; b++) {
            attn_prepare(one, f.keys + (size_t)b * L * D, &f.p, &f.c, 1, L);
            for (size_t i = 0; i < n1; i++)
                EXPECT_NEAR(f.prep[b * n1 + i], one[i], 1e-6, 1e-5);
            int r = B - 1 - b;  // reversed batch
            memcpy(rprep + r * n1, f.prep + b * n1, n1 * sizeof(float));
            memcpy(rkeys + (size_t)r * L * D, f.keys + (size_t)b * L * D, (size_t)L * D * sizeof(float));
            memcpy(rquery + (size_t)r * H, f.query + (size_t)b * H, (size_t)H * sizeof(float));
        }
        float *ctx = xmalloc((size_t)B * D * sizeof(float)), *alpha = xmalloc((size_t)B * L * sizeof(float));
        float *rctx = xmalloc((size_t)B * D * sizeof(float)), *ralpha = xmalloc((size_t)B * L * sizeof(float));
        attn_forward(ctx, alpha, f.cache, f.prep, f.keys, f.query, NULL, NULL, &f.p, &f.c, 2, B,
                     L);
        attn_forward(rctx, ralpha, f.cache, rprep, rkeys, rquery, NULL, NULL, &f.p, &f.c, 2, B,
                     L);
        for (int b = 0; b < B; b++) {
            int r = B - 1 - b;
            for (int d = 0; d < D; d++) EXPECT_NEAR(rctx[r * D + d], ctx[b * D + d], 1e-6, 1e-5);
            for (int i = 0; i < L; i++) EXPECT_NEAR(ralpha[r * L + i], alpha[b * L + i], 1e-6, 1e-5);
        }
        free(one), free(rprep), free(rkeys), free(rquery), free(ctx), free(alpha), free(rctx), free(ralpha);
        fixture_free(&f);
    }
}

// --- lengths -----------------------------------------------------------------------------------

// Configurations for the length tests: every kind, local ones at steps whose windows reach past
// the shorter rows' ends.
static const AttnConfig *length_configs(int *n) {
    static AttnConfig cs[12];
    int k = 0;
    const AttnConfig *all = all_configs(n);
    for (int i = 0; i < *n; i++) cs[k++] = all[i];
    cs[k++] = config(ATTN_LOCAL_MONOTONIC, ATTN_DOT, 4, 4, 0, 0, 1);
    cs[k++] = config(ATTN_LOCAL_PREDICTIVE, ATTN_MULTIPLICATIVE, 4, 3, 5, 0, 12);
    *n = k;
    return cs;
}

// A row of length S in a batch padded to L attends as that row alone with L = S does: the
// same context and alpha (0 past S), the same gradients of its keys (0 past S) and queries,
// and the batch's parameter gradients are the sum of the rows' alone. Steps t0 = 4, 5 put
// local-monotonic windows past the shorter rows' ends (centre min(t, S - 1)); local-predictive
// centres (S - 1) sigmoid(.) are the row's own. The padding holds random keys, so a kernel
// that reads them differs. Rows alone run through gemm() with other sizes: up to 1e-6 + 1e-5.
static void test_lengths_match_unpadded(void) {
    int n;
    const AttnConfig *cs = length_configs(&n);
    const int B = 3, L = 8, t0 = 4;
    for (int k = 0; k < n; k++) {
        const char *name = attn_kind_name(cs[k].kind);
        const int D = cs[k].D, H = cs[k].H;
        Fixture f;
        fixture_init(&f, cs[k], B, L, t0, MASK_LENGTHS, 1300 + (uint64_t)k);
        if (cs[k].kind == ATTN_LOCAL_PREDICTIVE) keep_centres_off_boundaries(&f, 0.01, 1301);
        size_t no = STEPS * out_per_step(&f);
        float *out = xmalloc(no * sizeof(float)), *dout = xmalloc(no * sizeof(float));
        Rng rng;
        rng_seed(&rng, 1302 + (uint64_t)k);
        fill_uniform(dout, no, -1.0f, 1.0f, &rng);
        fixture_forward(&f, out);
        fixture_backward(&f, dout);
        float *gsum = xcalloc(f.grads.numel + 1, sizeof(float));
        for (int b = 0; b < B; b++) {
            const int S = f.lengths[b];
            Fixture r;
            fixture_init(&r, cs[k], 1, S, t0, 0, 1400 + (uint64_t)k);
            memcpy(r.params.data, f.params.data, f.params.numel * sizeof(float));
            memcpy(r.keys, f.keys + (size_t)b * L * D, (size_t)S * D * sizeof(float));
            for (int s = 0; s < STEPS; s++)
                memcpy(r.query + (size_t)s * H, f.query + ((size_t)s * B + b) * H,
                       (size_t)H * sizeof(float));
            size_t ro = STEPS * out_per_step(&r);
            float *rout = xmalloc(ro * sizeof(float)), *rdout = xmalloc(ro * sizeof(float));
            for (int s = 0; s < STEPS; s++) {
                const float *o = dout + s * out_per_step(&f);
                float *q = rdout + s * out_per_step(&r);
                memcpy(q, o + (size_t)b * D, (size_t)D * sizeof(float));
                memcpy(q + D, o + (size_t)B * D + (size_t)b * L, (size_t)S * sizeof(float));
            }
            fixture_forward(&r, rout);
            fixture_backward(&r, rdout);
            for (int s = 0; s < STEPS; s++) {
                const float *o = out + s * out_per_step(&f), *q = rout + s * out_per_step(&r);
                for (int d = 0; d < D; d++) EXPECT_NEAR(o[(size_t)b * D + d], q[d], 1e-6, 1e-5);
                const float *a = o + (size_t)B * D + (size_t)b * L;
                for (int i = 0; i < S; i++) EXPECT_NEAR(a[i], q[D + i], 1e-6, 1e-5);
                for (int i = S; i < L; i++)
                    EXPECT(a[i] == 0.0f, "%s: row %d (length %d) step %d: alpha[%d] = %g", name, b,
                           S, s, i, a[i]);
                for (int h = 0; h < H; h++)
                    EXPECT_NEAR(f.dquery[((size_t)s * B + b) * H + h], r.dquery[(size_t)s * H + h],
                                1e-6, 1e-5);
            }
            const float *dk = f.dkeys + (size_t)b * L * D;
            for (int i = 0; i < S * D; i++) EXPECT_NEAR(dk[i], r.dkeys[i], 1e-6, 1e-5);
            for (int i = S * D; i < L * D; i++)
                EXPECT(dk[i] == 0.0f, "%s: row %d (length %d): dkeys[%d] = %g past the length",
                       name, b, S, i, dk[i]);
            for (size_t i = 0; i < f.grads.numel; i++) gsum[i] += r.grads.data[i];
            free(rout), free(rdout);
            fixture_free(&r);
        }
        for (size_t i = 0; i < f.grads.numel; i++) EXPECT_NEAR(f.grads.data[i], gsum[i], 1e-6, 1e-5);
        free(gsum), free(out), free(dout);
        fixture_free(&f);
    }
}

// Rows that share their sources' keys and prep (attn_forward_shared, beam search's rows of
// one sentence) compute exactly what attn_forward computes on those keys and prep copied to
// every row, bit for bit: every kind, ragged lengths (each row its source's), 7 rows over 3
// sources in an order with repeats and a source read again after another.
static void test_forward_shared_equals_copied_rows(void) {
    int n;
    const AttnConfig *cs = length_configs(&n);
    enum { NS = 3, R = 7, L = 8 };
    static const int src[R] = {0, 0, 1, 2, 2, 2, 1};
    for (int k = 0; k < n; k++) {
        const char *name = attn_kind_name(cs[k].kind);
        const int D = cs[k].D, H = cs[k].H;
        Fixture f;
        fixture_init(&f, cs[k], NS, L, 4, MASK_LENGTHS, 1500 + (uint64_t)k);
        attn_prepare(f.prep, f.keys, &f.p, &f.c, NS, L);
        const size_t n1 = attn_prep_floats(&f.c, 1, L), cache = attn_step_cache_floats(&f.c, R, L);
        float *rkeys = xmalloc((size_t)R * L * D * sizeof(float));
        float *rprep = xmalloc(((size_t)R * n1 + 1) * sizeof(float));
        float *query = xmalloc((size_t)R * H * sizeof(float));
        float *c1 = xcalloc(cache + 1, sizeof(float)), *c2 = xcalloc(cache + 1, sizeof(float));
        float *ctx1 = xmalloc((size_t)R * D * sizeof(float)), *ctx2 = xmalloc((size_t)R * D * sizeof(float));
        float *a1 = xmalloc((size_t)R * L * sizeof(float)), *a2 = xmalloc((size_t)R * L * sizeof(float));
        int len[R];
        Rng rng;
        rng_seed(&rng, 1600 + (uint64_t)k);
        fill_uniform(query, (size_t)R * H, -1.0f, 1.0f, &rng);
        for (int r = 0; r < R; r++) {
            memcpy(rkeys + (size_t)r * L * D, f.keys + (size_t)src[r] * L * D, (size_t)L * D * sizeof(float));
            memcpy(rprep + (size_t)r * n1, f.prep + (size_t)src[r] * n1, n1 * sizeof(float));
            len[r] = f.lengths[src[r]];
        }
        attn_forward(ctx1, a1, c1, rprep, rkeys, query, NULL, len, &f.p, &f.c, 4, R, L);
        attn_forward_shared(ctx2, a2, c2, f.prep, f.keys, src, NS, query, NULL, len, &f.p, &f.c, 4,
                            R, L);
        EXPECT(memcmp(ctx1, ctx2, (size_t)R * D * sizeof(float)) == 0, "%s: context differs", name);
        EXPECT(memcmp(a1, a2, (size_t)R * L * sizeof(float)) == 0, "%s: alpha differs", name);
        EXPECT(memcmp(c1, c2, cache * sizeof(float)) == 0, "%s: step cache differs", name);
        // src NULL reads row r's own keys: attn_forward itself.
        attn_forward_shared(ctx2, a2, c2, rprep, rkeys, NULL, R, query, NULL, len, &f.p, &f.c, 4, R, L);
        EXPECT(memcmp(ctx1, ctx2, (size_t)R * D * sizeof(float)) == 0, "%s: src NULL differs", name);
        free(rkeys), free(rprep), free(query), free(c1), free(c2);
        free(ctx1), free(ctx2), free(a1), free(a2);
        fixture_free(&f);
    }
}

// Lengths all L compute exactly what no lengths (NULL) do, bit for bit, forward and backward:
// the captioner passes NULL and its results must not move.
static void test_full_lengths_equal_null(void) {
    int n;
    const AttnConfig *cs = length_configs(&n);
    const int B = 3, L = 8;
    for (int k = 0; k < n; k++) {
        Fixture f[2];
        float *res[2];
        size_t no = 0, total = 0;
        for (int v = 0; v < 2; v++) {
            fixture_init(&f[v], cs[k], B, L, 2, MASK_POSITIONS, 1500 + (uint64_t)k);
            if (v) {
                f[v].lengths = xmalloc((size_t)B * sizeof(int));
                for (int b = 0; b < B; b++) f[v].lengths[b] = L;
            }
            no = STEPS * out_per_step(&f[v]);
            size_t nk = (size_t)B * L * cs[k].D, nq = (size_t)STEPS * B * cs[k].H;
            total = no + nk + nq + f[v].grads.numel;
            float *dout = xmalloc(no * sizeof(float));
            Rng rng;
            rng_seed(&rng, 1501);
            fill_uniform(dout, no, -1.0f, 1.0f, &rng);
            res[v] = xmalloc(total * sizeof(float));
            fixture_forward(&f[v], res[v]);
            fixture_backward(&f[v], dout);
            memcpy(res[v] + no, f[v].dkeys, nk * sizeof(float));
            memcpy(res[v] + no + nk, f[v].dquery, nq * sizeof(float));
            memcpy(res[v] + no + nk + nq, f[v].grads.data, f[v].grads.numel * sizeof(float));
            free(dout);
        }
        EXPECT(memcmp(res[0], res[1], total * sizeof(float)) == 0,
               "%s: lengths all L differ from NULL lengths", attn_kind_name(cs[k].kind));
        for (int v = 0; v < 2; v++) free(res[v]), fixture_free(&f[v]);
    }
}

// A row of length 0: alpha 0 and context 0, no NaN, and no gradient to its keys; a row whose
// keys past its length are NaN still gives finite outputs (they are never read forward).
static void test_zero_length_row(void) {
    int n;
    const AttnConfig *cs = length_configs(&n);
    const int B = 3, L = 6;
    for (int k = 0; k < n; k++) {
        const char *name = attn_kind_name(cs[k].kind);
        const int D = cs[k].D;
        Fixture f;
        fixture_init(&f, cs[k], B, L, 1, MASK_LENGTHS, 1600 + (uint64_t)k);
        f.lengths[0] = L, f.lengths[1] = 0, f.lengths[2] = 3;
        for (int i = 3 * D; i < L * D; i++) f.keys[(size_t)2 * L * D + i] = NAN;
        size_t no = STEPS * out_per_step(&f);
        float *out = xmalloc(no * sizeof(float)), *dout = xmalloc(no * sizeof(float));
        for (size_t i = 0; i < no; i++) dout[i] = 1.0f;
        fixture_forward(&f, out);
        for (int s = 0; s < STEPS; s++) {
            const float *o = out + s * out_per_step(&f);
            for (int d = 0; d < D; d++)
                EXPECT(o[D + d] == 0.0f, "%s: length-0 row context[%d] = %g", name, d, o[D + d]);
            for (int i = 0; i < L; i++)
                EXPECT(o[B * D + L + i] == 0.0f, "%s: length-0 row alpha[%d] = %g", name, i,
                       o[B * D + L + i]);
            for (size_t i = 0; i < out_per_step(&f); i++)
                EXPECT(isfinite(o[i]), "%s: step %d output %zu = %g", name, s, i, o[i]);
        }
        fixture_backward(&f, dout);
        for (int i = 0; i < L * D; i++)
            EXPECT(f.dkeys[(size_t)L * D + i] == 0.0f, "%s: length-0 row dkeys[%d] = %g", name, i,
                   f.dkeys[(size_t)L * D + i]);
        free(out), free(dout);
        fixture_free(&f);
    }
}

// --- none and local windows --------------------------------------------------------------------

static void test_none_returns_mean(void) {
    int B = 3, L = 7, D = 5;
    for (int masked = 0; masked <= 1; masked++) {
        Fixture f;
        fixture_init(&f, config(ATTN_NONE, 0, D, 2, 0, 0, 0), B, L, 0, masked, 21);
        float *out = xmalloc(STEPS * out_per_step(&f) * sizeof(float));
        fixture_forward(&f, out);
        for (int b = 0; b < B; b++) {
            int n = 0;
            double mean[8] = {0};
            for (int i = 0; i < L; i++) {
                if (f.mask && !f.mask[b * L + i]) continue;
                n++;
                for (int d = 0; d < D; d++) mean[d] += f.keys[((size_t)b * L + i) * D + d];
            }
            for (int d = 0; d < D; d++) EXPECT_NEAR(out[b * D + d], mean[d] / n, 1e-6, 1e-5);
            for (int i = 0; i < L; i++) {
                double want = (f.mask && !f.mask[b * L + i]) ? 0.0 : 1.0 / n;
                EXPECT_NEAR(out[B * D + b * L + i], want, 1e-7, 1e-6);
            }
        }
        free(out);
        fixture_free(&f);
    }
}

// Monotonic: zero outside [c - W, c + W] with c = min(t, L - 1), positive inside; with a zero
// query the dot scores vanish and alpha is the renormalised Gaussian with sigma = W / 2.
static void test_local_monotonic_window(void) {
    int B = 2, L = 11, D = 3, W = 2;
    AttnConfig c = config(ATTN_LOCAL_MONOTONIC, ATTN_DOT, D, D, 0, 0, W);
    Fixture f;
    fixture_init(&f, c, B, L, 0, 0, 31);
    size_t cn = attn_step_cache_floats(&c, B, L);
    float *ctx = xmalloc((size_t)B * D * sizeof(float)), *alpha = xmalloc((size_t)B * L * sizeof(float));
    float *cache = xmalloc(cn * sizeof(float));
    float zero_q[2 * 3] = {0};
    for (int t = 0; t < L + 3; t++) {
        int centre = t < L - 1 ? t : L - 1;
        for (int zq = 0; zq <= 1; zq++) {
            attn_forward(ctx, alpha, cache, f.prep, f.keys, zq ? zero_q : f.query, NULL, NULL,
                         &f.p, &c, t, B, L);
            for (int b = 0; b < B; b++) {
                double sum = 0.0, gsum = 0.0;
                for (int i = 0; i < L; i++) {
                    float a = alpha[b * L + i];
                    if (i < centre - W || i > centre + W)
                        EXPECT(a == 0.0f, "t %d: alpha[%d] = %g outside the window", t, i, a);
                    else
                        EXPECT(a > 0.0f, "t %d: alpha[%d] = 0 inside the window", t, i);
                    sum += a;
                    if (i >= centre - W && i <= centre + W)
                        gsum += exp(-(double)(i - centre) * (i - centre) / (2.0 * (W / 2.0) * (W / 2.0)));
                }
                EXPECT(fabs(sum - 1.0) <= 1e-5, "t %d: sum %g", t, sum);
                if (zq)
                    for (int i = centre - W; i <= centre + W; i++) {
                        if (i < 0 || i >= L) continue;
                        double g = exp(-(double)(i - centre) * (i - centre) / (2.0 * (W / 2.0) * (W / 2.0)));
                        EXPECT_NEAR(alpha[b * L + i], g / gsum, 1e-6, 1e-5);
                    }
            }
        }
    }
    free(ctx), free(alpha), free(cache);
    fixture_free(&f);
}

// Predictive: zero outside [round(p) - W, round(p) + W], p = (L - 1) sigmoid(v_p . tanh(W_p q))
// recomputed here with plain loops.
static void test_local_predictive_window(void) {
    int B = 4, L = 15, D = 4, H = 3, A = 5, W = 2;
    AttnConfig c = config(ATTN_LOCAL_PREDICTIVE, ATTN_MULTIPLICATIVE, D, H, A, 0, W);
    Fixture f;
    fixture_init(&f, c, B, L, 0, 0, 41);
    // Spread the centres over the sequence with a larger v_p.
    for (int a = 0; a < A; a++) f.p.v_p[a] *= 4.0f;
    keep_centres_off_boundaries(&f, 0.01, 43);
    float *out = xmalloc(STEPS * out_per_step(&f) * sizeof(float));
    fixture_forward(&f, out);
    for (int s = 0; s < STEPS; s++) {
        const float *alpha = out + s * out_per_step(&f) + (size_t)B * D;
        for (int b = 0; b < B; b++) {
            double p = predictive_centre(&f, f.query + (size_t)s * B * H, b);
            int r = (int)floor(p + 0.5);
            for (int i = 0; i < L; i++) {
                if (i < r - W || i > r + W)
                    EXPECT(alpha[b * L + i] == 0.0f, "p %.3f: alpha[%d] = %g", p, i, alpha[b * L + i]);
                else
                    EXPECT(alpha[b * L + i] > 0.0f, "p %.3f: alpha[%d] = 0", p, i);
            }
        }
    }
    free(out);
    fixture_free(&f);
}

// Issue 56: a NaN centre of local-predictive attention (a NaN in W_p, v_p or the query)
// once reached (int)floorf(p + 0.5f), undefined behaviour (build-san has UBSan's
// float-cast-overflow check for it). Now the row's window is the whole sequence and its
// alpha and context are NaN: the NaN propagates into the loss and the gradients, where the
// trainer's finite check stops the run, and the other rows are untouched.
static void test_local_predictive_nan_centre(void) {
    int B = 3, L = 9, D = 4, H = 3, A = 5, W = 2;
    AttnConfig c = config(ATTN_LOCAL_PREDICTIVE, ATTN_MULTIPLICATIVE, D, H, A, 0, W);
    Fixture f;
    fixture_init(&f, c, B, L, 0, 0, 47);
    // Row 1's query is NaN in both steps: its centre is NaN; rows 0 and 2 stay finite.
    for (int s = 0; s < STEPS; s++)
        for (int h = 0; h < H; h++) f.query[((size_t)s * B + 1) * H + h] = NAN;
    size_t n = STEPS * out_per_step(&f);
    float *out = xmalloc(n * sizeof(float));
    fixture_forward(&f, out);
    for (int s = 0; s < STEPS; s++) {
        const float *ctx = out + s * out_per_step(&f), *alpha = ctx + (size_t)B * D;
        for (int b = 0; b < B; b++) {
            int nan_alpha = 0, nan_ctx = 0;
            for (int i = 0; i < L; i++) nan_alpha += isnan(alpha[b * L + i]) != 0;
            for (int d = 0; d < D; d++) nan_ctx += isnan(ctx[b * D + d]) != 0;
            if (b == 1) {
                EXPECT(nan_alpha == L && nan_ctx == D, "step %d: NaN centre gave %d NaN weights, "
                       "%d NaN context values", s, nan_alpha, nan_ctx);
            } else {
                EXPECT(nan_alpha == 0 && nan_ctx == 0, "step %d row %d: finite centre, NaN output", s, b);
            }
        }
    }
    // The backward runs (no UB, no CHECK) and lets the NaN reach the gradients.
    float *dout = xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) dout[i] = 1.0f;
    fixture_backward(&f, dout);
    int nan_grads = 0;
    for (size_t i = 0; i < f.grads.numel; i++) nan_grads += isnan(f.grads.data[i]) != 0;
    EXPECT(nan_grads > 0, "the NaN centre left every parameter gradient finite");
    free(dout);
    free(out);
    fixture_free(&f);
}

// --- names, layout, weighted sum ---------------------------------------------------------------

static void test_kind_parse_and_name(void) {
    const char *names[] = {"none", "additive", "dot", "scaled-dot", "multiplicative",
                           "multi-head", "local-monotonic", "local-predictive"};
    int seen[8] = {0};
    for (int k = 0; k < 8; k++) {
        AttnKind kind = (AttnKind)-1;
        EXPECT(attn_kind_parse(names[k], &kind) == 0, "parse %s", names[k]);
        EXPECT((int)kind >= 0 && (int)kind < 8, "%s -> %d", names[k], (int)kind);
        if ((int)kind >= 0 && (int)kind < 8) seen[kind]++;
        EXPECT(strcmp(attn_kind_name(kind), names[k]) == 0, "name(%s) = %s", names[k],
               attn_kind_name(kind));
    }
    for (int k = 0; k < 8; k++) EXPECT(seen[k] == 1, "kind %d parsed %d times", k, seen[k]);
    AttnKind kind = ATTN_DOT;
    EXPECT(attn_kind_parse("bahdanau", &kind) == -1);
    EXPECT(attn_kind_parse("", &kind) == -1);
    EXPECT(attn_kind_parse("Dot", &kind) == -1);
    EXPECT(kind == ATTN_DOT, "a failed parse changed the kind");
}

static void expect_tensor(const Block *b, const char *name, int d0, int d1) {
    const BlockTensor *t = block_find(b, name);
    EXPECT(t != NULL, "no tensor %s", name);
    if (!t) return;
    EXPECT(t->shape[0] == d0 && (d1 == 0 ? t->ndim == 1 : t->ndim == 2 && t->shape[1] == d1),
           "%s has the wrong shape", name);
}

static void test_params_layout(void) {
    struct {
        AttnConfig c;
        int count;
    } cases[] = {
        {config(ATTN_NONE, 0, 4, 3, 5, 0, 0), 0},
        {config(ATTN_DOT, 0, 4, 4, 5, 0, 0), 0},
        {config(ATTN_ADDITIVE, 0, 4, 3, 5, 0, 0), 4},
        {config(ATTN_MULTIPLICATIVE, 0, 4, 3, 5, 0, 0), 1},
        {config(ATTN_MULTIHEAD, 0, 4, 3, 6, 2, 0), 4},
        {config(ATTN_LOCAL_MONOTONIC, 0, 4, 3, 5, 0, 2), 1},
        {config(ATTN_LOCAL_PREDICTIVE, ATTN_ADDITIVE, 4, 3, 5, 0, 2), 6},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        Block b = {0};
        AttnParams p;
        attn_params_layout(&b, &p, &cases[k].c, "dec.att");
        EXPECT(b.count == cases[k].count, "%s: %d tensors", attn_kind_name(cases[k].c.kind), b.count);
        block_alloc(&b);
        Rng rng;
        rng_seed(&rng, 5);
        attn_params_init(&p, &cases[k].c, &rng);
        // Views a kind does not use stay NULL; those it uses point into the block.
        float *views[] = {p.W_k, p.W_q, p.b, p.w, p.W, p.Wq, p.Wk, p.Wv, p.Wo, p.W_p, p.v_p};
        int set = 0;
        for (size_t v = 0; v < sizeof views / sizeof views[0]; v++)
            if (views[v]) {
                set++;
                EXPECT(views[v] >= b.data && views[v] < b.data + b.numel, "view outside the block");
            }
        EXPECT(set == cases[k].count, "%d views set", set);
        // Initialised within +-1/sqrt(fan_in) <= 1, and not all zero.
        double mx = 0.0;
        for (size_t i = 0; i < b.numel; i++) mx = fmax(mx, fabs(b.data[i]));
        EXPECT(mx <= 1.0, "init value %g", mx);
        if (cases[k].count) EXPECT(mx > 0.0, "init left everything zero");
        block_free(&b);
    }
    Block b = {0};
    AttnParams p;
    AttnConfig c = config(ATTN_LOCAL_PREDICTIVE, ATTN_ADDITIVE, 4, 3, 5, 0, 2);
    attn_params_layout(&b, &p, &c, "att");
    expect_tensor(&b, "att.W_k", 5, 4);
    expect_tensor(&b, "att.W_q", 5, 3);
    expect_tensor(&b, "att.b", 5, 0);
    expect_tensor(&b, "att.w", 5, 0);
    expect_tensor(&b, "att.W_p", 5, 3);
    expect_tensor(&b, "att.v_p", 5, 0);
    block_free(&b);
    c = config(ATTN_MULTIHEAD, 0, 4, 3, 6, 2, 0);
    attn_params_layout(&b, &p, &c, "att");
    expect_tensor(&b, "att.Wq", 6, 3);
    expect_tensor(&b, "att.Wk", 6, 4);
    expect_tensor(&b, "att.Wv", 6, 4);
    expect_tensor(&b, "att.Wo", 4, 6);
    block_free(&b);
    c = config(ATTN_MULTIPLICATIVE, 0, 4, 3, 0, 0, 0);
    attn_params_layout(&b, &p, &c, "att");
    expect_tensor(&b, "att.W", 3, 4);
    block_free(&b);
}

typedef struct {
    int B, L, D;
    float *w, *v, *dw, *dv;
} WsumCtx;

static void wsum_forward(void *ctx, float *out) {
    WsumCtx *c = ctx;
    weighted_sum_forward(out, c->w, c->v, c->B, c->L, c->D);
}

static void wsum_backward(void *ctx, const float *dout) {
    WsumCtx *c = ctx;
    weighted_sum_backward(c->dw, c->dv, dout, c->w, c->v, c->B, c->L, c->D);
}

static void test_weighted_sum(void) {
    WsumCtx c = {.B = 3, .L = 5, .D = 7};
    size_t nw = (size_t)c.B * c.L, nv = nw * c.D;
    Rng rng;
    rng_seed(&rng, 9);
    c.w = xmalloc(nw * sizeof(float)), c.dw = xcalloc(nw, sizeof(float));
    c.v = xmalloc(nv * sizeof(float)), c.dv = xcalloc(nv, sizeof(float));
    fill_uniform(c.w, nw, -1.0f, 1.0f, &rng);
    fill_uniform(c.v, nv, -1.0f, 1.0f, &rng);
    float out[3 * 7];
    wsum_forward(&c, out);
    for (int b = 0; b < c.B; b++)
        for (int d = 0; d < c.D; d++) {
            double ref = 0.0;
            for (int i = 0; i < c.L; i++) ref += (double)c.w[b * c.L + i] * c.v[(b * c.L + i) * c.D + d];
            EXPECT_NEAR(out[b * c.D + d], ref, 1e-6, 1e-5);
        }
    GradcheckInput in[2] = {{"w", c.w, c.dw, nw}, {"values", c.v, c.dv, nv}};
    GradcheckOp op = {.ctx = &c, .forward = wsum_forward, .backward = wsum_backward,
                      .n_out = (size_t)c.B * c.D, .inputs = in, .n_inputs = 2,
                      .eps = 1e-3, .atol = 1e-3, .rtol = 1e-2};
    EXPECT(gradcheck("weighted_sum", &op, &rng) == 0, "weighted_sum gradient check failed");
    // Accumulates: a second backward doubles the gradient; NULL outputs are allowed.
    float *dw1 = xmalloc(nw * sizeof(float));
    float dout[3 * 7];
    fill_uniform(dout, sizeof dout / sizeof dout[0], -1.0f, 1.0f, &rng);
    memset(c.dw, 0, nw * sizeof(float));
    weighted_sum_backward(c.dw, NULL, dout, c.w, c.v, c.B, c.L, c.D);
    memcpy(dw1, c.dw, nw * sizeof(float));
    weighted_sum_backward(c.dw, NULL, dout, c.w, c.v, c.B, c.L, c.D);
    for (size_t i = 0; i < nw; i++) EXPECT_NEAR(c.dw[i], 2.0 * dw1[i], 1e-6, 1e-6);
    free(dw1), free(c.w), free(c.dw), free(c.v), free(c.dv);
}

static void test_prep_sizes(void) {
    AttnConfig c = config(ATTN_DOT, 0, 4, 4, 0, 0, 0);
    EXPECT(attn_prep_floats(&c, 2, 3) == 0);
    c = config(ATTN_ADDITIVE, 0, 4, 3, 5, 0, 0);
    EXPECT(attn_prep_floats(&c, 2, 3) == 2 * 3 * 5);
    c = config(ATTN_MULTIHEAD, 0, 4, 3, 6, 2, 0);
    EXPECT(attn_prep_floats(&c, 2, 3) == 2 * 2 * 3 * 6);
    c = config(ATTN_LOCAL_PREDICTIVE, ATTN_ADDITIVE, 4, 3, 5, 0, 2);
    EXPECT(attn_prep_floats(&c, 2, 3) == 2 * 3 * 5);
}

int main(void) {
    RUN(test_kind_parse_and_name);
    RUN(test_forward_shared_equals_copied_rows);
    RUN(test_params_layout);
    RUN(test_prep_sizes);
    RUN(test_weighted_sum);
    RUN(test_gradcheck_none);
    RUN(test_gradcheck_additive);
    RUN(test_gradcheck_dot);
    RUN(test_gradcheck_scaled_dot);
    RUN(test_gradcheck_multiplicative);
    RUN(test_gradcheck_multihead);
    RUN(test_gradcheck_local_monotonic);
    RUN(test_gradcheck_local_predictive);
    RUN(test_alpha_sums_to_one_masked_zero);
    RUN(test_all_masked_row_no_nan);
    RUN(test_additive_matches_reference);
    RUN(test_multihead_matches_reference);
    RUN(test_simple_scores_match_reference);
    RUN(test_backward_accumulates);
    RUN(test_packed_query_matches_gemm);
    RUN(test_prep_is_per_image);
    RUN(test_none_returns_mean);
    RUN(test_local_monotonic_window);
    RUN(test_local_predictive_window);
    RUN(test_local_predictive_nan_centre);
    RUN(test_lengths_match_unpadded);
    RUN(test_full_lengths_equal_null);
    RUN(test_zero_length_row);
    return test_summary();
}
