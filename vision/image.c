// image.c: see image.h.
#include "vision/image.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

// Debian's libstb ships the implementation; only the declarations are wanted here.
#include <stb_image.h>

#include "core/check.h"
#include "core/fileio.h"

Image image_new(int c, int h, int w) {
    CHECK((c == 1 || c == 3) && h >= 1 && w >= 1, "image_new(%d, %d, %d)", c, h, w);
    Image img = {c, h, w, xcalloc((size_t)c * h * w, sizeof(float))};
    return img;
}

void image_free(Image *img) {
    if (!img) return;
    free(img->data);
    memset(img, 0, sizeof *img);
}

Image image_clone(const Image *src) {
    Image dst = image_new(src->c, src->h, src->w);
    memcpy(dst.data, src->data, (size_t)src->c * src->h * src->w * sizeof(float));
    return dst;
}

Image image_from_u8(const unsigned char *pix, int c, int h, int w) {
    Image img = image_new(c, h, w);
    size_t plane = (size_t)h * w;
    for (size_t i = 0; i < plane; i++)
        for (int ch = 0; ch < c; ch++) img.data[ch * plane + i] = pix[i * c + ch] / 255.0f;
    return img;
}

void image_to_u8(unsigned char *pix, const Image *img) {
    size_t plane = (size_t)img->h * img->w;
    for (size_t i = 0; i < plane; i++)
        for (int ch = 0; ch < img->c; ch++) {
            float v = img->data[ch * plane + i];
            v = v > 0.0f ? (v < 1.0f ? v : 1.0f) : 0.0f;  // NaN -> 0
            pix[i * img->c + ch] = (unsigned char)lrintf(v * 255.0f);
        }
}

// stb_image refuses some huge PNG headers itself, with a vague reason; read the IHDR
// size here so the message says what is wrong. Returns 1 and the size if it is a PNG.
static int png_header_size(const unsigned char *d, size_t len, long *w, long *h) {
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (len < 24 || memcmp(d, sig, 8) != 0 || memcmp(d + 12, "IHDR", 4) != 0) return 0;
    *w = (long)d[16] << 24 | (long)d[17] << 16 | (long)d[18] << 8 | d[19];
    *h = (long)d[20] << 24 | (long)d[21] << 16 | (long)d[22] << 8 | d[23];
    return 1;
}

// Two holes in stb_image 2.27 (Debian 12)'s JPEG decoder that a hostile file reaches:
// - it builds each Huffman table into a 257-entry array without checking that the 16 code
//   counts of a DHT segment sum to at most 256, so the file writes past it (found by
//   tests/fuzz/fuzz_image.c);
// - a scan may name a Huffman table no DHT segment defined, or a frame component a
//   quantisation table no DQT segment defined, and stb then decodes with that table's
//   never-written memory; and a component that no scan covers before EOI (or a file
//   with no scan at all) comes out of never-written pixel memory (found by valgrind,
//   `make valgrind`).
// Walks the JPEG's marker segments the way stb_image does (fill bytes, segment lengths,
// entropy-coded data up to the next marker), records the tables defined so far, and
// returns a reason at the first oversized table or the first scan that needs an undefined
// one (a baseline scan needs each component's DC and AC tables; a progressive scan its DC
// tables on a first DC pass, its AC tables on an AC pass; every scan needs the
// quantisation tables of all the frame's components), or, at EOI or the end of the data,
// at a frame component no scan covered (a progressive one needs a first DC scan);
// NULL otherwise, or when the data are not a JPEG. Bytes past the end read as 0, as stb_image reads them.
// What the segments seen so far define, for jpeg_huffman_problem.
typedef struct {
    const unsigned char *d;
    size_t len;
    int defined[2][4];  // Huffman tables [class: 0 DC, 1 AC][table id]
    int quant_defined[4];
    unsigned frame_id[4], frame_tq[4], frame_components;
    int covered[4];  // frame component decoded by some scan
    int progressive;
} JpegTables;

