// test_ops.c: the basic ops (activations, linear, embedding, LSTM cell, softmax, losses):
// fast kernels against plain-loop references, hand-computed values, numerical edge cases,
// and a central-difference gradient check of every backward.
//
// Tolerances (fixed, never scaled by anything but the stated rtol):
//   gradient checks: eps 1e-3, |analytic - numeric| <= 1e-3 + 1e-2 * max(|a|, |n|)
//     (float forward passes, loss accumulated in double; inputs of order 1).
//   kernel vs plain-loop reference (float vs double accumulation, sums of <= 80 terms):
//     |fast - ref| <= 1e-5 + 1e-5 * |ref|.
//   values computed by hand in double: |got - want| <= 1e-6 + 1e-6 * |want|.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/activations.h"
#include "core/check.h"
#include "core/gemm.h"
#include "core/rng.h"
#include "seq/embedding.h"
#include "seq/linear.h"
#include "seq/loss.h"
#include "seq/lstm.h"
#include "seq/softmax.h"
#include "tests/support/gradcheck.h"
#include "tests/support/test.h"

#define GC_EPS 1e-3
#define GC_ATOL 1e-3
#define GC_RTOL 1e-2
#define REF_ATOL 1e-5
#define REF_RTOL 1e-5
#define HAND_ATOL 1e-6
#define HAND_RTOL 1e-6

static int rand_dim(Rng *rng, int lo, int hi) { return lo + (int)rng_below(rng, (uint32_t)(hi - lo + 1)); }

static float *new_uniform(size_t n, float lo, float hi, Rng *rng) {
    float *x = xmalloc((n ? n : 1) * sizeof(float));
    fill_uniform(x, n, lo, hi, rng);
    return x;
}

static GradcheckOp gc_op(void *ctx, void (*fw)(void *, float *), void (*bw)(void *, const float *),
                         size_t n_out, GradcheckInput *inputs, int n_inputs) {
    return (GradcheckOp){.ctx = ctx, .forward = fw, .backward = bw, .n_out = n_out,
                         .inputs = inputs, .n_inputs = n_inputs, .eps = GC_EPS,
                         .atol = GC_ATOL, .rtol = GC_RTOL};
}

// ---- activations -------------------------------------------------------------------------

typedef struct {
    float *x, *dx, *y;
    size_t n;
    int kind;  // 0 sigmoid, 1 tanh, 2 relu
} ActCtx;

static void act_fw(void *p, float *out) {
    ActCtx *a = p;
    if (a->kind == 0) sigmoid_forward(a->y, a->x, a->n);
    if (a->kind == 1) tanh_forward(a->y, a->x, a->n);
    if (a->kind == 2) relu_forward(a->y, a->x, a->n);
    memcpy(out, a->y, a->n * sizeof(float));
}

static void act_bw(void *p, const float *dout) {
    ActCtx *a = p;
    if (a->kind == 0) sigmoid_backward(a->dx, dout, a->y, a->n);
    if (a->kind == 1) tanh_backward(a->dx, dout, a->y, a->n);
    if (a->kind == 2) relu_backward(a->dx, dout, a->y, a->n);
}

static void test_activations_gradcheck(void) {
    static const char *names[] = {"sigmoid", "tanh", "relu"};
    Rng rng;
    rng_seed(&rng, 101);
    for (int kind = 0; kind < 3; kind++) {
        size_t n = (size_t)rand_dim(&rng, 5, 40);
        ActCtx a = {.x = new_uniform(n, -3, 3, &rng), .dx = xcalloc(n, sizeof(float)),
                    .y = xcalloc(n, sizeof(float)), .n = n, .kind = kind};
        // Keep relu's inputs away from its kink at 0 (further than eps).
        for (size_t i = 0; i < n; i++)
            if (fabsf(a.x[i]) < 0.05f) a.x[i] = a.x[i] < 0 ? -0.05f : 0.05f;
        GradcheckInput in[] = {{"x", a.x, a.dx, n}};
        GradcheckOp op = gc_op(&a, act_fw, act_bw, n, in, 1);
        EXPECT(gradcheck(names[kind], &op, &rng) == 0, "%s backward disagrees", names[kind]);
        free(a.x);
        free(a.dx);
        free(a.y);
    }
}

static void test_activations_values(void) {
    enum { N = 13 };
    float x[N] = {-100, -30, -10, -2, -0.5f, -1e-3f, 0, 1e-3f, 0.5f, 2, 10, 30, 100};
    float s[N], t[N], r[N];
    sigmoid_forward(s, x, N);
    tanh_forward(t, x, N);
    relu_forward(r, x, N);
    for (int i = 0; i < N; i++) {
        EXPECT(isfinite(s[i]) && s[i] >= 0.0f && s[i] <= 1.0f, "sigmoid(%g) = %g", x[i], s[i]);
        double want = 1.0 / (1.0 + exp(-(double)x[i]));
        EXPECT_NEAR(s[i], want, 1e-7, 1e-6);
        EXPECT_NEAR(t[i], tanh((double)x[i]), 1e-7, 1e-6);
        EXPECT(r[i] == (x[i] > 0 ? x[i] : 0.0f), "relu(%g) = %g", x[i], r[i]);
    }
    // The tails: sigmoid(-100) is a tiny positive number, not 0 / NaN; sigmoid(100) is 1.
    EXPECT(s[0] > 0.0f && s[0] < 1e-40f, "sigmoid(-100) = %g", s[0]);
    EXPECT(s[N - 1] == 1.0f, "sigmoid(100) = %g", s[N - 1]);
    // Backward accumulates.
    float dx[N], dout[N];
    for (int i = 0; i < N; i++) dx[i] = 1.0f, dout[i] = 0.5f;
    sigmoid_backward(dx, dout, s, N);
    for (int i = 0; i < N; i++) EXPECT_NEAR(dx[i], 1.0 + 0.5 * s[i] * (1.0 - s[i]), 1e-7, 1e-6);
}

