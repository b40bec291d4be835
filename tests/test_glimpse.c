// Tests of models/glimpse: whole-model gradient checks by central differences (with
// attention, the read's parameters included, and without; through the sparse read, and
// the sparse read against the dense one), the loss of a hand-checkable
// case, the batch split over worker threads against one worker, a partial batch, and a
// second forward and backward on the same activations.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/block.h"
#include "core/check.h"
#include "core/rng.h"
#include "models/classifier.h"
#include "models/glimpse.h"
#include "tests/support/gradcheck.h"
#include "tests/support/test.h"
#include "vision/filterbank.h"

static GlimpseConfig tiny_config(int attention) {
    return (GlimpseConfig){.W = 9, .H = 7, .T = 3, .read_n = 3, .hidden = 5, .classes = 4,
                           .attention = attention};
}

typedef struct {
    GlimpseConfig c;
    GlimpseParams p, g, g_tmp;
    Block params, grads, grads_tmp;
    GlimpseActs acts;
    float *x;
    int *labels;
    int B;
    double offset;
} Model;

static void model_make(Model *m, GlimpseConfig c, int B, uint64_t seed) {
    memset(m, 0, sizeof *m);
    m->c = c;
    m->B = B;
    glimpse_layout(&m->params, &m->p, &c);
    glimpse_layout(&m->grads, &m->g, &c);
    glimpse_layout(&m->grads_tmp, &m->g_tmp, &c);
    block_alloc(&m->params), block_alloc(&m->grads), block_alloc(&m->grads_tmp);
    Rng rng;
    rng_seed(&rng, seed);
    glimpse_init(&m->p, &c, &rng);
    // Larger read weights and non-zero biases, so every path carries gradient.
    for (int i = 0; i < m->params.count; i++) {
        const BlockTensor *t = &m->params.tensors[i];
        float scale = strcmp(t->name, "read_attn.W") == 0 || strcmp(t->name, "loc.W") == 0 ||
                              strcmp(t->name, "baseline.W") == 0
                          ? 0.5f
                          : 0.2f;
        if (t->ndim == 1 || scale > 0.2f)
            for (size_t k = 0; k < t->numel; k++)
                m->params.data[t->offset + k] += scale * (2 * rng_uniform(&rng) - 1);
    }
    glimpse_acts_alloc(&m->acts, &c, B);
    m->x = xcalloc((size_t)B * c.W * c.H, sizeof(float));
    fill_uniform(m->x, (size_t)B * c.W * c.H, 0.0f, 1.0f, &rng);
    m->labels = xcalloc((size_t)B, sizeof(int));
    for (int b = 0; b < B; b++) m->labels[b] = (int)rng_below(&rng, (uint32_t)c.classes);
}

static void model_free(Model *m) {
    block_free(&m->params), block_free(&m->grads), block_free(&m->grads_tmp);
    glimpse_acts_free(&m->acts);
    free(m->x), free(m->labels);
}

static void gc_forward(void *vm, float *out) {
    Model *m = vm;
    out[0] = (float)(glimpse_forward(&m->acts, &m->p, &m->c, m->x, m->labels, m->B, NULL) - m->offset);
}

static void gc_backward(void *vm, const float *dout) {
    Model *m = vm;
    block_zero(&m->grads_tmp);
    glimpse_backward(&m->g_tmp, &m->acts, &m->p, &m->c, m->x, m->labels, m->B);
    for (size_t i = 0; i < m->grads.numel; i++) m->grads.data[i] += dout[0] * m->grads_tmp.data[i];
}

static void run_gradcheck(int attention) {
    Model m;
    model_make(&m, tiny_config(attention), 3, 31 + attention);
    Rng rng;
    rng_seed(&rng, 9);
    Rng probe = rng;
    float w0 = -1.0f + 2.0f * rng_uniform(&probe);
    EXPECT(fabsf(w0) > 0.5f, "output weight %g too small for a sensitive check", w0);
    m.offset = glimpse_forward(&m.acts, &m.p, &m.c, m.x, m.labels, m.B, NULL);
    GradcheckInput *in = gradcheck_block_inputs(&m.params, &m.grads);
    // The loss (about log 4 = 1.4 nats) minus its unperturbed value; float activations
    // through 3 steps leave about 1e-7 of noise, 1e-5 after dividing by 2 eps = 2e-2.
    GradcheckOp op = {.ctx = &m, .forward = gc_forward, .backward = gc_backward, .n_out = 1,
                      .inputs = in, .n_inputs = m.params.count, .eps = 1e-2, .atol = 5e-5,
                      .rtol = 1e-2};
    EXPECT(gradcheck(attention ? "glimpse (attention)" : "glimpse (no attention)", &op, &rng) == 0,
           "see the gradcheck lines above");
    for (int i = 0; i < m.params.count; i++) {
        const BlockTensor *t = &m.params.tensors[i];
        double s = 0.0;
        for (size_t k = 0; k < t->numel; k++) s += fabs(m.grads.data[t->offset + k]);
        EXPECT(s > 1e-4, "no gradient reaches %s (sum %g)", t->name, s);
    }
    free(in);
    model_free(&m);
}

