// gemm_choice.h: which kernel runs each class of matrix product, and its record.
//
// A product's class is a function of its shape (gemm_class_of), so that no caller names it:
//   small  M N K <= 2^18 multiply-adds (DRAW's filterbank products, 12 x 100 x 100)
//   rows   M <= 128 rows, not small (an LSTM's or attention's step over a batch)
//   large  the rest (the convolutions' GEMMs, Winograd's, attention over a whole grid)
//   step   products with a weight packed once (core/gemm_packed.h: the LSTM step products)
// Kernels: for small, rows and large one of the OpenBLAS copies the process can hold, each
// with its own core type, "openblas" (the library's own choice, or your OPENBLAS_CORETYPE),
// "openblas-haswell" (AVX2) and "openblas-skylakex" (AVX-512); for step the toolkit's
// "packed-avx2" or "packed-avx512" kernels, or "gemm" (OpenBLAS through gemm(), the class
// of the shape deciding which copy).
//
// The spelling of a choice is what ATTEND_GEMM accepts (core/gemm.h) and what the header
// lines and run.json show: "small=openblas-haswell,rows=openblas,large=openblas,
// step=packed-avx2". A calibration's result per thread count lives in a small cache file
// (gemm_cache_parse, gemm_cache_format) keyed by the CPU and the OpenBLAS build.
#ifndef CORE_GEMM_CHOICE_H
#define CORE_GEMM_CHOICE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/error.h"
#include "core/gemm.h"

typedef enum { GEMM_SMALL, GEMM_ROWS, GEMM_LARGE, GEMM_STEP, GEMM_CLASSES } GemmClass;

typedef enum {
    KERNEL_OPENBLAS,           // OpenBLAS's own core type (or the user's OPENBLAS_CORETYPE)
    KERNEL_OPENBLAS_HASWELL,   // OPENBLAS_CORETYPE=HASWELL
    KERNEL_OPENBLAS_SKYLAKEX,  // OPENBLAS_CORETYPE=SKYLAKEX
    KERNEL_PACKED_AVX2,        // core/gemm_packed.h's AVX2 kernel
    KERNEL_PACKED_AVX512,      // and its AVX-512 one
    KERNEL_VIA_GEMM,           // step only: gemm() on the unpacked weight
    GEMM_KERNELS
} GemmKernel;

typedef struct {
    GemmKernel kernel[GEMM_CLASSES];
} GemmChoice;

const char *gemm_class_name(GemmClass c);
const char *gemm_kernel_name(GemmKernel k);

// The class of C (M, N) = op(A) (M, K) op(B) (K, N) through gemm().
GemmClass gemm_class_of(int M, int N, int K);

// Whether kernel k may serve class c, and whether a CPU of isa runs it.
bool gemm_kernel_serves(GemmKernel k, GemmClass c);
bool gemm_kernel_runs(GemmKernel k, CpuIsa isa);
// The OpenBLAS core type a kernel loads the library with ("HASWELL", "SKYLAKEX"), or NULL
// for KERNEL_OPENBLAS (the library decides) and for the toolkit's kernels.
const char *gemm_kernel_coretype(GemmKernel k);

// The choice a table keyed by the CPU's instruction set makes (no measurement): OpenBLAS
// with SKYLAKEX on AVX-512, HASWELL on AVX2, its own choice without either (and for every
// OpenBLAS class when library_coretype: the user set OPENBLAS_CORETYPE, or asked for the
// library's choice), and the widest packed kernel for step.
GemmChoice gemm_choice_by_isa(CpuIsa isa, bool library_coretype);

// Parses spec: one kernel name for every class it serves ("openblas-haswell" sets small,
// rows and large; "packed-avx2" sets step), or CLASS=KERNEL pairs separated by commas; the
// classes it does not name keep base's kernels. Fails (one line naming the pair and the
// reason) on an unknown class or kernel, a kernel that cannot serve its class, or one this
// CPU (isa) cannot run.
int gemm_choice_parse(GemmChoice *out, const char *spec, const GemmChoice *base, CpuIsa isa,
                      Error *err);
// "small=...,rows=...,large=...,step=..." into out (cap bytes).
void gemm_choice_format(char *out, size_t cap, const GemmChoice *c);
bool gemm_choice_equal(const GemmChoice *a, const GemmChoice *b);

// --- the cache file -------------------------------------------------------------------------
//     attend gemm choice 1
//     key AMD EPYC 9R14 96-Core Processor; avx512; OpenBLAS 0.3.21 DYNAMIC_ARCH ...
//     threads 1 small=openblas-haswell,rows=openblas-haswell,large=openblas,step=packed-avx512
//     threads 2 ...
// One "threads" line per thread count calibrated (at most GEMM_CACHE_MAX, each once).
enum { GEMM_CACHE_MAX = 16, GEMM_KEY_MAX = 400 };
typedef struct {
    char key[GEMM_KEY_MAX];
    int n;
    int threads[GEMM_CACHE_MAX];
    GemmChoice choice[GEMM_CACHE_MAX];
} GemmCache;

// Parses a cache file's text (what gemm_cache_format writes); isa checks that every kernel
// runs here. Fails with "line N: REASON" on anything else (a torn or hand-edited file):
// the caller calibrates again.
int gemm_cache_parse(GemmCache *out, const char *text, CpuIsa isa, Error *err);
// The file's text into out (cap bytes); false when it does not fit.
bool gemm_cache_format(char *out, size_t cap, const GemmCache *c);
// The entry for threads, or NULL.
const GemmChoice *gemm_cache_find(const GemmCache *c, int threads);
// Sets (adds or replaces) the entry for threads; false when the cache is full.
bool gemm_cache_set(GemmCache *c, int threads, const GemmChoice *choice);

// The cache file's path: $XDG_CACHE_HOME/attend/gemm-choice, else
// $HOME/.cache/attend/gemm-choice (XDG_CACHE_HOME counts only when absolute). false
// when neither variable gives a path.
bool gemm_cache_path(char *out, size_t cap);

#endif
