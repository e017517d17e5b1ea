/*
 * isa.c -- which microkernel runs: detected at first use, or forced.
 *
 * The choice is made at run time from CPUID (through the compiler's
 * __builtin_cpu_supports, which also checks that the OS saves the wide
 * registers), so one build runs on any x86-64 and, with the generic
 * kernels only, on any other architecture.  Valgrind hides AVX-512 from
 * CPUID, so under it the automatic choice falls back to AVX2 or generic.
 */
#include <stdatomic.h>

#include "internal.h"

#define ISA_UNSET (-2)

static _Atomic int current_isa = ISA_UNSET;

int cextend_isa_supported(int isa)
{
    switch (isa) {
    case CEXTEND_ISA_REFERENCE:
    case CEXTEND_ISA_GENERIC:
        return 1;
#if defined(CX_HAVE_X86_KERNELS)
    case CEXTEND_ISA_AVX2:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case CEXTEND_ISA_AVX512:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f");
#endif
    default:
        return 0;
    }
}

static int best_isa(void)
{
    if (cextend_isa_supported(CEXTEND_ISA_AVX512))
        return CEXTEND_ISA_AVX512;
    if (cextend_isa_supported(CEXTEND_ISA_AVX2))
        return CEXTEND_ISA_AVX2;
    return CEXTEND_ISA_GENERIC;
}

int cextend_set_isa(int isa)
{
    static const char fn[] = "cextend_set_isa";
    if (isa == CEXTEND_ISA_AUTO) {
        atomic_store(&current_isa, best_isa());
        return CEXTEND_OK;
    }
    if (isa < CEXTEND_ISA_REFERENCE || isa > CEXTEND_ISA_AVX512)
        return cx_illegal(fn, 1, "isa", "must be -1 (auto) or 0..3, got %d", isa);
    if (!cextend_isa_supported(isa))
        return cx_illegal(fn, 1, "isa", "instruction set %d is not supported by this CPU or build", isa);
    atomic_store(&current_isa, isa);
    return CEXTEND_OK;
}

int cx_isa_current(void)
{
    int isa = atomic_load(&current_isa);
    if (isa == ISA_UNSET) {
        int expected = ISA_UNSET;
        atomic_compare_exchange_strong(&current_isa, &expected, best_isa());
        isa = atomic_load(&current_isa);
    }
    return isa;
}

int cextend_get_isa(void)
{
    return cx_isa_current();
}
