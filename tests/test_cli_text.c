// End-to-end tests of `text classify` (bin/text in $ATTEND_BIN) on small LABEL<TAB>SENTENCE
// files written here: train a tiny model a few steps (log.csv, loss.png, run.json, --json),
// resume bit for bit, a stratified fold as the validation set, refuse a folder holding a run and model flags that differ on --resume,
// evaluate with --json, predict from standard input and from a file (labels as written,
// three classes), show (attention.html and .png, the misclassified first), report (its
// sections, a missing eval.json as a note), and bad input refused with one line on stderr and a non-zero exit: empty
// and malformed files, labels that are not integers, one class, non-UTF-8 bytes, a sentence
// of 100,000 characters, a data spec naming nothing, a checkpoint of another program, --masked
// with pre-padding (the lengths would mask the words); a bad
// line in predict's input keeps the predictions printed before it. The bag-of-words
// logistic regression (--pool bow) trains, resumes bit for bit, and evaluates, predicts and
// shows its words like the LSTM models; with --nb (naive-Bayes scaled features) it keeps
// its fixed scales through a resume and refuses three classes. --inner-folds holds the
// outer fold out and validates on an inner fold of the rest. --recurrent-activation
// hard_sigmoid is recorded, resumed bit for bit, refused on a mismatched --resume.
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/fileio.h"
#include "tests/support/checkpoint.h"
#include "tests/support/cli_check.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"

static Scratch sc;
static const char *tmpdir;

#define TINY "--T 6 --embed 4 --hidden 5 --batch 4 --log-every 1 --valid-share 0.25"
#define run_text(...) scratch_run(&sc, __VA_ARGS__)

static char *read_text(const char *name) { return scratch_read(&sc, name, NULL); }

static void write_file(const char *name, const char *text) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    CHECK(scratch_write_text(path, text) == 0);
}

// 24 sentences, 12 per class, the classes alternating.
static void write_binary_tsv(void) {
    static const char *pos[] = {"good", "great phone", "works well", "love it", "Excellent value!",
                                "very good", "great", "nice and good", "I love this",
                                "works great", "good case", "well made"};
    static const char *neg[] = {"bad", "awful phone", "broke fast", "hate it", "Waste of money.",
                                "very bad", "awful", "bad and slow", "I hate this",
                                "broke again", "bad case", "poorly made"};
    char text[2048] = "";
    for (int i = 0; i < 12; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "1\t%s\n0\t%s\n", pos[i], neg[i]);
    write_file("s.tsv", text);
}

// A command that exited rc: 0, and its scratch file name (stderr.txt, stdout.txt) holds
// want; otherwise fails naming what, rc and the file.
static void expect_ok_with(int rc, const char *name, const char *want, const char *what) {
    char *text = read_text(name);
    EXPECT(rc == 0 && text && strstr(text, want), "%s: %d, %s", what, rc, text ? text : "");
    free(text);
}

// The run DIR/NAME (flags, then --data DIR/s.tsv, for steps in one go) again in two parts:
// part steps into DIR/NAME-part, then --resume to steps; its checkpoint must be DIR/NAME's
// but for train.step.
static void expect_resume_matches(const char *name, const char *flags, int part, int steps) {
    int rc = run_text("classify train %s --data %s/s.tsv --steps %d --out %s/%s-part", flags, tmpdir,
                      part, tmpdir, name);
    EXPECT(rc == 0, "%s: first part exited %d", name, rc);
    rc = run_text("classify train --steps %d --resume --out %s/%s-part", steps, tmpdir, name);
    EXPECT(rc == 0, "%s: resumed run exited %d", name, rc);
    char a[1024], b[1024], why[256];
    snprintf(a, sizeof a, "%s/%s/model.safetensors", tmpdir, name);
    snprintf(b, sizeof b, "%s/%s-part/model.safetensors", tmpdir, name);
    EXPECT(checkpoints_identical(a, b, "train.step", why, sizeof why), "%s: resume differs: %s",
           name, why);
}

// eval --split all of DIR/NAME's model: most of the 24 sentences (22 or more) right.
static void expect_most_right(const char *name) {
    int rc = run_text("classify eval --model %s/%s/model.safetensors --split all --json", tmpdir, name);
    char *out = read_text("stdout.txt");
    int correct = 0;
    const char *at = out ? strstr(out, "\"correct\": ") : NULL;
    EXPECT(rc == 0 && at && sscanf(at, "\"correct\": %d", &correct) == 1 && correct >= 22,
           "%s gets most of these sentences right: %s", name, out ? out : "");
    free(out);
}

