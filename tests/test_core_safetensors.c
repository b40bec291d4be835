// test_core_safetensors.c: checkpoints: round trip of tensors and metadata, the on-disk
// layout other readers expect, files written by other tools, and malformed files, each of
// which must fail with one line starting with the file's name (and never crash: the suite
// also runs under AddressSanitizer). Also: a failed save leaves the previous file intact.
#include <cJSON.h>
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/block.h"
#include "core/fileio.h"
#include "core/rng.h"
#include "core/safetensors.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"

static char tmpdir[256];

#define T(dtype, shape, offs) "{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":" offs "}"

static void path_in(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/%s", tmpdir, name);
}

typedef struct {
    float *w, *b, *e;
} Params;

static void layout(Block *blk, Params *p) {
    block_add(blk, &p->w, "enc.w", 2, 3, 5);
    block_add(blk, &p->b, "enc.b", 1, 5);
    block_add(blk, &p->e, "empty", 2, 0, 4);
}

static void make_params(Block *blk, Params *p, uint64_t seed) {
    memset(blk, 0, sizeof *blk);
    layout(blk, p);
    block_alloc(blk);
    Rng rng;
    rng_seed(&rng, seed);
    for (size_t i = 0; i < blk->numel; i++) blk->data[i] = rng_normal(&rng);
}

static void test_roundtrip_tensors_and_metadata(void) {
    char path[512];
    path_in(path, sizeof path, "model.safetensors");
    Block a, m;
    Params pa, pm;
    make_params(&a, &pa, 1);
    make_params(&m, &pm, 2);
    const Block *blocks[] = {&a, &m};
    const char *prefixes[] = {"", "adam.m/"};
    SafetensorsMeta meta[] = {{"step", "1234"}, {"config", "{\"T\": 64, \"note\": \"quote \\\" é\"}"}};
    Error err = {{0}};
    EXPECT(safetensors_save(path, blocks, prefixes, 2, meta, 2, &err) == 0, "%s", err.msg);
    SafetensorsFile f;
    EXPECT(safetensors_load(&f, path, &err) == 0, "%s", err.msg);
    EXPECT(f.count == 6, "count %d", f.count);
    const SafetensorsTensor *t = safetensors_find(&f, "enc.w");
    EXPECT(t && t->ndim == 2 && t->shape[0] == 3 && t->shape[1] == 5 && t->numel == 15);
    if (t) {
        EXPECT(((uintptr_t)t->data % sizeof(float)) == 0);
        EXPECT(memcmp(t->data, pa.w, 15 * sizeof(float)) == 0, "enc.w data differs");
    }
    t = safetensors_find(&f, "adam.m/enc.b");
    EXPECT(t && t->numel == 5 && memcmp(t->data, pm.b, 5 * sizeof(float)) == 0);
    t = safetensors_find(&f, "empty");
    EXPECT(t && t->numel == 0 && t->ndim == 2 && t->shape[0] == 0 && t->shape[1] == 4);
    EXPECT(safetensors_find(&f, "enc") == NULL);
    EXPECT(f.n_meta == 2);
    const char *step = safetensors_meta(&f, "step");
    EXPECT(step && strcmp(step, "1234") == 0);
    const char *cfg = safetensors_meta(&f, "config");
    EXPECT(cfg && strcmp(cfg, meta[1].value) == 0, "config = %s", cfg ? cfg : "(null)");
    EXPECT(safetensors_meta(&f, "missing") == NULL);
    // Into fresh blocks through the same layout.
    Block b = {0}, bm = {0};
    Params pb, pbm;
    layout(&b, &pb);
    block_alloc(&b);
    layout(&bm, &pbm);
    block_alloc(&bm);
    EXPECT(safetensors_read_block(&b, "", &f, path, &err) == 0, "%s", err.msg);
    EXPECT(safetensors_read_block(&bm, "adam.m/", &f, path, &err) == 0, "%s", err.msg);
    EXPECT(memcmp(pb.w, pa.w, 15 * sizeof(float)) == 0 && memcmp(pb.b, pa.b, 5 * sizeof(float)) == 0);
    EXPECT(memcmp(pbm.w, pm.w, 15 * sizeof(float)) == 0);
    EXPECT(safetensors_read_block(&b, "adam.v/", &f, path, &err) == -1);
    EXPECT(strncmp(err.msg, path, strlen(path)) == 0 && strstr(err.msg, "missing tensor 'adam.v/enc.w'"),
           "%s", err.msg);
    safetensors_free(&f);
    // A model of another shape is refused, naming the tensor and both shapes.
    Block other = {0};
    float *ow, *ob, *oe;
    block_add(&other, &ow, "enc.w", 2, 5, 3);
    block_add(&other, &ob, "enc.b", 1, 5);
    block_add(&other, &oe, "empty", 2, 0, 4);
    block_alloc(&other);
    EXPECT(safetensors_load(&f, path, &err) == 0);
    EXPECT(safetensors_read_block(&other, "", &f, path, &err) == -1);
    EXPECT(strstr(err.msg, "'enc.w' has shape [3, 5], the model expects [5, 3]"), "%s", err.msg);
    // The same checks on a layout never allocated, from the header alone: a layout far
    // larger than memory (what corrupt metadata may claim) is refused by the tensors.
    Block huge = {0};
    block_add(&huge, NULL, "enc.w", 2, 1 << 20, 1 << 20);
    block_add(&huge, NULL, "enc.b", 1, 5);
    SafetensorsFile header;
    EXPECT(safetensors_open(&header, path, &err) == 0, "%s", err.msg);
    EXPECT(safetensors_check_block(&huge, "", &header, path, &err) == -1 && huge.data == NULL);
    EXPECT(strstr(err.msg, "'enc.w' has shape [3, 5], the model expects [1048576, 1048576]"), "%s",
           err.msg);
    EXPECT(safetensors_check_block(&huge, "adam.x/", &header, path, &err) == -1 &&
               strstr(err.msg, "missing tensor 'adam.x/enc.w'"), "%s", err.msg);
    EXPECT(safetensors_check_block(&b, "adam.m/", &header, path, &err) == 0, "%s", err.msg);
    safetensors_free(&header);
    // Check, allocate and read in one: the huge layout is refused unallocated (and freed);
    // a layout of the file's shapes comes back holding its values.
    EXPECT(safetensors_alloc_read_block(&huge, "", &f, path, &err) == -1 && huge.data == NULL &&
               huge.count == 0, "huge: %s", err.msg);
    Block again = {0};
    float *gw, *gb;
    block_add(&again, &gw, "enc.w", 2, 3, 5);
    block_add(&again, &gb, "enc.b", 1, 5);
    EXPECT(safetensors_alloc_read_block(&again, "", &f, path, &err) == 0, "%s", err.msg);
    EXPECT(again.data && memcmp(gw, pa.w, 15 * sizeof(float)) == 0 &&
           memcmp(gb, pa.b, 5 * sizeof(float)) == 0, "values read back differ");
    block_free(&again);
    block_free(&huge);
    safetensors_free(&f);
    block_free(&other);
    block_free(&a);
    block_free(&m);
    block_free(&b);
    block_free(&bm);
}

