// draw_train.c: `draw train` (cli/draw_train.h): the flags, the run's set-up, the step
// loop with its log, validation and checkpoints, and the summary.
#include "cli/draw_train.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/draw_checkpoint.h"
#include "cli/draw_data.h"
#include "cli/draw_eval.h"
#include "cli/report_common.h"
#include "cli/run_info.h"
#include "cli/threads.h"
#include "cli/train_dist.h"
#include "cli/train_run.h"
#include "core/adam.h"
#include "core/block.h"
#include "core/check.h"
#include "core/csvlog.h"
#include "core/dist.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/gemm.h"
#include "core/rng.h"
#include "core/safetensors.h"
#include "core/text_escape.h"
#include "core/timer.h"
#include "datasets/mnist.h"
#include "models/draw.h"

// draw train's flags as given; given.NAME: --NAME was on the command line (on --resume, a
// flag left out takes the checkpoint's value).
typedef struct {
    const char *data, *root, *out;
    int T, read_n, write_n, hidden, z, threads, preset;
    int valid_images;
    TrainPlanFlags plan;    // --steps, --epochs, --minutes, --log-every, --valid-every, --checkpoint-every
    TrainOptimFlags optim;  // --batch, --lr, --beta1, --clip, --seed
    float ema;              // --ema: the weight average's decay (0: none)
    bool resume, force, no_attention, no_binarize, peepholes, conditional, json;
    bool preset_given;      // --preset was on the command line
    struct {
        bool data, T, read, write, hidden, z, no_attention, no_binarize, peepholes, conditional, ema;
    } given;
} TrainFlags;

// --preset: the model configurations of Gregor et al. 2015's table 3 (the hyper-parameters
// of their generative models); a model flag given on the command line overrides the
// preset's value.
static const char *const DRAW_PRESETS[] = {"mnist", "svhn", NULL};
static const struct {
    int T, read_n, write_n, hidden, z;
} DRAW_PRESET_VALUES[] = {
    {64, 2, 5, 256, 100},    // mnist: MNIST model (the defaults)
    {32, 12, 12, 800, 100},  // svhn: SVHN model (colour 64 x 64 in the paper)
};

static void apply_preset(TrainFlags *f) {
    int p = f->preset;
    if (!f->given.T) f->T = DRAW_PRESET_VALUES[p].T;
    if (!f->given.read) f->read_n = DRAW_PRESET_VALUES[p].read_n;
    if (!f->given.write) f->write_n = DRAW_PRESET_VALUES[p].write_n;
    if (!f->given.hidden) f->hidden = DRAW_PRESET_VALUES[p].hidden;
    if (!f->given.z) f->z = DRAW_PRESET_VALUES[p].z;
}

