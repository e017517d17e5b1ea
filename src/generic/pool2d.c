/*
 * generic/pool2d.c -- max, average and adaptive average pooling over the
 * (h, w) planes of an (n, c, h, w) tensor, forward and backward, with
 * torch's window arithmetic (aten/src/ATen/native/cpu: MaxPoolKernel.cpp, AvgPoolKernel.cpp,
 * AdaptiveAvgPoolKernel.cpp).
 *
 * Planes are split across threads; each output (forward) or input-gradient
 * plane (backward) is computed by one thread in index order, so results do
 * not depend on the thread count.  Sums are accumulated in double.
 */

#ifndef CX_POOL_SHARED_HELPERS
#define CX_POOL_SHARED_HELPERS
static inline int64_t cx_pool_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t cx_pool_max(int64_t a, int64_t b) { return a > b ? a : b; }

/* The first in-image position of a dilated window starting at `start`
 * (torch: while (start < 0) start += dilation). */
static inline int64_t cx_first_inside(int64_t start, int64_t dilation)
{
    return start >= 0 ? start : start + ((-start + dilation - 1) / dilation) * dilation;
}

/* row * w + col, saturating: an empty window's index can lie far past the
 * plane, where only its value (never used to address memory) matters. */
static inline int64_t cx_flat_index(int64_t row, int64_t w, int64_t col)
{
    int64_t r;
    if (__builtin_mul_overflow(row, w, &r) || __builtin_add_overflow(r, col, &r))
        return INT64_MAX;
    return r;
}

/* torch's adaptive pooling window [start, end) of output o of out over size. */
static inline int64_t cx_adaptive_start(int64_t o, int64_t out, int64_t size) { return (o * size) / out; }
static inline int64_t cx_adaptive_end(int64_t o, int64_t out, int64_t size)
{
    return ((o + 1) * size + out - 1) / out;
}

/* The avg pool window of output (oh, ow): in-image bounds and divisor. */
typedef struct {
    int64_t h0, h1, w0, w1;
    double divisor;
} cx_avg_window;

static inline cx_avg_window cx_avg_window_at(const cx_pool2d_geometry *g, int count_include_pad,
                                             int64_t divisor_override, int64_t oh, int64_t ow)
{
    cx_avg_window win;
    int64_t h0 = oh * g->stride_h - g->pad_h, w0 = ow * g->stride_w - g->pad_w;
    int64_t h1 = cx_pool_min(h0 + g->kh, g->h + g->pad_h), w1 = cx_pool_min(w0 + g->kw, g->w + g->pad_w);
    const int64_t pool_size = (h1 - h0) * (w1 - w0);
    win.h0 = cx_pool_max(h0, 0);
    win.w0 = cx_pool_max(w0, 0);
    win.h1 = cx_pool_min(h1, g->h);
    win.w1 = cx_pool_min(w1, g->w);
    if (divisor_override > 0)
        win.divisor = (double)divisor_override;
    else if (count_include_pad)
        win.divisor = (double)pool_size;
    else
        win.divisor = (double)((win.h1 - win.h0) * (win.w1 - win.w0));
    return win;
}
#endif

/* max_pool2d's common 2x2, stride 2 window over rows of unit stride, each window inside the
 * plane: the generic loop's scan (row by row; a NaN always replaces, else only a strictly larger
 * value) written out for the four values, so the results and indices are the generic loop's. */
static void CX_FN(max_pool_2x2)(const REAL *plane, int64_t row_stride, int64_t w, int64_t h_out,
                                int64_t w_out, REAL *out, int64_t *idx)
{
    for (int64_t oh = 0; oh < h_out; ++oh) {
        const REAL *top = plane + 2 * oh * row_stride, *bottom = top + row_stride;
        const int64_t base = 2 * oh * w;
        for (int64_t ow = 0; ow < w_out; ++ow) {
            const REAL v[4] = {top[2 * ow], top[2 * ow + 1], bottom[2 * ow], bottom[2 * ow + 1]};
            REAL best_value = v[0];         /* -inf < v[0] or v[0] is NaN: the first always wins */
            int best = 0;
            /* selects, not branches: on real data which value wins is unpredictable */
            for (int k = 1; k < 4; ++k) {
                const int take = (v[k] > best_value) | (v[k] != v[k]);
                best_value = take ? v[k] : best_value;
                best = take ? k : best;
            }
            out[oh * w_out + ow] = best_value;
            if (idx)
                idx[oh * w_out + ow] = base + (best >> 1) * w + 2 * ow + (best & 1);
        }
    }
}

