// draw.h: the DRAW variational auto-encoder (Gregor et al. 2015), with and without
// attention; REFERENCE.md section 3 has the equations.
//
// For t = 1..T, with c_0 = 0 and h_dec_0 = 0:
//     x_hat = x - sigmoid(c_{t-1})
//     r_t   = read(x, x_hat, h_dec_{t-1})      attention: two N_r x N_r glimpses (filterbank.h)
//                                              whose params are read.W h_dec_{t-1} + read.b;
//                                              none: [x, x_hat]
//     h_enc_t = LSTM_enc([r_t, h_dec_{t-1}])  (both LSTMs optionally with peepholes)
//     [mu_t, log sigma_t] = q.W h_enc_t + q.b;  z_t = mu_t + sigma_t eps_t, eps_t fresh per step
//     h_dec_t = LSTM_dec(z_t)
//     c_t = c_{t-1} + write(h_dec_t)           attention: (1/gamma) F_Y^T w F_X with
//                                              w = write.W h_dec_t + write.b (N_w x N_w) and
//                                              params from write_attn; none: write.W h_dec_t + b
// Class-conditional (classes K > 0): the label's one-hot y (K) is a further input of both
// LSTMs at every step, h_enc_t = LSTM_enc([r_t, h_dec_{t-1}, y]) and
// h_dec_t = LSTM_dec([z_t, y]), so q(z | x, y), p(x | z, y) and the bound is
// -log p(x | y)'s; the prior stays N(0, I). This is the conditional VAE's scheme (Kingma et
// al. 2014's M2, Sohn et al. 2015: y joins the encoder's and the decoder's inputs) applied
// per step, as alignDRAW (Mansimov et al. 2016) feeds its caption vector to DRAW's decoder
// at every step. y's columns of the LSTM weights are kept apart (enc_label_W, dec_label_W):
// being one-hot, y's product is one column per image, the same at every step, so it joins
// the pre-activations once per forward and its weight gradient is the step-summed gate
// gradient of each image added to its label's column.
// Loss per image, in nats: recon = sum over pixels BCE(x, sigmoid(c_T)),
// kl = sum_t sum_k 0.5 (mu^2 + sigma^2 - 2 log sigma - 1); bound = recon + kl (no constant).
//
// Images are (C, H, W) row-major with values in [0, 1] (binary, grey, or colour with C = 3).
// Colour (Gregor et al. 2015, section 3.3, their SVHN and CIFAR-10 models): every channel
// is read and written through the same filters (vision/filterbank.h's channel functions),
// so the read gives 2 C N_r^2 values and a write patch is C N_w^2; the attention
// parameters stay five per glimpse. The paper does not state its colour likelihood; here
// it is the same Bernoulli cross-entropy on each channel's intensity in [0, 1] (what most
// public reproductions use). On grey or colour intensities that is not a normalised
// density of continuous pixels, so its "bound" is a training loss in nats (with its floor
// at the data's own entropy, above 0), comparable between runs on the same data only.
// Every activation of
// the unrolled forward that the backward needs is kept in DrawActs, laid out (T, B, ...)
// in one Block allocated for at most B rows, once: the LSTM inputs are assembled in place
// (the read writes into the encoder's input rows, z into the decoder's), x_hat is
// recomputed from the canvas in the backward rather than stored, and the gate gradients
// overwrite the gates. The forward, backward and sampling loops allocate nothing.
// Sigmoid, tanh and exp are core/activations.h's vectorised approximations (<= 4e-7;
// x_hat's sigmoid is sigmoid_tanh_fast, accurate to 2e-7 in absolute terms).
// Noise: the caller fills acts.eps (T, B, Z) (draw_fill_noise) before draw_forward, so a
// gradient check can hold it fixed and a training step can derive it from (seed, step).
#ifndef MODELS_DRAW_H
#define MODELS_DRAW_H

#include "core/block.h"
#include "core/error.h"
#include "core/gemm_packed.h"
#include "core/rng.h"

#define DRAW_MAX_CHANNELS 4

typedef struct {
    int W, H;        // image width (columns) and height (rows)
    int channels;    // C: 1 grey (0 also means 1), 3 colour; images are (C, H, W)
    int T;           // glimpses
    int read_n;      // read grid N x N (attention only)
    int write_n;     // write grid N x N (attention only)
    int enc, dec;    // LSTM sizes
    int z;           // latent size per step
    int attention;   // 1: filterbank read/write; 0: whole image
    int peepholes;   // 1: both LSTMs with peephole connections (seq/lstm.h); 0: without
    int classes;     // K >= 2: class-conditional on a label in [0, K); 0: unconditional
} DrawConfig;

#define DRAW_MAX_CLASSES 1000

