// bow.c: the bag-of-words features (models/bow.h).
#include "models/bow.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"

int bow_bigram_bucket(int a, int c, int K) {
    uint64_t h = ((uint64_t)(uint32_t)a << 32 | (uint32_t)c) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    return (int)(h % (uint64_t)K);
}

void bow_features(float *x, const int *ids, int B, int T, int V, int K) {
    const size_t D = (size_t)V + (size_t)K;
    memset(x, 0, (size_t)B * D * sizeof *x);
    for (int b = 0; b < B; b++) {
        const int *row = ids + (size_t)b * T;
        float *xb = x + (size_t)b * D;
        for (int t = 0; t < T; t++) {
            int id = row[t];
            CHECK(id >= 0 && id < V, "word id %d of %d", id, V);
            if (id > 0) xb[id] = 1.0f;
            if (K > 0 && t + 1 < T && id > 0 && row[t + 1] > 0)
                xb[V + bow_bigram_bucket(id, row[t + 1], K)] = 1.0f;
        }
    }
}

void bow_word_weights(float *alpha, const int *ids, const float *W, int B, int T, int O, int V, int D) {
    for (int b = 0; b < B; b++) {
        const int *row = ids + (size_t)b * T;
        float *a = alpha + (size_t)b * T;
        double total = 0.0;
        int words = 0;
        for (int t = 0; t < T; t++) {
            a[t] = 0.0f;
            int id = row[t];
            CHECK(id >= 0 && id < V, "word id %d of %d", id, V);
            if (id == 0) continue;
            int times = 0;
            for (int u = 0; u < T; u++) times += row[u] == id;
            double w = 0.0;
            for (int k = 0; k < O; k++) w += fabsf(W[(size_t)k * D + id]);
            a[t] = (float)(w / times);
            total += a[t];
            words++;
        }
        for (int t = 0; t < T; t++) {
            if (row[t] == 0) continue;
            a[t] = total > 0.0 ? (float)(a[t] / total) : 1.0f / (float)words;
        }
    }
}

static int ascending(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int bow_active(int *idx, const int *row, int T, int V, int K) {
    int n = 0;
    for (int t = 0; t < T; t++) {
        int id = row[t];
        CHECK(id >= 0 && id < V, "word id %d of %d", id, V);
        if (id > 0) idx[n++] = id;
        if (K > 0 && t + 1 < T && id > 0 && row[t + 1] > 0) idx[n++] = V + bow_bigram_bucket(id, row[t + 1], K);
    }
    qsort(idx, (size_t)n, sizeof *idx, ascending);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (m == 0 || idx[i] != idx[m - 1]) idx[m++] = idx[i];
    return m;
}

void bow_sparse_forward(float *logits, const int *idx, const int *n, int stride, const float *r,
                        const float *W, const float *out_b, int B, int O, int D) {
    for (int b = 0; b < B; b++) {
        const int *k = idx + (size_t)b * stride;
        for (int o = 0; o < O; o++) {
            const float *w = W + (size_t)o * D;
            float s = out_b[o];
            for (int i = 0; i < n[b]; i++) s += w[k[i]] * (r ? r[k[i]] : 1.0f);
            logits[(size_t)b * O + o] = s;
        }
    }
}

void bow_sparse_backward(float *dW, float *db, const float *dlogits, const int *idx, const int *n,
                         int stride, const float *r, int B, int O, int D) {
    for (int b = 0; b < B; b++) {
        const int *k = idx + (size_t)b * stride;
        for (int o = 0; o < O; o++) {
            float g = dlogits[(size_t)b * O + o];
            float *w = dW + (size_t)o * D;
            db[o] += g;
            for (int i = 0; i < n[b]; i++) w[k[i]] += g * (r ? r[k[i]] : 1.0f);
        }
    }
}

void bow_nb_ratios(float *r, const int *ids, const int *labels, int n, int T, int V, int K,
                   double alpha) {
    const size_t D = (size_t)V + (size_t)K;
    double *p = xcalloc(D, sizeof *p), *q = xcalloc(D, sizeof *q);
    int *idx = xmalloc((size_t)2 * T * sizeof *idx);
    for (int i = 0; i < n; i++) {
        CHECK(labels[i] == 0 || labels[i] == 1, "label %d (two classes only)", labels[i]);
        int m = bow_active(idx, ids + (size_t)i * T, T, V, K);
        double *c = labels[i] ? p : q;
        for (int j = 0; j < m; j++) c[idx[j]] += 1.0;
    }
    double sp = 0.0, sq = 0.0;
    for (size_t k = 1; k < D; k++) sp += p[k] + alpha, sq += q[k] + alpha;
    r[0] = 0.0f;
    for (size_t k = 1; k < D; k++) r[k] = (float)log(((p[k] + alpha) / sp) / ((q[k] + alpha) / sq));
    free(idx);
    free(p);
    free(q);
}
