// attention.c: the shared attention kernels (see attention.h for the equations and choices).
//
// Layout of the per-sequence prep and the per-step cache (floats):
//   prep   additive (or a local kind with additive score): Kp = keys W_k^T (B, L, A)
//          multi-head: (B, L, 2A), row (b, i) = [Kp = Wk k_i (A), Vp = Wv k_i (A)]
//          Both are per image contiguous: image b's prep is floats [b n1, (b + 1) n1) with
//          n1 = attn_prep_floats(c, 1, L), so beam search can copy or reorder it per image.
//   cache  every kind but multi-head: alpha (B, L)
//          additive score: qp = W_q q + b (B, A); u = tanh(Kp + qp) is not kept (it
//          was (B, L, A) a step, most of a decoder's activations at 14 x 14 x 512): the
//          backward pass recomputes it, the same function of the same floats
//          multiplicative score: qW = q W (B, D)
//          local: centre p (B); predictive also hp = tanh(W_p q) (B, A), s = sigmoid (B)
//          multi-head: Q = query Wq^T (B, A), per-head alpha (B, heads, L), concat (B, A)
#include "seq/attention.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/activations.h"
#include "core/check.h"
#include "core/dims.h"
#include "core/gemm.h"

// --- names ---------------------------------------------------------------------------------

static const char *const kind_names[] = {
    [ATTN_NONE] = "none",
    [ATTN_ADDITIVE] = "additive",
    [ATTN_DOT] = "dot",
    [ATTN_SCALED_DOT] = "scaled-dot",
    [ATTN_MULTIPLICATIVE] = "multiplicative",
    [ATTN_MULTIHEAD] = "multi-head",
    [ATTN_LOCAL_MONOTONIC] = "local-monotonic",
    [ATTN_LOCAL_PREDICTIVE] = "local-predictive",
};
enum { KIND_COUNT = sizeof kind_names / sizeof kind_names[0] };

int attn_kind_parse(const char *name, AttnKind *kind) {
    if (!name) return -1;
    for (int k = 0; k < KIND_COUNT; k++) {
        if (strcmp(name, kind_names[k]) == 0) {
            *kind = (AttnKind)k;
            return 0;
        }
    }
    return -1;
}

const char *attn_kind_name(AttnKind kind) {
    if ((int)kind < 0 || (int)kind >= KIND_COUNT) return "unknown";
    return kind_names[kind];
}

// --- configuration -------------------------------------------------------------------------

static int is_local(const AttnConfig *c) {
    return c->kind == ATTN_LOCAL_MONOTONIC || c->kind == ATTN_LOCAL_PREDICTIVE;
}

// The score function in use: the kind itself, or for local kinds the score inside the window.
static AttnKind score_kind(const AttnConfig *c) {
    if (!is_local(c)) return c->kind;
    return c->score == ATTN_NONE ? ATTN_MULTIPLICATIVE : c->score;
}

static void validate(const AttnConfig *c) {
    CHECK((int)c->kind >= 0 && (int)c->kind < KIND_COUNT, "attention kind %d", (int)c->kind);
    CHECK(c->D >= 1 && c->H >= 1, "attention D = %d, H = %d", c->D, c->H);
    AttnKind s = score_kind(c);
    if (is_local(c)) {
        CHECK(s == ATTN_ADDITIVE || s == ATTN_DOT || s == ATTN_SCALED_DOT ||
                  s == ATTN_MULTIPLICATIVE,
              "local attention cannot score with %s", attn_kind_name(s));
        CHECK(c->window >= 1, "local attention window %d < 1", c->window);
    }
    if (s == ATTN_DOT || s == ATTN_SCALED_DOT)
        CHECK(c->H == c->D, "%s attention needs H == D (H = %d, D = %d)", attn_kind_name(s), c->H,
              c->D);
    if (s == ATTN_ADDITIVE || s == ATTN_MULTIHEAD || c->kind == ATTN_LOCAL_PREDICTIVE)
        CHECK(c->A >= 1, "%s attention needs A >= 1 (A = %d)", attn_kind_name(c->kind), c->A);
    if (s == ATTN_MULTIHEAD)
        CHECK(c->heads >= 1 && c->A % c->heads == 0, "multi-head: heads %d must divide A = %d",
              c->heads, c->A);
}

static void validate_dims(const AttnConfig *c, int B, int L) {
    validate(c);
    CHECK(B >= 1 && L >= 1, "attention B = %d, L = %d", B, L);
}

// Row b's length: lengths[b] (CHECKed to lie in [0, L]), or L without lengths.
static int row_length(const int *lengths, int b, int L) {
    if (!lengths) return L;
    CHECK(lengths[b] >= 0 && lengths[b] <= L, "attention: row %d has length %d, not in [0, %d]", b,
          lengths[b], L);
    return lengths[b];
}

// --- parameters ----------------------------------------------------------------------------

static void add_param(Block *b, float **view, const char *prefix, const char *name, int ndim,
                      int d0, int d1) {
    char full[BLOCK_NAME_LEN];
    int n = snprintf(full, sizeof full, "%s.%s", prefix, name);
    CHECK(n > 0 && n < (int)sizeof full, "parameter name too long: %s.%s", prefix, name);
    if (ndim == 1)
        block_add(b, view, full, 1, d0);
    else
        block_add(b, view, full, 2, d0, d1);
}

