/*
 * generic/linear.c -- Linear forward and backward entry points.
 *
 * Each validates every argument first (cextend.h's conventions), returns
 * early on empty outputs, then maps the product onto cx_gemm:
 *   forward  y  = x . w^T   (A = x,    B = w^T)
 *   backward dx = dy . w    (A = dy,   B = w)
 *            dw = dy^T . x  (A = dy^T, B = x)
 *            db = column sums of dy
 */

int CX_FN(cextend_linear_forward)(int64_t n, int64_t k, int64_t m,
                                  const REAL *x, int64_t ldx, int transx,
                                  const REAL *w, int64_t ldw, int transw,
                                  const REAL *b, REAL *y, int64_t ldy)
{
    static const char fn[] = "cextend_linear_forward_" CX_STR(SFX);
    int st = cx_validate_linear_forward(fn, sizeof(REAL), n, k, m, x, ldx, transx, w, ldw, transw, b, y, ldy);
    if (st)
        return st;
    if (n == 0 || m == 0)
        return CEXTEND_OK;

    int64_t rsx, csx, rsw, csw;
    cx_strides(ldx, transx, &rsx, &csx);
    cx_strides(ldw, transw, &rsw, &csw);
    /* B = w^T: B[p][j] = w[j][p], so B's row stride is w's column stride. */
    return CX_FN(cx_gemm)(n, m, k, x, rsx, csx, w, csw, rsw, b, y, ldy);
}

int CX_FN(cextend_linear_forward_contiguous)(int64_t n, int64_t k, int64_t m, const REAL *x,
                                             const REAL *w, const REAL *b, REAL *y)
{
    static const char fn[] = "cextend_linear_forward_contiguous_" CX_STR(SFX);
    int st = cx_validate_linear_forward_contiguous(fn, sizeof(REAL), n, k, m, x, w, b, y);
    if (st)
        return st;
    if (n == 0 || m == 0)
        return CEXTEND_OK;
    /* A = x (row stride k), B = w^T: B[p][j] = w[j * k + p]. */
    return CX_FN(cx_gemm)(n, m, k, x, k, 1, w, 1, k, b, y, m);
}

int CX_FN(cextend_linear_backward)(int64_t n, int64_t k, int64_t m,
                                   const REAL *dy, int64_t lddy, int transdy,
                                   const REAL *x, int64_t ldx, int transx,
                                   const REAL *w, int64_t ldw, int transw,
                                   REAL *dx, int64_t lddx,
                                   REAL *dw, int64_t lddw, REAL *db)
{
    static const char fn[] = "cextend_linear_backward_" CX_STR(SFX);
    int st = cx_validate_linear_backward(fn, sizeof(REAL), n, k, m, dy, lddy, transdy, x, ldx, transx,
                                         w, ldw, transw, dx, lddx, dw, lddw, db);
    if (st)
        return st;

    int64_t rsdy, csdy, rsx, csx, rsw, csw;
    cx_strides(lddy, transdy, &rsdy, &csdy);
    cx_strides(ldx, transx, &rsx, &csx);
    cx_strides(ldw, transw, &rsw, &csw);
    if (dx && (st = CX_FN(cx_gemm)(n, k, m, dy, rsdy, csdy, w, rsw, csw, NULL, dx, lddx)))
        return st;
    /* A = dy^T swaps dy's strides. */
    if (dw && (st = CX_FN(cx_gemm)(m, k, n, dy, csdy, rsdy, x, rsx, csx, NULL, dw, lddw)))
        return st;
    if (db)
        CX_FN(cx_column_sums)(n, m, dy, rsdy, csdy, db);
    return CEXTEND_OK;
}
