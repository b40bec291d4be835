// transformer.h: the Transformer's encoder and decoder layers and their stacks (Vaswani et al.
// 2017), as PyTorch's nn.TransformerEncoderLayer / nn.TransformerDecoderLayer (batch_first,
// activation relu or gelu) and nn.TransformerEncoder / nn.TransformerDecoder compute them.
//
// States are (B, T, d) rows, N = B T of them. A sub-layer f (self-attention, cross-attention,
// feed-forward) sits in a residual with its layer norm, pre-LN (the default; PyTorch's
// norm_first=True) or post-LN (the paper's; norm_first=False):
//     pre-LN   y = x + drop(f(LN(x)))          post-LN   y = LN(x + drop(f(x)))
// Encoder layer: self-attention (keys masked past lengths), then the feed-forward layer.
// Decoder layer: causal self-attention (and target lengths), cross-attention over the memory
// (B, S, d) masked past memory lengths, then the feed-forward layer. Stacks run N layers and,
// when final_norm is set, one layer norm after the last (PyTorch's TransformerEncoder(norm=)),
// which pre-LN stacks need: their layers' outputs are never normalised.
// Dropout (rate c->dropout, inverted: kept values scaled by 1 / (1 - rate)) acts where
// PyTorch's layers put it: dropout1/2/3 (each sub-layer's output), inside the feed-forward
// layer after the activation, and on the attention probabilities (seq/mha.h); the forward
// draws the masks from rng, and NULL rng (or rate 0) means none (evaluation).
// Positions (seq/positions.h) and embeddings are the models' part; the config carries the
// position kind and table length so that one check refuses what the blocks cannot run.
//
// Parameters under PyTorch's names, PREFIX.layers.I.NAME with NAME one of self_attn.*,
// multihead_attn.* (decoder: the cross-attention; seq/mha.h's four tensors), linear1.weight
// (d_ff, d), linear1.bias, linear2.weight (d, d_ff), linear2.bias, norm1/2/3.weight and .bias,
// and PREFIX.norm.weight / .bias for the final norm: a PyTorch state_dict maps one to one.
// Activations (what backward needs, and its scratch) are views registered in a Block too.
//
// The cross-attention weights (mean over heads, (B, T, S)) of each decoder layer stay in its
// activations after a forward: transformer_decoder_cross_weights. Decoding one position at a
// time over key/value caches: seq/transformer_decode.h.
#ifndef SEQ_TRANSFORMER_H
#define SEQ_TRANSFORMER_H

#include "core/block.h"
#include "core/error.h"
#include "core/rng.h"
#include "seq/ffn.h"
#include "seq/mha.h"
#include "seq/positions.h"

#define TRANSFORMER_MAX_LAYERS 32

typedef struct {
    int d_model, heads, d_ff, layers;
    float dropout;      // in [0, 1)
    int post_ln;        // 0: pre-LN (default), 1: post-LN
    int final_norm;     // stacks: a layer norm after the last layer (default: pre-LN's 1)
    FfnActivation act;  // FFN_RELU default
    float ln_eps;       // LAYERNORM_EPS default
    PosKind positions;  // what the model adds to its embeddings (checked here)
    int max_len;        // positions the table holds
} TransformerConfig;

// Pre-LN, final norm, ReLU, dropout 0.1, sinusoidal positions over max_len.
TransformerConfig transformer_config_default(int d_model, int heads, int d_ff, int layers,
                                             int max_len);
// 0, or -1 with one line: heads that do not divide d_model, a d_model the positions cannot
// take (sinusoidal: even, >= 2), d_ff < 1, layers outside [1, TRANSFORMER_MAX_LAYERS], a
// dropout outside [0, 1), max_len < 1.
int transformer_config_check(const TransformerConfig *c, Error *err);
// 0, or -1 when a sequence of T positions is longer than max_len.
int transformer_check_length(const TransformerConfig *c, int T, Error *err);
// 0, or -1 when a tensor of the activations for B sequences of T (memory S) positions
// passes DIMS_MAX floats (core/dims.h).
int transformer_check_sizes(const TransformerConfig *c, int B, int T, int S, Error *err);

