// cnn.c: see cnn.h.
#include "vision/cnn.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/dims.h"
#include "core/gemm.h"
#include "vision/conv.h"
#include "vision/winograd.h"

#define CNN_K 3
#define CNN_PAD 1
#define CNN_MAX_CHANNELS 4096

void cnn_config_default(CnnConfig *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->in_channels = 3;
    cfg->n_layers = 3;
    cfg->channels[0] = 32;
    cfg->channels[1] = 64;
    cfg->channels[2] = 128;
}

int cnn_config_parse(CnnConfig *cfg, const char *list, const char *flag, Error *err) {
    CnnConfig c = *cfg;
    c.n_layers = 0;
    const char *p = list;
    if (!p || !*p) return error_set(err, "%s: empty channel list", flag);
    for (;;) {
        char *end = NULL;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 1 || v > CNN_MAX_CHANNELS)
            return error_set(err, "%s: bad channel count in \"%s\" (want integers 1..%d, e.g. 32,64,128)",
                             flag, list, CNN_MAX_CHANNELS);
        if (c.n_layers == CNN_MAX_LAYERS)
            return error_set(err, "%s: more than %d layers in \"%s\"", flag, CNN_MAX_LAYERS, list);
        c.channels[c.n_layers++] = (int)v;
        if (*end == 0) break;
        if (*end != ',')
            return error_set(err, "%s: unexpected '%c' in \"%s\" (want e.g. 32,64,128)", flag, *end,
                             list);
        p = end + 1;
    }
    *cfg = c;
    return 0;
}

static int layer_in_channels(const CnnConfig *cfg, int i) {
    return i == 0 ? cfg->in_channels : cfg->channels[i - 1];
}

void cnn_register(CnnParams *p, Block *block, const char *prefix, const CnnConfig *cfg) {
    CHECK(cfg->n_layers >= 1 && cfg->n_layers <= CNN_MAX_LAYERS, "n_layers = %d", cfg->n_layers);
    CHECK(cfg->in_channels >= 1, "in_channels = %d", cfg->in_channels);
    memset(p, 0, sizeof *p);
    p->cfg = *cfg;
    for (int i = 0; i < cfg->n_layers; i++) {
        char name[BLOCK_NAME_LEN];
        int n = snprintf(name, sizeof name, "%s.conv%d.weight", prefix, i);
        CHECK(n > 0 && n < (int)sizeof name, "name too long for prefix \"%s\"", prefix);
        block_add(block, &p->weight[i], name, 4, cfg->channels[i], layer_in_channels(cfg, i),
                  CNN_K, CNN_K);
        snprintf(name, sizeof name, "%s.conv%d.bias", prefix, i);
        block_add(block, &p->bias[i], name, 1, cfg->channels[i]);
    }
}

void cnn_init(CnnParams *p, Rng *rng) {
    const CnnConfig *cfg = &p->cfg;
    for (int i = 0; i < cfg->n_layers; i++) {
        CHECK(p->weight[i] && p->bias[i], "cnn_init before block_alloc");
        int fan_in = layer_in_channels(cfg, i) * CNN_K * CNN_K;
        float sd = sqrtf(2.0f / fan_in);
        size_t n = (size_t)cfg->channels[i] * fan_in;
        for (size_t k = 0; k < n; k++) p->weight[i][k] = sd * rng_normal(rng);
        memset(p->bias[i], 0, (size_t)cfg->channels[i] * sizeof(float));
    }
}

static size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

// Whether layer i convolves through Winograd: an even side (the 2x2 tiles are the pooling
// windows) and, under CNN_CONV_AUTO, enough input channels.
static int layer_uses_winograd(const CnnConfig *cfg, int i, int S, CnnConv conv) {
    const int s = S >> i;
    if (conv == CNN_CONV_IM2COL || s % 2) return 0;
    return conv == CNN_CONV_WINOGRAD || layer_in_channels(cfg, i) >= CNN_WINOGRAD_MIN_CHANNELS;
}

