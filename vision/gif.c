// gif.c: see gif.h.
#include "vision/gif.h"

#include <gif_lib.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/fileio.h"

#define GIF_CUBE 6     // levels per channel in the colour cube (6^3 = 216 entries)
#define GIF_GREYS 40   // extra grey entries after the cube (216 + 40 = 256)

static inline float clamp01(float v) { return v > 0.0f ? (v < 1.0f ? v : 1.0f) : 0.0f; }

static float extra_grey_level(int i) { return (float)(i + 1) / (GIF_GREYS + 1); }  // i in 0..39

void gif_palette(int grey_only, unsigned char rgb[256 * 3]) {
    if (grey_only) {
        for (int i = 0; i < 256; i++) rgb[3 * i] = rgb[3 * i + 1] = rgb[3 * i + 2] = (unsigned char)i;
        return;
    }
    for (int r = 0; r < GIF_CUBE; r++)
        for (int g = 0; g < GIF_CUBE; g++)
            for (int b = 0; b < GIF_CUBE; b++) {
                int i = (r * GIF_CUBE + g) * GIF_CUBE + b;
                rgb[3 * i] = (unsigned char)(r * 51);
                rgb[3 * i + 1] = (unsigned char)(g * 51);
                rgb[3 * i + 2] = (unsigned char)(b * 51);
            }
    for (int i = 0; i < GIF_GREYS; i++) {
        unsigned char v = (unsigned char)lrintf(extra_grey_level(i) * 255.0f);
        int k = GIF_CUBE * GIF_CUBE * GIF_CUBE + i;
        rgb[3 * k] = rgb[3 * k + 1] = rgb[3 * k + 2] = v;
    }
}

int gif_palette_index(int grey_only, float r, float g, float b) {
    r = clamp01(r), g = clamp01(g), b = clamp01(b);
    if (grey_only) return (int)lrintf((r + g + b) / 3.0f * 255.0f);
    // Nearest cube entry: each channel rounded to its nearest level (the cube is separable).
    int ri = (int)lrintf(r * (GIF_CUBE - 1)), gi = (int)lrintf(g * (GIF_CUBE - 1)),
        bi = (int)lrintf(b * (GIF_CUBE - 1));
    float cr = ri / 5.0f - r, cg = gi / 5.0f - g, cb = bi / 5.0f - b;
    float d_cube = cr * cr + cg * cg + cb * cb;
    // Nearest extra grey: the level nearest the channel mean minimises the squared distance.
    float m = (r + g + b) / 3.0f;
    int k = (int)lrintf(m * (GIF_GREYS + 1)) - 1;
    if (k < 0) k = 0;
    if (k > GIF_GREYS - 1) k = GIF_GREYS - 1;
    float v = extra_grey_level(k);
    float d_grey = (r - v) * (r - v) + (g - v) * (g - v) + (b - v) * (b - v);
    if (d_grey < d_cube) return GIF_CUBE * GIF_CUBE * GIF_CUBE + k;
    return (ri * GIF_CUBE + gi) * GIF_CUBE + bi;
}

static int gif_output(GifFileType *gif, const GifByteType *buf, int len) {
    FILE *fp = gif->UserData;
    return (int)fwrite(buf, 1, (size_t)len, fp);
}

// Where the frames come from: one (n, c, h, w) array or n Images.
typedef struct {
    const float *frames;  // write_gif: (n, c, h, w)
    const Image *images;  // write_gif_images
    int c;
} FrameSource;

static const float *frame_plane(const FrameSource *s, int i, int ch, int h, int w, int *c) {
    size_t plane = (size_t)h * w;
    if (s->images) {
        *c = s->images[i].c;
        return s->images[i].data + (size_t)ch * plane;
    }
    *c = s->c;
    return s->frames + ((size_t)i * s->c + ch) * plane;
}

