// decoder.c: the shared attention LSTM decoder's parameters, initial state and gate (see
// decoder.h).
#include "models/decoder.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/activations.h"
#include "core/check.h"
#include "core/dims.h"
#include "core/gemm.h"
#include "core/rng.h"
#include "seq/embedding.h"
#include "seq/linear.h"
#include "seq/loss.h"
#include "seq/lstm.h"
#include "seq/vocab.h"

void decoder_params_layout(Block *b, DecoderParams *p, const DecoderConfig *c) {
    memset(p, 0, sizeof *p);
    const int D = c->D, E = c->E, H = c->H, V = c->V, nb = c->nb;
    CHECK(nb == 1 || nb == D, "decoder gate size %d (1 or D = %d)", nb, D);
    block_add(b, &p->W_h0, "init.W_h", 2, H, D);
    block_add(b, &p->b_h0, "init.b_h", 1, H);
    block_add(b, &p->W_c0, "init.W_c", 2, H, D);
    block_add(b, &p->b_c0, "init.b_c", 1, H);
    block_add(b, &p->embed, "embed", 2, V, E);
    block_add(b, &p->lstm_W, "lstm.W", 2, 4 * H, E + D + H);
    block_add(b, &p->lstm_b, "lstm.b", 1, 4 * H);
    attn_params_layout(b, &p->attn, &c->attn, "attn");
    block_add(b, &p->W_beta, "gate.W", 2, nb, H);
    block_add(b, &p->b_beta, "gate.b", 1, nb);
    block_add(b, &p->L_h, "out.L_h", 2, E, H);
    block_add(b, &p->L_z, "out.L_z", 2, E, D);
    block_add(b, &p->L_o, "out.L_o", 2, V, E);
    block_add(b, &p->b_o, "out.b_o", 1, V);
    CHECK(!c->input_feeding || c->query == DECODER_QUERY_CURRENT,
          "input feeding needs query current (the attentional vector of h_{t+1})");
    if (c->input_feeding) block_add(b, &p->W_c, "feed.W_c", 2, D, D + H);
}

static void fill_uniform_(float *x, size_t n, float r, Rng *rng) {
    for (size_t i = 0; i < n; i++) x[i] = (2.0f * rng_uniform(rng) - 1.0f) * r;
}

void decoder_params_init(DecoderParams *p, const DecoderConfig *c, Rng *rng) {
    const int D = c->D, E = c->E, H = c->H, V = c->V, nb = c->nb;
    CHECK(p->W_h0 && p->L_o, "decoder_params_init before block_alloc");
    fill_uniform_(p->W_h0, (size_t)H * D, 1.0f / sqrtf((float)D), rng);
    fill_uniform_(p->W_c0, (size_t)H * D, 1.0f / sqrtf((float)D), rng);
    fill_uniform_(p->embed, (size_t)V * E, 0.1f, rng);
    fill_uniform_(p->lstm_W, (size_t)4 * H * (E + D + H), 1.0f / sqrtf((float)(E + D + H)), rng);
    for (int j = H; j < 2 * H; j++) p->lstm_b[j] = 1.0f;  // forget gate bias
    attn_params_init(&p->attn, &c->attn, rng);
    fill_uniform_(p->W_beta, (size_t)nb * H, 1.0f / sqrtf((float)H), rng);
    fill_uniform_(p->L_h, (size_t)E * H, 1.0f / sqrtf((float)H), rng);
    fill_uniform_(p->L_z, (size_t)E * D, 1.0f / sqrtf((float)D), rng);
    fill_uniform_(p->L_o, (size_t)V * E, 1.0f / sqrtf((float)E), rng);
    if (c->input_feeding) fill_uniform_(p->W_c, (size_t)D * (D + H), 1.0f / sqrtf((float)(D + H)), rng);
}

// Input feeding: zf (n, D) = tanh(z (n, D) W_c[:, :D]^T + h (n, H) W_c[:, D:]^T).
static void feed_forward_(float *zf, const float *z, const float *h, const float *W_c, int n,
                          int D, int H) {
    gemm(false, true, n, D, D, 1.0f, z, D, W_c, D + H, 0.0f, zf, D);
    gemm(false, true, n, D, H, 1.0f, h, H, W_c + D, D + H, 1.0f, zf, D);
    for (size_t i = 0; i < (size_t)n * D; i++) zf[i] = tanhf(zf[i]);
}

void decoder_mean_annotations(float *out, const float *annot, const int *lengths, int B, int L,
                              int D) {
    for (int b = 0; b < B; b++) {
        const int n = lengths ? lengths[b] : L;
        CHECK(n >= 1 && n <= L, "decoder: row %d has length %d, not in [1, %d]", b, n, L);
        float *o = out + (size_t)b * D;
        memset(o, 0, (size_t)D * sizeof(float));
        for (int l = 0; l < n; l++) {
            const float *r = annot + ((size_t)b * L + l) * D;
            for (int d = 0; d < D; d++) o[d] += r[d];
        }
        for (int d = 0; d < D; d++) o[d] *= 1.0f / (float)n;
    }
}

