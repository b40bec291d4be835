// caption_train.c: `caption train` (cli/caption_train.h): the vocabulary and the captions
// drawn for each step, the run's set-up from its flags (cli/caption_train_flags.h), the
// step loop with its log, validation and checkpoints, and the summary. No math here:
// models/sat does it.
#include "cli/caption_train.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/caption_data.h"
#include "cli/caption_evaluate.h"
#include "cli/caption_features.h"
#include "cli/caption_finetune.h"
#include "cli/caption_model.h"
#include "cli/caption_train_flags.h"
#include "cli/report_common.h"
#include "cli/run_info.h"
#include "cli/train_dist.h"
#include "cli/train_run.h"
#include "core/adam.h"
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
#include "datasets/scenes.h"
#include "datasets/split.h"
#include "models/sat.h"
#include "models/sat_decode.h"
#include "models/sat_parallel.h"
#include "seq/metrics.h"
#include "seq/tokenizer.h"
#include "seq/vocab.h"
#include "vision/image.h"
#include "vision/overlay.h"
#include "vision/plot.h"
#include "vision/png.h"

// Counts the words of every caption of the split into counter (for the vocabulary),
// keeping no tokens: the training split of a large data set held as tokens took more
// memory than the model, so training encodes each caption when it is drawn instead.
static int count_split_words(VocabCounter *counter, const CaptionData *d, Split s, Error *err) {
    SceneInfo info;
    const char *texts[CAPTION_DATA_MAX_REFS];
    for (int i = 0; i < caption_data_count(d, s); i++) {
        int k = caption_data_captions(d, s, i, texts, CAPTION_DATA_MAX_REFS, &info);
        for (int j = 0; j < k; j++) {
            Tokens t;
            if (tokenize(&t, texts[j], TOKENIZE_MAX_TOKENS, err))
                return error_prefix(err, "%s image %d caption %d", split_name(s), i, j);
            vocab_counter_add(counter, &t);
            tokens_free(&t);
        }
    }
    return 0;
}

// One of image i's captions (of split s), drawn with rng, as word ids: ids (max_len)
// gets the ids of its first max_len tokens, then VOCAB_PAD. Returns how many ids, or -1
// with err set.
static int draw_caption_ids(int *ids, const CaptionData *d, Split s, int i, const Vocab *vocab,
                            int max_len, Rng *rng, Error *err) {
    SceneInfo info;
    const char *texts[CAPTION_DATA_MAX_REFS];
    int k = caption_data_captions(d, s, i, texts, CAPTION_DATA_MAX_REFS, &info);
    if (k < 1) return error_set(err, "%s image %d has no caption", split_name(s), i);
    int j = (int)rng_below(rng, (uint32_t)k);
    Tokens t;
    if (tokenize(&t, texts[j], TOKENIZE_MAX_TOKENS, err))
        return error_prefix(err, "%s image %d caption %d", split_name(s), i, j);
    int n = vocab_encode(ids, vocab, &t, max_len);
    for (int w = n; w < max_len; w++) ids[w] = VOCAB_PAD;
    tokens_free(&t);
    return n;
}

// Curves: loss, validation BLEU-4 and grounding (scenes) against the step, from log.csv.
static int write_curves(const char *csv_path, const char *png_path, Error *err) {
    static const char *const cols[3] = {"loss", "val_bleu4", "val_grounding"};
    ReportColumns c;
    if (report_read_columns(&c, csv_path, "step", cols, 3, err)) return -1;
    PlotSeries s1 = {"training loss (per image)", c.x[0], c.y[0], c.n[0]};
    PlotSeries s2[2] = {{"validation BLEU-4", c.x[1], c.y[1], c.n[1]},
                        {"validation grounding", c.x[2], c.y[2], c.n[2]}};
    PlotOptions o1 = {.title = "loss", .xlabel = "step", .width = 640, .height = 320};
    PlotOptions o2 = {.title = "validation", .xlabel = "step", .width = 640, .height = 320};
    Image imgs[2] = {plot_render(&s1, 1, &o1), plot_render(s2, c.n[2] > 0 ? 2 : 1, &o2)};
    Image both = stack_vertical(imgs, 2, 8);
    int r = write_png_image(png_path, &both, err);
    image_free(&imgs[0]);
    image_free(&imgs[1]);
    image_free(&both);
    report_columns_free(&c);
    return r;
}

