// dist.c: see dist.h. Built with Open MPI when the Makefile finds it (ATTEND_MPI); without
// it every function is the one-process stand-in and a program started by mpirun refuses.
#include "core/dist.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef ATTEND_MPI
#include <mpi.h>
#endif

int dist_available(void) {
#ifdef ATTEND_MPI
    return 1;
#else
    return 0;
#endif
}

// The size mpirun announced, or 0 when the process was not started by it.
static int launcher_size(void) {
    const char *s = getenv("OMPI_COMM_WORLD_SIZE");
    if (!s || !*s) return 0;
    char *end;
    long v = strtol(s, &end, 10);
    return (*end == '\0' && v > 0 && v <= INT_MAX) ? (int)v : 0;
}

int dist_launched(int *rank) {
    const char *s = getenv("OMPI_COMM_WORLD_RANK");
    *rank = s && *s ? atoi(s) : 0;
    return launcher_size();
}

int dist_init(Dist *d, Error *err) {
    memset(d, 0, sizeof *d);
    d->size = 1;
    if (launcher_size() == 0) return 0;
#ifdef ATTEND_MPI
    // Serialized: a sum may run on a thread of its own while the caller's threads compute
    // (dist_allreduce_sum_start); the calls never overlap each other.
    int provided;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
        return error_set(err, "mpi: MPI_Init failed");
    d->background = provided >= MPI_THREAD_SERIALIZED;
    // Errors come back as codes, so a failed collective becomes a named one-line failure.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d->size);
    d->mpi = 1;
    return 0;
#else
    return error_set(err, "started by mpirun, but this build has no MPI support "
                          "(install libopenmpi-dev with `make deps` and rebuild)");
#endif
}

void dist_finalize(Dist *d) {
    free(d->scratch);
    d->scratch = NULL;
    d->scratch_n = 0;
#ifdef ATTEND_MPI
    if (d->mpi) MPI_Finalize();
#endif
    d->mpi = 0;
}

void dist_share_of(int rank, int size, int n, int *begin, int *count) {
    int base = n / size, extra = n % size;
    *count = base + (rank < extra);
    *begin = rank * base + (rank < extra ? rank : extra);
}

void dist_share(const Dist *d, int n, int *begin, int *count) {
    dist_share_of(d->rank, d->size, n, begin, count);
}

void dist_sum_in_rank_order(float *out, const float *const *parts, int size, size_t n) {
    memcpy(out, parts[0], n * sizeof *out);
    for (int r = 1; r < size; r++) {
        const float *p = parts[r];
        for (size_t i = 0; i < n; i++) out[i] += p[i];
    }
}

#ifdef ATTEND_MPI
static int mpi_failed(int code, const char *what, Error *err) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(code, text, &len);
    return error_set(err, "mpi: %s failed: %.*s", what, len, text);
}

static int grow_scratch(Dist *d, size_t n, Error *err) {
    if (d->scratch_n >= n) return 0;
    float *p = realloc(d->scratch, n * sizeof *p);
    if (!p) return error_set(err, "mpi: out of memory for a %zu-float reduction buffer", n);
    d->scratch = p;
    d->scratch_n = n;
    return 0;
}
#endif

int dist_allreduce_sum(Dist *d, float *buf, size_t n, Error *err) {
    if (d->size == 1 || n == 0) return 0;
#ifdef ATTEND_MPI
    if (n > (size_t)INT_MAX) return error_set(err, "mpi: a %zu-float reduction is too large", n);
    const int N = d->size;
    int *counts = calloc(4 * (size_t)N, sizeof *counts);
    if (!counts) return error_set(err, "mpi: out of memory");
    int *displs = counts + N, *rcounts = counts + 2 * N, *rdispls = counts + 3 * N;
    for (int r = 0; r < N; r++) dist_share_of(r, N, (int)n, &displs[r], &counts[r]);
    const int mine = counts[d->rank];
    for (int r = 0; r < N; r++) {
        rcounts[r] = mine;
        rdispls[r] = r * mine;
    }
    int status = grow_scratch(d, (size_t)N * (size_t)mine + 1, err);
    if (status == 0) {
        int rc = MPI_Alltoallv(buf, counts, displs, MPI_FLOAT, d->scratch, rcounts, rdispls,
                               MPI_FLOAT, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) status = mpi_failed(rc, "all-to-all", err);
    }
    if (status == 0) {
        const float **parts = calloc((size_t)N, sizeof *parts);
        if (!parts) {
            status = error_set(err, "mpi: out of memory");
        } else {
            for (int r = 0; r < N; r++) parts[r] = d->scratch + (size_t)r * mine;
            dist_sum_in_rank_order(buf + displs[d->rank], parts, N, (size_t)mine);
            free(parts);
            int rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_FLOAT, buf, counts, displs, MPI_FLOAT,
                                    MPI_COMM_WORLD);
            if (rc != MPI_SUCCESS) status = mpi_failed(rc, "all-gather", err);
        }
    }
    free(counts);
    return status;
#else
    (void)buf;
    return error_set(err, "mpi: not built with MPI");
#endif
}

static void *sum_in_flight_run(void *arg) {
    DistSumInFlight *f = arg;
    f->status = dist_allreduce_sum(f->d, f->buf, f->n, &f->err);
    return NULL;
}

