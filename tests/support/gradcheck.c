#include "tests/support/gradcheck.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"

void fill_uniform(float *x, size_t n, float lo, float hi, Rng *rng) {
    for (size_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * rng_uniform(rng);
}

static double weighted_loss(const GradcheckOp *op, float *out, const float *w) {
    op->forward(op->ctx, out);
    double s = 0.0;
    for (size_t i = 0; i < op->n_out; i++) s += (double)w[i] * (double)out[i];
    return s;
}

int gradcheck(const char *op_name, const GradcheckOp *op, Rng *rng) {
    double eps = op->eps > 0 ? op->eps : 1e-3;
    double atol = op->atol > 0 ? op->atol : 1e-3;
    double rtol = op->rtol > 0 ? op->rtol : 1e-2;
    float *out = xcalloc(op->n_out, sizeof(float));
    float *w = xmalloc(op->n_out * sizeof(float));
    fill_uniform(w, op->n_out, -1.0f, 1.0f, rng);

    // Analytic gradients: zero, forward, backward with dout = w.
    for (int k = 0; k < op->n_inputs; k++)
        memset(op->inputs[k].grad, 0, op->inputs[k].n * sizeof(float));
    op->forward(op->ctx, out);
    op->backward(op->ctx, w);

    int bad = 0;
    for (int k = 0; k < op->n_inputs; k++) {
        const GradcheckInput *in = &op->inputs[k];
        size_t count = in->n;
        if (op->max_checks > 0 && (size_t)op->max_checks < count) count = (size_t)op->max_checks;
        double worst = 0.0, worst_a = 0, worst_n = 0;
        size_t worst_i = 0;
        int in_bad = 0;
        for (size_t c = 0; c < count; c++) {
            size_t i = count == in->n ? c : (size_t)rng_below(rng, (uint32_t)in->n);
            float saved = in->x[i];
            in->x[i] = (float)(saved + eps);
            double up = weighted_loss(op, out, w);
            in->x[i] = (float)(saved - eps);
            double down = weighted_loss(op, out, w);
            in->x[i] = saved;
            // The perturbation actually applied, after float rounding.
            double h = (double)(float)(saved + eps) - (double)(float)(saved - eps);
            double numeric = (up - down) / h;
            double analytic = in->grad[i];
            double err = fabs(analytic - numeric);
            double tol = atol + rtol * fmax(fabs(analytic), fabs(numeric));
            if (err > tol) in_bad = 1;
            if (c == 0 || err - tol > worst) {
                worst = err - tol;
                worst_i = i;
                worst_a = analytic;
                worst_n = numeric;
            }
        }
        if (in_bad) {
            printf("  gradcheck %s: d/d%s[%zu]: analytic %.6g, numeric %.6g\n", op_name, in->name,
                   worst_i, worst_a, worst_n);
            bad = 1;
        }
    }
    free(out);
    free(w);
    return bad ? -1 : 0;
}

GradcheckInput *gradcheck_block_inputs(const Block *params, const Block *grads) {
    GradcheckInput *in = xcalloc((size_t)params->count, sizeof *in);
    for (int i = 0; i < params->count; i++) {
        const BlockTensor *t = &params->tensors[i];
        in[i] = (GradcheckInput){t->name, params->data + t->offset, grads->data + t->offset,
                                 t->numel};
    }
    return in;
}

int gradcheck_block(const char *op_name, GradcheckOp op, const Block *params,
                    const Block *grads, uint64_t seed) {
    op.inputs = gradcheck_block_inputs(params, grads);
    op.n_inputs = params->count;
    Rng rng;
    rng_seed(&rng, seed);
    const int r = gradcheck(op_name, &op, &rng);
    free(op.inputs);
    return r;
}