// tanh_fast (core/activations.h), which vectorises, in place (tanh_forward's arguments may
// not alias).
static void tanh_inplace_(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = tanh_fast(x[i]);
}

void decoder_initial_state(float *h0, float *c0, const float *mean_a, const DecoderParams *p,
                           int B, int D, int H) {
    linear_forward(h0, mean_a, p->W_h0, p->b_h0, B, D, H);
    linear_forward(c0, mean_a, p->W_c0, p->b_c0, B, D, H);
    tanh_inplace_(h0, (size_t)B * H);
    tanh_inplace_(c0, (size_t)B * H);
}

void decoder_gate_forward(float *beta, float *z, const float *h, const float *ctx,
                          const DecoderParams *p, int B, int H, int D, int nb) {
    linear_forward(beta, h, p->W_beta, p->b_beta, B, H, nb);
    for (int i = 0; i < B * nb; i++) beta[i] = sigmoidf_(beta[i]);
    for (int b = 0; b < B; b++) {
        const float *cr = ctx + (size_t)b * D;
        const float *br = beta + (size_t)b * nb;
        float *zr = z + (size_t)b * D;
        if (nb == 1)
            for (int d = 0; d < D; d++) zr[d] = br[0] * cr[d];
        else
            for (int d = 0; d < D; d++) zr[d] = br[d] * cr[d];
    }
}

// Attention and the gate z for rows 0..n-1 with queries q (n, H).
static void step_attend_(const DecoderStep *s, const float *q, const DecoderParams *p,
                         const DecoderConfig *c, int t, int n) {
    attn_forward_shared(s->ctx, s->alpha, s->cache, s->prep, s->keys, s->src,
                        s->src ? s->n_src : n, q, NULL, s->lengths, &p->attn, &c->attn, t, n,
                        c->L);
    decoder_gate_forward(s->beta, s->z, q, s->ctx, p, n, c->H, c->D, c->nb);
}

void decoder_pack_lstm(PackedMatrix *Wt, const DecoderParams *p, const DecoderConfig *c) {
    const int K = c->E + c->D + c->H;
    packed_alloc(Wt, K, 4 * c->H);
    packed_pack(Wt, true, p->lstm_W, K);
}

void decoder_step_forward(const DecoderStep *s, const int *token, const DecoderParams *p,
                          const DecoderConfig *c, int t, int n) {
    const int D = c->D, E = c->E, H = c->H, V = c->V, I = E + D;
    const int after = c->query == DECODER_QUERY_CURRENT;
    if (!after) step_attend_(s, s->h, p, c, t, n);
    embedding_forward(s->emb, token, p->embed, n, E);
    const float *zin = after ? s->zp : s->z;
    if (s->lstm_Wt) {  // xh = [emb, z, h] written in place, then the packed product
        const int K = I + H;
        for (int r = 0; r < n; r++) {
            float *row = s->xh + (size_t)r * K;
            memcpy(row, s->emb + (size_t)r * E, (size_t)E * sizeof(float));
            memcpy(row + E, zin + (size_t)r * D, (size_t)D * sizeof(float));
            memcpy(row + I, s->h + (size_t)r * H, (size_t)H * sizeof(float));
        }
        lstm_forward_packed(s->hn, s->cn, s->gates, s->xh, K, s->c, s->lstm_Wt, p->lstm_b, NULL,
                            n, I, H);
    } else {
        for (int r = 0; r < n; r++) {
            memcpy(s->xin + (size_t)r * I, s->emb + (size_t)r * E, (size_t)E * sizeof(float));
            memcpy(s->xin + (size_t)r * I + E, zin + (size_t)r * D, (size_t)D * sizeof(float));
        }
        lstm_forward(s->hn, s->cn, s->gates, s->xh, s->xin, s->h, s->c, p->lstm_W, p->lstm_b, n,
                     I, H);
    }
    if (after) step_attend_(s, s->hn, p, c, t, n);
    if (c->input_feeding) {
        feed_forward_(s->feed, s->z, s->hn, p->W_c, n, D, H);
        memcpy(s->z, s->feed, (size_t)n * D * sizeof(float));
    }
    memcpy(s->o, s->emb, (size_t)n * E * sizeof(float));
    gemm(false, true, n, E, H, 1.0f, s->hn, H, p->L_h, H, 1.0f, s->o, E);
    gemm(false, true, n, E, D, 1.0f, s->z, D, p->L_z, D, 1.0f, s->o, E);
    linear_forward(s->logits, s->o, p->L_o, p->b_o, n, E, V);
}

// ---------------------------------------------------------------------------------------
// Activations

