// test_core_dims.c: the checked products of dimensions (core/dims.h): dims_mul's overflow
// detection at the edge of size_t, dims_product against 128-bit arithmetic, and dims_check's
// limit (DIMS_MAX accepted, one more refused) and its one-line message naming every term.
#include <string.h>

#include "core/dims.h"
#include "core/rng.h"
#include "tests/support/test.h"

static void test_dims_mul_edges(void) {
    size_t p = 7;
    EXPECT(dims_mul(&p, 3, 5) && p == 15);
    EXPECT(dims_mul(&p, SIZE_MAX, 1) && p == SIZE_MAX);
    EXPECT(dims_mul(&p, 0, SIZE_MAX) && p == 0);
    p = 7;
    EXPECT(!dims_mul(&p, SIZE_MAX / 2 + 1, 2) && p == 7, "wrap not detected, or out written");
    EXPECT(!dims_mul(&p, (size_t)1 << 32, (size_t)1 << 32));
}

static void test_dims_product_matches_128_bits(void) {
    Rng rng;
    rng_seed(&rng, 5);
    for (int trial = 0; trial < 20000; trial++) {
        DimTerm t[4];
        int n = 1 + (int)(rng_uniform(&rng) * 4.0f);
        if (n > 4) n = 4;
        unsigned __int128 want = 1;
        for (int i = 0; i < n; i++) {
            // Sides up to 2^31 - 1, spread over the scales.
            int bits = (int)(rng_uniform(&rng) * 31.0f);
            int64_t v = (int64_t)(rng_uniform(&rng) * (float)((int64_t)1 << bits));
            if (v > DIMS_MAX) v = DIMS_MAX;
            t[i] = (DimTerm){v, "--x"};
            want *= (unsigned __int128)v;
        }
        uint64_t got = dims_product(t, n);
        uint64_t expect = want > (unsigned __int128)UINT64_MAX - 1 ? UINT64_MAX : (uint64_t)want;
        EXPECT(got == expect, "trial %d: %llu, want %llu", trial, (unsigned long long)got,
               (unsigned long long)expect);
        Error err = {{0}};
        EXPECT((dims_check(&err, "t", t, n) == 0) == (want <= (unsigned __int128)DIMS_MAX),
               "trial %d: check disagrees with the 128-bit product", trial);
    }
}

static void test_dims_check_limit_and_message(void) {
    Error err = {{0}};
    DimTerm fit[] = {{1, "--batch"}, {262143, "annotation positions (from --image-size 1024)"},
                     {8192, "--attn-dim"}};
    EXPECT(dims_check(&err, "keys", fit, DIMS_LEN(fit)) == 0 && err.msg[0] == 0);
    DimTerm edge[] = {{DIMS_MAX, "--x"}};
    EXPECT(dims_check(&err, "edge", edge, 1) == 0);
    DimTerm over[] = {{1, "--batch"}, {262144, "annotation positions (from --image-size 1024)"},
                      {8192, "--attn-dim"}};
    EXPECT(dims_check(&err, "the attention's precomputed keys", over, DIMS_LEN(over)) == -1);
    const char *want = "--batch 1 x 262144 annotation positions (from --image-size 1024) x "
                       "--attn-dim 8192 = 2147483648 floats (the attention's precomputed keys) "
                       "exceeds 2147483647, the most one tensor may hold";
    EXPECT(strcmp(err.msg, want) == 0, "message: %s", err.msg);
    EXPECT(!strchr(err.msg, '\n'));
    DimTerm huge[] = {{DIMS_MAX, "--a"}, {DIMS_MAX, "--b"}, {DIMS_MAX, "--c"}};
    EXPECT(dims_check(&err, "h", huge, 3) == -1 && strstr(err.msg, "more than 2^64"), "%s", err.msg);
    DimTerm zero[] = {{0, "--a"}, {DIMS_MAX, "--b"}, {DIMS_MAX, "--c"}};
    EXPECT(dims_product(zero, 3) == 0 && dims_check(&err, "z", zero, 3) == 0);
}

int main(void) {
    RUN(test_dims_mul_edges);
    RUN(test_dims_product_matches_128_bits);
    RUN(test_dims_check_limit_and_message);
    return test_summary();
}
