/* pool2d.c -- instantiates generic/pool2d.c once per dtype (TH's generic/ pattern). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"

/* max pooling's selects are vectorised only where operations do not trap
 * (no value changes).  Every function from here on is compiled so. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

#define REAL float
#define SFX f32
#include "generic/pool2d.c"
#undef REAL
#undef SFX

#define REAL double
#define SFX f64
#include "generic/pool2d.c"
#undef REAL
#undef SFX
