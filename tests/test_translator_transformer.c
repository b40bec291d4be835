// test_translator_transformer.c: the Transformer translator (models/translator_transformer.h).
//
// - A whole-model gradient check: the teacher-forced loss against central differences
//   (gradcheck.h: eps 1e-3, |analytic - numeric| <= 1e-3 + 1e-2 max(|.|)), every element of
//   every parameter tensor, on ragged sources (lengths 4 and 2 of 4) and targets (3 and 1
//   words), pre-LN and post-LN, and training with dropout 0.2 (masks drawn from one seed at
//   every evaluation) and label smoothing 0.1.
// - The padding of a source changes nothing (the loss is the same bit for bit).
// - Beam 1 through the key/value caches is greedy decoding by full teacher-forced passes: the
//   same words, and the same alignments (the map layer's cross-attention), pre- and post-LN.
// - A beam of 4 scores a hypothesis at least as likely as greedy's.
// - Beam 4 over a batch gives each sentence what beam 4 gives it alone.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/rng.h"
#include "models/translator_transformer.h"
#include "seq/vocab.h"
#include "tests/support/gradcheck.h"
#include "tests/support/test.h"
#include "tests/support/tiny.h"

enum { NB = TINY_PAIRS_B, NS = TINY_PAIRS_S, ML = TINY_PAIRS_ML };

typedef struct {
    TtModel m;
    Block hg;  // the harness's gradients (the layout of m.grads)
    int src[NB * NS], src_len[NB], words[NB * ML], lens[NB];
    int train;
} Fix;

static TtConfig tiny_config(int post_ln, float dropout, float smoothing) {
    return (TtConfig){.Vs = 7, .V = 8, .S = NS, .max_len = ML, .d_model = 4, .heads = 2,
                      .d_ff = 6, .enc_layers = 2, .dec_layers = 2, .post_ln = post_ln,
                      .dropout = dropout, .label_smoothing = smoothing, .map_layer = -1};
}

static void fix_init(Fix *f, TtConfig c, uint64_t seed) {
    memset(f, 0, sizeof *f);
    f->train = c.dropout > 0.0f || c.label_smoothing > 0.0f;
    Rng rng;
    rng_seed(&rng, seed);
    tt_init(&f->m, &c, NB, &rng);
    f->hg = f->m.grads;
    f->hg.data = xcalloc(f->m.grads.numel, sizeof(float));
    tiny_pairs(f->src, f->src_len, f->words, f->lens);
}

static void fix_free(Fix *f) {
    free(f->hg.data);
    tt_free(&f->m);
}

static void fix_forward(void *ctx, float *out) {
    Fix *f = ctx;
    Rng rng;
    rng_seed(&rng, 77);
    out[0] = (float)tt_forward(&f->m, f->src, f->src_len, f->words, f->lens, NB,
                               f->train ? &rng : NULL);
}

static void fix_backward(void *ctx, const float *dout) {
    Fix *f = ctx;
    float loss;
    fix_forward(f, &loss);
    memset(f->m.grads.data, 0, f->m.grads.numel * sizeof(float));
    tt_backward(&f->m);
    for (size_t i = 0; i < f->m.grads.numel; i++) f->hg.data[i] += f->m.grads.data[i] * dout[0];
}

static void test_whole_model_gradcheck(void) {
    static const struct {
        const char *name;
        int post_ln;
        float dropout, smoothing;
    } cases[] = {{"pre-LN", 0, 0.0f, 0.0f},
                 {"post-LN", 1, 0.0f, 0.0f},
                 {"pre-LN, dropout 0.2, label smoothing 0.1", 0, 0.2f, 0.1f}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        Fix f;
        fix_init(&f, tiny_config(cases[k].post_ln, cases[k].dropout, cases[k].smoothing), 90 + k);
        GradcheckOp op = {.ctx = &f, .forward = fix_forward, .backward = fix_backward,
                          .n_out = 1, .eps = 1e-3, .atol = 1e-3, .rtol = 1e-2};
        EXPECT(gradcheck_block(cases[k].name, op, &f.m.params, &f.hg, 100 + k) == 0,
               "%s: gradient check failed", cases[k].name);
        fix_free(&f);
    }
}

