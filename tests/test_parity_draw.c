// test_parity_draw.c: models/draw against the PyTorch reference (bench/reference/draw_ref.py).
//
// Each fixture in $ATTEND_FIXTURES (default tests/fixtures), written by
// bench/reference/make_fixtures.py (`make fixtures`), holds a tiny configuration's weights
// (param/NAME, the Block's names), input x and noise eps, and what PyTorch computed in
// float64 from those float32 values: the canvas logits of every step, recon and kl per
// image, the mean bound, the gradient of every parameter, and the bound before each of five
// Adam steps (clipping and Adam settings in the metadata). The C model runs in float32.
//
// Tolerances, |C - reference| <= atol + rtol |reference| element by element:
//   forward (canvas, recon, kl, bound)   rtol 1e-5, atol 1e-5 (logits and nats of order 1..100)
//   gradients                            rtol 1e-4, atol 1e-6 * max |reference| of the
//                                        tensor (float32 cancellation in sums over T steps
//                                        and the batch: elements far below the tensor's
//                                        scale carry absolute, not relative, error)
//   five-step loss curve                 rtol 2e-5 (Adam's first steps move every weight by
//                                        about lr whatever its gradient's size)
// Seen when written (PARITY_VERBOSE=1 prints each tensor's worst error / tolerance): at most
// 0.13 of these tolerances, i.e. gradients within about 1e-5 relative.
// A mismatch fails naming the tensor, the worst element's index and both values.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/adam.h"
#include "core/block.h"
#include "core/safetensors.h"
#include "models/draw.h"
#include "tests/support/fixture.h"
#include "tests/support/test.h"

#define FWD_RTOL 1e-5
#define FWD_ATOL 1e-5
#define GRAD_RTOL 1e-4
#define GRAD_ATOL_REL 1e-6
#define CURVE_RTOL 2e-5

// One step of the reference's short training run: the same batch and noise, the gradients
// from zero; returns the bound.
typedef struct {
    DrawActs *a;
    DrawParams *p, *g;
    const DrawConfig *c;
    Block *grads;
    const float *x, *noise;
    int B;
} DrawStep;

static double draw_step(void *ctx) {
    DrawStep *d = ctx;
    memcpy(d->a->eps, d->noise, sizeof(float) * (size_t)d->c->T * d->B * d->c->z);
    const double bound = draw_forward(d->a, d->p, d->c, d->x, d->B, NULL, NULL);
    block_zero(d->grads);
    draw_backward(d->g, d->a, d->p, d->c, d->x, d->B);
    return bound;
}

static void check_fixture(const char *name) {
    char path[512];
    SafetensorsFile f;
    if (fixture_load(&f, path, sizeof path, name)) return;
    DrawConfig c;
    int B = 0;
    memset(&c, 0, sizeof c);
    FixtureTraining tr;
    if (fixture_meta_int(&f, "W", &c.W) || fixture_meta_int(&f, "H", &c.H) ||
        fixture_meta_int(&f, "T", &c.T) || fixture_meta_int(&f, "read_n", &c.read_n) ||
        fixture_meta_int(&f, "write_n", &c.write_n) || fixture_meta_int(&f, "enc", &c.enc) ||
        fixture_meta_int(&f, "dec", &c.dec) || fixture_meta_int(&f, "z", &c.z) ||
        fixture_meta_int(&f, "attention", &c.attention) || fixture_meta_int(&f, "B", &B) ||
        fixture_training(&f, &tr)) {
        safetensors_free(&f);
        return;
    }
    // Fixtures from before peepholes existed carry no such field: none.
    if (safetensors_meta(&f, "peepholes")) fixture_meta_int(&f, "peepholes", &c.peepholes);
    Error err = {0};
    EXPECT(draw_config_check(&c, &err) == 0, "%s: %s", path, err.msg);

    Block params = {0}, grads = {0};
    DrawParams p, g;
    draw_layout(&params, &p, &c);
    draw_layout(&grads, &g, &c);
    block_alloc(&params), block_alloc(&grads);
    // Every parameter of the Block comes from the fixture, and the fixture has no others.
    int loaded = fixture_read_params(&params, &f, path);

    const int HW = c.W * c.H;
    const float *x = fixture_tensor(&f, "input/x", (size_t)B * HW);
    const float *noise = fixture_tensor(&f, "input/eps", (size_t)c.T * B * c.z);
    const float *canvas = fixture_tensor(&f, "output/canvas", (size_t)c.T * B * HW);
    const float *recon = fixture_tensor(&f, "output/recon", (size_t)B);
    const float *kl = fixture_tensor(&f, "output/kl", (size_t)B);
    const float *loss = fixture_tensor(&f, "output/loss", 1);
    const float *curve = fixture_tensor(&f, "train/loss", (size_t)tr.steps);
    if (!loaded || !x || !noise || !canvas || !recon || !kl || !loss || !curve) goto done;

    DrawActs a;
    draw_acts_alloc(&a, &c, B);
    // The reference's forward and backward on its batch and noise, then its five Adam steps
    // on the same.
    DrawStep step = {&a, &p, &g, &c, &grads, x, noise, B};
    float bound = (float)draw_step(&step);
    fixture_compare("forward", "canvas", a.canvas, canvas, (size_t)c.T * B * HW, FWD_ATOL,
                    FWD_RTOL);
    fixture_compare("forward", "recon", a.recon, recon, (size_t)B, FWD_ATOL, FWD_RTOL);
    fixture_compare("forward", "kl", a.kl, kl, (size_t)B, FWD_ATOL, FWD_RTOL);
    fixture_compare("forward", "loss", &bound, loss, 1, FWD_ATOL, FWD_RTOL);
    fixture_compare_grads(&grads, &f, GRAD_ATOL_REL, GRAD_RTOL);
    fixture_train_curve(&params, &grads, &tr, draw_step, &step, curve, CURVE_RTOL, path);
    draw_acts_free(&a);
done:
    block_free(&params), block_free(&grads);
    safetensors_free(&f);
}

static void test_parity_draw_attention(void) { check_fixture("draw_attention.safetensors"); }
static void test_parity_draw_plain(void) { check_fixture("draw_plain.safetensors"); }
static void test_parity_draw_peepholes(void) { check_fixture("draw_peepholes.safetensors"); }

// The comparison itself must be able to fail: a perturbed gradient is caught and named.
static void test_parity_compare_catches_error(void) {
    float want[4] = {1.0f, -2.0f, 3.0f, 1e-3f}, got[4];
    memcpy(got, want, sizeof got);
    got[2] *= 1.01f;
    EXPECT(!fixture_compare_report("self-test", "perturbed", got, want, 4, 1e-5, GRAD_RTOL, 0),
           "a 1%% error passed a %.0e rtol", GRAD_RTOL);
    EXPECT(fixture_compare_report("self-test", "exact", want, want, 4, 0.0, GRAD_RTOL, 0),
           "equal arrays failed");
}

int main(void) {
    RUN(test_parity_compare_catches_error);
    RUN(test_parity_draw_attention);
    RUN(test_parity_draw_plain);
    RUN(test_parity_draw_peepholes);
    return test_summary();
}
