// make_seeds.c: writes the seed corpora of the fuzz targets, small valid files made
// through the library's own writers (and stb_image_write for the image formats the
// library does not write), into OUT/NAME/ for NAME in image, idx, captions, safetensors, featcache,
// tokenizer, encoder, classify, draw, eval_record, sentences, pairs, text, bpe. Every seed starts with the byte(s) its target reads first (see each
// tests/fuzz/fuzz_NAME.c). Run through `make fuzz-seeds` (tests/fuzz/fuzz.mk);
// tests/test_fuzz_seeds.c checks that the committed corpora are what it writes.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include <stb_image_write.h>
#pragma GCC diagnostic pop

#include "cli/classify_common.h"
#include "cli/draw_checkpoint.h"
#include "cli/draw_eval_record.h"
#include "cli/text_checkpoint.h"
#include "core/block.h"
#include "core/check.h"
#include "core/fileio.h"
#include "core/safetensors.h"
#include "datasets/featcache.h"
#include "datasets/idx.h"
#include "seq/bpe.h"
#include "tests/fuzz/eval_record_id.h"
#include "vision/gif.h"
#include "vision/png.h"

static char out_dir[512];

static const char *seed_path(const char *target, const char *name) {
    static char buf[2][1024];
    static int k;
    k ^= 1;
    snprintf(buf[k], sizeof buf[k], "%s/%s", out_dir, target);
    mkdir(buf[k], 0755);
    snprintf(buf[k], sizeof buf[k], "%s/%s/%s", out_dir, target, name);
    return buf[k];
}

static unsigned char *read_file(const char *path, size_t *len) {
    unsigned char *d;
    Error err;
    CHECK(file_read_all(path, &d, len, 0, &err) == 0, "%s", err.msg);
    return d;
}

// Writes prefix (plen bytes) then body as the seed file.
static void put(const char *target, const char *name, const void *prefix, size_t plen,
                const void *body, size_t blen) {
    const char *path = seed_path(target, name);
    FILE *fp = fopen(path, "wb");
    CHECK(fp, "%s", path);
    CHECK(fwrite(prefix, 1, plen, fp) == plen && fwrite(body, 1, blen, fp) == blen);
    CHECK(fclose(fp) == 0);
}

// Re-writes a file made by a library writer with a one-byte prefix.
static void prefix_file(const char *path, unsigned char first) {
    size_t len;
    unsigned char *d = read_file(path, &len);
    FILE *fp = fopen(path, "wb");
    CHECK(fp && fputc(first, fp) == first && fwrite(d, 1, len, fp) == len && fclose(fp) == 0);
    free(d);
}

static void stb_sink(void *ctx, void *data, int size) {
    FILE *fp = ctx;
    CHECK(fwrite(data, 1, (size_t)size, fp) == (size_t)size);
}

static void image_seeds(void) {
    enum { H = 5, W = 7 };
    unsigned char grey[H * W], rgb[H * W * 3], rgba[H * W * 4];
    for (int i = 0; i < H * W; i++) {
        grey[i] = (unsigned char)(i * 7);
        for (int c = 0; c < 3; c++) rgb[3 * i + c] = (unsigned char)(i * 5 + 80 * c);
        for (int c = 0; c < 4; c++) rgba[4 * i + c] = (unsigned char)(i * 3 + 60 * c);
    }
    Error err;
    const char *p = seed_path("image", "grey.png");
    CHECK(write_png_u8(p, grey, H, W, 1, &err) == 0, "%s", err.msg);
    prefix_file(p, 0);
    p = seed_path("image", "rgb.png");
    CHECK(write_png_u8(p, rgb, H, W, 3, &err) == 0, "%s", err.msg);
    prefix_file(p, 1);
    float frames[2 * 3 * H * W];
    for (int i = 0; i < 2 * 3 * H * W; i++) frames[i] = (float)(i % 11) / 10.0f;
    p = seed_path("image", "two.gif");
    CHECK(write_gif(p, frames, 2, 3, H, W, 10, &err) == 0, "%s", err.msg);
    prefix_file(p, 2);
    struct {
        const char *name;
        int kind, comp;
        const unsigned char *pix;
        unsigned char first;
    } s[] = {
        {"rgb.bmp", 0, 3, rgb, 0}, {"rgba.tga", 1, 4, rgba, 2}, {"grey.jpg", 2, 1, grey, 0},
        {"rgb.jpg", 2, 3, rgb, 1}, {"rgba.png", 3, 4, rgba, 2}, {"grey.tga", 1, 1, grey, 1},
    };
    for (size_t i = 0; i < sizeof s / sizeof *s; i++) {
        FILE *fp = fopen(seed_path("image", s[i].name), "wb");
        CHECK(fp && fputc(s[i].first, fp) == s[i].first);
        int c = s[i].comp, ok;
        const unsigned char *pix = s[i].pix;
        switch (s[i].kind) {
        case 0: ok = stbi_write_bmp_to_func(stb_sink, fp, W, H, c, pix); break;
        case 1: ok = stbi_write_tga_to_func(stb_sink, fp, W, H, c, pix); break;
        case 2: ok = stbi_write_jpg_to_func(stb_sink, fp, W, H, c, pix, 80); break;
        default: ok = stbi_write_png_to_func(stb_sink, fp, W, H, c, pix, 0); break;
        }
        CHECK(ok && fclose(fp) == 0, "%s", s[i].name);
    }
    // Netpbm, grey and colour (stb_image reads the binary forms only).
    char head[64];
    int n = snprintf(head, sizeof head, "\001P5\n%d %d\n255\n", W, H);
    put("image", "grey.pgm", head, (size_t)n, grey, sizeof grey);
    n = snprintf(head, sizeof head, "P6 %d %d 255\n", W, H);
    char rgb_head[64];
    rgb_head[0] = 0;  // channel byte: keep the file's colour kind
    memcpy(rgb_head + 1, head, (size_t)n);
    put("image", "rgb.ppm", rgb_head, (size_t)n + 1, rgb, sizeof rgb);
}