static unsigned byte_at(const JpegTables *t, size_t k) { return k < t->len ? t->d[k] : 0; }

// SOF at i: P, Y, X, count, (id, HV, Tq) each.
static void jpeg_frame(JpegTables *t, size_t i) {
    t->frame_components = byte_at(t, i + 9);
    for (unsigned c = 0; c < t->frame_components && c < 4; c++) {
        t->frame_id[c] = byte_at(t, i + 10 + 3 * (size_t)c);
        t->frame_tq[c] = byte_at(t, i + 12 + 3 * (size_t)c);
        t->covered[c] = 0;
    }
}

// DQT at i, seg bytes long: (precision/id byte, 64 values of 1 or 2 bytes) each.
static void jpeg_quant(JpegTables *t, size_t i, size_t seg) {
    long left = (long)seg - 2;
    for (size_t p = i + 4; left > 0;) {
        unsigned q = byte_at(t, p);
        size_t n = 1 + ((q >> 4) ? 128 : 64);
        if ((q & 15) <= 3) t->quant_defined[q & 15] = 1;
        p += n;
        left -= (long)n;
    }
}

// DHT at i, seg bytes long: tables of (class/id byte, 16 counts, sum-of-counts values).
static const char *jpeg_huffman(JpegTables *t, size_t i, size_t seg) {
    long left = (long)seg - 2;
    for (size_t p = i + 4; left > 0;) {
        unsigned q = byte_at(t, p);
        int n = 0;
        for (size_t k = 1; k <= 16; k++) n += byte_at(t, p + k);
        if (n > 256) return "a Huffman table has more than 256 codes";
        if ((q >> 4) <= 1 && (q & 15) <= 3) t->defined[q >> 4][q & 15] = 1;
        p += 17 + (size_t)n;
        left -= 17 + n;
    }
    return NULL;
}

// SOS at i: count, (component id, DC/AC table ids) each, Ss, Se, Ah/Al.
static const char *jpeg_scan(JpegTables *t, size_t i) {
    for (unsigned c = 0; c < t->frame_components && c < 4; c++)
        if (t->frame_tq[c] <= 3 && !t->quant_defined[t->frame_tq[c]])
            return "a component uses a quantisation table the file never defines";
    size_t p = i + 4;
    unsigned ns = byte_at(t, p);
    unsigned ss = byte_at(t, p + 1 + 2 * (size_t)ns), ah = byte_at(t, p + 3 + 2 * (size_t)ns) >> 4;
    int need_dc = !t->progressive || (ss == 0 && ah == 0), need_ac = !t->progressive || ss > 0;
    for (unsigned c = 0; c < ns && c < 4; c++) {
        unsigned id = byte_at(t, p + 1 + 2 * (size_t)c), tab = byte_at(t, p + 2 + 2 * (size_t)c);
        if ((need_dc && (tab >> 4) <= 3 && !t->defined[0][tab >> 4]) ||
            (need_ac && (tab & 15) <= 3 && !t->defined[1][tab & 15]))
            return "a scan uses a Huffman table the file never defines";
        for (unsigned k = 0; k < t->frame_components && k < 4; k++)
            if (t->frame_id[k] == id && (!t->progressive || (ss == 0 && ah == 0))) t->covered[k] = 1;
    }
    return NULL;
}

