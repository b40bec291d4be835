// overlay.c: see overlay.h.
#include "vision/overlay.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "vision/font.h"

static inline float clamp01(float v) { return v > 0.0f ? (v < 1.0f ? v : 1.0f) : 0.0f; }

// Control points of the heat ramp (value, r, g, b); brightness rises along it.
static const float HEAT[][4] = {
    {0.00f, 0.00f, 0.00f, 0.02f}, {0.20f, 0.22f, 0.04f, 0.42f}, {0.45f, 0.70f, 0.13f, 0.38f},
    {0.65f, 0.94f, 0.38f, 0.10f}, {0.85f, 0.99f, 0.78f, 0.20f}, {1.00f, 1.00f, 1.00f, 0.85f},
};

void colormap_heat(float rgb[3], float v) {
    v = clamp01(v);
    int n = (int)(sizeof HEAT / sizeof HEAT[0]);
    int k = 1;
    while (k < n - 1 && v > HEAT[k][0]) k++;
    float t = (v - HEAT[k - 1][0]) / (HEAT[k][0] - HEAT[k - 1][0]);
    for (int ch = 0; ch < 3; ch++)
        rgb[ch] = HEAT[k - 1][ch + 1] + t * (HEAT[k][ch + 1] - HEAT[k - 1][ch + 1]);
}

// The map upsampled to (h, w), scaled to its maximum when normalize, clamped to [0, 1].
static float *upsample_map(const float *map, int mh, int mw, int h, int w, int normalize) {
    float *m = xmalloc((size_t)h * w * sizeof(float));
    resize_bilinear(m, h, w, map, 1, mh, mw);
    float scale = 1.0f;
    if (normalize) {
        float mx = 0.0f;
        for (int i = 0; i < mh * mw; i++)
            if (map[i] > mx) mx = map[i];
        if (mx > 0.0f) scale = 1.0f / mx;
    }
    for (size_t i = 0; i < (size_t)h * w; i++) m[i] = clamp01(m[i] * scale);
    return m;
}

void overlay_attention(Image *img, const float *map, int mh, int mw, float alpha, int normalize) {
    CHECK(img->c == 3, "overlay_attention needs an RGB image (c = %d)", img->c);
    size_t plane = (size_t)img->h * img->w;
    float *m = upsample_map(map, mh, mw, img->h, img->w, normalize);
    for (size_t i = 0; i < plane; i++) {
        float rgb[3];
        colormap_heat(rgb, m[i]);
        float a = alpha * m[i];
        for (int ch = 0; ch < 3; ch++) {
            float *p = img->data + ch * plane + i;
            *p = (1.0f - a) * *p + a * rgb[ch];
        }
    }
    free(m);
}

Image heatmap_image(const float *map, int mh, int mw, int h, int w, int normalize) {
    Image img = image_new(3, h, w);
    size_t plane = (size_t)h * w;
    float *m = upsample_map(map, mh, mw, h, w, normalize);
    for (size_t i = 0; i < plane; i++) {
        float rgb[3];
        colormap_heat(rgb, m[i]);
        for (int ch = 0; ch < 3; ch++) img.data[ch * plane + i] = rgb[ch];
    }
    free(m);
    return img;
}

static inline void put_pixel(Image *img, int x, int y, const float rgb[3]) {
    if (x < 0 || y < 0 || x >= img->w || y >= img->h) return;
    if (img->c == 3)
        for (int ch = 0; ch < 3; ch++) *image_at(img, ch, y, x) = rgb[ch];
    else
        *image_at(img, 0, y, x) = (rgb[0] + rgb[1] + rgb[2]) / 3.0f;
}

// Rounds a coordinate and keeps it within a margin of the image so loops stay short
// (and int conversion defined) for rectangles far outside.
static int clamp_coord(float v, int n) {
    if (!(v > -2.0f)) return -2;  // also NaN
    if (v > n + 1.0f) return n + 1;
    return (int)lrintf(v);
}

void fill_rect(Image *img, int x0, int y0, int x1, int y1, const float rgb[3]) {
    if (x0 > x1) { int t = x0; x0 = x1; x1 = t; }
    if (y0 > y1) { int t = y0; y0 = y1; y1 = t; }
    if (x0 < 0) x0 = 0;
    if (y0 < 0) y0 = 0;
    if (x1 > img->w - 1) x1 = img->w - 1;
    if (y1 > img->h - 1) y1 = img->h - 1;
    for (int y = y0; y <= y1; y++)
        for (int x = x0; x <= x1; x++) put_pixel(img, x, y, rgb);
}

void draw_rect(Image *img, float fx0, float fy0, float fx1, float fy1, const float rgb[3],
               int thickness) {
    CHECK(thickness >= 1, "thickness = %d", thickness);
    int x0 = clamp_coord(fminf(fx0, fx1), img->w), x1 = clamp_coord(fmaxf(fx0, fx1), img->w);
    int y0 = clamp_coord(fminf(fy0, fy1), img->h), y1 = clamp_coord(fmaxf(fy0, fy1), img->h);
    for (int t = 0; t < thickness; t++) {
        int a = x0 + t, b = x1 - t, c = y0 + t, d = y1 - t;
        if (a > b || c > d) break;
        for (int x = a; x <= b; x++) {
            put_pixel(img, x, c, rgb);
            put_pixel(img, x, d, rgb);
        }
        for (int y = c; y <= d; y++) {
            put_pixel(img, a, y, rgb);
            put_pixel(img, b, y, rgb);
        }
    }
}

