// mha.c: see mha.h.
#include "seq/mha.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/dims.h"
#include "core/gemm.h"
#include "seq/linear.h"
#include "seq/softmax.h"

// --- configuration and parameters ----------------------------------------------------------

int mha_config_check(const MhaConfig *c, Error *err) {
    if (c->d < 1) return error_set(err, "attention: model size %d must be at least 1", c->d);
    if (c->heads < 1 || c->d % c->heads != 0)
        return error_set(err, "attention: %d heads do not divide the model size %d", c->heads,
                         c->d);
    return 0;
}

int mha_check_sizes(const MhaConfig *c, int B, int T, int S, Error *err) {
    DimTerm probs[] = {{B, "sequences"}, {c->heads, "heads"}, {T, "queries"}, {S, "keys"}};
    DimTerm q[] = {{B, "sequences"}, {T > S ? T : S, "positions"}, {c->d, "model size"}};
    DimTerm w3[] = {{3, "projections"}, {c->d, "model size"}, {c->d, "model size"}};
    if (dims_check(err, "attention probabilities", probs, DIMS_LEN(probs))) return -1;
    if (dims_check(err, "attention projections", q, DIMS_LEN(q))) return -1;
    return dims_check(err, "attention in_proj_weight", w3, DIMS_LEN(w3));
}

static void add_named(Block *b, float **view, const char *prefix, const char *name, int ndim,
                      int d0, int d1, int d2, int d3) {
    char full[BLOCK_NAME_LEN];
    int n = snprintf(full, sizeof full, "%s.%s", prefix, name);
    CHECK(n > 0 && n < (int)sizeof full, "tensor name too long: %s.%s", prefix, name);
    if (ndim == 1) block_add(b, view, full, 1, d0);
    else if (ndim == 2) block_add(b, view, full, 2, d0, d1);
    else if (ndim == 3) block_add(b, view, full, 3, d0, d1, d2);
    else block_add(b, view, full, 4, d0, d1, d2, d3);
}

void mha_params_layout(Block *b, MhaParams *p, const MhaConfig *c, const char *prefix) {
    CHECK(mha_config_check(c, NULL) == 0, "mha config d %d heads %d", c->d, c->heads);
    int d = c->d;
    add_named(b, &p->in_w, prefix, "in_proj_weight", 2, 3 * d, d, 0, 0);
    add_named(b, &p->in_b, prefix, "in_proj_bias", 1, 3 * d, 0, 0, 0);
    add_named(b, &p->out_w, prefix, "out_proj.weight", 2, d, d, 0, 0);
    add_named(b, &p->out_b, prefix, "out_proj.bias", 1, d, 0, 0, 0);
}

static void fill_pm(float *x, size_t n, float r, Rng *rng) {
    for (size_t i = 0; i < n; i++) x[i] = r * (2.0f * rng_uniform(rng) - 1.0f);
}

void mha_params_init(MhaParams *p, const MhaConfig *c, Rng *rng) {
    CHECK(p->in_w && p->out_w, "mha_params_init before block_alloc");
    size_t d = (size_t)c->d;
    fill_pm(p->in_w, 3 * d * d, sqrtf(6.0f / (float)(4 * d)), rng);  // Xavier over (3d, d)
    fill_pm(p->out_w, d * d, 1.0f / sqrtf((float)d), rng);
    memset(p->in_b, 0, 3 * d * sizeof(float));
    memset(p->out_b, 0, d * sizeof(float));
}

void mha_acts_layout(Block *a, MhaActs *x, const MhaConfig *c, int B, int T, int S,
                     const char *prefix) {
    int d = c->d;
    add_named(a, &x->q, prefix, "q", 3, B, T, d, 0);
    add_named(a, &x->k, prefix, "k", 3, B, S, d, 0);
    add_named(a, &x->v, prefix, "v", 3, B, S, d, 0);
    add_named(a, &x->probs, prefix, "probs", 4, B, c->heads, T, S);
    add_named(a, &x->concat, prefix, "concat", 3, B, T, d, 0);
    add_named(a, &x->weights, prefix, "weights", 3, B, T, S, 0);
    add_named(a, &x->scores, prefix, "scores", 2, T, S, 0, 0);
    add_named(a, &x->dprobs, prefix, "dprobs", 2, T, S, 0, 0);
    add_named(a, &x->dq, prefix, "dq", 3, B, T, d, 0);
    add_named(a, &x->dk, prefix, "dk", 3, B, S, d, 0);
    add_named(a, &x->dv, prefix, "dv", 3, B, S, d, 0);
    add_named(a, &x->dconcat, prefix, "dconcat", 3, B, T, d, 0);
}

