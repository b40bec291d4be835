// test_sentences.c: the labelled-sentence readers (datasets/sentences.h) on small inputs
// written here: the package's JSON with its trailing null entry, TSV with several classes
// and negative labels, every refusal as one line naming the file and the line or entry,
// appending sets, Keras's validation split and the stratified k-fold; and the fetched
// sentiment files when `make data` has put them in data/sentiment/.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/fileio.h"
#include "datasets/sentences.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"

static char g_dir[256];

static int parse_json(SentenceSet *s, const char *text, Error *err) {
    return sentences_parse_json(s, text, strlen(text), "x.json", err);
}
static int parse_tsv(SentenceSet *s, const char *text, Error *err) {
    return sentences_parse_tsv(s, text, strlen(text), "x.tsv", err);
}

static void test_json_package_layout(void) {
    SentenceSet s;
    Error err = {{0}};
    const char *j = "[{\"text\":\"Good case.\",\"class\":1},{\"text\":\"Bad.\",\"class\":0},"
                    "{\"text\":\"Caf\\u00e9 ok\",\"class\":1},{\"text\":\"\",\"class\":null}]";
    EXPECT(parse_json(&s, j, &err) == 0, "%s", err.msg);
    EXPECT(s.n == 3 && s.n_classes == 2, "n %d classes %d", s.n, s.n_classes);
    if (s.n == 3) {
        EXPECT(strcmp(s.text[0], "Good case.") == 0 && s.label[0] == 1 && s.label[1] == 0);
        EXPECT(strcmp(s.text[2], "Caf\xc3\xa9 ok") == 0, "%s", s.text[2]);
        EXPECT(s.class_value[0] == 0 && s.class_value[1] == 1);
    }
    sentences_free(&s);
    EXPECT(s.n == 0 && s.text == NULL);
}

static void test_tsv_classes(void) {
    SentenceSet s;
    Error err = {{0}};
    const char *t = "5\tfive stars\r\n\n2\ttwo\twith a tab\n-1\tminus one\n  \n5\tagain";
    EXPECT(parse_tsv(&s, t, &err) == 0, "%s", err.msg);
    EXPECT(s.n == 4 && s.n_classes == 3, "n %d classes %d", s.n, s.n_classes);
    if (s.n == 4 && s.n_classes == 3) {
        EXPECT(s.class_value[0] == -1 && s.class_value[1] == 2 && s.class_value[2] == 5);
        EXPECT(s.label[0] == 2 && s.label[1] == 1 && s.label[2] == 0 && s.label[3] == 2);
        EXPECT(strcmp(s.text[0], "five stars") == 0, "'%s'", s.text[0]);  // CR dropped
        EXPECT(strcmp(s.text[1], "two\twith a tab") == 0, "'%s'", s.text[1]);
        EXPECT(strcmp(s.text[3], "again") == 0);
    }
    sentences_free(&s);
}

// Each bad input is refused with one line starting "NAME: " and holding `want`.
static void expect_refused(int json, const char *text, size_t len, const char *want) {
    SentenceSet s;
    Error err = {{0}};
    const char *name = json ? "x.json" : "x.tsv";
    int rc = json ? sentences_parse_json(&s, text, len, name, &err)
                  : sentences_parse_tsv(&s, text, len, name, &err);
    EXPECT(rc == -1, "accepted: %.60s", text);
    EXPECT(strncmp(err.msg, name, strlen(name)) == 0 && err.msg[strlen(name)] == ':',
           "does not name the file: %s", err.msg);
    EXPECT(strstr(err.msg, want) != NULL, "'%s' lacks '%s'", err.msg, want);
    EXPECT(strchr(err.msg, '\n') == NULL, "more than one line: %s", err.msg);
    EXPECT(s.n == 0 && s.text == NULL && s.label == NULL, "a failed read left sentences");
}
#define REFUSED(json, text, want) expect_refused(json, text, strlen(text), want)

