// test_vision_image.c: image loading (PNG, BMP, JPEG; bad files), PNG writing,
// resizing, cropping, normalising and 8-bit conversion (vision/image.h, vision/png.h).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

// Debian's libstb holds stb_image_write's implementation too; declarations only here.
#include <stb_image_write.h>

#include "core/check.h"
#include "core/fileio.h"
#include "core/rng.h"
#include "tests/support/test.h"
#include "vision/image.h"
#include "vision/png.h"

static char tmpdir[512];

static void make_tmpdir(void) {
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/vision_image_XXXXXX", base && *base ? base : "/tmp");
    CHECK(mkdtemp(tmpdir) != NULL, "mkdtemp %s", tmpdir);
}

static void tmp_path(char *out, size_t n, const char *name) {
    snprintf(out, n, "%s/%s", tmpdir, name);
}

// A deterministic test picture (h, w, c) in 8 bits: gradients plus a pattern.
static unsigned char *test_pixels(int h, int w, int c) {
    unsigned char *pix = xmalloc((size_t)h * w * c);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int ch = 0; ch < c; ch++)
                pix[((size_t)y * w + x) * c + ch] =
                    (unsigned char)((x * 255 / (w - 1) + ch * 80 + ((x / 4 + y / 4) % 2) * 30) % 256 *
                                    (y + 1) / h);
    return pix;
}

// Bytes of a PNG written by write_png_u8 (through a file).
static unsigned char *png_bytes(const unsigned char *pix, int h, int w, int c, size_t *len) {
    char path[600];
    tmp_path(path, sizeof path, "bytes.png");
    Error err;
    CHECK(write_png_u8(path, pix, h, w, c, &err) == 0, "%s", err.msg);
    unsigned char *data = NULL;
    CHECK(file_read_all(path, &data, len, 0, &err) == 0, "%s", err.msg);
    remove(path);
    return data;
}

typedef struct {
    unsigned char *data;
    size_t len, cap;
} MemBuf;

static void mem_write(void *ctx, void *data, int size) {
    MemBuf *m = ctx;
    if (m->len + size > m->cap) {
        m->cap = 2 * (m->len + size);
        m->data = xrealloc(m->data, m->cap);
    }
    memcpy(m->data + m->len, data, (size_t)size);
    m->len += (size_t)size;
}

static void test_png_roundtrip_rgb_and_grey(void) {
    int h = 13, w = 17;
    for (int c = 1; c <= 3; c += 2) {
        unsigned char *pix = test_pixels(h, w, c);
        char path[600];
        tmp_path(path, sizeof path, c == 1 ? "grey.png" : "rgb.png");
        Error err;
        EXPECT(write_png_u8(path, pix, h, w, c, &err) == 0, "%s", err.msg);
        Image img;
        EXPECT(image_load(path, &img, 0, &err) == 0, "%s", err.msg);
        EXPECT(img.c == c && img.h == h && img.w == w, "loaded %d x %d x %d", img.c, img.h, img.w);
        if (img.c == c && img.h == h && img.w == w) {
            unsigned char *back = xmalloc((size_t)h * w * c);
            image_to_u8(back, &img);
            EXPECT(memcmp(back, pix, (size_t)h * w * c) == 0, "c = %d: pixels differ", c);
            free(back);
        }
        image_free(&img);
        free(pix);
    }
}

static void test_png_float_image_and_grey_expansion(void) {
    Image img = image_new(1, 5, 7);
    for (int i = 0; i < 35; i++) img.data[i] = i / 34.0f;
    img.data[0] = -3.0f;  // clamped to 0
    img.data[1] = 7.0f;   // clamped to 1
    char path[600];
    tmp_path(path, sizeof path, "float.png");
    Error err;
    EXPECT(write_png_image(path, &img, &err) == 0, "%s", err.msg);
    Image rgb;
    EXPECT(image_load(path, &rgb, 3, &err) == 0, "%s", err.msg);
    EXPECT(rgb.c == 3 && rgb.h == 5 && rgb.w == 7, "loaded %d x %d x %d", rgb.c, rgb.h, rgb.w);
    if (rgb.c == 3) {
        float worst = 0.0f;
        for (int ch = 0; ch < 3; ch++)
            for (int i = 2; i < 35; i++) {
                float d = fabsf(rgb.data[ch * 35 + i] - img.data[i]);
                if (d > worst) worst = d;
            }
        EXPECT(worst <= 0.5f / 255 + 1e-6f, "quantisation error %g", worst);
        EXPECT(rgb.data[0] == 0.0f && rgb.data[1] == 1.0f, "clamped %g %g", rgb.data[0], rgb.data[1]);
        EXPECT(rgb.data[35 + 20] == rgb.data[20] && rgb.data[70 + 20] == rgb.data[20],
               "grey not expanded to equal planes");
    }
    image_free(&rgb);
    Image grey;
    EXPECT(image_load(path, &grey, 0, &err) == 0 && grey.c == 1, "channels = 0 keeps grey");
    image_free(&grey);
    image_free(&img);
}

