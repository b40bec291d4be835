// test_scenes.c: the synthetic captioning scenes (datasets/scenes.h) on the real MNIST
// and Fashion-MNIST files: determinism, the layout (no overlap, boxes inside the canvas,
// distinct colours), object sources per split, captions (every object's colour and
// class word, only vocabulary words, relation words that agree with the boxes), pixels
// that agree with the description, and configuration errors.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/check.h"
#include "datasets/scenes.h"
#include "tests/support/test.h"

#define SCENES_CHECKED 400  // per split

static Scenes scenes;  // loaded once in main; read-only afterwards
static int loaded;

static int tokenize(char *buf, const char *caption, const char **tok, int max) {
    snprintf(buf, SCENES_CAPTION_MAX, "%s", caption);
    int n = 0;
    for (char *t = strtok(buf, " "); t && n < max; t = strtok(NULL, " ")) tok[n++] = t;
    return n;
}

static const SceneObject *by_colour(const SceneInfo *info, const char *colour) {
    for (int k = 0; k < info->n_objects; k++)
        if (!strcmp(info->objects[k].colour_word, colour)) return &info->objects[k];
    return NULL;
}

static void test_scenes_deterministic(void) {
    if (!loaded) return;
    Scenes other;
    ScenesConfig cfg = scenes.cfg;
    Error err = {{0}};
    EXPECT(scenes_open(&other, &cfg, &err) == 0, "%s", err.msg);
    int S = cfg.size;
    size_t px = (size_t)3 * S * S;
    float *a = xmalloc(px * sizeof(float)), *b = xmalloc(px * sizeof(float));
    SceneInfo ia, ib;
    int same = 1, differ = 0;
    for (int i = 0; i < 20; i++) {
        scenes_render(a, &ia, &scenes, SPLIT_TEST, i);
        scenes_render(b, &ib, &other, SPLIT_TEST, i);
        same &= !memcmp(a, b, px * sizeof(float)) && !memcmp(&ia, &ib, sizeof ia);
        scenes_render(b, &ib, &scenes, SPLIT_TEST, i + 1);
        differ += memcmp(a, b, px * sizeof(float)) != 0 && strcmp(ia.captions[0], ib.captions[0]);
    }
    EXPECT(same, "the same (seed, split, index) gave different scenes");
    EXPECT(differ == 20, "only %d of 20 neighbouring scenes differ", differ);
    // A different seed, a different scene; the same index in another split, another scene.
    scenes_close(&other);
    cfg.seed = 2;
    EXPECT(scenes_open(&other, &cfg, &err) == 0, "%s", err.msg);
    scenes_render(a, &ia, &scenes, SPLIT_TRAIN, 5);
    scenes_render(b, &ib, &other, SPLIT_TRAIN, 5);
    EXPECT(memcmp(a, b, px * sizeof(float)) != 0, "seed ignored");
    scenes_render(b, &ib, &scenes, SPLIT_VALID, 5);
    EXPECT(memcmp(a, b, px * sizeof(float)) != 0, "split ignored");
    // describe() is render() without pixels.
    SceneInfo id;
    scenes_describe(&id, &scenes, SPLIT_TRAIN, 5);
    scenes_render(a, &ia, &scenes, SPLIT_TRAIN, 5);
    EXPECT(!memcmp(&id, &ia, sizeof id), "describe and render disagree");
    scenes_close(&other);
    free(a), free(b);
}