void attn_params_layout(Block *b, AttnParams *p, const AttnConfig *c, const char *prefix) {
    validate(c);
    memset(p, 0, sizeof *p);
    int A = c->A, D = c->D, H = c->H;
    switch (score_kind(c)) {
    case ATTN_ADDITIVE:
        add_param(b, &p->W_k, prefix, "W_k", 2, A, D);
        add_param(b, &p->W_q, prefix, "W_q", 2, A, H);
        add_param(b, &p->b, prefix, "b", 1, A, 0);
        add_param(b, &p->w, prefix, "w", 1, A, 0);
        break;
    case ATTN_MULTIPLICATIVE:
        add_param(b, &p->W, prefix, "W", 2, H, D);
        break;
    case ATTN_MULTIHEAD:
        add_param(b, &p->Wq, prefix, "Wq", 2, A, H);
        add_param(b, &p->Wk, prefix, "Wk", 2, A, D);
        add_param(b, &p->Wv, prefix, "Wv", 2, A, D);
        add_param(b, &p->Wo, prefix, "Wo", 2, D, A);
        break;
    default:
        break;
    }
    if (c->kind == ATTN_LOCAL_PREDICTIVE) {
        add_param(b, &p->W_p, prefix, "W_p", 2, A, H);
        add_param(b, &p->v_p, prefix, "v_p", 1, A, 0);
    }
}

static void fill_uniform_pm(float *x, size_t n, int fan_in, Rng *rng) {
    float r = 1.0f / sqrtf((float)fan_in);
    for (size_t i = 0; i < n; i++) x[i] = r * (2.0f * rng_uniform(rng) - 1.0f);
}

void attn_params_init(AttnParams *p, const AttnConfig *c, Rng *rng) {
    validate(c);
    size_t A = (size_t)c->A, D = (size_t)c->D, H = (size_t)c->H;
    switch (score_kind(c)) {
    case ATTN_ADDITIVE:
        CHECK(p->W_k && p->W_q && p->b && p->w, "attn_params_init before block_alloc");
        fill_uniform_pm(p->W_k, (size_t)A * D, c->D, rng);
        fill_uniform_pm(p->W_q, (size_t)A * H, c->H, rng);
        memset(p->b, 0, A * sizeof(float));
        fill_uniform_pm(p->w, A, c->A, rng);
        break;
    case ATTN_MULTIPLICATIVE:
        CHECK(p->W, "attn_params_init before block_alloc");
        fill_uniform_pm(p->W, (size_t)H * D, c->D, rng);
        break;
    case ATTN_MULTIHEAD:
        CHECK(p->Wq && p->Wk && p->Wv && p->Wo, "attn_params_init before block_alloc");
        fill_uniform_pm(p->Wq, (size_t)A * H, c->H, rng);
        fill_uniform_pm(p->Wk, (size_t)A * D, c->D, rng);
        fill_uniform_pm(p->Wv, (size_t)A * D, c->D, rng);
        fill_uniform_pm(p->Wo, (size_t)D * A, c->A, rng);
        break;
    default:
        break;
    }
    if (c->kind == ATTN_LOCAL_PREDICTIVE) {
        CHECK(p->W_p && p->v_p, "attn_params_init before block_alloc");
        fill_uniform_pm(p->W_p, (size_t)A * H, c->H, rng);
        fill_uniform_pm(p->v_p, A, c->A, rng);
    }
}

// --- prep ----------------------------------------------------------------------------------

size_t attn_prep_floats(const AttnConfig *c, int B, int L) {
    validate_dims(c, B, L);
    size_t BLA = (size_t)B * L * c->A;
    switch (score_kind(c)) {
    case ATTN_ADDITIVE: return BLA;
    case ATTN_MULTIHEAD: return 2 * BLA;
    default: return 0;
    }
}

// The keys' rows B L: GEMM's M, an int. The set-ups refuse batches whose tensors pass
// DIMS_MAX floats (models/sat.h sat_check_sizes), so past that this is a programming error.
static int key_rows(int B, int L) {
    CHECK((int64_t)B * L <= DIMS_MAX, "attention keys: %d x %d rows pass %lld", B, L, (long long)DIMS_MAX);
    return B * L;
}

void attn_prepare(float *prep, const float *keys, const AttnParams *p, const AttnConfig *c, int B,
                  int L) {
    validate_dims(c, B, L);
    int A = c->A, D = c->D, BL = key_rows(B, L);
    switch (score_kind(c)) {
    case ATTN_ADDITIVE:
        gemm(false, true, BL, A, D, 1.0f, keys, D, p->W_k, D, 0.0f, prep, A);
        break;
    case ATTN_MULTIHEAD:
        gemm(false, true, BL, A, D, 1.0f, keys, D, p->Wk, D, 0.0f, prep, 2 * A);
        gemm(false, true, BL, A, D, 1.0f, keys, D, p->Wv, D, 0.0f, prep + A, 2 * A);
        break;
    default:
        break;
    }
}

