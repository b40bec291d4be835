// translator_beam.h: beam search decoding of the translator (models/translator.h) through
// seq/beam.h's beam_search and the shared decoder's step (decoder_step_forward), as the
// captioner's models/sat_decode.h does; beam 1 is exactly translator_greedy.
//
// Each hypothesis ("row") keeps its own LSTM state and, with query current, its last z (or
// attentional vector with input feeding); its keys, their attention preparation and its
// source length are its sentence's. Words are scored by log-softmax with every special but
// <end> forbidden (as greedy), hypotheses by sum log p / len^length_alpha (len counting
// <end>; seq/beam.h).
#ifndef MODELS_TRANSLATOR_BEAM_H
#define MODELS_TRANSLATOR_BEAM_H

#include "models/translator.h"

// Decodes B sentences (B <= the model's capacity): src (B, S) with src_len (B) as for
// translator_forward; out (B, max_len) each sentence's best hypothesis's words, out_len (B)
// their count; score (B) its normalised log-probability, or NULL; alpha (max_len + 1, B,
// dec.L): step t's weights, which produced word t, for the words (the <end> step's and
// those past it zero), or NULL. Overwrites the activations of the last forward.
void translator_beam(Translator *m, const int *src, const int *src_len, int B, int beam,
                     float length_alpha, int *out, int *out_len, float *score, float *alpha);

#endif
