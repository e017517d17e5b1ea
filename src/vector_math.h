/*
 * vector_math.h -- exp, sigmoid and tanh without libm, branch-free, so the
 * compiler vectorises the loops that call them (glibc's expf and tanhf are
 * scalar calls of ~6 and ~45 ns).  Used by the recurrent cells (rnn.c) and
 * softmax (softmax.c).
 *
 * Cody-Waite reduction y = n ln2 + r, |r| <= ln2 / 2, a
 * Taylor polynomial for expm1(r) (degree 13 in double, 8 in float: under
 * 0.1 and 0.3 ulp), and the scaling by 2^n built from the bits of the
 * rounded n, in two factors so that subnormal and overflowing results come
 * out as IEEE's.  Each is within 2 ulp of the correctly rounded value
 * (tests/test_rnn.py measures it); the same operations run on every CPU,
 * so the bits do not depend on the instruction set.
 *   exp(y)    = 2^n (1 + q),   q = expm1(r)
 *   expm1(y)  = 2^n q + (2^n - 1)
 *   sigmoid(x) = 1 / (1 + exp(-x))                         (torch's formula)
 *   tanh(x)   = sign(x) * -e / (2 + e),  e = expm1(-2|x|)  (no cancellation)
 * NaN propagates; +-inf give exp's 0 / inf, sigmoid's 0 / 1, tanh's +-1;
 * tanh(-0.0) is -0.0.
 *
 * The clamps are selects; GCC vectorises a loop holding them only when
 * told that floating-point operations do not trap, so an including file
 * compiles its loops with #pragma GCC optimize("no-trapping-math") before
 * including this (that changes no value: it lets the compiler evaluate
 * both sides of a select).
 */
#ifndef CX_VECTOR_MATH_H
#define CX_VECTOR_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#define CX_INLINE static inline __attribute__((always_inline))

CX_INLINE double cx_bits_to_f64(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

CX_INLINE uint64_t cx_f64_to_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

CX_INLINE float cx_bits_to_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

CX_INLINE uint32_t cx_f32_to_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* 2^k for an integer-valued k in [-1022, 1023]: (k + 1.5 * 2^52) holds k in
 * its low mantissa bits, and shifting them into the exponent field drops
 * the rest. */
CX_INLINE double cx_pow2_f64(double k)
{
    const double shifter = 0x1.8p52;
    return cx_bits_to_f64((cx_f64_to_bits(k + shifter) + 1023u) << 52);
}

CX_INLINE float cx_pow2_f32(float k)
{
    const float shifter = 0x1.8p23f;
    return cx_bits_to_f32((cx_f32_to_bits(k + shifter) + 127u) << 23);
}

/* n = round(y / ln2) and q = expm1(r), r = y - n ln2, for y already clamped. */
CX_INLINE double cx_reduce_f64(double y, double *n)
{
    const double shifter = 0x1.8p52;
    const double k = (y * 0x1.71547652b82fep0 + shifter) - shifter;
    const double r = (y - k * 0x1.62e42fee00000p-1) - k * 0x1.a39ef35793c76p-33;
    double p = 1.0 / 6227020800.0;                         /* 1/13! */
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    *n = k;
    return r + (r * r) * p;
}

CX_INLINE float cx_reduce_f32(float y, float *n)
{
    const float shifter = 0x1.8p23f;
    const float k = (y * 0x1.715476p0f + shifter) - shifter;
    const float r = (y - k * 0x1.62e400p-1f) - k * 0x1.7f7d1cp-20f;
    float p = 1.0f / 40320.0f;                              /* 1/8! */
    p = p * r + 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    *n = k;
    return r + (r * r) * p;
}

CX_INLINE double cx_exp_f64(double y)
{
    /* Beyond these, exp is 0 or inf anyway; the comparisons keep a NaN. */
    y = y < -746.0 ? -746.0 : y;
    y = y > 710.0 ? 710.0 : y;
    double n;
    const double q = cx_reduce_f64(y, &n);
    const double half = (n * 0.5 + 0x1.8p52) - 0x1.8p52;   /* n = half + (n - half), each in range */
    return ((1.0 + q) * cx_pow2_f64(half)) * cx_pow2_f64(n - half);
}

CX_INLINE float cx_exp_f32(float y)
{
    y = y < -104.0f ? -104.0f : y;
    y = y > 89.0f ? 89.0f : y;
    float n;
    const float q = cx_reduce_f32(y, &n);
    const float half = (n * 0.5f + 0x1.8p23f) - 0x1.8p23f;
    return ((1.0f + q) * cx_pow2_f32(half)) * cx_pow2_f32(n - half);
}

CX_INLINE double cx_sigmoid_f64(double x)
{
    return 1.0 / (1.0 + cx_exp_f64(-x));
}

CX_INLINE float cx_sigmoid_f32(float x)
{
    return 1.0f / (1.0f + cx_exp_f32(-x));
}

CX_INLINE double cx_tanh_f64(double x)
{
    double y = -2.0 * fabs(x);
    y = y < -40.0 ? -40.0 : y;          /* tanh is 1 to the last bit beyond |x| = 20 */
    double n;
    const double q = cx_reduce_f64(y, &n);
    const double s = cx_pow2_f64(n);
    const double e = s * q + (s - 1.0);  /* expm1(y), in (-1, 0] */
    return copysign(-e / (2.0 + e), x);
}

CX_INLINE float cx_tanh_f32(float x)
{
    float y = -2.0f * fabsf(x);
    y = y < -20.0f ? -20.0f : y;
    float n;
    const float q = cx_reduce_f32(y, &n);
    const float s = cx_pow2_f32(n);
    const float e = s * q + (s - 1.0f);
    return copysignf(-e / (2.0f + e), x);
}

#endif