void attn_prepare_backward(float *dkeys, AttnParams *dp, const float *dprep, const float *keys,
                           const AttnParams *p, const AttnConfig *c, int B, int L) {
    validate_dims(c, B, L);
    int A = c->A, D = c->D, BL = key_rows(B, L);
    if (!dprep) return;
    const float *W[2] = {NULL, NULL};
    float *dW[2] = {NULL, NULL};
    int n = 0, ld = A;  // row stride of dprep
    switch (score_kind(c)) {
    case ATTN_ADDITIVE:
        W[0] = p->W_k, dW[0] = dp->W_k, n = 1;
        break;
    case ATTN_MULTIHEAD:
        W[0] = p->Wk, dW[0] = dp->Wk, W[1] = p->Wv, dW[1] = dp->Wv, n = 2, ld = 2 * A;
        break;
    default:
        break;
    }
    for (int k = 0; k < n; k++) {
        const float *dP = dprep + (size_t)k * A;  // (B*L, A), row stride ld
        // dW (A, D) += dP^T keys; dkeys (B*L, D) += dP W
        gemm(true, false, A, D, BL, 1.0f, dP, ld, keys, D, 1.0f, dW[k], D);
        if (dkeys) gemm(false, false, BL, D, A, 1.0f, dP, ld, W[k], D, 1.0f, dkeys, D);
    }
}

// --- the step cache ------------------------------------------------------------------------

typedef struct {
    size_t alpha, qp, qw, centre, hp, s;  // offsets (floats); unused ones stay 0
    size_t mh_q, mh_alpha, mh_concat;
    size_t total;
} StepLayout;

static StepLayout step_layout(const AttnConfig *c, int B, int L) {
    StepLayout s = {0};
    size_t n = 0, Bs = (size_t)B, BL = (size_t)B * L, A = (size_t)c->A;
    if (c->kind == ATTN_MULTIHEAD) {
        s.mh_q = n, n += Bs * A;
        s.mh_alpha = n, n += BL * c->heads;
        s.mh_concat = n, n += Bs * A;
        s.total = n;
        return s;
    }
    s.alpha = n, n += BL;
    switch (score_kind(c)) {
    case ATTN_ADDITIVE:
        s.qp = n, n += Bs * A;
        break;
    case ATTN_MULTIPLICATIVE:
        s.qw = n, n += Bs * c->D;
        break;
    default:
        break;
    }
    if (is_local(c)) s.centre = n, n += Bs;
    if (c->kind == ATTN_LOCAL_PREDICTIVE) {
        s.hp = n, n += Bs * A;
        s.s = n, n += Bs;
    }
    s.total = n;
    return s;
}

size_t attn_step_cache_floats(const AttnConfig *c, int B, int L) {
    validate_dims(c, B, L);
    return step_layout(c, B, L).total;
}

// --- small helpers -------------------------------------------------------------------------

// Dot product with 32 partial sums, so that the compiler vectorises it without
// -ffast-math into four independent chains (with 8, one vector of 8 sums, every addition
// waited on the one before: the attention's scores and their backward were latency-bound);
// the summation order is fixed, so results are reproducible.
enum { DOT_LANES = 32 };

static float sum_lanes(const float *acc) {
    float s16[16], s8[8];
    for (int j = 0; j < 16; j++) s16[j] = acc[j] + acc[j + 16];
    for (int j = 0; j < 8; j++) s8[j] = s16[j] + s16[j + 8];
    return ((s8[0] + s8[4]) + (s8[1] + s8[5])) + ((s8[2] + s8[6]) + (s8[3] + s8[7]));
}

