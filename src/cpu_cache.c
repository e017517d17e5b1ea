/*
 * cpu_cache.c -- the one cache fact the GEMM blocks by at run time: how
 * large a packed block of B may be.
 *
 * The plans' nc (avx512.c, avx2.c) lets the packed kc x nc block of B
 * outgrow L2 and live in L3, as BLIS does.  Whether a core streams it
 * from there fast enough depends on the CPU and on the kernel's rate, so
 * each plan names the rule that was measured for it (cx_b_block_rule):
 *
 * - On an Intel Xeon (Sapphire Rapids class, 2 MiB L2) the AVX-512
 *   kernels outran its mesh L3: every first tile of a micro-panel waited
 *   for B.  With the block capped at L2's size, a 1024 x 4096 x 4096 float
 *   product ran 10-17% faster (forward, dx and dw; thread CPU time,
 *   interleaved medians).  The AVX2 kernels, at half the rate, were not
 *   starved there: capping them cost 3-8%.
 * - On an AMD Zen 3 (512 KiB L2, 32 MiB L3 shared with other tenants of a
 *   virtual machine) the AVX2 kernels lost to OpenBLAS's Haswell kernel at
 *   the largest products with a 4 MiB block; capped at twice L2 (1 MiB),
 *   1024 x 4096 x 4096 ran 3-6% faster forward and 0-8% for dx, float32
 *   and float64 alike (same process, interleaved, 9-15 samples).  The
 *   AVX-512 kernels were tuned without a cap on a Zen 4 and keep none.
 *   The AVX2 float32 plan later went to kc = 384 (avx2.c), which made the
 *   same 1 MiB only 592 columns wide, so A was packed 7 times at N = 4096:
 *   six times L2 (3 MiB, 2048 columns) then ran 1024 x 4096 x 4096
 *   0.5-1.6% faster forward and 2-4% backward than twice L2, and 6 MiB
 *   (no cap) was no better than twice L2 forward (three in-process A/B
 *   runs, 7 samples each).
 *
 * nc only splits the columns into blocks: no element's arithmetic
 * changes, so results are the same bits whatever the cap.
 */
#include <pthread.h>

#include "internal.h"

#if defined(CX_HAVE_X86_KERNELS)
#include <cpuid.h>

/* L2's size on an Intel CPU, from CPUID leaf 4 (deterministic cache
 * parameters); 0 when the CPU does not report it. */
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

/* L2's size on an AMD CPU, from extended leaf 0x80000006 (ECX bits 31:16,
 * in KiB); 0 when the CPU does not report it. */
static int64_t amd_l2_bytes(void)
{
    unsigned int eax, ebx, ecx, edx;
    if (__get_cpuid_max(0x80000000u, NULL) < 0x80000006u)
        return 0;
    __cpuid(0x80000006u, eax, ebx, ecx, edx);
    return (int64_t)(ecx >> 16) * 1024;
}
#endif

/* What each rule caps the block at on this CPU; 0: no cap. */
static void measure_caps(int64_t caps[CX_B_BLOCK_RULES])
{
    for (int rule = 0; rule < CX_B_BLOCK_RULES; ++rule)
        caps[rule] = 0;
#if defined(CX_HAVE_X86_KERNELS)
    __builtin_cpu_init();
    if (__builtin_cpu_is("intel"))
        caps[CX_B_BLOCK_L2_ON_INTEL] = intel_l2_bytes();
    else if (__builtin_cpu_is("amd")) {
        caps[CX_B_BLOCK_TWICE_L2_ON_AMD] = 2 * amd_l2_bytes();
        caps[CX_B_BLOCK_SIX_L2_ON_AMD] = 6 * amd_l2_bytes();
    }
#endif
}

static int64_t caps_measured[CX_B_BLOCK_RULES];
static pthread_once_t caps_once = PTHREAD_ONCE_INIT;

static void measure_caps_once(void)
{
    measure_caps(caps_measured);
}

int64_t cx_b_block_cap_bytes(int rule)
{
    if (rule <= CX_B_BLOCK_IN_L3 || rule >= CX_B_BLOCK_RULES)
        return 0;
    pthread_once(&caps_once, measure_caps_once);
    return caps_measured[rule];
}
