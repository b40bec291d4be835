// gemm.h: the one matrix-multiply entry point of the toolkit, row-major, cblas-shaped.
//
//   C (M, N) = alpha * op(A) (M, K) @ op(B) (K, N) + beta * C
//   op(X) = X or X^T; lda/ldb/ldc are row strides of the matrices as stored.
//
// gemm() runs OpenBLAS's sgemm. OpenBLAS is opened at first use (dlopen) after
// choosing its kernel for this CPU: Debian's build misdetects recent Xeons and
// falls back to a generic kernel about 4.7x slower (REFERENCE.md section 5), and
// the choice (OPENBLAS_CORETYPE) must be made before the library initialises.
// A user's own OPENBLAS_CORETYPE is respected; ATTEND_BLAS_DEFAULT_CORETYPE=1 in the
// environment leaves the choice to OpenBLAS (benchmarks use it to compare). gemm_ref() is the plain loop that
// tests compare against.
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

// Threads OpenBLAS may use (>= 1). Default: 1 until set.
void gemm_set_threads(int n);

// OpenBLAS maps a 128 MiB work buffer (its BUFFER_SIZE on x86-64) for each thread that runs
// a GEMM at the same time, at its first GEMM. Under an address-space limit (`ulimit -v`,
// RLIMIT_AS) that leaves no room for one, OpenBLAS 0.3.21 (Debian 12's) retries the mmap
// forever instead of failing (OpenBLAS issue 5289; 0.3.30 exits instead). With such a
// limit, this fails with one line unless (callers x 128 + 64) MiB (the buffers, and room
// for the library itself) can be mapped now; the probe is unmapped at once. Without a
// limit: 0 at once. Call it after the set-up's allocations, before the first GEMM.
int gemm_check_address_space(int callers, Error *err);

// The core type OpenBLAS was told to use ("SKYLAKEX", ... or "default"), and the
// library's own description of itself; for logs and benchmarks.
const char *gemm_backend(void);

// Writes into out (cap bytes) "OPENBLAS_CORETYPE=X" for the core type in force: yours
// (OPENBLAS_CORETYPE in the environment, user non-NULL and non-empty) or else the one the
// toolkit picks for isa (SKYLAKEX for AVX-512, HASWELL for AVX2), or "default" when there
// is neither (CPU_ISA_NONE: OpenBLAS decides). When yours differs from the toolkit's pick
// (letter case aside), the pick follows: "OPENBLAS_CORETYPE=Haswell, yours; SKYLAKEX suits
// this CPU": an environment that pins a narrower kernel than the CPU runs costs speed
// (bench/RESULTS.md has a measure) and shows in every log that names the backend.
void gemm_describe_coretype(char *out, size_t cap, const char *user, CpuIsa isa);

#endif