// The bytes on disk: little-endian u64 N (a multiple of 8), N bytes of JSON padded with
// spaces, then the tensors at their data_offsets: what the Python library reads.
static void test_layout_on_disk(void) {
    char path[512];
    path_in(path, sizeof path, "layout.safetensors");
    Block a;
    Params p;
    make_params(&a, &p, 3);
    const Block *blocks[] = {&a};
    Error err = {{0}};
    EXPECT(safetensors_save(path, blocks, NULL, 1, NULL, 0, &err) == 0, "%s", err.msg);
    unsigned char *bytes;
    size_t len;
    EXPECT(file_read_all(path, &bytes, &len, 0, &err) == 0);
    uint64_t n = 0;
    for (int i = 0; i < 8; i++) n |= (uint64_t)bytes[i] << (8 * i);
    EXPECT(n % 8 == 0 && 8 + n + 20 * sizeof(float) == len, "N = %llu, file %zu", (unsigned long long)n, len);
    EXPECT(bytes[8] == '{');
    cJSON *root = cJSON_ParseWithLength((const char *)bytes + 8, n);
    EXPECT(root != NULL);
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(root, "enc.w");
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(w, "dtype");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(w, "data_offsets");
    EXPECT(cJSON_IsString(dt) && strcmp(dt->valuestring, "F32") == 0);
    EXPECT(cJSON_GetArraySize(offs) == 2);
    EXPECT(cJSON_GetObjectItemCaseSensitive(root, "__metadata__") == NULL);
    if (cJSON_GetArraySize(offs) == 2) {
        int begin = cJSON_GetArrayItem(offs, 0)->valueint, end = cJSON_GetArrayItem(offs, 1)->valueint;
        EXPECT(end - begin == 60);
        EXPECT(memcmp(bytes + 8 + n + begin, p.w, 60) == 0, "enc.w bytes not at data_offsets");
    }
    cJSON_Delete(root);
    free(bytes);
    block_free(&a);
}

