// bow.c: the bag-of-words features (models/bow.h).
#include "models/bow.h"

#include <math.h>
#include <stdint.h>
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