void decoder_acts_layout(Block *k, DecoderActs *a, const DecoderConfig *c, int T, int B) {
    memset(k, 0, sizeof *k);
    const int L = c->L, D = c->D, E = c->E, H = c->H, V = c->V, nb = c->nb, I = E + D;
    a->T = T;
    a->B = B;
    // The attention's keys (B, L, prep floats per position) and its per-step cache (T, B,
    // cache floats per image), each at least one float. Shaped, never narrowed: the sizes
    // are size_t products (an (int) of B L A once wrapped past 2^31 into a short buffer);
    // the models' size checks (models/sat.h sat_check_sizes) refuse what passes DIMS_MAX
    // before anything is allocated.
    const size_t prep1 = attn_prep_floats(&c->attn, 1, 1), cache1 = attn_step_cache_floats(&c->attn, 1, L);
    CHECK(prep1 <= 2 * (size_t)c->attn.A && cache1 <= (size_t)DIMS_MAX, "attention sizes");
    CHECK(attn_step_cache_floats(&c->attn, B, L) == (size_t)B * cache1, "step cache not per image");
    block_add(k, &a->annot, "annot", 3, B, L, D);
    block_add(k, &a->mean_a, "mean_a", 2, B, D);
    if (prep1) block_add(k, &a->prep, "prep", 3, B, L, (int)prep1);
    else block_add(k, &a->prep, "prep", 1, 1);
    block_add(k, &a->ctx, "ctx", 3, T, B, D);
    block_add(k, &a->alpha, "alpha", 3, T, B, L);
    block_add(k, &a->acache, "acache", 3, T, B, cache1 ? (int)cache1 : 1);
    block_add(k, &a->beta, "beta", 3, T, B, nb);
    block_add(k, &a->z, "z", 3, T, B, D);
    if (c->input_feeding) {
        block_add(k, &a->zf, "zf", 3, T, B, D);
        block_add(k, &a->dzf, "dzf", 2, B, D);
    }
    block_add(k, &a->xh, "xh", 3, T, B, I + H);
    block_add(k, &a->gates, "gates", 3, T, B, 4 * H);
    block_add(k, &a->hs, "hs", 3, T + 1, B, H);
    block_add(k, &a->cs, "cs", 3, T + 1, B, H);
    // Without dropout the deep output reads h itself: no copy, no mask.
    if (c->dropout > 0.0f) {
        block_add(k, &a->hd, "hd", 3, T, B, H);
        block_add(k, &a->dmask, "dmask", 3, T, B, H);
    } else {
        block_add(k, &a->hd, "hd", 1, 1);
        block_add(k, &a->dmask, "dmask", 1, 1);
    }
    block_add(k, &a->o, "o", 3, T, B, E);
    block_add(k, &a->probs, "probs", 3, T, B, V);
    block_add(k, &a->losses, "losses", 2, T, B);
    block_add(k, &a->dannot, "dannot", 3, B, L, D);
    if (prep1) block_add(k, &a->dprep, "dprep", 3, B, L, (int)prep1);
    else block_add(k, &a->dprep, "dprep", 1, 1);
    block_add(k, &a->dhs, "dhs", 3, T + 1, B, H);
    block_add(k, &a->dcs, "dcs", 3, 2, B, H);  // rows alternate by step (t & 1)
    block_add(k, &a->dz, "dz", 3, T, B, D);
    block_add(k, &a->dx, "dx", 2, B, I);
    block_add(k, &a->dctx, "dctx", 2, B, D);
    block_add(k, &a->dalpha, "dalpha", 2, B, L);
    block_add(k, &a->dbeta, "dbeta", 2, B, nb);
    block_add(k, &a->dhd, "dhd", 3, c->dropout > 0.0f ? T : 1, B, H);
    block_add(k, &a->do_, "do", 3, T, B, E);
    block_add(k, &a->dlogits, "dlogits", 3, T, B, V);
    block_add(k, &a->zeros, "zeros", 2, B, D);
    block_add(k, &a->lstm_scratch, "lstm_scratch", 1, lstm_scratch_floats(B, I, H));
    block_add(k, &a->reward, "reward", 1, B);
    block_add(k, &a->dstoch, "dstoch", 2, B, L);
}

void decoder_acts_bind(DecoderActs *a) {
    const int T = a->T, B = a->B;
    CHECK(a->o && a->do_, "decoder_acts_bind before block_alloc");
    // Shared memory: the embeddings are written into o, which the deep output then adds
    // to; their gradient accumulates into do_ once the output layer's backward is done.
    a->emb = a->o;
    a->demb = a->do_;
    int *ints = xcalloc((size_t)4 * T * B + B + 2 * T + 1, sizeof(int));
    a->in_tok = ints;
    a->target = ints + (size_t)T * B;
    a->sample = ints + (size_t)2 * T * B;
    a->steps = ints + (size_t)4 * T * B;
    a->active = a->steps + B;
    a->off = a->active + T;
    a->row_rng = xcalloc((size_t)B, sizeof(Rng));
}

void decoder_acts_release(DecoderActs *a) {
    free(a->in_tok);
    free(a->row_rng);
    a->in_tok = NULL;
    a->row_rng = NULL;
}

// ---------------------------------------------------------------------------------------
// Training pass (rows packed by step, decoder_srow / decoder_hrow)

