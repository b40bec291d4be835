// conv_infer.c: see conv_infer.h.
#include "vision/conv_infer.h"

#include <float.h>
#include <string.h>

#include "core/check.h"
#include "core/gemm.h"
#include "vision/winograd.h"

// Floats of Winograd's V and M for one band of tile rows (16 MiB): a band of the largest
// VGG layers is then a few rows of tiles of every image in the group.
#define WINOGRAD_BAND_FLOATS ((size_t)4 << 20)

int conv_infer_winograd_fits(int H, int W, int K, int stride, int pad) {
    return K == 3 && stride == 1 && pad == 1 && H >= 1 && W >= 1 && W <= 2048;
}

static void check_shape(int n, int C, int H, int W, int OC, int K, int stride, int pad) {
    CHECK(n >= 1 && C >= 1 && OC >= 1 && K >= 1 && stride >= 1 && pad >= 0 && pad < K,
          "conv n %d C %d OC %d K %d stride %d pad %d", n, C, OC, K, stride, pad);
    CHECK(H + 2 * pad >= K && W + 2 * pad >= K, "conv %dx%d on %d x %d (pad %d)", K, K, H, W, pad);
}

// Output rows (of the n Ho rows) per im2col chunk that `floats` of scratch hold (at least 1).
static int im2col_chunk_rows(size_t floats, int n, int C, int Ho, int Wo, int K) {
    size_t rows = floats / ((size_t)C * K * K * Wo);
    if (rows < 1) rows = 1;
    if (rows > (size_t)n * Ho) rows = (size_t)n * Ho;
    return (int)rows;
}

// Scratch floats of a Winograd band of `rows` rows of tiles.
static size_t winograd_band_floats(int rows, int n, int C, int W, int OC) {
    const int Nb = n * rows * winograd_tile_side(W);
    return winograd_transformed_size(C, Nb) + winograd_transformed_size(OC, Nb);
}

// Rows of tiles per Winograd band that `floats` of scratch hold (at least 1).
static int winograd_band_rows(size_t floats, int n, int C, int H, int W, int OC) {
    int rows = 1;
    while (rows < winograd_tile_side(H) && winograd_band_floats(rows + 1, n, C, W, OC) <= floats) rows++;
    return rows;
}

size_t conv_infer_scratch_floats(int n, int C, int H, int W, int OC, int K, int stride, int pad,
                                 ConvInferMethod method) {
    check_shape(n, C, H, W, OC, K, stride, pad);
    if (method == CONV_INFER_WINOGRAD) {
        CHECK(conv_infer_winograd_fits(H, W, K, stride, pad), "winograd on a %dx%d/%d conv of %d x %d",
              K, K, stride, H, W);
        const int rows = winograd_band_rows(WINOGRAD_BAND_FLOATS, n, C, H, W, OC);
        return winograd_band_floats(rows, n, C, W, OC);
    }
    if (K == 1 && stride == 1 && pad == 0) return 0;
    const int Ho = conv_infer_out_size(H, K, stride, pad), Wo = conv_infer_out_size(W, K, stride, pad);
    return (size_t)C * K * K * im2col_chunk_rows(CONV_INFER_CHUNK_FLOATS, n, C, Ho, Wo, K) * Wo;
}

size_t conv_infer_min_scratch_floats(int n, int C, int H, int W, int OC, int K, int stride,
                                     int pad, ConvInferMethod method) {
    check_shape(n, C, H, W, OC, K, stride, pad);
    if (method == CONV_INFER_WINOGRAD) return winograd_band_floats(1, n, C, W, OC);
    if (K == 1 && stride == 1 && pad == 0) return 0;
    return (size_t)C * K * K * conv_infer_out_size(W, K, stride, pad);
}

// Output columns x whose input column x s + d lies inside [0, W): x0 <= x < x1.
static void valid_columns(int *x0, int *x1, int W, int Wo, int s, int d) {
    int a = d >= 0 ? 0 : (-d + s - 1) / s;           // first x with x s + d >= 0
    int b = W - d <= 0 ? 0 : (W - d + s - 1) / s;    // first x with x s + d >= W
    a = a > Wo ? Wo : a;
    b = b > Wo ? Wo : b < a ? a : b;
    *x0 = a, *x1 = b;
}

