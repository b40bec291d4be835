// bin/draw: train, evaluate and sample DRAW (models/draw.h) on MNIST-family IDX data, two-digit
// MNIST and the colour scenes (cli/draw_data.h).
//
//   draw train       --data mnist --out DIR [--steps N | --epochs N | --minutes M] [--resume]
//   draw eval        --model DIR/model.safetensors --data mnist --split test [--json] [--samples K]
//                    [--sample-quality CLASSIFIER] (cli/draw_eval_quality.h, cli/draw_quality.h)
//   draw generate    --model M --count 64 --out DIR [--seed S] [--show-attention] [--digit D]
//   draw reconstruct --model M --data mnist --count 16 --out DIR
//   draw report      RUN      (cli/report_draw.h: RUN/report.html)
//   draw classify    ...      (cli/classify.h: the glimpse classifier)
//
// Training, its determinism and its ranks: cli/draw_train.h. Checkpoints:
// cli/draw_checkpoint.h. The bound and its noise: cli/draw_eval.h (eval's noise for image g
// of the split from (seed, g), whatever the batch; under mpirun each rank evaluates its
// share of every batch). Pictures: cli/draw_frames.h.
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/classify.h"
#include "cli/draw_checkpoint.h"
#include "cli/draw_data.h"
#include "cli/draw_eval.h"
#include "cli/draw_eval_quality.h"
#include "cli/draw_frames.h"
#include "cli/draw_quality.h"
#include "cli/draw_train.h"
#include "cli/report_draw.h"
#include "cli/threads.h"
#include "cli/train_dist.h"
#include "core/check.h"
#include "core/dist.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/gemm.h"
#include "core/rng.h"
#include "core/text_escape.h"
#include "core/timer.h"
#include "datasets/mnist.h"
#include "models/draw.h"
#include "vision/image.h"
#include "vision/png.h"

static int fail(const Error *err) {
    fprintf(stderr, "draw: %s\n", err->msg);
    return 1;
}

// One split of a dataset, binarised once (fixed seed) when the model was trained binarised.
static int load_split(ImageSet *set, const char *data, const char *root, Split split,
                      int binarize, Error *err) {
    if (draw_data_load(set, data, root, split, err)) return -1;
    if (binarize && split != SPLIT_TRAIN) imageset_binarize_fixed(set, MNIST_FIXED_BINARIZE_SEED);
    return 0;
}

// A model and one split of data to run it on (eval, reconstruct): the split binarised as
// the model was trained, its images of the model's size. On failure both are left empty.
static int load_model_and_split(DrawCheckpoint *m, ImageSet *set, const char *model,
                                const char *data, const char *root, Split split, Error *err) {
    memset(set, 0, sizeof *set);
    if (draw_checkpoint_load(m, model, err)) return -1;
    const DrawConfig *c = &m->state.cfg;
    int rc = load_split(set, data, root, split, m->state.binarize, err);
    if (rc == 0 && (set->cols != c->W || set->rows != c->H || set->channels != draw_channels(c)))
        rc = error_set(err, "%s: model is for %dx%dx%d images, %s has %dx%dx%d", model, c->W, c->H,
                       draw_channels(c), data, set->cols, set->rows, set->channels);
    if (rc == 0 && c->classes && !set->labels)
        rc = error_set(err, "%s: a conditional model (trained with --conditional) runs on each "
                       "image's label, and %s has none", model, data);
    if (rc) {
        draw_checkpoint_free(m);
        imageset_free(set);
    }
    return rc;
}

typedef struct {
    const char *model, *data, *root, *per_image, *quality, *illegible;
    int split;  // index into EVAL_SPLITS
    int samples, batch, threads, limit, quality_n;
    double temperature;  // --quality-temperature
    long seed;
    int quality_of;  // DrawQualityOf
    bool json, no_average;
} EvalFlags;

static const char *const EVAL_SPLITS[] = {"valid", "test", NULL};

