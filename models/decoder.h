// decoder.h: the attention LSTM decoder every model that writes a sequence over annotations
// shares (DESIGN.md, models/): the captioner (models/sat.h) over an image grid or a feature
// cache, and the translator (models/translator.h) over a text encoder's states with their
// lengths. It knows annotations (B, L, D) and, where rows are padded, their lengths (B);
// never what made them.
//
// Model, for B rows (models/sat_lstm.h tells it with the captioner's training terms):
//   h_0 = tanh(W_h0 mean(a) + b), c_0 = tanh(W_c0 mean(a) + b)    mean over a row's length
//   step t, input y_t:
//     query previous (Xu et al. 2015, Bahdanau et al. 2015): attend with h_t, feed z_t;
//     query current (Luong et al. 2015, Lu et al. 2017): feed z_{t-1}, attend with h_{t+1}
//     alpha_t, ctx_t = attention(query, keys a, lengths)          (seq/attention.h)
//     beta_t = sigmoid(W_beta q + b_beta) (1 or D), z_t = beta_t * ctx_t
//     h_{t+1}, c_{t+1} = LSTM([E y_t, z], h_t, c_t)
//     logits_t = L_o (E y_t + L_h h_{t+1} + L_z z_t) + b_o          (deep output)
//   input feeding (query current only; Luong et al. 2015, eq. 5 and section 3.3): the
//   attentional vector zf_t = tanh(W_c [z_t; h_{t+1}]) (D, no bias) takes z_t's place in
//   the next step's LSTM input and in the deep output's L_z term (where Luong's output
//   softmax(W_s h~_t) reads it); the captioner never sets it.
//
// The decoder owns its parameter views (DecoderParams: a model registers them in its own
// Block beside its encoder's, so zeroing, the optimiser and saving stay one loop each). The
// tensor names ("init.W_h", "embed", "lstm.W", "attn.*", "gate.*", "out.*") and their order
// are the captioner's checkpoints'.
//
// What lives here: the parameters, the initial state, the gate, the decoding step (one step
// for n rows, what greedy and beam search call) and a training pass over rows packed by
// target length (Decoder: forward steps, output, backward). The model around it
// (models/sat_lstm.c) encodes, packs its rows, draws its training noise and keeps its own
// loss terms' state (hard attention's baseline).
#ifndef MODELS_DECODER_H
#define MODELS_DECODER_H

#include <stddef.h>

#include "core/block.h"
#include "core/gemm_packed.h"
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
    int input_feeding;    // 1: Luong's input feeding (query current only; W_c, "feed.W_c")
    float dropout;        // training: dropout probability on h before the deep output
    float label_smoothing;  // training: the loss's eps (seq/loss.h crossentropy_smoothed_*)
    float lambda;         // training: doubly stochastic weight (0: none)
    float entropy_weight; // training, hard attention: the entropy bonus's weight
} DecoderConfig;

typedef struct {
    float *W_h0, *b_h0, *W_c0, *b_c0;  // (H, D), (H)
    float *embed;                      // (V, E)
    float *lstm_W, *lstm_b;            // (4H, E + D + H), (4H)
    AttnParams attn;
    float *W_beta, *b_beta;            // (nb, H), (nb)
    float *L_h, *L_z;                  // (E, H), (E, D)
    float *L_o, *b_o;                  // (V, E), (V)
    float *W_c;                        // (D, D + H) with input feeding, else NULL
} DecoderParams;

// Registers the decoder's tensors in b (after whatever the model registered before them).
void decoder_params_layout(Block *b, DecoderParams *p, const DecoderConfig *c);
// Initialises them from rng (after block_alloc): uniform in +-1/sqrt(fan in), the embedding
// in +-0.1, the forget gate's bias 1, other biases 0; the draws in the layout's order
// (W_c's last, so a configuration without input feeding draws what it always drew).
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