// Writes the whole stream into fp; returns 0, or -1 with a reason in why.
static int gif_encode(FILE *fp, const FrameSource *src, int n, int h, int w, int grey_only,
                      int delay_cs, const char **why) {
    int e = 0;
    GifFileType *gif = EGifOpen(fp, gif_output, &e);
    if (!gif) {
        *why = GifErrorString(e);
        return -1;
    }
    unsigned char pal[256 * 3];
    gif_palette(grey_only, pal);
    ColorMapObject *cmap = GifMakeMapObject(256, NULL);
    CHECK(cmap != NULL, "out of memory");
    for (int i = 0; i < 256; i++) {
        cmap->Colors[i].Red = pal[3 * i];
        cmap->Colors[i].Green = pal[3 * i + 1];
        cmap->Colors[i].Blue = pal[3 * i + 2];
    }
    EGifSetGifVersion(gif, true);
    GifPixelType *line = xmalloc((size_t)w);
    int ok = EGifPutScreenDesc(gif, w, h, 8, 0, cmap) == GIF_OK;
    // NETSCAPE2.0 application extension: sub-block {1, loop count (LE16) = 0 = forever}.
    static const GifByteType app[11] = {'N', 'E', 'T', 'S', 'C', 'A', 'P', 'E', '2', '.', '0'};
    static const GifByteType loop[3] = {1, 0, 0};
    ok = ok && EGifPutExtensionLeader(gif, APPLICATION_EXT_FUNC_CODE) == GIF_OK;
    ok = ok && EGifPutExtensionBlock(gif, 11, app) == GIF_OK;
    ok = ok && EGifPutExtensionBlock(gif, 3, loop) == GIF_OK;
    ok = ok && EGifPutExtensionTrailer(gif) == GIF_OK;
    size_t plane = (size_t)h * w;
    for (int i = 0; ok && i < n; i++) {
        GraphicsControlBlock gcb = {.DisposalMode = DISPOSAL_UNSPECIFIED,
                                    .UserInputFlag = false,
                                    .DelayTime = delay_cs,
                                    .TransparentColor = NO_TRANSPARENT_COLOR};
        GifByteType ext[4];
        EGifGCBToExtension(&gcb, ext);
        ok = ok && EGifPutExtension(gif, GRAPHICS_EXT_FUNC_CODE, 4, ext) == GIF_OK;
        ok = ok && EGifPutImageDesc(gif, 0, 0, w, h, false, NULL) == GIF_OK;
        int c = 1;
        const float *p0 = frame_plane(src, i, 0, h, w, &c);
        const float *p1 = c == 3 ? p0 + plane : p0, *p2 = c == 3 ? p0 + 2 * plane : p0;
        for (int y = 0; ok && y < h; y++) {
            for (int x = 0; x < w; x++) {
                size_t k = (size_t)y * w + x;
                line[x] = (GifPixelType)gif_palette_index(grey_only, p0[k], p1[k], p2[k]);
            }
            ok = EGifPutLine(gif, line, w) == GIF_OK;
        }
    }
    if (!ok) *why = GifErrorString(gif->Error);
    free(line);
    GifFreeMapObject(cmap);
    if (EGifCloseFile(gif, &e) != GIF_OK && ok) {
        *why = GifErrorString(e);
        ok = 0;
    }
    return ok ? 0 : -1;
}

static int gif_write(const char *path, const FrameSource *src, int n, int h, int w,
                     int grey_only, int delay_cs, Error *err) {
    if (n < 1) return error_set(err, "%s: no frames to write", path);
    if (h < 1 || w < 1 || h > 65535 || w > 65535)
        return error_set(err, "%s: frame size %d x %d outside 1..65535", path, w, h);
    if (delay_cs < 0 || delay_cs > 65535)
        return error_set(err, "%s: frame delay %d outside 0..65535", path, delay_cs);
    AtomicFile f;
    if (atomic_open(&f, path, err) != 0) return -1;
    const char *why = NULL;
    if (gif_encode(f.fp, src, n, h, w, grey_only, delay_cs, &why) != 0) {
        atomic_abort(&f);
        return error_set(err, "%s: cannot write GIF: %s", path, why ? why : "unknown error");
    }
    return atomic_commit(&f, err);
}

int write_gif(const char *path, const float *frames, int n, int c, int h, int w, int delay_cs,
              Error *err) {
    CHECK(c == 1 || c == 3, "c = %d", c);
    FrameSource src = {frames, NULL, c};
    return gif_write(path, &src, n, h, w, c == 1, delay_cs, err);
}

int write_gif_images(const char *path, const Image *frames, int n, int delay_cs, Error *err) {
    if (n < 1) return error_set(err, "%s: no frames to write", path);
    int grey_only = 1;
    for (int i = 0; i < n; i++) {
        CHECK(frames[i].h == frames[0].h && frames[i].w == frames[0].w,
              "frame %d is %d x %d, frame 0 %d x %d", i, frames[i].w, frames[i].h, frames[0].w,
              frames[0].h);
        if (frames[i].c == 3) grey_only = 0;
    }
    FrameSource src = {NULL, frames, 0};
    return gif_write(path, &src, n, frames[0].h, frames[0].w, grey_only, delay_cs, err);
}
