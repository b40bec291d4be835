// draw_checkpoint.c: bin/draw's checkpoints (cli/draw_checkpoint.h).
#include "cli/draw_checkpoint.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"

int draw_checkpoint_write(const char *path, const DrawTrainState *s, const Block *params,
                          const Block *m, const Block *v, Error *err) {
    char buf[17][64];
    const DrawConfig *c = &s->cfg;
    int k = 0;
    SafetensorsMeta meta[24];
#define META_INT(key, val)                                     \
    snprintf(buf[k], sizeof buf[k], "%lld", (long long)(val)); \
    meta[k] = (SafetensorsMeta){key, buf[k]};                  \
    k++
#define META_FLOAT(key, val)                         \
    snprintf(buf[k], sizeof buf[k], "%.9g", (double)(val)); \
    meta[k] = (SafetensorsMeta){key, buf[k]};        \
    k++
    META_INT("draw.W", c->W);
    META_INT("draw.H", c->H);
    META_INT("draw.T", c->T);
    META_INT("draw.read_n", c->read_n);
    META_INT("draw.write_n", c->write_n);
    META_INT("draw.enc", c->enc);
    META_INT("draw.dec", c->dec);
    META_INT("draw.z", c->z);
    META_INT("draw.attention", c->attention);
    META_INT("train.step", s->step);
    META_INT("train.batch", s->optim.batch);
    META_INT("train.binarize", s->binarize);
    META_FLOAT("train.lr", s->optim.lr);
    META_FLOAT("train.beta1", s->optim.beta1);
    META_FLOAT("train.clip", s->optim.clip);
    CHECK(k == 15);
    // Grey checkpoints carry no channel count, as before colour existed (same bytes).
    if (draw_channels(c) > 1) {
        META_INT("draw.channels", draw_channels(c));
    }
    char seed[32];
    snprintf(seed, sizeof seed, "%" PRIu64, s->optim.seed);
    meta[k++] = (SafetensorsMeta){"train.seed", seed};
    meta[k++] = (SafetensorsMeta){"train.data", s->data};
    meta[k++] = (SafetensorsMeta){"format", "attend-draw-1"};
#undef META_INT
#undef META_FLOAT
    return train_checkpoint_save(path, params, m, v, meta, k, err);
}

static int meta_long(const SafetensorsFile *f, const char *path, const char *key, long *out,
                     Error *err) {
    return safetensors_meta_long(f, path, key, "a DRAW checkpoint", LONG_MIN, LONG_MAX, out, err);
}

int draw_checkpoint_read_state(const SafetensorsFile *f, const char *path, DrawTrainState *s,
                               Error *err) {
    memset(s, 0, sizeof *s);
    const char *fmt = safetensors_meta(f, "format");
    if (fmt && strncmp(fmt, "attend-draw-", 12) == 0 && strcmp(fmt, "attend-draw-1") != 0)
        return error_set(err, "%s: DRAW checkpoint layout '%s' is not supported (this build reads attend-draw-1)",
                         path, fmt);
    if (!fmt || strcmp(fmt, "attend-draw-1") != 0)
        return error_set(err, "%s: not a DRAW checkpoint (format '%s', expected attend-draw-1%s)",
                         path, fmt ? fmt : "missing", fmt && !strcmp(fmt, "attend-sat") ? "; this is a captioner model" : "");
    long v[12];
    static const char *const keys[] = {"draw.W", "draw.H", "draw.T", "draw.read_n", "draw.write_n",
                                       "draw.enc", "draw.dec", "draw.z", "draw.attention",
                                       "train.step", "train.batch", "train.binarize"};
    for (int i = 0; i < 12; i++) {
        if (meta_long(f, path, keys[i], &v[i], err)) return -1;
        if (v[i] < 0 || v[i] > 2000000000L)
            return error_set(err, "%s: metadata %s = %ld out of range", path, keys[i], v[i]);
    }
    s->cfg = (DrawConfig){.W = (int)v[0], .H = (int)v[1], .T = (int)v[2], .read_n = (int)v[3],
                          .write_n = (int)v[4], .enc = (int)v[5], .dec = (int)v[6], .z = (int)v[7],
                          .attention = v[8] != 0};
    const char *ch = safetensors_meta(f, "draw.channels");
    if (ch) {
        long nc = 0;
        if (meta_long(f, path, "draw.channels", &nc, err)) return -1;
        if (nc < 1 || nc > DRAW_MAX_CHANNELS)
            return error_set(err, "%s: metadata draw.channels = %ld out of range", path, nc);
        s->cfg.channels = (int)nc;
    }
    s->step = v[9];
    s->optim.batch = (int)v[10];
    s->binarize = v[11] != 0;
    if (safetensors_meta_float(f, path, "train.lr", &s->optim.lr, err) ||
        safetensors_meta_float(f, path, "train.beta1", &s->optim.beta1, err) ||
        safetensors_meta_float(f, path, "train.clip", &s->optim.clip, err))
        return -1;
    const char *seed = safetensors_meta(f, "train.seed");
    if (!seed) return error_set(err, "%s: no \"train.seed\" in __metadata__", path);
    char *end;
    s->optim.seed = strtoull(seed, &end, 10);
    if (end == seed || *end) return error_set(err, "%s: metadata train.seed = '%s' is not an integer", path, seed);
    const char *data = safetensors_meta(f, "train.data");
    snprintf(s->data, sizeof s->data, "%s", data ? data : "");
    Error e2;
    // e2's message is in the field form already: prefixed, never formatted again
    if (draw_config_check(&s->cfg, &e2)) return error_wrap(err, &e2, "%s", path);
    if (s->optim.batch < 1) return error_set(err, "%s: metadata train.batch = %d", path, s->optim.batch);
    return 0;
}

int draw_checkpoint_load(DrawCheckpoint *m, const char *path, Error *err) {
    memset(m, 0, sizeof *m);
    SafetensorsFile f;
    if (safetensors_load(&f, path, err)) return -1;
    int rc = draw_checkpoint_read_state(&f, path, &m->state, err);
    if (rc == 0) {
        draw_layout(&m->params, &m->p, &m->state.cfg);
        // checked before the allocation: the metadata may claim any size
        rc = safetensors_alloc_read_block(&m->params, "", &f, path, err);
    }
    safetensors_free(&f);
    return rc;
}
