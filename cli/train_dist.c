#include "cli/train_dist.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/train_run.h"

int train_dist_one_process_only(const char *program, const char *command, const char *ranked) {
    int rank, size = dist_launched(&rank);
    if (size <= 1) return 0;
    if (rank == 0)
        fprintf(stderr, "%s %s runs as one process (%s): start it without mpirun\n", program,
                command, ranked);
    return 2;
}

void train_dist_print(const Dist *d, const char *program, const Error *err) {
    if (d->size > 1)
        fprintf(stderr, "rank %d of %d: %s: %s\n", d->rank, d->size, program, err->msg);
    else
        fprintf(stderr, "%s: %s\n", program, err->msg);
    fflush(stderr);
}

void train_dist_report(const Dist *d, DistOutcome o, int status, const char *program,
                       const Error *err) {
    if (o == DIST_SAME_FAILURE) {  // every rank alike (a flag, a file all read): one line
        if (dist_is_root(d)) {
            fprintf(stderr, "%s: %s\n", program, err->msg);
            fflush(stderr);
        }
    } else if (o == DIST_SOME_FAILED && status) {
        train_dist_print(d, program, err);
    }
}

int train_dist_agree(const Dist *d, int status, const char *program, const Error *err) {
    const DistOutcome o = dist_compare_outcomes(d, status, status ? err->msg : "");
    train_dist_report(d, o, status, program, err);
    return o == DIST_ALL_OK ? 0 : -1;
}

int train_dist_fail(const Dist *d, const char *program, const Error *err) {
    if (d->size > 1) {
        char line[sizeof err->msg + 64];
        snprintf(line, sizeof line, "%s: %s", program, err->msg);
        dist_abort(d, line);
    }
    train_dist_print(d, program, err);
    return 1;
}

int train_dist_broadcast_block(const Dist *d, Block *b, Error *err) {
    return dist_broadcast(d, b->data, b->numel * sizeof *b->data, err);
}

// g (n) *= this rank's share of the batch: the factor one process's workers use
// (models/draw.c, models/sat.c: a float of the double share), so N ranks of one thread
// match one process of N threads.
static void scale_by_share(float *g, size_t n, int count, int B) {
    const float share = (float)((double)count / B);
    for (size_t i = 0; i < n; i++) g[i] *= share;
}

int train_dist_reduce_floats(Dist *d, float *g, size_t n, int count, int B, Error *err) {
    if (d->size == 1) return 0;
    scale_by_share(g, n, count, B);
    return dist_allreduce_sum(d, g, n, err);
}

int train_dist_start_floats(Dist *d, DistSumInFlight *f, float *g, size_t n, int count, int B,
                            Error *err) {
    scale_by_share(g, n, count, B);
    return dist_allreduce_sum_start(f, d, g, n, err);
}

int train_dist_reduce_grads(Dist *d, Block *grads, int count, int B, Error *err) {
    return train_dist_reduce_floats(d, grads->data, grads->numel, count, B, err);
}

int train_dist_reduce_means(Dist *d, double *v, int n, int count, int B, Error *err) {
    if (d->size == 1) return 0;
    const double share = (double)count / B;
    for (int i = 0; i < n; i++) v[i] *= share;
    return dist_allreduce_sum_f64(d, v, (size_t)n, err);
}

int train_dist_root_decides(const Dist *d, bool *flag, Error *err) {
    if (d->size == 1) return 0;
    int v = *flag;
    if (dist_broadcast(d, &v, sizeof v, err)) return -1;
    *flag = v != 0;
    return 0;
}

int train_dist_interrupted(const Dist *d, bool go, bool *stop, Error *err) {
    *stop = go && train_interrupted() != 0;
    return train_dist_root_decides(d, stop, err);
}

void train_dist_fault_point(const Dist *d, long step) {
    const char *rank = getenv("ATTEND_FAULT_KILL_RANK"), *at = getenv("ATTEND_FAULT_KILL_STEP");
    if (!rank || !rank[0] || !at || !at[0]) return;
    if (atoi(rank) == d->rank && atol(at) == step) raise(SIGKILL);
}
