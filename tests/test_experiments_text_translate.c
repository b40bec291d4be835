// test_experiments_text_translate.c: experiments/text_translate.sh, the translator's tables,
// with a stand-in bin/text (tests/support/stand_in.h) that trains nothing: `translate train`
// appends one row to the run's log.csv (its seconds: --minutes times 60, or 10) and prints
// the steps, `eval` and `score` print figures made from the run's attention. Checked: the
// date task's rows (none without an alignment figure), a second run that trains nothing
// again, the recipe's runs over seeds and the exact match by source length with intervals, the English-Spanish row (minutes in all, BLEU and chrF with their intervals), the
// BLEU-by-length table, the transformer rows (--model transformer with its recipe, the date
// row's alignment figure, the English-Spanish row beside the LSTM's), the continuation commands, a larger budget training only the
// minutes left, a step budget (BIBLE_STEPS) trained to and then kept, the paired table
// (sacreBLEU's paired bootstrap of runs of the same steps), the date stages (kinds, levers
// on the validation split, the recipe on both splits; DATES_STAGES, dates-STAGE, an
// unknown stage refused), each section written whole from one run folder or kept whole
// from the page by a run folder without its runs, and an unknown part refused. Run from
// the repository root.
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/scratch.h"
#include "tests/support/stand_in.h"
#include "tests/support/test.h"

static char dir[256];

static void write_stand_in(void) {
    EXPECT(stand_in_write(dir, "text",
                          "[ \"$1\" = translate ] || exit 0\n"
                          "cmd=$2; shift 2\n"
                          "out='' model='' att=bahdanau steps=0 minutes='' misses='' wh='' bh=''\n"
                          "while [ $# -gt 0 ]; do\n"
                          "  case $1 in --out) out=$2 ;; --model) model=$2; [ \"$2\" = transformer ] && att=transformer ;; --attention) att=$2 ;;\n"
                          "    --steps) steps=$2 ;; --minutes) minutes=$2 ;; --misses) misses=$2 ;; --write-hyps) wh=$2 ;; --baseline-hyps) bh=$2 ;; esac\n"
                          "  shift\n"
                          "done\n"
                          "case $cmd in\n"
                          "train)\n"
                          "  [ -f \"$out/log.csv\" ] || echo step,train_loss,valid_loss,grad_norm,grad_norm_max,seconds > \"$out/log.csv\"\n"
                          "  secs=$(awk -v m=\"$minutes\" 'BEGIN { print (m == \"\" ? 10 : m * 60) }')\n"
                          "  [ -n \"$minutes\" ] && steps=$(( $(cat \"$out/steps\" 2> /dev/null || echo 0) + 100 ))\n"
                          "  echo $steps > \"$out/steps\"\n"
                          "  echo \"$steps,1,1,1,1,$secs\" >> \"$out/log.csv\"\n"
                          "  : > \"$out/model.safetensors\"\n"
                          "  echo \"{\\\"steps\\\": $steps, \\\"final_loss\\\": 2.5, \\\"valid_loss\\\": 3.25}\" ;;\n"
                          "eval)\n"
                          "  case $model in *none*) a=null lb=0.2 ;; *) a=0.8 lb=1 ;; esac\n"
                          "  case $model in *recipe-seed2*) e=1 ;; *) e=0.9 ;; esac\n"
                          "  [ -z \"$misses\" ] || printf 'example\\tformat\\tsource\\ttarget\\tchar\\tdigit\\tfield\\tspan_start\\tspan_end\\tpeak\\tpeak_char\\toffset\\texact\\n"
                          "0\\tD MM YY\\t3 03 87\\t1987-03-03\\t1\\t9\\tyear\\t5\\t7\\t4\\t \\t-1\\t1\\n"
                          "1\\tD MMM YY\\t3 mar 87\\t1987-03-03\\t8\\t0\\tday\\t0\\t1\\t1\\t \\t1\\t1\\n' > \"$misses\"\n"
                          "  echo \"{\\\"pairs\\\": 10, \\\"exact_match\\\": $e, \\\"alignment_accuracy\\\": $a, \\\"by_source_length\\\": "
                          "[{\\\"from\\\": 1, \\\"to\\\": 10, \\\"pairs\\\": 4, \\\"exact_match\\\": 0.5}, "
                          "{\\\"from\\\": 31, \\\"to\\\": 40, \\\"pairs\\\": 20, \\\"exact_match\\\": $lb}]}\" ;;\n"
                          "score)\n"
                          "  [ -z \"$wh\" ] || echo hypothesis > \"$wh\"\n"
                          "  [ -z \"$bh\" ] || { echo '{\"pairs\": 8, \"bleu\": 12.345, \"by_length\": [{\"lo\": 0, \"hi\": -1, "
                          "\"sentences\": 8, \"bleu\": 12.345}], \"baseline_hyps\": \"b\", \"baseline_bleu\": 10.5, \"bleu_diff\": 1.845, "
                          "\"bleu_diff_mean\": 1.8, \"bleu_diff_lower\": 0.25, \"bleu_diff_upper\": 3.5, \"bleu_diff_ci\": 1.625, "
                          "\"bleu_p\": 0.001, \"baseline_chrf\": 41, \"chrf_diff\": -0.9, \"chrf_diff_mean\": -0.9, "
                          "\"chrf_diff_lower\": -2.125, \"chrf_diff_upper\": 0.5, \"chrf_diff_ci\": 1.3, \"chrf_p\": 0.2, "
                          "\"model\": \"m\"}'; exit 0; }\n"
                          "  echo '{\"pairs\": 8, \"bleu\": 12.345, \"bleu_mean\": 12.3, \"bleu_ci\": 0.5, \"chrf\": 40.1, "
                          "\"chrf_mean\": 40, \"chrf_ci\": 0.25, \"samples\": 1000, \"by_length\": [{\"lo\": 0, \"hi\": 10, "
                          "\"sentences\": 5, \"bleu\": 10.5}, {\"lo\": 11, \"hi\": -1, \"sentences\": 3, \"bleu\": 14}], \"model\": \"m\"}' ;;\n"
                          "show) mkdir -p \"$out\" && : > \"$out/alignments.html\" ;;\n"
                          "report) : > \"$model/report.html\" ;;\n"
                          "esac\n") == 0,
           "cannot write the stand-in");
}

