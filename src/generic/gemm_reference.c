/*
 * generic/gemm_reference.c -- the reference GEMM (the "reference" ISA), kept
 * as the oracle the fast engine is tested against.  Same contract as
 * cx_gemm (internal.h): C = A.B (+ bias per column), beta = 0.
 *
 * Simple and cache-friendly: the loop order is picked so
 * the innermost loop streams memory.  When B's rows are contiguous we
 * accumulate rows of B into a row of C (axpy form, vectorisable); otherwise
 * (B is a transposed view, e.g. W^T in the forward pass) each C[i][j] is a
 * dot product of a row of A with a column of B, both contiguous then.
 */

static void CX_FN(gemm_axpy_rows)(int64_t M, int64_t N, int64_t K,
                                  const REAL *a, int64_t rsa, int64_t csa,
                                  const REAL *b, int64_t rsb,
                                  const REAL *bias, REAL *c, int64_t ldc)
{
    for (int64_t i = 0; i < M; ++i) {
        REAL *restrict c_row = c + i * ldc;
        for (int64_t j = 0; j < N; ++j)
            c_row[j] = bias ? bias[j] : (REAL)0;
        for (int64_t p = 0; p < K; ++p) {
            const REAL a_ip = a[i * rsa + p * csa];
            const REAL *restrict b_row = b + p * rsb;
            for (int64_t j = 0; j < N; ++j)
                c_row[j] += a_ip * b_row[j];
        }
    }
}

static void CX_FN(gemm_dot_columns)(int64_t M, int64_t N, int64_t K,
                                    const REAL *a, int64_t rsa, int64_t csa,
                                    const REAL *b, int64_t rsb, int64_t csb,
                                    const REAL *bias, REAL *c, int64_t ldc)
{
    for (int64_t i = 0; i < M; ++i) {
        const REAL *a_row = a + i * rsa;
        for (int64_t j = 0; j < N; ++j) {
            const REAL *b_col = b + j * csb;
            /* Start from the bias and add products in p order, exactly as
             * the axpy form does, so both orders round identically and a
             * result never depends on the operands' layout. */
            REAL sum = bias ? bias[j] : (REAL)0;
            for (int64_t p = 0; p < K; ++p)
                sum += a_row[p * csa] * b_col[p * rsb];
            c[i * ldc + j] = sum;
        }
    }
}

int CX_FN(cx_gemm_reference)(int64_t M, int64_t N, int64_t K,
                   const REAL *a, int64_t rsa, int64_t csa,
                   const REAL *b, int64_t rsb, int64_t csb,
                   const REAL *bias, REAL *c, int64_t ldc)
{
    if (M == 0 || N == 0)
        return CEXTEND_OK;
    if (csb == 1 || N == 1)
        CX_FN(gemm_axpy_rows)(M, N, K, a, rsa, csa, b, rsb, bias, c, ldc);
    else
        CX_FN(gemm_dot_columns)(M, N, K, a, rsa, csa, b, rsb, csb, bias, c, ldc);
    return CEXTEND_OK;
}

void CX_FN(cx_column_sums)(int64_t M, int64_t N, const REAL *a, int64_t rs, int64_t cs, REAL *sums)
{
    for (int64_t j = 0; j < N; ++j)
        sums[j] = 0;
    if (cs == 1) {
        for (int64_t i = 0; i < M; ++i) {
            const REAL *restrict row = a + i * rs;
            for (int64_t j = 0; j < N; ++j)
                sums[j] += row[j];
        }
    } else {
        for (int64_t j = 0; j < N; ++j) {
            REAL sum = 0;
            for (int64_t i = 0; i < M; ++i)
                sum += a[i * rs + j * cs];
            sums[j] = sum;
        }
    }
}
