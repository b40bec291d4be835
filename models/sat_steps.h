// sat_steps.h: the steps of the Show, Attend and Tell decoder (models/sat.h) that its
// training forward (models/sat.c) and its decoding (models/sat_decode.c) share. Internal
// to those two: callers use sat_forward and sat_decode.
#ifndef MODELS_SAT_STEPS_H
#define MODELS_SAT_STEPS_H

#include "models/sat.h"

// out (B, D) = mean over L of annot (B, L, D)
void sat_mean_annotations(float *out, const float *annot, int B, int L, int D);
// h0 (B, H), c0 (B, H) = tanh of linear maps of the mean annotations mean_a (B, D)
void sat_initial_state(float *h0, float *c0, const float *mean_a, const SatParams *p, int B,
                       int D, int H);
// beta (B, nb) = sigmoid(h (B, H) W_beta^T + b); z (B, D) = beta * ctx (B, D), nb the
// gate's size (sat_gate_size)
void sat_gate_forward(float *beta, float *z, const float *h, const float *ctx,
                      const SatParams *p, int B, int H, int D, int nb);

#endif
