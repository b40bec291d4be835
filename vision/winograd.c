// winograd.c: see winograd.h.
#include "vision/winograd.h"

#include <string.h>

#include "core/check.h"
#include "core/gemm.h"

// Widest image row the transforms handle (their row buffers live on the stack).
#define WINOGRAD_MAX_W 2048

static void check_shape(int C, int H, int W, int OC) {
    CHECK(C >= 1 && OC >= 1, "winograd: C = %d, OC = %d", C, OC);
    CHECK(H >= 2 && W >= 2 && H % 2 == 0 && W % 2 == 0 && W <= WINOGRAD_MAX_W,
          "winograd F(2x2, 3x3) needs even H, W (W <= %d), got %d x %d", WINOGRAD_MAX_W, H, W);
}

size_t winograd_scratch_size(int group, int C, int H, int W, int OC) {
    check_shape(C, H, W, OC);
    CHECK(group >= 1, "winograd: group of %d images", group);
    int N = group * winograd_tiles(H, W);
    return 2 * winograd_filter_size(OC, C) + winograd_transformed_size(C, N) +
           winograd_transformed_size(OC, N);
}

// ---- filter transform ------------------------------------------------------------------

// The filters go through in chunks of FILTER_CHUNK, staged in a (16, FILTER_CHUNK) block
// on the stack: writing (or reading) the 16 planes of U one filter at a time is 16 streams
// a power-of-two stride apart (OC C floats), which evict each other from the cache.
#define FILTER_CHUNK 64

void winograd_filter_transform(float *U, const float *weight, int OC, int C) {
    const size_t plane = (size_t)OC * C;
    float u[16][FILTER_CHUNK];
    for (size_t k0 = 0; k0 < plane; k0 += FILTER_CHUNK) {
        const int m = plane - k0 < FILTER_CHUNK ? (int)(plane - k0) : FILTER_CHUNK;
        for (int q = 0; q < m; q++) {
            const float *g = weight + 9 * (k0 + q);
            float r[4][3];  // G g: rows g0, (g0 + g1 + g2) / 2, (g0 - g1 + g2) / 2, g2
            for (int j = 0; j < 3; j++) {
                float a = g[j], b = g[3 + j], c = g[6 + j];
                r[0][j] = a, r[1][j] = 0.5f * (a + b + c), r[2][j] = 0.5f * (a - b + c), r[3][j] = c;
            }
            for (int i = 0; i < 4; i++) {  // (G g) G^T: the same along each row
                float a = r[i][0], b = r[i][1], c = r[i][2];
                u[4 * i + 0][q] = a, u[4 * i + 1][q] = 0.5f * (a + b + c);
                u[4 * i + 2][q] = 0.5f * (a - b + c), u[4 * i + 3][q] = c;
            }
        }
        for (int xi = 0; xi < 16; xi++) memcpy(U + xi * plane + k0, u[xi], (size_t)m * sizeof(float));
    }
}

void winograd_filter_transform_adjoint_add(float *dweight, const float *dU, int OC, int C) {
    const size_t plane = (size_t)OC * C;
    float u[16][FILTER_CHUNK];
    for (size_t k0 = 0; k0 < plane; k0 += FILTER_CHUNK) {
        const int m = plane - k0 < FILTER_CHUNK ? (int)(plane - k0) : FILTER_CHUNK;
        for (int xi = 0; xi < 16; xi++) memcpy(u[xi], dU + xi * plane + k0, (size_t)m * sizeof(float));
        for (int q = 0; q < m; q++) {
            // dU G: per row i, the adjoint of (a, b, c) -> (a, (a+b+c)/2, (a-b+c)/2, c)
            float h[4][3];
            for (int i = 0; i < 4; i++) {
                float u0 = u[4 * i][q], u1 = u[4 * i + 1][q], u2 = u[4 * i + 2][q], u3 = u[4 * i + 3][q];
                h[i][0] = u0 + 0.5f * (u1 + u2), h[i][1] = 0.5f * (u1 - u2), h[i][2] = u3 + 0.5f * (u1 + u2);
            }
            float *dg = dweight + 9 * (k0 + q);
            for (int j = 0; j < 3; j++) {  // G^T (dU G): the same down each column
                float u0 = h[0][j], u1 = h[1][j], u2 = h[2][j], u3 = h[3][j];
                dg[j] += u0 + 0.5f * (u1 + u2);
                dg[3 + j] += 0.5f * (u1 - u2);
                dg[6 + j] += u3 + 0.5f * (u1 + u2);
            }
        }
    }
}

