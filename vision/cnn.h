// cnn.h: the captioner's image encoder, a small CNN trained from scratch.
//
// Layers: for each channel count c_i in the config (default 32, 64, 128):
//     conv 3x3 (pad 1, stride 1, bias) -> ReLU -> max-pool 2x2 stride 2.
// Input images (B, in_channels, S, S); after n layers the feature map is
// (B, D, G, G) with G = S >> n (cnn_grid_size) and D the last channel count. The
// output is the annotation matrix (B, L, D), L = G * G positions in row-major order
// (position l = gy * G + gx), i.e. the feature map transposed from CHW to (L, D).
//
// Parameters are registered in a Block (core/block.h) under a prefix:
//     PREFIX.conv{i}.weight (c_i, c_{i-1}, 3, 3), PREFIX.conv{i}.bias (c_i)
// The same cnn_register on a second Block gives the gradients. He initialisation:
// weights ~ N(0, 2 / (c_{i-1} * 9)), biases 0.
//
// Activations live in a CnnWorkspace allocated for (B_max, S): forward with any
// B <= B_max at that S. Backward uses what forward stored, so call forward then
// backward on the same batch.
//
// Speed and memory: images go through all the layers in groups (CNN_GROUP images, one by
// default), forward and backward. A layer convolves by im2col or by Winograd F(2x2, 3x3)
// (vision/winograd.h; CnnConv below: by default Winograd where the side is even and there
// are at least CNN_WINOGRAD_MIN_CHANNELS input channels, i.e. layers 2 and 3 of the
// default configuration). Per im2col layer and group: one im2col (vision/conv.h
// im2col_batch) and one GEMM each for the convolution (forward), the weight gradient and
// the column gradient (backward); bias, ReLU and pooling are one vectorised pass over the
// GEMM output while it is in cache, and their backward one pass that writes the GEMM's
// input gradient. Per Winograd layer and group: one input transform and 16 GEMMs, the
// output transform fused with bias, ReLU and pooling (each 2x2 output tile is a pooling
// window, so the convolution's output is never stored); backward, that pass's adjoint
// writes dM, the input transform is recomputed, then 16 GEMMs each for dU and dV and
// dV's adjoint transform is scatter-added into the input gradient. Kept for the whole
// batch: the pooled outputs of all layers but the last (the next layer's input, again in
// backward) and one byte per window (the winner and whether the ReLU passed it); conv
// outputs, columns, Winograd's V and M and the gradients exist for one group only.
// Default configuration, batch 32: 10.8 MiB (10.0 MiB with im2col everywhere; 64 MiB
// when every conv output, ReLU output and pool gradient of the batch was kept).
// bench/bench_cnn.c, one OpenBLAS thread, CPU time per batch of 32: forward 18.4-19.0 ms
// and forward + backward 57.0-58.2 ms, against 28.0 and 78.9-79.3 ms with im2col
// everywhere (runs alternated on a shared machine). With Winograd on the first layer too
// (3 input channels: 16 GEMMs of K = 3 against one of K = 27) forward + backward took 64 ms.
//
//     CnnConfig cfg; cnn_config_default(&cfg);
//     CnnParams p, g; Block params = {0}, grads = {0};
//     cnn_register(&p, &params, "enc", &cfg); cnn_register(&g, &grads, "enc", &cfg);
//     block_alloc(&params); block_alloc(&grads); cnn_init(&p, &rng);
//     CnnWorkspace ws; cnn_workspace_alloc(&ws, &cfg, B, S);
//     cnn_forward(annot, &ws, images, &p, B);          // annot (B, L, D)
//     cnn_backward(&g, NULL, dannot, &ws, images, &p, B);
#ifndef VISION_CNN_H
#define VISION_CNN_H

#include <stddef.h>

#include "core/block.h"
#include "core/error.h"
#include "core/rng.h"

#define CNN_MAX_LAYERS 8

typedef struct {
    int in_channels;                 // 3 for RGB (1 for grey)
    int n_layers;                    // 1 .. CNN_MAX_LAYERS
    int channels[CNN_MAX_LAYERS];    // output channels of each layer
} CnnConfig;

typedef struct {
    CnnConfig cfg;
    float *weight[CNN_MAX_LAYERS];  // (c_i, c_{i-1}, 3, 3), views into a Block
    float *bias[CNN_MAX_LAYERS];    // (c_i)
} CnnParams;

