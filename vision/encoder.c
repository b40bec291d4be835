// encoder.c: see encoder.h.
#include "vision/encoder.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/safetensors.h"
#include "core/text_escape.h"
#include "vision/conv_infer.h"
#include "vision/encoder_stage.h"
#include "vision/winograd.h"

#define BN_EPS 1e-5
#define MAX_NAME 96

// ---- architectures ---------------------------------------------------------------------

static const struct {
    const char *name, *title;
    int vgg_convs[5];  // VGG: convolutions per block (a 2x2 pool after each but the last)
    int blocks[4];     // ResNet: blocks per stage
    int bottleneck;    // ResNet: bottleneck blocks (1x1, 3x3, 1x1) or basic (3x3, 3x3)
} ARCHS[] = {
    [ENCODER_VGG16] = {"vgg16", "VGG-16", {2, 2, 3, 3, 3}, {0}, 0},
    [ENCODER_VGG19] = {"vgg19", "VGG-19", {2, 2, 4, 4, 4}, {0}, 0},
    [ENCODER_RESNET18] = {"resnet18", "ResNet-18", {0}, {2, 2, 2, 2}, 0},
    [ENCODER_RESNET34] = {"resnet34", "ResNet-34", {0}, {3, 4, 6, 3}, 0},
    [ENCODER_RESNET50] = {"resnet50", "ResNet-50", {0}, {3, 4, 6, 3}, 1},
    [ENCODER_RESNET101] = {"resnet101", "ResNet-101", {0}, {3, 4, 23, 3}, 1},
    [ENCODER_RESNET152] = {"resnet152", "ResNet-152", {0}, {3, 8, 36, 3}, 1},
};
#define N_ARCHS ((int)(sizeof ARCHS / sizeof ARCHS[0]))

static int is_vgg(EncoderArch a) { return a == ENCODER_VGG16 || a == ENCODER_VGG19; }

int encoder_spec_parse(EncoderSpec *spec, const char *text, Error *err) {
    static const char *accepted = "vgg16, vgg19, resnet18, resnet34, resnet50, resnet101, "
                                  "resnet152, optionally with @layer3 or @layer4 after a resnet";
    if (!text || !*text) return error_set(err, "empty encoder architecture (want one of %s)", accepted);
    const char *at = strchr(text, '@');
    size_t len = at ? (size_t)(at - text) : strlen(text);
    int found = -1;
    for (int a = 0; a < N_ARCHS && found < 0; a++)
        if (strlen(ARCHS[a].name) == len && strncmp(ARCHS[a].name, text, len) == 0) found = a;
    if (found < 0)
        return error_set(err, "%.64s: unknown encoder architecture (want one of %s)", text, accepted);
    EncoderSpec s = {(EncoderArch)found, is_vgg((EncoderArch)found) ? 5 : 4};
    if (at) {
        const char *cut = at + 1;
        if (is_vgg(s.arch) && strcmp(cut, "conv5") == 0) {
            s.cut = 5;
        } else if (!is_vgg(s.arch) && (strcmp(cut, "layer3") == 0 || strcmp(cut, "layer4") == 0)) {
            s.cut = cut[5] - '0';
        } else {
            return error_set(err, "%.64s: unknown cut '%.16s' (%s)", text, cut,
                             is_vgg(s.arch) ? "a VGG is cut at conv5, its last convolution"
                                            : "a ResNet is cut at layer3 or layer4");
        }
    }
    *spec = s;
    return 0;
}

void encoder_spec_format(char *buf, size_t cap, const EncoderSpec *spec) {
    if (is_vgg(spec->arch))
        snprintf(buf, cap, "%s", ARCHS[spec->arch].name);
    else
        snprintf(buf, cap, "%s@layer%d", ARCHS[spec->arch].name, spec->cut);
}

// ---- the loaded network ----------------------------------------------------------------

typedef struct {
    int C, OC, K, stride, pad;
    int pool_after;     // VGG: a 2x2 max pool follows
    size_t w, b;        // offsets of weight (OC, C, K, K) and bias (OC) in params
} Conv;

typedef struct {
    int conv1, conv2, conv3, down;  // indices into convs; conv3 (basic blocks), down: -1
} ResBlock;

struct Encoder {
    EncoderSpec spec;
    char spec_text[32];
    char sha256[SHA256_HEX_CHARS + 1];
    char description[256];
    int n_convs, n_blocks, D;
    int stage_conv, stage_block;  // the last stage's first convolution (VGG) or block (ResNet)
    Conv *convs;
    ResBlock *blocks;  // ResNet; convs[0] is the stem
    float *params;     // every weight and bias, folded (one allocation)
    size_t n_params;
};