// One training run: data, vocabulary, model, workers, buffers and counters. Zeroed, it is
// safe to close at any stage of opening.
typedef struct {
    const CaptionTrainFlags *f;
    Dist *dist;         // the ranks (cli/train_dist.h): rank 0 alone writes
    bool reported;      // the failure was printed already, by the ranks that failed
    bool failed_everywhere;  // every rank stopped on the same failure (after a reduction)
    bool interrupted;   // SIGINT or SIGTERM stopped the run (rank 0's, for every rank)
    TrainLock lock;     // rank 0: OUT/.lock, held for the run's life
    char path_state[1200], path_model[1200], path_log[1200], path_curves[1200];
    CaptionData *data;
    Vocab vocab;
    SatModel model;     // with several workers, its activations serve validation only
    SatModel *workers;  // (n_workers) replicas sharing the parameters; NULL with one
    int n_workers;      // per rank (over ranks, the same on every rank)
    TrainEma ema;       // with --ema: the weight average, validated and saved as the model
    CaptionRefs val;        // the validation split's tokenised references
    EncoderRecord enc;  // with --features: the encoder of the annotations (checkpointed)
    CaptionFineTune ft; // with --fine-tune: the encoder and its trained stage
    CaptionCounters tc;   // step; best validation BLEU-4 (< 0 before any) and its step
    TrainOptim optim;   // batch, lr, lr decay, clip, seed: the flags', or on --resume the state's
    const char *data_spec;  // --data, or on --resume without it the state's (resumed_data)
    char resumed_data[2048];
    int n_train, n_val;
    long steps_per_epoch;  // batches per epoch (the last one may be short)
    float *images;      // (B, 3, S, S)
    int *words, *lens;  // (B, max_len), (B)
    TrainOrder order;   // the current epoch's order of the training images
    AdamConfig adam;
    CsvLog log;
    TrainBudget budget;
    TrainCadence cadence;
    TrainMeter meter;
    // The log window: sums since the last training row.
    double t_log, loss_acc, ce_acc, tok_acc;
    TrainNorms norms;
    long imgs_since;
    int n_acc;
    double last_window_loss;  // the last row's mean loss per image; NAN before one
    double last_val;          // the last validation BLEU-4 of this run; NAN before one
} CaptionRun;

static const char *const CAPTION_RUN_FILES[] = {"state.safetensors", "model.safetensors"};

// --resume's weight average: the state's decay unless --ema is given (a change said on
// one line), its average where the state holds one (else the weights: a run that turns it
// on), none when the decay is 0.
static void resume_ema(CaptionRun *r, const StoredOptim *saved, FILE *note) {
    float decay = r->f->ema;
    if (saved->ema_stored) {
        FlagDiffs changed = {0};
        flag_diffs_float(&changed, "ema", r->f->given.ema, r->f->ema, saved->ema);
        if (changed.n && note) text_write_linef(note, "caption train: resuming with %s", changed.text);
        if (!r->f->given.ema) decay = saved->ema;
    }
    if (decay == 0) block_free(&r->ema.avg);
    train_ema_start(&r->ema, &r->model.params, decay);
}

// --resume: the best model against the state. A validation writes the best model first,
// then the state (validate_and_save); a run killed between the two leaves a model newer
// than the state (its step past the state's). That model is the run's best, and the
// resumed run replays the steps to it: the state takes its step and score as the best, so
// that it is kept (not replaced by a validation that does not beat it), and says so on
// one line (note: rank 0's stderr, else NULL).
static int pair_best_model(CaptionRun *r, FILE *note, Error *err) {
    if (!file_exists(r->path_model)) return 0;
    SafetensorsFile f;
    long step;
    double bleu;
    if (safetensors_open(&f, r->path_model, err)) return -1;
    int rc = safetensors_meta_long(&f, r->path_model, "step", NULL, 0, LONG_MAX, &step, err) ||
             safetensors_meta_double(&f, r->path_model, "best_val_bleu4", &bleu, err);
    safetensors_free(&f);
    if (rc) return -1;
    if (step <= r->tc.step) return 0;
    if (note)
        text_write_linef(note, "caption train: %s (the best model, of step %ld) is newer than %s "
                         "(step %ld): a run stopped between writing the two; it stays the best "
                         "model (BLEU-4 %.4f)", r->path_model, step, r->path_state, r->tc.step,
                         bleu);
    r->tc.best_step = step;
    r->tc.best_bleu = bleu;
    return 0;
}

// --resume: the state (model, vocabulary, counters, optimiser settings, weight average),
// its configuration checked against the model flags given. The optimiser settings given
// replace the state's, named on one line (rank 0's); those left out keep the state's. Every
// rank reads the same state with the same flags, so every rank ends with the same settings.
static int resume_state(CaptionRun *r, const SatConfig *want, Error *err) {
    if (!file_exists(r->path_state))
        return error_set(err, "--resume: %s does not exist", r->path_state);
    StoredOptim saved = {.optim = r->optim};
    if (caption_model_load(r->path_state, &r->model, &r->vocab, 1, &r->ema.avg, &r->tc, &saved, err))
        return -1;
    if (caption_train_flags_check_resume(r->f, want, &r->model.cfg, saved.data_stored ? saved.data : NULL,
                                         r->path_state, err))
        return -1;
    if (saved.data_stored && !r->f->given.data) {  // --data left out: the run's
        snprintf(r->resumed_data, sizeof r->resumed_data, "%s", saved.data);
        r->data_spec = r->resumed_data;
    }
    // A state written before the settings were stored holds none: the run goes on with the
    // flags' values, given or default, as it did then (r->optim is already those).
    FILE *note = dist_is_root(r->dist) ? stderr : NULL;
    if (saved.stored) {
        r->optim = saved.optim;
        FlagDiffs changed = {0};
        train_optim_resume(&r->optim, &r->f->optim, &changed);
        if (changed.n && note) text_write_linef(note, "caption train: resuming with %s", changed.text);
    }
    resume_ema(r, &saved, note);
    return pair_best_model(r, note, err);
}

