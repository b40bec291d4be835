// encoder.h: pretrained ImageNet encoders for captioning photographs: torchvision's VGG-16,
// VGG-19 and ResNet-18, 34, 50, 101, 152, frozen, at inference, producing the captioner's
// annotation matrix (B, L, D) (the layout of vision/cnn.h: position l = gy G + gx).
//
// Architectures (ARCH specs, encoder_spec_parse):
//   vgg16, vgg19             the convolutional part cut after the last convolution's ReLU
//                            (conv5_3 / conv5_4), before the last pool (Xu et al. 2015):
//                            G = S / 16, D = 512 (14 x 14 x 512 at 224 px, L = 196)
//   resnet18 ... resnet152   the stem (7x7/2 conv, batch norm, ReLU, 3x3/2 max pool) and the
//                            residual stages cut after layer4 (default, "resnet101@layer4") or
//                            layer3 ("resnet101@layer3"): G = ceil(S / 32) (layer4) or
//                            ceil(S / 16) (layer3); D = 2048 / 1024 (bottleneck nets: 50, 101,
//                            152) or 512 / 256 (basic-block nets: 18, 34). 7 x 7 x 2048 at 224
//                            px, 14 x 14 at 448.
// torchvision's ResNet v1.5: the stride of a stage's first block is on its 3x3 convolution.
//
// Weights: one safetensors file with torchvision's state_dict names: features.N.weight,
// features.N.bias (VGG); conv1.weight, bn1.{weight,bias,running_mean,running_var},
// layerX.Y.convZ.weight, layerX.Y.bnZ.*, layerX.Y.downsample.0.weight, .downsample.1.*
// (ResNet). These are also the names of timm's safetensors copies of the torchvision weights
// (vgg19.tv_in1k, resnet101.tv_in1k on the Hugging Face hub: timm's VGG keeps features.N.*
// and renames the classifier pre_logits.fc1/fc2 and head.fc; timm's ResNet is torchvision's
// names with fc.*), so those load as they are; bench/reference/pth_to_safetensors.py turns a
// torchvision .pth into such a file. Classifier tensors (fc.*, classifier.*, head.*,
// pre_logits.*), batch norm's integer num_batches_tracked and, when cut at layer3, layer4.*
// are read past. F32, F16 and BF16 tensors load (core/safetensors.h). Widths come from the
// tensors' shapes (only the depth, kernel sizes and strides are fixed), so a narrow network
// of the same structure loads too. Everything is checked against the header before any data
// is read: a missing, unexpected or wrongly shaped tensor, or an integer one where floats
// belong, fails with one line naming it, and a file of another architecture (a missing or
// unexpected block) is refused, never half-loaded.
//
// Batch norm is folded into the preceding convolution when the weights load:
//     s = gamma / sqrt(running_var + 1e-5), weight' = weight s, bias' = beta - running_mean s
// (per output channel, in double precision), so every layer is conv + bias (+ residual) +
// ReLU, run by vision/conv_infer.h on groups of images stored channel-major: each layer of a
// group is one GEMM (or Winograd's 16) with bias, residual and ReLU fused into its output
// pass.
//
// Preprocessing (torchvision's ImageNet transform) is vision/preprocess.h:
// imagenet_preprocess turns a decoded image into the (3, S, S) input encoder_forward takes.
//
//     Encoder *enc; Error err;
//     if (encoder_load(&enc, "resnet101", "resnet101.safetensors", &err)) { ...err.msg... }
//     EncoderWorkspace ws; encoder_workspace_alloc(&ws, enc, 224, 2, 8, ENCODER_CONV_AUTO);
//     int G = encoder_grid_size(enc, 224), D = encoder_dim(enc);   // annot (B, G G, D)
//     encoder_forward(enc, &ws, annot, images, B);
//     encoder_workspace_free(&ws); encoder_free(enc);
#ifndef VISION_ENCODER_H
#define VISION_ENCODER_H

#include <stddef.h>

#include "core/error.h"
#include "core/sha256.h"
#include "vision/encoder_stage.h"

typedef enum {
    ENCODER_VGG16,
    ENCODER_VGG19,
    ENCODER_RESNET18,
    ENCODER_RESNET34,
    ENCODER_RESNET50,
    ENCODER_RESNET101,
    ENCODER_RESNET152,
} EncoderArch;

typedef struct {
    EncoderArch arch;
    int cut;  // ResNet: the last stage kept, 3 or 4; VGG: 5 (the fifth block of convolutions)
} EncoderSpec;

// "vgg16", "vgg19", "resnet18" ... "resnet152", optionally "@layer3" or "@layer4" after a
// ResNet (default layer4) or "@conv5" after a VGG. One-line error naming the spec and the
// accepted ones.
int encoder_spec_parse(EncoderSpec *spec, const char *text, Error *err);
// The canonical spec, e.g. "resnet101@layer4", "vgg19" (cap >= 24).
void encoder_spec_format(char *buf, size_t cap, const EncoderSpec *spec);

typedef struct Encoder Encoder;

// Reads the weights for arch_spec from a safetensors file (above); on failure *enc is NULL
// and err says "PATH: reason" (or "SPEC: reason" for a bad spec).
int encoder_load(Encoder **enc, const char *arch_spec, const char *weights_path, Error *err);
void encoder_free(Encoder *enc);

