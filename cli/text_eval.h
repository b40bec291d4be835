// text_eval.h: `text classify eval` and `text classify predict` (cli/text_classify.h), and
// the accuracy evaluation that training's validation shares.
#ifndef CLI_TEXT_EVAL_H
#define CLI_TEXT_EVAL_H

#include "cli/text_checkpoint.h"
#include "cli/text_data.h"
#include "models/textclass.h"

typedef struct {
    int n, correct;
    double accuracy, loss;  // NaN when n is 0; loss: the mean data loss (no L2 penalty)
} TextEval;

// Accuracy and mean loss over e's sentences in batches of at most a->B, without dropout.
TextEval text_evaluate(TextActs *a, const TextParams *p, const TextConfig *c,
                       const TextEncoded *e);

// The --split choices of eval and show: "valid", "train", "all" (then NULL).
extern const char *const TEXT_SPLITS[];

// A model and the sentences of one split of a data spec (NULL: the model's own), split as
// the model's run split it (split: 0 valid, 1 train, 2 all), encoded for it. The data's
// labels must be the model's classes. On failure d is empty.
typedef struct {
    TextModel m;
    const char *spec;  // the spec read (points into m or the argument)
    SentenceSet set;
    int *idx;          // (e.n) each encoded sentence's index in set
    TextEncoded e;
} TextSplitData;

int text_open_split(TextSplitData *d, const char *model, const char *data, const char *root,
                    int split, Error *err);
void text_split_data_free(TextSplitData *d);

// The subcommands: argv[0] is "eval" or "predict"; each returns the exit status.
int text_eval_main(int argc, char **argv);
int text_predict_main(int argc, char **argv);

#endif
