// bench_gemm.c: sgemm throughput through core/gemm.h on the toolkit's shapes.
//
// For each shape (C = A @ B, all row-major, no transposes) and thread count: two warm-up
// calls, then repeats doubling until at least MIN_SECONDS of wall time (CLOCK_MONOTONIC via
// core/timer.h). Prints the backend line of each thread count (the kernels chosen for it,
// core/gemm.h) and a table on stdout, through gemm() with those kernels:
//     shape (MxNxK)      threads   GFLOP/s   ms/call   calls
// GFLOP/s counts 2*M*N*K floating-point operations per call. Then the same shapes through
// every OpenBLAS copy this CPU runs (core/gemm_blas.h: OpenBLAS's own core type, HASWELL,
// SKYLAKEX), side by side in one run, the chosen one marked with '*'.
//
// Then, on one thread, DRAW's step products (50 rows per worker, the encoder's (1024, 520)
// weight) through gemm() and through gemm_packed() with the weight packed once
// (core/gemm_packed.h), with each kernel this CPU runs: the forward's xh @ W^T and the
// backward's dgates @ W. Each "call"
// here is the pair of products on four weights (two per shape, as the encoder and decoder
// use them, together 8 MiB: more than L2, so the weights come from L3 as in training). The
// kernel chosen for the "step" class is marked with '*'.
// Usage: bench_gemm [MIN_SECONDS]   (default 1)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/gemm.h"
#include "core/gemm_blas.h"
#include "core/gemm_choice.h"
#include "core/gemm_packed.h"
#include "core/rng.h"
#include "core/timer.h"

typedef struct {
    int M, N, K;
    const char *what;
} Shape;

static const Shape shapes[] = {
    {1024, 1024, 1024, "square"},
    {100, 1024, 256, "LSTM gates, batch 100, H 256"},
    {64, 1024, 512, "LSTM gates, batch 64, [x;h] 512"},
    {196, 512, 512, "SAT feature projection, 14x14 grid"},
    {12, 100, 100, "DRAW read filterbank, N 12, 100 px"},
    {256, 784, 1152, "3x3 conv 128 -> 256 on 28x28 (im2col)"},
};

// Seconds per round of `calls` rounds of fn.
static double time_rounds(void (*fn)(void *), void *arg, double min_seconds, long *calls) {
    fn(arg), fn(arg);
    for (*calls = 1;; *calls *= 2) {
        double t0 = timer_now();
        for (long i = 0; i < *calls; i++) fn(arg);
        double elapsed = timer_now() - t0;
        if (elapsed >= min_seconds) return elapsed;
    }
}

enum { STEP_M = 50, STEP_G = 1024, STEP_K = 520, STEP_W = 4 };
typedef struct {
    float *W[STEP_W], *A, *C;
    PackedMatrix t[STEP_W], n[STEP_W];
    CpuIsa kernel;  // for step_packed
} StepBench;

static void step_gemm(void *arg) {
    StepBench *b = arg;
    for (int w = 0; w < STEP_W; w++) {
        gemm(false, true, STEP_M, STEP_G, STEP_K, 1.0f, b->A, STEP_K, b->W[w], STEP_K, 1.0f, b->C,
             STEP_G);
        gemm(false, false, STEP_M, STEP_K, STEP_G, 1.0f, b->A, STEP_G, b->W[w], STEP_K, 0.0f, b->C,
             STEP_K);
    }
}

static void step_packed(void *arg) {
    StepBench *b = arg;
    for (int w = 0; w < STEP_W; w++) {
        gemm_packed_with(b->kernel, STEP_M, STEP_G, b->A, STEP_K, &b->t[w], 1.0f, b->C, STEP_G);
        gemm_packed_with(b->kernel, STEP_M, STEP_K, b->A, STEP_G, &b->n[w], 0.0f, b->C, STEP_K);
    }
}

