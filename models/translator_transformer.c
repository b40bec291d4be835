// translator_transformer.c: the Transformer translator (see translator_transformer.h).
#include "models/translator_transformer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "models/sat_beam.h"
#include "seq/beam.h"
#include "seq/embedding.h"
#include "seq/linear.h"
#include "seq/loss.h"
#include "seq/positions.h"
#include "seq/transformer_decode.h"
#include "seq/vocab.h"

int tt_positions(const TtConfig *c) {
    if (c->positions > 0) return c->positions;
    return c->S > c->max_len + 1 ? c->S : c->max_len + 1;
}

static TransformerConfig block_config_(const TtConfig *c, int layers) {
    TransformerConfig t =
        transformer_config_default(c->d_model, c->heads, c->d_ff, layers, tt_positions(c));
    t.dropout = c->dropout;
    t.post_ln = c->post_ln;
    t.final_norm = !c->post_ln;
    return t;
}

TransformerConfig tt_encoder_config(const TtConfig *c) { return block_config_(c, c->enc_layers); }
TransformerConfig tt_decoder_config(const TtConfig *c) { return block_config_(c, c->dec_layers); }

int tt_config_check(const TtConfig *c, Error *err) {
    if (c->Vs < 1 || c->V <= VOCAB_NSPECIAL || c->S < 1 || c->max_len < 1)
        return error_set(err, "sizes: source vocabulary %d, target %d, source %d, target words %d",
                         c->Vs, c->V, c->S, c->max_len);
    const TransformerConfig te = tt_encoder_config(c), td = tt_decoder_config(c);
    if (transformer_config_check(&te, err)) return error_prefix(err, "the encoder");
    if (transformer_config_check(&td, err)) return error_prefix(err, "the decoder");
    if (transformer_check_length(&te, c->S, err)) return error_prefix(err, "the source");
    if (transformer_check_length(&td, c->max_len + 1, err)) return error_prefix(err, "the target");
    if (!(c->label_smoothing >= 0.0f && c->label_smoothing < 1.0f))
        return error_set(err, "label smoothing %g is outside [0, 1)", (double)c->label_smoothing);
    if (c->map_layer < -1 || c->map_layer >= c->dec_layers)
        return error_set(err, "map layer %d: the decoder has layers 0 to %d", c->map_layer,
                         c->dec_layers - 1);
    return 0;
}

void tt_params_layout(Block *b, TtParams *p, const TtConfig *c) {
    memset(p, 0, sizeof *p);
    const int d = c->d_model;
    const TransformerConfig te = tt_encoder_config(c), td = tt_decoder_config(c);
    block_add(b, &p->src_embed, "src.embed", 2, c->Vs, d);
    tf_encoder_params_layout(b, &p->enc, &te, "encoder");
    block_add(b, &p->tgt_embed, "tgt.embed", 2, c->V, d);
    tf_decoder_params_layout(b, &p->dec, &td, "decoder");
    block_add(b, &p->out_w, "out.weight", 2, c->V, d);
    block_add(b, &p->out_b, "out.bias", 1, c->V);
}

static void acts_layout_(TtModel *m) {
    const TtConfig *c = &m->cfg;
    TtActs *a = &m->a;
    Block *k = &m->acts_block;
    const int B = m->B, S = c->S, T = c->max_len + 1, d = c->d_model, V = c->V;
    block_add(k, &a->pos, "pos", 2, tt_positions(c), d);
    block_add(k, &a->semb, "semb", 3, B, S, d);
    block_add(k, &a->x, "x", 3, B, S, d);
    block_add(k, &a->dx, "dx", 3, B, S, d);
    block_add(k, &a->dsemb, "dsemb", 3, B, S, d);
    tf_encoder_acts_layout(k, &a->enc, &m->tce, B, S, "enc");
    block_add(k, &a->dmem, "dmem", 3, B, S, d);
    block_add(k, &a->temb, "temb", 3, B, T, d);
    block_add(k, &a->y, "y", 3, B, T, d);
    block_add(k, &a->dy, "dy", 3, B, T, d);
    block_add(k, &a->dtemb, "dtemb", 3, B, T, d);
    tf_decoder_acts_layout(k, &a->dec, &m->tcd, B, T, S, "dec");
    block_add(k, &a->dh, "dh", 3, B, T, d);
    block_add(k, &a->logits, "logits", 2, B * T, V);
    block_add(k, &a->probs, "probs", 2, B * T, V);
    block_add(k, &a->dlogits, "dlogits", 2, B * T, V);
    block_add(k, &a->losses, "losses", 1, B * T);
    block_alloc(k);
    positions_sinusoid_fill(a->pos, tt_positions(c), d);
    a->src = xcalloc((size_t)B * S + B + (size_t)2 * B * T + B, sizeof(int));
    a->src_len = a->src + (size_t)B * S;
    a->tok = a->src_len + B;
    a->target = a->tok + (size_t)B * T;
    a->steps = a->target + (size_t)B * T;
}