static unsigned char *gzip_memory(const unsigned char *in, size_t len, size_t *out_len) {
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    CHECK(deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    size_t cap = deflateBound(&zs, (uLong)len) + 64;
    unsigned char *out = xmalloc(cap);
    zs.next_in = (Bytef *)in;
    zs.avail_in = (uInt)len;
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
    *out_len = zs.total_out;
    deflateEnd(&zs);
    return out;
}

static void idx_seeds(void) {
    unsigned char u8[2 * 3 * 4];
    for (int i = 0; i < 24; i++) u8[i] = (unsigned char)(i * 11);
    int16_t i16[6] = {-3, 7, 300, -32768, 32767, 0};
    int32_t i32[4] = {1, -2, 70000, -70000};
    float f32[5] = {0.5f, -1.25f, 3e9f, 1e-20f, 0.0f};
    double f64[3] = {1.0 / 3, -2.5e100, 7};
    struct {
        const char *name;
        IdxType type;
        int ndim;
        int64_t dims[3];
        const void *data;
        int gz;
    } s[] = {
        {"u8_3d.idx", IDX_U8, 3, {2, 3, 4}, u8, 0},    {"u8_1d.idx.gz", IDX_U8, 1, {24}, u8, 1},
        {"i8.idx", IDX_I8, 2, {4, 6}, u8, 0},          {"i16.idx.gz", IDX_I16, 2, {2, 3}, i16, 1},
        {"i32.idx", IDX_I32, 1, {4}, i32, 0},          {"f32.idx", IDX_F32, 1, {5}, f32, 0},
        {"f64.idx.gz", IDX_F64, 1, {3}, f64, 1},
    };
    for (size_t i = 0; i < sizeof s / sizeof *s; i++) {
        size_t len;
        unsigned char *raw = idx_encode(s[i].type, s[i].ndim, s[i].dims, s[i].data, &len);
        if (s[i].gz) {
            size_t zlen;
            unsigned char *z = gzip_memory(raw, len, &zlen);
            put("idx", s[i].name, "", 0, z, zlen);
            free(z);
        } else {
            put("idx", s[i].name, "", 0, raw, len);
        }
        free(raw);
    }
}

static void safetensors_seeds(void) {
    Block a = {0}, b = {0};
    float *w, *v, *e, *s;
    block_add(&a, &w, "enc.w", 2, 3, 2);
    block_add(&a, &v, "enc.b", 1, 3);
    block_add(&b, &e, "m.w", 3, 1, 2, 2);
    block_add(&b, &s, "bias", 1, 1);
    block_alloc(&a);
    block_alloc(&b);
    for (size_t i = 0; i < a.numel; i++) a.data[i] = (float)i * 0.5f - 1.0f;
    for (size_t i = 0; i < b.numel; i++) b.data[i] = (float)i * -0.25f;
    const Block *blocks[2] = {&a, &b};
    const char *prefixes[2] = {"", "adam.m/"};
    SafetensorsMeta meta[2] = {{"step", "42"}, {"model", "draw"}};
    Error err;
    CHECK(safetensors_save(seed_path("safetensors", "two_blocks_meta.safetensors"), blocks,
                           prefixes, 2, meta, 2, &err) == 0, "%s", err.msg);
    CHECK(safetensors_save(seed_path("safetensors", "one_block.safetensors"), blocks, NULL, 1,
                           NULL, 0, &err) == 0, "%s", err.msg);
    block_free(&a);
    block_free(&b);
    // Hand-written: unaligned offsets (legal), an empty tensor, padding after the JSON.
    const char *json = "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[1,9]},"
                       "\"e\":{\"dtype\":\"F32\",\"shape\":[0,3],\"data_offsets\":[9,9]}}   ";
    unsigned char head[8];
    size_t n = strlen(json);
    for (int i = 0; i < 8; i++) head[i] = (unsigned char)((uint64_t)n >> (8 * i));
    unsigned char body[1024];
    memcpy(body, head, 8);
    memcpy(body + 8, json, n);
    float x[2] = {1.5f, -2.0f};
    body[8 + n] = 0xAA;
    memcpy(body + 8 + n + 1, x, sizeof x);
    put("safetensors", "unaligned.safetensors", "", 0, body, 8 + n + 1 + sizeof x);
    // Hand-written: the dtypes a PyTorch state_dict brings (F16, BF16, an I64 counter), as
    // vision/encoder.c reads them.
    const char *mixed =
        "{\"__metadata__\":{\"format\":\"pt\"},"
        "\"conv1.weight\":{\"dtype\":\"F16\",\"shape\":[2,1,1,1],\"data_offsets\":[0,4]},"
        "\"bn1.weight\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[4,8]},"
        "\"bn1.num_batches_tracked\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[8,16]},"
        "\"fc.bias\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[16,20]}}";
    n = strlen(mixed);
    for (int i = 0; i < 8; i++) body[i] = (unsigned char)((uint64_t)n >> (8 * i));
    memcpy(body + 8, mixed, n);
    const unsigned char values[20] = {0x00, 0x3c, 0x01, 0x80, 0x80, 0x3f, 0x49, 0xc0, 7, 0, 0, 0,
                                      0, 0, 0, 0, 0, 0, 0x20, 0x41};
    memcpy(body + 8 + n, values, sizeof values);
    put("safetensors", "dtypes.safetensors", "", 0, body, 8 + n + sizeof values);
}

static void tokenizer_seeds(void) {
    static const char *texts[] = {
        "A dog's ball, red.",
        "Two men don't play black-and-white chess at 3.5 o'clock; 1,000 people watch!",
        "\"Quoted\" -- words ... (in brackets) [and] {braces} `tick' we're they've I'll he'd I'm",
        "caf\xc3\xa9 na\xc3\xafve \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x90\xb6 dog",
        "  \t tabs\r\nand\vfeeds\f  ",
        "a b c d e f g h i j k l m n o p q r s t u v w x y z a b c d e f g h i j k l m n o p",
        "x-ray - -- --- 'tis rock'n'roll CAN'T Won't",
    };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        char name[32];
        snprintf(name, sizeof name, "text%zu", i);
        unsigned char first = (unsigned char)(i == 5 ? 10 : 63);
        put("tokenizer", name, &first, 1, texts[i], strlen(texts[i]));
    }
}