static int count(const char *text, const char *what) {
    int n = 0;
    for (const char *p = text; p && (p = strstr(p, what)); p++) n++;
    return n;
}

static void test_dates(void) {
    write_stand_in();
    const char *env = "DATES_KINDS='bahdanau none' DATES_STEPS=50 DATES_SEEDS='' DATES_TRIES=''";
    int st = stand_in_run(dir, NULL, env, "text_translate.sh dates");
    char *err = stand_in_read(dir, "err.txt");
    EXPECT(st == 0, "exit status %d: %s", st, err ? err : "");
    free(err);
    char *called = stand_in_read(dir, "called.txt");
    EXPECT(count(called, "translate train --data dates --attention bahdanau --steps 50") == 1 &&
               count(called, "translate train --data dates --attention none --steps 50") == 1 &&
               count(called, "translate show") == 2 && count(called, "translate report") == 2 &&
               count(called, "translate eval") == 4 && count(called, "--dates-examples 20000") == 2,
           "the calls: %s", called ? called : "(not run)");
    free(called);
    char *page = stand_in_read(dir, "results.md");
    EXPECT(page && strstr(page, "| bahdanau | 50 | 90.00 | 80.00 | 3.250 | 10 |"), "the bahdanau row:\n%s", page && strstr(page, "| attention") ? strstr(page, "| attention") : "");
    EXPECT(page && strstr(page, "| none | 50 | 90.00 | - | 3.250 | 10 |"), "the none row:\n%s", page && strstr(page, "| attention") ? strstr(page, "| attention") : "");
    // The misses of eval --misses: the bahdanau row only (none has no attention).
    const char *misses = page ? strstr(page, "### Where the missed peaks fall") : NULL;
    // Two misses: a year digit one before its span, and the "0" before a one-digit day one
    // after it (the last column); the commonest of the tie is the first in order.
    EXPECT(misses && strstr(misses, "| bahdanau | test | 2 | 1 | 1 | 2 | t1, -1, \" \" (1) | 1 |") && !strstr(misses, "| none |"),
           "the misses table:\n%s", misses ? misses : (page ? page : ""));
    // Issue 58's long inputs: none's longest bucket against each kind's, by their Wilson
    // intervals (bahdanau's 100.0 [83.9, 100.0] wholly above none's 20.0 [8.1, 41.6]); the
    // shortest too, where the stand-in's kinds are equal.
    EXPECT(page && strstr(page, "longest sources 1 of the 1 attention kinds lie above none beyond the 95 % intervals.\n"
                                "Counted on the test split's first 20000 examples (`text translate eval\n"
                                "--dates-examples 20000`: each example a function of the split and its index, no\n"
                                "source in two splits), as the split's own 1,000 hold few long sources.\n"
                                "At 31-40 characters (20 test examples) none's exact match is 20.0 [8.1, 41.6] %; the\n"
                                "attention kinds': bahdanau 100.0 [83.9, 100.0] (above).") &&
               strstr(page, "At 1-10 characters (4 test examples) none's exact match is 50.0 [15.0, 85.0] %; the\n"
                            "attention kinds': bahdanau 50.0 [15.0, 85.0] (overlaps)."),
           "the long inputs' note:\n%s", page ? page : "");
    free(page);
    // Again: nothing trained or evaluated, the rows kept.
    write_stand_in();  // clears called.txt
    st = stand_in_run(dir, NULL, env, "text_translate.sh dates");
    called = stand_in_read(dir, "called.txt");
    EXPECT(st == 0 && count(called, "translate train") == 0 && count(called, "translate eval") == 0,
           "a second run called: %s", called ? called : "");
    free(called);
    page = stand_in_read(dir, "results.md");
    EXPECT(page && strstr(page, "| none | 50 |"), "the second page:\n%s", page ? page : "");
    free(page);
}

