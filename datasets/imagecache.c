// imagecache.c: see imagecache.h.
#include "datasets/imagecache.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "vision/image.h"

int image_load_square(unsigned char *hwc, const char *path, int side, Error *err) {
    CHECK(side >= 1, "side = %d", side);
    Image img;
    if (image_load(path, &img, 3, err)) return -1;
    Image sq = image_center_crop(&img);
    image_free(&img);
    Image small = image_resize(&sq, side, side, RESIZE_AREA);
    image_free(&sq);
    image_to_u8(hwc, &small);
    image_free(&small);
    return 0;
}

static void u8_to_chw(float *chw, const unsigned char *hwc, int side) {
    size_t plane = (size_t)side * side;
    for (size_t i = 0; i < plane; i++)
        for (int ch = 0; ch < 3; ch++) chw[ch * plane + i] = hwc[i * 3 + ch] / 255.0f;
}

int image_load_square_float(float *chw, const char *path, int side, Error *err) {
    unsigned char *hwc = xmalloc((size_t)side * side * 3);
    int rc = image_load_square(hwc, path, side, err);
    if (rc == 0) u8_to_chw(chw, hwc, side);
    free(hwc);
    return rc;
}

int image_cache_init(ImageCache *c, int n, int side, size_t max_bytes, Error *err) {
    memset(c, 0, sizeof *c);
    CHECK(n >= 1 && side >= 1, "n = %d, side = %d", n, side);
    if (max_bytes == 0) max_bytes = IMAGE_CACHE_DEFAULT_MAX_BYTES;
    double need = (double)n * side * side * 3 + n;
    if (need > (double)max_bytes || need > (double)SIZE_MAX / 2)
        return error_set(
            err,
            "image cache: %d images of %d x %d need %.0f MiB, more than the limit "
            "of %.0f MiB (use fewer images or a smaller image size, or raise the limit)",
            n, side, side, need / 1048576.0, max_bytes / 1048576.0);
    c->n = n;
    c->side = side;
    c->bytes = (size_t)need;
    c->pix = xcalloc((size_t)n * side * side, 3);
    c->state = xcalloc((size_t)n, 1);
    return 0;
}

void image_cache_free(ImageCache *c) {
    if (!c) return;
    free(c->pix);
    free(c->state);
    memset(c, 0, sizeof *c);
}

int image_cache_load(ImageCache *c, int i, const char *path, Error *err) {
    CHECK(i >= 0 && i < c->n, "slot %d of %d", i, c->n);
    if (c->state[i] == IMAGE_CACHE_LOADED) return 0;
    if (c->state[i] == IMAGE_CACHE_FAILED)
        return error_set(err, "%s: could not be decoded earlier", path);
    size_t slot = (size_t)c->side * c->side * 3;
    if (image_load_square(c->pix + (size_t)i * slot, path, c->side, err)) {
        c->state[i] = IMAGE_CACHE_FAILED;
        return -1;
    }
    c->state[i] = IMAGE_CACHE_LOADED;
    return 0;
}

const unsigned char *image_cache_pixels(const ImageCache *c, int i) {
    CHECK(i >= 0 && i < c->n && c->state[i] == IMAGE_CACHE_LOADED, "slot %d of %d not loaded", i,
          c->n);
    return c->pix + (size_t)i * c->side * c->side * 3;
}

void image_cache_get(float *chw, const ImageCache *c, int i) {
    u8_to_chw(chw, image_cache_pixels(c, i), c->side);
}

int caption_set_cache_images(CaptionSet *set, ImageCache *c, int side, size_t max_bytes,
                             ImageCacheProgress progress, void *ctx, Error *err) {
    memset(c, 0, sizeof *c);
    if (set->n_images < 1) return error_set(err, "%s: no images to cache", set->source);
    ImageCache all;
    if (image_cache_init(&all, set->n_images, side, max_bytes, err)) return -1;
    unsigned char *keep = xmalloc((size_t)set->n_images);
    int good = 0;
    for (int i = 0; i < set->n_images; i++) {
        Error e;
        keep[i] = image_cache_load(&all, i, set->images[i].path, &e) == 0;
        if (!keep[i]) caption_set_warn_error(set, &e);
        good += keep[i];
        if (progress) progress(ctx, i + 1, set->n_images);
    }
    if (good == 0) {
        // The warning is in the field form already (caption_set_warn): wrapped, not formatted
        // again, so its escapes are not doubled (core/error.h).
        Error example;
        snprintf(example.msg, sizeof example.msg, "%s",
                 set->n_warnings ? set->warnings[set->n_warnings - 1] : "?");
        error_wrap(err, &example, "%s: none of the %d images could be decoded, e.g.", set->source,
                   set->n_images);
        free(keep);
        image_cache_free(&all);
        return -1;
    }
    if (good < set->n_images) {  // compact the slots to match the filtered set
        size_t slot = (size_t)side * side * 3;
        int k = 0;
        for (int i = 0; i < set->n_images; i++)
            if (keep[i]) {
                if (k != i) memcpy(all.pix + (size_t)k * slot, all.pix + (size_t)i * slot, slot);
                all.state[k++] = IMAGE_CACHE_LOADED;
            }
        all.n = k;
        all.bytes = (size_t)k * slot + (size_t)k;
        caption_set_filter(set, keep);
    }
    free(keep);
    *c = all;
    return 0;
}