static const char *jpeg_huffman_problem(const unsigned char *d, size_t len) {
    JpegTables t = {.d = d, .len = len};
    size_t i = 0;
    if (len < 2 || d[0] != 0xFF) return NULL;
    while (i < len && d[i] == 0xFF) i++;
    if (i >= len || d[i] != 0xD8) return NULL;  // no SOI: stb_image will not treat it as a JPEG
    i++;
    while (i + 1 < len) {
        if (d[i] != 0xFF) {  // entropy-coded data or padding
            i++;
            continue;
        }
        unsigned m = d[i + 1];
        if (m == 0xFF) {  // fill byte
            i++;
            continue;
        }
        if (m == 0xD9) break;  // EOI: stb_image stops decoding here
        if (m == 0x00 || m == 0x01 || (m >= 0xD0 && m <= 0xD8)) {  // stuffing, TEM, RSTn, SOI
            i += 2;
            continue;
        }
        size_t seg = i + 4 <= len ? ((size_t)d[i + 2] << 8 | d[i + 3]) : 0;
        const char *problem = NULL;
        if (m == 0xC2) t.progressive = 1;
        if (m == 0xC0 || m == 0xC1 || m == 0xC2) jpeg_frame(&t, i);
        if (m == 0xDB) jpeg_quant(&t, i, seg);
        if (m == 0xC4) problem = jpeg_huffman(&t, i, seg);
        if (m == 0xDA) problem = jpeg_scan(&t, i);
        if (problem) return problem;
        i += 2 + (seg >= 2 ? seg : 2);
    }
    for (unsigned c = 0; c < t.frame_components && c < 4; c++)
        if (!t.covered[c]) return "an image component has no scan (no pixel data)";
    return NULL;
}

// stb_image 2.27 grows its buffer for a PNG IDAT chunk to the chunk's declared length
// before reading it, so a 140-byte file declaring a 2 GiB chunk makes it allocate 2 GiB
// (found by tests/fuzz/fuzz_image.c). Returns 0 when a chunk before IEND declares more data
// than the file holds (stb_image fails on such a file anyway, after the allocation); 1
// otherwise, or when the data are not a PNG.
static int png_chunks_fit(const unsigned char *d, size_t len) {
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (len < 8 || memcmp(d, sig, 8) != 0) return 1;
    for (size_t pos = 8; pos + 8 <= len;) {
        size_t n = (size_t)d[pos] << 24 | (size_t)d[pos + 1] << 16 | (size_t)d[pos + 2] << 8 |
                   d[pos + 3];
        if (memcmp(d + pos + 4, "IEND", 4) == 0) return 1;
        if (n > len - pos - 8) return 0;
        pos += 12 + n;  // length, type, data, CRC
    }
    return 1;
}

// stb_image 2.27 inflates a PNG's whole IDAT stream however far it runs past what the
// header's size needs (a 1 MB file of a 1 x 1 picture took 1 GB). Inflates the stream
// here first into a small scratch buffer, counting, and returns 0 when it yields more
// than twice the bytes the header's size needs (interlacing needs a little more than
// once) plus 64 KiB; 1 otherwise (or when the data are not a PNG, or are corrupt: stb_image
// then says why). Call after png_chunks_fit.
static int png_inflated_size_fits(const unsigned char *d, size_t len) {
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (len < 33 || memcmp(d, sig, 8) != 0) return 1;
    int raw_deflate = 0;  // Apple's CgBI PNGs hold a raw deflate stream
    size_t pos = 8;
    if (memcmp(d + 12, "CgBI", 4) == 0) {
        raw_deflate = 1;
        pos += 12 + ((size_t)d[8] << 24 | (size_t)d[9] << 16 | (size_t)d[10] << 8 | d[11]);
    }
    if (pos + 33 > len || memcmp(d + pos + 4, "IHDR", 4) != 0) return 1;
    const unsigned char *h = d + pos + 8;
    uint64_t w = (uint64_t)h[0] << 24 | (uint64_t)h[1] << 16 | (uint64_t)h[2] << 8 | h[3];
    uint64_t rows = (uint64_t)h[4] << 24 | (uint64_t)h[5] << 16 | (uint64_t)h[6] << 8 | h[7];
    static const int channels_of_type[7] = {1, 0, 3, 1, 2, 0, 4};
    int bits = h[8] * (h[9] <= 6 ? channels_of_type[h[9]] : 0);
    if (w == 0 || rows == 0 || bits == 0) return 1;  // stb_image refuses these itself
    uint64_t cap = 2 * rows * (1 + (w * (uint64_t)bits + 7) / 8) + 65536;
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, raw_deflate ? -MAX_WBITS : MAX_WBITS) != Z_OK) return 1;
    unsigned char scratch[16384];
    uint64_t total = 0;
    int fits = 1, done = 0;
    for (; !done && fits && pos + 8 <= len;) {
        size_t n = (size_t)d[pos] << 24 | (size_t)d[pos + 1] << 16 | (size_t)d[pos + 2] << 8 |
                   d[pos + 3];
        if (n > len - pos - 8 || memcmp(d + pos + 4, "IEND", 4) == 0) break;
        if (memcmp(d + pos + 4, "IDAT", 4) == 0) {
            zs.next_in = (Bytef *)(d + pos + 8);
            zs.avail_in = (uInt)n;
            while (zs.avail_in > 0 && fits && !done) {
                zs.next_out = scratch;
                zs.avail_out = sizeof scratch;
                int rc = inflate(&zs, Z_NO_FLUSH);
                total += sizeof scratch - zs.avail_out;
                if (total > cap) fits = 0;
                if (rc == Z_STREAM_END || (rc != Z_OK && rc != Z_BUF_ERROR)) done = 1;
                if (rc == Z_BUF_ERROR && zs.avail_out != 0) break;  // needs the next chunk
            }
        }
        pos += 12 + n;
    }
    inflateEnd(&zs);
    return fits;
}