// The model's tensors at --batch, and its validation decoding's at --val-beam (chunks of at
// most --batch images): 0, or -1 with one line naming the flags whose product passes what
// the kernels index.
static int check_sizes(const SatConfig *cfg, const CaptionTrainFlags *f, int batch, Error *err) {
    return sat_check_sizes(cfg, batch, err) ||
                   sat_check_decode_sizes(cfg, batch, f->val_beam, "--val-beam", err)
               ? -1
               : 0;
}

// A new model: the vocabulary of the training split, the configuration finished with its
// size and its tensors' sizes checked at --batch (sat_check_sizes), parameters initialised
// from the seed. Returns 0, or the exit status (2: the flags describe no model the kernels
// hold; 1: anything else) with err set.
static int new_model(CaptionRun *r, SatConfig *cfg, Error *err) {
    VocabCounter counter = {0};
    int bad = count_split_words(&counter, r->data, SPLIT_TRAIN, err);
    if (!bad) vocab_from_counter(&r->vocab, &counter, r->f->min_count);
    vocab_counter_free(&counter);
    if (bad) return 1;
    cfg->V = r->vocab.size;
    if (sat_config_finish(cfg, err) || check_sizes(cfg, r->f, r->optim.batch, err)) return 2;
    Rng init;
    rng_seed(&init, r->optim.seed);
    sat_init(&r->model, cfg, &init);
    train_ema_start(&r->ema, &r->model.params, r->f->ema);
    return 0;
}

// The data, at the model's image size; it needs a training and a validation image.
static int open_data(CaptionRun *r, int image_size, Error *err) {
    CaptionDataFlags spec = r->f->data;
    spec.data = r->data_spec;
    const CaptionDataFlags *df = &spec;
    if (caption_data_open(&r->data, df, image_size, r->f->quiet, err)) return -1;
    r->n_train = caption_data_count(r->data, SPLIT_TRAIN);
    int n_valid = caption_data_count(r->data, SPLIT_VALID);
    if (r->n_train < 1 || n_valid < 1)
        return error_set(err, "%s: needs at least one training and one validation image (has %d, "
                              "%d)%s", df->data, r->n_train, n_valid,
                         caption_data_hint(r->data));
    r->n_val = r->f->val_count > 0 && r->f->val_count < n_valid ? r->f->val_count : n_valid;
    return 0;
}

// Data parallelism: with several threads, each worker (a replica sharing the parameters)
// takes a contiguous share of the batch with single-threaded BLAS. The model's own
// activations then serve only validation decoding, in chunks of a share. And the step's
// buffers.
// Over ranks, each rank's workers split its share of the batch, always through the workers
// (each image's randomness is its own, wherever it runs: train_step).
static void alloc_workers(CaptionRun *r) {
    const int B = r->optim.batch, ML = r->model.cfg.max_len;
    int begin, most;
    dist_share_of(0, r->dist->size, B, &begin, &most);  // rank 0's share is the largest
    r->n_workers = r->f->threads < most ? r->f->threads : most;
    if (r->ft.on) r->n_workers = 1;  // --fine-tune: one worker (cli/caption_finetune.h)
    const int share = (most + r->n_workers - 1) / r->n_workers;
    const bool replicas = r->n_workers > 1 || r->dist->size > 1;
    sat_alloc_acts(&r->model, replicas ? share : B);
    if (replicas) {
        gemm_set_threads(1);
        r->workers = xcalloc((size_t)r->n_workers, sizeof(SatModel));
        for (int w = 0; w < r->n_workers; w++) {
            sat_replica_init(&r->workers[w], &r->model);
            sat_alloc_acts(&r->workers[w], share);
        }
    }
    r->images = xmalloc((size_t)B * sat_input_floats(&r->model.cfg) * sizeof(float));
    r->words = xmalloc((size_t)B * ML * sizeof(int));
    r->lens = xmalloc((size_t)B * sizeof(int));
    train_order_init(&r->order, r->n_train);
}

static void close_run(CaptionRun *r) {
    free(r->images), free(r->words), free(r->lens);
    train_order_free(&r->order);
    if (r->workers)
        for (int w = 0; w < r->n_workers; w++) sat_free(&r->workers[w]);
    free(r->workers);
    csvlog_close(&r->log);
    caption_refs_free(&r->val);
    if (r->model.params.data) sat_free(&r->model);
    train_ema_free(&r->ema);
    vocab_free(&r->vocab);
    caption_data_close(r->data);
    caption_finetune_close(&r->ft);
    train_lock_release(&r->lock);
}

