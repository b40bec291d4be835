// caption_train_flags.h: the flags of `caption train` (cli/caption_train.h): their table,
// defaults and checks, the model configuration they describe, and on --resume the check
// that the model flags given match the checkpoint's.
#ifndef CLI_CAPTION_TRAIN_FLAGS_H
#define CLI_CAPTION_TRAIN_FLAGS_H

#include <stdbool.h>

#include "cli/caption_data.h"
#include "cli/caption_finetune.h"
#include "cli/train_run.h"
#include "core/error.h"
#include "models/sat_config.h"

// caption train's flags as given; given.NAME: --NAME was on the command line (on --resume,
// a model flag left out takes the checkpoint's value).
typedef struct {
    CaptionDataFlags data;
    CaptionFineTuneFlags finetune;  // --encoder, --fine-tune, --fine-tune-lr
    const char *attention, *out, *channels, *query, *decoder;
    int image_size, embed, hidden, attn_dim, heads, window, max_len, min_count;
    int d_model, d_ff, layers, enc_layers, positions, map_layer, warmup;  // --decoder transformer
    bool post_ln;
    int epochs, threads, val_beam, val_count, log_every, checkpoint_every;
    long steps;
    double minutes;
    double cpu_budget;  // --cpu-budget: CPU seconds of training over the run's invocations
    TrainOptimFlags optim;  // --batch, --lr, --lr-decay, --clip, --seed (no --beta1)
    float lambda, dropout, entropy, length_alpha, ema;
    bool resume, force, json, beta_vector, quiet, overlap_sums;
    struct {
        bool epochs, steps, minutes, cpu_budget;  // the budget: at most one
        bool attention, channels, query, image_size, embed, hidden, attn_dim, heads, window,
            max_len, beta_vector, lambda, dropout, entropy;
        bool decoder, d_model, d_ff, layers, enc_layers, positions, map_layer, post_ln, warmup;
        bool data;  // on --resume a left-out --data takes the checkpoint's train.data
        bool ema;  // not a model flag: --resume takes the state's decay where it is left out
    } given;
} CaptionTrainFlags;

// Fills f from the command line. Returns 1 when the command should return *code at once
// (after --help, or a bad flag reported on stderr; *code 2 for a flag the table accepts
// but the others refuse).
int caption_train_flags_parse(CaptionTrainFlags *f, int argc, char **argv, int *code);
// The model configuration the flags describe (the vocabulary size still a placeholder).
int caption_train_flags_config(SatConfig *cfg, const CaptionTrainFlags *f, Error *err);
// --resume: every model flag given must match the checkpoint's configuration (saved, read
// from path), and --data given the data the run was trained on (saved_data, its train.data;
// NULL for a checkpoint written before it was stored: nothing to check), the same spec or
// one naming the same files (datasets/captions.h caption_spec_same); -1 with err naming
// path and each flag that differs, with both values.
int caption_train_flags_check_resume(const CaptionTrainFlags *f, const SatConfig *want,
                                     const SatConfig *saved, const char *saved_data,
                                     const char *path, Error *err);

#endif