static void test_gradcheck_with_attention(void) { run_gradcheck(1); }

// Images with few nonzero pixels take the sparse read (vision/filterbank_sparse.h): the
// whole-model gradient check through it, and its loss and gradients against the dense
// read's on the same images (agreeing to float rounding: 1e-5 of each tensor's largest).
static void test_sparse_read(void) {
    Model m;
    model_make(&m, tiny_config(1), 3, 77);
    Rng rng;
    rng_seed(&rng, 12);
    size_t n = (size_t)m.B * m.c.W * m.c.H;
    for (size_t i = 0; i < n; i++)
        if (rng_uniform(&rng) < 0.85f) m.x[i] = 0.0f;
    m.offset = glimpse_forward(&m.acts, &m.p, &m.c, m.x, m.labels, m.B, NULL);
    EXPECT(m.acts.sparse_read == 1, "images 85 %% zeros must take the sparse read");
    GradcheckInput *in = gradcheck_block_inputs(&m.params, &m.grads);
    GradcheckOp op = {.ctx = &m, .forward = gc_forward, .backward = gc_backward, .n_out = 1,
                      .inputs = in, .n_inputs = m.params.count, .eps = 1e-2, .atol = 5e-5,
                      .rtol = 1e-2};
    EXPECT(gradcheck("glimpse (sparse read)", &op, &rng) == 0, "see the gradcheck lines above");
    free(in);
    // Sparse against dense on the same images and parameters.
    double loss[2];
    float *g[2];
    for (int k = 0; k < 2; k++) {
        m.acts.dense_read = k;
        loss[k] = glimpse_forward(&m.acts, &m.p, &m.c, m.x, m.labels, m.B, NULL);
        EXPECT(m.acts.sparse_read == !k, "dense_read %d: sparse_read %d", k, m.acts.sparse_read);
        block_zero(&m.grads_tmp);
        glimpse_backward(&m.g_tmp, &m.acts, &m.p, &m.c, m.x, m.labels, m.B);
        g[k] = xmalloc(sizeof(float) * m.grads_tmp.numel);
        memcpy(g[k], m.grads_tmp.data, sizeof(float) * m.grads_tmp.numel);
    }
    EXPECT_NEAR(loss[0], loss[1], 1e-6, 1e-6);
    for (int i = 0; i < m.params.count; i++) {
        const BlockTensor *t = &m.params.tensors[i];
        double top = 0.0, gap = 0.0;
        for (size_t k = 0; k < t->numel; k++) {
            top = fmax(top, fabs((double)g[1][t->offset + k]));
            gap = fmax(gap, fabs((double)g[0][t->offset + k] - g[1][t->offset + k]));
        }
        EXPECT(top > 0 && gap <= 1e-5 * top, "%s: sparse vs dense %.3g of the largest %.3g", t->name,
               gap, top);
    }
    // Dense images keep the dense read.
    m.acts.dense_read = 0;
    fill_uniform(m.x, n, 0.0f, 1.0f, &rng);
    glimpse_forward(&m.acts, &m.p, &m.c, m.x, m.labels, m.B, NULL);
    EXPECT(m.acts.sparse_read == 0, "images without zeros must take the dense read");
    free(g[0]), free(g[1]);
    model_free(&m);
}
static void test_gradcheck_without_attention(void) { run_gradcheck(0); }

