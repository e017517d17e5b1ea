/*
 * training.c -- the small kernels of a training step that numpy spends
 * several passes on: relu and its backward, and the optimizer updates
 * (SGD, Adam and AdamW).
 * Instantiates generic/training.c once per dtype (TH's generic/ pattern).
 *
 * The updates use fused multiply-adds exactly where torch's CPU kernels do
 * (add(a, b, alpha) is fma(alpha, b, a): one rounding), so an update is
 * torch's to the bit in both dtypes.  fma() is correctly rounded whether
 * the CPU has the instruction or libm emulates it, so the result never
 * depends on the CPU; only the speed does.  The loops are compiled twice,
 * for plain x86-64 and for FMA-capable CPUs, and picked at run time.
 */
#include <math.h>

#include "internal.h"

#if defined(__x86_64__) || defined(__i386__)
#define CX_FMA_CLONES 1
static int cx_cpu_has_fma(void)
{
    static int has = -1;        /* a benign race: every thread computes the same answer */
    if (has < 0) {
        __builtin_cpu_init();
        has = __builtin_cpu_supports("fma") ? 1 : 0;
    }
    return has;
}
#define CX_TARGET_FMA __attribute__((target("fma")))
#else
#define CX_FMA_CLONES 0
#endif

/*
 * The multiply-adds the op-by-op optimizer steps (cextend/optim/_inplace.py)
 * compute unfused: lerp and addcmul.  float32 computes them in double (the
 * float32 product is exact there) and rounds once; float64 rounds the
 * product, then the sum.  The build is ISO C (-std=c11), so the compiler
 * never contracts these into fused multiply-adds.
 */
static inline float cx_lerp_f32(float a, float end, float w)
{
    const float difference = end - a;
    if (fabsf(w) < 0.5f)
        return (float)((double)a + (double)w * (double)difference);
    return (float)((double)end - (double)difference * (double)(1.0f - w));
}

static inline double cx_lerp_f64(double a, double end, double w)
{
    const double difference = end - a;
    if (fabs(w) < 0.5)
        return a + w * difference;
    return end - difference * (1.0 - w);
}

/* torch's lerp takes one of two formulas by the weight; a step's weight is the same for every
 * element, so the Adam loop picks the formula once (CX_LERP_STARTS_FROM_A) and uses one of: */
#define CX_LERP_STARTS_FROM_A(w) (fabs((double)(w)) < 0.5)
static inline float cx_lerp_from_start_f32(float a, float end, float w)
{
    return (float)((double)a + (double)w * (double)(end - a));
}

static inline float cx_lerp_from_end_f32(float a, float end, float w)
{
    return (float)((double)end - (double)(end - a) * (double)(1.0f - w));
}

static inline double cx_lerp_from_start_f64(double a, double end, double w) { return a + w * (end - a); }
static inline double cx_lerp_from_end_f64(double a, double end, double w) { return end - (end - a) * (1.0 - w); }

#define REAL float
#define SFX f32
#define CX_FMA fmaf
#define CX_SQRT sqrtf
#define CX_LERP cx_lerp_f32
#define CX_LERP_FROM_START cx_lerp_from_start_f32
#define CX_LERP_FROM_END cx_lerp_from_end_f32
#define CX_ADDCMUL(a, product, t) ((float)((double)(a) + (double)(product) * (double)(t)))
#include "generic/training.c"
#undef REAL
#undef SFX
#undef CX_FMA
#undef CX_SQRT
#undef CX_LERP
#undef CX_LERP_FROM_START
#undef CX_LERP_FROM_END
#undef CX_ADDCMUL

#define REAL double
#define SFX f64
#define CX_FMA fma
#define CX_SQRT sqrt
#define CX_LERP cx_lerp_f64
#define CX_LERP_FROM_START cx_lerp_from_start_f64
#define CX_LERP_FROM_END cx_lerp_from_end_f64
#define CX_ADDCMUL(a, product, t) ((a) + (product) * (t))
#include "generic/training.c"
#undef REAL
#undef SFX
#undef CX_FMA
#undef CX_SQRT
#undef CX_LERP
#undef CX_LERP_FROM_START
#undef CX_LERP_FROM_END
#undef CX_ADDCMUL
