// test_lstm_seq.c: the unrolled LSTM with variational dropout and lengths (seq/lstm_seq.h).
// - Gradient checks (central differences, loss summed in double, eps 1e-3, atol 1e-3, rtol
//   1e-2 as test_lstm.c; every element) of x, W and b through all T steps, in both
//   directions, without and with lengths (one row of length 0) and dropout masks.
// - The float backward against central differences (eps 1e-6) of the whole sequence computed
//   in double, with dropout, with and without lengths, both directions; shared and per-gate
//   masks (and the gated LSTM without its input or its recurrent masks); the gated LSTM
//   with hard-sigmoid gates (Keras <= 2.2's recurrent_activation) too, at points away from
//   the kinks, some gates clipped; its float loss against the double sequence's.
// - The forward against seq/lstm.h's double reference cell run step by step with the masks
//   applied by hand: the same mask at every step on x_t and on h_{t-1} (not on the carried
//   state); padding steps leave the state unchanged, so a forward row's state at
//   lengths - 1 is its state at T - 1 and a reverse row's padding states are zero.
// - lstm_dropout_mask: entries 0 or 1 / (1 - rate), the share of zeros near rate.
// - The gated variant (one mask per gate, Keras's implementation 1): its gradient check, its
//   forward against the cell run once per gate with that gate's masks (also with the input
//   or the recurrent masks NULL, the paths that take all four gates in one product), and
//   with all four masks equal the shared-mask LSTM's states and gradients (one gate's mask
//   moved: not).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/rng.h"
#include "seq/lstm.h"
#include "seq/lstm_seq.h"
#include "tests/support/gradcheck.h"
#include "tests/support/test.h"

enum { T = 4, B = 3, I = 3, H = 4, K = I + H };

typedef struct {
    const int *lengths;
    int reverse, dropout, gated;  // gated: lstm_seq_forward_gated, one mask per gate
    int no_in, no_rec;            // gated with dropout: pass NULL for the input (recurrent) masks
    LstmGateAct act;              // gated: the gates' activation
    float x[T * B * I], dx[T * B * I];
    float W[4 * H * K], dW[4 * H * K], b[4 * H], db[4 * H];
    float in_mask[B * I], rec_mask[B * H];
    float gin_mask[B * 4 * I], grec_mask[B * 4 * H];  // (B, 4, I), (B, 4, H)
    float *cache, *scratch;
} Fix;

// The gated variant's masks as passed: NULL without dropout or when the case leaves one out.
static const float *gin(const Fix *f) { return f->dropout && !f->no_in ? f->gin_mask : NULL; }
static const float *grec(const Fix *f) { return f->dropout && !f->no_rec ? f->grec_mask : NULL; }

static void fix_forward(void *ctx, float *out) {
    Fix *f = ctx;
    if (f->gated)
        lstm_seq_forward_gated(out, f->cache, f->x, f->W, f->b, f->lengths, gin(f), grec(f),
                               f->reverse, f->act, T, B, I, H);
    else
        lstm_seq_forward(out, f->cache, f->x, f->W, f->b, f->lengths, f->dropout ? f->in_mask : NULL,
                         f->dropout ? f->rec_mask : NULL, f->reverse, T, B, I, H);
}

static void fix_backward(void *ctx, const float *dout) {
    Fix *f = ctx;
    float hs[T * B * H];
    fix_forward(f, hs);
    if (f->gated)
        lstm_seq_backward_gated(f->dx, f->dW, f->db, dout, f->cache, f->W, f->lengths, gin(f),
                                grec(f), f->reverse, f->act, f->scratch, T, B, I, H);
    else
        lstm_seq_backward(f->dx, f->dW, f->db, dout, f->cache, f->W, f->lengths,
                          f->dropout ? f->in_mask : NULL, f->dropout ? f->rec_mask : NULL, f->reverse,
                          f->scratch, T, B, I, H);
}

static void fix_init(Fix *f, const int *lengths, int reverse, int dropout, uint64_t seed) {
    memset(f, 0, sizeof *f);
    f->lengths = lengths, f->reverse = reverse, f->dropout = dropout;
    Rng rng;
    rng_seed(&rng, seed);
    fill_uniform(f->x, T * B * I, -1.0f, 1.0f, &rng);
    fill_uniform(f->W, 4 * H * K, -0.8f, 0.8f, &rng);
    fill_uniform(f->b, 4 * H, -0.5f, 0.5f, &rng);
    lstm_dropout_mask(f->in_mask, B * I, 0.3f, &rng);
    lstm_dropout_mask(f->rec_mask, B * H, 0.2f, &rng);
    lstm_dropout_mask(f->gin_mask, B * 4 * I, 0.3f, &rng);
    lstm_dropout_mask(f->grec_mask, B * 4 * H, 0.2f, &rng);
    size_t nc = lstm_seq_cache_floats(T, B, I, H), ng = lstm_seq_gated_cache_floats(T, B, I, H);
    size_t ns = lstm_seq_scratch_floats(B, I, H), nsg = lstm_seq_gated_scratch_floats(T, B, I, H);
    f->cache = xmalloc((nc > ng ? nc : ng) * sizeof(float));
    f->scratch = xmalloc((ns > nsg ? ns : nsg) * sizeof(float));
}

