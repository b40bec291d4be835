// dist.h: data parallelism over processes; the one module of the toolkit that talks to MPI.
//
// A program started by `mpirun -np N` runs as one rank of N; started on its own it is rank 0
// of 1, MPI is never initialised, and nothing costs or changes (no start-up time, no
// library state: tests and sanitizers see the program as before). The launcher is
// recognised by the environment Open MPI gives each rank (OMPI_COMM_WORLD_SIZE).
//
// Training splits each global batch into contiguous shares, one per rank (dist_share), sums
// the gradients of all ranks with dist_allreduce_sum, and lets rank 0 alone write files.
// The sum runs in a fixed order: every element is added rank 0 first, then 1, 2, ... up to
// N - 1, whatever algorithm the MPI library would have picked, so a run is a pure function
// of its seed, its inputs and N, and every rank holds the same bits afterwards:
//   1. an all-to-all hands rank r the r-th chunk of every rank's buffer;
//   2. rank r adds those N chunks in rank order;
//   3. an all-gather gives every rank every summed chunk.
// The traffic is that of a ring allreduce, 2 (N - 1) / N of the buffer per rank, and the
// extra memory one buffer-sized scratch (held in Dist, grown on demand).
//
// Failures: a rank that cannot go on calls dist_abort, which prints one line
// "rank R of N: reason" and ends every rank (MPI_Abort), so no rank waits forever in a
// collective. Without MPI it prints the reason alone and exits 1.
//
//     Dist d;
//     if (dist_init(&d, &err)) die(err.msg);
//     int begin, count;
//     dist_share(&d, B, &begin, &count);      // this rank's images of the global batch
//     ... forward and backward on [begin, begin + count) ...
//     if (dist_allreduce_sum(&d, grads, n_params, &err)) dist_abort(&d, err.msg);
//     if (dist_is_root(&d)) save(...);
//     dist_finalize(&d);
#ifndef CORE_DIST_H
#define CORE_DIST_H

#include <pthread.h>
#include <stddef.h>

#include "core/error.h"

typedef struct {
    int rank;        // this process, 0 .. size - 1
    int size;        // number of ranks (1 without mpirun)
    int mpi;         // 1 when MPI was initialised (started by mpirun)
    int background;  // 1 when a sum may run on a thread of its own (the MPI library granted
                     // MPI_THREAD_SERIALIZED): dist_allreduce_sum_start overlaps
    float *scratch;  // all-to-all receive buffer of the fixed-order sum (owned)
    size_t scratch_n;
} Dist;

// 1 if this build can run under mpirun (compiled with Open MPI).
int dist_available(void);
// The number of ranks mpirun started (0 when not started by it), and this process's rank
// in *rank, read from the launcher's environment without initialising MPI: for commands
// that run as one process only.
int dist_launched(int *rank);

// Initialises MPI when the process was started by mpirun, else sets rank 0 of 1. Fails when
// started by mpirun in a build without MPI, or when MPI cannot start.
int dist_init(Dist *d, Error *err);
// Frees the scratch and finalises MPI (when initialised). Safe on a zeroed Dist.
void dist_finalize(Dist *d);

static inline int dist_is_root(const Dist *d) { return d->rank == 0; }

// This rank's contiguous share [*begin, *begin + *count) of n items: the first n % size
// ranks take one more. Ranks in order cover 0 .. n - 1 exactly once.
void dist_share(const Dist *d, int n, int *begin, int *count);
// The same for any rank (rank < size).
void dist_share_of(int rank, int size, int n, int *begin, int *count);

// buf (n): on return every rank holds the sum over ranks, added in rank order (see above).
// Identity with one rank. Fails only on an MPI error or an allocation failure.
int dist_allreduce_sum(Dist *d, float *buf, size_t n, Error *err);
// A sum in flight: dist_allreduce_sum on a thread of its own, so that the caller computes
// meanwhile (the gradient's other parts: cli/train_dist.h). Until dist_allreduce_sum_finish
// the caller makes no other dist_* call and leaves buf alone; every rank starts and
// finishes its sums in the same order. Without background support it sums at the start.
typedef struct {
    Dist *d;
    float *buf;
    size_t n;
    int status;       // dist_allreduce_sum's result
    Error err;
    int on_thread;    // 1 while the thread runs
    pthread_t thread;
} DistSumInFlight;
// Starts the sum of buf (n) (0; or -1 with err set when no thread could start and the sum,
// run at once, failed).
int dist_allreduce_sum_start(DistSumInFlight *f, Dist *d, float *buf, size_t n, Error *err);
// Waits for it: 0, or -1 with err set. The bits are dist_allreduce_sum's.
int dist_allreduce_sum_finish(DistSumInFlight *f, Error *err);
// buf (n) doubles, summed in rank order alike (losses, metric counts); n is small.
int dist_allreduce_sum_f64(Dist *d, double *buf, size_t n, Error *err);
// buf (n) of root's bytes copied to every rank.
int dist_broadcast(const Dist *d, void *buf, size_t bytes, Error *err);
// buf holds items of item_bytes each; rank r's items [begins[r], begins[r] + counts[r])
// (begins and counts: one entry per rank, ranges in rank order, not overlapping) are in
// place in its buf. On return every rank's buf holds every rank's items.
int dist_allgather_ranges(const Dist *d, void *buf, size_t item_bytes, const int *begins,
                          const int *counts, Error *err);
// Every rank learns whether any rank failed: pass 0 or -1 (this rank's status); returns -1
// on every rank if any passed -1. A collective: every rank must call it at the same point.
int dist_any_failed(const Dist *d, int status);
// How the ranks' outcomes of a phase compare (dist_compare_outcomes).
typedef enum {
    DIST_ALL_OK = 0,        // no rank failed
    DIST_SAME_FAILURE = 1,  // every rank failed, all with the same message
    DIST_SOME_FAILED = 2,   // some ranks failed, or the messages differ
} DistOutcome;
// Every rank passes its status (0 or -1) and, when it failed, its message (compared by a
// 64-bit hash). A collective: every rank must call it at the same point. One rank: its own
// outcome. An MPI failure reads as DIST_SOME_FAILED.
DistOutcome dist_compare_outcomes(const Dist *d, int status, const char *msg);
// Waits until every rank reaches this point.
void dist_barrier(const Dist *d);

// Prints "rank R of N: msg" (or msg alone without MPI) as one line to stderr and ends the
// whole job with a non-zero status. Does not return.
_Noreturn void dist_abort(const Dist *d, const char *msg);

// The sum of step 2 above as a plain function, for tests: out (n) = sum over r < size of
// parts[r] (n), added in rank order.
void dist_sum_in_rank_order(float *out, const float *const *parts, int size, size_t n);

#endif
