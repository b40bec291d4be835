// caption_model.h: the captioner's checkpoint files, model.safetensors and
// state.safetensors (safetensors, written atomically). __metadata__ holds format
// "attend-sat", version 1, the configuration (sat.config), the vocabulary, the training
// counters, REINFORCE's baseline, the pretrained encoder's record (cli/caption_features.h)
// and, in a state file, the optimiser settings (train.batch, train.lr, train.lr_decay,
// train.clip, train.seed, train.ema); train.data, the --data spec trained on (both files;
// --resume refuses another, cli/caption_train_flags.h); the tensors are the parameters and, in a state
// file, the Adam moments ("adam.m/NAME", "adam.v/NAME"), the weight average ("ema/NAME")
// when it is on and a fine-tuned encoder stage (cli/caption_finetune.h).
#ifndef CLI_CAPTION_MODEL_H
#define CLI_CAPTION_MODEL_H

#include <stdbool.h>

#include "cli/caption_features.h"
#include "cli/caption_finetune.h"
#include "cli/train_run.h"
#include "core/block.h"
#include "core/error.h"
#include "models/sat.h"
#include "seq/vocab.h"

#define CAPTION_BATCH_MAX 4096  // --batch at most (and a state's train.batch)

// --attention NAME: an attention kind of seq/attention.h, or "hard" (additive scores,
// sampled by REINFORCE); an unknown name is one line listing the kinds.
int caption_attention_parse(SatConfig *c, const char *name, Error *err);
// The kind's name, "transformer" for the Transformer decoder (its cross-attention).
const char *caption_attention_name(const SatConfig *c);

// A run's counters: its step and its best validation BLEU-4 (< 0 before any) and step;
// the CPU seconds its training has spent (train.cpu_seconds of a state, stored only once a
// --cpu-budget has governed the run; 0 in a state without it).
typedef struct {
    long step, best_step;
    double best_bleu;
    double cpu_seconds;
} CaptionCounters;

// A state's optimiser settings, weight average's decay and data spec (train.data):
// stored, ema_stored and data_stored false for a state written before they were.
typedef struct {
    TrainOptim optim;
    float ema;
    bool stored, ema_stored, data_stored;
    char data[2048];  // the --data the run trained on, when data_stored
} StoredOptim;

// Saves the parameters (and, for a state file, the Adam moments, the training counters,
// the optimiser settings optim and the weight average ema: its decay, and its weights when
// it is on; and tc's CPU seconds as train.cpu_seconds). enc: the pretrained encoder of a model trained on features, or NULL; ft: a
// fine-tuned stage, or NULL; data: the --data spec trained on (train.data), or NULL.
int caption_model_save(const char *path, const SatModel *m, const Vocab *vocab, int with_state,
                       const TrainOptim *optim, const TrainEma *ema, const CaptionCounters *tc,
                       const EncoderRecord *enc, const CaptionFineTune *ft,
                       const char *data, Error *err);

// Opens a model file: configuration, vocabulary, parameters (and with state, Adam
// moments, counters and, with optim, the optimiser settings). The model is initialised
// here (sat_init). With ema (an empty Block), the state's weight average is read into it;
// a state written without one gives a copy of the parameters, where a new average starts.
// On failure nothing is left allocated.
int caption_model_load(const char *path, SatModel *m, Vocab *vocab, int with_state, Block *ema,
                       CaptionCounters *tc, StoredOptim *optim, Error *err);

#endif