const EncoderSpec *encoder_spec(const Encoder *enc) { return &enc->spec; }
int encoder_dim(const Encoder *enc) { return enc->D; }
size_t encoder_param_count(const Encoder *enc) { return enc->n_params; }
const char *encoder_weights_sha256(const Encoder *enc) { return enc->sha256; }
const char *encoder_description(const Encoder *enc) { return enc->description; }

void encoder_free(Encoder *enc) {
    if (!enc) return;
    free(enc->convs);
    free(enc->blocks);
    free(enc->params);
    free(enc);
}

// ---- loading ---------------------------------------------------------------------------

// Where a convolution's tensors are in the file: weight, then either a bias or batch norm's
// weight, bias, running_mean, running_var.
typedef struct {
    const SafetensorsTensor *w, *bias, *bn[4];
} ConvSource;

typedef struct {
    const SafetensorsFile *f;
    const char *path, *arch;
    Encoder *enc;
    ConvSource *src;
    unsigned char *used;  // per file tensor: claimed by the architecture
    int cap;
    Error *err;
} Loader;

static const char *shape_text(char *buf, size_t cap, const SafetensorsTensor *t) {
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < t->ndim && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
    return buf;
}

// The float tensor `name`, checked against the expected shape (ndim dims; -1 matches any
// size), marked used; NULL after an error.
static const SafetensorsTensor *claim(Loader *L, const char *name, int ndim, const int64_t *want) {
    const SafetensorsTensor *t = safetensors_find(L->f, name);
    if (!t) {
        error_set(L->err, "%s: missing tensor '%s' (%s needs it: a file of another architecture?)",
                  L->path, name, L->arch);
        return NULL;
    }
    if (!safetensors_dtype_is_float(t->dtype)) {
        error_set(L->err, "%s: tensor '%s' has dtype %s, expected F32, F16 or BF16", L->path, name,
                  safetensors_dtype_name(t->dtype));
        return NULL;
    }
    int ok = t->ndim == ndim;
    for (int d = 0; ok && d < ndim; d++) ok = want[d] < 0 ? t->shape[d] >= 1 : t->shape[d] == want[d];
    if (!ok) {
        char have[96], exp[96];
        size_t n = (size_t)snprintf(exp, sizeof exp, "[");
        for (int d = 0; d < ndim && n < sizeof exp; d++)
            n += want[d] < 0 ? (size_t)snprintf(exp + n, sizeof exp - n, "%s*", d ? ", " : "")
                             : (size_t)snprintf(exp + n, sizeof exp - n, "%s%lld", d ? ", " : "",
                                                (long long)want[d]);
        if (n < sizeof exp) snprintf(exp + n, sizeof exp - n, "]");
        error_set(L->err, "%s: tensor '%s' has shape %s, %s expects %s", L->path, name,
                  shape_text(have, sizeof have, t), L->arch, exp);
        return NULL;
    }
    L->used[t - L->f->tensors] = 1;
    return t;
}

// Adds a convolution: weight `wname` (OC, C, K, K) with OC read from the file (or required to
// be want_oc >= 1), and either the bias `bname` or the batch norm `bnname`.*; returns its
// index, or -1 after an error.
static int add_conv(Loader *L, const char *wname, const char *bname, const char *bnname, int C,
                    int K, int stride, int pad, int want_oc) {
    Encoder *e = L->enc;
    if (e->n_convs == L->cap) {
        L->cap = L->cap ? 2 * L->cap : 64;
        e->convs = xrealloc(e->convs, (size_t)L->cap * sizeof *e->convs);
        L->src = xrealloc(L->src, (size_t)L->cap * sizeof *L->src);
    }
    const int64_t ws[4] = {want_oc >= 1 ? want_oc : -1, C, K, K};
    ConvSource src = {0};
    if (!(src.w = claim(L, wname, 4, ws))) return -1;
    const int64_t oc[1] = {src.w->shape[0]};
    if (bname && !(src.bias = claim(L, bname, 1, oc))) return -1;
    if (bnname) {
        static const char *parts[4] = {"weight", "bias", "running_mean", "running_var"};
        for (int k = 0; k < 4; k++) {
            char name[MAX_NAME];
            snprintf(name, sizeof name, "%s.%s", bnname, parts[k]);
            if (!(src.bn[k] = claim(L, name, 1, oc))) return -1;
        }
    }
    if (oc[0] > 65536) {
        error_set(L->err, "%s: tensor '%s' has %lld output channels (at most 65536)", L->path,
                  wname, (long long)oc[0]);
        return -1;
    }
    Conv *c = &e->convs[e->n_convs];
    *c = (Conv){.C = C, .OC = (int)oc[0], .K = K, .stride = stride, .pad = pad};
    c->w = e->n_params;
    e->n_params += (size_t)c->OC * C * K * K;
    c->b = e->n_params;
    e->n_params += (size_t)c->OC;
    L->src[e->n_convs] = src;
    return e->n_convs++;
}

