// captions.c: see captions.h.
#include "datasets/captions.h"

#include <cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/check.h"
#include "core/text_escape.h"
#include "core/fileio.h"

// ---------------------------------------------------------------------------------------
// Small helpers: hashing, a string -> int map, UTF-8, paths.

static uint64_t fnv1a64(const char *s, size_t len) {
    uint64_t h = 14695981039346656037ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

Split caption_heldout_split(const char *id, double valid_share, double test_share) {
    uint64_t u = fnv1a64(id, strlen(id)) % 10000;
    double valid_end = valid_share * 10000.0, test_end = (valid_share + test_share) * 10000.0;
    if ((double)u < valid_end) return SPLIT_VALID;
    if ((double)u < test_end) return SPLIT_TEST;
    return SPLIT_TRAIN;
}

// Orders images by their place in the hash: u = h mod 10000 first (the value the split
// compares), then the whole h, then the index.
static int heldout_before(const CaptionImage *a, int ia, const CaptionImage *b, int ib) {
    uint64_t ha = fnv1a64(a->id, strlen(a->id)), hb = fnv1a64(b->id, strlen(b->id));
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

// Open-addressing map from owned strings to ints (>= 0).
typedef struct {
    char **keys;  // (cap) NULL = free slot
    int *vals;    // (cap)
    size_t cap, n;
} StrMap;

static void strmap_free(StrMap *m) {
    for (size_t i = 0; i < m->cap; i++) free(m->keys[i]);
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

static size_t strmap_slot(const StrMap *m, const char *key) {
    size_t mask = m->cap - 1, i = (size_t)fnv1a64(key, strlen(key)) & mask;
    while (m->keys[i] && strcmp(m->keys[i], key) != 0) i = (i + 1) & mask;
    return i;
}

static int strmap_get(const StrMap *m, const char *key) {
    if (m->cap == 0) return -1;
    size_t i = strmap_slot(m, key);
    return m->keys[i] ? m->vals[i] : -1;
}

static void strmap_put(StrMap *m, const char *key, int val) {
    if (2 * (m->n + 1) > m->cap) {
        StrMap g = {0};
        g.cap = m->cap ? 2 * m->cap : 64;
        g.keys = xcalloc(g.cap, sizeof *g.keys);
        g.vals = xcalloc(g.cap, sizeof *g.vals);
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i]) {
                size_t j = strmap_slot(&g, m->keys[i]);
                g.keys[j] = m->keys[i];
                g.vals[j] = m->vals[i];
                g.n++;
            }
        free(m->keys);
        free(m->vals);
        *m = g;
    }
    size_t i = strmap_slot(m, key);
    if (!m->keys[i]) {
        m->keys[i] = xstrdup(key);
        m->n++;
    }
    m->vals[i] = val;
}

// out = a/b (b may be NULL) [/c]; -1 when it does not fit in cap bytes.
static int join_path(char *out, size_t cap, const char *a, const char *b, const char *c) {
    size_t la = strlen(a);
    const char *sep = (la > 0 && a[la - 1] == '/') ? "" : "/";
    int n;
    if (c)
        n = snprintf(out, cap, "%s%s%s/%s", a, sep, b, c);
    else
        n = snprintf(out, cap, "%s%s%s", a, sep, b);
    return (n < 0 || (size_t)n >= cap) ? -1 : 0;
}

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && !S_ISDIR(st.st_mode);
}

