// bin/draw: train, evaluate and sample DRAW (models/draw.h) on MNIST-family IDX data.
//
//   draw train       --data mnist --out DIR [--steps N | --epochs N | --minutes M] [--resume]
//   draw eval        --model DIR/model.safetensors --data mnist --split test [--json] [--samples K]
//   draw generate    --model M --count 64 --out DIR [--seed S] [--show-attention]
//   draw reconstruct --model M --data mnist --count 16 --out DIR
//   draw report      RUN      (cli/report_draw.h: RUN/report.html)
//
// Determinism: training step s (0-based) draws its batch from the epoch's permutation,
// which is shuffled by a stream seeded with (seed, epoch), and its binarisation and noise
// from a stream seeded with (seed, s). A run is therefore a pure function of (seed, step,
// weights, Adam moments), and --resume from a checkpoint gives the same weights, bit for
// bit, as a run that was never interrupted (same machine and thread count).
// Checkpoints (safetensors, written atomically) hold the parameters, the Adam moments
// ("adam.m/NAME", "adam.v/NAME") and, in __metadata__, the configuration and the step.
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/report_draw.h"
#include "cli/run_info.h"
#include "core/adam.h"
#include "core/block.h"
#include "core/check.h"
#include "core/csvlog.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/gemm.h"
#include "core/progress.h"
#include "core/rng.h"
#include "core/safetensors.h"
#include "core/timer.h"
#include "datasets/mnist.h"
#include "models/draw.h"
#include "vision/filterbank.h"
#include "vision/gif.h"
#include "vision/image.h"
#include "vision/overlay.h"
#include "vision/plot.h"
#include "vision/png.h"

#define EVAL_NOISE_SEED 1u  // default noise seed of eval and of the validation bound

// ---------------------------------------------------------------------------------------
// Checkpoints

typedef struct {
    DrawConfig cfg;
    long step;
    uint64_t seed;
    int batch;
    float lr, beta1, clip;
    int binarize;
    char data[256];
} TrainState;

static uint64_t mix64(uint64_t a, uint64_t b) {
    uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int save_checkpoint(const char *path, const TrainState *s, const Block *params,
                           const Block *m, const Block *v, Error *err) {
    char buf[16][64];
    const DrawConfig *c = &s->cfg;
    int k = 0;
    SafetensorsMeta meta[24];
#define META_INT(key, val)                                     \
    snprintf(buf[k], sizeof buf[k], "%lld", (long long)(val)); \
    meta[k] = (SafetensorsMeta){key, buf[k]};                  \
    k++
#define META_FLOAT(key, val)                         \
    snprintf(buf[k], sizeof buf[k], "%.9g", (double)(val)); \
    meta[k] = (SafetensorsMeta){key, buf[k]};        \
    k++
    META_INT("draw.W", c->W);
    META_INT("draw.H", c->H);
    META_INT("draw.T", c->T);
    META_INT("draw.read_n", c->read_n);
    META_INT("draw.write_n", c->write_n);
    META_INT("draw.enc", c->enc);
    META_INT("draw.dec", c->dec);
    META_INT("draw.z", c->z);
    META_INT("draw.attention", c->attention);
    META_INT("train.step", s->step);
    META_INT("train.batch", s->batch);
    META_INT("train.binarize", s->binarize);
    META_FLOAT("train.lr", s->lr);
    META_FLOAT("train.beta1", s->beta1);
    META_FLOAT("train.clip", s->clip);
    CHECK(k == 15);
    char seed[32];
    snprintf(seed, sizeof seed, "%" PRIu64, s->seed);
    meta[k++] = (SafetensorsMeta){"train.seed", seed};
    meta[k++] = (SafetensorsMeta){"train.data", s->data};
    meta[k++] = (SafetensorsMeta){"format", "attend-draw-1"};
#undef META_INT
#undef META_FLOAT
    const Block *blocks[3] = {params, m, v};
    const char *prefixes[3] = {"", "adam.m/", "adam.v/"};
    return safetensors_save(path, blocks, prefixes, m ? 3 : 1, meta, k, err);
}

static int meta_long(const SafetensorsFile *f, const char *path, const char *key, long *out,
                     Error *err) {
    const char *s = safetensors_meta(f, key);
    if (!s) return error_set(err, "%s: not a DRAW checkpoint (no \"%s\" in __metadata__)", path, key);
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end) return error_set(err, "%s: metadata %s = '%s' is not an integer", path, key, s);
    *out = v;
    return 0;
}

static int meta_float(const SafetensorsFile *f, const char *path, const char *key, float *out,
                      Error *err) {
    const char *s = safetensors_meta(f, key);
    if (!s) return error_set(err, "%s: no \"%s\" in __metadata__", path, key);
    char *end;
    float v = strtof(s, &end);
    if (end == s || *end || !isfinite(v)) return error_set(err, "%s: metadata %s = '%s' is not a number", path, key, s);
    *out = v;
    return 0;
}

