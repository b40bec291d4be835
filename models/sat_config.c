#include "models/sat_config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seq/transformer.h"
#include "seq/vocab.h"

const char *sat_query_name(SatQuery q) { return q == SAT_QUERY_CURRENT ? "current" : "previous"; }

int sat_query_parse(const char *name, SatQuery *q) {
    if (!strcmp(name, "previous")) *q = SAT_QUERY_PREVIOUS;
    else if (!strcmp(name, "current")) *q = SAT_QUERY_CURRENT;
    else return -1;
    return 0;
}

const char *sat_decoder_name(SatDecoderKind k) { return k == SAT_DECODER_TRANSFORMER ? "transformer" : "lstm"; }

int sat_decoder_parse(const char *name, SatDecoderKind *k) {
    if (!strcmp(name, "lstm")) *k = SAT_DECODER_LSTM;
    else if (!strcmp(name, "transformer")) *k = SAT_DECODER_TRANSFORMER;
    else return -1;
    return 0;
}

void sat_config_default(SatConfig *c) {
    memset(c, 0, sizeof *c);
    c->image_size = 64;
    cnn_config_default(&c->cnn);
    c->E = 128;
    c->H = 256;
    c->V = 0;
    c->max_len = 16;
    c->attn.kind = ATTN_ADDITIVE;
    c->attn.A = 128;
    c->attn.heads = 4;
    c->attn.window = 2;
    c->attn.score = ATTN_MULTIPLICATIVE;
    c->hard = 0;
    c->beta_vector = 0;
    c->query = SAT_QUERY_CURRENT;
    c->lambda = 3.0f;
    c->dropout = 0.0f;
    c->entropy_weight = 0.002f;
    c->baseline_decay = 0.9f;
    c->decoder = SAT_DECODER_LSTM;
    c->tf = (SatTfConfig){.d_model = 128, .heads = 4, .d_ff = 256, .layers = 2, .enc_layers = 0,
                          .positions = 64, .post_ln = 0, .map_layer = -1, .dropout = 0.1f};
}

// The checks of sat_config_finish. meta: c came from a checkpoint's "sat.config", so a
// message names its key ("sat.config max_len=300: must be in [1, 256]"), not the flag the
// user never gave ("--max-len").
#define NAME_(flag, key) (meta ? "sat.config " key : "--" flag)
static int finish_transformer_(const SatConfig *c, int meta, Error *err);
static int finish_(SatConfig *c, int meta, Error *err) {
    c->attn.D = sat_D(c);
    c->attn.H = c->H;
    if (c->feat_L < 0 || (c->feat_L > 0 && (c->feat_D < 1 || c->feat_D > 65536 || c->feat_L > 65536)))
        return error_set(err, "model config: annotations %d x %d", c->feat_L, c->feat_D);
    if (c->image_size < 2 || c->image_size > 1024)
        return error_set(err, "%s: must be in [2, 1024], got %d", NAME_("image-size", "image_size"), c->image_size);
    if (c->feat_L == 0 && cnn_grid_size(&c->cnn, c->image_size) < 1)
        return error_set(err, "%s: %d is too small for %d pooling layers", NAME_("image-size", "image_size"),
                         c->image_size, c->cnn.n_layers);
    if (c->E < 1 || c->E > 8192)
        return error_set(err, "%s: must be in [1, 8192], got %d", NAME_("embed", "embed"), c->E);
    if (c->H < 1 || c->H > 8192)
        return error_set(err, "%s: must be in [1, 8192], got %d", NAME_("hidden", "hidden"), c->H);
    if (c->max_len < 1 || c->max_len > 256)
        return error_set(err, "%s: must be in [1, 256], got %d", NAME_("max-len", "max_len"), c->max_len);
    if (c->V < VOCAB_NSPECIAL + 1) return error_set(err, "vocabulary: %d ids is too few", c->V);
    if (c->attn.A < 1) return error_set(err, "%s: must be >= 1, got %d", NAME_("attn-dim", "attn_dim"), c->attn.A);
    if (c->hard && c->attn.kind == ATTN_NONE)
        return error_set(err, meta ? "sat.config hard=1: needs a scoring attention, not attention=none"
                                   : "--attention hard: needs a scoring kind");
    AttnKind k = c->attn.kind;
    if ((k == ATTN_DOT || k == ATTN_SCALED_DOT) && c->H != c->attn.D) {
        if (meta)
            return error_set(err, "sat.config attention=%s: needs hidden equal to the annotation size "
                                  "%d, has hidden=%d", attn_kind_name(k), c->attn.D, c->H);
        return error_set(err, "--attention %s: needs --hidden equal to the annotation size (the "
                              "last --channels entry, %d), got --hidden %d: add --hidden %d, or "
                              "end --channels with %d",
                         attn_kind_name(k), c->attn.D, c->H, c->attn.D, c->H);
    }
    if (k == ATTN_MULTIHEAD && (c->attn.heads < 1 || c->attn.A % c->attn.heads != 0))
        return error_set(err, "%s: %d must divide %s %d", NAME_("heads", "heads"), c->attn.heads,
                         NAME_("attn-dim", "attn_dim"), c->attn.A);
    // seq/attention.c CHECKs a window of at least one position each side (its Gaussian's
    // sigma is W / 2): refused here, not aborted there.
    if ((k == ATTN_LOCAL_MONOTONIC || k == ATTN_LOCAL_PREDICTIVE) && c->attn.window < 1)
        return error_set(err, "%s: must be >= 1 with --attention %s, got %d", NAME_("window", "window"),
                         attn_kind_name(k), c->attn.window);
    if (!(c->dropout >= 0.0f && c->dropout < 1.0f))
        return error_set(err, "%s: must be in [0, 1), got %g", NAME_("dropout", "dropout"), (double)c->dropout);
    if (!(c->lambda >= 0.0f))
        return error_set(err, "%s: must be >= 0, got %g", NAME_("lambda", "lambda"), (double)c->lambda);
    if (c->decoder == SAT_DECODER_TRANSFORMER) return finish_transformer_(c, meta, err);
    return 0;
}