// One decoding step for n rows (decoding: greedy or beam search; models/sat_lstm_decode.c):
// what it reads and the buffers it writes, each for at least n rows.
typedef struct {
    const float *keys, *prep;  // (n_src, L, D) the annotations, (n_src, prep) their attention
                               // prep: row r's are source src[r]'s (attn_forward_shared)
    const int *src;            // (n) each row's source, or NULL: row r reads source r (n_src n)
    int n_src;                 // sources in keys and prep (with src)
    const int *lengths;        // (n) each row's annotation positions, or NULL (all L)
    const float *h, *c;        // (n, H) the rows' states h_t, c_t
    const float *zp;           // (n, D) query current: each row's z_{t-1} (zeros at t = 0);
                               // with input feeding its attentional vector zf_{t-1}
    float *hn, *cn;            // (n, H) out: h_{t+1}, c_{t+1}
    float *ctx, *alpha, *cache;     // (n, D), (n, L) out: step t's attention; its step cache
    float *beta, *z;                // (n, nb), (n, D) out: the gate and z_t (with input
                                    // feeding: zf_t, what the next step reads as zp)
    float *feed;                    // (n, D) scratch with input feeding, else unused
    float *emb, *xin, *xh, *gates;  // (n, E), (n, E + D), (n, E + D + H), (n, 4H) scratch
    float *o, *logits;              // (n, E) the deep output, (n, V) out: the word logits
    const PackedMatrix *lstm_Wt;    // the LSTM's weights packed (decoder_pack_lstm), or NULL:
                                    // lstm_forward on p->lstm_W (xin then unused if packed)
} DecoderStep;

// Wt: the decoder LSTM's W (4H, E + D + H) packed as W^T for lstm_forward_packed, for a
// decoding loop that runs many steps with the same weights (core/gemm_packed.h: no copy
// of W per product; each row's gates then do not depend on how many rows a step has).
// Free with packed_free.
void decoder_pack_lstm(PackedMatrix *Wt, const DecoderParams *p, const DecoderConfig *c);

// Step t for rows 0..n-1 reading tokens y_t (n): attention (before the LSTM with query
// previous, after it with query current), gate, LSTM and deep output (no dropout), into s's
// outputs. The same operations in the same order as the captioner's training forward.
void decoder_step_forward(const DecoderStep *s, const int *token, const DecoderParams *p,
                          const DecoderConfig *c, int t, int n);

// Activation views of a training pass (T steps at most, B = batch capacity), laid out by
// decoder_acts_layout in the model's activation Block. The per-step ones, shown (T, B, ...),
// hold room for T B rows but a pass packs them by step: step t computes only its active[t]
// first rows (the rows up to the last one whose target is still going at step t), stored
// from row off[t] on (decoder_srow; models/sat_lstm.h sat_lstm_step_row gives the row of
// (t, b)). hs, cs and dhs hold h_0's B rows, then each step's new states packed the same way
// (B + off[t] for h_{t+1}).
typedef struct {
    int T, B;
    float *annot, *mean_a, *prep;      // (B, L, D), (B, D), attn prep
    float *emb;                        // (T, B, E): o's memory (o starts as emb)
    float *ctx, *alpha, *acache;       // (T, B, D), (T, B, L), (T, cache)
    float *beta, *z;                   // (T, B, nb), (T, B, D)
    float *zf, *dzf;                   // input feeding: (T, B, D) zf_t, (B, D) scratch
    float *xh, *gates;                 // (T, B, E + D + H), (T, B, 4H)
    float *hs, *cs;                    // (T + 1, B, H)
    float *hd, *dmask;                 // (T, B, H) with dropout (else unused: h is read)
    float *o, *probs, *losses;         // (T, B, E), (T, B, V), (T, B)
    // backward scratch
    float *dannot, *dprep, *dhs, *dcs; // (B, L, D), prep, (T + 1, B, H), (2, B, H) by t & 1
    float *dz, *demb, *dx, *dctx;      // (T, B, D), (T, B, E) do_'s memory, (B, E + D), (B, D)
    float *dalpha, *dbeta, *dhd;       // (B, L), (B, nb), (T, B, H) with dropout
    float *do_, *dlogits, *zeros;      // (T, B, E), (T, B, V), (B, D)
    float *lstm_scratch, *reward;      // lstm, (B)
    float *dstoch;                     // (B, L) the regulariser's gradient on alpha
    float smoothing;                   // the label smoothing of the last output forward
    int *in_tok, *target, *sample;     // (T, B) each; target -1 = no loss
    int *steps;                        // (B) steps of each caption (n_b + 1)
    int *active, *off;                 // (T), (T + 1): rows step t computes (1 + the last
                                       // row with steps > t); first row of step t, off[T] all
    Rng *row_rng;                      // (B) each row's stream during a training forward
} DecoderActs;

