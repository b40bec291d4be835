// bench_gemm.c: sgemm throughput through core/gemm.h on the toolkit's shapes.
//
// For each shape (C = A @ B, all row-major, no transposes) and thread count: two warm-up
// calls, then repeats doubling until at least MIN_SECONDS of wall time (CLOCK_MONOTONIC via
// core/timer.h). Prints the backend line and a table on stdout:
//     shape (MxNxK)      threads   GFLOP/s   ms/call   calls
// GFLOP/s counts 2*M*N*K floating-point operations per call.
// Usage: bench_gemm [MIN_SECONDS]   (default 1)
#include <stdio.h>
#include <stdlib.h>

#include "core/check.h"
#include "core/gemm.h"
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
};

int main(int argc, char **argv) {
    double min_seconds = argc > 1 ? atof(argv[1]) : 1.0;
    if (!(min_seconds > 0)) min_seconds = 1.0;
    printf("backend: %s\n", gemm_backend());
    printf("%-18s %7s %9s %9s %7s  %s\n", "shape (MxNxK)", "threads", "GFLOP/s", "ms/call", "calls",
           "what");
    Rng rng;
    rng_seed(&rng, 1);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const Shape *sh = &shapes[s];
        size_t na = (size_t)sh->M * sh->K, nb = (size_t)sh->K * sh->N, nc = (size_t)sh->M * sh->N;
        float *A = xmalloc(na * sizeof *A), *B = xmalloc(nb * sizeof *B), *C = xmalloc(nc * sizeof *C);
        for (size_t i = 0; i < na; i++) A[i] = rng_uniform(&rng) - 0.5f;
        for (size_t i = 0; i < nb; i++) B[i] = rng_uniform(&rng) - 0.5f;
        for (int threads = 1; threads <= 2; threads++) {
            gemm_set_threads(threads);
            for (int w = 0; w < 2; w++)
                gemm(false, false, sh->M, sh->N, sh->K, 1.0f, A, sh->K, B, sh->N, 0.0f, C, sh->N);
            long calls = 1;
            double elapsed;
            for (;;) {
                double t0 = timer_now();
                for (long i = 0; i < calls; i++)
                    gemm(false, false, sh->M, sh->N, sh->K, 1.0f, A, sh->K, B, sh->N, 0.0f, C, sh->N);
                elapsed = timer_now() - t0;
                if (elapsed >= min_seconds) break;
                calls *= 2;
            }
            double flops = 2.0 * sh->M * sh->N * (double)sh->K * calls;
            char name[32];
            snprintf(name, sizeof name, "%dx%dx%d", sh->M, sh->N, sh->K);
            printf("%-18s %7d %9.1f %9.3f %7ld  %s\n", name, threads, flops / elapsed * 1e-9,
                   1e3 * elapsed / calls, calls, sh->what);
            fflush(stdout);
        }
        free(A);
        free(B);
        free(C);
    }
    gemm_set_threads(1);
    return 0;
}
