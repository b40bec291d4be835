// translator.h: an encoder-decoder for translation (Bahdanau et al. 2015, Luong et al. 2015)
// on the shared attention decoder (models/decoder.h): a source embedding, a bidirectional
// LSTM over the source with its lengths (seq/lstm_seq.h), and the decoder attending over
// the encoder's states (B, S, 2 He) with those lengths. Teacher-forced loss, forward and
// backward; greedy decoding here, beam search in models/translator_beam.h; the CLI is
// `text translate` (cli/text_translate.h).
//
// Model, for B pairs (source ids (B, S) with lengths, target words (B, max_len)):
//   x = E_src src;  f = LSTM_fwd(x), r = LSTM_rev(x) over each row's length;  a_i = [f_i; r_i]
//   (cfg.forward_only: a_i = f_i, no reverse LSTM: "enc.rev.*" are not in the layout;
//   cfg.reverse_only: a_i = r_i, no forward LSTM, "enc.fwd.*" not in the layout)
//   (cfg.annot_embed: a_i = [f_i; r_i; x_i], or [f_i; x_i]: the token's embedding beside its
//   states, in the attention's keys and its values; no new tensors)
//   the decoder over a (B, S, 2 He) with lengths: h_0, c_0 from the mean state, then
//   Bahdanau: attention = additive, query = previous; Luong global: dot / multiplicative
//   (general) / additive (concat), query = current; local-m / local-p: the local kinds;
//   none (attn kind ATTN_NONE): Sutskever et al. 2014 / Cho et al. 2014's one fixed
//   context, the final states [f_{n-1}; r_0]: the decoder reads L = 1 annotation per row.
//   loss = (1/B) sum_b sum_t CE(logits_t, target_t)        (targets w_1..w_n, <end>)
// Luong's input feeding (dec.input_feeding, query current) is the shared decoder's
// (models/decoder.h): the attentional vector tanh(W_c [z_t; h_{t+1}]) feeds the next step
// and the deep output. Training adds dropout (cfg.dropout, dec.dropout) and label
// smoothing (dec.label_smoothing): translator_forward_train.
//
// Memory: parameters and gradients are two Blocks with one layout ("src.embed", "enc.fwd.*",
// "enc.rev.*", then the decoder's tensors, "feed.W_c" last with input feeding); activations
// one Block (the decoder's for (max_len + 1, B), then the encoder's for (S, B) and, with
// dropout, its masks).
#ifndef MODELS_TRANSLATOR_H
#define MODELS_TRANSLATOR_H

#include "core/block.h"
#include "core/rng.h"
#include "models/decoder.h"

typedef struct {
    int Vs, Es, He;   // source vocabulary, source embedding, encoder hidden (per direction)
    int forward_only; // 1: the encoder is one LSTM reading left to right (annotations D = He),
                      // so a state knows only its token and those before it; 0: both
                      // directions (D = 2 He), Bahdanau et al.'s encoder
    int reverse_only; // 1: the encoder is one LSTM reading right to left (D = He): a state
                      // knows its token and those after it (Sutskever et al. 2014 read the
                      // source reversed); not with forward_only
    int annot_embed;  // 1: each annotation ends with its token's source embedding x_i (as
                      // the LSTM read it, dropout included), D += Es: the attention's score
                      // sees which token a position holds, and its context carries it, besides
                      // the states (which, read one way, know a field only once it has
                      // ended); not with attention none (its one fixed context has no token)
    int S;            // source tokens at most
    int max_len;      // target words at most; steps T = max_len + 1
    // Training: inverted dropout with this probability on the source embeddings and on the
    // encoder's states (the annotations) (Zaremba et al. 2014: the non-recurrent
    // connections; Luong et al. 2015 used 0.2); the decoder's own dec.dropout drops h before
    // the deep output. dec.label_smoothing smooths the training loss.
    float dropout;
    DecoderConfig dec;  // its L = S (1 without attention) and D = 2 He, or He one way only,
                        // + Es with annot_embed (translator_config_finish)
} TranslatorConfig;

// Sets dec.L = S (1 with attention none), dec.D = 2 He (He forward or reverse only; + Es
// with annot_embed), dec.attn.D, dec.attn.H; CHECKs the sizes.
void translator_config_finish(TranslatorConfig *c);

typedef struct {
    float *src_embed;          // (Vs, Es)
    float *fwd_W, *fwd_b;      // (4 He, Es + He), (4 He)
    float *rev_W, *rev_b;
    DecoderParams dec;
} TranslatorParams;

typedef struct {
    TranslatorConfig cfg;
    Block params, grads, acts_block;
    TranslatorParams p, g;
    DecoderActs a;             // the decoder's; a.annot holds the encoder's states
    int B;                     // batch capacity
    // encoder activations: x (S, B, Es), hs_fwd / hs_rev (S, B, He), their caches, the
    // gradients reaching them, dx (S, B, Es), scratch; the batch's source ids time-major
    float *x, *hs_f, *hs_r, *cache_f, *cache_r, *dhs_f, *dhs_r, *dx, *scratch;
    float *xmask, *amask;      // dropout: (S, B, Es), (B, L, D)
    int dropping;              // the last forward was training's with dropout
    int *src_t, *src_len;      // (S, B), (B)
    int Tb, Bb;                // the last forward's steps and rows
} Translator;

void translator_init(Translator *m, const TranslatorConfig *c, int B, Rng *rng);
void translator_free(Translator *m);

// Teacher-forced forward; returns the loss ((summed cross-entropy + the doubly stochastic
// term, when dec.lambda > 0) / B). src (B, S) ids padded to S with src_len (B) in [1, S];
// words (B, max_len) target ids with lens (B) in [0, max_len], in descending order of lens
// (the decoder's rows are packed by step); B <= the capacity.
double translator_forward(Translator *m, const int *src, const int *src_len, const int *words,
                          const int *lens, int B);
// The same pass training: with dropout (cfg.dropout, dec.dropout: masks drawn from rng) and
// the loss smoothed by dec.label_smoothing.
double translator_forward_train(Translator *m, const int *src, const int *src_len,
                                const int *words, const int *lens, int B, Rng *rng);
// Accumulates the last forward's loss's gradient into m->g (every parameter: encoder and
// decoder).
void translator_backward(Translator *m);

// Decoding's start for B rows (B <= the capacity; src, src_len as for translator_forward):
// the annotations a.annot (B, L, D), h_0, c_0 (a.hs, a.cs rows 0..B-1), the attention's
// preparation a.prep and the rows' lengths m->src_len; no dropout. Overwrites the last
// forward's activations. Beam search (models/translator_beam.h) starts here.
void translator_encode(Translator *m, const int *src, const int *src_len, int B);

// Greedy decoding of B rows (B <= the capacity) through the decoder's step
// (decoder_step_forward, the one beam search uses): src (B, S) with src_len (B) as for
// translator_forward; each step feeds the previous step's most likely word (<start> first;
// the specials other than <end> never chosen) for up to max_len words and <end>. out
// (B, max_len) receives each row's words up to its <end>, out_len (B) their count; alpha
// (max_len + 1, B, dec.L) each step's attention weights (step t's produce word t), or NULL.
// Overwrites the activations of the last forward.
void translator_greedy(Translator *m, const int *src, const int *src_len, int B, int *out,
                       int *out_len, float *alpha);

#endif
