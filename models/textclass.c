// textclass.c: the sentence classifier (models/textclass.h).
#include "models/textclass.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "models/bow.h"
#include "seq/linear.h"
#include "seq/loss.h"
#include "seq/lstm_seq.h"
#include "seq/pooling.h"

static const char *const pool_names[] = {"keras", "final-dot", "query", "last", "mean", "bow"};

const char *text_pool_name(TextPool p) {
    return (int)p >= 0 && (int)p < 6 ? pool_names[p] : "?";
}

int text_pool_parse(const char *name, TextPool *p) {
    for (int i = 0; i < 6; i++)
        if (strcmp(name, pool_names[i]) == 0) {
            *p = (TextPool)i;
            return 0;
        }
    return -1;
}

TextConfig text_config_default(int vocab) {
    TextConfig c = {.vocab = vocab, .T = 32, .embed = 32, .hidden = 100, .bidirectional = 0,
                    .pool = TEXT_POOL_KERAS, .attn_kind = ATTN_ADDITIVE, .attn_size = 0,
                    .heads = 1, .masked = 0, .classes = 2, .dropout = 0.3f,
                    .rec_dropout = 0.2f, .embed_l2 = 1e-3f, .gate_act = LSTM_GATE_SIGMOID};
    return c;
}

int text_state_size(const TextConfig *c) {
    if (c->pool == TEXT_POOL_BOW) return c->vocab + c->bigrams;
    return c->hidden * (c->bidirectional ? 2 : 1) + (c->word_scores ? 1 : 0);
}
int text_outputs(const TextConfig *c) { return c->classes == 2 ? 1 : c->classes; }

int text_word_score_count(const TextConfig *c) { return c->vocab + c->bigrams; }

// The score index of the pair (row[t], row[t + 1]) with bigram buckets, both words (not
// the padding): vocab + its bucket (bow_bigram_bucket, as the bag of words'); else -1.
static int word_score_bigram(const TextConfig *c, const int *row, int t) {
    if (c->bigrams <= 0 || t + 1 >= c->T || row[t] <= 0 || row[t + 1] <= 0) return -1;
    return c->vocab + bow_bigram_bucket(row[t], row[t + 1], c->bigrams);
}

float text_word_score_at(const float *v, const TextConfig *c, const int *row, int t) {
    int k = word_score_bigram(c, row, t);
    return v[row[t]] + (k >= 0 ? v[k] : 0.0f);
}

static int uses_attn(const TextConfig *c) {
    return c->pool == TEXT_POOL_FINAL_DOT || c->pool == TEXT_POOL_QUERY;
}

static AttnConfig attn_config(const TextConfig *c) {
    int D = text_state_size(c);
    AttnConfig a = {.kind = c->pool == TEXT_POOL_FINAL_DOT ? ATTN_DOT : c->attn_kind, .D = D,
                    .H = D, .A = c->attn_size > 0 ? c->attn_size : D,
                    .heads = c->heads > 0 ? c->heads : 1};
    return a;
}