// With every weight zero the logits are the output bias: the loss is -log softmax(b)[y],
// known in closed form, and the accuracy is the share of labels equal to the bias's argmax.
static void test_loss_hand_checkable(void) {
    Model m;
    model_make(&m, tiny_config(1), 3, 5);
    memset(m.params.data, 0, sizeof(float) * m.params.numel);
    float b[4] = {0.5f, -1.0f, 2.0f, 0.0f};
    memcpy(m.p.out_b, b, sizeof b);
    int labels[3] = {2, 0, 1};
    memcpy(m.labels, labels, sizeof labels);
    int correct = -1;
    double loss = glimpse_forward(&m.acts, &m.p, &m.c, m.x, m.labels, 3, &correct);
    double lse = log(exp(0.5) + exp(-1.0) + exp(2.0) + exp(0.0));
    double want = ((lse - 2.0) + (lse - 0.5) + (lse + 1.0)) / 3.0;
    EXPECT_NEAR(loss, want, 1e-6, 1e-6);
    EXPECT(correct == 1, "correct %d, want 1", correct);
    model_free(&m);
}

// Two workers over a batch of 5 (models/classifier.h) give the one-worker loss and
// gradient (to float rounding); a second call gives the same; a partial batch equals a
// model sized for it.
static void test_workers_match_single(void) {
    ClassifierConfig cc = {.kind = CLASSIFIER_GLIMPSE, .glimpse = tiny_config(1)};
    const GlimpseConfig c = cc.glimpse;
    Model m;
    model_make(&m, c, 5, 77);
    ClassifierParams cp = {.glimpse = m.p};
    ClassifierWorker one[1], two[2];
    classifier_workers_alloc(one, 1, &cc, 5);
    classifier_workers_alloc(two, 2, &cc, 5);
    Block g1 = {0}, g2 = {0}, g3 = {0};
    GlimpseParams v;
    glimpse_layout(&g1, &v, &c), glimpse_layout(&g2, &v, &c), glimpse_layout(&g3, &v, &c);
    block_alloc(&g1), block_alloc(&g2), block_alloc(&g3);
    int c1, c2;
    double l1 = classifier_forward_parallel(one, 1, &cp, &cc, m.x, m.labels, 5, &g1, &c1);
    double l2 = classifier_forward_parallel(two, 2, &cp, &cc, m.x, m.labels, 5, &g2, &c2);
    EXPECT_NEAR(l2, l1, 1e-6, 1e-6);
    EXPECT(c1 == c2, "correct %d vs %d", c1, c2);
    double worst = 0.0;
    for (size_t i = 0; i < g1.numel; i++) worst = fmax(worst, fabs(g1.data[i] - g2.data[i]));
    EXPECT(worst < 1e-6, "gradients differ by %g", worst);
    double l3 = classifier_forward_parallel(two, 2, &cp, &cc, m.x, m.labels, 5, &g1, NULL);
    EXPECT(l3 == l2 && memcmp(g1.data, g2.data, sizeof(float) * g1.numel) == 0, "second call differs");
    GlimpseActs small;
    glimpse_acts_alloc(&small, &c, 3);
    double l4 = glimpse_forward(&small, &m.p, &c, m.x, m.labels, 3, NULL);
    glimpse_backward(&v, &small, &m.p, &c, m.x, m.labels, 3);
    double l5 = classifier_forward_parallel(one, 1, &cp, &cc, m.x, m.labels, 3, &g1, NULL);
    EXPECT_NEAR(l5, l4, 1e-7, 1e-7);
    worst = 0.0;
    for (size_t i = 0; i < g1.numel; i++) worst = fmax(worst, fabs(g1.data[i] - g3.data[i]));
    EXPECT(worst < 1e-6, "partial batch gradients differ by %g", worst);
    glimpse_acts_free(&small);
    block_free(&g1), block_free(&g2), block_free(&g3);
    classifier_workers_free(one, 1), classifier_workers_free(two, 2);
    model_free(&m);
}

