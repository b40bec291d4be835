// captions_json.c: the COCO and Karpathy readers (datasets/captions_json.h), through cJSON.
#include "datasets/captions_json.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/fileio.h"
#include "datasets/caption_builder.h"

// Deepest [ / { nesting outside strings; *at gets where the limit was first passed.
static int json_depth_ok(const char *s, size_t len, int limit, size_t *at) {
    int depth = 0, in_str = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '[' || c == '{') {
            if (++depth > limit) {
                *at = i;
                return 0;
            }
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return 1;
}

static int json_load(cJSON **root, const char *path, const CaptionOptions *opts, Error *err) {
    *root = NULL;
    unsigned char *data;
    size_t len;
    if (file_read_all(path, &data, &len, opts->max_file_bytes, err)) return -1;
    size_t at = 0;
    if (!json_depth_ok((const char *)data, len, CJSON_NESTING_LIMIT, &at)) {
        free(data);
        return error_set(err, "%s: JSON nested deeper than %d levels (at byte %zu)", path,
                         CJSON_NESTING_LIMIT, at);
    }
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts((const char *)data, len, &end, 0);
    if (!j) {
        size_t off = end ? (size_t)(end - (const char *)data) : 0;
        int line = 1;
        for (size_t i = 0; i < off && i < len; i++) line += data[i] == '\n';
        free(data);
        return error_set(err, "%s: invalid JSON at line %d (byte %zu)", path, line, off);
    }
    free(data);
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return error_set(err, "%s: the JSON top level is not an object", path);
    }
    *root = j;
    return 0;
}

static cJSON *json_array_field(cJSON *root, const char *name, const char *path, Error *err) {
    cJSON *a = cJSON_GetObjectItemCaseSensitive(root, name);
    if (!cJSON_IsArray(a)) {
        error_set(err, "%s: %s \"%s\" array", path, a ? "not an" : "no", name);
        return NULL;
    }
    return a;
}

// Start of the JSON readers: the image folder exists, json_path parses to an object with an
// "images" array. On failure nothing is left to free.
static int json_open_images(cJSON **root, cJSON **images, const char *json_path,
                            const char *images_dir, const CaptionOptions *opts, Error *err) {
    *root = *images = NULL;
    if (!caption_is_dir(images_dir))
        return error_set(err, "%s: image folder %s not found", json_path, images_dir);
    if (json_load(root, json_path, opts, err)) return -1;
    *images = json_array_field(*root, "images", json_path, err);
    if (*images) return 0;
    cJSON_Delete(*root);
    *root = NULL;
    return -1;
}

// A JSON number that is a whole number in [0, 2^53]; -1 otherwise.
static long long json_id(const cJSON *v) {
    if (!cJSON_IsNumber(v)) return -1;
    double d = v->valuedouble;
    if (!(d >= 0 && d <= 9007199254740992.0) || floor(d) != d) return -1;
    return (long long)d;
}

// A non-empty string field; NULL when missing / wrong type / empty / not UTF-8.
static const char *json_str(const cJSON *obj, const char *name) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!cJSON_IsString(v) || !v->valuestring || !*v->valuestring) return NULL;
    return v->valuestring;
}

// One entry of COCO's "images" (images[k]): an object with a whole "id" >= 0 not seen
// before and a "file_name" that is valid UTF-8, added under its id's decimal key with the
// held-out hash's split; else warned about and counted as skipped. entry[i] gets k for the
// builder's image i (entry has room for every entry of "images").
static void coco_image(CaptionBuilder *b, const cJSON *it, const char *images_dir,
                       const char *where, int k, int *entry) {
    CaptionSet *set = b->set;
    char path[CAPTION_PATH_MAX], key[32];
    long long id = json_id(cJSON_GetObjectItemCaseSensitive(it, "id"));
    const char *file = json_str(it, "file_name");
    if (!cJSON_IsObject(it) || id < 0 || !file) {
        caption_set_warn(set, "%s: %s", where,
                         !cJSON_IsObject(it) ? "not an object"
                         : id < 0            ? "\"id\" is not a whole number >= 0"
                                             : "\"file_name\" is not a non-empty string");
        set->images_skipped++;
        return;
    }
    snprintf(key, sizeof key, "%lld", id);
    int first = caption_keys_get(&b->keys, key);
    if (first >= 0) {  // the annotations of the id go to the first entry, whatever becomes of it
        if (b->usable[first])
            caption_set_warn(set, "%s: duplicate id %s (also images[%d]); this entry skipped, "
                             "the annotations of id %s go to images[%d]",
                             where, key, entry[first], key, entry[first]);
        else
            caption_set_warn(set, "%s: duplicate id %s (also images[%d], whose image is not "
                             "found); both entries and the annotations of id %s skipped",
                             where, key, entry[first], key);
        set->images_skipped++;
        return;
    }
    if (!caption_utf8_valid(file, strlen(file), NULL) ||
        caption_join_path(path, sizeof path, images_dir, file, NULL)) {
        caption_set_warn(set, "%s: \"file_name\" is not valid UTF-8 or too long", where);
        set->images_skipped++;
        return;
    }
    const CaptionOptions *o = b->opts;
    int i = caption_builder_add_image(b, key, path, key, id,
                                      caption_heldout_split(key, o->valid_share, o->test_share), 1,
                                      where);
    entry[i] = k;
}