// Bytes of every buffer for (B, S), groups of G images and the convolution method; fills
// the pointers when ws is non-NULL. Layout: pool outputs per layer (the whole batch's; the
// last layer's for one group), a group's scratch (pre, col, the two gradient buffers), the
// weight gradients (transposed, or Winograd's dU), Winograd's U, then the window codes
// (bytes). Left uninitialised: forward writes before backward reads.
static size_t workspace_layout(const CnnConfig *cfg, int B, int S, int G, CnnConv conv,
                               CnnWorkspace *ws) {
    CHECK(cfg->n_layers >= 1 && cfg->n_layers <= CNN_MAX_LAYERS, "n_layers = %d", cfg->n_layers);
    CHECK(B >= 1 && (S >> cfg->n_layers) >= 1, "CNN of %d layers needs S >= %d (S = %d)",
          cfg->n_layers, 1 << cfg->n_layers, S);
    CHECK(G >= 1, "group of %d images", G);
    if (G > B) G = B;
    size_t n_pool = 0, n_argmax = 0, max_pre = 0, max_col = 0, max_grad = 0, n_dwt = 0, n_wu = 0;
    size_t pool[CNN_MAX_LAYERS], dwt[CNN_MAX_LAYERS], wu[CNN_MAX_LAYERS];
    for (int i = 0; i < cfg->n_layers; i++) {
        const int s = S >> i, C = layer_in_channels(cfg, i), OC = cfg->channels[i];
        const int wino = layer_uses_winograd(cfg, i, S, conv);
        size_t per_image = (size_t)OC * (s / 2) * (s / 2);
        // Winograd: M (16, OC, G T) and V (16, C, G T) with gaps, T = s s / 4.
        const int NT = G * (s / 2) * (s / 2);
        size_t pre = wino ? winograd_transformed_size(OC, NT) : (size_t)G * OC * s * s;
        size_t col = wino ? winograd_transformed_size(C, NT) : (size_t)G * C * CNN_K * CNN_K * s * s;
        pool[i] = (size_t)(i < cfg->n_layers - 1 ? B : G) * per_image;
        dwt[i] = wino ? winograd_filter_size(OC, C) : (size_t)C * CNN_K * CNN_K * OC;
        wu[i] = wino ? winograd_filter_size(OC, C) : 0;
        n_pool += align16(pool[i]);
        n_argmax += align16((size_t)B * per_image);
        n_dwt += align16(dwt[i]);
        n_wu += align16(wu[i]);
        if (pre > max_pre) max_pre = pre;
        if (col > max_col) max_col = col;
        if ((size_t)G * per_image > max_grad) max_grad = (size_t)G * per_image;
    }
    max_pre = align16(max_pre), max_col = align16(max_col), max_grad = align16(max_grad);
    size_t floats = n_pool + max_pre + max_col + 2 * max_grad + n_dwt + n_wu;
    size_t bytes = floats * sizeof(float) + n_argmax;  // argmax: one byte per pool output
    if (ws) {
        ws->group = G;
        float *f = ws->mem;
        for (int i = 0; i < cfg->n_layers; i++) ws->pool[i] = f, f += align16(pool[i]);
        ws->pre = f, f += max_pre;
        ws->col = f, f += max_col;
        ws->grad[0] = f, f += max_grad;
        ws->grad[1] = f, f += max_grad;
        for (int i = 0; i < cfg->n_layers; i++) ws->dwt[i] = f, f += align16(dwt[i]);
        for (int i = 0; i < cfg->n_layers; i++) {
            ws->winograd[i] = layer_uses_winograd(cfg, i, S, conv);
            ws->wu[i] = wu[i] ? f : NULL, f += align16(wu[i]);
        }
        unsigned char *am = (unsigned char *)f;
        for (int i = 0; i < cfg->n_layers; i++) {
            int h = (S >> i) / 2;
            ws->argmax[i] = am, am += align16((size_t)B * cfg->channels[i] * h * h);
        }
    }
    return bytes;
}