static int write_raw(const char *path, uint64_t n, const char *header, size_t header_len,
                     const void *data, size_t data_len) {
    FILE *fp = fopen(path, "wb");
    if (!fp) return -1;
    unsigned char head[8];
    for (int i = 0; i < 8; i++) head[i] = (unsigned char)(n >> (8 * i));
    fwrite(head, 1, 8, fp);
    fwrite(header, 1, header_len, fp);
    if (data_len) fwrite(data, 1, data_len, fp);
    return fclose(fp);
}

// A header as the Python library writes it (no padding needed here, sorted keys,
// "__metadata__" first), with an unaligned tensor after a 2-byte gap.
static void test_reads_foreign_file(void) {
    char path[512];
    path_in(path, sizeof path, "foreign.safetensors");
    const char *h = "{\"__metadata__\":{\"format\":\"pt\"},\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
                    "\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[10,14]}}";
    unsigned char data[14] = {0};
    const float a[2] = {1.5f, -2.0f}, b = 3.25f;
    memcpy(data, a, 8);
    memcpy(data + 10, &b, 4);
    EXPECT(write_raw(path, strlen(h), h, strlen(h), data, sizeof data) == 0);
    SafetensorsFile f;
    Error err = {{0}};
    EXPECT(safetensors_load(&f, path, &err) == 0, "%s", err.msg);
    const SafetensorsTensor *ta = safetensors_find(&f, "a"), *tb = safetensors_find(&f, "b");
    EXPECT(ta && ta->data[0] == 1.5f && ta->data[1] == -2.0f);
    EXPECT(tb && tb->ndim == 2 && ((uintptr_t)tb->data % 4) == 0 && tb->data[0] == 3.25f);
    const char *fmt = safetensors_meta(&f, "format");
    EXPECT(fmt && strcmp(fmt, "pt") == 0);
    safetensors_free(&f);
}

// Every half-precision bit pattern widens to the value the arithmetic definition gives
// (NaNs to a NaN); bfloat16 is the top half of a float.
static void test_half_precision_widening(void) {
    int bad = -1;
    for (uint32_t h = 0; h < 65536 && bad < 0; h++) {
        float a = safetensors_f16_to_f32((uint16_t)h), b = safetensors_f16_to_f32_ref((uint16_t)h);
        uint32_t ba, bb;
        memcpy(&ba, &a, 4);
        memcpy(&bb, &b, 4);
        if (isnan(b) ? !isnan(a) : ba != bb) bad = (int)h;
    }
    EXPECT(bad < 0, "f16 0x%04x: %.9g, expected %.9g", (unsigned)bad,
           bad < 0 ? 0.0 : safetensors_f16_to_f32((uint16_t)bad),
           bad < 0 ? 0.0 : safetensors_f16_to_f32_ref((uint16_t)bad));
    EXPECT(safetensors_f16_to_f32(0x3c00) == 1.0f && safetensors_f16_to_f32(0xc000) == -2.0f);
    EXPECT(safetensors_f16_to_f32(0x0001) == ldexpf(1.0f, -24), "smallest subnormal");
    EXPECT(safetensors_f16_to_f32(0x7bff) == 65504.0f, "largest half");
    EXPECT(safetensors_bf16_to_f32(0x3f80) == 1.0f && safetensors_bf16_to_f32(0xc0a0) == -5.0f);
    EXPECT(safetensors_bf16_to_f32(0x3e20) == 0.15625f);
}

