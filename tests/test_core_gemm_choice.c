// test_core_gemm_choice.c: the kernel choice (core/gemm_choice.h, core/gemm.h): the cache
// file's parser on good, torn and hand-edited files; a bad cache file measured again with one
// warning and rewritten; a cached and a forced choice honoured (no measurement); a busy
// machine served by the table, nothing measured or written; a misspelt
// ATTEND_GEMM refused with one line; the calibration's result (a kernel that serves and runs
// for every class, a rate for each kernel it measured, the only kernel allowed when one is);
// every OpenBLAS copy (core/gemm_blas.h) against the plain
// loop on each class's shapes.
//
// Each scenario that reads the environment runs in a child (fork): the choice is made once
// per process. The parent never opens OpenBLAS.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/check.h"
#include "core/fileio.h"
#include "core/gemm.h"
#include "core/gemm_blas.h"
#include "core/gemm_calibrate.h"
#include "core/gemm_choice.h"
#include "core/rng.h"
#include "tests/support/scratch.h"
#include "tests/support/test.h"

static const char good_file[] =
    "attend gemm choice 1\n"
    "key Some CPU; avx2; OpenBLAS 0.3.21 DYNAMIC_ARCH\n"
    "threads 1 small=openblas-haswell,rows=openblas,large=openblas,step=packed-avx2\n"
    "threads 2 small=openblas,rows=openblas,large=openblas-haswell,step=gemm\n";

static void test_cache_round_trip(void) {
    GemmCache c;
    Error err;
    EXPECT(gemm_cache_parse(&c, good_file, CPU_ISA_AVX2, &err) == 0, "good file: %s", err.msg);
    EXPECT(c.n == 2 && strcmp(c.key, "Some CPU; avx2; OpenBLAS 0.3.21 DYNAMIC_ARCH") == 0, "n %d key %s", c.n, c.key);
    const GemmChoice *two = gemm_cache_find(&c, 2);
    EXPECT(two && two->kernel[GEMM_STEP] == KERNEL_VIA_GEMM && two->kernel[GEMM_LARGE] == KERNEL_OPENBLAS_HASWELL,
           "threads 2 entry");
    EXPECT(!gemm_cache_find(&c, 3), "no entry for 3 threads");
    char text[1024];
    EXPECT(gemm_cache_format(text, sizeof text, &c) && strcmp(text, good_file) == 0, "formatted:\n%s", text);
    EXPECT(!gemm_cache_format(text, 40, &c), "a buffer too small is refused");
}

static void test_cache_bad_files_refused(void) {
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"", "before its key"},
        {"attend gemm choice 2\nkey x\n", "line 1"},
        {"attend gemm choice 1\nkey x\nthreads 1 small=openblas", "no newline"},
        {"attend gemm choice 1\nkey x\nthreads 1 small=openblas,rows=openblas,large=openblas\n", "no kernel for step"},
        {"attend gemm choice 1\nkey x\nthreads 1 small=openblas,rows=openblas,large=openblas,step=openblas\n",
         "does not serve"},
        {"attend gemm choice 1\nkey x\nthreads 1 small=openblas,rows=blis,large=openblas,step=gemm\n", "no such kernel"},
        {"attend gemm choice 1\nkey x\nthreads 1 tiny=openblas\n", "no such class"},
        {"attend gemm choice 1\nkey x\nthreads 0 step=gemm\n", "line 3"},
        {"attend gemm choice 1\nkey x\nthreads one step=gemm\n", "line 3"},
        {"attend gemm choice 1\nkey x\nthreads 1 small=openblas,rows=openblas,large=openblas,step=packed-avx512\n",
         "cannot run"},
        {"attend gemm choice 1\nkey x\nthreads 1 small=openblas,rows=openblas,large=openblas,step=gemm\n"
         "threads 1 small=openblas,rows=openblas,large=openblas,step=gemm\n", "twice"},
        {"attend gemm choice 1\nkey x\nthreads 1 small=openblas,,step=gemm\n", "empty item"},
        {"attend gemm choice 1\nnot a key\n", "line 2"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        GemmCache c;
        Error err = {{0}};
        int rc = gemm_cache_parse(&c, bad[i].text, CPU_ISA_AVX2, &err);
        EXPECT(rc != 0 && strstr(err.msg, bad[i].want) && !strchr(err.msg, '\n'),
               "case %zu: status %d, '%s' (wanted '%s')", i, rc, err.msg, bad[i].want);
    }
    // Every truncation of a good file parses or fails cleanly (AddressSanitizer watches).
    char buf[sizeof good_file];
    int ok = 0;
    for (size_t n = 0; n < sizeof good_file - 1; n++) {
        memcpy(buf, good_file, n);
        buf[n] = 0;
        GemmCache c;
        Error err;
        if (gemm_cache_parse(&c, buf, CPU_ISA_AVX2, &err) == 0) ok++;
    }
    EXPECT(ok == 2, "%d truncations parse (the ends of lines 2 and 3 only)", ok);
}

