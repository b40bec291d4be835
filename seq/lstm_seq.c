// lstm_seq.c: an unrolled LSTM with variational dropout and lengths (seq/lstm_seq.h).
#include "seq/lstm_seq.h"

#include <math.h>
#include <string.h>

#include "core/activations.h"
#include "core/check.h"
#include "core/gemm.h"
#include "seq/lstm.h"

size_t lstm_seq_cache_floats(int T, int B, int I, int H) {
    return (size_t)T * B * ((size_t)(I + H) + 4 * (size_t)H + H);
}

size_t lstm_seq_scratch_floats(int B, int I, int H) {
    return (size_t)lstm_scratch_floats(B, I, H) + (size_t)B * (6 * (size_t)H + I);
}

void lstm_dropout_mask(float *mask, size_t n, float rate, Rng *rng) {
    CHECK(rate >= 0.0f && rate < 1.0f, "dropout rate %g", rate);
    float keep = 1.0f / (1.0f - rate);
    for (size_t i = 0; i < n; i++) mask[i] = rate > 0.0f && rng_uniform(rng) < rate ? 0.0f : keep;
}

typedef struct {
    float *xh, *gates, *c;
} Views;

static Views views(const float *cache, int T, int B, int I, int H) {
    float *p = (float *)cache;
    Views v;
    v.xh = p;
    v.gates = v.xh + (size_t)T * B * (I + H);
    v.c = v.gates + (size_t)T * B * 4 * H;
    return v;
}

static int active(const int *lengths, int r, int t) { return !lengths || t < lengths[r]; }

void lstm_seq_forward(float *hs, float *cache, const float *x, const float *W, const float *b,
                      const int *lengths, const float *in_mask, const float *rec_mask,
                      int reverse, int T, int B, int I, int H) {
    CHECK(T >= 1 && B >= 1 && I >= 1 && H >= 1, "T %d B %d I %d H %d", T, B, I, H);
    Views v = views(cache, T, B, I, H);
    const int K = I + H;
    for (int s = 0; s < T; s++) {
        int t = reverse ? T - 1 - s : s, tp = reverse ? t + 1 : t - 1;
        const float *h_prev = s ? hs + (size_t)tp * B * H : NULL;
        const float *c_prev = s ? v.c + (size_t)tp * B * H : NULL;
        float *xh = v.xh + (size_t)t * B * K, *g = v.gates + (size_t)t * B * 4 * H;
        float *h = hs + (size_t)t * B * H, *c = v.c + (size_t)t * B * H;
        for (int r = 0; r < B; r++) {
            const float *xr = x + ((size_t)t * B + r) * I;
            float *row = xh + (size_t)r * K;
            for (int k = 0; k < I; k++) row[k] = in_mask ? xr[k] * in_mask[(size_t)r * I + k] : xr[k];
            for (int k = 0; k < H; k++) {
                float hp = h_prev ? h_prev[(size_t)r * H + k] : 0.0f;
                row[I + k] = rec_mask ? hp * rec_mask[(size_t)r * H + k] : hp;
            }
        }
        lstm_forward_xh(h, c, g, xh, K, c_prev, W, b, B, I, H);
        if (!lengths) continue;
        for (int r = 0; r < B; r++) {
            if (active(lengths, r, t)) continue;
            for (int k = 0; k < H; k++) {
                h[(size_t)r * H + k] = h_prev ? h_prev[(size_t)r * H + k] : 0.0f;
                c[(size_t)r * H + k] = c_prev ? c_prev[(size_t)r * H + k] : 0.0f;
            }
        }
    }
}

