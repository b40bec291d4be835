// text_checkpoint.h: the checkpoints of `text classify` (safetensors, written atomically):
// the parameters (models/textclass.h), Adam's moments ("adam.m/NAME", "adam.v/NAME") and,
// in __metadata__, format "attend-text-classify-1", the model configuration ("text.*"),
// the tokenizer's word index ("text.words": the words in index order, one per line: no
// word holds a line feed, a Keras filter), the labels as written ("text.class_values",
// comma-separated, class 0 first), the padding, the data spec and split ("split.*") and the
// training state ("train.*", cli/train_run.h's optimiser settings).
#ifndef CLI_TEXT_CHECKPOINT_H
#define CLI_TEXT_CHECKPOINT_H

#include "cli/text_data.h"
#include "cli/train_run.h"
#include "core/block.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "models/textclass.h"
#include "seq/keras_tokenizer.h"

#define TEXT_FORMAT "attend-text-classify-1"
#define TEXT_BATCH_MAX 4096

typedef struct {
    TextConfig cfg;
    long step;
    TrainOptim optim;      // batch, lr, beta1, clip, seed
    char data[1024];       // the data spec trained on
    TextSplit split;
    int padding, truncating;  // KERAS_PRE / KERAS_POST
    KerasTokenizer tok;
    int *class_values;     // (cfg.classes)
} TextState;

void text_state_free(TextState *s);

int text_checkpoint_save(const char *path, const TextState *s, const Block *params,
                         const Block *m, const Block *v, Error *err);
// The state from a checkpoint's metadata, checked; "PATH: not a text classifier
// checkpoint (format ...)" for another program's file.
int text_checkpoint_read_state(const SafetensorsFile *f, const char *path, TextState *s,
                               Error *err);

// A model loaded for eval and predict.
typedef struct {
    TextState state;
    Block params;
    TextParams p;
} TextModel;

int text_model_load(TextModel *m, const char *path, Error *err);
void text_model_free(TextModel *m);

#endif
