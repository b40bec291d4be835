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
#include "tests/support/test.h"

#define FWD_RTOL 1e-5
#define FWD_ATOL 1e-5
#define GRAD_RTOL 2e-4
#define GRAD_ATOL_REL 5e-6
#define CURVE_RTOL 2e-5

static int verbose(void) {
    const char *v = getenv("PARITY_VERBOSE");
    return v && v[0] == '1';
}

static const char *fixture_path(char *buf, size_t n, const char *name) {
    const char *dir = getenv("ATTEND_FIXTURES");
    snprintf(buf, n, "%s/%s", dir && dir[0] ? dir : "tests/fixtures", name);
    return buf;
}

// Compares got (n) with want (n) in |got - want| <= atol + rtol |want|. Returns 1 when
// within tolerance; otherwise, if report, fails naming the worst element (largest excess
// over its tolerance) and prints an indented line for every mismatching tensor.
static int compare_(const char *what, const char *name, const float *got, const float *want,
                    size_t n, double atol, double rtol, int report) {
    size_t worst = 0;
    double worst_ratio = -1.0, max_abs_err = 0.0;
    int finite = 1;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        if (!isfinite(got[i])) {
            finite = 0;
            worst = i;
            break;
        }
        double ratio = d / (atol + rtol * fabs((double)want[i]));
        if (d > max_abs_err) max_abs_err = d;
        if (ratio > worst_ratio) worst_ratio = ratio, worst = i;
    }
    if (verbose())
        printf("  %s %-16s n %6zu  max |err| %.3g  worst/tol %.3g at [%zu]\n", what, name, n,
               max_abs_err, worst_ratio, worst);
    if (!finite || worst_ratio > 1.0) {
        if (report) {
            char msg[400];
            snprintf(msg, sizeof msg,
                     "%s %s: worst element [%zu] = %.9g, reference %.9g (|diff| %.3g > atol "
                     "%.3g + rtol %.3g * |ref|)",
                     what, name, worst, (double)got[worst], (double)want[worst],
                     fabs((double)got[worst] - want[worst]), atol, rtol);
            printf("  mismatch: %s\n", msg);
            test_fail_(__FILE__, __LINE__, "%s", msg);
        }
        return 0;
    }
    return 1;
}

static int compare(const char *what, const char *name, const float *got, const float *want,
                   size_t n, double atol, double rtol) {
    return compare_(what, name, got, want, n, atol, rtol, 1);
}

static double max_abs(const float *x, size_t n) {
    double m = 0.0;
    for (size_t i = 0; i < n; i++)
        if (fabs(x[i]) > m) m = fabs(x[i]);
    return m;
}

// The tensor called name, checked to hold n floats; NULL (and a failure) otherwise.
static const float *tensor(const SafetensorsFile *f, const char *name, size_t n) {
    const SafetensorsTensor *t = safetensors_find(f, name);
    if (!t) {
        test_fail_(__FILE__, __LINE__, "fixture has no tensor %s", name);
        return NULL;
    }
    if (t->numel != n) {
        test_fail_(__FILE__, __LINE__, "fixture tensor %s has %zu floats, expected %zu", name,
                   t->numel, n);
        return NULL;
    }
    return t->data;
}

static int meta_int(const SafetensorsFile *f, const char *key, int *out) {
    const char *v = safetensors_meta(f, key);
    if (!v) {
        test_fail_(__FILE__, __LINE__, "fixture metadata has no %s", key);
        return -1;
    }
    *out = atoi(v);
    return 0;
}

