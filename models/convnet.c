#include "models/convnet.h"

#include <math.h>
#include <string.h>

#include "core/check.h"
#include "core/dims.h"
#include "seq/linear.h"
#include "seq/loss.h"

ConvnetConfig convnet_config_default(int S) {
    return (ConvnetConfig){.S = S, .layers = 2, .channels = {16, 32}, .fc = 256, .classes = 10};
}

int convnet_config_check(const ConvnetConfig *c, Error *err) {
    if (c->layers < 1 || c->layers > CNN_MAX_LAYERS)
        return error_set(err, "convolutional layers %d out of range [1, %d]", c->layers, CNN_MAX_LAYERS);
    if (c->S < (1 << c->layers) || c->S > 4096)
        return error_set(err, "image side %d too small for %d pooling layers", c->S, c->layers);
    for (int i = 0; i < c->layers; i++)
        if (c->channels[i] < 1 || c->channels[i] > 4096)
            return error_set(err, "channels %d of layer %d out of range", c->channels[i], i + 1);
    if (c->fc < 1 || c->fc > 65536) return error_set(err, "fc units %d out of range", c->fc);
    if (c->classes < 2 || c->classes > 65536) return error_set(err, "classes %d out of range", c->classes);
    return 0;
}

static CnnConfig cnn_of(const ConvnetConfig *c) {
    CnnConfig k;
    memset(&k, 0, sizeof k);
    k.in_channels = 1;
    k.n_layers = c->layers;
    for (int i = 0; i < c->layers; i++) k.channels[i] = c->channels[i];
    return k;
}

int convnet_feature_size(const ConvnetConfig *c) {
    int G = c->S >> c->layers;
    return G * G * c->channels[c->layers - 1];
}

void convnet_layout(Block *b, ConvnetParams *p, const ConvnetConfig *c) {
    memset(p, 0, sizeof *p);
    CnnConfig k = cnn_of(c);
    cnn_register(&p->cnn, b, "cnn", &k);
    block_add(b, &p->fc_W, "fc.W", 2, c->fc, convnet_feature_size(c));
    block_add(b, &p->fc_b, "fc.b", 1, c->fc);
    block_add(b, &p->out_W, "out.W", 2, c->classes, c->fc);
    block_add(b, &p->out_b, "out.b", 1, c->classes);
}

static void init_uniform(float *w, size_t n, int fan_in, Rng *rng) {
    float s = 1.0f / sqrtf((float)fan_in);
    for (size_t i = 0; i < n; i++) w[i] = s * (2.0f * rng_uniform(rng) - 1.0f);
}

void convnet_init(ConvnetParams *p, const ConvnetConfig *c, Rng *rng) {
    cnn_init(&p->cnn, rng);
    int F = convnet_feature_size(c);
    init_uniform(p->fc_W, (size_t)c->fc * F, F, rng);
    memset(p->fc_b, 0, sizeof(float) * c->fc);
    init_uniform(p->out_W, (size_t)c->classes * c->fc, c->fc, rng);
    memset(p->out_b, 0, sizeof(float) * c->classes);
}

int convnet_check_sizes(const ConvnetConfig *c, int B, Error *err) {
    const int64_t F = convnet_feature_size(c);
    DimTerm feat[] = {{B, "--batch"}, {F, "features"}};
    DimTerm fc[] = {{B, "--batch"}, {c->fc, "fully connected units"}};
    DimTerm fc_w[] = {{c->fc, "fully connected units"}, {F, "features"}};
    DimTerm out_w[] = {{c->classes, "classes"}, {c->fc, "fully connected units"}};
    if (dims_check(err, "the features", feat, DIMS_LEN(feat)) ||
        dims_check(err, "the fully connected layer", fc, DIMS_LEN(fc)) ||
        dims_check(err, "the fully connected weights", fc_w, DIMS_LEN(fc_w)) ||
        dims_check(err, "the output weights", out_w, DIMS_LEN(out_w)))
        return -1;
    CnnConfig kc = cnn_of(c);
    return cnn_check_sizes(&kc, c->S, CNN_GROUP, "the image side", err);
}

void convnet_acts_alloc(ConvnetActs *a, const ConvnetConfig *c, int B) {
    CHECK(B >= 1);
    memset(a, 0, sizeof *a);
    a->B = B;
    int F = convnet_feature_size(c);
    Block *k = &a->block;
    block_add(k, &a->feat, "feat", 2, B, F);
    block_add(k, &a->act, "act", 2, B, c->fc);
    block_add(k, &a->logits, "logits", 2, B, c->classes);
    block_add(k, &a->probs, "probs", 2, B, c->classes);
    block_add(k, &a->dlogits, "dlogits", 2, B, c->classes);
    block_add(k, &a->losses, "losses", 1, B);
    block_add(k, &a->dact, "dact", 2, B, c->fc);
    block_add(k, &a->dfeat, "dfeat", 2, B, F);
    block_alloc(k);
    CnnConfig kc = cnn_of(c);
    cnn_workspace_alloc(&a->ws, &kc, B, c->S);
}

void convnet_acts_free(ConvnetActs *a) {
    block_free(&a->block);
    cnn_workspace_free(&a->ws);
    memset(a, 0, sizeof *a);
}

double convnet_forward(ConvnetActs *a, const ConvnetParams *p, const ConvnetConfig *c,
                       const float *x, const int *labels, int B, int *correct) {
    CHECK(B >= 1 && B <= a->B, "B %d, room for %d", B, a->B);
    int F = convnet_feature_size(c);
    cnn_forward(a->feat, &a->ws, x, &p->cnn, B);
    linear_forward(a->act, a->feat, p->fc_W, p->fc_b, B, F, c->fc);
    for (int i = 0; i < B * c->fc; i++) a->act[i] = a->act[i] > 0.0f ? a->act[i] : 0.0f;
    linear_forward(a->logits, a->act, p->out_W, p->out_b, B, c->fc, c->classes);
    double total = crossentropy_forward(a->losses, a->probs, a->logits, labels, B, c->classes);
    if (correct) {
        int right = 0;
        for (int b = 0; b < B; b++) {
            const float *z = a->logits + (size_t)b * c->classes;
            int best = 0;
            for (int k = 1; k < c->classes; k++) best = z[k] > z[best] ? k : best;
            right += best == labels[b];
        }
        *correct = right;
    }
    return total / B;
}

void convnet_backward(ConvnetParams *g, ConvnetActs *a, const ConvnetParams *p,
                      const ConvnetConfig *c, const float *x, const int *labels, int B) {
    CHECK(B >= 1 && B <= a->B);
    int F = convnet_feature_size(c);
    memset(a->dlogits, 0, sizeof(float) * (size_t)B * c->classes);
    crossentropy_backward(a->dlogits, NULL, a->probs, labels, B, c->classes);
    for (int i = 0; i < B * c->classes; i++) a->dlogits[i] *= 1.0f / (float)B;
    memset(a->dact, 0, sizeof(float) * (size_t)B * c->fc);
    linear_backward(a->dact, g->out_W, g->out_b, a->dlogits, a->act, p->out_W, B, c->fc, c->classes);
    for (int i = 0; i < B * c->fc; i++)
        if (a->act[i] <= 0.0f) a->dact[i] = 0.0f;
    memset(a->dfeat, 0, sizeof(float) * (size_t)B * F);
    linear_backward(a->dfeat, g->fc_W, g->fc_b, a->dact, a->feat, p->fc_W, B, F, c->fc);
    cnn_backward(&g->cnn, NULL, a->dfeat, &a->ws, x, &p->cnn, B);
}
