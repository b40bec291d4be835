// fixture.c: see fixture.h.
#include "tests/support/fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tests/support/test.h"

static int verbose(void) {
    const char *v = getenv("PARITY_VERBOSE");
    return v && v[0] == '1';
}

void fixture_path(char *path, size_t cap, const char *name) {
    const char *dir = getenv("ATTEND_FIXTURES");
    snprintf(path, cap, "%s/%s", dir && dir[0] ? dir : "tests/fixtures", name);
}

int fixture_load(SafetensorsFile *f, char *path, size_t cap, const char *name) {
    fixture_path(path, cap, name);
    Error err = {0};
    if (safetensors_load(f, path, &err)) {
        test_fail_(__FILE__, __LINE__, "%s (regenerate with `make fixtures`)", err.msg);
        return -1;
    }
    return 0;
}

const float *fixture_tensor(const SafetensorsFile *f, const char *name, size_t n) {
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
    if (t->numel && !t->data) {
        test_fail_(__FILE__, __LINE__, "fixture tensor %s is not a float tensor", name);
        return NULL;
    }
    return t->data;
}

int *fixture_int_tensor(const SafetensorsFile *f, const char *name, size_t n) {
    const float *v = fixture_tensor(f, name, n);
    if (!v) return NULL;
    int *out = malloc(n * sizeof *out);
    for (size_t i = 0; i < n; i++) out[i] = (int)v[i];
    return out;
}

static const char *meta(const SafetensorsFile *f, const char *key) {
    const char *v = safetensors_meta(f, key);
    if (!v) test_fail_(__FILE__, __LINE__, "fixture metadata has no %s", key);
    return v;
}

int fixture_meta_int(const SafetensorsFile *f, const char *key, int *out) {
    const char *v = meta(f, key);
    if (!v) return -1;
    *out = atoi(v);
    return 0;
}

int fixture_meta_double(const SafetensorsFile *f, const char *key, double *out) {
    const char *v = meta(f, key);
    if (!v) return -1;
    *out = atof(v);
    return 0;
}

int fixture_training(const SafetensorsFile *f, FixtureTraining *out) {
    memset(out, 0, sizeof *out);
    return fixture_meta_double(f, "adam.lr", &out->lr) ||
                   fixture_meta_double(f, "adam.beta1", &out->beta1) ||
                   fixture_meta_double(f, "adam.beta2", &out->beta2) ||
                   fixture_meta_double(f, "adam.eps", &out->eps) ||
                   fixture_meta_double(f, "clip", &out->clip) ||
                   fixture_meta_int(f, "steps", &out->steps)
               ? -1
               : 0;
}

AdamConfig fixture_adam(const FixtureTraining *t) {
    AdamConfig ac = adam_defaults((float)t->lr);
    ac.beta1 = (float)t->beta1, ac.beta2 = (float)t->beta2, ac.eps = (float)t->eps;
    return ac;
}

int fixture_read_params(Block *params, const SafetensorsFile *f, const char *path) {
    Error err = {0};
    int loaded = safetensors_read_block(params, "param/", f, path, &err) == 0;
    EXPECT(loaded, "%s", err.msg);
    int n_param = 0;
    for (int i = 0; i < f->count; i++) n_param += strncmp(f->tensors[i].name, "param/", 6) == 0;
    EXPECT(n_param == params->count, "%s: %d param/ tensors, the model has %d", path, n_param,
           params->count);
    return loaded;
}

int fixture_compare_report(const char *what, const char *name, const float *got,
                           const float *want, size_t n, double atol, double rtol, int report) {
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
    if (finite && worst_ratio <= 1.0) return 1;
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

int fixture_compare(const char *what, const char *name, const float *got, const float *want,
                    size_t n, double atol, double rtol) {
    return fixture_compare_report(what, name, got, want, n, atol, rtol, 1);
}

static double max_abs(const float *x, size_t n) {
    double m = 0.0;
    for (size_t i = 0; i < n; i++)
        if (fabs(x[i]) > m) m = fabs(x[i]);
    return m;
}

void fixture_compare_grads(const Block *grads, const SafetensorsFile *f, double atol_rel,
                           double rtol) {
    for (int i = 0; i < grads->count; i++) {
        const BlockTensor *bt = &grads->tensors[i];
        char key[BLOCK_NAME_LEN + 8];
        snprintf(key, sizeof key, "grad/%s", bt->name);
        const float *want = fixture_tensor(f, key, bt->numel);
        if (!want) continue;
        fixture_compare("gradient", bt->name, grads->data + bt->offset, want, bt->numel,
                        atol_rel * max_abs(want, bt->numel), rtol);
    }
}

int fixture_compare_grads_model(const char *what, const Block *grads, const SafetensorsFile *f,
                                double atol_rel, double rtol, int report) {
    double mx = 0;
    int ok = 1;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < grads->count; i++) {
            const BlockTensor *bt = &grads->tensors[i];
            char key[BLOCK_NAME_LEN + 8];
            snprintf(key, sizeof key, "grad/%s", bt->name);
            const float *want = fixture_tensor(f, key, bt->numel);
            if (!want) {
                ok = 0;
                continue;
            }
            if (pass == 0)
                mx = fmax(mx, max_abs(want, bt->numel));
            else
                ok &= fixture_compare_report(what, key, grads->data + bt->offset, want,
                                             bt->numel, atol_rel * mx, rtol, report);
        }
    return ok;
}

