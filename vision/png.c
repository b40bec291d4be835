// png.c: see png.h.
#include "vision/png.h"

#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/fileio.h"

typedef struct {
    char msg[256];
} PngErrorCtx;

static void png_error_cb(png_structp png, png_const_charp msg) {
    PngErrorCtx *ctx = png_get_error_ptr(png);
    snprintf(ctx->msg, sizeof ctx->msg, "%s", msg);
    png_longjmp(png, 1);
}

static void png_warning_cb(png_structp png, png_const_charp msg) {
    (void)png;
    (void)msg;
}

// Runs libpng into an already open FILE; returns 0 or -1 with ctx->msg set.
// Kept in its own function so that no local of the caller lives across setjmp.
static int png_encode(FILE *fp, const unsigned char *pix, int h, int w, int channels,
                      PngErrorCtx *ctx) {
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, ctx, png_error_cb,
                                              png_warning_cb);
    if (!png) {
        snprintf(ctx->msg, sizeof ctx->msg, "out of memory in libpng");
        return -1;
    }
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        snprintf(ctx->msg, sizeof ctx->msg, "out of memory in libpng");
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        return -1;
    }
    png_init_io(png, fp);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8,
                 channels == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < h; y++) png_write_row(png, pix + (size_t)y * w * channels);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return 0;
}

int write_png_u8(const char *path, const unsigned char *pix, int h, int w, int channels,
                 Error *err) {
    CHECK(channels == 1 || channels == 3, "channels = %d", channels);
    CHECK(h >= 1 && w >= 1, "size %d x %d", h, w);
    AtomicFile f;
    if (atomic_open(&f, path, err) != 0) return -1;
    PngErrorCtx ctx = {{0}};
    if (png_encode(f.fp, pix, h, w, channels, &ctx) != 0) {
        atomic_abort(&f);
        return error_set(err, "%s: cannot write PNG: %s", path, ctx.msg);
    }
    return atomic_commit(&f, err);
}

int write_png_image(const char *path, const Image *img, Error *err) {
    unsigned char *pix = xmalloc((size_t)img->c * img->h * img->w);
    image_to_u8(pix, img);
    int rc = write_png_u8(path, pix, img->h, img->w, img->c, err);
    free(pix);
    return rc;
}

int write_png_grey(const char *path, const float *plane, int h, int w, Error *err) {
    Image img = {1, h, w, (float *)plane};  // borrowed: not freed
    return write_png_image(path, &img, err);
}