// Reads the configuration and training state from a checkpoint's metadata.
static int read_state(const SafetensorsFile *f, const char *path, TrainState *s, Error *err) {
    memset(s, 0, sizeof *s);
    const char *fmt = safetensors_meta(f, "format");
    if (fmt && strncmp(fmt, "attend-draw-", 12) == 0 && strcmp(fmt, "attend-draw-1") != 0)
        return error_set(err, "%s: DRAW checkpoint layout '%s' is not supported (this build reads attend-draw-1)",
                         path, fmt);
    if (!fmt || strcmp(fmt, "attend-draw-1") != 0)
        return error_set(err, "%s: not a DRAW checkpoint (format '%s', expected attend-draw-1%s)",
                         path, fmt ? fmt : "missing", fmt && !strcmp(fmt, "attend-sat") ? "; this is a captioner model" : "");
    long v[12];
    static const char *const keys[] = {"draw.W", "draw.H", "draw.T", "draw.read_n", "draw.write_n",
                                       "draw.enc", "draw.dec", "draw.z", "draw.attention",
                                       "train.step", "train.batch", "train.binarize"};
    for (int i = 0; i < 12; i++) {
        if (meta_long(f, path, keys[i], &v[i], err)) return -1;
        if (v[i] < 0 || v[i] > 2000000000L)
            return error_set(err, "%s: metadata %s = %ld out of range", path, keys[i], v[i]);
    }
    s->cfg = (DrawConfig){.W = (int)v[0], .H = (int)v[1], .T = (int)v[2], .read_n = (int)v[3],
                          .write_n = (int)v[4], .enc = (int)v[5], .dec = (int)v[6], .z = (int)v[7],
                          .attention = v[8] != 0};
    s->step = v[9];
    s->batch = (int)v[10];
    s->binarize = v[11] != 0;
    if (meta_float(f, path, "train.lr", &s->lr, err) || meta_float(f, path, "train.beta1", &s->beta1, err) ||
        meta_float(f, path, "train.clip", &s->clip, err))
        return -1;
    const char *seed = safetensors_meta(f, "train.seed");
    if (!seed) return error_set(err, "%s: no \"train.seed\" in __metadata__", path);
    char *end;
    s->seed = strtoull(seed, &end, 10);
    if (end == seed || *end) return error_set(err, "%s: metadata train.seed = '%s' is not an integer", path, seed);
    const char *data = safetensors_meta(f, "train.data");
    snprintf(s->data, sizeof s->data, "%s", data ? data : "");
    Error e2;
    if (draw_config_check(&s->cfg, &e2)) return error_set(err, "%s: %s", path, e2.msg);
    if (s->batch < 1) return error_set(err, "%s: metadata train.batch = %d", path, s->batch);
    return 0;
}

// A model loaded for eval / generate / reconstruct.
typedef struct {
    TrainState state;
    Block params;
    DrawParams p;
} Loaded;

static int load_model(Loaded *m, const char *path, Error *err) {
    memset(m, 0, sizeof *m);
    SafetensorsFile f;
    if (safetensors_load(&f, path, err)) return -1;
    int rc = read_state(&f, path, &m->state, err);
    if (rc == 0) {
        draw_layout(&m->params, &m->p, &m->state.cfg);
        block_alloc(&m->params);
        rc = safetensors_read_block(&m->params, "", &f, path, err);
        if (rc) block_free(&m->params);
    }
    safetensors_free(&f);
    return rc;
}

// ---------------------------------------------------------------------------------------
// Data

static int load_split(ImageSet *set, const char *data, const char *root, Split split,
                      int binarize, Error *err) {
    if (mnist_load(set, data, root, split, err)) return -1;
    if (binarize && split != SPLIT_TRAIN) imageset_binarize_fixed(set, MNIST_FIXED_BINARIZE_SEED);
    return 0;
}

// Mean bound (and parts) of the first `limit` images of set (0 = all), batch B, noise
// from seed; with K > 1 also the importance-weighted NLL estimate from K samples.
typedef struct {
    double bound, recon, kl, nll_iw;
    int images;
} EvalResult;

static EvalResult evaluate(DrawWorker *w, int n_workers, int B, const DrawParams *p,
                           const DrawConfig *c, const ImageSet *set, int limit, int K,
                           uint64_t seed, float *xbuf, float *eps, double *logw_buf) {
    int n = limit > 0 && limit < set->n ? limit : set->n;
    Rng rng;
    rng_seed(&rng, seed);
    EvalResult r = {0};
    double iw_sum = 0.0;
    for (int start = 0; start < n; start += B) {
        int nb = n - start < B ? n - start : B;
        memcpy(xbuf, set->images + (size_t)start * set->dim, sizeof(float) * (size_t)nb * set->dim);
        for (int k = 0; k < (K > 1 ? K : 1); k++) {
            draw_noise_fill(eps, c, nb, &rng);
            double rec, kl;
            draw_forward_parallel(w, n_workers, p, c, xbuf, eps, nb, NULL, &rec, &kl,
                                  logw_buf + (size_t)k * B);
            r.recon += rec * nb;
            r.kl += kl * nb;
        }
        if (K > 1)
            for (int b = 0; b < nb; b++) {
                double mx = -INFINITY, s = 0.0;
                for (int k = 0; k < K; k++) mx = fmax(mx, logw_buf[(size_t)k * B + b]);
                for (int k = 0; k < K; k++) s += exp(logw_buf[(size_t)k * B + b] - mx);
                iw_sum += -(mx + log(s / K));
            }
    }
    int passes = K > 1 ? K : 1;
    r.images = n;
    r.recon /= (double)n * passes;
    r.kl /= (double)n * passes;
    r.bound = r.recon + r.kl;
    r.nll_iw = K > 1 ? iw_sum / n : NAN;
    return r;
}

// ---------------------------------------------------------------------------------------
// Pictures

typedef struct {
    int scale, cols, margin;
} FrameStyle;

static const float RED[3] = {1.0f, 0.15f, 0.1f}, GREEN[3] = {0.1f, 0.9f, 0.2f};

