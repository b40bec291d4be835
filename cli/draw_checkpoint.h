// draw_checkpoint.h: bin/draw's checkpoints. One safetensors file (written atomically)
// holds the parameters, the Adam moments ("adam.m/NAME", "adam.v/NAME") and, in
// __metadata__, the configuration and the training state; its "format" is attend-draw-1.
// Grey checkpoints carry no channel count, as the checkpoints of before colour did.
//
//     DrawCheckpoint m;                     // eval, generate, reconstruct
//     if (draw_checkpoint_load(&m, "run/model.safetensors", &err)) ...
//     draw_forward(..., &m.p, &m.state.cfg, ...);
//     block_free(&m.params);
#ifndef CLI_DRAW_CHECKPOINT_H
#define CLI_DRAW_CHECKPOINT_H

#include "cli/train_run.h"
#include "core/block.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "models/draw.h"

// The largest --batch of draw train, and of a checkpoint's train.batch.
#define DRAW_BATCH_MAX 10000

// What a checkpoint holds besides the tensors: the configuration and the training counters.
typedef struct {
    DrawConfig cfg;
    long step;
    TrainOptim optim;  // batch, lr, beta1, clip, seed
    int binarize;      // the training images were binarised (the others once, fixed)
    char data[256];    // --data of the run
} DrawTrainState;

// Writes path atomically from the state, the parameters and the Adam moments m and v.
int draw_checkpoint_write(const char *path, const DrawTrainState *s, const Block *params,
                          const Block *m, const Block *v, Error *err);

// Reads the configuration and training state from f's metadata (f opened from path), each
// value checked; a captioner's or another format's file is refused by name.
int draw_checkpoint_read_state(const SafetensorsFile *f, const char *path, DrawTrainState *s,
                               Error *err);

// A model loaded from a checkpoint for eval, generate and reconstruct: the parameters (the
// Adam moments left on disk) and p, views into them.
typedef struct {
    DrawTrainState state;
    Block params;
    DrawParams p;
} DrawCheckpoint;

// Loads path into m (m->params allocated only after the tensors were checked against the
// configuration: the metadata may claim any size). Free with block_free(&m->params).
int draw_checkpoint_load(DrawCheckpoint *m, const char *path, Error *err);

#endif
