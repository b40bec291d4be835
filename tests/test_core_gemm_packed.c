// test_core_gemm_packed.c: gemm_packed with every kernel this CPU runs (and the OpenBLAS
// fallback) against gemm_ref (plain loop, double accumulation) on awkward shapes: row
// counts that split into unequal tiles, columns that end inside a panel or a vector, the
// first N columns of a wider matrix, K = 0 and 1, both op(B), beta 0, 1 and 0.5, padded
// leading dimensions; the panels' layout after packed_pack_part in parts, element by
// element against its definition.
//
// Tolerance, as test_core_gemm.c: |C - ref| <= 1e-6 + 2e-6 sqrt(K + 1) (sum_k |a b| + |beta c|).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/gemm.h"
#include "core/gemm_packed.h"
#include "core/rng.h"
#include "tests/support/test.h"

static void fill(float *x, size_t n, Rng *rng) {
    for (size_t i = 0; i < n; i++) x[i] = 2.0f * rng_uniform(rng) - 1.0f;
}

static const CpuIsa kernels[] = {CPU_ISA_NONE, CPU_ISA_AVX2, CPU_ISA_AVX512};
enum { KERNELS = sizeof kernels / sizeof kernels[0] };

// op(B) is (K, Np); the product uses its first N columns. Returns elements out of
// tolerance (reporting the first), or -1 when this CPU cannot run the kernel.
static int packed_case(CpuIsa kernel, bool trans, int M, int N, int Np, int K, float beta,
                       int pad, Rng *rng) {
    int b_rows = trans ? Np : K, b_cols = trans ? K : Np;
    int lda = K + pad, ldb = b_cols + pad, ldc = N + pad;
    float *A = xmalloc(((size_t)M * lda + 1) * sizeof *A);
    float *B = xmalloc(((size_t)b_rows * ldb + 1) * sizeof *B);
    float *C = xmalloc(((size_t)M * ldc + 1) * sizeof *C);
    float *C0 = xmalloc(((size_t)M * ldc + 1) * sizeof *C0);
    float *R = xmalloc(((size_t)M * ldc + 1) * sizeof *R);
    fill(A, (size_t)M * lda, rng);
    fill(B, (size_t)b_rows * ldb, rng);
    fill(C0, (size_t)M * ldc, rng);
    memcpy(C, C0, (size_t)M * ldc * sizeof *C);
    memcpy(R, C0, (size_t)M * ldc * sizeof *R);
    if (beta == 0.0f)  // beta 0 must ignore what C held
        for (size_t i = 0; i < (size_t)M * ldc; i++)
            if (i % ldc < (size_t)N) C[i] = NAN;
    PackedMatrix pm;
    packed_alloc(&pm, K, Np);
    packed_pack(&pm, trans, B, ldb);
    int bad = -1;
    if (gemm_packed_with(kernel, M, N, A, lda, &pm, beta, C, ldc)) {
        gemm_ref(false, trans, M, N, K, 1.0f, A, lda, B, ldb, beta, R, ldc);
        bad = 0;
        for (int i = 0; i < M; i++)
            for (int j = 0; j < ldc; j++) {
                size_t at = (size_t)i * ldc + j;
                if (j >= N) {  // padding columns untouched
                    if (C[at] != C0[at]) bad++;
                    continue;
                }
                double mag = beta != 0.0f ? fabs(beta * C0[at]) : 0.0;
                for (int k = 0; k < K; k++)
                    mag += fabs((double)A[(size_t)i * lda + k] *
                                (trans ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j]));
                double tol = 1e-6 + 2e-6 * sqrt((double)K + 1) * mag;
                if (!(fabs((double)C[at] - R[at]) <= tol)) {
                    if (!bad)
                        printf("  %s trans=%d M=%d N=%d of %d K=%d beta=%g pad=%d: C[%d,%d] = %.9g, ref %.9g\n",
                               cpu_isa_name(kernel), trans, M, N, Np, K, beta, pad, i, j,
                               C[at], R[at]);
                    bad++;
                }
            }
    }
    packed_free(&pm);
    free(A), free(B), free(C), free(C0), free(R);
    return bad;
}