static void test_scenes_layout_and_sources(void) {
    if (!loaded) return;
    const int S = scenes.cfg.size;
    int counts[SCENES_MAX_OBJECTS + 1] = {0}, fashion = 0, digits = 0;
    for (int sp = 0; sp < SPLIT_COUNT; sp++) {
        int N = sp == SPLIT_TRAIN ? 60000 : 10000;
        for (int i = 0; i < SCENES_CHECKED; i++) {
            SceneInfo info;
            scenes_describe(&info, &scenes, (Split)sp, i);
            int n = info.n_objects;
            EXPECT(n >= 1 && n <= 3, "%d objects", n);
            if (n < 1 || n > 3) return;
            counts[n]++;
            for (int k = 0; k < n; k++) {
                const SceneObject *o = &info.objects[k];
                EXPECT(o->x0 >= 0 && o->y0 >= 0 && o->x1 <= S && o->y1 <= S && o->x0 < o->x1 &&
                           o->y0 < o->y1, "box (%d %d %d %d) outside the %d canvas", o->x0, o->y0,
                       o->x1, o->y1, S);
                EXPECT(o->x0 >= o->sx && o->y0 >= o->sy && o->x1 <= o->sx + o->side &&
                           o->y1 <= o->sy + o->side, "box outside its square");
                EXPECT(o->side >= 20 && o->side <= 32, "side %d", o->side);
                EXPECT(o->cls >= 0 && o->cls < SCENES_CLASS_COUNT);
                EXPECT(!strcmp(o->word, scenes_class_word(o->cls)));
                EXPECT(!strcmp(o->colour_word, scenes_colour_word(o->colour)));
                // Sources: train from the training files, valid the first half of the test
                // files, test the second half.
                int lo = sp == SPLIT_TEST ? N / 2 : 0, hi = sp == SPLIT_VALID ? N / 2 : N;
                EXPECT(o->source >= lo && o->source < hi, "%s source %d outside [%d, %d)",
                       split_name((Split)sp), o->source, lo, hi);
                const Idx *lb = o->cls < 10 ? &scenes.digit_labels[sp != SPLIT_TRAIN]
                                            : &scenes.fashion_labels[sp != SPLIT_TRAIN];
                EXPECT(lb->data[o->source] == o->cls % 10, "class is not the source's label");
                fashion += o->cls >= 10, digits += o->cls < 10;
                for (int j = 0; j < k; j++) {
                    const SceneObject *p = &info.objects[j];
                    int sq = o->sx < p->sx + p->side && p->sx < o->sx + o->side &&
                             o->sy < p->sy + p->side && p->sy < o->sy + o->side;
                    int bx = o->x0 < p->x1 && p->x0 < o->x1 && o->y0 < p->y1 && p->y0 < o->y1;
                    EXPECT(!sq && !bx, "objects %d and %d overlap", j, k);
                    EXPECT(o->colour != p->colour, "two objects share a colour");
                }
            }
        }
    }
    for (int n = 1; n <= 3; n++)
        EXPECT(counts[n] > SPLIT_COUNT * SCENES_CHECKED / 5, "%d-object scenes: %d", n, counts[n]);
    EXPECT(fashion > digits / 2 && digits > fashion / 2, "digits %d, fashion %d", digits, fashion);
}