void lstm_seq_backward(float *dx, float *dW, float *db, const float *dhs, const float *cache,
                       const float *W, const int *lengths, const float *in_mask,
                       const float *rec_mask, int reverse, float *scratch, int T, int B, int I,
                       int H) {
    Views v = views(cache, T, B, I, H);
    const int K = I + H;
    const size_t BH = (size_t)B * H;
    float *dh = scratch, *dc = dh + BH, *dh_next = dc + BH, *dc_next = dh_next + BH;
    float *dhp_raw = dc_next + BH, *dcp = dhp_raw + BH, *dx_raw = dcp + BH;
    float *lstm_scratch = dx_raw + (size_t)B * I;
    memset(dh_next, 0, BH * sizeof(float));
    memset(dc_next, 0, BH * sizeof(float));
    for (int s = T - 1; s >= 0; s--) {
        int t = reverse ? T - 1 - s : s, tp = reverse ? t + 1 : t - 1;
        const float *dht = dhs + (size_t)t * BH;
        for (size_t i = 0; i < BH; i++) dh[i] = dht[i] + dh_next[i], dc[i] = dc_next[i];
        memset(dh_next, 0, BH * sizeof(float));
        memset(dc_next, 0, BH * sizeof(float));
        // Padding steps pass their gradient straight to the previous step.
        if (lengths)
            for (int r = 0; r < B; r++) {
                if (active(lengths, r, t)) continue;
                for (int k = 0; k < H; k++) {
                    size_t i = (size_t)r * H + k;
                    dh_next[i] += dh[i], dc_next[i] += dc[i];
                    dh[i] = dc[i] = 0.0f;
                }
            }
        const float *c_prev = s ? v.c + (size_t)tp * BH : NULL;
        memset(dhp_raw, 0, BH * sizeof(float));
        memset(dcp, 0, BH * sizeof(float));
        memset(dx_raw, 0, (size_t)B * I * sizeof(float));
        lstm_backward(dx_raw, s ? dhp_raw : NULL, s ? dcp : NULL, dW, db, dh, dc,
                      v.gates + (size_t)t * B * 4 * H, v.xh + (size_t)t * B * K, c_prev,
                      v.c + (size_t)t * BH, W, lstm_scratch, B, I, H);
        if (dx) {
            float *dxt = dx + (size_t)t * B * I;
            for (size_t i = 0; i < (size_t)B * I; i++)
                dxt[i] += in_mask ? dx_raw[i] * in_mask[i] : dx_raw[i];
        }
        if (s)
            for (size_t i = 0; i < BH; i++) {
                dh_next[i] += rec_mask ? dhp_raw[i] * rec_mask[i] : dhp_raw[i];
                dc_next[i] += dcp[i];
            }
    }
}

// ---------------------------------------------------------------------------------------
// One mask per gate (Keras's implementation 1). Forward: a step assembles each gate's input
// [x_t * m_q, h_{t-1} * r_q] into the cache and multiplies it by that gate's rows of W (four
// GEMMs of (B, I + H) x (I + H, H)). Backward: a step takes the gate gradients (in place of
// the saved gates), then per gate dh_{t-1} += (dg_q W_q^h) * r_q, dx_t += (dg_q W_q^x) * m_q
// and dW_q += dg_q^T [x_t * m_q, h_{t-1} * r_q] as GEMMs of (B, H) x (H, H), (B, H) x (H, I),
// (H, B) x (B, I) and (H, B) x (B, H): each at most 100^3 multiply-adds for the demo's
// sizes, where OpenBLAS 0.3.21 runs an unpacked kernel, while the step's gate gradients are
// in cache. T 32, B 100, I 32, H 100, one thread, an AVX-512 EPYC at load 14-15: the
// backward 8.4-9.0 ms (min of 50 calls, four rounds) against 9.9-10.7 with the weight
// gradient and dx one GEMM per gate over all T B rows after the steps (which took 4.1 ms
// for the weight gradients alone, against 3.7 for the steps' split ones). Without any masks
// the four gates are one group of 4H columns and the backward keeps the all-steps GEMMs.
//
// Taking the input products (x_t * m_q) W_q^x of all steps in one GEMM before the
// recurrence (the masks are the same at every step) was tried and measured (T 32, B 100,
// I 32, H 100, one thread, OpenBLAS 0.3.21 on an AVX-512 EPYC, load 13-15): 4 GEMMs of
// (3200 x 32) x (32 x 100) took 1.1-1.2 ms against the 0.97 ms that the steps' 32 extra
// columns cost with the steps' products through NT and beta 1; with the steps' products
// as NN on W_q^h transposed and beta 0 (OpenBLAS's unpacked small kernel: 2.4 ms for the
// 128 of them against 4.0 for the (B, I + H) ones) the products took 3.6 ms against 4.0,
// but the whole forward did not gain (5.7-5.9 ms against 5.8-5.9, min of 50 calls, in
// chunks of 2, 4, 8 and 32 steps): the extra pass that adds the two products, over gates
// the input GEMMs wrote earlier, ate it. So the forward keeps the steps' products whole.
//
// Cache: xh (4, T, B, I + H) gate q's input rows [x_t * m_q, h_{t-1} * r_q] (zeros for
// h_{-1}; gate q's rows of all steps contiguous, so that its weight gradient is one GEMM),
// gates (T, B, 4H) post-activation (backward turns them into the gate gradients of every
// step, in place), c (T, B, H).
// Scratch: dh, dc, their next-step parts, dc_prev (B, H) each, and one gate's input or
// recurrent gradient of a step (B, max(I, H)).