// The column matrix of output rows r0 <= r < r1 (row r: image r / Ho, y = r % Ho):
// col (C K K, (r1 - r0) Wo), inp (C, n, H, W).
static void im2col_rows(float *col, const float *inp, int n, int C, int H, int W, int K, int s,
                        int P, int Ho, int Wo, int r0, int r1) {
    const size_t ncols = (size_t)(r1 - r0) * Wo;
    for (int c = 0; c < C; c++)
        for (int i = 0; i < K; i++)
            for (int j = 0; j < K; j++) {
                float *dst = col + ((size_t)(c * K + i) * K + j) * ncols;
                const int d = j - P;
                int x0, x1;
                valid_columns(&x0, &x1, W, Wo, s, d);
                for (int r = r0; r < r1; r++, dst += Wo) {
                    const int b = r / Ho, y = r % Ho, iy = y * s + i - P;
                    if (iy < 0 || iy >= H) {
                        memset(dst, 0, (size_t)Wo * sizeof(float));
                        continue;
                    }
                    const float *src = inp + (((size_t)c * n + b) * H + iy) * W + d;
                    for (int x = 0; x < x0; x++) dst[x] = 0.0f;
                    if (s == 1) {
                        memcpy(dst + x0, src + x0, (size_t)(x1 - x0) * sizeof(float));
                    } else {
                        for (int x = x0; x < x1; x++) dst[x] = src[(size_t)x * s];
                    }
                    for (int x = x1; x < Wo; x++) dst[x] = 0.0f;
                }
            }
}

// out (OC rows of stride ld, ncols each) = act(out + bias + res), res as out or NULL.
static void epilogue(float *out, const float *res, size_t ld, const float *bias, int OC,
                     size_t ncols, int relu) {
    for (int oc = 0; oc < OC; oc++) {
        float *restrict o = out + (size_t)oc * ld;
        const float *restrict r = res ? res + (size_t)oc * ld : NULL;
        const float b = bias ? bias[oc] : 0.0f;
        if (r && relu) {
            for (size_t k = 0; k < ncols; k++) {
                float v = o[k] + b + r[k];
                o[k] = v > 0.0f ? v : 0.0f;
            }
        } else if (r) {
            for (size_t k = 0; k < ncols; k++) o[k] += b + r[k];
        } else if (relu) {
            for (size_t k = 0; k < ncols; k++) {
                float v = o[k] + b;
                o[k] = v > 0.0f ? v : 0.0f;
            }
        } else if (b != 0.0f) {
            for (size_t k = 0; k < ncols; k++) o[k] += b;
        }
    }
}

static void forward_im2col(float *out, const float *inp, const float *weight, const float *bias,
                           const float *residual, float *col, size_t col_floats, int n, int C,
                           int H, int W, int OC, int K, int s, int P, int relu) {
    const int Ho = conv_infer_out_size(H, K, s, P), Wo = conv_infer_out_size(W, K, s, P);
    const int CKK = C * K * K, rows = n * Ho;
    const size_t N = (size_t)rows * Wo;
    const int direct = K == 1 && s == 1 && P == 0;  // the input is the column matrix
    const int chunk = direct ? rows : im2col_chunk_rows(col_floats, n, C, Ho, Wo, K);
    const float beta = residual == out ? 1.0f : 0.0f;
    const float *res = residual == out ? NULL : residual;
    for (int r0 = 0; r0 < rows; r0 += chunk) {
        const int r1 = rows - r0 < chunk ? rows : r0 + chunk;
        const size_t c0 = (size_t)r0 * Wo, nc = (size_t)(r1 - r0) * Wo;
        if (direct) {
            gemm(false, false, OC, (int)nc, CKK, 1.0f, weight, CKK, inp + c0, (int)N, beta,
                 out + c0, (int)N);
        } else {
            im2col_rows(col, inp, n, C, H, W, K, s, P, Ho, Wo, r0, r1);
            gemm(false, false, OC, (int)nc, CKK, 1.0f, weight, CKK, col, (int)nc, beta, out + c0,
                 (int)N);
        }
        epilogue(out + c0, res ? res + c0 : NULL, N, bias, OC, nc, relu);
    }
}

// Winograd's output transform of a band (tile rows ty0 <= ty < ty1 of every image) fused with
// bias, residual and ReLU. M (16, OC, n Tb) with gaps. On an odd side the last tile's outputs
// past the edge are dropped.
static void winograd_band_output(float *out, const float *M, const float *bias,
                                 const float *residual, int n, int OC, int H, int W, int ty0,
                                 int ty1, int relu) {
    const int tw = winograd_tile_side(W), pairs = W / 2;
    const size_t Tb = (size_t)(ty1 - ty0) * tw, Nb = (size_t)n * Tb;
    const size_t stride = winograd_stride(OC, (int)Nb);
    float y[4][1024];
    for (int oc = 0; oc < OC; oc++) {
        const float b = bias ? bias[oc] : 0.0f;
        for (int img = 0; img < n; img++) {
            const size_t plane = ((size_t)oc * n + img) * H * W;
            for (int ty = ty0; ty < ty1; ty++) {
                winograd_output_tiles(y[0], y[1], y[2], y[3],
                                      M + (size_t)oc * Nb + img * Tb + (size_t)(ty - ty0) * tw,
                                      stride, tw);
                for (int half = 0; half < 2 && 2 * ty + half < H; half++) {
                    float *restrict o = out + plane + (size_t)(2 * ty + half) * W;
                    const float *restrict r =
                        residual ? residual + plane + (size_t)(2 * ty + half) * W : NULL;
                    const float *restrict ya = y[2 * half], *restrict yb = y[2 * half + 1];
                    for (int tx = 0; tx < pairs; tx++) {
                        float v0 = ya[tx] + b, v1 = yb[tx] + b;
                        if (r) v0 += r[2 * tx], v1 += r[2 * tx + 1];
                        if (relu) v0 = v0 > 0.0f ? v0 : 0.0f, v1 = v1 > 0.0f ? v1 : 0.0f;
                        o[2 * tx] = v0, o[2 * tx + 1] = v1;
                    }
                    if (pairs < tw) {  // odd W: the last tile's left column only
                        float v0 = ya[pairs] + b;
                        if (r) v0 += r[2 * pairs];
                        o[2 * pairs] = relu && v0 < 0.0f ? 0.0f : v0;
                    }
                }
            }
        }
    }
}