// One grid frame: n canvases (n, H, W) in logits (sigmoid applied; probabilities as they
// are when !logits), upscaled; with windows: write (red) and read (green) rectangles from
// params rows (n, 5) (NULL: none).
static Image render_frame(const float *canvas, int logits, int n, const DrawConfig *c,
                          const float *wparams, const float *rparams, const FrameStyle *st) {
    int W = c->W, H = c->H, s = st->scale, rgb = wparams || rparams;
    Image *tiles = xcalloc((size_t)n, sizeof *tiles);
    Image plane = image_new(1, H, W);
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < W * H; k++) {
            float v = canvas[(size_t)i * W * H + k];
            plane.data[k] = logits ? 1.0f / (1.0f + expf(-v)) : v;
        }
        Image big = image_resize(&plane, H * s, W * s, RESIZE_AREA);
        if (rgb) {
            tiles[i] = image_to_rgb(&big);
            image_free(&big);
            const float *pp[2] = {rparams, wparams};
            const float *col[2] = {GREEN, RED};
            int nn[2] = {c->read_n, c->write_n};
            for (int j = 0; j < 2; j++) {
                if (!pp[j]) continue;
                FilterbankWindow w = filterbank_window(pp[j] + (size_t)i * FILTERBANK_PARAMS, nn[j], W, H);
                // Pixel k's centre sits at (k + 0.5) s - 0.5 after upscaling.
                draw_rect(&tiles[i], (w.x0 + 0.5f) * s - 0.5f, (w.y0 + 0.5f) * s - 0.5f,
                          (w.x1 + 0.5f) * s - 0.5f, (w.y1 + 0.5f) * s - 0.5f, col[j], 1);
            }
        } else {
            tiles[i] = big;
        }
    }
    Image grid = tile_grid(tiles, n, st->cols, st->margin, 0.5f);
    for (int i = 0; i < n; i++) image_free(&tiles[i]);
    free(tiles);
    image_free(&plane);
    return grid;
}

// Writes DIR/step_01.png .. step_T.png, DIR/final.png and DIR/draw.gif from acts.canvas.
static int write_frames(const char *dir, const DrawActs *a, const DrawConfig *c, int n,
                        int windows_write, int windows_read, const FrameStyle *st, Error *err) {
    int digits = 2;
    for (int t = c->T; t >= 100; t /= 10) digits++;
    Image *frames = xcalloc((size_t)c->T, sizeof *frames);
    int rc = 0;
    char path[1200];
    for (int t = 0; t < c->T && rc == 0; t++) {
        const float *wp = windows_write && c->attention ? draw_at(a, a->wparams, t, FILTERBANK_PARAMS) : NULL;
        const float *rp = windows_read && c->attention ? draw_at(a, a->rparams, t, FILTERBANK_PARAMS) : NULL;
        frames[t] = render_frame(draw_at(a, a->canvas, t, c->W * c->H), 1, n, c, wp, rp, st);
        char num[16];
        int len = snprintf(num, sizeof num, "%d", t + 1);
        snprintf(path, sizeof path, "%s/step_%.*s%s.png", dir, digits > len ? digits - len : 0,
                 "0000000000", num);
        rc = write_png_image(path, &frames[t], err);
    }
    if (rc == 0) {
        Image fin = render_frame(draw_at(a, a->canvas, c->T - 1, c->W * c->H), 1, n, c, NULL, NULL, st);
        snprintf(path, sizeof path, "%s/final.png", dir);
        rc = write_png_image(path, &fin, err);
        image_free(&fin);
    }
    if (rc == 0) {
        snprintf(path, sizeof path, "%s/draw.gif", dir);
        rc = write_gif_images(path, frames, c->T, 8, err);
    }
    for (int t = 0; t < c->T; t++) image_free(&frames[t]);
    free(frames);
    return rc;
}

// Loss curve from DIR/log.csv (step, train_bound, valid_bound, seconds).
static int write_loss_plot(const char *csv, const char *png, Error *err) {
    FILE *fp = fopen(csv, "r");
    if (!fp) return error_set(err, "%s: %s", csv, strerror(errno));
    int cap = 256, nt = 0, nv = 0;
    float *tx = xmalloc(sizeof(float) * cap), *ty = xmalloc(sizeof(float) * cap);
    float *vx = xmalloc(sizeof(float) * cap), *vy = xmalloc(sizeof(float) * cap);
    char line[512];
    while (fgets(line, sizeof line, fp)) {
        char *f[4] = {0};
        int k = 0;
        char *p = line;
        f[k++] = p;
        while (*p && k < 4) {
            if (*p == ',') {
                *p = 0;
                f[k++] = p + 1;
            }
            p++;
        }
        if (k < 3) continue;
        char *end;
        double step = strtod(f[0], &end);
        if (end == f[0]) continue;  // the header
        if (nt == cap || nv == cap) {
            cap *= 2;
            tx = xrealloc(tx, sizeof(float) * cap), ty = xrealloc(ty, sizeof(float) * cap);
            vx = xrealloc(vx, sizeof(float) * cap), vy = xrealloc(vy, sizeof(float) * cap);
        }
        double a = strtod(f[1], &end);
        if (end != f[1]) tx[nt] = (float)step, ty[nt++] = (float)a;
        double b = strtod(f[2], &end);
        if (end != f[2]) vx[nv] = (float)step, vy[nv++] = (float)b;
    }
    fclose(fp);
    PlotSeries s[2] = {{"train bound", tx, ty, nt}, {"valid bound", vx, vy, nv}};
    PlotOptions o = {.title = "DRAW: negative log-likelihood bound", .xlabel = "step",
                     .ylabel = "nats per image"};
    int rc = plot_write_png(png, s, 2, &o, err);
    free(tx), free(ty), free(vx), free(vy);
    return rc;
}

// ---------------------------------------------------------------------------------------
// Subcommands

static int fail(const Error *err) {
    fprintf(stderr, "draw: %s\n", err->msg);
    return 1;
}


