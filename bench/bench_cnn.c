// bench_cnn.c: the captioner's CNN encoder (vision/cnn.h), forward and backward, on the
// default configuration (3 input channels, layers 32, 64, 128, 64 x 64 images, batch 32).
//
// One thread of BLAS. Two warm-up passes, then repeats doubling until at least MIN_SECONDS
// of wall time (CLOCK_MONOTONIC via core/timer.h); the process's CPU time over the same
// repeats is printed beside it (on a shared machine wall time also counts waiting for a
// core; CPU time is what an otherwise idle core would take). Prints on stdout:
//     pass       ms/call (wall)   ms/call (CPU)   GFLOP/s (CPU)   images/s (CPU)
// and the workspace size. GFLOP counts 2 * OC * C*K*K * Ho*Wo per image for each
// convolution, once forward, twice backward (weights and inputs; the first layer's input
// gradient is not needed and not counted).
// Usage: bench_cnn [MIN_SECONDS [BATCH [GROUP [CONV]]]]   (defaults 1, 32, CNN_GROUP: images
// per GEMM, auto; CONV is auto, im2col or winograd: how the layers convolve, vision/cnn.h).
// The GFLOP/s column counts the direct convolution's flops whatever the method, so it
// compares methods as a speed, not as work done.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/block.h"
#include "core/check.h"
#include "core/gemm.h"
#include "core/rng.h"
#include "core/timer.h"
#include "vision/cnn.h"

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct {
    CnnWorkspace *ws;
    CnnParams *p, *g;
    float *images, *annot, *dannot;
    int B;
} Ctx;

static void run_forward(Ctx *c) { cnn_forward(c->annot, c->ws, c->images, c->p, c->B); }

static void run_step(Ctx *c) {
    cnn_forward(c->annot, c->ws, c->images, c->p, c->B);
    cnn_backward(c->g, NULL, c->dannot, c->ws, c->images, c->p, c->B);
}

static void time_pass(const char *name, void (*fn)(Ctx *), Ctx *c, double min_seconds,
                      double gflop) {
    for (int w = 0; w < 2; w++) fn(c);
    long calls = 1;
    double wall, cpu;
    for (;;) {
        double t0 = timer_now(), c0 = cpu_now();
        for (long i = 0; i < calls; i++) fn(c);
        wall = timer_now() - t0;
        cpu = cpu_now() - c0;
        if (wall >= min_seconds) break;
        calls *= 2;
    }
    printf("%-18s %14.3f %15.3f %15.1f %14.1f\n", name, wall / calls * 1e3, cpu / calls * 1e3,
           gflop * calls / cpu, (double)c->B * calls / cpu);
}

int main(int argc, char **argv) {
    double min_seconds = argc > 1 ? atof(argv[1]) : 1.0;
    int B = argc > 2 ? atoi(argv[2]) : 32;
    if (!(min_seconds > 0)) min_seconds = 1.0;
    if (B < 1) B = 32;
    int group = argc > 3 ? atoi(argv[3]) : CNN_GROUP;
    if (group < 1) group = CNN_GROUP;
    const char *conv_name = argc > 4 ? argv[4] : "auto";
    CnnConv conv = CNN_CONV_AUTO;
    if (!strcmp(conv_name, "im2col")) conv = CNN_CONV_IM2COL;
    else if (!strcmp(conv_name, "winograd")) conv = CNN_CONV_WINOGRAD;
    else if (strcmp(conv_name, "auto")) {
        fprintf(stderr, "bench_cnn: CONV must be auto, im2col or winograd, got \"%s\"\n", conv_name);
        return 2;
    }
    const int S = 64;
    gemm_set_threads(1);
    CnnConfig cfg;
    cnn_config_default(&cfg);
    CnnParams p, g;
    Block params = {0}, grads = {0};
    cnn_register(&p, &params, "enc", &cfg);
    cnn_register(&g, &grads, "enc", &cfg);
    block_alloc(&params);
    block_alloc(&grads);
    Rng rng;
    rng_seed(&rng, 1);
    cnn_init(&p, &rng);
    const int G = cnn_grid_size(&cfg, S), L = G * G, D = cnn_dim(&cfg);
    size_t ni = (size_t)B * cfg.in_channels * S * S, na = (size_t)B * L * D;
    float *images = xmalloc(ni * sizeof(float));
    float *annot = xmalloc(na * sizeof(float)), *dannot = xmalloc(na * sizeof(float));
    for (size_t i = 0; i < ni; i++) images[i] = rng_uniform(&rng);
    for (size_t i = 0; i < na; i++) dannot[i] = rng_uniform(&rng) - 0.5f;
    CnnWorkspace ws;
    cnn_workspace_alloc_conv(&ws, &cfg, B, S, group, conv);

    double fwd = 0.0, bwd = 0.0;
    for (int i = 0, C = cfg.in_channels; i < cfg.n_layers; i++) {
        int s = S >> i;
        double f = 2.0 * cfg.channels[i] * C * 9 * s * s * B * 1e-9;
        fwd += f;
        bwd += i == 0 ? f : 2 * f;
        C = cfg.channels[i];
    }
    char layers[64] = "";
    for (int i = 0; i < cfg.n_layers; i++)
        strcat(layers, i == 0 ? "" : ","), strcat(layers, ws.winograd[i] ? "winograd" : "im2col");
    printf("backend: %s\nbatch %d, %dx%d, channels 32,64,128; %d images per GEMM; conv %s (%s); "
           "workspace %.1f MiB\n",
           gemm_backend(), B, S, S, ws.group, conv_name, layers, ws.bytes / 1048576.0);
    printf("%-18s %14s %15s %15s %14s\n", "pass", "ms/call wall", "ms/call CPU", "GFLOP/s CPU",
           "images/s CPU");
    Ctx c = {&ws, &p, &g, images, annot, dannot, B};
    time_pass("forward", run_forward, &c, min_seconds, fwd);
    time_pass("forward+backward", run_step, &c, min_seconds, fwd + bwd);

    free(images), free(annot), free(dannot);
    cnn_workspace_free(&ws);
    block_free(&params);
    block_free(&grads);
    return 0;
}
