// test_run_folder.c: the life of a run folder in the trainers, `draw train`, `caption
// train`, `draw classify train` (and `text classify train` for the lock, the interruption,
// the resumed log and --resume --force) (issue 56, "nothing lost, nothing crashes";
// cli/train_run.h):
// - a second training into a folder that one is training in is refused in one line naming
//   the folder and the pid of the first (both used to exit 0, one run silently lost);
// - SIGINT or SIGTERM stops a run after a step: one line, a non-zero exit, run.json's
//   status "interrupted" (it stayed "running");
// - --resume drops the rows an interrupted run logged after its checkpoint, and a row cut
//   short, so that no step is logged twice;
// - a run refused for its data makes no folder;
// - --resume with --force is refused; --force leaves only the new run in the folder (the
//   old report, curves and pictures go, a file of the user's stays);
// - a NaN before the first checkpoint, or after --force removed the old one, says that no
//   checkpoint was written (it named a file that does not exist);
// - a write past ulimit -f and an allocation past ulimit -v end the run with one line
//   naming the file or what was allocated, a non-zero exit, the checkpoint as it was
//   (SIGXFSZ killed the run without a word; the allocation aborted, status 134);
// - caption train: a kill between its best model's write and its state's (the model newer
//   than the state) is seen on --resume, said on one line, and the state takes the model
//   as its best.
// Binaries come from $ATTEND_BIN (default "bin").
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/safetensors.h"
#include "core/timer.h"
#include "tests/support/cli_check.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"

static Scratch draw_sc, cap_sc, text_sc;

#define DRAW_TINY                                                                          \
    "train --data mnist --T 4 --read 2 --write 3 --hidden 24 --z 6 --batch 16 --seed 7 "   \
    "--valid-every 5 --valid-images 32 --log-every 1 --threads 1"
#define CLASSIFY_TINY                                                                      \
    "classify train --T 2 --read 4 --hidden 8 --batch 8 --valid-every 3 --valid-images 16 " \
    "--log-every 1 --threads 1"
#define TEXT_TINY                                                                          \
    "classify train --data sentiment --embed 4 --hidden 4 --batch 50 --seed 3 "            \
    "--valid-every 2 --log-every 1 --threads 1"
#define CAPTION_TINY                                                                       \
    "train --image-size 64 --channels 4,8,16 --embed 8 --hidden 16 --attn-dim 8 --batch 8"    \
    " --train-count 32 --val-count-scenes 8 --test-count 8 --threads 1 --quiet --seed 4"    \
    " --log-every 1"

// Starts BIN/PROG ARGS (space-separated, no quoting), stdout and stderr into DIR/bg_out.txt
// and DIR/bg_err.txt, with the signals' default actions; resource > 0: under that limit.
static pid_t spawn(const Scratch *sc, const char *args, int resource, rlim_t limit) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", args);
    char *argv[128];
    int n = 0;
    argv[n++] = (char *)sc->program;
    for (char *t = strtok(buf, " "); t && n < 126; t = strtok(NULL, " ")) argv[n++] = t;
    argv[n] = NULL;
    fflush(stdout);
    pid_t pid = fork();
    if (pid != 0) return pid;
    char o[600], e[600];
    snprintf(o, sizeof o, "%s/bg_out.txt", sc->dir);
    snprintf(e, sizeof e, "%s/bg_err.txt", sc->dir);
    int fo = open(o, O_WRONLY | O_CREAT | O_TRUNC, 0644), fe = open(e, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fo < 0 || fe < 0) _exit(126);
    dup2(fo, 1), dup2(fe, 2);
    close(fo), close(fe);
    signal(SIGXFSZ, SIG_DFL), signal(SIGINT, SIG_DFL), signal(SIGTERM, SIG_DFL);
    if (resource >= 0) {
        struct rlimit rl = {limit, limit};
        if (setrlimit(resource, &rl) != 0) _exit(126);
    }
    execv(sc->program, argv);
    _exit(127);
}

