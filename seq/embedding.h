// embedding.h: token embedding lookup.
#ifndef SEQ_EMBEDDING_H
#define SEQ_EMBEDDING_H

// out (B, C) = table[tokens[b]]; tokens (B) in [0, V); table (V, C).
void embedding_forward(float *out, const int *tokens, const float *table, int B, int C);
// Accumulates dtable (V, C) rows from dout (B, C).
void embedding_backward(float *dtable, const float *dout, const int *tokens, int B, int C);

#endif
