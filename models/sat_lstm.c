// sat_lstm.c: the captioner's attention LSTM decoder (models/sat_lstm.h).
#include "models/sat_lstm.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/dims.h"
#include "models/sat_lstm_decode.h"
#include "seq/embedding.h"

SatLstm *sat_lstm(const SatModel *m) {
    CHECK(m->ops == &sat_lstm_ops, "the model's decoder is not the LSTM (%s)",
          m->ops ? sat_decoder_name(m->ops->kind) : "none");
    return m->dec;
}

// ---------------------------------------------------------------------------------------
// Parameters

void sat_lstm_params_layout(Block *b, SatLstmParams *p, const SatConfig *c) {
    memset(p, 0, sizeof *p);
    if (c->feat_L == 0) cnn_register(&p->cnn, b, "enc", &c->cnn);
    const DecoderConfig dc = sat_decoder_config(c);
    decoder_params_layout(b, &p->dec, &dc);
}

static void lstm_init_(SatModel *m, Rng *rng) {
    SatLstm *l = xcalloc(1, sizeof *l);
    const SatConfig *c = &m->cfg;
    sat_lstm_params_layout(&l->params, &l->p, c);
    sat_lstm_params_layout(&l->grads, &l->g, c);
    sat_lstm_params_layout(&l->adam_m, &l->m, c);
    sat_lstm_params_layout(&l->adam_v, &l->v, c);
    block_alloc(&l->params);
    block_alloc(&l->grads);
    block_alloc(&l->adam_m);
    block_alloc(&l->adam_v);
    SatLstmParams *p = &l->p;
    if (c->feat_L == 0) cnn_init(&p->cnn, rng);
    const DecoderConfig dc = sat_decoder_config(c);
    decoder_params_init(&p->dec, &dc, rng);
    m->dec = l;
    m->params = l->params, m->grads = l->grads;
    m->adam_m = l->adam_m, m->adam_v = l->adam_v;
}

static void lstm_replica_init_(SatModel *r, const SatModel *m) {
    const SatLstm *from = m->dec;
    SatLstm *l = xcalloc(1, sizeof *l);
    l->p = from->p;
    l->params = from->params;  // a copy of the descriptor: same data, never freed by r
    l->replica = 1;
    sat_lstm_params_layout(&l->grads, &l->g, &r->cfg);
    block_alloc(&l->grads);
    r->dec = l;
    r->params = l->params, r->grads = l->grads;
}

// Frees what lstm_alloc_acts_ allocated (nothing when it has not run).
static void free_acts_(SatLstm *l, const SatConfig *c) {
    if (!l->acts_block.data) return;
    block_free(&l->acts_block);
    decoder_acts_release(&l->a);
    if (c->feat_L == 0) cnn_workspace_free(&l->cnn_ws);
}

static void lstm_free_(SatModel *m) {
    SatLstm *l = m->dec;
    if (!l->replica) {
        block_free(&l->params);
        block_free(&l->adam_m);
        block_free(&l->adam_v);
    }
    block_free(&l->grads);
    if (l->own_packs) {
        packed_free(&l->own_Wt);
        packed_free(&l->own_Wn);
        packed_free(&l->own_Wq_t);  // zero (nothing to free) without an additive score
        packed_free(&l->own_Wq_n);
    }
    free_acts_(l, &m->cfg);
    free(l);
}

