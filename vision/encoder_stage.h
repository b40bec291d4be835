// encoder_stage.h: the last stage of a pretrained encoder (vision/encoder.h) as a trainable
// block, for fine-tuning: VGG's conv5 (a chain of 3x3 stride-1 pad-1 convolutions, each
// with bias and ReLU: three in VGG-16, four in VGG-19) or ResNet's layer4 (residual blocks:
// bottleneck 1x1 / 3x3 (stride on the first block) / 1x1, or basic 3x3 / 3x3, each
// convolution followed by its batch norm, the residual added before the block's last ReLU,
// and a downsampling branch (1x1 strided convolution + batch norm) on the first block).
//
// Frozen batch norm: at inference batch norm is a fixed per-channel affine, which
// vision/encoder.c folds into the convolution before it (weight' = weight s, bias' =
// beta - running_mean s, s = gamma / sqrt(running_var + eps)). With batch norm frozen
// (running statistics never updated, as in eval mode), the function the stage computes is
// exactly a convolution with weight' and bias', so fine-tuning here trains the folded
// weight' and bias' directly. This is the same function class as PyTorch's frozen-BN
// fine-tuning (conv weight, gamma, beta trainable; running statistics fixed), but not the
// same parameterisation: gradient steps on (weight', bias') are not the steps PyTorch takes
// on (weight, gamma, beta), so a fine-tuned trajectory is not PyTorch's step for step.
// What is kept after fine-tuning is the folded weights (they load back into the stage as
// they are).
//
// Layout: the channel-major group layout of vision/conv_infer.h, (C, n, S, S); S is the
// side of the stage's (square) input. Parameters are one contiguous vector (params,
// n_params floats: each convolution's weight (OC, C, K, K) then bias (OC), in the order they
// were added), so an optimiser can treat them as one tensor.
//
//     EncoderStage st; encoder_stage_init(&st, ENCODER_STAGE_RESNET, C_in);
//     int a = encoder_stage_add_conv(&st, C_in, 64, 1, 1, 0), ...;   // then fill params
//     encoder_stage_add_block(&st, a, b, c, down);
//     EncoderStageWork w; encoder_stage_work_alloc(&w, &st, n, S);
//     encoder_stage_forward(&st, &w, x);          // output: encoder_stage_output(&st, &w)
//     encoder_stage_backward(&st, &w, dparams, dx, x, dy);
#ifndef VISION_ENCODER_STAGE_H
#define VISION_ENCODER_STAGE_H

#include <stddef.h>

typedef enum { ENCODER_STAGE_VGG, ENCODER_STAGE_RESNET } EncoderStageKind;

typedef struct {
    int C, OC, K, stride, pad;
    size_t w, b;  // offsets of weight (OC, C, K, K) and bias (OC) in params
} StageConv;

typedef struct {
    int conv1, conv2, conv3, down;  // indices into convs; conv3 -1 (basic block), down -1
} StageBlock;

typedef struct {
    EncoderStageKind kind;
    int C_in, D;  // input channels; output channels (the annotation size)
    int n_convs, n_blocks;
    StageConv *convs;
    StageBlock *blocks;  // ResNet only
    float *params;       // n_params floats (zeroed when a convolution is added)
    size_t n_params;
} EncoderStage;

void encoder_stage_init(EncoderStage *st, EncoderStageKind kind, int C_in);
void encoder_stage_free(EncoderStage *st);
// Adds a convolution (C -> OC, K x K, stride, pad) with zeroed parameters; returns its index.
// VGG: convolutions run in the order added, each taking the previous one's output (the
// first takes the stage input), each with ReLU.
int encoder_stage_add_conv(EncoderStage *st, int C, int OC, int K, int stride, int pad);
// ResNet: a block over convolutions already added (conv3 -1 for a basic block, down -1 for
// the identity shortcut); blocks run in the order added. CHECKs the channels chain.
void encoder_stage_add_block(EncoderStage *st, int conv1, int conv2, int conv3, int down);
// Side of the output for an input of side S (0 if S is too small).
int encoder_stage_out_side(const EncoderStage *st, int S);

// Activations kept for the backward pass, their gradients, and scratch, for n images of
// side S.
typedef struct {
    int n, S, n_convs;
    int *side;      // per convolution: its input side
    float **act;    // per convolution: its output (OC, n, So, So) (after bias, residual, ReLU)
    float **grad;   // per convolution: the gradient w.r.t. act
    float *scratch; // conv_infer forward scratch, and conv_train's column matrix
    size_t scratch_floats;
} EncoderStageWork;

void encoder_stage_work_alloc(EncoderStageWork *w, const EncoderStage *st, int n, int S);
void encoder_stage_work_free(EncoderStageWork *w);

// x (C_in, n, S, S) -> the output (D, n, G, G), kept in w (encoder_stage_output).
void encoder_stage_forward(const EncoderStage *st, EncoderStageWork *w, const float *x);
const float *encoder_stage_output(const EncoderStage *st, const EncoderStageWork *w);
// After encoder_stage_forward on the same x: given dy (D, n, G, G), ACCUMULATES the
// parameters' gradient into dparams (n_params) and, when dx is not NULL, the input's into dx
// (C_in, n, S, S).
void encoder_stage_backward(const EncoderStage *st, EncoderStageWork *w, float *dparams,
                            float *dx, const float *x, const float *dy);
// The same forward and backward through the plain-loop references (conv_infer_forward_ref,
// conv_train_backward_ref); tests compare them.
void encoder_stage_forward_ref(const EncoderStage *st, EncoderStageWork *w, const float *x);
void encoder_stage_backward_ref(const EncoderStage *st, EncoderStageWork *w, float *dparams,
                                float *dx, const float *x, const float *dy);

#endif
