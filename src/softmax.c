/*
 * softmax.c -- softmax, log_softmax and nll_loss over rows, the kernels of
 * a classifier's loss (cross_entropy is log_softmax then nll_loss, as in
 * torch).  numpy spends five or six passes and as many temporaries on each;
 * these take one call and no scratch memory.
 * Instantiates generic/softmax.c once per dtype (TH's generic/ pattern).
 *
 * float32 rows accumulate their sums in double: the result is the float32
 * rounding of a sum at least as accurate as torch's vectorised float sum.
 * libm's exp and log give the same bits on every x86-64, whatever its
 * vector instructions, so results never depend on the CPU.
 */
#include <math.h>

#include "nn_internal.h"

#define REAL float
#define ACC double
#define SFX f32
#define CX_EXP expf
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
#define CX_EXP exp
#define CX_LOG log
#include "generic/softmax.c"
#undef REAL
#undef ACC
#undef SFX
#undef CX_EXP
#undef CX_LOG
