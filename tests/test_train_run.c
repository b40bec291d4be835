// test_train_run.c: the parts of a training run the programs share (cli/train_run.h) and
// the default thread count (cli/threads.h): when the budget stops a run, which steps log,
// validate and save in draw's and caption's cadences and how draw's flags set them, the
// budget in a header line, the epoch order and the batches cut from it, the one-line
// messages for flags that differ on --resume and for a folder that already holds a run,
// the optimiser settings that --resume takes from the flags given, Adam's settings and the
// initial weights' stream from them, a run folder's paths and the --resume check for its
// checkpoint, a checkpoint's weights and moments, the run's four blocks of weights, the
// non-finite stop (naming no checkpoint that does not exist), the run folder's lock and
// --force's removals, the weight average's swap, the log window's gradient norms, JSON nulls,
// and a thread count that follows the affinity mask.
#define _GNU_SOURCE  // sched_setaffinity, CPU_SET
#include <math.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/threads.h"
#include "cli/train_run.h"
#include "core/block.h"
#include "core/fileio.h"
#include "core/rng.h"
#include "core/timer.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"

static char tmp[256];

static void test_budget_steps_and_time(void) {
    TrainBudget b = {.end_step = 10};
    train_budget_begin(&b);
    EXPECT(train_budget_allows(&b, 0) && train_budget_allows(&b, 9) && !train_budget_allows(&b, 10));
    EXPECT(!train_budget_spent(&b, 9) && train_budget_spent(&b, 10));
    // A time budget alone: no step limit until the time is up.
    TrainBudget t = {.seconds = 60};
    train_budget_begin(&t);
    EXPECT(train_budget_allows(&t, 1000000) && !train_budget_spent(&t, 1000000));
    t.t0 -= 61;  // a minute has passed
    EXPECT(!train_budget_allows(&t, 5) && train_budget_spent(&t, 5));
    // Both: whichever comes first.
    TrainBudget both = {.end_step = 3, .seconds = 60};
    train_budget_begin(&both);
    EXPECT(!train_budget_allows(&both, 3) && train_budget_allows(&both, 2));
    both.t0 -= 61;
    EXPECT(!train_budget_allows(&both, 2));
}

// A CPU budget counts the process's CPU time, the earlier invocations' (cpu_before)
// included, and not wall time: a sleep spends none, a busy loop does.
static volatile double sink;
static void burn_cpu(double seconds) {
    double t0 = train_process_cpu_now();
    while (train_process_cpu_now() - t0 < seconds)
        for (int i = 0; i < 10000; i++) sink += 1e-9 * i;
}

static void test_budget_cpu(void) {
    TrainBudget c = {.cpu_seconds = 0.2};
    train_budget_begin(&c);
    EXPECT(train_budget_allows(&c, 1000000) && !train_budget_spent(&c, 1000000));
    usleep(300000);  // 0.3 s of wall time, next to no CPU
    EXPECT(train_budget_allows(&c, 5) && train_budget_cpu_used(&c) < 0.1, "used %g",
           train_budget_cpu_used(&c));
    burn_cpu(0.25);
    EXPECT(!train_budget_allows(&c, 5) && train_budget_spent(&c, 5), "used %g", train_budget_cpu_used(&c));
    double used = train_budget_cpu_used(&c);
    EXPECT(used >= 0.25 && used < 1.0, "used %g", used);
    // A resumed run: what the earlier invocations spent counts.
    TrainBudget r = {.cpu_seconds = 10, .cpu_before = 9.9};
    train_budget_begin(&r);
    EXPECT(train_budget_allows(&r, 0) && train_budget_cpu_used(&r) >= 9.9);
    burn_cpu(0.15);
    EXPECT(!train_budget_allows(&r, 1), "used %g", train_budget_cpu_used(&r));
    TrainBudget spent = {.cpu_seconds = 10, .cpu_before = 10};
    train_budget_begin(&spent);
    EXPECT(!train_budget_allows(&spent, 0));
    // With a step limit: whichever comes first.
    TrainBudget both = {.end_step = 3, .cpu_seconds = 100};
    train_budget_begin(&both);
    EXPECT(train_budget_allows(&both, 2) && !train_budget_allows(&both, 3));
}

static void test_budget_described(void) {
    char got[64];
    TrainBudget steps = {.end_step = 3000}, time = {.seconds = 1800}, both = {.end_step = 50, .seconds = 90};
    TrainBudget none = {0};
    train_budget_describe(&steps, got, sizeof got);
    EXPECT(!strcmp(got, " of 3000"), "%s", got);
    train_budget_describe(&time, got, sizeof got);
    EXPECT(!strcmp(got, ", 30 minutes"), "%s", got);
    train_budget_describe(&both, got, sizeof got);
    EXPECT(!strcmp(got, " of 50, at most 1.5 minutes"), "%s", got);
    train_budget_describe(&none, got, sizeof got);
    EXPECT(!strcmp(got, ""), "%s", got);
    TrainBudget cpu = {.cpu_seconds = 300}, cpu_steps = {.end_step = 50, .cpu_seconds = 300};
    train_budget_describe(&cpu, got, sizeof got);
    EXPECT(!strcmp(got, ", 300 CPU seconds"), "%s", got);
    train_budget_describe(&cpu_steps, got, sizeof got);
    EXPECT(!strcmp(got, " of 50, at most 300 CPU seconds"), "%s", got);
    char small[6];  // cut short, still a string
    train_budget_describe(&both, small, sizeof small);
    EXPECT(!strcmp(small, " of 5"), "%s", small);
}