// The Transformer decoder's checks (decoder = transformer), worded as finish_'s.
static int finish_transformer_(const SatConfig *c, int meta, Error *err) {
    const SatTfConfig *t = &c->tf;
    if (t->d_model < 4 || t->d_model > 8192 || t->d_model % 4)
        return error_set(err, "%s %d: must be a multiple of 4 in [4, 8192] (the annotations' 2-D "
                              "positions give half of it to the row, half to the column, each "
                              "in sine and cosine pairs)", NAME_("d-model", "tf_d_model"), t->d_model);
    if (t->heads < 1 || t->d_model % t->heads)
        return error_set(err, "%s %d: must divide %s %d", NAME_("heads", "tf_heads"), t->heads,
                         NAME_("d-model", "tf_d_model"), t->d_model);
    if (t->d_ff < 1 || t->d_ff > 65536)
        return error_set(err, "%s: must be in [1, 65536], got %d", NAME_("d-ff", "tf_d_ff"), t->d_ff);
    if (t->layers < 1 || t->layers > TRANSFORMER_MAX_LAYERS)
        return error_set(err, "%s: must be in [1, %d], got %d", NAME_("layers", "tf_layers"),
                         TRANSFORMER_MAX_LAYERS, t->layers);
    if (t->enc_layers < 0 || t->enc_layers > TRANSFORMER_MAX_LAYERS)
        return error_set(err, "%s: must be in [0, %d], got %d", NAME_("enc-layers", "tf_enc_layers"),
                         TRANSFORMER_MAX_LAYERS, t->enc_layers);
    if (t->positions < 2 || t->positions > 4096)
        return error_set(err, "%s: must be in [2, 4096], got %d", NAME_("positions", "tf_positions"),
                         t->positions);
    if (c->max_len + 1 > t->positions)
        return error_set(err, "%s %d: a caption of %d words takes %d positions (with <start>), "
                              "more than %s %d allow", NAME_("max-len", "max_len"), c->max_len,
                         c->max_len, c->max_len + 1, NAME_("positions", "tf_positions"), t->positions);
    if (t->map_layer < -1 || t->map_layer >= t->layers)
        return error_set(err, "%s: must be in [-1, %d] (-1: the last layer), got %d",
                         NAME_("map-layer", "tf_map_layer"), t->layers - 1, t->map_layer);
    if (!(t->dropout >= 0.0f && t->dropout < 1.0f))
        return error_set(err, "%s: must be in [0, 1), got %g", NAME_("dropout", "tf_dropout"),
                         (double)t->dropout);
    if (t->warmup < 0 || t->warmup > 100000000)
        return error_set(err, "%s: must be in [0, 100000000], got %d", NAME_("warmup", "tf_warmup"),
                         t->warmup);
    const TransformerConfig tc = sat_tf_decoder_config(c);
    if (transformer_config_check(&tc, err)) return error_prefix(err, "Transformer decoder");
    return 0;
}
#undef NAME_

