#include "cli/train_run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/adam.h"
#include "core/check.h"
#include "core/fileio.h"
#include "core/rng.h"
#include "core/text_escape.h"
#include "core/timer.h"

// ---------------------------------------------------------------------------------------
// Budget

double train_process_cpu_now(void) {
    struct timespec ts;
    CHECK(clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void train_budget_begin(TrainBudget *b) {
    b->t0 = timer_now();
    b->cpu0 = train_process_cpu_now();
}

double train_budget_cpu_used(const TrainBudget *b) {
    return b->cpu_before + (train_process_cpu_now() - b->cpu0);
}

static bool out_of_time(const TrainBudget *b) {
    return (b->seconds > 0 && timer_now() - b->t0 >= b->seconds) ||
           (b->cpu_seconds > 0 && train_budget_cpu_used(b) >= b->cpu_seconds);
}

bool train_budget_allows(const TrainBudget *b, long step) {
    return (b->end_step == 0 || step < b->end_step) && !out_of_time(b);
}

bool train_budget_spent(const TrainBudget *b, long step) {
    return (b->end_step > 0 && step >= b->end_step) || out_of_time(b);
}

void train_budget_describe(const TrainBudget *b, char *buf, size_t n) {
    CHECK(n > 0);
    buf[0] = 0;
    int k = b->end_step ? snprintf(buf, n, " of %ld", b->end_step) : 0;
    if (b->seconds > 0 && k >= 0 && (size_t)k < n)
        k += snprintf(buf + k, n - (size_t)k, "%s%g minutes", b->end_step ? ", at most " : ", ",
                      b->seconds / 60.0);
    if (b->cpu_seconds > 0 && k >= 0 && (size_t)k < n)
        snprintf(buf + k, n - (size_t)k, "%s%g CPU seconds",
                 b->end_step || b->seconds > 0 ? ", at most " : ", ", b->cpu_seconds);
}

// ---------------------------------------------------------------------------------------
// Epoch order

void train_order_init(TrainOrder *o, int n) {
    o->perm = xmalloc(sizeof(int) * (size_t)n);
    o->n = n;
    o->epoch = -1;
}

const int *train_order_of(TrainOrder *o, long epoch, uint64_t epoch_seed) {
    if (epoch != o->epoch) {
        for (int k = 0; k < o->n; k++) o->perm[k] = k;
        Rng rng;
        rng_seed(&rng, epoch_seed);
        rng_shuffle(&rng, o->perm, o->n);
        o->epoch = epoch;
    }
    return o->perm;
}

const int *train_order_batch(TrainOrder *o, long step, int steps_per_epoch, int batch,
                             uint64_t seed) {
    long epoch = step / steps_per_epoch, i = step % steps_per_epoch;
    const int *perm = train_order_of(o, epoch, rng_mix(seed, 0xE90C0000ULL + (uint64_t)epoch));
    return perm + i * batch;
}

void train_order_free(TrainOrder *o) {
    free(o->perm);
    o->perm = NULL;
}

// ---------------------------------------------------------------------------------------
// Cadence

static bool every(long step, int n) { return n > 0 && step % n == 0; }

TrainDue train_due(const TrainCadence *c, long step, bool last) {
    CHECK(c->steps_per_epoch >= 1 && c->log_every >= 1);
    TrainDue d;
    d.epoch_end = step % c->steps_per_epoch == 0;
    d.validate = (c->valid_every > 0 ? every(step, c->valid_every) : d.epoch_end) || last;
    d.log = every(step, c->log_every) || (c->log_at_validation && d.validate) ||
            (c->log_at_epoch_end && d.epoch_end);
    d.save = every(step, c->save_every) || last || (c->save_at_validation && d.validate);
    return d;
}

// ---------------------------------------------------------------------------------------
// Plan and paths

void train_plan_default(TrainPlanFlags *f) {
    if (f->steps == 0 && f->epochs == 0 && f->minutes == 0) f->epochs = 1;
}

void train_plan(const TrainPlanFlags *f, long steps_per_epoch, TrainBudget *b, TrainCadence *c) {
    long end = f->steps > 0 ? f->steps : (f->epochs > 0 ? (long)f->epochs * steps_per_epoch : 0);
    *b = (TrainBudget){.end_step = end, .seconds = f->minutes * 60.0};
    *c = (TrainCadence){.steps_per_epoch = steps_per_epoch, .log_every = f->log_every,
                        .valid_every = f->valid_every,
                        .save_every = f->ckpt_every ? f->ckpt_every : f->valid_every,
                        .log_at_validation = true};
}

void train_paths(TrainPaths *p, const char *out) {
    snprintf(p->model, sizeof p->model, "%s/model.safetensors", out);
    snprintf(p->log, sizeof p->log, "%s/log.csv", out);
    snprintf(p->plot, sizeof p->plot, "%s/loss.png", out);
}

// ---------------------------------------------------------------------------------------
// Meter

void train_meter_start(TrainMeter *m, const TrainBudget *b, long start_step, bool show) {
    memset(m, 0, sizeof *m);
    m->show = show;
    m->start_step = start_step;
    long total = b->end_step > start_step ? b->end_step - start_step : 0;
    progress_start(&m->progress, "train", total, b->seconds);
    progress_name(&m->progress, "steps", "images");
}

void train_meter_step(TrainMeter *m, long step, int images, double seconds, const char *status) {
    m->steps = step - m->start_step;
    m->images += images;
    m->train_seconds += seconds;
    progress_items(&m->progress, m->images);
    if (m->show) progress_update(&m->progress, m->steps, status);
}

void train_meter_break(const TrainMeter *m) {
    if (m->show && m->progress.tty) fputc('\n', stderr);
}

void train_meter_end(TrainMeter *m, long step, const char *status) {
    m->steps = step - m->start_step;
    if (m->show) progress_end(&m->progress, m->steps, status);
}

double train_meter_images_per_s(const TrainMeter *m) {
    return m->train_seconds > 0 ? m->images / m->train_seconds : 0.0;
}

void train_norms_add(TrainNorms *w, double norm) {
    w->sum += norm;
    if (w->n == 0 || norm > w->max) w->max = norm;
    w->n++;
}

void train_norms_take(TrainNorms *w, double *mean, double *max) {
    *mean = w->n ? w->sum / (double)w->n : NAN;
    *max = w->n ? w->max : NAN;
    *w = (TrainNorms){0};
}

// ---------------------------------------------------------------------------------------
// Weight average

void train_ema_start(TrainEma *e, const Block *params, float decay) {
    e->decay = decay;
    if (decay > 0 && !e->avg.data) block_clone(&e->avg, params);
}

void train_ema_update(TrainEma *e, const Block *params, long step) {
    if (e->avg.data) ema_update(e->avg.data, params->data, e->avg.numel, e->decay, step);
}

void train_ema_swap(TrainEma *e, Block *params) {
    if (!e->avg.data) return;
    CHECK(e->avg.numel == params->numel);
    float *restrict a = e->avg.data, *restrict b = params->data;
    for (size_t i = 0; i < e->avg.numel; i++) {
        float t = a[i];
        a[i] = b[i];
        b[i] = t;
    }
}

bool train_ema_on(const TrainEma *e) { return e->avg.data != NULL; }

void train_ema_free(TrainEma *e) { block_free(&e->avg); }

// ---------------------------------------------------------------------------------------
// Output folder

static const char *first_existing(char *path, size_t cap, const char *out,
                                  const char *const *files, int n) {
    for (int i = 0; i < n; i++) {
        snprintf(path, cap, "%s/%s", out, files[i]);
        if (file_exists(path)) return path;
    }
    return NULL;
}

int train_out_check(const char *out, const char *const *files, int n, bool resume, bool force,
                    Error *err) {
    char path[1200];
    if (resume || force || !first_existing(path, sizeof path, out, files, n)) return 0;
    return error_set(err, "%s already holds a run (%s): add --resume to continue it, --force to "
                          "start over in it, or choose another --out", out, path);
}

static int remove_old(const char *path, Error *err) {
    if (unlink(path) != 0 && errno != ENOENT)
        return error_set(err, "%s: cannot remove the old run's file: %s", path, strerror(errno));
    return 0;
}

// Whether name is one the toolkit writes into an output folder of pictures and pages.
static bool toolkit_output(const char *name) {
    static const char *const ends[] = {".png", ".gif", ".html", ".json", ".txt"};
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof ends / sizeof *ends; i++) {
        size_t k = strlen(ends[i]);
        if (n > k && strcmp(name + n - k, ends[i]) == 0) return true;
    }
    return false;
}

// The pictures and pages in OUT/folder, and the folder when that empties it.
static int remove_old_folder(const char *out, const char *folder, Error *err) {
    char dir[1200], path[1500];
    snprintf(dir, sizeof dir, "%s/%s", out, folder);
    DIR *d = opendir(dir);
    if (!d) return 0;  // none (or not a folder: not the toolkit's)
    int rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d)) != NULL;) {
        if (!toolkit_output(e->d_name)) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISREG(st.st_mode)) rc = remove_old(path, err);
    }
    closedir(d);
    if (rc == 0) rmdir(dir);  // fails, as it should, when something else is left
    return rc;
}

