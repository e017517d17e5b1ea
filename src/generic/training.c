/*
 * generic/training.c -- relu, its backward, a total sum, and the optimizer
 * updates, for one REAL.  Outputs may alias inputs exactly (in place); partial overlaps are
 * not supported.
 */

int CX_FN(cextend_relu_forward)(int64_t count, const REAL *x, REAL *out)
{
    static const char fn[] = "cextend_relu_forward_" CX_STR(SFX);
    int st;
    if ((st = cx_check_size(fn, 1, "count", count)) ||
        (st = cx_check_vector(fn, "x", 0, x, 2, count, 1, "count", sizeof(REAL))) ||
        (st = cx_check_vector(fn, "out", 0, out, 3, count, 1, "count", sizeof(REAL))))
        return st;
    /* 0 only where x < 0: NaN propagates and -0.0 stays -0.0, as torch's relu. */
    for (int64_t i = 0; i < count; ++i)
        out[i] = x[i] < 0 ? (REAL)0 : x[i];
    return CEXTEND_OK;
}

int CX_FN(cextend_threshold_backward)(int64_t count, const REAL *grad_out, const REAL *result,
                                      REAL *grad_x)
{
    static const char fn[] = "cextend_threshold_backward_" CX_STR(SFX);
    int st;
    if ((st = cx_validate_unary(fn, sizeof(REAL), count, grad_out, "grad_out", grad_x, "grad_x")) ||
        (st = cx_check_vector(fn, "result", 0, result, 3, count, 1, "count", sizeof(REAL))))
        return st;
    /* torch's threshold_backward: 0 where the result is <= 0; a NaN result passes the gradient. */
    for (int64_t i = 0; i < count; ++i) {
        /* Both loads unconditional, so the loop is a branch-free select (a
         * conditional load would be a mispredicted branch per element). */
        const REAL g = grad_out[i], r = result[i];
        grad_x[i] = r <= 0 ? (REAL)0 : g;
    }
    return CEXTEND_OK;
}

/* ---- add(y, x, alpha) = y + alpha * x, one rounding ---------------------- */

static inline __attribute__((always_inline))
void CX_FN(axpy_loop)(int64_t count, REAL alpha, const REAL *x, const REAL *y, REAL *out)
{
    for (int64_t i = 0; i < count; ++i)
        out[i] = CX_FMA(alpha, x[i], y[i]);
}

#if CX_FMA_CLONES
CX_TARGET_FMA static void CX_FN(axpy_fma)(int64_t count, REAL alpha, const REAL *x, const REAL *y, REAL *out)
{
    CX_FN(axpy_loop)(count, alpha, x, y, out);
}
#endif

int CX_FN(cextend_axpy)(int64_t count, REAL alpha, const REAL *x, const REAL *y, REAL *out)
{
    static const char fn[] = "cextend_axpy_" CX_STR(SFX);
    int st;
    if ((st = cx_check_size(fn, 1, "count", count)) ||
        (st = cx_check_vector(fn, "x", 0, x, 3, count, 1, "count", sizeof(REAL))) ||
        (st = cx_check_vector(fn, "y", 0, y, 4, count, 1, "count", sizeof(REAL))) ||
        (st = cx_check_vector(fn, "out", 0, out, 5, count, 1, "count", sizeof(REAL))))
        return st;
#if CX_FMA_CLONES
    if (cx_cpu_has_fma()) {
        CX_FN(axpy_fma)(count, alpha, x, y, out);
        return CEXTEND_OK;
    }
#endif
    CX_FN(axpy_loop)(count, alpha, x, y, out);
    return CEXTEND_OK;
}

/* ---- sum: numpy's pairwise order, to the bit ------------------------------
 * A float tensor's total (a loss) was numpy's sum; this is the same sum
 * without numpy's reduction machinery (about 1.9 us of fixed cost against
 * a few ns of arithmetic at a loss's sizes).  numpy adds the pairwise sum
 * of the data to its reduction's start value, +0.0; the pairwise sum runs
 * short stretches (under 8) left to right, up to 128 values as 8 strided
 * partial sums combined as a tree and the rest added in order, and splits
 * longer stretches at half, rounded down to a multiple of 8.  Each partial
 * sum is its own chain, so the compiler may keep them in vector lanes:
 * the same additions in the same order, the same bits. */
