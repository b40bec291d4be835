// test_encoder_stage.c: the backward passes for fine-tuning a pretrained encoder's last stage
// (vision/conv_train.h, vision/encoder_stage.h). conv_train_backward (im2col + GEMM) against
// its plain loops on every layer kind of VGG's conv5 and ResNet's layer4 (3x3 stride 1 and
// 2, 1x1 stride 1 and 2, odd and even sides), accumulating; central-difference gradient
// checks of each layer kind (conv + bias, ReLU, the residual add, the downsampling branch)
// and of whole reduced-width stages: a VGG conv5 (four 3x3 convolutions), a bottleneck
// layer4 (a strided block with downsampling, then an identity block) and a basic-block
// layer4; the stages' fast forward and backward against the plain-loop references.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/error.h"
#include "core/gemm.h"
#include "core/rng.h"
#include "tests/support/gradcheck.h"
#include "tests/support/test.h"
#include "vision/conv_infer.h"
#include "vision/conv_train.h"
#include "vision/encoder.h"
#include "vision/encoder_stage.h"

// Largest |got - want| / (1e-5 + 1e-4 |want|) (<= 1 passes; NaN fails).
static double worst_ratio(const float *got, const float *want, size_t n) {
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double r = fabs((double)got[i] - want[i]) / (1e-5 + 1e-4 * fabs((double)want[i]));
        if (!(r <= worst)) worst = r;
    }
    return worst;
}

typedef struct {
    int n, C, H, W, OC, K, stride, pad;
} Shape;

// The layer kinds of the two stages: VGG's 3x3/1, ResNet's 3x3/2, 1x1/1, 1x1/2 (downsampling).
static const Shape SHAPES[] = {
    {2, 3, 6, 6, 4, 3, 1, 1}, {3, 4, 7, 7, 5, 3, 2, 1}, {2, 5, 4, 4, 3, 1, 1, 0},
    {2, 4, 7, 7, 6, 1, 2, 0}, {1, 2, 5, 6, 3, 3, 2, 1}, {2, 3, 8, 8, 2, 3, 1, 1},
};
#define N_SHAPES ((int)(sizeof SHAPES / sizeof SHAPES[0]))

static void test_conv_backward_matches_reference(void) {
    Rng rng;
    rng_seed(&rng, 11);
    for (int k = 0; k < N_SHAPES; k++) {
        const Shape *s = &SHAPES[k];
        const int Ho = conv_infer_out_size(s->H, s->K, s->stride, s->pad);
        const int Wo = conv_infer_out_size(s->W, s->K, s->stride, s->pad);
        const size_t ni = (size_t)s->C * s->n * s->H * s->W, no = (size_t)s->OC * s->n * Ho * Wo;
        const size_t nw = (size_t)s->OC * s->C * s->K * s->K, n[3] = {ni, nw, (size_t)s->OC};
        float *inp = xmalloc(ni * 4), *w = xmalloc(nw * 4), *dout = xmalloc(no * 4);
        float *col = xmalloc(conv_train_col_floats(s->C, s->H, s->W, s->K, s->stride, s->pad) * 4);
        fill_uniform(inp, ni, -1, 1, &rng);
        fill_uniform(w, nw, -1, 1, &rng);
        fill_uniform(dout, no, -1, 1, &rng);
        float *g[3], *g_ref[3];
        for (int j = 0; j < 3; j++) {  // backward accumulates: start from the same values
            g[j] = xmalloc(n[j] * 4), g_ref[j] = xmalloc(n[j] * 4);
            fill_uniform(g[j], n[j], -1, 1, &rng);
            memcpy(g_ref[j], g[j], n[j] * 4);
        }
        conv_train_backward(g[0], g[1], g[2], dout, inp, w, col, s->n, s->C, s->H, s->W, s->OC,
                            s->K, s->stride, s->pad);
        conv_train_backward_ref(g_ref[0], g_ref[1], g_ref[2], dout, inp, w, s->n, s->C, s->H,
                                s->W, s->OC, s->K, s->stride, s->pad);
        static const char *names[3] = {"dinp", "dweight", "dbias"};
        for (int j = 0; j < 3; j++) {
            double r = worst_ratio(g[j], g_ref[j], n[j]);
            EXPECT(r <= 1.0, "shape %d: %s differs from the plain loops (ratio %g)", k, names[j], r);
        }
        // Skipping an output leaves it alone and computes the others the same.
        memcpy(g[1], g_ref[1], nw * 4);
        conv_train_backward(NULL, g[1], NULL, dout, inp, w, col, s->n, s->C, s->H, s->W, s->OC,
                            s->K, s->stride, s->pad);
        conv_train_backward_ref(NULL, g_ref[1], NULL, dout, inp, w, s->n, s->C, s->H, s->W,
                                s->OC, s->K, s->stride, s->pad);
        EXPECT(worst_ratio(g[1], g_ref[1], nw) <= 1.0, "shape %d: dweight alone differs", k);
        for (int j = 0; j < 3; j++) free(g[j]), free(g_ref[j]);
        free(inp), free(w), free(dout), free(col);
    }
}