int train_out_clear(const char *out, const char *const *files, int n, bool resume, bool force,
                    Error *err) {
    if (resume || !force) return 0;
    static const char *const old_files[] = {TRAIN_OLD_RUN_FILES};
    static const char *const old_folders[] = {TRAIN_OLD_RUN_FOLDERS};
    char path[1200];
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", out, files[i]);
        if (remove_old(path, err)) return -1;
    }
    for (size_t i = 0; i < sizeof old_files / sizeof *old_files; i++) {
        snprintf(path, sizeof path, "%s/%s", out, old_files[i]);
        if (remove_old(path, err)) return -1;
    }
    for (size_t i = 0; i < sizeof old_folders / sizeof *old_folders; i++)
        if (remove_old_folder(out, old_folders[i], err)) return -1;
    return 0;
}

// The pid written in a lock file, 0 when it holds none.
static long lock_holder(int fd) {
    char buf[32] = {0};
    ssize_t k = pread(fd, buf, sizeof buf - 1, 0);
    return k > 0 ? atol(buf) : 0;
}

static int take_lock(TrainLock *lock, const char *out, Error *err) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", out, TRAIN_LOCK_FILE);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return error_set(err, "%s: cannot open the run folder's lock: %s", path, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        long pid = e == EWOULDBLOCK ? lock_holder(fd) : 0;
        close(fd);
        if (e != EWOULDBLOCK)
            return error_set(err, "%s: cannot lock the run folder: %s", path, strerror(e));
        char who[48] = "";
        if (pid > 0) snprintf(who, sizeof who, " (pid %ld)", pid);
        return error_set(err, "%s is in use by another training run%s; wait for it or choose "
                              "another --out", out, who);
    }
    char pid[32];
    int k = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    // The pid is for the message above; a failure to write it loses nothing.
    if (ftruncate(fd, 0) == 0 && pwrite(fd, pid, (size_t)k, 0) < 0) {
    }
    *lock = (TrainLock){.fd = fd, .held = true};
    return 0;
}