static void test_png_write_failure_is_clean(void) {
    unsigned char pix[12] = {0};
    char path[600];
    tmp_path(path, sizeof path, "no_such_dir/x.png");
    Error err = {{0}};
    EXPECT(write_png_u8(path, pix, 2, 2, 3, &err) == -1, "write into a missing folder succeeded");
    EXPECT(strstr(err.msg, "no_such_dir") != NULL, "message does not name the path: %s", err.msg);
    EXPECT(!file_exists(path), "a file appeared");
}

static void test_bmp_and_jpeg_load(void) {
    int h = 24, w = 32;
    unsigned char *pix = test_pixels(h, w, 3);
    MemBuf bmp = {0};
    EXPECT(stbi_write_bmp_to_func(mem_write, &bmp, w, h, 3, pix), "stbi_write_bmp failed");
    Image img;
    Error err;
    EXPECT(image_load_memory(bmp.data, bmp.len, "t.bmp", &img, 0, &err) == 0, "%s", err.msg);
    EXPECT(img.c == 3 && img.h == h && img.w == w, "bmp %d x %d x %d", img.c, img.h, img.w);
    if (img.c == 3 && img.h == h && img.w == w) {
        unsigned char *back = xmalloc((size_t)h * w * 3);
        image_to_u8(back, &img);
        EXPECT(memcmp(back, pix, (size_t)h * w * 3) == 0, "bmp pixels differ");
        free(back);
    }
    image_free(&img);

    // JPEG is lossy: a smooth picture must come back close on average.
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int ch = 0; ch < 3; ch++)
                pix[((size_t)y * w + x) * 3 + ch] = (unsigned char)(40 + 5 * x + 3 * y + 20 * ch);
    MemBuf jpg = {0};
    EXPECT(stbi_write_jpg_to_func(mem_write, &jpg, w, h, 3, pix, 95), "stbi_write_jpg failed");
    char path[600];
    tmp_path(path, sizeof path, "t.jpg");
    EXPECT(file_write_atomic(path, jpg.data, jpg.len, &err) == 0, "%s", err.msg);
    EXPECT(image_load(path, &img, 0, &err) == 0, "%s", err.msg);
    EXPECT(img.c == 3 && img.h == h && img.w == w, "jpeg %d x %d x %d", img.c, img.h, img.w);
    if (img.c == 3 && img.h == h && img.w == w) {
        double mae = 0;
        size_t plane = (size_t)h * w;
        for (size_t i = 0; i < plane; i++)
            for (int ch = 0; ch < 3; ch++) mae += fabs(img.data[ch * plane + i] - pix[i * 3 + ch] / 255.0);
        mae /= 3.0 * plane;
        EXPECT(mae < 0.02, "jpeg mean abs error %g", mae);
    }
    image_free(&img);
    free(bmp.data);
    free(jpg.data);
    free(pix);
}

// A PNG consisting of a signature, an IHDR claiming (w, h) and IEND: no pixel data.
static size_t png_header_only(unsigned char *out, uint32_t w, uint32_t h) {
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    size_t o = 0;
    memcpy(out, sig, 8), o = 8;
    unsigned char ihdr[17] = {'I', 'H', 'D', 'R', w >> 24, w >> 16, w >> 8, w, h >> 24, h >> 16,
                              h >> 8, h, 8, 2, 0, 0, 0};
    const unsigned char len13[4] = {0, 0, 0, 13};
    memcpy(out + o, len13, 4), o += 4;
    memcpy(out + o, ihdr, 17), o += 17;
    uint32_t crc = (uint32_t)crc32(0, ihdr, 17);
    unsigned char c4[4] = {crc >> 24, crc >> 16, crc >> 8, crc};
    memcpy(out + o, c4, 4), o += 4;
    const unsigned char iend[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82};
    memcpy(out + o, iend, 12), o += 12;
    return o;
}

