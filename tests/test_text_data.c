// test_text_data.c: the splits of `text classify` (cli/text_data.h text_split_mark).
// - Keras's validation_split: the last share validates, nothing is held out.
// - k-fold: fold `fold` validates, the rest train.
// - Inner folds (a model selection inside a fold's training part): the outer fold's
//   sentences are held out, exactly them; the rest are split by a stratified inner k-fold
//   whose validation folds partition them (each class within one of its share), the same
//   for the same seed and different for another outer fold; bad settings are refused.
// - Inner folds on Keras's split: its last share is held out, the rest partitioned.
// - An inner tail: only the last N training sentences (file order) are dealt to the inner
//   folds, partitioned and stratified; the earlier ones train in every inner fold; on a
//   k-fold, the tail is of the outer fold's training sentences; a tail past them, or one
//   without inner folds, is refused.
#include <string.h>

#include "cli/text_data.h"
#include "tests/support/test.h"

enum { N = 60 };

static void fill(SentenceSet *s, int *label) {
    memset(s, 0, sizeof *s);
    s->n = N, s->n_classes = 2, s->label = label;
    for (int i = 0; i < N; i++) label[i] = i % 3 == 0;  // 20 of class 1, 40 of class 0
}

static void test_keras_and_kfold(void) {
    SentenceSet s;
    int label[N];
    fill(&s, label);
    unsigned char m[N];
    Error err = {{0}};
    TextSplit k = {.valid_share = 0.2};
    EXPECT(text_split_mark(m, &s, &k, &err) == 0, "%s", err.msg);
    for (int i = 0; i < N; i++) EXPECT(m[i] == (i >= 48 ? TEXT_SPLIT_VALID : TEXT_SPLIT_TRAIN), "keras %d", i);
    TextSplit f = {.folds = 5, .fold = 2, .fold_seed = 7};
    EXPECT(text_split_mark(m, &s, &f, &err) == 0, "%s", err.msg);
    int nv = 0;
    for (int i = 0; i < N; i++) {
        nv += m[i] == TEXT_SPLIT_VALID;
        EXPECT(m[i] <= TEXT_SPLIT_VALID, "sentence %d held out without inner folds", i);
    }
    EXPECT(nv == 12, "fold of %d sentences", nv);
}

static void test_inner_folds(void) {
    SentenceSet s;
    int label[N];
    fill(&s, label);
    unsigned char outer[N], m[N], seen[N] = {0};
    Error err = {{0}};
    TextSplit f = {.folds = 5, .fold = 2, .fold_seed = 7};
    EXPECT(text_split_mark(outer, &s, &f, &err) == 0, "%s", err.msg);
    f.inner_folds = 4;
    for (int j = 0; j < 4; j++) {
        f.inner_fold = j;
        EXPECT(text_split_mark(m, &s, &f, &err) == 0, "%s", err.msg);
        int nv = 0, nt = 0, pos = 0;
        for (int i = 0; i < N; i++) {
            EXPECT((m[i] == TEXT_SPLIT_HELD_OUT) == (outer[i] == TEXT_SPLIT_VALID),
                   "sentence %d: held out %d, in the outer fold %d", i, m[i] == TEXT_SPLIT_HELD_OUT,
                   outer[i] == TEXT_SPLIT_VALID);
            if (m[i] == TEXT_SPLIT_VALID) nv++, pos += label[i], seen[i]++;
            if (m[i] == TEXT_SPLIT_TRAIN) nt++;
        }
        EXPECT(nv == 12 && nt == 36, "inner fold %d: %d validate, %d train", j, nv, nt);
        EXPECT(pos == 4, "inner fold %d: %d of class 1 (stratified: 4)", j, pos);
    }
    for (int i = 0; i < N; i++)
        EXPECT(seen[i] == (outer[i] == TEXT_SPLIT_VALID ? 0 : 1), "sentence %d validates %d times", i, seen[i]);
    // Another outer fold deals its inner folds afresh.
    unsigned char a[N], b[N];
    f.inner_fold = 0;
    EXPECT(text_split_mark(a, &s, &f, &err) == 0 && text_split_mark(b, &s, &f, &err) == 0);
    EXPECT(memcmp(a, b, N) == 0, "the same split twice differs");
    TextSplit g = f;
    g.fold = 3;
    EXPECT(text_split_mark(b, &s, &g, &err) == 0);
    EXPECT(memcmp(a, b, N) != 0, "another outer fold, the same marks");
    // Refused: one inner fold, a fold past the last.
    TextSplit bad = f;
    bad.inner_folds = 1;
    EXPECT(text_split_mark(m, &s, &bad, &err) == -1 && strstr(err.msg, "--inner-folds"), "%s", err.msg);
    bad = f, bad.inner_fold = 4;
    EXPECT(text_split_mark(m, &s, &bad, &err) == -1 && strstr(err.msg, "--inner-fold: 4"), "%s", err.msg);
}