// Labelled sentences: byte 0 = the reader (0 JSON, 1 TSV; see fuzz_sentences.c).
static void sentence_seeds(void) {
    static const char *json =
        "[{\"text\":\"So there is no way for me to plug it in here.\",\"class\":0},"
        "{\"text\":\"Good case, Excellent value.\",\"class\":1},"
        "{\"text\":\"Caf\\u00e9 na\xc3\xafve \\\"quoted\\\"\\n\",\"class\":1},"
        "{\"text\":\"\",\"class\":null}]";
    static const char *tsv = "1\tGreat for the jawbone.\r\n0\tTied to charger\tfor hours.\n\n"
                             "-3\tminus three\n2\tcaf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac\n";
    unsigned char zero = 0, one = 1;
    put("sentences", "package.json", &zero, 1, json, strlen(json));
    put("sentences", "classes.tsv", &one, 1, tsv, strlen(tsv));
}

// Sentence pairs and mod2imp exports: byte 0 = the reader (0 pairs, 1 export; see fuzz_pairs.c).
static void pair_seeds(void) {
    static const char *tsv = "the dog\tel perro\r\n\nCaf\xc3\xa9 ok\tcaf\xc3\xa9 bien\n"
                             "03.03.87\t1987-03-03\nlast\tno newline";
    static const char *imp =
        "$$$[ Module Heading ]\n\n$$$Genesis 0:0\n<title>Genesis</title>\n"
        "$$$Genesis 1:1\n<w lemma=\"strong:H7225\">In</w> the beginning, <w>God</w><note "
        "placement=\"foot\"><reference>1:1 </reference>Elohim.</note><w>created</w> &amp; made.\n"
        "$$$Psalms 3:1\n<title canonical=\"true\" type=\"psalm\">A Psalm.</title> <l sID=\"a\"/>Yahweh!"
        "<l eID=\"a\"/>\n$$$Matthew 17:21\n\n$$$Revelation of John 22:21\nAmen. <div eID=\"b\" "
        "type=\"book\"/> <div sID=\"g\" type=\"glossary\"/> Abba: Father.\n";
    unsigned char zero = 0, one = 1;
    put("pairs", "pairs.tsv", &zero, 1, tsv, strlen(tsv));
    put("pairs", "module.imp", &one, 1, imp, strlen(imp));
}

