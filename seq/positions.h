// positions.h: the Transformer's position signal, added to the (scaled) token embeddings.
//
//   sinusoidal (Vaswani et al. 2017)  PE(pos, 2i) = sin(pos / 10000^(2i / d)),
//                                     PE(pos, 2i + 1) = cos(pos / 10000^(2i / d))
//   learned                           a parameter table (max_len, d), one row per position
// out (B, T, d) = scale * x + table[t] for t < T; scale is the caller's (sqrt(d) when x is an
// embedding, as the paper does, or 1). The table covers max_len positions: a longer sequence
// is refused by positions_check_length, never indexed past its end.
#ifndef SEQ_POSITIONS_H
#define SEQ_POSITIONS_H

#include "core/error.h"

typedef enum { POS_SINUSOIDAL, POS_LEARNED } PosKind;

// "sinusoidal", "learned". 0, or -1 for an unknown name.
int pos_kind_parse(const char *name, PosKind *kind);
const char *pos_kind_name(PosKind kind);

// 0 when d and max_len suit the kind (sinusoidal: an even d >= 2; both: d >= 1, max_len >= 1),
// else -1 with a one-line reason in err.
int positions_check(PosKind kind, int d, int max_len, Error *err);
// 0 when a sequence of T positions fits the table of max_len, else -1 naming both.
int positions_check_length(int T, int max_len, Error *err);

// table (max_len, d) = the sinusoids above (computed in double). d even.
void positions_sinusoid_fill(float *table, int max_len, int d);

// out (B, T, d) = scale * x (B, T, d) + table (>= T, d) row t. out may alias x.
void positions_add_forward(float *out, const float *x, const float *table, float scale, int B,
                           int T, int d);
// Accumulates dx (B, T, d) += scale * dout, or not when dx is NULL, and dtable (>= T, d) += the
// sum over the batch of dout, or not when dtable is NULL (sinusoidal: no parameter).
void positions_add_backward(float *dx, float *dtable, const float *dout, float scale, int B, int T,
                            int d);

#endif
