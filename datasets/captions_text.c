// captions_text.c: the Flickr8k and TSV readers (datasets/captions_text.h).
#include "datasets/captions_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/text_escape.h"
#include "datasets/caption_builder.h"

// TSV: file<TAB>caption[<TAB>split]

// The file name field in core/text_escape.h's field form, as caption predict writes it:
// \t \n \r \\ \xNN are reversed in place (a name without a backslash is unchanged). The
// name must come out valid UTF-8 without NUL, as every name a caption set holds; NULL
// (with why) when not, or for a backslash that starts no escape.
static const char *tsv_unescape_name(char *name, char *why, size_t why_cap) {
    if (!strchr(name, '\\')) return name;
    char *raw;
    size_t len;
    if (text_unescape(name, &raw, &len)) {
        snprintf(why, why_cap, "file name: a backslash that starts no escape (a backslash is written as two)");
        return NULL;
    }
    const int ok = !memchr(raw, 0, len) && caption_utf8_valid(raw, len, NULL);
    if (ok) memcpy(name, raw, len + 1);  // unescaping never lengthens
    else snprintf(why, why_cap, "file name: not valid UTF-8 text once unescaped");
    free(raw);
    return ok ? name : NULL;
}

// What the TSV reader carries from record to record.
typedef struct {
    CaptionBuilder *b;
    const CaptionOptions *opts;
    const char *images_dir;
} TsvRead;

// The split field's word w (wl bytes, spaces around it ignored) into *split: 0, or -1 for
// an unknown word (warned about and counted: the caption is skipped).
static int tsv_split(CaptionSet *set, const char *w, size_t wl, Split *split, const char *where) {
    while (wl && (w[wl - 1] == ' ')) wl--;
    while (wl && *w == ' ') w++, wl--;
    if (!caption_split_from_word(w, wl, split)) return 0;
    caption_set_warn(set, "%s: unknown split '%.*s' (train, val, valid, test)", where,
                     (int)(wl < 40 ? wl : 40), w);
    set->captions_skipped++;
    return -1;
}

// The builder's index of image `name`, added on its first caption with its split (the
// record's, else the held-out hash's); -1 when the caption is skipped (reported): the path
// too long, or a split that conflicts with the one given earlier.
static int tsv_image(TsvRead *r, const char *name, Split split, int has_split,
                     const char *where) {
    CaptionSet *set = r->b->set;
    char path[CAPTION_PATH_MAX];
    int i = caption_keys_get(&r->b->keys, name);
    if (i < 0) {
        if (caption_join_path(path, sizeof path, r->images_dir, name, NULL)) {
            caption_skip(set, where, "image path too long");
            return -1;
        }
        if (!has_split)
            split = caption_heldout_split(name, r->opts->valid_share, r->opts->test_share);
        return caption_builder_add_image(r->b, name, path, name, -1, split, !has_split, where);
    }
    if (has_split && split != r->b->images[i].split && r->b->usable[i]) {
        caption_set_warn(set, "%s: split %s conflicts with %s given earlier for %s; caption skipped",
                         where, split_name(split), split_name(r->b->images[i].split), name);
        set->captions_skipped++;
        return -1;
    }
    return i;
}

// One record, file<TAB>caption[<TAB>split], of line `line`; a first line whose file field
// is "file" or "image" is a header and skipped silently.
static void tsv_record(TsvRead *r, const char *s, size_t n, int line, const char *where) {
    CaptionSet *set = r->b->set;
    char name[CAPTION_PATH_MAX], why[128];
    const char *t1 = memchr(s, '\t', n);
    if (!t1) {
        caption_skip(set, where, "no tab: expected file<TAB>caption[<TAB>split]");
        return;
    }
    const char *cap = t1 + 1, *end = s + n;
    const char *t2 = memchr(cap, '\t', (size_t)(end - cap));
    const char *cap_end = t2 ? t2 : end;
    if (t2 && memchr(t2 + 1, '\t', (size_t)(end - t2 - 1))) {
        caption_skip(set, where, "more than 3 tab-separated fields");
        return;
    }
    size_t flen = (size_t)(t1 - s);
    if (line == 1 &&
        ((flen == 4 && memcmp(s, "file", 4) == 0) || (flen == 5 && memcmp(s, "image", 5) == 0)))
        return;
    if (!caption_field_str(name, sizeof name, s, flen, "file name", why, sizeof why) ||
        !tsv_unescape_name(name, why, sizeof why)) {
        caption_skip(set, where, why);
        return;
    }
    Split split = SPLIT_TRAIN;
    int has_split = t2 && !caption_blank(t2 + 1, (size_t)(end - t2 - 1));
    if (has_split && tsv_split(set, t2 + 1, (size_t)(end - t2 - 1), &split, where)) return;
    int i = tsv_image(r, name, split, has_split, where);
    if (i >= 0) caption_builder_add_caption(r->b, i, cap, (size_t)(cap_end - cap), where);
}