typedef struct {
    CnnConfig cfg;
    int B, S;         // capacity: batch and image side
    void *mem;        // the one allocation
    size_t bytes;
    int group;                              // images per GEMM (and per pass through the layers)
    float *pool[CNN_MAX_LAYERS];            // (B, c_i, s_i / 2, s_i / 2): layer outputs (the
                                            // last layer's: one group's, then the annotations)
    unsigned char *argmax[CNN_MAX_LAYERS];  // (B, c_i, s_i / 2, s_i / 2): per window, the
                                            // winner dy * 2 + dx (first maximum in row-major
                                            // order), + 4 when the pooled value is positive
    // Scratch for one group of images, the largest layer's size:
    float *pre;       // conv output (c_i, group, s_i, s_i) (forward), its gradient (backward)
    float *col;       // column matrix (c_{i-1} 9, group s_i s_i) (im2col), and its gradient
    float *grad[2];   // backward: pool-output gradients of this layer and the one below
    float *dwt[CNN_MAX_LAYERS];  // backward: weight gradients, transposed (c_{i-1} 9, c_i)
                                 // (im2col layers) or Winograd's dU (16, c_i, c_{i-1})
    // Layers whose convolution runs through vision/winograd.h (1) or im2col (0); for those,
    // pre holds the group's M (16, c_i, group T) and col its V (16, c_{i-1}, group T),
    // T = (s_i / 2)^2 tiles per image, and wu[i] the transformed weights U (16, c_i, c_{i-1}).
    int winograd[CNN_MAX_LAYERS];
    float *wu[CNN_MAX_LAYERS];
} CnnWorkspace;

// How the workspace's layers convolve: AUTO picks Winograd F(2x2, 3x3) for the layers
// where it measured faster (even side s_i and at least CNN_WINOGRAD_MIN_CHANNELS input
// channels), im2col for the others; IM2COL and WINOGRAD force one (WINOGRAD still uses
// im2col on odd sides, where the 2x2 tiles do not fit).
typedef enum { CNN_CONV_AUTO, CNN_CONV_IM2COL, CNN_CONV_WINOGRAD } CnnConv;
#define CNN_WINOGRAD_MIN_CHANNELS 8

// Images per GEMM by default. One: on the default configuration (64 x 64, batch 32, one
// OpenBLAS thread) forward + backward took 57 ms with groups of 1, 63 with 2, 67 with 4
// and 70-71 with 8 (bench/bench_cnn.c, which takes the group size as an argument; with
// im2col everywhere, before Winograd: 83, 85-88, 87-91, 98, and 124-128 with 32). The
// Winograd GEMMs have a small K (the input channels), but per image their N (the tiles,
// 256 and 64) already suits OpenBLAS's small-matrix kernels; bigger operands run through
// its packing path and fall out of cache.
#define CNN_GROUP 1

// 3 input channels, layers 32, 64, 128.
void cnn_config_default(CnnConfig *cfg);
// Parses a comma-separated channel list like "32,64,128" (in_channels unchanged);
// flag names the option in messages, e.g. "--cnn".
int cnn_config_parse(CnnConfig *cfg, const char *list, const char *flag, Error *err);

void cnn_register(CnnParams *p, Block *block, const char *prefix, const CnnConfig *cfg);
// He init (needs the Block allocated).
void cnn_init(CnnParams *p, Rng *rng);

static inline int cnn_grid_size(const CnnConfig *cfg, int S) { return S >> cfg->n_layers; }
static inline int cnn_dim(const CnnConfig *cfg) { return cfg->channels[cfg->n_layers - 1]; }
// Bytes the workspace for (B, S) needs (activations, argmax, scratch).
size_t cnn_workspace_bytes(const CnnConfig *cfg, int B, int S);
// 0 when every buffer the workspace indexes with int arithmetic fits DIMS_MAX floats
// (core/dims.h): a group's input, convolution output and column matrix per layer (offsets
// between images are size_t, so the batch is no term); else -1 with one line naming
// size_flag (e.g. "--image-size") and the --channels entries. group as cnn_workspace_alloc_grouped.
int cnn_check_sizes(const CnnConfig *cfg, int S, int group, const char *size_flag, Error *err);
// CHECKs S >> n_layers >= 1. Groups of CNN_GROUP images.
void cnn_workspace_alloc(CnnWorkspace *ws, const CnnConfig *cfg, int B, int S);
// The same with groups of `group` images (>= 1; capped at B).
void cnn_workspace_alloc_grouped(CnnWorkspace *ws, const CnnConfig *cfg, int B, int S, int group);
// The same with the convolution method chosen (cnn_workspace_alloc_grouped: CNN_CONV_AUTO).
void cnn_workspace_alloc_conv(CnnWorkspace *ws, const CnnConfig *cfg, int B, int S, int group,
                              CnnConv conv);
void cnn_workspace_free(CnnWorkspace *ws);

// annot (B, L, D), images (B, in_channels, S, S) with S = ws->S, B <= ws->B
void cnn_forward(float *annot, CnnWorkspace *ws, const float *images, const CnnParams *p,
                 int B);
// accumulates: grads (same layout as p), dimages (B, in_channels, S, S) or NULL;
// dannot (B, L, D). Uses ws's scratch (pre, col, grad) but leaves the forward
// activations intact, so backward may be called again for another dannot.
void cnn_backward(CnnParams *grads, float *dimages, const float *dannot, CnnWorkspace *ws,
                  const float *images, const CnnParams *p, int B);

#endif