// Checks that every gradient is finite; names the first tensor that is not.
// Fault injection for tests/test_crash_safety.c: with ATTEND_FAULT_NAN_STEP=N in the
// environment, training sets the first gradient element of step N to NaN, so the
// non-finite stop below is exercised the same way on every build (a real divergence
// depends on the seed and on the floating-point code the compiler emits).
static long fault_nan_step(void) {
    const char *v = getenv("ATTEND_FAULT_NAN_STEP");
    return v && v[0] ? atol(v) : 0;
}

// Frees what cmd_train set up before it failed (all of it may still be empty) and fails.
static int train_setup_fail(const Error *err, SafetensorsFile *f, ImageSet *train, ImageSet *valid,
                            Block *params, Block *grads, Block *mom1, Block *mom2) {
    safetensors_free(f);
    imageset_free(train), imageset_free(valid);
    block_free(params), block_free(grads), block_free(mom1), block_free(mom2);
    return fail(err);
}

static int cmd_train(int argc, char **argv) {
    const char *data = "mnist", *root = "data", *out = NULL;
    int T = 64, read_n = 2, write_n = 5, hidden = 256, z = 100, batch = 100, threads = 1;
    int epochs = 0, valid_every = 500, valid_images = 0, log_every = 50, ckpt_every = 0;
    long steps = 0, seed = 1;
    double minutes = 0;
    float lr = 1e-3f, beta1 = 0.9f, clip = 10.0f;
    bool resume = false, no_attention = false, no_binarize = false, json = false;
    ArgSpec specs[] = {
        {"data", ARG_STRING, &data, "mnist, fashion-mnist, or an IDX image file", .metavar = "D"},
        {"data-root", ARG_STRING, &root, "folder holding mnist/ and fashion-mnist/", .metavar = "DIR"},
        {"out", ARG_STRING, &out, "output folder (model.safetensors, log.csv, loss.png)", .metavar = "DIR", .required = true},
        {"T", ARG_INT, &T, "glimpses (time steps)", .has_min = true, .min = 1, .has_max = true, .max = 1000},
        {"read", ARG_INT, &read_n, "read grid N (N x N)", .has_min = true, .min = 1, .has_max = true, .max = 64},
        {"write", ARG_INT, &write_n, "write grid N (N x N)", .has_min = true, .min = 1, .has_max = true, .max = 64},
        {"hidden", ARG_INT, &hidden, "encoder and decoder LSTM units", .has_min = true, .min = 1, .has_max = true, .max = 8192},
        {"z", ARG_INT, &z, "latent size per step", .has_min = true, .min = 1, .has_max = true, .max = 8192},
        {"batch", ARG_INT, &batch, "images per step", .has_min = true, .min = 1, .has_max = true, .max = 10000},
        {"lr", ARG_FLOAT, &lr, "Adam learning rate", .has_min = true, .min = 0, .min_exclusive = true, .has_max = true, .max = 1},
        {"beta1", ARG_FLOAT, &beta1, "Adam beta1", .has_min = true, .min = 0, .has_max = true, .max = 1, .max_exclusive = true},
        {"clip", ARG_FLOAT, &clip, "clip the global gradient norm at this (0: off)", .has_min = true, .min = 0},
        {"steps", ARG_LONG, &steps, "train until this many steps in total (0: use --epochs/--minutes)", .has_min = true, .min = 0},
        {"epochs", ARG_INT, &epochs, "train until this many epochs in total", .has_min = true, .min = 0},
        {"minutes", ARG_DOUBLE, &minutes, "stop after this much wall time in this run", .has_min = true, .min = 0},
        {"seed", ARG_LONG, &seed, "seed of initialisation, data order, binarisation and noise", .has_min = true, .min = 0},
        {"resume", ARG_FLAG, &resume, "continue from OUT/model.safetensors (its config wins)", .given = NULL},
        {"no-attention", ARG_FLAG, &no_attention, "read the whole image and write the whole canvas", .given = NULL},
        {"no-binarize", ARG_FLAG, &no_binarize, "keep grey levels (Bernoulli likelihood on intensities)", .given = NULL},
        {"threads", ARG_INT, &threads, "threads: data-parallel workers over the batch, one GEMM thread each", .has_min = true, .min = 1, .has_max = true, .max = 256},
        {"valid-every", ARG_INT, &valid_every, "steps between validation bounds (and checkpoints)", .has_min = true, .min = 1},
        {"valid-images", ARG_INT, &valid_images, "validation images used (0: all)", .has_min = true, .min = 0},
        {"log-every", ARG_INT, &log_every, "steps between rows of log.csv", .has_min = true, .min = 1},
        {"checkpoint-every", ARG_INT, &ckpt_every, "steps between checkpoints (0: with validation)", .has_min = true, .min = 0},
        {"json", ARG_FLAG, &json, "print the final figures as one JSON object", .given = NULL},
    };
    int code;
    if (args_parse_for_command(argc, argv, specs, ARGS_LEN(specs), "draw train --data D --out DIR [flags]", "draw", &code))
        return code;
    Error err;
    if (steps == 0 && epochs == 0 && minutes == 0) epochs = 1;
    gemm_set_threads(threads);

    char ckpt[1100], csv[1100], png[1100];
    snprintf(ckpt, sizeof ckpt, "%s/model.safetensors", out);
    snprintf(csv, sizeof csv, "%s/log.csv", out);
    snprintf(png, sizeof png, "%s/loss.png", out);

    TrainState st = {0};
    SafetensorsFile resume_file = {0};
    ImageSet train = {0}, valid = {0};
    Block params = {0}, grads = {0}, mom1 = {0}, mom2 = {0};
    int have_resume = 0;
    if (resume && file_exists(ckpt)) {
        if (safetensors_load(&resume_file, ckpt, &err) || read_state(&resume_file, ckpt, &st, &err))
            return train_setup_fail(&err, &resume_file, &train, &valid, &params, &grads, &mom1, &mom2);
        have_resume = 1;
    } else if (resume) {
        fprintf(stderr, "draw: %s: no checkpoint yet; starting from scratch\n", ckpt);
    }

    int binarize = have_resume ? st.binarize : !no_binarize;
    const char *dname = have_resume && st.data[0] ? st.data : data;
    if (mnist_load_splits(&train, &valid, NULL, dname, root, &err)) return train_setup_fail(&err, &resume_file, &train, &valid, &params, &grads, &mom1, &mom2);
    if (binarize) imageset_binarize_fixed(&valid, MNIST_FIXED_BINARIZE_SEED);
    if (!have_resume) {
        st.cfg = (DrawConfig){.W = train.cols, .H = train.rows, .T = T, .read_n = read_n,
                              .write_n = write_n, .enc = hidden, .dec = hidden, .z = z,
                              .attention = !no_attention};
        st.seed = (uint64_t)seed;
        st.batch = batch;
        st.lr = lr, st.beta1 = beta1, st.clip = clip;
        st.binarize = binarize;
        snprintf(st.data, sizeof st.data, "%s", data);
        if (draw_config_check(&st.cfg, &err)) return train_setup_fail(&err, &resume_file, &train, &valid, &params, &grads, &mom1, &mom2);
    } else if (st.cfg.W != train.cols || st.cfg.H != train.rows) {
        error_set(&err, "%s: model is for %dx%d images, %s has %dx%d", ckpt, st.cfg.W, st.cfg.H,
                  dname, train.cols, train.rows);
        return train_setup_fail(&err, &resume_file, &train, &valid, &params, &grads, &mom1, &mom2);
    }
    const DrawConfig *c = &st.cfg;
    int B = st.batch;
    if (train.n < B) {
        error_set(&err, "--batch: %d is more than the %d training images of %s", B, train.n, dname);
        return train_setup_fail(&err, &resume_file, &train, &valid, &params, &grads, &mom1, &mom2);
    }
    if (make_dirs(out, &err)) return train_setup_fail(&err, &resume_file, &train, &valid, &params, &grads, &mom1, &mom2);
    atomic_remove_stale(out);

    DrawParams p, g, pm, pv;
    draw_layout(&params, &p, c);
    draw_layout(&grads, &g, c);
    draw_layout(&mom1, &pm, c);
    draw_layout(&mom2, &pv, c);
    block_alloc(&params), block_alloc(&grads), block_alloc(&mom1), block_alloc(&mom2);
    if (have_resume) {
        if (safetensors_read_block(&params, "", &resume_file, ckpt, &err) ||
            safetensors_read_block(&mom1, "adam.m/", &resume_file, ckpt, &err) ||
            safetensors_read_block(&mom2, "adam.v/", &resume_file, ckpt, &err))
            return train_setup_fail(&err, &resume_file, &train, &valid, &params, &grads, &mom1, &mom2);
        safetensors_free(&resume_file);
    } else {
        Rng init;
        rng_seed(&init, mix64(st.seed, 0x1417));
        draw_init(&p, c, &init);
    }
    AdamConfig adam = adam_defaults(st.lr);
    adam.beta1 = st.beta1;

    // Data parallelism (models/draw.h): one worker per thread, each with one GEMM thread.
    const int n_workers = draw_worker_count(threads, B);
    DrawWorker *workers = xcalloc((size_t)n_workers, sizeof *workers);
    draw_workers_alloc(workers, n_workers, c, B);
    gemm_set_threads(threads / n_workers);
    float *eps = xmalloc(sizeof(float) * (size_t)c->T * B * c->z);
    int dim = c->W * c->H;
    float *x = xmalloc(sizeof(float) * (size_t)B * dim);
    double *logw = xmalloc(sizeof(double) * (size_t)B);
    int bpe = train.n / B;  // batches per epoch (the remainder is dropped each epoch)
    int *perm = xmalloc(sizeof(int) * (size_t)train.n);
    long perm_epoch = -1;
    const long fault_step = fault_nan_step();
    long target = steps > 0 ? steps : (epochs > 0 ? (long)epochs * bpe : 0);
    double budget = minutes * 60.0;
    if (ckpt_every == 0) ckpt_every = valid_every;

    CsvLog log;
    if (csvlog_open(&log, csv, "step,train_bound,valid_bound,seconds", have_resume, &err)) {
        draw_workers_free(workers, n_workers);
        free(workers), free(eps), free(x), free(logw), free(perm);
        return train_setup_fail(&err, &resume_file, &train, &valid, &params, &grads, &mom1, &mom2);
    }

    fprintf(stderr, "draw train: %s %dx%d, T %d, %s, hidden %d, z %d, batch %d, lr %g, %s; "
            "gemm %s, %d thread(s); step %ld%s\n",
            dname, c->W, c->H, c->T, c->attention ? "attention" : "no attention", c->enc, c->z,
            B, st.lr, binarize ? "dynamically binarised" : "grey levels", gemm_backend(), threads,
            st.step, target ? "" : " (time budget)");
    if (c->attention)
        fprintf(stderr, "draw train: read %dx%d, write %dx%d\n", c->read_n, c->read_n, c->write_n, c->write_n);

    RunInfo run_info;  // (report) OUT/run.json: command line, commit, machine, wall time
    run_info_begin(&run_info, out, "draw", argc, argv, threads, have_resume);
    Progress pr;
    progress_start(&pr, "train", target > st.step ? target - st.step : 0, budget);
    double t0 = timer_now(), train_time = 0.0, bound_acc = 0.0, last_valid = NAN, last_train = NAN;
    long acc_n = 0, done = 0, start_step = st.step;
    int rc = 0;
    char status[96] = "";  // stays empty when a resumed run has no step left
    while ((target == 0 || st.step < target) && (budget == 0 || timer_now() - t0 < budget)) {
        double ts = timer_now();
        long e = st.step / bpe, i = st.step % bpe;
        if (e != perm_epoch) {
            for (int k = 0; k < train.n; k++) perm[k] = k;
            Rng er;
            rng_seed(&er, mix64(st.seed, 0xE90C0000ULL + (uint64_t)e));
            rng_shuffle(&er, perm, train.n);
            perm_epoch = e;
        }
        Rng sr;
        rng_seed(&sr, mix64(mix64(st.seed, 0x5DE9), (uint64_t)st.step));
        imageset_batch(x, &train, perm + (size_t)i * B, B, binarize ? &sr : NULL);
        draw_noise_fill(eps, c, B, &sr);
        double bound = draw_forward_parallel(workers, n_workers, &p, c, x, eps, B, &grads, NULL,
                                             NULL, NULL);
        if (!isfinite(bound)) {
            error_set(&err, "step %ld: the bound is %g; stopping (last good checkpoint: %s)",
                      st.step + 1, bound, ckpt);
            rc = 1;
            break;
        }
        if (st.step + 1 == fault_step) grads.data[0] = NAN;
        const char *bad = block_first_nonfinite(&grads);
        if (bad) {
            error_set(&err, "step %ld: gradient of %s is not finite; stopping (last good checkpoint: %s)",
                      st.step + 1, bad, ckpt);
            rc = 1;
            break;
        }
        clip_global_norm(grads.data, grads.numel, st.clip);
        st.step++;
        adam_update(params.data, grads.data, mom1.data, mom2.data, params.numel, &adam, st.step, st.lr);
        train_time += timer_now() - ts;
        done++;
        bound_acc += bound;
        acc_n++;
        int is_last = (target && st.step >= target) || (budget > 0 && timer_now() - t0 >= budget);
        int do_valid = st.step % valid_every == 0 || is_last;
        if (st.step % log_every == 0 || do_valid) {
            last_train = bound_acc / acc_n;
            if (do_valid) {
                EvalResult r = evaluate(workers, n_workers, B, &p, c, &valid, valid_images, 1,
                                        EVAL_NOISE_SEED, x, eps, logw);
                last_valid = r.bound;
            }
            double row[4] = {(double)st.step, last_train, do_valid ? last_valid : NAN, timer_now() - t0};
            csvlog_row(&log, row, 4);
            bound_acc = 0.0;
            acc_n = 0;
        }
        if (st.step % ckpt_every == 0 || is_last) {
            if (save_checkpoint(ckpt, &st, &params, &mom1, &mom2, &err)) {
                rc = 1;
                break;
            }
        }
        snprintf(status, sizeof status, "bound %.2f nats, valid %.2f", bound, last_valid);
        progress_update(&pr, st.step - start_step, status);
    }
    progress_end(&pr, st.step - start_step, status);
    csvlog_close(&log);
    if (rc == 0 && done == 0 && !file_exists(ckpt))
        rc = save_checkpoint(ckpt, &st, &params, &mom1, &mom2, &err) ? 1 : 0;
    if (rc == 0 && write_loss_plot(csv, png, &err)) rc = 1;
    double ips = train_time > 0 ? (double)done * B / train_time : 0.0;
    run_info_end(&run_info, rc, st.step, ips);  // (report)
    if (rc == 0) {
        // A resumed run with no step left measured nothing: no bound to report.
        char valid_text[48] = "no validation in this run", train_json[32] = "null",
             valid_json[32] = "null";  // JSON has no NaN
        if (isfinite(last_valid)) {
            snprintf(valid_text, sizeof valid_text, "valid bound %.3f nats", last_valid);
            snprintf(valid_json, sizeof valid_json, "%.6g", last_valid);
        }
        if (isfinite(last_train)) snprintf(train_json, sizeof train_json, "%.6g", last_train);
        fprintf(stderr, "draw train: %ld steps in %.1f s (%.1f images/s); %s; wrote %s\n", done,
                timer_now() - t0, ips, valid_text, ckpt);
        if (json)
            printf("{\"steps\": %ld, \"final_loss\": %s, \"train_bound\": %s, "
                   "\"valid_bound\": %s, \"images_per_s\": %.6g, \"seconds\": %.6g, "
                   "\"model\": \"%s\"}\n",
                   st.step, train_json, train_json, valid_json, ips, timer_now() - t0, ckpt);
    }
    draw_workers_free(workers, n_workers);
    block_free(&params), block_free(&grads), block_free(&mom1), block_free(&mom2);
    free(workers), free(eps), free(x), free(logw), free(perm);
    imageset_free(&train), imageset_free(&valid);
    return rc ? fail(&err) : 0;
}

