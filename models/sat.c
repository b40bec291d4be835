#include "models/sat.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/activations.h"
#include "core/check.h"
#include "core/dims.h"
#include "core/gemm.h"
#include "seq/embedding.h"
#include "seq/linear.h"
#include "seq/loss.h"
#include "seq/lstm.h"
#include "seq/vocab.h"

// ---------------------------------------------------------------------------------------
// Parameters

void sat_params_layout(Block *b, SatParams *p, const SatConfig *c) {
    memset(p, 0, sizeof *p);
    if (c->feat_L == 0) cnn_register(&p->cnn, b, "enc", &c->cnn);
    const DecoderConfig dc = sat_decoder_config(c);
    decoder_params_layout(b, &p->dec, &dc);
}

void sat_init(SatModel *m, const SatConfig *cfg, Rng *rng) {
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    const SatConfig *c = &m->cfg;
    sat_params_layout(&m->params, &m->p, c);
    sat_params_layout(&m->grads, &m->g, c);
    sat_params_layout(&m->adam_m, &m->m, c);
    sat_params_layout(&m->adam_v, &m->v, c);
    block_alloc(&m->params);
    block_alloc(&m->grads);
    block_alloc(&m->adam_m);
    block_alloc(&m->adam_v);
    SatParams *p = &m->p;
    if (c->feat_L == 0) cnn_init(&p->cnn, rng);
    const DecoderConfig dc = sat_decoder_config(c);
    decoder_params_init(&p->dec, &dc, rng);
}