int text_config_check(const TextConfig *c, Error *err) {
    if (c->vocab < 1 || c->T < 1 || c->T > 4096 || c->embed < 1 || c->hidden < 1)
        return error_set(err, "text model: vocab %d, T %d, embed %d, hidden %d (each >= 1, T <= 4096)",
                         c->vocab, c->T, c->embed, c->hidden);
    if (c->classes < 2) return error_set(err, "text model: %d classes (need 2 or more)", c->classes);
    if (c->word_scores && c->pool != TEXT_POOL_KERAS && c->pool != TEXT_POOL_QUERY &&
        c->pool != TEXT_POOL_MEAN)
        return error_set(err, "text model: word scores need the keras, query or mean pooling "
                              "(the last state has no word to read one from)");
    if (c->nb && ((c->pool != TEXT_POOL_BOW && !c->word_scores) || c->classes != 2))
        return error_set(err, "text model: naive-Bayes scaling needs the bow pooling and two classes "
                              "(or word scores to start from the ratios)");
    if (c->bigrams < 0 || c->bigrams > (1 << 24) ||
        (c->bigrams > 0 && c->pool != TEXT_POOL_BOW && !c->word_scores))
        return error_set(err, "text model: %d bigram buckets (0..16777216, and only with the bow "
                              "pooling or word scores)", c->bigrams);
    if ((int)c->pool < 0 || (int)c->pool > TEXT_POOL_BOW)
        return error_set(err, "text model: unknown pooling %d", (int)c->pool);
    if (!(c->dropout >= 0 && c->dropout < 1) || !(c->rec_dropout >= 0 && c->rec_dropout < 1))
        return error_set(err, "text model: dropout %g, recurrent dropout %g (each in [0, 1))",
                         c->dropout, c->rec_dropout);
    if (!(c->embed_l2 >= 0)) return error_set(err, "text model: embed L2 %g < 0", c->embed_l2);
    if (c->pool == TEXT_POOL_QUERY) {
        AttnKind k = c->attn_kind;
        if (k == ATTN_LOCAL_MONOTONIC || k == ATTN_LOCAL_PREDICTIVE)
            return error_set(err, "text model: %s attention has no place in a pooling (use a "
                                  "kernel without a window)", attn_kind_name(k));
        AttnConfig a = attn_config(c);
        if (k == ATTN_MULTIHEAD && a.A % a.heads != 0)
            return error_set(err, "text model: %d heads do not divide the attention size %d",
                             a.heads, a.A);
    }
    return 0;
}

void text_layout(Block *b, TextParams *p, const TextConfig *c) {
    memset(p, 0, sizeof *p);
    int E = c->embed, H = c->hidden, D = text_state_size(c), O = text_outputs(c);
    if (c->pool == TEXT_POOL_BOW) {  // the logistic regression: the dense layer alone
        block_add(b, &p->out_W, "out.W", 2, O, D);
        block_add(b, &p->out_b, "out.b", 1, O);
        if (c->nb) block_add(b, &p->nb, "bow.nb", 1, D);
        return;
    }
    block_add(b, &p->emb, "emb", 2, c->vocab, E);
    block_add(b, &p->lstm_W, "lstm.W", 2, 4 * H, E + H);
    block_add(b, &p->lstm_b, "lstm.b", 1, 4 * H);
    if (c->bidirectional) {
        block_add(b, &p->rev_W, "lstm_rev.W", 2, 4 * H, E + H);
        block_add(b, &p->rev_b, "lstm_rev.b", 1, 4 * H);
    }
    if (c->pool == TEXT_POOL_KERAS) {
        block_add(b, &p->att_w, "att.w", 1, D);
        block_add(b, &p->att_b, "att.b", 1, c->T);
    }
    if (c->pool == TEXT_POOL_QUERY) block_add(b, &p->query, "query", 1, D);
    if (uses_attn(c)) {
        AttnConfig a = attn_config(c);
        attn_params_layout(b, &p->attn, &a, "attn");
    }
    block_add(b, &p->out_W, "out.W", 2, O, D);
    block_add(b, &p->out_b, "out.b", 1, O);
    if (c->word_scores) block_add(b, &p->word_score, "word_score", 1, text_word_score_count(c));
}

static void uniform(float *x, size_t n, float limit, Rng *rng) {
    for (size_t i = 0; i < n; i++) x[i] = limit * (2.0f * rng_uniform(rng) - 1.0f);
}

