/*
 * avx512.c -- AVX-512F microkernels: 8 x 32 (float32), 6 x 32 (float64)
 * and 8 x 16 (float64 products of few rows).  8 x 32 keeps 16 of the 32
 * zmm registers as accumulators, enough independent chains to cover FMA
 * latency on two 512-bit pipes, in a tile that divides the power-of-two
 * batch sizes Linear layers see (a 12-row tile wasted up to 12% on them);
 * float64's 6 x 32 is explained where it is built.  Compiled with a
 * target attribute and only run where the CPU reports AVX-512F.
 */
#include "../internal.h"

#if defined(CX_HAVE_X86_KERNELS)
#include <immintrin.h>

#define TARGET __attribute__((target("avx512f")))
#define MR 8
#define NV 2

#define REAL float
#define VEC __m512
#define VL 16
#define UKERNEL ukernel_avx512_f32
#define V_ZERO() _mm512_setzero_ps()
#define V_LOAD(p) _mm512_loadu_ps(p)
#define V_STORE(p, v) _mm512_storeu_ps(p, v)
#define V_BCAST(x) _mm512_set1_ps(x)
#define V_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define V_ADD(a, b) _mm512_add_ps(a, b)
#define V_TRANSPOSE(r) transpose_16x16_f32(r)
#define PACK_B_COLS pack_b_cols_avx512_f32

/* Lanes of four 128-bit quarters across (x0, x4, x8, x12): out[4L + c]
 * gathers quarter L of u[c], u[4 + c], u[8 + c], u[12 + c] (see below). */