static int cmd_eval(int argc, char **argv) {
    const char *model = NULL, *data = "mnist", *root = "data";
    int split = 1, samples = 1, batch = 100, threads = 1, limit = 0;
    long seed = EVAL_NOISE_SEED;
    bool json = false;
    static const char *const splits[] = {"valid", "test", NULL};
    ArgSpec specs[] = {
        {"model", ARG_STRING, &model, "checkpoint (DIR/model.safetensors)", .metavar = "PATH", .required = true},
        {"data", ARG_STRING, &data, "mnist, fashion-mnist, or an IDX image file", .metavar = "D"},
        {"data-root", ARG_STRING, &root, "folder holding mnist/ and fashion-mnist/", .metavar = "DIR"},
        {"split", ARG_CHOICE, &split, "which split", .choices = splits},
        {"samples", ARG_INT, &samples, "K > 1: importance-weighted NLL from K samples per image", .has_min = true, .min = 1, .has_max = true, .max = 100000},
        {"batch", ARG_INT, &batch, "images per forward pass", .has_min = true, .min = 1, .has_max = true, .max = 10000},
        {"limit", ARG_INT, &limit, "evaluate only the first N images (0: all)", .has_min = true, .min = 0},
        {"seed", ARG_LONG, &seed, "noise seed", .has_min = true, .min = 0},
        {"threads", ARG_INT, &threads, "threads: data-parallel workers over the batch, one GEMM thread each", .has_min = true, .min = 1, .has_max = true, .max = 256},
        {"json", ARG_FLAG, &json, "print one JSON object", .given = NULL},
    };
    int code;
    if (args_parse_for_command(argc, argv, specs, ARGS_LEN(specs), "draw eval --model PATH --data D [flags]", "draw", &code))
        return code;
    Error err;
    gemm_set_threads(threads);
    Loaded m;
    if (load_model(&m, model, &err)) return fail(&err);
    const DrawConfig *c = &m.state.cfg;
    ImageSet set = {0};
    Split sp = split == 0 ? SPLIT_VALID : SPLIT_TEST;
    if (load_split(&set, data, root, sp, m.state.binarize, &err)) {
        block_free(&m.params);
        return fail(&err);
    }
    if (set.cols != c->W || set.rows != c->H) {
        error_set(&err, "%s: model is for %dx%d images, %s has %dx%d", model, c->W, c->H, data,
                  set.cols, set.rows);
        block_free(&m.params);
        imageset_free(&set);
        return fail(&err);
    }
    int B = batch < set.n ? batch : set.n;
    const int n_workers = draw_worker_count(threads, B);
    DrawWorker *workers = xcalloc((size_t)n_workers, sizeof *workers);
    draw_workers_alloc(workers, n_workers, c, B);
    gemm_set_threads(threads / n_workers);
    float *eps = xmalloc(sizeof(float) * (size_t)c->T * B * c->z);
    float *x = xmalloc(sizeof(float) * (size_t)B * set.dim);
    double *logw = xmalloc(sizeof(double) * (size_t)B * samples);
    double t0 = timer_now();
    EvalResult r = evaluate(workers, n_workers, B, &m.p, c, &set, limit, samples,
                            (uint64_t)seed, x, eps, logw);
    double secs = timer_now() - t0;
    const char *bin = m.state.binarize ? "binarised once, seed 0x5EED" : "grey levels";
    if (json) {
        printf("{\"nll_bound\": %.6f, \"recon\": %.6f, \"kl\": %.6f, \"images\": %d, "
               "\"split\": \"%s\", \"data\": \"%s\", \"binarization\": \"%s\", \"samples\": %d",
               r.bound, r.recon, r.kl, r.images, splits[split], data, bin, samples);
        if (samples > 1) printf(", \"nll_iw\": %.6f", r.nll_iw);
        printf(", \"step\": %ld, \"seconds\": %.3f}\n", m.state.step, secs);
    } else {
        printf("%s %s (%s): bound %.3f nats per image (reconstruction %.3f + KL %.3f), %d images\n",
               data, splits[split], bin, r.bound, r.recon, r.kl, r.images);
        if (samples > 1)
            printf("importance-weighted NLL estimate (K = %d): %.3f nats\n", samples, r.nll_iw);
    }
    draw_workers_free(workers, n_workers);
    free(workers), free(eps), free(x), free(logw);
    imageset_free(&set);
    block_free(&m.params);
    return 0;
}