// One entry of COCO's "annotations": an object with a whole "image_id" among the images and
// a string "caption", added to that image; else skipped with a warning.
static void coco_annotation(CaptionBuilder *b, const cJSON *it, const char *where) {
    CaptionSet *set = b->set;
    char key[32];
    long long id = json_id(cJSON_GetObjectItemCaseSensitive(it, "image_id"));
    const cJSON *cap = cJSON_GetObjectItemCaseSensitive(it, "caption");
    if (!cJSON_IsObject(it) || id < 0 || !cJSON_IsString(cap) || !cap->valuestring) {
        caption_skip(set, where,
                     !cJSON_IsObject(it) ? "not an object"
                     : id < 0            ? "\"image_id\" is not a whole number >= 0"
                                         : "\"caption\" is not a string");
        return;
    }
    snprintf(key, sizeof key, "%lld", id);
    int i = caption_keys_get(&b->keys, key);
    if (i < 0) {
        caption_set_warn(set, "%s: image_id %s is not among the images", where, key);
        set->captions_skipped++;
        return;
    }
    caption_builder_add_caption(b, i, cap->valuestring, strlen(cap->valuestring), where);
}

int caption_read_coco(CaptionSet *set, const char *json_path, const char *images_dir,
                      const CaptionOptions *opts, Error *err) {
    CaptionOptions defaults;
    opts = caption_reader_begin(set, opts, &defaults);
    cJSON *root, *images;
    if (json_open_images(&root, &images, json_path, images_dir, opts, err)) return -1;
    cJSON *anns = json_array_field(root, "annotations", json_path, err);
    if (!anns) {
        cJSON_Delete(root);
        return -1;
    }
    CaptionBuilder b;
    caption_builder_init(&b, set, opts, json_path);
    char where[CAPTION_PATH_MAX + 64];
    int k = 0;
    int *entry = xmalloc(((size_t)cJSON_GetArraySize(images) + 1) * sizeof *entry);
    const cJSON *it;
    cJSON_ArrayForEach(it, images) {
        snprintf(where, sizeof where, "%s: images[%d]", json_path, k);
        coco_image(&b, it, images_dir, where, k, entry);
        k++;
    }
    free(entry);
    k = 0;
    cJSON_ArrayForEach(it, anns) {
        snprintf(where, sizeof where, "%s: annotations[%d]", json_path, k++);
        coco_annotation(&b, it, where);
    }
    cJSON_Delete(root);
    return caption_builder_finish(&b, err);
}

int caption_read_coco_references(CaptionSet *set, const char *json_path,
                                  const CaptionOptions *opts, Error *err) {
    CaptionOptions o;
    caption_options_default(&o);
    if (opts) o = *opts;
    o.check_images = 0;  // the "path" of each image is its id: nothing to look for
    memset(set, 0, sizeof *set);  // left empty on failure, as by every reader
    cJSON *root;
    if (json_load(&root, json_path, &o, err)) return -1;
    cJSON *anns = json_array_field(root, "annotations", json_path, err);
    if (!anns) {
        cJSON_Delete(root);
        return -1;
    }
    CaptionBuilder b;
    caption_builder_init(&b, set, &o, json_path);
    char where[CAPTION_PATH_MAX + 64], key[32];
    int k = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, anns) {
        snprintf(where, sizeof where, "%s: annotations[%d]", json_path, k++);
        long long id = json_id(cJSON_GetObjectItemCaseSensitive(it, "image_id"));
        const cJSON *cap = cJSON_GetObjectItemCaseSensitive(it, "caption");
        if (!cJSON_IsObject(it) || id < 0 || !cJSON_IsString(cap) || !cap->valuestring) {
            caption_skip(set, where,
                         !cJSON_IsObject(it) ? "not an object"
                         : id < 0            ? "\"image_id\" is not a whole number >= 0"
                                             : "\"caption\" is not a string");
            continue;
        }
        snprintf(key, sizeof key, "%lld", id);
        int i = caption_keys_get(&b.keys, key);
        if (i < 0) i = caption_builder_add_image(&b, key, key, key, id, SPLIT_TEST, 0, where);
        caption_builder_add_caption(&b, i, cap->valuestring, strlen(cap->valuestring), where);
    }
    cJSON_Delete(root);
    return caption_builder_finish(&b, err);
}

// Joins a "tokens" array of strings with single spaces; NULL when it is not one.
static char *join_tokens(const cJSON *tokens) {
    if (!cJSON_IsArray(tokens)) return NULL;
    size_t len = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, tokens) {
        if (!cJSON_IsString(t) || !t->valuestring) return NULL;
        len += strlen(t->valuestring) + 1;
    }
    char *out = xmalloc(len + 1), *p = out;
    *p = 0;
    cJSON_ArrayForEach(t, tokens) {
        size_t n = strlen(t->valuestring);
        if (p != out) *p++ = ' ';
        memcpy(p, t->valuestring, n);
        p += n;
        *p = 0;
    }
    return out;
}

