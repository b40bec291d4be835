#include "vision/filterbank.h"

#include <math.h>
#include <string.h>

#include "core/activations.h"
#include "core/check.h"
#include "core/gemm.h"
#include "core/vector_width.h"

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
// over a = 1..L of -(a - mu_i)^2 / (2 s2). The logits are formed in double and shifted by
// their maximum, the logit of the pixel nearest mu (clamped to the image), so the shifted
// values are <= 0 and the largest is exactly 0; then rounded to float (an absolute error
// of at most 6e-8 |logit|) for the vectorised exp_fast. Shifted logits below -64 count as
// -64: F >= e^-64 / L (1.6e-28 / L) rather than values that would underflow to subnormal
// floats, whose arithmetic costs about 100 cycles each here and downstream (the read and
// write products, the backward).
#define LOGIT_FLOOR (-64.0)

// The largest logit of a row, -(a - mu)^2 inv at the pixel a nearest mu (clamped to the
// image): the same double the loop over all pixels would find.
static double peak_logit(double mu, double inv, int L) {
    double near = floor(mu + 0.5);
    near = near < 1.0 ? 1.0 : near > L ? (double)L : near;  // NaN mu stays NaN
    double dn = near - mu;
    return -dn * dn * inv;
}

// The helpers below pass vector values between static inline functions only, never across
// a call another translation unit makes, so the ABI note GCC gives for wide vectors when
// the target lacks AVX-512 (the sanitizer and valgrind builds) does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
// Pixels go in groups of LANES = 8, each group's sums in eight interleaved partial sums
// combined in a fixed order. A group is held as PARTS vectors of the target's width: one
// AVX-512 register of 8 doubles, or two AVX ones of 4. Written as one 8-double value, on
// AVX2 GCC split the compares into scalar code and kept the sums on the stack (21 % of the
// glimpse classifier's step on a Zen 3); every lane does the same arithmetic either way, so
// the width changes no result.
enum { LANES = 8 };
enum { DLANES = VECTOR_BYTES / sizeof(double) };
enum { PARTS = LANES / DLANES };
typedef double Doubles __attribute__((vector_size(DLANES * sizeof(double))));
typedef float Floats __attribute__((vector_size(DLANES * sizeof(float))));
typedef long long Mask __attribute__((vector_size(DLANES * sizeof(long long))));
static inline Doubles doubles_load(const float *p) {
    Floats v;
    memcpy(&v, p, sizeof v);
    return __builtin_convertvector(v, Doubles);
}
static inline void floats_store(float *p, Doubles v) {
    Floats f = __builtin_convertvector(v, Floats);
    memcpy(p, &f, sizeof f);
}
// Lane k of the group (k = 0..7) is lane k % DLANES of part k / DLANES.
static inline double group_lane(const Doubles *p, int k) { return p[k / DLANES][k % DLANES]; }
static inline double lanes_total(const Doubles *p) {
    return ((group_lane(p, 0) + group_lane(p, 4)) + (group_lane(p, 1) + group_lane(p, 5))) +
           ((group_lane(p, 2) + group_lane(p, 6)) + (group_lane(p, 3) + group_lane(p, 7)));
}
// Pixel offsets 1 .. 8 of a group, part by part.
static inline Doubles group_pixels(int part) {
    Doubles v;
    for (int k = 0; k < DLANES; k++) v[k] = (double)(part * DLANES + k + 1);
    return v;
}
// The logits and the sum over the groups; exp_fast over the row of floats, which GCC
// vectorises by itself.
static void axis_forward(float *F, double g, double delta, double s2, int N, int L) {
    const double inv = 0.5 / s2;
    const int L8 = L - L % LANES;
    const Doubles floor_ = LOGIT_FLOOR - (Doubles){0}, zero = {0};
    Doubles pixel[PARTS];
    for (int p = 0; p < PARTS; p++) pixel[p] = group_pixels(p);
    for (int i = 0; i < N; i++) {
        double mu = g + grid_offset(i, N) * delta, best = peak_logit(mu, inv, L);
        float *restrict row = F + (size_t)i * L;
        for (int a = 0; a < L8; a += LANES)
            for (int p = 0; p < PARTS; p++) {
                Doubles d = ((double)a + pixel[p]) - mu, l = -d * d * inv - best;
                Mask above = l > floor_;
                l = (Doubles)(((Mask)l & above) | ((Mask)floor_ & ~above));
                floats_store(row + a + p * DLANES, l);
            }
        for (int a = L8; a < L; a++) {
            double d = (a + 1) - mu, l = -d * d * inv - best;
            row[a] = (float)(l > LOGIT_FLOOR ? l : LOGIT_FLOOR);
        }
        for (int a = 0; a < L; a++) row[a] = exp_fast(row[a]);
        Doubles ps[PARTS];
        for (int p = 0; p < PARTS; p++) ps[p] = zero;
        for (int a = 0; a < L8; a += LANES)
            for (int p = 0; p < PARTS; p++) ps[p] += doubles_load(row + a + p * DLANES);
        double sum = lanes_total(ps);
        for (int a = L8; a < L; a++) sum += row[a];
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
// A logit held at the floor is a constant: its pixel adds nothing to d/dmu and d/dlog s2
// (otherwise e^-64 times (a - mu)^2 / s2 could be large when s2 is tiny). The sums over
// pixels run in double in eight interleaved partial sums combined in a fixed order (so
// results are reproducible), in the groups of vectors above: written as loops over arrays,
// GCC kept every operation scalar with a branch for the floor (7.5 % of the glimpse
// classifier's training step).
static void axis_backward(double *dg, double *ddelta, double *dlog_s2, const float *dF,
                          const float *F, double g, double delta, double s2, int N, int L) {
    const int L8 = L - L % LANES;
    const double inv = 0.5 / s2;
    const Doubles zero = {0};
    Doubles pixel[PARTS];
    for (int p = 0; p < PARTS; p++) pixel[p] = group_pixels(p);
    for (int i = 0; i < N; i++) {
        const float *f = F + (size_t)i * L, *df = dF + (size_t)i * L;
        double mu = g + grid_offset(i, N) * delta, best = peak_logit(mu, inv, L);
        Doubles pdot[PARTS];
        for (int p = 0; p < PARTS; p++) pdot[p] = zero;
        for (int a = 0; a < L8; a += LANES)
            for (int p = 0; p < PARTS; p++) {
                const int at = a + p * DLANES;
                pdot[p] += doubles_load(f + at) * doubles_load(df + at);
            }
        double dot = lanes_total(pdot);
        for (int a = L8; a < L; a++) dot += (double)f[a] * df[a];
        // softmax backward dl = f (df - dot); dl/dmu = (a - mu) / s2 and
        // dl/dlog s2 = (a - mu)^2 / (2 s2): sum dl d and dl d^2, scale after.
        Doubles p1[PARTS], p2[PARTS];
        for (int p = 0; p < PARTS; p++) p1[p] = zero, p2[p] = zero;
        for (int a = 0; a < L8; a += LANES)
            for (int p = 0; p < PARTS; p++) {
                const int at = a + p * DLANES;
                Doubles d = ((double)a + pixel[p]) - mu;  // 1-based pixels less mu
                Doubles dl = doubles_load(f + at) * (doubles_load(df + at) - dot);
                Mask kept = -d * d * inv - best > LOGIT_FLOOR;  // all ones or all zeros
                dl = (Doubles)((Mask)dl & kept);
                p1[p] += dl * d;
                p2[p] += dl * d * d;
            }
        double s1 = lanes_total(p1), sd2 = lanes_total(p2);
        for (int a = L8; a < L; a++) {
            double dl = f[a] * ((double)df[a] - dot), d = (a + 1) - mu;
            dl = -d * d * inv - best > LOGIT_FLOOR ? dl : 0.0;
            s1 += dl * d;
            sd2 += dl * d * d;
        }
        double dmu = s1 / s2;
        *dg += dmu;
        *ddelta += dmu * grid_offset(i, N);
        *dlog_s2 += sd2 / (2.0 * s2);
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

// The products below are per image and small (N x N grids on one image), so they run as
// plain loops rather than one BLAS call each: rows of length W are combined with axpy
// (vectorised over W) and contracted with dot8; no reduction runs over more than W terms.

// Dot product with 8 partial sums in a fixed order: it vectorises without -ffast-math, and
// a given input always gives the same result.
static inline float dot8(const float *restrict a, const float *restrict b, int n) {
    float acc[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) acc[k] += a[i + k] * b[i + k];
    float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

// y (n) += s x (n)
static inline void axpy(float *restrict y, float s, const float *restrict x, int n) {
    for (int i = 0; i < n; i++) y[i] += s * x[i];
}

// u (N, W) = A (N, K) @ X (K, W): each row of u a combination of the rows of X.
static void combine_rows(float *restrict u, const float *restrict A, const float *restrict X,
                         int N, int K, int W) {
    for (int j = 0; j < N; j++) {
        float *uj = u + (size_t)j * W;
        memset(uj, 0, sizeof(float) * W);
        for (int k = 0; k < K; k++) axpy(uj, A[(size_t)j * K + k], X + (size_t)k * W, W);
    }
}

static void read_forward_loops(float *patch, int ld_patch, const float *img, const float *Fx,
                               const float *Fy, const float *gamma, float *scratch, int B, int C,
                               int N, int W, int H) {
    float *u = scratch;  // (N, W) = Fy img, one channel at a time
    for (int b = 0; b < B; b++) {
        const float *fx = Fx + (size_t)b * N * W, *fy = Fy + (size_t)b * N * H;
        for (int ch = 0; ch < C; ch++) {
            const float *x = img + ((size_t)b * C + ch) * H * W;
            float *out = patch + (size_t)b * ld_patch + (size_t)ch * N * N;
            combine_rows(u, fy, x, N, H, W);
            for (int j = 0; j < N; j++)
                for (int i = 0; i < N; i++)
                    out[j * N + i] = gamma[b] * dot8(u + (size_t)j * W, fx + (size_t)i * W, W);
        }
    }
}

static void read_backward_loops(float *dimg, float *dFx, float *dFy, float *dgamma,
                                const float *dpatch, int ld_patch, const float *img,
                                const float *Fx, const float *Fy, const float *gamma,
                                float *scratch, int B, int C, int N, int W, int H) {
    float *u = scratch;          // (N, W) = Fy img
    float *z = u + N * W;        // (N, W) = gamma G Fx
    for (int b = 0; b < B; b++) {
        const float *fx = Fx + (size_t)b * N * W, *fy = Fy + (size_t)b * N * H;
        float gm = gamma[b];
        float *dfx = dFx + (size_t)b * N * W, *dfy = dFy + (size_t)b * N * H;
        double dg = 0.0;  // over the channels, which share gamma
        for (int ch = 0; ch < C; ch++) {
            const float *x = img + ((size_t)b * C + ch) * H * W,
                        *G = dpatch + (size_t)b * ld_patch + (size_t)ch * N * N;
            combine_rows(u, fy, x, N, H, W);
            // patch = gamma Fy img Fx^T, so d gamma = sum G (Fy img Fx^T) and
            // dFx[i] += gamma sum_j G[j, i] u[j]
            for (int j = 0; j < N; j++)
                for (int i = 0; i < N; i++) {
                    const float *uj = u + (size_t)j * W;
                    dg += (double)G[j * N + i] * dot8(uj, fx + (size_t)i * W, W);
                    axpy(dfx + (size_t)i * W, gm * G[j * N + i], uj, W);
                }
            // dFy[j, h] += img[h] . z[j] and dimg[h] += sum_j Fy[j, h] z[j]
            for (int j = 0; j < N; j++) {
                float *zj = z + (size_t)j * W;
                memset(zj, 0, sizeof(float) * W);
                for (int i = 0; i < N; i++) axpy(zj, gm * G[j * N + i], fx + (size_t)i * W, W);
                for (int h = 0; h < H; h++) dfy[(size_t)j * H + h] += dot8(x + (size_t)h * W, zj, W);
            }
            if (dimg) {
                float *di = dimg + ((size_t)b * C + ch) * H * W;
                for (int h = 0; h < H; h++)
                    for (int j = 0; j < N; j++)
                        axpy(di + (size_t)h * W, fy[(size_t)j * H + h], z + (size_t)j * W, W);
            }
        }
        dgamma[b] += (float)dg;
    }
}

// The read as GEMMs (core/gemm.h, OpenBLAS), per image and channel:
//     u (N, W) = Fy (N, H) img (H, W);  patch (N, N) = gamma u Fx^T
// and its backward with P = u Fx^T (N, N), G = dpatch (N, N):
//     d gamma += sum G P;  dFx += gamma G^T u;  Z (N, W) = gamma G Fx;
//     dFy += Z img^T;  dimg += Fy^T Z.
// The same products as the loops above, summed in OpenBLAS's order rather than theirs.
// kept (B, C, N, W) or NULL: where u is written for each image and channel (kept for the
// backward), else scratch.
static void read_forward_gemm(float *patch, int ld_patch, const float *img, const float *Fx,
                              const float *Fy, const float *gamma, float *scratch, float *kept,
                              int B, int C, int N, int W, int H) {
    for (int b = 0; b < B; b++) {
        const float *fx = Fx + (size_t)b * N * W, *fy = Fy + (size_t)b * N * H;
        for (int ch = 0; ch < C; ch++) {
            const float *x = img + ((size_t)b * C + ch) * H * W;
            float *out = patch + (size_t)b * ld_patch + (size_t)ch * N * N;
            float *u = kept ? kept + ((size_t)b * C + ch) * N * W : scratch;  // (N, W)
            gemm(false, false, N, W, H, 1.0f, fy, H, x, W, 0.0f, u, W);
            gemm(false, true, N, N, W, gamma[b], u, W, fx, W, 0.0f, out, N);
        }
    }
}

// kept (B, C, N, W) or NULL: the forward's u = Fy img, else recomputed into scratch.
static void read_backward_gemm(float *dimg, float *dFx, float *dFy, float *dgamma,
                               const float *dpatch, int ld_patch, const float *img,
                               const float *Fx, const float *Fy, const float *gamma,
                               const float *kept, float *scratch, int B, int C, int N, int W,
                               int H) {
    float *z = scratch + N * W;  // (N, W) = gamma G Fx
    float *P = z + N * W;        // (N, N) = u Fx^T
    for (int b = 0; b < B; b++) {
        const float *fx = Fx + (size_t)b * N * W, *fy = Fy + (size_t)b * N * H;
        float gm = gamma[b];
        float *dfx = dFx + (size_t)b * N * W, *dfy = dFy + (size_t)b * N * H;
        double dg = 0.0;  // over the channels, which share gamma
        for (int ch = 0; ch < C; ch++) {
            const float *x = img + ((size_t)b * C + ch) * H * W,
                        *G = dpatch + (size_t)b * ld_patch + (size_t)ch * N * N;
            const float *u = scratch;  // (N, W) = Fy img
            if (kept)
                u = kept + ((size_t)b * C + ch) * N * W;
            else
                gemm(false, false, N, W, H, 1.0f, fy, H, x, W, 0.0f, scratch, W);
            gemm(false, true, N, N, W, 1.0f, u, W, fx, W, 0.0f, P, N);
            for (int k = 0; k < N * N; k++) dg += (double)G[k] * P[k];
            gemm(true, false, N, W, N, gm, G, N, u, W, 1.0f, dfx, W);
            gemm(false, false, N, W, N, gm, G, N, fx, W, 0.0f, z, W);
            gemm(false, true, N, H, W, 1.0f, z, W, x, W, 1.0f, dfy, H);
            if (dimg)
                gemm(true, false, H, W, N, 1.0f, fy, H, z, W, 1.0f,
                     dimg + ((size_t)b * C + ch) * H * W, W);
        }
        dgamma[b] += (float)dg;
    }
}

// Which path the read takes: the loops for images of at most 28 x 28 pixels (DRAW on MNIST,
// whose results they keep bit for bit), the GEMMs above that. bench_filterbank measured
// the GEMMs faster at every shape it runs (1.5x to 4x on one thread, 28 x 28 included); the
// loops stay where they were tuned because there the read is a few per cent of a DRAW step
// (64 steps, two reads, about 1 us each per image, against about 4.5 ms per image).
#define FB_READ_LOOPS_MAX_PIXELS (28 * 28)
int filterbank_read_uses_gemm(int N, int W, int H) {
    return (long long)W * H > FB_READ_LOOPS_MAX_PIXELS;
}

static int use_gemm(FilterbankPath path, int N, int W, int H) {
    return path == FILTERBANK_PATH_GEMM ||
           (path == FILTERBANK_PATH_AUTO && filterbank_read_uses_gemm(N, W, H));
}

void filterbank_read_channels_forward_path(float *patch, int ld_patch, const float *img,
                                           const float *Fx, const float *Fy, const float *gamma,
                                           float *scratch, int B, int C, int N, int W, int H,
                                           FilterbankPath path) {
    if (use_gemm(path, N, W, H))
        read_forward_gemm(patch, ld_patch, img, Fx, Fy, gamma, scratch, NULL, B, C, N, W, H);
    else
        read_forward_loops(patch, ld_patch, img, Fx, Fy, gamma, scratch, B, C, N, W, H);
}

void filterbank_read_channels_backward_path(float *dimg, float *dFx, float *dFy, float *dgamma,
                                            const float *dpatch, int ld_patch, const float *img,
                                            const float *Fx, const float *Fy, const float *gamma,
                                            float *scratch, int B, int C, int N, int W, int H,
                                            FilterbankPath path) {
    if (use_gemm(path, N, W, H))
        read_backward_gemm(dimg, dFx, dFy, dgamma, dpatch, ld_patch, img, Fx, Fy, gamma, NULL,
                           scratch, B, C, N, W, H);
    else
        read_backward_loops(dimg, dFx, dFy, dgamma, dpatch, ld_patch, img, Fx, Fy, gamma, scratch,
                            B, C, N, W, H);
}

void filterbank_read_channels_forward_keep(float *patch, int ld_patch, const float *img,
                                           const float *Fx, const float *Fy, const float *gamma,
                                           float *u, float *scratch, int B, int C, int N, int W,
                                           int H) {
    read_forward_gemm(patch, ld_patch, img, Fx, Fy, gamma, scratch, u, B, C, N, W, H);
}

void filterbank_read_channels_backward_kept(float *dimg, float *dFx, float *dFy, float *dgamma,
                                            const float *dpatch, int ld_patch, const float *img,
                                            const float *Fx, const float *Fy, const float *gamma,
                                            const float *u, float *scratch, int B, int C, int N,
                                            int W, int H) {
    read_backward_gemm(dimg, dFx, dFy, dgamma, dpatch, ld_patch, img, Fx, Fy, gamma, u, scratch,
                       B, C, N, W, H);
}

void filterbank_read_channels_forward(float *patch, int ld_patch, const float *img,
                                      const float *Fx, const float *Fy, const float *gamma,
                                      float *scratch, int B, int C, int N, int W, int H) {
    filterbank_read_channels_forward_path(patch, ld_patch, img, Fx, Fy, gamma, scratch, B, C, N,
                                          W, H, FILTERBANK_PATH_AUTO);
}

void filterbank_read_forward(float *patch, int ld_patch, const float *img, const float *Fx,
                             const float *Fy, const float *gamma, float *scratch, int B, int N,
                             int W, int H) {
    filterbank_read_channels_forward(patch, ld_patch, img, Fx, Fy, gamma, scratch, B, 1, N, W, H);
}

void filterbank_read_channels_backward(float *dimg, float *dFx, float *dFy, float *dgamma,
                                       const float *dpatch, int ld_patch, const float *img,
                                       const float *Fx, const float *Fy, const float *gamma,
                                       float *scratch, int B, int C, int N, int W, int H) {
    filterbank_read_channels_backward_path(dimg, dFx, dFy, dgamma, dpatch, ld_patch, img, Fx, Fy,
                                           gamma, scratch, B, C, N, W, H, FILTERBANK_PATH_AUTO);
}

void filterbank_read_backward(float *dimg, float *dFx, float *dFy, float *dgamma,
                              const float *dpatch, int ld_patch, const float *img,
                              const float *Fx, const float *Fy, const float *gamma,
                              float *scratch, int B, int N, int W, int H) {
    filterbank_read_channels_backward(dimg, dFx, dFy, dgamma, dpatch, ld_patch, img, Fx, Fy,
                                      gamma, scratch, B, 1, N, W, H);
}

void filterbank_write_channels_forward_from(float *out, const float *prev, const float *patch,
                                            const float *Fx, const float *Fy, const float *gamma,
                                            float *scratch, int B, int C, int N, int W, int H) {
    CHECK(N >= 1 && C >= 1);
    float *t1 = scratch;  // (N, W) = patch @ Fx
    for (int b = 0; b < B; b++) {
        const float *fx = Fx + (size_t)b * N * W, *fy = Fy + (size_t)b * N * H;
        float s = 1.0f / gamma[b];
        for (int ch = 0; ch < C; ch++) {
            size_t img = ((size_t)b * C + ch) * H * W;
            float *o = out + img;
            const float *pv = prev ? prev + img : NULL;
            combine_rows(t1, patch + ((size_t)b * C + ch) * N * N, fx, N, N, W);
            for (int h = 0; h < H; h++) {
                float *oh = o + (size_t)h * W, c0 = s * fy[h];
                // The first term lands on prev's row (or on zero), the rest accumulate.
                if (pv) {
                    const float *ph = pv + (size_t)h * W;
                    for (int a = 0; a < W; a++) oh[a] = ph[a] + c0 * t1[a];
                } else {
                    for (int a = 0; a < W; a++) oh[a] = 0.0f + c0 * t1[a];
                }
                for (int j = 1; j < N; j++)
                    axpy(oh, s * fy[(size_t)j * H + h], t1 + (size_t)j * W, W);
            }
        }
    }
}

void filterbank_write_forward_from(float *out, const float *prev, const float *patch,
                                   const float *Fx, const float *Fy, const float *gamma,
                                   float *scratch, int B, int N, int W, int H) {
    filterbank_write_channels_forward_from(out, prev, patch, Fx, Fy, gamma, scratch, B, 1, N, W,
                                           H);
}

void filterbank_write_forward(float *out, const float *patch, const float *Fx, const float *Fy,
                              const float *gamma, float *scratch, int B, int N, int W, int H) {
    filterbank_write_forward_from(out, out, patch, Fx, Fy, gamma, scratch, B, N, W, H);
}

void filterbank_write_channels_backward(float *dpatch, float *dFx, float *dFy, float *dgamma,
                                        const float *dout, const float *patch, const float *Fx,
                                        const float *Fy, const float *gamma, float *scratch,
                                        int B, int C, int N, int W, int H) {
    float *p = scratch;        // (N, W) = Fy dout
    float *t1 = p + N * W;     // (N, W) = patch @ Fx
    for (int b = 0; b < B; b++) {
        const float *fx = Fx + (size_t)b * N * W, *fy = Fy + (size_t)b * N * H;
        float s = 1.0f / gamma[b];
        float *dfx = dFx + (size_t)b * N * W, *dfy = dFy + (size_t)b * N * H;
        double dg = 0.0;  // over the channels, which share gamma
        for (int ch = 0; ch < C; ch++) {
            const float *D = dout + ((size_t)b * C + ch) * H * W,
                        *w = patch + ((size_t)b * C + ch) * N * N;
            float *dw = dpatch + ((size_t)b * C + ch) * N * N;
            // out += s Fy^T w Fx: dw = s Fy dout Fx^T; d gamma = -s^2 sum w (Fy dout Fx^T)
            combine_rows(p, fy, D, N, H, W);
            for (int j = 0; j < N; j++)
                for (int i = 0; i < N; i++) {
                    float r = dot8(p + (size_t)j * W, fx + (size_t)i * W, W);
                    dw[j * N + i] += s * r;
                    dg += (double)w[j * N + i] * r;
                    axpy(dfx + (size_t)i * W, s * w[j * N + i], p + (size_t)j * W, W);
                }
            // dFy[j, h] += s dout[h] . (w Fx)[j]
            combine_rows(t1, w, fx, N, N, W);
            for (int j = 0; j < N; j++)
                for (int h = 0; h < H; h++)
                    dfy[(size_t)j * H + h] += s * dot8(D + (size_t)h * W, t1 + (size_t)j * W, W);
        }
        dgamma[b] += (float)(-(double)s * s * dg);
    }
}

void filterbank_write_backward(float *dpatch, float *dFx, float *dFy, float *dgamma,
                               const float *dout, const float *patch, const float *Fx,
                               const float *Fy, const float *gamma, float *scratch, int B, int N,
                               int W, int H) {
    filterbank_write_channels_backward(dpatch, dFx, dFy, dgamma, dout, patch, Fx, Fy, gamma,
                                       scratch, B, 1, N, W, H);
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
