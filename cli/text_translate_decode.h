// text_translate_decode.h: what `text translate show` and `score` share: their prologue
// (a model path that may name a run folder, the model loaded, a split of its data read),
// greedy decoding of many sentences at once with each one's
// attention weights kept, and a file of sentences read and encoded as the model's source.
#ifndef CLI_TEXT_TRANSLATE_DECODE_H
#define CLI_TEXT_TRANSLATE_DECODE_H

#include <stdbool.h>
#include <stddef.h>

#include "cli/text_translate_state.h"

// path as the checkpoint to open: DIR/model.safetensors when path is a folder, else path.
void translate_model_path(char *buf, size_t n, const char *path);

// The prologue of show and score: the matrix products' threads, then the checkpoint at
// model (a run folder or a file; path gets the file opened, n bytes) loaded into tm for
// batches of B. -1 with err (tm left empty).
int translate_open_model(TranslateModel *tm, char *path, size_t n, const char *model, int B,
                         int threads, Error *err);
// A split of st's data (its spec, under root) read and encoded into d. A read error comes
// back prefixed with where ("runs/mt/model.safetensors: the model's data", "--data"); a
// split of no pairs is refused ("dates: the test split holds no pairs"), d freed.
int translate_open_split(TranslateData *d, const TranslateState *st, const char *root,
                         TranslateSplit split, const char *where, Error *err);

// Decodes nb sentences (nb <= the model's capacity) with tm's model, LSTM or Transformer:
// greedy (beam 1) or beam search scored by log p / length^length_alpha; out (nb, max_len),
// len (nb) and alpha ((max_len + 1, nb, L) or NULL) as translator_beam writes them
// (models/translator_beam.h, models/translator_transformer.h tt_decode).
void translate_model_decode(TranslateModel *tm, const int *src, const int *src_len, int nb,
                            int beam, float length_alpha, int *out, int *len, float *alpha);

// n sentences decoded greedily (translate_model_decode): out (n, max_len) the words
// before <end>, out_len (n); alpha (n, max_len + 1, L) each sentence's weights by step
// (step out_len[i] wrote <end>), L = the decoder's annotations (S; 1 for none), or NULL.
typedef struct {
    int n, max_len, L;
    int *out, *out_len;
    float *alpha;
} TranslateDecoded;

// Decodes src (n, S) with src_len (n) in batches of tm's capacity B; keeps the weights
// when keep_alpha.
void translate_decode_all(TranslateDecoded *r, TranslateModel *tm, const int *src,
                          const int *src_len, int n, int B, bool keep_alpha);
void translate_decoded_free(TranslateDecoded *r);
// Sentence i's words as text (malloc'd), as translate_target_text writes them.
char *translate_decoded_text(const TranslateDecoded *r, const TranslateState *s, int i);

// The lines of path (NULL or "-": standard input) as sources: blank lines skipped, each
// other encoded with translate_encode_source into a TranslateData without targets
// (tgt_text NULL, tgt_len 0). Fails with "NAME: line K: reason" (NAME the file or
// "standard input"), or "NAME: no sentences" when there is none.
int translate_read_sources(TranslateData *d, const TranslateState *s, const char *path,
                           Error *err);

#endif