static int plan_vgg(Loader *L) {
    Encoder *e = L->enc;
    const int *counts = ARCHS[e->spec.arch].vgg_convs;
    int idx = 0, C = 3;
    for (int blk = 0; blk < 5; blk++) {
        for (int j = 0; j < counts[blk]; j++, idx += 2) {  // conv, ReLU
            char w[MAX_NAME], b[MAX_NAME];
            snprintf(w, sizeof w, "features.%d.weight", idx);
            snprintf(b, sizeof b, "features.%d.bias", idx);
            int k = add_conv(L, w, b, NULL, C, 3, 1, 1, 0);
            if (k < 0) return -1;
            C = e->convs[k].OC;
        }
        if (blk < 4) e->convs[e->n_convs - 1].pool_after = 1, idx++;  // the pool
        if (blk == 3) e->stage_conv = e->n_convs;
    }
    e->D = C;
    return 0;
}

static int plan_resnet(Loader *L) {
    Encoder *e = L->enc;
    const int bottleneck = ARCHS[e->spec.arch].bottleneck;
    if (add_conv(L, "conv1.weight", NULL, "bn1", 3, 7, 2, 3, 0) < 0) return -1;
    int C = e->convs[0].OC, total = 0;
    for (int l = 0; l < e->spec.cut; l++) total += ARCHS[e->spec.arch].blocks[l];
    e->blocks = xcalloc((size_t)total, sizeof *e->blocks);
    for (int l = 1; l <= e->spec.cut; l++)
        for (int i = 0; i < ARCHS[e->spec.arch].blocks[l - 1]; i++) {
            if (l == e->spec.cut && i == 0) e->stage_block = e->n_blocks;
            const int stride = l > 1 && i == 0 ? 2 : 1;
            char w[MAX_NAME], bn[MAX_NAME];
            ResBlock *r = &e->blocks[e->n_blocks++];
            r->conv3 = r->down = -1;
#define NAMES(part, norm)                                        \
    snprintf(w, sizeof w, "layer%d.%d." part ".weight", l, i), \
        snprintf(bn, sizeof bn, "layer%d.%d." norm, l, i)
            if (bottleneck) {
                NAMES("conv1", "bn1");
                if ((r->conv1 = add_conv(L, w, NULL, bn, C, 1, 1, 0, 0)) < 0) return -1;
                NAMES("conv2", "bn2");
                if ((r->conv2 = add_conv(L, w, NULL, bn, e->convs[r->conv1].OC, 3, stride, 1, 0)) < 0)
                    return -1;
                NAMES("conv3", "bn3");
                if ((r->conv3 = add_conv(L, w, NULL, bn, e->convs[r->conv2].OC, 1, 1, 0, 0)) < 0)
                    return -1;
            } else {
                NAMES("conv1", "bn1");
                if ((r->conv1 = add_conv(L, w, NULL, bn, C, 3, stride, 1, 0)) < 0) return -1;
                NAMES("conv2", "bn2");
                if ((r->conv2 = add_conv(L, w, NULL, bn, e->convs[r->conv1].OC, 3, 1, 1, 0)) < 0)
                    return -1;
            }
            const int out = e->convs[bottleneck ? r->conv3 : r->conv2].OC;
            // torchvision adds the downsampling branch exactly when the shape changes.
            if (stride != 1 || out != C) {
                NAMES("downsample.0", "downsample.1");
                if ((r->down = add_conv(L, w, NULL, bn, C, 1, stride, 0, out)) < 0) return -1;
            }
#undef NAMES
            C = out;
        }
    e->D = C;
    return 0;
}

// Whether a tensor the architecture did not claim may be read past: the classifier, batch
// norm's integer counters, and layer4 of a ResNet cut at layer3.
static int ignorable(const SafetensorsTensor *t, const EncoderSpec *spec) {
    static const char *heads[] = {"fc.", "classifier.", "head.", "pre_logits."};
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++)
        if (strncmp(t->name, heads[i], strlen(heads[i])) == 0) return 1;
    const char *suffix = ".num_batches_tracked";
    size_t n = strlen(t->name), m = strlen(suffix);
    if (n > m && strcmp(t->name + n - m, suffix) == 0 && !safetensors_dtype_is_float(t->dtype))
        return 1;
    return !is_vgg(spec->arch) && spec->cut == 3 && strncmp(t->name, "layer4.", 7) == 0;
}