static int refuse_resume_force(const char *out, bool resume, bool force, Error *err) {
    if (!(resume && force)) return 0;
    return error_set(err, "--resume and --force: --resume continues the run in %s, --force "
                          "replaces it; give one", out);
}

static bool is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int train_out_open(TrainLock *lock, const char *out, const char *const *files, int n,
                   bool resume, bool force, Error *err) {
    if (refuse_resume_force(out, resume, force, err)) return -1;
    if (!lock->held && is_dir(out) && take_lock(lock, out, err)) return -1;
    return train_out_check(out, files, n, resume, force, err);
}

int train_out_make(TrainLock *lock, const char *out, const char *const *files, int n,
                   bool resume, bool force, Error *err) {
    if (refuse_resume_force(out, resume, force, err)) return -1;
    if (lock->held) return 0;
    // Checked again under the lock: another run may have made the folder since.
    return make_dirs(out, err) || take_lock(lock, out, err) ||
                   train_out_check(out, files, n, resume, force, err)
               ? -1
               : 0;
}

void train_lock_release(TrainLock *lock) {
    if (lock->held) close(lock->fd);  // closing the descriptor releases the flock
    *lock = (TrainLock){0};
}

// ---------------------------------------------------------------------------------------
// Interruption

// The one mutable global of the trainers: a signal handler can only leave a note.
static volatile sig_atomic_t interrupted_by;

