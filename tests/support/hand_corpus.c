// hand_corpus.c: see hand_corpus.h.
#include "tests/support/hand_corpus.h"

#include "core/check.h"
#include "core/error.h"

Tokens tokens_of(const char *s) {
    Tokens t;
    Error err;
    CHECK(tokenize(&t, s, TOKENIZE_MAX_TOKENS, &err) == 0, "%s", err.msg);
    return t;
}

void hand_corpus(HandCorpus *h) {
    static const char *const text[HAND_CORPUS_IMAGES][3] = {
        {"the cat sat on the mat", "the cat is on the mat", "there is a cat on the mat"},
        {"a dog a dog", "a dog runs very fast", "the dog is running fast now"},
        {"a b c d", "a b c", "a b c d e"},
    };
    for (int i = 0; i < HAND_CORPUS_IMAGES; i++) {
        h->cand[i] = tokens_of(text[i][0]);
        h->refs[i][0] = tokens_of(text[i][1]);
        h->refs[i][1] = tokens_of(text[i][2]);
        h->items[i] = (CaptionPair){&h->cand[i], h->refs[i], 2};
    }
}

void hand_corpus_free(HandCorpus *h) {
    for (int i = 0; i < HAND_CORPUS_IMAGES; i++) {
        tokens_free(&h->cand[i]);
        tokens_free(&h->refs[i][0]);
        tokens_free(&h->refs[i][1]);
    }
}