// Keras's LSTM initialisers for one direction: W (4H, E + H), b (4H).
static void init_lstm(float *W, float *b, int E, int H, Rng *rng) {
    const int K = E + H, G = 4 * H;
    float lim = sqrtf(6.0f / (float)(E + G));  // glorot_uniform of the (E, 4H) kernel
    for (int r = 0; r < G; r++) uniform(W + (size_t)r * K, (size_t)E, lim, rng);
    // orthogonal: the (4H, H) recurrent block gets orthonormal columns (Gram-Schmidt twice).
    double *q = xmalloc((size_t)G * H * sizeof *q);  // column j at q + j G
    for (int j = 0; j < H; j++) {
        double *v = q + (size_t)j * G;
        for (int r = 0; r < G; r++) v[r] = rng_normal(rng);
        for (int pass = 0; pass < 2; pass++)
            for (int k = 0; k < j; k++) {
                const double *u = q + (size_t)k * G;
                double d = 0;
                for (int r = 0; r < G; r++) d += v[r] * u[r];
                for (int r = 0; r < G; r++) v[r] -= d * u[r];
            }
        double n = 0;
        for (int r = 0; r < G; r++) n += v[r] * v[r];
        n = sqrt(n);
        for (int r = 0; r < G; r++) v[r] /= n;
    }
    for (int r = 0; r < G; r++)
        for (int j = 0; j < H; j++) W[(size_t)r * K + E + j] = (float)q[(size_t)j * G + r];
    free(q);
    memset(b, 0, (size_t)G * sizeof *b);
    for (int j = 0; j < H; j++) b[H + j] = 1.0f;  // unit_forget_bias
}

void text_init(TextParams *p, const TextConfig *c, Rng *rng) {
    CHECK(p->out_W, "text_init before block_alloc");
    int E = c->embed, H = c->hidden, D = text_state_size(c), O = text_outputs(c);
    if (c->pool == TEXT_POOL_BOW) {
        uniform(p->out_W, (size_t)O * D, sqrtf(6.0f / (float)(D + O)), rng);
        memset(p->out_b, 0, (size_t)O * sizeof(float));
        if (c->nb)
            for (int d = 0; d < D; d++) p->nb[d] = 1.0f;  // until text_bow_fit_nb
        return;
    }
    uniform(p->emb, (size_t)c->vocab * E, 0.05f, rng);
    init_lstm(p->lstm_W, p->lstm_b, E, H, rng);
    if (c->bidirectional) init_lstm(p->rev_W, p->rev_b, E, H, rng);
    if (c->pool == TEXT_POOL_KERAS) {
        for (int d = 0; d < D; d++) p->att_w[d] = 0.05f * rng_normal(rng);
        memset(p->att_b, 0, (size_t)c->T * sizeof(float));
    }
    if (c->pool == TEXT_POOL_QUERY) uniform(p->query, (size_t)D, 1.0f / sqrtf((float)D), rng);
    if (uses_attn(c)) {
        AttnConfig a = attn_config(c);
        attn_params_init(&p->attn, &a, rng);
    }
    uniform(p->out_W, (size_t)O * D, sqrtf(6.0f / (float)(D + O)), rng);
    memset(p->out_b, 0, (size_t)O * sizeof(float));
    // Zero until text_fit_word_scores: the model starts as it would without them.
    if (c->word_scores) memset(p->word_score, 0, (size_t)text_word_score_count(c) * sizeof(float));
}