// The recipe's runs, one a seed (--seed given after the recipe's flags), scored on the
// validation split and then the test split, their rows and summary; the levers scored on
// the validation split only (eval-valid.json, misses-valid.tsv), one trained its own
// "--steps 80"; the length table's cells with their Wilson intervals (2 of 4: 50.0 [15.0,
// 85.0]); no part of the date section kept from an earlier page.
static void test_dates_recipe(void) {
    write_stand_in();
    const char *env = "DATES_KINDS=none DATES_STEPS=50 DATES_SEEDS='1 2' DATES_RECIPE='--attention luong-concat --dropout 0.2' "
                      "DATES_TRIES='small --attention luong-concat --hidden 8\nfwd --attention luong-concat --steps 80 --forward-only'";
    int st = stand_in_run(dir, NULL, env, "text_translate.sh dates");
    char *err = stand_in_read(dir, "err.txt");
    EXPECT(st == 0, "exit status %d: %s", st, err ? err : "");
    free(err);
    char *called = stand_in_read(dir, "called.txt"), want[1024];
    snprintf(want, sizeof want, "--split valid --misses %s/runs/text_translate/dates-try-small/misses-valid.tsv --json", dir);
    EXPECT(count(called, "translate train --data dates --attention luong-concat --dropout 0.2 --seed 1 --steps 50") == 1 &&
               count(called, "translate train --data dates --attention luong-concat --dropout 0.2 --seed 2 --steps 50") == 1 &&
               count(called, "translate train --data dates --attention luong-concat --hidden 8 --steps 50 ") == 1 &&
               count(called, "translate train --data dates --attention luong-concat --forward-only --steps 80 ") == 1 &&
               count(called, "translate eval") == 6 && count(called, want) == 1 &&
               count(called, "--split valid") == 4,
           "the calls: %s", called ? called : "(not run)");
    // The stages in order: the kinds (none), the levers, the recipe.
    const char *k = called ? strstr(called, "text_translate/dates-none") : NULL;
    const char *t = called ? strstr(called, "--hidden 8") : NULL;
    const char *r = called ? strstr(called, "--dropout 0.2 --seed 1") : NULL;
    EXPECT(k && t && r && k < t && t < r, "the stages' order: %s", called ? called : "");
    free(called);
    char *page = stand_in_read(dir, "results.md");
    EXPECT(page && !strstr(page, "(Kept from"), "a date table kept:\n%s", page ? page : "");
    const char *recipe = page ? strstr(page, "### The alignment recipe over seeds") : NULL;
    EXPECT(recipe && strstr(recipe, "`--attention luong-concat --dropout 0.2`") &&
               strstr(recipe, "| 1 | 50 | 90.00 | 80.00 | 90.00 | 80.00 | 3.250 | 10 |") &&
               strstr(recipe, "| 2 | 50 | 100.00 | 80.00 | 100.00 | 80.00 | 3.250 | 10 |") &&
               // 90 and 100 %: mean 95, t-interval 95 +- 63.53, its top cut at 100.
               strstr(recipe, "| valid | 2 | 95.00 [31.47, 100.00] (90.00-100.00) | 80.00 [80.00, 80.00] (80.00-80.00) | 0 of 2 |") &&
               strstr(recipe, "| test | 2 | 95.00 [31.47, 100.00] (90.00-100.00) |") &&
               strstr(recipe, "Both targets met on 0 of the 2 seeds (test split).") &&
               // The lowest seed's figures with their Wilson intervals: 90 % of 10 examples, 80 %
               // of their 80 digits.
               strstr(recipe, "exact match 90.00 [59.58, 98.21] % of\n10 examples, alignment 80.00 [69.95, 87.30] % of 80 digits"),
           "the recipe's table:\n%s", recipe ? recipe : (page ? page : ""));
    // Not the default recipe: no reasons given for it.
    EXPECT(recipe && !strstr(recipe, "Why it"), "reasons for another recipe:\n%s", recipe ? recipe : "");
    const char *lengths = page ? strstr(page, "### Exact match by source length") : NULL;
    EXPECT(lengths && strstr(lengths, "| run | 1-10 (4) |") &&
               strstr(lengths, "| none | 50.0 [15.0, 85.0] | - | - | 20.0 [8.1, 41.6] |") &&
               strstr(lengths, "| recipe-seed2 | 50.0 [15.0, 85.0] | - | - | 100.0 [83.9, 100.0] |") &&
               strstr(lengths, "| try-") > strstr(lengths + 1, "\n### "),  // the levers' only later
           "the length table:\n%s", lengths ? lengths : (page ? page : ""));
    // The levers' rows: their names, flags (the stand-in writes no run.json: "?") and steps.
    const char *tries = page ? strstr(page, "### The levers tried (validation split)") : NULL;
    EXPECT(tries && strstr(tries, "| small | `?` | 50 | 90.00 | 80.00 | 3.250 | 10 |") &&
               strstr(tries, "| fwd | `?` | 80 |"),
           "the levers' table:\n%s", tries ? tries : (page ? page : ""));
    // The levers over seeds: each lever by its name less "-seedN", the recipe's two seeds as
    // one row (the stand-in's 90 % and 80 %: short of both targets).
    const char *seeds = page ? strstr(page, "### The levers over seeds (validation split)") : NULL;
    EXPECT(seeds && strstr(seeds, "| small | 1 | 90.00 | 90.00 | 80.00 | 80.00 | 0 of 1 |") &&
               strstr(seeds, "| fwd | 1 |") && strstr(seeds, "| recipe | 2 | 90.00 | 95.00 | 80.00 | 80.00 | 0 of 2 |"),
           "the levers over seeds:\n%s", seeds ? seeds : (page ? page : ""));
    const char *misses = page ? strstr(page, "### Where the missed peaks fall") : NULL;
    EXPECT(misses && strstr(misses, "| try-small | valid | 2 |") && strstr(misses, "| recipe-seed1 | test | 2 |"),
           "the misses table:\n%s", misses ? misses : (page ? page : ""));
    free(page);
}