// An epoch's order is rng_shuffle of 0..n-1 under its seed, kept while the epoch stays
// and made anew when it changes.
static void test_order_by_epoch(void) {
    enum { N = 50 };
    TrainOrder o;
    train_order_init(&o, N);
    int want[N];
    for (int k = 0; k < N; k++) want[k] = k;
    Rng rng;
    rng_seed(&rng, 77);
    rng_shuffle(&rng, want, N);
    const int *got = train_order_of(&o, 0, 77);
    EXPECT(!memcmp(got, want, sizeof want), "epoch 0 is the shuffle of its seed");
    // The same epoch with another seed: not shuffled again (the epoch decides).
    got = train_order_of(&o, 0, 78);
    EXPECT(!memcmp(got, want, sizeof want), "epoch 0 kept");
    got = train_order_of(&o, 1, 78);
    EXPECT(memcmp(got, want, sizeof want) != 0, "epoch 1 is another order");
    int seen[N] = {0};
    for (int k = 0; k < N; k++) seen[got[k]]++;
    for (int k = 0; k < N; k++) EXPECT(seen[k] == 1, "index %d appears %d times", k, seen[k]);
    train_order_free(&o);
    EXPECT(o.perm == NULL);
}

// draw's and draw classify's batches: step s of an epoch of `spe` batches takes positions
// [i B, i B + B) of its epoch's order, i = s mod spe, the order seeded from (seed, epoch)
// as it always was (a resumed run's batches depend on it); the epoch's remainder is
// dropped.
static void test_order_batch_slices_the_epoch(void) {
    enum { N = 50, B = 12, SPE = N / B };
    const uint64_t seed = 5;
    TrainOrder o, ref;
    train_order_init(&o, N);
    train_order_init(&ref, N);
    int seen[N] = {0};
    for (long step = SPE; step < 2 * SPE; step++) {  // epoch 1
        const int *got = train_order_batch(&o, step, SPE, B, seed);
        const int *epoch = train_order_of(&ref, 1, rng_mix(seed, 0xE90C0000ULL + 1));
        EXPECT(!memcmp(got, epoch + (step - SPE) * B, B * sizeof *got), "step %ld", step);
        for (int b = 0; b < B; b++) seen[got[b]]++;
    }
    int once = 0;
    for (int k = 0; k < N; k++) once += seen[k] == 1;
    EXPECT(once == SPE * B, "an epoch's batches are disjoint: %d of %d indices once", once, SPE * B);
    const int *next = train_order_batch(&o, 2 * SPE, SPE, B, seed);
    const int *epoch2 = train_order_of(&ref, 2, rng_mix(seed, 0xE90C0000ULL + 2));
    EXPECT(!memcmp(next, epoch2, B * sizeof *next), "epoch 2 starts its own order");
    train_order_free(&o);
    train_order_free(&ref);
}

// --steps, --epochs, --minutes into the budget; --valid-every, --checkpoint-every and
// --log-every into the cadence.
static void test_plan_budget_and_cadence(void) {
    TrainBudget b;
    TrainCadence c;
    TrainPlanFlags none = {.log_every = 5, .valid_every = 20};
    train_plan_default(&none);
    EXPECT(none.epochs == 1, "no budget: one epoch, got %d", none.epochs);
    train_plan(&none, 7, &b, &c);
    EXPECT(b.end_step == 7 && b.seconds == 0, "%ld %g", b.end_step, b.seconds);
    EXPECT(c.steps_per_epoch == 7 && c.log_every == 5 && c.valid_every == 20 && c.save_every == 20 &&
           c.log_at_validation && !c.log_at_epoch_end && !c.save_at_validation);
    TrainPlanFlags steps = {.steps = 10, .epochs = 3, .log_every = 1, .valid_every = 2, .ckpt_every = 4};
    train_plan_default(&steps);
    train_plan(&steps, 7, &b, &c);
    EXPECT(steps.epochs == 3 && b.end_step == 10, "--steps over --epochs: %ld", b.end_step);
    EXPECT(c.save_every == 4, "--checkpoint-every: %d", c.save_every);
    TrainPlanFlags minutes = {.minutes = 2, .log_every = 1, .valid_every = 2};
    train_plan_default(&minutes);
    train_plan(&minutes, 7, &b, &c);
    EXPECT(minutes.epochs == 0 && b.end_step == 0 && b.seconds == 120, "--minutes alone: %ld %g",
           b.end_step, b.seconds);
}

// A run folder's files, and the --resume check that finds its checkpoint or says it starts
// from scratch.
static void test_paths_and_checkpoint_found(void) {
    TrainPaths p;
    train_paths(&p, tmp);
    char want[600];
    snprintf(want, sizeof want, "%s/model.safetensors", tmp);
    EXPECT(!strcmp(p.model, want), "%s", p.model);
    snprintf(want, sizeof want, "%s/log.csv", tmp);
    EXPECT(!strcmp(p.log, want), "%s", p.log);
    snprintf(want, sizeof want, "%s/loss.png", tmp);
    EXPECT(!strcmp(p.plot, want), "%s", p.plot);
    EXPECT(!train_checkpoint_found(p.model, "test"), "no checkpoint yet");
    Error err;
    EXPECT(file_write_atomic(p.model, "x", 1, &err) == 0, "%s", err.msg);
    EXPECT(train_checkpoint_found(p.model, "test"));
    remove(p.model);
}