typedef struct {
    float *weight, *bias;  // (d), (d)
} LayerNormParams;

// One residual sub-layer's record over N rows of d.
typedef struct {
    float *normed;       // (N, d) pre-LN: LN(x), the sub-layer's input
    float *mean, *rstd;  // (N) the layer norm's statistics
    float *fout;         // (N, d) the sub-layer's output
    float *mask;         // (N, d) dropout factors
    float *sum;          // (N, d) post-LN: x + drop(fout), the norm's input
    float *out;          // (N, d)
} TfResidual;

// Backward scratch shared by a layer's sub-layers.
typedef struct {
    float *dfout, *dnormed, *dsum;  // (N, d)
    float *dmid[2];                 // (N, d): the gradients between sub-layers
} TfScratch;

typedef struct {
    MhaParams self_attn;
    FfnParams ffn;
    LayerNormParams norm1, norm2;
} TfEncoderLayerParams;

typedef struct {
    MhaParams self_attn, cross_attn;
    FfnParams ffn;
    LayerNormParams norm1, norm2, norm3;
} TfDecoderLayerParams;

typedef struct {
    TfResidual r[3];           // encoder: attention, FFN; decoder: self, cross, FFN
    MhaActs attn[2];           // encoder: [0]; decoder: self, cross
    float *attn_drop[2];       // (B, heads, T, S) their probabilities' dropout factors
    float *ffn_pre, *ffn_hidden, *ffn_mask, *dffn_hidden;  // (N, d_ff)
    TfScratch s;
    int dropped;               // the last forward drew dropout masks
} TfLayerActs;

typedef struct {
    TfEncoderLayerParams layer[TRANSFORMER_MAX_LAYERS];
    LayerNormParams norm;  // final_norm only
} TfEncoderParams;

typedef struct {
    TfDecoderLayerParams layer[TRANSFORMER_MAX_LAYERS];
    LayerNormParams norm;
} TfDecoderParams;

// A stack's activations for (B, T) [and memory S]: its layers', the final norm's, and the
// output (B, T, d) the stack's forward leaves.
typedef struct {
    TfLayerActs layer[TRANSFORMER_MAX_LAYERS];
    float *norm_mean, *norm_rstd, *norm_out;  // final_norm only: (N), (N), (N, d)
    float *out;                               // the stack's output: norm_out or the last layer's
    float *dlayer[2];                         // (N, d) the gradients between layers
    int B, T, S;
} TfStackActs;

// ---- single layers ---------------------------------------------------------------------------

void tf_encoder_layer_params_layout(Block *b, TfEncoderLayerParams *p, const TransformerConfig *c,
                                    const char *prefix);
void tf_decoder_layer_params_layout(Block *b, TfDecoderLayerParams *p, const TransformerConfig *c,
                                    const char *prefix);
// PyTorch's initialisation (attention: seq/mha.h; linear: uniform +-1/sqrt(fan_in); norms 1, 0).
void tf_encoder_layer_params_init(TfEncoderLayerParams *p, const TransformerConfig *c, Rng *rng);
void tf_decoder_layer_params_init(TfDecoderLayerParams *p, const TransformerConfig *c, Rng *rng);
// Activations of one layer for B sequences of T positions (decoder: memory S; encoder: S = T).
// Sizes past DIMS_MAX floats are a programming error here: check with transformer_check_sizes.
void tf_encoder_layer_acts_layout(Block *a, TfLayerActs *x, const TransformerConfig *c, int B,
                                  int T, const char *prefix);
void tf_decoder_layer_acts_layout(Block *a, TfLayerActs *x, const TransformerConfig *c, int B,
                                  int T, int S, const char *prefix);