static float dotf(const float *a, const float *b, int n) {
    float acc[DOT_LANES] = {0};
    int i = 0;
    for (; i + DOT_LANES <= n; i += DOT_LANES)
        for (int j = 0; j < DOT_LANES; j++) acc[j] += a[i + j] * b[i + j];
    float s = sum_lanes(acc);
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

// tanh_fast (core/activations.h) is a rational approximation, absolute error <= 4e-7
// against double tanh (glibc tanhf: 9e-8); unlike tanhf it vectorises, which makes the
// additive score about 10x faster. tests/test_attention.c compares the additive forward
// with a double-precision tanh reference.

// The additive score w . tanh(kp + qp) over A in one pass (the sums as dotf's; the
// backward recomputes the same tanh values).
static float additive_score(const float *restrict kp, const float *restrict qp,
                            const float *restrict w, int A) {
    float acc[DOT_LANES] = {0};
    int i = 0;
    for (; i + DOT_LANES <= A; i += DOT_LANES)
        for (int j = 0; j < DOT_LANES; j++) acc[j] += w[i + j] * tanh_fast(kp[i + j] + qp[i + j]);
    float s = sum_lanes(acc);
    for (; i < A; i++) s += w[i] * tanh_fast(kp[i] + qp[i]);
    return s;
}

static void axpyf(float *y, float a, const float *x, int n) {
    for (int i = 0; i < n; i++) y[i] += a * x[i];
}

// Masked softmax of x[lo..hi) into out[lo..hi) (other positions untouched); mask (L) or NULL.
// With nothing unmasked in the range the row is all zeros.
static void masked_softmax_range(float *out, const float *x, const unsigned char *mask, int lo,
                                 int hi) {
    float mx = -INFINITY;
    for (int i = lo; i < hi; i++)
        if ((!mask || mask[i]) && x[i] > mx) mx = x[i];
    if (mx == -INFINITY) {
        for (int i = lo; i < hi; i++) out[i] = 0.0f;
        return;
    }
    float sum = 0.0f;
    for (int i = lo; i < hi; i++) {
        float e = (!mask || mask[i]) ? expf(x[i] - mx) : 0.0f;
        out[i] = e;
        sum += e;
    }
    float inv = 1.0f / sum;  // sum >= 1: the maximum contributes exp(0)
    for (int i = lo; i < hi; i++) out[i] *= inv;
}

// Local window for centre p: [lo, hi) (round(p) +- W, clipped to [0, L)). A NaN centre (a
// NaN in the query or in W_p, v_p) has no position: the window is the whole row, and
// alpha_row makes that row's weights NaN, so the NaN reaches the loss and the trainer's
// finite check (converting it to int, as this once did, is undefined: on x86 INT_MIN, and
// r - W wrapped into a window past the row's end). p is clamped to [-W - 1, L + W] before
// rounding, so no finite centre overflows the int either.
static void local_window(int *lo, int *hi, float p, int W, int L) {
    if (isnan(p)) {
        *lo = 0, *hi = L;
        return;
    }
    const float pmin = -(float)W - 1.0f, pmax = (float)L + (float)W;
    const float q = p < pmin ? pmin : p > pmax ? pmax : p;
    int r = (int)floorf(q + 0.5f);
    int a = r - W, b = r + W + 1;
    *lo = a < 0 ? 0 : a;
    *hi = b > L ? L : b;
    if (*hi < *lo) *hi = *lo;
}

// The score of every position in [lo, hi) of a batch row into e (L); its keys and prep
// are those of source row sb (the row itself unless several rows share their source).
static void scores_row(float *e, const float *prep, const float *keys_b,
                       const float *query_b, const float *qp_b, const float *qw_b,
                       const AttnParams *p, const AttnConfig *c, AttnKind s, int sb, int L, int lo,
                       int hi) {
    int A = c->A, D = c->D;
    switch (s) {
    case ATTN_ADDITIVE: {
        const float *Kp = prep + (size_t)sb * L * A;
        for (int i = lo; i < hi; i++) e[i] = additive_score(Kp + (size_t)i * A, qp_b, p->w, A);
        break;
    }
    case ATTN_DOT:
    case ATTN_SCALED_DOT: {
        float scale = s == ATTN_SCALED_DOT ? 1.0f / sqrtf((float)D) : 1.0f;
        for (int i = lo; i < hi; i++) e[i] = scale * dotf(query_b, keys_b + (size_t)i * D, D);
        break;
    }
    case ATTN_MULTIPLICATIVE:
        for (int i = lo; i < hi; i++) e[i] = dotf(qw_b, keys_b + (size_t)i * D, D);
        break;
    default:
        for (int i = lo; i < hi; i++) e[i] = 0.0f;
        break;
    }
}

// --- multi-head ----------------------------------------------------------------------------

static void multihead_forward(float *context, float *alpha, float *cache, const float *prep,
                              const int *src, const float *query, const unsigned char *mask,
                              const int *lengths, const AttnParams *p, const AttnConfig *c, int B,
                              int L) {
    StepLayout sl = step_layout(c, B, L);
    int A = c->A, D = c->D, H = c->H, nh = c->heads, dh = A / nh;
    float scale = 1.0f / sqrtf((float)dh);
    const float *Kp = prep, *Vp = prep + A;  // rows of 2A floats
    float *Q = cache + sl.mh_q, *ah = cache + sl.mh_alpha, *concat = cache + sl.mh_concat;
    gemm(false, true, B, A, H, 1.0f, query, H, p->Wq, H, 0.0f, Q, A);
    float *e = xmalloc((size_t)L * sizeof(float));
    for (int b = 0; b < B; b++) {
        const unsigned char *m = mask ? mask + (size_t)b * L : NULL;
        const int n = row_length(lengths, b, L);
        const size_t sb = (size_t)(src ? src[b] : b);
        float *al = alpha + (size_t)b * L;
        for (int i = 0; i < L; i++) al[i] = 0.0f;
        for (int h = 0; h < nh; h++) {
            const float *q = Q + (size_t)b * A + h * dh;
            float *a = ah + ((size_t)b * nh + h) * L;
            for (int i = 0; i < n; i++)
                e[i] = scale * dotf(q, Kp + (sb * L + i) * 2 * A + h * dh, dh);
            for (int i = n; i < L; i++) a[i] = 0.0f;
            masked_softmax_range(a, e, m, 0, n);
            float *ctx = concat + (size_t)b * A + h * dh;
            for (int j = 0; j < dh; j++) ctx[j] = 0.0f;
            for (int i = 0; i < L; i++) {
                if (a[i] == 0.0f) continue;
                axpyf(ctx, a[i], Vp + (sb * L + i) * 2 * A + h * dh, dh);
                al[i] += a[i] / (float)nh;
            }
        }
    }
    free(e);
    // context (B, D) = concat (B, A) Wo^T
    gemm(false, true, B, D, A, 1.0f, concat, A, p->Wo, A, 0.0f, context, D);
}

static void multihead_backward(float *dprep, float *dquery, AttnParams *dp, const float *dcontext,
                               const float *dalpha, const float *cache, const float *prep,
                               const float *query, const AttnParams *p, const AttnConfig *c,
                               int B, int L) {
    StepLayout sl = step_layout(c, B, L);
    int A = c->A, D = c->D, H = c->H, nh = c->heads, dh = A / nh;
    float scale = 1.0f / sqrtf((float)dh);
    const float *Kp = prep, *Vp = prep + A;  // rows of 2A floats
    float *dKp = dprep, *dVp = dprep ? dprep + A : NULL;
    const float *Q = cache + sl.mh_q, *ah = cache + sl.mh_alpha, *concat = cache + sl.mh_concat;

    float *dconcat = xcalloc((size_t)B * A, sizeof(float));
    float *dQ = xcalloc((size_t)B * A, sizeof(float));
    float *g = xmalloc((size_t)L * sizeof(float));
    if (dcontext) {
        // dWo (D, A) += dcontext^T concat; dconcat (B, A) = dcontext Wo
        gemm(true, false, D, A, B, 1.0f, dcontext, D, concat, A, 1.0f, dp->Wo, A);
        gemm(false, false, B, A, D, 1.0f, dcontext, D, p->Wo, A, 0.0f, dconcat, A);
    }
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < nh; h++) {
            const float *a = ah + ((size_t)b * nh + h) * L;
            const float *dctx = dconcat + (size_t)b * A + h * dh;
            const float *q = Q + (size_t)b * A + h * dh;
            float *dq = dQ + (size_t)b * A + h * dh;
            float sum = 0.0f;
            for (int i = 0; i < L; i++) {
                if (a[i] == 0.0f) {
                    g[i] = 0.0f;
                    continue;
                }
                size_t off = ((size_t)b * L + i) * 2 * A + h * dh;
                g[i] = (dalpha ? dalpha[(size_t)b * L + i] / (float)nh : 0.0f) +
                       dotf(dctx, Vp + off, dh);
                if (dVp) axpyf(dVp + off, a[i], dctx, dh);
                sum += a[i] * g[i];
            }
            for (int i = 0; i < L; i++) {
                if (a[i] == 0.0f) continue;
                float de = scale * a[i] * (g[i] - sum);
                size_t off = ((size_t)b * L + i) * 2 * A + h * dh;
                axpyf(dq, de, Kp + off, dh);
                if (dKp) axpyf(dKp + off, de, q, dh);
            }
        }
    }
    // dWq (A, H) += dQ^T query; dquery (B, H) += dQ Wq
    gemm(true, false, A, H, B, 1.0f, dQ, A, query, H, 1.0f, dp->Wq, H);
    if (dquery) gemm(false, false, B, H, A, 1.0f, dQ, A, p->Wq, H, 1.0f, dquery, H);
    free(g);
    free(dQ);
    free(dconcat);
}