int cnn_check_sizes(const CnnConfig *cfg, int S, int group, const char *size_flag, Error *err) {
    const int64_t G = group < 1 ? 1 : group;
    for (int i = 0; i < cfg->n_layers; i++) {
        const int s = S >> i, C = layer_in_channels(cfg, i), OC = cfg->channels[i];
        const int wino = layer_uses_winograd(cfg, i, S, CNN_CONV_AUTO);
        char side[96], tiles[128], in[96], out[96], what_col[64], what_pre[64];
        snprintf(side, sizeof side, "positions (%d x %d at layer %d, from %s %d)", s, s, i + 1,
                 size_flag, S);
        // Winograd's V and M: 16 planes of (rows, G T) with a gap of WINOGRAD_GAP floats each,
        // bounded by (rows, G T + WINOGRAD_GAP) planes.
        snprintf(tiles, sizeof tiles, "tiles and gap (%d x %d at layer %d, from %s %d)", s / 2,
                 s / 2, i + 1, size_flag, S);
        if (i == 0) snprintf(in, sizeof in, "image channels");
        else snprintf(in, sizeof in, "channels into layer %d (--channels entry %d)", i + 1, i);
        snprintf(out, sizeof out, "channels of layer %d (--channels entry %d)", i + 1, i + 1);
        snprintf(what_col, sizeof what_col, "layer %d's %s", i + 1,
                 wino ? "Winograd input transform" : "column matrix");
        snprintf(what_pre, sizeof what_pre, "layer %d's %s", i + 1,
                 wino ? "Winograd product" : "convolution output");
        const int64_t nt = G * (s / 2) * (s / 2) + WINOGRAD_GAP;
        DimTerm col[] = {{G, "images per group"}, {C, in}, {CNN_K * CNN_K, "taps (3 x 3)"},
                         {(int64_t)s * s, side}};
        DimTerm pre[] = {{G, "images per group"}, {OC, out}, {(int64_t)s * s, side}};
        DimTerm wcol[] = {{16, "Winograd planes"}, {C, in}, {nt, tiles}};
        DimTerm wpre[] = {{16, "Winograd planes"}, {OC, out}, {nt, tiles}};
        // A group of one drops out of the message (the product is the same).
        const int skip = G == 1;
        int bad = wino ? dims_check(err, what_col, wcol, DIMS_LEN(wcol)) ||
                             dims_check(err, what_pre, wpre, DIMS_LEN(wpre))
                       : dims_check(err, what_col, col + skip, DIMS_LEN(col) - skip) ||
                             dims_check(err, what_pre, pre + skip, DIMS_LEN(pre) - skip);
        if (bad) return -1;
    }
    return 0;
}

size_t cnn_workspace_bytes(const CnnConfig *cfg, int B, int S) {
    return workspace_layout(cfg, B, S, CNN_GROUP, CNN_CONV_AUTO, NULL);
}

void cnn_workspace_alloc_conv(CnnWorkspace *ws, const CnnConfig *cfg, int B, int S, int group,
                              CnnConv conv) {
    memset(ws, 0, sizeof *ws);
    ws->cfg = *cfg;
    ws->B = B, ws->S = S;
    ws->bytes = workspace_layout(cfg, B, S, group, conv, NULL);
    ws->mem = xmalloc(ws->bytes);
    workspace_layout(cfg, B, S, group, conv, ws);
}

void cnn_workspace_alloc_grouped(CnnWorkspace *ws, const CnnConfig *cfg, int B, int S, int group) {
    cnn_workspace_alloc_conv(ws, cfg, B, S, group, CNN_CONV_AUTO);
}

void cnn_workspace_alloc(CnnWorkspace *ws, const CnnConfig *cfg, int B, int S) {
    cnn_workspace_alloc_conv(ws, cfg, B, S, CNN_GROUP, CNN_CONV_AUTO);
}

void cnn_workspace_free(CnnWorkspace *ws) {
    free(ws->mem);
    memset(ws, 0, sizeof *ws);
}

static void check_compatible(const CnnWorkspace *ws, const CnnParams *p, int B) {
    CHECK(B >= 1 && B <= ws->B, "batch %d, workspace holds %d", B, ws->B);
    int same = ws->cfg.in_channels == p->cfg.in_channels && ws->cfg.n_layers == p->cfg.n_layers;
    for (int i = 0; same && i < p->cfg.n_layers; i++) same = ws->cfg.channels[i] == p->cfg.channels[i];
    CHECK(same, "workspace and params configs differ");
}