// --- masks ---------------------------------------------------------------------------------

// Keys query i of row b sees: the prefix [0, visible).
static int visible(const int *kv_lengths, int causal, int b, int i, int S) {
    int n = S;
    if (kv_lengths) {
        CHECK(kv_lengths[b] >= 0 && kv_lengths[b] <= S,
              "attention: row %d has length %d, not in [0, %d]", b, kv_lengths[b], S);
        n = kv_lengths[b];
    }
    if (causal && i + 1 < n) n = i + 1;
    return n;
}

// probs (T, S) = the softmax of each row of scores over its visible prefix, 0 past it.
static void masked_rows_softmax(float *probs, const float *scores, const int *kv_lengths,
                                int causal, int b, int T, int S) {
    for (int i = 0; i < T; i++) {
        int n = visible(kv_lengths, causal, b, i, S);
        float *pr = probs + (size_t)i * S;
        softmax_forward(pr, scores + (size_t)i * S, NULL, 1, n);
        for (int j = n; j < S; j++) pr[j] = 0.0f;
    }
}

// --- forward -------------------------------------------------------------------------------

static void project(float *q, float *k, float *v, const float *xq, const float *xkv,
                    const MhaParams *p, int d, int BT, int BS) {
    size_t dd = (size_t)d * d;
    linear_forward(q, xq, p->in_w, p->in_b, BT, d, d);
    linear_forward(k, xkv, p->in_w + dd, p->in_b + d, BS, d, d);
    linear_forward(v, xkv, p->in_w + 2 * dd, p->in_b + 2 * d, BS, d, d);
}

// P (T, S) times its dropout factors into out, or P itself without them.
static const float *dropped(float *out, const float *P, const float *drop, size_t TS) {
    if (!drop) return P;
    for (size_t i = 0; i < TS; i++) out[i] = P[i] * drop[i];
    return out;
}

// The dropout factors of (row b, head h), or NULL.
static const float *head_drop(const float *drop, const MhaConfig *c, int b, int h, size_t TS) {
    return drop ? drop + ((size_t)b * c->heads + h) * TS : NULL;
}

// One (row b, head h): probs_bh (T, S) and its context columns of concat.
static void head_forward(MhaActs *x, const int *kv_lengths, int causal, const float *drop,
                         const MhaConfig *c, int b, int h, int T, int S) {
    int d = c->d, dh = d / c->heads;
    const float *q = x->q + (size_t)b * T * d + (size_t)h * dh;
    const float *k = x->k + (size_t)b * S * d + (size_t)h * dh;
    const float *v = x->v + (size_t)b * S * d + (size_t)h * dh;
    float *P = x->probs + ((size_t)b * c->heads + h) * T * S;
    gemm(false, true, T, S, dh, 1.0f / sqrtf((float)dh), q, d, k, d, 0.0f, x->scores, S);
    masked_rows_softmax(P, x->scores, kv_lengths, causal, b, T, S);
    const float *Pd = dropped(x->dprobs, P, head_drop(drop, c, b, h, (size_t)T * S), (size_t)T * S);
    float *ctx = x->concat + (size_t)b * T * d + (size_t)h * dh;
    gemm(false, false, T, dh, S, 1.0f, Pd, S, v, d, 0.0f, ctx, d);
}

static void mean_over_heads(float *weights, const float *probs, int heads, int B, size_t TS) {
    for (int b = 0; b < B; b++) {
        float *w = weights + (size_t)b * TS;
        for (size_t i = 0; i < TS; i++) w[i] = 0.0f;
        for (int h = 0; h < heads; h++) {
            const float *P = probs + ((size_t)b * heads + h) * TS;
            for (size_t i = 0; i < TS; i++) w[i] += P[i];
        }
        for (size_t i = 0; i < TS; i++) w[i] /= (float)heads;
    }
}

