// textclass.h: the sentence classifier of `text classify`: word ids -> embedding -> LSTM
// (one direction or both) -> a pooling of its states -> one dense layer -> sigmoid (two
// classes) or softmax (any number).
//
//   x_t   = E[id_t]                                   E (vocab, embed); id 0 is the padding
//   h_t   = LSTM(x_t * m_x, h_{t-1} * m_h)            seq/lstm_seq.h; masks m_x, m_h drawn
//                                                     once per sentence in training (Keras's
//                                                     dropout, recurrent_dropout), one per gate
//                                                     as Keras's implementation 1 (which
//                                                     tf.keras forces with recurrent_dropout;
//                                                     lstm_seq_forward_gated), none in
//                                                     evaluation. Bidirectional: a second LSTM
//                                                     from the last word back, h_t = [fwd, bwd]
//   c     = pool(h_1..h_T)                            (B, D), D = hidden or 2 hidden
//   logit = out.W c + out.b                           1 output (binary) or `classes`
//   loss  = mean binary cross-entropy of sigmoid(logit), or mean cross-entropy of the
//           softmax; plus embed_l2 * sum(E^2) (Keras's embeddings_regularizer=l2(embed_l2),
//           added to the batch's loss, every row of E, every batch)
// Poolings (TextPool):
//   keras       the attention demo's: e_t = tanh(h_t . w + b_t), one bias per step,
//               alpha = softmax_t(e), c = sum_t alpha_t h_t (seq/pooling.h)
//   final-dot   the PyTorch tutorial's: the final states (forward at the last word, backward
//               at the first; concatenated per row) as the query of a dot-product attention
//               over the states (seq/attention.h ATTN_DOT)
//   query       any seq/attention.h kernel (attn_kind) with a learned query q (D)
//   last        the final states, as the query above (the demo's baseline)
//   mean        the mean of the states
//   bow         no embedding and no LSTM: the classical baseline, a logistic regression on
//               the bag of words (models/bow.h: x (vocab) is 1 for each word the sentence
//               holds, and with bigrams > 0 a hashed bucket for each pair of adjacent words),
//               logit = out.W (x * r) + out.b, D = vocab + bigrams, r 1 or with nb = 1 the
//               naive-Bayes log-count ratios of the training rows (text_bow_fit_nb; the
//               fixed tensor bow.nb, no gradient); embed_l2 is then the L2 penalty on out.W; embed, hidden, bidirectional, dropout and masked play no part,
//               and alpha shades each word by its share of |out.W| (bow_word_weights)
// word_scores = 1 (keras, query and mean poolings): each state the pooling reads gets one
// more column, a learned score of its word, s_t = [h_t, v[id_t]] with v (vocab), so D
// grows by 1; the attention can weigh, and the dense layer read, a per-word sentiment score
// beside the LSTM's states. v starts at 0, or with nb = 1 at the naive-Bayes log-count
// ratios of the training rows' words (text_fit_word_scores; Wang & Manning 2012's r), then
// learns; embed_l2 covers it as one more column of E. With bigrams K > 0 as well, v has
// vocab + K entries and a step whose word and the next are both words (not the padding)
// adds the score of their pair's bucket (bow_bigram_bucket, as the bag of words hashes it):
// s_t = [h_t, v[id_t] + v[vocab + bucket(id_t, id_t+1)]]; with nb those start at the
// pairs' naive-Bayes ratios too (the bow pooling's features, words and bigrams).
// masked = 1: sentence lengths mask the padding everywhere (the LSTM's padding steps leave
// its state alone, the pooling ignores them); masked = 0 is the demo's: post-padded rows run
// through the padding's embedding (E[0], learned like any row) and every step is pooled.
//
// Initialisation as Keras's defaults: E uniform in +-0.05; the LSTM's input columns Glorot
// uniform, its recurrent columns orthogonal (per direction, the (4H, H) block has
// orthonormal columns), biases 0 but the forget gate's 1 (unit_forget_bias); the keras
// pooling's w normal with sd 0.05, its b 0; out.W Glorot uniform, out.b 0; a learned query
// and the seq/attention kernels as attn_params_init.
//
// Memory: one Block of parameters (TextParams views), one TextActs Block sized for at most
// B rows; forward and backward allocate nothing. Single-threaded (GEMMs as core/gemm.h).
#ifndef MODELS_TEXTCLASS_H
#define MODELS_TEXTCLASS_H

