#include "datasets/scenes.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "core/rng.h"
#include "datasets/mnist.h"

// Palette: far apart in RGB (every pair differs by at least 0.5 in some channel).
static const char *const COLOUR_WORDS[SCENES_COLOUR_COUNT] = {"red",    "green", "blue", "yellow",
                                                              "purple", "cyan",  "white"};
static const float PALETTE[SCENES_COLOUR_COUNT][3] = {
    {0.90f, 0.15f, 0.15f}, {0.15f, 0.80f, 0.20f}, {0.10f, 0.35f, 1.00f}, {0.95f, 0.90f, 0.15f},
    {0.70f, 0.20f, 0.85f}, {0.15f, 0.85f, 0.90f}, {0.95f, 0.95f, 0.95f},
};

enum { REL_LEFT, REL_RIGHT, REL_ABOVE, REL_BELOW };
static const char *const REL_PHRASES[4][2] = {
    {"to the left of", "left of"},
    {"to the right of", "right of"},
    {"above", "above"},
    {"below", "under"},
};

// Every word the caption templates below can produce: the grammar words, then the
// colour words, then the class words (the test checks every caption against it).
static const char *const VOCABULARY[] = {
    "a", "there", "is", "and", "to", "the", "left", "right", "of", "above", "below", "under",
    "on", "dark", "background", "single", "picture", "in", "with", "together",
    "red", "green", "blue", "yellow", "purple", "cyan", "white",
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
    "top", "trousers", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "boot",
};

const char *scenes_class_word(int cls) {
    if (cls < 0 || cls >= SCENES_CLASS_COUNT) return NULL;
    return mnist_class_word(cls < 10 ? "mnist" : "fashion-mnist", cls % 10);
}

const char *scenes_colour_word(int colour) {
    return colour >= 0 && colour < SCENES_COLOUR_COUNT ? COLOUR_WORDS[colour] : NULL;
}

const char *const *scenes_vocabulary(int *n) {
    *n = (int)(sizeof VOCABULARY / sizeof VOCABULARY[0]);
    return VOCABULARY;
}

int scenes_word_is_object(const char *word) {
    for (int i = 0; i < SCENES_CLASS_COUNT; i++)
        if (!strcmp(word, scenes_class_word(i))) return 1;
    return 0;
}

int scenes_word_is_colour(const char *word) {
    for (int i = 0; i < SCENES_COLOUR_COUNT; i++)
        if (!strcmp(word, COLOUR_WORDS[i])) return 1;
    return 0;
}

void scenes_config_default(ScenesConfig *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->size = 64;
    cfg->counts[SPLIT_TRAIN] = 100000;
    cfg->counts[SPLIT_VALID] = 1000;
    cfg->counts[SPLIT_TEST] = 1000;
    cfg->seed = 1;
    cfg->min_objects = 1;
    cfg->max_objects = 3;
    cfg->min_scale = 20;
    cfg->max_scale = 32;
    cfg->root = NULL;
}

static int config_check(const ScenesConfig *c, Error *err) {
    if (c->size < 8 || c->size > 1024)
        return error_set(err, "scenes: size %d outside 8..1024", c->size);
    for (int k = 0; k < SPLIT_COUNT; k++)
        if (c->counts[k] < 0 || c->counts[k] > 100000000)
            return error_set(err, "scenes: %s count %d outside 0..100000000",
                             split_name((Split)k), c->counts[k]);
    if (c->min_objects < 1 || c->max_objects > SCENES_MAX_OBJECTS ||
        c->min_objects > c->max_objects)
        return error_set(err, "scenes: objects %d..%d, need 1 <= min <= max <= %d",
                         c->min_objects, c->max_objects, SCENES_MAX_OBJECTS);
    // Several objects must always fit: one per quadrant is the fallback layout.
    int limit = c->max_objects > 1 ? c->size / 2 : c->size;
    if (c->min_scale < 4 || c->min_scale > c->max_scale || c->max_scale > limit)
        return error_set(err, "scenes: object scale %d..%d, need 4 <= min <= max <= %d "
                         "(%s)", c->min_scale, c->max_scale, limit,
                         c->max_objects > 1 ? "half the canvas" : "the canvas");
    return 0;
}

