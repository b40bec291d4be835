// sat_lstm_decode.h: captions from the captioner's LSTM decoder (models/sat_lstm.h), greedy
// or by beam search (seq/beam.h, through models/sat_beam.h), with the attention of every
// emitted word: its SatDecoderOps decode and check_decode_sizes (models/sat_decode.h calls
// them through the model's ops).
#ifndef MODELS_SAT_LSTM_DECODE_H
#define MODELS_SAT_LSTM_DECODE_H

#include "models/sat.h"
#include "models/sat_lstm.h"

// sat_decode of a model whose decoder is the LSTM: tokens (B, max_len) word ids, lens (B),
// alphas (B, max_len, L) the attention of each emitted word (or NULL), for beam width beam
// (1 = greedy). Score normalised by length^length_alpha. With gemm_threads() = n > 1 the
// images are split into n contiguous shares, each encoded and searched on a thread of its
// own with single-threaded products (gemm_set_threads(1) meanwhile; n restored after).
void sat_lstm_decode(SatModel *m, int *tokens, int *lens, float *alphas, const float *images,
                     int B, int beam, float length_alpha);

// sat_check_decode_sizes of an LSTM configuration: 0 when decoding batches of up to B images
// at beam width beam fits what the kernels index: every buffer of the decoding context (R =
// B beam rows: the rows' keys (R, L, D), their attention history (max_len + 1, R, L), their
// word scores (R, V), ...) and of the beam search holds at most DIMS_MAX floats
// (core/dims.h); else -1 with one line naming --batch, beam_flag (e.g. "--beam",
// "--val-beam") and the model's sizes.
int sat_lstm_check_decode_sizes(const SatConfig *c, int B, int beam, const char *beam_flag,
                                Error *err);

// The decoding context sat_lstm_decode passes to beam_search (exposed for tests): the state
// of every row, and per-row attention weights of every step.
typedef struct {
    SatModel *m;
    int B, R, t;                 // images, row capacity (B * beam), steps taken
    float *annot, *prep;         // per image (B, L, D), (B, prep)
    float *h, *c, *h2, *c2;      // (R, H): the last call's rows, gathered parents
    float *zp, *zp2;             // (R, D): query current: the last call's z, gathered
    float *hn, *cn;              // (R, H): this call's new states
    float *ctx, *alpha, *cache, *beta, *z, *emb, *xin, *xh, *gates, *o, *logits;
    float *alpha_hist;           // (max_len, R, L)
    int *row_image, *row_image2; // (R)
    PackedMatrix lstm_Wt;        // the decoder LSTM's weights, packed once for every step
                                 // (unallocated when they are lent: step_Wt)
    const PackedMatrix *step_Wt; // what the steps multiply by: &lstm_Wt, or a pack lent by
                                 // the caller (the shares of one sat_lstm_decode share one)
    float *mem;
    int *ints;
} SatLstmDecodeCtx;

void sat_lstm_decode_ctx_init(SatLstmDecodeCtx *d, SatModel *m, const float *images, int B,
                              int beam);
void sat_lstm_decode_ctx_free(SatLstmDecodeCtx *d);
// BeamStepFn over SatLstmDecodeCtx.
void sat_lstm_beam_step(void *ctx, int n, const int *parent, const int *token, float *logprobs);

#endif