// A batch's target rows packed by step: each row's steps (its length + 1: the words, then
// <end>), step t's active rows (up to the last row still going at step t) and their first
// row off[t], and each step's input token (<start>, then the previous word; <pad> past a
// row's end) and target (the word, <end>, then -1: no loss). words (B, max_len), lens (B)
// in [0, max_len]. Rows in descending order of length compute no padding row. Returns T,
// the longest row's steps. The captioner and the translator pack their targets so.
int decoder_pack_rows(DecoderActs *a, const int *words, const int *lens, int B, int max_len);

// Registers the activation tensors of passes of up to T steps and B rows in k (emptied
// first; not allocated) and sets a->T, a->B.
void decoder_acts_layout(Block *k, DecoderActs *a, const DecoderConfig *c, int T, int B);
// After block_alloc of that Block: the aliases (a->emb is a->o's memory, a->demb a->do_'s)
// and the integer arrays and row streams, which decoder_acts_release frees.
void decoder_acts_bind(DecoderActs *a);
void decoder_acts_release(DecoderActs *a);

// The per-step activations of a pass are packed by step: step t's rows 0..active[t]-1 are
// rows off[t] .. off[t] + active[t] - 1 (decoder_srow); the states h_t, c_t (and their
// gradients) follow h_0's B rows (decoder_hrow: h_0 at row 0, h_{t+1} at B + off[t]).
static inline size_t decoder_srow(const DecoderActs *a, int t) { return (size_t)a->off[t]; }
static inline size_t decoder_hrow(const DecoderActs *a, int t, int B) {
    return t == 0 ? 0 : (size_t)B + (size_t)a->off[t - 1];
}

// A training pass's view of the decoder that a model embeds beside its encoder: its
// configuration, parameter and gradient views (in the model's Blocks), activations, and the
// batch's steps T and rows B (rows in descending order of target length: step t computes
// its active[t] first rows). The model fills a->annot (B, L, D), a->mean_a and from it h_0,
// c_0 (a->hs, a->cs rows 0..B-1: decoder_initial_state), a->prep (attn_prepare), a->emb
// (every step's input embedding), the packed rows (a->steps, active, off, in_tok, target)
// and, training, a->dmask and a->row_rng.
typedef struct {
    DecoderConfig cfg;
    const DecoderParams *p;
    DecoderParams *g;
    DecoderActs *a;
    int T, B;
    // The LSTM weights packed for the step products (core/gemm_packed.h), or NULL (lstm_W
    // itself): W^T for the forward's gates, W for the backward's input gradients.
    const PackedMatrix *pack_Wt, *pack_Wn;
    int annot_grad;  // 1: the backward accumulates d loss / d annotations into a->dannot
    // (B) each row's annotation positions, each in [1, L] (a text encoder's padded states;
    // a->mean_a then averages over them: decoder_mean_annotations), or NULL (all L): the
    // attention, the doubly stochastic term and the mean's backward see only those.
    const int *lengths;
} Decoder;

// The recurrence over the batch's steps: each step's attention (sample: hard attention's
// sampled location, from each row's a->row_rng[b]), gate and LSTM over its active rows.
void decoder_forward_steps(const Decoder *d, int sample);
// Dropout on h (train) and the deep output over all steps' rows; returns the summed
// cross-entropy of the targets (a->target, -1: none), label-smoothed when training with
// cfg.label_smoothing > 0 (the backward follows the last forward's choice).
double decoder_output_forward(const Decoder *d, int train);
// The doubly stochastic regulariser over each row's own steps, lambda included.
double decoder_doubly_stochastic(const Decoder *d);
// The whole backward of the pass: the output layer's (each row's loss counts 1/B), the
// doubly stochastic term's, and with sample hard attention's REINFORCE (advantage
// a->reward[b] - base) and entropy terms on alpha, every step's attention, gate and LSTM,
// the embeddings', the attention preparation's and the initial state's (which reads
// a->mean_a); accumulates into d->g and, with annot_grad, a->dannot (zeroed here first).
void decoder_backward(const Decoder *d, float base, int sample);

#endif
