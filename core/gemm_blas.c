#define _GNU_SOURCE
#include "core/gemm_blas.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"

// cblas constants (cblas.h values), so we need no header at build time.
enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111, CBLAS_TRANS = 112 };
enum { COPIES = KERNEL_OPENBLAS_SKYLAKEX + 1 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static BlasLib copies[COPIES];
static _Atomic(const BlasLib *) loaded[COPIES];
static bool any_loaded;  // under lock: the next copy goes to a namespace of its own
static int threads = 1;  // under lock

static void *open_library(bool own_namespace) {
    static const char *names[] = {"libopenblas.so.0", "libopenblas.so", "libblas.so.3"};
    void *lib = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++)
        lib = own_namespace ? dlmopen(LM_ID_NEWLM, names[i], RTLD_NOW | RTLD_LOCAL)
                            : dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    CHECK(lib, "cannot open OpenBLAS (%s); install it with: apt-get install libopenblas0",
          dlerror());
    return lib;
}

// Loads copy k with its core type in the environment; under lock.
static void load_copy(GemmKernel k) {
    const char *force = gemm_kernel_coretype(k);
    const char *user = getenv("OPENBLAS_CORETYPE");
    char saved[64] = "";
    bool had = user != NULL;
    if (had) snprintf(saved, sizeof saved, "%s", user);
    if (force) setenv("OPENBLAS_CORETYPE", force, 1);
    // Start with one thread; blas_set_threads raises it.
    if (!getenv("OPENBLAS_NUM_THREADS")) setenv("OPENBLAS_NUM_THREADS", "1", 1);
    void *lib = open_library(any_loaded);
    if (force) {
        if (had) setenv("OPENBLAS_CORETYPE", saved, 1);
        else unsetenv("OPENBLAS_CORETYPE");
    }
    BlasLib *b = &copies[k];
    b->sgemm = (BlasSgemm)dlsym(lib, "cblas_sgemm");
    CHECK(b->sgemm, "the BLAS library has no cblas_sgemm");
    b->set_threads = (void (*)(int))dlsym(lib, "openblas_set_num_threads");
    char *(*config)(void) = (char *(*)(void))dlsym(lib, "openblas_get_config");
    char *(*corename)(void) = (char *(*)(void))dlsym(lib, "openblas_get_corename");
    snprintf(b->config, sizeof b->config, "%s", config ? config() : "unknown BLAS");
    snprintf(b->corename, sizeof b->corename, "%s", corename ? corename() : "unknown");
    if (b->set_threads) b->set_threads(threads);
    any_loaded = true;
    atomic_store(&loaded[k], b);
}

const BlasLib *blas_lib_loaded(GemmKernel k) {
    CHECK((int)k < (int)COPIES, "kernel %d is no OpenBLAS copy", (int)k);
    return atomic_load(&loaded[k]);
}

const BlasLib *blas_lib(GemmKernel k) {
    const BlasLib *b = blas_lib_loaded(k);
    if (b) return b;
    pthread_mutex_lock(&lock);
    if (!atomic_load(&loaded[k])) load_copy(k);
    pthread_mutex_unlock(&lock);
    return atomic_load(&loaded[k]);
}

void blas_set_threads(int n) {
    pthread_mutex_lock(&lock);
    threads = n < 1 ? 1 : n;
    for (int k = 0; k < COPIES; k++) {
        const BlasLib *b = atomic_load(&loaded[k]);
        if (b && b->set_threads) b->set_threads(threads);
    }
    pthread_mutex_unlock(&lock);
}

void blas_sgemm(const BlasLib *lib, bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    lib->sgemm(CBLAS_ROW_MAJOR, trans_a ? CBLAS_TRANS : CBLAS_NO_TRANS,
               trans_b ? CBLAS_TRANS : CBLAS_NO_TRANS, M, N, K, alpha, A, lda, B, ldb, beta, C,
               ldc);
}
