/*
 * generic/conv.c -- 2-D convolution, forward and backward, on the GEMM engine.
 *
 * For a chunk of nb images and one group g, the patch matrix (im2col)
 *     col[(c, p, q)][(b, i, j)] = x[b][g*cig + c][i*sh - ph + p*dh][j*sw - pw + q*dw]
 * (zero outside the image) is K x NL with K = cig*kh*kw and NL = nb*h_out*w_out, and
 *     forward   y_g  (cog x NL) = W_g (cog x K) . col               (+ bias, a second pass)
 *     backward  dW_g (cog x K)  = dy_g (cog x NL) . col^T           (chunks added in order)
 *               dcol (K x NL)   = W_g^T . dy_g, scattered back into dx (col2im)
 * Batching images into one product keeps small images (8x8 digits) from
 * running as many tiny GEMMs.  The chunk size depends only on the sizes,
 * never on the thread count, and every output element is reduced in one
 * fixed order by one thread (the GEMM engine's own guarantee, then planes
 * or rows split across threads), so results are bitwise identical for any
 * number of threads.
 *
 * A 1x1 convolution with unit stride and no padding over contiguous planes
 * needs no patch matrix for y and dx: x's planes already are col.
 */

/* Aim for patch + product scratch of about this many elements per chunk. */
/* Pointwise planes at least this large are multiplied in place, image by image. */
#ifndef POINTWISE_MIN_PLANE
#define POINTWISE_MIN_PLANE 256
#endif

#ifndef CONV_CHUNK_ELEMENTS
#define CONV_CHUNK_ELEMENTS ((int64_t)1 << 19)
#endif

#ifndef CX_CONV_SHARED_HELPERS
#define CX_CONV_SHARED_HELPERS
static inline int64_t cx_conv_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t cx_conv_max(int64_t a, int64_t b) { return a > b ? a : b; }

/* Rows (columns) of the zero-padded input that some window reads:
 * padded row r is input row r - pad_h. */
static inline int64_t cx_conv_reach(int64_t out, int64_t stride, int64_t k, int64_t dilation)
{
    return out > 0 ? (out - 1) * stride + (k - 1) * dilation + 1 : 0;
}

/* (h, w) planes whose element (i, j) sits at i*w + j. */
static inline int cx_plane_contiguous(int64_t h, int64_t w, const int64_t *strides)
{
    return (h == 1 || strides[2] == w) && (w == 1 || strides[3] == 1);
}

/* 1x1, unit stride, no padding, output the input's size, contiguous planes. */
static inline int cx_conv_pointwise(const cx_conv2d_geometry *g, const int64_t *strides)
{
    return g->kh == 1 && g->kw == 1 && g->stride_h == 1 && g->stride_w == 1 && g->pad_h == 0 &&
           g->pad_w == 0 && g->h_out == g->h && g->w_out == g->w &&
           (g->h * g->w == 0 || cx_plane_contiguous(g->h, g->w, strides));
}

/* Images per chunk for `per_image` scratch elements an image. */
static inline int64_t cx_conv_chunk(int64_t n, int64_t per_image)
{
    int64_t nb = per_image > 0 ? CONV_CHUNK_ELEMENTS / per_image : n;
    return cx_conv_max(1, cx_conv_min(nb, n));
}
#endif

/* dst[0..n) = src[0..n) and dst[0..n) += src[0..n) for the short rows of small images (4 or 8
 * elements at 8x8): blocks of four the compiler turns into vector moves, where a plain loop
 * spends more on its setup and overlap checks than on the row. */
static inline void CX_FN(copy_row)(REAL *restrict dst, const REAL *restrict src, int64_t n)
{
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
        dst[j] = src[j];
        dst[j + 1] = src[j + 1];
        dst[j + 2] = src[j + 2];
        dst[j + 3] = src[j + 3];
    }
    for (; j < n; ++j)
        dst[j] = src[j];
}

static inline void CX_FN(add_row)(REAL *restrict dst, const REAL *restrict src, int64_t n)
{
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
        dst[j] += src[j];
        dst[j + 1] += src[j + 1];
        dst[j + 2] += src[j + 2];
        dst[j + 3] += src[j + 3];
    }
    for (; j < n; ++j)
        dst[j] += src[j];
}

