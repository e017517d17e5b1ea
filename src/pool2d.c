/* pool2d.c -- instantiates generic/pool2d.c once per dtype (TH's generic/ pattern). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"

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