// The paper's MNIST configuration for a W x H image (T 64, read 2, write 5, 256, z 100).
DrawConfig draw_config_default(int W, int H);
// 0, or -1 with one line naming the bad field.
int draw_config_check(const DrawConfig *c, Error *err);
// Floats read per step (2 C N_r^2 or 2 C W H) and written per step (C N_w^2 or C W H).
int draw_read_size(const DrawConfig *c);
int draw_write_size(const DrawConfig *c);
// C (channels 0 counts as 1) and the floats of one image, C H W.
static inline int draw_channels(const DrawConfig *c) { return c->channels > 0 ? c->channels : 1; }
static inline int draw_image_size(const DrawConfig *c) { return draw_channels(c) * c->W * c->H; }
// X: the encoder input's first columns that are the same at every step. Without attention
// the read is [x, x_hat_t], and x is data: its product with the encoder's weights is taken
// once per forward, its weight gradient once per backward, and no gradient flows to it, so
// the step products skip its C H W columns (at 28 x 28 with LSTM 256, 784 of the encoder
// input's 1,824). With attention every column of the read moves with the glimpse: 0.
static inline int draw_enc_fixed_cols(const DrawConfig *c) {
    return c->attention ? 0 : draw_image_size(c);
}

typedef struct {
    float *enc_W, *enc_b;                // (4 enc, R + dec + enc), (4 enc)
    float *q_W, *q_b;                    // (2 Z, enc), (2 Z): rows mu then log sigma
    float *dec_W, *dec_b;                // (4 dec, Z + dec), (4 dec)
    float *write_W, *write_b;            // (write size, dec), (write size)
    float *read_attn_W, *read_attn_b;    // (5, dec), (5)   attention only
    float *write_attn_W, *write_attn_b;  // (5, dec), (5)   attention only
    float *enc_peep, *dec_peep;          // (3 enc), (3 dec) peepholes only; NULL without
    float *enc_label_W, *dec_label_W;    // (4 enc, K), (4 dec, K) conditional only: the
                                         // LSTMs' weights of the one-hot label's columns
} DrawParams;

// Registers the parameters in b (call on fresh Blocks for params, grads, Adam moments;
// then block_alloc).
void draw_layout(Block *b, DrawParams *p, const DrawConfig *c);
// Uniform(+-1/sqrt(fan_in)) weights, zero biases except the LSTM forget gates (1);
// attention biases 0 except log sigma^2: the glimpse starts centred, spanning the image
// (delta~ = 1), gamma 1, and sigma half the grid spacing so that the filters overlap;
// peepholes 0 (the model starts as the one without them); the label weights (conditional)
// uniform(+-1/sqrt(fan_in)) of the LSTM input they join, drawn after every other tensor,
// so the rest starts as the unconditional model's.
void draw_init(DrawParams *p, const DrawConfig *c, Rng *rng);

typedef struct {
    int B;  // rows per step allocated
    Block block;
    // Forward, (T, B, ...):
    float *canvas;                        // (HW): the logits c_t
    float *rparams, *rFx, *rFy, *rgamma;  // (5), (N_r W), (N_r H), (1)
    float *enc_xh;                        // (R + dec + enc - X): [r_t, h_dec_{t-1}, h_enc_{t-1}]
                                          // without r_t's first X columns (draw_enc_fixed_cols)
    float *enc_h, *enc_c;                 // (enc)
    float *enc_gates;                     // (4 enc): post-activation gates i, f, g, o; the
                                          // backward overwrites them with their gradients
    float *q;                             // (2 Z): mu, log sigma
    float *eps;                           // (Z)
    float *dec_xh;                        // (Z + dec): [z_t, h_dec_{t-1}]
    float *dec_h, *dec_c, *dec_gates;     // (dec), (dec), (4 dec) as the encoder's
    float *wpatch;                        // (write size)
    float *wparams, *wFx, *wFy, *wgamma;  // (5), (N_w W), (N_w H), (1)
    // Per image of the last forward, (B):
    float *recon, *kl, *logw;  // logw = log p(x, z) - log q(z | x) for importance sampling
    // Backward, (T, B, ...): gradients of every step's layer outputs, kept so that each
    // weight gradient is one GEMM over all T B rows after the backward sweep (the LSTMs'
    // gate gradients are in enc_gates and dec_gates).
    float *dq, *dwpatch, *dwparams, *drparams;  // (2 Z), (write size), (5), (5)
    // No attention or conditional, (B, 4 enc): the encoder's pre-activations from what is
    // the same at every step (the bias, x without attention, the label's column), taken
    // once per forward; the encoder's gate gradients summed over the steps (x's and the
    // label's weight gradients from them). Empty with attention and no label.
    float *enc_pre_x, *denc_gates_sum;
    // Conditional, (B, 4 dec): the decoder's bias plus its label column; the decoder's gate
    // gradients summed over the steps. Empty without a label.
    float *dec_pre_y, *ddec_gates_sum;
    // Conditional, (B): each image's class in [0, K), the caller's to fill before
    // draw_forward and draw_generate (as eps); NULL without a label.
    int *labels;
    // Scratch, (B, ...): x_hat of one step (the forward's and, recomputed from the canvas,
    // the backward's), and the backward's.
    float *xhat, *dcan, *dxhat, *denc_xh, *ddec_xh, *dFx, *dFy, *dgamma, *dh_enc[2],
        *dc_enc[2], *dh_dec[2], *dc_dec[2], *fb_scratch;
    // The LSTM weights packed for the step products (core/gemm_packed.h), each packed by the
    // pass that uses it, from the parameters it was given: W^T for the forward's gates
    // (draw_forward, draw_generate), W for the backward's input gradients (draw_backward);
    // the encoder's without its first X columns (draw_enc_fixed_cols).
    PackedMatrix enc_Wt, dec_Wt, enc_W, dec_W;
} DrawActs;

