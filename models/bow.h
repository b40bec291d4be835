// bow.h: the bag-of-words features of the classical baseline, a logistic regression on
// which words a sentence holds (`text classify train --pool bow`; models/textclass.h runs
// it: no embedding, no LSTM, the features straight into the dense layer).
//
//   x[b][w] = 1 when word id w >= 1 occurs in row b, else 0   (id 0, the padding, never;
//                                                             a repeated word counts once)
//   x[b][V + k] = 1 when a pair of adjacent words (a, c), both not padding, hashes to
//                 bucket k of K (bow_bigram_bucket); K = 0: words only
//   logit   = out.W (x * r) + out.b                           (a sigmoid for two classes,
//                                                             else a softmax); r (D) is 1,
//                                                             or with nb the NB log-count
//                                                             ratios (bow_nb_ratios)
// The features have no gradient (word ids are not learned), and r is fixed before training.
// The model runs on each row's active features (bow_active, at most 2 T of them):
// bow_sparse_forward / bow_sparse_backward; the dense x of bow_features with seq/linear.h is
// their plain reference (tests/test_textclass.c compares the two).
#ifndef MODELS_BOW_H
#define MODELS_BOW_H

// x (B, V + K) overwritten; ids (B, T) word ids in [0, V); K bigram buckets (0: none).
void bow_features(float *x, const int *ids, int B, int T, int V, int K);

// The active features of one row, ascending and distinct: idx (at most 2 T) gets the
// indices k with x[k] = 1 above; returns how many.
int bow_active(int *idx, const int *row, int T, int V, int K);

// logits (B, O) = out_b + sum over the active features k of row b of W[o][k] * r[k];
// idx (B, stride) with n (B) of them per row; r (D) or NULL (1); W (O, D), out_b (O).
void bow_sparse_forward(float *logits, const int *idx, const int *n, int stride, const float *r,
                        const float *W, const float *out_b, int B, int O, int D);
// Accumulates dW (O, D) and db (O) from dlogits (B, O), as the forward's arguments.
void bow_sparse_backward(float *dW, float *db, const float *dlogits, const int *idx, const int *n,
                         int stride, const float *r, int B, int O, int D);

// Wang & Manning 2012's naive-Bayes log-count ratios (NBSVM; here scaling a logistic
// regression, as Mesnil et al. 2014's NB-LR): over the n training rows (ids (n, T), labels
// (n) 0 or 1), p = alpha + the count of class-1 rows holding feature k, q the same for class
// 0, and r[k] = log((p[k] / |p|_1) / (q[k] / |q|_1)) for each of the D = V + K features
// (the padding's r[0] is 0: it is never active). Two classes only.
void bow_nb_ratios(float *r, const int *ids, const int *labels, int n, int T, int V, int K,
                   double alpha);

// The bucket in [0, K) of the word pair (a, c): a fixed 64-bit mix of both ids, so a
// model's features do not depend on the machine. K >= 1.
int bow_bigram_bucket(int a, int c, int K);

// The word shading of `text classify show` for a bag of words: alpha (B, T) gets, at each
// word of row b, its share of the row's sum of |W[k][id]| over the outputs k (a repeated
// word shares its weight between its places); 0 at the padding, and 1/n at each of n words
// whose weights are all 0; bigram weights are not shown. W (O, D), D >= V its row length.
void bow_word_weights(float *alpha, const int *ids, const float *W, int B, int T, int O, int V, int D);

#endif