static int cmd_generate(int argc, char **argv) {
    const char *model = NULL, *out = NULL;
    int count = 64, scale = 2, cols = 0, threads = 1;
    long seed = 1;
    bool show = false;
    ArgSpec specs[] = {
        {"model", ARG_STRING, &model, "checkpoint (DIR/model.safetensors)", .metavar = "PATH", .required = true},
        {"out", ARG_STRING, &out, "output folder (step_NN.png, final.png, draw.gif)", .metavar = "DIR", .required = true},
        {"count", ARG_INT, &count, "samples", .has_min = true, .min = 1, .has_max = true, .max = 1024},
        {"seed", ARG_LONG, &seed, "sampling seed", .has_min = true, .min = 0},
        {"show-attention", ARG_FLAG, &show, "draw each sample's write window as a red rectangle", .given = NULL},
        {"scale", ARG_INT, &scale, "pixels per image pixel", .has_min = true, .min = 1, .has_max = true, .max = 16},
        {"cols", ARG_INT, &cols, "tiles per row (0: square grid)", .has_min = true, .min = 0},
        {"threads", ARG_INT, &threads, "BLAS threads", .has_min = true, .min = 1, .has_max = true, .max = 256},
    };
    int code;
    if (args_parse_for_command(argc, argv, specs, ARGS_LEN(specs), "draw generate --model PATH --out DIR [flags]", "draw", &code))
        return code;
    Error err;
    gemm_set_threads(threads);
    Loaded m;
    if (load_model(&m, model, &err)) return fail(&err);
    if (make_dirs(out, &err)) {
        block_free(&m.params);
        return fail(&err);
    }
    const DrawConfig *c = &m.state.cfg;
    if (show && !c->attention) fprintf(stderr, "draw: --show-attention: the model has no attention; no windows\n");
    DrawActs acts;
    draw_acts_alloc(&acts, c, count);
    Rng rng;
    rng_seed(&rng, (uint64_t)seed);
    draw_generate(&acts, &m.p, c, count, &rng);
    FrameStyle st = {.scale = scale, .cols = cols ? cols : (int)ceil(sqrt((double)count)), .margin = 2};
    int rc = write_frames(out, &acts, c, count, show, 0, &st, &err);
    if (rc == 0) fprintf(stderr, "draw generate: wrote %d samples, %d steps, to %s/step_*.png, final.png, draw.gif\n", count, c->T, out);
    draw_acts_free(&acts);
    block_free(&m.params);
    return rc ? fail(&err) : 0;
}

