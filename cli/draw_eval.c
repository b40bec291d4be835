// draw_eval.c: DRAW's bound on a split (cli/draw_eval.h).
#include "cli/draw_eval.h"

#include <math.h>
#include <stdlib.h>

#include "core/check.h"
#include "core/progress.h"
#include "core/rng.h"

void draw_share_noise(float *eps, const DrawConfig *c, int first, int count, uint64_t seed) {
    for (int b = 0; b < count; b++) {
        Rng rng;
        rng_seed(&rng, rng_mix(seed, (uint64_t)(first + b)));
        for (int t = 0; t < c->T; t++)
            rng_normal_fill(&rng, eps + ((size_t)t * count + b) * c->z, (size_t)c->z);
    }
}

void draw_eval_scratch_alloc(DrawEvalScratch *e, Dist *d, int threads, const DrawConfig *c,
                             int B, int K) {
    int begin, most;
    dist_share_of(0, d->size, B, &begin, &most);  // rank 0's share is the largest
    e->dist = d;
    e->B = B;
    e->n_workers = draw_worker_count(threads, most);
    e->w = xcalloc((size_t)e->n_workers, sizeof *e->w);
    draw_workers_alloc(e->w, e->n_workers, c, most);
    e->eps = xmalloc(sizeof(float) * (size_t)c->T * most * c->z);
    e->logw = xmalloc(sizeof(double) * (size_t)B * K);
    e->progress = false;
    e->record = NULL;
}

void draw_eval_scratch_free(DrawEvalScratch *e) {
    draw_workers_free(e->w, e->n_workers);
    free(e->w), free(e->eps), free(e->logw);
}

// Image i's bound (reconstruction + KL) or, with iw, its IW estimate, from fig (n, 3).
static double image_figure(const double *fig, int i, bool iw) {
    const double *f = fig + (size_t)i * 3;
    return iw ? f[2] : f[0] + f[1];
}

// The standard error of the mean of the images' bounds or IW estimates: the sample standard
// deviation over sqrt(n); NAN for fewer than 2 images.
static double standard_error(const double *fig, int n, bool iw) {
    if (n < 2) return NAN;
    double mean = 0.0, ss = 0.0;
    for (int i = 0; i < n; i++) mean += image_figure(fig, i, iw);
    mean /= n;
    for (int i = 0; i < n; i++) {
        const double d = image_figure(fig, i, iw) - mean;
        ss += d * d;
    }
    return sqrt(ss / (n - 1) / n);
}

// This rank's share of the batch of images start .. start + nb - 1, K passes (at least one):
// each of its images' reconstruction and KL averaged over the passes and, for K > 1, its
// IW estimate, into fig (n, 3). pass (2 B) is scratch; prog (or NULL) counts samples on from
// done.
static void evaluate_share(DrawEvalScratch *e, const DrawParams *p, const DrawConfig *c,
                           const ImageSet *set, int start, int nb, int K, uint64_t seed,
                           double *fig, double *pass, Progress *prog, long done) {
    const int passes = K > 1 ? K : 1, B = e->B;
    int begin, count;
    dist_share(e->dist, nb, &begin, &count);
    const int first = start + begin;
    double *f = fig + (size_t)first * 3;
    for (int k = 0; k < passes && count > 0; k++) {
        draw_share_noise(e->eps, c, first, count, rng_mix(rng_mix(seed, 0xE7A1), (uint64_t)k));
        draw_forward_parallel(e->w, e->n_workers < count ? e->n_workers : count, p, c,
                              set->images + (size_t)first * set->dim, e->eps,
                              c->classes ? set->labels + first : NULL, count, NULL, NULL, NULL,
                              &(DrawPerImage){e->logw + (size_t)k * B, pass, pass + B});
        for (int b = 0; b < count; b++) f[b * 3] += pass[b], f[b * 3 + 1] += pass[B + b];
        if (prog) progress_update(prog, done + (long)(k + 1) * nb, "");
    }
    for (int b = 0; b < count; b++) {
        f[b * 3] /= passes, f[b * 3 + 1] /= passes;
        if (K == 1) continue;
        double mx = -INFINITY, s = 0.0;
        for (int k = 0; k < K; k++) mx = fmax(mx, e->logw[(size_t)k * B + b]);
        for (int k = 0; k < K; k++) s += exp(e->logw[(size_t)k * B + b] - mx);
        f[b * 3 + 2] = -(mx + log(s / K));
    }
}