static void check_dims(const MhaConfig *c, int B, int T, int S) {
    CHECK(mha_config_check(c, NULL) == 0, "mha config d %d heads %d", c->d, c->heads);
    CHECK(B >= 1 && T >= 1 && S >= 1, "mha B %d T %d S %d", B, T, S);
    CHECK((int64_t)B * (T > S ? T : S) * c->d <= DIMS_MAX, "mha rows pass DIMS_MAX");
}

void mha_forward(float *out, MhaActs *x, const float *xq, const float *xkv,
                 const int *kv_lengths, int causal, const float *drop, const MhaParams *p,
                 const MhaConfig *c, int B, int T, int S) {
    check_dims(c, B, T, S);
    project(x->q, x->k, x->v, xq, xkv, p, c->d, B * T, B * S);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < c->heads; h++) head_forward(x, kv_lengths, causal, drop, c, b, h, T, S);
    mean_over_heads(x->weights, x->probs, c->heads, B, (size_t)T * S);
    linear_forward(out, x->concat, p->out_w, p->out_b, B * T, c->d, c->d);
}

// --- backward ------------------------------------------------------------------------------

// One (row b, head h): its columns of dq, dk, dv from those of dconcat.
static void head_backward(MhaActs *x, const float *drop, const MhaConfig *c, int b, int h, int T,
                          int S) {
    int d = c->d, dh = d / c->heads;
    size_t qo = (size_t)b * T * d + (size_t)h * dh, ko = (size_t)b * S * d + (size_t)h * dh;
    size_t TS = (size_t)T * S;
    const float *P = x->probs + ((size_t)b * c->heads + h) * TS, *m = head_drop(drop, c, b, h, TS);
    float scale = 1.0f / sqrtf((float)dh);
    // dV = Pd^T dC with Pd = P * drop; dPd = dC V^T, and dP = dPd * drop
    const float *Pd = dropped(x->dprobs, P, m, TS);
    gemm(true, false, S, dh, T, 1.0f, Pd, S, x->dconcat + qo, d, 0.0f, x->dv + ko, d);
    gemm(false, true, T, S, dh, 1.0f, x->dconcat + qo, d, x->v + ko, d, 0.0f, x->dprobs, S);
    if (m)
        for (size_t i = 0; i < TS; i++) x->dprobs[i] *= m[i];
    // dscores through the softmax (hidden keys: P = 0, so 0); dQ = s dS K; dK = s dS^T Q
    memset(x->scores, 0, (size_t)T * S * sizeof(float));
    softmax_backward(x->scores, x->dprobs, P, T, S);
    gemm(false, false, T, dh, S, scale, x->scores, S, x->k + ko, d, 0.0f, x->dq + qo, d);
    gemm(true, false, S, dh, T, scale, x->scores, S, x->q + qo, d, 0.0f, x->dk + ko, d);
}

void mha_backward(float *dxq, float *dxkv, MhaParams *dp, const float *dout, MhaActs *x,
                  const float *xq, const float *xkv, const int *kv_lengths, int causal,
                  const float *drop, const MhaParams *p, const MhaConfig *c, int B, int T,
                  int S) {
    check_dims(c, B, T, S);
    int d = c->d, BT = B * T, BS = B * S;
    size_t dd = (size_t)d * d;
    memset(x->dconcat, 0, (size_t)BT * d * sizeof(float));
    linear_backward(x->dconcat, dp->out_w, dp->out_b, dout, x->concat, p->out_w, BT, d, d);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < c->heads; h++) head_backward(x, drop, c, b, h, T, S);
    linear_backward(dxq, dp->in_w, dp->in_b, x->dq, xq, p->in_w, BT, d, d);
    linear_backward(dxkv, dp->in_w + dd, dp->in_b + d, x->dk, xkv, p->in_w + dd, BS, d, d);
    linear_backward(dxkv, dp->in_w + 2 * dd, dp->in_b + 2 * d, x->dv, xkv, p->in_w + 2 * dd, BS, d,
                    d);
}

// --- the plain-loop reference --------------------------------------------------------------

