#include "core/rng.h"

#include <math.h>

#include "core/check.h"

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t rng_mix(uint64_t a, uint64_t b) {
    uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
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

// Box-Muller pairs from one word: u1 = (top 24 bits + 1) / 2^24 in (0, 1], exact in
// float; the low word's top two bits pick a quadrant q and its next 24 an angle a in
// [-pi/4, pi/4); the angle q pi/2 + a is uniform on a full turn. Both halves are used.

// ln(x) for x in (0, 1]: x = m 2^e with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s),
// s = (m - 1) / (m + 1), |s| <= 0.172, odd series to s^9 (truncation below 3e-9).
static inline float log_unit(float x) {
    union { float f; uint32_t u; } v = {x};
    int32_t e = (int32_t)((v.u >> 23) & 0xff) - 127;
    v.u = (v.u & 0x007fffffu) | 0x3f800000u;  // m in [1, 2)
    float m = v.f;
    if (m > 1.41421356f) {
        m *= 0.5f;
        e += 1;
    }
    float s = (m - 1.0f) / (m + 1.0f), s2 = s * s;
    float series = s * (2.0f + s2 * (2.0f / 3 + s2 * (2.0f / 5 + s2 * (2.0f / 7 + s2 * (2.0f / 9)))));
    return (float)e * 0.693147180559945f + series;
}

// sqrt for x >= 0 as pure arithmetic (no errno branch, so the pair loop vectorises):
// the bit-trick estimate of 1/sqrt(x) and three Newton steps (relative error < 1e-7),
// times x. x below 1e-30 gives about 1e-15.
static inline float sqrt_nonnegative(float x) {
    x = x < 1e-30f ? 1e-30f : x;
    union { float f; uint32_t u; } v = {x};
    v.u = 0x5f375a86u - (v.u >> 1);
    float y = v.f;
    for (int i = 0; i < 3; i++) y = y * (1.5f - 0.5f * x * y * y);
    return x * y;
}

static inline void pair_from_word(uint64_t w, float *z0, float *z1) {
    float u1 = ((float)(uint32_t)(w >> 40) + 1.0f) * (1.0f / 16777216.0f);
    uint32_t lo = (uint32_t)w, q = lo >> 30;
    float a = ((float)((lo >> 6) & 0xffffffu) * (1.0f / 16777216.0f) - 0.5f) * 1.5707963267948966f;
    float a2 = a * a;
    float sa = a * (1.0f + a2 * (-1.0f / 6 + a2 * (1.0f / 120 + a2 * (-1.0f / 5040 + a2 * (1.0f / 362880)))));
    float ca = 1.0f + a2 * (-0.5f + a2 * (1.0f / 24 + a2 * (-1.0f / 720 + a2 * (1.0f / 40320))));
    float r = sqrt_nonnegative(-2.0f * log_unit(u1));
    // Rotate (cos a, sin a) by q quarter turns.
    float c = (q & 1) ? sa : ca, s = (q & 1) ? ca : sa;
    float csign = ((q + 1) & 2) ? -1.0f : 1.0f, ssign = (q & 2) ? -1.0f : 1.0f;
    *z0 = r * csign * c;
    *z1 = r * ssign * s;
}

void rng_normal_fill(Rng *rng, float *out, size_t n) {
    enum { CHUNK = 64 };
    uint64_t w[CHUNK];
    float z0[CHUNK], z1[CHUNK];
    size_t i = 0;
    while (i < n) {
        size_t pairs = (n - i + 1) / 2;
        if (pairs > CHUNK) pairs = CHUNK;
        for (size_t k = 0; k < pairs; k++) w[k] = rng_u64(rng);
        for (size_t k = 0; k < pairs; k++) pair_from_word(w[k], &z0[k], &z1[k]);
        for (size_t k = 0; k < pairs && i < n; k++) {
            out[i++] = z0[k];
            if (i < n) out[i++] = z1[k];
        }
    }
}

void rng_normal_fill_reference(Rng *rng, float *out, size_t n) {
    for (size_t i = 0; i < n; i += 2) {
        uint64_t w = rng_u64(rng);
        double u1 = ((double)(w >> 40) + 1.0) / 16777216.0;
        uint32_t lo = (uint32_t)w;
        double quarter = 1.5707963267948966;
        double theta = (double)(lo >> 30) * quarter +
                       ((double)((lo >> 6) & 0xffffffu) / 16777216.0 - 0.5) * quarter;
        double r = sqrt(-2.0 * log(u1));
        out[i] = (float)(r * cos(theta));
        if (i + 1 < n) out[i + 1] = (float)(r * sin(theta));
    }
}
