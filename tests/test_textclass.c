// test_textclass.c: the sentence classifier (models/textclass.h).
// - Whole-model gradient checks (tests/support/gradcheck.h: central differences of the loss,
//   summed in double, eps 1e-2, atol 1e-5, rtol 1e-2; every parameter tensor, every element;
//   the loss's change is taken in double before the harness rounds it to float)
//   for every pooling (keras, final-dot, query with the additive, dot, multiplicative and
//   multi-head kernels, last, mean), masked and not, one direction and both, two classes
//   (sigmoid) and three (softmax), with the dropout masks drawn (one per gate, the same at
//   every evaluation) and the embedding's L2 penalty on; with hard-sigmoid gates too (keras
//   and last pooling, with the dropout masks and without).
// - The same 32 configurations in double precision: the model's float code cannot run in
//   double (float throughout, OpenBLAS sgemm), so, as tests/test_pooling.c does for its
//   pooling, the whole model is written again here as plain loops in double (text_loss_ref:
//   embedding, both LSTM directions with lengths and the float forward's dropout masks,
//   every pooling and kernel, dense, sigmoid / softmax cross-entropy, L2) and the float
//   backward is compared with its central differences (eps 1e-6), every element of every
//   parameter: |analytic - numeric| <= 1e-5 + 1e-3 |numeric|; the float loss within 1e-5
//   relative of the double one. Seen when written (GRADCHECK_VERBOSE=1 prints each
//   configuration's worst element): at most 0.001 of that tolerance.
// - Keras's initialisation: the recurrent block's columns orthonormal, the forget gate's
//   bias 1; masked pooling ignores the padding (a padded sentence scores the same whatever
//   ids fill its padding); alpha sums to 1; without labels the forward predicts only; in
//   training the LSTM is seq/lstm_seq's gated one on the model's per-gate masks; core/adam
//   with text_keras_adam_eps is Keras's Adam (its epsilon hat).
// - The bag-of-words baseline (--pool bow, models/bow.h): its gradient check (two classes and
//   three, the L2 penalty on its weights), its layout (the dense layer alone), and that it is
//   a logistic regression on word presence: logit = b + the sum of W over the distinct
//   words, the padding and repeats adding nothing; alpha shares |W| among the words; with
//   bigram buckets, one more weight per distinct pair of adjacent words (not the padding);
//   its sparse kernels (bow_active, bow_sparse_forward / _backward) against the dense plain
//   reference (bow_features and seq/linear.h) on random rows with and without scales; the
//   naive-Bayes ratios (--nb) against a count by hand, and the nb model's gradient check
//   (every tensor but the fixed bow.nb, which has no gradient and which Adam leaves as it is).
// - Word scores (--word-scores): gradient checks (float and double) of the keras, query and
//   mean poolings with them, masked and not, both directions; the scores start at 0 or at
//   the naive-Bayes ratios (text_fit_word_scores), and fill the states' last column; with
//   bigram buckets (each pair of adjacent words adds its bucket's score) the same gradient
//   checks, and the pairs' ratios and columns by hand.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/block.h"
#include "core/adam.h"
#include "core/check.h"
#include "core/rng.h"
#include "models/bow.h"
#include "models/textclass.h"
#include "seq/linear.h"
#include "seq/lstm_seq.h"
#include "tests/support/gradcheck.h"
#include "tests/support/test.h"

enum { NB = 3, NT = 5 };

typedef struct {
    TextConfig c;
    Block params, grads, tmp;
    TextParams p, g, t;
    TextActs a;
    int ids[NB * NT], lengths[NB], labels[NB];
    int dropout;
    double base;  // the loss at the unperturbed parameters
} Fix;

static void fix_forward(void *ctx, float *out) {
    Fix *f = ctx;
    Rng rng;
    rng_seed(&rng, 99);  // the same dropout masks at every evaluation
    // The change of the loss from base, taken in double before rounding to the harness's
    // float: a float loss near 0.7 would quantise the central differences to 3e-6 steps.
    out[0] = (float)(text_forward(&f->a, &f->p, &f->c, f->ids, f->lengths, f->labels, NB,
                                  f->dropout ? &rng : NULL, NULL) - f->base);
}

static void fix_backward(void *ctx, const float *dout) {
    Fix *f = ctx;
    float loss;
    fix_forward(f, &loss);
    block_zero(&f->tmp);
    text_backward(&f->t, &f->a, &f->p, &f->c, f->ids, f->labels, NB);
    for (size_t i = 0; i < f->grads.numel; i++) f->grads.data[i] += dout[0] * f->tmp.data[i];
}

static void fix_init(Fix *f, TextConfig c, int dropout, uint64_t seed) {
    memset(f, 0, sizeof *f);
    f->c = c;
    f->dropout = dropout;
    Error err = {{0}};
    CHECK(text_config_check(&c, &err) == 0, "%s", err.msg);
    text_layout(&f->params, &f->p, &c);
    text_layout(&f->grads, &f->g, &c);
    text_layout(&f->tmp, &f->t, &c);
    block_alloc(&f->params);
    block_alloc(&f->grads);
    block_alloc(&f->tmp);
    Rng rng;
    rng_seed(&rng, seed);
    text_init(&f->p, &c, &rng);
    // Larger than Keras's initial scale, so that every path carries a gradient worth checking.
    fill_uniform(f->params.data, f->params.numel, -0.7f, 0.7f, &rng);
    text_acts_alloc(&f->a, &c, NB);
    const int lengths[NB] = {5, 2, 0};
    for (int b = 0; b < NB; b++) {
        f->lengths[b] = lengths[b];
        f->labels[b] = (int)(b % c.classes);
        for (int t = 0; t < NT; t++)
            f->ids[b * NT + t] = t < lengths[b] ? 1 + (int)rng_below(&rng, (uint32_t)c.vocab - 1) : 0;
    }
    float d;
    fix_forward(f, &d);
    f->base = d;
}

static void fix_free(Fix *f) {
    text_acts_free(&f->a);
    block_free(&f->params);
    block_free(&f->grads);
    block_free(&f->tmp);
}

static TextConfig small(TextPool pool, AttnKind kind, int masked, int bi, int classes) {
    TextConfig c = text_config_default(7);
    c.T = NT, c.embed = 3, c.hidden = 4, c.bidirectional = bi, c.pool = pool, c.attn_kind = kind;
    c.masked = masked, c.classes = classes, c.heads = kind == ATTN_MULTIHEAD ? 2 : 1;
    c.attn_size = kind == ATTN_MULTIHEAD || kind == ATTN_ADDITIVE ? 4 : 0;
    c.embed_l2 = 1e-2f;
    return c;
}

