// test_idx.c: the IDX reader (datasets/idx.h) on files this test writes: raw and gzip
// round trips for every type, gzip detected by magic bytes not by name, and each
// rejection (truncated, trailing data, bad magic, unknown type, dimension count, a
// header claiming more than the cap, a corrupt or cut gzip stream, a gzip bomb), plus
// a mutation fuzz of idx_load_memory. Values are exact: no tolerances.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "core/check.h"
#include "core/rng.h"
#include "datasets/idx.h"
#include "tests/support/test.h"

static char tmpdir[256];

static const char *tmp_path(const char *name) {
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

static void write_raw(const char *path, const void *bytes, size_t len) {
    FILE *fp = fopen(path, "wb");
    CHECK(fp, "%s", path);
    CHECK(fwrite(bytes, 1, len, fp) == len);
    CHECK(fclose(fp) == 0);
}

static void write_gzip(const char *path, const void *bytes, size_t len) {
    gzFile gz = gzopen(path, "wb");
    CHECK(gz, "%s", path);
    if (len) CHECK(gzwrite(gz, bytes, (unsigned)len) == (int)len);
    CHECK(gzclose(gz) == Z_OK);
}

// gzip-compresses in memory (a gzip wrapper, like gzopen writes).
static unsigned char *gzip_memory(const unsigned char *in, size_t len, size_t *out_len) {
    z_stream zs = {0};
    CHECK(deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
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

static unsigned char *u8_fixture(size_t *len, int64_t *dims) {
    dims[0] = 3, dims[1] = 4, dims[2] = 5;
    unsigned char data[60];
    for (int i = 0; i < 60; i++) data[i] = (unsigned char)(i * 37 + 11);
    return idx_encode(IDX_U8, 3, dims, data, len);
}

static void expect_u8_fixture(const Idx *idx) {
    EXPECT(idx->type == IDX_U8 && idx->ndim == 3, "type %d ndim %d", idx->type, idx->ndim);
    EXPECT(idx->dims[0] == 3 && idx->dims[1] == 4 && idx->dims[2] == 5);
    EXPECT(idx->count == 60 && idx->elem_size == 1);
    int same = idx->data != NULL;
    for (int i = 0; same && i < 60; i++) same &= idx->data[i] == (unsigned char)(i * 37 + 11);
    EXPECT(same, "pixel values differ from what was written");
}

static void test_idx_raw_round_trip_u8(void) {
    int64_t dims[3];
    size_t len;
    unsigned char *bytes = u8_fixture(&len, dims);
    EXPECT(len == 16 + 60, "encoded %zu bytes", len);
    EXPECT(bytes[0] == 0 && bytes[1] == 0 && bytes[2] == 0x08 && bytes[3] == 3);
    EXPECT(bytes[4] == 0 && bytes[7] == 3 && bytes[11] == 4 && bytes[15] == 5, "big-endian dims");
    write_raw(tmp_path("u8-images-idx3-ubyte"), bytes, len);
    Idx idx;
    Error err = {{0}};
    EXPECT(idx_load(&idx, tmp_path("u8-images-idx3-ubyte"), &err) == 0, "%s", err.msg);
    expect_u8_fixture(&idx);
    EXPECT(idx_get(&idx, 59) == (unsigned char)(59 * 37 + 11));
    idx_free(&idx);
    free(bytes);
}

static void test_idx_gzip_round_trip_by_magic_not_name(void) {
    int64_t dims[3];
    size_t len;
    unsigned char *bytes = u8_fixture(&len, dims);
    Error err = {{0}};
    Idx idx;
    // gzip data under a plain name, plain data under a .gz name: both load.
    write_gzip(tmp_path("gz-under-plain-name"), bytes, len);
    EXPECT(idx_load(&idx, tmp_path("gz-under-plain-name"), &err) == 0, "%s", err.msg);
    expect_u8_fixture(&idx);
    idx_free(&idx);
    write_raw(tmp_path("plain-under-gz-name.gz"), bytes, len);
    EXPECT(idx_load(&idx, tmp_path("plain-under-gz-name.gz"), &err) == 0, "%s", err.msg);
    expect_u8_fixture(&idx);
    idx_free(&idx);
    // And from memory.
    size_t zlen;
    unsigned char *z = gzip_memory(bytes, len, &zlen);
    EXPECT(z[0] == 0x1f && z[1] == 0x8b);
    EXPECT(idx_load_memory(&idx, z, zlen, "mem.gz", &err) == 0, "%s", err.msg);
    expect_u8_fixture(&idx);
    idx_free(&idx);
    // Two concatenated gzip members (as `cat a.gz b.gz` makes) are one stream of data.
    size_t z1len, z2len;
    unsigned char *z1 = gzip_memory(bytes, 40, &z1len);
    unsigned char *z2 = gzip_memory(bytes + 40, len - 40, &z2len);
    unsigned char *both = xmalloc(z1len + z2len);
    memcpy(both, z1, z1len);
    memcpy(both + z1len, z2, z2len);
    EXPECT(idx_load_memory(&idx, both, z1len + z2len, "two-members.gz", &err) == 0, "%s", err.msg);
    expect_u8_fixture(&idx);
    idx_free(&idx);
    free(both), free(z1), free(z2), free(z), free(bytes);
}

static void test_idx_round_trip_every_type(void) {
    const IdxType types[] = {IDX_I8, IDX_I16, IDX_I32, IDX_F32, IDX_F64};
    const double values[6] = {-7, 0, 1, 100, -128, 127};
    for (int t = 0; t < 5; t++) {
        unsigned char raw[6 * 8];
        size_t es = idx_type_size(types[t]);
        for (int i = 0; i < 6; i++) {
            // Integers scaled to use their width; floats get a fractional part.
            double v = types[t] == IDX_F32 || types[t] == IDX_F64 ? values[i] * 1000.5
                                                                  : values[i] * 250;
            switch (types[t]) {
            case IDX_I8: { int8_t x = (int8_t)values[i]; memcpy(raw + i, &x, 1); break; }
            case IDX_I16: { int16_t x = (int16_t)v; memcpy(raw + 2 * i, &x, 2); break; }
            case IDX_I32: { int32_t x = (int32_t)v; memcpy(raw + 4 * i, &x, 4); break; }
            case IDX_F32: { float x = (float)v; memcpy(raw + 4 * i, &x, 4); break; }
            default: { memcpy(raw + 8 * i, &v, 8); break; }
            }
        }
        int64_t dims[2] = {2, 3};
        size_t len;
        unsigned char *bytes = idx_encode(types[t], 2, dims, raw, &len);
        EXPECT(len == 12 + 6 * es);
        for (int gz = 0; gz < 2; gz++) {
            const char *path = tmp_path(gz ? "typed.gz" : "typed");
            if (gz) write_gzip(path, bytes, len);
            else write_raw(path, bytes, len);
            Idx idx;
            Error err = {{0}};
            EXPECT(idx_load(&idx, path, &err) == 0, "type 0x%02x: %s", types[t], err.msg);
            EXPECT(idx.type == types[t] && idx.elem_size == es && idx.count == 6);
            for (int i = 0; i < 6 && idx.data; i++) {
                double v;
                switch (types[t]) {
                case IDX_I8: { int8_t x; memcpy(&x, raw + i, 1); v = x; break; }
                case IDX_I16: { int16_t x; memcpy(&x, raw + 2 * i, 2); v = x; break; }
                case IDX_I32: { int32_t x; memcpy(&x, raw + 4 * i, 4); v = x; break; }
                case IDX_F32: { float x; memcpy(&x, raw + 4 * i, 4); v = x; break; }
                default: memcpy(&v, raw + 8 * i, 8);
                }
                EXPECT(idx_get(&idx, (size_t)i) == v, "type 0x%02x item %d: %g vs %g", types[t],
                       i, idx_get(&idx, (size_t)i), v);
            }
            idx_free(&idx);
        }
        free(bytes);
    }
    // The file is big-endian: an int32 of 1 is stored 00 00 00 01.
    int32_t one = 1;
    int64_t d1 = 1;
    size_t len;
    unsigned char *b = idx_encode(IDX_I32, 1, &d1, &one, &len);
    EXPECT(b[8] == 0 && b[9] == 0 && b[10] == 0 && b[11] == 1, "not big-endian");
    free(b);
}

// Loads bytes from a file (raw or gzip) and expects failure with a message that
// contains want and names the file.
static void expect_rejected(const unsigned char *bytes, size_t len, int gz, const char *want,
                            int line) {
    const char *path = tmp_path(gz ? "bad.gz" : "bad");
    if (gz) write_gzip(path, bytes, len);
    else write_raw(path, bytes, len);
    Idx idx;
    Error err = {{0}};
    int rc = idx_load(&idx, path, &err);
    EXPECT(rc == -1, "line %d: %s accepted", line, gz ? "gzip" : "raw");
    EXPECT(strstr(err.msg, want) != NULL, "line %d: message '%s' lacks '%s'", line, err.msg, want);
    EXPECT(strncmp(err.msg, path, strlen(path)) == 0, "line %d: message '%s' does not name %s",
           line, err.msg, path);
    EXPECT(strchr(err.msg, '\n') == NULL, "line %d: message is not one line", line);
    EXPECT(idx.data == NULL && idx.count == 0, "line %d: output not left empty", line);
    idx_free(&idx);
}

static void test_idx_rejects_truncated_and_trailing(void) {
    int64_t dims[3] = {10, 28, 28};
    unsigned char *full = xcalloc(16 + 7840 + 5, 1);
    size_t len;
    unsigned char *enc = idx_encode(IDX_U8, 3, dims, full + 16, &len);
    memcpy(full, enc, 16);
    free(enc);
    for (int gz = 0; gz < 2; gz++) {
        expect_rejected(full, 16 + 100, gz, "truncated: header claims 7840 bytes, file has 100",
                        __LINE__);
        expect_rejected(full, 16, gz, "truncated: header claims 7840 bytes, file has 0", __LINE__);
        expect_rejected(full, 16 + 7840 + 5, gz,
                        "trailing data: header claims 7840 bytes, file has 7845", __LINE__);
        expect_rejected(full, 10, gz, "truncated header", __LINE__);
        expect_rejected(full, 3, gz, "too short", __LINE__);
        expect_rejected(full, 0, gz, "too short", __LINE__);
    }
    free(full);
}

static void test_idx_rejects_bad_headers(void) {
    for (int gz = 0; gz < 2; gz++) {
        unsigned char m[8] = {0x01, 0x00, 0x08, 0x01, 0, 0, 0, 1};
        expect_rejected(m, 8, gz, "bad magic", __LINE__);
        unsigned char text[] = "P5 28 28 255\n";
        expect_rejected(text, sizeof text - 1, gz, "bad magic", __LINE__);
        unsigned char t[9] = {0, 0, 0x07, 1, 0, 0, 0, 1, 42};
        expect_rejected(t, 9, gz, "unknown IDX data type 0x07", __LINE__);
        unsigned char many[4 + 36 + 1] = {0, 0, 0x08, 9};
        for (int d = 0; d < 9; d++) many[4 + 4 * d + 3] = 1;
        expect_rejected(many, sizeof many, gz, "9 dimensions", __LINE__);
        unsigned char none[4] = {0, 0, 0x08, 0};
        expect_rejected(none, 4, gz, "0 dimensions", __LINE__);
        unsigned char zero[8] = {0, 0, 0x08, 1, 0, 0, 0, 0};
        expect_rejected(zero, 8, gz, "dimension 0 is 0", __LINE__);
        // 65536^3 bytes = 256 TiB, and 4 GiB x 4 GiB: above the cap, refused before allocating.
        unsigned char huge[16] = {0, 0, 0x08, 3, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0};
        expect_rejected(huge, 16, gz, "limit", __LINE__);
        unsigned char wide[12] = {0, 0, 0x0E, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
        expect_rejected(wide, 12, gz, "limit", __LINE__);
        // 384 MiB claimed (under the cap) by a 20-byte file: a plain truncation error, and the
        // gzip path must not allocate the claim up front (it grows with the data).
        unsigned char big[20] = {0, 0, 0x08, 2, 0, 0, 0x60, 0, 0, 0, 0x40, 0, 1, 2, 3, 4};
        expect_rejected(big, 20, gz, "truncated: header claims 402653184 bytes, file has 8",
                        __LINE__);
    }
}

static void test_idx_rejects_corrupt_and_cut_gzip(void) {
    int64_t dims[3];
    size_t len;
    unsigned char *bytes = u8_fixture(&len, dims);
    size_t zlen;
    unsigned char *z = gzip_memory(bytes, len, &zlen);
    Idx idx;
    Error err = {{0}};
    // Cut inside the deflate data.
    EXPECT(idx_load_memory(&idx, z, zlen - 12, "cut.gz", &err) == -1, "cut stream accepted");
    EXPECT(strstr(err.msg, "cut.gz: truncated") == err.msg, "message: %s", err.msg);
    // Only the 8-byte trailer (CRC, size) missing: all data there, still refused.
    EXPECT(idx_load_memory(&idx, z, zlen - 8, "notrailer.gz", &err) == -1, "no trailer accepted");
    EXPECT(strstr(err.msg, "notrailer.gz: truncated") == err.msg, "message: %s", err.msg);
    // A flipped CRC byte.
    z[zlen - 6] ^= 0x55;
    EXPECT(idx_load_memory(&idx, z, zlen, "crc.gz", &err) == -1, "bad CRC accepted");
    EXPECT(strstr(err.msg, "crc.gz: corrupt gzip data") == err.msg, "message: %s", err.msg);
    EXPECT(idx.data == NULL);
    free(z), free(bytes);
}

// A header claiming 60 bytes followed by 64 MiB of zeros compressing to ~64 KiB: the
// reader must stop counting early instead of inflating (or allocating) it all.
static void test_idx_gzip_bomb_is_bounded(void) {
    size_t big = (size_t)64 << 20;
    unsigned char *plain = xcalloc(big, 1);
    int64_t dims[3];
    size_t len;
    unsigned char *bytes = u8_fixture(&len, dims);
    memcpy(plain, bytes, len);
    size_t zlen;
    unsigned char *z = gzip_memory(plain, big, &zlen);
    free(plain);
    EXPECT(zlen < big / 100, "compressed to %zu bytes", zlen);
    Idx idx;
    Error err = {{0}};
    EXPECT(idx_load_memory(&idx, z, zlen, "bomb.gz", &err) == -1, "bomb accepted");
    EXPECT(strstr(err.msg, "bomb.gz: trailing data: header claims 60 bytes, file has more than"),
           "message: %s", err.msg);
    free(z), free(bytes);
}

// Random byte flips, truncations and extensions of valid raw and gzip files: the reader
// never crashes (the sanitizer build checks memory), and anything it accepts is coherent.
static void test_idx_fuzz_mutations(void) {
    int64_t dims[3];
    size_t len;
    unsigned char *bytes = u8_fixture(&len, dims);
    size_t zlen;
    unsigned char *z = gzip_memory(bytes, len, &zlen);
    Rng rng;
    rng_seed(&rng, 7);
    unsigned char buf[512];
    int accepted = 0, rejected = 0;
    for (int it = 0; it < 4000; it++) {
        const unsigned char *src = it & 1 ? z : bytes;
        size_t n = it & 1 ? zlen : len;
        memcpy(buf, src, n);
        int flips = 1 + (int)rng_below(&rng, 3);
        for (int f = 0; f < flips; f++)
            buf[rng_below(&rng, (uint32_t)n)] = (unsigned char)rng_below(&rng, 256);
        size_t m = n;
        uint32_t how = rng_below(&rng, 4);
        if (how == 1) m = rng_below(&rng, (uint32_t)n + 1);
        if (how == 2) {
            size_t extra = rng_below(&rng, 64);
            for (size_t k = 0; k < extra; k++) buf[n + k] = (unsigned char)rng_below(&rng, 256);
            m = n + extra;
        }
        Idx idx;
        Error err = {{0}};
        if (idx_load_memory(&idx, buf, m, "fuzz", &err) == 0) {
            size_t count = 1;
            for (int d = 0; d < idx.ndim; d++) count *= (size_t)idx.dims[d];
            EXPECT(count == idx.count && idx.data != NULL, "incoherent accepted array");
            EXPECT(idx_get(&idx, idx.count - 1) == idx_get(&idx, idx.count - 1));
            accepted++;
        } else {
            EXPECT(strncmp(err.msg, "fuzz: ", 6) == 0, "message '%s'", err.msg);
            rejected++;
        }
        idx_free(&idx);
    }
    EXPECT(accepted > 0 && rejected > 0, "accepted %d rejected %d", accepted, rejected);
    free(z), free(bytes);
}

static void test_idx_missing_file_named(void) {
    Idx idx;
    Error err = {{0}};
    EXPECT(idx_load(&idx, tmp_path("does-not-exist"), &err) == -1);
    EXPECT(strstr(err.msg, "does-not-exist: cannot open") != NULL, "message: %s", err.msg);
    EXPECT(idx_load(&idx, tmpdir, &err) == -1, "a folder loaded");
    EXPECT(strstr(err.msg, "not a regular file") != NULL, "message: %s", err.msg);
}

static void remove_tmpdir(void) {
    const char *names[] = {"u8-images-idx3-ubyte", "gz-under-plain-name", "plain-under-gz-name.gz",
                           "typed", "typed.gz", "bad", "bad.gz"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) unlink(tmp_path(names[i]));
    rmdir(tmpdir);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_idx_XXXXXX");
    CHECK(mkdtemp(tmpdir), "cannot make a temporary folder");
    RUN(test_idx_raw_round_trip_u8);
    RUN(test_idx_gzip_round_trip_by_magic_not_name);
    RUN(test_idx_round_trip_every_type);
    RUN(test_idx_rejects_truncated_and_trailing);
    RUN(test_idx_rejects_bad_headers);
    RUN(test_idx_rejects_corrupt_and_cut_gzip);
    RUN(test_idx_gzip_bomb_is_bounded);
    RUN(test_idx_fuzz_mutations);
    RUN(test_idx_missing_file_named);
    remove_tmpdir();
    return test_summary();
}
