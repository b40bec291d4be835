// fuzz_safetensors.c: libFuzzer target for the checkpoint reader (core/safetensors.h).
//
// Returns 1 when the reader accepted the input, 0 when it refused it.
// Input: the file's bytes. Each input goes through safetensors_load_memory and, written to
// a temporary file, through safetensors_load (fread instead of memcpy); the two must agree.
// Both header-only readers (safetensors_open_memory, safetensors_open on the file) must
// agree with them too, and read every float tensor (F32, F16, BF16) through
// safetensors_read_floats to the same bits as the whole-file load, and refuse the integer
// ones. Properties: a failure has a one-line message naming the input; a success has unique
// tensor names that safetensors_find returns, 0..8 dimensions whose product is numel, float
// data that can be read in full (AddressSanitizer checks the bounds) and is float-aligned,
// no data for integer tensors, metadata that safetensors_meta finds, and float tensors of
// 1..4 dimensions that safetensors_read_block copies bit for bit into a Block of the same
// layout.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/block.h"
#include "core/safetensors.h"
#include "tests/fuzz/fuzz_util.h"

// Builds a Block from the loadable tensors of f and reads it back with read_block.
static void fuzz_safetensors_read_back(const SafetensorsFile *f, const char *name) {
    Block b = {0};
    for (int i = 0; i < f->count; i++) {
        const SafetensorsTensor *t = &f->tensors[i];
        int ok = t->ndim >= 1 && t->ndim <= BLOCK_MAX_DIMS && strlen(t->name) < BLOCK_NAME_LEN &&
                 t->numel <= (1u << 20) && safetensors_dtype_is_float(t->dtype);
        for (int d = 0; ok && d < t->ndim; d++) ok = t->shape[d] <= (1 << 20);
        if (!ok) continue;
        int s[4] = {0};
        for (int d = 0; d < t->ndim; d++) s[d] = (int)t->shape[d];
        switch (t->ndim) {
        case 1: block_add(&b, NULL, t->name, 1, s[0]); break;
        case 2: block_add(&b, NULL, t->name, 2, s[0], s[1]); break;
        case 3: block_add(&b, NULL, t->name, 3, s[0], s[1], s[2]); break;
        default: block_add(&b, NULL, t->name, 4, s[0], s[1], s[2], s[3]); break;
        }
    }
    if (b.count == 0) return;
    block_alloc(&b);
    Error err = {{0}};
    int rc = safetensors_read_block(&b, "", f, name, &err);
    fuzz_require(rc == 0, "read_block of the file's own layout failed: %s", err.msg);
    for (int i = 0; i < b.count; i++) {
        const SafetensorsTensor *t = safetensors_find(f, b.tensors[i].name);
        fuzz_require(t && t->numel == b.tensors[i].numel, "tensor %s", b.tensors[i].name);
        fuzz_require(t->numel == 0 || memcmp(b.data + b.tensors[i].offset, t->data,
                                             t->numel * sizeof(float)) == 0,
                     "read_block changed the data of %s", t->name);
    }
    block_free(&b);
}

static void fuzz_safetensors_check(const SafetensorsFile *f, int rc, const Error *err,
                                   const char *name) {
    if (rc != 0) {
        fuzz_require(rc == -1, "safetensors load returned %d", rc);
        fuzz_require_error(err, name);
        fuzz_require(f->tensors == NULL && f->count == 0 && f->buffer_ == NULL,
                     "failed load left tensors behind");
        return;
    }
    fuzz_require(f->count >= 0 && f->n_meta >= 0, "counts %d %d", f->count, f->n_meta);
    for (int i = 0; i < f->count; i++) {
        const SafetensorsTensor *t = &f->tensors[i];
        fuzz_require(safetensors_find(f, t->name) == t, "tensor '%s' not found or duplicated",
                     t->name);
        fuzz_require(t->ndim >= 0 && t->ndim <= 8, "ndim %d", t->ndim);
        size_t numel = 1;
        for (int d = 0; d < t->ndim; d++) {
            fuzz_require(t->shape[d] >= 0, "negative dimension");
            numel *= (size_t)t->shape[d];
        }
        fuzz_require(numel == t->numel, "numel %zu for shape product %zu", t->numel, numel);
        if (!safetensors_dtype_is_float(t->dtype)) {
            fuzz_require(t->data == NULL, "integer tensor %s has float data", t->name);
            continue;
        }
        if (t->numel == 0) continue;
        fuzz_require(t->data && ((uintptr_t)t->data % sizeof(float)) == 0, "data misaligned");
        volatile uint32_t acc = 0;  // touch every float: AddressSanitizer checks the bounds
        for (size_t k = 0; k < t->numel; k++) {
            uint32_t bits;
            memcpy(&bits, &t->data[k], 4);
            acc ^= bits;
        }
        (void)acc;
    }
    for (int i = 0; i < f->n_meta; i++)
        fuzz_require(f->meta[i].key && f->meta[i].value &&
                         safetensors_meta(f, f->meta[i].key) != NULL,
                     "metadata %d", i);
    fuzz_safetensors_read_back(f, name);
}

