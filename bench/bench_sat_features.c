// bench_sat_features.c: decoder-only training throughput on cached features, the way
// `caption train --features` trains: batches of annotations read from a memory-mapped
// feature cache (datasets/featcache.h, F16 widened to float), the Show-Attend-Tell decoder
// (models/sat.h in decoder-only mode) forward and backward on the data-parallel workers,
// global-norm clipping at 5 and an Adam step (one fused pass, core/adam.h).
//
// Usage: bench_sat_features CACHE [THREADS=1] [STEPS=5] [BATCH=64] [E=512] [H=1800] [A=512]
//                           [V=10000]
// CACHE is a feature cache; when it does not exist, one of 256 images x 196 x 512 F16 with
// uniform [0, 4) values (a fixed seed) is written there first, so that a reference
// (bench/reference/sat_features_ref.py) can read the same file. The defaults are Xu et
// al.'s decoder as experiments/sat_flickr8k.sh trains it: embedding 512, LSTM 1800,
// attention 512, soft additive attention queried by the previous state, scalar gate,
// lambda 1, 10,000 words; no dropout (the reference has none; the scripts train with 0.5).
// Caption lengths are 8 + (7 k mod 9) words for the k-th caption of the run (mean 12, as Flickr8k's); word ids are drawn from a fixed seed,
// images in a fixed shuffled order. One warm-up step, then STEPS timed with
// CLOCK_MONOTONIC. Prints one JSON object on stdout:
//     {"model": "sat-features", "impl": "toolkit", "threads", "batch", "steps",
//      "images_per_s", "images_per_cpu_s", "final_loss", "peak_rss_mib"}
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "core/adam.h"
#include "core/check.h"
#include "core/fileio.h"
#include "core/gemm.h"
#include "core/rng.h"
#include "core/timer.h"
#include "datasets/featcache.h"
#include "models/sat.h"
#include "models/sat_parallel.h"

enum { BENCH_N = 256, BENCH_L = 196, BENCH_D = 512 };

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// The stand-in cache (BENCH_N x BENCH_L x BENCH_D F16).
static void write_cache(const char *path) {
    static char ids_mem[BENCH_N][16];
    const char *ids[BENCH_N];
    for (int i = 0; i < BENCH_N; i++) {
        snprintf(ids_mem[i], sizeof ids_mem[i], "%06d.jpg", i);
        ids[i] = ids_mem[i];
    }
    FeatCacheInfo info = {.encoder = "vgg19",
                          .encoder_sha256 = "0000000000000000000000000000000000000000000000000000000000000000",
                          .encoder_weights = "(random stand-in)", .encoder_description = "bench",
                          .preprocess = "none", .image_size = 224, .data = "bench", .n = BENCH_N,
                          .ids = ids, .L = BENCH_L, .D = BENCH_D, .dtype = FEAT_F16, .batch = 16,
                          .threads = 1, .group = 1};
    FeatCacheWriter w;
    Error err;
    CHECK(featcache_writer_open(&w, path, &info, &err) == 0, "%s", err.msg);
    float *a = xmalloc((size_t)16 * BENCH_L * BENCH_D * sizeof(float));
    unsigned char st[16];
    memset(st, FEAT_OK, sizeof st);
    Rng rng;
    rng_seed(&rng, 42);
    for (int i0 = w.start; i0 < BENCH_N; i0 += 16) {
        for (size_t q = 0; q < (size_t)16 * BENCH_L * BENCH_D; q++) a[q] = 4.0f * rng_uniform(&rng);
        CHECK(featcache_writer_put(&w, i0, 16, a, st, &err) == 0, "%s", err.msg);
    }
    CHECK(featcache_writer_finish(&w, &err) == 0, "%s", err.msg);
    featcache_writer_close(&w);
    free(a);
}

// The decoder of the arguments (E, H, A, V) over the cache's annotations.
static SatConfig decoder_config(const FeatCache *cache, const int *arg) {
    SatConfig c;
    Error err;
    sat_config_default(&c);
    c.feat_L = cache->L;
    c.feat_D = cache->D;
    c.image_size = cache->image_size;
    c.E = arg[3];
    c.H = arg[4];
    c.attn.A = arg[5];
    c.V = arg[6];
    c.max_len = 16;
    c.query = SAT_QUERY_PREVIOUS;
    c.lambda = 1.0f;
    c.dropout = 0.0f;  // as the reference (sat_ref.py has no dropout)
    CHECK(sat_config_finish(&c, &err) == 0, "%s", err.msg);
    return c;
}

// The model and, with several workers, one replica each (single-threaded BLAS in each);
// one worker gets the BLAS threads instead.
typedef struct {
    SatModel m;
    SatModel *reps;  // NULL with one worker
    int workers;
} Trainer;

