// bench_allreduce_model.c: what data parallelism over MPI (cli/train_dist.h) would give on a
// cluster, on paper, from a measured compute time per step.
//
// For three models it counts the gradient floats each training step sums over the ranks
// (4 bytes each; every parameter has a gradient), times one training step on this machine
// (forward, backward, clip and Adam; THREADS threads as data-parallel workers; one warm-up
// step, then the median of STEPS), and prints, for N = 2 .. 64 nodes and links of 10, 25
// and 100 Gbit/s, the step time and scaling efficiency a ring allreduce implies:
//     t_allreduce = 2 (N - 1) / N * bytes / bandwidth + 2 (N - 1) * latency
//     t_step      = t_compute + t_allreduce          (the sum after the backward, as
//                                                     bin/draw and bin/caption sum by default;
//                                                     caption --overlap-sums: bench/RESULTS.md)
//     efficiency  = t_compute / t_step
// The compute time used is the step's CPU time divided by THREADS (the process's CPU clock):
// on a machine shared with other work, it is what the wall time would be on idle cores
// (the wall time is printed beside it).
// Weak scaling: each node keeps the batch measured here, so N nodes train N times the
// images per step. core/dist.c's fixed-order sum (an all-to-all, then an all-gather) moves
// what a ring moves, 2 (N - 1) / N of the buffer per rank; latency is taken as 20 us per
// message, a TCP/Ethernet figure (InfiniBand is nearer 2 us).
//
// The models:
//   draw      the paper's MNIST DRAW (T 64, read 2, write 5, LSTMs 256, z 100), batch 100
//   caption   bin/caption's default captioner (64 px, CNN 32-64-128, E 128, H 256,
//             attention 128) with a 10,000-word vocabulary, batch 32
//   features  the paper's decoder on 14 x 14 x 512 features (arctic-captions' COCO
//             settings: embedding 512, LSTM 1800, attention 512, 10,000 words, batch 64);
//             the features come from one 3 x 3 convolution of 512 channels on 28 px images,
//             whose weights are left out of the count and whose time (under 1 %) is not
//
// Under mpirun (`sh tests/mpirun_local.sh -np 2 build/bench/bench_allreduce_model 1 5`) it
// measures instead where a rank's step goes on this machine: each rank computes its share of
// the same global batch (forward and backward), waits for the others (a barrier: the
// imbalance), then sums the gradient with core/dist.c's fixed-order allreduce; medians of
// STEPS steps per rank. For the captioner with a CNN it also times the CNN's backward alone
// (run once more after the step): the window in which the decoder's gradient, complete
// before the CNN's backward starts, could be summed (models/sat.c: sat_backward).
// Usage: bench_allreduce_model [THREADS=2] [STEPS=3] [MODELS=draw,caption,features]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/adam.h"
#include "core/block.h"
#include "core/check.h"
#include "core/dist.h"
#include "core/gemm.h"
#include "core/rng.h"
#include "core/timer.h"
#include "models/draw.h"
#include "models/sat.h"
#include "models/sat_parallel.h"
#include "vision/cnn.h"

typedef struct {
    const char *name;
    size_t floats;     // gradient floats summed per step
    double step_s;     // compute time of one step on this machine: CPU time / threads
    double wall_s;     // its wall time (longer when other work shares the cores)
    int batch;
    // Under mpirun (this rank's medians, s): its share's forward and backward (wall), the
    // wait for the other ranks, the allreduce, and the CNN's backward alone (0 without one).
    double share_s, wait_s, sum_s, cnn_bwd_s;
    // With a CNN: whole steps (forward, backward, sums) without and with the decoder's sum
    // overlapped with the CNN's backward (the way bin/caption trains over ranks), medians of
    // interleaved steps; 0 otherwise.
    double plain_step_s, overlap_step_s;
} ModelCost;

// The sums of an overlapped step (cli/caption_train.c does the same with its share factors).
typedef struct {
    Dist *d;
    DistSumInFlight decoder;
} OverlapSums;

static int overlap_reward_sum(void *ctx, double *v) {
    OverlapSums *o = ctx;
    Error err;
    return dist_allreduce_sum_f64(o->d, v, 1, &err);
}

static int overlap_decoder_done(void *ctx, float *grads, size_t begin, size_t end) {
    OverlapSums *o = ctx;
    Error err;
    return dist_allreduce_sum_start(&o->decoder, o->d, grads + begin, end - begin, &err);
}

