// train_command.c: the command of a trainer without ranks (cli/train_command.h).
#include "cli/train_command.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/run_info.h"
#include "cli/threads.h"
#include "core/fileio.h"
#include "core/gemm.h"
#include "core/text_escape.h"
#include "core/timer.h"

static const char *const RUN_FILES[] = {"model.safetensors"};

int train_command_specs(ArgSpec *specs, const ArgSpec *own, int n_own, TrainCommandFlags *cmd,
                        TrainOptimFlags *optim, const TrainCommandHelp *help) {
    memcpy(specs, own, (size_t)n_own * sizeof *own);
    const ArgSpec shared[] = {
        {"batch", ARG_INT, &optim->batch, help->batch, .has_min = true, .min = 1, .has_max = true, .max = help->batch_max, .given = &optim->given.batch},
        {"lr", ARG_FLOAT, &optim->lr, "Adam learning rate", .has_min = true, .min = 0, .min_exclusive = true, .has_max = true, .max = 1, .given = &optim->given.lr},
        {"lr-decay", ARG_FLOAT, &optim->lr_decay, help->lr_decay, .has_min = true, .min = 0, .min_exclusive = true, .has_max = true, .max = 1, .given = &optim->given.lr_decay},
        {"beta1", ARG_FLOAT, &optim->beta1, "Adam beta1", .has_min = true, .min = 0, .has_max = true, .max = 1, .max_exclusive = true, .given = &optim->given.beta1},
        {"clip", ARG_FLOAT, &optim->clip, help->clip, .has_min = true, .min = 0, .given = &optim->given.clip},
        {"steps", ARG_LONG, &cmd->plan.steps, "train until this many steps in total (0: use --epochs/--minutes)", .has_min = true, .min = 0},
        {"epochs", ARG_INT, &cmd->plan.epochs, help->epochs, .has_min = true, .min = 0},
        {"minutes", ARG_DOUBLE, &cmd->plan.minutes, "stop after this much wall time in this run", .has_min = true, .min = 0},
        {"seed", ARG_LONG, &optim->seed, help->seed, .has_min = true, .min = 0, .given = &optim->given.seed},
        {"resume", ARG_FLAG, &cmd->resume, "continue from OUT/model.safetensors; model and data flags given must match it, --batch/--lr/--beta1/--clip/--seed given replace its values", .given = NULL},
        {"force", ARG_FLAG, &cmd->force, help->force, .given = NULL},
        {"threads", ARG_INT, &cmd->threads, "threads of the matrix products", .has_min = true, .min = 1, .has_max = true, .max = THREADS_MAX},
        {"valid-every", ARG_INT, &cmd->plan.valid_every, "steps between validations and checkpoints (0: each epoch's end)", .has_min = true, .min = 0},
        {"log-every", ARG_INT, &cmd->plan.log_every, "steps between rows of log.csv", .has_min = true, .min = 1},
        {"checkpoint-every", ARG_INT, &cmd->plan.ckpt_every, "steps between checkpoints (0: with validation)", .has_min = true, .min = 0},
        {"json", ARG_FLAG, &cmd->json, "print the final figures as one JSON object", .given = NULL},
    };
    _Static_assert(ARGS_LEN(shared) == TRAIN_COMMAND_SPECS, "TRAIN_COMMAND_SPECS: the rows");
    int n = n_own;
    for (int i = 0; i < ARGS_LEN(shared); i++)
        if (shared[i].help) specs[n++] = shared[i];  // no help: a flag the trainer lacks
    return n;
}

// --resume: the state from OUT's checkpoint where there is one (else a new run, said in a
// line by train_checkpoint_found).
static int open_checkpoint(const TrainCommand *t, TrainCommandRun *c, void *run,
                           SafetensorsFile *file, Error *err) {
    if (!c->flags->resume || !train_checkpoint_found(c->paths.model, t->found_as)) return 0;
    if (safetensors_load(file, c->paths.model, err)) return -1;
    c->resumed = true;
    return t->resume(run, file, err);
}

