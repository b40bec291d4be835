// test_core_adam.c: Adam / AdamW steps against hand computations, convergence on a
// quadratic, global-norm clipping, the exponential learning-rate schedule and the weight
// average (ema_update).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/adam.h"
#include "core/rng.h"
#include "tests/support/test.h"

// Two steps worked by hand (beta1 0.9, beta2 0.999, eps 1e-8, lr 0.1, p0 = 1):
//   t=1, g=0.5:  m = 0.05, v = 0.00025, m_hat = 0.5, v_hat = 0.25, p = 1 - 0.1 * 0.5/0.5 = 0.9
//   t=2, g=-0.2: m = 0.025, v = 0.00028975, m_hat = 0.025/0.19, v_hat = 0.00028975/0.001999,
//                p = 0.9 - 0.1 * 0.1315789 / 0.3807190 = 0.8654394
// v is compared with rtol 5e-5: 1 - 0.999f is 0.00099998713 in float (1.3e-5 off), and the
// same rounding cancels in v_hat, so p itself matches to 1e-6.
static void test_adam_two_steps_by_hand(void) {
    AdamConfig cfg = adam_defaults(0.1f);
    EXPECT(cfg.beta1 == 0.9f && cfg.beta2 == 0.999f && cfg.eps == 1e-8f && cfg.weight_decay == 0.0f);
    float p = 1.0f, m = 0.0f, v = 0.0f, g = 0.5f;
    adam_update(&p, &g, &m, &v, 1, &cfg, 1, cfg.lr);
    EXPECT_NEAR(m, 0.05, 1e-8, 1e-6);
    EXPECT_NEAR(v, 0.00025, 0, 5e-5);
    EXPECT_NEAR(p, 0.9, 0, 1e-6);
    g = -0.2f;
    adam_update(&p, &g, &m, &v, 1, &cfg, 2, cfg.lr);
    EXPECT_NEAR(m, 0.025, 1e-8, 1e-6);
    EXPECT_NEAR(v, 0.00028975, 0, 5e-5);
    EXPECT_NEAR(p, 0.8654394181, 0, 1e-6);
}

// The lr argument is the one used (the schedule's), not cfg->lr.
static void test_adam_uses_given_lr(void) {
    AdamConfig cfg = adam_defaults(123.0f);
    float p = 1.0f, m = 0.0f, v = 0.0f, g = -3.0f;
    adam_update(&p, &g, &m, &v, 1, &cfg, 1, 0.01f);
    EXPECT_NEAR(p, 1.01, 0, 1e-6);  // the first step moves by lr * sign(g)
}

// Decoupled decay: with a zero gradient only p -= lr * wd * p remains.
static void test_adamw_weight_decay(void) {
    AdamConfig cfg = adam_defaults(0.5f);
    cfg.weight_decay = 0.1f;
    float p[2] = {2.0f, -4.0f}, m[2] = {0}, v[2] = {0}, g[2] = {0};
    adam_update(p, g, m, v, 2, &cfg, 1, cfg.lr);
    EXPECT_NEAR(p[0], 1.9, 0, 1e-6);
    EXPECT_NEAR(p[1], -3.8, 0, 1e-6);
    // With a gradient, the decay adds to the Adam step instead of entering the moments.
    float q = 1.0f, mq = 0.0f, vq = 0.0f, gq = 0.5f;
    adam_update(&q, &gq, &mq, &vq, 1, &cfg, 1, cfg.lr);
    EXPECT_NEAR(mq, 0.05, 1e-8, 1e-6);
    EXPECT_NEAR(q, 1.0 - 0.5 * (1.0 + 0.1 * 1.0), 0, 1e-6);
}

// f(x) = sum_i c_i (x_i - t_i)^2 from x = 0: Adam must reach t.
static void test_adam_converges_on_quadratic(void) {
    enum { N = 8 };
    float x[N] = {0}, m[N] = {0}, v[N] = {0}, g[N], t[N], c[N];
    Rng rng;
    rng_seed(&rng, 11);
    for (int i = 0; i < N; i++) {
        t[i] = 4.0f * rng_uniform(&rng) - 2.0f;
        c[i] = 0.1f + 10.0f * rng_uniform(&rng);  // badly scaled on purpose
    }
    AdamConfig cfg = adam_defaults(0.05f);
    for (long step = 1; step <= 3000; step++) {
        for (int i = 0; i < N; i++) g[i] = 2.0f * c[i] * (x[i] - t[i]);
        adam_update(x, g, m, v, N, &cfg, step, lr_exponential(cfg.lr, 0.5f, 500, step));
    }
    for (int i = 0; i < N; i++) EXPECT_NEAR(x[i], t[i], 1e-3, 0);
}

