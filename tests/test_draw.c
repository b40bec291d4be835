// Tests of models/draw: whole-model gradient checks (with and without attention, noise
// held fixed), the bound of hand-checkable cases, fresh noise per step, reproducible
// generation, and activations reused across steps (the backward overwrites the gates with
// their gradients and recomputes x_hat: a second forward and backward must not notice),
// the batch split over worker threads, and the class-conditional model (its gradient, its
// labels' effect, and its reduction to the unconditional model when the label weights are 0).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/block.h"
#include "core/check.h"
#include "core/rng.h"
#include "models/draw.h"
#include "tests/support/gradcheck.h"
#include "tests/support/test.h"

static DrawConfig tiny_config(int attention) {
    return (DrawConfig){.W = 6, .H = 5, .T = 3, .read_n = 2, .write_n = 3, .enc = 4, .dec = 5,
                        .z = 2, .attention = attention};
}

static void binary_images(float *x, int n, Rng *rng) {
    for (int i = 0; i < n; i++) x[i] = (float)rng_bernoulli(rng, 0.4f);
}

typedef struct {
    DrawConfig c;
    DrawParams p, g, g_tmp;
    Block params, grads, grads_tmp;
    DrawActs acts;
    float *x;
    int B;
    double offset;  // subtracted from the bound so the float output keeps its precision
} Model;

static void model_make(Model *m, DrawConfig c, int B, uint64_t seed) {
    memset(m, 0, sizeof *m);
    m->c = c;
    m->B = B;
    draw_layout(&m->params, &m->p, &c);
    draw_layout(&m->grads, &m->g, &c);
    draw_layout(&m->grads_tmp, &m->g_tmp, &c);
    block_alloc(&m->params);
    block_alloc(&m->grads);
    block_alloc(&m->grads_tmp);
    Rng rng;
    rng_seed(&rng, seed);
    draw_init(&m->p, &c, &rng);
    // Non-zero biases so that every parameter's gradient path is exercised.
    for (int i = 0; i < m->params.count; i++) {
        const BlockTensor *t = &m->params.tensors[i];
        if (t->ndim == 1)
            for (size_t k = 0; k < t->numel; k++)
                m->params.data[t->offset + k] += 0.2f * (2 * rng_uniform(&rng) - 1);
    }
    draw_acts_alloc(&m->acts, &c, B);
    int n = B * draw_image_size(&c);
    m->x = xcalloc((size_t)n, sizeof(float));
    if (draw_channels(&c) == 1)
        binary_images(m->x, n, &rng);
    else  // colour: intensities
        for (int i = 0; i < n; i++) m->x[i] = rng_uniform(&rng);
    draw_fill_noise(&m->acts, &c, B, &rng);
    for (int b = 0; c.classes && b < B; b++) m->acts.labels[b] = (2 * b + 1) % c.classes;
}

static void model_free(Model *m) {
    block_free(&m->params);
    block_free(&m->grads);
    block_free(&m->grads_tmp);
    draw_acts_free(&m->acts);
    free(m->x);
}

static void gc_forward(void *vm, float *out) {
    Model *m = vm;
    out[0] = (float)(draw_forward(&m->acts, &m->p, &m->c, m->x, m->B, NULL, NULL) - m->offset);
}

static void gc_backward(void *vm, const float *dout) {
    Model *m = vm;
    block_zero(&m->grads_tmp);
    draw_backward(&m->g_tmp, &m->acts, &m->p, &m->c, m->x, m->B);
    for (size_t i = 0; i < m->grads.numel; i++) m->grads.data[i] += dout[0] * m->grads_tmp.data[i];
}

