#include "vision/filterbank_sparse.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/vector_width.h"

enum { LANES = 16 };

// The helpers below pass vector values between static inline functions only, never across
// a call another translation unit makes, so the ABI note GCC gives for wide vectors when
// the target lacks AVX-512 (the sanitizer and valgrind builds) does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
// Rows of the read's operands are padded to a multiple of LANES = 16 floats, and each group
// of 16 is held as PARTS vectors of the target's width (GCC's vector extension): one
// AVX-512 register, or two AVX ones. Left to itself GCC vectorised the loops below across
// rows, with shuffles, at a fraction of this rate; written as one 16-float value, on AVX2
// it moved the halves through the stack (the read took 23 % of the glimpse classifier's
// step on a Zen 3). Each lane does the same arithmetic at either width.
enum { VLANES = VECTOR_BYTES / sizeof(float) };
enum { PARTS = LANES / VLANES };
typedef float Vec __attribute__((vector_size(VLANES * sizeof(float))));
static inline Vec vec_load(const float *p) {
    Vec v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void vec_store(float *p, Vec v) { memcpy(p, &v, sizeof v); }

void sparse_images_alloc(SparseImages *s, int images, int W, int H, size_t cap) {
    const size_t rows = (size_t)images * H, cols = (size_t)images * W;
    CHECK(images >= 0 && W >= 1 && H >= 1 && cap <= INT_MAX && rows <= INT_MAX && cols < INT_MAX,
          "sparse images: %d images of %dx%d, %zu nonzeros", images, W, H, cap);
    memset(s, 0, sizeof *s);
    s->cap = cap, s->rows_cap = rows, s->images_cap = (size_t)images, s->W_cap = W;
    const size_t c1 = cap ? cap : 1;
    s->row_start = xmalloc(sizeof(int) * (rows + 1));
    s->col = xmalloc(sizeof(int) * c1);
    s->val = xmalloc(sizeof(float) * c1);
    s->cols = xmalloc(sizeof(int) * (cols ? cols : 1));
    s->cols_start = xmalloc(sizeof(int) * ((size_t)images + 1));
    s->col_nz_start = xmalloc(sizeof(int) * (cols + 1));
    s->col_nz_row = xmalloc(sizeof(int) * c1);
    s->col_nz_val = xmalloc(sizeof(float) * c1);
    s->seen = xcalloc((size_t)W, sizeof(int));
    s->cursor = xmalloc(sizeof(int) * (size_t)W);
}

void sparse_images_free(SparseImages *s) {
    free(s->row_start), free(s->col), free(s->val), free(s->cols), free(s->cols_start);
    free(s->col_nz_start), free(s->col_nz_row), free(s->col_nz_val), free(s->seen), free(s->cursor);
    memset(s, 0, sizeof *s);
}

// The column-major copy of image channel ic's nonzeros [n0, n1) (rows r0 .. r0 + H), its
// nonzero columns listed from nc0 on: seen[a] is 1 for those columns on entry, 0 on return.
static int list_columns(SparseImages *s, size_t r0, int H, int W, int n0, int n1, int nc0) {
    int nc = nc0;
    for (int a = 0; a < W; a++)
        if (s->seen[a]) s->seen[a] = nc, s->cols[nc] = a, s->col_nz_start[nc + 1] = 0, nc++;
    // seen[a] is now column a's place in the list (any value where a has no nonzero)
    for (int q = n0; q < n1; q++) s->col_nz_start[s->seen[s->col[q]] + 1]++;
    s->col_nz_start[nc0] = n0;
    for (int k = nc0; k < nc; k++) {
        s->col_nz_start[k + 1] += s->col_nz_start[k];
        s->cursor[s->cols[k]] = s->col_nz_start[k];
    }
    for (int h = 0; h < H; h++)  // rows ascending within each column
        for (int q = s->row_start[r0 + h]; q < s->row_start[r0 + h + 1]; q++) {
            const int at = s->cursor[s->col[q]]++;
            s->col_nz_row[at] = h, s->col_nz_val[at] = s->val[q];
        }
    for (int k = nc0; k < nc; k++) s->seen[s->cols[k]] = 0;
    return nc;
}

int sparse_images_build(SparseImages *s, const float *img, int B, int C, int W, int H) {
    const size_t images = (size_t)B * C;
    CHECK(images <= s->images_cap && W <= s->W_cap && images * H <= s->rows_cap,
          "sparse images: %zu images of %dx%d, room for %zu of %d columns", images, W, H,
          s->images_cap, s->W_cap);
    s->B = s->C = s->W = s->H = 0;
    int n = 0, nc = 0;
    s->col_nz_start[0] = 0;
    for (size_t ic = 0; ic < images; ic++) {
        const int n0 = n;
        s->cols_start[ic] = nc;
        for (int h = 0; h < H; h++) {
            const size_t r = ic * H + h;
            const float *x = img + r * W;
            s->row_start[r] = n;
            for (int a0 = 0; a0 < W; a0 += LANES) {
                int end = a0 + LANES < W ? a0 + LANES : W, any = 0;
                // Sixteen pixels tested at once (most runs of a cluttered image are all zero).
                for (int a = a0; a < end; a++) any |= x[a] != 0.0f;
                if (!any) continue;
                for (int a = a0; a < end; a++) {
                    if (x[a] == 0.0f) continue;
                    if ((size_t)n == s->cap) {
                        memset(s->seen, 0, sizeof(int) * W);
                        return -1;
                    }
                    s->col[n] = a, s->val[n] = x[a], n++;
                    s->seen[a] = 1;
                }
            }
        }
        s->row_start[ic * H + H] = n;
        nc = list_columns(s, ic * H, H, W, n0, n, nc);
    }
    s->cols_start[images] = nc;
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
    for (int j = 0; j < S; j += VLANES) vec_store(y + j, vec_load(y + j) + v * vec_load(x + j));
}

// C (M, S) = A (M, K) B (K, S): row R(r) of C is the sum over k of A(r, k) times row K(k)
// of B, with A(r, k) at A[R(r) ars + K(k) acs] (any orientation of a row-major matrix),
// R(r) = ridx[r] and K(k) = kidx[k] (NULL: r and k). The read's small products all take
// this form on the transposed operands, over the image's nonzero columns only (N x W x N
// multiply-adds each at most, N 12 and W 100 in the classifier); through OpenBLAS they ran
// its transposed small kernels at about a third of the rate of this one. Four rows at a
// time for S = 16 (independent sums that stay in registers), in order of k, so a row's
// result does not depend on the others.
static inline __attribute__((always_inline)) void
rows_times_lanes(float *restrict C, const float *restrict A, int ars, int acs,
                             const float *restrict Bm, int M, int K, int S, const int *ridx,
                             const int *kidx) {
#define ROW_(r) ((size_t)(ridx ? ridx[r] : (r)))
#define KEY_(k) ((size_t)(kidx ? kidx[k] : (k)))
    int r = 0;
    if (S == LANES)
        for (; r + 4 <= M; r += 4) {
            Vec c[4][PARTS];
            for (int i = 0; i < 4; i++)
                for (int p = 0; p < PARTS; p++) c[i][p] = (Vec){0};
            const float *a0 = A + ROW_(r) * ars, *a1 = A + ROW_(r + 1) * ars,
                        *a2 = A + ROW_(r + 2) * ars, *a3 = A + ROW_(r + 3) * ars;
            for (int k = 0; k < K; k++) {
                const size_t kk = KEY_(k), o = kk * acs;
                const float x0 = a0[o], x1 = a1[o], x2 = a2[o], x3 = a3[o];
                for (int p = 0; p < PARTS; p++) {
                    const Vec b = vec_load(Bm + kk * LANES + p * VLANES);
                    c[0][p] += x0 * b;
                    c[1][p] += x1 * b;
                    c[2][p] += x2 * b;
                    c[3][p] += x3 * b;
                }
            }
            for (int i = 0; i < 4; i++)
                for (int p = 0; p < PARTS; p++)
                    vec_store(C + ROW_(r + i) * LANES + p * VLANES, c[i][p]);
        }
    for (; r < M; r++) {
        float *c = C + ROW_(r) * S;
        const float *ar = A + ROW_(r) * ars;
        memset(c, 0, sizeof(float) * S);
        for (int k = 0; k < K; k++) axpy_lanes(c, ar[KEY_(k) * acs], Bm + KEY_(k) * S, S);
    }
#undef ROW_
#undef KEY_
}

// uT (W, S) = (Fy img)^T for one image channel, rows of its nonzero columns cols[k0, k1)
// only (the others are zero and never read): row a is the sum over column a's nonzeros
// (h, v) of v FyT[h], in order of h. FyT (H, S) = Fy^T with the lanes past N zero (rows of
// nonzero image rows only).
static void u_transposed(float *restrict uT, const float *restrict FyT, const SparseImages *s,
                         int k0, int k1, int S) {
    for (int k = k0; k < k1; k++) {
        float *u = uT + (size_t)s->cols[k] * S;
        const int q0 = s->col_nz_start[k], q1 = s->col_nz_start[k + 1];
        for (int j = 0; j < S; j += LANES) {
            Vec acc[PARTS];
            for (int p = 0; p < PARTS; p++) acc[p] = (Vec){0};
            for (int q = q0; q < q1; q++) {
                const float v = s->col_nz_val[q], *f = FyT + (size_t)s->col_nz_row[q] * S + j;
                for (int p = 0; p < PARTS; p++) acc[p] += v * vec_load(f + p * VLANES);
            }
            for (int p = 0; p < PARTS; p++) vec_store(u + j + p * VLANES, acc[p]);
        }
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
            Vec r[PARTS];
            for (int p = 0; p < PARTS; p++) r[p] = (Vec){0};
            for (int k = k0; k < k1; k++) {
                const float v = s->val[k], *z = ZT + (size_t)s->col[k] * S;
                for (int p = 0; p < PARTS; p++) r[p] += v * vec_load(z + p * VLANES);
            }
            for (int j = 0; j < N; j++) dfy[(size_t)j * H + h] += r[j / VLANES][j % VLANES];
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
        for (int h = 0; h < H; h++) {  // the rows some channel has a nonzero in
            int used = 0;
            for (int ch = 0; ch < C && !used; ch++) {
                const size_t r = ((size_t)b * C + ch) * H + h;
                used = img->row_start[r] != img->row_start[r + 1];
            }
            if (!used) continue;
            float *d = FyT + (size_t)h * S;
            for (int j = 0; j < N; j++) d[j] = fy[(size_t)j * H + h];
            for (int j = N; j < S; j++) d[j] = 0.0f;
        }
        for (int ch = 0; ch < C; ch++) {
            const size_t ic = (size_t)b * C + ch;
            const int *cols = img->cols + img->cols_start[ic];
            const int n = img->cols_start[ic + 1] - img->cols_start[ic];
            float *ut = kept + ic * per, *PT = ut + (size_t)W * S;
            u_transposed(ut, FyT, img, img->cols_start[ic], img->cols_start[ic + 1], S);
            // patch (N, N) = gamma u Fx^T: PT[i] = sum_a Fx[i, a] uT[a] over the nonzero columns
            rows_times_lanes(PT, fx, W, 1, ut, N, n, S, NULL, cols);
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
            const size_t ic = (size_t)b * C + ch;
            const int *cols = img->cols + img->cols_start[ic];
            const int n = img->cols_start[ic + 1] - img->cols_start[ic];
            const float *ut = kept + ic * filterbank_sparse_kept_floats(N, W),
                        *PT = ut + (size_t)W * S,
                        *G = dpatch + (size_t)b * ld_patch + (size_t)ch * N * N;
            double dgp[4] = {0};  // sum G P in four chains (one chain of N^2 double adds
                                  // took a sixth of this function)
            for (int i = 0; i < N; i++)
                for (int j = 0; j < N; j++) {
                    const float gji = G[j * N + i];
                    dgp[j & 3] += (double)gji * PT[(size_t)i * S + j];
                    GT[(size_t)i * S + j] = gm * gji;
                    Gs[(size_t)j * S + i] = gm * gji;
                }
            dg += (dgp[0] + dgp[2]) + (dgp[1] + dgp[3]);
            // Over the nonzero columns a (u[:, a] = 0 at the others, and dFy reads Z there
            // only): dFx[i, a] += sum_j uT[a, j] gamma G[j, i]
            rows_times_lanes(XT, ut, S, 1, Gs, n, N, S, cols, NULL);
            for (int k = 0; k < n; k++) {
                const float *xt = XT + (size_t)cols[k] * S;
                for (int i = 0; i < N; i++) dfx[(size_t)i * W + cols[k]] += xt[i];
            }
            // ZT[a] = sum_i Fx[i, a] gamma G[:, i]
            rows_times_lanes(ZT, fx, 1, W, GT, n, N, S, cols, NULL);
            dfy_accumulate(dfy, acc, ZT, img, ic * H, N, H, S);
        }
        dgamma[b] += (float)dg;
    }
}