// Each rank's data, vocabulary, model and buffers; rank 0's folder, log and stale files.
// Every rank reads a --resume state itself (OUT on a file system they share), and then
// takes rank 0's weights, moments and counters (open_run). Returns 0, or the exit status
// (2: the flags describe no valid model; 1: anything else) with err set.
static int open_parts(CaptionRun *r, Error *err) {
    const CaptionTrainFlags *f = r->f;
    const char *out = f->out;
    const bool root = dist_is_root(r->dist);
    SatConfig cfg;
    if (caption_train_flags_config(&cfg, f, err) || (!f->resume && sat_config_finish(&cfg, err)))
        return 2;
    // Sizes past what the kernels index are refused before the folder or the data is touched
    // (again with the vocabulary's size in new_model; a feature cache's annotations are
    // known once it is open).
    if (!f->resume && !f->data.features && check_sizes(&cfg, f, f->optim.batch, err)) return 2;
    if (root && train_out_open(&r->lock, out, CAPTION_RUN_FILES, 2, f->resume, f->force, err))
        return 1;
    if (root) atomic_remove_stale(out);
    r->optim = train_optim_new(&f->optim);
    r->data_spec = f->data.data;
    if (f->resume && resume_state(r, &cfg, err)) return 1;
    if (caption_finetune_setup_train(&r->ft, &cfg, &r->enc, &f->finetune, f->data.features,
                                     r->dist->size, r->optim.batch, f->resume ? &r->model.cfg : NULL,
                                     r->path_state, f->quiet || !root, err))
        return 1;
    if (open_data(r, f->resume ? r->model.cfg.image_size : cfg.image_size, err)) return 1;
    if (!r->ft.on && caption_features_setup_train(&cfg, &r->enc, r->data, f->data.features,
                                                  f->resume ? &r->model.cfg : NULL,
                                                  r->path_state, err))
        return 1;
    if (f->resume && check_sizes(&r->model.cfg, f, r->optim.batch, err)) return 2;
    if (!f->resume) {
        int status = new_model(r, &cfg, err);
        if (status) return status;
    }
    if (caption_refs_encode(&r->val, r->data, SPLIT_VALID, err)) return 1;
    if (r->optim.batch < r->dist->size)
        return error_set(err, "--batch %d is less than the %d ranks: each rank needs an image",
                         r->optim.batch, r->dist->size), 1;
    alloc_workers(r);
    if (gemm_check_address_space(f->threads, err)) return 1;  // not a hang in OpenBLAS
    static const char columns[] = "step,epoch,loss,ce_per_token,grad_norm,grad_norm_max,lr,"
                                  "images_per_s,val_bleu4,val_grounding";
    if (root && (train_out_make(&r->lock, out, CAPTION_RUN_FILES, 2, f->resume, f->force, err) ||
                 train_out_clear(out, CAPTION_RUN_FILES, 2, f->resume, f->force, err) ||
                 (f->resume ? csvlog_open_resume(&r->log, r->path_log, columns, r->tc.step, err)
                            : csvlog_open(&r->log, r->path_log, columns, 0, err))))
        return 1;
    return 0;
}

// Rank 0's parameters, Adam moments, weight average, counters and hard-attention baseline
// to every rank.
static int share_start(CaptionRun *r, Error *err) {
    SatModel *m = &r->model;
    if (r->dist->size == 1) return 0;
    if (train_dist_broadcast_block(r->dist, &m->params, err) ||
        train_dist_broadcast_block(r->dist, &m->adam_m, err) ||
        train_dist_broadcast_block(r->dist, &m->adam_v, err) ||
        (train_ema_on(&r->ema) && train_dist_broadcast_block(r->dist, &r->ema.avg, err)) ||
        dist_broadcast(r->dist, &r->tc, sizeof r->tc, err) ||
        dist_broadcast(r->dist, &m->baseline, sizeof m->baseline, err) ||
        dist_broadcast(r->dist, &m->baseline_set, sizeof m->baseline_set, err))
        return -1;
    return 0;
}

// Everything a run needs before its first step. Returns 0, or the exit status (2: the
// flags describe no valid model; 1: anything else) with err set; r->reported when the
// ranks that failed printed it.
static int open_run(CaptionRun *r, const CaptionTrainFlags *f, Dist *dist, Error *err) {
    memset(r, 0, sizeof *r);
    r->f = f;
    r->dist = dist;
    r->tc.best_bleu = -1.0;
    r->last_window_loss = r->last_val = NAN;
    const char *out = f->out;
    snprintf(r->path_state, sizeof r->path_state, "%s/state.safetensors", out);
    snprintf(r->path_model, sizeof r->path_model, "%s/model.safetensors", out);
    snprintf(r->path_log, sizeof r->path_log, "%s/log.csv", out);
    snprintf(r->path_curves, sizeof r->path_curves, "%s/curves.png", out);
    int code = open_parts(r, err);
    if (dist->size > 1) {  // several ranks: each failed rank prints its line
        if (train_dist_agree(dist, code, "caption train", err)) {
            r->reported = true;
            return code ? code : 1;
        }
    }
    if (code) return code;
    if (share_start(r, err)) return 1;
    const int B = r->optim.batch;
    r->steps_per_epoch = (r->n_train + B - 1) / B;
    long end_step = f->given.steps                            ? f->steps
                    : f->given.minutes || f->given.cpu_budget ? 0
                                                              : (long)f->epochs * r->steps_per_epoch;
    r->budget = (TrainBudget){.end_step = end_step, .seconds = f->given.minutes ? f->minutes * 60.0 : 0,
                              .cpu_seconds = f->given.cpu_budget ? f->cpu_budget : 0,
                              .cpu_before = r->tc.cpu_seconds};
    r->cadence = (TrainCadence){.steps_per_epoch = r->steps_per_epoch, .log_every = f->log_every,
                                .save_every = f->checkpoint_every, .log_at_epoch_end = true,
                                .save_at_validation = true};
    r->adam = adam_defaults(r->optim.lr);
    return 0;
}