int dist_allreduce_sum_start(DistSumInFlight *f, Dist *d, float *buf, size_t n, Error *err) {
    memset(f, 0, sizeof *f);
    f->d = d;
    f->buf = buf;
    f->n = n;
    if (d->background && d->size > 1 && n > 0 &&
        pthread_create(&f->thread, NULL, sum_in_flight_run, f) == 0) {
        f->on_thread = 1;
        return 0;
    }
    sum_in_flight_run(f);  // no thread: the sum now
    if (f->status) *err = f->err;
    return f->status;
}

int dist_allreduce_sum_finish(DistSumInFlight *f, Error *err) {
    if (f->on_thread) {
        pthread_join(f->thread, NULL);
        f->on_thread = 0;
    }
    if (f->status) *err = f->err;
    return f->status;
}

int dist_allreduce_sum_f64(Dist *d, double *buf, size_t n, Error *err) {
    if (d->size == 1 || n == 0) return 0;
#ifdef ATTEND_MPI
    if (n > (size_t)INT_MAX / (size_t)d->size)
        return error_set(err, "mpi: a %zu-double reduction is too large", n);
    double *all = malloc((size_t)d->size * n * sizeof *all);
    if (!all) return error_set(err, "mpi: out of memory");
    int rc = MPI_Allgather(buf, (int)n, MPI_DOUBLE, all, (int)n, MPI_DOUBLE, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
        free(all);
        return mpi_failed(rc, "all-gather", err);
    }
    for (size_t i = 0; i < n; i++) {
        double s = all[i];
        for (int r = 1; r < d->size; r++) s += all[(size_t)r * n + i];
        buf[i] = s;
    }
    free(all);
    return 0;
#else
    (void)buf;
    return error_set(err, "mpi: not built with MPI");
#endif
}

int dist_broadcast(const Dist *d, void *buf, size_t bytes, Error *err) {
    if (d->size == 1 || bytes == 0) return 0;
#ifdef ATTEND_MPI
    if (bytes > (size_t)INT_MAX) return error_set(err, "mpi: a %zu-byte broadcast is too large", bytes);
    int rc = MPI_Bcast(buf, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : mpi_failed(rc, "broadcast", err);
#else
    (void)buf;
    return error_set(err, "mpi: not built with MPI");
#endif
}

int dist_allgather_ranges(const Dist *d, void *buf, size_t item_bytes, const int *begins,
                          const int *counts, Error *err) {
    if (d->size == 1) return 0;
#ifdef ATTEND_MPI
    const int N = d->size;
    int *bytes = malloc(2 * (size_t)N * sizeof *bytes);
    if (!bytes) return error_set(err, "mpi: out of memory");
    int *displs = bytes + N, status = 0;
    for (int r = 0; r < N && status == 0; r++) {
        size_t b = (size_t)counts[r] * item_bytes, o = (size_t)begins[r] * item_bytes;
        if (b > (size_t)INT_MAX || o > (size_t)INT_MAX)
            status = error_set(err, "mpi: a %zu-byte gather is too large", b + o);
        bytes[r] = (int)b;
        displs[r] = (int)o;
    }
    if (status == 0) {
        int rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_BYTE, buf, bytes, displs, MPI_BYTE,
                                MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) status = mpi_failed(rc, "all-gather", err);
    }
    free(bytes);
    return status;
#else
    (void)buf, (void)item_bytes, (void)begins, (void)counts;
    return error_set(err, "mpi: not built with MPI");
#endif
}

int dist_any_failed(const Dist *d, int status) {
    if (d->size == 1) return status ? -1 : 0;
#ifdef ATTEND_MPI
    int mine = status ? 1 : 0, any = 1;
    if (MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS) return -1;
    return any ? -1 : 0;
#else
    return status ? -1 : 0;
#endif
}

#ifdef ATTEND_MPI
// FNV-1a of msg, never 0 (0 stands for success).
static unsigned long long message_key(const char *msg) {
    unsigned long long h = 0xcbf29ce484222325ULL;
    for (const unsigned char *p = (const unsigned char *)msg; *p; p++)
        h = (h ^ *p) * 0x100000001b3ULL;
    return h | 1;
}
#endif

DistOutcome dist_compare_outcomes(const Dist *d, int status, const char *msg) {
    if (d->size == 1) return status ? DIST_SAME_FAILURE : DIST_ALL_OK;
#ifdef ATTEND_MPI
    const unsigned long long key = status ? message_key(msg ? msg : "") : 0;
    // One reduction gives the largest key and the smallest (the largest complement).
    unsigned long long mine[2] = {key, ~key}, most[2] = {0, 0};
    if (MPI_Allreduce(mine, most, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD) !=
        MPI_SUCCESS)
        return DIST_SOME_FAILED;
    const unsigned long long largest = most[0], smallest = ~most[1];
    if (largest == 0) return DIST_ALL_OK;
    return smallest == largest ? DIST_SAME_FAILURE : DIST_SOME_FAILED;
#else
    (void)msg;
    return status ? DIST_SAME_FAILURE : DIST_ALL_OK;
#endif
}

void dist_barrier(const Dist *d) {
#ifdef ATTEND_MPI
    if (d->mpi) MPI_Barrier(MPI_COMM_WORLD);
#else
    (void)d;
#endif
}

_Noreturn void dist_abort(const Dist *d, const char *msg) {
    if (d->size > 1)
        fprintf(stderr, "rank %d of %d: %s\n", d->rank, d->size, msg);
    else
        fprintf(stderr, "%s\n", msg);
    fflush(stderr);
#ifdef ATTEND_MPI
    if (d->mpi) MPI_Abort(MPI_COMM_WORLD, 1);
#endif
    exit(1);
}