/* xp[b][c] (Hp x Wp, contiguous) = images b0.. b0+nb-1, channels c0..
 * c0+cig-1 of x, zero-padded: xp[b][c][r][s] = x[..][r - pad_h][s - pad_w]
 * or 0.  Reading x once through its strides here leaves im2col plain
 * branch-free copies. */
static void CX_FN(pad_input)(const cx_conv2d_geometry *g, const REAL *x, const int64_t *xs,
                             int64_t b0, int64_t nb, int64_t c0, int64_t Hp, int64_t Wp, REAL *xp)
{
    const int64_t cig = g->c_in / g->groups;
    const int64_t rows = cx_conv_max(0, cx_conv_min(g->h, Hp - g->pad_h));
    const int64_t cols = cx_conv_max(0, cx_conv_min(g->w, Wp - g->pad_w));
    const int threads = cx_threads_for_elements((double)nb * cig * Hp * Wp);
    CX_PARALLEL_FOR(for (int64_t bc = 0; bc < nb * cig; ++bc) {
        const REAL *plane = x + (b0 + bc / cig) * xs[0] + (c0 + bc % cig) * xs[1];
        REAL *dst = xp + bc * Hp * Wp;
        memset(dst, 0, (size_t)(Hp * Wp) * sizeof(REAL));
        for (int64_t i = 0; i < rows; ++i) {
            const REAL *src = plane + i * xs[2];
            REAL *row = dst + (i + g->pad_h) * Wp + g->pad_w;
            if (xs[3] == 1)
                memcpy(row, src, (size_t)cols * sizeof(REAL));
            else
                for (int64_t j = 0; j < cols; ++j)
                    row[j] = src[j * xs[3]];
        }
    });
}

/* col (K x nb*L) from the padded chunk xp: each row is one kernel tap. */
static void CX_FN(im2col)(const cx_conv2d_geometry *g, const REAL *xp, int64_t nb, int64_t Hp, int64_t Wp,
                          REAL *col)
{
    const int64_t khw = g->kh * g->kw, cig = g->c_in / g->groups, K = cig * khw;
    const int64_t h_out = g->h_out, w_out = g->w_out, L = h_out * w_out, NL = nb * L;
    const int64_t sh = g->stride_h, sw = g->stride_w;
    const int threads = cx_threads_for_elements((double)K * (double)NL);
    CX_PARALLEL_FOR(for (int64_t r = 0; r < K; ++r) {
        const int64_t c = r / khw, p = (r / g->kw) % g->kh, q = r % g->kw;
        REAL *dst = col + r * NL;
        for (int64_t b = 0; b < nb; ++b) {
            const REAL *plane = xp + (b * cig + c) * Hp * Wp + p * g->dilation_h * Wp + q * g->dilation_w;
            if (sw == 1 && w_out == 4) {        /* the digits' 4x4 maps: one vector move a row */
                for (int64_t i = 0; i < h_out; ++i, dst += 4)
                    CX_FN(copy_row)(dst, plane + i * sh * Wp, 4);
                continue;
            }
            if (sw == 1 && w_out == 8) {
                for (int64_t i = 0; i < h_out; ++i, dst += 8)
                    CX_FN(copy_row)(dst, plane + i * sh * Wp, 8);
                continue;
            }
            for (int64_t i = 0; i < h_out; ++i, dst += w_out) {
                const REAL *src = plane + i * sh * Wp;
                if (sw == 1)
                    CX_FN(copy_row)(dst, src, w_out);
                else
                    for (int64_t j = 0; j < w_out; ++j)
                        dst[j] = src[j * sw];
            }
        }
    });
}

/* The adjoint of pad_input + im2col: each (image, channel) plane of the
 * chunk sums its patches from col in a padded scratch plane, in (p, q, i,
 * j) order and by one thread, then its in-image part is written to dx
 * (contiguous); positions no window reaches get 0. */
