// positions.c: see positions.h.
#include "seq/positions.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "core/check.h"

int pos_kind_parse(const char *name, PosKind *kind) {
    if (name && strcmp(name, "sinusoidal") == 0) return *kind = POS_SINUSOIDAL, 0;
    if (name && strcmp(name, "learned") == 0) return *kind = POS_LEARNED, 0;
    return -1;
}

const char *pos_kind_name(PosKind kind) {
    return kind == POS_SINUSOIDAL ? "sinusoidal" : kind == POS_LEARNED ? "learned" : "unknown";
}

int positions_check(PosKind kind, int d, int max_len, Error *err) {
    if (d < 1) return error_set(err, "model size %d: must be at least 1", d);
    if (max_len < 1)
        return error_set(err, "positions: maximum length %d must be at least 1", max_len);
    if (kind == POS_SINUSOIDAL && (d < 2 || d % 2 != 0))
        return error_set(err, "sinusoidal positions need an even model size of at least 2, not %d",
                         d);
    return 0;
}

int positions_check_length(int T, int max_len, Error *err) {
    if (T < 0 || T > max_len)
        return error_set(err,
                         "a sequence of %d positions is longer than the %d the positions allow", T,
                         max_len);
    return 0;
}

void positions_sinusoid_fill(float *table, int max_len, int d) {
    CHECK(d >= 2 && d % 2 == 0 && max_len >= 1, "sinusoid d = %d, max_len = %d", d, max_len);
    for (int pos = 0; pos < max_len; pos++) {
        float *row = table + (size_t)pos * d;
        for (int i = 0; i < d / 2; i++) {
            double angle = pos / pow(10000.0, 2.0 * i / d);
            row[2 * i] = (float)sin(angle);
            row[2 * i + 1] = (float)cos(angle);
        }
    }
}

void positions_add_forward(float *out, const float *x, const float *table, float scale, int B,
                           int T, int d) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            size_t row = ((size_t)b * T + t) * d;
            const float *pe = table + (size_t)t * d;
            for (int i = 0; i < d; i++) out[row + i] = scale * x[row + i] + pe[i];
        }
}

void positions_add_backward(float *dx, float *dtable, const float *dout, float scale, int B, int T,
                            int d) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            size_t row = ((size_t)b * T + t) * d;
            for (int i = 0; i < d; i++) {
                if (dx) dx[row + i] += scale * dout[row + i];
                if (dtable) dtable[(size_t)t * d + i] += dout[row + i];
            }
        }
}