// Reads one convolution's tensors into params, folding batch norm. tmp holds 4 OC floats.
static int read_conv(Loader *L, const Conv *c, const ConvSource *src, float *tmp) {
    Encoder *e = L->enc;
    float *w = e->params + c->w, *b = e->params + c->b;
    if (safetensors_read_floats(w, L->f, src->w, L->err)) return -1;
    if (src->bias) return safetensors_read_floats(b, L->f, src->bias, L->err);
    if (!src->bn[0]) {
        memset(b, 0, (size_t)c->OC * sizeof(float));
        return 0;
    }
    for (int k = 0; k < 4; k++)
        if (safetensors_read_floats(tmp + (size_t)k * c->OC, L->f, src->bn[k], L->err)) return -1;
    const float *gamma = tmp, *beta = tmp + c->OC, *mean = tmp + 2 * c->OC, *var = tmp + 3 * c->OC;
    const size_t per_oc = (size_t)c->C * c->K * c->K;
    for (int o = 0; o < c->OC; o++) {
        if (!(var[o] >= 0.0f)) {
            return error_set(L->err, "%s: tensor '%s' has running_var[%d] = %g (must be >= 0)",
                             L->path, src->bn[3]->name, o, var[o]);
        }
        const double s = gamma[o] / sqrt((double)var[o] + BN_EPS);
        for (size_t k = 0; k < per_oc; k++) w[o * per_oc + k] = (float)(w[o * per_oc + k] * s);
        b[o] = (float)(beta[o] - mean[o] * s);
    }
    return 0;
}

static int load_file(Encoder *e, const char *path, Error *err) {
    SafetensorsFile f;
    if (safetensors_open(&f, path, err)) return -1;
    char arch[32];
    encoder_spec_format(arch, sizeof arch, &e->spec);
    Loader L = {.f = &f, .path = path, .arch = arch, .enc = e, .err = err};
    L.used = xcalloc((size_t)(f.count ? f.count : 1), 1);
    int status = is_vgg(e->spec.arch) ? plan_vgg(&L) : plan_resnet(&L);
    for (int i = 0; status == 0 && i < f.count; i++) {
        if (L.used[i] || ignorable(&f.tensors[i], &e->spec)) continue;
        // error_set writes the file's tensor name in core/text_escape.h's field form: one line
        status = error_set(err, "%s: unexpected tensor '%.160s' for %s (a file of another architecture?)",
                           path, f.tensors[i].name, arch);
    }
    if (status == 0) {
        int max_oc = 1;
        for (int i = 0; i < e->n_convs; i++) max_oc = e->convs[i].OC > max_oc ? e->convs[i].OC : max_oc;
        float *tmp = xmalloc(4 * (size_t)max_oc * sizeof(float));
        e->params = xmalloc((e->n_params ? e->n_params : 1) * sizeof(float));
        for (int i = 0; status == 0 && i < e->n_convs; i++)
            status = read_conv(&L, &e->convs[i], &L.src[i], tmp);
        free(tmp);
    }
    free(L.used);
    free(L.src);
    safetensors_free(&f);
    return status;
}

int encoder_load(Encoder **out, const char *arch_spec, const char *weights_path, Error *err) {
    *out = NULL;
    EncoderSpec spec;
    if (encoder_spec_parse(&spec, arch_spec, err)) return -1;
    Encoder *e = xcalloc(1, sizeof *e);
    e->spec = spec;
    encoder_spec_format(e->spec_text, sizeof e->spec_text, &spec);
    unsigned char digest[SHA256_DIGEST_BYTES];
    if (load_file(e, weights_path, err) || sha256_file(digest, weights_path, err)) {
        encoder_free(e);
        return -1;
    }
    sha256_hex(e->sha256, digest);
    char cut[16];
    snprintf(cut, sizeof cut, is_vgg(spec.arch) ? "conv5" : "layer%d", spec.cut);
    snprintf(e->description, sizeof e->description,
             "%s: torchvision %s cut after %s%s, D %d, %.2f M parameters%s", e->spec_text,
             ARCHS[spec.arch].title, cut, is_vgg(spec.arch) ? "'s last ReLU" : "", e->D,
             (double)e->n_params / 1e6, is_vgg(spec.arch) ? "" : " (batch norm folded)");
    *out = e;
    return 0;
}

// ---- shapes ----------------------------------------------------------------------------

static int conv_out(const Conv *c, int n) { return conv_infer_out_size(n, c->K, c->stride, c->pad); }

int encoder_grid_size(const Encoder *enc, int S) {
    int s = S;
    if (is_vgg(enc->spec.arch)) {
        for (int i = 0; i < enc->n_convs; i++)
            if (enc->convs[i].pool_after) s /= 2;
        return s;
    }
    if (S < 4) return 0;
    s = maxpool3s2_out_size(conv_out(&enc->convs[0], S));
    for (int k = 0; k < enc->n_blocks; k++) {
        const ResBlock *r = &enc->blocks[k];
        s = conv_out(&enc->convs[r->conv3 >= 0 ? r->conv2 : r->conv1], s);
    }
    return s;
}