// Row b's annotation positions: its length, or L without lengths.
static int row_positions_(const Decoder *m, int b) {
    return m->lengths ? m->lengths[b] : m->cfg.L;
}

// The per-step activations of a forward are packed by step: step t's rows 0..active[t]-1
// are rows off[t] .. off[t] + active[t] - 1 (srow_); the states h_t, c_t (and their
// gradients) follow h_0's B rows (hrow_: h_0 at row 0, h_{t+1} at B + off[t]).
// Step t's attention with query q (B, H): alpha_t, ctx_t (a sampled annotation when
// sampling), beta_t and z_t = beta_t ctx_t.
// Rows 0..n-1 of the step (n = active[t]).
static void attend_forward_(const Decoder *m, int t, const float *q, int B, int n, int sample) {
    const DecoderConfig *c = &m->cfg;
    DecoderActs *a = m->a;
    const DecoderParams *p = m->p;
    const int L = c->L, D = c->D, H = c->H, nb = c->nb;
    const size_t cache = attn_step_cache_floats(&c->attn, B, L);
    const size_t r0 = decoder_srow(a, t);
    float *ctx = a->ctx + r0 * D;
    float *alpha = a->alpha + r0 * L;
    attn_forward(ctx, alpha, a->acache + t * cache, a->prep, a->annot, q, NULL, m->lengths,
                 &p->attn, &c->attn, t, n, L);
    for (int b = 0; b < n; b++) {
        int s = -1;
        if (sample) {
            s = rng_categorical(&a->row_rng[b], alpha + (size_t)b * L, L);
            memcpy(ctx + (size_t)b * D, a->annot + ((size_t)b * L + s) * D, (size_t)D * sizeof(float));
        }
        a->sample[r0 + b] = s;
    }
    decoder_gate_forward(a->beta + r0 * nb, a->z + r0 * D, q, ctx, p, n, H, D, nb);
}

// The recurrence: each step's attention and LSTM over its active rows.
void decoder_forward_steps(const Decoder *m, int sample) {
    const int B = m->B;
    const DecoderConfig *c = &m->cfg;
    DecoderActs *a = m->a;
    const DecoderParams *p = m->p;
    const int D = c->D, E = c->E, H = c->H, I = E + D;
    const int after = c->query == DECODER_QUERY_CURRENT;
    for (int t = 0; t < m->T; t++) {
        const int n = a->active[t];
        const float *h = a->hs + decoder_hrow(a, t, B) * H;
        float *hn = a->hs + decoder_hrow(a, t + 1, B) * H;
        const float *z = a->z + decoder_srow(a, t) * D;
        float *xh = a->xh + decoder_srow(a, t) * (I + H);
        // query previous: attend with h_t, feed z_t; current: feed z_{t-1}, attend with h_{t+1}
        // (step t's rows are the first rows of step t - 1's)
        if (!after) attend_forward_(m, t, h, B, n, sample);
        const float *fed = c->input_feeding ? a->zf : a->z;  // what step t - 1 passes on
        const float *zin = !after ? z : t > 0 ? fed + decoder_srow(a, t - 1) * D : a->zeros;
        const float *emb = a->emb + decoder_srow(a, t) * E;
        for (int b = 0; b < n; b++) {  // xh = [emb, z, h]
            float *row = xh + (size_t)b * (I + H);
            memcpy(row, emb + (size_t)b * E, (size_t)E * sizeof(float));
            memcpy(row + E, zin + (size_t)b * D, (size_t)D * sizeof(float));
            memcpy(row + I, h + (size_t)b * H, (size_t)H * sizeof(float));
        }
        float *cn = a->cs + decoder_hrow(a, t + 1, B) * H, *gates = a->gates + decoder_srow(a, t) * 4 * H;
        const float *cp = a->cs + decoder_hrow(a, t, B) * H;
        if (m->pack_Wt)
            lstm_forward_packed(hn, cn, gates, xh, I + H, cp, m->pack_Wt, p->lstm_b, NULL, n, I,
                                H);
        else
            lstm_forward_xh(hn, cn, gates, xh, I + H, cp, p->lstm_W, p->lstm_b, n, I, H);
        if (after) attend_forward_(m, t, hn, B, n, sample);
        if (c->input_feeding)
            feed_forward_(a->zf + decoder_srow(a, t) * D, a->z + decoder_srow(a, t) * D, hn,
                          p->W_c, n, D, H);
    }
}