static void test_scenes_captions_agree_with_boxes(void) {
    if (!loaded) return;
    int nv;
    const char *const *vocab = scenes_vocabulary(&nv);
    int relations = 0;
    for (int sp = 0; sp < SPLIT_COUNT; sp++) {
        for (int i = 0; i < SCENES_CHECKED; i++) {
            SceneInfo info;
            scenes_describe(&info, &scenes, (Split)sp, i);
            int scene_relations = 0;
            for (int c = 0; c < SCENES_CAPTIONS; c++) {
                const char *cap = info.captions[c];
                for (int d = 0; d < c; d++)
                    EXPECT(strcmp(cap, info.captions[d]), "duplicate caption '%s'", cap);
                char buf[SCENES_CAPTION_MAX];
                const char *tok[64];
                int n = tokenize(buf, cap, tok, 64);
                EXPECT(n > 0 && strlen(cap) > 0 && cap[0] != ' ' && cap[strlen(cap) - 1] != ' ' &&
                           !strstr(cap, "  "), "badly spaced caption '%s'", cap);
                for (int t = 0; t < n; t++) {
                    int known = 0;
                    for (int v = 0; v < nv; v++) known |= !strcmp(tok[t], vocab[v]);
                    EXPECT(known, "'%s' in '%s' is not in the vocabulary", tok[t], cap);
                    for (const char *p = tok[t]; *p; p++)
                        EXPECT(*p >= 'a' && *p <= 'z', "'%s' is not lowercase letters", tok[t]);
                }
                // Each object named by "COLOUR WORD"; object words only of present objects.
                for (int k = 0; k < info.n_objects; k++) {
                    char name[64];
                    snprintf(name, sizeof name, "%s %s", info.objects[k].colour_word,
                             info.objects[k].word);
                    int found = 0;
                    for (int t = 0; t + 1 < n; t++)
                        found |= !strcmp(tok[t], info.objects[k].colour_word) &&
                                 !strcmp(tok[t + 1], info.objects[k].word);
                    EXPECT(found, "'%s' does not mention '%s'", cap, name);
                }
                for (int t = 0; t < n; t++) {
                    if (!scenes_word_is_object(tok[t])) continue;
                    EXPECT(t > 0 && scenes_word_is_colour(tok[t - 1]),
                           "'%s' in '%s' without its colour", tok[t], cap);
                    const SceneObject *o = t > 0 ? by_colour(&info, tok[t - 1]) : NULL;
                    EXPECT(o && !strcmp(o->word, tok[t]), "'%s %s' is not in the scene",
                           t > 0 ? tok[t - 1] : "", tok[t]);
                }
                // Relations: SUBJECT_COLOUR WORD PHRASE a OBJECT_COLOUR WORD.
                for (int t = 2; t < n; t++) {
                    int rel = -1, len = 0;
                    if (t + 3 < n && !strcmp(tok[t], "to") && !strcmp(tok[t + 1], "the") &&
                        !strcmp(tok[t + 3], "of")) {
                        rel = !strcmp(tok[t + 2], "left") ? 0 : !strcmp(tok[t + 2], "right") ? 1 : -1;
                        len = 4;
                    } else if (t + 1 < n && !strcmp(tok[t + 1], "of") && (!strcmp(tok[t], "left") ||
                                                                         !strcmp(tok[t], "right"))) {
                        rel = !strcmp(tok[t], "left") ? 0 : 1;
                        len = 2;
                    } else if (!strcmp(tok[t], "above")) {
                        rel = 2, len = 1;
                    } else if (!strcmp(tok[t], "below") || !strcmp(tok[t], "under")) {
                        rel = 3, len = 1;
                    }
                    if (rel < 0) continue;
                    EXPECT(t + len + 2 < n && !strcmp(tok[t + len], "a"),
                           "relation without an object in '%s'", cap);
                    if (t + len + 2 >= n) break;
                    const SceneObject *a = by_colour(&info, tok[t - 2]);
                    const SceneObject *b = by_colour(&info, tok[t + len + 1]);
                    EXPECT(a && b && a != b, "relation between unknown objects in '%s'", cap);
                    if (!a || !b) break;
                    int ok = rel == 0   ? a->x1 <= b->x0
                             : rel == 1 ? a->x0 >= b->x1
                             : rel == 2 ? a->y1 <= b->y0
                                        : a->y0 >= b->y1;
                    EXPECT(ok, "'%s' contradicts boxes %s (%d %d %d %d) and %s (%d %d %d %d)", cap,
                           a->colour_word, a->x0, a->y0, a->x1, a->y1, b->colour_word, b->x0,
                           b->y0, b->x1, b->y1);
                    relations++, scene_relations++;
                    t += len - 1;
                }
            }
            if (info.n_objects > 1)
                EXPECT(scene_relations >= 2, "scene with %d objects, %d relations",
                       info.n_objects, scene_relations);
        }
    }
    EXPECT(relations > SCENES_CHECKED, "only %d relations checked", relations);
}