// Nonzero when the command ends here (help or a bad flag) with *code.
static int parse_eval_flags(EvalFlags *f, int argc, char **argv, int *code) {
    *f = (EvalFlags){.data = "mnist", .root = "data", .split = 1, .samples = 1, .batch = 100,
                     .quality_n = SAMPLE_QUALITY_DEFAULT_N, .temperature = 1.0, .threads = threads_available(), .seed = DRAW_EVAL_NOISE_SEED};
    ArgSpec specs[] = {
        {"model", ARG_STRING, &f->model, "checkpoint (DIR/model.safetensors)", .metavar = "PATH", .required = true},
        {"data", ARG_STRING, &f->data, "mnist, fashion-mnist, mnist2, scenes, or an IDX image file", .metavar = "D"},
        {"data-root", ARG_STRING, &f->root, "folder holding mnist/ and fashion-mnist/", .metavar = "DIR"},
        {"split", ARG_CHOICE, &f->split, "which split", .choices = EVAL_SPLITS},
        {"samples", ARG_INT, &f->samples, "K > 1: importance-weighted NLL from K samples per image", .has_min = true, .min = 1, .has_max = true, .max = 100000},
        {"batch", ARG_INT, &f->batch, "images per forward pass", .has_min = true, .min = 1, .has_max = true, .max = 10000},
        {"limit", ARG_INT, &f->limit, "evaluate only the first N images (0: all)", .has_min = true, .min = 0},
        {"seed", ARG_LONG, &f->seed, "noise seed", .has_min = true, .min = 0},
        {"threads", ARG_INT, &f->threads, "threads: data-parallel workers over the batch, one GEMM thread each", .has_min = true, .min = 1, .has_max = true, .max = THREADS_MAX, .default_note = THREADS_DEFAULT_NOTE},
        {"no-average", ARG_FLAG, &f->no_average, "evaluate the trained weights of a run trained with --ema, not their average", .given = NULL},
        {"per-image", ARG_STRING, &f->per_image, "each image's figures in FILE, saved after each batch; run again with the same FILE and flags, an evaluation cut off goes on from them (cli/draw_eval_record.h)", .metavar = "FILE"},
        {"sample-quality", ARG_STRING, &f->quality, "also judge samples from the prior with this classifier (draw classify train --model cnn --size 28 --fragments 0): the share labelled with confidence >= 0.9, the entropy of the predicted classes against log 10, and for a conditional model the share labelled as the class asked for, per class too; a 60x60 two-digit model's samples are cut into their two digits first, and the share with both legible is given; the same figures for as many of the split's images (cli/draw_quality.h)", .metavar = "CLASSIFIER"},
        {"quality-samples", ARG_INT, &f->quality_n, "samples --sample-quality draws (a conditional model's ask for each class in turn)", .has_min = true, .min = 1, .has_max = true, .max = 10000000},
        {"quality-temperature", ARG_DOUBLE, &f->temperature, "--sample-quality draws z_t from N(0, t^2 I): 1 is the paper's prior; another t is a stated protocol, reported beside t = 1, never in its place", .metavar = "T", .has_min = true, .min = 0, .has_max = true, .max = 10},
        {"quality-of", ARG_CHOICE, &f->quality_of, "what --sample-quality judges: samples from the prior; the data, the split's evaluated images as the model sees them (MNIST binarised once), the measure's ceiling; or the model's reconstructions of them (z from the posterior); or as many noise images, each pixel on with the probability of the split's mean intensity (the measure's floor); beside samples and reconstructions, the same figures for as many of the split's own images (data_quality in --json)", .choices = DRAW_QUALITY_OF_NAMES},
        {"quality-illegible", ARG_STRING, &f->illegible, "--sample-quality also writes a PNG grid of the first 64 samples that are not legible (8 a row), and lists their top class and probability", .metavar = "FILE"},
        {"json", ARG_FLAG, &f->json, "print one JSON object", .given = NULL},
    };
    return args_parse_for_command(argc, argv, specs, ARGS_LEN(specs), "draw eval --model PATH --data D [flags]", "draw", code);
}

