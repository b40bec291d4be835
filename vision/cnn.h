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
    float *conv[CNN_MAX_LAYERS];  // (B, c_i, s_i, s_i) after ReLU, s_i = S >> i
    float *pool[CNN_MAX_LAYERS];  // (B, c_i, s_i / 2, s_i / 2)
    int *argmax[CNN_MAX_LAYERS];  // (B, c_i, s_i / 2, s_i / 2)
    float *pre;                   // scratch: pre-ReLU conv output (forward), its gradient
                                  // (backward); the largest conv output's size
    float *dpool;                 // scratch for backward: pool-output gradients, largest size
    float *col;                   // im2col scratch, the largest layer's size
} CnnWorkspace;

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
// CHECKs S >> n_layers >= 1.
void cnn_workspace_alloc(CnnWorkspace *ws, const CnnConfig *cfg, int B, int S);
void cnn_workspace_free(CnnWorkspace *ws);

// annot (B, L, D), images (B, in_channels, S, S) with S = ws->S, B <= ws->B
void cnn_forward(float *annot, CnnWorkspace *ws, const float *images, const CnnParams *p,
                 int B);
// accumulates: grads (same layout as p), dimages (B, in_channels, S, S) or NULL;
// dannot (B, L, D). Uses ws's scratch (pre, dpool, col) but leaves the forward
// activations intact, so backward may be called again for another dannot.
void cnn_backward(CnnParams *grads, float *dimages, const float *dannot, CnnWorkspace *ws,
                  const float *images, const CnnParams *p, int B);

#endif
