// test_featcache.c: datasets/featcache.h, the feature cache: F16 rounding against a search
// over every half, the round trip of a reduced-width VGG-19's annotations (F32 bit for bit,
// F16 the correctly rounded value), resuming an interrupted extraction to the same bytes,
// the refusals (other settings, unfinished, damaged, not a cache), and a cache larger than
// the process's data limit read through the mapping.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/rng.h"
#include "datasets/featcache.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"
#include "vision/encoder.h"

static char tmpdir[256];

static void test_f16_rounding(void) {
    Rng rng;
    rng_seed(&rng, 7);
    float special[] = {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 65519.0f, 65520.0f, 1e9f, -1e9f,
                       5.9604645e-8f, 2.9802322e-8f, 2.9802326e-8f, 8.940697e-8f, 6.1035156e-5f,
                       6.1e-5f, 1e-30f, 0.33333334f, 1.0009766f, 1.0004883f, 1.0014648f};
    int bad = 0;
    for (int i = 0; i < (int)(sizeof special / sizeof special[0]); i++)
        if (featcache_f32_to_f16(special[i]) != featcache_f32_to_f16_ref(special[i])) {
            EXPECT(0, "%.9g: %04x, reference %04x", special[i], featcache_f32_to_f16(special[i]),
                   featcache_f32_to_f16_ref(special[i]));
            bad++;
        }
    for (int i = 0; i < 600 && !bad; i++) {
        // magnitudes from 2^-28 to 2^17: subnormals, normals, overflow
        float x = ldexpf(rng_uniform(&rng) + 0.5f, (int)rng_below(&rng, 46) - 28);
        if (rng_below(&rng, 2)) x = -x;
        uint16_t h = featcache_f32_to_f16(x), r = featcache_f32_to_f16_ref(x);
        if (h != r) {
            EXPECT(0, "%.9g: %04x, reference %04x", x, h, r);
            bad++;
        }
    }
    EXPECT(safetensors_f16_to_f32(featcache_f32_to_f16(NAN)) != safetensors_f16_to_f32(featcache_f32_to_f16(NAN)),
           "NaN must stay NaN");
}

// A small cache description over n made-up ids (batch 4).
typedef struct {
    char ids_mem[64][24];
    const char *ids[64];
    FeatCacheInfo info;
} Fake;

static void fake_info(Fake *f, int n, int L, int D, FeatDtype dt) {
    for (int i = 0; i < n; i++) {
        snprintf(f->ids_mem[i], sizeof f->ids_mem[i], "img%02d.jpg", i);
        f->ids[i] = f->ids_mem[i];
    }
    f->info = (FeatCacheInfo){.encoder = "vgg19", .encoder_sha256 = "ab" "00000000000000000000000000000000000000000000000000000000000000",
                              .encoder_weights = "vgg19.safetensors", .encoder_description = "test",
                              .preprocess = "test transform", .image_size = 32, .data = "tsv:x:y",
                              .n = n, .ids = f->ids, .L = L, .D = D, .dtype = dt, .batch = 4,
                              .threads = 1, .group = 2};
}

static void fill_annot(float *a, int n, int per, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed);
    for (size_t i = 0; i < (size_t)n * per; i++) a[i] = rng_uniform(&rng) * 8.0f - 2.0f;
}

// Writes the whole cache in one go; returns 0 on success.
static int write_all(const char *path, const FeatCacheInfo *info, const float *annot,
                     const unsigned char *status, Error *err) {
    FeatCacheWriter w;
    if (featcache_writer_open(&w, path, info, err)) return -1;
    int r = featcache_writer_put(&w, w.start, info->n - w.start,
                                 annot + (size_t)w.start * info->L * info->D, status + w.start, err);
    if (!r) r = featcache_writer_finish(&w, err);
    featcache_writer_close(&w);
    return r;
}