static void forward_winograd(float *out, const float *inp, const float *U, const float *bias,
                             const float *residual, float *scratch, size_t scratch_floats, int n,
                             int C, int H, int W, int OC, int relu) {
    const int th = winograd_tile_side(H), tw = winograd_tile_side(W);
    const int band = winograd_band_rows(scratch_floats, n, C, H, W, OC);
    for (int ty0 = 0; ty0 < th; ty0 += band) {
        const int ty1 = th - ty0 < band ? th : ty0 + band;
        const int Nb = n * (ty1 - ty0) * tw;
        float *V = scratch, *M = scratch + winograd_transformed_size(C, Nb);
        winograd_input_transform_planes(V, inp, C * n, H, W, ty0, ty1);
        winograd_multiply(M, U, V, OC, C, Nb);
        winograd_band_output(out, M, bias, residual, n, OC, H, W, ty0, ty1, relu);
    }
}

void conv_infer_forward(float *out, const float *inp, const float *weight, const float *wino_u,
                        const float *bias, const float *residual, float *scratch,
                        size_t scratch_floats, int n, int C, int H, int W, int OC, int K,
                        int stride, int pad, int relu, ConvInferMethod method) {
    CHECK(scratch_floats >=
              conv_infer_min_scratch_floats(n, C, H, W, OC, K, stride, pad, method),
          "conv scratch of %zu floats is too small", scratch_floats);
    if (method == CONV_INFER_WINOGRAD) {
        CHECK(conv_infer_winograd_fits(H, W, K, stride, pad) && wino_u,
              "winograd on a %dx%d/%d conv of %d x %d", K, K, stride, H, W);
        forward_winograd(out, inp, wino_u, bias, residual, scratch, scratch_floats, n, C, H, W,
                         OC, relu);
        return;
    }
    forward_im2col(out, inp, weight, bias, residual, scratch, scratch_floats, n, C, H, W, OC, K,
                   stride, pad, relu);
}

void conv_infer_forward_ref(float *out, const float *inp, const float *weight,
                            const float *bias, const float *residual, int n, int C, int H,
                            int W, int OC, int K, int stride, int pad, int relu) {
    check_shape(n, C, H, W, OC, K, stride, pad);
    CHECK(residual != out, "the reference does not accumulate in place");
    const int Ho = conv_infer_out_size(H, K, stride, pad), Wo = conv_infer_out_size(W, K, stride, pad);
    for (int oc = 0; oc < OC; oc++)
        for (int b = 0; b < n; b++)
            for (int y = 0; y < Ho; y++)
                for (int x = 0; x < Wo; x++) {
                    double s = bias ? bias[oc] : 0.0;
                    for (int c = 0; c < C; c++)
                        for (int i = 0; i < K; i++)
                            for (int j = 0; j < K; j++) {
                                int iy = y * stride + i - pad, ix = x * stride + j - pad;
                                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                                s += (double)weight[(((size_t)oc * C + c) * K + i) * K + j] *
                                     inp[(((size_t)c * n + b) * H + iy) * W + ix];
                            }
                    const size_t o = (((size_t)oc * n + b) * Ho + y) * Wo + x;
                    if (residual) s += residual[o];
                    out[o] = (float)(relu && s < 0.0 ? 0.0 : s);
                }
}

// ---- pooling ---------------------------------------------------------------------------