// --- forward / backward --------------------------------------------------------------------

static float local_sigma(const AttnConfig *c) { return 0.5f * (float)c->window; }

// The step cache's views for one (B, L): alpha (B, L) always; where the kind keeps them, the
// additive query projection qp (B, A), the multiplicative q W (B, D), the local centres
// (B), and the predictive centre's hidden layer hp (B, A) and sigmoid s (B); else NULL.
// (attn_forward writes through the views; attn_backward, holding the cache const, only
// reads.)
typedef struct {
    float *alpha, *qp, *qw, *centre, *hp, *s;
} StepCache;

static StepCache step_cache(const float *cache, const AttnConfig *c, int B, int L) {
    StepLayout sl = step_layout(c, B, L);
    AttnKind s = score_kind(c);
    float *base = (float *)cache;
    StepCache v = {base + sl.alpha, NULL, NULL, NULL, NULL, NULL};
    if (s == ATTN_ADDITIVE) v.qp = base + sl.qp;
    if (s == ATTN_MULTIPLICATIVE) v.qw = base + sl.qw;
    if (is_local(c)) v.centre = base + sl.centre;
    if (c->kind == ATTN_LOCAL_PREDICTIVE) {
        v.hp = base + sl.hp;
        v.s = base + sl.s;
    }
    return v;
}

// The query's projections over the batch: qp = q W_q^T + b (additive), qw = q W
// (multiplicative); query (B, H).
static void query_projections_forward(const StepCache *v, const float *query, const AttnParams *p,
                                      const AttnConfig *c, int B) {
    int A = c->A, D = c->D, H = c->H;
    if (v->qp) {
        if (p->W_q_t)
            gemm_packed(B, A, query, H, p->W_q_t, 0.0f, v->qp, A);
        else
            gemm(false, true, B, A, H, 1.0f, query, H, p->W_q, H, 0.0f, v->qp, A);
        for (int b = 0; b < B; b++) axpyf(v->qp + (size_t)b * A, 1.0f, p->b, A);
    } else if (v->qw) {
        gemm(false, false, B, D, H, 1.0f, query, H, p->W, D, 0.0f, v->qw, D);  // q (B,H) W (H,D)
    }
}

