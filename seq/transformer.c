// transformer.c: see transformer.h.
//
// A residual sub-layer runs in four pieces, so the three sub-layer kinds share them:
//   resid_input     the sub-layer's input: LN(x) (pre-LN, into r->normed) or x itself
//   resid_output    r->out = x + drop(fout) (pre-LN) or LN(x + drop(fout)) (post-LN)
//   backward, in reverse: resid_output_backward gives dx its skip part and dfout, the
//   sub-layer's backward accumulates its input gradient where resid_input_grad says (the
//   scratch dnormed under pre-LN, dx itself under post-LN), and resid_input_backward takes
//   dnormed through the pre-LN norm into dx.
#include "seq/transformer.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "core/dims.h"
#include "seq/layernorm.h"
#include "seq/lstm_seq.h"
#include "seq/vocab.h"

// ---- configuration --------------------------------------------------------------------------

TransformerConfig transformer_config_default(int d_model, int heads, int d_ff, int layers,
                                             int max_len) {
    return (TransformerConfig){.d_model = d_model, .heads = heads, .d_ff = d_ff,
                               .layers = layers, .dropout = 0.1f, .post_ln = 0,
                               .final_norm = 1, .act = FFN_RELU, .ln_eps = LAYERNORM_EPS,
                               .positions = POS_SINUSOIDAL, .max_len = max_len};
}

int transformer_config_check(const TransformerConfig *c, Error *err) {
    MhaConfig m = {.d = c->d_model, .heads = c->heads};
    if (mha_config_check(&m, err)) return -1;
    if (positions_check(c->positions, c->d_model, c->max_len, err)) return -1;
    if (c->d_ff < 1) return error_set(err, "feed-forward size %d must be at least 1", c->d_ff);
    if (c->layers < 1 || c->layers > TRANSFORMER_MAX_LAYERS)
        return error_set(err, "%d layers: the Transformer takes 1 to %d", c->layers,
                         TRANSFORMER_MAX_LAYERS);
    if (!(c->dropout >= 0.0f && c->dropout < 1.0f))
        return error_set(err, "dropout %g is outside [0, 1)", c->dropout);
    if (!(c->ln_eps > 0.0f)) return error_set(err, "layer norm eps %g must be positive", c->ln_eps);
    return 0;
}

int transformer_check_length(const TransformerConfig *c, int T, Error *err) {
    return positions_check_length(T, c->max_len, err);
}

int transformer_check_sizes(const TransformerConfig *c, int B, int T, int S, Error *err) {
    MhaConfig m = {.d = c->d_model, .heads = c->heads};
    DimTerm ffn[] = {{B, "sequences"}, {T, "positions"}, {c->d_ff, "feed-forward size"}};
    if (mha_check_sizes(&m, B, T, T, err) || mha_check_sizes(&m, B, T, S, err)) return -1;
    return dims_check(err, "Transformer feed-forward activations", ffn, DIMS_LEN(ffn));
}

static MhaConfig mha_of(const TransformerConfig *c) { return (MhaConfig){.d = c->d_model, .heads = c->heads}; }

// ---- names ----------------------------------------------------------------------------------

static void name_of(char *out, const char *prefix, const char *name) {
    int n = snprintf(out, BLOCK_NAME_LEN, "%s.%s", prefix, name);
    CHECK(n > 0 && n < BLOCK_NAME_LEN, "tensor name too long: %s.%s", prefix, name);
}

static void add_vec(Block *b, float **view, const char *prefix, const char *name, int n) {
    char full[BLOCK_NAME_LEN];
    name_of(full, prefix, name);
    block_add(b, view, full, 1, n);
}

static void add_mat(Block *b, float **view, const char *prefix, const char *name, int r, int k) {
    char full[BLOCK_NAME_LEN];
    name_of(full, prefix, name);
    block_add(b, view, full, 2, r, k);
}

// ---- parameters -----------------------------------------------------------------------------

