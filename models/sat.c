#include "models/sat.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/activations.h"
#include "core/check.h"
#include "core/grad_sum.h"
#include "core/gemm.h"
#include "seq/beam.h"
#include "seq/embedding.h"
#include "seq/linear.h"
#include "seq/loss.h"
#include "seq/lstm.h"
#include "seq/vocab.h"

// ---------------------------------------------------------------------------------------
// Configuration

const char *sat_query_name(SatQuery q) { return q == SAT_QUERY_CURRENT ? "current" : "previous"; }

int sat_query_parse(const char *name, SatQuery *q) {
    if (!strcmp(name, "previous")) *q = SAT_QUERY_PREVIOUS;
    else if (!strcmp(name, "current")) *q = SAT_QUERY_CURRENT;
    else return -1;
    return 0;
}

void sat_config_default(SatConfig *c) {
    memset(c, 0, sizeof *c);
    c->image_size = 64;
    cnn_config_default(&c->cnn);
    c->E = 128;
    c->H = 256;
    c->V = 0;
    c->max_len = 16;
    c->attn.kind = ATTN_ADDITIVE;
    c->attn.A = 128;
    c->attn.heads = 4;
    c->attn.window = 2;
    c->attn.score = ATTN_MULTIPLICATIVE;
    c->hard = 0;
    c->beta_vector = 0;
    c->query = SAT_QUERY_CURRENT;
    c->lambda = 3.0f;
    c->dropout = 0.0f;
    c->entropy_weight = 0.002f;
    c->baseline_decay = 0.9f;
}

int sat_config_finish(SatConfig *c, Error *err) {
    c->attn.D = sat_D(c);
    c->attn.H = c->H;
    if (c->feat_L < 0 || (c->feat_L > 0 && (c->feat_D < 1 || c->feat_D > 65536 || c->feat_L > 65536)))
        return error_set(err, "model config: annotations %d x %d", c->feat_L, c->feat_D);
    if (c->image_size < 2 || c->image_size > 1024)
        return error_set(err, "--image-size: must be in [2, 1024], got %d", c->image_size);
    if (c->feat_L == 0 && cnn_grid_size(&c->cnn, c->image_size) < 1)
        return error_set(err, "--image-size: %d is too small for %d pooling layers",
                         c->image_size, c->cnn.n_layers);
    if (c->E < 1 || c->E > 8192) return error_set(err, "--embed: must be in [1, 8192]");
    if (c->H < 1 || c->H > 8192) return error_set(err, "--hidden: must be in [1, 8192]");
    if (c->max_len < 1 || c->max_len > 256) return error_set(err, "--max-len: must be in [1, 256]");
    if (c->V < VOCAB_NSPECIAL + 1) return error_set(err, "vocabulary: %d ids is too few", c->V);
    if (c->attn.A < 1) return error_set(err, "--attn-dim: must be >= 1");
    if (c->hard && c->attn.kind == ATTN_NONE)
        return error_set(err, "--attention hard: needs a scoring kind");
    AttnKind k = c->attn.kind;
    if ((k == ATTN_DOT || k == ATTN_SCALED_DOT) && c->H != c->attn.D)
        return error_set(err, "--attention %s: needs --hidden equal to the annotation size (the "
                              "last --channels entry, %d), got --hidden %d: add --hidden %d, or "
                              "end --channels with %d",
                         attn_kind_name(k), c->attn.D, c->H, c->attn.D, c->H);
    if (k == ATTN_MULTIHEAD && (c->attn.heads < 1 || c->attn.A % c->attn.heads != 0))
        return error_set(err, "--heads: %d must divide --attn-dim %d", c->attn.heads, c->attn.A);
    if ((k == ATTN_LOCAL_MONOTONIC || k == ATTN_LOCAL_PREDICTIVE) && c->attn.window < 0)
        return error_set(err, "--window: must be >= 0");
    if (!(c->dropout >= 0.0f && c->dropout < 1.0f)) return error_set(err, "--dropout: must be in [0, 1)");
    if (!(c->lambda >= 0.0f)) return error_set(err, "--lambda: must be >= 0");
    return 0;
}

void sat_config_format(const SatConfig *c, char *buf, size_t n) {
    char ch[128] = {0};
    size_t k = 0;
    for (int i = 0; i < c->cnn.n_layers; i++)
        k += (size_t)snprintf(ch + k, sizeof ch - k, "%s%d", i ? "," : "", c->cnn.channels[i]);
    snprintf(buf, n,
             "image_size=%d channels=%s in_channels=%d embed=%d hidden=%d vocab=%d max_len=%d "
             "attention=%s attn_dim=%d heads=%d window=%d score=%s hard=%d beta_vector=%d "
             "query=%s lambda=%.9g dropout=%.9g entropy=%.9g baseline_decay=%.9g",
             c->image_size, ch, c->cnn.in_channels, c->E, c->H, c->V, c->max_len,
             attn_kind_name(c->attn.kind), c->attn.A, c->attn.heads, c->attn.window,
             attn_kind_name(c->attn.score), c->hard, c->beta_vector, sat_query_name(c->query), (double)c->lambda,
             (double)c->dropout, (double)c->entropy_weight, (double)c->baseline_decay);
    size_t used = strlen(buf);
    if (c->feat_L > 0 && used < n)
        snprintf(buf + used, n - used, " features=%dx%d", c->feat_L, c->feat_D);
}

static int parse_int_(const char *v, int *out) {
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end || x < -1000000000L || x > 1000000000L) return -1;
    *out = (int)x;
    return 0;
}

static int parse_float_(const char *v, float *out) {
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !isfinite(x)) return -1;
    *out = (float)x;
    return 0;
}

int sat_config_parse(SatConfig *c, const char *text, Error *err) {
    sat_config_default(c);
    // Checkpoints written before the query key existed all used Xu et al.'s order.
    c->query = SAT_QUERY_PREVIOUS;
    char buf[2048];
    if (strlen(text) >= sizeof buf) return error_set(err, "model config: too long");
    strcpy(buf, text);
    char *save = NULL;
    for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) return error_set(err, "model config: '%s' is not key=value", tok);
        *eq = 0;
        const char *k = tok, *v = eq + 1;
        int bad = 0;
        if (!strcmp(k, "image_size")) bad = parse_int_(v, &c->image_size);
        else if (!strcmp(k, "channels")) {
            int in = c->cnn.in_channels;
            if (cnn_config_parse(&c->cnn, v, "channels", err)) return error_prefix(err, "model config");
            c->cnn.in_channels = in;
        } else if (!strcmp(k, "in_channels")) bad = parse_int_(v, &c->cnn.in_channels);
        else if (!strcmp(k, "embed")) bad = parse_int_(v, &c->E);
        else if (!strcmp(k, "hidden")) bad = parse_int_(v, &c->H);
        else if (!strcmp(k, "vocab")) bad = parse_int_(v, &c->V);
        else if (!strcmp(k, "max_len")) bad = parse_int_(v, &c->max_len);
        else if (!strcmp(k, "attention")) bad = attn_kind_parse(v, &c->attn.kind);
        else if (!strcmp(k, "attn_dim")) bad = parse_int_(v, &c->attn.A);
        else if (!strcmp(k, "heads")) bad = parse_int_(v, &c->attn.heads);
        else if (!strcmp(k, "window")) bad = parse_int_(v, &c->attn.window);
        else if (!strcmp(k, "score")) bad = attn_kind_parse(v, &c->attn.score);
        else if (!strcmp(k, "hard")) bad = parse_int_(v, &c->hard);
        else if (!strcmp(k, "beta_vector")) bad = parse_int_(v, &c->beta_vector);
        else if (!strcmp(k, "query")) bad = sat_query_parse(v, &c->query);
        else if (!strcmp(k, "lambda")) bad = parse_float_(v, &c->lambda);
        else if (!strcmp(k, "dropout")) bad = parse_float_(v, &c->dropout);
        else if (!strcmp(k, "entropy")) bad = parse_float_(v, &c->entropy_weight);
        else if (!strcmp(k, "baseline_decay")) bad = parse_float_(v, &c->baseline_decay);
        else if (!strcmp(k, "features"))
            bad = sscanf(v, "%dx%d", &c->feat_L, &c->feat_D) != 2 || c->feat_L < 1 || c->feat_D < 1;
        else return error_set(err, "model config: unknown key '%s'", k);
        if (bad) return error_set(err, "model config: bad value '%s' for %s", v, k);
    }
    if (c->cnn.in_channels < 1 || c->cnn.in_channels > 4)
        return error_set(err, "model config: in_channels %d", c->cnn.in_channels);
    return sat_config_finish(c, err);
}

