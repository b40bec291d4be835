// fuzz_featcache.c: libFuzzer target for the feature cache reader (datasets/featcache.h).
//
// Returns 1 when the reader accepted the input, 0 when it refused it.
// Input: the file's bytes. Each input goes through featcache_open_memory (partial caches
// allowed) and, written to a temporary file, through featcache_open (memory-mapped; partial
// caches refused); for a complete cache the two must agree. Properties: a failure has a
// one-line message naming the input and leaves nothing behind; a success has n, L, D >= 1,
// an id for every image, status bytes in range (none pending in a complete cache), every
// image readable through featcache_get (AddressSanitizer checks the bounds of the mapping),
// and featcache_verify either accepts or refuses with one line.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/featcache.h"
#include "tests/fuzz/fuzz_util.h"

static void fuzz_featcache_check(const FeatCache *c, int rc, const Error *err, const char *name) {
    if (rc != 0) {
        fuzz_require(rc == -1, "featcache open returned %d", rc);
        fuzz_require_error(err, name);
        fuzz_require(c->base == NULL && c->ids == NULL && c->st.tensors == NULL,
                     "failed open left state behind");
        return;
    }
    fuzz_require(c->n >= 1 && c->L >= 1 && c->D >= 1, "shape %d %d %d", c->n, c->L, c->D);
    fuzz_require(c->ids != NULL, "no image list");
    for (int i = 0; i < c->n; i++) {
        fuzz_require(c->ids[i] != NULL, "image %d has no id", i);
        int s = featcache_status(c, i);
        fuzz_require(s == FEAT_OK || s == FEAT_UNREADABLE || (!c->complete && s == FEAT_PENDING),
                     "image %d status %d", i, s);
    }
    if ((size_t)c->L * c->D > (1u << 20)) return;
    float *buf = malloc((size_t)c->L * c->D * sizeof(float));
    volatile float acc = 0.0f;
    for (int i = 0; i < c->n && i < 64; i++) {
        featcache_get(c, i, buf);
        acc += buf[0] + buf[(size_t)c->L * c->D - 1];
    }
    (void)acc;
    free(buf);
    Error e = {{0}};
    if (featcache_verify(c, &e)) fuzz_require_error(&e, name);
}

int fuzz_featcache_one(const uint8_t *data, size_t size) {
    FeatCache m, f;
    Error em = {{0}}, ef = {{0}};
    int rm = featcache_open_memory(&m, data, size, "fuzz.safetensors", 1, &em);
    fuzz_featcache_check(&m, rm, &em, "fuzz.safetensors");
    const char *path = fuzz_tmp_path("fuzz_features.safetensors");
    fuzz_write_file(path, data, size);
    int rf = featcache_open(&f, path, &ef);
    fuzz_featcache_check(&f, rf, &ef, path);
    if (rm == 0 && m.complete)
        fuzz_require(rf == 0 && f.n == m.n && f.L == m.L && f.D == m.D && f.dtype == m.dtype,
                     "memory and file opens disagree: %s", rf ? ef.msg : "shapes");
    if (rf == 0) fuzz_require(rm == 0 && m.complete, "the file opened, the memory copy did not");
    int accepted = rm == 0;
    if (rm == 0) featcache_close(&m);
    if (rf == 0) featcache_close(&f);
    return accepted;
}

#ifndef FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_featcache_one(data, size);
    return 0;
}
#endif
