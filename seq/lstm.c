#include "seq/lstm.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "core/activations.h"
#include "core/check.h"
#include "core/gemm.h"
#include "seq/linear.h"

void lstm_forward(float *h, float *c, float *gates, float *xh, const float *x,
                  const float *h_prev, const float *c_prev, const float *W, const float *b, int B,
                  int I, int H) {
    CHECK(B >= 0 && I >= 0 && H > 0, "B %d I %d H %d", B, I, H);
    const int K = I + H;
    // xh = [x, h_prev]
    for (int r = 0; r < B; r++) {
        float *row = xh + (size_t)r * K;
        if (I > 0) memcpy(row, x + (size_t)r * I, (size_t)I * sizeof(float));
        if (h_prev)
            memcpy(row + I, h_prev + (size_t)r * H, (size_t)H * sizeof(float));
        else
            memset(row + I, 0, (size_t)H * sizeof(float));
    }
    lstm_forward_xh(h, c, gates, xh, K, c_prev, W, b, B, I, H);
}

// The cell after the gate GEMM: gates (B, 4H) hold the pre-activations on entry; peep
// (3H, NULL: none) the peephole weights (seq/lstm.h).
static void lstm_cell(float *h, float *c, float *gates, const float *c_prev, const float *peep,
                      int B, int H) {
    const size_t G = (size_t)4 * H;
    for (int r = 0; r < B; r++) {
        // The gate pointers share one row, so only the other rows are restrict.
        float *gi = gates + (size_t)r * G;
        float *gf = gi + H;
        float *gg = gi + 2 * H;
        float *go = gi + 3 * H;
        float *restrict cr = c + (size_t)r * H;
        float *restrict hr = h + (size_t)r * H;
        const float *restrict cp = c_prev ? c_prev + (size_t)r * H : NULL;
        // Peepholes from c_prev into i and f (c_prev = 0 adds nothing).
        if (peep && cp) {
            for (int j = 0; j < H; j++) gi[j] += peep[j] * cp[j];
            for (int j = 0; j < H; j++) gf[j] += peep[H + j] * cp[j];
        }
        // Vectorised sigmoid and tanh (core/activations.h); i and f are adjacent. The gates
        // only scale and add, so the sigmoid's absolute accuracy (2e-7) is what counts.
        for (int j = 0; j < 2 * H; j++) gi[j] = sigmoid_tanh_fast(gi[j]);
        for (int j = 0; j < H; j++) gg[j] = tanh_fast(gg[j]);
        if (cp)
            for (int j = 0; j < H; j++) cr[j] = gf[j] * cp[j] + gi[j] * gg[j];
        else
            for (int j = 0; j < H; j++) cr[j] = gi[j] * gg[j];
        // The output gate's peephole reads the new cell.
        if (peep)
            for (int j = 0; j < H; j++) go[j] += peep[2 * H + j] * cr[j];
        for (int j = 0; j < H; j++) go[j] = sigmoid_tanh_fast(go[j]);
        for (int j = 0; j < H; j++) hr[j] = go[j] * tanh_fast(cr[j]);
    }
}

void lstm_forward_xh(float *h, float *c, float *gates, const float *xh, int ldxh,
                     const float *c_prev, const float *W, const float *b, int B, int I, int H) {
    CHECK(B >= 0 && I >= 0 && H > 0 && ldxh >= I + H, "B %d I %d H %d ldxh %d", B, I, H, ldxh);
    const int K = I + H;
    const size_t G = (size_t)4 * H;
    // pre = b broadcast, then pre += xh @ W^T: all four gates in one GEMM.
    for (int r = 0; r < B; r++) memcpy(gates + (size_t)r * G, b, G * sizeof(float));
    gemm(false, true, B, (int)G, K, 1.0f, xh, ldxh, W, K, 1.0f, gates, (int)G);
    lstm_cell(h, c, gates, c_prev, NULL, B, H);
}

