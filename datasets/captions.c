// captions.c: see captions.h.
#include "datasets/captions.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/fileio.h"
#include "core/text_escape.h"
#include "datasets/caption_builder.h"
#include "datasets/captions_json.h"
#include "datasets/captions_text.h"

// ---------------------------------------------------------------------------------------
// The held-out hash, UTF-8.

Split caption_heldout_split(const char *id, double valid_share, double test_share) {
    uint64_t u = caption_fnv1a64(id, strlen(id)) % 10000;
    double valid_end = valid_share * 10000.0, test_end = (valid_share + test_share) * 10000.0;
    if ((double)u < valid_end) return SPLIT_VALID;
    if ((double)u < test_end) return SPLIT_TEST;
    return SPLIT_TRAIN;
}

// Orders images by their place in the hash: u = h mod 10000 first (the value the split
// compares), then the whole h, then the index.
static int heldout_before(const CaptionImage *a, int ia, const CaptionImage *b, int ib) {
    uint64_t ha = caption_fnv1a64(a->id, strlen(a->id)), hb = caption_fnv1a64(b->id, strlen(b->id));
    if (ha % 10000 != hb % 10000) return ha % 10000 < hb % 10000;
    if (ha != hb) return ha < hb;
    return ia < ib;
}

int caption_set_ensure_heldout(CaptionSet *set) {
    if (set->n_images < 3) return 0;
    int moved = 0;
    int count[SPLIT_COUNT] = {0};
    for (int i = 0; i < set->n_images; i++) count[set->images[i].split]++;
    // Each empty split takes an image from the fullest one that can spare it (training
    // first on a tie), as long as that one has a hash-split image.
    const Split order[SPLIT_COUNT] = {SPLIT_VALID, SPLIT_TEST, SPLIT_TRAIN};
    for (int k = 0; k < SPLIT_COUNT; k++) {
        Split need = order[k], from = need;
        if (count[need] > 0) continue;
        for (int d = SPLIT_COUNT - 1; d >= 0; d--) {  // train (2), valid, test (0) after it
            Split s = order[d];
            if (s != need && count[s] >= 2 && (from == need || count[s] > count[from])) from = s;
        }
        if (from == need) continue;
        int pick = -1;
        for (int i = 0; i < set->n_images; i++) {
            const CaptionImage *im = &set->images[i];
            if (im->split != from || !im->split_hashed) continue;
            if (pick < 0 || heldout_before(im, i, &set->images[pick], pick)) pick = i;
        }
        if (pick < 0) continue;
        set->images[pick].split = need;
        count[from]--;
        count[need]++;
        moved++;
    }
    return moved;
}

int caption_utf8_valid(const char *s, size_t len, size_t *bad_offset) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        unsigned c = p[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        uint32_t cp, min;
        if (c >= 0xC2 && c <= 0xDF) {
            n = 1, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            n = 2, cp = c & 0x0F, min = 0x800;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 3, cp = c & 0x07, min = 0x10000;
        } else {
            goto bad;
        }
        if (len - i - 1 < n) goto bad;
        for (size_t k = 1; k <= n; k++) {
            if ((p[i + k] & 0xC0) != 0x80) goto bad;
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) goto bad;
        i += n + 1;
    }
    return 1;
bad:
    if (bad_offset) *bad_offset = i;
    return 0;
}


// ---------------------------------------------------------------------------------------
// Options, spec, the set's own helpers.

void caption_options_default(CaptionOptions *opts) {
    opts->max_file_bytes = CAPTION_DEFAULT_MAX_FILE_BYTES;
    opts->valid_share = CAPTION_DEFAULT_HELDOUT_SHARE;
    opts->test_share = CAPTION_DEFAULT_HELDOUT_SHARE;
    opts->check_images = 1;
}

const char *caption_source_name(CaptionSource kind) {
    switch (kind) {
        case CAPTION_SOURCE_SCENES: return "scenes";
        case CAPTION_SOURCE_FLICKR8K: return "flickr8k";
        case CAPTION_SOURCE_COCO: return "coco";
        case CAPTION_SOURCE_KARPATHY: return "karpathy";
        case CAPTION_SOURCE_TSV: return "tsv";
    }
    return "?";
}

