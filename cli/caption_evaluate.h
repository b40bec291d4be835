// caption_evaluate.h: a captioner decoded over a split and scored, as `caption eval`
// reports it and `caption train` validates with: BLEU-1..4, CIDEr-D and ROUGE-L against
// the split's reference captions (seq/metrics.h, as coco-caption computes them) and, on the
// scenes, the grounding accuracy of the attention and the object F1 of the captions (the
// colour+class objects named right, seq/object_f1.h, micro-averaged over the split).
//
// Under mpirun each rank decodes a contiguous run of whole chunks (a chunk decoded as one
// process decodes it), every rank gathers every image's words and attention and scores
// them (cheaply), and rank 0 alone writes files.
#ifndef CLI_CAPTION_EVALUATE_H
#define CLI_CAPTION_EVALUATE_H

#include "cli/caption_data.h"
#include "cli/caption_finetune.h"
#include "cli/caption_per_image.h"
#include "core/dist.h"
#include "core/error.h"
#include "datasets/split.h"
#include "models/sat.h"
#include "seq/metrics.h"
#include "seq/object_f1.h"
#include "seq/tokenizer.h"
#include "seq/vocab.h"

// Tokenised reference captions of one split (for the metrics): for image i, captions
// refs[first[i]] .. refs[first[i + 1] - 1].
typedef struct {
    int n_images, n_caps;
    int *first;     // (n_images + 1)
    Tokens *refs;   // (n_caps)
} CaptionRefs;

// Tokenises the split's captions into e (at most CAPTION_DATA_MAX_REFS per image); -1 with
// err naming the split, image and caption of a caption the tokenizer refuses.
int caption_refs_encode(CaptionRefs *e, const CaptionData *d, Split s, Error *err);
void caption_refs_free(CaptionRefs *e);

typedef struct {
    CaptionScores scores;
    GroundingResult grounding;
    int has_grounding;  // the scenes: their objects' boxes are known
    ObjectF1 objects;
    int has_objects;    // the scenes: their objects' colours and classes are known
    int n;              // images scored
} CaptionEvalResult;

// Decodes images [0, n) of split s in chunks of m's batch (beam width beam, length
// normalisation length_alpha; with ft, the images go through the fine-tuned encoder),
// scores them against refs, and writes the COCO results JSON when results_path is not NULL
// and what outputs asks for (per-image scores, attention strips; cli/caption_per_image.h)
// when outputs is not NULL. show_progress: a progress bar on rank 0.
int caption_evaluate_with_outputs(CaptionEvalResult *res, const Dist *dist, SatModel *m,
                                  CaptionFineTune *ft, const Vocab *vocab, const CaptionData *d,
                                  Split s, const CaptionRefs *refs, int n, int beam,
                                  float length_alpha, const char *results_path,
                                  const CaptionEvalOutputs *outputs, int show_progress,
                                  Error *err);

// The same without per-image outputs (training's validation).
int caption_evaluate(CaptionEvalResult *res, const Dist *dist, SatModel *m, CaptionFineTune *ft,
                     const Vocab *vocab, const CaptionData *d, Split s, const CaptionRefs *refs,
                     int n, int beam, float length_alpha, const char *results_path,
                     int show_progress, Error *err);

#endif