int sat_lstm_check_sizes(const SatConfig *c, int B, Error *err) {
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

void sat_lstm_acts_layout(Block *k, DecoderActs *a, const SatConfig *c, int B) {
    const DecoderConfig dc = sat_decoder_config(c);
    decoder_acts_layout(k, a, &dc, c->max_len + 1, B);
}

static void lstm_alloc_acts_(SatModel *m, int B) {
    SatLstm *l = m->dec;
    const SatConfig *c = &m->cfg;
    free_acts_(l, c);  // a second call (another batch size) replaces the first's
    sat_lstm_acts_layout(&l->acts_block, &l->a, c, B);
    block_alloc(&l->acts_block);
    decoder_acts_bind(&l->a);
    if (c->feat_L == 0) cnn_workspace_alloc(&l->cnn_ws, &c->cnn, B, c->image_size);
}

// ---------------------------------------------------------------------------------------
// Training forward and backward

// The shared decoder's view of this model's batch (models/decoder.h): its parameters,
// gradients and activations, the batch's steps and rows, the packs lent for the step.
static Decoder decoder_view_(SatModel *m) {
    SatLstm *l = m->dec;
    Decoder d = {.cfg = sat_decoder_config(&m->cfg), .p = &l->p.dec, .g = &l->g.dec,
                 .a = &l->a, .T = l->Tb, .B = m->Bb, .pack_Wt = l->pack_Wt,
                 .pack_Wn = l->pack_Wn, .annot_grad = m->cfg.feat_L == 0 || m->annot_grad};
    return d;
}

// Training's randomness, row by row: row b's stream (a->row_rng[b]) seeded with
// rng_mix(seed, first + b) (or with m->row_ids[b]) first draws its dropout masks (dmask,
// packed by step) for its own steps, then keeps its place for the hard-attention samples of
// the time loop. The masks of steps past a caption's end (which no loss reads) are 1, so that
// the row's draws do not depend on the batch's longest caption or on the other rows.
static void draw_row_streams_(SatModel *m, int T, int B, uint64_t seed, int first) {
    const SatConfig *c = &m->cfg;
    DecoderActs *a = &((SatLstm *)m->dec)->a;
    const int H = c->H;
    const float keep = 1.0f - c->dropout, scale = 1.0f / keep;
    for (int b = 0; b < B; b++) {
        Rng *rng = &a->row_rng[b];
        const uint64_t row = m->row_ids ? (uint64_t)m->row_ids[b] : (uint64_t)first + (uint64_t)b;
        rng_seed(rng, rng_mix(seed, row));
        if (c->dropout <= 0.0f) continue;
        for (int t = 0; t < T && b < a->active[t]; t++) {
            float *mask = a->dmask + (decoder_srow(a, t) + b) * H;
            if (t < a->steps[b])
                for (int i = 0; i < H; i++) mask[i] = rng_uniform(rng) < keep ? scale : 0.0f;
            else
                for (int i = 0; i < H; i++) mask[i] = 1.0f;
        }
    }
}

// The annotations (the CNN's, or the given features), the initial state, the attention's
// prepared keys and every step's word embedding.
static void encode_(SatModel *m, const float *images, int B) {
    const SatConfig *c = &m->cfg;
    SatLstm *l = m->dec;
    DecoderActs *a = &l->a;
    const SatLstmParams *p = &l->p;
    const int L = sat_L(c), D = sat_D(c);
    l->images = images;
    if (c->feat_L > 0) {
        if (images != a->annot) memcpy(a->annot, images, (size_t)B * L * D * sizeof(float));
    } else
        cnn_forward(a->annot, &l->cnn_ws, images, &p->cnn, B);
    decoder_mean_annotations(a->mean_a, a->annot, NULL, B, L, D);
    decoder_initial_state(a->hs, a->cs, a->mean_a, &p->dec, B, D, c->H);
    attn_prepare(a->prep, a->annot, &p->dec.attn, &c->attn, B, L);
    embedding_forward(a->emb, a->in_tok, p->dec.embed, a->off[l->Tb], c->E);  // into o (a->emb == a->o)
}

// Each row's reward (its captions' log-likelihood) into a->reward; returns their mean and
// the target tokens in *ntok.
static double rewards_(DecoderActs *a, int B, double *ntok) {
    double reward = 0.0;
    *ntok = 0.0;
    for (int b = 0; b < B; b++) {
        double r = 0.0;
        for (int t = 0; t < a->steps[b]; t++) r -= a->losses[decoder_srow(a, t) + b];
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
    const DecoderActs *a = &((const SatLstm *)m->dec)->a;
    const int L = sat_L(c);
    const float base = m->baseline_set ? m->baseline : (float)reward;
    double extra = 0.0;
    for (int b = 0; b < B; b++) {
        double adv = a->reward[b] - base, lp = 0.0, ent = 0.0;
        for (int t = 0; t < a->steps[b]; t++) {
            const float *al = a->alpha + (decoder_srow(a, t) + b) * L;
            lp += log(fmax(al[a->sample[decoder_srow(a, t) + b]], 1e-30));
            for (int l = 0; l < L; l++)
                if (al[l] > 0) ent -= al[l] * log(al[l]);
        }
        extra += -adv * lp - c->entropy_weight * ent;
        m->sample_logp += lp;
    }
    return extra;
}

static void lstm_forward_(SatModel *m, SatLoss *out, const float *images, const int *words,
                          const int *lens, int B, int train, uint64_t seed, int first) {
    SatLstm *l = m->dec;
    CHECK(l->a.B >= B && B >= 1, "batch %d, activations for %d", B, l->a.B);
    l->Tb = decoder_pack_rows(&l->a, words, lens, B, m->cfg.max_len);
    m->Bb = B;
    if (train) draw_row_streams_(m, l->Tb, B, seed, first);
    encode_(m, images, B);
    const int sample = m->cfg.hard && train;
    const Decoder d = decoder_view_(m);
    decoder_forward_steps(&d, sample);
    const double ce = decoder_output_forward(&d, train), ds = decoder_doubly_stochastic(&d);
    double ntok;
    const double reward = rewards_(&l->a, B, &ntok);
    m->sample_logp = 0.0;  // hard_terms_ sums it when sampling
    const double extra = sample ? hard_terms_(m, B, reward) : 0.0;
    out->ce = ce / B;
    out->ds = ds / B;
    out->tokens = ntok;
    out->reward = reward;
    out->loss = (ce + ds + extra) / B;
}

static double mean_reward_(const DecoderActs *a, int B) {
    double mean_r = 0.0;
    for (int b = 0; b < B; b++) mean_r += a->reward[b];
    return mean_r / B;
}

// Hard attention's baseline: the first batch's mean reward, then a moving average.
static void update_baseline_(SatModel *m) {
    float mean_r = (float)mean_reward_(&((SatLstm *)m->dec)->a, m->Bb);
    if (!m->baseline_set) {
        m->baseline = mean_r;
        m->baseline_set = 1;
    } else {
        m->baseline = m->cfg.baseline_decay * m->baseline + (1.0f - m->cfg.baseline_decay) * mean_r;
    }
}

static void lstm_backward_decoder_(SatModel *m) {
    const DecoderActs *a = &((SatLstm *)m->dec)->a;
    const int sample = m->cfg.hard && a->sample[0] >= 0;
    // Hard attention's advantages are taken against the baseline before this batch.
    const float base = m->baseline_set ? m->baseline
                       : sample        ? (float)mean_reward_(a, m->Bb)
                                       : 0.0f;
    const Decoder d = decoder_view_(m);
    decoder_backward(&d, base, sample);
    if (sample) update_baseline_(m);
}

static void lstm_backward_encoder_(SatModel *m) {
    if (m->cfg.feat_L > 0) return;
    SatLstm *l = m->dec;
    cnn_backward(&l->g.cnn, NULL, l->a.dannot, &l->cnn_ws, l->images, &l->p.cnn, m->Bb);
}

// The CNN's gradient floats, first in the Block (0 with features).
static size_t lstm_encoder_grad_floats_(const SatModel *m) {
    const SatLstm *l = m->dec;
    return m->cfg.feat_L > 0 ? 0 : (size_t)(l->g.dec.W_h0 - l->grads.data);
}

static const float *lstm_annotation_grads_(const SatModel *m) {
    return ((const SatLstm *)m->dec)->a.dannot;
}

// The features of a forward go straight into the activations (encode_ then copies nothing).
static float *lstm_annotation_input_(SatModel *m) { return ((SatLstm *)m->dec)->a.annot; }

// ---------------------------------------------------------------------------------------
// The training step's packed weights

typedef struct {
    SatLstm *l;
    int K, H;  // lstm_W's columns (E + D + H) and the hidden size
    int part, parts;
} PackJob;

// Part j->part of j->parts of every pack of lstm_pack_step_weights_ (packed_pack_part).
static void *pack_job_run(void *arg) {
    PackJob *j = arg;
    SatLstm *l = j->l;
    packed_pack_part(&l->own_Wt, true, l->p.dec.lstm_W, j->K, j->part, j->parts);
    packed_pack_part(&l->own_Wn, false, l->p.dec.lstm_W, j->K, j->part, j->parts);
    if (l->p.dec.attn.W_q) {
        packed_pack_part(&l->own_Wq_t, true, l->p.dec.attn.W_q, j->H, j->part, j->parts);
        packed_pack_part(&l->own_Wq_n, false, l->p.dec.attn.W_q, j->H, j->part, j->parts);
    }
    return NULL;
}

// Packs the step weights for a training step: the LSTM's W^T and W into own_Wt and own_Wn
// and, with an additive score, the attention's W_q^T and W_q into own_Wq_t and own_Wq_n; with
// threads >= 2 two threads each pack half of every one.
static void lstm_pack_step_weights_(SatModel *m, int threads) {
    SatLstm *l = m->dec;
    const SatConfig *c = &m->cfg;
    const int H = c->H, K = c->E + sat_D(c) + H, A = c->attn.A;
    if (!l->own_packs) {
        packed_alloc(&l->own_Wt, K, 4 * H);
        packed_alloc(&l->own_Wn, 4 * H, K);
        if (l->p.dec.attn.W_q) {
            packed_alloc(&l->own_Wq_t, H, A);
            packed_alloc(&l->own_Wq_n, A, H);
        }
        l->own_packs = 1;
    }
    pthread_t th;
    PackJob jobs[2] = {{l, K, H, 0, 2}, {l, K, H, 1, 2}};
    if (threads >= 2 && pthread_create(&th, NULL, pack_job_run, &jobs[1]) == 0) {
        pack_job_run(&jobs[0]);
        pthread_join(th, NULL);
    } else {
        jobs[0].parts = 1;
        pack_job_run(&jobs[0]);
    }
}

// Lends w the packs of `from` (lstm_pack_step_weights_'s) for a step, or with from NULL
// takes them back.
static void lstm_lend_step_weights_(SatModel *w, const SatModel *from) {
    SatLstm *l = w->dec;
    const SatLstm *f = from ? from->dec : NULL;
    const int q = f && f->p.dec.attn.W_q;
    l->pack_Wt = f ? &f->own_Wt : NULL;
    l->pack_Wn = f ? &f->own_Wn : NULL;
    l->p.dec.attn.W_q_t = q ? &f->own_Wq_t : NULL;
    l->p.dec.attn.W_q_n = q ? &f->own_Wq_n : NULL;
}

const SatDecoderOps sat_lstm_ops = {
    .kind = SAT_DECODER_LSTM,
    .check_sizes = sat_lstm_check_sizes,
    .check_decode_sizes = sat_lstm_check_decode_sizes,
    .init = lstm_init_,
    .replica_init = lstm_replica_init_,
    .alloc_acts = lstm_alloc_acts_,
    .free = lstm_free_,
    .forward = lstm_forward_,
    .backward_decoder = lstm_backward_decoder_,
    .backward_encoder = lstm_backward_encoder_,
    .encoder_grad_floats = lstm_encoder_grad_floats_,
    .annotation_grads = lstm_annotation_grads_,
    .annotation_input = lstm_annotation_input_,
    .sorts_rows = 1,
    .pack_step_weights = lstm_pack_step_weights_,
    .lend_step_weights = lstm_lend_step_weights_,
    .decode = sat_lstm_decode,
};
