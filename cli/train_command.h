// train_command.h: the command of a trainer on the shared driver (text classify train, text
// translate train, draw classify train), written once. The driver owns the skeleton that
// every such command runs alike:
//
//   open     the run folder's lock (train_out_open), --resume's checkpoint (the trainer
//            reads its state and checks the flags), the data, the folder made
//            (train_out_make), the model initialised or read back, the step's buffers, the
//            budget and cadence (train_plan), an old run cleared (--force), log.csv opened
//            anew or resumed at the checkpoint's step
//   header   "COMMAND: resuming with --lr ... (checkpoint: ...)" where flags replaced the
//            checkpoint's settings, then "COMMAND: <the trainer's details>; step N of M"
//   loop     the trainer's step, after-step and status callbacks until the budget is
//            spent, a step fails or SIGINT/SIGTERM asks the run to stop
//   finish   a checkpoint where a run of no steps has none yet, loss.png from log.csv, the
//            summary line "COMMAND: N steps in S s wall; R ITEMS/s of step time; <the
//            validation>; wrote OUT/model.safetensors", --json's object
//            {"steps", <the trainer's fields>, "ITEMS_per_s", "seconds", "model"}, and
//            run.json (cli/run_info.h) for every invocation that got past opening:
//            finished, failed, or interrupted by SIGINT/SIGTERM (its last checkpoint kept)
//   close    the trainer's memory, log.csv, the lock
//
// Ranks (cli/train_dist.h): a trainer whose table sets .ranks runs under `mpirun -np N` as
// N copies of the command (without it, mpirun with several ranks is refused in one line).
// --batch stays the global batch: every rank knows the whole batch (the epoch's order is a
// function of the seed) and its step trains on its contiguous share of it, rows
// [cmd.share_begin, cmd.share_begin + cmd.share_count), then calls train_command_reduce,
// which makes its share's mean loss and gradient the global batch's on every rank (scaled
// by count / B, summed in rank order); every rank then clips and updates alike, so the
// weights stay the same everywhere without being sent. Validation sums its parts with
// train_command_sum. The driver does the rest:
//   - every rank parses the flags, reads the checkpoint and the data itself (the ranks see
//     one shared run folder: a rank that finds no checkpoint where rank 0 found one, or
//     the other way, fails in one line naming it);
//   - rank 0 alone holds the lock, makes and clears the folder, writes log.csv
//     (train_command_log_row), checkpoints (train_command_save), loss.png, run.json (with
//     the ranks), the header, the progress line, the summary and --json;
//   - each phase of opening ends with the ranks' outcomes compared (train_dist_agree): a
//     bad flag or file, alike on every rank, is one line from rank 0, "PROGRAM: reason";
//     so is a failure every rank meets in a step (a non-finite loss after the reduction);
//     a rank's own failure is its line "rank R of N: PROGRAM: reason"; every rank exits 1;
//   - rank 0's clock decides when a time budget is spent and whether SIGINT/SIGTERM stops
//     the run, for every rank, so that every rank stops after the same step.
// One process (no mpirun) runs as before: every share is the whole batch, every sum the
// identity.
//
// The trainer gives its side as one static TrainCommand (a table of callbacks over its own
// run struct, which holds a TrainCommandRun) and its flags, parsed by itself with the
// shared ones in a TrainCommandFlags:
//
//     static const TrainCommand TRAIN = {.command = "text classify train", ...};
//     static int cmd_train(int argc, char **argv) {
//         TrainFlags f;
//         ... parse f (f.cmd: --out, --resume, --force, --json, --threads, the plan) ...
//         TrainRun r = {.f = &f};
//         r.cmd = (TrainCommandRun){.flags = &f.cmd, .step = &r.st.step,
//                                   .batch = &r.st.optim.batch};
//         return train_command_main(&TRAIN, &r.cmd, &r, argc, argv);
//     }
//
// draw train and caption train keep loops of their own (best-model checkpoints, the EMA,
// workers over threads and ranks) on the same pieces of cli/train_run.h and
// cli/train_dist.h.
#ifndef CLI_TRAIN_COMMAND_H
#define CLI_TRAIN_COMMAND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "cli/args.h"
#include "cli/report_common.h"
#include "cli/train_run.h"
#include "core/csvlog.h"
#include "core/dist.h"
#include "core/error.h"
#include "core/safetensors.h"

// The flags every such trainer takes, parsed into the trainer's own flags struct.
typedef struct {
    const char *out;     // --out: the run folder
    bool resume, force;  // --resume, --force
    bool json;           // --json: the summary as one JSON object on stdout
    int threads;         // --threads: run.json's figure and the matrix products' threads
    TrainPlanFlags plan; // --steps, --epochs, --minutes, --log-every, --valid-every,
                         // --checkpoint-every
} TrainCommandFlags;

// The rows of the flags above and of the optimiser's, after the trainer's own rows (own,
// n_own): --batch, --lr, --lr-decay (where the trainer takes it), --beta1, --clip, --steps,
// --epochs, --minutes, --seed, --resume, --force, --threads, --valid-every, --log-every,
// --checkpoint-every, --json, in that order, into specs (room for n_own +
// TRAIN_COMMAND_SPECS rows). Returns the number of rows. The help lines that differ
// between the trainers come from help.
enum { TRAIN_COMMAND_SPECS = 16 };
typedef struct {
    const char *batch;     // --batch's help ("pairs per step")
    int batch_max;         // --batch's largest value
    const char *lr_decay;  // --lr-decay's help; NULL: the trainer takes no --lr-decay
    const char *clip, *epochs, *seed, *force;  // those flags' help
} TrainCommandHelp;

int train_command_specs(ArgSpec *specs, const ArgSpec *own, int n_own, TrainCommandFlags *cmd,
                        TrainOptimFlags *optim, const TrainCommandHelp *help);

