// gradcheck.h: compare an op's backward against central differences.
//
// The scalar checked is loss = sum_i w_i * out_i with w a fixed random vector
// (summing raw outputs would hide errors: a softmax's outputs always sum to 1).
// For each checked input element x: numeric = (loss(x + eps) - loss(x - eps)) / 2 eps
// with the loss accumulated in double; analytic = the gradient the op's backward
// accumulated for that element given dout = w. They must agree within
//     |analytic - numeric| <= atol + rtol * max(|analytic|, |numeric|).
//
// Usage: fill a GradcheckOp with a forward that writes `out` from the current input
// values, and a backward that, given dout, *accumulates* into each input's grad.
#ifndef TESTS_SUPPORT_GRADCHECK_H
#define TESTS_SUPPORT_GRADCHECK_H

#include <stddef.h>
#include <stdint.h>

#include "core/block.h"
#include "core/rng.h"

typedef struct {
    const char *name;
    float *x;     // the input's values (perturbed in place, restored after)
    float *grad;  // where backward accumulates its gradient (zeroed by the harness)
    size_t n;
} GradcheckInput;

typedef struct {
    void *ctx;
    void (*forward)(void *ctx, float *out);
    void (*backward)(void *ctx, const float *dout);
    size_t n_out;
    GradcheckInput *inputs;
    int n_inputs;
    double eps;         // default 1e-3 if 0
    double atol, rtol;  // defaults 1e-3, 1e-2 if 0
    int max_checks;     // elements checked per input (random subset); 0 = all
} GradcheckOp;

// Returns 0 when every checked element agrees; otherwise prints the worst element
// per input (name, index, analytic, numeric) to stdout and returns -1.
int gradcheck(const char *op_name, const GradcheckOp *op, Rng *rng);

// One input per tensor of a model's parameter block, its gradient at the same offset of
// grads (laid out alike): an array of params->count, to free.
GradcheckInput *gradcheck_block_inputs(const Block *params, const Block *grads);

// gradcheck over every tensor of a model's parameter block: op's inputs are
// gradcheck_block_inputs(params, grads) (its inputs and n_inputs are set here), the output
// weights and the elements checked come from an rng seeded with seed. Returns gradcheck's
// answer.
int gradcheck_block(const char *op_name, GradcheckOp op, const Block *params,
                    const Block *grads, uint64_t seed);

// Fills x with uniform values in [lo, hi).
void fill_uniform(float *x, size_t n, float lo, float hi, Rng *rng);

#endif
