// caption_objects.c: see caption_objects.h.
#include "cli/caption_objects.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/check.h"

void caption_objects_lexicon(ObjectLexicon *lex, ScenesObjectWords *words) {
    for (int k = 0; k < SCENES_COLOUR_COUNT; k++) words->colours[k] = scenes_colour_word(k);
    for (int k = 0; k < SCENES_CLASS_COUNT; k++) words->classes[k] = scenes_class_word(k);
    *lex = (ObjectLexicon){words->colours, SCENES_COLOUR_COUNT, words->classes, SCENES_CLASS_COUNT};
}

// Room for the names of a caption of n words (a name takes two).
static int names_cap(int n) { return n / 2 + 1; }

void caption_objects_of_scenes(ObjectCounts *counts, const Tokens *cands, const SceneInfo *infos,
                               int n) {
    ScenesObjectWords words;
    ObjectLexicon lex;
    caption_objects_lexicon(&lex, &words);
    int room = 0;
    ObjectName *named = NULL;
    for (int i = 0; i < n; i++) {
        if (names_cap(cands[i].n) > room) {
            room = names_cap(cands[i].n);
            named = xrealloc(named, (size_t)room * sizeof *named);
        }
        int n_named = object_names_parse(named, room, cands[i].tok, cands[i].n, &lex);
        ObjectName truth[SCENES_MAX_OBJECTS];
        for (int k = 0; k < infos[i].n_objects; k++)
            truth[k] = (ObjectName){infos[i].objects[k].colour, infos[i].objects[k].cls};
        object_counts(&counts[i], named, n_named, truth, infos[i].n_objects);
    }
    free(named);
}

void caption_objects_from_references(ObjectCounts *counts, const CaptionPair *items, int n) {
    ScenesObjectWords words;
    ObjectLexicon lex;
    caption_objects_lexicon(&lex, &words);
    for (int i = 0; i < n; i++) {
        const CaptionPair *it = &items[i];
        int cand_cap = names_cap(it->cand->n), refs_cap = 0;
        for (int r = 0; r < it->n_refs; r++) refs_cap += names_cap(it->refs[r].n);
        ObjectName *named = xmalloc((size_t)(cand_cap + refs_cap) * sizeof *named);
        ObjectName *truth = named + cand_cap;  // every reference's names one after another:
        int n_truth = 0;                       // object_counts counts the repeats once
        int n_named = object_names_parse(named, cand_cap, it->cand->tok, it->cand->n, &lex);
        for (int r = 0; r < it->n_refs; r++)
            n_truth += object_names_parse(truth + n_truth, names_cap(it->refs[r].n), it->refs[r].tok,
                                          it->refs[r].n, &lex);
        object_counts(&counts[i], named, n_named, truth, n_truth);
        free(named);
    }
}

void caption_objects_print_json(const ObjectF1 *f, int decimals) {
    printf(", \"object_f1\": %.*f, \"object_precision\": %.*f, \"object_recall\": %.*f, "
           "\"objects_named\": %lld, \"objects_true\": %lld, \"objects_right\": %lld",
           decimals, f->f1, decimals, f->precision, decimals, f->recall, f->named, f->truth, f->right);
}

void caption_objects_print_line(const ObjectF1 *f) {
    printf(" object F1 %.4f (precision %.4f, recall %.4f)", f->f1, f->precision, f->recall);
}
