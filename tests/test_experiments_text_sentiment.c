// test_experiments_text_sentiment.c: experiments/text_sentiment.sh, the sentence
// classifier's tables, with a stand-in bin/text (tests/support/stand_in.h) whose
// `classify train --json` prints a validation accuracy made from its --pool, --seed and
// --fold, so the test trains nothing: the demo's table (mean, sd and the 95 % t-interval
// over the seeds, and the verdict on attention against the last state), a pooling row,
// a 10-fold row on the file it names with every fold run, the AFINN row through
// experiments/text_afinn.js and a stand-in `sentiment` package (when node is there), a
// second run that trains nothing again and keeps every table, a rebuilt program's runs
// trained again (stale), the target's verdict on its
// best row, and an unknown part refused. The select part (nested cross-validation) with a
// stand-in whose accuracy depends on --embed-l2 and the fold: each outer fold's L2 is the
// best on its inner folds, the outer fold is scored once with it, and the verdict. The
// select-attn and demo-selected parts: the attention try chosen on the inner folds of the
// demo's training sentences, then run on the demo's split beside its last-state twin; the
// select-attn-tail and demo-selected-tail parts: the same on inner folds of the last
// training sentences only, with the bag of words and the paired difference beside. Run
// from the repository root (as tests/run.sh is).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/support/scratch.h"
#include "tests/support/stand_in.h"
#include "tests/support/test.h"

static char dir[256];

// Accuracy 0.70 + seed / 100 + fold / 1000, and 0.05 more with --pool keras.
static void write_stand_in(void) {
    EXPECT(stand_in_write(dir, "text",
                          "[ \"$1 $2\" = 'classify train' ] || exit 0\n"
                          "seed=1 fold=0 bonus=0\n"
                          "while [ $# -gt 0 ]; do\n"
                          "  case $1 in --seed) seed=$2 ;; --fold) fold=$2 ;; --pool) [ \"$2\" = keras ] && bonus=5 ;; esac\n"
                          "  shift\n"
                          "done\n"
                          "awk -v s=$seed -v f=$fold -v b=$bonus 'BEGIN { printf \"{\\\"steps\\\": 160, "
                          "\\\"valid_accuracy\\\": %.6f, \\\"seconds\\\": 1}\\n\", 0.70 + (s + b) / 100 + f / 1000 }'\n") == 0,
           "cannot write the stand-in");
}

static int count(const char *text, const char *what) {
    int n = 0;
    for (const char *p = text; p && (p = strstr(p, what)); p++) n++;
    return n;
}

static void test_demo_table(void) {
    write_stand_in();
    int st = stand_in_run(dir, NULL, "SEEDS=3", "text_sentiment.sh demo");
    char *err = stand_in_read(dir, "err.txt");
    EXPECT(st == 0, "exit status %d: %s", st, err ? err : "");
    free(err);
    char *called = stand_in_read(dir, "called.txt");
    EXPECT(count(called, "classify train --pool last --seed ") == 3 &&
               count(called, "classify train --pool keras --seed ") == 3,
           "three seeds of each model: %s", called ? called : "(not run)");
    free(called);
    char *page = stand_in_read(dir, "results.md");
    // last: 71, 72, 73: mean 72, sd 1, t(0.975, 2) = 4.303, half width 4.303 / sqrt 3 = 2.48.
    EXPECT(page && strstr(page, "| no attention (last state) | `--pool last` | 3 | 72.00 % | 1.00 | 69.52 - 74.48 | 71.00 - 73.00 | 77 % |"),
           "the last state's row:\n%s", page ? page : "");
    EXPECT(page && strstr(page, "| attention (keras) | `--pool keras` | 3 | 77.00 % | 1.00 | 74.52 - 79.48 | 76.00 - 78.00 | 81.25 % |"),
           "the attention's row:\n%s", page ? page : "");
    EXPECT(page && strstr(page, "+5.00 points") && strstr(page, "do not overlap"), "the verdict:\n%s",
           page ? page : "");
    EXPECT(page && strstr(page, "t-interval"), "the page does not say what the interval is");
    free(page);
}