size_t lstm_seq_gated_cache_floats(int T, int B, int I, int H) {
    return (size_t)T * B * (4 * (size_t)(I + H) + 4 * (size_t)H + H);
}

size_t lstm_seq_gated_scratch_floats(int T, int B, int I, int H) {
    return (size_t)B * (5 * (size_t)H + (size_t)(I > H ? I : H));
}

static Views gated_views(const float *cache, int T, int B, int I, int H) {
    float *p = (float *)cache;
    Views v;
    v.xh = p;
    v.gates = v.xh + (size_t)4 * T * B * (I + H);
    v.c = v.gates + (size_t)T * B * 4 * H;
    return v;
}

// Gate groups: 4 (one per gate, H columns each) with any mask, else 1 (all 4H columns).
static int gate_groups(const float *in_mask, const float *rec_mask) {
    return in_mask || rec_mask ? 4 : 1;
}

// dst (n rows of width w) += src (n, w) * the mask row of each row: row i uses mask row
// i % rows, at stride mstride (the same mask at every step).
static void add_masked_rows(float *dst, const float *src, const float *mask, size_t mstride,
                            size_t n, int rows, int w) {
    for (size_t i = 0; i < n; i++) {
        const float *restrict sr = src + i * w, *restrict m = mask + (i % rows) * mstride;
        float *restrict d = dst + i * w;
        for (int k = 0; k < w; k++) d[k] += sr[k] * m[k];
    }
}

const char *lstm_gate_act_name(LstmGateAct a) {
    return a == LSTM_GATE_HARD_SIGMOID ? "hard_sigmoid" : "sigmoid";
}

int lstm_gate_act_parse(const char *name, LstmGateAct *a) {
    if (!strcmp(name, "sigmoid")) *a = LSTM_GATE_SIGMOID;
    else if (!strcmp(name, "hard_sigmoid")) *a = LSTM_GATE_HARD_SIGMOID;
    else return -1;
    return 0;
}

// out (n) = max(0, min(1, 0.2 x + 0.5)), Keras's hard_sigmoid; in place allowed.
static void hard_sigmoid_forward(float *out, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float v = 0.2f * x[i] + 0.5f;
        out[i] = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
    }
}

// One row's gate activations in place, gr (4H) pre-activations i, f, g, o.
static void gate_activations(float *gr, LstmGateAct act, int H) {
    void (*gate)(float *, const float *, size_t) =
        act == LSTM_GATE_HARD_SIGMOID ? hard_sigmoid_forward : sigmoid_forward;
    gate(gr, gr, 2 * (size_t)H);  // i, f
    tanh_forward(gr + 2 * H, gr + 2 * H, (size_t)H);
    gate(gr + 3 * H, gr + 3 * H, (size_t)H);
}

