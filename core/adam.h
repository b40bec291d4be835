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

// Global L2 norm of grad (double accumulation, 8 partial sums in a fixed order: grad_sumsq).
// If max_norm > 0 and the norm exceeds it, scales grad by max_norm / norm (clip_factor).
// Returns the norm before clipping. adam_clip_update_threads below is the fast way to clip
// then step.
float clip_global_norm(float *grad, size_t n, float max_norm);

// The factor clip_global_norm scales by: max_norm / norm when max_norm > 0 and norm >
// max_norm, else 1.
float clip_factor(double norm, float max_norm);

// sum of grad[i]^2 in double, with 8 partial sums (vectorised): clip_global_norm's sum up to
// the order of the additions. The _threads form sums slices on up to n_threads threads
// (at least 1 << 16 floats each) and adds their sums in order.
double grad_sumsq(const float *grad, size_t n);
double grad_sumsq_threads(const float *grad, size_t n, int n_threads);

// adam_update_threads on the gradient grad * grad_scale, without writing it: with
// grad_scale = clip_factor(norm, max_norm) the results of clip_global_norm then
// adam_update bit for bit, given the same norm.
void adam_update_scaled_threads(float *param, const float *grad, float grad_scale, float *m,
                                float *v, size_t n, const AdamConfig *cfg, long step, float lr,
                                int n_threads);

// clip_global_norm(grad, n, max_norm) then adam_update, in two passes over the gradient
// (the norm, then the update with the clip's factor) instead of three, each on up to
// n_threads threads. grad is left as it was (unclipped). Returns the norm before clipping,
// which differs from clip_global_norm's only by the order of the additions.
float adam_clip_update_threads(float *param, const float *grad, float *m, float *v, size_t n,
                               const AdamConfig *cfg, long step, float lr, float max_norm,
                               int n_threads);

// Learning rate at step (from 1): base * decay^(step / decay_steps) (exponential,
// decay in (0, 1]; decay_steps <= 0 means constant).
float lr_exponential(float base, float decay, long decay_steps, long step);
// The Transformer's schedule (Vaswani et al. 2017, "Noam"), scaled to peak at step warmup:
// peak * min(step / warmup, sqrt(warmup / step)), a linear warm-up then inverse square-root
// decay; the paper's d^-0.5 warmup^-0.5 factor is the peak. step from 1, warmup >= 1.
float lr_noam(float peak, long warmup, long step);

// Exponential moving average of the parameters (Polyak averaging), updated after each
// optimiser step: avg = d avg + (1 - d) param, with d = min(decay, (1 + step) / (10 + step))
// so that the first few hundred steps do not leave the average near the initialisation
// (the warm-up of TensorFlow's ExponentialMovingAverage with num_updates). step counts
// from 1; decay in [0, 1).
void ema_update(float *avg, const float *param, size_t n, float decay, long step);

#endif