static void test_train_writes_outputs(void) {
    int rc = run_text("classify train " TINY " --data %s/s.tsv --steps 6 --out %s/run --json", tmpdir, tmpdir);
    char *err = read_text("stderr.txt");
    EXPECT(rc == 0, "train exited %d: %s", rc, err ? err : "");
    EXPECT(err && strstr(err, "18 training and 6 validation sentences") && strstr(err, "keras pooling"),
           "header: %s", err ? err : "");
    // The summary has the other trainers' shape: wall time, then the rate of step time that
    // the JSON's sentences_per_s gives.
    const char *summary = err ? strstr(err, "text classify train: 6 steps in ") : NULL;
    const char *rate = summary ? strstr(summary, " s wall; ") : NULL;
    EXPECT(rate && atof(rate + strlen(" s wall; ")) > 0 &&
               strstr(rate, " sentences/s of step time; valid accuracy "),
           "summary: %s", err ? err : "");
    free(err);
    EXPECT(scratch_exists(&sc, "run/model.safetensors") && scratch_exists(&sc, "run/loss.png") &&
               scratch_exists(&sc, "run/run.json"), "missing outputs");
    char *log = read_text("run/log.csv");
    EXPECT(log && strncmp(log, "step,train_loss,train_accuracy,valid_loss,valid_accuracy,", 57) == 0,
           "log.csv header: %s", log ? log : "");
    EXPECT(scratch_count_lines(log) == 7, "log.csv has %d lines, expected 1 + 6", scratch_count_lines(log));
    free(log);
    char *out = read_text("stdout.txt");
    cJSON *j = cJSON_Parse(out ? out : "");
    EXPECT(j != NULL, "no JSON: %s", out ? out : "");
    cJSON *steps = cJSON_GetObjectItem(j, "steps"), *va = cJSON_GetObjectItem(j, "valid_accuracy");
    EXPECT(cJSON_IsNumber(steps) && steps->valuedouble == 6, "steps");
    EXPECT(cJSON_IsNumber(va) && va->valuedouble >= 0 && va->valuedouble <= 1, "valid_accuracy");
    EXPECT(cJSON_IsNumber(cJSON_GetObjectItem(j, "valid_sentences")) &&
               cJSON_GetObjectItem(j, "valid_sentences")->valuedouble == 6, "valid_sentences");
    cJSON_Delete(j);
    free(out);
    // A second new run into the same folder is refused.
    rc = run_text("classify train " TINY " --data %s/s.tsv --steps 2 --out %s/run", tmpdir, tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "already holds a run");
}

static void test_resume_bit_identical(void) {
    int rc = run_text("classify train " TINY " --data %s/s.tsv --steps 7 --out %s/whole", tmpdir, tmpdir);
    EXPECT(rc == 0, "whole run exited %d", rc);
    rc = run_text("classify train " TINY " --data %s/s.tsv --steps 3 --out %s/part", tmpdir, tmpdir);
    EXPECT(rc == 0, "first part exited %d", rc);
    rc = run_text("classify train --steps 7 --resume --log-every 1 --out %s/part", tmpdir);
    char *err = read_text("stderr.txt");
    EXPECT(rc == 0, "resumed run exited %d: %s", rc, err ? err : "");
    free(err);
    char a[1024], b[1024], why[256];
    snprintf(a, sizeof a, "%s/whole/model.safetensors", tmpdir);
    snprintf(b, sizeof b, "%s/part/model.safetensors", tmpdir);
    EXPECT(checkpoints_identical(a, b, "train.step", why, sizeof why), "resume differs: %s", why);
    EXPECT(checkpoints_identical(a, b, "text.words", why, sizeof why), "word index differs: %s", why);
    char *log = read_text("part/log.csv");
    EXPECT(scratch_count_lines(log) == 8, "resumed log.csv has %d lines", scratch_count_lines(log));
    free(log);
    // Model flags differing on --resume are named with both values.
    rc = run_text("classify train --steps 8 --resume --hidden 6 --out %s/part", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "--hidden 6 (checkpoint: 5)");
    rc = run_text("classify train --steps 8 --resume --pool mean --out %s/part", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "--pool mean (checkpoint: keras)");
}

