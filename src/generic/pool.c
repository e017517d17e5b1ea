/*
 * generic/pool.c -- global max pool over planes of contiguous elements
 * (the H*W planes of an (N, C, H, W) tensor) and its backward scatter.
 */

/* Flat index of the maximum; lowest index on ties; the first NaN wins
 * (numpy's argmax rule), since NaN compares false against everything. */
static int64_t CX_FN(argmax)(const REAL *v, int64_t len)
{
    int64_t best = 0;
    REAL best_value = v[0];
    if (best_value != best_value)
        return 0;
    for (int64_t i = 1; i < len; ++i) {
        const REAL value = v[i];
        if (value != value)
            return i;
        if (value > best_value) {
            best_value = value;
            best = i;
        }
    }
    return best;
}

/* planes x plane_size contiguous elements: blame an impossible size on plane_size. */
static int CX_FN(check_planes)(const char *fn, int64_t planes, int64_t plane_size)
{
    int st;
    if ((st = cx_check_size(fn, 1, "planes", planes)) ||
        (st = cx_check_size(fn, 2, "plane_size", plane_size)))
        return st;
    int64_t total;
    if (__builtin_mul_overflow(planes, plane_size, &total) ||
        __builtin_mul_overflow(total, (int64_t)sizeof(REAL), &total))
        return cx_illegal(fn, 2, "plane_size", "%lld planes of %lld elements overflow a byte count",
                          (long long)planes, (long long)plane_size);
    return 0;
}

int CX_FN(cextend_global_max_pool_forward)(int64_t planes, int64_t plane_size,
                                           const REAL *x, REAL *values, int64_t *indices)
{
    static const char fn[] = "cextend_global_max_pool_forward_" CX_STR(SFX);
    int st;
    if ((st = CX_FN(check_planes)(fn, planes, plane_size)))
        return st;
    if (planes > 0 && plane_size == 0)
        return cx_illegal(fn, 2, "plane_size", "must be >= 1 when planes > 0: the max of an empty plane is undefined");
    if ((st = cx_check_vector(fn, "x", 0, x, 3, planes * plane_size, 2, "plane_size", sizeof(REAL))) ||
        (st = cx_check_vector(fn, "values", 0, values, 4, planes, 1, "planes", sizeof(REAL))) ||
        (st = cx_check_vector(fn, "indices", 0, indices, 5, planes, 1, "planes", sizeof(int64_t))))
        return st;
    for (int64_t p = 0; p < planes; ++p) {
        const REAL *plane = x + p * plane_size;
        const int64_t best = CX_FN(argmax)(plane, plane_size);
        values[p] = plane[best];
        indices[p] = best;
    }
    return CEXTEND_OK;
}

int CX_FN(cextend_global_max_pool_backward)(int64_t planes, int64_t plane_size,
                                            const REAL *grad_values, const int64_t *indices,
                                            REAL *grad_x)
{
    static const char fn[] = "cextend_global_max_pool_backward_" CX_STR(SFX);
    int st;
    if ((st = CX_FN(check_planes)(fn, planes, plane_size)))
        return st;
    if ((st = cx_check_vector(fn, "grad_values", 0, grad_values, 3, planes, 1, "planes", sizeof(REAL))) ||
        (st = cx_check_vector(fn, "indices", 0, indices, 4, planes, 1, "planes", sizeof(int64_t))) ||
        (st = cx_check_vector(fn, "grad_x", 0, grad_x, 5, planes * plane_size, 2, "plane_size", sizeof(REAL))))
        return st;
    /* Every index is checked before grad_x is touched: a bad one writes nothing. */
    for (int64_t p = 0; p < planes; ++p)
        if (indices[p] < 0 || indices[p] >= plane_size)
            return cx_illegal(fn, 4, "indices", "indices[%lld] = %lld is outside [0, %lld)",
                              (long long)p, (long long)indices[p], (long long)plane_size);
    for (int64_t p = 0; p < planes; ++p) {
        REAL *plane = grad_x + p * plane_size;
        for (int64_t i = 0; i < plane_size; ++i)
            plane[i] = 0;
        plane[indices[p]] = grad_values[p];
    }
    return CEXTEND_OK;
}