#include "core/block.h"
#include "core/error.h"
#include "core/rng.h"
#include "seq/attention.h"
#include "seq/lstm_seq.h"

typedef enum {
    TEXT_POOL_KERAS = 0,
    TEXT_POOL_FINAL_DOT = 1,
    TEXT_POOL_QUERY = 2,
    TEXT_POOL_LAST = 3,
    TEXT_POOL_MEAN = 4,
    TEXT_POOL_BOW = 5,
} TextPool;

// "keras", "final-dot", "query", "last", "mean", "bow"; parse returns 0 or -1.
const char *text_pool_name(TextPool p);
int text_pool_parse(const char *name, TextPool *p);

typedef struct {
    int vocab;           // embedding rows: the tokenizer's words + 1 (row 0: padding)
    int T;               // padded sentence length (the demo: 32)
    int embed;           // embedding size (32)
    int hidden;          // LSTM units per direction (100)
    int bidirectional;   // 0: forward only (the demo)
    TextPool pool;
    AttnKind attn_kind;  // pool query only: the kernel (not local-*)
    int attn_size;       // pool query only: A of additive / multi-head (0: D)
    int heads;           // pool query, multi-head only
    int masked;          // 1: lengths mask the padding; 0: the demo's (nothing masked)
    int classes;         // >= 2
    float dropout;       // LSTM input dropout (0.3)
    float rec_dropout;   // LSTM recurrent dropout (0.2)
    float embed_l2;      // L2 penalty on E (1e-3)
    int bigrams;         // pool bow or word_scores: hash buckets of adjacent word pairs (0: words only)
    int nb;              // two classes only: pool bow, 1 scales the features by bow.nb; with
                         // word_scores, 1 starts the scores at the naive-Bayes ratios
    int word_scores;     // keras, query, mean: 1 appends each word's learned score to its state
    LstmGateAct gate_act;  // the LSTM's gates i, f, o: sigmoid (default) or Keras <= 2.2's hard_sigmoid
} TextConfig;

// The demo: vocab given, T 32, embed 32, hidden 100, forward, keras pooling, unmasked,
// 2 classes, dropout 0.3 / 0.2, embed_l2 1e-3.
TextConfig text_config_default(int vocab);
int text_config_check(const TextConfig *c, Error *err);
// D: the pooled state's size (hidden or 2 hidden, + 1 with word scores; bow: vocab + bigrams); outputs: 1 (two classes) or classes.
int text_state_size(const TextConfig *c);
int text_outputs(const TextConfig *c);
// word_scores: the scores' count, vocab + bigrams (words, then the pairs' buckets).
int text_word_score_count(const TextConfig *c);
// The state's last column at step t of a row of ids (T): v[row[t]], plus with bigrams the
// score of the pair (row[t], row[t + 1]) when both are words.
float text_word_score_at(const float *v, const TextConfig *c, const int *row, int t);

typedef struct {
    float *emb;              // (vocab, embed)
    float *lstm_W, *lstm_b;  // (4 hidden, embed + hidden), (4 hidden)
    float *rev_W, *rev_b;    // the backward direction's, bidirectional only
    float *att_w, *att_b;    // keras pooling: (D), (T)
    float *query;            // query pooling: (D)
    AttnParams attn;         // query pooling (its kernel's), final-dot (none)
    float *out_W, *out_b;    // (outputs, D), (outputs)
    float *nb;               // bow with nb: (D) the fixed feature scales (models/bow.h)
    float *word_score;       // word_scores: (vocab + bigrams) each word's (and pair bucket's) score
} TextParams;

