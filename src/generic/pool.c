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

int CX_FN(cextend_global_max_pool_forward)(int64_t planes, int64_t plane_size,
                                           const REAL *x, REAL *values, int64_t *indices)
{
    static const char fn[] = "cextend_global_max_pool_forward_" CX_STR(SFX);
    int st = cx_validate_pool_forward(fn, sizeof(REAL), planes, plane_size, x, values, indices);
    if (st)
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
    int st = cx_validate_pool_backward(fn, sizeof(REAL), planes, plane_size, grad_values, indices, grad_x);
    if (st)
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
