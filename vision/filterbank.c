#include "vision/filterbank.h"

#include <math.h>
#include <string.h>

#include "core/check.h"
#include "core/gemm.h"

enum { P_GX, P_GY, P_LOG_S2, P_LOG_DELTA, P_LOG_GAMMA };

#define LOG_S2_MIN (-80.0)
#define LOG_S2_MAX 80.0

typedef struct {
    double gx, gy, delta, s2, gamma;
    int s2_clamped;
} Geometry;

static Geometry geometry(const float *p, int N, int W, int H) {
    Geometry g;
    g.gx = 0.5 * (W + 1) * ((double)p[P_GX] + 1.0);
    g.gy = 0.5 * (H + 1) * ((double)p[P_GY] + 1.0);
    int mx = W > H ? W : H;
    double scale = N > 1 ? (double)(mx - 1) / (N - 1) : (double)(mx - 1);
    g.delta = scale * exp((double)p[P_LOG_DELTA]);
    double ls = p[P_LOG_S2];
    g.s2_clamped = ls < LOG_S2_MIN || ls > LOG_S2_MAX;
    if (ls < LOG_S2_MIN) ls = LOG_S2_MIN;
    if (ls > LOG_S2_MAX) ls = LOG_S2_MAX;
    g.s2 = exp(ls);
    g.gamma = exp((double)p[P_LOG_GAMMA]);
    return g;
}

// Offset of grid point i (0-based) from the centre, in strides: (i + 1) - N/2 - 0.5.
static inline double grid_offset(int i, int N) { return (double)i + 0.5 - 0.5 * N; }

// One filterbank F (N, L) along an axis of L pixels with centre g: row i is the softmax
// over a = 1..L of -(a - mu_i)^2 / (2 s2).
static void axis_forward(float *F, double g, double delta, double s2, int N, int L) {
    double inv = 0.5 / s2;
    for (int i = 0; i < N; i++) {
        double mu = g + grid_offset(i, N) * delta;
        // The largest logit is at the pixel nearest mu (clamped to the image).
        double best = -INFINITY;
        for (int a = 0; a < L; a++) {
            double d = (a + 1) - mu, l = -d * d * inv;
            if (l > best) best = l;
        }
        double sum = 0.0;
        float *row = F + (size_t)i * L;
        for (int a = 0; a < L; a++) {
            double d = (a + 1) - mu, e = exp(-d * d * inv - best);
            row[a] = (float)e;
            sum += e;
        }
        float r = (float)(1.0 / sum);  // sum >= 1: the maximum contributes exp(0)
        for (int a = 0; a < L; a++) row[a] *= r;
    }
}

void filterbank_forward(float *Fx, float *Fy, float *gamma, const float *params, int B, int N,
                        int W, int H) {
    CHECK(N >= 1 && W >= 1 && H >= 1);
    for (int b = 0; b < B; b++) {
        Geometry g = geometry(params + (size_t)b * FILTERBANK_PARAMS, N, W, H);
        axis_forward(Fx + (size_t)b * N * W, g.gx, g.delta, g.s2, N, W);
        axis_forward(Fy + (size_t)b * N * H, g.gy, g.delta, g.s2, N, H);
        gamma[b] = (float)g.gamma;
    }
}

void filterbank_forward_ref(float *Fx, float *Fy, float *gamma, const float *params, int B, int N,
                            int W, int H) {
    // The textbook form: Gaussian divided by its sum (valid whenever Z does not underflow).
    for (int b = 0; b < B; b++) {
        Geometry g = geometry(params + (size_t)b * FILTERBANK_PARAMS, N, W, H);
        for (int axis = 0; axis < 2; axis++) {
            int L = axis ? H : W;
            double c = axis ? g.gy : g.gx;
            float *F = (axis ? Fy + (size_t)b * N * H : Fx + (size_t)b * N * W);
            for (int i = 0; i < N; i++) {
                double mu = c + ((i + 1) - N / 2.0 - 0.5) * g.delta, Z = 0.0;
                for (int a = 1; a <= L; a++) Z += exp(-(a - mu) * (a - mu) / (2 * g.s2));
                for (int a = 1; a <= L; a++)
                    F[(size_t)i * L + a - 1] = (float)(exp(-(a - mu) * (a - mu) / (2 * g.s2)) / Z);
            }
        }
        gamma[b] = (float)g.gamma;
    }
}