static void CX_FN(col2im)(const cx_conv2d_geometry *g, const REAL *col, int64_t b0, int64_t nb, int64_t c0,
                          int64_t Hp, int64_t Wp, REAL *dxp, REAL *dx)
{
    const int64_t cig = g->c_in / g->groups, h = g->h, w = g->w;
    const int64_t h_out = g->h_out, w_out = g->w_out, L = h_out * w_out, NL = nb * L;
    const int64_t sh = g->stride_h, sw = g->stride_w;
    const int threads = cx_threads_for_elements((double)cig * g->kh * g->kw * (double)NL);
    CX_PARALLEL_FOR(for (int64_t bc = 0; bc < nb * cig; ++bc) {
        const int64_t b = bc / cig, c = bc % cig;
        REAL *acc = dxp + bc * Hp * Wp;
        memset(acc, 0, (size_t)(Hp * Wp) * sizeof(REAL));
        for (int64_t p = 0; p < g->kh; ++p)
            for (int64_t q = 0; q < g->kw; ++q) {
                const REAL *src = col + ((c * g->kh + p) * g->kw + q) * NL + b * L;
                REAL *tap = acc + p * g->dilation_h * Wp + q * g->dilation_w;
                if (sw == 1 && w_out == 4) {        /* as in im2col: fixed-width rows */
                    for (int64_t i = 0; i < h_out; ++i, src += 4)
                        CX_FN(add_row)(tap + i * sh * Wp, src, 4);
                    continue;
                }
                if (sw == 1 && w_out == 8) {
                    for (int64_t i = 0; i < h_out; ++i, src += 8)
                        CX_FN(add_row)(tap + i * sh * Wp, src, 8);
                    continue;
                }
                for (int64_t i = 0; i < h_out; ++i, src += w_out) {
                    REAL *row = tap + i * sh * Wp;
                    if (sw == 1)
                        CX_FN(add_row)(row, src, w_out);
                    else
                        for (int64_t j = 0; j < w_out; ++j)
                            row[j * sw] += src[j];
                }
            }
        REAL *plane = dx + ((b0 + b) * g->c_in + c0 + c) * h * w;
        for (int64_t i = 0; i < h; ++i)
            for (int64_t j = 0; j < w; ++j) {
                const int64_t r = i + g->pad_h, s = j + g->pad_w;
                plane[i * w + j] = (r < Hp && s < Wp) ? acc[r * Wp + s] : 0;
            }
    });
}

/* Whether this call's planes take kernels/conv_small.c's small-plane
 * patches, and which copy: 2 AVX-512, 1 AVX2, 0 none (strides: the planes
 * read, x's or the contiguous dx's). */
static int CX_FN(small_planes)(const cx_conv2d_geometry *g, const int64_t *strides)
{
#if CX_CONV_SMALL
    const int isa = cx_isa_current();
    if (isa < CEXTEND_ISA_AVX2 || !cx_conv_small_planes(g, strides))
        return 0;
    return isa >= CEXTEND_ISA_AVX512 ? 2 : 1;
#else
    (void)g;
    (void)strides;
    return 0;
#endif
}

/* Channels [c0, c0 + cig) of images b0.. b0+nb-1 as col: pad_input then
 * im2col, or the small-plane kernel in one pass. */
static void CX_FN(patches)(const cx_conv2d_geometry *g, int small, const REAL *x, const int64_t *xs, int64_t b0,
                           int64_t nb, int64_t c0, int64_t Hp, int64_t Wp, REAL *xp, REAL *col)
{
#if CX_CONV_SMALL
    if (small) {
        void (*kernel)(const cx_conv2d_geometry *, const float *, const int64_t *, int64_t, int64_t, int64_t,
                       int64_t, int64_t, float *) = small == 2 ? cx_im2col_small_f32 : cx_im2col_small_avx2_f32;
        const int64_t cig = g->c_in / g->groups;
        const int threads = cx_threads_for_elements((double)cig * g->kh * g->kw * nb * g->h_out * g->w_out);
        CX_PARALLEL_FOR(for (int t = 0; t < threads; ++t) {
            kernel(g, x, xs, b0, nb, c0, cig * t / threads, cig * (t + 1) / threads, col);
        });
        return;
    }
#else
    (void)small;
#endif
    CX_FN(pad_input)(g, x, xs, b0, nb, c0, Hp, Wp, xp);
    CX_FN(im2col)(g, xp, nb, Hp, Wp, col);
}