// Fills f from the command line. Returns 1 when the command should return *code at once
// (after --help, or a bad flag reported on stderr).
static int parse_train_flags(TrainFlags *f, int argc, char **argv, int *code) {
    *f = (TrainFlags){.data = "mnist", .root = "data", .T = 64, .read_n = 2, .write_n = 5,
                      .hidden = 256, .z = 100, .threads = threads_available(),
                      .plan = {.log_every = 50, .valid_every = 500},
                      .optim = {.seed = 1, .batch = 100, .lr = 1e-3f, .beta1 = 0.9f, .clip = 10.0f, .lr_decay = 1}};
    ArgSpec specs[] = {
        {"data", ARG_STRING, &f->data, "mnist, fashion-mnist, mnist2 (two digits, 60x60), scenes (colour 64x64), or an IDX image file", .metavar = "D", .given = &f->given.data},
        {"preset", ARG_CHOICE, &f->preset, "model configuration of the paper's table 3: mnist (T 64, read 2, write 5, hidden 256, z 100) or svhn (T 32, read 12, write 12, hidden 800, z 100); model flags given override it", .choices = DRAW_PRESETS, .given = &f->preset_given},
        {"data-root", ARG_STRING, &f->root, "folder holding mnist/ and fashion-mnist/", .metavar = "DIR"},
        {"out", ARG_STRING, &f->out, "output folder (model.safetensors, log.csv, loss.png)", .metavar = "DIR", .required = true},
        {"T", ARG_INT, &f->T, "glimpses (time steps)", .has_min = true, .min = 1, .has_max = true, .max = 1000, .given = &f->given.T},
        {"read", ARG_INT, &f->read_n, "read grid N (N x N)", .has_min = true, .min = 1, .has_max = true, .max = 64, .given = &f->given.read},
        {"write", ARG_INT, &f->write_n, "write grid N (N x N)", .has_min = true, .min = 1, .has_max = true, .max = 64, .given = &f->given.write},
        {"hidden", ARG_INT, &f->hidden, "encoder and decoder LSTM units", .has_min = true, .min = 1, .has_max = true, .max = 8192, .given = &f->given.hidden},
        {"z", ARG_INT, &f->z, "latent size per step", .has_min = true, .min = 1, .has_max = true, .max = 8192, .given = &f->given.z},
        {"batch", ARG_INT, &f->optim.batch, "images per step", .has_min = true, .min = 1, .has_max = true, .max = DRAW_BATCH_MAX, .given = &f->optim.given.batch},
        {"lr", ARG_FLOAT, &f->optim.lr, "Adam learning rate", .has_min = true, .min = 0, .min_exclusive = true, .has_max = true, .max = 1, .given = &f->optim.given.lr},
        {"beta1", ARG_FLOAT, &f->optim.beta1, "Adam beta1", .has_min = true, .min = 0, .has_max = true, .max = 1, .max_exclusive = true, .given = &f->optim.given.beta1},
        {"clip", ARG_FLOAT, &f->optim.clip, "clip the global gradient norm at this (0: off)", .has_min = true, .min = 0, .given = &f->optim.given.clip},
        {"ema", ARG_FLOAT, &f->ema, "decay of a weight average (Polyak) kept beside the weights, validated and saved with them and evaluated in their place, e.g. 0.999 (0: none); on --resume the checkpoint's unless given", .has_min = true, .min = 0, .has_max = true, .max = 1, .max_exclusive = true, .given = &f->given.ema},
        {"steps", ARG_LONG, &f->plan.steps, "train until this many steps in total (0: use --epochs/--minutes)", .has_min = true, .min = 0},
        {"epochs", ARG_INT, &f->plan.epochs, "train until this many epochs in total (1 when no budget is given)", .has_min = true, .min = 0},
        {"minutes", ARG_DOUBLE, &f->plan.minutes, "stop after this much wall time in this run", .has_min = true, .min = 0},
        {"seed", ARG_LONG, &f->optim.seed, "seed of initialisation, data order, binarisation and noise", .has_min = true, .min = 0, .given = &f->optim.given.seed},
        {"resume", ARG_FLAG, &f->resume, "continue from OUT/model.safetensors; model flags given must match it, --batch/--lr/--beta1/--clip/--seed/--ema given replace its values, and --data where its images are now", .given = NULL},
        {"force", ARG_FLAG, &f->force, "start a new run in an OUT that holds one, replacing it: its checkpoint, run.json, report and pictures go (not with --resume)", .given = NULL},
        {"no-attention", ARG_FLAG, &f->no_attention, "read the whole image and write the whole canvas", .given = &f->given.no_attention},
        {"no-binarize", ARG_FLAG, &f->no_binarize, "keep grey levels (Bernoulli likelihood on intensities)", .given = &f->given.no_binarize},
        {"peepholes", ARG_FLAG, &f->peepholes, "LSTMs with peephole connections from the cell to the gates (Graves 2013; the Blocks LSTM of the public Theano DRAW)", .given = &f->given.peepholes},
        {"conditional", ARG_FLAG, &f->conditional, "class-conditional: each image's label, one-hot, enters the encoder and the decoder at every step (models/draw.h); the bound is then -log p(x | label)'s, and draw generate --digit draws a chosen class. Needs labelled data (mnist, fashion-mnist, an IDX file with its labels)", .given = &f->given.conditional},
        {"threads", ARG_INT, &f->threads, "threads: data-parallel workers over the batch, one GEMM thread each", .has_min = true, .min = 1, .has_max = true, .max = THREADS_MAX, .default_note = THREADS_DEFAULT_NOTE},
        {"valid-every", ARG_INT, &f->plan.valid_every, "steps between validation bounds (and checkpoints)", .has_min = true, .min = 1},
        {"valid-images", ARG_INT, &f->valid_images, "validation images used (0: all)", .has_min = true, .min = 0},
        {"log-every", ARG_INT, &f->plan.log_every, "steps between rows of log.csv", .has_min = true, .min = 1},
        {"checkpoint-every", ARG_INT, &f->plan.ckpt_every, "steps between checkpoints (0: with validation)", .has_min = true, .min = 0},
        {"json", ARG_FLAG, &f->json, "print the final figures as one JSON object", .given = NULL},
    };
    if (args_parse_for_command(argc, argv, specs, ARGS_LEN(specs), "draw train --data D --out DIR [flags]", "draw", code))
        return 1;
    if (strlen(f->data) >= sizeof(((DrawTrainState *)0)->data)) {
        fprintf(stderr, "draw: --data: longer than the %zu characters a checkpoint keeps\n",
                sizeof(((DrawTrainState *)0)->data) - 1);
        *code = 2;
        return 1;
    }
    train_plan_default(&f->plan);
    apply_preset(f);
    return 0;
}