void lstm_seq_forward_gated(float *hs, float *cache, const float *x, const float *W,
                            const float *b, const int *lengths, const float *in_mask,
                            const float *rec_mask, int reverse, LstmGateAct act, int T, int B,
                            int I, int H) {
    CHECK(T >= 1 && B >= 1 && I >= 1 && H >= 1, "T %d B %d I %d H %d", T, B, I, H);
    Views v = gated_views(cache, T, B, I, H);
    const int K = I + H, G = 4 * H;
    const size_t TBK = (size_t)T * B * K;
    for (int s = 0; s < T; s++) {
        int t = reverse ? T - 1 - s : s, tp = reverse ? t + 1 : t - 1;
        const float *h_prev = s ? hs + (size_t)tp * B * H : NULL;
        const float *c_prev = s ? v.c + (size_t)tp * B * H : NULL;
        float *g = v.gates + (size_t)t * B * G;
        float *h = hs + (size_t)t * B * H, *c = v.c + (size_t)t * B * H;
        for (int r = 0; r < B; r++) memcpy(g + (size_t)r * G, b, (size_t)G * sizeof(float));
        for (int q = 0; q < 4; q++) {  // gate q's input [x_t * m_q, h_{t-1} * r_q]
            float *xh = v.xh + (size_t)q * TBK + (size_t)t * B * K;
            for (int r = 0; r < B; r++) {
                const float *xr = x + ((size_t)t * B + r) * I;
                const float *im = in_mask ? in_mask + ((size_t)r * 4 + q) * I : NULL;
                const float *rm = rec_mask ? rec_mask + ((size_t)r * 4 + q) * H : NULL;
                float *row = xh + (size_t)r * K;
                for (int k = 0; k < I; k++) row[k] = im ? xr[k] * im[k] : xr[k];
                for (int k = 0; k < H; k++) {
                    float hp = h_prev ? h_prev[(size_t)r * H + k] : 0.0f;
                    row[I + k] = rm ? hp * rm[k] : hp;
                }
            }
            gemm(false, true, B, H, K, 1.0f, xh, K, W + (size_t)q * H * K, K, 1.0f, g + (size_t)q * H, G);
        }
        for (int r = 0; r < B; r++) {
            float *gr = g + (size_t)r * G, *cr = c + (size_t)r * H, *hr = h + (size_t)r * H;
            gate_activations(gr, act, H);
            const float *cp = c_prev ? c_prev + (size_t)r * H : NULL;
            for (int j = 0; j < H; j++) cr[j] = (cp ? gr[H + j] * cp[j] : 0.0f) + gr[j] * gr[2 * H + j];
            tanh_forward(hr, cr, (size_t)H);
            for (int j = 0; j < H; j++) hr[j] *= gr[3 * H + j];
        }
        if (!lengths) continue;
        for (int r = 0; r < B; r++) {
            if (active(lengths, r, t)) continue;
            for (int k = 0; k < H; k++) {
                h[(size_t)r * H + k] = h_prev ? h_prev[(size_t)r * H + k] : 0.0f;
                c[(size_t)r * H + k] = c_prev ? c_prev[(size_t)r * H + k] : 0.0f;
            }
        }
    }
}

// Without masks, after the steps: dW (4H, I + H) += dg^T xh_0 and dx (NULL: not wanted) +=
// dg W^x, one GEMM each over all T B rows from every step's gate gradients dg (T B, 4H).
static void unmasked_weight_grads(float *dx, float *dW, const float *dg, const float *xh,
                                  const float *W, int T, int B, int I, int H) {
    const int K = I + H, G = 4 * H, TB = T * B;
    gemm(true, false, G, K, TB, 1.0f, dg, G, xh, K, 1.0f, dW, K);
    if (dx) gemm(false, false, TB, I, G, 1.0f, dg, G, W, K, 1.0f, dx, I);
}

// One step's share of the four gates' weight gradients, dW_q += dg_q^T [x_t * m_q,
// h_{t-1} * r_q] from the step's gate gradients dg (B, 4H): the input and the recurrent
// columns as two GEMMs each, (H, B) x (B, I) and (H, B) x (B, H), small enough for
// OpenBLAS's unpacked kernel (3.7 ms for T 32, B 100, I 32, H 100 against 4.1 for one GEMM
// per gate over all T B rows, AVX-512, load 14); the recurrent ones skipped at the first
// step (has_prev 0), whose h_{t-1} is zero.
static void gated_step_weight_grads(float *dW, const float *dg, const float *xh, int has_prev,
                                    int t, int T, int B, int I, int H) {
    const int K = I + H, G = 4 * H;
    const size_t TBK = (size_t)T * B * K;
    for (int q = 0; q < 4; q++) {
        const float *xq = xh + (size_t)q * TBK + (size_t)t * B * K, *dgq = dg + (size_t)q * H;
        float *dWq = dW + (size_t)q * H * K;
        gemm(true, false, H, I, B, 1.0f, dgq, G, xq, K, 1.0f, dWq, K);
        if (has_prev) gemm(true, false, H, H, B, 1.0f, dgq, G, xq + I, K, 1.0f, dWq + I, K);
    }
}

