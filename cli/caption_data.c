#include "cli/caption_data.h"

#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/progress.h"
#include "core/text_escape.h"
#include "datasets/captions.h"
#include "datasets/imagecache.h"

struct CaptionData {
    int is_scenes;
    int S;
    Scenes scenes;
    CaptionSet set;
    ImageCache cache;
    int *idx[SPLIT_COUNT];  // caption set: image indices per split
    int count[SPLIT_COUNT];
    int has_features;
    FeatCache feat;         // with features: the cache
    int *feat_index;        // (set images) each image's row in the cache
};

void caption_data_flags_default(CaptionDataFlags *f) {
    f->data = "scenes";
    f->root = "data";
    ScenesConfig sc;
    scenes_config_default(&sc);
    f->train_count = sc.counts[SPLIT_TRAIN];
    f->val_count = sc.counts[SPLIT_VALID];
    f->test_count = sc.counts[SPLIT_TEST];
    f->scenes_seed = 1;
    f->cache_mb = 2048;
    f->held_out = CAPTION_DEFAULT_HELDOUT_SHARE;
    f->features = NULL;
    f->verify_features = false;
}

static void cache_progress(void *ctx, int done, int total) {
    Progress *p = ctx;
    progress_update(p, done, "");
    if (done == total) progress_end(p, done, "");
}

// --features: the cache must list the set's images in its order; the images it could not
// read are dropped from the set (warnings), and each remaining image keeps its cache row.
// Opening checks the header, the metadata, the tensors' sizes against the file's and the
// status bytes; the checksum over the whole file (gigabytes: COCO's is 25 GB, and
// experiments/sat_pretrained.sh opens it once per epoch) only with --verify-features.
// caption features checks it when it writes the cache and when it finds it complete.
static int open_features_(CaptionData *d, const CaptionDataFlags *f, Error *err) {
    if (featcache_open(&d->feat, f->features, err)) return error_prefix(err, "--features");
    if (f->verify_features && featcache_verify(&d->feat, err)) {
        featcache_close(&d->feat);
        return -1;
    }
    const FeatCache *c = &d->feat;
    int n = d->set.n_images;
    for (int i = 0; i < n || i < c->n; i++) {
        if (i >= n || i >= c->n || strcmp(c->ids[i], d->set.images[i].id)) {
            error_set(err, "%s: made for another image list than --data %s (image %d: '%.60s' in "
                           "the cache, '%.60s' in the data; %d and %d images): extract features "
                           "for this data with caption features", f->features, f->data, i,
                      i < c->n ? c->ids[i] : "(none)", i < n ? d->set.images[i].id : "(none)", c->n, n);
            featcache_close(&d->feat);
            return -1;
        }
    }
    unsigned char *keep = xmalloc((size_t)n);
    int kept = 0;
    for (int i = 0; i < n; i++) {
        keep[i] = featcache_status(c, i) == FEAT_OK;
        if (!keep[i])
            caption_set_warn(&d->set, "%s: could not be read when the features were extracted "
                                      "(skipped)", d->set.images[i].path);
        kept += keep[i];
    }
    d->feat_index = xmalloc((size_t)(kept > 0 ? kept : 1) * sizeof(int));
    for (int i = 0, k = 0; i < n; i++)
        if (keep[i]) d->feat_index[k++] = i;
    caption_set_filter(&d->set, keep);
    free(keep);
    for (int i = 0; i < d->set.n_warnings; i++) fprintf(stderr, "warning: %s\n", d->set.warnings[i]);
    if (d->set.warnings_dropped)
        fprintf(stderr, "warning: %d more warnings not shown\n", d->set.warnings_dropped);
    if (kept == 0) {
        featcache_close(&d->feat);
        free(d->feat_index);
        return error_set(err, "%s: no image of the cache was extracted", f->features);
    }
    caption_set_ensure_heldout(&d->set);
    d->has_features = 1;
    d->S = c->image_size;
    text_write_linef(stderr, "%s: using %d images and %d captions, annotations %d x %d %s from %s",
                     d->set.source, d->set.n_images, d->set.n_captions, c->L, c->D,
                     featcache_dtype_name(c->dtype), f->features);
    return 0;
}