static void test_eval_json(void) {
    int rc = run_text("classify eval --model %s/run/model.safetensors --json", tmpdir);
    char *out = read_text("stdout.txt");
    EXPECT(rc == 0, "eval exited %d", rc);
    cJSON *j = cJSON_Parse(out ? out : "");
    EXPECT(j != NULL, "no JSON: %s", out ? out : "");
    cJSON *n = cJSON_GetObjectItem(j, "sentences"), *acc = cJSON_GetObjectItem(j, "accuracy");
    EXPECT(cJSON_IsNumber(n) && n->valuedouble == 6, "sentences");
    EXPECT(cJSON_IsNumber(acc) && acc->valuedouble >= 0 && acc->valuedouble <= 1, "accuracy");
    cJSON_Delete(j);
    free(out);
    rc = run_text("classify eval --model %s/run/model.safetensors --split all --json", tmpdir);
    expect_ok_with(rc, "stdout.txt", "\"sentences\": 24", "eval --split all");
}

static void test_predict(void) {
    write_file("in.txt", "good phone\nawful\n\nunknown words only\n");
    int rc = run_text("classify predict --model %s/run/model.safetensors < %s/in.txt", tmpdir, tmpdir);
    char *out = read_text("stdout.txt");
    EXPECT(rc == 0, "predict exited %d", rc);
    EXPECT(scratch_count_lines(out) == 4, "predict printed %d lines: %s", scratch_count_lines(out), out ? out : "");
    for (const char *p = out; p && *p;) {
        int label;
        double prob;
        EXPECT(sscanf(p, "%d\t%lf", &label, &prob) == 2 && (label == 0 || label == 1) &&
                   prob >= 0.5 && prob <= 1, "line '%.30s'", p);
        const char *nl = strchr(p, '\n');
        p = nl ? nl + 1 : NULL;
    }
    free(out);
    // A bad line: the lines before it are printed, then one error line naming it.
    write_file("bad.txt", "good\nbad\nba\xff" "d\nlater\n");
    rc = run_text("classify predict --model %s/run/model.safetensors --input %s/bad.txt", tmpdir, tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "bad.txt: line 3: invalid UTF-8 at byte 3");
    out = read_text("stdout.txt");
    EXPECT(scratch_count_lines(out) == 2, "printed %d lines before the bad one", scratch_count_lines(out));
    free(out);
}

static void test_report(void) {
    int rc = run_text("classify report %s/run", tmpdir);
    EXPECT(rc == 0, "report without eval exited %d", rc);
    char *html = read_text("run/report.html");
    EXPECT(html && strstr(html, "eval.json is missing") && strstr(html, "report_files/accuracy.png"),
           "report without eval.json");
    free(html);
    rc = run_text("classify eval --model %s/run/model.safetensors --json", tmpdir);
    char *out = read_text("stdout.txt");
    write_file("run/eval.json", out ? out : "");
    free(out);
    rc = run_text("classify report %s/run", tmpdir);
    EXPECT(rc == 0, "report exited %d", rc);
    html = read_text("run/report.html");
    EXPECT(html && strstr(html, "Validation accuracy") && strstr(html, "data-key=\"accuracy\"") &&
               strstr(html, "show/attention.png") && strstr(html, "keras; padding not masked"),
           "report.html lacks its sections");
    EXPECT(html && strstr(html, "sentences/s</th>") && !strstr(html, "images/s"),
           "the run table counts sentences");
    free(html);
    EXPECT(scratch_exists(&sc, "run/report_files/accuracy.png") && scratch_exists(&sc, "run/report_files/loss.png"),
           "report's curves");
    rc = run_text("classify report %s/nowhere", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "no model.safetensors here");
}

static void test_kfold(void) {
    int rc = run_text("classify train " TINY " --data %s/s.tsv --folds 4 --fold 1 --steps 2 --out %s/fold --json",
                      tmpdir, tmpdir);
    expect_ok_with(rc, "stderr.txt", "18 training and 6 validation sentences", "k-fold");
    rc = run_text("classify eval --model %s/fold/model.safetensors --json", tmpdir);
    expect_ok_with(rc, "stdout.txt", "\"sentences\": 6", "eval of fold 1");
    rc = run_text("classify train " TINY " --data %s/s.tsv --folds 4 --fold 4 --steps 2 --out %s/fold4",
                  tmpdir, tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "--fold: 4 is not one of the 4 folds");
}

