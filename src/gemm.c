/* gemm.c -- instantiates generic/gemm.c once per dtype (TH's generic/ pattern). */
#include "internal.h"

#define REAL float
#define SFX f32
#include "generic/gemm.c"
#undef REAL
#undef SFX

#define REAL double
#define SFX f64
#include "generic/gemm.c"
#undef REAL
#undef SFX
