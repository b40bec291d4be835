// glimpse.h: the recurrent attention classifier of DRAW's first experiment ("Differentiable
// RAM", Gregor et al. 2015, section 4: an LSTM that takes a 12 x 12 glimpse of the image
// at each step through DRAW's selective read, and after a fixed number of glimpses
// classifies the digit with a softmax layer). Trained end to end by backpropagation,
// through the read's attention parameters too.
//
// For t = 1..T, with h_0 = c_0 = 0:
//     params_t = read.W h_{t-1} + read.b                     (5 values, vision/filterbank.h)
//     r_t      = gamma F_Y x F_X^T                           (N x N glimpse of the image)
//     h_t, c_t = LSTM([r_t, h_{t-1}], c_{t-1})               (seq/lstm.h)
// logits = out.W h_T + out.b; loss = mean over the batch of -log softmax(logits)[label].
// Without attention (the no-attention variant) r_t is the whole image, every step.
// The read's bias starts with the grid tiling the whole image (a coarse first look), as
// DRAW's read does in models/draw.c.
//
// Hard attention (hard = 1; the RAM baseline of the paper's table, Mnih et al. 2014,
// "Recurrent Models of Visual Attention"): no gradient reaches the read. At each step a
// location policy places a retina: m_t = tanh(loc.W h_{t-1} + loc.b) (2 values, the image
// spans [-1, 1]; h_0 = 0), the centre l_t = m_t + loc_std eps_t with eps_t ~ N(0, I) given
// by the caller (acts.eps; zeros for evaluation at the mean), read at clamp(l_t, -1, 1).
// The retina is RAM's glimpse sensor built from DRAW's filterbank: `scales` N x N patches
// at the same centre, patch s with grid stride 2^s pixels and sigma half of it (N = 12,
// 4 scales: windows of 12, 24, 48 and 96 pixels, each seen as 12 x 12, as RAM's 4-scale
// retina on 100 x 100 cluttered MNIST). Like RAM's glimpse network, the LSTM reads the
// patches and the centre: r_t = [patch_0, ..., patch_{scales-1}, clamp(l_t)].
// With gnet > 0 the LSTM reads RAM's glimpse network instead (Mnih et al. 2014, section 4:
// h_g = Rect(Linear(rho(x, l))), h_l = Rect(Linear(l)), g = Rect(Linear(h_g) + Linear(h_l));
// 128, 128 and 256 units there):
//     hg_t = relu(gnet_what.W rho_t + gnet_what.b)        (gnet)  rho_t the scales' patches
//     hl_t = relu(gnet_where.W clamp(l_t) + gnet_where.b)  (gnet)
//     r_t  = relu(gnet_out.W [hg_t, hl_t] + gnet_out.b)    (hidden) the LSTM's input
// (one layer on the concatenation is the paper's sum of two linear layers, with one bias
// where the sum has two). The cross-entropy's gradient reaches these layers through r_t;
// the centre is data to them (no gradient into the sample).
// Training is RAM's hybrid: the classifier (LSTM and output layer) by the cross-entropy's
// gradient, the policy's layer by REINFORCE with the reward R = 1 when the argmax of the
// logits is the label (else 0) less a baseline learned per step, b_t = baseline.W h_{t-1}
// + baseline.b, fitted to R by least squares. The sampled centre is not back-propagated
// through, and neither the REINFORCE term nor the baseline's fit reaches the LSTM (its
// state is their input, held fixed, as in public RAM reimplementations: kevinzakka/
// recurrent-visual-attention's location and baseline networks read h_t.detach()). The
// backward computes the gradient of
//     mean_b [ CE_b - sum_t (R_b - b_t) log N(l_t; m_t, loc_std^2 I) + sum_t (R_b - b_t)^2 / 2 ]
// with the samples l_t, the advantages R_b - b_t, and h_{t-1} in m_t and in the last term's
// b_t held fixed (glimpse_reinforce_mean_grad is the location term).
// The reward of each image is left in acts.reward by the forward.
//
// The read with soft attention: when at most a quarter of the batch's pixels are nonzero
// (cluttered MNIST: about 3 %), the forward lists them once (vision/filterbank_sparse.h)
// and every step's read and its backward run over them alone; otherwise the dense GEMM
// read. The two agree to float rounding (pixels that are zero add exactly zero).
//
// Memory: one Block of parameters (GlimpseParams views); the activations of the unrolled
// forward, laid out (T, B, ...), and the backward's buffers in one GlimpseActs Block sized
// for at most B rows, with the nonzero pixels' lists beside it. Forward and backward
// allocate nothing.
#ifndef MODELS_GLIMPSE_H
#define MODELS_GLIMPSE_H

