// layernorm.c: see layernorm.h.
//
// Backward, with xhat = (x - mean) rstd and g = dout * weight per row:
//     dx = rstd (g - mean_i(g) - xhat mean_i(g xhat)),  dweight += dout xhat,  dbias += dout.
#include "seq/layernorm.h"

#include <math.h>
#include <stddef.h>

#include "core/check.h"

// The row sums in LANES running double sums: the same precision as one running sum, but no
// chain of dependent adds (a single running sum held the forward pass to one add per
// latency), and the compiler vectorises them.
enum { LANES = 8 };

static double sum_lanes(const float *x, int C) {
    double acc[LANES] = {0};
    int i = 0;
    for (; i + LANES <= C; i += LANES)
        for (int l = 0; l < LANES; l++) acc[l] += x[i + l];
    double s = 0.0;
    for (; i < C; i++) s += x[i];
    for (int l = 0; l < LANES; l++) s += acc[l];
    return s;
}

// sum_i (x_i - m)^2
static double sumsq_dev_lanes(const float *x, double m, int C) {
    double acc[LANES] = {0};
    int i = 0;
    for (; i + LANES <= C; i += LANES)
        for (int l = 0; l < LANES; l++) acc[l] += ((double)x[i + l] - m) * ((double)x[i + l] - m);
    double s = 0.0;
    for (; i < C; i++) s += ((double)x[i] - m) * ((double)x[i] - m);
    for (int l = 0; l < LANES; l++) s += acc[l];
    return s;
}

void layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                       const float *weight, const float *bias, float eps, int N, int C) {
    CHECK(N >= 0 && C >= 1, "layernorm N = %d, C = %d", N, C);
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        float *o = out + (size_t)n * C;
        double m = sum_lanes(x, C) / C, v = sumsq_dev_lanes(x, m, C);
        mean[n] = (float)m;
        rstd[n] = (float)(1.0 / sqrt(v / C + (double)eps));
        float mf = mean[n], r = rstd[n];
        for (int i = 0; i < C; i++) o[i] = (x[i] - mf) * r * weight[i] + bias[i];
    }
}

// One row of the backward: dx (C) += ..., dweight, dbias (C) += ...; none may alias the
// inputs (restrict: so the compiler vectorises the loops without alias checks).
static void backward_row(float *restrict dx, float *restrict dweight, float *restrict dbias,
                         const float *restrict d, const float *restrict x,
                         const float *restrict weight, float m, float r, int C) {
    double sg[LANES] = {0}, sgx[LANES] = {0};
    int i = 0;
    for (; i + LANES <= C; i += LANES)
        for (int l = 0; l < LANES; l++) {
            float xhat = (x[i + l] - m) * r, g = d[i + l] * weight[i + l];
            sg[l] += g;
            sgx[l] += (double)g * xhat;
        }
    double tg = 0.0, tgx = 0.0;
    for (; i < C; i++) {
        float xhat = (x[i] - m) * r, g = d[i] * weight[i];
        tg += g;
        tgx += (double)g * xhat;
    }
    for (int l = 0; l < LANES; l++) tg += sg[l], tgx += sgx[l];
    float mg = (float)(tg / C), mgx = (float)(tgx / C);
    for (int k = 0; k < C; k++) {
        float xhat = (x[k] - m) * r;
        dweight[k] += d[k] * xhat;
        dbias[k] += d[k];
        dx[k] += r * (d[k] * weight[k] - mg - xhat * mgx);
    }
}

void layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                        const float *inp, const float *mean, const float *rstd,
                        const float *weight, int N, int C) {
    for (int n = 0; n < N; n++)
        backward_row(dinp + (size_t)n * C, dweight, dbias, dout + (size_t)n * C,
                     inp + (size_t)n * C, weight, mean[n], rstd[n], C);
}

// --- the plain-loop reference --------------------------------------------------------------

static void row_stats_ref(float *mean, float *rstd, const float *x, float eps, int C) {
    double s = 0.0;
    for (int i = 0; i < C; i++) s += x[i];
    double m = s / C, v = 0.0;
    for (int i = 0; i < C; i++) v += ((double)x[i] - m) * ((double)x[i] - m);
    *mean = (float)m;
    *rstd = (float)(1.0 / sqrt(v / C + (double)eps));
}

void layernorm_forward_ref(float *out, float *mean, float *rstd, const float *inp,
                           const float *weight, const float *bias, float eps, int N, int C) {
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        float *o = out + (size_t)n * C;
        row_stats_ref(&mean[n], &rstd[n], x, eps, C);
        for (int i = 0; i < C; i++) o[i] = (x[i] - mean[n]) * rstd[n] * weight[i] + bias[i];
    }
}

void layernorm_backward_ref(float *dinp, float *dweight, float *dbias, const float *dout,
                            const float *inp, const float *mean, const float *rstd,
                            const float *weight, int N, int C) {
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C, *d = dout + (size_t)n * C;
        double sg = 0.0, sgx = 0.0;
        for (int i = 0; i < C; i++) {
            double xhat = ((double)x[i] - mean[n]) * rstd[n], g = (double)d[i] * weight[i];
            sg += g;
            sgx += g * xhat;
            dweight[i] += (float)(d[i] * xhat);
            dbias[i] += d[i];
        }
        for (int i = 0; i < C; i++) {
            double xhat = ((double)x[i] - mean[n]) * rstd[n];
            dinp[(size_t)n * C + i] += (float)(rstd[n] * (d[i] * (double)weight[i] - sg / C -
                                                          xhat * sgx / C));
        }
    }
}
