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

/* NaN wins, as torch's max: once the running max is NaN no comparison replaces it.  The
 * answer is the first element that a running max would keep (strictly greater replaces):
 * 8 lanes find the largest value in vectors, and only a NaN or a zero maximum (which of
 * +0.0 and -0.0 comes first decides its sign) looks again for the first one. */
static inline __attribute__((always_inline)) REAL CX_FN(row_max)(const REAL *x, int64_t cols)
{
    REAL m = x[0];
    if (cols < 16) {
        for (int64_t j = 1; j < cols; ++j) {
            const REAL v = x[j];
            if (v > m || v != v)
                m = v;
        }
        return m;
    }
    /* 8 lanes as 8 variables: straight-line code the compiler turns into one vector max */
    REAL m0 = -INFINITY, m1 = -INFINITY, m2 = -INFINITY, m3 = -INFINITY, m4 = -INFINITY, m5 = -INFINITY,
         m6 = -INFINITY, m7 = -INFINITY;
    int64_t j = 0;
    for (; j + 8 <= cols; j += 8) {     /* a NaN never enters a lane */
        const REAL *v = x + j;
        m0 = v[0] > m0 ? v[0] : m0;
        m1 = v[1] > m1 ? v[1] : m1;
        m2 = v[2] > m2 ? v[2] : m2;
        m3 = v[3] > m3 ? v[3] : m3;
        m4 = v[4] > m4 ? v[4] : m4;
        m5 = v[5] > m5 ? v[5] : m5;
        m6 = v[6] > m6 ? v[6] : m6;
        m7 = v[7] > m7 ? v[7] : m7;
    }
    for (; j < cols; ++j)
        m0 = x[j] > m0 ? x[j] : m0;
    m0 = m1 > m0 ? m1 : m0;
    m2 = m3 > m2 ? m3 : m2;
    m4 = m5 > m4 ? m5 : m4;
    m6 = m7 > m6 ? m7 : m6;
    m0 = m2 > m0 ? m2 : m0;
    m4 = m6 > m4 ? m6 : m4;
    m = m4 > m0 ? m4 : m0;
    int nan = 0;
    for (j = 0; j < cols; ++j)
        nan |= x[j] != x[j];
    if (nan || m == 0) {
        for (j = 0; j < cols; ++j)
            if (x[j] != x[j] || (!nan && x[j] == m))
                return x[j];
    }
    return m;      /* all -inf: the lanes' -inf, which is x[0] */
}

/* Sums of a row in 8 lanes, vectorised: element j (counted from the row's start, with v
 * starting at a multiple of 8) goes to lane j % 8, and the lanes add up in a fixed tree,
 * so the order, and so the bits, are the same on every ISA and thread count. */
static inline __attribute__((always_inline)) void CX_FN(add_to_lanes)(ACC *lanes, const REAL *v, int64_t n)
{
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int l = 0; l < 8; ++l)
            lanes[l] += (ACC)v[j + l];
    for (int l = 0; j + l < n; ++l)
        lanes[l] += (ACC)v[j + l];
}

static inline __attribute__((always_inline)) ACC CX_FN(lanes_total)(const ACC *lanes)
{
    return ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
}

/* One row's softmax (log_softmax when log is set) of cols >= 1 values; out may be x.
 * The exponentials go through a small buffer in chunks, so that they are computed in
 * vectors (CX_EXP is branch-free), while the sum adds them one by one, in order. */
static inline __attribute__((always_inline))
void CX_FN(softmax_row_body)(const REAL *xr, REAL *o, int64_t cols, int log_softmax)
{
    enum { CHUNK = 256 };       /* a multiple of 8: lanes continue across chunks */
    REAL e[CHUNK];
    const REAL m = CX_FN(row_max)(xr, cols);
    ACC lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t j0 = 0; j0 < cols; j0 += CHUNK) {
        const int64_t n = cols - j0 < CHUNK ? cols - j0 : CHUNK;
        for (int64_t j = 0; j < n; ++j)
            e[j] = CX_EXP(xr[j0 + j] - m);
        CX_FN(add_to_lanes)(lanes, e, n);
        if (!log_softmax)
            for (int64_t j = 0; j < n; ++j)
                o[j0 + j] = e[j];       /* x's chunk has been read: out may be x */
    }
    const ACC sum = CX_FN(lanes_total)(lanes);
    if (log_softmax) {
        /* (x - max) - log(sum): an all -inf or a +inf row gives NaN, as torch's. */
        const REAL lse = CX_LOG((REAL)sum);
        for (int64_t j = 0; j < cols; ++j)
            o[j] = (xr[j] - m) - lse;
    } else {
        const REAL total = (REAL)sum;
        for (int64_t j = 0; j < cols; ++j)
            o[j] = o[j] / total;
    }
}