// Backward of axis_forward: returns d/dcentre via dmu, accumulates d/ddelta and d/dlog s2.
static void axis_backward(double *dg, double *ddelta, double *dlog_s2, const float *dF,
                          const float *F, double g, double delta, double s2, int N, int L) {
    for (int i = 0; i < N; i++) {
        const float *f = F + (size_t)i * L, *df = dF + (size_t)i * L;
        double mu = g + grid_offset(i, N) * delta;
        double dot = 0.0;
        for (int a = 0; a < L; a++) dot += (double)f[a] * df[a];
        double dmu = 0.0, ds = 0.0;
        for (int a = 0; a < L; a++) {
            double dl = f[a] * (df[a] - dot);  // softmax backward
            double d = (a + 1) - mu;
            dmu += dl * d / s2;            // dl/dmu = (a - mu) / s2
            ds += dl * d * d / (2.0 * s2);  // dl/dlog s2 = (a - mu)^2 / (2 s2)
        }
        *dg += dmu;
        *ddelta += dmu * grid_offset(i, N);
        *dlog_s2 += ds;
    }
}

void filterbank_backward(float *dparams, const float *dFx, const float *dFy, const float *dgamma,
                         const float *Fx, const float *Fy, const float *params, int B, int N,
                         int W, int H) {
    for (int b = 0; b < B; b++) {
        const float *p = params + (size_t)b * FILTERBANK_PARAMS;
        float *dp = dparams + (size_t)b * FILTERBANK_PARAMS;
        Geometry g = geometry(p, N, W, H);
        double dgx = 0, dgy = 0, ddelta = 0, dls = 0;
        if (dFx)
            axis_backward(&dgx, &ddelta, &dls, dFx + (size_t)b * N * W, Fx + (size_t)b * N * W,
                          g.gx, g.delta, g.s2, N, W);
        if (dFy)
            axis_backward(&dgy, &ddelta, &dls, dFy + (size_t)b * N * H, Fy + (size_t)b * N * H,
                          g.gy, g.delta, g.s2, N, H);
        dp[P_GX] += (float)(dgx * 0.5 * (W + 1));
        dp[P_GY] += (float)(dgy * 0.5 * (H + 1));
        if (!g.s2_clamped) dp[P_LOG_S2] += (float)dls;
        dp[P_LOG_DELTA] += (float)(ddelta * g.delta);
        if (dgamma) dp[P_LOG_GAMMA] += (float)(dgamma[b] * g.gamma);
    }
}

int filterbank_scratch_floats(int N, int W, int H) { return 2 * H * N + 2 * N * W + N * N; }

void filterbank_read_forward(float *patch, int ld_patch, const float *img, const float *Fx,
                             const float *Fy, const float *gamma, float *scratch, int B, int N,
                             int W, int H) {
    float *tmp = scratch;  // (H, N) = img @ Fx^T
    for (int b = 0; b < B; b++) {
        const float *x = img + (size_t)b * H * W, *fx = Fx + (size_t)b * N * W,
                    *fy = Fy + (size_t)b * N * H;
        gemm(false, true, H, N, W, 1.0f, x, W, fx, W, 0.0f, tmp, N);
        gemm(false, false, N, N, H, gamma[b], fy, H, tmp, N, 0.0f, patch + (size_t)b * ld_patch,
             N);
    }
}

void filterbank_read_backward(float *dimg, float *dFx, float *dFy, float *dgamma,
                              const float *dpatch, int ld_patch, const float *img,
                              const float *Fx, const float *Fy, const float *gamma,
                              float *scratch, int B, int N, int W, int H) {
    float *tmp = scratch;           // (H, N) = img @ Fx^T
    float *v = tmp + H * N;         // (H, N) = gamma Fy^T dpatch
    float *P = v + H * N;           // (N, N) = Fy tmp
    for (int b = 0; b < B; b++) {
        const float *x = img + (size_t)b * H * W, *fx = Fx + (size_t)b * N * W,
                    *fy = Fy + (size_t)b * N * H, *G = dpatch + (size_t)b * ld_patch;
        float gm = gamma[b];
        gemm(false, true, H, N, W, 1.0f, x, W, fx, W, 0.0f, tmp, N);
        gemm(false, false, N, N, H, 1.0f, fy, H, tmp, N, 0.0f, P, N);
        double dg = 0.0;
        for (int k = 0; k < N * N; k++) dg += (double)G[k] * P[k];
        dgamma[b] += (float)dg;
        gemm(false, true, N, H, N, gm, G, N, tmp, N, 1.0f, dFy + (size_t)b * N * H, H);
        gemm(true, false, H, N, N, gm, fy, H, G, N, 0.0f, v, N);
        gemm(true, false, N, W, H, 1.0f, v, N, x, W, 1.0f, dFx + (size_t)b * N * W, W);
        if (dimg) gemm(false, false, H, W, N, 1.0f, v, N, fx, W, 1.0f, dimg + (size_t)b * H * W, W);
    }
}

