#include "vision/filterbank_sparse.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"

enum { LANES = 16 };

// Sixteen floats as one value (GCC's vector extension: one AVX-512 register, two AVX ones,
// or four SSE ones, whatever the target has; left to itself GCC vectorised the loops
// below across rows, with shuffles, at a fraction of this rate).
typedef float Lanes __attribute__((vector_size(LANES * sizeof(float))));
static inline Lanes lanes_load(const float *p) {
    Lanes v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void lanes_store(float *p, Lanes v) { memcpy(p, &v, sizeof v); }

void sparse_images_alloc(SparseImages *s, size_t rows_cap, size_t cap) {
    CHECK(cap <= INT_MAX && rows_cap <= INT_MAX, "sparse images: %zu nonzeros, %zu rows", cap,
          rows_cap);
    memset(s, 0, sizeof *s);
    s->cap = cap, s->rows_cap = rows_cap;
    s->row_start = xmalloc(sizeof(int) * (rows_cap + 1));
    s->col = xmalloc(sizeof(int) * (cap ? cap : 1));
    s->val = xmalloc(sizeof(float) * (cap ? cap : 1));
}

void sparse_images_free(SparseImages *s) {
    free(s->row_start), free(s->col), free(s->val);
    memset(s, 0, sizeof *s);
}

int sparse_images_build(SparseImages *s, const float *img, int B, int C, int W, int H) {
    const size_t rows = (size_t)B * C * H;
    CHECK(rows <= s->rows_cap, "sparse images: %zu rows, room for %zu", rows, s->rows_cap);
    s->B = s->C = s->W = s->H = 0;
    size_t n = 0;
    for (size_t r = 0; r < rows; r++) {
        const float *x = img + r * W;
        s->row_start[r] = (int)n;
        for (int a0 = 0; a0 < W; a0 += LANES) {
            int end = a0 + LANES < W ? a0 + LANES : W, any = 0;
            // Sixteen pixels tested at once (most runs of a cluttered image are all zero).
            for (int a = a0; a < end; a++) any |= x[a] != 0.0f;
            if (!any) continue;
            for (int a = a0; a < end; a++) {
                if (x[a] == 0.0f) continue;
                if (n == s->cap) return -1;
                s->col[n] = a, s->val[n] = x[a], n++;
            }
        }
    }
    s->row_start[rows] = (int)n;
    s->B = B, s->C = C, s->W = W, s->H = H;
    return 0;
}

int filterbank_sparse_stride(int N) { return (N + LANES - 1) / LANES * LANES; }

int filterbank_sparse_scratch_floats(int N, int W, int H) {
    int S = filterbank_sparse_stride(N);
    return H * S + 2 * W * S + 2 * N * S + S;
}

int filterbank_sparse_kept_floats(int N, int W) { return (W + N) * filterbank_sparse_stride(N); }

// y (S) += v x (S), S a multiple of 16: one or a few vector operations.
static inline void axpy_lanes(float *restrict y, float v, const float *restrict x, int S) {
    for (int j = 0; j < S; j += LANES) lanes_store(y + j, lanes_load(y + j) + v * lanes_load(x + j));
}

// C (M, S) = A (M, K) B (K, S): row r of C is the sum over k of A(r, k) times row k of B,
// with A(r, k) at A[r ars + k acs] (any orientation of a row-major matrix). The read's
// small products all take this form on the transposed operands (N x W x N multiply-adds
// each, N 12 and W 100 in the classifier); through OpenBLAS they ran its transposed small
// kernels at about a third of the rate of this one. Four rows at a time for S = 16
// (independent sums that stay in registers), in order of k, so a row's result does not
// depend on the others.
static void rows_times_lanes(float *restrict C, const float *restrict A, int ars, int acs,
                             const float *restrict Bm, int M, int K, int S) {
    int r = 0;
    if (S == LANES)
        for (; r + 4 <= M; r += 4) {
            Lanes c0 = {0}, c1 = {0}, c2 = {0}, c3 = {0};
            const float *a0 = A + (size_t)r * ars;
            for (int k = 0; k < K; k++) {
                const Lanes b = lanes_load(Bm + (size_t)k * LANES);
                const float *ak = a0 + (size_t)k * acs;
                c0 += ak[0] * b;
                c1 += ak[ars] * b;
                c2 += ak[2 * (size_t)ars] * b;
                c3 += ak[3 * (size_t)ars] * b;
            }
            float *c = C + (size_t)r * LANES;
            lanes_store(c, c0), lanes_store(c + LANES, c1);
            lanes_store(c + 2 * LANES, c2), lanes_store(c + 3 * LANES, c3);
        }
    for (; r < M; r++) {
        float *c = C + (size_t)r * S;
        memset(c, 0, sizeof(float) * S);
        for (int k = 0; k < K; k++) axpy_lanes(c, A[(size_t)r * ars + (size_t)k * acs], Bm + (size_t)k * S, S);
    }
}

// uT (W, S) = (Fy img)^T for one image channel: zero, then each nonzero (h, a, v) adds
// v FyT[h] to uT[a]. FyT (H, S) = Fy^T with the lanes past N zero.
static void u_transposed(float *restrict uT, const float *restrict FyT, const SparseImages *s,
                         size_t row0, int W, int H, int S) {
    memset(uT, 0, sizeof(float) * (size_t)W * S);
    for (int h = 0; h < H; h++) {
        const float *fh = FyT + (size_t)h * S;
        for (int k = s->row_start[row0 + h]; k < s->row_start[row0 + h + 1]; k++)
            axpy_lanes(uT + (size_t)s->col[k] * S, s->val[k], fh, S);
    }
}

// dFy (N, H) += (Z img^T) for one image channel, Z given as ZT (W, S): row h of the product
// is the sum over row h's nonzeros (a, v) of v ZT[a]; acc (S) scratch.
static void dfy_accumulate(float *restrict dfy, float *restrict acc, const float *restrict ZT,
                           const SparseImages *s, size_t row0, int N, int H, int S) {
    for (int h = 0; h < H; h++) {
        int k0 = s->row_start[row0 + h], k1 = s->row_start[row0 + h + 1];
        if (k0 == k1) continue;
        if (S == LANES) {  // the usual N <= 16: the sum stays in a register
            Lanes r = {0};
            for (int k = k0; k < k1; k++) r += s->val[k] * lanes_load(ZT + (size_t)s->col[k] * S);
            for (int j = 0; j < N; j++) dfy[(size_t)j * H + h] += r[j];
        } else {
            memset(acc, 0, sizeof(float) * S);
            for (int k = k0; k < k1; k++) axpy_lanes(acc, s->val[k], ZT + (size_t)s->col[k] * S, S);
            for (int j = 0; j < N; j++) dfy[(size_t)j * H + h] += acc[j];
        }
    }
}

static void check_shape(const SparseImages *s, int B, int C, int W, int H) {
    CHECK(s->B >= B && s->C == C && s->W == W && s->H == H,
          "sparse images of %d x %d x %dx%d, read as %d x %d x %dx%d", s->B, s->C, s->W, s->H, B,
          C, W, H);
}

void filterbank_read_sparse_forward(float *patch, int ld_patch, const SparseImages *img,
                                    const float *Fx, const float *Fy, const float *gamma,
                                    float *kept, float *scratch, int B, int C, int N, int W,
                                    int H) {
    check_shape(img, B, C, W, H);
    const int S = filterbank_sparse_stride(N);
    float *FyT = scratch;  // (H, S)
    const size_t per = filterbank_sparse_kept_floats(N, W);
    for (int b = 0; b < B; b++) {
        const float *fx = Fx + (size_t)b * N * W, *fy = Fy + (size_t)b * N * H;
        for (int h = 0; h < H; h++) {
            float *d = FyT + (size_t)h * S;
            for (int j = 0; j < N; j++) d[j] = fy[(size_t)j * H + h];
            for (int j = N; j < S; j++) d[j] = 0.0f;
        }
        for (int ch = 0; ch < C; ch++) {
            float *ut = kept + ((size_t)b * C + ch) * per, *PT = ut + (size_t)W * S;
            u_transposed(ut, FyT, img, ((size_t)b * C + ch) * H, W, H, S);
            // patch (N, N) = gamma u Fx^T: PT[i] = sum_a Fx[i, a] uT[a]
            rows_times_lanes(PT, fx, W, 1, ut, N, W, S);
            float *out = patch + (size_t)b * ld_patch + (size_t)ch * N * N;
            for (int j = 0; j < N; j++)
                for (int i = 0; i < N; i++) out[j * N + i] = gamma[b] * PT[(size_t)i * S + j];
        }
    }
}

// With P = u Fx^T (N, N, kept from the forward) and G = dpatch (N, N), as the dense read's
// backward (each product through rows_times_lanes on the transposed operands):
//     d gamma += sum G P;  dFx += gamma G^T u;  Z (N, W) = gamma G Fx;  dFy += Z img^T.
void filterbank_read_sparse_backward(float *dFx, float *dFy, float *dgamma, const float *dpatch,
                                     int ld_patch, const SparseImages *img, const float *Fx,
                                     const float *gamma, const float *kept, float *scratch,
                                     int B, int C, int N, int W, int H) {
    check_shape(img, B, C, W, H);
    const int S = filterbank_sparse_stride(N);
    float *ZT = scratch + (size_t)H * S;  // (W, S) = (gamma G Fx)^T
    float *XT = ZT + (size_t)W * S;       // (W, S) = (gamma G^T u)^T, dFx's term
    float *Gs = XT + (size_t)W * S;       // (N, S): row j = gamma G[j, :]
    float *GT = Gs + (size_t)N * S;       // (N, S): row i = gamma G[:, i]
    float *acc = GT + (size_t)N * S;      // (S)
    memset(Gs, 0, sizeof(float) * 2 * N * S);  // the lanes past N stay zero
    for (int b = 0; b < B; b++) {
        const float *fx = Fx + (size_t)b * N * W;
        float gm = gamma[b];
        float *dfx = dFx + (size_t)b * N * W, *dfy = dFy + (size_t)b * N * H;
        double dg = 0.0;  // over the channels, which share gamma
        for (int ch = 0; ch < C; ch++) {
            const float *ut = kept + ((size_t)b * C + ch) * filterbank_sparse_kept_floats(N, W),
                        *PT = ut + (size_t)W * S,
                        *G = dpatch + (size_t)b * ld_patch + (size_t)ch * N * N;
            for (int j = 0; j < N; j++)
                for (int i = 0; i < N; i++) {
                    dg += (double)G[j * N + i] * PT[(size_t)i * S + j];
                    Gs[(size_t)j * S + i] = gm * G[j * N + i];
                    GT[(size_t)i * S + j] = gm * G[j * N + i];
                }
            // dFx[i, a] += sum_j uT[a, j] gamma G[j, i]
            rows_times_lanes(XT, ut, S, 1, Gs, W, N, S);
            for (int i = 0; i < N; i++)
                for (int a = 0; a < W; a++) dfx[(size_t)i * W + a] += XT[(size_t)a * S + i];
            // ZT[a] = sum_i Fx[i, a] gamma G[:, i]
            rows_times_lanes(ZT, fx, 1, W, GT, W, N, S);
            dfy_accumulate(dfy, acc, ZT, img, ((size_t)b * C + ch) * H, N, H, S);
        }
        dgamma[b] += (float)dg;
    }
}