#include "core/block.h"
#include "core/error.h"
#include "core/gemm_packed.h"
#include "core/rng.h"
#include "vision/filterbank_sparse.h"

typedef struct {
    int W, H;       // image width and height (100 x 100 for cluttered MNIST)
    int T;          // glimpses
    int read_n;     // glimpse grid N (N x N); unused without attention
    int hidden;     // LSTM units
    int classes;    // softmax outputs
    int attention;  // 1: N x N read glimpses; 0: the whole image every step
    int hard;       // 1: sampled window centres trained by REINFORCE (attention only)
    float loc_std;  // hard only: the centre policy's standard deviation (g~ units, the
                    // image spans [-1, 1])
    int scales;     // hard only: the retina's patches (1..GLIMPSE_MAX_SCALES)
    int gnet;       // hard only: 0, the LSTM reads the retina and centre as they are; > 0,
                    // through RAM's glimpse network with what and where layers of gnet units
} GlimpseConfig;

enum { GLIMPSE_MAX_SCALES = 8 };

// The paper's table: 100 x 100, 8 glimpses of 12 x 12, LSTM 256, 10 classes.
GlimpseConfig glimpse_config_default(int W, int H);
int glimpse_config_check(const GlimpseConfig *c, Error *err);
// Inputs the LSTM reads from the image per step: N * N, or W * H without attention, or
// with hard attention scales * N * N + 2 (the retina and its centre), or hidden (the glimpse
// network's output) when gnet > 0.
int glimpse_read_size(const GlimpseConfig *c);
// Hard attention: the filterbank parameters (5, vision/filterbank.h) of retina patch s
// (stride 2^s pixels, sigma 2^(s-1), gamma 1) centred at (cx, cy) in [-1, 1].
void glimpse_retina_params(float *params, float cx, float cy, int s, const GlimpseConfig *c);

typedef struct {
    float *lstm_W, *lstm_b;  // (4 hidden, R + hidden), (4 hidden); R = glimpse_read_size
    float *read_W, *read_b;  // (5, hidden), (5); attention only (NULL otherwise); hard:
                             // the policy's mean layer "loc.W" (2, hidden), "loc.b" (2)
    float *out_W, *out_b;    // (classes, hidden), (classes)
    float *base_W, *base_b;  // hard only: the reward baseline's layer "baseline.W" (1, hidden),
                             // "baseline.b" (1)
    float *what_W, *what_b;    // gnet only: "gnet_what.W" (gnet, scales N N), "gnet_what.b" (gnet)
    float *where_W, *where_b;  // gnet only: "gnet_where.W" (gnet, 2), "gnet_where.b" (gnet)
    float *gout_W, *gout_b;    // gnet only: "gnet_out.W" (hidden, 2 gnet), "gnet_out.b" (hidden)
} GlimpseParams;

// Registers the parameters (or, on another Block, their gradients or moments) in b.
void glimpse_layout(Block *b, GlimpseParams *p, const GlimpseConfig *c);
void glimpse_init(GlimpseParams *p, const GlimpseConfig *c, Rng *rng);