// BPE merges texts (fuzz_bpe.c reads the whole file): the paper's toy dictionary, a few
// Spanish verses with accents and punctuation, and an empty model, all learned through
// seq/bpe.h and written by bpe_to_text.
static void bpe_seed(const char *name, const char *const *texts, int n, int merges) {
    Bpe b;
    Error err = {{0}};
    CHECK(bpe_learn(&b, texts, n, merges, 1, name, &err) == 0, "%s", err.msg);
    char *text = bpe_to_text(&b);
    put("bpe", name, "", 0, text, strlen(text));
    free(text);
    bpe_free(&b);
}

static void bpe_seeds(void) {
    static const char *const toy[] = {"low low low low low lower lower newest newest newest "
                                      "newest newest newest widest widest widest"};
    static const char *const verses[] = {
        "Y dijo Dios: Sea la luz: y fu\xc3\xa9 la luz.",
        "Y la tierra estaba desordenada y vac\xc3\xad" "a, y las tinieblas estaban sobre la haz del abismo,",
        "\xc2\xbfQui\xc3\xa9n es \xc3\xa9ste? \xc2\xa1" "Aleluya! \xe2\x80\x9cLet there be light,\xe2\x80\x9d",
    };
    bpe_seed("toy.bpe", toy, 1, 10);
    bpe_seed("verses.bpe", verses, 3, 40);
    bpe_seed("empty.bpe", NULL, 0, 5);
}

// Captions: byte 0 = format (see fuzz_captions.c), byte 1 = options.
static void caption_seeds(void) {
    const char *tsv =
        "file\tcaption\tsplit\n"
        "a.jpg\tA dog runs on the grass.\ttrain\n"
        "a.jpg\tA brown dog.\r\n"
        "b.jpg\tTwo cats\tval\n"
        "c.jpg\t  \ttest\n"
        "no tab here\n";
    put("captions", "tsv", "\x03\x00", 2, tsv, strlen(tsv));
    put("captions", "tsv_check_images", "\x03\x01", 2, tsv, strlen(tsv));
    const char *flickr =
        "a.jpg#0\tA dog runs .\n"
        "a.jpg#1\tA brown dog\n"
        "b.jpg#0\tTwo cats on a mat\n"
        "\n--list--\n"
        "a.jpg\n"
        "\n--list--\n"
        "b.jpg\n"
        "\n--list--\n"
        "c.jpg\n";
    put("captions", "flickr8k_lists", "\x00\x00", 2, flickr, strlen(flickr));
    const char *flickr_nolists = "a.jpg#0\tA dog runs .\nb.jpg#3\tcaf\xc3\xa9 cats\n";
    put("captions", "flickr8k_nolists", "\x00\x01", 2, flickr_nolists, strlen(flickr_nolists));
    const char *coco =
        "{\"images\": [{\"id\": 1, \"file_name\": \"a.jpg\"},"
        " {\"id\": 2, \"file_name\": \"b.jpg\"},"
        " {\"id\": 3, \"file_name\": \"c.jpg\"}],"
        " \"annotations\": [{\"image_id\": 1, \"caption\": \"A dog.\"},"
        " {\"image_id\": 2, \"caption\": \"Two cats \\u00e9\"},"
        " {\"image_id\": 9, \"caption\": \"x\"}]}";
    put("captions", "coco", "\x01\x00", 2, coco, strlen(coco));
    put("captions", "coco_check_images", "\x01\x01", 2, coco, strlen(coco));
    const char *karpathy =
        "{\"dataset\": \"coco\", \"images\": ["
        "{\"filepath\": \"train2014\", \"filename\": \"a.jpg\", \"split\": \"train\","
        " \"cocoid\": 5, \"sentences\": [{\"raw\": \"A dog.\", \"tokens\": [\"a\", \"dog\"]},"
        " {\"tokens\": [\"big\", \"dog\"]}]},"
        "{\"filename\": \"b.jpg\", \"split\": \"restval\", \"sentences\": [{\"raw\": \"Cats.\"}]},"
        "{\"filename\": \"c.jpg\", \"split\": \"val\", \"sentences\": [{\"raw\": 3}]}]}";
    put("captions", "karpathy", "\x02\x00", 2, karpathy, strlen(karpathy));
    put("captions", "karpathy_check_images", "\x02\x01", 2, karpathy, strlen(karpathy));
}

