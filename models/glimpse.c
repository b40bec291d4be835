#include "models/glimpse.h"

#include <math.h>
#include <string.h>

#include "core/check.h"
#include "core/dims.h"
#include "core/gemm.h"
#include "core/gemm_packed.h"
#include "core/activations.h"
#include "seq/linear.h"
#include "seq/loss.h"
#include "seq/lstm.h"
#include "vision/filterbank.h"

GlimpseConfig glimpse_config_default(int W, int H) {
    return (GlimpseConfig){.W = W, .H = H, .T = 8, .read_n = 12, .hidden = 256, .classes = 10,
                           .attention = 1};
}

int glimpse_config_check(const GlimpseConfig *c, Error *err) {
    if (c->W < 1 || c->H < 1 || c->W > 4096 || c->H > 4096)
        return error_set(err, "image size %dx%d out of range", c->W, c->H);
    if (c->T < 1 || c->T > 1000) return error_set(err, "T %d out of range [1, 1000]", c->T);
    if (c->attention && (c->read_n < 1 || c->read_n > c->W || c->read_n > c->H))
        return error_set(err, "read N %d out of range [1, %d]", c->read_n, c->W < c->H ? c->W : c->H);
    if (c->hard && (!c->attention || !(c->loc_std > 0.0f) || c->loc_std > 10.0f))
        return error_set(err, "hard attention needs attention and a location std in (0, 10], not %g",
                         (double)c->loc_std);
    if (c->hard && (c->scales < 1 || c->scales > GLIMPSE_MAX_SCALES))
        return error_set(err, "hard attention's retina needs 1 to %d scales, not %d", GLIMPSE_MAX_SCALES,
                         c->scales);
    if (c->gnet < 0 || c->gnet > 65536 || (c->gnet && !c->hard))
        return error_set(err, "a glimpse network of %d units needs hard attention and at most 65536", c->gnet);
    if (c->hidden < 1 || c->hidden > 65536) return error_set(err, "hidden size %d out of range", c->hidden);
    if (c->classes < 2 || c->classes > 65536) return error_set(err, "classes %d out of range [2, 65536]", c->classes);
    return 0;
}

int glimpse_read_size(const GlimpseConfig *c) {
    if (!c->attention) return c->W * c->H;
    if (c->hard && c->gnet) return c->hidden;
    return c->hard ? c->scales * c->read_n * c->read_n + 2 : c->read_n * c->read_n;
}

// Hard attention: floats of the retina's patches (scales N x N).
static int retina_floats(const GlimpseConfig *c) { return c->scales * c->read_n * c->read_n; }

// Outputs of the layer on h_{t-1} that places the window: the filterbank's 5 parameters, or
// with hard attention the centre policy's 2 means.
static int read_outputs(const GlimpseConfig *c) { return c->hard ? 2 : FILTERBANK_PARAMS; }

// Whether the backward needs the gradient of the LSTM's read input (soft attention only:
// the image is data, and the hard read is not differentiated).
static int needs_dread(const GlimpseConfig *c) { return c->attention && !c->hard; }

// Whether the backward needs the gradient of the LSTM's whole input [r_t, h_{t-1}]: the
// soft read's, or the glimpse network's (gnet).
static int needs_dinput(const GlimpseConfig *c) { return needs_dread(c) || (c->hard && c->gnet); }

// Floats per batch row of a step's kept u: room for the dense read's (N, W) and the sparse
// read's u^T (W, S) and P^T (N, S).
static int u_width(const GlimpseConfig *c) {
    return needs_dread(c) ? filterbank_sparse_kept_floats(c->read_n, c->W) : 0;
}

// The sparse read is taken when at most 1 in SPARSE_READ_DENSITY pixels of the batch is
// nonzero. Per nonzero pixel it does one vector operation of S lanes where the dense read
// does N multiply-adds per pixel of the image; by that count it should be the faster from
// a density of about a third down (measured only at cluttered MNIST's 3 %: by perf, the
// read took 24 % of a training step before and about 11 % of the old step's time after,
// lists included).
#define SPARSE_READ_DENSITY 4

void glimpse_retina_params(float *params, float cx, float cy, int s, const GlimpseConfig *c) {
    const int N = c->read_n, mx = c->W > c->H ? c->W : c->H;
    const float delta = ldexpf(1.0f, s);  // pixels between grid points: 1, 2, 4, ...
    params[0] = cx, params[1] = cy;
    params[2] = 2.0f * logf(0.5f * delta);  // sigma = delta / 2
    params[3] = N > 1 ? logf(delta * (float)(N - 1) / (float)(mx - 1)) : 0.0f;
    params[4] = 0.0f;  // gamma = 1
}

