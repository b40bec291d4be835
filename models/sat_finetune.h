// sat_finetune.h: the captioner with a pretrained encoder's last stage trained along with
// the decoder (fine-tuning): the frozen prefix (vision/encoder.h, encoder_forward_prefix)
// runs on every batch's images, the last stage (vision/encoder_stage.h: VGG's conv5 or
// ResNet's last stage, batch norm frozen and folded) keeps its activations, its output is
// the decoder-only model's annotations (models/sat.h with features, annot_grad = 1), and
// the decoder's gradient w.r.t. the annotations goes back through the stage into the
// stage's own gradient and Adam moments, stepped with its own learning rate.
//
// A step (the caller owns the decoder's optimiser step, as for any SatModel):
//     SatFineTune ft; sat_finetune_init(&ft, enc, S, B);     // m->annot_grad = 1
//     const float *annot = sat_finetune_annotations(&ft, images, B);
//     sat_forward(m, &loss, annot, words, lens, B, 1, seed, 0);  sat_backward(m);
//     sat_finetune_backward(&ft, m, B);                      // d annotations -> stage
//     ... decoder's clip + Adam ...;  sat_finetune_step(&ft, &adam, step, lr, clip);
//
// Learning rate: the PyTorch tutorial of sgrvinod (a-PyTorch-Tutorial-to-Image-Captioning,
// train.py) uses Adam with encoder_lr = 1e-4 for the encoder when fine-tuning (decoder_lr
// 4e-4): SAT_FINETUNE_LR. That tutorial fine-tunes ResNet-101's layer2 to layer4 with
// batch norm in training mode (encoder.train()); here only the last stage is trained and
// batch norm stays frozen (see encoder_stage.h), which is what lets the stage's weights be
// trained in their folded form.
#ifndef MODELS_SAT_FINETUNE_H
#define MODELS_SAT_FINETUNE_H

#include <stddef.h>

#include "core/adam.h"
#include "models/sat.h"
#include "vision/encoder.h"
#include "vision/encoder_stage.h"

#define SAT_FINETUNE_LR 1e-4f

typedef struct {
    const Encoder *enc;      // the frozen prefix (borrowed; its last stage is not used)
    EncoderWorkspace ws;     // the prefix's activations (one thread)
    EncoderStage stage;      // the trainable last stage (a copy of the encoder's at init)
    EncoderStageWork work;   // its activations for the last batch
    float *grad, *adam_m, *adam_v;  // (stage.n_params) each
    int S, B, C, s, G, D;    // image side, batch capacity; stage input (C, s, s), output (D, G, G)
    int Bb;                  // the last batch
    float *feat, *x, *annot, *dy;   // (B, C, s, s), (C, B, s, s), (B, L, D), (D, B, G, G)
} SatFineTune;

// Stage copied from enc (encoder_last_stage), zero gradient and moments, buffers for
// batches of up to B images of side S.
void sat_finetune_init(SatFineTune *ft, const Encoder *enc, int S, int B);
void sat_finetune_free(SatFineTune *ft);

// images (Bb, 3, S, S) preprocessed -> the annotations (Bb, L, D), L = G G, kept in ft
// (valid until the next call); the stage's activations are kept for the backward pass.
const float *sat_finetune_annotations(SatFineTune *ft, const float *images, int Bb);
// After sat_backward(m) on those annotations with m->annot_grad = 1: accumulates the
// stage's parameter gradient into ft->grad (the batch of the last annotations call).
void sat_finetune_backward(SatFineTune *ft, const SatModel *m);
// Clips ft->grad to global norm clip (0: no clipping), one Adam step (adam's betas and eps)
// with learning rate lr, zeroes ft->grad. Returns the gradient's norm before clipping.
float sat_finetune_step(SatFineTune *ft, const AdamConfig *adam, long step, float lr, float clip);

#endif
