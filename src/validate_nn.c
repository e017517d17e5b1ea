/*
 * validate_nn.c -- the argument checks of the convolution, pooling and
 * batch norm entry points, in one place (positions and names: cextend.h).
 * Everything is checked before any memory is touched, including that every
 * index the kernels will compute fits in an int64_t.
 */
#include "nn_internal.h"

/* product of n values, or -1 if it overflows int64 (values are >= 0). */
static int64_t product(int count, const int64_t *values)
{
    int64_t total = 1;
    for (int i = 0; i < count; ++i)
        if (__builtin_mul_overflow(total, values[i], &total))
            return -1;
    return total;
}

static int bytes_fit(int64_t elements, size_t es)
{
    int64_t bytes;
    return elements >= 0 && !__builtin_mul_overflow(elements, (int64_t)es, &bytes) && bytes <= PTRDIFF_MAX;
}

int cx_check_image(const char *fn, const char *name, int nullable,
                   const void *ptr, int ptr_pos, const int64_t *strides, int strides_pos,
                   const char *strides_name, int64_t n, int64_t c, int64_t h, int64_t w, size_t es)
{
    const int64_t dims[4] = {n, c, h, w};
    const int has_elements = n > 0 && c > 0 && h > 0 && w > 0;
    if (ptr == NULL && has_elements && !nullable)
        return cx_illegal(fn, ptr_pos, name, "is NULL but the (%lld, %lld, %lld, %lld) tensor has elements",
                          (long long)n, (long long)c, (long long)h, (long long)w);
    if (ptr == NULL || !has_elements)
        return 0;
    if (strides == NULL)
        return cx_illegal(fn, strides_pos, strides_name, "is NULL; %s needs its 4 strides", name);
    int64_t span = 1;
    for (int d = 0; d < 4; ++d) {
        int64_t reach;
        if (strides[d] < 0)
            return cx_illegal(fn, strides_pos, strides_name, "%s[%d] = %lld must be >= 0",
                              strides_name, d, (long long)strides[d]);
        if (__builtin_mul_overflow(dims[d] - 1, strides[d], &reach) ||
            __builtin_add_overflow(span, reach, &span))
            return cx_illegal(fn, strides_pos, strides_name, "%s spans more than PTRDIFF_MAX bytes", name);
    }
    if (!bytes_fit(span, es))
        return cx_illegal(fn, strides_pos, strides_name, "%s spans more than PTRDIFF_MAX bytes", name);
    return 0;
}

int cx_check_dense(const char *fn, const char *name, int nullable, const void *ptr, int ptr_pos,
                   int ndim, const int64_t *dims, int size_pos, const char *size_name, size_t es)
{
    const int64_t count = product(ndim, dims);
    if (!bytes_fit(count, es))
        return cx_illegal(fn, size_pos, size_name, "the %d-D %s would overflow a byte count", ndim, name);
    if (ptr == NULL && count > 0 && !nullable)
        return cx_illegal(fn, ptr_pos, name, "is NULL but holds %lld elements", (long long)count);
    return 0;
}

/* Positions of the sizes shared by every image entry point. */
static int check_sizes(const char *fn, int count, const int64_t *values, const char *const *names,
                       const int64_t *minimum)
{
    for (int i = 0; i < count; ++i)
        if (values[i] < minimum[i])
            return cx_illegal(fn, i + 1, names[i], "must be >= %lld, got %lld",
                              (long long)minimum[i], (long long)values[i]);
    return 0;
}

/* The farthest input coordinate a window reaches, (out - 1) * stride +
 * (k - 1) * dilation, and the padding subtracted from it, fit in int64. */
static int check_reach(const char *fn, int out_pos, const char *out_name, int64_t out, int64_t stride,
                       int64_t k, int64_t dilation)
{
    int64_t a, b;
    if (out > 0 && (__builtin_mul_overflow(out - 1, stride, &a) ||
                    __builtin_mul_overflow(k - 1, dilation, &b) || __builtin_add_overflow(a, b, &a) ||
                    a > INT64_MAX / 4))
        return cx_illegal(fn, out_pos, out_name, "window positions overflow int64 (%s %lld, stride %lld, "
                          "kernel %lld, dilation %lld)", out_name, (long long)out, (long long)stride,
                          (long long)k, (long long)dilation);
    return 0;
}