// q: --sample-quality's figures on what --quality-of names (or NULL); dq: on as many of the
// split's own images beside them (or NULL: --quality-of data or noise).
static void print_eval(const EvalFlags *f, const DrawEvalQuality *a, const DrawCheckpoint *m,
                       bool average, const DrawEvalResult *r, const SampleQuality *q,
                       const SampleQuality *dq, double secs) {
    const DrawConfig *c = &m->state.cfg;
    const char *weights = average ? "average" : "trained";
    const char *bin = m->state.binarize ? "binarised once, seed 0x5EED"
                      : draw_channels(c) > 1 ? "colour intensities" : "grey levels";
    const int dims = draw_image_size(c);  // per dimension: per pixel and channel
    if (f->json) {
        printf("{\"nll_bound\": %.6f, \"recon\": %.6f, \"kl\": %.6f, \"images\": %d, "
               "\"split\": \"%s\", ",
               r->bound, r->recon, r->kl, r->images, EVAL_SPLITS[f->split]);
        text_json_name(stdout, "data", f->data);
        printf(", \"binarization\": \"%s\", \"samples\": %d, \"dims\": %d, "
               "\"nll_bound_per_dim\": %.8f",
               bin, f->samples, dims, r->bound / dims);
        char se[32];
        printf(", \"nll_bound_se\": %s", json_number(se, r->bound_se));
        if (f->samples > 1)
            printf(", \"nll_iw\": %.6f, \"nll_iw_se\": %s", r->nll_iw, json_number(se, r->nll_iw_se));
        printf(", \"conditional\": %s", c->classes ? "true" : "false");
        if (q) draw_eval_quality_print(a, q, "sample_quality", f->quality_of, true);
        if (q && dq) draw_eval_quality_print(a, dq, "data_quality", DRAW_QUALITY_OF_DATA, true);
        printf(", \"weights\": \"%s\", \"step\": %ld, \"seconds\": %.3f}\n", weights, m->state.step,
               secs);
    } else {
        text_write_linef(stdout, "%s %s (%s): bound %.3f nats per image (reconstruction %.3f + KL %.3f; "
                         "standard error %.3f), %.5f nats per dimension (%d), %d images%s",
                         f->data, EVAL_SPLITS[f->split], bin, r->bound, r->recon, r->kl, r->bound_se,
                         r->bound / dims, dims, r->images, average ? "; the weight average" : "");
        if (f->samples > 1)
            printf("importance-weighted NLL estimate (K = %d): %.3f nats (standard error %.3f)\n",
                   f->samples, r->nll_iw, r->nll_iw_se);
        if (c->classes)
            printf("the model is conditional on the label: the bound is -log p(x | label)'s, not "
                   "comparable with an unconditional model's\n");
        if (q) draw_eval_quality_print(a, q, "sample_quality", f->quality_of, false);
        if (q && dq) draw_eval_quality_print(a, dq, "data_quality", DRAW_QUALITY_OF_DATA, false);
    }
}

// --per-image: the images of this evaluation finished before (rank 0 reads them from the
// file and writes it back at once, so a folder it cannot write to is said before any work).
static int open_record(DrawEvalRecord *rec, const EvalFlags *f, const DrawCheckpoint *m,
                       const ImageSet *set, int B, const Dist *d, Error *err) {
    const int n = f->limit > 0 && f->limit < set->n ? f->limit : set->n;
    DrawEvalIdentity id = {.images = n, .samples = f->samples, .batch = B, .seed = f->seed};
    draw_eval_digest(id.weights_sha256, m->params.data, m->params.numel);
    draw_eval_digest(id.images_sha256, set->images, (size_t)n * set->dim);
    const bool root = dist_is_root(d);
    if (draw_eval_record_open(rec, f->per_image, &id, root, err)) return -1;
    if (root && draw_eval_record_save(rec, rec->done, err)) return -1;
    if (root && rec->done > 0)
        text_write_linef(stderr, "draw eval: %s: %d of %d images done before%s", f->per_image,
                         rec->done, n, rec->done < n ? ", going on from there" : "");
    return 0;
}

