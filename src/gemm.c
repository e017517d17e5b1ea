/* gemm.c -- instantiates the reference and the fast GEMM once per dtype. */
#include <stdlib.h>

#include "internal.h"

#define REAL float
#define SFX f32
#include "generic/gemm_reference.c"
#include "generic/gemm.c"
#undef REAL
#undef SFX

#define REAL double
#define SFX f64
#include "generic/gemm_reference.c"
#include "generic/gemm.c"
#undef REAL
#undef SFX