static void print_header(const CaptionRun *r) {
    const CaptionTrainFlags *f = r->f;
    char cs[2048], budget[64];
    sat_config_format(&r->model.cfg, cs, sizeof cs);
    if (r->budget.end_step)
        snprintf(budget, sizeof budget, "of %ld", r->budget.end_step);
    else if (r->budget.cpu_seconds > 0)
        snprintf(budget, sizeof budget, "for %g CPU seconds (%.1f spent)", r->budget.cpu_seconds,
                 r->budget.cpu_before);
    else
        snprintf(budget, sizeof budget, "for %g minutes", f->minutes);
    char ranks[48] = "";
    if (r->dist->size > 1)
        snprintf(ranks, sizeof ranks, " per rank, %d ranks", r->dist->size);
    text_write_linef(stderr, "caption train: %d training images, %d words, %ld steps per epoch, batch %d, "
                     "lr %g, %d thread%s%s; step %ld %s; %s; gemm %s",
                     r->n_train, r->vocab.size, r->steps_per_epoch, r->optim.batch, r->optim.lr, f->threads,
                     f->threads == 1 ? "" : "s", ranks, r->tc.step, budget, cs, gemm_backend());
}

// Step step's batch (position (step - 1) % steps_per_epoch of its epoch's order): images, and one
// caption per image drawn with sr. Returns the batch size, or -1 when a caption fails.
// Over ranks, every rank draws every image's caption (the stream stays one process's) but
// reads only the images of its share.
static int fill_batch(CaptionRun *r, long step, Rng *sr, Error *err) {
    const int B = r->optim.batch, ML = r->model.cfg.max_len;
    const size_t per = sat_input_floats(&r->model.cfg);  // an image, or its annotations
    long epoch = (step - 1) / r->steps_per_epoch, pos = (step - 1) % r->steps_per_epoch;
    const int *perm = train_order_of(&r->order, epoch, r->optim.seed * 0x9E3779B97F4A7C15ULL +
                                                           0x632BE59BD9B4E019ULL * (uint64_t)(epoch + 1));
    int nb = 0, begin, count;
    const long first = pos * B, end = first + B < r->n_train ? first + B : r->n_train;
    dist_share(r->dist, (int)(end - first), &begin, &count);
    for (long j = first; j < end; j++, nb++) {
        int img = perm[j];
        if (nb >= begin && nb < begin + count)
            caption_data_image(r->data, SPLIT_TRAIN, img,
                               r->ft.on ? caption_finetune_pixels(&r->ft, nb)
                                        : r->images + (size_t)nb * per,
                               NULL);
        r->lens[nb] = draw_caption_ids(r->words + (size_t)nb * ML, r->data, SPLIT_TRAIN, img,
                                       &r->vocab, ML, sr, err);
        if (r->lens[nb] < 0) return -1;
    }
    return nb;
}

typedef struct {
    SatLoss loss;
    float norm, lr;  // gradient norm before clipping; the step's learning rate
    int images;
} StepResult;

// A rank's sums inside its step: the first hard-attention step's mean reward, weighted as
// one process's workers weight theirs (a float share of the batch); and, with a CNN
// encoder, the decoder's part of the gradient, summed while the CNN's backward runs.
typedef struct {
    Dist *dist;
    int count, batch;  // this rank's images, the global batch's
    Error *err;
    bool overlap;      // --overlap-sums: the gradient in two parts, the decoder's first
    DistSumInFlight decoder;
    bool decoder_started;
} RankSums;

static int rank_reward_sum(void *ctx, double *v) {
    RankSums *c = ctx;
    *v *= (double)((float)c->count / (float)c->batch);
    return dist_allreduce_sum_f64(c->dist, v, 1, c->err);
}

static int rank_decoder_done(void *ctx, float *grads, size_t begin, size_t end) {
    RankSums *c = ctx;
    c->decoder_started = true;
    return train_dist_start_floats(c->dist, &c->decoder, grads + begin, end - begin, c->count,
                                   c->batch, c->err);
}

// The gradient summed over the ranks, weighted by this rank's share: at once, or with
// --overlap-sums and a CNN encoder in two parts, the decoder's (started during the CNN's
// backward, or here on a rank without images) and then the CNN's; every rank sums the same
// parts in the same order.
static int reduce_step_grads(RankSums *sums, SatModel *m, Error *err) {
    const size_t enc = sat_encoder_grad_floats(m), all = m->grads.numel;
    float *g = m->grads.data;
    if (enc == 0 || !sums->overlap)
        return train_dist_reduce_floats(sums->dist, g, all, sums->count, sums->batch, err);
    if (!sums->decoder_started &&
        train_dist_start_floats(sums->dist, &sums->decoder, g + enc, all - enc, sums->count,
                                sums->batch, err))
        return -1;
    if (dist_allreduce_sum_finish(&sums->decoder, err)) return -1;
    return train_dist_reduce_floats(sums->dist, g, enc, sums->count, sums->batch, err);
}