// ---- linear ------------------------------------------------------------------------------

typedef struct {
    float *inp, *w, *bias, *dinp, *dw, *dbias;
    int B, C, OC;
} LinCtx;

static void lin_fw(void *p, float *out) {
    LinCtx *l = p;
    linear_forward(out, l->inp, l->w, l->bias, l->B, l->C, l->OC);
}

static void lin_bw(void *p, const float *dout) {
    LinCtx *l = p;
    linear_backward(l->dinp, l->dw, l->bias ? l->dbias : NULL, dout, l->inp, l->w, l->B, l->C,
                    l->OC);
}

static void test_linear_gradcheck(void) {
    Rng rng;
    rng_seed(&rng, 202);
    for (int variant = 0; variant < 3; variant++) {
        LinCtx l = {.B = rand_dim(&rng, 1, 5), .C = rand_dim(&rng, 1, 9), .OC = rand_dim(&rng, 1, 7)};
        size_t ni = (size_t)l.B * l.C, nw = (size_t)l.OC * l.C;
        l.inp = new_uniform(ni, -1, 1, &rng);
        l.w = new_uniform(nw, -1, 1, &rng);
        l.bias = variant == 1 ? NULL : new_uniform((size_t)l.OC, -1, 1, &rng);
        l.dinp = variant == 2 ? NULL : xcalloc(ni, sizeof(float));
        l.dw = xcalloc(nw, sizeof(float));
        l.dbias = xcalloc((size_t)l.OC, sizeof(float));
        // variant 0: everything; 1: no bias; 2: dinp NULL (first layer).
        GradcheckInput in[3];
        int k = 0;
        in[k++] = (GradcheckInput){"weight", l.w, l.dw, nw};
        if (l.bias) in[k++] = (GradcheckInput){"bias", l.bias, l.dbias, (size_t)l.OC};
        if (l.dinp) in[k++] = (GradcheckInput){"inp", l.inp, l.dinp, ni};
        GradcheckOp op = gc_op(&l, lin_fw, lin_bw, (size_t)l.B * l.OC, in, k);
        EXPECT(gradcheck("linear", &op, &rng) == 0, "variant %d (B %d C %d OC %d)", variant, l.B,
               l.C, l.OC);
        free(l.inp), free(l.w), free(l.bias), free(l.dinp), free(l.dw), free(l.dbias);
    }
}

static void test_linear_matches_reference(void) {
    Rng rng;
    rng_seed(&rng, 203);
    const int shapes[][3] = {{1, 1, 1}, {3, 5, 7}, {13, 70, 33}, {8, 64, 80}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int B = shapes[s][0], C = shapes[s][1], OC = shapes[s][2];
        float *inp = new_uniform((size_t)B * C, -1, 1, &rng);
        float *w = new_uniform((size_t)OC * C, -1, 1, &rng);
        float *bias = new_uniform((size_t)OC, -1, 1, &rng);
        float *out = xmalloc((size_t)B * OC * sizeof(float));
        float *ref = xmalloc((size_t)B * OC * sizeof(float));
        for (int with_bias = 0; with_bias < 2; with_bias++) {
            // Poison out: the forward must overwrite, not accumulate.
            for (size_t i = 0; i < (size_t)B * OC; i++) out[i] = 1e6f;
            linear_forward(out, inp, w, with_bias ? bias : NULL, B, C, OC);
            linear_forward_ref(ref, inp, w, with_bias ? bias : NULL, B, C, OC);
            for (size_t i = 0; i < (size_t)B * OC; i++) EXPECT_NEAR(out[i], ref[i], REF_ATOL, REF_RTOL);
        }
        free(inp), free(w), free(bias), free(out), free(ref);
    }
}

static void test_linear_backward_accumulates(void) {
    Rng rng;
    rng_seed(&rng, 204);
    int B = 4, C = 6, OC = 5;
    float *inp = new_uniform((size_t)B * C, -1, 1, &rng);
    float *w = new_uniform((size_t)OC * C, -1, 1, &rng);
    float *dout = new_uniform((size_t)B * OC, -1, 1, &rng);
    float *g1[3], *g2[3];
    size_t n[3] = {(size_t)B * C, (size_t)OC * C, (size_t)OC};
    for (int k = 0; k < 3; k++) g1[k] = xcalloc(n[k], sizeof(float)), g2[k] = xcalloc(n[k], sizeof(float));
    linear_backward(g1[0], g1[1], g1[2], dout, inp, w, B, C, OC);
    linear_backward(g2[0], g2[1], g2[2], dout, inp, w, B, C, OC);
    linear_backward(g2[0], g2[1], g2[2], dout, inp, w, B, C, OC);
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < n[k]; i++) EXPECT_NEAR(g2[k][i], 2.0 * g1[k][i], 1e-6, 1e-6);
    // dbias is the column sum of dout.
    for (int j = 0; j < OC; j++) {
        double s = 0;
        for (int b = 0; b < B; b++) s += dout[b * OC + j];
        EXPECT_NEAR(g1[2][j], s, HAND_ATOL, HAND_RTOL);
    }
    for (int k = 0; k < 3; k++) free(g1[k]), free(g2[k]);
    free(inp), free(w), free(dout);
}