static void fix_free(Fix *f) {
    free(f->cache);
    free(f->scratch);
}

static const int g_lengths[B] = {4, 2, 0};

// omit: 1 passes no input masks, 2 no recurrent masks (gated with dropout only).
static int check_gated_omit(const int *lengths, int reverse, int dropout, int gated, int omit,
                            const char *name) {
    Fix f;
    fix_init(&f, lengths, reverse, dropout, 11 + (uint64_t)(reverse * 2 + dropout));
    f.gated = gated, f.no_in = omit == 1, f.no_rec = omit == 2;
    GradcheckInput in[3] = {{"x", f.x, f.dx, T * B * I}, {"W", f.W, f.dW, 4 * H * K}, {"b", f.b, f.db, 4 * H}};
    GradcheckOp op = {.ctx = &f, .forward = fix_forward, .backward = fix_backward,
                      .n_out = T * B * H, .inputs = in, .n_inputs = 3,
                      .eps = 1e-3, .atol = 1e-3, .rtol = 1e-2};
    Rng rng;
    rng_seed(&rng, 5);
    int rc = gradcheck(name, &op, &rng);
    fix_free(&f);
    return rc;
}

static int check_gated(const int *lengths, int reverse, int dropout, int gated, const char *name) {
    return check_gated_omit(lengths, reverse, dropout, gated, 0, name);
}

static int check(const int *lengths, int reverse, int dropout, const char *name) {
    return check_gated(lengths, reverse, dropout, 0, name);
}

static void test_gradcheck(void) {
    EXPECT(check(NULL, 0, 0, "forward") == 0);
    EXPECT(check(NULL, 1, 0, "reverse") == 0);
    EXPECT(check(NULL, 0, 1, "forward, dropout") == 0);
    EXPECT(check(g_lengths, 0, 1, "forward, lengths, dropout") == 0);
    EXPECT(check(g_lengths, 1, 1, "reverse, lengths, dropout") == 0);
    EXPECT(check(g_lengths, 1, 0, "reverse, lengths") == 0);
}

static void test_gated_gradcheck(void) {
    EXPECT(check_gated(NULL, 0, 0, 1, "gated, forward") == 0);
    EXPECT(check_gated(NULL, 0, 1, 1, "gated, forward, dropout") == 0);
    EXPECT(check_gated(g_lengths, 0, 1, 1, "gated, forward, lengths, dropout") == 0);
    EXPECT(check_gated(g_lengths, 1, 1, 1, "gated, reverse, lengths, dropout") == 0);
    EXPECT(check_gated(NULL, 1, 1, 1, "gated, reverse, dropout") == 0);
    EXPECT(check_gated_omit(g_lengths, 0, 1, 1, 1, "gated, lengths, recurrent masks only") == 0);
    EXPECT(check_gated_omit(g_lengths, 1, 1, 1, 2, "gated, reverse, lengths, input masks only") == 0);
}

// The gated sequence by hand: gate q of each step from lstm_forward_ref on the inputs
// masked with gate q's masks, then the cell: hs (T, B, H).
static void reference_gated(float *hs, const Fix *f) {
    for (int r = 0; r < B; r++) {
        float h[H] = {0}, c[H] = {0};
        for (int s = 0; s < T; s++) {
            int t = f->reverse ? T - 1 - s : s;
            if (!f->lengths || t < f->lengths[r]) {
                float gate[4 * H];
                for (int q = 0; q < 4; q++) {
                    float xd[I], hd[H], hn[H], cn[H], g[4 * H];
                    for (int k = 0; k < I; k++)
                        xd[k] = f->x[((size_t)t * B + r) * I + k] * (gin(f) ? gin(f)[(r * 4 + q) * I + k] : 1.0f);
                    for (int k = 0; k < H; k++) hd[k] = h[k] * (grec(f) ? grec(f)[(r * 4 + q) * H + k] : 1.0f);
                    lstm_forward_ref(hn, cn, g, xd, hd, c, f->W, f->b, NULL, 1, I, H);
                    memcpy(gate + q * H, g + q * H, H * sizeof(float));
                }
                for (int k = 0; k < H; k++) {
                    c[k] = gate[H + k] * c[k] + gate[k] * gate[2 * H + k];
                    h[k] = gate[3 * H + k] * tanhf(c[k]);
                }
            }
            memcpy(hs + ((size_t)t * B + r) * H, h, sizeof h);
        }
    }
}

