/*
 * avx2.c -- AVX2 + FMA microkernels: 6 x 16 (float32) and 6 x 8 (float64),
 * 12 accumulators of the 16 ymm registers.  Compiled with a target
 * attribute, so the rest of the library stays baseline x86-64.
 */
#include "../internal.h"

#if defined(CX_HAVE_X86_KERNELS)
#include <immintrin.h>

#define TARGET __attribute__((target("avx2,fma")))
#define MR 6
#define NV 2

#define REAL float
#define VEC __m256
#define VL 8
#define UKERNEL ukernel_avx2_f32
#define V_ZERO() _mm256_setzero_ps()
#define V_LOAD(p) _mm256_loadu_ps(p)
#define V_STORE(p, v) _mm256_storeu_ps(p, v)
#define V_BCAST(x) _mm256_set1_ps(x)
#define V_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define V_ADD(a, b) _mm256_add_ps(a, b)
#define V_TRANSPOSE(r) transpose_8x8_f32(r)
#define PACK_B_COLS pack_b_cols_avx2_f32
#define TINY tiny_avx2_f32
#define FMA1(x, y, z) __builtin_fmaf(x, y, z)

/* t: rows 2k, 2k+1 interleaved per 128-bit half; u[4g + c], half L: column
 * 4L + c of rows 4g .. 4g + 3; then the halves of u[c] and u[4 + c]. */
TARGET static inline void transpose_8x8_f32(__m256 r[8])
{
    __m256 t[8], u[8];
    for (int k = 0; k < 4; ++k) {
        t[2 * k] = _mm256_unpacklo_ps(r[2 * k], r[2 * k + 1]);
        t[2 * k + 1] = _mm256_unpackhi_ps(r[2 * k], r[2 * k + 1]);
    }
    for (int g = 0; g < 2; ++g) {
        const __m256d a = _mm256_castps_pd(t[4 * g]), b = _mm256_castps_pd(t[4 * g + 1]);
        const __m256d c = _mm256_castps_pd(t[4 * g + 2]), d = _mm256_castps_pd(t[4 * g + 3]);
        u[4 * g + 0] = _mm256_castpd_ps(_mm256_unpacklo_pd(a, c));
        u[4 * g + 1] = _mm256_castpd_ps(_mm256_unpackhi_pd(a, c));
        u[4 * g + 2] = _mm256_castpd_ps(_mm256_unpacklo_pd(b, d));
        u[4 * g + 3] = _mm256_castpd_ps(_mm256_unpackhi_pd(b, d));
    }
    for (int c = 0; c < 4; ++c) {
        r[c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20);
        r[4 + c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31);
    }
}

/* A step's six values of a transposed 8 x 8 block: stored as 4 + 2. */
TARGET static inline void store_6_f32(float *dst, __m256 v)
{
    _mm_storeu_ps(dst, _mm256_castps256_ps128(v));
    _mm_storel_pi((__m64 *)(dst + 4), _mm256_extractf128_ps(v, 1));
}

/* A's 6-row micro-panels (x in the forward pass, dy for dx): eight steps
 * of the six rows (plus two zero rows) transposed as an 8 x 8 block.
 * Values are only moved: the panel is bitwise what the portable loop
 * packs. */
#define PACK_A_ROWS pack_a_rows_avx2_f32
#define AVEC __m256
#define A_WIDTH 8
#define A_LOAD(p) _mm256_loadu_ps(p)
#define A_ZERO() _mm256_setzero_ps()
#define A_STORE(p, v) store_6_f32(p, v)
#define A_TRANSPOSE(r) transpose_8x8_f32(r)

#include "simd_ukernel.h"
#include "simd_pack.h"

/* Edge tiles of 1-2 and 3-4 rows (M = 32, 64, ... leave 2 or 4): a
 * narrower instance of the same kernel, reading the 6-row panels, about
 * two thirds of a whole tile's time instead of all of it. */
#undef TINY
#undef MR
#undef UKERNEL
#define A_STEP 6
#define MR 2
#define UKERNEL ukernel_avx2_f32_r2
#include "simd_ukernel.h"
#undef MR
#undef UKERNEL
#define MR 4
#define UKERNEL ukernel_avx2_f32_r4
#include "simd_ukernel.h"
#undef MR
#undef UKERNEL
#undef A_STEP
#define MR 6
#define UKERNEL ukernel_avx2_f32
#define TINY tiny_avx2_f32

