/* pool.c -- instantiates generic/pool.c once per dtype (TH's generic/ pattern). */
#include "internal.h"

#define REAL float
#define SFX f32
#include "generic/pool.c"
#undef REAL
#undef SFX

#define REAL double
#define SFX f64
#include "generic/pool.c"
#undef REAL
#undef SFX
