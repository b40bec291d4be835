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
}

void draw_eval_scratch_free(DrawEvalScratch *e) {
    draw_workers_free(e->w, e->n_workers);
    free(e->w), free(e->eps), free(e->logw);
}

// The standard error of the mean of v (n): the sample standard deviation over sqrt(n);
// NAN for fewer than 2 values.
static double standard_error(const double *v, int n) {
    if (n < 2) return NAN;
    double mean = 0.0, ss = 0.0;
    for (int i = 0; i < n; i++) mean += v[i];
    mean /= n;
    for (int i = 0; i < n; i++) ss += (v[i] - mean) * (v[i] - mean);
    return sqrt(ss / (n - 1) / n);
}

// Each rank runs its share of every batch, with its images' noise (draw_share_noise, pass k of
// image g seeded with (seed, k, g)); the share-weighted parts of each batch and each image's importance-
// weighted term are summed over the ranks in rank order and then added up in batch and
// image order on every rank, so N ranks of one thread give one process of N threads' bits.
int draw_evaluate(DrawEvalResult *out, DrawEvalScratch *e, const DrawParams *p,
                  const DrawConfig *c, const ImageSet *set, int limit, int K, uint64_t seed,
                  Error *err) {
    const int n = limit > 0 && limit < set->n ? limit : set->n, B = e->B;
    const int passes = K > 1 ? K : 1, batches = (n + B - 1) / B;
    double *parts = xcalloc((size_t)batches * passes * 2, sizeof *parts);  // (batch, pass, 2)
    double *iw = K > 1 ? xcalloc((size_t)n, sizeof *iw) : NULL;            // (n)
    double *bounds = xcalloc((size_t)n, sizeof *bounds);  // (n): each image's mean over passes
    double *pass_bound = xmalloc(sizeof *pass_bound * (size_t)B);
    // Progress in samples (an image once per pass): K = 1000 on 1,000 images runs for tens
    // of minutes on one thread.
    const bool show = e->progress && dist_is_root(e->dist);
    Progress prog;
    if (show) {
        progress_start(&prog, "eval", (long)n * passes, 0);
        progress_name(&prog, "samples", NULL);
    }
    for (int j = 0; j < batches; j++) {
        const int start = j * B, nb = n - start < B ? n - start : B;
        int begin, count;
        dist_share(e->dist, nb, &begin, &count);
        for (int k = 0; k < passes && count > 0; k++) {
            draw_share_noise(e->eps, c, start + begin, count,
                        rng_mix(rng_mix(seed, 0xE7A1), (uint64_t)k));
            double rec, kl;
            draw_forward_parallel(e->w, e->n_workers < count ? e->n_workers : count, p, c,
                                  set->images + (size_t)(start + begin) * set->dim, e->eps, count,
                                  NULL, &rec, &kl, &(DrawPerImage){e->logw + (size_t)k * B, pass_bound});
            for (int b = 0; b < count; b++) bounds[start + begin + b] += pass_bound[b] / passes;
            const double share = e->dist->size > 1 ? (double)count / nb : 1.0;
            parts[((size_t)j * passes + k) * 2] = share * rec;
            parts[((size_t)j * passes + k) * 2 + 1] = share * kl;
            if (show) progress_update(&prog, (long)start * passes + (long)(k + 1) * nb, "");
        }
        if (K > 1)
            for (int b = 0; b < count; b++) {
                double mx = -INFINITY, s = 0.0;
                for (int k = 0; k < K; k++) mx = fmax(mx, e->logw[(size_t)k * B + b]);
                for (int k = 0; k < K; k++) s += exp(e->logw[(size_t)k * B + b] - mx);
                iw[start + begin + b] = -(mx + log(s / K));
            }
    }
    if (show) progress_end(&prog, (long)n * passes, "");
    int rc = dist_allreduce_sum_f64(e->dist, parts, (size_t)batches * passes * 2, err);
    if (rc == 0) rc = dist_allreduce_sum_f64(e->dist, bounds, (size_t)n, err);
    if (rc == 0 && iw) rc = dist_allreduce_sum_f64(e->dist, iw, (size_t)n, err);
    DrawEvalResult r = {0};
    double iw_sum = 0.0;
    for (int j = 0; j < batches; j++) {
        const int nb = n - j * B < B ? n - j * B : B;
        for (int k = 0; k < passes; k++) {
            r.recon += parts[((size_t)j * passes + k) * 2] * nb;
            r.kl += parts[((size_t)j * passes + k) * 2 + 1] * nb;
        }
    }
    for (int i = 0; iw && i < n; i++) iw_sum += iw[i];
    r.images = n;
    r.recon /= (double)n * passes;
    r.kl /= (double)n * passes;
    r.bound = r.recon + r.kl;
    r.nll_iw = K > 1 ? iw_sum / n : NAN;
    r.bound_se = standard_error(bounds, n);
    r.nll_iw_se = K > 1 ? standard_error(iw, n) : NAN;
    free(parts), free(iw), free(bounds), free(pass_bound);
    *out = r;
    return rc;
}