static void test_round_trip_encoder(void) {
    const char *dir = getenv("ATTEND_FIXTURES");
    char wpath[512];
    snprintf(wpath, sizeof wpath, "%s/encoders/vgg19.safetensors", dir && dir[0] ? dir : "tests/fixtures");
    Encoder *enc;
    Error err;
    if (encoder_load(&enc, "vgg19", wpath, &err)) {
        EXPECT(0, "%s", err.msg);
        return;
    }
    const int S = 32, B = 3, G = encoder_grid_size(enc, S), D = encoder_dim(enc), L = G * G;
    float *img = malloc(sizeof(float) * B * 3 * S * S), *annot = malloc(sizeof(float) * B * L * D);
    float *back = malloc(sizeof(float) * L * D);
    Rng rng;
    rng_seed(&rng, 3);
    for (int i = 0; i < B * 3 * S * S; i++) img[i] = rng_uniform(&rng) * 4.0f - 2.0f;
    EncoderWorkspace ws;
    encoder_workspace_alloc(&ws, enc, S, 1, 2, ENCODER_CONV_AUTO);
    encoder_forward(enc, &ws, annot, img, B);
    encoder_workspace_free(&ws);
    Fake fk;
    fake_info(&fk, B, L, D, FEAT_F32);
    fk.info.encoder_sha256 = encoder_weights_sha256(enc);
    unsigned char status[3] = {FEAT_OK, FEAT_UNREADABLE, FEAT_OK};
    for (int dt = 0; dt < 2; dt++) {
        fk.info.dtype = dt ? FEAT_F16 : FEAT_F32;
        char path[600];
        snprintf(path, sizeof path, "%s/rt_%d.safetensors", tmpdir, dt);
        EXPECT(write_all(path, &fk.info, annot, status, &err) == 0, "%s", err.msg);
        FeatCache c;
        if (featcache_open(&c, path, &err)) {
            EXPECT(0, "%s", err.msg);
            continue;
        }
        EXPECT(featcache_verify(&c, &err) == 0, "%s", err.msg);
        EXPECT(c.n == B && c.L == L && c.D == D && c.image_size == S, "shape");
        EXPECT(!strcmp(c.encoder_sha256, encoder_weights_sha256(enc)) && !strcmp(c.ids[2], "img02.jpg"),
               "metadata");
        EXPECT(featcache_status(&c, 1) == FEAT_UNREADABLE && featcache_status(&c, 0) == FEAT_OK, "status");
        int nz = 0;
        for (int b = 0; b < B; b++) {
            featcache_get(&c, b, back);
            for (int q = 0; q < L * D; q++) {
                float want = status[b] != FEAT_OK ? 0.0f : annot[(size_t)b * L * D + q];
                float exp = dt ? safetensors_f16_to_f32(featcache_f32_to_f16(want)) : want;
                if (back[q] != exp || (dt && fabsf(back[q] - want) > fabsf(want) * (1.0f / 2048.0f) + 3e-8f)) {
                    EXPECT(0, "dtype %d image %d value %d: %.9g read back, %.9g written", dt, b, q,
                           back[q], want);
                    b = B;
                    break;
                }
                nz += back[q] != 0.0f;
            }
        }
        EXPECT(nz > 0, "the annotations are all zero: the test could not fail");
        featcache_close(&c);
    }
    encoder_free(enc);
    free(img), free(annot), free(back);
}

static unsigned char *read_file(const char *path, size_t *len) {
    unsigned char *d = NULL;
    Error err;
    if (file_read_all(path, &d, len, 0, &err)) return NULL;
    return d;
}

