// fuzz_captions.c: libFuzzer target for the caption file readers (datasets/captions.h):
// Flickr8k token file and split lists, COCO captions JSON, Karpathy split JSON, TSV.
//
// Returns 1 when the reader accepted the input, 0 when it refused it.
// Input: byte 0 picks the format (% 4: 0 flickr8k, 1 coco, 2 karpathy, 3 tsv); byte 1 the
// options (bit 0: check that image files exist; bits 1-2: held-out shares); the rest is
// the file. For flickr8k the rest is split at each "\n--list--\n": the token file, then up
// to three split lists (train, dev, test), the lists not given being absent. The readers
// take paths, so the file is written into a private temporary folder (with images a.jpg
// and b.jpg present) and read through caption_spec_parse + caption_set_read, the CLI's
// path. Properties: a failure has one line naming the file (or folder); a success has
// images each with >= 1 caption laid out contiguously, captions that are valid UTF-8,
// trimmed, non-empty, at most CAPTION_MAX_BYTES and free of control characters, splits in
// range, existing image files when checked, at most CAPTION_MAX_WARNINGS one-line warnings;
// caption_set_split_indices and caption_set_filter keep those properties.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/check.h"
#include "datasets/captions.h"
#include "tests/fuzz/fuzz_util.h"

static const char *const fuzz_captions_lists[3] = {
    "Flickr_8k.trainImages.txt", "Flickr_8k.devImages.txt", "Flickr_8k.testImages.txt"};

// The folders: images/ and flickr/Flicker8k_Dataset/, each holding a.jpg and b.jpg.
static void fuzz_captions_setup(void) {
    static int done;
    if (done) return;
    done = 1;
    mkdir(fuzz_tmp_path("images"), 0755);
    mkdir(fuzz_tmp_path("flickr"), 0755);
    mkdir(fuzz_tmp_path("flickr/Flicker8k_Dataset"), 0755);
    const char *files[] = {"images/a.jpg", "images/b.jpg", "flickr/Flicker8k_Dataset/a.jpg",
                           "flickr/Flicker8k_Dataset/b.jpg"};
    for (int i = 0; i < 4; i++) fuzz_write_file(fuzz_tmp_path(files[i]), "", 0);
}

static void fuzz_captions_check_set(const CaptionSet *set, int check_images) {
    fuzz_require(set->n_images >= 1 && set->n_captions >= set->n_images, "%d images, %d captions",
                 set->n_images, set->n_captions);
    fuzz_require(set->images_skipped >= 0 && set->captions_skipped >= 0, "negative skip counts");
    int next = 0;
    for (int i = 0; i < set->n_images; i++) {
        const CaptionImage *im = &set->images[i];
        fuzz_require(im->path && im->id && im->n_captions >= 1 && im->first_caption == next,
                     "image %d: layout", i);
        fuzz_require(im->split >= 0 && im->split < SPLIT_COUNT, "image %d: split %d", i, im->split);
        fuzz_require(im->numeric_id >= -1, "image %d: numeric id", i);
        if (check_images) fuzz_require(access(im->path, F_OK) == 0, "image %s missing", im->path);
        next += im->n_captions;
        for (int k = 0; k < im->n_captions; k++) {
            const char *c = caption_set_caption(set, i, k);
            size_t n = strlen(c);
            fuzz_require(n >= 1 && n <= CAPTION_MAX_BYTES, "caption of %zu bytes", n);
            fuzz_require(caption_utf8_valid(c, n, NULL), "caption not valid UTF-8");
            fuzz_require(c[0] != ' ' && c[n - 1] != ' ', "caption not trimmed: '%s'", c);
            for (size_t j = 0; j < n; j++)
                fuzz_require((unsigned char)c[j] >= 0x20 && c[j] != 0x7F,
                             "control character in caption");
        }
    }
    fuzz_require(next == set->n_captions, "captions %d vs %d", next, set->n_captions);
    int total = 0;
    for (int sp = 0; sp < SPLIT_COUNT; sp++) {
        int *idx, nc;
        int n = caption_set_split_indices(set, (Split)sp, &idx);
        fuzz_require(n == caption_set_count(set, (Split)sp, &nc), "split count");
        for (int j = 0; j < n; j++)
            fuzz_require(set->images[idx[j]].split == (Split)sp && (j == 0 || idx[j] > idx[j - 1]),
                         "split indices");
        free(idx);
        total += n;
    }
    fuzz_require(total == set->n_images, "splits do not cover the images");
}