// Every combination of lengths, direction and dropout, and with dropout the input or the
// recurrent masks left out (k 8-11: NULL in_mask, 12-15: NULL rec_mask).
static void test_gated_forward_against_cell(void) {
    for (int k = 0; k < 16; k++) {
        Fix f;
        fix_init(&f, k & 1 ? g_lengths : NULL, (k >> 1) & 1, (k >> 2) & 1 || k >= 8, 50 + (uint64_t)k);
        f.gated = 1, f.no_in = k >= 8 && k < 12, f.no_rec = k >= 12;
        float hs[T * B * H], ref[T * B * H];
        fix_forward(&f, hs);
        reference_gated(ref, &f);
        for (int i = 0; i < T * B * H; i++) EXPECT_NEAR(hs[i], ref[i], 2e-6, 1e-5);
        fix_free(&f);
    }
}

// With every gate's masks equal, the gated LSTM is the shared-mask one (forward and
// gradients); with the masks drawn apart it is not.
static void test_gated_equal_masks_is_shared(void) {
    Fix f;
    fix_init(&f, g_lengths, 0, 1, 77);
    for (int r = 0; r < B; r++)
        for (int q = 0; q < 4; q++) {
            memcpy(f.gin_mask + (r * 4 + q) * I, f.in_mask + r * I, I * sizeof(float));
            memcpy(f.grec_mask + (r * 4 + q) * H, f.rec_mask + r * H, H * sizeof(float));
        }
    float hs[T * B * H], hg[T * B * H], dout[T * B * H];
    Rng rng;
    rng_seed(&rng, 3);
    fill_uniform(dout, T * B * H, -1.0f, 1.0f, &rng);
    fix_backward(&f, dout);
    fix_forward(&f, hs);
    float dx[T * B * I], dW[4 * H * K], db[4 * H];
    memcpy(dx, f.dx, sizeof dx), memcpy(dW, f.dW, sizeof dW), memcpy(db, f.db, sizeof db);
    memset(f.dx, 0, sizeof f.dx), memset(f.dW, 0, sizeof f.dW), memset(f.db, 0, sizeof f.db);
    f.gated = 1;
    fix_backward(&f, dout);
    fix_forward(&f, hg);
    for (int i = 0; i < T * B * H; i++) EXPECT_NEAR(hg[i], hs[i], 2e-6, 1e-5);
    for (int i = 0; i < T * B * I; i++) EXPECT_NEAR(f.dx[i], dx[i], 1e-5, 1e-4);
    for (int i = 0; i < 4 * H * K; i++) EXPECT_NEAR(f.dW[i], dW[i], 1e-5, 1e-4);
    for (int i = 0; i < 4 * H; i++) EXPECT_NEAR(f.db[i], db[i], 1e-5, 1e-4);
    f.grec_mask[2 * H + 1] = f.grec_mask[2 * H + 1] == 0.0f ? 1.25f : 0.0f;  // row 0, gate g
    fix_forward(&f, hg);
    double diff = 0;
    for (int i = 0; i < T * B * H; i++) diff = fmax(diff, fabs(hg[i] - hs[i]));
    EXPECT(diff > 1e-4, "one gate's recurrent mask changed nothing (%g)", diff);
    fix_free(&f);
}

// The sequence by hand from lstm_forward_ref, one row at a time: hs (T, B, H).
static void reference(float *hs, const Fix *f) {
    for (int r = 0; r < B; r++) {
        float h[H] = {0}, c[H] = {0}, g[4 * H];
        for (int s = 0; s < T; s++) {
            int t = f->reverse ? T - 1 - s : s;
            if (!f->lengths || t < f->lengths[r]) {
                float xd[I], hd[H], hn[H], cn[H];
                for (int k = 0; k < I; k++)
                    xd[k] = f->x[((size_t)t * B + r) * I + k] * (f->dropout ? f->in_mask[r * I + k] : 1.0f);
                for (int k = 0; k < H; k++) hd[k] = h[k] * (f->dropout ? f->rec_mask[r * H + k] : 1.0f);
                lstm_forward_ref(hn, cn, g, xd, hd, c, f->W, f->b, NULL, 1, I, H);
                memcpy(h, hn, sizeof h);
                memcpy(c, cn, sizeof c);
            }
            memcpy(hs + ((size_t)t * B + r) * H, h, sizeof h);
        }
    }
}

