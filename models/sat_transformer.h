// sat_transformer.h: the captioner with a Transformer decoder (Vaswani et al. 2017) in place
// of Show, Attend and Tell's attention LSTM, on the same encoder (the CNN, or a feature cache's
// annotations) and the same configuration (models/sat_config.h, decoder =
// SAT_DECODER_TRANSFORMER, sizes in SatConfig.tf): one of the two decoders behind
// models/sat.h's interface (sat_tf_ops; SatModel.dec is then a SatTfModel).
//
// Model, for a batch of B images and captions of n_b words (T = max n_b + 1 positions):
//   a = cnn(image)                                         annotations (B, L, D)
//   m_0 = a W_p^T + b_p + P2(l)                            (B, L, d); P2 below
//   m = encoder(m_0) with tf.enc_layers layers, else m_0   the memory (B, L, d)
//   x_t = sqrt(d) E[y_t] + P1(t), y = <start>, w_1..w_n    (B, T, d)
//   h = decoder(x, m): causal self-attention over positions [0, n_b], cross-attention over
//       the L memory rows, feed-forward; pre-LN with a final norm (default) or post-LN
//   logits_t = h_t W_o^T + b_o                              (B, T, V)
//   loss = (1/B) sum_b sum_{t <= n_b} CE(logits_bt, target_bt), target w_1..w_n, <end>
// P1 is seq/positions.h's sinusoid table over tf.positions rows; P2 gives the grid position
// l = (r, c) (row r = l / G, column c = l % G, G = ceil(sqrt(L))) the sinusoid of r in the
// first d / 2 channels and that of c in the last d / 2 (DETR's 2-D positions, Carion et al.
// 2020), so d is a multiple of 4. Dropout (tf.dropout) acts inside the layers only
// (seq/transformer.h); a training forward draws its masks from one stream seeded with
// rng_mix(seed, first).
// The attention maps: the cross-attention weights of layer tf.map_layer (the last when -1),
// the mean over heads, (B, T, L), as the LSTM's alpha for strips, overlays and grounding.
// Decoding (sat_tf_decode): greedy or beam search (seq/beam.h) over the incremental decoder's
// per-layer key/value caches (seq/transformer_decode.h), tf_decode_gather following each row's
// parent.
//
// Memory: parameters, gradients and the two Adam moments are four Blocks with one layout
// (the CNN's tensors first under "enc.", as SatModel's); activations one Block for batches of
// up to B (sat_tf_alloc_acts).
#ifndef MODELS_SAT_TRANSFORMER_H
#define MODELS_SAT_TRANSFORMER_H

#include <stdint.h>

#include "core/block.h"
#include "core/error.h"
#include "core/rng.h"
#include "models/sat.h"
#include "models/sat_config.h"
#include "seq/transformer.h"
#include "seq/transformer_decode.h"
#include "vision/cnn.h"

typedef struct {
    CnnParams cnn;             // none with features
    float *proj_w, *proj_b;    // (d, D), (d): annotations to the model size
    TfEncoderParams enc;       // tf.enc_layers > 0 only
    float *embed;              // (V, d)
    TfDecoderParams dec;
    float *out_w, *out_b;      // (V, d), (V)
} SatTfParams;

typedef struct {
    float *annot, *dannot;     // (B, L, D)
    float *mem0, *dmem0;       // (B, L, d) projected annotations plus their positions
    TfStackActs enc;           // over the grid (enc_layers > 0)
    float *dmem;               // (B, L, d) the memory's gradient
    float *emb, *demb;         // (B, T, d) word embeddings
    float *x, *dx;             // (B, T, d) the decoder's inputs
    TfStackActs dec;
    float *dh;                 // (B, T, d)
    float *logits, *probs, *dlogits;  // (B T, V)
    float *losses;             // (B T)
    float *pos1, *pos2;        // (positions, d) and (G, d / 2): the sinusoid tables
    int *tok, *target;         // (B T) inputs y_t and targets (-1 past a caption's end)
    int *steps;                // (B) n_b + 1
    int B, T;                  // the layout's batch and positions (max_len + 1)
} SatTfActs;

typedef struct {
    SatConfig cfg;
    TransformerConfig tc, tce;  // the decoder's and the encoder's (sat_tf_*_config)
    SatTfParams p, g, m, v;     // params, grads, Adam moments (views into the Blocks below)
    Block params, grads, adam_m, adam_v;
    Block acts_block;
    SatTfActs a;
    CnnWorkspace cnn_ws;
    int Bb, Tb;                 // batch and positions of the last forward
    const float *images;        // the last forward's images (alive until backward)
    int replica;                // 1: parameters borrowed from another model (sat_tf_replica_init)
    int annot_grad;             // with features: 1 makes the backward leave d loss / d annotations
                                // (B, L, D) in a.dannot (fine-tuning an encoder stage); 0: data
    int map_head;               // decoding's maps: that cross-attention head's alone; -1 (the
                                // default) the mean over heads (sat_tf_set_maps)
} SatTfModel;