static void norm_layout(Block *b, LayerNormParams *p, const char *prefix, const char *name, int d) {
    char full[BLOCK_NAME_LEN];
    name_of(full, prefix, name);
    add_vec(b, &p->weight, full, "weight", d);
    add_vec(b, &p->bias, full, "bias", d);
}

static void ffn_layout(Block *b, FfnParams *p, const TransformerConfig *c, const char *prefix) {
    add_mat(b, &p->W1, prefix, "linear1.weight", c->d_ff, c->d_model);
    add_vec(b, &p->b1, prefix, "linear1.bias", c->d_ff);
    add_mat(b, &p->W2, prefix, "linear2.weight", c->d_model, c->d_ff);
    add_vec(b, &p->b2, prefix, "linear2.bias", c->d_model);
}

static void attn_layout(Block *b, MhaParams *p, const TransformerConfig *c, const char *prefix,
                        const char *name) {
    char full[BLOCK_NAME_LEN];
    name_of(full, prefix, name);
    MhaConfig m = mha_of(c);
    mha_params_layout(b, p, &m, full);
}

void tf_encoder_layer_params_layout(Block *b, TfEncoderLayerParams *p, const TransformerConfig *c,
                                    const char *prefix) {
    CHECK(transformer_config_check(c, NULL) == 0, "transformer config");
    attn_layout(b, &p->self_attn, c, prefix, "self_attn");
    ffn_layout(b, &p->ffn, c, prefix);
    norm_layout(b, &p->norm1, prefix, "norm1", c->d_model);
    norm_layout(b, &p->norm2, prefix, "norm2", c->d_model);
}

void tf_decoder_layer_params_layout(Block *b, TfDecoderLayerParams *p, const TransformerConfig *c,
                                    const char *prefix) {
    CHECK(transformer_config_check(c, NULL) == 0, "transformer config");
    attn_layout(b, &p->self_attn, c, prefix, "self_attn");
    attn_layout(b, &p->cross_attn, c, prefix, "multihead_attn");
    ffn_layout(b, &p->ffn, c, prefix);
    norm_layout(b, &p->norm1, prefix, "norm1", c->d_model);
    norm_layout(b, &p->norm2, prefix, "norm2", c->d_model);
    norm_layout(b, &p->norm3, prefix, "norm3", c->d_model);
}

static void fill_pm(float *x, size_t n, int fan_in, Rng *rng) {
    float r = 1.0f / sqrtf((float)fan_in);
    for (size_t i = 0; i < n; i++) x[i] = r * (2.0f * rng_uniform(rng) - 1.0f);
}

static void norm_init(LayerNormParams *p, int d) {
    for (int i = 0; i < d; i++) p->weight[i] = 1.0f, p->bias[i] = 0.0f;
}

static void ffn_init(FfnParams *p, const TransformerConfig *c, Rng *rng) {
    size_t d = (size_t)c->d_model, F = (size_t)c->d_ff;
    fill_pm(p->W1, F * d, c->d_model, rng);
    fill_pm(p->b1, F, c->d_model, rng);
    fill_pm(p->W2, d * F, c->d_ff, rng);
    fill_pm(p->b2, d, c->d_ff, rng);
}

void tf_encoder_layer_params_init(TfEncoderLayerParams *p, const TransformerConfig *c, Rng *rng) {
    MhaConfig m = mha_of(c);
    mha_params_init(&p->self_attn, &m, rng);
    ffn_init(&p->ffn, c, rng);
    norm_init(&p->norm1, c->d_model), norm_init(&p->norm2, c->d_model);
}

void tf_decoder_layer_params_init(TfDecoderLayerParams *p, const TransformerConfig *c, Rng *rng) {
    MhaConfig m = mha_of(c);
    mha_params_init(&p->self_attn, &m, rng);
    mha_params_init(&p->cross_attn, &m, rng);
    ffn_init(&p->ffn, c, rng);
    norm_init(&p->norm1, c->d_model), norm_init(&p->norm2, c->d_model);
    norm_init(&p->norm3, c->d_model);
}

// ---- activations ----------------------------------------------------------------------------