int caption_read_tsv(CaptionSet *set, const char *tsv_path, const char *images_dir,
                     const CaptionOptions *opts, Error *err) {
    CaptionOptions defaults;
    opts = caption_reader_begin(set, opts, &defaults);
    unsigned char *data;
    size_t len;
    if (file_read_all(tsv_path, &data, &len, opts->max_file_bytes, err)) return -1;
    if (!caption_is_dir(images_dir)) {
        free(data);
        return error_set(err, "%s: image folder %s not found", tsv_path, images_dir);
    }
    CaptionBuilder b;
    caption_builder_init(&b, set, opts, tsv_path);
    TsvRead r = {&b, opts, images_dir};
    CaptionLines l;
    caption_lines_init(&l, data, len);
    const char *s;
    size_t n;
    char where[CAPTION_PATH_MAX + 32];
    while (caption_lines_next_record(&l, &s, &n, where, sizeof where, tsv_path))
        tsv_record(&r, s, n, l.line, where);
    free(data);
    return caption_builder_finish(&b, err);
}

// ---------------------------------------------------------------------------------------
// Flickr8k

static const char *const FLICKR_LISTS[SPLIT_COUNT] = {
    "Flickr_8k.trainImages.txt", "Flickr_8k.devImages.txt", "Flickr_8k.testImages.txt"};

// Reads the split lists into names -> split. *found = number of lists present.
static int flickr_read_lists(CaptionKeys *splits, int *found, CaptionBuilder *b, const char *dir, Error *err) {
    char path[CAPTION_PATH_MAX];
    *found = 0;
    int present[SPLIT_COUNT];
    for (int sp = 0; sp < SPLIT_COUNT; sp++) {
        if (caption_join_path(path, sizeof path, dir, FLICKR_LISTS[sp], NULL))
            return error_set(err, "%s: folder path too long", dir);
        present[sp] = caption_is_file(path);
        *found += present[sp];
    }
    if (*found == 0) return 0;
    for (int sp = 0; sp < SPLIT_COUNT; sp++) {
        caption_join_path(path, sizeof path, dir, FLICKR_LISTS[sp], NULL);
        if (!present[sp])
            return error_set(err, "%s: split list missing (the other lists are present)", path);
        unsigned char *data;
        size_t len;
        if (file_read_all(path, &data, &len, b->opts->max_file_bytes, err)) return -1;
        CaptionLines l;
        caption_lines_init(&l, data, len);
        const char *s;
        size_t n;
        char name[CAPTION_PATH_MAX], why[128];
        while (caption_lines_next(&l, &s, &n)) {
            while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
            while (n && (*s == ' ' || *s == '\t')) s++, n--;
            if (n == 0) continue;
            if (!caption_field_str(name, sizeof name, s, n, "file name", why, sizeof why)) {
                caption_set_warn(b->set, "%s:%d: %s", path, l.line, why);
                continue;
            }
            int prev = caption_keys_get(splits, name);
            if (prev >= 0) {
                if (prev != sp)
                    caption_set_warn(b->set, "%s:%d: %s is already in the %s list; kept there",
                                     path, l.line, name, split_name((Split)prev));
                continue;
            }
            caption_keys_put(splits, name, sp);
        }
        free(data);
    }
    return 0;
}

// DIR's token file, and its images' folder: Flicker8k_Dataset (the archive's spelling),
// Flickr8k_Dataset, or DIR itself.
static int flickr_paths(char *token_path, char *images_dir, const char *dir, Error *err) {
    if (caption_join_path(token_path, CAPTION_PATH_MAX, dir, "Flickr8k.token.txt", NULL) ||
        caption_join_path(images_dir, CAPTION_PATH_MAX, dir, "Flicker8k_Dataset", NULL))
        return error_set(err, "%s: folder path too long", dir);
    if (!caption_is_dir(images_dir)) {
        caption_join_path(images_dir, CAPTION_PATH_MAX, dir, "Flickr8k_Dataset", NULL);
        if (!caption_is_dir(images_dir)) snprintf(images_dir, CAPTION_PATH_MAX, "%s", dir);
    }
    return 0;
}

