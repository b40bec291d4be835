// draw_eval.h: DRAW's bound on a split, as draw eval reports it and draw train validates
// with: the mean negative log-likelihood bound (reconstruction + KL, nats per image), and
// with K > 1 samples per image the importance-weighted NLL estimate.
//
// Each image's noise comes from a stream of its own seeded with (seed, its index), so a
// figure does not depend on the batch, the threads or the ranks it was computed with:
// under mpirun each rank runs its share of every batch, and N ranks of one thread give the
// bits of one process of N threads.
#ifndef CLI_DRAW_EVAL_H
#define CLI_DRAW_EVAL_H

#include <stdbool.h>
#include <stdint.h>

#include "cli/draw_eval_record.h"
#include "core/dist.h"
#include "core/error.h"
#include "datasets/mnist.h"
#include "models/draw.h"

#define DRAW_EVAL_NOISE_SEED 1u  // default noise seed of eval and of the validation bound

// eps (T, count, z): the noise of images first .. first + count - 1, each image's T z
// normals from a stream of its own, seeded with (seed, its index): an image's noise does
// not depend on the batch, the rank or the worker it is run in.
void draw_share_noise(float *eps, const DrawConfig *c, int first, int count, uint64_t seed);

// Mean bound (and parts) over the images evaluated; nll_iw NAN when K = 1. The standard
// errors are those of the means over the images (each image's figure: its bound averaged
// over the K passes, its IW estimate): the sample standard deviation over sqrt(images),
// NAN for one image. They measure how far another set of images as large might move the
// figure, the noise of the samples included.
typedef struct {
    double bound, recon, kl, nll_iw;
    double bound_se, nll_iw_se;
    int images;
} DrawEvalResult;

// What draw_evaluate needs besides the model and the data: the ranks (each runs its share
// of every batch), the workers (for ceil(B / ranks) images) and scratch for a batch of B.
// Training lays one over its own workers and buffers (no allocation of its own).
typedef struct {
    Dist *dist;
    DrawWorker *w;
    int n_workers;
    int B;
    float *eps;     // (T, ceil(B / ranks), Z): the noise of this rank's share of a batch
    double *logw;   // (K, B)
    bool progress;  // a progress line on rank 0's stderr (draw eval; not validation's)
    // draw eval --per-image (else NULL), on every rank: the images rank 0 read from the
    // file are shared and not evaluated again, and rank 0 saves the figures after each batch.
    DrawEvalRecord *record;
} DrawEvalScratch;

// Workers for `threads` threads and scratch for batches of B with K samples per image.
void draw_eval_scratch_alloc(DrawEvalScratch *e, Dist *d, int threads, const DrawConfig *c,
                             int B, int K);
void draw_eval_scratch_free(DrawEvalScratch *e);

// The first `limit` images of set (0 = all) in batches of e->B, noise from seed, K samples
// per image (pass k of image g seeded with (seed, k, g)). Every rank gets the result. With
// e->record, its images and K are those of this call and its batch is e->B. A conditional
// model (c->classes) is run on each image's label (set->labels, which it needs): the bound
// is then -log p(x | y)'s.
int draw_evaluate(DrawEvalResult *out, DrawEvalScratch *e, const DrawParams *p,
                  const DrawConfig *c, const ImageSet *set, int limit, int K, uint64_t seed,
                  Error *err);

#endif