void lstm_forward_packed(float *h, float *c, float *gates, const float *xh, int ldxh,
                         const float *c_prev, const PackedMatrix *Wt, const float *b,
                         const float *peep, int B, int I, int H) {
    CHECK(B >= 0 && I >= 0 && H > 0 && ldxh >= I + H, "B %d I %d H %d ldxh %d", B, I, H, ldxh);
    CHECK(Wt->K == I + H && Wt->N == 4 * H, "packed (%d, %d) for I %d H %d", Wt->K, Wt->N, I, H);
    const size_t G = (size_t)4 * H;
    for (int r = 0; r < B; r++) memcpy(gates + (size_t)r * G, b, G * sizeof(float));
    gemm_packed(B, (int)G, xh, ldxh, Wt, 1.0f, gates, (int)G);
    lstm_cell(h, c, gates, c_prev, peep, B, H);
}

void lstm_forward_packed_from(float *h, float *c, float *gates, const float *pre0,
                              const float *xh, int ldxh, const float *c_prev,
                              const PackedMatrix *Wt, const float *peep, int B, int I, int H) {
    CHECK(B >= 0 && I >= 0 && H > 0 && ldxh >= I + H, "B %d I %d H %d ldxh %d", B, I, H, ldxh);
    CHECK(Wt->K == I + H && Wt->N == 4 * H, "packed (%d, %d) for I %d H %d", Wt->K, Wt->N, I, H);
    memcpy(gates, pre0, (size_t)B * 4 * H * sizeof(float));
    gemm_packed(B, 4 * H, xh, ldxh, Wt, 1.0f, gates, 4 * H);
    lstm_cell(h, c, gates, c_prev, peep, B, H);
}

void lstm_forward_packed_first(float *h, float *c, float *gates, const float *xh, int ldxh,
                               const PackedMatrix *Wt, const float *b, int B, int I, int H) {
    CHECK(B >= 0 && I >= 0 && H > 0 && ldxh >= I + H, "B %d I %d H %d ldxh %d", B, I, H, ldxh);
    CHECK(Wt->K == I + H && Wt->N == 4 * H, "packed (%d, %d) for I %d H %d", Wt->K, Wt->N, I, H);
    const size_t G = (size_t)4 * H;
    for (int r = 0; r < B; r++) memcpy(gates + (size_t)r * G, b, G * sizeof(float));
    gemm_packed_k(B, (int)G, I, xh, ldxh, Wt, 1.0f, gates, (int)G);
    lstm_cell(h, c, gates, NULL, NULL, B, H);
}

// One row of lstm_gates_backward (seq/lstm.h), with c_prev (cp) and dc_prev (dcp).
static void gates_backward_row(float *restrict gi, float *restrict gf, float *restrict gg,
                               float *restrict go, float *restrict dcp, const float *restrict cp,
                               const float *restrict cr, const float *restrict dh,
                               const float *restrict dc, int H) {
    for (int j = 0; j < H; j++) {
        float vi = gi[j], vf = gf[j], vg = gg[j], vo = go[j], tc = tanh_fast(cr[j]);
        float dct = dh[j] * vo * (1.0f - tc * tc) + dc[j];  // all that reaches c
        dcp[j] += dct * vf;
        gi[j] = dct * vg * vi * (1.0f - vi);
        gf[j] = dct * cp[j] * vf * (1.0f - vf);
        gg[j] = dct * vi * (1.0f - vg * vg);
        go[j] = dh[j] * tc * vo * (1.0f - vo);
    }
}

// The same at t = 0, where c_prev = 0 is a constant.
static void gates_backward_row0(float *restrict gi, float *restrict gf, float *restrict gg,
                                float *restrict go, const float *restrict cr,
                                const float *restrict dh, const float *restrict dc, int H) {
    for (int j = 0; j < H; j++) {
        float vi = gi[j], vg = gg[j], vo = go[j], tc = tanh_fast(cr[j]);
        float dct = dh[j] * vo * (1.0f - tc * tc) + dc[j];
        gi[j] = dct * vg * vi * (1.0f - vi);
        gf[j] = 0.0f;
        gg[j] = dct * vi * (1.0f - vg * vg);
        go[j] = dh[j] * tc * vo * (1.0f - vo);
    }
}