// Copies tile (grey or RGB) into dst (dst->c >= tile->c) with its top-left at (x, y).
static void blit(Image *dst, const Image *tile, int x, int y) {
    for (int ch = 0; ch < dst->c; ch++) {
        int sc = tile->c == 1 ? 0 : ch;
        for (int r = 0; r < tile->h; r++) {
            int yy = y + r;
            if (yy < 0 || yy >= dst->h) continue;
            for (int col = 0; col < tile->w; col++) {
                int xx = x + col;
                if (xx < 0 || xx >= dst->w) continue;
                *image_at(dst, ch, yy, xx) = *image_at(tile, sc, r, col);
            }
        }
    }
}

static void fill_image(Image *img, float v) {
    size_t n = (size_t)img->c * img->h * img->w;
    for (size_t i = 0; i < n; i++) img->data[i] = v;
}

Image tile_grid(const Image *tiles, int n, int cols, int margin, float bg) {
    CHECK(n >= 1 && cols >= 1 && margin >= 0, "n = %d, cols = %d, margin = %d", n, cols, margin);
    if (cols > n) cols = n;
    int rows = (n + cols - 1) / cols, h = tiles[0].h, w = tiles[0].w, c = 1;
    for (int i = 0; i < n; i++) {
        CHECK(tiles[i].h == h && tiles[i].w == w, "tile %d is %d x %d, tile 0 %d x %d", i,
              tiles[i].w, tiles[i].h, w, h);
        if (tiles[i].c == 3) c = 3;
    }
    Image out = image_new(c, rows * h + (rows + 1) * margin, cols * w + (cols + 1) * margin);
    fill_image(&out, bg);
    for (int i = 0; i < n; i++)
        blit(&out, &tiles[i], margin + (i % cols) * (w + margin), margin + (i / cols) * (h + margin));
    return out;
}

Image tile_grid_planes(const float *planes, int n, int h, int w, int cols, int margin, float bg) {
    Image *tiles = xmalloc((size_t)n * sizeof(Image));
    for (int i = 0; i < n; i++) tiles[i] = (Image){1, h, w, (float *)planes + (size_t)i * h * w};
    Image out = tile_grid(tiles, n, cols, margin, bg);
    free(tiles);  // the planes are borrowed, not owned
    return out;
}

// Greedy word wrap of text into lines of at most width characters (long words are
// split); returns a malloc'd copy with '\n' between lines and the line count in *lines.
static char *wrap_text(const char *text, int width, int *lines) {
    size_t len = strlen(text);
    char *out = xmalloc(2 * len + 2);
    size_t o = 0;
    int col = 0;
    *lines = 1;
    const char *p = text;
    while (*p) {
        if (*p == ' ' || *p == '\n') {
            p++;
            continue;
        }
        size_t wl = 0;
        while (p[wl] && p[wl] != ' ' && p[wl] != '\n') wl++;
        if (col > 0 && col + 1 + (int)wl > width) {
            out[o++] = '\n';
            (*lines)++;
            col = 0;
        } else if (col > 0) {
            out[o++] = ' ';
            col++;
        }
        for (size_t i = 0; i < wl; i++) {
            if (col >= width) {
                out[o++] = '\n';
                (*lines)++;
                col = 0;
            }
            out[o++] = p[i];
            col++;
        }
        p += wl;
    }
    out[o] = 0;
    return out;
}

Image caption_strip(const Image *tiles, const char *const *captions, int n, int margin,
                    int text_scale) {
    CHECK(n >= 1 && margin >= 0 && text_scale >= 1);
    int h = tiles[0].h, w = tiles[0].w;
    int width_chars = w / (FONT_CELL_W * text_scale);
    if (width_chars < 1) width_chars = 1;
    char **wrapped = xcalloc((size_t)n, sizeof(char *));
    int max_lines = 0;
    for (int i = 0; i < n; i++) {
        CHECK(tiles[i].h == h && tiles[i].w == w, "tile %d is %d x %d, tile 0 %d x %d", i,
              tiles[i].w, tiles[i].h, w, h);
        int lines = 0;
        if (captions && captions[i]) {
            wrapped[i] = wrap_text(captions[i], width_chars, &lines);
            if (lines > max_lines) max_lines = lines;
        }
    }
    int text_h = max_lines * FONT_CELL_H * text_scale;
    int gap = max_lines > 0 ? (margin > 2 ? margin / 2 : 2) : 0;
    Image out = image_new(3, margin + h + gap + text_h + margin, margin + n * (w + margin));
    fill_image(&out, 1.0f);
    static const float black[3] = {0, 0, 0};
    for (int i = 0; i < n; i++) {
        int x = margin + i * (w + margin);
        blit(&out, &tiles[i], x, margin);
        if (wrapped[i]) font_draw_text(&out, x, margin + h + gap, wrapped[i], text_scale, black);
        free(wrapped[i]);
    }
    free(wrapped);
    return out;
}

Image stack_vertical(const Image *imgs, int n, int margin) {
    CHECK(n >= 1 && margin >= 0);
    int w = 0, h = 0;
    for (int i = 0; i < n; i++) {
        if (imgs[i].w > w) w = imgs[i].w;
        h += imgs[i].h + (i > 0 ? margin : 0);
    }
    Image out = image_new(3, h, w);
    fill_image(&out, 1.0f);
    int y = 0;
    for (int i = 0; i < n; i++) {
        blit(&out, &imgs[i], 0, y);
        y += imgs[i].h + margin;
    }
    return out;
}