// Inner folds on Keras's split (a selection inside the demo's first 1,600): the last share
// is held out, exactly it; the first 48 are partitioned by the inner folds, stratified.
static void test_inner_folds_keras(void) {
    SentenceSet s;
    int label[N];
    fill(&s, label);
    unsigned char m[N], seen[N] = {0};
    Error err = {{0}};
    TextSplit k = {.valid_share = 0.2, .fold_seed = 1, .inner_folds = 4};
    for (int j = 0; j < 4; j++) {
        k.inner_fold = j;
        EXPECT(text_split_mark(m, &s, &k, &err) == 0, "%s", err.msg);
        int nv = 0, nt = 0, pos = 0;
        for (int i = 0; i < N; i++) {
            EXPECT((m[i] == TEXT_SPLIT_HELD_OUT) == (i >= 48), "sentence %d: held out %d", i,
                   m[i] == TEXT_SPLIT_HELD_OUT);
            if (m[i] == TEXT_SPLIT_VALID) nv++, pos += label[i], seen[i]++;
            if (m[i] == TEXT_SPLIT_TRAIN) nt++;
        }
        // 16 of class 1 among the first 48: 4 per inner fold.
        EXPECT(nv == 12 && nt == 36, "inner fold %d: %d validate, %d train", j, nv, nt);
        EXPECT(pos == 4, "inner fold %d: %d of class 1 (stratified: 4)", j, pos);
    }
    for (int i = 0; i < N; i++)
        EXPECT(seen[i] == (i >= 48 ? 0 : 1), "sentence %d validates %d times", i, seen[i]);
    // The fold seed deals them afresh.
    unsigned char a[N], b[N];
    k.inner_fold = 0;
    EXPECT(text_split_mark(a, &s, &k, &err) == 0);
    k.fold_seed = 2;
    EXPECT(text_split_mark(b, &s, &k, &err) == 0);
    EXPECT(memcmp(a, b, N) != 0, "another fold seed, the same marks");
    TextSplit bad = k;
    bad.inner_fold = 4;
    EXPECT(text_split_mark(m, &s, &bad, &err) == -1 && strstr(err.msg, "--inner-fold: 4"), "%s", err.msg);
}

// --inner-tail 24 on Keras's split: 48..59 held out, 0..23 train always, 24..47 (8 of
// class 1) dealt to 4 inner folds of 6 (2 of class 1 each).
static void test_inner_tail(void) {
    SentenceSet s;
    int label[N];
    fill(&s, label);
    unsigned char m[N], seen[N] = {0};
    Error err = {{0}};
    TextSplit k = {.valid_share = 0.2, .fold_seed = 1, .inner_folds = 4, .inner_tail = 24};
    for (int j = 0; j < 4; j++) {
        k.inner_fold = j;
        EXPECT(text_split_mark(m, &s, &k, &err) == 0, "%s", err.msg);
        int nv = 0, nt = 0, pos = 0;
        for (int i = 0; i < N; i++) {
            EXPECT((m[i] == TEXT_SPLIT_HELD_OUT) == (i >= 48), "sentence %d: held out %d", i,
                   m[i] == TEXT_SPLIT_HELD_OUT);
            if (i < 24) EXPECT(m[i] == TEXT_SPLIT_TRAIN, "sentence %d before the tail: mark %d", i, m[i]);
            if (m[i] == TEXT_SPLIT_VALID) nv++, pos += label[i], seen[i]++;
            if (m[i] == TEXT_SPLIT_TRAIN) nt++;
        }
        EXPECT(nv == 6 && nt == 42, "inner fold %d: %d validate, %d train", j, nv, nt);
        EXPECT(pos == 2, "inner fold %d: %d of class 1 (stratified: 2)", j, pos);
    }
    for (int i = 0; i < N; i++)
        EXPECT(seen[i] == (i >= 24 && i < 48 ? 1 : 0), "sentence %d validates %d times", i, seen[i]);
    // The whole training part as the tail deals as no tail does.
    unsigned char a[N], b[N];
    k.inner_fold = 1, k.inner_tail = 48;
    EXPECT(text_split_mark(a, &s, &k, &err) == 0, "%s", err.msg);
    k.inner_tail = 0;
    EXPECT(text_split_mark(b, &s, &k, &err) == 0, "%s", err.msg);
    EXPECT(memcmp(a, b, N) == 0, "a tail of all 48 differs from no tail");
    // On a k-fold: the last 20 of the outer fold's 48 training sentences.
    TextSplit f = {.folds = 5, .fold = 2, .fold_seed = 7, .inner_folds = 4, .inner_tail = 20};
    unsigned char outer[N];
    TextSplit o = {.folds = 5, .fold = 2, .fold_seed = 7};
    EXPECT(text_split_mark(outer, &s, &o, &err) == 0, "%s", err.msg);
    int tail_from = N, c = 0;
    for (int i = N - 1; i >= 0 && c < 20; i--)
        if (outer[i] == TEXT_SPLIT_TRAIN) tail_from = i, c++;
    memset(seen, 0, sizeof seen);
    for (int j = 0; j < 4; j++) {
        f.inner_fold = j;
        EXPECT(text_split_mark(m, &s, &f, &err) == 0, "%s", err.msg);
        for (int i = 0; i < N; i++) {
            EXPECT((m[i] == TEXT_SPLIT_HELD_OUT) == (outer[i] == TEXT_SPLIT_VALID), "k-fold sentence %d", i);
            if (m[i] == TEXT_SPLIT_VALID) seen[i]++;
        }
    }
    for (int i = 0; i < N; i++)
        EXPECT(seen[i] == (i >= tail_from && outer[i] == TEXT_SPLIT_TRAIN ? 1 : 0),
               "k-fold sentence %d validates %d times", i, seen[i]);
    // Refused: a tail past the training part, a tail without inner folds.
    TextSplit bad = {.valid_share = 0.2, .fold_seed = 1, .inner_folds = 4, .inner_tail = 49};
    EXPECT(text_split_mark(m, &s, &bad, &err) == -1 && strstr(err.msg, "--inner-tail: 49"), "%s", err.msg);
    bad.inner_folds = 0, bad.inner_tail = 10;
    EXPECT(text_split_mark(m, &s, &bad, &err) == -1 && strstr(err.msg, "needs --inner-folds"), "%s", err.msg);
}

int main(void) {
    RUN(test_keras_and_kfold);
    RUN(test_inner_folds);
    RUN(test_inner_folds_keras);
    RUN(test_inner_tail);
    return test_summary();
}