static void run_model_gradcheck_config(DrawConfig cfg, const char *name) {
    int attention = cfg.attention;
    Model m;
    model_make(&m, cfg, 2, 21 + attention + 10 * cfg.channels);
    Rng rng;
    rng_seed(&rng, 9);
    // The harness weights the one output by w in [-1, 1), its first draw from rng: make sure
    // it is not so small that every gradient hides under atol.
    Rng probe = rng;
    float w0 = -1.0f + 2.0f * rng_uniform(&probe);
    EXPECT(fabsf(w0) > 0.5f, "output weight %g too small for a sensitive check", w0);
    m.offset = draw_forward(&m.acts, &m.p, &m.c, m.x, m.B, NULL, NULL);
    GradcheckInput *in = gradcheck_block_inputs(&m.params, &m.grads);
    // The output is the bound (about 20 nats) minus its unperturbed value, so the float
    // output loses no digits; float activations through 3 steps leave about 1e-6 nats of
    // noise, 5e-5 after dividing by 2 eps. Central differences with eps 1e-2; tolerance
    // atol 2e-4 + rtol 1e-2 (fixed). Gradients here range from 1e-4 to 1.
    GradcheckOp op = {.ctx = &m, .forward = gc_forward, .backward = gc_backward, .n_out = 1,
                      .inputs = in, .n_inputs = m.params.count, .eps = 1e-2, .atol = 2e-4,
                      .rtol = 1e-2};
    EXPECT(gradcheck(name, &op, &rng) == 0, "see the gradcheck lines above");
    // Every tensor gets some gradient.
    for (int i = 0; i < m.params.count; i++) {
        const BlockTensor *t = &m.params.tensors[i];
        double s = 0.0;
        for (size_t k = 0; k < t->numel; k++) s += fabs(m.grads.data[t->offset + k]);
        EXPECT(s > 0.0, "no gradient reaches %s", t->name);
    }
    free(in);
    model_free(&m);
}

static void run_model_gradcheck(int attention) {
    run_model_gradcheck_config(tiny_config(attention),
                               attention ? "draw (attention)" : "draw (no attention)");
}

static void test_gradcheck_with_attention(void) { run_model_gradcheck(1); }
static void test_gradcheck_without_attention(void) { run_model_gradcheck(0); }

// A variant of the tiny configuration: channels (1 grey, 3 colour) and peepholes.
static void run_variant_gradcheck(int attention, int channels, int peepholes, const char *name) {
    DrawConfig c = tiny_config(attention);
    c.channels = channels;
    c.peepholes = peepholes;
    run_model_gradcheck_config(c, name);
}

// Peepholes in both LSTMs (seq/lstm.h); model_make's bias noise makes them non-zero.
static void test_gradcheck_peepholes_with_attention(void) {
    run_variant_gradcheck(1, 1, 1, "draw peepholes (attention)");
}
static void test_gradcheck_peepholes_without_attention(void) {
    run_variant_gradcheck(0, 1, 1, "draw peepholes (no attention)");
}

// Class-conditional: the one-hot label into both LSTMs at every step (labels 1 and 0 of 3;
// label 2's columns stay without gradient, the rest of the label weights must match).
static void test_gradcheck_conditional_with_attention(void) {
    DrawConfig c = tiny_config(1);
    c.classes = 3;
    run_model_gradcheck_config(c, "draw conditional (attention)");
}
static void test_gradcheck_conditional_without_attention(void) {
    DrawConfig c = tiny_config(0);
    c.classes = 3;
    run_model_gradcheck_config(c, "draw conditional (no attention)");
}
static void test_gradcheck_conditional_peepholes(void) {
    DrawConfig c = tiny_config(1);
    c.classes = 3;
    c.peepholes = 1;
    run_model_gradcheck_config(c, "draw conditional peepholes (attention)");
}

