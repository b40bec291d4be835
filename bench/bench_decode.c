// bench_decode.c: caption inference throughput (beam search) of a trained captioner.
//
// Loads MODEL (a bin/caption model.safetensors: the configuration from its "sat.config"
// metadata, the weights by name), makes IMAGES random images (uniform [0, 1), fixed seed;
// the cost of a beam step does not depend on the pixels), then decodes them with
// sat_decode in batches of BATCH (bin/caption eval's default, 32): one warm-up batch, then
// the whole set timed with CLOCK_MONOTONIC. Prints one JSON object on stdout:
//     {"model": "sat-decode", "impl": "toolkit", "beam", "threads", "images",
//      "images_per_s", "images_per_cpu_s", "seconds", "mean_words", "peak_rss_mib"}
// images_per_cpu_s divides by the process's CPU time (CLOCK_PROCESS_CPUTIME_ID): on one
// thread it is what the wall-clock rate would be on an otherwise idle core.
// Usage: bench_decode MODEL [IMAGES=128] [BEAM=3] [THREADS=1] [BATCH=32]
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "core/check.h"
#include "core/gemm.h"
#include "core/rng.h"
#include "core/safetensors.h"
#include "core/timer.h"
#include "models/sat.h"
#include "models/sat_decode.h"

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_decode MODEL [IMAGES=128] [BEAM=3] [THREADS=1] [BATCH=32]\n");
        return 2;
    }
    const char *path = argv[1];
    int n = argc > 2 ? atoi(argv[2]) : 128, beam = argc > 3 ? atoi(argv[3]) : 3;
    int threads = argc > 4 ? atoi(argv[4]) : 1, batch = argc > 5 ? atoi(argv[5]) : 32;
    if (n < 1 || beam < 1 || threads < 1 || batch < 1) {
        fprintf(stderr, "bench_decode: IMAGES, BEAM, THREADS and BATCH must be >= 1\n");
        return 2;
    }
    gemm_set_threads(threads);
    SafetensorsFile f;
    Error err = {0};
    if (safetensors_load(&f, path, &err)) {
        fprintf(stderr, "bench_decode: %s\n", err.msg);
        return 1;
    }
    const char *text = safetensors_meta(&f, "sat.config");
    SatConfig cfg;
    if (!text) {
        fprintf(stderr, "bench_decode: %s: no sat.config metadata\n", path);
        return 1;
    }
    if (sat_config_parse(&cfg, text, &err)) {
        fprintf(stderr, "bench_decode: %s: %s\n", path, err.msg);
        return 1;
    }
    Rng rng;
    rng_seed(&rng, 1);
    SatModel m;
    sat_init(&m, &cfg, &rng);
    if (safetensors_read_block(&m.params, "", &f, path, &err)) {
        fprintf(stderr, "bench_decode: %s\n", err.msg);
        return 1;
    }
    safetensors_free(&f);
    sat_alloc_acts(&m, batch);
    const int S = cfg.image_size, C = cfg.cnn.in_channels, ML = cfg.max_len;
    const size_t per = (size_t)C * S * S;
    float *images = xmalloc((size_t)n * per * sizeof(float));
    for (size_t i = 0; i < (size_t)n * per; i++) images[i] = rng_uniform(&rng);
    int *tokens = xmalloc((size_t)batch * ML * sizeof(int)), *lens = xmalloc((size_t)batch * sizeof(int));

    int warm = n < batch ? n : batch;
    sat_decode(&m, tokens, lens, NULL, images, warm, beam, 0.0f);
    long words = 0;
    struct timespec c0, c1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    double t0 = timer_now();
    for (int b0 = 0; b0 < n; b0 += batch) {
        int k = n - b0 < batch ? n - b0 : batch;
        sat_decode(&m, tokens, lens, NULL, images + (size_t)b0 * per, k, beam, 0.0f);
        for (int i = 0; i < k; i++) words += lens[i];
    }
    double secs = timer_now() - t0;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    double cpu = (double)(c1.tv_sec - c0.tv_sec) + 1e-9 * (double)(c1.tv_nsec - c0.tv_nsec);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"model\": \"sat-decode\", \"impl\": \"toolkit\", \"beam\": %d, \"threads\": %d, "
           "\"images\": %d, \"images_per_s\": %.3f, \"images_per_cpu_s\": %.3f, \"seconds\": %.3f, "
           "\"mean_words\": %.2f, \"peak_rss_mib\": %.1f}\n",
           beam, threads, n, n / secs, n / cpu, secs, (double)words / n, ru.ru_maxrss / 1024.0);
    free(images), free(tokens), free(lens);
    sat_free(&m);
    return 0;
}