// F16, BF16, unaligned F32 and integer tensors in one file, read whole (safetensors_load)
// and by header plus tensor (safetensors_open, safetensors_read_floats): the same floats;
// the integer tensor is listed with its dtype, has no data and is refused as floats.
static void test_reads_half_and_integer_tensors(void) {
    char path[512];
    path_in(path, sizeof path, "mixed.safetensors");
    const char *h = "{\"h\":" T("F16", "[3]", "[0,6]") ",\"b\":" T("BF16", "[2]", "[6,10]")
                    ",\"n\":" T("I64", "[]", "[10,18]") ",\"f\":" T("F32", "[2]", "[18,26]") "}";
    unsigned char data[26];
    const uint16_t hv[3] = {0x3c00, 0xb800, 0x0001}, bv[2] = {0x4049, 0xbf80};  // 1, -0.5, 2^-24; 3.140625, -1
    const int64_t nv = 12345;
    const float fv[2] = {0.25f, -7.5f};
    memcpy(data, hv, 6);
    memcpy(data + 6, bv, 4);
    memcpy(data + 10, &nv, 8);
    memcpy(data + 18, fv, 8);
    EXPECT(write_raw(path, strlen(h), h, strlen(h), data, sizeof data) == 0);
    const float want_h[3] = {1.0f, -0.5f, ldexpf(1.0f, -24)}, want_b[2] = {3.140625f, -1.0f};
    for (int mode = 0; mode < 2; mode++) {
        SafetensorsFile f;
        Error err = {{0}};
        int r = mode == 0 ? safetensors_load(&f, path, &err) : safetensors_open(&f, path, &err);
        EXPECT(r == 0, "mode %d: %s", mode, err.msg);
        if (r) continue;
        const SafetensorsTensor *th = safetensors_find(&f, "h"), *tb = safetensors_find(&f, "b");
        const SafetensorsTensor *tn = safetensors_find(&f, "n"), *tf = safetensors_find(&f, "f");
        EXPECT(th && tb && tn && tf && f.count == 4);
        if (!(th && tb && tn && tf)) {
            safetensors_free(&f);
            continue;
        }
        EXPECT(th->dtype == ST_F16 && tb->dtype == ST_BF16 && tn->dtype == ST_I64 &&
               tf->dtype == ST_F32);
        EXPECT(tn->numel == 1 && tn->ndim == 0 && tn->data == NULL);
        float got[3] = {0};
        EXPECT(safetensors_read_floats(got, &f, th, &err) == 0, "%s", err.msg);
        EXPECT(memcmp(got, want_h, sizeof want_h) == 0, "F16: %g %g %g", got[0], got[1], got[2]);
        EXPECT(safetensors_read_floats(got, &f, tb, &err) == 0, "%s", err.msg);
        EXPECT(memcmp(got, want_b, sizeof want_b) == 0, "BF16: %g %g", got[0], got[1]);
        EXPECT(safetensors_read_floats(got, &f, tf, &err) == 0, "%s", err.msg);
        EXPECT(memcmp(got, fv, sizeof fv) == 0, "F32: %g %g", got[0], got[1]);
        EXPECT(safetensors_read_floats(got, &f, tn, &err) == -1);
        EXPECT(strstr(err.msg, path) && strstr(err.msg, "'n'") && strstr(err.msg, "I64"), "%s",
               err.msg);
        if (mode == 0) {
            EXPECT(th->data && th->data[1] == -0.5f && ((uintptr_t)th->data % 4) == 0);
            EXPECT(tf->data && tf->data[1] == -7.5f && ((uintptr_t)tf->data % 4) == 0);
            Block blk = {0};
            float *hp, *np;
            block_add(&blk, &hp, "h", 1, 3);
            block_add(&blk, &np, "n", 1, 1);
            block_alloc(&blk);
            EXPECT(safetensors_read_block(&blk, "", &f, path, &err) == -1);
            EXPECT(strstr(err.msg, "'n'") && strstr(err.msg, "I64"), "%s", err.msg);
            EXPECT(memcmp(hp, want_h, sizeof want_h) == 0, "read_block widened F16");
            block_free(&blk);
        } else {
            EXPECT(th->data == NULL && tf->data == NULL, "open read the data");
        }
        safetensors_free(&f);
    }
}