void fixture_compare_curve(const float *got, const float *want, int steps, double rtol,
                           const char *path) {
    fixture_compare("train", "loss curve", got, want, (size_t)steps, 0.0, rtol);
    EXPECT(want[steps - 1] < want[0] - 1e-3 * fabs(want[0]), "%s: reference curve is flat",
           path);
}

void fixture_train_curve(Block *params, Block *grads, const FixtureTraining *tr,
                         double (*loss_and_grads)(void *ctx), void *ctx, const float *want,
                         double rtol, const char *path) {
    const AdamConfig ac = fixture_adam(tr);
    float *got = calloc((size_t)tr->steps, sizeof(float));
    float *m1 = calloc(params->numel, sizeof(float)), *m2 = calloc(params->numel, sizeof(float));
    for (int s = 1; s <= tr->steps; s++) {
        got[s - 1] = (float)loss_and_grads(ctx);
        clip_global_norm(grads->data, grads->numel, (float)tr->clip);
        adam_update(params->data, grads->data, m1, m2, params->numel, &ac, s, (float)tr->lr);
    }
    fixture_compare_curve(got, want, tr->steps, rtol, path);
    free(got), free(m1), free(m2);
}

int fixture_compare_words(const char *path, int row, const int *got, int got_len,
                          const float *want, int want_len, int report) {
    int same = got_len == want_len;
    for (int t = 0; same && t < got_len; t++) same = got[t] == (int)want[t];
    if (!same && report) {
        fprintf(stderr, "  mismatch: %s greedy row %d:", path, row);
        for (int t = 0; t < got_len; t++) fprintf(stderr, " %d", got[t]);
        fprintf(stderr, " (%d words), PyTorch:", got_len);
        for (int t = 0; t < want_len; t++) fprintf(stderr, " %d", (int)want[t]);
        fprintf(stderr, " (%d words)\n", want_len);
    }
    if (report) EXPECT(same, "%s: greedy words of row %d differ from PyTorch", path, row);
    return same;
}

int fixture_pairs_read(FixturePairs *p, const SafetensorsFile *f, int B, int S, int max_len) {
    const size_t b = (size_t)B;
    p->src = fixture_int_tensor(f, "input/src", b * S);
    p->src_len = fixture_int_tensor(f, "input/src_len", b);
    p->words = fixture_int_tensor(f, "input/words", b * max_len);
    p->lens = fixture_int_tensor(f, "input/lens", b);
    p->dsrc = fixture_int_tensor(f, "input/decode_src", b * S);
    p->dsrc_len = fixture_int_tensor(f, "input/decode_src_len", b);
    return p->src && p->src_len && p->words && p->lens && p->dsrc && p->dsrc_len ? 0 : -1;
}

void fixture_pairs_free(FixturePairs *p) {
    free(p->src), free(p->src_len), free(p->words), free(p->lens);
    free(p->dsrc), free(p->dsrc_len);
    memset(p, 0, sizeof *p);
}

void fixture_check(const FixtureSuite *s, const char *name) {
    void *x = calloc(1, s->size);
    if (s->load(x, name) == 0) EXPECT(s->compare(x, 1), "%s differs from PyTorch", name);
    s->release(x);
    free(x);
}

void fixture_check_perturbed(const FixtureSuite *s, const FixturePerturbation *p, size_t n) {
    int (*moved)(void *, int) = s->compare_moved ? s->compare_moved : s->compare;
    void *x = calloc(1, s->size);
    for (size_t i = 0; i < n; i++) {
        if (s->load(x, p[i].fixture) == 0) {
            EXPECT(s->compare(x, 0), "%s: unperturbed must match", p[i].fixture);
            Block *params = s->params(x);
            const BlockTensor *t = block_find(params, p[i].tensor);
            EXPECT(t != NULL, "no %s", p[i].tensor);
            if (t) {
                params->data[t->offset + p[i].index] += 1e-3f;
                EXPECT(!moved(x, 0), "%s: %s[%zu] + 1e-3 still matches PyTorch", p[i].fixture,
                       p[i].tensor, p[i].index);
                if (s->also_moved) s->also_moved(x, &p[i], t);
            }
        }
        s->release(x);
    }
    free(x);
}