double encoder_flops(const Encoder *enc, int S) {
    // Walk the layers with their input sides.
    double flops = 0.0;
    int s = S;
    if (is_vgg(enc->spec.arch)) {
        for (int i = 0; i < enc->n_convs; i++) {
            const Conv *c = &enc->convs[i];
            flops += 2.0 * c->OC * c->C * c->K * c->K * s * s;
            if (c->pool_after) s /= 2;
        }
        return flops;
    }
    const Conv *stem = &enc->convs[0];
    s = conv_out(stem, S);
    flops += 2.0 * stem->OC * stem->C * 49 * s * s;
    s = maxpool3s2_out_size(s);
    for (int k = 0; k < enc->n_blocks; k++) {
        const ResBlock *r = &enc->blocks[k];
        const int ids[4] = {r->conv1, r->conv2, r->conv3, r->down};
        int side = s;
        for (int j = 0; j < 4; j++) {
            if (ids[j] < 0) continue;
            const Conv *c = &enc->convs[ids[j]];
            const int in = j == 3 ? s : side, o = conv_out(c, in);
            flops += 2.0 * c->OC * c->C * c->K * c->K * o * o;
            if (j < 3) side = o;
        }
        s = side;
    }
    return flops;
}

// ---- workspace -------------------------------------------------------------------------

#define N_BUFS 4  // ResNet: block input, two intermediates, block output (VGG uses two)

struct EncoderWorker {
    float *buf[N_BUFS];
    float *scratch;
    size_t scratch_floats;
};

// The side of every convolution's input at S (sides[i]); returns the largest activation
// (floats per image) seen along the way.
static size_t walk_sides(const Encoder *enc, int S, int *sides) {
    size_t most = (size_t)3 * S * S;
#define SEEN(ch, side) most = (size_t)(ch) * (side) * (side) > most ? (size_t)(ch) * (side) * (side) : most
    if (is_vgg(enc->spec.arch)) {
        int s = S;
        for (int i = 0; i < enc->n_convs; i++) {
            sides[i] = s;
            SEEN(enc->convs[i].OC, s);
            if (enc->convs[i].pool_after) s /= 2;
        }
        return most;
    }
    sides[0] = S;
    int s = conv_out(&enc->convs[0], S);
    SEEN(enc->convs[0].OC, s);
    s = maxpool3s2_out_size(s);
    for (int k = 0; k < enc->n_blocks; k++) {
        const ResBlock *r = &enc->blocks[k];
        const int chain[3] = {r->conv1, r->conv2, r->conv3};
        int side = s;
        for (int j = 0; j < 3 && chain[j] >= 0; j++) {
            sides[chain[j]] = side;
            side = conv_out(&enc->convs[chain[j]], side);
            SEEN(enc->convs[chain[j]].OC, side);
        }
        if (r->down >= 0) sides[r->down] = s;
        s = side;
    }
#undef SEEN
    return most;
}

static int pick_method(const Conv *c, int side, EncoderConv conv) {
    if (conv == ENCODER_CONV_IM2COL || !conv_infer_winograd_fits(side, side, c->K, c->stride, c->pad))
        return CONV_INFER_IM2COL;
    if (conv == ENCODER_CONV_WINOGRAD || c->C >= ENCODER_WINOGRAD_MIN_CHANNELS)
        return CONV_INFER_WINOGRAD;
    return CONV_INFER_IM2COL;
}

static size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

// Floats of the one allocation; fills ws's pointers when mem is non-NULL.
static size_t workspace_layout(EncoderWorkspace *ws, const Encoder *enc, int S, int threads,
                               int group, EncoderConv conv, float *mem) {
    CHECK(threads >= 1 && group >= 1, "%d threads, groups of %d", threads, group);
    CHECK(encoder_grid_size(enc, S) >= 1, "%d px images are too small for %s", S, enc->spec_text);
    int *sides = xmalloc((size_t)enc->n_convs * sizeof(int));
    const size_t act = align16(walk_sides(enc, S, sides) * group);
    size_t floats = 0, scratch = 1;
    for (int i = 0; i < enc->n_convs; i++) {
        const Conv *c = &enc->convs[i];
        const int m = pick_method(c, sides[i], conv);
        if (m == CONV_INFER_WINOGRAD) {
            if (mem) ws->wino_u[i] = mem + floats;
            floats += align16(winograd_filter_size(c->OC, c->C));
        }
        if (mem) ws->method[i] = m;
        size_t sf = conv_infer_scratch_floats(group, c->C, sides[i], sides[i], c->OC, c->K,
                                              c->stride, c->pad, (ConvInferMethod)m);
        scratch = sf > scratch ? sf : scratch;
    }
    scratch = align16(scratch);
    const int nbuf = is_vgg(enc->spec.arch) ? 2 : N_BUFS;  // VGG needs only two
    for (int t = 0; t < threads; t++) {
        EncoderWorker *wk = mem ? &ws->workers[t] : NULL;
        for (int k = 0; k < nbuf; k++, floats += act)
            if (wk) wk->buf[k] = mem + floats;
        if (wk) wk->scratch = mem + floats, wk->scratch_floats = scratch;
        floats += scratch;
    }
    free(sides);
    return floats;
}