// Values that are not numbers are refused wherever floats are read: a NaN in a float32
// tensor, an infinity in a half one (widened), in a loaded file (read_block, read_floats)
// and in an opened one (read_floats from the file); the message names the file, the tensor
// and the value's index. A finite tensor beside them reads as before.
static void test_rejects_nonfinite_values(void) {
    char path[512];
    path_in(path, sizeof path, "nonfinite.safetensors");
    const char *h = "{\"a\":" T("F32", "[2]", "[0,8]") ",\"h\":" T("F16", "[3]", "[8,14]")
                    ",\"c\":" T("F32", "[1]", "[16,20]") "}";
    unsigned char data[20] = {0};
    const float av[2] = {1.0f, NAN}, cv = 2.0f;
    const uint16_t hv[3] = {0x3c00, 0x3c00, 0xfc00};  // 1, 1, -inf
    memcpy(data, av, 8);
    memcpy(data + 8, hv, 6);
    memcpy(data + 16, &cv, 4);
    EXPECT(write_raw(path, strlen(h), h, strlen(h), data, sizeof data) == 0);
    for (int mode = 0; mode < 2; mode++) {
        SafetensorsFile f;
        Error err = {{0}};
        int r = mode == 0 ? safetensors_load(&f, path, &err) : safetensors_open(&f, path, &err);
        EXPECT(r == 0, "mode %d: %s", mode, err.msg);
        if (r) continue;
        const SafetensorsTensor *ta = safetensors_find(&f, "a"), *th = safetensors_find(&f, "h");
        const SafetensorsTensor *tc = safetensors_find(&f, "c");
        float got[3] = {0};
        EXPECT(safetensors_read_floats(got, &f, ta, &err) == -1, "mode %d: NaN read", mode);
        EXPECT(strstr(err.msg, path) && strstr(err.msg, "'a'") && strstr(err.msg, "NaN or inf") &&
                   strstr(err.msg, "value 1 of 2"), "%s", err.msg);
        EXPECT(safetensors_read_floats(got, &f, th, &err) == -1, "mode %d: -inf read", mode);
        EXPECT(strstr(err.msg, "'h'") && strstr(err.msg, "value 2 of 3"), "%s", err.msg);
        EXPECT(safetensors_read_floats(got, &f, tc, &err) == 0 && got[0] == 2.0f, "%s", err.msg);
        if (mode == 0) {
            Block blk = {0};
            float *cp, *ap;
            block_add(&blk, &cp, "c", 1, 1);
            block_add(&blk, &ap, "a", 1, 2);
            block_alloc(&blk);
            EXPECT(safetensors_read_block(&blk, "", &f, path, &err) == -1, "read_block took a NaN");
            EXPECT(strstr(err.msg, path) && strstr(err.msg, "'a'") && strstr(err.msg, "NaN or inf"),
                   "%s", err.msg);
            block_free(&blk);
        }
        safetensors_free(&f);
    }
}

// Writes a file with the given header (length declared = actual unless declared != 0) and
// data, loads it, and expects failure with a message starting "PATH: " and containing want.
static void expect_reject(const char *name, const char *header, uint64_t declared, size_t data_len,
                          const char *want) {
    char path[512];
    path_in(path, sizeof path, name);
    unsigned char *data = calloc(data_len + 1, 1);
    size_t hl = strlen(header);
    write_raw(path, declared ? declared : hl, header, hl, data, data_len);
    free(data);
    SafetensorsFile f;
    Error err = {{0}};
    int r = safetensors_load(&f, path, &err);
    EXPECT(r == -1, "%s: accepted", name);
    if (r == 0) {
        safetensors_free(&f);
        return;
    }
    size_t pl = strlen(path);
    EXPECT(strncmp(err.msg, path, pl) == 0 && err.msg[pl] == ':', "%s: message '%s'", name, err.msg);
    EXPECT(strstr(err.msg, want) != NULL, "%s: '%s' lacks '%s'", name, err.msg, want);
    EXPECT(strchr(err.msg, '\n') == NULL, "%s: two lines", name);
    EXPECT(f.tensors == NULL && f.buffer_ == NULL, "%s: not cleaned up", name);
    // Reading the header alone finds the same fault with the same message.
    Error err2 = {{0}};
    r = safetensors_open(&f, path, &err2);
    EXPECT(r == -1, "%s: safetensors_open accepted", name);
    if (r == 0) {
        safetensors_free(&f);
        return;
    }
    EXPECT(strcmp(err.msg, err2.msg) == 0, "%s: open says '%s', load '%s'", name, err2.msg,
           err.msg);
    EXPECT(f.tensors == NULL && f.buffer_ == NULL, "%s: open not cleaned up", name);
}