static int check(TextConfig c, int dropout, const char *name, uint64_t seed) {
    Fix f;
    fix_init(&f, c, dropout, seed);
    GradcheckInput *in = gradcheck_block_inputs(&f.params, &f.grads);
    // bow.nb, the last tensor of a bow nb model, is fixed: no gradient to check.
    const int fixed_nb = c.nb && c.pool == TEXT_POOL_BOW;
    int n_inputs = f.params.count - fixed_nb;
    CHECK(!fixed_nb || strcmp(f.params.tensors[f.params.count - 1].name, "bow.nb") == 0);
    GradcheckOp op = {.ctx = &f, .forward = fix_forward, .backward = fix_backward, .n_out = 1,
                      .inputs = in, .n_inputs = n_inputs, .eps = 1e-2, .atol = 1e-5,
                      .rtol = 1e-2};
    Rng rng;
    rng_seed(&rng, seed + 1);
    int rc = gradcheck(name, &op, &rng);
    free(in);
    fix_free(&f);
    return rc;
}

static const struct {
    TextPool pool;
    AttnKind kind;
    const char *name;
} cases[] = {{TEXT_POOL_KERAS, ATTN_NONE, "keras"},
             {TEXT_POOL_FINAL_DOT, ATTN_DOT, "final-dot"},
             {TEXT_POOL_QUERY, ATTN_ADDITIVE, "query additive"},
             {TEXT_POOL_QUERY, ATTN_DOT, "query dot"},
             {TEXT_POOL_QUERY, ATTN_MULTIPLICATIVE, "query multiplicative"},
             {TEXT_POOL_QUERY, ATTN_MULTIHEAD, "query multi-head"},
             {TEXT_POOL_LAST, ATTN_NONE, "last"},
             {TEXT_POOL_MEAN, ATTN_NONE, "mean"}};

static void test_gradcheck_poolings(void) {
    int k = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int masked = 0; masked < 2; masked++)
            for (int bi = 0; bi < 2; bi++) {
                char name[96];
                int classes = (k % 3 == 2) ? 3 : 2;
                snprintf(name, sizeof name, "%s, %s, %s, %d classes", cases[i].name,
                         masked ? "masked" : "unmasked", bi ? "bidirectional" : "forward", classes);
                EXPECT(check(small(cases[i].pool, cases[i].kind, masked, bi, classes), k % 2, name,
                             100 + (uint64_t)k) == 0, "%s", name);
                k++;
            }
}

// The hard-sigmoid gates (--recurrent-activation hard_sigmoid) through the whole model:
// keras and last pooling, masked and not, one direction and both, with the dropout masks
// drawn and without (the evaluation forward, then the gated LSTM without masks). Keras's
// initialisation keeps every gate inside the ramp here (no difference straddles a kink).
static void test_gradcheck_hard_sigmoid(void) {
    for (int k = 0; k < 8; k++) {
        TextConfig c = small(k & 1 ? TEXT_POOL_LAST : TEXT_POOL_KERAS, ATTN_NONE, (k >> 1) & 1,
                             (k >> 2) & 1, 2);
        c.gate_act = LSTM_GATE_HARD_SIGMOID;
        char name[96];
        snprintf(name, sizeof name, "hard_sigmoid, %s, %s, %s, %s", k & 1 ? "last" : "keras",
                 (k >> 1) & 1 ? "masked" : "unmasked", (k >> 2) & 1 ? "bidirectional" : "forward",
                 k % 3 ? "dropout" : "no dropout");
        EXPECT(check(c, k % 3 != 0, name, 700 + (uint64_t)k) == 0, "%s", name);
    }
}

// --- the whole model in double ---------------------------------------------------------------
// models/textclass.h's forward written again as plain loops in double precision, from a
// double copy P of the parameter Block (the same offsets) and the dropout masks the float
// forward drew (or none): the loss (mean cross-entropy plus the L2 penalty).

static const double *ref_param(const Fix *f, const double *P, const char *name) {
    const BlockTensor *t = block_find(&f->params, name);
    return t ? P + t->offset : NULL;
}

static double sigmoid_d(double x) { return 1.0 / (1.0 + exp(-x)); }

// Softmax of e (n) in place into a (n); n == 0: nothing.
static void softmax_d(double *a, const double *e, int n) {
    double mx = -1e300, s = 0;
    for (int t = 0; t < n; t++) mx = e[t] > mx ? e[t] : mx;
    for (int t = 0; t < n; t++) s += a[t] = exp(e[t] - mx);
    for (int t = 0; t < n; t++) a[t] /= s;
}

enum { MAXD = 16, MAXA = 16 };

