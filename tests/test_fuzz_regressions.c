// test_fuzz_regressions.c: replays every seed (tests/fuzz/corpus/NAME/) and every kept
// crashing input (tests/fuzz/regressions/NAME/) through the fuzz targets' own entry points
// (tests/fuzz/fuzz_NAME.c, included here with FUZZ_NO_MAIN), so `make test` and `make check`
// re-check each input and each property the fuzzers check; seeds must also be accepted.
// Then the hostile-input limits, each a clear one-line error (or a documented cap), never a
// crash: an image header claiming sizes past the bounds (and a PNG decompression bomb), an
// IDX header claiming more data than the file holds (raw and gzip), a caption of thousands
// of tokens, invalid UTF-8, and JSON nested thousands deep (caption files and safetensors
// headers).
// Run from the repository root (as tests/run.sh does): the corpora are found by relative path.
#include "tests/fuzz/fuzz_util.c"

#define FUZZ_NO_MAIN
#include "tests/fuzz/fuzz_captions.c"
#include "tests/fuzz/fuzz_encoder.c"
#include "tests/fuzz/fuzz_idx.c"
#include "tests/fuzz/fuzz_image.c"
#include "tests/fuzz/fuzz_safetensors.c"
#include "tests/fuzz/fuzz_tokenizer.c"
#include "tests/fuzz/fuzz_featcache.c"
#include "tests/fuzz/fuzz_classify.c"
#include "tests/fuzz/fuzz_draw.c"
#include "tests/fuzz/fuzz_eval_record.c"
#include "tests/fuzz/fuzz_sentences.c"
#include "tests/fuzz/fuzz_pairs.c"
#include "tests/fuzz/fuzz_text.c"
#include "tests/fuzz/fuzz_bpe.c"

#include <dirent.h>
#include <zlib.h>

#include "core/fileio.h"
#include "datasets/captions_json.h"
#include "datasets/captions_text.h"
#include "tests/support/test.h"

typedef int (*FuzzEntry)(const uint8_t *data, size_t size);

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

// Runs every file of dir through entry; returns the number of files (-1: no such folder).
// must_accept: each file must be accepted (seeds are valid files).
static int replay_dir(const char *dir, FuzzEntry entry, int must_accept) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    char **names = NULL;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        names = xrealloc(names, (size_t)(n + 1) * sizeof *names);
        names[n++] = xstrdup(e->d_name);
    }
    closedir(d);
    if (n > 1) qsort(names, (size_t)n, sizeof *names, cmp_str);
    for (int i = 0; i < n; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unsigned char *data;
        size_t len;
        Error err;
        if (file_read_all(path, &data, &len, 0, &err) != 0) {
            EXPECT(0, "%s", err.msg);
            continue;
        }
        int accepted = entry(data, len);
        EXPECT(!must_accept || accepted, "seed %s was refused", path);
        free(data);
        free(names[i]);
    }
    free(names);
    return n;
}

static void replay(const char *target, FuzzEntry entry) {
    char dir[256];
    snprintf(dir, sizeof dir, "tests/fuzz/corpus/%s", target);
    int seeds = replay_dir(dir, entry, 1);
    EXPECT(seeds > 0, "no seeds in %s (run from the repository root; make fuzz-seeds)", dir);
    snprintf(dir, sizeof dir, "tests/fuzz/regressions/%s", target);
    replay_dir(dir, entry, 0);  // may be empty or absent: nothing found yet
}

static void test_replay_image(void) { replay("image", fuzz_image_one); }
static void test_replay_idx(void) { replay("idx", fuzz_idx_one); }
static void test_replay_captions(void) { replay("captions", fuzz_captions_one); }
static void test_replay_safetensors(void) { replay("safetensors", fuzz_safetensors_one); }
static void test_replay_tokenizer(void) { replay("tokenizer", fuzz_tokenizer_one); }
static void test_replay_featcache(void) { replay("featcache", fuzz_featcache_one); }
static void test_replay_encoder(void) { replay("encoder", fuzz_encoder_one); }
static void test_replay_classify(void) { replay("classify", fuzz_classify_one); }
static void test_replay_eval_record(void) { replay("eval_record", fuzz_eval_record_one); }
static void test_replay_sentences(void) { replay("sentences", fuzz_sentences_one); }
static void test_replay_pairs(void) { replay("pairs", fuzz_pairs_one); }
static void test_replay_text(void) { replay("text", fuzz_text_one); }
static void test_replay_bpe(void) { replay("bpe", fuzz_bpe_one); }
static void test_replay_draw(void) { replay("draw", fuzz_draw_one); }

