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
    const size_t es = sizeof(REAL);
    int st;
    if ((st = cx_check_size(fn, 1, "n", n)) || (st = cx_check_size(fn, 2, "k", k)) ||
        (st = cx_check_size(fn, 3, "m", m)))
        return st;
    if ((st = cx_check_matrix(fn, "x", 0, x, 4, n, k, ldx, 5, "ldx", transx, 6, "transx", es)) ||
        (st = cx_check_matrix(fn, "w", 0, w, 7, m, k, ldw, 8, "ldw", transw, 9, "transw", es)) ||
        (st = cx_check_vector(fn, "b", 1, b, 10, m, 3, "m", es)) ||
        (st = cx_check_matrix(fn, "y", 0, y, 11, n, m, ldy, 12, "ldy", 0, 0, "", es)))
        return st;
    if (n == 0 || m == 0)
        return CEXTEND_OK;

    int64_t rsx, csx, rsw, csw;
    cx_strides(ldx, transx, &rsx, &csx);
    cx_strides(ldw, transw, &rsw, &csw);
    /* B = w^T: B[p][j] = w[j][p], so B's row stride is w's column stride. */
    return CX_FN(cx_gemm)(n, m, k, x, rsx, csx, w, csw, rsw, b, y, ldy);
}

int CX_FN(cextend_linear_backward)(int64_t n, int64_t k, int64_t m,
                                   const REAL *dy, int64_t lddy, int transdy,
                                   const REAL *x, int64_t ldx, int transx,
                                   const REAL *w, int64_t ldw, int transw,
                                   REAL *dx, int64_t lddx,
                                   REAL *dw, int64_t lddw, REAL *db)
{
    static const char fn[] = "cextend_linear_backward_" CX_STR(SFX);
    const size_t es = sizeof(REAL);
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
    if ((st = cx_check_vector(fn, "db", 1, db, 17, m, 3, "m", es)))
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
