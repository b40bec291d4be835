// encoder_stage.c: see encoder_stage.h.
#include "vision/encoder_stage.h"

#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "vision/conv_infer.h"
#include "vision/conv_train.h"

void encoder_stage_init(EncoderStage *st, EncoderStageKind kind, int C_in) {
    CHECK(C_in >= 1, "stage input channels %d", C_in);
    memset(st, 0, sizeof *st);
    st->kind = kind, st->C_in = C_in, st->D = C_in;
}

void encoder_stage_free(EncoderStage *st) {
    free(st->convs);
    free(st->blocks);
    free(st->params);
    memset(st, 0, sizeof *st);
}

int encoder_stage_add_conv(EncoderStage *st, int C, int OC, int K, int stride, int pad) {
    CHECK(C >= 1 && OC >= 1 && K >= 1 && stride >= 1 && pad >= 0 && pad < K,
          "stage conv C %d OC %d K %d stride %d pad %d", C, OC, K, stride, pad);
    if (st->kind == ENCODER_STAGE_VGG) {
        CHECK(C == st->D, "VGG stage: conv of %d input channels after %d", C, st->D);
        CHECK(K == 3 && stride == 1 && pad == 1, "VGG stage convolutions are 3x3 stride 1 pad 1");
        st->D = OC;
    }
    st->convs = xrealloc(st->convs, (size_t)(st->n_convs + 1) * sizeof *st->convs);
    StageConv *c = &st->convs[st->n_convs];
    *c = (StageConv){.C = C, .OC = OC, .K = K, .stride = stride, .pad = pad};
    const size_t old = st->n_params;
    c->w = old;
    c->b = old + (size_t)OC * C * K * K;
    st->n_params = c->b + (size_t)OC;
    st->params = xrealloc(st->params, st->n_params * sizeof(float));
    memset(st->params + old, 0, (st->n_params - old) * sizeof(float));
    return st->n_convs++;
}

static int last_conv(const StageBlock *b) { return b->conv3 >= 0 ? b->conv3 : b->conv2; }

void encoder_stage_add_block(EncoderStage *st, int conv1, int conv2, int conv3, int down) {
    CHECK(st->kind == ENCODER_STAGE_RESNET, "blocks belong to a ResNet stage");
    const int ids[4] = {conv1, conv2, conv3, down};
    for (int j = 0; j < 4; j++)
        CHECK(ids[j] < st->n_convs && (ids[j] >= 0 || j >= 2), "stage block conv %d", ids[j]);
    const StageConv *c = st->convs;
    const int out = c[conv3 >= 0 ? conv3 : conv2].OC;
    CHECK(c[conv1].C == st->D && c[conv2].C == c[conv1].OC && (conv3 < 0 || c[conv3].C == c[conv2].OC),
          "stage block: channels do not chain");
    CHECK(down >= 0 ? c[down].C == st->D && c[down].OC == out : out == st->D,
          "stage block: the shortcut does not match the block's output");
    st->blocks = xrealloc(st->blocks, (size_t)(st->n_blocks + 1) * sizeof *st->blocks);
    st->blocks[st->n_blocks++] = (StageBlock){conv1, conv2, conv3, down};
    st->D = out;
}

static int conv_side(const StageConv *c, int s) { return conv_infer_out_size(s, c->K, c->stride, c->pad); }

// Fills side[i] (the input side of each convolution, when side is not NULL); returns the
// output side, 0 when too small.
static int walk(const EncoderStage *st, int S, int *side) {
    int s = S;
    if (st->kind == ENCODER_STAGE_VGG) {
        for (int i = 0; i < st->n_convs; i++) {
            if (s + 2 * st->convs[i].pad < st->convs[i].K) return 0;
            if (side) side[i] = s;
            s = conv_side(&st->convs[i], s);
        }
        return s;
    }
    for (int k = 0; k < st->n_blocks; k++) {
        const StageBlock *b = &st->blocks[k];
        const int chain[3] = {b->conv1, b->conv2, b->conv3};
        int t = s;
        for (int j = 0; j < 3 && chain[j] >= 0; j++) {
            const StageConv *c = &st->convs[chain[j]];
            if (t + 2 * c->pad < c->K) return 0;
            if (side) side[chain[j]] = t;
            t = conv_side(c, t);
        }
        if (b->down >= 0) {
            if (side) side[b->down] = s;
            CHECK(conv_side(&st->convs[b->down], s) == t, "stage block: shortcut side differs");
        }
        s = t;
    }
    return s;
}

int encoder_stage_out_side(const EncoderStage *st, int S) { return S >= 1 ? walk(st, S, NULL) : 0; }

