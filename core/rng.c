#include "core/rng.h"

#include <math.h>

#include "core/check.h"

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void rng_seed(Rng *rng, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) rng->s[i] = splitmix64(&x);
}

uint64_t rng_u64(Rng *rng) {
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint32_t rng_below(Rng *rng, uint32_t n) {
    CHECK(n > 0);
    // Lemire's multiply-shift with rejection: exactly uniform.
    uint64_t m = (uint64_t)(uint32_t)(rng_u64(rng) >> 32) * n;
    uint32_t low = (uint32_t)m;
    if (low < n) {
        uint32_t threshold = (uint32_t)(-n) % n;
        while (low < threshold) {
            m = (uint64_t)(uint32_t)(rng_u64(rng) >> 32) * n;
            low = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

float rng_uniform(Rng *rng) { return (float)(rng_u64(rng) >> 40) * (1.0f / 16777216.0f); }

float rng_normal(Rng *rng) {
    // u1 in (0, 1] so log is finite.
    double u1 = ((double)(rng_u64(rng) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
    double u2 = (double)(rng_u64(rng) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

int rng_bernoulli(Rng *rng, float p) { return rng_uniform(rng) < p; }

int rng_categorical(Rng *rng, const float *p, int n) {
    CHECK(n > 0);
    double total = 0.0;
    for (int i = 0; i < n; i++) total += p[i];
    double u = (double)rng_uniform(rng) * total, acc = 0.0;
    int last = n - 1;
    for (int i = 0; i < n; i++) {
        if (p[i] <= 0.0f) continue;
        acc += p[i];
        last = i;
        if (u < acc) return i;
    }
    return last;  // rounding left u at the very top
}

void rng_shuffle(Rng *rng, int *a, int n) {
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rng_below(rng, (uint32_t)i + 1);
        int t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

Rng rng_split(Rng *rng) {
    Rng child;
    rng_seed(&child, rng_u64(rng));
    return child;
}