static void test_padding_changes_nothing(void) {
    Fix f;
    fix_init(&f, tiny_config(0, 0.0f, 0.0f), 5);
    const double a = tt_forward(&f.m, f.src, f.src_len, f.words, f.lens, NB, NULL);
    f.src[1 * NS + 2] = 6, f.src[1 * NS + 3] = 1;
    const double b = tt_forward(&f.m, f.src, f.src_len, f.words, f.lens, NB, NULL);
    EXPECT(a == b, "padding changed the loss: %.9g vs %.9g", a, b);
    fix_free(&f);
}

// Greedy by full passes: at step t the teacher-forced pass over the t words so far; the
// next word the most likely of position t (specials but <end> never), its alignment row t.
static void greedy_full_passes(TtModel *m, const int *src, const int *src_len, int B,
                               int *out, int *out_len, float *alpha) {
    const TtConfig *c = &m->cfg;
    const int V = c->V, S = c->S, T = ML + 1;
    int words[8 * ML] = {0}, lens[8] = {0}, done[8] = {0};
    CHECK(B <= 8, "batch %d", B);
    memset(alpha, 0, (size_t)T * B * S * sizeof(float));
    for (int b = 0; b < B; b++) out_len[b] = ML;
    for (int t = 0; t < T; t++) {
        for (int b = 0; b < B; b++) lens[b] = done[b] ? lens[b] : t;
        tt_forward(m, src, src_len, words, lens, B, NULL);
        const float *al = tt_attention(m);
        for (int b = 0; b < B; b++) {
            if (done[b]) continue;
            const float *lg = m->a.logits + ((size_t)b * m->Tb + t) * V;
            int best = VOCAB_END;
            for (int v = VOCAB_NSPECIAL; v < V; v++)
                if (lg[v] > lg[best]) best = v;
            if (t == ML) best = VOCAB_END;
            if (best == VOCAB_END) {
                done[b] = 1, out_len[b] = t;
                continue;
            }
            words[b * ML + t] = best;
            out[b * ML + t] = best;
            memcpy(alpha + ((size_t)t * B + b) * S, al + ((size_t)b * m->Tb + t) * m->Sb,
                   (size_t)m->Sb * sizeof(float));
        }
    }
}

static const int DEC_SRC[4 * NS] = {4, 6, 5, 3, 3, 3, 1, 0, 5, 0, 0, 0, 6, 4, 5, 0};
static const int DEC_LEN[4] = {4, 3, 1, 3};

static void test_beam_one_is_greedy_by_full_passes(void) {
    for (int post = 0; post <= 1; post++)
        for (uint64_t seed = 1; seed <= 4; seed++) {
            Fix f;
            TtConfig c = tiny_config(post, 0.0f, 0.0f);
            c.map_layer = (int)(seed % 2);  // both layers
            memset(&f, 0, sizeof f);
            Rng rng;
            rng_seed(&rng, 300 + seed);
            tt_init(&f.m, &c, 4, &rng);
            fill_uniform(f.m.params.data, f.m.params.numel, -0.8f, 0.8f, &rng);
            int out1[4 * ML] = {0}, len1[4], out2[4 * ML] = {0}, len2[4];
            float al1[(ML + 1) * 4 * NS], al2[(ML + 1) * 4 * NS];
            tt_decode(&f.m, DEC_SRC, DEC_LEN, 4, 1, 0.0f, out1, len1, NULL, al1);
            greedy_full_passes(&f.m, DEC_SRC, DEC_LEN, 4, out2, len2, al2);
            for (int b = 0; b < 4; b++) {
                EXPECT(len1[b] == len2[b], "post %d seed %d row %d: %d words vs %d", post,
                       (int)seed, b, len1[b], len2[b]);
                for (int t = 0; t < len1[b] && t < len2[b]; t++)
                    EXPECT(out1[b * ML + t] == out2[b * ML + t], "row %d word %d", b, t);
            }
            double worst = 0.0;
            for (int i = 0; i < (ML + 1) * 4 * NS; i++)
                worst = fmax(worst, fabs((double)al1[i] - al2[i]));
            EXPECT(worst < 1e-5, "post %d seed %d: alignments differ by %g", post, (int)seed, worst);
            tt_free(&f.m);
        }
}

