// convnet.h: the plain convolutional baseline of DRAW's cluttered-MNIST table (Gregor et
// al. 2015, table 1, "convolutional, 2 layers", 14.35 %): the toolkit's CNN (vision/cnn.h:
// each layer a 3 x 3 convolution, ReLU and 2 x 2 max-pooling; 16 then 32 channels by
// default) on the whole S x S grey image, a fully connected ReLU layer (256), and a softmax
// layer. The paper does not describe its network beyond "2 layers"; this one is ours.
//
//     feat   = CNN(x)                        (B, L D), L = (S / 4)^2 positions, D channels
//     a      = relu(fc.W feat + fc.b)        (B, fc)
//     logits = out.W a + out.b               (B, classes)
//     loss   = mean over the batch of -log softmax(logits)[label]
#ifndef MODELS_CONVNET_H
#define MODELS_CONVNET_H

#include "core/block.h"
#include "core/error.h"
#include "core/rng.h"
#include "vision/cnn.h"

typedef struct {
    int S;                        // image side (square images)
    int layers;                   // convolutional layers (1 .. CNN_MAX_LAYERS)
    int channels[CNN_MAX_LAYERS];
    int fc;                       // units of the fully connected layer
    int classes;
} ConvnetConfig;

// S x S, 2 layers of 16 and 32 channels, fc 256, 10 classes.
ConvnetConfig convnet_config_default(int S);
int convnet_config_check(const ConvnetConfig *c, Error *err);
// Features after the CNN: (S >> layers)^2 positions times the last channel count.
int convnet_feature_size(const ConvnetConfig *c);

typedef struct {
    CnnParams cnn;          // cnn.conv{i}.weight, cnn.conv{i}.bias
    float *fc_W, *fc_b;     // (fc, features), (fc)
    float *out_W, *out_b;   // (classes, fc), (classes)
} ConvnetParams;

void convnet_layout(Block *b, ConvnetParams *p, const ConvnetConfig *c);
void convnet_init(ConvnetParams *p, const ConvnetConfig *c, Rng *rng);

typedef struct {
    Block block;
    CnnWorkspace ws;
    int B;
    float *feat;     // (B, features)
    float *act;      // (B, fc) after the ReLU
    float *logits, *probs, *dlogits;  // (B, classes)
    float *losses;   // (B)
    float *dact;     // (B, fc)
    float *dfeat;    // (B, features)
} ConvnetActs;

// 0 when batches of up to B fit what the kernels index (core/dims.h; the CNN's workspace
// by cnn_check_sizes); else -1 with one line naming --batch and the sizes.
int convnet_check_sizes(const ConvnetConfig *c, int B, Error *err);
void convnet_acts_alloc(ConvnetActs *a, const ConvnetConfig *c, int B);
void convnet_acts_free(ConvnetActs *a);
// x (B, S S), labels (B); returns the mean loss; correct (may be NULL) as glimpse_forward.
double convnet_forward(ConvnetActs *a, const ConvnetParams *p, const ConvnetConfig *c,
                       const float *x, const int *labels, int B, int *correct);
// Accumulates into g the gradient of the last forward's mean loss.
void convnet_backward(ConvnetParams *g, ConvnetActs *a, const ConvnetParams *p,
                      const ConvnetConfig *c, const float *x, const int *labels, int B);

#endif
