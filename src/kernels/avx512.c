/*
 * avx512.c -- AVX-512F microkernels: 8 x 32 (float32) and 8 x 16 (float64),
 * 16 accumulators of the 32 zmm registers: enough independent chains to
 * cover FMA latency on two 512-bit pipes, and a tile that divides the
 * power-of-two batch sizes Linear layers see (a 12-row tile wasted up to
 * 12% on them).  Compiled with a target attribute and only run where the
 * CPU reports AVX-512F.
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
#define VEC __m512d
#define VL 8
#define UKERNEL ukernel_avx512_f64
#define V_ZERO() _mm512_setzero_pd()
#define V_LOAD(p) _mm512_loadu_pd(p)
#define V_STORE(p, v) _mm512_storeu_pd(p, v)
#define V_BCAST(x) _mm512_set1_pd(x)
#define V_FMA(a, b, c) _mm512_fmadd_pd(a, b, c)
#define V_ADD(a, b) _mm512_add_pd(a, b)
#include "simd_ukernel.h"

/* Measured on a 48 KiB-L1 / 1 MiB-L2 core (bench/): kc = 256 (a 32 KiB B
 * micro-panel in L1) beat 192 and 320; mc: a 256 x 256 float block of A
 * is 256 KiB of L2. */
const cx_plan_f32 cx_plan_avx512_f32 = {MR, NV * 16, 256, 256, 4096, ukernel_avx512_f32};
const cx_plan_f64 cx_plan_avx512_f64 = {MR, NV * 8, 256, 128, 2048, ukernel_avx512_f64};

#endif