size_t encoder_workspace_bytes(const Encoder *enc, int S, int threads, int group,
                               EncoderConv conv) {
    return workspace_layout(NULL, enc, S, threads, group, conv, NULL) * sizeof(float);
}

void encoder_workspace_alloc(EncoderWorkspace *ws, const Encoder *enc, int S, int threads,
                             int group, EncoderConv conv) {
    memset(ws, 0, sizeof *ws);
    ws->S = S, ws->threads = threads, ws->group = group, ws->conv = conv;
    ws->n_convs = enc->n_convs;
    ws->method = xcalloc((size_t)enc->n_convs, sizeof *ws->method);
    ws->wino_u = xcalloc((size_t)enc->n_convs, sizeof *ws->wino_u);
    ws->workers = xcalloc((size_t)threads, sizeof *ws->workers);
    const size_t floats = workspace_layout(ws, enc, S, threads, group, conv, NULL);
    ws->bytes = floats * sizeof(float);
    ws->mem = xmalloc(ws->bytes ? ws->bytes : 1);
    workspace_layout(ws, enc, S, threads, group, conv, ws->mem);
    for (int i = 0; i < enc->n_convs; i++)
        if (ws->wino_u[i])
            winograd_filter_transform(ws->wino_u[i], enc->params + enc->convs[i].w,
                                      enc->convs[i].OC, enc->convs[i].C);
}

void encoder_workspace_free(EncoderWorkspace *ws) {
    free(ws->method);
    free(ws->wino_u);
    free(ws->workers);
    free(ws->mem);
    memset(ws, 0, sizeof *ws);
}

// ---- forward ---------------------------------------------------------------------------

// Runs convolution i of n images (C, n, side, side) -> out; returns the output side.
static int run_conv(const Encoder *enc, const EncoderWorkspace *ws, EncoderWorker *wk, int i,
                    float *out, const float *in, const float *residual, int n, int side,
                    int relu) {
    const Conv *c = &enc->convs[i];
    conv_infer_forward(out, in, enc->params + c->w, ws->wino_u[i], enc->params + c->b, residual,
                       wk->scratch, wk->scratch_floats, n, c->C, side, side, c->OC, c->K,
                       c->stride, c->pad, relu, (ConvInferMethod)ws->method[i]);
    return conv_out(c, side);
}

// n images (n, 3, S, S) -> annot (n, L, D); or, with prefix, the last stage's input
// (n, C, s, s) (everything before the last stage).
static void forward_group(const Encoder *enc, const EncoderWorkspace *ws, EncoderWorker *wk,
                          float *annot, const float *images, int n, int prefix) {
    const int S = ws->S;
    float **buf = wk->buf;
    nchw_to_cnhw(buf[0], images, n, 3, S * S);
    float *x = buf[0];
    int s = S;
    if (is_vgg(enc->spec.arch)) {
        float *y = buf[1];
        const int end = prefix ? enc->stage_conv : enc->n_convs;
        for (int i = 0; i < end; i++) {
            s = run_conv(enc, ws, wk, i, y, x, NULL, n, s, 1);
            float *t = x;
            x = y, y = t;
            if (enc->convs[i].pool_after) {
                maxpool2s2_forward(y, x, enc->convs[i].OC * n, s, s);
                s /= 2;
                t = x, x = y, y = t;
            }
        }
    } else {
        s = run_conv(enc, ws, wk, 0, buf[1], x, NULL, n, s, 1);
        maxpool3s2_forward(buf[2], buf[1], enc->convs[0].OC * n, s, s);
        s = maxpool3s2_out_size(s);
        x = buf[2];
        const int end = prefix ? enc->stage_block : enc->n_blocks;
        for (int k = 0; k < end; k++) {
            const ResBlock *r = &enc->blocks[k];
            // The three buffers other than x: two intermediates and the block's output.
            float *o[3];
            for (int j = 0, m = 0; j < N_BUFS; j++)
                if (buf[j] != x) o[m++] = buf[j];
            float *out = o[2];
            int side = run_conv(enc, ws, wk, r->conv1, o[0], x, NULL, n, s, 1);
            if (r->down >= 0) run_conv(enc, ws, wk, r->down, out, x, NULL, n, s, 0);
            const float *res = r->down >= 0 ? out : x;
            if (r->conv3 >= 0) {
                side = run_conv(enc, ws, wk, r->conv2, o[1], o[0], NULL, n, side, 1);
                side = run_conv(enc, ws, wk, r->conv3, out, o[1], res, n, side, 1);
            } else {
                side = run_conv(enc, ws, wk, r->conv2, out, o[0], res, n, side, 1);
            }
            x = out, s = side;
        }
    }
    if (prefix)
        nchw_to_cnhw(annot, x, encoder_stage_input_channels(enc), n, s * s);  // (C, n) -> (n, C)
    else
        cnhw_to_annotations(annot, x, n, enc->D, s * s);
}