int scenes_open(Scenes *s, const ScenesConfig *cfg, Error *err) {
    memset(s, 0, sizeof *s);
    if (config_check(cfg, err)) return -1;
    s->cfg = *cfg;
    for (int f = 0; f < 2; f++) {
        if (mnist_load_files(&s->digits[f], &s->digit_labels[f], "mnist", cfg->root, f, err) ||
            mnist_load_files(&s->fashion[f], &s->fashion_labels[f], "fashion-mnist", cfg->root, f,
                             err)) {
            scenes_close(s);
            return -1;
        }
        if (f == 1 && (s->digits[1].dims[0] < 2 || s->fashion[1].dims[0] < 2)) {
            scenes_close(s);
            return error_set(err, "scenes: the test files need at least 2 images each");
        }
    }
    return 0;
}

void scenes_close(Scenes *s) {
    if (!s) return;
    for (int f = 0; f < 2; f++) {
        idx_free(&s->digits[f]);
        idx_free(&s->digit_labels[f]);
        idx_free(&s->fashion[f]);
        idx_free(&s->fashion_labels[f]);
    }
}

int scenes_count(const Scenes *s, Split split) {
    CHECK(split >= 0 && split < SPLIT_COUNT);
    return s->cfg.counts[split];
}

// splitmix64 finaliser: spreads (seed, split, index) over the 64-bit seed space.
static uint64_t mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static int squares_overlap(const SceneObject *a, const SceneObject *b) {
    return a->sx < b->sx + b->side && b->sx < a->sx + a->side && a->sy < b->sy + b->side &&
           b->sy < a->sy + a->side;
}

// Relation of a to b from their tight boxes (which never overlap): the axis with the
// larger gap decides.
static int relation(const SceneObject *a, const SceneObject *b) {
    int hgap = a->x1 <= b->x0 ? b->x0 - a->x1 : a->x0 >= b->x1 ? a->x0 - b->x1 : -1;
    int vgap = a->y1 <= b->y0 ? b->y0 - a->y1 : a->y0 >= b->y1 ? a->y0 - b->y1 : -1;
    CHECK(hgap >= 0 || vgap >= 0, "boxes overlap");
    if (hgap >= vgap) return a->x1 <= b->x0 ? REL_LEFT : REL_RIGHT;
    return a->y1 <= b->y0 ? REL_ABOVE : REL_BELOW;
}

// Bilinear sample of a uint8 image at (u, v) in pixel coordinates, zero outside; [0, 1].
static float sample(const unsigned char *im, int rows, int cols, float u, float v) {
    int x0 = (int)floorf(u), y0 = (int)floorf(v);
    float fx = u - (float)x0, fy = v - (float)y0;
    float acc = 0.0f;
    for (int dy = 0; dy < 2; dy++) {
        int y = y0 + dy;
        if (y < 0 || y >= rows) continue;
        float wy = dy ? fy : 1.0f - fy;
        for (int dx = 0; dx < 2; dx++) {
            int x = x0 + dx;
            if (x < 0 || x >= cols) continue;
            acc += wy * (dx ? fx : 1.0f - fx) * im[y * cols + x];
        }
    }
    return acc * (1.0f / 255.0f);
}

// Draws object o (its source image scaled into its square) onto chw (3, S, S) if non-NULL,
// and sets its tight box.
static void draw_object(float *chw, SceneObject *o, const Idx *im, const float *bg, int S) {
    int rows = (int)im->dims[1], cols = (int)im->dims[2];
    const unsigned char *pix = im->data + (size_t)o->source * rows * cols;
    const float *col = PALETTE[o->colour];
    float sx = (float)cols / (float)o->side, sy = (float)rows / (float)o->side;
    int x0 = S, y0 = S, x1 = -1, y1 = -1;
    for (int y = 0; y < o->side; y++) {
        float v = ((float)y + 0.5f) * sy - 0.5f;
        for (int x = 0; x < o->side; x++) {
            float a = sample(pix, rows, cols, ((float)x + 0.5f) * sx - 0.5f, v);
            int px = o->sx + x, py = o->sy + y;
            if (a >= SCENES_INK) {
                if (px < x0) x0 = px;
                if (py < y0) y0 = py;
                if (px > x1) x1 = px;
                if (py > y1) y1 = py;
            }
            if (chw)
                for (int c = 0; c < 3; c++)
                    chw[((size_t)c * S + py) * S + px] = bg[c] + a * (col[c] - bg[c]);
        }
    }
    if (x1 < 0) {  // no ink above the threshold: the whole square
        x0 = o->sx, y0 = o->sy, x1 = o->sx + o->side - 1, y1 = o->sy + o->side - 1;
    }
    o->x0 = x0, o->y0 = y0, o->x1 = x1 + 1, o->y1 = y1 + 1;
}