static void test_packed_matches_reference(void) {
    Rng rng;
    rng_seed(&rng, 11);
    const int Ms[] = {1, 5, 7, 10, 11, 23, 50}, Ks[] = {0, 1, 7, 33, 130};
    const int Ns[][2] = {{1, 1}, {16, 16}, {17, 17}, {31, 31}, {32, 32}, {33, 33}, {70, 70},
                         {8, 70}, {40, 70}, {20, 33}};
    const float betas[] = {0.0f, 1.0f, 0.5f};
    int ran = 0;
    for (int kk = 0; kk < KERNELS; kk++)
        for (size_t m = 0; m < sizeof Ms / sizeof *Ms; m++)
            for (size_t k = 0; k < sizeof Ks / sizeof *Ks; k++)
                for (size_t n = 0; n < sizeof Ns / sizeof *Ns; n++)
                    for (int trans = 0; trans < 2; trans++) {
                        float beta = betas[(m + k + n + trans) % 3];
                        int pad = (int)((m + n) % 3);
                        int bad = packed_case(kernels[kk], trans, Ms[m], Ns[n][0], Ns[n][1],
                                              Ks[k], beta, pad, &rng);
                        if (bad < 0) continue;
                        ran++;
                        EXPECT(bad == 0, "%s: %d elements off", cpu_isa_name(kernels[kk]), bad);
                    }
    printf("  best kernel here: %s; %d cases\n", cpu_isa_name(cpu_isa()), ran);
    EXPECT(ran >= 700, "only %d cases ran: the fallback alone gives 700", ran);
}

// Every beta over every kernel for the model's shapes: 50 rows by a (1024, 520) weight.
static void test_packed_lstm_shapes(void) {
    Rng rng;
    rng_seed(&rng, 12);
    for (int kk = 0; kk < KERNELS; kk++)
        for (int trans = 0; trans < 2; trans++) {
            int bad = trans ? packed_case(kernels[kk], true, 50, 1024, 1024, 520, 1.0f, 0, &rng)
                            : packed_case(kernels[kk], false, 50, 520, 520, 1024, 0.0f, 0, &rng);
            if (bad >= 0) EXPECT(bad == 0, "%s trans %d: %d elements off", cpu_isa_name(kernels[kk]), trans, bad);
        }
}

// A row's result is the same whichever other rows share the call, so splitting a batch
// over workers changes nothing; and a repack after B changes gives the new product.
static void test_packed_rows_independent_and_repack(void) {
    Rng rng;
    rng_seed(&rng, 13);
    const int M = 50, K = 77, N = 45;
    float *A = xmalloc(sizeof(float) * M * K), *B = xmalloc(sizeof(float) * K * N);
    float *C = xmalloc(sizeof(float) * M * N), *S = xmalloc(sizeof(float) * M * N);
    fill(A, (size_t)M * K, &rng);
    fill(B, (size_t)K * N, &rng);
    PackedMatrix pm;
    packed_alloc(&pm, K, N);
    packed_pack(&pm, false, B, N);
    gemm_packed(M, N, A, K, &pm, 0.0f, C, N);
    // rows 0..16 and 17..49 in two calls (tiles of other sizes)
    gemm_packed(17, N, A, K, &pm, 0.0f, S, N);
    gemm_packed(M - 17, N, A + 17 * K, K, &pm, 0.0f, S + 17 * N, N);
    if (pm.panels) {  // the fallback (OpenBLAS) promises no such thing
        int diff = 0;
        for (int i = 0; i < M * N; i++) diff += C[i] != S[i];
        EXPECT(diff == 0, "%d elements differ between one call and two", diff);
    }
    for (int i = 0; i < K * N; i++) B[i] *= -2.0f;
    packed_pack(&pm, false, B, N);
    gemm_packed(M, N, A, K, &pm, 0.0f, S, N);
    double worst = 0.0;
    for (int i = 0; i < M * N; i++) worst = fmax(worst, fabs((double)S[i] + 2.0 * C[i]));
    EXPECT(worst < 1e-4, "after the repack, worst |S + 2C| = %g", worst);
    packed_free(&pm);
    free(A), free(B), free(C), free(S);
}