// The means and standard errors of the n images' figures, summed in image order.
static DrawEvalResult summarise(const double *fig, int n, int K) {
    DrawEvalResult r = {.images = n};
    double iw = 0.0;
    for (int i = 0; i < n; i++)
        r.recon += fig[(size_t)i * 3], r.kl += fig[(size_t)i * 3 + 1], iw += fig[(size_t)i * 3 + 2];
    r.recon /= n;
    r.kl /= n;
    r.bound = r.recon + r.kl;
    r.nll_iw = K > 1 ? iw / n : NAN;
    r.bound_se = standard_error(fig, n, false);
    r.nll_iw_se = K > 1 ? standard_error(fig, n, true) : NAN;
    return r;
}

// The images rank 0 read from e->record, on every rank; *first: where the evaluation goes on.
static int share_record(DrawEvalScratch *e, int *first, Error *err) {
    int done = e->record->done;
    if (dist_broadcast(e->dist, &done, sizeof done, err) ||
        dist_broadcast(e->dist, e->record->fig, sizeof(double) * 3 * (size_t)done, err))
        return -1;
    *first = done;
    return 0;
}

// Each rank runs its share of every batch, with its images' noise (draw_share_noise, pass k of
// image g seeded with (seed, k, g)), and writes its images' figures; a batch's figures are then
// summed over the ranks (each image's come from one rank, zeros from the others) and the means
// taken in image order on every rank, so N ranks of one thread give one process of N threads'
// bits.
int draw_evaluate(DrawEvalResult *out, DrawEvalScratch *e, const DrawParams *p,
                  const DrawConfig *c, const ImageSet *set, int limit, int K, uint64_t seed,
                  Error *err) {
    const int n = limit > 0 && limit < set->n ? limit : set->n, B = e->B;
    CHECK(!c->classes || set->labels, "a conditional model needs the images' labels");
    const int passes = K > 1 ? K : 1;
    DrawEvalRecord *rec = e->record;
    CHECK(!rec || (rec->id.images == n && rec->id.samples == K && rec->id.batch == B),
          "a record of %d images, K %d, batch %d", n, K, B);
    double *fig = rec ? rec->fig : xcalloc((size_t)n * 3, sizeof *fig);  // (n, 3)
    double *pass = xmalloc(sizeof *pass * 2 * (size_t)B);
    int first = 0, rc = rec ? share_record(e, &first, err) : 0;
    // Progress in samples (an image once per pass): K = 1000 on 1,000 images runs for tens
    // of minutes on one thread.
    Progress prog;
    const bool show = e->progress && dist_is_root(e->dist) && first < n;
    if (show) {
        progress_start(&prog, "eval", (long)(n - first) * passes, 0);
        progress_name(&prog, "samples", NULL);
    }
    for (int start = first; rc == 0 && start < n; start += B) {
        const int nb = n - start < B ? n - start : B;
        evaluate_share(e, p, c, set, start, nb, K, seed, fig, pass, show ? &prog : NULL,
                       (long)(start - first) * passes);
        rc = dist_allreduce_sum_f64(e->dist, fig + (size_t)start * 3, (size_t)nb * 3, err);
        if (rc == 0 && rec && dist_is_root(e->dist)) rc = draw_eval_record_save(rec, start + nb, err);
    }
    if (show && rc == 0) progress_end(&prog, (long)(n - first) * passes, "");
    if (rc == 0) *out = summarise(fig, n, K);
    if (!rec) free(fig);
    free(pass);
    return rc;
}