/* col2im, or the small-plane kernel's adjoint (same bits). */
static void CX_FN(unpatch)(const cx_conv2d_geometry *g, int small, const REAL *col, int64_t b0, int64_t nb,
                           int64_t c0, int64_t Hp, int64_t Wp, REAL *xp, REAL *dx)
{
#if CX_CONV_SMALL
    if (small) {
        void (*kernel)(const cx_conv2d_geometry *, const float *, int64_t, int64_t, int64_t, int64_t, int64_t,
                       float *) = small == 2 ? cx_col2im_small_f32 : cx_col2im_small_avx2_f32;
        const int64_t cig = g->c_in / g->groups;
        const int threads = cx_threads_for_elements((double)cig * g->kh * g->kw * nb * g->h_out * g->w_out);
        CX_PARALLEL_FOR(for (int t = 0; t < threads; ++t) {
            kernel(g, col, b0, nb, c0, cig * t / threads, cig * (t + 1) / threads, dx);
        });
        return;
    }
#else
    (void)small;
#endif
    CX_FN(col2im)(g, col, b0, nb, c0, Hp, Wp, xp, dx);
}

/* y[b][o] += bias[o] over contiguous (n, c_out, L) output planes. */
static void CX_FN(add_bias)(int64_t n, int64_t c_out, int64_t L, const REAL *bias, REAL *y)
{
    const int threads = cx_threads_for_elements((double)n * c_out * L);
    CX_PARALLEL_FOR(for (int64_t bo = 0; bo < n * c_out; ++bo) {
        const REAL value = bias[bo % c_out];
        REAL *plane = y + bo * L;
        for (int64_t l = 0; l < L; ++l)
            plane[l] += value;
    });
}

/* y[b0+b][o0+o] = tmp[o][b*L ..] + bias[o0+o]: a chunk's product rows
 * (cog x nb*L) into the contiguous output, with the bias. */
static void CX_FN(scatter_output)(const cx_conv2d_geometry *g, const REAL *tmp, int64_t nb, int64_t b0,
                                  int64_t o0, const REAL *bias, REAL *y)
{
    const int64_t cog = g->c_out / g->groups, L = g->h_out * g->w_out, NL = nb * L;
    const int threads = cx_threads_for_elements((double)cog * NL);
    CX_PARALLEL_FOR(for (int64_t ob = 0; ob < cog * nb; ++ob) {
        const int64_t o = ob / nb, b = ob % nb;
        const REAL *src = tmp + o * NL + b * L;
        REAL *dst = y + ((b0 + b) * g->c_out + o0 + o) * L;
        if (bias) {
            const REAL value = bias[o0 + o];
            for (int64_t l = 0; l < L; ++l)
                dst[l] = src[l] + value;
        } else {
            memcpy(dst, src, (size_t)L * sizeof(REAL));
        }
    });
}

static REAL *CX_FN(scratch)(const char *fn, int64_t elements, int *status)
{
    int64_t bytes;
    if (__builtin_mul_overflow(elements, (int64_t)sizeof(REAL), &bytes) || bytes > PTRDIFF_MAX) {
        *status = cx_fail(CEXTEND_ERR_NOMEM, fn, "scratch of %lld elements overflows a byte count",
                          (long long)elements);
        return NULL;
    }
    REAL *p = cx_scratch(CX_SCRATCH_CONV, (size_t)bytes);
    if (!p)
        *status = cx_fail(CEXTEND_ERR_NOMEM, fn, "cannot allocate %lld bytes of im2col scratch", (long long)bytes);
    return p;
}

/* a * b + c in int64 or -1 (sizes are >= 0). */
static inline int64_t CX_FN(mad)(int64_t a, int64_t b, int64_t c)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r) || __builtin_add_overflow(r, c, &r))
        return -1;
    return r;
}