// Windows per pass of the row kernels below (their float scratch lives on the stack).
#define CNN_ROW_BLOCK 64

// Per window, the backward needs where the maximum was and whether the ReLU passed it: one
// byte, the winner's position dy * 2 + dx (first maximum in row-major order), plus
// CNN_PASSED when the pooled value is positive.
#define CNN_PASSED 4

// One row of 2x2 windows, w of them: rows r0, r1 (2w floats each, bias not yet added) ->
// o (w) = max of the four ReLU outputs, k (w) = the window's code (above) as a float.
// Branch-free float selects (the compiler vectorises these; integer results of float
// comparisons stop it); a tournament of the two pairs picks the same first maximum as
// scanning v0..v3 (ties keep the earlier one). Same values as conv + bias, relu_forward,
// maxpool2_forward. pool_window does one window.
static inline void pool_window(float *restrict o, float *restrict k, float v0, float v1,
                               float v2, float v3) {
    v0 = v0 > 0.0f ? v0 : 0.0f, v1 = v1 > 0.0f ? v1 : 0.0f;
    v2 = v2 > 0.0f ? v2 : 0.0f, v3 = v3 > 0.0f ? v3 : 0.0f;
    float mt = v1 > v0 ? v1 : v0, mb = v3 > v2 ? v3 : v2;
    float kt = v1 > v0 ? 1.0f : 0.0f, kb = v3 > v2 ? 3.0f : 2.0f;
    float m = mb > mt ? mb : mt;
    *o = m;
    *k = (mb > mt ? kb : kt) + (m > 0.0f ? (float)CNN_PASSED : 0.0f);
}

static void pool_row(float *restrict o, float *restrict k, const float *restrict r0,
                     const float *restrict r1, float bias, int w) {
    for (int x = 0; x < w; x++)
        pool_window(o + x, k + x, r0[2 * x] + bias, r0[2 * x + 1] + bias, r1[2 * x] + bias,
                    r1[2 * x + 1] + bias);
}

// acc[x mod 8] += g[x] for every window x whose ReLU passed (code k >= CNN_PASSED): the
// bias gradient, in eight lanes.
static void add_passed(float *restrict acc, const float *restrict g, const float *restrict k,
                       int w) {
    const float p = (float)CNN_PASSED;
    int x = 0;
    for (; x + 8 <= w; x += 8)
        for (int j = 0; j < 8; j++) {
            float gv = g[x + j], kv = k[x + j];
            acc[j] += kv >= p ? gv : 0.0f;
        }
    for (; x < w; x++) acc[x & 7] += k[x] >= p ? g[x] : 0.0f;
}

// The backward of pool_row: each window's gradient g goes to its winner when the ReLU passed
// it (code k = CNN_PASSED + position); the other three, and all four otherwise, get zero.
// acc[x mod 8] accumulates the gradients passed on.
static void unpool_row(float *restrict r0, float *restrict r1, float *restrict acc,
                       const float *restrict g, const float *restrict k, int w) {
    const float p = (float)CNN_PASSED;
    for (int x = 0; x < w; x++) {
        // All four values before the stores: written this way, GCC 12 vectorises the loop.
        float gv = g[x], kv = k[x], z = 0.0f;
        float v0 = kv == p ? gv : z, v1 = kv == p + 1.0f ? gv : z;
        float v2 = kv == p + 2.0f ? gv : z, v3 = kv == p + 3.0f ? gv : z;
        r0[2 * x] = v0, r0[2 * x + 1] = v1, r1[2 * x] = v2, r1[2 * x + 1] = v3;
    }
    add_passed(acc, g, k, w);
}

