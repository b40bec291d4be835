// test_core_block.c: Block layout: views at the right offsets, 64-byte alignment, no
// overlaps, lookup by name, zeroing, the same layout for a second (gradient) block, and clones.
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/block.h"
#include "tests/support/test.h"

typedef struct {
    float *w, *b, *emb, *scalar, *empty;
} Params;

static void layout(Block *blk, Params *p) {
    block_add(blk, &p->w, "enc.w", 2, 7, 5);         // 35 floats
    block_add(blk, &p->b, "enc.b", 1, 5);            // 5
    block_add(blk, &p->emb, "emb", 3, 2, 3, 4);      // 24
    block_add(blk, &p->scalar, "scalar", 1, 1);      // 1
    block_add(blk, &p->empty, "empty", 2, 0, 9);     // 0
}

static void test_block_views_and_alignment(void) {
    Block blk = {0};
    Params p = {0};
    layout(&blk, &p);
    EXPECT(blk.count == 5 && blk.data == NULL);
    block_alloc(&blk);
    EXPECT(blk.data != NULL);
    float *views[5] = {p.w, p.b, p.emb, p.scalar, p.empty};
    const size_t numel[5] = {35, 5, 24, 1, 0};
    for (int i = 0; i < 5; i++) {
        const BlockTensor *t = &blk.tensors[i];
        EXPECT(views[i] == blk.data + t->offset, "%s view not at its offset", t->name);
        EXPECT(((uintptr_t)views[i] % 64) == 0, "%s not 64-byte aligned", t->name);
        EXPECT(t->numel == numel[i], "%s numel %zu", t->name, t->numel);
        EXPECT(t->offset + t->numel <= blk.numel, "%s past the end", t->name);
        if (i > 0) {
            const BlockTensor *prev = &blk.tensors[i - 1];
            EXPECT(t->offset >= prev->offset + prev->numel, "%s overlaps %s", t->name, prev->name);
        }
    }
    EXPECT(blk.tensors[2].ndim == 3 && blk.tensors[2].shape[0] == 2 && blk.tensors[2].shape[1] == 3 &&
           blk.tensors[2].shape[2] == 4);
    // Zeroed at allocation; writes through a view land in data and survive neighbours.
    for (size_t i = 0; i < blk.numel; i++) EXPECT(blk.data[i] == 0.0f);
    for (int i = 0; i < 35; i++) p.w[i] = 1.0f;
    for (int i = 0; i < 5; i++) p.b[i] = 2.0f;
    EXPECT(p.w[34] == 1.0f && p.b[0] == 2.0f);
    block_zero(&blk);
    EXPECT(p.w[34] == 0.0f && p.b[0] == 0.0f);
    block_free(&blk);
    EXPECT(blk.data == NULL && blk.count == 0);
}

static void test_block_find(void) {
    Block blk = {0};
    Params p = {0};
    layout(&blk, &p);
    block_alloc(&blk);
    const BlockTensor *t = block_find(&blk, "emb");
    EXPECT(t && blk.data + t->offset == p.emb);
    EXPECT(block_find(&blk, "enc.b") && block_find(&blk, "enc.b")->numel == 5);
    EXPECT(block_find(&blk, "enc") == NULL);
    EXPECT(block_find(&blk, "missing") == NULL);
    block_free(&blk);
}

// The same layout function on a second block gives identical offsets (gradients, moments).
static void test_block_second_layout_matches(void) {
    Block a = {0}, g = {0};
    Params pa = {0}, pg = {0};
    layout(&a, &pa);
    layout(&g, &pg);
    block_alloc(&a);
    block_alloc(&g);
    EXPECT(a.numel == g.numel);
    for (int i = 0; i < a.count; i++) EXPECT(a.tensors[i].offset == g.tensors[i].offset);
    EXPECT(pa.emb - a.data == pg.emb - g.data);
    block_free(&a);
    block_free(&g);
}

static void test_block_many_tensors_grow(void) {
    Block blk = {0};
    enum { N = 100 };
    float *views[N];
    char name[32];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "t%d", i);
        block_add(&blk, &views[i], name, 1, i + 1);
    }
    block_alloc(&blk);
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "t%d", i);
        const BlockTensor *t = block_find(&blk, name);
        EXPECT(t && t->numel == (size_t)i + 1 && views[i] == blk.data + t->offset, "%s", name);
        views[i][i] = (float)i;  // last element of each: writes must not collide
    }
    for (int i = 0; i < N; i++) EXPECT(views[i][i] == (float)i);
    block_free(&blk);
}

// Every position of every tensor: a NaN, +inf or -inf there names that tensor (the first
// such tensor when two hold one); the largest finite float and subnormals do not.
static void test_block_first_nonfinite(void) {
    Block b = {0};
    float *x, *y;
    block_add(&b, &x, "x", 1, 37);
    block_add(&b, &y, "y", 2, 5, 3);
    block_alloc(&b);
    EXPECT(block_first_nonfinite(&b) == NULL, "zeros reported");
    x[3] = 3.4028235e38f;
    y[14] = -1e-45f;
    EXPECT(block_first_nonfinite(&b) == NULL, "finite extremes reported");
    const float bad[3] = {NAN, INFINITY, -INFINITY};
    for (int k = 0; k < 3; k++)
        for (int t = 0; t < b.count; t++)
            for (size_t i = 0; i < b.tensors[t].numel; i++) {
                float *e = b.data + b.tensors[t].offset + i, keep = *e;
                *e = bad[k];
                const char *name = block_first_nonfinite(&b);
                EXPECT(name && strcmp(name, b.tensors[t].name) == 0, "%s[%zu] = %g: got %s",
                       b.tensors[t].name, i, (double)bad[k], name ? name : "NULL");
                *e = keep;
            }
    x[36] = NAN;
    y[0] = INFINITY;
    const char *name = block_first_nonfinite(&b);
    EXPECT(name && strcmp(name, "x") == 0, "two bad tensors: got %s", name ? name : "NULL");
    block_free(&b);
}

// A clone has the same names, shapes and offsets, its own copy of the data, and moves no
// views of the original.
static void test_block_clone(void) {
    Block a = {0}, c = {0};
    Params pa = {0};
    layout(&a, &pa);
    block_alloc(&a);
    for (size_t i = 0; i < a.numel; i++) a.data[i] = (float)i * 0.5f;
    float *w_before = pa.w;
    block_clone(&c, &a);
    EXPECT(c.count == a.count && c.numel == a.numel && c.data != a.data);
    for (int i = 0; i < a.count; i++) {
        EXPECT(!strcmp(c.tensors[i].name, a.tensors[i].name));
        EXPECT(c.tensors[i].ndim == a.tensors[i].ndim && c.tensors[i].offset == a.tensors[i].offset);
        for (int d = 0; d < a.tensors[i].ndim; d++) EXPECT(c.tensors[i].shape[d] == a.tensors[i].shape[d]);
        EXPECT(c.tensors[i].view == NULL);
    }
    EXPECT(!memcmp(c.data, a.data, a.numel * sizeof(float)));
    EXPECT(pa.w == w_before);
    c.data[3] = -1.0f;
    EXPECT(a.data[3] == 1.5f);
    block_free(&a);
    block_free(&c);
}

int main(void) {
    RUN(test_block_views_and_alignment);
    RUN(test_block_find);
    RUN(test_block_second_layout_matches);
    RUN(test_block_many_tensors_grow);
    RUN(test_block_first_nonfinite);
    RUN(test_block_clone);
    return test_summary();
}
