/*
 * nn_internal.h -- helpers shared by the CNN kernels (convolution, pooling,
 * batch norm); not part of the API.  See cextend.h for the contracts.
 */
#ifndef CEXTEND_NN_INTERNAL_H
#define CEXTEND_NN_INTERNAL_H

#include "internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The sizes of a convolution, in the order of its first 16 arguments. */
typedef struct {
    int64_t n, c_in, h, w, c_out, kh, kw, h_out, w_out;
    int64_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups;
} cx_conv2d_geometry;

/* The sizes of a pooling window (max: dilation as given; avg: dilation 1). */
typedef struct {
    int64_t n, c, h, w, h_out, w_out;
    int64_t kh, kw, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
} cx_pool2d_geometry;

/*
 * An image tensor (n, c, h, w) read through strides[4] (elements, each
 * >= 0).  Checks, in this order: the pointer is non-NULL if the tensor
 * holds elements (unless nullable: NULL means "skip"); the strides array
 * is non-NULL and every stride >= 0; the byte span fits in a ptrdiff_t.
 * Returns 0 or minus the position of the bad argument.
 */
CX_INTERNAL int cx_check_image(const char *fn, const char *name, int nullable,
                               const void *ptr, int ptr_pos, const int64_t *strides, int strides_pos,
                               const char *strides_name, int64_t n, int64_t c, int64_t h, int64_t w,
                               size_t elem_size);
/* A C-contiguous operand of the given dimensions; the pointer is checked
 * as above and an overflowing element count is blamed on size_pos. */
CX_INTERNAL int cx_check_dense(const char *fn, const char *name, int nullable, const void *ptr, int ptr_pos,
                               int ndim, const int64_t *dims, int size_pos, const char *size_name,
                               size_t elem_size);

/* The whole-argument-list validation of each entry point (positions and
 * names as in cextend.h).  Each returns 0 or the (negative) status. */
CX_INTERNAL int cx_validate_conv2d_forward(const char *fn, size_t es, const cx_conv2d_geometry *g,
                                           const void *x, const int64_t *x_strides, const void *weight,
                                           const void *bias, const void *y);
CX_INTERNAL int cx_validate_conv2d_backward(const char *fn, size_t es, const cx_conv2d_geometry *g,
                                            const void *dy, const int64_t *dy_strides,
                                            const void *x, const int64_t *x_strides, const void *weight,
                                            const void *dx, const void *dweight, const void *dbias);
/* kind: 0 max (dilation checked), 1 avg (divisor_override checked). */
CX_INTERNAL int cx_validate_pool2d_forward(const char *fn, size_t es, int kind, const cx_pool2d_geometry *g,
                                           int count_include_pad, int64_t divisor_override,
                                           const void *x, const int64_t *x_strides, const void *y,
                                           const void *indices);
CX_INTERNAL int cx_validate_max_pool2d_backward(const char *fn, size_t es, const cx_pool2d_geometry *g,
                                                const void *dy, const int64_t *dy_strides,
                                                const void *indices, const void *dx);
CX_INTERNAL int cx_validate_avg_pool2d_backward(const char *fn, size_t es, const cx_pool2d_geometry *g,
                                                int count_include_pad, int64_t divisor_override,
                                                const void *dy, const int64_t *dy_strides, const void *dx);
/* backward 0: x -> y (n, c, h_out, w_out); 1: dy (h_out, w_out) -> dx (h, w). */
CX_INTERNAL int cx_validate_adaptive_avg_pool2d(const char *fn, size_t es, int backward, int64_t n, int64_t c,
                                                int64_t h, int64_t w, int64_t h_out, int64_t w_out,
                                                const void *in, const int64_t *in_strides, const void *out);
CX_INTERNAL int cx_validate_batch_norm_forward(const char *fn, size_t es, int64_t n, int64_t c, int64_t s,
                                               const void *x, const int64_t *x_strides,
                                               const void *running_mean, const void *running_var,
                                               int training, const void *y);
CX_INTERNAL int cx_validate_batch_norm_backward(const char *fn, size_t es, int64_t n, int64_t c, int64_t s,
                                                const void *dy, const int64_t *dy_strides,
                                                const void *x, const int64_t *x_strides,
                                                const void *save_mean, const void *save_invstd,
                                                int training, const void *dx);

/* Convolution patches of float32 planes of at most 16 values, one vector
 * each (kernels/conv_small.c; an AVX-512F and an AVX2 copy, so callers
 * check cx_isa_current()): im2col writes col's rows for channels
 * [c_lo, c_hi) of the chunk's nb images (pad_input + im2col in one),
 * col2im sums them back into those planes of dx, both with the generic
 * loops' bits. */
#define CX_CONV_SMALL_TAPS 32
#if defined(CX_HAVE_X86_KERNELS)
CX_INTERNAL int cx_conv_small_planes(const cx_conv2d_geometry *g, const int64_t *x_strides);
CX_INTERNAL void cx_im2col_small_f32(const cx_conv2d_geometry *g, const float *x, const int64_t *x_strides,
                                     int64_t b0, int64_t nb, int64_t c0, int64_t c_lo, int64_t c_hi, float *col);
CX_INTERNAL void cx_col2im_small_f32(const cx_conv2d_geometry *g, const float *col, int64_t b0, int64_t nb,
                                     int64_t c0, int64_t c_lo, int64_t c_hi, float *dx);
CX_INTERNAL void cx_im2col_small_avx2_f32(const cx_conv2d_geometry *g, const float *x, const int64_t *x_strides,
                                          int64_t b0, int64_t nb, int64_t c0, int64_t c_lo, int64_t c_hi,
                                          float *col);
CX_INTERNAL void cx_col2im_small_avx2_f32(const cx_conv2d_geometry *g, const float *col, int64_t b0, int64_t nb,
                                          int64_t c0, int64_t c_lo, int64_t c_hi, float *dx);
#endif

/* Threads for `work` element operations of a memory-bound loop (1 for
 * small ones); the counterpart of cx_threads_for for copies and sums. */
CX_INTERNAL int cx_threads_for_elements(double elements);

/* A for statement split statically over `threads` threads (a variable in
 * scope), or run as a plain loop when that is 1.  OpenMP's if(0) clause
 * would still start a team of one: about half a microsecond in libgomp,
 * more than a small kernel's whole work (a 32 x 10 log_softmax).  Each
 * iteration does the same arithmetic either way. */
#ifdef _OPENMP
#define CX_PARALLEL_FOR(...)                                                        \
    do {                                                                            \
        if (threads > 1) {                                                          \
            _Pragma("omp parallel for num_threads(threads) schedule(static)")       \
            __VA_ARGS__                                                             \
        } else {                                                                    \
            __VA_ARGS__                                                             \
        }                                                                           \
    } while (0)
#else
#define CX_PARALLEL_FOR(...) do { (void)threads; __VA_ARGS__ } while (0)
#endif

#ifdef __cplusplus
}
#endif

#endif /* CEXTEND_NN_INTERNAL_H */