// Bias, ReLU and 2x2 max-pooling of one group's convolution output, in one pass while it is
// in cache. pre (OC, n, s, s): the GEMM's output without bias (image b of channel oc at
// (oc * n + b) * s * s); pool (n, OC, s/2, s/2) and argmax (same shape, the window codes)
// for the group's images.
static void bias_relu_pool(float *restrict pool, unsigned char *restrict argmax,
                           const float *restrict pre, const float *bias, int n, int OC, int s) {
    const int h = s / 2;
    float k[CNN_ROW_BLOCK];
    for (int oc = 0; oc < OC; oc++)
        for (int b = 0; b < n; b++) {
            const float *plane = pre + ((size_t)oc * n + b) * s * s;
            float *o = pool + ((size_t)b * OC + oc) * h * h;
            unsigned char *a = argmax + ((size_t)b * OC + oc) * h * h;
            for (int y = 0; y < h; y++)
                for (int x0 = 0; x0 < h; x0 += CNN_ROW_BLOCK) {
                    int w = h - x0 < CNN_ROW_BLOCK ? h - x0 : CNN_ROW_BLOCK;
                    const float *r0 = plane + (size_t)(2 * y) * s + 2 * x0;
                    pool_row(o + (size_t)y * h + x0, k, r0, r0 + s, bias[oc], w);
                    unsigned char *ay = a + (size_t)y * h + x0;
                    for (int x = 0; x < w; x++) ay[x] = (unsigned char)k[x];
                }
        }
}

// The backward of bias_relu_pool for one group: dpre (OC, n, s, s) gets unpool_row's
// values (every element written: an odd last row and column, which pooling ignores, get
// zero); dbias (OC) accumulates the sum of dpre (eight partial sums per channel, added in a
// fixed order). dpool, argmax (n, OC, s/2, s/2): the group's.
static void pool_relu_backward(float *restrict dpre, float *restrict dbias,
                               const float *restrict dpool, const unsigned char *restrict argmax,
                               int n, int OC, int s) {
    const int h = s / 2;
    float k[CNN_ROW_BLOCK];
    for (int oc = 0; oc < OC; oc++) {
        float acc[8] = {0};
        for (int b = 0; b < n; b++) {
            float *plane = dpre + ((size_t)oc * n + b) * s * s;
            size_t q = ((size_t)b * OC + oc) * h * h;
            for (int y = 0; y < h; y++) {
                float *r0 = plane + (size_t)(2 * y) * s;
                for (int x0 = 0; x0 < h; x0 += CNN_ROW_BLOCK) {
                    int w = h - x0 < CNN_ROW_BLOCK ? h - x0 : CNN_ROW_BLOCK;
                    size_t e = q + (size_t)y * h + x0;
                    for (int x = 0; x < w; x++) k[x] = argmax[e + x];
                    unpool_row(r0 + 2 * x0, r0 + s + 2 * x0, acc, dpool + e, k, w);
                }
                if (s & 1) r0[s - 1] = r0[2 * s - 1] = 0.0f;
            }
            if (s & 1) memset(plane + (size_t)(s - 1) * s, 0, (size_t)s * sizeof(float));
        }
        dbias[oc] += ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    }
}

// pool_row for Winograd's output: the tiles are the pooling windows, so the four values of
// window x come as y00[x], y01[x] (top row) and y10[x], y11[x] (bottom row), bias not yet
// added. The same selects and codes as pool_row.
static void pool_tiles(float *restrict o, float *restrict k, const float *restrict y00,
                       const float *restrict y01, const float *restrict y10,
                       const float *restrict y11, float bias, int w) {
    for (int x = 0; x < w; x++)
        pool_window(o + x, k + x, y00[x] + bias, y01[x] + bias, y10[x] + bias, y11[x] + bias);
}

// unpool_row for Winograd: the window gradients as four arrays (positions as pool_tiles).
static void unpool_tiles(float *restrict d00, float *restrict d01, float *restrict d10,
                         float *restrict d11, float *restrict acc, const float *restrict g,
                         const float *restrict k, int w) {
    const float p = (float)CNN_PASSED;
    for (int x = 0; x < w; x++) {
        float gv = g[x], kv = k[x], z = 0.0f;
        d00[x] = kv == p ? gv : z, d01[x] = kv == p + 1.0f ? gv : z;
        d10[x] = kv == p + 2.0f ? gv : z, d11[x] = kv == p + 3.0f ? gv : z;
    }
    add_passed(acc, g, k, w);
}

