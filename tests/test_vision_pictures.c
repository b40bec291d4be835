// test_vision_pictures.c: pictures made by the toolkit: animated GIFs (vision/gif.h),
// the bitmap font (vision/font.h), heat maps, rectangles, grids and captioned strips
// (vision/overlay.h) and line plots (vision/plot.h).
//
// Set VISION_TEST_OUT to a folder to keep the pictures (strip.png, plot.png, draw.gif)
// for looking at; otherwise they go to a temporary folder that is removed.
#include <gif_lib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/fileio.h"
#include "core/rng.h"
#include "tests/support/test.h"
#include "vision/font.h"
#include "vision/gif.h"
#include "vision/image.h"
#include "vision/overlay.h"
#include "vision/plot.h"
#include "vision/png.h"

static char outdir[512];
static int keep_outputs;

static void out_path(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "%s/%s", outdir, name);
}

static int count_differing(const Image *a, const Image *b) {
    int n = 0;
    for (size_t i = 0; i < (size_t)a->c * a->h * a->w; i++) n += a->data[i] != b->data[i];
    return n;
}

static void test_gif_frames_read_back(void) {
    // 5 grey frames of a growing bar, and 3 RGB frames.
    int n = 5, h = 10, w = 12;
    float *frames = xcalloc((size_t)n * h * w, sizeof(float));
    for (int t = 0; t < n; t++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x <= t * 2; x++) frames[((size_t)t * h + y) * w + x] = (float)y / (h - 1);
    char path[600];
    out_path(path, sizeof path, "draw.gif");
    Error err;
    EXPECT(write_gif(path, frames, n, 1, h, w, 20, &err) == 0, "%s", err.msg);
    int e = 0;
    GifFileType *gif = DGifOpenFileName(path, &e);
    EXPECT(gif != NULL, "giflib cannot open it: %s", GifErrorString(e));
    if (gif) {
        EXPECT(DGifSlurp(gif) == GIF_OK, "DGifSlurp: %s", GifErrorString(gif->Error));
        EXPECT(gif->ImageCount == n, "%d frames, wrote %d", gif->ImageCount, n);
        EXPECT(gif->SWidth == w && gif->SHeight == h, "size %d x %d", gif->SWidth, gif->SHeight);
        // The NETSCAPE2.0 loop extension rides in the first frame's extension blocks.
        int looping = 0;
        for (int k = 0; k + 1 < gif->SavedImages[0].ExtensionBlockCount; k++) {
            ExtensionBlock *b = &gif->SavedImages[0].ExtensionBlocks[k];
            if (b->Function == APPLICATION_EXT_FUNC_CODE && b->ByteCount == 11 &&
                memcmp(b->Bytes, "NETSCAPE2.0", 11) == 0) {
                ExtensionBlock *sub = b + 1;
                looping = sub->ByteCount == 3 && sub->Bytes[0] == 1 && sub->Bytes[1] == 0 && sub->Bytes[2] == 0;
            }
        }
        EXPECT(looping, "no NETSCAPE2.0 loop-forever extension");
        GraphicsControlBlock gcb;
        EXPECT(DGifSavedExtensionToGCB(gif, n - 1, &gcb) == GIF_OK && gcb.DelayTime == 20, "frame delay");
        // Pixels come back within one grey level.
        ColorMapObject *cm = gif->SColorMap;
        float worst = 0.0f;
        for (int t = 0; t < n && cm; t++)
            for (int i = 0; i < h * w; i++) {
                GifColorType c = cm->Colors[gif->SavedImages[t].RasterBits[i]];
                float d = fabsf(c.Red / 255.0f - frames[(size_t)t * h * w + i]);
                if (d > worst) worst = d;
                EXPECT(c.Red == c.Green && c.Green == c.Blue, "grey frame has colour");
            }
        EXPECT(worst <= 0.5f / 255 + 1e-6f, "grey error %g", worst);
        DGifCloseFile(gif, &e);
    }
    free(frames);

    Image rgb[3];
    for (int t = 0; t < 3; t++) {
        rgb[t] = image_new(t == 1 ? 1 : 3, 8, 8);  // a grey frame among colour ones
        for (size_t i = 0; i < (size_t)rgb[t].c * 64; i++) rgb[t].data[i] = (float)((i * 7 + t) % 11) / 10;
    }
    out_path(path, sizeof path, "colour.gif");
    EXPECT(write_gif_images(path, rgb, 3, 10, &err) == 0, "%s", err.msg);
    gif = DGifOpenFileName(path, &e);
    EXPECT(gif && DGifSlurp(gif) == GIF_OK && gif->ImageCount == 3, "colour gif read back");
    if (gif) {
        // Each colour maps to the nearest palette entry: error at most half a cube step.
        unsigned char pal[768];
        gif_palette(0, pal);
        for (int i = 0; i < 64 && gif->ImageCount == 3; i++) {
            int k = gif->SavedImages[0].RasterBits[i];
            for (int ch = 0; ch < 3; ch++) {
                float d = fabsf(pal[3 * k + ch] / 255.0f - rgb[0].data[ch * 64 + i]);
                EXPECT(d <= 0.1f + 1e-3f, "colour error %g", d);
            }
        }
        DGifCloseFile(gif, &e);
    }
    for (int t = 0; t < 3; t++) image_free(&rgb[t]);
    EXPECT(write_gif(path, NULL, 0, 1, 8, 8, 10, &err) == -1, "zero frames accepted");
}

