#include "cli/classify_common.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/train_run.h"
#include "core/check.h"
#include "core/rng.h"

uint64_t classify_train_clutter_seed(uint64_t seed) { return rng_mix(seed, 0xC1A77E4ULL); }

int classify_save(const char *path, const ClassifyState *s, const Block *params, const Block *m,
                  const Block *v, Error *err) {
    char buf[24][64];
    SafetensorsMeta meta[28];
    int k = 0;
#define META(key, fmt, val)                                  \
    snprintf(buf[k], sizeof buf[k], fmt, val);               \
    meta[k] = (SafetensorsMeta){key, buf[k]};                \
    k++
    const ClassifierConfig *cc = &s->cfg;
    META("classify.model", "%s", classifier_kind_name(cc->kind));
    if (cc->kind == CLASSIFIER_GLIMPSE) {
        const GlimpseConfig *c = &cc->glimpse;
        META("glimpse.W", "%d", c->W);
        META("glimpse.H", "%d", c->H);
        META("glimpse.T", "%d", c->T);
        META("glimpse.read_n", "%d", c->read_n);
        META("glimpse.hidden", "%d", c->hidden);
        META("glimpse.classes", "%d", c->classes);
        META("glimpse.attention", "%d", c->attention);
        META("glimpse.hard", "%d", c->hard);
        META("glimpse.loc_std", "%.9g", (double)c->loc_std);
        META("glimpse.scales", "%d", c->scales);
        META("glimpse.gnet", "%d", c->gnet);
    } else {
        const ConvnetConfig *c = &cc->cnn;
        META("cnn.S", "%d", c->S);
        META("cnn.layers", "%d", c->layers);
        META("cnn.channels1", "%d", c->channels[0]);
        META("cnn.channels2", "%d", c->layers > 1 ? c->channels[1] : 0);
        META("cnn.fc", "%d", c->fc);
        META("cnn.classes", "%d", c->classes);
    }
    META("clutter.fragments", "%d", s->clutter.fragments);
    META("clutter.fragment", "%d", s->clutter.fragment);
    META("train.step", "%ld", s->step);
#undef META
    TrainOptimMeta om;
    train_optim_meta(&om, &s->optim, TRAIN_OPTIM_BETA1);
    for (int i = 0; i < om.n; i++) meta[k++] = om.meta[i];
    meta[k++] = (SafetensorsMeta){"train.data", s->data};
    meta[k++] = (SafetensorsMeta){"format", CLASSIFY_FORMAT};
    return train_checkpoint_save(path, params, m, v, meta, k, err);
}

static int meta_long(const SafetensorsFile *f, const char *path, const char *key, long lo,
                     long hi, long *out, Error *err) {
    return safetensors_meta_long(f, path, key, "a classifier checkpoint", lo, hi, out, err);
}

// The glimpse model's configuration from its metadata.
static int read_glimpse_config(const SafetensorsFile *f, const char *path, ClassifierConfig *cfg,
                               Error *err) {
    static const char *const keys[] = {"glimpse.W", "glimpse.H", "glimpse.T", "glimpse.read_n",
                                       "glimpse.hidden", "glimpse.classes", "glimpse.attention"};
    long v[7];
    for (int i = 0; i < 7; i++)
        if (meta_long(f, path, keys[i], 0, 1000000L, &v[i], err)) return -1;
    // Checkpoints written before hard attention existed have neither key: soft.
    long hard = 0, scales = 0;
    float loc_std = 0.0f;
    if (safetensors_meta(f, "glimpse.hard") &&
        (meta_long(f, path, "glimpse.hard", 0, 1, &hard, err) ||
         safetensors_meta_float(f, path, "glimpse.loc_std", &loc_std, err)))
        return -1;
    // Hard models before the retina (one window of learned size, no glimpse.scales) are
    // another model: refused rather than read wrongly.
    if (hard && !safetensors_meta(f, "glimpse.scales"))
        return error_set(err, "%s: a hard-attention model from before the retina (no glimpse.scales); train it again", path);
    if (hard && meta_long(f, path, "glimpse.scales", 1, GLIMPSE_MAX_SCALES, &scales, err)) return -1;
    long gnet = 0;  // checkpoints from before the glimpse network have no key: none
    if (hard && safetensors_meta(f, "glimpse.gnet") && meta_long(f, path, "glimpse.gnet", 0, 65536, &gnet, err))
        return -1;
    cfg->kind = CLASSIFIER_GLIMPSE;
    cfg->glimpse = (GlimpseConfig){.W = (int)v[0], .H = (int)v[1], .T = (int)v[2],
                                   .read_n = (int)v[3], .hidden = (int)v[4],
                                   .classes = (int)v[5], .attention = v[6] != 0,
                                   .hard = (int)hard, .loc_std = loc_std,
                                   .scales = (int)scales, .gnet = (int)gnet};
    return 0;
}

// The convolutional baseline's configuration from its metadata.
static int read_cnn_config(const SafetensorsFile *f, const char *path, ClassifierConfig *cfg, Error *err) {
    static const char *const keys[] = {"cnn.S", "cnn.layers", "cnn.channels1", "cnn.channels2",
                                       "cnn.fc", "cnn.classes"};
    long v[6];
    for (int i = 0; i < 6; i++)
        if (meta_long(f, path, keys[i], 0, 1000000L, &v[i], err)) return -1;
    if (v[1] < 1 || v[1] > 2) return error_set(err, "%s: metadata cnn.layers = %ld (1 or 2)", path, v[1]);
    cfg->kind = CLASSIFIER_CNN;
    cfg->cnn = (ConvnetConfig){.S = (int)v[0], .layers = (int)v[1],
                               .channels = {(int)v[2], (int)v[3]}, .fc = (int)v[4],
                               .classes = (int)v[5]};
    return 0;
}

