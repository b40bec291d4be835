#include "models/sat_transformer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/dims.h"
#include "models/sat_beam.h"
#include "seq/beam.h"
#include "seq/embedding.h"
#include "seq/linear.h"
#include "seq/loss.h"
#include "seq/positions.h"
#include "seq/vocab.h"

int sat_tf_grid(int L) {
    int g = 1;
    while (g * g < L) g++;
    return g;
}

// ---------------------------------------------------------------------------------------
// Parameters

void sat_tf_params_layout(Block *b, SatTfParams *p, const SatConfig *c) {
    memset(p, 0, sizeof *p);
    const int d = c->tf.d_model, D = sat_D(c), V = c->V;
    if (c->feat_L == 0) cnn_register(&p->cnn, b, "enc", &c->cnn);
    block_add(b, &p->proj_w, "tf.proj.weight", 2, d, D);
    block_add(b, &p->proj_b, "tf.proj.bias", 1, d);
    if (c->tf.enc_layers > 0) {
        const TransformerConfig tce = sat_tf_encoder_config(c);
        tf_encoder_params_layout(b, &p->enc, &tce, "tf.encoder");
    }
    block_add(b, &p->embed, "tf.embed", 2, V, d);
    const TransformerConfig tc = sat_tf_decoder_config(c);
    tf_decoder_params_layout(b, &p->dec, &tc, "tf.decoder");
    block_add(b, &p->out_w, "tf.out.weight", 2, V, d);
    block_add(b, &p->out_b, "tf.out.bias", 1, V);
}

// PyTorch's nn.Linear initialisation: weight and bias uniform in +-1/sqrt(fan_in).
static void linear_init_(float *w, float *b, int out, int in, Rng *rng) {
    const float k = 1.0f / sqrtf((float)in);
    for (size_t i = 0; i < (size_t)out * in; i++) w[i] = k * (2.0f * rng_uniform(rng) - 1.0f);
    if (b)
        for (int i = 0; i < out; i++) b[i] = k * (2.0f * rng_uniform(rng) - 1.0f);
}

void sat_tf_init(SatTfModel *m, const SatConfig *cfg, Rng *rng) {
    memset(m, 0, sizeof *m);
    CHECK(cfg->decoder == SAT_DECODER_TRANSFORMER, "not a Transformer configuration");
    m->cfg = *cfg;
    m->map_head = -1;
    const SatConfig *c = &m->cfg;
    m->tc = sat_tf_decoder_config(c);
    m->tce = sat_tf_encoder_config(c);
    sat_tf_params_layout(&m->params, &m->p, c);
    sat_tf_params_layout(&m->grads, &m->g, c);
    sat_tf_params_layout(&m->adam_m, &m->m, c);
    sat_tf_params_layout(&m->adam_v, &m->v, c);
    block_alloc(&m->params);
    block_alloc(&m->grads);
    block_alloc(&m->adam_m);
    block_alloc(&m->adam_v);
    SatTfParams *p = &m->p;
    const int d = c->tf.d_model, D = sat_D(c), V = c->V;
    if (c->feat_L == 0) cnn_init(&p->cnn, rng);
    linear_init_(p->proj_w, p->proj_b, d, D, rng);
    if (c->tf.enc_layers > 0) tf_encoder_params_init(&p->enc, &m->tce, rng);
    // Embeddings N(0, 1/d): scaled by sqrt(d) in the forward, unit size beside the positions.
    const float sd = 1.0f / sqrtf((float)d);
    for (size_t i = 0; i < (size_t)V * d; i++) p->embed[i] = sd * rng_normal(rng);
    tf_decoder_params_init(&p->dec, &m->tc, rng);
    linear_init_(p->out_w, NULL, V, d, rng);
}

void sat_tf_replica_init(SatTfModel *r, const SatTfModel *m) {
    memset(r, 0, sizeof *r);
    r->cfg = m->cfg, r->tc = m->tc, r->tce = m->tce;
    r->p = m->p;
    r->params = m->params;  // the descriptor: the same data, never freed by r
    r->replica = 1;
    r->map_head = m->map_head;
    sat_tf_params_layout(&r->grads, &r->g, &r->cfg);
    block_alloc(&r->grads);
}