// Dropout on h, then the deep output over all steps' rows at once; returns the summed
// cross-entropy.
double decoder_output_forward(const Decoder *m, int train) {
    const int B = m->B;
    const DecoderConfig *c = &m->cfg;
    DecoderActs *a = m->a;
    const DecoderParams *p = m->p;
    const int D = c->D, E = c->E, H = c->H, V = c->V;
    const int TB = a->off[m->T];  // the rows of all steps
    const size_t TBH = (size_t)TB * H;
    const float *h1 = a->hs + (size_t)B * H;
    if (c->dropout > 0.0f) {
        if (train) {
            for (size_t i = 0; i < TBH; i++) a->hd[i] = h1[i] * a->dmask[i];  // draw_row_streams_
        } else {
            for (size_t i = 0; i < TBH; i++) a->dmask[i] = 1.0f;
            memcpy(a->hd, h1, TBH * sizeof(float));
        }
    }
    const float *hd = c->dropout > 0.0f ? a->hd : h1;
    // o = emb (already there) + hd L_h^T + z L_z^T (input feeding: zf in z's place)
    gemm(false, true, TB, E, H, 1.0f, hd, H, p->L_h, H, 1.0f, a->o, E);
    gemm(false, true, TB, E, D, 1.0f, c->input_feeding ? a->zf : a->z, D, p->L_z, D, 1.0f, a->o, E);
    float *logits = a->dlogits;  // used as logits here; backward overwrites it
    linear_forward(logits, a->o, p->L_o, p->b_o, TB, E, V);
    a->smoothing = train ? c->label_smoothing : 0.0f;
    return crossentropy_smoothed_forward(a->losses, a->probs, logits, a->target, TB, V,
                                         a->smoothing);
}

// The doubly stochastic regulariser over each caption's own steps (lambda included).
double decoder_doubly_stochastic(const Decoder *m) {
    const int B = m->B;
    const DecoderActs *a = m->a;
    const int L = m->cfg.L;
    double ds = 0.0;
    for (int b = 0; b < B; b++)
        for (int l = 0; l < row_positions_(m, b); l++) {
            double s = 0.0;
            for (int t = 0; t < a->steps[b]; t++) s += a->alpha[(decoder_srow(a, t) + b) * L + l];
            ds += (1.0 - s) * (1.0 - s);
        }
    return ds * m->cfg.lambda;
}

// Backward of attend_forward_ for step t: from dz_t (complete) to dq (B, H) (accumulated),
// the attention's and the gate's parameters, and the annotations (a->dannot, a->dprep).
// Rows 0..n-1 (the step's active rows, as in the forward).
// The gate's backward at step t for the n rows still running, z = beta ctx with
// beta = sigmoid(W_beta q + b_beta) (a scalar or a D-vector per row): d/dctx into acts.dctx,
// d/dbeta's pre-activation into acts.dbeta, then W_beta's and b_beta's gradients and
// dq += the gate's input gradient.
static void gate_backward_(const Decoder *m, int t, int n, const float *q, float *dq) {
    const DecoderConfig *c = &m->cfg;
    DecoderActs *a = m->a;
    const int D = c->D, nb = c->nb;
    const size_t r0 = decoder_srow(a, t);
    const float *ctx = a->ctx + r0 * D, *beta = a->beta + r0 * nb, *dz = a->dz + r0 * D;
    for (int b = 0; b < n; b++) {
        const float *cr = ctx + (size_t)b * D, *zr = dz + (size_t)b * D;
        const float *br = beta + (size_t)b * nb;
        float *dcr = a->dctx + (size_t)b * D, *dbr = a->dbeta + (size_t)b * nb;
        if (nb == 1) {
            float s = 0.0f;
            for (int d = 0; d < D; d++) {
                s += zr[d] * cr[d];
                dcr[d] = zr[d] * br[0];
            }
            dbr[0] = s * br[0] * (1.0f - br[0]);
        } else {
            for (int d = 0; d < D; d++) {
                dcr[d] = zr[d] * br[d];
                dbr[d] = zr[d] * cr[d] * br[d] * (1.0f - br[d]);
            }
        }
    }
    linear_backward(dq, m->g->W_beta, m->g->b_beta, a->dbeta, q, m->p->W_beta, n, c->H, nb);
}

// d/dalpha at step t into acts.dalpha for the n rows still running: the doubly stochastic
// term's, plus for hard attention (sample) REINFORCE's on the sampled location, with the
// advantage reward - base, and the entropy bonus's; zero for rows whose caption has ended.
static void alpha_grad_(const Decoder *m, int t, int n, float base, int sample) {
    const DecoderConfig *c = &m->cfg;
    DecoderActs *a = m->a;
    const int L = c->L;
    const float invB = 1.0f / (float)m->B;
    const size_t r0 = decoder_srow(a, t);
    const float *alpha = a->alpha + r0 * L;
    for (int b = 0; b < n; b++) {
        float *dar = a->dalpha + (size_t)b * L;
        if (t >= a->steps[b]) {
            memset(dar, 0, (size_t)L * sizeof(float));
            continue;
        }
        memcpy(dar, a->dstoch + (size_t)b * L, (size_t)L * sizeof(float));
        if (sample) {
            const float *al = alpha + (size_t)b * L;
            int s = a->sample[r0 + b];
            float adv = a->reward[b] - base;
            dar[s] += -adv / fmaxf(al[s], 1e-30f) * invB;
            for (int l = 0; l < L; l++)
                if (al[l] > 0) dar[l] += c->entropy_weight * (logf(al[l]) + 1.0f) * invB;
        }
    }
}