int sat_config_finish(SatConfig *c, Error *err) { return finish_(c, 0, err); }

void sat_config_format(const SatConfig *c, char *buf, size_t n) {
    char ch[128] = {0};
    size_t k = 0;
    for (int i = 0; i < c->cnn.n_layers; i++)
        k += (size_t)snprintf(ch + k, sizeof ch - k, "%s%d", i ? "," : "", c->cnn.channels[i]);
    snprintf(buf, n,
             "image_size=%d channels=%s in_channels=%d embed=%d hidden=%d vocab=%d max_len=%d "
             "attention=%s attn_dim=%d heads=%d window=%d score=%s hard=%d beta_vector=%d "
             "query=%s lambda=%.9g dropout=%.9g entropy=%.9g baseline_decay=%.9g",
             c->image_size, ch, c->cnn.in_channels, c->E, c->H, c->V, c->max_len,
             attn_kind_name(c->attn.kind), c->attn.A, c->attn.heads, c->attn.window,
             attn_kind_name(c->attn.score), c->hard, c->beta_vector, sat_query_name(c->query), (double)c->lambda,
             (double)c->dropout, (double)c->entropy_weight, (double)c->baseline_decay);
    size_t used = strlen(buf);
    if (c->feat_L > 0 && used < n)
        snprintf(buf + used, n - used, " features=%dx%d", c->feat_L, c->feat_D);
    used = strlen(buf);
    const SatTfConfig *t = &c->tf;
    if (c->decoder == SAT_DECODER_TRANSFORMER && used < n)
        snprintf(buf + used, n - used,
                 " decoder=transformer tf_d_model=%d tf_heads=%d tf_d_ff=%d tf_layers=%d "
                 "tf_enc_layers=%d tf_positions=%d tf_post_ln=%d tf_map_layer=%d tf_dropout=%.9g "
                 "tf_warmup=%d",
                 t->d_model, t->heads, t->d_ff, t->layers, t->enc_layers, t->positions, t->post_ln,
                 t->map_layer, (double)t->dropout, t->warmup);
}

static int parse_int_(const char *v, int *out) {
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end || x < -1000000000L || x > 1000000000L) return -1;
    *out = (int)x;
    return 0;
}

static int parse_float_(const char *v, float *out) {
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !isfinite(x)) return -1;
    *out = (float)x;
    return 0;
}