static int copy_part(char *dst, const char *src, size_t len, const char *text, const char *what,
                     Error *err) {
    if (len == 0) return error_set(err, "data spec '%s': empty %s", text, what);
    if (len >= CAPTION_PATH_MAX)
        return error_set(err, "data spec '%.60s...': %s longer than %d bytes", text, what,
                         CAPTION_PATH_MAX - 1);
    memcpy(dst, src, len);
    dst[len] = 0;
    return 0;
}

// Both empty, equal, or resolving to the same path.
static int same_path_(const char *x, const char *y) {
    if (!strcmp(x, y)) return 1;
    if (!*x || !*y) return 0;
    char *rx = realpath(x, NULL), *ry = realpath(y, NULL);
    int same = rx && ry && !strcmp(rx, ry);
    free(rx);
    free(ry);
    return same;
}

int caption_spec_same(const char *a, const char *b) {
    CaptionSpec sa, sb;
    Error err;
    if (caption_spec_parse(&sa, a, &err) || caption_spec_parse(&sb, b, &err)) return 0;
    return sa.kind == sb.kind && same_path_(sa.file, sb.file) && same_path_(sa.images, sb.images);
}

int caption_spec_parse(CaptionSpec *spec, const char *text, Error *err) {
    memset(spec, 0, sizeof *spec);
    if (!text || !*text) return error_set(err, "empty data spec");
    const char *colon = strchr(text, ':');
    size_t klen = colon ? (size_t)(colon - text) : strlen(text);
    static const struct {
        const char *name;
        CaptionSource kind;
        int parts;
    } kinds[] = {
        {"scenes", CAPTION_SOURCE_SCENES, 0}, {"flickr8k", CAPTION_SOURCE_FLICKR8K, 1},
        {"coco", CAPTION_SOURCE_COCO, 2},     {"karpathy", CAPTION_SOURCE_KARPATHY, 2},
        {"tsv", CAPTION_SOURCE_TSV, 2},
    };
    static const char *usage =
        "expected scenes, flickr8k:DIR, coco:JSON:IMAGES, karpathy:JSON:IMAGES or tsv:FILE:IMAGES";
    int k = -1;
    for (int i = 0; i < (int)(sizeof kinds / sizeof kinds[0]); i++)
        if (strlen(kinds[i].name) == klen && memcmp(kinds[i].name, text, klen) == 0) k = i;
    if (k < 0)
        return error_set(err, "data spec '%s': unknown data kind '%.*s'; %s", text,
                         (int)(klen < 40 ? klen : 40), text, usage);
    spec->kind = kinds[k].kind;
    const char *rest = colon ? colon + 1 : NULL;
    switch (kinds[k].parts) {
        case 0:
            if (rest)
                return error_set(err, "data spec '%s': scenes takes no path; %s", text, usage);
            return 0;
        case 1:
            if (!rest)
                return error_set(err, "data spec '%s': missing folder, expected %s:DIR", text,
                                 kinds[k].name);
            return copy_part(spec->file, rest, strlen(rest), text, "folder", err);
        default: {
            const char *what = spec->kind == CAPTION_SOURCE_TSV ? "FILE" : "JSON";
            const char *c2 = rest ? strchr(rest, ':') : NULL;
            if (!rest || !c2)
                return error_set(err, "data spec '%s': expected %s:%s:IMAGES", text, kinds[k].name,
                                 what);
            if (copy_part(spec->file, rest, (size_t)(c2 - rest), text, what, err)) return -1;
            return copy_part(spec->images, c2 + 1, strlen(c2 + 1), text, "IMAGES folder", err);
        }
    }
}

// Appends line (one line of valid UTF-8 already) to the set's warnings.
static void add_warning(CaptionSet *set, const char *line) {
    if (set->n_warnings >= CAPTION_MAX_WARNINGS) {
        set->warnings_dropped++;
        return;
    }
    set->warnings = xrealloc(set->warnings, (size_t)(set->n_warnings + 1) * sizeof *set->warnings);
    set->warnings[set->n_warnings++] = xstrdup(line);
}