int CX_FN(cextend_conv2d_forward)(int64_t n, int64_t c_in, int64_t h, int64_t w,
                                  int64_t c_out, int64_t kh, int64_t kw, int64_t h_out, int64_t w_out,
                                  int64_t stride_h, int64_t stride_w, int64_t pad_h, int64_t pad_w,
                                  int64_t dilation_h, int64_t dilation_w, int64_t groups,
                                  const REAL *x, const int64_t *x_strides,
                                  const REAL *weight, const REAL *bias, REAL *y)
{
    static const char fn[] = "cextend_conv2d_forward_" CX_STR(SFX);
    const cx_conv2d_geometry g = {n, c_in, h, w, c_out, kh, kw, h_out, w_out, stride_h, stride_w,
                                  pad_h, pad_w, dilation_h, dilation_w, groups};
    int st = cx_validate_conv2d_forward(fn, sizeof(REAL), &g, x, x_strides, weight, bias, y);
    if (st)
        return st;
    const int64_t L = h_out * w_out;
    if (n == 0 || c_out == 0 || L == 0)
        return CEXTEND_OK;
    const int64_t cig = c_in / groups, cog = c_out / groups, K = cig * kh * kw;
    const int64_t *xs = x_strides;

    /* Large pointwise planes are already the patch matrix; small ones are
     * batched through it like any other kernel. */
    if (cx_conv_pointwise(&g, xs) && (L >= POINTWISE_MIN_PLANE || n == 1)) {
        for (int64_t b = 0; b < n && !st; ++b)
            for (int64_t gi = 0; gi < groups && !st; ++gi)
                st = CX_FN(cx_gemm)(cog, L, cig, weight + gi * cog * K, K, 1,
                                    cig ? x + b * xs[0] + gi * cig * xs[1] : x, cig ? xs[1] : 1, 1,
                                    NULL, y + (b * c_out + gi * cog) * L, L);
        if (!st && bias)
            CX_FN(add_bias)(n, c_out, L, bias, y);
        return st;
    }
    const int64_t Hp = cx_conv_reach(h_out, stride_h, kh, dilation_h);
    const int64_t Wp = cx_conv_reach(w_out, stride_w, kw, dilation_w);
    const int64_t per_image = CX_FN(mad)(K + cog, L, cig * Hp * Wp);
    if (per_image < 0)
        return cx_fail(CEXTEND_ERR_NOMEM, fn, "im2col scratch overflows");
    const int64_t nb = cx_conv_chunk(n, per_image);
    const int64_t col_size = K * nb * L, tmp_size = cog * nb * L, xp_size = nb * cig * Hp * Wp;
    REAL *col = CX_FN(scratch)(fn, col_size + tmp_size + xp_size, &st);
    if (!col)
        return st;
    REAL *tmp = col + col_size, *xp = tmp + tmp_size;
    const int small = CX_FN(small_planes)(&g, xs);
    for (int64_t b0 = 0; b0 < n && !st; b0 += nb) {
        const int64_t cur = cx_conv_min(nb, n - b0), NL = cur * L;
        for (int64_t gi = 0; gi < groups && !st; ++gi) {
            CX_FN(patches)(&g, small, x, xs, b0, cur, gi * cig, Hp, Wp, xp, col);
            st = CX_FN(cx_gemm)(cog, NL, K, weight + gi * cog * K, K, 1, col, NL, 1, NULL, tmp, NL);
            if (!st)
                CX_FN(scatter_output)(&g, tmp, cur, b0, gi * cog, bias, y);
        }
    }
    cx_scratch_done(CX_SCRATCH_CONV);
    return st;
}

/* dbias[o] = sum over b, i, j of dy, in double.  Eight partial sums, one
 * per flat position modulo 8 within each plane, are combined in a fixed
 * tree: the same order for every layout of dy, and vectorisable. */