int sat_tf_check_sizes(const SatConfig *c, int B, Error *err) {
    const int64_t T = c->max_len + 1, L = sat_L(c), D = sat_D(c), d = c->tf.d_model, V = c->V;
    const DimTerm Bt = {B, "--batch"}, Tt = {T, "positions (--max-len + 1)"},
                  Lt = {L, "annotation positions"}, Dt = {D, "annotation size"}, dt = {d, "--d-model"},
                  Vt = {V, "vocabulary words"};
    DimTerm annot[] = {Bt, Lt, Dt}, mem[] = {Bt, Lt, dt}, words[] = {Bt, Tt, Vt}, emb[] = {Vt, dt};
    if (dims_check(err, "the annotations", annot, DIMS_LEN(annot)) ||
        dims_check(err, "the memory", mem, DIMS_LEN(mem)) ||
        dims_check(err, "the word scores", words, DIMS_LEN(words)) ||
        dims_check(err, "the embeddings", emb, DIMS_LEN(emb)))
        return -1;
    const TransformerConfig tc = sat_tf_decoder_config(c), tce = sat_tf_encoder_config(c);
    if (transformer_check_sizes(&tc, B, (int)T, (int)L, err)) return error_prefix(err, "the decoder");
    if (c->tf.enc_layers > 0 && transformer_check_sizes(&tce, B, (int)L, (int)L, err))
        return error_prefix(err, "the encoder");
    if (c->feat_L == 0 && cnn_check_sizes(&c->cnn, c->image_size, CNN_GROUP, "--image-size", err))
        return -1;
    return 0;
}

int sat_tf_check_decode_sizes(const SatConfig *c, int B, int beam, const char *beam_flag, Error *err) {
    const int64_t TS = c->max_len + 1, L = sat_L(c), d = c->tf.d_model, V = c->V;
    const int64_t P = TS > L ? TS : L;
    const DimTerm Bt = {B, "--batch"}, Kt = {beam, beam_flag}, Lt = {L, "annotation positions"},
                  Pt = {P, "positions or annotation positions, the more"}, dt = {d, "--d-model"};
    DimTerm cache[] = {Bt, Kt, Pt, dt}, words[] = {Bt, Kt, {V, "vocabulary words"}},
            hist[] = {{TS, "positions (--max-len + 1)"}, Bt, Kt, Lt};
    if (dims_check(err, "the beam rows' key/value caches", cache, DIMS_LEN(cache)) ||
        dims_check(err, "the beam rows' word scores", words, DIMS_LEN(words)) ||
        dims_check(err, "the beam rows' attention history", hist, DIMS_LEN(hist)))
        return -1;
    return 0;
}

// ---------------------------------------------------------------------------------------
// Activations

static void free_acts_(SatTfModel *m) {
    if (!m->acts_block.data) return;
    block_free(&m->acts_block);
    free(m->a.tok);
    if (m->cfg.feat_L == 0) cnn_workspace_free(&m->cnn_ws);
    memset(&m->a, 0, sizeof m->a);
}