// One training run: its state, data, model, buffers and counters. Zeroed, it is safe to
// close at any stage of opening.
typedef struct {
    const TrainFlags *f;
    Dist *dist;     // the ranks (cli/train_dist.h): rank 0 alone writes
    DrawTrainState st;  // configuration and counters, as the checkpoint holds them
    bool resumed;   // st came from OUT/model.safetensors
    bool reported;  // the failure was printed already, by the ranks that failed
    bool failed_everywhere;  // every rank stopped on the same failure (after a reduction)
    bool interrupted;  // SIGINT or SIGTERM stopped the run (rank 0's, for every rank)
    TrainLock lock;    // rank 0: OUT/.lock, held for the run's life
    TrainPaths paths;  // OUT/model.safetensors, log.csv, loss.png
    ImageSet train, valid;
    TrainWeights w;    // parameters (viewed by p), gradients, Adam's moments
    TrainEma ema;      // --ema: the weight average, validated in the parameters' place
    float stored_ema;  // --resume: the checkpoint's decay (0: it holds no average)
    FlagDiffs resumed_with;  // --resume: the settings given that replace the checkpoint's
    DrawParams p;
    AdamConfig adam;
    DrawWorker *workers;
    int n_workers;
    int share_begin, share_count;  // this rank's images of each batch (all of it alone)
    DrawEvalScratch eval;  // validation: a view of the training workers and buffers
    int steps_per_epoch;  // batches per epoch (the remainder is dropped each epoch)
    float *eps, *x;    // this rank's share of the batch: noise (T, share, z), images (share, W*H)
    int *y;            // conditional: the share's labels (share); NULL otherwise
    double *logw;      // (B) validation scratch
    TrainOrder order;  // the current epoch's order of the training images
    CsvLog log;
    TrainBudget budget;
    TrainCadence cadence;
    TrainMeter meter;
    double bound_acc;  // bounds summed over the log window
    long acc_n;
    TrainNorms norms;  // the log window's gradient norms
    double last_train, last_valid;  // the last logged means; NAN before the first
} DrawRun;

static const char *const DRAW_RUN_FILES[] = {"model.safetensors"};

// --resume: the model flags given must match the checkpoint's; the training settings it
// stores (batch, learning rate, beta1, clip, seed, the average's decay) and its data take
// the values given, named in r->resumed_with (said with the header, once the run is set
// up: a refusal after this stays the only line). A new --data is where the run's images
// are now (an IDX file that moved); load_data checks them against the model's size.
static int check_resume_flags(DrawRun *r, Error *err) {
    const TrainFlags *f = r->f;
    DrawTrainState *st = &r->st;
    const DrawConfig *c = &st->cfg;
    FlagDiffs model = {0};
    flag_diffs_int(&model, "T", f->given.T, f->T, c->T);
    flag_diffs_int(&model, "read", f->given.read, f->read_n, c->read_n);
    flag_diffs_int(&model, "write", f->given.write, f->write_n, c->write_n);
    flag_diffs_int(&model, "hidden", f->given.hidden, f->hidden, c->enc);
    flag_diffs_int(&model, "z", f->given.z, f->z, c->z);
    flag_diffs_switch(&model, "no-attention", f->given.no_attention, f->no_attention, !c->attention);
    flag_diffs_switch(&model, "peepholes", f->given.peepholes, f->peepholes, c->peepholes);
    flag_diffs_switch(&model, "conditional", f->given.conditional, f->conditional, c->classes > 0);
    flag_diffs_switch(&model, "no-binarize", f->given.no_binarize, f->no_binarize, !st->binarize);
    if (flag_diffs_refuse(&model, r->paths.model, err)) return -1;
    train_optim_resume(&st->optim, &f->optim, &r->resumed_with);
    flag_diffs_float(&r->resumed_with, "ema", f->given.ema, f->ema, st->ema);
    flag_diffs_text(&r->resumed_with, "data", f->given.data, f->data, st->data);
    if (f->given.ema) st->ema = f->ema;
    if (f->given.data) snprintf(st->data, sizeof st->data, "%s", f->data);
    return 0;
}

