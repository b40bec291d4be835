// test_encoder.c: vision/encoder.h against torchvision (tests/fixtures/encoders/, made by
// bench/reference/encoders_ref.py): the seven architectures at reduced width (same depth,
// kernels, strides and blocks), weights in F32, F16 and BF16 with torchvision's names plus
// the classifier and I64 num_batches_tracked, two photographs at 96 px; ResNet-50 also cut at
// layer3. Every architecture runs through the fast path on one worker with both images in
// one group, on two workers of one image each with im2col forced, and (two of them) through
// the plain-loop reference. Then the refusals: a missing, unexpected, wrongly shaped or
// integer tensor, a file of another architecture, a bad running_var, a bad spec, each a
// one-line error naming the file and the tensor, with nothing loaded.
//
// Tolerance, per element: |got - want| <= 2e-5 max|want| + 2e-5 |want|, the reference being
// float64 on the same (rounded) weights and inputs; the float32 sums (up to 50 blocks) came
// within 2.5 % of it (largest error 2.5e-5 on ResNet-152's outputs of up to 47; PARITY_VERBOSE=1
// prints each architecture's).
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/check.h"
#include "core/gemm.h"
#include "core/safetensors.h"
#include "core/sha256.h"
#include "vision/encoder.h"
#include "tests/support/fixture.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"

static char tmpdir[256];

static const char *ARCHS[] = {"vgg16",    "vgg19",    "resnet18",        "resnet34",
                              "resnet50", "resnet101", "resnet152", "resnet50@layer3"};
#define N_ARCHS ((int)(sizeof ARCHS / sizeof ARCHS[0]))

static void fixture_dir(char *buf, size_t cap) {
    const char *dir = getenv("ATTEND_FIXTURES");
    snprintf(buf, cap, "%s/encoders", dir && dir[0] ? dir : "tests/fixtures");
}

static void weights_path(char *buf, size_t cap, const char *spec) {
    char dir[400];
    fixture_dir(dir, sizeof dir);
    int n = (int)strcspn(spec, "@");
    snprintf(buf, cap, "%s/%.*s.safetensors", dir, n, spec);
}

// Largest error over the tolerance; 1 passes.
static double worst_ratio(const float *got, const float *want, size_t n, double *max_err) {
    double scale = 0.0, worst = 0.0;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
    *max_err = 0.0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - want[i]);
        *max_err = fmax(*max_err, e);
        double r = e / (2e-5 * scale + 2e-5 * fabs(want[i]));
        if (!(r <= worst)) worst = r;
    }
    return worst;
}

static void test_spec_parsing(void) {
    EncoderSpec s;
    Error err = {{0}};
    char buf[32];
    EXPECT(encoder_spec_parse(&s, "resnet101", &err) == 0 && s.arch == ENCODER_RESNET101 &&
           s.cut == 4);
    EXPECT(encoder_spec_parse(&s, "resnet50@layer3", &err) == 0 && s.arch == ENCODER_RESNET50 &&
           s.cut == 3);
    encoder_spec_format(buf, sizeof buf, &s);
    EXPECT(strcmp(buf, "resnet50@layer3") == 0, "%s", buf);
    EXPECT(encoder_spec_parse(&s, "vgg19", &err) == 0 && s.arch == ENCODER_VGG19);
    encoder_spec_format(buf, sizeof buf, &s);
    EXPECT(strcmp(buf, "vgg19") == 0, "%s", buf);
    static const char *bad[] = {"", "resnet", "resnet1010", "vgg19@layer3", "resnet18@layer5",
                                "resnet18@", "alexnet"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        EXPECT(encoder_spec_parse(&s, bad[i], &err) == -1, "'%s' accepted", bad[i]);
        EXPECT(strchr(err.msg, '\n') == NULL && strlen(err.msg) > 10, "'%s': '%s'", bad[i], err.msg);
    }
}

