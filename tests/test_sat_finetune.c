// test_sat_finetune.c: the captioner with a pretrained encoder's last stage fine-tuned
// (models/sat_finetune.h) on the reduced-width random-weight encoders of
// tests/fixtures/encoders (VGG-19 conv5, ResNet-18 layer4, ResNet-50 layer4): the
// gradient of the caption loss w.r.t. the stage's weights (through the decoder's
// d annotations, the layout change and the stage's backward) against central differences,
// with the LSTM decoder and (VGG-19) the Transformer's;
// a few training steps on one batch lower the loss and change the stage's weights, and a
// stage learning rate of 0 leaves them as loaded.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/adam.h"
#include "core/check.h"
#include "core/gemm.h"
#include "core/rng.h"
#include "models/sat.h"
#include "models/sat_finetune.h"
#include "seq/vocab.h"
#include "tests/support/gradcheck.h"
#include "tests/support/test.h"

enum { TB = 3, TV = 9, TML = 4 };

typedef struct {
    Encoder *enc;
    SatFineTune ft;
    SatModel m;
    float *images;
    int words[TB * TML], lens[TB];
    SatLoss loss;
} Setup;

static int setup(Setup *t, const char *spec, int S, uint64_t seed, int transformer) {
    memset(t, 0, sizeof *t);
    char path[512];
    const char *dir = getenv("ATTEND_FIXTURES");
    snprintf(path, sizeof path, "%s/encoders/%.*s.safetensors", dir && dir[0] ? dir : "tests/fixtures",
             (int)strcspn(spec, "@"), spec);
    Error err = {{0}};
    if (encoder_load(&t->enc, spec, path, &err)) {
        EXPECT(0, "%s", err.msg);
        return -1;
    }
    gemm_set_threads(1);
    sat_finetune_init(&t->ft, t->enc, S, TB);
    SatConfig c;
    sat_config_default(&c);
    c.image_size = S;
    c.feat_L = t->ft.G * t->ft.G;
    c.feat_D = t->ft.D;
    c.E = 5, c.H = 6, c.V = TV, c.max_len = TML;
    c.attn.A = 4;
    c.dropout = 0.0f;
    if (transformer) {  // issue 59: the Transformer decoder's d annotations
        c.decoder = SAT_DECODER_TRANSFORMER;
        c.tf = (SatTfConfig){.d_model = 8, .heads = 2, .d_ff = 12, .layers = 1, .enc_layers = 1,
                             .positions = 8, .map_layer = -1, .dropout = 0.0f};
    }
    CHECK(sat_config_finish(&c, &err) == 0, "%s", err.msg);
    Rng rng;
    rng_seed(&rng, seed);
    sat_init(&t->m, &c, &rng);
    sat_alloc_acts(&t->m, TB);
    t->m.annot_grad = 1;
    const size_t n = (size_t)TB * 3 * S * S;
    t->images = xmalloc(n * sizeof(float));
    fill_uniform(t->images, n, -2.0f, 2.0f, &rng);
    const int lens[TB] = {3, 4, 2};
    for (int b = 0; b < TB; b++) {
        t->lens[b] = lens[b];
        for (int k = 0; k < TML; k++)
            t->words[b * TML + k] = k < lens[b] ? VOCAB_NSPECIAL + (int)rng_below(&rng, TV - VOCAB_NSPECIAL) : 0;
    }
    return 0;
}

static void teardown(Setup *t) {
    sat_free(&t->m);
    sat_finetune_free(&t->ft);
    encoder_free(t->enc);
    free(t->images);
}

static void loss_forward(void *ctx, float *out) {
    Setup *t = ctx;
    const float *annot = sat_finetune_annotations(&t->ft, t->images, TB);
    sat_forward(&t->m, &t->loss, annot, t->words, t->lens, TB, 1, 5, 0);
    out[0] = (float)t->loss.loss;
}

static void loss_backward(void *ctx, const float *dout) {
    Setup *t = ctx;
    float out;
    loss_forward(ctx, &out);
    // ft.grad was zeroed by the harness; sat_finetune_backward accumulates d loss into it.
    float *keep = xmalloc(t->ft.stage.n_params * sizeof(float));
    memcpy(keep, t->ft.grad, t->ft.stage.n_params * sizeof(float));
    memset(t->ft.grad, 0, t->ft.stage.n_params * sizeof(float));
    sat_backward(&t->m);
    sat_finetune_backward(&t->ft, &t->m);
    for (size_t i = 0; i < t->ft.stage.n_params; i++) t->ft.grad[i] = keep[i] + dout[0] * t->ft.grad[i];
    free(keep);
}