// The local window's centre of each batch row, n its length: step t, held at n - 1
// (monotonic), or (n - 1) sigmoid(v_p . tanh(W_p q)) (predictive). (A row of length 0 gets
// centre -1 or below, whose window holds no position.)
static void centres_forward(const StepCache *v, const float *query, const int *lengths,
                            const AttnParams *p, const AttnConfig *c, int t, int B, int L) {
    int A = c->A, H = c->H;
    if (c->kind == ATTN_LOCAL_MONOTONIC) {
        CHECK(t >= 0, "local-monotonic attention at step t = %d", t);
        for (int b = 0; b < B; b++) {
            int n = row_length(lengths, b, L);
            v->centre[b] = (float)(t < n - 1 ? t : n - 1);
        }
    } else if (c->kind == ATTN_LOCAL_PREDICTIVE) {
        gemm(false, true, B, A, H, 1.0f, query, H, p->W_p, H, 0.0f, v->hp, A);
        for (size_t k = 0; k < (size_t)B * A; k++) v->hp[k] = tanh_fast(v->hp[k]);
        for (int b = 0; b < B; b++) {
            v->s[b] = sigmoidf_(dotf(p->v_p, v->hp + (size_t)b * A, A));
            v->centre[b] = (float)(row_length(lengths, b, L) - 1) * v->s[b];
        }
    }
}

// Row b of alpha, n its length: uniform over the unmasked positions below n (ATTN_NONE),
// else the masked softmax of the scores over the window (less the Gaussian term for local
// kinds) inside [0, n), 0 outside it. e (L) is scratch.
static void alpha_row(const StepCache *v, float *e, const float *prep, const float *keys,
                      const float *query, const unsigned char *mask, const AttnParams *p,
                      const AttnConfig *c, int b, int sb, int n, int L) {
    int A = c->A, D = c->D, H = c->H;
    const unsigned char *m = mask ? mask + (size_t)b * L : NULL;
    float *a = v->alpha + (size_t)b * L;
    if (c->kind == ATTN_NONE) {
        int k = 0;
        for (int i = 0; i < n; i++) k += !m || m[i];
        for (int i = 0; i < L; i++)
            a[i] = (k > 0 && i < n && (!m || m[i])) ? 1.0f / (float)k : 0.0f;
        return;
    }
    int lo = 0, hi = n;
    if (v->centre) local_window(&lo, &hi, v->centre[b], c->window, n);
    scores_row(e, prep, keys + (size_t)sb * L * D, query + (size_t)b * H,
               v->qp ? v->qp + (size_t)b * A : NULL, v->qw ? v->qw + (size_t)b * D : NULL, p, c,
               score_kind(c), sb, L, lo, hi);
    if (v->centre) {
        float sig = local_sigma(c), k2 = 1.0f / (2.0f * sig * sig);
        for (int i = lo; i < hi; i++) {
            float d = (float)i - v->centre[b];
            e[i] -= d * d * k2;
        }
    }
    for (int i = 0; i < lo; i++) a[i] = 0.0f;
    for (int i = hi; i < L; i++) a[i] = 0.0f;
    masked_softmax_range(a, e, m, lo, hi);
    if (v->centre && isnan(v->centre[b]))
        for (int i = 0; i < n; i++) a[i] = NAN;  // local_window: a NaN centre poisons its row
}

// out (B, D) = sum_i w (B, L)_i * values (n_src, L, D)_i of row b's source src[b] (src
// NULL: b). The rows of one source are consecutive in beam search, so its values, read
// once per row, stay in cache from one row to the next.
static void weighted_sum_rows(float *out, const float *w, const float *values, const int *src,
                              int B, int L, int D) {
    for (int b = 0; b < B; b++) {
        float *o = out + (size_t)b * D;
        const float *wb = w + (size_t)b * L;
        const float *vb = values + (size_t)(src ? src[b] : b) * L * D;
        for (int d = 0; d < D; d++) o[d] = 0.0f;
        for (int i = 0; i < L; i++)
            if (wb[i] != 0.0f) axpyf(o, wb[i], vb + (size_t)i * D, D);
    }
}

void attn_forward_shared(float *context, float *alpha, float *cache, const float *prep,
                         const float *keys, const int *src, int n_src, const float *query,
                         const unsigned char *mask, const int *lengths, const AttnParams *p,
                         const AttnConfig *c, int t, int B, int L) {
    validate_dims(c, B, L);
    for (int b = 0; src && b < B; b++)
        CHECK(src[b] >= 0 && src[b] < n_src, "attention: row %d reads source %d of %d", b,
              src[b], n_src);
    if (c->kind == ATTN_MULTIHEAD) {
        multihead_forward(context, alpha, cache, prep, src, query, mask, lengths, p, c, B, L);
        return;
    }
    StepCache v = step_cache(cache, c, B, L);
    query_projections_forward(&v, query, p, c, B);
    centres_forward(&v, query, lengths, p, c, t, B, L);
    float *e = xmalloc((size_t)L * sizeof(float));
    for (int b = 0; b < B; b++)
        alpha_row(&v, e, prep, keys, query, mask, p, c, b, src ? src[b] : b,
                  row_length(lengths, b, L), L);
    free(e);
    memcpy(alpha, v.alpha, (size_t)B * L * sizeof(float));
    weighted_sum_rows(context, v.alpha, keys, src, B, L, c->D);
}

