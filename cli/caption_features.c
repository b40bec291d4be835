#include "cli/caption_features.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/caption_finetune.h"
#include "cli/threads.h"
#include "core/check.h"
#include "core/fileio.h"
#include "core/gemm.h"
#include "core/progress.h"
#include "core/timer.h"
#include "datasets/captions.h"
#include "vision/image.h"
#include "vision/preprocess.h"
#include "core/text_escape.h"

// ---------------------------------------------------------------------------------------
// The encoder a model records

void encoder_record_from_cache(EncoderRecord *r, const FeatCache *c) {
    memset(r, 0, sizeof *r);
    snprintf(r->spec, sizeof r->spec, "%s", c->encoder);
    snprintf(r->sha256, sizeof r->sha256, "%s", c->encoder_sha256);
    snprintf(r->weights, sizeof r->weights, "%s", c->encoder_weights);
    snprintf(r->preprocess, sizeof r->preprocess, "%s", c->preprocess);
    r->image_size = c->image_size;
    snprintf(r->image_size_text, sizeof r->image_size_text, "%d", r->image_size);
}

int encoder_record_read(EncoderRecord *r, const char *model_path, Error *err) {
    memset(r, 0, sizeof *r);
    SafetensorsFile f;
    if (safetensors_open(&f, model_path, err)) return -1;
    const char *spec = safetensors_meta(&f, "encoder"), *sha = safetensors_meta(&f, "encoder.sha256");
    const char *w = safetensors_meta(&f, "encoder.weights"), *pre = safetensors_meta(&f, "preprocess");
    const char *is = safetensors_meta(&f, "encoder.image_size");
    int rc = 0;
    if (spec) {
        if (!sha || !w || !pre || !is || atoi(is) < 1)
            rc = error_set(err, "%s: encoder record incomplete (encoder.sha256, encoder.weights, "
                                "preprocess, encoder.image_size)", model_path);
        else {
            snprintf(r->spec, sizeof r->spec, "%s", spec);
            snprintf(r->sha256, sizeof r->sha256, "%s", sha);
            snprintf(r->weights, sizeof r->weights, "%s", w);
            snprintf(r->preprocess, sizeof r->preprocess, "%s", pre);
            r->image_size = atoi(is);
            snprintf(r->image_size_text, sizeof r->image_size_text, "%d", r->image_size);
            const char *ft = safetensors_meta(&f, "finetune"), *lr = safetensors_meta(&f, "finetune.lr");
            snprintf(r->finetune, sizeof r->finetune, "%s", ft ? ft : "");
            snprintf(r->finetune_lr, sizeof r->finetune_lr, "%s", lr ? lr : "");
        }
    }
    safetensors_free(&f);
    return rc;
}

int encoder_record_meta(const EncoderRecord *r, SafetensorsMeta *meta) {
    if (!r || !r->spec[0]) return 0;
    meta[0] = (SafetensorsMeta){"encoder", r->spec};
    meta[1] = (SafetensorsMeta){"encoder.sha256", r->sha256};
    meta[2] = (SafetensorsMeta){"encoder.weights", r->weights};
    meta[3] = (SafetensorsMeta){"preprocess", r->preprocess};
    meta[4] = (SafetensorsMeta){"encoder.image_size", r->image_size_text};
    if (!r->finetune[0]) return 5;
    meta[5] = (SafetensorsMeta){"finetune", r->finetune};
    meta[6] = (SafetensorsMeta){"finetune.lr", r->finetune_lr};
    return 7;
}

int encoder_record_check(const EncoderRecord *model, const EncoderRecord *other,
                         const char *model_path, const char *other_path, int is_cache, Error *err) {
    const char *what = NULL, *a = NULL, *b = NULL;
    char ia[16], ib[16];
    if (strcmp(model->spec, other->spec)) what = "encoder", a = model->spec, b = other->spec;
    else if (strcmp(model->sha256, other->sha256))
        what = "encoder weights (SHA-256)", a = model->sha256, b = other->sha256;
    else if (model->image_size != other->image_size) {
        snprintf(ia, sizeof ia, "%d", model->image_size);
        snprintf(ib, sizeof ib, "%d", other->image_size);
        what = "image size", a = ia, b = ib;
    } else if (strcmp(model->preprocess, other->preprocess))
        what = "preprocessing", a = model->preprocess, b = other->preprocess;
    if (!what) return 0;
    if (!is_cache)
        return error_set(err, "%s: another %s than %s was trained on (these weights: '%.70s', the "
                              "model's: '%.70s')",
                         other_path, what, model_path, b, a);
    return error_set(err, "%s: made with another %s than %s (cache: '%.70s', model: '%.70s')",
                     other_path, what, model_path, b, a);
}