static int cmd_eval(int argc, char **argv) {
    EvalFlags f;
    int code;
    if (parse_eval_flags(&f, argc, argv, &code)) return code;
    const DrawEvalQuality quality = {
        .classifier = f.quality, .illegible = f.illegible, .of = f.quality_of, .n = f.quality_n,
        .temperature = f.temperature, .batch = f.batch, .seed = (uint64_t)f.seed,
        .split = EVAL_SPLITS[f.split]};
    if ((code = draw_eval_quality_check(&quality))) return code;
    Error err;
    gemm_set_threads(f.threads);
    Dist dist;  // under mpirun, each rank evaluates its share of every batch
    if (dist_init(&dist, &err)) return fail(&err);
    DrawCheckpoint m;
    ImageSet set;
    int rc = load_model_and_split(&m, &set, f.model, f.data, f.root,
                                  f.split == 0 ? SPLIT_VALID : SPLIT_TEST, &err);
    const bool loaded = rc == 0;
    if (rc == 0 && set.n < dist.size)
        rc = error_set(&err, "%s has %d images, fewer than the %d ranks", f.data, set.n, dist.size);
    if (rc == 0) rc = gemm_check_address_space(f.threads, &err);  // not a hang in OpenBLAS
    const bool average = rc == 0 && !f.no_average && draw_checkpoint_use_average(&m);
    int B = f.batch < set.n ? f.batch : set.n;  // set.n is 0 when nothing loaded
    if (B < dist.size) B = dist.size;
    DrawEvalRecord rec = {0};
    if (rc == 0 && f.per_image) rc = open_record(&rec, &f, &m, &set, B, &dist, &err);
    ClassifyModel cls = {0};
    if (rc == 0 && f.quality) rc = draw_quality_load_classifier(&cls, f.quality, &m.state.cfg, &err);
    if (rc && f.quality && dist_is_root(&dist) && dist.size == 1) {  // the command's own line
        text_write_linef(stderr, "draw eval: %s", err.msg);
        draw_eval_record_free(&rec);
        if (loaded) imageset_free(&set), draw_checkpoint_free(&m);
        dist_finalize(&dist);
        return 1;
    }
    if (train_dist_agree(&dist, rc, "draw", &err)) {
        classify_model_free(&cls);
        draw_eval_record_free(&rec);
        if (loaded) imageset_free(&set), draw_checkpoint_free(&m);
        dist_finalize(&dist);
        return 1;
    }
    DrawEvalScratch scratch;
    draw_eval_scratch_alloc(&scratch, &dist, f.threads, &m.state.cfg, B, f.samples);
    scratch.progress = true;
    scratch.record = f.per_image ? &rec : NULL;
    gemm_set_threads(f.threads / scratch.n_workers);
    double t0 = timer_now();
    DrawEvalResult r;
    if (draw_evaluate(&r, &scratch, &m.p, &m.state.cfg, &set, f.limit, f.samples, (uint64_t)f.seed, &err))
        return train_dist_fail(&dist, "draw", &err);
    // q: what --quality-of names; dq: as many of the split's own images beside them
    SampleQuality q, dq;
    if (f.quality && dist_is_root(&dist))
        rc = draw_eval_quality_run(&q, &dq, &quality, &m.p, &m.state.cfg, &cls, &set, f.limit, &err);
    if (rc)  // the grid could not be written: nothing printed as if it were
        text_write_linef(stderr, "draw eval: %s", err.msg);
    else if (dist_is_root(&dist))
        print_eval(&f, &quality, &m, average, &r, f.quality ? &q : NULL,
                   f.quality && draw_eval_quality_beside(&quality) ? &dq : NULL, timer_now() - t0);
    classify_model_free(&cls);
    draw_eval_record_free(&rec);
    draw_eval_scratch_free(&scratch);
    imageset_free(&set);
    draw_checkpoint_free(&m);
    dist_finalize(&dist);
    return rc ? 1 : 0;
}

// The end of generate's and reconstruct's closing line: the earlier film's frames removed.
static const char *stale_note(int removed) {
    static char note[96];
    note[0] = 0;
    if (removed > 0)
        snprintf(note, sizeof note, "; removed %d step_*.png of an earlier film", removed);
    return note;
}