void sat_tf_alloc_acts(SatTfModel *m, int B) {
    const SatConfig *c = &m->cfg;
    SatTfActs *a = &m->a;
    Block *k = &m->acts_block;
    free_acts_(m);
    memset(k, 0, sizeof *k);
    const int T = c->max_len + 1, L = sat_L(c), D = sat_D(c), d = c->tf.d_model, V = c->V;
    const int G = sat_tf_grid(L);
    a->B = B, a->T = T;
    block_add(k, &a->annot, "annot", 3, B, L, D);
    block_add(k, &a->dannot, "dannot", 3, B, L, D);
    block_add(k, &a->mem0, "mem0", 3, B, L, d);
    block_add(k, &a->dmem0, "dmem0", 3, B, L, d);
    block_add(k, &a->dmem, "dmem", 3, B, L, d);
    if (c->tf.enc_layers > 0) tf_encoder_acts_layout(k, &a->enc, &m->tce, B, L, "enc");
    block_add(k, &a->emb, "emb", 3, B, T, d);
    block_add(k, &a->demb, "demb", 3, B, T, d);
    block_add(k, &a->x, "x", 3, B, T, d);
    block_add(k, &a->dx, "dx", 3, B, T, d);
    tf_decoder_acts_layout(k, &a->dec, &m->tc, B, T, L, "dec");
    block_add(k, &a->dh, "dh", 3, B, T, d);
    block_add(k, &a->logits, "logits", 2, B * T, V);
    block_add(k, &a->probs, "probs", 2, B * T, V);
    block_add(k, &a->dlogits, "dlogits", 2, B * T, V);
    block_add(k, &a->losses, "losses", 1, B * T);
    block_add(k, &a->pos1, "pos1", 2, c->tf.positions, d);
    block_add(k, &a->pos2, "pos2", 2, G, d / 2);
    block_alloc(k);
    positions_sinusoid_fill(a->pos1, c->tf.positions, d);
    positions_sinusoid_fill(a->pos2, G, d / 2);
    a->tok = xcalloc((size_t)2 * B * T + B, sizeof(int));
    a->target = a->tok + (size_t)B * T;
    a->steps = a->target + (size_t)B * T;
    if (c->feat_L == 0) cnn_workspace_alloc(&m->cnn_ws, &c->cnn, B, c->image_size);
}

void sat_tf_free(SatTfModel *m) {
    if (!m->replica) {
        block_free(&m->params);
        block_free(&m->adam_m);
        block_free(&m->adam_v);
    }
    block_free(&m->grads);
    free_acts_(m);
    memset(m, 0, sizeof *m);
}

// ---------------------------------------------------------------------------------------
// Forward and backward

// out (B, L, d) += the 2-D positions of the grid's cells (see the header): table (G, d / 2).
static void add_grid_positions_(float *out, const float *table, int B, int L, int d) {
    const int G = sat_tf_grid(L), h = d / 2;
    for (int b = 0; b < B; b++)
        for (int l = 0; l < L; l++) {
            float *row = out + ((size_t)b * L + l) * d;
            const float *pr = table + (size_t)(l / G) * h, *pc = table + (size_t)(l % G) * h;
            for (int i = 0; i < h; i++) row[i] += pr[i], row[h + i] += pc[i];
        }
}

// The memory of B images (B <= the acts' batch): annotations (CNN or given), projection,
// grid positions, the encoder's layers. Returns it (a->mem0 or the encoder's output).
static const float *encode_(SatTfModel *m, const float *images, int B, Rng *rng) {
    const SatConfig *c = &m->cfg;
    SatTfActs *a = &m->a;
    const int L = sat_L(c), D = sat_D(c), d = c->tf.d_model;
    if (c->feat_L > 0) memcpy(a->annot, images, (size_t)B * L * D * sizeof(float));
    else cnn_forward(a->annot, &m->cnn_ws, images, &m->p.cnn, B);
    linear_forward(a->mem0, a->annot, m->p.proj_w, m->p.proj_b, B * L, D, d);
    add_grid_positions_(a->mem0, a->pos2, B, L, d);
    if (c->tf.enc_layers == 0) return a->mem0;
    a->enc.B = B, a->enc.T = L, a->enc.S = L;
    tf_encoder_forward(&a->enc, a->mem0, NULL, &m->p.enc, &m->tce, rng);
    return a->enc.out;
}

static const float *memory_(const SatTfModel *m) {
    return m->cfg.tf.enc_layers > 0 ? m->a.enc.out : m->a.mem0;
}

