// preprocess.c: see preprocess.h.
#include "vision/preprocess.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"

const float IMAGENET_MEAN[3] = {0.485f, 0.456f, 0.406f};
const float IMAGENET_STD[3] = {0.229f, 0.224f, 0.225f};

int imagenet_resize_for(int S) { return (int)lround(S * 256.0 / 224.0); }

void imagenet_resized_size(int *rh, int *rw, int h, int w, int resize) {
    if (w <= h) {
        *rw = resize;
        *rh = (int)((double)resize * h / w);
    } else {
        *rh = resize;
        *rw = (int)((double)resize * w / h);
    }
}

// Python's round() of a half-integer or integer x2 / 2 (x2 >= 0): halves go to the even one.
static int round_half_even(int x2) {
    int q = x2 / 2;
    return x2 % 2 == 0 ? q : q + (q & 1);
}

static double triangle(double x) {
    x = fabs(x);
    return x < 1.0 ? 1.0 - x : 0.0;
}

// Pillow's window of output i: first input j0 and count; weights into w (normalised).
static int window(int *j0, double *w, int i, int in, int out) {
    const double scale = (double)in / out, support = scale > 1.0 ? scale : 1.0;
    const double center = (i + 0.5) * scale, inv = 1.0 / support;
    int lo = (int)(center - support + 0.5), hi = (int)(center + support + 0.5);
    if (lo < 0) lo = 0;
    if (hi > in) hi = in;
    double sum = 0.0;
    for (int j = lo; j < hi; j++) sum += w[j - lo] = triangle((j + 0.5 - center) * inv);
    for (int j = lo; j < hi && sum != 0.0; j++) w[j - lo] /= sum;
    *j0 = lo;
    return hi - lo;
}

// Coefficient table of one axis: for the n outputs first .. first + n, start[k], count[k]
// and weights at coef[k * width].
typedef struct {
    int *start, *count, width;
    float *coef;
} Axis;

static void axis_make(Axis *a, int in, int out, int first, int n) {
    const double scale = (double)in / out, support = scale > 1.0 ? scale : 1.0;
    a->width = (int)ceil(support) * 2 + 2;
    a->start = xmalloc((size_t)n * sizeof(int));
    a->count = xmalloc((size_t)n * sizeof(int));
    a->coef = xcalloc((size_t)n * a->width, sizeof(float));
    double *w = xmalloc((size_t)a->width * sizeof(double));
    for (int k = 0; k < n; k++) {
        a->count[k] = window(&a->start[k], w, first + k, in, out);
        CHECK(a->count[k] <= a->width, "resize window of %d > %d", a->count[k], a->width);
        for (int j = 0; j < a->count[k]; j++) a->coef[(size_t)k * a->width + j] = (float)w[j];
    }
    free(w);
}

static void axis_free(Axis *a) {
    free(a->start);
    free(a->count);
    free(a->coef);
}

void resize_aa_crop(float *dst, const float *src, int c, int sh, int sw, int rh, int rw,
                    int top, int left, int oh, int ow) {
    CHECK(c >= 1 && sh >= 1 && sw >= 1 && oh >= 1 && ow >= 1 && top >= 0 && left >= 0 &&
              top + oh <= rh && left + ow <= rw,
          "resize %d x %d -> %d x %d, crop %d x %d at (%d, %d)", sh, sw, rh, rw, oh, ow, top, left);
    Axis ax, ay;
    axis_make(&ax, sw, rw, left, ow);
    axis_make(&ay, sh, rh, top, oh);
    // Source rows the crop needs: ay's windows, which move forward with the output row.
    const int y0 = ay.start[0], y1 = ay.start[oh - 1] + ay.count[oh - 1];
    float *tmp = xmalloc((size_t)(y1 - y0) * ow * sizeof(float));  // rows resized along x
    for (int ch = 0; ch < c; ch++) {
        const float *plane = src + (size_t)ch * sh * sw;
        for (int y = y0; y < y1; y++) {
            const float *row = plane + (size_t)y * sw;
            float *t = tmp + (size_t)(y - y0) * ow;
            for (int x = 0; x < ow; x++) {
                const float *k = ax.coef + (size_t)x * ax.width, *r = row + ax.start[x];
                float s = 0.0f;
                for (int j = 0; j < ax.count[x]; j++) s += k[j] * r[j];
                t[x] = s;
            }
        }
        // Down the columns: each output row is a weighted sum of whole tmp rows.
        for (int y = 0; y < oh; y++) {
            float *restrict o = dst + ((size_t)ch * oh + y) * ow;
            const float *k = ay.coef + (size_t)y * ay.width;
            for (int x = 0; x < ow; x++) o[x] = 0.0f;
            for (int j = 0; j < ay.count[y]; j++) {
                const float *restrict t = tmp + (size_t)(ay.start[y] + j - y0) * ow;
                const float kj = k[j];
                for (int x = 0; x < ow; x++) o[x] += kj * t[x];
            }
        }
    }
    free(tmp);
    axis_free(&ax);
    axis_free(&ay);
}

void resize_aa_crop_ref(float *dst, const float *src, int c, int sh, int sw, int rh, int rw,
                        int top, int left, int oh, int ow) {
    double *wx = xmalloc((size_t)(sw + 2) * sizeof(double));
    double *wy = xmalloc((size_t)(sh + 2) * sizeof(double));
    for (int ch = 0; ch < c; ch++)
        for (int y = 0; y < oh; y++) {
            int jy, ny = window(&jy, wy, top + y, sh, rh);
            for (int x = 0; x < ow; x++) {
                int jx, nx = window(&jx, wx, left + x, sw, rw);
                double s = 0.0;
                for (int a = 0; a < ny; a++)
                    for (int b = 0; b < nx; b++)
                        s += wy[a] * wx[b] * src[((size_t)ch * sh + jy + a) * sw + jx + b];
                dst[((size_t)ch * oh + y) * ow + x] = (float)s;
            }
        }
    free(wx);
    free(wy);
}

void imagenet_preprocess(float *out, const Image *img, int S, int resize) {
    CHECK(img->c == 1 || img->c == 3, "%d channels", img->c);
    CHECK(S >= 1 && resize >= S, "crop %d of a %d px resize", S, resize);
    int rh, rw;
    imagenet_resized_size(&rh, &rw, img->h, img->w, resize);
    const int top = round_half_even(rh - S), left = round_half_even(rw - S);
    resize_aa_crop(out, img->data, img->c, img->h, img->w, rh, rw, top, left, S, S);
    const size_t plane = (size_t)S * S;
    if (img->c == 1)
        for (int ch = 1; ch < 3; ch++) memcpy(out + ch * plane, out, plane * sizeof(float));
    for (int ch = 0; ch < 3; ch++) {
        const float m = IMAGENET_MEAN[ch], sd = IMAGENET_STD[ch];
        float *p = out + ch * plane;
        for (size_t k = 0; k < plane; k++) p[k] = (p[k] - m) / sd;
    }
}