// Winograd's output transform fused with bias, ReLU and pooling (s even): M (16, OC, n T)
// (with gaps, vision/winograd.h), T = (s/2)^2 tiles per image; pool, argmax (n, OC, s/2, s/2) as bias_relu_pool. The
// convolution's output itself is never stored.
static void winograd_bias_relu_pool(float *restrict pool, unsigned char *restrict argmax,
                                    const float *M, const float *bias, int n, int OC, int s) {
    const int h = s / 2;
    const size_t T = (size_t)h * h, N = (size_t)n * T, stride = winograd_stride(OC, (int)N);
    float y[4][CNN_ROW_BLOCK], k[CNN_ROW_BLOCK];
    for (int oc = 0; oc < OC; oc++)
        for (int b = 0; b < n; b++) {
            const float *m = M + (size_t)oc * N + b * T;
            float *o = pool + ((size_t)b * OC + oc) * T;
            unsigned char *a = argmax + ((size_t)b * OC + oc) * T;
            for (int ty = 0; ty < h; ty++)
                for (int x0 = 0; x0 < h; x0 += CNN_ROW_BLOCK) {
                    int w = h - x0 < CNN_ROW_BLOCK ? h - x0 : CNN_ROW_BLOCK;
                    size_t e = (size_t)ty * h + x0;
                    winograd_output_tiles(y[0], y[1], y[2], y[3], m + e, stride, w);
                    pool_tiles(o + e, k, y[0], y[1], y[2], y[3], bias[oc], w);
                    for (int x = 0; x < w; x++) a[e + x] = (unsigned char)k[x];
                }
        }
}

// The backward of winograd_bias_relu_pool: dM (16, OC, n T) (overwritten) is the adjoint of
// the output transform applied to the windows' gradients; dbias as pool_relu_backward.
static void winograd_pool_relu_backward(float *restrict dM, float *restrict dbias,
                                        const float *restrict dpool,
                                        const unsigned char *restrict argmax, int n, int OC,
                                        int s) {
    const int h = s / 2;
    const size_t T = (size_t)h * h, N = (size_t)n * T, stride = winograd_stride(OC, (int)N);
    float d[4][CNN_ROW_BLOCK], k[CNN_ROW_BLOCK];
    for (int oc = 0; oc < OC; oc++) {
        float acc[8] = {0};
        for (int b = 0; b < n; b++) {
            float *m = dM + (size_t)oc * N + b * T;
            size_t q = ((size_t)b * OC + oc) * T;
            for (int ty = 0; ty < h; ty++)
                for (int x0 = 0; x0 < h; x0 += CNN_ROW_BLOCK) {
                    int w = h - x0 < CNN_ROW_BLOCK ? h - x0 : CNN_ROW_BLOCK;
                    size_t e = (size_t)ty * h + x0;
                    for (int x = 0; x < w; x++) k[x] = argmax[q + e + x];
                    unpool_tiles(d[0], d[1], d[2], d[3], acc, dpool + q + e, k, w);
                    winograd_output_tiles_adjoint(m + e, stride, d[0], d[1], d[2], d[3], w);
                }
        }
        dbias[oc] += ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    }
}

// Winograd's transformed weights of every layer that uses it.
static void transform_weights(CnnWorkspace *ws, const CnnParams *p) {
    for (int i = 0; i < p->cfg.n_layers; i++)
        if (ws->winograd[i])
            winograd_filter_transform(ws->wu[i], p->weight[i], p->cfg.channels[i],
                                      layer_in_channels(&p->cfg, i));
}

