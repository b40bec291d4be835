// `draw classify`: dispatch and `draw classify train` (cli/classify.h). eval, show and
// export are in cli/classify_tools.c.
#include "cli/classify.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/classify_common.h"
#include "cli/classify_tools.h"
#include "cli/threads.h"
#include "cli/train_command.h"
#include "core/adam.h"
#include "core/check.h"
#include "core/csvlog.h"
#include "core/gemm.h"
#include "core/rng.h"
#include "core/timer.h"

typedef struct {
    const char *data, *root;
    int model, T, read_n, hidden, fragments, scales, size, gnet;
    int valid_images;
    TrainCommandFlags cmd;  // --out, --resume, --force, --json, --threads, the plan
    float loc_std;
    TrainOptimFlags optim;  // --batch, --lr, --beta1, --clip, --seed
    bool no_attention, hard;
    struct {
        bool model, data, T, read, hidden, no_attention, hard, loc_std, scales, fragments, size, gnet;
    } given;
} ClassifyFlags;

static int parse_flags(ClassifyFlags *f, int argc, char **argv, int *code) {
    *f = (ClassifyFlags){.data = "mnist", .root = "data", .T = 8, .read_n = 12, .hidden = 256,
                         .fragments = 8, .valid_images = 1000,
                         .cmd = {.threads = threads_available(),
                                 .plan = {.log_every = 50, .valid_every = 500}},
                         .loc_std = 0.1f, .scales = 4, .size = 100,
                         .optim = {.seed = 1, .batch = 64, .lr = 1e-3f, .beta1 = 0.9f, .clip = 5.0f, .lr_decay = 1}};
    static const char *const models[] = {"glimpse", "cnn", NULL};
    ArgSpec specs[] = {
        {"model", ARG_CHOICE, &f->model, "glimpse: the recurrent attention classifier; cnn: the convolutional baseline (2 layers of 3x3 conv, ReLU, 2x2 max-pool, 16 and 32 channels; fc 256)", .choices = models, .given = &f->given.model},
        {"data", ARG_STRING, &f->data, "source of the digits and the clutter: mnist or fashion-mnist", .metavar = "D", .given = &f->given.data},
        {"data-root", ARG_STRING, &f->root, "folder holding mnist/ and fashion-mnist/", .metavar = "DIR"},
        {"out", ARG_STRING, &f->cmd.out, "output folder (model.safetensors, log.csv, loss.png)", .metavar = "DIR", .required = true},
        {"T", ARG_INT, &f->T, "glimpses before the class is read out", .has_min = true, .min = 1, .has_max = true, .max = 1000, .given = &f->given.T},
        {"read", ARG_INT, &f->read_n, "glimpse grid N (N x N)", .has_min = true, .min = 1, .has_max = true, .max = 100, .given = &f->given.read},
        {"hidden", ARG_INT, &f->hidden, "LSTM units", .has_min = true, .min = 1, .has_max = true, .max = 8192, .given = &f->given.hidden},
        {"no-attention", ARG_FLAG, &f->no_attention, "read the whole image at every step", .given = &f->given.no_attention},
        {"hard", ARG_FLAG, &f->hard, "hard attention (the RAM baseline): a retina of fixed windows at a sampled centre, where to look trained by REINFORCE", .given = &f->given.hard},
        {"loc-std", ARG_FLOAT, &f->loc_std, "--hard: standard deviation of the centre policy (the image spans [-1, 1])", .has_min = true, .min = 0, .min_exclusive = true, .has_max = true, .max = 10, .given = &f->given.loc_std},
        {"scales", ARG_INT, &f->scales, "--hard: the retina's patches, N x N each, patch s with stride 2^s pixels (RAM's 4 scales: windows of 12, 24, 48, 96 pixels at N 12)", .has_min = true, .min = 1, .has_max = true, .max = GLIMPSE_MAX_SCALES, .given = &f->given.scales},
        {"glimpse-net", ARG_INT, &f->gnet, "--hard: 0 feeds the retina and its centre to the LSTM as they are; G > 0 puts RAM's glimpse network between them (what and where layers of G ReLU units, their combination of --hidden ReLU units; RAM: 128)", .metavar = "G", .has_min = true, .min = 0, .has_max = true, .max = 65536, .given = &f->given.gnet},
        {"size", ARG_INT, &f->size, "image side in pixels: 100 (the papers' cluttered set); 28 with --fragments 0 is plain 28 x 28 MNIST, each digit the whole image (the classifier of draw eval --sample-quality)", .has_min = true, .min = 28, .has_max = true, .max = 1000, .given = &f->given.size},
        {"fragments", ARG_INT, &f->fragments, "clutter fragments (8 x 8) per image", .has_min = true, .min = 0, .has_max = true, .max = CLUTTER_MAX_FRAGMENTS, .given = &f->given.fragments},
        {"batch", ARG_INT, &f->optim.batch, "images per step", .has_min = true, .min = 1, .has_max = true, .max = CLASSIFY_BATCH_MAX, .given = &f->optim.given.batch},
        {"lr", ARG_FLOAT, &f->optim.lr, "Adam learning rate", .has_min = true, .min = 0, .min_exclusive = true, .has_max = true, .max = 1, .given = &f->optim.given.lr},
        {"beta1", ARG_FLOAT, &f->optim.beta1, "Adam beta1", .has_min = true, .min = 0, .has_max = true, .max = 1, .max_exclusive = true, .given = &f->optim.given.beta1},
        {"clip", ARG_FLOAT, &f->optim.clip, "clip the global gradient norm at this (0: off)", .has_min = true, .min = 0, .given = &f->optim.given.clip},
        {"steps", ARG_LONG, &f->cmd.plan.steps, "train until this many steps in total (0: use --epochs/--minutes)", .has_min = true, .min = 0},
        {"epochs", ARG_INT, &f->cmd.plan.epochs, "train until this many epochs in total (1 when no budget is given)", .has_min = true, .min = 0},
        {"minutes", ARG_DOUBLE, &f->cmd.plan.minutes, "stop after this much wall time in this run", .has_min = true, .min = 0},
        {"seed", ARG_LONG, &f->optim.seed, "seed of initialisation, data order and training clutter", .has_min = true, .min = 0, .given = &f->optim.given.seed},
        {"resume", ARG_FLAG, &f->cmd.resume, "continue from OUT/model.safetensors; model flags given must match it, --batch/--lr/--beta1/--clip/--seed given replace its values", .given = NULL},
        {"force", ARG_FLAG, &f->cmd.force, "start a new run in an OUT that holds one, replacing it: its checkpoint, run.json, report and pictures go (not with --resume)", .given = NULL},
        {"threads", ARG_INT, &f->cmd.threads, "threads: data-parallel workers over the batch", .has_min = true, .min = 1, .has_max = true, .max = THREADS_MAX, .default_note = THREADS_DEFAULT_NOTE},
        {"valid-every", ARG_INT, &f->cmd.plan.valid_every, "steps between validation errors (and checkpoints)", .has_min = true, .min = 1},
        {"valid-images", ARG_INT, &f->valid_images, "validation images used (at most 5000)", .has_min = true, .min = 1, .has_max = true, .max = MNIST_VALID_COUNT},
        {"log-every", ARG_INT, &f->cmd.plan.log_every, "steps between rows of log.csv", .has_min = true, .min = 1},
        {"checkpoint-every", ARG_INT, &f->cmd.plan.ckpt_every, "steps between checkpoints (0: with validation)", .has_min = true, .min = 0},
        {"json", ARG_FLAG, &f->cmd.json, "print the final figures as one JSON object", .given = NULL},
    };
    if (args_parse_for_command(argc, argv, specs, ARGS_LEN(specs),
                               "draw classify train --out DIR [flags]", "draw classify", code))
        return 1;
    train_plan_default(&f->cmd.plan);
    return 0;
}

