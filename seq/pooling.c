// pooling.c: sequence poolings (seq/pooling.h).
#include "seq/pooling.h"

#include <math.h>
#include <string.h>

#include "core/check.h"

static int steps_of(const int *lengths, int b, int T) {
    if (!lengths) return T;
    int n = lengths[b];
    CHECK(n >= 0 && n <= T, "length %d of %d steps", n, T);
    return n;
}

void pool_keras_attention_forward(float *out, float *alpha, float *score, const float *h,
                                  const float *w, const float *b, const int *lengths, int B,
                                  int T, int D) {
    for (int i = 0; i < B; i++) {
        int n = steps_of(lengths, i, T);
        const float *hb = h + (size_t)i * T * D;
        float *a = alpha + (size_t)i * T, *e = score + (size_t)i * T, *o = out + (size_t)i * D;
        for (int t = 0; t < T; t++) {
            const float *ht = hb + (size_t)t * D;
            float z = b[t];
            for (int d = 0; d < D; d++) z += ht[d] * w[d];
            e[t] = tanhf(z);
        }
        // e is in [-1, 1]: no max subtraction is needed, but it keeps the form stable.
        float mx = -2.0f, sum = 0.0f;
        for (int t = 0; t < n; t++) mx = e[t] > mx ? e[t] : mx;
        for (int t = 0; t < T; t++) {
            a[t] = t < n ? expf(e[t] - mx) : 0.0f;
            sum += a[t];
        }
        for (int t = 0; t < n; t++) a[t] /= sum;
        memset(o, 0, (size_t)D * sizeof *o);
        for (int t = 0; t < n; t++) {
            const float *ht = hb + (size_t)t * D;
            for (int d = 0; d < D; d++) o[d] += a[t] * ht[d];
        }
    }
}

void pool_keras_attention_backward(float *dh, float *dw, float *db, const float *dout,
                                   const float *dalpha, const float *alpha, const float *score,
                                   const float *h, const float *w, const int *lengths, int B,
                                   int T, int D) {
    for (int i = 0; i < B; i++) {
        int n = steps_of(lengths, i, T);
        const float *hb = h + (size_t)i * T * D, *g = dout + (size_t)i * D;
        const float *a = alpha + (size_t)i * T, *e = score + (size_t)i * T;
        float *dhb = dh ? dh + (size_t)i * T * D : NULL;
        float da[n > 0 ? n : 1];
        float dot = 0.0f;
        for (int t = 0; t < n; t++) {
            const float *ht = hb + (size_t)t * D;
            float s = dalpha ? dalpha[(size_t)i * T + t] : 0.0f;
            for (int d = 0; d < D; d++) s += g[d] * ht[d];
            da[t] = s;
            dot += a[t] * s;
        }
        for (int t = 0; t < n; t++) {
            const float *ht = hb + (size_t)t * D;
            float dz = a[t] * (da[t] - dot) * (1.0f - e[t] * e[t]);
            if (db) db[t] += dz;
            if (dw)
                for (int d = 0; d < D; d++) dw[d] += dz * ht[d];
            if (dhb) {
                float *dht = dhb + (size_t)t * D;
                for (int d = 0; d < D; d++) dht[d] += a[t] * g[d] + dz * w[d];
            }
        }
    }
}

void pool_mean_forward(float *out, const float *h, const int *lengths, int B, int T, int D) {
    for (int i = 0; i < B; i++) {
        int n = steps_of(lengths, i, T);
        float *o = out + (size_t)i * D;
        memset(o, 0, (size_t)D * sizeof *o);
        if (n == 0) continue;
        for (int t = 0; t < n; t++) {
            const float *ht = h + ((size_t)i * T + t) * D;
            for (int d = 0; d < D; d++) o[d] += ht[d];
        }
        float inv = 1.0f / (float)n;
        for (int d = 0; d < D; d++) o[d] *= inv;
    }
}

void pool_mean_backward(float *dh, const float *dout, const int *lengths, int B, int T, int D) {
    for (int i = 0; i < B; i++) {
        int n = steps_of(lengths, i, T);
        if (n == 0) continue;
        float inv = 1.0f / (float)n;
        const float *g = dout + (size_t)i * D;
        for (int t = 0; t < n; t++) {
            float *dht = dh + ((size_t)i * T + t) * D;
            for (int d = 0; d < D; d++) dht[d] += g[d] * inv;
        }
    }
}

void pool_last_forward(float *out, const float *h, const int *lengths, int B, int T, int D,
                       int D_fwd) {
    CHECK(D_fwd >= 0 && D_fwd <= D);
    for (int i = 0; i < B; i++) {
        int n = steps_of(lengths, i, T);
        float *o = out + (size_t)i * D;
        if (n == 0) {
            memset(o, 0, (size_t)D * sizeof *o);
            continue;
        }
        const float *last = h + ((size_t)i * T + n - 1) * D, *first = h + (size_t)i * T * D;
        for (int d = 0; d < D; d++) o[d] = d < D_fwd ? last[d] : first[d];
    }
}

void pool_last_backward(float *dh, const float *dout, const int *lengths, int B, int T, int D,
                        int D_fwd) {
    for (int i = 0; i < B; i++) {
        int n = steps_of(lengths, i, T);
        if (n == 0) continue;
        float *last = dh + ((size_t)i * T + n - 1) * D, *first = dh + (size_t)i * T * D;
        const float *g = dout + (size_t)i * D;
        for (int d = 0; d < D; d++) (d < D_fwd ? last : first)[d] += g[d];
    }
}
