// caption_objects.h: object F1 (seq/object_f1.h) for the captioner's commands on the
// synthetic scenes: their colour and class words as the lexicon, and each image's true
// objects from its scene's description (`caption eval`) or from the objects its reference
// captions name (`caption score --object-f1`: every caption of a scene names every
// object of it, datasets/scenes.h).
#ifndef CLI_CAPTION_OBJECTS_H
#define CLI_CAPTION_OBJECTS_H

#include "datasets/scenes.h"
#include "seq/metrics.h"
#include "seq/object_f1.h"
#include "seq/tokenizer.h"

// Storage for the scenes' words; the lexicon points into it.
typedef struct {
    const char *colours[SCENES_COLOUR_COUNT];
    const char *classes[SCENES_CLASS_COUNT];
} ScenesObjectWords;

// The scenes' lexicon, indexed as SceneObject's colour and cls are.
void caption_objects_lexicon(ObjectLexicon *lex, ScenesObjectWords *words);

// counts (n): each generated caption cands[i] against the objects of scene infos[i].
void caption_objects_of_scenes(ObjectCounts *counts, const Tokens *cands, const SceneInfo *infos,
                               int n);

// counts (n): each candidate of items against the objects its references name together.
void caption_objects_from_references(ObjectCounts *counts, const CaptionPair *items, int n);

// On stdout, after the other metrics of a --json object: ", "object_f1": F, "object_precision": P,
// "object_recall": R, "objects_named": N, "objects_true": N, "objects_right": N", the
// ratios with the decimals the command prints its other scores with.
void caption_objects_print_json(const ObjectF1 *f, int decimals);
// On stdout, after the other metrics of a line: " object F1 F (precision P, recall R)".
void caption_objects_print_line(const ObjectF1 *f);

#endif
