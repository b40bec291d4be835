// gemm.h: the one matrix-multiply entry point of the toolkit, row-major, cblas-shaped.
//
//   C (M, N) = alpha * op(A) (M, K) @ op(B) (K, N) + beta * C
//   op(X) = X or X^T; lda/ldb/ldc are row strides of the matrices as stored.
//
// gemm() runs OpenBLAS's sgemm with the core type chosen for the product's class (small,
// rows, large: core/gemm_choice.h), and core/gemm_packed.h's products take the kernel
// chosen for "step". The choice is made by measurement, per thread count, the first time a
// count is used (gemm_set_threads, or the first product: one thread), by default:
//   ATTEND_GEMM unset or "auto"  the cached choice for this machine (the file
//                  $XDG_CACHE_HOME/attend/gemm-choice or ~/.cache/attend/gemm-choice, keyed
//                  by the CPU model, its instruction set and the OpenBLAS build), or else a
//                  calibration of about a second (core/gemm_calibrate.h) whose result is
//                  added to the file; a file that does not parse is measured again, with a
//                  one-line warning. The calibration runs only when the 1-minute load
//                  average is at most ATTEND_GEMM_MAX_LOAD (default: the CPU count): on a
//                  busy machine the table serves, uncached, until a run finds it quiet.
//   "calibrate"    measures again, however busy the machine, and replaces the cached entry.
//   "isa"          no measurement: the table keyed by the CPU's instruction set (OpenBLAS
//                  with SKYLAKEX on AVX-512, HASWELL on AVX2, the widest packed kernel), as
//                  before calibration existed; tests/run.sh sets it so that the suite's
//                  results never depend on a measurement.
//   a choice       "openblas-haswell", or "small=...,rows=...,step=packed-avx2" (the classes
//                  it does not name take the table's kernels): what the header lines print.
// Your own OPENBLAS_CORETYPE is respected: every OpenBLAS class then runs it, with the
// table's packed kernel, and nothing is measured; ATTEND_BLAS_DEFAULT_CORETYPE=1 in the
// environment does the same with OpenBLAS's own detection. So does an address-space limit
// (ulimit -v), under which a second OpenBLAS copy's buffers may not fit. A run is
// bit-identical for the same choice and thread count: a different OpenBLAS core type, or
// the packed kernel against OpenBLAS, changes the last bits of results (README.md, "Speed").
// gemm_ref() is the plain loop that tests compare against.
#ifndef CORE_GEMM_H
#define CORE_GEMM_H

#include <stdbool.h>
#include <stddef.h>

#include "core/error.h"

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float *A, int lda,
          const float *B, int ldb, float beta, float *C, int ldc);

// Plain triple loop with double accumulation; same contract as gemm().
void gemm_ref(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float *A,
              int lda, const float *B, int ldb, float beta, float *C, int ldc);

// The widest vector instruction set this CPU (and its OS) runs that the toolkit's kernels
// use: AVX-512 (F, BW, VL), else AVX2 with FMA, else none. Asked once, then remembered. It
// picks OpenBLAS's core type (SKYLAKEX, HASWELL) and core/gemm_packed.h's kernel.
typedef enum { CPU_ISA_NONE, CPU_ISA_AVX2, CPU_ISA_AVX512 } CpuIsa;
CpuIsa cpu_isa(void);
// "avx512", "avx2", "none".
const char *cpu_isa_name(CpuIsa isa);
// /proc/cpuinfo's model name into buf (n bytes); "unknown" when there is none.
void cpu_model_name(char *buf, int n);

// Threads OpenBLAS may use (>= 1). Default: 1 until set.
void gemm_set_threads(int n);
// The count of the last gemm_set_threads (1 before any): what a caller that splits its own
// work over threads (models/sat_lstm_decode.c) takes as the threads it may use.
int gemm_threads(void);

// OpenBLAS maps a 128 MiB work buffer (its BUFFER_SIZE on x86-64) for each thread that runs
// a GEMM at the same time, at its first GEMM. Under an address-space limit (`ulimit -v`,
// RLIMIT_AS) that leaves no room for one, OpenBLAS 0.3.21 (Debian 12's) retries the mmap
// forever instead of failing (OpenBLAS issue 5289; 0.3.30 exits instead). With such a
// limit, this fails with one line unless (callers x 128 + 64) MiB (the buffers, and room
// for the library itself) can be mapped now; the probe is unmapped at once. Without a
// limit: 0 at once. Call it after the set-up's allocations, before the first GEMM.
int gemm_check_address_space(int callers, Error *err);

// For logs, header lines and benchmarks: the library's description of itself (the copy
// serving "rows"), the core type (as gemm_describe_coretype says it, or "per class"), and
// the kernels of the current thread count with where they came from:
//   "OpenBLAS 0.3.21 ... (OPENBLAS_CORETYPE=per class); kernels small=openblas-haswell,
//    rows=openblas,large=openblas,step=packed-avx512 (cached, 2 threads)"
const char *gemm_backend(void);
// The current kernels alone, as ATTEND_GEMM takes them (for run.json).
void gemm_kernels(char *out, size_t cap);
// The instruction set of the packed kernel chosen for step (CPU_ISA_NONE: gemm()).
CpuIsa gemm_step_kernel(void);

// Writes into out (cap bytes) "OPENBLAS_CORETYPE=X" for the core type in force: yours
// (OPENBLAS_CORETYPE in the environment, user non-NULL and non-empty) or else the one the
// toolkit picks for isa (SKYLAKEX for AVX-512, HASWELL for AVX2), or "default" when there
// is neither (CPU_ISA_NONE: OpenBLAS decides). When yours differs from the toolkit's pick
// (letter case aside), the pick follows: "OPENBLAS_CORETYPE=Haswell, yours; SKYLAKEX suits
// this CPU": an environment that pins a narrower kernel than the CPU runs costs speed
// (bench/RESULTS.md has a measure) and shows in every log that names the backend.
void gemm_describe_coretype(char *out, size_t cap, const char *user, CpuIsa isa);

#endif
