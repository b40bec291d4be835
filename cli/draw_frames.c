// draw_frames.c: DRAW's step-by-step pictures (cli/draw_frames.h).
#include "cli/draw_frames.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/check.h"
#include "vision/filterbank.h"
#include "vision/gif.h"
#include "vision/overlay.h"
#include "vision/png.h"

static const float RED[3] = {1.0f, 0.15f, 0.1f}, GREEN[3] = {0.1f, 0.9f, 0.2f};

// One grid frame: n canvases (n, C, H, W) in logits (C = 3: colour tiles) (sigmoid applied; probabilities as they
// are when !logits), upscaled; with windows: write (red) and read (green) rectangles from
// params rows (n, 5) (NULL: none).
Image draw_render_frame(const float *canvas, int logits, int n, const DrawConfig *c,
                        const float *wparams, const float *rparams, const DrawFrameStyle *st) {
    int W = c->W, H = c->H, s = st->scale, C = draw_channels(c);
    Image *tiles = xcalloc((size_t)n, sizeof *tiles);
    Image plane = image_new(C, H, W);
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < C * W * H; k++) {
            float v = canvas[(size_t)i * C * W * H + k];
            plane.data[k] = logits ? 1.0f / (1.0f + expf(-v)) : v;
        }
        Image big = image_resize(&plane, H * s, W * s, RESIZE_AREA);
        if (wparams || rparams) {  // coloured rectangles: RGB tiles
            if (big.c == 1) {
                tiles[i] = image_to_rgb(&big);
                image_free(&big);
            } else {
                tiles[i] = big;
            }
            const float *pp[2] = {rparams, wparams};
            const float *col[2] = {GREEN, RED};
            int nn[2] = {c->read_n, c->write_n};
            for (int j = 0; j < 2; j++) {
                if (!pp[j]) continue;
                FilterbankWindow w = filterbank_window(pp[j] + (size_t)i * FILTERBANK_PARAMS, nn[j], W, H);
                // Pixel k's centre sits at (k + 0.5) s - 0.5 after upscaling.
                draw_rect(&tiles[i], (w.x0 + 0.5f) * s - 0.5f, (w.y0 + 0.5f) * s - 0.5f,
                          (w.x1 + 0.5f) * s - 0.5f, (w.y1 + 0.5f) * s - 0.5f, col[j], 1);
            }
        } else {
            tiles[i] = big;
        }
    }
    Image grid = tile_grid(tiles, n, st->cols, st->margin, 0.5f);
    for (int i = 0; i < n; i++) image_free(&tiles[i]);
    free(tiles);
    image_free(&plane);
    return grid;
}

// Writes DIR/step_01.png .. step_T.png, DIR/final.png and DIR/draw.gif from acts.canvas.
int draw_write_frames(const char *dir, const DrawActs *a, const DrawConfig *c, int n,
                      int windows_write, int windows_read, const DrawFrameStyle *st, Error *err) {
    int digits = 2;
    for (int t = c->T; t >= 100; t /= 10) digits++;
    Image *frames = xcalloc((size_t)c->T, sizeof *frames);
    int rc = 0;
    char path[1200];
    for (int t = 0; t < c->T && rc == 0; t++) {
        const float *wp = windows_write && c->attention ? draw_at(a, a->wparams, t, FILTERBANK_PARAMS) : NULL;
        const float *rp = windows_read && c->attention ? draw_at(a, a->rparams, t, FILTERBANK_PARAMS) : NULL;
        frames[t] = draw_render_frame(draw_at(a, a->canvas, t, draw_image_size(c)), 1, n, c, wp, rp, st);
        char num[16];
        int len = snprintf(num, sizeof num, "%d", t + 1);
        snprintf(path, sizeof path, "%s/step_%.*s%s.png", dir, digits > len ? digits - len : 0,
                 "0000000000", num);
        rc = write_png_image(path, &frames[t], err);
    }
    if (rc == 0) {
        Image fin = draw_render_frame(draw_at(a, a->canvas, c->T - 1, draw_image_size(c)), 1, n, c, NULL, NULL, st);
        snprintf(path, sizeof path, "%s/final.png", dir);
        rc = write_png_image(path, &fin, err);
        image_free(&fin);
    }
    if (rc == 0) {
        snprintf(path, sizeof path, "%s/draw.gif", dir);
        rc = write_gif_images(path, frames, c->T, 8, err);
    }
    for (int t = 0; t < c->T; t++) image_free(&frames[t]);
    free(frames);
    return rc;
}
