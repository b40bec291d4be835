// draw_frames.c: DRAW's step-by-step pictures (cli/draw_frames.h).
#include "cli/draw_frames.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

// The digits of the frame numbers of a film of T steps: at least 2 (step_01 .. step_64).
static int frame_digits(int T) {
    int digits = 2;
    for (int t = T; t >= 100; t /= 10) digits++;
    return digits;
}

// Whether name is one draw_write_frames writes for some T: step_ND.png with ND at least 2
// digits, its value at least 1 and no wider than its padding. *number: the value, *digits:
// the width.
static int frame_name(const char *name, long *number, int *digits) {
    if (strncmp(name, "step_", 5)) return 0;
    const char *d = name + 5;
    int len = 0;
    while (d[len] >= '0' && d[len] <= '9') len++;
    if (len < 2 || len > 9 || strcmp(d + len, ".png")) return 0;
    *number = strtol(d, NULL, 10);
    *digits = len;
    return *number >= 1 && frame_digits((int)*number) <= len;
}

// Removes the step_NN.png frames in dir that a film of T steps does not write (an earlier
// film's with more steps, or numbered with other padding), counting them in *removed.
static int remove_stale_frames(const char *dir, int T, int *removed, Error *err) {
    DIR *d = opendir(dir);
    if (!d) return error_set(err, "%s: %s", dir, strerror(errno));
    const int digits = frame_digits(T);
    int rc = 0;
    char path[1200];
    for (struct dirent *e; rc == 0 && (e = readdir(d)) != NULL;) {
        long number;
        int width;
        if (!frame_name(e->d_name, &number, &width) || (width == digits && number <= T)) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path) == 0)
            (*removed)++;
        else if (errno != ENOENT)
            rc = error_set(err, "%s: cannot remove this frame of an earlier film: %s", path, strerror(errno));
    }
    closedir(d);
    return rc;
}

// Writes DIR/step_01.png .. step_T.png, DIR/final.png and DIR/draw.gif from acts.canvas,
// then removes an earlier film's frames that these do not replace.
int draw_write_frames(const char *dir, const DrawActs *a, const DrawConfig *c, int n,
                      int windows_write, int windows_read, const DrawFrameStyle *st, int *removed,
                      Error *err) {
    const int digits = frame_digits(c->T);
    int stale = 0;
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
    if (rc == 0) rc = remove_stale_frames(dir, c->T, &stale, err);
    if (removed) *removed = stale;
    return rc;
}