// y (n, d) = x (n, d) W^T + bias, in double.
static void linear_ref(double *y, const float *x, const float *W, const float *bias, int n, int d) {
    for (int r = 0; r < n; r++)
        for (int o = 0; o < d; o++) {
            double s = bias[o];
            for (int i = 0; i < d; i++) s += (double)x[(size_t)r * d + i] * W[(size_t)o * d + i];
            y[(size_t)r * d + o] = s;
        }
}

// ctx (d) of query row i of image b, one head at a time; weights row (S) += P / heads.
static void ref_query(double *ctx, float *wrow, const double *Q, const double *K, const double *V,
                      int n, const MhaConfig *c, int S) {
    int d = c->d, dh = d / c->heads;
    double *e = malloc((size_t)(S > 0 ? S : 1) * sizeof *e);
    for (int h = 0; h < c->heads; h++) {
        double mx = -INFINITY, sum = 0.0;
        for (int j = 0; j < n; j++) {
            double s = 0.0;
            for (int k = 0; k < dh; k++) s += Q[h * dh + k] * K[(size_t)j * d + h * dh + k];
            e[j] = s / sqrt((double)dh);
            if (e[j] > mx) mx = e[j];
        }
        for (int j = 0; j < n; j++) sum += (e[j] = exp(e[j] - mx));
        for (int k = 0; k < dh; k++) ctx[h * dh + k] = 0.0;
        for (int j = 0; j < n; j++) {
            double pj = e[j] / sum;
            if (wrow) wrow[j] += (float)(pj / c->heads);
            for (int k = 0; k < dh; k++) ctx[h * dh + k] += pj * V[(size_t)j * d + h * dh + k];
        }
    }
    free(e);
}

void mha_forward_ref(float *out, float *weights, const float *xq, const float *xkv,
                     const int *kv_lengths, int causal, const MhaParams *p, const MhaConfig *c,
                     int B, int T, int S) {
    int d = c->d;
    size_t dd = (size_t)d * d;
    double *Q = malloc((size_t)T * d * sizeof *Q), *K = malloc((size_t)S * d * sizeof *K);
    double *V = malloc((size_t)S * d * sizeof *V), *ctx = malloc((size_t)d * sizeof *ctx);
    if (weights) memset(weights, 0, (size_t)B * T * S * sizeof *weights);
    for (int b = 0; b < B; b++) {
        linear_ref(Q, xq + (size_t)b * T * d, p->in_w, p->in_b, T, d);
        linear_ref(K, xkv + (size_t)b * S * d, p->in_w + dd, p->in_b + d, S, d);
        linear_ref(V, xkv + (size_t)b * S * d, p->in_w + 2 * dd, p->in_b + 2 * d, S, d);
        for (int i = 0; i < T; i++) {
            int n = visible(kv_lengths, causal, b, i, S);
            float *wrow = weights ? weights + ((size_t)b * T + i) * S : NULL;
            ref_query(ctx, wrow, Q + (size_t)i * d, K, V, n, c, S);
            for (int o = 0; o < d; o++) {
                double s = p->out_b[o];
                for (int k = 0; k < d; k++) s += ctx[k] * p->out_w[(size_t)o * d + k];
                out[((size_t)b * T + i) * d + o] = (float)s;
            }
        }
    }
    free(Q), free(K), free(V), free(ctx);
}

// --- decoding with the cache ---------------------------------------------------------------

// rows (rows, d) of out, row r at out + r ldo: x (rows, d) W^T + bias, as linear_forward
// computes it (the bias broadcast, then one GEMM adding the product).
static void project_rows(float *out, size_t ldo, const float *x, const float *W,
                         const float *bias, int rows, int d) {
    for (int r = 0; r < rows; r++) memcpy(out + (size_t)r * ldo, bias, (size_t)d * sizeof *out);
    gemm(false, true, rows, d, d, 1.0f, x, d, W, d, 1.0f, out, (int)ldo);
}

