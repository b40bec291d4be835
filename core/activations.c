#include "core/activations.h"

#include <math.h>

// Each loop touches one element per iteration with no cross-iteration dependence, and the
// fast approximations are branch-free float arithmetic, so -O3 vectorises whole loops.

void sigmoid_forward(float *restrict out, const float *restrict x, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = sigmoid_fast(x[i]);
}

void sigmoid_backward(float *restrict dx, const float *restrict dout, const float *restrict out,
                      size_t n) {
    for (size_t i = 0; i < n; i++) dx[i] += dout[i] * out[i] * (1.0f - out[i]);
}

void tanh_forward(float *restrict out, const float *restrict x, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = tanh_fast(x[i]);
}

void tanh_backward(float *restrict dx, const float *restrict dout, const float *restrict out,
                   size_t n) {
    for (size_t i = 0; i < n; i++) dx[i] += dout[i] * (1.0f - out[i] * out[i]);
}

void relu_forward(float *restrict out, const float *restrict x, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void relu_backward(float *restrict dx, const float *restrict dout, const float *restrict out,
                   size_t n) {
    for (size_t i = 0; i < n; i++) dx[i] += out[i] > 0.0f ? dout[i] : 0.0f;
}

void sigmoid_forward_ref(float *out, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = sigmoidf_(x[i]);
}

void tanh_forward_ref(float *out, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = tanhf(x[i]);
}
