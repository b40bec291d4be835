// train_command.h: the command of a trainer without ranks (text classify train, text
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
//   loop     train_loop_run with the trainer's step, after-step and status callbacks
//   finish   a checkpoint where a run of no steps has none yet, loss.png from log.csv, the
//            summary line "COMMAND: N steps in S s wall; R ITEMS/s of step time; <the
//            validation>; wrote OUT/model.safetensors", --json's object
//            {"steps", <the trainer's fields>, "ITEMS_per_s", "seconds", "model"}, and
//            run.json (cli/run_info.h) for every invocation that got past opening:
//            finished, failed, or interrupted by SIGINT/SIGTERM (its last checkpoint kept)
//   close    the trainer's memory, log.csv, the lock
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
// draw train and caption train keep loops of their own (ranks, best-model checkpoints,
// the EMA) on the same pieces of cli/train_run.h.
#ifndef CLI_TRAIN_COMMAND_H
#define CLI_TRAIN_COMMAND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "cli/args.h"
#include "cli/report_common.h"
#include "cli/train_run.h"
#include "core/csvlog.h"
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
} TrainCommandRun;

// A trainer's side. Callbacks take the trainer's run struct; those returning int give 0, or
// -1 with err set.
typedef struct {
    const char *command;  // "text classify train": the lines' prefix, train_process_begin
    const char *program;  // "text classify": run.json's program, the error line's prefix
    const char *found_as; // the command train_checkpoint_found names ("text classify")
    const char *log_columns;  // log.csv's header
    ReportLogPlot curves;     // loss.png
    bool save_with_validation;  // --checkpoint-every 0: a checkpoint with each validation
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

// Runs the command (flags parsed) to its end; returns the exit status: 0, or 1 after one
// line "PROGRAM: reason" on stderr.
int train_command_main(const TrainCommand *t, TrainCommandRun *c, void *run, int argc,
                       char **argv);

#endif