// ---------------------------------------------------------------------------------------
// Parameters

static int nbeta_(const SatConfig *c) { return c->beta_vector ? sat_D(c) : 1; }

static void layout_(Block *b, SatParams *p, const SatConfig *c) {
    memset(p, 0, sizeof *p);
    const int D = sat_D(c), E = c->E, H = c->H, V = c->V, nb = nbeta_(c);
    if (c->feat_L == 0) cnn_register(&p->cnn, b, "enc", &c->cnn);
    block_add(b, &p->W_h0, "init.W_h", 2, H, D);
    block_add(b, &p->b_h0, "init.b_h", 1, H);
    block_add(b, &p->W_c0, "init.W_c", 2, H, D);
    block_add(b, &p->b_c0, "init.b_c", 1, H);
    block_add(b, &p->embed, "embed", 2, V, E);
    block_add(b, &p->lstm_W, "lstm.W", 2, 4 * H, E + D + H);
    block_add(b, &p->lstm_b, "lstm.b", 1, 4 * H);
    attn_params_layout(b, &p->attn, &c->attn, "attn");
    block_add(b, &p->W_beta, "gate.W", 2, nb, H);
    block_add(b, &p->b_beta, "gate.b", 1, nb);
    block_add(b, &p->L_h, "out.L_h", 2, E, H);
    block_add(b, &p->L_z, "out.L_z", 2, E, D);
    block_add(b, &p->L_o, "out.L_o", 2, V, E);
    block_add(b, &p->b_o, "out.b_o", 1, V);
}

static void fill_uniform_(float *x, size_t n, float r, Rng *rng) {
    for (size_t i = 0; i < n; i++) x[i] = (2.0f * rng_uniform(rng) - 1.0f) * r;
}

void sat_init(SatModel *m, const SatConfig *cfg, Rng *rng) {
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    const SatConfig *c = &m->cfg;
    layout_(&m->params, &m->p, c);
    layout_(&m->grads, &m->g, c);
    layout_(&m->adam_m, &m->m, c);
    layout_(&m->adam_v, &m->v, c);
    block_alloc(&m->params);
    block_alloc(&m->grads);
    block_alloc(&m->adam_m);
    block_alloc(&m->adam_v);
    const int D = sat_D(c), E = c->E, H = c->H, V = c->V, nb = nbeta_(c);
    SatParams *p = &m->p;
    if (c->feat_L == 0) cnn_init(&p->cnn, rng);
    fill_uniform_(p->W_h0, (size_t)H * D, 1.0f / sqrtf((float)D), rng);
    fill_uniform_(p->W_c0, (size_t)H * D, 1.0f / sqrtf((float)D), rng);
    fill_uniform_(p->embed, (size_t)V * E, 0.1f, rng);
    fill_uniform_(p->lstm_W, (size_t)4 * H * (E + D + H), 1.0f / sqrtf((float)(E + D + H)), rng);
    for (int j = H; j < 2 * H; j++) p->lstm_b[j] = 1.0f;  // forget gate bias
    attn_params_init(&p->attn, &c->attn, rng);
    fill_uniform_(p->W_beta, (size_t)nb * H, 1.0f / sqrtf((float)H), rng);
    fill_uniform_(p->L_h, (size_t)E * H, 1.0f / sqrtf((float)H), rng);
    fill_uniform_(p->L_z, (size_t)E * D, 1.0f / sqrtf((float)D), rng);
    fill_uniform_(p->L_o, (size_t)V * E, 1.0f / sqrtf((float)E), rng);
}

void sat_replica_init(SatModel *r, const SatModel *m) {
    memset(r, 0, sizeof *r);
    r->cfg = m->cfg;
    r->p = m->p;
    r->params = m->params;  // a copy of the descriptor: same data, never freed by r
    r->replica = 1;
    layout_(&r->grads, &r->g, &r->cfg);
    block_alloc(&r->grads);
    r->baseline = m->baseline;
    r->baseline_set = m->baseline_set;
}

// Frees what sat_alloc_acts allocated (nothing when it has not run).
static void free_acts_(SatModel *m) {
    if (!m->acts_block.data) return;
    block_free(&m->acts_block);
    free(m->a.in_tok);
    free(m->a.row_rng);
    m->a.in_tok = NULL;
    m->a.row_rng = NULL;
    if (m->cfg.feat_L == 0) cnn_workspace_free(&m->cnn_ws);
}

void sat_alloc_acts(SatModel *m, int B) {
    const SatConfig *c = &m->cfg;
    SatActs *a = &m->a;
    Block *k = &m->acts_block;
    free_acts_(m);  // a second call (another batch size) replaces the first's
    memset(k, 0, sizeof *k);
    const int T = c->max_len + 1, L = sat_L(c), D = sat_D(c), E = c->E, H = c->H, V = c->V;
    const int nb = nbeta_(c), I = E + D;
    a->T = T;
    a->B = B;
    int prep = (int)attn_prep_floats(&c->attn, B, L);
    int cache = (int)attn_step_cache_floats(&c->attn, B, L);
    if (prep < 1) prep = 1;
    if (cache < 1) cache = 1;
    block_add(k, &a->annot, "annot", 3, B, L, D);
    block_add(k, &a->mean_a, "mean_a", 2, B, D);
    block_add(k, &a->prep, "prep", 1, prep);
    block_add(k, &a->ctx, "ctx", 3, T, B, D);
    block_add(k, &a->alpha, "alpha", 3, T, B, L);
    block_add(k, &a->acache, "acache", 2, T, cache);
    block_add(k, &a->beta, "beta", 3, T, B, nb);
    block_add(k, &a->z, "z", 3, T, B, D);
    block_add(k, &a->xh, "xh", 3, T, B, I + H);
    block_add(k, &a->gates, "gates", 3, T, B, 4 * H);
    block_add(k, &a->hs, "hs", 3, T + 1, B, H);
    block_add(k, &a->cs, "cs", 3, T + 1, B, H);
    // Without dropout the deep output reads h itself: no copy, no mask.
    if (c->dropout > 0.0f) {
        block_add(k, &a->hd, "hd", 3, T, B, H);
        block_add(k, &a->dmask, "dmask", 3, T, B, H);
    } else {
        block_add(k, &a->hd, "hd", 1, 1);
        block_add(k, &a->dmask, "dmask", 1, 1);
    }
    block_add(k, &a->o, "o", 3, T, B, E);
    block_add(k, &a->probs, "probs", 3, T, B, V);
    block_add(k, &a->losses, "losses", 2, T, B);
    block_add(k, &a->dannot, "dannot", 3, B, L, D);
    block_add(k, &a->dprep, "dprep", 1, prep);
    block_add(k, &a->dhs, "dhs", 3, T + 1, B, H);
    block_add(k, &a->dcs, "dcs", 3, 2, B, H);  // rows alternate by step (t & 1)
    block_add(k, &a->dz, "dz", 3, T, B, D);
    block_add(k, &a->dx, "dx", 2, B, I);
    block_add(k, &a->dctx, "dctx", 2, B, D);
    block_add(k, &a->dalpha, "dalpha", 2, B, L);
    block_add(k, &a->dbeta, "dbeta", 2, B, nb);
    block_add(k, &a->dhd, "dhd", 3, c->dropout > 0.0f ? T : 1, B, H);
    block_add(k, &a->do_, "do", 3, T, B, E);
    block_add(k, &a->dlogits, "dlogits", 3, T, B, V);
    block_add(k, &a->zeros, "zeros", 2, B, D);
    block_add(k, &a->lstm_scratch, "lstm_scratch", 1, lstm_scratch_floats(B, I, H));
    block_add(k, &a->reward, "reward", 1, B);
    block_add(k, &a->dstoch, "dstoch", 2, B, L);
    block_alloc(k);
    // Shared memory: the embeddings are written into o, which the deep output then adds
    // to; their gradient accumulates into do_ once the output layer's backward is done.
    a->emb = a->o;
    a->demb = a->do_;
    int *ints = xcalloc((size_t)4 * T * B + B + 2 * T + 1, sizeof(int));
    a->in_tok = ints;
    a->target = ints + (size_t)T * B;
    a->sample = ints + (size_t)2 * T * B;
    a->steps = ints + (size_t)4 * T * B;
    a->active = a->steps + B;
    a->off = a->active + T;
    a->row_rng = xcalloc((size_t)B, sizeof(Rng));
    if (c->feat_L == 0) cnn_workspace_alloc(&m->cnn_ws, &c->cnn, B, c->image_size);
}