static void on_stop_signal(int sig) { interrupted_by = sig; }

void train_process_begin(const char *command) {
    check_set_program(command);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART | SA_RESETHAND;  // a second signal takes the default action
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGXFSZ, SIG_IGN);
}

int train_interrupted(void) { return (int)interrupted_by; }

int train_interrupt_error(long step, Error *err) {
    return error_set(err, "interrupted by %s after step %ld; --resume continues from the last "
                          "checkpoint", interrupted_by == SIGTERM ? "SIGTERM" : "SIGINT", step);
}

// ---------------------------------------------------------------------------------------
// Flags against a checkpoint

// Appends "SHOWN (checkpoint: SAVED)".
static void add_diff(FlagDiffs *d, const char *shown, const char *saved) {
    size_t len = strlen(d->text);
    snprintf(d->text + len, sizeof d->text - len, "%s%s (checkpoint: %s)", d->n ? ", " : "", shown,
             saved);
    d->n++;
}

void flag_diffs_text(FlagDiffs *d, const char *flag, bool given, const char *now,
                     const char *saved) {
    if (!given || strcmp(now, saved) == 0) return;
    char shown[300];
    snprintf(shown, sizeof shown, "--%s %s", flag, now);
    add_diff(d, shown, saved);
}

void flag_diffs_int(FlagDiffs *d, const char *flag, bool given, long now, long saved) {
    char a[32], b[32];
    snprintf(a, sizeof a, "%ld", now);
    snprintf(b, sizeof b, "%ld", saved);
    flag_diffs_text(d, flag, given, a, b);
}

void flag_diffs_float(FlagDiffs *d, const char *flag, bool given, double now, double saved) {
    if (!given || now == saved) return;
    char a[32], b[32];
    snprintf(a, sizeof a, "%g", now);
    snprintf(b, sizeof b, "%g", saved);
    if (strcmp(a, b) == 0) {  // equal at %g: show every digit
        snprintf(a, sizeof a, "%.9g", now);
        snprintf(b, sizeof b, "%.9g", saved);
    }
    flag_diffs_text(d, flag, given, a, b);
}

void flag_diffs_switch(FlagDiffs *d, const char *flag, bool given, bool now_on, bool saved_on) {
    if (!given || now_on == saved_on) return;
    char shown[300];
    snprintf(shown, sizeof shown, "--%s%s", flag, now_on ? "" : "=false");
    add_diff(d, shown, saved_on ? "on" : "off");
}

int flag_diffs_refuse(const FlagDiffs *d, const char *ckpt, Error *err) {
    if (d->n == 0) return 0;
    return error_set(err, "--resume: %s was trained with other model flags: %s; leave %s out to "
                          "continue that run, or train into another --out",
                     ckpt, d->text, d->n == 1 ? "it" : "them");
}

// ---------------------------------------------------------------------------------------
// Optimiser settings