static int check_conv_geometry(const char *fn, size_t es, const cx_conv2d_geometry *g)
{
    static const char *const names[16] = {"n", "c_in", "h", "w", "c_out", "kh", "kw", "h_out", "w_out",
                                          "stride_h", "stride_w", "pad_h", "pad_w", "dilation_h",
                                          "dilation_w", "groups"};
    static const int64_t minimum[16] = {0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 1};
    const int64_t values[16] = {g->n, g->c_in, g->h, g->w, g->c_out, g->kh, g->kw, g->h_out, g->w_out,
                                g->stride_h, g->stride_w, g->pad_h, g->pad_w, g->dilation_h,
                                g->dilation_w, g->groups};
    int st;
    if ((st = check_sizes(fn, 16, values, names, minimum)))
        return st;
    if (g->c_in % g->groups || g->c_out % g->groups)
        return cx_illegal(fn, 16, "groups", "must divide c_in = %lld and c_out = %lld, got %lld",
                          (long long)g->c_in, (long long)g->c_out, (long long)g->groups);
    const int64_t x_dims[4] = {g->n, g->c_in, g->h, g->w};
    const int64_t y_dims[4] = {g->n, g->c_out, g->h_out, g->w_out};
    const int64_t w_dims[4] = {g->c_out, g->c_in / g->groups, g->kh, g->kw};
    if (!bytes_fit(product(4, x_dims), es))
        return cx_illegal(fn, 3, "h", "the input (n, c_in, h, w) would overflow a byte count");
    if (!bytes_fit(product(4, w_dims), es))
        return cx_illegal(fn, 6, "kh", "the weight (c_out, c_in/groups, kh, kw) would overflow a byte count");
    if (!bytes_fit(product(4, y_dims), es))
        return cx_illegal(fn, 8, "h_out", "the output (n, c_out, h_out, w_out) would overflow a byte count");
    if ((st = check_reach(fn, 8, "h_out", g->h_out, g->stride_h, g->kh, g->dilation_h)) ||
        (st = check_reach(fn, 9, "w_out", g->w_out, g->stride_w, g->kw, g->dilation_w)))
        return st;
    if (g->pad_h > INT64_MAX / 4)
        return cx_illegal(fn, 12, "pad_h", "is too large: %lld", (long long)g->pad_h);
    if (g->pad_w > INT64_MAX / 4)
        return cx_illegal(fn, 13, "pad_w", "is too large: %lld", (long long)g->pad_w);
    return 0;
}

int cx_validate_conv2d_forward(const char *fn, size_t es, const cx_conv2d_geometry *g,
                               const void *x, const int64_t *x_strides, const void *weight,
                               const void *bias, const void *y)
{
    int st;
    if ((st = check_conv_geometry(fn, es, g)))
        return st;
    const int64_t w_dims[4] = {g->c_out, g->c_in / g->groups, g->kh, g->kw};
    const int64_t y_dims[4] = {g->n, g->c_out, g->h_out, g->w_out};
    if ((st = cx_check_image(fn, "x", 0, x, 17, x_strides, 18, "x_strides", g->n, g->c_in, g->h, g->w, es)) ||
        (st = cx_check_dense(fn, "weight", 0, weight, 19, 4, w_dims, 6, "kh", es)) ||
        (st = cx_check_dense(fn, "bias", 1, bias, 20, 1, &g->c_out, 5, "c_out", es)) ||
        (st = cx_check_dense(fn, "y", 0, y, 21, 4, y_dims, 8, "h_out", es)))
        return st;
    return 0;
}