// The label matters (another label, another bound; other samples), and a conditional
// model whose label weights are zero is the unconditional model of the same seed (draw_init
// draws the label weights last): the same bound, canvases and gradients but for rounding.
static void test_conditional_reduces_to_unconditional(void) {
    for (int attention = 0; attention < 2; attention++) {
        DrawConfig u = tiny_config(attention), k = u;
        k.classes = 4;
        Model mu, mk;
        model_make(&mu, u, 2, 61);
        model_make(&mk, k, 2, 61);
        // draw_init of one seed: the unconditional tensors, then the label weights
        Rng ru, rk;
        rng_seed(&ru, 3), rng_seed(&rk, 3);
        draw_init(&mu.p, &u, &ru);
        draw_init(&mk.p, &k, &rk);
        EXPECT(mk.params.count == mu.params.count + 2, "tensors %d and %d", mk.params.count,
               mu.params.count);
        for (int i = 0; i < mu.params.count; i++) {
            const BlockTensor *tu = &mu.params.tensors[i], *tk = &mk.params.tensors[i];
            EXPECT(!strcmp(tu->name, tk->name) && tu->numel == tk->numel &&
                       !memcmp(mu.params.data + tu->offset, mk.params.data + tk->offset,
                               sizeof(float) * tu->numel),
                   "attention %d: draw_init's %s differs", attention, tu->name);
        }
        // the same images and noise
        memcpy(mk.x, mu.x, sizeof(float) * 2 * draw_image_size(&u));
        for (int t = 0; t < u.T; t++)
            memcpy(draw_at(&mk.acts, mk.acts.eps, t, u.z), draw_at(&mu.acts, mu.acts.eps, t, u.z),
                   sizeof(float) * 2 * u.z);
        double b0 = draw_forward(&mk.acts, &mk.p, &k, mk.x, 2, NULL, NULL);
        mk.acts.labels[0] = 3;
        double b1 = draw_forward(&mk.acts, &mk.p, &k, mk.x, 2, NULL, NULL);
        EXPECT(fabs(b1 - b0) > 1e-4, "attention %d: the label changes nothing (%g, %g)", attention,
               b0, b1);
        memset(mk.p.enc_label_W, 0, sizeof(float) * 4 * k.enc * k.classes);
        memset(mk.p.dec_label_W, 0, sizeof(float) * 4 * k.dec * k.classes);
        block_zero(&mu.grads), block_zero(&mk.grads);
        double bu = draw_forward(&mu.acts, &mu.p, &u, mu.x, 2, NULL, NULL);
        double bk = draw_forward(&mk.acts, &mk.p, &k, mk.x, 2, NULL, NULL);
        EXPECT_NEAR(bk, bu, 1e-5, 1e-6);
        draw_backward(&mu.g, &mu.acts, &mu.p, &u, mu.x, 2);
        draw_backward(&mk.g, &mk.acts, &mk.p, &k, mk.x, 2);
        for (int i = 0; i < mu.grads.count; i++) {
            const BlockTensor *tu = &mu.grads.tensors[i], *tk = &mk.grads.tensors[i];
            for (size_t j = 0; j < tu->numel; j++)
                EXPECT_NEAR(mk.grads.data[tk->offset + j], mu.grads.data[tu->offset + j], 1e-6, 1e-4);
        }
        Rng r1, r2;
        rng_seed(&r1, 5), rng_seed(&r2, 5);
        draw_generate(&mu.acts, &mu.p, &u, 2, &r1);
        draw_generate(&mk.acts, &mk.p, &k, 2, &r2);
        size_t ncan = (size_t)u.T * 2 * u.W * u.H;
        for (size_t i = 0; i < ncan; i++) EXPECT_NEAR(mk.acts.canvas[i], mu.acts.canvas[i], 1e-5, 1e-5);
        model_free(&mu), model_free(&mk);
    }
}

// Colour: three channels read and written through shared filters, Bernoulli cross-entropy
// on intensities.
static void test_gradcheck_colour_with_attention(void) {
    run_variant_gradcheck(1, 3, 0, "draw colour (attention)");
}
static void test_gradcheck_colour_without_attention(void) {
    run_variant_gradcheck(0, 3, 0, "draw colour (no attention)");
}

