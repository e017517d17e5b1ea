/*
 * generic/batchnorm.c -- batch normalisation over (n, c, s) data, forward
 * (training statistics and the running-stat update in the same call, or
 * evaluation with the running stats) and backward.
 *
 * Channels are split across threads; each channel's sums run in index
 * order in one thread and in double, so results do not depend on the
 * thread count, and float32 statistics lose nothing to cancellation.
 */

/* The channel's sums keep CX_BN_LANES partial sums in double, element i of
 * each row going to lane i % CX_BN_LANES, added up in one fixed order at the
 * end: independent lanes let the additions overlap (one running sum waits
 * on the previous addition at every element), and the same order whatever
 * the layout, so a strided input gives the contiguous one's bits. */
#ifndef CX_BN_LANES
#define CX_BN_LANES 8
static double cx_bn_total(const double *lane)
{
    return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

/* What a channel sum adds for an element x: x itself, or (x - mean)^2. */
static inline __attribute__((always_inline)) double cx_bn_term(double x, double mean, int squared)
{
    const double d = x - mean;
    return squared ? d * d : x;
}
#endif

/* sum over the channel of x (squared 0), or of (x - mean)^2 (squared 1; a constant at each call,
 * so each copy is branch-free). */
static inline __attribute__((always_inline)) double CX_FN(cx_bn_sum_of)(int64_t n, int64_t s, const REAL *x,
                                                                       const int64_t *xs, int64_t ch, double mean,
                                                                       int squared)
{
    double lane[CX_BN_LANES] = {0};
    for (int64_t b = 0; b < n; ++b) {
        const REAL *row = x + b * xs[0] + ch * xs[1];
        const int64_t step = xs[2];
        int64_t i = 0;
        if (step == 1)
            for (; i + CX_BN_LANES <= s; i += CX_BN_LANES)
                for (int j = 0; j < CX_BN_LANES; ++j)
                    lane[j] += cx_bn_term(row[i + j], mean, squared);
        for (; i < s; ++i)
            lane[i % CX_BN_LANES] += cx_bn_term(row[i * step], mean, squared);
    }
    return cx_bn_total(lane);
}

/* sum over the channel of dy, and of dy * (x - mean) * invstd. */
static inline __attribute__((always_inline)) void CX_FN(cx_bn_grad_sums)(int64_t n, int64_t s, const REAL *dy,
                                                                         const int64_t *ds, const REAL *x,
                                                                         const int64_t *xs, int64_t ch, double mean,
                                                                         double invstd, double *sum_dy,
                                                                         double *sum_dy_xhat)
{
    double lane[CX_BN_LANES] = {0}, prod[CX_BN_LANES] = {0};
    for (int64_t b = 0; b < n; ++b) {
        const REAL *grow = dy + b * ds[0] + ch * ds[1], *xrow = x + b * xs[0] + ch * xs[1];
        const int64_t gstep = ds[2], xstep = xs[2];
        int64_t i = 0;
        if (gstep == 1 && xstep == 1) {
            for (; i + CX_BN_LANES <= s; i += CX_BN_LANES)
                for (int j = 0; j < CX_BN_LANES; ++j) {
                    const double g = grow[i + j];
                    lane[j] += g;
                    prod[j] += g * ((xrow[i + j] - mean) * invstd);
                }
        }
        for (; i < s; ++i) {
            const double g = grow[i * gstep];
            lane[i % CX_BN_LANES] += g;
            prod[i % CX_BN_LANES] += g * ((xrow[i * xstep] - mean) * invstd);
        }
    }
    *sum_dy = cx_bn_total(lane);
    *sum_dy_xhat = cx_bn_total(prod);
}

/* One channel of the forward pass: its statistics (training) or the
 * running ones, the running-stat update, and y. */
static inline __attribute__((always_inline)) void CX_FN(cx_bn_forward_channel)(
    int64_t n, int64_t c, int64_t s, const REAL *x, const int64_t *xs, const REAL *weight, const REAL *bias,
    REAL *running_mean, REAL *running_var, int training, double momentum, double eps, REAL *y, REAL *save_mean,
    REAL *save_invstd, int64_t ch)
{
    const int64_t m = n * s;
    double mean = 0, invstd = 0;
    if (training && m > 0) {
        mean = CX_FN(cx_bn_sum_of)(n, s, x, xs, ch, 0.0, 0) / (double)m;
        const double squares = CX_FN(cx_bn_sum_of)(n, s, x, xs, ch, mean, 1);
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
        const REAL *row = x + b * xs[0] + ch * xs[1];
        if (xs[2] == 1)
            for (int64_t i = 0; i < s; ++i)
                out[i] = (REAL)(row[i] * alpha + beta);
        else
            for (int64_t i = 0; i < s; ++i)
                out[i] = (REAL)(row[i * xs[2]] * alpha + beta);
    }
}

/* One channel of the backward pass: its sums, dweight, dbias and dx. */
static inline __attribute__((always_inline)) void CX_FN(cx_bn_backward_channel)(
    int64_t n, int64_t c, int64_t s, const REAL *dy, const int64_t *ds, const REAL *x, const int64_t *xs,
    const REAL *weight, const REAL *save_mean, const REAL *save_invstd, int training, REAL *dx, REAL *dweight,
    REAL *dbias, int64_t ch)
{
    const int64_t m = n * s;
    const int need_sums = dweight || dbias || (dx && training);
    const double mean = save_mean[ch], invstd = save_invstd[ch];
    double sum_dy = 0, sum_dy_xhat = 0;
    if (need_sums)
        CX_FN(cx_bn_grad_sums)(n, s, dy, ds, x, xs, ch, mean, invstd, &sum_dy, &sum_dy_xhat);
    if (dbias)
        dbias[ch] = (REAL)sum_dy;
    if (dweight)
        dweight[ch] = (REAL)sum_dy_xhat;
    if (!dx || m == 0)
        return;
    const double scale = (weight ? (double)weight[ch] : 1.0) * invstd;
    const double mean_dy = sum_dy / (double)m, mean_dy_xhat = sum_dy_xhat / (double)m;
    for (int64_t b = 0; b < n; ++b) {
        REAL *out = dx + (b * c + ch) * s;
        const REAL *grow = dy + b * ds[0] + ch * ds[1], *xrow = x + b * xs[0] + ch * xs[1];
        const int64_t gstep = ds[2], xstep = xs[2];
        if (!training)
            for (int64_t i = 0; i < s; ++i)
                out[i] = (REAL)(scale * (double)grow[i * gstep]);
        else if (gstep == 1 && xstep == 1)
            for (int64_t i = 0; i < s; ++i)
                out[i] = (REAL)(scale * ((double)grow[i] - mean_dy - ((xrow[i] - mean) * invstd) * mean_dy_xhat));
        else
            for (int64_t i = 0; i < s; ++i)
                out[i] = (REAL)(scale * ((double)grow[i * gstep] - mean_dy -
                                         ((xrow[i * xstep] - mean) * invstd) * mean_dy_xhat));
    }
}

/* Channels [lo, hi), compiled for plain x86-64 (or any CPU) and again for
 * AVX2 and AVX-512 (wider vectors, the same operations in the same order:
 * no contraction into FMAs under -std=c11, so the same bits); the threads'
 * loops stay outside them (an OpenMP loop's body is outlined without its
 * caller's target). */
#define CX_BN_CLONES(suffix, target)                                                                           \
    target static void CX_FN(cx_bn_forward_channels##suffix)(                                                  \
        int64_t n, int64_t c, int64_t s, const REAL *x, const int64_t *xs, const REAL *weight,                 \
        const REAL *bias, REAL *running_mean, REAL *running_var, int training, double momentum, double eps,    \
        REAL *y, REAL *save_mean, REAL *save_invstd, int64_t lo, int64_t hi)                                   \
    {                                                                                                          \
        for (int64_t ch = lo; ch < hi; ++ch)                                                                   \
            CX_FN(cx_bn_forward_channel)(n, c, s, x, xs, weight, bias, running_mean, running_var, training,    \
                                         momentum, eps, y, save_mean, save_invstd, ch);                        \
    }                                                                                                          \
    target static void CX_FN(cx_bn_backward_channels##suffix)(                                                 \
        int64_t n, int64_t c, int64_t s, const REAL *dy, const int64_t *ds, const REAL *x, const int64_t *xs,  \
        const REAL *weight, const REAL *save_mean, const REAL *save_invstd, int training, REAL *dx,            \
        REAL *dweight, REAL *dbias, int64_t lo, int64_t hi)                                                    \
    {                                                                                                          \
        for (int64_t ch = lo; ch < hi; ++ch)                                                                   \
            CX_FN(cx_bn_backward_channel)(n, c, s, dy, ds, x, xs, weight, save_mean, save_invstd, training,    \
                                          dx, dweight, dbias, ch);                                             \
    }
CX_BN_CLONES(, )
#if defined(CX_HAVE_X86_KERNELS)
CX_BN_CLONES(_avx2, CX_TARGET_AVX2)
CX_BN_CLONES(_avx512, CX_TARGET_AVX512)
#endif
#undef CX_BN_CLONES

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
    void (*channels)(int64_t, int64_t, int64_t, const REAL *, const int64_t *, const REAL *, const REAL *, REAL *,
                     REAL *, int, double, double, REAL *, REAL *, REAL *, int64_t, int64_t) =
        CX_FN_FOR_ISA(cx_bn_forward_channels);
    const int threads = cx_threads_for_elements(3.0 * (double)(n * s) * (double)c);
    CX_PARALLEL_FOR(for (int t = 0; t < threads; ++t) {
        channels(n, c, s, x, x_strides, weight, bias, running_mean, running_var, training, momentum, eps, y,
                 save_mean, save_invstd, c * t / threads, c * (t + 1) / threads);
    });
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
    void (*channels)(int64_t, int64_t, int64_t, const REAL *, const int64_t *, const REAL *, const int64_t *,
                     const REAL *, const REAL *, const REAL *, int, REAL *, REAL *, REAL *, int64_t, int64_t) =
        CX_FN_FOR_ISA(cx_bn_backward_channels);
    const int threads = cx_threads_for_elements(3.0 * (double)(n * s) * (double)c);
    CX_PARALLEL_FOR(for (int t = 0; t < threads; ++t) {
        channels(n, c, s, dy, dy_strides, x, x_strides, weight, save_mean, save_invstd, training, dx, dweight,
                 dbias, c * t / threads, c * (t + 1) / threads);
    });
    return CEXTEND_OK;
}