static void test_choice_spec(void) {
    GemmChoice base = gemm_choice_by_isa(CPU_ISA_AVX2, false), c;
    Error err;
    EXPECT(base.kernel[GEMM_ROWS] == KERNEL_OPENBLAS_HASWELL && base.kernel[GEMM_STEP] == KERNEL_PACKED_AVX2,
           "the AVX2 table");
    EXPECT(gemm_choice_parse(&c, "openblas", &base, CPU_ISA_AVX2, &err) == 0, "%s", err.msg);
    EXPECT(c.kernel[GEMM_SMALL] == KERNEL_OPENBLAS && c.kernel[GEMM_LARGE] == KERNEL_OPENBLAS &&
               c.kernel[GEMM_STEP] == KERNEL_PACKED_AVX2, "one OpenBLAS kernel for every OpenBLAS class");
    EXPECT(gemm_choice_parse(&c, "large=openblas,step=gemm", &base, CPU_ISA_AVX2, &err) == 0, "%s", err.msg);
    char spec[160];
    gemm_choice_format(spec, sizeof spec, &c);
    EXPECT(strcmp(spec, "small=openblas-haswell,rows=openblas-haswell,large=openblas,step=gemm") == 0, "%s", spec);
    EXPECT(gemm_choice_parse(&c, "openblas-skylakex", &base, CPU_ISA_AVX2, &err) != 0 && strstr(err.msg, "cannot run"),
           "AVX-512 on an AVX2 CPU: %s", err.msg);
    EXPECT(gemm_class_of(12, 100, 100) == GEMM_SMALL && gemm_class_of(64, 1024, 512) == GEMM_ROWS &&
               gemm_class_of(256, 784, 1152) == GEMM_LARGE, "classes by shape");
}

// --- scenarios in a child process -------------------------------------------------------
static Scratch scratch;