const EncoderSpec *encoder_spec(const Encoder *enc);
// Feature grid side G for S x S input images (0 when S is too small for the network), and
// the feature size D: annotations are (B, G G, D).
int encoder_grid_size(const Encoder *enc, int S);
int encoder_dim(const Encoder *enc);
// Parameters after folding (weights and biases of the convolutions up to the cut).
size_t encoder_param_count(const Encoder *enc);
// Multiply-adds of the convolutions for one S x S image, times 2 (FLOPs).
double encoder_flops(const Encoder *enc, int S);
// SHA-256 of the weights file as read, 64 lower-case hex digits: a checkpoint records it to
// know its encoder.
const char *encoder_weights_sha256(const Encoder *enc);
// One line for logs and checkpoint metadata, e.g.
// "resnet101@layer4: torchvision ResNet-101 cut after layer4, D 2048, 42.50 M parameters
// (batch norm folded)".
const char *encoder_description(const Encoder *enc);

// How the 3x3 stride-1 convolutions run: AUTO picks Winograd F(2x2, 3x3) where the layer
// has at least ENCODER_WINOGRAD_MIN_CHANNELS input channels, odd sides included (ResNet's 7
// x 7 layer4: 512 -> 512 on 4 images, one thread, 4.50 ms CPU against im2col's 5.83;
// vision/conv_infer.h), im2col elsewhere (the strided and the 7x7 / 1x1 convolutions);
// IM2COL and WINOGRAD force one (Winograd still only where it fits).
// Measured with bench/bench_encoder.c on one thread, 224 px, on a shared 2-core AVX-512
// machine (load 5), runs alternated: ResNet-101, batch 8: 11.3 images/s with Winograd from
// 64 input channels, 9.5-9.8 from 128, 7.9-9.4 from 256, 7.8-8.6 with im2col only;
// VGG-19, batch 4: 3.73 against 2.51 with im2col only. On two threads, ResNet-101 batch 16:
// two workers with one-thread GEMMs 10.2-10.5 images/s in groups of 4 (9.6 and 8.5 in groups
// of 8), one worker with two-thread GEMMs 4.6-7.2.
typedef enum { ENCODER_CONV_AUTO, ENCODER_CONV_IM2COL, ENCODER_CONV_WINOGRAD } EncoderConv;
#define ENCODER_WINOGRAD_MIN_CHANNELS 64

typedef struct EncoderWorker EncoderWorker;
typedef struct {
    int S, threads, group;
    EncoderConv conv;
    int n_convs;
    int *method;             // per convolution: the ConvInferMethod at this S
    float **wino_u;          // per convolution: Winograd's U (16, OC, C) or NULL
    EncoderWorker *workers;  // `threads` of them, each with its activations and scratch
    void *mem;               // the one allocation (U's, then each worker's buffers)
    size_t bytes;
} EncoderWorkspace;

// Activations and scratch for S x S images on `threads` workers (each runs its own
// single-threaded GEMMs: call gemm_set_threads(1) first when threads > 1), each pushing up
// to `group` images at a time through the network (more images per GEMM; more memory).
// CHECKs that S suits the network (encoder_grid_size >= 1).
void encoder_workspace_alloc(EncoderWorkspace *ws, const Encoder *enc, int S, int threads,
                             int group, EncoderConv conv);
size_t encoder_workspace_bytes(const Encoder *enc, int S, int threads, int group,
                               EncoderConv conv);
void encoder_workspace_free(EncoderWorkspace *ws);

// annot (B, L, D), L = G G; images (B, 3, S, S) preprocessed (vision/preprocess.h), S =
// ws->S. The batch is split in contiguous shares over the workers (one thread each), each
// share in groups of ws->group images. The result does not depend on threads or group
// beyond float rounding (GEMM blocking).
void encoder_forward(const Encoder *enc, EncoderWorkspace *ws, float *annot, const float *images,
                     int B);
// Fine-tuning the last stage (VGG's conv5, ResNet's last stage kept: layer4, or layer3 when
// cut there; vision/encoder_stage.h): the frozen prefix runs here, the stage there.
// feat (B, C, s, s): every image's input to the last stage (after pool4 for a VGG, after the
// previous stage for a ResNet), C = encoder_stage_input_channels, s =
// encoder_stage_input_side(enc, ws->S). Threads and groups as encoder_forward.
void encoder_forward_prefix(const Encoder *enc, EncoderWorkspace *ws, float *feat,
                            const float *images, int B);
int encoder_stage_input_channels(const Encoder *enc);
int encoder_stage_input_side(const Encoder *enc, int S);  // 0 when S is too small
// The last stage with a copy of its (folded) weights; free with encoder_stage_free.
void encoder_last_stage(const Encoder *enc, EncoderStage *st);
// Writes a (fine-tuned) stage's weights back into the encoder, for eval and predict: the
// stage must have the last stage's shapes (one-line error otherwise, nothing changed).
// Call before encoder_workspace_alloc (Winograd's filter transforms are made there).
int encoder_set_last_stage(Encoder *enc, const EncoderStage *st, Error *err);

// The same network through the plain-loop references of vision/conv_infer.h (slow; tests).
void encoder_forward_ref(const Encoder *enc, float *annot, const float *images, int B, int S);

#endif