void cnn_forward(float *annot, CnnWorkspace *ws, const float *images, const CnnParams *p,
                 int B) {
    check_compatible(ws, p, B);
    const CnnConfig *cfg = &p->cfg;
    const int S = ws->S, nl = cfg->n_layers;
    const int D = cnn_dim(cfg), L = cnn_grid_size(cfg, S) * cnn_grid_size(cfg, S);
    transform_weights(ws, p);
    // Group by group through every layer: a group's outputs are still in cache when the
    // next layer reads them.
    for (int b0 = 0; b0 < B; b0 += ws->group) {
        const int n = B - b0 < ws->group ? B - b0 : ws->group;
        for (int i = 0; i < nl; i++) {
            const int s = S >> i, C = layer_in_channels(cfg, i), OC = cfg->channels[i];
            const int N = s * s, CKK = C * CNN_K * CNN_K, h = s / 2;
            const float *in = i == 0 ? images + (size_t)b0 * C * N
                                     : ws->pool[i - 1] + (size_t)b0 * C * N;
            // The last layer's outputs are kept for the group only (the annotations hold them).
            float *out = ws->pool[i] + (size_t)(i < nl - 1 ? b0 : 0) * OC * h * h;
            unsigned char *am = ws->argmax[i] + (size_t)b0 * OC * h * h;
            if (ws->winograd[i]) {
                winograd_input_transform(ws->col, in, n, C, s, s);
                winograd_multiply(ws->pre, ws->wu[i], ws->col, OC, C, n * h * h);
                winograd_bias_relu_pool(out, am, ws->pre, p->bias[i], n, OC, s);
                continue;
            }
            im2col_batch(ws->col, in, n, C, s, s, CNN_K, CNN_PAD);
            gemm(false, false, OC, n * N, CKK, 1.0f, p->weight[i], CKK, ws->col, n * N, 0.0f,
                 ws->pre, n * N);
            bias_relu_pool(out, am, ws->pre, p->bias[i], n, OC, s);
        }
        // (n, D, G, G) -> (n, L, D)
        const float *last = ws->pool[nl - 1];
        for (int b = 0; b < n; b++)
            for (int d = 0; d < D; d++)
                for (int l = 0; l < L; l++)
                    annot[((size_t)(b0 + b) * L + l) * D + d] = last[((size_t)b * D + d) * L + l];
    }
}

// Floats of layer i's weight-gradient sum in the workspace: (C K K, OC) transposed, or
// Winograd's (16, OC, C).
static size_t dwt_floats(const CnnWorkspace *ws, const CnnConfig *cfg, int i) {
    int C = layer_in_channels(cfg, i), OC = cfg->channels[i];
    return ws->winograd[i] ? winograd_filter_size(OC, C) : (size_t)C * CNN_K * CNN_K * OC;
}

// Layer i's backward for the group of n images from b0: from dout, its pool output's
// gradient (n, OC, s/2, s/2), the bias's gradient into grads, the weights' into the
// workspace's sum, and, when dinp is given, its input's gradient into dinp (n, C, s, s)
// (overwritten for i > 0, where it is the layer below's pool-output gradient; added to for
// i = 0, the images').
static void layer_backward(CnnParams *grads, float *dinp, const float *dout, CnnWorkspace *ws,
                           const float *images, const CnnParams *p, int i, int b0, int n) {
    const CnnConfig *cfg = &p->cfg;
    const int s = ws->S >> i, C = layer_in_channels(cfg, i), OC = cfg->channels[i];
    const int N = s * s, CKK = C * CNN_K * CNN_K, h = s / 2;
    const unsigned char *am = ws->argmax[i] + (size_t)b0 * OC * h * h;
    const float *in = i == 0 ? images + (size_t)b0 * C * N : ws->pool[i - 1] + (size_t)b0 * C * N;
    if (ws->winograd[i]) {
        // dout -> dM in ws->pre; V recomputed in ws->col, then overwritten by dV.
        winograd_pool_relu_backward(ws->pre, grads->bias[i], dout, am, n, OC, s);
        winograd_input_transform(ws->col, in, n, C, s, s);
        winograd_multiply_backward(dinp ? ws->col : NULL, ws->dwt[i], ws->pre, ws->wu[i], ws->col,
                                   OC, C, n * h * h);
        if (!dinp) return;
        if (i > 0) memset(dinp, 0, (size_t)n * C * N * sizeof(float));
        winograd_input_transform_adjoint_add(dinp, ws->col, n, C, s, s);
        return;
    }
    // dout (n, OC, h, h) -> ws->pre (OC, n, s, s), the conv output's gradient.
    pool_relu_backward(ws->pre, grads->bias[i], dout, am, n, OC, s);
    im2col_batch(ws->col, in, n, C, s, s, CNN_K, CNN_PAD);
    gemm(false, true, CKK, OC, n * N, 1.0f, ws->col, n * N, ws->pre, n * N, 1.0f, ws->dwt[i],
         OC);
    if (!dinp) return;
    // The column gradient reuses the column buffer (its forward values are spent).
    gemm(true, false, CKK, n * N, OC, 1.0f, p->weight[i], CKK, ws->pre, n * N, 0.0f, ws->col,
         n * N);
    if (i > 0) memset(dinp, 0, (size_t)n * C * N * sizeof(float));
    col2im_batch_add(dinp, ws->col, n, C, s, s, CNN_K, CNN_PAD);
}

