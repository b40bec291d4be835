#include "cli/classify_tools.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/classify_common.h"
#include "cli/threads.h"
#include "core/binomial.h"
#include "core/check.h"
#include "core/fileio.h"
#include "core/gemm.h"
#include "core/timer.h"
#include "vision/filterbank.h"
#include "vision/image.h"
#include "vision/overlay.h"
#include "vision/png.h"
#include "core/text_escape.h"

static int fail(const Error *err) {
    fprintf(stderr, "draw classify: %s\n", err->msg);
    return 1;
}

static const char *const SPLITS[] = {"valid", "test", NULL};

// draw classify eval's flags.
typedef struct {
    const char *model, *root;
    int split, batch, threads, limit;
    bool json;
} EvalFlags;

static int parse_eval_flags(EvalFlags *f, int argc, char **argv, int *code) {
    *f = (EvalFlags){.root = "data", .split = 1, .batch = 100, .threads = threads_available()};
    ArgSpec specs[] = {
        {"model", ARG_STRING, &f->model, "checkpoint (DIR/model.safetensors)", .metavar = "PATH", .required = true},
        {"data-root", ARG_STRING, &f->root, "folder holding mnist/ and fashion-mnist/", .metavar = "DIR"},
        {"split", ARG_CHOICE, &f->split, "which split", .choices = SPLITS},
        {"limit", ARG_INT, &f->limit, "evaluate only the first N images (0: all)", .has_min = true, .min = 0},
        {"batch", ARG_INT, &f->batch, "images per forward pass", .has_min = true, .min = 1, .has_max = true, .max = 1024},
        {"threads", ARG_INT, &f->threads, "threads: data-parallel workers over the batch", .has_min = true, .min = 1, .has_max = true, .max = THREADS_MAX, .default_note = THREADS_DEFAULT_NOTE},
        {"json", ARG_FLAG, &f->json, "print one JSON object", .given = NULL},
    };
    return args_parse_for_command(argc, argv, specs, ARGS_LEN(specs), "draw classify eval --model PATH [flags]",
                                  "draw classify", code);
}

// The first count images of set (cluttered with the evaluation's seed), in batches of B
// over `threads` data-parallel workers.
static ClassifyEval evaluate_images(const ClassifyModel *m, const ImageSet *set, int count, int B,
                                    int threads) {
    const ClassifyState *st = &m->state;
    int n_workers = classifier_worker_count(threads, B);
    ClassifierWorker *w = xcalloc((size_t)n_workers, sizeof *w);
    classifier_workers_alloc(w, n_workers, &st->cfg, B);
    gemm_set_threads(threads / n_workers > 0 ? threads / n_workers : 1);
    float *x = xmalloc(sizeof(float) * (size_t)B * st->clutter.W * st->clutter.H);
    int *labels = xmalloc(sizeof(int) * (size_t)B);
    ClassifyEval r = classify_evaluate(w, n_workers, B, &m->p, &st->cfg, set, &st->clutter,
                                       CLUTTER_TEST_SEED, count, x, labels);
    classifier_workers_free(w, n_workers);
    free(w), free(x), free(labels);
    return r;
}

// The error with its 95 % Wilson interval and the loss: one JSON object (--json) or a line.
static void print_eval(const EvalFlags *f, const ClassifyState *st, const ClassifyEval *r, double secs) {
    const BinomialInterval ci = binomial_wilson95(r->images - r->correct, r->images);
    const bool glimpse = st->cfg.kind == CLASSIFIER_GLIMPSE;
    if (f->json)
        printf("{\"error\": %.6f, \"error_low95\": %.6f, \"error_high95\": %.6f, \"loss\": %.6f, "
               "\"correct\": %d, \"images\": %d, \"split\": \"%s\", "
               "\"data\": \"cluttered %s %dx%d, %d fragments\", \"model\": \"%s\", \"T\": %d, "
               "\"attention\": %s, \"step\": %ld, \"seconds\": %.3f}\n",
               r->error, ci.low, ci.high, r->loss, r->correct, r->images, SPLITS[f->split], st->data,
               st->clutter.W, st->clutter.H, st->clutter.fragments, classifier_kind_name(st->cfg.kind),
               glimpse ? st->cfg.glimpse.T : 0, glimpse && st->cfg.glimpse.attention ? "true" : "false",
               st->step, secs);
    else
        printf("cluttered %s %s: error %.2f%% (%d of %d wrong; 95%% Wilson interval %.2f-%.2f%%), "
               "loss %.4f\n", st->data, SPLITS[f->split], 100.0 * r->error, r->images - r->correct,
               r->images, 100.0 * ci.low, 100.0 * ci.high, r->loss);
}