void sat_replica_init(SatModel *r, const SatModel *m) {
    memset(r, 0, sizeof *r);
    r->cfg = m->cfg;
    r->p = m->p;
    r->params = m->params;  // a copy of the descriptor: same data, never freed by r
    r->replica = 1;
    sat_params_layout(&r->grads, &r->g, &r->cfg);
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

int sat_check_sizes(const SatConfig *c, int B, Error *err) {
    const int64_t T = c->max_len + 1, L = sat_L(c), D = sat_D(c), E = c->E, H = c->H, V = c->V,
                  A = c->attn.A, nb = sat_gate_size(c);
    const bool feat = c->feat_L > 0;
    char l_name[128], d_name[96], t_name[64];
    if (feat) {
        snprintf(l_name, sizeof l_name, "annotation positions (from the feature cache)");
        snprintf(d_name, sizeof d_name, "annotation size (from the feature cache)");
    } else {
        char ch[64] = "";
        size_t k = 0;
        for (int i = 0; i < c->cnn.n_layers && k < sizeof ch; i++)
            k += (size_t)snprintf(ch + k, sizeof ch - k, "%s%d", i ? "," : "", c->cnn.channels[i]);
        snprintf(l_name, sizeof l_name, "annotation positions (from --image-size %d and --channels %s)",
                 c->image_size, ch);
        snprintf(d_name, sizeof d_name, "annotation size (the last --channels entry)");
    }
    snprintf(t_name, sizeof t_name, "steps (--max-len %d + 1)", c->max_len);
    const int64_t prep1 = (int64_t)attn_prep_floats(&c->attn, 1, 1);
    const int64_t cache1 = (int64_t)attn_step_cache_floats(&c->attn, 1, (int)L);
    const DimTerm Bt = {B, "--batch"}, Lt = {L, l_name}, Dt = {D, d_name}, Tt = {T, t_name},
                  Et = {E, "--embed"}, Ht = {H, "--hidden"}, Vt = {V, "vocabulary words"};
    // The attention's keys first: the product --attn-dim raises (issue 56's crash).
    DimTerm prep[] = {Bt, Lt, {prep1, prep1 > A ? "floats per position (2 x --attn-dim: keys and values)"
                                                : "--attn-dim"}};
    DimTerm annot[] = {Bt, Lt, Dt};
    DimTerm alpha[] = {Tt, Bt, Lt};
    DimTerm acache[] = {Tt, Bt, {cache1, "attention floats per image and step (from --attention, "
                                         "--attn-dim, --heads and the positions)"}};
    DimTerm ctx[] = {Tt, Bt, Dt};
    DimTerm xh[] = {Tt, Bt, {E + D + H, "LSTM input and state (--embed + annotation size + "
                                        "--hidden)"}};
    DimTerm gates[] = {Tt, Bt, {4 * H, "gate floats (4 x --hidden)"}};
    DimTerm hs[] = {{T + 1, "states (--max-len + 2)"}, Bt, Ht};
    DimTerm out[] = {Tt, Bt, Et};
    DimTerm probs[] = {Tt, Bt, Vt};
    DimTerm beta[] = {Tt, Bt, {nb, "gate size"}};
    DimTerm lstm_w[] = {{4 * H, "gate floats (4 x --hidden)"},
                        {E + D + H, "LSTM input and state (--embed + annotation size + --hidden)"}};
    DimTerm embed[] = {Vt, Et};
    DimTerm w_h0[] = {Ht, Dt};
    DimTerm attn_a[] = {{A, "--attn-dim"}, {H > D ? H : D, "--hidden or annotation size"}};
    DimTerm attn_w[] = {Ht, Dt};
    DimTerm l_h[] = {Et, Ht};
    DimTerm l_z[] = {Et, Dt};
    struct {
        const char *what;
        const DimTerm *t;
        int n;
    } checks[] = {
        {"the attention's precomputed keys", prep, prep1 ? DIMS_LEN(prep) : 0},
        {"the annotations", annot, DIMS_LEN(annot)},
        {"the attention weights", alpha, DIMS_LEN(alpha)},
        {"the attention's step cache", acache, DIMS_LEN(acache)},
        {"the contexts", ctx, DIMS_LEN(ctx)},
        {"the LSTM inputs", xh, DIMS_LEN(xh)},
        {"the LSTM gates", gates, DIMS_LEN(gates)},
        {"the LSTM states", hs, DIMS_LEN(hs)},
        {"the deep output", out, DIMS_LEN(out)},
        {"the word probabilities", probs, DIMS_LEN(probs)},
        {"the gates beta", beta, DIMS_LEN(beta)},
        {"the LSTM weights", lstm_w, DIMS_LEN(lstm_w)},
        {"the embeddings", embed, DIMS_LEN(embed)},
        {"the initial-state weights", w_h0, DIMS_LEN(w_h0)},
        {"the attention's projections", attn_a, DIMS_LEN(attn_a)},
        {"the attention's bilinear weights", attn_w, DIMS_LEN(attn_w)},
        {"the deep output's state weights", l_h, DIMS_LEN(l_h)},
        {"the deep output's context weights", l_z, DIMS_LEN(l_z)},
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
        if (checks[i].n && dims_check(err, checks[i].what, checks[i].t, checks[i].n)) return -1;
    if (!feat && cnn_check_sizes(&c->cnn, c->image_size, CNN_GROUP, "--image-size", err)) return -1;
    return 0;
}

void sat_acts_layout(Block *k, SatActs *a, const SatConfig *c, int B) {
    memset(k, 0, sizeof *k);
    const int T = c->max_len + 1, L = sat_L(c), D = sat_D(c), E = c->E, H = c->H, V = c->V;
    const int nb = sat_gate_size(c), I = E + D;
    a->T = T;
    a->B = B;
    // The attention's keys (B, L, prep floats per position) and its per-step cache (T, B,
    // cache floats per image), each at least one float. Shaped, never narrowed: the sizes
    // are size_t products (an (int) of B L A once wrapped past 2^31 into a short buffer);
    // sat_check_sizes refuses what passes DIMS_MAX before anything is allocated.
    const size_t prep1 = attn_prep_floats(&c->attn, 1, 1), cache1 = attn_step_cache_floats(&c->attn, 1, L);
    CHECK(prep1 <= 2 * (size_t)c->attn.A && cache1 <= (size_t)DIMS_MAX, "attention sizes");
    CHECK(attn_step_cache_floats(&c->attn, B, L) == (size_t)B * cache1, "step cache not per image");
    block_add(k, &a->annot, "annot", 3, B, L, D);
    block_add(k, &a->mean_a, "mean_a", 2, B, D);
    if (prep1) block_add(k, &a->prep, "prep", 3, B, L, (int)prep1);
    else block_add(k, &a->prep, "prep", 1, 1);
    block_add(k, &a->ctx, "ctx", 3, T, B, D);
    block_add(k, &a->alpha, "alpha", 3, T, B, L);
    block_add(k, &a->acache, "acache", 3, T, B, cache1 ? (int)cache1 : 1);
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
    if (prep1) block_add(k, &a->dprep, "dprep", 3, B, L, (int)prep1);
    else block_add(k, &a->dprep, "dprep", 1, 1);
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
}

void sat_alloc_acts(SatModel *m, int B) {
    const SatConfig *c = &m->cfg;
    SatActs *a = &m->a;
    Block *k = &m->acts_block;
    free_acts_(m);  // a second call (another batch size) replaces the first's
    sat_acts_layout(k, a, c, B);
    const int T = a->T;
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

// The per-step activations of a forward are packed by step: step t's rows 0..active[t]-1
// are rows off[t] .. off[t] + active[t] - 1 (srow_); the states h_t, c_t (and their
// gradients) follow h_0's B rows (hrow_: h_0 at row 0, h_{t+1} at B + off[t]).
static inline size_t srow_(const SatActs *a, int t) { return (size_t)a->off[t]; }
static inline size_t hrow_(const SatActs *a, int t, int B) {
    return t == 0 ? 0 : (size_t)B + (size_t)a->off[t - 1];
}

// Step t's attention with query q (B, H): alpha_t, ctx_t (a sampled annotation when
// sampling), beta_t and z_t = beta_t ctx_t.
// Rows 0..n-1 of the step (n = active[t], see sat_forward).
static void attend_forward_(SatModel *m, int t, const float *q, int B, int n, int sample) {
    const SatConfig *c = &m->cfg;
    SatActs *a = &m->a;
    const SatParams *p = &m->p;
    const int L = sat_L(c), D = sat_D(c), H = c->H, nb = sat_gate_size(c);
    const size_t cache = attn_step_cache_floats(&c->attn, B, L);
    const size_t r0 = srow_(a, t);
    float *ctx = a->ctx + r0 * D;
    float *alpha = a->alpha + r0 * L;
    attn_forward(ctx, alpha, a->acache + t * cache, a->prep, a->annot, q, NULL, NULL, &p->dec.attn,
                 &c->attn, t, n, L);
    for (int b = 0; b < n; b++) {
        int s = -1;
        if (sample) {
            s = rng_categorical(&a->row_rng[b], alpha + (size_t)b * L, L);
            memcpy(ctx + (size_t)b * D, a->annot + ((size_t)b * L + s) * D, (size_t)D * sizeof(float));
        }
        a->sample[r0 + b] = s;
    }
    decoder_gate_forward(a->beta + r0 * nb, a->z + r0 * D, q, ctx, &p->dec, n, H, D, nb);
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

// The batch's rows packed by step: each caption's steps (n_b + 1), step t's active rows
// (up to the last row whose caption is still going) and their first row off[t], and each
// step's input and target tokens. Returns T, the longest caption's steps.
// Rows past a caption's end feed no loss, so when the rows are in descending order of
// length (sat_forward_backward puts them so) no step computes a padding row.
static int pack_rows_(SatModel *m, const int *words, const int *lens, int B) {
    SatActs *a = &m->a;
    const int ML = m->cfg.max_len;
    int T = 0;
    for (int b = 0; b < B; b++) {
        CHECK(lens[b] >= 0 && lens[b] <= ML, "caption length %d", lens[b]);
        a->steps[b] = lens[b] + 1;
        if (a->steps[b] > T) T = a->steps[b];
    }
    a->off[0] = 0;
    for (int t = 0; t < T; t++) {
        int n = 0;
        for (int b = 0; b < B; b++)
            if (a->steps[b] > t) n = b + 1;
        a->active[t] = n;
        a->off[t + 1] = a->off[t] + n;
    }
    for (int t = 0; t < T; t++)
        for (int b = 0; b < a->active[t]; b++) {
            int n = lens[b];
            size_t r = srow_(a, t) + b;
            a->in_tok[r] = t == 0 ? VOCAB_START : (t - 1 < n ? words[b * ML + t - 1] : VOCAB_PAD);
            a->target[r] = t < n ? words[b * ML + t] : (t == n ? VOCAB_END : -1);
        }
    return T;
}

// The annotations (the CNN's, or the given features), the initial state, the attention's
// prepared keys and every step's word embedding.
static void encode_(SatModel *m, const float *images, int B) {
    const SatConfig *c = &m->cfg;
    SatActs *a = &m->a;
    const SatParams *p = &m->p;
    const int L = sat_L(c), D = sat_D(c);
    m->images = images;
    if (c->feat_L > 0) {
        if (images != a->annot) memcpy(a->annot, images, (size_t)B * L * D * sizeof(float));
    } else
        cnn_forward(a->annot, &m->cnn_ws, images, &p->cnn, B);
    decoder_mean_annotations(a->mean_a, a->annot, NULL, B, L, D);
    decoder_initial_state(a->hs, a->cs, a->mean_a, &p->dec, B, D, c->H);
    attn_prepare(a->prep, a->annot, &p->dec.attn, &c->attn, B, L);
    embedding_forward(a->emb, a->in_tok, p->dec.embed, a->off[m->Tb], c->E);  // into o (a->emb == a->o)
}

// The recurrence: each step's attention and LSTM over its active rows.
static void run_steps_(SatModel *m, int B, int sample) {
    const SatConfig *c = &m->cfg;
    SatActs *a = &m->a;
    const SatParams *p = &m->p;
    const int D = sat_D(c), E = c->E, H = c->H, I = E + D;
    const int after = c->query == SAT_QUERY_CURRENT;
    for (int t = 0; t < m->Tb; t++) {
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
            lstm_forward_packed(hn, cn, gates, xh, I + H, cp, m->pack_Wt, p->dec.lstm_b, NULL, n, I,
                                H);
        else
            lstm_forward_xh(hn, cn, gates, xh, I + H, cp, p->dec.lstm_W, p->dec.lstm_b, n, I, H);
        if (after) attend_forward_(m, t, hn, B, n, sample);
    }
}

// Dropout on h, then the deep output over all steps' rows at once; returns the summed
// cross-entropy.
static double output_(SatModel *m, int B, int train) {
    const SatConfig *c = &m->cfg;
    SatActs *a = &m->a;
    const SatParams *p = &m->p;
    const int D = sat_D(c), E = c->E, H = c->H, V = c->V;
    const int TB = a->off[m->Tb];  // the rows of all steps
    const size_t TBH = (size_t)TB * H;
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
    // o = emb (already there) + hd L_h^T + z L_z^T
    gemm(false, true, TB, E, H, 1.0f, hd, H, p->dec.L_h, H, 1.0f, a->o, E);
    gemm(false, true, TB, E, D, 1.0f, a->z, D, p->dec.L_z, D, 1.0f, a->o, E);
    float *logits = a->dlogits;  // used as logits here; backward overwrites it
    linear_forward(logits, a->o, p->dec.L_o, p->dec.b_o, TB, E, V);
    return crossentropy_forward(a->losses, a->probs, logits, a->target, TB, V);
}

// The doubly stochastic regulariser over each caption's own steps (lambda included).
static double doubly_stochastic_(const SatModel *m, int B) {
    const SatActs *a = &m->a;
    const int L = sat_L(&m->cfg);
    double ds = 0.0;
    for (int b = 0; b < B; b++)
        for (int l = 0; l < L; l++) {
            double s = 0.0;
            for (int t = 0; t < a->steps[b]; t++) s += a->alpha[(srow_(a, t) + b) * L + l];
            ds += (1.0 - s) * (1.0 - s);
        }
    return ds * m->cfg.lambda;
}

// Each row's reward (its captions' log-likelihood) into a->reward; returns their mean and
// the target tokens in *ntok.
static double rewards_(SatModel *m, int B, double *ntok) {
    SatActs *a = &m->a;
    double reward = 0.0;
    *ntok = 0.0;
    for (int b = 0; b < B; b++) {
        double r = 0.0;
        for (int t = 0; t < a->steps[b]; t++) r -= a->losses[srow_(a, t) + b];
        a->reward[b] = (float)r;
        reward += r;
        *ntok += a->steps[b];
    }
    return reward / B;
}

// Hard attention's REINFORCE surrogate and entropy bonus, summed over rows (reward: the
// batch's mean, the baseline until one is set); adds the sampled locations' log alpha to
// m->sample_logp.
static double hard_terms_(SatModel *m, int B, double reward) {
    const SatConfig *c = &m->cfg;
    const SatActs *a = &m->a;
    const int L = sat_L(c);
    const float base = m->baseline_set ? m->baseline : (float)reward;
    double extra = 0.0;
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
    return extra;
}

void sat_forward(SatModel *m, SatLoss *out, const float *images, const int *words,
                 const int *lens, int B, int train, uint64_t seed, int first) {
    CHECK(m->a.B >= B && B >= 1, "batch %d, activations for %d", B, m->a.B);
    m->Tb = pack_rows_(m, words, lens, B);
    m->Bb = B;
    if (train) draw_row_streams_(m, m->Tb, B, seed, first);
    encode_(m, images, B);
    const int sample = m->cfg.hard && train;
    run_steps_(m, B, sample);
    const double ce = output_(m, B, train), ds = doubly_stochastic_(m, B);
    double ntok;
    const double reward = rewards_(m, B, &ntok);
    m->sample_logp = 0.0;  // hard_terms_ sums it when sampling
    const double extra = sample ? hard_terms_(m, B, reward) : 0.0;
    out->ce = ce / B;
    out->ds = ds / B;
    out->tokens = ntok;
    out->reward = reward;
    out->loss = (ce + ds + extra) / B;
}

// Backward of attend_forward_ for step t: from dz_t (complete) to dq (B, H) (accumulated),
// the attention's and the gate's parameters, and the annotations (a->dannot, a->dprep).
// Rows 0..n-1 (the step's active rows, as in the forward).
// The gate's backward at step t for the n rows still running, z = beta ctx with
// beta = sigmoid(W_beta q + b_beta) (a scalar or a D-vector per row): d/dctx into acts.dctx,
// d/dbeta's pre-activation into acts.dbeta, then W_beta's and b_beta's gradients and
// dq += the gate's input gradient.
static void gate_backward_(SatModel *m, int t, int n, const float *q, float *dq) {
    const SatConfig *c = &m->cfg;
    SatActs *a = &m->a;
    const int D = sat_D(c), nb = sat_gate_size(c);
    const size_t r0 = srow_(a, t);
    const float *ctx = a->ctx + r0 * D, *beta = a->beta + r0 * nb, *dz = a->dz + r0 * D;
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
    linear_backward(dq, m->g.dec.W_beta, m->g.dec.b_beta, a->dbeta, q, m->p.dec.W_beta, n, c->H, nb);
}

// d/dalpha at step t into acts.dalpha for the n rows still running: the doubly stochastic
// term's, plus for hard attention (sample) REINFORCE's on the sampled location, with the
// advantage reward - base, and the entropy bonus's; zero for rows whose caption has ended.
static void alpha_grad_(SatModel *m, int t, int n, float base, int sample) {
    const SatConfig *c = &m->cfg;
    SatActs *a = &m->a;
    const int L = sat_L(c);
    const float invB = 1.0f / (float)m->Bb;
    const size_t r0 = srow_(a, t);
    const float *alpha = a->alpha + r0 * L;
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
}

// The attention's backward at step t (query q, its gradient dq): the gate's, alpha's, then
// the context's into the annotations (with features they are data and get none). A hard
// step's context is the sampled annotation itself: its gradient goes there, none through
// alpha's scores.
static void attend_backward_(SatModel *m, int t, int n, const float *q, float *dq, float base,
                             int sample) {
    const SatConfig *c = &m->cfg;
    SatActs *a = &m->a;
    const int B = m->Bb, L = sat_L(c), D = sat_D(c);
    const size_t cache = attn_step_cache_floats(&c->attn, B, L);
    const size_t r0 = srow_(a, t);
    gate_backward_(m, t, n, q, dq);
    alpha_grad_(m, t, n, base, sample);
    float *dannot = c->feat_L > 0 && !m->annot_grad ? NULL : a->dannot;
    if (sample && dannot) {
        for (int b = 0; b < n; b++) {
            float *dst = a->dannot + ((size_t)b * L + a->sample[r0 + b]) * D;
            const float *src = a->dctx + (size_t)b * D;
            for (int d = 0; d < D; d++) dst[d] += src[d];
        }
    }
    attn_backward(dannot, a->dprep, dq, &m->g.dec.attn, sample ? a->zeros : a->dctx, a->dalpha,
                  a->acache + t * cache, a->prep, a->annot, q, NULL, NULL, &m->p.dec.attn, &c->attn,
                  t, n, L);
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
    linear_backward(a->do_, g->dec.L_o, g->dec.b_o, a->dlogits, a->o, p->dec.L_o, TB, E, V);
    // o = emb + hd L_h^T + z L_z^T. demb is do_ itself: the embedding gradient starts as
    // do_ and takes the LSTM input gradients below (do_ is not read after these GEMMs).
    // dh_{t+1} += dhd * dropout mask; without dropout straight into dh (zeros until now).
    float *dh1 = a->dhs + (size_t)B * H;
    if (c->dropout > 0.0f) {
        gemm(false, false, TB, H, E, 1.0f, a->do_, E, p->dec.L_h, H, 0.0f, a->dhd, H);
        for (size_t i = 0; i < (size_t)TB * H; i++) dh1[i] += a->dhd[i] * a->dmask[i];
    } else {
        gemm(false, false, TB, H, E, 1.0f, a->do_, E, p->dec.L_h, H, 1.0f, dh1, H);
    }
    const float *hd = c->dropout > 0.0f ? a->hd : a->hs + (size_t)B * H;
    gemm(true, false, E, H, TB, 1.0f, a->do_, E, hd, H, 1.0f, g->dec.L_h, H);
    gemm(false, false, TB, D, E, 1.0f, a->do_, E, p->dec.L_z, D, 0.0f, a->dz, D);
    gemm(true, false, E, D, TB, 1.0f, a->do_, E, a->z, D, 1.0f, g->dec.L_z, D);
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
        lstm_backward_packed(a->dx, dh_prev, dc_prev, g->dec.lstm_b, dh, dc, gates, xh, cp, cn,
                             m->pack_Wn, a->lstm_scratch, n, I, H);
    else
        lstm_backward(a->dx, dh_prev, dc_prev, NULL, g->dec.lstm_b, dh, dc, gates, xh, cp, cn,
                      p->dec.lstm_W, a->lstm_scratch, n, I, H);
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
    linear_backward(dmean, g->dec.W_h0, g->dec.b_h0, dh0, a->mean_a, p->dec.W_h0, B, D, H);
    linear_backward(dmean, g->dec.W_c0, g->dec.b_c0, dc0, a->mean_a, p->dec.W_c0, B, D, H);
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

void sat_backward_decoder(SatModel *m) {
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
    gemm(true, false, 4 * H, I + H, TB, 1.0f, a->gates, 4 * H, a->xh, I + H, 1.0f, g->dec.lstm_W,
         I + H);
    embedding_backward(g->dec.embed, a->demb, a->in_tok, TB, c->E);
    float *dannot = c->feat_L > 0 && !m->annot_grad ? NULL : a->dannot;  // features: no gradient wanted
    attn_prepare_backward(dannot, &g->dec.attn, a->dprep, a->annot, &m->p.dec.attn, &c->attn, B, L);
    backward_initial_state_(m, dannot);
    if (sample) update_baseline_(m);
}

void sat_backward_encoder(SatModel *m) {
    if (m->cfg.feat_L > 0) return;
    cnn_backward(&m->g.cnn, NULL, m->a.dannot, &m->cnn_ws, m->images, &m->p.cnn, m->Bb);
}

void sat_backward(SatModel *m) {
    sat_backward_decoder(m);
    sat_backward_encoder(m);
}