// ---- gradient checks of one layer: conv + bias (+ residual) (+ ReLU) -------------------

typedef struct {
    Shape s;
    int relu, residual;
    float *inp, *w, *b, *res, *col, *out, *pre;
    float *dinp, *dw, *db, *dres;
    size_t no;
} LayerCtx;

static void layer_fwd(void *p, float *out) {
    LayerCtx *c = p;
    const Shape *s = &c->s;
    conv_infer_forward_ref(out, c->inp, c->w, c->b, c->residual ? c->res : NULL, s->n, s->C,
                           s->H, s->W, s->OC, s->K, s->stride, s->pad, c->relu);
    memcpy(c->out, out, c->no * 4);
}

static void layer_bwd(void *p, const float *dout) {
    LayerCtx *c = p;
    const Shape *s = &c->s;
    // The pre-activation gradient (ReLU's backward from the output), the residual's share,
    // then the convolution's.
    for (size_t e = 0; e < c->no; e++) c->pre[e] = !c->relu || c->out[e] > 0.0f ? dout[e] : 0.0f;
    if (c->residual)
        for (size_t e = 0; e < c->no; e++) c->dres[e] += c->pre[e];
    conv_train_backward(c->dinp, c->dw, c->db, c->pre, c->inp, c->w, c->col, s->n, s->C, s->H,
                        s->W, s->OC, s->K, s->stride, s->pad);
}

// Smallest |pre-activation| of the layer as drawn.
static double min_abs_preact(LayerCtx *c) {
    const Shape *s = &c->s;
    conv_infer_forward_ref(c->pre, c->inp, c->w, c->b, c->residual ? c->res : NULL, s->n, s->C,
                           s->H, s->W, s->OC, s->K, s->stride, s->pad, 0);
    double m = INFINITY;
    for (size_t e = 0; e < c->no; e++) m = fmin(m, fabs((double)c->pre[e]));
    return m;
}

