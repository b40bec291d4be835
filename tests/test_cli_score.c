// test_cli_score.c: `caption score` end to end: the scores of a small corpus worked by hand
// (and by coco-caption's own scorers), tokenisation on both sides, the images it scores,
// and a one-line error for each kind of bad input; --object-f1 on scenes captions by hand. Finds the binary in $ATTEND_BIN.
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/scratch.h"
#include "tests/support/test.h"

static Scratch sc;

#define run(...) scratch_run(&sc, __VA_ARGS__)

static void write_file(const char *name, const char *text) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", sc.dir, name);
    scratch_write_text(path, text);
}

static char *slurp(const char *name) {
    char *text = scratch_read(&sc, name, NULL);
    return text ? text : calloc(1, 1);
}

// Two images scored, a third with no result. Tokens:
//   image 1: refs "a cat sits on the mat", "the cat is on the mat"; result "a cat sits on
//            the mat" (equal to the first reference);
//   image 2: ref "a dog runs"; result "the dog runs".
static const char *refs_json =
    "{\"images\": [{\"id\": 1, \"file_name\": \"1.jpg\"}, {\"id\": 2, \"file_name\": \"2.jpg\"},"
    "              {\"id\": 3, \"file_name\": \"3.jpg\"}],"
    " \"annotations\": [{\"image_id\": 1, \"id\": 10, \"caption\": \"A cat sits on the mat.\"},"
    "                   {\"image_id\": 1, \"id\": 11, \"caption\": \"The cat is on the mat\"},"
    "                   {\"image_id\": 2, \"id\": 12, \"caption\": \"A dog runs.\"},"
    "                   {\"image_id\": 3, \"id\": 13, \"caption\": \"A bird.\"}]}";

// The metrics line of --json, parsed; NULL when stdout is not one JSON object.
static cJSON *score_json(void) {
    char *out = slurp("stdout.txt");
    cJSON *j = cJSON_Parse(out);
    free(out);
    return cJSON_IsObject(j) ? j : (cJSON_Delete(j), NULL);
}