void caption_set_warn_error(CaptionSet *set, const Error *err) { add_warning(set, err->msg); }

void caption_set_warn(CaptionSet *set, const char *fmt, ...) {
    if (set->n_warnings >= CAPTION_MAX_WARNINGS) {
        set->warnings_dropped++;
        return;
    }
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    // One line each: names and values quoted from the file (a JSON "file_name" may hold
    // "\n") are written in core/text_escape.h's field form (found by
    // tests/fuzz/fuzz_captions.c).
    text_field_in_place(buf, sizeof buf);
    add_warning(set, buf);
}

void caption_set_free(CaptionSet *set) {
    if (!set) return;
    for (int i = 0; i < set->n_images; i++) {
        free(set->images[i].path);
        free(set->images[i].id);
    }
    free(set->images);
    for (int i = 0; i < set->n_captions; i++) free(set->captions[i]);
    free(set->captions);
    for (int i = 0; i < set->n_warnings; i++) free(set->warnings[i]);
    free(set->warnings);
    memset(set, 0, sizeof *set);
}

int caption_set_count(const CaptionSet *set, Split split, int *n_captions) {
    int n = 0, c = 0;
    for (int i = 0; i < set->n_images; i++)
        if (set->images[i].split == split) {
            n++;
            c += set->images[i].n_captions;
        }
    if (n_captions) *n_captions = c;
    return n;
}

int caption_set_split_indices(const CaptionSet *set, Split split, int **out) {
    int n = caption_set_count(set, split, NULL);
    *out = NULL;
    if (n == 0) return 0;
    int *idx = xmalloc((size_t)n * sizeof *idx), k = 0;
    for (int i = 0; i < set->n_images; i++)
        if (set->images[i].split == split) idx[k++] = i;
    *out = idx;
    return n;
}

void caption_set_filter(CaptionSet *set, const unsigned char *keep) {
    int ni = 0, nc = 0;
    for (int i = 0; i < set->n_images; i++) {
        CaptionImage im = set->images[i];
        if (!keep[i]) {
            set->images_skipped++;
            set->captions_skipped += im.n_captions;
            free(im.path);
            free(im.id);
            for (int k = 0; k < im.n_captions; k++) free(set->captions[im.first_caption + k]);
            continue;
        }
        for (int k = 0; k < im.n_captions; k++)
            set->captions[nc + k] = set->captions[im.first_caption + k];
        im.first_caption = nc;
        nc += im.n_captions;
        set->images[ni++] = im;
    }
    set->n_images = ni;
    set->n_captions = nc;
}

// ---------------------------------------------------------------------------------------

int caption_set_read(CaptionSet *set, const CaptionSpec *spec, const CaptionOptions *opts,
                     Error *err) {
    CaptionOptions defaults;
    opts = caption_reader_begin(set, opts, &defaults);
    if (!(opts->valid_share >= 0 && opts->test_share >= 0 &&
          opts->valid_share + opts->test_share <= 1.0))
        return error_set(err,
                         "held-out shares %g (valid) and %g (test) must be >= 0 and sum to <= 1",
                         opts->valid_share, opts->test_share);
    int rc = 1;
    switch (spec->kind) {
        case CAPTION_SOURCE_FLICKR8K: rc = caption_read_flickr8k(set, spec->file, opts, err); break;
        case CAPTION_SOURCE_COCO:
            rc = caption_read_coco(set, spec->file, spec->images, opts, err);
            break;
        case CAPTION_SOURCE_KARPATHY:
            rc = caption_read_karpathy(set, spec->file, spec->images, opts, err);
            break;
        case CAPTION_SOURCE_TSV: rc = caption_read_tsv(set, spec->file, spec->images, opts, err); break;
        case CAPTION_SOURCE_SCENES: break;
    }
    if (rc == 0) caption_set_ensure_heldout(set);
    if (rc <= 0) return rc;
    return error_set(err,
                     "data spec 'scenes': the built-in scenes are not read from files "
                     "(use datasets/scenes.h)");
}

