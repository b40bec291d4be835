// activations.h: elementwise nonlinearities, forward and backward, used by every layer.
// Backward functions accumulate (+=) into the input gradient. n elements throughout.
//
// The forwards use the vectorisable scalar approximations below (exp_fast, sigmoid_fast,
// tanh_fast): branch-free float arithmetic, so a loop over them compiles to SIMD code at
// -O3 without -ffast-math, where libm's expf/tanhf stay one call per element (about 10x
// slower here). Their clamps are compare-and-selects: GCC 12 makes them vector blends only
// under -fno-trapping-math (the Makefile's flags); with its default, tanh_fast's loops
// stayed scalar. *_ref are the plain libm loops the tests compare against. Error bounds
// against double precision, which tests/test_activations.c checks on a dense grid over
// [-110, 110] (measured: 8.3e-8, 1.9e-7 and 3.3e-7):
//   exp_fast      relative error <= 1.5e-7 while e^x is a normal float (x in [-87.3, 88.7]);
//                 subnormal results below that (exact to their reduced precision), 0 below
//                 about -103.9, +inf above about 88.72; NaN gives NaN
//   sigmoid_fast  relative error <= 3e-7 while the result is a normal float (x >= -87.3),
//                 absolute error <= 2e-7 everywhere: sigmoid(-100) = 3.8e-44, not 0
//   tanh_fast     absolute and relative error <= 4e-7; +-1 within 4e-7 beyond |x| 7.9
//   sigmoid_tanh_fast  absolute error <= 2e-7, values in [0, 1]; no relative accuracy
// With a fast fused multiply-add (FP_FAST_FMAF, e.g. -march=native on x86-64 with FMA) the
// polynomials use it, which roughly halves their cost; results then differ from a build
// without it, within the bounds above. Rounding is to nearest, as C requires by default.
#ifndef CORE_ACTIVATIONS_H
#define CORE_ACTIVATIONS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

// out = 1 / (1 + exp(-x)), stable for large |x| (sigmoid_fast)
void sigmoid_forward(float *out, const float *x, size_t n);
// dx += dout * out * (1 - out)   (out: the forward's output)
void sigmoid_backward(float *dx, const float *dout, const float *out, size_t n);

// out = tanh(x) (tanh_fast)
void tanh_forward(float *out, const float *x, size_t n);
// dx += dout * (1 - out^2)
void tanh_backward(float *dx, const float *dout, const float *out, size_t n);

void relu_forward(float *out, const float *x, size_t n);
// dx += dout * (out > 0)
void relu_backward(float *dx, const float *dout, const float *out, size_t n);

// Plain libm references of the forwards (expf, tanhf), for tests and comparisons.
void sigmoid_forward_ref(float *out, const float *x, size_t n);
void tanh_forward_ref(float *out, const float *x, size_t n);

// ---- scalar helpers for fused loops ---------------------------------------------------

// Stable sigmoid through libm's expf (one call per element; does not vectorise).
static inline float sigmoidf_(float x) {
    return x >= 0 ? 1.0f / (1.0f + __builtin_expf(-x)) : __builtin_expf(x) / (1.0f + __builtin_expf(x));
}

// a * b + c, fused (one rounding) where the machine has a fast fma, as C99's FP_FAST_FMAF
// says; otherwise two roundings. Results may differ between the two by the error bounds.
static inline float madd_(float a, float b, float c) {
#ifdef FP_FAST_FMAF
    return fmaf(a, b, c);
#else
    return a * b + c;
#endif
}

static inline uint32_t float_bits_(float f) {
    union { float f; uint32_t u; } v = {.f = f};
    return v.u;
}
static inline float bits_float_(uint32_t u) {
    union { uint32_t u; float f; } v = {.u = u};
    return v.f;
}