static void test_resume_identical(void) {
    const int n = 11, L = 5, D = 6;
    Fake fk;
    fake_info(&fk, n, L, D, FEAT_F16);
    float *a = malloc(sizeof(float) * n * L * D);
    fill_annot(a, n, L * D, 5);
    unsigned char status[11];
    for (int i = 0; i < n; i++) status[i] = i == 6 ? FEAT_UNREADABLE : FEAT_OK;
    char whole[600], parts[600];
    snprintf(whole, sizeof whole, "%s/whole.safetensors", tmpdir);
    snprintf(parts, sizeof parts, "%s/parts.safetensors", tmpdir);
    Error err;
    EXPECT(write_all(whole, &fk.info, a, status, &err) == 0, "%s", err.msg);
    // Interrupted after the first batch (4 images), and again after annotations of images
    // 4..5 were written but not their status (a stop between the two writes).
    FeatCacheWriter w;
    EXPECT(featcache_writer_open(&w, parts, &fk.info, &err) == 0 && w.start == 0, "%s", err.msg);
    EXPECT(featcache_writer_put(&w, 0, 4, a, status, &err) == 0, "%s", err.msg);
    featcache_writer_close(&w);
    int b, t, g;
    EXPECT(featcache_partial_settings(parts, &b, &t, &g) == 1 && b == 4 && t == 1 && g == 2,
           "settings of the partial file");
    EXPECT(featcache_writer_open(&w, parts, &fk.info, &err) == 0 && w.start == 4, "resume at %d: %s",
           w.start, err.msg);
    unsigned char pending[2] = {FEAT_OK, FEAT_OK};
    EXPECT(featcache_writer_put(&w, 4, 2, a + 4 * L * D, pending, &err) == 0, "%s", err.msg);
    featcache_writer_close(&w);
    // Undo the status bytes of 4..5 as if the process had stopped before writing them: the
    // partial file's status lies after the annotations.
    {
        char partial[700];
        snprintf(partial, sizeof partial, "%s.partial", parts);
        FILE *fp = fopen(partial, "r+b");
        EXPECT(fp != NULL, "open %s", partial);
        if (fp) {
            fseek(fp, -(long)(n - 4), SEEK_END);
            fputc(0, fp), fputc(0, fp);
            fclose(fp);
        }
    }
    EXPECT(featcache_writer_open(&w, parts, &fk.info, &err) == 0 && w.start == 4, "resume at %d: %s",
           w.start, err.msg);
    EXPECT(featcache_writer_put(&w, 4, n - 4, a + 4 * L * D, status + 4, &err) == 0, "%s", err.msg);
    EXPECT(featcache_writer_finish(&w, &err) == 0, "%s", err.msg);
    featcache_writer_close(&w);
    size_t l1, l2;
    unsigned char *x = read_file(whole, &l1), *y = read_file(parts, &l2);
    EXPECT(x && y && l1 == l2 && !memcmp(x, y, l1), "resumed file differs from the uninterrupted one");
    free(x), free(y);
    // Reopening a complete cache with the same settings: nothing to do.
    EXPECT(featcache_writer_open(&w, parts, &fk.info, &err) == 0 && w.complete && w.start == n,
           "complete: %s", err.msg);
    featcache_writer_close(&w);
    free(a);
}

// Opening for writing with one setting changed is refused naming it.
static void expect_refused(const char *path, const FeatCacheInfo *info, const char *word) {
    FeatCacheWriter w;
    Error err = {{0}};
    int r = featcache_writer_open(&w, path, info, &err);
    EXPECT(r == -1 && strstr(err.msg, word) && !strchr(err.msg, '\n'), "%s: want refusal naming '%s', got %d '%s'",
           path, word, r, err.msg);
    if (r == 0) featcache_writer_close(&w);
}

// The six images of 2 x 3 annotations the refusal tests use, written twice into TMP: a
// finished cache (DONE_NAME) and an extraction opened and left unfinished (PART_NAME, whose
// file is PART_NAME.partial); their paths into done and part.
static void write_done_and_unfinished(Fake *fk, char done[600], const char *done_name,
                                      char part[600], const char *part_name) {
    enum { N = 6, L = 2, D = 3 };
    fake_info(fk, N, L, D, FEAT_F16);
    float a[N * L * D];
    fill_annot(a, N, L * D, 9);
    unsigned char status[N] = {1, 1, 1, 1, 1, 1};
    snprintf(done, 600, "%s/%s", tmpdir, done_name);
    snprintf(part, 600, "%s/%s", tmpdir, part_name);
    Error err;
    EXPECT(write_all(done, &fk->info, a, status, &err) == 0, "%s", err.msg);
    FeatCacheWriter w;
    EXPECT(featcache_writer_open(&w, part, &fk->info, &err) == 0, "%s", err.msg);
    featcache_writer_close(&w);
}