// A classifier checkpoint whose metadata claims a 17 TB model (no attention on 4096 x 4096
// images, 65536 LSTM units) over a tiny model's tensors: refused by the tensors, before any
// allocation (it used to abort in block_alloc).
static void test_classify_huge_layout_refused(void) {
    const char *path = "tests/fuzz/regressions/classify/glimpse_17tb_layout_in_metadata";
    ClassifyModel m;
    Error err = {{0}};
    EXPECT(classify_load_model(&m, path, &err) == -1);
    EXPECT(strstr(err.msg, "tensor 'lstm.W' has shape [8, 6], the model expects [262144, 16842752]") &&
               strncmp(err.msg, path, strlen(path)) == 0,
           "'%s'", err.msg);
}

// Corrupt JPEGs on which stb_image decodes from memory it never wrote (found by
// `make valgrind`; not a crash, so only valgrind sees it): each is refused by name.
static void test_jpeg_uninitialised_reads_refused(void) {
    static const struct {
        const char *file, *reason;
    } cases[] = {
        {"jpeg_no_dqt_uninitialised_dequant", "a component uses a quantisation table the file never defines"},
        {"jpeg_no_scan_uninitialised_pixels", "an image component has no scan (no pixel data)"},
        {"jpeg_scan_undefined_huffman_table", "a scan uses a Huffman table the file never defines"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char path[256], want[256];
        snprintf(path, sizeof path, "tests/fuzz/regressions/image/%s", cases[k].file);
        unsigned char *data;
        size_t len;
        Error err = {{0}};
        if (file_read_all(path, &data, &len, 0, &err) != 0) {
            EXPECT(0, "%s", err.msg);
            continue;
        }
        Image img;
        EXPECT(len > 1 && image_load_memory(data + 1, len - 1, "x.jpg", &img, 0, &err) == -1,
               "%s decoded", cases[k].file);
        snprintf(want, sizeof want, "x.jpg: corrupt JPEG: %s", cases[k].reason);
        EXPECT(strcmp(err.msg, want) == 0, "%s: '%s'", cases[k].file, err.msg);
        free(data);
    }
}

// The inputs that crashed before the fixes are kept, and each fix still acts on its input
// (the system's libstb is not instrumented, so a returning overflow would go unseen by the
// sanitizers: the refusal itself is checked).
static void test_regressions_kept(void) {
    unsigned char *data;
    size_t len;
    Error err = {{0}};
    const char *path = "tests/fuzz/regressions/image/jpeg_dht_counts_over_256";
    if (file_read_all(path, &data, &len, 0, &err) != 0) {
        EXPECT(0, "%s", err.msg);
        return;
    }
    Image img;
    EXPECT(len > 1 && image_load_memory(data + 1, len - 1, "dht.jpg", &img, 0, &err) == -1);
    EXPECT(strcmp(err.msg, "dht.jpg: corrupt JPEG: a Huffman table has more than 256 codes") == 0,
           "'%s'", err.msg);
    free(data);
    path = "tests/fuzz/regressions/image/png_unknown_chunk_newline_in_reason";
    if (file_read_all(path, &data, &len, 0, &err) != 0) {
        EXPECT(0, "%s", err.msg);
        return;
    }
    EXPECT(len > 1 && image_load_memory(data + 1, len - 1, "chunk.png", &img, 0, &err) == -1);
    EXPECT(strncmp(err.msg, "chunk.png: ", 11) == 0 && !strchr(err.msg, '\n'), "'%s'", err.msg);
    free(data);
    path = "tests/fuzz/regressions/image/png_idat_length_past_end_2gib_alloc";
    if (file_read_all(path, &data, &len, 0, &err) != 0) {
        EXPECT(0, "%s", err.msg);
        return;
    }
    EXPECT(len > 1 && image_load_memory(data + 1, len - 1, "idat.png", &img, 0, &err) == -1);
    EXPECT(strcmp(err.msg, "idat.png: corrupt PNG: a chunk runs past the end of the file") == 0,
           "'%s'", err.msg);
    free(data);
}

// ----------------------------------------------------------------------------- limits

static void put_be32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
}