static REAL CX_FN(pairwise_sum)(const REAL *a, int64_t n)
{
    if (n < 8) {
        REAL res = -(REAL)0;
        for (int64_t i = 0; i < n; ++i)
            res += a[i];
        return res;
    }
    if (n <= 128) {
        REAL r[8];
        for (int j = 0; j < 8; ++j)
            r[j] = a[j];
        int64_t i = 8;
        for (; i < n - n % 8; i += 8)
            for (int j = 0; j < 8; ++j)
                r[j] += a[i + j];
        REAL res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; ++i)
            res += a[i];
        return res;
    }
    int64_t half = n / 2;
    half -= half % 8;
    return CX_FN(pairwise_sum)(a, half) + CX_FN(pairwise_sum)(a + half, n - half);
}

int CX_FN(cextend_sum)(int64_t count, const REAL *x, REAL *total)
{
    static const char fn[] = "cextend_sum_" CX_STR(SFX);
    int st;
    if ((st = cx_check_size(fn, 1, "count", count)) ||
        (st = cx_check_vector(fn, "x", 0, x, 2, count, 1, "count", sizeof(REAL))) ||
        (st = cx_check_vector(fn, "total", 0, total, 3, 1, 1, "count", sizeof(REAL))))
        return st;
    *total = (REAL)0 + CX_FN(pairwise_sum)(x, count);
    return CEXTEND_OK;
}

/* ---- SGD: torch's single-tensor step, element by element ------------------
 * The operations and their order are those of torch.optim.SGD's
 * _single_tensor_sgd, each rounded to REAL as torch's in-place ops round:
 *   g = maximize ? -grad : grad
 *   g = g + weight_decay * param                      (if weight_decay != 0)
 *   buf = first ? g : buf * momentum + (1 - dampening) * g     (if momentum != 0)
 *   g = nesterov ? g + momentum * buf : buf
 *   param = param - lr * g
 */

static inline __attribute__((always_inline))
void CX_FN(sgd_loop)(int64_t count, REAL *param, const REAL *grad, REAL *buf, int first_step,
                     REAL neg_lr, REAL weight_decay, REAL momentum, REAL one_minus_dampening,
                     int nesterov, int maximize)
{
    for (int64_t i = 0; i < count; ++i) {
        REAL p = param[i];
        REAL g = maximize ? -grad[i] : grad[i];
        if (weight_decay != 0)
            g = CX_FMA(weight_decay, p, g);
        if (momentum != 0) {
            REAL b;
            if (first_step) {
                b = g;
            } else {
                b = buf[i] * momentum;
                b = CX_FMA(one_minus_dampening, g, b);
            }
            buf[i] = b;
            g = nesterov ? CX_FMA(momentum, b, g) : b;
        }
        param[i] = CX_FMA(neg_lr, g, p);
    }
}

#if CX_FMA_CLONES
CX_TARGET_FMA static void CX_FN(sgd_fma)(int64_t count, REAL *param, const REAL *grad, REAL *buf,
                                         int first_step, REAL neg_lr, REAL weight_decay, REAL momentum,
                                         REAL one_minus_dampening, int nesterov, int maximize)
{
    CX_FN(sgd_loop)(count, param, grad, buf, first_step, neg_lr, weight_decay, momentum,
                    one_minus_dampening, nesterov, maximize);
}
#endif

