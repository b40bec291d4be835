// test_keras_tokenizer.c: the Keras-style tokenizer (seq/keras_tokenizer.h) on hand-computed
// cases: the filters, the split at spaces only, Unicode lower-casing (U+0130 as Python),
// the word index by count then first appearance, unknown words and max_index dropped,
// every padding and truncating mode, rebuilding from the word list; and, when `make data`
// has fetched them, Amazon then Yelp as the demo fits them, against figures computed once
// with Keras's own rules in Python (3,258 words; the first and last sentences' ids).
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "datasets/sentences.h"
#include "seq/keras_tokenizer.h"
#include "tests/support/test.h"

// Words of text joined by '|'.
static char *joined(const char *text) {
    char **w;
    int n;
    Error err = {{0}};
    if (keras_words(&w, &n, text, &err)) return NULL;
    size_t len = 1;
    for (int i = 0; i < n; i++) len += strlen(w[i]) + 1;
    char *out = calloc(len, 1);
    for (int i = 0; i < n; i++) {
        if (i) strcat(out, "|");
        strcat(out, w[i]);
    }
    keras_words_free(w, n);
    return out;
}

static void expect_words(const char *text, const char *want) {
    char *got = joined(text);
    EXPECT(got && strcmp(got, want) == 0, "'%s' -> '%s', expected '%s'", text, got ? got : "(error)",
           want);
    free(got);
}

static void test_words(void) {
    expect_words("The cat sat.", "the|cat|sat");
    expect_words("don't STOP-me now!!", "don't|stop|me|now");
    expect_words("a\tb\nc-d  e\r f\vg", "a|b|c|d|e\r|f\vg");  // only TAB and LF are filters
    expect_words("!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n", "");
    expect_words("x'y 'quoted'", "x'y|'quoted'");
    expect_words("   ", "");
    expect_words("", "");
    expect_words("\xc3\x89" "COLE caf\xc3\xa9", "\xc3\xa9" "cole|caf\xc3\xa9");     // ÉCOLE café
    expect_words("\xc4\xb0stanbul", "i\xcc\x87stanbul");                            // İ -> i + U+0307
    expect_words("\xce\xa3\xce\x91\xce\xa3", "\xcf\x83\xce\xb1\xcf\x83");          // ΣΑΣ -> σασ (Python: σας)
    expect_words("a\xc2\xa0" "b", "a\xc2\xa0" "b");                                 // U+00A0 stays
    expect_words("\xe6\x97\xa5\xe6\x9c\xac DOG", "\xe6\x97\xa5\xe6\x9c\xac|dog");
    char **w;
    int n;
    Error err = {{0}};
    EXPECT(keras_words(&w, &n, "ab\xff", &err) == -1 && strstr(err.msg, "invalid UTF-8 at byte 3"),
           "%s", err.msg);
    EXPECT(keras_words(&w, &n, "\xc0\xaf", &err) == -1, "overlong accepted");
}

static void test_fit_and_sequences(void) {
    const char *texts[] = {"The cat sat.", "the dog, THE end!", "Cat's toy"};
    KerasTokenizer t;
    Error err = {{0}};
    EXPECT(keras_tokenizer_fit(&t, texts, 3, &err) == 0, "%s", err.msg);
    // the 3; then cat sat dog end cat's toy once each, in order of first appearance.
    const char *order[] = {NULL, "the", "cat", "sat", "dog", "end", "cat's", "toy"};
    EXPECT(t.n_words == 7, "%d words", t.n_words);
    for (int i = 1; i <= 7 && i <= t.n_words; i++) {
        EXPECT(strcmp(t.word[i], order[i]) == 0, "word %d '%s'", i, t.word[i]);
        EXPECT(keras_tokenizer_index(&t, order[i]) == i);
    }
    EXPECT(t.count[1] == 3 && t.count[2] == 1);
    EXPECT(keras_tokenizer_index(&t, "of") == 0 && keras_tokenizer_index(&t, "") == 0);
    int *ids, len;
    EXPECT(keras_tokenizer_sequence(&t, "The END of the cat", 0, &ids, &len, &err) == 0);
    EXPECT(len == 4 && ids[0] == 1 && ids[1] == 5 && ids[2] == 1 && ids[3] == 2, "len %d", len);
    free(ids);
    EXPECT(keras_tokenizer_sequence(&t, "The END of the cat", 3, &ids, &len, &err) == 0);
    EXPECT(len == 3 && ids[0] == 1 && ids[1] == 1 && ids[2] == 2, "num_words: len %d", len);
    free(ids);
    EXPECT(keras_tokenizer_sequence(&t, "nothing known", 0, &ids, &len, &err) == 0);
    EXPECT(len == 0 && ids == NULL);
    EXPECT(keras_tokenizer_sequence(&t, "bad \xfe", 0, &ids, &len, &err) == -1);
    // Rebuilt from the word list: the same indices.
    KerasTokenizer r;
    EXPECT(keras_tokenizer_from_words(&r, (const char *const *)t.word + 1, t.n_words, &err) == 0,
           "%s", err.msg);
    for (int i = 1; i <= t.n_words; i++) EXPECT(keras_tokenizer_index(&r, t.word[i]) == i);
    keras_tokenizer_free(&r);
    const char *dup[] = {"a", "b", "a"};
    EXPECT(keras_tokenizer_from_words(&r, dup, 3, &err) == -1 && strstr(err.msg, "word 3: repeated"),
           "%s", err.msg);
    keras_tokenizer_free(&t);
    const char *bad[] = {"fine", "ab\xff"};
    EXPECT(keras_tokenizer_fit(&t, bad, 2, &err) == -1 &&
               strstr(err.msg, "text 2: invalid UTF-8 at byte 3"), "%s", err.msg);
    EXPECT(t.n_words == 0 && t.word == NULL);
}