// stb_image 2.27 reads the numbers of a binary PGM / PPM header into an int without an
// overflow check ("P5 7 100000000000 255" is undefined behaviour), and mishandles 16-bit
// files (maximum value > 255): it converts them to another channel count as if they held
// 8-bit samples, reading past its buffer (both found by tests/fuzz/fuzz_image.c), and on
// a little-endian machine keeps the low byte of each big-endian sample. Reads the three
// numbers the way stb_image does (white space and # comments skipped, a digit run ending
// before the last byte); returns 0 when one passes INT_MAX, else 1 with *wide set to 1
// for a 16-bit file (0 otherwise, and when the data are not a binary PGM / PPM).
static int pnm_header_numbers_fit(const unsigned char *d, size_t len, int *wide) {
    *wide = 0;
    if (len < 2 || d[0] != 'P' || (d[1] != '5' && d[1] != '6')) return 1;
    size_t pos = 2;
    unsigned char c = pos < len ? d[pos++] : 0;
    long long v = 0;
    for (int k = 0; k < 3; k++) {  // width, height, maximum value
        for (;;) {
            while (pos < len && (c == ' ' || (c >= '\t' && c <= '\r'))) c = d[pos++];
            if (pos >= len || c != '#') break;
            while (pos < len && c != '\n' && c != '\r') c = d[pos++];
        }
        v = 0;
        while (pos < len && c >= '0' && c <= '9') {
            v = v * 10 + (c - '0');
            if (v > INT_MAX) return 0;
            c = d[pos++];
        }
    }
    *wide = v > 255;
    return 1;
}

// Formats stb_image decodes but this loader does not offer (see image.h): Radiance HDR,
// whose decoder in stb_image 2.27 loops forever on a cut run-length scanline (a 49-byte
// file hangs the loader; CVE-2021-42715), and Softimage PIC. Returns the format's name,
// or NULL, testing the signatures as stb_image does.
// The format a file's first bytes announce, for error messages; NULL if none is recognised.
static const char *format_by_signature(const unsigned char *d, size_t n) {
    if (n >= 8 && memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0) return "PNG";
    if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) return "JPEG";
    if (n >= 6 && (memcmp(d, "GIF87a", 6) == 0 || memcmp(d, "GIF89a", 6) == 0)) return "GIF";
    if (n >= 2 && d[0] == 'B' && d[1] == 'M') return "BMP";
    if (n >= 4 && memcmp(d, "8BPS", 4) == 0) return "PSD";
    if (n >= 2 && d[0] == 'P' && (d[1] == '5' || d[1] == '6')) return "PGM/PPM";
    return NULL;
}