static void test_gif_palette_nearest(void) {
    unsigned char pal[768];
    for (int grey = 0; grey <= 1; grey++) {
        gif_palette(grey, pal);
        Rng rng;
        rng_seed(&rng, 9);
        for (int trial = 0; trial < 300; trial++) {
            float c[3];
            for (int ch = 0; ch < 3; ch++) c[ch] = rng_uniform(&rng);
            if (grey) c[1] = c[2] = c[0];
            int k = gif_palette_index(grey, c[0], c[1], c[2]);
            EXPECT(k >= 0 && k < 256, "index %d", k);
            double best = 1e9, got = 0;
            for (int j = 0; j < 256; j++) {
                double d = 0;
                for (int ch = 0; ch < 3; ch++) d += (pal[3 * j + ch] / 255.0 - c[ch]) * (pal[3 * j + ch] / 255.0 - c[ch]);
                if (d < best) best = d;
                if (j == k) got = d;
            }
            EXPECT(got <= best + 1e-4, "colour %g %g %g: entry %d at %g, best %g", c[0], c[1], c[2], k, got, best);
        }
    }
}

// g, j, p, q and y reach below the baseline (the row under 'o''s lowest), the rest do not.
static void test_font_descenders(void) {
    for (int ch = 32; ch <= 126; ch++)
        EXPECT((font_descender(ch) != 0) == (strchr("gjpqy", ch) != NULL), "'%c' descender %#x", ch,
               font_descender(ch));
    EXPECT(font_glyph('o')[FONT_GLYPH_H - 1] != 0, "'o' stands on the last glyph row");
    Image img = image_new(3, FONT_CELL_H, 2 * FONT_CELL_W);
    const float white[3] = {1, 1, 1};
    font_draw_text(&img, 0, 0, "op", 1, white);
    int o_low = 0, p_low = 0;
    for (int y = 0; y < FONT_CELL_H; y++)
        for (int x = 0; x < 2 * FONT_CELL_W; x++)
            if (*image_at(&img, 0, y, x) > 0.5f) {
                if (x < FONT_CELL_W) o_low = y;
                else p_low = y;
            }
    EXPECT(o_low == FONT_GLYPH_H - 1 && p_low == FONT_GLYPH_H, "'o' lowest row %d, 'p' lowest row %d", o_low, p_low);
    image_free(&img);
}

