// test_conv_infer.c: vision/conv_infer.h against its plain loops: every convolution path
// (1x1 in place, strided 1x1 gather, 3x3 and 7x7 im2col with strides and padding, Winograd)
// with and without bias, residual (separate and accumulated in place) and ReLU, with the
// default scratch and with the smallest (one output row, or one row of tiles, per chunk, so
// chunks cross image boundaries); both max poolings on odd and even sides with all-negative
// inputs (padding must never win); and the layout changes.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/rng.h"
#include "vision/conv_infer.h"
#include "vision/winograd.h"
#include "tests/support/test.h"

static void fill(float *x, size_t n, float scale, Rng *rng) {
    for (size_t i = 0; i < n; i++) x[i] = scale * rng_normal(rng);
}

// Largest |got - want| / (1e-5 + 1e-4 |want|) over n (<= 1 passes).
static double worst_ratio(const float *got, const float *want, size_t n, size_t *at) {
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double r = fabs((double)got[i] - want[i]) / (1e-5 + 1e-4 * fabs((double)want[i]));
        if (!(r <= worst)) worst = r, *at = i;  // NaN counts as worst
    }
    return worst;
}

typedef struct {
    int n, C, H, W, OC, K, stride, pad;
} Shape;

// One shape through every method it fits, every epilogue and both scratch sizes.
static void check_shape(const Shape *s, Rng *rng) {
    const int Ho = conv_infer_out_size(s->H, s->K, s->stride, s->pad);
    const int Wo = conv_infer_out_size(s->W, s->K, s->stride, s->pad);
    const size_t ni = (size_t)s->C * s->n * s->H * s->W, no = (size_t)s->OC * s->n * Ho * Wo;
    const size_t nw = (size_t)s->OC * s->C * s->K * s->K;
    float *inp = xmalloc(ni * sizeof(float)), *w = xmalloc(nw * sizeof(float));
    float *bias = xmalloc((size_t)s->OC * sizeof(float)), *res = xmalloc(no * sizeof(float));
    float *want = xmalloc(no * sizeof(float)), *got = xmalloc(no * sizeof(float));
    float *u = xmalloc(winograd_filter_size(s->OC, s->C) * sizeof(float));
    fill(inp, ni, 1.0f, rng);
    fill(w, nw, 1.0f / sqrtf((float)(s->C * s->K * s->K)), rng);
    fill(bias, (size_t)s->OC, 0.5f, rng);
    fill(res, no, 1.0f, rng);
    if (s->K == 3) winograd_filter_transform(u, w, s->OC, s->C);
    for (int method = 0; method < 2; method++) {
        if (method == CONV_INFER_WINOGRAD &&
            !conv_infer_winograd_fits(s->H, s->W, s->K, s->stride, s->pad))
            continue;
        for (int small = 0; small < 2; small++) {
            size_t sf = small ? conv_infer_min_scratch_floats(s->n, s->C, s->H, s->W, s->OC, s->K,
                                                              s->stride, s->pad, method)
                              : conv_infer_scratch_floats(s->n, s->C, s->H, s->W, s->OC, s->K,
                                                          s->stride, s->pad, method);
            float *scratch = xmalloc((sf ? sf : 1) * sizeof(float));
            // mode 0: bias + ReLU; 1: no bias, separate residual, no ReLU; 2: residual in
            // place + bias + ReLU.
            for (int mode = 0; mode < 3; mode++) {
                const float *b = mode == 1 ? NULL : bias;
                const int relu = mode != 1;
                conv_infer_forward_ref(want, inp, w, b, mode ? res : NULL, s->n, s->C, s->H, s->W,
                                       s->OC, s->K, s->stride, s->pad, relu);
                for (size_t i = 0; i < no; i++) got[i] = NAN;
                if (mode == 2) memcpy(got, res, no * sizeof(float));
                conv_infer_forward(got, inp, w, u, b, mode == 1 ? res : mode == 2 ? got : NULL,
                                   scratch, sf, s->n, s->C, s->H, s->W, s->OC, s->K, s->stride,
                                   s->pad, relu, method);
                size_t at = 0;
                double r = worst_ratio(got, want, no, &at);
                EXPECT(r <= 1.0,
                       "%s conv %dx%d/%d pad %d, n %d C %d %dx%d OC %d, mode %d, %s scratch: "
                       "[%zu] = %.7g, expected %.7g",
                       method ? "winograd" : "im2col", s->K, s->K, s->stride, s->pad, s->n, s->C,
                       s->H, s->W, s->OC, mode, small ? "smallest" : "default", at, got[at],
                       want[at]);
            }
            free(scratch);
        }
    }
    free(inp), free(w), free(bias), free(res), free(want), free(got), free(u);
}

