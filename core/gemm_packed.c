#include "core/gemm_packed.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define PACKED_X86 1
#endif

enum { NR = 32 };  // columns per panel

static size_t panel_count(int N) { return ((size_t)N + NR - 1) / NR; }

void packed_alloc(PackedMatrix *pm, int K, int N) {
    CHECK(K >= 0 && N >= 1, "K %d N %d", K, N);
    memset(pm, 0, sizeof *pm);
    pm->K = K, pm->N = N;
    if (cpu_isa() == CPU_ISA_NONE) return;
    size_t bytes = panel_count(N) * (size_t)(K ? K : 1) * NR * sizeof(float);
    pm->panels = aligned_alloc(64, (bytes + 63) / 64 * 64);
    CHECK(pm->panels, "out of memory packing a (%d, %d) matrix", K, N);
}

void packed_free(PackedMatrix *pm) {
    free(pm->panels);
    memset(pm, 0, sizeof *pm);
}

void packed_pack(PackedMatrix *pm, bool trans, const float *B, int ldb) {
    packed_pack_part(pm, trans, B, ldb, 0, 1);
}

void packed_pack_part(PackedMatrix *pm, bool trans, const float *B, int ldb, int part,
                      int parts) {
    const int K = pm->K, N = pm->N;
    CHECK(ldb >= (trans ? K : N), "ldb %d for a (%d, %d) op(B)%s", ldb, K, N, trans ? "^T" : "");
    CHECK(parts >= 1 && part >= 0 && part < parts, "part %d of %d", part, parts);
    pm->B = B, pm->trans = trans, pm->ldb = ldb;
    if (!pm->panels) return;
    const size_t np = panel_count(N);
    const size_t p0 = np * (size_t)part / (size_t)parts, p1 = np * (size_t)(part + 1) / (size_t)parts;
    for (size_t p = p0; p < p1; p++) {
        float *dst = pm->panels + p * (size_t)K * NR;
        const int n0 = (int)p * NR, w = N - n0 < NR ? N - n0 : NR;
        if (trans) {
            // op(B)[k][n] = B[n][k]: row n of B becomes column n - n0 of the panel. Row by
            // row of the panel, each gathered from the w source rows, in blocks of KB so that
            // the source lines (w x KB floats) stay in L1 through the block. Column by column
            // over the whole panel (as before), each panel line was written 32 times, from
            // L2: the LSTM's W^T (K 2824, N 7200) took 47-52 ms, now 24-29 (a throwaway
            // timing, AMD EPYC, one thread, load 5); the same bits either way.
            enum { KB = 64 };
            for (int k0 = 0; k0 < K; k0 += KB) {
                const int k1 = K - k0 < KB ? K : k0 + KB;
                for (int k = k0; k < k1; k++) {
                    const float *src = B + (size_t)n0 * ldb + k;
                    float *d = dst + (size_t)k * NR;
                    for (int c = 0; c < w; c++) d[c] = src[(size_t)c * ldb];
                }
            }
        } else {
            for (int k = 0; k < K; k++)
                memcpy(dst + (size_t)k * NR, B + (size_t)k * ldb + n0, sizeof(float) * w);
        }
        for (int k = 0; k < K && w < NR; k++)
            memset(dst + (size_t)k * NR + w, 0, sizeof(float) * (NR - w));
    }
}

// C rows [0, M) in near-equal tiles of at most mr_max rows: tile t covers rows
// [start(t), start(t + 1)).
static int tile_start(int M, int tiles, int t) { return (int)((int64_t)M * t / tiles); }

#ifdef PACKED_X86
// Which row of the next panel tile t of T prefetches at step k: floor((t K + k) / T), kept as
// a quotient and remainder that step along with k, not a 64-bit division at every k (perf
// annotate put much of the AVX2 tile's samples on the division on a Zen 3, though timing
// the kernel showed no speed difference beyond its noise: the out-of-order core hid it).
typedef struct {
    int64_t row, rem, T;
} PrefetchRow;
static inline PrefetchRow prefetch_row_start(int K, int t, int T) {
    const int64_t at = (int64_t)t * K;
    return (PrefetchRow){at / T, at % T, T};
}
static inline void prefetch_row_step(PrefetchRow *p) {
    const bool wrap = ++p->rem == p->T;
    p->row += wrap;
    p->rem = wrap ? 0 : p->rem;
}