static double text_loss_ref(const Fix *f, const double *P) {
    const TextConfig *c = &f->c;
    const int E = c->embed, H = c->hidden, D = text_state_size(c), O = text_outputs(c), K = E + H;
    CHECK(D <= MAXD && H <= MAXD && O <= MAXD, "reference sizes");
    const double *emb = ref_param(f, P, "emb");
    double S[NB][NT][MAXD];  // states (B, T, D)
    for (int dir = 0; dir < (c->bidirectional ? 2 : 1); dir++) {
        const double *W = ref_param(f, P, dir ? "lstm_rev.W" : "lstm.W");
        const double *bias = ref_param(f, P, dir ? "lstm_rev.b" : "lstm.b");
        const float *im = f->dropout ? (dir ? f->a.rin_mask : f->a.in_mask) : NULL;
        const float *rm = f->dropout ? (dir ? f->a.rrec_mask : f->a.rec_mask) : NULL;
        for (int r = 0; r < NB; r++) {
            double h[MAXD] = {0}, cs[MAXD] = {0};
            for (int s = 0; s < NT; s++) {
                int t = dir ? NT - 1 - s : s;
                double xh[2 * MAXD + 8], pre[4 * MAXD];
                const int id = f->ids[r * NT + t];
                for (int g = 0; g < 4 * H; g++) {  // gate g / H's masks (B, 4, E), (B, 4, H)
                    const int q = g / H;
                    for (int k = 0; k < E; k++)
                        xh[k] = emb[id * E + k] * (im ? im[(r * 4 + q) * E + k] : 1.0f);
                    for (int k = 0; k < H; k++) xh[E + k] = h[k] * (rm ? rm[(r * 4 + q) * H + k] : 1.0f);
                    double z = bias[g];
                    for (int k = 0; k < K; k++) z += W[g * K + k] * xh[k];
                    pre[g] = z;
                }
                if (!c->masked || t < f->lengths[r])
                    for (int k = 0; k < H; k++) {
                        double i = sigmoid_d(pre[k]), fg = sigmoid_d(pre[H + k]);
                        double gg = tanh(pre[2 * H + k]), o = sigmoid_d(pre[3 * H + k]);
                        cs[k] = fg * cs[k] + i * gg;
                        h[k] = o * tanh(cs[k]);
                    }
                for (int k = 0; k < H; k++) S[r][t][dir * H + k] = h[k];
            }
        }
    }
    const double *ws = ref_param(f, P, "word_score");  // the states' last column
    for (int r = 0; r < NB && c->word_scores; r++)
        for (int t = 0; t < NT; t++) {  // with bigrams, plus the pair (t, t + 1) of two words
            const int *row = f->ids + r * NT;
            S[r][t][D - 1] = ws[row[t]];
            if (c->bigrams > 0 && t + 1 < NT && row[t] > 0 && row[t + 1] > 0)
                S[r][t][D - 1] += ws[c->vocab + bow_bigram_bucket(row[t], row[t + 1], c->bigrams)];
        }
    const double *oW = ref_param(f, P, "out.W"), *ob = ref_param(f, P, "out.b");
    double loss = 0;
    for (int r = 0; r < NB; r++) {
        const int n = c->masked ? f->lengths[r] : NT;
        double pooled[MAXD] = {0}, last[MAXD] = {0}, e[NT], a[NT] = {0};
        for (int d = 0; d < D && n > 0; d++) last[d] = d < H ? S[r][n - 1][d] : S[r][0][d];
        int attend = 1;  // pooled = sum_t a_t S_t from the scores e
        switch (c->pool) {
        case TEXT_POOL_KERAS: {
            const double *w = ref_param(f, P, "att.w"), *b = ref_param(f, P, "att.b");
            for (int t = 0; t < n; t++) {
                double z = b[t];
                for (int d = 0; d < D; d++) z += S[r][t][d] * w[d];
                e[t] = tanh(z);
            }
            break;
        }
        case TEXT_POOL_FINAL_DOT:
            for (int t = 0; t < n; t++) {
                e[t] = 0;
                for (int d = 0; d < D; d++) e[t] += last[d] * S[r][t][d];
            }
            break;
        case TEXT_POOL_QUERY: {
            const double *q = ref_param(f, P, "query");
            const int A = c->attn_size > 0 ? c->attn_size : D;
            CHECK(A <= MAXA, "reference attention size");
            if (c->attn_kind == ATTN_ADDITIVE) {
                const double *Wk = ref_param(f, P, "attn.W_k"), *Wq = ref_param(f, P, "attn.W_q");
                const double *b = ref_param(f, P, "attn.b"), *w = ref_param(f, P, "attn.w");
                for (int t = 0; t < n; t++) {
                    e[t] = 0;
                    for (int j = 0; j < A; j++) {
                        double z = b[j];
                        for (int d = 0; d < D; d++) z += Wk[j * D + d] * S[r][t][d] + Wq[j * D + d] * q[d];
                        e[t] += w[j] * tanh(z);
                    }
                }
            } else if (c->attn_kind == ATTN_DOT) {
                for (int t = 0; t < n; t++) {
                    e[t] = 0;
                    for (int d = 0; d < D; d++) e[t] += q[d] * S[r][t][d];
                }
            } else if (c->attn_kind == ATTN_MULTIPLICATIVE) {
                const double *Wm = ref_param(f, P, "attn.W");
                for (int t = 0; t < n; t++) {
                    e[t] = 0;
                    for (int i = 0; i < D; i++)
                        for (int d = 0; d < D; d++) e[t] += q[i] * Wm[i * D + d] * S[r][t][d];
                }
            } else {  // multi-head: per head a scaled dot of (Wq q)_h and (Wk S_t)_h
                CHECK(c->attn_kind == ATTN_MULTIHEAD, "reference kernel");
                const double *Wq = ref_param(f, P, "attn.Wq"), *Wk = ref_param(f, P, "attn.Wk");
                const double *Wv = ref_param(f, P, "attn.Wv"), *Wo = ref_param(f, P, "attn.Wo");
                const int nh = c->heads, dh = A / nh;
                double Q[MAXA] = {0}, Kt[NT][MAXA] = {{0}}, Vt[NT][MAXA] = {{0}}, ctx[MAXA] = {0};
                for (int j = 0; j < A; j++) {
                    for (int d = 0; d < D; d++) Q[j] += Wq[j * D + d] * q[d];
                    for (int t = 0; t < n; t++)
                        for (int d = 0; d < D; d++) {
                            Kt[t][j] += Wk[j * D + d] * S[r][t][d];
                            Vt[t][j] += Wv[j * D + d] * S[r][t][d];
                        }
                }
                for (int hd = 0; hd < nh; hd++) {
                    double eh[NT], ah[NT];
                    for (int t = 0; t < n; t++) {
                        eh[t] = 0;
                        for (int j = hd * dh; j < (hd + 1) * dh; j++) eh[t] += Q[j] * Kt[t][j];
                        eh[t] /= sqrt((double)dh);
                    }
                    softmax_d(ah, eh, n);
                    for (int t = 0; t < n; t++)
                        for (int j = hd * dh; j < (hd + 1) * dh; j++) ctx[j] += ah[t] * Vt[t][j];
                }
                for (int d = 0; d < D; d++)
                    for (int j = 0; j < A; j++) pooled[d] += Wo[d * A + j] * ctx[j];
                attend = 0;
            }
            break;
        }
        case TEXT_POOL_LAST:
            memcpy(pooled, last, sizeof pooled);
            attend = 0;
            break;
        case TEXT_POOL_MEAN:
            for (int t = 0; t < n; t++)
                for (int d = 0; d < D; d++) pooled[d] += S[r][t][d] / n;
            attend = 0;
            break;
        case TEXT_POOL_BOW:  // no LSTM: test_bow_is_logistic_regression and test_gradcheck_bow
            CHECK(0, "the double-precision reference has no bag-of-words model");
            break;
        }
        if (attend) {
            softmax_d(a, e, n);
            for (int t = 0; t < n; t++)
                for (int d = 0; d < D; d++) pooled[d] += a[t] * S[r][t][d];
        }
        double z[MAXD];
        for (int o = 0; o < O; o++) {
            z[o] = ob[o];
            for (int d = 0; d < D; d++) z[o] += oW[o * D + d] * pooled[d];
        }
        if (O == 1) {
            double y = f->labels[r];
            loss += fmax(z[0], 0.0) - z[0] * y + log1p(exp(-fabs(z[0])));
        } else {
            double mx = z[0], s = 0;
            for (int o = 1; o < O; o++) mx = fmax(mx, z[o]);
            for (int o = 0; o < O; o++) s += exp(z[o] - mx);
            loss += mx + log(s) - z[f->labels[r]];
        }
    }
    loss /= NB;
    double l2 = 0;
    for (int i = 0; i < c->vocab * E; i++) l2 += emb[i] * emb[i];
    for (int i = 0; i < c->vocab + c->bigrams && c->word_scores; i++) l2 += ws[i] * ws[i];
    return loss + c->embed_l2 * l2;
}