static void test_font_draws_text(void) {
    int blank = 0;
    for (int ch = 33; ch <= 126; ch++) {
        const unsigned char *g = font_glyph(ch);
        int bits = 0;
        for (int r = 0; r < FONT_GLYPH_H; r++) bits += g[r] != 0;
        blank += bits == 0;
        EXPECT(ch == 'A' || memcmp(g, font_glyph('A'), FONT_GLYPH_H) != 0, "'%c' looks like 'A'", ch);
    }
    EXPECT(blank == 0, "%d printable glyphs are blank", blank);
    EXPECT(font_glyph(1) == font_glyph('?') && font_glyph(200) == font_glyph('?'), "unknown -> '?'");

    Image img = image_new(3, 20, 60);
    const float red[3] = {1, 0, 0};
    int end = font_draw_text(&img, 2, 3, "Hi 42", 2, red);
    EXPECT(end == 2 + 5 * FONT_CELL_W * 2, "returned x %d", end);
    int lit = 0, outside = 0;
    for (int y = 0; y < 20; y++)
        for (int x = 0; x < 60; x++) {
            int on = *image_at(&img, 0, y, x) == 1.0f;
            lit += on;
            if (on && (y < 3 || y >= 3 + FONT_GLYPH_H * 2)) outside++;
            EXPECT(*image_at(&img, 1, y, x) == 0.0f, "green channel touched");
        }
    EXPECT(lit > 40, "only %d pixels lit", lit);
    EXPECT(outside == 0, "%d pixels outside the text rows", outside);
    EXPECT(font_text_width("abc\nde", 3) == 3 * FONT_CELL_W * 3, "width");
    EXPECT(font_text_height("abc\nde", 1) == 2 * FONT_CELL_H, "height");
    // Clipping: text hanging over every edge writes only inside (ASan checks in `make check`).
    Image clip = image_new(1, 5, 5);
    font_draw_text(&clip, -7, -3, "WWW\nWWW", 2, red);
    font_draw_text(&clip, 3, 2, "W", 4, red);
    font_draw_text(&clip, -2000000000, 2000000000, "W", 1, red);
    int lit_clip = 0;
    for (int i = 0; i < 25; i++) lit_clip += clip.data[i] != 0.0f;
    EXPECT(lit_clip > 0, "nothing drawn in the clipped image");
    image_free(&clip);
    image_free(&img);
}

static void test_colormap_and_attention_overlay(void) {
    float prev = -1.0f;
    for (int i = 0; i <= 100; i++) {
        float rgb[3];
        colormap_heat(rgb, i / 100.0f);
        float lum = 0.299f * rgb[0] + 0.587f * rgb[1] + 0.114f * rgb[2];
        EXPECT(lum >= prev - 1e-6f, "brightness falls at %d", i);
        prev = lum;
    }
    float lo[3], hi[3];
    colormap_heat(lo, 0.0f);
    colormap_heat(hi, 1.0f);
    EXPECT(lo[0] < 0.1f && hi[0] > 0.9f && hi[1] > 0.9f, "ramp ends");

    Image base = image_new(3, 32, 32);
    for (size_t i = 0; i < (size_t)3 * 32 * 32; i++) base.data[i] = 0.5f;
    // A zero map leaves the image alone; a map hot in one cell changes that quarter most.
    float zero[4] = {0};
    Image img = image_clone(&base);
    overlay_attention(&img, zero, 2, 2, 0.7f, 1);
    EXPECT(count_differing(&img, &base) == 0, "zero map changed the image");
    image_free(&img);
    float map[4] = {0, 0, 0, 0.2f};  // bottom-right hot
    img = image_clone(&base);
    overlay_attention(&img, map, 2, 2, 0.7f, 1);
    float change_tl = 0, change_br = 0;
    for (int ch = 0; ch < 3; ch++) {
        change_tl += fabsf(*image_at(&img, ch, 2, 2) - 0.5f);
        change_br += fabsf(*image_at(&img, ch, 29, 29) - 0.5f);
    }
    EXPECT(change_tl < 1e-6f && change_br > 0.3f, "changes: top-left %g, bottom-right %g", change_tl, change_br);
    image_free(&img);
    Image heat = heatmap_image(map, 2, 2, 8, 8, 1);
    EXPECT(heat.c == 3 && heat.h == 8 && *image_at(&heat, 0, 7, 7) > 0.9f, "heatmap peak");
    image_free(&heat);
    image_free(&base);
}

