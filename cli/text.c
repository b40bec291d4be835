// bin/text: attention over words (issue 57).
//
//   text classify train   --out DIR [--data sentiment] [--pool keras] [--resume] [--json]
//   text classify eval    --model DIR/model.safetensors [--split valid] [--json]
//   text classify predict --model M [--input FILE]
//   text classify show    --model M --out DIR      (attention.html, attention.png)
//   text classify report  RUN                       (RUN/report.html)
//   text translate train  --out DIR [--data dates] [--attention bahdanau] [--resume] [--json]
//   text translate eval   --model DIR/model.safetensors [--split test] [--json]
//   text translate translate --model M [--input FILE]
//
// The sentence classifier and its defaults: cli/text_classify.h (the Keras attention demo's
// recipe); data specs and splits: cli/text_data.h; checkpoints: cli/text_checkpoint.h.
// The translator: cli/text_translate.h.
// One process: bin/text does not run under mpirun.
#include <stdio.h>

#include "cli/args.h"
#include "cli/text_classify.h"
#include "cli/text_translate.h"
#include "core/error.h"

static void overview(FILE *f) {
    fprintf(f,
            "usage: text COMMAND [flags]   (text COMMAND --help for its commands)\n"
            "  classify   the sentence classifier: train, eval, predict, show, report (text classify --help)\n"
            "  translate  the encoder-decoder translator: train, eval, translate (text translate --help)\n");
}

int main(int argc, char **argv) {
    static const char *const names[] = {"classify", "translate"};
    int which;
    Error err;
    int r = args_subcommand(argc, argv, names, 2, &which, &err);
    if (r == ARGS_HELP) {
        if (args_reporting_process()) overview(stdout);
        return 0;
    }
    if (r == ARGS_ERROR) {
        if (args_reporting_process()) fprintf(stderr, "text: %s\n", err.msg);
        return 2;
    }
    return which == 0 ? text_classify_main(argc - 1, argv + 1)
                      : text_translate_main(argc - 1, argv + 1);
}