// --- AVX-512: a tile of MR rows by one whole panel (two vectors of 16) ---------------------
enum { MR512 = 10 };

// next: the panel after P (NULL for the last), which the tiles over P fetch into the cache
// while they compute: tile t of the T over P prefetches next's rows [t K / T, (t + 1) K / T),
// so the whole of it arrives spread over the panel's work. Without it, the first tile over
// a panel waited on memory for it: with 32 rows (a data-parallel worker's share of 64) the
// LSTM's forward shape (K 2824, N 7200) ran at 78-82 GFLOP/s, with it 100-105 (a
// throwaway timing, AMD EPYC with AVX-512, one thread; 64 rows 91 -> 101, the backward's
// shape (K 7200, N 2824) 102-104 either way). The values computed do not change.
__attribute__((target("avx512f"), always_inline)) static inline void
tile_avx512(const int MR, int K, const float *A, int lda, const float *P, float beta, float *C,
            int ldc, __mmask16 m0, __mmask16 m1, const float *next, int t, int T) {
    __m512 c0[MR512], c1[MR512];
#pragma GCC unroll 10
    for (int r = 0; r < MR; r++) c0[r] = c1[r] = _mm512_setzero_ps();
    PrefetchRow pf = prefetch_row_start(K, t, T);
    for (int k = 0; k < K; k++) {
        const __m512 b0 = _mm512_load_ps(P + (size_t)k * NR);
        const __m512 b1 = _mm512_load_ps(P + (size_t)k * NR + 16);
        if (next) {
            const float *q = next + (size_t)pf.row * NR;
            _mm_prefetch((const char *)q, _MM_HINT_T0);
            _mm_prefetch((const char *)(q + 16), _MM_HINT_T0);
            prefetch_row_step(&pf);
        }
#pragma GCC unroll 10
        for (int r = 0; r < MR; r++) {
            const __m512 a = _mm512_set1_ps(A[(size_t)r * lda + k]);
            c0[r] = _mm512_fmadd_ps(a, b0, c0[r]);
            c1[r] = _mm512_fmadd_ps(a, b1, c1[r]);
        }
    }
    const __m512 vb = _mm512_set1_ps(beta);
#pragma GCC unroll 10
    for (int r = 0; r < MR; r++) {
        float *c = C + (size_t)r * ldc;
        if (beta != 0.0f) {
            c0[r] = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, c), c0[r]);
            c1[r] = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, c + 16), c1[r]);
        }
        _mm512_mask_storeu_ps(c, m0, c0[r]);
        _mm512_mask_storeu_ps(c + 16, m1, c1[r]);
    }
}

typedef void (*Tile512)(int K, const float *A, int lda, const float *P, float beta, float *C,
                        int ldc, __mmask16 m0, __mmask16 m1, const float *next, int t, int T);
#define TILE512(n)                                                                          \
    __attribute__((target("avx512f"))) static void tile512_##n(                            \
        int K, const float *A, int lda, const float *P, float beta, float *C, int ldc,     \
        __mmask16 m0, __mmask16 m1, const float *next, int t, int T) {                     \
        tile_avx512(n, K, A, lda, P, beta, C, ldc, m0, m1, next, t, T);                    \
    }
TILE512(1) TILE512(2) TILE512(3) TILE512(4) TILE512(5)
TILE512(6) TILE512(7) TILE512(8) TILE512(9) TILE512(10)
static const Tile512 tiles512[MR512 + 1] = {NULL,       tile512_1, tile512_2, tile512_3,
                                            tile512_4,  tile512_5, tile512_6, tile512_7,
                                            tile512_8,  tile512_9, tile512_10};