typedef struct {
    char *buf;
    size_t len;
} Text;

static void put(Text *t, const char *words) {
    size_t n = strlen(words);
    CHECK(t->len + n + 2 <= SCENES_CAPTION_MAX, "caption too long");
    if (t->len) t->buf[t->len++] = ' ';
    memcpy(t->buf + t->len, words, n + 1);
    t->len += n;
}

static void put_object(Text *t, const SceneObject *o) {
    put(t, "a");
    put(t, o->colour_word);
    put(t, o->word);
}

static void put_relation(Text *t, Rng *rng, const SceneObject *a, const SceneObject *b) {
    put_object(t, a);
    put(t, REL_PHRASES[relation(a, b)][rng_below(rng, 2)]);
    put_object(t, b);
}

// Caption from template k for a scene of n objects (see scenes.h for the grammar).
static void caption(char *out, int k, const SceneInfo *info, Rng *rng) {
    Text t = {out, 0};
    out[0] = 0;
    const SceneObject *o = info->objects;
    int n = info->n_objects;
    int ord[SCENES_MAX_OBJECTS] = {0, 1, 2};
    rng_shuffle(rng, ord, n);
    const SceneObject *p = &o[ord[0]], *q = n > 1 ? &o[ord[1]] : NULL, *r = n > 2 ? &o[ord[2]] : NULL;
    if (n == 1) {
        switch (k) {
        case 0: put_object(&t, p); break;
        case 1: put(&t, "there is"); put_object(&t, p); break;
        case 2: put_object(&t, p); put(&t, "on a dark background"); break;
        case 3: put(&t, "a single"); put(&t, p->colour_word); put(&t, p->word); break;
        case 4: put(&t, "a picture of"); put_object(&t, p); break;
        default: put_object(&t, p); put(&t, "in the picture"); break;
        }
        return;
    }
    switch (k) {
    case 0:
    case 1:
        if (k == 1) put(&t, "there is");
        put_relation(&t, rng, p, q);
        if (r) {
            put(&t, "and");
            put_relation(&t, rng, r, rng_below(rng, 2) ? p : q);
        }
        return;
    case 2:
    case 3:
        if (k == 3) put(&t, "there is");
        put_object(&t, p);
        if (r) put_object(&t, q);
        put(&t, "and");
        put_object(&t, r ? r : q);
        return;
    case 4:
        put_object(&t, p);
        if (r) put_object(&t, q);
        put(&t, "and");
        put_object(&t, r ? r : q);
        put(&t, "on a dark background");
        return;
    default:
        put_object(&t, p);
        put(&t, "together with");
        put_object(&t, q);
        if (r) {
            put(&t, "and");
            put_object(&t, r);
        }
        return;
    }
}

// The whole scene: every random choice comes from one stream seeded by (seed, split, i).
// The scene's objects: for each, a digit or a garment from the split's part of its source
// (images[k] the source's images), a colour of its own, a size.
static void choose_objects(SceneInfo *info, const Idx *images[], const Scenes *s, Split split,
                           const int palette[], Rng *rng) {
    const ScenesConfig *c = &s->cfg;
    const int file = split == SPLIT_TRAIN ? 0 : 1;
    for (int k = 0; k < info->n_objects; k++) {
        SceneObject *o = &info->objects[k];
        int fashion = (int)rng_below(rng, 2);
        const Idx *im = fashion ? &s->fashion[file] : &s->digits[file];
        const Idx *lb = fashion ? &s->fashion_labels[file] : &s->digit_labels[file];
        int N = (int)im->dims[0], lo = 0, count = N;
        if (split == SPLIT_VALID) count = N / 2;
        if (split == SPLIT_TEST) lo = N / 2, count = N - N / 2;
        o->source = lo + (int)rng_below(rng, (uint32_t)count);
        o->cls = lb->data[o->source] + (fashion ? 10 : 0);
        o->word = scenes_class_word(o->cls);
        o->colour = palette[k];
        o->colour_word = COLOUR_WORDS[o->colour];
        o->side = c->min_scale + (int)rng_below(rng, (uint32_t)(c->max_scale - c->min_scale + 1));
        images[k] = im;
    }
}