static void test_many_words_rehash(void) {
    // 5,000 distinct words, word k appearing (k % 3) + 1 times: the index orders counts 3,
    // 2, 1, ties by first appearance.
    enum { N = 5000 };
    char **texts = malloc(N * sizeof *texts);
    for (int k = 0; k < N; k++) {
        texts[k] = malloc(64);
        int c = k % 3 + 1;
        texts[k][0] = 0;
        for (int j = 0; j < c; j++) sprintf(texts[k] + strlen(texts[k]), "w%d ", k);
    }
    KerasTokenizer t;
    Error err = {{0}};
    EXPECT(keras_tokenizer_fit(&t, (const char *const *)texts, N, &err) == 0);
    EXPECT(t.n_words == N);
    EXPECT(strcmp(t.word[1], "w2") == 0 && strcmp(t.word[2], "w5") == 0, "%s %s", t.word[1],
           t.word[2]);
    EXPECT(strcmp(t.word[N], "w4998") == 0, "%s", t.word[N]);
    for (int i = 2; i <= N; i++) EXPECT(t.count[i - 1] >= t.count[i]);
    for (int k = 0; k < N; k++) {
        char w[16];
        snprintf(w, sizeof w, "w%d", k);
        int i = keras_tokenizer_index(&t, w);
        EXPECT(i >= 1 && strcmp(t.word[i], w) == 0, "%s", w);
        free(texts[k]);
    }
    free(texts);
    keras_tokenizer_free(&t);
}

static void expect_row(const int *got, const int *want, int n, const char *what) {
    for (int i = 0; i < n; i++) EXPECT(got[i] == want[i], "%s: [%d] = %d, expected %d", what, i, got[i], want[i]);
}

static void test_pad(void) {
    const int ids[4] = {1, 5, 1, 2};
    int row[6], kept;
    keras_pad(row, ids, 4, 6, KERAS_POST, KERAS_POST, &kept);
    expect_row(row, (int[]){1, 5, 1, 2, 0, 0}, 6, "post");
    EXPECT(kept == 4);
    keras_pad(row, ids, 4, 6, KERAS_PRE, KERAS_PRE, &kept);
    expect_row(row, (int[]){0, 0, 1, 5, 1, 2}, 6, "pre");
    keras_pad(row, ids, 4, 3, KERAS_POST, KERAS_PRE, &kept);
    expect_row(row, (int[]){5, 1, 2}, 3, "truncating pre");
    EXPECT(kept == 3);
    keras_pad(row, ids, 4, 3, KERAS_POST, KERAS_POST, &kept);
    expect_row(row, (int[]){1, 5, 1}, 3, "truncating post");
    keras_pad(row, ids, 4, 4, KERAS_PRE, KERAS_POST, NULL);
    expect_row(row, ids, 4, "exact");
    keras_pad(row, NULL, 0, 2, KERAS_POST, KERAS_POST, &kept);
    expect_row(row, (int[]){0, 0}, 2, "empty");
    EXPECT(kept == 0);
}

static void test_demo_corpus(void) {
    if (!file_exists("data/sentiment/amazon.json") || !file_exists("data/sentiment/yelp.json")) {
        printf("skip test_demo_corpus: data/sentiment not fetched (make data)\n");
        return;
    }
    SentenceSet s, y;
    Error err = {{0}};
    EXPECT(sentences_read(&s, "data/sentiment/amazon.json", &err) == 0, "%s", err.msg);
    EXPECT(sentences_read(&y, "data/sentiment/yelp.json", &err) == 0, "%s", err.msg);
    sentences_append(&s, &y);
    sentences_free(&y);
    KerasTokenizer t;
    EXPECT(keras_tokenizer_fit(&t, (const char *const *)s.text, s.n, &err) == 0);
    EXPECT(t.n_words == 3258, "%d words", t.n_words);
    const char *top[] = {"the", "and", "i", "a", "it", "to", "is", "was"};
    const long top_count[] = {1104, 704, 627, 456, 418, 417, 414, 385};
    for (int i = 0; i < 8; i++)
        EXPECT(strcmp(t.word[i + 1], top[i]) == 0 && t.count[i + 1] == top_count[i], "%d: %s %ld",
               i + 1, t.word[i + 1], t.count[i + 1]);
    EXPECT(keras_tokenizer_index(&t, "caf\xc3\xa9") == 2864);
    EXPECT(keras_tokenizer_index(&t, "pur\xc3\xa9" "ed") == 3166);
    const int first[] = {27, 58, 7, 55, 141, 12, 60, 6, 268, 5, 14, 45, 14, 1, 148, 448, 3, 59, 112, 4, 1427};
    const int last[] = {120, 34, 46, 3, 3255, 734, 127, 10, 13, 196, 58, 37, 3256, 900, 14, 1, 3257, 112, 3258, 66, 1, 38, 5, 313, 6, 604, 1, 374};
    int *ids, len;
    EXPECT(keras_tokenizer_sequence(&t, s.text[0], 0, &ids, &len, &err) == 0);
    EXPECT(len == 21, "len %d", len);
    if (len == 21) expect_row(ids, first, 21, "sentence 1");
    free(ids);
    EXPECT(keras_tokenizer_sequence(&t, s.text[1999], 0, &ids, &len, &err) == 0);
    EXPECT(len == 28, "len %d", len);
    if (len == 28) expect_row(ids, last, 28, "sentence 2000");
    free(ids);
    keras_tokenizer_free(&t);
    sentences_free(&s);
}

int main(void) {
    RUN(test_words);
    RUN(test_fit_and_sequences);
    RUN(test_many_words_rehash);
    RUN(test_pad);
    RUN(test_demo_corpus);
    return test_summary();
}