typedef struct {
    const ClassifyFlags *f;
    TrainCommandRun cmd;  // the folder, its lock, log.csv, the budget (cli/train_command.h)
    ClassifyState st;
    ImageSet train, valid;
    TrainWeights w;  // parameters (viewed by p), gradients, Adam's moments
    ClassifierParams p;
    AdamConfig adam;
    ClassifierWorker *workers;
    int n_workers;
    int steps_per_epoch;  // batches per epoch (the remainder is dropped each epoch)
    float *x, *eps;  // images (B, H W); hard attention's centre noise (T, B, 2)
    float *eps_share;  // under ranks: this rank's columns of eps (T, share, 2); NULL alone
    int *labels;
    long *idx;
    TrainOrder order;  // the current epoch's order of the training digits
    double loss_acc;
    long acc_n, acc_correct, acc_images;
    TrainNorms norms;  // the log window's gradient norms
    double last_loss, last_train_error, last_valid;
    int step_correct;  // the last step's correct predictions, for its log row
} ClassifyRun;

static int check_resume_flags(ClassifyRun *r, Error *err) {
    const ClassifyFlags *f = r->f;
    ClassifyState *st = &r->st;
    const GlimpseConfig *c = &st->cfg.glimpse;
    const bool glimpse = st->cfg.kind == CLASSIFIER_GLIMPSE;
    FlagDiffs model = {0};
    flag_diffs_text(&model, "model", f->given.model, f->model ? "cnn" : "glimpse",
                    classifier_kind_name(st->cfg.kind));
    flag_diffs_text(&model, "data", f->given.data, f->data, st->data);
    if (glimpse) {
        flag_diffs_int(&model, "T", f->given.T, f->T, c->T);
        flag_diffs_int(&model, "read", f->given.read, f->read_n, c->read_n);
        flag_diffs_int(&model, "hidden", f->given.hidden, f->hidden, c->hidden);
        flag_diffs_switch(&model, "no-attention", f->given.no_attention, f->no_attention, !c->attention);
        flag_diffs_switch(&model, "hard", f->given.hard, f->hard, c->hard);
        if (c->hard) flag_diffs_float(&model, "loc-std", f->given.loc_std, f->loc_std, c->loc_std);
        if (c->hard) flag_diffs_int(&model, "scales", f->given.scales, f->scales, c->scales);
        if (c->hard) flag_diffs_int(&model, "glimpse-net", f->given.gnet, f->gnet, c->gnet);
    }
    flag_diffs_int(&model, "fragments", f->given.fragments, f->fragments, st->clutter.fragments);
    flag_diffs_int(&model, "size", f->given.size, f->size, st->clutter.W);
    if (flag_diffs_refuse(&model, r->cmd.paths.model, err)) return -1;
    train_optim_resume(&st->optim, &f->optim, &r->cmd.resumed_with);  // said with the header
    return 0;
}

