// test_parity_glimpse.c: models/glimpse against the PyTorch reference
// (bench/reference/glimpse_ref.py, `make fixtures`).
//
// Each fixture in $ATTEND_FIXTURES (default tests/fixtures) holds a tiny configuration's
// weights (param/NAME, the Block's names), images and labels, and what PyTorch computed in
// float64 from those float32 values: the logits, the mean cross-entropy, every parameter's
// gradient and the loss before each of five Adam steps (clipped at half the first
// gradient's norm). The C model runs in float32. Tolerances as tests/test_parity_draw.c:
// forward rtol 1e-5 atol 1e-5; gradients rtol 1e-4 with atol 1e-6 of the tensor's largest
// reference element; the five-step curve rtol 2e-5.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/adam.h"
#include "core/block.h"
#include "core/safetensors.h"
#include "models/glimpse.h"
#include "tests/support/fixture.h"
#include "tests/support/test.h"

#define FWD_RTOL 1e-5
#define FWD_ATOL 1e-5
#define GRAD_RTOL 1e-4
#define GRAD_ATOL_REL 1e-6
#define CURVE_RTOL 2e-5

// One step of the reference's short training run: the same batch, the gradients from zero;
// returns the loss.
typedef struct {
    GlimpseActs *a;
    GlimpseParams *p, *g;
    const GlimpseConfig *c;
    Block *grads;
    const float *x;
    const int *labels;
    int B;
} GlimpseStep;

static double glimpse_step(void *ctx) {
    GlimpseStep *s = ctx;
    const double loss = glimpse_forward(s->a, s->p, s->c, s->x, s->labels, s->B, NULL);
    block_zero(s->grads);
    glimpse_backward(s->g, s->a, s->p, s->c, s->x, s->labels, s->B);
    return loss;
}

static void check_fixture(const char *name) {
    char path[512];
    SafetensorsFile f;
    if (fixture_load(&f, path, sizeof path, name)) return;
    GlimpseConfig c;
    memset(&c, 0, sizeof c);
    int B = 0;
    FixtureTraining tr;
    if (fixture_meta_int(&f, "W", &c.W) || fixture_meta_int(&f, "H", &c.H) ||
        fixture_meta_int(&f, "T", &c.T) || fixture_meta_int(&f, "read_n", &c.read_n) ||
        fixture_meta_int(&f, "hidden", &c.hidden) || fixture_meta_int(&f, "classes", &c.classes) ||
        fixture_meta_int(&f, "attention", &c.attention) || fixture_meta_int(&f, "B", &B) ||
        fixture_training(&f, &tr)) {
        safetensors_free(&f);
        return;
    }
    Error err = {{0}};
    EXPECT(glimpse_config_check(&c, &err) == 0, "%s: %s", path, err.msg);
    Block params = {0}, grads = {0};
    GlimpseParams p, g;
    glimpse_layout(&params, &p, &c);
    glimpse_layout(&grads, &g, &c);
    block_alloc(&params), block_alloc(&grads);
    int loaded = fixture_read_params(&params, &f, path);
    const float *x = fixture_tensor(&f, "input/x", (size_t)B * c.W * c.H);
    const float *lab = fixture_tensor(&f, "input/labels", (size_t)B);
    const float *logits = fixture_tensor(&f, "output/logits", (size_t)B * c.classes);
    const float *loss = fixture_tensor(&f, "output/loss", 1);
    const float *curve = fixture_tensor(&f, "train/loss", (size_t)tr.steps);
    if (!loaded || !x || !lab || !logits || !loss || !curve) goto done;
    int labels[64];
    EXPECT(B <= 64, "B %d", B);
    for (int b = 0; b < B && b < 64; b++) labels[b] = (int)lab[b];
    GlimpseActs a;
    glimpse_acts_alloc(&a, &c, B);
    // The reference's forward and backward on its batch, then its five Adam steps on the same.
    GlimpseStep step = {&a, &p, &g, &c, &grads, x, labels, B};
    float got_loss = (float)glimpse_step(&step);
    fixture_compare("forward", "logits", a.logits, logits, (size_t)B * c.classes, FWD_ATOL, FWD_RTOL);
    fixture_compare("forward", "loss", &got_loss, loss, 1, FWD_ATOL, FWD_RTOL);
    fixture_compare_grads(&grads, &f, GRAD_ATOL_REL, GRAD_RTOL);
    fixture_train_curve(&params, &grads, &tr, glimpse_step, &step, curve, CURVE_RTOL, path);
    glimpse_acts_free(&a);
done:
    block_free(&params), block_free(&grads);
    safetensors_free(&f);
}

static void test_parity_glimpse_attention(void) { check_fixture("glimpse_attention.safetensors"); }
static void test_parity_glimpse_plain(void) { check_fixture("glimpse_plain.safetensors"); }

int main(void) {
    RUN(test_parity_glimpse_attention);
    RUN(test_parity_glimpse_plain);
    return test_summary();
}