void text_acts_alloc(TextActs *a, const TextConfig *c, int B) {
    memset(a, 0, sizeof *a);
    a->B = B;
    int T = c->T, E = c->embed, H = c->hidden, D = text_state_size(c), O = text_outputs(c);
    Block *k = &a->block;
    if (c->pool == TEXT_POOL_BOW) {  // active features, weights of the words, the dense layer
        block_add(k, &a->alpha, "alpha", 2, B, T);
        block_add(k, &a->logits, "logits", 2, B, O);
        block_add(k, &a->probs, "probs", 2, B, O);
        block_add(k, &a->losses, "losses", 1, B);
        block_add(k, &a->targets, "targets", 1, B);
        block_add(k, &a->dlogits, "dlogits", 2, B, O);
        block_alloc(k);
        a->lengths = xcalloc((size_t)B, sizeof *a->lengths);
        a->mask = xcalloc((size_t)B * T, 1);
        a->active = xmalloc((size_t)B * 2 * T * sizeof *a->active);
        a->n_active = xcalloc((size_t)B, sizeof *a->n_active);
        return;
    }
    // Training runs the gated LSTM (one dropout mask per gate), evaluation the shared one.
    size_t cache = lstm_seq_gated_cache_floats(T, B, E, H);
    if (lstm_seq_cache_floats(T, B, E, H) > cache) cache = lstm_seq_cache_floats(T, B, E, H);
    size_t scratch = lstm_seq_gated_scratch_floats(T, B, E, H);
    if (lstm_seq_scratch_floats(B, E, H) > scratch) scratch = lstm_seq_scratch_floats(B, E, H);
    block_add(k, &a->x, "x", 3, T, B, E);
    block_add(k, &a->hs, "hs", 3, T, B, H);
    block_add(k, &a->cache, "cache", 1, (int)cache);
    block_add(k, &a->in_mask, "in_mask", 3, B, 4, E);
    block_add(k, &a->rec_mask, "rec_mask", 3, B, 4, H);
    if (c->bidirectional) {
        block_add(k, &a->rhs, "rhs", 3, T, B, H);
        block_add(k, &a->rcache, "rcache", 1, (int)cache);
        block_add(k, &a->rin_mask, "rin_mask", 3, B, 4, E);
        block_add(k, &a->rrec_mask, "rrec_mask", 3, B, 4, H);
        block_add(k, &a->drhs, "drhs", 3, T, B, H);
    }
    block_add(k, &a->states, "states", 3, B, T, D);
    block_add(k, &a->pooled, "pooled", 2, B, D);
    block_add(k, &a->alpha, "alpha", 2, B, T);
    block_add(k, &a->score, "score", 2, B, T);
    block_add(k, &a->query, "query", 2, B, D);
    if (uses_attn(c)) {
        AttnConfig ac = attn_config(c);
        block_add(k, &a->prep, "prep", 1, (int)attn_prep_floats(&ac, B, T) + 1);
        block_add(k, &a->dprep, "dprep", 1, (int)attn_prep_floats(&ac, B, T) + 1);
        block_add(k, &a->acache, "acache", 1, (int)attn_step_cache_floats(&ac, B, T) + 1);
    }
    block_add(k, &a->logits, "logits", 2, B, O);
    block_add(k, &a->probs, "probs", 2, B, O);
    block_add(k, &a->losses, "losses", 1, B);
    block_add(k, &a->targets, "targets", 1, B);
    block_add(k, &a->dlogits, "dlogits", 2, B, O);
    block_add(k, &a->dpooled, "dpooled", 2, B, D);
    block_add(k, &a->dstates, "dstates", 3, B, T, D);
    block_add(k, &a->dhs, "dhs", 3, T, B, H);
    block_add(k, &a->dx, "dx", 3, T, B, E);
    block_add(k, &a->dquery, "dquery", 2, B, D);
    block_add(k, &a->scratch, "scratch", 1, (int)scratch);
    block_alloc(k);
    a->lengths = xcalloc((size_t)B, sizeof *a->lengths);
    a->mask = xcalloc((size_t)B * T, 1);
}

void text_acts_free(TextActs *a) {
    block_free(&a->block);
    free(a->lengths);
    free(a->mask);
    free(a->active);
    free(a->n_active);
    memset(a, 0, sizeof *a);
}

static float sigmoid1(float x) { return 1.0f / (1.0f + expf(-x)); }