static void test_conv_paths_against_reference(void) {
    static const Shape shapes[] = {
        {2, 3, 23, 19, 8, 7, 2, 3},   // ResNet's stem, odd sides
        {3, 5, 9, 11, 6, 3, 1, 1},    // 3x3 stride 1, odd: Winograd's tiles overhang both sides
        {4, 12, 7, 7, 10, 3, 1, 1},   // ResNet's layer4 at 224 px: 7 x 7, 4 x 4 tiles
        {2, 6, 7, 8, 5, 3, 1, 1},     // odd height, even width
        {2, 6, 8, 5, 5, 3, 1, 1},     // even height, odd width
        {2, 3, 1, 5, 4, 3, 1, 1},     // one row: the tile's second row is all overhang
        {2, 3, 3, 1, 4, 3, 1, 1},     // one column
        {3, 16, 13, 9, 16, 3, 1, 1},  // odd sides over several bands at the smallest scratch
        {2, 6, 10, 8, 7, 3, 1, 1},    // 3x3 stride 1, even: Winograd too
        {2, 4, 9, 10, 5, 3, 2, 1},    // 3x3 stride 2 (ResNet's first block of a stage)
        {3, 7, 6, 5, 9, 1, 1, 0},     // 1x1: the input is the column matrix
        {2, 6, 7, 9, 4, 1, 2, 0},     // 1x1 stride 2 downsampling, odd sides
        {1, 1, 2, 2, 1, 3, 1, 1},     // the smallest Winograd shape
        {2, 16, 12, 14, 16, 3, 1, 1}, // several chunks and bands at the smallest scratch
    };
    Rng rng;
    rng_seed(&rng, 11);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) check_shape(&shapes[i], &rng);
}

static void test_maxpools_against_reference(void) {
    Rng rng;
    rng_seed(&rng, 12);
    static const int sides[][2] = {{1, 1}, {2, 3}, {7, 7}, {8, 6}, {9, 12}, {112, 112}};
    for (size_t k = 0; k < sizeof sides / sizeof sides[0]; k++) {
        const int H = sides[k][0], W = sides[k][1], P = 3;
        const size_t n = (size_t)P * H * W;
        float *inp = xmalloc(n * sizeof(float));
        // All negative: a padded zero taking part would show as 0 in the output.
        for (size_t i = 0; i < n; i++) inp[i] = -1.0f - fabsf(rng_normal(&rng));
        const int Ho = maxpool3s2_out_size(H), Wo = maxpool3s2_out_size(W);
        float *got = xmalloc((size_t)P * Ho * Wo * sizeof(float));
        float *want = xmalloc((size_t)P * Ho * Wo * sizeof(float));
        maxpool3s2_forward(got, inp, P, H, W);
        maxpool3s2_forward_ref(want, inp, P, H, W);
        EXPECT(memcmp(got, want, (size_t)P * Ho * Wo * sizeof(float)) == 0, "maxpool3s2 %d x %d",
               H, W);
        if (H >= 2 && W >= 2) {
            maxpool2s2_forward(got, inp, P, H, W);
            maxpool2s2_forward_ref(want, inp, P, H, W);
            EXPECT(memcmp(got, want, (size_t)P * (H / 2) * (W / 2) * sizeof(float)) == 0,
                   "maxpool2s2 %d x %d", H, W);
        }
        free(inp), free(got), free(want);
    }
    // torchvision's sizes: 112 -> 56 (stem pool), 7 -> 4, 224 -> 112.
    EXPECT(maxpool3s2_out_size(112) == 56 && maxpool3s2_out_size(7) == 4);
}

static void test_layouts(void) {
    enum { N = 3, C = 4, HW = 6 };
    float src[N * C * HW], cnhw[N * C * HW], annot[N * HW * C];
    for (int i = 0; i < N * C * HW; i++) src[i] = (float)i;
    nchw_to_cnhw(cnhw, src, N, C, HW);
    cnhw_to_annotations(annot, cnhw, N, C, HW);
    int bad = 0;
    for (int b = 0; b < N; b++)
        for (int c = 0; c < C; c++)
            for (int l = 0; l < HW; l++) {
                float v = src[(b * C + c) * HW + l];
                bad += cnhw[(c * N + b) * HW + l] != v;
                bad += annot[(b * HW + l) * C + c] != v;
            }
    EXPECT(bad == 0, "%d misplaced values", bad);
}

int main(void) {
    RUN(test_conv_paths_against_reference);
    RUN(test_maxpools_against_reference);
    RUN(test_layouts);
    return test_summary();
}