static void test_forward_against_cell(void) {
    for (int k = 0; k < 8; k++) {
        Fix f;
        fix_init(&f, k & 1 ? g_lengths : NULL, (k >> 1) & 1, (k >> 2) & 1, 30 + (uint64_t)k);
        float hs[T * B * H], ref[T * B * H];
        fix_forward(&f, hs);
        reference(ref, &f);
        for (int i = 0; i < T * B * H; i++) EXPECT_NEAR(hs[i], ref[i], 2e-6, 1e-5);
        if (f.lengths) {
            for (int j = 0; j < H; j++) {
                if (!f.reverse) EXPECT(hs[(3 * B + 1) * H + j] == hs[(1 * B + 1) * H + j], "carried");
                else EXPECT(hs[(3 * B + 1) * H + j] == 0.0f, "reverse padding not zero");
                EXPECT(hs[(0 * B + 2) * H + j] == 0.0f && hs[(3 * B + 2) * H + j] == 0.0f, "length 0");
            }
        }
        fix_free(&f);
    }
}

// The mask of gate q on input column k of row r (k < I: x, else h_{t-1}), as the fixture
// runs: shared, per gate (gated) or none.
static double mask_at(const Fix *f, int r, int q, int k) {
    if (!f->dropout) return 1.0;
    if (!f->gated) return k < I ? f->in_mask[r * I + k] : f->rec_mask[r * H + k - I];
    const float *m = k < I ? gin(f) : grec(f);
    return !m ? 1.0 : k < I ? m[(r * 4 + q) * I + k] : m[(r * 4 + q) * H + k - I];
}

// Gates i, f, o in double: the sigmoid or Keras's hard_sigmoid, max(0, min(1, 0.2 x + 0.5)).
static double gate_ref(double x, LstmGateAct act) {
    if (act != LSTM_GATE_HARD_SIGMOID) return 1 / (1 + exp(-x));
    double v = 0.2 * x + 0.5;
    return v < 0 ? 0 : v > 1 ? 1 : v;
}

// Where the hard sigmoid's pre-activations lie (seq_loss_ref's kinks): the least distance
// of any from a kink (+-2.5), how many are clipped and how many inside.
typedef struct {
    double gap;
    int clipped, inside;
} Kinks;

static void kinks_add(Kinks *k, double pre) {
    double d = fabs(fabs(pre) - 2.5);
    if (d < k->gap) k->gap = d;
    if (fabs(pre) >= 2.5) k->clipped++;
    else k->inside++;
}

// The sequence in double (the same rules as seq/lstm_seq.h): the weighted sum of every h.
// kinks (NULL: not wanted) gathers gates i, f, o's pre-activations.
static double seq_loss_ref(const double *x, const double *W, const double *b, const Fix *f,
                           const float *wts, Kinks *kinks) {
    double loss = 0;
    for (int r = 0; r < B; r++) {
        double h[H] = {0}, c[H] = {0};
        for (int s = 0; s < T; s++) {
            int t = f->reverse ? T - 1 - s : s;
            if (!f->lengths || t < f->lengths[r]) {
                double xh[K], hn[H], cn[H];
                for (int k = 0; k < I; k++) xh[k] = x[(t * B + r) * I + k];
                for (int k = 0; k < H; k++) xh[I + k] = h[k];
                for (int j = 0; j < H; j++) {
                    double pre[4];
                    for (int q = 0; q < 4; q++) {
                        pre[q] = b[q * H + j];
                        for (int k = 0; k < K; k++)
                            pre[q] += W[(q * H + j) * K + k] * xh[k] * mask_at(f, r, q, k);
                    }
                    double ig = gate_ref(pre[0], f->act), fg = gate_ref(pre[1], f->act);
                    double gg = tanh(pre[2]), og = gate_ref(pre[3], f->act);
                    if (kinks) kinks_add(kinks, pre[0]), kinks_add(kinks, pre[1]), kinks_add(kinks, pre[3]);
                    cn[j] = fg * c[j] + ig * gg;
                    hn[j] = og * tanh(cn[j]);
                }
                memcpy(h, hn, sizeof h);
                memcpy(c, cn, sizeof c);
            }
            for (int k = 0; k < H; k++) loss += wts[(t * B + r) * H + k] * h[k];
        }
    }
    return loss;
}