// Hard attention over workers: two workers over a batch of 5 with the same centre noise
// (each worker takes its rows' share of eps (T, B, 2)) give one worker's loss, number right
// and gradient, the policy's and the baseline's included, to float rounding.
static void run_hard_workers_match_single(int gnet) {
    GlimpseConfig g = tiny_config(1);
    g.hard = 1, g.loc_std = 0.3f, g.scales = 2, g.gnet = gnet;
    ClassifierConfig cc = {.kind = CLASSIFIER_GLIMPSE, .glimpse = g};
    Model m;
    model_make(&m, g, 5, 62);
    ClassifierParams cp = {.glimpse = m.p};
    ClassifierWorker one[1], two[2];
    classifier_workers_alloc(one, 1, &cc, 5);
    classifier_workers_alloc(two, 2, &cc, 5);
    Block g1 = {0}, g2 = {0};
    GlimpseParams v1, v2;
    glimpse_layout(&g1, &v1, &g), glimpse_layout(&g2, &v2, &g);
    block_alloc(&g1), block_alloc(&g2);
    float *eps = xmalloc(sizeof(float) * g.T * 5 * 2);
    Rng rng;
    rng_seed(&rng, 5);
    rng_normal_fill(&rng, eps, (size_t)g.T * 5 * 2);
    int c1, c2;
    double l1 = classifier_forward_parallel_hard(one, 1, &cp, &cc, m.x, m.labels, 5, eps, &g1, &c1);
    double l2 = classifier_forward_parallel_hard(two, 2, &cp, &cc, m.x, m.labels, 5, eps, &g2, &c2);
    EXPECT_NEAR(l2, l1, 1e-6, 1e-6);
    EXPECT(c1 == c2, "correct %d vs %d", c1, c2);
    double worst = 0.0, policy = 0.0, base = 0.0;
    for (size_t i = 0; i < g1.numel; i++) worst = fmax(worst, fabs(g1.data[i] - g2.data[i]));
    for (int k = 0; k < 2 * g.hidden; k++) policy += fabs(v1.read_W[k]);
    for (int k = 0; k < g.hidden; k++) base += fabs(v1.base_W[k]);
    EXPECT(worst < 1e-6, "gradients differ by %g", worst);
    EXPECT(policy > 1e-6 && base > 1e-6, "policy %g and baseline %g gradients: nothing compared", policy, base);
    if (gnet) {  // the glimpse network's gradient (shared packs of the whole lstm.W) is compared too
        double what = 0.0;
        for (int k = 0; k < gnet * g.scales * g.read_n * g.read_n; k++) what += fabs(v1.what_W[k]);
        EXPECT(what > 1e-6, "glimpse network gradient %g: nothing compared", what);
    }
    free(eps);
    block_free(&g1), block_free(&g2);
    classifier_workers_free(one, 1), classifier_workers_free(two, 2);
    model_free(&m);
}

static void test_hard_workers_match_single(void) { run_hard_workers_match_single(0); }
static void test_hard_gnet_workers_match_single(void) { run_hard_workers_match_single(3); }

// The REINFORCE estimator's expectation on a tiny case: a 1-D Gaussian policy l ~ N(m, sd^2)
// with the reward R(l) = 1 when l > 0 (a right or wrong answer), so E[R] = Phi(m / sd) and
// d E[R] / dm = phi(m / sd) / sd. The mean of -glimpse_reinforce_mean_grad over 400,000
// samples must agree within 5 standard errors, with the baseline 0 and 0.4 alike (a
// baseline that does not depend on l leaves the expectation alone). And its mean with a
// reward that ignores l is 0.
static void test_reinforce_expectation(void) {
    const float m = 0.3f, sd = 0.5f;
    const int n = 400000;
    const double want = exp(-0.5 * (m / sd) * (m / sd)) / sqrt(2.0 * M_PI) / sd;
    const float baselines[2] = {0.0f, 0.4f};
    for (int k = 0; k < 2; k++) {
        Rng rng;
        rng_seed(&rng, 100 + k);
        double sum = 0.0, sum2 = 0.0, flat = 0.0;
        for (int i = 0; i < n; i++) {
            float l = m + sd * rng_normal(&rng), d = 0.0f, d0 = 0.0f;
            glimpse_reinforce_mean_grad(&d, &l, &m, (l > 0.0f ? 1.0f : 0.0f) - baselines[k], sd, 1.0f, 1);
            glimpse_reinforce_mean_grad(&d0, &l, &m, 1.0f - baselines[k], sd, 1.0f, 1);
            sum += -d, sum2 += (double)d * d, flat += -d0;
        }
        double mean = sum / n, se = sqrt((sum2 / n - mean * mean) / n);
        EXPECT(fabs(mean - want) < 5 * se, "baseline %g: estimate %.5f +- %.5f, exact %.5f",
               baselines[k], mean, se, want);
        EXPECT(fabs(flat / n) < 5 * se * 2, "a constant reward: %.5f", flat / n);
        EXPECT(se < 0.01, "standard error %g too large for a sensitive check", se);
    }
}