static void test_pools_and_folds(void) {
    write_stand_in();
    // A stand-in `sentiment` package and data: "good" scores 1, "bad" -1.
    char path[600];
    snprintf(path, sizeof path, "%s/pkg", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/pkg/lib", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/pkg/lib/index.js", dir);
    EXPECT(scratch_write_text(path, "module.exports = function () {\n"
                                    "  this.analyze = function (t) { return { comparative: t.includes('bad') ? -1 : t.includes('good') ? 1 : 0 }; };\n"
                                    "};\n") == 0, "cannot write %s", path);
    snprintf(path, sizeof path, "%s/pkg/package.json", dir);
    EXPECT(scratch_write_text(path, "{}\n") == 0, "cannot write %s", path);
    snprintf(path, sizeof path, "%s/data", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/data/sentiment", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/data/sentiment/yelp.json", dir);
    // good/1 right, bad/0 right, "meh"/0 wrong (no word: positive), bad/1 wrong; the null row dropped.
    EXPECT(scratch_write_text(path, "[{\"text\": \"good\", \"class\": 1}, {\"text\": \"bad\", \"class\": 0},\n"
                                    "{\"text\": \"meh\", \"class\": 0}, {\"text\": \"not bad\", \"class\": 1},\n"
                                    "{\"text\": \"\", \"class\": null}]\n") == 0, "cannot write %s", path);
    char env[1500];
    snprintf(env, sizeof env, "SEEDS=3 POOL_ROWS='bow query-multi-head' POOL_SEEDS=1 FOLDS=4 FOLD_DATA=yelp "
                              "FOLD_ROWS=last AFINN_PKG='%s/pkg' DATA_ROOT='%s/data'", dir, dir);
    int st = stand_in_run(dir, NULL, env, "text_sentiment.sh pools folds");
    char *err = stand_in_read(dir, "err.txt");
    EXPECT(st == 0, "exit status %d: %s", st, err ? err : "");
    free(err);
    char *called = stand_in_read(dir, "called.txt");
    EXPECT(called && strstr(called, "classify train --pool bow --lr 1e-2 --epochs 30 --embed-l2 1e-4 --seed 1 ") &&
               strstr(called, "--pool query --attention multi-head --heads 4 --seed 1 "),
           "the pooling rows' flags: %s", called ? called : "(not run)");
    for (int i = 0; i < 4; i++) {
        char want[200];
        snprintf(want, sizeof want, "--data sentiment:yelp --pool last --folds 4 --fold %d --data-root ", i);
        EXPECT(called && strstr(called, want), "fold %d not trained: %s", i, called ? called : "(not run)");
    }
    free(called);
    char *page = stand_in_read(dir, "results.md");
    EXPECT(page && strstr(page, "| bow | `--pool bow --lr 1e-2 --epochs 30 --embed-l2 1e-4` | 1 | 71.00 % | - | - | 71.00 - 71.00 |"),
           "the bow row:\n%s", page ? page : "");
    // Folds 0..3 of seed 1: 71.0, 71.1, 71.2, 71.3.
    EXPECT(page && strstr(page, "| yelp | last | `--pool last` | 4 | 71.15 % | 0.13 |"), "the fold row:\n%s",
           page ? page : "");
    if (system("command -v node > /dev/null 2>&1") == 0)
        EXPECT(page && strstr(page, "| yelp | AFINN | the `sentiment` package, comparative score >= 0 is positive | - | 50.00 % |"),
               "the AFINN row:\n%s", page ? page : "");
    EXPECT(page && strstr(page, "## The demo's table"), "the demo's table was lost");
    free(page);
    // Again: nothing is trained twice, the tables stay.
    snprintf(path, sizeof path, "%s/called.txt", dir);
    remove(path);
    st = stand_in_run(dir, NULL, env, "text_sentiment.sh demo pools folds");
    EXPECT(st == 0, "second run: exit status %d", st);
    called = stand_in_read(dir, "called.txt");
    EXPECT(count(called, "classify train") == 0, "a finished run was trained again: %s", called ? called : "");
    free(called);
    page = stand_in_read(dir, "results.md");
    EXPECT(page && count(page, "\n## ") == 3, "the page should hold three tables:\n%s", page ? page : "");
    free(page);
    // A rebuilt program (the stand-in changed by one comment): its finished runs are stale and
    // train again.
    snprintf(path, sizeof path, "%s/bin/text", dir);
    FILE *bin = fopen(path, "a");
    EXPECT(bin && fputs("# rebuilt\n", bin) >= 0 && fclose(bin) == 0, "cannot change the stand-in");
    snprintf(path, sizeof path, "%s/called.txt", dir);
    remove(path);
    st = stand_in_run(dir, NULL, "SEEDS=3", "text_sentiment.sh demo");
    EXPECT(st == 0, "run after a rebuild: exit status %d", st);
    called = stand_in_read(dir, "called.txt");
    EXPECT(count(called, "classify train --pool keras --seed ") == 3 && count(called, "classify train --pool last --seed ") == 3,
           "a rebuilt program should train the demo's runs again: %s", called ? called : "(none)");
    free(called);
    // The target: every try on the merged sentences, and the best of them against 85 %.
    st = stand_in_run(dir, NULL, "FOLDS=2 TARGET_ROWS='bow keras'", "text_sentiment.sh target");
    EXPECT(st == 0, "target: exit status %d", st);
    page = stand_in_read(dir, "results.md");
    EXPECT(page && strstr(page, "| all | keras | `--pool keras` | 2 | 76.05 % |") &&
               strstr(page, "Best: keras (`--pool keras`) at 76.05 % mean 2-fold accuracy: the 85 % target is not reached."),
           "the target's rows and verdict:\n%s", page ? page : "");
    free(page);
    st = stand_in_run(dir, NULL, "", "text_sentiment.sh nonsense");
    EXPECT(st == 2, "an unknown part: exit status %d", st);
    err = stand_in_read(dir, "err.txt");
    EXPECT(err && strstr(err, "text_sentiment.sh: unknown part 'nonsense'"), "%s", err ? err : "");
    free(err);
}

