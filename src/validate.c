/*
 * validate.c -- the argument checks of every entry point, in one place, so
 * the CPU kernels and the CUDA library report identical statuses and
 * messages (see cextend.h for positions and names).
 */
#include "internal.h"

int cx_validate_linear_forward(const char *fn, size_t es, int64_t n, int64_t k, int64_t m,
                               const void *x, int64_t ldx, int transx,
                               const void *w, int64_t ldw, int transw,
                               const void *b, const void *y, int64_t ldy)
{
    int st;
    if ((st = cx_check_size(fn, 1, "n", n)) || (st = cx_check_size(fn, 2, "k", k)) ||
        (st = cx_check_size(fn, 3, "m", m)))
        return st;
    if ((st = cx_check_matrix(fn, "x", 0, x, 4, n, k, ldx, 5, "ldx", transx, 6, "transx", es)) ||
        (st = cx_check_matrix(fn, "w", 0, w, 7, m, k, ldw, 8, "ldw", transw, 9, "transw", es)) ||
        (st = cx_check_vector(fn, "b", 1, b, 10, m, 3, "m", es)) ||
        (st = cx_check_matrix(fn, "y", 0, y, 11, n, m, ldy, 12, "ldy", 0, 0, "", es)))
        return st;
    return 0;
}

int cx_validate_linear_forward_contiguous(const char *fn, size_t es, int64_t n, int64_t k, int64_t m,
                                          const void *x, const void *w, const void *b, const void *y)
{
    int st;
    if ((st = cx_check_size(fn, 1, "n", n)) || (st = cx_check_size(fn, 2, "k", k)) ||
        (st = cx_check_size(fn, 3, "m", m)))
        return st;
    /* The leading dimensions are implied (k, k, m): a span too large for
     * the address space is blamed on the size that makes it so. */
    const int64_t ldk = k > 1 ? k : 1, ldm = m > 1 ? m : 1;
    if ((st = cx_check_matrix(fn, "x", 0, x, 4, n, k, ldk, 2, "k", 0, 0, "", es)) ||
        (st = cx_check_matrix(fn, "w", 0, w, 5, m, k, ldk, 2, "k", 0, 0, "", es)) ||
        (st = cx_check_vector(fn, "b", 1, b, 6, m, 3, "m", es)) ||
        (st = cx_check_matrix(fn, "y", 0, y, 7, n, m, ldm, 3, "m", 0, 0, "", es)))
        return st;
    return 0;
}

int cx_validate_linear_backward(const char *fn, size_t es, int64_t n, int64_t k, int64_t m,
                                const void *dy, int64_t lddy, int transdy,
                                const void *x, int64_t ldx, int transx,
                                const void *w, int64_t ldw, int transw,
                                const void *dx, int64_t lddx, const void *dw, int64_t lddw,
                                const void *db)
{
    int st;
    if ((st = cx_check_size(fn, 1, "n", n)) || (st = cx_check_size(fn, 2, "k", k)) ||
        (st = cx_check_size(fn, 3, "m", m)))
        return st;
    if ((st = cx_check_matrix(fn, "dy", 0, dy, 4, n, m, lddy, 5, "lddy", transdy, 6, "transdy", es)) ||
        (st = cx_check_matrix(fn, "x", 0, x, 7, n, k, ldx, 8, "ldx", transx, 9, "transx", es)) ||
        (st = cx_check_matrix(fn, "w", 0, w, 10, m, k, ldw, 11, "ldw", transw, 12, "transw", es)))
        return st;
    /* A skipped output's leading dimension is never used, so it is not checked. */
    if (dx && (st = cx_check_matrix(fn, "dx", 1, dx, 13, n, k, lddx, 14, "lddx", 0, 0, "", es)))
        return st;
    if (dw && (st = cx_check_matrix(fn, "dw", 1, dw, 15, m, k, lddw, 16, "lddw", 0, 0, "", es)))
        return st;
    return cx_check_vector(fn, "db", 1, db, 17, m, 3, "m", es);
}

