// object_f1.h: object F1 of generated captions, for data whose captions name each object
// by a colour word followed by a class word (the synthetic scenes, datasets/scenes.h:
// "a red seven left of a blue bag"): does the caption name the image's objects, and only
// those?
//
// Parsing (object_names_parse): a colour word immediately followed by a class word names
// the object (colour, class), the way the scenes' grammar writes every object ("a red
// seven", "a single red seven"). Words are compared exactly (the tokeniser lower-cases
// them). A colour word not followed by a class word, or a class word with no colour word
// just before it, names nothing: it neither earns nor costs credit (a class alone does
// not say which object of the image it is; the colour does). The scenes' grammar has no
// plurals or counts (the objects of one scene have different colours, so each is named
// one at a time), and none are parsed.
//
// Sets: what a caption names is a set. A caption that names one object twice counts it
// once (the scenes' relation captions do that: "a red seven left of a blue bag and a
// green boot above a red seven"), and so do repeated true objects.
//
// Per image (object_counts): named = |N|, truth = |T|, right = |N and T| for N the set the
// caption names and T the image's true objects. A wrong colour on a right class is one
// object named wrongly and one missed.
// Over a split (object_f1, micro-averaged: counts summed over the images, then the
// ratios): precision = sum right / sum named, recall = sum right / sum truth,
// F1 = 2 P R / (P + R). Precision is 0 when nothing is named, recall 0 when there are no
// true objects, F1 0 when P + R = 0. Images that name nothing still count their truth.
//
//     ObjectLexicon lex = {colours, 7, classes, 20};
//     ObjectName named[8], truth[3] = {{0, 7}};   // the image holds a red seven
//     int n = object_names_parse(named, 8, words, n_words, &lex);
//     ObjectCounts c[1];
//     object_counts(&c[0], named, n, truth, 1);
//     ObjectF1 f;
//     object_f1(&f, c, 1);
#ifndef SEQ_OBJECT_F1_H
#define SEQ_OBJECT_F1_H

// The words that name objects: colour words and class words, each list without repeats.
typedef struct {
    const char *const *colours;  // (n_colours)
    int n_colours;
    const char *const *classes;  // (n_classes)
    int n_classes;
} ObjectLexicon;

// An object by its colour and class: indices into an ObjectLexicon's lists.
typedef struct {
    int colour, cls;
} ObjectName;

// The distinct objects words (n) name, in the order of their first mention, into out
// (room for cap; a name takes two words, so cap >= n / 2 always suffices: a smaller cap
// is a programming error). Returns how many were stored.
int object_names_parse(ObjectName *out, int cap, char *const *words, int n,
                       const ObjectLexicon *lex);

// Adds o to the set (n_set names, room for cap) unless it holds it; returns the new size.
int object_names_add(ObjectName *set, int n_set, int cap, ObjectName o);

typedef struct {
    int named;  // distinct objects the caption names
    int truth;  // distinct true objects of the image
    int right;  // named objects that are true ones
} ObjectCounts;

// One image: named (n_named) against truth (n_truth); repeats on either side count once.
void object_counts(ObjectCounts *c, const ObjectName *named, int n_named,
                   const ObjectName *truth, int n_truth);

typedef struct {
    long long named, truth, right;  // summed over the images
    double precision, recall, f1;   // micro-averaged (above), 0..1
} ObjectF1;

// Over n >= 0 images' counts (per_image (n)).
void object_f1(ObjectF1 *r, const ObjectCounts *per_image, int n);

#endif