TARGET static void ukernel_rows_avx2_f32(int64_t rows, int64_t kc, const REAL *a, const REAL *b, int64_t b_rs,
                                        REAL *c, int64_t ldc, const REAL *bias, int accumulate)
{
    if (rows <= 2)
        ukernel_avx2_f32_r2(kc, a, b, b_rs, c, ldc, bias, accumulate);
    else if (rows <= 4)
        ukernel_avx2_f32_r4(kc, a, b, b_rs, c, ldc, bias, accumulate);
    else
        ukernel_avx2_f32(kc, a, b, b_rs, c, ldc, bias, accumulate);
}

/* A ragged last column panel of at most VL columns (a classifier's 10
 * outputs): one vector a row, half a whole tile's FMAs.  Each element is
 * the same chain from +0 over p as in the wide kernel: the same bits. */
#undef TINY
#undef NV
#undef UKERNEL
#define NV 1
#define UKERNEL ukernel_narrow_avx2_f32
#include "simd_ukernel.h"
#undef NV
#undef UKERNEL
#define NV 2
#define UKERNEL ukernel_avx2_f32
#define TINY tiny_avx2_f32

#undef V_TRANSPOSE
#undef PACK_B_COLS
#undef TINY
#undef FMA1
#undef REAL
#undef VEC
#undef VL
#undef UKERNEL
#undef V_ZERO
#undef V_LOAD
#undef V_STORE
#undef V_BCAST
#undef V_FMA
#undef V_ADD

#define REAL double
#define VEC __m256d
#define VL 4
#define UKERNEL ukernel_avx2_f64
#define V_ZERO() _mm256_setzero_pd()
#define V_LOAD(p) _mm256_loadu_pd(p)
#define V_STORE(p, v) _mm256_storeu_pd(p, v)
#define V_BCAST(x) _mm256_set1_pd(x)
#define V_FMA(a, b, c) _mm256_fmadd_pd(a, b, c)
#define V_ADD(a, b) _mm256_add_pd(a, b)
#define V_TRANSPOSE(r) transpose_4x4_f64(r)
#define PACK_B_COLS pack_b_cols_avx2_f64
#define TINY tiny_avx2_f64
#define FMA1(x, y, z) __builtin_fma(x, y, z)

TARGET static inline void transpose_4x4_f64(__m256d r[4])
{
    const __m256d t0 = _mm256_unpacklo_pd(r[0], r[1]), t1 = _mm256_unpackhi_pd(r[0], r[1]);
    const __m256d t2 = _mm256_unpacklo_pd(r[2], r[3]), t3 = _mm256_unpackhi_pd(r[2], r[3]);
    r[0] = _mm256_permute2f128_pd(t0, t2, 0x20);
    r[1] = _mm256_permute2f128_pd(t1, t3, 0x20);
    r[2] = _mm256_permute2f128_pd(t0, t2, 0x31);
    r[3] = _mm256_permute2f128_pd(t1, t3, 0x31);
}

#include "simd_ukernel.h"
#include "simd_pack.h"

/* As pack_a_rows_avx2_f32: 4 steps of rows 0-3 and of rows 4-5 (with two
 * zero rows) transposed as two 4 x 4 blocks, each step stored as 4 + 2. */
TARGET static void pack_a_rows_avx2_f64(int64_t mc, int64_t kc, const double *restrict a, int64_t rsa,
                                        double *restrict ap)
{
    for (int64_t ir = 0; ir < mc; ir += MR, ap += MR * kc) {
        const int64_t rows = mc - ir < MR ? mc - ir : MR;
        const double *panel = a + ir * rsa;
        int64_t p = 0;
        if (rows == MR) {
            for (; p + 4 <= kc; p += 4) {
                __m256d lo[4], hi[4];
#pragma GCC unroll 4
                for (int q = 0; q < 4; ++q)
                    lo[q] = _mm256_loadu_pd(panel + q * rsa + p);
                hi[0] = _mm256_loadu_pd(panel + 4 * rsa + p);
                hi[1] = _mm256_loadu_pd(panel + 5 * rsa + p);
                hi[2] = hi[3] = _mm256_setzero_pd();
                transpose_4x4_f64(lo);
                transpose_4x4_f64(hi);
#pragma GCC unroll 4
                for (int q = 0; q < 4; ++q) {
                    double *dst = ap + (p + q) * MR;
                    _mm256_storeu_pd(dst, lo[q]);
                    _mm_storeu_pd(dst + 4, _mm256_castpd256_pd128(hi[q]));
                }
            }
        }
        for (; p < kc; ++p) {
            double *dst = ap + p * MR;
            for (int64_t i = 0; i < rows; ++i)
                dst[i] = panel[i * rsa + p];
            for (int64_t i = rows; i < MR; ++i)
                dst[i] = 0;
        }
    }
}


