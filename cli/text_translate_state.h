// text_translate_state.h: what `text translate` commands share: the attention kinds by
// name, the data (the date task or sentence pairs, encoded), and the checkpoints
// (safetensors, written atomically): the translator's parameters (models/translator.h),
// Adam's moments ("adam.m/NAME", "adam.v/NAME") and, in __metadata__, format
// "attend-text-translate-1", the model kind ("translate.model": lstm or transformer; a
// checkpoint without it is an LSTM's), the model configuration ("translate.*": the LSTM's
// sizes and attention, or the Transformer's d_model, heads, d_ff, enc_layers, dec_layers,
// post_ln, positions, map_layer, warmup), the data spec
// ("train.data"), for pairs the BPE model learned on the training split ("translate.bpe",
// seq/bpe.h's text form) and the training state ("train.*", cli/train_run.h).
//
// Tokens: the date task's characters (source: <pad> then DATES_SOURCE_ALPHABET; target:
// the four specials of seq/vocab.h then DATES_TARGET_ALPHABET); pairs: one joint BPE over
// the training split's sources and targets (seq/bpe.h: why subwords, not words), the same
// ids on both sides. Sources longer than --max-src tokens and targets longer than
// --max-len are cut there.
//
// Splits: dates: TRANSLATE_DATES_VALID and _TEST examples of datasets/dates.h's own valid
// and test splits, --train-size of its train split (data seed TRANSLATE_DATES_SEED);
// bible-en-es: its three files; pairs:FILE: a fixed hash of each line's pair index puts
// 90 % in train, 5 % in valid and 5 % in test.
#ifndef CLI_TEXT_TRANSLATE_STATE_H
#define CLI_TEXT_TRANSLATE_STATE_H

#include <stdbool.h>

#include "cli/train_run.h"
#include "core/block.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "datasets/dates.h"
#include "models/translator.h"
#include "models/translator_transformer.h"
#include "seq/bpe.h"

#define TRANSLATE_FORMAT "attend-text-translate-1"
#define TRANSLATE_BATCH_MAX 4096
#define TRANSLATE_DATES_SEED 1
#define TRANSLATE_DATES_VALID 500
#define TRANSLATE_DATES_TEST 1000

// --attention's names, NULL-terminated, and what each one is.
extern const char *const TRANSLATE_ATTENTIONS[];
typedef struct {
    AttnKind kind;
    DecoderQuery query;
} TranslateAttention;
TranslateAttention translate_attention(int index);
int translate_attention_parse(const char *name);  // index, or -1

// --model's names, NULL-terminated: the LSTM encoder-decoder (models/translator.h) and the
// Transformer (models/translator_transformer.h).
extern const char *const TRANSLATE_MODELS[];
enum { TRANSLATE_MODEL_LSTM = 0, TRANSLATE_MODEL_TRANSFORMER = 1 };

typedef struct {
    int model;             // TRANSLATE_MODEL_*
    TranslatorConfig cfg;  // the LSTM's; with the Transformer only Vs, dec.V, S, max_len and
                           // dec.L (= S) are read
    TtConfig tt;           // the Transformer's (its Vs, V, S, max_len as cfg's)
    int warmup;            // the Transformer's Noam schedule: steps to the peak (0: off)
    int attention;         // index into TRANSLATE_ATTENTIONS (the LSTM's)
    long step;
    TrainOptim optim;
    char data[1024];       // the data spec trained on
    int train_size;        // dates: training examples
    int bpe_merges;        // pairs: merges asked for
    bool has_bpe;          // pairs: bpe holds the model
    Bpe bpe;
} TranslateState;

void translate_state_free(TranslateState *s);
// What attends, for pages and JSON: the LSTM's --attention name, or "transformer".
const char *translate_attention_name(const TranslateState *s);
// The Transformer's vocabularies and lengths from cfg (after translate_vocab_fit), and cfg's
// decoder stand-ins (dec.L = S); checks tt: 0, or -1 with one line.
int translate_tt_finish(TranslateState *s, Error *err);

// A split, encoded: n pairs, sources (n, S) padded with 0 and their lengths, targets
// (n, max_len) and their lengths; the texts (references for BLEU); dates: each example.
typedef struct {
    int n, S, max_len;
    int *src, *src_len, *tgt, *tgt_len;
    char **src_text, **tgt_text;  // (n), owned
    DateExample *dates;           // (n) for the date task, else NULL
} TranslateData;

typedef enum { TRANSLATE_TRAIN = 0, TRANSLATE_VALID = 1, TRANSLATE_TEST = 2 } TranslateSplit;
extern const char *const TRANSLATE_SPLITS[];  // "train", "valid", "test", NULL

// A new run's vocabulary from spec: dates: the character alphabets; pairs: BPE learned on
// the training split (s->bpe_merges merges). Sets s->cfg.Vs, s->cfg.dec.V, s->has_bpe.
int translate_vocab_fit(TranslateState *s, const char *root, Error *err);
// The split of s->data, encoded with s's vocabulary and s->cfg's S and max_len.
int translate_data_read(TranslateData *d, const TranslateState *s, const char *root,
                        TranslateSplit split, Error *err);
void translate_data_free(TranslateData *d);
// The date task's split size: s->train_size, TRANSLATE_DATES_VALID or TRANSLATE_DATES_TEST.
int translate_dates_split_size(const TranslateState *s, TranslateSplit split);
// The first n >= 1 examples of a date-task split (s's data must be dates), any n: examples
// are a pure function of (seed, split, index) and no source string is in two splits
// (datasets/dates.h), so a larger n extends the split and never reaches another.
void translate_data_read_dates(TranslateData *d, const TranslateState *s, TranslateSplit split,
                               int n);
// One source sentence as ids (S of them, padded with 0) and its length (cut at S): dates:
// its characters lower-cased, each one of DATES_SOURCE_ALPHABET; pairs: its BPE pieces.
// An empty (or all-space) sentence, or a character the date task does not know, fails
// with the reason alone (the caller names the line).
int translate_encode_source(const TranslateState *s, const char *text, int *ids, int *len,
                            Error *err);
// Target ids (n) as text (malloc'd): dates' characters, or BPE's decoding.
char *translate_target_text(const TranslateState *s, const int *ids, int n);

int translate_checkpoint_save(const char *path, const TranslateState *s, const Block *params,
                              const Block *m, const Block *v, Error *err);
// The state from a checkpoint's metadata, checked; "PATH: not a text translate checkpoint
// (format '...', expected attend-text-translate-1)" for another program's or task's file.
int translate_checkpoint_read_state(const SafetensorsFile *f, const char *path,
                                    TranslateState *s, Error *err);

// A model loaded for eval: a translator of batch capacity B with the checkpoint's weights
// (m for the LSTM, tt for the Transformer: state.model says which).
typedef struct {
    TranslateState state;
    Translator m;
    TtModel tt;
} TranslateModel;
int translate_model_load(TranslateModel *tm, const char *path, int B, Error *err);
void translate_model_free(TranslateModel *tm);

#endif