void sat_free(SatModel *m) {
    if (!m->replica) {
        block_free(&m->params);
        block_free(&m->adam_m);
        block_free(&m->adam_v);
    }
    block_free(&m->grads);
    free(m->sorted_images);
    free(m->sorted_ints);
    if (m->own_packs) {
        packed_free(&m->own_Wt);
        packed_free(&m->own_Wn);
        packed_free(&m->own_Wq_t);  // zero (nothing to free) without an additive score
        packed_free(&m->own_Wq_n);
    }
    free_acts_(m);
    memset(m, 0, sizeof *m);
}

// ---------------------------------------------------------------------------------------
// Training forward and backward

// out (B, D) = mean over L of annot (B, L, D)
static void mean_annot_(float *out, const float *annot, int B, int L, int D) {
    for (int b = 0; b < B; b++) {
        float *o = out + (size_t)b * D;
        memset(o, 0, (size_t)D * sizeof(float));
        for (int l = 0; l < L; l++) {
            const float *r = annot + ((size_t)b * L + l) * D;
            for (int d = 0; d < D; d++) o[d] += r[d];
        }
        for (int d = 0; d < D; d++) o[d] *= 1.0f / (float)L;
    }
}

// tanh_fast (core/activations.h), which vectorises, in place (tanh_forward's arguments may
// not alias).
static void tanh_inplace_(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = tanh_fast(x[i]);
}

// The per-step activations of a forward are packed by step: step t's rows 0..active[t]-1
// are rows off[t] .. off[t] + active[t] - 1 (srow_); the states h_t, c_t (and their
// gradients) follow h_0's B rows (hrow_: h_0 at row 0, h_{t+1} at B + off[t]).
static inline size_t srow_(const SatActs *a, int t) { return (size_t)a->off[t]; }
static inline size_t hrow_(const SatActs *a, int t, int B) {
    return t == 0 ? 0 : (size_t)B + (size_t)a->off[t - 1];
}

// h0 (B, H), c0 (B, H) from the mean annotation
static void init_state_(float *h0, float *c0, const float *mean_a, const SatParams *p, int B,
                        int D, int H) {
    linear_forward(h0, mean_a, p->W_h0, p->b_h0, B, D, H);
    linear_forward(c0, mean_a, p->W_c0, p->b_c0, B, D, H);
    tanh_inplace_(h0, (size_t)B * H);
    tanh_inplace_(c0, (size_t)B * H);
}

// beta (B, nb) = sigmoid(h (B, H) W_beta^T + b); z (B, D) = beta * ctx (B, D)
static void gate_forward_(float *beta, float *z, const float *h, const float *ctx,
                          const SatParams *p, int B, int H, int D, int nb) {
    linear_forward(beta, h, p->W_beta, p->b_beta, B, H, nb);
    for (int i = 0; i < B * nb; i++) beta[i] = sigmoidf_(beta[i]);
    for (int b = 0; b < B; b++) {
        const float *cr = ctx + (size_t)b * D;
        const float *br = beta + (size_t)b * nb;
        float *zr = z + (size_t)b * D;
        if (nb == 1)
            for (int d = 0; d < D; d++) zr[d] = br[0] * cr[d];
        else
            for (int d = 0; d < D; d++) zr[d] = br[d] * cr[d];
    }
}

// Step t's attention with query q (B, H): alpha_t, ctx_t (a sampled annotation when
// sampling), beta_t and z_t = beta_t ctx_t.
// Rows 0..n-1 of the step (n = active[t], see sat_forward).
static void attend_forward_(SatModel *m, int t, const float *q, int B, int n, int sample) {
    const SatConfig *c = &m->cfg;
    SatActs *a = &m->a;
    const SatParams *p = &m->p;
    const int L = sat_L(c), D = sat_D(c), H = c->H, nb = nbeta_(c);
    const size_t cache = attn_step_cache_floats(&c->attn, B, L);
    const size_t r0 = srow_(a, t);
    float *ctx = a->ctx + r0 * D;
    float *alpha = a->alpha + r0 * L;
    attn_forward(ctx, alpha, a->acache + t * cache, a->prep, a->annot, q, NULL, &p->attn,
                 &c->attn, t, n, L);
    for (int b = 0; b < n; b++) {
        int s = -1;
        if (sample) {
            s = rng_categorical(&a->row_rng[b], alpha + (size_t)b * L, L);
            memcpy(ctx + (size_t)b * D, a->annot + ((size_t)b * L + s) * D, (size_t)D * sizeof(float));
        }
        a->sample[r0 + b] = s;
    }
    gate_forward_(a->beta + r0 * nb, a->z + r0 * D, q, ctx, p, n, H, D, nb);
}

// Training's randomness, row by row: row b's stream (a->row_rng[b]) seeded with
// rng_mix(seed, first + b) first draws its dropout masks (dmask, packed by step) for its
// own steps, then keeps its place for the hard-attention samples of the time loop. The
// masks of steps past a caption's end (which no loss reads) are 1, so that the row's
// draws do not depend on the batch's longest caption or on the other rows.
static void draw_row_streams_(SatModel *m, int T, int B, uint64_t seed, int first) {
    const SatConfig *c = &m->cfg;
    SatActs *a = &m->a;
    const int H = c->H;
    const float keep = 1.0f - c->dropout, scale = 1.0f / keep;
    for (int b = 0; b < B; b++) {
        Rng *rng = &a->row_rng[b];
        const uint64_t row = m->row_ids ? (uint64_t)m->row_ids[b] : (uint64_t)first + (uint64_t)b;
        rng_seed(rng, rng_mix(seed, row));
        if (c->dropout <= 0.0f) continue;
        for (int t = 0; t < T && b < a->active[t]; t++) {
            float *mask = a->dmask + (srow_(a, t) + b) * H;
            if (t < a->steps[b])
                for (int i = 0; i < H; i++) mask[i] = rng_uniform(rng) < keep ? scale : 0.0f;
            else
                for (int i = 0; i < H; i++) mask[i] = 1.0f;
        }
    }
}