// linear_weight_backward_steps against a double loop over steps and rows: a full batch (one
// GEMM) and a partial one (a GEMM per step), from step 0 or 1, with the input a step behind
// or not, inside wider rows (ldin, ldw) whose other columns must stay as they were.
static void test_linear_weight_backward_steps(void) {
    Rng rng;
    rng_seed(&rng, 205);
    const int T = 4, Bm = 5, OC = 6, C = 7, ldin = 9, ldw = 8;
    float *dout = new_uniform((size_t)T * Bm * OC, -1, 1, &rng);
    float *inp = new_uniform((size_t)T * Bm * ldin, -1, 1, &rng);
    float *dw0 = new_uniform((size_t)OC * ldw, -1, 1, &rng);
    float *dw = xmalloc(sizeof(float) * OC * ldw);
    const int cases[][3] = {{5, 0, 0}, {5, 1, 0}, {5, 1, 1}, {3, 0, 0}, {3, 1, 1}, {3, 2, 1}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int B = cases[k][0], t0 = cases[k][1], shift = cases[k][2];
        memcpy(dw, dw0, sizeof(float) * OC * ldw);
        linear_weight_backward_steps(dw, ldw, dout, inp, ldin, t0, shift, T, B, Bm, OC, C);
        for (int o = 0; o < OC; o++) {
            for (int j = 0; j < ldw; j++) {
                double want = dw0[o * ldw + j];
                for (int t = t0; t < T && j < C; t++)
                    for (int b = 0; b < B; b++)
                        want += (double)dout[((size_t)t * Bm + b) * OC + o] *
                                inp[((size_t)(t - shift) * Bm + b) * ldin + j];
                EXPECT_NEAR(dw[o * ldw + j], want, REF_ATOL, REF_RTOL);
            }
        }
    }
    free(dout), free(inp), free(dw0), free(dw);
}

// ---- embedding ---------------------------------------------------------------------------

typedef struct {
    float *table, *dtable;
    int *tokens;
    int B, C;
} EmbCtx;

static void emb_fw(void *p, float *out) {
    EmbCtx *e = p;
    embedding_forward(out, e->tokens, e->table, e->B, e->C);
}

static void emb_bw(void *p, const float *dout) {
    EmbCtx *e = p;
    embedding_backward(e->dtable, dout, e->tokens, e->B, e->C);
}

static void test_embedding(void) {
    Rng rng;
    rng_seed(&rng, 303);
    int V = 6, C = 5, B = 9;  // more rows than tokens: repeats are certain
    EmbCtx e = {.table = new_uniform((size_t)V * C, -1, 1, &rng),
                .dtable = xcalloc((size_t)V * C, sizeof(float)), .tokens = xmalloc(B * sizeof(int)),
                .B = B, .C = C};
    for (int b = 0; b < B; b++) e.tokens[b] = (int)rng_below(&rng, (uint32_t)V);
    float *out = xmalloc((size_t)B * C * sizeof(float));
    embedding_forward(out, e.tokens, e.table, B, C);
    for (int b = 0; b < B; b++)
        for (int k = 0; k < C; k++)
            EXPECT(out[b * C + k] == e.table[e.tokens[b] * C + k], "row %d col %d", b, k);
    GradcheckInput in[] = {{"table", e.table, e.dtable, (size_t)V * C}};
    GradcheckOp op = gc_op(&e, emb_fw, emb_bw, (size_t)B * C, in, 1);
    EXPECT(gradcheck("embedding", &op, &rng) == 0, "embedding backward disagrees");
    free(out), free(e.table), free(e.dtable), free(e.tokens);
}

// ---- LSTM --------------------------------------------------------------------------------

typedef struct {
    int B, I, H;
    int with_state;  // h_prev, c_prev given (else NULL = zeros)
    int with_dc;     // output [h, c] with dc from dout (else output h, dc NULL)
    float *x, *h_prev, *c_prev, *W, *b;
    float *dx, *dh_prev, *dc_prev, *dW, *db;
    float *h, *c, *gates, *xh, *scratch;
} LstmCtx;

static void lstm_ctx_init(LstmCtx *l, int B, int I, int H, int with_state, int with_dc, Rng *rng) {
    *l = (LstmCtx){.B = B, .I = I, .H = H, .with_state = with_state, .with_dc = with_dc};
    size_t bh = (size_t)B * H, nw = (size_t)4 * H * (I + H);
    l->x = new_uniform((size_t)B * I, -1, 1, rng);
    l->h_prev = new_uniform(bh, -1, 1, rng);
    l->c_prev = new_uniform(bh, -2, 2, rng);
    l->W = new_uniform(nw, -0.7f, 0.7f, rng);
    l->b = new_uniform((size_t)4 * H, -0.5f, 0.5f, rng);
    l->dx = xcalloc((size_t)B * I + 1, sizeof(float));
    l->dh_prev = xcalloc(bh, sizeof(float));
    l->dc_prev = xcalloc(bh, sizeof(float));
    l->dW = xcalloc(nw, sizeof(float));
    l->db = xcalloc((size_t)4 * H, sizeof(float));
    l->h = xcalloc(bh, sizeof(float));
    l->c = xcalloc(bh, sizeof(float));
    l->gates = xcalloc(bh * 4, sizeof(float));
    l->xh = xcalloc((size_t)B * (I + H), sizeof(float));
    l->scratch = xcalloc((size_t)lstm_scratch_floats(B, I, H), sizeof(float));
}

static void lstm_ctx_free(LstmCtx *l) {
    float *bufs[] = {l->x,  l->h_prev, l->c_prev, l->W, l->b,     l->dx,  l->dh_prev, l->dc_prev,
                     l->dW, l->db,     l->h,      l->c, l->gates, l->xh, l->scratch};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
}

static void lstm_fw(void *p, float *out) {
    LstmCtx *l = p;
    lstm_forward(l->h, l->c, l->gates, l->xh, l->x, l->with_state ? l->h_prev : NULL,
                 l->with_state ? l->c_prev : NULL, l->W, l->b, l->B, l->I, l->H);
    size_t bh = (size_t)l->B * l->H;
    memcpy(out, l->h, bh * sizeof(float));
    if (l->with_dc) memcpy(out + bh, l->c, bh * sizeof(float));
}

static void lstm_bw(void *p, const float *dout) {
    LstmCtx *l = p;
    size_t bh = (size_t)l->B * l->H;
    lstm_backward(l->I > 0 ? l->dx : NULL, l->with_state ? l->dh_prev : NULL,
                  l->with_state ? l->dc_prev : NULL, l->dW, l->db, dout,
                  l->with_dc ? dout + bh : NULL, l->gates, l->xh, l->with_state ? l->c_prev : NULL,
                  l->c, l->W, l->scratch, l->B, l->I, l->H);
}

