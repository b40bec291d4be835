// overlay.h: pictures made from pictures: heat-map colours, attention maps blended
// over images, rectangles, grids of tiles and captioned strips.
//
// All functions work on vision/image.h Images (float CHW, [0, 1]). Functions that
// draw colour need RGB images (c == 3); grids and strips promote grey tiles to RGB
// when tiles are mixed. Coordinates are pixels, x to the right, y down, (0, 0) the
// top-left pixel's centre. The colour ramp is this toolkit's own (black -> purple ->
// red -> orange -> yellow -> white, in the spirit of "inferno").
#ifndef VISION_OVERLAY_H
#define VISION_OVERLAY_H

#include "vision/image.h"

// rgb = the heat colour of v (clamped to [0, 1]); monotone in brightness.
void colormap_heat(float rgb[3], float v);

// Blends an attention map (mh, mw) over img (RGB, in place): the map is upsampled
// bilinearly to (img->h, img->w); if normalize, divided by its maximum (so the peak
// is full heat) else used as-is clamped to [0, 1]; then
//     pixel = (1 - alpha * m) * pixel + alpha * m * heat(m)
// so that cold places keep the image and hot places take the heat colour.
void overlay_attention(Image *img, const float *map, int mh, int mw, float alpha, int normalize);

// A heat-coloured RGB image (h, w) of a map (mh, mw), upsampled bilinearly and
// normalised to its maximum when normalize.
Image heatmap_image(const float *map, int mh, int mw, int h, int w, int normalize);

// Rectangle outline with corners (x0, y0) and (x1, y1) inclusive (any order; may lie
// partly or wholly outside: clipped), thickness pixels growing inward. img RGB or grey.
void draw_rect(Image *img, float x0, float y0, float x1, float y1, const float rgb[3],
               int thickness);
// Filled rectangle, clipped.
void fill_rect(Image *img, int x0, int y0, int x1, int y1, const float rgb[3]);

// A grid of n tiles of equal size, cols per row (rows = ceil(n / cols)), margin pixels
// around and between them, background bg (grey level). Channels: 3 if any tile is RGB.
Image tile_grid(const Image *tiles, int n, int cols, int margin, float bg);
// The same from n grey planes (n, h, w), e.g. a batch of DRAW canvases.
Image tile_grid_planes(const float *planes, int n, int h, int w, int cols, int margin,
                       float bg);

// A horizontal strip of n tiles (equal size) with captions[i] (may be NULL) written
// under tile i in black on white at text_scale, words wrapped to the tile width.
// Result is RGB.
Image caption_strip(const Image *tiles, const char *const *captions, int n, int margin,
                    int text_scale);
// Stacks images vertically (widths may differ; narrower ones are left-aligned on
// white), margin pixels between them. Result is RGB.
Image stack_vertical(const Image *imgs, int n, int margin);

#endif
