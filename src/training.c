/*
 * training.c -- the small kernels of a training step that numpy spends
 * several passes on: relu and its backward, and the optimizer updates.
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

#define REAL float
#define SFX f32
#define CX_FMA fmaf
#include "generic/training.c"
#undef REAL
#undef SFX
#undef CX_FMA

#define REAL double
#define SFX f64
#define CX_FMA fma
#include "generic/training.c"
#undef REAL
#undef SFX
#undef CX_FMA
