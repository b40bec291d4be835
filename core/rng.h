// rng.h: explicit-state pseudo-random numbers.
//
// Algorithm: xoshiro256** (Blackman & Vigna 2018), seeded by running splitmix64 on
// the 64-bit seed. Uniform floats take the top 24 bits; normals use Box-Muller
// without caching, so the whole state is the four words and a stream is a pure
// function of its seed. The same seed gives the same numbers on every machine.
#ifndef CORE_RNG_H
#define CORE_RNG_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t s[4];
} Rng;

void rng_seed(Rng *rng, uint64_t seed);
uint64_t rng_u64(Rng *rng);
uint32_t rng_below(Rng *rng, uint32_t n);           // uniform integer in [0, n), n > 0
float rng_uniform(Rng *rng);                        // [0, 1)
float rng_normal(Rng *rng);                         // N(0, 1)
// n draws of N(0, 1) into out (n,), in bulk: one 64-bit word gives a Box-Muller pair
// (24-bit uniforms, so |z| <= 5.77; the tail beyond has mass 8e-9), with float
// polynomial log and sin/cos (error about 1e-6 relative). A different stream from
// rng_normal's, equally a pure function of the state; odd n drops the pair's second half.
void rng_normal_fill(Rng *rng, float *out, size_t n);
// The plain-loop reference of rng_normal_fill: the same words and pairs, with libm's
// double log, sqrt, cos and sin. Its tests compare the two.
void rng_normal_fill_reference(Rng *rng, float *out, size_t n);
int rng_bernoulli(Rng *rng, float p);               // 1 with probability p
int rng_categorical(Rng *rng, const float *p, int n);  // index i with probability p[i] / sum(p)
void rng_shuffle(Rng *rng, int *a, int n);          // Fisher-Yates
// An independent stream derived from this one (for per-epoch or per-worker streams).
Rng rng_split(Rng *rng);
// A 64-bit seed that mixes a and b (a splitmix64 finaliser of a combined with b): the
// seed of a stream of its own for item b under seed a, e.g. an image's noise for a step
// (rng_seed(&r, rng_mix(step_seed, image index))).
uint64_t rng_mix(uint64_t a, uint64_t b);

#endif
