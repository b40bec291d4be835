// draw_checkpoint.c: bin/draw's checkpoints (cli/draw_checkpoint.h).
#include "cli/draw_checkpoint.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "core/check.h"

int draw_checkpoint_write(const char *path, const DrawTrainState *s, const Block *params,
                          const Block *m, const Block *v, const Block *avg, Error *err) {
    CHECK(!avg || s->ema > 0, "a weight average needs its decay");
    char buf[14][32], ema[32];
    const DrawConfig *c = &s->cfg;
    int k = 0;
    SafetensorsMeta meta[24];
#define META_INT(key, val)                                     \
    snprintf(buf[k], sizeof buf[k], "%lld", (long long)(val)); \
    meta[k] = (SafetensorsMeta){key, buf[k]};                  \
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
    META_INT("train.binarize", s->binarize);
    // Grey checkpoints carry no channel count, as before colour existed.
    if (draw_channels(c) > 1) {
        META_INT("draw.channels", draw_channels(c));
    }
    // Nor do checkpoints without peepholes carry the field.
    if (c->peepholes) {
        META_INT("draw.peepholes", 1);
    }
    // Nor do unconditional ones carry a class count: a file without one is unconditional.
    if (c->classes) {
        META_INT("draw.classes", c->classes);
    }
#undef META_INT
    TrainOptimMeta om;
    train_optim_meta(&om, &s->optim, TRAIN_OPTIM_BETA1);
    for (int i = 0; i < om.n; i++) meta[k++] = om.meta[i];
    if (avg) {
        snprintf(ema, sizeof ema, "%.9g", (double)s->ema);
        meta[k++] = (SafetensorsMeta){"train.ema", ema};
    }
    meta[k++] = (SafetensorsMeta){"train.data", s->data};
    meta[k++] = (SafetensorsMeta){"format", "attend-draw-1"};
    CHECK(k <= 24);
    const Block *blocks[4] = {params, m, v, avg};
    const char *prefixes[4] = {"", TRAIN_ADAM_M_PREFIX, TRAIN_ADAM_V_PREFIX, TRAIN_EMA_PREFIX};
    if (m) return safetensors_save(path, blocks, prefixes, avg ? 4 : 3, meta, k, err);
    blocks[1] = avg, prefixes[1] = TRAIN_EMA_PREFIX;  // a model file: the weights, the average
    return safetensors_save(path, blocks, prefixes, avg ? 2 : 1, meta, k, err);
}

// train.ema: absent (0: no average) or a decay in (0, 1).
static int read_ema(const SafetensorsFile *f, const char *path, float *ema, Error *err) {
    *ema = 0;
    if (!safetensors_meta(f, "train.ema")) return 0;
    if (safetensors_meta_float(f, path, "train.ema", ema, err)) return -1;
    if (!(*ema > 0 && *ema < 1))
        return error_set(err, "%s: metadata train.ema = %g out of range (0, 1)", path, (double)*ema);
    return 0;
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
    long v[11];
    static const char *const keys[] = {"draw.W", "draw.H", "draw.T", "draw.read_n", "draw.write_n",
                                       "draw.enc", "draw.dec", "draw.z", "draw.attention",
                                       "train.step", "train.binarize"};
    for (int i = 0; i < 11; i++) {
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
    if (safetensors_meta(f, "draw.peepholes")) {
        long pe = 0;
        if (meta_long(f, path, "draw.peepholes", &pe, err)) return -1;
        if (pe != 0 && pe != 1)
            return error_set(err, "%s: metadata draw.peepholes = %ld is not 0 or 1", path, pe);
        s->cfg.peepholes = (int)pe;
    }
    if (safetensors_meta(f, "draw.classes")) {
        long k = 0;
        if (meta_long(f, path, "draw.classes", &k, err)) return -1;
        if (k < 2 || k > DRAW_MAX_CLASSES)
            return error_set(err, "%s: metadata draw.classes = %ld out of range [2, %d]", path, k,
                             DRAW_MAX_CLASSES);
        s->cfg.classes = (int)k;
    }
    s->step = v[9];
    s->binarize = v[10] != 0;
    if (train_optim_read(f, path, TRAIN_OPTIM_BETA1, DRAW_BATCH_MAX, &s->optim, err) ||
        read_ema(f, path, &s->ema, err))
        return -1;
    const char *data = safetensors_meta(f, "train.data");
    snprintf(s->data, sizeof s->data, "%s", data ? data : "");
    Error e2;
    // e2's message is in the field form already: prefixed, never formatted again
    if (draw_config_check(&s->cfg, &e2)) return error_wrap(err, &e2, "%s", path);
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
    if (rc == 0 && m->state.ema > 0) {
        block_layout_like(&m->average, &m->params);
        rc = safetensors_alloc_read_block(&m->average, TRAIN_EMA_PREFIX, &f, path, err);
    }
    safetensors_free(&f);
    if (rc) draw_checkpoint_free(m);
    return rc;
}

bool draw_checkpoint_use_average(DrawCheckpoint *m) {
    if (!m->average.data) return false;
    memcpy(m->params.data, m->average.data, m->params.numel * sizeof(float));
    return true;
}

void draw_checkpoint_free(DrawCheckpoint *m) {
    block_free(&m->params);
    block_free(&m->average);
}