// e^x: x = n ln2 + r with n = round(x / ln2) (the 1.5 * 2^23 trick: adding it rounds to an
// integer held in the low mantissa bits), ln2 split in two (Cody and Waite) so r is exact
// to float precision, |r| <= ln2 / 2; e^r = 1 + r + r^2 P(r) with the degree-5 minimax P of
// the Cephes library's expf; 2^n applied as two factors 2^(n/2) 2^(n - n/2) so that results
// down to the subnormal range stay right and 2^128 overflows to +inf. x is clamped to
// [-104, 89] first (e^-104 is below half the smallest subnormal; e^89 overflows anyway).
static inline float exp_fast(float x) {
    x = x < -104.0f ? -104.0f : x;  // NaN passes both clamps and stays NaN
    x = x > 89.0f ? 89.0f : x;
    const float shifter = 12582912.0f;  // 1.5 * 2^23
    float t = madd_(x, 1.44269504088896341f, shifter);
    float n = t - shifter;
    float r = madd_(n, -0.693359375f, x);  // ln2 high part (few mantissa bits: n * hi is exact)
    r = madd_(n, 2.12194440e-4f, r);       // ln2 low part
    float p = 1.9875691500e-4f;
    p = madd_(p, r, 1.3981999507e-3f);
    p = madd_(p, r, 8.3334519073e-3f);
    p = madd_(p, r, 4.1665795894e-2f);
    p = madd_(p, r, 1.6666665459e-1f);
    p = madd_(p, r, 5.0000001201e-1f);
    p = madd_(p * r, r, r) + 1.0f;
    // n as an integer from t's low mantissa bits: t = 1.5 * 2^23 + n exactly.
    int32_t ni = (int32_t)(float_bits_(t) - float_bits_(shifter));
    int32_t n1 = ni / 2, n2 = ni - n1;
    float s1 = bits_float_((uint32_t)(n1 + 127) << 23), s2 = bits_float_((uint32_t)(n2 + 127) << 23);
    return p * s1 * s2;
}

// 1 / (1 + e^-x) from e = exp_fast(-|x|): 1 / (1 + e) for x >= 0 and e / (1 + e) for x < 0,
// so neither tail loses relative precision.
static inline float sigmoid_fast(float x) {
    float e = exp_fast(-__builtin_fabsf(x));
    float s = 1.0f / (1.0f + e), es = e * s;  // both computed: a plain select vectorises
    return x >= 0.0f ? s : es;
}

// tanh as a rational function (odd degree-13 over even degree-6 polynomial, clamped at
// +-7.9053), the approximation the Eigen library uses for its fast float tanh.
static inline float tanh_fast(float x) {
    const float clamp = 7.90531110763549805f;
    x = x > clamp ? clamp : x;
    x = x < -clamp ? -clamp : x;
    float x2 = x * x;
    float p = -2.76076847742355e-16f;
    p = madd_(p, x2, 2.00018790482477e-13f);
    p = madd_(p, x2, -8.60467152213735e-11f);
    p = madd_(p, x2, 5.12229709037114e-08f);
    p = madd_(p, x2, 1.48572235717979e-05f);
    p = madd_(p, x2, 6.37261928875436e-04f);
    p = madd_(p, x2, 4.89352455891786e-03f);
    float q = 1.19825839466702e-06f;
    q = madd_(q, x2, 1.18534705686654e-04f);
    q = madd_(q, x2, 2.26843463243900e-03f);
    q = madd_(q, x2, 4.89352518554385e-03f);
    return x * p / q;
}

// 1 / (1 + e^-x) as 0.5 + 0.5 tanh_fast(x / 2): about twice as fast as sigmoid_fast but
// accurate in absolute terms only (<= 2e-7, within [0, 1]); below x of about -16 it gives
// about 1e-7 or 0 instead of e^x. For gates and probabilities that are added and
// multiplied, not for logarithms or ratios of small values.
static inline float sigmoid_tanh_fast(float x) { return madd_(0.5f, tanh_fast(0.5f * x), 0.5f); }

#endif