static __mmask16 mask16(int w) { return w >= 16 ? 0xFFFF : w <= 0 ? 0 : (__mmask16)((1u << w) - 1); }

// Panels outermost: a panel (K x 32 floats) stays in L2 while every row tile passes over
// it, so the weights come from memory once per call.
// K: the first K rows of op(B) (at most pm->K, the panels' height).
static void gemm_avx512(int M, int N, int K, const float *A, int lda, const PackedMatrix *pm,
                        float beta, float *C, int ldc) {
    const int tiles = (M + MR512 - 1) / MR512;
    for (size_t p = 0; p < panel_count(N); p++) {
        const int n0 = (int)p * NR, w = N - n0;
        const __mmask16 m0 = mask16(w), m1 = mask16(w - 16);
        const float *P = pm->panels + p * (size_t)pm->K * NR;
        const float *next = p + 1 < panel_count(N) ? P + (size_t)pm->K * NR : NULL;
        for (int t = 0; t < tiles; t++) {
            const int r0 = tile_start(M, tiles, t), mr = tile_start(M, tiles, t + 1) - r0;
            tiles512[mr](K, A + (size_t)r0 * lda, lda, P, beta, C + (size_t)r0 * ldc + n0, ldc,
                         m0, m1, next, t, tiles);
        }
    }
}

// --- AVX2 with FMA: a tile of MR rows by half a panel (two vectors of 8) -----------------
enum { MR256 = 6 };

__attribute__((target("avx2,fma"), always_inline)) static inline void
tile_avx2(const int MR, int K, const float *A, int lda, const float *P, float beta, float *C,
          int ldc, __m256i m0, __m256i m1, const float *next, int t, int T) {
    __m256 c0[MR256], c1[MR256];
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) c0[r] = c1[r] = _mm256_setzero_ps();
    PrefetchRow pf = prefetch_row_start(K, t, T);
    for (int k = 0; k < K; k++) {
        const __m256 b0 = _mm256_load_ps(P + (size_t)k * NR);
        const __m256 b1 = _mm256_load_ps(P + (size_t)k * NR + 8);
        if (next) {  // as tile_avx512: this tile's share of the next panel's rows
            const float *q = next + (size_t)pf.row * NR;
            _mm_prefetch((const char *)q, _MM_HINT_T0);
            _mm_prefetch((const char *)(q + 16), _MM_HINT_T0);
            prefetch_row_step(&pf);
        }
#pragma GCC unroll 6
        for (int r = 0; r < MR; r++) {
            const __m256 a = _mm256_broadcast_ss(A + (size_t)r * lda + k);
            c0[r] = _mm256_fmadd_ps(a, b0, c0[r]);
            c1[r] = _mm256_fmadd_ps(a, b1, c1[r]);
        }
    }
    const __m256 vb = _mm256_set1_ps(beta);
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) {
        float *c = C + (size_t)r * ldc;
        if (beta != 0.0f) {
            c0[r] = _mm256_fmadd_ps(vb, _mm256_maskload_ps(c, m0), c0[r]);
            c1[r] = _mm256_fmadd_ps(vb, _mm256_maskload_ps(c + 8, m1), c1[r]);
        }
        _mm256_maskstore_ps(c, m0, c0[r]);
        _mm256_maskstore_ps(c + 8, m1, c1[r]);
    }
}

typedef void (*Tile256)(int K, const float *A, int lda, const float *P, float beta, float *C,
                        int ldc, __m256i m0, __m256i m1, const float *next, int t, int T);
#define TILE256(n)                                                                          \
    __attribute__((target("avx2,fma"))) static void tile256_##n(                           \
        int K, const float *A, int lda, const float *P, float beta, float *C, int ldc,     \
        __m256i m0, __m256i m1, const float *next, int t, int T) {                         \
        tile_avx2(n, K, A, lda, P, beta, C, ldc, m0, m1, next, t, T);                      \
    }