// gates_backward_row with peepholes w (3H: into i, f from c_prev, into o from c) and their
// gradient dw. The output gate's pre-activation gradient also reaches c through w_o, and
// i's and f's reach c_prev.
static void gates_backward_row_peep(float *restrict gi, float *restrict gf, float *restrict gg,
                                    float *restrict go, float *restrict dcp,
                                    const float *restrict cp, const float *restrict cr,
                                    const float *restrict dh, const float *restrict dc,
                                    const float *restrict w, float *restrict dw, int H) {
    for (int j = 0; j < H; j++) {
        float vi = gi[j], vf = gf[j], vg = gg[j], vo = go[j], tc = tanh_fast(cr[j]);
        float dpo = dh[j] * tc * vo * (1.0f - vo);
        float dct = dh[j] * vo * (1.0f - tc * tc) + dc[j] + dpo * w[2 * H + j];
        float dpi = dct * vg * vi * (1.0f - vi), dpf = dct * cp[j] * vf * (1.0f - vf);
        dcp[j] += dct * vf + dpi * w[j] + dpf * w[H + j];
        dw[j] += dpi * cp[j];
        dw[H + j] += dpf * cp[j];
        dw[2 * H + j] += dpo * cr[j];
        gi[j] = dpi;
        gf[j] = dpf;
        gg[j] = dct * vi * (1.0f - vg * vg);
        go[j] = dpo;
    }
}

// The same at t = 0, where c_prev = 0 is a constant: only w_o has a gradient.
static void gates_backward_row0_peep(float *restrict gi, float *restrict gf, float *restrict gg,
                                     float *restrict go, const float *restrict cr,
                                     const float *restrict dh, const float *restrict dc,
                                     const float *restrict w, float *restrict dw, int H) {
    for (int j = 0; j < H; j++) {
        float vi = gi[j], vg = gg[j], vo = go[j], tc = tanh_fast(cr[j]);
        float dpo = dh[j] * tc * vo * (1.0f - vo);
        float dct = dh[j] * vo * (1.0f - tc * tc) + dc[j] + dpo * w[2 * H + j];
        dw[2 * H + j] += dpo * cr[j];
        gi[j] = dct * vg * vi * (1.0f - vi);
        gf[j] = 0.0f;
        gg[j] = dct * vi * (1.0f - vg * vg);
        go[j] = dpo;
    }
}

void lstm_gates_backward(float *gates, float *dc_prev, const float *dh, const float *dc,
                         const float *c_prev, const float *c, const float *peep, float *dpeep,
                         float *db, int B, int H) {
    CHECK(!peep == !dpeep, "peepholes need their gradient");
    for (int r = 0; r < B; r++) {
        float *g = gates + (size_t)r * 4 * H;
        size_t o = (size_t)r * H;
        if (peep && c_prev)
            gates_backward_row_peep(g, g + H, g + 2 * H, g + 3 * H, dc_prev + o, c_prev + o,
                                    c + o, dh + o, dc + o, peep, dpeep, H);
        else if (peep)
            gates_backward_row0_peep(g, g + H, g + 2 * H, g + 3 * H, c + o, dh + o, dc + o, peep,
                                     dpeep, H);
        else if (c_prev)
            gates_backward_row(g, g + H, g + 2 * H, g + 3 * H, dc_prev + o, c_prev + o, c + o,
                               dh + o, dc + o, H);
        else
            gates_backward_row0(g, g + H, g + 2 * H, g + 3 * H, c + o, dh + o, dc + o, H);
    }
    linear_bias_backward(db, gates, B, 4 * H);
}

// The hard sigmoid's derivative from its value v: 0.2 inside the ramp, 0 where clipped.
static inline float hard_sigmoid_grad(float v) { return v > 0.0f && v < 1.0f ? 0.2f : 0.0f; }

// gates_backward_row with hard-sigmoid gates i, f, o; cp NULL: c_prev = 0 (dcp unused).
static void gates_backward_row_hard(float *restrict gi, float *restrict gf, float *restrict gg,
                                    float *restrict go, float *restrict dcp,
                                    const float *restrict cp, const float *restrict cr,
                                    const float *restrict dh, const float *restrict dc, int H) {
    for (int j = 0; j < H; j++) {
        float vi = gi[j], vf = gf[j], vg = gg[j], vo = go[j], tc = tanh_fast(cr[j]);
        float dct = dh[j] * vo * (1.0f - tc * tc) + dc[j];
        if (cp) dcp[j] += dct * vf;
        gi[j] = dct * vg * hard_sigmoid_grad(vi);
        gf[j] = cp ? dct * cp[j] * hard_sigmoid_grad(vf) : 0.0f;
        gg[j] = dct * vi * (1.0f - vg * vg);
        go[j] = dh[j] * tc * hard_sigmoid_grad(vo);
    }
}

