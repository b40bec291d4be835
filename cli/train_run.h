// train_run.h: what `draw train`, `draw classify train` and `caption train` do alike, in
// one place, so that a change to how training runs (a new budget, data parallelism over
// ranks, a feature cache) lands once:
//
//   TrainBudget   when the run stops: a total step count (from --steps or --epochs), a wall
//                 time for this invocation (--minutes), CPU seconds of the process counted
//                 across resumes (--cpu-budget), or several, whichever comes first
//   TrainOrder    each epoch's shuffled order of the training examples
//   TrainCadence  at which steps a log row, a validation and a checkpoint are due
//   TrainPlanFlags  the flags that set both (draw train, draw classify train)
//   TrainPaths    a run folder's checkpoint, log and curves
//   TrainMeter    the progress line (steps, steps/s, images/s, time left for any budget)
//                 and the timing the summary reports
//   TrainSteps    a trainer's step callbacks for cli/train_command.h's driver (draw
//                 classify train, text classify train, text translate train), which runs
//                 their whole command around them
//   TrainEma      the exponential moving average of the weights, validated and saved in
//                 the weights' place
//   train_out_open, _make, _check, _clear   no silent loss: the folder locked for
//                 the run's life, a new run refuses a folder holding one, --force empties it
//   train_process_begin, train_interrupted   SIGINT and SIGTERM end a run between steps;
//                 an allocation that fails ends it with one line
//   train_checkpoint_found             --resume in a folder without a checkpoint yet
//   FlagDiffs     flags given on --resume against the checkpoint's values
//   TrainOptim    the optimiser settings a checkpoint stores (batch, lr, lr decay, beta1,
//                 clip, seed), the rule by which flags given on --resume replace them, and
//                 the streams a run draws from its seed
//   train_check_finite                 the stop on a non-finite loss or gradient
//   train_checkpoint_save, _read       a checkpoint's weights and Adam moments
//   json_number   a summary's numbers, null where nothing was measured
//
// A trainer without a loop of its own gives only its side, a table of callbacks, to the one
// command driver of cli/train_command.h (text classify train, text translate train, draw
// classify train), which runs the skeleton below for it, over MPI ranks too where the
// trainer takes them. A trainer with best-model checkpoints, workers over threads and
// ranks or a loop of its own reads like this (see cli/draw_train.c,
// cli/caption_train.c):
//     train_process_begin("draw train");
//     if (train_out_open(&lock, out, files, 2, resume, force, &err)) fail;
//     ... load data and model ...
//     if (train_out_make(&lock, out, files, 2, resume, force, &err)) fail;
//     TrainBudget b = {.end_step = steps, .seconds = minutes * 60};
//     train_budget_begin(&b);
//     train_meter_start(&meter, &b, step, show_progress);
//     while (train_budget_allows(&b, step)) {
//         ... one step (forward, backward) ...
//         if (train_check_finite(step + 1, "loss", loss, &grads, ckpt, &err)) break;
//         ... update; step++ ...
//         TrainDue due = train_due(&cadence, step, train_budget_spent(&b, step));
//         ... log row / validation / checkpoint as due ...
//         train_meter_step(&meter, step, B, step_seconds, status);
//     }
//     train_meter_end(&meter, step, status);
#ifndef CLI_TRAIN_RUN_H
#define CLI_TRAIN_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/adam.h"
#include "core/block.h"
#include "core/error.h"
#include "core/progress.h"
#include "core/rng.h"
#include "core/safetensors.h"

// ---------------------------------------------------------------------------------------
// Budget

typedef struct {
    long end_step;   // stop once the step count reaches this; 0: no step limit
    double seconds;  // stop once this invocation has trained this long; 0: no time limit
    double t0;       // when this invocation's training began (train_budget_begin)
    // A CPU budget: the process's CPU time (user + system, all its threads) inside the step
    // loop (steps, validations, checkpoints), summed over the run's invocations: cpu_before
    // is what the earlier ones spent up to the checkpoint resumed from. Unlike wall time it
    // does not grow with the load of a shared machine. 0: no CPU limit.
    double cpu_seconds;
    double cpu_before;  // CPU seconds spent before this invocation (a resumed run's)
    double cpu0;        // the process's CPU time at train_budget_begin
} TrainBudget;