// The model at path and the split of its data (cluttered as it was trained); on failure
// nothing stays open.
static int open_model_and_split(ClassifyModel *m, ImageSet *set, const char *path, const char *root,
                                Split split, Error *err) {
    if (classify_load_model(m, path, err)) return -1;
    if (classify_load_split(set, m->state.data, root, split, &m->state.clutter, err)) {
        classify_model_free(m);
        return -1;
    }
    return 0;
}

int classify_eval_main(int argc, char **argv) {
    EvalFlags f;
    int code;
    if (parse_eval_flags(&f, argc, argv, &code)) return code;
    Error err;
    ClassifyModel m;
    ImageSet set;
    if (open_model_and_split(&m, &set, f.model, f.root, f.split == 0 ? SPLIT_VALID : SPLIT_TEST, &err))
        return fail(&err);
    const ClassifyState *st = &m.state;
    int count = f.limit > 0 && f.limit < set.n ? f.limit : set.n;
    double t0 = timer_now();
    ClassifyEval r = evaluate_images(&m, &set, count, f.batch < count ? f.batch : count, f.threads);
    print_eval(&f, st, &r, timer_now() - t0);
    imageset_free(&set);
    classify_model_free(&m);
    return 0;
}

static const float GREEN[3] = {0.1f, 0.9f, 0.2f};

// The argmax class of row b of the last forward's logits.
static int predicted_class(const GlimpseActs *a, const GlimpseConfig *c, int b) {
    const float *z = a->logits + (size_t)b * c->classes;
    int pred = 0;
    for (int k = 1; k < c->classes; k++) pred = z[k] > z[pred] ? k : pred;
    return pred;
}

// Row i of glimpses.png: the image with each step's window, then the prediction.
static Image glimpse_row(const GlimpseActs *a, const GlimpseConfig *c, const float *img, int i,
                         int label, int scale) {
    int T = c->T, n = T + 1;
    Image *tiles = xcalloc((size_t)n, sizeof *tiles);
    char (*text)[48] = xcalloc((size_t)n, sizeof *text);
    const char **caps = xcalloc((size_t)n, sizeof *caps);
    Image plane = {.c = 1, .h = c->H, .w = c->W, .data = (float *)img};
    Image big = image_resize(&plane, c->H * scale, c->W * scale, RESIZE_AREA);
    const int pred = predicted_class(a, c, i);
    for (int t = 0; t < n; t++) {
        tiles[t] = image_to_rgb(&big);
        if (t < T && c->attention) {
            const float *rp = a->rparams + ((size_t)t * a->B + i) * FILTERBANK_PARAMS;
            FilterbankWindow w = filterbank_window(rp, c->read_n, c->W, c->H);
            draw_rect(&tiles[t], (w.x0 + 0.5f) * scale - 0.5f, (w.y0 + 0.5f) * scale - 0.5f,
                      (w.x1 + 0.5f) * scale - 0.5f, (w.y1 + 0.5f) * scale - 0.5f, GREEN, 2);
        }
        if (t < T)
            snprintf(text[t], sizeof text[t], "glimpse %d", t + 1);
        else
            snprintf(text[t], sizeof text[t], "says %d (is %d)", pred, label);
        caps[t] = text[t];
    }
    Image row = caption_strip(tiles, caps, n, 2, 1);
    for (int t = 0; t < n; t++) image_free(&tiles[t]);
    image_free(&big);
    free(tiles), free(text), free(caps);
    return row;
}