static void gradcheck_spec_decoder(const char *spec, int S, int transformer) {
    Setup t;
    if (setup(&t, spec, S, 3, transformer)) return;
    GradcheckInput in = {"stage", t.ft.stage.params, t.ft.grad, t.ft.stage.n_params};
    GradcheckOp op = {.ctx = &t, .forward = loss_forward, .backward = loss_backward, .n_out = 1,
                      .inputs = &in, .n_inputs = 1, .eps = 1e-3, .atol = 2e-3, .rtol = 2e-2,
                      .max_checks = 120};
    Rng rng;
    rng_seed(&rng, 7);
    EXPECT(gradcheck(spec, &op, &rng) == 0, "%s: the loss's gradient w.r.t. the stage failed", spec);
    teardown(&t);
}

static void gradcheck_spec(const char *spec, int S) { gradcheck_spec_decoder(spec, S, 0); }

static void test_gradcheck_vgg19_conv5(void) { gradcheck_spec("vgg19", 32); }
static void test_gradcheck_vgg19_conv5_transformer(void) { gradcheck_spec_decoder("vgg19", 32, 1); }
static void test_gradcheck_resnet18_layer4(void) { gradcheck_spec("resnet18", 64); }
static void test_gradcheck_resnet50_layer4(void) { gradcheck_spec("resnet50", 64); }

// Steps on one batch: decoder and stage each with their own Adam. Returns the first and last
// losses and the largest change of a stage weight.
static void train_steps(const char *spec, int S, float stage_lr, double *first, double *last,
                        double *moved) {
    Setup t;
    *first = *last = *moved = NAN;
    if (setup(&t, spec, S, 9, 0)) return;
    float *loaded = xmalloc(t.ft.stage.n_params * sizeof(float));
    memcpy(loaded, t.ft.stage.params, t.ft.stage.n_params * sizeof(float));
    const AdamConfig dec = adam_defaults(1e-2f), stage = adam_defaults(stage_lr);
    for (long step = 1; step <= 15; step++) {
        float out;
        block_zero(&t.m.grads);
        loss_forward(&t, &out);
        if (step == 1) *first = out;
        *last = out;
        sat_backward(&t.m);
        sat_finetune_backward(&t.ft, &t.m);
        clip_global_norm(t.m.grads.data, t.m.grads.numel, 5.0f);
        adam_update(t.m.params.data, t.m.grads.data, t.m.adam_m.data, t.m.adam_v.data,
                    t.m.params.numel, &dec, step, dec.lr);
        sat_finetune_step(&t.ft, &stage, step, stage.lr, 5.0f);
    }
    double d = 0.0;
    for (size_t i = 0; i < t.ft.stage.n_params; i++) d = fmax(d, fabs((double)t.ft.stage.params[i] - loaded[i]));
    *moved = d;
    free(loaded);
    teardown(&t);
}

static void test_training_moves_stage(void) {
    static const struct { const char *spec; int S; } cases[] = {{"vgg19", 32}, {"resnet18", 64}};
    for (int k = 0; k < 2; k++) {
        double first, last, moved;
        train_steps(cases[k].spec, cases[k].S, 1e-3f, &first, &last, &moved);
        EXPECT(last < 0.8 * first, "%s: loss %g -> %g after 15 steps", cases[k].spec, first, last);
        EXPECT(moved > 1e-3, "%s: the stage's weights moved by at most %g", cases[k].spec, moved);
        double first0, last0, moved0;
        train_steps(cases[k].spec, cases[k].S, 0.0f, &first0, &last0, &moved0);
        EXPECT(moved0 == 0.0, "%s: stage learning rate 0 moved the weights by %g", cases[k].spec, moved0);
        EXPECT(first0 == first, "%s: the first loss depends on the stage's learning rate", cases[k].spec);
    }
}

int main(void) {
    RUN(test_gradcheck_vgg19_conv5);
    RUN(test_gradcheck_vgg19_conv5_transformer);
    RUN(test_gradcheck_resnet18_layer4);
    RUN(test_gradcheck_resnet50_layer4);
    RUN(test_training_moves_stage);
    return test_summary();
}