// A PNG signature, IHDR (RGB, 8 bits) of w x h, an empty IDAT and IEND, with CRCs.
static size_t png_header(unsigned char *buf, uint32_t w, uint32_t h) {
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    size_t n = 0;
    memcpy(buf, sig, 8), n = 8;
    const char *types[3] = {"IHDR", "IDAT", "IEND"};
    for (int c = 0; c < 3; c++) {
        uint32_t len = c == 0 ? 13 : 0;
        put_be32(buf + n, len);
        memcpy(buf + n + 4, types[c], 4);
        if (c == 0) {
            put_be32(buf + n + 8, w);
            put_be32(buf + n + 12, h);
            buf[n + 16] = 8, buf[n + 17] = 2, buf[n + 18] = 0, buf[n + 19] = 0, buf[n + 20] = 0;
        }
        put_be32(buf + n + 8 + len, (uint32_t)crc32(0, buf + n + 4, 4 + len));
        n += 12 + len;
    }
    return n;
}

// A PNG of w x 1 grey pixels whose IDAT holds a zlib stream of `inflated` bytes.
static unsigned char *png_with_stream(uint32_t w, size_t inflated, size_t *len) {
    unsigned char *raw = xcalloc(inflated, 1);
    uLongf zcap = compressBound((uLong)inflated);
    unsigned char *z = xmalloc(zcap);
    CHECK(compress2(z, &zcap, raw, (uLong)inflated, 9) == Z_OK);
    free(raw);
    unsigned char *png = xmalloc(zcap + 64);
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    memcpy(png, sig, 8);
    size_t n = 8;
    const char *types[3] = {"IHDR", "IDAT", "IEND"};
    uint32_t lens[3] = {13, (uint32_t)zcap, 0};
    for (int c = 0; c < 3; c++) {
        put_be32(png + n, lens[c]);
        memcpy(png + n + 4, types[c], 4);
        if (c == 0) {
            put_be32(png + n + 8, w);
            put_be32(png + n + 12, 1);
            png[n + 16] = 8, png[n + 17] = 0, png[n + 18] = 0, png[n + 19] = 0, png[n + 20] = 0;
        }
        if (c == 1) memcpy(png + n + 8, z, zcap);
        put_be32(png + n + 8 + lens[c], (uint32_t)crc32(0, png + n + 4, 4 + lens[c]));
        n += 12 + lens[c];
    }
    free(z);
    *len = n;
    return png;
}

static void expect_image_refused(const unsigned char *data, size_t len, const char *what,
                                 const char *reason) {
    Image img;
    Error err = {{0}};
    int rc = image_load_memory(data, len, "big.img", &img, 0, &err);
    EXPECT(rc == -1 && img.data == NULL, "%s: accepted", what);
    EXPECT(strncmp(err.msg, "big.img: ", 9) == 0 && !strchr(err.msg, '\n'), "%s: message '%s'",
           what, err.msg);
    EXPECT(strstr(err.msg, reason) != NULL, "%s: message '%s' lacks '%s'", what, err.msg, reason);
}