static void test_clip_global_norm(void) {
    float g[2] = {3.0f, 4.0f};
    EXPECT_NEAR(clip_global_norm(g, 2, 1.0f), 5.0, 0, 1e-7);
    EXPECT_NEAR(g[0], 0.6, 0, 1e-6);
    EXPECT_NEAR(g[1], 0.8, 0, 1e-6);
    float h[2] = {3.0f, 4.0f};
    EXPECT_NEAR(clip_global_norm(h, 2, 10.0f), 5.0, 0, 1e-7);  // under the limit: unchanged
    EXPECT(h[0] == 3.0f && h[1] == 4.0f);
    EXPECT_NEAR(clip_global_norm(h, 2, 0.0f), 5.0, 0, 1e-7);   // 0: measure only
    EXPECT(h[0] == 3.0f && h[1] == 4.0f);
    // A long vector of small values (float accumulation would drift): after clipping the
    // norm is the limit and the direction is kept.
    enum { N = 100000 };
    static float big[N], copy[N];
    Rng rng;
    rng_seed(&rng, 12);
    double ss = 0;
    for (int i = 0; i < N; i++) {
        big[i] = rng_normal(&rng) * 0.01f;
        copy[i] = big[i];
        ss += (double)big[i] * big[i];
    }
    float before = clip_global_norm(big, N, 0.5f);
    EXPECT_NEAR(before, sqrt(ss), 0, 1e-6);
    double after = 0;
    for (int i = 0; i < N; i++) after += (double)big[i] * big[i];
    EXPECT_NEAR(sqrt(after), 0.5, 0, 1e-5);
    double scale = 0.5 / sqrt(ss);
    for (int i = 0; i < N; i += 997) EXPECT_NEAR(big[i], copy[i] * scale, 1e-9, 1e-5);
}

static void test_lr_exponential(void) {
    EXPECT_NEAR(lr_exponential(1.0f, 0.5f, 10, 0), 1.0, 0, 1e-7);
    EXPECT_NEAR(lr_exponential(1.0f, 0.5f, 10, 10), 0.5, 0, 1e-7);
    EXPECT_NEAR(lr_exponential(1.0f, 0.5f, 10, 20), 0.25, 0, 1e-7);
    EXPECT_NEAR(lr_exponential(2e-3f, 0.5f, 10, 5), 2e-3 * sqrt(0.5), 0, 1e-6);
    EXPECT_NEAR(lr_exponential(1e-3f, 0.9f, 0, 1000), 1e-3, 0, 1e-7);  // no schedule
    EXPECT_NEAR(lr_exponential(1e-3f, 1.0f, 100, 1000), 1e-3, 0, 1e-7);
}

// Noam: linear up to the peak at step warmup, then peak sqrt(warmup / step).
static void test_lr_noam(void) {
    EXPECT_NEAR(lr_noam(1e-3f, 100, 1), 1e-5, 0, 1e-6);
    EXPECT_NEAR(lr_noam(1e-3f, 100, 50), 5e-4, 0, 1e-6);
    EXPECT_NEAR(lr_noam(1e-3f, 100, 100), 1e-3, 0, 1e-6);
    EXPECT_NEAR(lr_noam(1e-3f, 100, 400), 5e-4, 0, 1e-6);
    EXPECT_NEAR(lr_noam(2.0f, 1, 4), 1.0, 0, 1e-6);
}

// The average by hand, decay 0.9: at step 1 the warm-up caps d at 2/11, so
// avg = 2/11 * 4 + 9/11 * 15 = 13; by step 100 the cap (101/110) is above 0.9 and
// avg = 0.9 * 13 + 0.1 * 3 = 12. Decay 0 copies the parameters.
static void test_ema_update_by_hand(void) {
    float avg[2] = {4.0f, 4.0f};
    const float p1[2] = {15.0f, 15.0f}, p2[2] = {3.0f, 3.0f};
    ema_update(avg, p1, 2, 0.9f, 1);
    EXPECT_NEAR(avg[0], 13.0, 0, 1e-6);
    EXPECT_NEAR(avg[1], 13.0, 0, 1e-6);
    ema_update(avg, p2, 2, 0.9f, 100);
    EXPECT_NEAR(avg[0], 12.0, 0, 1e-6);
    ema_update(avg, p1, 1, 0.0f, 5000);
    EXPECT(avg[0] == 15.0f && avg[1] == 12.0f);
}