// --resume with a checkpoint: its state into r->st (file stays open for init_model).
static int resume_state(DrawRun *r, SafetensorsFile *file, Error *err) {
    if (!r->f->resume) return 0;
    if (!train_checkpoint_found(r->paths.model, "draw")) return 0;
    if (safetensors_load(file, r->paths.model, err) || draw_checkpoint_read_state(file, r->paths.model, &r->st, err)) return -1;
    r->stored_ema = r->st.ema;
    // The tensors against the configuration, before any rank allocates for it: the metadata
    // may claim any size.
    Block layout = {0};
    DrawParams p;
    draw_layout(&layout, &p, &r->st.cfg);
    int rc = safetensors_check_block(&layout, "", file, r->paths.model, err);
    block_free(&layout);
    if (rc) return -1;
    r->resumed = true;
    return check_resume_flags(r, err);
}

// A new run's read and write grids against its images (W x H pixels, from dname): a grid
// of N x N filters fits an image of at least N pixels each way. -1 with one line naming
// the flag (and where its value came from when it was not given), the data and the bound.
static int check_grids(const TrainFlags *f, int W, int H, const char *dname, Error *err) {
    if (f->no_attention) return 0;  // the grids are not used
    const int most = W < H ? W : H;
    const struct {
        const char *flag;
        int n;
        bool given;
    } grids[] = {{"read", f->read_n, f->given.read}, {"write", f->write_n, f->given.write}};
    for (int i = 0; i < 2; i++) {
        if (grids[i].n <= most) continue;
        char source[64] = "";
        if (!grids[i].given)
            snprintf(source, sizeof source, " (%s %s)", f->preset_given ? "from --preset" : "the default",
                     f->preset_given ? DRAW_PRESETS[f->preset] : "value");
        return error_set(err, "--%s %d%s: the images of %s are %d x %d pixels, so --%s must be %s%d "
                         "(or train with --no-attention)", grids[i].flag, grids[i].n, source, dname, W, H,
                         grids[i].flag, most > 1 ? "at most " : "", most);
    }
    return 0;
}

// The training and validation images; a new run's configuration from the flags and the
// images' size, a resumed one's checked against them.
static int load_data(DrawRun *r, Error *err) {
    const TrainFlags *f = r->f;
    DrawTrainState *st = &r->st;
    const char *dname = r->resumed && st->data[0] ? st->data : f->data;
    int binarize = r->resumed ? st->binarize : !f->no_binarize && draw_data_binarizable(dname);
    if (draw_data_load_splits(&r->train, &r->valid, NULL, dname, f->root, err))
        return r->resumed ? error_prefix(err, "%s: the run's data", r->paths.model) : -1;
    if (binarize) imageset_binarize_fixed(&r->valid, MNIST_FIXED_BINARIZE_SEED);
    if (!r->resumed) {
        st->cfg = (DrawConfig){.W = r->train.cols, .H = r->train.rows,
                               .channels = r->train.channels, .T = f->T,
                               .read_n = f->read_n, .write_n = f->write_n, .enc = f->hidden,
                               .dec = f->hidden, .z = f->z, .attention = !f->no_attention,
                               .peepholes = f->peepholes,
                               .classes = f->conditional ? MNIST_CLASSES : 0};
        st->optim = train_optim_new(&f->optim);
        st->ema = f->ema;
        st->binarize = binarize;
        snprintf(st->data, sizeof st->data, "%s", f->data);
        if (check_grids(f, r->train.cols, r->train.rows, dname, err) ||
            draw_config_check(&st->cfg, err))
            return -1;
    } else if (st->cfg.W != r->train.cols || st->cfg.H != r->train.rows ||
               draw_channels(&st->cfg) != r->train.channels) {
        return error_set(err, "%s: model is for %dx%dx%d images, %s has %dx%dx%d", r->paths.model,
                         st->cfg.W, st->cfg.H, draw_channels(&st->cfg), dname, r->train.cols,
                         r->train.rows, r->train.channels);
    }
    if (st->cfg.classes && (!r->train.labels || !r->valid.labels))
        return error_set(err, "--conditional: %s has no labels (a conditional model is trained on "
                         "each image's class)", dname);
    // The images' size is known now: a product of it and the flags past what the kernels
    // index is refused before anything is allocated for it (models/draw.h).
    if (draw_check_sizes(&st->cfg, st->optim.batch, err)) return -1;
    if (r->train.n < st->optim.batch)
        return error_set(err, "--batch: %d is more than the %d training images of %s", st->optim.batch,
                         r->train.n, dname);
    return 0;
}