// The token file's records as they are read: the split lists (when found), and the images
// in none of them, skipped with one warning naming the first.
typedef struct {
    CaptionBuilder *b;
    const CaptionOptions *opts;
    const char *images_dir;
    CaptionKeys splits;    // name -> Split, from the lists
    int found;             // how many lists were found (0: the held-out hash splits)
    CaptionKeys unlisted;  // the images in no list
    int no_split;
    char first_no_split[CAPTION_PATH_MAX + 32];  // where the first of them was
} FlickrRead;

// An image's split: its list's, or the held-out hash's without lists; -1 for an image in
// no list (counted, and its caption skipped).
static int flickr_split(FlickrRead *r, const char *name, const char *where) {
    CaptionSet *set = r->b->set;
    if (!r->found) return (int)caption_heldout_split(name, r->opts->valid_share, r->opts->test_share);
    int sp = caption_keys_get(&r->splits, name);
    if (sp >= 0) return sp;
    if (caption_keys_get(&r->unlisted, name) < 0) {
        caption_keys_put(&r->unlisted, name, 1);
        set->images_skipped++;
        if (r->no_split++ == 0) snprintf(r->first_no_split, sizeof r->first_no_split, "%s", where);
    }
    set->captions_skipped++;
    return -1;
}

// One record of the token file: NAME.jpg#K<TAB>caption.
static void flickr_record(FlickrRead *r, const char *s, size_t n, const char *where) {
    CaptionSet *set = r->b->set;
    char name[CAPTION_PATH_MAX], path[CAPTION_PATH_MAX], why[128];
    const char *tab = memchr(s, '\t', n);
    if (!tab) {
        caption_skip(set, where, "no tab: expected NAME.jpg#K<TAB>caption");
        return;
    }
    size_t klen = (size_t)(tab - s);
    const char *hash = NULL;
    for (size_t k = klen; k-- > 0;)
        if (s[k] == '#') {
            hash = s + k;
            break;
        }
    size_t nlen = hash ? (size_t)(hash - s) : klen;
    if (!caption_field_str(name, sizeof name, s, nlen, "image name", why, sizeof why)) {
        caption_skip(set, where, why);
        return;
    }
    int i = caption_keys_get(&r->b->keys, name);
    if (i < 0) {
        int split = flickr_split(r, name, where);
        if (split < 0) return;
        if (caption_join_path(path, sizeof path, r->images_dir, name, NULL)) {
            caption_skip(set, where, "image path too long");
            return;
        }
        i = caption_builder_add_image(r->b, name, path, name, -1, (Split)split, !r->found, where);
    }
    caption_builder_add_caption(r->b, i, tab + 1, (size_t)(s + n - tab - 1), where);
}

int caption_read_flickr8k(CaptionSet *set, const char *dir, const CaptionOptions *opts,
                          Error *err) {
    CaptionOptions defaults;
    opts = caption_reader_begin(set, opts, &defaults);
    if (!caption_is_dir(dir)) return error_set(err, "%s: Flickr8k folder not found", dir);
    char token_path[CAPTION_PATH_MAX], images_dir[CAPTION_PATH_MAX];
    if (flickr_paths(token_path, images_dir, dir, err)) return -1;
    unsigned char *data;
    size_t len;
    if (file_read_all(token_path, &data, &len, opts->max_file_bytes, err)) {
        if (!caption_is_file(token_path))
            error_set(err,
                      "%s: not found (flickr8k:DIR needs the text files of "
                      "Flickr8k_text.zip in DIR)",
                      token_path);
        return -1;
    }
    CaptionBuilder b;
    caption_builder_init(&b, set, opts, token_path);
    FlickrRead r = {.b = &b, .opts = opts, .images_dir = images_dir};
    if (flickr_read_lists(&r.splits, &r.found, &b, dir, err)) {
        free(data);
        caption_keys_free(&r.splits);
        return caption_builder_fail(&b);
    }
    if (r.found == 0)
        caption_set_warn(
            set, "%s: no split lists (Flickr_8k.*Images.txt); splits by the held-out hash", dir);
    CaptionLines l;
    caption_lines_init(&l, data, len);
    const char *s;
    size_t n;
    char where[CAPTION_PATH_MAX + 32];
    while (caption_lines_next_record(&l, &s, &n, where, sizeof where, token_path))
        flickr_record(&r, s, n, where);
    if (r.no_split)
        caption_set_warn(set, "%s: %d image%s in none of the split lists skipped", r.first_no_split,
                         r.no_split, r.no_split == 1 ? "" : "s");
    caption_keys_free(&r.unlisted);
    caption_keys_free(&r.splits);
    free(data);
    return caption_builder_finish(&b, err);
}

