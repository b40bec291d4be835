// bow.c: the bag-of-words features (models/bow.h).
#include "models/bow.h"

#include <math.h>
#include <string.h>

#include "core/check.h"

void bow_features(float *x, const int *ids, int B, int T, int V) {
    memset(x, 0, (size_t)B * V * sizeof *x);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            int id = ids[(size_t)b * T + t];
            CHECK(id >= 0 && id < V, "word id %d of %d", id, V);
            if (id > 0) x[(size_t)b * V + id] = 1.0f;
        }
}

void bow_word_weights(float *alpha, const int *ids, const float *W, int B, int T, int O, int V) {
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
            for (int k = 0; k < O; k++) w += fabsf(W[(size_t)k * V + id]);
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
