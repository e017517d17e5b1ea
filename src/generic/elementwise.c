/*
 * generic/elementwise.c -- extension-ffi's example ops, add and mul_constant,
 * on contiguous buffers.  Outputs may alias inputs exactly (in place).
 */

int CX_FN(cextend_add_forward)(int64_t count, const REAL *a, const REAL *b, REAL *out)
{
    static const char fn[] = "cextend_add_forward_" CX_STR(SFX);
    int st = cx_validate_add_forward(fn, sizeof(REAL), count, a, b, out);
    if (st)
        return st;
    for (int64_t i = 0; i < count; ++i)
        out[i] = a[i] + b[i];
    return CEXTEND_OK;
}

int CX_FN(cextend_add_backward)(int64_t count, const REAL *grad_out, REAL *grad_a, REAL *grad_b)
{
    static const char fn[] = "cextend_add_backward_" CX_STR(SFX);
    int st = cx_validate_add_backward(fn, sizeof(REAL), count, grad_out, grad_a, grad_b);
    if (st)
        return st;
    /* d(a + b)/da = d(a + b)/db = 1: both gradients are copies of grad_out. */
    for (int64_t i = 0; i < count; ++i) {
        const REAL g = grad_out[i];
        if (grad_a)
            grad_a[i] = g;
        if (grad_b)
            grad_b[i] = g;
    }
    return CEXTEND_OK;
}

int CX_FN(cextend_mul_constant_forward)(int64_t count, const REAL *x, REAL c, REAL *out)
{
    static const char fn[] = "cextend_mul_constant_forward_" CX_STR(SFX);
    int st = cx_validate_unary(fn, sizeof(REAL), count, x, "x", out, "out");
    if (st)
        return st;
    for (int64_t i = 0; i < count; ++i)
        out[i] = x[i] * c;
    return CEXTEND_OK;
}

int CX_FN(cextend_mul_constant_backward)(int64_t count, const REAL *grad_out, REAL c, REAL *grad_x)
{
    static const char fn[] = "cextend_mul_constant_backward_" CX_STR(SFX);
    int st = cx_validate_unary(fn, sizeof(REAL), count, grad_out, "grad_out", grad_x, "grad_x");
    if (st)
        return st;
    for (int64_t i = 0; i < count; ++i)
        grad_x[i] = grad_out[i] * c;
    return CEXTEND_OK;
}