// Starts the clocks of the time limits (wall and CPU).
void train_budget_begin(TrainBudget *b);
// The CPU seconds the run has spent: cpu_before and this invocation's since
// train_budget_begin.
double train_budget_cpu_used(const TrainBudget *b);
// The process's CPU time (CLOCK_PROCESS_CPUTIME_ID), seconds.
double train_process_cpu_now(void);
// Whether a step may start when `step` steps are done (neither limit reached).
bool train_budget_allows(const TrainBudget *b, long step);
// Whether the step that brought the count to `step` was the last one.
bool train_budget_spent(const TrainBudget *b, long step);
// The budget as a run's header line ends: " of 3000", ", 30 minutes", " of 3000, at most
// 30 minutes", ", 300 CPU seconds" or "" (no limit).
void train_budget_describe(const TrainBudget *b, char *buf, size_t n);

// ---------------------------------------------------------------------------------------
// Epoch order: the training examples 0..n-1 in a shuffled order, made anew for each epoch
// from a seed the caller derives from its run's seed and the epoch.

typedef struct {
    int *perm;   // (n)
    int n;
    long epoch;  // the epoch perm was shuffled for; -1 before the first
} TrainOrder;

void train_order_init(TrainOrder *o, int n);
// The order of `epoch`: perm shuffled by an rng seeded with epoch_seed (rng_shuffle on
// 0..n-1), made only when the epoch differs from the last call's.
const int *train_order_of(TrainOrder *o, long epoch, uint64_t epoch_seed);
// draw train's and draw classify train's batches: the `batch` positions of the batch that
// takes the step count past `step`, in an epoch of steps_per_epoch batches whose order is
// seeded from (seed, epoch). The remainder of each epoch's order is dropped.
const int *train_order_batch(TrainOrder *o, long step, int steps_per_epoch, int batch,
                             uint64_t seed);
void train_order_free(TrainOrder *o);

// ---------------------------------------------------------------------------------------
// Cadence: which of log row, validation and checkpoint are due after a step.

typedef struct {
    long steps_per_epoch;     // for epoch ends (>= 1)
    int log_every;            // a training row every N steps (>= 1)
    int valid_every;          // validate every N steps; 0: at each epoch's end
    int save_every;           // a checkpoint every N steps; 0: only the ones below
    bool log_at_validation;   // a training row with each validation too (draw)
    bool log_at_epoch_end;    // a training row at each epoch's end too (caption)
    bool save_at_validation;  // a checkpoint with each validation (caption: best model, state)
} TrainCadence;

typedef struct {
    bool log, validate, save, epoch_end;
} TrainDue;

// After the step that brought the count to step (from 1); last: the run's last step, which
// always validates and saves.
TrainDue train_due(const TrainCadence *c, long step, bool last);

// ---------------------------------------------------------------------------------------
// Plan: draw train's and draw classify train's budget and cadence flags (caption train's
// differ: its time limit and its best-model checkpoints).

typedef struct {
    long steps;       // --steps: train until this many steps in total (0: from --epochs)
    int epochs;       // --epochs: until this many epochs in total (0: none)
    double minutes;   // --minutes: this invocation's wall time (0: none)
    int log_every;    // --log-every: steps between log rows
    int valid_every;  // --valid-every: steps between validations
    int ckpt_every;   // --checkpoint-every: steps between checkpoints (0: with validation)
} TrainPlanFlags;

// A run given no budget (no steps, epochs or minutes) trains one epoch.
void train_plan_default(TrainPlanFlags *f);
// The budget and the cadence of a run of steps_per_epoch steps an epoch; a log row comes
// with each validation as well.
void train_plan(const TrainPlanFlags *f, long steps_per_epoch, TrainBudget *b, TrainCadence *c);

// ---------------------------------------------------------------------------------------
// A run folder's files (draw train, draw classify train): OUT/model.safetensors (the
// checkpoint), OUT/log.csv, OUT/loss.png.

typedef struct {
    char model[1100], log[1100], plot[1100];
} TrainPaths;

void train_paths(TrainPaths *p, const char *out);

// ---------------------------------------------------------------------------------------
// Meter: the progress line and the run's timing.

typedef struct {
    Progress progress;
    bool show;             // draw the progress line
    long start_step;       // the step count this invocation began at
    long steps;            // steps done in this invocation
    double images;         // images trained on in this invocation
    double train_seconds;  // time inside steps (not validation or checkpoints)
} TrainMeter;

// The line counts this invocation's steps towards b's end (the step limit, the time limit
// or both), with images/s beside steps/s.
void train_meter_start(TrainMeter *m, const TrainBudget *b, long start_step, bool show);
// A step ended with step steps done: images trained on, seconds it took, the status text.
void train_meter_step(TrainMeter *m, long step, int images, double seconds, const char *status);
// Ends a terminal's progress line so that a message can follow on its own line.
void train_meter_break(const TrainMeter *m);
void train_meter_end(TrainMeter *m, long step, const char *status);
// Training images per second of step time; 0 when no step ran.
double train_meter_images_per_s(const TrainMeter *m);

