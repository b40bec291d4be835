#include "seq/linear.h"

#include <stddef.h>

#include "core/check.h"
#include "core/gemm.h"

void linear_forward(float *out, const float *inp, const float *weight, const float *bias, int B,
                    int C, int OC) {
    CHECK(B >= 0 && C >= 0 && OC >= 0, "B %d C %d OC %d", B, C, OC);
    if (B == 0 || OC == 0) return;
    // Broadcast the bias into out, then out += inp @ weight^T.
    if (bias) {
        for (int b = 0; b < B; b++) {
            float *o = out + (size_t)b * OC;
            for (int j = 0; j < OC; j++) o[j] = bias[j];
        }
    }
    if (C == 0) {
        if (!bias)
            for (size_t i = 0; i < (size_t)B * OC; i++) out[i] = 0.0f;
        return;
    }
    gemm(false, true, B, OC, C, 1.0f, inp, C, weight, C, bias ? 1.0f : 0.0f, out, OC);
}

void linear_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                     const float *inp, const float *weight, int B, int C, int OC) {
    CHECK(B >= 0 && C >= 0 && OC >= 0, "B %d C %d OC %d", B, C, OC);
    if (B == 0 || OC == 0) return;
    if (C > 0) {
        // dinp (B, C) += dout (B, OC) @ weight (OC, C)
        if (dinp) gemm(false, false, B, C, OC, 1.0f, dout, OC, weight, C, 1.0f, dinp, C);
        // dweight (OC, C) += dout^T (OC, B) @ inp (B, C)
        gemm(true, false, OC, C, B, 1.0f, dout, OC, inp, C, 1.0f, dweight, C);
    }
    if (dbias) linear_bias_backward(dbias, dout, B, OC);
}

void linear_bias_backward(float *restrict dbias, const float *restrict dout, int B, int OC) {
    for (int b = 0; b < B; b++) {
        const float *d = dout + (size_t)b * OC;
        for (int j = 0; j < OC; j++) dbias[j] += d[j];
    }
}

void linear_weight_backward_steps(float *dweight, int ldw, const float *dout_all,
                                  const float *inp_all, int ldin, int t0, int shift, int T,
                                  int B, int Bmax, int OC, int C) {
    CHECK(B >= 1 && B <= Bmax && t0 >= shift && shift >= 0, "B %d of %d, t0 %d shift %d", B,
          Bmax, t0, shift);
    if (T <= t0) return;
    if (B == Bmax) {
        gemm(true, false, OC, C, (T - t0) * B, 1.0f, dout_all + (size_t)t0 * Bmax * OC, OC,
             inp_all + (size_t)(t0 - shift) * Bmax * ldin, ldin, 1.0f, dweight, ldw);
    } else {
        for (int t = t0; t < T; t++)
            gemm(true, false, OC, C, B, 1.0f, dout_all + (size_t)t * Bmax * OC, OC,
                 inp_all + (size_t)(t - shift) * Bmax * ldin, ldin, 1.0f, dweight, ldw);
    }
}

void linear_forward_ref(float *out, const float *inp, const float *weight, const float *bias,
                        int B, int C, int OC) {
    for (int b = 0; b < B; b++) {
        for (int j = 0; j < OC; j++) {
            double s = bias ? bias[j] : 0.0;
            for (int k = 0; k < C; k++) s += (double)inp[(size_t)b * C + k] * weight[(size_t)j * C + k];
            out[(size_t)b * OC + j] = (float)s;
        }
    }
}