static void test_limit_image_dimensions(void) {
    unsigned char buf[128];
    size_t n = png_header(buf, 100000, 100000);  // past IMAGE_MAX_SIDE
    expect_image_refused(buf, n, "PNG 100000 x 100000", "too large");
    n = png_header(buf, IMAGE_MAX_SIDE, IMAGE_MAX_SIDE / 2);  // sides fine, pixels past the cap
    expect_image_refused(buf, n, "PNG 16384 x 8192", "too large");
    n = png_header(buf, 0x7fffffff, 3);
    expect_image_refused(buf, n, "PNG 2^31-1 x 3", "too large");
    char pgm[64];
    int k = snprintf(pgm, sizeof pgm, "P5\n%d %d\n255\n", IMAGE_MAX_SIDE + 1, 1);
    expect_image_refused((const unsigned char *)pgm, (size_t)k, "PGM 16385 x 1", "too large");
    k = snprintf(pgm, sizeof pgm, "P6 9000 9000 255\n");  // 81M pixels
    expect_image_refused((const unsigned char *)pgm, (size_t)k, "PPM 9000 x 9000", "too large");
    // Radiance HDR: stb_image 2.27 loops forever on this cut scanline (main() sets an alarm).
    static const char hdr[] =
        "#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 2 +X 16\n\x02\x02\x00\x10";
    expect_image_refused((const unsigned char *)hdr, sizeof hdr - 1, "cut HDR", "not supported");
    // 16-bit PGM / PPM: stb_image 2.27 reads past its buffer converting them (and keeps the
    // low byte of each sample): refused, whatever the channel count asked.
    static const char ppm16[] = "P6 1 1 1000\n\x03\x00\x00\x00\x00\x00";
    expect_image_refused((const unsigned char *)ppm16, sizeof ppm16 - 1, "PPM 16-bit", "16-bit");
    k = snprintf(pgm, sizeof pgm, "P5 7\n# big\n100000000000 255\n");  // past INT_MAX
    expect_image_refused((const unsigned char *)pgm, (size_t)k, "PGM 7 x 10^11", "number past");
    // A BMP header: 54 bytes, 20000 x 20000 at 24 bits.
    unsigned char bmp[54] = {'B', 'M'};
    uint32_t v[] = {54 + 3 * 20000u * 20000u, 0, 54, 40, 20000, 20000};
    for (int i = 0; i < 6; i++)
        for (int b = 0; b < 4; b++) bmp[2 + 4 * i + b] = (unsigned char)(v[i] >> (8 * b));
    bmp[26] = 1, bmp[28] = 24;
    expect_image_refused(bmp, sizeof bmp, "BMP 20000 x 20000", "too large");
}

// A 1 x 1 PNG whose data inflate to 16 MiB (16 KiB on disk) is refused before stb_image
// inflates it all (it would hold the whole output in memory); the same picture with exactly
// the bytes it needs (filter byte + pixel) loads.
static void test_limit_png_decompression_bomb(void) {
    size_t len;
    unsigned char *png = png_with_stream(1, (size_t)16 << 20, &len);
    EXPECT(len < 64 * 1024, "bomb of %zu bytes", len);
    expect_image_refused(png, len, "PNG bomb", "inflate to far more");
    free(png);
    png = png_with_stream(3, 4, &len);
    Image img;
    Error err = {{0}};
    EXPECT(image_load_memory(png, len, "ok.png", &img, 0, &err) == 0, "%s", err.msg);
    EXPECT(img.c == 1 && img.h == 1 && img.w == 3 && img.data[2] == 0.0f);
    image_free(&img);
    free(png);
}

