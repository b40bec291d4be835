// test_core_gemm.c: gemm (OpenBLAS) against gemm_ref (plain loop) on awkward shapes, all four
// transpose combinations, alpha/beta other than 0/1 and padded leading dimensions.
//
// Tolerance: float sgemm against a double-accumulated reference may differ by rounding in
// each of the K products and sums, so each C element is compared with
//     |gemm - ref| <= 1e-6 + 2e-6 * sqrt(K) * (|alpha| * sum_k |a_ik b_kj| + |beta c_ij|)
// a fixed relative bound on the magnitudes that went into that element.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "core/check.h"
#include "core/gemm.h"
#include "core/rng.h"
#include "tests/support/test.h"

static void fill(float *x, size_t n, Rng *rng) {
    for (size_t i = 0; i < n; i++) x[i] = 2.0f * rng_uniform(rng) - 1.0f;
}

// Returns the number of elements out of tolerance (and reports the first).
static int compare_case(bool ta, bool tb, int M, int N, int K, float alpha, float beta, int pad,
                        Rng *rng) {
    // Stored shapes: A is (M, K) or (K, M) when transposed; likewise B.
    int a_rows = ta ? K : M, a_cols = ta ? M : K;
    int b_rows = tb ? N : K, b_cols = tb ? K : N;
    int lda = a_cols + pad, ldb = b_cols + pad, ldc = N + pad;
    float *A = xmalloc((size_t)a_rows * lda * sizeof *A + 4);
    float *B = xmalloc((size_t)b_rows * ldb * sizeof *B + 4);
    float *C = xmalloc((size_t)M * ldc * sizeof *C + 4);
    float *R = xmalloc((size_t)M * ldc * sizeof *R + 4);
    fill(A, (size_t)a_rows * lda, rng);
    fill(B, (size_t)b_rows * ldb, rng);
    fill(C, (size_t)M * ldc, rng);
    memcpy(R, C, (size_t)M * ldc * sizeof *C);
    float *C0 = xmalloc((size_t)M * ldc * sizeof *C0 + 4);
    memcpy(C0, C, (size_t)M * ldc * sizeof *C);
    gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    gemm_ref(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, R, ldc);
    int bad = 0;
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < ldc; j++) {
            size_t at = (size_t)i * ldc + j;
            if (j >= N) {  // padding columns must be untouched
                if (C[at] != C0[at] || R[at] != C0[at]) bad++;
                continue;
            }
            double mag = 0.0;
            for (int k = 0; k < K; k++) {
                float a = ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
                float b = tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
                mag += fabs((double)a * b);
            }
            mag = fabs(alpha) * mag + (beta != 0.0f ? fabs(beta * C0[at]) : 0.0);
            double tol = 1e-6 + 2e-6 * sqrt((double)K + 1) * mag;
            if (!(fabs((double)C[at] - R[at]) <= tol)) {
                if (!bad)
                    printf("  ta=%d tb=%d M=%d N=%d K=%d alpha=%g beta=%g pad=%d: C[%d,%d] = %.9g, ref %.9g\n",
                           ta, tb, M, N, K, alpha, beta, pad, i, j, C[at], R[at]);
                bad++;
            }
        }
    }
    free(A);
    free(B);
    free(C);
    free(R);
    free(C0);
    return bad;
}

static const int shapes[][3] = {{1, 1, 1}, {7, 13, 5}, {65, 3, 129}, {3, 65, 1},
                                {33, 31, 64}, {1, 100, 17}, {128, 1, 2}};

static void test_gemm_matches_reference_all_transposes(void) {
    Rng rng;
    rng_seed(&rng, 1);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int t = 0; t < 4; t++) {
            int bad = compare_case(t & 1, t & 2, shapes[s][0], shapes[s][1], shapes[s][2], 1.0f,
                                   0.0f, 0, &rng);
            EXPECT(bad == 0, "shape %zu trans %d: %d elements off", s, t, bad);
        }
}

static void test_gemm_alpha_beta_and_leading_dims(void) {
    Rng rng;
    rng_seed(&rng, 2);
    const float ab[][2] = {{0.5f, 1.0f}, {-1.5f, 0.25f}, {2.0f, -1.0f}, {1.0f, 0.0f}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int t = 0; t < 4; t++)
            for (int c = 0; c < 4; c++) {
                int bad = compare_case(t & 1, t & 2, shapes[s][0], shapes[s][1], shapes[s][2],
                                       ab[c][0], ab[c][1], 3 + (int)s, &rng);
                EXPECT(bad == 0, "shape %zu trans %d alpha/beta %d: %d elements off", s, t, c, bad);
            }
}