static void test_layer_gradcheck(void) {
    Rng rng;
    rng_seed(&rng, 12);
    for (int k = 0; k < N_SHAPES; k++)
        for (int variant = 0; variant < 3; variant++) {  // plain, ReLU, residual + ReLU
            LayerCtx c = {.s = SHAPES[k], .relu = variant >= 1, .residual = variant == 2};
            const Shape *s = &c.s;
            const int Ho = conv_infer_out_size(s->H, s->K, s->stride, s->pad);
            const int Wo = conv_infer_out_size(s->W, s->K, s->stride, s->pad);
            const size_t ni = (size_t)s->C * s->n * s->H * s->W, nw = (size_t)s->OC * s->C * s->K * s->K;
            c.no = (size_t)s->OC * s->n * Ho * Wo;
            c.inp = xmalloc(ni * 4), c.dinp = xmalloc(ni * 4);
            c.w = xmalloc(nw * 4), c.dw = xmalloc(nw * 4);
            c.b = xmalloc(s->OC * 4), c.db = xmalloc(s->OC * 4);
            c.res = xmalloc(c.no * 4), c.dres = xmalloc(c.no * 4);
            c.out = xmalloc(c.no * 4), c.pre = xmalloc(c.no * 4);
            c.col = xmalloc(conv_train_col_floats(s->C, s->H, s->W, s->K, s->stride, s->pad) * 4);
            fill_uniform(c.inp, ni, -1, 1, &rng);
            fill_uniform(c.w, nw, -0.5f, 0.5f, &rng);
            fill_uniform(c.b, s->OC, -0.5f, 0.5f, &rng);
            fill_uniform(c.res, c.no, -1, 1, &rng);
            // ReLU's kink: central differences across it are wrong by design, so redraw the
            // biases until every pre-activation is at least 0.005 from zero (a step of eps =
            // 1e-3 in one element moves a pre-activation by at most eps: |weights|,
            // |inputs|, |residuals| <= 1).
            if (c.relu) {
                int tries = 0;
                while (min_abs_preact(&c) < 0.005 && tries++ < 1000)
                    fill_uniform(c.b, s->OC, -0.5f, 0.5f, &rng);
                EXPECT(tries < 1000, "shape %d: no draw away from ReLU's kink", k);
            }
            GradcheckInput in[4] = {{"inp", c.inp, c.dinp, ni},
                                    {"weight", c.w, c.dw, nw},
                                    {"bias", c.b, c.db, (size_t)s->OC},
                                    {"residual", c.res, c.dres, c.no}};
            GradcheckOp op = {.ctx = &c, .forward = layer_fwd, .backward = layer_bwd,
                              .n_out = c.no, .inputs = in, .n_inputs = c.residual ? 4 : 3};
            EXPECT(gradcheck("conv_train layer", &op, &rng) == 0,
                   "shape %d variant %d: gradient check failed", k, variant);
            free(c.inp), free(c.dinp), free(c.w), free(c.dw), free(c.b), free(c.db);
            free(c.res), free(c.dres), free(c.out), free(c.pre), free(c.col);
        }
}

// ---- whole stages at reduced width -----------------------------------------------------

// VGG-19's conv5 at reduced width: four 3x3 convolutions C -> W -> W -> W -> W.
static void build_vgg(EncoderStage *st, int C, int width, int n_convs) {
    encoder_stage_init(st, ENCODER_STAGE_VGG, C);
    for (int i = 0; i < n_convs; i++) encoder_stage_add_conv(st, i ? width : C, width, 3, 1, 1);
}

// A layer4 of two blocks: the first strided (on its 3x3, ResNet v1.5) with downsampling,
// the second an identity block. Bottleneck: 1x1 (mid), 3x3 (mid), 1x1 (out); basic: 3x3,
// 3x3 (out).
static void build_resnet(EncoderStage *st, int C, int mid, int out, int bottleneck) {
    encoder_stage_init(st, ENCODER_STAGE_RESNET, C);
    int in = C;
    for (int blk = 0; blk < 2; blk++) {
        const int stride = blk == 0 ? 2 : 1;
        int c1, c2, c3 = -1, down = -1;
        if (bottleneck) {
            c1 = encoder_stage_add_conv(st, in, mid, 1, 1, 0);
            c2 = encoder_stage_add_conv(st, mid, mid, 3, stride, 1);
            c3 = encoder_stage_add_conv(st, mid, out, 1, 1, 0);
        } else {
            c1 = encoder_stage_add_conv(st, in, out, 3, stride, 1);
            c2 = encoder_stage_add_conv(st, out, out, 3, 1, 1);
        }
        if (stride != 1 || in != out) down = encoder_stage_add_conv(st, in, out, 1, stride, 0);
        encoder_stage_add_block(st, c1, c2, c3, down);
        in = out;
    }
}