// Accuracy 0.80 + fold / 100, and 0.05 more for L2 1e-4 on outer fold 0 and 1e-5 on fold 1.
static void write_select_stand_in(void) {
    EXPECT(stand_in_write(dir, "text",
                          "[ \"$1 $2\" = 'classify train' ] || exit 0\n"
                          "fold=0 l2=x\n"
                          "while [ $# -gt 0 ]; do\n"
                          "  case $1 in --fold) fold=$2 ;; --embed-l2) l2=$2 ;; esac\n"
                          "  shift\n"
                          "done\n"
                          "bonus=0; [ \"$fold$l2\" = 01e-4 ] && bonus=5; [ \"$fold$l2\" = 11e-5 ] && bonus=5\n"
                          "awk -v f=$fold -v b=$bonus 'BEGIN { printf \"{\\\"steps\\\": 10, "
                          "\\\"valid_accuracy\\\": %.6f, \\\"seconds\\\": 1}\\n\", 0.80 + (f + b) / 100 }'\n") == 0,
           "cannot write the stand-in");
}

static void test_select(void) {
    write_select_stand_in();
    int st = stand_in_run(dir, NULL, "FOLDS=2 SELECT_INNER=2", "text_sentiment.sh select");
    char *err = stand_in_read(dir, "err.txt");
    EXPECT(st == 0, "exit status %d: %s", st, err ? err : "");
    free(err);
    char *called = stand_in_read(dir, "called.txt");
    // 2 outer folds x 3 L2 x 2 inner folds, then one run per outer fold.
    EXPECT(count(called, "--inner-folds 2 --inner-fold ") == 12 && count(called, "classify train") == 14,
           "the nested runs: %s", called ? called : "(not run)");
    EXPECT(called && strstr(called, "--embed-l2 1e-4 --folds 2 --fold 0 --data-root") &&
               strstr(called, "--embed-l2 1e-5 --folds 2 --fold 1 --data-root"),
           "each outer fold trained with its chosen L2: %s", called ? called : "");
    free(called);
    char *page = stand_in_read(dir, "results.md");
    EXPECT(page && strstr(page, "| 0 | 1e-3: 80.00 / 1e-4: 85.00 / 1e-5: 80.00 | 1e-4 | 85.00 % |") &&
               strstr(page, "| 1 | 1e-3: 81.00 / 1e-4: 81.00 / 1e-5: 86.00 | 1e-5 | 86.00 % |"),
           "the per-fold rows:\n%s", page ? page : "");
    EXPECT(page && strstr(page, "over 2 outer folds of 2: 85.50 %") && strstr(page, "The 85 % target is reached."),
           "the verdict:\n%s", page ? page : "");
    free(page);
}