// The attention's backward at step t (query q, its gradient dq): the gate's, alpha's, then
// the context's into the annotations (with features they are data and get none). A hard
// step's context is the sampled annotation itself: its gradient goes there, none through
// alpha's scores.
static void attend_backward_(const Decoder *m, int t, int n, const float *q, float *dq, float base,
                             int sample) {
    const DecoderConfig *c = &m->cfg;
    DecoderActs *a = m->a;
    const int B = m->B, L = c->L, D = c->D;
    const size_t cache = attn_step_cache_floats(&c->attn, B, L);
    const size_t r0 = decoder_srow(a, t);
    gate_backward_(m, t, n, q, dq);
    alpha_grad_(m, t, n, base, sample);
    float *dannot = m->annot_grad ? a->dannot : NULL;
    if (sample && dannot) {
        for (int b = 0; b < n; b++) {
            float *dst = a->dannot + ((size_t)b * L + a->sample[r0 + b]) * D;
            const float *src = a->dctx + (size_t)b * D;
            for (int d = 0; d < D; d++) dst[d] += src[d];
        }
    }
    attn_backward(dannot, a->dprep, dq, &m->g->attn, sample ? a->zeros : a->dctx, a->dalpha,
                  a->acache + t * cache, a->prep, a->annot, q, NULL, m->lengths, &m->p->attn,
                  &c->attn, t, n, L);
}

// Zeroes the gradients backward_decoder_ accumulates into.
static void zero_decoder_grads_(const Decoder *m) {
    const DecoderConfig *c = &m->cfg;
    DecoderActs *a = m->a;
    const int B = m->B, T = m->T, TB = a->off[T];
    const int L = c->L, D = c->D, H = c->H;
    const size_t prepn = attn_prep_floats(&c->attn, B, L);
    memset(a->dlogits, 0, (size_t)TB * c->V * sizeof(float));
    if (m->annot_grad) memset(a->dannot, 0, (size_t)B * L * D * sizeof(float));
    if (prepn) memset(a->dprep, 0, prepn * sizeof(float));
    memset(a->dhs, 0, (size_t)(B + TB) * H * sizeof(float));
    memset(a->dcs + (size_t)(T & 1) * B * H, 0, (size_t)B * H * sizeof(float));  // dc_T
    memset(a->dz, 0, (size_t)TB * D * sizeof(float));
    memset(a->do_, 0, (size_t)TB * c->E * sizeof(float));
    memset(a->zeros, 0, (size_t)B * D * sizeof(float));
}

// The output layer, for the rows of all steps at once: from the cross-entropy (each row
// counts 1/B) to do_, dz and the gradients of h's and z's projections, and into dh_{t+1}.
static void backward_output_(const Decoder *m) {
    const DecoderConfig *c = &m->cfg;
    DecoderActs *a = m->a;
    const DecoderParams *p = m->p;
    DecoderParams *g = m->g;
    const int B = m->B, TB = a->off[m->T];
    const int D = c->D, E = c->E, H = c->H, V = c->V;
    const float invB = 1.0f / (float)B;
    for (int i = 0; i < TB; i++) a->losses[i] = invB;  // reuse as dlosses
    crossentropy_smoothed_backward(a->dlogits, a->losses, a->probs, a->target, TB, V,
                                   a->smoothing);
    // logits = o L_o^T + b_o
    linear_backward(a->do_, g->L_o, g->b_o, a->dlogits, a->o, p->L_o, TB, E, V);
    // o = emb + hd L_h^T + z L_z^T. demb is do_ itself: the embedding gradient starts as
    // do_ and takes the LSTM input gradients below (do_ is not read after these GEMMs).
    // dh_{t+1} += dhd * dropout mask; without dropout straight into dh (zeros until now).
    float *dh1 = a->dhs + (size_t)B * H;
    if (c->dropout > 0.0f) {
        gemm(false, false, TB, H, E, 1.0f, a->do_, E, p->L_h, H, 0.0f, a->dhd, H);
        for (size_t i = 0; i < (size_t)TB * H; i++) dh1[i] += a->dhd[i] * a->dmask[i];
    } else {
        gemm(false, false, TB, H, E, 1.0f, a->do_, E, p->L_h, H, 1.0f, dh1, H);
    }
    const float *hd = c->dropout > 0.0f ? a->hd : a->hs + (size_t)B * H;
    gemm(true, false, E, H, TB, 1.0f, a->do_, E, hd, H, 1.0f, g->L_h, H);
    // input feeding: dz holds d/dzf until feed_backward_ turns step t's into d/dz_t
    gemm(false, false, TB, D, E, 1.0f, a->do_, E, p->L_z, D, 0.0f, a->dz, D);
    gemm(true, false, E, D, TB, 1.0f, a->do_, E, c->input_feeding ? a->zf : a->z, D, 1.0f,
         g->L_z, D);
}

