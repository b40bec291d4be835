#include "models/sat_parallel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/job_threads.h"
#include "core/grad_sum.h"

typedef struct {
    SatModel *m;
    const float *images;
    const int *words, *lens;
    int n, first;  // rows, and the index of the first in the whole batch
    uint64_t seed;
    SatLoss loss;
} StepJob;

// order (B): the rows by descending lens, ties in their given order (an insertion sort:
// a batch is a few dozen rows).
static void order_by_length_(int *order, const int *lens, int B) {
    for (int i = 0; i < B; i++) {
        int k = i;
        while (k > 0 && lens[order[k - 1]] < lens[i]) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = i;
    }
}

// sat_forward of B rows in descending order of caption length (ties in their given order),
// so that step t runs only the captions still going; each row keeps its own noise stream
// (m->row_ids) and the backward needs no order but the activations'.
static void forward_sorted_(SatModel *m, SatLoss *out, const float *images, const int *words,
                            const int *lens, int B, uint64_t seed, int first) {
    CHECK(!m->annot_grad, "sat_forward_backward: annotation gradients would be in sorted order");
    const size_t per = sat_input_floats(&m->cfg);
    const int ML = m->cfg.max_len;
    CHECK(m->acts_batch >= B && B >= 1, "batch %d, activations for %d", B, m->acts_batch);
    // Annotations go straight into the decoder's input where it has one (the forward then
    // copies nothing); images (and other decoders' annotations) into a sorted copy.
    float *in_place = m->cfg.feat_L > 0 ? m->ops->annotation_input(m) : NULL;
    if (m->sorted_cap < B) {
        free(m->sorted_images);
        free(m->sorted_ints);
        m->sorted_images = in_place ? NULL : xmalloc((size_t)B * per * sizeof(float));
        m->sorted_ints = xmalloc((size_t)B * (ML + 3) * sizeof(int));
        m->sorted_cap = B;
    }
    float *sorted = in_place ? in_place : m->sorted_images;
    int *order = m->sorted_ints, *ids = order + B, *slens = ids + B, *swords = slens + B;
    order_by_length_(order, lens, B);
    for (int k = 0; k < B; k++) {
        const int b = order[k];
        ids[k] = first + b;
        slens[k] = lens[b];
        memcpy(swords + (size_t)k * ML, words + (size_t)b * ML, (size_t)ML * sizeof(int));
        memcpy(sorted + (size_t)k * per, images + (size_t)b * per, per * sizeof(float));
    }
    m->row_ids = ids;
    sat_forward(m, out, sorted, swords, slens, B, 1, seed, first);
    m->row_ids = NULL;
}

// A one-model step of a decoder that keeps the caller's order (SatDecoderOps.sorts_rows 0):
// one forward over the rows as they are, the gradient zeroed and, when the loss is finite,
// the backward.
static void forward_backward_in_order_(SatLoss *out, SatModel *m, const float *images,
                                       const int *words, const int *lens, int B, uint64_t seed,
                                       int first) {
    sat_forward(m, out, images, words, lens, B, 1, seed, first);
    block_zero(&m->grads);
    if (isfinite(out->loss)) sat_backward(m);
}

void sat_forward_backward(SatLoss *out, SatModel *m, const float *images, const int *words,
                          const int *lens, int B, uint64_t seed, int first) {
    const SatDecoderOps *ops = m->ops;
    if (!ops->sorts_rows) {
        forward_backward_in_order_(out, m, images, words, lens, B, seed, first);
        return;
    }
    ops->pack_step_weights(m, 1);
    ops->lend_step_weights(m, m);
    forward_sorted_(m, out, images, words, lens, B, seed, first);
    block_zero(&m->grads);
    if (isfinite(out->loss)) sat_backward(m);
    ops->lend_step_weights(m, NULL);
}

static void *step_job_forward(void *arg) {
    StepJob *j = arg;
    forward_sorted_(j->m, &j->loss, j->images, j->words, j->lens, j->n, j->seed, j->first);
    return NULL;
}

static void *step_job_backward(void *arg) {
    StepJob *j = arg;
    block_zero(&j->m->grads);
    if (isfinite(j->loss.loss)) sat_backward(j->m);
    return NULL;
}

static void *step_job_run(void *arg) {
    step_job_forward(arg);
    return step_job_backward(arg);
}

static void *step_job_decoder(void *arg) {
    StepJob *j = arg;
    block_zero(&j->m->grads);
    if (isfinite(j->loss.loss)) sat_backward_decoder(j->m);
    return NULL;
}

static void *step_job_encoder(void *arg) {
    StepJob *j = arg;
    if (isfinite(j->loss.loss)) sat_backward_encoder(j->m);
    return NULL;
}

// model->grads [lo, hi) = the jobs' gradients there, weighted by their float shares of nb
// and added in job order, in slices on `used` threads (each element summed as one thread
// would).
static void combine_grads_(SatModel *model, const StepJob *jobs, int used, int nb, size_t lo,
                           size_t hi) {
    const float *srcs[64];
    float shares[64];
    for (int k = 0; k < used; k++) {
        srcs[k] = jobs[k].m->grads.data;
        shares[k] = (float)jobs[k].n / (float)nb;
    }
    grad_sum_threads(model->grads.data, srcs, shares, used, lo, hi, used);
}

// fn on each job, jobs 1 .. used - 1 on threads of their own, job 0 on the caller's.
static void run_jobs_(void *(*fn)(void *), StepJob *jobs, int used) {
    job_threads_run(fn, jobs, sizeof jobs[0], used);
}

int sat_first_hard_step(const SatModel *m) { return m->cfg.hard && !m->baseline_set; }