static void resid_layout(Block *a, TfResidual *r, const TransformerConfig *c, int N,
                         const char *prefix) {
    int d = c->d_model;
    memset(r, 0, sizeof *r);
    if (!c->post_ln) add_mat(a, &r->normed, prefix, "normed", N, d);
    add_vec(a, &r->mean, prefix, "mean", N);
    add_vec(a, &r->rstd, prefix, "rstd", N);
    add_mat(a, &r->fout, prefix, "fout", N, d);
    if (c->dropout > 0.0f) add_mat(a, &r->mask, prefix, "mask", N, d);
    if (c->post_ln) add_mat(a, &r->sum, prefix, "sum", N, d);
    add_mat(a, &r->out, prefix, "out", N, d);
}

// The layer's residuals r0.., its FFN and scratch; attention is the caller's.
static void layer_common_layout(Block *a, TfLayerActs *x, const TransformerConfig *c, int N,
                                int n_resid, const char *prefix) {
    static const char *const rname[3] = {"r0", "r1", "r2"};
    CHECK((int64_t)N * (c->d_ff > c->d_model ? c->d_ff : c->d_model) <= DIMS_MAX,
          "transformer activations of %d rows pass DIMS_MAX: check transformer_check_sizes first",
          N);
    char full[BLOCK_NAME_LEN];
    for (int i = 0; i < n_resid; i++) {
        name_of(full, prefix, rname[i]);
        resid_layout(a, &x->r[i], c, N, full);
    }
    add_mat(a, &x->ffn_pre, prefix, "ffn_pre", N, c->d_ff);
    add_mat(a, &x->ffn_hidden, prefix, "ffn_hidden", N, c->d_ff);
    add_mat(a, &x->dffn_hidden, prefix, "dffn_hidden", N, c->d_ff);
    x->ffn_mask = NULL;
    if (c->dropout > 0.0f) add_mat(a, &x->ffn_mask, prefix, "ffn_mask", N, c->d_ff);
    add_mat(a, &x->s.dfout, prefix, "dfout", N, c->d_model);
    add_mat(a, &x->s.dnormed, prefix, "dnormed", N, c->d_model);
    add_mat(a, &x->s.dsum, prefix, "dsum", N, c->d_model);
    add_mat(a, &x->s.dmid[0], prefix, "dmid0", N, c->d_model);
    add_mat(a, &x->s.dmid[1], prefix, "dmid1", N, c->d_model);
    x->dropped = 0;
}

// Attention k of the layer, and its probabilities' dropout factors when dropout is on.
static void attn_acts_layout(Block *a, TfLayerActs *x, int k, const TransformerConfig *c, int B,
                             int T, int S, const char *prefix, const char *name) {
    char full[BLOCK_NAME_LEN];
    name_of(full, prefix, name);
    MhaConfig m = mha_of(c);
    mha_acts_layout(a, &x->attn[k], &m, B, T, S, full);
    if (c->dropout > 0.0f) {
        char drop[BLOCK_NAME_LEN];
        name_of(drop, full, "drop");
        block_add(a, &x->attn_drop[k], drop, 4, B, c->heads, T, S);
    }
}

// B T rows, CHECKed (the set-up refuses larger ones with transformer_check_sizes).
static int rows_of(int B, int T) {
    CHECK(B >= 1 && T >= 1 && (int64_t)B * T <= DIMS_MAX, "transformer B %d T %d", B, T);
    return B * T;
}

void tf_encoder_layer_acts_layout(Block *a, TfLayerActs *x, const TransformerConfig *c, int B,
                                  int T, const char *prefix) {
    memset(x, 0, sizeof *x);
    layer_common_layout(a, x, c, rows_of(B, T), 2, prefix);
    attn_acts_layout(a, x, 0, c, B, T, T, prefix, "self_attn");
}

void tf_decoder_layer_acts_layout(Block *a, TfLayerActs *x, const TransformerConfig *c, int B,
                                  int T, int S, const char *prefix) {
    memset(x, 0, sizeof *x);
    layer_common_layout(a, x, c, rows_of(B, T), 3, prefix);
    attn_acts_layout(a, x, 0, c, B, T, T, prefix, "self_attn");
    attn_acts_layout(a, x, 1, c, B, T, S, prefix, "multihead_attn");
}