// Feature caches written by the writer: complete F16 (one image unreadable), complete F32,
// and an unfinished extraction (the reader accepts it from memory only).
static void featcache_seeds(void) {
    const char *ids[3] = {"a.jpg", "b \"quoted\".jpg", "c.jpg"};
    float annot[3 * 4 * 3];
    for (int i = 0; i < 36; i++) annot[i] = (float)(i % 7) * 0.37f - 1.0f;
    unsigned char status[3] = {FEAT_OK, FEAT_UNREADABLE, FEAT_OK};
    FeatCacheInfo info = {.encoder = "vgg19", .encoder_sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                          .encoder_weights = "vgg19.safetensors", .encoder_description = "seed",
                          .preprocess = "seed transform", .image_size = 32, .data = "tsv:c.tsv:img",
                          .n = 3, .ids = ids, .L = 4, .D = 3, .dtype = FEAT_F16, .batch = 2,
                          .threads = 1, .group = 1};
    const char *names[3] = {"f16.safetensors", "f32.safetensors", "partial.safetensors"};
    for (int k = 0; k < 3; k++) {
        info.dtype = k == 1 ? FEAT_F32 : FEAT_F16;
        char path[1100];
        snprintf(path, sizeof path, "%s", seed_path("featcache", names[k]));
        remove(path);
        FeatCacheWriter w;
        Error err;
        CHECK(featcache_writer_open(&w, path, &info, &err) == 0, "%s", err.msg);
        CHECK(featcache_writer_put(&w, 0, k == 2 ? 2 : 3, annot, status, &err) == 0, "%s", err.msg);
        if (k < 2) {
            CHECK(featcache_writer_finish(&w, &err) == 0, "%s", err.msg);
        } else {
            char partial[1200];
            snprintf(partial, sizeof partial, "%s.partial", path);
            CHECK(rename(partial, path) == 0, "%s", partial);
        }
        featcache_writer_close(&w);
    }
}

// Encoder weights: byte 0 = the architecture (FUZZ_ENCODER_SPECS in fuzz_encoder.c), then a
// safetensors file of a width-1 network of that structure, with torchvision's names.
static void seed_conv(Block *b, const char *w, int C, int K, const char *bias, const char *bn) {
    block_add(b, NULL, w, 4, 1, C, K, K);
    if (bias) block_add(b, NULL, bias, 1, 1);
    if (bn) {
        static const char *parts[4] = {"weight", "bias", "running_mean", "running_var"};
        for (int k = 0; k < 4; k++) {
            char name[BLOCK_NAME_LEN];
            CHECK(snprintf(name, sizeof name, "%s.%s", bn, parts[k]) < (int)sizeof name,
                  "seed tensor name %s.%s too long", bn, parts[k]);
            block_add(b, NULL, name, 1, 1);
        }
    }
}

static void seed_vgg(Block *b, const int counts[5]) {
    int idx = 0, C = 3;
    for (int blk = 0; blk < 5; blk++) {
        for (int j = 0; j < counts[blk]; j++, idx += 2) {
            char w[BLOCK_NAME_LEN], bias[BLOCK_NAME_LEN];
            snprintf(w, sizeof w, "features.%d.weight", idx);
            snprintf(bias, sizeof bias, "features.%d.bias", idx);
            seed_conv(b, w, C, 3, bias, NULL);
            C = 1;
        }
        if (blk < 4) idx++;
    }
}

// Width 1 throughout: only the stride-2 first blocks of stages 2.. need a downsample.
static void seed_resnet(Block *b, const int blocks[4], int stages, int bottleneck) {
    seed_conv(b, "conv1.weight", 3, 7, NULL, "bn1");
    for (int l = 1; l <= stages; l++)
        for (int i = 0; i < blocks[l - 1]; i++) {
            char w[BLOCK_NAME_LEN], bn[BLOCK_NAME_LEN];
            const int n_convs = bottleneck ? 3 : 2;
            for (int c = 1; c <= n_convs; c++) {
                snprintf(w, sizeof w, "layer%d.%d.conv%d.weight", l, i, c);
                snprintf(bn, sizeof bn, "layer%d.%d.bn%d", l, i, c);
                seed_conv(b, w, 1, bottleneck && c != 2 ? 1 : 3, NULL, bn);
            }
            if (l > 1 && i == 0) {
                snprintf(w, sizeof w, "layer%d.%d.downsample.0.weight", l, i);
                snprintf(bn, sizeof bn, "layer%d.%d.downsample.1", l, i);
                seed_conv(b, w, 1, 1, NULL, bn);
            }
        }
}