// The header-only readers against the whole-file load `whole` (status rw): the same verdict,
// the same tensors, and each float tensor read to the same bits.
static void fuzz_safetensors_open(const SafetensorsFile *whole, int rw, const uint8_t *data,
                                  size_t size, const char *path) {
    for (int from_file = 0; from_file < 2; from_file++) {
        SafetensorsFile o;
        Error err = {{0}};
        const char *name = from_file ? path : "fuzz.safetensors";
        int ro = from_file ? safetensors_open(&o, path, &err)
                           : safetensors_open_memory(&o, data, size, name, &err);
        fuzz_require(ro == rw, "open (%s) and load disagree: %d (%s) vs %d", name, ro,
                     ro ? err.msg : "ok", rw);
        if (ro != 0) {
            fuzz_require_error(&err, name);
            fuzz_require(o.tensors == NULL && o.buffer_ == NULL, "failed open left tensors behind");
            continue;
        }
        fuzz_require(o.count == whole->count && o.n_meta == whole->n_meta, "open: counts differ");
        for (int i = 0; i < o.count; i++) {
            const SafetensorsTensor *t = &o.tensors[i], *w = &whole->tensors[i];
            fuzz_require(strcmp(t->name, w->name) == 0 && t->numel == w->numel &&
                             t->dtype == w->dtype && t->data == NULL,
                         "open: tensor %d differs", i);
            if (t->numel > (1u << 20)) continue;
            float *buf = malloc(t->numel ? t->numel * sizeof(float) : 1);
            int rr = safetensors_read_floats(buf, &o, t, &err);
            if (safetensors_dtype_is_float(t->dtype)) {
                fuzz_require(rr == 0, "read_floats of %s failed: %s", t->name, err.msg);
                fuzz_require(t->numel == 0 || memcmp(buf, w->data, t->numel * sizeof(float)) == 0,
                             "read_floats of %s differs from the whole-file load", t->name);
            } else {
                fuzz_require(rr == -1, "read_floats accepted integer tensor %s", t->name);
                fuzz_require_error(&err, name);
            }
            free(buf);
        }
        safetensors_free(&o);
    }
}

int fuzz_safetensors_one(const uint8_t *data, size_t size) {
    SafetensorsFile m, f;
    Error em = {{0}}, ef = {{0}};
    int rm = safetensors_load_memory(&m, data, size, "fuzz.safetensors", &em);
    fuzz_safetensors_check(&m, rm, &em, "fuzz.safetensors");
    const char *path = fuzz_tmp_path("fuzz.safetensors");
    fuzz_write_file(path, data, size);
    int rf = safetensors_load(&f, path, &ef);
    fuzz_safetensors_check(&f, rf, &ef, path);
    fuzz_require(rm == rf, "memory and file loads disagree: %d (%s) vs %d (%s)", rm,
                 rm ? em.msg : "ok", rf, rf ? ef.msg : "ok");
    if (rm == 0) {
        fuzz_require(m.count == f.count && m.n_meta == f.n_meta, "memory and file loads differ");
        for (int i = 0; i < m.count; i++)
            fuzz_require(strcmp(m.tensors[i].name, f.tensors[i].name) == 0 &&
                             m.tensors[i].numel == f.tensors[i].numel &&
                             m.tensors[i].dtype == f.tensors[i].dtype &&
                             (m.tensors[i].numel == 0 || !m.tensors[i].data ||
                              memcmp(m.tensors[i].data, f.tensors[i].data,
                                     m.tensors[i].numel * sizeof(float)) == 0),
                         "tensor %d differs between memory and file loads", i);
    }
    fuzz_safetensors_open(&m, rm, data, size, path);
    safetensors_free(&m);
    safetensors_free(&f);
    return rm == 0;
}

#ifndef FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_safetensors_one(data, size);
    return 0;
}
#endif
