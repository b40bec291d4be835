// png.h: writing 8-bit grey or RGB PNG files with libpng.
//
// Every writer goes through core/fileio.h's AtomicFile: the file appears under its
// final name only when complete (temp + fsync + rename); a libpng error (caught with
// setjmp) or a full disk leaves no partial file and returns -1 with "PATH: reason".
// Reading PNGs goes through image_load (vision/image.h).
// Function names avoid libpng's own png_ prefix.
#ifndef VISION_PNG_H
#define VISION_PNG_H

#include "core/error.h"
#include "vision/image.h"

// pix (h, w, channels) interleaved 8-bit, channels 1 (grey) or 3 (RGB).
int write_png_u8(const char *path, const unsigned char *pix, int h, int w, int channels,
                 Error *err);
// A float Image (c 1 or 3, values clamped to [0, 1] and rounded to 8 bits).
int write_png_image(const char *path, const Image *img, Error *err);
// One float plane (h, w) as a grey PNG; values clamped to [0, 1].
int write_png_grey(const char *path, const float *plane, int h, int w, Error *err);

#endif