typedef struct {
    const Encoder *enc;
    const EncoderWorkspace *ws;
    EncoderWorker *wk;
    float *annot;
    const float *images;
    int n, prefix;
} Job;

// Floats of one image's output: its annotations, or with prefix the last stage's input.
static size_t out_floats(const Encoder *enc, int S, int prefix) {
    if (prefix) {
        const int s = encoder_stage_input_side(enc, S);
        return (size_t)encoder_stage_input_channels(enc) * s * s;
    }
    const int G = encoder_grid_size(enc, S);
    return (size_t)G * G * enc->D;
}

static void *job_run(void *arg) {
    Job *j = arg;
    const int S = j->ws->S;
    const size_t in = (size_t)3 * S * S, out = out_floats(j->enc, S, j->prefix);
    for (int b0 = 0; b0 < j->n; b0 += j->ws->group) {
        const int m = j->n - b0 < j->ws->group ? j->n - b0 : j->ws->group;
        forward_group(j->enc, j->ws, j->wk, j->annot + b0 * out, j->images + b0 * in, m, j->prefix);
    }
    return NULL;
}

static void forward_jobs(const Encoder *enc, EncoderWorkspace *ws, float *annot,
                         const float *images, int B, int prefix) {
    CHECK(B >= 0 && ws->n_convs == enc->n_convs, "workspace of another encoder");
    enum { MAX_THREADS = 256 };
    CHECK(ws->threads <= MAX_THREADS);
    Job jobs[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    const int S = ws->S;
    const size_t in = (size_t)3 * S * S, out = out_floats(enc, S, prefix);
    int used = 0;
    for (int k = 0, start = 0; k < ws->threads; k++) {
        const int n = B / ws->threads + (k < B % ws->threads);
        if (n == 0) continue;
        jobs[used++] = (Job){enc, ws, &ws->workers[k], annot + start * out, images + start * in,
                             n, prefix};
        start += n;
    }
    for (int k = 1; k < used; k++)
        CHECK(pthread_create(&th[k], NULL, job_run, &jobs[k]) == 0, "pthread_create");
    if (used) job_run(&jobs[0]);
    for (int k = 1; k < used; k++) pthread_join(th[k], NULL);
}

void encoder_forward(const Encoder *enc, EncoderWorkspace *ws, float *annot, const float *images,
                     int B) {
    forward_jobs(enc, ws, annot, images, B, 0);
}

void encoder_forward_prefix(const Encoder *enc, EncoderWorkspace *ws, float *feat,
                            const float *images, int B) {
    forward_jobs(enc, ws, feat, images, B, 1);
}

// ---- the last stage, for fine-tuning ---------------------------------------------------

int encoder_stage_input_channels(const Encoder *enc) {
    return is_vgg(enc->spec.arch) ? enc->convs[enc->stage_conv].C
                                  : enc->convs[enc->blocks[enc->stage_block].conv1].C;
}

int encoder_stage_input_side(const Encoder *enc, int S) {
    if (encoder_grid_size(enc, S) < 1) return 0;
    int *sides = xmalloc((size_t)enc->n_convs * sizeof(int));
    walk_sides(enc, S, sides);
    const int s = sides[is_vgg(enc->spec.arch) ? enc->stage_conv
                                               : enc->blocks[enc->stage_block].conv1];
    free(sides);
    return s;
}

// The encoder's convolutions of the last stage, in order, as the stage's (same indices
// relative to the first one).
static int stage_first(const Encoder *enc) {
    return is_vgg(enc->spec.arch) ? enc->stage_conv : enc->blocks[enc->stage_block].conv1;
}

void encoder_last_stage(const Encoder *enc, EncoderStage *st) {
    const int first = stage_first(enc);
    encoder_stage_init(st, is_vgg(enc->spec.arch) ? ENCODER_STAGE_VGG : ENCODER_STAGE_RESNET,
                       encoder_stage_input_channels(enc));
    for (int i = first; i < enc->n_convs; i++) {
        const Conv *c = &enc->convs[i];
        const int k = encoder_stage_add_conv(st, c->C, c->OC, c->K, c->stride, c->pad);
        memcpy(st->params + st->convs[k].w, enc->params + c->w, (size_t)c->OC * c->C * c->K * c->K * sizeof(float));
        memcpy(st->params + st->convs[k].b, enc->params + c->b, (size_t)c->OC * sizeof(float));
    }
    for (int k = enc->stage_block; !is_vgg(enc->spec.arch) && k < enc->n_blocks; k++) {
        const ResBlock *r = &enc->blocks[k];
        encoder_stage_add_block(st, r->conv1 - first, r->conv2 - first,
                                r->conv3 >= 0 ? r->conv3 - first : -1,
                                r->down >= 0 ? r->down - first : -1);
    }
}

int encoder_set_last_stage(Encoder *enc, const EncoderStage *st, Error *err) {
    const int first = stage_first(enc);
    if (st->n_convs != enc->n_convs - first)
        return error_set(err, "%s: a stage of %d convolutions, the last stage has %d",
                         enc->spec_text, st->n_convs, enc->n_convs - first);
    for (int i = 0; i < st->n_convs; i++) {
        const Conv *c = &enc->convs[first + i];
        const StageConv *t = &st->convs[i];
        if (t->C != c->C || t->OC != c->OC || t->K != c->K || t->stride != c->stride || t->pad != c->pad)
            return error_set(err, "%s: stage convolution %d is %dx%dx%dx%d, the encoder's %dx%dx%dx%d",
                             enc->spec_text, i, t->OC, t->C, t->K, t->K, c->OC, c->C, c->K, c->K);
    }
    for (int i = 0; i < st->n_convs; i++) {
        const Conv *c = &enc->convs[first + i];
        memcpy(enc->params + c->w, st->params + st->convs[i].w, (size_t)c->OC * c->C * c->K * c->K * sizeof(float));
        memcpy(enc->params + c->b, st->params + st->convs[i].b, (size_t)c->OC * sizeof(float));
    }
    return 0;
}

// ---- the plain-loop reference ----------------------------------------------------------

void encoder_forward_ref(const Encoder *enc, float *annot, const float *images, int B, int S) {
    CHECK(encoder_grid_size(enc, S) >= 1, "%d px images are too small", S);
    int *sides = xmalloc((size_t)enc->n_convs * sizeof(int));
    const size_t most = walk_sides(enc, S, sides) * B;
    free(sides);
    float *buf[5];
    for (int k = 0; k < 5; k++) buf[k] = xmalloc(most * sizeof(float));
    nchw_to_cnhw(buf[0], images, B, 3, S * S);
    float *x = buf[0];
    int s = S;
#define REF_CONV(i, o, in, res, side, relu)                                                      \
    (conv_infer_forward_ref(o, in, enc->params + enc->convs[i].w, enc->params + enc->convs[i].b, \
                            res, B, enc->convs[i].C, side, side, enc->convs[i].OC,             \
                            enc->convs[i].K, enc->convs[i].stride, enc->convs[i].pad, relu),   \
     conv_out(&enc->convs[i], side))
    if (is_vgg(enc->spec.arch)) {
        float *y = buf[1], *t;
        for (int i = 0; i < enc->n_convs; i++) {
            s = REF_CONV(i, y, x, NULL, s, 1);
            t = x, x = y, y = t;
            if (enc->convs[i].pool_after) {
                maxpool2s2_forward_ref(y, x, enc->convs[i].OC * B, s, s);
                s /= 2;
                t = x, x = y, y = t;
            }
        }
    } else {
        s = REF_CONV(0, buf[1], x, NULL, s, 1);
        maxpool3s2_forward_ref(buf[2], buf[1], enc->convs[0].OC * B, s, s);
        s = maxpool3s2_out_size(s);
        x = buf[2];
        for (int k = 0; k < enc->n_blocks; k++) {
            const ResBlock *r = &enc->blocks[k];
            float *o[4];
            for (int j = 0, m = 0; j < 5; j++)
                if (buf[j] != x) o[m++] = buf[j];
            int side = REF_CONV(r->conv1, o[0], x, NULL, s, 1);
            if (r->down >= 0) REF_CONV(r->down, o[3], x, NULL, s, 0);
            const float *res = r->down >= 0 ? o[3] : x;
            if (r->conv3 >= 0) {
                side = REF_CONV(r->conv2, o[1], o[0], NULL, side, 1);
                side = REF_CONV(r->conv3, o[2], o[1], res, side, 1);
            } else {
                side = REF_CONV(r->conv2, o[2], o[0], res, side, 1);
            }
            x = o[2], s = side;
        }
    }
#undef REF_CONV
    cnhw_to_annotations(annot, x, B, enc->D, s * s);
    for (int k = 0; k < 5; k++) free(buf[k]);
}
