/* batchnorm.c -- instantiates generic/batchnorm.c once per dtype (TH's generic/ pattern). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"

#define REAL float
#define SFX f32
#include "generic/batchnorm.c"
#undef REAL
#undef SFX

#define REAL double
#define SFX f64
#include "generic/batchnorm.c"
#undef REAL
#undef SFX
