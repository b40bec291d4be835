// draw_checkpoint.h: bin/draw's checkpoints. One safetensors file (written atomically)
// holds the parameters, the Adam moments ("adam.m/NAME", "adam.v/NAME"), a run trained
// with --ema its weight average ("ema/NAME") and, in __metadata__, the configuration and
// the training state; its "format" is attend-draw-1. Grey checkpoints carry no channel
// count, as the checkpoints of before colour did; checkpoints without an average carry no
// train.ema, as those of before --ema did; unconditional ones carry no draw.classes, and
// a file without it (those of before --conditional) loads as unconditional.
//
//     DrawCheckpoint m;                     // eval, generate, reconstruct
//     if (draw_checkpoint_load(&m, "run/model.safetensors", &err)) ...
//     draw_checkpoint_use_average(&m);      // the weight average, where there is one
//     draw_forward(..., &m.p, &m.state.cfg, ...);
//     draw_checkpoint_free(&m);
#ifndef CLI_DRAW_CHECKPOINT_H
#define CLI_DRAW_CHECKPOINT_H

#include <stdbool.h>

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
    float ema;         // the weight average's decay (train.ema); 0: the file holds none
    int binarize;      // the training images were binarised (the others once, fixed)
    char data[256];    // --data of the run
} DrawTrainState;

// Writes path atomically from the state, the parameters, the Adam moments m and v (NULL: a
// model file of the weights alone) and the weight average avg (NULL: none, and no
// train.ema; else s->ema, its decay, must be > 0).
int draw_checkpoint_write(const char *path, const DrawTrainState *s, const Block *params,
                          const Block *m, const Block *v, const Block *avg, Error *err);

// Reads the configuration and training state from f's metadata (f opened from path), each
// value checked; a captioner's or another format's file is refused by name.
int draw_checkpoint_read_state(const SafetensorsFile *f, const char *path, DrawTrainState *s,
                               Error *err);

// A model loaded from a checkpoint for eval, generate and reconstruct: the parameters (the
// Adam moments left on disk) and p, views into them; the weight average where the file
// holds one (state.ema > 0), else an empty block.
typedef struct {
    DrawTrainState state;
    Block params;
    DrawParams p;
    Block average;
} DrawCheckpoint;

// Loads path into m (each block allocated only after its tensors were checked against the
// configuration: the metadata may claim any size). Free with draw_checkpoint_free.
int draw_checkpoint_load(DrawCheckpoint *m, const char *path, Error *err);
// Puts the weight average in the parameters' place, so that p views it; returns whether
// there was one (a run trained without --ema keeps its weights).
bool draw_checkpoint_use_average(DrawCheckpoint *m);
void draw_checkpoint_free(DrawCheckpoint *m);

#endif
