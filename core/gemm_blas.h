// gemm_blas.h: the copies of OpenBLAS one process holds, one per core type.
//
// OpenBLAS reads OPENBLAS_CORETYPE once, when the library loads, and then runs that core
// type's kernels for every call. To give each class of product (core/gemm_choice.h) the
// core type that measures best, each kernel of KERNEL_OPENBLAS* gets its own copy: the
// first one loaded with dlopen, the others with dlmopen into a namespace of their own
// (each with its own thread pool and work buffers; a copy is loaded only when a choice or
// a calibration needs it, so a run whose classes agree holds one). The environment's
// OPENBLAS_CORETYPE is set for the load of a forced core type and put back after it;
// KERNEL_OPENBLAS loads with yours, or with none (the library's own detection).
#ifndef CORE_GEMM_BLAS_H
#define CORE_GEMM_BLAS_H

#include <stdbool.h>

#include "core/gemm_choice.h"

typedef void (*BlasSgemm)(int order, int ta, int tb, int M, int N, int K, float alpha,
                          const float *A, int lda, const float *B, int ldb, float beta, float *C,
                          int ldc);

typedef struct {
    BlasSgemm sgemm;
    void (*set_threads)(int n);  // NULL when the library has none
    char config[160];            // openblas_get_config(), e.g. "OpenBLAS 0.3.21 ... Zen ..."
    char corename[32];           // openblas_get_corename(), e.g. "Haswell"
} BlasLib;

// The copy for kernel k (one of KERNEL_OPENBLAS*), loaded at first use with every copy's
// current thread count; thread-safe. Ends the program with one line when OpenBLAS cannot
// be opened.
const BlasLib *blas_lib(GemmKernel k);
// The copy for k when it is loaded already, else NULL.
const BlasLib *blas_lib_loaded(GemmKernel k);
// Threads for every copy, loaded now or later (>= 1).
void blas_set_threads(int n);

// C = alpha op(A) op(B) + beta C, row-major, through lib.
void blas_sgemm(const BlasLib *lib, bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);

#endif