// Runs fn in a child with stderr in DIR/stderr; returns its exit status (-1: a signal).
static int in_child(int (*fn)(void), char *err_text, size_t cap) {
    char path[1200];
    snprintf(path, sizeof path, "%s/stderr", scratch.dir);
    fflush(stdout), fflush(stderr);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        CHECK(freopen(path, "w", stderr), "stderr to %s", path);
        int rc = fn();
        fflush(stderr);
        _exit(rc);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    char *text = scratch_read_text(path, NULL);
    snprintf(err_text, cap, "%s", text ? text : "");
    free(text);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void set_cache_home(void) {
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/cache", scratch.dir);
    setenv("XDG_CACHE_HOME", dir, 1);
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv("ATTEND_BLAS_DEFAULT_CORETYPE");
}

static int child_bad_cache(void) {
    set_cache_home();
    unsetenv("ATTEND_GEMM");
    setenv("ATTEND_GEMM_MAX_LOAD", "1e9", 1);  // measure however busy the machine is
    gemm_set_threads(1);
    return strstr(gemm_backend(), "(measured, 1 thread)") ? 0 : 10;
}

static void cache_file(char *path, size_t cap) {
    snprintf(path, cap, "%s/cache/attend/gemm-choice", scratch.dir);
}

static void test_bad_cache_measured_again(void) {
    char path[1200], dir[1200], err[2048];
    snprintf(dir, sizeof dir, "%s/cache/attend", scratch.dir);
    EXPECT(make_dirs(dir, NULL) == 0, "mkdir");
    cache_file(path, sizeof path);
    EXPECT(scratch_write_text(path, "attend gemm choice 1\nkey x\nthreads 1 rows=blis\n") == 0, "write");
    int rc = in_child(child_bad_cache, err, sizeof err);
    EXPECT(rc == 0, "child status %d, stderr: %s", rc, err);
    EXPECT(strstr(err, "gemm-choice: line 3: 'rows=blis': no such kernel (") &&
               strstr(err, "); measuring the matrix-multiply kernels again\n"),
           "stderr: %s", err);
    EXPECT(strstr(err, "measured for 1 thread"), "stderr: %s", err);
    EXPECT(scratch_count_lines(err) == 2, "two lines (the warning, the measurement): %s", err);
    char *text = scratch_read_text(path, NULL);
    GemmCache c;
    Error e;
    EXPECT(text && gemm_cache_parse(&c, text, cpu_isa(), &e) == 0 && gemm_cache_find(&c, 1),
           "rewritten: %s", text ? text : "(missing)");
    free(text);
}

// A cached entry that differs from the table: honoured, nothing measured.
static int child_cached(void) {
    set_cache_home();
    unsetenv("ATTEND_GEMM");
    gemm_set_threads(1);
    if (!strstr(gemm_backend(), "kernels small=openblas,rows=openblas,large=openblas,step=gemm (cached, 1 thread)"))
        return 10;
    if (gemm_step_kernel() != CPU_ISA_NONE) return 11;
    char k[160];
    gemm_kernels(k, sizeof k);
    return strcmp(k, "small=openblas,rows=openblas,large=openblas,step=gemm") == 0 ? 0 : 12;
}

static void test_cached_choice_honoured(void) {
    char path[1200], err[2048];
    cache_file(path, sizeof path);
    char *text = scratch_read_text(path, NULL);  // the key this machine writes
    EXPECT(text != NULL, "no cache file from the previous test");
    if (!text) return;
    char *line3 = strstr(text, "\nthreads ");
    if (line3) strcpy(line3 + 1, "threads 1 small=openblas,rows=openblas,large=openblas,step=gemm\n");
    EXPECT(scratch_write_text(path, text) == 0, "write");
    free(text);
    int rc = in_child(child_cached, err, sizeof err);
    EXPECT(rc == 0 && err[0] == 0, "child status %d, stderr: '%s'", rc, err);
}

static int child_forced(void) {
    set_cache_home();
    setenv("ATTEND_GEMM", "small=openblas,step=gemm", 1);
    gemm_set_threads(2);
    const char *b = gemm_backend();
    GemmChoice want = gemm_choice_by_isa(cpu_isa(), false);
    want.kernel[GEMM_SMALL] = KERNEL_OPENBLAS, want.kernel[GEMM_STEP] = KERNEL_VIA_GEMM;
    char spec[160], k[160];
    gemm_choice_format(spec, sizeof spec, &want);
    gemm_kernels(k, sizeof k);
    if (strcmp(k, spec) != 0 || !strstr(b, "(ATTEND_GEMM, 2 threads)")) return 10;
    return gemm_step_kernel() == CPU_ISA_NONE ? 0 : 11;
}

static int child_misspelt(void) {
    set_cache_home();
    setenv("ATTEND_GEMM", "rows=openblas-zen", 1);
    gemm_set_threads(1);
    return 0;
}

// With nothing cached and a machine busier than ATTEND_GEMM_MAX_LOAD: the table, and
// nothing measured or written.
static int child_busy(void) {
    set_cache_home();
    unsetenv("ATTEND_GEMM");
    setenv("ATTEND_GEMM_MAX_LOAD", "-1", 1);
    gemm_set_threads(3);
    GemmChoice table = gemm_choice_by_isa(cpu_isa(), false);
    char spec[160], k[160];
    gemm_choice_format(spec, sizeof spec, &table);
    gemm_kernels(k, sizeof k);
    if (strcmp(k, spec) != 0) return 10;
    return strstr(gemm_backend(), "(the table: the machine is busy, measured when it is quiet, 3 threads)") ? 0 : 11;
}

static void test_busy_machine_keeps_the_table(void) {
    char path[1200], err[2048];
    cache_file(path, sizeof path);
    char *before = scratch_read_text(path, NULL);
    int rc = in_child(child_busy, err, sizeof err);
    EXPECT(rc == 0 && err[0] == 0, "child status %d, stderr: '%s'", rc, err);
    char *after = scratch_read_text(path, NULL);
    EXPECT(before && after && strcmp(before, after) == 0, "the cache file changed:\n%s", after ? after : "");
    free(before), free(after);
}

static void test_forced_choice_honoured(void) {
    char err[2048];
    int rc = in_child(child_forced, err, sizeof err);
    EXPECT(rc == 0 && err[0] == 0, "child status %d, stderr: '%s'", rc, err);
    rc = in_child(child_misspelt, err, sizeof err);
    EXPECT(rc == 2 && scratch_count_lines(err) == 1 &&
               strstr(err, "attend: ATTEND_GEMM=rows=openblas-zen: 'rows=openblas-zen': no such kernel"),
           "status %d, stderr: '%s'", rc, err);
}

// Every OpenBLAS copy against the plain loop (test_core_gemm.c's tolerance) on each class.
static int child_each_copy(void) {
    Rng rng;
    rng_seed(&rng, 5);
    static const int shapes[][3] = {{12, 100, 100}, {12, 12, 100}, {64, 257, 130}, {150, 96, 300}};
    for (int k = KERNEL_OPENBLAS; k <= KERNEL_OPENBLAS_SKYLAKEX; k++) {
        if (!gemm_kernel_runs((GemmKernel)k, cpu_isa())) continue;
        const BlasLib *lib = blas_lib((GemmKernel)k);
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
            for (int tb = 0; tb < 2; tb++) {
                const int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
                float *A = xmalloc(sizeof(float) * M * K), *B = xmalloc(sizeof(float) * K * N);
                float *C = xmalloc(sizeof(float) * M * N), *R = xmalloc(sizeof(float) * M * N);
                for (int i = 0; i < M * K; i++) A[i] = 2 * rng_uniform(&rng) - 1;
                for (int i = 0; i < K * N; i++) B[i] = 2 * rng_uniform(&rng) - 1;
                const int ldb = tb ? K : N;
                blas_sgemm(lib, false, tb, M, N, K, 1.0f, A, K, B, ldb, 0.0f, C, N);
                gemm_ref(false, tb, M, N, K, 1.0f, A, K, B, ldb, 0.0f, R, N);
                int bad = 0;
                for (int i = 0; i < M * N; i++) bad += !(fabsf(C[i] - R[i]) <= 1e-6f + 2e-6f * sqrtf((float)K) * K);
                free(A), free(B), free(C), free(R);
                if (bad) {
                    fprintf(stderr, "%s (%s): %dx%dx%d tb %d: %d elements off\n", gemm_kernel_name((GemmKernel)k),
                            lib->corename, M, N, K, tb, bad);
                    return 10;
                }
            }
        }
        printf("  %s: core %s\n", gemm_kernel_name((GemmKernel)k), lib->corename);
    }
    return 0;
}