// Hard attention's backward is the gradient of the surrogate
//     S = mean CE + (1/B) sum_b sum_t [ -(R_b - b_tb) log N(l_tb; m'_tb, sd^2 I)
//                                      + (R_b - b'_tb)^2 / 2 ]
// with the sampled centres l held fixed (acts.fixed_loc), the advantages R_b - b_tb those
// of the unperturbed forward, and m'_tb = tanh(loc.W h_{t-1} + loc.b), b'_tb =
// baseline.W h_{t-1} + baseline.b computed from the unperturbed forward's h (the policy's
// and the baseline's gradients stop at their own layers): checked by central differences,
// every parameter, loc.W, loc.b and the baseline's layer included.
typedef struct {
    Model m;
    float *loc;    // (T, B, 2) the fixed centres
    float *adv;    // (T, B) R_b - b_tb of the unperturbed forward
    float *hfix;   // (T, B, hidden) the unperturbed forward's h
    float reward[3];
} HardModel;

static void hard_forward(void *vm, float *out) {
    HardModel *hm = vm;
    Model *m = &hm->m;
    const int B = m->B, Hd = m->c.hidden;
    double ce = glimpse_forward(&m->acts, &m->p, &m->c, m->x, m->labels, B, NULL);
    double s = 0.0, sd = m->c.loc_std;
    for (int t = 0; t < m->c.T; t++)
        for (int b = 0; b < B; b++) {
            const float *hp = t ? hm->hfix + ((size_t)(t - 1) * B + b) * Hd : NULL;
            for (int k = 0; k < 2; k++) {
                double pre = m->p.read_b[k];
                if (hp)
                    for (int j = 0; j < Hd; j++) pre += (double)m->p.read_W[k * Hd + j] * hp[j];
                double d = hm->loc[(t * B + b) * 2 + k] - tanh(pre);
                s += -hm->adv[t * B + b] * (-0.5 * d * d / (sd * sd));
            }
            double bt = m->p.base_b[0];
            if (hp)
                for (int j = 0; j < Hd; j++) bt += (double)m->p.base_W[j] * hp[j];
            s += 0.5 * (hm->reward[b] - bt) * (hm->reward[b] - bt);
        }
    out[0] = (float)(ce + s / B - m->offset);
}

static void hard_backward(void *vm, const float *dout) {
    HardModel *hm = vm;
    Model *m = &hm->m;
    block_zero(&m->grads_tmp);
    glimpse_backward(&m->g_tmp, &m->acts, &m->p, &m->c, m->x, m->labels, m->B);
    for (size_t i = 0; i < m->grads.numel; i++) m->grads.data[i] += dout[0] * m->grads_tmp.data[i];
}