TARGET static inline void transpose_16x16_f32(__m512 r[16])
{
    __m512 t[16], u[16];
    /* t[2k], t[2k+1]: rows 2k and 2k+1 interleaved within each quarter. */
    for (int k = 0; k < 8; ++k) {
        t[2 * k] = _mm512_unpacklo_ps(r[2 * k], r[2 * k + 1]);
        t[2 * k + 1] = _mm512_unpackhi_ps(r[2 * k], r[2 * k + 1]);
    }
    /* u[4g + c], quarter L: column 4L + c of rows 4g .. 4g + 3. */
    for (int g = 0; g < 4; ++g) {
        const __m512d a = _mm512_castps_pd(t[4 * g]), b = _mm512_castps_pd(t[4 * g + 1]);
        const __m512d c = _mm512_castps_pd(t[4 * g + 2]), d = _mm512_castps_pd(t[4 * g + 3]);
        u[4 * g + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        u[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        u[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
        u[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    /* Column 4L + c: quarter L of u[c], u[4 + c], u[8 + c], u[12 + c]. */
    for (int c = 0; c < 4; ++c) {
        const __m512 x0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x44);
        const __m512 x1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xee);
        const __m512 x2 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x44);
        const __m512 x3 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xee);
        r[c] = _mm512_shuffle_f32x4(x0, x2, 0x88);
        r[4 + c] = _mm512_shuffle_f32x4(x0, x2, 0xdd);
        r[8 + c] = _mm512_shuffle_f32x4(x1, x3, 0x88);
        r[12 + c] = _mm512_shuffle_f32x4(x1, x3, 0xdd);
    }
}

/* Eight rows of eight: the A side's micro-panels are MR = 8 floats wide. */
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
#define TINY tiny_avx512_f32
#define FMA1(x, y, z) __builtin_fmaf(x, y, z)
#define PACK_A_ROWS pack_a_rows_avx512_f32
#define AVEC __m256
#define A_LOAD(p) _mm256_loadu_ps(p)
#define A_STORE(p, v) _mm256_storeu_ps(p, v)
#define A_TRANSPOSE(r) transpose_8x8_f32(r)

#include "simd_ukernel.h"
#include "simd_pack.h"

/* A ragged last column panel of at most VL columns (a classifier's 10
 * outputs): one vector a row, half a whole tile's FMAs.  Each element is
 * the same chain from +0 over p as in the wide kernel: the same bits. */
#undef TINY
#undef NV
#undef UKERNEL
#define NV 1
#define UKERNEL ukernel_narrow_avx512_f32
#include "simd_ukernel.h"
#undef NV
#undef UKERNEL
#define NV 2
#define UKERNEL ukernel_avx512_f32
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
#define VEC __m512d
#define VL 8
#define V_ZERO() _mm512_setzero_pd()
#define V_LOAD(p) _mm512_loadu_pd(p)
#define V_STORE(p, v) _mm512_storeu_pd(p, v)
#define V_BCAST(x) _mm512_set1_pd(x)
#define V_FMA(a, b, c) _mm512_fmadd_pd(a, b, c)
#define V_ADD(a, b) _mm512_add_pd(a, b)
#define V_TRANSPOSE(r) transpose_8x8_f64(r)

/* The same scheme with pairs: t[2g + c], quarter L, holds column 2L + c of
 * rows 2g and 2g + 1; then the 4 x 4 transpose of quarters. */
TARGET static inline void transpose_8x8_f64(__m512d r[8])
{
    __m512d t[8];
    for (int k = 0; k < 4; ++k) {
        t[2 * k] = _mm512_unpacklo_pd(r[2 * k], r[2 * k + 1]);
        t[2 * k + 1] = _mm512_unpackhi_pd(r[2 * k], r[2 * k + 1]);
    }
    for (int c = 0; c < 2; ++c) {
        const __m512d x0 = _mm512_shuffle_f64x2(t[c], t[2 + c], 0x44);
        const __m512d x1 = _mm512_shuffle_f64x2(t[c], t[2 + c], 0xee);
        const __m512d x2 = _mm512_shuffle_f64x2(t[4 + c], t[6 + c], 0x44);
        const __m512d x3 = _mm512_shuffle_f64x2(t[4 + c], t[6 + c], 0xee);
        r[c] = _mm512_shuffle_f64x2(x0, x2, 0x88);
        r[2 + c] = _mm512_shuffle_f64x2(x0, x2, 0xdd);
        r[4 + c] = _mm512_shuffle_f64x2(x1, x3, 0x88);
        r[6 + c] = _mm512_shuffle_f64x2(x1, x3, 0xdd);
    }
}

/* float64 runs two tiles.  Products of 48 rows or more use 6 x 32 (24
 * accumulators): the broadcast side streams from L2 one value per row and
 * step, 4 bytes per FMA for an 8 x 16 tile, which starved it on a Xeon
 * (80-92 GFLOP/s of a measured 108-115 peak in isolation); 6 x 32 halves
 * that and ran at 93-105.  With fewer rows the 8 x 16 tile was faster
 * (forward at 8 x 64 x 64 and 32 x 128 x 128 by 10-20%): packing and
 * B traffic dominate there, and 8 divides a small batch where 6 leaves an
 * edge.  Both have kc = 256: the same sums, the same bits. */

/* The few-rows tile, 8 x 16, with the A side packed as 8 x 8 transposes. */
#define UKERNEL ukernel_avx512_f64_8x16
#define PACK_B_COLS pack_b_cols_avx512_f64_16
#define TINY tiny_avx512_f64
#define FMA1(x, y, z) __builtin_fma(x, y, z)
#define PACK_A_ROWS pack_a_rows_avx512_f64_8
#define AVEC __m512d
#define A_LOAD(p) _mm512_loadu_pd(p)
#define A_STORE(p, v) _mm512_storeu_pd(p, v)
#define A_TRANSPOSE(r) transpose_8x8_f64(r)

#include "simd_ukernel.h"
#include "simd_pack.h"

#undef TINY
#undef NV
#undef UKERNEL
#define NV 1
#define UKERNEL ukernel_narrow_avx512_f64_8x8
#include "simd_ukernel.h"

/* The wide tile, 6 x 32: its own panels of B (32 columns) and of A (6 rows). */
#undef MR
#undef NV
#undef UKERNEL
#undef PACK_B_COLS
#define MR 6
#define NV 4
#define UKERNEL ukernel_avx512_f64
#define PACK_B_COLS pack_b_cols_avx512_f64
/* A's panels: eight steps of six rows (two zero rows added) transposed as
 * an 8 x 8 block, each step's six values stored under a mask. */
#define PACK_A_ROWS pack_a_rows_avx512_f64
#define AVEC __m512d
#define A_WIDTH 8
#define A_LOAD(p) _mm512_loadu_pd(p)
#define A_ZERO() _mm512_setzero_pd()
#define A_STORE(p, v) _mm512_mask_storeu_pd(p, (__mmask8)0x3f, v)
#define A_TRANSPOSE(r) transpose_8x8_f64(r)

#include "simd_ukernel.h"
#include "simd_pack.h"

/* Edge tiles of 1-2 and 3-4 rows (M = 64, 128, ... leave 4 or 2): a
 * narrower instance of the same kernel reading the 6-row panels. */
#undef MR
#undef UKERNEL
#define A_STEP 6
#define MR 2
#define UKERNEL ukernel_avx512_f64_r2
#include "simd_ukernel.h"
#undef MR
#undef UKERNEL
#define MR 4
#define UKERNEL ukernel_avx512_f64_r4
#include "simd_ukernel.h"
#undef MR
#undef UKERNEL
#undef A_STEP
#define MR 6
#define UKERNEL ukernel_avx512_f64

TARGET static void ukernel_rows_avx512_f64(int64_t rows, int64_t kc, const REAL *a, const REAL *b, int64_t b_rs,
                                          REAL *c, int64_t ldc, const REAL *bias, int accumulate)
{
    if (rows <= 2)
        ukernel_avx512_f64_r2(kc, a, b, b_rs, c, ldc, bias, accumulate);
    else if (rows <= 4)
        ukernel_avx512_f64_r4(kc, a, b, b_rs, c, ldc, bias, accumulate);
    else
        ukernel_avx512_f64(kc, a, b, b_rs, c, ldc, bias, accumulate);
}

/* A ragged last column panel of at most 16 columns (a classifier's 10
 * outputs): two vectors a row, half a whole tile's FMAs.  Each element is
 * the same chain from +0 over p as in the wide kernel: the same bits. */
#undef NV
#undef UKERNEL
#define NV 2
#define UKERNEL ukernel_narrow_avx512_f64
#include "simd_ukernel.h"

/* Measured on a 48 KiB-L1 / 1 MiB-L2 core (Zen 5): kc = 256 (a 32 KiB B
 * micro-panel in L1) beat 192 and 320.  On a 32 KiB-L1 / 1 MiB-L2 Zen 4,
 * kc from 256 to 512 and mc from 128 to 512 were within the noise of a
 * shared machine for forward and backward, with mc = 384 (a 384 KiB float
 * block of A in L2) ahead by 2-4% for the forward pass (bench/ and thread
 * CPU time, best of repeats). */
/* On a Xeon (2 MiB L2, a slow mesh L3), packing W^T panel by panel and a
 * B block within L2 (see cpu_cache.c) took the float32 forward pass, as a
 * ratio to OpenBLAS's SkylakeX kernel, from 1.12 to 1.22-1.25 at
 * 128 x 1024 x 1024, 0.98-1.00 to 1.10-1.11 at 256 x 2048 x 2048 and
 * 0.85-0.95 to 0.95-0.98 at 1024 x 4096 x 4096; float64 from 0.92 to
 * 1.02-1.05 at 128 x 1024 x 1024, within the noise at the larger two.
 * float64's 6 x 32 tile (mc = 240: 168-264 were within 3% of each other
 * and ahead of 96-120) then took 1024 x 4096 x 4096 from 77 to 85-88
 * GFLOP/s forward and from 72 to 88-89 for dW = dy^T x (C harness, thread
 * CPU time, interleaved medians). */
const cx_plan_f32 cx_plan_avx512_f32 = {8, 2 * 16, 256, 384, 4096, ukernel_avx512_f32, pack_b_cols_avx512_f32,
                                       pack_a_rows_avx512_f32, tiny_avx512_f32, NULL,
                                       ukernel_narrow_avx512_f32, 1, CX_B_BLOCK_L2_ON_INTEL, NULL, 0};
static const cx_plan_f64 plan_avx512_f64_8x16 = {8, 2 * 8, 256, 128, 2048, ukernel_avx512_f64_8x16,
                                                 pack_b_cols_avx512_f64_16, pack_a_rows_avx512_f64_8,
                                                 tiny_avx512_f64, NULL, ukernel_narrow_avx512_f64_8x8, 1, CX_B_BLOCK_L2_ON_INTEL,
                                                 NULL, 0};
const cx_plan_f64 cx_plan_avx512_f64 = {6, 4 * 8, 256, 240, 2048, ukernel_avx512_f64, pack_b_cols_avx512_f64,
                                       pack_a_rows_avx512_f64, tiny_avx512_f64, ukernel_rows_avx512_f64,
                                       ukernel_narrow_avx512_f64, 1, CX_B_BLOCK_L2_ON_INTEL, &plan_avx512_f64_8x16, 48};

#endif
