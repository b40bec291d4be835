#include "models/draw.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/activations.h"
#include "core/check.h"
#include "core/job_threads.h"
#include "core/dims.h"
#include "seq/linear.h"
#include "seq/loss.h"
#include "core/gemm.h"
#include "seq/lstm.h"
#include "vision/filterbank.h"

DrawConfig draw_config_default(int W, int H) {
    return (DrawConfig){.W = W, .H = H, .T = 64, .read_n = 2, .write_n = 5, .enc = 256,
                        .dec = 256, .z = 100, .attention = 1};
}

int draw_config_check(const DrawConfig *c, Error *err) {
    if (c->W < 1 || c->H < 1 || c->W > 4096 || c->H > 4096)
        return error_set(err, "image size %dx%d out of range", c->W, c->H);
    if (c->channels < 0 || c->channels > DRAW_MAX_CHANNELS)
        return error_set(err, "%d channels out of range [1, %d]", c->channels, DRAW_MAX_CHANNELS);
    if (c->T < 1 || c->T > 10000) return error_set(err, "T %d out of range [1, 10000]", c->T);
    if (c->attention) {
        if (c->read_n < 1 || c->read_n > c->W || c->read_n > c->H)
            return error_set(err, "read N %d out of range [1, %d]", c->read_n,
                             c->W < c->H ? c->W : c->H);
        if (c->write_n < 1 || c->write_n > c->W || c->write_n > c->H)
            return error_set(err, "write N %d out of range [1, %d]", c->write_n,
                             c->W < c->H ? c->W : c->H);
    }
    if (c->enc < 1 || c->enc > 65536) return error_set(err, "encoder size %d out of range", c->enc);
    if (c->dec < 1 || c->dec > 65536) return error_set(err, "decoder size %d out of range", c->dec);
    if (c->z < 1 || c->z > 65536) return error_set(err, "latent size %d out of range", c->z);
    if (c->classes != 0 && (c->classes < 2 || c->classes > DRAW_MAX_CLASSES))
        return error_set(err, "classes %d out of range [2, %d] (0: unconditional)", c->classes,
                         DRAW_MAX_CLASSES);
    return 0;
}

int draw_read_size(const DrawConfig *c) {
    return 2 * draw_channels(c) * (c->attention ? c->read_n * c->read_n : c->W * c->H);
}

int draw_write_size(const DrawConfig *c) {
    return draw_channels(c) * (c->attention ? c->write_n * c->write_n : c->W * c->H);
}

void draw_layout(Block *b, DrawParams *p, const DrawConfig *c) {
    int R = draw_read_size(c), Wr = draw_write_size(c);
    memset(p, 0, sizeof *p);
    block_add(b, &p->enc_W, "enc.W", 2, 4 * c->enc, R + c->dec + c->enc);
    block_add(b, &p->enc_b, "enc.b", 1, 4 * c->enc);
    block_add(b, &p->q_W, "q.W", 2, 2 * c->z, c->enc);
    block_add(b, &p->q_b, "q.b", 1, 2 * c->z);
    block_add(b, &p->dec_W, "dec.W", 2, 4 * c->dec, c->z + c->dec);
    block_add(b, &p->dec_b, "dec.b", 1, 4 * c->dec);
    block_add(b, &p->write_W, "write.W", 2, Wr, c->dec);
    block_add(b, &p->write_b, "write.b", 1, Wr);
    if (c->attention) {
        block_add(b, &p->read_attn_W, "read_attn.W", 2, FILTERBANK_PARAMS, c->dec);
        block_add(b, &p->read_attn_b, "read_attn.b", 1, FILTERBANK_PARAMS);
        block_add(b, &p->write_attn_W, "write_attn.W", 2, FILTERBANK_PARAMS, c->dec);
        block_add(b, &p->write_attn_b, "write_attn.b", 1, FILTERBANK_PARAMS);
    }
    if (c->peepholes) {
        block_add(b, &p->enc_peep, "enc.peep", 1, 3 * c->enc);
        block_add(b, &p->dec_peep, "dec.peep", 1, 3 * c->dec);
    }
    if (c->classes) {
        block_add(b, &p->enc_label_W, "enc.label_W", 2, 4 * c->enc, c->classes);
        block_add(b, &p->dec_label_W, "dec.label_W", 2, 4 * c->dec, c->classes);
    }
}

static void init_uniform(float *w, size_t n, int fan_in, Rng *rng) {
    float s = 1.0f / sqrtf((float)fan_in);
    for (size_t i = 0; i < n; i++) w[i] = s * (2.0f * rng_uniform(rng) - 1.0f);
}

void draw_init(DrawParams *p, const DrawConfig *c, Rng *rng) {
    int R = draw_read_size(c), Wr = draw_write_size(c);
    int ein = R + c->dec + c->enc, din = c->z + c->dec;
    init_uniform(p->enc_W, (size_t)4 * c->enc * ein, ein, rng);
    init_uniform(p->q_W, (size_t)2 * c->z * c->enc, c->enc, rng);
    init_uniform(p->dec_W, (size_t)4 * c->dec * din, din, rng);
    init_uniform(p->write_W, (size_t)Wr * c->dec, c->dec, rng);
    memset(p->enc_b, 0, sizeof(float) * 4 * c->enc);
    memset(p->dec_b, 0, sizeof(float) * 4 * c->dec);
    for (int j = 0; j < c->enc; j++) p->enc_b[c->enc + j] = 1.0f;  // forget gate
    for (int j = 0; j < c->dec; j++) p->dec_b[c->dec + j] = 1.0f;
    memset(p->q_b, 0, sizeof(float) * 2 * c->z);
    memset(p->write_b, 0, sizeof(float) * Wr);
    if (c->peepholes) {
        memset(p->enc_peep, 0, sizeof(float) * 3 * c->enc);
        memset(p->dec_peep, 0, sizeof(float) * 3 * c->dec);
    }
    if (c->attention) {
        init_uniform(p->read_attn_W, (size_t)FILTERBANK_PARAMS * c->dec, c->dec, rng);
        init_uniform(p->write_attn_W, (size_t)FILTERBANK_PARAMS * c->dec, c->dec, rng);
        memset(p->read_attn_b, 0, sizeof(float) * FILTERBANK_PARAMS);
        memset(p->write_attn_b, 0, sizeof(float) * FILTERBANK_PARAMS);
        // The grid starts as N x N cells tiling the image, one filter at each cell's centre
        // (delta = max(W, H) / N, delta~ = (N - 1) / N), with sigma half a cell so that
        // neighbours overlap. (delta~ = 1 and sigma = 1 would put a 2 x 2 read on the four
        // corner pixels, blank in MNIST: training then sat at the mean image for hundreds of
        // steps with the latents unused.)
        int mx = c->W > c->H ? c->W : c->H;
        float *bias[2] = {p->read_attn_b, p->write_attn_b};
        int ns[2] = {c->read_n, c->write_n};
        for (int k = 0; k < 2; k++) {
            float cell = (float)mx / (float)ns[k];
            bias[k][3] = ns[k] > 1 ? logf((float)(ns[k] - 1) / (float)ns[k]) : 0.0f;
            bias[k][2] = 2.0f * logf(0.5f * cell);
        }
        // Each write filter spreads a patch value over about 2 pi sigma^2 pixels; 1/gamma
        // starts at that area so that a patch value moves the logits it covers by about itself.
        float sw = 0.5f * (float)mx / (float)c->write_n;
        p->write_attn_b[4] = -logf(6.2831853f * sw * sw);
    }
    if (c->classes) {  // last, so that the rest starts as the unconditional model's
        int K = c->classes;
        init_uniform(p->enc_label_W, (size_t)4 * c->enc * K, ein + K, rng);
        init_uniform(p->dec_label_W, (size_t)4 * c->dec * K, din + K, rng);
    }
}