// The stage list: DATES_STAGES or a dates-STAGE part runs only its stages; an unknown
// stage is refused before anything is trained; the stages reached are not trained again.
static void test_date_stages(void) {
    write_stand_in();
    const char *env = "DATES_KINDS=none DATES_STEPS=50 DATES_SEEDS='1 2' DATES_RECIPE='--attention luong-concat --dropout 0.2' "
                      "DATES_TRIES='small --attention luong-concat --hidden 8' DATES_STAGES='nonsense kinds'";
    int st = stand_in_run(dir, NULL, env, "text_translate.sh dates");
    char *err = stand_in_read(dir, "err.txt"), *called = stand_in_read(dir, "called.txt");
    EXPECT(st == 2 && err && strstr(err, "unknown date stage 'nonsense'") && count(called, "translate") == 0,
           "an unknown stage: %d %s %s", st, err ? err : "", called ? called : "");
    free(err), free(called);
    // Only the recipe (one seed more): trained once; the kinds and levers not touched.
    write_stand_in();
    st = stand_in_run(dir, NULL, "DATES_STEPS=50 DATES_SEEDS='1 2 3' DATES_RECIPE='--attention luong-concat --dropout 0.2'",
                      "text_translate.sh dates-recipe");
    called = stand_in_read(dir, "called.txt");
    EXPECT(st == 0 && count(called, "translate train") == 1 && count(called, "--seed 3 --steps 50") == 1 &&
               count(called, "--attention none") == 0 && count(called, "dates-try-") == 0,
           "dates-recipe: %s", called ? called : "");
    free(called);
    char *page = stand_in_read(dir, "results.md");
    EXPECT(page && strstr(page, "Both targets met on 0 of the 3 seeds (test split).") && strstr(page, "| small | `?` |") &&
               strstr(page, "| none | 50 |"),
           "the page after dates-recipe:\n%s", page ? page : "");
    free(page);
    // DATES_STAGES=tries with a new lever: only it trained.
    write_stand_in();
    st = stand_in_run(dir, NULL, "DATES_STEPS=50 DATES_STAGES=tries DATES_TRIES='small --attention luong-concat --hidden 8\nwide --attention luong-concat --hidden 99'",
                      "text_translate.sh dates");
    called = stand_in_read(dir, "called.txt");
    EXPECT(st == 0 && count(called, "translate train") == 1 && count(called, "--hidden 99 --steps 50") == 1 &&
               count(called, "--split valid") == 1,
           "DATES_STAGES=tries: %s", called ? called : "");
    free(called);
}