// The LSTM and the pooling of text_forward: a->pooled (B, D) and a->alpha (B, T).
static void lstm_pool_forward(TextActs *a, const TextParams *p, const TextConfig *c, const int *ids,
                              int B, Rng *rng) {
    const int T = c->T, E = c->embed, H = c->hidden, D = text_state_size(c);
    const int *L = c->masked ? a->lengths : NULL;
    for (int t = 0; t < T; t++)
        for (int b = 0; b < B; b++) {
            int id = ids[(size_t)b * T + t];
            CHECK(id >= 0 && id < c->vocab, "word id %d of %d", id, c->vocab);
            memcpy(a->x + ((size_t)t * B + b) * E, p->emb + (size_t)id * E, (size_t)E * sizeof(float));
        }
    a->dropout_on = rng != NULL;
    const float *im = NULL, *rm = NULL, *rim = NULL, *rrm = NULL;
    if (rng) {  // one mask per gate, as Keras's implementation 1 (seq/lstm_seq.h)
        // A rate of 0 draws nothing and its mask (all ones) is passed as NULL, which spares
        // the LSTM the multiplications (seq/lstm_seq.c: one product for all four gates).
        lstm_dropout_mask(a->in_mask, (size_t)B * 4 * E, c->dropout, rng);
        lstm_dropout_mask(a->rec_mask, (size_t)B * 4 * H, c->rec_dropout, rng);
        im = c->dropout > 0 ? a->in_mask : NULL, rm = c->rec_dropout > 0 ? a->rec_mask : NULL;
        if (c->bidirectional) {
            lstm_dropout_mask(a->rin_mask, (size_t)B * 4 * E, c->dropout, rng);
            lstm_dropout_mask(a->rrec_mask, (size_t)B * 4 * H, c->rec_dropout, rng);
            rim = c->dropout > 0 ? a->rin_mask : NULL;
            rrm = c->rec_dropout > 0 ? a->rrec_mask : NULL;
        }
    }
    // The gated LSTM trains (one mask per gate) and runs the hard-sigmoid gates; evaluation
    // with sigmoid gates keeps the shared-mask LSTM.
    a->gated = rng || c->gate_act != LSTM_GATE_SIGMOID;
    if (a->gated) {
        lstm_seq_forward_gated(a->hs, a->cache, a->x, p->lstm_W, p->lstm_b, L, im, rm, 0,
                               c->gate_act, T, B, E, H);
        if (c->bidirectional)
            lstm_seq_forward_gated(a->rhs, a->rcache, a->x, p->rev_W, p->rev_b, L, rim, rrm, 1,
                                   c->gate_act, T, B, E, H);
    } else {
        lstm_seq_forward(a->hs, a->cache, a->x, p->lstm_W, p->lstm_b, L, NULL, NULL, 0, T, B, E, H);
        if (c->bidirectional)
            lstm_seq_forward(a->rhs, a->rcache, a->x, p->rev_W, p->rev_b, L, NULL, NULL, 1, T, B, E, H);
    }
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            float *s = a->states + ((size_t)b * T + t) * D;
            memcpy(s, a->hs + ((size_t)t * B + b) * H, (size_t)H * sizeof(float));
            if (c->bidirectional)
                memcpy(s + H, a->rhs + ((size_t)t * B + b) * H, (size_t)H * sizeof(float));
            if (c->word_scores) s[D - 1] = text_word_score_at(p->word_score, c, ids + (size_t)b * T, t);
        }
    memset(a->alpha, 0, (size_t)B * T * sizeof(float));
    switch (c->pool) {
    case TEXT_POOL_KERAS:
        pool_keras_attention_forward(a->pooled, a->alpha, a->score, a->states, p->att_w, p->att_b,
                                     L, B, T, D);
        break;
    case TEXT_POOL_LAST:
        pool_last_forward(a->pooled, a->states, L, B, T, D, H);
        for (int b = 0; b < B; b++) {
            int n = L ? L[b] : T;
            if (n == 0) continue;
            float w = c->bidirectional ? 0.5f : 1.0f;
            a->alpha[(size_t)b * T + n - 1] += w;
            if (c->bidirectional) a->alpha[(size_t)b * T] += w;
        }
        break;
    case TEXT_POOL_MEAN:
        pool_mean_forward(a->pooled, a->states, L, B, T, D);
        for (int b = 0; b < B; b++) {
            int n = L ? L[b] : T;
            for (int t = 0; t < n; t++) a->alpha[(size_t)b * T + t] = 1.0f / (float)n;
        }
        break;
    case TEXT_POOL_BOW:  // text_forward and text_backward take it before the LSTM
        break;
    case TEXT_POOL_FINAL_DOT:
    case TEXT_POOL_QUERY: {
        AttnConfig ac = attn_config(c);
        if (c->pool == TEXT_POOL_FINAL_DOT) pool_last_forward(a->query, a->states, L, B, T, D, H);
        else
            for (int b = 0; b < B; b++) memcpy(a->query + (size_t)b * D, p->query, (size_t)D * sizeof(float));
        attn_prepare(a->prep, a->states, &p->attn, &ac, B, T);
        attn_forward(a->pooled, a->alpha, a->acache, a->prep, a->states, a->query,
                     c->masked ? a->mask : NULL, NULL, &p->attn, &ac, 0, B, T);
        break;
    }
    }
}

