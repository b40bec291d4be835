// bench_gemm_shapes.c: every OpenBLAS copy this CPU runs, side by side, on shapes you name.
//
// Usage: bench_gemm_shapes THREADS ROUNDS SECONDS SHAPE...
//   SHAPE is MxNxK (C = A @ B) or MxNxKt (C = A @ B^T), all row-major, beta 0.
// For each shape: one warm-up call per kernel, then ROUNDS rounds in which the kernels take
// turns (so that load elsewhere hits them alike), each round at least SECONDS of calls
// (CLOCK_MONOTONIC via core/timer.h). Prints one line per shape and kernel on stdout:
//     shape  kernel (OpenBLAS's core name)  median GFLOP/s  min  max  (over the rounds)
// and, per shape, which kernel has the best median and by how much it leads the next.
// This is the evidence the calibration (core/gemm_calibrate.c) should agree with: run it
// on a quiet machine.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/gemm.h"
#include "core/gemm_blas.h"
#include "core/gemm_choice.h"
#include "core/timer.h"

enum { MAX_ROUNDS = 64 };

typedef struct {
    int M, N, K;
    bool trans_b;
} Shape;

static bool parse_shape(const char *s, Shape *out) {
    char t = 0;
    int n = sscanf(s, "%dx%dx%d%c", &out->M, &out->N, &out->K, &t);
    out->trans_b = n == 4 && t == 't';
    return (n == 3 || (n == 4 && t == 't')) && out->M > 0 && out->N > 0 && out->K > 0;
}

static float *filled(size_t n) {
    float *x = xmalloc(n * sizeof *x);
    unsigned seed = 777;
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
    }
    return x;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// GFLOP/s of one round of at least `seconds` of calls of s through lib.
static double round_rate(const BlasLib *lib, const Shape *s, const float *A, const float *B,
                         float *C, double seconds) {
    long calls = 0;
    double t0 = timer_now(), elapsed;
    do {
        blas_sgemm(lib, false, s->trans_b, s->M, s->N, s->K, 1.0f, A, s->K, B,
                   s->trans_b ? s->K : s->N, 0.0f, C, s->N);
        calls++;
        elapsed = timer_now() - t0;
    } while (elapsed < seconds);
    return 2.0 * s->M * s->N * (double)s->K * calls / elapsed * 1e-9;
}

static void bench_shape(const char *name, const Shape *s, int rounds, double seconds) {
    const GemmKernel kernels[] = {KERNEL_OPENBLAS, KERNEL_OPENBLAS_HASWELL, KERNEL_OPENBLAS_SKYLAKEX};
    enum { NK = sizeof kernels / sizeof kernels[0] };
    bool runs[NK];
    double rate[NK][MAX_ROUNDS], median[NK];
    float *A = filled((size_t)s->M * s->K), *B = filled((size_t)s->K * s->N);
    float *C = filled((size_t)s->M * s->N);
    for (int k = 0; k < NK; k++) {
        runs[k] = gemm_kernel_runs(kernels[k], cpu_isa());
        if (runs[k]) round_rate(blas_lib(kernels[k]), s, A, B, C, 0.0);
    }
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < NK; k++)
            if (runs[k]) rate[k][r] = round_rate(blas_lib(kernels[k]), s, A, B, C, seconds);
    int best = -1, second = -1;
    for (int k = 0; k < NK; k++) {
        if (!runs[k]) continue;
        qsort(rate[k], (size_t)rounds, sizeof(double), cmp_double);
        median[k] = rate[k][rounds / 2];
        char label[64];
        snprintf(label, sizeof label, "%s (%s)", gemm_kernel_name(kernels[k]), blas_lib(kernels[k])->corename);
        printf("%-16s %-28s %8.1f %8.1f %8.1f\n", name, label, median[k], rate[k][0], rate[k][rounds - 1]);
        if (best < 0 || median[k] > median[best]) second = best, best = k;
        else if (second < 0 || median[k] > median[second]) second = k;
    }
    if (best >= 0 && second >= 0)
        printf("%-16s best %s, %+.1f %% over %s\n", name, gemm_kernel_name(kernels[best]),
               100.0 * (median[best] / median[second] - 1.0), gemm_kernel_name(kernels[second]));
    free(A), free(B), free(C);
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: bench_gemm_shapes THREADS ROUNDS SECONDS MxNxK[t]...\n");
        return 2;
    }
    const int threads = atoi(argv[1]), rounds = atoi(argv[2]);
    const double seconds = atof(argv[3]);
    if (threads < 1 || rounds < 1 || rounds > MAX_ROUNDS || !(seconds >= 0)) {
        fprintf(stderr, "bench_gemm_shapes: THREADS >= 1, 1 <= ROUNDS <= %d, SECONDS >= 0\n", MAX_ROUNDS);
        return 2;
    }
    blas_set_threads(threads);
    printf("%-16s %-28s %8s %8s %8s   (%d thread%s, %d rounds of %.2f s)\n", "shape", "kernel",
           "median", "min", "max", threads, threads == 1 ? "" : "s", rounds, seconds);
    for (int i = 4; i < argc; i++) {
        Shape s;
        if (!parse_shape(argv[i], &s)) {
            fprintf(stderr, "bench_gemm_shapes: %s: not MxNxK or MxNxKt\n", argv[i]);
            return 2;
        }
        bench_shape(argv[i], &s, rounds, seconds);
    }
    return 0;
}
