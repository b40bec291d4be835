#include "core/block.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/check.h"
#include "core/dims.h"

void block_add(Block *b, float **view, const char *name, int ndim, ...) {
    CHECK(ndim >= 1 && ndim <= BLOCK_MAX_DIMS, "%s: ndim %d", name, ndim);
    CHECK(strlen(name) < BLOCK_NAME_LEN, "tensor name too long: %s", name);
    CHECK(!block_find(b, name), "duplicate tensor name %s", name);
    CHECK(!b->data, "block_add(%s) after block_alloc", name);
    if (b->count == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 16;
        b->tensors = xrealloc(b->tensors, (size_t)b->cap * sizeof *b->tensors);
    }
    BlockTensor *t = &b->tensors[b->count++];
    memset(t, 0, sizeof *t);
    strcpy(t->name, name);
    t->ndim = ndim;
    t->numel = 1;
    va_list ap;
    va_start(ap, ndim);
    for (int i = 0; i < ndim; i++) {
        int d = va_arg(ap, int);
        CHECK(d >= 0, "%s: negative dimension", name);
        t->shape[i] = d;
        CHECK(dims_mul(&t->numel, t->numel, (size_t)d), "%s: size past SIZE_MAX", name);
    }
    va_end(ap);
    // Keep every tensor 16-float (64-byte) aligned.
    t->offset = (b->numel + 15) & ~(size_t)15;
    b->numel = t->offset + t->numel;
    t->view = view;
}

// A block that cannot be allocated: its size and its tensors named in the one line.
static _Noreturn void block_out_of_memory(const Block *b, size_t bytes) {
    char what[200];
    if (b->count == 1)
        snprintf(what, sizeof what, "the tensor %s", b->tensors[0].name);
    else if (b->count > 1)
        snprintf(what, sizeof what, "%d tensors (%s, ...)", b->count, b->tensors[0].name);
    else
        snprintf(what, sizeof what, "an empty block");
    check_out_of_memory(bytes, what);
}

void block_alloc(Block *b) {
    CHECK(!b->data);
    size_t bytes = ((b->numel * sizeof(float)) + 63) & ~(size_t)63;
    if (bytes >= BLOCK_MAP_BYTES) {
        // Zero pages from the system: a page costs memory once something writes it.
        void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) block_out_of_memory(b, bytes);
        b->data = p;
        b->mapped = bytes;
    } else {
        b->data = aligned_alloc(64, bytes ? bytes : 64);
        if (!b->data) block_out_of_memory(b, bytes);
        memset(b->data, 0, bytes);
    }
    for (int i = 0; i < b->count; i++)
        if (b->tensors[i].view) *b->tensors[i].view = b->data + b->tensors[i].offset;
}

void block_free(Block *b) {
    if (b->mapped)
        munmap(b->data, b->mapped);
    else
        free(b->data);
    free(b->tensors);
    memset(b, 0, sizeof *b);
}

void block_zero(Block *b) {
    if (b->data) memset(b->data, 0, b->numel * sizeof(float));
}

void block_layout_like(Block *dst, const Block *src) {
    CHECK(!dst->data && !dst->count);
    for (int i = 0; i < src->count; i++) {
        const BlockTensor *t = &src->tensors[i];
        block_add(dst, NULL, t->name, t->ndim, (int)t->shape[0], t->ndim > 1 ? (int)t->shape[1] : 0,
                  t->ndim > 2 ? (int)t->shape[2] : 0, t->ndim > 3 ? (int)t->shape[3] : 0);
    }
}

void block_clone(Block *dst, const Block *src) {
    CHECK(src->data);
    block_layout_like(dst, src);
    block_alloc(dst);
    CHECK(dst->numel == src->numel);
    memcpy(dst->data, src->data, src->numel * sizeof(float));
}

const BlockTensor *block_find(const Block *b, const char *name) {
    for (int i = 0; i < b->count; i++)
        if (strcmp(b->tensors[i].name, name) == 0) return &b->tensors[i];
    return NULL;
}

const char *block_first_nonfinite(const Block *b) {
    for (int i = 0; i < b->count; i++) {
        const float *x = b->data + b->tensors[i].offset;
        // A NaN or an infinity has every exponent bit set; an integer OR over the tensor
        // (no early exit, no float reduction) lets the compiler vectorise the loop.
        uint32_t bad = 0;
        for (size_t j = 0; j < b->tensors[i].numel; j++) {
            uint32_t u;
            memcpy(&u, &x[j], sizeof u);
            bad |= (uint32_t)((u & 0x7f800000u) == 0x7f800000u);
        }
        if (bad) return b->tensors[i].name;
    }
    return NULL;
}
