// test_experiments_sat_decoders.c: experiments/sat_decoders.sh, the LSTM decoder against
// the Transformer on scenes, with a stand-in bin/caption (tests/support/stand_in.h) that
// trains nothing: `caption train` prints its steps and `eval` prints figures made from the
// run's decoder and seed. Checked: each seed's two runs at the same wall-clock budget, the
// map-layer run (to the steps the last layer's run reached), the mean and spread over seeds, the per-seed and map-layer rows, a second
// run that trains nothing again (and scores again, without training, a run whose eval.json
// predates object F1), the quick mode's step budget, and a failed training
// reported by the exit status. Run from the repository root.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/scratch.h"
#include "tests/support/stand_in.h"
#include "tests/support/test.h"

static char dir[256];

// eval: BLEU-4 0.2 (seed 1) or 0.4 (seed 2) for the LSTM, 0.1 and 0.3 for the Transformer;
// grounding 0.5 for the LSTM, 0.25 for the Transformer, 0.75 for its map-layer-0 run;
// object F1 0.6 (seed 1) or 0.8 for the LSTM, 0.9 for the Transformer.
static void write_stand_in(const char *fail_on) {
    char body[4096];
    snprintf(body, sizeof body,
             "cmd=$1; shift\n"
             "out='' model='' steps=7\n"
             "while [ $# -gt 0 ]; do\n"
             "  case $1 in --out) out=$2 ;; --model) model=$2 ;; --steps) steps=$2 ;; esac\n"
             "  shift\n"
             "done\n"
             "case $cmd in\n"
             "train)\n"
             "  case $out in *%s*) echo 'caption train: failed' >&2; exit 1 ;; esac\n"
             "  : > \"$out/model.safetensors\"\n"
             "  echo \"{\\\"steps\\\": $steps, \\\"final_loss\\\": 2.5}\" ;;\n"
             "eval)\n"
             "  case $model in *lstm_seed1*) b=0.2 g=0.5 f=0.6 ;; *lstm_seed2*) b=0.4 g=0.5 f=0.8 ;;\n"
             "    *seed1_map0*) b=0.15 g=0.75 f=0.9 ;; *transformer_seed1*) b=0.1 g=0.25 f=0.9 ;;\n"
             "    *) b=0.3 g=0.25 f=0.9 ;; esac\n"
             "  echo \"{\\\"bleu1\\\": 0.9, \\\"bleu4\\\": $b, \\\"cider\\\": 1.5, \\\"rougeL\\\": 0.6, "
             "\\\"grounding\\\": $g, \\\"object_words\\\": 20, \\\"object_f1\\\": $f, "
             "\\\"objects_named\\\": 20, \\\"images\\\": 10}\" ;;\n"
             "esac\n",
             fail_on);
    EXPECT(stand_in_write(dir, "caption", body) == 0, "cannot write the stand-in");
}

static int count(const char *text, const char *what) {
    int n = 0;
    for (const char *p = text; p && (p = strstr(p, what)); p++) n++;
    return n;
}