int CX_FN(cextend_sgd_step)(int64_t count, REAL *param, const REAL *grad, REAL *momentum_buffer,
                            int first_step, REAL neg_lr, REAL weight_decay, REAL momentum,
                            REAL one_minus_dampening, int nesterov, int maximize)
{
    static const char fn[] = "cextend_sgd_step_" CX_STR(SFX);
    int st;
    if ((st = cx_check_size(fn, 1, "count", count)) ||
        (st = cx_check_vector(fn, "param", 0, param, 2, count, 1, "count", sizeof(REAL))) ||
        (st = cx_check_vector(fn, "grad", 0, grad, 3, count, 1, "count", sizeof(REAL))) ||
        (st = cx_check_vector(fn, "momentum_buffer", momentum == 0, momentum_buffer, 4, count, 1, "count",
                              sizeof(REAL))))
        return st;
    if (first_step != 0 && first_step != 1)
        return cx_illegal(fn, 5, "first_step", "must be 0 or 1, got %d", first_step);
    if (nesterov != 0 && nesterov != 1)
        return cx_illegal(fn, 10, "nesterov", "must be 0 or 1, got %d", nesterov);
    if (maximize != 0 && maximize != 1)
        return cx_illegal(fn, 11, "maximize", "must be 0 or 1, got %d", maximize);
#if CX_FMA_CLONES
    if (cx_cpu_has_fma()) {
        CX_FN(sgd_fma)(count, param, grad, momentum_buffer, first_step, neg_lr, weight_decay, momentum,
                       one_minus_dampening, nesterov, maximize);
        return CEXTEND_OK;
    }
#endif
    CX_FN(sgd_loop)(count, param, grad, momentum_buffer, first_step, neg_lr, weight_decay, momentum,
                    one_minus_dampening, nesterov, maximize);
    return CEXTEND_OK;
}

/* ---- Adam / AdamW: torch's single-tensor step, element by element ---------
 * The operations and their order are cextend.optim.Adam's op-by-op step
 * (torch's _single_tensor_adam), each rounded as that step rounds it:
 *   g = maximize ? -grad : grad
 *   decay_mode 1 (Adam's L2):   g = g + weight_decay * param       (one rounding)
 *   decay_mode 2 (AdamW):       param = param * decay               (decay = 1 - lr * wd)
 *   exp_avg = lerp(exp_avg, g, lerp_weight)                         (torch's two-branch lerp)
 *   exp_avg_sq = exp_avg_sq * beta2 + (one_minus_beta2 * g) * g
 *   param = param + (neg_step_size * exp_avg) / (sqrt(exp_avg_sq) / bias_correction2_sqrt + eps)
 * The multiply-adds of lerp and addcmul are CX_LERP / CX_ADDCMUL (training.c):
 * float32 computes them in double and rounds once, as the op-by-op step does.
 */

static inline __attribute__((always_inline))
void CX_FN(adam_loop)(int64_t count, REAL *restrict param, const REAL *restrict grad, REAL *restrict exp_avg,
                      REAL *restrict exp_avg_sq, int decay_mode, REAL decay, REAL lerp_weight, REAL beta2,
                      REAL one_minus_beta2, REAL bias_correction2_sqrt, REAL eps, REAL neg_step_size, int maximize,
                      int lerp_from_start)
{
    for (int64_t i = 0; i < count; ++i) {
        REAL p = param[i];
        REAL g = maximize ? -grad[i] : grad[i];
        if (decay_mode == 1)
            g = CX_FMA(decay, p, g);
        else if (decay_mode == 2)
            p = p * decay;
        const REAL m = lerp_from_start ? CX_LERP_FROM_START(exp_avg[i], g, lerp_weight)
                                       : CX_LERP_FROM_END(exp_avg[i], g, lerp_weight);
        REAL v = exp_avg_sq[i] * beta2;
        v = CX_ADDCMUL(v, one_minus_beta2 * g, g);
        const REAL denom = CX_SQRT(v) / bias_correction2_sqrt + eps;
        p = p + (neg_step_size * m) / denom;
        param[i] = p;
        exp_avg[i] = m;
        exp_avg_sq[i] = v;
    }
}

/* adam_loop with its loop-invariant choices as constants, so each of the twelve copies is
 * branch-free and vectorises (the operations, and so the bits, are the same in every copy). */