// A colour model whose three channels hold the same grey image is the grey model with
// its read weights summed and its write rows repeated: checked through the sizes and the
// bound of a colour batch against the same grey batch repeated in every channel, with the
// colour model's weights built from the grey one's.
static void test_colour_of_grey_images_matches_grey(void) {
    DrawConfig g = tiny_config(1), c = g;
    c.channels = 3;
    EXPECT(draw_read_size(&c) == 3 * draw_read_size(&g), "read size %d", draw_read_size(&c));
    EXPECT(draw_write_size(&c) == 3 * draw_write_size(&g), "write size %d", draw_write_size(&c));
    Model mg, mc;
    model_make(&mg, g, 2, 5);
    model_make(&mc, c, 2, 6);
    int N2r = g.read_n * g.read_n, Rg = draw_read_size(&g), Rc = draw_read_size(&c);
    int ing = Rg + g.dec + g.enc, inc = Rc + c.dec + c.enc;
    // Encoder: the colour read is [x_c0, x_c1, x_c2, xh_c0, xh_c1, xh_c2] (N^2 each); give
    // each channel a third of the grey weight so that equal channels sum to the grey input.
    for (int r = 0; r < 4 * g.enc; r++) {
        const float *wg = mg.p.enc_W + (size_t)r * ing;
        float *wc = mc.p.enc_W + (size_t)r * inc;
        for (int part = 0; part < 2; part++)
            for (int ch = 0; ch < 3; ch++)
                for (int k = 0; k < N2r; k++)
                    wc[(part * 3 + ch) * N2r + k] = wg[part * N2r + k] / 3.0f;
        memcpy(wc + Rc, wg + Rg, sizeof(float) * (g.dec + g.enc));
    }
    // Write: every channel's patch rows are the grey rows.
    int Wg = draw_write_size(&g);
    for (int ch = 0; ch < 3; ch++) {
        memcpy(mc.p.write_W + (size_t)ch * Wg * g.dec, mg.p.write_W, sizeof(float) * Wg * g.dec);
        memcpy(mc.p.write_b + (size_t)ch * Wg, mg.p.write_b, sizeof(float) * Wg);
    }
    size_t same = sizeof(float);
#define COPY(name, n) memcpy(mc.p.name, mg.p.name, same * (n))
    COPY(enc_b, 4 * g.enc);
    COPY(q_W, 2 * g.z * g.enc);
    COPY(q_b, 2 * g.z);
    COPY(dec_W, 4 * g.dec * (g.z + g.dec));
    COPY(dec_b, 4 * g.dec);
    COPY(read_attn_W, 5 * g.dec);
    COPY(read_attn_b, 5);
    COPY(write_attn_W, 5 * g.dec);
    COPY(write_attn_b, 5);
#undef COPY
    int P = g.W * g.H;
    for (int b = 0; b < 2; b++)
        for (int ch = 0; ch < 3; ch++)
            memcpy(mc.x + ((size_t)b * 3 + ch) * P, mg.x + (size_t)b * P, sizeof(float) * P);
    memcpy(mc.acts.eps, mg.acts.eps, sizeof(float) * (size_t)g.T * 2 * g.z);
    double rg, kg, rc, kc;
    draw_forward(&mg.acts, &mg.p, &g, mg.x, 2, &rg, &kg);
    draw_forward(&mc.acts, &mc.p, &c, mc.x, 2, &rc, &kc);
    EXPECT_NEAR(kc, kg, 1e-4, 1e-4);      // the same posterior
    EXPECT_NEAR(rc, 3.0 * rg, 1e-3, 1e-4);  // three copies of the same reconstruction
    model_free(&mg);
    model_free(&mc);
}

