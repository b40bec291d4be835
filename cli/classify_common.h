// classify_common.h: what the subcommands of `draw classify` share. Checkpoints
// (safetensors, written atomically): the parameters, the Adam moments ("adam.m/NAME",
// "adam.v/NAME") and, in __metadata__, format "attend-classify-1", the model and clutter
// configurations and the training state. The digits' source, loaded the same way by every
// subcommand, and the error-rate evaluation.
#ifndef CLI_CLASSIFY_COMMON_H
#define CLI_CLASSIFY_COMMON_H

#include <stdint.h>

#include "cli/train_run.h"
#include "core/block.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "datasets/cluttered.h"
#include "datasets/mnist.h"
#include "models/classifier.h"

#define CLASSIFY_FORMAT "attend-classify-1"
// The largest --batch of draw classify train, and of a checkpoint's train.batch.
#define CLASSIFY_BATCH_MAX 1024

typedef struct {
    ClassifierConfig cfg;
    ClutterConfig clutter;
    long step;
    TrainOptim optim;  // batch, lr, beta1, clip, seed
    char data[256];  // the digits' source: mnist, fashion-mnist
} ClassifyState;

int classify_save(const char *path, const ClassifyState *s, const Block *params, const Block *m,
                  const Block *v, Error *err);
// The state from a checkpoint's metadata (checked).
int classify_read_state(const SafetensorsFile *f, const char *path, ClassifyState *s, Error *err);

// A model loaded for eval and show.
typedef struct {
    ClassifyState state;
    Block params;
    ClassifierParams p;
} ClassifyModel;

int classify_load_model(ClassifyModel *m, const char *path, Error *err);
void classify_model_free(ClassifyModel *m);

// The clutter seed of a training run with seed `seed` (valid and test use
// CLUTTER_TEST_SEED, whatever the run).
uint64_t classify_train_clutter_seed(uint64_t seed);

// Loads one split of the digits' source (mnist, fashion-mnist) and checks that a digit
// fits the clutter configuration.
int classify_load_split(ImageSet *set, const char *data, const char *root, Split split,
                        const ClutterConfig *clutter, Error *err);

// The error rate of a model on images [0, count) of a split (clutter seed `seed`), in
// batches of B over the workers; loss: the mean cross-entropy.
typedef struct {
    double error, loss;
    int images, correct;
} ClassifyEval;

ClassifyEval classify_evaluate(ClassifierWorker *w, int n_workers, int B,
                               const ClassifierParams *p, const ClassifierConfig *c,
                               const ImageSet *set,
                               const ClutterConfig *clutter, uint64_t seed, int count,
                               float *x, int *labels);

#endif
