// conv.c: see conv.h.
#include "vision/conv.h"

#include <stddef.h>
#include <string.h>

#include "core/check.h"
#include "core/gemm.h"

size_t conv2d_col_size(int C, int H, int W, int K, int P) {
    int Ho = conv2d_out_size(H, K, P), Wo = conv2d_out_size(W, K, P);
    CHECK(Ho >= 1 && Wo >= 1, "conv output %d x %d", Ho, Wo);
    return 2 * (size_t)C * K * K * Ho * Wo;
}

// Output columns x whose input column x + d lies inside [0, W): x0 <= x < x1, within [0, Wo].
static void valid_range(int *x0, int *x1, int W, int Wo, int d) {
    int a = -d, b = W - d;
    a = a < 0 ? 0 : a > Wo ? Wo : a;
    b = b < a ? a : b > Wo ? Wo : b;
    *x0 = a, *x1 = b;
}

// One row of the column matrix for one image: r[y * Wo + x] = img plane at (y + i - P,
// x + j - P), zero outside. The valid x range is computed once per row, so the copy is
// a branch-free loop.
static void im2col_row(float *restrict r, const float *restrict plane, int H, int W, int Ho,
                       int Wo, int i, int j, int P) {
    int x0, x1, d = j - P;
    valid_range(&x0, &x1, W, Wo, d);
    for (int y = 0; y < Ho; y++, r += Wo) {
        int iy = y + i - P;
        if (iy < 0 || iy >= H) {
            memset(r, 0, (size_t)Wo * sizeof(float));
            continue;
        }
        const float *src = plane + (size_t)iy * W;
        for (int x = 0; x < x0; x++) r[x] = 0.0f;
        for (int x = x0; x < x1; x++) r[x] = src[x + d];
        for (int x = x1; x < Wo; x++) r[x] = 0.0f;
    }
}

// The reverse of im2col_row: adds r back into the plane, valid positions only.
static void col2im_row(float *restrict plane, const float *restrict r, int H, int W, int Ho,
                       int Wo, int i, int j, int P) {
    int x0, x1, d = j - P;
    valid_range(&x0, &x1, W, Wo, d);
    for (int y = 0; y < Ho; y++, r += Wo) {
        int iy = y + i - P;
        if (iy < 0 || iy >= H) continue;
        float *dst = plane + (size_t)iy * W;
        for (int x = x0; x < x1; x++) dst[x + d] += r[x];
    }
}

// im2col_row for a "same" convolution (Wo == W, Ho == H): the shifted plane is one
// contiguous copy, r[m] = plane[m + (i - P) W + (j - P)], after which the column that
// wrapped around from the neighbouring row (x + j - P outside [0, W)) is zeroed.
static void im2col_row_same(float *restrict r, const float *restrict plane, int H, int W,
                            int i, int j, int P) {
    const int dy = i - P, d = j - P;
    int y0 = dy < 0 ? -dy : 0, y1 = H - dy < H ? H - dy : H;
    if (y1 < y0) y1 = y0;
    const size_t N = (size_t)H * W;
    size_t m0 = (size_t)y0 * W, m1 = (size_t)y1 * W;
    memset(r, 0, m0 * sizeof(float));
    memset(r + m1, 0, (N - m1) * sizeof(float));
    if (m1 == m0) return;
    const int lo = d < 0 ? -d : 0, hi = d > 0 ? d : 0;  // wrapped columns at each row's ends
    if ((size_t)(lo + hi) >= m1 - m0) {
        for (size_t m = m0; m < m1; m++) r[m] = 0.0f;
        return;
    }
    // r[m0 + lo] takes plane[m0 + lo + dy W + d], in bounds, as is the copy's last element.
    const float *src = plane + (ptrdiff_t)(m0 + lo) + (ptrdiff_t)dy * W + d;
    memcpy(r + m0 + lo, src, (m1 - m0 - lo - hi) * sizeof(float));
    for (int y = y0; y < y1; y++) {
        float *ry = r + (size_t)y * W;
        for (int x = 0; x < lo && x < W; x++) ry[x] = 0.0f;
        for (int x = W - hi < 0 ? 0 : W - hi; x < W; x++) ry[x] = 0.0f;
    }
}