static double num(const cJSON *j, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void test_scores_by_hand(void) {
    write_file("refs.json", refs_json);
    // Case and punctuation differ from the references: the tokeniser makes them equal.
    write_file("results.json",
               "[{\"image_id\": 2, \"caption\": \"The dog runs!\"},"
               " {\"image_id\": 1, \"caption\": \"A Cat sits on the mat.\"}]");
    int status = run("score --refs %s/refs.json --results %s/results.json --json", sc.dir, sc.dir);
    EXPECT(status == 0, "exit %d: %s", status, slurp("stderr.txt"));
    cJSON *j = score_json();
    EXPECT(j != NULL, "stdout is not a JSON object");
    if (!j) return;
    // BLEU (corpus): candidate length 9 = reference length 9 (no brevity penalty);
    // matches / n-grams: 1-grams 8/9 (not "the" of image 2), 2-grams 6/7, 3-grams 4/5,
    // 4-grams 3/3 (image 2 has none).
    double p1 = 8.0 / 9, p2 = 6.0 / 7, p3 = 4.0 / 5, p4 = 1.0;
    EXPECT(num(j, "images") == 2);
    EXPECT_NEAR(num(j, "bleu1"), p1, 2e-9, 0);
    EXPECT_NEAR(num(j, "bleu2"), sqrt(p1 * p2), 2e-9, 0);
    EXPECT_NEAR(num(j, "bleu3"), cbrt(p1 * p2 * p3), 2e-9, 0);
    EXPECT_NEAR(num(j, "bleu4"), pow(p1 * p2 * p3 * p4, 0.25), 2e-9, 0);
    // ROUGE-L: image 1 equals a reference (1); image 2 LCS 2 of 3 both ways (2/3).
    EXPECT_NEAR(num(j, "rougeL"), (1.0 + 2.0 / 3) / 2, 2e-9, 0);
    // CIDEr-D, image 2 by hand (idf of a word = log 2 - log df, "a" is in both images'
    // references so weighs 0): unigrams {the, dog, runs} . {a, dog, runs} = 2 / sqrt(6),
    // bigrams {the dog, dog runs} . {a dog, dog runs} = 1/2, trigrams 0, equal bigram
    // counts (no penalty): 10 (2/sqrt(6) + 1/2) / 4 = 3.29124. Image 1: 6.80071 (two
    // references); both per-image values and the mean 5.045976611 from coco-caption's
    // cider_scorer.py on these tokens.
    double image2 = 10 * (2 / sqrt(6.0) + 0.5) / 4;
    EXPECT_NEAR(image2, 3.29124145, 1e-8, 0);
    EXPECT_NEAR(num(j, "cider"), 5.045976611, 2e-9, 0);
    cJSON_Delete(j);
    char *err = slurp("stderr.txt");
    EXPECT(strstr(err, "1 of the 3 images") != NULL, "stderr should count the unscored image: %s", err);
    free(err);

    // Without --json: one line with the same figures.
    EXPECT(run("score --refs %s/refs.json --results %s/results.json", sc.dir, sc.dir) == 0);
    char *out = slurp("stdout.txt");
    EXPECT(strstr(out, "2 images: BLEU-1 0.8889 ") == out && strstr(out, "ROUGE-L 0.8333") &&
               strstr(out, "CIDEr-D 5.0460") && scratch_count_lines(out) == 1,
           "stdout '%s'", out);
    free(out);
}

// Only the images of the results count: a result set of image 2 alone scores as a corpus
// of one image. Its 3 words match the reference, but there is no 4-gram, and bleu_scorer
// then takes (0 + 1e-15) / (0 + 1e-9) as p4: BLEU-4 = 1e-6^(1/4). With one image every
// idf is 0, so CIDEr-D is 0.
static void test_scores_images_of_results(void) {
    write_file("refs.json", refs_json);
    write_file("one.json", "[{\"image_id\": 2, \"caption\": \"a dog runs\"}]");
    EXPECT(run("score --refs %s/refs.json --results %s/one.json --json", sc.dir, sc.dir) == 0);
    cJSON *j = score_json();
    EXPECT(j != NULL);
    if (!j) return;
    EXPECT(num(j, "images") == 1);
    EXPECT_NEAR(num(j, "bleu3"), 1.0, 2e-9, 0);
    EXPECT_NEAR(num(j, "bleu4"), pow(1e-6, 0.25), 2e-9, 0);
    EXPECT_NEAR(num(j, "rougeL"), 1.0, 1e-12, 0);
    EXPECT(num(j, "cider") == 0.0);
    cJSON_Delete(j);
}

// A failing command: non-zero status and exactly one line on stderr containing want.
static void expect_error(const char *results_text, const char *want) {
    write_file("refs.json", refs_json);
    write_file("bad.json", results_text);
    int status = run("score --refs %s/refs.json --results %s/bad.json", sc.dir, sc.dir);
    char *err = slurp("stderr.txt"), *out = slurp("stdout.txt");
    EXPECT(status != 0, "exit 0 for results '%s'", results_text);
    EXPECT(scratch_count_lines(err) == 1, "stderr should be one line, got: %s", err);
    EXPECT(strstr(err, want) && strstr(err, "bad.json"), "stderr '%s' lacks '%s' or the file", err, want);
    EXPECT(strncmp(err, "caption score: ", 15) == 0, "stderr '%s' does not name the program", err);
    EXPECT(out[0] == 0, "stdout '%s' on an error", out);
    free(err);
    free(out);
}

static void test_errors(void) {
    expect_error("[{\"image_id\": 1, \"caption\": \"a cat\"}, {\"image_id\": 99, \"caption\": \"x\"}]",
                 "[1]: image_id 99 has no reference caption");
    expect_error("[{\"image_id\": 1, \"caption\": \"a cat\"}, {\"image_id\": 2, \"caption\": \"x\"},"
                 " {\"image_id\": 1, \"caption\": \"a mat\"}]",
                 "[2]: duplicate image_id 1");
    expect_error("", "empty file");
    expect_error("  \n", "empty file");
    expect_error("[]", "no results");
    expect_error("[{\"image_id\": 1, \"caption\": \"a\"", "not valid JSON");
    expect_error("{\"image_id\": 1, \"caption\": \"a\"}", "expected a JSON array");
    expect_error("[{\"image_id\": 1, \"caption\": 5}]", "[0]: \"caption\" is not a string");
    expect_error("[{\"image_id\": -1, \"caption\": \"a\"}]", "[0]: \"image_id\" is not a whole number");
    expect_error("[{\"image_id\": 1, \"caption\": \"a \\u00ff\"}, 7]", "[1]: not an object");
    // A caption longer than the references may be (CAPTION_MAX_BYTES): refused at once
    // (before, 400 KB of "&a" took 21.7 s to score).
    size_t n = 400 * 1024;
    char *long_caption = malloc(n + 64);
    snprintf(long_caption, 64, "[{\"image_id\": 1, \"caption\": \"");
    size_t k = strlen(long_caption);
    for (size_t i = 0; i < n; i += 2) memcpy(long_caption + k + i, "&a", 2);
    strcpy(long_caption + k + n, "\"}]");
    expect_error(long_caption, "[0]: \"caption\" of 409600 bytes is longer than the limit of 4096");
    free(long_caption);

    // Missing flags and files.
    int status = run("score --results %s/bad.json", sc.dir);
    char *err = slurp("stderr.txt");
    EXPECT(status == 2 && scratch_count_lines(err) == 1 && strstr(err, "--refs: missing (required)"),
           "status %d, stderr '%s'", status, err);
    free(err);
    write_file("ok.json", "[{\"image_id\": 1, \"caption\": \"a cat\"}]");
    status = run("score --refs %s/nothere.json --results %s/ok.json", sc.dir, sc.dir);
    err = slurp("stderr.txt");
    EXPECT(status == 1 && scratch_count_lines(err) == 1 && strstr(err, "nothere.json"),
           "status %d, stderr '%s'", status, err);
    free(err);
    EXPECT(run("score --help") == 0);
    char *out = slurp("stdout.txt");
    EXPECT(strstr(out, "--results") && strstr(out, "(required)"), "help: %s", out);
    free(out);
}


// coco-caption's evaluation reads only each annotation's image_id and caption: references
// whose "images" entries have no "file_name", or no "images" at all, score the same as
// refs_json (only the images with a result are scored either way).
static void test_references_need_only_annotations(void) {
    write_file("results.json",
               "[{\"image_id\": 2, \"caption\": \"The dog runs!\"},"
               " {\"image_id\": 1, \"caption\": \"A Cat sits on the mat.\"}]");
    write_file("refs.json", refs_json);
    EXPECT(run("score --refs %s/refs.json --results %s/results.json --json", sc.dir, sc.dir) == 0);
    char *want = slurp("stdout.txt");
    const char *annotations =
        " \"annotations\": [{\"image_id\": 1, \"id\": 10, \"caption\": \"A cat sits on the mat.\"},"
        "                   {\"image_id\": 1, \"id\": 11, \"caption\": \"The cat is on the mat\"},"
        "                   {\"image_id\": 2, \"id\": 12, \"caption\": \"A dog runs.\"},"
        "                   {\"image_id\": 3, \"id\": 13, \"caption\": \"A bird.\"}]}";
    char text[2048];
    const char *heads[] = {"{\"images\": [{\"id\": 1}, {\"id\": 2}, {\"id\": 3}],", "{"};
    for (int k = 0; k < 2; k++) {
        snprintf(text, sizeof text, "%s%s", heads[k], annotations);
        write_file("refs_ann.json", text);
        int status = run("score --refs %s/refs_ann.json --results %s/results.json --json", sc.dir, sc.dir);
        char *out = slurp("stdout.txt"), *err = slurp("stderr.txt");
        EXPECT(status == 0, "%s: exit %d: %s", heads[k], status, err);
        EXPECT(strcmp(out, want) == 0, "%s: scores differ:\n%s\nwant:\n%s", heads[k], out, want);
        EXPECT(!strstr(err, "skipped"), "%s: stderr: %s", heads[k], err);
        free(out);
        free(err);
    }
    // No "annotations" array: nothing to score against.
    write_file("refs_none.json", "{\"images\": [{\"id\": 1, \"file_name\": \"1.jpg\"}]}");
    int status = run("score --refs %s/refs_none.json --results %s/results.json", sc.dir, sc.dir);
    char *err = slurp("stderr.txt");
    EXPECT(status == 1 && scratch_count_lines(err) == 1 && strstr(err, "refs_none.json") &&
               strstr(err, "\"annotations\""),
           "status %d, stderr '%s'", status, err);
    free(err);
    free(want);
}

// --object-f1 on captions of scenes: each image's objects are the colour+class objects its
// references name. Image 1 (a red seven, a blue bag): "a red seven left of a green bag"
// names 2, 1 right (the bag's colour is wrong). Image 2 (a white boot): the boot named twice
// is one object, right. Image 3 (three objects): nothing named. Sums: 3 named, 6 true, 2
// right: precision 2/3, recall 1/3, F1 2 (2/3)(1/3) / (2/3 + 1/3) = 4/9.
static void test_object_f1_by_hand(void) {
    write_file("scene_refs.json",
               "{\"annotations\": [{\"image_id\": 1, \"caption\": \"A red seven to the left of a blue bag.\"},"
               "                 {\"image_id\": 1, \"caption\": \"there is a blue bag and a red seven\"},"
               "                 {\"image_id\": 2, \"caption\": \"a single white boot\"},"
               "                 {\"image_id\": 2, \"caption\": \"a white boot on a dark background\"},"
               "                 {\"image_id\": 3, \"caption\": \"a green two a yellow coat and a cyan top\"}]}");
    write_file("scene_results.json",
               "[{\"image_id\": 1, \"caption\": \"a red seven left of a green bag\"},"
               " {\"image_id\": 2, \"caption\": \"a white boot under a white boot\"},"
               " {\"image_id\": 3, \"caption\": \"a picture\"}]");
    int status = run("score --refs %s/scene_refs.json --results %s/scene_results.json --object-f1 --json", sc.dir, sc.dir);
    EXPECT(status == 0, "exit %d: %s", status, slurp("stderr.txt"));
    cJSON *j = score_json();
    EXPECT(j != NULL, "stdout is not a JSON object");
    if (!j) return;
    EXPECT(num(j, "objects_named") == 3 && num(j, "objects_true") == 6 && num(j, "objects_right") == 2,
           "counts %g %g %g", num(j, "objects_named"), num(j, "objects_true"), num(j, "objects_right"));
    EXPECT_NEAR(num(j, "object_precision"), 2.0 / 3, 2e-9, 0);
    EXPECT_NEAR(num(j, "object_recall"), 1.0 / 3, 2e-9, 0);
    EXPECT_NEAR(num(j, "object_f1"), 4.0 / 9, 2e-9, 0);
    EXPECT(num(j, "images") == 3 && isfinite(num(j, "bleu4")), "the other scores are still there");
    cJSON_Delete(j);
    // The line says the same; without the flag, nothing about objects.
    EXPECT(run("score --refs %s/scene_refs.json --results %s/scene_results.json --object-f1", sc.dir, sc.dir) == 0);
    char *out = slurp("stdout.txt");
    EXPECT(strstr(out, " object F1 0.4444 (precision 0.6667, recall 0.3333)\n") && scratch_count_lines(out) == 1,
           "stdout '%s'", out);
    free(out);
    EXPECT(run("score --refs %s/scene_refs.json --results %s/scene_results.json --json", sc.dir, sc.dir) == 0);
    out = slurp("stdout.txt");
    EXPECT(!strstr(out, "object"), "object F1 without --object-f1: %s", out);
    free(out);
    // References that name no colour+class object (not scenes): one line, status 1.
    write_file("refs.json", refs_json);
    write_file("ok.json", "[{\"image_id\": 1, \"caption\": \"a red cat\"}]");
    status = run("score --refs %s/refs.json --results %s/ok.json --object-f1", sc.dir, sc.dir);
    char *err = slurp("stderr.txt");
    out = slurp("stdout.txt");
    EXPECT(status == 1 && scratch_count_lines(err) == 1 && strstr(err, "caption score: ") == err &&
               strstr(err, "refs.json: --object-f1: no reference caption") && out[0] == 0,
           "status %d, stderr '%s', stdout '%s'", status, err, out);
    free(err);
    free(out);
}

int main(void) {
    if (scratch_open(&sc, "test_cli_score", "caption")) {
        printf("FAIL main: cannot make a temporary folder\n");
        return 1;
    }
    RUN(test_scores_by_hand);
    RUN(test_scores_images_of_results);
    RUN(test_errors);
    RUN(test_references_need_only_annotations);
    RUN(test_object_f1_by_hand);
    scratch_remove(sc.dir);
    return test_summary();
}
