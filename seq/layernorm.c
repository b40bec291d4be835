// layernorm.c: see layernorm.h.
//
// Backward, with xhat = (x - mean) rstd and g = dout * weight per row:
//     dx = rstd (g - mean_i(g) - xhat mean_i(g xhat)),  dweight += dout xhat,  dbias += dout.
#include "seq/layernorm.h"

#include <math.h>
#include <stddef.h>

#include "core/check.h"

static void row_stats(float *mean, float *rstd, const float *x, float eps, int C) {
    double s = 0.0;
    for (int i = 0; i < C; i++) s += x[i];
    double m = s / C, v = 0.0;
    for (int i = 0; i < C; i++) v += ((double)x[i] - m) * ((double)x[i] - m);
    *mean = (float)m;
    *rstd = (float)(1.0 / sqrt(v / C + (double)eps));
}

void layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                       const float *weight, const float *bias, float eps, int N, int C) {
    CHECK(N >= 0 && C >= 1, "layernorm N = %d, C = %d", N, C);
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        float *o = out + (size_t)n * C;
        row_stats(&mean[n], &rstd[n], x, eps, C);
        float m = mean[n], r = rstd[n];
        for (int i = 0; i < C; i++) o[i] = (x[i] - m) * r * weight[i] + bias[i];
    }
}

void layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                        const float *inp, const float *mean, const float *rstd,
                        const float *weight, int N, int C) {
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C, *d = dout + (size_t)n * C;
        float *dx = dinp + (size_t)n * C;
        float m = mean[n], r = rstd[n];
        double sg = 0.0, sgx = 0.0;
        for (int i = 0; i < C; i++) {
            float xhat = (x[i] - m) * r, g = d[i] * weight[i];
            sg += g;
            sgx += (double)g * xhat;
            dweight[i] += d[i] * xhat;
            dbias[i] += d[i];
        }
        float mg = (float)(sg / C), mgx = (float)(sgx / C);
        for (int i = 0; i < C; i++) {
            float xhat = (x[i] - m) * r;
            dx[i] += r * (d[i] * weight[i] - mg - xhat * mgx);
        }
    }
}
