#include "core/gemm_choice.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const class_names[GEMM_CLASSES] = {"small", "rows", "large", "step"};
static const char *const kernel_names[GEMM_KERNELS] = {
    "openblas", "openblas-haswell", "openblas-skylakex", "packed-avx2", "packed-avx512", "gemm"};

const char *gemm_class_name(GemmClass c) { return c < GEMM_CLASSES ? class_names[c] : "?"; }
const char *gemm_kernel_name(GemmKernel k) { return k < GEMM_KERNELS ? kernel_names[k] : "?"; }

GemmClass gemm_class_of(int M, int N, int K) {
    if ((double)M * N * K <= (double)(1 << 18)) return GEMM_SMALL;
    return M <= 128 ? GEMM_ROWS : GEMM_LARGE;
}

static bool is_openblas(GemmKernel k) { return k <= KERNEL_OPENBLAS_SKYLAKEX; }

bool gemm_kernel_serves(GemmKernel k, GemmClass c) {
    return c == GEMM_STEP ? !is_openblas(k) && k < GEMM_KERNELS : is_openblas(k);
}

bool gemm_kernel_runs(GemmKernel k, CpuIsa isa) {
    switch (k) {
    case KERNEL_OPENBLAS_HASWELL:
    case KERNEL_PACKED_AVX2: return isa >= CPU_ISA_AVX2;
    case KERNEL_OPENBLAS_SKYLAKEX:
    case KERNEL_PACKED_AVX512: return isa >= CPU_ISA_AVX512;
    case KERNEL_OPENBLAS:
    case KERNEL_VIA_GEMM: return true;
    default: return false;
    }
}

const char *gemm_kernel_coretype(GemmKernel k) {
    return k == KERNEL_OPENBLAS_HASWELL ? "HASWELL" : k == KERNEL_OPENBLAS_SKYLAKEX ? "SKYLAKEX" : NULL;
}

GemmChoice gemm_choice_by_isa(CpuIsa isa, bool library_coretype) {
    GemmKernel blas = library_coretype          ? KERNEL_OPENBLAS
                      : isa == CPU_ISA_AVX512 ? KERNEL_OPENBLAS_SKYLAKEX
                      : isa == CPU_ISA_AVX2   ? KERNEL_OPENBLAS_HASWELL
                                              : KERNEL_OPENBLAS;
    GemmKernel step = isa == CPU_ISA_AVX512 ? KERNEL_PACKED_AVX512
                      : isa == CPU_ISA_AVX2 ? KERNEL_PACKED_AVX2
                                            : KERNEL_VIA_GEMM;
    GemmChoice c = {{blas, blas, blas, step}};
    return c;
}

static int find_name(const char *const *names, int n, const char *s, size_t len) {
    for (int i = 0; i < n; i++)
        if (strlen(names[i]) == len && strncmp(names[i], s, len) == 0) return i;
    return -1;
}

// One "KERNEL" or "CLASS=KERNEL" item of a spec, [s, s + len), applied to out.
static int parse_item(GemmChoice *out, const char *s, size_t len, CpuIsa isa, Error *err) {
    const char *eq = memchr(s, '=', len);
    const char *kname = eq ? eq + 1 : s;
    size_t klen = eq ? len - (size_t)(eq + 1 - s) : len;
    int cls = -1;
    if (eq) {
        cls = find_name(class_names, GEMM_CLASSES, s, (size_t)(eq - s));
        if (cls < 0)
            return error_set(err, "'%.*s': no such class (small, rows, large, step)", (int)len, s);
    }
    int k = find_name(kernel_names, GEMM_KERNELS, kname, klen);
    if (k < 0)
        return error_set(err, "'%.*s': no such kernel (openblas, openblas-haswell, "
                              "openblas-skylakex, packed-avx2, packed-avx512, gemm)", (int)len, s);
    if (!gemm_kernel_runs((GemmKernel)k, isa))
        return error_set(err, "'%.*s': this CPU (%s) cannot run it", (int)len, s, cpu_isa_name(isa));
    bool any = false;
    for (int c = 0; c < GEMM_CLASSES; c++) {
        if ((cls < 0 || c == cls) && gemm_kernel_serves((GemmKernel)k, (GemmClass)c)) {
            out->kernel[c] = (GemmKernel)k;
            any = true;
        }
    }
    if (!any) return error_set(err, "'%.*s': that kernel does not serve that class", (int)len, s);
    return 0;
}

int gemm_choice_parse(GemmChoice *out, const char *spec, const GemmChoice *base, CpuIsa isa,
                      Error *err) {
    GemmChoice c = *base;
    const char *s = spec;
    if (!*s) return error_set(err, "an empty kernel choice");
    for (;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        if (len == 0) return error_set(err, "'%s': an empty item", spec);
        if (parse_item(&c, s, len, isa, err) != 0) return -1;
        if (!comma) break;
        s = comma + 1;
    }
    *out = c;
    return 0;
}