// PyTorch's nn.Linear initialisation: uniform in +-1/sqrt(fan_in).
static void uniform_(float *x, size_t n, float k, Rng *rng) {
    for (size_t i = 0; i < n; i++) x[i] = k * (2.0f * rng_uniform(rng) - 1.0f);
}

void tt_init(TtModel *m, const TtConfig *c, int B, Rng *rng) {
    memset(m, 0, sizeof *m);
    Error err = {0};
    CHECK(tt_config_check(c, &err) == 0, "translator config: %s", err.msg);
    CHECK(B >= 1, "batch %d", B);
    m->cfg = *c;
    m->B = B;
    m->tce = tt_encoder_config(c);
    m->tcd = tt_decoder_config(c);
    tt_params_layout(&m->params, &m->p, c);
    tt_params_layout(&m->grads, &m->g, c);
    block_alloc(&m->params);
    block_alloc(&m->grads);
    const int d = c->d_model;
    const float sd = 1.0f / sqrtf((float)d);  // scaled by sqrt(d): unit size beside positions
    for (size_t i = 0; i < (size_t)c->Vs * d; i++) m->p.src_embed[i] = sd * rng_normal(rng);
    tf_encoder_params_init(&m->p.enc, &m->tce, rng);
    for (size_t i = 0; i < (size_t)c->V * d; i++) m->p.tgt_embed[i] = sd * rng_normal(rng);
    tf_decoder_params_init(&m->p.dec, &m->tcd, rng);
    uniform_(m->p.out_w, (size_t)c->V * d, sd, rng);
    acts_layout_(m);
}

void tt_free(TtModel *m) {
    block_free(&m->params);
    block_free(&m->grads);
    block_free(&m->acts_block);
    block_free(&m->decode.block);  // tt_decode's workspace
    free(m->decode.ints);
    free(m->a.src);
    memset(m, 0, sizeof *m);
}

// ---------------------------------------------------------------------------------------
// Forward and backward

// Copies the sources of B rows into a->src (B, Sb), Sb = the longest; returns Sb.
static int pack_sources_(TtActs *a, const int *src, const int *src_len, int B, int S) {
    int Sb = 1;
    for (int b = 0; b < B; b++) {
        CHECK(src_len[b] >= 1 && src_len[b] <= S, "source length %d of %d", src_len[b], S);
        if (src_len[b] > Sb) Sb = src_len[b];
    }
    for (int b = 0; b < B; b++) {
        a->src_len[b] = src_len[b];
        for (int i = 0; i < Sb; i++)
            a->src[(size_t)b * Sb + i] = i < src_len[b] ? src[(size_t)b * S + i] : VOCAB_PAD;
    }
    return Sb;
}

// The memory (B, Sb, d) of the packed sources.
static const float *encode_(TtModel *m, int B, int Sb, Rng *rng) {
    TtActs *a = &m->a;
    const int d = m->cfg.d_model;
    embedding_forward(a->semb, a->src, m->p.src_embed, B * Sb, d);
    positions_add_forward(a->x, a->semb, a->pos, sqrtf((float)d), B, Sb, d);
    a->enc.B = B, a->enc.T = Sb, a->enc.S = Sb;
    tf_encoder_forward(&a->enc, a->x, a->src_len, &m->p.enc, &m->tce, rng);
    return a->enc.out;
}

double tt_forward(TtModel *m, const int *src, const int *src_len, const int *words,
                  const int *lens, int B, Rng *rng) {
    const TtConfig *c = &m->cfg;
    TtActs *a = &m->a;
    CHECK(B >= 1 && B <= m->B, "batch %d, capacity %d", B, m->B);
    const int d = c->d_model, V = c->V;
    const int Sb = pack_sources_(a, src, src_len, B, c->S);
    const int T =
        transformer_pack_targets(a->tok, a->target, a->steps, words, lens, B, c->max_len);
    m->Bb = B, m->Sb = Sb, m->Tb = T;
    Rng *r = rng && c->dropout > 0.0f ? rng : NULL;
    const float *mem = encode_(m, B, Sb, r);
    embedding_forward(a->temb, a->tok, m->p.tgt_embed, B * T, d);
    positions_add_forward(a->y, a->temb, a->pos, sqrtf((float)d), B, T, d);
    a->dec.B = B, a->dec.T = T, a->dec.S = Sb;
    tf_decoder_forward(&a->dec, a->y, mem, a->steps, a->src_len, &m->p.dec, &m->tcd, r);
    linear_forward(a->logits, a->dec.out, m->p.out_w, m->p.out_b, B * T, d, V);
    m->smoothed = rng && c->label_smoothing > 0.0f;
    const double loss =
        m->smoothed ? crossentropy_smoothed_forward(a->losses, a->probs, a->logits, a->target,
                                                    B * T, V, c->label_smoothing)
                    : crossentropy_forward(a->losses, a->probs, a->logits, a->target, B * T, V);
    return loss / B;
}