// ---------------------------------------------------------------------------------------
// train and eval on a cache

int caption_features_setup_train(SatConfig *cfg, EncoderRecord *rec, const CaptionData *d,
                                 const char *features_path, const SatConfig *saved,
                                 const char *saved_path, Error *err) {
    memset(rec, 0, sizeof *rec);
    const FeatCache *c = caption_data_features(d);
    if (!c) {
        if (saved && saved->feat_L > 0)
            return error_set(err, "%s: the model trains on cached features: give --features",
                             saved_path);
        return 0;
    }
    encoder_record_from_cache(rec, c);
    if (saved) {
        EncoderRecord have;
        if (saved->feat_L == 0)
            return error_set(err, "%s: the model has its own CNN; --features needs a model "
                                  "trained on features", saved_path);
        if (encoder_record_read(&have, saved_path, err)) return -1;
        if (saved->feat_L != c->L || saved->feat_D != c->D)
            return error_set(err, "%s: annotations %d x %d, the model %s expects %d x %d",
                             features_path, c->L, c->D, saved_path, saved->feat_L, saved->feat_D);
        return encoder_record_check(&have, rec, saved_path, features_path, 1, err);
    }
    cfg->feat_L = c->L;
    cfg->feat_D = c->D;
    cfg->image_size = c->image_size;
    return 0;
}

int caption_features_check_eval(const SatConfig *m, const char *model_path, const CaptionData *d,
                                const char *features_path, Error *err) {
    const FeatCache *c = caption_data_features(d);
    if (m->feat_L > 0 && !features_path) {  // a fine-tuned encoder runs in eval itself
        EncoderRecord ft;
        if (encoder_record_read(&ft, model_path, err)) return -1;
        if (ft.finetune[0]) return 0;
    }
    if (!c && m->feat_L > 0)
        return error_set(err, "%s: the model reads cached features: give --features (made by "
                              "caption features with its encoder)", model_path);
    if (!c) return 0;
    if (m->feat_L == 0)
        return error_set(err, "%s: the model has its own CNN and reads images, not --features",
                         model_path);
    if (m->feat_L != c->L || m->feat_D != c->D)
        return error_set(err, "%s: annotations %d x %d, the model %s expects %d x %d",
                         features_path, c->L, c->D, model_path, m->feat_L, m->feat_D);
    EncoderRecord have, rec;
    if (encoder_record_read(&have, model_path, err)) return -1;
    encoder_record_from_cache(&rec, c);
    return encoder_record_check(&have, &rec, model_path, features_path, 1, err);
}

// ---------------------------------------------------------------------------------------
// predict: the encoder on new images

int caption_encoder_arg_split(char *arch, const char **file, const char *arg, Error *err) {
    const char *colon = strchr(arg, ':');
    if (!colon || colon == arg || !colon[1] || colon - arg >= 64)
        return error_set(err, "--encoder: expected ARCH:FILE (e.g. vgg19:vgg19.safetensors), got "
                              "'%.80s'", arg);
    memcpy(arch, arg, (size_t)(colon - arg));
    arch[colon - arg] = 0;
    *file = colon + 1;
    return 0;
}

int caption_annotator_open(CaptionAnnotator *a, const SatConfig *cfg, const char *model_path,
                           const char *encoder_arg, Error *err) {
    memset(a, 0, sizeof *a);
    if (encoder_record_read(&a->rec, model_path, err)) return -1;
    if (!a->rec.spec[0])
        return error_set(err, "%s: the model records no encoder", model_path);
    char arch[64];
    const char *file = a->rec.weights;
    snprintf(arch, sizeof arch, "%s", a->rec.spec);
    if (encoder_arg && caption_encoder_arg_split(arch, &file, encoder_arg, err)) return -1;
    if (encoder_load(&a->enc, arch, file, err)) {
        if (!encoder_arg) error_prefix(err, "the encoder recorded in %s (give --encoder ARCH:FILE)", model_path);
        return -1;
    }
    char spec[64];
    encoder_spec_format(spec, sizeof spec, encoder_spec(a->enc));
    EncoderRecord now = a->rec;
    snprintf(now.spec, sizeof now.spec, "%s", spec);
    snprintf(now.sha256, sizeof now.sha256, "%s", encoder_weights_sha256(a->enc));
    if (encoder_record_check(&a->rec, &now, model_path, file, 0, err)) {
        caption_annotator_close(a);
        return -1;
    }
    a->S = a->rec.image_size;
    int G = encoder_grid_size(a->enc, a->S);
    a->L = G * G;
    a->D = encoder_dim(a->enc);
    if (a->L != cfg->feat_L || a->D != cfg->feat_D) {
        error_set(err, "%s: gives %d x %d annotations at %d px, the model %s expects %d x %d", file,
                  a->L, a->D, a->S, model_path, cfg->feat_L, cfg->feat_D);
        caption_annotator_close(a);
        return -1;
    }
    a->resize = imagenet_resize_for(a->S);
    if (a->rec.finetune[0] && caption_finetune_load_stage(a->enc, model_path, err)) {
        caption_annotator_close(a);
        return -1;
    }
    encoder_workspace_alloc(&a->ws, a->enc, a->S, 1, 1, ENCODER_CONV_AUTO);
    a->input = xmalloc((size_t)3 * a->S * a->S * sizeof(float));
    return 0;
}