// Over ranks: this rank's share of the batch of s->images on its workers, each image with
// the noise of its place in the whole batch (models/sat.h), then the gradient, the loss
// parts and the hard-attention baseline summed over the ranks as one process's workers sum
// them (float shares; cli/train_dist.h). The first hard-attention step's baseline is the
// whole batch's mean reward, summed over the ranks between the forwards and the backwards;
// with --overlap-sums the decoder's gradient is summed while the CNN's backward runs
// (models/sat_parallel.h), with the same bits.
static int train_share_step(CaptionRun *r, StepResult *s, uint64_t seed, Error *err) {
    SatModel *m = &r->model;
    const int nb = s->images, ML = m->cfg.max_len;
    const size_t per = sat_input_floats(&m->cfg);  // an image, or its annotations
    int begin, count;
    dist_share(r->dist, nb, &begin, &count);
    memset(&s->loss, 0, sizeof s->loss);
    block_zero(&m->grads);
    const float base0 = m->baseline;
    RankSums sums = {.dist = r->dist, .count = count, .batch = nb, .err = err,
                     .overlap = r->f->overlap_sums};
    const SatBatchSum across = {.sum = rank_reward_sum,
                                .decoder_done = sums.overlap ? rank_decoder_done : NULL,
                                .ctx = &sums};
    int status = 0;
    if (count > 0) {
        status = sat_forward_backward_parallel_from(&s->loss, m, r->workers, r->n_workers,
                                                    begin, r->images + (size_t)begin * per,
                                                    r->words + (size_t)begin * ML,
                                                    r->lens + begin, count, seed, &across);
    } else if (sat_first_hard_step(m)) {  // no images here: a part of 0 in the ranks' sum
        double none = 0.0;
        status = rank_reward_sum(&sums, &none);
    }
    if (status) {  // a sum in flight is waited for (its own result aside), no other starts
        Error ignored;
        if (sums.decoder_started) dist_allreduce_sum_finish(&sums.decoder, &ignored);
        return -1;
    }
    if (reduce_step_grads(&sums, m, err)) return -1;
    const float share = (float)count / (float)nb;
    double v[7] = {share * s->loss.loss, share * s->loss.ce, share * s->loss.ds,
                   share * s->loss.reward, s->loss.tokens,
                   count > 0 ? (double)(share * m->baseline) : 0.0,
                   count > 0 ? (double)m->baseline_set : 0.0};
    if (count == 0) m->baseline = base0;
    if (dist_allreduce_sum_f64(r->dist, v, 7, err)) return -1;
    s->loss = (SatLoss){.loss = v[0], .ce = v[1], .ds = v[2], .reward = v[3], .tokens = v[4]};
    m->baseline = (float)v[5];
    m->baseline_set = v[6] > 0;
    return 0;
}

// One step (the count reaching tc.step + 1): the batch, forward and backward, the checks,
// the update of the parameters and of their average.
static int train_step(CaptionRun *r, StepResult *s, Error *err) {
    SatModel *m = &r->model;
    const long step = r->tc.step + 1;
    // This step's randomness: the captions chosen from sr (every rank draws them all); each
    // image's dropout masks and hard-attention samples from a stream of its own, seeded with
    // (seed, its place in the batch) by sat_forward, whichever worker or rank runs it.
    const uint64_t seed = r->optim.seed * 0xD1B54A32D192ED03ULL + (uint64_t)step;
    Rng sr;
    rng_seed(&sr, seed);
    s->images = fill_batch(r, step, &sr, err);
    if (s->images < 0) return -1;
    if (r->ft.on) {  // --fine-tune: one worker, through the encoder's stage
        caption_finetune_forward_backward(&r->ft, m, &s->loss, r->words, r->lens, s->images, seed);
    } else if (r->dist->size > 1) {
        if (train_share_step(r, s, seed, err)) return -1;
    } else if (r->n_workers == 1) {
        sat_forward_backward(&s->loss, m, r->images, r->words, r->lens, s->images, seed, 0);
    } else {
        sat_forward_backward_parallel(&s->loss, m, r->workers, r->n_workers, r->images, r->words,
                                      r->lens, s->images, seed);
    }
    if (train_check_finite(step, "loss", s->loss.loss, &m->grads, r->path_model, err)) {
        r->failed_everywhere = r->dist->size > 1;  // the sums are every rank's
        return -1;
    }
    if (r->ft.on && caption_finetune_check_finite(&r->ft, step, r->path_model, err)) return -1;
    const TrainOptim *o = &r->optim;
    const int warmup = sat_lr_warmup(&m->cfg);
    s->lr = warmup > 0 ? lr_noam(o->lr, warmup, step)
                       : lr_exponential(o->lr, o->lr_decay, r->steps_per_epoch, step);
    // Clipping folded into the update: m->grads is left unclipped.
    s->norm = adam_clip_update_threads(m->params.data, m->grads.data, m->adam_m.data,
                                       m->adam_v.data, m->params.numel, &r->adam, step, s->lr,
                                       o->clip, r->n_workers);
    if (r->ft.on) caption_finetune_step(&r->ft, &r->adam, step, s->lr / o->lr, o->clip);
    train_ema_update(&r->ema, &m->params, step);
    r->tc.step = step;
    return 0;
}