void filterbank_write_forward(float *out, const float *patch, const float *Fx, const float *Fy,
                              const float *gamma, float *scratch, int B, int N, int W, int H) {
    float *t1 = scratch;  // (N, W) = patch @ Fx
    for (int b = 0; b < B; b++) {
        const float *fx = Fx + (size_t)b * N * W, *fy = Fy + (size_t)b * N * H;
        gemm(false, false, N, W, N, 1.0f, patch + (size_t)b * N * N, N, fx, W, 0.0f, t1, W);
        gemm(true, false, H, W, N, 1.0f / gamma[b], fy, H, t1, W, 1.0f, out + (size_t)b * H * W,
             W);
    }
}

void filterbank_write_backward(float *dpatch, float *dFx, float *dFy, float *dgamma,
                               const float *dout, const float *patch, const float *Fx,
                               const float *Fy, const float *gamma, float *scratch, int B, int N,
                               int W, int H) {
    float *q = scratch;        // (H, N) = dout @ Fx^T
    float *R = q + H * N;      // (N, N) = Fy q
    float *t1 = R + N * N;     // (N, W) = patch @ Fx
    float *p = t1 + N * W;     // (N, W) = Fy dout
    for (int b = 0; b < B; b++) {
        const float *fx = Fx + (size_t)b * N * W, *fy = Fy + (size_t)b * N * H,
                    *D = dout + (size_t)b * H * W, *w = patch + (size_t)b * N * N;
        float s = 1.0f / gamma[b];
        gemm(false, true, H, N, W, 1.0f, D, W, fx, W, 0.0f, q, N);
        gemm(false, false, N, N, H, 1.0f, fy, H, q, N, 0.0f, R, N);
        float *dw = dpatch + (size_t)b * N * N;
        double dg = 0.0;
        for (int k = 0; k < N * N; k++) {
            dw[k] += s * R[k];
            dg += (double)w[k] * R[k];
        }
        dgamma[b] += (float)(-(double)s * s * dg);
        gemm(false, false, N, W, N, 1.0f, w, N, fx, W, 0.0f, t1, W);
        gemm(false, true, N, H, W, s, t1, W, D, W, 1.0f, dFy + (size_t)b * N * H, H);
        gemm(false, false, N, W, H, 1.0f, fy, H, D, W, 0.0f, p, W);
        gemm(true, false, N, W, N, s, w, N, p, W, 1.0f, dFx + (size_t)b * N * W, W);
    }
}

void filterbank_read_forward_ref(float *patch, int ld_patch, const float *img, const float *Fx,
                                 const float *Fy, const float *gamma, int B, int N, int W, int H) {
    for (int b = 0; b < B; b++) {
        const float *x = img + (size_t)b * H * W, *fx = Fx + (size_t)b * N * W,
                    *fy = Fy + (size_t)b * N * H;
        for (int i = 0; i < N; i++)      // row of the grid (y)
            for (int j = 0; j < N; j++) {  // column of the grid (x)
                double s = 0.0;
                for (int h = 0; h < H; h++)
                    for (int a = 0; a < W; a++)
                        s += (double)fy[i * H + h] * x[h * W + a] * fx[j * W + a];
                patch[(size_t)b * ld_patch + i * N + j] = (float)(gamma[b] * s);
            }
    }
}

void filterbank_write_forward_ref(float *out, const float *patch, const float *Fx,
                                  const float *Fy, const float *gamma, int B, int N, int W, int H) {
    for (int b = 0; b < B; b++) {
        const float *fx = Fx + (size_t)b * N * W, *fy = Fy + (size_t)b * N * H,
                    *w = patch + (size_t)b * N * N;
        for (int h = 0; h < H; h++)
            for (int a = 0; a < W; a++) {
                double s = 0.0;
                for (int i = 0; i < N; i++)
                    for (int j = 0; j < N; j++) s += (double)fy[i * H + h] * w[i * N + j] * fx[j * W + a];
                out[(size_t)b * H * W + h * W + a] += (float)(s / gamma[b]);
            }
    }
}

FilterbankWindow filterbank_window(const float *params, int N, int W, int H) {
    Geometry g = geometry(params, N, W, H);
    FilterbankWindow w;
    double half = 0.5 * (N - 1) * g.delta;
    // 1-based pixel coordinates to 0-based.
    w.gx = (float)(g.gx - 1.0);
    w.gy = (float)(g.gy - 1.0);
    w.delta = (float)g.delta;
    w.sigma = (float)sqrt(g.s2);
    w.gamma = (float)g.gamma;
    w.x0 = (float)(g.gx - 1.0 - half);
    w.x1 = (float)(g.gx - 1.0 + half);
    w.y0 = (float)(g.gy - 1.0 - half);
    w.y1 = (float)(g.gy - 1.0 + half);
    return w;
}