// gnet > 0: the same with RAM's glimpse network between the retina and the LSTM (its
// what, where and output layers reached by the cross-entropy alone), at a step of 1e-3.
static void run_gradcheck_hard(int gnet) {
    GlimpseConfig c = tiny_config(1);
    c.hard = 1, c.loc_std = 0.3f, c.scales = 2, c.gnet = gnet;
    HardModel hm;
    Model *m = &hm.m;
    const int B = 3, Hd = c.hidden;
    model_make(m, c, B, gnet ? 64 : 62);  // 64: rewards of both kinds, ReLU inputs clear of the step
    Rng rng;
    rng_seed(&rng, 19);
    glimpse_fill_noise(&m->acts, &c, B, &rng);
    glimpse_forward(&m->acts, &m->p, &c, m->x, m->labels, B, NULL);
    hm.loc = xmalloc(sizeof(float) * c.T * B * 2);
    hm.adv = xmalloc(sizeof(float) * c.T * B);
    hm.hfix = xmalloc(sizeof(float) * c.T * B * Hd);
    for (int t = 0; t < c.T; t++)
        for (int b = 0; b < B; b++) {
            for (int k = 0; k < 2; k++)
                hm.loc[(t * B + b) * 2 + k] = m->acts.loc[(t * m->acts.B + b) * 2 + k];
            hm.adv[t * B + b] = m->acts.reward[b] - m->acts.base[t * m->acts.B + b];
            memcpy(hm.hfix + (t * B + b) * Hd, m->acts.h + (t * m->acts.B + b) * Hd, sizeof(float) * Hd);
        }
    // Rewards of 1 and 0 both occur for this seed, so advantages of both signs are checked.
    int ones = 0;
    for (int b = 0; b < B; b++) hm.reward[b] = m->acts.reward[b], ones += m->acts.reward[b] > 0;
    m->acts.fixed_loc = hm.loc;
    m->offset = 0.0;
    float base;
    hard_forward(&hm, &base);
    m->offset = base;
    // The glimpse network's ReLUs: some on and some off, so the check covers both sides. A
    // step of 1e-2 moves some unit's input across 0 (the central difference then straddles
    // the kink: off by up to a factor of 2 in gnet_*); 1e-3 stays clear of them here.
    if (gnet) {
        const int LD = glimpse_read_size(&c) + Hd;
        int on = 0, n = 0;
        for (int t = 0; t < c.T; t++)
            for (int b = 0; b < B; b++) {
                for (int j = 0; j < 2 * gnet; j++, n++)
                    on += m->acts.hgl[((size_t)t * m->acts.B + b) * 2 * gnet + j] > 0.0f;
                for (int j = 0; j < Hd; j++, n++)
                    on += m->acts.xh[((size_t)t * m->acts.B + b) * LD + j] > 0.0f;
            }
        EXPECT(on > 0 && on < n, "%d of %d glimpse network units on", on, n);
    }
    GradcheckInput *in = gradcheck_block_inputs(&m->params, &m->grads);
    GradcheckOp op = {.ctx = &hm, .forward = hard_forward, .backward = hard_backward, .n_out = 1,
                      .inputs = in, .n_inputs = m->params.count, .eps = gnet ? 1e-3 : 1e-2, .atol = 5e-5,
                      .rtol = 1e-2};
    EXPECT(gradcheck(gnet ? "glimpse (hard, glimpse network, REINFORCE surrogate)"
                          : "glimpse (hard, REINFORCE surrogate)",
                     &op, &rng) == 0,
           "see the gradcheck lines above");
    EXPECT(m->params.count == (gnet ? 14 : 8), "%d parameter tensors", m->params.count);
    for (int i = 0; i < m->params.count; i++) {  // the check is not vacuous for the policy
        const BlockTensor *t = &m->params.tensors[i];
        double sum = 0.0;
        for (size_t k = 0; k < t->numel; k++) sum += fabs(m->grads.data[t->offset + k]);
        EXPECT(sum > 1e-4, "no gradient reaches %s (sum %g)", t->name, sum);
    }
    // The rewards came from the unperturbed forward: perturbations must not have flipped one.
    glimpse_forward(&m->acts, &m->p, &c, m->x, m->labels, 3, NULL);
    for (int b = 0; b < B; b++) EXPECT(m->acts.reward[b] == hm.reward[b], "reward %d changed", b);
    EXPECT(ones > 0 && ones < B, "rewards all %d: pick another seed", ones);
    free(in);
    free(hm.loc), free(hm.adv), free(hm.hfix);
    model_free(m);
}

static void test_gradcheck_hard(void) { run_gradcheck_hard(0); }
static void test_gradcheck_hard_gnet(void) { run_gradcheck_hard(3); }

