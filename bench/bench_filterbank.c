// bench_filterbank.c: DRAW's read (vision/filterbank.h) forward and backward, through the
// plain loops and through the GEMMs, on the toolkit's shapes, one thread.
//
// For each shape (batch B, channels C, grid N, image W x H) and path: one forward and one
// backward (d image not asked for, as DRAW's x and the classifier's input) over the batch,
// repeated doubling until at least MIN_SECONDS of this process's CPU time
// (CLOCK_PROCESS_CPUTIME_ID: the machine is often shared, and CPU time moves less with the
// load than wall time). Prints, per shape, microseconds of CPU per image for each path,
// their ratio, and the path filterbank_read_uses_gemm picks:
//     shape   loops us/img   gemm us/img   loops/gemm   auto
// Usage: bench_filterbank [MIN_SECONDS]   (default 0.5)
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/check.h"
#include "core/gemm.h"
#include "core/rng.h"
#include "vision/filterbank.h"

typedef struct {
    int B, C, N, W, H;
    const char *what;
} Shape;

static const Shape shapes[] = {
    {100, 1, 2, 28, 28, "DRAW MNIST read 2"},
    {100, 1, 5, 28, 28, "DRAW MNIST read 5"},
    {100, 1, 12, 28, 28, "28 x 28, N 12"},
    {64, 1, 5, 60, 60, "two-digit 60 x 60, read 5"},
    {64, 1, 12, 60, 60, "60 x 60, N 12"},
    {64, 3, 12, 64, 64, "colour 64 x 64, read 12"},
    {64, 1, 12, 100, 100, "cluttered 100 x 100, N 12"},
};

typedef struct {
    Shape s;
    FilterbankPath path;
    float *img, *Fx, *Fy, *g, *patch, *dpatch, *dFx, *dFy, *dg, *scratch;
} ReadBench;

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void read_pass(ReadBench *r) {
    const Shape *s = &r->s;
    int ld = s->C * s->N * s->N;
    filterbank_read_channels_forward_path(r->patch, ld, r->img, r->Fx, r->Fy, r->g, r->scratch,
                                          s->B, s->C, s->N, s->W, s->H, r->path);
    filterbank_read_channels_backward_path(NULL, r->dFx, r->dFy, r->dg, r->dpatch, ld, r->img,
                                           r->Fx, r->Fy, r->g, r->scratch, s->B, s->C, s->N, s->W,
                                           s->H, r->path);
}

// CPU seconds per pass.
static double time_passes(ReadBench *r, double min_seconds) {
    read_pass(r);
    for (long calls = 1;; calls *= 2) {
        double t0 = cpu_now();
        for (long i = 0; i < calls; i++) read_pass(r);
        double elapsed = cpu_now() - t0;
        if (elapsed >= min_seconds) return elapsed / (double)calls;
    }
}

static float *filled(size_t n, float lo, float hi, Rng *rng) {
    float *p = xcalloc(n, sizeof(float));
    for (size_t i = 0; i < n; i++) p[i] = lo + (hi - lo) * rng_uniform(rng);
    return p;
}

static void bench_shape(const Shape *s, double min_seconds) {
    Rng rng;
    rng_seed(&rng, 5);
    ReadBench r = {.s = *s};
    size_t B = (size_t)s->B;
    float *params = filled(B * FILTERBANK_PARAMS, -0.5f, 0.5f, &rng);
    r.img = filled(B * s->C * s->H * s->W, 0.0f, 1.0f, &rng);
    r.dpatch = filled(B * s->C * s->N * s->N, -1.0f, 1.0f, &rng);
    r.patch = xcalloc(B * s->C * s->N * s->N, sizeof(float));
    r.Fx = xcalloc(B * s->N * s->W, sizeof(float));
    r.Fy = xcalloc(B * s->N * s->H, sizeof(float));
    r.dFx = xcalloc(B * s->N * s->W, sizeof(float));
    r.dFy = xcalloc(B * s->N * s->H, sizeof(float));
    r.g = xcalloc(B, sizeof(float));
    r.dg = xcalloc(B, sizeof(float));
    r.scratch = xcalloc(filterbank_scratch_floats(s->N, s->W, s->H), sizeof(float));
    filterbank_forward(r.Fx, r.Fy, r.g, params, s->B, s->N, s->W, s->H);
    r.path = FILTERBANK_PATH_LOOPS;
    double loops = time_passes(&r, min_seconds) / (double)B * 1e6;
    r.path = FILTERBANK_PATH_GEMM;
    double gemms = time_passes(&r, min_seconds) / (double)B * 1e6;
    printf("%-28s B %3d C %d N %2d %3d x %3d   %9.2f   %9.2f   %6.2fx   %s\n", s->what, s->B,
           s->C, s->N, s->W, s->H, loops, gemms, loops / gemms,
           filterbank_read_uses_gemm(s->N, s->W, s->H) ? "gemm" : "loops");
    free(params), free(r.img), free(r.dpatch), free(r.patch), free(r.Fx), free(r.Fy);
    free(r.dFx), free(r.dFy), free(r.g), free(r.dg), free(r.scratch);
}

int main(int argc, char **argv) {
    double min_seconds = argc > 1 ? atof(argv[1]) : 0.5;
    if (!(min_seconds > 0)) {
        fprintf(stderr, "bench_filterbank: MIN_SECONDS must be a positive number, not '%s'\n",
                argv[1]);
        return 2;
    }
    gemm_set_threads(1);
    printf("read forward + backward (no d image), one thread, %s; CPU us per image\n",
           gemm_backend());
    printf("%-28s %-26s   %9s   %9s   %7s   %s\n", "shape", "", "loops", "gemm", "ratio", "auto");
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        bench_shape(&shapes[i], min_seconds);
    return 0;
}