void glimpse_layout(Block *b, GlimpseParams *p, const GlimpseConfig *c) {
    int R = glimpse_read_size(c), Hd = c->hidden;
    memset(p, 0, sizeof *p);
    block_add(b, &p->lstm_W, "lstm.W", 2, 4 * Hd, R + Hd);
    block_add(b, &p->lstm_b, "lstm.b", 1, 4 * Hd);
    if (c->attention && c->hard) {
        block_add(b, &p->read_W, "loc.W", 2, 2, Hd);
        block_add(b, &p->read_b, "loc.b", 1, 2);
        block_add(b, &p->base_W, "baseline.W", 2, 1, Hd);
        block_add(b, &p->base_b, "baseline.b", 1, 1);
    } else if (c->attention) {
        block_add(b, &p->read_W, "read_attn.W", 2, FILTERBANK_PARAMS, Hd);
        block_add(b, &p->read_b, "read_attn.b", 1, FILTERBANK_PARAMS);
    }
    block_add(b, &p->out_W, "out.W", 2, c->classes, Hd);
    block_add(b, &p->out_b, "out.b", 1, c->classes);
    if (c->hard && c->gnet) {
        block_add(b, &p->what_W, "gnet_what.W", 2, c->gnet, retina_floats(c));
        block_add(b, &p->what_b, "gnet_what.b", 1, c->gnet);
        block_add(b, &p->where_W, "gnet_where.W", 2, c->gnet, 2);
        block_add(b, &p->where_b, "gnet_where.b", 1, c->gnet);
        block_add(b, &p->gout_W, "gnet_out.W", 2, Hd, 2 * c->gnet);
        block_add(b, &p->gout_b, "gnet_out.b", 1, Hd);
    }
}

static void init_uniform(float *w, size_t n, int fan_in, Rng *rng) {
    float s = 1.0f / sqrtf((float)fan_in);
    for (size_t i = 0; i < n; i++) w[i] = s * (2.0f * rng_uniform(rng) - 1.0f);
}

void glimpse_init(GlimpseParams *p, const GlimpseConfig *c, Rng *rng) {
    int R = glimpse_read_size(c), Hd = c->hidden;
    init_uniform(p->lstm_W, (size_t)4 * Hd * (R + Hd), R + Hd, rng);
    memset(p->lstm_b, 0, sizeof(float) * 4 * Hd);
    for (int j = 0; j < Hd; j++) p->lstm_b[Hd + j] = 1.0f;  // forget gate
    init_uniform(p->out_W, (size_t)c->classes * Hd, Hd, rng);
    memset(p->out_b, 0, sizeof(float) * c->classes);
    if (c->attention) {
        // Small weights: the first glimpses stay near the bias's window, which tiles the
        // whole image with the N x N grid (delta = max(W, H) / N, sigma half a cell).
        const int P = read_outputs(c);
        init_uniform(p->read_W, (size_t)P * Hd, Hd, rng);
        for (int i = 0; i < P * Hd; i++) p->read_W[i] *= 0.1f;
        if (c->hard) {  // the first centre at the image's centre; the baseline starts at 0
            if (c->gnet) {  // the glimpse network: uniform 1/sqrt(fan in), biases 0
                const int G = c->gnet;
                init_uniform(p->what_W, (size_t)G * retina_floats(c), retina_floats(c), rng);
                init_uniform(p->where_W, (size_t)G * 2, 2, rng);
                init_uniform(p->gout_W, (size_t)Hd * 2 * G, 2 * G, rng);
                memset(p->what_b, 0, sizeof(float) * G), memset(p->where_b, 0, sizeof(float) * G);
                memset(p->gout_b, 0, sizeof(float) * Hd);
            }
            p->read_b[0] = p->read_b[1] = 0.0f;
            memset(p->base_W, 0, sizeof(float) * Hd);
            p->base_b[0] = 0.0f;
            return;
        }
        int N = c->read_n, mx = c->W > c->H ? c->W : c->H;
        float cell = (float)mx / (float)N;
        memset(p->read_b, 0, sizeof(float) * FILTERBANK_PARAMS);
        p->read_b[2] = 2.0f * logf(0.5f * cell);
        p->read_b[3] = N > 1 ? logf((float)(N - 1) / (float)N) : 0.0f;
    }
}

static int scratch_floats(int N, int W, int H) {
    int d = filterbank_scratch_floats(N, W, H), sp = filterbank_sparse_scratch_floats(N, W, H);
    return d > sp ? d : sp;
}

