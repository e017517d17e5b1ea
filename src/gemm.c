/* gemm.c -- instantiates the reference and the fast GEMM once per dtype,
 * and reports each plan's blocking. */
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

/* Both entry points: fn names the caller and blocks_arg its position. */
static int gemm_blocking(const char *fn, int isa, int element_size, int64_t rows, int64_t *blocks,
                         int blocks_arg)
{
    const cx_plan_f32 *p32 = NULL;
    const cx_plan_f64 *p64 = NULL;
    switch (isa) {
    case CEXTEND_ISA_GENERIC:
        p32 = &cx_plan_generic_f32;
        p64 = &cx_plan_generic_f64;
        break;
#if defined(CX_HAVE_X86_KERNELS)
    case CEXTEND_ISA_AVX2:
        p32 = &cx_plan_avx2_f32;
        p64 = &cx_plan_avx2_f64;
        break;
    case CEXTEND_ISA_AVX512:
        p32 = &cx_plan_avx512_f32;
        p64 = &cx_plan_avx512_f64;
        break;
#endif
    default:     /* AUTO, unknown, or reference (simple loops, no blocks) */
        return cx_illegal(fn, 1, "isa", "has no blocked GEMM plan in this build, got %d", isa);
    }
    if (element_size != 4 && element_size != 8)
        return cx_illegal(fn, 2, "element_size", "must be 4 (float32) or 8 (float64), got %d", element_size);
    if (rows < 0)
        return cx_illegal(fn, 3, "rows", "must be >= 0, got %lld", (long long)rows);
    if (!blocks)
        return cx_illegal(fn, blocks_arg, "blocks", "is NULL");
    if (p32->few_rows && rows < p32->few_rows_below)
        p32 = p32->few_rows;
    if (p64->few_rows && rows < p64->few_rows_below)
        p64 = p64->few_rows;
    if (element_size == 4) {
        blocks[0] = p32->mr, blocks[1] = p32->nr, blocks[2] = p32->kc, blocks[3] = p32->mc, blocks[4] = cx_gemm_nc_f32(p32);
    } else {
        blocks[0] = p64->mr, blocks[1] = p64->nr, blocks[2] = p64->kc, blocks[3] = p64->mc, blocks[4] = cx_gemm_nc_f64(p64);
    }
    return CEXTEND_OK;
}

int cextend_gemm_blocking(int isa, int element_size, int64_t *blocks)
{
    return gemm_blocking("cextend_gemm_blocking", isa, element_size, INT64_MAX, blocks, 3);
}

int cextend_gemm_blocking_for_rows(int isa, int element_size, int64_t rows, int64_t *blocks)
{
    return gemm_blocking("cextend_gemm_blocking_for_rows", isa, element_size, rows, blocks, 4);
}
