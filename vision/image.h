// image.h: the toolkit's in-memory picture, loading any common format, resizing,
// cropping, normalising and 8-bit conversion.
//
// An Image holds floats in CHW order (channel planes, each h rows of w), C = 1 (grey)
// or 3 (RGB), values nominally in [0, 1] (normalisation may move them outside).
// Loading goes through stb_image (PNG, JPEG, BMP, GIF first frame, TGA, PSD, PNM);
// dimensions are checked with stbi_info_from_memory BEFORE decoding, so a header
// claiming an absurd size is refused without allocating. Limits: IMAGE_MAX_SIDE per
// side, IMAGE_MAX_PIXELS in total, IMAGE_MAX_FILE_BYTES on disk.
//
//     Image img = {0};
//     Error err;
//     if (image_load("cat.jpg", &img, 3, &err) != 0) { fprintf(stderr, "%s\n", err.msg); ... }
//     Image sq = image_center_crop(&img);
//     Image small = image_resize(&sq, 64, 64, RESIZE_AREA);
//     image_free(&img); image_free(&sq); ...
#ifndef VISION_IMAGE_H
#define VISION_IMAGE_H

#include <stddef.h>

#include "core/error.h"

#define IMAGE_MAX_SIDE 16384
#define IMAGE_MAX_PIXELS (64L * 1024 * 1024)
#define IMAGE_MAX_FILE_BYTES ((size_t)512 * 1024 * 1024)

typedef struct {
    int c, h, w;  // channels (1 or 3), rows, columns
    float *data;  // (c, h, w), owned (xmalloc'd); NULL when empty
} Image;

typedef enum {
    RESIZE_AREA,      // box filter: each output pixel averages the input area it covers
                      // (exact for downscaling; upscaling repeats pixels, averaging
                      // those an output pixel straddles)
    RESIZE_BILINEAR,  // pixel-centre aligned bilinear interpolation, edges clamped
} ResizeMode;

// A zeroed image of that size (c 1 or 3, h, w >= 1).
Image image_new(int c, int h, int w);
void image_free(Image *img);  // frees data and zeroes the struct; safe on a zeroed Image
Image image_clone(const Image *src);
// Pointer to one pixel value (no bounds check).
static inline float *image_at(const Image *img, int ch, int y, int x) {
    return img->data + ((size_t)ch * img->h + y) * img->w + x;
}

// Decodes a file. channels: 0 keeps the file's colour kind (grey or grey+alpha -> 1,
// otherwise 3; alpha is dropped), 1 converts to grey, 3 expands grey to RGB.
// On failure img is left zeroed and err says "PATH: reason".
int image_load(const char *path, Image *img, int channels, Error *err);
// The same from bytes in memory; name is used in messages (e.g. the path or "<memory>").
int image_load_memory(const unsigned char *data, size_t len, const char *name, Image *img,
                      int channels, Error *err);

// Plane-level resize: src (c, sh, sw) -> dst (c, dh, dw), all planes alike.
void resize_area(float *dst, int dh, int dw, const float *src, int c, int sh, int sw);
void resize_bilinear(float *dst, int dh, int dw, const float *src, int c, int sh, int sw);
// A new image of size (src->c, h, w).
Image image_resize(const Image *src, int h, int w, ResizeMode mode);
// The largest centred square (side min(h, w)).
Image image_center_crop(const Image *src);
// Grey -> RGB (copies planes); an RGB image is cloned.
Image image_to_rgb(const Image *src);
// RGB -> grey (ITU-R 601 luma 0.299, 0.587, 0.114); a grey image is cloned.
Image image_to_grey(const Image *src);

// In place, per channel: x = (x - mean[ch]) / std[ch]; mean, std have img->c entries.
void image_normalize(Image *img, const float *mean, const float *std);
// Per-channel mean and standard deviation of an image (out arrays of img->c entries).
void image_channel_stats(const Image *img, float *mean, float *std);

// 8-bit conversion. pix is interleaved HWC (c, h, w as in the image), the layout of
// stb_image and libpng. From 8-bit: v / 255. To 8-bit: clamp to [0, 1], round(v * 255).
Image image_from_u8(const unsigned char *pix, int c, int h, int w);
void image_to_u8(unsigned char *pix, const Image *img);  // pix (h, w, c)

#endif