// Adds the workspace's weight-gradient sums to grads: the transposed ones transposed back,
// Winograd's through the filter transform's adjoint.
static void add_weight_grads(CnnParams *grads, const CnnWorkspace *ws, const CnnConfig *cfg) {
    for (int i = 0; i < cfg->n_layers; i++) {
        const int OC = cfg->channels[i], CKK = layer_in_channels(cfg, i) * CNN_K * CNN_K;
        if (ws->winograd[i]) {
            winograd_filter_transform_adjoint_add(grads->weight[i], ws->dwt[i], OC,
                                                  layer_in_channels(cfg, i));
            continue;
        }
        for (int oc = 0; oc < OC; oc++)
            for (int k = 0; k < CKK; k++)
                grads->weight[i][(size_t)oc * CKK + k] += ws->dwt[i][(size_t)k * OC + oc];
    }
}

void cnn_backward(CnnParams *grads, float *dimages, const float *dannot, CnnWorkspace *ws,
                  const float *images, const CnnParams *p, int B) {
    check_compatible(ws, p, B);
    const CnnConfig *cfg = &p->cfg;
    const int S = ws->S, nl = cfg->n_layers;
    const int D = cnn_dim(cfg), L = cnn_grid_size(cfg, S) * cnn_grid_size(cfg, S);
    // Group by group, last layer to first, so only a group's gradients exist at a time.
    // The weight gradients accumulate over the groups transposed, (C*K*K, OC): that GEMM
    // (columns times the output gradient's transpose) measured 5 to 20 % faster than
    // (OC, C*K*K) on these shapes; they are added to grads at the end.
    // Winograd layers accumulate dU (16, OC, C) instead, taken back through the filter
    // transform's adjoint at the end.
    transform_weights(ws, p);
    for (int i = 0; i < nl; i++) memset(ws->dwt[i], 0, dwt_floats(ws, cfg, i) * sizeof(float));
    for (int b0 = 0; b0 < B; b0 += ws->group) {
        const int n = B - b0 < ws->group ? B - b0 : ws->group;
        // The last layer's pool-output gradient of the group, (n, L, D) -> (n, D, G, G).
        float *dout = ws->grad[0];
        for (int b = 0; b < n; b++)
            for (int l = 0; l < L; l++)
                for (int d = 0; d < D; d++)
                    dout[((size_t)b * D + d) * L + l] = dannot[((size_t)(b0 + b) * L + l) * D + d];
        for (int i = nl - 1; i >= 0; i--) {
            // The input gradient: the previous layer's pool-output gradient (the other group
            // buffer), or the images' (optional).
            const size_t in_size = (size_t)layer_in_channels(cfg, i) * (S >> i) * (S >> i);
            float *dinp = i > 0 ? ws->grad[(dout == ws->grad[0]) ? 1 : 0]
                                : dimages ? dimages + (size_t)b0 * in_size : NULL;
            layer_backward(grads, dinp, dout, ws, images, p, i, b0, n);
            dout = dinp;
        }
    }
    add_weight_grads(grads, ws, cfg);
}