static void fuzz_captions_check_warnings(const CaptionSet *set) {
    fuzz_require(set->n_warnings >= 0 && set->n_warnings <= CAPTION_MAX_WARNINGS &&
                     set->warnings_dropped >= 0,
                 "%d warnings", set->n_warnings);
    fuzz_require(set->warnings_dropped == 0 || set->n_warnings == CAPTION_MAX_WARNINGS,
                 "warnings dropped early");
    for (int i = 0; i < set->n_warnings; i++)
        fuzz_require(set->warnings[i][0] && !strchr(set->warnings[i], '\n'),
                     "warning of more than one line: %s", set->warnings[i]);
}

int fuzz_captions_one(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    fuzz_captions_setup();
    int format = data[0] % 4;
    CaptionOptions opts;
    caption_options_default(&opts);
    opts.check_images = data[1] & 1;
    static const double shares[4][2] = {{0.05, 0.05}, {0.5, 0.5}, {0, 0}, {1, 0}};
    opts.valid_share = shares[(data[1] >> 1) & 3][0];
    opts.test_share = shares[(data[1] >> 1) & 3][1];
    const char *body = (const char *)data + 2;
    size_t len = size - 2;
    char spec_text[2048], named[1024];
    const char *images = fuzz_tmp_path("images");
    if (format == 0) {
        const char *dir = fuzz_tmp_path("flickr");
        const char *sep = "\n--list--\n";
        size_t seplen = strlen(sep);
        const char *p = body, *end = body + len;
        for (int part = 0; part < 4; part++) {
            char name[128];
            snprintf(name, sizeof name, "flickr/%s",
                     part == 0 ? "Flickr8k.token.txt" : fuzz_captions_lists[part - 1]);
            const char *path = fuzz_tmp_path(name);
            if (!p) {
                unlink(path);
                continue;
            }
            const char *q = NULL;
            for (const char *s = p; s + seplen <= end; s++)
                if (memcmp(s, sep, seplen) == 0) {
                    q = s;
                    break;
                }
            fuzz_write_file(path, p, (size_t)((q ? q : end) - p));
            p = q ? q + seplen : NULL;
        }
        snprintf(spec_text, sizeof spec_text, "flickr8k:%s", dir);
        snprintf(named, sizeof named, "%s", dir);
    } else {
        static const char *const kinds[4] = {"", "coco", "karpathy", "tsv"};
        const char *path = fuzz_tmp_path(format == 3 ? "captions.tsv" : "captions.json");
        fuzz_write_file(path, body, len);
        snprintf(spec_text, sizeof spec_text, "%s:%s:%s", kinds[format], path, images);
        snprintf(named, sizeof named, "%s:", path);
    }
    CaptionSpec spec;
    Error err = {{0}};
    fuzz_require(caption_spec_parse(&spec, spec_text, &err) == 0, "spec %s: %s", spec_text,
                 err.msg);
    CaptionSet set;
    int rc = caption_set_read(&set, &spec, &opts, &err);
    if (rc != 0) {
        fuzz_require(rc == -1, "caption_set_read returned %d", rc);
        fuzz_require_error(&err, NULL);
        fuzz_require(strncmp(err.msg, named, strlen(named)) == 0,
                     "message does not name %s: %s", named, err.msg);
        fuzz_require(set.n_images == 0 && set.images == NULL && set.warnings == NULL,
                     "failed read left a set behind");
        caption_set_free(&set);
        return 0;
    }
    fuzz_captions_check_set(&set, opts.check_images);
    fuzz_captions_check_warnings(&set);
    // Dropping every other image keeps the set consistent (and the drop counted).
    unsigned char *keep = xmalloc((size_t)set.n_images);
    for (int i = 0; i < set.n_images; i++) keep[i] = (unsigned char)(i % 2 == 0);
    int before = set.images_skipped, dropped = set.n_images / 2;
    caption_set_filter(&set, keep);
    free(keep);
    fuzz_require(set.images_skipped == before + dropped, "filter skip count");
    fuzz_captions_check_set(&set, opts.check_images);
    caption_set_free(&set);
    return 1;
}

#ifndef FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_captions_one(data, size);
    return 0;
}
#endif
