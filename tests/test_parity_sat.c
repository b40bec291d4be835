// test_parity_sat.c: models/sat against the PyTorch reference (bench/reference/sat_ref.py).
//
// Each fixture in $ATTEND_FIXTURES (default tests/fixtures), written by
// bench/reference/make_fixtures.py (`make fixtures`), holds a tiny captioner (soft additive
// attention, scalar or vector gate, no dropout; its sat_config_parse string in the
// metadata), its weights (param/NAME, the Block's names), images, words and lengths (4, 0
// and 2 words: padding and a lone <end> included), and what PyTorch computed in float64
// from those float32 values: the annotations, the attention weights and logits of every
// step, the cross-entropy, the doubly stochastic term, the loss, every parameter's
// gradient, the loss before each of five Adam steps on the same batch, and the words that
// greedy and beam-3 search emit for other images (with decode_param/ weights: the
// embedding and output layer scaled by 3 so the tiny model's captions vary). The C model
// runs in float32; decoded words must match exactly.
//
// Tolerances, |C - reference| <= atol + rtol |reference| element by element:
//   forward (annotations, alpha, logits, ce, ds, loss)   rtol 1e-5, atol 1e-5
//   gradients            rtol 2e-4, atol 5e-6 * max |reference| of the tensor (elements
//                        far below the tensor's scale carry absolute float32 error; the
//                        attention's vectorised tanh is itself within 3.3e-7 absolute)
//   five-step loss curve rtol 2e-5
// Seen when written (PARITY_VERBOSE=1 prints each tensor's worst error / tolerance): at most
// 0.18 of these tolerances (attn.W_q and attn.w; everything else below 0.11).
// A mismatch fails naming the tensor, the worst element's index and both values.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/adam.h"
#include "core/block.h"
#include "core/rng.h"
#include "core/safetensors.h"
#include "models/sat.h"
#include "models/sat_decode.h"
#include "models/sat_lstm.h"
#include "tests/support/fixture.h"
#include "tests/support/test.h"

#define FWD_RTOL 1e-5
#define FWD_ATOL 1e-5
#define GRAD_RTOL 2e-4
#define GRAD_ATOL_REL 5e-6
#define CURVE_RTOL 2e-5

// Greedy and beam-3 decoding (length normalisation off) with the fixture's decode_param/
// weights on input/decode_images must give exactly the reference's words and lengths (the
// fixture generator keeps every ranking decision at least 1e-3 clear of a tie).
static void check_decoding(SatModel *m, const SafetensorsFile *f, const char *path, int B) {
    Error err = {0};
    if (safetensors_read_block(&m->params, "decode_param/", f, path, &err)) {
        test_fail_(__FILE__, __LINE__, "%s", err.msg);
        return;
    }
    const SatConfig *c = &m->cfg;
    const int S = c->image_size, ML = c->max_len;
    const float *images =
        fixture_tensor(f, "input/decode_images", (size_t)B * c->cnn.in_channels * S * S);
    if (!images) return;
    int *tokens = calloc((size_t)B * ML, sizeof(int)), *lens = calloc((size_t)B, sizeof(int));
    const int beams[2] = {1, 3};
    for (int i = 0; i < 2; i++) {
        char kt[64], kl[64];
        snprintf(kt, sizeof kt, "output/beam%d_tokens", beams[i]);
        snprintf(kl, sizeof kl, "output/beam%d_lens", beams[i]);
        const float *want_t = fixture_tensor(f, kt, (size_t)B * ML);
        const float *want_l = fixture_tensor(f, kl, (size_t)B);
        if (!want_t || !want_l) continue;
        sat_decode(m, tokens, lens, NULL, images, B, beams[i], 0.0f);
        for (int b = 0; b < B; b++) {
            int same = lens[b] == (int)want_l[b];
            for (int k = 0; same && k < lens[b]; k++) same = tokens[b * ML + k] == (int)want_t[b * ML + k];
            if (!same) {
                char got[128] = "", want[128] = "";
                for (int k = 0, n = 0; k < lens[b] && n < 100; k++)
                    n += snprintf(got + n, sizeof got - n, " %d", tokens[b * ML + k]);
                for (int k = 0, n = 0; k < (int)want_l[b] && n < 100; k++)
                    n += snprintf(want + n, sizeof want - n, " %d", (int)want_t[b * ML + k]);
                printf("  mismatch: beam %d image %d: words [%s ], reference [%s ]\n", beams[i], b,
                       got, want);
                test_fail_(__FILE__, __LINE__, "beam %d image %d: words [%s ], reference [%s ]",
                           beams[i], b, got, want);
            }
        }
    }
    free(tokens);
    free(lens);
}