void tt_backward(TtModel *m) {
    const TtConfig *c = &m->cfg;
    TtActs *a = &m->a;
    const int B = m->Bb, T = m->Tb, Sb = m->Sb, d = c->d_model, V = c->V;
    const size_t N = (size_t)B * T, NS = (size_t)B * Sb;
    memset(a->dlogits, 0, N * V * sizeof(float));
    if (m->smoothed)
        crossentropy_smoothed_backward(a->dlogits, NULL, a->probs, a->target, (int)N, V,
                                       c->label_smoothing);
    else crossentropy_backward(a->dlogits, NULL, a->probs, a->target, (int)N, V);
    const float inv = 1.0f / (float)B;
    for (size_t i = 0; i < N * V; i++) a->dlogits[i] *= inv;
    memset(a->dh, 0, N * d * sizeof(float));
    linear_backward(a->dh, m->g.out_w, m->g.out_b, a->dlogits, a->dec.out, m->p.out_w, (int)N, d, V);
    memset(a->dy, 0, N * d * sizeof(float));
    memset(a->dmem, 0, NS * d * sizeof(float));
    tf_decoder_backward(a->dy, a->dmem, &m->g.dec, a->dh, &a->dec, a->y, a->enc.out, a->steps,
                        a->src_len, &m->p.dec, &m->tcd);
    memset(a->dtemb, 0, N * d * sizeof(float));
    positions_add_backward(a->dtemb, NULL, a->dy, sqrtf((float)d), B, T, d);
    embedding_backward(m->g.tgt_embed, a->dtemb, a->tok, (int)N, d);
    memset(a->dx, 0, NS * d * sizeof(float));
    tf_encoder_backward(a->dx, &m->g.enc, a->dmem, &a->enc, a->x, a->src_len, &m->p.enc, &m->tce);
    memset(a->dsemb, 0, NS * d * sizeof(float));
    positions_add_backward(a->dsemb, NULL, a->dx, sqrtf((float)d), B, Sb, d);
    embedding_backward(m->g.src_embed, a->dsemb, a->src, (int)NS, d);
}

static int map_layer_(const TtConfig *c) {
    return c->map_layer >= 0 ? c->map_layer : c->dec_layers - 1;
}

const float *tt_attention(const TtModel *m) {
    return transformer_decoder_cross_weights(&m->a.dec, map_layer_(&m->cfg));
}

// ---------------------------------------------------------------------------------------
// Decoding

// beam_search's model: the rows' caches over the sentences' memory.
// beam_search's model: the rows' caches over the sentences' memory, kept in m->decode
// between calls (a fresh state per call spent a tenth of beam decoding on page faults).
typedef struct {
    TtModel *m;
    TtDecodeWork *w;
    int B, t;                  // sentences, steps taken
} DecodeCtx;

static void decode_work_free_(TtDecodeWork *w) {
    block_free(&w->block);
    free(w->ints);
    memset(w, 0, sizeof *w);
}

// m->decode for at least R rows over Sb source positions: the one kept, or a new one.
static TtDecodeWork *decode_work_(TtModel *m, int R, int Sb) {
    TtDecodeWork *w = &m->decode;
    if (w->block.data && w->R >= R && w->Sb == Sb) return w;
    decode_work_free_(w);
    const TtConfig *c = &m->cfg;
    const int d = c->d_model, T = c->max_len + 1;
    w->R = R, w->Sb = Sb;
    Block *k = &w->block;
    tf_decode_layout(k, &w->s, &m->tcd, R, T, Sb, "decode");
    block_add(k, &w->x, "x", 2, R, d);
    block_add(k, &w->h, "h", 2, R, d);
    block_add(k, &w->logits, "logits", 2, R, c->V);
    block_add(k, &w->alpha_hist, "alpha_hist", 3, T, R, Sb);
    block_alloc(k);
    w->ints = xcalloc((size_t)4 * R, sizeof(int));
    w->sent = w->ints, w->sent2 = w->sent + R, w->len = w->sent2 + R;
    w->mem_parent = w->len + R;
    return w;
}