// ---- residual sub-layers --------------------------------------------------------------------

static const float *resid_input(TfResidual *r, const float *x, const LayerNormParams *ln,
                                const TransformerConfig *c, int N) {
    if (c->post_ln) return x;
    layernorm_forward(r->normed, r->mean, r->rstd, x, ln->weight, ln->bias, c->ln_eps, N,
                      c->d_model);
    return r->normed;
}

static void resid_output(TfResidual *r, const float *x, const LayerNormParams *ln,
                         const TransformerConfig *c, int dropped, int N) {
    size_t n = (size_t)N * c->d_model;
    float *dst = c->post_ln ? r->sum : r->out;
    for (size_t i = 0; i < n; i++) dst[i] = x[i] + (dropped ? r->mask[i] * r->fout[i] : r->fout[i]);
    if (c->post_ln)
        layernorm_forward(r->out, r->mean, r->rstd, r->sum, ln->weight, ln->bias, c->ln_eps, N,
                          c->d_model);
}

// dx += the skip path's gradient; s->dfout = the sub-layer output's gradient.
static void resid_output_backward(float *dx, LayerNormParams *dln, TfScratch *s, const float *dout,
                                  const TfResidual *r, const LayerNormParams *ln,
                                  const TransformerConfig *c, int dropped, int N) {
    size_t n = (size_t)N * c->d_model;
    const float *g = dout;
    if (c->post_ln) {
        memset(s->dsum, 0, n * sizeof(float));
        layernorm_backward(s->dsum, dln->weight, dln->bias, dout, r->sum, r->mean, r->rstd,
                           ln->weight, N, c->d_model);
        g = s->dsum;
    }
    for (size_t i = 0; i < n; i++) {
        dx[i] += g[i];
        s->dfout[i] = dropped ? g[i] * r->mask[i] : g[i];
    }
}

// Where the sub-layer's backward accumulates its input's gradient.
static float *resid_input_grad(float *dx, TfScratch *s, const TransformerConfig *c, int N) {
    if (c->post_ln) return dx;
    memset(s->dnormed, 0, (size_t)N * c->d_model * sizeof(float));
    return s->dnormed;
}

static void resid_input_backward(float *dx, LayerNormParams *dln, const TfScratch *s,
                                 const float *x, const TfResidual *r, const LayerNormParams *ln,
                                 const TransformerConfig *c, int N) {
    if (c->post_ln) return;
    layernorm_backward(dx, dln->weight, dln->bias, s->dnormed, x, r->mean, r->rstd, ln->weight, N,
                       c->d_model);
}

// ---- the sub-layers -------------------------------------------------------------------------

// Every mask of the layer (n_resid sub-layers; attention k over S[k] keys), in one order.
static void draw_masks(TfLayerActs *x, const TransformerConfig *c, int n_resid, const int *S,
                       Rng *rng, int B, int T) {
    x->dropped = rng && c->dropout > 0.0f;
    if (!x->dropped) return;
    size_t n = (size_t)B * T * c->d_model;
    for (int i = 0; i < n_resid; i++) lstm_dropout_mask(x->r[i].mask, n, c->dropout, rng);
    for (int k = 0; k < n_resid - 1; k++)
        lstm_dropout_mask(x->attn_drop[k], (size_t)B * c->heads * T * S[k], c->dropout, rng);
    lstm_dropout_mask(x->ffn_mask, (size_t)B * T * c->d_ff, c->dropout, rng);
}

// r = the residual of the feed-forward layer over x.
static void ffn_sublayer_forward(TfLayerActs *x, TfResidual *r, const float *in, const FfnParams *p,
                                 const LayerNormParams *ln, const TransformerConfig *c, int N) {
    const float *f_in = resid_input(r, in, ln, c, N);
    ffn_forward(r->fout, x->ffn_pre, x->ffn_hidden, f_in, p, x->dropped ? x->ffn_mask : NULL,
                c->act, N, c->d_model, c->d_ff);
    resid_output(r, in, ln, c, x->dropped, N);
}