static void bench_packed(double min_seconds, Rng *rng) {
    StepBench b;
    size_t nw = (size_t)STEP_G * STEP_K;
    b.A = xmalloc(sizeof(float) * STEP_M * STEP_G);
    b.C = xmalloc(sizeof(float) * STEP_M * STEP_G);
    for (size_t i = 0; i < (size_t)STEP_M * STEP_G; i++) b.A[i] = rng_uniform(rng) - 0.5f, b.C[i] = 0;
    for (int w = 0; w < STEP_W; w++) {
        b.W[w] = xmalloc(sizeof(float) * nw);
        for (size_t i = 0; i < nw; i++) b.W[w][i] = rng_uniform(rng) - 0.5f;
        packed_alloc(&b.t[w], STEP_K, STEP_G);
        packed_pack(&b.t[w], true, b.W[w], STEP_K);
        packed_alloc(&b.n[w], STEP_G, STEP_K);
        packed_pack(&b.n[w], false, b.W[w], STEP_K);
    }
    gemm_set_threads(1);
    double flops = 2.0 * 2.0 * STEP_W * STEP_M * STEP_G * STEP_K;
    printf("\nDRAW step products, %dx%dx%d and %dx%dx%d on %d weights, 1 thread:\n", STEP_M, STEP_G,
           STEP_K, STEP_M, STEP_K, STEP_G, STEP_W);
    long calls;
    double e = time_rounds(step_gemm, &b, min_seconds, &calls);
    const CpuIsa chosen = gemm_step_kernel();
    printf("  gemm (OpenBLAS)        %c %9.1f GFLOP/s %9.3f ms/call %7ld\n",
           chosen == CPU_ISA_NONE ? '*' : ' ', flops * calls / e * 1e-9, 1e3 * e / calls, calls);
    for (b.kernel = CPU_ISA_AVX2; b.kernel <= cpu_isa(); b.kernel++) {
        e = time_rounds(step_packed, &b, min_seconds, &calls);
        printf("  gemm_packed (%-6s)   %c %9.1f GFLOP/s %9.3f ms/call %7ld\n",
               cpu_isa_name(b.kernel), chosen == b.kernel ? '*' : ' ', flops * calls / e * 1e-9,
               1e3 * e / calls, calls);
    }
    double t0 = timer_now();
    for (int w = 0; w < STEP_W; w++) packed_pack(&b.t[w], true, b.W[w], STEP_K);
    for (int w = 0; w < STEP_W; w++) packed_pack(&b.n[w], false, b.W[w], STEP_K);
    printf("  packing the %d weights both ways: %.3f ms (once per training step)\n", STEP_W,
           1e3 * (timer_now() - t0));
    for (int w = 0; w < STEP_W; w++) free(b.W[w]), packed_free(&b.t[w]), packed_free(&b.n[w]);
    free(b.A), free(b.C);
}

typedef struct {
    const Shape *sh;
    const float *A, *B;
    float *C;
} ShapeBench;

static void shape_gemm(void *arg) {
    const ShapeBench *b = arg;
    gemm(false, false, b->sh->M, b->sh->N, b->sh->K, 1.0f, b->A, b->sh->K, b->B, b->sh->N, 0.0f,
         b->C, b->sh->N);
}

typedef struct {
    const ShapeBench *shape;
    const BlasLib *lib;
} CopyBench;

static void shape_copy(void *arg) {
    const CopyBench *c = arg;
    const ShapeBench *b = c->shape;
    blas_sgemm(c->lib, false, false, b->sh->M, b->sh->N, b->sh->K, 1.0f, b->A, b->sh->K, b->B,
               b->sh->N, 0.0f, b->C, b->sh->N);
}

typedef struct {
    float *A, *B, *C;
} Operands;

static Operands operands(const Shape *sh, Rng *rng) {
    size_t na = (size_t)sh->M * sh->K, nb = (size_t)sh->K * sh->N, nc = (size_t)sh->M * sh->N;
    Operands o = {xmalloc(na * sizeof(float)), xmalloc(nb * sizeof(float)), xmalloc(nc * sizeof(float))};
    for (size_t i = 0; i < na; i++) o.A[i] = rng_uniform(rng) - 0.5f;
    for (size_t i = 0; i < nb; i++) o.B[i] = rng_uniform(rng) - 0.5f;
    return o;
}