int sat_config_parse(SatConfig *c, const char *text, Error *err) {
    sat_config_default(c);
    // Checkpoints written before the query key existed all used Xu et al.'s order.
    c->query = SAT_QUERY_PREVIOUS;
    char buf[2048];
    if (strlen(text) >= sizeof buf) return error_set(err, "model config: too long");
    strcpy(buf, text);
    char *save = NULL;
    for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) return error_set(err, "model config: '%s' is not key=value", tok);
        *eq = 0;
        const char *k = tok, *v = eq + 1;
        int bad = 0;
        if (!strcmp(k, "image_size")) bad = parse_int_(v, &c->image_size);
        else if (!strcmp(k, "channels")) {
            int in = c->cnn.in_channels;
            if (cnn_config_parse(&c->cnn, v, "channels", err)) return error_prefix(err, "model config");
            c->cnn.in_channels = in;
        } else if (!strcmp(k, "in_channels")) bad = parse_int_(v, &c->cnn.in_channels);
        else if (!strcmp(k, "embed")) bad = parse_int_(v, &c->E);
        else if (!strcmp(k, "hidden")) bad = parse_int_(v, &c->H);
        else if (!strcmp(k, "vocab")) bad = parse_int_(v, &c->V);
        else if (!strcmp(k, "max_len")) bad = parse_int_(v, &c->max_len);
        else if (!strcmp(k, "attention")) bad = attn_kind_parse(v, &c->attn.kind);
        else if (!strcmp(k, "attn_dim")) bad = parse_int_(v, &c->attn.A);
        else if (!strcmp(k, "heads")) bad = parse_int_(v, &c->attn.heads);
        else if (!strcmp(k, "window")) bad = parse_int_(v, &c->attn.window);
        else if (!strcmp(k, "score")) bad = attn_kind_parse(v, &c->attn.score);
        else if (!strcmp(k, "hard")) bad = parse_int_(v, &c->hard);
        else if (!strcmp(k, "beta_vector")) bad = parse_int_(v, &c->beta_vector);
        else if (!strcmp(k, "query")) bad = sat_query_parse(v, &c->query);
        else if (!strcmp(k, "lambda")) bad = parse_float_(v, &c->lambda);
        else if (!strcmp(k, "dropout")) bad = parse_float_(v, &c->dropout);
        else if (!strcmp(k, "entropy")) bad = parse_float_(v, &c->entropy_weight);
        else if (!strcmp(k, "baseline_decay")) bad = parse_float_(v, &c->baseline_decay);
        else if (!strcmp(k, "decoder")) bad = sat_decoder_parse(v, &c->decoder);
        else if (!strcmp(k, "tf_d_model")) bad = parse_int_(v, &c->tf.d_model);
        else if (!strcmp(k, "tf_heads")) bad = parse_int_(v, &c->tf.heads);
        else if (!strcmp(k, "tf_d_ff")) bad = parse_int_(v, &c->tf.d_ff);
        else if (!strcmp(k, "tf_layers")) bad = parse_int_(v, &c->tf.layers);
        else if (!strcmp(k, "tf_enc_layers")) bad = parse_int_(v, &c->tf.enc_layers);
        else if (!strcmp(k, "tf_positions")) bad = parse_int_(v, &c->tf.positions);
        else if (!strcmp(k, "tf_post_ln")) bad = parse_int_(v, &c->tf.post_ln);
        else if (!strcmp(k, "tf_map_layer")) bad = parse_int_(v, &c->tf.map_layer);
        else if (!strcmp(k, "tf_dropout")) bad = parse_float_(v, &c->tf.dropout);
        else if (!strcmp(k, "tf_warmup")) bad = parse_int_(v, &c->tf.warmup);
        else if (!strcmp(k, "features"))
            bad = sscanf(v, "%dx%d", &c->feat_L, &c->feat_D) != 2 || c->feat_L < 1 || c->feat_D < 1;
        else return error_set(err, "model config: unknown key '%s'", k);
        if (bad) return error_set(err, "model config: bad value '%s' for %s", v, k);
    }
    if (c->cnn.in_channels < 1 || c->cnn.in_channels > 4)
        return error_set(err, "model config: in_channels %d", c->cnn.in_channels);
    return finish_(c, 1, err);
}


DecoderConfig sat_decoder_config(const SatConfig *c) {
    DecoderConfig d = {.L = sat_L(c), .D = sat_D(c), .E = c->E, .H = c->H, .V = c->V,
                       .nb = sat_gate_size(c), .attn = c->attn,
                       .query = c->query == SAT_QUERY_CURRENT ? DECODER_QUERY_CURRENT
                                                              : DECODER_QUERY_PREVIOUS,
                       .dropout = c->dropout, .lambda = c->lambda,
                       .entropy_weight = c->entropy_weight};
    return d;
}

TransformerConfig sat_tf_decoder_config(const SatConfig *c) {
    const SatTfConfig *t = &c->tf;
    TransformerConfig tc = transformer_config_default(t->d_model, t->heads, t->d_ff, t->layers,
                                                      t->positions);
    tc.dropout = t->dropout;
    tc.post_ln = t->post_ln;
    tc.final_norm = !t->post_ln;
    return tc;
}

TransformerConfig sat_tf_encoder_config(const SatConfig *c) {
    TransformerConfig tc = sat_tf_decoder_config(c);
    tc.layers = c->tf.enc_layers > 0 ? c->tf.enc_layers : 1;
    return tc;
}

int sat_lr_warmup(const SatConfig *c) {
    return c->decoder == SAT_DECODER_TRANSFORMER ? c->tf.warmup : 0;
}