// adam_update_threads on 1 to 5 threads leaves what adam_update leaves, bit for bit, on a
// size that is no multiple of the slices (weight decay on, two steps).
static void test_adam_threads_matches(void) {
    const size_t n = 3 * 65536 + 1234;
    float *buf = malloc(8 * n * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        buf[i] = (float)sin((double)i) * 0.5f;             // param
        buf[n + i] = (float)cos((double)i * 0.7) * 0.01f;  // grad
    }
    AdamConfig cfg = adam_defaults(1e-3f);
    cfg.weight_decay = 0.01f;
    for (int threads = 1; threads <= 5; threads++) {
        float *p1 = buf + 2 * n, *m1 = buf + 3 * n, *v1 = buf + 4 * n;
        float *p2 = buf + 5 * n, *m2 = buf + 6 * n, *v2 = buf + 7 * n;
        memcpy(p1, buf, n * sizeof(float));
        memcpy(p2, buf, n * sizeof(float));
        memset(m1, 0, 2 * n * sizeof(float));  // m1 and v1
        memset(m2, 0, 2 * n * sizeof(float));
        for (long step = 1; step <= 2; step++) {
            adam_update(p1, buf + n, m1, v1, n, &cfg, step, 1e-3f);
            adam_update_threads(p2, buf + n, m2, v2, n, &cfg, step, 1e-3f, threads);
        }
        EXPECT(!memcmp(p1, p2, n * sizeof(float)) && !memcmp(m1, m2, 2 * n * sizeof(float)),
               "%d threads: differs from adam_update", threads);
        EXPECT(p1[n - 1] != buf[n - 1], "the last parameter was not updated");
    }
    free(buf);
}

// adam_clip_update_threads (the norm with partial sums over slices, the clip folded into
// the update) against its plain loops, clip_global_norm then adam_update, on 1 to 5
// threads: the norms agree to the last bits of a double sum; with the limit under the
// norm the parameters and moments agree to float rounding of the clip factor (each is a
// few float operations on g * factor); with the limit above it, and the gradient left
// unclipped, bit for bit.
static void test_adam_clip_update_matches_plain_loops(void) {
    const size_t n = 3 * 65536 + 1237;
    float *buf = malloc(8 * n * sizeof(float));
    float *grad = buf + n, *gref = buf + 7 * n;
    for (size_t i = 0; i < n; i++) {
        buf[i] = (float)sin((double)i) * 0.5f;
        grad[i] = (float)cos((double)i * 0.7) * 0.01f;  // norm about 3.1
    }
    AdamConfig cfg = adam_defaults(1e-3f);
    cfg.weight_decay = 0.01f;
    const float limits[2] = {1.0f, 100.0f};
    for (int which = 0; which < 2; which++)
        for (int threads = 1; threads <= 5; threads++) {
            float *p1 = buf + 2 * n, *m1 = buf + 3 * n, *v1 = buf + 4 * n;
            float *p2 = buf + 5 * n;
            memcpy(p1, buf, n * sizeof(float));
            memcpy(p2, buf, n * sizeof(float));
            memset(m1, 0, 2 * n * sizeof(float));
            float *mom2 = calloc(2 * n, sizeof(float));
            double worst = 0.0;
            int same = 1;
            for (long step = 1; step <= 2; step++) {
                memcpy(gref, grad, n * sizeof(float));
                const float nref = clip_global_norm(gref, n, limits[which]);
                adam_update(p1, gref, m1, v1, n, &cfg, step, 1e-3f);
                const float nnew = adam_clip_update_threads(p2, grad, mom2, mom2 + n, n, &cfg,
                                                            step, 1e-3f, limits[which], threads);
                EXPECT_NEAR(nnew, nref, 0, 1e-6);
                EXPECT_NEAR(nref, 3.1, 0.3, 0);
            }
            for (size_t i = 0; i < n; i++) {
                const double d = fabs((double)p1[i] - p2[i]) / (1e-3 + fabs((double)buf[i] - p1[i]));
                if (d > worst) worst = d;
                same &= p1[i] == p2[i] && m1[i] == mom2[i] && v1[i] == mom2[n + i];
            }
            // the moved distance, 2 steps of lr, agrees to a few float roundings
            EXPECT(worst < 1e-3, "limit %g, %d threads: parameters differ by %g of a step",
                   (double)limits[which], threads, worst);
            if (which == 1) EXPECT(same, "%d threads: no clipping, yet not bit for bit", threads);
            for (size_t i = 0; i < n; i += 4099)
                EXPECT(grad[i] == (float)((float)cos((double)i * 0.7) * 0.01f), "grad changed");
            free(mom2);
        }
    // grad_sumsq against a plain double sum, on lengths around the partial sums' 8
    for (size_t len = 0; len < 40; len++) {
        double ss = 0.0;
        for (size_t i = 0; i < len; i++) ss += (double)grad[i] * grad[i];
        EXPECT_NEAR(grad_sumsq(grad, len), ss, 1e-30, 1e-14);
    }
    free(buf);
}

int main(void) {
    RUN(test_adam_two_steps_by_hand);
    RUN(test_adam_uses_given_lr);
    RUN(test_adamw_weight_decay);
    RUN(test_adam_converges_on_quadratic);
    RUN(test_adam_threads_matches);
    RUN(test_clip_global_norm);
    RUN(test_adam_clip_update_matches_plain_loops);
    RUN(test_lr_exponential);
    RUN(test_lr_noam);
    RUN(test_ema_update_by_hand);
    return test_summary();
}