static void expect_load_error(const unsigned char *data, size_t len, const char *name,
                              const char *want) {
    Image img = {1, 1, 1, (float *)(uintptr_t)1};  // must be reset on failure
    Error err = {{0}};
    int rc = image_load_memory(data, len, name, &img, 3, &err);
    EXPECT(rc == -1, "%s: loaded (%d x %d)", name, img.w, img.h);
    EXPECT(img.data == NULL, "%s: image not zeroed on failure", name);
    EXPECT(strncmp(err.msg, name, strlen(name)) == 0, "message does not start with name: %s", err.msg);
    EXPECT(strstr(err.msg, want) != NULL, "%s: message \"%s\" lacks \"%s\"", name, err.msg, want);
    EXPECT(strchr(err.msg, '\n') == NULL, "message is not one line: %s", err.msg);
}

static void test_bad_files_give_clean_errors(void) {
    unsigned char buf[64] = {0};
    expect_load_error(buf, 0, "empty.png", "empty");
    // 100000 x 100000: the header alone must be refused, before any allocation.
    size_t n = png_header_only(buf, 100000, 100000);
    expect_load_error(buf, n, "huge.png", "too large");
    n = png_header_only(buf, 20000, 10);  // one side over the limit
    expect_load_error(buf, n, "wide.png", "too large");
    n = png_header_only(buf, 10, 10);  // plausible header, no pixel data
    expect_load_error(buf, n, "nodata.png", "corrupt or truncated PNG");
    // Garbage bytes.
    Rng rng;
    rng_seed(&rng, 7);
    for (int i = 0; i < 64; i++) buf[i] = (unsigned char)rng_below(&rng, 256);
    expect_load_error(buf, sizeof buf, "garbage.bin", "not a decodable image");
    // A BMP header claiming 100000 x 100000.
    unsigned char bmp[54] = {'B', 'M'};
    bmp[10] = 54, bmp[14] = 40;                      // pixel offset, info header size
    uint32_t side = 100000;
    memcpy(bmp + 18, &side, 4), memcpy(bmp + 22, &side, 4);  // little-endian host
    bmp[26] = 1, bmp[28] = 24;                       // planes, bits per pixel
    expect_load_error(bmp, sizeof bmp, "huge.bmp", "too large");
    // Missing file: the path is named.
    Image img;
    Error err = {{0}};
    char path[600];
    tmp_path(path, sizeof path, "missing.png");
    EXPECT(image_load(path, &img, 0, &err) == -1, "missing file loaded");
    EXPECT(strstr(err.msg, "missing.png") != NULL, "message: %s", err.msg);
    // An empty file on disk.
    tmp_path(path, sizeof path, "empty.png");
    EXPECT(file_write_atomic(path, "", 0, &err) == 0, "%s", err.msg);
    EXPECT(image_load(path, &img, 0, &err) == -1 && strstr(err.msg, "empty"), "message: %s", err.msg);
}

static void test_truncated_png_every_length(void) {
    int h = 16, w = 16;
    unsigned char *pix = test_pixels(h, w, 3);
    size_t len = 0;
    unsigned char *png = png_bytes(pix, h, w, 3, &len);
    int loaded = 0;
    for (size_t cut = 0; cut < len - 12; cut++) {  // anything shorter than header + data + IEND
        Image img;
        Error err = {{0}};
        unsigned char *copy = xmalloc(cut + 1);  // exact-size copy so ASan sees overreads
        memcpy(copy, png, cut);
        int rc = image_load_memory(copy, cut, "cut.png", &img, 0, &err);
        if (rc == 0) {
            loaded++;
            image_free(&img);
        } else {
            EXPECT(err.msg[0] != 0, "cut at %zu: no message", cut);
        }
        free(copy);
    }
    // stb_image does not need IEND, but it must not decode without all the pixel data.
    EXPECT(loaded == 0, "%d truncated PNGs decoded", loaded);
    Image img;
    Error err;
    EXPECT(image_load_memory(png, len, "whole.png", &img, 0, &err) == 0, "%s", err.msg);
    image_free(&img);
    free(png);
    free(pix);
}