static void ffn_sublayer_backward(float *dx, FfnParams *dp, LayerNormParams *dln,
                                  const float *dout, TfLayerActs *x, const TfResidual *r,
                                  const float *in, const FfnParams *p, const LayerNormParams *ln,
                                  const TransformerConfig *c, int N) {
    resid_output_backward(dx, dln, &x->s, dout, r, ln, c, x->dropped, N);
    float *df_in = resid_input_grad(dx, &x->s, c, N);
    ffn_backward(df_in, dp, x->dffn_hidden, x->s.dfout, c->post_ln ? in : r->normed, x->ffn_pre,
                 x->ffn_hidden, p, x->dropped ? x->ffn_mask : NULL, c->act, N, c->d_model,
                 c->d_ff);
    resid_input_backward(dx, dln, &x->s, in, r, ln, c, N);
}

// The residual of attention with queries from x over kv (NULL: self-attention, over the
// sub-layer's own input); kv_lengths mask the keys.
typedef struct {
    const float *kv;
    const int *kv_lengths;
    int causal, S;
} AttnSpec;

static void attn_sublayer_forward(TfLayerActs *x, int k, const float *in, const AttnSpec *a,
                                  const MhaParams *p, const LayerNormParams *ln,
                                  const TransformerConfig *c, int B, int T) {
    TfResidual *r = &x->r[k];
    MhaConfig m = mha_of(c);
    const float *q = resid_input(r, in, ln, c, B * T);
    mha_forward(r->fout, &x->attn[k], q, a->kv ? a->kv : q, a->kv_lengths, a->causal,
                x->dropped ? x->attn_drop[k] : NULL, p, &m, B, T, a->S);
    resid_output(r, in, ln, c, x->dropped, B * T);
}

// dkv: the memory's gradient (cross-attention), or NULL.
static void attn_sublayer_backward(float *dx, float *dkv, MhaParams *dp, LayerNormParams *dln,
                                   const float *dout, TfLayerActs *x, int k, const float *in,
                                   const AttnSpec *a, const MhaParams *p,
                                   const LayerNormParams *ln, const TransformerConfig *c, int B,
                                   int T) {
    TfResidual *r = &x->r[k];
    MhaConfig m = mha_of(c);
    int N = B * T;
    resid_output_backward(dx, dln, &x->s, dout, r, ln, c, x->dropped, N);
    float *dq = resid_input_grad(dx, &x->s, c, N);
    const float *q = c->post_ln ? in : r->normed;
    mha_backward(dq, a->kv ? dkv : dq, dp, x->s.dfout, &x->attn[k], q,
                 a->kv ? a->kv : q, a->kv_lengths, a->causal,
                 x->dropped ? x->attn_drop[k] : NULL, p, &m, B, T, a->S);
    resid_input_backward(dx, dln, &x->s, in, r, ln, c, N);
}

// ---- layers ---------------------------------------------------------------------------------

void tf_encoder_layer_forward(TfLayerActs *x, const float *inp, const int *lengths,
                              const TfEncoderLayerParams *p, const TransformerConfig *c, Rng *rng,
                              int B, int T) {
    AttnSpec self = {NULL, lengths, 0, T};
    const int keys[1] = {T};
    draw_masks(x, c, 2, keys, rng, B, T);
    attn_sublayer_forward(x, 0, inp, &self, &p->self_attn, &p->norm1, c, B, T);
    ffn_sublayer_forward(x, &x->r[1], x->r[0].out, &p->ffn, &p->norm2, c, B * T);
}

