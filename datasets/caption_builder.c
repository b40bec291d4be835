// caption_builder.c: what the caption-file readers share (datasets/caption_builder.h).
#include "datasets/caption_builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/check.h"

uint64_t caption_fnv1a64(const char *s, size_t len) {
    uint64_t h = 14695981039346656037ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

void caption_keys_free(CaptionKeys *m) {
    for (size_t i = 0; i < m->cap; i++) free(m->keys[i]);
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

static size_t keys_slot(const CaptionKeys *m, const char *key) {
    size_t mask = m->cap - 1, i = (size_t)caption_fnv1a64(key, strlen(key)) & mask;
    while (m->keys[i] && strcmp(m->keys[i], key) != 0) i = (i + 1) & mask;
    return i;
}

int caption_keys_get(const CaptionKeys *m, const char *key) {
    if (m->cap == 0) return -1;
    size_t i = keys_slot(m, key);
    return m->keys[i] ? m->vals[i] : -1;
}

void caption_keys_put(CaptionKeys *m, const char *key, int val) {
    if (2 * (m->n + 1) > m->cap) {
        CaptionKeys g = {0};
        g.cap = m->cap ? 2 * m->cap : 64;
        g.keys = xcalloc(g.cap, sizeof *g.keys);
        g.vals = xcalloc(g.cap, sizeof *g.vals);
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i]) {
                size_t j = keys_slot(&g, m->keys[i]);
                g.keys[j] = m->keys[i];
                g.vals[j] = m->vals[i];
                g.n++;
            }
        free(m->keys);
        free(m->vals);
        *m = g;
    }
    size_t i = keys_slot(m, key);
    if (!m->keys[i]) {
        m->keys[i] = xstrdup(key);
        m->n++;
    }
    m->vals[i] = val;
}

int caption_join_path(char *out, size_t cap, const char *a, const char *b, const char *c) {
    size_t la = strlen(a);
    const char *sep = (la > 0 && a[la - 1] == '/') ? "" : "/";
    int n;
    if (c)
        n = snprintf(out, cap, "%s%s%s/%s", a, sep, b, c);
    else
        n = snprintf(out, cap, "%s%s%s", a, sep, b);
    return (n < 0 || (size_t)n >= cap) ? -1 : 0;
}

int caption_is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int caption_is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && !S_ISDIR(st.st_mode);
}

int caption_split_from_word(const char *w, size_t len, Split *out) {
    if (len == 5 && memcmp(w, "train", 5) == 0)
        *out = SPLIT_TRAIN;
    else if (len == 7 && memcmp(w, "restval", 7) == 0)
        *out = SPLIT_TRAIN;
    else if (len == 3 && memcmp(w, "val", 3) == 0)
        *out = SPLIT_VALID;
    else if (len == 5 && memcmp(w, "valid", 5) == 0)
        *out = SPLIT_VALID;
    else if (len == 3 && memcmp(w, "dev", 3) == 0)
        *out = SPLIT_VALID;
    else if (len == 4 && memcmp(w, "test", 4) == 0)
        *out = SPLIT_TEST;
    else
        return -1;
    return 0;
}


// The builder every reader fills: images by key, caption records, then grouping.

void caption_builder_init(CaptionBuilder *b, CaptionSet *set, const CaptionOptions *opts,
                          const char *source) {
    memset(set, 0, sizeof *set);
    snprintf(set->source, sizeof set->source, "%s", source);
    memset(b, 0, sizeof *b);
    b->set = set;
    b->opts = opts;
}

void caption_builder_free(CaptionBuilder *b) {
    for (int i = 0; i < b->n_images; i++) {
        free(b->images[i].path);
        free(b->images[i].id);
    }
    free(b->images);
    free(b->usable);
    free(b->warned);
    for (int i = 0; i < b->n_caps; i++) free(b->cap_text[i]);
    free(b->cap_image);
    free(b->cap_text);
    caption_keys_free(&b->keys);
}