typedef struct {
    Block block;
    int B;  // rows allocated for
    // forward, (T, B, ...)
    float *xh;        // (T, B, R + hidden): [r_t, h_{t-1}]
    float *h, *c;     // (T, B, hidden)
    float *gates;     // (T, B, 4 hidden) post-activation; the backward turns them into the
                      // pre-activation gradients in place (one backward per forward)
    float *u;         // (T, B, (W + N) S) soft attention: F_Y x of each read, kept for the
                      // backward: (N, W) from the dense read; from the sparse one its
                      // transpose and (u F_X^T)^T (filterbank_sparse_kept_floats)
    float *rparams;   // (T, B, 5) the read windows' raw parameters (hard: the retina's
                      // finest patch at the clamped centre)
    float *eps;       // (T, B, 2) hard only: the centre noise, filled by the caller
    float *locmean;   // (T, B, 2) hard only: the policy's means m_t
    float *loc;       // (T, B, 2) hard only: the sampled centres l_t (before clamping)
    const float *fixed_loc;  // hard only, for tests: (T, B, 2) centres to use instead of
                             // sampling (NULL: l_t = m_t + loc_std eps_t)
    float *reward;    // (B) hard only: 1 when the image was classified right, else 0
    float *base;      // (T, B) hard only: the learned baselines b_t
    float *retina;    // (T, B, scales N N) gnet only: the patches rho_t
    float *lc;        // (T, B, 2) gnet only: the clamped centres
    float *hgl;       // (T, B, 2 gnet) gnet only: [hg_t, hl_t] after the ReLU
    float *dhgl;      // (B, 2 gnet) gnet only, backward
    float *Fx, *Fy;   // (T, B, N W), (T, B, N H)
    float *gamma;     // (T, B)
    float *logits;    // (B, classes)
    float *probs;     // (B, classes)
    float *losses;    // (B)
    // backward
    float *drparams;  // (T, B, 5); hard: (T, B, 2) the gradient of the means' pre-activations
    float *dh[2], *dc[2];  // (B, hidden)
    float *dxh;       // (B, R + hidden) soft attention: the LSTM input's gradient [dr_t, dh_{t-1}]
    float *dlogits;   // (B, classes)
    float *dbase;     // (T, B) hard only
    float *dFx, *dFy, *dgamma;  // (B, N W), (B, N H), (B)
    float *fb_scratch;
    SparseImages sparse;  // soft attention: the batch's nonzero pixels, when few enough
    int sparse_read;      // 1: the last forward read through `sparse` (vision/filterbank_sparse.h)
    int dense_read;       // for tests: 1 keeps the dense read whatever the images
    PackedMatrix lstm_Wt;  // lstm.W^T packed for the forward's gate products (core/gemm_packed.h)
    PackedMatrix lstm_Wd;  // lstm.W packed for the backward's (B, 4 hidden) @ W; only the
                           // h_{t-1} columns when no read gradient is needed
    // NULL: forward and backward pack lstm_Wt and lstm_Wd themselves. Otherwise packs of the
    // same parameters made by the caller (glimpse_pack_weights, on another GlimpseActs of
    // the same config), used as they are: data-parallel workers share one pair.
    const PackedMatrix *use_Wt, *use_Wd;
} GlimpseActs;

// 0 when batches of up to B fit what the kernels index: every parameter and activation
// tensor (and the sparse read's image lists) holds at most DIMS_MAX floats (core/dims.h);
// else -1 with one line naming the flags (--T, --batch, --hidden, --read, --scales) whose
// product passes. Call after glimpse_config_check, before anything is allocated.
int glimpse_check_sizes(const GlimpseConfig *c, int B, Error *err);
// Registers the activation tensors for batches of up to B in k (emptied; not allocated)
// and sets a->B: glimpse_acts_alloc's layout, which tests read to check glimpse_check_sizes.
void glimpse_acts_layout(Block *k, GlimpseActs *a, const GlimpseConfig *c, int B);
void glimpse_acts_alloc(GlimpseActs *a, const GlimpseConfig *c, int B);
void glimpse_acts_free(GlimpseActs *a);
// Row b of step t of an activation tensor laid out (T, a->B, width).
static inline float *glimpse_at(const GlimpseActs *a, float *base, int t, int width) {
    return base + (size_t)t * a->B * width;
}

// Packs p's lstm.W into a->lstm_Wt (which 0: the forward's) or a->lstm_Wd (which 1: the
// backward's), as glimpse_forward and glimpse_backward do when use_Wt / use_Wd are NULL.
void glimpse_pack_weights(GlimpseActs *a, const GlimpseParams *p, const GlimpseConfig *c, int which);

// The N x N patch the last forward read at step t for row b (attention only): the read
// glimpse, or with hard attention the retina's finest patch (row stride N).
const float *glimpse_fovea(const GlimpseActs *a, const GlimpseConfig *c, int t, int b);

// Hard attention: eps (T, B, 2) of acts from rng (N(0, 1)); zeros for the mean.
void glimpse_fill_noise(GlimpseActs *a, const GlimpseConfig *c, int B, Rng *rng);
// REINFORCE's gradient of -adv log N(l; m, sd^2 I) with respect to the mean m:
// dmean (n) += -scale adv (l - m) / sd^2; l, m (n). With adv = R(l) - b, b independent of
// l, its expectation over l ~ N(m, sd^2 I) is -scale times the gradient of E[R] in m.
void glimpse_reinforce_mean_grad(float *dmean, const float *l, const float *m, float adv,
                                 float sd, float scale, int n);

// Forward of B images x (B, H W) with labels (B) in [0, classes); returns the mean loss.
// correct (may be NULL) receives how many images the argmax of the logits gets right.
double glimpse_forward(GlimpseActs *a, const GlimpseParams *p, const GlimpseConfig *c,
                       const float *x, const int *labels, int B, int *correct);
// Accumulates into g the gradient of the mean loss of the last forward (same x, labels, B).
void glimpse_backward(GlimpseParams *g, GlimpseActs *a, const GlimpseParams *p,
                      const GlimpseConfig *c, const float *x, const int *labels, int B);

#endif