// --resume: the state from the checkpoint, the flags given checked against it.
static int resume_cb(void *p, const SafetensorsFile *file, Error *err) {
    ClassifyRun *r = p;
    if (classify_read_state(file, r->cmd.paths.model, &r->st, err)) return -1;
    return check_resume_flags(r, err);
}

static int load_data(void *p, Error *err) {
    ClassifyRun *r = p;
    const ClassifyFlags *f = r->f;
    ClassifyState *st = &r->st;
    if (!r->cmd.resumed) {
        if (f->model == 0 && f->hard && f->no_attention)
            return error_set(err, "--hard with --no-attention: hard attention needs attention (a retina "
                             "at a sampled centre); give one of them");
        st->clutter = clutter_config_default();
        st->clutter.fragments = f->fragments;
        st->clutter.W = st->clutter.H = f->size;
        if (f->model == 1) {
            st->cfg.kind = CLASSIFIER_CNN;
            st->cfg.cnn = convnet_config_default(st->clutter.W);
        } else {
            st->cfg.kind = CLASSIFIER_GLIMPSE;
            GlimpseConfig *g = &st->cfg.glimpse;
            *g = glimpse_config_default(st->clutter.W, st->clutter.H);
            g->T = f->T, g->read_n = f->read_n, g->hidden = f->hidden, g->attention = !f->no_attention;
            g->hard = f->hard, g->loc_std = f->hard ? f->loc_std : 0.0f;
            g->scales = f->hard ? f->scales : 0;
            g->gnet = f->hard ? f->gnet : 0;
        }
        st->optim = train_optim_new(&f->optim);
        snprintf(st->data, sizeof st->data, "%s", f->data);
        if (classifier_config_check(&st->cfg, err)) return -1;
    }
    // Products of the flags past what the kernels index are refused before anything is
    // allocated for them (models/classifier.h).
    if (classifier_check_sizes(&st->cfg, st->optim.batch, err)) return -1;
    if (classify_load_split(&r->train, st->data, f->root, SPLIT_TRAIN, &st->clutter, err) ||
        classify_load_split(&r->valid, st->data, f->root, SPLIT_VALID, &st->clutter, err))
        return r->cmd.resumed ? error_prefix(err, "%s: the run's data", r->cmd.paths.model) : -1;
    if (r->train.n < st->optim.batch)
        return error_set(err, "--batch: %d is more than the %d training digits of %s", st->optim.batch,
                         r->train.n, st->data);
    if (f->valid_images > r->valid.n)
        return error_set(err, "--valid-images: %d is more than the %d validation digits", f->valid_images, r->valid.n);
    return 0;
}