void sat_forward(SatModel *m, SatLoss *out, const float *images, const int *words,
                 const int *lens, int B, int train, uint64_t seed, int first) {
    const SatConfig *c = &m->cfg;
    SatActs *a = &m->a;
    SatParams *p = &m->p;
    CHECK(a->B >= B && B >= 1, "batch %d, activations for %d", B, a->B);
    const int L = sat_L(c), D = sat_D(c), E = c->E, H = c->H, V = c->V;
    const int I = E + D, ML = c->max_len;
    int T = 0;
    for (int b = 0; b < B; b++) {
        CHECK(lens[b] >= 0 && lens[b] <= ML, "caption length %d", lens[b]);
        a->steps[b] = lens[b] + 1;
        if (a->steps[b] > T) T = a->steps[b];
    }
    m->Tb = T;
    m->Bb = B;
    // Step t runs rows 0..active[t]-1: up to the last row whose caption is still going.
    // Rows past a caption's end feed no loss, so when the rows are in descending order of
    // length (sat_forward_backward puts them so) no step computes a padding row.
    // The activations hold only those rows, packed by step (srow_, hrow_).
    a->off[0] = 0;
    for (int t = 0; t < T; t++) {
        int n = 0;
        for (int b = 0; b < B; b++)
            if (a->steps[b] > t) n = b + 1;
        a->active[t] = n;
        a->off[t + 1] = a->off[t] + n;
    }
    const int N = a->off[T];
    if (train) draw_row_streams_(m, T, B, seed, first);
    for (int t = 0; t < T; t++)
        for (int b = 0; b < a->active[t]; b++) {
            int n = lens[b];
            size_t r = srow_(a, t) + b;
            a->in_tok[r] = t == 0 ? VOCAB_START : (t - 1 < n ? words[b * ML + t - 1] : VOCAB_PAD);
            a->target[r] = t < n ? words[b * ML + t] : (t == n ? VOCAB_END : -1);
        }

    m->images = images;
    if (c->feat_L > 0) {
        if (images != a->annot) memcpy(a->annot, images, (size_t)B * L * D * sizeof(float));
    } else
        cnn_forward(a->annot, &m->cnn_ws, images, &p->cnn, B);
    mean_annot_(a->mean_a, a->annot, B, L, D);
    init_state_(a->hs, a->cs, a->mean_a, p, B, D, H);
    attn_prepare(a->prep, a->annot, &p->attn, &c->attn, B, L);
    embedding_forward(a->emb, a->in_tok, p->embed, N, E);  // into o (a->emb == a->o)

    const int sample = c->hard && train;
    const int after = c->query == SAT_QUERY_CURRENT;
    for (int t = 0; t < T; t++) {
        const int n = a->active[t];
        const float *h = a->hs + hrow_(a, t, B) * H;
        float *hn = a->hs + hrow_(a, t + 1, B) * H;
        const float *z = a->z + srow_(a, t) * D;
        float *xh = a->xh + srow_(a, t) * (I + H);
        // query previous: attend with h_t, feed z_t; current: feed z_{t-1}, attend with h_{t+1}
        // (step t's rows are the first rows of step t - 1's)
        if (!after) attend_forward_(m, t, h, B, n, sample);
        const float *zin = !after ? z : t > 0 ? a->z + srow_(a, t - 1) * D : a->zeros;
        const float *emb = a->emb + srow_(a, t) * E;
        for (int b = 0; b < n; b++) {  // xh = [emb, z, h]
            float *row = xh + (size_t)b * (I + H);
            memcpy(row, emb + (size_t)b * E, (size_t)E * sizeof(float));
            memcpy(row + E, zin + (size_t)b * D, (size_t)D * sizeof(float));
            memcpy(row + I, h + (size_t)b * H, (size_t)H * sizeof(float));
        }
        float *cn = a->cs + hrow_(a, t + 1, B) * H, *gates = a->gates + srow_(a, t) * 4 * H;
        const float *cp = a->cs + hrow_(a, t, B) * H;
        if (m->pack_Wt)
            lstm_forward_packed(hn, cn, gates, xh, I + H, cp, m->pack_Wt, p->lstm_b, n, I, H);
        else
            lstm_forward_xh(hn, cn, gates, xh, I + H, cp, p->lstm_W, p->lstm_b, n, I, H);
        if (after) attend_forward_(m, t, hn, B, n, sample);
    }

    // Dropout on h, then the deep output over all steps at once.
    const size_t TBH = (size_t)N * H;
    const float *h1 = a->hs + (size_t)B * H;
    if (c->dropout > 0.0f) {
        if (train) {
            for (size_t i = 0; i < TBH; i++) a->hd[i] = h1[i] * a->dmask[i];  // draw_row_streams_
        } else {
            for (size_t i = 0; i < TBH; i++) a->dmask[i] = 1.0f;
            memcpy(a->hd, h1, TBH * sizeof(float));
        }
    }
    const float *hd = c->dropout > 0.0f ? a->hd : h1;
    const int TB = N;  // the rows of all steps
    // o = emb (already there) + hd L_h^T + z L_z^T
    gemm(false, true, TB, E, H, 1.0f, hd, H, p->L_h, H, 1.0f, a->o, E);
    gemm(false, true, TB, E, D, 1.0f, a->z, D, p->L_z, D, 1.0f, a->o, E);
    float *logits = a->dlogits;  // used as logits here; backward overwrites it
    linear_forward(logits, a->o, p->L_o, p->b_o, TB, E, V);
    double ce = crossentropy_forward(a->losses, a->probs, logits, a->target, TB, V);

    // Doubly stochastic regulariser over each caption's own steps.
    double ds = 0.0;
    for (int b = 0; b < B; b++)
        for (int l = 0; l < L; l++) {
            double s = 0.0;
            for (int t = 0; t < a->steps[b]; t++) s += a->alpha[(srow_(a, t) + b) * L + l];
            ds += (1.0 - s) * (1.0 - s);
        }
    ds *= c->lambda;

    double ntok = 0.0, reward = 0.0, extra = 0.0;
    for (int b = 0; b < B; b++) {
        double r = 0.0;
        for (int t = 0; t < a->steps[b]; t++) r -= a->losses[srow_(a, t) + b];
        a->reward[b] = (float)r;
        reward += r;
        ntok += a->steps[b];
    }
    reward /= B;
    m->sample_logp = 0.0;
    if (sample) {
        float base = m->baseline_set ? m->baseline : (float)reward;
        for (int b = 0; b < B; b++) {
            double adv = a->reward[b] - base, lp = 0.0, ent = 0.0;
            for (int t = 0; t < a->steps[b]; t++) {
                const float *al = a->alpha + (srow_(a, t) + b) * L;
                lp += log(fmax(al[a->sample[srow_(a, t) + b]], 1e-30));
                for (int l = 0; l < L; l++)
                    if (al[l] > 0) ent -= al[l] * log(al[l]);
            }
            extra += -adv * lp - c->entropy_weight * ent;
            m->sample_logp += lp;
        }
    }
    out->ce = ce / B;
    out->ds = ds / B;
    out->tokens = ntok;
    out->reward = reward;
    out->loss = (ce + ds + extra) / B;
}

// Backward of attend_forward_ for step t: from dz_t (complete) to dq (B, H) (accumulated),
// the attention's and the gate's parameters, and the annotations (a->dannot, a->dprep).
// Rows 0..n-1 (the step's active rows, as in the forward).
static void attend_backward_(SatModel *m, int t, int n, const float *q, float *dq, float base,
                             int sample) {
    const SatConfig *c = &m->cfg;
    SatActs *a = &m->a;
    SatParams *p = &m->p, *g = &m->g;
    const int B = m->Bb, L = sat_L(c), D = sat_D(c), H = c->H, nb = nbeta_(c);
    const size_t cache = attn_step_cache_floats(&c->attn, B, L);
    const float invB = 1.0f / (float)B;
    const size_t r0 = srow_(a, t);
    const float *ctx = a->ctx + r0 * D;
    const float *alpha = a->alpha + r0 * L;
    const float *beta = a->beta + r0 * nb;
    const float *dz = a->dz + r0 * D;
    // z = beta * ctx
    for (int b = 0; b < n; b++) {
        const float *cr = ctx + (size_t)b * D, *zr = dz + (size_t)b * D;
        const float *br = beta + (size_t)b * nb;
        float *dcr = a->dctx + (size_t)b * D, *dbr = a->dbeta + (size_t)b * nb;
        if (nb == 1) {
            float s = 0.0f;
            for (int d = 0; d < D; d++) {
                s += zr[d] * cr[d];
                dcr[d] = zr[d] * br[0];
            }
            dbr[0] = s * br[0] * (1.0f - br[0]);
        } else {
            for (int d = 0; d < D; d++) {
                dcr[d] = zr[d] * br[d];
                dbr[d] = zr[d] * cr[d] * br[d] * (1.0f - br[d]);
            }
        }
    }
    linear_backward(dq, g->W_beta, g->b_beta, a->dbeta, q, p->W_beta, n, H, nb);
    // dalpha: doubly stochastic term, plus REINFORCE and entropy for hard attention
    for (int b = 0; b < n; b++) {
        float *dar = a->dalpha + (size_t)b * L;
        if (t >= a->steps[b]) {
            memset(dar, 0, (size_t)L * sizeof(float));
            continue;
        }
        memcpy(dar, a->dstoch + (size_t)b * L, (size_t)L * sizeof(float));
        if (sample) {
            const float *al = alpha + (size_t)b * L;
            int s = a->sample[r0 + b];
            float adv = a->reward[b] - base;
            dar[s] += -adv / fmaxf(al[s], 1e-30f) * invB;
            for (int l = 0; l < L; l++)
                if (al[l] > 0) dar[l] += c->entropy_weight * (logf(al[l]) + 1.0f) * invB;
        }
    }
    // With features the annotations are data: their gradient is not computed.
    float *dannot = c->feat_L > 0 && !m->annot_grad ? NULL : a->dannot;
    if (sample && dannot) {
        // ctx row = a_{s}: its gradient goes to that annotation; no path through alpha.
        for (int b = 0; b < n; b++) {
            float *dst = a->dannot + ((size_t)b * L + a->sample[r0 + b]) * D;
            const float *src = a->dctx + (size_t)b * D;
            for (int d = 0; d < D; d++) dst[d] += src[d];
        }
    }
    attn_backward(dannot, a->dprep, dq, &g->attn, sample ? a->zeros : a->dctx, a->dalpha,
                  a->acache + t * cache, a->prep, a->annot, q, NULL, &p->attn, &c->attn, t, n, L);
}

// Zeroes the gradients backward_decoder_ accumulates into.
static void zero_decoder_grads_(SatModel *m) {
    const SatConfig *c = &m->cfg;
    SatActs *a = &m->a;
    const int B = m->Bb, T = m->Tb, TB = a->off[T];
    const int L = sat_L(c), D = sat_D(c), H = c->H;
    const size_t prepn = attn_prep_floats(&c->attn, B, L);
    memset(a->dlogits, 0, (size_t)TB * c->V * sizeof(float));
    if (c->feat_L == 0 || m->annot_grad) memset(a->dannot, 0, (size_t)B * L * D * sizeof(float));
    if (prepn) memset(a->dprep, 0, prepn * sizeof(float));
    memset(a->dhs, 0, (size_t)(B + TB) * H * sizeof(float));
    memset(a->dcs + (size_t)(T & 1) * B * H, 0, (size_t)B * H * sizeof(float));  // dc_T
    memset(a->dz, 0, (size_t)TB * D * sizeof(float));
    memset(a->do_, 0, (size_t)TB * c->E * sizeof(float));
    memset(a->zeros, 0, (size_t)B * D * sizeof(float));
}

