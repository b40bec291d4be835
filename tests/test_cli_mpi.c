// bin/draw and bin/caption under `mpirun -np 2` (issue 20), against one process on real
// MNIST (data/mnist): training, --resume across rank counts, eval, and the faults.
//
// What is exact and what has a tolerance (cli/train_dist.h): 2 ranks of one thread compute
// what one process of 2 threads computes, bit for bit (the same shares, the same
// share-weighted sums in the same order), so their log.csv and checkpoints are compared
// byte for byte; against one process of one thread the gradient is summed in another order
// and the loss curves agree to a tolerance, stated below, over 50 steps.
//
// The mpirun command and its flags come from tests/support/scratch.h (scratch_mpirun). A
// test that needs mpirun and finds none prints "skip NAME: reason" (counted by
// tests/run.sh); `make deps` installs it.
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/timer.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"

static Scratch draw_sc;  // BIN/draw and the scratch folder
static const char *dir;  // draw_sc.dir
static int have_mpirun;

// A tiny DRAW: every part runs, 50 steps in about a second.
#define DRAW_TINY                                                                          \
    "--data mnist --T 4 --read 2 --write 3 --hidden 24 --z 6 --batch 16 --valid-every 25 " \
    "--valid-images 40 --log-every 1"

static int skip_without_mpirun(const char *name) {
    if (have_mpirun) return 0;
    printf("skip %s: no mpirun on PATH (make deps installs Open MPI)\n", name);
    return 1;
}