// The gradient check's inputs of an LSTM step into in (room for 5): x, W, b, and with a
// previous state h_prev and c_prev. Returns their number.
static int lstm_inputs(GradcheckInput *in, LstmCtx *l) {
    size_t bh = (size_t)l->B * l->H;
    int k = 0;
    in[k++] = (GradcheckInput){"x", l->x, l->dx, (size_t)l->B * l->I};
    in[k++] = (GradcheckInput){"W", l->W, l->dW, (size_t)4 * l->H * (l->I + l->H)};
    in[k++] = (GradcheckInput){"b", l->b, l->db, (size_t)4 * l->H};
    if (l->with_state) {
        in[k++] = (GradcheckInput){"h_prev", l->h_prev, l->dh_prev, bh};
        in[k++] = (GradcheckInput){"c_prev", l->c_prev, l->dc_prev, bh};
    }
    return k;
}

static void test_lstm_gradcheck(void) {
    Rng rng;
    rng_seed(&rng, 404);
    // variant 0: state given, output [h, c]; 1: zero state; 2: output h only (dc NULL).
    for (int variant = 0; variant < 3; variant++) {
        LstmCtx l;
        int with_state = variant != 1, with_dc = variant != 2;
        lstm_ctx_init(&l, rand_dim(&rng, 1, 4), rand_dim(&rng, 1, 6), rand_dim(&rng, 1, 5),
                      with_state, with_dc, &rng);
        size_t bh = (size_t)l.B * l.H;
        GradcheckInput in[5];
        int k = lstm_inputs(in, &l);
        GradcheckOp op = gc_op(&l, lstm_fw, lstm_bw, with_dc ? 2 * bh : bh, in, k);
        EXPECT(gradcheck("lstm", &op, &rng) == 0, "variant %d (B %d I %d H %d)", variant, l.B,
               l.I, l.H);
        lstm_ctx_free(&l);
    }
}

static void test_lstm_matches_reference(void) {
    Rng rng;
    rng_seed(&rng, 405);
    const int shapes[][3] = {{1, 1, 1}, {3, 5, 4}, {7, 20, 16}, {5, 33, 9}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        for (int with_state = 0; with_state < 2; with_state++) {
            LstmCtx l;
            lstm_ctx_init(&l, shapes[s][0], shapes[s][1], shapes[s][2], with_state, 1, &rng);
            int B = l.B, I = l.I, H = l.H;
            size_t bh = (size_t)B * H;
            float *h = xmalloc(bh * sizeof(float)), *c = xmalloc(bh * sizeof(float));
            float *g = xmalloc(4 * bh * sizeof(float));
            float *out = xmalloc(2 * bh * sizeof(float));
            lstm_fw(&l, out);  // fills l.h, l.c, l.gates, l.xh
            free(out);
            lstm_forward_ref(h, c, g, l.x, with_state ? l.h_prev : NULL,
                             with_state ? l.c_prev : NULL, l.W, l.b, NULL, B, I, H);
            for (size_t i = 0; i < bh; i++) {
                EXPECT_NEAR(l.h[i], h[i], REF_ATOL, REF_RTOL);
                EXPECT_NEAR(l.c[i], c[i], REF_ATOL, REF_RTOL);
            }
            for (size_t i = 0; i < 4 * bh; i++) EXPECT_NEAR(l.gates[i], g[i], REF_ATOL, REF_RTOL);
            for (int r = 0; r < B; r++)
                for (int k = 0; k < I + H; k++) {
                    float want = k < I ? l.x[r * I + k] : with_state ? l.h_prev[r * H + k - I] : 0.0f;
                    EXPECT(l.xh[r * (I + H) + k] == want, "xh[%d][%d]", r, k);
                }
            free(h), free(c), free(g);
            lstm_ctx_free(&l);
        }
    }
}

// Peepholes (seq/lstm.h) through the split API DRAW uses: lstm_forward_packed, then
// lstm_gates_backward and the caller's products dxh = dgates W, dW += dgates^T xh.
typedef struct {
    LstmCtx l;
    float *peep, *dpeep, *dgates, *dxh;
    PackedMatrix Wt;
} PeepCtx;

static void peep_ctx_init(PeepCtx *q, int B, int I, int H, int with_state, Rng *rng) {
    lstm_ctx_init(&q->l, B, I, H, with_state, 1, rng);
    q->peep = new_uniform((size_t)3 * H, -1.5f, 1.5f, rng);
    q->dpeep = xcalloc((size_t)3 * H, sizeof(float));
    q->dgates = xcalloc((size_t)B * 4 * H, sizeof(float));
    q->dxh = xcalloc((size_t)B * (I + H), sizeof(float));
    packed_alloc(&q->Wt, I + H, 4 * H);
}

static void peep_ctx_free(PeepCtx *q) {
    lstm_ctx_free(&q->l);
    free(q->peep), free(q->dpeep), free(q->dgates), free(q->dxh);
    packed_free(&q->Wt);
}

static void peep_fw(void *p, float *out) {
    PeepCtx *q = p;
    LstmCtx *l = &q->l;
    int K = l->I + l->H;
    for (int r = 0; r < l->B; r++) {
        float *row = l->xh + (size_t)r * K;
        memcpy(row, l->x + (size_t)r * l->I, sizeof(float) * l->I);
        for (int k = 0; k < l->H; k++) row[l->I + k] = l->with_state ? l->h_prev[r * l->H + k] : 0.0f;
    }
    packed_pack(&q->Wt, true, l->W, K);
    lstm_forward_packed(l->h, l->c, l->gates, l->xh, K, l->with_state ? l->c_prev : NULL, &q->Wt,
                        l->b, q->peep, l->B, l->I, l->H);
    size_t bh = (size_t)l->B * l->H;
    memcpy(out, l->h, bh * sizeof(float));
    memcpy(out + bh, l->c, bh * sizeof(float));
}