void tf_encoder_layer_backward(float *dinp, TfEncoderLayerParams *dp, const float *dout,
                               TfLayerActs *x, const float *inp, const int *lengths,
                               const TfEncoderLayerParams *p, const TransformerConfig *c, int B,
                               int T) {
    AttnSpec self = {NULL, lengths, 0, T};
    float *d1 = x->s.dmid[0];
    memset(d1, 0, (size_t)B * T * c->d_model * sizeof(float));
    ffn_sublayer_backward(d1, &dp->ffn, &dp->norm2, dout, x, &x->r[1], x->r[0].out, &p->ffn,
                          &p->norm2, c, B * T);
    attn_sublayer_backward(dinp, NULL, &dp->self_attn, &dp->norm1, d1, x, 0, inp, &self,
                           &p->self_attn, &p->norm1, c, B, T);
}

void tf_decoder_layer_forward(TfLayerActs *x, const float *inp, const float *mem,
                              const int *tgt_lengths, const int *mem_lengths,
                              const TfDecoderLayerParams *p, const TransformerConfig *c, Rng *rng,
                              int B, int T, int S) {
    AttnSpec self = {NULL, tgt_lengths, 1, T}, cross = {mem, mem_lengths, 0, S};
    const int keys[2] = {T, S};
    draw_masks(x, c, 3, keys, rng, B, T);
    attn_sublayer_forward(x, 0, inp, &self, &p->self_attn, &p->norm1, c, B, T);
    attn_sublayer_forward(x, 1, x->r[0].out, &cross, &p->cross_attn, &p->norm2, c, B, T);
    ffn_sublayer_forward(x, &x->r[2], x->r[1].out, &p->ffn, &p->norm3, c, B * T);
}

void tf_decoder_layer_backward(float *dinp, float *dmem, TfDecoderLayerParams *dp,
                               const float *dout, TfLayerActs *x, const float *inp,
                               const float *mem, const int *tgt_lengths, const int *mem_lengths,
                               const TfDecoderLayerParams *p, const TransformerConfig *c, int B,
                               int T, int S) {
    AttnSpec self = {NULL, tgt_lengths, 1, T}, cross = {mem, mem_lengths, 0, S};
    size_t n = (size_t)B * T * c->d_model;
    float *d1 = x->s.dmid[0], *d2 = x->s.dmid[1];
    memset(d1, 0, n * sizeof(float));
    memset(d2, 0, n * sizeof(float));
    ffn_sublayer_backward(d2, &dp->ffn, &dp->norm3, dout, x, &x->r[2], x->r[1].out, &p->ffn,
                          &p->norm3, c, B * T);
    attn_sublayer_backward(d1, dmem, &dp->cross_attn, &dp->norm2, d2, x, 1, x->r[0].out, &cross,
                           &p->cross_attn, &p->norm2, c, B, T);
    attn_sublayer_backward(dinp, NULL, &dp->self_attn, &dp->norm1, d1, x, 0, inp, &self,
                           &p->self_attn, &p->norm1, c, B, T);
}

// ---- stacks ---------------------------------------------------------------------------------

static void layer_prefix(char *out, const char *prefix, int l) {
    int n = snprintf(out, BLOCK_NAME_LEN, "%s.layers.%d", prefix, l);
    CHECK(n > 0 && n < BLOCK_NAME_LEN, "tensor name too long: %s.layers.%d", prefix, l);
}

void tf_encoder_params_layout(Block *b, TfEncoderParams *p, const TransformerConfig *c,
                              const char *prefix) {
    char lp[BLOCK_NAME_LEN];
    memset(p, 0, sizeof *p);
    for (int l = 0; l < c->layers; l++) {
        layer_prefix(lp, prefix, l);
        tf_encoder_layer_params_layout(b, &p->layer[l], c, lp);
    }
    if (c->final_norm) norm_layout(b, &p->norm, prefix, "norm", c->d_model);
}

void tf_decoder_params_layout(Block *b, TfDecoderParams *p, const TransformerConfig *c,
                              const char *prefix) {
    char lp[BLOCK_NAME_LEN];
    memset(p, 0, sizeof *p);
    for (int l = 0; l < c->layers; l++) {
        layer_prefix(lp, prefix, l);
        tf_decoder_layer_params_layout(b, &p->layer[l], c, lp);
    }
    if (c->final_norm) norm_layout(b, &p->norm, prefix, "norm", c->d_model);
}