int CX_FN(cextend_max_pool2d_forward)(int64_t n, int64_t c, int64_t h, int64_t w, int64_t h_out, int64_t w_out,
                                      int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w,
                                      int64_t pad_h, int64_t pad_w, int64_t dilation_h, int64_t dilation_w,
                                      const REAL *x, const int64_t *x_strides, REAL *y, int64_t *indices)
{
    static const char fn[] = "cextend_max_pool2d_forward_" CX_STR(SFX);
    const cx_pool2d_geometry g = {n, c, h, w, h_out, w_out, kh, kw, stride_h, stride_w, pad_h, pad_w,
                                  dilation_h, dilation_w};
    int st = cx_validate_pool2d_forward(fn, sizeof(REAL), 0, &g, 0, 0, x, x_strides, y, indices);
    if (st)
        return st;
    const int64_t planes = n * c, L = h_out * w_out;
    if (planes == 0 || L == 0)
        return CEXTEND_OK;
    const int64_t *xs = x_strides;
    const int threads = cx_threads_for_elements((double)planes * L * kh * kw);
    const int two_by_two = kh == 2 && kw == 2 && stride_h == 2 && stride_w == 2 && pad_h == 0 && pad_w == 0 &&
                           dilation_h == 1 && dilation_w == 1 && xs[3] == 1 && 2 * h_out <= h && 2 * w_out <= w;
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (int64_t pc = 0; pc < planes; ++pc) {
        const REAL *plane = x + (pc / c) * xs[0] + (pc % c) * xs[1];
        REAL *out = y + pc * L;
        int64_t *idx = indices ? indices + pc * L : NULL;
        if (two_by_two) {
            CX_FN(max_pool_2x2)(plane, xs[2], w, h_out, w_out, out, idx);
            continue;
        }
        for (int64_t oh = 0; oh < h_out; ++oh) {
            const int64_t start_h = oh * stride_h - pad_h;
            const int64_t h1 = cx_pool_min(start_h + (kh - 1) * dilation_h + 1, h);
            const int64_t h0 = cx_first_inside(start_h, dilation_h);
            for (int64_t ow = 0; ow < w_out; ++ow) {
                const int64_t start_w = ow * stride_w - pad_w;
                const int64_t w1 = cx_pool_min(start_w + (kw - 1) * dilation_w + 1, w);
                const int64_t w0 = cx_first_inside(start_w, dilation_w);
                /* torch's rule: a NaN always replaces, so the last NaN wins;
                 * otherwise only a strictly larger value does. */
                int64_t best = cx_flat_index(h0, w, w0);
                REAL best_value = -(REAL)INFINITY;
                for (int64_t ih = h0; ih < h1; ih += dilation_h)
                    for (int64_t iw = w0; iw < w1; iw += dilation_w) {
                        const REAL value = plane[ih * xs[2] + iw * xs[3]];
                        if (value > best_value || value != value) {
                            best_value = value;
                            best = ih * w + iw;
                        }
                    }
                out[oh * w_out + ow] = best_value;
                if (idx)
                    idx[oh * w_out + ow] = best;
            }
        }
    }
    return CEXTEND_OK;
}

int CX_FN(cextend_max_pool2d_backward)(int64_t n, int64_t c, int64_t h, int64_t w, int64_t h_out, int64_t w_out,
                                       const REAL *dy, const int64_t *dy_strides, const int64_t *indices,
                                       REAL *dx)
{
    static const char fn[] = "cextend_max_pool2d_backward_" CX_STR(SFX);
    const cx_pool2d_geometry g = {n, c, h, w, h_out, w_out, 1, 1, 1, 1, 0, 0, 1, 1};
    int st = cx_validate_max_pool2d_backward(fn, sizeof(REAL), &g, dy, dy_strides, indices, dx);
    if (st)
        return st;
    const int64_t planes = n * c, L = h_out * w_out, size = h * w;
    if (planes == 0 || size == 0)
        return CEXTEND_OK;
    const int64_t *ds = dy_strides;
    const int threads = cx_threads_for_elements((double)planes * (L + size));
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (int64_t pc = 0; pc < planes; ++pc) {
        REAL *plane = dx + pc * size;
        for (int64_t e = 0; e < size; ++e)
            plane[e] = 0;
        if (L == 0)
            continue;
        const REAL *grad = dy + (pc / c) * ds[0] + (pc % c) * ds[1];
        const int64_t *idx = indices + pc * L;
        for (int64_t oh = 0; oh < h_out; ++oh)
            for (int64_t ow = 0; ow < w_out; ++ow) {
                const int64_t at = idx[oh * w_out + ow];
                if (at >= 0 && at < size)
                    plane[at] += grad[oh * ds[2] + ow * ds[3]];
            }
    }
    return CEXTEND_OK;
}