static void peep_bw(void *p, const float *dout) {
    PeepCtx *q = p;
    LstmCtx *l = &q->l;
    int B = l->B, I = l->I, H = l->H, K = I + H, G = 4 * H;
    size_t bh = (size_t)B * H;
    memcpy(q->dgates, l->gates, sizeof(float) * B * G);  // the backward works in place
    lstm_gates_backward(q->dgates, l->with_state ? l->dc_prev : NULL, dout, dout + bh,
                        l->with_state ? l->c_prev : NULL, l->c, q->peep, q->dpeep, l->db, B, H);
    gemm(true, false, G, K, B, 1.0f, q->dgates, G, l->xh, K, 1.0f, l->dW, K);
    gemm(false, false, B, K, G, 1.0f, q->dgates, G, l->W, K, 0.0f, q->dxh, K);
    for (int r = 0; r < B; r++) {
        for (int k = 0; k < I; k++) l->dx[r * I + k] += q->dxh[r * K + k];
        if (l->with_state)
            for (int k = 0; k < H; k++) l->dh_prev[r * H + k] += q->dxh[r * K + I + k];
    }
}

static void test_lstm_peephole_gradcheck(void) {
    Rng rng;
    rng_seed(&rng, 406);
    for (int with_state = 0; with_state < 2; with_state++) {
        PeepCtx q;
        peep_ctx_init(&q, rand_dim(&rng, 1, 4), rand_dim(&rng, 1, 6), rand_dim(&rng, 1, 5),
                      with_state, &rng);
        LstmCtx *l = &q.l;
        size_t bh = (size_t)l->B * l->H;
        GradcheckInput in[6];
        int k = lstm_inputs(in, l);
        in[k++] = (GradcheckInput){"peep", q.peep, q.dpeep, (size_t)3 * l->H};
        GradcheckOp op = gc_op(&q, peep_fw, peep_bw, 2 * bh, in, k);
        EXPECT(gradcheck("lstm peephole", &op, &rng) == 0, "state %d (B %d I %d H %d)",
               with_state, l->B, l->I, l->H);
        peep_ctx_free(&q);
    }
}

// The peephole forward against the plain double-precision loop, and with the peepholes
// zero the same numbers as without them (bit for bit).
static void test_lstm_peephole_matches_reference(void) {
    Rng rng;
    rng_seed(&rng, 407);
    const int shapes[][3] = {{1, 1, 1}, {3, 5, 4}, {7, 20, 16}, {5, 33, 9}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        for (int with_state = 0; with_state < 2; with_state++) {
            PeepCtx q;
            peep_ctx_init(&q, shapes[s][0], shapes[s][1], shapes[s][2], with_state, &rng);
            LstmCtx *l = &q.l;
            int B = l->B, I = l->I, H = l->H;
            size_t bh = (size_t)B * H;
            float *h = xmalloc(bh * sizeof(float)), *c = xmalloc(bh * sizeof(float));
            float *g = xmalloc(4 * bh * sizeof(float)), *out = xmalloc(2 * bh * sizeof(float));
            peep_fw(&q, out);
            lstm_forward_ref(h, c, g, l->x, with_state ? l->h_prev : NULL,
                             with_state ? l->c_prev : NULL, l->W, l->b, q.peep, B, I, H);
            for (size_t i = 0; i < bh; i++) {
                EXPECT_NEAR(l->h[i], h[i], REF_ATOL, REF_RTOL);
                EXPECT_NEAR(l->c[i], c[i], REF_ATOL, REF_RTOL);
            }
            for (size_t i = 0; i < 4 * bh; i++) EXPECT_NEAR(l->gates[i], g[i], REF_ATOL, REF_RTOL);
            memset(q.peep, 0, sizeof(float) * 3 * H);
            peep_fw(&q, out);
            float *h0 = xmalloc(bh * sizeof(float)), *c0 = xmalloc(bh * sizeof(float));
            float *g0 = xmalloc(4 * bh * sizeof(float));
            lstm_forward_packed(h0, c0, g0, l->xh, I + H, with_state ? l->c_prev : NULL, &q.Wt,
                                l->b, NULL, B, I, H);
            EXPECT(!memcmp(h0, l->h, bh * sizeof(float)) && !memcmp(c0, l->c, bh * sizeof(float)) &&
                       !memcmp(g0, l->gates, 4 * bh * sizeof(float)),
                   "zero peepholes change the step (B %d I %d H %d)", B, I, H);
            free(h), free(c), free(g), free(out), free(h0), free(c0), free(g0);
            peep_ctx_free(&q);
        }
    }
}

static void test_lstm_backward_accumulates(void) {
    Rng rng;
    rng_seed(&rng, 406);
    LstmCtx l;
    lstm_ctx_init(&l, 3, 4, 5, 1, 1, &rng);
    size_t bh = (size_t)l.B * l.H;
    float *out = xmalloc(2 * bh * sizeof(float));
    float *dout = new_uniform(2 * bh, -1, 1, &rng);
    lstm_fw(&l, out);
    float *g[] = {l.dx, l.dh_prev, l.dc_prev, l.dW, l.db};
    size_t n[] = {(size_t)l.B * l.I, bh, bh, (size_t)4 * l.H * (l.I + l.H), (size_t)4 * l.H};
    float *once[5];
    lstm_bw(&l, dout);
    for (int k = 0; k < 5; k++) {
        once[k] = xmalloc(n[k] * sizeof(float));
        memcpy(once[k], g[k], n[k] * sizeof(float));
    }
    // Scratch garbage must not leak into the result.
    for (int i = 0; i < lstm_scratch_floats(l.B, l.I, l.H); i++) l.scratch[i] = 1e9f;
    lstm_bw(&l, dout);
    for (int k = 0; k < 5; k++)
        for (size_t i = 0; i < n[k]; i++) EXPECT_NEAR(g[k][i], 2.0 * once[k][i], 1e-6, 1e-6);
    for (int k = 0; k < 5; k++) free(once[k]);
    free(out), free(dout);
    lstm_ctx_free(&l);
}