void attn_forward(float *context, float *alpha, float *cache, const float *prep,
                  const float *keys, const float *query, const unsigned char *mask,
                  const int *lengths, const AttnParams *p, const AttnConfig *c, int t, int B,
                  int L) {
    attn_forward_shared(context, alpha, cache, prep, keys, NULL, B, query, mask, lengths, p, c,
                        t, B, L);
}

// The additive score's backward at one position, given de = d loss / d score: one pass
// over A (the same operations per element as separate passes), u = tanh(Kp + qp)
// recomputed as the forward computed it:
//   dw += de u;  dq += de w (1 - u^2);  dpr += de w (1 - u^2) (dpr may be NULL).
// A function of its own with restrict parameters, so that GCC vectorises the loops (on
// block-scope restrict pointers inside attn_backward it kept them scalar).
static void additive_backward_position(float *restrict dpr, float *restrict dw,
                                       float *restrict dq, const float *restrict kpi,
                                       const float *restrict qpb, const float *restrict w,
                                       float de, int A) {
    if (dpr) {
        for (int k = 0; k < A; k++) {
            float uk = tanh_fast(kpi[k] + qpb[k]), dk = de * w[k] * (1.0f - uk * uk);
            dw[k] += de * uk;
            dq[k] += dk;
            dpr[k] += dk;
        }
    } else {
        for (int k = 0; k < A; k++) {
            float uk = tanh_fast(kpi[k] + qpb[k]);
            dw[k] += de * uk;
            dq[k] += de * w[k] * (1.0f - uk * uk);
        }
    }
}

// The context's backward: g (B, L) += dcontext . k_i, the gradient reaching alpha (it holds
// dalpha or zeros), and dkeys_i += alpha_i dcontext. That is weighted_sum_backward
// restricted to the positions with alpha != 0: elsewhere (masked, outside a local window)
// the softmax passes no gradient on, and the keys get none.
static void context_backward(float *g, float *dkeys, const float *dcontext, const float *al,
                             const float *keys, int B, int L, int D) {
    for (int b = 0; b < B; b++) {
        const float *dc = dcontext + (size_t)b * D;
        for (int i = 0; i < L; i++) {
            size_t bi = (size_t)b * L + i;
            if (al[bi] == 0.0f) continue;
            g[bi] += dotf(dc, keys + bi * D, D);
            if (dkeys) axpyf(dkeys + bi * D, al[bi], dc, D);
        }
    }
}

// What the scores' backward leaves for the query side: d/dqp (B, A) (additive), d/dqw
// (B, D) (multiplicative) and d/dcentre (B) (local); NULL where the kind has none.
typedef struct {
    float *dqp, *dqw, *dcentre;
} QuerySideGrads;

// The softmax's and the scores' backward for batch row b of length n, from gb (L), the
// gradient reaching alpha's row: the additive scorer's w and prep, the query (dot kinds) and
// the keys get theirs, and q the query side's sums.
static void scores_backward_row(float *dkeys, float *dprep, float *dquery, AttnParams *dp,
                                const QuerySideGrads *q, const float *gb, const StepCache *v,
                                const float *prep, const float *keys, const float *query,
                                const AttnParams *p, const AttnConfig *c, int b, int n, int L) {
    int A = c->A, D = c->D, H = c->H;
    AttnKind s = score_kind(c);
    float scale = s == ATTN_SCALED_DOT ? 1.0f / sqrtf((float)D) : 1.0f;
    float sig = local_sigma(c), inv_var = 1.0f / (sig * sig);
    const float *a = v->alpha + (size_t)b * L;
    const float *kb = keys + (size_t)b * L * D;
    int lo = 0, hi = n;
    if (v->centre) local_window(&lo, &hi, v->centre[b], c->window, n);
    float sum = 0.0f;
    for (int i = lo; i < hi; i++) sum += a[i] * gb[i];
    for (int i = lo; i < hi; i++) {
        if (a[i] == 0.0f) continue;  // masked (or underflowed): no gradient
        float de = a[i] * (gb[i] - sum);  // d loss / d (score - Gaussian term)
        if (v->centre) q->dcentre[b] += de * ((float)i - v->centre[b]) * inv_var;
        const float *ki = kb + (size_t)i * D;
        float *dki = dkeys ? dkeys + ((size_t)b * L + i) * D : NULL;
        switch (s) {
        case ATTN_ADDITIVE: {
            const float *kpi = prep + ((size_t)b * L + i) * A;
            float *dpr = dprep ? dprep + ((size_t)b * L + i) * A : NULL;
            additive_backward_position(dpr, dp->w, q->dqp + (size_t)b * A, kpi,
                                       v->qp + (size_t)b * A, p->w, de, A);
            break;
        }
        case ATTN_DOT:
        case ATTN_SCALED_DOT:
            if (dquery) axpyf(dquery + (size_t)b * H, scale * de, ki, D);
            if (dki) axpyf(dki, scale * de, query + (size_t)b * H, D);
            break;
        case ATTN_MULTIPLICATIVE:
            axpyf(q->dqw + (size_t)b * D, de, ki, D);
            if (dki) axpyf(dki, de, v->qw + (size_t)b * D, D);
            break;
        default:
            break;
        }
    }
}