// The step loop's side of a trainer on cli/train_command.h's driver (draw classify train,
// text classify train, text translate train): one step (forward, backward, update; it
// advances the step count), then what is due after it (log row, validation, checkpoint;
// last: the budget's last step), and the status text of the progress line.
typedef struct {
    int (*step)(void *run, double *loss, Error *err);
    int (*after)(void *run, double loss, bool last, Error *err);
    void (*status)(const void *run, double loss, char *buf, size_t n);
    const char *items;  // what the meter counts: "images", "sentences", "pairs"
} TrainSteps;

// Gradient norms (the global norm before clipping) of the steps in one log window, for
// log.csv's grad_norm (their mean) and grad_norm_max: heavy-tailed norms, a clip that
// cuts most steps, or a norm that explodes before the loss does show there first.
typedef struct {
    double sum, max;
    long n;
} TrainNorms;

void train_norms_add(TrainNorms *w, double norm);
// The window's mean and largest norm (NAN when no step was added); empties the window.
void train_norms_take(TrainNorms *w, double *mean, double *max);

// ---------------------------------------------------------------------------------------
// Weight average (Polyak): avg follows the parameters after each update (core/adam.h
// ema_update). Off when decay is 0: then avg is empty and every call does nothing.

typedef struct {
    Block avg;    // same layout as the parameters; empty when off
    float decay;  // in [0, 1)
} TrainEma;

// Starts an average at a copy of params (decay > 0), or leaves it off. An avg already
// filled (read from a checkpoint) is kept.
void train_ema_start(TrainEma *e, const Block *params, float decay);
void train_ema_update(TrainEma *e, const Block *params, long step);
// Exchanges the average and the parameters (so the average can be validated and saved in
// their place); a second call swaps them back.
void train_ema_swap(TrainEma *e, Block *params);
bool train_ema_on(const TrainEma *e);
void train_ema_free(TrainEma *e);

// ---------------------------------------------------------------------------------------
// Output folder

// The lock of a run folder: OUT/.lock, flock'ed (LOCK_EX) by the training run that writes
// OUT, held until it ends (the process's exit releases it too, even on kill -9). The file
// holds the pid of the process holding the lock, for the message of a second run.
#define TRAIN_LOCK_FILE ".lock"
typedef struct {
    int fd;     // OUT/.lock while held
    bool held;  // false: none (a zeroed TrainLock)
} TrainLock;

// A training run's folder, before anything is read from it: refuses --resume with --force
// ("--resume and --force: ... give one"), takes the folder's lock where the folder exists,
// then train_out_check. A folder locked by a running training is refused in one line:
//     "runs/x is in use by another training run (pid 1234); wait for it or choose another
//      --out"
// Under MPI rank 0 alone calls these (the one rank that writes).
int train_out_open(TrainLock *lock, const char *out, const char *const *files, int n,
                   bool resume, bool force, Error *err);
// Before the first write into the folder (once the flags and data are checked, so that a
// run refused for them leaves no folder behind): makes it (mkdir -p) and, where
// train_out_open found none to lock, takes its lock and checks it again (another run may
// have made it since). With the lock held already: nothing.
int train_out_make(TrainLock *lock, const char *out, const char *const *files, int n,
                   bool resume, bool force, Error *err);
// Releases the lock (a zeroed or released TrainLock: nothing).
void train_lock_release(TrainLock *lock);

// A new run (resume false) refuses a folder holding one, i.e. one of the n checkpoint file
// names exists in it, unless force is given:
//     "runs/x already holds a run (runs/x/model.safetensors): add --resume to continue it,
//      --force to start over in it, or choose another --out"
int train_out_check(const char *out, const char *const *files, int n, bool resume, bool force,
                    Error *err);
// With force and not resuming, removes the old run's checkpoint files and what the toolkit
// wrote beside them (TRAIN_OLD_RUN_FILES: run.json, the curves, the report and the
// evaluations; log.csv stays for the new run to open anew; in the folders TRAIN_OLD_RUN_FOLDERS, the pictures and pages the
// toolkit writes there, each folder removed when that leaves it empty), so that the folder
// holds only the new run: never one run's log beside another's checkpoint, or an old
// report beside a new model. Files of other names are left. Call once the new run's flags
// and data have been checked.
#define TRAIN_OLD_RUN_FILES                                                                  \
    "run.json", "loss.png", "curves.png", "report.html", "eval.json",             \
        "per_image.json"