// The float backward against central differences (eps 1e-6) of text_loss_ref, every element
// of every parameter: |analytic - numeric| <= 1e-5 + 1e-3 |numeric|. Also the float forward's
// loss against the double one. Returns the number of elements out of tolerance.
static int check_double(TextConfig c, int dropout, const char *name, uint64_t seed) {
    Fix f;
    fix_init(&f, c, dropout, seed);
    Rng rng;
    rng_seed(&rng, 99);  // fix_forward's masks, kept in f.a for the reference
    double loss = text_forward(&f.a, &f.p, &f.c, f.ids, f.lengths, f.labels, NB,
                               dropout ? &rng : NULL, NULL);
    block_zero(&f.grads);
    text_backward(&f.g, &f.a, &f.p, &f.c, f.ids, f.labels, NB);
    double *P = malloc(f.params.numel * sizeof *P);
    for (size_t i = 0; i < f.params.numel; i++) P[i] = f.params.data[i];
    double ref = text_loss_ref(&f, P);
    int bad = 0;
    EXPECT(fabs(loss - ref) <= 1e-5 * (1 + fabs(ref)), "%s: loss %.9g, double %.9g", name, loss, ref);
    double worst = 0, worst_num = 0;
    size_t worst_i = 0;
    for (size_t i = 0; i < f.params.numel; i++) {
        const double keep = P[i], eps = 1e-6;
        P[i] = keep + eps;
        double up = text_loss_ref(&f, P);
        P[i] = keep - eps;
        double down = text_loss_ref(&f, P);
        P[i] = keep;
        double num = (up - down) / (2 * eps), ana = f.grads.data[i];
        double excess = fabs(ana - num) / (1e-5 + 1e-3 * fabs(num));
        if (excess > worst) worst = excess, worst_i = i, worst_num = num;
        bad += excess > 1;
    }
    const char *tensor = "?";
    for (int k = 0; k < f.params.count; k++)
        if (worst_i >= f.params.tensors[k].offset &&
            worst_i < f.params.tensors[k].offset + f.params.tensors[k].numel)
            tensor = f.params.tensors[k].name;
    EXPECT(bad == 0, "%s: %d elements out of tolerance, worst %s at block index %zu: float %.9g, "
                     "double central difference %.9g", name, bad, tensor, worst_i,
           f.grads.data[worst_i], worst_num);
    if (getenv("GRADCHECK_VERBOSE"))
        printf("  %-50s worst %.3f of tolerance (%s)\n", name, worst, tensor);
    free(P);
    fix_free(&f);
    return bad;
}

// Every pooling and kernel, masked and not, one direction and both, two and three classes,
// with dropout masks and without, against the double-precision model.
static void test_double_gradcheck_poolings(void) {
    int k = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (int masked = 0; masked < 2; masked++)
            for (int bi = 0; bi < 2; bi++) {
                char name[96];
                int classes = (k % 3 == 1) ? 3 : 2;
                snprintf(name, sizeof name, "%s, %s, %s, %d classes%s", cases[i].name,
                         masked ? "masked" : "unmasked", bi ? "bidirectional" : "forward",
                         classes, k % 2 ? "" : ", dropout");
                check_double(small(cases[i].pool, cases[i].kind, masked, bi, classes), k % 2 == 0,
                             name, 300 + (uint64_t)k);
                k++;
            }
}

static void test_keras_initialisation(void) {
    TextConfig c = text_config_default(50);
    c.hidden = 8, c.embed = 5;
    Block b = {0};
    TextParams p;
    text_layout(&b, &p, &c);
    block_alloc(&b);
    Rng rng;
    rng_seed(&rng, 1);
    text_init(&p, &c, &rng);
    const int H = 8, K = 5 + 8;
    for (int i = 0; i < H; i++)
        for (int j = 0; j < H; j++) {
            double d = 0;
            for (int r = 0; r < 4 * H; r++) d += (double)p.lstm_W[r * K + 5 + i] * p.lstm_W[r * K + 5 + j];
            EXPECT_NEAR(d, i == j ? 1.0 : 0.0, 1e-5, 0);
        }
    for (int j = 0; j < 4 * H; j++) EXPECT(p.lstm_b[j] == (j >= H && j < 2 * H ? 1.0f : 0.0f));
    for (int i = 0; i < 50 * 5; i++) EXPECT(fabsf(p.emb[i]) <= 0.05f);
    for (int t = 0; t < c.T; t++) EXPECT(p.att_b[t] == 0.0f);
    EXPECT(block_find(&b, "att.b")->numel == 32, "one attention bias per step");
    block_free(&b);
}

static void test_masking_ignores_padding(void) {
    for (int pool = 0; pool <= TEXT_POOL_MEAN; pool++) {
        TextConfig c = small((TextPool)pool, ATTN_ADDITIVE, 1, 1, 2);
        Fix f;
        fix_init(&f, c, 0, 7);
        float p1[NB], p2[NB];
        text_forward(&f.a, &f.p, &f.c, f.ids, f.lengths, NULL, NB, NULL, NULL);
        memcpy(p1, f.a.probs, sizeof p1);
        for (int b = 0; b < NB; b++) {
            double s = 0;
            for (int t = 0; t < NT; t++) {
                s += f.a.alpha[b * NT + t];
                if (t >= f.lengths[b]) EXPECT(f.a.alpha[b * NT + t] == 0.0f, "alpha on padding");
            }
            EXPECT(f.lengths[b] == 0 ? s == 0 : fabs(s - 1) < 1e-5, "%s: alpha sums to %g",
                   text_pool_name((TextPool)pool), s);
        }
        for (int b = 0; b < NB; b++)
            for (int t = f.lengths[b]; t < NT; t++) f.ids[b * NT + t] = 6;
        text_forward(&f.a, &f.p, &f.c, f.ids, f.lengths, NULL, NB, NULL, NULL);
        memcpy(p2, f.a.probs, sizeof p2);
        for (int b = 0; b < NB; b++)
            EXPECT(p1[b] == p2[b], "%s: the padding's ids changed row %d", text_pool_name((TextPool)pool), b);
        // Unmasked, the padding's ids matter (the demo runs the LSTM through them).
        f.c.masked = 0;
        text_forward(&f.a, &f.p, &f.c, f.ids, f.lengths, NULL, NB, NULL, NULL);
        EXPECT(f.a.probs[1] != p1[1], "%s: unmasked ignores the padding", text_pool_name((TextPool)pool));
        int pred = text_predicted(&f.a, &f.c, 0, NULL);
        EXPECT(pred == 0 || pred == 1);
        fix_free(&f);
    }
}

