// draw_eval_quality.h: draw eval's --sample-quality (the measure itself: cli/draw_quality.h).
// What the judge is shown (--quality-of), whether the quality flags agree, the judging on
// one process (rank 0) and its figures as lines or as members of eval's JSON object.
//
//     DrawEvalQuality a = {.classifier = path, .of = DRAW_QUALITY_OF_SAMPLES, ...};
//     if ((code = draw_eval_quality_check(&a))) return code;   // before any work
//     ... load the classifier (draw_quality_load_classifier), evaluate the bound ...
//     draw_eval_quality_run(&q, &dq, &a, &p, &cfg, &cls, &set, limit, &err);
//     draw_eval_quality_print(&a, &q, "sample_quality", a.of, json);
#ifndef CLI_DRAW_EVAL_QUALITY_H
#define CLI_DRAW_EVAL_QUALITY_H

#include <stdbool.h>
#include <stdint.h>

#include "cli/draw_quality.h"
#include "core/error.h"
#include "datasets/mnist.h"

// --quality-of: samples from the prior; the split's own images (the measure's ceiling); the
// model's reconstructions of them; noise as dense as they are (the floor).
typedef enum {
    DRAW_QUALITY_OF_SAMPLES,
    DRAW_QUALITY_OF_DATA,
    DRAW_QUALITY_OF_RECONSTRUCTIONS,
    DRAW_QUALITY_OF_NOISE,
} DrawQualityOf;
// The flag's choices, in DrawQualityOf's order, NULL-terminated.
extern const char *const DRAW_QUALITY_OF_NAMES[];

typedef struct {
    const char *classifier;  // --sample-quality's CLASSIFIER; NULL: no judging asked for
    const char *illegible;   // --quality-illegible FILE, or NULL
    int of;                  // DrawQualityOf
    int n;                   // --quality-samples
    double temperature;      // --quality-temperature
    int batch;               // images a pass
    uint64_t seed;           // the samples' and the noise's
    const char *split;       // the split's name, as the lines print it ("test")
} DrawEvalQuality;

// 0 when the quality flags agree (and --quality-illegible's folder can be written to),
// said before any work; else one line on stderr and the exit code (1: the folder, 2: a
// flag that needs --sample-quality, or that --quality-of does not take).
int draw_eval_quality_check(const DrawEvalQuality *a);

// Whether the split's own images are judged beside what a->of names (samples and
// reconstructions; not data, which they are, nor noise).
bool draw_eval_quality_beside(const DrawEvalQuality *a);

// Judges what a->of names into q and, where draw_eval_quality_beside, as many of set's
// images into dq: the first limit images of set (0: all) for data, noise and
// reconstructions, a->n samples from the prior for samples (and --quality-illegible's grid
// written, with one line naming its samples). 0, or -1 with err when the grid could not be
// written (q and dq are still filled).
int draw_eval_quality_run(SampleQuality *q, SampleQuality *dq, const DrawEvalQuality *a,
                          const DrawParams *p, const DrawConfig *c, const ClassifyModel *cls,
                          const ImageSet *set, int limit, Error *err);

// q's figures on stdout: with json, a member named key after a comma; else lines. of
// (DrawQualityOf) is what q judged.
void draw_eval_quality_print(const DrawEvalQuality *a, const SampleQuality *q, const char *key,
                             int of, bool json);

#endif
