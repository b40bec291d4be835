// sat_parallel.h: the training step of a captioner (models/sat.h), whichever its decoder: one
// forward and backward with the batch's rows sorted by caption length, and the same split
// over worker threads and over processes (MPI ranks, cli/train_dist.h). What differs between
// the decoders it asks the model's ops (SatDecoderOps: sorts_rows, the packed step weights,
// annotation_input, encoder_grad_floats).
#ifndef MODELS_SAT_PARALLEL_H
#define MODELS_SAT_PARALLEL_H

#include <stddef.h>
#include <stdint.h>

#include "models/sat.h"

// sat_forward (train mode) on images (B, per input: sat_input_floats), words (B, max_len)
// and lens (B), then m->grads zeroed and, when the loss is finite, sat_backward. With a
// decoder that sorts its rows (ops->sorts_rows: the LSTM) the rows are put in descending order
// of caption length first (a stable sort of a copy), so that no step computes a row whose
// caption has ended (see DecoderActs.active in models/decoder.h), and the step weights are
// packed for the step (ops->pack_step_weights). Each row keeps the noise of its place
// first + b in the caller's order, so the result equals sat_forward + sat_backward on the
// caller's order up to float summation order. The activations left in the decoder are in the
// sorted order. Not for m->annot_grad (its annotation gradients would be sorted too). The
// Transformer's rows stay in the caller's order.
void sat_forward_backward(SatLoss *out, SatModel *m, const float *images, const int *words,
                          const int *lens, int B, uint64_t seed, int first);

// Data parallelism: splits the batch (B rows) into contiguous shares over n_workers
// replicas (sat_replica_init, activations for ceil(B / n_workers)), runs
// sat_forward_backward of each share on its own thread (the caller's thread takes the
// first), and leaves in m->g the share-weighted sum of their gradients: the gradient of
// the whole batch's loss (up to float summation order). out: the batch's loss. Each row
// draws its randomness from its own stream, seeded by (seed, its index in the batch), as
// sat_forward does; so the noise does not depend on n_workers, only the float summation
// order does. The hard-attention baseline is carried through m. Deterministic for a given
// n_workers. n_workers <= 64.
void sat_forward_backward_parallel(SatLoss *out, SatModel *m, SatModel *workers, int n_workers,
                                   const float *images, const int *words, const int *lens, int B,
                                   uint64_t seed);
// Sums over the processes that share a batch (MPI ranks, cli/train_dist.h): sum(ctx, v)
// replaces *v, this process's part, with the sum of every process's part, added in a fixed
// order; 0, or -1 on failure (the reason kept in ctx). A collective: every process calls it
// at the same point.
// decoder_done (may be NULL), with a CNN encoder: called once per step by the caller's
// thread when grads [begin, end) (the decoder's part of the batch's gradient,
// float-share-weighted over the workers as below) is complete and the CNN's backward is
// about to run; it may start summing that part over the processes, to finish after the
// call returns (the overlap of the sum with the encoder's backward); 0, or -1 on failure.
// The CNN's part, [0, begin), is complete when sat_forward_backward_parallel_from returns.
typedef struct {
    int (*sum)(void *ctx, double *v);
    int (*decoder_done)(void *ctx, float *grads, size_t begin, size_t end);
    void *ctx;
} SatBatchSum;

// The Transformer captioner: with one worker the rows run on the model itself in the caller's
// order (sat_forward_backward); with replicas (sat_replica_init) as the LSTM's, each share
// sorted. Its dropout masks come from one stream per share seeded with (seed, first)
// (models/sat_transformer.h), so they depend on the split into shares.

// Gradient floats of the CNN encoder, first in m->grads (ops->encoder_grad_floats: 0 with
// features and with the Transformer captioner, whose gradient is summed in one part): the
// decoder's gradient is the rest, [sat_encoder_grad_floats(m), m->grads.numel).
size_t sat_encoder_grad_floats(const SatModel *m);

// 1 while the hard-attention baseline is not set (before the first training step): the
// step that sets it reduces the batch's mean reward across processes (across below).
int sat_first_hard_step(const SatModel *m);

// The same for rows first .. first + B - 1 of a larger batch: a process that runs one
// share of it (an MPI rank, cli/train_dist.h) gives the index of its share's first image,
// so that each image gets the noise it gets in one process. On the first hard-attention
// step (sat_first_hard_step) the baseline is the whole batch's mean reward, as with one
// worker: the workers' forwards run first, their mean rewards are added (weighted by
// their float shares of B), then across->sum weights and adds the processes' (NULL: this
// process has the whole batch), and the backwards start from that mean. workers NULL (not
// for hard attention): the rows run on m itself, sat_forward_backward, across unused.
// Returns 0, or -1 when across->sum failed (nothing computed).
int sat_forward_backward_parallel_from(SatLoss *out, SatModel *m, SatModel *workers,
                                       int n_workers, int first, const float *images,
                                       const int *words, const int *lens, int B, uint64_t seed,
                                       const SatBatchSum *across);

#endif
