// loss.h: the likelihoods the models train with.
#ifndef SEQ_LOSS_H
#define SEQ_LOSS_H

#include <stddef.h>

// Cross-entropy of a log-softmax: losses (N) = -log softmax(logits)[target];
// logits (N, V); targets (N) in [0, V), or -1 to ignore a row (loss 0, no gradient).
// probs (N, V): softmax saved for backward. Returns the sum of the row losses.
double crossentropy_forward(float *losses, float *probs, const float *logits, const int *targets,
                            int N, int V);
// dlogits (N, V) += dlosses[n] * (probs - onehot(target)); dlosses (N) or NULL for all ones.
void crossentropy_backward(float *dlogits, const float *dlosses, const float *probs,
                           const int *targets, int N, int V);

// Label-smoothed cross-entropy (Szegedy et al. 2016, section 7; the Transformer's 0.1,
// Vaswani et al. 2017): the target distribution q = (1 - eps) onehot(target) + eps / V
// (uniform over all V classes), losses (N) = -sum_v q_v log softmax(logits)_v
//   = (1 - eps) (-log p_target) + eps * mean_v (-log p_v).
// eps = 0 is crossentropy_forward's loss exactly; eps in [0, 1). Shapes and targets as
// there (-1: no loss); probs (N, V) keeps the softmax for the backward. Returns the sum.
double crossentropy_smoothed_forward(float *losses, float *probs, const float *logits,
                                     const int *targets, int N, int V, float eps);
// dlogits (N, V) += dlosses[n] * (probs - q); dlosses (N) or NULL for all ones.
void crossentropy_smoothed_backward(float *dlogits, const float *dlosses, const float *probs,
                                    const int *targets, int N, int V, float eps);

// Binary cross-entropy with logits, elementwise and stable:
//   loss_i = max(x, 0) - x * t + log(1 + exp(-|x|));  targets t in [0, 1].
// loss (n) or NULL; returns the sum (double accumulation).
double bce_logits_forward(float *loss, const float *logits, const float *targets, size_t n);
// dlogits (n) += dloss_i * (sigmoid(x) - t); dloss NULL means all ones.
void bce_logits_backward(float *dlogits, const float *dloss, const float *logits,
                         const float *targets, size_t n);

#endif