// --ema's weight average: the checkpoint's where it holds one (file: rank 0 on --resume),
// else a copy of the weights (a new run, or a resumed one that turns it on); none with a
// decay of 0. Every rank holds one; on --resume open_run gives them rank 0's.
static int open_average(DrawRun *r, const SafetensorsFile *file, Error *err) {
    if (r->st.ema == 0) return 0;
    if (file && r->stored_ema > 0) {
        block_layout_like(&r->ema.avg, &r->w.params);
        if (safetensors_alloc_read_block(&r->ema.avg, TRAIN_EMA_PREFIX, file, r->paths.model, err))
            return -1;
    }
    train_ema_start(&r->ema, &r->w.params, r->st.ema);
    return 0;
}

// Parameters, gradients and Adam moments: read from the checkpoint, or initialised.
static int init_model(DrawRun *r, const SafetensorsFile *file, Error *err) {
    const DrawConfig *c = &r->st.cfg;
    draw_layout(&r->w.params, &r->p, c);
    // On --resume rank 0 reads the checkpoint and broadcasts its weights and moments (open_run).
    const bool reads = r->resumed && dist_is_root(r->dist);
    if (train_weights_open(&r->w, reads ? file : NULL, r->paths.model, err)) return -1;
    if (!r->resumed) {
        Rng init = train_optim_init_rng(&r->st.optim);
        draw_init(&r->p, c, &init);
    }
    r->adam = train_optim_adam(&r->st.optim);
    return open_average(r, reads ? file : NULL, err);
}

// Data parallelism (models/draw.h): one worker per thread, each with one GEMM thread; and
// the step's buffers.
// Over ranks, each rank's workers split its share of the batch.
static void alloc_workers(DrawRun *r) {
    const DrawConfig *c = &r->st.cfg;
    const int B = r->st.optim.batch, threads = r->f->threads;
    dist_share(r->dist, B, &r->share_begin, &r->share_count);
    const int share = r->share_count;
    // Every rank's workers are laid out for the largest share (rank 0's), ceil(ceil(B / N) /
    // n) = ceil(B / (N n)) rows each, as one process's N n workers are: DRAW's weight
    // gradients sum over every row of that layout, so the layout is part of the sum's order.
    int most, first;
    dist_share_of(0, r->dist->size, B, &first, &most);
    r->n_workers = draw_worker_count(threads, most);
    r->workers = xcalloc((size_t)r->n_workers, sizeof *r->workers);
    draw_workers_alloc(r->workers, r->n_workers, c, most);
    gemm_set_threads(threads / r->n_workers);
    r->eps = xmalloc(sizeof(float) * (size_t)c->T * share * c->z);
    r->x = xmalloc(sizeof(float) * (size_t)share * draw_image_size(c));
    r->y = c->classes ? xmalloc(sizeof(int) * (size_t)share) : NULL;
    r->logw = xmalloc(sizeof(double) * (size_t)B);
    // A validation batch's share is at most the training batch's: the same buffers serve.
    r->eval = (DrawEvalScratch){.dist = r->dist, .w = r->workers, .n_workers = r->n_workers, .B = B,
                            .eps = r->eps, .logw = r->logw};
    r->steps_per_epoch = r->train.n / B;
    train_order_init(&r->order, r->train.n);
}

static void close_run(DrawRun *r) {
    draw_workers_free(r->workers, r->n_workers);
    train_weights_free(&r->w);
    train_ema_free(&r->ema);
    free(r->workers), free(r->eps), free(r->x), free(r->y), free(r->logw);
    train_order_free(&r->order);
    imageset_free(&r->train), imageset_free(&r->valid);
    csvlog_close(&r->log);
    train_lock_release(&r->lock);
}

// Rank 0 decides whether the run is new or resumed, and with which state; the others take
// its decision (a failure there is rank 0's to print).
static int start_state(DrawRun *r, SafetensorsFile *file, Error *err) {
    const TrainFlags *f = r->f;
    int rc = 0;
    if (dist_is_root(r->dist))
        rc = train_out_open(&r->lock, f->out, DRAW_RUN_FILES, 1, f->resume, f->force, err) ||
             resume_state(r, file, err);
    if (train_dist_agree(r->dist, rc, "draw", err)) {
        r->reported = true;
        return -1;
    }
    int resumed = r->resumed;
    if (dist_broadcast(r->dist, &resumed, sizeof resumed, err) ||
        dist_broadcast(r->dist, &r->st, sizeof r->st, err))
        return -1;
    r->resumed = resumed != 0;
    return 0;
}