/* Edge tiles of 1-2 and 3-4 rows (M = 32, 64, ... leave 2 or 4): a
 * narrower instance of the same kernel, reading the 6-row panels, about
 * two thirds of a whole tile's time instead of all of it. */
#undef TINY
#undef MR
#undef UKERNEL
#define A_STEP 6
#define MR 2
#define UKERNEL ukernel_avx2_f64_r2
#include "simd_ukernel.h"
#undef MR
#undef UKERNEL
#define MR 4
#define UKERNEL ukernel_avx2_f64_r4
#include "simd_ukernel.h"
#undef MR
#undef UKERNEL
#undef A_STEP
#define MR 6
#define UKERNEL ukernel_avx2_f64
#define TINY tiny_avx2_f64

TARGET static void ukernel_rows_avx2_f64(int64_t rows, int64_t kc, const REAL *a, const REAL *b, int64_t b_rs,
                                        REAL *c, int64_t ldc, const REAL *bias, int accumulate)
{
    if (rows <= 2)
        ukernel_avx2_f64_r2(kc, a, b, b_rs, c, ldc, bias, accumulate);
    else if (rows <= 4)
        ukernel_avx2_f64_r4(kc, a, b, b_rs, c, ldc, bias, accumulate);
    else
        ukernel_avx2_f64(kc, a, b, b_rs, c, ldc, bias, accumulate);
}

/* A ragged last column panel of at most VL columns (a classifier's 10
 * outputs): one vector a row, half a whole tile's FMAs.  Each element is
 * the same chain from +0 over p as in the wide kernel: the same bits. */
#undef TINY
#undef NV
#undef UKERNEL
#define NV 1
#define UKERNEL ukernel_narrow_avx2_f64
#include "simd_ukernel.h"
#undef NV
#undef UKERNEL
#define NV 2
#define UKERNEL ukernel_avx2_f64
#define TINY tiny_avx2_f64

/* kc: a 256 x 16 float B micro-panel is 16 KiB of the 48 KiB L1;
 * mc: a 144 x 256 block of A is 144 KiB (float) of the 1 MiB L2;
 * float32 then went to kc = 384 (OpenBLAS's Haswell depth), mc = 96 (a
 * 144 KiB block of A): C's tile is reloaded once per 384 steps instead of
 * 256.  On a Zen 3 (32 KiB L1, 512 KiB L2) that took the forward pass at
 * 1024 x 4096 x 4096 from 90.9-91.2 to 92.4-92.8 GFLOP/s (numpy's 94-95)
 * in two in-process A/B runs; 64 x 512 x 512 to 256 x 2048 x 2048 and the
 * backward pass moved by under 1%, either way.  Splitting K into equal
 * blocks (376 x 10 + 336) was no better.  The AVX-512 plans keep kc = 256,
 * so above 256 the two ISAs round differently (within the same bound);
 * thread counts still give the same bits, as k is never split.
 * nc: a 256 x 4096 float block of B is 4 MiB of L3 (was 4080, which split
 * N = 4096 into 4080 + a 16-column sliver that repacked all of A).
 * Packing W^T panel by panel took float32 from 0.95 to 1.05 of OpenBLAS's
 * Haswell kernel at 128 x 1024 x 1024 on a Xeon, and float64 from 0.96 to
 * 0.92 (its 8-column panels): float32 only.  Capping B at the Xeon's L2
 * cost 3-8% at 1024 x 4096 x 4096: the AVX2 kernels, at half the
 * AVX-512 rate, are not starved by its L3.  On an AMD Zen 3 (512 KiB L2)
 * a 1 MiB block (twice L2) was 3-6% faster there (cpu_cache.c); with
 * float32's kc = 384, a 3 MiB block (six times L2) is (cpu_cache.c). */
const cx_plan_f32 cx_plan_avx2_f32 = {MR, NV * 8, 384, 96, 4096, ukernel_avx2_f32, pack_b_cols_avx2_f32, pack_a_rows_avx2_f32,
                                     tiny_avx2_f32, ukernel_rows_avx2_f32, ukernel_narrow_avx2_f32, 1, CX_B_BLOCK_SIX_L2_ON_AMD, NULL, 0};
const cx_plan_f64 cx_plan_avx2_f64 = {MR, NV * 4, 256, 96, 2048, ukernel_avx2_f64, pack_b_cols_avx2_f64, pack_a_rows_avx2_f64,
                                     tiny_avx2_f64, ukernel_rows_avx2_f64, ukernel_narrow_avx2_f64, 0, CX_B_BLOCK_TWICE_L2_ON_AMD, NULL, 0};

#endif