// Adam's settings from the run's: its learning rate and beta1, the rest core/adam's.
static void test_optim_adam_and_init_stream(void) {
    TrainOptim o = {.seed = 9, .batch = 4, .lr = 2.5e-4f, .beta1 = 0.5f, .clip = 1};
    AdamConfig a = train_optim_adam(&o), d = adam_defaults(1e-3f);
    EXPECT(a.lr == 2.5e-4f && a.beta1 == 0.5f && a.beta2 == d.beta2 && a.eps == d.eps &&
           a.weight_decay == d.weight_decay);
    Rng r1 = train_optim_init_rng(&o), r2 = train_optim_init_rng(&o);
    o.seed = 10;
    Rng r3 = train_optim_init_rng(&o);
    uint64_t x1 = rng_u64(&r1), x2 = rng_u64(&r2), x3 = rng_u64(&r3);
    EXPECT(x1 == x2 && x1 != x3, "the stream is the seed's");
}

// "lvs" for each step 1..n: log, validate, save ('-' where not due).
static void due_pattern(char *out, const TrainCadence *c, int n, int last) {
    for (int s = 1; s <= n; s++) {
        TrainDue d = train_due(c, s, s == last);
        *out++ = d.log ? 'l' : '-';
        *out++ = d.validate ? 'v' : '-';
        *out++ = d.save ? 's' : '-';
        *out++ = ' ';
    }
    out[-1] = 0;
}

static void test_cadence_draw_and_caption(void) {
    char got[256];
    // draw: log every 2, validate every 3 (with a log row), checkpoints with validation
    // (save_every = valid_every), the last step (5) validates and saves.
    TrainCadence draw = {.steps_per_epoch = 100, .log_every = 2, .valid_every = 3, .save_every = 3,
                         .log_at_validation = true};
    due_pattern(got, &draw, 6, 5);
    EXPECT(!strcmp(got, "--- l-- lvs l-- lvs lvs"), "draw: %s", got);
    // draw with --checkpoint-every 4: no checkpoint at validations.
    draw.save_every = 4;
    due_pattern(got, &draw, 6, 0);
    EXPECT(!strcmp(got, "--- l-- lv- l-s --- lv-"), "draw, checkpoint every 4: %s", got);
    // caption: 4 steps per epoch, validation and a checkpoint at epoch ends and at the last
    // step (6), a training row every 5 steps and at epoch ends (not at the last step), a
    // state every 3 steps.
    TrainCadence cap = {.steps_per_epoch = 4, .log_every = 5, .save_every = 3,
                        .log_at_epoch_end = true, .save_at_validation = true};
    due_pattern(got, &cap, 6, 6);
    EXPECT(!strcmp(got, "--- --- --s lvs l-- -vs"), "caption: %s", got);
    TrainDue d = train_due(&cap, 8, false);
    EXPECT(d.epoch_end && d.validate && d.log && d.save);
}

static void test_flag_diffs_name_both_values(void) {
    FlagDiffs d = {0};
    flag_diffs_int(&d, "T", false, 8, 4);            // not given: takes the checkpoint's
    flag_diffs_int(&d, "hidden", true, 24, 24);      // given, the same
    EXPECT(d.n == 0 && d.text[0] == 0, "%s", d.text);
    Error err;
    EXPECT(flag_diffs_refuse(&d, "r/model.safetensors", &err) == 0);
    flag_diffs_int(&d, "T", true, 8, 4);
    flag_diffs_text(&d, "channels", true, "4,8", "4,8,16");
    flag_diffs_float(&d, "lambda", true, 1.0, 3.0);
    flag_diffs_float(&d, "dropout", true, 0.2f, 0.2f);  // the same float
    flag_diffs_switch(&d, "no-attention", true, true, false);
    flag_diffs_switch(&d, "beta-vector", true, false, true);
    EXPECT(d.n == 5, "%d differ: %s", d.n, d.text);
    EXPECT(!strcmp(d.text, "--T 8 (checkpoint: 4), --channels 4,8 (checkpoint: 4,8,16), "
                           "--lambda 1 (checkpoint: 3), --no-attention (checkpoint: off), "
                           "--beta-vector=false (checkpoint: on)"),
           "%s", d.text);
    EXPECT(flag_diffs_refuse(&d, "r/model.safetensors", &err) == -1);
    EXPECT(strstr(err.msg, "--resume: r/model.safetensors was trained with other model flags: --T 8 "
                           "(checkpoint: 4), ") == err.msg && strstr(err.msg, "leave them out") &&
               strstr(err.msg, "another --out") && !strchr(err.msg, '\n'),
           "%s", err.msg);
    // Floats that print alike at %g show every digit.
    FlagDiffs f = {0};
    flag_diffs_float(&f, "lr", true, 0.0010000001, 0.001);
    EXPECT(f.n == 1 && strstr(f.text, "0.0010000001"), "%s", f.text);
}


