// alignment.h: a translation's alignment matrix as a picture, as Bahdanau, Cho and Bengio
// 2015 draw it (figure 3): the source tokens across the top (written upwards, one column
// each), the target tokens down the left (one row each), and cell (i, j) shaded by the
// weight target token i gave source token j: white for 0, black for 1 (grey 1 - w,
// clamped to [0, 1]).
//
// The picture is grey (one channel). Every cell is a square of ALIGN_CELL_PX(scale)
// pixels with no lines between cells; the grid's top-left corner is at (layout.left,
// layout.top), so cell (i, j) covers x in [left + j cell, left + (j + 1) cell) and y in
// [top + i cell, top + (i + 1) cell). The margins fit the longest label (at most
// ALIGN_LABEL_MAX characters, cut beyond) in the built-in font (vision/font.h); a label's
// bytes outside printable ASCII draw as one '?' per UTF-8 character.
//
//     AlignLayout l;
//     alignment_layout(&l, src, 5, tgt, 4, 2);
//     Image img = alignment_picture(alpha, 5, src, 5, tgt, 4, 2);  // l.h x l.w
#ifndef VISION_ALIGNMENT_H
#define VISION_ALIGNMENT_H

#include "vision/image.h"

#define ALIGN_LABEL_MAX 16
#define ALIGN_CELL_PX(scale) (8 * (scale) + 4)

typedef struct {
    int cell;       // pixels per cell side
    int left, top;  // the grid's top-left corner
    int w, h;       // the picture's size: left + cols cell, top + rows cell
} AlignLayout;

// The layout for cols source labels src (cols) and rows target labels tgt (rows), at
// scale >= 1 (the font's pixel size). rows, cols >= 1.
void alignment_layout(AlignLayout *l, const char *const *src, int cols, const char *const *tgt,
                      int rows, int scale);

// A label as the picture draws it (buf, n bytes): printable ASCII kept, each other UTF-8
// character one '?', cut at ALIGN_LABEL_MAX characters.
void alignment_label(char *buf, size_t n, const char *label);

// The picture: weights (rows, stride), row i's first cols entries the weights of target
// token i over the source tokens.
Image alignment_picture(const float *weights, int stride, const char *const *src, int cols,
                        const char *const *tgt, int rows, int scale);

#endif
