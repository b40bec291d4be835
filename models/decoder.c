// decoder.c: the shared attention LSTM decoder's parameters, initial state and gate (see
// decoder.h).
#include "models/decoder.h"

#include <math.h>
#include <string.h>

#include "core/activations.h"
#include "core/check.h"
#include "core/gemm.h"
#include "seq/embedding.h"
#include "seq/linear.h"
#include "seq/lstm.h"

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
    attn_forward(s->ctx, s->alpha, s->cache, s->prep, s->keys, q, NULL, s->lengths, &p->attn,
                 &c->attn, t, n, c->L);
    decoder_gate_forward(s->beta, s->z, q, s->ctx, p, n, c->H, c->D, c->nb);
}

void decoder_step_forward(const DecoderStep *s, const int *token, const DecoderParams *p,
                          const DecoderConfig *c, int t, int n) {
    const int D = c->D, E = c->E, H = c->H, V = c->V, I = E + D;
    const int after = c->query == DECODER_QUERY_CURRENT;
    if (!after) step_attend_(s, s->h, p, c, t, n);
    embedding_forward(s->emb, token, p->embed, n, E);
    const float *zin = after ? s->zp : s->z;
    for (int r = 0; r < n; r++) {
        memcpy(s->xin + (size_t)r * I, s->emb + (size_t)r * E, (size_t)E * sizeof(float));
        memcpy(s->xin + (size_t)r * I + E, zin + (size_t)r * D, (size_t)D * sizeof(float));
    }
    lstm_forward(s->hn, s->cn, s->gates, s->xh, s->xin, s->h, s->c, p->lstm_W, p->lstm_b, n, I,
                 H);
    if (after) step_attend_(s, s->hn, p, c, t, n);
    memcpy(s->o, s->emb, (size_t)n * E * sizeof(float));
    gemm(false, true, n, E, H, 1.0f, s->hn, H, p->L_h, H, 1.0f, s->o, E);
    gemm(false, true, n, E, D, 1.0f, s->z, D, p->L_z, D, 1.0f, s->o, E);
    linear_forward(s->logits, s->o, p->L_o, p->b_o, n, E, V);
}