int cx_validate_conv2d_backward(const char *fn, size_t es, const cx_conv2d_geometry *g,
                                const void *dy, const int64_t *dy_strides,
                                const void *x, const int64_t *x_strides, const void *weight,
                                const void *dx, const void *dweight, const void *dbias)
{
    int st;
    if ((st = check_conv_geometry(fn, es, g)))
        return st;
    const int64_t x_dims[4] = {g->n, g->c_in, g->h, g->w};
    const int64_t w_dims[4] = {g->c_out, g->c_in / g->groups, g->kh, g->kw};
    /* x is read only for dweight, weight only for dx. */
    if ((st = cx_check_image(fn, "dy", 0, dy, 17, dy_strides, 18, "dy_strides",
                             g->n, g->c_out, g->h_out, g->w_out, es)) ||
        (st = cx_check_image(fn, "x", dweight == NULL, x, 19, x_strides, 20, "x_strides",
                             g->n, g->c_in, g->h, g->w, es)) ||
        (st = cx_check_dense(fn, "weight", dx == NULL, weight, 21, 4, w_dims, 6, "kh", es)) ||
        (st = cx_check_dense(fn, "dx", 1, dx, 22, 4, x_dims, 3, "h", es)) ||
        (st = cx_check_dense(fn, "dweight", 1, dweight, 23, 4, w_dims, 6, "kh", es)) ||
        (st = cx_check_dense(fn, "dbias", 1, dbias, 24, 1, &g->c_out, 5, "c_out", es)))
        return st;
    return 0;
}

/* The pooling geometry, positions 1-14 of the max pool (avg: no dilation,
 * so its later positions shift down by two and are handled by the caller). */
static int check_pool_geometry(const char *fn, size_t es, int kind, const cx_pool2d_geometry *g)
{
    static const char *const names[14] = {"n", "c", "h", "w", "h_out", "w_out", "kh", "kw", "stride_h",
                                          "stride_w", "pad_h", "pad_w", "dilation_h", "dilation_w"};
    static const int64_t minimum[14] = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 1, 1};
    const int64_t values[14] = {g->n, g->c, g->h, g->w, g->h_out, g->w_out, g->kh, g->kw, g->stride_h,
                                g->stride_w, g->pad_h, g->pad_w, g->dilation_h, g->dilation_w};
    int st;
    if ((st = check_sizes(fn, kind == 0 ? 14 : 12, values, names, minimum)))
        return st;
    const int64_t x_dims[4] = {g->n, g->c, g->h, g->w};
    const int64_t y_dims[4] = {g->n, g->c, g->h_out, g->w_out};
    if (!bytes_fit(product(4, x_dims), es) || !bytes_fit(product(4, x_dims), sizeof(int64_t)))
        return cx_illegal(fn, 3, "h", "the input (n, c, h, w) would overflow a byte count");
    if (!bytes_fit(product(4, y_dims), es) || !bytes_fit(product(4, y_dims), sizeof(int64_t)))
        return cx_illegal(fn, 5, "h_out", "the output (n, c, h_out, w_out) would overflow a byte count");
    if ((st = check_reach(fn, 5, "h_out", g->h_out, g->stride_h, g->kh, g->dilation_h)) ||
        (st = check_reach(fn, 6, "w_out", g->w_out, g->stride_w, g->kw, g->dilation_w)))
        return st;
    if (g->pad_h > INT64_MAX / 4)
        return cx_illegal(fn, 11, "pad_h", "is too large: %lld", (long long)g->pad_h);
    if (g->pad_w > INT64_MAX / 4)
        return cx_illegal(fn, 12, "pad_w", "is too large: %lld", (long long)g->pad_w);
    return 0;
}

static int check_avg_options(const char *fn, int count_include_pad, int64_t divisor_override)
{
    if (count_include_pad != 0 && count_include_pad != 1)
        return cx_illegal(fn, 13, "count_include_pad", "must be 0 or 1, got %d", count_include_pad);
    if (divisor_override < 0)
        return cx_illegal(fn, 14, "divisor_override", "must be >= 0 (0: none), got %lld",
                          (long long)divisor_override);
    return 0;
}

int cx_validate_pool2d_forward(const char *fn, size_t es, int kind, const cx_pool2d_geometry *g,
                               int count_include_pad, int64_t divisor_override,
                               const void *x, const int64_t *x_strides, const void *y, const void *indices)
{
    int st;
    if ((st = check_pool_geometry(fn, es, kind, g)))
        return st;
    if (kind == 1 && (st = check_avg_options(fn, count_include_pad, divisor_override)))
        return st;
    const int64_t y_dims[4] = {g->n, g->c, g->h_out, g->w_out};
    if ((st = cx_check_image(fn, "x", 0, x, 15, x_strides, 16, "x_strides", g->n, g->c, g->h, g->w, es)) ||
        (st = cx_check_dense(fn, "y", 0, y, 17, 4, y_dims, 5, "h_out", es)))
        return st;
    if (kind == 0 && (st = cx_check_dense(fn, "indices", 1, indices, 18, 4, y_dims, 5, "h_out", sizeof(int64_t))))
        return st;
    return 0;
}

