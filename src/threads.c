/*
 * threads.c -- how many threads the kernels use.
 *
 * Threads split a product's output into column (or row) chunks only; the
 * reduction over k is never split, so every element is computed by the
 * same arithmetic whatever the count, and results are bitwise identical.
 */
#include <stdatomic.h>

#include "internal.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* Below this many multiply-adds (about 10 us on one core) a fork/join
 * costs more than it saves: 32x128x128 ran slower on two threads. */
#define PARALLEL_MIN_WORK (1 << 21)

static _Atomic int requested_threads = 0;   /* 0: not set, use OpenMP's default */

int cextend_set_num_threads(int n)
{
    if (n < 1)
        return cx_illegal("cextend_set_num_threads", 1, "n", "must be >= 1, got %d", n);
    atomic_store(&requested_threads, n);
    return CEXTEND_OK;
}

int cextend_get_num_threads(void)
{
    int n = atomic_load(&requested_threads);
    if (n > 0)
        return n;
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

int cx_threads_for(double work)
{
    int n = cextend_get_num_threads();
    if (n <= 1 || work < PARALLEL_MIN_WORK)
        return 1;
    return n;
}
