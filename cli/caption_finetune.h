// caption_finetune.h: caption train --fine-tune: the captioner trained with its pretrained
// encoder's last stage (models/sat_finetune.h: VGG's conv5 or ResNet's layer4, batch norm
// frozen), and the fine-tuned stage in eval and predict.
//
//   caption train --encoder ARCH:FILE --fine-tune conv5|layer4 [--fine-tune-lr 1e-4] ...
//
// Every step the batch's images go through the frozen prefix and the stage, the decoder's
// gradient w.r.t. the annotations back through the stage, and the stage gets its own Adam
// step (learning rate --fine-tune-lr, default SAT_FINETUNE_LR = 1e-4: sgrvinod's PyTorch
// tutorial's encoder_lr, a-PyTorch-Tutorial-to-Image-Captioning, train.py; decayed per
// epoch by --lr-decay like the decoder's; clipped by --clip on its own; --ema averages the
// decoder only: validation and model.safetensors pair the average with the current stage).
// One worker runs the step (--threads go to its BLAS); one process only (mpirun with more
// than one rank is refused). A feature cache is refused: it would hold the stage's
// annotations before fine-tuning.
//
// Preprocessing: the data's pixels as every caption set gives them (caption_load_image:
// centre square, area resize to S, 8-bit rounding), then ImageNet's Normalize (mean, std of
// vision/preprocess.h); recorded as CAPTION_FINETUNE_PREPROCESS in the checkpoint, and
// eval and predict (CaptionAnnotator) preprocess the same way.
//
// Checkpoint: the EncoderRecord (cli/caption_features.h) with finetune = the stage's name
// and finetune.lr, and the tensor "finetune.stage" (the stage's folded parameters, one
// vector in encoder_stage.h's order); the state file adds "finetune.adam_m" and
// "finetune.adam_v". eval and predict write the stage into the recorded encoder
// (encoder_set_last_stage); --resume reads the stage and its moments back.
#ifndef CLI_CAPTION_FINETUNE_H
#define CLI_CAPTION_FINETUNE_H

#include <stdbool.h>

#include "cli/caption_features.h"
#include "core/adam.h"
#include "core/block.h"
#include "core/rng.h"
#include "core/safetensors.h"
#include "models/sat.h"
#include "models/sat_finetune.h"

#define CAPTION_FINETUNE_PREPROCESS "centre square, area resize to S, 8-bit; ImageNet mean/std"

// The flags of caption train (given: on the command line).
typedef struct {
    const char *encoder;    // "ARCH:FILE" or NULL
    const char *stage;      // "conv5" | "layer4" or NULL
    float lr;
    bool lr_given;
} CaptionFineTuneFlags;

typedef struct {
    bool on;
    bool training;          // ft below; otherwise ann (eval)
    float lr;
    Encoder *enc;           // training: the pretrained encoder (its frozen prefix)
    SatFineTune ft;         // training: the stage, its gradient and moments
    CaptionAnnotator ann;   // eval: the recorded encoder with the checkpoint's stage
    int S, B;
    float *pixels;          // (B, 3, S, S)
} CaptionFineTune;

void caption_finetune_flags_default(CaptionFineTuneFlags *f);

// caption train: with --fine-tune, loads the encoder, sets cfg to a decoder-only
// configuration on its annotations (feat_L, feat_D at cfg->image_size) and rec to the
// encoder's record, and, on --resume (saved: the state's configuration, saved_path its
// file), checks --encoder and --fine-tune against it and reads the stage and its moments;
// the resumed state's own stage, encoder (at its recorded path) and --fine-tune-lr stand
// for the flags left out. Without --fine-tune (and no such state), refuses --encoder and
// --fine-tune-lr; t->on stays false.
// batch: images per step; ranks: processes (more than 1 is refused). One line on failure.
int caption_finetune_setup_train(CaptionFineTune *t, SatConfig *cfg, EncoderRecord *rec,
                                 const CaptionFineTuneFlags *fl, const char *features, int ranks,
                                 int batch, const SatConfig *saved, const char *saved_path,
                                 bool quiet, Error *err);
// caption eval of model_path: when the model records a fine-tuned stage, opens its encoder
// (encoder_arg "ARCH:FILE", or NULL: the recorded one) with that stage for batches of up
// to B images (t->on); refuses a feature cache. No fine-tuning recorded: t->on false,
// nothing opened, and encoder_arg refused.
int caption_finetune_open_eval(CaptionFineTune *t, const SatConfig *cfg, const char *model_path,
                               const char *features, const char *encoder_arg, int B, Error *err);
void caption_finetune_close(CaptionFineTune *t);

// Image j's slot (3, S, S) in the pixel buffer, to be filled with [0, 1] pixels.
float *caption_finetune_pixels(CaptionFineTune *t, int j);
// annot (k, L, D): the k images of the pixel buffer, normalised, through the encoder with
// the current stage (training: the stage being trained; eval: the checkpoint's).
void caption_finetune_annotate(CaptionFineTune *t, float *annot, int k);
// Training: forward and backward of m (one worker, m->annot_grad set here; seed: the
// step's, each image's noise from its own stream as sat_forward draws it) on the k
// images of the pixel buffer, the decoder's gradient in m->grads (zeroed here) and the
// stage's accumulated in t->ft.grad; m->grads untouched when the loss is not finite.
void caption_finetune_forward_backward(CaptionFineTune *t, SatModel *m, SatLoss *loss,
                                       const int *words, const int *lens, int k, uint64_t seed);
// After the forward and backward: the stage's gradient must be finite (train_check_finite's
// line naming "finetune.stage" otherwise; ckpt the last good checkpoint).
int caption_finetune_check_finite(CaptionFineTune *t, long step, const char *ckpt, Error *err);
// The stage's Adam step at learning rate lr_scale times --fine-tune-lr, gradient clipped
// to clip (0: none). Returns the gradient's norm before clipping.
float caption_finetune_step(CaptionFineTune *t, const AdamConfig *adam, long step, float lr_scale,
                            float clip);

// The tensors a checkpoint holds for the stage (1, or 3 with the state): views of
// blocks[i] over tensors[i] (no copies). 0 when t is NULL or off.
int caption_finetune_blocks(const CaptionFineTune *t, Block *blocks, BlockTensor *tensors,
                            bool with_state);
// Writes the stage stored in model_path ("finetune.stage") into enc (before its workspace
// is made). One line naming the file when it is missing or of another shape.
int caption_finetune_load_stage(Encoder *enc, const char *model_path, Error *err);
// (3, S, S) pixels in [0, 1] -> ImageNet's Normalize, in place.
void caption_finetune_normalize(float *chw, int S);

#endif