static int cmd_generate(int argc, char **argv) {
    const char *model = NULL, *out = NULL;
    int count = 64, scale = 2, cols = 0, threads = threads_available(), digit = 0;
    long seed = 1;
    bool show = false, digit_given = false;
    ArgSpec specs[] = {
        {"model", ARG_STRING, &model, "checkpoint (DIR/model.safetensors)", .metavar = "PATH", .required = true},
        {"out", ARG_STRING, &out, "output folder (step_NN.png, final.png, draw.gif; the step_NN.png of an earlier film there that these do not replace are removed)", .metavar = "DIR", .required = true},
        {"count", ARG_INT, &count, "samples", .has_min = true, .min = 1, .has_max = true, .max = 1024},
        {"seed", ARG_LONG, &seed, "sampling seed", .has_min = true, .min = 0},
        {"show-attention", ARG_FLAG, &show, "draw each sample's write window as a red rectangle", .given = NULL},
        {"digit", ARG_INT, &digit, "a conditional model (draw train --conditional): draw this class; without it, the samples take the classes in turn", .has_min = true, .min = 0, .given = &digit_given},
        {"scale", ARG_INT, &scale, "pixels per image pixel", .has_min = true, .min = 1, .has_max = true, .max = 16},
        {"cols", ARG_INT, &cols, "tiles per row (0: square grid)", .has_min = true, .min = 0},
        {"threads", ARG_INT, &threads, "BLAS threads", .has_min = true, .min = 1, .has_max = true, .max = THREADS_MAX, .default_note = THREADS_DEFAULT_NOTE},
    };
    int code;
    if (args_parse_for_command(argc, argv, specs, ARGS_LEN(specs), "draw generate --model PATH --out DIR [flags]", "draw", &code))
        return code;
    Error err;
    gemm_set_threads(threads);
    DrawCheckpoint m;
    if (draw_checkpoint_load(&m, model, &err)) return fail(&err);
    const int K = m.state.cfg.classes;
    if (digit_given && (!K || digit >= K)) {
        if (!K)
            text_write_linef(stderr, "draw generate: --digit %d: %s is unconditional (trained without "
                             "--conditional), so it cannot be asked for a class", digit, model);
        else
            text_write_linef(stderr, "draw generate: --digit %d: %s is conditional on %d classes, 0 to %d",
                             digit, model, K, K - 1);
        draw_checkpoint_free(&m);
        return 1;
    }
    if (make_dirs(out, &err)) {
        draw_checkpoint_free(&m);
        return fail(&err);
    }
    draw_checkpoint_use_average(&m);
    const DrawConfig *c = &m.state.cfg;
    if (show && !c->attention) fprintf(stderr, "draw: --show-attention: the model has no attention; no windows\n");
    DrawActs acts;
    draw_acts_alloc(&acts, c, count);
    Rng rng;
    rng_seed(&rng, (uint64_t)seed);
    for (int b = 0; K && b < count; b++) acts.labels[b] = digit_given ? digit : b % K;
    draw_generate(&acts, &m.p, c, count, &rng);
    DrawFrameStyle st = {.scale = scale, .cols = cols ? cols : (int)ceil(sqrt((double)count)), .margin = 2};
    int stale = 0;
    int rc = draw_write_frames(out, &acts, c, count, show, 0, &st, &stale, &err);
    char cls[64] = "";
    if (K && digit_given) snprintf(cls, sizeof cls, " of class %d", digit);
    else if (K) snprintf(cls, sizeof cls, " (classes 0 to %d in turn)", K - 1);
    if (rc == 0) text_write_linef(stderr, "draw generate: wrote %d samples%s, %d steps, to %s/step_*.png, final.png, draw.gif%s",
                                  count, cls, c->T, out, stale_note(stale));
    draw_acts_free(&acts);
    draw_checkpoint_free(&m);
    return rc ? fail(&err) : 0;
}