// A cache, finished or partial, made for another extraction (encoder, its weights,
// preprocessing, size, data, images, dtype) is refused naming what differs.
static void test_refuses_another_extraction(void) {
    Fake fk;
    char done[600], part[600];
    write_done_and_unfinished(&fk, done, "done.safetensors", part, "part.safetensors");
    for (int k = 0; k < 2; k++) {
        const char *p = k ? part : done;
        FeatCacheInfo o = fk.info;
        o.encoder = "vgg16";
        expect_refused(p, &o, "encoder");
        o = fk.info;
        o.encoder_sha256 = "cd00000000000000000000000000000000000000000000000000000000000000";
        expect_refused(p, &o, "encoder.sha256");
        o = fk.info;
        o.preprocess = "another transform";
        expect_refused(p, &o, "preprocess");
        o = fk.info;
        o.image_size = 64;
        expect_refused(p, &o, "image_size");
        o = fk.info;
        o.data = "tsv:other:y";
        expect_refused(p, &o, "data");
        Fake f2 = fk;
        f2.info.ids = f2.ids;
        f2.ids[3] = "another.jpg";
        expect_refused(p, &f2.info, "images.sha256");
        o = fk.info;
        o.dtype = FEAT_F32;
        expect_refused(p, &o, "dtype");
    }
}

// Values F16 cannot hold, and NaN, are refused naming the image.
static void test_refuses_values_f16_cannot_hold(void) {
    const int n = 6, L = 2, D = 3;
    Fake fk;
    fake_info(&fk, n, L, D, FEAT_F16);
    float big[6 * 2 * 3];
    fill_annot(big, n, L * D, 9);
    unsigned char status[6] = {1, 1, 1, 1, 1, 1};
    char ov[600];
    snprintf(ov, sizeof ov, "%s/overflow.safetensors", tmpdir);
    FeatCacheInfo o = fk.info;
    o.data = "overflow";
    big[2 * L * D + 1] = 70000.0f;
    Error e2 = {{0}};
    EXPECT(write_all(ov, &o, big, status, &e2) == -1 && strstr(e2.msg, "image 2") &&
               strstr(e2.msg, "--dtype f32"), "F16 overflow: %s", e2.msg);
    o.dtype = FEAT_F32;
    EXPECT(write_all(ov, &o, big, status, &e2) == -1 && strstr(e2.msg, "dtype"),
           "the partial F16 file must refuse an F32 resume: %s", e2.msg);
    char p2[700];
    snprintf(p2, sizeof p2, "%s.partial", ov);
    remove(p2);
    EXPECT(write_all(ov, &o, big, status, &e2) == 0, "F32 holds 70000: %s", e2.msg);
    big[4] = NAN;
    snprintf(ov, sizeof ov, "%s/nan.safetensors", tmpdir);
    EXPECT(write_all(ov, &o, big, status, &e2) == -1 && strstr(e2.msg, "NaN"), "NaN: %s", e2.msg);
}

// What is no cache, or no longer a whole one: an unfinished extraction, a damaged byte, a
// truncated file, an edited header value, a checkpoint.
static void test_refuses_damaged_files(void) {
    const int n = 6;  // images: the file ends with their n status bytes, after the annotations
    Fake fk;
    char done[600], part[600];
    write_done_and_unfinished(&fk, done, "damaged.safetensors", part, "unfinished.safetensors");
    Error err;
    FeatCache c;
    char partial[700];
    snprintf(partial, sizeof partial, "%s.partial", part);
    EXPECT(featcache_open(&c, partial, &err) == -1 && strstr(err.msg, "unfinished"), "%s", err.msg);
    // A damaged byte in the data: the checksum says so.
    size_t len;
    unsigned char *bytes = read_file(done, &len);
    if (bytes) {
        bytes[len - n - 3] ^= 0x40;
        EXPECT(featcache_open_memory(&c, bytes, len, "damaged", 0, &err) == 0, "%s", err.msg);
        EXPECT(featcache_verify(&c, &err) == -1 && strstr(err.msg, "checksum"), "%s", err.msg);
        featcache_close(&c);
        // A truncated file and a changed header value are refused when opened.
        EXPECT(featcache_open_memory(&c, bytes, len - 1, "short", 0, &err) == -1, "truncated accepted");
        bytes[len - n - 3] ^= 0x40;
        char *img = NULL;
        for (size_t q = 0; q + 9 <= len && !img; q++)
            if (!memcmp(bytes + q, "img03.jpg", 9)) img = (char *)bytes + q;
        if (img) {
            img[3] = '9';
            EXPECT(featcache_open_memory(&c, bytes, len, "edited", 0, &err) == -1 &&
                       strstr(err.msg, "images.sha256"), "%s", err.msg);
        }
        free(bytes);
    }
    // A checkpoint is not a cache.
    const char *dir = getenv("ATTEND_FIXTURES");
    char wpath[512];
    snprintf(wpath, sizeof wpath, "%s/encoders/vgg19.safetensors", dir && dir[0] ? dir : "tests/fixtures");
    EXPECT(featcache_open(&c, wpath, &err) == -1 && strstr(err.msg, "not a feature cache"), "%s", err.msg);
}

