#define _GNU_SOURCE
#include "core/gemm.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/check.h"
#include "core/fileio.h"
#include "core/gemm_blas.h"
#include "core/gemm_calibrate.h"
#include "core/gemm_choice.h"
#include "core/timer.h"

static pthread_once_t isa_once = PTHREAD_ONCE_INIT;
static CpuIsa isa_found = CPU_ISA_NONE;

static void isa_detect(void) {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl"))
        isa_found = CPU_ISA_AVX512;
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        isa_found = CPU_ISA_AVX2;
#endif
}

CpuIsa cpu_isa(void) {
    pthread_once(&isa_once, isa_detect);
    return isa_found;
}

const char *cpu_isa_name(CpuIsa isa) {
    return isa == CPU_ISA_AVX512 ? "avx512" : isa == CPU_ISA_AVX2 ? "avx2" : "none";
}

void cpu_model_name(char *buf, int n) {
    snprintf(buf, (size_t)n, "unknown");
    FILE *fp = fopen("/proc/cpuinfo", "r");
    if (!fp) return;
    char line[512];
    while (fgets(line, sizeof line, fp)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        const char *v = strchr(line, ':');
        if (!v) continue;
        v++;
        while (*v == ' ' || *v == '\t') v++;
        line[strcspn(line, "\n")] = 0;
        snprintf(buf, (size_t)n, "%s", v);
        break;
    }
    fclose(fp);
}

// The kernel family OpenBLAS should use on a CPU of this ISA, or NULL to let it decide.
static const char *pick_coretype(CpuIsa isa) {
    switch (isa) {
    case CPU_ISA_AVX512: return "SKYLAKEX";
    case CPU_ISA_AVX2: return "HASWELL";
    default: return NULL;
    }
}

void gemm_describe_coretype(char *out, size_t cap, const char *user, CpuIsa isa) {
    const char *pick = pick_coretype(isa);
    if (!(user && user[0])) {
        snprintf(out, cap, "OPENBLAS_CORETYPE=%s", pick ? pick : "default");
    } else if (pick && strcasecmp(user, pick) != 0) {
        snprintf(out, cap, "OPENBLAS_CORETYPE=%s, yours; %s suits this CPU", user, pick);
    } else {
        snprintf(out, cap, "OPENBLAS_CORETYPE=%s", user);
    }
}

// --- the choice of kernels ------------------------------------------------------------------
typedef enum { MODE_AUTO, MODE_CALIBRATE, MODE_TABLE, MODE_SPEC } Mode;

static struct {
    pthread_once_t once;
    pthread_mutex_t lock;
    Mode mode;
    GemmChoice fixed;        // MODE_TABLE, MODE_SPEC, and MODE_AUTO when it cannot measure
    bool fixed_in_auto;      // MODE_AUTO keeps to the table (and why: fixed_why)
    const char *fixed_why;
    bool library_coretype;   // your OPENBLAS_CORETYPE or ATTEND_BLAS_DEFAULT_CORETYPE=1
    GemmCache cache;         // this process's choices per thread count
    const char *source[GEMM_CACHE_MAX];
    _Atomic(const GemmChoice *) current;
    int current_slot;
    _Atomic int threads;     // the thread count of the current choice (gemm_threads)
    char backend[480];
} choice = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER};

// Ends the program on a choice it cannot follow (a misspelt ATTEND_GEMM).
static _Noreturn void bad_spec(const char *spec, const Error *err) {
    fprintf(stderr, "attend: ATTEND_GEMM=%s: %s\n", spec, err->msg);
    exit(2);
}