static void CX_FN(bias_grad)(const cx_conv2d_geometry *g, const REAL *dy, const int64_t *ds, REAL *dbias)
{
    const int64_t w_out = g->w_out, L = g->h_out * w_out;
    const int contiguous = cx_plane_contiguous(g->h_out, w_out, ds);
    const int threads = cx_threads_for_elements((double)g->n * g->c_out * L);
    CX_PARALLEL_FOR(for (int64_t o = 0; o < g->c_out; ++o) {
        double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (int64_t b = 0; b < g->n; ++b) {
            const REAL *plane = dy + b * ds[0] + o * ds[1];
            if (contiguous) {
                int64_t l = 0;
                for (; l + 8 <= L; l += 8)
                    for (int k = 0; k < 8; ++k)
                        acc[k] += plane[l + k];
                for (; l < L; ++l)
                    acc[l & 7] += plane[l];
            } else {
                for (int64_t l = 0; l < L; ++l)
                    acc[l & 7] += plane[(l / w_out) * ds[2] + (l % w_out) * ds[3]];
            }
        }
        dbias[o] = (REAL)(((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])));
    });
}

/* dyc[o][b*L + l] = dy[b0 + b][o][l]: a chunk of dy as contiguous rows. */
static void CX_FN(gather_dy)(const cx_conv2d_geometry *g, const REAL *dy, const int64_t *ds,
                             int64_t b0, int64_t nb, REAL *dyc)
{
    const int64_t w_out = g->w_out, L = g->h_out * w_out, NL = nb * L;
    const int contiguous = cx_plane_contiguous(g->h_out, w_out, ds);
    const int threads = cx_threads_for_elements((double)g->c_out * NL);
    CX_PARALLEL_FOR(for (int64_t o = 0; o < g->c_out; ++o) {
        for (int64_t b = 0; b < nb; ++b) {
            const REAL *plane = dy + (b0 + b) * ds[0] + o * ds[1];
            REAL *dst = dyc + o * NL + b * L;
            if (contiguous) {
                memcpy(dst, plane, (size_t)L * sizeof(REAL));
                continue;
            }
            for (int64_t i = 0; i < g->h_out; ++i)
                for (int64_t j = 0; j < w_out; ++j)
                    dst[i * w_out + j] = plane[i * ds[2] + j * ds[3]];
        }
    });
}

