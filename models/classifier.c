#include "models/classifier.h"

#include <pthread.h>
#include <string.h>

#include "core/check.h"
#include "core/job_threads.h"
#include "core/grad_sum.h"

const char *classifier_kind_name(ClassifierKind k) { return k == CLASSIFIER_CNN ? "cnn" : "glimpse"; }

int classifier_config_check(const ClassifierConfig *c, Error *err) {
    if (c->kind == CLASSIFIER_GLIMPSE) return glimpse_config_check(&c->glimpse, err);
    if (c->kind == CLASSIFIER_CNN) return convnet_config_check(&c->cnn, err);
    return error_set(err, "unknown classifier kind %d", (int)c->kind);
}

int classifier_check_sizes(const ClassifierConfig *c, int B, Error *err) {
    if (c->kind == CLASSIFIER_GLIMPSE) return glimpse_check_sizes(&c->glimpse, B, err);
    return convnet_check_sizes(&c->cnn, B, err);
}

int classifier_width(const ClassifierConfig *c) {
    return c->kind == CLASSIFIER_CNN ? c->cnn.S : c->glimpse.W;
}

int classifier_height(const ClassifierConfig *c) {
    return c->kind == CLASSIFIER_CNN ? c->cnn.S : c->glimpse.H;
}

void classifier_layout(Block *b, ClassifierParams *p, const ClassifierConfig *c) {
    memset(p, 0, sizeof *p);
    if (c->kind == CLASSIFIER_CNN)
        convnet_layout(b, &p->cnn, &c->cnn);
    else
        glimpse_layout(b, &p->glimpse, &c->glimpse);
}

void classifier_init(ClassifierParams *p, const ClassifierConfig *c, Rng *rng) {
    if (c->kind == CLASSIFIER_CNN)
        convnet_init(&p->cnn, &c->cnn, rng);
    else
        glimpse_init(&p->glimpse, &c->glimpse, rng);
}

int classifier_worker_count(int threads, int B) {
    int n = threads < B ? threads : B;
    n = n > CLASSIFIER_MAX_WORKERS ? CLASSIFIER_MAX_WORKERS : n;
    return n < 1 ? 1 : n;
}

void classifier_workers_alloc(ClassifierWorker *w, int n, const ClassifierConfig *c, int B) {
    CHECK(n >= 1 && n <= B && n <= CLASSIFIER_MAX_WORKERS, "%d workers for %d images", n, B);
    for (int k = 0; k < n; k++) {
        memset(&w[k], 0, sizeof w[k]);
        int rows = (B + n - 1) / n;
        if (c->kind == CLASSIFIER_CNN)
            convnet_acts_alloc(&w[k].cnn, &c->cnn, rows);
        else
            glimpse_acts_alloc(&w[k].glimpse, &c->glimpse, rows);
        classifier_layout(&w[k].grads, &w[k].g, c);
        block_alloc(&w[k].grads);
    }
}

void classifier_workers_free(ClassifierWorker *w, int n) {
    for (int k = 0; k < n; k++) {
        if (w[k].cnn.B) convnet_acts_free(&w[k].cnn);
        if (w[k].glimpse.B) glimpse_acts_free(&w[k].glimpse);
        block_free(&w[k].grads);
    }
}

typedef struct {
    ClassifierWorker *w;
    const ClassifierParams *p;
    const ClassifierConfig *c;
    const float *x;
    const int *labels;
    int backward, correct;
    double loss;
} Job;

static void *job_run(void *arg) {
    Job *j = arg;
    ClassifierWorker *w = j->w;
    int n = w->rows;
    if (j->c->kind == CLASSIFIER_CNN) {
        j->loss = convnet_forward(&w->cnn, &j->p->cnn, &j->c->cnn, j->x, j->labels, n, &j->correct);
        if (j->backward) {
            block_zero(&w->grads);
            convnet_backward(&w->g.cnn, &w->cnn, &j->p->cnn, &j->c->cnn, j->x, j->labels, n);
        }
    } else {
        j->loss = glimpse_forward(&w->glimpse, &j->p->glimpse, &j->c->glimpse, j->x, j->labels, n,
                                  &j->correct);
        if (j->backward) {
            block_zero(&w->grads);
            glimpse_backward(&w->g.glimpse, &w->glimpse, &j->p->glimpse, &j->c->glimpse, j->x,
                             j->labels, n);
        }
    }
    return NULL;
}