// He-like random weights so activations stay of order one through the stage, biases small.
static void fill_stage(EncoderStage *st, Rng *rng) {
    for (int i = 0; i < st->n_convs; i++) {
        const StageConv *c = &st->convs[i];
        const float a = sqrtf(3.0f / (float)(c->C * c->K * c->K));
        fill_uniform(st->params + c->w, (size_t)c->OC * c->C * c->K * c->K, -a, a, rng);
        fill_uniform(st->params + c->b, (size_t)c->OC, -0.2f, 0.2f, rng);
    }
}

// ---- the stage in double precision, for central differences ---------------------------

// out = act(conv(in) + bias + res) in double: in (C, n, S, S), out (OC, n, So, So).
static void conv_double(double *out, const double *in, const double *p, const StageConv *c,
                        const double *res, int n, int S, int relu) {
    const int So = conv_infer_out_size(S, c->K, c->stride, c->pad);
    for (int o = 0; o < c->OC; o++)
        for (int b = 0; b < n; b++)
            for (int y = 0; y < So; y++)
                for (int x = 0; x < So; x++) {
                    double acc = p[c->b + o];
                    for (int ch = 0; ch < c->C; ch++)
                        for (int i = 0; i < c->K; i++)
                            for (int j = 0; j < c->K; j++) {
                                const int iy = y * c->stride + i - c->pad, ix = x * c->stride + j - c->pad;
                                if (iy < 0 || iy >= S || ix < 0 || ix >= S) continue;
                                acc += p[c->w + (((size_t)o * c->C + ch) * c->K + i) * c->K + j] *
                                       in[(((size_t)ch * n + b) * S + iy) * S + ix];
                            }
                    const size_t e = (((size_t)o * n + b) * So + y) * So + x;
                    if (res) acc += res[e];
                    out[e] = relu && acc < 0.0 ? 0.0 : acc;
                }
}

// The stage's output (D, n, G, G) from x (C_in, n, S, S) and params, all in double; bufs: 5
// buffers of `cap` doubles. Returns which buffer holds the output.
static double *stage_double(const EncoderStage *st, const double *x, const double *p, int n,
                            int S, double **bufs) {
    const double *in = x;
    int s = S, free_buf = 0;
    if (st->kind == ENCODER_STAGE_VGG) {
        for (int i = 0; i < st->n_convs; i++) {
            double *out = bufs[free_buf];
            conv_double(out, in, p, &st->convs[i], NULL, n, s, 1);
            s = conv_infer_out_size(s, 3, 1, 1);
            in = out, free_buf ^= 1;
        }
        return (double *)in;
    }
    for (int k = 0; k < st->n_blocks; k++) {
        const StageBlock *b = &st->blocks[k];
        double *o[4];
        for (int j = 0, m = 0; j < 5 && m < 4; j++)
            if (bufs[j] != in) o[m++] = bufs[j];
        const StageConv *c = st->convs;
        conv_double(o[0], in, p, &c[b->conv1], NULL, n, s, 1);
        int t = conv_infer_out_size(s, c[b->conv1].K, c[b->conv1].stride, c[b->conv1].pad);
        if (b->down >= 0) conv_double(o[3], in, p, &c[b->down], NULL, n, s, 0);
        const double *res = b->down >= 0 ? o[3] : in;
        if (b->conv3 >= 0) {
            conv_double(o[1], o[0], p, &c[b->conv2], NULL, n, t, 1);
            t = conv_infer_out_size(t, c[b->conv2].K, c[b->conv2].stride, c[b->conv2].pad);
            conv_double(o[2], o[1], p, &c[b->conv3], res, n, t, 1);
        } else {
            conv_double(o[2], o[0], p, &c[b->conv2], res, n, t, 1);
            t = conv_infer_out_size(t, c[b->conv2].K, c[b->conv2].stride, c[b->conv2].pad);
        }
        in = o[2], s = t;
    }
    return (double *)in;
}