static void test_bible(void) {
    write_stand_in();
    int st = stand_in_run(dir, NULL, "BIBLE_KINDS=bahdanau BIBLE_MINUTES=2", "text_translate.sh bible");
    char *err = stand_in_read(dir, "err.txt");
    EXPECT(st == 0, "exit status %d: %s", st, err ? err : "");
    free(err);
    char *called = stand_in_read(dir, "called.txt");
    EXPECT(count(called, "translate train --data bible-en-es --attention bahdanau --minutes 2 ") == 1 &&
               count(called, "translate score") == 1,
           "the calls: %s", called ? called : "(not run)");
    free(called);
    char *page = stand_in_read(dir, "results.md");
    // 100 steps of 64 pairs: 0.2 epochs of 27,839.
    EXPECT(page && strstr(page, "| bahdanau | 2.0 | 100 | 0.2 | 3.2 | 12.35 (12.30 +- 0.50) | 40.10 (40.00 +- 0.25) |"),
           "the bahdanau row:\n%s", page && strstr(page, "## English") ? strstr(page, "## English") : "");
    EXPECT(page && strstr(page, "| attention | 0-10 (5) | 11+ (3) |") && strstr(page, "| bahdanau | 10.50 | 14.00 |"),
           "the length table:\n%s", page ? page : "");
    EXPECT(page && strstr(page, "- bahdanau: 2.0 minutes of training, 100 steps (0.2 epochs).") &&
               strstr(page, "BIBLE_MINUTES=22 ") && strstr(page, "BIBLE_STEPS=100 "),
           "the budget and the continuation:\n%s", page ? page : "");
    // The date table of the first test is kept.
    EXPECT(page && strstr(page, "| none | 50 |"), "the dates table is gone:\n%s", page ? page : "");
    free(page);
    // A larger budget trains the minutes left; the same one trains nothing.
    write_stand_in();
    st = stand_in_run(dir, NULL, "BIBLE_KINDS=bahdanau BIBLE_MINUTES=3", "text_translate.sh bible");
    called = stand_in_read(dir, "called.txt");
    EXPECT(st == 0 && count(called, "--attention bahdanau --minutes 1 ") == 1, "the continuation: %s", called ? called : "");
    free(called);
    write_stand_in();
    st = stand_in_run(dir, NULL, "BIBLE_KINDS=bahdanau BIBLE_MINUTES=3", "text_translate.sh bible");
    called = stand_in_read(dir, "called.txt");
    EXPECT(st == 0 && count(called, "translate train") == 0, "a finished budget trained: %s", called ? called : "");
    free(called);
    page = stand_in_read(dir, "results.md");
    EXPECT(page && strstr(page, "| bahdanau | 3.0 | 200 |"), "the row after 3 minutes:\n%s", page ? page : "");
    free(page);
    // A step budget: trained to it in all, then not again.
    write_stand_in();
    st = stand_in_run(dir, NULL, "BIBLE_KINDS=bahdanau BIBLE_STEPS=250", "text_translate.sh bible");
    called = stand_in_read(dir, "called.txt");
    EXPECT(st == 0 && count(called, "--attention bahdanau --steps 250 ") == 1, "the step budget: %s", called ? called : "");
    free(called);
    write_stand_in();
    st = stand_in_run(dir, NULL, "BIBLE_KINDS=bahdanau BIBLE_STEPS=200", "text_translate.sh bible");
    called = stand_in_read(dir, "called.txt");
    EXPECT(st == 0 && count(called, "translate train") == 0, "a step budget reached trained: %s", called ? called : "");
    free(called);
}

