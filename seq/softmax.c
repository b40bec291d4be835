#include "seq/softmax.h"

#include <math.h>
#include <stddef.h>

void softmax_forward(float *out, const float *x, const unsigned char *mask, int N, int L) {
    for (int n = 0; n < N; n++) {
        const float *restrict xr = x + (size_t)n * L;
        const unsigned char *restrict mr = mask ? mask + (size_t)n * L : NULL;
        float *restrict o = out + (size_t)n * L;
        float mx = -INFINITY;
        for (int i = 0; i < L; i++)
            if ((!mr || mr[i]) && xr[i] > mx) mx = xr[i];
        // Every entry masked (or every kept entry -inf, as attention masks write): zeros.
        if (mx == -INFINITY) {
            for (int i = 0; i < L; i++) o[i] = 0.0f;
            continue;
        }
        double sum = 0.0;
        for (int i = 0; i < L; i++) {
            float e = (!mr || mr[i]) ? expf(xr[i] - mx) : 0.0f;
            o[i] = e;
            sum += e;
        }
        float inv = (float)(1.0 / sum);  // sum >= 1: the max entry contributes exp(0)
        for (int i = 0; i < L; i++) o[i] *= inv;
    }
}

void softmax_backward(float *dx, const float *dout, const float *out, int N, int L) {
    for (int n = 0; n < N; n++) {
        const float *restrict d = dout + (size_t)n * L;
        const float *restrict o = out + (size_t)n * L;
        float *restrict g = dx + (size_t)n * L;
        double dot = 0.0;
        for (int i = 0; i < L; i++) dot += (double)d[i] * o[i];
        float s = (float)dot;
        for (int i = 0; i < L; i++) g[i] += o[i] * (d[i] - s);
    }
}
