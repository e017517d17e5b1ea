/*
 * peak_probe.c -- measures this core's peak fused multiply-add rate, so the
 * benchmark reports % of a measured peak rather than a datasheet number.
 *
 * Independent accumulator chains (more than FMA latency x throughput),
 * fully unrolled so they live in registers, keep the FMA pipes busy; the
 * caller times `iterations` rounds.
 */
#include <stdint.h>

#if defined(__x86_64__)
#include <immintrin.h>

#define CHAINS 12

__attribute__((target("avx512f"))) double probe_avx512_f32(int64_t iterations)
{
    __m512 acc[CHAINS];
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < CHAINS; ++i)
        acc[i] = _mm512_set1_ps((float)i);
    for (int64_t n = 0; n < iterations; ++n)
#pragma GCC unroll 12
        for (int i = 0; i < CHAINS; ++i)
            acc[i] = _mm512_fmadd_ps(acc[i], a, b);
    float sink = 0;
    for (int i = 0; i < CHAINS; ++i)
        sink += _mm512_reduce_add_ps(acc[i]);
    return sink;     /* returned so the chains are not optimised away */
}

__attribute__((target("avx512f"))) double probe_avx512_f64(int64_t iterations)
{
    __m512d acc[CHAINS];
    const __m512d a = _mm512_set1_pd(0.999999), b = _mm512_set1_pd(1e-7);
    for (int i = 0; i < CHAINS; ++i)
        acc[i] = _mm512_set1_pd((double)i);
    for (int64_t n = 0; n < iterations; ++n)
#pragma GCC unroll 12
        for (int i = 0; i < CHAINS; ++i)
            acc[i] = _mm512_fmadd_pd(acc[i], a, b);
    double sink = 0;
    for (int i = 0; i < CHAINS; ++i)
        sink += _mm512_reduce_add_pd(acc[i]);
    return sink;
}

__attribute__((target("avx2,fma"))) double probe_avx2_f32(int64_t iterations)
{
    __m256 acc[CHAINS];
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    for (int i = 0; i < CHAINS; ++i)
        acc[i] = _mm256_set1_ps((float)i);
    for (int64_t n = 0; n < iterations; ++n)
#pragma GCC unroll 12
        for (int i = 0; i < CHAINS; ++i)
            acc[i] = _mm256_fmadd_ps(acc[i], a, b);
    float out[8], sink = 0;
    for (int i = 0; i < CHAINS; ++i) {
        _mm256_storeu_ps(out, acc[i]);
        for (int j = 0; j < 8; ++j)
            sink += out[j];
    }
    return sink;
}

__attribute__((target("avx2,fma"))) double probe_avx2_f64(int64_t iterations)
{
    __m256d acc[CHAINS];
    const __m256d a = _mm256_set1_pd(0.999999), b = _mm256_set1_pd(1e-7);
    for (int i = 0; i < CHAINS; ++i)
        acc[i] = _mm256_set1_pd((double)i);
    for (int64_t n = 0; n < iterations; ++n)
#pragma GCC unroll 12
        for (int i = 0; i < CHAINS; ++i)
            acc[i] = _mm256_fmadd_pd(acc[i], a, b);
    double out[4], sink = 0;
    for (int i = 0; i < CHAINS; ++i) {
        _mm256_storeu_pd(out, acc[i]);
        for (int j = 0; j < 4; ++j)
            sink += out[j];
    }
    return sink;
}

int probe_chains(void) { return CHAINS; }
#endif
