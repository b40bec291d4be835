// test_object_f1.c: object F1 (seq/object_f1.h): hand-made captions and objects whose
// precision and recall are worked out by hand (a wrong colour, an object named twice, a
// hallucinated extra object, no object, repeated true objects, words that name nothing),
// the micro-average against the macro one; and on generated scenes (datasets/scenes.h,
// the real MNIST files under data/), that every reference caption of a scene names exactly
// its objects (F1 = 1), through cli/caption_objects.h as `caption eval` and `caption
// score --object-f1` use it, and that another scene's captions do not.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/caption_objects.h"
#include "datasets/scenes.h"
#include "seq/object_f1.h"
#include "seq/tokenizer.h"
#include "tests/support/hand_corpus.h"
#include "tests/support/test.h"

// A small lexicon: colours red 0, green 1, blue 2; classes seven 0, bag 1, two 2.
static const char *const COLOURS[] = {"red", "green", "blue"};
static const char *const CLASSES[] = {"seven", "bag", "two"};
static const ObjectLexicon LEX = {COLOURS, 3, CLASSES, 3};

enum { RED, GREEN, BLUE };
enum { SEVEN, BAG, TWO };

// The counts of caption text against truth (n_truth).
static ObjectCounts counts_of(const char *text, const ObjectName *truth, int n_truth) {
    Tokens t = tokens_of(text);
    ObjectName named[64];
    int n = object_names_parse(named, 64, t.tok, t.n, &LEX);
    ObjectCounts c;
    object_counts(&c, named, n, truth, n_truth);
    tokens_free(&t);
    return c;
}

#define EXPECT_COUNTS(c, n, t, r)                                                             \
    EXPECT((c).named == (n) && (c).truth == (t) && (c).right == (r),                          \
           "named %d truth %d right %d, expected %d %d %d", (c).named, (c).truth, (c).right, \
           (n), (t), (r))

static void test_parse_names_in_order_once(void) {
    Tokens t = tokens_of("a blue bag left of a red seven and a green two above a blue bag");
    ObjectName named[8];
    int n = object_names_parse(named, 8, t.tok, t.n, &LEX);
    EXPECT(n == 3, "%d names", n);
    EXPECT(n == 3 && named[0].colour == BLUE && named[0].cls == BAG && named[1].colour == RED &&
               named[1].cls == SEVEN && named[2].colour == GREEN && named[2].cls == TWO,
           "names out of order or wrong");
    tokens_free(&t);
    // Words that name nothing: a class with no colour before it, a colour before no class,
    // an unknown word between them; "red blue seven" names the blue seven only.
    t = tokens_of("a seven and a red left of a green big bag and a red blue seven");
    n = object_names_parse(named, 8, t.tok, t.n, &LEX);
    EXPECT(n == 1 && named[0].colour == BLUE && named[0].cls == SEVEN, "%d names", n);
    tokens_free(&t);
    t = tokens_of("");
    EXPECT(object_names_parse(named, 0, t.tok, t.n, &LEX) == 0);
    tokens_free(&t);
}

static void test_counts_by_hand(void) {
    const ObjectName two[] = {{RED, SEVEN}, {BLUE, BAG}};
    // All right, in either order, with relation words between.
    ObjectCounts c = counts_of("a blue bag to the right of a red seven", two, 2);
    EXPECT_COUNTS(c, 2, 2, 2);
    // A wrong colour on the right class: one named wrongly, one missed.
    c = counts_of("a green seven and a blue bag", two, 2);
    EXPECT_COUNTS(c, 2, 2, 1);
    // The same object named twice counts once: precision 1, recall 1/2.
    c = counts_of("a red seven above a red seven", two, 2);
    EXPECT_COUNTS(c, 1, 2, 1);
    // A hallucinated extra object.
    c = counts_of("a red seven and a blue bag and a green two", two, 2);
    EXPECT_COUNTS(c, 3, 2, 2);
    // No object named: nothing to be precise about, every object missed.
    c = counts_of("there is a picture on a dark background", two, 2);
    EXPECT_COUNTS(c, 0, 2, 0);
    // Only class words: no (colour, class) named.
    c = counts_of("a seven and a bag", two, 2);
    EXPECT_COUNTS(c, 0, 2, 0);
    // A true object listed twice is one object.
    const ObjectName repeated[] = {{RED, SEVEN}, {RED, SEVEN}};
    c = counts_of("a red seven", repeated, 2);
    EXPECT_COUNTS(c, 1, 1, 1);
    // An image with no objects: what is named is wrong.
    c = counts_of("a red seven", NULL, 0);
    EXPECT_COUNTS(c, 1, 0, 0);
}

