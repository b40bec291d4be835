// activations.h: elementwise nonlinearities, forward and backward, used by every layer.
// Backward functions accumulate (+=) into the input gradient. n elements throughout.
#ifndef CORE_ACTIVATIONS_H
#define CORE_ACTIVATIONS_H

#include <stddef.h>

// out = 1 / (1 + exp(-x)), stable for large |x|
void sigmoid_forward(float *out, const float *x, size_t n);
// dx += dout * out * (1 - out)   (out: the forward's output)
void sigmoid_backward(float *dx, const float *dout, const float *out, size_t n);

void tanh_forward(float *out, const float *x, size_t n);
// dx += dout * (1 - out^2)
void tanh_backward(float *dx, const float *dout, const float *out, size_t n);

void relu_forward(float *out, const float *x, size_t n);
// dx += dout * (out > 0)
void relu_backward(float *dx, const float *dout, const float *out, size_t n);

// Scalar helpers for fused loops.
static inline float sigmoidf_(float x) {
    return x >= 0 ? 1.0f / (1.0f + __builtin_expf(-x)) : __builtin_expf(x) / (1.0f + __builtin_expf(x));
}

#endif