// Accuracy 0.78 + (seed + inner fold) / 100, and 0.04 more with --word-scores.
static void write_select_attn_stand_in(void) {
    EXPECT(stand_in_write(dir, "text",
                          "[ \"$1 $2\" = 'classify train' ] || exit 0\n"
                          "fold=0 seed=1 bonus=0\n"
                          "while [ $# -gt 0 ]; do\n"
                          "  case $1 in --inner-fold) fold=$2 ;; --seed) seed=$2 ;; --word-scores) bonus=4 ;; esac\n"
                          "  shift\n"
                          "done\n"
                          "awk -v f=$fold -v s=$seed -v b=$bonus 'BEGIN { printf \"{\\\"steps\\\": 10, "
                          "\\\"valid_accuracy\\\": %.6f, \\\"seconds\\\": 1}\\n\", 0.78 + (s + f + b) / 100 }'\n") == 0,
           "cannot write the stand-in");
}

// select-attn scores each try on the inner folds of the demo's training part alone (no
// --seed, no demo split) and keeps the best; demo-selected then runs it and its last-state
// twin on the demo's split, seeds 1..SEEDS, with the verdict on 81.25 %; demo-selected
// before a choice is refused.
static void test_select_attn(void) {
    write_select_attn_stand_in();
    int st = stand_in_run(dir, NULL, "SEEDS=3", "text_sentiment.sh demo-selected");
    EXPECT(st == 2, "demo-selected before select-attn: exit status %d", st);
    char *err = stand_in_read(dir, "err.txt");
    EXPECT(err && strstr(err, "demo-selected needs the choice of select-attn"), "%s", err ? err : "");
    free(err);
    st = stand_in_run(dir, NULL, "SEEDS=3 SELECT_ATTN_INNER=2 SELECT_ATTN_ROWS='keras ws-keras-nb keras-bi-masked'",
                      "text_sentiment.sh select-attn demo-selected");
    err = stand_in_read(dir, "err.txt");
    EXPECT(st == 0, "exit status %d: %s", st, err ? err : "");
    free(err);
    char *called = stand_in_read(dir, "called.txt");
    // 4 rows (the last state's too) x 2 inner folds, then 3 seeds of the choice and its twin.
    EXPECT(count(called, "--inner-folds 2 --inner-fold ") == 8, "the inner runs: %s", called ? called : "(not run)");
    EXPECT(called && strstr(called, "classify train --pool keras --word-scores --nb --inner-folds 2 --inner-fold 1 --data-root"),
           "a try's inner run: %s", called ? called : "");
    EXPECT(count(called, "classify train --pool keras --word-scores --nb --seed ") == 3 &&
               count(called, "classify train --pool last --seed ") == 3,
           "the choice and its twin on the demo's split: %s", called ? called : "");
    free(called);
    char *page = stand_in_read(dir, "results.md");
    EXPECT(page && strstr(page, "| ws-keras-nb | `--pool keras --word-scores --nb` | 83.00 / 84.00 | 83.50 % |") &&
               strstr(page, "| keras | `--pool keras` | 79.00 / 80.00 | 79.50 % |"),
           "the tries' rows:\n%s", page ? page : "");
    EXPECT(page && strstr(page, "Chosen: ws-keras-nb (`--pool keras --word-scores --nb`), 83.50 % mean inner accuracy."),
           "the choice:\n%s", page ? page : "");
    // The choice: 83, 84, 85; its twin: 79, 80, 81.
    EXPECT(page && strstr(page, "| attention (keras) | `--pool keras --word-scores --nb` | 3 | 84.00 % | 1.00 |") &&
               strstr(page, "| no attention (last state) | `--pool last` | 3 | 80.00 % | 1.00 |"),
           "the demo rows of the choice:\n%s", page ? page : "");
    EXPECT(page && strstr(page, "+4.00 points") &&
               strstr(page, "The chosen attention model: 84.00 % mean over 3 seeds; the 81.25 % target is reached."),
           "the verdict:\n%s", page ? page : "");
    free(page);
}