int CX_FN(cextend_avg_pool2d_forward)(int64_t n, int64_t c, int64_t h, int64_t w, int64_t h_out, int64_t w_out,
                                      int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w,
                                      int64_t pad_h, int64_t pad_w, int count_include_pad, int64_t divisor_override,
                                      const REAL *x, const int64_t *x_strides, REAL *y)
{
    static const char fn[] = "cextend_avg_pool2d_forward_" CX_STR(SFX);
    const cx_pool2d_geometry g = {n, c, h, w, h_out, w_out, kh, kw, stride_h, stride_w, pad_h, pad_w, 1, 1};
    int st = cx_validate_pool2d_forward(fn, sizeof(REAL), 1, &g, count_include_pad, divisor_override,
                                        x, x_strides, y, NULL);
    if (st)
        return st;
    const int64_t planes = n * c, L = h_out * w_out;
    if (planes == 0 || L == 0)
        return CEXTEND_OK;
    const int64_t *xs = x_strides;
    const int threads = cx_threads_for_elements((double)planes * L * kh * kw);
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (int64_t pc = 0; pc < planes; ++pc) {
        const REAL *plane = x + (pc / c) * xs[0] + (pc % c) * xs[1];
        REAL *out = y + pc * L;
        for (int64_t oh = 0; oh < h_out; ++oh)
            for (int64_t ow = 0; ow < w_out; ++ow) {
                const cx_avg_window win = cx_avg_window_at(&g, count_include_pad, divisor_override, oh, ow);
                if (win.h0 >= win.h1 || win.w0 >= win.w1) {
                    out[oh * w_out + ow] = 0;
                    continue;
                }
                double sum = 0;
                for (int64_t ih = win.h0; ih < win.h1; ++ih)
                    for (int64_t iw = win.w0; iw < win.w1; ++iw)
                        sum += plane[ih * xs[2] + iw * xs[3]];
                out[oh * w_out + ow] = (REAL)(sum / win.divisor);
            }
    }
    return CEXTEND_OK;
}

int CX_FN(cextend_avg_pool2d_backward)(int64_t n, int64_t c, int64_t h, int64_t w, int64_t h_out, int64_t w_out,
                                       int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w,
                                       int64_t pad_h, int64_t pad_w, int count_include_pad, int64_t divisor_override,
                                       const REAL *dy, const int64_t *dy_strides, REAL *dx)
{
    static const char fn[] = "cextend_avg_pool2d_backward_" CX_STR(SFX);
    const cx_pool2d_geometry g = {n, c, h, w, h_out, w_out, kh, kw, stride_h, stride_w, pad_h, pad_w, 1, 1};
    int st = cx_validate_avg_pool2d_backward(fn, sizeof(REAL), &g, count_include_pad, divisor_override,
                                             dy, dy_strides, dx);
    if (st)
        return st;
    const int64_t planes = n * c, L = h_out * w_out, size = h * w;
    if (planes == 0 || size == 0)
        return CEXTEND_OK;
    const int64_t *ds = dy_strides;
    const int threads = cx_threads_for_elements((double)planes * (L * kh * kw + size));
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (int64_t pc = 0; pc < planes; ++pc) {
        REAL *plane = dx + pc * size;
        for (int64_t e = 0; e < size; ++e)
            plane[e] = 0;
        if (L == 0)
            continue;
        const REAL *grad = dy + (pc / c) * ds[0] + (pc % c) * ds[1];
        for (int64_t oh = 0; oh < h_out; ++oh)
            for (int64_t ow = 0; ow < w_out; ++ow) {
                const cx_avg_window win = cx_avg_window_at(&g, count_include_pad, divisor_override, oh, ow);
                if (win.h0 >= win.h1 || win.w0 >= win.w1)
                    continue;
                const REAL share = (REAL)(grad[oh * ds[2] + ow * ds[3]] / win.divisor);
                for (int64_t ih = win.h0; ih < win.h1; ++ih)
                    for (int64_t iw = win.w0; iw < win.w1; ++iw)
                        plane[ih * w + iw] += share;
            }
    }
    return CEXTEND_OK;
}

