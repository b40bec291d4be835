// text_eval.h: `text classify eval` and `text classify predict` (cli/text_classify.h), and
// the accuracy evaluation that training's validation shares.
#ifndef CLI_TEXT_EVAL_H
#define CLI_TEXT_EVAL_H

#include "cli/text_data.h"
#include "models/textclass.h"

typedef struct {
    int n, correct;
    double accuracy, loss;  // NaN when n is 0; loss: the mean data loss (no L2 penalty)
} TextEval;

// Accuracy and mean loss over e's sentences in batches of at most a->B, without dropout.
TextEval text_evaluate(TextActs *a, const TextParams *p, const TextConfig *c,
                       const TextEncoded *e);

// The subcommands: argv[0] is "eval" or "predict"; each returns the exit status.
int text_eval_main(int argc, char **argv);
int text_predict_main(int argc, char **argv);

#endif