// In training the LSTM takes one dropout mask per gate (Keras's implementation 1, which
// tf.keras forces with recurrent_dropout): the model's states are lstm_seq_forward_gated's
// on the masks it drew, (B, 4, embed) and (B, 4, hidden), and the four gates' masks differ.
static void test_dropout_mask_per_gate(void) {
    TextConfig c = small(TEXT_POOL_MEAN, ATTN_NONE, 1, 0, 2);
    Fix f;
    fix_init(&f, c, 1, 21);
    Rng rng;
    rng_seed(&rng, 5);
    text_forward(&f.a, &f.p, &f.c, f.ids, f.lengths, f.labels, NB, &rng, NULL);
    const int E = c.embed, H = c.hidden;
    float *cache = xmalloc(lstm_seq_gated_cache_floats(NT, NB, E, H) * sizeof(float));
    float hs[NT * NB * 4];
    CHECK(H <= 4);
    lstm_seq_forward_gated(hs, cache, f.a.x, f.p.lstm_W, f.p.lstm_b, f.a.lengths, f.a.in_mask,
                           f.a.rec_mask, 0, LSTM_GATE_SIGMOID, NT, NB, E, H);
    for (int i = 0; i < NT * NB * H; i++) EXPECT_NEAR(f.a.hs[i], hs[i], 1e-6, 1e-5);
    int differ = 0;
    for (int b = 0; b < NB; b++)
        for (int q = 1; q < 4; q++) {
            differ += memcmp(f.a.in_mask + (b * 4 + q) * E, f.a.in_mask + b * 4 * E, E * sizeof(float)) != 0;
            differ += memcmp(f.a.rec_mask + (b * 4 + q) * H, f.a.rec_mask + b * 4 * H, H * sizeof(float)) != 0;
        }
    EXPECT(differ > 0, "the four gates got the same masks");
    free(cache);
    fix_free(&f);
}

// core/adam with text_keras_adam_eps is Keras's Adam (epsilon on the uncorrected sqrt(v)),
// computed here in double, for gradients near and far below the epsilon; with the plain
// epsilon the tiny gradients' updates differ.
static void test_keras_adam_epsilon(void) {
    const float g[4] = {1e-1f, 1e-5f, 3e-8f, -2e-9f};
    float p[4] = {0}, m[4] = {0}, v[4] = {0}, pp[4] = {0}, mp[4] = {0}, vp[4] = {0};
    double kp[4] = {0}, km[4] = {0}, kv[4] = {0};
    AdamConfig cfg = adam_defaults(1e-3f);
    cfg.eps = 1e-7f;
    for (long t = 1; t <= 5; t++) {
        AdamConfig k = cfg;
        k.eps = text_keras_adam_eps(cfg.eps, cfg.beta2, t);
        adam_update(p, g, m, v, 4, &k, t, 1e-3f);
        adam_update(pp, g, mp, vp, 4, &cfg, t, 1e-3f);
        double lr_t = 1e-3 * sqrt(1 - pow(0.999, (double)t)) / (1 - pow(0.9, (double)t));
        for (int i = 0; i < 4; i++) {
            km[i] = 0.9 * km[i] + 0.1 * g[i];
            kv[i] = 0.999 * kv[i] + 0.001 * (double)g[i] * g[i];
            kp[i] -= lr_t * km[i] / (sqrt(kv[i]) + 1e-7);
        }
    }
    for (int i = 0; i < 4; i++) EXPECT_NEAR(p[i], kp[i], 1e-12, 1e-4);
    EXPECT(fabs(pp[2] - kp[2]) > 1e-2 * fabs(kp[2]), "the plain epsilon should differ: %g %g", pp[2], kp[2]);
}

// Two classes at probability exactly 0.5 (a zero dense layer) predict class 0, as Keras's
// binary accuracy counts it.
static void test_half_is_class_zero(void) {
    TextConfig c = small(TEXT_POOL_MEAN, ATTN_NONE, 1, 0, 2);
    Fix f;
    fix_init(&f, c, 0, 23);
    memset(f.p.out_W, 0, (size_t)c.hidden * sizeof(float));
    f.p.out_b[0] = 0.0f;
    int correct = -1;
    text_forward(&f.a, &f.p, &f.c, f.ids, f.lengths, f.labels, NB, NULL, &correct);
    float prob = 0;
    EXPECT(f.a.probs[0] == 0.5f && text_predicted(&f.a, &f.c, 0, &prob) == 0 && prob == 0.5f,
           "p %g predicts %d", f.a.probs[0], text_predicted(&f.a, &f.c, 0, NULL));
    EXPECT(correct == 2, "labels 0, 1, 0 at p = 0.5: %d right", correct);
    fix_free(&f);
}

static void test_config_check(void) {
    Error err = {{0}};
    TextConfig c = text_config_default(10);
    EXPECT(text_config_check(&c, &err) == 0, "%s", err.msg);
    c.classes = 1;
    EXPECT(text_config_check(&c, &err) == -1 && strstr(err.msg, "classes"), "%s", err.msg);
    c = text_config_default(10);
    c.pool = TEXT_POOL_QUERY, c.attn_kind = ATTN_LOCAL_MONOTONIC;
    EXPECT(text_config_check(&c, &err) == -1 && strstr(err.msg, "local"), "%s", err.msg);
    c = text_config_default(10);
    c.dropout = 1.0f;
    EXPECT(text_config_check(&c, &err) == -1);
    TextPool p;
    EXPECT(text_pool_parse("final-dot", &p) == 0 && p == TEXT_POOL_FINAL_DOT);
    EXPECT(text_pool_parse("attention", &p) == -1);
}