static void test_optim_resume_takes_given_flags(void) {
    const TrainOptim saved = {.seed = 7, .batch = 100, .lr = 1e-3f, .beta1 = 0.9f, .clip = 10.0f};
    TrainOptimFlags f = {.seed = 1, .batch = 64, .lr = 5e-4f, .beta1 = 0.5f, .clip = 5.0f};
    // A new run takes every flag's value, given or default.
    TrainOptim fresh = train_optim_new(&f);
    EXPECT(fresh.seed == 1 && fresh.batch == 64 && fresh.lr == 5e-4f && fresh.beta1 == 0.5f &&
           fresh.clip == 5.0f);
    // Nothing given: the checkpoint's values stay, nothing is named.
    TrainOptim o = saved;
    FlagDiffs said = {0};
    train_optim_resume(&o, &f, &said);
    EXPECT(memcmp(&o, &saved, sizeof o) == 0, "a flag left out replaced the checkpoint's value");
    EXPECT(said.n == 0 && said.text[0] == 0, "named '%s'", said.text);
    // Given, equal to the checkpoint's: nothing to name either.
    f.batch = 100, f.given.batch = true;
    train_optim_resume(&o, &f, &said);
    EXPECT(o.batch == 100 && said.n == 0, "named '%s'", said.text);
    // Given and different: replaced, and named in batch, lr, beta1, clip, seed order;
    // beta1 left out keeps the checkpoint's.
    f = (TrainOptimFlags){.seed = 3, .batch = 32, .lr = 2e-3f, .beta1 = 0.5f, .clip = 0.0f,
                          .given = {.seed = true, .batch = true, .lr = true, .clip = true}};
    o = saved;
    train_optim_resume(&o, &f, &said);
    EXPECT(o.seed == 3 && o.batch == 32 && o.lr == 2e-3f && o.beta1 == 0.9f && o.clip == 0.0f,
           "seed %llu batch %d lr %g beta1 %g clip %g", (unsigned long long)o.seed, o.batch,
           (double)o.lr, (double)o.beta1, (double)o.clip);
    EXPECT(said.n == 4 && strcmp(said.text, "--batch 32 (checkpoint: 100), --lr 0.002 (checkpoint: "
                                            "0.001), --clip 0 (checkpoint: 10), --seed 3 (checkpoint: 7)") == 0,
           "named '%s'", said.text);
    // --lr-decay (caption train) sits after --lr; the names add to what the caller holds
    // (draw train adds --ema and --data after them).
    const TrainOptim decayed = {.seed = 1, .batch = 32, .lr = 2e-3f, .lr_decay = 0.7f, .clip = 5.0f};
    f = (TrainOptimFlags){.seed = 1, .batch = 32, .lr = 1e-3f, .lr_decay = 0.5f, .clip = 5.0f,
                          .given = {.lr = true, .lr_decay = true}};
    o = decayed;
    FlagDiffs more = {0};
    flag_diffs_text(&more, "data", true, "b.idx", "a.idx");
    train_optim_resume(&o, &f, &more);
    EXPECT(o.lr == 1e-3f && o.lr_decay == 0.5f && o.batch == 32, "lr %g lr_decay %g",
           (double)o.lr, (double)o.lr_decay);
    EXPECT(more.n == 3 && strcmp(more.text, "--data b.idx (checkpoint: a.idx), --lr 0.001 (checkpoint: "
                                            "0.002), --lr-decay 0.5 (checkpoint: 0.7)") == 0,
           "named '%s'", more.text);
}

static void test_out_check_refuses_a_run(void) {
    char dir[600], path[700];
    Error err;
    snprintf(dir, sizeof dir, "%s/run", tmp);
    EXPECT(make_dirs(dir, &err) == 0, "%s", err.msg);
    static const char *const files[] = {"state.safetensors", "model.safetensors"};
    EXPECT(train_out_check(dir, files, 2, false, false, &err) == 0, "an empty folder: %s", err.msg);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    EXPECT(file_write_atomic(path, "x", 1, &err) == 0, "%s", err.msg);
    EXPECT(train_out_check(dir, files, 2, false, false, &err) == -1);
    EXPECT(strstr(err.msg, "already holds a run") && strstr(err.msg, path) &&
               strstr(err.msg, "--resume") && strstr(err.msg, "--force") &&
               strstr(err.msg, "another --out"),
           "%s", err.msg);
    EXPECT(train_out_check(dir, files, 2, true, false, &err) == 0, "--resume");
    EXPECT(train_out_check(dir, files, 2, false, true, &err) == 0, "--force");
    // --resume never clears; --force clears the old run's checkpoints only.
    snprintf(path, sizeof path, "%s/log.csv", dir);
    EXPECT(file_write_atomic(path, "step\n", 5, &err) == 0, "%s", err.msg);
    EXPECT(train_out_clear(dir, files, 2, true, true, &err) == 0);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    EXPECT(file_exists(path), "--resume removed the model");
    EXPECT(train_out_clear(dir, files, 2, false, true, &err) == 0, "%s", err.msg);
    EXPECT(!file_exists(path), "--force kept the old model");
    snprintf(path, sizeof path, "%s/log.csv", dir);
    EXPECT(file_exists(path), "--force removed log.csv (opened anew by the run)");
}

