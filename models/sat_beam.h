// sat_beam.h: what the captioner's decoders (the LSTM's, models/sat_decode.h, and the
// Transformer's, models/sat_transformer.h) share around beam search (seq/beam.h): the next
// word's scores and the collection of the best hypotheses with their attention maps.
#ifndef MODELS_SAT_BEAM_H
#define MODELS_SAT_BEAM_H

#include "seq/beam.h"

// The log-softmax of each of the n rows of logits (V words), with <pad> and <start>, which
// never follow, at -1e9: the next word's scores for beam_search (any decoder's).
void sat_next_word_logprobs(float *logprobs, const float *logits, int n, int V);
// beam_search's output (tok (B, ML + 1), ln (B), rows (B, ML + 1)) as sat_decode returns it:
// tokens (B, ML) padded, lens (B) at most ML, and alphas (B, ML, L) (or NULL) each kept word's
// map from alpha_hist (ML + 1, R, L), the maps of every step's rows.
void sat_decode_collect(int *tokens, int *lens, float *alphas, const int *tok, const int *ln,
                        const int *rows, const float *alpha_hist, int B, int R, int ML, int L);

// Beam search of B images (beam, length_alpha; V words, ML words at most, L map positions)
// over a decoder's step and its context model, whose alpha_hist ((ML + 1), R, L) the step
// fills; the result collected as sat_decode_collect does.
void sat_beam_decode(int *tokens, int *lens, float *alphas, int B, int beam, float length_alpha,
                     int V, int ML, int L, void *model, BeamStepFn step, const float *alpha_hist,
                     int R);

#endif