static void test_parity_all_architectures(void) {
    SafetensorsFile f;
    char path[512];
    if (fixture_load(&f, path, sizeof path, "encoders/outputs.safetensors")) return;
    int S = 0;
    if (fixture_meta_int(&f, "S", &S)) {
        safetensors_free(&f);
        return;
    }
    const size_t in1 = (size_t)3 * S * S;
    const float *a = fixture_tensor(&f, "input/chelsea", in1);
    const float *b = fixture_tensor(&f, "input/coffee", in1);
    if (!a || !b) {
        safetensors_free(&f);
        return;
    }
    float *images = xmalloc(2 * in1 * sizeof(float));
    memcpy(images, a, in1 * sizeof(float));
    memcpy(images + in1, b, in1 * sizeof(float));
    gemm_set_threads(1);
    for (int k = 0; k < N_ARCHS; k++) {
        char wpath[512], key[64];
        weights_path(wpath, sizeof wpath, ARCHS[k]);
        Encoder *enc = NULL;
        Error err = {{0}};
        if (encoder_load(&enc, ARCHS[k], wpath, &err)) {
            EXPECT(0, "%s", err.msg);
            continue;
        }
        const int G = encoder_grid_size(enc, S), D = encoder_dim(enc);
        snprintf(key, sizeof key, "output/%s", ARCHS[k]);
        const SafetensorsTensor *t = safetensors_find(&f, key);
        EXPECT(t && t->ndim == 3 && t->shape[0] == 2 && t->shape[1] == (int64_t)G * G &&
                   t->shape[2] == D,
               "%s: fixture shape differs from G %d, D %d", ARCHS[k], G, D);
        if (!t || t->numel != (size_t)2 * G * G * D) {
            encoder_free(enc);
            continue;
        }
        float *annot = xmalloc(t->numel * sizeof(float));
        // (threads, group, conv): one worker with both images in one group; two workers.
        static const int configs[2][3] = {{1, 2, ENCODER_CONV_AUTO}, {2, 1, ENCODER_CONV_IM2COL}};
        for (int c = 0; c < 3; c++) {
            for (size_t i = 0; i < t->numel; i++) annot[i] = NAN;
            const char *how = c < 2 ? (c ? "2 workers, im2col" : "1 worker, group 2") : "reference";
            if (c < 2) {
                EncoderWorkspace ws;
                encoder_workspace_alloc(&ws, enc, S, configs[c][0], configs[c][1],
                                        (EncoderConv)configs[c][2]);
                encoder_forward(enc, &ws, annot, images, 2);
                encoder_workspace_free(&ws);
            } else if (k == 1 || k == 4) {  // vgg19, resnet50: the plain loops too
                encoder_forward_ref(enc, annot, images, 2, S);
            } else {
                continue;
            }
            double err_max;
            double r = worst_ratio(annot, t->data, t->numel, &err_max);
            EXPECT(r <= 1.0, "%s (%s): error %.3g of tolerance (max |error| %.3g)", ARCHS[k], how,
                   r, err_max);
            if (getenv("PARITY_VERBOSE"))
                printf("  %s (%s): max |error| %.3g, %.3g of tolerance\n", ARCHS[k], how, err_max, r);
        }
        free(annot);
        encoder_free(enc);
    }
    free(images);
    safetensors_free(&f);
}

static void test_shapes_and_identity(void) {
    char wpath[512];
    Encoder *enc = NULL;
    Error err = {{0}};
    weights_path(wpath, sizeof wpath, "resnet101");
    EXPECT(encoder_load(&enc, "resnet101", wpath, &err) == 0, "%s", err.msg);
    if (!enc) return;
    EXPECT(encoder_grid_size(enc, 224) == 7 && encoder_grid_size(enc, 448) == 14 &&
           encoder_grid_size(enc, 96) == 3);
    EXPECT(encoder_dim(enc) == 64, "narrow ResNet-101: D %d (2048 / 32)", encoder_dim(enc));
    unsigned char d[SHA256_DIGEST_BYTES];
    char hex[SHA256_HEX_CHARS + 1];
    EXPECT(sha256_file(d, wpath, &err) == 0);
    sha256_hex(hex, d);
    EXPECT(strcmp(hex, encoder_weights_sha256(enc)) == 0, "%s", encoder_weights_sha256(enc));
    EXPECT(strncmp(encoder_description(enc), "resnet101@layer4: ", 18) == 0, "%s",
           encoder_description(enc));
    encoder_free(enc);
    weights_path(wpath, sizeof wpath, "vgg19");
    EXPECT(encoder_load(&enc, "vgg19", wpath, &err) == 0, "%s", err.msg);
    if (!enc) return;
    EXPECT(encoder_grid_size(enc, 224) == 14 && encoder_dim(enc) == 16);
    encoder_free(enc);
}

// ---- refusals --------------------------------------------------------------------------

typedef enum { EDIT_NONE, EDIT_DROP, EDIT_ADD, EDIT_RESHAPE, EDIT_TO_I64, EDIT_SET } EditKind;
typedef struct {
    EditKind kind;
    const char *name;  // EDIT_DROP: a name, or a prefix ending in '*'
    int ndim;
    int64_t shape[4];
    float value;  // EDIT_SET: every element becomes value
} Edit;

static int matches(const char *name, const char *pattern) {
    size_t n = strlen(pattern);
    return pattern[n - 1] == '*' ? strncmp(name, pattern, n - 1) == 0 : strcmp(name, pattern) == 0;
}