// The built-in scenes at S x S with f's counts, seed and digit folder.
static int open_scenes_(CaptionData *d, const CaptionDataFlags *f, int S, Error *err) {
    d->is_scenes = 1;
    ScenesConfig sc;
    scenes_config_default(&sc);
    sc.size = S;
    sc.counts[SPLIT_TRAIN] = f->train_count;
    sc.counts[SPLIT_VALID] = f->val_count;
    sc.counts[SPLIT_TEST] = f->test_count;
    sc.seed = (uint64_t)f->scenes_seed;
    sc.root = f->root;
    // Several objects to a scene need half the canvas each at most (datasets/scenes.h).
    const int need = sc.max_objects > 1 ? 2 * sc.max_scale : sc.max_scale;
    if (S < need)
        return error_set(err, "--image-size: %d is too small for the built-in scenes (objects of "
                              "%d..%d px, up to %d to a scene): give --image-size %d or more",
                         S, sc.min_scale, sc.max_scale, sc.max_objects, need);
    if (scenes_open(&d->scenes, &sc, err)) return -1;
    for (int s = 0; s < SPLIT_COUNT; s++) d->count[s] = scenes_count(&d->scenes, (Split)s);
    return 0;
}

// The images of d's caption set decoded at S x S into the bounded cache (a progress line
// unless quiet), its warnings printed, then its splits.
static int decode_images_(CaptionData *d, const CaptionDataFlags *f, int S, int quiet, Error *err) {
    Progress p;
    progress_start(&p, "decode", d->set.n_images, 0);
    int r = caption_set_cache_images(&d->set, &d->cache, S, (size_t)f->cache_mb << 20,
                                     quiet ? NULL : cache_progress, &p, err);
    if (r) return -1;  // err's one line says what went wrong; the warnings are for a set that loads
    for (int i = 0; i < d->set.n_warnings; i++) fprintf(stderr, "warning: %s\n", d->set.warnings[i]);
    if (d->set.warnings_dropped) fprintf(stderr, "warning: %d more warnings not shown\n", d->set.warnings_dropped);
    text_write_linef(stderr, "%s: using %d images and %d captions; skipped %d images and %d captions",
                     d->set.source, d->set.n_images, d->set.n_captions, d->set.images_skipped,
                     d->set.captions_skipped);
    caption_set_ensure_heldout(&d->set);  // again: decoding may have dropped images
    return 0;
}

int caption_data_open(CaptionData **out, const CaptionDataFlags *f, int S, int quiet, Error *err) {
    *out = NULL;
    CaptionSpec spec;
    if (caption_spec_parse(&spec, f->data, err)) return error_prefix(err, "--data");
    if (spec.kind == CAPTION_SOURCE_SCENES && f->features)
        return error_set(err, "--features: the built-in scenes have no feature cache (write them "
                              "with caption scenes and use tsv:DIR/captions.tsv:DIR)");
    CaptionData *d = xcalloc(1, sizeof *d);
    d->S = S;
    if (spec.kind == CAPTION_SOURCE_SCENES) {
        if (open_scenes_(d, f, S, err)) {
            free(d);
            return -1;
        }
        *out = d;
        return 0;
    }
    CaptionOptions opts;
    caption_options_default(&opts);
    opts.valid_share = opts.test_share = f->held_out;
    if (caption_set_read(&d->set, &spec, &opts, err)) {
        free(d);
        return -1;
    }
    if (f->features ? open_features_(d, f, err) : decode_images_(d, f, S, quiet, err)) {
        caption_set_free(&d->set);
        free(d);
        return -1;
    }
    for (int s = 0; s < SPLIT_COUNT; s++)
        d->count[s] = caption_set_split_indices(&d->set, (Split)s, &d->idx[s]);
    *out = d;
    return 0;
}

