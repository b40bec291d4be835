// gemm_packed.h: products of small batches with a weight matrix packed once for many calls.
//
//   C (M, N) = A (M, K) @ op(B) (K, N) + beta * C        row-major; op(B) = B or B^T
//
// A recurrent model multiplies the same weights with a batch of a few dozen rows at every
// step: DRAW's LSTMs do it 64 times forward and 64 times backward per training step, with
// 50-100 rows. OpenBLAS copies ("packs") the weight matrix into its kernel's layout in
// every call; in DRAW's training that copying took about 11 % of the time (perf, one
// thread), as long as a third of the multiplications themselves. A PackedMatrix holds
// op(B) once in the layout a register-blocked kernel reads straight through: panels of 32
// columns, each K rows of 32 floats, contiguous (the last panel zero-padded). Pack it again
// after every change of B (an optimiser step).
//
// The kernel keeps a tile of up to 10 rows by 32 columns of C in AVX-512 registers (AVX2:
// 6 rows by 16 columns) while k runs over all of K, one broadcast of A and two loads of the
// panel per k; the rows of C are split into near-equal tiles (50 rows: five of 10). Which
// runs is the kernel choice's "step" class (core/gemm.h: measured, cached or forced with
// ATTEND_GEMM; the build needs no -march flag): the AVX-512 kernel, the AVX2 one, or gemm()
// on B itself ("gemm", where OpenBLAS measures faster); on a CPU with neither instruction
// set nothing is packed and gemm_packed always calls gemm().
//
// Each element of C is one FMA chain over k = 0..K-1 in order, so a row's result does not
// depend on the other rows of the call (a batch split over workers gives the same numbers
// as the whole batch), but differs from OpenBLAS's in the last bits.
#ifndef CORE_GEMM_PACKED_H
#define CORE_GEMM_PACKED_H

#include <stdbool.h>

#include "core/gemm.h"

typedef struct {
    int K, N;             // op(B) is (K, N)
    const float *B;       // as given to packed_pack, for the fallback
    bool trans;
    int ldb;
    float *panels;        // ceil(N / 32) panels of (K, 32); NULL when no kernel runs here
} PackedMatrix;

// Room for an op(B) of (K, N); packs nothing yet.
void packed_alloc(PackedMatrix *pm, int K, int N);
void packed_free(PackedMatrix *pm);
// Packs op(B): B is (K, N) with row stride ldb, or with trans (N, K), op(B) = B^T. B must
// stay alive and unchanged until the next packed_pack (the fallback reads it).
void packed_pack(PackedMatrix *pm, bool trans, const float *B, int ldb);
// Part `part` (0 .. parts - 1) of packed_pack's work: the panels [np part / parts,
// np (part + 1) / parts) of the np = ceil(N / 32), so that threads may pack one matrix
// together (each calling it with its own part, the same trans, B and ldb); after all the
// parts pm holds what packed_pack leaves, bit for bit.
void packed_pack_part(PackedMatrix *pm, bool trans, const float *B, int ldb, int part,
                      int parts);

// C = A @ op(B)[:, 0:N] + beta * C for N <= pm->N (the first N columns), with the best
// kernel of this CPU. beta == 0: C is not read (NaN in it is ignored).
void gemm_packed(int M, int N, const float *A, int lda, const PackedMatrix *pm, float beta,
                 float *C, int ldc);
// C = A[:, 0:K] @ op(B)[0:K, 0:N] + beta * C for K <= pm->K: the product over op(B)'s first
// K rows only, for a caller whose A is zero past column K (an LSTM's first step, with no
// h_{t-1}). Each element is the FMA chain of gemm_packed stopped after k = K - 1; the
// chain's further terms, 0 times a finite weight, would leave it unchanged, so the result
// is gemm_packed's on such an A (up to the sign of a zero).
void gemm_packed_k(int M, int N, int K, const float *A, int lda, const PackedMatrix *pm,
                   float beta, float *C, int ldc);
bool gemm_packed_k_with_isa(CpuIsa kernel, int M, int N, int K, const float *A, int lda,
                            const PackedMatrix *pm, float beta, float *C, int ldc);
// The same with the kernel of a given instruction set (CPU_ISA_NONE: gemm() on B). Returns
// false, touching nothing, when this CPU cannot run it; tests and benchmarks run each one
// the CPU has.
bool gemm_packed_with(CpuIsa kernel, int M, int N, const float *A, int lda,
                      const PackedMatrix *pm, float beta, float *C, int ldc);

#endif
