// train_command.c: the command of a trainer on the shared driver, with or without ranks
// (cli/train_command.h).
#include "cli/train_command.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/run_info.h"
#include "cli/train_dist.h"
#include "cli/threads.h"
#include "core/check.h"
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

// A phase of opening ended with status rc on this rank: the ranks' outcomes compared, the
// line said (train_dist_agree). Returns 0 when every rank succeeded.
static int agreed(TrainCommandRun *c, int rc, const Error *err, bool *reported) {
    if (train_dist_agree(&c->dist, rc, c->command->program, err) == 0) return 0;
    *reported = true;
    return -1;
}

// The same for a phase of rank 0 alone (the folder's): its failure is every rank's, said
// by rank 0 as one process says it.
static int root_agreed(TrainCommandRun *c, int rc, const Error *err, bool *reported) {
    bool failed = rc != 0;
    Error dist_err;
    if (train_dist_root_decides(&c->dist, &failed, &dist_err))
        return agreed(c, -1, &dist_err, reported);
    if (!failed) return 0;
    if (dist_is_root(&c->dist)) text_write_linef(stderr, "%s: %s", c->command->program, err->msg);
    *reported = true;
    return -1;
}

// --resume: the state from OUT's checkpoint where there is one (else a new run, said in a
// line by train_checkpoint_found, by rank 0). Every rank reads it; one that finds it where
// rank 0 did not, or the other way, fails.
static int open_checkpoint(const TrainCommand *t, TrainCommandRun *c, void *run,
                           SafetensorsFile *file, Error *err) {
    const bool root = dist_is_root(&c->dist);
    bool found = c->flags->resume &&
                 (root ? train_checkpoint_found(c->paths.model, t->found_as) : file_exists(c->paths.model));
    bool root_found = found;
    if (train_dist_root_decides(&c->dist, &root_found, err)) return -1;
    if (found != root_found)
        return error_set(err, "%s: %s on this rank, %s on rank 0 (the ranks share one run "
                         "folder: start them where each sees it)", c->paths.model,
                         found ? "found" : "not found", root_found ? "found" : "not found");
    if (!found) return 0;
    if (safetensors_load(file, c->paths.model, err)) return -1;
    c->resumed = true;
    return t->resume(run, file, err);
}

// Every rank needs a row of each batch (the batch is the checkpoint's or the flags').
static int check_batch(const TrainCommandRun *c, Error *err) {
    if (*c->batch >= c->dist.size) return 0;
    return error_set(err, "--batch %d is less than the %d ranks: each rank needs a row of each "
                     "batch", *c->batch, c->dist.size);
}

// Everything before the first step, in phases whose outcomes the ranks compare (a failure
// is told there, *reported). The folder is made only once the flags, the checkpoint and
// the data are checked, so that a refused run leaves nothing behind. Rank 0 alone touches
// the folder.
static int open_run(const TrainCommand *t, TrainCommandRun *c, void *run, bool *reported,
                    Error *err) {
    const TrainCommandFlags *f = c->flags;
    const bool root = dist_is_root(&c->dist);
    train_paths(&c->paths, f->out);
    if (root_agreed(c, root ? train_out_open(&c->lock, f->out, RUN_FILES, 1, f->resume, f->force, err) : 0,
                    err, reported))
        return -1;
    SafetensorsFile file = {0};
    int rc = agreed(c, open_checkpoint(t, c, run, &file, err) || t->load_data(run, err) ||
                           check_batch(c, err), err, reported);
    if (rc == 0)
        rc = root_agreed(c, root ? train_out_make(&c->lock, f->out, RUN_FILES, 1, f->resume, f->force, err) : 0,
                         err, reported);
    if (rc == 0) {
        if (root) atomic_remove_stale(f->out);
        dist_share(&c->dist, *c->batch, &c->share_begin, &c->share_count);
        rc = agreed(c, t->init_model(run, &file, err), err, reported);
    }
    safetensors_free(&file);
    if (rc) return -1;
    train_plan(&f->plan, t->alloc(run), &c->budget, &c->cadence);
    if (t->save_with_validation && f->plan.ckpt_every == 0) c->cadence.save_at_validation = true;
    if (root)
        rc = train_out_clear(f->out, RUN_FILES, 1, f->resume, f->force, err) ||
             (c->resumed ? csvlog_open_resume(&c->log, c->paths.log, t->log_columns, *c->step, err)
                         : csvlog_open(&c->log, c->paths.log, t->log_columns, 0, err));
    return root_agreed(c, rc, err, reported);
}

static void print_header(const TrainCommand *t, const TrainCommandRun *c, const void *run) {
    if (t->warn_unused) t->warn_unused(run);
    if (c->resumed_with.n)
        text_write_linef(stderr, "%s: resuming with %s", t->command, c->resumed_with.text);
    char budget[64], details[2048], ranks[64] = "";
    train_budget_describe(&c->budget, budget, sizeof budget);
    t->header(run, details, sizeof details);
    if (c->dist.size > 1)
        snprintf(ranks, sizeof ranks, "; %d ranks, %d of each batch's rows or fewer each",
                 c->dist.size, train_command_share_most(c, *c->batch));
    fprintf(stderr, "%s: %s%s; step %ld%s\n", t->command, details, ranks, *c->step, budget);
}