static void test_transformer_rows(void) {
    write_stand_in();
    int st = stand_in_run(dir, NULL, "DATES_KINDS=transformer DATES_STEPS=50 BIBLE_KINDS=transformer BIBLE_MINUTES=2",
                          "text_translate.sh dates bible");
    char *err = stand_in_read(dir, "err.txt");
    EXPECT(st == 0, "exit status %d: %s", st, err ? err : "");
    free(err);
    char *called = stand_in_read(dir, "called.txt");
    EXPECT(count(called, "translate train --data dates --model transformer --warmup 400 --lr 1e-3 --dropout 0.1 "
                         "--label-smoothing 0.1 --steps 50") == 1 &&
               count(called, "translate train --data bible-en-es --model transformer --warmup 400 --lr 1e-3 "
                             "--dropout 0.1 --label-smoothing 0.1 --minutes 2 ") == 1 &&
               count(called, "--attention transformer") == 0,
           "the calls: %s", called ? called : "(not run)");
    free(called);
    char *page = stand_in_read(dir, "results.md");
    EXPECT(page && strstr(page, "| transformer | 50 | 90.00 | 80.00 | 3.250 | 10 |"), "the date row:\n%s",
           page ? page : "");
    EXPECT(page && strstr(page, "| transformer | 2.0 | 100 | 0.2 | 3.2 | 12.35 (12.30 +- 0.50) | 40.10 (40.00 +- 0.25) |"),
           "the English-Spanish row:\n%s", page ? page : "");
    // The LSTM rows of the earlier tests are kept, the transformer's listed after them.
    const char *bible = page ? strstr(page, "## English") : NULL;
    const char *lstm = bible ? strstr(bible, "| bahdanau |") : NULL;
    const char *tr = page ? strstr(page, "| transformer | 2.0 |") : NULL;
    EXPECT(lstm && tr && lstm < tr && strstr(page, "| none | 50 |"), "the rows beside each other:\n%s", page ? page : "");
    EXPECT(strstr(page ? page : "", "trained with `--warmup 400 --lr 1e-3 --dropout 0.1 --label-smoothing 0.1`"),
           "the recipe is not on the page:\n%s", page ? page : "");
    free(page);
}