// ---- softmax -----------------------------------------------------------------------------

typedef struct {
    float *x, *dx, *y;
    unsigned char *mask;
    int N, L;
} SmCtx;

static void sm_fw(void *p, float *out) {
    SmCtx *s = p;
    softmax_forward(s->y, s->x, s->mask, s->N, s->L);
    memcpy(out, s->y, (size_t)s->N * s->L * sizeof(float));
}

static void sm_bw(void *p, const float *dout) {
    SmCtx *s = p;
    softmax_backward(s->dx, dout, s->y, s->N, s->L);
}

static void test_softmax_gradcheck(void) {
    Rng rng;
    rng_seed(&rng, 505);
    for (int masked = 0; masked < 2; masked++) {
        SmCtx s = {.N = rand_dim(&rng, 2, 5), .L = rand_dim(&rng, 2, 9)};
        size_t n = (size_t)s.N * s.L;
        s.x = new_uniform(n, -3, 3, &rng);
        s.dx = xcalloc(n, sizeof(float));
        s.y = xcalloc(n, sizeof(float));
        if (masked) {
            s.mask = xmalloc(n);
            for (size_t i = 0; i < n; i++) s.mask[i] = (unsigned char)(rng_uniform(&rng) < 0.7f);
            for (int r = 0; r < s.N; r++) s.mask[(size_t)r * s.L] = 1;  // a kept entry per row
            memset(s.mask + (size_t)(s.N - 1) * s.L, 0, (size_t)s.L);   // but the last row: none
        }
        GradcheckInput in[] = {{"x", s.x, s.dx, n}};
        GradcheckOp op = gc_op(&s, sm_fw, sm_bw, n, in, 1);
        EXPECT(gradcheck(masked ? "softmax masked" : "softmax", &op, &rng) == 0,
               "N %d L %d masked %d", s.N, s.L, masked);
        free(s.x), free(s.dx), free(s.y), free(s.mask);
    }
}

static void test_softmax_values(void) {
    Rng rng;
    rng_seed(&rng, 506);
    enum { N = 4, L = 7 };
    float x[N * L], y[N * L];
    unsigned char mask[N * L];
    fill_uniform(x, N * L, -5, 5, &rng);
    for (int i = 0; i < N * L; i++) mask[i] = (unsigned char)(i % 3 != 1);
    memset(mask + 2 * L, 0, L);  // row 2 entirely masked
    x[3 * L + 0] = 1000.0f;      // row 3: huge logits must not overflow
    x[3 * L + 3] = 1000.0f;
    x[3 * L + 6] = -1000.0f;
    softmax_forward(y, x, mask, N, L);
    for (int r = 0; r < N; r++) {
        double sum = 0, want_sum = r == 2 ? 0.0 : 1.0;
        double mx = -INFINITY, z = 0;
        for (int i = 0; i < L; i++)
            if (mask[r * L + i] && x[r * L + i] > mx) mx = x[r * L + i];
        for (int i = 0; i < L; i++)
            if (mask[r * L + i]) z += exp((double)x[r * L + i] - mx);
        for (int i = 0; i < L; i++) {
            float v = y[r * L + i];
            sum += v;
            if (!mask[r * L + i]) {
                EXPECT(v == 0.0f, "masked y[%d][%d] = %g", r, i, v);
            } else {
                EXPECT(isfinite(v), "y[%d][%d] = %g", r, i, v);
                EXPECT_NEAR(v, exp((double)x[r * L + i] - mx) / z, HAND_ATOL, HAND_RTOL);
            }
        }
        EXPECT_NEAR(sum, want_sum, 1e-6, 0);
    }
    // Row 3 kept entries 0 and 3 both hold 1000: each 1/2.
    EXPECT_NEAR(y[3 * L + 0], 0.5, HAND_ATOL, HAND_RTOL);
    EXPECT_NEAR(y[3 * L + 3], 0.5, HAND_ATOL, HAND_RTOL);
    // Without a mask every row sums to 1.
    softmax_forward(y, x, NULL, N, L);
    for (int r = 0; r < N; r++) {
        double sum = 0;
        for (int i = 0; i < L; i++) sum += y[r * L + i];
        EXPECT_NEAR(sum, 1.0, 1e-6, 0);
    }
}

// ---- cross-entropy -----------------------------------------------------------------------

typedef struct {
    float *logits, *dlogits, *probs;
    int *targets;
    int N, V;
} CeCtx;

static void ce_fw(void *p, float *out) {
    CeCtx *c = p;
    crossentropy_forward(out, c->probs, c->logits, c->targets, c->N, c->V);
}

static void ce_bw(void *p, const float *dout) {
    CeCtx *c = p;
    crossentropy_backward(c->dlogits, dout, c->probs, c->targets, c->N, c->V);
}

static void test_crossentropy_gradcheck(void) {
    Rng rng;
    rng_seed(&rng, 606);
    CeCtx c = {.N = rand_dim(&rng, 3, 6), .V = rand_dim(&rng, 2, 10)};
    size_t n = (size_t)c.N * c.V;
    c.logits = new_uniform(n, -3, 3, &rng);
    c.dlogits = xcalloc(n, sizeof(float));
    c.probs = xcalloc(n, sizeof(float));
    c.targets = xmalloc((size_t)c.N * sizeof(int));
    for (int r = 0; r < c.N; r++) c.targets[r] = (int)rng_below(&rng, (uint32_t)c.V);
    c.targets[1] = -1;  // an ignored row: loss 0, no gradient
    GradcheckInput in[] = {{"logits", c.logits, c.dlogits, n}};
    GradcheckOp op = gc_op(&c, ce_fw, ce_bw, (size_t)c.N, in, 1);
    EXPECT(gradcheck("crossentropy", &op, &rng) == 0, "N %d V %d", c.N, c.V);
    for (int i = 0; i < c.V; i++) EXPECT(c.dlogits[c.V + i] == 0.0f, "ignored row gradient");
    free(c.logits), free(c.dlogits), free(c.probs), free(c.targets);
}

