// bench_encoder.c: inference speed of a pretrained encoder (vision/encoder.h).
//
// Usage: bench_encoder ARCH WEIGHTS [BATCH [SIZE [THREADS [GROUP [CONV [BATCHES]]]]]]
//   defaults: batch 16, 224 px, 1 thread, group = batch / threads, conv auto (or im2col,
//   winograd), 3 timed batches.
// THREADS workers each run single-threaded GEMMs on their share of the batch (GROUP images
// per pass); THREADS = -N runs one worker whose GEMMs use N OpenBLAS threads instead.
// Random images (fixed seed), one warm-up batch, then BATCHES timed batches (CLOCK_MONOTONIC
// via core/timer.h). Prints one JSON object on stdout: the median batch's images per second,
// images per CPU-second over the timed batches (what idle cores would do, on a shared machine),
// milliseconds per batch, the convolutions' GFLOP/s (2 multiply-adds... counted as
// encoder_flops: 2 * K*K*C*OC*Ho*Wo per convolution, direct), the workspace and weights in
// MiB. Peak memory is measured by the caller (bench/reference/bench_encoders.py, wait4).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/check.h"
#include "core/gemm.h"
#include "core/rng.h"
#include "core/timer.h"
#include "vision/encoder.h"

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: bench_encoder ARCH WEIGHTS [BATCH [SIZE [THREADS [GROUP [CONV "
                        "[BATCHES]]]]]]\n");
        return 2;
    }
    const int B = argc > 3 ? atoi(argv[3]) : 16, S = argc > 4 ? atoi(argv[4]) : 224;
    int threads = argc > 5 ? atoi(argv[5]) : 1, blas = 1;
    if (threads < 0) blas = -threads, threads = 1;
    const int group = argc > 6 && atoi(argv[6]) > 0 ? atoi(argv[6]) : (B + threads - 1) / threads;
    const char *conv_name = argc > 7 ? argv[7] : "auto";
    const int batches = argc > 8 ? atoi(argv[8]) : 3;
    EncoderConv conv = strcmp(conv_name, "im2col") == 0     ? ENCODER_CONV_IM2COL
                       : strcmp(conv_name, "winograd") == 0 ? ENCODER_CONV_WINOGRAD
                                                            : ENCODER_CONV_AUTO;
    CHECK(B >= 1 && S >= 32 && threads >= 1 && batches >= 1 && batches <= 100, "bad arguments");
    gemm_set_threads(blas);
    Encoder *enc;
    Error err;
    double t0 = timer_now();
    if (encoder_load(&enc, argv[1], argv[2], &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    const double load_s = timer_now() - t0;
    EncoderWorkspace ws;
    encoder_workspace_alloc(&ws, enc, S, threads, group, conv);
    const int G = encoder_grid_size(enc, S), D = encoder_dim(enc);
    const size_t in = (size_t)B * 3 * S * S, out = (size_t)B * G * G * D;
    float *images = xmalloc(in * sizeof(float)), *annot = xmalloc(out * sizeof(float));
    Rng rng;
    rng_seed(&rng, 1);
    for (size_t i = 0; i < in; i++) images[i] = rng_normal(&rng);
    encoder_forward(enc, &ws, annot, images, B);  // warm-up
    double secs[100], c0 = cpu_now();
    for (int k = 0; k < batches; k++) {
        double t = timer_now();
        encoder_forward(enc, &ws, annot, images, B);
        secs[k] = timer_now() - t;
    }
    const double cpu = cpu_now() - c0;
    qsort(secs, (size_t)batches, sizeof secs[0], cmp_double);
    const double med = secs[batches / 2];
    char kernels[160];
    gemm_kernels(kernels, sizeof kernels);
    double check = 0.0;
    for (size_t i = 0; i < out; i++) check += annot[i];
    printf("{\"arch\": \"%s\", \"batch\": %d, \"size\": %d, \"threads\": %d, \"blas_threads\": %d, "
           "\"group\": %d, \"conv\": \"%s\", \"images_per_s\": %.3f, \"ms_per_batch\": %.1f, "
           "\"conv_gflops\": %.1f, \"workspace_mib\": %.1f, \"weights_mib\": %.1f, "
           "\"load_s\": %.2f, \"images_per_cpu_s\": %.3f, \"output_sum\": %.6g, "
           "\"gemm_kernels\": \"%s\"}\n",
           argv[1], B, S, threads, blas, ws.group, conv_name, B / med, 1e3 * med,
           encoder_flops(enc, S) * B / med / 1e9, ws.bytes / 1048576.0,
           encoder_param_count(enc) * 4.0 / 1048576.0, load_s, (double)B * batches / cpu, check,
           kernels);
    free(images);
    free(annot);
    encoder_workspace_free(&ws);
    encoder_free(enc);
    return 0;
}
