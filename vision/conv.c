// conv.c: see conv.h.
#include "vision/conv.h"

#include <string.h>

#include "core/check.h"
#include "core/gemm.h"

size_t conv2d_col_size(int C, int H, int W, int K, int P) {
    int Ho = conv2d_out_size(H, K, P), Wo = conv2d_out_size(W, K, P);
    CHECK(Ho >= 1 && Wo >= 1, "conv output %d x %d", Ho, Wo);
    return 2 * (size_t)C * K * K * Ho * Wo;
}

void im2col(float *col, const float *img, int C, int H, int W, int K, int P) {
    int Ho = conv2d_out_size(H, K, P), Wo = conv2d_out_size(W, K, P);
    for (int c = 0; c < C; c++)
        for (int i = 0; i < K; i++)
            for (int j = 0; j < K; j++) {
                float *row = col + ((size_t)(c * K + i) * K + j) * Ho * Wo;
                for (int y = 0; y < Ho; y++) {
                    int iy = y + i - P;
                    float *r = row + (size_t)y * Wo;
                    if (iy < 0 || iy >= H) {
                        memset(r, 0, (size_t)Wo * sizeof(float));
                        continue;
                    }
                    const float *src = img + ((size_t)c * H + iy) * W;
                    for (int x = 0; x < Wo; x++) {
                        int ix = x + j - P;
                        r[x] = ix >= 0 && ix < W ? src[ix] : 0.0f;
                    }
                }
            }
}

void col2im_add(float *img, const float *col, int C, int H, int W, int K, int P) {
    int Ho = conv2d_out_size(H, K, P), Wo = conv2d_out_size(W, K, P);
    for (int c = 0; c < C; c++)
        for (int i = 0; i < K; i++)
            for (int j = 0; j < K; j++) {
                const float *row = col + ((size_t)(c * K + i) * K + j) * Ho * Wo;
                for (int y = 0; y < Ho; y++) {
                    int iy = y + i - P;
                    if (iy < 0 || iy >= H) continue;
                    const float *r = row + (size_t)y * Wo;
                    float *dst = img + ((size_t)c * H + iy) * W;
                    for (int x = 0; x < Wo; x++) {
                        int ix = x + j - P;
                        if (ix >= 0 && ix < W) dst[ix] += r[x];
                    }
                }
            }
}

void conv2d_forward(float *out, const float *inp, const float *weight, const float *bias,
                    float *col, int B, int C, int H, int W, int OC, int K, int P) {
    int Ho = conv2d_out_size(H, K, P), Wo = conv2d_out_size(W, K, P);
    CHECK(Ho >= 1 && Wo >= 1, "conv output %d x %d", Ho, Wo);
    int N = Ho * Wo, CKK = C * K * K;
    for (int b = 0; b < B; b++) {
        float *o = out + (size_t)b * OC * N;
        im2col(col, inp + (size_t)b * C * H * W, C, H, W, K, P);
        gemm(false, false, OC, N, CKK, 1.0f, weight, CKK, col, N, 0.0f, o, N);
        if (bias)
            for (int oc = 0; oc < OC; oc++)
                for (int k = 0; k < N; k++) o[(size_t)oc * N + k] += bias[oc];
    }
}

void conv2d_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                     const float *inp, const float *weight, float *col, int B, int C, int H,
                     int W, int OC, int K, int P) {
    int Ho = conv2d_out_size(H, K, P), Wo = conv2d_out_size(W, K, P);
    CHECK(Ho >= 1 && Wo >= 1, "conv output %d x %d", Ho, Wo);
    int N = Ho * Wo, CKK = C * K * K;
    float *dcol = col + (size_t)CKK * N;
    for (int b = 0; b < B; b++) {
        const float *d = dout + (size_t)b * OC * N;
        if (dbias)
            for (int oc = 0; oc < OC; oc++) {
                float s = 0.0f;
                for (int k = 0; k < N; k++) s += d[(size_t)oc * N + k];
                dbias[oc] += s;
            }
        if (dweight) {
            im2col(col, inp + (size_t)b * C * H * W, C, H, W, K, P);
            gemm(false, true, OC, CKK, N, 1.0f, d, N, col, N, 1.0f, dweight, CKK);
        }
        if (dinp) {
            gemm(true, false, CKK, N, OC, 1.0f, weight, CKK, d, N, 0.0f, dcol, N);
            col2im_add(dinp + (size_t)b * C * H * W, dcol, C, H, W, K, P);
        }
    }
}