// One step of a rank with the decoder's gradient summed during the CNN's backward, and one
// without; returns their wall times in t[0] (plain) and t[1] (overlapped).
static void time_overlap(Dist *d, SatModel *m, SatModel *w, int n, const float *images,
                         const int *words, const int *lens, int B, uint64_t seed, double *t) {
    Error err;
    SatLoss loss;
    double t0 = timer_now();
    sat_forward_backward_parallel(&loss, m, w, n, images, words, lens, B, seed);
    CHECK(dist_allreduce_sum(d, m->grads.data, m->grads.numel, &err) == 0, "%s", err.msg);
    t[0] = timer_now() - t0;
    dist_barrier(d);
    OverlapSums o = {.d = d};
    const SatBatchSum across = {.sum = overlap_reward_sum, .decoder_done = overlap_decoder_done,
                                .ctx = &o};
    const size_t enc = sat_encoder_grad_floats(m);
    t0 = timer_now();
    CHECK(sat_forward_backward_parallel_from(&loss, m, w, n, 0, images, words, lens, B, seed,
                                             &across) == 0, "overlapped step");
    CHECK(dist_allreduce_sum_finish(&o.decoder, &err) == 0, "%s", err.msg);
    CHECK(dist_allreduce_sum(d, m->grads.data, enc, &err) == 0, "%s", err.msg);
    t[1] = timer_now() - t0;
    dist_barrier(d);
}

// The timed phases of one step under mpirun, after this rank's forward and backward.
typedef struct {
    double share[16], wait[16], sum[16], cnn[16];
} RankPhases;

// Barrier (timed as the wait), then the fixed-order sum of grads (timed).
static void rank_sum(Dist *d, Block *grads, RankPhases *ph, int k) {
    double t0 = timer_now();
    dist_barrier(d);
    double t1 = timer_now();
    Error err;
    CHECK(dist_allreduce_sum(d, grads->data, grads->numel, &err) == 0, "%s", err.msg);
    ph->wait[k] = t1 - t0;
    ph->sum[k] = timer_now() - t1;
}

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static ModelCost measure_draw(Dist *d, int threads, int steps) {
    int B = 100, first;
    dist_share(d, 100, &first, &B);
    DrawConfig c = draw_config_default(28, 28);
    Block params = {0}, grads = {0}, m = {0}, v = {0};
    DrawParams p, g, pm, pv;
    draw_layout(&params, &p, &c), draw_layout(&grads, &g, &c);
    draw_layout(&m, &pm, &c), draw_layout(&v, &pv, &c);
    block_alloc(&params), block_alloc(&grads), block_alloc(&m), block_alloc(&v);
    Rng rng;
    rng_seed(&rng, 7);
    draw_init(&p, &c, &rng);
    const int n = draw_worker_count(threads, B);
    DrawWorker *w = xcalloc((size_t)n, sizeof *w);
    draw_workers_alloc(w, n, &c, B);
    gemm_set_threads(threads / n);
    float *x = xmalloc(sizeof(float) * (size_t)B * 28 * 28);
    float *eps = xmalloc(sizeof(float) * (size_t)c.T * B * c.z);
    for (int i = 0; i < B * 28 * 28; i++) x[i] = rng_uniform(&rng) < 0.2f ? 1.0f : 0.0f;
    AdamConfig adam = adam_defaults(1e-3f);
    double t[16], cpu[16];
    RankPhases ph = {0};
    for (int s = 0; s <= steps; s++) {
        draw_noise_fill(eps, &c, B, &rng);
        double t0 = timer_now(), c0 = cpu_now();
        draw_forward_parallel(w, n, &p, &c, x, eps, NULL, B, &grads, NULL, NULL, NULL);
        if (d->size > 1 && s > 0) {
            ph.share[s - 1] = timer_now() - t0;
            rank_sum(d, &grads, &ph, s - 1);
        }
        clip_global_norm(grads.data, grads.numel, 10.0f);
        adam_update(params.data, grads.data, m.data, v.data, params.numel, &adam, s + 1, 1e-3f);
        if (s > 0) t[s - 1] = timer_now() - t0, cpu[s - 1] = (cpu_now() - c0) / threads;
    }
    ModelCost r = {"draw (paper MNIST)", params.numel, median(cpu, steps), median(t, steps), B,
                   median(ph.share, steps), median(ph.wait, steps), median(ph.sum, steps), 0, 0, 0};
    draw_workers_free(w, n);
    free(w), free(x), free(eps);
    block_free(&params), block_free(&grads), block_free(&m), block_free(&v);
    return r;
}

// Gradient floats of a captioner, without its CNN's when without_cnn.
static size_t sat_floats(const SatModel *m, int without_cnn) {
    size_t n = 0;
    for (int i = 0; i < m->params.count; i++)
        if (!without_cnn || strncmp(m->params.tensors[i].name, "cnn", 3) != 0)
            n += m->params.tensors[i].numel;
    return n;
}

