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
#include "tests/support/test.h"

#define FWD_RTOL 1e-5
#define FWD_ATOL 1e-5
#define GRAD_RTOL 1e-4
#define GRAD_ATOL_REL 1e-6
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

static void check_fixture(const char *name) {
    char path[512];
    fixture_path(path, sizeof path, name);
    SafetensorsFile f;
    Error err = {0};
    if (safetensors_load(&f, path, &err)) {
        test_fail_(__FILE__, __LINE__, "%s (regenerate with `make fixtures`)", err.msg);
        return;
    }
    DrawConfig c;
    int B = 0;
    memset(&c, 0, sizeof c);
    if (meta_int(&f, "W", &c.W) || meta_int(&f, "H", &c.H) || meta_int(&f, "T", &c.T) ||
        meta_int(&f, "read_n", &c.read_n) || meta_int(&f, "write_n", &c.write_n) ||
        meta_int(&f, "enc", &c.enc) || meta_int(&f, "dec", &c.dec) || meta_int(&f, "z", &c.z) ||
        meta_int(&f, "attention", &c.attention) || meta_int(&f, "B", &B)) {
        safetensors_free(&f);
        return;
    }
    double lr, beta1, beta2, eps, clip;
    int steps;
    if (meta_double(&f, "adam.lr", &lr) || meta_double(&f, "adam.beta1", &beta1) ||
        meta_double(&f, "adam.beta2", &beta2) || meta_double(&f, "adam.eps", &eps) ||
        meta_double(&f, "clip", &clip) || meta_int(&f, "steps", &steps)) {
        safetensors_free(&f);
        return;
    }
    EXPECT(draw_config_check(&c, &err) == 0, "%s: %s", path, err.msg);

    Block params = {0}, grads = {0}, m1 = {0}, m2 = {0};
    DrawParams p, g, pm, pv;
    draw_layout(&params, &p, &c);
    draw_layout(&grads, &g, &c);
    draw_layout(&m1, &pm, &c);
    draw_layout(&m2, &pv, &c);
    block_alloc(&params), block_alloc(&grads), block_alloc(&m1), block_alloc(&m2);
    // Every parameter of the Block comes from the fixture, and the fixture has no others.
    int loaded = safetensors_read_block(&params, "param/", &f, path, &err) == 0;
    EXPECT(loaded, "%s", err.msg);
    int n_param = 0;
    for (int i = 0; i < f.count; i++) n_param += strncmp(f.tensors[i].name, "param/", 6) == 0;
    EXPECT(n_param == params.count, "%s: %d param/ tensors, the model has %d", path, n_param,
           params.count);

    const int HW = c.W * c.H;
    const float *x = tensor(&f, "input/x", (size_t)B * HW);
    const float *noise = tensor(&f, "input/eps", (size_t)c.T * B * c.z);
    const float *canvas = tensor(&f, "output/canvas", (size_t)c.T * B * HW);
    const float *recon = tensor(&f, "output/recon", (size_t)B);
    const float *kl = tensor(&f, "output/kl", (size_t)B);
    const float *loss = tensor(&f, "output/loss", 1);
    const float *curve = tensor(&f, "train/loss", (size_t)steps);
    if (!loaded || !x || !noise || !canvas || !recon || !kl || !loss || !curve) goto done;

    DrawActs a;
    draw_acts_alloc(&a, &c, B);
    memcpy(a.eps, noise, sizeof(float) * (size_t)c.T * B * c.z);
    double r_mean, k_mean;
    float bound = (float)draw_forward(&a, &p, &c, x, B, &r_mean, &k_mean);
    compare("forward", "canvas", a.canvas, canvas, (size_t)c.T * B * HW, FWD_ATOL, FWD_RTOL);
    compare("forward", "recon", a.recon, recon, (size_t)B, FWD_ATOL, FWD_RTOL);
    compare("forward", "kl", a.kl, kl, (size_t)B, FWD_ATOL, FWD_RTOL);
    compare("forward", "loss", &bound, loss, 1, FWD_ATOL, FWD_RTOL);

    block_zero(&grads);
    draw_backward(&g, &a, &p, &c, x, B);
    for (int i = 0; i < grads.count; i++) {
        const BlockTensor *bt = &grads.tensors[i];
        char key[BLOCK_NAME_LEN + 8];
        snprintf(key, sizeof key, "grad/%s", bt->name);
        const float *want = tensor(&f, key, bt->numel);
        if (!want) continue;
        compare("gradient", bt->name, grads.data + bt->offset, want, bt->numel,
                GRAD_ATOL_REL * max_abs(want, bt->numel), GRAD_RTOL);
    }

    // Five Adam steps on the same batch and noise, as the reference took them.
    AdamConfig ac = adam_defaults((float)lr);
    ac.beta1 = (float)beta1, ac.beta2 = (float)beta2, ac.eps = (float)eps;
    float *got = calloc((size_t)steps, sizeof(float));
    for (int s = 1; s <= steps; s++) {
        memcpy(a.eps, noise, sizeof(float) * (size_t)c.T * B * c.z);
        got[s - 1] = (float)draw_forward(&a, &p, &c, x, B, NULL, NULL);
        block_zero(&grads);
        draw_backward(&g, &a, &p, &c, x, B);
        clip_global_norm(grads.data, grads.numel, (float)clip);
        adam_update(params.data, grads.data, m1.data, m2.data, params.numel, &ac, s, (float)lr);
    }
    compare("train", "loss curve", got, curve, (size_t)steps, 0.0, CURVE_RTOL);
    // The curve must move, or the comparison above proves little.
    EXPECT(curve[steps - 1] < curve[0] - 1e-3 * fabs(curve[0]), "%s: reference curve is flat",
           path);
    free(got);
    draw_acts_free(&a);
done:
    block_free(&params), block_free(&grads), block_free(&m1), block_free(&m2);
    safetensors_free(&f);
}

static void test_parity_draw_attention(void) { check_fixture("draw_attention.safetensors"); }
static void test_parity_draw_plain(void) { check_fixture("draw_plain.safetensors"); }

// The comparison itself must be able to fail: a perturbed gradient is caught and named.
static void test_parity_compare_catches_error(void) {
    float want[4] = {1.0f, -2.0f, 3.0f, 1e-3f}, got[4];
    memcpy(got, want, sizeof got);
    got[2] *= 1.01f;
    EXPECT(!compare_("self-test", "perturbed", got, want, 4, 1e-5, GRAD_RTOL, 0),
           "a 1%% error passed a %.0e rtol", GRAD_RTOL);
    EXPECT(compare_("self-test", "exact", want, want, 4, 0.0, GRAD_RTOL, 0), "equal arrays failed");
}

int main(void) {
    RUN(test_parity_compare_catches_error);
    RUN(test_parity_draw_attention);
    RUN(test_parity_draw_plain);
    return test_summary();
}