// Writes dst: the tensors of src (floats as F32, integer tensors as zeros of their dtype)
// with one edit applied.
static void write_edited(const char *src, const char *dst, const Edit *e) {
    SafetensorsFile f;
    Error err = {{0}};
    CHECK(safetensors_load(&f, src, &err) == 0, "%s", err.msg);
    cJSON *root = cJSON_CreateObject();
    size_t total = 0;
    unsigned char *data = NULL;
    for (int i = 0; i <= f.count; i++) {
        const SafetensorsTensor *t = i < f.count ? &f.tensors[i] : NULL;
        if (t && e->kind == EDIT_DROP && matches(t->name, e->name)) continue;
        if (!t && e->kind != EDIT_ADD) break;
        const char *name = t ? t->name : e->name;
        int ndim = t ? t->ndim : e->ndim;
        int64_t shape[8];
        size_t numel = 1;
        for (int d = 0; d < ndim; d++) shape[d] = t ? t->shape[d] : e->shape[d];
        if (t && e->kind == EDIT_RESHAPE && strcmp(name, e->name) == 0) {
            ndim = e->ndim;
            for (int d = 0; d < ndim; d++) shape[d] = e->shape[d];
        }
        for (int d = 0; d < ndim; d++) numel *= (size_t)shape[d];
        int i64 = (t && !safetensors_dtype_is_float(t->dtype)) ||
                  (e->kind == EDIT_TO_I64 && strcmp(name, e->name) == 0);
        size_t bytes = numel * (i64 ? 8 : 4);
        data = xrealloc(data, total + bytes + 1);
        memset(data + total, 0, bytes);
        if (!i64 && t && t->data) {
            size_t m = numel < t->numel ? numel : t->numel;
            memcpy(data + total, t->data, m * sizeof(float));
        }
        if (e->kind == EDIT_SET && strcmp(name, e->name) == 0)
            for (size_t k = 0; k < numel; k++) memcpy(data + total + 4 * k, &e->value, 4);
        cJSON *o = cJSON_AddObjectToObject(root, name);
        cJSON_AddStringToObject(o, "dtype", i64 ? "I64" : "F32");
        cJSON *sh = cJSON_AddArrayToObject(o, "shape");
        for (int d = 0; d < ndim; d++) cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)shape[d]));
        cJSON *off = cJSON_AddArrayToObject(o, "data_offsets");
        cJSON_AddItemToArray(off, cJSON_CreateNumber((double)total));
        cJSON_AddItemToArray(off, cJSON_CreateNumber((double)(total + bytes)));
        total += bytes;
    }
    char *json = cJSON_PrintUnformatted(root);
    size_t n = strlen(json);
    FILE *fp = fopen(dst, "wb");
    CHECK(fp);
    unsigned char head[8];
    for (int i = 0; i < 8; i++) head[i] = (unsigned char)((uint64_t)n >> (8 * i));
    CHECK(fwrite(head, 1, 8, fp) == 8 && fwrite(json, 1, n, fp) == n);
    CHECK(total == 0 || fwrite(data, 1, total, fp) == total);
    CHECK(fclose(fp) == 0);
    free(json);
    free(data);
    cJSON_Delete(root);
    safetensors_free(&f);
}

// Loading spec from an edited copy of the fixture `from` fails (want non-NULL) with a
// one-line message naming the file and containing want, or succeeds (want NULL).
static void expect_load(const char *spec, const char *from, const Edit *edit, const char *want) {
    char src[512], dst[512];
    weights_path(src, sizeof src, from);
    snprintf(dst, sizeof dst, "%s/edited.safetensors", tmpdir);
    write_edited(src, dst, edit);
    Encoder *enc = (Encoder *)1;
    Error err = {{0}};
    int rc = encoder_load(&enc, spec, dst, &err);
    if (!want) {
        EXPECT(rc == 0 && enc, "%s from an edited %s: %s", spec, from, err.msg);
    } else {
        EXPECT(rc == -1 && enc == NULL, "%s from an edited %s: accepted (wanted '%s')", spec,
               from, want);
        EXPECT(strncmp(err.msg, dst, strlen(dst)) == 0 && strstr(err.msg, want) &&
                   !strchr(err.msg, '\n'),
               "%s: '%s' lacks '%s'", spec, err.msg, want);
    }
    encoder_free(rc == 0 ? enc : NULL);
}