void lstm_gates_backward_hard(float *gates, float *dc_prev, const float *dh, const float *dc,
                              const float *c_prev, const float *c, float *db, int B, int H) {
    for (int r = 0; r < B; r++) {
        float *g = gates + (size_t)r * 4 * H;
        size_t o = (size_t)r * H;
        gates_backward_row_hard(g, g + H, g + 2 * H, g + 3 * H, c_prev ? dc_prev + o : NULL,
                                c_prev ? c_prev + o : NULL, c + o, dh + o, dc + o, H);
    }
    linear_bias_backward(db, gates, B, 4 * H);
}

int lstm_scratch_floats(int B, int I, int H) {
    // dgates (B, 4H) then dxh (B, I + H)
    return B * 4 * H + B * (I + H);
}

// lstm_backward with the input-gradient product through W (gemm) or Wn (W packed,
// gemm_packed) when Wn is not NULL.
// One row's gate pre-activation gradients, out of place (di, df, dg, dout: H each), from
// d/dh and d/dc (dcr NULL: 0) and the forward's gates and cells (cp NULL: c_prev = 0);
// dcp (NULL: not wanted) += the cell gradient's share through the forget gate. The dg slot
// holds tanh(c), and di the total gradient reaching c, until the gate gradients overwrite
// them.
static void gates_grad_row(float *restrict di, float *restrict df, float *restrict dg,
                           float *restrict dout, float *restrict dcp, const float *restrict gi,
                           const float *restrict gf, const float *restrict gg,
                           const float *restrict go, const float *restrict cr,
                           const float *restrict cp, const float *restrict dhr,
                           const float *restrict dcr, int H) {
    for (int j = 0; j < H; j++) dg[j] = tanh_fast(cr[j]);
    for (int j = 0; j < H; j++) {
        float tc = dg[j];
        float dct = dhr[j] * go[j] * (1.0f - tc * tc) + (dcr ? dcr[j] : 0.0f);
        dout[j] = dhr[j] * tc * go[j] * (1.0f - go[j]);
        di[j] = dct;
    }
    if (cp)
        for (int j = 0; j < H; j++) df[j] = di[j] * cp[j] * gf[j] * (1.0f - gf[j]);
    else
        for (int j = 0; j < H; j++) df[j] = 0.0f;
    if (dcp)
        for (int j = 0; j < H; j++) dcp[j] += di[j] * gf[j];
    for (int j = 0; j < H; j++) {
        float dct = di[j];
        dg[j] = dct * gi[j] * (1.0f - gg[j] * gg[j]);
        di[j] = dct * gg[j] * gi[j] * (1.0f - gi[j]);
    }
}

// dxh (B, I + H) split and added: its first I columns to dx (B, I), the rest to dh_prev
// (B, H); either may be NULL.
static void add_input_grads(float *dx, float *dh_prev, const float *dxh, int B, int I, int H) {
    const int K = I + H;
    for (int r = 0; r < B; r++) {
        const float *restrict d = dxh + (size_t)r * K;
        if (dx) {
            float *restrict o = dx + (size_t)r * I;
            for (int k = 0; k < I; k++) o[k] += d[k];
        }
        if (dh_prev) {
            float *restrict o = dh_prev + (size_t)r * H;
            for (int k = 0; k < H; k++) o[k] += d[I + k];
        }
    }
}