// select-attn-tail: the same choice made on inner folds of only the last SELECT_TAIL
// training sentences (--inner-tail after the inner fold's flags), the first listed try's
// twin beside; demo-selected-tail then runs the choice, its twin and the bag of words on
// the demo's split, with the seed-by-seed paired difference; before a choice it is refused.
static void test_select_attn_tail(void) {
    write_select_attn_stand_in();
    int st = stand_in_run(dir, NULL, "SEEDS=3", "text_sentiment.sh demo-selected-tail");
    EXPECT(st == 2, "demo-selected-tail before select-attn-tail: exit status %d", st);
    char *err = stand_in_read(dir, "err.txt");
    EXPECT(err && strstr(err, "demo-selected-tail needs the choice of select-attn-tail"), "%s", err ? err : "");
    free(err);
    st = stand_in_run(dir, NULL, "SEEDS=3 SELECT_ATTN_INNER=2 SELECT_TAIL=50 SELECT_TAIL_ROWS='keras ws-keras-nb'",
                      "text_sentiment.sh select-attn-tail demo-selected-tail");
    err = stand_in_read(dir, "err.txt");
    EXPECT(st == 0, "exit status %d: %s", st, err ? err : "");
    free(err);
    char *called = stand_in_read(dir, "called.txt");
    // 3 rows (the first try's twin too) x 2 inner folds, each with the tail.
    EXPECT(count(called, "--inner-folds 2 --inner-fold ") == 6 && count(called, "--inner-tail 50 --data-root") == 6,
           "the inner runs: %s", called ? called : "(not run)");
    EXPECT(called && strstr(called, "classify train --pool keras --word-scores --nb --inner-folds 2 --inner-fold 1 --inner-tail 50 --data-root"),
           "a try's inner run: %s", called ? called : "");
    free(called);
    char *page = stand_in_read(dir, "results.md");
    EXPECT(page && strstr(page, "## A second attempt: choosing on the Yelp sentences") &&
               strstr(page, "| ws-keras-nb | `--pool keras --word-scores --nb` | 83.00 / 84.00 | 83.50 % |") &&
               strstr(page, "| last-twin-keras (not eligible: no attention) | `--pool last` | 79.00 / 80.00 | 79.50 % |"),
           "the tries' rows:\n%s", page ? page : "");
    EXPECT(page && count(page, "Chosen: ws-keras-nb (`--pool keras --word-scores --nb`), 83.50 % mean inner accuracy.") == 2,
           "the choice (and the first attempt's, kept):\n%s", page ? page : "");
    // The choice: 83, 84, 85; its twin and the bag of words: 79, 80, 81.
    EXPECT(page && strstr(page, "| no attention (bag of words) | `--pool bow --nb --lr 1e-2 --epochs 30 --embed-l2 1e-4 --T 128 --bigrams 65536` | 3 | 80.00 % | 1.00 |"),
           "the bag of words' row:\n%s", page ? page : "");
    EXPECT(page && strstr(page, "Paired by seed (attention minus its twin, 3 seeds): +4.00 points, sd 0.00, 95 % t-interval 4.00 - 4.00: attention beats the last state beyond the interval."),
           "the paired line:\n%s", page ? page : "");
    EXPECT(page && count(page, "The chosen attention model: 84.00 % mean over 3 seeds; the 81.25 % target is reached.") == 2,
           "the verdict:\n%s", page ? page : "");
    free(page);
}

int main(void) {
    if (scratch_make(dir, sizeof dir, "test_experiments_text_sentiment")) return 1;
    RUN(test_demo_table);
    RUN(test_pools_and_folds);
    RUN(test_select);
    RUN(test_select_attn);
    RUN(test_select_attn_tail);
    scratch_remove(dir);
    return test_summary();
}
