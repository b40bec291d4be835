// test_experiments_sat_decoders.c: experiments/sat_decoders.sh, the LSTM decoder against
// the Transformer on scenes, with a stand-in bin/caption (tests/support/stand_in.h) that
// trains nothing: `caption train` prints its steps and CPU seconds and `eval` prints figures
// made from the run's decoder and seed (and, with --map-layer/--map-head, from the layer
// and head). Checked: each seed's two runs at the same CPU budget (--cpu-budget), the depth
// run, the maps of every layer and head scored by eval alone, the mean and spread over
// seeds, the per-seed, per-head and per-depth rows, a second run that trains nothing again
// (and scores again, without training, a run whose eval.json predates object F1), a run cut
// off resumed with --resume at the same flags, a wall-clock budget (MINUTES) never resumed,
// the quick mode's step budget, and a failed training reported by the exit status. Run
// from the repository root.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/scratch.h"
#include "tests/support/stand_in.h"
#include "tests/support/test.h"

static char dir[256];

// train: steps 7 (or --steps), 61.5 CPU seconds; writes a state and a model.
// eval: BLEU-4 0.2 (seed 1) or 0.4 (seed 2) for the LSTM, 0.1 and 0.3 for the Transformer;
// grounding 0.5 for the LSTM, 0.25 for the Transformer; object F1 0.6 (seed 1) or 0.8 for the
// LSTM, 0.9 for the Transformer. With --map-layer L --map-head H the grounding is 0.L(H+1)
// ("0.10" for layer 1's mean, "0.14" for its head 3).
static void write_stand_in(const char *fail_on) {
    char body[4096];
    snprintf(body, sizeof body,
             "cmd=$1; shift\n"
             "out='' model='' steps=7 ml='' mh=''\n"
             "while [ $# -gt 0 ]; do\n"
             "  case $1 in --out) out=$2 ;; --model) model=$2 ;; --steps) steps=$2 ;;\n"
             "    --map-layer) ml=$2 ;; --map-head) mh=$2 ;; esac\n"
             "  shift\n"
             "done\n"
             "case $cmd in\n"
             "train)\n"
             "  case $out in *%s*) echo 'caption train: failed' >&2; exit 1 ;; esac\n"
             "  : > \"$out/model.safetensors\"; echo state > \"$out/state.safetensors\"\n"
             "  echo \"{\\\"steps\\\": $steps, \\\"cpu_seconds\\\": 61.5, \\\"final_loss\\\": 2.5}\" ;;\n"
             "eval)\n"
             "  case $model in *lstm_seed1*) b=0.2 g=0.5 f=0.6 ;; *lstm_seed2*) b=0.4 g=0.5 f=0.8 ;;\n"
             "    *transformer_seed1*) b=0.1 g=0.25 f=0.9 ;; *) b=0.3 g=0.25 f=0.9 ;; esac\n"
             "  [ -z \"$ml\" ] || g=0.$ml$((mh + 1))\n"
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
    const char *env = "CPU_SECONDS=60 SEEDS='1 2' DEPTHS='1 2'";  // 2 is LAYERS: no run of its own
    int st = stand_in_run(dir, NULL, env, "sat_decoders.sh");
    char *err = stand_in_read(dir, "err.txt");
    EXPECT(st == 0, "exit status %d: %s", st, err ? err : "");
    free(err);
    char *called = stand_in_read(dir, "called.txt");
    // 4 seed runs and the 1-layer run; eval: 5 runs, then the maps of 2 layers (seeds 1 and
    // 2) and of 1 layer (the 1-layer run), each the mean and 4 heads: 25 more.
    EXPECT(count(called, "train --data scenes") == 5 && count(called, "--cpu-budget 60 --decoder lstm --seed") == 2 &&
               count(called, "--cpu-budget 60 --decoder transformer --layers 2 --seed") == 2 &&
               count(called, "--cpu-budget 60 --decoder transformer --layers 1 --seed 1 ") == 1 &&
               count(called, "--checkpoint-every 200 --threads 1 --quiet --json") == 5 &&
               count(called, "--resume") == 0 &&
               count(called, "eval --model") == 30 && count(called, "--split test --beam 3") == 30 &&
               count(called, "transformer_seed1/model.safetensors --data scenes --split test --beam 3 --count 0 "
                             "--threads 1 --map-layer 1 --map-head 3 ") == 1 &&
               count(called, "L1_seed1/model.safetensors --data scenes --split test --beam 3 --count 0 "
                             "--threads 1 --map-layer 0 --map-head -1 ") == 1 &&
               count(called, "--map-layer 1") == 10 && count(called, "--map-layer 0") == 15 &&
               count(called, "--map-layer 2") == 0,
           "the calls: %s", called ? called : "(not run)");
    free(called);
    char *page = stand_in_read(dir, "results.md");
    // LSTM BLEU-4 0.2 and 0.4: mean 0.3, sample standard deviation 0.1414.
    // Object F1 0.6 and 0.8: mean 0.7, spread 0.1414.
    EXPECT(page && strstr(page, "| lstm | 0.3000 | 0.1414 | 1.5000 | 0.0000 | 0.5000 | 0.0000 | 0.7000 | 0.1414 |"),
           "the lstm row:\n%s", page ? page : "");
    EXPECT(page && strstr(page, "| transformer | 0.2000 | 0.1414 | 1.5000 | 0.0000 | 0.2500 | 0.0000 | 0.9000 | 0.0000 |"),
           "the transformer row:\n%s", page ? page : "");
    EXPECT(page && strstr(page, "| transformer | 2 | 7 | 61.5 | 0.3 | 1.5 | 0.25 | [0.112, 0.469] | 0.9 |") &&
               strstr(page, "| lstm | 1 | 7 | 61.5 | 0.2 | 1.5 | 0.5 | [0.299, 0.701] | 0.6 |"),
           "the per-seed rows:\n%s", page ? page : "");
    const char *maps = page ? strstr(page, "## Grounding by layer, head and depth") : NULL;
    EXPECT(maps && strstr(maps, "| seed | decoder layers | layer | mean over heads | head 0 | head 1 | head 2 | head 3 |") &&
               strstr(maps, "| 1 | 2 | 0 | 0.00 | 0.01 | 0.02 | 0.03 | 0.04 |") &&
               strstr(maps, "| 1 | 2 | 1 | 0.10 | 0.11 | 0.12 | 0.13 | 0.14 |") &&
               strstr(maps, "| 2 | 2 | 1 | 0.10 | 0.11 | 0.12 | 0.13 | 0.14 |") &&
               strstr(maps, "| 1 | 1 | 0 | 0.00 | 0.01 | 0.02 | 0.03 | 0.04 |") &&
               strstr(maps, "| 2 | 7 | 61.5 | 0.1 | 1.5 | 0.25 | 0.9 |") &&
               strstr(maps, "| 1 | 7 | 61.5 | 0.3 | 1.5 | 0.25 | 0.9 |"),
           "the map and depth rows:\n%s", page ? page : "");
    EXPECT(page && strstr(page, "CPU_SECONDS=60 SEEDS=\"1 2\"") && strstr(page, "60 CPU seconds of training"),
           "the command and the budget:\n%s", page ? page : "");
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
    EXPECT(page && strstr(page, "| lstm | 2 | 7 | 61.5 | 0.4 | 1.5 | 0.5 | [0.299, 0.701] | 0.8 |"), "the rescored row:\n%s", page ? page : "");
    free(page);
    // A run cut off (a state, the same flags, not scored) continues with --resume.
    snprintf(path, sizeof path, "%s/runs/sat_decoders_lstm_seed1/eval.json", dir);
    remove(path);
    write_stand_in("nothing-fails");
    st = stand_in_run(dir, NULL, env, "sat_decoders.sh");
    called = stand_in_read(dir, "called.txt");
    EXPECT(st == 0 && count(called, "train --data scenes") == 1 && count(called, "lstm_seed1 --cpu-budget 60") == 1 &&
               count(called, "--resume") == 1 && count(called, "eval --model") == 1,
           "resuming called: %s", called ? called : "");
    free(called);
    // Another budget trains again, from scratch.
    write_stand_in("nothing-fails");
    st = stand_in_run(dir, NULL, "CPU_SECONDS=120 SEEDS=1 DEPTHS=''", "sat_decoders.sh");
    called = stand_in_read(dir, "called.txt");
    EXPECT(st == 0 && count(called, "--cpu-budget 120 --decoder") == 2 && count(called, "--resume") == 0,
           "a new budget: %s", called ? called : "");
    free(called);
    // A wall-clock budget: --minutes, and a run cut off starts again (no --resume).
    write_stand_in("nothing-fails");
    st = stand_in_run(dir, NULL, "MINUTES=1 SEEDS=1 DEPTHS=''", "sat_decoders.sh");
    snprintf(path, sizeof path, "%s/runs/sat_decoders_lstm_seed1/eval.json", dir);
    remove(path);
    write_stand_in("nothing-fails");
    st = stand_in_run(dir, NULL, "MINUTES=1 SEEDS=1 DEPTHS=''", "sat_decoders.sh");
    called = stand_in_read(dir, "called.txt");
    EXPECT(st == 0 && count(called, "--minutes 1 --decoder lstm") == 1 && count(called, "--resume") == 0 &&
               count(called, "--cpu-budget") == 0,
           "a wall-clock budget: %s", called ? called : "");
    free(called);
}

static void test_quick(void) {
    write_stand_in("nothing-fails");
    int st = stand_in_run(dir, NULL, "QUICK=1", "sat_decoders.sh");
    char *called = stand_in_read(dir, "called.txt");
    EXPECT(st == 0 && count(called, "train --data") == 2 && count(called, "--steps 100 --decoder") == 2 &&
               count(called, "--count 100 ") == 12 && count(called, "--minutes") == 0 &&
               count(called, "--cpu-budget") == 0,
           "the quick calls: %s", called ? called : "(not run)");
    free(called);
    char *page = stand_in_read(dir, "results.md");
    EXPECT(page && strstr(page, "100 steps") && strstr(page, "the first 100 test scenes"), "the quick page:\n%s",
           page ? page : "");
    free(page);
}

static void test_failed_run(void) {
    write_stand_in("transformer_seed3");
    int st = stand_in_run(dir, NULL, "STEPS=5 SEEDS=3 DEPTHS=''", "sat_decoders.sh");
    char *err = stand_in_read(dir, "err.txt");
    EXPECT(st != 0 && err && strstr(err, "sat_decoders.sh: a run failed"), "status %d: %s", st, err ? err : "");
    free(err);
    // A failed depth run (not side by side): not scored, the others are (the LSTM run above
    // is kept; the Transformer and its maps scored), the script fails.
    write_stand_in("transformer_L3");
    st = stand_in_run(dir, NULL, "STEPS=5 SEEDS=3 PAIRED=0 DEPTHS=3", "sat_decoders.sh");
    err = stand_in_read(dir, "err.txt");
    char *called = stand_in_read(dir, "called.txt");
    EXPECT(st != 0 && err && strstr(err, "sat_decoders.sh: a run failed") && count(called, "eval --model") == 11 &&
               count(called, "L3_seed3/model") == 0,
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