void im2col_batch(float *col, const float *imgs, int n, int C, int H, int W, int K, int P) {
    int Ho = conv2d_out_size(H, K, P), Wo = conv2d_out_size(W, K, P);
    CHECK(Ho >= 1 && Wo >= 1, "conv output %d x %d", Ho, Wo);
    size_t N = (size_t)Ho * Wo, row_len = (size_t)n * N;
    const int same = Ho == H && Wo == W;
    for (int c = 0; c < C; c++)
        for (int i = 0; i < K; i++)
            for (int j = 0; j < K; j++) {
                float *row = col + ((size_t)(c * K + i) * K + j) * row_len;
                for (int b = 0; b < n; b++) {
                    const float *plane = imgs + ((size_t)b * C + c) * H * W;
                    if (same)
                        im2col_row_same(row + b * N, plane, H, W, i, j, P);
                    else
                        im2col_row(row + b * N, plane, H, W, Ho, Wo, i, j, P);
                }
            }
}

void col2im_batch_add(float *imgs, const float *col, int n, int C, int H, int W, int K, int P) {
    int Ho = conv2d_out_size(H, K, P), Wo = conv2d_out_size(W, K, P);
    CHECK(Ho >= 1 && Wo >= 1, "conv output %d x %d", Ho, Wo);
    size_t N = (size_t)Ho * Wo, row_len = (size_t)n * N;
    // Image by image, channel by channel: each plane stays in cache while its K*K rows
    // are added (the same order of additions per element as one image at a time).
    for (int b = 0; b < n; b++)
        for (int c = 0; c < C; c++) {
            float *plane = imgs + ((size_t)b * C + c) * H * W;
            for (int i = 0; i < K; i++)
                for (int j = 0; j < K; j++)
                    col2im_row(plane, col + ((size_t)(c * K + i) * K + j) * row_len + b * N, H, W,
                               Ho, Wo, i, j, P);
        }
}

void im2col(float *col, const float *img, int C, int H, int W, int K, int P) {
    im2col_batch(col, img, 1, C, H, W, K, P);
}

void col2im_add(float *img, const float *col, int C, int H, int W, int K, int P) {
    col2im_batch_add(img, col, 1, C, H, W, K, P);
}

// Plain loops: one image at a time, a bounds test per element.
void im2col_ref(float *col, const float *img, int C, int H, int W, int K, int P) {
    int Ho = conv2d_out_size(H, K, P), Wo = conv2d_out_size(W, K, P);
    for (int c = 0; c < C; c++)
        for (int i = 0; i < K; i++)
            for (int j = 0; j < K; j++)
                for (int y = 0; y < Ho; y++)
                    for (int x = 0; x < Wo; x++) {
                        int iy = y + i - P, ix = x + j - P;
                        float v = iy >= 0 && iy < H && ix >= 0 && ix < W
                                      ? img[((size_t)c * H + iy) * W + ix] : 0.0f;
                        col[(((size_t)(c * K + i) * K + j) * Ho + y) * Wo + x] = v;
                    }
}

void col2im_add_ref(float *img, const float *col, int C, int H, int W, int K, int P) {
    int Ho = conv2d_out_size(H, K, P), Wo = conv2d_out_size(W, K, P);
    for (int c = 0; c < C; c++)
        for (int i = 0; i < K; i++)
            for (int j = 0; j < K; j++)
                for (int y = 0; y < Ho; y++)
                    for (int x = 0; x < Wo; x++) {
                        int iy = y + i - P, ix = x + j - P;
                        if (iy >= 0 && iy < H && ix >= 0 && ix < W)
                            img[((size_t)c * H + iy) * W + ix] +=
                                col[(((size_t)(c * K + i) * K + j) * Ho + y) * Wo + x];
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