void encoder_stage_work_alloc(EncoderStageWork *w, const EncoderStage *st, int n, int S) {
    CHECK(n >= 1 && encoder_stage_out_side(st, S) >= 1, "stage input %d images of side %d", n, S);
    memset(w, 0, sizeof *w);
    w->n = n, w->S = S, w->n_convs = st->n_convs;
    w->side = xmalloc((size_t)st->n_convs * sizeof *w->side);
    walk(st, S, w->side);
    w->act = xcalloc((size_t)st->n_convs, sizeof *w->act);
    w->grad = xcalloc((size_t)st->n_convs, sizeof *w->grad);
    size_t scratch = 1;
    for (int i = 0; i < st->n_convs; i++) {
        const StageConv *c = &st->convs[i];
        const int s = w->side[i], so = conv_side(c, s);
        const size_t floats = (size_t)c->OC * n * so * so;
        w->act[i] = xmalloc(floats * sizeof(float));
        w->grad[i] = xmalloc(floats * sizeof(float));
        size_t f = conv_infer_scratch_floats(n, c->C, s, s, c->OC, c->K, c->stride, c->pad,
                                             CONV_INFER_IM2COL);
        scratch = f > scratch ? f : scratch;
        f = conv_train_col_floats(c->C, s, s, c->K, c->stride, c->pad);
        scratch = f > scratch ? f : scratch;
    }
    w->scratch_floats = scratch;
    w->scratch = xmalloc(scratch * sizeof(float));
}

void encoder_stage_work_free(EncoderStageWork *w) {
    free(w->side);
    if (w->act)
        for (int i = 0; i < w->n_convs; i++) {
            free(w->act[i]);
            free(w->grad[i]);
        }
    free(w->act);
    free(w->grad);
    free(w->scratch);
    memset(w, 0, sizeof *w);
}

// ---- forward ---------------------------------------------------------------------------

// Convolution i of w->n images of side w->side[i]: out = act(conv(in) + bias + residual).
static void conv_forward(const EncoderStage *st, EncoderStageWork *w, int i, float *out,
                         const float *in, const float *residual, int relu, int ref) {
    const StageConv *c = &st->convs[i];
    const int s = w->side[i];
    const float *wt = st->params + c->w, *bias = st->params + c->b;
    if (ref)
        conv_infer_forward_ref(out, in, wt, bias, residual, w->n, c->C, s, s, c->OC, c->K,
                               c->stride, c->pad, relu);
    else
        conv_infer_forward(out, in, wt, NULL, bias, residual, w->scratch, w->scratch_floats, w->n,
                           c->C, s, s, c->OC, c->K, c->stride, c->pad, relu, CONV_INFER_IM2COL);
}

static void forward(const EncoderStage *st, EncoderStageWork *w, const float *x, int ref) {
    if (st->kind == ENCODER_STAGE_VGG) {
        const float *in = x;
        for (int i = 0; i < st->n_convs; i++) {
            conv_forward(st, w, i, w->act[i], in, NULL, 1, ref);
            in = w->act[i];
        }
        return;
    }
    const float *in = x;
    for (int k = 0; k < st->n_blocks; k++) {
        const StageBlock *b = &st->blocks[k];
        conv_forward(st, w, b->conv1, w->act[b->conv1], in, NULL, 1, ref);
        if (b->down >= 0) conv_forward(st, w, b->down, w->act[b->down], in, NULL, 0, ref);
        const float *res = b->down >= 0 ? w->act[b->down] : in;
        if (b->conv3 >= 0) {
            conv_forward(st, w, b->conv2, w->act[b->conv2], w->act[b->conv1], NULL, 1, ref);
            conv_forward(st, w, b->conv3, w->act[b->conv3], w->act[b->conv2], res, 1, ref);
        } else {
            conv_forward(st, w, b->conv2, w->act[b->conv2], w->act[b->conv1], res, 1, ref);
        }
        in = w->act[last_conv(b)];
    }
}

void encoder_stage_forward(const EncoderStage *st, EncoderStageWork *w, const float *x) {
    CHECK(w->n_convs == st->n_convs && st->n_convs >= 1, "workspace of another stage");
    forward(st, w, x, 0);
}

void encoder_stage_forward_ref(const EncoderStage *st, EncoderStageWork *w, const float *x) {
    CHECK(w->n_convs == st->n_convs && st->n_convs >= 1, "workspace of another stage");
    forward(st, w, x, 1);
}

const float *encoder_stage_output(const EncoderStage *st, const EncoderStageWork *w) {
    const int i = st->kind == ENCODER_STAGE_VGG ? st->n_convs - 1
                                                : last_conv(&st->blocks[st->n_blocks - 1]);
    return w->act[i];
}

// ---- backward --------------------------------------------------------------------------