static const char *unoffered_format(const unsigned char *d, size_t len) {
    if ((len >= 11 && memcmp(d, "#?RADIANCE\n", 11) == 0) ||
        (len >= 7 && memcmp(d, "#?RGBE\n", 7) == 0))
        return "Radiance HDR";
    if (len >= 92 && memcmp(d, "\x53\x80\xF6\x34", 4) == 0 && memcmp(d + 88, "PICT", 4) == 0)
        return "Softimage PIC";
    return NULL;
}

// stb_image's failure reason, made printable: for an unknown PNG chunk it quotes the raw
// chunk type, which may hold a newline or any byte (found by tests/fuzz/fuzz_image.c).
static const char *printable_reason(char *buf, size_t cap, const char *why, const char *fallback) {
    if (!why) why = fallback;
    size_t i = 0;
    for (; why[i] && i + 1 < cap; i++) {
        unsigned char c = (unsigned char)why[i];
        buf[i] = c >= 0x20 && c < 0x7F ? (char)c : '?';
    }
    buf[i] = 0;
    return buf;
}

int image_load_memory(const unsigned char *data, size_t len, const char *name, Image *img,
                      int channels, Error *err) {
    CHECK(channels == 0 || channels == 1 || channels == 3, "channels = %d", channels);
    memset(img, 0, sizeof *img);
    if (len == 0) return error_set(err, "%s: empty file", name);
    if (len > (size_t)INT_MAX) return error_set(err, "%s: file too large (%zu bytes)", name, len);
    const char *jpeg_problem = jpeg_huffman_problem(data, len);
    if (jpeg_problem) return error_set(err, "%s: corrupt JPEG: %s", name, jpeg_problem);
    const char *unoffered = unoffered_format(data, len);
    if (unoffered)
        return error_set(err, "%s: %s images are not supported (PNG, JPEG, BMP, GIF, TGA, PSD, "
                              "PGM/PPM are)", name, unoffered);
    int pnm_wide;
    if (!pnm_header_numbers_fit(data, len, &pnm_wide))
        return error_set(err, "%s: corrupt PGM/PPM header: a number past %d", name, INT_MAX);
    if (pnm_wide)
        return error_set(err, "%s: 16-bit PGM/PPM images are not supported (maximum value > 255)",
                         name);
    if (!png_chunks_fit(data, len))
        return error_set(err, "%s: corrupt PNG: a chunk runs past the end of the file", name);
    int w = 0, h = 0, comp = 0;
    if (!stbi_info_from_memory(data, (int)len, &w, &h, &comp)) {
        long pw, ph;
        if (png_header_size(data, len, &pw, &ph) &&
            (pw > IMAGE_MAX_SIDE || ph > IMAGE_MAX_SIDE || pw * ph > IMAGE_MAX_PIXELS))
            return error_set(err, "%s: image too large: %ld x %ld (limits %d per side, %ld pixels)",
                             name, pw, ph, IMAGE_MAX_SIDE, (long)IMAGE_MAX_PIXELS);
        char why[64];
        printable_reason(why, sizeof why, stbi_failure_reason(), "unknown format");
        return error_set(err, "%s: not a decodable image (%s)", name, why);
    }
    if (w <= 0 || h <= 0) return error_set(err, "%s: bad dimensions %d x %d", name, w, h);
    if (w > IMAGE_MAX_SIDE || h > IMAGE_MAX_SIDE || (long)w * h > IMAGE_MAX_PIXELS)
        return error_set(err, "%s: image too large: %d x %d (limits %d per side, %ld pixels)", name,
                         w, h, IMAGE_MAX_SIDE, (long)IMAGE_MAX_PIXELS);
    if (!png_inflated_size_fits(data, len))
        return error_set(err, "%s: corrupt PNG: the compressed data inflate to far more than "
                              "the image size needs (a decompression bomb?)", name);
    int want = channels ? channels : (comp <= 2 ? 1 : 3);
    int dw = 0, dh = 0, dcomp = 0;
    unsigned char *pix = stbi_load_from_memory(data, (int)len, &dw, &dh, &dcomp, want);
    if (!pix) {
        // stb tries every decoder in turn, so its last reason may belong to another format.
        const char *format = format_by_signature(data, len);
        if (format) return error_set(err, "%s: corrupt or truncated %s data", name, format);
        char why[64];
        printable_reason(why, sizeof why, stbi_failure_reason(), "corrupt data");
        return error_set(err, "%s: cannot decode (%s)", name, why);
    }
    if (dw != w || dh != h) {
        stbi_image_free(pix);
        return error_set(err, "%s: decoded size %d x %d differs from header %d x %d", name, dw, dh,
                         w, h);
    }
    *img = image_from_u8(pix, want, h, w);
    stbi_image_free(pix);
    return 0;
}