int caption_builder_add_image(CaptionBuilder *b, const char *key, const char *path,
                              const char *id, long long numeric_id, Split split, int hashed,
                              const char *where) {
    if (b->n_images == b->cap_images) {
        b->cap_images = b->cap_images ? 2 * b->cap_images : 256;
        b->images = xrealloc(b->images, (size_t)b->cap_images * sizeof *b->images);
        b->usable = xrealloc(b->usable, (size_t)b->cap_images);
        b->warned = xrealloc(b->warned, (size_t)b->cap_images);
    }
    int i = b->n_images++;
    CaptionImage *im = &b->images[i];
    memset(im, 0, sizeof *im);
    im->path = xstrdup(path);
    im->id = xstrdup(id);
    im->numeric_id = numeric_id;
    im->split = split;
    im->split_hashed = hashed;
    b->usable[i] = 1;
    b->warned[i] = 0;
    if (key) caption_keys_put(&b->keys, key, i);
    if (b->opts->check_images && !caption_is_file(path)) {
        caption_set_warn(b->set, "%s: image %s not found", where, path);
        b->usable[i] = 0;
        b->warned[i] = 1;
    }
    return i;
}

void caption_skip(CaptionSet *set, const char *where, const char *why) {
    caption_set_warn(set, "%s: %s", where, why);
    set->captions_skipped++;
}

// Checks and normalises one caption: whitespace controls become spaces, surrounding
// whitespace is trimmed. Returns a malloc'd copy, or NULL with *why set.
static char *clean_caption(const char *s, size_t len, char *why, size_t why_cap) {
    size_t bad;
    if (!caption_utf8_valid(s, len, &bad)) {
        snprintf(why, why_cap, "invalid UTF-8 at byte %zu of the caption", bad);
        return NULL;
    }
    size_t a = 0, z = len;
    while (a < z && (s[a] == ' ' || (s[a] >= '\t' && s[a] <= '\r'))) a++;
    while (z > a && (s[z - 1] == ' ' || (s[z - 1] >= '\t' && s[z - 1] <= '\r'))) z--;
    if (a == z) {
        snprintf(why, why_cap, "empty caption");
        return NULL;
    }
    if (z - a > CAPTION_MAX_BYTES) {
        snprintf(why, why_cap, "caption of %zu bytes is longer than the limit of %d", z - a,
                 CAPTION_MAX_BYTES);
        return NULL;
    }
    char *out = xmalloc(z - a + 1);
    for (size_t i = a; i < z; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= '\t' && c <= '\r')
            c = ' ';
        else if (c < 0x20 || c == 0x7F) {
            free(out);
            snprintf(why, why_cap, "control character 0x%02x in the caption", c);
            return NULL;
        }
        out[i - a] = (char)c;
    }
    out[z - a] = 0;
    return out;
}

int caption_builder_add_caption(CaptionBuilder *b, int i, const char *text, size_t len,
                                const char *where) {
    if (!b->usable[i]) {
        b->set->captions_skipped++;
        return -1;
    }
    char why[128];
    char *c = clean_caption(text, len, why, sizeof why);
    if (!c) {
        caption_skip(b->set, where, why);
        return -1;
    }
    if (b->n_caps == b->cap_caps) {
        b->cap_caps = b->cap_caps ? 2 * b->cap_caps : 1024;
        b->cap_image = xrealloc(b->cap_image, (size_t)b->cap_caps * sizeof *b->cap_image);
        b->cap_text = xrealloc(b->cap_text, (size_t)b->cap_caps * sizeof *b->cap_text);
    }
    b->cap_image[b->n_caps] = i;
    b->cap_text[b->n_caps++] = c;
    return 0;
}