// All weights zero: h_dec no longer depends on z, the canvas is T * write.b, and the
// posterior is N(q.b_mu, exp(q.b_logsigma)^2) at every step. So
//   recon = sum_pixels BCE(x, sigmoid(T v)),  kl = T Z 0.5 (m^2 + e^{2 s} - 2 s - 1).
static void test_bound_hand_checkable(void) {
    for (int attention = 0; attention <= 1; attention++) {
        Model m;
        DrawConfig c = tiny_config(attention);
        c.T = 4;
        model_make(&m, c, 3, 5);
        block_zero(&m.params);
        float v = attention ? 0.0f : 0.05f;  // attention: the write patch is centred, keep 0
        float mu = 0.3f, s = -0.2f;
        for (int k = 0; k < draw_write_size(&c); k++) m.p.write_b[k] = v;
        for (int k = 0; k < c.z; k++) {
            m.p.q_b[k] = mu;
            m.p.q_b[c.z + k] = s;
        }
        double recon, kl;
        double bound = draw_forward(&m.acts, &m.p, &c, m.x, m.B, &recon, &kl);
        double logit = c.T * (double)v, expect_recon = 0.0;
        for (int i = 0; i < m.B * c.W * c.H; i++)
            expect_recon += m.x[i] > 0.5f ? log1p(exp(-logit)) : log1p(exp(logit));
        expect_recon /= m.B;
        double expect_kl = c.T * c.z * 0.5 * (mu * mu + exp(2.0 * s) - 2.0 * s - 1.0);
        EXPECT_NEAR(recon, expect_recon, 1e-5, 1e-6);
        EXPECT_NEAR(kl, expect_kl, 1e-5, 1e-6);
        EXPECT_NEAR(bound, expect_recon + expect_kl, 1e-5, 1e-6);
        if (attention) EXPECT_NEAR(recon, c.W * c.H * log(2.0), 1e-5, 1e-6);
        model_free(&m);
    }
}

static void test_noise_fresh_every_step(void) {
    Model m;
    model_make(&m, tiny_config(1), 2, 8);
    int Z = m.c.z, same = 0;
    for (int t = 1; t < m.c.T; t++)
        for (int k = 0; k < 2 * Z; k++)
            same += draw_at(&m.acts, m.acts.eps, t, Z)[k] == draw_at(&m.acts, m.acts.eps, 0, Z)[k];
    EXPECT(same == 0, "%d noise values repeat across steps", same);
    model_free(&m);
}

static void test_generation_reproducible(void) {
    Model m;
    model_make(&m, tiny_config(1), 4, 13);
    size_t n = (size_t)m.c.T * m.acts.B * m.c.W * m.c.H;
    float *first = xmalloc(n * sizeof(float));
    Rng rng;
    rng_seed(&rng, 77);
    draw_generate(&m.acts, &m.p, &m.c, 4, &rng);
    memcpy(first, m.acts.canvas, n * sizeof(float));
    rng_seed(&rng, 77);
    draw_generate(&m.acts, &m.p, &m.c, 4, &rng);
    EXPECT(memcmp(first, m.acts.canvas, n * sizeof(float)) == 0, "same seed, different images");
    rng_seed(&rng, 78);
    draw_generate(&m.acts, &m.p, &m.c, 4, &rng);
    EXPECT(memcmp(first, m.acts.canvas, n * sizeof(float)) != 0, "different seeds, same images");
    for (size_t i = 0; i < n; i++) EXPECT(isfinite(m.acts.canvas[i]), "canvas[%zu] not finite", i);
    free(first);
    model_free(&m);
}

// draw_generate_tempered: temperature 1 is draw_generate bit for bit; temperature 0 puts z
// at the prior's mean, so two seeds give the same images; 0.5 differs from both.
static void test_generation_tempered(void) {
    Model m;
    model_make(&m, tiny_config(1), 4, 13);
    size_t n = (size_t)m.c.T * m.acts.B * m.c.W * m.c.H;
    float *plain = xmalloc(n * sizeof(float)), *zero = xmalloc(n * sizeof(float));
    Rng rng;
    rng_seed(&rng, 77);
    draw_generate(&m.acts, &m.p, &m.c, 4, &rng);
    memcpy(plain, m.acts.canvas, n * sizeof(float));
    rng_seed(&rng, 77);
    draw_generate_tempered(&m.acts, &m.p, &m.c, 4, &rng, 1.0);
    EXPECT(memcmp(plain, m.acts.canvas, n * sizeof(float)) == 0, "temperature 1 is not draw_generate");
    rng_seed(&rng, 77);
    draw_generate_tempered(&m.acts, &m.p, &m.c, 4, &rng, 0.0);
    memcpy(zero, m.acts.canvas, n * sizeof(float));
    rng_seed(&rng, 78);
    draw_generate_tempered(&m.acts, &m.p, &m.c, 4, &rng, 0.0);
    EXPECT(memcmp(zero, m.acts.canvas, n * sizeof(float)) == 0, "temperature 0 depends on the seed");
    EXPECT(memcmp(zero, plain, n * sizeof(float)) != 0, "temperature 0 gave temperature 1's images");
    rng_seed(&rng, 77);
    draw_generate_tempered(&m.acts, &m.p, &m.c, 4, &rng, 0.5);
    EXPECT(memcmp(plain, m.acts.canvas, n * sizeof(float)) != 0 && memcmp(zero, m.acts.canvas, n * sizeof(float)) != 0,
           "temperature 0.5 gave the images of 1 or 0");
    free(plain), free(zero);
    model_free(&m);
}