// What the driver keeps of a run; the trainer's callbacks read and write it too (the
// paths, whether it resumed, the log, the budget's clock, the cadence).
typedef struct {
    const TrainCommandFlags *flags;
    long *step;           // the trainer's step count (in its checkpointed state)
    const int *batch;     // the trainer's examples per step (known once opened)
    TrainLock lock;       // OUT/.lock, held for the run's life
    TrainPaths paths;     // OUT/model.safetensors, log.csv, loss.png
    bool resumed;         // the state came from OUT's checkpoint
    bool interrupted;     // SIGINT or SIGTERM stopped the run
    FlagDiffs resumed_with;  // --resume: the settings given that replace the checkpoint's
    CsvLog log;
    TrainBudget budget;
    TrainCadence cadence;
    TrainMeter meter;
    Dist dist;            // the ranks: rank 0 of 1 without mpirun
    int share_begin, share_count;  // this rank's rows of each batch of *batch (all alone)
    const struct TrainCommand *command;  // the command running (train_command_save)
} TrainCommandRun;

// A trainer's side. Callbacks take the trainer's run struct; those returning int give 0, or
// -1 with err set.
typedef struct TrainCommand {
    const char *command;  // "text classify train": the lines' prefix, train_process_begin
    const char *program;  // "text classify": run.json's program, the error line's prefix
    const char *found_as; // the command train_checkpoint_found names ("text classify")
    const char *log_columns;  // log.csv's header
    ReportLogPlot curves;     // loss.png
    bool save_with_validation;  // --checkpoint-every 0: a checkpoint with each validation
    // The trainer runs under mpirun: its step trains on cmd.share_* and calls
    // train_command_reduce, its validation train_command_sum. Without it, mpirun with
    // several ranks is refused in one line.
    bool ranks;
    // --resume with a checkpoint (file, loaded): the run's state from it, then the flags
    // given against it (refused, or the settings they replace into cmd.resumed_with).
    int (*resume)(void *run, const SafetensorsFile *file, Error *err);
    // The data (and for a new run the configuration made from the flags), checked before
    // the folder is made.
    int (*load_data)(void *run, Error *err);
    // The model: initialised from the seed, or read back from file (cmd.resumed).
    int (*init_model)(void *run, const SafetensorsFile *file, Error *err);
    // The step's buffers; returns the steps of an epoch.
    long (*alloc)(void *run);
    // Before the header, or NULL: warnings about flags given that the run does not use.
    void (*warn_unused)(const void *run);
    // The header's details, between "COMMAND: " and "; step N of M" (n: 2 KiB, room for
    // a data spec of 1 KiB and the rest).
    void (*header)(const void *run, char *buf, size_t n);
    TrainSteps steps;  // the loop's step, after-step, status; what the rate counts
    int (*save)(void *run, Error *err);  // a checkpoint at OUT/model.safetensors
    // The summary's validation ("valid loss 1.2345 (500 pairs)") into buf; buf kept as it
    // is ("no validation in this run") where the run did not validate.
    void (*valid_summary)(const void *run, char *buf, size_t n);
    // --json: the trainer's fields, each followed by ", " ("\"final_loss\": 0.5, ").
    void (*json_fields)(const void *run, FILE *out);
    void (*free)(void *run);  // what the trainer allocated (called however far it got)
} TrainCommand;

// The share's mean loss (*loss) and gradient (grads) over this rank's cmd.share_count rows
// become the global batch's mean on every rank (cli/train_dist.h: train_dist_reduce_means,
// train_dist_reduce_grads). One process: nothing changes. A collective.
int train_command_reduce(TrainCommandRun *c, double *loss, Block *grads, Error *err);
// v (n) summed over the ranks in rank order, on every rank (validation's sums and counts).
// One process: nothing changes. A collective.
int train_command_sum(TrainCommandRun *c, double *v, int n, Error *err);
// rows [*begin, *begin + *count) of a batch of n rows (a validation batch, say): this rank's.
void train_command_share(const TrainCommandRun *c, int n, int *begin, int *count);
// The largest share of a batch of n rows over the ranks (rank 0's): the rows a rank's
// model must hold.
int train_command_share_most(const TrainCommandRun *c, int n);
// A log.csv row (n values), written by rank 0 alone.
void train_command_log_row(TrainCommandRun *c, const double *row, int n);
// The trainer's checkpoint (its save callback), written by rank 0 alone; 0 elsewhere.
int train_command_save(TrainCommandRun *c, void *run, Error *err);

// The commands that run under mpirun, for the line of one that does not
// (cli/train_dist.h: train_dist_one_process_only).
#define TRAIN_COMMAND_RANKED \
    "draw train, draw classify train, caption train, text classify train and text translate " \
    "train split their work over ranks"

// A program's commands (bin/text's classify and translate): argv[1] chosen among cmds (n of
// them, 16 at most); --help prints the overview and an unknown command "PROGRAM: reason"
// (rank 0 alone, under mpirun; status 0 and 2); a command without .ranks refuses mpirun's
// ranks in one line (status 2); else the command's main runs on argv + 1.
typedef struct {
    const char *name;
    int (*main)(int argc, char **argv);
    bool ranks;  // it runs under mpirun (a trainer on this driver with .ranks)
} TrainCommandEntry;
int train_command_dispatch(const char *program, const TrainCommandEntry *cmds, int n,
                           void (*overview)(FILE *), int argc, char **argv);

// Runs the command (flags parsed) to its end; returns the exit status: 0, or 1 after one
// line "PROGRAM: reason" on stderr (under mpirun: as above).
int train_command_main(const TrainCommand *t, TrainCommandRun *c, void *run, int argc,
                       char **argv);

#endif
