// test_preprocess.c: vision/preprocess.h: torchvision's size rules (the shorter side, the
// truncated longer side, the centre crop's halves-to-even offsets), the fast antialiased
// resize against its plain loops, grey input, and two photographs against torchvision
// (tests/fixtures/encoders/, bench/reference/encoders_ref.py): the tensor transform
// (F.resize antialias=True) and the PIL pipeline (8-bit rounding after each pass).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/rng.h"
#include "core/safetensors.h"
#include "vision/image.h"
#include "vision/preprocess.h"
#include "tests/support/fixture.h"
#include "tests/support/test.h"

static void test_sizes(void) {
    EXPECT(imagenet_resize_for(224) == 256 && imagenet_resize_for(448) == 512 &&
           imagenet_resize_for(96) == 110);
    int rh, rw;
    imagenet_resized_size(&rh, &rw, 300, 451, 256);  // 256 * 451 / 300 = 384.85
    EXPECT(rh == 256 && rw == 384, "%d x %d", rh, rw);
    imagenet_resized_size(&rh, &rw, 600, 400, 256);  // 256 * 600 / 400 = 384
    EXPECT(rh == 384 && rw == 256, "%d x %d", rh, rw);
    imagenet_resized_size(&rh, &rw, 50, 50, 20);
    EXPECT(rh == 20 && rw == 20, "%d x %d", rh, rw);
}

// With resize equal to the shorter side the resize is the identity, so the output is the
// crop itself: the offsets are round((h - S) / 2) with halves to even (0.5 -> 0, 1.5 -> 2).
static void test_crop_offsets(void) {
    static const int cases[][5] = {
        // h, w, S, top, left
        {5, 8, 4, 0, 2},   // (5 - 4) / 2 = 0.5 -> 0; (8 - 4) / 2 = 2
        {7, 10, 4, 2, 3},  // 1.5 -> 2; 3
        {10, 7, 6, 2, 0},  // 2; 0.5 -> 0
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const int h = cases[k][0], w = cases[k][1], S = cases[k][2];
        Image img = image_new(3, h, w);
        for (size_t i = 0; i < (size_t)3 * h * w; i++) img.data[i] = (float)i / (3.0f * h * w);
        float *out = xmalloc((size_t)3 * S * S * sizeof(float));
        imagenet_preprocess(out, &img, S, h < w ? h : w);
        int bad = 0;
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < S; y++)
                for (int x = 0; x < S; x++) {
                    float want = (*image_at(&img, c, y + cases[k][3], x + cases[k][4]) -
                                  IMAGENET_MEAN[c]) / IMAGENET_STD[c];
                    bad += fabsf(out[(c * S + y) * S + x] - want) > 1e-6f;
                }
        EXPECT(bad == 0, "%d x %d crop %d: %d pixels off", h, w, S, bad);
        free(out);
        image_free(&img);
    }
}

static void test_resize_against_reference(void) {
    static const int cases[][8] = {
        // sh, sw, rh, rw, top, left, oh, ow
        {40, 30, 17, 13, 2, 1, 12, 10},  // down 2.35 x 2.31
        {9, 12, 20, 27, 3, 5, 15, 18},   // up
        {31, 7, 11, 19, 0, 0, 11, 19},   // down along y, up along x, no crop
        {64, 64, 7, 7, 0, 0, 7, 7},      // down 9x: wide windows
    };
    Rng rng;
    rng_seed(&rng, 21);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const int *c = cases[k];
        const size_t n = (size_t)2 * c[0] * c[1], m = (size_t)2 * c[6] * c[7];
        float *src = xmalloc(n * sizeof(float)), *got = xmalloc(m * sizeof(float));
        float *want = xmalloc(m * sizeof(float));
        for (size_t i = 0; i < n; i++) src[i] = rng_uniform(&rng);
        resize_aa_crop(got, src, 2, c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]);
        resize_aa_crop_ref(want, src, 2, c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]);
        double worst = 0.0;
        for (size_t i = 0; i < m; i++) worst = fmax(worst, fabs((double)got[i] - want[i]));
        EXPECT(worst < 1e-6, "case %zu: max error %.3g", k, worst);
        free(src), free(got), free(want);
    }
}

static void test_grey_repeats_its_channel(void) {
    Image g = image_new(1, 12, 16);
    for (int i = 0; i < 12 * 16; i++) g.data[i] = (float)(i % 7) / 7.0f;
    Image rgb = image_to_rgb(&g);
    float a[3 * 8 * 8], b[3 * 8 * 8];
    imagenet_preprocess(a, &g, 8, 10);
    imagenet_preprocess(b, &rgb, 8, 10);
    EXPECT(memcmp(a, b, sizeof a) == 0, "grey and its RGB copy differ");
    image_free(&g);
    image_free(&rgb);
}

// The photographs: decoded from PNG (stb_image and PIL agree exactly on PNG), Resize(48) +
// CenterCrop(32) (a 128 -> 48 px antialiased downscale).
static void test_photos_against_torchvision(void) {
    SafetensorsFile f;
    char path[512];
    if (fixture_load(&f, path, sizeof path, "encoders/outputs.safetensors")) return;
    int S = 0, resize = 0;
    if (fixture_meta_int(&f, "prep_S", &S) || fixture_meta_int(&f, "prep_resize", &resize)) {
        safetensors_free(&f);
        return;
    }
    static const char *photos[] = {"chelsea", "coffee"};
    const size_t n = (size_t)3 * S * S;
    float *out = xmalloc(n * sizeof(float));
    for (int k = 0; k < 2; k++) {
        char png[600], name[64];
        const char *dir = getenv("ATTEND_FIXTURES");
        snprintf(png, sizeof png, "%s/encoders/%s.png", dir && dir[0] ? dir : "tests/fixtures",
                 photos[k]);
        Image img = {0};
        Error err = {{0}};
        EXPECT(image_load(png, &img, 3, &err) == 0, "%s", err.msg);
        if (!img.data) continue;
        imagenet_preprocess(out, &img, S, resize);
        snprintf(name, sizeof name, "prep/%s", photos[k]);
        const float *tv = fixture_tensor(&f, name, n);
        snprintf(name, sizeof name, "pil/%s", photos[k]);
        const float *pil = fixture_tensor(&f, name, n);
        if (tv && pil) {
            double worst_tv = 0.0, worst_pil = 0.0;
            for (size_t i = 0; i < n; i++) {
                const int c = (int)(i / ((size_t)S * S));
                worst_tv = fmax(worst_tv, fabs((double)out[i] - tv[i]));
                double v = out[i] * IMAGENET_STD[c] + IMAGENET_MEAN[c];  // back to [0, 1]
                worst_pil = fmax(worst_pil, fabs(v * 255.0 - pil[i]));
            }
            EXPECT(worst_tv <= 2e-5, "%s: %.3g from torchvision's tensor transform", photos[k],
                   worst_tv);
            EXPECT(worst_pil <= 1.5, "%s: %.3g levels from the PIL pipeline", photos[k], worst_pil);
            if (getenv("PARITY_VERBOSE"))
                printf("  %s: max |error| %.3g (tensor transform), %.3g of 255 (PIL)\n", photos[k],
                       worst_tv, worst_pil);
        }
        image_free(&img);
    }
    free(out);
    safetensors_free(&f);
}

int main(void) {
    RUN(test_sizes);
    RUN(test_crop_offsets);
    RUN(test_resize_against_reference);
    RUN(test_grey_repeats_its_channel);
    RUN(test_photos_against_torchvision);
    return test_summary();
}