// The output layer, for the rows of all steps at once: from the cross-entropy (each row
// counts 1/B) to do_, dz and the gradients of h's and z's projections, and into dh_{t+1}.
static void backward_output_(SatModel *m) {
    const SatConfig *c = &m->cfg;
    SatActs *a = &m->a;
    SatParams *p = &m->p, *g = &m->g;
    const int B = m->Bb, TB = a->off[m->Tb];
    const int D = sat_D(c), E = c->E, H = c->H, V = c->V;
    const float invB = 1.0f / (float)B;
    for (int i = 0; i < TB; i++) a->losses[i] = invB;  // reuse as dlosses
    crossentropy_backward(a->dlogits, a->losses, a->probs, a->target, TB, V);
    // logits = o L_o^T + b_o
    linear_backward(a->do_, g->L_o, g->b_o, a->dlogits, a->o, p->L_o, TB, E, V);
    // o = emb + hd L_h^T + z L_z^T. demb is do_ itself: the embedding gradient starts as
    // do_ and takes the LSTM input gradients below (do_ is not read after these GEMMs).
    // dh_{t+1} += dhd * dropout mask; without dropout straight into dh (zeros until now).
    float *dh1 = a->dhs + (size_t)B * H;
    if (c->dropout > 0.0f) {
        gemm(false, false, TB, H, E, 1.0f, a->do_, E, p->L_h, H, 0.0f, a->dhd, H);
        for (size_t i = 0; i < (size_t)TB * H; i++) dh1[i] += a->dhd[i] * a->dmask[i];
    } else {
        gemm(false, false, TB, H, E, 1.0f, a->do_, E, p->L_h, H, 1.0f, dh1, H);
    }
    const float *hd = c->dropout > 0.0f ? a->hd : a->hs + (size_t)B * H;
    gemm(true, false, E, H, TB, 1.0f, a->do_, E, hd, H, 1.0f, g->L_h, H);
    gemm(false, false, TB, D, E, 1.0f, a->do_, E, p->L_z, D, 0.0f, a->dz, D);
    gemm(true, false, E, D, TB, 1.0f, a->do_, E, a->z, D, 1.0f, g->L_z, D);
}

static double mean_reward_(const SatActs *a, int B) {
    double mean_r = 0.0;
    for (int b = 0; b < B; b++) mean_r += a->reward[b];
    return mean_r / B;
}

// The doubly stochastic term's gradient, -2 lambda (1 - sum_u alpha_u) / B, does not
// depend on t (the sum runs over the row's whole caption): computed once per (b, l).
static void doubly_stochastic_grad_(SatModel *m) {
    SatActs *a = &m->a;
    const int B = m->Bb, L = sat_L(&m->cfg);
    const float invB = 1.0f / (float)B;
    for (int b = 0; b < B; b++)
        for (int l = 0; l < L; l++) {
            double s = 0.0;
            for (int u = 0; u < a->steps[b]; u++) s += a->alpha[(srow_(a, u) + b) * L + l];
            a->dstoch[(size_t)b * L + l] = (float)(-2.0 * m->cfg.lambda * (1.0 - s)) * invB;
        }
}

// The LSTM of step t (its n active rows): dh_t, dc_t from dh_{t+1}, dc_{t+1}; its gate
// gradients stay in step t's gates slot; its input's gradient goes to the embedding's
// and to the context's (dz of the step that fed it).
static void backward_lstm_step_(SatModel *m, int t, int n) {
    const SatConfig *c = &m->cfg;
    SatActs *a = &m->a;
    SatParams *p = &m->p, *g = &m->g;
    const int B = m->Bb, D = sat_D(c), E = c->E, H = c->H, I = E + D;
    const int after = c->query == SAT_QUERY_CURRENT;
    memset(a->dx, 0, (size_t)n * I * sizeof(float));
    float *dc_prev = a->dcs + (size_t)(t & 1) * B * H;
    memset(dc_prev, 0, (size_t)B * H * sizeof(float));
    float *dh_prev = a->dhs + hrow_(a, t, B) * H;
    const float *dh = a->dhs + hrow_(a, t + 1, B) * H;
    const float *dc = a->dcs + (size_t)((t + 1) & 1) * B * H;
    const float *gates = a->gates + srow_(a, t) * 4 * H, *xh = a->xh + srow_(a, t) * (I + H);
    const float *cp = a->cs + hrow_(a, t, B) * H, *cn = a->cs + hrow_(a, t + 1, B) * H;
    if (m->pack_Wn)
        lstm_backward_packed(a->dx, dh_prev, dc_prev, g->lstm_b, dh, dc, gates, xh, cp, cn,
                             m->pack_Wn, a->lstm_scratch, n, I, H);
    else
        lstm_backward(a->dx, dh_prev, dc_prev, NULL, g->lstm_b, dh, dc, gates, xh, cp, cn,
                      p->lstm_W, a->lstm_scratch, n, I, H);
    // Step t's gates are not read again: their slot keeps its gate gradients for the
    // one weight-gradient GEMM over all steps after the loop.
    memcpy(a->gates + srow_(a, t) * 4 * H, a->lstm_scratch, (size_t)n * 4 * H * sizeof(float));
    float *demb = a->demb + srow_(a, t) * E;
    float *dzin = !after ? a->dz + srow_(a, t) * D : t > 0 ? a->dz + srow_(a, t - 1) * D : NULL;
    for (int b = 0; b < n; b++) {
        const float *dxr = a->dx + (size_t)b * I;
        for (int e = 0; e < E; e++) demb[(size_t)b * E + e] += dxr[e];
        if (dzin)
            for (int d = 0; d < D; d++) dzin[(size_t)b * D + d] += dxr[E + d];
    }
}

// h0 = tanh(W_h0 mean + b), c0 likewise: their weights' gradients, and the mean
// annotation's, spread over the L annotations (dannot NULL: features, none wanted).
static void backward_initial_state_(SatModel *m, float *dannot) {
    const SatConfig *c = &m->cfg;
    SatActs *a = &m->a;
    SatParams *p = &m->p, *g = &m->g;
    const int B = m->Bb, L = sat_L(c), D = sat_D(c), H = c->H;
    // gates (T, B, 4H) are spent: scratch for dh0 and dc0. dc_0 is dcs row 0.
    float *dh0 = a->gates, *dc0 = a->gates + (size_t)B * H;
    for (int i = 0; i < B * H; i++) {
        float hv = a->hs[i], cv = a->cs[i];
        dh0[i] = a->dhs[i] * (1.0f - hv * hv);
        dc0[i] = a->dcs[i] * (1.0f - cv * cv);
    }
    float *dmean = dannot ? a->dctx : NULL;  // (B, D)
    if (dmean) memset(dmean, 0, (size_t)B * D * sizeof(float));
    linear_backward(dmean, g->W_h0, g->b_h0, dh0, a->mean_a, p->W_h0, B, D, H);
    linear_backward(dmean, g->W_c0, g->b_c0, dc0, a->mean_a, p->W_c0, B, D, H);
    for (int b = 0; dannot && b < B; b++)
        for (int l = 0; l < L; l++) {
            float *dr = dannot + ((size_t)b * L + l) * D;
            const float *mr = dmean + (size_t)b * D;
            for (int d = 0; d < D; d++) dr[d] += mr[d] * (1.0f / (float)L);
        }
}

// Hard attention's baseline: the first batch's mean reward, then a moving average.
static void update_baseline_(SatModel *m) {
    float mean_r = (float)mean_reward_(&m->a, m->Bb);
    if (!m->baseline_set) {
        m->baseline = mean_r;
        m->baseline_set = 1;
    } else {
        m->baseline = m->cfg.baseline_decay * m->baseline + (1.0f - m->cfg.baseline_decay) * mean_r;
    }
}