// The steps until the budget is spent, a step fails or SIGINT/SIGTERM asks the run to stop
// (then *interrupted and train_interrupt_error), with the progress line (rank 0's). The
// meter's step time is the step's alone. Every rank makes the same collectives in the
// same order whatever happens: a failure is compared over the ranks (*outcome) and told
// after the loop.
static int run_steps(const TrainCommand *t, TrainCommandRun *c, void *run, DistOutcome *outcome,
                     Error *err) {
    const TrainSteps *s = &t->steps;
    char status[96] = "";
    int rc = 0;
    c->interrupted = false;
    train_budget_begin(&c->budget);
    train_meter_start(&c->meter, &c->budget, *c->step, dist_is_root(&c->dist));
    progress_name(&c->meter.progress, "steps", s->items);
    bool go = train_budget_allows(&c->budget, *c->step);  // rank 0's clock decides
    if (train_dist_root_decides(&c->dist, &go, err)) go = false, rc = -1;
    while (go) {
        train_dist_fault_point(&c->dist, *c->step + 1);
        double t0 = timer_now(), loss = NAN;
        rc = s->step(run, &loss, err);
        const double secs = timer_now() - t0;
        bool last = train_budget_spent(&c->budget, *c->step);
        Error dist_err;
        if (train_dist_root_decides(&c->dist, &last, &dist_err) && rc == 0) rc = -1, *err = dist_err;
        if (rc == 0) rc = s->after(run, loss, last, err);
        *outcome = dist_compare_outcomes(&c->dist, rc, rc ? err->msg : "");
        if (*outcome != DIST_ALL_OK) {
            rc = -1;
            break;
        }
        s->status(run, loss, status, sizeof status);
        train_meter_step(&c->meter, *c->step, *c->batch, secs, status);
        go = !last;
        bool stop;  // SIGINT or SIGTERM, rank 0's
        if (train_dist_interrupted(&c->dist, go, &stop, err)) {
            rc = -1;
            break;
        }
        if (stop) {
            c->interrupted = true;
            *outcome = DIST_SAME_FAILURE;
            rc = train_interrupt_error(*c->step, err);
            break;
        }
    }
    train_meter_end(&c->meter, *c->step, status);
    return rc;
}

static int finish_run(const TrainCommand *t, TrainCommandRun *c, void *run, Error *err) {
    csvlog_close(&c->log);
    if (!dist_is_root(&c->dist)) return 0;
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

int train_command_reduce(TrainCommandRun *c, double *loss, Block *grads, Error *err) {
    return train_dist_reduce_means(&c->dist, loss, 1, c->share_count, *c->batch, err) ||
                   train_dist_reduce_grads(&c->dist, grads, c->share_count, *c->batch, err)
               ? -1
               : 0;
}

int train_command_sum(TrainCommandRun *c, double *v, int n, Error *err) {
    return dist_allreduce_sum_f64(&c->dist, v, (size_t)n, err);
}

void train_command_share(const TrainCommandRun *c, int n, int *begin, int *count) {
    dist_share(&c->dist, n, begin, count);
}

int train_command_share_most(const TrainCommandRun *c, int n) {
    int begin, count;
    dist_share_of(0, c->dist.size, n, &begin, &count);
    return count;
}

void train_command_log_row(TrainCommandRun *c, const double *row, int n) {
    if (dist_is_root(&c->dist)) csvlog_row(&c->log, row, n);
}

int train_command_save(TrainCommandRun *c, void *run, Error *err) {
    return dist_is_root(&c->dist) ? c->command->save(run, err) : 0;
}

int train_command_dispatch(const char *program, const TrainCommandEntry *cmds, int n,
                           void (*overview)(FILE *), int argc, char **argv) {
    const char *names[16];
    CHECK(n >= 1 && n <= 16, "train_command_dispatch: %d commands", n);
    for (int i = 0; i < n; i++) names[i] = cmds[i].name;
    int which;
    Error err;
    const int r = args_subcommand(argc, argv, names, n, &which, &err);
    if (r == ARGS_HELP) {
        if (args_reporting_process()) overview(stdout);
        return 0;
    }
    if (r == ARGS_ERROR) {
        if (args_reporting_process()) fprintf(stderr, "%s: %s\n", program, err.msg);
        return 2;
    }
    if (!cmds[which].ranks &&
        train_dist_one_process_only(program, cmds[which].name, TRAIN_COMMAND_RANKED))
        return 2;
    return cmds[which].main(argc - 1, argv + 1);
}

int train_command_main(const TrainCommand *t, TrainCommandRun *c, void *run, int argc,
                       char **argv) {
    if (!t->ranks && train_dist_one_process_only(t->program, "train", TRAIN_COMMAND_RANKED)) return 2;
    train_process_begin(t->command);
    gemm_set_threads(c->flags->threads);
    c->command = t;
    Error err;
    if (dist_init(&c->dist, &err)) {
        text_write_linef(stderr, "%s: %s", t->program, err.msg);
        return 1;
    }
    const bool root = dist_is_root(&c->dist);
    bool reported = false;  // the failure was told by the ranks that met it
    DistOutcome outcome = DIST_SOME_FAILED;
    int rc = open_run(t, c, run, &reported, &err);
    if (rc == 0) {
        RunInfo run_info;
        if (root)
            run_info_begin(&run_info, c->flags->out, t->program, argc, argv, c->flags->threads,
                           c->dist.size, c->flags->resume);
        if (root) print_header(t, c, run);
        rc = run_steps(t, c, run, &outcome, &err);
        if (rc) {
            train_dist_report(&c->dist, outcome, rc, t->program, &err);
            reported = true;
        } else {
            rc = finish_run(t, c, run, &err);  // rank 0's alone (a plot that cannot be written)
        }
        if (root)
            run_info_end(&run_info, c->interrupted ? RUN_INFO_INTERRUPTED : rc, *c->step,
                         train_meter_images_per_s(&c->meter));
    }
    t->free(run);
    csvlog_close(&c->log);
    train_lock_release(&c->lock);
    if (rc && !reported) train_dist_print(&c->dist, t->program, &err);
    dist_finalize(&c->dist);
    return rc ? 1 : 0;
}
