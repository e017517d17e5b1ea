/*
 * cpu_cache.c -- the one cache fact the GEMM blocks by at run time: how
 * large a packed block of B may be.
 *
 * The plans' nc (avx512.c, avx2.c) lets the packed kc x nc block of B
 * outgrow L2 and live in L3, as BLIS does; on the AMD cores they were
 * tuned on, a core streams L3 fast enough for that.  On an Intel Xeon
 * (Sapphire Rapids class, 2 MiB L2) the AVX-512 kernels outran its mesh
 * L3: every first tile of a micro-panel waited for B.  With the block
 * capped at L2's size, a 1024 x 4096 x 4096 float product ran 10-17%
 * faster (forward, dx and dw; thread CPU time, interleaved medians).  So
 * on Intel CPUs the cap is L2's size, for the plans that ask for it
 * (b_block_in_l2); elsewhere there is none.  nc only splits the columns
 * into blocks: no element's arithmetic changes, so results are the same
 * bits whatever the cap.
 */
#include <stdatomic.h>

#include "internal.h"

#if defined(CX_HAVE_X86_KERNELS)
#include <cpuid.h>

/* L2's size from CPUID leaf 4 (deterministic cache parameters), 0 when the
 * CPU does not report it. */
static int64_t intel_l2_bytes(void)
{
    unsigned int eax, ebx, ecx, edx;
    if (__get_cpuid_max(0, NULL) < 4)
        return 0;
    for (unsigned int index = 0; index < 16; ++index) {
        __cpuid_count(4, index, eax, ebx, ecx, edx);
        const unsigned int type = eax & 0x1f, level = (eax >> 5) & 0x7;
        if (type == 0)
            break;                              /* no more caches */
        if (level == 2 && (type == 1 || type == 3)) {   /* data or unified */
            const int64_t ways = ((ebx >> 22) & 0x3ff) + 1, partitions = ((ebx >> 12) & 0x3ff) + 1;
            const int64_t line = (ebx & 0xfff) + 1, sets = (int64_t)ecx + 1;
            return ways * partitions * line * sets;
        }
    }
    return 0;
}
#endif

static int64_t measure_cap(void)
{
#if defined(CX_HAVE_X86_KERNELS)
    __builtin_cpu_init();
    if (__builtin_cpu_is("intel"))
        return intel_l2_bytes();
#endif
    return 0;
}

int64_t cx_b_block_cap_bytes(void)
{
    static _Atomic int64_t cap = -1;            /* -1: not yet measured */
    int64_t bytes = atomic_load_explicit(&cap, memory_order_relaxed);
    if (bytes < 0) {
        bytes = measure_cap();
        atomic_store_explicit(&cap, bytes, memory_order_relaxed);
    }
    return bytes;
}
