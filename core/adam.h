// adam.h: Adam / AdamW with bias correction, global-norm clipping, learning-rate decay.
#ifndef CORE_ADAM_H
#define CORE_ADAM_H

#include <stddef.h>

typedef struct {
    float lr;            // base learning rate
    float beta1, beta2;  // 0.9, 0.999 by default
    float eps;           // 1e-8
    float weight_decay;  // decoupled (AdamW); 0 = plain Adam
} AdamConfig;

AdamConfig adam_defaults(float lr);

// One update of n parameters. step counts from 1 (bias correction uses it); lr is the
// learning rate for this step (after any schedule). m, v: the moments, same size.
void adam_update(float *param, const float *grad, float *m, float *v, size_t n,
                 const AdamConfig *cfg, long step, float lr);

// adam_update over n_threads threads, each a contiguous slice (at least 1 << 16 parameters
// per thread, else fewer threads): the same results bit for bit (the update is elementwise).
void adam_update_threads(float *param, const float *grad, float *m, float *v, size_t n,
                         const AdamConfig *cfg, long step, float lr, int n_threads);

// Global L2 norm of grad (double accumulation, 8 partial sums in a fixed order). If max_norm > 0 and the norm exceeds
// it, scales grad by max_norm / norm. Returns the norm before clipping.
float clip_global_norm(float *grad, size_t n, float max_norm);

// Learning rate at step (from 1): base * decay^(step / decay_steps) (exponential,
// decay in (0, 1]; decay_steps <= 0 means constant).
float lr_exponential(float base, float decay, long decay_steps, long step);

// Exponential moving average of the parameters (Polyak averaging), updated after each
// optimiser step: avg = d avg + (1 - d) param, with d = min(decay, (1 + step) / (10 + step))
// so that the first few hundred steps do not leave the average near the initialisation
// (the warm-up of TensorFlow's ExponentialMovingAverage with num_updates). step counts
// from 1; decay in [0, 1).
void ema_update(float *avg, const float *param, size_t n, float decay, long step);

#endif