static size_t act_floats(const EncoderStage *st, const EncoderStageWork *w, int i) {
    const int so = conv_side(&st->convs[i], w->side[i]);
    return (size_t)st->convs[i].OC * w->n * so * so;
}

// ReLU's backward in place: g = g (act > 0).
static void relu_mask(float *g, const float *act, size_t n) {
    for (size_t k = 0; k < n; k++) g[k] = act[k] > 0.0f ? g[k] : 0.0f;
}

// Convolution i's backward: dout (its pre-activation gradient), in (its input); accumulates
// into din (or NULL) and dparams.
static void conv_backward(const EncoderStage *st, EncoderStageWork *w, int i, float *dparams,
                          float *din, const float *dout, const float *in, int ref) {
    const StageConv *c = &st->convs[i];
    const int s = w->side[i];
    const float *wt = st->params + c->w;
    if (ref)
        conv_train_backward_ref(din, dparams + c->w, dparams + c->b, dout, in, wt, w->n, c->C, s,
                                s, c->OC, c->K, c->stride, c->pad);
    else
        conv_train_backward(din, dparams + c->w, dparams + c->b, dout, in, wt, w->scratch, w->n,
                            c->C, s, s, c->OC, c->K, c->stride, c->pad);
}

// Zeroes convolution i's activation gradient and returns it.
static float *zeroed_grad(const EncoderStage *st, EncoderStageWork *w, int i) {
    memset(w->grad[i], 0, act_floats(st, w, i) * sizeof(float));
    return w->grad[i];
}

static void backward_vgg(const EncoderStage *st, EncoderStageWork *w, float *dparams, float *dx,
                         const float *x, int ref) {
    for (int i = st->n_convs - 1; i >= 0; i--) {
        relu_mask(w->grad[i], w->act[i], act_floats(st, w, i));
        float *din = i > 0 ? zeroed_grad(st, w, i - 1) : dx;
        conv_backward(st, w, i, dparams, din, w->grad[i], i > 0 ? w->act[i - 1] : x, ref);
    }
}

static void backward_resnet(const EncoderStage *st, EncoderStageWork *w, float *dparams,
                            float *dx, const float *x, int ref) {
    for (int k = st->n_blocks - 1; k >= 0; k--) {
        const StageBlock *b = &st->blocks[k];
        const int out = last_conv(b);
        const float *in = k > 0 ? w->act[last_conv(&st->blocks[k - 1])] : x;
        float *din = k > 0 ? zeroed_grad(st, w, last_conv(&st->blocks[k - 1])) : dx;
        float *g = w->grad[out];
        relu_mask(g, w->act[out], act_floats(st, w, out));
        // The shortcut: through the downsampling convolution, or straight to the input.
        if (b->down >= 0) {
            conv_backward(st, w, b->down, dparams, din, g, in, ref);
        } else if (din) {
            const size_t n = act_floats(st, w, out);
            for (size_t e = 0; e < n; e++) din[e] += g[e];
        }
        if (b->conv3 >= 0) {
            conv_backward(st, w, b->conv3, dparams, zeroed_grad(st, w, b->conv2), g,
                          w->act[b->conv2], ref);
            relu_mask(w->grad[b->conv2], w->act[b->conv2], act_floats(st, w, b->conv2));
        }
        conv_backward(st, w, b->conv2, dparams, zeroed_grad(st, w, b->conv1), w->grad[b->conv2],
                      w->act[b->conv1], ref);
        relu_mask(w->grad[b->conv1], w->act[b->conv1], act_floats(st, w, b->conv1));
        conv_backward(st, w, b->conv1, dparams, din, w->grad[b->conv1], in, ref);
    }
}

static void backward(const EncoderStage *st, EncoderStageWork *w, float *dparams, float *dx,
                     const float *x, const float *dy, int ref) {
    CHECK(w->n_convs == st->n_convs && st->n_convs >= 1, "workspace of another stage");
    const int out = st->kind == ENCODER_STAGE_VGG ? st->n_convs - 1
                                                  : last_conv(&st->blocks[st->n_blocks - 1]);
    memcpy(w->grad[out], dy, act_floats(st, w, out) * sizeof(float));
    if (st->kind == ENCODER_STAGE_VGG)
        backward_vgg(st, w, dparams, dx, x, ref);
    else
        backward_resnet(st, w, dparams, dx, x, ref);
}

void encoder_stage_backward(const EncoderStage *st, EncoderStageWork *w, float *dparams,
                            float *dx, const float *x, const float *dy) {
    backward(st, w, dparams, dx, x, dy, 0);
}

void encoder_stage_backward_ref(const EncoderStage *st, EncoderStageWork *w, float *dparams,
                                float *dx, const float *x, const float *dy) {
    backward(st, w, dparams, dx, x, dy, 1);
}