TrainOptim train_optim_new(const TrainOptimFlags *f) {
    return (TrainOptim){.seed = (uint64_t)f->seed, .batch = f->batch, .lr = f->lr,
                        .beta1 = f->beta1, .clip = f->clip, .lr_decay = f->lr_decay};
}

void train_optim_resume(TrainOptim *o, const TrainOptimFlags *f, FlagDiffs *changed) {
    flag_diffs_int(changed, "batch", f->given.batch, f->batch, o->batch);
    flag_diffs_float(changed, "lr", f->given.lr, f->lr, o->lr);
    flag_diffs_float(changed, "lr-decay", f->given.lr_decay, f->lr_decay, o->lr_decay);
    flag_diffs_float(changed, "beta1", f->given.beta1, f->beta1, o->beta1);
    flag_diffs_float(changed, "clip", f->given.clip, f->clip, o->clip);
    flag_diffs_int(changed, "seed", f->given.seed, f->seed, (long)o->seed);
    if (f->given.batch) o->batch = f->batch;
    if (f->given.lr) o->lr = f->lr;
    if (f->given.lr_decay) o->lr_decay = f->lr_decay;
    if (f->given.beta1) o->beta1 = f->beta1;
    if (f->given.clip) o->clip = f->clip;
    if (f->given.seed) o->seed = (uint64_t)f->seed;
}

void train_optim_meta(TrainOptimMeta *m, const TrainOptim *o, unsigned with) {
    m->n = 0;
#define PUT(key, ...)                                                          \
    do {                                                                       \
        snprintf(m->text[m->n], sizeof m->text[m->n], __VA_ARGS__);            \
        m->meta[m->n] = (SafetensorsMeta){key, m->text[m->n]};                 \
        m->n++;                                                                \
    } while (0)
    PUT("train.batch", "%d", o->batch);
    PUT("train.lr", "%.9g", (double)o->lr);
    if (with & TRAIN_OPTIM_BETA1) PUT("train.beta1", "%.9g", (double)o->beta1);
    if (with & TRAIN_OPTIM_LR_DECAY) PUT("train.lr_decay", "%.9g", (double)o->lr_decay);
    PUT("train.clip", "%.9g", (double)o->clip);
    PUT("train.seed", "%lld", (long long)(int64_t)o->seed);
#undef PUT
}

int train_optim_read(const SafetensorsFile *f, const char *path, unsigned with, int batch_max,
                     TrainOptim *o, Error *err) {
    long batch, seed;
    float lr, clip, beta1 = o->beta1, decay = o->lr_decay;
    if (safetensors_meta_long(f, path, "train.batch", NULL, 1, batch_max, &batch, err) ||
        safetensors_meta_long(f, path, "train.seed", NULL, LONG_MIN, LONG_MAX, &seed, err) ||
        safetensors_meta_float(f, path, "train.lr", &lr, err) ||
        safetensors_meta_float(f, path, "train.clip", &clip, err) ||
        ((with & TRAIN_OPTIM_BETA1) && safetensors_meta_float(f, path, "train.beta1", &beta1, err)) ||
        ((with & TRAIN_OPTIM_LR_DECAY) && safetensors_meta_float(f, path, "train.lr_decay", &decay, err)))
        return -1;
    if (!(lr > 0)) return error_set(err, "%s: metadata train.lr = %g is not positive", path, (double)lr);
    if (!(clip >= 0)) return error_set(err, "%s: metadata train.clip = %g is negative", path, (double)clip);
    if ((with & TRAIN_OPTIM_BETA1) && !(beta1 >= 0 && beta1 < 1))
        return error_set(err, "%s: metadata train.beta1 = %g out of range [0, 1)", path, (double)beta1);
    if ((with & TRAIN_OPTIM_LR_DECAY) && !(decay > 0 && decay <= 1))
        return error_set(err, "%s: metadata train.lr_decay = %g out of range (0, 1]", path, (double)decay);
    *o = (TrainOptim){.seed = (uint64_t)seed, .batch = (int)batch, .lr = lr, .beta1 = beta1,
                      .clip = clip, .lr_decay = decay};
    return 0;
}