// An entry of "images" as read: its file name, its path under the images' folder, its
// split and its COCO id (-1 when it has none).
typedef struct {
    const char *file;
    char path[CAPTION_PATH_MAX];
    Split split;
    long long id;
} KarpathyImage;

// What is wrong with an entry of "images" (NULL: nothing); *im filled when nothing is.
static const char *karpathy_image_check(const cJSON *it, const char *images_dir, KarpathyImage *im) {
    const char *file = json_str(it, "filename");
    const cJSON *fp = cJSON_GetObjectItemCaseSensitive(it, "filepath");
    const char *split_word = json_str(it, "split");
    const cJSON *cocoid = cJSON_GetObjectItemCaseSensitive(it, "cocoid");
    if (!cJSON_IsObject(it)) return "not an object";
    if (!file) return "\"filename\" is not a non-empty string";
    if (fp && !(cJSON_IsString(fp) && fp->valuestring)) return "\"filepath\" is not a string";
    if (!split_word) return "\"split\" is not a non-empty string";
    if (caption_split_from_word(split_word, strlen(split_word), &im->split) ||
        !strcmp(split_word, "dev"))
        return "\"split\" is not train, val, test or restval";
    if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(it, "sentences")))
        return "\"sentences\" is not an array";
    im->id = cocoid ? json_id(cocoid) : -1;
    if (cocoid && im->id < 0) return "\"cocoid\" is not a whole number >= 0";
    if (!caption_utf8_valid(file, strlen(file), NULL) ||
        (fp && !caption_utf8_valid(fp->valuestring, strlen(fp->valuestring), NULL)))
        return "file name is not valid UTF-8";
    im->file = file;
    int pathlen = (fp && *fp->valuestring)
                      ? caption_join_path(im->path, sizeof im->path, images_dir, fp->valuestring, file)
                      : caption_join_path(im->path, sizeof im->path, images_dir, file, NULL);
    return pathlen ? "image path too long" : NULL;
}

// Image i's "sentences" (at where): each one's "raw" text, or its "tokens" joined.
static void karpathy_sentences(CaptionBuilder *b, int i, const cJSON *sents, const char *where) {
    char swhere[CAPTION_PATH_MAX + 96];
    int j = 0;
    const cJSON *s;
    cJSON_ArrayForEach(s, sents) {
        snprintf(swhere, sizeof swhere, "%s.sentences[%d]", where, j++);
        const cJSON *raw = cJSON_GetObjectItemCaseSensitive(s, "raw");
        if (cJSON_IsString(raw) && raw->valuestring) {
            caption_builder_add_caption(b, i, raw->valuestring, strlen(raw->valuestring), swhere);
            continue;
        }
        char *joined = raw ? NULL : join_tokens(cJSON_GetObjectItemCaseSensitive(s, "tokens"));
        if (!joined) {
            if (b->usable[i])
                caption_set_warn(b->set, "%s: %s", swhere,
                                 raw ? "\"raw\" is not a string"
                                     : "neither a \"raw\" string nor a \"tokens\" array of strings");
            b->set->captions_skipped++;
            continue;
        }
        caption_builder_add_caption(b, i, joined, strlen(joined), swhere);
        free(joined);
    }
}

int caption_read_karpathy(CaptionSet *set, const char *json_path, const char *images_dir,
                          const CaptionOptions *opts, Error *err) {
    CaptionOptions defaults;
    opts = caption_reader_begin(set, opts, &defaults);
    cJSON *root, *images;
    if (json_open_images(&root, &images, json_path, images_dir, opts, err)) return -1;
    CaptionBuilder b;
    caption_builder_init(&b, set, opts, json_path);
    char where[CAPTION_PATH_MAX + 64], key[32];
    KarpathyImage im;
    int k = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, images) {
        snprintf(where, sizeof where, "%s: images[%d]", json_path, k++);
        const cJSON *sents = cJSON_GetObjectItemCaseSensitive(it, "sentences");
        const char *why = karpathy_image_check(it, images_dir, &im);
        if (why || caption_keys_get(&b.keys, im.path) >= 0) {
            if (why)
                caption_set_warn(set, "%s: %s", where, why);
            else
                caption_set_warn(set, "%s: duplicate image %s; this entry skipped", where, im.path);
            set->images_skipped++;
            set->captions_skipped += cJSON_IsArray(sents) ? cJSON_GetArraySize(sents) : 0;
            continue;
        }
        if (im.id >= 0) snprintf(key, sizeof key, "%lld", im.id);
        int i = caption_builder_add_image(&b, im.path, im.path, im.id >= 0 ? key : im.file, im.id,
                                          im.split, 0, where);
        karpathy_sentences(&b, i, sents, where);
    }
    cJSON_Delete(root);
    return caption_builder_finish(&b, err);
}