// Word scores (--word-scores): the keras, query (additive, dot) and mean poolings, masked
// and not, one direction and both, with and without dropout, against central differences
// in float and against the double-precision model; with nb the scores are learned like
// any parameter (word_score is checked, not skipped as bow.nb is).
static void test_gradcheck_word_scores(void) {
    static const struct {
        TextPool pool;
        AttnKind kind;
        const char *name;
    } ws[] = {{TEXT_POOL_KERAS, ATTN_NONE, "keras"},
              {TEXT_POOL_QUERY, ATTN_ADDITIVE, "query additive"},
              {TEXT_POOL_QUERY, ATTN_DOT, "query dot"},
              {TEXT_POOL_MEAN, ATTN_NONE, "mean"}};
    int k = 0;
    for (size_t i = 0; i < sizeof ws / sizeof *ws; i++)
        for (int masked = 0; masked < 2; masked++)
            for (int bi = 0; bi < 2; bi++) {
                TextConfig c = small(ws[i].pool, ws[i].kind, masked, bi, k % 3 == 2 ? 3 : 2);
                c.word_scores = 1, c.nb = c.classes == 2 && k % 2;
                char name[96];
                snprintf(name, sizeof name, "word scores, %s, %s, %s, %d classes", ws[i].name,
                         masked ? "masked" : "unmasked", bi ? "bidirectional" : "forward", c.classes);
                EXPECT(check(c, k % 2, name, 900 + (uint64_t)k) == 0, "%s", name);
                EXPECT(check_double(c, k % 2 == 0, name, 950 + (uint64_t)k) == 0, "%s (double)", name);
                k++;
            }
    // With bigram buckets: each pair of adjacent words adds its bucket's score.
    for (size_t i = 0; i < sizeof ws / sizeof *ws; i++)
        for (int masked = 0; masked < 2; masked++) {
            TextConfig c = small(ws[i].pool, ws[i].kind, masked, (int)i % 2, k % 3 == 2 ? 3 : 2);
            c.word_scores = 1, c.nb = c.classes == 2 && k % 2, c.bigrams = 5;
            char name[96];
            snprintf(name, sizeof name, "word and bigram scores, %s, %s, %d classes", ws[i].name,
                     masked ? "masked" : "unmasked", c.classes);
            EXPECT(check(c, k % 2, name, 900 + (uint64_t)k) == 0, "%s", name);
            EXPECT(check_double(c, k % 2 == 0, name, 950 + (uint64_t)k) == 0, "%s (double)", name);
            k++;
        }
}

// Bigram scores (--word-scores --bigrams K): text_fit_word_scores fills the words' and the
// pair buckets' naive-Bayes ratios (bow_nb_ratios with K); a step's column is its word's
// score plus its pair's with the next word, none across the padding.
static void test_word_bigram_scores(void) {
    const int ids[4 * 3] = {1, 2, 0, 1, 0, 0, 3, 3, 0, 3, 3, 0}, labels[4] = {1, 1, 0, 0};
    enum { K = 5 };
    float r[4 + K];
    bow_nb_ratios(r, ids, labels, 4, 3, 4, K, 1.0);
    TextConfig c = text_config_default(4);
    c.T = 3, c.embed = 2, c.hidden = 3, c.pool = TEXT_POOL_MEAN, c.masked = 1;
    c.word_scores = 1, c.nb = 1, c.bigrams = K;
    Error err = {{0}};
    EXPECT(text_config_check(&c, &err) == 0, "%s", err.msg);
    EXPECT(text_word_score_count(&c) == 4 + K && text_state_size(&c) == 4, "%d scores, state %d",
           text_word_score_count(&c), text_state_size(&c));
    Block blk = {0};
    TextParams p;
    text_layout(&blk, &p, &c);
    block_alloc(&blk);
    Rng rng;
    rng_seed(&rng, 5);
    text_init(&p, &c, &rng);
    text_fit_word_scores(&p, &c, ids, labels, 4);
    for (int k = 0; k < 4 + K; k++)
        EXPECT(p.word_score[k] == r[k], "word_score[%d] %g, not %g", k, p.word_score[k], r[k]);
    const int k12 = 4 + bow_bigram_bucket(1, 2, K), k33 = 4 + bow_bigram_bucket(3, 3, K);
    EXPECT(r[k12] > 0 && r[k33] < 0, "the pairs' ratios: (1, 2) %g of class 1, (3, 3) %g of class 0",
           r[k12], r[k33]);
    EXPECT(text_word_score_at(p.word_score, &c, ids, 0) == r[1] + r[k12], "(1, 2) at step 0");
    EXPECT(text_word_score_at(p.word_score, &c, ids, 1) == r[2], "2 then the padding: no pair");
    TextActs a;
    text_acts_alloc(&a, &c, 4);
    const int lengths[4] = {2, 1, 2, 2};
    text_forward(&a, &p, &c, ids, lengths, NULL, 4, NULL, NULL);
    EXPECT_NEAR(a.pooled[0 * 4 + 3], (r[1] + r[k12] + r[2]) / 2, 1e-6, 1e-6);
    EXPECT_NEAR(a.pooled[1 * 4 + 3], r[1], 1e-6, 1e-6);
    EXPECT_NEAR(a.pooled[2 * 4 + 3], (r[3] + r[k33] + r[3]) / 2, 1e-6, 1e-6);
    text_acts_free(&a);
    block_free(&blk);
    c.word_scores = 0, c.nb = 0;
    EXPECT(text_config_check(&c, &err) == -1 && strstr(err.msg, "bigram"), "bigrams without word scores: %s", err.msg);
}

// text_fit_word_scores sets each word's score to its naive-Bayes ratio (bow_nb_ratios,
// words only); the scores start at 0 without it; the states' last column is the score of
// the step's word (a changed score moves the pooled vector's last entry, mean pooling,
// by its share); refused with the last state, final-dot and bow, and nb needs two classes.
static void test_word_scores(void) {
    const int ids[4 * 3] = {1, 2, 0, 1, 0, 0, 3, 0, 0, 3, 3, 0}, labels[4] = {1, 1, 0, 0};
    float r[4];
    bow_nb_ratios(r, ids, labels, 4, 3, 4, 0, 1.0);
    TextConfig c = text_config_default(4);
    c.T = 3, c.embed = 2, c.hidden = 3, c.pool = TEXT_POOL_MEAN, c.masked = 1;
    c.word_scores = 1, c.nb = 1;
    Error err = {{0}};
    EXPECT(text_config_check(&c, &err) == 0, "%s", err.msg);
    EXPECT(text_state_size(&c) == 4, "state size %d: hidden + 1", text_state_size(&c));
    Block blk = {0};
    TextParams p;
    text_layout(&blk, &p, &c);
    block_alloc(&blk);
    Rng rng;
    rng_seed(&rng, 5);
    text_init(&p, &c, &rng);
    EXPECT(p.word_score && p.word_score[1] == 0.0f && p.word_score[3] == 0.0f, "scores start at 0");
    text_fit_word_scores(&p, &c, ids, labels, 4);
    for (int k = 0; k < 4; k++)
        EXPECT(p.word_score[k] == r[k], "word_score[%d] %g, not %g", k, p.word_score[k], r[k]);
    TextActs a;
    text_acts_alloc(&a, &c, 4);
    const int lengths[4] = {2, 1, 1, 2};
    text_forward(&a, &p, &c, ids, lengths, NULL, 4, NULL, NULL);
    EXPECT_NEAR(a.pooled[0 * 4 + 3], (r[1] + r[2]) / 2, 1e-6, 1e-6);
    EXPECT_NEAR(a.pooled[3 * 4 + 3], r[3], 1e-6, 1e-6);
    text_acts_free(&a);
    block_free(&blk);
    const TextPool refused[] = {TEXT_POOL_LAST, TEXT_POOL_FINAL_DOT, TEXT_POOL_BOW};
    for (int i = 0; i < 3; i++) {
        TextConfig d = c;
        d.pool = refused[i], d.nb = 0;
        EXPECT(text_config_check(&d, &err) == -1 && strstr(err.msg, "word scores"), "%s: %s",
               text_pool_name(refused[i]), err.msg);
    }
    c.classes = 3;
    EXPECT(text_config_check(&c, &err) == -1 && strstr(err.msg, "two classes"), "%s", err.msg);
}

