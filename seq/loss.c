#include "seq/loss.h"

#include <math.h>

#include "core/activations.h"
#include "core/check.h"

double crossentropy_forward(float *losses, float *probs, const float *logits, const int *targets,
                            int N, int V) {
    CHECK(N >= 0 && V > 0, "N %d V %d", N, V);
    double total = 0.0;
    for (int n = 0; n < N; n++) {
        const float *restrict z = logits + (size_t)n * V;
        float *restrict p = probs + (size_t)n * V;
        int t = targets[n];
        CHECK(t >= -1 && t < V, "target %d at row %d, V %d", t, n, V);
        float mx = z[0];
        for (int i = 1; i < V; i++) mx = z[i] > mx ? z[i] : mx;
        for (int i = 0; i < V; i++) p[i] = expf(z[i] - mx);
        // The sum in double with 8 partial sums, which vectorise (one running sum was a
        // chain of dependent additions, most of this function's time on a 10,000-word
        // vocabulary); the order of the additions is all that changes.
        double acc[8] = {0};
        int i = 0;
        for (; i + 8 <= V; i += 8)
            for (int j = 0; j < 8; j++) acc[j] += (double)p[i + j];
        double sum = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
        for (; i < V; i++) sum += p[i];
        float inv = (float)(1.0 / sum);
        for (int i = 0; i < V; i++) p[i] *= inv;
        // -log softmax[t] = log(sum exp(z - mx)) - (z[t] - mx), exact even when p[t] underflows.
        double loss = t < 0 ? 0.0 : log(sum) - ((double)z[t] - mx);
        losses[n] = (float)loss;
        total += loss;
    }
    return total;
}

void crossentropy_backward(float *dlogits, const float *dlosses, const float *probs,
                           const int *targets, int N, int V) {
    for (int n = 0; n < N; n++) {
        int t = targets[n];
        if (t < 0) continue;
        float dl = dlosses ? dlosses[n] : 1.0f;
        const float *restrict p = probs + (size_t)n * V;
        float *restrict d = dlogits + (size_t)n * V;
        for (int i = 0; i < V; i++) d[i] += dl * p[i];
        d[t] -= dl;
    }
}

double crossentropy_smoothed_forward(float *losses, float *probs, const float *logits,
                                     const int *targets, int N, int V, float eps) {
    CHECK(eps >= 0.0f && eps < 1.0f, "label smoothing %g not in [0, 1)", (double)eps);
    double total = crossentropy_forward(losses, probs, logits, targets, N, V);
    if (eps == 0.0f) return total;
    total = 0.0;
    for (int n = 0; n < N; n++) {
        if (targets[n] < 0) continue;
        // -log p_v = lse - z_v: the mean over v is lse - mean_v z_v (lse in double)
        const float *z = logits + (size_t)n * V;
        double mx = z[0], zsum = 0.0, esum = 0.0;
        for (int v = 1; v < V; v++) mx = z[v] > mx ? z[v] : mx;
        for (int v = 0; v < V; v++) zsum += z[v], esum += exp((double)z[v] - mx);
        const double lse = mx + log(esum), nll = lse - (double)z[targets[n]];
        const double loss = (1.0 - eps) * nll + eps * (lse - zsum / V);
        losses[n] = (float)loss;
        total += loss;
    }
    return total;
}

void crossentropy_smoothed_backward(float *dlogits, const float *dlosses, const float *probs,
                                    const int *targets, int N, int V, float eps) {
    crossentropy_backward(dlogits, dlosses, probs, targets, N, V);
    if (eps == 0.0f) return;
    for (int n = 0; n < N; n++) {
        const int t = targets[n];
        if (t < 0) continue;
        // p - q = (p - onehot) + eps (onehot - 1 / V)
        const float dl = dlosses ? dlosses[n] : 1.0f, u = eps / (float)V;
        float *restrict d = dlogits + (size_t)n * V;
        for (int v = 0; v < V; v++) d[v] -= dl * u;
        d[t] += dl * eps;
    }
}

double bce_logits_forward(float *loss, const float *logits, const float *targets, size_t n) {
    double total = 0.0;
    for (size_t i = 0; i < n; i++) {
        float x = logits[i];
        float l = fmaxf(x, 0.0f) - x * targets[i] + log1pf(expf(-fabsf(x)));
        if (loss) loss[i] = l;
        total += l;
    }
    return total;
}

void bce_logits_backward(float *dlogits, const float *dloss, const float *logits,
                         const float *targets, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float dl = dloss ? dloss[i] : 1.0f;
        dlogits[i] += dl * (sigmoidf_(logits[i]) - targets[i]);
    }
}