void conv2d_forward_ref(float *out, const float *inp, const float *weight, const float *bias,
                        int B, int C, int H, int W, int OC, int K, int P) {
    int Ho = conv2d_out_size(H, K, P), Wo = conv2d_out_size(W, K, P);
    for (int b = 0; b < B; b++)
        for (int oc = 0; oc < OC; oc++)
            for (int y = 0; y < Ho; y++)
                for (int x = 0; x < Wo; x++) {
                    double s = bias ? bias[oc] : 0.0;
                    for (int c = 0; c < C; c++)
                        for (int i = 0; i < K; i++)
                            for (int j = 0; j < K; j++) {
                                int iy = y + i - P, ix = x + j - P;
                                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                                s += (double)weight[((oc * C + c) * K + i) * K + j] *
                                     inp[(((size_t)b * C + c) * H + iy) * W + ix];
                            }
                    out[(((size_t)b * OC + oc) * Ho + y) * Wo + x] = (float)s;
                }
}

void conv2d_backward_ref(float *dinp, float *dweight, float *dbias, const float *dout,
                         const float *inp, const float *weight, int B, int C, int H, int W,
                         int OC, int K, int P) {
    int Ho = conv2d_out_size(H, K, P), Wo = conv2d_out_size(W, K, P);
    for (int b = 0; b < B; b++)
        for (int oc = 0; oc < OC; oc++)
            for (int y = 0; y < Ho; y++)
                for (int x = 0; x < Wo; x++) {
                    float d = dout[(((size_t)b * OC + oc) * Ho + y) * Wo + x];
                    if (dbias) dbias[oc] += d;
                    for (int c = 0; c < C; c++)
                        for (int i = 0; i < K; i++)
                            for (int j = 0; j < K; j++) {
                                int iy = y + i - P, ix = x + j - P;
                                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                                size_t wi = ((size_t)(oc * C + c) * K + i) * K + j;
                                size_t ii = (((size_t)b * C + c) * H + iy) * W + ix;
                                if (dweight) dweight[wi] += d * inp[ii];
                                if (dinp) dinp[ii] += d * weight[wi];
                            }
                }
}

void maxpool2_forward(float *out, int *argmax, const float *inp, int B, int C, int H, int W) {
    int Ho = H / 2, Wo = W / 2;
    CHECK(Ho >= 1 && Wo >= 1, "maxpool2 of %d x %d", H, W);
    for (size_t p = 0; p < (size_t)B * C; p++) {
        const float *src = inp + p * H * W;
        float *o = out + p * Ho * Wo;
        int *a = argmax + p * Ho * Wo;
        for (int y = 0; y < Ho; y++)
            for (int x = 0; x < Wo; x++) {
                int best = (2 * y) * W + 2 * x;
                const int cand[3] = {best + 1, best + W, best + W + 1};
                for (int k = 0; k < 3; k++)
                    if (src[cand[k]] > src[best]) best = cand[k];
                o[y * Wo + x] = src[best];
                a[y * Wo + x] = best;
            }
    }
}

void maxpool2_backward(float *dinp, const float *dout, const int *argmax, int B, int C, int H,
                       int W) {
    int Ho = H / 2, Wo = W / 2;
    for (size_t p = 0; p < (size_t)B * C; p++) {
        float *d = dinp + p * H * W;
        const float *g = dout + p * Ho * Wo;
        const int *a = argmax + p * Ho * Wo;
        for (int k = 0; k < Ho * Wo; k++) d[a[k]] += g[k];
    }
}