double sat_tf_forward(SatTfModel *m, const float *images, const int *words, const int *lens,
                      int B, int train, uint64_t seed, int first, double *tokens) {
    const SatConfig *c = &m->cfg;
    SatTfActs *a = &m->a;
    CHECK(a->B >= B && B >= 1, "batch %d, activations for %d", B, a->B);
    const int d = c->tf.d_model, V = c->V;
    const int T =
        transformer_pack_targets(a->tok, a->target, a->steps, words, lens, B, c->max_len);
    m->Bb = B, m->Tb = T;
    m->images = images;
    Rng rng;
    rng_seed(&rng, rng_mix(seed, (uint64_t)first));
    Rng *r = train && c->tf.dropout > 0.0f ? &rng : NULL;
    const float *mem = encode_(m, images, B, r);
    embedding_forward(a->emb, a->tok, m->p.embed, B * T, d);
    positions_add_forward(a->x, a->emb, a->pos1, sqrtf((float)d), B, T, d);
    a->dec.B = B, a->dec.T = T, a->dec.S = sat_L(c);
    tf_decoder_forward(&a->dec, a->x, mem, a->steps, NULL, &m->p.dec, &m->tc, r);
    linear_forward(a->logits, a->dec.out, m->p.out_w, m->p.out_b, B * T, d, V);
    const double ce = crossentropy_forward(a->losses, a->probs, a->logits, a->target, B * T, V);
    double n = 0.0;
    for (int b = 0; b < B; b++) n += a->steps[b];
    if (tokens) *tokens = n;
    return ce / B;
}

void sat_tf_backward(SatTfModel *m) {
    const SatConfig *c = &m->cfg;
    SatTfActs *a = &m->a;
    const int B = m->Bb, T = m->Tb, L = sat_L(c), D = sat_D(c), d = c->tf.d_model, V = c->V;
    const size_t N = (size_t)B * T;
    memset(a->dlogits, 0, N * V * sizeof(float));
    crossentropy_backward(a->dlogits, NULL, a->probs, a->target, (int)N, V);
    const float inv = 1.0f / (float)B;
    for (size_t i = 0; i < N * V; i++) a->dlogits[i] *= inv;
    memset(a->dh, 0, N * d * sizeof(float));
    linear_backward(a->dh, m->g.out_w, m->g.out_b, a->dlogits, a->dec.out, m->p.out_w, (int)N, d, V);
    memset(a->dx, 0, N * d * sizeof(float));
    memset(a->dmem, 0, (size_t)B * L * d * sizeof(float));
    tf_decoder_backward(a->dx, a->dmem, &m->g.dec, a->dh, &a->dec, a->x, memory_(m), a->steps,
                        NULL, &m->p.dec, &m->tc);
    memset(a->demb, 0, N * d * sizeof(float));
    positions_add_backward(a->demb, NULL, a->dx, sqrtf((float)d), B, T, d);
    embedding_backward(m->g.embed, a->demb, a->tok, (int)N, d);
    const float *dmem0 = a->dmem;
    if (c->tf.enc_layers > 0) {
        memset(a->dmem0, 0, (size_t)B * L * d * sizeof(float));
        tf_encoder_backward(a->dmem0, &m->g.enc, a->dmem, &a->enc, a->mem0, NULL, &m->p.enc, &m->tce);
        dmem0 = a->dmem0;
    }
    const int dannot = c->feat_L == 0 || m->annot_grad;
    if (dannot) memset(a->dannot, 0, (size_t)B * L * D * sizeof(float));
    linear_backward(dannot ? a->dannot : NULL, m->g.proj_w, m->g.proj_b, dmem0, a->annot,
                    m->p.proj_w, B * L, D, d);
    if (c->feat_L == 0) cnn_backward(&m->g.cnn, NULL, a->dannot, &m->cnn_ws, m->images, &m->p.cnn, B);
}

static int map_layer_(const SatConfig *c) {
    return c->tf.map_layer >= 0 ? c->tf.map_layer : c->tf.layers - 1;
}

void sat_tf_set_maps(SatModel *sm, int layer, int head) {
    CHECK(sm->cfg.decoder == SAT_DECODER_TRANSFORMER, "maps of a layer: not a Transformer");
    SatTfModel *m = sm->dec;
    CHECK(layer >= -1 && layer < m->cfg.tf.layers && head >= -1 && head < m->cfg.tf.heads,
          "maps of layer %d head %d", layer, head);
    sm->cfg.tf.map_layer = m->cfg.tf.map_layer = layer;
    m->map_head = head;
}