// ---- input transform -------------------------------------------------------------------

// Floats of input_plane's row buffer: at least one row of tiles of the widest image.
#define INPUT_BUF (8 * (WINOGRAD_MAX_W / 2 + 1))

// One plane (H, W): V entry xi of tile t at v[xi * stride + t]. For each row of tiles, the
// four input rows 2ty - 1 .. 2ty + 2 (zero outside) are combined down the columns (B^T d)
// into four rows of the padded width W + 2 (position p = x + 1, zero at both ends), kept
// split into even positions e[k] = p 2k and odd ones o[k] = p 2k + 1; tile tx then reads
// (e[tx], o[tx], e[tx + 1], o[tx + 1]) for its (.. B), all unit-stride. The first pass
// runs over as many rows of tiles as the buffer holds before the second reads them back:
// in a version that read each short row right after writing it (shifted by one element),
// perf put a third of this function's time on those loads, waiting on the stores.
// Only the rows of tiles ty_begin <= ty < ty_end are transformed, tile (ty, tx) to
// v[xi * stride + (ty - ty_begin) tw + tx]. An odd side gets a last row or column of tiles
// that hangs over the edge (tw = (W + 1) / 2): its patch reads zeros there, as beyond the
// padding, so the odd planes of conv_infer's layers (7 x 7 in ResNet's layer4) run the same
// loops.
static void input_plane(float *v, size_t stride, const float *plane, int H, int W,
                        const float *zero, int ty_begin, int ty_end) {
    const int tw = (W + 1) / 2, row = 8 * (tw + 1);
    int chunk = INPUT_BUF / row;
    float buf[INPUT_BUF];
    v -= (size_t)ty_begin * tw;
    for (int ty0 = ty_begin; ty0 < ty_end; ty0 += chunk) {
        const int nty = ty_end - ty0 < chunk ? ty_end - ty0 : chunk;
        for (int u = 0; u < nty; u++) {
            const int ty = ty0 + u;
            const float *r[4];
            for (int i = 0; i < 4; i++) {
                int y = 2 * ty - 1 + i;
                r[i] = y >= 0 && y < H ? plane + (size_t)y * W : zero;
            }
            float *e = buf + (size_t)u * row, *o = e + 4 * (tw + 1);
            // Down the columns, x by x, then split into even and odd positions.
            float t[4][WINOGRAD_MAX_W];
            const float *restrict r0 = r[0], *restrict r1 = r[1], *restrict r2 = r[2];
            const float *restrict r3 = r[3];
            float *restrict t0 = t[0], *restrict t1 = t[1], *restrict t2 = t[2], *restrict t3 = t[3];
            for (int x = 0; x < W; x++) {
                float d0 = r0[x], d1 = r1[x], d2 = r2[x], d3 = r3[x];
                t0[x] = d0 - d2, t1[x] = d1 + d2, t2[x] = d2 - d1, t3[x] = d1 - d3;
            }
            if (W % 2) t0[W] = t1[W] = t2[W] = t3[W] = 0.0f;  // the overhanging column
            for (int i = 0; i < 4; i++) {
                const float *restrict ti = t[i];
                float *restrict ei = e + i * (tw + 1) + 1, *restrict oi = o + i * (tw + 1);
                for (int k = 0; k < tw; k++) oi[k] = ti[2 * k], ei[k] = ti[2 * k + 1];
            }
            for (int i = 0; i < 4; i++) e[i * (tw + 1)] = o[i * (tw + 1) + tw] = 0.0f;
        }
        for (int u = 0; u < nty; u++) {
            const float *e = buf + (size_t)u * row, *o = e + 4 * (tw + 1);
            float *out = v + (size_t)(ty0 + u) * tw;
            for (int i = 0; i < 4; i++) {
                const float *restrict ei = e + i * (tw + 1), *restrict oi = o + i * (tw + 1);
                float *restrict v0 = out + (size_t)(4 * i) * stride, *restrict v1 = v0 + stride;
                float *restrict v2 = v1 + stride, *restrict v3 = v2 + stride;
                for (int tx = 0; tx < tw; tx++) {
                    float a = ei[tx], b = oi[tx], c = ei[tx + 1], d = oi[tx + 1];
                    v0[tx] = a - c, v1[tx] = b + c, v2[tx] = c - b, v3[tx] = b - d;
                }
            }
        }
    }
}