static inline __attribute__((always_inline))
void CX_FN(adam_specialised)(int64_t count, REAL *param, const REAL *grad, REAL *exp_avg, REAL *exp_avg_sq,
                             int decay_mode, REAL decay, REAL lerp_weight, REAL beta2, REAL one_minus_beta2,
                             REAL bias_correction2_sqrt, REAL eps, REAL neg_step_size, int maximize)
{
#define CX_ADAM(dm, mx, from_start)                                                                    \
    CX_FN(adam_loop)(count, param, grad, exp_avg, exp_avg_sq, dm, decay, lerp_weight, beta2, one_minus_beta2, \
                     bias_correction2_sqrt, eps, neg_step_size, mx, from_start)
#define CX_ADAM_LERP(dm, mx)                                                                           \
    do {                                                                                                \
        if (CX_LERP_STARTS_FROM_A(lerp_weight))                                                        \
            CX_ADAM(dm, mx, 1);                                                                         \
        else                                                                                            \
            CX_ADAM(dm, mx, 0);                                                                         \
    } while (0)
#define CX_ADAM_MAXIMIZE(dm)                                                                            \
    do {                                                                                                \
        if (maximize)                                                                                   \
            CX_ADAM_LERP(dm, 1);                                                                        \
        else                                                                                            \
            CX_ADAM_LERP(dm, 0);                                                                        \
    } while (0)
    if (decay_mode == 1)
        CX_ADAM_MAXIMIZE(1);
    else if (decay_mode == 2)
        CX_ADAM_MAXIMIZE(2);
    else
        CX_ADAM_MAXIMIZE(0);
#undef CX_ADAM_MAXIMIZE
#undef CX_ADAM_LERP
#undef CX_ADAM
}

#if CX_FMA_CLONES
CX_TARGET_FMA static void CX_FN(adam_fma)(int64_t count, REAL *param, const REAL *grad, REAL *exp_avg,
                                          REAL *exp_avg_sq, int decay_mode, REAL decay, REAL lerp_weight,
                                          REAL beta2, REAL one_minus_beta2, REAL bias_correction2_sqrt,
                                          REAL eps, REAL neg_step_size, int maximize)
{
    CX_FN(adam_specialised)(count, param, grad, exp_avg, exp_avg_sq, decay_mode, decay, lerp_weight, beta2,
                            one_minus_beta2, bias_correction2_sqrt, eps, neg_step_size, maximize);
}
#endif

int CX_FN(cextend_adam_step)(int64_t count, REAL *param, const REAL *grad, REAL *exp_avg, REAL *exp_avg_sq,
                             int decay_mode, REAL decay, REAL lerp_weight, REAL beta2, REAL one_minus_beta2,
                             REAL bias_correction2_sqrt, REAL eps, REAL neg_step_size, int maximize)
{
    static const char fn[] = "cextend_adam_step_" CX_STR(SFX);
    int st;
    if ((st = cx_check_size(fn, 1, "count", count)) ||
        (st = cx_check_vector(fn, "param", 0, param, 2, count, 1, "count", sizeof(REAL))) ||
        (st = cx_check_vector(fn, "grad", 0, grad, 3, count, 1, "count", sizeof(REAL))) ||
        (st = cx_check_vector(fn, "exp_avg", 0, exp_avg, 4, count, 1, "count", sizeof(REAL))) ||
        (st = cx_check_vector(fn, "exp_avg_sq", 0, exp_avg_sq, 5, count, 1, "count", sizeof(REAL))))
        return st;
    if (decay_mode < 0 || decay_mode > 2)
        return cx_illegal(fn, 6, "decay_mode", "must be 0 (none), 1 (L2) or 2 (decoupled), got %d", decay_mode);
    if (maximize != 0 && maximize != 1)
        return cx_illegal(fn, 14, "maximize", "must be 0 or 1, got %d", maximize);
#if CX_FMA_CLONES
    if (cx_cpu_has_fma()) {
        CX_FN(adam_fma)(count, param, grad, exp_avg, exp_avg_sq, decay_mode, decay, lerp_weight, beta2,
                        one_minus_beta2, bias_correction2_sqrt, eps, neg_step_size, maximize);
        return CEXTEND_OK;
    }
#endif
    CX_FN(adam_specialised)(count, param, grad, exp_avg, exp_avg_sq, decay_mode, decay, lerp_weight, beta2,
                            one_minus_beta2, bias_correction2_sqrt, eps, neg_step_size, maximize);
    return CEXTEND_OK;
}
