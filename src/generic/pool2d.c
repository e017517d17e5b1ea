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

/* One step of max pooling's scan (see max_pool_2x2 below), on best and at. */
#define CX_MAX_POOL_TAKE(value, place)                      \
    do {                                                    \
        const REAL v_ = (value);                            \
        const int take_ = (v_ > best) | (v_ != v_);         \
        best = take_ ? v_ : best;                           \
        at = take_ ? (place) : at;                          \
    } while (0)
#endif

/*
 * max_pool2d's common 2x2, stride 2 window over rows of unit stride, each
 * window inside the plane: the generic loop's scan (row by row; a NaN always
 * replaces, else only a strictly larger value) written out for the four
 * values, so the results and indices are the generic loop's.  Selects, not
 * branches (which value wins is unpredictable on real data), in loops the
 * compiler vectorises (pool2d.c is compiled with no-trapping-math); the
 * scalar loop this replaces took 3 ns a window, 4 times that when its
 * stores and loads met 4 KiB apart (the CNN demo's buffers did).
 */
/* One output row from its top and bottom input rows; base: the index of
 * the row's first window's top-left value in its plane.  with_indices is a
 * constant at each call, so each copy is a loop without the test. */
static inline __attribute__((always_inline)) void CX_FN(max_pool_2x2_row_of)(const REAL *top, const REAL *bottom,
                                                                             int64_t w_out, int64_t w, int64_t base,
                                                                             REAL *out, int64_t *idx,
                                                                             const int with_indices)
{
    for (int64_t ow = 0; ow < w_out; ++ow) {
        REAL best = top[2 * ow];
        int64_t at = 0;
        CX_MAX_POOL_TAKE(top[2 * ow + 1], 1);
        CX_MAX_POOL_TAKE(bottom[2 * ow], w);
        CX_MAX_POOL_TAKE(bottom[2 * ow + 1], w + 1);
        out[ow] = best;
        if (with_indices)
            idx[ow] = base + 2 * ow + at;
    }
}

static inline __attribute__((always_inline)) void CX_FN(max_pool_2x2_row)(const REAL *top, const REAL *bottom,
                                                                          int64_t w_out, int64_t w, int64_t base,
                                                                          REAL *out, int64_t *idx)
{
    if (idx)
        CX_FN(max_pool_2x2_row_of)(top, bottom, w_out, w, base, out, idx, 1);
    else
        CX_FN(max_pool_2x2_row_of)(top, bottom, w_out, w, base, out, NULL, 0);
}

/* Planes of exactly 2 h_out x 2 W values, laid end to end, W a small
 * constant: rows too short to vectorise one at a time, so `pairs` row
 * pairs (4 W values, W windows each) are taken as one run: each window's
 * maximum, and which of its four values won (0 to 3, in scan order). */
static inline __attribute__((always_inline)) void CX_FN(max_pool_2x2_pairs)(int64_t pairs, const REAL *x, const int W,
                                                                            REAL *out, unsigned char *won)
{
    for (int64_t r = 0; r < pairs; ++r) {
        const REAL *top = x + 4 * W * r, *bottom = top + 2 * W;
#pragma GCC unroll 8
        for (int j = 0; j < W; ++j) {
            REAL best = top[2 * j];
            int at = 0;
            CX_MAX_POOL_TAKE(top[2 * j + 1], 1);
            CX_MAX_POOL_TAKE(bottom[2 * j], 2);
            CX_MAX_POOL_TAKE(bottom[2 * j + 1], 3);
            out[W * r + j] = best;
            won[W * r + j] = (unsigned char)at;
        }
    }
}

/* The winners' indices for `planes` planes of L = h_out W windows: the
 * window's top-left place in its plane (row 2 (l / W), column 2 (l % W)),
 * plus 1 for a right-hand winner and a row (2 W) for a bottom one. */
static inline __attribute__((always_inline)) void CX_FN(max_pool_2x2_places)(int64_t planes, int64_t L, const int W,
                                                                             const unsigned char *won, int64_t *idx)
{
    for (int64_t p = 0; p < planes; ++p)
        for (int64_t l = 0; l < L; ++l) {
            const int64_t k = won[p * L + l];
            idx[p * L + l] = 4 * W * (l / W) + 2 * (l % W) + (k & 1) + (k >> 1) * 2 * W;
        }
}

/* Windows per chunk of whole planes in the run-of-pairs path: its winners
 * stay in a stack buffer of this many bytes (and in L1). */
#define CX_MAX_POOL_CHUNK 2048

/* np whole planes (2 h_out x 2 w_out values each, end to end) of the
 * run-of-pairs path, w_out one of 1, 2, 4, 8. */
static inline __attribute__((always_inline)) void CX_FN(max_pool_2x2_planes_body)(int64_t np, int64_t h_out,
                                                                                  int64_t w_out, const REAL *x,
                                                                                  REAL *y, int64_t *indices)
{
    unsigned char won[CX_MAX_POOL_CHUNK];
    const int64_t L = h_out * w_out;
    switch (w_out) {
    case 1: CX_FN(max_pool_2x2_pairs)(np * h_out, x, 1, y, won); break;
    case 2: CX_FN(max_pool_2x2_pairs)(np * h_out, x, 2, y, won); break;
    case 4: CX_FN(max_pool_2x2_pairs)(np * h_out, x, 4, y, won); break;
    default: CX_FN(max_pool_2x2_pairs)(np * h_out, x, 8, y, won); break;
    }
    if (!indices)
        return;
    switch (w_out) {
    case 1: CX_FN(max_pool_2x2_places)(np, L, 1, won, indices); break;
    case 2: CX_FN(max_pool_2x2_places)(np, L, 2, won, indices); break;
    case 4: CX_FN(max_pool_2x2_places)(np, L, 4, won, indices); break;
    default: CX_FN(max_pool_2x2_places)(np, L, 8, won, indices); break;
    }
}