static int split_from_word(const char *w, size_t len, Split *out) {
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
// The builder every reader fills: images by key, caption records, then grouping.

typedef struct {
    CaptionSet *set;  // warnings and skip counts go here
    const CaptionOptions *opts;
    CaptionImage *images;   // (n_images) first_caption unused until the end
    unsigned char *usable;  // (n_images) 0: records of this image are skipped
    unsigned char *warned;  // (n_images) 1: a warning already named this image
    int n_images, cap_images;
    int *cap_image;   // (n_caps) image of each caption record
    char **cap_text;  // (n_caps)
    int n_caps, cap_caps;
    StrMap keys;  // key -> image index
} Builder;

static void builder_init(Builder *b, CaptionSet *set, const CaptionOptions *opts,
                         const char *source) {
    memset(set, 0, sizeof *set);
    snprintf(set->source, sizeof set->source, "%s", source);
    memset(b, 0, sizeof *b);
    b->set = set;
    b->opts = opts;
}

static void builder_free(Builder *b) {
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
    strmap_free(&b->keys);
}

// Adds an image under key (NULL: no lookup key); hashed: its split came from the held-out
// hash. where: "FILE:LINE" or "FILE: images[K]" for the missing-file warning. Returns the
// new index (usable or not).
static int builder_add_image(Builder *b, const char *key, const char *path, const char *id,
                             long long numeric_id, Split split, int hashed, const char *where) {
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
    if (key) strmap_put(&b->keys, key, i);
    if (b->opts->check_images && !is_file(path)) {
        caption_set_warn(b->set, "%s: image %s not found", where, path);
        b->usable[i] = 0;
        b->warned[i] = 1;
    }
    return i;
}

// A caption record that cannot be used: warned as "WHERE: WHY" and counted.
static void skip_caption(CaptionSet *set, const char *where, const char *why) {
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

// One caption record for image i. Returns 0 when used, -1 when skipped (warned as where).
static int builder_add_caption(Builder *b, int i, const char *text, size_t len, const char *where) {
    if (!b->usable[i]) {
        b->set->captions_skipped++;
        return -1;
    }
    char why[128];
    char *c = clean_caption(text, len, why, sizeof why);
    if (!c) {
        skip_caption(b->set, where, why);
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

// Moves the usable images with captions into set, grouped. Fails when nothing is usable.
static int builder_finish(Builder *b, Error *err) {
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
        builder_free(b);
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
    builder_free(b);
    return 0;
}

static int builder_fail(Builder *b) {
    builder_free(b);
    caption_set_free(b->set);
    return -1;
}

// ---------------------------------------------------------------------------------------
// Text files: lines of a buffer.

typedef struct {
    const char *p, *end;
    int line;  // 1-based number of the line last returned
} Lines;

static void lines_init(Lines *l, const unsigned char *data, size_t len) {
    l->p = (const char *)data;
    l->end = l->p + len;
    l->line = 0;
    if (len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0) l->p += 3;  // UTF-8 byte order mark
}

// Next line without its "\n" / "\r\n"; 0 at the end.
static int lines_next(Lines *l, const char **s, size_t *len) {
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

static int blank(const char *s, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (!(s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r'))) return 0;
    return 1;
}

// Next line that is not blank, with where (cap bytes) set to "PATH:LINE"; 0 at the end.
static int lines_next_record(Lines *l, const char **s, size_t *len, char *where, size_t cap,
                             const char *path) {
    while (lines_next(l, s, len))
        if (!blank(*s, *len)) {
            snprintf(where, cap, "%s:%d", path, l->line);
            return 1;
        }
    return 0;
}

// A field of a line as a C string (no NUL bytes, valid UTF-8, fits cap); else NULL + why.
static const char *field_str(char *buf, size_t cap, const char *s, size_t len, const char *what,
                             char *why, size_t why_cap) {
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

// Start of every reader: an empty set, and opts or (when NULL) the defaults in *defaults.
static const CaptionOptions *reader_begin(CaptionSet *set, const CaptionOptions *opts,
                                          CaptionOptions *defaults) {
    memset(set, 0, sizeof *set);
    if (opts) return opts;
    caption_options_default(defaults);
    return defaults;
}

// ---------------------------------------------------------------------------------------
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

int caption_read_tsv(CaptionSet *set, const char *tsv_path, const char *images_dir,
                     const CaptionOptions *opts, Error *err) {
    CaptionOptions defaults;
    opts = reader_begin(set, opts, &defaults);
    unsigned char *data;
    size_t len;
    if (file_read_all(tsv_path, &data, &len, opts->max_file_bytes, err)) return -1;
    if (!is_dir(images_dir)) {
        free(data);
        return error_set(err, "%s: image folder %s not found", tsv_path, images_dir);
    }
    Builder b;
    builder_init(&b, set, opts, tsv_path);
    Lines l;
    lines_init(&l, data, len);
    const char *s;
    size_t n;
    char where[CAPTION_PATH_MAX + 32], name[CAPTION_PATH_MAX], path[CAPTION_PATH_MAX], why[128];
    while (lines_next_record(&l, &s, &n, where, sizeof where, tsv_path)) {
        const char *t1 = memchr(s, '\t', n);
        if (!t1) {
            skip_caption(set, where, "no tab: expected file<TAB>caption[<TAB>split]");
            continue;
        }
        const char *cap = t1 + 1, *end = s + n;
        const char *t2 = memchr(cap, '\t', (size_t)(end - cap));
        const char *cap_end = t2 ? t2 : end;
        if (t2 && memchr(t2 + 1, '\t', (size_t)(end - t2 - 1))) {
            skip_caption(set, where, "more than 3 tab-separated fields");
            continue;
        }
        size_t flen = (size_t)(t1 - s);
        if (l.line == 1 &&
            ((flen == 4 && memcmp(s, "file", 4) == 0) || (flen == 5 && memcmp(s, "image", 5) == 0)))
            continue;  // a header line
        if (!field_str(name, sizeof name, s, flen, "file name", why, sizeof why) ||
            !tsv_unescape_name(name, why, sizeof why)) {
            skip_caption(set, where, why);
            continue;
        }
        Split split = SPLIT_TRAIN;
        int has_split = 0;
        if (t2 && !blank(t2 + 1, (size_t)(end - t2 - 1))) {
            const char *w = t2 + 1;
            size_t wl = (size_t)(end - w);
            while (wl && (w[wl - 1] == ' ')) wl--;
            while (wl && *w == ' ') w++, wl--;
            if (split_from_word(w, wl, &split)) {
                caption_set_warn(set, "%s: unknown split '%.*s' (train, val, valid, test)", where,
                                 (int)(wl < 40 ? wl : 40), w);
                set->captions_skipped++;
                continue;
            }
            has_split = 1;
        }
        int i = strmap_get(&b.keys, name);
        if (i < 0) {
            if (join_path(path, sizeof path, images_dir, name, NULL)) {
                skip_caption(set, where, "image path too long");
                continue;
            }
            if (!has_split)
                split = caption_heldout_split(name, opts->valid_share, opts->test_share);
            i = builder_add_image(&b, name, path, name, -1, split, !has_split, where);
        } else if (has_split && split != b.images[i].split && b.usable[i]) {
            caption_set_warn(set,
                             "%s: split %s conflicts with %s given earlier for %s; caption skipped",
                             where, split_name(split), split_name(b.images[i].split), name);
            set->captions_skipped++;
            continue;
        }
        builder_add_caption(&b, i, cap, (size_t)(cap_end - cap), where);
    }
    free(data);
    return builder_finish(&b, err);
}

// ---------------------------------------------------------------------------------------
// Flickr8k

static const char *const FLICKR_LISTS[SPLIT_COUNT] = {
    "Flickr_8k.trainImages.txt", "Flickr_8k.devImages.txt", "Flickr_8k.testImages.txt"};

// Reads the split lists into names -> split. *found = number of lists present.
static int flickr_read_lists(StrMap *splits, int *found, Builder *b, const char *dir, Error *err) {
    char path[CAPTION_PATH_MAX];
    *found = 0;
    int present[SPLIT_COUNT];
    for (int sp = 0; sp < SPLIT_COUNT; sp++) {
        if (join_path(path, sizeof path, dir, FLICKR_LISTS[sp], NULL))
            return error_set(err, "%s: folder path too long", dir);
        present[sp] = is_file(path);
        *found += present[sp];
    }
    if (*found == 0) return 0;
    for (int sp = 0; sp < SPLIT_COUNT; sp++) {
        join_path(path, sizeof path, dir, FLICKR_LISTS[sp], NULL);
        if (!present[sp])
            return error_set(err, "%s: split list missing (the other lists are present)", path);
        unsigned char *data;
        size_t len;
        if (file_read_all(path, &data, &len, b->opts->max_file_bytes, err)) return -1;
        Lines l;
        lines_init(&l, data, len);
        const char *s;
        size_t n;
        char name[CAPTION_PATH_MAX], why[128];
        while (lines_next(&l, &s, &n)) {
            while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
            while (n && (*s == ' ' || *s == '\t')) s++, n--;
            if (n == 0) continue;
            if (!field_str(name, sizeof name, s, n, "file name", why, sizeof why)) {
                caption_set_warn(b->set, "%s:%d: %s", path, l.line, why);
                continue;
            }
            int prev = strmap_get(splits, name);
            if (prev >= 0) {
                if (prev != sp)
                    caption_set_warn(b->set, "%s:%d: %s is already in the %s list; kept there",
                                     path, l.line, name, split_name((Split)prev));
                continue;
            }
            strmap_put(splits, name, sp);
        }
        free(data);
    }
    return 0;
}

int caption_read_flickr8k(CaptionSet *set, const char *dir, const CaptionOptions *opts,
                          Error *err) {
    CaptionOptions defaults;
    opts = reader_begin(set, opts, &defaults);
    if (!is_dir(dir)) return error_set(err, "%s: Flickr8k folder not found", dir);
    char token_path[CAPTION_PATH_MAX], images_dir[CAPTION_PATH_MAX];
    if (join_path(token_path, sizeof token_path, dir, "Flickr8k.token.txt", NULL) ||
        join_path(images_dir, sizeof images_dir, dir, "Flicker8k_Dataset", NULL))
        return error_set(err, "%s: folder path too long", dir);
    if (!is_dir(images_dir)) {
        join_path(images_dir, sizeof images_dir, dir, "Flickr8k_Dataset", NULL);
        if (!is_dir(images_dir)) snprintf(images_dir, sizeof images_dir, "%s", dir);
    }
    unsigned char *data;
    size_t len;
    if (file_read_all(token_path, &data, &len, opts->max_file_bytes, err)) {
        if (!is_file(token_path))
            error_set(err,
                      "%s: not found (flickr8k:DIR needs the text files of "
                      "Flickr8k_text.zip in DIR)",
                      token_path);
        return -1;
    }
    Builder b;
    builder_init(&b, set, opts, token_path);
    StrMap splits = {0};
    int found;
    if (flickr_read_lists(&splits, &found, &b, dir, err)) {
        free(data);
        strmap_free(&splits);
        return builder_fail(&b);
    }
    if (found == 0)
        caption_set_warn(
            set, "%s: no split lists (Flickr_8k.*Images.txt); splits by the held-out hash", dir);
    int no_split = 0;
    const char *first_no_split = NULL;
    char first_buf[CAPTION_PATH_MAX + 32];
    Lines l;
    lines_init(&l, data, len);
    const char *s;
    size_t n;
    char where[CAPTION_PATH_MAX + 32], name[CAPTION_PATH_MAX], path[CAPTION_PATH_MAX], why[128];
    StrMap unlisted = {0};
    while (lines_next_record(&l, &s, &n, where, sizeof where, token_path)) {
        const char *tab = memchr(s, '\t', n);
        if (!tab) {
            skip_caption(set, where, "no tab: expected NAME.jpg#K<TAB>caption");
            continue;
        }
        size_t klen = (size_t)(tab - s);
        const char *hash = NULL;
        for (size_t k = klen; k-- > 0;)
            if (s[k] == '#') {
                hash = s + k;
                break;
            }
        size_t nlen = hash ? (size_t)(hash - s) : klen;
        if (!field_str(name, sizeof name, s, nlen, "image name", why, sizeof why)) {
            skip_caption(set, where, why);
            continue;
        }
        int i = strmap_get(&b.keys, name);
        if (i < 0) {
            Split split;
            if (found) {
                int sp = strmap_get(&splits, name);
                if (sp < 0) {  // in no list: skipped, one summary warning
                    if (strmap_get(&unlisted, name) < 0) {
                        strmap_put(&unlisted, name, 1);
                        set->images_skipped++;
                        if (!first_no_split) {
                            snprintf(first_buf, sizeof first_buf, "%s", where);
                            first_no_split = first_buf;
                        }
                        no_split++;
                    }
                    set->captions_skipped++;
                    continue;
                }
                split = (Split)sp;
            } else {
                split = caption_heldout_split(name, opts->valid_share, opts->test_share);
            }
            if (join_path(path, sizeof path, images_dir, name, NULL)) {
                skip_caption(set, where, "image path too long");
                continue;
            }
            i = builder_add_image(&b, name, path, name, -1, split, !found, where);
        }
        builder_add_caption(&b, i, tab + 1, (size_t)(s + n - tab - 1), where);
    }
    if (no_split)
        caption_set_warn(set, "%s: %d image%s in none of the split lists skipped", first_no_split,
                         no_split, no_split == 1 ? "" : "s");
    strmap_free(&unlisted);
    strmap_free(&splits);
    free(data);
    return builder_finish(&b, err);
}

// ---------------------------------------------------------------------------------------
// JSON (cJSON)

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
    if (!is_dir(images_dir))
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

int caption_read_coco(CaptionSet *set, const char *json_path, const char *images_dir,
                      const CaptionOptions *opts, Error *err) {
    CaptionOptions defaults;
    opts = reader_begin(set, opts, &defaults);
    cJSON *root, *images;
    if (json_open_images(&root, &images, json_path, images_dir, opts, err)) return -1;
    cJSON *anns = json_array_field(root, "annotations", json_path, err);
    if (!anns) {
        cJSON_Delete(root);
        return -1;
    }
    Builder b;
    builder_init(&b, set, opts, json_path);
    char where[CAPTION_PATH_MAX + 64], path[CAPTION_PATH_MAX], key[32];
    int k = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, images) {
        snprintf(where, sizeof where, "%s: images[%d]", json_path, k++);
        long long id = json_id(cJSON_GetObjectItemCaseSensitive(it, "id"));
        const char *file = json_str(it, "file_name");
        if (!cJSON_IsObject(it) || id < 0 || !file) {
            caption_set_warn(set, "%s: %s", where,
                             !cJSON_IsObject(it) ? "not an object"
                             : id < 0            ? "\"id\" is not a whole number >= 0"
                                                 : "\"file_name\" is not a non-empty string");
            set->images_skipped++;
            continue;
        }
        snprintf(key, sizeof key, "%lld", id);
        if (strmap_get(&b.keys, key) >= 0) {
            caption_set_warn(set, "%s: duplicate id %s; this one skipped", where, key);
            set->images_skipped++;
            continue;
        }
        if (!caption_utf8_valid(file, strlen(file), NULL) ||
            join_path(path, sizeof path, images_dir, file, NULL)) {
            caption_set_warn(set, "%s: \"file_name\" is not valid UTF-8 or too long", where);
            set->images_skipped++;
            continue;
        }
        builder_add_image(&b, key, path, key, id,
                          caption_heldout_split(key, opts->valid_share, opts->test_share), 1, where);
    }
    k = 0;
    cJSON_ArrayForEach(it, anns) {
        snprintf(where, sizeof where, "%s: annotations[%d]", json_path, k++);
        long long id = json_id(cJSON_GetObjectItemCaseSensitive(it, "image_id"));
        const cJSON *cap = cJSON_GetObjectItemCaseSensitive(it, "caption");
        if (!cJSON_IsObject(it) || id < 0 || !cJSON_IsString(cap) || !cap->valuestring) {
            skip_caption(set, where,
                         !cJSON_IsObject(it) ? "not an object"
                         : id < 0            ? "\"image_id\" is not a whole number >= 0"
                                             : "\"caption\" is not a string");
            continue;
        }
        snprintf(key, sizeof key, "%lld", id);
        int i = strmap_get(&b.keys, key);
        if (i < 0) {
            caption_set_warn(set, "%s: image_id %s is not among the images", where, key);
            set->captions_skipped++;
            continue;
        }
        builder_add_caption(&b, i, cap->valuestring, strlen(cap->valuestring), where);
    }
    cJSON_Delete(root);
    return builder_finish(&b, err);
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

int caption_read_karpathy(CaptionSet *set, const char *json_path, const char *images_dir,
                          const CaptionOptions *opts, Error *err) {
    CaptionOptions defaults;
    opts = reader_begin(set, opts, &defaults);
    cJSON *root, *images;
    if (json_open_images(&root, &images, json_path, images_dir, opts, err)) return -1;
    Builder b;
    builder_init(&b, set, opts, json_path);
    char where[CAPTION_PATH_MAX + 64], swhere[CAPTION_PATH_MAX + 96], path[CAPTION_PATH_MAX],
        key[32];
    int k = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, images) {
        snprintf(where, sizeof where, "%s: images[%d]", json_path, k++);
        const char *why = NULL;
        const char *file = json_str(it, "filename");
        const cJSON *fp = cJSON_GetObjectItemCaseSensitive(it, "filepath");
        const char *split_word = json_str(it, "split");
        const cJSON *sents = cJSON_GetObjectItemCaseSensitive(it, "sentences");
        const cJSON *cocoid = cJSON_GetObjectItemCaseSensitive(it, "cocoid");
        Split split = SPLIT_TRAIN;
        int pathlen = 0;
        if (!cJSON_IsObject(it))
            why = "not an object";
        else if (!file)
            why = "\"filename\" is not a non-empty string";
        else if (fp && !(cJSON_IsString(fp) && fp->valuestring))
            why = "\"filepath\" is not a string";
        else if (!split_word)
            why = "\"split\" is not a non-empty string";
        else if (split_from_word(split_word, strlen(split_word), &split) ||
                 !strcmp(split_word, "dev"))
            why = "\"split\" is not train, val, test or restval";
        else if (!cJSON_IsArray(sents))
            why = "\"sentences\" is not an array";
        else if (cocoid && json_id(cocoid) < 0)
            why = "\"cocoid\" is not a whole number >= 0";
        else if (!caption_utf8_valid(file, strlen(file), NULL) ||
                 (fp && !caption_utf8_valid(fp->valuestring, strlen(fp->valuestring), NULL)))
            why = "file name is not valid UTF-8";
        else {
            pathlen = (fp && *fp->valuestring)
                          ? join_path(path, sizeof path, images_dir, fp->valuestring, file)
                          : join_path(path, sizeof path, images_dir, file, NULL);
            if (pathlen) why = "image path too long";
        }
        if (why) {
            caption_set_warn(set, "%s: %s", where, why);
            set->images_skipped++;
            set->captions_skipped += cJSON_IsArray(sents) ? cJSON_GetArraySize(sents) : 0;
            continue;
        }
        if (strmap_get(&b.keys, path) >= 0) {
            caption_set_warn(set, "%s: duplicate image %s; this entry skipped", where, path);
            set->images_skipped++;
            set->captions_skipped += cJSON_GetArraySize(sents);
            continue;
        }
        long long nid = cocoid ? json_id(cocoid) : -1;
        if (nid >= 0) snprintf(key, sizeof key, "%lld", nid);
        int i = builder_add_image(&b, path, path, nid >= 0 ? key : file, nid, split, 0, where);
        int j = 0;
        const cJSON *s;
        cJSON_ArrayForEach(s, sents) {
            snprintf(swhere, sizeof swhere, "%s.sentences[%d]", where, j++);
            const cJSON *raw = cJSON_GetObjectItemCaseSensitive(s, "raw");
            if (cJSON_IsString(raw) && raw->valuestring) {
                builder_add_caption(&b, i, raw->valuestring, strlen(raw->valuestring), swhere);
                continue;
            }
            char *joined = raw ? NULL : join_tokens(cJSON_GetObjectItemCaseSensitive(s, "tokens"));
            if (!joined) {
                if (b.usable[i])
                    caption_set_warn(
                        set, "%s: %s", swhere,
                        raw ? "\"raw\" is not a string"
                            : "neither a \"raw\" string nor a \"tokens\" array of strings");
                set->captions_skipped++;
                continue;
            }
            builder_add_caption(&b, i, joined, strlen(joined), swhere);
            free(joined);
        }
    }
    cJSON_Delete(root);
    return builder_finish(&b, err);
}

// ---------------------------------------------------------------------------------------

int caption_set_read(CaptionSet *set, const CaptionSpec *spec, const CaptionOptions *opts,
                     Error *err) {
    CaptionOptions defaults;
    opts = reader_begin(set, opts, &defaults);
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