static void decode_ctx_init_(DecodeCtx *x, TtModel *m, int B, int beam, int Sb) {
    memset(x, 0, sizeof *x);
    x->m = m, x->B = B;
    x->w = decode_work_(m, B * beam, Sb);
    memset(x->w->alpha_hist, 0, (size_t)(m->cfg.max_len + 1) * x->w->R * Sb * sizeof(float));
    for (int b = 0; b < B; b++) x->w->sent[b] = b;
    x->w->rows_held = B;  // tf_decode_start's rows
}

static void beam_step_(void *ctx, int n, const int *parent, const int *token, float *logprobs) {
    DecodeCtx *x = ctx;
    TtDecodeWork *w = x->w;
    TtModel *m = x->m;
    const TtConfig *c = &m->cfg;
    const int d = c->d_model, V = c->V;
    CHECK(n >= 1 && n <= w->R && x->t <= c->max_len, "rows %d of %d, step %d", n, w->R, x->t);
    if (x->t == 0)
        for (int r = 0; r < n; r++) CHECK(parent[r] == r, "first step: row %d of %d", r, parent[r]);
    for (int r = 0; r < n; r++) {
        w->sent2[r] = w->sent[parent[r]];
        w->len[r] = m->a.src_len[w->sent2[r]];
        // A row that goes on in the sentence it held keeps its copy of that memory.
        w->mem_parent[r] = r < w->rows_held && w->sent[r] == w->sent2[r] ? r : parent[r];
    }
    if (x->t > 0) tf_decode_gather_split(&w->s, n, parent, w->mem_parent, x->t, &m->tcd);
    w->rows_held = n;
    embedding_forward(w->x, token, m->p.tgt_embed, n, d);
    positions_add_forward(w->x, w->x, m->a.pos + (size_t)x->t * d, sqrtf((float)d), n, 1, d);
    tf_decode_step(w->h, &w->s, w->x, n, x->t, w->len, &m->p.dec, &m->tcd);
    linear_forward(w->logits, w->h, m->p.out_w, m->p.out_b, n, d, V);
    memcpy(w->alpha_hist + (size_t)x->t * w->R * w->Sb, w->s.cross_weights[map_layer_(c)],
           (size_t)n * w->Sb * sizeof(float));
    sat_next_word_logprobs(logprobs, w->logits, n, V);
    for (int r = 0; r < n; r++)
        for (int i = 0; i < VOCAB_NSPECIAL; i++)
            if (i != VOCAB_END) logprobs[(size_t)r * V + i] = -1e9f;
    int *s = w->sent;
    w->sent = w->sent2, w->sent2 = s;
    x->t++;
}

void tt_decode(TtModel *m, const int *src, const int *src_len, int B, int beam,
               float length_alpha, int *out, int *out_len, float *score, float *alpha) {
    const TtConfig *c = &m->cfg;
    const int ML = c->max_len, T = ML + 1, S = c->S;
    CHECK(beam >= 1 && B >= 1 && B <= m->B, "beam %d, batch %d of %d", beam, B, m->B);
    const int Sb = pack_sources_(&m->a, src, src_len, B, S);
    m->Bb = B, m->Sb = Sb;
    const float *mem = encode_(m, B, Sb, NULL);
    DecodeCtx x;
    decode_ctx_init_(&x, m, B, beam, Sb);
    tf_decode_start(&x.w->s, mem, B, &m->p.dec, &m->tcd);
    int *tok = xmalloc((size_t)2 * B * T * sizeof(int)), *rows = tok + (size_t)B * T;
    int *len = xmalloc((size_t)B * sizeof(int));
    float *sc = xmalloc((size_t)B * sizeof(float));
    const BeamConfig bc = {.beam = beam, .max_len = T, .length_alpha = length_alpha,
                           .start_id = VOCAB_START, .end_id = VOCAB_END, .V = c->V};
    beam_search(tok, len, sc, rows, B, &x, beam_step_, &bc);
    if (alpha) memset(alpha, 0, (size_t)T * B * S * sizeof(float));
    for (int b = 0; b < B; b++) {
        // A hypothesis that reached the limit without <end> keeps its first max_len words.
        const int n = len[b] < ML ? len[b] : ML;
        out_len[b] = n;
        memcpy(out + (size_t)b * ML, tok + (size_t)b * T, (size_t)n * sizeof(int));
        if (score) score[b] = sc[b];
        for (int t = 0; alpha && t < n; t++)
            memcpy(alpha + ((size_t)t * B + b) * S,
                   x.w->alpha_hist + ((size_t)t * x.w->R + rows[(size_t)b * T + t]) * Sb,
                   (size_t)Sb * sizeof(float));
    }
    free(tok), free(len), free(sc);
}