AdamConfig train_optim_adam(const TrainOptim *o) {
    AdamConfig a = adam_defaults(o->lr);
    a.beta1 = o->beta1;
    return a;
}

Rng train_optim_init_rng(const TrainOptim *o) {
    Rng r;
    rng_seed(&r, rng_mix(o->seed, 0x1417));
    return r;
}

// ---------------------------------------------------------------------------------------
// Step checks

static long fault_nan_step(void) {
    const char *v = getenv("ATTEND_FAULT_NAN_STEP");
    return v && v[0] ? atol(v) : 0;
}

int train_check_finite(long step, const char *loss_name, double loss, Block *grads,
                       const char *ckpt, Error *err) {
    if (step == fault_nan_step()) grads->data[0] = NAN;
    const char *bad = isfinite(loss) ? block_first_nonfinite(grads) : NULL;
    if (isfinite(loss) && !bad) return 0;
    char what[160];
    if (bad)
        snprintf(what, sizeof what, "gradient of %s is not finite", bad);
    else
        snprintf(what, sizeof what, "the %s is %g", loss_name, loss);
    if (!file_exists(ckpt))
        return error_set(err, "step %ld: %s; stopping (no checkpoint was written)", step, what);
    return error_set(err, "step %ld: %s; stopping (last good checkpoint: %s)", step, what, ckpt);
}

double train_fault_valid_score(long step, double score) {
    const char *v = getenv("ATTEND_FAULT_NAN_VALID_STEP");
    return v && v[0] && atol(v) == step ? (double)NAN : score;
}

// ---------------------------------------------------------------------------------------
// Checkpoints

bool train_checkpoint_found(const char *ckpt, const char *command) {
    if (file_exists(ckpt)) return true;
    text_write_linef(stderr, "%s: %s: no checkpoint yet; starting from scratch", command, ckpt);
    return false;
}

int train_checkpoint_save(const char *path, const Block *params, const Block *m,
                          const Block *v, const SafetensorsMeta *meta, int n_meta, Error *err) {
    const Block *blocks[3] = {params, m, v};
    const char *prefixes[3] = {"", TRAIN_ADAM_M_PREFIX, TRAIN_ADAM_V_PREFIX};
    return safetensors_save(path, blocks, prefixes, m ? 3 : 1, meta, n_meta, err);
}

int train_checkpoint_read(Block *params, Block *m, Block *v, const SafetensorsFile *f,
                          const char *path, Error *err) {
    if (safetensors_read_block(params, "", f, path, err)) return -1;
    if (!m) return 0;
    if (safetensors_read_block(m, TRAIN_ADAM_M_PREFIX, f, path, err) ||
        safetensors_read_block(v, TRAIN_ADAM_V_PREFIX, f, path, err))
        return -1;
    return 0;
}

int train_weights_open(TrainWeights *w, const SafetensorsFile *file, const char *path, Error *err) {
    if (file && safetensors_check_block(&w->params, "", file, path, err)) return -1;
    block_layout_like(&w->grads, &w->params);
    block_layout_like(&w->mom1, &w->params);
    block_layout_like(&w->mom2, &w->params);
    block_alloc(&w->params), block_alloc(&w->grads), block_alloc(&w->mom1), block_alloc(&w->mom2);
    return file ? train_checkpoint_read(&w->params, &w->mom1, &w->mom2, file, path, err) : 0;
}

void train_weights_free(TrainWeights *w) {
    block_free(&w->params), block_free(&w->grads), block_free(&w->mom1), block_free(&w->mom2);
}

// ---------------------------------------------------------------------------------------
// Summary

const char *json_number(char buf[32], double x) {
    if (isfinite(x))
        snprintf(buf, 32, "%.6g", x);
    else
        snprintf(buf, 32, "null");
    return buf;
}