// Random byte flips in valid PNG, BMP and JPEG files: either a clean error or a
// sane image, never a crash (run under `make check` for memory errors).
static void test_corrupted_bytes_never_crash(void) {
    int h = 12, w = 20;
    unsigned char *pix = test_pixels(h, w, 3);
    size_t lens[3];
    unsigned char *files[3];
    files[0] = png_bytes(pix, h, w, 3, &lens[0]);
    MemBuf bmp = {0}, jpg = {0};
    stbi_write_bmp_to_func(mem_write, &bmp, w, h, 3, pix);
    stbi_write_jpg_to_func(mem_write, &jpg, w, h, 3, pix, 80);
    files[1] = bmp.data, lens[1] = bmp.len;
    files[2] = jpg.data, lens[2] = jpg.len;
    Rng rng;
    rng_seed(&rng, 11);
    int errors = 0, ok = 0;
    for (int f = 0; f < 3; f++)
        for (int trial = 0; trial < 300; trial++) {
            unsigned char *copy = xmalloc(lens[f]);
            memcpy(copy, files[f], lens[f]);
            int flips = 1 + (int)rng_below(&rng, 8);
            for (int k = 0; k < flips; k++) copy[rng_below(&rng, (uint32_t)lens[f])] ^= (unsigned char)(1 + rng_below(&rng, 255));
            Image img;
            Error err = {{0}};
            if (image_load_memory(copy, lens[f], "fuzz", &img, 0, &err) == 0) {
                ok++;
                EXPECT(img.w >= 1 && img.h >= 1 && img.w <= IMAGE_MAX_SIDE && img.h <= IMAGE_MAX_SIDE,
                       "decoded %d x %d", img.w, img.h);
                image_free(&img);
            } else {
                errors++;
                EXPECT(strncmp(err.msg, "fuzz: ", 6) == 0, "message: %s", err.msg);
            }
            free(copy);
        }
    EXPECT(errors > 0, "no corrupted file was refused (%d decoded)", ok);
    for (int f = 0; f < 3; f++) free(files[f]);
    free(pix);
}

static void test_resize_constant_stays_constant(void) {
    const int sizes[][2] = {{7, 5}, {32, 32}, {3, 11}, {1, 1}, {64, 17}};
    for (int c = 1; c <= 3; c += 2) {
        Image src = image_new(c, 23, 19);
        for (int ch = 0; ch < c; ch++)
            for (int i = 0; i < 23 * 19; i++) src.data[ch * 23 * 19 + i] = 0.3f + 0.2f * ch;
        for (int s = 0; s < 5; s++)
            for (int mode = 0; mode < 2; mode++) {
                Image dst = image_resize(&src, sizes[s][0], sizes[s][1], mode ? RESIZE_BILINEAR : RESIZE_AREA);
                EXPECT(dst.c == c && dst.h == sizes[s][0] && dst.w == sizes[s][1], "size");
                for (int ch = 0; ch < c; ch++)
                    for (int i = 0; i < dst.h * dst.w; i++)
                        EXPECT_NEAR(dst.data[ch * dst.h * dst.w + i], 0.3f + 0.2f * ch, 1e-6, 0);
                image_free(&dst);
            }
        image_free(&src);
    }
}

static void test_resize_area_averages_blocks(void) {
    // 4 x 6 image of 2 x 2 blocks with values a, b, c (row 0) and d, e, f (row 1), each
    // block a pattern of four distinct pixels whose mean is the block value.
    const float block_mean[2][3] = {{0.1f, 0.5f, 0.9f}, {0.3f, 0.7f, 0.2f}};
    const float pattern[2][2] = {{-0.05f, 0.08f}, {0.02f, -0.05f}};
    Image src = image_new(1, 4, 6);
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 6; x++) *image_at(&src, 0, y, x) = block_mean[y / 2][x / 2] + pattern[y % 2][x % 2];
    Image dst = image_resize(&src, 2, 3, RESIZE_AREA);
    for (int y = 0; y < 2; y++)
        for (int x = 0; x < 3; x++) EXPECT_NEAR(*image_at(&dst, 0, y, x), block_mean[y][x], 1e-6, 0);
    image_free(&dst);
    // A non-integer ratio: 3 -> 2 splits the middle pixel between both outputs.
    Image row = image_new(1, 1, 3);
    row.data[0] = 0.0f, row.data[1] = 0.6f, row.data[2] = 0.9f;
    dst = image_resize(&row, 1, 2, RESIZE_AREA);
    EXPECT_NEAR(dst.data[0], (1.0f * 0.0f + 0.5f * 0.6f) / 1.5f, 1e-6, 0);
    EXPECT_NEAR(dst.data[1], (0.5f * 0.6f + 1.0f * 0.9f) / 1.5f, 1e-6, 0);
    image_free(&dst);
    image_free(&row);
    image_free(&src);
}