// The retina (hard attention): patch s of glimpse_retina_params has stride 2^s pixels,
// sigma 2^(s-1) and gamma 1 at the given centre; on an image that is dark but for one
// bright 3 x 3 square, the finest patch centred on it reads the square at its middle and
// nothing when the centre is elsewhere, the coarsest sees it from afar, and the LSTM's
// input ends with the clamped centre.
static void test_retina(void) {
    GlimpseConfig c = glimpse_config_default(100, 100);
    c.hard = 1, c.loc_std = 0.2f, c.scales = 4, c.T = 1;
    for (int s = 0; s < 4; s++) {
        float rp[FILTERBANK_PARAMS];
        glimpse_retina_params(rp, 0.0f, 0.0f, s, &c);
        FilterbankWindow w = filterbank_window(rp, c.read_n, c.W, c.H);
        EXPECT_NEAR(w.delta, ldexp(1.0, s), 1e-5, 1e-5);
        EXPECT_NEAR(w.sigma, ldexp(1.0, s - 1), 1e-5, 1e-5);
        EXPECT_NEAR(w.gamma, 1.0, 1e-6, 1e-6);
        EXPECT_NEAR(w.gx, 49.5, 1e-4, 1e-4);
        EXPECT_NEAR(w.x1 - w.x0, 11.0 * ldexp(1.0, s), 1e-3, 1e-4);
    }
    GlimpseParams p;
    Block pb = {0};
    glimpse_layout(&pb, &p, &c);
    block_alloc(&pb);
    Rng rng;
    rng_seed(&rng, 4);
    glimpse_init(&p, &c, &rng);
    const int B = 2, NN = c.read_n * c.read_n;
    float *x = xcalloc((size_t)B * 100 * 100, sizeof(float));
    for (int b = 0; b < B; b++)
        for (int r = 59; r <= 61; r++)
            for (int q = 69; q <= 71; q++) x[(size_t)b * 10000 + r * 100 + q] = 1.0f;
    // Pixel column 70 and row 60 (0-based) are g~ = 2 (70 + 1) / 101 - 1 and 2 (60 + 1) / 101 - 1;
    // the second image looks from about (39, 100), the bottom edge (its y clamped from 1.7).
    float fixed[4] = {2.0f * 71.0f / 101.0f - 1.0f, 2.0f * 61.0f / 101.0f - 1.0f, -0.2f, 1.7f};
    GlimpseActs a;
    glimpse_acts_alloc(&a, &c, B);
    memset(a.eps, 0, sizeof(float) * B * 2);
    a.fixed_loc = fixed;
    int labels[2] = {0, 1};
    glimpse_forward(&a, &p, &c, x, labels, B, NULL);
    const int LD = glimpse_read_size(&c) + c.hidden;
    EXPECT(glimpse_read_size(&c) == 4 * NN + 2, "read size %d", glimpse_read_size(&c));
    const float *on = a.xh, *off = a.xh + LD;
    double on_max = 0, off_max = 0, coarse_off = 0;
    for (int i = 0; i < NN; i++) {
        on_max = fmax(on_max, on[i]), off_max = fmax(off_max, off[i]);
        coarse_off = fmax(coarse_off, off[3 * NN + i]);
    }
    // The fovea's middle grid points (5 and 6 of 0..11) are at 69.5 and 70.5: within the square.
    EXPECT(on[5 * c.read_n + 5] > 0.9f && on[6 * c.read_n + 6] > 0.9f, "fovea on the square: %g %g",
           on[5 * c.read_n + 5], on[6 * c.read_n + 6]);
    EXPECT(off_max < 1e-6, "fovea away from the square reads %g", off_max);
    EXPECT(coarse_off > 0.01, "the coarsest patch does not see the square from afar (%g)", coarse_off);
    EXPECT(coarse_off < 0.5, "the coarsest patch averages (%g)", coarse_off);
    EXPECT(on[4 * NN] == fixed[0] && on[4 * NN + 1] == fixed[1], "centre input %g %g", on[4 * NN], on[4 * NN + 1]);
    EXPECT(off[4 * NN] == -0.2f && off[4 * NN + 1] == 1.0f, "clamped centre input %g %g", off[4 * NN], off[4 * NN + 1]);
    EXPECT(a.loc[3] == 1.7f, "the sampled centre is kept unclamped for REINFORCE: %g", a.loc[3]);
    EXPECT(glimpse_fovea(&a, &c, 0, 0) == on && glimpse_fovea(&a, &c, 0, 1) == off,
           "glimpse_fovea is not the retina's first patch in xh");
    // With the glimpse network the same retina goes to acts.retina and acts.lc: the same
    // patches, every scale, and the clamped centres; glimpse_fovea finds the finest there.
    GlimpseConfig cg = c;
    cg.gnet = 3;
    GlimpseParams pg;
    Block pgb = {0};
    glimpse_layout(&pgb, &pg, &cg);
    block_alloc(&pgb);
    glimpse_init(&pg, &cg, &rng);
    GlimpseActs ag;
    glimpse_acts_alloc(&ag, &cg, B);
    memset(ag.eps, 0, sizeof(float) * B * 2);
    ag.fixed_loc = fixed;
    glimpse_forward(&ag, &pg, &cg, x, labels, B, NULL);
    double worst = 0.0;
    for (int b = 0; b < B; b++) {
        for (int i = 0; i < 4 * NN; i++)
            worst = fmax(worst, fabs(ag.retina[(size_t)b * 4 * NN + i] - a.xh[(size_t)b * LD + i]));
        for (int k = 0; k < 2; k++)
            worst = fmax(worst, fabs(ag.lc[b * 2 + k] - a.xh[(size_t)b * LD + 4 * NN + k]));
        const float *fg = glimpse_fovea(&ag, &cg, 0, b), *fr = glimpse_fovea(&a, &c, 0, b);
        for (int i = 0; i < NN; i++) worst = fmax(worst, fabs(fg[i] - fr[i]));
    }
    EXPECT(worst == 0.0, "the glimpse network's retina differs from the raw one by %g", worst);
    glimpse_acts_free(&ag);
    block_free(&pgb);
    glimpse_acts_free(&a);
    block_free(&pb);
    free(x);
}