// Output in x->r[1].out (B, T, d); inp (B, T, d); lengths (B) in [0, T] or NULL; rng: dropout
// masks, or NULL for none.
void tf_encoder_layer_forward(TfLayerActs *x, const float *inp, const int *lengths,
                              const TfEncoderLayerParams *p, const TransformerConfig *c, Rng *rng,
                              int B, int T);
// Accumulates dinp (B, T, d) and dp from dout (B, T, d).
void tf_encoder_layer_backward(float *dinp, TfEncoderLayerParams *dp, const float *dout,
                               TfLayerActs *x, const float *inp, const int *lengths,
                               const TfEncoderLayerParams *p, const TransformerConfig *c, int B,
                               int T);
// Output in x->r[2].out (B, T, d); inp (B, T, d); mem (B, S, d); tgt_lengths (B) in [0, T] or
// NULL; mem_lengths (B) in [0, S] or NULL.
void tf_decoder_layer_forward(TfLayerActs *x, const float *inp, const float *mem,
                              const int *tgt_lengths, const int *mem_lengths,
                              const TfDecoderLayerParams *p, const TransformerConfig *c, Rng *rng,
                              int B, int T, int S);
// Accumulates dinp (B, T, d), dmem (B, S, d) (or not, NULL) and dp from dout (B, T, d).
void tf_decoder_layer_backward(float *dinp, float *dmem, TfDecoderLayerParams *dp,
                               const float *dout, TfLayerActs *x, const float *inp,
                               const float *mem, const int *tgt_lengths, const int *mem_lengths,
                               const TfDecoderLayerParams *p, const TransformerConfig *c, int B,
                               int T, int S);

// ---- stacks of c->layers ---------------------------------------------------------------------

void tf_encoder_params_layout(Block *b, TfEncoderParams *p, const TransformerConfig *c,
                              const char *prefix);
void tf_decoder_params_layout(Block *b, TfDecoderParams *p, const TransformerConfig *c,
                              const char *prefix);
void tf_encoder_params_init(TfEncoderParams *p, const TransformerConfig *c, Rng *rng);
void tf_decoder_params_init(TfDecoderParams *p, const TransformerConfig *c, Rng *rng);
void tf_encoder_acts_layout(Block *a, TfStackActs *x, const TransformerConfig *c, int B, int T,
                            const char *prefix);
void tf_decoder_acts_layout(Block *a, TfStackActs *x, const TransformerConfig *c, int B, int T,
                            int S, const char *prefix);
// Output in x->out (B, T, d). The sizes are those of the acts' layout.
void tf_encoder_forward(TfStackActs *x, const float *inp, const int *lengths,
                        const TfEncoderParams *p, const TransformerConfig *c, Rng *rng);
void tf_encoder_backward(float *dinp, TfEncoderParams *dp, const float *dout, TfStackActs *x,
                         const float *inp, const int *lengths, const TfEncoderParams *p,
                         const TransformerConfig *c);
void tf_decoder_forward(TfStackActs *x, const float *inp, const float *mem,
                        const int *tgt_lengths, const int *mem_lengths, const TfDecoderParams *p,
                        const TransformerConfig *c, Rng *rng);
void tf_decoder_backward(float *dinp, float *dmem, TfDecoderParams *dp, const float *dout,
                         TfStackActs *x, const float *inp, const float *mem,
                         const int *tgt_lengths, const int *mem_lengths, const TfDecoderParams *p,
                         const TransformerConfig *c);
// Layer l's cross-attention weights (B, T, S), mean over heads, of the last decoder forward.
const float *transformer_decoder_cross_weights(const TfStackActs *x, int layer);

// A decoder's teacher-forced inputs and targets for B rows of words (B, max_len) with lens
// (B) in [0, max_len]: row b's positions 0..n_b read <start>, w_1..w_n and predict w_1..w_n,
// <end>; later positions read <pad> and predict -1 (nothing). tok and target are (B, T),
// steps (B) = n_b + 1. Returns T, the longest row's n + 1.
int transformer_pack_targets(int *tok, int *target, int *steps, const int *words,
                             const int *lens, int B, int max_len);

#endif