/* The max pool backward has no window: positions 1-6 only. */
int cx_validate_max_pool2d_backward(const char *fn, size_t es, const cx_pool2d_geometry *g,
                                    const void *dy, const int64_t *dy_strides, const void *indices,
                                    const void *dx)
{
    static const char *const names[6] = {"n", "c", "h", "w", "h_out", "w_out"};
    static const int64_t minimum[6] = {0, 0, 0, 0, 0, 0};
    const int64_t values[6] = {g->n, g->c, g->h, g->w, g->h_out, g->w_out};
    int st;
    if ((st = check_sizes(fn, 6, values, names, minimum)))
        return st;
    const int64_t x_dims[4] = {g->n, g->c, g->h, g->w};
    const int64_t y_dims[4] = {g->n, g->c, g->h_out, g->w_out};
    if ((st = cx_check_image(fn, "dy", 0, dy, 7, dy_strides, 8, "dy_strides", g->n, g->c, g->h_out, g->w_out, es)) ||
        (st = cx_check_dense(fn, "indices", 0, indices, 9, 4, y_dims, 5, "h_out", sizeof(int64_t))) ||
        (st = cx_check_dense(fn, "dx", 0, dx, 10, 4, x_dims, 3, "h", es)))
        return st;
    return 0;
}

int cx_validate_avg_pool2d_backward(const char *fn, size_t es, const cx_pool2d_geometry *g,
                                    int count_include_pad, int64_t divisor_override,
                                    const void *dy, const int64_t *dy_strides, const void *dx)
{
    int st;
    if ((st = check_pool_geometry(fn, es, 1, g)) || (st = check_avg_options(fn, count_include_pad, divisor_override)))
        return st;
    const int64_t x_dims[4] = {g->n, g->c, g->h, g->w};
    if ((st = cx_check_image(fn, "dy", 0, dy, 15, dy_strides, 16, "dy_strides", g->n, g->c, g->h_out, g->w_out, es)) ||
        (st = cx_check_dense(fn, "dx", 0, dx, 17, 4, x_dims, 3, "h", es)))
        return st;
    return 0;
}

int cx_validate_adaptive_avg_pool2d(const char *fn, size_t es, int backward, int64_t n, int64_t c,
                                    int64_t h, int64_t w, int64_t h_out, int64_t w_out,
                                    const void *in, const int64_t *in_strides, const void *out)
{
    static const char *const names[6] = {"n", "c", "h", "w", "h_out", "w_out"};
    static const int64_t minimum[6] = {0, 0, 0, 0, 0, 0};
    const int64_t values[6] = {n, c, h, w, h_out, w_out};
    int st;
    if ((st = check_sizes(fn, 6, values, names, minimum)))
        return st;
    const int64_t x_dims[4] = {n, c, h, w};
    const int64_t y_dims[4] = {n, c, h_out, w_out};
    if (!bytes_fit(product(4, x_dims), es))
        return cx_illegal(fn, 3, "h", "the input (n, c, h, w) would overflow a byte count");
    if (!bytes_fit(product(4, y_dims), es))
        return cx_illegal(fn, 5, "h_out", "the output (n, c, h_out, w_out) would overflow a byte count");
    /* Window bounds compute (i + 1) * h: keep it inside int64. */
    if ((h_out > 0 && h > INT64_MAX / h_out) || (w_out > 0 && w > INT64_MAX / w_out))
        return cx_illegal(fn, 5, "h_out", "window bounds overflow int64");
    const int pooled_has_elements = n > 0 && c > 0 && h_out > 0 && w_out > 0;
    if (pooled_has_elements && h == 0)
        return cx_illegal(fn, 3, "h", "must be >= 1 when the pooled output has elements (an empty window)");
    if (pooled_has_elements && w == 0)
        return cx_illegal(fn, 4, "w", "must be >= 1 when the pooled output has elements (an empty window)");
    if (!backward) {
        if ((st = cx_check_image(fn, "x", 0, in, 7, in_strides, 8, "x_strides", n, c, h, w, es)) ||
            (st = cx_check_dense(fn, "y", 0, out, 9, 4, y_dims, 5, "h_out", es)))
            return st;
    } else {
        if ((st = cx_check_image(fn, "dy", 0, in, 7, in_strides, 8, "dy_strides", n, c, h_out, w_out, es)) ||
            (st = cx_check_dense(fn, "dx", 0, out, 9, 4, x_dims, 3, "h", es)))
            return st;
    }
    return 0;
}