// Central differences in double precision (step 1e-6) of loss = sum dy . stage(x, params)
// against the float backward's gradients, at `checks` random elements of x and of params.
static void gradcheck_stage_double(const char *name, const EncoderStage *st, const float *x,
                                   const float *dx, const float *dparams, const float *dy, int n,
                                   int S, int checks, Rng *rng) {
    const int G = encoder_stage_out_side(st, S);
    const size_t nx = (size_t)st->C_in * n * S * S, ny = (size_t)st->D * n * G * G;
    size_t cap = nx;
    for (int i = 0; i < st->n_convs; i++) {
        const StageConv *c = &st->convs[i];
        const size_t f = (size_t)c->OC * n * S * S;  // sides only shrink
        cap = f > cap ? f : cap;
    }
    double *bufs[5], *xd = xmalloc(nx * sizeof(double)), *pd = xmalloc(st->n_params * sizeof(double));
    for (int k = 0; k < 5; k++) bufs[k] = xmalloc(cap * sizeof(double));
    for (size_t e = 0; e < nx; e++) xd[e] = x[e];
    for (size_t e = 0; e < st->n_params; e++) pd[e] = st->params[e];
    const double h = 1e-6;
    double worst = 0.0;
    const char *worst_what = "";
    size_t worst_at = 0;
    double worst_a = 0, worst_n = 0;
    for (int which = 0; which < 2; which++) {
        double *v = which ? pd : xd;
        const float *grad = which ? dparams : dx;
        const size_t count = which ? st->n_params : nx;
        for (int t = 0; t < checks; t++) {
            const size_t e = (size_t)rng_below(rng, (uint32_t)count);
            const double saved = v[e];
            double loss[2];
            for (int side = 0; side < 2; side++) {
                v[e] = saved + (side ? -h : h);
                const double *y = stage_double(st, xd, pd, n, S, bufs);
                double l = 0.0;
                for (size_t k = 0; k < ny; k++) l += dy[k] * y[k];
                loss[side] = l;
            }
            v[e] = saved;
            const double numeric = (loss[0] - loss[1]) / (2 * h), analytic = grad[e];
            const double excess = fabs(analytic - numeric) - (1e-4 + 1e-3 * fabs(numeric));
            if (excess > worst) {
                worst = excess, worst_what = which ? "params" : "x", worst_at = e;
                worst_a = analytic, worst_n = numeric;
            }
        }
    }
    EXPECT(worst <= 0.0, "%s: d/d%s[%zu]: analytic %.7g, numeric (double) %.7g", name, worst_what,
           worst_at, worst_a, worst_n);
    for (int k = 0; k < 5; k++) free(bufs[k]);
    free(xd), free(pd);
}