// A layout of two tensors (w 2 x 3, b of b_len), the first filled with base + i, the
// second with base + 10 + i; its padding zero.
static void small_block(Block *b, float base, int b_len) {
    memset(b, 0, sizeof *b);
    block_add(b, NULL, "layer.w", 2, 2, 3);
    block_add(b, NULL, "layer.b", 1, b_len);
    block_alloc(b);
    for (int t = 0; t < b->count; t++)  // the tensors (the block pads between them)
        for (size_t i = 0; i < b->tensors[t].numel; i++)
            b->data[b->tensors[t].offset + i] = base + (float)(t * 10 + i);
}

static bool same_blocks(const Block *a, const Block *b) {
    return a->numel == b->numel && !memcmp(a->data, b->data, a->numel * sizeof *a->data);
}

static void test_checkpoint_round_trip(void) {
    char path[700];
    snprintf(path, sizeof path, "%s/ckpt.safetensors", tmp);
    Block p, m, v, p2, m2, v2;
    small_block(&p, 1, 3), small_block(&m, 100, 3), small_block(&v, 200, 3);
    const SafetensorsMeta meta[1] = {{"format", "test"}};
    Error err;
    EXPECT(train_checkpoint_save(path, &p, &m, &v, meta, 1, &err) == 0, "%s", err.msg);
    small_block(&p2, 0, 3), small_block(&m2, 0, 3), small_block(&v2, 0, 3);
    SafetensorsFile f;
    EXPECT(safetensors_load(&f, path, &err) == 0, "%s", err.msg);
    EXPECT(safetensors_find(&f, "adam.m/layer.w") && safetensors_find(&f, "adam.v/layer.b"),
           "the moments' names");
    EXPECT(train_checkpoint_read(&p2, &m2, &v2, &f, path, &err) == 0, "%s", err.msg);
    EXPECT(same_blocks(&p, &p2) && same_blocks(&m, &m2) && same_blocks(&v, &v2),
           "read back differs");
    // Another layout is refused with the file and the tensor named.
    Block wrong;
    small_block(&wrong, 0, 4);
    EXPECT(train_checkpoint_read(&wrong, NULL, NULL, &f, path, &err) == -1);
    EXPECT(strstr(err.msg, path) && strstr(err.msg, "layer.b"), "%s", err.msg);
    safetensors_free(&f);
    // Without moments: the weights alone, which a read that asks for moments refuses.
    EXPECT(train_checkpoint_save(path, &p, NULL, NULL, meta, 1, &err) == 0, "%s", err.msg);
    EXPECT(safetensors_load(&f, path, &err) == 0, "%s", err.msg);
    EXPECT(!safetensors_find(&f, "adam.m/layer.w"), "a model file holds moments");
    EXPECT(train_checkpoint_read(&p2, NULL, NULL, &f, path, &err) == 0, "%s", err.msg);
    EXPECT(train_checkpoint_read(&p2, &m2, &v2, &f, path, &err) == -1 &&
               strstr(err.msg, "adam.m/"), "%s", err.msg);
    safetensors_free(&f);
    Block *all[] = {&p, &m, &v, &p2, &m2, &v2, &wrong};
    for (int i = 0; i < 7; i++) block_free(all[i]);
}

// The optimiser's settings through a checkpoint's metadata: the keys `with` names and no
// others, every value read back as written (a negative seed too), and a file without a
// setting `with` asks for refused by its key.
static void test_optim_meta_round_trip(void) {
    char path[700];
    snprintf(path, sizeof path, "%s/optim.safetensors", tmp);
    Block p;
    small_block(&p, 1, 3);
    const TrainOptim saved = {.seed = (uint64_t)-7, .batch = 12, .lr = 3e-4f, .beta1 = 0.5f,
                              .clip = 2.5f, .lr_decay = 0.8f};
    static const unsigned withs[] = {TRAIN_OPTIM_BETA1, TRAIN_OPTIM_LR_DECAY};
    Error err;
    for (int k = 0; k < 2; k++) {
        TrainOptimMeta om;
        train_optim_meta(&om, &saved, withs[k]);
        EXPECT(train_checkpoint_save(path, &p, NULL, NULL, om.meta, om.n, &err) == 0, "%s", err.msg);
        SafetensorsFile f;
        EXPECT(safetensors_load(&f, path, &err) == 0, "%s", err.msg);
        const bool beta1 = withs[k] == TRAIN_OPTIM_BETA1;
        EXPECT(om.n == 5 && !safetensors_meta(&f, beta1 ? "train.lr_decay" : "train.beta1"),
               "with %u: %d keys", withs[k], om.n);
        EXPECT(!strcmp(safetensors_meta(&f, "train.seed") ? safetensors_meta(&f, "train.seed") : "", "-7"),
               "the seed as the signed --seed");
        TrainOptim read = {.beta1 = 0.9f, .lr_decay = 1};
        EXPECT(train_optim_read(&f, path, withs[k], 16, &read, &err) == 0, "%s", err.msg);
        EXPECT(read.seed == saved.seed && read.batch == 12 && read.lr == saved.lr &&
                   read.clip == saved.clip,
               "with %u: read back differs", withs[k]);
        EXPECT(beta1 ? read.beta1 == 0.5f && read.lr_decay == 1 : read.beta1 == 0.9f && read.lr_decay == 0.8f,
               "with %u: the optional settings", withs[k]);
        // A batch above the command's largest, and a setting asked for that was not written.
        EXPECT(train_optim_read(&f, path, withs[k], 8, &read, &err) == -1 &&
                   strstr(err.msg, path) && strstr(err.msg, "train.batch = 12"), "%s", err.msg);
        EXPECT(train_optim_read(&f, path, TRAIN_OPTIM_BETA1 | TRAIN_OPTIM_LR_DECAY, 16, &read, &err) == -1 &&
                   strstr(err.msg, beta1 ? "train.lr_decay" : "train.beta1"), "%s", err.msg);
        safetensors_free(&f);
    }
    block_free(&p);
}