// A vocabulary long enough for the partial sums of the softmax's denominator (8 lanes and
// a tail): losses and probabilities against a double-precision log-sum-exp.
static void test_crossentropy_long_rows(void) {
    enum { N = 3, V = 1003 };
    static float logits[N * V], probs[N * V];
    float losses[N];
    int targets[N] = {0, 500, V - 1};
    Rng rng;
    rng_seed(&rng, 607);
    for (int i = 0; i < N * V; i++) logits[i] = 8.0f * rng_uniform(&rng) - 4.0f;
    crossentropy_forward(losses, probs, logits, targets, N, V);
    for (int r = 0; r < N; r++) {
        const float *z = logits + r * V;
        double mx = z[0], sum = 0.0;
        for (int i = 1; i < V; i++) mx = z[i] > mx ? z[i] : mx;
        for (int i = 0; i < V; i++) sum += exp((double)z[i] - mx);
        EXPECT_NEAR(losses[r], log(sum) - ((double)z[targets[r]] - mx), 1e-6, 1e-6);
        for (int i = 0; i < V; i += 97)
            EXPECT_NEAR(probs[r * V + i], exp((double)z[i] - mx) / sum, 1e-9, 1e-5);
    }
}

static void test_crossentropy_values(void) {
    // Row 0: logits (1, 2, 3), target 0: -log(e^1 / (e^1 + e^2 + e^3)).
    // Row 1: ignored. Row 2: logits (1000, 0, -1000), target 1: loss 1000 (p underflows).
    float logits[9] = {1, 2, 3, 5, -5, 0, 1000, 0, -1000};
    int targets[3] = {0, -1, 1};
    float losses[3], probs[9];
    double total = crossentropy_forward(losses, probs, logits, targets, 3, 3);
    double e1 = exp(1.0), e2 = exp(2.0), e3 = exp(3.0);
    double want0 = -log(e1 / (e1 + e2 + e3));
    EXPECT_NEAR(losses[0], want0, HAND_ATOL, HAND_RTOL);
    EXPECT(losses[1] == 0.0f, "ignored row loss %g", losses[1]);
    EXPECT_NEAR(losses[2], 1000.0, HAND_ATOL, HAND_RTOL);
    EXPECT_NEAR(total, want0 + 1000.0, 1e-4, HAND_RTOL);
    EXPECT_NEAR(probs[0], e1 / (e1 + e2 + e3), HAND_ATOL, HAND_RTOL);
    // Gradient: probs - onehot, summed dlosses NULL = 1; ignored row untouched.
    float d[9];
    for (int i = 0; i < 9; i++) d[i] = 0.25f;
    crossentropy_backward(d, NULL, probs, targets, 3, 3);
    EXPECT_NEAR(d[0], 0.25 + e1 / (e1 + e2 + e3) - 1.0, HAND_ATOL, HAND_RTOL);
    EXPECT_NEAR(d[2], 0.25 + e3 / (e1 + e2 + e3), HAND_ATOL, HAND_RTOL);
    for (int i = 3; i < 6; i++) EXPECT(d[i] == 0.25f, "ignored row gradient d[%d] = %g", i, d[i]);
    EXPECT_NEAR(d[6], 1.25, HAND_ATOL, HAND_RTOL);
    EXPECT_NEAR(d[7], -0.75, HAND_ATOL, HAND_RTOL);
}

// ---- label-smoothed cross-entropy -----------------------------------------------------

typedef struct {
    CeCtx ce;
    float eps;
} SmoothCtx;

static void smooth_fw(void *p, float *out) {
    SmoothCtx *c = p;
    crossentropy_smoothed_forward(out, c->ce.probs, c->ce.logits, c->ce.targets, c->ce.N,
                                  c->ce.V, c->eps);
}

static void smooth_bw(void *p, const float *dout) {
    SmoothCtx *c = p;
    crossentropy_smoothed_backward(c->ce.dlogits, dout, c->ce.probs, c->ce.targets, c->ce.N,
                                   c->ce.V, c->eps);
}

static void test_crossentropy_smoothed_gradcheck(void) {
    Rng rng;
    rng_seed(&rng, 608);
    SmoothCtx c = {.ce = {.N = rand_dim(&rng, 3, 6), .V = rand_dim(&rng, 2, 10)}, .eps = 0.1f};
    size_t n = (size_t)c.ce.N * c.ce.V;
    c.ce.logits = new_uniform(n, -3, 3, &rng);
    c.ce.dlogits = xcalloc(n, sizeof(float));
    c.ce.probs = xcalloc(n, sizeof(float));
    c.ce.targets = xmalloc((size_t)c.ce.N * sizeof(int));
    for (int r = 0; r < c.ce.N; r++) c.ce.targets[r] = (int)rng_below(&rng, (uint32_t)c.ce.V);
    c.ce.targets[1] = -1;  // an ignored row: loss 0, no gradient
    GradcheckInput in[] = {{"logits", c.ce.logits, c.ce.dlogits, n}};
    GradcheckOp op = gc_op(&c, smooth_fw, smooth_bw, (size_t)c.ce.N, in, 1);
    EXPECT(gradcheck("crossentropy_smoothed", &op, &rng) == 0, "N %d V %d", c.ce.N, c.ce.V);
    for (int i = 0; i < c.ce.V; i++) EXPECT(c.ce.dlogits[c.ce.V + i] == 0.0f, "ignored row gradient");
    free(c.ce.logits), free(c.ce.dlogits), free(c.ce.probs), free(c.ce.targets);
}

