// draw_frames.h: DRAW's pictures, step by step: one grid of canvases per glimpse
// (DIR/step_NN.png), the last one again as DIR/final.png and all of them as DIR/draw.gif,
// optionally with each tile's read (green) and write (red) window drawn on it.
#ifndef CLI_DRAW_FRAMES_H
#define CLI_DRAW_FRAMES_H

#include "core/error.h"
#include "models/draw.h"
#include "vision/image.h"

typedef struct {
    int scale;   // screen pixels per image pixel
    int cols;    // tiles per row
    int margin;  // pixels between tiles
} DrawFrameStyle;

// One grid frame of n canvases (n, C, H, W) (C = 3: colour tiles), upscaled: logits (the
// sigmoid applied) or, when !logits, probabilities as they are; with windows, write (red)
// and read (green) rectangles from rows (n, 5) of filterbank parameters (NULL: none).
Image draw_render_frame(const float *canvas, int logits, int n, const DrawConfig *c,
                        const float *wparams, const float *rparams, const DrawFrameStyle *st);

// Writes DIR/step_01.png .. step_T.png (3 digits from T 100 on), DIR/final.png and
// DIR/draw.gif from a's canvases (n images), with the write and/or read windows when asked
// and the model attends. Then the frames of an earlier film in DIR that these did not
// replace (step_09.png .. step_64.png after a film of 64 steps, when T is 8; only names of
// that form, step_ and 2 or more digits) are removed, so that DIR holds one film; *removed
// (may be NULL) gets how many.
int draw_write_frames(const char *dir, const DrawActs *a, const DrawConfig *c, int n,
                      int windows_write, int windows_read, const DrawFrameStyle *st, int *removed,
                      Error *err);

#endif