#define TRAIN_OLD_RUN_FOLDERS "report_files", "samples", "reconstructions", "film", "strips", "show"
int train_out_clear(const char *out, const char *const *files, int n, bool resume, bool force,
                    Error *err);

// ---------------------------------------------------------------------------------------
// Interruption: SIGINT (Ctrl-C) and SIGTERM set a flag that the step loop reads after each
// step; the run then stops there, records "interrupted" in run.json and exits non-zero,
// its last checkpoint as it was. A second signal of the same kind ends the process at once
// (the default action). SIGXFSZ (a write past ulimit -f) is ignored, so that the write fails
// with EFBIG and the run stops with a one-line error naming the file.
// train_process_begin installs both, and names the command for the line of an allocation
// that fails (core/check.h: "draw train: cannot allocate 3.2 GB for ...: out of memory").
// Call it once, after the flags are parsed.
void train_process_begin(const char *command);
// The signal that asked the run to stop (SIGINT or SIGTERM), or 0.
int train_interrupted(void);
// "interrupted by SIGINT after step 12; --resume continues from the last checkpoint"
int train_interrupt_error(long step, Error *err);

// ---------------------------------------------------------------------------------------
// Flags given on the command line against a checkpoint's values (--resume). Only given
// flags count: a flag left out takes the checkpoint's value.

typedef struct {
    char text[1024];  // "--T 8 (checkpoint: 4), --hidden 32 (checkpoint: 24)"
    int n;            // how many differ
} FlagDiffs;

void flag_diffs_int(FlagDiffs *d, const char *flag, bool given, long now, long saved);
void flag_diffs_float(FlagDiffs *d, const char *flag, bool given, double now, double saved);
void flag_diffs_text(FlagDiffs *d, const char *flag, bool given, const char *now,
                     const char *saved);
// A flag without a value (--no-attention, --beta-vector): on or off.
void flag_diffs_switch(FlagDiffs *d, const char *flag, bool given, bool now_on, bool saved_on);
// Refuses when any flag differs:
//     "--resume: runs/x/model.safetensors was trained with other model flags: --T 8
//      (checkpoint: 4); leave them out to continue that run, or train into another --out"
int flag_diffs_refuse(const FlagDiffs *d, const char *ckpt, Error *err);

// ---------------------------------------------------------------------------------------
// Optimiser settings (draw train, draw classify train, caption train): stored in the
// checkpoint beside the model configuration. On --resume the model flags must match the
// checkpoint's; these settings instead take the values given on the command line, and keep
// the checkpoint's where a flag is left out. A command without one of these flags (draw
// has no --lr-decay, caption no --beta1) never gives it: it keeps its default and is not
// stored.

typedef struct {
    uint64_t seed;          // initialisation, data order, noise
    int batch;              // images per step
    float lr, beta1, clip;  // Adam's learning rate and beta1; the gradient norm clip (0: off)
    float lr_decay;         // the learning rate's factor per epoch (caption; 1: none)
} TrainOptim;

// The same settings as parsed (--seed is an ARG_LONG); given.NAME: --NAME was on the
// command line.
typedef struct {
    long seed;
    int batch;
    float lr, beta1, clip, lr_decay;
    struct {
        bool seed, batch, lr, beta1, clip, lr_decay;
    } given;
} TrainOptimFlags;

// A new run's settings: the flags' values, given or default.
TrainOptim train_optim_new(const TrainOptimFlags *f);
// --resume: o holds the checkpoint's settings; each one given replaces it. Each given value
// that differs from the checkpoint's is added to changed (in the order batch, lr,
// lr-decay, beta1, clip, seed), for the caller's line once the run is set up:
//     "draw train: resuming with --lr 0.0005 (checkpoint: 0.001), --seed 2 (checkpoint: 1)"
void train_optim_resume(TrainOptim *o, const TrainOptimFlags *f, FlagDiffs *changed);

// The settings in a checkpoint's metadata: train.batch, train.lr, train.clip, train.seed
// (as a signed integer, the --seed given), and where `with` says so train.beta1
// (TRAIN_OPTIM_BETA1: draw, draw classify) and train.lr_decay (TRAIN_OPTIM_LR_DECAY:
// caption). train_optim_meta writes them into m->meta[0 .. m->n - 1], whose values point
// into m->text (m must outlive the save).
enum { TRAIN_OPTIM_BETA1 = 1u << 0, TRAIN_OPTIM_LR_DECAY = 1u << 1, TRAIN_OPTIM_META_MAX = 6 };
typedef struct {
    char text[TRAIN_OPTIM_META_MAX][32];
    SafetensorsMeta meta[TRAIN_OPTIM_META_MAX];
    int n;
} TrainOptimMeta;

