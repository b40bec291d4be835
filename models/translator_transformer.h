// translator_transformer.h: the Transformer translator (Vaswani et al. 2017) on the blocks of
// seq/transformer.h, built as the captioner's Transformer decoder (models/sat_transformer.h)
// is, with a Transformer encoder over the source in place of the image grid.
//
// Model, for B pairs (source ids (B, S) with lengths s_b, target words (B, max_len) with n_b):
//   x = sqrt(d) E_src[src] + P(i)                  (B, S, d); P: seq/positions.h's sinusoids
//   m = encoder(x) over each row's s_b tokens      the memory (B, S, d)
//   y_t = sqrt(d) E_tgt[y_t] + P(t), y = <start>, w_1..w_n   (B, T, d), T = max n_b + 1
//   h = decoder(y, m): causal self-attention over positions [0, n_b], cross-attention over
//       the memory's first s_b rows, feed-forward; pre-LN with final norms (default) or post-LN
//   logits_t = h_t W_o^T + b_o                      (B, T, V): an output projection of its
//       own, not tied to the target embedding
//   loss = (1/B) sum_b sum_{t <= n_b} CE(logits_bt, target_bt), target w_1..w_n, <end>;
//       training with label_smoothing > 0: seq/loss.h's crossentropy_smoothed_*.
// One position table (positions rows; by default max(S, max_len + 1)) serves both sides. Dropout (dropout) acts
// inside the layers only; a training forward draws its masks from the rng it is given.
// Alignments: the cross-attention weights of decoder layer map_layer (the last when -1),
// mean over heads, (B, T, S).
// Decoding (tt_decode): greedy (beam 1) or beam search (seq/beam.h) over the incremental
// decoder's key/value caches (seq/transformer_decode.h), tf_decode_gather following each
// row's parent; words scored by log-softmax with every special but <end> forbidden, as the
// LSTM translator's (models/translator_beam.h).
//
// Memory: parameters and gradients are two Blocks with one layout ("src.embed",
// "encoder.*" under PyTorch's names, "tgt.embed", "decoder.*", "out.weight", "out.bias");
// activations one Block for batches of up to B.
#ifndef MODELS_TRANSLATOR_TRANSFORMER_H
#define MODELS_TRANSLATOR_TRANSFORMER_H

#include "core/block.h"
#include "core/error.h"
#include "core/rng.h"
#include "seq/transformer.h"
#include "seq/transformer_decode.h"

typedef struct {
    int Vs, V;                 // source and target vocabularies
    int S, max_len;            // source tokens at most, target words at most
    int d_model, heads, d_ff;
    int enc_layers, dec_layers;
    int post_ln;               // 0 pre-LN (default), 1 post-LN
    float dropout;             // inside the layers, training only
    float label_smoothing;     // training loss, in [0, 1)
    int map_layer;             // decoder layer of the alignments; -1: the last
    int positions;             // rows of the position table; 0: max(S, max_len + 1)
} TtConfig;

// 0, or -1 with one line: sizes below 1, heads not dividing d_model, a d_model the
// sinusoids cannot take (odd), layers out of range, dropout or smoothing outside [0, 1), a
// map layer past the decoder's, a source (S) or target (max_len + 1 positions) longer than
// the position table.
int tt_config_check(const TtConfig *c, Error *err);
// The encoder's and decoder's block configurations.
TransformerConfig tt_encoder_config(const TtConfig *c);
TransformerConfig tt_decoder_config(const TtConfig *c);
// Rows of the position table: positions, or max(S, max_len + 1) when it is 0.
int tt_positions(const TtConfig *c);

typedef struct {
    float *src_embed;          // (Vs, d)
    TfEncoderParams enc;
    float *tgt_embed;          // (V, d)
    TfDecoderParams dec;
    float *out_w, *out_b;      // (V, d), (V)
} TtParams;

typedef struct {
    float *pos;                    // (positions, d) the sinusoid table
    float *semb, *x, *dx, *dsemb;  // (B, S, d) source embeddings, encoder inputs, gradients
    TfStackActs enc;
    float *dmem;                   // (B, S, d)
    float *temb, *y, *dy, *dtemb;  // (B, T, d)
    TfStackActs dec;
    float *dh;                     // (B, T, d)
    float *logits, *probs, *dlogits;  // (B T, V)
    float *losses;                 // (B T)
    int *src, *src_len;            // (B S), (B)
    int *tok, *target, *steps;     // (B T), (B T) (-1 past the end), (B) n_b + 1
} TtActs;

// tt_decode's workspace, kept between calls while the rows and source positions fit.
typedef struct {
    int R, Sb;                 // rows (sentences x beam) it holds, source positions
    Block block;
    TfDecodeState s;
    float *x, *h, *logits;     // (R, d), (R, d), (R, V)
    float *alpha_hist;         // (max_len + 1, R, Sb)
    int *sent, *sent2, *len;   // (R) each row's sentence (last step's, this step's), its length
    int *mem_parent;           // (R) the row whose memory row r takes: r when it holds it already
    int rows_held;             // rows [0, rows_held) hold sent's memory (the last step's n)
    int *ints;                 // their memory
} TtDecodeWork;

typedef struct {
    TtConfig cfg;
    TransformerConfig tce, tcd;
    Block params, grads, acts_block;
    TtParams p, g;
    TtActs a;
    int B;                     // batch capacity
    int Bb, Sb, Tb;            // the last forward's rows, source and target positions
    int smoothed;              // the last forward's loss was smoothed (training)
    TtDecodeWork decode;       // tt_decode's, allocated by its first call
} TtModel;

// Registers and allocates parameters (PyTorch's initialisation; embeddings N(0, 1/d)),
// gradients and activations for batches of up to B. c must pass tt_config_check.
void tt_init(TtModel *m, const TtConfig *c, int B, Rng *rng);
void tt_free(TtModel *m);
// The one parameter layout (registered in b, not allocated).
void tt_params_layout(Block *b, TtParams *p, const TtConfig *c);

// Teacher-forced forward: src (B, S) ids padded to S with src_len (B) in [1, S]; words
// (B, max_len) with lens (B) in [0, max_len], any order; B <= the capacity. rng NULL:
// evaluation (no dropout, plain cross-entropy); else training (dropout masks from rng,
// label smoothing). Returns the loss per pair.
double tt_forward(TtModel *m, const int *src, const int *src_len, const int *words,
                  const int *lens, int B, Rng *rng);
// Accumulates the gradient of the last forward's loss into m->g.
void tt_backward(TtModel *m);
// The alignments of the last forward: (B, Tb, Sb), row b Tb + t, Sb = the source positions
// the forward ran (the longest source).
const float *tt_attention(const TtModel *m);

// Decodes B sentences (B <= the capacity) with beam width beam (1: greedy), hypotheses
// scored sum log p / len^length_alpha: out (B, max_len) words, out_len (B) their count,
// score (B) or NULL; alpha (max_len + 1, B, S) or NULL: the map layer's cross-attention of
// step t (which produced word t) for the kept words, zero past them (the LSTM translator's
// layout). Overwrites the last forward's activations.
void tt_decode(TtModel *m, const int *src, const int *src_len, int B, int beam,
               float length_alpha, int *out, int *out_len, float *score, float *alpha);

#endif