int caption_annotator_run(CaptionAnnotator *a, float *annot, const char *path, Error *err) {
    if (a->rec.finetune[0]) {  // the preprocessing of its training (cli/caption_finetune.h)
        if (caption_load_image(a->input, path, a->S, err)) return -1;
        caption_finetune_normalize(a->input, a->S);
        encoder_forward(a->enc, &a->ws, annot, a->input, 1);
        return 0;
    }
    Image img;
    if (image_load(path, &img, 3, err)) return -1;
    imagenet_preprocess(a->input, &img, a->S, a->resize);
    image_free(&img);
    encoder_forward(a->enc, &a->ws, annot, a->input, 1);
    return 0;
}

void caption_annotator_close(CaptionAnnotator *a) {
    if (a->enc) {
        if (a->ws.mem) encoder_workspace_free(&a->ws);
        encoder_free(a->enc);
    }
    free(a->input);
    memset(a, 0, sizeof *a);
}

// ---------------------------------------------------------------------------------------
// caption features

typedef struct {
    const char *encoder, *data, *out, *dtype;
    int image_size, threads, group, batch;
    bool quiet, threads_given;
} FeaturesFlags;

static int parse_features_flags(FeaturesFlags *f, int argc, char **argv, int *code) {
    *f = (FeaturesFlags){.dtype = "f16", .image_size = 224, .threads = threads_available(),
                         .group = 4, .batch = 0};
    ArgSpec specs[] = {
        {"encoder", ARG_STRING, &f->encoder, "pretrained encoder: vgg16 | vgg19 | resnet18 ... resnet152[@layer3|@layer4], then ':' and its safetensors weights", .metavar = "ARCH:FILE", .required = true},
        {"data", ARG_STRING, &f->data, "flickr8k:DIR | coco:JSON:IMAGES | karpathy:JSON:IMAGES | tsv:FILE:IMAGES (every split is extracted)", .metavar = "SPEC", .required = true},
        {"out", ARG_STRING, &f->out, "the feature cache to write (FEATURES.partial while it grows; run again to resume)", .metavar = "FEATURES", .required = true},
        {"dtype", ARG_STRING, &f->dtype, "f16 (half the size; within half-precision rounding) | f32", .metavar = "T"},
        {"image-size", ARG_INT, &f->image_size, "encoder input side S (shorter side resized to S x 256 / 224, centre crop S)", .has_min = true, .min = 32, .has_max = true, .max = 1024},
        {"threads", ARG_INT, &f->threads, "encoder workers (one thread each); a resumed extraction keeps the count it started with", .has_min = true, .min = 1, .has_max = true, .max = THREADS_MAX, .given = &f->threads_given, .default_note = THREADS_DEFAULT_NOTE},
        {"group", ARG_INT, &f->group, "images per GEMM in each worker", .has_min = true, .min = 1, .has_max = true, .max = 64},
        {"batch", ARG_INT, &f->batch, "images per write (0: threads x group x 4)", .has_min = true, .min = 0, .has_max = true, .max = 4096},
        {"quiet", ARG_FLAG, &f->quiet, "no progress bar", .given = NULL},
    };
    return args_parse_for_command(argc, argv, specs, ARGS_LEN(specs),
                                  "caption features --encoder ARCH:FILE --data SPEC --out FEATURES [flags]",
                                  "caption features", code);
}