static void test_scenes_pixels_agree_with_description(void) {
    if (!loaded) return;
    const int S = scenes.cfg.size;
    float *img = xmalloc(sizeof(float) * 3 * S * S);
    for (int i = 0; i < 100; i++) {
        SceneInfo info;
        scenes_render(img, &info, &scenes, SPLIT_VALID, i);
        // Outside every square: one dark background colour.
        float bg[3] = {-1, -1, -1};
        int uniform = 1, dark = 1, range = 1;
        for (int y = 0; y < S; y++)
            for (int x = 0; x < S; x++) {
                for (int c = 0; c < 3; c++) {
                    float v = img[(c * S + y) * S + x];
                    range &= v >= 0.0f && v <= 1.0f;
                }
                int inside = 0;
                for (int k = 0; k < info.n_objects; k++) {
                    const SceneObject *o = &info.objects[k];
                    inside |= x >= o->sx && x < o->sx + o->side && y >= o->sy && y < o->sy + o->side;
                }
                if (inside) continue;
                for (int c = 0; c < 3; c++) {
                    float v = img[(c * S + y) * S + x];
                    if (bg[c] < 0) bg[c] = v;
                    uniform &= v == bg[c];
                    dark &= v <= 0.12f;
                }
            }
        EXPECT(range && uniform && dark, "scene %d: range %d, uniform %d, dark %d", i, range,
               uniform, dark);
        // Inside each box: a pixel close to the object's palette colour (fully inked), and
        // every pixel of the square lies between the background and that colour.
        for (int k = 0; k < info.n_objects; k++) {
            const SceneObject *o = &info.objects[k];
            float best = 1e9f;
            float col[3] = {0};
            // The palette colour is where the brightest pixel of the box points.
            for (int y = o->y0; y < o->y1; y++)
                for (int x = o->x0; x < o->x1; x++) {
                    float d = 0;
                    for (int c = 0; c < 3; c++) d -= img[(c * S + y) * S + x];
                    if (d < best) {
                        best = d;
                        for (int c = 0; c < 3; c++) col[c] = img[(c * S + y) * S + x];
                    }
                }
            // Tint check through the colour word: the dominant channels must match.
            const char *w = o->colour_word;
            int r = col[0] > 0.5f, g = col[1] > 0.5f, b = col[2] > 0.5f;
            int want_r = !strcmp(w, "red") || !strcmp(w, "yellow") || !strcmp(w, "purple") ||
                         !strcmp(w, "white");
            int want_g = !strcmp(w, "green") || !strcmp(w, "yellow") || !strcmp(w, "cyan") ||
                         !strcmp(w, "white");
            int want_b = !strcmp(w, "blue") || !strcmp(w, "purple") || !strcmp(w, "cyan") ||
                         !strcmp(w, "white");
            EXPECT(r == want_r && g == want_g && b == want_b,
                   "scene %d: a %s object's brightest pixel is (%.2f %.2f %.2f)", i, w, col[0],
                   col[1], col[2]);
        }
    }
    free(img);
}

static void test_scenes_render_range_matches_single(void) {
    if (!loaded) return;
    const int S = scenes.cfg.size, n = 6;
    size_t per = (size_t)3 * S * S;
    float *bulk = xmalloc(sizeof(float) * per * n), *one = xmalloc(sizeof(float) * per);
    SceneInfo infos[6], info;
    scenes_render_range(bulk, infos, &scenes, SPLIT_TRAIN, 100, n);
    int same = 1;
    for (int k = 0; k < n; k++) {
        scenes_render(one, &info, &scenes, SPLIT_TRAIN, 100 + k);
        same &= !memcmp(one, bulk + per * k, per * sizeof(float)) &&
                !memcmp(&info, &infos[k], sizeof info);
    }
    EXPECT(same, "bulk rendering differs from one at a time");
    free(bulk), free(one);
}

static void test_scenes_words(void) {
    EXPECT(scenes_word_is_object("seven") && scenes_word_is_object("bag") &&
           scenes_word_is_object("trousers") && scenes_word_is_object("zero"));
    EXPECT(!scenes_word_is_object("red") && !scenes_word_is_object("a") &&
           !scenes_word_is_object("left") && !scenes_word_is_object(""));
    EXPECT(scenes_word_is_colour("cyan") && !scenes_word_is_colour("seven"));
    int nv;
    const char *const *v = scenes_vocabulary(&nv);
    int classes = 0, colours = 0;
    for (int i = 0; i < nv; i++) {
        classes += scenes_word_is_object(v[i]);
        colours += scenes_word_is_colour(v[i]);
        for (int j = 0; j < i; j++) EXPECT(strcmp(v[i], v[j]), "'%s' twice", v[i]);
    }
    EXPECT(classes == SCENES_CLASS_COUNT && colours == SCENES_COLOUR_COUNT, "%d classes %d colours",
           classes, colours);
}