// RAM's 3-scale retina on its 60 x 60 cluttered set (draw_cluttered.sh ram8-60): windows of
// 12, 24 and 48 pixels (grid strides 1, 2, 4 over 12 points), centred on the image at (0, 0)
// and on the top-left pixel (0-based 0) at 2 / 61 - 1 (the filterbank's g = 61 / 2 (g~ + 1)).
static void test_retina_60(void) {
    GlimpseConfig c = glimpse_config_default(60, 60);
    c.hard = 1, c.loc_std = 0.1f, c.scales = 3, c.T = 8;
    Error err = {0};
    EXPECT(glimpse_config_check(&c, &err) == 0, "60 x 60, 3 scales: %s", err.msg);
    for (int s = 0; s < 3; s++) {
        float rp[FILTERBANK_PARAMS];
        glimpse_retina_params(rp, 0.0f, 0.0f, s, &c);
        FilterbankWindow w = filterbank_window(rp, c.read_n, c.W, c.H);
        EXPECT_NEAR(w.gx, 29.5, 1e-4, 1e-4);
        EXPECT_NEAR(w.gy, 29.5, 1e-4, 1e-4);
        EXPECT_NEAR(w.delta, ldexp(1.0, s), 1e-5, 1e-5);
        // 12 grid points 2^s apart span 11 2^s between the outer ones: a window of 12 2^s pixels
        EXPECT_NEAR(w.x1 - w.x0 + ldexp(1.0, s), 12.0 * ldexp(1.0, s), 1e-3, 1e-4);
        glimpse_retina_params(rp, 2.0f / 61.0f - 1.0f, 2.0f / 61.0f - 1.0f, s, &c);
        w = filterbank_window(rp, c.read_n, c.W, c.H);
        EXPECT_NEAR(w.gx, 0.0, 1e-3, 1e-3);
    }
    EXPECT(glimpse_read_size(&c) == 3 * 144 + 2, "read size %d", glimpse_read_size(&c));
}

static void test_config_check(void) {
    Error err = {{0}};
    GlimpseConfig c = glimpse_config_default(100, 100);
    EXPECT(glimpse_config_check(&c, &err) == 0, "%s", err.msg);
    EXPECT(c.T == 8 && c.read_n == 12 && c.hidden == 256, "the paper's table");
    c.read_n = 101;
    EXPECT(glimpse_config_check(&c, &err) != 0 && strstr(err.msg, "read N"), "%s", err.msg);
    c = glimpse_config_default(100, 100);
    c.classes = 1;
    EXPECT(glimpse_config_check(&c, &err) != 0, "one class accepted");
    c = glimpse_config_default(100, 100);
    c.hard = 1;
    EXPECT(glimpse_config_check(&c, &err) != 0 && strstr(err.msg, "hard"), "hard without a location std");
    c.loc_std = 0.2f;
    EXPECT(glimpse_config_check(&c, &err) != 0 && strstr(err.msg, "scales"), "hard without a retina: %s", err.msg);
    c.scales = 4;
    EXPECT(glimpse_config_check(&c, &err) == 0, "%s", err.msg);
    c.gnet = 128;
    EXPECT(glimpse_config_check(&c, &err) == 0, "%s", err.msg);
    EXPECT(glimpse_read_size(&c) == c.hidden, "the LSTM reads the glimpse network: %d", glimpse_read_size(&c));
    c.hard = 0;
    EXPECT(glimpse_config_check(&c, &err) != 0 && strstr(err.msg, "glimpse network"),
           "a glimpse network without hard attention: %s", err.msg);
}

int main(void) {
    RUN(test_gradcheck_with_attention);
    RUN(test_gradcheck_without_attention);
    RUN(test_sparse_read);
    RUN(test_loss_hand_checkable);
    RUN(test_workers_match_single);
    RUN(test_hard_workers_match_single);
    RUN(test_hard_gnet_workers_match_single);
    RUN(test_reinforce_expectation);
    RUN(test_gradcheck_hard);
    RUN(test_gradcheck_hard_gnet);
    RUN(test_retina);
    RUN(test_retina_60);
    RUN(test_config_check);
    return test_summary();
}
