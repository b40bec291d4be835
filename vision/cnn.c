// cnn.c: see cnn.h.
#include "vision/cnn.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/activations.h"
#include "core/check.h"
#include "vision/conv.h"

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

// Sizes (in elements) of every buffer for (B, S); fills offsets when ws is non-NULL.
static size_t workspace_layout(const CnnConfig *cfg, int B, int S, CnnWorkspace *ws) {
    CHECK(cfg->n_layers >= 1 && cfg->n_layers <= CNN_MAX_LAYERS, "n_layers = %d", cfg->n_layers);
    CHECK(B >= 1 && (S >> cfg->n_layers) >= 1, "CNN of %d layers needs S >= %d (S = %d)",
          cfg->n_layers, 1 << cfg->n_layers, S);
    size_t n_conv = 0, n_pool = 0, max_conv = 0, max_pool = 0, max_col = 0;
    for (int i = 0; i < cfg->n_layers; i++) {
        int s = S >> i;
        size_t conv = (size_t)B * cfg->channels[i] * s * s;
        size_t pool = (size_t)B * cfg->channels[i] * (s / 2) * (s / 2);
        size_t col = conv2d_col_size(layer_in_channels(cfg, i), s, s, CNN_K, CNN_PAD);
        n_conv += conv, n_pool += pool;
        if (conv > max_conv) max_conv = conv;
        if (pool > max_pool) max_pool = pool;
        if (col > max_col) max_col = col;
    }
    size_t floats = n_conv + n_pool + max_conv + max_pool + max_col;
    size_t bytes = floats * sizeof(float) + n_pool * sizeof(int);
    if (ws) {
        float *f = ws->mem;
        for (int i = 0; i < cfg->n_layers; i++) {
            int s = S >> i;
            ws->conv[i] = f, f += (size_t)B * cfg->channels[i] * s * s;
            ws->pool[i] = f, f += (size_t)B * cfg->channels[i] * (s / 2) * (s / 2);
        }
        ws->pre = f, f += max_conv;
        ws->dpool = f, f += max_pool;
        ws->col = f, f += max_col;
        int *a = (int *)f;
        for (int i = 0; i < cfg->n_layers; i++) {
            int s = S >> i;
            ws->argmax[i] = a, a += (size_t)B * cfg->channels[i] * (s / 2) * (s / 2);
        }
    }
    return bytes;
}

size_t cnn_workspace_bytes(const CnnConfig *cfg, int B, int S) {
    return workspace_layout(cfg, B, S, NULL);
}

void cnn_workspace_alloc(CnnWorkspace *ws, const CnnConfig *cfg, int B, int S) {
    memset(ws, 0, sizeof *ws);
    ws->cfg = *cfg;
    ws->B = B, ws->S = S;
    ws->bytes = workspace_layout(cfg, B, S, NULL);
    ws->mem = xcalloc(ws->bytes, 1);
    workspace_layout(cfg, B, S, ws);
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

void cnn_forward(float *annot, CnnWorkspace *ws, const float *images, const CnnParams *p,
                 int B) {
    check_compatible(ws, p, B);
    const CnnConfig *cfg = &p->cfg;
    const float *in = images;
    int S = ws->S;
    for (int i = 0; i < cfg->n_layers; i++) {
        int s = S >> i, C = layer_in_channels(cfg, i), OC = cfg->channels[i];
        size_t n = (size_t)B * OC * s * s;
        conv2d_forward(ws->pre, in, p->weight[i], p->bias[i], ws->col, B, C, s, s, OC, CNN_K,
                       CNN_PAD);
        relu_forward(ws->conv[i], ws->pre, n);
        maxpool2_forward(ws->pool[i], ws->argmax[i], ws->conv[i], B, OC, s, s);
        in = ws->pool[i];
    }
    // (B, D, G, G) -> (B, L, D)
    int D = cnn_dim(cfg), L = cnn_grid_size(cfg, S) * cnn_grid_size(cfg, S);
    const float *last = ws->pool[cfg->n_layers - 1];
    for (int b = 0; b < B; b++)
        for (int d = 0; d < D; d++)
            for (int l = 0; l < L; l++)
                annot[((size_t)b * L + l) * D + d] = last[((size_t)b * D + d) * L + l];
}

void cnn_backward(CnnParams *grads, float *dimages, const float *dannot, CnnWorkspace *ws,
                  const float *images, const CnnParams *p, int B) {
    check_compatible(ws, p, B);
    const CnnConfig *cfg = &p->cfg;
    int S = ws->S, n = cfg->n_layers;
    int D = cnn_dim(cfg), L = cnn_grid_size(cfg, S) * cnn_grid_size(cfg, S);
    for (int b = 0; b < B; b++)
        for (int l = 0; l < L; l++)
            for (int d = 0; d < D; d++)
                ws->dpool[((size_t)b * D + d) * L + l] = dannot[((size_t)b * L + l) * D + d];
    for (int i = n - 1; i >= 0; i--) {
        int s = S >> i, C = layer_in_channels(cfg, i), OC = cfg->channels[i];
        size_t nconv = (size_t)B * OC * s * s;
        // Max-pool and ReLU backward fused (one pass instead of two memsets and two passes):
        // only a pool winner gets gradient, and only where its ReLU output is positive.
        // Same result as maxpool2_backward into zeros, then relu_backward.
        memset(ws->pre, 0, nconv * sizeof(float));
        size_t in_plane = (size_t)s * s, out_plane = (size_t)(s / 2) * (s / 2);
        for (size_t q = 0; q < (size_t)B * OC; q++) {
            const float *act = ws->conv[i] + q * in_plane, *g = ws->dpool + q * out_plane;
            const int *am = ws->argmax[i] + q * out_plane;
            float *d = ws->pre + q * in_plane;
            for (size_t k = 0; k < out_plane; k++)
                if (act[am[k]] > 0.0f) d[am[k]] += g[k];
        }
        // The pool gradient is consumed: dpool now receives the input gradient of this layer.
        float *dinp = i > 0 ? ws->dpool : dimages;
        if (i > 0) memset(dinp, 0, (size_t)B * C * s * s * sizeof(float));
        const float *in = i > 0 ? ws->pool[i - 1] : images;
        conv2d_backward(dinp, grads->weight[i], grads->bias[i], ws->pre, in, p->weight[i],
                        ws->col, B, C, s, s, OC, CNN_K, CNN_PAD);
    }
}