static void test_each_openblas_copy_matches_reference(void) {
    char err[2048];
    int rc = in_child(child_each_copy, err, sizeof err);
    EXPECT(rc == 0, "child status %d, stderr: '%s'", rc, err);
}

// The calibration's contract, not its timings: whatever the machine measures, each class
// gets a kernel that serves it and runs here, every kernel measured has a rate and the
// others none, and with one kernel allowed per class that one is picked.
static int child_calibration(void) {
    const CpuIsa isa = cpu_isa();
    bool all[GEMM_KERNELS];
    for (int k = 0; k < GEMM_KERNELS; k++) all[k] = true;
    const GemmChoice table = gemm_choice_by_isa(isa, false);
    GemmCalibration cal = gemm_calibrate(1, isa, all, &table);
    for (int c = 0; c < GEMM_CLASSES; c++) {
        const GemmKernel k = cal.choice.kernel[c];
        if (!gemm_kernel_serves(k, (GemmClass)c) || !gemm_kernel_runs(k, isa)) {
            fprintf(stderr, "%s: %s cannot serve it here\n", gemm_class_name((GemmClass)c), gemm_kernel_name(k));
            return 10;
        }
        for (int j = 0; j < GEMM_KERNELS; j++) {
            const bool measured = gemm_kernel_serves((GemmKernel)j, (GemmClass)c) &&
                                  gemm_kernel_runs((GemmKernel)j, isa) &&
                                  !(isa == CPU_ISA_NONE && (j == KERNEL_PACKED_AVX2 || j == KERNEL_PACKED_AVX512));
            if (measured != (cal.gflops[c][j] > 0)) {
                fprintf(stderr, "%s, %s: rate %g\n", gemm_class_name((GemmClass)c),
                        gemm_kernel_name((GemmKernel)j), cal.gflops[c][j]);
                return 11;
            }
        }
    }
    bool only[GEMM_KERNELS] = {false};
    only[KERNEL_OPENBLAS] = only[KERNEL_VIA_GEMM] = true;
    GemmChoice prefer = table;
    prefer.kernel[GEMM_STEP] = KERNEL_PACKED_AVX2;  // not allowed: ignored
    cal = gemm_calibrate(2, isa, only, &prefer);
    for (int c = 0; c < GEMM_CLASSES; c++) {
        const GemmKernel want = c == GEMM_STEP ? KERNEL_VIA_GEMM : KERNEL_OPENBLAS;
        if (cal.choice.kernel[c] != want) {
            fprintf(stderr, "%s: %s, only %s allowed\n", gemm_class_name((GemmClass)c),
                    gemm_kernel_name(cal.choice.kernel[c]), gemm_kernel_name(want));
            return 12;
        }
    }
    return 0;
}

static void test_calibration_contract(void) {
    char err[2048];
    int rc = in_child(child_calibration, err, sizeof err);
    EXPECT(rc == 0, "child status %d, stderr: '%s'", rc, err);
}

int main(void) {
    CHECK(scratch_open(&scratch, "test_core_gemm_choice", "draw") == 0, "scratch");
    RUN(test_cache_round_trip);
    RUN(test_cache_bad_files_refused);
    RUN(test_choice_spec);
    RUN(test_bad_cache_measured_again);
    RUN(test_cached_choice_honoured);
    RUN(test_busy_machine_keeps_the_table);
    RUN(test_forced_choice_honoured);
    RUN(test_calibration_contract);
    RUN(test_each_openblas_copy_matches_reference);
    scratch_remove(scratch.dir);
    return test_summary();
}