double text_forward(TextActs *a, const TextParams *p, const TextConfig *c, const int *ids,
                    const int *lengths, const int *labels, int B, Rng *rng, int *correct) {
    CHECK(B >= 1 && B <= a->B, "batch %d of %d rows", B, a->B);
    const int T = c->T, E = c->embed, D = text_state_size(c), O = text_outputs(c);
    for (int b = 0; b < B; b++) {
        CHECK(lengths[b] >= 0 && lengths[b] <= T, "length %d of %d", lengths[b], T);
        a->lengths[b] = lengths[b];
        for (int t = 0; t < T; t++) a->mask[(size_t)b * T + t] = t < lengths[b];
    }
    if (c->pool == TEXT_POOL_BOW) {
        for (int b = 0; b < B; b++)
            a->n_active[b] = bow_active(a->active + (size_t)b * 2 * T, ids + (size_t)b * T, T,
                                        c->vocab, c->bigrams);
        bow_word_weights(a->alpha, ids, p->out_W, B, T, O, c->vocab, D);
        bow_sparse_forward(a->logits, a->active, a->n_active, 2 * T, p->nb, p->out_W, p->out_b, B, O, D);
        a->dropout_on = 0;
    } else {
        lstm_pool_forward(a, p, c, ids, B, rng);
        linear_forward(a->logits, a->pooled, p->out_W, p->out_b, B, D, O);
    }
    double loss = 0.0;
    if (O == 1) {
        for (int b = 0; b < B; b++) a->probs[b] = sigmoid1(a->logits[b]);
        if (labels) {
            for (int b = 0; b < B; b++) a->targets[b] = (float)labels[b];
            loss = bce_logits_forward(a->losses, a->logits, a->targets, (size_t)B) / B;
        }
    } else if (labels) {
        loss = crossentropy_forward(a->losses, a->probs, a->logits, labels, B, O) / B;
    } else {
        for (int b = 0; b < B; b++) {
            const float *z = a->logits + (size_t)b * O;
            float *q = a->probs + (size_t)b * O, mx = z[0], s = 0.0f;
            for (int k = 1; k < O; k++) mx = z[k] > mx ? z[k] : mx;
            for (int k = 0; k < O; k++) s += q[k] = expf(z[k] - mx);
            for (int k = 0; k < O; k++) q[k] /= s;
        }
    }
    if (labels && c->embed_l2 > 0) {  // bow: on the weights of the words
        double s = 0.0;
        const float *w = c->pool == TEXT_POOL_BOW ? p->out_W : p->emb;
        size_t n = c->pool == TEXT_POOL_BOW ? (size_t)O * D : (size_t)c->vocab * E;
        for (size_t i = 0; i < n; i++) s += (double)w[i] * w[i];
        if (c->word_scores)  // a word's score is one more column of its embedding
            for (int i = 0; i < text_word_score_count(c); i++)
                s += (double)p->word_score[i] * p->word_score[i];
        loss += c->embed_l2 * s;
    }
    if (correct) {
        *correct = 0;
        for (int b = 0; b < B && labels; b++) *correct += text_predicted(a, c, b, NULL) == labels[b];
    }
    return loss;
}