// A run's four blocks: laid out as the parameters, zeroed without a checkpoint, read from
// one; a checkpoint for another layout refused before anything is allocated.
static void test_weights_open(void) {
    char path[700];
    snprintf(path, sizeof path, "%s/weights.safetensors", tmp);
    Block p, m, v;
    small_block(&p, 1, 3), small_block(&m, 100, 3), small_block(&v, 200, 3);
    Error err;
    EXPECT(train_checkpoint_save(path, &p, &m, &v, NULL, 0, &err) == 0, "%s", err.msg);
    TrainWeights fresh = {0};
    block_add(&fresh.params, NULL, "layer.w", 2, 2, 3);
    block_add(&fresh.params, NULL, "layer.b", 1, 3);
    EXPECT(train_weights_open(&fresh, NULL, path, &err) == 0, "%s", err.msg);
    const Block *four[] = {&fresh.params, &fresh.grads, &fresh.mom1, &fresh.mom2};
    for (int k = 0; k < 4; k++) {
        EXPECT(four[k]->data && four[k]->count == 2 && four[k]->numel == fresh.params.numel,
               "block %d: laid out as the parameters", k);
        EXPECT(four[k]->data && four[k]->data[0] == 0.0f && !strcmp(four[k]->tensors[1].name, "layer.b"),
               "block %d: zeroed, the same names", k);
    }
    train_weights_free(&fresh);
    SafetensorsFile f;
    EXPECT(safetensors_load(&f, path, &err) == 0, "%s", err.msg);
    TrainWeights read = {0};
    block_add(&read.params, NULL, "layer.w", 2, 2, 3);
    block_add(&read.params, NULL, "layer.b", 1, 3);
    EXPECT(train_weights_open(&read, &f, path, &err) == 0, "%s", err.msg);
    EXPECT(same_blocks(&read.params, &p) && same_blocks(&read.mom1, &m) && same_blocks(&read.mom2, &v),
           "the checkpoint's weights and moments");
    EXPECT(read.grads.data && read.grads.data[0] == 0.0f, "gradients zeroed");
    train_weights_free(&read);
    // A layout the file does not hold (a corrupt configuration claiming a huge tensor):
    // refused naming the file, nothing allocated.
    TrainWeights huge = {0};
    block_add(&huge.params, NULL, "layer.w", 2, 1 << 20, 1 << 12);
    block_add(&huge.params, NULL, "layer.b", 1, 3);
    EXPECT(train_weights_open(&huge, &f, path, &err) == -1 && strstr(err.msg, path) &&
               strstr(err.msg, "layer.w"), "%s", err.msg);
    EXPECT(!huge.params.data && !huge.grads.data && !huge.mom1.count, "allocated before the check");
    train_weights_free(&huge);
    safetensors_free(&f);
    block_free(&p), block_free(&m), block_free(&v);
}

static void test_check_finite_names_step_and_tensor(void) {
    Block g = {0};
    block_add(&g, NULL, "enc.W", 1, 4);
    block_add(&g, NULL, "dec.b", 1, 3);
    block_alloc(&g);
    for (size_t i = 0; i < g.numel; i++) g.data[i] = 0.5f;
    Error err;
    // The checkpoint named exists (relative to the folder the test works in here).
    char cwd[1024];
    EXPECT(getcwd(cwd, sizeof cwd) && chdir(tmp) == 0);
    EXPECT(make_dirs("r", &err) == 0 && file_write_atomic("r/model.safetensors", "x", 1, &err) == 0);
    EXPECT(train_check_finite(3, "loss", 1.5, &g, "r/model.safetensors", &err) == 0);
    EXPECT(train_check_finite(4, "bound", NAN, &g, "r/model.safetensors", &err) == -1);
    EXPECT(!strcmp(err.msg, "step 4: the bound is nan; stopping (last good checkpoint: r/model.safetensors)"),
           "%s", err.msg);
    EXPECT(chdir(cwd) == 0);
    float *db = g.data + g.tensors[1].offset;  // dec.b (tensors may be padded apart)
    db[1] = INFINITY;
    EXPECT(train_check_finite(5, "loss", 1.0, &g, "r/m", &err) == -1);
    EXPECT(strstr(err.msg, "step 5: gradient of dec.b is not finite"), "%s", err.msg);
    db[1] = 0.5f;
    setenv("ATTEND_FAULT_NAN_STEP", "7", 1);
    EXPECT(train_check_finite(6, "loss", 1.0, &g, "r/m", &err) == 0, "step 6 is not the fault step");
    EXPECT(train_check_finite(7, "loss", 1.0, &g, "r/m", &err) == -1 && strstr(err.msg, "enc.W"),
           "the injected fault: %s", err.msg);
    unsetenv("ATTEND_FAULT_NAN_STEP");
    block_free(&g);
}