static void test_f1_micro_averaged(void) {
    // named / truth / right per image: 2/2/2, 2/2/1 (wrong colour), 1/2/1 (named twice),
    // 3/2/2 (hallucinated), 0/2/0 (none): sums 8 / 10 / 6.
    const ObjectCounts per[] = {{2, 2, 2}, {2, 2, 1}, {1, 2, 1}, {3, 2, 2}, {0, 2, 0}};
    ObjectF1 f;
    object_f1(&f, per, 5);
    EXPECT(f.named == 8 && f.truth == 10 && f.right == 6, "sums %lld %lld %lld", f.named, f.truth, f.right);
    EXPECT_NEAR(f.precision, 6.0 / 8.0, 1e-15, 0);
    EXPECT_NEAR(f.recall, 6.0 / 10.0, 1e-15, 0);
    EXPECT_NEAR(f.f1, 2 * 0.75 * 0.6 / (0.75 + 0.6), 1e-15, 0);  // 2/3
    EXPECT_NEAR(f.f1, 2.0 / 3.0, 1e-15, 0);
    // Not the mean of the per-image precisions (1, 1/2, 1, 2/3, and 0 for the image that
    // names nothing: 0.633): the counts are pooled first.
    double macro_p = (1 + 0.5 + 1 + 2.0 / 3 + 0) / 5;
    EXPECT(f.precision - macro_p > 0.1, "precision %g against the per-image mean %g", f.precision, macro_p);
    // Nothing named anywhere: precision and F1 0, recall 0.
    const ObjectCounts none[] = {{0, 3, 0}};
    object_f1(&f, none, 1);
    EXPECT(f.precision == 0 && f.recall == 0 && f.f1 == 0 && f.truth == 3);
    object_f1(&f, NULL, 0);
    EXPECT(f.named == 0 && f.truth == 0 && f.f1 == 0);
    // Everything right: 1.
    const ObjectCounts all[] = {{3, 3, 3}, {1, 1, 1}};
    object_f1(&f, all, 2);
    EXPECT(f.precision == 1 && f.recall == 1 && f.f1 == 1);
}

// --- on the scenes -----------------------------------------------------------------------

#define SCENES_CHECKED 300  // per split

static Scenes scenes;
static int loaded;

// Each reference caption of the checked scenes of every split, as a candidate, against the
// scene's own objects (shift 0) or against those of the next scene (shift 1): the summed
// counts, and how many captions named exactly their scene's objects.
static ObjectF1 scenes_captions_against(int shift, int *exact, int *captions) {
    ObjectCounts *per = calloc((size_t)SPLIT_COUNT * SCENES_CHECKED * SCENES_CAPTIONS, sizeof *per);
    int n = 0;
    *exact = 0;
    for (int sp = 0; sp < SPLIT_COUNT; sp++)
        for (int i = 0; i < SCENES_CHECKED; i++) {
            SceneInfo info, other;
            scenes_describe(&info, &scenes, (Split)sp, i);
            scenes_describe(&other, &scenes, (Split)sp, i + shift);
            for (int k = 0; k < SCENES_CAPTIONS; k++) {
                Tokens t = tokens_of(info.captions[k]);
                caption_objects_of_scenes(&per[n], &t, &other, 1);
                *exact += per[n].named == per[n].truth && per[n].right == per[n].truth;
                n++;
                tokens_free(&t);
            }
        }
    ObjectF1 f;
    object_f1(&f, per, n);
    free(per);
    *captions = n;
    return f;
}

static void test_scenes_references_score_one(void) {
    if (!loaded) return;
    int exact, n;
    ObjectF1 f = scenes_captions_against(0, &exact, &n);
    EXPECT(exact == n, "%d of %d reference captions name exactly their scene's objects", exact, n);
    EXPECT(f.precision == 1 && f.recall == 1 && f.f1 == 1, "P %g R %g F1 %g", f.precision, f.recall, f.f1);
    // Every object of every scene is counted (1..3 per scene, mean 2).
    EXPECT(f.truth > (long long)n && f.truth < 3LL * n, "%lld true objects over %d captions", f.truth, n);
    // Another scene's captions: colours and classes rarely agree.
    f = scenes_captions_against(1, &exact, &n);
    EXPECT(f.f1 < 0.2, "F1 %g of the next scene's captions", f.f1);
}

// caption score --object-f1 takes the truth from the references: on the scenes it is the
// scene's objects, so the two paths agree, for a reference as the candidate and for
// another scene's caption.
static void test_scenes_truth_from_references(void) {
    if (!loaded) return;
    for (int i = 0; i < 100; i++) {
        SceneInfo info, other;
        scenes_describe(&info, &scenes, SPLIT_TEST, i);
        scenes_describe(&other, &scenes, SPLIT_TEST, i + 1);
        Tokens refs[SCENES_CAPTIONS];
        for (int k = 0; k < SCENES_CAPTIONS; k++) refs[k] = tokens_of(info.captions[k]);
        for (int c = 0; c < 2; c++) {
            Tokens cand = tokens_of(c ? other.captions[0] : info.captions[i % SCENES_CAPTIONS]);
            CaptionPair item = {&cand, refs, SCENES_CAPTIONS};
            ObjectCounts from_refs, from_scene;
            caption_objects_from_references(&from_refs, &item, 1);
            caption_objects_of_scenes(&from_scene, &cand, &info, 1);
            EXPECT(from_refs.named == from_scene.named && from_refs.truth == from_scene.truth &&
                       from_refs.right == from_scene.right && from_scene.truth == info.n_objects,
                   "scene %d: references %d/%d/%d, scene %d/%d/%d", i, from_refs.named, from_refs.truth,
                   from_refs.right, from_scene.named, from_scene.truth, from_scene.right);
            tokens_free(&cand);
        }
        for (int k = 0; k < SCENES_CAPTIONS; k++) tokens_free(&refs[k]);
    }
}

int main(void) {
    ScenesConfig cfg;
    scenes_config_default(&cfg);
    cfg.counts[SPLIT_TRAIN] = cfg.counts[SPLIT_VALID] = cfg.counts[SPLIT_TEST] = SCENES_CHECKED + 1;
    Error err = {{0}};
    loaded = scenes_open(&scenes, &cfg, &err) == 0;
    if (!loaded) printf("FAIL scenes_open: %s\n", err.msg);
    RUN(test_parse_names_in_order_once);
    RUN(test_counts_by_hand);
    RUN(test_f1_micro_averaged);
    RUN(test_scenes_references_score_one);
    RUN(test_scenes_truth_from_references);
    scenes_close(&scenes);
    return loaded ? test_summary() : 1;
}