static int init_model(void *p, const SafetensorsFile *file, Error *err) {
    ClassifyRun *r = p;
    const ClassifierConfig *c = &r->st.cfg;
    classifier_layout(&r->w.params, &r->p, c);
    if (train_weights_open(&r->w, r->cmd.resumed ? file : NULL, r->cmd.paths.model, err)) return -1;
    if (!r->cmd.resumed) {
        Rng init = train_optim_init_rng(&r->st.optim);
        classifier_init(&r->p, c, &init);
    }
    r->adam = train_optim_adam(&r->st.optim);
    return 0;
}

// The workers and the step's buffers.
static long alloc_buffers(void *p) {
    ClassifyRun *r = p;
    const ClassifierConfig *c = &r->st.cfg;
    const int B = r->st.optim.batch, threads = r->f->cmd.threads;
    r->n_workers = classifier_worker_count(threads, B);
    r->workers = xcalloc((size_t)r->n_workers, sizeof *r->workers);
    classifier_workers_alloc(r->workers, r->n_workers, c, B);
    gemm_set_threads(threads / r->n_workers);
    r->x = xmalloc(sizeof(float) * (size_t)B * r->st.clutter.W * r->st.clutter.H);
    r->labels = xmalloc(sizeof(int) * (size_t)B);
    if (c->kind == CLASSIFIER_GLIMPSE && c->glimpse.hard)
        r->eps = xmalloc(sizeof(float) * (size_t)c->glimpse.T * B * 2);
    if (r->eps && r->cmd.dist.size > 1)
        r->eps_share = xmalloc(sizeof(float) * (size_t)c->glimpse.T * r->cmd.share_count * 2);
    r->idx = xmalloc(sizeof(long) * (size_t)B);
    r->steps_per_epoch = r->train.n / B;
    train_order_init(&r->order, r->train.n);
    return r->steps_per_epoch;
}

static void free_run(void *p) {
    ClassifyRun *r = p;
    if (r->workers) classifier_workers_free(r->workers, r->n_workers);
    train_weights_free(&r->w);
    free(r->workers), free(r->x), free(r->eps), free(r->eps_share), free(r->labels), free(r->idx);
    train_order_free(&r->order);
    imageset_free(&r->train), imageset_free(&r->valid);
}

// The flags given that this run does not use (cli/args.h ArgUse), from the model it trains:
// the flags' for a new run, the checkpoint's on --resume. Eval, show and export use every
// flag they take.
static void warn_unused_flags(const void *p) {
    const ClassifyRun *r = p;
    const ClassifyFlags *f = r->f;
    const GlimpseConfig *g = &r->st.cfg.glimpse;
    const bool glimpse = r->st.cfg.kind == CLASSIFIER_GLIMPSE;
    const bool attention = glimpse && g->attention, hard = glimpse && g->hard;
    static const char CNN[] = "a cnn model takes no glimpses";
    const ArgUse uses[] = {
        {"T", f->given.T, glimpse, CNN},
        {"read", f->given.read, attention, glimpse ? "a model without attention reads the whole image" : CNN},
        {"hidden", f->given.hidden, glimpse, CNN},
        {"no-attention", f->given.no_attention, glimpse, CNN},
        {"hard", f->given.hard, glimpse, CNN},
        {"loc-std", f->given.loc_std, hard, glimpse ? "only a --hard model samples where to look" : CNN},
        {"scales", f->given.scales, hard, glimpse ? "only a --hard model has a retina of scales" : CNN},
        {"glimpse-net", f->given.gnet, hard, glimpse ? "only a --hard model has a glimpse network" : CNN},
        {"epochs", f->cmd.plan.epochs > 0 && f->cmd.plan.steps > 0, false, "--steps sets the run's length"},
    };
    args_warn_unused(stderr, "draw classify train", uses, ARGS_LEN(uses));
}