int glimpse_check_sizes(const GlimpseConfig *c, int B, Error *err) {
    const int64_t T = c->T, R = glimpse_read_size(c), Hd = c->hidden;
    const int64_t N = c->attention ? c->read_n : 0, side = c->W > c->H ? c->W : c->H;
    char read[128], img[64];
    if (!c->attention) snprintf(read, sizeof read, "read and state floats (the %d x %d image + --hidden)", c->W, c->H);
    else if (c->hard) snprintf(read, sizeof read, "read and state floats (--scales x --read squared + 2 + --hidden)");
    else snprintf(read, sizeof read, "read and state floats (--read squared + --hidden)");
    snprintf(img, sizeof img, "nonzero pixels at most (%d x %d / %d)", c->W, c->H, SPARSE_READ_DENSITY);
    const DimTerm Tt = {T, "--T"}, Bt = {B, "--batch"};
    DimTerm xh[] = {Tt, Bt, {R + Hd, read}};
    DimTerm gates[] = {Tt, Bt, {4 * Hd, "gate floats (4 x --hidden)"}};
    DimTerm filters[] = {Tt, Bt, {N * side, "filterbank floats (--read x the image's longer side)"}};
    DimTerm kept[] = {Tt, Bt, {u_width(c), "kept read floats per image (from --read and the image)"}};
    DimTerm lstm_w[] = {{4 * Hd, "gate floats (4 x --hidden)"}, {R + Hd, read}};
    DimTerm sparse[] = {Bt, {((int64_t)c->W * c->H + SPARSE_READ_DENSITY - 1) / SPARSE_READ_DENSITY, img}};
    DimTerm scratch[] = {{N ? scratch_floats((int)N, c->W, c->H) : 1, "filterbank scratch floats"}};
    const int gn = c->hard && c->gnet;
    DimTerm retina[] = {Tt, Bt, {gn ? retina_floats(c) : 0, "retina floats (--scales x --read squared)"}};
    DimTerm what_w[] = {{c->gnet, "--glimpse-net"}, {gn ? retina_floats(c) : 0, "retina floats (--scales x --read squared)"}};
    DimTerm hgl[] = {Tt, Bt, {2 * (int64_t)c->gnet, "glimpse network floats (2 x --glimpse-net)"}};
    struct {
        const char *what;
        const DimTerm *t;
        int n;
    } checks[] = {
        {"the LSTM inputs", xh, DIMS_LEN(xh)},
        {"the LSTM gates", gates, DIMS_LEN(gates)},
        {"the filterbanks", filters, N ? DIMS_LEN(filters) : 0},
        {"the kept reads", kept, DIMS_LEN(kept)},
        {"the LSTM weights", lstm_w, DIMS_LEN(lstm_w)},
        {"the sparse images", sparse, needs_dread(c) ? DIMS_LEN(sparse) : 0},
        {"the filterbank scratch", scratch, DIMS_LEN(scratch)},
        {"the retina's patches", retina, gn ? DIMS_LEN(retina) : 0},
        {"the glimpse network's weights", what_w, gn ? DIMS_LEN(what_w) : 0},
        {"the glimpse network's activations", hgl, gn ? DIMS_LEN(hgl) : 0},
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
        if (checks[i].n && dims_check(err, checks[i].what, checks[i].t, checks[i].n)) return -1;
    return 0;
}

void glimpse_acts_layout(Block *k, GlimpseActs *a, const GlimpseConfig *c, int B) {
    CHECK(B >= 1);
    memset(a, 0, sizeof *a);
    memset(k, 0, sizeof *k);
    a->B = B;
    int T = c->T, R = glimpse_read_size(c), Hd = c->hidden, P = FILTERBANK_PARAMS;
    int PO = c->attention ? read_outputs(c) : 0;
    int N = c->attention ? c->read_n : 0;
    block_add(k, &a->xh, "xh", 3, T, B, R + Hd);
    block_add(k, &a->h, "h", 3, T, B, Hd);
    block_add(k, &a->c, "c", 3, T, B, Hd);
    block_add(k, &a->gates, "gates", 3, T, B, 4 * Hd);
    block_add(k, &a->rparams, "rparams", 3, T, B, P);
    block_add(k, &a->eps, "eps", 3, T, B, c->hard ? 2 : 0);
    block_add(k, &a->locmean, "locmean", 3, T, B, c->hard ? 2 : 0);
    block_add(k, &a->loc, "loc", 3, T, B, c->hard ? 2 : 0);
    block_add(k, &a->base, "base", 2, T, c->hard ? B : 0);
    block_add(k, &a->dbase, "dbase", 2, T, c->hard ? B : 0);
    const int gn = c->hard && c->gnet;
    block_add(k, &a->retina, "retina", 3, T, B, gn ? retina_floats(c) : 0);
    block_add(k, &a->lc, "lc", 3, T, B, gn ? 2 : 0);
    block_add(k, &a->hgl, "hgl", 3, T, B, gn ? 2 * c->gnet : 0);
    block_add(k, &a->dhgl, "dhgl", 2, B, gn ? 2 * c->gnet : 0);
    block_add(k, &a->reward, "reward", 1, B);
    block_add(k, &a->Fx, "Fx", 3, T, B, N * c->W);
    block_add(k, &a->Fy, "Fy", 3, T, B, N * c->H);
    block_add(k, &a->gamma, "gamma", 2, T, B);
    block_add(k, &a->logits, "logits", 2, B, c->classes);
    block_add(k, &a->probs, "probs", 2, B, c->classes);
    block_add(k, &a->losses, "losses", 1, B);
    block_add(k, &a->drparams, "drparams", 3, T, B, PO);
    block_add(k, &a->dh[0], "dh0", 2, B, Hd);
    block_add(k, &a->dh[1], "dh1", 2, B, Hd);
    block_add(k, &a->dc[0], "dc0", 2, B, Hd);
    block_add(k, &a->dc[1], "dc1", 2, B, Hd);
    block_add(k, &a->u, "u", 3, T, B, u_width(c));
    block_add(k, &a->dxh, "dxh", 2, B, needs_dinput(c) ? R + Hd : 0);
    block_add(k, &a->dlogits, "dlogits", 2, B, c->classes);
    block_add(k, &a->dFx, "dFx", 2, B, N * c->W);
    block_add(k, &a->dFy, "dFy", 2, B, N * c->H);
    block_add(k, &a->dgamma, "dgamma", 1, B);
    block_add(k, &a->fb_scratch, "fb_scratch", 1,
              c->attention ? scratch_floats(N, c->W, c->H) : 1);
}

void glimpse_acts_alloc(GlimpseActs *a, const GlimpseConfig *c, int B) {
    Block *k = &a->block;
    glimpse_acts_layout(k, a, c, B);
    const int R = glimpse_read_size(c), Hd = c->hidden;
    block_alloc(k);
    if (needs_dread(c))
        sparse_images_alloc(&a->sparse, B, c->W, c->H, (size_t)B * c->W * c->H / SPARSE_READ_DENSITY);
    packed_alloc(&a->lstm_Wt, R + Hd, 4 * Hd);
    packed_alloc(&a->lstm_Wd, 4 * Hd, needs_dinput(c) ? R + Hd : Hd);
}

void glimpse_acts_free(GlimpseActs *a) {
    block_free(&a->block);
    sparse_images_free(&a->sparse);
    packed_free(&a->lstm_Wt), packed_free(&a->lstm_Wd);
    memset(a, 0, sizeof *a);
}

void glimpse_pack_weights(GlimpseActs *a, const GlimpseParams *p, const GlimpseConfig *c, int which) {
    const int R = glimpse_read_size(c), LD = R + c->hidden;
    if (which == 0)
        packed_pack(&a->lstm_Wt, true, p->lstm_W, LD);
    else  // all of W's columns when the read's input gradient is needed, else only h_{t-1}'s
        packed_pack(&a->lstm_Wd, false, p->lstm_W + (needs_dinput(c) ? 0 : R), LD);
}

const float *glimpse_fovea(const GlimpseActs *a, const GlimpseConfig *c, int t, int b) {
    CHECK(c->attention && t >= 0 && t < c->T && b >= 0 && b < a->B);
    if (c->hard && c->gnet) return a->retina + ((size_t)t * a->B + b) * retina_floats(c);
    return a->xh + ((size_t)t * a->B + b) * (glimpse_read_size(c) + c->hidden);  // patch 0 first
}

void glimpse_fill_noise(GlimpseActs *a, const GlimpseConfig *c, int B, Rng *rng) {
    CHECK(c->hard && B <= a->B);
    for (int t = 0; t < c->T; t++) rng_normal_fill(rng, glimpse_at(a, a->eps, t, 2), (size_t)B * 2);
}

void glimpse_reinforce_mean_grad(float *dmean, const float *l, const float *m, float adv,
                                 float sd, float scale, int n) {
    for (int k = 0; k < n; k++) dmean[k] += -scale * adv * (l[k] - m[k]) / (sd * sd);
}

// Hard attention, step t: the policy's mean m = tanh(loc.W h_{t-1} + loc.b), the sampled
// centre l = m + loc_std eps (or the test's fixed one), and the retina read at clamp(l, -1, 1)
// into xh (the scales' N x N patches one after another, then the centre itself); with the
// glimpse network into acts.retina and acts.lc instead (gnet_step reads them).
static void hard_read_step(GlimpseActs *a, const GlimpseParams *p, const GlimpseConfig *c,
                           const float *x, const float *hp, float *xh, int LD, int t, int B) {
    float *out = xh;
    if (c->gnet) out = glimpse_at(a, a->retina, t, retina_floats(c)), LD = retina_floats(c);
    const int Hd = c->hidden, N = c->read_n, NN = N * N, P = FILTERBANK_PARAMS;
    float *m = glimpse_at(a, a->locmean, t, 2), *l = glimpse_at(a, a->loc, t, 2);
    const float *e = glimpse_at(a, a->eps, t, 2);
    const float *fl = a->fixed_loc ? a->fixed_loc + (size_t)t * B * 2 : NULL;
    if (hp)
        linear_forward(m, hp, p->read_W, p->read_b, B, Hd, 2);
    else
        for (int b = 0; b < B; b++) m[b * 2] = p->read_b[0], m[b * 2 + 1] = p->read_b[1];
    float *bt = glimpse_at(a, a->base, t, 1);  // the reward's baseline, from h_{t-1} too
    if (hp)
        linear_forward(bt, hp, p->base_W, p->base_b, B, Hd, 1);
    else
        for (int b = 0; b < B; b++) bt[b] = p->base_b[0];
    for (int i = 0; i < B * 2; i++) {
        m[i] = tanhf(m[i]);
        l[i] = fl ? fl[i] : m[i] + c->loc_std * e[i];
    }
    float *rp = glimpse_at(a, a->rparams, t, P);
    float *Fx = glimpse_at(a, a->Fx, t, N * c->W), *Fy = glimpse_at(a, a->Fy, t, N * c->H);
    float *g = glimpse_at(a, a->gamma, t, 1);
    for (int s = c->scales - 1; s >= 0; s--) {  // scale 0 last: rparams keep the fovea's window
        for (int b = 0; b < B; b++) {
            float cx = fminf(1.0f, fmaxf(-1.0f, l[b * 2])), cy = fminf(1.0f, fmaxf(-1.0f, l[b * 2 + 1]));
            glimpse_retina_params(rp + (size_t)b * P, cx, cy, s, c);
        }
        filterbank_forward(Fx, Fy, g, rp, B, N, c->W, c->H);
        filterbank_read_forward(out + (size_t)s * NN, LD, x, Fx, Fy, g, a->fb_scratch, B, N, c->W, c->H);
    }
    for (int b = 0; b < B; b++) {
        float *dst = c->gnet ? glimpse_at(a, a->lc, t, 2) + (size_t)b * 2
                             : xh + (size_t)b * LD + (size_t)c->scales * NN;
        dst[0] = fminf(1.0f, fmaxf(-1.0f, l[b * 2]));
        dst[1] = fminf(1.0f, fmaxf(-1.0f, l[b * 2 + 1]));
    }
}

// The glimpse network at step t: [hg, hl] = relu of the what layer on the retina and the
// where layer on the clamped centre (acts.hgl), then r_t = relu(gnet_out [hg, hl]) into xh's
// first hidden columns (row stride LD).
static void gnet_step(GlimpseActs *a, const GlimpseParams *p, const GlimpseConfig *c, float *xh,
                      int LD, int t, int B) {
    const int G = c->gnet, RF = retina_floats(c), Hd = c->hidden;
    const float *rho = glimpse_at(a, a->retina, t, RF), *lc = glimpse_at(a, a->lc, t, 2);
    float *hgl = glimpse_at(a, a->hgl, t, 2 * G);
    for (int b = 0; b < B; b++) {
        memcpy(hgl + (size_t)b * 2 * G, p->what_b, sizeof(float) * G);
        memcpy(hgl + (size_t)b * 2 * G + G, p->where_b, sizeof(float) * G);
        memcpy(xh + (size_t)b * LD, p->gout_b, sizeof(float) * Hd);
    }
    gemm(false, true, B, G, RF, 1.0f, rho, RF, p->what_W, RF, 1.0f, hgl, 2 * G);
    gemm(false, true, B, G, 2, 1.0f, lc, 2, p->where_W, 2, 1.0f, hgl + G, 2 * G);
    relu_forward(hgl, hgl, (size_t)B * 2 * G);
    gemm(false, true, B, Hd, 2 * G, 1.0f, hgl, 2 * G, p->gout_W, 2 * G, 1.0f, xh, LD);
    for (int b = 0; b < B; b++) relu_forward(xh + (size_t)b * LD, xh + (size_t)b * LD, (size_t)Hd);
}

// Step t's glimpse network backward: from d/dr_t (acts.dxh's first hidden columns) through
// the ReLUs into the network's weights (the retina and the centre are data).
static void gnet_backward(GlimpseParams *g, GlimpseActs *a, const GlimpseParams *p,
                          const GlimpseConfig *c, int t, int B) {
    const int G = c->gnet, RF = retina_floats(c), Hd = c->hidden, LD = glimpse_read_size(c) + Hd;
    const float *rho = glimpse_at(a, a->retina, t, RF), *lc = glimpse_at(a, a->lc, t, 2);
    const float *hgl = glimpse_at(a, a->hgl, t, 2 * G), *r = glimpse_at(a, a->xh, t, LD);
    float *dr = a->dxh;  // d/dr_t becomes d/d(pre-activation) in place: zero where r_t = 0
    for (int b = 0; b < B; b++)
        for (int j = 0; j < Hd; j++)
            if (!(r[(size_t)b * LD + j] > 0.0f)) dr[(size_t)b * LD + j] = 0.0f;
    gemm(true, false, Hd, 2 * G, B, 1.0f, dr, LD, hgl, 2 * G, 1.0f, g->gout_W, 2 * G);
    for (int b = 0; b < B; b++)
        for (int j = 0; j < Hd; j++) g->gout_b[j] += dr[(size_t)b * LD + j];
    float *dh = a->dhgl;
    gemm(false, false, B, 2 * G, Hd, 1.0f, dr, LD, p->gout_W, 2 * G, 0.0f, dh, 2 * G);
    for (size_t i = 0; i < (size_t)B * 2 * G; i++)
        if (!(hgl[i] > 0.0f)) dh[i] = 0.0f;
    gemm(true, false, G, RF, B, 1.0f, dh, 2 * G, rho, RF, 1.0f, g->what_W, RF);
    gemm(true, false, G, 2, B, 1.0f, dh + G, 2 * G, lc, 2, 1.0f, g->where_W, 2);
    for (int b = 0; b < B; b++)
        for (int j = 0; j < G; j++) {
            g->what_b[j] += dh[(size_t)b * 2 * G + j];
            g->where_b[j] += dh[(size_t)b * 2 * G + G + j];
        }
}

// Step t's differentiable read into xh (B rows of stride ld): the filterbank's parameters
// from h_{t-1} (hp; NULL at t = 0: the bias alone), then the glimpse, through the sparse
// images when the forward built them.
static void soft_read_step(GlimpseActs *a, const GlimpseParams *p, const GlimpseConfig *c,
                           const float *x, const float *hp, float *xh, int ld, int t, int B) {
    const int P = FILTERBANK_PARAMS, N = c->read_n, Hd = c->hidden;
    float *rp = glimpse_at(a, a->rparams, t, P);
    float *Fx = glimpse_at(a, a->Fx, t, N * c->W), *Fy = glimpse_at(a, a->Fy, t, N * c->H);
    float *g = glimpse_at(a, a->gamma, t, 1);
    if (hp)
        linear_forward(rp, hp, p->read_W, p->read_b, B, Hd, P);
    else
        for (int b = 0; b < B; b++) memcpy(rp + (size_t)b * P, p->read_b, sizeof(float) * P);
    filterbank_forward(Fx, Fy, g, rp, B, N, c->W, c->H);
    float *u = glimpse_at(a, a->u, t, u_width(c));
    if (a->sparse_read)
        filterbank_read_sparse_forward(xh, ld, &a->sparse, Fx, Fy, g, u, a->fb_scratch, B, 1, N,
                                       c->W, c->H);
    else
        filterbank_read_channels_forward_keep(xh, ld, x, Fx, Fy, g, u, a->fb_scratch, B, 1, N,
                                              c->W, c->H);
}

// The class read out from h_T: logits, probabilities and each image's loss; the reward
// (1 for a right answer) for REINFORCE. Returns the mean loss; *correct (optional): the
// right answers.
static double classify_step(GlimpseActs *a, const GlimpseParams *p, const GlimpseConfig *c,
                            const int *labels, int B, int *correct) {
    const float *hT = glimpse_at(a, a->h, c->T - 1, c->hidden);
    linear_forward(a->logits, hT, p->out_W, p->out_b, B, c->hidden, c->classes);
    double total = crossentropy_forward(a->losses, a->probs, a->logits, labels, B, c->classes);
    int right = 0;
    for (int b = 0; b < B; b++) {
        const float *z = a->logits + (size_t)b * c->classes;
        int best = 0;
        for (int k = 1; k < c->classes; k++) best = z[k] > z[best] ? k : best;
        a->reward[b] = best == labels[b] ? 1.0f : 0.0f;
        right += best == labels[b];
    }
    if (correct) *correct = right;
    return total / B;
}

double glimpse_forward(GlimpseActs *a, const GlimpseParams *p, const GlimpseConfig *c,
                       const float *x, const int *labels, int B, int *correct) {
    CHECK(B >= 1 && B <= a->B, "B %d, room for %d", B, a->B);
    const int R = glimpse_read_size(c), Hd = c->hidden, LD = R + Hd, HW = c->W * c->H;
    if (!a->use_Wt) glimpse_pack_weights(a, p, c, 0);
    const PackedMatrix *Wt = a->use_Wt ? a->use_Wt : &a->lstm_Wt;
    a->sparse_read = needs_dread(c) && !a->dense_read &&
                     sparse_images_build(&a->sparse, x, B, 1, c->W, c->H) == 0;
    for (int t = 0; t < c->T; t++) {
        float *xh = glimpse_at(a, a->xh, t, LD);
        const float *hp = t ? glimpse_at(a, a->h, t - 1, Hd) : NULL;
        if (c->hard) {
            hard_read_step(a, p, c, x, hp, xh, LD, t, B);
            if (c->gnet) gnet_step(a, p, c, xh, LD, t, B);
        } else if (c->attention) {
            soft_read_step(a, p, c, x, hp, xh, LD, t, B);
        } else {
            for (int b = 0; b < B; b++)
                memcpy(xh + (size_t)b * LD, x + (size_t)b * HW, sizeof(float) * HW);
        }
        for (int b = 0; b < B; b++) {
            float *dst = xh + (size_t)b * LD + R;
            if (hp)
                memcpy(dst, hp + (size_t)b * Hd, sizeof(float) * Hd);
            else
                memset(dst, 0, sizeof(float) * Hd);
        }
        if (t)
            lstm_forward_packed(glimpse_at(a, a->h, t, Hd), glimpse_at(a, a->c, t, Hd),
                                glimpse_at(a, a->gates, t, 4 * Hd), xh, LD,
                                glimpse_at(a, a->c, t - 1, Hd), Wt, p->lstm_b, NULL, B, R,
                                Hd);
        else  // h_0 = 0: the gates from the read alone
            lstm_forward_packed_first(glimpse_at(a, a->h, t, Hd), glimpse_at(a, a->c, t, Hd),
                                      glimpse_at(a, a->gates, t, 4 * Hd), xh, LD, Wt, p->lstm_b,
                                      B, R, Hd);
    }
    return classify_step(a, p, c, labels, B, correct);
}

// Step t's hard read: the retina is not differentiated (the sampled centre is an action);
// the mean's gradient is REINFORCE's, through m = tanh(pre), into loc.W and loc.b only
// (drparams' two columns), and the baseline's is that of (1/2B) sum (R - b_t)^2. Neither
// reaches h_{t-1}: the LSTM learns from the cross-entropy alone.
static void hard_read_backward(GlimpseParams *g, GlimpseActs *a, const GlimpseConfig *c, int t,
                               int B) {
    const float *m = glimpse_at(a, a->locmean, t, 2), *l = glimpse_at(a, a->loc, t, 2);
    const float *bt = glimpse_at(a, a->base, t, 1);
    float *dpre = glimpse_at(a, a->drparams, t, 2), *dbt = glimpse_at(a, a->dbase, t, 1);
    memset(dpre, 0, sizeof(float) * (size_t)B * 2);
    for (int b = 0; b < B; b++) {
        glimpse_reinforce_mean_grad(dpre + b * 2, l + b * 2, m + b * 2, a->reward[b] - bt[b],
                                    c->loc_std, 1.0f / (float)B, 2);
        for (int k = 0; k < 2; k++) dpre[b * 2 + k] *= 1.0f - m[b * 2 + k] * m[b * 2 + k];
        dbt[b] = (bt[b] - a->reward[b]) / (float)B;
    }
    linear_bias_backward(g->read_b, dpre, B, 2);
    linear_bias_backward(g->base_b, dbt, B, 1);
}

// Step t's differentiable read: from d/dr_t (acts.dxh's first columns) the filterbank's
// parameters' gradients (drparams) and the read layer's bias's; d/dh_{t-1} (dh_prev) += the
// read layer's input gradient (step 0 reads with h_0 = 0: the bias only).
static void soft_read_backward(GlimpseParams *g, GlimpseActs *a, const GlimpseParams *p,
                               const GlimpseConfig *c, const float *x, int t, int B,
                               float *dh_prev) {
    const int P = FILTERBANK_PARAMS, N = c->read_n, Hd = c->hidden;
    const int LD = glimpse_read_size(c) + Hd;
    const float *Fx = glimpse_at(a, a->Fx, t, N * c->W), *Fy = glimpse_at(a, a->Fy, t, N * c->H);
    const float *gm = glimpse_at(a, a->gamma, t, 1);
    float *drp = glimpse_at(a, a->drparams, t, P);
    memset(a->dFx, 0, sizeof(float) * (size_t)B * N * c->W);
    memset(a->dFy, 0, sizeof(float) * (size_t)B * N * c->H);
    memset(a->dgamma, 0, sizeof(float) * B);
    memset(drp, 0, sizeof(float) * (size_t)B * P);
    const float *u = glimpse_at(a, a->u, t, u_width(c));
    if (a->sparse_read)
        filterbank_read_sparse_backward(a->dFx, a->dFy, a->dgamma, a->dxh, LD, &a->sparse, Fx, gm,
                                        u, a->fb_scratch, B, 1, N, c->W, c->H);
    else
        filterbank_read_channels_backward_kept(NULL, a->dFx, a->dFy, a->dgamma, a->dxh, LD, x, Fx,
                                               Fy, gm, u, a->fb_scratch, B, 1, N, c->W, c->H);
    filterbank_backward(drp, a->dFx, a->dFy, a->dgamma, Fx, Fy, glimpse_at(a, a->rparams, t, P),
                        B, N, c->W, c->H);
    linear_bias_backward(g->read_b, drp, B, P);
    if (t) gemm(false, false, B, Hd, P, 1.0f, drp, P, p->read_W, Hd, 1.0f, dh_prev, Hd);
}

void glimpse_backward(GlimpseParams *g, GlimpseActs *a, const GlimpseParams *p,
                      const GlimpseConfig *c, const float *x, const int *labels, int B) {
    CHECK(B >= 1 && B <= a->B);
    const int R = glimpse_read_size(c), Hd = c->hidden, LD = R + Hd, T = c->T, Bm = a->B;
    const int G = 4 * Hd;
    // d mean loss / d logits = (probs - onehot) / B
    float *dl = a->dlogits;
    memset(dl, 0, sizeof(float) * (size_t)B * c->classes);
    crossentropy_backward(dl, NULL, a->probs, labels, B, c->classes);
    for (int i = 0; i < B * c->classes; i++) dl[i] *= 1.0f / (float)B;
    const float *hT = glimpse_at(a, a->h, T - 1, Hd);
    int cur = 0;
    memset(a->dh[cur], 0, sizeof(float) * (size_t)B * Hd);
    memset(a->dc[cur], 0, sizeof(float) * (size_t)B * Hd);
    linear_backward(a->dh[cur], g->out_W, g->out_b, dl, hT, p->out_W, B, Hd, c->classes);
    // dxh = dgates @ W: all of W's columns when the read's input gradient is needed, else
    // only those of h_{t-1} (the LSTM's input from the image is data or not differentiated).
    if (!a->use_Wd) glimpse_pack_weights(a, p, c, 1);
    const PackedMatrix *Wd = a->use_Wd ? a->use_Wd : &a->lstm_Wd;
    for (int t = T - 1; t >= 0; t--) {
        int prev = 1 - cur;
        // The gates become their pre-activation gradients in place; dW waits for one GEMM.
        float *dg = glimpse_at(a, a->gates, t, G);
        if (t) memset(a->dc[prev], 0, sizeof(float) * (size_t)B * Hd);
        lstm_gates_backward(dg, t ? a->dc[prev] : NULL, a->dh[cur], a->dc[cur],
                            t ? glimpse_at(a, a->c, t - 1, Hd) : NULL, glimpse_at(a, a->c, t, Hd),
                            NULL, NULL, g->lstm_b, B, Hd);
        if (needs_dinput(c)) {
            gemm_packed(B, t ? LD : R, dg, G, Wd, 0.0f, a->dxh, LD);
            if (t)
                for (int b = 0; b < B; b++)
                    memcpy(a->dh[prev] + (size_t)b * Hd, a->dxh + (size_t)b * LD + R, sizeof(float) * Hd);
        } else if (t) {
            gemm_packed(B, Hd, dg, G, Wd, 0.0f, a->dh[prev], Hd);
        }
        if (c->hard && c->gnet) gnet_backward(g, a, p, c, t, B);
        if (c->hard)
            hard_read_backward(g, a, c, t, B);
        else if (c->attention)
            soft_read_backward(g, a, p, c, x, t, B, a->dh[prev]);
        cur = prev;
    }
    // lstm.W's gradient: the read's columns over every step; the h columns from step 1,
    // since h_0 = 0 adds nothing (a sixteenth of the product at T 8).
    linear_weight_backward_steps(g->lstm_W, LD, a->gates, a->xh, LD, 0, 0, T, B, Bm, G, R);
    linear_weight_backward_steps(g->lstm_W + R, LD, a->gates, a->xh + R, LD, 1, 0, T, B, Bm, G,
                                 Hd);
    if (c->attention)
        linear_weight_backward_steps(g->read_W, Hd, a->drparams, a->h, Hd, 1, 1, T, B, Bm,
                                     read_outputs(c), Hd);
    if (c->hard)  // the policy's and the baseline's gradients stop at their layers
        linear_weight_backward_steps(g->base_W, Hd, a->dbase, a->h, Hd, 1, 1, T, B, Bm, 1, Hd);
}
