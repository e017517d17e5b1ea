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
#include "simd_ukernel.h"
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
#include "simd_ukernel.h"

/* kc: a 256 x 16 float B micro-panel is 16 KiB of the 48 KiB L1;
 * mc: a 144 x 256 block of A is 144 KiB (float) of the 1 MiB L2. */
const cx_plan_f32 cx_plan_avx2_f32 = {MR, NV * 8, 256, 144, 4080, ukernel_avx2_f32};
const cx_plan_f64 cx_plan_avx2_f64 = {MR, NV * 4, 256, 96, 2040, ukernel_avx2_f64};

#endif
