// bow.h: the bag-of-words features of the classical baseline, a logistic regression on
// which words a sentence holds (`text classify train --pool bow`; models/textclass.h runs
// it: no embedding, no LSTM, the features straight into the dense layer).
//
//   x[b][w] = 1 when word id w >= 1 occurs in row b, else 0   (id 0, the padding, never;
//                                                             a repeated word counts once)
//   x[b][V + k] = 1 when a pair of adjacent words (a, c), both not padding, hashes to
//                 bucket k of K (bow_bigram_bucket); K = 0: words only
//   logit   = out.W x + out.b                                 (seq/linear.h; a sigmoid for
//                                                             two classes, else a softmax)
// The features have no gradient (word ids are not learned).
#ifndef MODELS_BOW_H
#define MODELS_BOW_H

// x (B, V + K) overwritten; ids (B, T) word ids in [0, V); K bigram buckets (0: none).
void bow_features(float *x, const int *ids, int B, int T, int V, int K);

// The bucket in [0, K) of the word pair (a, c): a fixed 64-bit mix of both ids, so a
// model's features do not depend on the machine. K >= 1.
int bow_bigram_bucket(int a, int c, int K);

// The word shading of `text classify show` for a bag of words: alpha (B, T) gets, at each
// word of row b, its share of the row's sum of |W[k][id]| over the outputs k (a repeated
// word shares its weight between its places); 0 at the padding, and 1/n at each of n words
// whose weights are all 0; bigram weights are not shown. W (O, D), D >= V its row length.
void bow_word_weights(float *alpha, const int *ids, const float *W, int B, int T, int O, int V, int D);

#endif
