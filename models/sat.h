// sat.h: the captioner of Show, Attend and Tell (Xu et al. 2015): an encoder (a CNN, or a
// feature cache's annotations) and a decoder that writes the caption over the annotations,
// behind one interface whatever the decoder: SatModel holds the configuration, the decoder's
// operations (SatDecoderOps, a table of function pointers chosen once from cfg.decoder) and
// the decoder's own state, opaque here. The two decoders:
//   the attention LSTM (models/sat_lstm.h, the paper's: on the shared decoder of
//     models/decoder.h, with its training terms: doubly stochastic regulariser, hard
//     attention by REINFORCE; decoding in models/sat_lstm_decode.h),
//   the Transformer decoder (models/sat_transformer.h, cfg.decoder =
//     SAT_DECODER_TRANSFORMER).
// Beside it: the configuration (models/sat_config.h), the training step over sorted rows,
// threads and processes (models/sat_parallel.h) and decoding, greedy or by beam search
// (models/sat_decode.h); each calls the decoder through m->ops, so that the programs
// (cli/caption_*) never ask which decoder a model has.
//
// Memory: each decoder keeps its parameters, gradients and two Adam moments in four Blocks
// with one layout (the CNN's tensors first, under "enc."), and SatModel.params, grads, adam_m
// and adam_v are copies of their descriptors (the same data, freed through the decoder), so
// that the optimiser, checkpoints and the weight average see one kind of model. Activations
// are one Block sized for (max_len + 1, batch) (sat_alloc_acts), so the training step does no
// allocation; decoding allocates its workspace once per call for (B images x beam rows).
// Limits: captions of at most max_len words; images square (3, S, S); B <= the activations'
// batch.
#ifndef MODELS_SAT_H
#define MODELS_SAT_H

#include <stddef.h>
#include <stdint.h>

#include "core/block.h"
#include "core/error.h"
#include "core/rng.h"
#include "models/sat_config.h"

typedef struct {
    double loss;       // the objective (per image), everything included
    double ce;         // summed cross-entropy / B
    double tokens;     // number of target tokens
    double ds;         // doubly stochastic term / B (lambda included)
    double reward;     // hard: mean log-likelihood reward
} SatLoss;

typedef struct SatModel SatModel;

// A decoder of the captioner: what SatModel's functions below (and models/sat_parallel.c,
// models/sat_decode.c) call. Each takes the model, whose m->dec is the decoder's state.
typedef struct {
    SatDecoderKind kind;
    // sat_check_sizes and sat_check_decode_sizes of a configuration of this decoder.
    int (*check_sizes)(const SatConfig *c, int B, Error *err);
    int (*check_decode_sizes)(const SatConfig *c, int B, int beam, const char *beam_flag,
                              Error *err);
    // m->cfg set: allocates the state (m->dec) with its parameters, gradients and moments,
    // initialised from rng, and lends their descriptors to m->params, grads, adam_m, adam_v.
    void (*init)(SatModel *m, Rng *rng);
    // r->cfg set: a state sharing m's parameters (r->params = m->params), with gradients of
    // its own (r->grads) and no moments.
    void (*replica_init)(SatModel *r, const SatModel *m);
    void (*alloc_acts)(SatModel *m, int B);  // replaces a former call's activations
    void (*free)(SatModel *m);               // the state and what it owns (not a replica's
                                             // parameters)
    // sat_forward (below): the loss of the batch, every activation kept for the backward.
    void (*forward)(SatModel *m, SatLoss *out, const float *images, const int *words,
                    const int *lens, int B, int train, uint64_t seed, int first);
    // The backward in two halves: after backward_decoder every gradient but the first
    // encoder_grad_floats(m) floats of m->grads is complete (and the hard baseline updated);
    // backward_encoder completes those. A decoder that returns 0 there does its whole
    // backward in the first half.
    void (*backward_decoder)(SatModel *m);
    void (*backward_encoder)(SatModel *m);
    size_t (*encoder_grad_floats)(const SatModel *m);
    // d loss / d annotations (B, L, D) of the last backward (sat_annotation_grads).
    const float *(*annotation_grads)(const SatModel *m);
    // With features: where the next forward reads its annotations from when they are written
    // there first (a training step's sorted copy goes straight into it), or NULL (none: the
    // step keeps a copy of its own).
    float *(*annotation_input)(SatModel *m);
    // 1: a one-model training step (sat_forward_backward) sorts the batch's rows by caption
    // length (the LSTM's steps then compute no finished row); 0: the rows stay in the caller's
    // order. The shares of a data-parallel step are sorted either way.
    int sorts_rows;
    // The step weights a training step may pack once for all its workers (the LSTM's packed
    // products, core/gemm_packed.h): pack_step_weights packs m's own (threads: how many may
    // share the work), lend_step_weights points w's step at from's packs, or with from NULL
    // back at its plain weights. Nothing for a decoder without packs.
    void (*pack_step_weights)(SatModel *m, int threads);
    void (*lend_step_weights)(SatModel *w, const SatModel *from);
    // sat_decode (models/sat_decode.h).
    void (*decode)(SatModel *m, int *tokens, int *lens, float *alphas, const float *images,
                   int B, int beam, float length_alpha);
} SatDecoderOps;