int image_load(const char *path, Image *img, int channels, Error *err) {
    unsigned char *data = NULL;
    size_t len = 0;
    memset(img, 0, sizeof *img);
    if (file_read_all(path, &data, &len, IMAGE_MAX_FILE_BYTES, err) != 0) return -1;
    int rc = image_load_memory(data, len, path, img, channels, err);
    free(data);
    return rc;
}

// One axis of a box filter: output index o covers input [o * n_in / n_out, (o+1) * n_in / n_out).
// Input pixel i takes weight overlap([lo, hi), [i, i+1)) / (hi - lo).

static void area_span(int o, int n_out, int n_in, int *i0, int *i1, double *lo, double *hi) {
    *lo = (double)o * n_in / n_out;
    *hi = (double)(o + 1) * n_in / n_out;
    *i0 = (int)floor(*lo);
    *i1 = (int)ceil(*hi);
    if (*i1 > n_in) *i1 = n_in;
    if (*i1 <= *i0) *i1 = *i0 + 1;
}

static inline double overlap(double lo, double hi, int i) {
    double a = lo > i ? lo : i, b = hi < i + 1 ? hi : i + 1;
    return b > a ? b - a : 0.0;
}

void resize_area(float *dst, int dh, int dw, const float *src, int c, int sh, int sw) {
    CHECK(dh >= 1 && dw >= 1 && sh >= 1 && sw >= 1 && c >= 1);
    float *tmp = xmalloc((size_t)c * sh * dw * sizeof(float));  // (c, sh, dw): rows resized
    for (int ch = 0; ch < c; ch++)
        for (int x = 0; x < dw; x++) {
            int i0, i1;
            double lo, hi;
            area_span(x, dw, sw, &i0, &i1, &lo, &hi);
            double norm = 1.0 / (hi - lo);
            for (int y = 0; y < sh; y++) {
                const float *row = src + ((size_t)ch * sh + y) * sw;
                double s = 0.0;
                for (int i = i0; i < i1; i++) s += overlap(lo, hi, i) * row[i];
                tmp[((size_t)ch * sh + y) * dw + x] = (float)(s * norm);
            }
        }
    for (int ch = 0; ch < c; ch++)
        for (int y = 0; y < dh; y++) {
            int i0, i1;
            double lo, hi;
            area_span(y, dh, sh, &i0, &i1, &lo, &hi);
            double norm = 1.0 / (hi - lo);
            float *out = dst + ((size_t)ch * dh + y) * dw;
            for (int x = 0; x < dw; x++) {
                double s = 0.0;
                for (int i = i0; i < i1; i++)
                    s += overlap(lo, hi, i) * tmp[((size_t)ch * sh + i) * dw + x];
                out[x] = (float)(s * norm);
            }
        }
    free(tmp);
}

// Source coordinate of output pixel o's centre, clamped to the valid range.
static void bilinear_coord(int o, int n_out, int n_in, int *i0, int *i1, float *t) {
    double s = (o + 0.5) * n_in / n_out - 0.5;
    if (s < 0) s = 0;
    if (s > n_in - 1) s = n_in - 1;
    *i0 = (int)s;
    *i1 = *i0 + 1 < n_in ? *i0 + 1 : *i0;
    *t = (float)(s - *i0);
}