// The first hard-attention step over several workers or processes: every share's REINFORCE
// term takes the whole batch's mean reward as its baseline, as one worker's does (sat.h).
// The shares' means, weighted by their float shares and added in order (then over the
// processes by across), give the same bits however the batch is split into shares of the
// same sizes. Each worker starts its backward from that baseline (already set: its update
// is then the decayed one, which leaves the mean where it is), and each share's loss is
// moved to it: the loss is linear in the baseline with slope sum_b log p(s_b) / n.
static int first_baseline_(StepJob *jobs, int used, int nb, const SatBatchSum *across) {
    double mean = 0.0;
    for (int k = 0; k < used; k++)
        mean += (double)((float)jobs[k].n / (float)nb) * jobs[k].loss.reward;
    if (across && across->sum && across->sum(across->ctx, &mean)) return -1;
    const float base = (float)mean;
    for (int k = 0; k < used; k++) {
        SatModel *w = jobs[k].m;
        SatLoss *l = &jobs[k].loss;
        l->loss += ((double)base - (double)(float)l->reward) * w->sample_logp / jobs[k].n;
        w->baseline = base;
        w->baseline_set = 1;
    }
    return 0;
}

// The workers' forwards and backwards, and model->grads their share-weighted sum: in one
// pass, or forwards first when the first hard step's baseline needs every share's reward,
// or with the decoder's gradient handed to across->decoder_done before the CNN's backward.
static int step_phases_(SatModel *model, StepJob *jobs, int used, int nb,
                        const SatBatchSum *across) {
    const size_t enc = sat_encoder_grad_floats(model), all = model->grads.numel;
    const int overlap = across && across->decoder_done && enc > 0;
    const int first_hard = sat_first_hard_step(model) && (used > 1 || across);
    if (overlap) {
        // The decoder's gradient, complete before the CNN's backward, is handed over (to be
        // summed over the processes) while the CNN's backward runs.
        run_jobs_(step_job_forward, jobs, used);
        if (first_hard && first_baseline_(jobs, used, nb, across)) return -1;
        run_jobs_(step_job_decoder, jobs, used);
        combine_grads_(model, jobs, used, nb, enc, all);
        if (across->decoder_done(across->ctx, model->grads.data, enc, all)) return -1;
        run_jobs_(step_job_encoder, jobs, used);
        combine_grads_(model, jobs, used, nb, 0, enc);
    } else {
        if (first_hard) {  // the baseline needs every share's reward before any backward
            run_jobs_(step_job_forward, jobs, used);
            if (first_baseline_(jobs, used, nb, across)) return -1;
            run_jobs_(step_job_backward, jobs, used);
        } else {
            run_jobs_(step_job_run, jobs, used);
        }
        combine_grads_(model, jobs, used, nb, 0, all);
    }
    return 0;
}

void sat_forward_backward_parallel(SatLoss *out, SatModel *model, SatModel *workers,
                                   int n_workers, const float *images, const int *words,
                                   const int *lens, int nb, uint64_t seed) {
    CHECK(sat_forward_backward_parallel_from(out, model, workers, n_workers, 0, images, words,
                                             lens, nb, seed, NULL) == 0,
          "a step without processes to sum over failed");
}

int sat_forward_backward_parallel_from(SatLoss *out, SatModel *model, SatModel *workers,
                                       int n_workers, int first, const float *images,
                                       const int *words, const int *lens, int nb, uint64_t seed,
                                       const SatBatchSum *across) {
    if (!workers) {  // the rows on the model itself
        CHECK(!model->cfg.hard, "a hard-attention step without workers (its baseline is summed "
                                "over the workers' shares)");
        sat_forward_backward(out, model, images, words, lens, nb, seed, first);
        return 0;
    }
    const size_t per = sat_input_floats(&model->cfg);
    const int ML = model->cfg.max_len;
    StepJob jobs[64];
    CHECK(n_workers <= 64, "workers %d", n_workers);
    int start = 0, used = 0;
    for (int w = 0; w < n_workers; w++) {
        int n = nb / n_workers + (w < nb % n_workers);
        if (n == 0) continue;
        SatModel *r = &workers[w];
        r->baseline = model->baseline;
        r->baseline_set = model->baseline_set;
        jobs[used] = (StepJob){.m = r, .images = images + (size_t)start * per,
                               .words = words + (size_t)start * ML, .lens = lens + start, .n = n,
                               .first = first + start, .seed = seed};
        start += n;
        used++;
    }
    // The step weights packed once for all workers.
    const SatDecoderOps *ops = model->ops;
    ops->pack_step_weights(model, used);
    for (int k = 0; k < used; k++) ops->lend_step_weights(jobs[k].m, model);
    const int status = step_phases_(model, jobs, used, nb, across);
    for (int k = 0; k < used; k++) ops->lend_step_weights(jobs[k].m, NULL);
    if (status) return -1;
    memset(out, 0, sizeof *out);
    double base = 0.0;
    int base_set = 0;
    for (int k = 0; k < used; k++) {
        const float share = (float)jobs[k].n / (float)nb;
        const SatLoss *l = &jobs[k].loss;
        out->loss += share * l->loss;
        out->ce += share * l->ce;
        out->ds += share * l->ds;
        out->reward += share * l->reward;
        out->tokens += l->tokens;
        base += share * jobs[k].m->baseline;
        base_set |= jobs[k].m->baseline_set;
    }
    model->baseline = (float)base;
    model->baseline_set = base_set;
    return 0;
}

size_t sat_encoder_grad_floats(const SatModel *m) { return m->ops->encoder_grad_floats(m); }