// One step's dx_t (B, I) += sum_q (dg_q W_q^x) * m_q (in_mask NULL: no masks) from the
// step's gate gradients dg (B, 4H); part: B I floats.
static void gated_step_dx(float *dx, const float *dg, const float *W, const float *in_mask,
                          float *part, int B, int I, int H) {
    const int K = I + H, G = 4 * H;
    for (int q = 0; q < 4; q++) {
        const float *dgq = dg + (size_t)q * H, *Wq = W + (size_t)q * H * K;
        if (!in_mask) {
            gemm(false, false, B, I, H, 1.0f, dgq, G, Wq, K, 1.0f, dx, I);
            continue;
        }
        gemm(false, false, B, I, H, 1.0f, dgq, G, Wq, K, 0.0f, part, I);
        add_masked_rows(dx, part, in_mask + (size_t)q * I, 4 * (size_t)I, (size_t)B, B, I);
    }
}

void lstm_seq_backward_gated(float *dx, float *dW, float *db, const float *dhs,
                             float *cache, const float *W, const int *lengths,
                             const float *in_mask, const float *rec_mask, int reverse,
                             LstmGateAct act, float *scratch, int T, int B, int I, int H) {
    Views v = gated_views(cache, T, B, I, H);
    const int K = I + H, G = 4 * H, ng = gate_groups(in_mask, rec_mask), N = G / ng;
    const size_t BH = (size_t)B * H;
    float *dh = scratch, *dc = dh + BH, *dh_next = dc + BH, *dc_next = dh_next + BH;
    float *dcp = dc_next + BH, *dg_all = v.gates, *part = dcp + BH;
    memset(dh_next, 0, BH * sizeof(float));
    memset(dc_next, 0, BH * sizeof(float));
    for (int s = T - 1; s >= 0; s--) {
        int t = reverse ? T - 1 - s : s, tp = reverse ? t + 1 : t - 1;
        const float *dht = dhs + (size_t)t * BH;
        for (size_t i = 0; i < BH; i++) dh[i] = dht[i] + dh_next[i], dc[i] = dc_next[i];
        memset(dh_next, 0, BH * sizeof(float));
        memset(dc_next, 0, BH * sizeof(float));
        if (lengths)  // padding steps pass their gradient straight to the previous step
            for (int r = 0; r < B; r++) {
                if (active(lengths, r, t)) continue;
                for (int k = 0; k < H; k++) {
                    size_t i = (size_t)r * H + k;
                    dh_next[i] += dh[i], dc_next[i] += dc[i];
                    dh[i] = dc[i] = 0.0f;
                }
            }
        const float *c_prev = s ? v.c + (size_t)tp * BH : NULL;
        float *dg = dg_all + (size_t)t * B * G;  // the step's gates become their gradients
        memset(dcp, 0, BH * sizeof(float));
        if (act == LSTM_GATE_HARD_SIGMOID)
            lstm_gates_backward_hard(dg, s ? dcp : NULL, dh, dc, c_prev, v.c + (size_t)t * BH, db,
                                     B, H);
        else
            lstm_gates_backward(dg, s ? dcp : NULL, dh, dc, c_prev, v.c + (size_t)t * BH, NULL,
                                NULL, db, B, H);
        if (ng == 4) {
            gated_step_weight_grads(dW, dg, v.xh, s > 0, t, T, B, I, H);
            if (dx) gated_step_dx(dx + (size_t)t * B * I, dg, W, in_mask, part, B, I, H);
        }
        if (!s) continue;
        // dh_{t-1} += sum over groups of (dg_q W_q^h) * r_q
        for (int q = 0; q < ng; q++) {
            const float *dgq = dg + (size_t)q * N, *Wq = W + (size_t)q * N * K + I;
            if (!rec_mask) {
                gemm(false, false, B, H, N, 1.0f, dgq, G, Wq, K, 1.0f, dh_next, H);
                continue;
            }
            gemm(false, false, B, H, N, 1.0f, dgq, G, Wq, K, 0.0f, part, H);
            add_masked_rows(dh_next, part, rec_mask + (size_t)q * H, 4 * (size_t)H, (size_t)B, B, H);
        }
        for (size_t i = 0; i < BH; i++) dc_next[i] += dcp[i];
    }
    if (ng == 1) unmasked_weight_grads(dx, dW, dg_all, v.xh, W, T, B, I, H);
}
