// cnn_check.c: see cnn_check.h.
#include "tests/support/cnn_check.h"

#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "tests/support/gradcheck.h"
#include "tests/support/test.h"

void cnn_case_init(CnnCase *c, const CnnConfig *cfg, int B, int S, Rng *rng) {
    memset(c, 0, sizeof *c);
    c->cfg = cfg, c->B = B, c->S = S;
    cnn_register(&c->p, &c->params, "enc", cfg);
    cnn_register(&c->g, &c->grads, "enc", cfg);
    cnn_register(&c->g_ref, &c->grads_ref, "enc", cfg);
    block_alloc(&c->params), block_alloc(&c->grads), block_alloc(&c->grads_ref);
    cnn_init(&c->p, rng);
    for (int i = 0; i < cfg->n_layers; i++)
        fill_uniform(c->p.bias[i], cfg->channels[i], -0.1f, 0.2f, rng);
    const int L = cnn_grid_size(cfg, S) * cnn_grid_size(cfg, S), D = cnn_dim(cfg);
    c->ni = (size_t)B * cfg->in_channels * S * S, c->na = (size_t)B * L * D;
    const size_t ni = c->ni, na = c->na;
    c->img = xmalloc(ni * 4), c->dannot = xmalloc(na * 4), c->annot = xmalloc(na * 4);
    c->annot_ref = xmalloc(na * 4), c->dimg = xmalloc(ni * 4), c->dimg_ref = xmalloc(ni * 4);
    c->g0 = xmalloc(c->grads.numel * 4), c->dimg0 = xmalloc(ni * 4);
    fill_uniform(c->img, ni, -1, 1, rng);
    fill_uniform(c->dannot, na, -1, 1, rng);
    fill_uniform(c->g0, c->grads.numel, -1, 1, rng);
    fill_uniform(c->dimg0, ni, -1, 1, rng);
}

void cnn_case_reference_start(CnnCase *c) {
    memcpy(c->grads_ref.data, c->g0, c->grads.numel * 4);
    memcpy(c->dimg_ref, c->dimg0, c->ni * 4);
}

void cnn_case_expect_mixed(const CnnCase *c) {
    int positive = 0;
    for (size_t k = 0; k < c->na; k++) positive += c->annot_ref[k] > 0.0f;
    EXPECT(positive > (int)c->na / 4 && positive < (int)c->na,
           "%d of %zu annotations positive: test too weak", positive, c->na);
}

static void expect_close(const float *got, const float *want, size_t n, float tol,
                         const char *what, int group) {
    float scale, d = test_max_abs_diff(got, want, n, &scale);
    EXPECT(d <= tol * (1 + scale), "group %d: %s off by %g (scale %g)", group, what, d, scale);
}

void cnn_case_check(CnnCase *c, CnnWorkspace *ws, float fill, float tol, int group, Rng *rng) {
    memcpy(c->grads.data, c->g0, c->grads.numel * 4);
    memcpy(c->dimg, c->dimg0, c->ni * 4);
    fill_uniform(c->annot, c->na, -fill, fill, rng);
    cnn_forward(c->annot, ws, c->img, &c->p, c->B);
    for (int k = 0; k < 2; k++) cnn_backward(&c->g, c->dimg, c->dannot, ws, c->img, &c->p, c->B);
    expect_close(c->annot, c->annot_ref, c->na, tol, "annotations", group);
    for (int i = 0; i < c->grads.count; i++) {
        const BlockTensor *t = &c->grads.tensors[i];
        expect_close(c->grads.data + t->offset, c->grads_ref.data + t->offset, t->numel, tol,
                     t->name, group);
    }
    expect_close(c->dimg, c->dimg_ref, c->ni, tol, "image gradient", group);
}

void cnn_case_free(CnnCase *c) {
    free(c->img), free(c->dannot), free(c->annot), free(c->annot_ref), free(c->dimg);
    free(c->dimg_ref), free(c->g0), free(c->dimg0);
    block_free(&c->params), block_free(&c->grads), block_free(&c->grads_ref);
}