// The clutter, the step reached, the optimiser's settings, the seed and the data of the run.
static int read_training(const SafetensorsFile *f, const char *path, ClassifyState *s, Error *err) {
    static const char *const tkeys[] = {"clutter.fragments", "clutter.fragment", "train.step"};
    long tv[3];
    for (int i = 0; i < 3; i++)
        if (meta_long(f, path, tkeys[i], 0, 2000000000L, &tv[i], err)) return -1;
    s->clutter = (ClutterConfig){.W = classifier_width(&s->cfg), .H = classifier_height(&s->cfg),
                                 .fragments = (int)tv[0], .fragment = (int)tv[1]};
    s->step = tv[2];
    if (train_optim_read(f, path, TRAIN_OPTIM_BETA1, CLASSIFY_BATCH_MAX, &s->optim, err)) return -1;
    const char *data = safetensors_meta(f, "train.data");
    snprintf(s->data, sizeof s->data, "%s", data && data[0] ? data : "mnist");
    return 0;
}

int classify_read_state(const SafetensorsFile *f, const char *path, ClassifyState *s, Error *err) {
    memset(s, 0, sizeof *s);
    const char *fmt = safetensors_meta(f, "format");
    if (!fmt || strcmp(fmt, CLASSIFY_FORMAT) != 0)
        return error_set(err, "%s: not a classifier checkpoint (format '%s', expected %s%s)", path,
                         fmt ? fmt : "missing", CLASSIFY_FORMAT,
                         fmt && !strncmp(fmt, "attend-draw", 11) ? "; this is a DRAW generator: use draw eval" : "");
    const char *kind = safetensors_meta(f, "classify.model");
    if (!kind || (strcmp(kind, "glimpse") != 0 && strcmp(kind, "cnn") != 0))
        return error_set(err, "%s: metadata classify.model = '%s' (expected glimpse or cnn)", path,
                         kind ? kind : "missing");
    if ((strcmp(kind, "glimpse") == 0 ? read_glimpse_config(f, path, &s->cfg, err)
                                      : read_cnn_config(f, path, &s->cfg, err)) ||
        read_training(f, path, s, err))
        return -1;
    Error e2;
    // e2's message is in the field form already: prefixed, never formatted again
    if (classifier_config_check(&s->cfg, &e2)) return error_wrap(err, &e2, "%s", path);
    if (clutter_config_check(&s->clutter, 28, 28, &e2))  // the MNIST family's 28 x 28 digits
        return error_wrap(err, &e2, "%s: clutter configuration", path);
    return 0;
}

int classify_load_model(ClassifyModel *m, const char *path, Error *err) {
    memset(m, 0, sizeof *m);
    SafetensorsFile f;
    if (safetensors_load(&f, path, err)) return -1;
    int rc = classify_read_state(&f, path, &m->state, err);
    if (rc == 0) {
        classifier_layout(&m->params, &m->p, &m->state.cfg);
        // checked before the allocation: the metadata may claim any size
        rc = safetensors_alloc_read_block(&m->params, "", &f, path, err);
    }
    safetensors_free(&f);
    return rc;
}

void classify_model_free(ClassifyModel *m) { block_free(&m->params); }

int classify_load_split(ImageSet *set, const char *data, const char *root, Split split,
                        const ClutterConfig *clutter, Error *err) {
    if (strcmp(data, "mnist") != 0 && strcmp(data, "fashion-mnist") != 0)
        return error_set(err, "--data: '%s' is not a digit source (mnist or fashion-mnist)", data);
    if (mnist_load(set, data, root, split, err)) return -1;
    Error e2;
    if (clutter_config_check(clutter, set->rows, set->cols, &e2) || set->n < 2) {
        if (set->n < 2) error_set(err, "%s %s: fewer than 2 images", data, split_name(split));
        else error_wrap(err, &e2, "%s %s", data, split_name(split));
        imageset_free(set);
        return -1;
    }
    return 0;
}

ClassifyEval classify_evaluate(ClassifierWorker *w, int n_workers, int B,
                               const ClassifierParams *p, const ClassifierConfig *c,
                               const ImageSet *set,
                               const ClutterConfig *clutter, uint64_t seed, int count,
                               float *x, int *labels) {
    ClassifyEval r = {0};
    long idx[1024];
    CHECK(B <= 1024, "evaluation batch %d", B);
    double loss = 0.0;
    for (int start = 0; start < count; start += B) {
        int nb = count - start < B ? count - start : B;
        for (int b = 0; b < nb; b++) idx[b] = start + b;
        cluttered_batch(x, labels, set, clutter, seed, idx, nb);
        int right = 0;
        loss += nb * classifier_forward_parallel(w, n_workers, p, c, x, labels, nb, NULL, &right);
        r.correct += right;
    }
    r.images = count;
    r.loss = count ? loss / count : NAN;
    r.error = count ? 1.0 - (double)r.correct / count : NAN;
    return r;
}