static void test_rejects_malformed_files(void) {
    char path[512];
    path_in(path, sizeof path, "short.safetensors");
    FILE *fp = fopen(path, "wb");
    fwrite("\x10\0\0", 1, 3, fp);
    fclose(fp);
    SafetensorsFile f;
    Error err = {{0}};
    EXPECT(safetensors_load(&f, path, &err) == -1);
    EXPECT(strncmp(err.msg, path, strlen(path)) == 0 && strstr(err.msg, "truncated"), "%s", err.msg);
    path_in(path, sizeof path, "does_not_exist.safetensors");
    EXPECT(safetensors_load(&f, path, &err) == -1);
    EXPECT(strncmp(err.msg, path, strlen(path)) == 0, "%s", err.msg);

    expect_reject("past_end", "{}", 1000, 0, "past the end");
    expect_reject("absurd", "{}", (uint64_t)1 << 62, 0, "absurd");
    expect_reject("bad_json", "{\"a\": {\"dtype\": \"F32\",", 0, 0, "not valid JSON");
    expect_reject("not_object", "[1, 2]", 0, 0, "not a JSON object");
    expect_reject("trailing", "{} x", 0, 0, "after the header");
    expect_reject("entry_not_object", "{\"a\": 5}", 0, 0, "'a' is not an object");
    expect_reject("wrong_dtype", "{\"a\":" T("F64", "[2]", "[0,16]") "}", 0, 16, "dtype 'F64' not supported");
    expect_reject("f16_size_mismatch", "{\"a\":" T("F16", "[3]", "[0,8]") "}", 0, 8,
                  "8 bytes of data for 3 F16");
    expect_reject("i64_size_mismatch", "{\"a\":" T("I64", "[]", "[0,4]") "}", 0, 4,
                  "4 bytes of data for 1 I64");
    expect_reject("no_dtype", "{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 0, 4, "dtype");
    expect_reject("negative_dim", "{\"a\":" T("F32", "[-1]", "[0,4]") "}", 0, 4, "shape[0]");
    expect_reject("fraction_dim", "{\"a\":" T("F32", "[1.5]", "[0,4]") "}", 0, 4, "shape[0]");
    expect_reject("string_dim", "{\"a\":" T("F32", "[\"2\"]", "[0,8]") "}", 0, 8, "shape[0]");
    expect_reject("too_many_dims", "{\"a\":" T("F32", "[1,1,1,1,1,1,1,1,1]", "[0,4]") "}", 0, 4,
                  "9 dimensions");
    expect_reject("numel_overflow",
                  "{\"a\":" T("F32", "[4294967296,4294967296,4294967296]", "[0,4]") "}", 0, 4, "overflows");
    expect_reject("offsets_out_of_range", "{\"a\":" T("F32", "[2]", "[0,8]") "}", 0, 4, "out of range");
    expect_reject("offsets_reversed", "{\"a\":" T("F32", "[0]", "[4,0]") "}", 0, 4, "out of range");
    expect_reject("offsets_not_pair", "{\"a\":" T("F32", "[1]", "[0]") "}", 0, 4, "data_offsets");
    expect_reject("offsets_negative", "{\"a\":" T("F32", "[1]", "[-4,0]") "}", 0, 4, "data_offsets");
    expect_reject("size_mismatch", "{\"a\":" T("F32", "[3]", "[0,8]") "}", 0, 8, "8 bytes of data for 3");
    expect_reject("overlap",
                  "{\"a\":" T("F32", "[2]", "[0,8]") ",\"b\":" T("F32", "[2]", "[4,12]") "}", 0, 12,
                  "overlap");
    expect_reject("duplicate", "{\"a\":" T("F32", "[1]", "[0,4]") ",\"a\":" T("F32", "[1]", "[4,8]") "}",
                  0, 8, "twice");
    expect_reject("meta_not_string", "{\"__metadata__\":{\"step\":5}}", 0, 0, "not a string");
    expect_reject("meta_not_object", "{\"__metadata__\":[\"x\"]}", 0, 0, "not an object");
    // A data section shorter than the header promises (a truncated download).
    expect_reject("truncated_data", "{\"a\":" T("F32", "[4]", "[0,16]") "}", 0, 10, "out of range");
    // Deep nesting must fail inside cJSON's nesting limit, not overflow the stack.
    size_t depth = 100000;
    char *deep = malloc(2 * depth + 16);
    strcpy(deep, "{\"a\":");
    size_t at = strlen(deep);
    for (size_t i = 0; i < depth; i++) deep[at++] = '[';
    for (size_t i = 0; i < depth; i++) deep[at++] = ']';
    deep[at++] = '}';
    deep[at] = 0;
    expect_reject("deep", deep, 0, 0, "not valid JSON");
    free(deep);
}

// Every truncation of a valid file fails cleanly; random byte flips never crash.
static void test_truncations_and_corruptions(void) {
    char good[512], bad[512];
    path_in(good, sizeof good, "good.safetensors");
    path_in(bad, sizeof bad, "bad.safetensors");
    Block a;
    Params p;
    make_params(&a, &p, 4);
    const Block *blocks[] = {&a};
    SafetensorsMeta meta[] = {{"k", "v"}};
    Error err = {{0}};
    EXPECT(safetensors_save(good, blocks, NULL, 1, meta, 1, &err) == 0, "%s", err.msg);
    unsigned char *bytes;
    size_t len;
    EXPECT(file_read_all(good, &bytes, &len, 0, &err) == 0);
    int accepted = 0;
    for (size_t cut = 0; cut < len; cut++) {
        EXPECT(file_write_atomic(bad, bytes, cut, &err) == 0);
        SafetensorsFile f;
        if (safetensors_load(&f, bad, &err) == 0) {
            accepted++;
            safetensors_free(&f);
        } else {
            EXPECT(strncmp(err.msg, bad, strlen(bad)) == 0, "cut %zu: %s", cut, err.msg);
        }
    }
    EXPECT(accepted == 0, "%d truncated files accepted", accepted);
    Rng rng;
    rng_seed(&rng, 5);
    unsigned char *copy = malloc(len);
    for (int trial = 0; trial < 300; trial++) {
        memcpy(copy, bytes, len);
        int flips = 1 + (int)rng_below(&rng, 4);
        for (int k = 0; k < flips; k++) copy[rng_below(&rng, (uint32_t)len)] = (unsigned char)rng_below(&rng, 256);
        EXPECT(file_write_atomic(bad, copy, len, &err) == 0);
        SafetensorsFile f;
        if (safetensors_load(&f, bad, &err) == 0)
            safetensors_free(&f);
        else
            EXPECT(strncmp(err.msg, bad, strlen(bad)) == 0, "trial %d: %s", trial, err.msg);
    }
    free(copy);
    free(bytes);
    block_free(&a);
}

// A save that cannot complete (unwritable folder; a full disk simulated by RLIMIT_FSIZE)
// fails with the file named and leaves the previous checkpoint loadable and unchanged.
static void test_failed_save_keeps_old_file(void) {
    char dir[512], path[600];
    path_in(dir, sizeof dir, "ckpt");
    Error err = {{0}};
    EXPECT(make_dirs(dir, &err) == 0);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    Block a, big = {0};
    Params p;
    make_params(&a, &p, 6);
    const Block *blocks[] = {&a};
    EXPECT(safetensors_save(path, blocks, NULL, 1, NULL, 0, &err) == 0, "%s", err.msg);
    float *w;
    block_add(&big, &w, "big", 1, 1 << 18);  // 1 MiB
    block_alloc(&big);
    const Block *big_blocks[] = {&big};
    struct rlimit saved, small;
    getrlimit(RLIMIT_FSIZE, &saved);
    small = saved;
    small.rlim_cur = 64 * 1024;
    void (*old)(int) = signal(SIGXFSZ, SIG_IGN);
    EXPECT(setrlimit(RLIMIT_FSIZE, &small) == 0);
    int r = safetensors_save(path, big_blocks, NULL, 1, NULL, 0, &err);
    setrlimit(RLIMIT_FSIZE, &saved);
    signal(SIGXFSZ, old);
    EXPECT(r == -1, "save past the file-size limit succeeded");
    EXPECT(strncmp(err.msg, path, strlen(path)) == 0, "%s", err.msg);
    if (geteuid() != 0) {  // permissions do not stop root
        chmod(dir, 0555);
        EXPECT(safetensors_save(path, big_blocks, NULL, 1, NULL, 0, &err) == -1);
        chmod(dir, 0700);
    }
    char missing[600];
    snprintf(missing, sizeof missing, "%s/no/such/dir/m.safetensors", dir);
    EXPECT(safetensors_save(missing, blocks, NULL, 1, NULL, 0, &err) == -1);
    EXPECT(strstr(err.msg, "no/such/dir/m.safetensors"), "%s", err.msg);
    SafetensorsFile f;
    EXPECT(safetensors_load(&f, path, &err) == 0, "old checkpoint damaged: %s", err.msg);
    const SafetensorsTensor *t = safetensors_find(&f, "enc.w");
    EXPECT(t && memcmp(t->data, p.w, 15 * sizeof(float)) == 0);
    EXPECT(safetensors_find(&f, "big") == NULL);
    safetensors_free(&f);
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) n += e->d_name[0] != '.';
    if (d) closedir(d);
    EXPECT(n == 1, "%d files in the checkpoint folder (temporary left?)", n);
    block_free(&a);
    block_free(&big);
}