void text_backward(TextParams *g, TextActs *a, const TextParams *p, const TextConfig *c,
                   const int *ids, const int *labels, int B) {
    const int T = c->T, E = c->embed, H = c->hidden, D = text_state_size(c), O = text_outputs(c);
    const int *L = c->masked ? a->lengths : NULL;
    memset(a->dlogits, 0, (size_t)B * O * sizeof(float));
    if (O == 1) bce_logits_backward(a->dlogits, NULL, a->logits, a->targets, (size_t)B);
    else crossentropy_backward(a->dlogits, NULL, a->probs, labels, B, O);
    for (int i = 0; i < B * O; i++) a->dlogits[i] /= (float)B;
    if (c->pool == TEXT_POOL_BOW) {
        bow_sparse_backward(g->out_W, g->out_b, a->dlogits, a->active, a->n_active, 2 * T, p->nb, B, O, D);
        if (c->embed_l2 > 0) {
            size_t n = (size_t)O * D;
            float s = 2.0f * c->embed_l2;
            for (size_t i = 0; i < n; i++) g->out_W[i] += s * p->out_W[i];
        }
        return;
    }
    memset(a->dpooled, 0, (size_t)B * D * sizeof(float));
    linear_backward(a->dpooled, g->out_W, g->out_b, a->dlogits, a->pooled, p->out_W, B, D, O);
    memset(a->dstates, 0, (size_t)B * T * D * sizeof(float));
    switch (c->pool) {
    case TEXT_POOL_KERAS:
        pool_keras_attention_backward(a->dstates, g->att_w, g->att_b, a->dpooled, NULL, a->alpha,
                                      a->score, a->states, p->att_w, L, B, T, D);
        break;
    case TEXT_POOL_LAST:
        pool_last_backward(a->dstates, a->dpooled, L, B, T, D, H);
        break;
    case TEXT_POOL_MEAN:
        pool_mean_backward(a->dstates, a->dpooled, L, B, T, D);
        break;
    case TEXT_POOL_BOW:  // text_forward and text_backward take it before the LSTM
        break;
    case TEXT_POOL_FINAL_DOT:
    case TEXT_POOL_QUERY: {
        AttnConfig ac = attn_config(c);
        size_t np = attn_prep_floats(&ac, B, T);
        memset(a->dprep, 0, (np + 1) * sizeof(float));
        memset(a->dquery, 0, (size_t)B * D * sizeof(float));
        attn_backward(a->dstates, a->dprep, a->dquery, &g->attn, a->dpooled, NULL, a->acache,
                      a->prep, a->states, a->query, c->masked ? a->mask : NULL, NULL, &p->attn,
                      &ac, 0, B, T);
        attn_prepare_backward(a->dstates, &g->attn, a->dprep, a->states, &p->attn, &ac, B, T);
        if (c->pool == TEXT_POOL_FINAL_DOT) {
            pool_last_backward(a->dstates, a->dquery, L, B, T, D, H);
        } else {
            for (int b = 0; b < B; b++)
                for (int d = 0; d < D; d++) g->query[d] += a->dquery[(size_t)b * D + d];
        }
        break;
    }
    }
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const float *s = a->dstates + ((size_t)b * T + t) * D;
            if (c->word_scores) {
                const int *row = ids + (size_t)b * T, k = word_score_bigram(c, row, t);
                g->word_score[row[t]] += s[D - 1];
                if (k >= 0) g->word_score[k] += s[D - 1];
            }
            memcpy(a->dhs + ((size_t)t * B + b) * H, s, (size_t)H * sizeof(float));
            if (c->bidirectional)
                memcpy(a->drhs + ((size_t)t * B + b) * H, s + H, (size_t)H * sizeof(float));
        }
    memset(a->dx, 0, (size_t)T * B * E * sizeof(float));
    if (a->gated) {  // the gated LSTM of the forward, with its masks when it drew them
        const int di = a->dropout_on && c->dropout > 0, dr = a->dropout_on && c->rec_dropout > 0;
        lstm_seq_backward_gated(a->dx, g->lstm_W, g->lstm_b, a->dhs, a->cache, p->lstm_W, L,
                                di ? a->in_mask : NULL, dr ? a->rec_mask : NULL, 0, c->gate_act,
                                a->scratch, T, B, E, H);
        if (c->bidirectional)
            lstm_seq_backward_gated(a->dx, g->rev_W, g->rev_b, a->drhs, a->rcache, p->rev_W, L,
                                    di ? a->rin_mask : NULL, dr ? a->rrec_mask : NULL, 1,
                                    c->gate_act, a->scratch, T, B, E, H);
    } else {
        lstm_seq_backward(a->dx, g->lstm_W, g->lstm_b, a->dhs, a->cache, p->lstm_W, L, NULL, NULL,
                          0, a->scratch, T, B, E, H);
        if (c->bidirectional)
            lstm_seq_backward(a->dx, g->rev_W, g->rev_b, a->drhs, a->rcache, p->rev_W, L, NULL,
                              NULL, 1, a->scratch, T, B, E, H);
    }
    for (int t = 0; t < T; t++)
        for (int b = 0; b < B; b++) {
            float *ge = g->emb + (size_t)ids[(size_t)b * T + t] * E;
            const float *dx = a->dx + ((size_t)t * B + b) * E;
            for (int k = 0; k < E; k++) ge[k] += dx[k];
        }
    if (c->embed_l2 > 0) {
        size_t n = (size_t)c->vocab * E;
        float s = 2.0f * c->embed_l2;
        for (size_t i = 0; i < n; i++) g->emb[i] += s * p->emb[i];
        if (c->word_scores)
            for (int i = 0; i < text_word_score_count(c); i++) g->word_score[i] += s * p->word_score[i];
    }
}