static char *read_file(const char *fmt, ...) {
    char path[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(path, sizeof path, fmt, ap);
    va_end(ap);
    return scratch_read_text(path, NULL);
}

static int same_file(const char *a, const char *b) {
    char pa[1200], pb[1200];
    snprintf(pa, sizeof pa, "%s/%s", dir, a);
    snprintf(pb, sizeof pb, "%s/%s", dir, b);
    size_t na, nb;
    char *x = scratch_read_text(pa, &na), *y = scratch_read_text(pb, &nb);
    int same = x && y && na == nb && memcmp(x, y, na) == 0;
    free(x), free(y);
    return same;
}

// log.csv's train_bound column (n rows at most) into out; returns the rows read.
static int read_bounds(const char *run, double *out, int n) {
    char *log = read_file("%s/%s/log.csv", dir, run);
    int k = 0;
    for (char *line = log ? strchr(log, '\n') : NULL; line && line[1] && k < n;
         line = strchr(line + 1, '\n')) {
        const char *comma = strchr(line + 1, ',');
        if (!comma) break;
        out[k++] = strtod(comma + 1, NULL);
    }
    free(log);
    return k;
}

// log.csv without its seconds column (the only column that differs between two runs).
static char *log_without_time(const char *run) {
    char *log = read_file("%s/%s/log.csv", dir, run);
    if (!log) return NULL;
    char *w = log;
    for (char *r = log; *r;) {
        char *eol = strchr(r, '\n');
        size_t len = eol ? (size_t)(eol - r) : strlen(r);
        char *last = NULL;
        for (char *q = r; q < r + len; q++)
            if (*q == ',') last = q;
        size_t keep = last ? (size_t)(last - r) : len;
        memmove(w, r, keep);
        w += keep;
        *w++ = '\n';
        r += len + (eol ? 1 : 0);
    }
    *w = 0;
    return log;
}

static int draw_ok(int status, const char *what) {
    if (status == 0) return 1;
    char *err = scratch_read(&draw_sc, "stderr.txt", NULL);
    test_fail_(__FILE__, __LINE__, "%s exited %d: %s", what, status, err ? err : "");
    free(err);
    return 0;
}

// --- DRAW training ----------------------------------------------------------------------

static int draw_trained;  // runs one1, one2, two exist

static void test_draw_two_ranks_match_one_process(void) {
    if (skip_without_mpirun("test_draw_two_ranks_match_one_process")) return;
    if (!draw_ok(scratch_run(&draw_sc, "train " DRAW_TINY " --steps 50 --threads 2 --out %s/one2",
                             dir), "draw train, 1 process x 2 threads") ||
        !draw_ok(scratch_run(&draw_sc, "train " DRAW_TINY " --steps 50 --threads 1 --out %s/one1",
                             dir), "draw train, 1 process x 1 thread") ||
        !draw_ok(scratch_run_mpi(&draw_sc, 2, "train " DRAW_TINY " --steps 50 --threads 1 "
                                 "--out %s/two", dir), "draw train, 2 ranks x 1 thread"))
        return;
    draw_trained = 1;
    // Exact: 2 ranks x 1 thread = 1 process x 2 threads (weights, Adam moments, curve).
    EXPECT(same_file("two/model.safetensors", "one2/model.safetensors"),
           "2 ranks and 1 process of 2 threads wrote different checkpoints");
    char *a = log_without_time("two"), *b = log_without_time("one2");
    EXPECT(a && b && strcmp(a, b) == 0, "log.csv differs:\n%s\nvs\n%s", a ? a : "", b ? b : "");
    free(a), free(b);
    // Against one thread: the same curve within 1e-4 relative over 50 steps (measured: 1.4e-8
    // relative at most; the sums differ only in their order).
    double two[64], one[64];
    int n2 = read_bounds("two", two, 64), n1 = read_bounds("one1", one, 64);
    EXPECT(n1 == 50 && n2 == 50, "%d and %d rows, expected 50", n1, n2);
    double worst = 0;
    for (int i = 0; i < n1 && i < n2; i++) worst = fmax(worst, fabs(two[i] - one[i]) / one[i]);
    EXPECT(worst <= 1e-4, "2 ranks' curve is %.3g (relative) from one thread's", worst);
    printf("  draw: 50 steps, 2 ranks x 1 thread vs 1 process x 1 thread: largest relative "
           "difference of the train bound %.3g\n", worst);
    // Rank 0 alone wrote: one header line, one summary.
    char *err = scratch_read(&draw_sc, "stderr.txt", NULL);
    const char *first = err ? strstr(err, "draw train: mnist") : NULL;
    EXPECT(first && !strstr(first + 1, "draw train: mnist"), "header printed %s",
           first ? "more than once" : "never");
    EXPECT(err && strstr(err, "2 ranks"), "header does not name the ranks: %s", err ? err : "");
    free(err);
    char *runinfo = read_file("%s/two/run.json", dir);
    EXPECT(runinfo && strstr(runinfo, "\"finished\""), "run.json: %s", runinfo ? runinfo : "none");
    free(runinfo);
}

// A checkpoint of 2 ranks continued by one process, one process's continued by 2 ranks:
// both give the uninterrupted run's bits.
static void test_draw_resume_across_rank_counts(void) {
    if (skip_without_mpirun("test_draw_resume_across_rank_counts")) return;
    if (!draw_trained) return test_fail_(__FILE__, __LINE__, "no runs (training failed)");
    if (!draw_ok(scratch_run_mpi(&draw_sc, 2, "train " DRAW_TINY " --steps 20 --threads 1 "
                                 "--out %s/r2to1", dir), "2 ranks, 20 steps") ||
        !draw_ok(scratch_run(&draw_sc, "train --steps 50 --threads 2 --resume --out %s/r2to1",
                             dir), "1 process resuming") ||
        !draw_ok(scratch_run(&draw_sc, "train " DRAW_TINY " --steps 20 --threads 2 --out %s/r1to2",
                             dir), "1 process, 20 steps") ||
        !draw_ok(scratch_run_mpi(&draw_sc, 2, "train --steps 50 --threads 1 --resume "
                                 "--out %s/r1to2", dir), "2 ranks resuming"))
        return;
    EXPECT(same_file("r2to1/model.safetensors", "one2/model.safetensors"),
           "2 ranks then 1 process: not the uninterrupted run's checkpoint");
    EXPECT(same_file("r1to2/model.safetensors", "one2/model.safetensors"),
           "1 process then 2 ranks: not the uninterrupted run's checkpoint");
}

// --- eval -------------------------------------------------------------------------------

static void test_draw_eval_over_ranks(void) {
    if (skip_without_mpirun("test_draw_eval_over_ranks")) return;
    if (!draw_trained) return test_fail_(__FILE__, __LINE__, "no runs (training failed)");
    // 75 images in batches of 20: a partial last batch, shares of 10 and 3 + 2.
    const char *flags = "--split valid --limit 75 --batch 20 --samples 3 --json";
    if (!draw_ok(scratch_run(&draw_sc, "eval --model %s/one2/model.safetensors %s --threads 2",
                             dir, flags), "draw eval, 1 process"))
        return;
    char *one = scratch_read(&draw_sc, "stdout.txt", NULL);
    if (!draw_ok(scratch_run_mpi(&draw_sc, 2, "eval --model %s/one2/model.safetensors %s "
                                 "--threads 1", dir, flags), "draw eval, 2 ranks")) {
        free(one);
        return;
    }
    char *two = scratch_read(&draw_sc, "stdout.txt", NULL);
    // Everything but the time: the same figures to the last printed digit.
    char *t1 = one ? strstr(one, "\"seconds\"") : NULL, *t2 = two ? strstr(two, "\"seconds\"") : NULL;
    if (t1) *t1 = 0;
    if (t2) *t2 = 0;
    EXPECT(one && two && strstr(one, "nll_iw") && strcmp(one, two) == 0,
           "1 process: %s\n2 ranks: %s", one ? one : "", two ? two : "");
    free(one), free(two);
}

// --- faults -----------------------------------------------------------------------------

// A rank that cannot read its data (here: a --data-root only rank 1 is given) fails at
// set-up: one line names it, every rank ends, nothing hangs.
static void test_draw_rank_without_data_fails_named(void) {
    if (skip_without_mpirun("test_draw_rank_without_data_fails_named")) return;
    double t0 = timer_now();
    int rc = scratch_run_mpi(&draw_sc, 1, "train " DRAW_TINY " --steps 5 --out %s/nodata : "
                             "-np 1 %s train " DRAW_TINY " --steps 5 --out %s/nodata "
                             "--data-root %s/missing", dir, draw_sc.program, dir, dir);
    double secs = timer_now() - t0;
    char *err = scratch_read(&draw_sc, "stderr.txt", NULL);
    EXPECT(rc != 0, "exited 0");
    EXPECT(secs < 30, "took %.1f s to end", secs);
    EXPECT(err && strstr(err, "rank 1 of 2: draw: ") && strstr(err, "missing"),
           "no line naming rank 1 and its data: %s", err ? err : "");
    EXPECT(!(err && strstr(err, "rank 0 of 2")), "rank 0 reported a failure: %s", err);
    free(err);
}

// A rank killed in the middle of training (SIGKILL: out of memory, a lost node) ends the
// job within seconds; mpirun names the rank and the signal; the last checkpoint loads and
// the run resumes from it.
static void test_draw_killed_rank_ends_job(void) {
    if (skip_without_mpirun("test_draw_killed_rank_ends_job")) return;
    setenv("ATTEND_FAULT_KILL_RANK", "1", 1);
    setenv("ATTEND_FAULT_KILL_STEP", "25", 1);
    double t0 = timer_now();
    int rc = scratch_run_mpi(&draw_sc, 2, "train " DRAW_TINY " --steps 1000 --valid-every 10 "
                             "--threads 1 --out %s/killed", dir);
    unsetenv("ATTEND_FAULT_KILL_RANK");
    unsetenv("ATTEND_FAULT_KILL_STEP");
    double secs = timer_now() - t0;
    char *err = scratch_read(&draw_sc, "stderr.txt", NULL);
    EXPECT(rc != 0, "exited 0");
    EXPECT(secs < 30, "took %.1f s to end", secs);
    EXPECT(err && strstr(err, "rank 1") && strstr(err, "signal 9"),
           "no line naming rank 1 and its signal: %s", err ? err : "");
    free(err);
    // The checkpoint of step 20 (the kill came at step 25): intact, and it resumes.
    int ok = draw_ok(scratch_run(&draw_sc, "eval --model %s/killed/model.safetensors "
                                 "--split valid --limit 20 --json", dir), "eval of the checkpoint");
    char *out = ok ? scratch_read(&draw_sc, "stdout.txt", NULL) : NULL;
    EXPECT(out && strstr(out, "\"step\": 20"), "checkpoint: %s", out ? out : "");
    free(out);
    if (draw_ok(scratch_run_mpi(&draw_sc, 2, "train --steps 30 --threads 1 --resume --out %s/killed",
                                dir), "resume after the kill")) {
        char *e2 = scratch_read(&draw_sc, "stderr.txt", NULL);
        EXPECT(e2 && strstr(e2, "step 20 of 30"),
               "did not resume at step 20: %s", e2 ? e2 : "");
        free(e2);
    }
}

// A non-finite gradient is seen by every rank after the sum: rank 0 prints it once and
// every rank stops, without an abort.
static void test_draw_nonfinite_stops_every_rank(void) {
    if (skip_without_mpirun("test_draw_nonfinite_stops_every_rank")) return;
    setenv("ATTEND_FAULT_NAN_STEP", "4", 1);
    double t0 = timer_now();
    int rc = scratch_run_mpi(&draw_sc, 2, "train " DRAW_TINY " --steps 10 --threads 1 --out %s/nan",
                             dir);
    double secs = timer_now() - t0;
    unsetenv("ATTEND_FAULT_NAN_STEP");
    char *err = scratch_read(&draw_sc, "stderr.txt", NULL);
    EXPECT(rc != 0, "exited 0");
    EXPECT(secs < 30, "took %.1f s to end", secs);
    const char *line = err ? strstr(err, "draw: step 4: gradient of") : NULL;
    EXPECT(line && !strstr(line + 10, "step 4: gradient of"), "want one line for step 4: %s",
           line ? line : err ? err : "");
    free(err);
}

int main(void) {
    have_mpirun = system("command -v mpirun > /dev/null 2>&1") == 0;
    if (scratch_open(&draw_sc, "test_cli_mpi", "draw")) return 1;
    dir = draw_sc.dir;
    RUN(test_draw_two_ranks_match_one_process);
    RUN(test_draw_resume_across_rank_counts);
    RUN(test_draw_eval_over_ranks);
    RUN(test_draw_rank_without_data_fails_named);
    RUN(test_draw_killed_rank_ends_job);
    RUN(test_draw_nonfinite_stops_every_rank);
    int rc = test_summary();
    scratch_remove(dir);
    return rc;
}