// sat_backward up to the annotations' gradient: every parameter's gradient but the CNN's
// is complete on return (and the hard baseline updated).
static void backward_decoder_(SatModel *m) {
    const SatConfig *c = &m->cfg;
    SatActs *a = &m->a;
    SatParams *g = &m->g;
    const int B = m->Bb, T = m->Tb, TB = a->off[T];  // TB: the rows of all steps
    const int L = sat_L(c), I = c->E + sat_D(c), H = c->H;
    const int sample = c->hard && a->sample[0] >= 0;

    zero_decoder_grads_(m);
    backward_output_(m);
    // Hard attention's advantages are taken against the baseline before this batch.
    float base = m->baseline_set ? m->baseline : sample ? (float)mean_reward_(a, B) : 0.0f;
    doubly_stochastic_grad_(m);
    const int after = c->query == SAT_QUERY_CURRENT;
    for (int t = T - 1; t >= 0; t--) {
        // query previous: z_t fed step t's LSTM, whose h_t queried; current: the LSTM of
        // step t read z_{t-1}, and h_{t+1} queried (its gradient is whole once the
        // attention's part is in, before the LSTM step's backward).
        const int n = a->active[t];
        if (after) attend_backward_(m, t, n, a->hs + hrow_(a, t + 1, B) * H,
                                    a->dhs + hrow_(a, t + 1, B) * H, base, sample);
        backward_lstm_step_(m, t, n);
        if (!after) attend_backward_(m, t, n, a->hs + hrow_(a, t, B) * H,
                                     a->dhs + hrow_(a, t, B) * H, base, sample);
    }
    // dW_lstm (4H, I + H) += dgates^T @ xh over the rows of all steps at once.
    gemm(true, false, 4 * H, I + H, TB, 1.0f, a->gates, 4 * H, a->xh, I + H, 1.0f, g->lstm_W,
         I + H);
    embedding_backward(g->embed, a->demb, a->in_tok, TB, c->E);
    float *dannot = c->feat_L > 0 && !m->annot_grad ? NULL : a->dannot;  // features: no gradient wanted
    attn_prepare_backward(dannot, &g->attn, a->dprep, a->annot, &m->p.attn, &c->attn, B, L);
    backward_initial_state_(m, dannot);
    if (sample) update_baseline_(m);
}

// The CNN's gradient from the annotations' (none with features).
static void backward_encoder_(SatModel *m) {
    if (m->cfg.feat_L > 0) return;
    cnn_backward(&m->g.cnn, NULL, m->a.dannot, &m->cnn_ws, m->images, &m->p.cnn, m->Bb);
}

void sat_backward(SatModel *m) {
    backward_decoder_(m);
    backward_encoder_(m);
}

size_t sat_encoder_grad_floats(const SatModel *m) {
    return m->cfg.feat_L > 0 ? 0 : (size_t)(m->g.W_h0 - m->grads.data);
}

// ---------------------------------------------------------------------------------------
// Data-parallel training step

typedef struct {
    SatModel *m;
    const float *images;
    const int *words, *lens;
    int n, first;  // rows, and the index of the first in the whole batch
    uint64_t seed;
    SatLoss loss;
} StepJob;

// order (B): the rows by descending lens, ties in their given order (an insertion sort:
// a batch is a few dozen rows).
static void order_by_length_(int *order, const int *lens, int B) {
    for (int i = 0; i < B; i++) {
        int k = i;
        while (k > 0 && lens[order[k - 1]] < lens[i]) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = i;
    }
}

typedef struct {
    SatModel *m;
    int part, parts;
} PackJob;

// Part j->part of j->parts of every pack of pack_step_weights_ (packed_pack_part).
static void *pack_job_run(void *arg) {
    PackJob *j = arg;
    SatModel *m = j->m;
    const int K = m->cfg.E + sat_D(&m->cfg) + m->cfg.H;
    packed_pack_part(&m->own_Wt, true, m->p.lstm_W, K, j->part, j->parts);
    packed_pack_part(&m->own_Wn, false, m->p.lstm_W, K, j->part, j->parts);
    if (m->p.attn.W_q) {
        packed_pack_part(&m->own_Wq_t, true, m->p.attn.W_q, m->cfg.H, j->part, j->parts);
        packed_pack_part(&m->own_Wq_n, false, m->p.attn.W_q, m->cfg.H, j->part, j->parts);
    }
    return NULL;
}

// Packs m's step weights for a training step: the LSTM's W^T and W into m->own_Wt and
// m->own_Wn and, with an additive score, the attention's W_q^T and W_q into m->own_Wq_t and
// m->own_Wq_n; with threads >= 2 two threads each pack half of every one.
static void pack_step_weights_(SatModel *m, int threads) {
    const SatConfig *c = &m->cfg;
    const int H = c->H, K = c->E + sat_D(c) + H, A = c->attn.A;
    if (!m->own_packs) {
        packed_alloc(&m->own_Wt, K, 4 * H);
        packed_alloc(&m->own_Wn, 4 * H, K);
        if (m->p.attn.W_q) {
            packed_alloc(&m->own_Wq_t, H, A);
            packed_alloc(&m->own_Wq_n, A, H);
        }
        m->own_packs = 1;
    }
    pthread_t th;
    PackJob jobs[2] = {{m, 0, 2}, {m, 1, 2}};
    if (threads >= 2 && pthread_create(&th, NULL, pack_job_run, &jobs[1]) == 0) {
        pack_job_run(&jobs[0]);
        pthread_join(th, NULL);
    } else {
        jobs[0].parts = 1;
        pack_job_run(&jobs[0]);
    }
}

// Lends w the packs of `from` (pack_step_weights_'s) for a step, or with from NULL takes
// them back.
static void lend_packs_(SatModel *w, const SatModel *from) {
    const int q = from && from->p.attn.W_q;
    w->pack_Wt = from ? &from->own_Wt : NULL;
    w->pack_Wn = from ? &from->own_Wn : NULL;
    w->p.attn.W_q_t = q ? &from->own_Wq_t : NULL;
    w->p.attn.W_q_n = q ? &from->own_Wq_n : NULL;
}

// sat_forward of B rows in descending order of caption length (ties in their given order),
// so that step t runs only the captions still going; each row keeps its own noise stream
// (m->row_ids) and the backward needs no order but the activations'.
static void forward_sorted_(SatModel *m, SatLoss *out, const float *images, const int *words,
                            const int *lens, int B, uint64_t seed, int first) {
    CHECK(!m->annot_grad, "sat_forward_backward: annotation gradients would be in sorted order");
    const size_t per = sat_input_floats(&m->cfg);
    const int ML = m->cfg.max_len;
    CHECK(m->a.B >= B && B >= 1, "batch %d, activations for %d", B, m->a.B);
    // Annotations go straight into the activations (sat_forward then copies nothing);
    // images into a sorted copy for the CNN.
    const int features = m->cfg.feat_L > 0;
    if (m->sorted_cap < B) {
        free(m->sorted_images);
        free(m->sorted_ints);
        m->sorted_images = features ? NULL : xmalloc((size_t)B * per * sizeof(float));
        m->sorted_ints = xmalloc((size_t)B * (ML + 3) * sizeof(int));
        m->sorted_cap = B;
    }
    float *sorted = features ? m->a.annot : m->sorted_images;
    int *order = m->sorted_ints, *ids = order + B, *slens = ids + B, *swords = slens + B;
    order_by_length_(order, lens, B);
    for (int k = 0; k < B; k++) {
        const int b = order[k];
        ids[k] = first + b;
        slens[k] = lens[b];
        memcpy(swords + (size_t)k * ML, words + (size_t)b * ML, (size_t)ML * sizeof(int));
        memcpy(sorted + (size_t)k * per, images + (size_t)b * per, per * sizeof(float));
    }
    m->row_ids = ids;
    sat_forward(m, out, sorted, swords, slens, B, 1, seed, first);
    m->row_ids = NULL;
}

void sat_forward_backward(SatLoss *out, SatModel *m, const float *images, const int *words,
                          const int *lens, int B, uint64_t seed, int first) {
    const int own = !m->pack_Wt;  // else the parallel step packed them for its workers
    if (own) {
        pack_step_weights_(m, 1);
        lend_packs_(m, m);
    }
    forward_sorted_(m, out, images, words, lens, B, seed, first);
    block_zero(&m->grads);
    if (isfinite(out->loss)) sat_backward(m);
    if (own) lend_packs_(m, NULL);
}

static void *step_job_forward(void *arg) {
    StepJob *j = arg;
    forward_sorted_(j->m, &j->loss, j->images, j->words, j->lens, j->n, j->seed, j->first);
    return NULL;
}

static void *step_job_backward(void *arg) {
    StepJob *j = arg;
    block_zero(&j->m->grads);
    if (isfinite(j->loss.loss)) sat_backward(j->m);
    return NULL;
}

static void *step_job_run(void *arg) {
    step_job_forward(arg);
    return step_job_backward(arg);
}

