// parity_encoders.c: the full-width parity run of vision/encoder.h (`make parity-encoders`).
//
// Usage: parity_encoders DIR
// DIR holds what `bench/reference/encoders_ref.py full DIR` wrote: ARCH.safetensors (random
// torchvision weights at full width, converted from a .pth by pth_to_safetensors.py) for
// the seven architectures, and parity.safetensors with input (2, 3, 224, 224) and
// output/ARCH (2, L, D) (float64 references). For each architecture: load, run both images
// (two workers, Winograd where it fits), and print the largest absolute error, the largest
// error relative to the output's largest magnitude, and the largest elementwise relative error
// over the elements above 1 % of that magnitude. Exits non-zero when any element is off by
// more than 1e-4 max|want| + 1e-4 |want|.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/gemm.h"
#include "core/safetensors.h"
#include "vision/encoder.h"

static const char *ARCHS[] = {"vgg16", "vgg19", "resnet18", "resnet34", "resnet50", "resnet101",
                              "resnet152"};

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: parity_encoders DIR   (see `make parity-encoders`)\n");
        return 2;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/parity.safetensors", argv[1]);
    SafetensorsFile f;
    Error err;
    if (safetensors_load(&f, path, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    const SafetensorsTensor *in = safetensors_find(&f, "input");
    if (!in || in->ndim != 4 || in->shape[0] != 2 || in->shape[1] != 3 || !in->data) {
        fprintf(stderr, "%s: no input (2, 3, S, S)\n", path);
        return 1;
    }
    const int S = (int)in->shape[2], B = 2;
    gemm_set_threads(1);
    int failed = 0;
    printf("%-10s %8s %12s %12s %12s %12s\n", "encoder", "L x D", "max|want|", "max abs err",
           "err/max|want|", "max rel err");
    for (size_t k = 0; k < sizeof ARCHS / sizeof ARCHS[0]; k++) {
        char wpath[1024], key[64];
        snprintf(wpath, sizeof wpath, "%s/%s.safetensors", argv[1], ARCHS[k]);
        snprintf(key, sizeof key, "output/%s", ARCHS[k]);
        Encoder *enc;
        if (encoder_load(&enc, ARCHS[k], wpath, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            failed = 1;
            continue;
        }
        const int G = encoder_grid_size(enc, S), D = encoder_dim(enc);
        const size_t n = (size_t)B * G * G * D;
        const SafetensorsTensor *want = safetensors_find(&f, key);
        if (!want || want->numel != n) {
            fprintf(stderr, "%s: %s missing or not (%d, %d, %d)\n", path, key, B, G * G, D);
            failed = 1;
            encoder_free(enc);
            continue;
        }
        float *got = xmalloc(n * sizeof(float));
        EncoderWorkspace ws;
        encoder_workspace_alloc(&ws, enc, S, 2, 1, ENCODER_CONV_AUTO);
        encoder_forward(enc, &ws, got, in->data, B);
        encoder_workspace_free(&ws);
        double scale = 0.0, abs_err = 0.0, rel_err = 0.0;
        for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(want->data[i]));
        int bad = 0;
        for (size_t i = 0; i < n; i++) {
            double e = fabs((double)got[i] - want->data[i]), w = fabs(want->data[i]);
            abs_err = fmax(abs_err, e);
            if (w > 0.01 * scale) rel_err = fmax(rel_err, e / w);
            bad |= !(e <= 1e-4 * scale + 1e-4 * w);
        }
        printf("%-10s %4d x %-4d %12.5g %12.3g %12.3g %12.3g%s\n", ARCHS[k], G * G, D, scale,
               abs_err, abs_err / scale, rel_err, bad ? "  FAIL" : "");
        failed |= bad;
        free(got);
        encoder_free(enc);
    }
    safetensors_free(&f);
    return failed;
}