static void test_gradcheck_bow(void) {
    for (int classes = 2; classes <= 3; classes++) {
        char name[64];
        snprintf(name, sizeof name, "bow, %d classes", classes);
        EXPECT(check(small(TEXT_POOL_BOW, ATTN_NONE, 0, 0, classes), 0, name, 300 + (uint64_t)classes) == 0,
               "%s", name);
        TextConfig c = small(TEXT_POOL_BOW, ATTN_NONE, 0, 0, classes);
        c.bigrams = 4;
        snprintf(name, sizeof name, "bow with 4 bigram buckets, %d classes", classes);
        EXPECT(check(c, 0, name, 310 + (uint64_t)classes) == 0, "%s", name);
    }
    TextConfig c = small(TEXT_POOL_BOW, ATTN_NONE, 0, 0, 2);
    c.bigrams = 4, c.nb = 1;  // fix_init's uniform fill gives bow.nb scales in +-0.7
    EXPECT(check(c, 0, "bow, naive-Bayes scaled, 4 bigram buckets", 320) == 0, "bow nb");
}

// The sparse kernels of the bag of words against the dense reference: x = bow_features, then
// x * r through linear_forward / linear_backward.
static void test_bow_sparse_matches_dense(void) {
    enum { B = 6, T = 7, V = 9, K = 5, O = 3, D = V + K };
    Rng rng;
    rng_seed(&rng, 41);
    int ids[B * T], idx[B * 2 * T], n[B];
    for (int i = 0; i < B * T; i++) ids[i] = (int)rng_below(&rng, V);  // padding anywhere
    for (int i = 0; i < T; i++) ids[2 * T + i] = 0;                      // an empty row
    float x[B * D], r[D], W[O * D], bias[O], dl[B * O];
    fill_uniform(r, D, -2.0f, 2.0f, &rng);
    fill_uniform(W, O * D, -1.0f, 1.0f, &rng);
    fill_uniform(bias, O, -1.0f, 1.0f, &rng);
    fill_uniform(dl, B * O, -1.0f, 1.0f, &rng);
    bow_features(x, ids, B, T, V, K);
    for (int b = 0; b < B; b++) {
        n[b] = bow_active(idx + b * 2 * T, ids + b * T, T, V, K);
        int m = 0;
        for (int k = 0; k < D; k++) m += x[b * D + k] != 0.0f;
        EXPECT(n[b] == m, "row %d: %d active features, the dense row has %d", b, n[b], m);
        for (int i = 0; i < n[b]; i++) {
            int k = idx[b * 2 * T + i];
            EXPECT(x[b * D + k] == 1.0f && (i == 0 || k > idx[b * 2 * T + i - 1]), "row %d feature %d", b, k);
        }
    }
    EXPECT(n[2] == 0, "the padding is never a feature");
    for (int scaled = 0; scaled <= 1; scaled++) {
        float xs[B * D], want[B * O], got[B * O];
        for (int i = 0; i < B * D; i++) xs[i] = x[i] * (scaled ? r[i % D] : 1.0f);
        linear_forward(want, xs, W, bias, B, D, O);
        bow_sparse_forward(got, idx, n, 2 * T, scaled ? r : NULL, W, bias, B, O, D);
        for (int i = 0; i < B * O; i++) EXPECT_NEAR(got[i], want[i], 1e-5, 1e-5);
        float dWw[O * D] = {0}, dbw[O] = {0}, dWg[O * D] = {0}, dbg[O] = {0};
        linear_backward(NULL, dWw, dbw, dl, xs, W, B, D, O);
        bow_sparse_backward(dWg, dbg, dl, idx, n, 2 * T, scaled ? r : NULL, B, O, D);
        for (int i = 0; i < O * D; i++) EXPECT_NEAR(dWg[i], dWw[i], 1e-5, 1e-5);
        for (int i = 0; i < O; i++) EXPECT_NEAR(dbg[i], dbw[i], 1e-5, 1e-5);
    }
}

// Wang & Manning's ratios on four rows counted by hand (alpha 1, V 4, no bigrams): class 1
// rows {1, 2}, {1}; class 0 rows {3}, {3, 3} (a repeat counts once). p = 1 + (2, 1, 0) =
// (3, 2, 1), |p| 6; q = 1 + (0, 0, 2) = (1, 1, 3), |q| 5: r = log((p / 6) / (q / 5)).
static void test_bow_nb_ratios(void) {
    const int ids[4 * 3] = {1, 2, 0, 1, 0, 0, 3, 0, 0, 3, 3, 0}, labels[4] = {1, 1, 0, 0};
    float r[4];
    bow_nb_ratios(r, ids, labels, 4, 3, 4, 0, 1.0);
    EXPECT(r[0] == 0.0f, "the padding's ratio %g", r[0]);
    EXPECT_NEAR(r[1], log((3.0 / 6) / (1.0 / 5)), 1e-6, 1e-6);
    EXPECT_NEAR(r[2], log((2.0 / 6) / (1.0 / 5)), 1e-6, 1e-6);
    EXPECT_NEAR(r[3], log((1.0 / 6) / (3.0 / 5)), 1e-6, 1e-6);
    // The model: text_bow_fit_nb fills bow.nb, the logit is b + sum of W r over the words.
    TextConfig c = text_config_default(4);
    c.T = 3, c.pool = TEXT_POOL_BOW, c.nb = 1;
    Error err = {{0}};
    EXPECT(text_config_check(&c, &err) == 0, "%s", err.msg);
    Block blk = {0};
    TextParams p;
    text_layout(&blk, &p, &c);
    block_alloc(&blk);
    Rng rng;
    rng_seed(&rng, 3);
    text_init(&p, &c, &rng);
    EXPECT(p.nb && p.nb[1] == 1.0f, "bow.nb before fitting is 1");
    text_bow_fit_nb(&p, &c, ids, labels, 4);
    for (int k = 0; k < 4; k++) EXPECT(p.nb[k] == r[k], "bow.nb[%d] %g, not %g", k, p.nb[k], r[k]);
    TextActs a;
    text_acts_alloc(&a, &c, 4);
    const int lengths[4] = {2, 1, 1, 2};
    text_forward(&a, &p, &c, ids, lengths, NULL, 4, NULL, NULL);
    EXPECT_NEAR(a.logits[0], p.out_b[0] + p.out_W[1] * r[1] + p.out_W[2] * r[2], 1e-6, 1e-6);
    EXPECT_NEAR(a.logits[3], p.out_b[0] + p.out_W[3] * r[3], 1e-6, 1e-6);
    text_acts_free(&a);
    block_free(&blk);
    c.classes = 3;
    EXPECT(text_config_check(&c, &err) == -1 && strstr(err.msg, "two classes"), "nb with 3 classes: %s", err.msg);
    c.classes = 2, c.pool = TEXT_POOL_MEAN;
    EXPECT(text_config_check(&c, &err) == -1 && strstr(err.msg, "naive-Bayes"), "nb without bow: %s", err.msg);
}