void mha_kv_write(float *K, float *V, const float *x, const MhaParams *p, const MhaConfig *c,
                  int B, int n, int pos, int cap) {
    CHECK(pos >= 0 && n >= 1 && pos + n <= cap, "kv cache: positions [%d, %d) past %d", pos,
          pos + n, cap);
    int d = c->d;
    size_t dd = (size_t)d * d, ld = (size_t)cap * d;
    if (n == 1) {  // one decoding step: every image's new row in one product, stride cap rows
        project_rows(K + (size_t)pos * d, ld, x, p->in_w + dd, p->in_b + d, B, d);
        project_rows(V + (size_t)pos * d, ld, x, p->in_w + 2 * dd, p->in_b + 2 * d, B, d);
        return;
    }
    for (int b = 0; b < B; b++) {
        size_t at = ((size_t)b * cap + pos) * d;
        const float *xb = x + (size_t)b * n * d;
        linear_forward(K + at, xb, p->in_w + dd, p->in_b + d, n, d, d);
        linear_forward(V + at, xb, p->in_w + 2 * dd, p->in_b + 2 * d, n, d, d);
    }
}

size_t mha_step_scratch_floats(const MhaConfig *c, int B, int cap) {
    return 2 * (size_t)B * c->d + 2 * (size_t)cap;
}

// a . b over n floats, in 16 running sums (so that the compiler vectorises the loop).
static float dot_lanes(const float *a, const float *b, int n) {
    float acc[16] = {0};
    int k = 0;
    for (; k + 16 <= n; k += 16)
        for (int l = 0; l < 16; l++) acc[l] += a[k + l] * b[k + l];
    float s = 0.0f;
    for (; k < n; k++) s += a[k] * b[k];
    for (int l = 0; l < 16; l++) s += acc[l];
    return s;
}

// One image's concat (d) from its query (d) over m cached positions; wrow (cap) or NULL.
// Per head, a matrix-vector product each way as plain loops: with one query, a GEMM call per
// head costs more than its arithmetic.
static void step_image(float *concat, float *wrow, float *scores, float *probs, const float *q,
                       const float *K, const float *V, int m, const MhaConfig *c, int cap) {
    int d = c->d, dh = d / c->heads;
    float scale = 1.0f / sqrtf((float)dh);
    if (wrow) memset(wrow, 0, (size_t)cap * sizeof *wrow);
    for (int h = 0; h < c->heads; h++) {
        const float *qh = q + h * dh;
        for (int j = 0; j < m; j++) scores[j] = scale * dot_lanes(qh, K + (size_t)j * d + h * dh, dh);
        softmax_forward(probs, scores, NULL, 1, m);
        float *ctx = concat + h * dh;
        memset(ctx, 0, (size_t)dh * sizeof *ctx);
        for (int j = 0; j < m; j++) {
            const float *vj = V + (size_t)j * d + h * dh;
            float pj = probs[j];
            for (int k = 0; k < dh; k++) ctx[k] += pj * vj[k];
        }
        if (wrow && c->weights_head == 0)
            for (int j = 0; j < m; j++) wrow[j] += probs[j] / (float)c->heads;
        else if (wrow && c->weights_head == h + 1)
            memcpy(wrow, probs, (size_t)m * sizeof *wrow);
    }
}

void mha_step_forward(float *out, float *weights, float *scratch, const float *xq,
                      const float *K, const float *V, int n, const int *kv_lengths,
                      const MhaParams *p, const MhaConfig *c, int B, int cap) {
    CHECK(n >= 1 && n <= cap, "mha step over %d of %d positions", n, cap);
    CHECK(c->weights_head >= 0 && c->weights_head <= c->heads, "weights of head %d of %d",
          c->weights_head - 1, c->heads);
    int d = c->d;
    float *q = scratch, *concat = q + (size_t)B * d, *scores = concat + (size_t)B * d;
    float *probs = scores + cap;
    linear_forward(q, xq, p->in_w, p->in_b, B, d, d);
    for (int b = 0; b < B; b++) {
        int m = visible(kv_lengths, 0, b, 0, cap);
        m = m < n ? m : n;
        size_t at = (size_t)b * cap * d;
        step_image(concat + (size_t)b * d, weights ? weights + (size_t)b * cap : NULL, scores,
                   probs, q + (size_t)b * d, K + at, V + at, m, c, cap);
    }
    linear_forward(out, concat, p->out_w, p->out_b, B, d, d);
}
