// test_experiments_sat_ablation.c: experiments/sat_ablation.sh, every attention kind on the
// same scenes, with a stand-in bin/caption (tests/support/stand_in.h) that trains nothing:
// `caption train` prints its steps, `eval` prints figures made from the kind, `report`
// writes a page. Checked: the table's rows (object F1 among the scores), a second run that
// trains and scores nothing again, and a kind scored before object F1 (its eval.json
// without the key) scored again and reported, not trained. Run from the repository root.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/scratch.h"
#include "tests/support/stand_in.h"
#include "tests/support/test.h"

static char dir[256];

// eval: BLEU-4 0.2, grounding 0.5, object F1 0.7 for additive; 0.3, 0.25, 0.65 for dot.
// train dates its model in the past, so the page report writes is newer than it.
static void write_stand_in(void) {
    const char *body =
        "cmd=$1; shift\n"
        "run=$1 out='' model='' steps=7\n"
        "while [ $# -gt 0 ]; do\n"
        "  case $1 in --out) out=$2 ;; --model) model=$2 ;; --steps) steps=$2 ;; esac\n"
        "  shift\n"
        "done\n"
        "case $cmd in\n"
        "train)\n"
        "  : > \"$out/model.safetensors\"; touch -d 2000-01-01 \"$out/model.safetensors\"\n"
        "  echo \"{\\\"steps\\\": $steps, \\\"final_loss\\\": 2.5}\" ;;\n"
        "eval)\n"
        "  case $model in *additive*) b=0.2 g=0.5 f=0.7 ;; *) b=0.3 g=0.25 f=0.65 ;; esac\n"
        "  echo \"{\\\"split\\\": \\\"test\\\", \\\"bleu1\\\": 0.9, \\\"bleu4\\\": $b, \\\"cider\\\": 1.5, "
        "\\\"rougeL\\\": 0.6, \\\"grounding\\\": $g, \\\"object_words\\\": 20, \\\"object_f1\\\": $f, "
        "\\\"object_precision\\\": 0.75, \\\"objects_named\\\": 30}\" ;;\n"
        "report) echo page > \"$run/report.html\" ;;\n"
        "esac\n";
    EXPECT(stand_in_write(dir, "caption", body) == 0, "cannot write the stand-in");
}

static int count(const char *text, const char *what) {
    int n = 0;
    for (const char *p = text; p && (p = strstr(p, what)); p++) n++;
    return n;
}

static void test_table_and_rescoring(void) {
    const char *env = "STEPS=5 KINDS='additive dot'";
    write_stand_in();
    int st = stand_in_run(dir, NULL, env, "sat_ablation.sh");
    char *err = stand_in_read(dir, "err.txt");
    EXPECT(st == 0, "exit status %d: %s", st, err ? err : "");
    free(err);
    char *called = stand_in_read(dir, "called.txt");
    EXPECT(count(called, "train --data scenes") == 2 && count(called, "eval --model") == 2 &&
               count(called, "report ") == 2,
           "the calls: %s", called ? called : "(not run)");
    free(called);
    char *page = stand_in_read(dir, "results.md");
    EXPECT(page && strstr(page, "| attention | steps | BLEU-1 | BLEU-4 | CIDEr-D | ROUGE-L | grounding | object F1 | notes |"),
           "the header:\n%s", page ? page : "");
    EXPECT(page && strstr(page, "| additive | 5 | 0.9 | 0.2 | 1.5 | 0.6 | 0.5 | 0.7 |  |") &&
               strstr(page, "| dot | 5 | 0.9 | 0.3 | 1.5 | 0.6 | 0.25 | 0.65 | hidden 128 |"),
           "the rows:\n%s", page ? page : "");
    free(page);
    // Again: both kinds are trained to their steps and scored; nothing runs.
    write_stand_in();
    st = stand_in_run(dir, NULL, env, "sat_ablation.sh");
    called = stand_in_read(dir, "called.txt");
    EXPECT(st == 0 && !called, "a second run called: %s", called ? called : "");
    free(called);
    // additive scored before object F1: scored and reported again, not trained.
    char path[512];
    snprintf(path, sizeof path, "%s/runs/sat_ablation_additive/eval.json", dir);
    FILE *fp = fopen(path, "w");
    EXPECT(fp != NULL, "cannot write %s", path);
    if (fp) {
        fputs("{\"split\": \"test\", \"bleu1\": 0.9, \"bleu4\": 0.2, \"cider\": 1.5, \"rougeL\": 0.6, \"grounding\": 0.5}\n", fp);
        fclose(fp);
    }
    write_stand_in();
    st = stand_in_run(dir, NULL, env, "sat_ablation.sh");
    called = stand_in_read(dir, "called.txt");
    EXPECT(st == 0 && count(called, "train") == 0 && count(called, "eval --model") == 1 &&
               count(called, "sat_ablation_additive/model.safetensors") == 1 && count(called, "report ") == 1,
           "rescoring called: %s", called ? called : "");
    free(called);
    page = stand_in_read(dir, "results.md");
    EXPECT(page && strstr(page, "| additive | 5 | 0.9 | 0.2 | 1.5 | 0.6 | 0.5 | 0.7 |  |"), "the rescored row:\n%s",
           page ? page : "");
    free(page);
}

int main(void) {
    if (scratch_make(dir, sizeof dir, "test_experiments_sat_ablation")) return 1;
    RUN(test_table_and_rescoring);
    if (!getenv("KEEP")) scratch_remove(dir);
    return test_summary();
}