// Metadata read as numbers: values, ranges, and the one-line refusals naming file and key.
static void test_metadata_numbers(void) {
    char path[512];
    path_in(path, sizeof path, "meta.safetensors");
    Block a;
    Params p;
    make_params(&a, &p, 4);
    const Block *blocks[] = {&a};
    SafetensorsMeta meta[] = {{"n", "42"}, {"big", "99"}, {"word", "4x"}, {"lr", "0.25"},
                              {"inf", "inf"}, {"third", "0.33333333333333331"}};
    Error err = {{0}};
    EXPECT(safetensors_save(path, blocks, NULL, 1, meta, 6, &err) == 0, "%s", err.msg);
    SafetensorsFile f;
    EXPECT(safetensors_load(&f, path, &err) == 0, "%s", err.msg);
    long v = 0;
    float x = 0;
    EXPECT(safetensors_meta_long(&f, path, "n", "a test file", 0, 100, &v, &err) == 0 && v == 42,
           "n read as %ld", v);
    EXPECT(safetensors_meta_long(&f, path, "big", NULL, 0, 50, &v, &err) == -1 &&
               strstr(err.msg, "big = 99 out of range [0, 50]"), "range: %s", err.msg);
    EXPECT(safetensors_meta_long(&f, path, "word", NULL, 0, 50, &v, &err) == -1 &&
               strstr(err.msg, "is not an integer"), "word: %s", err.msg);
    EXPECT(safetensors_meta_long(&f, path, "gone", "a test file", 0, 1, &v, &err) == -1 &&
               strstr(err.msg, "not a test file (no \"gone\" in __metadata__)") &&
               strstr(err.msg, "meta.safetensors"), "missing with a kind: %s", err.msg);
    EXPECT(safetensors_meta_float(&f, path, "lr", &x, &err) == 0 && x == 0.25f, "lr read as %g", x);
    EXPECT(safetensors_meta_float(&f, path, "inf", &x, &err) == -1 &&
               strstr(err.msg, "is not a number"), "inf: %s", err.msg);
    EXPECT(safetensors_meta_float(&f, path, "gone", &x, &err) == -1 &&
               strstr(err.msg, "no \"gone\" in __metadata__"), "missing: %s", err.msg);
    double d = 0;  // the double reader keeps every digit a double holds
    EXPECT(safetensors_meta_double(&f, path, "third", &d, &err) == 0 && d == 1.0 / 3.0,
           "third read as %.17g", d);
    EXPECT(safetensors_meta_double(&f, path, "word", &d, &err) == -1 &&
               strstr(err.msg, "word = '4x' is not a number"), "word: %s", err.msg);
    EXPECT(safetensors_meta_double(&f, path, "inf", &d, &err) == -1, "inf accepted as a double");
    safetensors_free(&f);
    block_free(&a);
}

int main(void) {
    if (scratch_make(tmpdir, sizeof tmpdir, "attend_st")) return 1;
    RUN(test_roundtrip_tensors_and_metadata);
    RUN(test_layout_on_disk);
    RUN(test_reads_foreign_file);
    RUN(test_half_precision_widening);
    RUN(test_reads_half_and_integer_tensors);
    RUN(test_rejects_nonfinite_values);
    RUN(test_rejects_malformed_files);
    RUN(test_truncations_and_corruptions);
    RUN(test_failed_save_keeps_old_file);
    RUN(test_metadata_numbers);
    scratch_remove(tmpdir);
    return test_summary();
}