// A cache bigger than the data limit of a child process is read whole through the mapping
// (reading it into memory would fail). RLIMIT_DATA bounds private writable memory (heap,
// anonymous mappings), not a read-only shared file mapping. Under AddressSanitizer the
// shadow memory is such a mapping, so the limit cannot be given there.
static void test_larger_than_limit(void) {
#if defined(__SANITIZE_ADDRESS__)
    printf("skipped under AddressSanitizer\n");
    return;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return;
#endif
#endif
    const int n = 48, L = 196, D = 1024;  // 48 x 196 x 1024 x 4 bytes = 36.75 MiB F32
    Fake fk;
    fake_info(&fk, n, L, D, FEAT_F32);
    char path[600];
    snprintf(path, sizeof path, "%s/big.safetensors", tmpdir);
    FeatCacheWriter w;
    Error err;
    if (featcache_writer_open(&w, path, &fk.info, &err)) {
        EXPECT(0, "%s", err.msg);
        return;
    }
    float *row = malloc(sizeof(float) * L * D);
    double want = 0.0;
    for (int i = 0; i < n; i++) {
        fill_annot(row, 1, L * D, 100 + (uint64_t)i);
        for (int q = 0; q < L * D; q++) want += row[q];
        unsigned char ok = FEAT_OK;
        EXPECT(featcache_writer_put(&w, i, 1, row, &ok, &err) == 0, "%s", err.msg);
    }
    EXPECT(featcache_writer_finish(&w, &err) == 0, "%s", err.msg);
    featcache_writer_close(&w);
    free(row);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        struct rlimit lim = {16u << 20, 16u << 20};  // 16 MiB: well under the 36.75 MiB file
        if (setrlimit(RLIMIT_DATA, &lim)) _exit(3);
        // The limit holds: the file could not be read into memory.
        void *p = malloc((size_t)n * L * D * 4);
        if (p) {  // freed: under valgrind a leak would turn this status into its own
            free(p);
            _exit(4);
        }
        FeatCache c;
        Error e;
        if (featcache_open(&c, path, &e)) {
            fprintf(stderr, "%s\n", e.msg);
            _exit(5);
        }
        static float buf[196 * 1024];
        double got = 0.0;
        for (int i = 0; i < c.n; i++) {
            featcache_get(&c, i, buf);
            for (int q = 0; q < L * D; q++) got += buf[q];
        }
        if (featcache_verify(&c, &e)) _exit(6);
        featcache_close(&c);
        _exit(got == want ? 0 : 7);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 4) {  // valgrind's allocator is not held by the limit
        printf("skip test_larger_than_limit: a 16 MiB data limit does not bind this process's "
               "malloc (valgrind's replaces it), so nothing is shown\n");
        return;
    }
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child under a 16 MiB data limit: status %d", st);
}