// grads = the jobs' gradients weighted by their shares of B and added in job order, in
// slices on `used` threads (each element summed as one thread would: the same bits).
static void combine_grads(Block *grads, const Job *jobs, int used, int B) {
    const float *srcs[CLASSIFIER_MAX_WORKERS];
    float shares[CLASSIFIER_MAX_WORKERS];
    for (int k = 0; k < used; k++) {
        CHECK(jobs[k].w->grads.numel == grads->numel);
        srcs[k] = jobs[k].w->grads.data;
        shares[k] = (float)((double)jobs[k].w->rows / B);
    }
    grad_sum_threads(grads->data, srcs, shares, used, 0, grads->numel, used);
}

typedef struct {
    GlimpseActs *a;
    const GlimpseParams *p;
    const GlimpseConfig *c;
    int which;
} PackJob;

static void *pack_run(void *arg) {
    PackJob *j = arg;
    glimpse_pack_weights(j->a, j->p, j->c, j->which);
    return NULL;
}

// The glimpse workers' packed lstm.W, made once in worker 0's acts (the forward's and, with
// a backward, the backward's on two threads) and used by every worker: each worker packed
// both itself, the same copying on every thread (3 % of a step).
static void pack_shared(ClassifierWorker *w, int used, const ClassifierParams *p,
                        const ClassifierConfig *c, int backward) {
    GlimpseActs *a0 = &w[0].glimpse;
    PackJob jobs[2] = {{a0, &p->glimpse, &c->glimpse, 0}, {a0, &p->glimpse, &c->glimpse, 1}};
    pthread_t th;
    const int spawn = backward && pthread_create(&th, NULL, pack_run, &jobs[1]) == 0;
    pack_run(&jobs[0]);
    if (spawn)
        pthread_join(th, NULL);
    else if (backward)
        pack_run(&jobs[1]);
    for (int k = 0; k < used; k++) {
        w[k].glimpse.use_Wt = &a0->lstm_Wt;
        w[k].glimpse.use_Wd = backward ? &a0->lstm_Wd : NULL;
    }
}

double classifier_forward_parallel(ClassifierWorker *w, int n, const ClassifierParams *p,
                                   const ClassifierConfig *c, const float *x,
                                   const int *labels, int B, Block *grads, int *correct) {
    return classifier_forward_parallel_hard(w, n, p, c, x, labels, B, NULL, grads, correct);
}

// Worker k's share [s, s + nk) of the centre noise eps (T, B, 2) into its acts (zeros when
// eps is NULL).
static void hard_inputs(GlimpseActs *a, const GlimpseConfig *c, const float *eps, int B, int s,
                        int nk) {
    for (int t = 0; t < c->T; t++) {
        float *dst = glimpse_at(a, a->eps, t, 2);
        if (eps)
            memcpy(dst, eps + ((size_t)t * B + s) * 2, sizeof(float) * (size_t)nk * 2);
        else
            memset(dst, 0, sizeof(float) * (size_t)nk * 2);
    }
}

double classifier_forward_parallel_hard(ClassifierWorker *w, int n, const ClassifierParams *p,
                                        const ClassifierConfig *c, const float *x,
                                        const int *labels, int B, const float *eps,
                                        Block *grads, int *correct) {
    CHECK(n >= 1 && n <= CLASSIFIER_MAX_WORKERS && B >= 1, "%d workers, %d images", n, B);
    Job jobs[CLASSIFIER_MAX_WORKERS];
    const size_t HW = (size_t)classifier_width(c) * classifier_height(c);
    int used = 0;
    for (int k = 0, s = 0; k < n; k++) {
        int nk = B / n + (k < B % n);
        if (nk == 0) continue;
        int room = c->kind == CLASSIFIER_CNN ? w[k].cnn.B : w[k].glimpse.B;
        CHECK(nk <= room, "worker %d: %d images, room for %d", k, nk, room);
        w[k].rows = nk;
        if (c->kind == CLASSIFIER_GLIMPSE && c->glimpse.hard)
            hard_inputs(&w[k].glimpse, &c->glimpse, eps, B, s, nk);
        jobs[used++] = (Job){.w = &w[k], .p = p, .c = c, .x = x + (size_t)s * HW,
                             .labels = labels + s, .backward = grads != NULL};
        s += nk;
    }
    const int share_packs = c->kind == CLASSIFIER_GLIMPSE && used > 1;
    if (share_packs) pack_shared(w, used, p, c, grads != NULL);
    job_threads_run(job_run, jobs, sizeof jobs[0], used);
    if (share_packs)
        for (int k = 0; k < used; k++) w[k].glimpse.use_Wt = w[k].glimpse.use_Wd = NULL;
    double loss = 0.0;
    int right = 0;
    for (int k = 0; k < used; k++) {
        const double share = (double)jobs[k].w->rows / B;
        loss += share * jobs[k].loss;
        right += jobs[k].correct;
    }
    if (grads) combine_grads(grads, jobs, used, B);
    if (correct) *correct = right;
    return loss;
}
