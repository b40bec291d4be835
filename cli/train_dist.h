// train_dist.h: the train and eval commands over MPI ranks (core/dist.h), in one place.
//
// `mpirun -np N bin/draw train ...` runs N copies of the command. --batch stays the global
// batch: every rank knows the whole batch (the epoch's order is a function of the seed and
// the epoch) and runs the model on its contiguous share only (dist_share). The randomness
// of an image is drawn as one process draws it, so a rank draws only its share's:
//   - DRAW: each image's binarisation and noise from streams of its own, seeded with (seed,
//     step, its place in the batch); eval's noise with (seed, image index);
//   - the captioner: every rank draws every image's caption choice from the step's stream
//     (a few integers a step), and each image's dropout masks and hard-attention samples
//     come from a stream of its own, seeded with (seed, step, its place in the batch)
//     (sat_forward), whichever worker of whichever rank runs it; the first step's
//     hard-attention baseline is the whole batch's mean reward, summed over the ranks
//     between the forwards and the backwards (sat_forward_backward_parallel_from).
//
// The share's gradient is the mean over its `count` images; scaled by count / B and summed
// over the ranks in rank order (train_dist_reduce_grads) it is the global batch's gradient,
// computed as the threads of one process compute it: N ranks of one thread give the bits of
// one process with N threads (its workers split the batch alike and add share-weighted
// gradients in worker order). Every rank then applies the same clip and Adam step, so the
// weights stay identical without broadcasting them.
//
// Rank 0 alone writes: the progress line, log.csv, plots, checkpoints, run.json, the
// summary. Failures:
//   - flags: every rank parses the same command line; rank 0 alone prints usage and flag
//     errors (cli/args.h: args_reporting_process), every rank exits with status 2;
//   - set-up (files, data, flag combinations checked later): every rank reaches
//     train_dist_agree; when every rank failed with the same message, rank 0 prints it
//     once, naming no rank ("draw: reason"); otherwise each rank that failed prints
//     "rank R of N: draw: reason"; every rank ends with status 1, none waits;
//   - a failure that every rank sees alike after a reduction (a non-finite loss or
//     gradient): rank 0 prints it, every rank ends with status 1;
//   - anything else during the run (a checkpoint that cannot be written, a rank out of
//     memory or killed): train_dist_fail ends the whole job at once (MPI_Abort; mpirun
//     reports a killed rank by its number and signal), and the last checkpoint, written
//     atomically, stays as it was.
#ifndef CLI_TRAIN_DIST_H
#define CLI_TRAIN_DIST_H

#include <stdbool.h>

#include "core/block.h"
#include "core/dist.h"
#include "core/error.h"

// Commands that run as one process (generate, predict, reports, ...): under mpirun with
// several ranks, rank 0 prints "PROGRAM COMMAND runs as one process (RANKED): start it
// without mpirun" and every rank returns 2; otherwise 0. ranked names the program's
// commands that do split their work over ranks ("train and eval split their work over
// ranks").
int train_dist_one_process_only(const char *program, const char *command, const char *ranked);
// draw's and caption's: "train and eval split their work over ranks".
#define TRAIN_DIST_RANKED "train and eval split their work over ranks"

// Prints "PROGRAM: msg" (one process) or "rank R of N: PROGRAM: msg" as one line on stderr.
void train_dist_print(const Dist *d, const char *program, const Error *err);

// After a set-up phase: every rank passes its status (0 or -1, with err filled). Returns 0
// when every rank succeeded; else -1 on every rank, after rank 0 printed the error once
// ("PROGRAM: msg") when every rank failed with the same one, or else each failed rank
// printed its own (train_dist_print). A collective.
int train_dist_agree(const Dist *d, int status, const char *program, const Error *err);

// train_dist_agree's line for an outcome already compared (dist_compare_outcomes of
// status and err over the ranks): nothing for DIST_ALL_OK; rank 0 prints "PROGRAM: msg"
// for DIST_SAME_FAILURE; each failed rank its own line for DIST_SOME_FAILED. Not a
// collective: for a verdict reached inside a loop and told once the loop has ended.
void train_dist_report(const Dist *d, DistOutcome o, int status, const char *program,
                       const Error *err);

// A failure of this rank alone in the middle of a run: with several ranks, prints the line
// and ends the whole job (does not return); alone, prints it and returns 1 (the exit status).
int train_dist_fail(const Dist *d, const char *program, const Error *err);

// b (a Block) copied from rank 0 to every rank (the weights and Adam moments at start, so
// that every rank starts from rank 0's checkpoint whatever its own file system holds).
int train_dist_broadcast_block(const Dist *d, Block *b, Error *err);

// grads: the mean gradient over this rank's `count` images of a global batch of B. On
// return every rank holds the global batch's mean gradient: each rank's scaled by
// count / B, summed in rank order. Identity with one rank.
int train_dist_reduce_grads(Dist *d, Block *grads, int count, int B, Error *err);

// The same for g (n), a part of the gradient (the same bits as in a whole-gradient sum).
int train_dist_reduce_floats(Dist *d, float *g, size_t n, int count, int B, Error *err);
// The same, summed on a thread of its own while the caller computes (several ranks only;
// core/dist.h: dist_allreduce_sum_start); dist_allreduce_sum_finish waits for it.
int train_dist_start_floats(Dist *d, DistSumInFlight *f, float *g, size_t n, int count, int B,
                            Error *err);

// v (n): means over this rank's count images; on return the means over all B images, as
// train_dist_reduce_grads computes them (scaled by count / B, summed in rank order).
int train_dist_reduce_means(Dist *d, double *v, int n, int count, int B, Error *err);

// *flag becomes rank 0's value on every rank (a decision taken by one clock, such as
// whether a time budget is spent, so that no rank leaves a loop the others stay in).
int train_dist_root_decides(const Dist *d, bool *flag, Error *err);

// After a step (go: another step follows): *stop, whether SIGINT or SIGTERM asked the run to
// stop there (cli/train_run.h: train_interrupted), rank 0's answer on every rank, so that
// every rank stops after the same step.
int train_dist_interrupted(const Dist *d, bool go, bool *stop, Error *err);

// Fault injection for tests/test_cli_mpi.c: with ATTEND_FAULT_KILL_RANK=R and
// ATTEND_FAULT_KILL_STEP=S in the environment, rank R kills itself (SIGKILL, as the kernel's
// out-of-memory killer or a lost node would) when step S begins (steps counted from 1).
void train_dist_fault_point(const Dist *d, long step);


#endif