int draw_check_sizes(const DrawConfig *c, int B, Error *err) {
    const int64_t T = c->T, IMG = draw_image_size(c), R = draw_read_size(c), Wr = draw_write_size(c),
                  Z = c->z, E = c->enc, D = c->dec, X = draw_enc_fixed_cols(c);
    const int64_t nr = c->attention ? c->read_n : 0, nw = c->attention ? c->write_n : 0;
    const int64_t side = c->W > c->H ? c->W : c->H, nmax = nr > nw ? nr : nw;
    char img[96], lv[128], enc_in[128], wr[96], fb[96];
    snprintf(img, sizeof img, "image floats (%d x %d x %d, from --data)", draw_channels(c), c->H, c->W);
    snprintf(lv, sizeof lv, "encoder input floats (the read%s + 2 x --hidden)",
             c->attention ? ", 2 x --read squared x channels," : " of the image itself");
    snprintf(enc_in, sizeof enc_in, "encoder input floats (the read + 2 x --hidden)");
    snprintf(wr, sizeof wr, "write floats (%s)", c->attention ? "--write squared x channels" : "the image");
    snprintf(fb, sizeof fb, "filterbank floats (the larger grid x the image's longer side)");
    const DimTerm Tt = {T, "--T"}, Bt = {B, "--batch"};
    DimTerm canvas[] = {Tt, Bt, {IMG, img}};
    DimTerm enc_xh[] = {Tt, Bt, {R + D + E - X, lv}};
    DimTerm gates[] = {Tt, Bt, {4 * (E > D ? E : D), "gate floats (4 x --hidden)"}};
    DimTerm q[] = {Tt, Bt, {2 * Z, "latent floats (2 x --z)"}};
    DimTerm dec_xh[] = {Tt, Bt, {Z + D, "decoder input floats (--z + --hidden)"}};
    DimTerm wpatch[] = {Tt, Bt, {Wr, wr}};
    DimTerm filters[] = {Tt, Bt, {nmax * side, fb}};
    DimTerm enc_w[] = {{4 * E, "gate floats (4 x --hidden)"}, {R + D + E, enc_in}};
    DimTerm q_w[] = {{2 * Z, "latent floats (2 x --z)"}, {E, "--hidden"}};
    DimTerm dec_w[] = {{4 * D, "gate floats (4 x --hidden)"}, {Z + D, "decoder input floats (--z + --hidden)"}};
    DimTerm write_w[] = {{Wr, wr}, {D, "--hidden"}};
    DimTerm scratch[] = {{2 * nmax * (c->W + c->H) + nmax * nmax,
                          "filterbank scratch floats (from --read, --write and the image)"}};
    struct {
        const char *what;
        const DimTerm *t;
        int n;
    } checks[] = {
        {"the canvases", canvas, DIMS_LEN(canvas)},
        {"the encoder inputs", enc_xh, DIMS_LEN(enc_xh)},
        {"the LSTM gates", gates, DIMS_LEN(gates)},
        {"the latents", q, DIMS_LEN(q)},
        {"the decoder inputs", dec_xh, DIMS_LEN(dec_xh)},
        {"the writes", wpatch, DIMS_LEN(wpatch)},
        {"the filterbanks", filters, nmax ? DIMS_LEN(filters) : 0},
        {"the encoder weights", enc_w, DIMS_LEN(enc_w)},
        {"the latent weights", q_w, DIMS_LEN(q_w)},
        {"the decoder weights", dec_w, DIMS_LEN(dec_w)},
        {"the write weights", write_w, DIMS_LEN(write_w)},
        {"the filterbank scratch", scratch, nmax ? DIMS_LEN(scratch) : 0},
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
        if (checks[i].n && dims_check(err, checks[i].what, checks[i].t, checks[i].n)) return -1;
    return 0;
}

void draw_acts_layout(Block *k, DrawActs *a, const DrawConfig *c, int B) {
    CHECK(B >= 1);
    memset(a, 0, sizeof *a);
    memset(k, 0, sizeof *k);
    a->B = B;
    int T = c->T, IMG = draw_image_size(c), R = draw_read_size(c), Wr = draw_write_size(c);
    int Z = c->z, E = c->enc, D = c->dec, P = FILTERBANK_PARAMS;
    int nr = c->attention ? c->read_n : 0, nw = c->attention ? c->write_n : 0;
    block_add(k, &a->canvas, "canvas", 3, T, B, IMG);
    block_add(k, &a->rparams, "rparams", 3, T, B, P);
    block_add(k, &a->rFx, "rFx", 3, T, B, nr * c->W);
    block_add(k, &a->rFy, "rFy", 3, T, B, nr * c->H);
    block_add(k, &a->rgamma, "rgamma", 2, T, B);
    int X = draw_enc_fixed_cols(c), LV = R + D + E - X;  // LV: the encoder columns that vary
    block_add(k, &a->enc_xh, "enc_xh", 3, T, B, LV);
    block_add(k, &a->enc_h, "enc_h", 3, T, B, E);
    block_add(k, &a->enc_c, "enc_c", 3, T, B, E);
    block_add(k, &a->enc_gates, "enc_gates", 3, T, B, 4 * E);
    block_add(k, &a->q, "q", 3, T, B, 2 * Z);
    block_add(k, &a->eps, "eps", 3, T, B, Z);
    block_add(k, &a->dec_xh, "dec_xh", 3, T, B, Z + D);
    block_add(k, &a->dec_h, "dec_h", 3, T, B, D);
    block_add(k, &a->dec_c, "dec_c", 3, T, B, D);
    block_add(k, &a->dec_gates, "dec_gates", 3, T, B, 4 * D);
    block_add(k, &a->wpatch, "wpatch", 3, T, B, Wr);
    block_add(k, &a->wparams, "wparams", 3, T, B, P);
    block_add(k, &a->wFx, "wFx", 3, T, B, nw * c->W);
    block_add(k, &a->wFy, "wFy", 3, T, B, nw * c->H);
    block_add(k, &a->wgamma, "wgamma", 2, T, B);
    block_add(k, &a->recon, "recon", 1, B);
    block_add(k, &a->kl, "kl", 1, B);
    block_add(k, &a->logw, "logw", 1, B);
    int nmax = nr > nw ? nr : nw;
    block_add(k, &a->dq, "dq", 3, T, B, 2 * Z);
    block_add(k, &a->dwpatch, "dwpatch", 3, T, B, Wr);
    block_add(k, &a->dwparams, "dwparams", 3, T, B, P);
    block_add(k, &a->drparams, "drparams", 3, T, B, P);
    block_add(k, &a->xhat, "xhat", 2, B, IMG);
    block_add(k, &a->dcan, "dcan", 2, B, IMG);
    block_add(k, &a->dxhat, "dxhat", 2, B, IMG);
    const int EP = X || c->classes ? 4 * E : 0, DP = c->classes ? 4 * D : 0;
    block_add(k, &a->enc_pre_x, "enc_pre_x", 2, B, EP);
    block_add(k, &a->denc_gates_sum, "denc_gates_sum", 2, B, EP);
    block_add(k, &a->dec_pre_y, "dec_pre_y", 2, B, DP);
    block_add(k, &a->ddec_gates_sum, "ddec_gates_sum", 2, B, DP);
    block_add(k, &a->denc_xh, "denc_xh", 2, B, LV);
    block_add(k, &a->ddec_xh, "ddec_xh", 2, B, Z + D);
    block_add(k, &a->dFx, "dFx", 2, B, nmax * c->W);
    block_add(k, &a->dFy, "dFy", 2, B, nmax * c->H);
    block_add(k, &a->dgamma, "dgamma", 1, B);
    block_add(k, &a->dh_enc[0], "dh_enc0", 2, B, E);
    block_add(k, &a->dh_enc[1], "dh_enc1", 2, B, E);
    block_add(k, &a->dc_enc[0], "dc_enc0", 2, B, E);
    block_add(k, &a->dc_enc[1], "dc_enc1", 2, B, E);
    block_add(k, &a->dh_dec[0], "dh_dec0", 2, B, D);
    block_add(k, &a->dh_dec[1], "dh_dec1", 2, B, D);
    block_add(k, &a->dc_dec[0], "dc_dec0", 2, B, D);
    block_add(k, &a->dc_dec[1], "dc_dec1", 2, B, D);
    int fs = 1;
    if (c->attention) {
        int fr = filterbank_scratch_floats(c->read_n, c->W, c->H);
        int fw = filterbank_scratch_floats(c->write_n, c->W, c->H);
        fs = fr > fw ? fr : fw;
    }
    block_add(k, &a->fb_scratch, "fb_scratch", 1, fs);
}

void draw_acts_alloc(DrawActs *a, const DrawConfig *c, int B) {
    Block *k = &a->block;
    draw_acts_layout(k, a, c, B);
    const int R = draw_read_size(c), Z = c->z, E = c->enc, D = c->dec;
    const int LV = R + D + E - draw_enc_fixed_cols(c);
    block_alloc(k);
    packed_alloc(&a->enc_Wt, LV, 4 * E);
    packed_alloc(&a->dec_Wt, Z + D, 4 * D);
    packed_alloc(&a->enc_W, 4 * E, LV);
    packed_alloc(&a->dec_W, 4 * D, Z + D);
    a->labels = c->classes ? xcalloc((size_t)B, sizeof(int)) : NULL;
}

void draw_acts_free(DrawActs *a) {
    block_free(&a->block);
    packed_free(&a->enc_Wt), packed_free(&a->dec_Wt);
    packed_free(&a->enc_W), packed_free(&a->dec_W);
    free(a->labels);
    memset(a, 0, sizeof *a);
}

// T slices of B Z normals, slice t at eps + t stride.
static void fill_noise_(float *eps, size_t stride, const DrawConfig *c, int B, Rng *rng) {
    for (int t = 0; t < c->T; t++) rng_normal_fill(rng, eps + (size_t)t * stride, (size_t)B * c->z);
}

void draw_fill_noise(DrawActs *a, const DrawConfig *c, int B, Rng *rng) {
    CHECK(B <= a->B);
    fill_noise_(a->eps, (size_t)a->B * c->z, c, B, rng);
}

void draw_noise_fill(float *eps, const DrawConfig *c, int B, Rng *rng) {
    fill_noise_(eps, (size_t)B * c->z, c, B, rng);
}

// ---------------------------------------------------------------------------------------
// Data parallelism

int draw_worker_count(int threads, int B) {
    int n = threads < B ? threads : B;
    n = n > DRAW_MAX_WORKERS ? DRAW_MAX_WORKERS : n;
    return n < 1 ? 1 : n;
}

void draw_workers_alloc(DrawWorker *w, int n, const DrawConfig *c, int B) {
    CHECK(n >= 1 && n <= B, "%d workers for %d images", n, B);
    for (int k = 0; k < n; k++) {
        draw_acts_alloc(&w[k].acts, c, (B + n - 1) / n);
        memset(&w[k].grads, 0, sizeof w[k].grads);
        draw_layout(&w[k].grads, &w[k].g, c);
        block_alloc(&w[k].grads);
    }
}

void draw_workers_free(DrawWorker *w, int n) {
    for (int k = 0; k < n; k++) draw_acts_free(&w[k].acts), block_free(&w[k].grads);
}

typedef struct {
    DrawWorker *w;
    const DrawParams *p;
    const DrawConfig *c;
    const float *x;
    int n, backward;
    double bound, recon, kl;
} DrawJob;

static void *draw_job_run(void *arg) {
    DrawJob *j = arg;
    j->bound = draw_forward(&j->w->acts, j->p, j->c, j->x, j->n, &j->recon, &j->kl);
    if (j->backward) {
        block_zero(&j->w->grads);
        draw_backward(&j->w->g, &j->w->acts, j->p, j->c, j->x, j->n);
    }
    return NULL;
}

double draw_forward_parallel(DrawWorker *w, int n, const DrawParams *p, const DrawConfig *c,
                             const float *x, const float *eps, const int *labels, int B,
                             Block *grads, double *recon, double *kl,
                             const DrawPerImage *per_image) {
    CHECK(!c->classes == !labels, "a model of %d classes given %s labels", c->classes,
          labels ? "" : "no");
    CHECK(n >= 1 && n <= DRAW_MAX_WORKERS && B >= 1, "%d workers, %d images", n, B);
    DrawJob jobs[DRAW_MAX_WORKERS];
    const int IMG = draw_image_size(c), Z = c->z;
    int start[DRAW_MAX_WORKERS], used = 0;
    for (int k = 0, s = 0; k < n; k++) {
        int nk = B / n + (k < B % n);
        if (nk == 0) continue;
        DrawActs *a = &w[k].acts;
        CHECK(nk <= a->B, "worker %d: %d images, room for %d", k, nk, a->B);
        for (int t = 0; t < c->T; t++)
            memcpy(draw_at(a, a->eps, t, Z), eps + ((size_t)t * B + s) * Z, sizeof(float) * (size_t)nk * Z);
        if (labels) memcpy(a->labels, labels + s, sizeof(int) * (size_t)nk);
        jobs[used] = (DrawJob){.w = &w[k], .p = p, .c = c, .x = x + (size_t)s * IMG, .n = nk,
                               .backward = grads != NULL};
        start[used++] = s;
        s += nk;
    }
    job_threads_run(draw_job_run, jobs, sizeof jobs[0], used);
    double bound = 0.0, rsum = 0.0, ksum = 0.0;
    if (grads) block_zero(grads);
    for (int k = 0; k < used; k++) {
        const double share = (double)jobs[k].n / B;
        bound += share * jobs[k].bound, rsum += share * jobs[k].recon, ksum += share * jobs[k].kl;
        const DrawActs *a = &jobs[k].w->acts;
        for (int b = 0; per_image && b < jobs[k].n; b++) {
            if (per_image->logw) per_image->logw[start[k] + b] = a->logw[b];
            if (per_image->recon) per_image->recon[start[k] + b] = a->recon[b];
            if (per_image->kl) per_image->kl[start[k] + b] = a->kl[b];
        }
        if (grads) {
            const float sf = (float)share, *g = jobs[k].w->grads.data;
            float *d = grads->data;
            CHECK(grads->numel == jobs[k].w->grads.numel);
            for (size_t i = 0; i < grads->numel; i++) d[i] += sf * g[i];
        }
    }
    if (recon) *recon = rsum;
    if (kl) *kl = ksum;
    return bound;
}

// The encoder input row's columns after x's own: [r_t past its first X columns, h_dec, h_enc].
static int enc_var_cols(const DrawConfig *c) {
    return draw_read_size(c) + c->dec + c->enc - draw_enc_fixed_cols(c);
}

// The encoder starts its gates from acts.enc_pre_x (lstm_forward_packed_from): without
// attention (x's columns) or with a label.
static bool enc_pre_used(const DrawConfig *c) { return draw_enc_fixed_cols(c) || c->classes; }

// pre (B, G) = bias (G) + column labels[b] of W (G, K): the one-hot label's product.
static void label_pre(float *pre, const float *bias, const float *W, const int *labels, int B,
                      int G, int K) {
    for (int b = 0; b < B; b++) {
        const int y = labels[b];
        CHECK(y >= 0 && y < K, "label %d of image %d out of range [0, %d)", y, b, K);
        float *o = pre + (size_t)b * G;
        for (int j = 0; j < G; j++) o[j] = bias[j] + W[(size_t)j * K + y];
    }
}

// The label's weight gradient: column labels[b] of dW (G, K) += dsum's row b (B, G).
static void label_weight_backward(float *dW, const float *dsum, const int *labels, int B, int G,
                                  int K) {
    for (int b = 0; b < B; b++) {
        const float *d = dsum + (size_t)b * G;
        for (int j = 0; j < G; j++) dW[(size_t)j * K + labels[b]] += d[j];
    }
}

// sum (B, G) = the step slices of gates (T, B, G) added up (rows B of a (T, Bm, G) tensor).
static void sum_steps(float *sum, const DrawActs *a, const float *gates, int T, int B, int G) {
    memcpy(sum, gates, sizeof(float) * (size_t)B * G);
    for (int t = 1; t < T; t++) {
        const float *restrict d = draw_at(a, (float *)gates, t, G);
        for (size_t i = 0; i < (size_t)B * G; i++) sum[i] += d[i];
    }
}

// The attention parameters of a linear layer of h (B, dec); h NULL means h = 0 (bias only).
static void attn_params_forward(float *out, const float *h, const float *W, const float *b,
                                int B, int dec) {
    if (h) {
        linear_forward(out, h, W, b, B, dec, FILTERBANK_PARAMS);
    } else {
        for (int r = 0; r < B; r++) memcpy(out + r * FILTERBANK_PARAMS, b, sizeof(float) * FILTERBANK_PARAMS);
    }
}

// Copies rows (B, n) into the columns [0, n) of dst (B rows of stride ld); src NULL: zeros.
static void put_rows(float *dst, int ld, const float *src, int B, int n) {
    for (int b = 0; b < B; b++) {
        if (src)
            memcpy(dst + (size_t)b * ld, src + (size_t)b * n, sizeof(float) * n);
        else
            memset(dst + (size_t)b * ld, 0, sizeof(float) * n);
    }
}

// xh (B, IMG) = x_hat_t = x - sigmoid(c_{t-1}), with c_0 = 0; IMG = C H W.
static void xhat_step(float *xh, const DrawActs *a, const DrawConfig *c, const float *x, int t,
                      int B) {
    size_t n = (size_t)B * draw_image_size(c);
    if (t) {
        const float *cp = draw_at(a, a->canvas, t - 1, draw_image_size(c));
        for (size_t i = 0; i < n; i++) xh[i] = x[i] - sigmoid_tanh_fast(cp[i]);
    } else {
        for (size_t i = 0; i < n; i++) xh[i] = x[i] - 0.5f;
    }
}

// Decoder half of step t from z_t (already in the first Z columns of acts.dec_xh):
// h_dec_t, the write, canvas c_t.
static void decode_step(DrawActs *a, const DrawParams *p, const DrawConfig *c, int t, int B) {
    int IMG = draw_image_size(c), D = c->dec, Z = c->z, Wr = draw_write_size(c);
    const float *hp = t ? draw_at(a, a->dec_h, t - 1, D) : NULL;
    const float *cp = t ? draw_at(a, a->dec_c, t - 1, D) : NULL;
    float *h = draw_at(a, a->dec_h, t, D), *xh = draw_at(a, a->dec_xh, t, Z + D);
    put_rows(xh + Z, Z + D, hp, B, D);
    if (c->classes)
        lstm_forward_packed_from(h, draw_at(a, a->dec_c, t, D), draw_at(a, a->dec_gates, t, 4 * D),
                                 a->dec_pre_y, xh, Z + D, cp, &a->dec_Wt, p->dec_peep, B, Z, D);
    else
        lstm_forward_packed(h, draw_at(a, a->dec_c, t, D), draw_at(a, a->dec_gates, t, 4 * D), xh,
                            Z + D, cp, &a->dec_Wt, p->dec_b, p->dec_peep, B, Z, D);
    float *w = draw_at(a, a->wpatch, t, Wr);
    linear_forward(w, h, p->write_W, p->write_b, B, D, Wr);
    float *can = draw_at(a, a->canvas, t, IMG);
    const float *can_prev = t ? draw_at(a, a->canvas, t - 1, IMG) : NULL;
    if (c->attention) {
        int N = c->write_n;
        float *wp = draw_at(a, a->wparams, t, FILTERBANK_PARAMS);
        float *Fx = draw_at(a, a->wFx, t, N * c->W), *Fy = draw_at(a, a->wFy, t, N * c->H);
        float *g = draw_at(a, a->wgamma, t, 1);
        attn_params_forward(wp, h, p->write_attn_W, p->write_attn_b, B, D);
        filterbank_forward(Fx, Fy, g, wp, B, N, c->W, c->H);
        filterbank_write_channels_forward_from(can, can_prev, w, Fx, Fy, g, a->fb_scratch, B,
                                               draw_channels(c), N, c->W, c->H);
    } else {
        for (size_t i = 0; i < (size_t)B * IMG; i++) can[i] = (can_prev ? can_prev[i] : 0.0f) + w[i];
    }
}

// Encoder half of step t up to h_enc_t: x_hat_t, the read r_t, and the encoder LSTM on
// [r_t, h_dec_{t-1}, h_enc_{t-1}] (its columns past X in acts.enc_xh, x's own share of the
// gates already in acts.enc_pre_x when X > 0).
static void encode_step(DrawActs *a, const DrawParams *p, const DrawConfig *c, const float *x,
                        int t, int B) {
    int IMG = draw_image_size(c), D = c->dec, E = c->enc, R = draw_read_size(c);
    int X = draw_enc_fixed_cols(c), LV = enc_var_cols(c);
    float *xh = a->xhat;
    xhat_step(xh, a, c, x, t, B);
    const float *hdp = t ? draw_at(a, a->dec_h, t - 1, D) : NULL;
    float *in = draw_at(a, a->enc_xh, t, LV);  // the read is written in place
    if (c->attention) {
        int N = c->read_n, C = draw_channels(c);
        float *rp = draw_at(a, a->rparams, t, FILTERBANK_PARAMS);
        float *Fx = draw_at(a, a->rFx, t, N * c->W), *Fy = draw_at(a, a->rFy, t, N * c->H);
        float *g = draw_at(a, a->rgamma, t, 1);
        attn_params_forward(rp, hdp, p->read_attn_W, p->read_attn_b, B, D);
        filterbank_forward(Fx, Fy, g, rp, B, N, c->W, c->H);
        filterbank_read_channels_forward(in, LV, x, Fx, Fy, g, a->fb_scratch, B, C, N, c->W,
                                         c->H);
        filterbank_read_channels_forward(in + C * N * N, LV, xh, Fx, Fy, g, a->fb_scratch, B, C,
                                         N, c->W, c->H);
    } else {
        put_rows(in, LV, xh, B, IMG);  // x itself is in enc_pre_x
    }
    put_rows(in + R - X, LV, hdp, B, D);
    put_rows(in + R + D - X, LV, t ? draw_at(a, a->enc_h, t - 1, E) : NULL, B, E);
    float *he = draw_at(a, a->enc_h, t, E), *ce = draw_at(a, a->enc_c, t, E);
    float *ge = draw_at(a, a->enc_gates, t, 4 * E);
    const float *ce_prev = t ? draw_at(a, a->enc_c, t - 1, E) : NULL;
    if (enc_pre_used(c))
        lstm_forward_packed_from(he, ce, ge, a->enc_pre_x, in, LV, ce_prev, &a->enc_Wt,
                                 p->enc_peep, B, R + D - X, E);
    else
        lstm_forward_packed(he, ce, ge, in, LV, ce_prev, &a->enc_Wt, p->enc_b, p->enc_peep, B,
                            R + D, E);
}

// Step t's posterior q(z_t | h_enc_t) = N(mu, sigma) and its sample z_t = mu + sigma eps
// into the decoder input's first Z columns; adds the step's KL term to acts.kl and
// log p(z_t) - log q(z_t) to acts.logw.
static void sample_step(DrawActs *a, const DrawParams *p, const DrawConfig *c, int t, int B) {
    int D = c->dec, E = c->enc, Z = c->z;
    float *q = draw_at(a, a->q, t, 2 * Z);
    linear_forward(q, draw_at(a, a->enc_h, t, E), p->q_W, p->q_b, B, E, 2 * Z);
    const float *eps = draw_at(a, a->eps, t, Z);
    float *z = draw_at(a, a->dec_xh, t, Z + D);
    for (int b = 0; b < B; b++) {
        const float *mu = q + (size_t)b * 2 * Z, *ls = mu + Z, *e = eps + (size_t)b * Z;
        float *zb = z + (size_t)b * (Z + D);
        double kl = 0.0, lw = 0.0;
        // sigma in a vectorised pass first; the double sums below stay scalar.
        for (int k = 0; k < Z; k++) zb[k] = exp_fast(ls[k]);
        for (int k = 0; k < Z; k++) {
            float s = zb[k];
            zb[k] = mu[k] + s * e[k];
            kl += 0.5 * ((double)mu[k] * mu[k] + (double)s * s - 2.0 * ls[k] - 1.0);
            // log N(z; 0, 1) - log N(z; mu, sigma), the 2 pi terms cancel
            lw += -0.5 * (double)zb[k] * zb[k] + 0.5 * (double)e[k] * e[k] + ls[k];
        }
        a->kl[b] += (float)kl;
        a->logw[b] += (float)lw;
    }
}

double draw_forward(DrawActs *a, const DrawParams *p, const DrawConfig *c, const float *x, int B,
                    double *recon_out, double *kl_out) {
    CHECK(B >= 1 && B <= a->B, "B %d, acts for %d", B, a->B);
    int IMG = draw_image_size(c), D = c->dec, E = c->enc, Z = c->z;
    int X = draw_enc_fixed_cols(c), LE = X + enc_var_cols(c);  // LE: the row [r, h_dec, h_enc]
    for (int b = 0; b < B; b++) a->kl[b] = a->logw[b] = 0.0f;
    packed_pack(&a->enc_Wt, true, p->enc_W + X, LE);
    packed_pack(&a->dec_Wt, true, p->dec_W, Z + D);
    // enc_pre_x = b + x W_x^T (W_x the encoder weights' first X columns) + the label's column
    if (c->classes) {
        label_pre(a->enc_pre_x, p->enc_b, p->enc_label_W, a->labels, B, 4 * E, c->classes);
        label_pre(a->dec_pre_y, p->dec_b, p->dec_label_W, a->labels, B, 4 * D, c->classes);
    } else if (X) {
        for (int r = 0; r < B; r++)
            memcpy(a->enc_pre_x + (size_t)r * 4 * E, p->enc_b, sizeof(float) * 4 * E);
    }
    if (X) gemm(false, true, B, 4 * E, X, 1.0f, x, X, p->enc_W, LE, 1.0f, a->enc_pre_x, 4 * E);
    for (int t = 0; t < c->T; t++) {
        encode_step(a, p, c, x, t, B);
        sample_step(a, p, c, t, B);
        decode_step(a, p, c, t, B);
    }
    const float *cT = draw_at(a, a->canvas, c->T - 1, IMG);
    double rsum = 0.0, ksum = 0.0;
    for (int b = 0; b < B; b++) {
        double r = bce_logits_forward(NULL, cT + (size_t)b * IMG, x + (size_t)b * IMG, (size_t)IMG);
        a->recon[b] = (float)r;
        a->logw[b] += (float)-r;
        rsum += r;
        ksum += a->kl[b];
    }
    if (recon_out) *recon_out = rsum / B;
    if (kl_out) *kl_out = ksum / B;
    return (rsum + ksum) / B;
}

// dst (B, n) += columns [0, n) of src (B rows of stride ld).
static void add_rows(float *dst, const float *src, int ld, int B, int n) {
    for (int b = 0; b < B; b++) {
        float *restrict o = dst + (size_t)b * n;
        const float *restrict s = src + (size_t)b * ld;
        for (int k = 0; k < n; k++) o[k] += s[k];
    }
}

// The gradients carried along the recurrence: d/dh and d/dc of both LSTMs into step t, and
// into step t - 1, which undoing step t fills.
typedef struct {
    float *dh_dec, *dc_dec, *dh_enc, *dc_enc;          // (B, D), (B, D), (B, E), (B, E)
    float *dh_dec_p, *dc_dec_p, *dh_enc_p, *dc_enc_p;  // the same for step t - 1
} RecurrentGrads;

// Points at the two halves of the buffers (cur: step t's) and zeroes step t - 1's sums;
// d/dh_enc_{t-1} is written whole by encoder_backward.
static RecurrentGrads recurrent_grads(DrawActs *a, const DrawConfig *c, int cur, int B) {
    int prev = 1 - cur;
    RecurrentGrads s = {a->dh_dec[cur],  a->dc_dec[cur],  a->dh_enc[cur],  a->dc_enc[cur],
                        a->dh_dec[prev], a->dc_dec[prev], a->dh_enc[prev], a->dc_enc[prev]};
    memset(s.dh_dec_p, 0, sizeof(float) * B * c->dec);
    memset(s.dc_dec_p, 0, sizeof(float) * B * c->dec);
    memset(s.dc_enc_p, 0, sizeof(float) * B * c->enc);
    return s;
}

// Step t's write, c_t = c_{t-1} + write(h_dec_t): from d/dc_t (acts.dcan, which stays as
// part of d/dc_{t-1}) the write patch's gradient (acts.dwpatch), the write attention's and
// the write layer's parameter gradients, and d/dh_dec_t += both layers' input gradients.
static void write_backward(DrawParams *g, DrawActs *a, const DrawParams *p, const DrawConfig *c,
                           int t, int B, float *dh_dec) {
    int D = c->dec, Wr = draw_write_size(c), P = FILTERBANK_PARAMS;
    float *dwpatch = draw_at(a, a->dwpatch, t, Wr);
    if (c->attention) {
        int N = c->write_n;
        const float *wp = draw_at(a, a->wparams, t, P);
        const float *Fx = draw_at(a, a->wFx, t, N * c->W), *Fy = draw_at(a, a->wFy, t, N * c->H);
        float *dwparams = draw_at(a, a->dwparams, t, P);
        memset(dwpatch, 0, sizeof(float) * B * Wr);
        memset(a->dFx, 0, sizeof(float) * B * N * c->W);
        memset(a->dFy, 0, sizeof(float) * B * N * c->H);
        memset(a->dgamma, 0, sizeof(float) * B);
        memset(dwparams, 0, sizeof(float) * B * P);
        filterbank_write_channels_backward(dwpatch, a->dFx, a->dFy, a->dgamma, a->dcan,
                                           draw_at(a, a->wpatch, t, Wr), Fx, Fy,
                                           draw_at(a, a->wgamma, t, 1), a->fb_scratch, B,
                                           draw_channels(c), N, c->W, c->H);
        filterbank_backward(dwparams, a->dFx, a->dFy, a->dgamma, Fx, Fy, wp, B, N, c->W, c->H);
        linear_bias_backward(g->write_attn_b, dwparams, B, P);
        gemm(false, false, B, D, P, 1.0f, dwparams, P, p->write_attn_W, D, 1.0f, dh_dec, D);
    } else {
        memcpy(dwpatch, a->dcan, sizeof(float) * B * draw_image_size(c));
    }
    linear_bias_backward(g->write_b, dwpatch, B, Wr);
    gemm(false, false, B, D, Wr, 1.0f, dwpatch, Wr, p->write_W, D, 1.0f, dh_dec, D);
}

// Step t of one LSTM (gates and cells: its (B, 4H) and (B, H) rows at every step): the gate
// gradients replace the step's gates and are returned, the peepholes' and bias's gradients
// add to dpeep and db, and d/dc_{t-1} goes to dc_prev for t > 0.
static float *lstm_step_backward(DrawActs *a, float *gates, float *cells, int t, float *dc_prev,
                                 const float *dh, const float *dc, const float *peep,
                                 float *dpeep, float *db, int B, int H) {
    float *dg = draw_at(a, gates, t, 4 * H);
    lstm_gates_backward(dg, t ? dc_prev : NULL, dh, dc, t ? draw_at(a, cells, t - 1, H) : NULL,
                        draw_at(a, cells, t, H), peep, dpeep, db, B, H);
    return dg;
}

// Step t's decoder LSTM, xh = [z_t, h_dec_{t-1}]: the gate gradients replace the gates, one
// GEMM gives both parts' input gradients (only z's at t = 0, where h_dec_0 = 0 is a
// constant), and h_dec_{t-1}'s part adds to d/dh_dec_{t-1}. Returns d/dxh (B, Z + D).
static const float *decoder_backward(DrawParams *g, DrawActs *a, const DrawParams *p,
                                     const DrawConfig *c, int t, int B, const RecurrentGrads *s) {
    int D = c->dec, Z = c->z;
    float *dgd = lstm_step_backward(a, a->dec_gates, a->dec_c, t, s->dc_dec_p, s->dh_dec,
                                    s->dc_dec, p->dec_peep, g->dec_peep, g->dec_b, B, D);
    float *dxh = a->ddec_xh;
    gemm_packed(B, t ? Z + D : Z, dgd, 4 * D, &a->dec_W, 0.0f, dxh, Z + D);
    if (t) add_rows(s->dh_dec_p, dxh + Z, Z + D, B, D);
    return dxh;
}

// Step t's posterior, z_t = mu + sigma eps: d/dq (acts.dq) from d/dz (the first Z columns of
// dz's rows, Z + D apart) plus the KL term's own gradient, the q layer's parameter
// gradients, and d/dh_enc_t += its input gradient.
static void posterior_backward(DrawParams *g, DrawActs *a, const DrawParams *p,
                               const DrawConfig *c, int t, int B, const float *dz,
                               float *dh_enc) {
    int D = c->dec, E = c->enc, Z = c->z;
    float inv_b = 1.0f / (float)B;
    const float *q = draw_at(a, a->q, t, 2 * Z), *eps = draw_at(a, a->eps, t, Z);
    float *dq = draw_at(a, a->dq, t, 2 * Z);
    for (int b = 0; b < B; b++) {
        const float *mu = q + (size_t)b * 2 * Z, *ls = mu + Z, *e = eps + (size_t)b * Z;
        const float *dzb = dz + (size_t)b * (Z + D);
        float *dmu = dq + (size_t)b * 2 * Z, *dls = dmu + Z;
        for (int k = 0; k < Z; k++) {
            float sigma = exp_fast(ls[k]);
            dmu[k] = dzb[k] + mu[k] * inv_b;
            dls[k] = dzb[k] * sigma * e[k] + (sigma * sigma - 1.0f) * inv_b;
        }
    }
    linear_bias_backward(g->q_b, dq, B, 2 * Z);
    gemm(false, false, B, E, 2 * Z, 1.0f, dq, 2 * Z, p->q_W, E, 1.0f, dh_enc, E);
}

// Step t's encoder LSTM, xh = [r_t, h_dec_{t-1}, h_enc_{t-1}] past column X: one GEMM for
// all three parts' input gradients into acts.denc_xh (B, LV) (at t = 0 only r_t's, and
// without attention none: x_hat_0 is a constant); the h parts go to step t - 1's.
static const float *encoder_backward(DrawParams *g, DrawActs *a, const DrawParams *p,
                                     const DrawConfig *c, int t, int B,
                                     const RecurrentGrads *s) {
    int D = c->dec, E = c->enc, R = draw_read_size(c), X = draw_enc_fixed_cols(c);
    int LV = enc_var_cols(c);
    float *dge = lstm_step_backward(a, a->enc_gates, a->enc_c, t, s->dc_enc_p, s->dh_enc,
                                    s->dc_enc, p->enc_peep, g->enc_peep, g->enc_b, B, E);
    float *din = a->denc_xh;
    int din_cols = t ? LV : (c->attention ? R : 0);
    if (din_cols) gemm_packed(B, din_cols, dge, 4 * E, &a->enc_W, 0.0f, din, LV);
    if (t) {
        add_rows(s->dh_dec_p, din + R - X, LV, B, D);
        for (int b = 0; b < B; b++)
            memcpy(s->dh_enc_p + (size_t)b * E, din + (size_t)b * LV + R + D - X,
                   sizeof(float) * E);
    }
    return din;
}

// Step t's read: from d/dr_t (din's first columns), d/dx_hat_t into acts.dxhat (for t > 0;
// x itself is data) and the read attention's parameter gradients; d/dh_dec_{t-1} += its
// input gradient. x_hat_t is recomputed into acts.xhat from c_{t-1} exactly as the forward
// computed it.
static void read_backward(DrawParams *g, DrawActs *a, const DrawParams *p, const DrawConfig *c,
                          const float *x, int t, int B, const float *din, float *dh_dec_p) {
    int D = c->dec, IMG = draw_image_size(c), P = FILTERBANK_PARAMS, LV = enc_var_cols(c);
    float *xh = a->xhat;
    if (t || c->attention) xhat_step(xh, a, c, x, t, B);
    if (t) memset(a->dxhat, 0, sizeof(float) * B * IMG);
    if (c->attention) {
        int N = c->read_n, C = draw_channels(c);
        const float *rp = draw_at(a, a->rparams, t, P);
        const float *Fx = draw_at(a, a->rFx, t, N * c->W), *Fy = draw_at(a, a->rFy, t, N * c->H);
        const float *gm = draw_at(a, a->rgamma, t, 1);
        float *drparams = draw_at(a, a->drparams, t, P);
        memset(a->dFx, 0, sizeof(float) * B * N * c->W);
        memset(a->dFy, 0, sizeof(float) * B * N * c->H);
        memset(a->dgamma, 0, sizeof(float) * B);
        memset(drparams, 0, sizeof(float) * B * P);
        filterbank_read_channels_backward(NULL, a->dFx, a->dFy, a->dgamma, din, LV, x, Fx, Fy,
                                          gm, a->fb_scratch, B, C, N, c->W, c->H);
        filterbank_read_channels_backward(t ? a->dxhat : NULL, a->dFx, a->dFy, a->dgamma,
                                          din + C * N * N, LV, xh, Fx, Fy, gm, a->fb_scratch,
                                          B, C, N, c->W, c->H);
        filterbank_backward(drparams, a->dFx, a->dFy, a->dgamma, Fx, Fy, rp, B, N, c->W, c->H);
        linear_bias_backward(g->read_attn_b, drparams, B, P);
        if (t)
            gemm(false, false, B, D, P, 1.0f, drparams, P, p->read_attn_W, D, 1.0f, dh_dec_p,
                 D);
    } else if (t) {
        for (int b = 0; b < B; b++)
            memcpy(a->dxhat + (size_t)b * IMG, din + (size_t)b * LV, sizeof(float) * IMG);
    }
}

// d/dc_{t-1} (acts.dcan, which holds d/dc_t's share already) -= d/dx_hat_t sigmoid'(c_{t-1}),
// for t > 0 (c_0 = 0 is a constant). x_hat_t = x - sigmoid(c_{t-1}), so sigmoid(c_{t-1}) is
// x - x_hat_t, read from read_backward's recomputed acts.xhat with no exp.
static void canvas_backward(DrawActs *a, const DrawConfig *c, const float *x, int B) {
    size_t n = (size_t)B * draw_image_size(c);
    for (size_t i = 0; i < n; i++) {
        float s = x[i] - a->xhat[i];
        a->dcan[i] -= a->dxhat[i] * s * (1.0f - s);
    }
}

// The weight gradients, after the sweep: one GEMM each over its T B rows.
static void weight_grads(DrawParams *g, const DrawActs *a, const DrawConfig *c, const float *x,
                         int B) {
    int D = c->dec, E = c->enc, Z = c->z, Wr = draw_write_size(c), P = FILTERBANK_PARAMS;
    int T = c->T, Bm = a->B, X = draw_enc_fixed_cols(c), LV = enc_var_cols(c), LE = X + LV;
    linear_weight_backward_steps(g->enc_W + X, LE, a->enc_gates, a->enc_xh, LV, 0, 0, T, B, Bm,
                                 4 * E, LV);
    // x's columns and the label's: (sum over t of the gate gradients)^T x (x the same each
    // step), and each image's summed gate gradients into its label's column
    if (enc_pre_used(c)) sum_steps(a->denc_gates_sum, a, a->enc_gates, T, B, 4 * E);
    if (X) gemm(true, false, 4 * E, X, B, 1.0f, a->denc_gates_sum, 4 * E, x, X, 1.0f, g->enc_W, LE);
    if (c->classes) {
        label_weight_backward(g->enc_label_W, a->denc_gates_sum, a->labels, B, 4 * E, c->classes);
        sum_steps(a->ddec_gates_sum, a, a->dec_gates, T, B, 4 * D);
        label_weight_backward(g->dec_label_W, a->ddec_gates_sum, a->labels, B, 4 * D, c->classes);
    }
    linear_weight_backward_steps(g->dec_W, Z + D, a->dec_gates, a->dec_xh, Z + D, 0, 0, T, B, Bm,
                                 4 * D, Z + D);
    linear_weight_backward_steps(g->q_W, E, a->dq, a->enc_h, E, 0, 0, T, B, Bm, 2 * Z, E);
    linear_weight_backward_steps(g->write_W, D, a->dwpatch, a->dec_h, D, 0, 0, T, B, Bm, Wr, D);
    if (c->attention) {
        linear_weight_backward_steps(g->write_attn_W, D, a->dwparams, a->dec_h, D, 0, 0, T, B, Bm,
                                     P, D);
        // Step t reads with h_dec_{t-1}; step 0 with h_dec_0 = 0, so it adds to the bias only.
        linear_weight_backward_steps(g->read_attn_W, D, a->drparams, a->dec_h, D, 1, 1, T, B, Bm,
                                     P, D);
    }
}

// Undoes the T steps in reverse, each in the forward's order reversed: write, decoder,
// posterior, encoder, read, and the canvas's share through x_hat; then the weights.
void draw_backward(DrawParams *g, DrawActs *a, const DrawParams *p, const DrawConfig *c,
                   const float *x, int B) {
    CHECK(B >= 1 && B <= a->B);
    int D = c->dec, E = c->enc, Z = c->z, X = draw_enc_fixed_cols(c);
    size_t nIMG = (size_t)B * draw_image_size(c);
    float inv_b = 1.0f / (float)B;
    packed_pack(&a->enc_W, false, p->enc_W + X, X + enc_var_cols(c));
    packed_pack(&a->dec_W, false, p->dec_W, Z + D);

    // d bound / d c_T = (sigmoid(c_T) - x) / B
    memset(a->dcan, 0, sizeof(float) * nIMG);
    bce_logits_backward(a->dcan, NULL, draw_at(a, a->canvas, c->T - 1, draw_image_size(c)), x,
                        nIMG);
    for (size_t i = 0; i < nIMG; i++) a->dcan[i] *= inv_b;

    int cur = 0;
    memset(a->dh_enc[cur], 0, sizeof(float) * B * E);
    memset(a->dc_enc[cur], 0, sizeof(float) * B * E);
    memset(a->dh_dec[cur], 0, sizeof(float) * B * D);
    memset(a->dc_dec[cur], 0, sizeof(float) * B * D);
    for (int t = c->T - 1; t >= 0; t--) {
        RecurrentGrads s = recurrent_grads(a, c, cur, B);
        write_backward(g, a, p, c, t, B, s.dh_dec);
        const float *dz = decoder_backward(g, a, p, c, t, B, &s);
        posterior_backward(g, a, p, c, t, B, dz, s.dh_enc);
        const float *din = encoder_backward(g, a, p, c, t, B, &s);
        read_backward(g, a, p, c, x, t, B, din, s.dh_dec_p);
        if (t) canvas_backward(a, c, x, B);
        cur = 1 - cur;
    }
    weight_grads(g, a, c, x, B);
}

void draw_generate(DrawActs *a, const DrawParams *p, const DrawConfig *c, int B, Rng *rng) {
    draw_generate_tempered(a, p, c, B, rng, 1.0);
}

void draw_generate_tempered(DrawActs *a, const DrawParams *p, const DrawConfig *c, int B, Rng *rng,
                            double temperature) {
    CHECK(B >= 1 && B <= a->B);
    CHECK(temperature >= 0, "temperature %g", temperature);
    int Z = c->z, D = c->dec;
    packed_pack(&a->dec_Wt, true, p->dec_W, Z + D);
    if (c->classes) label_pre(a->dec_pre_y, p->dec_b, p->dec_label_W, a->labels, B, 4 * D, c->classes);
    for (int t = 0; t < c->T; t++) {
        float *z = draw_at(a, a->dec_xh, t, Z + D);
        for (int b = 0; b < B; b++) {
            float *zb = z + (size_t)b * (Z + D);
            rng_normal_fill(rng, zb, (size_t)Z);
            if (temperature != 1.0)  // t = 1 leaves the draws as they are, bit for bit
                for (int i = 0; i < Z; i++) zb[i] = (float)(temperature * zb[i]);
        }
        decode_step(a, p, c, t, B);
    }
}
