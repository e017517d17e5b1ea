/*
 * peak_probe.c -- measures this core's peak fused multiply-add rate, so the
 * benchmark reports % of a measured peak rather than a datasheet number.
 *
 * Independent accumulator chains (more than FMA latency x throughput),
 * fully unrolled so they live in registers, keep the FMA pipes busy; the
 * caller times `iterations` rounds.  The sum of the chains is returned so
 * the work cannot be optimised away.
 */
#include <stdint.h>

#if defined(__x86_64__)
#include <immintrin.h>

#define CHAINS 12

#define DEFINE_PROBE(NAME, TARGET, VEC, REAL, LANES, SET1, FMADD, STORE)                            \
    __attribute__((target(TARGET))) double NAME(int64_t iterations)                                \
    {                                                                                              \
        VEC acc[CHAINS];                                                                           \
        const VEC a = SET1((REAL)0.999999), b = SET1((REAL)1e-7);                                  \
        for (int i = 0; i < CHAINS; ++i)                                                           \
            acc[i] = SET1((REAL)i);                                                                \
        for (int64_t n = 0; n < iterations; ++n)                                                   \
            _Pragma("GCC unroll 12") for (int i = 0; i < CHAINS; ++i)                              \
                acc[i] = FMADD(acc[i], a, b);                                                      \
        REAL lanes[LANES];                                                                         \
        double sink = 0;                                                                           \
        for (int i = 0; i < CHAINS; ++i) {                                                         \
            STORE(lanes, acc[i]);                                                                  \
            for (int j = 0; j < LANES; ++j)                                                        \
                sink += lanes[j];                                                                  \
        }                                                                                          \
        return sink;                                                                               \
    }

DEFINE_PROBE(probe_avx512_f32, "avx512f", __m512, float, 16, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_storeu_ps)
DEFINE_PROBE(probe_avx512_f64, "avx512f", __m512d, double, 8, _mm512_set1_pd, _mm512_fmadd_pd, _mm512_storeu_pd)
DEFINE_PROBE(probe_avx2_f32, "avx2,fma", __m256, float, 8, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_storeu_ps)
DEFINE_PROBE(probe_avx2_f64, "avx2,fma", __m256d, double, 4, _mm256_set1_pd, _mm256_fmadd_pd, _mm256_storeu_pd)

int probe_chains(void) { return CHAINS; }
#endif