static void *step_job_decoder(void *arg) {
    StepJob *j = arg;
    block_zero(&j->m->grads);
    if (isfinite(j->loss.loss)) backward_decoder_(j->m);
    return NULL;
}

static void *step_job_encoder(void *arg) {
    StepJob *j = arg;
    if (isfinite(j->loss.loss)) backward_encoder_(j->m);
    return NULL;
}

// model->grads [lo, hi) = the jobs' gradients there, weighted by their float shares of nb
// and added in job order, in slices on `used` threads (each element summed as one thread
// would).
static void combine_grads_(SatModel *model, const StepJob *jobs, int used, int nb, size_t lo,
                           size_t hi) {
    const float *srcs[64];
    float shares[64];
    for (int k = 0; k < used; k++) {
        srcs[k] = jobs[k].m->grads.data;
        shares[k] = (float)jobs[k].n / (float)nb;
    }
    grad_sum_threads(model->grads.data, srcs, shares, used, lo, hi, used);
}

// fn on each job, jobs 1 .. used - 1 on threads of their own, job 0 on the caller's.
static void run_jobs_(void *(*fn)(void *), StepJob *jobs, int used) {
    pthread_t th[64];
    for (int k = 1; k < used; k++)
        CHECK(pthread_create(&th[k], NULL, fn, &jobs[k]) == 0, "pthread_create");
    fn(&jobs[0]);
    for (int k = 1; k < used; k++) pthread_join(th[k], NULL);
}

int sat_first_hard_step(const SatModel *m) { return m->cfg.hard && !m->baseline_set; }

// The first hard-attention step over several workers or processes: every share's REINFORCE
// term takes the whole batch's mean reward as its baseline, as one worker's does (sat.h).
// The shares' means, weighted by their float shares and added in order (then over the
// processes by across), give the same bits however the batch is split into shares of the
// same sizes. Each worker starts its backward from that baseline (already set: its update
// is then the decayed one, which leaves the mean where it is), and each share's loss is
// moved to it: the loss is linear in the baseline with slope sum_b log p(s_b) / n.
static int first_baseline_(StepJob *jobs, int used, int nb, const SatBatchSum *across) {
    double mean = 0.0;
    for (int k = 0; k < used; k++)
        mean += (double)((float)jobs[k].n / (float)nb) * jobs[k].loss.reward;
    if (across && across->sum && across->sum(across->ctx, &mean)) return -1;
    const float base = (float)mean;
    for (int k = 0; k < used; k++) {
        SatModel *w = jobs[k].m;
        SatLoss *l = &jobs[k].loss;
        l->loss += ((double)base - (double)(float)l->reward) * w->sample_logp / jobs[k].n;
        w->baseline = base;
        w->baseline_set = 1;
    }
    return 0;
}

// The workers' forwards and backwards, and model->grads their share-weighted sum: in one
// pass, or forwards first when the first hard step's baseline needs every share's reward,
// or with the decoder's gradient handed to across->decoder_done before the CNN's backward.
static int step_phases_(SatModel *model, StepJob *jobs, int used, int nb,
                        const SatBatchSum *across) {
    const size_t enc = sat_encoder_grad_floats(model), all = model->grads.numel;
    const int overlap = across && across->decoder_done && enc > 0;
    const int first_hard = sat_first_hard_step(model) && (used > 1 || across);
    if (overlap) {
        // The decoder's gradient, complete before the CNN's backward, is handed over (to be
        // summed over the processes) while the CNN's backward runs.
        run_jobs_(step_job_forward, jobs, used);
        if (first_hard && first_baseline_(jobs, used, nb, across)) return -1;
        run_jobs_(step_job_decoder, jobs, used);
        combine_grads_(model, jobs, used, nb, enc, all);
        if (across->decoder_done(across->ctx, model->grads.data, enc, all)) return -1;
        run_jobs_(step_job_encoder, jobs, used);
        combine_grads_(model, jobs, used, nb, 0, enc);
    } else {
        if (first_hard) {  // the baseline needs every share's reward before any backward
            run_jobs_(step_job_forward, jobs, used);
            if (first_baseline_(jobs, used, nb, across)) return -1;
            run_jobs_(step_job_backward, jobs, used);
        } else {
            run_jobs_(step_job_run, jobs, used);
        }
        combine_grads_(model, jobs, used, nb, 0, all);
    }
    return 0;
}

void sat_forward_backward_parallel(SatLoss *out, SatModel *model, SatModel *workers,
                                   int n_workers, const float *images, const int *words,
                                   const int *lens, int nb, uint64_t seed) {
    CHECK(sat_forward_backward_parallel_from(out, model, workers, n_workers, 0, images, words,
                                             lens, nb, seed, NULL) == 0,
          "a step without processes to sum over failed");
}

int sat_forward_backward_parallel_from(SatLoss *out, SatModel *model, SatModel *workers,
                                       int n_workers, int first, const float *images,
                                       const int *words, const int *lens, int nb, uint64_t seed,
                                       const SatBatchSum *across) {
    const size_t per = sat_input_floats(&model->cfg);
    const int ML = model->cfg.max_len;
    StepJob jobs[64];
    CHECK(n_workers <= 64, "workers %d", n_workers);
    int start = 0, used = 0;
    for (int w = 0; w < n_workers; w++) {
        int n = nb / n_workers + (w < nb % n_workers);
        if (n == 0) continue;
        SatModel *r = &workers[w];
        r->baseline = model->baseline;
        r->baseline_set = model->baseline_set;
        jobs[used] = (StepJob){.m = r, .images = images + (size_t)start * per,
                               .words = words + (size_t)start * ML, .lens = lens + start, .n = n,
                               .first = first + start, .seed = seed};
        start += n;
        used++;
    }
    // The step weights packed once for all workers.
    pack_step_weights_(model, used);
    for (int k = 0; k < used; k++) lend_packs_(jobs[k].m, model);
    const int status = step_phases_(model, jobs, used, nb, across);
    for (int k = 0; k < used; k++) lend_packs_(jobs[k].m, NULL);
    if (status) return -1;
    memset(out, 0, sizeof *out);
    double base = 0.0;
    int base_set = 0;
    for (int k = 0; k < used; k++) {
        const float share = (float)jobs[k].n / (float)nb;
        const SatLoss *l = &jobs[k].loss;
        out->loss += share * l->loss;
        out->ce += share * l->ce;
        out->ds += share * l->ds;
        out->reward += share * l->reward;
        out->tokens += l->tokens;
        base += share * jobs[k].m->baseline;
        base_set |= jobs[k].m->baseline_set;
    }
    model->baseline = (float)base;
    model->baseline_set = base_set;
    return 0;
}

// ---------------------------------------------------------------------------------------
// Decoding

// One buffer of a decoding context: where its pointer goes and how many floats it holds.
typedef struct {
    float **dst;
    size_t n;
} DecodeBuffer;

// The context's float buffers (each 16-float aligned, zeroed) in one allocation, and the
// rows' image indices; *mean gets the (B, D) mean annotations' buffer.
static void decode_buffers_alloc_(SatDecodeCtx *d, const SatConfig *c, int B, int R, float **mean) {
    const int L = sat_L(c), D = sat_D(c), E = c->E, H = c->H, V = c->V, nb = nbeta_(c);
    const int I = E + D, TS = c->max_len + 1;
    const size_t prep1 = attn_prep_floats(&c->attn, 1, L);
    CHECK(attn_prep_floats(&c->attn, B, L) == (size_t)B * prep1, "attention prep not per image");
    const size_t cache = attn_step_cache_floats(&c->attn, R, L);
    const DecodeBuffer bufs[] = {
        {&d->annot, (size_t)B * L * D}, {&d->prep, (size_t)B * prep1 + 1},
        {&d->rk, (size_t)R * L * D},    {&d->rp, (size_t)R * prep1 + 1},
        {&d->h, (size_t)R * H},         {&d->c, (size_t)R * H},
        {&d->h2, (size_t)R * H},        {&d->c2, (size_t)R * H},
        {&d->ctx, (size_t)R * D},       {&d->alpha, (size_t)R * L},
        {&d->cache, cache + 1},         {&d->beta, (size_t)R * nb},
        {&d->z, (size_t)R * D},         {&d->emb, (size_t)R * E},
        {&d->xin, (size_t)R * I},       {&d->xh, (size_t)R * (I + H)},
        {&d->gates, (size_t)R * 4 * H}, {&d->o, (size_t)R * E},
        {&d->logits, (size_t)R * V},    {&d->alpha_hist, (size_t)TS * R * L},
        {mean, (size_t)B * D},          {&d->hn, (size_t)R * H},
        {&d->cn, (size_t)R * H},        {&d->zp, (size_t)R * D},  // zero: the first step's z_{-1}
        {&d->zp2, (size_t)R * D}};
    const int n = (int)(sizeof bufs / sizeof bufs[0]);
    size_t total = 0;
    for (int i = 0; i < n; i++) total += (bufs[i].n + 15) & ~(size_t)15;
    d->mem = xcalloc(total, sizeof(float));
    float *q = d->mem;
    for (int i = 0; i < n; i++) {
        *bufs[i].dst = q;
        q += (bufs[i].n + 15) & ~(size_t)15;
    }
    d->ints = xcalloc((size_t)2 * R, sizeof(int));
    d->row_image = d->ints;
    d->row_image2 = d->ints + R;
}