struct SatModel {
    SatConfig cfg;
    const SatDecoderOps *ops;  // the decoder of cfg.decoder (sat_decoder_ops)
    void *dec;                 // its state (models/sat_lstm.h SatLstm, models/sat_transformer.h
                               // SatTfModel)
    Block params, grads, adam_m, adam_v;  // the decoder's Blocks' descriptors (see above); a
                                          // replica's adam_m, adam_v are empty
    int acts_batch;            // the activations' batch (sat_alloc_acts; 0 before): what
                               // callers chunk their batches by
    int Bb;                    // batch of the last forward
    float baseline;            // hard attention's moving-average reward (a checkpoint's
    int baseline_set;          // training state, whichever decoder: 0 unless hard)
    double sample_logp;        // hard: the last training forward's sum over rows and steps of
                               // the sampled locations' log alpha (0 otherwise)
    int annot_grad;            // with features: 1 makes sat_backward also leave d loss /
                               // d annotations (B, L, D) for sat_annotation_grads (fine-tuning
                               // an encoder stage, vision/encoder_stage.h); 0 (default):
                               // annotations are data
    // The training step's copy of its batch in descending order of caption length
    // (models/sat_parallel.c): images (cap, per) (NULL where the decoder's annotation_input
    // takes features), words (cap, max_len), lens, and each row's place in the caller's batch
    // (cap); grown as needed, freed by sat_free.
    float *sorted_images;
    int *sorted_ints;
    int sorted_cap;
    const int *row_ids;        // non-NULL during that step: row b's noise stream is image
                               // row_ids[b]'s (else first + b)
};

// The decoder of a kind (SAT_DECODER_LSTM: models/sat_lstm.h, SAT_DECODER_TRANSFORMER:
// models/sat_transformer.h).
const SatDecoderOps *sat_decoder_ops(SatDecoderKind kind);

// Allocates and initialises, with rng, the model of a finished configuration (its decoder's
// parameters, gradients and Adam moments).
void sat_init(SatModel *m, const SatConfig *cfg, Rng *rng);
// A replica for data parallelism: shares m's parameters, owns its gradients and activations
// (call sat_alloc_acts on it); no Adam moments. Free with sat_free (which leaves the shared
// parameters alone).
void sat_replica_init(SatModel *r, const SatModel *m);
// 0 when batches of up to B fit what the kernels index: every parameter and activation
// tensor holds at most DIMS_MAX floats (core/dims.h), and so does each buffer of the CNN's
// workspace (cnn_check_sizes); else -1 with one line naming the flags whose product passes
// (e.g. --batch x annotation positions x --attn-dim). Call before sat_init and
// sat_alloc_acts: both CHECK nothing of this and would index past 2^31.
int sat_check_sizes(const SatConfig *c, int B, Error *err);
// Activations for batches of up to B (call before sat_forward and sat_decode; a second call
// replaces the first's).
void sat_alloc_acts(SatModel *m, int B);
// Frees what sat_init or sat_replica_init and sat_alloc_acts allocated (nothing for a model
// never initialised, all zero).
void sat_free(SatModel *m);

// Teacher-forced forward. images (B, 3, S, S), or with features annotations (B, L, D); words
// (B, max_len) word ids (no <start> or <end>), lens (B) in [0, max_len]. train = 1 enables
// dropout and hard sampling; train = 0 uses the expected context for hard attention (seed and
// first unused). Row b is image first + b of a larger batch (0 when this call has the whole
// batch): the LSTM's row b draws its dropout masks, then its hard-attention samples, from one
// stream of its own seeded with rng_mix(seed, first + b), whatever the split of the batch into
// calls (workers, ranks) and the batch's longest caption; the Transformer's masks come from
// one stream seeded with rng_mix(seed, first). Keeps every activation for sat_backward.
void sat_forward(SatModel *m, SatLoss *out, const float *images, const int *words,
                 const int *lens, int B, int train, uint64_t seed, int first);
// Accumulates the gradient of out->loss into m->grads (and updates the hard baseline). The
// images given to sat_forward must still be valid.
void sat_backward(SatModel *m);
// sat_backward's two halves, for a step that overlaps the encoder's with other work
// (models/sat_parallel.h): the decoder's, after which every parameter's gradient but the
// encoder's first sat_encoder_grad_floats(m) floats is complete (and the hard baseline
// updated), then the encoder's from the annotations' gradient (nothing with features, or with
// the Transformer, whose first half does it all).
void sat_backward_decoder(SatModel *m);
void sat_backward_encoder(SatModel *m);
// d loss / d annotations (B, L, D) of the last sat_backward (the CNN's input gradient, or with
// features and annot_grad the annotations'), whichever decoder.
const float *sat_annotation_grads(const SatModel *m);

#endif