void winograd_input_transform(float *V, const float *imgs, int n, int C, int H, int W) {
    check_shape(C, H, W, 1);
    const size_t T = (size_t)winograd_tiles(H, W), N = (size_t)n * T;
    const size_t stride = winograd_stride(C, (int)N);
    float zero[WINOGRAD_MAX_W] = {0};
    for (int c = 0; c < C; c++)
        for (int b = 0; b < n; b++)
            input_plane(V + (size_t)c * N + b * T, stride, imgs + ((size_t)b * C + c) * H * W, H,
                        W, zero, 0, H / 2);
}

void winograd_input_transform_planes(float *V, const float *planes, int P, int H, int W,
                                     int ty0, int ty1) {
    CHECK(P >= 1 && H >= 1 && W >= 1 && W <= WINOGRAD_MAX_W,
          "winograd planes: P = %d, %d x %d (W <= %d)", P, H, W, WINOGRAD_MAX_W);
    const int th = winograd_tile_side(H);
    CHECK(0 <= ty0 && ty0 < ty1 && ty1 <= th, "tile rows [%d, %d) of %d", ty0, ty1, th);
    const size_t Tb = (size_t)(ty1 - ty0) * winograd_tile_side(W);
    const size_t stride = winograd_stride(P, (int)Tb);
    float zero[WINOGRAD_MAX_W] = {0};
    for (int p = 0; p < P; p++)
        input_plane(V + (size_t)p * Tb, stride, planes + (size_t)p * H * W, H, W, zero, ty0, ty1);
}

// The adjoint of input_plane, accumulated into plane. Per row of tiles: along each tile,
// the adjoint of (.. B) gives four padded rows (x + 1) where neighbouring tiles' patches
// overlap by two columns (even and odd positions summed from two tiles each); then the
// adjoint of B^T (..) adds them to the input rows 2ty - 1 .. 2ty + 2 that exist.
static void input_plane_adjoint(float *plane, const float *dv, size_t stride, int H, int W) {
    const int th = H / 2, tw = W / 2;
    float t[4][WINOGRAD_MAX_W + 2];
    for (int ty = 0; ty < th; ty++) {
        const float *in = dv + (size_t)ty * tw;
        for (int i = 0; i < 4; i++) {
            const float *restrict v0 = in + (size_t)(4 * i) * stride, *restrict v1 = v0 + stride;
            const float *restrict v2 = v1 + stride, *restrict v3 = v2 + stride;
            float *restrict ti = t[i];
            // Tile tx adds v0 at 2tx, v1 - v2 + v3 at 2tx + 1, v1 + v2 - v0 at 2tx + 2 and
            // -v3 at 2tx + 3.
            ti[0] = v0[0], ti[1] = v1[0] - v2[0] + v3[0];
            for (int tx = 1; tx < tw; tx++) {
                ti[2 * tx] = v0[tx] + (v1[tx - 1] + v2[tx - 1] - v0[tx - 1]);
                ti[2 * tx + 1] = (v1[tx] - v2[tx] + v3[tx]) - v3[tx - 1];
            }
            ti[2 * tw] = v1[tw - 1] + v2[tw - 1] - v0[tw - 1], ti[2 * tw + 1] = -v3[tw - 1];
        }
        // Rows: d0 += t0, d1 += t1 - t2 + t3, d2 += t1 + t2 - t0, d3 += -t3 (inside only).
        const float *restrict t0 = t[0] + 1, *restrict t1 = t[1] + 1;
        const float *restrict t2 = t[2] + 1, *restrict t3 = t[3] + 1;
        float *restrict d;
        int y = 2 * ty - 1;
        if (y >= 0) {
            d = plane + (size_t)y * W;
            for (int x = 0; x < W; x++) d[x] += t0[x];
        }
        d = plane + (size_t)(y + 1) * W;
        for (int x = 0; x < W; x++) d[x] += t1[x] - t2[x] + t3[x];
        d = plane + (size_t)(y + 2) * W;
        for (int x = 0; x < W; x++) d[x] += t1[x] + t2[x] - t0[x];
        if (y + 3 < H) {
            d = plane + (size_t)(y + 3) * W;
            for (int x = 0; x < W; x++) d[x] -= t3[x];
        }
    }
}