static void trainer_init(Trainer *t, const SatConfig *c, Rng *rng, int threads, int B) {
    sat_init(&t->m, c, rng);
    t->workers = threads < B ? threads : B;
    const int share = (B + t->workers - 1) / t->workers;
    sat_alloc_acts(&t->m, t->workers > 1 ? share : B);
    t->reps = NULL;
    if (t->workers == 1) {
        gemm_set_threads(threads);
        return;
    }
    gemm_set_threads(1);
    t->reps = xcalloc((size_t)t->workers, sizeof(SatModel));
    for (int w = 0; w < t->workers; w++) {
        sat_replica_init(&t->reps[w], &t->m);
        sat_alloc_acts(&t->reps[w], share);
    }
}

static void trainer_free(Trainer *t) {
    if (t->reps)
        for (int w = 0; w < t->workers; w++) sat_free(&t->reps[w]);
    free(t->reps);
    sat_free(&t->m);
}

// The next B cached images in the shuffled order (position *pos) with captions of the
// lengths the header gives (k counts the run's captions) and random words.
static void fill_batch(float *annot, int *words, int *lens, int B, const FeatCache *cache,
                       const int *order, long *pos, long *k, const SatConfig *c, Rng *rng) {
    const size_t per = sat_input_floats(c);
    for (int b = 0; b < B; b++, (*k)++) {
        featcache_get(cache, order[(*pos)++ % cache->n], annot + (size_t)b * per);
        lens[b] = 8 + (int)((7 * *k) % 9);
        for (int w = 0; w < c->max_len; w++)
            words[b * c->max_len + w] = w < lens[b] ? 4 + (int)rng_below(rng, (uint32_t)(c->V - 4)) : 0;
    }
}

// One step on the batch: forward, backward, clip at 5 and Adam. Returns the loss.
static float train_step(Trainer *t, const float *annot, const int *words, const int *lens, int B,
                        int it, const AdamConfig *adam) {
    SatModel *m = &t->m;
    SatLoss l;
    if (t->workers > 1)
        sat_forward_backward_parallel(&l, m, t->reps, t->workers, annot, words, lens, B, (uint64_t)it + 7);
    else
        sat_forward_backward(&l, m, annot, words, lens, B, (uint64_t)it + 7, 0);
    adam_clip_update_threads(m->params.data, m->grads.data, m->adam_m.data, m->adam_v.data,
                             m->params.numel, adam, it + 1, 2e-4f, 5.0f, t->workers);
    return l.loss;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_sat_features CACHE [THREADS=1] [STEPS=5] [BATCH=64] [E=512] "
                        "[H=1800] [A=512] [V=10000]\n");
        return 2;
    }
    const char *path = argv[1];
    int arg[7] = {1, 5, 64, 512, 1800, 512, 10000};
    for (int i = 0; i < 7 && i + 2 < argc; i++) arg[i] = atoi(argv[i + 2]);
    const int threads = arg[0], steps = arg[1], B = arg[2];
    for (int i = 0; i < 7; i++)
        if (arg[i] < 1) {
            fprintf(stderr, "bench_sat_features: every number must be >= 1\n");
            return 2;
        }
    if (!file_exists(path)) write_cache(path);
    FeatCache cache;
    Error err;
    if (featcache_open(&cache, path, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    const SatConfig c = decoder_config(&cache, arg);
    Rng rng;
    rng_seed(&rng, 1);
    Trainer t;
    trainer_init(&t, &c, &rng, threads, B);
    float *annot = xmalloc((size_t)B * sat_input_floats(&c) * sizeof(float));
    int *words = xmalloc((size_t)B * c.max_len * sizeof(int)), *lens = xmalloc((size_t)B * sizeof(int));
    int *order = xmalloc((size_t)cache.n * sizeof(int));
    for (int i = 0; i < cache.n; i++) order[i] = i;
    rng_shuffle(&rng, order, cache.n);
    AdamConfig adam = adam_defaults(2e-4f);
    double t_wall = 0.0, t_cpu = 0.0, loss = NAN;
    long k = 0, pos = 0;
    for (int it = 0; it <= steps; it++) {  // step 0 warms up, untimed
        double t0 = timer_now(), c0 = cpu_seconds();
        fill_batch(annot, words, lens, B, &cache, order, &pos, &k, &c, &rng);
        loss = train_step(&t, annot, words, lens, B, it, &adam);
        if (it > 0) t_wall += timer_now() - t0, t_cpu += cpu_seconds() - c0;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"model\": \"sat-features\", \"impl\": \"toolkit\", \"threads\": %d, \"batch\": %d, "
           "\"steps\": %d, \"images_per_s\": %.3f, \"images_per_cpu_s\": %.3f, \"final_loss\": %.4f, "
           "\"peak_rss_mib\": %.1f}\n",
           threads, B, steps, B * steps / t_wall, B * steps / t_cpu, loss, ru.ru_maxrss / 1024.0);
    trainer_free(&t);
    featcache_close(&cache);
    free(annot), free(words), free(lens), free(order);
    return 0;
}
