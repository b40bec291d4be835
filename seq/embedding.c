#include "seq/embedding.h"

#include <stddef.h>
#include <string.h>

#include "core/check.h"

void embedding_forward(float *out, const int *tokens, const float *table, int B, int C) {
    for (int b = 0; b < B; b++) {
        CHECK(tokens[b] >= 0, "token %d at row %d", tokens[b], b);
        memcpy(out + (size_t)b * C, table + (size_t)tokens[b] * C, (size_t)C * sizeof(float));
    }
}

void embedding_backward(float *dtable, const float *dout, const int *tokens, int B, int C) {
    for (int b = 0; b < B; b++) {
        CHECK(tokens[b] >= 0, "token %d at row %d", tokens[b], b);
        float *restrict d = dtable + (size_t)tokens[b] * C;
        const float *restrict g = dout + (size_t)b * C;
        for (int k = 0; k < C; k++) d[k] += g[k];
    }
}