static void test_show(void) {
    int rc = run_text("classify show --model %s/run/model.safetensors --split all --count 10 --out %s/run/show",
                      tmpdir, tmpdir);
    expect_ok_with(rc, "stderr.txt", "10 of 24 sentences", "show");
    EXPECT(scratch_exists(&sc, "run/show/attention.png"), "no attention.png");
    char *html = read_text("run/show/attention.html");
    EXPECT(html && strstr(html, "<!DOCTYPE html>") && strstr(html, "class=\"w\""), "attention.html");
    int rows = 0, wrong = 0, right_before_wrong = 0;
    for (const char *p = html; p && (p = strstr(p, "<div class=\"s")); p++) {
        int bad = strncmp(p, "<div class=\"s bad\"", 18) == 0;
        rows++;
        if (bad && rows > wrong + 1) right_before_wrong = 1;
        wrong += bad;
    }
    EXPECT(rows == 10, "%d sentences shown", rows);
    EXPECT(!right_before_wrong, "a right sentence before a wrong one");
    free(html);
}

static void test_three_classes(void) {
    write_file("three.tsv", "-1\tbad\n0\tso so\n5\tgreat\n-1\tawful\n0\tokay\n5\tsuperb\n"
                            "-1\tterrible\n0\tfine\n5\tgood\n-1\tbad bad\n0\tmeh\n5\tgreat great\n");
    int rc = run_text("classify train --T 4 --embed 3 --hidden 4 --batch 3 --steps 3 --pool mean "
                      "--masked --bidirectional --data %s/three.tsv --out %s/three", tmpdir, tmpdir);
    char *err = read_text("stderr.txt");
    EXPECT(rc == 0, "train exited %d: %s", rc, err ? err : "");
    EXPECT(err && strstr(err, "3 classes"), "header: %s", err ? err : "");
    free(err);
    write_file("in3.txt", "great\nbad\n");
    rc = run_text("classify predict --model %s/three/model.safetensors --input %s/in3.txt", tmpdir, tmpdir);
    char *out = read_text("stdout.txt");
    EXPECT(rc == 0 && scratch_count_lines(out) == 2, "predict: %d, %s", rc, out ? out : "");
    for (const char *p = out; p && *p;) {
        int label;
        EXPECT(sscanf(p, "%d", &label) == 1 && (label == -1 || label == 0 || label == 5), "label %.10s", p);
        const char *nl = strchr(p, '\n');
        p = nl ? nl + 1 : NULL;
    }
    free(out);
}