static void save_encoder_seed(Block *b, const char *name, unsigned char spec) {
    block_alloc(b);
    for (int i = 0; i < b->count; i++) {
        const BlockTensor *t = &b->tensors[i];
        const size_t n = strlen(t->name);
        const int var = n > 11 && strcmp(t->name + n - 11, "running_var") == 0;
        for (size_t k = 0; k < t->numel; k++)
            b->data[t->offset + k] = var ? 1.0f : 0.25f - 0.125f * (float)((k + (size_t)i) % 4);
    }
    const char *path = seed_path("encoder", name);
    const Block *blocks[1] = {b};
    Error err;
    CHECK(safetensors_save(path, blocks, NULL, 1, NULL, 0, &err) == 0, "%s", err.msg);
    prefix_file(path, spec);
    block_free(b);
}

static void encoder_seeds(void) {
    static const int vgg16[5] = {2, 2, 3, 3, 3}, vgg19[5] = {2, 2, 4, 4, 4};
    static const int resnet18[4] = {2, 2, 2, 2}, resnet50[4] = {3, 4, 6, 3};
    Block b = {0};
    seed_vgg(&b, vgg16);
    save_encoder_seed(&b, "vgg16", 0);
    b = (Block){0};
    seed_vgg(&b, vgg19);
    save_encoder_seed(&b, "vgg19", 1);
    b = (Block){0};
    seed_resnet(&b, resnet18, 4, 0);
    save_encoder_seed(&b, "resnet18", 2);
    b = (Block){0};
    seed_resnet(&b, resnet18, 4, 0);
    save_encoder_seed(&b, "resnet18_at_layer3", 3);  // layer4 is read past
    b = (Block){0};
    seed_resnet(&b, resnet50, 3, 1);
    save_encoder_seed(&b, "resnet50_at_layer3", 5);
}

// Classifier checkpoints of `draw classify` written by classify_save: tiny soft and hard
// glimpse models, one without Adam moments, and one- and two-layer CNN baselines, each on
// a 28 x 28 image (the smallest the clutter check allows).
static void classify_seed(const char *name, const ClassifierConfig *cfg, int with_moments) {
    ClassifyState s = {.cfg = *cfg, .step = 7,
                       .optim = {.seed = 3, .batch = 4, .lr = 1e-3f, .beta1 = 0.9f, .clip = 5.0f}};
    s.clutter = clutter_config_default();
    s.clutter.W = classifier_width(cfg), s.clutter.H = classifier_height(cfg);
    s.clutter.fragments = 2;
    snprintf(s.data, sizeof s.data, "mnist");
    Block params = {0}, m = {0}, v = {0};
    ClassifierParams p, pm, pv;
    classifier_layout(&params, &p, cfg);
    classifier_layout(&m, &pm, cfg);
    classifier_layout(&v, &pv, cfg);
    block_alloc(&params), block_alloc(&m), block_alloc(&v);
    for (size_t i = 0; i < params.numel; i++) {
        params.data[i] = (float)((int)(i % 13) - 6) * 0.125f;
        m.data[i] = params.data[i] * 0.5f;
        v.data[i] = (float)(i % 5) * 0.01f;
    }
    Error err;
    CHECK(classify_save(seed_path("classify", name), &s, &params, with_moments ? &m : NULL,
                        with_moments ? &v : NULL, &err) == 0, "%s", err.msg);
    block_free(&params), block_free(&m), block_free(&v);
}