// Each rank's data, model and buffers; rank 0's folder, log and stale files.
static int open_parts(DrawRun *r, const SafetensorsFile *file, Error *err) {
    const TrainFlags *f = r->f;
    const bool root = dist_is_root(r->dist);
    if (load_data(r, err) ||
        (root && train_out_make(&r->lock, f->out, DRAW_RUN_FILES, 1, f->resume, f->force, err)))
        return -1;
    if (r->st.optim.batch < r->dist->size)
        return error_set(err, "--batch %d is less than the %d ranks: each rank needs an image",
                         r->st.optim.batch, r->dist->size);
    if (root) atomic_remove_stale(f->out);
    if (init_model(r, file, err)) return -1;
    alloc_workers(r);
    if (gemm_check_address_space(f->threads, err)) return -1;  // not a hang in OpenBLAS
    if (!root) return 0;
    static const char columns[] = "step,train_bound,valid_bound,grad_norm,grad_norm_max,seconds";
    return train_out_clear(f->out, DRAW_RUN_FILES, 1, f->resume, f->force, err) ||
           (r->resumed ? csvlog_open_resume(&r->log, r->paths.log, columns, r->st.step, err)
                       : csvlog_open(&r->log, r->paths.log, columns, 0, err));
}

// Everything a run needs before its first step; on failure, what was made is closed by
// close_run. Every rank starts from rank 0's weights and Adam moments.
static int open_run(DrawRun *r, const TrainFlags *f, Dist *dist, Error *err) {
    memset(r, 0, sizeof *r);
    r->f = f;
    r->dist = dist;
    r->last_train = r->last_valid = NAN;
    train_paths(&r->paths, f->out);
    SafetensorsFile file = {0};
    int rc = start_state(r, &file, err);
    if (rc == 0 && train_dist_agree(dist, open_parts(r, &file, err), "draw", err)) {
        r->reported = true;
        rc = -1;
    }
    safetensors_free(&file);
    if (rc) return -1;
    if (dist->size > 1 && (train_dist_broadcast_block(dist, &r->w.params, err) ||
                           train_dist_broadcast_block(dist, &r->w.mom1, err) ||
                           train_dist_broadcast_block(dist, &r->w.mom2, err) ||
                           (train_ema_on(&r->ema) && train_dist_broadcast_block(dist, &r->ema.avg, err))))
        return -1;
    train_plan(&f->plan, r->steps_per_epoch, &r->budget, &r->cadence);
    return 0;
}

// The flags given that this run does not use (cli/args.h ArgUse), from the model it trains:
// the flags' for a new run, the checkpoint's on --resume.
static void warn_unused_flags(const DrawRun *r) {
    const TrainFlags *f = r->f;
    const DrawConfig *c = &r->st.cfg;
    static const char WHOLE[] = "a model without attention reads the whole image and writes the whole canvas";
    const ArgUse uses[] = {
        {"read", f->given.read, c->attention, WHOLE},
        {"write", f->given.write, c->attention, WHOLE},
        {"no-binarize", f->given.no_binarize && !r->resumed, draw_data_binarizable(r->st.data),
         "colour images are never binarised"},
        {"preset", f->preset_given && r->resumed, false, "--resume takes the model's configuration from the checkpoint"},
        {"epochs", f->plan.epochs > 0 && f->plan.steps > 0, false, "--steps sets the run's length"},
    };
    args_warn_unused(stderr, "draw train", uses, ARGS_LEN(uses));
}

static void print_header(const DrawRun *r) {
    const DrawConfig *c = &r->st.cfg;
    if (r->resumed_with.n) text_write_linef(stderr, "draw train: resuming with %s", r->resumed_with.text);
    char budget[64];
    train_budget_describe(&r->budget, budget, sizeof budget);
    char ranks[48] = "";
    if (r->dist->size > 1)
        snprintf(ranks, sizeof ranks, " per rank, %d ranks", r->dist->size);
    text_write_linef(stderr, "draw train: %s %dx%d, T %d, %s, hidden %d, z %d, batch %d, lr %g, %s; "
                     "gemm %s, %d thread%s%s; step %ld%s",
                     r->resumed && r->st.data[0] ? r->st.data : r->f->data, c->W, c->H, c->T,
                     c->attention ? "attention" : "no attention", c->enc, c->z, r->st.optim.batch, r->st.optim.lr,
                     r->st.binarize ? "dynamically binarised" : c->channels > 1 ? "colour intensities" : "grey levels", gemm_backend(),
                     r->f->threads, r->f->threads == 1 ? "" : "s", ranks, r->st.step, budget);
    if (c->attention)
        fprintf(stderr, "draw train: read %dx%d, write %dx%d\n", c->read_n, c->read_n, c->write_n, c->write_n);
    if (c->peepholes) fprintf(stderr, "draw train: LSTMs with peepholes\n");
    if (c->classes)
        fprintf(stderr, "draw train: class-conditional on the label (%d classes): the bounds are "
                "-log p(x | label)'s\n", c->classes);
    if (train_ema_on(&r->ema))
        fprintf(stderr, "draw train: weight average, decay %g, validated and saved beside the weights\n",
                (double)r->ema.decay);
}

