/*
 * softmax.c -- softmax, log_softmax and nll_loss over rows, the kernels of
 * a classifier's loss (cross_entropy is log_softmax then nll_loss, as in
 * torch).  numpy spends five or six passes and as many temporaries on each;
 * these take one call and no scratch memory.
 * Instantiates generic/softmax.c once per dtype (TH's generic/ pattern).
 *
 * float32 rows accumulate their sums in double: the result is the float32
 * rounding of a sum at least as accurate as torch's vectorised float sum.
 * exp is vector_math.h's (within 2 ulp; vectorised, where libm's is a
 * scalar call of ~6 ns), log (once a row) libm's: both give the same bits
 * on every x86-64, whatever its vector instructions, so results never
 * depend on the CPU.
 */
#include <math.h>

#include "nn_internal.h"

/* vector_math.h's clamps are selects: vectorised only where operations do not trap (no
 * value changes).  Every function from here on is compiled so. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

#include "vector_math.h"

#define REAL float
#define ACC double
#define SFX f32
#define CX_EXP cx_exp_f32
#define CX_LOG logf
#include "generic/softmax.c"
#undef REAL
#undef ACC
#undef SFX
#undef CX_EXP
#undef CX_LOG

#define REAL double
#define ACC double
#define SFX f64
#define CX_EXP cx_exp_f64
#define CX_LOG log
#include "generic/softmax.c"
#undef REAL
#undef ACC
#undef SFX
#undef CX_EXP
#undef CX_LOG