void caption_data_close(CaptionData *d) {
    if (!d) return;
    if (d->is_scenes) {
        scenes_close(&d->scenes);
    } else {
        for (int s = 0; s < SPLIT_COUNT; s++) free(d->idx[s]);
        image_cache_free(&d->cache);
        if (d->has_features) featcache_close(&d->feat);
        free(d->feat_index);
        caption_set_free(&d->set);
    }
    free(d);
}

int caption_data_is_scenes(const CaptionData *d) { return d->is_scenes; }
const Scenes *caption_data_scenes(const CaptionData *d) {
    CHECK(d->is_scenes, "not scenes");
    return &d->scenes;
}
int caption_data_count(const CaptionData *d, Split s) { return d->count[s]; }

const char *caption_data_hint(const CaptionData *d) {
    if (d->is_scenes) return "";
    if (d->set.n_images < 3)
        return "; fewer than 3 images cannot give one to each split: add images";
    for (int i = 0; i < d->set.n_images; i++)
        if (d->set.images[i].split_hashed) return "";
    return "; the file's own splits leave one empty: name a validation split in it (TSV: a "
           "third column train/val/test), or leave the splits out to let --held-out choose";
}

int caption_data_read(const CaptionData *d, Split s, int i, float *chw, SceneInfo *info, Error *err) {
    CHECK(i >= 0 && i < d->count[s], "image %d of %d", i, d->count[s]);
    if (d->is_scenes)
        scenes_render(chw, info, &d->scenes, s, i);
    else if (d->has_features)
        return featcache_read(&d->feat, d->feat_index[d->idx[s][i]], chw, err);
    else
        image_cache_get(chw, &d->cache, d->idx[s][i]);
    return 0;
}

void caption_data_image(const CaptionData *d, Split s, int i, float *chw, SceneInfo *info) {
    (void)caption_data_read(d, s, i, chw, info, NULL);
}

void caption_data_picture(const CaptionData *d, Split s, int i, float *chw) {
    if (!d->has_features) {
        caption_data_image(d, s, i, chw, NULL);
        return;
    }
    Error err;
    if (caption_load_image(chw, d->set.images[d->idx[s][i]].path, d->S, &err))
        for (size_t k = 0; k < (size_t)3 * d->S * d->S; k++) chw[k] = 0.5f;
}

const FeatCache *caption_data_features(const CaptionData *d) {
    return d && d->has_features ? &d->feat : NULL;
}

int caption_data_captions(const CaptionData *d, Split s, int i, const char **out, int max,
                          SceneInfo *info) {
    if (d->is_scenes) {
        scenes_describe(info, &d->scenes, s, i);
        int n = SCENES_CAPTIONS < max ? SCENES_CAPTIONS : max;
        for (int k = 0; k < n; k++) out[k] = info->captions[k];
        return n;
    }
    const CaptionImage *im = &d->set.images[d->idx[s][i]];
    int n = im->n_captions < max ? im->n_captions : max;
    for (int k = 0; k < n; k++) out[k] = caption_set_caption(&d->set, d->idx[s][i], k);
    return n;
}

void caption_data_write_id(FILE *fp, const CaptionData *d, Split s, int i) {
    if (d->is_scenes) {
        // The file name `caption scenes` gives this scene (datasets/scenes_folder.h).
        fprintf(fp, "\"image_id\": \"%s_%06d.png\"", split_name(s), i);
        return;
    }
    const CaptionImage *im = &d->set.images[d->idx[s][i]];
    if (im->numeric_id >= 0)
        fprintf(fp, "\"image_id\": %lld", im->numeric_id);
    else
        text_json_name(fp, "image_id", im->id);
}

int caption_load_image(float *chw, const char *path, int S, Error *err) {
    return image_load_square_float(chw, path, S, err);
}