void gemm_choice_format(char *out, size_t cap, const GemmChoice *c) {
    size_t used = 0;
    if (cap) out[0] = 0;
    for (int i = 0; i < GEMM_CLASSES && used < cap; i++) {
        int n = snprintf(out + used, cap - used, "%s%s=%s", i ? "," : "", class_names[i],
                         gemm_kernel_name(c->kernel[i]));
        if (n < 0) return;
        used += (size_t)n;
    }
}

bool gemm_choice_equal(const GemmChoice *a, const GemmChoice *b) {
    for (int i = 0; i < GEMM_CLASSES; i++)
        if (a->kernel[i] != b->kernel[i]) return false;
    return true;
}

// --- the cache file -------------------------------------------------------------------------
static const char cache_magic[] = "attend gemm choice 1";

const GemmChoice *gemm_cache_find(const GemmCache *c, int threads) {
    for (int i = 0; i < c->n; i++)
        if (c->threads[i] == threads) return &c->choice[i];
    return NULL;
}

bool gemm_cache_set(GemmCache *c, int threads, const GemmChoice *choice) {
    for (int i = 0; i < c->n; i++) {
        if (c->threads[i] == threads) {
            c->choice[i] = *choice;
            return true;
        }
    }
    if (c->n >= GEMM_CACHE_MAX) return false;
    c->threads[c->n] = threads;
    c->choice[c->n++] = *choice;
    return true;
}

// A "threads N SPEC" line, [s, s + len), into the cache; every class must be named.
static int parse_threads_line(GemmCache *out, const char *s, size_t len, CpuIsa isa, Error *err) {
    char line[256];
    if (len >= sizeof line) return error_set(err, "too long");
    memcpy(line, s, len);
    line[len] = 0;
    int threads = 0, used = 0;
    if (sscanf(line, "threads %d %n", &threads, &used) != 1 || used == 0 || threads < 1 ||
        threads > 4096)
        return error_set(err, "not \"threads N CHOICE\"");
    if (gemm_cache_find(out, threads)) return error_set(err, "threads %d twice", threads);
    GemmChoice none, c;
    for (int i = 0; i < GEMM_CLASSES; i++) none.kernel[i] = GEMM_KERNELS;
    if (gemm_choice_parse(&c, line + used, &none, isa, err) != 0) return -1;
    for (int i = 0; i < GEMM_CLASSES; i++)
        if (c.kernel[i] == GEMM_KERNELS)
            return error_set(err, "no kernel for %s", class_names[i]);
    if (!gemm_cache_set(out, threads, &c)) return error_set(err, "more than %d thread counts", GEMM_CACHE_MAX);
    return 0;
}

int gemm_cache_parse(GemmCache *out, const char *text, CpuIsa isa, Error *err) {
    memset(out, 0, sizeof *out);
    int lineno = 0;
    bool have_key = false;
    for (const char *s = text; *s;) {
        const char *nl = strchr(s, '\n');
        if (!nl) return error_set(err, "line %d: no newline at the end (a torn file)", lineno + 1);
        size_t len = (size_t)(nl - s);
        lineno++;
        Error e;
        if (lineno == 1) {
            if (len != strlen(cache_magic) || memcmp(s, cache_magic, len) != 0)
                return error_set(err, "line 1: not \"%s\"", cache_magic);
        } else if (lineno == 2) {
            if (len < 5 || memcmp(s, "key ", 4) != 0 || len - 4 >= sizeof out->key)
                return error_set(err, "line 2: not \"key CPU; ISA; OPENBLAS\"");
            memcpy(out->key, s + 4, len - 4);
            out->key[len - 4] = 0;
            have_key = true;
        } else if (parse_threads_line(out, s, len, isa, &e) != 0) {
            return error_set(err, "line %d: %s", lineno, e.msg);
        }
        s = nl + 1;
    }
    if (!have_key) return error_set(err, "line %d: the file ends before its key", lineno + 1);
    return 0;
}

bool gemm_cache_format(char *out, size_t cap, const GemmCache *c) {
    size_t used = 0;
    int n = snprintf(out, cap, "%s\nkey %s\n", cache_magic, c->key);
    if (n < 0 || (size_t)n >= cap) return false;
    used = (size_t)n;
    for (int i = 0; i < c->n; i++) {
        char spec[160];
        gemm_choice_format(spec, sizeof spec, &c->choice[i]);
        n = snprintf(out + used, cap - used, "threads %d %s\n", c->threads[i], spec);
        if (n < 0 || (size_t)n >= cap - used) return false;
        used += (size_t)n;
    }
    return true;
}

bool gemm_cache_path(char *out, size_t cap) {
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int n;
    if (xdg && xdg[0] == '/')
        n = snprintf(out, cap, "%s/attend/gemm-choice", xdg);
    else if (home && home[0])
        n = snprintf(out, cap, "%s/.cache/attend/gemm-choice", home);
    else
        return false;
    return n > 0 && (size_t)n < cap;
}
