/*
 * generic/softmax.c -- softmax / log_softmax over the rows of a C-contiguous
 * (rows, cols) array, their backward, and nll_loss over (rows, classes),
 * for one REAL.  Rows are independent, so rows split across threads and
 * results do not depend on the thread count.
 */

/* rows x cols elements fit in a byte count; the operands are checked against it. */
static int CX_FN(check_rows)(const char *fn, int64_t rows, int64_t cols, int64_t *count)
{
    int st;
    if ((st = cx_check_size(fn, 1, "rows", rows)) || (st = cx_check_size(fn, 2, "cols", cols)))
        return st;
    if (__builtin_mul_overflow(rows, cols, count))
        return cx_illegal(fn, 2, "cols", "rows * cols (%lld * %lld) overflows", (long long)rows,
                          (long long)cols);
    return 0;
}

/* NaN wins, as torch's max: once the running max is NaN no comparison replaces it. */
static inline REAL CX_FN(row_max)(const REAL *x, int64_t cols)
{
    REAL m = x[0];
    for (int64_t j = 1; j < cols; ++j) {
        const REAL v = x[j];
        if (v > m || v != v)
            m = v;
    }
    return m;
}

int CX_FN(cextend_softmax_rows)(int64_t rows, int64_t cols, const REAL *x, REAL *out, int log_softmax)
{
    static const char fn[] = "cextend_softmax_rows_" CX_STR(SFX);
    int64_t count = 0;
    int st;
    if ((st = CX_FN(check_rows)(fn, rows, cols, &count)) ||
        (st = cx_check_vector(fn, "x", 0, x, 3, count, 2, "cols", sizeof(REAL))) ||
        (st = cx_check_vector(fn, "out", 0, out, 4, count, 2, "cols", sizeof(REAL))))
        return st;
    if (log_softmax != 0 && log_softmax != 1)
        return cx_illegal(fn, 5, "log_softmax", "must be 0 or 1, got %d", log_softmax);
    if (cols == 0)
        return CEXTEND_OK;
    const int threads = cx_threads_for_elements(3.0 * (double)count);
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (int64_t r = 0; r < rows; ++r) {
        const REAL *xr = x + r * cols;
        REAL *o = out + r * cols;
        const REAL m = CX_FN(row_max)(xr, cols);
        ACC sum = 0;
        if (log_softmax) {
            for (int64_t j = 0; j < cols; ++j)
                sum += (ACC)CX_EXP(xr[j] - m);
            /* (x - max) - log(sum): an all -inf or a +inf row gives NaN, as torch's. */
            const REAL lse = CX_LOG((REAL)sum);
            for (int64_t j = 0; j < cols; ++j)
                o[j] = (xr[j] - m) - lse;
        } else {
            for (int64_t j = 0; j < cols; ++j) {
                const REAL e = CX_EXP(xr[j] - m);   /* read before the write: out may be x */
                o[j] = e;
                sum += (ACC)e;
            }
            const REAL total = (REAL)sum;
            for (int64_t j = 0; j < cols; ++j)
                o[j] = o[j] / total;
        }
    }
    return CEXTEND_OK;
}

int CX_FN(cextend_softmax_backward_rows)(int64_t rows, int64_t cols, const REAL *grad_out,
                                          const REAL *result, REAL *grad_x, int log_softmax)
{
    static const char fn[] = "cextend_softmax_backward_rows_" CX_STR(SFX);
    int64_t count = 0;
    int st;
    if ((st = CX_FN(check_rows)(fn, rows, cols, &count)) ||
        (st = cx_check_vector(fn, "grad_out", 0, grad_out, 3, count, 2, "cols", sizeof(REAL))) ||
        (st = cx_check_vector(fn, "result", 0, result, 4, count, 2, "cols", sizeof(REAL))) ||
        (st = cx_check_vector(fn, "grad_x", 0, grad_x, 5, count, 2, "cols", sizeof(REAL))))
        return st;
    if (log_softmax != 0 && log_softmax != 1)
        return cx_illegal(fn, 6, "log_softmax", "must be 0 or 1, got %d", log_softmax);
    const int threads = cx_threads_for_elements(3.0 * (double)count);
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (int64_t r = 0; r < rows; ++r) {
        const REAL *g = grad_out + r * cols, *y = result + r * cols;
        REAL *gx = grad_x + r * cols;
        ACC sum = 0;
        if (log_softmax) {
            /* grad - exp(result) * sum(grad) */
            for (int64_t j = 0; j < cols; ++j)
                sum += (ACC)g[j];
            const REAL s = (REAL)sum;
            for (int64_t j = 0; j < cols; ++j)
                gx[j] = g[j] - CX_EXP(y[j]) * s;
        } else {
            /* result * (grad - sum(grad * result)) */
            for (int64_t j = 0; j < cols; ++j)
                sum += (ACC)(g[j] * y[j]);
            const REAL s = (REAL)sum;
            for (int64_t j = 0; j < cols; ++j)
                gx[j] = y[j] * (g[j] - s);
        }
    }
    return CEXTEND_OK;
}

/* The first row whose target is neither a class nor ignore_index, or -1. */
static int64_t CX_FN(first_bad_target)(int64_t rows, int64_t classes, const int64_t *target,
                                       int64_t ignore_index)
{
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t t = target[r];
        if (t != ignore_index && (t < 0 || t >= classes))
            return r;
    }
    return -1;
}

