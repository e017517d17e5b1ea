/*
 * nn_threads.c -- thread counts for the memory-bound loops of the CNN
 * kernels (im2col, pooling, batch norm).  Those loops split their output
 * planes or channels across threads and never split one element's
 * reduction, so results do not depend on the count.
 */
#include "nn_internal.h"

/* Below this many element operations (~50 us on one core) a fork/join
 * costs more than the loop saves. */
#define PARALLEL_MIN_ELEMENTS (1 << 18)

int cx_threads_for_elements(double elements)
{
    int n = cextend_get_num_threads();
    if (n <= 1 || elements < PARALLEL_MIN_ELEMENTS)
        return 1;
    return cextend_threads_available(n);
}