/* One plane of any other layout (rows of unit stride), row by row. */
static inline __attribute__((always_inline)) void CX_FN(max_pool_2x2_plane_body)(const REAL *plane, int64_t row_stride,
                                                                                 int64_t w, int64_t h_out,
                                                                                 int64_t w_out, REAL *y,
                                                                                 int64_t *indices)
{
    for (int64_t oh = 0; oh < h_out; ++oh)
        CX_FN(max_pool_2x2_row)(plane + 2 * oh * row_stride, plane + (2 * oh + 1) * row_stride, w_out, w,
                                2 * oh * w, y + oh * w_out, indices ? indices + oh * w_out : NULL);
}

/* Each body compiled for plain x86-64 (or any other CPU) and for AVX2 and
 * AVX-512; the threads' loops stay outside them (an OpenMP loop's body is
 * outlined into a function without its caller's target). */
typedef void (*CX_FN(max_pool_2x2_planes_fn))(int64_t, int64_t, int64_t, const REAL *, REAL *, int64_t *);
typedef void (*CX_FN(max_pool_2x2_plane_fn))(const REAL *, int64_t, int64_t, int64_t, int64_t, REAL *, int64_t *);
#define CX_MAX_POOL_CLONES(suffix, target)                                                                     \
    target static void CX_FN(max_pool_2x2_planes##suffix)(int64_t np, int64_t h_out, int64_t w_out,           \
                                                          const REAL *x, REAL *y, int64_t *indices)           \
    {                                                                                                          \
        CX_FN(max_pool_2x2_planes_body)(np, h_out, w_out, x, y, indices);                                      \
    }                                                                                                          \
    target static void CX_FN(max_pool_2x2_plane##suffix)(const REAL *plane, int64_t row_stride, int64_t w,    \
                                                         int64_t h_out, int64_t w_out, REAL *y,               \
                                                         int64_t *indices)                                    \
    {                                                                                                          \
        CX_FN(max_pool_2x2_plane_body)(plane, row_stride, w, h_out, w_out, y, indices);                        \
    }
CX_MAX_POOL_CLONES(, )
#if defined(CX_HAVE_X86_KERNELS)
CX_MAX_POOL_CLONES(_avx2, CX_TARGET_AVX2)
CX_MAX_POOL_CLONES(_avx512, CX_TARGET_AVX512)
#endif
#undef CX_MAX_POOL_CLONES

static void CX_FN(max_pool_2x2)(const cx_pool2d_geometry *g, const REAL *x, const int64_t *xs, REAL *y,
                                int64_t *indices, int threads)
{
    const CX_FN(max_pool_2x2_planes_fn) planes_kernel = CX_FN_FOR_ISA(max_pool_2x2_planes);
    const CX_FN(max_pool_2x2_plane_fn) plane_kernel = CX_FN_FOR_ISA(max_pool_2x2_plane);
    const int64_t c = g->c, h = g->h, w = g->w, h_out = g->h_out, w_out = g->w_out;
    const int64_t planes = g->n * c, L = h_out * w_out;
    /* planes end to end, each exactly its windows, with rows too short to
     * vectorise one at a time: the run-of-pairs path */
    const int runs = h == 2 * h_out && w == 2 * w_out && xs[2] == w && (c == 1 || xs[1] == h * w) &&
                     (g->n == 1 || xs[0] == c * h * w) && L <= CX_MAX_POOL_CHUNK &&
                     (w_out == 1 || w_out == 2 || w_out == 4 || w_out == 8);
    if (runs) {
        const int64_t per_chunk = CX_MAX_POOL_CHUNK / L, chunks = (planes + per_chunk - 1) / per_chunk;
        CX_PARALLEL_FOR(for (int64_t ch = 0; ch < chunks; ++ch) {
            const int64_t p0 = ch * per_chunk;
            planes_kernel(cx_pool_min(per_chunk, planes - p0), h_out, w_out, x + p0 * h * w, y + p0 * L,
                          indices ? indices + p0 * L : NULL);
        });
        return;
    }
    CX_PARALLEL_FOR(for (int64_t pc = 0; pc < planes; ++pc) {
        plane_kernel(x + (pc / c) * xs[0] + (pc % c) * xs[1], xs[2], w, h_out, w_out, y + pc * L,
                     indices ? indices + pc * L : NULL);
    });
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
    if (two_by_two) {
        CX_FN(max_pool_2x2)(&g, x, xs, y, indices, threads);
        return CEXTEND_OK;
    }
    CX_PARALLEL_FOR(for (int64_t pc = 0; pc < planes; ++pc) {
        const REAL *plane = x + (pc / c) * xs[0] + (pc % c) * xs[1];
        REAL *out = y + pc * L;
        int64_t *idx = indices ? indices + pc * L : NULL;
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
    });
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
    CX_PARALLEL_FOR(for (int64_t pc = 0; pc < planes; ++pc) {
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
    });
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
    CX_PARALLEL_FOR(for (int64_t pc = 0; pc < planes; ++pc) {
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
    });
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
    CX_PARALLEL_FOR(for (int64_t pc = 0; pc < planes; ++pc) {
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
    });
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
    CX_PARALLEL_FOR(for (int64_t pc = 0; pc < planes; ++pc) {
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
    });
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
    CX_PARALLEL_FOR(for (int64_t pc = 0; pc < planes; ++pc) {
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
    });
    return CEXTEND_OK;
}