const float *sat_tf_attention(const SatTfModel *m) {
    return transformer_decoder_cross_weights(&m->a.dec, map_layer_(&m->cfg));
}

// ---------------------------------------------------------------------------------------
// Decoding

void sat_tf_decode_ctx_init(SatTfDecodeCtx *d, SatTfModel *m, const float *images, int B, int beam) {
    const SatConfig *c = &m->cfg;
    const int L = sat_L(c), dm = c->tf.d_model, V = c->V, TS = c->max_len + 1;
    CHECK(m->acts_block.data, "sat_tf_alloc_acts before decoding");
    memset(d, 0, sizeof *d);
    d->m = m, d->B = B, d->R = B * beam;
    Block *k = &d->block;
    tf_decode_layout(k, &d->s, &m->tc, d->R, TS, L, "decode");
    d->s.cross_head = m->map_head + 1;
    block_add(k, &d->mem, "mem", 3, B, L, dm);
    block_add(k, &d->x, "x", 2, d->R, dm);
    block_add(k, &d->h, "h", 2, d->R, dm);
    block_add(k, &d->logits, "logits", 2, d->R, V);
    block_add(k, &d->alpha_hist, "alpha_hist", 3, TS, d->R, L);
    block_alloc(k);
    const size_t per = sat_input_floats(c);
    for (int b0 = 0; b0 < B; b0 += m->a.B) {
        const int n = B - b0 < m->a.B ? B - b0 : m->a.B;
        const float *mem = encode_(m, images + (size_t)b0 * per, n, NULL);
        memcpy(d->mem + (size_t)b0 * L * dm, mem, (size_t)n * L * dm * sizeof(float));
    }
    tf_decode_start(&d->s, d->mem, B, &m->p.dec, &m->tc);
}

void sat_tf_decode_ctx_free(SatTfDecodeCtx *d) {
    block_free(&d->block);
    memset(d, 0, sizeof *d);
}

void sat_tf_beam_step(void *vctx, int n, const int *parent, const int *token, float *logprobs) {
    SatTfDecodeCtx *d = vctx;
    SatTfModel *m = d->m;
    const SatConfig *c = &m->cfg;
    const int L = sat_L(c), dm = c->tf.d_model, V = c->V;
    CHECK(n >= 1 && n <= d->R, "rows %d, capacity %d", n, d->R);
    CHECK(d->t <= c->max_len, "step %d past the limit", d->t);
    // The first call's rows are the images in order: the caches are theirs already.
    if (d->t > 0) tf_decode_gather(&d->s, n, parent, d->t, &m->tc);
    else
        for (int r = 0; r < n; r++) CHECK(parent[r] == r, "first step: row %d of image %d", r, parent[r]);
    embedding_forward(d->x, token, m->p.embed, n, dm);
    positions_add_forward(d->x, d->x, m->a.pos1 + (size_t)d->t * dm, sqrtf((float)dm), n, 1, dm);
    tf_decode_step(d->h, &d->s, d->x, n, d->t, NULL, &m->p.dec, &m->tc);
    linear_forward(d->logits, d->h, m->p.out_w, m->p.out_b, n, dm, V);
    memcpy(d->alpha_hist + (size_t)d->t * d->R * L, d->s.cross_weights[map_layer_(c)],
           (size_t)n * L * sizeof(float));
    sat_next_word_logprobs(logprobs, d->logits, n, V);
    d->t++;
}

void sat_tf_decode(SatTfModel *m, int *tokens, int *lens, float *alphas, const float *images,
                   int B, int beam, float length_alpha) {
    const SatConfig *c = &m->cfg;
    CHECK(beam >= 1 && B >= 1, "beam %d B %d", beam, B);
    SatTfDecodeCtx d;
    sat_tf_decode_ctx_init(&d, m, images, B, beam);
    sat_beam_decode(tokens, lens, alphas, B, beam, length_alpha, c->V, c->max_len, sat_L(c), &d,
                    sat_tf_beam_step, d.alpha_hist, d.R);
    sat_tf_decode_ctx_free(&d);
}