static void test_bad_input(void) {
    static const struct {
        const char *name, *text, *want;
    } cases[] = {
        {"empty.tsv", "", "empty.tsv: empty file"},
        {"label.tsv", "1\tgood\npos\tbad\n", "label.tsv: line 2: the label 'pos' is not an integer"},
        {"one.tsv", "1\tgood\n1\tgreat\n", "one.tsv: one class only"},
        {"utf8.tsv", "1\tgood\n0\tba\xc3\n", "utf8.tsv: line 2: not valid UTF-8"},
        {"tab.tsv", "1 good\n", "tab.tsv: line 1: no tab"},
        {"broken.json", "[{\"text\": \"a\", \"class\": 1},", "broken.json: invalid JSON at line 1"},
        {"class.json", "[{\"text\": \"a\", \"class\": \"yes\"}]", "class.json: entry 1: \"class\" is not an integer"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        write_file(cases[i].name, cases[i].text);
        int rc = run_text("classify train " TINY " --data %s/%s --steps 1 --out %s/bad%zu", tmpdir,
                          cases[i].name, tmpdir, i);
        EXPECT_ONE_LINE_ERROR(&sc, rc, cases[i].want);
        EXPECT(!scratch_exists(&sc, "bad%zu/model.safetensors", i), "%s: a model was written", cases[i].name);
    }
    // A sentence of 100,000 characters.
    size_t n = 100000;
    char *big = xmalloc(n + 32);
    strcpy(big, "0\tbad\n1\t");
    memset(big + 8, 'a', n);
    strcpy(big + 8 + n, "\n");
    write_file("big.tsv", big);
    free(big);
    int rc = run_text("classify train " TINY " --data %s/big.tsv --steps 1 --out %s/bigrun", tmpdir, tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "big.tsv: line 2: a sentence of 100000 bytes");
    rc = run_text("classify train " TINY " --data sentiment:nothing --steps 1 --out %s/spec", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "names no sentiment file");
    // A checkpoint of another program.
    char src[1024], dst[1024];
    snprintf(src, sizeof src, "%s/run/model.safetensors", tmpdir);
    snprintf(dst, sizeof dst, "%s/other.safetensors", tmpdir);
    if (checkpoint_rewrite_meta(src, dst, "format", "attend-classify-1") == 0) {
        rc = run_text("classify eval --model %s", dst);
        EXPECT_ONE_LINE_ERROR(&sc, rc, "not a text classifier checkpoint (format 'attend-classify-1'");
        rc = run_text("classify predict --model %s < /dev/null", dst);
        EXPECT_ONE_LINE_ERROR(&sc, rc, "not a text classifier checkpoint");
        char other[1024];
        snprintf(other, sizeof other, "%s/otherrun", tmpdir);
        Error merr;
        CHECK(make_dirs(other, &merr) == 0, "%s", merr.msg);
        snprintf(other, sizeof other, "%s/otherrun/model.safetensors", tmpdir);
        if (checkpoint_rewrite_meta(src, other, "format", "attend-classify-1") == 0) {
            rc = run_text("classify train --resume --steps 9 --out %s/otherrun", tmpdir);
            EXPECT_ONE_LINE_ERROR(&sc, rc, "not a text classifier checkpoint");
        }
    }
    rc = run_text("classify eval --model %s/none.safetensors", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "none.safetensors");
    // A refused --resume leaves the run's checkpoint as it was.
    char why[256];
    snprintf(dst, sizeof dst, "%s/run_copy.safetensors", tmpdir);
    EXPECT(checkpoint_rewrite_meta(src, dst, "format", "attend-text-classify-1") == 0);
    rc = run_text("classify train --resume --steps 9 --data %s/empty.tsv --out %s/run", tmpdir, tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "--data");
    EXPECT(checkpoints_identical(src, dst, "train.step", why, sizeof why), "%s", why);
}

static void test_bow(void) {
    int rc = run_text("classify train " TINY " --pool bow --lr 0.1 --data %s/s.tsv --steps 40 --out %s/bow --json",
                      tmpdir, tmpdir);
    char *err = read_text("stderr.txt");
    EXPECT(rc == 0, "bow train exited %d: %s", rc, err ? err : "");
    EXPECT(err && strstr(err, "bag-of-words logistic regression") && !strstr(err, "LSTM"), "header: %s",
           err ? err : "");
    free(err);
    expect_resume_matches("bow", TINY " --pool bow --lr 0.1", 20, 40);
    expect_most_right("bow");
    write_file("inbow.txt", "very good\nawful and bad\n");
    rc = run_text("classify predict --model %s/bow/model.safetensors --input %s/inbow.txt", tmpdir, tmpdir);
    char *out = read_text("stdout.txt");
    EXPECT(rc == 0 && out && strncmp(out, "1\t", 2) == 0 && strstr(out, "\n0\t"), "predict: %s", out ? out : "");
    free(out);
    rc = run_text("classify show --model %s/bow/model.safetensors --split all --count 4 --out %s/bow/show",
                  tmpdir, tmpdir);
    EXPECT(rc == 0 && scratch_exists(&sc, "bow/show/attention.png"), "show of a bag of words: %d", rc);
    // Hashed bigrams: trained, kept in the checkpoint, refused with another count or pooling.
    rc = run_text("classify train " TINY " --pool bow --bigrams 64 --data %s/s.tsv --steps 10 --out %s/bi --json",
                  tmpdir, tmpdir);
    expect_ok_with(rc, "stderr.txt", "(64 bigram buckets)", "bigrams");
    rc = run_text("classify eval --model %s/bi/model.safetensors --json", tmpdir);
    EXPECT(rc == 0, "eval of a bigram model exited %d", rc);
    rc = run_text("classify train --steps 12 --resume --bigrams 32 --out %s/bi", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "--bigrams 32 (checkpoint: 64)");
    rc = run_text("classify train " TINY " --bigrams 64 --data %s/s.tsv --steps 1 --out %s/bi-lstm", tmpdir, tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "only with the bow pooling");
}

// --nb: the naive-Bayes scaled bag of words trains, resumes bit for bit (bow.nb, fitted
// once, rides in the checkpoint), evaluates; refused without bow or with three classes.
static void test_bow_nb(void) {
    int rc = run_text("classify train " TINY " --pool bow --nb --bigrams 16 --lr 0.1 --data %s/s.tsv --steps 40 --out %s/nb --json",
                      tmpdir, tmpdir);
    expect_ok_with(rc, "stderr.txt", "naive-Bayes scaled", "nb train");
    expect_resume_matches("nb", TINY " --pool bow --nb --bigrams 16 --lr 0.1", 20, 40);
    expect_most_right("nb");
    rc = run_text("classify train --steps 41 --resume --nb --out %s/bow", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "--nb");
    rc = run_text("classify train " TINY " --nb --data %s/s.tsv --steps 1 --out %s/nb-lstm", tmpdir, tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "naive-Bayes scaling needs the bow pooling and two classes");
    rc = run_text("classify train " TINY " --pool bow --nb --batch 2 --data %s/three.tsv --steps 1 --out %s/nb3", tmpdir, tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "naive-Bayes scaling needs the bow pooling and two classes");
}

// --word-scores --nb: trains (the scores start at the words' naive-Bayes ratios), resumes
// bit-identical to an unbroken run, refuses a resume that changes it and the last state;
// the same with --bigrams (the pairs' scores).
static void test_word_scores(void) {
    int rc = run_text("classify train " TINY " --word-scores --nb --data %s/s.tsv --steps 6 --out %s/ws --json",
                      tmpdir, tmpdir);
    expect_ok_with(rc, "stderr.txt", "word scores from naive-Bayes ratios", "word scores");
    expect_resume_matches("ws", TINY " --word-scores --nb", 3, 6);
    rc = run_text("classify train --steps 7 --resume --word-scores --out %s/bow", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "--word-scores");
    rc = run_text("classify train " TINY " --pool last --word-scores --data %s/s.tsv --steps 1 --out %s/ws-last",
                  tmpdir, tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "word scores need the keras, query or mean pooling");
    // With --bigrams: the pairs' scores too, kept through a resume bit for bit.
    rc = run_text("classify train " TINY " --word-scores --nb --bigrams 16 --data %s/s.tsv --steps 6 --out %s/wsb --json",
                  tmpdir, tmpdir);
    expect_ok_with(rc, "stderr.txt", "word scores from naive-Bayes ratios (and of bigrams)", "bigram scores");
    expect_resume_matches("wsb", TINY " --word-scores --nb --bigrams 16", 3, 6);
}

// --inner-folds J --inner-fold I: fold 1 of 4 (6 sentences) held out, the other 18 split
// 3 ways: 12 train, 6 validate; eval's splits are the inner ones. The same on Keras's
// split (its last share held out), and with --inner-tail.
static void test_inner_folds(void) {
    int rc = run_text("classify train " TINY " --data %s/s.tsv --folds 4 --fold 1 --inner-folds 3 --inner-fold 2 --steps 2 --out %s/inner",
                      tmpdir, tmpdir);
    expect_ok_with(rc, "stderr.txt", "12 training and 6 validation sentences", "inner folds");
    rc = run_text("classify eval --model %s/inner/model.safetensors --split train --json", tmpdir);
    expect_ok_with(rc, "stdout.txt", "\"sentences\": 12", "eval of the inner training part");
    rc = run_text("classify train --steps 3 --resume --inner-fold 1 --out %s/inner", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "--inner-fold 1 (checkpoint: 2)");
    // On Keras's split: the last quarter (6) held out, the first 18 split 3 ways.
    rc = run_text("classify train " TINY " --data %s/s.tsv --valid-share 0.25 --inner-folds 3 --inner-fold 0 --steps 2 --out %s/inner-keras",
                  tmpdir, tmpdir);
    expect_ok_with(rc, "stderr.txt", "12 training and 6 validation sentences", "inner folds on Keras's split");
    rc = run_text("classify train " TINY " --data %s/s.tsv --inner-folds 1 --steps 2 --out %s/inner-one", tmpdir, tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "--inner-folds: 1 inner folds; they are >= 2");
    // --inner-tail 9: only the last 9 of those 18 are dealt (3 validate), the first 9
    // train in every inner fold (15 train); kept in the checkpoint (eval's splits and a
    // resume); a tail past the 18 is refused.
    rc = run_text("classify train " TINY " --data %s/s.tsv --valid-share 0.25 --inner-folds 3 --inner-fold 1 --inner-tail 9 --steps 2 --out %s/inner-tail",
                  tmpdir, tmpdir);
    expect_ok_with(rc, "stderr.txt", "15 training and 3 validation sentences", "an inner tail");
    rc = run_text("classify eval --model %s/inner-tail/model.safetensors --split valid --json", tmpdir);
    expect_ok_with(rc, "stdout.txt", "\"sentences\": 3", "eval of the inner tail's fold");
    rc = run_text("classify train --steps 3 --resume --inner-tail 6 --out %s/inner-tail", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "--inner-tail 6 (checkpoint: 9)");
    rc = run_text("classify train " TINY " --data %s/s.tsv --valid-share 0.25 --inner-folds 3 --inner-tail 19 --steps 2 --out %s/inner-tail-big",
                  tmpdir, tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "--inner-tail: 19 sentences, but the outer split trains on 18");
}

// --masked counts each sentence's words from the first step (lengths mask t >= len), so
// with pre-padding it would mask the words and read the padding: refused.
static void test_masked_needs_post_padding(void) {
    int rc = run_text("classify train " TINY " --masked --padding pre --data %s/s.tsv --steps 1 --out %s/mpre",
                      tmpdir, tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "--masked needs --padding post");
    EXPECT(!scratch_exists(&sc, "mpre/model.safetensors"), "a refused run writes no checkpoint");
    rc = run_text("classify train " TINY " --masked --padding post --data %s/s.tsv --steps 1 --out %s/mpost",
                  tmpdir, tmpdir);
    EXPECT(rc == 0, "--masked with post-padding trains: %d", rc);
}

// --recurrent-activation hard_sigmoid: said at the start, recorded in the checkpoint
// (text.recurrent_activation; its weights differ from the sigmoid run's of the same flags),
// resumed bit for bit, refused when --resume names the other, read by eval (its accuracy is
// the training's last validation).
static void test_hard_sigmoid(void) {
    int rc = run_text("classify train " TINY " --recurrent-activation hard_sigmoid --data %s/s.tsv --steps 7 --out %s/hard --json",
                      tmpdir, tmpdir);
    char *err = read_text("stderr.txt"), *out = read_text("stdout.txt");
    EXPECT(rc == 0 && err && strstr(err, "(hard_sigmoid gates)"), "hard train: %d, %s", rc, err ? err : "");
    cJSON *j = cJSON_Parse(out ? out : "");
    cJSON *va = cJSON_GetObjectItem(j, "valid_accuracy");
    double train_acc = cJSON_IsNumber(va) ? va->valuedouble : -1;
    cJSON_Delete(j);
    free(err), free(out);
    char a[1024], b[1024], why[256];
    snprintf(a, sizeof a, "%s/hard/model.safetensors", tmpdir);
    snprintf(b, sizeof b, "%s/whole/model.safetensors", tmpdir);
    EXPECT(!checkpoints_identical(a, b, "train.step", why, sizeof why), "hard_sigmoid changed nothing");
    expect_resume_matches("hard", TINY " --recurrent-activation hard_sigmoid", 3, 7);
    rc = run_text("classify train --steps 8 --resume --recurrent-activation sigmoid --out %s/hard", tmpdir);
    EXPECT_ONE_LINE_ERROR(&sc, rc, "--recurrent-activation sigmoid (checkpoint: hard_sigmoid)");
    rc = run_text("classify eval --model %s/hard/model.safetensors --json", tmpdir);
    out = read_text("stdout.txt");
    j = cJSON_Parse(out ? out : "");
    cJSON *acc = cJSON_GetObjectItem(j, "accuracy");
    EXPECT(rc == 0 && cJSON_IsNumber(acc) && acc->valuedouble == train_acc, "eval: %s (train %g)",
           out ? out : "", train_acc);
    cJSON_Delete(j);
    free(out);
}

int main(void) {
    if (scratch_open(&sc, "test_cli_text", "text")) return 1;
    tmpdir = sc.dir;
    write_binary_tsv();
    RUN(test_train_writes_outputs);
    RUN(test_resume_bit_identical);
    RUN(test_hard_sigmoid);
    RUN(test_eval_json);
    RUN(test_predict);
    RUN(test_show);
    RUN(test_report);
    RUN(test_kfold);
    RUN(test_three_classes);
    RUN(test_bow);
    RUN(test_bow_nb);
    RUN(test_inner_folds);
    RUN(test_word_scores);
    RUN(test_bad_input);
    RUN(test_masked_needs_post_padding);
    scratch_remove(sc.dir);
    return test_summary();
}
