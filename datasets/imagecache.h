// imagecache.h: decode + resize each image of a run once, keep it as 8-bit RGB.
//
// Every image goes through image_load_square(): decode (vision/image.h, grey expanded
// to RGB, alpha dropped), take the largest centred square, box-filter (RESIZE_AREA) it
// to side x side, round to 8 bits. Training, evaluation and prediction all use this one
// function, so a model sees the same pixels in each.
//
// The cache holds n slots of side*side*3 bytes (HWC) in ONE block plus one state byte
// per image; a slot is decoded the first time it is asked for (or all at once with
// caption_set_cache_images). Cost: n * side^2 * 3 bytes of RAM, e.g. Flickr8k's 8,091
// images at 224 px = 1.2 GB, at 64 px = 99 MB; COCO's 123,287 images at 224 px = 18.6
// GB, which the default bound refuses. No disk is used. image_cache_init refuses to
// allocate more than max_bytes (default IMAGE_CACHE_DEFAULT_MAX_BYTES = 2 GiB) with a
// message giving the need, the bound and what to lower.
#ifndef DATASETS_IMAGECACHE_H
#define DATASETS_IMAGECACHE_H

#include <stddef.h>

#include "core/error.h"
#include "datasets/captions.h"

#define IMAGE_CACHE_DEFAULT_MAX_BYTES ((size_t)2 << 30)

enum { IMAGE_CACHE_EMPTY = 0, IMAGE_CACHE_LOADED = 1, IMAGE_CACHE_FAILED = 2 };

typedef struct {
    int n;                 // slots
    int side;              // S
    size_t bytes;          // bytes held: n * S * S * 3 + n
    unsigned char *pix;    // (n, S, S, 3) 8-bit RGB
    unsigned char *state;  // (n) IMAGE_CACHE_EMPTY / LOADED / FAILED
} ImageCache;

// Decodes path and writes hwc (side, side, 3) as described above; "PATH: reason" on failure.
int image_load_square(unsigned char *hwc, const char *path, int side, Error *err);
// The same into floats: chw (3, side, side) in [0, 1] (the 8-bit values / 255).
int image_load_square_float(float *chw, const char *path, int side, Error *err);

// n >= 1 slots of side >= 1. max_bytes 0 = IMAGE_CACHE_DEFAULT_MAX_BYTES. Fails (nothing
// allocated) when n * side^2 * 3 + n exceeds max_bytes.
int image_cache_init(ImageCache *c, int n, int side, size_t max_bytes, Error *err);
void image_cache_free(ImageCache *c);  // safe on a zeroed struct
// Makes slot i hold path's pixels (decoding on first use; a slot that failed before
// fails again without re-decoding, with a shorter "PATH: could not be decoded earlier").
int image_cache_load(ImageCache *c, int i, const char *path, Error *err);
// Slot i's pixels (side, side, 3); the slot must be loaded (CHECK).
const unsigned char *image_cache_pixels(const ImageCache *c, int i);
// Slot i as floats: chw (3, side, side) in [0, 1]; the slot must be loaded (CHECK).
void image_cache_get(float *chw, const ImageCache *c, int i);

// Called after each image with (done, total); may be NULL.
typedef void (*ImageCacheProgress)(void *ctx, int done, int total);

// Builds a cache for every image of set and decodes them all. An image that does not
// decode is named in set->warnings ("PATH: reason") and removed from set with
// caption_set_filter (counted as skipped), so afterwards cache slot i == set image i.
// Fails (cache empty) when the bound is exceeded or no image decodes (naming set->source).
int caption_set_cache_images(CaptionSet *set, ImageCache *c, int side, size_t max_bytes,
                             ImageCacheProgress progress, void *ctx, Error *err);

#endif