// ---------------------------------------------------------------------------------------
// The captioner's decoder interface (models/sat.h): SatModel.dec is a SatTfModel, whose
// Blocks' descriptors the model holds.

static void tf_ops_init_(SatModel *m, Rng *rng) {
    SatTfModel *t = xcalloc(1, sizeof *t);
    sat_tf_init(t, &m->cfg, rng);
    m->dec = t;
    m->params = t->params, m->grads = t->grads;
    m->adam_m = t->adam_m, m->adam_v = t->adam_v;
}

static void tf_ops_replica_init_(SatModel *r, const SatModel *m) {
    SatTfModel *t = xcalloc(1, sizeof *t);
    sat_tf_replica_init(t, m->dec);
    r->dec = t;
    r->params = m->params, r->grads = t->grads;
}

static void tf_ops_alloc_acts_(SatModel *m, int B) { sat_tf_alloc_acts(m->dec, B); }

static void tf_ops_free_(SatModel *m) {
    sat_tf_free(m->dec);
    free(m->dec);
}

static void tf_ops_forward_(SatModel *m, SatLoss *out, const float *images, const int *words,
                            const int *lens, int B, int train, uint64_t seed, int first) {
    double tokens = 0.0;
    const double loss = sat_tf_forward(m->dec, images, words, lens, B, train, seed, first, &tokens);
    *out = (SatLoss){.loss = loss, .ce = loss, .tokens = tokens};
}

// The whole backward, the encoder's included (tf_ops_encoder_grad_floats_ is 0).
static void tf_ops_backward_decoder_(SatModel *m) {
    SatTfModel *t = m->dec;
    t->annot_grad = m->annot_grad;
    sat_tf_backward(t);
}

static void tf_ops_backward_encoder_(SatModel *m) { (void)m; }  // done in the first half

static size_t tf_ops_encoder_grad_floats_(const SatModel *m) {
    (void)m;
    return 0;
}

static const float *tf_ops_annotation_grads_(const SatModel *m) {
    return ((const SatTfModel *)m->dec)->a.dannot;
}

// None: the forward copies its features into a.annot itself.
static float *tf_ops_annotation_input_(SatModel *m) {
    (void)m;
    return NULL;
}

// The Transformer's products run through core/gemm as they are: nothing to pack or lend.
static void tf_ops_pack_step_weights_(SatModel *m, int threads) { (void)m, (void)threads; }

static void tf_ops_lend_step_weights_(SatModel *w, const SatModel *from) { (void)w, (void)from; }

static void tf_ops_decode_(SatModel *m, int *tokens, int *lens, float *alphas,
                           const float *images, int B, int beam, float length_alpha) {
    sat_tf_decode(m->dec, tokens, lens, alphas, images, B, beam, length_alpha);
}

const SatDecoderOps sat_tf_ops = {
    .kind = SAT_DECODER_TRANSFORMER,
    .check_sizes = sat_tf_check_sizes,
    .check_decode_sizes = sat_tf_check_decode_sizes,
    .init = tf_ops_init_,
    .replica_init = tf_ops_replica_init_,
    .alloc_acts = tf_ops_alloc_acts_,
    .free = tf_ops_free_,
    .forward = tf_ops_forward_,
    .backward_decoder = tf_ops_backward_decoder_,
    .backward_encoder = tf_ops_backward_encoder_,
    .encoder_grad_floats = tf_ops_encoder_grad_floats_,
    .annotation_grads = tf_ops_annotation_grads_,
    .annotation_input = tf_ops_annotation_input_,
    .sorts_rows = 0,
    .pack_step_weights = tf_ops_pack_step_weights_,
    .lend_step_weights = tf_ops_lend_step_weights_,
    .decode = tf_ops_decode_,
};
