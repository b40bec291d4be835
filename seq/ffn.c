// ffn.c: see ffn.h. The products are seq/linear's (gemm over all N rows).
#include "seq/ffn.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "seq/linear.h"

int ffn_activation_parse(const char *name, FfnActivation *act) {
    if (name && strcmp(name, "relu") == 0) return *act = FFN_RELU, 0;
    if (name && strcmp(name, "gelu") == 0) return *act = FFN_GELU, 0;
    return -1;
}

const char *ffn_activation_name(FfnActivation act) {
    return act == FFN_RELU ? "relu" : act == FFN_GELU ? "gelu" : "unknown";
}

static float gelu(float x) { return 0.5f * x * (1.0f + erff(x * (float)M_SQRT1_2)); }

// d gelu / dx = Phi(x) + x phi(x)
static float gelu_grad(float x) {
    float cdf = 0.5f * (1.0f + erff(x * (float)M_SQRT1_2));
    float pdf = expf(-0.5f * x * x) * (float)(0.5 * M_2_SQRTPI * M_SQRT1_2);
    return cdf + x * pdf;
}

static void activate(float *hidden, const float *pre, const float *mask, FfnActivation act,
                     size_t n) {
    for (size_t i = 0; i < n; i++) {
        float h = act == FFN_GELU ? gelu(pre[i]) : (pre[i] > 0.0f ? pre[i] : 0.0f);
        hidden[i] = mask ? h * mask[i] : h;
    }
}

// dh (n) becomes d loss / d pre from d loss / d hidden.
static void activate_backward(float *dh, const float *pre, const float *mask, FfnActivation act,
                              size_t n) {
    for (size_t i = 0; i < n; i++) {
        float g = act == FFN_GELU ? gelu_grad(pre[i]) : (pre[i] > 0.0f ? 1.0f : 0.0f);
        dh[i] *= mask ? g * mask[i] : g;
    }
}

void ffn_forward(float *out, float *pre, float *hidden, const float *inp, const FfnParams *p,
                 const float *mask, FfnActivation act, int N, int d, int F) {
    linear_forward(pre, inp, p->W1, p->b1, N, d, F);
    activate(hidden, pre, mask, act, (size_t)N * F);
    linear_forward(out, hidden, p->W2, p->b2, N, F, d);
}

void ffn_backward(float *dinp, FfnParams *dp, float *dhidden, const float *dout, const float *inp,
                  const float *pre, const float *hidden, const FfnParams *p, const float *mask,
                  FfnActivation act, int N, int d, int F) {
    size_t nf = (size_t)N * F;
    memset(dhidden, 0, nf * sizeof *dhidden);
    linear_backward(dhidden, dp->W2, dp->b2, dout, hidden, p->W2, N, F, d);
    activate_backward(dhidden, pre, mask, act, nf);
    linear_backward(dinp, dp->W1, dp->b1, dhidden, inp, p->W1, N, d, F);
}