static int cmd_reconstruct(int argc, char **argv) {
    const char *model = NULL, *out = NULL, *data = "mnist", *root = "data";
    int count = 16, scale = 2, cols = 0, split = 1, threads = 1;
    long seed = 1;
    static const char *const splits[] = {"valid", "test", NULL};
    ArgSpec specs[] = {
        {"model", ARG_STRING, &model, "checkpoint (DIR/model.safetensors)", .metavar = "PATH", .required = true},
        {"data", ARG_STRING, &data, "mnist, fashion-mnist, or an IDX image file", .metavar = "D"},
        {"data-root", ARG_STRING, &root, "folder holding mnist/ and fashion-mnist/", .metavar = "DIR"},
        {"split", ARG_CHOICE, &split, "which split", .choices = splits},
        {"out", ARG_STRING, &out, "output folder (input.png, step_NN.png, final.png, draw.gif)", .metavar = "DIR", .required = true},
        {"count", ARG_INT, &count, "images (the first of the split)", .has_min = true, .min = 1, .has_max = true, .max = 1024},
        {"seed", ARG_LONG, &seed, "noise seed", .has_min = true, .min = 0},
        {"scale", ARG_INT, &scale, "pixels per image pixel", .has_min = true, .min = 1, .has_max = true, .max = 16},
        {"cols", ARG_INT, &cols, "tiles per row (0: square grid)", .has_min = true, .min = 0},
        {"threads", ARG_INT, &threads, "BLAS threads", .has_min = true, .min = 1, .has_max = true, .max = 256},
    };
    int code;
    if (args_parse_for_command(argc, argv, specs, ARGS_LEN(specs), "draw reconstruct --model PATH --data D --out DIR [flags]", "draw", &code))
        return code;
    Error err;
    gemm_set_threads(threads);
    Loaded m;
    if (load_model(&m, model, &err)) return fail(&err);
    const DrawConfig *c = &m.state.cfg;
    ImageSet set = {0};
    if (load_split(&set, data, root, split == 0 ? SPLIT_VALID : SPLIT_TEST, m.state.binarize, &err)) {
        block_free(&m.params);
        return fail(&err);
    }
    if (set.cols != c->W || set.rows != c->H) {
        error_set(&err, "%s: model is for %dx%d images, %s has %dx%d", model, c->W, c->H, data, set.cols, set.rows);
        block_free(&m.params), imageset_free(&set);
        return fail(&err);
    }
    if (count > set.n) count = set.n;
    int rc = make_dirs(out, &err);
    DrawActs acts;
    draw_acts_alloc(&acts, c, count);
    if (rc == 0) {
        Rng rng;
        rng_seed(&rng, (uint64_t)seed);
        draw_fill_noise(&acts, c, count, &rng);
        double rec, kl, bound = draw_forward(&acts, &m.p, c, set.images, count, &rec, &kl);
        FrameStyle st = {.scale = scale, .cols = cols ? cols : (int)ceil(sqrt((double)count)), .margin = 2};
        char path[1100];
        snprintf(path, sizeof path, "%s/input.png", out);
        Image in = render_frame(set.images, 0, count, c, NULL, NULL, &st);
        rc = write_png_image(path, &in, &err);
        image_free(&in);
        if (rc == 0) rc = write_frames(out, &acts, c, count, 1, 1, &st, &err);
        if (rc == 0)
            fprintf(stderr, "draw reconstruct: %d images, bound %.2f nats (recon %.2f + KL %.2f); wrote %s/input.png, step_*.png, draw.gif%s\n",
                    count, bound, rec, kl, out, c->attention ? " (read windows green, write red)" : "");
    }
    draw_acts_free(&acts);
    imageset_free(&set);
    block_free(&m.params);
    return rc ? fail(&err) : 0;
}