// By hand: logits (1, 2, 3), target 0, eps 0.3: q = (0.8, 0.1, 0.1), the loss
// -sum q log p; eps 0 is crossentropy_forward's loss bit for bit.
static void test_crossentropy_smoothed_values(void) {
    float logits[6] = {1, 2, 3, 0.5f, -2, 4}, probs[6], losses[2], plain[2];
    int targets[2] = {0, 2};
    const double e1 = exp(1.0), e2 = exp(2.0), e3 = exp(3.0), Z = e1 + e2 + e3;
    const double want = -(0.8 * log(e1 / Z) + 0.1 * log(e2 / Z) + 0.1 * log(e3 / Z));
    crossentropy_smoothed_forward(losses, probs, logits, targets, 2, 3, 0.3f);
    EXPECT_NEAR(losses[0], want, HAND_ATOL, HAND_RTOL);
    float d[6] = {0};
    crossentropy_smoothed_backward(d, NULL, probs, targets, 2, 3, 0.3f);
    EXPECT_NEAR(d[0], e1 / Z - 0.8, HAND_ATOL, HAND_RTOL);
    EXPECT_NEAR(d[1], e2 / Z - 0.1, HAND_ATOL, HAND_RTOL);
    double t0 = crossentropy_forward(plain, probs, logits, targets, 2, 3);
    double t1 = crossentropy_smoothed_forward(losses, probs, logits, targets, 2, 3, 0.0f);
    EXPECT(t0 == t1 && plain[0] == losses[0] && plain[1] == losses[1], "eps 0: %g vs %g", t1, t0);
}

// ---- BCE with logits ---------------------------------------------------------------------

typedef struct {
    float *logits, *dlogits, *targets;
    size_t n;
} BceCtx;

static void bce_fw(void *p, float *out) {
    BceCtx *b = p;
    bce_logits_forward(out, b->logits, b->targets, b->n);
}

static void bce_bw(void *p, const float *dout) {
    BceCtx *b = p;
    bce_logits_backward(b->dlogits, dout, b->logits, b->targets, b->n);
}

static void test_bce_gradcheck(void) {
    Rng rng;
    rng_seed(&rng, 707);
    BceCtx b = {.n = (size_t)rand_dim(&rng, 10, 40)};
    b.logits = new_uniform(b.n, -4, 4, &rng);
    b.dlogits = xcalloc(b.n, sizeof(float));
    b.targets = new_uniform(b.n, 0, 1, &rng);
    for (size_t i = 0; i < b.n; i += 3) b.targets[i] = (float)(i % 2);  // some hard 0/1 targets
    GradcheckInput in[] = {{"logits", b.logits, b.dlogits, b.n}};
    GradcheckOp op = gc_op(&b, bce_fw, bce_bw, b.n, in, 1);
    EXPECT(gradcheck("bce_logits", &op, &rng) == 0, "n %zu", b.n);
    free(b.logits), free(b.dlogits), free(b.targets);
}

static void test_bce_values_and_stability(void) {
    // Moderate logits: against -t log s - (1 - t) log(1 - s) in double.
    float x[6] = {-3, -0.5f, 0, 0.25f, 2, 4}, t[6] = {0, 1, 0.5f, 0.3f, 1, 0};
    float loss[6];
    double total = bce_logits_forward(loss, x, t, 6), want_total = 0;
    for (int i = 0; i < 6; i++) {
        double s = 1.0 / (1.0 + exp(-(double)x[i]));
        double want = -t[i] * log(s) - (1.0 - t[i]) * log(1.0 - s);
        EXPECT_NEAR(loss[i], want, HAND_ATOL, HAND_RTOL);
        want_total += want;
    }
    EXPECT_NEAR(total, want_total, 1e-5, HAND_RTOL);
    // |x| = 100: the naive formula gives log(0); the stable one gives 0 or 100.
    float xb[4] = {100, 100, -100, -100}, tb[4] = {1, 0, 0, 1}, lb[4], db[4] = {0, 0, 0, 0};
    double tot = bce_logits_forward(lb, xb, tb, 4);
    EXPECT(isfinite(tot), "sum %g", tot);
    EXPECT(lb[0] >= 0.0f && lb[0] < 1e-30f, "loss(100, 1) = %g", lb[0]);
    EXPECT_NEAR(lb[1], 100.0, HAND_ATOL, HAND_RTOL);
    EXPECT(lb[2] >= 0.0f && lb[2] < 1e-30f, "loss(-100, 0) = %g", lb[2]);
    EXPECT_NEAR(lb[3], 100.0, HAND_ATOL, HAND_RTOL);
    EXPECT(bce_logits_forward(NULL, xb, tb, 4) == tot, "NULL loss changes the sum");
    bce_logits_backward(db, NULL, xb, tb, 4);
    for (int i = 0; i < 4; i++) EXPECT(isfinite(db[i]), "dlogit[%d] = %g", i, db[i]);
    EXPECT_NEAR(db[0], 0.0, 1e-30, 0);
    EXPECT_NEAR(db[1], 1.0, HAND_ATOL, HAND_RTOL);
    EXPECT_NEAR(db[2], 0.0, 1e-30, 0);
    EXPECT_NEAR(db[3], -1.0, HAND_ATOL, HAND_RTOL);
}

int main(void) {
    RUN(test_activations_gradcheck);
    RUN(test_activations_values);
    RUN(test_linear_gradcheck);
    RUN(test_linear_matches_reference);
    RUN(test_linear_backward_accumulates);
    RUN(test_linear_weight_backward_steps);
    RUN(test_embedding);
    RUN(test_lstm_gradcheck);
    RUN(test_lstm_matches_reference);
    RUN(test_lstm_backward_accumulates);
    RUN(test_lstm_peephole_gradcheck);
    RUN(test_lstm_peephole_matches_reference);
    RUN(test_softmax_gradcheck);
    RUN(test_softmax_values);
    RUN(test_crossentropy_gradcheck);
    RUN(test_crossentropy_values);
    RUN(test_crossentropy_smoothed_gradcheck);
    RUN(test_crossentropy_smoothed_values);
    RUN(test_crossentropy_long_rows);
    RUN(test_bce_gradcheck);
    RUN(test_bce_values_and_stability);
    return test_summary();
}
