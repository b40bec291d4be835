// checkpoint.c: see checkpoint.h.
#include "tests/support/checkpoint.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/block.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "tests/support/test.h"

int checkpoints_identical(const char *a, const char *b, const char *key, char *why, size_t cap) {
    SafetensorsFile fa, fb;
    Error err;
    if (safetensors_load(&fa, a, &err)) return snprintf(why, cap, "%s", err.msg), 0;
    if (safetensors_load(&fb, b, &err)) {
        safetensors_free(&fa);
        return snprintf(why, cap, "%s", err.msg), 0;
    }
    int ok = fa.count == fb.count && fa.count > 0;
    if (!ok) snprintf(why, cap, "%d vs %d tensors", fa.count, fb.count);
    for (int i = 0; ok && i < fa.count; i++) {
        const SafetensorsTensor *ta = &fa.tensors[i], *tb = safetensors_find(&fb, ta->name);
        if (!tb || tb->numel != ta->numel ||
            memcmp(ta->data, tb->data, ta->numel * sizeof(float)) != 0) {
            snprintf(why, cap, "tensor %s differs", ta->name);
            ok = 0;
        }
    }
    if (ok && key) {
        const char *ma = safetensors_meta(&fa, key), *mb = safetensors_meta(&fb, key);
        if (!ma || !mb || strcmp(ma, mb) != 0) {
            snprintf(why, cap, "metadata %s: %s vs %s", key, ma ? ma : "-", mb ? mb : "-");
            ok = 0;
        }
    }
    safetensors_free(&fa);
    safetensors_free(&fb);
    return ok;
}

// Copies checkpoint src to dst (float32 tensors) with metadata key set to value (NULL:
// removed; key NULL: none changed) and, when tensor is not NULL, that tensor's first value
// replaced by x.
static int rewrite(const char *src, const char *dst, const char *key, const char *value,
                   const char *tensor, float x) {
    SafetensorsFile f;
    Error err;
    if (safetensors_load(&f, src, &err)) {
        EXPECT(0, "%s", err.msg);
        return -1;
    }
    Block b = {0};
    for (int i = 0; i < f.count; i++) {
        const SafetensorsTensor *t = &f.tensors[i];
        const int64_t *s = t->shape;
        switch (t->ndim) {
        case 1: block_add(&b, NULL, t->name, 1, (int)s[0]); break;
        case 2: block_add(&b, NULL, t->name, 2, (int)s[0], (int)s[1]); break;
        case 3: block_add(&b, NULL, t->name, 3, (int)s[0], (int)s[1], (int)s[2]); break;
        default: block_add(&b, NULL, t->name, 4, (int)s[0], (int)s[1], (int)s[2], (int)s[3]); break;
        }
    }
    block_alloc(&b);
    int changed = !tensor;
    for (int i = 0; i < f.count; i++) {
        float *d = b.data + b.tensors[i].offset;
        memcpy(d, f.tensors[i].data, f.tensors[i].numel * sizeof(float));
        if (tensor && !strcmp(f.tensors[i].name, tensor) && f.tensors[i].numel)
            d[0] = x, changed = 1;
    }
    EXPECT(changed, "%s: no tensor '%s' to change", src, tensor);
    SafetensorsMeta *meta = calloc((size_t)f.n_meta + 1, sizeof *meta);
    int n = 0, found = 0;
    for (int i = 0; i < f.n_meta; i++) {
        if (key && !strcmp(f.meta[i].key, key)) {
            found = 1;
            if (!value) continue;
            meta[n] = (SafetensorsMeta){f.meta[i].key, value};
        } else {
            meta[n] = f.meta[i];
        }
        n++;
    }
    if (key && !found && value) meta[n++] = (SafetensorsMeta){key, value};
    const Block *blocks[1] = {&b};
    int r = safetensors_save(dst, blocks, NULL, 1, meta, n, &err);
    EXPECT(r == 0, "%s", err.msg);
    free(meta);
    block_free(&b);
    safetensors_free(&f);
    return r || !changed ? -1 : 0;
}

int checkpoint_rewrite_meta(const char *src, const char *dst, const char *key, const char *value) {
    return rewrite(src, dst, key, value, NULL, 0.0f);
}

int checkpoint_set_value(const char *src, const char *dst, const char *tensor, float x) {
    return rewrite(src, dst, NULL, NULL, tensor, x);
}