// conv: how the encoder convolves (the fixtures' layers have fewer input channels than the
// automatic choice sends through Winograd, so the Winograd runs force it).
// got (rows packed by step, models/sat_lstm.h) and want (T, B, width) compared at the steps of
// each caption (t <= lens[b]): sat_forward does not compute a row past its caption's end.
static void compare_caption_steps(const char *name, const SatModel *m, const float *got,
                                  const float *want, int T, int B, int width, const int *lens) {
    const SatLstm *l = sat_lstm(m);
    const size_t n = (size_t)T * B * width;
    float *g = calloc(n, sizeof(float)), *w = calloc(n, sizeof(float));
    for (int t = 0; t < T; t++)
        for (int b = 0; b < B; b++)
            if (t <= lens[b]) {
                const size_t at = ((size_t)t * B + b) * width;
                memcpy(g + at, got + (size_t)sat_lstm_step_row(l, t, b) * width, (size_t)width * sizeof(float));
                memcpy(w + at, want + at, (size_t)width * sizeof(float));
            }
    fixture_compare("forward", name, g, w, n, FWD_ATOL, FWD_RTOL);
    free(g);
    free(w);
}

// One step of the reference's short training run: the same batch, the gradients from zero;
// returns the loss.
typedef struct {
    SatModel *m;
    const float *images;
    const int *words, *lens;
    int B;
} SatStep;

static double sat_step(void *ctx) {
    SatStep *s = ctx;
    SatLoss out;
    sat_forward(s->m, &out, s->images, s->words, s->lens, s->B, 1, 1, 0);
    block_zero(&s->m->grads);
    sat_backward(s->m);
    return out.loss;
}