void tf_encoder_params_init(TfEncoderParams *p, const TransformerConfig *c, Rng *rng) {
    for (int l = 0; l < c->layers; l++) tf_encoder_layer_params_init(&p->layer[l], c, rng);
    if (c->final_norm) norm_init(&p->norm, c->d_model);
}

void tf_decoder_params_init(TfDecoderParams *p, const TransformerConfig *c, Rng *rng) {
    for (int l = 0; l < c->layers; l++) tf_decoder_layer_params_init(&p->layer[l], c, rng);
    if (c->final_norm) norm_init(&p->norm, c->d_model);
}

static void stack_common_layout(Block *a, TfStackActs *x, const TransformerConfig *c, int N,
                                const char *prefix) {
    if (c->final_norm) {
        add_vec(a, &x->norm_mean, prefix, "norm_mean", N);
        add_vec(a, &x->norm_rstd, prefix, "norm_rstd", N);
        add_mat(a, &x->norm_out, prefix, "norm_out", N, c->d_model);
    }
    add_mat(a, &x->dlayer[0], prefix, "dlayer0", N, c->d_model);
    add_mat(a, &x->dlayer[1], prefix, "dlayer1", N, c->d_model);
}

void tf_encoder_acts_layout(Block *a, TfStackActs *x, const TransformerConfig *c, int B, int T,
                            const char *prefix) {
    char lp[BLOCK_NAME_LEN];
    memset(x, 0, sizeof *x);
    x->B = B, x->T = T, x->S = T;
    for (int l = 0; l < c->layers; l++) {
        layer_prefix(lp, prefix, l);
        tf_encoder_layer_acts_layout(a, &x->layer[l], c, B, T, lp);
    }
    stack_common_layout(a, x, c, B * T, prefix);
}

void tf_decoder_acts_layout(Block *a, TfStackActs *x, const TransformerConfig *c, int B, int T,
                            int S, const char *prefix) {
    char lp[BLOCK_NAME_LEN];
    memset(x, 0, sizeof *x);
    x->B = B, x->T = T, x->S = S;
    for (int l = 0; l < c->layers; l++) {
        layer_prefix(lp, prefix, l);
        tf_decoder_layer_acts_layout(a, &x->layer[l], c, B, T, S, lp);
    }
    stack_common_layout(a, x, c, B * T, prefix);
}

// After the layers: the final norm (if any) of last (N, d); sets x->out.
static void stack_finish(TfStackActs *x, const float *last, const LayerNormParams *norm,
                         const TransformerConfig *c) {
    int N = x->B * x->T;
    x->out = (float *)last;
    if (!c->final_norm) return;
    layernorm_forward(x->norm_out, x->norm_mean, x->norm_rstd, last, norm->weight, norm->bias,
                      c->ln_eps, N, c->d_model);
    x->out = x->norm_out;
}

// The gradient of the last layer's output: dout itself, or through the final norm.
static const float *stack_finish_backward(TfStackActs *x, LayerNormParams *dnorm,
                                          const float *dout, const float *last,
                                          const LayerNormParams *norm, const TransformerConfig *c) {
    if (!c->final_norm) return dout;
    int N = x->B * x->T;
    memset(x->dlayer[0], 0, (size_t)N * c->d_model * sizeof(float));
    layernorm_backward(x->dlayer[0], dnorm->weight, dnorm->bias, dout, last, x->norm_mean,
                       x->norm_rstd, norm->weight, N, c->d_model);
    return x->dlayer[0];
}

// Where layer l's input gradient goes: dinp for the first layer, else the buffer g is not.
static float *layer_input_grad(TfStackActs *x, float *dinp, const float *g, int l,
                               const TransformerConfig *c) {
    if (l == 0) return dinp;
    float *t = g == x->dlayer[0] ? x->dlayer[1] : x->dlayer[0];
    memset(t, 0, (size_t)x->B * x->T * c->d_model * sizeof(float));
    return t;
}