static void test_rectangles(void) {
    Image img = image_new(3, 20, 20);
    const float green[3] = {0, 1, 0};
    draw_rect(&img, 14.2f, 15.0f, 3.0f, 4.0f, green, 2);  // corners in any order, rounded
    for (int y = 0; y < 20; y++)
        for (int x = 0; x < 20; x++) {
            int inside = x >= 3 && x <= 14 && y >= 4 && y <= 15;
            int border = inside && (x <= 4 || x >= 13 || y <= 5 || y >= 14);
            float g = *image_at(&img, 1, y, x);
            EXPECT(g == (border ? 1.0f : 0.0f), "pixel (%d, %d) = %g, border %d", x, y, g, border);
        }
    // Wholly or partly outside: clipped, no crash.
    draw_rect(&img, -50, -50, 1e9f, 3, green, 1);
    draw_rect(&img, 0.0f / 0.0f, 2, 5, 5, green, 1);
    EXPECT(*image_at(&img, 1, 3, 10) == 1.0f, "clipped edge missing");
    image_free(&img);
}

static void test_grid_and_caption_strip(void) {
    Image tiles[5];
    for (int i = 0; i < 5; i++) {
        tiles[i] = image_new(i == 2 ? 3 : 1, 6, 4);
        for (size_t k = 0; k < (size_t)tiles[i].c * 24; k++) tiles[i].data[k] = 0.1f * (i + 1);
    }
    Image grid = tile_grid(tiles, 5, 3, 2, 1.0f);
    EXPECT(grid.c == 3 && grid.h == 2 * 6 + 3 * 2 && grid.w == 3 * 4 + 4 * 2, "grid %d x %d x %d", grid.c, grid.h, grid.w);
    // Tile 4 sits at row 1, column 1: top-left at (2 + 1 * 6, 2 + 1 * 8).
    EXPECT_NEAR(*image_at(&grid, 2, 2 + 8, 2 + 6), 0.5, 1e-6, 0);
    EXPECT_NEAR(*image_at(&grid, 0, 0, 0), 1.0, 0, 0);        // margin
    EXPECT_NEAR(*image_at(&grid, 1, 12, 16), 1.0, 0, 0);      // empty sixth cell
    image_free(&grid);
    float planes[2 * 3 * 3];
    for (int i = 0; i < 18; i++) planes[i] = i / 17.0f;
    grid = tile_grid_planes(planes, 2, 3, 3, 4, 1, 0.0f);
    EXPECT(grid.c == 1 && grid.h == 5 && grid.w == 9, "plane grid %d x %d", grid.h, grid.w);
    EXPECT_NEAR(*image_at(&grid, 0, 1 + 2, 5 + 2), planes[17], 0, 0);
    image_free(&grid);

    // A strip like the captioner's attention pictures: an image per word, heat on top.
    Image photo = image_new(3, 48, 48);
    for (int y = 0; y < 48; y++)
        for (int x = 0; x < 48; x++) {
            *image_at(&photo, 0, y, x) = 0.3f + 0.4f * x / 47;
            *image_at(&photo, 1, y, x) = 0.5f + 0.3f * ((x / 12 + y / 12) % 2);
            *image_at(&photo, 2, y, x) = 0.7f - 0.4f * y / 47;
        }
    const char *words[4] = {"a", "dog", "runs", "on the beach"};
    Image frames[4];
    for (int t = 0; t < 4; t++) {
        frames[t] = image_clone(&photo);
        float map[16] = {0};
        map[(t * 5) % 16] = 1.0f;
        map[(t * 5 + 1) % 16] = 0.4f;
        overlay_attention(&frames[t], map, 4, 4, 0.8f, 1);
        const float white[3] = {1, 1, 1};
        draw_rect(&frames[t], 0, 0, 47, 47, white, 1);
    }
    Image strip = caption_strip(frames, words, 4, 4, 1);
    EXPECT(strip.c == 3 && strip.w == 4 + 4 * (48 + 4), "strip width %d", strip.w);
    // "on the beach" wraps to two lines of at most 8 characters.
    EXPECT(strip.h == 4 + 48 + 2 + 2 * FONT_CELL_H + 4, "strip height %d", strip.h);
    int dark = 0;
    for (int y = 4 + 48 + 2; y < strip.h; y++)
        for (int x = 4; x < 4 + 48; x++) dark += *image_at(&strip, 0, y, x) == 0.0f;
    EXPECT(dark > 3, "no caption under the first tile");
    char path[600];
    out_path(path, sizeof path, "strip.png");
    Error err;
    EXPECT(write_png_image(path, &strip, &err) == 0, "%s", err.msg);
    Image both[2] = {strip, photo};
    Image stacked = stack_vertical(both, 2, 3);
    EXPECT(stacked.h == strip.h + 3 + 48 && stacked.w == strip.w, "stack %d x %d", stacked.h, stacked.w);
    image_free(&stacked);
    image_free(&strip);
    for (int t = 0; t < 4; t++) image_free(&frames[t]);
    image_free(&photo);
    for (int i = 0; i < 5; i++) image_free(&tiles[i]);
}