static void lstm_backward_impl(float *dx, float *dh_prev, float *dc_prev, float *dW, float *db,
                               const float *dh, const float *dc, const float *gates,
                               const float *xh, const float *c_prev, const float *c,
                               const float *W, const PackedMatrix *Wn, float *scratch, int B,
                               int I, int H) {
    CHECK(B >= 0 && I >= 0 && H > 0, "B %d I %d H %d", B, I, H);
    const int K = I + H;
    const size_t G = (size_t)4 * H;
    float *dgates = scratch;               // (B, 4H), pre-activation gradients
    float *dxh = scratch + (size_t)B * G;  // (B, I + H)
    for (int r = 0; r < B; r++) {
        const float *gi = gates + (size_t)r * G;
        float *di = dgates + (size_t)r * G;
        size_t o = (size_t)r * H;
        gates_grad_row(di, di + H, di + 2 * H, di + 3 * H, dc_prev ? dc_prev + o : NULL, gi,
                       gi + H, gi + 2 * H, gi + 3 * H, c + o, c_prev ? c_prev + o : NULL, dh + o,
                       dc ? dc + o : NULL, H);
    }
    linear_bias_backward(db, dgates, B, (int)G);  // db += the batch's sum of dgates
    // dW (4H, K) += dgates^T (4H, B) @ xh (B, K), unless the caller batches it over steps
    if (dW) gemm(true, false, (int)G, K, B, 1.0f, dgates, (int)G, xh, K, 1.0f, dW, K);
    // dxh (B, K) = dgates (B, 4H) @ W (4H, K), split into dx and dh_prev
    if (dx || dh_prev) {
        if (Wn)
            gemm_packed(B, K, dgates, (int)G, Wn, 0.0f, dxh, K);
        else
            gemm(false, false, B, K, (int)G, 1.0f, dgates, (int)G, W, K, 0.0f, dxh, K);
        add_input_grads(dx, dh_prev, dxh, B, I, H);
    }
}

void lstm_backward(float *dx, float *dh_prev, float *dc_prev, float *dW, float *db,
                   const float *dh, const float *dc, const float *gates, const float *xh,
                   const float *c_prev, const float *c, const float *W, float *scratch, int B,
                   int I, int H) {
    lstm_backward_impl(dx, dh_prev, dc_prev, dW, db, dh, dc, gates, xh, c_prev, c, W, NULL,
                       scratch, B, I, H);
}

void lstm_backward_packed(float *dx, float *dh_prev, float *dc_prev, float *db,
                          const float *dh, const float *dc, const float *gates, const float *xh,
                          const float *c_prev, const float *c, const PackedMatrix *Wn,
                          float *scratch, int B, int I, int H) {
    CHECK(Wn->K == 4 * H && Wn->N == I + H, "packed (%d, %d) for I %d H %d", Wn->K, Wn->N, I, H);
    lstm_backward_impl(dx, dh_prev, dc_prev, NULL, db, dh, dc, gates, xh, c_prev, c, NULL, Wn,
                       scratch, B, I, H);
}

static double sigmoid_d(double x) { return 1.0 / (1.0 + exp(-x)); }

void lstm_forward_ref(float *h, float *c, float *gates, const float *x, const float *h_prev,
                      const float *c_prev, const float *W, const float *b, const float *peep,
                      int B, int I, int H) {
    const int K = I + H;
    for (int r = 0; r < B; r++) {
        for (int j = 0; j < H; j++) {
            double pre[4];
            for (int q = 0; q < 4; q++) {
                const float *w = W + (size_t)(q * H + j) * K;
                double s = b[q * H + j];
                for (int k = 0; k < I; k++) s += (double)w[k] * x[(size_t)r * I + k];
                if (h_prev)
                    for (int k = 0; k < H; k++) s += (double)w[I + k] * h_prev[(size_t)r * H + k];
                pre[q] = s;
            }
            double cp = c_prev ? c_prev[(size_t)r * H + j] : 0.0;
            double wi = peep ? peep[j] : 0.0, wf = peep ? peep[H + j] : 0.0;
            double wo = peep ? peep[2 * H + j] : 0.0;
            double ig = sigmoid_d(pre[0] + wi * cp), fg = sigmoid_d(pre[1] + wf * cp);
            double gg = tanh(pre[2]);
            double cn = fg * cp + ig * gg;
            double og = sigmoid_d(pre[3] + wo * cn);
            c[(size_t)r * H + j] = (float)cn;
            h[(size_t)r * H + j] = (float)(og * tanh(cn));
            float *gr = gates + (size_t)r * 4 * H;
            gr[j] = (float)ig;
            gr[H + j] = (float)fg;
            gr[2 * H + j] = (float)gg;
            gr[3 * H + j] = (float)og;
        }
    }
}
