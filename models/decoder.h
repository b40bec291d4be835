// decoder.h: the attention LSTM decoder every model that writes a sequence over annotations
// shares (DESIGN.md, models/): the captioner (models/sat.h) over an image grid or a feature
// cache, and the translator over a text encoder's states with their lengths. It knows
// annotations (B, L, D) and, where rows are padded, their lengths (B); never what made them.
//
// Model, for B rows (models/sat.h tells it with the captioner's training terms):
//   h_0 = tanh(W_h0 mean(a) + b), c_0 = tanh(W_c0 mean(a) + b)    mean over a row's length
//   step t, input y_t:
//     query previous (Xu et al. 2015, Bahdanau et al. 2015): attend with h_t, feed z_t;
//     query current (Luong et al. 2015, Lu et al. 2017): feed z_{t-1}, attend with h_{t+1}
//     alpha_t, ctx_t = attention(query, keys a, lengths)          (seq/attention.h)
//     beta_t = sigmoid(W_beta q + b_beta) (1 or D), z_t = beta_t * ctx_t
//     h_{t+1}, c_{t+1} = LSTM([E y_t, z], h_t, c_t)
//     logits_t = L_o (E y_t + L_h h_{t+1} + L_z z_t) + b_o          (deep output)
//
// The decoder owns its parameter views (DecoderParams: a model registers them in its own
// Block beside its encoder's, so zeroing, the optimiser and saving stay one loop each). The
// tensor names ("init.W_h", "embed", "lstm.W", "attn.*", "gate.*", "out.*") and their order
// are the captioner's checkpoints'.
//
// Where the code is: the parameters, the initial state, the gate and the decoding step (one
// step for n rows, what greedy and beam search call) live here; the captioner's training
// steps over rows packed by caption length are still in models/sat.c, on these functions
// (issue 58: moving them here, on DecoderParams and a decoder activation struct, so that a
// translator trains on them too, is the next step).
#ifndef MODELS_DECODER_H
#define MODELS_DECODER_H

#include "core/block.h"
#include "core/rng.h"
#include "seq/attention.h"

// Which LSTM state queries the attention of step t.
typedef enum { DECODER_QUERY_PREVIOUS = 0, DECODER_QUERY_CURRENT = 1 } DecoderQuery;

typedef struct {
    int L, D;             // annotation positions (at most, with lengths) and size
    int E, H, V;          // embedding, LSTM hidden, vocabulary
    int nb;               // gate size: 1 (scalar) or D (vector)
    AttnConfig attn;      // its D, H are the decoder's D, H
    DecoderQuery query;
} DecoderConfig;

typedef struct {
    float *W_h0, *b_h0, *W_c0, *b_c0;  // (H, D), (H)
    float *embed;                      // (V, E)
    float *lstm_W, *lstm_b;            // (4H, E + D + H), (4H)
    AttnParams attn;
    float *W_beta, *b_beta;            // (nb, H), (nb)
    float *L_h, *L_z;                  // (E, H), (E, D)
    float *L_o, *b_o;                  // (V, E), (V)
} DecoderParams;

// Registers the decoder's tensors in b (after whatever the model registered before them).
void decoder_params_layout(Block *b, DecoderParams *p, const DecoderConfig *c);
// Initialises them from rng (after block_alloc): uniform in +-1/sqrt(fan in), the embedding
// in +-0.1, the forget gate's bias 1, other biases 0; the draws in the layout's order.
void decoder_params_init(DecoderParams *p, const DecoderConfig *c, Rng *rng);

// out (B, D) = the mean over each row's positions of annot (B, L, D): the first lengths[b]
// (lengths (B), each in [1, L]) or, with lengths NULL, all L.
void decoder_mean_annotations(float *out, const float *annot, const int *lengths, int B, int L,
                              int D);
// h0 (B, H), c0 (B, H) = tanh of linear maps of the mean annotations mean_a (B, D)
void decoder_initial_state(float *h0, float *c0, const float *mean_a, const DecoderParams *p,
                           int B, int D, int H);
// beta (B, nb) = sigmoid(h (B, H) W_beta^T + b); z (B, D) = beta * ctx (B, D)
void decoder_gate_forward(float *beta, float *z, const float *h, const float *ctx,
                          const DecoderParams *p, int B, int H, int D, int nb);

// One decoding step for n rows (decoding: greedy or beam search; models/sat_decode.c): what
// it reads and the buffers it writes, each for at least n rows.
typedef struct {
    const float *keys, *prep;  // (n, L, D) the rows' annotations, (n, prep) their attention prep
    const int *lengths;        // (n) each row's annotation positions, or NULL (all L)
    const float *h, *c;        // (n, H) the rows' states h_t, c_t
    const float *zp;           // (n, D) query current: each row's z_{t-1} (zeros at t = 0)
    float *hn, *cn;            // (n, H) out: h_{t+1}, c_{t+1}
    float *ctx, *alpha, *cache;     // (n, D), (n, L) out: step t's attention; its step cache
    float *beta, *z;                // (n, nb), (n, D) out: the gate and z_t
    float *emb, *xin, *xh, *gates;  // (n, E), (n, E + D), (n, E + D + H), (n, 4H) scratch
    float *o, *logits;              // (n, E) the deep output, (n, V) out: the word logits
} DecoderStep;

// Step t for rows 0..n-1 reading tokens y_t (n): attention (before the LSTM with query
// previous, after it with query current), gate, LSTM and deep output (no dropout), into s's
// outputs. The same operations in the same order as the captioner's training forward.
void decoder_step_forward(const DecoderStep *s, const int *token, const DecoderParams *p,
                          const DecoderConfig *c, int t, int n);

#endif