static void check_fixture_conv(const char *name, CnnConv conv) {
    char path[512];
    SafetensorsFile f;
    Error err = {0};
    if (fixture_load(&f, path, sizeof path, name)) return;
    const char *cfg_text = safetensors_meta(&f, "sat_config");
    SatConfig cfg;
    int B = 0;
    FixtureTraining tr;
    if (!cfg_text) {
        test_fail_(__FILE__, __LINE__, "%s: no sat_config in the metadata", path);
        safetensors_free(&f);
        return;
    }
    if (sat_config_parse(&cfg, cfg_text, &err)) {
        test_fail_(__FILE__, __LINE__, "%s: %s", path, err.msg);
        safetensors_free(&f);
        return;
    }
    if (fixture_meta_int(&f, "B", &B) || fixture_training(&f, &tr)) {
        safetensors_free(&f);
        return;
    }
    Rng rng;
    rng_seed(&rng, 1);
    SatModel m;
    sat_init(&m, &cfg, &rng);
    sat_alloc_acts(&m, B);
    SatLstm *l = sat_lstm(&m);
    if (conv != CNN_CONV_AUTO) {
        cnn_workspace_free(&l->cnn_ws);
        cnn_workspace_alloc_conv(&l->cnn_ws, &cfg.cnn, B, cfg.image_size, CNN_GROUP, conv);
    }
    check_decoding(&m, &f, path, B);
    int loaded = fixture_read_params(&m.params, &f, path);

    const int S = cfg.image_size, C = cfg.cnn.in_channels, ML = cfg.max_len;
    const int L = sat_L(&cfg), D = sat_D(&cfg), V = cfg.V;
    const float *images = fixture_tensor(&f, "input/images", (size_t)B * C * S * S);
    const float *wordsf = fixture_tensor(&f, "input/words", (size_t)B * ML);
    const float *lensf = fixture_tensor(&f, "input/lens", (size_t)B);
    const float *loss = fixture_tensor(&f, "output/loss", 1);
    const float *ce = fixture_tensor(&f, "output/ce", 1);
    const float *ds = fixture_tensor(&f, "output/ds", 1);
    const float *annot = fixture_tensor(&f, "output/annot", (size_t)B * L * D);
    const float *curve = fixture_tensor(&f, "train/loss", (size_t)tr.steps);
    if (!loaded || !images || !wordsf || !lensf || !loss || !ce || !ds || !annot || !curve)
        goto done;
    int *words = calloc((size_t)B * ML, sizeof(int)), *lens = calloc((size_t)B, sizeof(int));
    int T = 0;
    for (int b = 0; b < B; b++) {
        lens[b] = (int)lensf[b];
        if (lens[b] + 1 > T) T = lens[b] + 1;
    }
    for (int i = 0; i < B * ML; i++) words[i] = (int)wordsf[i];
    const float *alpha = fixture_tensor(&f, "output/alpha", (size_t)T * B * L);
    const float *logits = fixture_tensor(&f, "output/logits", (size_t)T * B * V);
    if (alpha && logits) {
        SatLoss out;
        sat_forward(&m, &out, images, words, lens, B, 1, 1, 0);
        EXPECT(l->Tb == T, "steps %d, reference %d", l->Tb, T);
        float got_loss = (float)out.loss, got_ce = (float)out.ce, got_ds = (float)out.ds;
        fixture_compare("forward", "annotations", l->a.annot, annot, (size_t)B * L * D, FWD_ATOL,
                        FWD_RTOL);
        // The steps of each caption only (the reference computes every padded step too).
        compare_caption_steps("alpha", &m, l->a.alpha, alpha, T, B, L, lens);
        // sat_forward leaves the logits in the dlogits slot until the backward.
        compare_caption_steps("logits", &m, l->a.dlogits, logits, T, B, V, lens);
        fixture_compare("forward", "ce", &got_ce, ce, 1, FWD_ATOL, FWD_RTOL);
        fixture_compare("forward", "ds", &got_ds, ds, 1, FWD_ATOL, FWD_RTOL);
        fixture_compare("forward", "loss", &got_loss, loss, 1, FWD_ATOL, FWD_RTOL);

        block_zero(&m.grads);
        sat_backward(&m);
        fixture_compare_grads(&m.grads, &f, GRAD_ATOL_REL, GRAD_RTOL);

        // Five Adam steps on the same batch, as the reference took them.
        SatStep step = {&m, images, words, lens, B};
        fixture_train_curve(&m.params, &m.grads, &tr, sat_step, &step, curve, CURVE_RTOL, path);
    }
    free(words);
    free(lens);
done:
    sat_free(&m);
    safetensors_free(&f);
}

static void check_fixture(const char *name) { check_fixture_conv(name, CNN_CONV_AUTO); }

static void test_parity_sat_scalar_gate(void) { check_fixture("sat_scalar_gate.safetensors"); }
static void test_parity_sat_vector_gate(void) { check_fixture("sat_vector_gate.safetensors"); }
static void test_parity_sat_query_current(void) { check_fixture("sat_query_current.safetensors"); }
static void test_parity_sat_winograd(void) {
    check_fixture_conv("sat_scalar_gate.safetensors", CNN_CONV_WINOGRAD);
    check_fixture_conv("sat_vector_gate.safetensors", CNN_CONV_WINOGRAD);
    check_fixture_conv("sat_query_current.safetensors", CNN_CONV_WINOGRAD);
}

// The comparison itself must be able to fail: a perturbed tensor is caught.
static void test_parity_compare_catches_error(void) {
    float want[4] = {1.0f, -2.0f, 3.0f, 1e-3f}, got[4];
    memcpy(got, want, sizeof got);
    got[3] += 1e-4f;
    EXPECT(!fixture_compare_report("self-test", "perturbed", got, want, 4, 1e-6, GRAD_RTOL, 0),
           "an absolute error of 1e-4 passed atol 1e-6");
    EXPECT(fixture_compare_report("self-test", "exact", want, want, 4, 0.0, GRAD_RTOL, 0),
           "equal arrays failed");
}

int main(void) {
    RUN(test_parity_compare_catches_error);
    RUN(test_parity_sat_scalar_gate);
    RUN(test_parity_sat_vector_gate);
    RUN(test_parity_sat_query_current);
    RUN(test_parity_sat_winograd);
    return test_summary();
}
