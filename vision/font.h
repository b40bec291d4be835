// font.h: a small built-in 5x7 bitmap font (ASCII 32..126) for labels on pictures.
//
// Each glyph is 5 columns by 7 rows drawn in a 6x8 cell (one pixel of spacing right
// and below); the x-height letters stand on row 6, and the tails of g, j, p, q and y
// reach one row lower, into the cell's spacing row (font_descender). scale >= 1 multiplies every pixel. Characters outside 32..126 draw as
// '?'; '\n' starts a new line. Drawing clips to the image; nothing is ever written
// outside it. The glyphs were drawn for this toolkit.
#ifndef VISION_FONT_H
#define VISION_FONT_H

#include "vision/image.h"

#define FONT_GLYPH_W 5
#define FONT_GLYPH_H 7
#define FONT_CELL_W 6
#define FONT_CELL_H 8

// The 7 row bitmasks of a character (bit 4 = leftmost column).
const unsigned char *font_glyph(int ch);
// The row below the 7 (bit 4 = leftmost column): the tail of g, j, p, q and y, else 0.
unsigned char font_descender(int ch);
// Draws text with its top-left corner at (x, y), colour rgb (for a grey image the mean
// of rgb is used). Returns the x just past the last character of the last line.
int font_draw_text(Image *img, int x, int y, const char *text, int scale, const float rgb[3]);
// Size in pixels of the text's bounding box at that scale (widest line; lines * cell).
int font_text_width(const char *text, int scale);
int font_text_height(const char *text, int scale);

#endif