// The paired table: runs of the same steps paired (no decoding: --hyps and --baseline-hyps
// the outputs their scores wrote), once; unequal steps not paired, the old figures gone; a
// run folder without date runs keeps the page's date table, marked as kept.
static void test_paired(void) {
    write_stand_in();
    int st = stand_in_run(dir, NULL, "BIBLE_KINDS='none bahdanau' BIBLE_STEPS=300", "text_translate.sh bible");
    char *err = stand_in_read(dir, "err.txt");
    EXPECT(st == 0, "exit status %d: %s", st, err ? err : "");
    free(err);
    char *called = stand_in_read(dir, "called.txt"), want[1024];
    snprintf(want, sizeof want, "translate score --model %s/runs/text_translate/bible-bahdanau/model.safetensors "
             "--data-root data --threads 1 --hyps %s/runs/text_translate/bible-bahdanau/test.hyps --baseline-hyps "
             "%s/runs/text_translate/bible-none/test.hyps --samples 1000 --json", dir, dir, dir);
    EXPECT(count(called, want) == 1 && count(called, "--baseline-hyps") == 1 &&
               count(called, "--write-hyps") == 2,
           "the calls: %s", called ? called : "(not run)");
    free(called);
    char *page = stand_in_read(dir, "results.md");
    EXPECT(page && strstr(page, "| bahdanau | none | 300 | 1.84 [0.25, 3.50] | 0.0010 | better | -0.90 [-2.12, 0.50] | 0.2000 | within |") &&
               !strstr(page, "| transformer | luong-general |"),
           "the paired table:\n%s", page ? page : "");
    free(page);
    write_stand_in();
    st = stand_in_run(dir, NULL, "BIBLE_KINDS='none bahdanau' BIBLE_STEPS=300", "text_translate.sh bible");
    called = stand_in_read(dir, "called.txt");
    EXPECT(st == 0 && count(called, "translate score") == 0, "paired again: %s", called ? called : "");
    free(called);
    // none trained further: not paired any more.
    write_stand_in();
    st = stand_in_run(dir, NULL, "BIBLE_KINDS=none BIBLE_STEPS=400", "text_translate.sh bible");
    err = stand_in_read(dir, "err.txt");
    page = stand_in_read(dir, "results.md");
    EXPECT(st == 0 && err && strstr(err, "bahdanau:none not paired: 300 and 400 steps") && page &&
               !strstr(page, "| bahdanau | none |") && !strstr(page, "### Paired"),
           "unequal steps: %s\n%s", err ? err : "", page ? page : "");
    free(err), free(page);
    // The date runs (every dates-* folder, the recipe's too) moved away: the page keeps its
    // date table, marked once.
    char store[512], from[1024], to[1024];
    snprintf(store, sizeof store, "%s/runs/text_translate", dir);
    DIR *d = opendir(store);
    EXPECT(d != NULL, "cannot open %s", store);
    int moved = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        if (strncmp(e->d_name, "dates-", 6) != 0) continue;
        snprintf(from, sizeof from, "%s/%s", store, e->d_name);
        snprintf(to, sizeof to, "%s/%s", dir, e->d_name);
        EXPECT(rename(from, to) == 0, "cannot move %s", from);
        moved++;
    }
    if (d) closedir(d);
    EXPECT(moved >= 3, "only %d date runs to move", moved);
    for (int k = 0; k < 2; k++) {
        write_stand_in();
        st = stand_in_run(dir, NULL, "BIBLE_KINDS=none BIBLE_STEPS=400", "text_translate.sh bible");
        page = stand_in_read(dir, "results.md");
        EXPECT(st == 0 && page && count(page, "| none | 50 | 90.00 | - | 3.250 | 10 |") == 1 &&
                   count(page, "(Kept from the previous page") == 1 && !strstr(page, "\n\n\n") &&
                   strstr(page, "## English") && strstr(page, "### The alignment recipe over seeds") &&
                   strstr(page, "### The levers tried"),
               "the kept date section (%d):\n%s", k, page ? page : "");
        free(page);
    }
    // The English-Spanish runs moved away too: that section is kept whole as well, each
    // marked once, and nothing is trained (no date stages).
    d = opendir(store);
    EXPECT(d != NULL, "cannot open %s", store);
    moved = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        if (strncmp(e->d_name, "bible-", 6) != 0) continue;
        snprintf(from, sizeof from, "%s/%s", store, e->d_name);
        snprintf(to, sizeof to, "%s/%s", dir, e->d_name);
        EXPECT(rename(from, to) == 0, "cannot move %s", from);
        moved++;
    }
    if (d) closedir(d);
    EXPECT(moved >= 2, "only %d English-Spanish runs to move", moved);
    write_stand_in();
    st = stand_in_run(dir, NULL, "DATES_STAGES=", "text_translate.sh dates");
    page = stand_in_read(dir, "results.md");
    called = stand_in_read(dir, "called.txt");
    const char *en = page ? strstr(page, "## English") : NULL;
    EXPECT(st == 0 && count(called, "translate") == 0 && en && count(page, "(Kept from the previous page") == 2 &&
               strstr(en, "(Kept from the previous page") && strstr(en, "| none |") && !strstr(page, "\n\n\n"),
           "the kept sections:\n%s", page ? page : "");
    free(page), free(called);
}

static void test_unknown_part(void) {
    write_stand_in();
    EXPECT(stand_in_run(dir, NULL, "", "text_translate.sh nonsense") == 2, "an unknown part accepted");
    char *err = stand_in_read(dir, "err.txt");
    EXPECT(err && strstr(err, "unknown part 'nonsense'"), "the message: %s", err ? err : "");
    free(err);
}

int main(void) {
    if (scratch_make(dir, sizeof dir, "test_experiments_text_translate")) return 1;
    RUN(test_dates);
    RUN(test_dates_recipe);
    RUN(test_date_stages);
    RUN(test_bible);
    RUN(test_transformer_rows);
    RUN(test_paired);
    RUN(test_unknown_part);
    if (!getenv("KEEP")) scratch_remove(dir);
    return test_summary();
}