static void test_two_seeds(void) {
    write_stand_in("nothing-fails");
    const char *env = "MINUTES=0.5 SEEDS='1 2'";
    int st = stand_in_run(dir, NULL, env, "sat_decoders.sh");
    char *err = stand_in_read(dir, "err.txt");
    EXPECT(st == 0, "exit status %d: %s", st, err ? err : "");
    free(err);
    char *called = stand_in_read(dir, "called.txt");
    EXPECT(count(called, "train --data scenes") == 5 && count(called, "--minutes 0.5 --decoder lstm ") == 2 &&
               count(called, "--minutes 0.5 --decoder transformer --layers 2 --map-layer -1 ") == 2 &&
               count(called, "--steps 7 --decoder transformer --layers 2 --map-layer 0 --threads 1 --seed 1 ") == 1 &&
               count(called, "eval --model") == 5 && count(called, "--split test --beam 3") == 5,
           "the calls: %s", called ? called : "(not run)");
    free(called);
    char *page = stand_in_read(dir, "results.md");
    // LSTM BLEU-4 0.2 and 0.4: mean 0.3, sample standard deviation 0.1414.
    // Object F1 0.6 and 0.8: mean 0.7, spread 0.1414.
    EXPECT(page && strstr(page, "| lstm | 0.3000 | 0.1414 | 1.5000 | 0.0000 | 0.5000 | 0.0000 | 0.7000 | 0.1414 |"),
           "the lstm row:\n%s", page ? page : "");
    EXPECT(page && strstr(page, "| transformer | 0.2000 | 0.1414 | 1.5000 | 0.0000 | 0.2500 | 0.0000 | 0.9000 | 0.0000 |"),
           "the transformer row:\n%s", page ? page : "");
    EXPECT(page && strstr(page, "| transformer | 2 | 7 | 0.3 | 1.5 | 0.25 | 0.9 |") &&
               strstr(page, "| lstm | 1 | 7 | 0.2 | 1.5 | 0.5 | 0.6 |"),
           "the per-seed rows:\n%s", page ? page : "");
    EXPECT(page && !strstr(page, "not computed"), "the page says object F1 is not computed:\n%s", page ? page : "");
    const char *layers = page ? strstr(page, "## Grounding by map layer") : NULL;
    EXPECT(layers && strstr(layers, "| 0 | 7 | 0.15 | 1.5 | 0.75 |") && strstr(layers, "| 1 | 7 | 0.1 | 1.5 | 0.25 |"),
           "the map-layer rows:\n%s", page ? page : "");
    EXPECT(page && strstr(page, "MINUTES=0.5 SEEDS=\"1 2\""), "the command:\n%s", page ? page : "");
    free(page);
    // Again: every run is trained and scored at this budget; nothing runs.
    write_stand_in("nothing-fails");
    st = stand_in_run(dir, NULL, env, "sat_decoders.sh");
    called = stand_in_read(dir, "called.txt");
    EXPECT(st == 0 && count(called, "train") == 0 && count(called, "eval") == 0, "a second run called: %s",
           called ? called : "");
    free(called);
    // A run scored before object F1 (its eval.json without the key) is scored again, not
    // trained again, and its figure reaches the table.
    char path[512];
    snprintf(path, sizeof path, "%s/runs/sat_decoders_lstm_seed2/eval.json", dir);
    FILE *fp = fopen(path, "w");
    EXPECT(fp != NULL, "cannot write %s", path);
    if (fp) {
        fputs("{\"bleu1\": 0.9, \"bleu4\": 0.4, \"cider\": 1.5, \"rougeL\": 0.6, \"grounding\": 0.5, \"images\": 10}\n", fp);
        fclose(fp);
    }
    write_stand_in("nothing-fails");
    st = stand_in_run(dir, NULL, env, "sat_decoders.sh");
    called = stand_in_read(dir, "called.txt");
    EXPECT(st == 0 && count(called, "train") == 0 && count(called, "eval --model") == 1 &&
               count(called, "lstm_seed2/model.safetensors") == 1,
           "rescoring called: %s", called ? called : "");
    free(called);
    page = stand_in_read(dir, "results.md");
    EXPECT(page && strstr(page, "| lstm | 2 | 7 | 0.4 | 1.5 | 0.5 | 0.8 |"), "the rescored row:\n%s", page ? page : "");
    free(page);
    // Another budget trains again.
    write_stand_in("nothing-fails");
    st = stand_in_run(dir, NULL, "MINUTES=1 SEEDS=1", "sat_decoders.sh");
    called = stand_in_read(dir, "called.txt");
    EXPECT(st == 0 && count(called, "--minutes 1 --decoder") == 2, "a new budget: %s", called ? called : "");
    free(called);
}

static void test_quick(void) {
    write_stand_in("nothing-fails");
    int st = stand_in_run(dir, NULL, "QUICK=1", "sat_decoders.sh");
    char *called = stand_in_read(dir, "called.txt");
    EXPECT(st == 0 && count(called, "--steps 100 --decoder") == 3 && count(called, "--count 100 ") == 3 &&
               count(called, "--minutes") == 0,
           "the quick calls: %s", called ? called : "(not run)");
    free(called);
    char *page = stand_in_read(dir, "results.md");
    EXPECT(page && strstr(page, "100 steps") && strstr(page, "the first 100 test scenes"), "the quick page:\n%s",
           page ? page : "");
    free(page);
}

static void test_failed_run(void) {
    write_stand_in("transformer_seed3");
    int st = stand_in_run(dir, NULL, "STEPS=5 SEEDS=3", "sat_decoders.sh");
    char *err = stand_in_read(dir, "err.txt");
    EXPECT(st != 0 && err && strstr(err, "sat_decoders.sh: a run failed"), "status %d: %s", st, err ? err : "");
    free(err);
    // A failed map-layer run (not side by side): not scored (the LSTM run above is kept, the
    // Transformer scored), the script fails.
    write_stand_in("seed3_map0");
    st = stand_in_run(dir, NULL, "STEPS=5 SEEDS=3 PAIRED=0", "sat_decoders.sh");
    err = stand_in_read(dir, "err.txt");
    char *called = stand_in_read(dir, "called.txt");
    EXPECT(st != 0 && err && strstr(err, "sat_decoders.sh: a run failed") && count(called, "eval --model") == 1,
           "status %d: %s; calls: %s", st, err ? err : "", called ? called : "");
    free(err);
    free(called);
}

int main(void) {
    if (scratch_make(dir, sizeof dir, "test_experiments_sat_decoders")) return 1;
    RUN(test_two_seeds);
    RUN(test_quick);
    RUN(test_failed_run);
    if (!getenv("KEEP")) scratch_remove(dir);
    return test_summary();
}