static const float *layer_out(const TfLayerActs *x, int n_resid) { return x->r[n_resid - 1].out; }

void tf_encoder_forward(TfStackActs *x, const float *inp, const int *lengths,
                        const TfEncoderParams *p, const TransformerConfig *c, Rng *rng) {
    const float *in = inp;
    for (int l = 0; l < c->layers; l++) {
        tf_encoder_layer_forward(&x->layer[l], in, lengths, &p->layer[l], c, rng, x->B, x->T);
        in = layer_out(&x->layer[l], 2);
    }
    stack_finish(x, in, &p->norm, c);
}

void tf_encoder_backward(float *dinp, TfEncoderParams *dp, const float *dout, TfStackActs *x,
                         const float *inp, const int *lengths, const TfEncoderParams *p,
                         const TransformerConfig *c) {
    int L = c->layers;
    const float *g = stack_finish_backward(x, &dp->norm, dout, layer_out(&x->layer[L - 1], 2),
                                           &p->norm, c);
    for (int l = L - 1; l >= 0; l--) {
        const float *in = l == 0 ? inp : layer_out(&x->layer[l - 1], 2);
        float *d = layer_input_grad(x, dinp, g, l, c);
        tf_encoder_layer_backward(d, &dp->layer[l], g, &x->layer[l], in, lengths, &p->layer[l], c,
                                  x->B, x->T);
        g = d;
    }
}

void tf_decoder_forward(TfStackActs *x, const float *inp, const float *mem,
                        const int *tgt_lengths, const int *mem_lengths, const TfDecoderParams *p,
                        const TransformerConfig *c, Rng *rng) {
    const float *in = inp;
    for (int l = 0; l < c->layers; l++) {
        tf_decoder_layer_forward(&x->layer[l], in, mem, tgt_lengths, mem_lengths, &p->layer[l], c,
                                 rng, x->B, x->T, x->S);
        in = layer_out(&x->layer[l], 3);
    }
    stack_finish(x, in, &p->norm, c);
}

void tf_decoder_backward(float *dinp, float *dmem, TfDecoderParams *dp, const float *dout,
                         TfStackActs *x, const float *inp, const float *mem,
                         const int *tgt_lengths, const int *mem_lengths, const TfDecoderParams *p,
                         const TransformerConfig *c) {
    int L = c->layers;
    const float *g = stack_finish_backward(x, &dp->norm, dout, layer_out(&x->layer[L - 1], 3),
                                           &p->norm, c);
    for (int l = L - 1; l >= 0; l--) {
        const float *in = l == 0 ? inp : layer_out(&x->layer[l - 1], 3);
        float *d = layer_input_grad(x, dinp, g, l, c);
        tf_decoder_layer_backward(d, dmem, &dp->layer[l], g, &x->layer[l], in, mem, tgt_lengths,
                                  mem_lengths, &p->layer[l], c, x->B, x->T, x->S);
        g = d;
    }
}

const float *transformer_decoder_cross_weights(const TfStackActs *x, int layer) {
    CHECK(layer >= 0 && layer < TRANSFORMER_MAX_LAYERS && x->layer[layer].attn[1].weights,
          "no decoder layer %d", layer);
    return x->layer[layer].attn[1].weights;
}

int transformer_pack_targets(int *tok, int *target, int *steps, const int *words,
                             const int *lens, int B, int max_len) {
    int T = 1;
    for (int b = 0; b < B; b++) {
        CHECK(lens[b] >= 0 && lens[b] <= max_len, "target length %d", lens[b]);
        if (lens[b] + 1 > T) T = lens[b] + 1;
    }
    for (int b = 0; b < B; b++) {
        const int n = lens[b];
        steps[b] = n + 1;
        for (int t = 0; t < T; t++) {
            const int i = b * T + t;
            tok[i] = t == 0 ? VOCAB_START : t <= n ? words[(size_t)b * max_len + t - 1] : VOCAB_PAD;
            target[i] = t < n ? words[(size_t)b * max_len + t] : t == n ? VOCAB_END : -1;
        }
    }
    return T;
}