static void test_nice_ticks(void) {
    double t[16];
    int n = plot_nice_ticks(0.0, 1.0, 6, t);
    EXPECT(n == 6 && t[0] == 0.0 && fabs(t[1] - 0.2) < 1e-12 && fabs(t[5] - 1.0) < 1e-12, "ticks 0..1: %d", n);
    n = plot_nice_ticks(-3.7, 112.0, 8, t);
    EXPECT(n >= 3 && n <= 8, "%d ticks", n);
    for (int i = 0; i < n; i++) {
        EXPECT(t[i] >= -3.7 && t[i] <= 112.0, "tick %g outside", t[i]);
        EXPECT(fabs(t[i] / 20 - round(t[i] / 20)) < 1e-9, "tick %g not a multiple of 20", t[i]);
    }
    n = plot_nice_ticks(5.0, 5.0, 8, t);
    EXPECT(n == 1 && t[0] == 5.0, "degenerate range");
}

// A curve of zeros (a grounding score before any object word is placed): on a nonnegative
// plot, a 0..1 axis with no negative tick; left as it was otherwise.
static void test_plot_ranges_of_a_flat_curve(void) {
    float x[4] = {100, 200, 300, 400}, zero[4] = {0, 0, 0, 0}, level[4] = {0.7f, 0.7f, 0.7f, 0.7f};
    PlotSeries s = {"grounding", x, zero, 4};
    PlotOptions o = {.nonnegative = 1};
    double xlo, xhi, ylo, yhi, t[16];
    plot_ranges(&s, 1, &o, &xlo, &xhi, &ylo, &yhi);
    EXPECT(fabs(ylo + 0.05) < 1e-12 && fabs(yhi - 1.05) < 1e-12, "y %g..%g", ylo, yhi);
    EXPECT(fabs(xlo - 100) < 1e-12 && fabs(xhi - 400) < 1e-12, "x %g..%g", xlo, xhi);
    int n = plot_nice_ticks(ylo, yhi, 8, t);
    EXPECT(n == 6 && t[0] == 0.0 && fabs(t[n - 1] - 1.0) < 1e-12, "%d ticks from %g to %g", n,
           t[0], t[n - 1]);
    // Without the option: centred on the value, as before (ticks -0.4..0.4).
    o.nonnegative = 0;
    plot_ranges(&s, 1, &o, &xlo, &xhi, &ylo, &yhi);
    EXPECT(fabs(ylo + 0.55) < 1e-12 && fabs(yhi - 0.55) < 1e-12, "y %g..%g", ylo, yhi);
    // A flat curve at 0.5 or above keeps the centred range (it stays above 0).
    o.nonnegative = 1;
    s.y = level;
    plot_ranges(&s, 1, &o, &xlo, &xhi, &ylo, &yhi);
    EXPECT(fabs(ylo - 0.15) < 1e-6 && fabs(yhi - 1.25) < 1e-6, "y %g..%g", ylo, yhi);
    // A curve that moves is drawn over its own range, padded.
    float moving[4] = {0.0f, 0.1f, 0.3f, 0.2f};
    s.y = moving;
    plot_ranges(&s, 1, &o, &xlo, &xhi, &ylo, &yhi);
    EXPECT(fabs(ylo + 0.015) < 1e-6 && fabs(yhi - 0.315) < 1e-6, "y %g..%g", ylo, yhi);
    n = plot_nice_ticks(ylo, yhi, 8, t);
    EXPECT(n > 0 && t[0] == 0.0, "first tick %g", n > 0 ? t[0] : NAN);
    Image img = plot_render(&s, 1, &o);
    EXPECT(img.w == 640 && img.h == 400, "render %d x %d", img.w, img.h);
    image_free(&img);
}