// Everything before the first step. The folder is made only once the flags, the
// checkpoint and the data are checked, so that a refused run leaves nothing behind.
static int open_run(const TrainCommand *t, TrainCommandRun *c, void *run, Error *err) {
    const TrainCommandFlags *f = c->flags;
    train_paths(&c->paths, f->out);
    SafetensorsFile file = {0};
    int rc = train_out_open(&c->lock, f->out, RUN_FILES, 1, f->resume, f->force, err) ||
             open_checkpoint(t, c, run, &file, err) || t->load_data(run, err) ||
             train_out_make(&c->lock, f->out, RUN_FILES, 1, f->resume, f->force, err);
    if (rc == 0) {
        atomic_remove_stale(f->out);
        rc = t->init_model(run, &file, err);
    }
    safetensors_free(&file);
    if (rc) return -1;
    train_plan(&f->plan, t->alloc(run), &c->budget, &c->cadence);
    if (t->save_with_validation && f->plan.ckpt_every == 0) c->cadence.save_at_validation = true;
    if (train_out_clear(f->out, RUN_FILES, 1, f->resume, f->force, err)) return -1;
    return c->resumed ? csvlog_open_resume(&c->log, c->paths.log, t->log_columns, *c->step, err)
                      : csvlog_open(&c->log, c->paths.log, t->log_columns, 0, err);
}

static void print_header(const TrainCommand *t, const TrainCommandRun *c, const void *run) {
    if (t->warn_unused) t->warn_unused(run);
    if (c->resumed_with.n)
        text_write_linef(stderr, "%s: resuming with %s", t->command, c->resumed_with.text);
    char budget[64], details[2048];
    train_budget_describe(&c->budget, budget, sizeof budget);
    t->header(run, details, sizeof details);
    fprintf(stderr, "%s: %s; step %ld%s\n", t->command, details, *c->step, budget);
}

static int finish_run(const TrainCommand *t, TrainCommandRun *c, void *run, Error *err) {
    csvlog_close(&c->log);
    // A run of no steps (--resume at its end) still leaves a model behind.
    if (c->meter.steps == 0 && !file_exists(c->paths.model) && t->save(run, err)) return -1;
    if (report_plot_log(c->paths.log, c->paths.plot, &t->curves, err)) return -1;
    const double rate = train_meter_images_per_s(&c->meter), secs = timer_now() - c->budget.t0;
    char valid[96] = "no validation in this run";
    t->valid_summary(run, valid, sizeof valid);
    // Wall time includes validation and checkpoints; the rate counts the steps' time alone.
    text_write_linef(stderr, "%s: %ld steps in %.1f s wall; %.1f %s/s of step time; %s; wrote %s",
                     t->command, c->meter.steps, secs, rate, t->steps.items, valid, c->paths.model);
    if (!c->flags->json) return 0;
    printf("{\"steps\": %ld, ", *c->step);
    t->json_fields(run, stdout);
    printf("\"%s_per_s\": %.6g, \"seconds\": %.6g, \"model\": ", t->steps.items, rate, secs);
    text_json_string(stdout, c->paths.model);
    printf("}\n");
    return 0;
}

int train_command_main(const TrainCommand *t, TrainCommandRun *c, void *run, int argc,
                       char **argv) {
    train_process_begin(t->command);
    gemm_set_threads(c->flags->threads);
    Error err;
    int rc = open_run(t, c, run, &err);
    if (rc == 0) {
        RunInfo run_info;
        run_info_begin(&run_info, c->flags->out, t->program, argc, argv, c->flags->threads, 1,
                       c->flags->resume);
        print_header(t, c, run);
        rc = train_loop_run(&c->meter, &c->budget, c->step, *c->batch, &t->steps, run,
                            &c->interrupted, &err);
        if (rc == 0) rc = finish_run(t, c, run, &err);
        run_info_end(&run_info, c->interrupted ? RUN_INFO_INTERRUPTED : rc, *c->step,
                     train_meter_images_per_s(&c->meter));
    }
    t->free(run);
    csvlog_close(&c->log);
    train_lock_release(&c->lock);
    if (rc == 0) return 0;
    fprintf(stderr, "%s: %s\n", t->program, err.msg);
    return 1;
}