static int cmd_reconstruct(int argc, char **argv) {
    const char *model = NULL, *out = NULL, *data = "mnist", *root = "data";
    int count = 16, scale = 2, cols = 0, split = 1, threads = threads_available();
    long seed = 1;
    static const char *const splits[] = {"valid", "test", NULL};
    ArgSpec specs[] = {
        {"model", ARG_STRING, &model, "checkpoint (DIR/model.safetensors)", .metavar = "PATH", .required = true},
        {"data", ARG_STRING, &data, "mnist, fashion-mnist, mnist2, scenes, or an IDX image file", .metavar = "D"},
        {"data-root", ARG_STRING, &root, "folder holding mnist/ and fashion-mnist/", .metavar = "DIR"},
        {"split", ARG_CHOICE, &split, "which split", .choices = splits},
        {"out", ARG_STRING, &out, "output folder (input.png, step_NN.png, final.png, draw.gif; the step_NN.png of an earlier film there that these do not replace are removed)", .metavar = "DIR", .required = true},
        {"count", ARG_INT, &count, "images (the first of the split)", .has_min = true, .min = 1, .has_max = true, .max = 1024},
        {"seed", ARG_LONG, &seed, "noise seed", .has_min = true, .min = 0},
        {"scale", ARG_INT, &scale, "pixels per image pixel", .has_min = true, .min = 1, .has_max = true, .max = 16},
        {"cols", ARG_INT, &cols, "tiles per row (0: square grid)", .has_min = true, .min = 0},
        {"threads", ARG_INT, &threads, "BLAS threads", .has_min = true, .min = 1, .has_max = true, .max = THREADS_MAX, .default_note = THREADS_DEFAULT_NOTE},
    };
    int code;
    if (args_parse_for_command(argc, argv, specs, ARGS_LEN(specs), "draw reconstruct --model PATH --data D --out DIR [flags]", "draw", &code))
        return code;
    Error err;
    gemm_set_threads(threads);
    DrawCheckpoint m;
    ImageSet set;
    if (load_model_and_split(&m, &set, model, data, root, split == 0 ? SPLIT_VALID : SPLIT_TEST, &err))
        return fail(&err);
    draw_checkpoint_use_average(&m);
    const DrawConfig *c = &m.state.cfg;
    if (count > set.n) count = set.n;
    int rc = make_dirs(out, &err);
    DrawActs acts;
    draw_acts_alloc(&acts, c, count);
    if (rc == 0) {
        Rng rng;
        rng_seed(&rng, (uint64_t)seed);
        draw_fill_noise(&acts, c, count, &rng);
        if (c->classes) memcpy(acts.labels, set.labels, sizeof(int) * (size_t)count);
        double rec, kl, bound = draw_forward(&acts, &m.p, c, set.images, count, &rec, &kl);
        DrawFrameStyle st = {.scale = scale, .cols = cols ? cols : (int)ceil(sqrt((double)count)), .margin = 2};
        char path[1100];
        snprintf(path, sizeof path, "%s/input.png", out);
        Image in = draw_render_frame(set.images, 0, count, c, NULL, NULL, &st);
        rc = write_png_image(path, &in, &err);
        image_free(&in);
        int stale = 0;
        if (rc == 0) rc = draw_write_frames(out, &acts, c, count, 1, 1, &st, &stale, &err);
        if (rc == 0)
            text_write_linef(stderr, "draw reconstruct: %d images, bound %.2f nats (recon %.2f + KL %.2f); wrote %s/input.png, step_*.png, draw.gif%s%s",
                             count, bound, rec, kl, out, c->attention ? " (read windows green, write red)" : "",
                             stale_note(stale));
    }
    draw_acts_free(&acts);
    imageset_free(&set);
    draw_checkpoint_free(&m);
    return rc ? fail(&err) : 0;
}

static void overview(FILE *f) {
    fprintf(f,
            "usage: draw COMMAND [flags]   (draw COMMAND --help for its flags)\n"
            "  train        train DRAW; writes OUT/model.safetensors, log.csv, loss.png\n"
            "  eval         negative log-likelihood bound (nats per image) of a split\n"
            "  generate     sample from the prior: step_NN.png grids, final.png, draw.gif\n"
            "  reconstruct  the same frames for data images, with read and write windows\n"
            "  report       write RUN/report.html: a run's configuration, curve, bound, pictures\n"
            "  classify     the glimpse classifier on cluttered MNIST (draw classify --help)\n");
}

int main(int argc, char **argv) {
    static const char *const names[] = {"train", "eval", "generate", "reconstruct", "report", "classify"};
    int which;
    Error err;
    int r = args_subcommand(argc, argv, names, 6, &which, &err);
    if (r == ARGS_HELP) {
        if (args_reporting_process()) overview(stdout);
        return 0;
    }
    if (r == ARGS_ERROR) {
        if (args_reporting_process()) fprintf(stderr, "draw: %s\n", err.msg);
        return 2;
    }
    // classify's own dispatch lets its train run over ranks (cli/classify.h)
    if (which > 1 && strcmp(names[which], "classify") != 0 &&
        train_dist_one_process_only("draw", names[which], TRAIN_DIST_RANKED))
        return 2;
    switch (which) {
    case 0: return draw_train_main(argc - 1, argv + 1);
    case 1: return cmd_eval(argc - 1, argv + 1);
    case 2: return cmd_generate(argc - 1, argv + 1);
    case 4: return draw_report_main(argc - 1, argv + 1);
    case 5: return classify_main(argc - 1, argv + 1);
    default: return cmd_reconstruct(argc - 1, argv + 1);
    }
}
