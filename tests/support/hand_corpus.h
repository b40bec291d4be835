// hand_corpus.h: the small caption corpus whose BLEU, ROUGE-L and per-image scores the
// metric tests work out by hand (tests/test_text.c uses its first two images,
// tests/test_metrics_per_image.c all three):
//   image 0: candidate "the cat sat on the mat" (6 words)
//            references "the cat is on the mat" (6), "there is a cat on the mat" (7)
//   image 1: candidate "a dog a dog" (4 words)
//            references "a dog runs very fast" (5), "the dog is running fast now" (6)
//   image 2: candidate "a b c d" (4 words)
//            references "a b c" (3), "a b c d e" (5)
#ifndef TESTS_SUPPORT_HAND_CORPUS_H
#define TESTS_SUPPORT_HAND_CORPUS_H

#include "seq/metrics.h"
#include "seq/tokenizer.h"

enum { HAND_CORPUS_IMAGES = 3 };

typedef struct {
    Tokens cand[HAND_CORPUS_IMAGES], refs[HAND_CORPUS_IMAGES][2];
    CaptionPair items[HAND_CORPUS_IMAGES];  // what the metrics take
} HandCorpus;

// Tokenises s (which must be valid) with the default cap; aborts otherwise.
Tokens tokens_of(const char *s);

void hand_corpus(HandCorpus *h);
void hand_corpus_free(HandCorpus *h);

#endif