void maxpool3s2_forward(float *out, const float *inp, int P, int H, int W) {
    CHECK(P >= 1 && H >= 1 && W >= 1 && W <= 8192, "maxpool3s2 of %d planes %d x %d", P, H, W);
    const int Ho = maxpool3s2_out_size(H), Wo = maxpool3s2_out_size(W);
    float hm[3][4096];
    for (int p = 0; p < P; p++) {
        const float *plane = inp + (size_t)p * H * W;
        float *o = out + (size_t)p * Ho * Wo;
        for (int y = 0; y < Ho; y++) {
            // The window's rows 2y - 1 .. 2y + 1 that exist, each reduced along x first.
            int rows = 0;
            for (int iy = 2 * y - 1; iy <= 2 * y + 1; iy++) {
                if (iy < 0 || iy >= H) continue;
                const float *r = plane + (size_t)iy * W;
                float *h = hm[rows++];
                h[0] = W > 1 ? (r[0] > r[1] ? r[0] : r[1]) : r[0];
                for (int x = 1; x < Wo; x++) {
                    float a = r[2 * x - 1], b = r[2 * x];
                    float m = a > b ? a : b;
                    if (2 * x + 1 < W) m = m > r[2 * x + 1] ? m : r[2 * x + 1];
                    h[x] = m;
                }
            }
            float *oy = o + (size_t)y * Wo;
            memcpy(oy, hm[0], (size_t)Wo * sizeof(float));
            for (int k = 1; k < rows; k++)
                for (int x = 0; x < Wo; x++) oy[x] = oy[x] > hm[k][x] ? oy[x] : hm[k][x];
        }
    }
}

void maxpool3s2_forward_ref(float *out, const float *inp, int P, int H, int W) {
    const int Ho = maxpool3s2_out_size(H), Wo = maxpool3s2_out_size(W);
    for (int p = 0; p < P; p++)
        for (int y = 0; y < Ho; y++)
            for (int x = 0; x < Wo; x++) {
                float m = -FLT_MAX;
                for (int i = 0; i < 3; i++)
                    for (int j = 0; j < 3; j++) {
                        int iy = 2 * y - 1 + i, ix = 2 * x - 1 + j;
                        if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                        float v = inp[((size_t)p * H + iy) * W + ix];
                        if (v > m) m = v;
                    }
                out[((size_t)p * Ho + y) * Wo + x] = m;
            }
}

void maxpool2s2_forward(float *out, const float *inp, int P, int H, int W) {
    CHECK(P >= 1 && H >= 2 && W >= 2, "maxpool2s2 of %d planes %d x %d", P, H, W);
    const int Ho = H / 2, Wo = W / 2;
    for (int p = 0; p < P; p++)
        for (int y = 0; y < Ho; y++) {
            const float *restrict r0 = inp + ((size_t)p * H + 2 * y) * W, *restrict r1 = r0 + W;
            float *restrict o = out + ((size_t)p * Ho + y) * Wo;
            for (int x = 0; x < Wo; x++) {
                float a = r0[2 * x] > r0[2 * x + 1] ? r0[2 * x] : r0[2 * x + 1];
                float b = r1[2 * x] > r1[2 * x + 1] ? r1[2 * x] : r1[2 * x + 1];
                o[x] = a > b ? a : b;
            }
        }
}

void maxpool2s2_forward_ref(float *out, const float *inp, int P, int H, int W) {
    const int Ho = H / 2, Wo = W / 2;
    for (int p = 0; p < P; p++)
        for (int y = 0; y < Ho; y++)
            for (int x = 0; x < Wo; x++) {
                float m = -FLT_MAX;
                for (int i = 0; i < 2; i++)
                    for (int j = 0; j < 2; j++) {
                        float v = inp[((size_t)p * H + 2 * y + i) * W + 2 * x + j];
                        if (v > m) m = v;
                    }
                out[((size_t)p * Ho + y) * Wo + x] = m;
            }
}

// ---- layouts ---------------------------------------------------------------------------

void nchw_to_cnhw(float *dst, const float *src, int n, int C, int HW) {
    for (int b = 0; b < n; b++)
        for (int c = 0; c < C; c++)
            memcpy(dst + ((size_t)c * n + b) * HW, src + ((size_t)b * C + c) * HW,
                   (size_t)HW * sizeof(float));
}

void cnhw_to_annotations(float *annot, const float *feat, int n, int D, int L) {
    // Per image a (D, L) -> (L, D) transpose, in 32 x 32 blocks so both sides stay in cache.
    enum { TB = 32 };
    for (int b = 0; b < n; b++) {
        float *a = annot + (size_t)b * L * D;
        for (int d0 = 0; d0 < D; d0 += TB)
            for (int l0 = 0; l0 < L; l0 += TB) {
                const int d1 = d0 + TB < D ? d0 + TB : D, l1 = l0 + TB < L ? l0 + TB : L;
                for (int d = d0; d < d1; d++) {
                    const float *f = feat + ((size_t)d * n + b) * L;
                    for (int l = l0; l < l1; l++) a[(size_t)l * D + d] = f[l];
                }
            }
    }
}