// The query projections' backward: qp = q W_q^T + b (additive), qw = q W (multiplicative).
static void query_projections_backward(float *dquery, AttnParams *dp, const QuerySideGrads *q,
                                       const float *query, const AttnParams *p,
                                       const AttnConfig *c, int B) {
    int A = c->A, D = c->D, H = c->H;
    if (q->dqp) {
        for (int b = 0; b < B; b++) axpyf(dp->b, 1.0f, q->dqp + (size_t)b * A, A);
        // dW_q (A, H) += dqp^T query; dquery (B, H) += dqp W_q
        gemm(true, false, A, H, B, 1.0f, q->dqp, A, query, H, 1.0f, dp->W_q, H);
        if (dquery && p->W_q_n)
            gemm_packed(B, H, q->dqp, A, p->W_q_n, 1.0f, dquery, H);
        else if (dquery)
            gemm(false, false, B, H, A, 1.0f, q->dqp, A, p->W_q, H, 1.0f, dquery, H);
    }
    if (q->dqw) {
        // dW (H, D) += query^T dqw; dquery (B, H) += dqw W^T
        gemm(true, false, H, D, B, 1.0f, query, H, q->dqw, D, 1.0f, dp->W, D);
        if (dquery) gemm(false, true, B, H, D, 1.0f, q->dqw, D, p->W, D, 1.0f, dquery, H);
    }
}

// The predictive centre's backward: centre = (n - 1) sigmoid(v_p . hp), hp = tanh(W_p q),
// n the row's length.
static void centre_backward(float *dquery, AttnParams *dp, const float *dcentre,
                            const StepCache *v, const float *query, const int *lengths,
                            const AttnParams *p, const AttnConfig *c, int B, int L) {
    int A = c->A, H = c->H;
    float *dhpre = xcalloc((size_t)B * A, sizeof(float));
    for (int b = 0; b < B; b++) {
        float n1 = (float)(row_length(lengths, b, L) - 1);
        float dz = dcentre[b] * n1 * v->s[b] * (1.0f - v->s[b]);
        const float *h = v->hp + (size_t)b * A;
        axpyf(dp->v_p, dz, h, A);
        for (int k = 0; k < A; k++) dhpre[(size_t)b * A + k] = dz * p->v_p[k] * (1.0f - h[k] * h[k]);
    }
    gemm(true, false, A, H, B, 1.0f, dhpre, A, query, H, 1.0f, dp->W_p, H);
    if (dquery) gemm(false, false, B, H, A, 1.0f, dhpre, A, p->W_p, H, 1.0f, dquery, H);
    free(dhpre);
}

void attn_backward(float *dkeys, float *dprep, float *dquery, AttnParams *dp,
                   const float *dcontext, const float *dalpha, const float *cache,
                   const float *prep, const float *keys, const float *query,
                   const unsigned char *mask, const int *lengths, const AttnParams *p,
                   const AttnConfig *c, int t, int B, int L) {
    validate_dims(c, B, L);
    if (c->kind == ATTN_MULTIHEAD) {
        multihead_backward(dprep, dquery, dp, dcontext, dalpha, cache, prep, query, p, c, B, L);
        return;
    }
    StepCache v = step_cache(cache, c, B, L);
    float *g = xcalloc((size_t)B * L, sizeof(float));  // the gradient reaching alpha
    if (dalpha) memcpy(g, dalpha, (size_t)B * L * sizeof(float));
    if (dcontext) context_backward(g, dkeys, dcontext, v.alpha, keys, B, L, c->D);
    if (c->kind != ATTN_NONE) {  // (ATTN_NONE's alpha depends on nothing)
        QuerySideGrads q = {v.qp ? xcalloc((size_t)B * c->A, sizeof(float)) : NULL,
                            v.qw ? xcalloc((size_t)B * c->D, sizeof(float)) : NULL,
                            v.centre ? xcalloc((size_t)B, sizeof(float)) : NULL};
        for (int b = 0; b < B; b++)
            scores_backward_row(dkeys, dprep, dquery, dp, &q, g + (size_t)b * L, &v, prep, keys,
                                query, p, c, b, row_length(lengths, b, L), L);
        query_projections_backward(dquery, dp, &q, query, p, c, B);
        if (c->kind == ATTN_LOCAL_PREDICTIVE)
            centre_backward(dquery, dp, q.dcentre, &v, query, lengths, p, c, B, L);
        free(q.dcentre);
        free(q.dqw);
        free(q.dqp);
    }
    free(g);
}

void weighted_sum_forward(float *out, const float *w, const float *values, int B, int L, int D) {
    weighted_sum_rows(out, w, values, NULL, B, L, D);
}

void weighted_sum_backward(float *dw, float *dvalues, const float *dout, const float *w,
                           const float *values, int B, int L, int D) {
    for (int b = 0; b < B; b++) {
        const float *db = dout + (size_t)b * D;
        for (int i = 0; i < L; i++) {
            size_t bi = (size_t)b * L + i;
            if (dw) dw[bi] += dotf(db, values + bi * D, D);
            if (dvalues) axpyf(dvalues + bi * D, w[bi], db, D);
        }
    }
}