// A copy of checkpoint seed `from` of target whose integer metadata is zero-padded to 7
// digits ("0000002"): the reader takes it alike, and a mutation of one digit (libFuzzer
// changes ASCII integers in place) then reaches sizes up to millions, where the writer's
// short numbers leave no room.
static void padded_seed(const char *target, const char *from, const char *name) {
    SafetensorsFile f;
    Error err;
    CHECK(safetensors_load(&f, seed_path(target, from), &err) == 0, "%s", err.msg);
    Block b = {0};
    for (int i = 0; i < f.count; i++) {
        const SafetensorsTensor *t = &f.tensors[i];
        CHECK(t->ndim >= 1 && t->ndim <= 4, "%s", t->name);
        int d[4] = {1, 1, 1, 1};
        for (int k = 0; k < t->ndim; k++) d[k] = (int)t->shape[k];
        block_add(&b, NULL, t->name, t->ndim, d[0], d[1], d[2], d[3]);
    }
    block_alloc(&b);
    for (int i = 0; i < f.count; i++)
        memcpy(b.data + b.tensors[i].offset, f.tensors[i].data, f.tensors[i].numel * sizeof(float));
    SafetensorsMeta meta[64];
    char padded[64][16];
    CHECK(f.n_meta <= 64);
    for (int i = 0; i < f.n_meta; i++) {
        meta[i] = f.meta[i];
        const char *v = meta[i].value, *digits = v + strspn(v, "0123456789");
        if (v[0] && !*digits && strlen(v) < 7 && strcmp(meta[i].key, "train.seed") != 0) {
            snprintf(padded[i], sizeof padded[i], "%07ld", atol(v));
            meta[i].value = padded[i];
        }
    }
    const Block *blocks[1] = {&b};
    CHECK(safetensors_save(seed_path(target, name), blocks, NULL, 1, meta, f.n_meta, &err) == 0,
          "%s", err.msg);
    block_free(&b);
    safetensors_free(&f);
}

static void classify_seeds(void) {
    ClassifierConfig g = {.kind = CLASSIFIER_GLIMPSE,
                          .glimpse = {.W = 28, .H = 28, .T = 2, .read_n = 2, .hidden = 2,
                                      .classes = 10, .attention = 1}};
    classify_seed("glimpse.safetensors", &g, 1);
    classify_seed("glimpse_no_moments.safetensors", &g, 0);
    g.glimpse.hard = 1, g.glimpse.loc_std = 0.1f, g.glimpse.scales = 2;  // the retina
    classify_seed("glimpse_hard.safetensors", &g, 1);
    ClassifierConfig c = {.kind = CLASSIFIER_CNN,
                          .cnn = {.S = 28, .layers = 1, .channels = {1, 0}, .fc = 2, .classes = 10}};
    classify_seed("cnn1.safetensors", &c, 0);
    c.cnn.layers = 2, c.cnn.channels[1] = 1;
    classify_seed("cnn2.safetensors", &c, 1);
    padded_seed("classify", "glimpse_no_moments.safetensors", "glimpse_padded.safetensors");
    padded_seed("classify", "cnn1.safetensors", "cnn1_padded.safetensors");
}

// Checkpoints of `text classify` written by text_checkpoint_save: tiny models over a word
// index of three words, the demo's pooling with moments, a bidirectional masked query
// pooling over three classes, the last state without moments; and a zero-padded copy.
static void text_seed(const char *name, TextPool pool, int bi, int classes, int with_moments) {
    TextState s = {.step = 5, .optim = {.seed = 3, .batch = 4, .lr = 1e-3f, .beta1 = 0.9f, .clip = 0.0f},
                   .split = {.valid_share = 0.2}, .padding = KERAS_POST, .truncating = KERAS_PRE};
    s.cfg = text_config_default(4);
    s.cfg.T = 3, s.cfg.embed = 2, s.cfg.hidden = 2, s.cfg.bidirectional = bi, s.cfg.pool = pool;
    s.cfg.classes = classes, s.cfg.masked = bi;
    snprintf(s.data, sizeof s.data, "sentiment");
    const char *words[3] = {"good", "bad", "caf\xc3\xa9"};
    Error err;
    CHECK(keras_tokenizer_from_words(&s.tok, words, 3, &err) == 0, "%s", err.msg);
    s.class_values = xmalloc((size_t)classes * sizeof(int));
    for (int k = 0; k < classes; k++) s.class_values[k] = k - (classes > 2);
    Block params = {0}, m = {0}, v = {0};
    TextParams p, pm, pv;
    text_layout(&params, &p, &s.cfg);
    text_layout(&m, &pm, &s.cfg);
    text_layout(&v, &pv, &s.cfg);
    block_alloc(&params), block_alloc(&m), block_alloc(&v);
    for (size_t i = 0; i < params.numel; i++) {
        params.data[i] = (float)((int)(i % 9) - 4) * 0.125f;
        m.data[i] = params.data[i] * 0.5f;
        v.data[i] = (float)(i % 5) * 0.01f;
    }
    CHECK(text_checkpoint_save(seed_path("text", name), &s, &params, with_moments ? &m : NULL,
                               with_moments ? &v : NULL, &err) == 0, "%s", err.msg);
    block_free(&params), block_free(&m), block_free(&v);
    text_state_free(&s);
}

static void text_seeds(void) {
    text_seed("keras.safetensors", TEXT_POOL_KERAS, 0, 2, 1);
    text_seed("query_bi_three.safetensors", TEXT_POOL_QUERY, 1, 3, 1);
    text_seed("last.safetensors", TEXT_POOL_LAST, 0, 2, 0);
    padded_seed("text", "last.safetensors", "last_padded.safetensors");
}