// One step: the batch at position st.step of its epoch's order, forward and backward, the
// checks, the update. *bound: the step's bound (nats per image).
static int train_step(DrawRun *r, double *bound, Error *err) {
    DrawTrainState *st = &r->st;
    const DrawConfig *c = &st->cfg;
    const int B = st->optim.batch;
    const int *batch =
        train_order_batch(&r->order, st->step, r->steps_per_epoch, B, st->optim.seed);
    // This rank's share of the batch (cli/train_dist.h): each image binarised and given
    // its noise from streams of its own, seeded with (seed, step, its place in the batch).
    const uint64_t step_seed = rng_mix(rng_mix(st->optim.seed, 0x5DE9), (uint64_t)st->step);
    const int begin = r->share_begin, count = r->share_count, HW = draw_image_size(c);
    for (int b = 0; b < count; b++) {
        Rng br;
        rng_seed(&br, rng_mix(step_seed ^ 0xB1A7ULL, (uint64_t)(begin + b)));
        imageset_batch(r->x + (size_t)b * HW, &r->train, batch + begin + b, 1,
                       st->binarize ? &br : NULL);
        if (r->y) r->y[b] = r->train.labels[batch[begin + b]];
    }
    draw_share_noise(r->eps, c, begin, count, step_seed);
    *bound = draw_forward_parallel(r->workers, r->n_workers, &r->p, c, r->x, r->eps, r->y, count,
                                   &r->w.grads, NULL, NULL, NULL);
    if (train_dist_reduce_means(r->dist, bound, 1, count, B, err) ||
        train_dist_reduce_grads(r->dist, &r->w.grads, count, B, err))
        return -1;
    if (train_check_finite(st->step + 1, "bound", *bound, &r->w.grads, r->paths.model, err)) {
        r->failed_everywhere = true;  // the sums are every rank's: each stops here
        return -1;
    }
    train_norms_add(&r->norms, clip_global_norm(r->w.grads.data, r->w.grads.numel, st->optim.clip));
    st->step++;
    adam_update(r->w.params.data, r->w.grads.data, r->w.mom1.data, r->w.mom2.data, r->w.params.numel,
                &r->adam, st->step, st->optim.lr);
    train_ema_update(&r->ema, &r->w.params, st->step);
    return 0;
}

// OUT/model.safetensors: the state, weights, Adam moments and any weight average.
static int save_checkpoint(const DrawRun *r, Error *err) {
    return draw_checkpoint_write(r->paths.model, &r->st, &r->w.params, &r->w.mom1, &r->w.mom2,
                                 train_ema_on(&r->ema) ? &r->ema.avg : NULL, err);
}

// After a step: the log row (with the validation bound when one is due), the checkpoint.
static int log_validate_save(DrawRun *r, double bound, bool last, Error *err) {
    const DrawTrainState *st = &r->st;
    r->bound_acc += bound;
    r->acc_n++;
    TrainDue due = train_due(&r->cadence, st->step, last);
    if (due.log) {
        r->last_train = r->bound_acc / r->acc_n;
        if (due.validate) {
            DrawEvalResult v;
            train_ema_swap(&r->ema, &r->w.params);  // --ema: the average is validated
            int rc = draw_evaluate(&v, &r->eval, &r->p, &st->cfg, &r->valid, r->f->valid_images, 1,
                                   DRAW_EVAL_NOISE_SEED, err);
            train_ema_swap(&r->ema, &r->w.params);
            if (rc) return -1;
            r->last_valid = v.bound;
        }
        double row[6] = {(double)st->step, r->last_train, due.validate ? r->last_valid : NAN, 0, 0,
                         timer_now() - r->budget.t0};
        train_norms_take(&r->norms, &row[3], &row[4]);
        if (dist_is_root(r->dist)) csvlog_row(&r->log, row, 6);
        r->bound_acc = 0.0;
        r->acc_n = 0;
    }
    if (due.save && dist_is_root(r->dist))
        return save_checkpoint(r, err);
    return 0;
}