// The stage's backward against central differences of its double-precision forward (at x,
// every parameter kind), then its fast forward and backward against the plain-loop
// references, and the float forward against the double one.
static void check_stage(const char *name, EncoderStage *st, int n, int S, Rng *rng) {
    fill_stage(st, rng);
    EncoderStageWork w;
    encoder_stage_work_alloc(&w, st, n, S);
    const int G = encoder_stage_out_side(st, S);
    const size_t nx = (size_t)st->C_in * n * S * S, ny = (size_t)st->D * n * G * G;
    float *x = xmalloc(nx * 4), *dx = xcalloc(nx, 4), *dparams = xcalloc(st->n_params, 4);
    fill_uniform(x, nx, 0.0f, 1.0f, rng);  // the prefix ends in a ReLU: inputs >= 0
    float *y = xmalloc(ny * 4), *dy = xmalloc(ny * 4);
    float *dx_ref = xcalloc(nx, 4), *dp_ref = xcalloc(st->n_params, 4);
    fill_uniform(dy, ny, -1, 1, rng);
    encoder_stage_forward(st, &w, x);
    memcpy(y, encoder_stage_output(st, &w), ny * 4);
    encoder_stage_backward(st, &w, dparams, dx, x, dy);
    gradcheck_stage_double(name, st, x, dx, dparams, dy, n, S, 200, rng);

    encoder_stage_forward_ref(st, &w, x);
    EXPECT(worst_ratio(y, encoder_stage_output(st, &w), ny) <= 1.0, "%s: forward differs", name);
    encoder_stage_backward_ref(st, &w, dp_ref, dx_ref, x, dy);
    double rx = worst_ratio(dx, dx_ref, nx), rp = worst_ratio(dparams, dp_ref, st->n_params);
    EXPECT(rx <= 10.0 && rp <= 10.0, "%s: backward differs from the plain loops (dx %g, dparams %g)",
           name, rx, rp);
    // Without dx the parameters' gradient is the same; backward accumulates.
    float *dp2 = xcalloc(st->n_params, 4);
    encoder_stage_backward(st, &w, dp2, NULL, x, dy);
    EXPECT(worst_ratio(dp2, dparams, st->n_params) <= 1.0, "%s: dparams without dx differs", name);
    encoder_stage_backward(st, &w, dp2, NULL, x, dy);
    for (size_t e = 0; e < st->n_params; e++) dp2[e] *= 0.5f;
    EXPECT(worst_ratio(dp2, dparams, st->n_params) <= 1.0, "%s: backward does not accumulate", name);
    free(dp2), free(y), free(dy), free(dx_ref), free(dp_ref), free(x), free(dx), free(dparams);
    encoder_stage_work_free(&w);
}

static void test_vgg_conv5_stage(void) {
    Rng rng;
    rng_seed(&rng, 13);
    EncoderStage st;
    build_vgg(&st, 4, 6, 4);  // VGG-19's conv5_1..conv5_4
    EXPECT(encoder_stage_out_side(&st, 6) == 6 && st.D == 6, "VGG stage shape");
    check_stage("vgg conv5", &st, 2, 6, &rng);
    encoder_stage_free(&st);
}

static void test_resnet_bottleneck_layer4(void) {
    Rng rng;
    rng_seed(&rng, 14);
    EncoderStage st;
    build_resnet(&st, 6, 3, 8, 1);
    EXPECT(encoder_stage_out_side(&st, 7) == 4 && st.D == 8, "bottleneck stage shape");
    check_stage("resnet bottleneck layer4", &st, 2, 7, &rng);
    encoder_stage_free(&st);
}

static void test_resnet_basic_layer4(void) {
    Rng rng;
    rng_seed(&rng, 15);
    EncoderStage st;
    build_resnet(&st, 4, 0, 6, 0);
    EXPECT(encoder_stage_out_side(&st, 6) == 3 && st.D == 6, "basic stage shape");
    check_stage("resnet basic layer4", &st, 2, 6, &rng);
    encoder_stage_free(&st);
}

