// conv_train.c: see conv_train.h.
#include "vision/conv_train.h"

#include <string.h>

#include "core/check.h"
#include "core/gemm.h"
#include "vision/conv_infer.h"

static void check_shape(int n, int C, int H, int W, int OC, int K, int stride, int pad) {
    CHECK(n >= 1 && C >= 1 && OC >= 1 && K >= 1 && stride >= 1 && pad >= 0 && pad < K,
          "conv n %d C %d OC %d K %d stride %d pad %d", n, C, OC, K, stride, pad);
    CHECK(H + 2 * pad >= K && W + 2 * pad >= K, "conv input %dx%d smaller than kernel %d", H, W, K);
}

size_t conv_train_col_floats(int C, int H, int W, int K, int stride, int pad) {
    const int Ho = conv_infer_out_size(H, K, stride, pad), Wo = conv_infer_out_size(W, K, stride, pad);
    return (size_t)C * K * K * Ho * Wo;
}

void conv_train_im2col(float *col, const float *inp, int b, int n, int C, int H, int W, int K,
                       int stride, int pad) {
    const int Ho = conv_infer_out_size(H, K, stride, pad), Wo = conv_infer_out_size(W, K, stride, pad);
    for (int c = 0; c < C; c++) {
        const float *plane = inp + ((size_t)c * n + b) * H * W;
        for (int i = 0; i < K; i++)
            for (int j = 0; j < K; j++) {
                float *dst = col + ((size_t)(c * K + i) * K + j) * Ho * Wo;
                for (int y = 0; y < Ho; y++) {
                    const int iy = y * stride + i - pad;
                    for (int x = 0; x < Wo; x++) {
                        const int ix = x * stride + j - pad;
                        dst[y * Wo + x] = iy >= 0 && iy < H && ix >= 0 && ix < W
                                              ? plane[(size_t)iy * W + ix] : 0.0f;
                    }
                }
            }
    }
}

void conv_train_col2im_add(float *img, const float *col, int b, int n, int C, int H, int W,
                           int K, int stride, int pad) {
    const int Ho = conv_infer_out_size(H, K, stride, pad), Wo = conv_infer_out_size(W, K, stride, pad);
    for (int c = 0; c < C; c++) {
        float *plane = img + ((size_t)c * n + b) * H * W;
        for (int i = 0; i < K; i++)
            for (int j = 0; j < K; j++) {
                const float *src = col + ((size_t)(c * K + i) * K + j) * Ho * Wo;
                for (int y = 0; y < Ho; y++) {
                    const int iy = y * stride + i - pad;
                    if (iy < 0 || iy >= H) continue;
                    for (int x = 0; x < Wo; x++) {
                        const int ix = x * stride + j - pad;
                        if (ix >= 0 && ix < W) plane[(size_t)iy * W + ix] += src[y * Wo + x];
                    }
                }
            }
    }
}

void conv_train_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                         const float *inp, const float *weight, float *col, int n, int C, int H,
                         int W, int OC, int K, int stride, int pad) {
    check_shape(n, C, H, W, OC, K, stride, pad);
    const int Ho = conv_infer_out_size(H, K, stride, pad), Wo = conv_infer_out_size(W, K, stride, pad);
    const int HWo = Ho * Wo, CKK = C * K * K, ld = n * HWo;
    if (dbias)
        for (int o = 0; o < OC; o++) {
            const float *row = dout + (size_t)o * ld;
            double s = 0.0;
            for (int k = 0; k < ld; k++) s += row[k];
            dbias[o] += (float)s;
        }
    for (int b = 0; b < n; b++) {
        const float *dout_b = dout + (size_t)b * HWo;  // (OC, Ho Wo), row stride n Ho Wo
        if (dweight) {
            conv_train_im2col(col, inp, b, n, C, H, W, K, stride, pad);
            gemm(false, true, OC, CKK, HWo, 1.0f, dout_b, ld, col, HWo, 1.0f, dweight, CKK);
        }
        if (dinp) {
            gemm(true, false, CKK, HWo, OC, 1.0f, weight, CKK, dout_b, ld, 0.0f, col, HWo);
            conv_train_col2im_add(dinp, col, b, n, C, H, W, K, stride, pad);
        }
    }
}

void conv_train_backward_ref(float *dinp, float *dweight, float *dbias, const float *dout,
                             const float *inp, const float *weight, int n, int C, int H, int W,
                             int OC, int K, int stride, int pad) {
    check_shape(n, C, H, W, OC, K, stride, pad);
    const int Ho = conv_infer_out_size(H, K, stride, pad), Wo = conv_infer_out_size(W, K, stride, pad);
#define DOUT(o, b, y, x) dout[(((size_t)(o) * n + (b)) * Ho + (y)) * Wo + (x)]
#define INP(c, b, y, x) (((size_t)(c) * n + (b)) * H + (y)) * W + (x)
    for (int o = 0; o < OC; o++) {
        if (dbias) {
            double s = 0.0;
            for (int b = 0; b < n; b++)
                for (int y = 0; y < Ho; y++)
                    for (int x = 0; x < Wo; x++) s += DOUT(o, b, y, x);
            dbias[o] += (float)s;
        }
        for (int c = 0; c < C; c++)
            for (int i = 0; i < K; i++)
                for (int j = 0; j < K; j++) {
                    const size_t wi = (((size_t)o * C + c) * K + i) * K + j;
                    double s = 0.0;
                    for (int b = 0; b < n; b++)
                        for (int y = 0; y < Ho; y++)
                            for (int x = 0; x < Wo; x++) {
                                const int iy = y * stride + i - pad, ix = x * stride + j - pad;
                                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                                s += (double)DOUT(o, b, y, x) * inp[INP(c, b, iy, ix)];
                                if (dinp) dinp[INP(c, b, iy, ix)] += weight[wi] * DOUT(o, b, y, x);
                            }
                    if (dweight) dweight[wi] += (float)s;
                }
    }
#undef DOUT
#undef INP
}
