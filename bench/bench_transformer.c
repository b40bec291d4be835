// bench_transformer.c: one Transformer layer's training step (forward, then backward) on one
// thread, seq/transformer.h; bench/reference/bench_transformer.py runs it beside PyTorch's.
//
// Usage: bench_transformer encoder|decoder [B=16] [T=32] [D=256] [HEADS=4] [DFF=1024] [SECONDS=1]
// The decoder's memory has S = T positions. Pre-LN, ReLU, no dropout, every length T.
// Parameters PyTorch-initialised (seq/mha.h, seq/transformer.h), inputs and the output's
// gradient uniform in [-1, 1) (fixed seed). Two warm-up steps, then steps until SECONDS have
// passed (CLOCK_MONOTONIC), at least 3. Prints one JSON object:
//     {"impl": "toolkit", "layer", "B", "T", "d", "heads", "d_ff", "steps", "ms_per_step",
//      "cpu_ms_per_step"}
// cpu_ms_per_step divides the process's CPU time (CLOCK_PROCESS_CPUTIME_ID) over the timed
// steps: on a loaded machine, what an idle core would take.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/block.h"
#include "core/check.h"
#include "core/gemm.h"
#include "core/rng.h"
#include "core/timer.h"
#include "seq/transformer.h"

typedef struct {
    TransformerConfig c;
    int decoder, B, T;
    Block params, grads, acts;
    TfEncoderLayerParams ep, eg;
    TfDecoderLayerParams dp, dg;
    TfLayerActs x;
    float *in, *mem, *dout, *din, *dmem;
} Bench;

static void fill_uniform(float *x, size_t n, float lo, float hi, Rng *rng) {
    for (size_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * rng_uniform(rng);
}

static void bench_init(Bench *b) {
    const TransformerConfig *c = &b->c;
    if (b->decoder) {
        tf_decoder_layer_params_layout(&b->params, &b->dp, c, "dec");
        tf_decoder_layer_params_layout(&b->grads, &b->dg, c, "dec");
        tf_decoder_layer_acts_layout(&b->acts, &b->x, c, b->B, b->T, b->T, "dec");
    } else {
        tf_encoder_layer_params_layout(&b->params, &b->ep, c, "enc");
        tf_encoder_layer_params_layout(&b->grads, &b->eg, c, "enc");
        tf_encoder_layer_acts_layout(&b->acts, &b->x, c, b->B, b->T, "enc");
    }
    block_alloc(&b->params), block_alloc(&b->grads), block_alloc(&b->acts);
    Rng rng;
    rng_seed(&rng, 1);
    if (b->decoder) tf_decoder_layer_params_init(&b->dp, c, &rng);
    else tf_encoder_layer_params_init(&b->ep, c, &rng);
    size_t n = (size_t)b->B * b->T * c->d_model;
    b->in = xmalloc(n * sizeof(float)), b->mem = xmalloc(n * sizeof(float));
    b->dout = xmalloc(n * sizeof(float));
    b->din = xmalloc(n * sizeof(float)), b->dmem = xmalloc(n * sizeof(float));
    fill_uniform(b->in, n, -1, 1, &rng), fill_uniform(b->mem, n, -1, 1, &rng);
    fill_uniform(b->dout, n, -1, 1, &rng);
}

static void bench_step(Bench *b) {
    size_t n = (size_t)b->B * b->T * b->c.d_model;
    block_zero(&b->grads);
    memset(b->din, 0, n * sizeof(float)), memset(b->dmem, 0, n * sizeof(float));
    if (b->decoder) {
        tf_decoder_layer_forward(&b->x, b->in, b->mem, NULL, NULL, &b->dp, &b->c, NULL, b->B, b->T, b->T);
        tf_decoder_layer_backward(b->din, b->dmem, &b->dg, b->dout, &b->x, b->in, b->mem, NULL, NULL,
                                  &b->dp, &b->c, b->B, b->T, b->T);
    } else {
        tf_encoder_layer_forward(&b->x, b->in, NULL, &b->ep, &b->c, NULL, b->B, b->T);
        tf_encoder_layer_backward(b->din, &b->eg, b->dout, &b->x, b->in, NULL, &b->ep, &b->c, b->B, b->T);
    }
}

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 2 || (strcmp(argv[1], "encoder") != 0 && strcmp(argv[1], "decoder") != 0)) {
        fprintf(stderr, "usage: bench_transformer encoder|decoder [B=16] [T=32] [D=256] [HEADS=4] "
                        "[DFF=1024] [SECONDS=1]\n");
        return 2;
    }
    Bench b = {0};
    b.decoder = strcmp(argv[1], "decoder") == 0;
    b.B = argc > 2 ? atoi(argv[2]) : 16, b.T = argc > 3 ? atoi(argv[3]) : 32;
    int d = argc > 4 ? atoi(argv[4]) : 256, heads = argc > 5 ? atoi(argv[5]) : 4;
    int dff = argc > 6 ? atoi(argv[6]) : 1024;
    double seconds = argc > 7 ? atof(argv[7]) : 1.0;
    b.c = transformer_config_default(d, heads, dff, 1, b.T);
    b.c.dropout = 0.0f;
    Error err = {{0}};
    if (b.B < 1 || b.T < 1 || transformer_config_check(&b.c, &err) ||
        transformer_check_sizes(&b.c, b.B, b.T, b.T, &err)) {
        fprintf(stderr, "bench_transformer: %s\n", err.msg[0] ? err.msg : "B and T must be >= 1");
        return 2;
    }
    gemm_set_threads(1);
    bench_init(&b);
    bench_step(&b), bench_step(&b);
    int steps = 0;
    double t0 = timer_now(), c0 = cpu_now();
    while (steps < 3 || timer_now() - t0 < seconds) bench_step(&b), steps++;
    double wall = timer_now() - t0, cpu = cpu_now() - c0;
    printf("{\"impl\": \"toolkit\", \"layer\": \"%s\", \"B\": %d, \"T\": %d, \"d\": %d, \"heads\": %d, "
           "\"d_ff\": %d, \"steps\": %d, \"ms_per_step\": %.3f, \"cpu_ms_per_step\": %.3f}\n",
           argv[1], b.B, b.T, d, heads, dff, steps, 1e3 * wall / steps, 1e3 * cpu / steps);
    block_free(&b.params), block_free(&b.grads), block_free(&b.acts);
    free(b.in), free(b.mem), free(b.dout), free(b.din), free(b.dmem);
    return 0;
}