void train_optim_meta(TrainOptimMeta *m, const TrainOptim *o, unsigned with);
// Reads back what train_optim_meta wrote (the same `with`), each value checked as its flag
// is: batch in [1, batch_max], lr > 0, beta1 in [0, 1), lr_decay in (0, 1], clip >= 0, the
// seed a 64-bit integer. -1 with one line naming path, key and value on a missing,
// malformed or out-of-range one; o is written only on success (the settings `with` leaves
// out keep their values).
int train_optim_read(const SafetensorsFile *f, const char *path, unsigned with, int batch_max,
                     TrainOptim *o, Error *err);
// Adam's settings for o: its defaults (core/adam.h) with o's learning rate and beta1.
AdamConfig train_optim_adam(const TrainOptim *o);
// The stream of a new run's initial weights (draw train, draw classify train).
Rng train_optim_init_rng(const TrainOptim *o);

// ---------------------------------------------------------------------------------------
// Step checks

// 0 when loss and every gradient are finite; else -1 with one line:
//     "step 5: the loss is nan; stopping (last good checkpoint: runs/x/model.safetensors)"
//     "step 5: gradient of enc.W is not finite; stopping (last good checkpoint: ...)"
// or, where ckpt does not exist (a run that stopped before its first checkpoint),
//     "step 5: the loss is nan; stopping (no checkpoint was written)"
// loss_name: "loss", "bound", ... Fault injection for tests/test_crash_safety.c: with
// ATTEND_FAULT_NAN_STEP=N in the environment, step N's first gradient element is set to NaN
// first, so the stop is exercised the same way on every build.
int train_check_finite(long step, const char *loss_name, double loss, Block *grads,
                       const char *ckpt, Error *err);

// A validation score as the run sees it: score, or NaN at step N with
// ATTEND_FAULT_NAN_VALID_STEP=N in the environment (fault injection for
// tests/test_cli_names.c: the message for a validation that sets no best model).
double train_fault_valid_score(long step, double score);

// ---------------------------------------------------------------------------------------
// Checkpoints

// --resume: whether ckpt exists. When it does not, one line on stderr says the run starts
// from scratch: "COMMAND: CKPT: no checkpoint yet; starting from scratch".
bool train_checkpoint_found(const char *ckpt, const char *command);

// A training checkpoint holds the parameters under their own names and Adam's moments, laid
// out alike, under these prefixes ("adam.m/enc.W", ...).
#define TRAIN_ADAM_M_PREFIX "adam.m/"
#define TRAIN_ADAM_V_PREFIX "adam.v/"
// The weight average (TrainEma), where a checkpoint holds one: "ema/enc.W", ...
#define TRAIN_EMA_PREFIX "ema/"

// Writes params and, where m is not NULL, the moments m and v, with the metadata, to path
// atomically (safetensors_save). m NULL: a model file of the weights alone.
int train_checkpoint_save(const char *path, const Block *params, const Block *m,
                          const Block *v, const SafetensorsMeta *meta, int n_meta, Error *err);

// Reads params and, where m is not NULL, the moments into the allocated blocks (laid out as
// the model's configuration says), each tensor's name and shape checked
// (safetensors_read_block); -1 with err naming path and the tensor on any mismatch.
int train_checkpoint_read(Block *params, Block *m, Block *v, const SafetensorsFile *f,
                          const char *path, Error *err);

// A training run's weights: the parameters, their gradients and Adam's two moments, four
// Blocks laid out alike.
typedef struct {
    Block params, grads, mom1, mom2;
} TrainWeights;

// With w->params laid out by the model (its tensors registered, not allocated): grads,
// mom1 and mom2 laid out alike, and all four allocated, zeroed. With a checkpoint
// (file not NULL) its tensors are checked against the layout first, before any
// allocation (its metadata may claim any size), then the parameters and moments are read
// from it; -1 with err naming path on a mismatch. Without one the caller initialises
// params.
int train_weights_open(TrainWeights *w, const SafetensorsFile *file, const char *path, Error *err);
void train_weights_free(TrainWeights *w);

// ---------------------------------------------------------------------------------------
// Summary

// x as "%.6g", or "null" where it is not finite (nothing measured: JSON has no NaN).
const char *json_number(char buf[32], double x);

#endif