// The Transformer decoder's operations (models/sat.h SatDecoderOps): each hands the call to
// the functions below on the model's SatTfModel. Its whole backward runs in backward_decoder
// (encoder_grad_floats 0: the gradient is complete in one part), it packs no step weights and
// a one-model training step keeps the rows in the caller's order (sorts_rows 0).
extern const SatDecoderOps sat_tf_ops;

// The decoding maps (caption eval --map-layer, --map-head): the cross-attention of decoder
// layer `layer` (-1: the last), of head `head` alone (-1: the mean over heads), for a model
// whose decoder is the Transformer (m->cfg and its SatTfModel's configuration both take the
// layer). Only what the maps read changes: the captions are the same. Ranges are the
// caller's to check (layer in [-1, layers), head in [-1, heads)).
void sat_tf_set_maps(SatModel *m, int layer, int head);

// Side of the grid the 2-D positions read the L annotations on: ceil(sqrt(L)).
int sat_tf_grid(int L);

// Registers and allocates parameters, gradients and Adam moments of a finished
// configuration (sat_config_finish, decoder = transformer); initialises with rng.
void sat_tf_init(SatTfModel *m, const SatConfig *cfg, Rng *rng);
// A replica for data parallelism: shares m's parameters, owns its gradients (zero) and, after
// sat_tf_alloc_acts, its activations; no Adam moments. sat_tf_free leaves the parameters.
void sat_tf_replica_init(SatTfModel *r, const SatTfModel *m);
// The one layout of parameters, gradients and moments (registered in b, not allocated).
void sat_tf_params_layout(Block *b, SatTfParams *p, const SatConfig *c);
// 0 when batches of up to B fit what the kernels index (every tensor at most DIMS_MAX floats),
// else -1 with one line naming the flags. Call before sat_tf_alloc_acts.
int sat_tf_check_sizes(const SatConfig *c, int B, Error *err);
// The same for decoding B images at beam width beam (beam_flag: "--beam", "--val-beam"): the
// rows' key/value caches (B beam, max_len + 1, d), word scores (B beam, V) and map history.
int sat_tf_check_decode_sizes(const SatConfig *c, int B, int beam, const char *beam_flag, Error *err);
// Activations for batches of up to B (call before sat_tf_forward and sat_tf_decode).
void sat_tf_alloc_acts(SatTfModel *m, int B);
void sat_tf_free(SatTfModel *m);

// Teacher-forced forward: images (B, per input: sat_input_floats), words (B, max_len), lens
// (B) in [0, max_len]; train = 1 draws dropout masks from rng_mix(seed, first). Returns the
// loss per image (everything included) and sets *ce (the same: no other term) and *tokens.
// Leaves logits (B Tb, V) in m->a.logits (row b Tb + t) for tests.
double sat_tf_forward(SatTfModel *m, const float *images, const int *words, const int *lens,
                      int B, int train, uint64_t seed, int first, double *tokens);
// Accumulates the gradient of the last forward's loss into m->g (and with the CNN, or
// annot_grad, sets a.dannot).
void sat_tf_backward(SatTfModel *m);
// The attention maps of the last forward: (B, Tb, L), row b Tb + t (see above).
const float *sat_tf_attention(const SatTfModel *m);

// Captions: tokens (B, max_len), lens (B), alphas (B, max_len, L) each emitted word's
// cross-attention map (or NULL), beam width beam (1 = greedy), scores normalised by
// length^length_alpha. Encodes in chunks of the activations' batch.
void sat_tf_decode(SatTfModel *m, int *tokens, int *lens, float *alphas, const float *images,
                   int B, int beam, float length_alpha);

// The decoding context sat_tf_decode passes to beam_search (exposed for tests).
typedef struct {
    SatTfModel *m;
    int B, R, t;           // images, rows (B beam), steps taken
    Block block;
    TfDecodeState s;
    float *mem;            // (B, L, d) the images' memory
    float *x, *h, *logits; // (R, d), (R, d), (R, V)
    float *alpha_hist;     // (max_len + 1, R, L)
} SatTfDecodeCtx;

void sat_tf_decode_ctx_init(SatTfDecodeCtx *d, SatTfModel *m, const float *images, int B, int beam);
void sat_tf_decode_ctx_free(SatTfDecodeCtx *d);
// BeamStepFn over SatTfDecodeCtx.
void sat_tf_beam_step(void *ctx, int n, const int *parent, const int *token, float *logprobs);

#endif