void text_bow_fit_nb(TextParams *p, const TextConfig *c, const int *ids, const int *labels, int n) {
    CHECK(c->pool == TEXT_POOL_BOW && c->nb && p->nb, "text_bow_fit_nb without bow.nb");
    bow_nb_ratios(p->nb, ids, labels, n, c->T, c->vocab, c->bigrams, 1.0);
}

void text_fit_word_scores(TextParams *p, const TextConfig *c, const int *ids, const int *labels,
                          int n) {
    CHECK(c->word_scores && c->nb && p->word_score, "text_fit_word_scores without word scores");
    bow_nb_ratios(p->word_score, ids, labels, n, c->T, c->vocab, c->bigrams, 1.0);
}

int text_predicted(const TextActs *a, const TextConfig *c, int b, float *prob) {
    int O = text_outputs(c);
    if (O == 1) {
        float q = a->probs[b];
        // Keras's binary accuracy: class 1 above 0.5 (tf.keras: y_pred > 0.5; Keras 2.2:
        // round, half to even), so exactly 0.5 is class 0.
        if (prob) *prob = q > 0.5f ? q : 1.0f - q;
        return q > 0.5f;
    }
    const float *q = a->probs + (size_t)b * O;
    int best = 0;
    for (int k = 1; k < O; k++)
        if (q[k] > q[best]) best = k;
    if (prob) *prob = q[best];
    return best;
}

float text_keras_adam_eps(float eps, float beta2, long step) {
    CHECK(step >= 1 && beta2 >= 0.0f && beta2 < 1.0f, "step %ld, beta2 %g", step, beta2);
    return (float)((double)eps / sqrt(1.0 - pow((double)beta2, (double)step)));
}