static void test_refusals(void) {
    const Edit none = {.kind = EDIT_NONE};
    // Loads as written (all floats as F32), without the classifier, without the counters.
    expect_load("resnet18", "resnet18", &none, NULL);
    expect_load("resnet18", "resnet18", &(Edit){.kind = EDIT_DROP, .name = "fc.*"}, NULL);
    expect_load("vgg19", "vgg19", &(Edit){.kind = EDIT_DROP, .name = "head.*"}, NULL);
    expect_load("resnet50", "resnet50", &(Edit){.kind = EDIT_DROP, .name = "layer1.0.bn1.num_batches*"}, NULL);
    // layer4 is read past when cut at layer3, even when it is missing altogether.
    expect_load("resnet50@layer3", "resnet50", &(Edit){.kind = EDIT_DROP, .name = "layer4.*"}, NULL);
    // A missing tensor, anywhere.
    expect_load("resnet18", "resnet18", &(Edit){.kind = EDIT_DROP, .name = "layer2.1.bn1.running_var"},
                "missing tensor 'layer2.1.bn1.running_var'");
    expect_load("resnet18", "resnet18", &(Edit){.kind = EDIT_DROP, .name = "layer2.0.downsample.0.weight"},
                "missing tensor 'layer2.0.downsample.0.weight'");
    expect_load("resnet50", "resnet50", &(Edit){.kind = EDIT_DROP, .name = "layer4.*"},
                "missing tensor 'layer4.0.conv1.weight'");
    expect_load("vgg16", "vgg16", &(Edit){.kind = EDIT_DROP, .name = "features.28.bias"},
                "missing tensor 'features.28.bias'");
    // An unexpected one.
    expect_load("resnet18", "resnet18",
                &(Edit){.kind = EDIT_ADD, .name = "layer1.0.conv3.weight", .ndim = 4, .shape = {2, 2, 1, 1}},
                "unexpected tensor 'layer1.0.conv3.weight'");
    expect_load("resnet18", "resnet18", &(Edit){.kind = EDIT_ADD, .name = "conv1.bias", .ndim = 1, .shape = {2}},
                "unexpected tensor 'conv1.bias'");
    // A wrong shape: input channels that do not follow, a kernel of another size.
    expect_load("resnet18", "resnet18",
                &(Edit){.kind = EDIT_RESHAPE, .name = "layer3.0.conv1.weight", .ndim = 4, .shape = {8, 2, 3, 3}},
                "tensor 'layer3.0.conv1.weight' has shape [8, 2, 3, 3], resnet18@layer4 expects [*, 4, 3, 3]");
    expect_load("vgg16", "vgg16", &(Edit){.kind = EDIT_RESHAPE, .name = "features.0.weight", .ndim = 4, .shape = {2, 3, 5, 5}},
                "tensor 'features.0.weight' has shape [2, 3, 5, 5]");
    expect_load("resnet50", "resnet50", &(Edit){.kind = EDIT_RESHAPE, .name = "layer1.1.bn2.weight", .ndim = 1, .shape = {3}},
                "tensor 'layer1.1.bn2.weight' has shape [3]");
    // Integers where floats belong; a running variance below zero.
    expect_load("resnet18", "resnet18", &(Edit){.kind = EDIT_TO_I64, .name = "bn1.running_mean"},
                "tensor 'bn1.running_mean' has dtype I64");
    expect_load("resnet18", "resnet18", &(Edit){.kind = EDIT_SET, .name = "layer1.1.bn2.running_var", .value = -1.0f},
                "layer1.1.bn2.running_var");
    // Files of other architectures.
    expect_load("resnet34", "resnet18", &none, "missing tensor 'layer1.2.conv1.weight'");
    expect_load("resnet18", "resnet34", &none, "unexpected tensor 'layer1.2.");
    expect_load("resnet101", "resnet50", &none, "missing tensor 'layer3.6.conv1.weight'");
    expect_load("resnet50", "resnet101", &none, "unexpected tensor 'layer3.");
    expect_load("resnet50", "resnet34", &none,
                "tensor 'layer1.0.conv1.weight' has shape [2, 2, 3, 3], resnet50@layer4 expects [*, 2, 1, 1]");
    expect_load("vgg16", "vgg19", &none, "features.");
    expect_load("vgg19", "vgg16", &none, "features.");
    expect_load("resnet18", "vgg16", &none, "missing tensor 'conv1.weight'");
    expect_load("vgg16", "resnet18", &none, "missing tensor 'features.0.weight'");
    // No such file, or not safetensors; a bad spec names the spec.
    Encoder *enc = (Encoder *)1;
    Error err = {{0}};
    EXPECT(encoder_load(&enc, "resnet18", "no/such/file.safetensors", &err) == -1 && !enc);
    EXPECT(strncmp(err.msg, "no/such/file.safetensors:", 25) == 0, "%s", err.msg);
    char wpath[512];
    weights_path(wpath, sizeof wpath, "resnet18");
    EXPECT(encoder_load(&enc, "resnet19", wpath, &err) == -1 && !enc);
    EXPECT(strncmp(err.msg, "resnet19:", 9) == 0, "%s", err.msg);
}

int main(void) {
    if (scratch_make(tmpdir, sizeof tmpdir, "test_encoder")) return 1;
    RUN(test_spec_parsing);
    RUN(test_parity_all_architectures);
    RUN(test_shapes_and_identity);
    RUN(test_refusals);
    scratch_remove(tmpdir);
    return test_summary();
}