// A batch smaller than the activations were allocated for (the last batch of an
// evaluation, say) takes the per-step weight-gradient path: same gradients as a full one.
static void test_partial_batch_same_gradients(void) {
    Model m;
    model_make(&m, tiny_config(1), 2, 31);
    block_zero(&m.grads);
    double b1 = draw_forward(&m.acts, &m.p, &m.c, m.x, 2, NULL, NULL);
    draw_backward(&m.g, &m.acts, &m.p, &m.c, m.x, 2);
    DrawActs big;
    draw_acts_alloc(&big, &m.c, 3);
    for (int t = 0; t < m.c.T; t++)
        memcpy(draw_at(&big, big.eps, t, m.c.z), draw_at(&m.acts, m.acts.eps, t, m.c.z),
               sizeof(float) * 2 * m.c.z);
    block_zero(&m.grads_tmp);
    double b2 = draw_forward(&big, &m.p, &m.c, m.x, 2, NULL, NULL);
    draw_backward(&m.g_tmp, &big, &m.p, &m.c, m.x, 2);
    EXPECT_NEAR(b2, b1, 1e-6, 1e-6);
    for (size_t i = 0; i < m.grads.numel; i++)
        EXPECT_NEAR(m.grads_tmp.data[i], m.grads.data[i], 1e-6, 1e-4);
    draw_acts_free(&big);
    model_free(&m);
}

// Training reuses one DrawActs: forward, backward, forward, backward on the same batch and
// noise give bit-identical bounds, canvases and gradients, with and without attention.
static void test_reuse_after_backward_identical(void) {
    for (int attention = 0; attention < 2; attention++) {
        Model m;
        model_make(&m, tiny_config(attention), 3, 41 + attention);
        size_t ncan = (size_t)m.c.T * m.B * m.c.W * m.c.H;
        float *can = xmalloc(ncan * sizeof(float));
        block_zero(&m.grads);
        double b1 = draw_forward(&m.acts, &m.p, &m.c, m.x, m.B, NULL, NULL);
        memcpy(can, m.acts.canvas, ncan * sizeof(float));
        draw_backward(&m.g, &m.acts, &m.p, &m.c, m.x, m.B);
        block_zero(&m.grads_tmp);
        double b2 = draw_forward(&m.acts, &m.p, &m.c, m.x, m.B, NULL, NULL);
        EXPECT(b1 == b2, "attention %d: bound %.17g then %.17g", attention, b1, b2);
        EXPECT(!memcmp(can, m.acts.canvas, ncan * sizeof(float)), "attention %d: canvas differs",
               attention);
        draw_backward(&m.g_tmp, &m.acts, &m.p, &m.c, m.x, m.B);
        EXPECT(!memcmp(m.grads.data, m.grads_tmp.data, m.grads.numel * sizeof(float)),
               "attention %d: the second backward gives other gradients", attention);
        free(can);
        model_free(&m);
    }
}