// The images of [first, first + count) into annot (count, L, D) and status (count):
// decoded and preprocessed one by one, the readable ones through the encoder together.
static void extract_batch(float *annot, unsigned char *status, float *inputs, float *packed,
                          Encoder *enc, EncoderWorkspace *ws, const CaptionSet *set, int first,
                          int count, int S, int L, int D) {
    const size_t in1 = (size_t)3 * S * S, out1 = (size_t)L * D;
    int *which = xmalloc((size_t)count * sizeof(int));
    int k = 0;
    for (int j = 0; j < count; j++) {
        const char *path = set->images[first + j].path;
        Image img;
        Error err;
        if (image_load(path, &img, 3, &err)) {
            fprintf(stderr, "warning: %s (skipped)\n", err.msg);
            status[j] = FEAT_UNREADABLE;
            memset(annot + (size_t)j * out1, 0, out1 * sizeof(float));
            continue;
        }
        imagenet_preprocess(inputs + (size_t)k * in1, &img, S, imagenet_resize_for(S));
        image_free(&img);
        status[j] = FEAT_OK;
        which[k++] = j;
    }
    if (k > 0) encoder_forward(enc, ws, packed, inputs, k);
    for (int q = 0; q < k; q++)
        memcpy(annot + (size_t)which[q] * out1, packed + (size_t)q * out1, out1 * sizeof(float));
    free(which);
}

typedef struct {
    CaptionSet set;
    Encoder *enc;
    FeatCacheWriter w;
    FeatCacheInfo info;
    const char **ids;
    char description[512], preprocess[512], spec[64];
    const char *data;         // the data spec recorded: --data, or recorded_data
    char recorded_data[1200]; // an existing cache's spec naming the same files as --data
} Extraction;

static void extraction_free(Extraction *x) {
    featcache_writer_close(&x->w);
    if (x->enc) encoder_free(x->enc);
    free(x->ids);
    caption_set_free(&x->set);
}

// Reads the data and the encoder, and opens the cache (resuming a partial one).
static int extraction_open(Extraction *x, FeaturesFlags *f, Error *err) {
    memset(x, 0, sizeof *x);
    FeatDtype dt;
    if (featcache_dtype_parse(f->dtype, &dt))
        return error_set(err, "--dtype: expected f16 or f32, got '%.20s'", f->dtype);
    char arch[64];
    const char *file = NULL;
    if (caption_encoder_arg_split(arch, &file, f->encoder, err)) return -1;
    CaptionSpec spec;
    if (caption_spec_parse(&spec, f->data, err)) return error_prefix(err, "--data");
    if (spec.kind == CAPTION_SOURCE_SCENES)
        return error_set(err, "--data scenes: features are for caption sets on disk (write the "
                              "scenes with caption scenes, then give tsv:DIR/captions.tsv:DIR)");
    CaptionOptions opts;
    caption_options_default(&opts);
    if (caption_set_read(&x->set, &spec, &opts, err)) return -1;
    for (int i = 0; i < x->set.n_warnings; i++) fprintf(stderr, "warning: %s\n", x->set.warnings[i]);
    if (encoder_load(&x->enc, arch, file, err)) return -1;
    const int G = encoder_grid_size(x->enc, f->image_size);
    if (G < 1) return error_set(err, "--image-size: %d is too small for %s", f->image_size, arch);
    int pb, pt, pg;
    if (featcache_partial_settings(f->out, &pb, &pt, &pg)) {
        if (f->threads_given && pt != f->threads)
            fprintf(stderr, "caption features: resuming with the %d thread%s the extraction "
                            "started with (the bytes depend on it), not %d\n",
                    pt, pt == 1 ? "" : "s", f->threads);
        f->batch = pb, f->threads = pt, f->group = pg;
    }
    if (f->batch == 0) f->batch = f->threads * f->group * 4;
    // A cache (or partial one) at --out that records --data written another way for the
    // same files ("data/x" for "./data/x") is that cache: its text is kept.
    x->data = f->data;
    if (featcache_recorded_data(f->out, x->recorded_data, sizeof x->recorded_data) &&
        strcmp(x->recorded_data, f->data) && caption_spec_same(x->recorded_data, f->data))
        x->data = x->recorded_data;
    x->ids = xmalloc((size_t)x->set.n_images * sizeof(char *));
    for (int i = 0; i < x->set.n_images; i++) x->ids[i] = x->set.images[i].id;
    encoder_spec_format(x->spec, sizeof x->spec, encoder_spec(x->enc));
    snprintf(x->description, sizeof x->description, "%s", encoder_description(x->enc));
    featcache_preprocess_text(x->preprocess, sizeof x->preprocess, f->image_size);
    x->info = (FeatCacheInfo){.encoder = x->spec, .encoder_sha256 = encoder_weights_sha256(x->enc),
                              .encoder_weights = file, .encoder_description = x->description,
                              .preprocess = x->preprocess, .image_size = f->image_size,
                              .data = x->data, .n = x->set.n_images, .ids = x->ids, .L = G * G,
                              .D = encoder_dim(x->enc), .dtype = dt, .batch = f->batch,
                              .threads = f->threads, .group = f->group};
    return featcache_writer_open(&x->w, f->out, &x->info, err);
}