int CX_FN(cextend_conv2d_backward)(int64_t n, int64_t c_in, int64_t h, int64_t w,
                                   int64_t c_out, int64_t kh, int64_t kw, int64_t h_out, int64_t w_out,
                                   int64_t stride_h, int64_t stride_w, int64_t pad_h, int64_t pad_w,
                                   int64_t dilation_h, int64_t dilation_w, int64_t groups,
                                   const REAL *dy, const int64_t *dy_strides,
                                   const REAL *x, const int64_t *x_strides, const REAL *weight,
                                   REAL *dx, REAL *dweight, REAL *dbias)
{
    static const char fn[] = "cextend_conv2d_backward_" CX_STR(SFX);
    const cx_conv2d_geometry g = {n, c_in, h, w, c_out, kh, kw, h_out, w_out, stride_h, stride_w,
                                  pad_h, pad_w, dilation_h, dilation_w, groups};
    int st = cx_validate_conv2d_backward(fn, sizeof(REAL), &g, dy, dy_strides, x, x_strides, weight,
                                         dx, dweight, dbias);
    if (st)
        return st;
    const int64_t L = h_out * w_out;
    const int64_t cig = c_in / groups, cog = c_out / groups, K = cig * kh * kw;

    if (dbias) {
        if (n == 0 || L == 0)
            memset(dbias, 0, (size_t)c_out * sizeof(REAL));
        else
            CX_FN(bias_grad)(&g, dy, dy_strides, dbias);
    }
    if (n == 0 || L == 0 || c_out == 0) {       /* every gradient is an empty sum */
        if (dx)
            memset(dx, 0, (size_t)(n * c_in * h * w) * sizeof(REAL));
        if (dweight)
            memset(dweight, 0, (size_t)(c_out * K) * sizeof(REAL));
        return CEXTEND_OK;
    }
    if (!dx && !dweight)
        return CEXTEND_OK;

    const int direct_dx = dx && cx_conv_pointwise(&g, (const int64_t[4]){0, 0, w, 1}) &&
                          (L >= POINTWISE_MIN_PLANE || n == 1);
    const int64_t Hp = cx_conv_reach(h_out, stride_h, kh, dilation_h);
    const int64_t Wp = cx_conv_reach(w_out, stride_w, kw, dilation_w);
    const int64_t per_image = CX_FN(mad)(K + c_out, L, cig * Hp * Wp);
    if (per_image < 0)
        return cx_fail(CEXTEND_ERR_NOMEM, fn, "im2col scratch overflows");
    const int64_t nb = cx_conv_chunk(n, per_image);
    const int64_t col_size = K * nb * L, dyc_size = c_out * nb * L, xp_size = nb * cig * Hp * Wp;
    /* dW_g = dy_g . col^T, or its transpose col . dy_g^T where that pads the
     * GEMM's register tiles less (the demo's conv2: 144 x 32 instead of
     * 32 x 144 on 8 x 32 tiles, a fifth faster): the same products summed in
     * the same order, so the same bits.  The transpose goes through wtmp. */
    const int dw_transposed = CX_FN(cx_gemm_transpose_pads_less)(cog, K);
    const int64_t wtmp_size = (dweight && (nb < n || dw_transposed)) ? cog * K : 0;
    REAL *col = CX_FN(scratch)(fn, col_size + dyc_size + xp_size + wtmp_size, &st);
    if (!col)
        return st;
    REAL *dyc = col + col_size, *xp = dyc + dyc_size, *wtmp = xp + xp_size;
    const int small_x = x_strides && CX_FN(small_planes)(&g, x_strides);
    const int small_dx = CX_FN(small_planes)(&g, (const int64_t[4]){0, 0, w, 1});

    for (int64_t b0 = 0; b0 < n && !st; b0 += nb) {
        const int64_t cur = cx_conv_min(nb, n - b0), NL = cur * L;
        CX_FN(gather_dy)(&g, dy, dy_strides, b0, cur, dyc);
        for (int64_t gi = 0; gi < groups && !st; ++gi) {
            const REAL *dyg = dyc + gi * cog * NL;
            const REAL *wg = weight ? weight + gi * cog * K : NULL;
            if (dweight && K > 0) {
                /* Chunks are added in order into dweight: the first writes it. */
                REAL *dst = dweight + gi * cog * K;
                REAL *target = b0 == 0 && !dw_transposed ? dst : wtmp;
                CX_FN(patches)(&g, small_x, x, x_strides, b0, cur, gi * cig, Hp, Wp, xp, col);
                if (dw_transposed)      /* A = col, B = dy_g^T: B[p][j] = dy_g[j][p] */
                    st = CX_FN(cx_gemm)(K, cog, NL, col, NL, 1, dyg, 1, NL, NULL, wtmp, cog);
                else                    /* B = col^T: B[p][j] = col[j][p] */
                    st = CX_FN(cx_gemm)(cog, K, NL, dyg, NL, 1, col, 1, NL, NULL, target, K);
                if (!st && dw_transposed) {
                    for (int64_t o = 0; o < cog; ++o)
                        for (int64_t k = 0; k < K; ++k)
                            dst[o * K + k] = b0 == 0 ? wtmp[k * cog + o] : dst[o * K + k] + wtmp[k * cog + o];
                } else if (!st && target == wtmp) {
                    for (int64_t e = 0; e < cog * K; ++e)
                        dst[e] += wtmp[e];
                }
            }
            if (dx && !st && cig > 0) {
                /* A = W_g^T: A[i][p] = wg[p*K + i]. */
                if (direct_dx) {
                    for (int64_t b = 0; b < cur && !st; ++b)
                        st = CX_FN(cx_gemm)(cig, L, cog, wg, 1, K, dyg + b * L, NL, 1, NULL,
                                            dx + ((b0 + b) * c_in + gi * cig) * L, L);
                } else {
                    st = CX_FN(cx_gemm)(K, NL, cog, wg, 1, K, dyg, NL, 1, NULL, col, NL);
                    if (!st)
                        CX_FN(unpatch)(&g, small_dx, col, b0, cur, gi * cig, Hp, Wp, xp, dx);
                }
            }
        }
    }
    cx_scratch_done(CX_SCRATCH_CONV);
    return st;
}