static void test_bow_is_logistic_regression(void) {
    TextConfig c = small(TEXT_POOL_BOW, ATTN_NONE, 0, 1, 2);  // bidirectional plays no part
    EXPECT(text_state_size(&c) == 7, "D = vocab, not %d", text_state_size(&c));
    Fix f;
    fix_init(&f, c, 1, 11);
    EXPECT(f.params.count == 2 && block_find(&f.params, "out.W")->numel == 7 &&
               block_find(&f.params, "out.b")->numel == 1,
           "the layout is not the dense layer alone (%d tensors)", f.params.count);
    // Row 0: words 3, 5, 3 then padding; row 1: only padding; row 2: word 6 five times.
    const int ids[NB * NT] = {3, 5, 3, 0, 0, 0, 0, 0, 0, 0, 6, 6, 6, 6, 6};
    memcpy(f.ids, ids, sizeof ids);
    const int lengths[NB] = {3, 0, 5};
    memcpy(f.lengths, lengths, sizeof lengths);
    Rng rng;
    rng_seed(&rng, 5);
    text_forward(&f.a, &f.p, &f.c, f.ids, f.lengths, NULL, NB, &rng, NULL);  // no dropout to draw
    const float *W = f.p.out_W, b0 = f.p.out_b[0];
    EXPECT_NEAR(f.a.logits[0], b0 + W[3] + W[5], 1e-6, 1e-6);
    EXPECT_NEAR(f.a.logits[1], b0, 1e-6, 1e-6);
    EXPECT_NEAR(f.a.logits[2], b0 + W[6], 1e-6, 1e-6);
    EXPECT_NEAR(f.a.probs[0], 1.0 / (1.0 + exp(-(double)f.a.logits[0])), 1e-6, 0);
    // alpha: |W| shared among the places of each word, over the row's words.
    double tot = fabs(W[3]) + fabs(W[5]);
    EXPECT_NEAR(f.a.alpha[0], fabs(W[3]) / 2 / tot, 1e-6, 1e-5);
    EXPECT_NEAR(f.a.alpha[1], fabs(W[5]) / tot, 1e-6, 1e-5);
    EXPECT_NEAR(f.a.alpha[2], fabs(W[3]) / 2 / tot, 1e-6, 1e-5);
    for (int t = 3; t < NT; t++) EXPECT(f.a.alpha[t] == 0.0f, "alpha on padding");
    for (int t = 0; t < NT; t++) {
        EXPECT(f.a.alpha[NT + t] == 0.0f, "alpha of an empty row");
        EXPECT_NEAR(f.a.alpha[2 * NT + t], 0.2, 1e-6, 0);
    }
    // The L2 penalty is on out.W: the loss with labels is the cross-entropy plus l2 |W|^2.
    double l2 = 0.0;
    for (int i = 0; i < 7; i++) l2 += (double)W[i] * W[i];
    double loss = text_forward(&f.a, &f.p, &f.c, f.ids, f.lengths, f.labels, NB, NULL, NULL);
    double ce = 0.0;
    for (int b = 0; b < NB; b++) {
        double q = f.a.probs[b];
        ce -= f.labels[b] ? log(q) : log(1.0 - q);
    }
    EXPECT_NEAR(loss, ce / NB + 1e-2 * l2, 1e-5, 1e-5);
    fix_free(&f);
    // Bigrams: (3, 5) and (5, 3) in row 0, (6, 6) once in row 2, none across the padding.
    c.bidirectional = 0, c.bigrams = 11;
    EXPECT(text_state_size(&c) == 7 + 11, "D = vocab + bigrams");
    fix_init(&f, c, 0, 12);
    memcpy(f.ids, ids, sizeof ids);
    memcpy(f.lengths, lengths, sizeof lengths);
    text_forward(&f.a, &f.p, &f.c, f.ids, f.lengths, NULL, NB, NULL, NULL);
    const float *Wb = f.p.out_W;
    float b1 = f.p.out_b[0];
    int k35 = bow_bigram_bucket(3, 5, 11), k53 = bow_bigram_bucket(5, 3, 11), k66 = bow_bigram_bucket(6, 6, 11);
    EXPECT(k35 >= 0 && k35 < 11 && k53 >= 0 && k53 < 11 && k66 >= 0 && k66 < 11, "buckets in range");
    double want0 = b1 + Wb[3] + Wb[5] + Wb[7 + k35] + (k53 != k35 ? Wb[7 + k53] : 0.0);
    EXPECT_NEAR(f.a.logits[0], want0, 1e-6, 1e-6);
    EXPECT_NEAR(f.a.logits[1], b1, 1e-6, 1e-6);
    EXPECT_NEAR(f.a.logits[2], b1 + Wb[6] + Wb[7 + k66], 1e-6, 1e-6);
    fix_free(&f);
    Error err = {{0}};
    c.pool = TEXT_POOL_MEAN;
    EXPECT(text_config_check(&c, &err) == -1 && strstr(err.msg, "bigram"), "bigrams without bow: %s", err.msg);
    TextPool p;
    EXPECT(text_pool_parse("bow", &p) == 0 && p == TEXT_POOL_BOW && strcmp(text_pool_name(p), "bow") == 0);
}

int main(void) {
    RUN(test_config_check);
    RUN(test_bow_is_logistic_regression);
    RUN(test_gradcheck_bow);
    RUN(test_gradcheck_word_scores);
    RUN(test_word_scores);
    RUN(test_word_bigram_scores);
    RUN(test_bow_sparse_matches_dense);
    RUN(test_bow_nb_ratios);
    RUN(test_keras_initialisation);
    RUN(test_masking_ignores_padding);
    RUN(test_dropout_mask_per_gate);
    RUN(test_keras_adam_epsilon);
    RUN(test_half_is_class_zero);
    RUN(test_gradcheck_poolings);
    RUN(test_gradcheck_hard_sigmoid);
    RUN(test_double_gradcheck_poolings);
    return test_summary();
}