// DRAW checkpoints of bin/draw written by draw_checkpoint_write: tiny models on 4 x 4
// images, with attention and moments (a training checkpoint), without attention or
// moments (weights alone), in colour, and with a weight average (--ema); and a zero-padded
// copy.
static void draw_seed(const char *name, const DrawConfig *cfg, int with_moments, int with_average) {
    DrawTrainState s = {.cfg = *cfg, .step = 7, .binarize = cfg->channels == 0,
                        .optim = {.seed = 3, .batch = 4, .lr = 1e-3f, .beta1 = 0.9f, .clip = 10.0f},
                        .ema = with_average ? 0.999f : 0.0f};
    snprintf(s.data, sizeof s.data, "%s", cfg->channels ? "scenes" : "mnist");
    Block params = {0}, m = {0}, v = {0};
    DrawParams p;
    draw_layout(&params, &p, cfg);
    draw_layout(&m, &p, cfg);
    draw_layout(&v, &p, cfg);
    block_alloc(&params), block_alloc(&m), block_alloc(&v);
    for (size_t i = 0; i < params.numel; i++) {
        params.data[i] = (float)((int)(i % 11) - 5) * 0.125f;
        m.data[i] = params.data[i] * 0.5f;
        v.data[i] = (float)(i % 7) * 0.01f;
    }
    Block avg = {0};  // the average: the weights a little scaled
    if (with_average) {
        block_clone(&avg, &params);
        for (size_t i = 0; i < avg.numel; i++) avg.data[i] *= 0.75f;
    }
    Error err;
    CHECK(draw_checkpoint_write(seed_path("draw", name), &s, &params, with_moments ? &m : NULL,
                                with_moments ? &v : NULL, with_average ? &avg : NULL, &err) == 0,
          "%s", err.msg);
    block_free(&params), block_free(&m), block_free(&v), block_free(&avg);
}

static void draw_seeds(void) {
    DrawConfig c = {.W = 4, .H = 4, .T = 2, .read_n = 2, .write_n = 2, .enc = 2, .dec = 2, .z = 2,
                    .attention = 1};
    draw_seed("attention.safetensors", &c, 1, 0);
    draw_seed("average.safetensors", &c, 1, 1);
    c.attention = 0;
    draw_seed("no_attention_no_moments.safetensors", &c, 0, 0);
    c.attention = 1, c.channels = 3;
    draw_seed("colour.safetensors", &c, 1, 0);
    padded_seed("draw", "attention.safetensors", "attention_padded.safetensors");
}

// draw eval --per-image records of the fuzz target's evaluation (5 images in batches of 2,
// tests/fuzz/eval_record_id.h): none done, one batch, and all five.
static void eval_record_seed(const char *name, int done) {
    const DrawEvalIdentity id = FUZZ_RECORD_ID;
    DrawEvalRecord r;
    Error err;
    CHECK(draw_eval_record_open(&r, seed_path("eval_record", name), &id, 0, &err) == 0, "%s", err.msg);
    for (int i = 0; i < id.images; i++)  // reconstruction, KL, IW estimate (below their sum)
        r.fig[i * 3] = 50.0 + i / 3.0, r.fig[i * 3 + 1] = 25.0 + i * 0.1, r.fig[i * 3 + 2] = 72.5 + i;
    CHECK(draw_eval_record_save(&r, done, &err) == 0, "%s", err.msg);
    draw_eval_record_free(&r);
}

static void eval_record_seeds(void) {
    eval_record_seed("none_done.txt", 0);
    eval_record_seed("one_batch.txt", 2);
    eval_record_seed("all_done.txt", 5);
}

// Writes every target's seeds into dir/NAME/ (dir is created if missing).
static void write_seeds(const char *dir) {
    snprintf(out_dir, sizeof out_dir, "%s", dir);
    mkdir(out_dir, 0755);
    image_seeds();
    idx_seeds();
    safetensors_seeds();
    encoder_seeds();
    tokenizer_seeds();
    caption_seeds();
    featcache_seeds();
    classify_seeds();
    draw_seeds();
    eval_record_seeds();
    sentence_seeds();
    pair_seeds();
    text_seeds();
    bpe_seeds();
}

// tests/test_fuzz_seeds.c includes this file with MAKE_SEEDS_NO_MAIN and calls write_seeds.
#ifndef MAKE_SEEDS_NO_MAIN
int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: make_seeds OUT_DIR\n");
        return 2;
    }
    write_seeds(argv[1]);
    return 0;
}
#endif
