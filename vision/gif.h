// gif.h: animated GIF files with giflib (e.g. DRAW's canvas, step by step).
//
// All frames share one size and one global palette: grey-only (256 levels) when
// every frame is grey, otherwise a 6x6x6 colour cube plus 40 greys (256 entries),
// each pixel mapped to its nearest entry (no dithering). The file loops forever
// (NETSCAPE2.0 application extension) and shows each frame for delay_cs hundredths
// of a second. Written atomically (temp + fsync + rename) through core/fileio.h.
// Limits: 1 <= frames, sides <= 65535 (the format's limit).
#ifndef VISION_GIF_H
#define VISION_GIF_H

#include "core/error.h"
#include "vision/image.h"

// frames (n, c, h, w) floats in [0, 1] (clamped), c = 1 or 3.
int write_gif(const char *path, const float *frames, int n, int c, int h, int w, int delay_cs,
              Error *err);
// The same from n Images of equal size (grey and RGB may be mixed; grey is expanded).
int write_gif_images(const char *path, const Image *frames, int n, int delay_cs, Error *err);

// The palette index a colour maps to, and the palette's colours (for tests):
// 256 entries of r, g, b bytes. grey_only selects the grey palette.
int gif_palette_index(int grey_only, float r, float g, float b);
void gif_palette(int grey_only, unsigned char rgb[256 * 3]);

#endif