TILE256(1) TILE256(2) TILE256(3) TILE256(4) TILE256(5) TILE256(6)
static const Tile256 tiles256[MR256 + 1] = {NULL,      tile256_1, tile256_2, tile256_3,
                                            tile256_4, tile256_5, tile256_6};

__attribute__((target("avx2"))) static __m256i mask8(int w) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(w), lane);
}

__attribute__((target("avx2,fma"))) static void gemm_avx2(int M, int N, int K, const float *A,
                                                         int lda, const PackedMatrix *pm,
                                                         float beta, float *C, int ldc) {
    const int tiles = (M + MR256 - 1) / MR256;
    for (size_t p = 0; p < panel_count(N); p++) {
        const float *P = pm->panels + p * (size_t)pm->K * NR;
        const float *next = p + 1 < panel_count(N) ? P + (size_t)pm->K * NR : NULL;
        for (int half = 0; half < 2; half++) {
            const int n0 = (int)p * NR + 16 * half, w = N - n0;
            if (w <= 0) break;
            const __m256i m0 = mask8(w), m1 = mask8(w - 8);
            for (int t = 0; t < tiles; t++) {
                const int r0 = tile_start(M, tiles, t), mr = tile_start(M, tiles, t + 1) - r0;
                tiles256[mr](K, A + (size_t)r0 * lda, lda, P + 16 * half, beta,
                             C + (size_t)r0 * ldc + n0, ldc, m0, m1, next,
                             half * tiles + t, 2 * tiles);
            }
        }
    }
}
#endif

static bool gemm_packed_k_with(CpuIsa kernel, int M, int N, int K, const float *A, int lda,
                               const PackedMatrix *pm, float beta, float *C, int ldc) {
    CHECK(M >= 0 && N >= 0 && N <= pm->N && K >= 0 && K <= pm->K && lda >= K && ldc >= N,
          "M %d N %d of %d K %d of %d lda %d ldc %d", M, N, pm->N, K, pm->K, lda, ldc);
    CHECK(pm->B, "gemm_packed before packed_pack");
    if (kernel != CPU_ISA_NONE && (!pm->panels || kernel > cpu_isa())) return false;
    if (M == 0 || N == 0) return true;
    switch (kernel) {
#ifdef PACKED_X86
    case CPU_ISA_AVX512: gemm_avx512(M, N, K, A, lda, pm, beta, C, ldc); return true;
    case CPU_ISA_AVX2: gemm_avx2(M, N, K, A, lda, pm, beta, C, ldc); return true;
#endif
    case CPU_ISA_NONE:
        // op(B)'s first K rows: B's first K rows, or with trans its first K columns.
        gemm(false, pm->trans, M, N, K, 1.0f, A, lda, pm->B, pm->ldb, beta, C, ldc);
        return true;
    default: return false;
    }
}

bool gemm_packed_with(CpuIsa kernel, int M, int N, const float *A, int lda,
                      const PackedMatrix *pm, float beta, float *C, int ldc) {
    CHECK(lda >= pm->K, "lda %d for K %d", lda, pm->K);
    return gemm_packed_k_with(kernel, M, N, pm->K, A, lda, pm, beta, C, ldc);
}

void gemm_packed(int M, int N, const float *A, int lda, const PackedMatrix *pm, float beta,
                 float *C, int ldc) {
    gemm_packed_k(M, N, pm->K, A, lda, pm, beta, C, ldc);
}

void gemm_packed_k(int M, int N, int K, const float *A, int lda, const PackedMatrix *pm,
                   float beta, float *C, int ldc) {
    CHECK(gemm_packed_k_with(pm->panels ? gemm_step_kernel() : CPU_ISA_NONE, M, N, K, A, lda, pm,
                             beta, C, ldc));
}

bool gemm_packed_k_with_isa(CpuIsa kernel, int M, int N, int K, const float *A, int lda,
                            const PackedMatrix *pm, float beta, float *C, int ldc) {
    return gemm_packed_k_with(kernel, M, N, K, A, lda, pm, beta, C, ldc);
}