static void overview(FILE *f) {
    fprintf(f,
            "usage: draw COMMAND [flags]   (draw COMMAND --help for its flags)\n"
            "  train        train DRAW; writes OUT/model.safetensors, log.csv, loss.png\n"
            "  eval         negative log-likelihood bound (nats per image) of a split\n"
            "  generate     sample from the prior: step_NN.png grids, final.png, draw.gif\n"
            "  reconstruct  the same frames for data images, with read and write windows\n"
            "  report       write RUN/report.html: a run's configuration, curve, bound, pictures\n");
}

int main(int argc, char **argv) {
    static const char *const names[] = {"train", "eval", "generate", "reconstruct", "report"};
    int which;
    Error err;
    int r = args_subcommand(argc, argv, names, 5, &which, &err);
    if (r == ARGS_HELP) {
        overview(stdout);
        return 0;
    }
    if (r == ARGS_ERROR) {
        fprintf(stderr, "draw: %s\n", err.msg);
        return 2;
    }
    switch (which) {
    case 0: return cmd_train(argc - 1, argv + 1);
    case 1: return cmd_eval(argc - 1, argv + 1);
    case 2: return cmd_generate(argc - 1, argv + 1);
    case 4: return draw_report_main(argc - 1, argv + 1);
    default: return cmd_reconstruct(argc - 1, argv + 1);
    }
}