// Issue 56: an interrupted extraction's PATH.partial cut short (a full disk, a partial
// copy) was refused as "an interrupted extraction with other settings"; with the same
// settings it is called truncated and the line says how to start over. Cut inside its
// header too.
static void test_truncated_partial_is_called_truncated(void) {
    Fake fk;
    char done[600], part[600], partial[700];
    write_done_and_unfinished(&fk, done, "trunc_done.safetensors", part, "trunc.safetensors");
    snprintf(partial, sizeof partial, "%s.partial", part);
    size_t len = 0;
    unsigned char *bytes = read_file(partial, &len);
    EXPECT(bytes && len > 200, "no partial file");
    if (!bytes) return;
    const size_t cuts[2] = {len - 10, 100};  // in the data; in the header
    for (int k = 0; k < 2; k++) {
        Error err;
        EXPECT(file_write_atomic(partial, bytes, cuts[k], &err) == 0, "%s", err.msg);
        FeatCacheWriter w;
        int r = featcache_writer_open(&w, part, &fk.info, &err);
        if (r == 0) featcache_writer_close(&w);
        EXPECT(r != 0 && strstr(err.msg, ".partial: truncated: ") &&
                   strstr(err.msg, "remove it and run the same command again") &&
                   !strstr(err.msg, "other settings"),
               "cut at %zu of %zu: %s", cuts[k], len, r ? err.msg : "accepted");
    }
    free(bytes);
}

// Issue 56: a cache damaged on disk into NaN or infinity (nothing writes one: the writer
// refuses them) is read by featcache_read with an error naming the cache, the image and
// how many values are bad; the images around it read as before.
static void test_read_refuses_nonfinite(void) {
    const int n = 4, L = 4, D = 8;
    float annot[4 * 4 * 8], back[4 * 8];
    fill_annot(annot, n, L * D, 11);
    unsigned char status[4] = {FEAT_OK, FEAT_OK, FEAT_OK, FEAT_OK};
    for (int dt = 0; dt < 2; dt++) {
        Fake fk;
        fake_info(&fk, n, L, D, dt ? FEAT_F16 : FEAT_F32);
        char path[600];
        snprintf(path, sizeof path, "%s/nonfinite_%d.safetensors", tmpdir, dt);
        Error err;
        EXPECT(write_all(path, &fk.info, annot, status, &err) == 0, "%s", err.msg);
        FeatCache c;
        if (featcache_open(&c, path, &err)) {
            EXPECT(0, "%s", err.msg);
            continue;
        }
        const size_t at = (size_t)(c.annot - c.base), vb = dt ? 2 : 4;
        featcache_close(&c);
        unsigned char *bytes = NULL;
        size_t len = 0;
        EXPECT(file_read_all(path, &bytes, &len, 0, &err) == 0, "%s", err.msg);
        if (!bytes) continue;
        // Image 2: value 5 NaN, value 9 infinity.
        const unsigned char nan16[2] = {0x00, 0x7E}, inf16[2] = {0x00, 0x7C};
        const float nan32 = NAN, inf32 = INFINITY;
        memcpy(bytes + at + ((size_t)2 * L * D + 5) * vb, dt ? (const void *)nan16 : (const void *)&nan32, vb);
        memcpy(bytes + at + ((size_t)2 * L * D + 9) * vb, dt ? (const void *)inf16 : (const void *)&inf32, vb);
        EXPECT(file_write_atomic(path, bytes, len, &err) == 0, "%s", err.msg);
        free(bytes);
        if (featcache_open(&c, path, &err)) {
            EXPECT(0, "%s", err.msg);
            continue;
        }
        for (int i = 0; i < n; i++) {
            int r = featcache_read(&c, i, back, &err);
            if (i != 2) {
                EXPECT(r == 0, "dtype %d image %d refused: %s", dt, i, err.msg);
                continue;
            }
            EXPECT(r != 0, "dtype %d: image 2's NaN and infinity read without an error", dt);
            if (r)
                EXPECT(strstr(err.msg, path) && strstr(err.msg, "image img02.jpg (3 of 4): 2 of its 32 "
                                                                "annotation values are NaN or infinite"),
                       "dtype %d: %s", dt, err.msg);
        }
        featcache_close(&c);
    }
}

int main(void) {
    if (scratch_make(tmpdir, sizeof tmpdir, "test_featcache")) return 1;
    RUN(test_f16_rounding);
    RUN(test_round_trip_encoder);
    RUN(test_resume_identical);
    RUN(test_refuses_another_extraction);
    RUN(test_refuses_values_f16_cannot_hold);
    RUN(test_refuses_damaged_files);
    RUN(test_larger_than_limit);
    RUN(test_read_refuses_nonfinite);
    RUN(test_truncated_partial_is_called_truncated);
    scratch_remove(tmpdir);
    return test_summary();
}