// Extracts from the writer's start to the end; progress with images/s and time left.
static int extraction_run(Extraction *x, const FeaturesFlags *f, double *seconds, Error *err) {
    const int S = f->image_size, L = x->info.L, D = x->info.D, B = f->batch, n = x->info.n;
    if (f->threads > 1) gemm_set_threads(1);
    EncoderWorkspace ws;
    encoder_workspace_alloc(&ws, x->enc, S, f->threads, f->group, ENCODER_CONV_AUTO);
    float *inputs = xmalloc((size_t)B * 3 * S * S * sizeof(float));
    float *packed = xmalloc((size_t)B * L * D * sizeof(float));
    float *annot = xmalloc((size_t)B * L * D * sizeof(float));
    unsigned char *status = xmalloc((size_t)B);
    Progress p;
    const int start = x->w.start;
    if (!f->quiet) {
        progress_start(&p, "features", n - start, 0);
        progress_name(&p, "images", NULL);
    }
    double t0 = timer_now();
    int rc = 0;
    for (int i0 = start; i0 < n && !rc; i0 += B) {
        int k = n - i0 < B ? n - i0 : B;
        extract_batch(annot, status, inputs, packed, x->enc, &ws, &x->set, i0, k, S, L, D);
        rc = featcache_writer_put(&x->w, i0, k, annot, status, err);
        if (!f->quiet) progress_update(&p, i0 + k - start, "");
    }
    if (!f->quiet) progress_end(&p, n - start, "");
    *seconds = timer_now() - t0;
    encoder_workspace_free(&ws);
    free(inputs), free(packed), free(annot), free(status);
    return rc;
}

int caption_features_main(int argc, char **argv) {
    FeaturesFlags f;
    int code;
    if (parse_features_flags(&f, argc, argv, &code)) return code;
    Error err;
    Extraction x;
    int rc = extraction_open(&x, &f, &err) ? 1 : 0;
    if (rc == 0 && x.w.complete) {
        // The one pass over the file that caption train and eval skip (they check the
        // header and sizes only, unless --verify-features): a damaged cache is refused here.
        FeatCache c;
        rc = featcache_open(&c, f.out, &err) || featcache_verify(&c, &err) ? 1 : 0;
        if (c.base) featcache_close(&c);
        if (rc == 0)
            text_write_linef(stderr, "caption features: %s is complete (%d images, %s) and its "
                                     "checksum holds; nothing to do", f.out, x.info.n, x.spec);
    } else if (rc == 0) {
        if (x.w.start > 0)
            text_write_linef(stderr, "caption features: resuming %s.partial at image %d of %d", f.out,
                             x.w.start, x.info.n);
        fprintf(stderr, "caption features: %d images, %s at %d px -> %d x %d %s, %d thread%s\n",
                x.info.n, encoder_description(x.enc), f.image_size, x.info.L, x.info.D,
                featcache_dtype_name(x.info.dtype), f.threads, f.threads == 1 ? "" : "s");
        double secs = 0.0;
        rc = extraction_run(&x, &f, &secs, &err) || featcache_writer_finish(&x.w, &err) ? 1 : 0;
        if (rc == 0) {
            FeatCache c;
            int skipped = 0;
            if (featcache_open(&c, f.out, &err) == 0) {
                for (int i = 0; i < c.n; i++) skipped += featcache_status(&c, i) != FEAT_OK;
                featcache_close(&c);
            }
            int done = x.info.n - x.w.start;
            fprintf(stderr, "caption features: %d images extracted in %.1f s (%.2f images/s), %d "
                            "skipped in all; %s\n",
                    done, secs, secs > 0 ? done / secs : 0.0, skipped, f.out);
        }
    }
    if (rc) fprintf(stderr, "caption features: %s\n", err.msg);
    extraction_free(&x);
    return rc;
}
