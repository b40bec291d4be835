// classifier.h: the image classifiers of `draw classify` behind one interface, and their
// data parallelism over the batch:
//   CLASSIFIER_GLIMPSE  the recurrent attention classifier (models/glimpse.h)
//   CLASSIFIER_CNN      the plain convolutional baseline (models/convnet.h)
// Parameters of either kind live in one Block (classifier_layout); the checkpoint and the
// optimiser see only the Block.
//
// Workers (as models/draw.h does it): worker k takes an equal share of the batch rows with
// its own activations and gradients; the shares' gradients are summed weighted by their
// size, so the result is the gradient of the whole batch's mean loss.
#ifndef MODELS_CLASSIFIER_H
#define MODELS_CLASSIFIER_H

#include "core/block.h"
#include "core/error.h"
#include "core/rng.h"
#include "models/convnet.h"
#include "models/glimpse.h"

typedef enum { CLASSIFIER_GLIMPSE = 0, CLASSIFIER_CNN = 1 } ClassifierKind;

typedef struct {
    ClassifierKind kind;
    GlimpseConfig glimpse;  // kind GLIMPSE
    ConvnetConfig cnn;      // kind CNN
} ClassifierConfig;

typedef struct {
    GlimpseParams glimpse;
    ConvnetParams cnn;
} ClassifierParams;

const char *classifier_kind_name(ClassifierKind k);  // "glimpse", "cnn"
int classifier_config_check(const ClassifierConfig *c, Error *err);
// Image width and height the classifier takes (B, H W).
// After classifier_config_check: 0 when batches of up to B fit what the kernels index
// (glimpse_check_sizes, convnet_check_sizes); else -1 with one line naming the flags.
int classifier_check_sizes(const ClassifierConfig *c, int B, Error *err);
int classifier_width(const ClassifierConfig *c);
int classifier_height(const ClassifierConfig *c);
void classifier_layout(Block *b, ClassifierParams *p, const ClassifierConfig *c);
void classifier_init(ClassifierParams *p, const ClassifierConfig *c, Rng *rng);

#define CLASSIFIER_MAX_WORKERS 64
typedef struct {
    GlimpseActs glimpse;  // the kind's activations (the other is empty)
    ConvnetActs cnn;
    Block grads;
    ClassifierParams g;
    int rows;  // rows of the last call
} ClassifierWorker;

int classifier_worker_count(int threads, int B);
void classifier_workers_alloc(ClassifierWorker *w, int n, const ClassifierConfig *c, int B);
void classifier_workers_free(ClassifierWorker *w, int n);
// Forward of x (B, H W) with labels (B) over n workers (B <= the rows allocated), and with
// grads non-NULL the backward into grads (overwritten); returns the mean loss; correct
// (may be NULL) the number of images whose largest logit is their label's.
double classifier_forward_parallel(ClassifierWorker *w, int n, const ClassifierParams *p,
                                   const ClassifierConfig *c, const float *x,
                                   const int *labels, int B, Block *grads, int *correct);
// The same for hard attention (a glimpse config with hard = 1): eps (T, B, 2) the centre
// noise (NULL: zeros, i.e. the policy's means, for evaluation). Other models ignore eps.
double classifier_forward_parallel_hard(ClassifierWorker *w, int n, const ClassifierParams *p,
                                        const ClassifierConfig *c, const float *x,
                                        const int *labels, int B, const float *eps,
                                        Block *grads, int *correct);

#endif