// The shapes through every OpenBLAS copy this CPU runs, on 1 and 2 threads.
static void bench_copies(double min_seconds, Rng *rng) {
    printf("\nEach OpenBLAS copy (GFLOP/s; '*' the kernel chosen for the shape's class):\n");
    printf("%-18s %7s", "shape (MxNxK)", "threads");
    for (int k = KERNEL_OPENBLAS; k <= KERNEL_OPENBLAS_SKYLAKEX; k++)
        if (gemm_kernel_runs((GemmKernel)k, cpu_isa())) printf(" %18s", gemm_kernel_name((GemmKernel)k));
    printf("  class\n");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const Shape *sh = &shapes[s];
        Operands o = operands(sh, rng);
        ShapeBench b = {sh, o.A, o.B, o.C};
        const GemmClass cls = gemm_class_of(sh->M, sh->N, sh->K);
        for (int threads = 1; threads <= 2; threads++) {
            gemm_set_threads(threads);
            char name[32], chosen[160];
            snprintf(name, sizeof name, "%dx%dx%d", sh->M, sh->N, sh->K);
            gemm_kernels(chosen, sizeof chosen);
            printf("%-18s %7d", name, threads);
            for (int k = KERNEL_OPENBLAS; k <= KERNEL_OPENBLAS_SKYLAKEX; k++) {
                if (!gemm_kernel_runs((GemmKernel)k, cpu_isa())) continue;
                CopyBench c = {&b, blas_lib((GemmKernel)k)};
                long calls;
                double elapsed = time_rounds(shape_copy, &c, min_seconds, &calls);
                char want[64];
                snprintf(want, sizeof want, "%s=%s,", gemm_class_name(cls), gemm_kernel_name((GemmKernel)k));
                strcat(chosen, ",");
                bool mark = strstr(chosen, want) != NULL;
                chosen[strlen(chosen) - 1] = 0;
                printf(" %17.1f%c", 2.0 * sh->M * sh->N * (double)sh->K * calls / elapsed * 1e-9,
                       mark ? '*' : ' ');
            }
            printf("  %s\n", gemm_class_name(cls));
            fflush(stdout);
        }
        free(o.A), free(o.B), free(o.C);
    }
}

int main(int argc, char **argv) {
    double min_seconds = argc > 1 ? atof(argv[1]) : 1.0;
    if (!(min_seconds > 0)) min_seconds = 1.0;
    gemm_set_threads(1);
    printf("backend: %s\n", gemm_backend());
    gemm_set_threads(2);
    printf("backend: %s\n", gemm_backend());
    printf("%-18s %7s %9s %9s %7s  %s\n", "shape (MxNxK)", "threads", "GFLOP/s", "ms/call", "calls",
           "what");
    Rng rng;
    rng_seed(&rng, 1);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const Shape *sh = &shapes[s];
        Operands o = operands(sh, &rng);
        ShapeBench b = {sh, o.A, o.B, o.C};
        for (int threads = 1; threads <= 2; threads++) {
            gemm_set_threads(threads);
            long calls;
            double elapsed = time_rounds(shape_gemm, &b, min_seconds, &calls);
            double flops = 2.0 * sh->M * sh->N * (double)sh->K * calls;
            char name[32];
            snprintf(name, sizeof name, "%dx%dx%d", sh->M, sh->N, sh->K);
            printf("%-18s %7d %9.1f %9.3f %7ld  %s\n", name, threads, flops / elapsed * 1e-9,
                   1e3 * elapsed / calls, calls, sh->what);
            fflush(stdout);
        }
        free(o.A), free(o.B), free(o.C);
    }
    bench_copies(min_seconds, &rng);
    gemm_set_threads(1);
    bench_packed(min_seconds, &rng);
    return 0;
}