static ModelCost measure_sat(Dist *d, const char *name, SatConfig *c, int B, int without_cnn,
                             int threads, int steps) {
    int first;
    dist_share(d, B, &first, &B);
    Error err;
    CHECK(sat_config_finish(c, &err) == 0, "%s", err.msg);
    SatModel m;
    Rng rng;
    rng_seed(&rng, 7);
    sat_init(&m, c, &rng);
    const int n = threads < B ? threads : B, share = (B + n - 1) / n;
    sat_alloc_acts(&m, share);
    SatModel *w = xcalloc((size_t)n, sizeof *w);
    for (int k = 0; k < n; k++) {
        sat_replica_init(&w[k], &m);
        sat_alloc_acts(&w[k], share);
    }
    gemm_set_threads(1);
    const int S = c->image_size, ML = c->max_len;
    float *images = xmalloc(sizeof(float) * (size_t)B * 3 * S * S);
    int *words = xmalloc(sizeof(int) * (size_t)B * ML), *lens = xmalloc(sizeof(int) * (size_t)B);
    for (size_t i = 0; i < (size_t)B * 3 * S * S; i++) images[i] = rng_uniform(&rng);
    for (int b = 0; b < B; b++) {
        lens[b] = ML * 3 / 4;  // a typical COCO caption: 12 of 16 words
        for (int t = 0; t < ML; t++) words[b * ML + t] = 4 + (int)rng_below(&rng, (uint32_t)(c->V - 4));
    }
    AdamConfig adam = adam_defaults(1e-3f);
    double t[16], cpu[16];
    RankPhases ph = {0};
    for (int s = 0; s <= steps; s++) {
        double t0 = timer_now(), c0 = cpu_now();
        SatLoss loss;
        sat_forward_backward_parallel(&loss, &m, w, n, images, words, lens, B, (uint64_t)s);
        if (d->size > 1 && s > 0) {
            ph.share[s - 1] = timer_now() - t0;
            rank_sum(d, &m.grads, &ph, s - 1);
            if (!without_cnn && n == 1) {  // the CNN's backward once more, alone
                double c1 = timer_now();
                sat_backward_encoder(&w[0]);  // on the step's activations (its sorted images)
                ph.cnn[s - 1] = timer_now() - c1;
                block_zero(&w[0].grads);
            }
        }
        clip_global_norm(m.grads.data, m.grads.numel, 5.0f);
        adam_update(m.params.data, m.grads.data, m.adam_m.data, m.adam_v.data, m.params.numel,
                    &adam, s + 1, 1e-3f);
        if (s > 0) t[s - 1] = timer_now() - t0, cpu[s - 1] = (cpu_now() - c0) / threads;
    }
    ModelCost r = {name, sat_floats(&m, without_cnn), median(cpu, steps), median(t, steps), B,
                   median(ph.share, steps), median(ph.wait, steps), median(ph.sum, steps),
                   median(ph.cnn, steps), 0, 0};
    if (d->size > 1 && !without_cnn) {
        double plain[16], over[16], tt[2];
        for (int s = 0; s < steps; s++) {
            time_overlap(d, &m, w, n, images, words, lens, B, (uint64_t)s, tt);
            plain[s] = tt[0], over[s] = tt[1];
        }
        r.plain_step_s = median(plain, steps);
        r.overlap_step_s = median(over, steps);
    }
    for (int k = 0; k < n; k++) sat_free(&w[k]);
    free(w), free(images), free(words), free(lens);
    sat_free(&m);
    return r;
}

// The 1-minute load average, for the figures' context.
static const char *load_text(char *text, int n) {
    FILE *f = fopen("/proc/loadavg", "r");
    text[0] = 0;
    if (f) {
        if (!fgets(text, n, f)) text[0] = 0;
        fclose(f);
    }
    text[strcspn(text, " \n")] = 0;
    return text[0] ? text : "unknown";
}

