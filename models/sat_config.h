// sat_config.h: the configuration of a Show, Attend and Tell model (models/sat.h): its
// sizes, attention kind and training options, their defaults and checks, the sizes derived
// from them, and the "key=value" text a checkpoint keeps them in.
#ifndef MODELS_SAT_CONFIG_H
#define MODELS_SAT_CONFIG_H

#include <stddef.h>

#include "core/error.h"
#include "models/decoder.h"
#include "seq/attention.h"
#include "seq/transformer.h"
#include "vision/cnn.h"

// Which LSTM state queries the attention of step t (models/sat_lstm.h).
typedef enum { SAT_QUERY_PREVIOUS = 0, SAT_QUERY_CURRENT = 1 } SatQuery;

// Which decoder writes the captions: the attention LSTM (models/sat_lstm.h, the default, and what
// a checkpoint without a decoder key holds) or the Transformer (models/sat_transformer.h).
typedef enum { SAT_DECODER_LSTM = 0, SAT_DECODER_TRANSFORMER = 1 } SatDecoderKind;

// The Transformer decoder's sizes (models/sat_transformer.h); unused by the LSTM.
typedef struct {
    int d_model;     // model size (default 128); a multiple of 4 (the 2-D positions)
    int heads;       // attention heads (4), dividing d_model
    int d_ff;        // feed-forward hidden size (256)
    int layers;      // decoder layers (2)
    int enc_layers;  // encoder layers over the annotation grid (0: the projection only)
    int positions;   // word positions the table holds (64): --max-len + 1 at most
    int post_ln;     // 1: post-LN layers (the paper's); 0: pre-LN with a final norm
    int map_layer;   // decoder layer whose cross-attention makes the maps (-1: the last)
    float dropout;   // dropout in every layer (0.1)
    int warmup;      // > 0: training's learning rate follows lr_noam (core/adam.h) with this
                     // warm-up, peaking at --lr, instead of the exponential decay; 0: off
} SatTfConfig;

typedef struct {
    int image_size;       // S (default 64); with features, the encoder's input size
    CnnConfig cnn;        // encoder layers (default 32, 64, 128); unused with features
    int feat_L, feat_D;   // > 0: decoder only, on given annotations (B, feat_L, feat_D)
                          // (a frozen pretrained encoder's, datasets/featcache.h): no CNN
    int E, H;             // embedding, LSTM hidden (128, 256)
    int V;                // vocabulary size (set from the data)
    int max_len;          // caption words at most (16); steps T = max_len + 1
    AttnConfig attn;      // kind, A (attn-dim 128), heads, window; D, H filled by sat_config_finish
    int hard;             // 1: stochastic hard attention (REINFORCE)
    int beta_vector;      // 1: gate beta is a D-vector; 0: scalar
    SatQuery query;       // SAT_QUERY_CURRENT (default) or _PREVIOUS (Xu et al. 2015)
    float lambda;         // doubly stochastic weight (3; Xu et al.'s code used 1)
    float dropout;        // dropout probability on h before the deep output (0 = off)
    float entropy_weight; // hard only (0.002, arctic-captions)
    float baseline_decay; // hard only (0.9)
    SatDecoderKind decoder;  // SAT_DECODER_LSTM (default) or _TRANSFORMER
    SatTfConfig tf;          // the Transformer's (decoder = SAT_DECODER_TRANSFORMER)
} SatConfig;

// "lstm" / "transformer" and back (0, or -1 for an unknown name).
const char *sat_decoder_name(SatDecoderKind k);
int sat_decoder_parse(const char *name, SatDecoderKind *k);

// "previous" / "current" and back (0, or -1 for an unknown name).
const char *sat_query_name(SatQuery q);
int sat_query_parse(const char *name, SatQuery *q);

// The defaults of bin/caption (V left 0).
void sat_config_default(SatConfig *c);
// Derived sizes: attn.D = cnn dim, attn.H = H. Validates (fails naming the field).
int sat_config_finish(SatConfig *c, Error *err);
static inline int sat_L(const SatConfig *c) {
    if (c->feat_L > 0) return c->feat_L;
    int g = cnn_grid_size(&c->cnn, c->image_size);
    return g * g;
}
static inline int sat_D(const SatConfig *c) { return c->feat_L > 0 ? c->feat_D : cnn_dim(&c->cnn); }
// Size of the gate beta: D with a vector gate, else 1.
static inline int sat_gate_size(const SatConfig *c) { return c->beta_vector ? sat_D(c) : 1; }
// The shared decoder's configuration (models/decoder.h) of a finished configuration.
DecoderConfig sat_decoder_config(const SatConfig *c);
// The Transformer decoder's stack configuration (decoder layers, the word positions' table of
// tf.positions), and its encoder's over the grid (tf.enc_layers layers; 1 when there are none,
// so that the configuration is always a valid one).
TransformerConfig sat_tf_decoder_config(const SatConfig *c);
TransformerConfig sat_tf_encoder_config(const SatConfig *c);
// The warm-up steps of training's learning-rate schedule (lr_noam, core/adam.h): the
// Transformer's tf.warmup; 0 (the exponential decay) for the LSTM, which has none.
int sat_lr_warmup(const SatConfig *c);
// Side of the annotation grid (L = G G): for attention maps over the image.
static inline int sat_grid(const SatConfig *c) {
    if (c->feat_L <= 0) return cnn_grid_size(&c->cnn, c->image_size);
    int g = 1;
    while ((g + 1) * (g + 1) <= c->feat_L) g++;
    return g;
}
// Floats of one input of sat_forward / sat_decode: an image (C, S, S), or with features
// its annotations (L, D).
static inline size_t sat_input_floats(const SatConfig *c) {
    return c->feat_L > 0 ? (size_t)c->feat_L * c->feat_D
                         : (size_t)c->cnn.in_channels * c->image_size * c->image_size;
}

// "key=value" pairs separated by spaces (for checkpoint metadata) and back. A Transformer's
// adds decoder=transformer and its sizes (tf_*); an LSTM's has no decoder key (so its text is
// what it was before the Transformer came), and text without one parses as an LSTM's. The parser
// rejects unknown keys and bad values with one line naming the key as the metadata holds
// it ("sat.config max_len: must be in [1, 256], got 300"), never a flag (that is
// sat_config_finish's wording, for a configuration made from flags).
void sat_config_format(const SatConfig *c, char *buf, size_t n);
int sat_config_parse(SatConfig *c, const char *text, Error *err);

#endif
