/*
 * generic/batchnorm.c -- batch normalisation over (n, c, s) data, forward
 * (training statistics and the running-stat update in the same call, or
 * evaluation with the running stats) and backward.
 *
 * Channels are split across threads; each channel's sums run in index
 * order in one thread and in double, so results do not depend on the
 * thread count, and float32 statistics lose nothing to cancellation.
 */

/* x[b][ch][i] of data read through strides xs (batch, channel, spatial). */
#define AT(p, st, b, ch, i) (p)[(b) * (st)[0] + (ch) * (st)[1] + (i) * (st)[2]]

int CX_FN(cextend_batch_norm_forward)(int64_t n, int64_t c, int64_t s, const REAL *x, const int64_t *x_strides,
                                      const REAL *weight, const REAL *bias, REAL *running_mean,
                                      REAL *running_var, int training, double momentum, double eps,
                                      REAL *y, REAL *save_mean, REAL *save_invstd)
{
    static const char fn[] = "cextend_batch_norm_forward_" CX_STR(SFX);
    int st = cx_validate_batch_norm_forward(fn, sizeof(REAL), n, c, s, x, x_strides, running_mean,
                                            running_var, training, y);
    if (st)
        return st;
    const int64_t m = n * s;
    const int64_t *xs = x_strides;
    const int threads = cx_threads_for_elements(3.0 * (double)m * (double)c);
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (int64_t ch = 0; ch < c; ++ch) {
        double mean = 0, invstd = 0;
        if (training && m > 0) {
            double sum = 0, squares = 0;
            for (int64_t b = 0; b < n; ++b)
                for (int64_t i = 0; i < s; ++i)
                    sum += AT(x, xs, b, ch, i);
            mean = sum / (double)m;
            for (int64_t b = 0; b < n; ++b)
                for (int64_t i = 0; i < s; ++i) {
                    const double d = AT(x, xs, b, ch, i) - mean;
                    squares += d * d;
                }
            invstd = 1.0 / sqrt(squares / (double)m + eps);
            if (running_mean)
                running_mean[ch] = (REAL)((1.0 - momentum) * running_mean[ch] + momentum * mean);
            if (running_var)    /* the unbiased variance, as torch (NaN when m == 1) */
                running_var[ch] = (REAL)((1.0 - momentum) * running_var[ch] +
                                         momentum * (squares / (double)(m - 1)));
        } else if (!training) {
            mean = running_mean[ch];
            invstd = 1.0 / sqrt((double)running_var[ch] + eps);
        }
        if (save_mean)
            save_mean[ch] = (REAL)mean;
        if (save_invstd)
            save_invstd[ch] = (REAL)invstd;
        /* torch folds the statistics and the affine terms into one scale and
         * shift, y = x * alpha + beta, so an infinite weight or bias gives its
         * inf - inf = NaN where (x - mean) * scale + shift would not. */
        const double alpha = invstd * (weight ? (double)weight[ch] : 1.0);
        const double beta = (bias ? (double)bias[ch] : 0.0) - mean * alpha;
        for (int64_t b = 0; b < n; ++b) {
            REAL *out = y + (b * c + ch) * s;
            for (int64_t i = 0; i < s; ++i)
                out[i] = (REAL)(AT(x, xs, b, ch, i) * alpha + beta);
        }
    }
    return CEXTEND_OK;
}

int CX_FN(cextend_batch_norm_backward)(int64_t n, int64_t c, int64_t s, const REAL *dy, const int64_t *dy_strides,
                                       const REAL *x, const int64_t *x_strides, const REAL *weight,
                                       const REAL *save_mean, const REAL *save_invstd, int training,
                                       REAL *dx, REAL *dweight, REAL *dbias)
{
    static const char fn[] = "cextend_batch_norm_backward_" CX_STR(SFX);
    int st = cx_validate_batch_norm_backward(fn, sizeof(REAL), n, c, s, dy, dy_strides, x, x_strides,
                                             save_mean, save_invstd, training, dx);
    if (st)
        return st;
    const int64_t m = n * s;
    const int64_t *ds = dy_strides, *xs = x_strides;
    const int need_sums = dweight || dbias || (dx && training);
    const int threads = cx_threads_for_elements(3.0 * (double)m * (double)c);
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (int64_t ch = 0; ch < c; ++ch) {
        const double mean = save_mean[ch], invstd = save_invstd[ch];
        double sum_dy = 0, sum_dy_xhat = 0;
        if (need_sums)
            for (int64_t b = 0; b < n; ++b)
                for (int64_t i = 0; i < s; ++i) {
                    const double g = AT(dy, ds, b, ch, i);
                    sum_dy += g;
                    sum_dy_xhat += g * ((AT(x, xs, b, ch, i) - mean) * invstd);
                }
        if (dbias)
            dbias[ch] = (REAL)sum_dy;
        if (dweight)
            dweight[ch] = (REAL)sum_dy_xhat;
        if (!dx || m == 0)
            continue;
        const double scale = (weight ? (double)weight[ch] : 1.0) * invstd;
        const double mean_dy = sum_dy / (double)m, mean_dy_xhat = sum_dy_xhat / (double)m;
        for (int64_t b = 0; b < n; ++b) {
            REAL *out = dx + (b * c + ch) * s;
            for (int64_t i = 0; i < s; ++i) {
                const double g = AT(dy, ds, b, ch, i);
                if (training) {
                    const double xhat = (AT(x, xs, b, ch, i) - mean) * invstd;
                    out[i] = (REAL)(scale * (g - mean_dy - xhat * mean_dy_xhat));
                } else {
                    out[i] = (REAL)(scale * g);
                }
            }
        }
    }
    return CEXTEND_OK;
}

#undef AT