static int write_pictures(const char *out, const GlimpseActs *a, const GlimpseConfig *c,
                          const float *x, const int *labels, int count, int scale, Error *err) {
    Image *rows = xcalloc((size_t)count, sizeof *rows);
    for (int i = 0; i < count; i++)
        rows[i] = glimpse_row(a, c, x + (size_t)i * c->W * c->H, i, labels[i], scale);
    Image all = stack_vertical(rows, count, 4);
    char path[1200];
    snprintf(path, sizeof path, "%s/glimpses.png", out);
    int rc = write_png_image(path, &all, err);
    image_free(&all);
    for (int i = 0; i < count; i++) image_free(&rows[i]);
    free(rows);
    if (rc || !c->attention) return rc;
    // The glimpses themselves: (count rows, T columns) of N x N patches, upscaled.
    int N = c->read_n, R = N * N, T = c->T;
    float *planes = xmalloc(sizeof(float) * (size_t)count * T * R);
    for (int i = 0; i < count; i++)
        for (int t = 0; t < T; t++) {
            const float *r = glimpse_fovea(a, c, t, i);
            float mx = 1e-6f;
            for (int k = 0; k < R; k++) mx = fmaxf(mx, r[k]);
            for (int k = 0; k < R; k++) planes[((size_t)i * T + t) * R + k] = r[k] / mx;
        }
    Image grid = tile_grid_planes(planes, count * T, N, N, T, 1, 0.5f);
    Image big = image_resize(&grid, grid.h * 4, grid.w * 4, RESIZE_AREA);
    snprintf(path, sizeof path, "%s/patches.png", out);
    rc = write_png_image(path, &big, err);
    image_free(&grid), image_free(&big);
    free(planes);
    return rc;
}

// The indices of the first `count` test images from `first` on that the model gets wrong,
// in batches of a->B (x, labels sized for them); returns how many there are (fewer at the
// end of the set).
static int find_errors(long *idx, int count, int first, GlimpseActs *a, const GlimpseParams *p,
                       const GlimpseConfig *gc, const ImageSet *set, const ClutterConfig *clutter,
                       float *x, int *labels) {
    const int B = a->B;
    long *batch = xmalloc(sizeof(long) * (size_t)B);
    int found = 0;
    for (long i0 = first; found < count && i0 < set->n; i0 += B) {
        const int k = set->n - i0 < B ? (int)(set->n - i0) : B;
        for (int j = 0; j < k; j++) batch[j] = i0 + j;
        cluttered_batch(x, labels, set, clutter, CLUTTER_TEST_SEED, batch, k);
        glimpse_forward(a, p, gc, x, labels, k, NULL);
        for (int j = 0; j < k && found < count; j++)
            if (predicted_class(a, gc, j) != labels[j]) idx[found++] = batch[j];
    }
    free(batch);
    return found;
}

// draw classify show's flags.
typedef struct {
    const char *model, *out, *root;
    int count, scale, first;
    bool errors;
} ShowFlags;

static int parse_show_flags(ShowFlags *f, int argc, char **argv, int *code) {
    *f = (ShowFlags){.root = "data", .count = 8, .scale = 2};
    ArgSpec specs[] = {
        {"model", ARG_STRING, &f->model, "checkpoint (DIR/model.safetensors)", .metavar = "PATH", .required = true},
        {"out", ARG_STRING, &f->out, "output folder (glimpses.png, patches.png)", .metavar = "DIR", .required = true},
        {"data-root", ARG_STRING, &f->root, "folder holding mnist/ and fashion-mnist/", .metavar = "DIR"},
        {"count", ARG_INT, &f->count, "test images shown", .has_min = true, .min = 1, .has_max = true, .max = 64},
        {"first", ARG_INT, &f->first, "index of the first test image (the test split holds 10,000)", .has_min = true, .min = 0, .has_max = true, .max = 1000000},
        {"scale", ARG_INT, &f->scale, "pixels per image pixel", .has_min = true, .min = 1, .has_max = true, .max = 8},
        {"errors", ARG_FLAG, &f->errors, "show the first COUNT test images from --first on that the model gets wrong", .given = NULL},
    };
    return args_parse_for_command(argc, argv, specs, ARGS_LEN(specs),
                                  "draw classify show --model PATH --out DIR [flags]", "draw classify", code);
}

// The glimpse model of path and the test split, or -1 with err set (a convolutional model
// takes no glimpses to show); on failure nothing stays open.
static int open_show(ClassifyModel *m, ImageSet *set, const ShowFlags *f, Error *err) {
    if (open_model_and_split(m, set, f->model, f->root, SPLIT_TEST, err)) return -1;
    if (m->state.cfg.kind == CLASSIFIER_GLIMPSE) return 0;
    error_set(err, "%s: a %s model takes no glimpses (show draws the glimpse classifier's)", f->model,
              classifier_kind_name(m->state.cfg.kind));
    imageset_free(set);
    classify_model_free(m);
    return -1;
}