static void test_scenes_config_errors(void) {
    ScenesConfig cfg;
    Scenes s;
    Error err = {{0}};
    scenes_config_default(&cfg);
    cfg.max_scale = 40;  // more than half of 64 with several objects
    EXPECT(scenes_open(&s, &cfg, &err) == -1 && strstr(err.msg, "scale"), "%s", err.msg);
    scenes_config_default(&cfg);
    cfg.max_objects = 4;
    EXPECT(scenes_open(&s, &cfg, &err) == -1 && strstr(err.msg, "objects"), "%s", err.msg);
    scenes_config_default(&cfg);
    cfg.counts[SPLIT_VALID] = -1;
    EXPECT(scenes_open(&s, &cfg, &err) == -1 && strstr(err.msg, "valid count"), "%s", err.msg);
    scenes_config_default(&cfg);
    cfg.root = "no-such-root";
    EXPECT(scenes_open(&s, &cfg, &err) == -1 && strstr(err.msg, "make data"), "%s", err.msg);
}

// Other sizes: a 128 canvas with one large object, and the fallback layout (3 objects of
// exactly half the canvas, where random placement often fails) still never overlaps.
static void test_scenes_other_configs(void) {
    if (!loaded) return;
    Scenes s = scenes;  // shares the loaded images; only cfg differs
    s.cfg.size = 48, s.cfg.min_scale = 24, s.cfg.max_scale = 24, s.cfg.min_objects = 3;
    for (int i = 0; i < 200; i++) {
        SceneInfo info;
        scenes_describe(&info, &s, SPLIT_TRAIN, i);
        EXPECT(info.n_objects == 3, "%d objects", info.n_objects);
        for (int k = 0; k < info.n_objects; k++)
            for (int j = 0; j < k; j++) {
                const SceneObject *o = &info.objects[k], *p = &info.objects[j];
                EXPECT(!(o->sx < p->sx + p->side && p->sx < o->sx + o->side &&
                         o->sy < p->sy + p->side && p->sy < o->sy + o->side), "overlap");
                EXPECT(o->sx + o->side <= 48 && o->sy + o->side <= 48, "outside the canvas");
            }
    }
    s.cfg.size = 128, s.cfg.min_scale = 40, s.cfg.max_scale = 100, s.cfg.min_objects = 1,
    s.cfg.max_objects = 1;
    float *img = xmalloc(sizeof(float) * 3 * 128 * 128);
    SceneInfo info;
    scenes_render(img, &info, &s, SPLIT_TEST, 3);
    EXPECT(info.n_objects == 1 && info.objects[0].side >= 40 && info.objects[0].x1 <= 128);
    free(img);
}

static void test_scenes_render_speed(void) {
    if (!loaded) return;
    const int S = scenes.cfg.size, n = 2000;
    float *img = xmalloc(sizeof(float) * 3 * S * S);
    SceneInfo info;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < n; i++) scenes_render(img, &info, &scenes, SPLIT_TRAIN, i);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double us = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3 / n;
    printf("  scenes_render %dx%d: %.1f us per scene\n", S, S, us);
    EXPECT(us < 2000, "%.0f us per scene", us);  // generous: a loaded machine, -O0 builds
    free(img);
}

int main(void) {
    ScenesConfig cfg;
    scenes_config_default(&cfg);
    cfg.counts[SPLIT_TRAIN] = cfg.counts[SPLIT_VALID] = cfg.counts[SPLIT_TEST] = 2500;
    Error err = {{0}};
    loaded = scenes_open(&scenes, &cfg, &err) == 0;
    if (!loaded) printf("FAIL scenes_open: %s\n", err.msg);
    RUN(test_scenes_deterministic);
    RUN(test_scenes_layout_and_sources);
    RUN(test_scenes_captions_agree_with_boxes);
    RUN(test_scenes_pixels_agree_with_description);
    RUN(test_scenes_render_range_matches_single);
    RUN(test_scenes_words);
    RUN(test_scenes_config_errors);
    RUN(test_scenes_other_configs);
    RUN(test_scenes_render_speed);
    scenes_close(&scenes);
    return loaded ? test_summary() : 1;
}