// Adds a step to the log window; with a row due, writes the window's means and starts anew.
static void log_step(CaptionRun *r, const StepResult *s, bool row_due) {
    r->imgs_since += s->images;
    r->loss_acc += s->loss.loss;
    r->ce_acc += s->loss.ce * s->images;
    r->tok_acc += s->loss.tokens;
    train_norms_add(&r->norms, s->norm);
    r->n_acc++;
    if (!row_due) return;
    const long step = r->tc.step;
    double now = timer_now();
    double row[10] = {(double)step, (double)step / r->steps_per_epoch, r->loss_acc / r->n_acc,
                      r->ce_acc / r->tok_acc, NAN, NAN, s->lr,
                      r->imgs_since / (now - r->t_log), NAN, NAN};
    train_norms_take(&r->norms, &row[4], &row[5]);
    csvlog_row(&r->log, row, 10);
    r->last_window_loss = r->loss_acc / r->n_acc;
    r->t_log = now;
    r->imgs_since = 0;
    r->loss_acc = r->ce_acc = r->tok_acc = 0.0;
    r->n_acc = 0;
}

// The state of a run under --cpu-budget (now or in an invocation before) records the CPU
// seconds spent up to it, which a --resume counts on from; a run never under one records
// none, so that its states stay the same bits however long each step took.
static int save_state(const CaptionRun *r, Error *err) {
    CaptionCounters tc = r->tc;
    const bool counted = r->budget.cpu_seconds > 0 || r->tc.cpu_seconds > 0;
    tc.cpu_seconds = counted ? train_budget_cpu_used(&r->budget) : 0;
    return caption_model_save(r->path_state, &r->model, &r->vocab, 1, &r->optim, &r->ema, &tc,
                              &r->enc, &r->ft, r->data_spec, err);
}

// Validation BLEU-4 (and grounding) of the model, or with --ema of the weight average,
// which takes the parameters' place until the best model is written; then the state and
// the curves.
static int validate_and_save(CaptionRun *r, Error *err) {
    const CaptionTrainFlags *f = r->f;
    const long step = r->tc.step;
    CaptionEvalResult er;
    train_ema_swap(&r->ema, &r->model.params);
    if (r->n_workers > 1) gemm_set_threads(f->threads);
    int ev = caption_evaluate(&er, r->dist, &r->model, r->ft.on ? &r->ft : NULL, &r->vocab,
                              r->data, SPLIT_VALID, &r->val, r->n_val, f->val_beam,
                              f->length_alpha, NULL, 0, err);
    if (r->n_workers > 1) gemm_set_threads(1);
    if (ev) return -1;
    // Every rank has the scores (and keeps the same counters); rank 0 alone writes.
    const bool root = dist_is_root(r->dist);
    r->last_val = train_fault_valid_score(step, er.scores.bleu[3]);
    double ground = er.has_grounding ? er.grounding.accuracy : NAN;
    const double epoch = (double)step / r->steps_per_epoch;
    double row[10] = {(double)step, epoch, NAN, NAN, NAN, NAN, NAN, NAN, r->last_val, ground};
    if (root) csvlog_row(&r->log, row, 10);
    bool best = r->last_val > r->tc.best_bleu;
    if (!f->quiet && root) {
        train_meter_break(&r->meter);
        if (isfinite(r->last_val))
            fprintf(stderr, "step %ld (epoch %.2f): validation BLEU-4 %.4f", step, epoch, r->last_val);
        else
            fprintf(stderr, "step %ld (epoch %.2f): validation BLEU-4 not finite", step, epoch);
        if (er.has_grounding && er.grounding.object_words > 0)
            fprintf(stderr, ", grounding %.4f", ground);
        else if (er.has_grounding)  // the 0 logged is no accuracy: nothing was there to ground
            fprintf(stderr, ", grounding n/a (no object words)");
        if (best)
            fprintf(stderr, " (the best so far)\n");
        else if (r->tc.best_bleu >= 0)  // < 0: no validation has set a best yet (a sentinel)
            fprintf(stderr, " (best %.4f at step %ld)\n", r->tc.best_bleu, r->tc.best_step);
        else
            fprintf(stderr, " (no best model kept yet)\n");
    }
    if (best) {
        r->tc.best_bleu = r->last_val;
        r->tc.best_step = step;
        if (root && caption_model_save(r->path_model, &r->model, &r->vocab, 0, NULL, NULL, &r->tc,
                                       &r->enc, &r->ft, r->data_spec, err))
            return -1;
    }
    train_ema_swap(&r->ema, &r->model.params);
    if (!root) return 0;
    return save_state(r, err) || write_curves(r->path_log, r->path_curves, err) ? -1 : 0;
}