// Layout on an S x S canvas: random positions, rejecting overlapping squares; after 100
// failed layouts, one object per quadrant (always fits: max_scale <= size / 2 with several
// objects).
static void place_objects(SceneInfo *info, int S, Rng *rng) {
    const int n = info->n_objects;
    int placed = 0;
    for (int attempt = 0; attempt < 100 && !placed; attempt++) {
        placed = 1;
        for (int k = 0; k < n && placed; k++) {
            SceneObject *o = &info->objects[k];
            o->sx = (int)rng_below(rng, (uint32_t)(S - o->side + 1));
            o->sy = (int)rng_below(rng, (uint32_t)(S - o->side + 1));
            for (int j = 0; j < k; j++) placed &= !squares_overlap(o, &info->objects[j]);
        }
    }
    if (placed) return;
    int quad[4] = {0, 1, 2, 3}, half = S / 2;
    rng_shuffle(rng, quad, 4);
    for (int k = 0; k < n; k++) {
        SceneObject *o = &info->objects[k];
        o->sx = (quad[k] & 1) * half + (int)rng_below(rng, (uint32_t)(half - o->side + 1));
        o->sy = (quad[k] >> 1) * half + (int)rng_below(rng, (uint32_t)(half - o->side + 1));
    }
}

// Captions: with one object, five of the six templates; with more, the two relation
// templates and three of the other four. Templates differ in words, so the five differ.
static void write_captions(SceneInfo *info, Rng *rng) {
    int pick[6] = {0, 1, 2, 3, 4, 5};
    if (info->n_objects == 1) rng_shuffle(rng, pick, 6);
    else rng_shuffle(rng, pick + 2, 4);
    for (int k = 0; k < SCENES_CAPTIONS; k++) caption(info->captions[k], pick[k], info, rng);
}

static void generate(float *chw, SceneInfo *info, const Scenes *s, Split split, int i) {
    CHECK(split >= 0 && split < SPLIT_COUNT);
    CHECK(i >= 0 && i < s->cfg.counts[split], "scene %d of %d (%s)", i, s->cfg.counts[split],
          split_name(split));
    const ScenesConfig *c = &s->cfg;
    const int S = c->size;
    Rng rng;  // every draw below, in this order, from the scene's own stream
    rng_seed(&rng, mix64(mix64(c->seed) ^ ((uint64_t)split << 32 | (uint32_t)i)));
    memset(info, 0, sizeof *info);
    info->n_objects = c->min_objects + (int)rng_below(&rng, (uint32_t)(c->max_objects - c->min_objects + 1));
    float bg[3];
    for (int k = 0; k < 3; k++) bg[k] = 0.12f * rng_uniform(&rng);
    int palette[SCENES_COLOUR_COUNT];
    for (int k = 0; k < SCENES_COLOUR_COUNT; k++) palette[k] = k;
    rng_shuffle(&rng, palette, SCENES_COLOUR_COUNT);
    const Idx *images[SCENES_MAX_OBJECTS];
    choose_objects(info, images, s, split, palette, &rng);
    place_objects(info, S, &rng);
    if (chw)
        for (int ch = 0; ch < 3; ch++)
            for (int p = 0; p < S * S; p++) chw[(size_t)ch * S * S + p] = bg[ch];
    for (int k = 0; k < info->n_objects; k++) draw_object(chw, &info->objects[k], images[k], bg, S);
    write_captions(info, &rng);
}

void scenes_describe(SceneInfo *info, const Scenes *s, Split split, int i) {
    generate(NULL, info, s, split, i);
}

void scenes_render(float *chw, SceneInfo *info, const Scenes *s, Split split, int i) {
    SceneInfo local;
    generate(chw, info ? info : &local, s, split, i);
}

void scenes_render_range(float *out, SceneInfo *infos, const Scenes *s, Split split, int start,
                         int n) {
    size_t per = (size_t)3 * s->cfg.size * s->cfg.size;
    for (int k = 0; k < n; k++)
        scenes_render(out + per * k, infos ? &infos[k] : NULL, s, split, start + k);
}