static int meta_double(const SafetensorsFile *f, const char *key, double *out) {
    const char *v = safetensors_meta(f, key);
    if (!v) {
        test_fail_(__FILE__, __LINE__, "fixture metadata has no %s", key);
        return -1;
    }
    *out = atof(v);
    return 0;
}

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
    const float *images = tensor(f, "input/decode_images", (size_t)B * c->cnn.in_channels * S * S);
    if (!images) return;
    int *tokens = calloc((size_t)B * ML, sizeof(int)), *lens = calloc((size_t)B, sizeof(int));
    const int beams[2] = {1, 3};
    for (int i = 0; i < 2; i++) {
        char kt[64], kl[64];
        snprintf(kt, sizeof kt, "output/beam%d_tokens", beams[i]);
        snprintf(kl, sizeof kl, "output/beam%d_lens", beams[i]);
        const float *want_t = tensor(f, kt, (size_t)B * ML), *want_l = tensor(f, kl, (size_t)B);
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

static void check_fixture(const char *name) {
    char path[512];
    fixture_path(path, sizeof path, name);
    SafetensorsFile f;
    Error err = {0};
    if (safetensors_load(&f, path, &err)) {
        test_fail_(__FILE__, __LINE__, "%s (regenerate with `make fixtures`)", err.msg);
        return;
    }
    const char *cfg_text = safetensors_meta(&f, "sat_config");
    SatConfig cfg;
    int B = 0, steps = 0;
    double lr, beta1, beta2, eps, clip;
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
    if (meta_int(&f, "B", &B) || meta_int(&f, "steps", &steps) ||
        meta_double(&f, "adam.lr", &lr) || meta_double(&f, "adam.beta1", &beta1) ||
        meta_double(&f, "adam.beta2", &beta2) || meta_double(&f, "adam.eps", &eps) ||
        meta_double(&f, "clip", &clip)) {
        safetensors_free(&f);
        return;
    }
    Rng rng;
    rng_seed(&rng, 1);
    SatModel m;
    sat_init(&m, &cfg, &rng);
    sat_alloc_acts(&m, B);
    check_decoding(&m, &f, path, B);
    int loaded = safetensors_read_block(&m.params, "param/", &f, path, &err) == 0;
    EXPECT(loaded, "%s", err.msg);
    int n_param = 0;
    for (int i = 0; i < f.count; i++) n_param += strncmp(f.tensors[i].name, "param/", 6) == 0;
    EXPECT(n_param == m.params.count, "%s: %d param/ tensors, the model has %d", path, n_param,
           m.params.count);

    const int S = cfg.image_size, C = cfg.cnn.in_channels, ML = cfg.max_len;
    const int L = sat_L(&cfg), D = sat_D(&cfg), V = cfg.V;
    const float *images = tensor(&f, "input/images", (size_t)B * C * S * S);
    const float *wordsf = tensor(&f, "input/words", (size_t)B * ML);
    const float *lensf = tensor(&f, "input/lens", (size_t)B);
    const float *loss = tensor(&f, "output/loss", 1);
    const float *ce = tensor(&f, "output/ce", 1);
    const float *ds = tensor(&f, "output/ds", 1);
    const float *annot = tensor(&f, "output/annot", (size_t)B * L * D);
    const float *curve = tensor(&f, "train/loss", (size_t)steps);
    if (!loaded || !images || !wordsf || !lensf || !loss || !ce || !ds || !annot || !curve)
        goto done;
    int *words = calloc((size_t)B * ML, sizeof(int)), *lens = calloc((size_t)B, sizeof(int));
    int T = 0;
    for (int b = 0; b < B; b++) {
        lens[b] = (int)lensf[b];
        if (lens[b] + 1 > T) T = lens[b] + 1;
    }
    for (int i = 0; i < B * ML; i++) words[i] = (int)wordsf[i];
    const float *alpha = tensor(&f, "output/alpha", (size_t)T * B * L);
    const float *logits = tensor(&f, "output/logits", (size_t)T * B * V);
    if (alpha && logits) {
        SatLoss out;
        sat_forward(&m, &out, images, words, lens, B, 1, &rng);
        EXPECT(m.Tb == T, "steps %d, reference %d", m.Tb, T);
        float got_loss = (float)out.loss, got_ce = (float)out.ce, got_ds = (float)out.ds;
        compare("forward", "annotations", m.a.annot, annot, (size_t)B * L * D, FWD_ATOL, FWD_RTOL);
        compare("forward", "alpha", m.a.alpha, alpha, (size_t)T * B * L, FWD_ATOL, FWD_RTOL);
        // sat_forward leaves the logits in the dlogits slot until the backward.
        compare("forward", "logits", m.a.dlogits, logits, (size_t)T * B * V, FWD_ATOL, FWD_RTOL);
        compare("forward", "ce", &got_ce, ce, 1, FWD_ATOL, FWD_RTOL);
        compare("forward", "ds", &got_ds, ds, 1, FWD_ATOL, FWD_RTOL);
        compare("forward", "loss", &got_loss, loss, 1, FWD_ATOL, FWD_RTOL);

        block_zero(&m.grads);
        sat_backward(&m);
        for (int i = 0; i < m.grads.count; i++) {
            const BlockTensor *bt = &m.grads.tensors[i];
            char key[BLOCK_NAME_LEN + 8];
            snprintf(key, sizeof key, "grad/%s", bt->name);
            const float *want = tensor(&f, key, bt->numel);
            if (!want) continue;
            compare("gradient", bt->name, m.grads.data + bt->offset, want, bt->numel,
                    GRAD_ATOL_REL * max_abs(want, bt->numel), GRAD_RTOL);
        }

        // Five Adam steps on the same batch, as the reference took them.
        AdamConfig ac = adam_defaults((float)lr);
        ac.beta1 = (float)beta1, ac.beta2 = (float)beta2, ac.eps = (float)eps;
        float *got = calloc((size_t)steps, sizeof(float));
        for (int s = 1; s <= steps; s++) {
            sat_forward(&m, &out, images, words, lens, B, 1, &rng);
            got[s - 1] = (float)out.loss;
            block_zero(&m.grads);
            sat_backward(&m);
            clip_global_norm(m.grads.data, m.grads.numel, (float)clip);
            adam_update(m.params.data, m.grads.data, m.adam_m.data, m.adam_v.data, m.params.numel,
                        &ac, s, (float)lr);
        }
        compare("train", "loss curve", got, curve, (size_t)steps, 0.0, CURVE_RTOL);
        EXPECT(curve[steps - 1] < curve[0] - 1e-3 * fabs(curve[0]),
               "%s: reference curve is flat", path);
        free(got);
    }
    free(words);
    free(lens);
done:
    sat_free(&m);
    safetensors_free(&f);
}

static void test_parity_sat_scalar_gate(void) { check_fixture("sat_scalar_gate.safetensors"); }
static void test_parity_sat_vector_gate(void) { check_fixture("sat_vector_gate.safetensors"); }

// The comparison itself must be able to fail: a perturbed tensor is caught.
static void test_parity_compare_catches_error(void) {
    float want[4] = {1.0f, -2.0f, 3.0f, 1e-3f}, got[4];
    memcpy(got, want, sizeof got);
    got[3] += 1e-4f;
    EXPECT(!compare_("self-test", "perturbed", got, want, 4, 1e-6, GRAD_RTOL, 0),
           "an absolute error of 1e-4 passed atol 1e-6");
    EXPECT(compare_("self-test", "exact", want, want, 4, 0.0, GRAD_RTOL, 0), "equal arrays failed");
}

int main(void) {
    RUN(test_parity_compare_catches_error);
    RUN(test_parity_sat_scalar_gate);
    RUN(test_parity_sat_vector_gate);
    return test_summary();
}
