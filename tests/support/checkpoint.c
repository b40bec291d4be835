// checkpoint.c: see checkpoint.h.
#include "tests/support/checkpoint.h"

#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/safetensors.h"

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