// beta = 0 must ignore whatever C held (NaN included), as BLAS specifies.
static void test_gemm_beta_zero_ignores_nan(void) {
    float A[6] = {1, 2, 3, 4, 5, 6}, B[6] = {1, 0, 0, 1, 1, 1};
    float C[4] = {NAN, NAN, NAN, NAN}, R[4] = {NAN, NAN, NAN, NAN};
    gemm(false, false, 2, 2, 3, 1.0f, A, 3, B, 2, 0.0f, C, 2);
    gemm_ref(false, false, 2, 2, 3, 1.0f, A, 3, B, 2, 0.0f, R, 2);
    // [1 2 3; 4 5 6] @ [1 0; 0 1; 1 1] = [4 5; 10 11]
    const float want[4] = {4, 5, 10, 11};
    for (int i = 0; i < 4; i++) {
        EXPECT(C[i] == want[i], "gemm C[%d] = %g, want %g", i, C[i], want[i]);
        EXPECT(R[i] == want[i], "gemm_ref C[%d] = %g, want %g", i, R[i], want[i]);
    }
}

static void test_gemm_two_threads_same_result(void) {
    Rng rng;
    rng_seed(&rng, 3);
    gemm_set_threads(2);
    int bad = compare_case(false, true, 200, 150, 300, 1.0f, 0.5f, 1, &rng);
    gemm_set_threads(1);
    EXPECT(bad == 0, "%d elements off with 2 threads", bad);
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
// This process's address space in bytes (VmSize), or 0.
static size_t address_space_now(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    unsigned long long kib = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmSize: %llu kB", &kib) == 1) break;
    if (f) fclose(f);
    return (size_t)kib * 1024;
}
#endif

// gemm_check_address_space: no limit, nothing to check; a limit with room for one 128 MiB
// OpenBLAS buffer (and the 64 MiB slack) but not for three: one caller passes, three fail
// with the line naming the limit; a limit too tight for one fails.
static void test_gemm_address_space_check(void) {
    Error err;
    EXPECT(gemm_check_address_space(4, &err) == 0, "no limit, but: %s", err.msg);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    printf("  (the limited part skipped: a sanitizer's shadow memory needs an unlimited "
           "address space)\n");
#else
    struct rlimit old;
    const size_t now = address_space_now(), mib = (size_t)1 << 20;
    if (getrlimit(RLIMIT_AS, &old) != 0 || old.rlim_cur != RLIM_INFINITY || now == 0) {
        printf("  (the limited part skipped: a limit is set already, or no VmSize)\n");
        return;
    }
    struct rlimit lim = old;
    lim.rlim_cur = now + 300 * mib;  // 192 MiB fit, 448 do not
    EXPECT(setrlimit(RLIMIT_AS, &lim) == 0, "setrlimit");
    EXPECT(gemm_check_address_space(1, &err) == 0, "room for one buffer, but: %s", err.msg);
    int three = gemm_check_address_space(3, &err);
    EXPECT(three != 0 && strstr(err.msg, "ulimit -v") && strstr(err.msg, "3 x 128 MiB"),
           "three buffers in 300 MiB: status %d, %s", three, three ? err.msg : "");
    lim.rlim_cur = now + 100 * mib;
    EXPECT(setrlimit(RLIMIT_AS, &lim) == 0, "setrlimit");
    EXPECT(gemm_check_address_space(1, &err) != 0, "one buffer in 100 MiB passed");
    EXPECT(setrlimit(RLIMIT_AS, &old) == 0, "limit not restored");
#endif
}

static void test_gemm_backend_named(void) {
    const char *b = gemm_backend();
    EXPECT(b && strstr(b, "OPENBLAS_CORETYPE="), "backend: %s", b ? b : "(null)");
}

static void test_gemm_describe_coretype(void) {
    static const struct {
        const char *user;
        CpuIsa isa;
        const char *want;
    } cases[] = {
        {NULL, CPU_ISA_AVX512, "OPENBLAS_CORETYPE=SKYLAKEX"},
        {"", CPU_ISA_AVX2, "OPENBLAS_CORETYPE=HASWELL"},
        {NULL, CPU_ISA_NONE, "OPENBLAS_CORETYPE=default"},
        {"Haswell", CPU_ISA_AVX512, "OPENBLAS_CORETYPE=Haswell, yours; SKYLAKEX suits this CPU"},
        {"SkylakeX", CPU_ISA_AVX512, "OPENBLAS_CORETYPE=SkylakeX"},
        {"haswell", CPU_ISA_AVX2, "OPENBLAS_CORETYPE=haswell"},
        {"SKYLAKEX", CPU_ISA_AVX2, "OPENBLAS_CORETYPE=SKYLAKEX, yours; HASWELL suits this CPU"},
        {"ZEN", CPU_ISA_NONE, "OPENBLAS_CORETYPE=ZEN"},
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof *cases); i++) {
        char got[96];
        gemm_describe_coretype(got, sizeof got, cases[i].user, cases[i].isa);
        EXPECT(strcmp(got, cases[i].want) == 0, "user %s, %s: '%s', expected '%s'",
               cases[i].user ? cases[i].user : "(unset)", cpu_isa_name(cases[i].isa), got, cases[i].want);
    }
}

int main(void) {
    RUN(test_gemm_matches_reference_all_transposes);
    RUN(test_gemm_alpha_beta_and_leading_dims);
    RUN(test_gemm_beta_zero_ignores_nan);
    RUN(test_gemm_two_threads_same_result);
    RUN(test_gemm_backend_named);
    RUN(test_gemm_describe_coretype);
    RUN(test_gemm_address_space_check);
    return test_summary();
}