static bool address_space_limited(void) {
    struct rlimit lim;
    return getrlimit(RLIMIT_AS, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY;
}

static void choice_init(void) {
    const char *opt_out = getenv("ATTEND_BLAS_DEFAULT_CORETYPE");
    const char *user = getenv("OPENBLAS_CORETYPE");
    bool library_choice = opt_out && strcmp(opt_out, "1") == 0;
    choice.library_coretype = library_choice || (user && user[0]);
    choice.fixed = gemm_choice_by_isa(cpu_isa(), choice.library_coretype);
    const char *spec = getenv("ATTEND_GEMM");
    if (!spec || !spec[0] || strcmp(spec, "auto") == 0) {
        choice.mode = MODE_AUTO;
    } else if (strcmp(spec, "calibrate") == 0) {
        choice.mode = MODE_CALIBRATE;
    } else if (strcmp(spec, "isa") == 0) {
        choice.mode = MODE_TABLE;
    } else {
        choice.mode = MODE_SPEC;
        Error err;
        if (gemm_choice_parse(&choice.fixed, spec, &choice.fixed, cpu_isa(), &err) != 0)
            bad_spec(spec, &err);
    }
    if (choice.mode == MODE_AUTO || choice.mode == MODE_CALIBRATE) {
        choice.fixed_why = library_choice ? "the table: ATTEND_BLAS_DEFAULT_CORETYPE=1"
                           : choice.library_coretype ? "the table: your OPENBLAS_CORETYPE"
                           : address_space_limited() ? "the table: an address-space limit"
                                                     : NULL;
        choice.fixed_in_auto = choice.fixed_why != NULL;
    }
}

// "CPU; ISA; OpenBLAS build" (the library's own copy's configuration without its core name).
static void cache_key(char *out, size_t cap) {
    char cpu[200], build[160];
    cpu_model_name(cpu, sizeof cpu);
    const BlasLib *own = blas_lib(KERNEL_OPENBLAS);
    snprintf(build, sizeof build, "%s", own->config);
    char *core = own->corename[0] ? strstr(build, own->corename) : NULL;
    size_t cut = core ? strlen(own->corename) + (core[strlen(own->corename)] == ' ') : 0;
    if (core) memmove(core, core + cut, strlen(core + cut) + 1);
    snprintf(out, cap, "%s; %s; %s", cpu, cpu_isa_name(cpu_isa()), build);
}

// The cache file's entries when its key is key, else none (with a warning when it exists
// but does not parse).
static void cache_load(GemmCache *out, const char *path, const char *key) {
    memset(out, 0, sizeof *out);
    snprintf(out->key, sizeof out->key, "%s", key);
    if (!file_exists(path)) return;
    unsigned char *text = NULL;
    size_t len = 0;
    Error err;
    GemmCache read;
    if (file_read_all(path, &text, &len, 1 << 16, &err) != 0) {
        fprintf(stderr, "attend: %s; measuring the matrix-multiply kernels again\n", err.msg);
        return;
    }
    if (strlen((char *)text) != len || gemm_cache_parse(&read, (char *)text, cpu_isa(), &err) != 0) {
        if (strlen((char *)text) != len) snprintf(err.msg, sizeof err.msg, "a NUL byte in it");
        fprintf(stderr, "attend: %s: %s; measuring the matrix-multiply kernels again\n", path, err.msg);
    } else if (strcmp(read.key, key) == 0) {
        *out = read;
    }
    free(text);
}

static void cache_store(const char *path, const GemmCache *c) {
    char text[4096], dir[1100];
    Error err;
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    if (!gemm_cache_format(text, sizeof text, c)) return;
    if ((slash && make_dirs(dir, &err) != 0) || file_write_atomic(path, text, strlen(text), &err) != 0)
        fprintf(stderr, "attend: cannot keep the matrix-multiply kernels' choice: %s\n", err.msg);
}

// The 1-minute load average when it is above what a measurement may run under
// (ATTEND_GEMM_MAX_LOAD, default the CPU count), else 0.
static double busy_load(void) {
    double load = 0;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const char *max_s = getenv("ATTEND_GEMM_MAX_LOAD");
    char *end = NULL;
    double max = max_s && max_s[0] ? strtod(max_s, &end) : (double)(cpus > 0 ? cpus : 1);
    if (end && *end) max = (double)(cpus > 0 ? cpus : 1);
    return getloadavg(&load, 1) == 1 && load > max ? load : 0;
}

// Measures the kernels for threads; under choice.lock.
static GemmChoice measure(int threads, bool announce) {
    bool allowed[GEMM_KERNELS];
    for (int k = 0; k < GEMM_KERNELS; k++) allowed[k] = true;
    double t0 = timer_now();
    GemmCalibration cal = gemm_calibrate(threads, cpu_isa(), allowed, &choice.fixed);
    if (announce) {
        char spec[160], busy[160] = "";
        gemm_choice_format(spec, sizeof spec, &cal.choice);
        double load = busy_load();
        if (load > 0)
            snprintf(busy, sizeof busy, "; the machine was busy (load %.1f): "
                     "ATTEND_GEMM=calibrate measures again when it is quiet", load);
        fprintf(stderr, "attend: matrix-multiply kernels measured for %d thread%s in %.1f s: %s "
                        "(ATTEND_GEMM=isa skips the measurement)%s\n",
                threads, threads == 1 ? "" : "s", timer_now() - t0, spec, busy);
    }
    return cal.choice;
}

// The choice for threads, and where it came from; under choice.lock.
static GemmChoice choose(int threads, const char **source) {
    if (choice.mode == MODE_TABLE || choice.mode == MODE_SPEC || choice.fixed_in_auto) {
        *source = choice.mode == MODE_SPEC ? "ATTEND_GEMM" : choice.fixed_why ? choice.fixed_why : "the table";
        return choice.fixed;
    }
    char path[1100], key[GEMM_KEY_MAX];
    bool have_path = gemm_cache_path(path, sizeof path);
    cache_key(key, sizeof key);
    GemmCache file;
    if (have_path) cache_load(&file, path, key);
    else memset(&file, 0, sizeof file), snprintf(file.key, sizeof file.key, "%s", key);
    const GemmChoice *hit = choice.mode == MODE_AUTO ? gemm_cache_find(&file, threads) : NULL;
    if (hit) {
        *source = "cached";
        return *hit;
    }
    // A measurement on a busy machine picks by the noise, and its choice would be kept: the
    // table serves until a run finds the machine quiet.
    if (choice.mode == MODE_AUTO && busy_load() > 0) {
        *source = "the table: the machine is busy, measured when it is quiet";
        return choice.fixed;
    }
    GemmChoice c = measure(threads, true);
    *source = "measured";
    if (have_path && gemm_cache_set(&file, threads, &c)) cache_store(path, &file);
    return c;
}

static void describe_current(const GemmChoice *c, const char *source, int threads) {
    const BlasLib *rows = blas_lib(c->kernel[GEMM_ROWS]);
    char coretype[96], spec[160];
    bool table = gemm_choice_equal(c, &choice.fixed) && choice.mode != MODE_SPEC;
    if (table)
        gemm_describe_coretype(coretype, sizeof coretype, getenv("OPENBLAS_CORETYPE"),
                               choice.library_coretype && !getenv("OPENBLAS_CORETYPE") ? CPU_ISA_NONE
                                                                                        : cpu_isa());
    else
        snprintf(coretype, sizeof coretype, "OPENBLAS_CORETYPE=per class");
    gemm_choice_format(spec, sizeof spec, c);
    snprintf(choice.backend, sizeof choice.backend, "%s (%s); kernels %s (%s, %d thread%s)",
             rows->config, coretype, spec, source, threads, threads == 1 ? "" : "s");
}

// Makes the choice for threads current (choosing it the first time).
static void use_threads(int threads) {
    pthread_once(&choice.once, choice_init);
    pthread_mutex_lock(&choice.lock);
    const GemmChoice *c = gemm_cache_find(&choice.cache, threads);
    if (!c) {
        const char *source = NULL;
        GemmChoice picked = choose(threads, &source);
        CHECK(gemm_cache_set(&choice.cache, threads, &picked), "more than %d thread counts", GEMM_CACHE_MAX);
        c = gemm_cache_find(&choice.cache, threads);
        choice.source[c - choice.cache.choice] = source;
    }
    blas_set_threads(threads);
    describe_current(c, choice.source[c - choice.cache.choice], threads);
    atomic_store(&choice.threads, threads);
    atomic_store(&choice.current, c);
    pthread_mutex_unlock(&choice.lock);
}

static const GemmChoice *current_choice(void) {
    const GemmChoice *c = atomic_load(&choice.current);
    if (c) return c;
    use_threads(1);
    return atomic_load(&choice.current);
}

int gemm_check_address_space(int callers, Error *err) {
    struct rlimit lim;
    if (getrlimit(RLIMIT_AS, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return 0;
    const size_t mib = (size_t)1 << 20;
    const size_t need = ((size_t)(callers > 0 ? callers : 1) * 128 + 64) * mib;
    void *probe = mmap(NULL, need, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (probe == MAP_FAILED)
        return error_set(err, "the address-space limit (ulimit -v %llu KiB) leaves no room for "
                              "OpenBLAS's work buffers (%d x 128 MiB, which it would wait for "
                              "forever): raise the limit, or use fewer --threads",
                         (unsigned long long)(lim.rlim_cur / 1024), callers);
    munmap(probe, need);
    return 0;
}

void gemm_set_threads(int n) { use_threads(n < 1 ? 1 : n); }

int gemm_threads(void) {
    current_choice();
    return atomic_load(&choice.threads);
}

const char *gemm_backend(void) {
    current_choice();
    return choice.backend;
}

void gemm_kernels(char *out, size_t cap) { gemm_choice_format(out, cap, current_choice()); }

CpuIsa gemm_step_kernel(void) {
    GemmKernel k = current_choice()->kernel[GEMM_STEP];
    return k == KERNEL_PACKED_AVX512 ? CPU_ISA_AVX512 : k == KERNEL_PACKED_AVX2 ? CPU_ISA_AVX2 : CPU_ISA_NONE;
}

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float *A, int lda,
          const float *B, int ldb, float beta, float *C, int ldc) {
    if (M == 0 || N == 0) return;
    const GemmChoice *c = current_choice();
    const BlasLib *lib = blas_lib(c->kernel[gemm_class_of(M, N, K)]);
    blas_sgemm(lib, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm_ref(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float *A,
              int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            double acc = 0.0;
            for (int k = 0; k < K; k++) {
                float a = trans_a ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
                float b = trans_b ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
                acc += (double)a * b;
            }
            float *c = &C[(size_t)i * ldc + j];
            *c = (float)(alpha * acc + (beta == 0.0f ? 0.0 : (double)beta * *c));
        }
    }
}