// A stop before the first checkpoint (or after --force removed the old one) names no file
// that does not exist.
static void test_check_finite_without_a_checkpoint(void) {
    Block g = {0};
    block_add(&g, NULL, "enc.W", 1, 4);
    block_alloc(&g);
    char ckpt[700];
    snprintf(ckpt, sizeof ckpt, "%s/none/model.safetensors", tmp);
    Error err;
    EXPECT(train_check_finite(2, "loss", NAN, &g, ckpt, &err) == -1);
    EXPECT(!strcmp(err.msg, "step 2: the loss is nan; stopping (no checkpoint was written)"), "%s", err.msg);
    g.data[1] = NAN;
    EXPECT(train_check_finite(3, "loss", 1.0, &g, ckpt, &err) == -1);
    EXPECT(!strcmp(err.msg, "step 3: gradient of enc.W is not finite; stopping (no checkpoint was written)"),
           "%s", err.msg);
    block_free(&g);
}

// One training run at a time in a folder: a second lock is refused naming the folder and
// the holder's pid, and taken once the first is released; --resume with --force refused;
// a folder made only before the first write, and checked again under its lock.
static void test_out_open_locks_the_folder(void) {
    char dir[600], pid[48];
    Error err = {{0}};
    snprintf(dir, sizeof dir, "%s/locked/run", tmp);
    static const char *const files[] = {"model.safetensors"};
    TrainLock a = {0}, b = {0};
    EXPECT(train_out_open(&a, dir, files, 1, false, false, &err) == 0, "%s", err.msg);
    EXPECT(!a.held && !file_exists(dir), "open made the folder or locked it");
    EXPECT(train_out_make(&a, dir, files, 1, false, false, &err) == 0, "%s", err.msg);
    EXPECT(a.held && file_exists(dir));
    EXPECT(train_out_make(&a, dir, files, 1, false, false, &err) == 0, "again, holding it: %s", err.msg);
    EXPECT(train_out_open(&a, dir, files, 1, false, false, &err) == 0, "again, holding it: %s", err.msg);
    EXPECT(train_out_open(&b, dir, files, 1, true, false, &err) == -1 && !b.held);
    snprintf(pid, sizeof pid, "(pid %ld)", (long)getpid());
    EXPECT(strstr(err.msg, dir) && strstr(err.msg, "in use by another training run") &&
               strstr(err.msg, pid) && strstr(err.msg, "another --out"),
           "%s", err.msg);
    train_lock_release(&a);
    EXPECT(!a.held);
    EXPECT(train_out_open(&b, dir, files, 1, true, false, &err) == 0, "after release: %s", err.msg);
    train_lock_release(&b);
    TrainLock c = {0};
    EXPECT(train_out_open(&c, dir, files, 1, true, true, &err) == -1 && !c.held);
    EXPECT(strstr(err.msg, "--resume and --force") && strstr(err.msg, "give one"), "%s", err.msg);
    EXPECT(train_out_make(&c, dir, files, 1, true, true, &err) == -1 && !c.held);
    // A run made in the folder between the two calls is seen under the lock.
    snprintf(dir, sizeof dir, "%s/locked/late", tmp);
    EXPECT(train_out_open(&c, dir, files, 1, false, false, &err) == 0 && !c.held);
    char model[700];
    snprintf(model, sizeof model, "%s/model.safetensors", dir);
    EXPECT(make_dirs(dir, &err) == 0 && file_write_atomic(model, "x", 1, &err) == 0);
    EXPECT(train_out_make(&c, dir, files, 1, false, false, &err) == -1 && strstr(err.msg, "already holds a run"),
           "%s", err.msg);
    train_lock_release(&c);
}

// --force leaves only the new run: the old report, curves, run.json and the pictures the
// toolkit wrote into samples/ go; a file of the user's stays, and so does its folder.
static void test_out_clear_removes_the_old_outputs(void) {
    char dir[600], path[800];
    Error err = {{0}};
    snprintf(dir, sizeof dir, "%s/forced", tmp);
    static const char *const files[] = {"model.safetensors"};
    static const char *const old[] = {"model.safetensors", "report.html", "curves.png", "loss.png",
                                      "run.json", "eval.json", "report_files/bound.png",
                                      "samples/final.png", "samples/draw.gif", "film/step_01.png",
                                      "film/notes.md", "mine.txt"};
    for (size_t i = 0; i < sizeof old / sizeof *old; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, old[i]);
        char *slash = strrchr(path, '/');
        *slash = 0;
        EXPECT(make_dirs(path, &err) == 0, "%s", err.msg);
        *slash = '/';
        EXPECT(file_write_atomic(path, "x", 1, &err) == 0, "%s", err.msg);
    }
    EXPECT(train_out_clear(dir, files, 1, false, true, &err) == 0, "%s", err.msg);
    for (size_t i = 0; i < sizeof old / sizeof *old; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, old[i]);
        bool kept = !strcmp(old[i], "film/notes.md") || !strcmp(old[i], "mine.txt");
        EXPECT(file_exists(path) == kept, "%s %s", old[i], kept ? "removed" : "kept");
    }
    snprintf(path, sizeof path, "%s/samples", dir);
    EXPECT(!file_exists(path), "the emptied samples/ stays");
    snprintf(path, sizeof path, "%s/film", dir);
    EXPECT(file_exists(path), "film/ (holding a file of the user's) removed");
}