void winograd_input_transform_adjoint_add(float *dimgs, const float *dV, int n, int C, int H,
                                          int W) {
    check_shape(C, H, W, 1);
    const size_t T = (size_t)winograd_tiles(H, W), N = (size_t)n * T;
    const size_t stride = winograd_stride(C, (int)N);
    for (int b = 0; b < n; b++)
        for (int c = 0; c < C; c++)
            input_plane_adjoint(dimgs + ((size_t)b * C + c) * H * W, dV + (size_t)c * N + b * T,
                                stride, H, W);
}

// ---- the 16 products -------------------------------------------------------------------

void winograd_multiply(float *M, const float *U, const float *V, int OC, int C, int N) {
    const size_t u = (size_t)OC * C, v = winograd_stride(C, N), m = winograd_stride(OC, N);
    for (int xi = 0; xi < 16; xi++)
        gemm(false, false, OC, N, C, 1.0f, U + xi * u, C, V + xi * v, N, 0.0f, M + xi * m, N);
}

void winograd_multiply_backward(float *dV, float *dU, const float *dM, const float *U,
                                const float *V, int OC, int C, int N) {
    const size_t u = (size_t)OC * C, v = winograd_stride(C, N), m = winograd_stride(OC, N);
    for (int xi = 0; xi < 16; xi++) {
        if (dU)
            gemm(false, true, OC, C, N, 1.0f, dM + xi * m, N, V + xi * v, N, 1.0f, dU + xi * u, C);
        if (dV)
            gemm(true, false, C, N, OC, 1.0f, U + xi * u, C, dM + xi * m, N, 0.0f, dV + xi * v, N);
    }
}

// ---- output transform ------------------------------------------------------------------

void winograd_output_tiles(float *restrict y00, float *restrict y01, float *restrict y10,
                           float *restrict y11, const float *restrict m, size_t stride,
                           int count) {
    const float *restrict m0 = m, *restrict m1 = m + stride, *restrict m2 = m + 2 * stride;
    const float *restrict m3 = m + 3 * stride, *restrict m4 = m + 4 * stride;
    const float *restrict m5 = m + 5 * stride, *restrict m6 = m + 6 * stride;
    const float *restrict m7 = m + 7 * stride, *restrict m8 = m + 8 * stride;
    const float *restrict m9 = m + 9 * stride, *restrict m10 = m + 10 * stride;
    const float *restrict m11 = m + 11 * stride, *restrict m12 = m + 12 * stride;
    const float *restrict m13 = m + 13 * stride, *restrict m14 = m + 14 * stride;
    const float *restrict m15 = m + 15 * stride;
    for (int t = 0; t < count; t++) {
        // Down the columns (A^T m): s0 = rows 0 + 1 + 2, s1 = rows 1 - 2 - 3.
        float a0 = m0[t] + m4[t] + m8[t], a1 = m1[t] + m5[t] + m9[t];
        float a2 = m2[t] + m6[t] + m10[t], a3 = m3[t] + m7[t] + m11[t];
        float b0 = m4[t] - m8[t] - m12[t], b1 = m5[t] - m9[t] - m13[t];
        float b2 = m6[t] - m10[t] - m14[t], b3 = m7[t] - m11[t] - m15[t];
        y00[t] = a0 + a1 + a2, y01[t] = a1 - a2 - a3;
        y10[t] = b0 + b1 + b2, y11[t] = b1 - b2 - b3;
    }
}

