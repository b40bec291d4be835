// rng.h: explicit-state pseudo-random numbers.
//
// Algorithm: xoshiro256** (Blackman & Vigna 2018), seeded by running splitmix64 on
// the 64-bit seed. Uniform floats take the top 24 bits; normals use Box-Muller
// without caching, so the whole state is the four words and a stream is a pure
// function of its seed. The same seed gives the same numbers on every machine.
#ifndef CORE_RNG_H
#define CORE_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t s[4];
} Rng;

void rng_seed(Rng *rng, uint64_t seed);
uint64_t rng_u64(Rng *rng);
uint32_t rng_below(Rng *rng, uint32_t n);           // uniform integer in [0, n), n > 0
float rng_uniform(Rng *rng);                        // [0, 1)
float rng_normal(Rng *rng);                         // N(0, 1)
int rng_bernoulli(Rng *rng, float p);               // 1 with probability p
int rng_categorical(Rng *rng, const float *p, int n);  // index i with probability p[i] / sum(p)
void rng_shuffle(Rng *rng, int *a, int n);          // Fisher-Yates
// An independent stream derived from this one (for per-epoch or per-worker streams).
Rng rng_split(Rng *rng);

#endif