static void test_resize_bilinear_interpolates(void) {
    // Same size is the identity; upscaling a ramp by 2 gives the midpoints between samples.
    Image src = image_new(1, 1, 4);
    for (int i = 0; i < 4; i++) src.data[i] = (float)i;
    Image same = image_resize(&src, 1, 4, RESIZE_BILINEAR);
    for (int i = 0; i < 4; i++) EXPECT_NEAR(same.data[i], (float)i, 1e-6, 0);
    Image up = image_resize(&src, 1, 8, RESIZE_BILINEAR);
    // Output x maps to source (x + 0.5) / 2 - 0.5, clamped to [0, 3].
    const float want[8] = {0.0f, 0.25f, 0.75f, 1.25f, 1.75f, 2.25f, 2.75f, 3.0f};
    for (int i = 0; i < 8; i++) EXPECT_NEAR(up.data[i], want[i], 1e-6, 0);
    image_free(&same);
    image_free(&up);
    image_free(&src);
}

static void test_center_crop_normalize_u8(void) {
    Image src = image_new(3, 3, 5);
    for (int ch = 0; ch < 3; ch++)
        for (int y = 0; y < 3; y++)
            for (int x = 0; x < 5; x++) *image_at(&src, ch, y, x) = ch * 100 + y * 10 + x;
    Image sq = image_center_crop(&src);
    EXPECT(sq.h == 3 && sq.w == 3, "crop %d x %d", sq.h, sq.w);
    for (int ch = 0; ch < 3; ch++)
        for (int y = 0; y < 3; y++)
            for (int x = 0; x < 3; x++) EXPECT(*image_at(&sq, ch, y, x) == ch * 100 + y * 10 + x + 1, "crop pixel");
    image_free(&sq);

    float mean[3], sd[3];
    image_channel_stats(&src, mean, sd);
    image_normalize(&src, mean, sd);
    float m2[3], s2[3];
    image_channel_stats(&src, m2, s2);
    for (int ch = 0; ch < 3; ch++) {
        EXPECT_NEAR(m2[ch], 0.0, 1e-5, 0);
        EXPECT_NEAR(s2[ch], 1.0, 1e-5, 0);
    }
    image_free(&src);

    unsigned char pix[2 * 2 * 3];
    for (int i = 0; i < 12; i++) pix[i] = (unsigned char)(i * 23);
    Image img = image_from_u8(pix, 3, 2, 2);
    EXPECT_NEAR(*image_at(&img, 1, 0, 1), (1 * 3 + 1) * 23 / 255.0, 1e-7, 0);  // HWC -> CHW
    unsigned char back[12];
    image_to_u8(back, &img);
    EXPECT(memcmp(back, pix, 12) == 0, "u8 roundtrip differs");
    Image grey = image_to_grey(&img);
    EXPECT_NEAR(grey.data[0], 0.299 * pix[0] / 255 + 0.587 * pix[1] / 255 + 0.114 * pix[2] / 255, 1e-6, 0);
    image_free(&grey);
    image_free(&img);
}

int main(void) {
    make_tmpdir();
    RUN(test_png_roundtrip_rgb_and_grey);
    RUN(test_png_float_image_and_grey_expansion);
    RUN(test_png_write_failure_is_clean);
    RUN(test_bmp_and_jpeg_load);
    RUN(test_bad_files_give_clean_errors);
    RUN(test_truncated_png_every_length);
    RUN(test_corrupted_bytes_never_crash);
    RUN(test_resize_constant_stays_constant);
    RUN(test_resize_area_averages_blocks);
    RUN(test_resize_bilinear_interpolates);
    RUN(test_center_crop_normalize_u8);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    return test_summary();
}