static void test_plot_writes_png(void) {
    enum { N = 200 };
    float x[N], train[N], valid[N / 10];
    float vx[N / 10];
    for (int i = 0; i < N; i++) {
        x[i] = (float)i * 50;
        train[i] = 150.0f * expf(-i / 40.0f) + 90.0f + 4.0f * sinf(i * 0.7f);
    }
    for (int i = 0; i < N / 10; i++) {
        vx[i] = (float)i * 500;
        valid[i] = 150.0f * expf(-i * 10 / 40.0f) + 95.0f;
    }
    train[17] = NAN;  // a gap, not a crash
    PlotSeries s[2] = {{"train", x, train, N}, {"valid", vx, valid, N / 10}};
    PlotOptions opt = {.title = "DRAW loss", .xlabel = "step", .ylabel = "nats", .width = 480, .height = 320};
    char path[600];
    out_path(path, sizeof path, "plot.png");
    Error err;
    EXPECT(plot_write_png(path, s, 2, &opt, &err) == 0, "%s", err.msg);
    Image img;
    EXPECT(image_load(path, &img, 0, &err) == 0, "%s", err.msg);
    EXPECT(img.c == 3 && img.w == 480 && img.h == 320, "plot %d x %d x %d", img.c, img.w, img.h);
    // Both series' colours appear (blue-ish and orange-ish pixels).
    int blue = 0, orange = 0, black = 0;
    size_t plane = (size_t)img.h * img.w;
    for (size_t i = 0; img.c == 3 && i < plane; i++) {
        float r = img.data[i], g = img.data[plane + i], b = img.data[2 * plane + i];
        blue += b > 0.6f && r < 0.25f;
        orange += r > 0.8f && b < 0.15f && g > 0.2f && g < 0.5f;
        black += r + g + b < 0.1f;
    }
    EXPECT(blue > 200 && orange > 50 && black > 500, "blue %d, orange %d, black %d", blue, orange, black);
    image_free(&img);
    // Log axis and an empty series still render.
    opt.log_y = 1;
    PlotSeries empty = {"none", x, train, 0};
    Image r = plot_render(&empty, 1, &opt);
    EXPECT(r.w == 480, "render");
    image_free(&r);
    r = plot_render(s, 2, &opt);
    image_free(&r);
    if (keep_outputs) {
        out_path(path, sizeof path, "plot_log.png");
        EXPECT(plot_write_png(path, s, 2, &opt, &err) == 0, "%s", err.msg);
    }
}

int main(void) {
    const char *keep = getenv("VISION_TEST_OUT");
    if (keep && *keep) {
        snprintf(outdir, sizeof outdir, "%s", keep);
        keep_outputs = 1;
        Error err;
        CHECK(make_dirs(outdir, &err) == 0, "%s", err.msg);
    } else {
        const char *base = getenv("TMPDIR");
        snprintf(outdir, sizeof outdir, "%s/vision_pictures_XXXXXX", base && *base ? base : "/tmp");
        CHECK(mkdtemp(outdir) != NULL, "mkdtemp %s", outdir);
    }
    RUN(test_gif_frames_read_back);
    RUN(test_gif_palette_nearest);
    RUN(test_font_draws_text);
    RUN(test_font_descenders);
    RUN(test_colormap_and_attention_overlay);
    RUN(test_rectangles);
    RUN(test_grid_and_caption_strip);
    RUN(test_nice_ticks);
    RUN(test_plot_ranges_of_a_flat_curve);
    RUN(test_plot_writes_png);
    if (!keep_outputs) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", outdir);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", outdir);
    }
    return test_summary();
}