void winograd_output_tiles_adjoint(float *dm, size_t stride, const float *restrict dy00,
                                   const float *restrict dy01, const float *restrict dy10,
                                   const float *restrict dy11, int count) {
    float *restrict m0 = dm, *restrict m1 = dm + stride, *restrict m2 = dm + 2 * stride;
    float *restrict m3 = dm + 3 * stride, *restrict m4 = dm + 4 * stride;
    float *restrict m5 = dm + 5 * stride, *restrict m6 = dm + 6 * stride;
    float *restrict m7 = dm + 7 * stride, *restrict m8 = dm + 8 * stride;
    float *restrict m9 = dm + 9 * stride, *restrict m10 = dm + 10 * stride;
    float *restrict m11 = dm + 11 * stride, *restrict m12 = dm + 12 * stride;
    float *restrict m13 = dm + 13 * stride, *restrict m14 = dm + 14 * stride;
    float *restrict m15 = dm + 15 * stride;
    for (int t = 0; t < count; t++) {
        // Along the rows (dY A^T): column j of row r gets (d0, d0 + d1, d0 - d1, -d1).
        float p0 = dy00[t], p1 = dy00[t] + dy01[t], p2 = dy00[t] - dy01[t], p3 = -dy01[t];
        float q0 = dy10[t], q1 = dy10[t] + dy11[t], q2 = dy10[t] - dy11[t], q3 = -dy11[t];
        // Down the columns (A ..): rows p, p + q, p - q, -q.
        m0[t] = p0, m1[t] = p1, m2[t] = p2, m3[t] = p3;
        m4[t] = p0 + q0, m5[t] = p1 + q1, m6[t] = p2 + q2, m7[t] = p3 + q3;
        m8[t] = p0 - q0, m9[t] = p1 - q1, m10[t] = p2 - q2, m11[t] = p3 - q3;
        m12[t] = -q0, m13[t] = -q1, m14[t] = -q2, m15[t] = -q3;
    }
}

void winograd_output_transform(float *out, const float *M, const float *bias, int n, int OC,
                               int H, int W, size_t image_stride, size_t channel_stride) {
    check_shape(1, H, W, OC);
    const int th = H / 2, tw = W / 2;
    const size_t T = (size_t)th * tw, N = (size_t)n * T, stride = winograd_stride(OC, (int)N);
    float y[4][WINOGRAD_MAX_W / 2];
    for (int oc = 0; oc < OC; oc++)
        for (int b = 0; b < n; b++) {
            float *o = out + b * image_stride + oc * channel_stride;
            const float beta = bias ? bias[oc] : 0.0f;
            for (int ty = 0; ty < th; ty++) {
                winograd_output_tiles(y[0], y[1], y[2], y[3],
                                      M + (size_t)oc * N + b * T + (size_t)ty * tw, stride, tw);
                float *restrict r0 = o + (size_t)(2 * ty) * W, *restrict r1 = r0 + W;
                for (int tx = 0; tx < tw; tx++) {
                    r0[2 * tx] = y[0][tx] + beta, r0[2 * tx + 1] = y[1][tx] + beta;
                    r1[2 * tx] = y[2][tx] + beta, r1[2 * tx + 1] = y[3][tx] + beta;
                }
            }
        }
}