// The doubly stochastic term's gradient, -2 lambda (1 - sum_u alpha_u) / B, does not
// depend on t (the sum runs over the row's whole caption): computed once per (b, l).
static void doubly_stochastic_grad_(const Decoder *m) {
    DecoderActs *a = m->a;
    const int B = m->B, L = m->cfg.L;
    const float invB = 1.0f / (float)B;
    for (int b = 0; b < B; b++)
        for (int l = 0; l < L; l++) {
            if (l >= row_positions_(m, b)) {  // padding: not in the term
                a->dstoch[(size_t)b * L + l] = 0.0f;
                continue;
            }
            double s = 0.0;
            for (int u = 0; u < a->steps[b]; u++) s += a->alpha[(decoder_srow(a, u) + b) * L + l];
            a->dstoch[(size_t)b * L + l] = (float)(-2.0 * m->cfg.lambda * (1.0 - s)) * invB;
        }
}

// The LSTM of step t (its n active rows): dh_t, dc_t from dh_{t+1}, dc_{t+1}; its gate
// gradients stay in step t's gates slot; its input's gradient goes to the embedding's
// and to the context's (dz of the step that fed it).
static void backward_lstm_step_(const Decoder *m, int t, int n) {
    const DecoderConfig *c = &m->cfg;
    DecoderActs *a = m->a;
    const DecoderParams *p = m->p;
    DecoderParams *g = m->g;
    const int B = m->B, D = c->D, E = c->E, H = c->H, I = E + D;
    const int after = c->query == DECODER_QUERY_CURRENT;
    memset(a->dx, 0, (size_t)n * I * sizeof(float));
    float *dc_prev = a->dcs + (size_t)(t & 1) * B * H;
    memset(dc_prev, 0, (size_t)B * H * sizeof(float));
    float *dh_prev = a->dhs + decoder_hrow(a, t, B) * H;
    const float *dh = a->dhs + decoder_hrow(a, t + 1, B) * H;
    const float *dc = a->dcs + (size_t)((t + 1) & 1) * B * H;
    const float *gates = a->gates + decoder_srow(a, t) * 4 * H, *xh = a->xh + decoder_srow(a, t) * (I + H);
    const float *cp = a->cs + decoder_hrow(a, t, B) * H, *cn = a->cs + decoder_hrow(a, t + 1, B) * H;
    if (m->pack_Wn)
        lstm_backward_packed(a->dx, dh_prev, dc_prev, g->lstm_b, dh, dc, gates, xh, cp, cn,
                             m->pack_Wn, a->lstm_scratch, n, I, H);
    else
        lstm_backward(a->dx, dh_prev, dc_prev, NULL, g->lstm_b, dh, dc, gates, xh, cp, cn,
                      p->lstm_W, a->lstm_scratch, n, I, H);
    // Step t's gates are not read again: their slot keeps its gate gradients for the
    // one weight-gradient GEMM over all steps after the loop.
    memcpy(a->gates + decoder_srow(a, t) * 4 * H, a->lstm_scratch, (size_t)n * 4 * H * sizeof(float));
    float *demb = a->demb + decoder_srow(a, t) * E;
    float *dzin = !after ? a->dz + decoder_srow(a, t) * D : t > 0 ? a->dz + decoder_srow(a, t - 1) * D : NULL;
    for (int b = 0; b < n; b++) {
        const float *dxr = a->dx + (size_t)b * I;
        for (int e = 0; e < E; e++) demb[(size_t)b * E + e] += dxr[e];
        if (dzin)
            for (int d = 0; d < D; d++) dzin[(size_t)b * D + d] += dxr[E + d];
    }
}

// h0 = tanh(W_h0 mean + b), c0 likewise: their weights' gradients, and the mean
// annotation's, spread over the L annotations (dannot NULL: features, none wanted).
static void backward_initial_state_(const Decoder *m, float *dannot) {
    const DecoderConfig *c = &m->cfg;
    DecoderActs *a = m->a;
    const DecoderParams *p = m->p;
    DecoderParams *g = m->g;
    const int B = m->B, L = c->L, D = c->D, H = c->H;
    // gates (T, B, 4H) are spent: scratch for dh0 and dc0. dc_0 is dcs row 0.
    float *dh0 = a->gates, *dc0 = a->gates + (size_t)B * H;
    for (int i = 0; i < B * H; i++) {
        float hv = a->hs[i], cv = a->cs[i];
        dh0[i] = a->dhs[i] * (1.0f - hv * hv);
        dc0[i] = a->dcs[i] * (1.0f - cv * cv);
    }
    float *dmean = dannot ? a->dctx : NULL;  // (B, D)
    if (dmean) memset(dmean, 0, (size_t)B * D * sizeof(float));
    linear_backward(dmean, g->W_h0, g->b_h0, dh0, a->mean_a, p->W_h0, B, D, H);
    linear_backward(dmean, g->W_c0, g->b_c0, dc0, a->mean_a, p->W_c0, B, D, H);
    for (int b = 0; dannot && b < B; b++) {
        const int nl = row_positions_(m, b);
        for (int l = 0; l < nl; l++) {
            float *dr = dannot + ((size_t)b * L + l) * D;
            const float *mr = dmean + (size_t)b * D;
            for (int d = 0; d < D; d++) dr[d] += mr[d] * (1.0f / (float)nl);
        }
    }
}


