#include "models/sat.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/activations.h"
#include "core/check.h"
#include "core/dims.h"
#include "seq/embedding.h"
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

// The Transformer captioner behind m (SatModel.tf): its Blocks' descriptors lent to m.
static void tf_init_(SatModel *m, const SatConfig *cfg, Rng *rng) {
    m->tf = xcalloc(1, sizeof *m->tf);
    sat_tf_init(m->tf, cfg, rng);
    m->params = m->tf->params, m->grads = m->tf->grads;
    m->adam_m = m->tf->adam_m, m->adam_v = m->tf->adam_v;
}

void sat_init(SatModel *m, const SatConfig *cfg, Rng *rng) {
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    if (cfg->decoder == SAT_DECODER_TRANSFORMER) {
        tf_init_(m, cfg, rng);
        return;
    }
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
    if (m->tf) {
        r->cfg = m->cfg;
        r->tf = xcalloc(1, sizeof *r->tf);
        sat_tf_replica_init(r->tf, m->tf);
        r->params = m->params, r->grads = r->tf->grads;
        r->replica = 1;
        return;
    }
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
    decoder_acts_release(&m->a);
    if (m->cfg.feat_L == 0) cnn_workspace_free(&m->cnn_ws);
}

int sat_check_sizes(const SatConfig *c, int B, Error *err) {
    if (c->decoder == SAT_DECODER_TRANSFORMER) return sat_tf_check_sizes(c, B, err);
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

void sat_acts_layout(Block *k, DecoderActs *a, const SatConfig *c, int B) {
    const DecoderConfig dc = sat_decoder_config(c);
    decoder_acts_layout(k, a, &dc, c->max_len + 1, B);
}

void sat_alloc_acts(SatModel *m, int B) {
    if (m->tf) {
        sat_tf_alloc_acts(m->tf, B);
        m->a.B = B;  // what callers read to chunk their batches
        return;
    }
    const SatConfig *c = &m->cfg;
    DecoderActs *a = &m->a;
    Block *k = &m->acts_block;
    free_acts_(m);  // a second call (another batch size) replaces the first's
    sat_acts_layout(k, a, c, B);
    block_alloc(k);
    decoder_acts_bind(a);
    if (c->feat_L == 0) cnn_workspace_alloc(&m->cnn_ws, &c->cnn, B, c->image_size);
}

void sat_free(SatModel *m) {
    if (m->tf) {
        sat_tf_free(m->tf);
        free(m->tf);
        free(m->sorted_images);  // a data-parallel step's sorted copies (models/sat_parallel.c)
        free(m->sorted_ints);
        memset(m, 0, sizeof *m);
        return;
    }
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

// The shared decoder's view of this model's batch (models/decoder.h): its parameters,
// gradients and activations, the batch's steps and rows, the packs lent for the step.
static Decoder decoder_view_(SatModel *m) {
    Decoder d = {.cfg = sat_decoder_config(&m->cfg), .p = &m->p.dec, .g = &m->g.dec,
                 .a = &m->a, .T = m->Tb, .B = m->Bb, .pack_Wt = m->pack_Wt,
                 .pack_Wn = m->pack_Wn, .annot_grad = m->cfg.feat_L == 0 || m->annot_grad};
    return d;
}

// Training's randomness, row by row: row b's stream (a->row_rng[b]) seeded with
// rng_mix(seed, first + b) first draws its dropout masks (dmask, packed by step) for its
// own steps, then keeps its place for the hard-attention samples of the time loop. The
// masks of steps past a caption's end (which no loss reads) are 1, so that the row's
// draws do not depend on the batch's longest caption or on the other rows.
static void draw_row_streams_(SatModel *m, int T, int B, uint64_t seed, int first) {
    const SatConfig *c = &m->cfg;
    DecoderActs *a = &m->a;
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
    DecoderActs *a = &m->a;
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

// Each row's reward (its captions' log-likelihood) into a->reward; returns their mean and
// the target tokens in *ntok.
static double rewards_(SatModel *m, int B, double *ntok) {
    DecoderActs *a = &m->a;
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
    const DecoderActs *a = &m->a;
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

void sat_forward(SatModel *m, SatLoss *out, const float *images, const int *words,
                 const int *lens, int B, int train, uint64_t seed, int first) {
    if (m->tf) {
        double tokens = 0.0;
        const double loss = sat_tf_forward(m->tf, images, words, lens, B, train, seed, first, &tokens);
        *out = (SatLoss){.loss = loss, .ce = loss, .tokens = tokens};
        m->Bb = B;
        return;
    }
    CHECK(m->a.B >= B && B >= 1, "batch %d, activations for %d", B, m->a.B);
    m->Tb = decoder_pack_rows(&m->a, words, lens, B, m->cfg.max_len);
    m->Bb = B;
    if (train) draw_row_streams_(m, m->Tb, B, seed, first);
    encode_(m, images, B);
    const int sample = m->cfg.hard && train;
    const Decoder d = decoder_view_(m);
    decoder_forward_steps(&d, sample);
    const double ce = decoder_output_forward(&d, train), ds = decoder_doubly_stochastic(&d);
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

static double mean_reward_(const DecoderActs *a, int B) {
    double mean_r = 0.0;
    for (int b = 0; b < B; b++) mean_r += a->reward[b];
    return mean_r / B;
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
    const int sample = m->cfg.hard && m->a.sample[0] >= 0;
    // Hard attention's advantages are taken against the baseline before this batch.
    const float base = m->baseline_set ? m->baseline
                       : sample        ? (float)mean_reward_(&m->a, m->Bb)
                                       : 0.0f;
    const Decoder d = decoder_view_(m);
    decoder_backward(&d, base, sample);
    if (sample) update_baseline_(m);
}

void sat_backward_encoder(SatModel *m) {
    if (m->cfg.feat_L > 0) return;
    cnn_backward(&m->g.cnn, NULL, m->a.dannot, &m->cnn_ws, m->images, &m->p.cnn, m->Bb);
}

void sat_backward(SatModel *m) {
    if (m->tf) {
        m->tf->annot_grad = m->annot_grad;
        sat_tf_backward(m->tf);
        return;
    }
    sat_backward_decoder(m);
    sat_backward_encoder(m);
}

const float *sat_annotation_grads(const SatModel *m) { return m->tf ? m->tf->a.dannot : m->a.dannot; }