void sat_decode_ctx_init(SatDecodeCtx *d, SatModel *m, const float *images, int B, int beam) {
    const SatConfig *c = &m->cfg;
    const int L = sat_L(c), D = sat_D(c), H = c->H;
    memset(d, 0, sizeof *d);
    d->m = m;
    d->B = B;
    d->R = B * beam;
    float *mean;
    decode_buffers_alloc_(d, c, B, d->R, &mean);
    // Encode in chunks that fit the model's CNN workspace.
    CHECK(m->acts_block.data, "sat_alloc_acts before decoding");
    const size_t per = sat_input_floats(c);
    const int chunk = m->a.B;
    for (int b0 = 0; b0 < B; b0 += chunk) {
        int n = B - b0 < chunk ? B - b0 : chunk;
        if (c->feat_L > 0)
            memcpy(d->annot + (size_t)b0 * L * D, images + (size_t)b0 * per, (size_t)n * per * sizeof(float));
        else
            cnn_forward(d->annot + (size_t)b0 * L * D, &m->cnn_ws, images + (size_t)b0 * per,
                        &m->p.cnn, n);
    }
    mean_annot_(mean, d->annot, B, L, D);
    // Initial states of the images go in h/c rows 0..B-1 (the first step's parents).
    init_state_(d->h, d->c, mean, &m->p, B, D, H);
    attn_prepare(d->prep, d->annot, &m->p.attn, &c->attn, B, L);
    for (int b = 0; b < B; b++) d->row_image[b] = b;
}

void sat_decode_ctx_free(SatDecodeCtx *d) {
    free(d->mem);
    free(d->ints);
    memset(d, 0, sizeof *d);
}

// Attention, its history and the gate z for rows 0..n-1 with queries q (n, H).
static void attend_rows_(SatDecodeCtx *d, int n, const float *q) {
    const SatConfig *c = &d->m->cfg;
    const SatParams *p = &d->m->p;
    const int L = sat_L(c), D = sat_D(c), H = c->H, nb = nbeta_(c);
    attn_forward(d->ctx, d->alpha, d->cache, d->rp, d->rk, q, NULL, &p->attn, &c->attn, d->t, n,
                 L);
    memcpy(d->alpha_hist + (size_t)d->t * d->R * L, d->alpha, (size_t)n * L * sizeof(float));
    gate_forward_(d->beta, d->z, q, d->ctx, p, n, H, D, nb);
}

void sat_beam_step(void *vctx, int n, const int *parent, const int *token, float *logprobs) {
    SatDecodeCtx *d = vctx;
    SatModel *m = d->m;
    const SatConfig *c = &m->cfg;
    const SatParams *p = &m->p;
    const int L = sat_L(c), D = sat_D(c), E = c->E, H = c->H, V = c->V;
    const int I = E + D;
    const size_t prep1 = attn_prep_floats(&c->attn, 1, L);
    CHECK(n >= 1 && n <= d->R, "rows %d, capacity %d", n, d->R);
    CHECK(d->t <= c->max_len, "step %d past the limit", d->t);
    const int after = c->query == SAT_QUERY_CURRENT;
    // Gather the parents' states, images, keys.
    for (int r = 0; r < n; r++) {
        int q = parent[r];
        int img = d->row_image[q];
        d->row_image2[r] = img;
        memcpy(d->h2 + (size_t)r * H, d->h + (size_t)q * H, (size_t)H * sizeof(float));
        memcpy(d->c2 + (size_t)r * H, d->c + (size_t)q * H, (size_t)H * sizeof(float));
        if (after) memcpy(d->zp2 + (size_t)r * D, d->zp + (size_t)q * D, (size_t)D * sizeof(float));
        memcpy(d->rk + (size_t)r * L * D, d->annot + (size_t)img * L * D, (size_t)L * D * sizeof(float));
        if (prep1)
            memcpy(d->rp + (size_t)r * prep1, d->prep + (size_t)img * prep1, prep1 * sizeof(float));
    }
    // The same order as sat_forward: query previous attends with the parents' h, query
    // current with the new state after reading the token and the parents' z.
    if (!after) attend_rows_(d, n, d->h2);
    embedding_forward(d->emb, token, p->embed, n, E);
    const float *zin = after ? d->zp2 : d->z;
    for (int r = 0; r < n; r++) {
        memcpy(d->xin + (size_t)r * I, d->emb + (size_t)r * E, (size_t)E * sizeof(float));
        memcpy(d->xin + (size_t)r * I + E, zin + (size_t)r * D, (size_t)D * sizeof(float));
    }
    lstm_forward(d->hn, d->cn, d->gates, d->xh, d->xin, d->h2, d->c2, p->lstm_W, p->lstm_b, n, I,
                 H);
    if (after) attend_rows_(d, n, d->hn);
    memcpy(d->o, d->emb, (size_t)n * E * sizeof(float));
    gemm(false, true, n, E, H, 1.0f, d->hn, H, p->L_h, H, 1.0f, d->o, E);
    gemm(false, true, n, E, D, 1.0f, d->z, D, p->L_z, D, 1.0f, d->o, E);
    linear_forward(d->logits, d->o, p->L_o, p->b_o, n, E, V);
    for (int r = 0; r < n; r++) {
        const float *z = d->logits + (size_t)r * V;
        float *lp = logprobs + (size_t)r * V;
        float mx = z[0];
        for (int i = 1; i < V; i++) mx = z[i] > mx ? z[i] : mx;
        double s = 0.0;
        for (int i = 0; i < V; i++) s += exp((double)(z[i] - mx));
        float lse = mx + (float)log(s);
        for (int i = 0; i < V; i++) lp[i] = z[i] - lse;
        // Specials that never follow: <pad>, <start>.
        lp[VOCAB_PAD] = -1e9f;
        lp[VOCAB_START] = -1e9f;
    }
    // The new states become the rows of this call.
    float *t;
    t = d->h; d->h = d->hn; d->hn = t;
    t = d->c; d->c = d->cn; d->cn = t;
    if (after) {
        t = d->zp; d->zp = d->z; d->z = t;
    }
    int *ti = d->row_image; d->row_image = d->row_image2; d->row_image2 = ti;
    d->t++;
}

void sat_decode(SatModel *m, int *tokens, int *lens, float *alphas, const float *images, int B,
                int beam, float length_alpha) {
    const SatConfig *c = &m->cfg;
    const int L = sat_L(c), ML = c->max_len, TS = ML + 1;
    CHECK(beam >= 1 && B >= 1, "beam %d B %d", beam, B);
    SatDecodeCtx d;
    sat_decode_ctx_init(&d, m, images, B, beam);
    int *tok = xmalloc((size_t)B * TS * sizeof(int) * 2);
    int *rows = tok + (size_t)B * TS;
    int *ln = xmalloc((size_t)B * sizeof(int));
    float *sc = xmalloc((size_t)B * sizeof(float));
    BeamConfig bc = {.beam = beam, .max_len = TS, .length_alpha = length_alpha,
                     .start_id = VOCAB_START, .end_id = VOCAB_END, .V = c->V};
    beam_search(tok, ln, sc, rows, B, &d, sat_beam_step, &bc);
    for (int b = 0; b < B; b++) {
        int n = ln[b] < ML ? ln[b] : ML;
        lens[b] = n;
        for (int k = 0; k < ML; k++) tokens[(size_t)b * ML + k] = k < n ? tok[(size_t)b * TS + k] : VOCAB_PAD;
        if (alphas)
            for (int k = 0; k < ML; k++) {
                float *dst = alphas + ((size_t)b * ML + k) * L;
                if (k < n)
                    memcpy(dst, d.alpha_hist + ((size_t)k * d.R + rows[(size_t)b * TS + k]) * L,
                           (size_t)L * sizeof(float));
                else
                    memset(dst, 0, (size_t)L * sizeof(float));
            }
    }
    free(tok);
    free(ln);
    free(sc);
    sat_decode_ctx_free(&d);
}