int cx_validate_add_forward(const char *fn, size_t es, int64_t count,
                            const void *a, const void *b, const void *out)
{
    int st;
    if ((st = cx_check_size(fn, 1, "count", count)) ||
        (st = cx_check_vector(fn, "a", 0, a, 2, count, 1, "count", es)) ||
        (st = cx_check_vector(fn, "b", 0, b, 3, count, 1, "count", es)) ||
        (st = cx_check_vector(fn, "out", 0, out, 4, count, 1, "count", es)))
        return st;
    return 0;
}

int cx_validate_add_backward(const char *fn, size_t es, int64_t count,
                             const void *grad_out, const void *grad_a, const void *grad_b)
{
    int st;
    if ((st = cx_check_size(fn, 1, "count", count)) ||
        (st = cx_check_vector(fn, "grad_out", 0, grad_out, 2, count, 1, "count", es)) ||
        (st = cx_check_vector(fn, "grad_a", 1, grad_a, 3, count, 1, "count", es)) ||
        (st = cx_check_vector(fn, "grad_b", 1, grad_b, 4, count, 1, "count", es)))
        return st;
    return 0;
}

int cx_validate_unary(const char *fn, size_t es, int64_t count, const void *in, const char *in_name,
                      const void *out, const char *out_name)
{
    int st;
    if ((st = cx_check_size(fn, 1, "count", count)) ||
        (st = cx_check_vector(fn, in_name, 0, in, 2, count, 1, "count", es)) ||
        (st = cx_check_vector(fn, out_name, 0, out, 4, count, 1, "count", es)))
        return st;
    return 0;
}

/* planes x plane_size elements: blame an impossible size on plane_size. */
static int check_planes(const char *fn, size_t es, int64_t planes, int64_t plane_size)
{
    int st;
    if ((st = cx_check_size(fn, 1, "planes", planes)) ||
        (st = cx_check_size(fn, 2, "plane_size", plane_size)))
        return st;
    int64_t total;
    if (__builtin_mul_overflow(planes, plane_size, &total) ||
        __builtin_mul_overflow(total, (int64_t)es, &total))
        return cx_illegal(fn, 2, "plane_size", "%lld planes of %lld elements overflow a byte count",
                          (long long)planes, (long long)plane_size);
    return 0;
}

int cx_validate_pool_forward(const char *fn, size_t es, int64_t planes, int64_t plane_size,
                             const void *x, const void *values, const void *indices)
{
    int st;
    if ((st = check_planes(fn, es, planes, plane_size)))
        return st;
    if (planes > 0 && plane_size == 0)
        return cx_illegal(fn, 2, "plane_size", "must be >= 1 when planes > 0: the max of an empty plane is undefined");
    if ((st = cx_check_vector(fn, "x", 0, x, 3, planes * plane_size, 2, "plane_size", es)) ||
        (st = cx_check_vector(fn, "values", 0, values, 4, planes, 1, "planes", es)) ||
        (st = cx_check_vector(fn, "indices", 0, indices, 5, planes, 1, "planes", sizeof(int64_t))))
        return st;
    return 0;
}

int cx_validate_pool_backward(const char *fn, size_t es, int64_t planes, int64_t plane_size,
                              const void *grad_values, const void *indices, const void *grad_x)
{
    int st;
    if ((st = check_planes(fn, es, planes, plane_size)))
        return st;
    if ((st = cx_check_vector(fn, "grad_values", 0, grad_values, 3, planes, 1, "planes", es)) ||
        (st = cx_check_vector(fn, "indices", 0, indices, 4, planes, 1, "planes", sizeof(int64_t))) ||
        (st = cx_check_vector(fn, "grad_x", 0, grad_x, 5, planes * plane_size, 2, "plane_size", es)))
        return st;
    return 0;
}