static void header(const void *p, char *buf, size_t n) {
    const ClassifyRun *r = p;
    const GlimpseConfig *c = &r->st.cfg.glimpse;
    char read[160];
    if (r->st.cfg.kind == CLASSIFIER_CNN)
        snprintf(read, sizeof read, "convolutional baseline (%d layers, fc %d)", r->st.cfg.cnn.layers,
                 r->st.cfg.cnn.fc);
    else if (c->hard)
        snprintf(read, sizeof read, "%d hard (REINFORCE) glimpses, a retina of %d scales of %dx%d%s%.0d, LSTM %d",
                 c->T, c->scales, c->read_n, c->read_n, c->gnet ? ", glimpse network " : "", c->gnet,
                 c->hidden);
    else if (c->attention)
        snprintf(read, sizeof read, "%d glimpses of %dx%d, LSTM %d", c->T, c->read_n, c->read_n,
                 c->hidden);
    else
        snprintf(read, sizeof read, "%d steps on the whole image (no attention), LSTM %d", c->T, c->hidden);
    snprintf(buf, n, "cluttered %s %dx%d (%d fragments of %dx%d), %s, batch %d, lr %g; gemm %s, "
             "%d thread%s",
             r->st.data, r->st.clutter.W, r->st.clutter.H, r->st.clutter.fragments,
             r->st.clutter.fragment, r->st.clutter.fragment, read, r->st.optim.batch,
             r->st.optim.lr, gemm_backend(), r->f->cmd.threads, r->f->cmd.threads == 1 ? "" : "s");
}

// This rank's share of the batch of step st.step (positions [i B, i B + B) of its epoch's
// order; all of it in one process): each image a pure function of its index.
static void make_batch(ClassifyRun *r) {
    const ClassifyState *st = &r->st;
    const int B = st->optim.batch, begin = r->cmd.share_begin, count = r->cmd.share_count;
    const long e = st->step / r->steps_per_epoch;  // clutter index: epoch e's copy of each digit
    const int *batch =
        train_order_batch(&r->order, st->step, r->steps_per_epoch, B, st->optim.seed);
    for (int b = 0; b < count; b++) r->idx[b] = e * r->train.n + batch[begin + b];
    cluttered_batch_threads(r->x, r->labels, &r->train, &st->clutter,
                            classify_train_clutter_seed(st->optim.seed), r->idx, count, r->n_workers);
}

// Hard attention's centre noise of this step, from (seed, step), for the whole batch (T, B,
// 2); under ranks, this rank's columns of it (T, share, 2): the noise one process draws.
static const float *share_noise(ClassifyRun *r) {
    const ClassifyState *st = &r->st;
    const int T = st->cfg.glimpse.T, B = st->optim.batch;
    Rng sr;
    rng_seed(&sr, rng_mix(rng_mix(st->optim.seed, 0x5DE9), (uint64_t)st->step));
    rng_normal_fill(&sr, r->eps, (size_t)T * B * 2);
    if (!r->eps_share) return r->eps;
    const int begin = r->cmd.share_begin, count = r->cmd.share_count;
    for (int t = 0; t < T; t++)
        memcpy(r->eps_share + (size_t)t * count * 2, r->eps + ((size_t)t * B + begin) * 2,
               sizeof(float) * (size_t)count * 2);
    return r->eps_share;
}

static int train_step(ClassifyRun *r, double *loss, int *correct, Error *err) {
    ClassifyState *st = &r->st;
    make_batch(r);
    const float *eps = r->eps ? share_noise(r) : NULL;
    // The share's mean loss and gradient until train_command_reduce makes them the batch's.
    *loss = classifier_forward_parallel_hard(r->workers, r->n_workers, &r->p, &st->cfg, r->x,
                                             r->labels, r->cmd.share_count, eps,
                                             &r->w.grads, correct);
    double right = *correct;  // the batch's correct predictions, over the ranks
    if (train_command_reduce(&r->cmd, loss, &r->w.grads, err) ||
        train_command_sum(&r->cmd, &right, 1, err))
        return -1;
    *correct = (int)right;
    if (train_check_finite(st->step + 1, "loss", *loss, &r->w.grads, r->cmd.paths.model, err)) return -1;
    train_norms_add(&r->norms, clip_global_norm(r->w.grads.data, r->w.grads.numel, st->optim.clip));
    st->step++;
    adam_update_threads(r->w.params.data, r->w.grads.data, r->w.mom1.data, r->w.mom2.data,
                        r->w.params.numel, &r->adam, st->step, st->optim.lr, r->n_workers);
    return 0;
}

static int save(void *p, Error *err) {
    ClassifyRun *r = p;
    return classify_save(r->cmd.paths.model, &r->st, &r->w.params, &r->w.mom1, &r->w.mom2, err);
}