int CX_FN(cextend_adaptive_avg_pool2d_forward)(int64_t n, int64_t c, int64_t h, int64_t w, int64_t h_out,
                                               int64_t w_out, const REAL *x, const int64_t *x_strides, REAL *y)
{
    static const char fn[] = "cextend_adaptive_avg_pool2d_forward_" CX_STR(SFX);
    int st = cx_validate_adaptive_avg_pool2d(fn, sizeof(REAL), 0, n, c, h, w, h_out, w_out, x, x_strides, y);
    if (st)
        return st;
    const int64_t planes = n * c, L = h_out * w_out;
    if (planes == 0 || L == 0)
        return CEXTEND_OK;
    const int64_t *xs = x_strides;
    const int threads = cx_threads_for_elements((double)planes * (L + h * w));
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (int64_t pc = 0; pc < planes; ++pc) {
        const REAL *plane = x + (pc / c) * xs[0] + (pc % c) * xs[1];
        REAL *out = y + pc * L;
        for (int64_t oh = 0; oh < h_out; ++oh) {
            const int64_t h0 = cx_adaptive_start(oh, h_out, h), h1 = cx_adaptive_end(oh, h_out, h);
            for (int64_t ow = 0; ow < w_out; ++ow) {
                const int64_t w0 = cx_adaptive_start(ow, w_out, w), w1 = cx_adaptive_end(ow, w_out, w);
                double sum = 0;
                for (int64_t ih = h0; ih < h1; ++ih)
                    for (int64_t iw = w0; iw < w1; ++iw)
                        sum += plane[ih * xs[2] + iw * xs[3]];
                out[oh * w_out + ow] = (REAL)(sum / (double)((h1 - h0) * (w1 - w0)));
            }
        }
    }
    return CEXTEND_OK;
}

int CX_FN(cextend_adaptive_avg_pool2d_backward)(int64_t n, int64_t c, int64_t h, int64_t w, int64_t h_out,
                                                int64_t w_out, const REAL *dy, const int64_t *dy_strides, REAL *dx)
{
    static const char fn[] = "cextend_adaptive_avg_pool2d_backward_" CX_STR(SFX);
    int st = cx_validate_adaptive_avg_pool2d(fn, sizeof(REAL), 1, n, c, h, w, h_out, w_out, dy, dy_strides, dx);
    if (st)
        return st;
    const int64_t planes = n * c, L = h_out * w_out, size = h * w;
    if (planes == 0 || size == 0)
        return CEXTEND_OK;
    const int64_t *ds = dy_strides;
    const int threads = cx_threads_for_elements((double)planes * (L + size));
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (int64_t pc = 0; pc < planes; ++pc) {
        REAL *plane = dx + pc * size;
        for (int64_t e = 0; e < size; ++e)
            plane[e] = 0;
        if (L == 0)
            continue;
        const REAL *grad = dy + (pc / c) * ds[0] + (pc % c) * ds[1];
        for (int64_t oh = 0; oh < h_out; ++oh) {
            const int64_t h0 = cx_adaptive_start(oh, h_out, h), h1 = cx_adaptive_end(oh, h_out, h);
            for (int64_t ow = 0; ow < w_out; ++ow) {
                const int64_t w0 = cx_adaptive_start(ow, w_out, w), w1 = cx_adaptive_end(ow, w_out, w);
                const REAL share = (REAL)(grad[oh * ds[2] + ow * ds[3]] / (double)((h1 - h0) * (w1 - w0)));
                for (int64_t ih = h0; ih < h1; ++ih)
                    for (int64_t iw = w0; iw < w1; ++iw)
                        plane[ih * w + iw] += share;
            }
        }
    }
    return CEXTEND_OK;
}
