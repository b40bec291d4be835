#define _GNU_SOURCE
#include "core/gemm.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "core/check.h"

// cblas constants (cblas.h values), so we need no header at build time.
enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111, CBLAS_TRANS = 112 };

typedef void (*sgemm_fn)(int order, int ta, int tb, int M, int N, int K, float alpha,
                         const float *A, int lda, const float *B, int ldb, float beta, float *C,
                         int ldc);
typedef void (*set_threads_fn)(int n);
typedef char *(*get_config_fn)(void);

static struct {
    pthread_once_t once;
    sgemm_fn sgemm;
    set_threads_fn set_threads;
    get_config_fn get_config;
    char backend[224];
} blas = {.once = PTHREAD_ONCE_INIT};

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

static void blas_open(void) {
    // ATTEND_BLAS_DEFAULT_CORETYPE=1 leaves the choice to OpenBLAS (for benchmarks that
    // compare its own detection with ours).
    const char *opt_out = getenv("ATTEND_BLAS_DEFAULT_CORETYPE");
    bool library_choice = opt_out && strcmp(opt_out, "1") == 0;
    const char *user = getenv("OPENBLAS_CORETYPE");
    CpuIsa isa = library_choice ? CPU_ISA_NONE : cpu_isa();
    char coretype[96];
    gemm_describe_coretype(coretype, sizeof coretype, user, isa);
    const char *pick = pick_coretype(isa);
    if (!(user && user[0]) && pick) setenv("OPENBLAS_CORETYPE", pick, 1);
    // Start single-threaded; gemm_set_threads() raises it.
    if (!getenv("OPENBLAS_NUM_THREADS")) setenv("OPENBLAS_NUM_THREADS", "1", 1);

    static const char *names[] = {"libopenblas.so.0", "libopenblas.so", "libblas.so.3"};
    void *lib = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++)
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    CHECK(lib, "cannot open OpenBLAS (%s); install it with: apt-get install libopenblas0",
          dlerror());
    blas.sgemm = (sgemm_fn)dlsym(lib, "cblas_sgemm");
    CHECK(blas.sgemm, "the BLAS library has no cblas_sgemm");
    blas.set_threads = (set_threads_fn)dlsym(lib, "openblas_set_num_threads");
    blas.get_config = (get_config_fn)dlsym(lib, "openblas_get_config");
    const char *cfg = blas.get_config ? blas.get_config() : "unknown BLAS";
    snprintf(blas.backend, sizeof blas.backend, "%s (%s)", cfg, coretype);
    if (blas.set_threads) blas.set_threads(1);
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

void gemm_set_threads(int n) {
    pthread_once(&blas.once, blas_open);
    if (blas.set_threads) blas.set_threads(n < 1 ? 1 : n);
}

const char *gemm_backend(void) {
    pthread_once(&blas.once, blas_open);
    return blas.backend;
}

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float *A, int lda,
          const float *B, int ldb, float beta, float *C, int ldc) {
    if (M == 0 || N == 0) return;
    pthread_once(&blas.once, blas_open);
    blas.sgemm(CBLAS_ROW_MAJOR, trans_a ? CBLAS_TRANS : CBLAS_NO_TRANS,
               trans_b ? CBLAS_TRANS : CBLAS_NO_TRANS, M, N, K, alpha, A, lda, B, ldb, beta, C,
               ldc);
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
