// Tests of models/convnet (the convolutional baseline of the cluttered-MNIST table): a
// whole-model gradient check by central differences, and the batch over two workers
// (models/classifier.h) against one.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/block.h"
#include "core/check.h"
#include "core/rng.h"
#include "models/classifier.h"
#include "models/convnet.h"
#include "tests/support/gradcheck.h"
#include "tests/support/test.h"

static ConvnetConfig tiny(void) {
    return (ConvnetConfig){.S = 8, .layers = 2, .channels = {2, 3}, .fc = 5, .classes = 3};
}

typedef struct {
    ConvnetConfig c;
    ConvnetParams p, g, gt;
    Block params, grads, grads_tmp;
    ConvnetActs acts;
    float *x;
    int labels[4];
    int B;
    double offset;
} Model;

static void model_make(Model *m, int B, uint64_t seed) {
    memset(m, 0, sizeof *m);
    m->c = tiny();
    m->B = B;
    convnet_layout(&m->params, &m->p, &m->c);
    convnet_layout(&m->grads, &m->g, &m->c);
    convnet_layout(&m->grads_tmp, &m->gt, &m->c);
    block_alloc(&m->params), block_alloc(&m->grads), block_alloc(&m->grads_tmp);
    Rng rng;
    rng_seed(&rng, seed);
    convnet_init(&m->p, &m->c, &rng);
    for (int i = 0; i < m->params.count; i++) {
        const BlockTensor *t = &m->params.tensors[i];
        if (t->ndim == 1)
            for (size_t k = 0; k < t->numel; k++) m->params.data[t->offset + k] += 0.1f * (2 * rng_uniform(&rng) - 1);
    }
    convnet_acts_alloc(&m->acts, &m->c, B);
    m->x = xcalloc((size_t)B * 64, sizeof(float));
    fill_uniform(m->x, (size_t)B * 64, -1.0f, 1.0f, &rng);
    for (int b = 0; b < B; b++) m->labels[b] = (int)rng_below(&rng, 3);
}

static void model_free(Model *m) {
    block_free(&m->params), block_free(&m->grads), block_free(&m->grads_tmp);
    convnet_acts_free(&m->acts);
    free(m->x);
}

static void gc_forward(void *vm, float *out) {
    Model *m = vm;
    out[0] = (float)(convnet_forward(&m->acts, &m->p, &m->c, m->x, m->labels, m->B, NULL) - m->offset);
}

static void gc_backward(void *vm, const float *dout) {
    Model *m = vm;
    block_zero(&m->grads_tmp);
    convnet_backward(&m->gt, &m->acts, &m->p, &m->c, m->x, m->labels, m->B);
    for (size_t i = 0; i < m->grads.numel; i++) m->grads.data[i] += dout[0] * m->grads_tmp.data[i];
}

static void test_gradcheck(void) {
    Model m;
    model_make(&m, 3, 41);
    Rng rng;
    rng_seed(&rng, 9);
    m.offset = convnet_forward(&m.acts, &m.p, &m.c, m.x, m.labels, m.B, NULL);
    GradcheckInput *in = gradcheck_block_inputs(&m.params, &m.grads);
    // ReLU and max-pool kinks: eps 1e-3 keeps most perturbations on one side of them.
    GradcheckOp op = {.ctx = &m, .forward = gc_forward, .backward = gc_backward, .n_out = 1,
                      .inputs = in, .n_inputs = m.params.count, .eps = 1e-3, .atol = 2e-4,
                      .rtol = 2e-2};
    EXPECT(gradcheck("convnet", &op, &rng) == 0, "see the gradcheck lines above");
    for (int i = 0; i < m.params.count; i++) {
        const BlockTensor *t = &m.params.tensors[i];
        double s = 0.0;
        for (size_t k = 0; k < t->numel; k++) s += fabs(m.grads.data[t->offset + k]);
        EXPECT(s > 0.0, "no gradient reaches %s", t->name);
    }
    free(in);
    model_free(&m);
}

static void test_workers_match_single(void) {
    Model m;
    model_make(&m, 4, 43);
    ClassifierConfig cc = {.kind = CLASSIFIER_CNN, .cnn = m.c};
    ClassifierParams cp = {.cnn = m.p};
    ClassifierWorker one[1], two[2];
    classifier_workers_alloc(one, 1, &cc, 4);
    classifier_workers_alloc(two, 2, &cc, 4);
    Block g1 = {0}, g2 = {0};
    ConvnetParams v;
    convnet_layout(&g1, &v, &m.c), convnet_layout(&g2, &v, &m.c);
    block_alloc(&g1), block_alloc(&g2);
    int c1, c2;
    double l1 = classifier_forward_parallel(one, 1, &cp, &cc, m.x, m.labels, 4, &g1, &c1);
    double l2 = classifier_forward_parallel(two, 2, &cp, &cc, m.x, m.labels, 4, &g2, &c2);
    EXPECT_NEAR(l2, l1, 1e-6, 1e-6);
    EXPECT(c1 == c2);
    double worst = 0.0;
    for (size_t i = 0; i < g1.numel; i++) worst = fmax(worst, fabs(g1.data[i] - g2.data[i]));
    EXPECT(worst < 1e-6, "gradients differ by %g", worst);
    block_free(&g1), block_free(&g2);
    classifier_workers_free(one, 1), classifier_workers_free(two, 2);
    model_free(&m);
}

static void test_config_check(void) {
    Error err = {{0}};
    ConvnetConfig c = convnet_config_default(100);
    EXPECT(convnet_config_check(&c, &err) == 0, "%s", err.msg);
    EXPECT(convnet_feature_size(&c) == 25 * 25 * 32, "features %d", convnet_feature_size(&c));
    c.S = 3;
    EXPECT(convnet_config_check(&c, &err) != 0, "side 3 with 2 pooling layers accepted");
}

int main(void) {
    RUN(test_gradcheck);
    RUN(test_workers_match_single);
    RUN(test_config_check);
    return test_summary();
}