// The raw log-probability of each row's words plus <end> by a teacher-forced pass.
static void sequence_logprob(TtModel *m, const int *out, const int *len, int B, double *lp) {
    tt_forward(m, DEC_SRC, DEC_LEN, out, len, B, NULL);
    for (int b = 0; b < B; b++) lp[b] = 0.0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t <= len[b]; t++)
            lp[b] -= m->a.losses[b * m->Tb + t];
}

static void test_beam_scores_at_least_greedy(void) {
    int checked = 0;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        TtModel m;
        TtConfig c = tiny_config(0, 0.0f, 0.0f);
        Rng rng;
        rng_seed(&rng, 500 + seed);
        tt_init(&m, &c, 4, &rng);
        fill_uniform(m.params.data, m.params.numel, -0.8f, 0.8f, &rng);
        int o1[4 * ML] = {0}, l1[4], o4[4 * ML] = {0}, l4[4];
        float s4[4];
        tt_decode(&m, DEC_SRC, DEC_LEN, 4, 1, 0.0f, o1, l1, NULL, NULL);
        tt_decode(&m, DEC_SRC, DEC_LEN, 4, 4, 0.0f, o4, l4, s4, NULL);
        double g[4], k[4];
        sequence_logprob(&m, o1, l1, 4, g);
        sequence_logprob(&m, o4, l4, 4, k);
        for (int b = 0; b < 4; b++) {
            if (l1[b] >= ML || l4[b] >= ML) continue;  // reached the limit: no <end> scored
            checked++;
            EXPECT(k[b] >= g[b] - 1e-4, "seed %d row %d: beam %g below greedy %g", (int)seed, b,
                   k[b], g[b]);
            EXPECT(fabs(k[b] - s4[b]) < 1e-3, "seed %d row %d: beam score %g, teacher-forced %g",
                   (int)seed, b, (double)s4[b], k[b]);
        }
        tt_free(&m);
    }
    EXPECT(checked >= 4, "only %d rows ended before the limit", checked);
}

// Beam 4 over the batch finds, for every sentence, what beam 4 finds on that sentence alone:
// the rows of the other sentences (their memories, copied only when a row changes sentence,
// and the batch compacting as sentences finish) change nothing.
enum { LONG_ML = 8 };

static void test_beam_batch_is_each_sentence_alone(void) {
    int ragged = 0;
    for (uint64_t seed = 1; seed <= 8; seed++) {
        TtModel m;
        TtConfig c = tiny_config(seed % 2 == 0, 0.0f, 0.0f);
        c.max_len = LONG_ML;  // room for sentences to end at different steps
        Rng rng;
        rng_seed(&rng, 700 + seed);
        tt_init(&m, &c, 4, &rng);
        fill_uniform(m.params.data, m.params.numel, -1.2f, 1.2f, &rng);
        int out[4 * LONG_ML] = {0}, len[4];
        float score[4];
        tt_decode(&m, DEC_SRC, DEC_LEN, 4, 4, 0.7f, out, len, score, NULL);
        for (int b = 0; b < 4; b++) {
            int one[LONG_ML] = {0}, one_len;
            float one_score;
            tt_decode(&m, DEC_SRC + b * NS, DEC_LEN + b, 1, 4, 0.7f, one, &one_len, &one_score,
                      NULL);
            EXPECT(one_len == len[b] && memcmp(one, out + b * LONG_ML, (size_t)one_len * sizeof(int)) == 0,
                   "seed %d sentence %d: %d words in the batch, %d alone", (int)seed, b, len[b],
                   one_len);
            EXPECT(fabsf(one_score - score[b]) < 1e-4f, "seed %d sentence %d: score %g, alone %g",
                   (int)seed, b, (double)score[b], (double)one_score);
            ragged += len[b] != len[0];
        }
        tt_free(&m);
    }
    EXPECT(ragged > 0, "every sentence had the same length: no batch compacted");
}

int main(void) {
    RUN(test_whole_model_gradcheck);
    RUN(test_padding_changes_nothing);
    RUN(test_beam_one_is_greedy_by_full_passes);
    RUN(test_beam_scores_at_least_greedy);
    RUN(test_beam_batch_is_each_sentence_alone);
    return test_summary();
}