// bow with nb: sets p->nb from the n training rows (ids (n, T), labels (n) 0 or 1), as
// bow_nb_ratios with alpha 1 (Wang & Manning's); call after text_init, before training.
void text_bow_fit_nb(TextParams *p, const TextConfig *c, const int *ids, const int *labels, int n);
// word_scores with nb: sets p->word_score to the naive-Bayes log-count ratios of the words
// (and with bigrams the pair buckets) of the n training rows (bow_nb_ratios, alpha 1); call
// after text_init, before training.
void text_fit_word_scores(TextParams *p, const TextConfig *c, const int *ids, const int *labels,
                          int n);

void text_layout(Block *b, TextParams *p, const TextConfig *c);
void text_init(TextParams *p, const TextConfig *c, Rng *rng);

typedef struct {
    Block block;
    int B;                  // rows allocated for
    int *lengths;           // (B) of the last forward
    unsigned char *mask;    // (B, T) 1 for a word (attention kernels' mask), when masked
    float *x;               // (T, B, embed)
    float *hs, *rhs;        // (T, B, hidden) each direction's states
    float *cache, *rcache;  // seq/lstm_seq.h caches
    float *in_mask, *rec_mask, *rin_mask, *rrec_mask;  // (B, 4, embed), (B, 4, hidden) dropout,
                                                       // one mask per gate i, f, g, o
    int dropout_on;         // the last forward drew masks (training)
    int gated;              // the last forward ran lstm_seq_forward_gated (training or hard_sigmoid)
    int *active, *n_active; // bow: (B, 2 T) each row's active features, (B) how many
    float *states;          // (B, T, D)
    float *pooled;          // (B, D)
    float *alpha;           // (B, T) the weight of each word in the pooling (mean: 1/len,
                            // last: 1 at the last word; bidirectional last: 0.5 at each end)
    float *score;           // (B, T) keras pooling's e_t
    float *query;           // (B, D) query of final-dot and query poolings
    float *prep, *acache;   // seq/attention.h prep and step cache
    float *logits, *probs;  // (B, outputs); probs: sigmoid or softmax
    float *losses;          // (B)
    float *targets;         // (B) binary targets as floats
    // backward
    float *dlogits, *dpooled, *dstates, *dhs, *drhs, *dx, *dquery, *dprep, *scratch;
} TextActs;

void text_acts_alloc(TextActs *a, const TextConfig *c, int B);
void text_acts_free(TextActs *a);

// Forward of B sentences: ids (B, T) padded word ids in [0, vocab), lengths (B) the words
// of each (used when masked; 0..T), labels (B) class indices or NULL (no loss: predict).
// rng non-NULL draws the dropout masks (training); NULL evaluates without dropout.
// Returns the mean loss plus the L2 penalty (0 without labels); correct (may be NULL) gets
// how many rows the most probable class gets right. Probabilities stay in a->probs.
double text_forward(TextActs *a, const TextParams *p, const TextConfig *c, const int *ids,
                    const int *lengths, const int *labels, int B, Rng *rng, int *correct);
// Accumulates into g the gradient of the last forward's loss (same ids, labels, B).
void text_backward(TextParams *g, TextActs *a, const TextParams *p, const TextConfig *c,
                   const int *ids, const int *labels, int B);
// Keras's Adam puts its epsilon on the uncorrected sqrt(v) ("epsilon hat": p -= lr
// sqrt(1 - b2^t) / (1 - b1^t) m / (sqrt(v) + eps)); core/adam.h puts it on sqrt(v_hat).
// The two agree when core/adam's epsilon at step t (from 1) is eps / sqrt(1 - beta2^t).
float text_keras_adam_eps(float eps, float beta2, long step);

// The most probable class of row b of the last forward, and its probability. Two classes:
// 1 when the probability is above 0.5, as Keras's binary accuracy (0.5 itself is class 0).
int text_predicted(const TextActs *a, const TextConfig *c, int b, float *prob);

#endif