/* (n, c, s) data through strides[3] (each >= 0). */
static int check_channels(const char *fn, const char *name, int nullable, const void *ptr, int ptr_pos,
                          const int64_t *strides, int strides_pos, const char *strides_name,
                          int64_t n, int64_t c, int64_t s, size_t es)
{
    const int64_t four[4] = {strides ? strides[0] : 0, strides ? strides[1] : 0, 0, strides ? strides[2] : 0};
    return cx_check_image(fn, name, nullable, ptr, ptr_pos, strides ? four : NULL, strides_pos,
                          strides_name, n, c, 1, s, es);
}

static int check_bn_sizes(const char *fn, size_t es, int64_t n, int64_t c, int64_t s)
{
    static const char *const names[3] = {"n", "c", "s"};
    static const int64_t minimum[3] = {0, 0, 0};
    const int64_t values[3] = {n, c, s};
    int st;
    if ((st = check_sizes(fn, 3, values, names, minimum)))
        return st;
    if (!bytes_fit(product(3, values), es))
        return cx_illegal(fn, 3, "s", "the (n, c, s) tensor would overflow a byte count");
    return 0;
}

int cx_validate_batch_norm_forward(const char *fn, size_t es, int64_t n, int64_t c, int64_t s,
                                   const void *x, const int64_t *x_strides,
                                   const void *running_mean, const void *running_var,
                                   int training, const void *y)
{
    int st;
    if ((st = check_bn_sizes(fn, es, n, c, s)))
        return st;
    const int64_t dims[3] = {n, c, s};
    if ((st = check_channels(fn, "x", 0, x, 4, x_strides, 5, "x_strides", n, c, s, es)))
        return st;
    if (training != 0 && training != 1)
        return cx_illegal(fn, 10, "training", "must be 0 or 1, got %d", training);
    if (!training && c > 0 && running_mean == NULL)
        return cx_illegal(fn, 8, "running_mean", "is NULL but training is 0 (evaluation needs the running stats)");
    if (!training && c > 0 && running_var == NULL)
        return cx_illegal(fn, 9, "running_var", "is NULL but training is 0 (evaluation needs the running stats)");
    if ((st = cx_check_dense(fn, "y", 0, y, 13, 3, dims, 3, "s", es)))
        return st;
    return 0;
}

int cx_validate_batch_norm_backward(const char *fn, size_t es, int64_t n, int64_t c, int64_t s,
                                    const void *dy, const int64_t *dy_strides,
                                    const void *x, const int64_t *x_strides,
                                    const void *save_mean, const void *save_invstd,
                                    int training, const void *dx)
{
    int st;
    if ((st = check_bn_sizes(fn, es, n, c, s)))
        return st;
    if ((st = check_channels(fn, "dy", 0, dy, 4, dy_strides, 5, "dy_strides", n, c, s, es)) ||
        (st = check_channels(fn, "x", 0, x, 6, x_strides, 7, "x_strides", n, c, s, es)))
        return st;
    if (c > 0 && save_mean == NULL)
        return cx_illegal(fn, 9, "save_mean", "is NULL but c = %lld", (long long)c);
    if (c > 0 && save_invstd == NULL)
        return cx_illegal(fn, 10, "save_invstd", "is NULL but c = %lld", (long long)c);
    if (training != 0 && training != 1)
        return cx_illegal(fn, 11, "training", "must be 0 or 1, got %d", training);
    (void)dx;
    return 0;
}