// The test images shown, into idx: f->count from f->first on (fewer at the end of the
// split), or with --errors the first f->count from there the model gets wrong (*shown of
// them). -1 with err set when --first is past the split's end, or the model gets none
// wrong.
static int choose_images(long *idx, int *shown, const ShowFlags *f, GlimpseActs *a,
                         const ClassifyModel *m, const ImageSet *set, float *x, int *labels, Error *err) {
    if (f->first >= set->n)
        return error_set(err, "--first %d: the test split of %s holds %d images (--first 0 to %d)",
                         f->first, m->state.data, set->n, set->n - 1);
    *shown = f->count < set->n - f->first ? f->count : set->n - f->first;
    if (!f->errors) {
        for (int i = 0; i < *shown; i++) idx[i] = f->first + i;
        return 0;
    }
    *shown = find_errors(idx, f->count, f->first, a, &m->p.glimpse, &m->state.cfg.glimpse, set,
                         &m->state.clutter, x, labels);
    if (*shown == 0)
        return error_set(err, "%s: none of the %d test images from --first %d on is classified "
                         "wrong: nothing to show", f->model, set->n - f->first, f->first);
    return 0;
}

int classify_show_main(int argc, char **argv) {
    ShowFlags f;
    int code;
    if (parse_show_flags(&f, argc, argv, &code)) return code;
    Error err;
    ClassifyModel m;
    ImageSet set;
    if (open_show(&m, &set, &f, &err)) return fail(&err);
    const ClassifyState *st = &m.state;
    const GlimpseConfig *gc = &st->cfg.glimpse;
    GlimpseActs acts;
    glimpse_acts_alloc(&acts, gc, f.count);
    float *x = xmalloc(sizeof(float) * (size_t)f.count * gc->W * gc->H);
    int *labels = xmalloc(sizeof(int) * (size_t)f.count);
    long *idx = xmalloc(sizeof(long) * (size_t)f.count);
    int shown = 0;
    int rc = choose_images(idx, &shown, &f, &acts, &m, &set, x, labels, &err) || make_dirs(f.out, &err);
    if (rc == 0) {
        cluttered_batch(x, labels, &set, &st->clutter, CLUTTER_TEST_SEED, idx, shown);
        int correct = 0;
        glimpse_forward(&acts, &m.p.glimpse, gc, x, labels, shown, &correct);
        rc = write_pictures(f.out, &acts, gc, x, labels, shown, f.scale, &err);
        if (rc == 0)
            text_write_linef(stderr, "draw classify show: %d test images (%d right)%s; wrote %s/glimpses.png%s",
                             shown, correct, f.errors ? ", the first it gets wrong" : "", f.out,
                             gc->attention ? ", patches.png" : "");
    }
    glimpse_acts_free(&acts);
    free(x), free(labels), free(idx);
    imageset_free(&set);
    classify_model_free(&m);
    return rc ? fail(&err) : 0;
}

int classify_export_main(int argc, char **argv) {
    const char *out = NULL, *root = "data", *data = "mnist";
    int split = 1, count = 100, fragments = 8;
    long seed = CLUTTER_TEST_SEED;
    ArgSpec specs[] = {
        {"out", ARG_STRING, &out, "output folder (00000.png ..., labels.txt)", .metavar = "DIR", .required = true},
        {"data", ARG_STRING, &data, "source of the digits: mnist or fashion-mnist", .metavar = "D"},
        {"data-root", ARG_STRING, &root, "folder holding mnist/ and fashion-mnist/", .metavar = "DIR"},
        {"split", ARG_CHOICE, &split, "which split", .choices = SPLITS},
        {"count", ARG_INT, &count, "images", .has_min = true, .min = 1, .has_max = true, .max = 1000000},
        {"fragments", ARG_INT, &fragments, "clutter fragments per image", .has_min = true, .min = 0, .has_max = true, .max = CLUTTER_MAX_FRAGMENTS},
        {"seed", ARG_LONG, &seed, "clutter seed (the default is the one evaluation uses)", .has_min = true, .min = 0},
    };
    int code;
    if (args_parse_for_command(argc, argv, specs, ARGS_LEN(specs), "draw classify export --out DIR [flags]",
                               "draw classify", &code))
        return code;
    Error err;
    ClutterConfig c = clutter_config_default();
    c.fragments = fragments;
    ImageSet set;
    if (classify_load_split(&set, data, root, split == 0 ? SPLIT_VALID : SPLIT_TEST, &c, &err)) return fail(&err);
    int rc = cluttered_write_folder(out, &set, &c, (uint64_t)seed, count, &err);
    if (rc == 0) text_write_linef(stderr, "draw classify export: wrote %d images and labels.txt to %s", count, out);
    imageset_free(&set);
    return rc ? fail(&err) : 0;
}