static void print_model(const ModelCost *mc, int threads) {
    const double bytes = 4.0 * (double)mc->floats, latency = 20e-6;
    printf("\n%s: %zu gradient floats, %.2f MB allreduced per step; step %.3f s of CPU per "
           "thread (wall %.3f s; batch %d, %d thread%s)\n", mc->name, mc->floats, bytes / 1e6,
           mc->step_s, mc->wall_s, mc->batch, threads, threads == 1 ? "" : "s");
    const double gbits[3] = {10, 25, 100};
    printf("  %5s", "nodes");
    for (int k = 0; k < 3; k++) printf(" | %3g Gbit/s: allreduce, step, efficiency", gbits[k]);
    printf("\n");
    for (int N = 2; N <= 64; N *= 2) {
        printf("  %5d", N);
        for (int k = 0; k < 3; k++) {
            double t_ar = 2.0 * (N - 1) / N * bytes / (gbits[k] * 1e9 / 8) + 2.0 * (N - 1) * latency;
            double t_step = mc->step_s + t_ar;
            printf(" | %13.1f ms %8.3f s %9.1f %%", t_ar * 1e3, t_step, 100.0 * mc->step_s / t_step);
        }
        printf("\n");
    }
}

// Under mpirun: every rank's phases, printed by rank 0.
static void print_ranks(Dist *d, const ModelCost *mc) {
    double v[6 * 64] = {0};
    CHECK(d->size <= 64, "ranks %d", d->size);
    double *mine = v + 6 * d->rank;
    mine[0] = mc->share_s, mine[1] = mc->wait_s, mine[2] = mc->sum_s, mine[3] = mc->cnn_bwd_s;
    mine[4] = mc->plain_step_s, mine[5] = mc->overlap_step_s;
    Error err;
    CHECK(dist_allreduce_sum_f64(d, v, 6 * (size_t)d->size, &err) == 0, "%s", err.msg);
    if (!dist_is_root(d)) return;
    printf("\n%s: %.2f MB summed per step, a share of %d images a rank\n", mc->name,
           4.0 * (double)mc->floats / 1e6, mc->batch);
    for (int r = 0; r < d->size; r++) {
        const double *x = v + 6 * r, step = x[0] + x[1] + x[2];
        printf("  rank %d: compute %.1f ms, wait %.1f ms, allreduce %.1f ms (%.1f %% of %.1f ms)",
               r, 1e3 * x[0], 1e3 * x[1], 1e3 * x[2], 100.0 * x[2] / step, 1e3 * step);
        if (x[3] > 0) printf("; CNN backward alone %.1f ms", 1e3 * x[3]);
        printf("\n");
        if (x[4] > 0)
            printf("          whole step, the decoder's sum after the backward %.1f ms, during "
                   "the CNN's backward %.1f ms (%s)\n", 1e3 * x[4], 1e3 * x[5],
                   d->background ? "on a thread of its own" : "no thread support: not overlapped");
    }
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 2, steps = argc > 2 ? atoi(argv[2]) : 3;
    const char *which = argc > 3 ? argv[3] : "draw,caption,features";
    if (threads < 1 || steps < 1 || steps > 16) {
        fprintf(stderr, "usage: bench_allreduce_model [THREADS=2] [STEPS=3 (1-16)] [MODELS]\n");
        return 2;
    }
    Dist d;
    Error err;
    if (dist_init(&d, &err)) {
        fprintf(stderr, "bench_allreduce_model: %s\n", err.msg);
        return 1;
    }
    void (*report)(Dist *, const ModelCost *) = NULL;
    if (d.size > 1) {
        char load[64];
        if (dist_is_root(&d))
            printf("where a step goes over %d ranks (see the top of "
                   "bench/bench_allreduce_model.c), %d thread%s a rank, median of %d steps; "
                   "load %s\n", d.size, threads, threads == 1 ? "" : "s", steps,
                   load_text(load, sizeof load));
        report = print_ranks;
    } else {
        printf("ring allreduce model (see the top of bench/bench_allreduce_model.c); compute "
               "measured here, %d thread%s, median of %d steps\n", threads,
               threads == 1 ? "" : "s", steps);
    }
    if (strstr(which, "draw")) {
        ModelCost m = measure_draw(&d, threads, steps);
        report ? report(&d, &m) : print_model(&m, threads);
    }
    if (strstr(which, "caption")) {
        SatConfig c;
        sat_config_default(&c);
        c.V = 10000;
        ModelCost m = measure_sat(&d, "captioner, small CNN (10,000 words)", &c, 32, 0, threads,
                                  steps);
        report ? report(&d, &m) : print_model(&m, threads);
    }
    if (strstr(which, "features")) {
        SatConfig c;
        sat_config_default(&c);
        c.image_size = 28;
        c.cnn.n_layers = 1;
        c.cnn.channels[0] = 512;
        c.E = 512, c.H = 1800, c.attn.A = 512, c.V = 10000;
        ModelCost m = measure_sat(&d, "captioner on 14x14x512 features, the paper's decoder", &c,
                                  64, 1, threads, steps);
        report ? report(&d, &m) : print_model(&m, threads);
    }
    dist_finalize(&d);
    return 0;
}