// Case k's fixture for the double checks: k & 1 lengths, k & 2 reverse, dropout always;
// 0-3 the shared masks, 4-7 the gated LSTM's (6: no input masks, 7: no recurrent masks),
// 8-11 the gated LSTM with hard-sigmoid gates (10: no input masks, 11: no recurrent masks).
static void fix_case(Fix *f, int k) {
    fix_init(f, k & 1 ? g_lengths : NULL, (k >> 1) & 1, 1, 60 + (uint64_t)k);
    f->gated = k >= 4, f->no_in = k == 6 || k == 10, f->no_rec = k == 7 || k == 11;
    f->act = k >= 8 ? LSTM_GATE_HARD_SIGMOID : LSTM_GATE_SIGMOID;
    if (k >= 8)  // weights three times larger: some gates beyond the ramp
        for (int i = 0; i < 4 * H * K; i++) f->W[i] *= 3.0f;
}

// The float backward against central differences (eps 1e-6) of the double sequence above,
// every element of x, W and b: |analytic - numeric| <= 2e-5 + 1e-3 |numeric| (the float
// forward's fast sigmoid and tanh are within 4e-7 of libm's). Cases of fix_case; with the
// hard sigmoid every gate pre-activation stays more than 1e-4 from a kink (so no difference
// straddles one) and some are clipped, some inside; the float loss is the double one.
static void test_double_gradcheck(void) {
    for (int k = 0; k < 12; k++) {
        Fix f;
        fix_case(&f, k);
        Rng rng;
        rng_seed(&rng, 61);
        float wts[T * B * H], hs[T * B * H];
        fill_uniform(wts, T * B * H, -1.0f, 1.0f, &rng);
        fix_backward(&f, wts);
        static double x[T * B * I], W[4 * H * K], b[4 * H];
        for (int i = 0; i < T * B * I; i++) x[i] = f.x[i];
        for (int i = 0; i < 4 * H * K; i++) W[i] = f.W[i];
        for (int i = 0; i < 4 * H; i++) b[i] = f.b[i];
        Kinks kinks = {.gap = INFINITY};
        double base = seq_loss_ref(x, W, b, &f, wts, &kinks), loss = 0;
        fix_forward(&f, hs);
        for (int i = 0; i < T * B * H; i++) loss += (double)wts[i] * hs[i];
        EXPECT_NEAR(loss, base, 1e-5, 1e-5);
        if (f.act == LSTM_GATE_HARD_SIGMOID)
            EXPECT(kinks.gap > 1e-4 && kinks.clipped > 0 && kinks.inside > 0,
                   "case %d: kink gap %g, %d clipped, %d inside", k, kinks.gap, kinks.clipped,
                   kinks.inside);
        double *xs[3] = {x, W, b};
        const float *gs[3] = {f.dx, f.dW, f.db};
        const int ns[3] = {T * B * I, 4 * H * K, 4 * H};
        const char *names[3] = {"x", "W", "b"};
        for (int q = 0; q < 3; q++)
            for (int i = 0; i < ns[q]; i++) {
                double keep = xs[q][i], eps = 1e-6;
                xs[q][i] = keep + eps;
                double up = seq_loss_ref(x, W, b, &f, wts, NULL);
                xs[q][i] = keep - eps;
                double down = seq_loss_ref(x, W, b, &f, wts, NULL);
                xs[q][i] = keep;
                double num = (up - down) / (2 * eps), ana = gs[q][i];
                EXPECT(fabs(ana - num) <= 2e-5 + 1e-3 * fabs(num),
                       "case %d, d/d%s[%d]: analytic %.9g, numeric %.9g", k, names[q], i, ana, num);
            }
        fix_free(&f);
    }
}

static void test_dropout_mask(void) {
    enum { N = 20000 };
    float *m = xmalloc(N * sizeof *m);
    Rng rng;
    rng_seed(&rng, 3);
    lstm_dropout_mask(m, N, 0.2f, &rng);
    int zeros = 0;
    for (int i = 0; i < N; i++) {
        EXPECT(m[i] == 0.0f || m[i] == 1.0f / 0.8f, "mask %g", m[i]);
        zeros += m[i] == 0.0f;
    }
    EXPECT(zeros > N * 0.18 && zeros < N * 0.22, "%d zeros of %d", zeros, N);
    lstm_dropout_mask(m, N, 0.0f, &rng);
    for (int i = 0; i < N; i++) EXPECT(m[i] == 1.0f);
    free(m);
}

int main(void) {
    RUN(test_gradcheck);
    RUN(test_forward_against_cell);
    RUN(test_double_gradcheck);
    RUN(test_dropout_mask);
    RUN(test_gated_gradcheck);
    RUN(test_gated_forward_against_cell);
    RUN(test_gated_equal_masks_is_shared);
    return test_summary();
}