// The first K rows of op(B) only (gemm_packed_k): against gemm_ref over those rows, and,
// with every kernel, bit for bit gemm_packed on an A that is zero past column K (an LSTM's
// first step, whose h_{t-1} part is zero).
static void test_packed_first_rows(void) {
    Rng rng;
    rng_seed(&rng, 14);
    const int M = 23, Kfull = 77, N = 45, Ks[] = {0, 1, 30, 76, 77};
    float *A = xmalloc(sizeof(float) * M * Kfull), *B = xmalloc(sizeof(float) * Kfull * N);
    float *C = xmalloc(sizeof(float) * M * N), *F = xmalloc(sizeof(float) * M * N);
    float *R = xmalloc(sizeof(float) * M * N), *C0 = xmalloc(sizeof(float) * M * N);
    fill(B, (size_t)Kfull * N, &rng);
    fill(C0, (size_t)M * N, &rng);
    for (int trans = 0; trans < 2; trans++) {
        float *Bt = xmalloc(sizeof(float) * Kfull * N);  // op(B) = Bt^T: Bt (N, Kfull)
        for (int k = 0; k < Kfull; k++)
            for (int n = 0; n < N; n++) Bt[(size_t)n * Kfull + k] = B[(size_t)k * N + n];
        PackedMatrix pm;
        packed_alloc(&pm, Kfull, N);
        packed_pack(&pm, trans, trans ? Bt : B, trans ? Kfull : N);
        for (size_t kk = 0; kk < sizeof Ks / sizeof *Ks; kk++) {
            const int K = Ks[kk];
            fill(A, (size_t)M * Kfull, &rng);
            for (int i = 0; i < M; i++)
                for (int k = K; k < Kfull; k++) A[(size_t)i * Kfull + k] = 0.0f;
            for (int kn = 0; kn < KERNELS; kn++) {
                memcpy(C, C0, sizeof(float) * M * N), memcpy(F, C0, sizeof(float) * M * N);
                memcpy(R, C0, sizeof(float) * M * N);
                if (!gemm_packed_k_with_isa(kernels[kn], M, N, K, A, Kfull, &pm, 0.5f, C, N)) continue;
                CHECK(gemm_packed_with(kernels[kn], M, N, A, Kfull, &pm, 0.5f, F, N));
                gemm_ref(false, false, M, N, K, 1.0f, A, Kfull, B, N, 0.5f, R, N);
                int off = 0, differ = 0;
                for (int i = 0; i < M * N; i++) {
                    off += !(fabsf(C[i] - R[i]) <= 1e-4f);
                    differ += C[i] != F[i];
                }
                EXPECT(off == 0, "%s trans %d K %d: %d elements off the reference",
                       cpu_isa_name(kernels[kn]), trans, K, off);
                if (kernels[kn] != CPU_ISA_NONE)  // OpenBLAS promises no order
                    EXPECT(differ == 0, "%s trans %d K %d: %d elements differ from the full product",
                           cpu_isa_name(kernels[kn]), trans, K, differ);
            }
        }
        packed_free(&pm);
        free(Bt);
    }
    free(A), free(B), free(C), free(F), free(R), free(C0);
}

// packed_pack_part: the parts, packed in any order (here last first), leave each panel
// element where the layout says (core/gemm_packed.h: panel p, row k, column c holds
// op(B)[k][32 p + c], 0 past N), exactly; B with a padded ldb, N inside a panel and on one,
// K past and short of the transposed pack's row blocks, 1 to 5 parts (more parts than
// panels included).
static void test_pack_parts_layout(void) {
    const int shapes[][2] = {{37, 70}, {130, 64}, {5, 3}, {200, 97}};
    Rng rng;
    rng_seed(&rng, 17);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int trans = 0; trans <= 1; trans++)
            for (int parts = 1; parts <= 5; parts++) {
                const int K = shapes[s][0], N = shapes[s][1];
                const int ldb = (trans ? K : N) + 3, rows = trans ? N : K;
                float *B = xmalloc((size_t)rows * ldb * sizeof *B);
                fill(B, (size_t)rows * ldb, &rng);
                PackedMatrix pm;
                packed_alloc(&pm, K, N);
                if (!pm.panels) {  // no packing kernel on this CPU: nothing to lay out
                    packed_free(&pm);
                    free(B);
                    return;
                }
                const size_t np = ((size_t)N + 31) / 32;
                for (size_t i = 0; i < np * K * 32; i++) pm.panels[i] = NAN;
                for (int part = parts - 1; part >= 0; part--)
                    packed_pack_part(&pm, trans, B, ldb, part, parts);
                int bad = 0;
                for (size_t p = 0; p < np; p++)
                    for (int k = 0; k < K; k++)
                        for (int c = 0; c < 32; c++) {
                            const int n = (int)p * 32 + c;
                            const float want = n >= N ? 0.0f
                                               : trans ? B[(size_t)n * ldb + k]
                                                       : B[(size_t)k * ldb + n];
                            const float got = pm.panels[(p * K + k) * 32 + c];
                            bad += memcmp(&got, &want, sizeof got) != 0;
                        }
                EXPECT(bad == 0, "K %d N %d trans %d in %d parts: %d elements misplaced", K, N,
                       trans, parts, bad);
                packed_free(&pm);
                free(B);
            }
}

int main(void) {
    RUN(test_packed_matches_reference);
    RUN(test_packed_first_rows);
    RUN(test_packed_lstm_shapes);
    RUN(test_packed_rows_independent_and_repack);
    RUN(test_pack_parts_layout);
    return test_summary();
}