static void test_json_refusals(void) {
    REFUSED(1, "", "empty file");
    REFUSED(1, "[{\"text\":\"a\",\"class\":1}", "invalid JSON at line 1");
    REFUSED(1, "[\n{\"text\":\"a\",\n\"class\":1},\n]x", "invalid JSON at line");
    REFUSED(1, "[{\"text\":\"a\",\"class\":0},{\"text\":\"b\",\"class\":1}]\n\n]", "invalid JSON at line 3");
    REFUSED(1, "{\"text\":\"a\",\"class\":1}", "top level is not an array");
    REFUSED(1, "[]", "no sentences");
    REFUSED(1, "[{\"text\":\"\",\"class\":null}]", "no sentences");
    REFUSED(1, "[1,{\"text\":\"a\",\"class\":0}]", "entry 1: not an object");
    REFUSED(1, "[{\"text\":\"a\",\"class\":0},{\"class\":1}]", "entry 2: no \"text\"");
    REFUSED(1, "[{\"text\":3,\"class\":0}]", "entry 1: \"text\" is not a string");
    REFUSED(1, "[{\"text\":\"a\"},{\"text\":\"b\",\"class\":1}]", "entry 1: no \"class\"");
    REFUSED(1, "[{\"text\":\"a\",\"class\":0.5},{\"text\":\"b\",\"class\":1}]",
            "entry 1: \"class\" is not an integer");
    REFUSED(1, "[{\"text\":\"a\",\"class\":\"pos\"},{\"text\":\"b\",\"class\":1}]",
            "entry 1: \"class\" is not an integer");
    REFUSED(1, "[{\"text\":\"a\",\"class\":1e12},{\"text\":\"b\",\"class\":1}]",
            "\"class\" is not an integer");
    // A null class is dropped only as the package's last entry.
    REFUSED(1, "[{\"text\":\"\",\"class\":null},{\"text\":\"a\",\"class\":0},{\"text\":\"b\",\"class\":1}]",
            "entry 1: \"class\" is not an integer");
    REFUSED(1, "[{\"text\":\"\",\"class\":0},{\"text\":\"b\",\"class\":1}]", "entry 1: empty sentence");
    REFUSED(1, "[{\"text\":\"a\",\"class\":1},{\"text\":\"b\",\"class\":1}]",
            "one class only (label 1)");
    REFUSED(1, "[{\"text\":\"a\",\"class\":0},{\"text\":\"b\xff\",\"class\":1}]",
            "entry 2: not valid UTF-8 at byte 2");
}

static void test_tsv_refusals(void) {
    REFUSED(0, "", "empty file");
    REFUSED(0, "\n\n  \n", "no sentences");
    REFUSED(0, "1\tgood\nno tab here\n", "line 2: no tab between the label and the sentence");
    REFUSED(0, "pos\tgood\n0\tbad\n", "line 1: the label 'pos' is not an integer");
    REFUSED(0, "1.5\tgood\n0\tbad\n", "line 1: the label '1.5' is not an integer");
    REFUSED(0, "\tgood\n0\tbad\n", "line 1: the label '' is not an integer");
    REFUSED(0, "99999999999\tgood\n0\tbad\n", "is not an integer");
    REFUSED(0, "1\tgood\n0\t\n", "line 2: empty sentence");
    REFUSED(0, "1\tgood\n1\tfine\n", "one class only (label 1)");
    REFUSED(0, "1\tgood\n0\tba\xc3\n", "line 2: not valid UTF-8 at byte 3");
    REFUSED(0, "1\tgood\n0\t\xed\xa0\x80 surrogate\n", "line 2: not valid UTF-8 at byte 1");
    expect_refused(0, "1\tgo\0od\n0\tbad\n", 15, "line 1: a NUL byte at byte 3");
    // A sentence of 100,000 characters.
    size_t n = 100000;
    char *big = xmalloc(n + 16);
    memcpy(big, "0\tbad\n1\t", 8);
    memset(big + 8, 'a', n);
    big[8 + n] = 0;
    REFUSED(0, big, "line 2: a sentence of 100000 bytes (at most 16384)");
    free(big);
}

static void test_files_and_format_detection(void) {
    char json[512], tsv[512], missing[512];
    snprintf(json, sizeof json, "%s/a.json", g_dir);
    snprintf(tsv, sizeof tsv, "%s/b.tsv", g_dir);
    snprintf(missing, sizeof missing, "%s/none.tsv", g_dir);
    CHECK(scratch_write_text(json, "\n  [{\"text\":\"up\",\"class\":1},{\"text\":\"down\",\"class\":0}]") == 0);
    CHECK(scratch_write_text(tsv, "2\tthree\n") == 0);
    SentenceSet a, b;
    Error err = {{0}};
    EXPECT(sentences_read(&a, json, &err) == 0, "%s", err.msg);
    EXPECT(a.n == 2);
    EXPECT(sentences_read(&b, tsv, &err) == -1);  // one sentence, one class
    EXPECT(strncmp(err.msg, tsv, strlen(tsv)) == 0 && strstr(err.msg, "one class only"), "%s",
           err.msg);
    CHECK(scratch_write_text(tsv, "2\tthree\n0\tnothing\n") == 0);
    EXPECT(sentences_read(&b, tsv, &err) == 0, "%s", err.msg);
    sentences_free(&b);
    EXPECT(sentences_read_json(&b, tsv, &err) == -1 && strstr(err.msg, "invalid JSON"), "%s",
           err.msg);
    EXPECT(sentences_read_tsv(&b, tsv, &err) == 0, "%s", err.msg);
    SentenceSet c;
    EXPECT(sentences_read(&c, missing, &err) == -1 && strncmp(err.msg, missing, strlen(missing)) == 0,
           "%s", err.msg);
    // Appending: file order kept, classes renumbered over {0, 1, 2}.
    sentences_append(&a, &b);
    EXPECT(a.n == 4 && a.n_classes == 3, "n %d classes %d", a.n, a.n_classes);
    if (a.n == 4 && a.n_classes == 3) {
        EXPECT(strcmp(a.text[2], "three") == 0 && a.label[0] == 1 && a.label[1] == 0 &&
               a.label[2] == 2 && a.label[3] == 0);
    }
    sentences_free(&a);
    sentences_free(&b);
}