static unsigned char *gzip_bytes(const unsigned char *in, size_t len, size_t *out_len) {
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    CHECK(deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    size_t cap = deflateBound(&zs, (uLong)len) + 64;
    unsigned char *out = xmalloc(cap);
    zs.next_in = (Bytef *)in, zs.avail_in = (uInt)len;
    zs.next_out = out, zs.avail_out = (uInt)cap;
    CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
    *out_len = zs.total_out;
    deflateEnd(&zs);
    return out;
}

static void test_limit_idx_claims_more_than_file(void) {
    // u8, 2 dims 1000 x 1000, then 10 bytes of data.
    unsigned char raw[12 + 10] = {0, 0, 0x08, 2};
    put_be32(raw + 4, 1000);
    put_be32(raw + 8, 1000);
    for (int i = 0; i < 10; i++) raw[12 + i] = (unsigned char)i;
    Idx x;
    Error err = {{0}};
    EXPECT(idx_load_memory(&x, raw, sizeof raw, "claim.idx", &err) == -1 && x.data == NULL);
    EXPECT(strcmp(err.msg, "claim.idx: truncated: header claims 1000000 bytes, file has 10") == 0,
           "raw: '%s'", err.msg);
    size_t zlen;
    unsigned char *z = gzip_bytes(raw, sizeof raw, &zlen);
    EXPECT(idx_load_memory(&x, z, zlen, "claim.idx.gz", &err) == -1 && x.data == NULL);
    EXPECT(strncmp(err.msg, "claim.idx.gz: truncated: header claims 1000000 bytes, file has 10",
                   64) == 0, "gzip: '%s'", err.msg);
    free(z);
    // A claim past IDX_MAX_BYTES (float64, 65536 x 65536 x 65536) is refused before reading.
    unsigned char huge[16] = {0, 0, 0x0E, 3};
    for (int d = 0; d < 3; d++) put_be32(huge + 4 + 4 * d, 65536);
    EXPECT(idx_load_memory(&x, huge, sizeof huge, "huge.idx", &err) == -1);
    EXPECT(strstr(err.msg, "huge.idx: ") == err.msg && strstr(err.msg, "limit") != NULL, "'%s'",
           err.msg);
}

static void test_limit_thousands_of_tokens(void) {
    // The tokeniser keeps max_tokens and counts the rest.
    size_t words = 5000;
    char *text = xmalloc(2 * words + 1);
    for (size_t i = 0; i < words; i++) text[2 * i] = 'a', text[2 * i + 1] = ' ';
    text[2 * words] = 0;
    Tokens t;
    Error err;
    EXPECT(tokenize(&t, text, TOKENIZE_MAX_TOKENS, &err) == 0);
    EXPECT(t.n == TOKENIZE_MAX_TOKENS && t.dropped == (int)words - TOKENIZE_MAX_TOKENS,
           "n %d dropped %d", t.n, t.dropped);
    tokens_free(&t);
    // A caption file: a caption of 5000 tokens (9999 bytes once trimmed) is skipped with a
    // warning naming the line; one of 2000 tokens (4 KB, under CAPTION_MAX_BYTES) is kept.
    const char *images = fuzz_tmp_path("limit_images");
    mkdir(images, 0755);
    const char *tsv = fuzz_tmp_path("limit_tokens.tsv");
    FILE *fp = fopen(tsv, "wb");
    CHECK(fp);
    fprintf(fp, "long.jpg\t%s\n", text);
    text[2 * 2000 - 1] = 0;
    fprintf(fp, "ok.jpg\t%s\n", text);
    CHECK(fclose(fp) == 0);
    CaptionOptions opts;
    caption_options_default(&opts);
    opts.check_images = 0;
    CaptionSet set;
    EXPECT(caption_read_tsv(&set, tsv, images, &opts, &err) == 0, "%s", err.msg);
    EXPECT(set.n_images == 1 && set.n_captions == 1 && strcmp(set.images[0].id, "ok.jpg") == 0);
    EXPECT(set.n_captions == 1 && strlen(set.captions[0]) == 2 * 2000 - 1);
    char want[1100];
    snprintf(want, sizeof want, "%s:1: caption of 9999 bytes is longer than the limit", tsv);
    EXPECT(set.n_warnings >= 1 && strncmp(set.warnings[0], want, strlen(want)) == 0,
           "warning '%s'", set.n_warnings ? set.warnings[0] : "");
    caption_set_free(&set);
    free(text);
}

static void test_limit_invalid_utf8(void) {
    static const struct { const char *text; long at; } bad[] = {
        {"ab\xC0\xAF" "cd", 2},        // overlong '/'
        {"x \xED\xA0\x80 y", 2},       // UTF-16 surrogate
        {"\xF4\x90\x80\x80", 0},       // past U+10FFFF
        {"dog \xE2\x82", 4},           // cut at the end
        {"caf\xC3\xA9 \x80", 6},       // lone continuation byte
        {"\xFF", 0},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        Tokens t;
        Error err = {{0}};
        char want[64];
        snprintf(want, sizeof want, "invalid UTF-8 at byte %ld", bad[i].at);
        EXPECT(tokenize(&t, bad[i].text, 16, &err) == -1 && t.n == 0, "case %zu accepted", i);
        EXPECT(strcmp(err.msg, want) == 0, "case %zu: '%s', expected '%s'", i, err.msg, want);
        tokens_free(&t);
    }
    // In a caption file: the bad caption is skipped with a warning naming file and line, the
    // good one kept; a file name that is not UTF-8 is skipped too.
    const char *images = fuzz_tmp_path("limit_images");
    mkdir(images, 0755);
    const char *tsv = fuzz_tmp_path("limit_utf8.tsv");
    const char *content = "a.jpg\tA dog \xED\xA0\x80 runs\nb.jpg\tA cat\n\xC3\x28.jpg\tA bird\n";
    fuzz_write_file(tsv, content, strlen(content));
    CaptionOptions opts;
    caption_options_default(&opts);
    opts.check_images = 0;
    CaptionSet set;
    Error err = {{0}};
    EXPECT(caption_read_tsv(&set, tsv, images, &opts, &err) == 0, "%s", err.msg);
    EXPECT(set.n_images == 1 && strcmp(set.images[0].id, "b.jpg") == 0, "%d images", set.n_images);
    char want[1100];
    snprintf(want, sizeof want, "%s:1: invalid UTF-8 at byte 6", tsv);
    EXPECT(set.n_warnings >= 2 && strncmp(set.warnings[0], want, strlen(want)) == 0,
           "warning '%s'", set.n_warnings ? set.warnings[0] : "");
    snprintf(want, sizeof want, "%s:3: ", tsv);
    EXPECT(set.n_warnings >= 2 && strncmp(set.warnings[1], want, strlen(want)) == 0 &&
               strstr(set.warnings[1], "UTF-8"), "warning '%s'",
           set.n_warnings > 1 ? set.warnings[1] : "");
    caption_set_free(&set);
}

// "{"images": " + depth '[' + depth ']' + "}", with a sentence that mentions "[[[" in a
// string, which must not count as nesting.
static char *deep_json(int depth, const char *key) {
    size_t cap = (size_t)depth * 2 + 256;
    char *s = xmalloc(cap);
    int n = snprintf(s, cap, "{\"note\": \"[[[[ {{{\", \"%s\": ", key);
    for (int i = 0; i < depth; i++) s[n++] = '[';
    for (int i = 0; i < depth; i++) s[n++] = ']';
    snprintf(s + n, cap - (size_t)n, "}");
    return s;
}

static void test_limit_json_nested_thousands_deep(void) {
    const char *images = fuzz_tmp_path("limit_images");
    mkdir(images, 0755);
    const char *json = fuzz_tmp_path("deep.json");
    CaptionOptions opts;
    caption_options_default(&opts);
    for (int kind = 0; kind < 2; kind++) {
        for (int depth = 5000; depth <= 200000; depth *= 40) {
            char *s = deep_json(depth, "images");
            fuzz_write_file(json, s, strlen(s));
            free(s);
            CaptionSet set;
            Error err = {{0}};
            int rc = kind == 0 ? caption_read_coco(&set, json, images, &opts, &err)
                               : caption_read_karpathy(&set, json, images, &opts, &err);
            EXPECT(rc == -1 && set.n_images == 0, "depth %d accepted", depth);
            EXPECT(strncmp(err.msg, json, strlen(json)) == 0 && strstr(err.msg, "nested deeper"),
                   "%s depth %d: '%s'", kind ? "karpathy" : "coco", depth, err.msg);
            caption_set_free(&set);
        }
    }
    // A safetensors header of the same shape.
    char *s = deep_json(5000, "w");
    size_t n = strlen(s);
    unsigned char *file = xmalloc(8 + n);
    for (int i = 0; i < 8; i++) file[i] = (unsigned char)((uint64_t)n >> (8 * i));
    memcpy(file + 8, s, n);
    SafetensorsFile f;
    Error err = {{0}};
    EXPECT(safetensors_load_memory(&f, file, 8 + n, "deep.safetensors", &err) == -1);
    EXPECT(strncmp(err.msg, "deep.safetensors: header is not valid JSON", 42) == 0, "'%s'",
           err.msg);
    free(file);
    free(s);
}

int main(void) {
    alarm(120);  // a loader that hangs on a hostile input fails the suite instead of stalling it
    RUN(test_replay_image);
    RUN(test_replay_idx);
    RUN(test_replay_captions);
    RUN(test_replay_safetensors);
    RUN(test_replay_tokenizer);
    RUN(test_replay_sentences);
    RUN(test_replay_pairs);
    RUN(test_replay_bpe);
    RUN(test_replay_text);
    RUN(test_replay_featcache);
    RUN(test_replay_encoder);
    RUN(test_replay_classify);
    RUN(test_replay_draw);
    RUN(test_replay_eval_record);
    RUN(test_classify_huge_layout_refused);
    RUN(test_regressions_kept);
    RUN(test_jpeg_uninitialised_reads_refused);
    RUN(test_limit_image_dimensions);
    RUN(test_limit_png_decompression_bomb);
    RUN(test_limit_idx_claims_more_than_file);
    RUN(test_limit_thousands_of_tokens);
    RUN(test_limit_invalid_utf8);
    RUN(test_limit_json_nested_thousands_deep);
    return test_summary();
}
