#include "core/gemm_calibrate.h"

#include <stdlib.h>

#include "core/check.h"
#include "core/gemm_blas.h"
#include "core/gemm_packed.h"
#include "core/timer.h"

enum { ROUNDS = 7, MAX_PRODUCTS = 3 };
static const double ROUND_SECONDS = 0.01;
// Another kernel replaces the preferred one only when it is this much faster.
static const double MARGIN = 1.10;

typedef struct {
    int M, N, K;
    bool trans_b;
} Product;

typedef struct {
    Product p[MAX_PRODUCTS];
    int n;
} ClassShapes;

static const ClassShapes class_shapes[GEMM_CLASSES] = {
    [GEMM_SMALL] = {{{12, 100, 100, false}, {12, 12, 100, true}}, 2},
    [GEMM_ROWS] = {{{64, 1024, 512, false}, {50, 520, 1024, false}, {32, 1800, 2824, false}}, 3},
    [GEMM_LARGE] = {{{1024, 196, 256, false}, {256, 196, 1024, false}, {256, 196, 256, false}}, 3},
    [GEMM_STEP] = {{{50, 1024, 520, true}, {50, 520, 1024, false}, {32, 1800, 2824, true}}, 3},
};

// Operands for one class: A (M, K), B as op(B) asks, C (M, N), and for step the packed B.
typedef struct {
    const ClassShapes *shapes;
    float *A[MAX_PRODUCTS], *B[MAX_PRODUCTS], *C[MAX_PRODUCTS];
    PackedMatrix pm[MAX_PRODUCTS];
    bool packed;
} Operands;

static float *filled(size_t n, unsigned *seed) {
    float *x = xmalloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        x[i] = (float)(*seed >> 8) / 16777216.0f - 0.5f;
    }
    return x;
}

static void operands_init(Operands *o, GemmClass c) {
    o->shapes = &class_shapes[c];
    o->packed = c == GEMM_STEP;
    unsigned seed = 12345;
    for (int i = 0; i < o->shapes->n; i++) {
        const Product *p = &o->shapes->p[i];
        o->A[i] = filled((size_t)p->M * p->K, &seed);
        o->B[i] = filled((size_t)p->K * p->N, &seed);
        o->C[i] = filled((size_t)p->M * p->N, &seed);
        if (o->packed) {
            packed_alloc(&o->pm[i], p->K, p->N);
            packed_pack(&o->pm[i], p->trans_b, o->B[i], p->trans_b ? p->K : p->N);
        }
    }
}

static void operands_free(Operands *o) {
    for (int i = 0; i < o->shapes->n; i++) {
        free(o->A[i]), free(o->B[i]), free(o->C[i]);
        if (o->packed) packed_free(&o->pm[i]);
    }
}

// One pass over the class's products with kernel k (via: the OpenBLAS copy behind "gemm").
static void run_once(const Operands *o, GemmKernel k, const BlasLib *via) {
    for (int i = 0; i < o->shapes->n; i++) {
        const Product *p = &o->shapes->p[i];
        const int ldb = p->trans_b ? p->K : p->N;
        if (k == KERNEL_PACKED_AVX2 || k == KERNEL_PACKED_AVX512) {
            CHECK(gemm_packed_with(k == KERNEL_PACKED_AVX2 ? CPU_ISA_AVX2 : CPU_ISA_AVX512, p->M, p->N,
                                   o->A[i], p->K, &o->pm[i], 0.0f, o->C[i], p->N));
        } else {
            const BlasLib *lib = k == KERNEL_VIA_GEMM ? via : blas_lib(k);
            blas_sgemm(lib, false, p->trans_b, p->M, p->N, p->K, 1.0f, o->A[i], p->K, o->B[i], ldb,
                       0.0f, o->C[i], p->N);
        }
    }
}

// Seconds per pass: at least ROUND_SECONDS of passes.
static double time_round(const Operands *o, GemmKernel k, const BlasLib *via) {
    long calls = 0;
    double t0 = timer_now(), elapsed;
    do {
        run_once(o, k, via);
        calls++;
        elapsed = timer_now() - t0;
    } while (elapsed < ROUND_SECONDS);
    return elapsed / (double)calls;
}

static double class_flops(const ClassShapes *s) {
    double f = 0;
    for (int i = 0; i < s->n; i++) f += 2.0 * s->p[i].M * s->p[i].N * (double)s->p[i].K;
    return f;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// The fastest of the candidates for class c (by the median of its rounds), unless prefer is
// within MARGIN of it; their rates into gflops.
static GemmKernel calibrate_class(GemmClass c, const bool runs[GEMM_KERNELS], const BlasLib *via,
                                  GemmKernel prefer, double gflops[GEMM_KERNELS]) {
    Operands o;
    operands_init(&o, c);
    double best[GEMM_KERNELS], rounds[GEMM_KERNELS][ROUNDS];
    for (int k = 0; k < GEMM_KERNELS; k++) {
        best[k] = 0;
        if (runs[k] && gemm_kernel_serves((GemmKernel)k, c)) run_once(&o, (GemmKernel)k, via);
    }
    for (int r = 0; r < ROUNDS; r++) {
        for (int k = 0; k < GEMM_KERNELS; k++) {
            if (runs[k] && gemm_kernel_serves((GemmKernel)k, c))
                rounds[k][r] = time_round(&o, (GemmKernel)k, via);
        }
    }
    for (int k = 0; k < GEMM_KERNELS; k++) {
        if (!runs[k] || !gemm_kernel_serves((GemmKernel)k, c)) continue;
        qsort(rounds[k], ROUNDS, sizeof(double), cmp_double);
        best[k] = rounds[k][ROUNDS / 2];
    }
    GemmKernel win = GEMM_KERNELS;
    for (int k = 0; k < GEMM_KERNELS; k++) {
        gflops[k] = best[k] > 0 ? class_flops(o.shapes) / best[k] * 1e-9 : 0;
        if (best[k] > 0 && (win == GEMM_KERNELS || best[k] < best[win])) win = (GemmKernel)k;
    }
    if (win != GEMM_KERNELS && prefer < GEMM_KERNELS && best[prefer] > 0 &&
        best[prefer] <= MARGIN * best[win])
        win = prefer;
    operands_free(&o);
    CHECK(win != GEMM_KERNELS, "no kernel for %s", gemm_class_name(c));
    return win;
}

GemmCalibration gemm_calibrate(int threads, CpuIsa isa, const bool allowed[GEMM_KERNELS],
                               const GemmChoice *prefer) {
    GemmCalibration cal = {0};
    bool runs[GEMM_KERNELS];
    for (int k = 0; k < GEMM_KERNELS; k++)
        runs[k] = allowed[k] && gemm_kernel_runs((GemmKernel)k, isa);
    // The packed kernels need panels, which no CPU without AVX2 gets.
    if (isa == CPU_ISA_NONE) runs[KERNEL_PACKED_AVX2] = runs[KERNEL_PACKED_AVX512] = false;
    blas_set_threads(threads);
    for (int c = 0; c < GEMM_CLASSES; c++) {
        const BlasLib *via = c == GEMM_STEP ? blas_lib(cal.choice.kernel[GEMM_ROWS]) : NULL;
        cal.choice.kernel[c] = calibrate_class((GemmClass)c, runs, via, prefer->kernel[c], cal.gflops[c]);
    }
    return cal;
}