// Steps until the budget is spent or a step fails.
static int train_loop(DrawRun *r, Error *err) {
    char status[96] = "";  // stays empty when a resumed run has no step left
    int rc = 0;
    train_budget_begin(&r->budget);
    train_meter_start(&r->meter, &r->budget, r->st.step, dist_is_root(r->dist));
    // Rank 0's clock decides when a time budget is spent, for every rank.
    bool go = train_budget_allows(&r->budget, r->st.step);
    if (train_dist_root_decides(r->dist, &go, err)) return -1;
    while (go) {
        double ts = timer_now(), bound;
        train_dist_fault_point(r->dist, r->st.step + 1);
        if (train_step(r, &bound, err)) {
            rc = -1;
            break;
        }
        double secs = timer_now() - ts;
        bool last = train_budget_spent(&r->budget, r->st.step);
        if (train_dist_root_decides(r->dist, &last, err) ||
            log_validate_save(r, bound, last, err)) {
            rc = -1;
            break;
        }
        go = !last;
        int n = snprintf(status, sizeof status, "bound %.2f nats", bound);
        if (isfinite(r->last_valid)) snprintf(status + n, sizeof status - n, ", valid %.2f", r->last_valid);
        train_meter_step(&r->meter, r->st.step, r->st.optim.batch, secs, status);
        bool stop;  // SIGINT or SIGTERM
        if (train_dist_interrupted(r->dist, go, &stop, err)) {
            rc = -1;
            break;
        }
        if (stop) {
            r->interrupted = r->failed_everywhere = true;
            rc = train_interrupt_error(r->st.step, err);
            break;
        }
    }
    train_meter_end(&r->meter, r->st.step, status);
    return rc;
}

// After the last step: a checkpoint for a run that had none, the loss plot, the summary.
static int finish_run(DrawRun *r, Error *err) {
    csvlog_close(&r->log);
    if (!dist_is_root(r->dist)) return 0;
    if (r->meter.steps == 0 && !file_exists(r->paths.model) &&
        save_checkpoint(r, err))
        return -1;
    static const ReportLogPlot curves = {{"train_bound", "valid_bound"}, {"train bound", "valid bound"}, 1.0f,
                                         "DRAW: negative log-likelihood bound", "nats per image"};
    if (report_plot_log(r->paths.log, r->paths.plot, &curves, err)) return -1;
    double ips = train_meter_images_per_s(&r->meter), secs = timer_now() - r->budget.t0;
    // A resumed run with no step left measured nothing: no bound to report.
    char valid_text[48] = "no validation in this run", tj[32], vj[32];
    if (isfinite(r->last_valid))
        snprintf(valid_text, sizeof valid_text, "valid bound %.3f nats", r->last_valid);
    // Wall time includes validation and checkpoints; the rate counts the steps' time alone.
    text_write_linef(stderr, "draw train: %ld steps in %.1f s wall; %.1f images/s of step time; %s; wrote %s",
                     r->meter.steps, secs, ips, valid_text, r->paths.model);
    if (r->f->json) {
        printf("{\"steps\": %ld, \"final_loss\": %s, \"train_bound\": %s, "
               "\"valid_bound\": %s, \"images_per_s\": %.6g, \"seconds\": %.6g, ",
               r->st.step, json_number(tj, r->last_train), tj, json_number(vj, r->last_valid),
               ips, secs);
        text_json_name(stdout, "model", r->paths.model);  // valid JSON whatever the path holds
        printf("}\n");
    }
    return 0;
}

int draw_train_main(int argc, char **argv) {
    TrainFlags f;
    int code;
    if (parse_train_flags(&f, argc, argv, &code)) return code;
    train_process_begin("draw train");
    gemm_set_threads(f.threads);
    Dist dist;
    Error err;
    if (dist_init(&dist, &err)) {
        text_write_linef(stderr, "draw: %s", err.msg);
        return 1;
    }
    DrawRun r;
    int rc = open_run(&r, &f, &dist, &err);
    if (rc == 0) {
        const bool root = dist_is_root(&dist);
        RunInfo run_info;  // RUN/run.json: this invocation, for the report
        if (root) run_info_begin(&run_info, f.out, "draw", argc, argv, f.threads, dist.size,
                                 f.resume);
        if (root) warn_unused_flags(&r), print_header(&r);
        rc = train_loop(&r, &err);
        if (rc == 0) rc = finish_run(&r, &err);
        if (root) run_info_end(&run_info, r.interrupted ? RUN_INFO_INTERRUPTED : rc, r.st.step,
                               train_meter_images_per_s(&r.meter));
    }
    int status = 0;
    if (rc && r.reported) {
        status = 1;  // printed by the ranks that failed
    } else if (rc && r.failed_everywhere) {
        if (dist_is_root(&dist)) text_write_linef(stderr, "draw: %s", err.msg);  // before any rank exits
        dist_barrier(&dist);
        status = 1;
    } else if (rc) {
        status = train_dist_fail(&dist, "draw", &err);  // with several ranks, ends them all
    }
    close_run(&r);
    dist_finalize(&dist);
    return status;
}