// The reduced-width random-weight encoders of tests/fixtures/encoders split at their last
// stage: the frozen prefix (encoder_forward_prefix) then the stage (encoder_last_stage)
// give encoder_forward's annotations; the loaded stage's backward passes the double-
// precision gradient check on the prefix's real output; a changed stage written back
// (encoder_set_last_stage) is what the whole encoder then computes; a stage of another
// shape is refused.
static void test_pretrained_split(void) {
    static const char *specs[] = {"vgg19", "vgg16", "resnet18", "resnet50", "resnet50@layer3"};
    const int S = 64, B = 2;
    Rng rng;
    rng_seed(&rng, 16);
    gemm_set_threads(1);
    const char *dir = getenv("ATTEND_FIXTURES");
    for (int k = 0; k < (int)(sizeof specs / sizeof specs[0]); k++) {
        char path[512];
        snprintf(path, sizeof path, "%s/encoders/%.*s.safetensors",
                 dir && dir[0] ? dir : "tests/fixtures", (int)strcspn(specs[k], "@"), specs[k]);
        Encoder *enc = NULL;
        Error err = {{0}};
        if (encoder_load(&enc, specs[k], path, &err)) {
            EXPECT(0, "%s", err.msg);
            continue;
        }
        const int G = encoder_grid_size(enc, S), D = encoder_dim(enc), L = G * G;
        const int C = encoder_stage_input_channels(enc), s = encoder_stage_input_side(enc, S);
        EncoderStage st;
        encoder_last_stage(enc, &st);
        EXPECT(st.C_in == C && st.D == D && encoder_stage_out_side(&st, s) == G,
               "%s: stage %d -> %d, side %d -> %d; encoder %d -> %d, grid %d", specs[k], st.C_in,
               st.D, s, encoder_stage_out_side(&st, s), C, D, G);
        const size_t nimg = (size_t)B * 3 * S * S, nfeat = (size_t)B * C * s * s, na = (size_t)B * L * D;
        float *images = xmalloc(nimg * 4), *feat = xmalloc(nfeat * 4), *x = xmalloc(nfeat * 4);
        float *annot = xmalloc(na * 4), *annot2 = xmalloc(na * 4);
        fill_uniform(images, nimg, -2, 2, &rng);
        EncoderWorkspace ws;
        encoder_workspace_alloc(&ws, enc, S, 2, 1, ENCODER_CONV_AUTO);
        encoder_forward(enc, &ws, annot, images, B);
        encoder_forward_prefix(enc, &ws, feat, images, B);
        nchw_to_cnhw(x, feat, B, C, s * s);
        EncoderStageWork w;
        encoder_stage_work_alloc(&w, &st, B, s);
        encoder_stage_forward(&st, &w, x);
        cnhw_to_annotations(annot2, encoder_stage_output(&st, &w), B, D, L);
        double r = worst_ratio(annot2, annot, na);
        EXPECT(r <= 20.0, "%s: prefix + stage differs from the whole encoder (ratio %g)", specs[k], r);

        // The stage's gradients on the prefix's output.
        const size_t ny = (size_t)D * B * L;
        float *dy = xmalloc(ny * 4), *dx = xcalloc(nfeat, 4), *dp = xcalloc(st.n_params, 4);
        fill_uniform(dy, ny, -1, 1, &rng);
        encoder_stage_backward(&st, &w, dp, dx, x, dy);
        gradcheck_stage_double(specs[k], &st, x, dx, dp, dy, B, s, 60, &rng);

        // A changed stage written back is what the encoder computes.
        for (size_t e = 0; e < st.n_params; e++) st.params[e] -= 0.01f * dp[e];
        encoder_stage_forward(&st, &w, x);
        cnhw_to_annotations(annot2, encoder_stage_output(&st, &w), B, D, L);
        encoder_workspace_free(&ws);
        EXPECT(encoder_set_last_stage(enc, &st, &err) == 0, "%s", err.msg);
        encoder_workspace_alloc(&ws, enc, S, 1, 2, ENCODER_CONV_AUTO);
        encoder_forward(enc, &ws, annot, images, B);
        r = worst_ratio(annot2, annot, na);
        EXPECT(r <= 20.0, "%s: the written-back stage is not what the encoder computes (%g)",
               specs[k], r);
        EncoderStage other;
        encoder_stage_init(&other, st.kind, C);
        encoder_stage_add_conv(&other, C, C + 1, 3, 1, 1);
        EXPECT(encoder_set_last_stage(enc, &other, &err) != 0 && strstr(err.msg, "stage"),
               "%s: a stage of another shape was accepted", specs[k]);
        encoder_stage_free(&other);

        encoder_stage_work_free(&w);
        encoder_workspace_free(&ws);
        encoder_stage_free(&st);
        encoder_free(enc);
        free(images), free(feat), free(x), free(annot), free(annot2), free(dy), free(dx), free(dp);
    }
}

int main(void) {
    RUN(test_conv_backward_matches_reference);
    RUN(test_layer_gradcheck);
    RUN(test_vgg_conv5_stage);
    RUN(test_resnet_bottleneck_layer4);
    RUN(test_resnet_basic_layer4);
    RUN(test_pretrained_split);
    return test_summary();
}