void resize_bilinear(float *dst, int dh, int dw, const float *src, int c, int sh, int sw) {
    CHECK(dh >= 1 && dw >= 1 && sh >= 1 && sw >= 1 && c >= 1);
    int *x0 = xmalloc((size_t)dw * sizeof(int)), *x1 = xmalloc((size_t)dw * sizeof(int));
    float *tx = xmalloc((size_t)dw * sizeof(float));
    for (int x = 0; x < dw; x++) bilinear_coord(x, dw, sw, &x0[x], &x1[x], &tx[x]);
    for (int ch = 0; ch < c; ch++)
        for (int y = 0; y < dh; y++) {
            int y0, y1;
            float ty;
            bilinear_coord(y, dh, sh, &y0, &y1, &ty);
            const float *r0 = src + ((size_t)ch * sh + y0) * sw;
            const float *r1 = src + ((size_t)ch * sh + y1) * sw;
            float *out = dst + ((size_t)ch * dh + y) * dw;
            for (int x = 0; x < dw; x++) {
                float a = r0[x0[x]] + tx[x] * (r0[x1[x]] - r0[x0[x]]);
                float b = r1[x0[x]] + tx[x] * (r1[x1[x]] - r1[x0[x]]);
                out[x] = a + ty * (b - a);
            }
        }
    free(x0);
    free(x1);
    free(tx);
}

Image image_resize(const Image *src, int h, int w, ResizeMode mode) {
    Image dst = image_new(src->c, h, w);
    if (mode == RESIZE_AREA)
        resize_area(dst.data, h, w, src->data, src->c, src->h, src->w);
    else
        resize_bilinear(dst.data, h, w, src->data, src->c, src->h, src->w);
    return dst;
}

Image image_center_crop(const Image *src) {
    int s = src->h < src->w ? src->h : src->w;
    int oy = (src->h - s) / 2, ox = (src->w - s) / 2;
    Image dst = image_new(src->c, s, s);
    for (int ch = 0; ch < src->c; ch++)
        for (int y = 0; y < s; y++)
            memcpy(image_at(&dst, ch, y, 0), image_at(src, ch, y + oy, ox), (size_t)s * sizeof(float));
    return dst;
}

Image image_to_rgb(const Image *src) {
    if (src->c == 3) return image_clone(src);
    Image dst = image_new(3, src->h, src->w);
    size_t plane = (size_t)src->h * src->w;
    for (int ch = 0; ch < 3; ch++) memcpy(dst.data + ch * plane, src->data, plane * sizeof(float));
    return dst;
}

Image image_to_grey(const Image *src) {
    if (src->c == 1) return image_clone(src);
    Image dst = image_new(1, src->h, src->w);
    size_t plane = (size_t)src->h * src->w;
    for (size_t i = 0; i < plane; i++)
        dst.data[i] = 0.299f * src->data[i] + 0.587f * src->data[plane + i] +
                      0.114f * src->data[2 * plane + i];
    return dst;
}

void image_normalize(Image *img, const float *mean, const float *std) {
    size_t plane = (size_t)img->h * img->w;
    for (int ch = 0; ch < img->c; ch++) {
        CHECK(std[ch] > 0.0f, "std[%d] = %g", ch, std[ch]);
        float m = mean[ch], inv = 1.0f / std[ch];
        float *p = img->data + ch * plane;
        for (size_t i = 0; i < plane; i++) p[i] = (p[i] - m) * inv;
    }
}

void image_channel_stats(const Image *img, float *mean, float *std) {
    size_t plane = (size_t)img->h * img->w;
    for (int ch = 0; ch < img->c; ch++) {
        const float *p = img->data + ch * plane;
        double s = 0.0, ss = 0.0;
        for (size_t i = 0; i < plane; i++) s += p[i];
        double m = s / plane;
        for (size_t i = 0; i < plane; i++) ss += (p[i] - m) * (p[i] - m);
        mean[ch] = (float)m;
        std[ch] = (float)sqrt(ss / plane);
    }
}
