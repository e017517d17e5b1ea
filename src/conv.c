/* conv.c -- instantiates generic/conv.c once per dtype (TH's generic/ pattern). */
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"

/* CX_CONV_SMALL: this dtype has kernels/conv_small.c's small-plane patches. */
#define REAL float
#define SFX f32
#if defined(CX_HAVE_X86_KERNELS)
#define CX_CONV_SMALL 1
#else
#define CX_CONV_SMALL 0
#endif
#include "generic/conv.c"
#undef REAL
#undef SFX
#undef CX_CONV_SMALL

#define REAL double
#define SFX f64
#define CX_CONV_SMALL 0
#include "generic/conv.c"
#undef REAL
#undef SFX
#undef CX_CONV_SMALL