static void test_keras_split(void) {
    EXPECT(sentences_keras_split_at(2000, 0.2) == 1600);
    EXPECT(sentences_keras_split_at(1000, 0.2) == 800);
    EXPECT(sentences_keras_split_at(10, 0.25) == 7);  // int(7.5)
    EXPECT(sentences_keras_split_at(3, 0.0) == 3);
    EXPECT(sentences_keras_split_at(0, 0.2) == 0);
}

static void test_kfold_stratified_and_seeded(void) {
    enum { N = 103, K = 10 };
    int label[N], fold[N], again[N], other[N];
    int count[3] = {0, 0, 0};
    for (int i = 0; i < N; i++) label[i] = i % 7 == 0 ? 2 : (i % 2), count[label[i]]++;
    Error err = {{0}};
    EXPECT(sentences_kfold(fold, label, N, 3, K, 42, &err) == 0, "%s", err.msg);
    EXPECT(sentences_kfold(again, label, N, 3, K, 42, &err) == 0);
    EXPECT(sentences_kfold(other, label, N, 3, K, 43, &err) == 0);
    EXPECT(memcmp(fold, again, sizeof fold) == 0, "not a pure function of the seed");
    EXPECT(memcmp(fold, other, sizeof fold) != 0, "the seed changes nothing");
    int size[K] = {0}, per[K][3];
    memset(per, 0, sizeof per);
    for (int i = 0; i < N; i++) {
        EXPECT(fold[i] >= 0 && fold[i] < K, "fold %d", fold[i]);
        if (fold[i] < 0 || fold[i] >= K) return;
        size[fold[i]]++;
        per[fold[i]][label[i]]++;
    }
    for (int f = 0; f < K; f++) {
        EXPECT(size[f] == N / K || size[f] == N / K + 1, "fold %d holds %d", f, size[f]);
        for (int c = 0; c < 3; c++)
            EXPECT(per[f][c] == count[c] / K || per[f][c] == count[c] / K + 1,
                   "fold %d class %d: %d of %d", f, c, per[f][c], count[c]);
    }
    EXPECT(sentences_kfold(fold, label, N, 3, 1, 42, &err) == -1 && strstr(err.msg, "k-fold"));
    EXPECT(sentences_kfold(fold, label, 5, 3, 6, 42, &err) == -1);
}

// The fetched files (make data): 1,000 sentences each, 500 per class, the first sentence
// UCI's. Skipped, with a line saying so, when they are not there.
static void test_fetched_sentiment_files(void) {
    const char *names[3] = {"amazon", "yelp", "imdb"};
    const char *first[3] = {"So there is no way for me to plug it in here in the US unless I go by a converter.",
                            "Wow... Loved this place.", "A very, very, very slow-moving, aimless movie about a distressed, drifting young man.  "};
    for (int f = 0; f < 3; f++) {
        char path[128];
        snprintf(path, sizeof path, "data/sentiment/%s.json", names[f]);
        if (!file_exists(path)) {
            printf("skip %s: not fetched (make data)\n", path);
            continue;
        }
        SentenceSet s;
        Error err = {{0}};
        EXPECT(sentences_read(&s, path, &err) == 0, "%s", err.msg);
        EXPECT(s.n == 1000 && s.n_classes == 2, "%s: %d sentences, %d classes", path, s.n,
               s.n_classes);
        int pos = 0;
        for (int i = 0; i < s.n; i++) pos += s.label[i];
        EXPECT(pos == 500, "%s: %d positive", path, pos);
        if (s.n) EXPECT(strcmp(s.text[0], first[f]) == 0, "%s: first '%s'", path, s.text[0]);
        sentences_free(&s);
    }
}

int main(void) {
    if (scratch_make(g_dir, sizeof g_dir, "test_sentences")) return 1;
    RUN(test_json_package_layout);
    RUN(test_tsv_classes);
    RUN(test_json_refusals);
    RUN(test_tsv_refusals);
    RUN(test_files_and_format_detection);
    RUN(test_keras_split);
    RUN(test_kfold_stratified_and_seeded);
    RUN(test_fetched_sentiment_files);
    scratch_remove(g_dir);
    return test_summary();
}