static void test_ema_swap_and_off(void) {
    Block p = {0};
    block_add(&p, NULL, "w", 1, 3);
    block_alloc(&p);
    for (int i = 0; i < 3; i++) p.data[i] = (float)i;
    TrainEma off = {0};
    train_ema_start(&off, &p, 0.0f);
    train_ema_update(&off, &p, 1);
    train_ema_swap(&off, &p);
    EXPECT(!train_ema_on(&off) && p.data[2] == 2.0f, "an average that is off changed the weights");
    TrainEma e = {0};
    train_ema_start(&e, &p, 0.5f);
    EXPECT(train_ema_on(&e) && e.avg.data[2] == 2.0f, "the average starts at the weights");
    for (int i = 0; i < 3; i++) p.data[i] = 10.0f;
    train_ema_update(&e, &p, 1000);  // decay min(0.5, 1001/1010) = 0.5
    EXPECT(e.avg.data[0] == 5.0f && e.avg.data[2] == 6.0f, "average %g %g", e.avg.data[0], e.avg.data[2]);
    train_ema_swap(&e, &p);
    EXPECT(p.data[0] == 5.0f && e.avg.data[0] == 10.0f, "swap");
    train_ema_swap(&e, &p);
    EXPECT(p.data[0] == 10.0f && e.avg.data[0] == 5.0f, "swap back");
    train_ema_free(&e);
    block_free(&p);
}

static void test_norms_window_mean_max_and_reset(void) {
    TrainNorms w = {0};
    double mean, max;
    train_norms_take(&w, &mean, &max);
    EXPECT(isnan(mean) && isnan(max), "an empty window gives %g, %g", mean, max);
    train_norms_add(&w, 3.0);
    train_norms_add(&w, 0.5);
    train_norms_add(&w, 2000.0);
    train_norms_take(&w, &mean, &max);
    EXPECT(fabs(mean - 2003.5 / 3) < 1e-9 && max == 2000.0, "mean %g, max %g", mean, max);
    train_norms_add(&w, 0.25);  // the next window starts empty
    train_norms_take(&w, &mean, &max);
    EXPECT(mean == 0.25 && max == 0.25, "mean %g, max %g", mean, max);
}

static void test_json_number_null(void) {
    char b[32];
    EXPECT(!strcmp(json_number(b, NAN), "null") && !strcmp(json_number(b, INFINITY), "null"));
    EXPECT(!strcmp(json_number(b, 0.25), "0.25"), "%s", b);
}

// The default thread count is the affinity mask's CPU count: one CPU allowed gives 1.
static void test_threads_follow_affinity(void) {
    cpu_set_t saved, one;
    EXPECT(sched_getaffinity(0, sizeof saved, &saved) == 0);
    int all = CPU_COUNT(&saved);
    EXPECT(threads_available() == (all < THREADS_MAX ? all : THREADS_MAX), "%d threads, %d CPUs",
           threads_available(), all);
    int first = 0;
    while (first < CPU_SETSIZE && !CPU_ISSET(first, &saved)) first++;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    if (sched_setaffinity(0, sizeof one, &one) == 0) {
        EXPECT(threads_available() == 1, "one CPU allowed, %d threads", threads_available());
        sched_setaffinity(0, sizeof saved, &saved);
    } else {
        EXPECT(0, "cannot set this process's affinity");
    }
}

int main(void) {
    if (scratch_make(tmp, sizeof tmp, "test_train_run")) return 1;
    RUN(test_budget_steps_and_time);
    RUN(test_budget_cpu);
    RUN(test_budget_described);
    RUN(test_order_by_epoch);
    RUN(test_order_batch_slices_the_epoch);
    RUN(test_cadence_draw_and_caption);
    RUN(test_plan_budget_and_cadence);
    RUN(test_paths_and_checkpoint_found);
    RUN(test_optim_adam_and_init_stream);
    RUN(test_flag_diffs_name_both_values);
    RUN(test_optim_resume_takes_given_flags);
    RUN(test_out_check_refuses_a_run);
    RUN(test_checkpoint_round_trip);
    RUN(test_optim_meta_round_trip);
    RUN(test_weights_open);
    RUN(test_check_finite_names_step_and_tensor);
    RUN(test_check_finite_without_a_checkpoint);
    RUN(test_out_open_locks_the_folder);
    RUN(test_out_clear_removes_the_old_outputs);
    RUN(test_ema_swap_and_off);
    RUN(test_norms_window_mean_max_and_reset);
    RUN(test_json_number_null);
    RUN(test_threads_follow_affinity);
    int rc = test_summary();
    if (rc == 0) scratch_remove(tmp);
    return rc;
}