int caption_builder_finish(CaptionBuilder *b, Error *err) {
    CaptionSet *set = b->set;
    int *count = xcalloc((size_t)b->n_images + 1, sizeof *count);
    for (int k = 0; k < b->n_caps; k++) count[b->cap_image[k]]++;
    int *remap = xmalloc(((size_t)b->n_images + 1) * sizeof *remap);
    int n_used = 0, n_silent = 0;
    for (int i = 0; i < b->n_images; i++) {
        if (count[i] > 0) {
            remap[i] = n_used++;
        } else {
            remap[i] = -1;
            set->images_skipped++;
            if (!b->warned[i]) n_silent++;
        }
    }
    if (n_silent > 0) {
        const char *first = NULL;
        for (int i = 0; i < b->n_images && !first; i++)
            if (count[i] == 0 && !b->warned[i]) first = b->images[i].id;
        caption_set_warn(set, "%s: %d image%s without any caption skipped (first: %s)", set->source,
                         n_silent, n_silent == 1 ? "" : "s", first);
    }
    if (n_used == 0) {
        error_set(err, "%s: nothing usable: %d image%s and %d caption%s skipped%s%s", set->source,
                  set->images_skipped, set->images_skipped == 1 ? "" : "s", set->captions_skipped,
                  set->captions_skipped == 1 ? "" : "s", set->n_warnings ? "; first problem: " : "",
                  set->n_warnings ? set->warnings[0] : "");
        free(count);
        free(remap);
        caption_builder_free(b);
        caption_set_free(set);
        return -1;
    }
    set->images = xmalloc((size_t)n_used * sizeof *set->images);
    set->n_images = n_used;
    set->captions = xmalloc((size_t)b->n_caps * sizeof *set->captions);
    set->n_captions = b->n_caps;
    int next = 0;
    for (int i = 0; i < b->n_images; i++) {
        if (remap[i] < 0) continue;
        CaptionImage *im = &set->images[remap[i]];
        *im = b->images[i];
        b->images[i].path = b->images[i].id = NULL;  // moved
        im->first_caption = next;
        im->n_captions = 0;
        next += count[i];
    }
    for (int k = 0; k < b->n_caps; k++) {  // stable: file order within an image
        CaptionImage *im = &set->images[remap[b->cap_image[k]]];
        set->captions[im->first_caption + im->n_captions++] = b->cap_text[k];
        b->cap_text[k] = NULL;
    }
    free(count);
    free(remap);
    caption_builder_free(b);
    return 0;
}

int caption_builder_fail(CaptionBuilder *b) {
    caption_builder_free(b);
    caption_set_free(b->set);
    return -1;
}


// Text files: lines of a buffer.

void caption_lines_init(CaptionLines *l, const unsigned char *data, size_t len) {
    l->p = (const char *)data;
    l->end = l->p + len;
    l->line = 0;
    if (len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0) l->p += 3;  // UTF-8 byte order mark
}

int caption_lines_next(CaptionLines *l, const char **s, size_t *len) {
    if (l->p >= l->end) return 0;
    const char *nl = memchr(l->p, '\n', (size_t)(l->end - l->p));
    const char *stop = nl ? nl : l->end;
    *s = l->p;
    *len = (size_t)(stop - l->p);
    if (*len > 0 && (*s)[*len - 1] == '\r') (*len)--;
    l->p = nl ? nl + 1 : l->end;
    l->line++;
    return 1;
}

int caption_blank(const char *s, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (!(s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r'))) return 0;
    return 1;
}

int caption_lines_next_record(CaptionLines *l, const char **s, size_t *len, char *where,
                              size_t cap, const char *path) {
    while (caption_lines_next(l, s, len))
        if (!caption_blank(*s, *len)) {
            snprintf(where, cap, "%s:%d", path, l->line);
            return 1;
        }
    return 0;
}

const char *caption_field_str(char *buf, size_t cap, const char *s, size_t len,
                              const char *what, char *why, size_t why_cap) {
    size_t bad;
    if (len == 0) {
        snprintf(why, why_cap, "empty %s", what);
        return NULL;
    }
    if (len >= cap) {
        snprintf(why, why_cap, "%s longer than %zu bytes", what, cap - 1);
        return NULL;
    }
    if (memchr(s, 0, len) || !caption_utf8_valid(s, len, &bad)) {
        snprintf(why, why_cap, "%s is not valid UTF-8 text", what);
        return NULL;
    }
    memcpy(buf, s, len);
    buf[len] = 0;
    return buf;
}

const CaptionOptions *caption_reader_begin(CaptionSet *set, const CaptionOptions *opts,
                                           CaptionOptions *defaults) {
    memset(set, 0, sizeof *set);
    if (opts) return opts;
    caption_options_default(defaults);
    return defaults;
}