static int log_validate_save(ClassifyRun *r, double loss, int correct, bool last, Error *err) {
    const ClassifyState *st = &r->st;
    r->loss_acc += loss;
    r->acc_n++;
    r->acc_correct += correct;
    r->acc_images += st->optim.batch;
    TrainDue due = train_due(&r->cmd.cadence, st->step, last);
    if (due.log) {
        r->last_loss = r->loss_acc / r->acc_n;
        r->last_train_error = 1.0 - (double)r->acc_correct / r->acc_images;
        if (due.validate) {
            ClassifyEval v = classify_evaluate(r->workers, r->n_workers, st->optim.batch, &r->p, &st->cfg,
                                               &r->valid, &st->clutter, CLUTTER_TEST_SEED,
                                               r->f->valid_images, r->x, r->labels);
            r->last_valid = v.error;
        }
        double row[7] = {(double)st->step, r->last_loss, r->last_train_error,
                         due.validate ? r->last_valid : NAN, 0, 0, timer_now() - r->cmd.budget.t0};
        train_norms_take(&r->norms, &row[4], &row[5]);
        train_command_log_row(&r->cmd, row, 7);
        r->loss_acc = 0.0, r->acc_n = 0, r->acc_correct = 0, r->acc_images = 0;
    }
    return due.save ? train_command_save(&r->cmd, r, err) : 0;
}

// The step loop's side of this trainer (cli/train_run.h TrainSteps).
static int step_cb(void *p, double *loss, Error *err) {
    ClassifyRun *r = p;
    return train_step(r, loss, &r->step_correct, err);
}

static int after_cb(void *p, double loss, bool last, Error *err) {
    ClassifyRun *r = p;
    return log_validate_save(r, loss, r->step_correct, last, err);
}

static void status_cb(const void *p, double loss, char *buf, size_t cap) {
    const ClassifyRun *r = p;
    int n = snprintf(buf, cap, "loss %.3f", loss);
    if (isfinite(r->last_valid)) snprintf(buf + n, cap - n, ", valid error %.2f%%", 100.0 * r->last_valid);
}

static void valid_summary(const void *p, char *buf, size_t n) {
    const ClassifyRun *r = p;
    if (isfinite(r->last_valid))
        snprintf(buf, n, "valid error %.2f%% (%d images)", 100.0 * r->last_valid,
                 r->f->valid_images);
}

static void json_fields(const void *p, FILE *out) {
    const ClassifyRun *r = p;
    char a[32], b[32], c[32];
    fprintf(out, "\"final_loss\": %s, \"train_error\": %s, \"valid_error\": %s, ",
            json_number(a, r->last_loss), json_number(b, r->last_train_error),
            json_number(c, r->last_valid));
}

static const TrainCommand TRAIN = {
    .command = "draw classify train", .ranks = true, .program = "draw classify", .found_as = "draw classify",
    .log_columns = "step,train_loss,train_error,valid_error,grad_norm,grad_norm_max,seconds",
    .curves = {{"train_error", "valid_error"}, {"train error", "valid error"}, 100.0f,
               "cluttered MNIST classification", "error (%)"},
    .resume = resume_cb, .load_data = load_data, .init_model = init_model,
    .alloc = alloc_buffers, .warn_unused = warn_unused_flags, .header = header,
    .steps = {step_cb, after_cb, status_cb, "images"}, .save = save,
    .valid_summary = valid_summary, .json_fields = json_fields, .free = free_run};

static int cmd_train(int argc, char **argv) {
    ClassifyFlags f;
    int code;
    if (parse_flags(&f, argc, argv, &code)) return code;
    ClassifyRun r = {.f = &f, .last_loss = NAN, .last_train_error = NAN, .last_valid = NAN};
    r.cmd = (TrainCommandRun){.flags = &f.cmd, .step = &r.st.step, .batch = &r.st.optim.batch};
    return train_command_main(&TRAIN, &r.cmd, &r, argc, argv);
}

static void overview(FILE *f) {
    fprintf(f,
            "usage: draw classify COMMAND [flags]   (draw classify COMMAND --help for its flags)\n"
            "  train   train the glimpse classifier on cluttered MNIST; writes OUT/model.safetensors,\n"
            "          log.csv, loss.png\n"
            "  eval    test (or validation) error of a model\n"
            "  show    glimpses.png: the read windows on test images, step by step\n"
            "  export  write cluttered images as PNGs with labels.txt\n");
}

int classify_main(int argc, char **argv) {
    // train runs over mpirun's ranks; the others refuse them in one line
    static const TrainCommandEntry cmds[] = {
        {"train", cmd_train, true},
        {"eval", classify_eval_main, false},
        {"show", classify_show_main, false},
        {"export", classify_export_main, false},
    };
    return train_command_dispatch("draw classify", cmds, ARGS_LEN(cmds), overview, argc, argv);
}