// Data parallelism: the batch split over 1, 2, 3 and 5 workers (5 images: shares of 2/1,
// 2/2/1 and 1 each) gives the single-batch bound, parts, per-image log-weights and parts and
// gradient, with the noise from draw_noise_fill equal to draw_fill_noise's.
static void workers_match_single_batch(int classes) {
    const int B = 5;
    Model m;
    DrawConfig cfg = tiny_config(1);
    cfg.classes = classes;
    model_make(&m, cfg, B, 51);
    int labels[5];
    for (int b = 0; b < B; b++) labels[b] = classes ? m.acts.labels[b] : 0;
    const DrawConfig *c = &m.c;
    float *eps = xmalloc(sizeof(float) * (size_t)c->T * B * c->z);
    Rng r1, r2;
    rng_seed(&r1, 9), rng_seed(&r2, 9);
    draw_fill_noise(&m.acts, c, B, &r1);
    draw_noise_fill(eps, c, B, &r2);
    EXPECT(!memcmp(eps, m.acts.eps, sizeof(float) * (size_t)c->T * B * c->z),
           "draw_noise_fill differs from draw_fill_noise");
    block_zero(&m.grads);
    double rec1, kl1, b1 = draw_forward(&m.acts, &m.p, c, m.x, B, &rec1, &kl1);
    draw_backward(&m.g, &m.acts, &m.p, c, m.x, B);
    const int counts[4] = {1, 2, 3, 5};
    for (int k = 0; k < 4; k++) {
        int n = counts[k];
        DrawWorker w[5];
        draw_workers_alloc(w, n, c, B);
        double logw[5], recons[5], kls[5], rec, kl;
        block_zero(&m.grads_tmp);
        m.grads_tmp.data[0] = 123.0f;  // overwritten, not accumulated into
        double b = draw_forward_parallel(w, n, &m.p, c, m.x, eps, classes ? labels : NULL, B,
                                         &m.grads_tmp, &rec, &kl,
                                         &(DrawPerImage){logw, recons, kls});
        EXPECT_NEAR(b, b1, 1e-6, 1e-6);
        EXPECT_NEAR(rec, rec1, 1e-6, 1e-6);
        EXPECT_NEAR(kl, kl1, 1e-6, 1e-6);
        double bound_sum = 0.0;
        for (int i = 0; i < B; i++) {
            EXPECT_NEAR(logw[i], m.acts.logw[i], 1e-6, 1e-6);
            EXPECT_NEAR(recons[i], m.acts.recon[i], 1e-6, 1e-6);
            EXPECT_NEAR(kls[i], m.acts.kl[i], 1e-6, 1e-6);
            bound_sum += recons[i] + kls[i];
        }
        EXPECT_NEAR(bound_sum / B, b1, 1e-5, 1e-5);  // the images' bounds average to the batch's
        for (size_t i = 0; i < m.grads.numel; i++)
            EXPECT_NEAR(m.grads_tmp.data[i], m.grads.data[i], 1e-6, 1e-5);
        draw_workers_free(w, n);
    }
    free(eps);
    model_free(&m);
}

static void test_workers_match_single_batch(void) { workers_match_single_batch(0); }
// Conditional: each worker takes its images' labels.
static void test_workers_match_single_batch_conditional(void) { workers_match_single_batch(3); }

int main(void) {
    RUN(test_gradcheck_with_attention);
    RUN(test_gradcheck_without_attention);
    RUN(test_gradcheck_peepholes_with_attention);
    RUN(test_gradcheck_peepholes_without_attention);
    RUN(test_gradcheck_colour_with_attention);
    RUN(test_gradcheck_colour_without_attention);
    RUN(test_colour_of_grey_images_matches_grey);
    RUN(test_bound_hand_checkable);
    RUN(test_noise_fresh_every_step);
    RUN(test_generation_reproducible);
    RUN(test_generation_tempered);
    RUN(test_partial_batch_same_gradients);
    RUN(test_reuse_after_backward_identical);
    RUN(test_workers_match_single_batch);
    RUN(test_gradcheck_conditional_with_attention);
    RUN(test_gradcheck_conditional_without_attention);
    RUN(test_gradcheck_conditional_peepholes);
    RUN(test_conditional_reduces_to_unconditional);
    RUN(test_workers_match_single_batch_conditional);
    return test_summary();
}