// Input feeding's backward at step t (n rows), zf = tanh(W_c [z; q]): step t's dz holds
// d/dzf (complete: the output's and step t + 1's LSTM input's); it becomes d/dz, and
// dq (n, H) and W_c's gradient take their parts.
static void feed_backward_(const Decoder *m, int t, int n, const float *q, float *dq) {
    const DecoderConfig *c = &m->cfg;
    DecoderActs *a = m->a;
    const int D = c->D, H = c->H;
    const size_t r0 = decoder_srow(a, t);
    const float *zf = a->zf + r0 * D, *z = a->z + r0 * D;
    float *dz = a->dz + r0 * D, *dpre = a->dzf;
    for (size_t i = 0; i < (size_t)n * D; i++) dpre[i] = dz[i] * (1.0f - zf[i] * zf[i]);
    float *dW = m->g->W_c;
    const float *W = m->p->W_c;
    gemm(true, false, D, D, n, 1.0f, dpre, D, z, D, 1.0f, dW, D + H);
    gemm(true, false, D, H, n, 1.0f, dpre, D, q, H, 1.0f, dW + D, D + H);
    gemm(false, false, n, H, D, 1.0f, dpre, D, W + D, D + H, 1.0f, dq, H);
    gemm(false, false, n, D, D, 1.0f, dpre, D, W, D + H, 0.0f, dz, D);
}

void decoder_backward(const Decoder *m, float base, int sample) {
    const DecoderConfig *c = &m->cfg;
    DecoderActs *a = m->a;
    DecoderParams *g = m->g;
    const int B = m->B, T = m->T, TB = a->off[T];  // TB: the rows of all steps
    const int L = c->L, I = c->E + c->D, H = c->H;
    zero_decoder_grads_(m);
    backward_output_(m);
    doubly_stochastic_grad_(m);
    const int after = c->query == DECODER_QUERY_CURRENT;
    for (int t = T - 1; t >= 0; t--) {
        // query previous: z_t fed step t's LSTM, whose h_t queried; current: the LSTM of
        // step t read z_{t-1}, and h_{t+1} queried (its gradient is whole once the
        // attention's part is in, before the LSTM step's backward).
        const int n = a->active[t];
        if (c->input_feeding)
            feed_backward_(m, t, n, a->hs + decoder_hrow(a, t + 1, B) * H,
                           a->dhs + decoder_hrow(a, t + 1, B) * H);
        if (after) attend_backward_(m, t, n, a->hs + decoder_hrow(a, t + 1, B) * H,
                                    a->dhs + decoder_hrow(a, t + 1, B) * H, base, sample);
        backward_lstm_step_(m, t, n);
        if (!after) attend_backward_(m, t, n, a->hs + decoder_hrow(a, t, B) * H,
                                     a->dhs + decoder_hrow(a, t, B) * H, base, sample);
    }
    // dW_lstm (4H, I + H) += dgates^T @ xh over the rows of all steps at once.
    gemm(true, false, 4 * H, I + H, TB, 1.0f, a->gates, 4 * H, a->xh, I + H, 1.0f, g->lstm_W,
         I + H);
    embedding_backward(g->embed, a->demb, a->in_tok, TB, c->E);
    float *dannot = m->annot_grad ? a->dannot : NULL;  // features: no gradient wanted
    attn_prepare_backward(dannot, &g->attn, a->dprep, a->annot, &m->p->attn, &c->attn, B, L);
    backward_initial_state_(m, dannot);
}

int decoder_pack_rows(DecoderActs *a, const int *words, const int *lens, int B, int ML) {
    int T = 0;
    for (int b = 0; b < B; b++) {
        CHECK(lens[b] >= 0 && lens[b] <= ML, "target length %d of at most %d", lens[b], ML);
        a->steps[b] = lens[b] + 1;
        if (a->steps[b] > T) T = a->steps[b];
    }
    a->off[0] = 0;
    for (int t = 0; t < T; t++) {
        int n = 0;
        for (int b = 0; b < B; b++)
            if (a->steps[b] > t) n = b + 1;
        a->active[t] = n;
        a->off[t + 1] = a->off[t] + n;
    }
    for (int t = 0; t < T; t++)
        for (int b = 0; b < a->active[t]; b++) {
            int n = lens[b];
            size_t r = decoder_srow(a, t) + b;
            a->in_tok[r] = t == 0 ? VOCAB_START : (t - 1 < n ? words[b * ML + t - 1] : VOCAB_PAD);
            a->target[r] = t < n ? words[b * ML + t] : (t == n ? VOCAB_END : -1);
        }
    return T;
}
