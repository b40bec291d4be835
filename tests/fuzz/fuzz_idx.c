// fuzz_idx.c: libFuzzer target for the IDX reader (datasets/idx.h), raw and gzip.
//
// Returns 1 when the reader accepted the input, 0 when it refused it.
// Input: the file's bytes (gzip is detected by its magic, as in real files). Each input
// goes through idx_load_memory and, written to a temporary file, through idx_load (a
// different byte source: fread and a 64 KiB inflate buffer); the two must agree.
// Properties: a failure has a one-line message naming the input; a success has a known
// type, 1..IDX_MAX_DIMS non-zero dimensions whose product is count, at most
// IDX_MAX_BYTES of data, and (raw input) exactly header + data bytes in the file.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "datasets/idx.h"
#include "tests/fuzz/fuzz_util.h"

static void fuzz_idx_check(const Idx *x, int rc, const Error *err, const char *name) {
    if (rc != 0) {
        fuzz_require(rc == -1, "idx load returned %d", rc);
        fuzz_require_error(err, name);
        fuzz_require(x->data == NULL && x->count == 0, "failed load left data behind");
        return;
    }
    fuzz_require(idx_type_size(x->type) == x->elem_size && x->elem_size > 0, "type 0x%02x",
                 (unsigned)x->type);
    fuzz_require(x->ndim >= 1 && x->ndim <= IDX_MAX_DIMS, "ndim %d", x->ndim);
    size_t count = 1;
    for (int d = 0; d < x->ndim; d++) {
        fuzz_require(x->dims[d] >= 1 && x->dims[d] <= 0xffffffffLL, "dim %d = %lld", d,
                     (long long)x->dims[d]);
        count *= (size_t)x->dims[d];
    }
    fuzz_require(count == x->count && count * x->elem_size <= IDX_MAX_BYTES, "count %zu vs %zu",
                 count, x->count);
    fuzz_require(x->data != NULL, "no data");
    volatile double sink = idx_get(x, 0) + idx_get(x, x->count - 1);  // first and last readable
    (void)sink;
}

int fuzz_idx_one(const uint8_t *data, size_t size) {
    Idx m, f;
    Error em = {{0}}, ef = {{0}};
    int rm = idx_load_memory(&m, data, size, "fuzz.idx", &em);
    fuzz_idx_check(&m, rm, &em, "fuzz.idx");
    int gz = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
    if (rm == 0 && !gz)
        fuzz_require(size == 4 + 4 * (size_t)m.ndim + m.count * m.elem_size,
                     "raw file of %zu bytes accepted for %zu bytes of data", size,
                     m.count * m.elem_size);
    const char *path = fuzz_tmp_path("fuzz.idx");
    fuzz_write_file(path, data, size);
    int rf = idx_load(&f, path, &ef);
    fuzz_idx_check(&f, rf, &ef, path);
    fuzz_require(rm == rf, "memory and file loads disagree: %d (%s) vs %d (%s)", rm,
                 rm ? em.msg : "ok", rf, rf ? ef.msg : "ok");
    if (rm == 0) {
        fuzz_require(m.type == f.type && m.ndim == f.ndim && m.count == f.count &&
                         memcmp(m.dims, f.dims, sizeof m.dims) == 0 &&
                         memcmp(m.data, f.data, m.count * m.elem_size) == 0,
                     "memory and file loads differ");
    }
    idx_free(&m);
    idx_free(&f);
    return rm == 0;
}

#ifndef FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_idx_one(data, size);
    return 0;
}
#endif