void winograd_output_transform_adjoint(float *dM, const float *dout, int n, int OC, int H,
                                       int W, size_t image_stride, size_t channel_stride) {
    check_shape(1, H, W, OC);
    const int th = H / 2, tw = W / 2;
    const size_t T = (size_t)th * tw, N = (size_t)n * T, stride = winograd_stride(OC, (int)N);
    float y[4][WINOGRAD_MAX_W / 2];
    for (int oc = 0; oc < OC; oc++)
        for (int b = 0; b < n; b++) {
            const float *o = dout + b * image_stride + oc * channel_stride;
            for (int ty = 0; ty < th; ty++) {
                const float *restrict r0 = o + (size_t)(2 * ty) * W, *restrict r1 = r0 + W;
                for (int tx = 0; tx < tw; tx++) {
                    y[0][tx] = r0[2 * tx], y[1][tx] = r0[2 * tx + 1];
                    y[2][tx] = r1[2 * tx], y[3][tx] = r1[2 * tx + 1];
                }
                winograd_output_tiles_adjoint(dM + (size_t)oc * N + b * T + (size_t)ty * tw,
                                              stride, y[0], y[1], y[2], y[3], tw);
            }
        }
}

// ---- the whole convolution -------------------------------------------------------------

// Scratch layout: U, dU, V, M (the group's).
void winograd_conv3x3_forward(float *out, const float *inp, const float *weight,
                              const float *bias, float *scratch, int group, int B, int C, int H,
                              int W, int OC) {
    check_shape(C, H, W, OC);
    CHECK(group >= 1, "winograd: group of %d images", group);
    const size_t T = (size_t)winograd_tiles(H, W), nu = winograd_filter_size(OC, C);
    float *U = scratch, *V = U + 2 * nu, *M = V + winograd_transformed_size(C, group * (int)T);
    winograd_filter_transform(U, weight, OC, C);
    for (int b0 = 0; b0 < B; b0 += group) {
        const int n = B - b0 < group ? B - b0 : group;
        winograd_input_transform(V, inp + (size_t)b0 * C * H * W, n, C, H, W);
        winograd_multiply(M, U, V, OC, C, n * (int)T);
        winograd_output_transform(out + (size_t)b0 * OC * H * W, M, bias, n, OC, H, W,
                                  (size_t)OC * H * W, (size_t)H * W);
    }
}

void winograd_conv3x3_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                               const float *inp, const float *weight, float *scratch, int group,
                               int B, int C, int H, int W, int OC) {
    check_shape(C, H, W, OC);
    CHECK(group >= 1, "winograd: group of %d images", group);
    const size_t T = (size_t)winograd_tiles(H, W), nu = winograd_filter_size(OC, C);
    const size_t HW = (size_t)H * W;
    float *U = scratch, *dU = U + nu, *V = dU + nu;
    float *dM = V + winograd_transformed_size(C, group * (int)T);
    if (dbias)
        for (int b = 0; b < B; b++)
            for (int oc = 0; oc < OC; oc++) {
                const float *d = dout + ((size_t)b * OC + oc) * HW;
                float s = 0.0f;
                for (size_t k = 0; k < HW; k++) s += d[k];
                dbias[oc] += s;
            }
    if (!dinp && !dweight) return;
    if (dinp) winograd_filter_transform(U, weight, OC, C);
    if (dweight) memset(dU, 0, nu * sizeof(float));
    for (int b0 = 0; b0 < B; b0 += group) {
        const int n = B - b0 < group ? B - b0 : group, N = n * (int)T;
        winograd_output_transform_adjoint(dM, dout + (size_t)b0 * OC * HW, n, OC, H, W,
                                          (size_t)OC * HW, HW);
        if (dweight) winograd_input_transform(V, inp + (size_t)b0 * C * HW, n, C, H, W);
        winograd_multiply_backward(dinp ? V : NULL, dweight ? dU : NULL, dM, U, V, OC, C, N);
        if (dinp) winograd_input_transform_adjoint_add(dinp + (size_t)b0 * C * HW, V, n, C, H, W);
    }
    if (dweight) winograd_filter_transform_adjoint_add(dweight, dU, OC, C);
}