static pid_t spawnf(const Scratch *sc, int resource, rlim_t limit, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static pid_t spawnf(const Scratch *sc, int resource, rlim_t limit, const char *fmt, ...) {
    char args[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return spawn(sc, args, resource, limit);
}

// Exit status, or -(signal) when a signal ended it.
static int wait_status(pid_t pid) {
    int st;
    if (waitpid(pid, &st, 0) != pid) return -1000;
    return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? -WTERMSIG(st) : -1000;
}

// The background run's stderr: its line count and its last line.
static char *bg_err(const Scratch *sc, int *lines, char *last, size_t cap) {
    char path[600];
    snprintf(path, sizeof path, "%s/bg_err.txt", sc->dir);
    char *s = scratch_read_text(path, NULL);
    *lines = scratch_count_lines(s);
    last[0] = 0;
    for (char *p = s, *nl; p && *p; p = nl + 1) {
        nl = strchr(p, '\n');
        if (!nl) break;
        if (nl > p) snprintf(last, cap, "%.*s", (int)(nl - p), p);
    }
    return s;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

// Waits until the run pid has begun training (OUT/run.json says "running": the lock is
// taken before run.json is written) or ended; then whether OUT/.lock names pid (the run
// holds the folder's lock). Not a timed test: the wait ends on the condition; the bound
// only stops a broken build from hanging the suite.
static bool wait_for_lock(const char *out, pid_t pid) {
    char lock[1200], json[1200], want[32];
    snprintf(lock, sizeof lock, "%s/.lock", out);
    snprintf(json, sizeof json, "%s/run.json", out);
    snprintf(want, sizeof want, "%ld\n", (long)pid);
    double t0 = timer_now();
    for (bool running = false; !running && timer_now() - t0 < 600; sleep_ms(5)) {
        char *s = scratch_read_text(json, NULL);
        running = s && strstr(s, "\"running\"");
        free(s);
        if (waitpid(pid, NULL, WNOHANG) == pid) return false;
    }
    char *s = scratch_read_text(lock, NULL);
    bool held = s && strcmp(s, want) == 0;
    free(s);
    return held;
}

static char *read_in(const Scratch *sc, const char *rel) {
    char path[2400];
    snprintf(path, sizeof path, "%s/%s", sc->dir, rel);
    return scratch_read_text(path, NULL);
}

// One trainer: a run in OUT holds the lock; a second run into OUT is refused naming the
// folder and the first's pid; the signal then stops the first after a step, "interrupted"
// in its run.json.
static void second_run_refused_then_interrupt(const Scratch *sc, const char *prog, const char *args,
                                              const char *name, int sig, const char *sig_name) {
    char out[700];
    snprintf(out, sizeof out, "%s/%s_busy", sc->dir, name);
    pid_t first = spawnf(sc, -1, 0, "%s --steps 1000000 --out %s", args, out);
    bool held = wait_for_lock(out, first);
    EXPECT(held, "%s: the first run never held %s/.lock", prog, out);
    if (!held) {
        kill(first, SIGKILL), waitpid(first, NULL, 0);
        return;
    }
    int rc = scratch_run(sc, "%s --steps 2 --out %s", args, out);
    char pid[48];
    snprintf(pid, sizeof pid, "(pid %ld)", (long)first);
    EXPECT_ONE_LINE_ERROR(sc, rc, "is in use by another training run");
    char *err = cli_slurp(sc, "stderr.txt");
    EXPECT(strstr(err, out) && strstr(err, pid) && strstr(err, "another --out"),
           "%s: the refusal names neither the folder nor the pid: %s", prog, err);
    free(err);
    // The second run wrote nothing: the folder's run.json is the first's, still running.
    char rel[300];
    snprintf(rel, sizeof rel, "%s_busy/run.json", name);
    char *json = read_in(sc, rel);
    EXPECT(json && strstr(json, "\"running\"") && !strstr(json, "\"steps\": 2"),
           "%s: run.json is not the first run's: %s", prog, json ? json : "(none)");
    free(json);
    kill(first, sig);
    rc = wait_status(first);
    int lines;
    char last[1024];
    char *all = bg_err(sc, &lines, last, sizeof last);
    char want[64];
    snprintf(want, sizeof want, "interrupted by %s after step ", sig_name);
    EXPECT(rc > 0, "%s: an interrupted run exited %d", prog, rc);
    EXPECT(strstr(last, want) && strstr(last, "--resume"), "%s: last line '%s' of:\n%s", prog, last,
           all ? all : "");
    free(all);
    json = read_in(sc, rel);
    EXPECT(json && strstr(json, "\"interrupted\"") && !strstr(json, "\"running\""),
           "%s: run.json after %s: %s", prog, sig_name, json ? json : "(none)");
    free(json);
    // The lock went with the process: the folder takes a new run.
    rc = scratch_run(sc, "%s --steps 1 --force --out %s", args, out);
    EXPECT(rc == 0, "%s: a run after the interrupted one exited %d", prog, rc);
}

static void test_draw_second_run_refused_and_sigterm(void) {
    second_run_refused_then_interrupt(&draw_sc, "draw train", DRAW_TINY, "draw", SIGTERM, "SIGTERM");
}

static void test_caption_second_run_refused_and_sigint(void) {
    second_run_refused_then_interrupt(&cap_sc, "caption train", CAPTION_TINY, "cap", SIGINT, "SIGINT");
}

static void test_classify_second_run_refused_and_sigint(void) {
    second_run_refused_then_interrupt(&draw_sc, "draw classify train", CLASSIFY_TINY, "cls", SIGINT,
                                      "SIGINT");
}

static void test_text_second_run_refused_and_sigterm(void) {
    second_run_refused_then_interrupt(&text_sc, "text classify train", TEXT_TINY, "txt", SIGTERM,
                                      "SIGTERM");
}

// The step column of a log, row by row: never going back (a resumed run that kept the rows
// of its interrupted predecessor logs those steps twice), and no row of the marker.
static void expect_log_steps_once(const char *log, const char *prog) {
    EXPECT(log && !strstr(log, "777777"), "%s: the rows past the checkpoint stayed:\n%s", prog,
           log ? log : "(none)");
    double prev = -1;
    const char *line = log ? strchr(log, '\n') : NULL;
    int rows = 0;
    for (; line && line[1]; line = strchr(line + 1, '\n')) {
        double step = atof(line + 1);
        EXPECT(step >= prev, "%s: step %g after step %g:\n%s", prog, step, prev, log);
        prev = step;
        rows++;
    }
    EXPECT(rows >= 4, "%s: %d rows:\n%s", prog, rows, log ? log : "");
}

// A run to step 2 (its checkpoint), two rows an interrupted run would have logged after it
// and a row cut short appended, then --resume to step 4.
static void resume_drops_rows(const Scratch *sc, const char *prog, const char *args, const char *name) {
    char out[700], log[800];
    snprintf(out, sizeof out, "%s/%s_rows", sc->dir, name);
    snprintf(log, sizeof log, "%s/log.csv", out);
    int rc = scratch_run(sc, "%s --steps 2 --out %s", args, out);
    EXPECT(rc == 0, "%s: the first run exited %d", prog, rc);
    EXPECT(scratch_append_text(log, "3,777777\n4,777777\n5,7777") == 0);
    rc = scratch_run(sc, "%s --steps 4 --resume --out %s", args, out);
    EXPECT(rc == 0, "%s: --resume exited %d", prog, rc);
    char *text = scratch_read_text(log, NULL);
    expect_log_steps_once(text, prog);
    free(text);
}

static void test_resume_drops_rows_past_the_checkpoint(void) {
    resume_drops_rows(&draw_sc, "draw train", DRAW_TINY, "draw");
    resume_drops_rows(&draw_sc, "draw classify train", CLASSIFY_TINY, "cls");
    resume_drops_rows(&cap_sc, "caption train", CAPTION_TINY, "cap");
    resume_drops_rows(&text_sc, "text classify train", TEXT_TINY, "txt");
}

static void test_resume_with_force_refused(void) {
    const struct {
        const Scratch *sc;
        const char *args;
    } cases[] = {{&draw_sc, DRAW_TINY}, {&draw_sc, CLASSIFY_TINY}, {&cap_sc, CAPTION_TINY},
                 {&text_sc, TEXT_TINY}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int rc = scratch_run(cases[i].sc, "%s --steps 1 --resume --force --out %s/both%zu",
                             cases[i].args, cases[i].sc->dir, i);
        EXPECT_ONE_LINE_ERROR(cases[i].sc, rc, "--resume and --force");
    }
}

// A run refused for its data makes no folder (the lock is taken where the folder is made,
// before the first write).
static void test_refused_run_leaves_no_folder(void) {
    const struct {
        const Scratch *sc;
        const char *args;
    } cases[] = {{&draw_sc, DRAW_TINY " --data no/such/images.idx"},
                 {&draw_sc, CLASSIFY_TINY " --data nosuch"},
                 {&cap_sc, CAPTION_TINY " --data nosuch"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int rc = scratch_run(cases[i].sc, "%s --steps 1 --out %s/refused%zu", cases[i].args,
                             cases[i].sc->dir, i);
        EXPECT_ONE_LINE_ERROR(cases[i].sc, rc, "--data");
        EXPECT(!scratch_exists(cases[i].sc, "refused%zu", i), "%s: the folder was made", cases[i].args);
    }
}

// --force: the old run's report, curves, evaluation and pictures go with its checkpoint;
// a file of the user's stays.
static void test_force_leaves_only_the_new_run(void) {
    const Scratch *sc = &draw_sc;
    int rc = scratch_run(sc, DRAW_TINY " --steps 2 --out %s/forced", sc->dir);
    EXPECT(rc == 0, "the first run exited %d", rc);
    static const char *const old[] = {"report.html", "eval.json", "report_files/bound.png",
                                      "samples/final.png", "samples/draw.gif", "notes.md"};
    char path[2400];
    snprintf(path, sizeof path, "%s/forced/report_files", sc->dir);
    EXPECT(make_dirs(path, NULL) == 0);
    snprintf(path, sizeof path, "%s/forced/samples", sc->dir);
    EXPECT(make_dirs(path, NULL) == 0);
    for (size_t i = 0; i < sizeof old / sizeof *old; i++) {
        snprintf(path, sizeof path, "%s/forced/%s", sc->dir, old[i]);
        EXPECT(scratch_write_text(path, "old\n") == 0);
    }
    rc = scratch_run(sc, DRAW_TINY " --steps 1 --force --out %s/forced", sc->dir);
    EXPECT(rc == 0, "--force exited %d", rc);
    for (size_t i = 0; i + 1 < sizeof old / sizeof *old; i++)
        EXPECT(!scratch_exists(sc, "forced/%s", old[i]), "--force kept the old %s", old[i]);
    EXPECT(!scratch_exists(sc, "forced/samples"), "--force kept samples/");
    EXPECT(scratch_exists(sc, "forced/notes.md"), "--force removed a file of the user's");
    EXPECT(scratch_exists(sc, "forced/model.safetensors"), "no new model");
}

// A NaN at step 1: no checkpoint exists, in a new folder and after --force removed one.
static void test_nan_before_the_first_checkpoint(void) {
    const Scratch *sc = &draw_sc;
    setenv("ATTEND_FAULT_NAN_STEP", "1", 1);
    int rc = scratch_run(sc, DRAW_TINY " --steps 5 --out %s/nan_new", sc->dir);
    char *err = cli_slurp(sc, "stderr.txt");
    EXPECT(rc == 1 && strstr(err, "draw: step 1: gradient of ") &&
               strstr(err, "no checkpoint was written") && !strstr(err, "last good checkpoint"),
           "exit %d, names a checkpoint that does not exist: %s", rc, err);
    free(err);
    unsetenv("ATTEND_FAULT_NAN_STEP");
    rc = scratch_run(sc, DRAW_TINY " --steps 2 --out %s/nan_forced", sc->dir);
    EXPECT(rc == 0, "the first run exited %d", rc);
    setenv("ATTEND_FAULT_NAN_STEP", "1", 1);
    rc = scratch_run(sc, DRAW_TINY " --steps 5 --force --out %s/nan_forced", sc->dir);
    unsetenv("ATTEND_FAULT_NAN_STEP");
    err = cli_slurp(sc, "stderr.txt");
    EXPECT(rc == 1 && strstr(err, "no checkpoint was written") && !strstr(err, "last good checkpoint"),
           "after --force: exit %d, %s", rc, err);
    free(err);
}

static char *slurp_file(const char *path, size_t *len) {
    unsigned char *d = NULL;
    if (file_read_all(path, &d, len, 0, NULL)) d = NULL, *len = 0;
    return (char *)d;
}

// Under ulimit -f (SIGXFSZ at its default action, as in a shell) the checkpoint write
// fails with a named error; the checkpoint stays as it was.
static void test_file_size_limit_named(void) {
    const Scratch *sc = &draw_sc;
    char ckpt[2400];
    snprintf(ckpt, sizeof ckpt, "%s/fsize/model.safetensors", sc->dir);
    int rc = scratch_run(sc, DRAW_TINY " --steps 3 --checkpoint-every 3 --out %s/fsize", sc->dir);
    EXPECT(rc == 0, "the first run exited %d", rc);
    size_t n0, n1;
    char *before = slurp_file(ckpt, &n0);
    EXPECT(before && n0 > 20000, "no checkpoint (%zu bytes)", n0);
    rc = wait_status(spawnf(sc, RLIMIT_FSIZE, n0 / 2, DRAW_TINY " --steps 6 --checkpoint-every 3 "
                            "--resume --out %s/fsize", sc->dir));
    int lines;
    char last[1024];
    free(bg_err(sc, &lines, last, sizeof last));
    EXPECT(rc > 0, "a write past ulimit -f ended with %d (-%d: SIGXFSZ)", rc, SIGXFSZ);
    EXPECT(strstr(last, "model.safetensors"), "the last line names no file: '%s'", last);
    char *after = slurp_file(ckpt, &n1);
    EXPECT(after && n1 == n0 && memcmp(before, after, n0) == 0, "the checkpoint changed");
    free(before), free(after);
}

// Under ulimit -v a model too large for it ends with one line naming the allocation and
// its size; the old run's checkpoint (--force, which removes it only once the run is set
// up) stays.
static void test_out_of_memory_named(void) {
#if defined(__SANITIZE_ADDRESS__)
    printf("  (skipped test_out_of_memory_named: a sanitizer needs an unlimited address space)\n");
#else
    if (getenv("ATTEND_VALGRIND") && getenv("ATTEND_VALGRIND")[0]) {
        printf("  (skipped test_out_of_memory_named: valgrind needs an unlimited address space)\n");
        return;
    }
    const Scratch *sc = &draw_sc;
    char ckpt[2400];
    snprintf(ckpt, sizeof ckpt, "%s/oom/model.safetensors", sc->dir);
    int rc = scratch_run(sc, DRAW_TINY " --steps 2 --out %s/oom", sc->dir);
    EXPECT(rc == 0, "the first run exited %d", rc);
    size_t n0, n1;
    char *before = slurp_file(ckpt, &n0);
    // hidden 4096: four blocks of 0.8 GB (weights, gradients, two moments), past 3 GB.
    rc = wait_status(spawnf(sc, RLIMIT_AS, (rlim_t)3000 << 20, DRAW_TINY " --hidden 4096 --steps 2 "
                            "--force --out %s/oom", sc->dir));
    int lines;
    char last[1024];
    char *all = bg_err(sc, &lines, last, sizeof last);
    EXPECT(rc == 1, "out of memory ended with %d (-6: abort)", rc);
    EXPECT(strstr(last, "draw train: cannot allocate ") && strstr(last, "B for ") &&
               strstr(last, "out of memory"),
           "the last line does not name the allocation: '%s' of:\n%s", last, all ? all : "");
    free(all);
    char *after = slurp_file(ckpt, &n1);
    EXPECT(before && after && n1 == n0 && memcmp(before, after, n0) == 0, "the checkpoint changed");
    free(before), free(after);
#endif
}

// An integer metadata key of a checkpoint, -1 when it does not load.
static long meta_long(const char *path, const char *key) {
    SafetensorsFile f;
    if (safetensors_open(&f, path, NULL)) return -1;
    const char *v = safetensors_meta(&f, key);
    long x = v ? atol(v) : -1;
    safetensors_free(&f);
    return x;
}

// caption train writes its best model, then its state; a kill between the two leaves the
// state of the last save beside a model newer than it. Simulated: the state of a run to
// step 2 whose validation set no best (ATTEND_FAULT_NAN_VALID_STEP), beside the best
// model of the same run carried on to step 4. --resume says what happened and the state
// takes that model as its best: the best step and score of state and model agree.
static void test_caption_model_newer_than_state(void) {
    const Scratch *sc = &cap_sc;
    int rc = scratch_run(sc, CAPTION_TINY " --steps 4 --out %s/pair_ref", sc->dir);
    EXPECT(rc == 0, "the run to step 4 exited %d", rc);
    setenv("ATTEND_FAULT_NAN_VALID_STEP", "2", 1);
    rc = scratch_run(sc, CAPTION_TINY " --steps 2 --out %s/pair", sc->dir);
    unsetenv("ATTEND_FAULT_NAN_VALID_STEP");
    EXPECT(rc == 0, "the run to step 2 exited %d", rc);
    EXPECT(!scratch_exists(sc, "pair/model.safetensors"), "step 2's validation set a best model");
    char from[2400], to[2400], state[2400];
    snprintf(from, sizeof from, "%s/pair_ref/model.safetensors", sc->dir);
    snprintf(to, sizeof to, "%s/pair/model.safetensors", sc->dir);
    snprintf(state, sizeof state, "%s/pair/state.safetensors", sc->dir);
    size_t n = 0;
    char *model = slurp_file(from, &n);
    Error err;
    EXPECT(model && file_write_atomic(to, model, n, &err) == 0, "cannot copy the model");
    free(model);
    EXPECT(meta_long(to, "step") == 4 && meta_long(state, "step") == 2, "model step %ld, state step %ld",
           meta_long(to, "step"), meta_long(state, "step"));
    rc = scratch_run(sc, CAPTION_TINY " --steps 3 --resume --out %s/pair", sc->dir);
    EXPECT(rc == 0, "--resume exited %d", rc);
    char *text = cli_slurp(sc, "stderr.txt");
    EXPECT(strstr(text, "model.safetensors (the best model, of step 4) is newer than") &&
               strstr(text, "state.safetensors (step 2)") && strstr(text, "stopped between"),
           "--resume did not say what happened: %s", text);
    free(text);
    // Step 3's validation replaces the model only where it beats step 4's score.
    long best = meta_long(state, "best_step");
    EXPECT((best == 3 || best == 4) && meta_long(to, "step") == best, "state's best step %ld, model's %ld",
           best, meta_long(to, "step"));
}

int main(void) {
    if (scratch_open(&draw_sc, "test_run_folder", "draw") ||
        scratch_open(&cap_sc, "test_run_folder_caption", "caption") ||
        scratch_open(&text_sc, "test_run_folder_text", "text"))
        return 1;
    RUN(test_draw_second_run_refused_and_sigterm);
    RUN(test_caption_second_run_refused_and_sigint);
    RUN(test_classify_second_run_refused_and_sigint);
    RUN(test_text_second_run_refused_and_sigterm);
    RUN(test_resume_drops_rows_past_the_checkpoint);
    RUN(test_resume_with_force_refused);
    RUN(test_refused_run_leaves_no_folder);
    RUN(test_force_leaves_only_the_new_run);
    RUN(test_nan_before_the_first_checkpoint);
    RUN(test_file_size_limit_named);
    RUN(test_out_of_memory_named);
    RUN(test_caption_model_newer_than_state);
    int rc = test_summary();
    if (rc == 0) {
        scratch_remove(draw_sc.dir);
        scratch_remove(cap_sc.dir);
        scratch_remove(text_sc.dir);
    } else {
        printf("  kept %s and %s\n", draw_sc.dir, cap_sc.dir);
    }
    return rc;
}