static int CX_FN(check_nll)(const char *fn, int64_t rows, int64_t classes, const void *x, int x_pos,
                            const char *x_name, const int64_t *target, const REAL *weight, int reduction,
                            int reduction_pos, int64_t *count)
{
    int st;
    if ((st = CX_FN(check_rows)(fn, rows, classes, count)) ||
        (st = cx_check_vector(fn, x_name, 0, x, x_pos, *count, 2, "classes", sizeof(REAL))) ||
        (st = cx_check_vector(fn, "target", 0, target, 4, rows, 1, "rows", sizeof(int64_t))) ||
        (st = cx_check_vector(fn, "weight", 1, weight, 5, classes, 2, "classes", sizeof(REAL))))
        return st;
    if (reduction < CEXTEND_REDUCTION_NONE || reduction > CEXTEND_REDUCTION_SUM)
        return cx_illegal(fn, reduction_pos, "reduction", "must be 0 (none), 1 (mean) or 2 (sum), got %d",
                          reduction);
    return 0;
}

int CX_FN(cextend_nll_forward)(int64_t rows, int64_t classes, const REAL *x, const int64_t *target,
                               const REAL *weight, int64_t ignore_index, int reduction, REAL *out,
                               REAL *total_weight, int64_t *bad_row)
{
    static const char fn[] = "cextend_nll_forward_" CX_STR(SFX);
    int64_t count = 0;
    int st;
    if ((st = CX_FN(check_nll)(fn, rows, classes, x, 3, "x", target, weight, reduction, 7, &count)) ||
        (st = cx_check_vector(fn, "out", 0, out, 8, reduction == CEXTEND_REDUCTION_NONE ? rows : 1, 1,
                              "rows", sizeof(REAL))) ||
        (st = cx_check_vector(fn, "total_weight", 0, total_weight, 9, 1, 1, "rows", sizeof(REAL))) ||
        (st = cx_check_vector(fn, "bad_row", 0, bad_row, 10, 1, 1, "rows", sizeof(int64_t))))
        return st;
    /* Every target is checked before anything is read through one or written. */
    *bad_row = CX_FN(first_bad_target)(rows, classes, target, ignore_index);
    if (*bad_row >= 0)
        return CEXTEND_OK;
    ACC loss = 0, weights = 0;
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t t = target[r];
        REAL value = 0;         /* an ignored row adds +0.0 (and is +0.0 under 'none') */
        if (t != ignore_index) {
            const REAL w = weight ? weight[t] : (REAL)1;
            const REAL picked = weight ? w * x[r * classes + t] : x[r * classes + t];
            value = -picked;
            weights += (ACC)w;
        }
        if (reduction == CEXTEND_REDUCTION_NONE)
            out[r] = value;
        else
            loss += (ACC)value;
    }
    *total_weight = (REAL)weights;
    if (reduction == CEXTEND_REDUCTION_SUM)
        out[0] = (REAL)loss + (REAL)0;      /* a sum of -0.0 terms is +0.0, as torch's */
    else if (reduction == CEXTEND_REDUCTION_MEAN)
        out[0] = ((REAL)loss + (REAL)0) / *total_weight;    /* all ignored: 0 / 0 = NaN, as torch's */
    return CEXTEND_OK;
}

int CX_FN(cextend_nll_backward)(int64_t rows, int64_t classes, const REAL *grad_out, const int64_t *target,
                                const REAL *weight, int64_t ignore_index, int reduction,
                                const REAL *total_weight, REAL *grad_x)
{
    static const char fn[] = "cextend_nll_backward_" CX_STR(SFX);
    int64_t count = 0;
    int st;
    if ((st = CX_FN(check_nll)(fn, rows, classes, grad_x, 9, "grad_x", target, weight, reduction, 7, &count)) ||
        (st = cx_check_vector(fn, "grad_out", 0, grad_out, 3, reduction == CEXTEND_REDUCTION_NONE ? rows : 1,
                              1, "rows", sizeof(REAL))) ||
        (st = cx_check_vector(fn, "total_weight", 0, total_weight, 8, 1, 1, "rows", sizeof(REAL))))
        return st;
    const int64_t bad = CX_FN(first_bad_target)(rows, classes, target, ignore_index);
    if (bad >= 0)
        return cx_illegal(fn, 4, "target", "row %lld holds %lld, not a class in [0, %lld) or ignore_index",
                          (long long)bad, (long long)target[bad], (long long)classes);
    for (int64_t i = 0; i < count; ++i)
        grad_x[i] = 0;
    REAL shared = 0;
    if (reduction == CEXTEND_REDUCTION_MEAN)
        shared = -(grad_out[0] / *total_weight);     /* torch's order: divide, negate, then weigh */
    else if (reduction == CEXTEND_REDUCTION_SUM)
        shared = -grad_out[0];
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t t = target[r];
        if (t == ignore_index)
            continue;           /* an ignored row's gradient stays +0.0, even for a NaN grad_out */
        const REAL g = reduction == CEXTEND_REDUCTION_NONE ? -grad_out[r] : shared;
        grad_x[r * classes + t] = weight ? weight[t] * g : g;
    }
    return CEXTEND_OK;
}