// Steps until the budget is spent or a step fails.
static int train_loop(CaptionRun *r, Error *err) {
    int rc = 0;
    train_budget_begin(&r->budget);
    r->t_log = r->budget.t0;
    const bool root = dist_is_root(r->dist);
    train_meter_start(&r->meter, &r->budget, r->tc.step, !r->f->quiet && root);
    // Rank 0's clock decides when a time budget is spent, for every rank.
    bool go = train_budget_allows(&r->budget, r->tc.step);
    if (train_dist_root_decides(r->dist, &go, err)) return -1;
    while (go) {
        double ts = timer_now();
        StepResult s;
        train_dist_fault_point(r->dist, r->tc.step + 1);
        if (train_step(r, &s, err)) {
            rc = -1;
            break;
        }
        double secs = timer_now() - ts;
        bool last = train_budget_spent(&r->budget, r->tc.step);
        if (train_dist_root_decides(r->dist, &last, err)) {
            rc = -1;
            break;
        }
        go = !last;
        TrainDue due = train_due(&r->cadence, r->tc.step, last);
        if (root) log_step(r, &s, due.log);
        char status[32];
        snprintf(status, sizeof status, "loss %.3f", s.loss.loss);
        train_meter_step(&r->meter, r->tc.step, s.images, secs, status);
        // Every rank validates (its share of the images); rank 0 alone writes.
        if ((due.validate && validate_and_save(r, err)) ||
            (!due.validate && due.save && root && save_state(r, err))) {
            rc = -1;
            break;
        }
        bool stop;  // SIGINT or SIGTERM
        if (train_dist_interrupted(r->dist, go, &stop, err)) {
            rc = -1;
            break;
        }
        if (stop) {
            r->interrupted = true;
            r->failed_everywhere = r->dist->size > 1;  // as for a non-finite loss
            rc = train_interrupt_error(r->tc.step, err);
            break;
        }
    }
    train_meter_end(&r->meter, r->tc.step, "");
    return rc;
}

// The run's summary: stderr, and with --json one object on stdout (null for what this run
// did not measure).
static void print_summary(const CaptionRun *r) {
    const CaptionCounters *tc = &r->tc;
    double secs = timer_now() - r->budget.t0, ips = train_meter_images_per_s(&r->meter);
    double final_loss = r->n_acc > 0 ? r->loss_acc / r->n_acc : r->last_window_loss;
    double best = tc->best_bleu >= 0 ? tc->best_bleu : NAN;
    if (r->meter.steps == 0 && !file_exists(r->path_model))
        fprintf(stderr, "caption train: nothing to do (already at step %ld)\n", tc->step);
    if (r->f->json) {
        char fl[32], vb[32], bb[32], bs[32];
        char cb[32];
        printf("{\"steps\": %ld, \"epochs\": %.4f, \"seconds\": %.2f, \"cpu_seconds\": %.2f, "
               "\"cpu_budget\": %s, \"images_per_s\": %.2f, \"final_loss\": %s, \"val_bleu4\": %s, \"best_val_bleu4\": %s, \"best_step\": %s, "
               "\"attention\": \"%s\"}\n",
               tc->step, (double)tc->step / r->steps_per_epoch, secs,
               train_budget_cpu_used(&r->budget),
               json_number(cb, r->budget.cpu_seconds > 0 ? r->budget.cpu_seconds : NAN), ips,
               json_number(fl, final_loss),
               json_number(vb, r->last_val), json_number(bb, best),
               json_number(bs, isfinite(best) ? (double)tc->best_step : NAN),
               caption_attention_name(&r->model.cfg));
        return;
    }
    char loss[48] = "", valid[1300] = "no best model kept yet";
    if (isfinite(final_loss)) snprintf(loss, sizeof loss, ", final loss %.4f", final_loss);
    if (isfinite(best))
        snprintf(valid, sizeof valid, "best validation BLEU-4 %.4f at step %ld; %s", best,
                 tc->best_step, r->path_model);
    // As draw train's: wall time (validation and checkpoints included), the rate of step time.
    text_write_linef(stderr, "caption train: %ld steps in %.1f s wall; %.1f images/s of step time; "
                             "at step %ld%s; %s", r->meter.steps, secs, ips, tc->step, loss, valid);
}

int caption_train_main(int argc, char **argv) {
    CaptionTrainFlags f;
    int code;
    if (caption_train_flags_parse(&f, argc, argv, &code)) return code;
    train_process_begin("caption train");
    gemm_set_threads(f.threads);
    Error err;
    Dist dist;
    if (dist_init(&dist, &err)) {
        fprintf(stderr, "caption train: %s\n", err.msg);
        return 1;
    }
    const bool root = dist_is_root(&dist);
    CaptionRun r;
    int rc = open_run(&r, &f, &dist, &err);
    if (rc == 0) {
        RunInfo run_info;  // RUN/run.json: this invocation, for the report
        if (root) run_info_begin(&run_info, f.out, "caption", argc, argv, f.threads, dist.size,
                                 f.resume);
        if (!f.quiet && root) print_header(&r);
        rc = train_loop(&r, &err) ? 1 : 0;
        csvlog_close(&r.log);
        if (rc == 0 && root) print_summary(&r);
        if (root) {  // the CPU spent over the run's invocations, and its budget
            run_info.cpu_seconds = train_budget_cpu_used(&r.budget);
            run_info.cpu_budget = r.budget.cpu_seconds;
        }
        if (root) run_info_end(&run_info, r.interrupted ? RUN_INFO_INTERRUPTED : rc, r.tc.step,
                               train_meter_images_per_s(&r.meter));
    }
    if (rc && r.failed_everywhere) {
        if (root) fprintf(stderr, "%s\n", err.msg);  // rank 0 prints it, before any rank exits
        dist_barrier(&dist);
    } else if (rc && !r.reported) {
        train_dist_fail(&dist, "caption train", &err);  // under mpirun it ends every rank
    }
    close_run(&r);
    dist_finalize(&dist);
    return rc;
}