// 0 when batches of up to B fit what the kernels index: every parameter and activation
// tensor holds at most DIMS_MAX floats (core/dims.h); else -1 with one line naming the flags
// (--T, --batch, --hidden, --z, --read, --write) and the image size whose product passes.
// Call after draw_config_check, before draw_layout's blocks or draw_acts_alloc are allocated.
int draw_check_sizes(const DrawConfig *c, int B, Error *err);
// Registers the activation tensors for batches of up to B in k (emptied; not allocated)
// and sets a->B: draw_acts_alloc's layout, which tests read to check draw_check_sizes.
void draw_acts_layout(Block *k, DrawActs *a, const DrawConfig *c, int B);
void draw_acts_alloc(DrawActs *a, const DrawConfig *c, int B);
void draw_acts_free(DrawActs *a);
// Pointer to step t's slice of a (T, B, dim) activation.
static inline float *draw_at(const DrawActs *a, float *base, int t, int dim) {
    return base + (size_t)t * a->B * dim;
}

// Fills acts.eps (T, B, Z) with N(0, 1) noise, step after step.
void draw_fill_noise(DrawActs *a, const DrawConfig *c, int B, Rng *rng);

// Runs T steps on x (B, C H W) with acts.eps as the noise; fills acts (recon, kl, logw per
// image included). Returns the mean bound over the B images; *recon, *kl (may be NULL)
// get the mean parts. B <= a->B.
double draw_forward(DrawActs *a, const DrawParams *p, const DrawConfig *c, const float *x, int B,
                    double *recon, double *kl);
// Accumulates into g the gradient of the mean bound of the last draw_forward on x.
void draw_backward(DrawParams *g, DrawActs *a, const DrawParams *p, const DrawConfig *c,
                   const float *x, int B);

// Data parallelism: a batch of B images split over n workers (in order; the first B % n
// take one image more), each with its own activations and gradients, run on n threads (the
// caller gives each one GEMM thread, gemm_set_threads). The noise is one (T, B, Z) array for
// the whole batch (draw_noise_fill), whose rows each worker copies in, so the images, their
// noise and the mean bound do not depend on n; the gradient is the share-weighted sum of the
// workers' (rounding aside, the single-batch gradient).
#define DRAW_MAX_WORKERS 64  // n <= DRAW_MAX_WORKERS
typedef struct {
    DrawActs acts;  // for ceil(B / n) images
    Block grads;
    DrawParams g;
} DrawWorker;

// Workers for a batch of B on `threads` threads: one per thread, at most B and at most
// DRAW_MAX_WORKERS.
int draw_worker_count(int threads, int B);
void draw_workers_alloc(DrawWorker *w, int n, const DrawConfig *c, int B);
void draw_workers_free(DrawWorker *w, int n);
// eps (T, B, Z), contiguous: the same normals draw_fill_noise draws for B images.
void draw_noise_fill(float *eps, const DrawConfig *c, int B, Rng *rng);
// Figures of each image of a batch, for draw_forward_parallel to fill: logw (B) its
// log-weight log p(x, z) - log q(z | x), recon and kl (B) the two parts of its bound; any
// may be NULL.
typedef struct {
    double *logw, *recon, *kl;
} DrawPerImage;

// draw_forward of x (B, C H W) with noise eps and labels (B; NULL when unconditional) over n workers (B <= n ceil(B_alloc / n)); returns
// the mean bound, *recon and *kl (may be NULL) the mean parts and per_image (may be NULL)
// each image's figures. With grads non-NULL, also the backward: grads (a draw_layout block)
// is overwritten with the gradient of the mean bound over the B images.
double draw_forward_parallel(DrawWorker *w, int n, const DrawParams *p, const DrawConfig *c,
                             const float *x, const float *eps, const int *labels, int B,
                             Block *grads,
                             double *recon, double *kl, const DrawPerImage *per_image);

// Samples B images from the prior: z_t ~ N(0, I) drawn from rng, decoder and write only;
// a conditional model draws the classes in acts.labels.
// Afterwards acts.canvas (T, B, HW) holds the logits c_1..c_T and acts.wparams (T, B, 5)
// the write windows (attention only).
void draw_generate(DrawActs *a, const DrawParams *p, const DrawConfig *c, int B, Rng *rng);

// draw_generate with z_t ~ N(0, temperature^2 I): the same normal draws scaled by
// temperature (>= 0; 1 is draw_generate, bit for bit; 0 the prior's mean at every step).
// Not the paper's sampling, which is temperature 1: a stated protocol beside it (draw eval
// --quality-temperature).
void draw_generate_tempered(DrawActs *a, const DrawParams *p, const DrawConfig *c, int B, Rng *rng,
                            double temperature);

#endif
