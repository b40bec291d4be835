// sat_decode.h: captions from a captioner (models/sat.h), greedy or by beam search
// (seq/beam.h), with the attention of every emitted word, whichever its decoder (the LSTM's:
// models/sat_lstm_decode.h; the Transformer's: models/sat_transformer.h).
#ifndef MODELS_SAT_DECODE_H
#define MODELS_SAT_DECODE_H

#include "models/sat.h"

// Decoding: tokens (B, max_len) word ids, lens (B), alphas (B, max_len, L) the attention
// of each emitted word (the Transformer's: its map layer's cross-attention, the mean over
// heads) or NULL, for beam width beam (1 = greedy). Score normalised by length^length_alpha.
// Encodes the images in chunks of the activations' batch (sat_alloc_acts first).
void sat_decode(SatModel *m, int *tokens, int *lens, float *alphas, const float *images, int B,
                int beam, float length_alpha);

// 0 when decoding batches of up to B images at beam width beam fits what the kernels index:
// every buffer of the decoder's decoding context (its rows' states, attention history, word
// scores, ...) and of the beam search holds at most DIMS_MAX floats (core/dims.h); else -1
// with one line naming --batch, beam_flag (e.g. "--beam", "--val-beam") and the model's
// sizes. Call with sat_check_sizes before sat_alloc_acts.
int sat_check_decode_sizes(const SatConfig *c, int B, int beam, const char *beam_flag, Error *err);

#endif