/* One row's gradient (see cextend.h). */
static inline __attribute__((always_inline))
void CX_FN(softmax_backward_row_body)(const REAL *g, const REAL *y, REAL *gx, int64_t cols, int log_softmax)
{
    enum { CHUNK = 256 };
    ACC lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (log_softmax) {
        /* grad - exp(result) * sum(grad) */
        CX_FN(add_to_lanes)(lanes, g, cols);
        const REAL s = (REAL)CX_FN(lanes_total)(lanes);
        for (int64_t j = 0; j < cols; ++j)
            gx[j] = g[j] - CX_EXP(y[j]) * s;
    } else {
        /* result * (grad - sum(grad * result)), the products rounded to REAL before the sum */
        REAL p[CHUNK];
        for (int64_t j0 = 0; j0 < cols; j0 += CHUNK) {
            const int64_t n = cols - j0 < CHUNK ? cols - j0 : CHUNK;
            for (int64_t j = 0; j < n; ++j)
                p[j] = g[j0 + j] * y[j0 + j];
            CX_FN(add_to_lanes)(lanes, p, n);
        }
        const REAL s = (REAL)CX_FN(lanes_total)(lanes);
        for (int64_t j = 0; j < cols; ++j)
            gx[j] = y[j] * (g[j] - s);
    }
}

/* The row functions, compiled for plain x86-64 and again for AVX2 and for
 * AVX-512: wider vectors, the same operations (no FMA contraction under
 * -std=c11), so the same bits; the copy for the GEMM's instruction set runs. */
static void CX_FN(softmax_row)(const REAL *xr, REAL *o, int64_t cols, int log_softmax)
{
    CX_FN(softmax_row_body)(xr, o, cols, log_softmax);
}

static void CX_FN(softmax_backward_row)(const REAL *g, const REAL *y, REAL *gx, int64_t cols, int log_softmax)
{
    CX_FN(softmax_backward_row_body)(g, y, gx, cols, log_softmax);
}

#if defined(CX_HAVE_X86_KERNELS)
CX_TARGET_AVX512 static void CX_FN(softmax_row_avx512)(const REAL *xr, REAL *o, int64_t cols, int log_softmax)
{
    CX_FN(softmax_row_body)(xr, o, cols, log_softmax);
}

CX_TARGET_AVX512 static void CX_FN(softmax_backward_row_avx512)(const REAL *g, const REAL *y, REAL *gx,
                                                                 int64_t cols, int log_softmax)
{
    CX_FN(softmax_backward_row_body)(g, y, gx, cols, log_softmax);
}

CX_TARGET_AVX2 static void CX_FN(softmax_row_avx2)(const REAL *xr, REAL *o, int64_t cols, int log_softmax)
{
    CX_FN(softmax_row_body)(xr, o, cols, log_softmax);
}

CX_TARGET_AVX2 static void CX_FN(softmax_backward_row_avx2)(const REAL *g, const REAL *y, REAL *gx, int64_t cols,
                                                             int log_softmax)
{
    CX_FN(softmax_backward_row_body)(g, y, gx, cols, log_softmax);
}
#endif

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
    void (*row)(const REAL *, REAL *, int64_t, int) = CX_FN_FOR_ISA(softmax_row);
    const int threads = cx_threads_for_elements(3.0 * (double)count);
    CX_PARALLEL_FOR(for (int64_t r = 0; r < rows; ++r) {
        row(x + r * cols, out + r * cols, cols, log_softmax);
    });
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
    void (*row)(const REAL *, const REAL *, REAL *, int64_t, int) = CX_FN_FOR_ISA(softmax_backward_row);
    const int threads = cx_threads_for_elements(3.0 * (double)count);
    CX_PARALLEL_FOR(for (int64_t r = 0; r < rows; ++r) {
        row(grad_out + r * cols, result + r * cols, grad_x + r * cols, cols, log_softmax);
    });
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
