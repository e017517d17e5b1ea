/*
 * cextend.h -- the whole C API of cextend.
 *
 * ffi_build.py feeds this file to cffi's cdef after dropping preprocessor
 * lines and the C++ guard, so everything between the guards must be plain
 * declarations cffi can parse (no macros in declarations).
 *
 * Conventions shared by every entry point
 * ---------------------------------------
 * - The return value is a status: CEXTEND_OK (0) on success; -i when
 *   argument i (1-based, as BLAS's INFO) is illegal; CEXTEND_ERR_NOMEM when
 *   scratch memory could not be allocated.  Nothing aborts, prints or exits.
 *   cextend_last_error() returns the message of the last failure on the
 *   calling thread.
 * - Arguments are validated before any memory is touched: an illegal call
 *   writes no output.
 * - Sizes and leading dimensions are int64_t, in elements.
 * - A 2-D operand is (pointer, leading dimension, transpose flag), BLAS
 *   style, in row-major storage.  For a logical rows x cols operand A:
 *       trans == 0:  A[i][j] = p[i * ld + j],  ld >= max(1, cols)
 *       trans == 1:  A[i][j] = p[j * ld + i],  ld >= max(1, rows)
 *   so a numpy C-contiguous array, its transpose, and row-sliced views of
 *   either run without a copy.  Outputs are always trans == 0.
 * - NULL is legal only where it means "skip" (the bias; each of dx, dw and
 *   db; each gradient of add's backward) and for operands with zero
 *   elements.  Anywhere else it is an illegal argument.  So is a pointer
 *   to elements that is not aligned to the element size (copy such views).
 * - Outputs are fully written (beta = 0): their old contents, NaN included,
 *   are never read.
 */
#ifndef CEXTEND_H
#define CEXTEND_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    CEXTEND_OK = 0,
    CEXTEND_ERR_NOMEM = -1000,   /* scratch allocation failed */
    CEXTEND_ERR_CUDA = -1001,    /* a CUDA runtime call failed */
    CEXTEND_ERR_INTERNAL = -1002 /* a bug in cextend; please report it */
};

/* The message describing the last failed call on this thread ("" if none). */
const char *cextend_last_error(void);

/* ---- Instruction sets and threads ----------------------------------------
 * The GEMM engine has one microkernel per instruction set, chosen at run
 * time (never at build time): the best the CPU supports unless one is
 * forced.  "reference" is the simple loop kernel the fast ones are tested
 * against.  Results are bitwise identical for any thread count.
 */
enum {
    CEXTEND_ISA_AUTO = -1,       /* the best this CPU supports */
    CEXTEND_ISA_REFERENCE = 0,   /* simple loops, the test oracle */
    CEXTEND_ISA_GENERIC = 1,     /* packed, blocked, portable C */
    CEXTEND_ISA_AVX2 = 2,        /* x86-64 AVX2 + FMA */
    CEXTEND_ISA_AVX512 = 3       /* x86-64 AVX-512F */
};
/* 1 if this CPU and build can run isa, else 0. */
int cextend_isa_supported(int isa);
/* Force an instruction set (or CEXTEND_ISA_AUTO).  Status -1 if isa is not
 * one of the above or this CPU cannot run it. */
int cextend_set_isa(int isa);
/* The instruction set in use now. */
int cextend_get_isa(void);
/* Threads used by the kernels (default: OpenMP's, which honours
 * OMP_NUM_THREADS, else the available cores).  Status -1 if n < 1. */
int cextend_set_num_threads(int n);
int cextend_get_num_threads(void);
/* How many of `wanted` threads a parallel kernel uses now: at most the
 * cores that other processes left idle over the last fraction of a second
 * (measured on Linux from /proc/stat less this process's own CPU time; a
 * barrier would wait for a thread that shares its core), and at least 1.
 * Results never depend on it: they are the same bits for any count. */
int cextend_threads_available(int wanted);
/* The GEMM plan of an instruction set for one element size (4: float32,
 * 8: float64): blocks[0..4] = mr, nr (the microkernel's register block),
 * kc, mc, nc (the cache blocks, nc as this CPU uses it).  Status -1 for an
 * isa that has no plan here (AUTO, unknown, or x86 on another
 * architecture), -2 for an element size other than 4 or 8, -3 if blocks
 * is NULL.  This is the plan of large products; some instruction sets run
 * products of few rows with another tile (the same kc, so the same bits):
 * the _for_rows form gives the plan a product of `rows` rows uses (status
 * -3 for rows < 0, -4 if blocks is NULL). */
int cextend_gemm_blocking(int isa, int element_size, int64_t *blocks);
int cextend_gemm_blocking_for_rows(int isa, int element_size, int64_t rows, int64_t *blocks);

/* ---- Linear layer --------------------------------------------------------
 * Forward:  y[i][j] = sum_p x[i][p] * w[j][p] + b[j]
 *   x: n x k, w: m x k, b: m (NULL: no bias), y: n x m (ldy >= max(1, m)).
 * Arguments: 1 n, 2 k, 3 m, 4 x, 5 ldx, 6 transx, 7 w, 8 ldw, 9 transw,
 *            10 b, 11 y, 12 ldy.
 */
int cextend_linear_forward_f32(int64_t n, int64_t k, int64_t m,
                               const float *x, int64_t ldx, int transx,
                               const float *w, int64_t ldw, int transw,
                               const float *b, float *y, int64_t ldy);
int cextend_linear_forward_f64(int64_t n, int64_t k, int64_t m,
                               const double *x, int64_t ldx, int transx,
                               const double *w, int64_t ldw, int transw,
                               const double *b, double *y, int64_t ldy);
/* The same forward on C-contiguous operands (ldx = ldw = max(1, k),
 * ldy = max(1, m), no transposes), bitwise the same results: five fewer
 * arguments to convert is a tenth of a small layer's call from Python.
 * Arguments: 1 n, 2 k, 3 m, 4 x, 5 w, 6 b, 7 y.
 */
int cextend_linear_forward_contiguous_f32(int64_t n, int64_t k, int64_t m, const float *x,
                                          const float *w, const float *b, float *y);
int cextend_linear_forward_contiguous_f64(int64_t n, int64_t k, int64_t m, const double *x,
                                          const double *w, const double *b, double *y);

/* Backward of the forward above, given dy (n x m):
 *   dx = dy . w      (n x k, NULL: skip)
 *   dw = dy^T . x    (m x k, NULL: skip)
 *   db = sum_i dy[i] (m,     NULL: skip)
 * x is read only for dw and w only for dx, but both must be valid pointers
 * whenever they hold elements.
 * Arguments: 1 n, 2 k, 3 m, 4 dy, 5 lddy, 6 transdy, 7 x, 8 ldx, 9 transx,
 *            10 w, 11 ldw, 12 transw, 13 dx, 14 lddx, 15 dw, 16 lddw, 17 db.
 */
int cextend_linear_backward_f32(int64_t n, int64_t k, int64_t m,
                                const float *dy, int64_t lddy, int transdy,
                                const float *x, int64_t ldx, int transx,
                                const float *w, int64_t ldw, int transw,
                                float *dx, int64_t lddx,
                                float *dw, int64_t lddw, float *db);
int cextend_linear_backward_f64(int64_t n, int64_t k, int64_t m,
                                const double *dy, int64_t lddy, int transdy,
                                const double *x, int64_t ldx, int transx,
                                const double *w, int64_t ldw, int transw,
                                double *dx, int64_t lddx,
                                double *dw, int64_t lddw, double *db);

/* ---- add: extension-ffi's example op, on count contiguous elements ------
 * Forward:  out = a + b               (args: 1 count, 2 a, 3 b, 4 out)
 * Backward: grad_a = grad_b = grad_out (args: 1 count, 2 grad_out,
 *           3 grad_a, 4 grad_b; each gradient NULL: skip)
 * out may be a or b exactly (in place); partial overlaps are not supported.
 */
int cextend_add_forward_f32(int64_t count, const float *a, const float *b, float *out);
int cextend_add_forward_f64(int64_t count, const double *a, const double *b, double *out);
int cextend_add_backward_f32(int64_t count, const float *grad_out, float *grad_a, float *grad_b);
int cextend_add_backward_f64(int64_t count, const double *grad_out, double *grad_a, double *grad_b);

/* ---- mul_constant: out = x * c, on count contiguous elements ------------
 * Forward args:  1 count, 2 x, 3 c, 4 out.
 * Backward args: 1 count, 2 grad_out, 3 c, 4 grad_x  (grad_x = grad_out * c)
 * c may be any value; NaN and Inf propagate as IEEE arithmetic says.
 */
int cextend_mul_constant_forward_f32(int64_t count, const float *x, float c, float *out);
int cextend_mul_constant_forward_f64(int64_t count, const double *x, double c, double *out);
int cextend_mul_constant_backward_f32(int64_t count, const float *grad_out, float c, float *grad_x);
int cextend_mul_constant_backward_f64(int64_t count, const double *grad_out, double c, double *grad_x);

/* ---- global max pool over planes of plane_size contiguous elements ------
 * For an (N, C, H, W) input: planes = N*C, plane_size = H*W.
 * Forward:  values[p] = max of plane p, indices[p] = its flat index within
 *           the plane; on ties the lowest index wins, and the first NaN wins
 *           (as numpy's argmax).  plane_size must be >= 1 when planes > 0.
 *           Args: 1 planes, 2 plane_size, 3 x, 4 values, 5 indices.
 * Backward: grad_x = 0 except grad_x[p][indices[p]] = grad_values[p].
 *           Every index must lie in [0, plane_size); they are all checked
 *           before grad_x is written.
 *           Args: 1 planes, 2 plane_size, 3 grad_values, 4 indices, 5 grad_x.
 */
int cextend_global_max_pool_forward_f32(int64_t planes, int64_t plane_size,
                                        const float *x, float *values, int64_t *indices);
int cextend_global_max_pool_forward_f64(int64_t planes, int64_t plane_size,
                                        const double *x, double *values, int64_t *indices);
int cextend_global_max_pool_backward_f32(int64_t planes, int64_t plane_size,
                                         const float *grad_values, const int64_t *indices,
                                         float *grad_x);
int cextend_global_max_pool_backward_f64(int64_t planes, int64_t plane_size,
                                         const double *grad_values, const int64_t *indices,
                                         double *grad_x);

/* ---- a training step's small kernels, on count contiguous elements --------
 * relu:               out = x < 0 ? 0 : x  (NaN and -0.0 pass, as torch's).
 *                     Args: 1 count, 2 x, 3 out.
 * threshold_backward: grad_x = result <= 0 ? 0 : grad_out (torch's relu
 *                     backward).  Args: 1 count, 2 grad_out, 3 result, 4 grad_x.
 * axpy:               out = y + alpha * x with one rounding (torch's
 *                     add(y, x, alpha=alpha)).  Args: 1 count, 2 alpha, 3 x,
 *                     4 y, 5 out.
 * sum:                *total = the sum of x's count values, bitwise numpy's
 *                     np.sum (its pairwise order, started from +0.0).
 *                     Args: 1 count, 2 x, 3 total.
 * sgd_step:           torch.optim.SGD's update of one parameter, in place:
 *                     param, and momentum_buffer when momentum != 0 (NULL is
 *                     accepted otherwise).  first_step: the buffer starts as
 *                     the gradient.  neg_lr is -lr; one_minus_dampening is
 *                     1 - dampening, rounded to the dtype by the caller.
 *                     Args: 1 count, 2 param, 3 grad, 4 momentum_buffer,
 *                     5 first_step, 6 neg_lr, 7 weight_decay, 8 momentum,
 *                     9 one_minus_dampening, 10 nesterov, 11 maximize.
 * adam_step:          torch.optim.Adam's (AdamW's) update of one parameter
 *                     without amsgrad, in place: param, exp_avg, exp_avg_sq.
 *                     decay_mode: 0 none, 1 L2 (decay = weight_decay),
 *                     2 decoupled (decay = 1 - lr * weight_decay).
 *                     lerp_weight = 1 - beta1; neg_step_size =
 *                     -lr / (1 - beta1^step); bias_correction2_sqrt =
 *                     sqrt(1 - beta2^step), each rounded to the dtype by the
 *                     caller.  Args: 1 count, 2 param, 3 grad, 4 exp_avg,
 *                     5 exp_avg_sq, 6 decay_mode, 7 decay, 8 lerp_weight,
 *                     9 beta2, 10 one_minus_beta2, 11 bias_correction2_sqrt,
 *                     12 eps, 13 neg_step_size, 14 maximize.
 * Outputs may be an input exactly (in place); partial overlaps are not
 * supported.  Results do not depend on the CPU: the fused multiply-adds are
 * correctly rounded with or without the FMA instruction.
 */
int cextend_relu_forward_f32(int64_t count, const float *x, float *out);
int cextend_relu_forward_f64(int64_t count, const double *x, double *out);
int cextend_threshold_backward_f32(int64_t count, const float *grad_out, const float *result, float *grad_x);
int cextend_threshold_backward_f64(int64_t count, const double *grad_out, const double *result,
                                   double *grad_x);
int cextend_axpy_f32(int64_t count, float alpha, const float *x, const float *y, float *out);
int cextend_axpy_f64(int64_t count, double alpha, const double *x, const double *y, double *out);
int cextend_sum_f32(int64_t count, const float *x, float *total);
int cextend_sum_f64(int64_t count, const double *x, double *total);
int cextend_sgd_step_f32(int64_t count, float *param, const float *grad, float *momentum_buffer,
                         int first_step, float neg_lr, float weight_decay, float momentum,
                         float one_minus_dampening, int nesterov, int maximize);
int cextend_sgd_step_f64(int64_t count, double *param, const double *grad, double *momentum_buffer,
                         int first_step, double neg_lr, double weight_decay, double momentum,
                         double one_minus_dampening, int nesterov, int maximize);
int cextend_adam_step_f32(int64_t count, float *param, const float *grad, float *exp_avg, float *exp_avg_sq,
                          int decay_mode, float decay, float lerp_weight, float beta2, float one_minus_beta2,
                          float bias_correction2_sqrt, float eps, float neg_step_size, int maximize);
int cextend_adam_step_f64(int64_t count, double *param, const double *grad, double *exp_avg,
                          double *exp_avg_sq, int decay_mode, double decay, double lerp_weight, double beta2,
                          double one_minus_beta2, double bias_correction2_sqrt, double eps,
                          double neg_step_size, int maximize);

/* ---- softmax, log_softmax and nll_loss over rows --------------------------
 * On C-contiguous (rows, cols) arrays; each row is independent (rows split
 * across threads; results do not depend on the count).
 * softmax_rows:          out = softmax (log_softmax 0) or log_softmax
 *                        (log_softmax 1) of each row; out may be x exactly.  A NaN in a row
 *                        makes it NaN; an all -inf row is NaN, as torch's.
 *                        Args: 1 rows, 2 cols, 3 x, 4 out, 5 log_softmax.
 * softmax_backward_rows: grad_x from grad_out and the forward's result:
 *                        result * (g - sum(g * result)) (log_softmax 0)
 *                        or g - exp(result) * sum(g) (log_softmax 1).
 *                        grad_x may be grad_out exactly.  Args: 1 rows, 2 cols,
 *                        3 grad_out, 4 result, 5 grad_x, 6 log_softmax.
 * nll_forward:           nll_loss of x (rows, classes) against target
 *                        (rows; a class or ignore_index), each row's pick
 *                        times weight[class] when weight is not NULL.
 *                        out holds rows values (reduction NONE; an ignored
 *                        row is +0.0) or one (MEAN: the sum over the total
 *                        weight; SUM).  total_weight gets the sum of the
 *                        picked rows' weights (their count without weight).
 *                        A target that is neither sets *bad_row to its row
 *                        and writes nothing else; else *bad_row is -1.
 *                        Args: 1 rows, 2 classes, 3 x, 4 target, 5 weight,
 *                        6 ignore_index, 7 reduction, 8 out, 9 total_weight,
 *                        10 bad_row.
 * nll_backward:          grad_x (rows, classes): zero but at each picked
 *                        (row, target): -grad_out (divided by total_weight
 *                        for MEAN) times weight[target].  grad_out holds
 *                        rows values for NONE, else one.  A bad target is an
 *                        illegal argument 4.  Args: 1 rows, 2 classes,
 *                        3 grad_out, 4 target, 5 weight, 6 ignore_index,
 *                        7 reduction, 8 total_weight, 9 grad_x.
 */
enum {
    CEXTEND_REDUCTION_NONE = 0,
    CEXTEND_REDUCTION_MEAN = 1,
    CEXTEND_REDUCTION_SUM = 2
};
int cextend_softmax_rows_f32(int64_t rows, int64_t cols, const float *x, float *out, int log_softmax);
int cextend_softmax_rows_f64(int64_t rows, int64_t cols, const double *x, double *out, int log_softmax);
int cextend_softmax_backward_rows_f32(int64_t rows, int64_t cols, const float *grad_out, const float *result,
                                      float *grad_x, int log_softmax);
int cextend_softmax_backward_rows_f64(int64_t rows, int64_t cols, const double *grad_out,
                                      const double *result, double *grad_x, int log_softmax);
int cextend_nll_forward_f32(int64_t rows, int64_t classes, const float *x, const int64_t *target,
                            const float *weight, int64_t ignore_index, int reduction, float *out,
                            float *total_weight, int64_t *bad_row);
int cextend_nll_forward_f64(int64_t rows, int64_t classes, const double *x, const int64_t *target,
                            const double *weight, int64_t ignore_index, int reduction, double *out,
                            double *total_weight, int64_t *bad_row);
int cextend_nll_backward_f32(int64_t rows, int64_t classes, const float *grad_out, const int64_t *target,
                             const float *weight, int64_t ignore_index, int reduction,
                             const float *total_weight, float *grad_x);
int cextend_nll_backward_f64(int64_t rows, int64_t classes, const double *grad_out, const int64_t *target,
                             const double *weight, int64_t ignore_index, int reduction,
                             const double *total_weight, double *grad_x);

/* ---- special functions numpy lacks, elementwise on contiguous buffers ----
 * out[i] = f(x[i]), i < count; out may be x exactly.  Args: 1 op, 2 count,
 * 3 x, 4 out.  NaN propagates; outside the domain (erfinv beyond [-1, 1],
 * digamma at non-positive integers) the result is NaN or +-inf, as torch's.
 * sinc is the normalised sin(pi x) / (pi x), 1 at 0.
 */
enum {
    CEXTEND_SPECIAL_ERF = 0,
    CEXTEND_SPECIAL_ERFC = 1,
    CEXTEND_SPECIAL_ERFINV = 2,
    CEXTEND_SPECIAL_LGAMMA = 3,
    CEXTEND_SPECIAL_DIGAMMA = 4,
    CEXTEND_SPECIAL_SINC = 5,
    CEXTEND_SPECIAL_COUNT = 6
};
int cextend_special_f32(int op, int64_t count, const float *x, float *out);
int cextend_special_f64(int op, int64_t count, const double *x, double *out);
/* polygamma(n, x), the n-th derivative of digamma (n >= 0).  Args: 1 n,
 * 2 count, 3 x, 4 out; poles (x a non-positive integer) give +-inf. */
int cextend_polygamma_f32(int64_t n, int64_t count, const float *x, float *out);
int cextend_polygamma_f64(int64_t n, int64_t count, const double *x, double *out);

/* ---- 2-D convolution, pooling and batch norm (CNN layers) ----------------
 * Shared conventions of this section:
 * - Images are (n, c, h, w).  An input image tensor is read through four
 *   element strides (an int64_t[4]: batch, channel, row, column), each
 *   >= 0, so channel-sliced, transposed (channels-last) and broadcast views
 *   run without a copy.  Every output is C-contiguous.
 * - The caller gives the output size (h_out, w_out): positions outside the
 *   input read as zero for convolution and are skipped by pooling, so
 *   torch's ceil_mode, padding='same' and output_padding are all just a
 *   choice of output size.
 * - Results are bitwise identical for any thread count: every output
 *   element is reduced in one fixed order by one thread.
 */

/* Convolution (cross-correlation, as torch's conv2d):
 *   y[b][o][i][j] = bias[o] + sum_{c,p,q} weight[o][c][p][q] *
 *                   x[b][g*cig + c][i*stride_h - pad_h + p*dilation_h]
 *                                  [j*stride_w - pad_w + q*dilation_w]
 * with cig = c_in/groups, cog = c_out/groups and g = o / cog.
 *   x: (n, c_in, h, w) strided; weight: (c_out, cig, kh, kw) contiguous;
 *   bias: (c_out) or NULL; y: (n, c_out, h_out, w_out).
 * Sizes >= 0; kh, kw, strides, dilations and groups >= 1; pads >= 0;
 * groups divides c_in and c_out.  Runs on the GEMM engine (im2col).
 * Arguments: 1 n, 2 c_in, 3 h, 4 w, 5 c_out, 6 kh, 7 kw, 8 h_out, 9 w_out,
 *   10 stride_h, 11 stride_w, 12 pad_h, 13 pad_w, 14 dilation_h,
 *   15 dilation_w, 16 groups, 17 x, 18 x_strides, 19 weight, 20 bias, 21 y.
 */
int cextend_conv2d_forward_f32(int64_t n, int64_t c_in, int64_t h, int64_t w,
                               int64_t c_out, int64_t kh, int64_t kw, int64_t h_out, int64_t w_out,
                               int64_t stride_h, int64_t stride_w, int64_t pad_h, int64_t pad_w,
                               int64_t dilation_h, int64_t dilation_w, int64_t groups,
                               const float *x, const int64_t *x_strides,
                               const float *weight, const float *bias, float *y);
int cextend_conv2d_forward_f64(int64_t n, int64_t c_in, int64_t h, int64_t w,
                               int64_t c_out, int64_t kh, int64_t kw, int64_t h_out, int64_t w_out,
                               int64_t stride_h, int64_t stride_w, int64_t pad_h, int64_t pad_w,
                               int64_t dilation_h, int64_t dilation_w, int64_t groups,
                               const double *x, const int64_t *x_strides,
                               const double *weight, const double *bias, double *y);

/* Backward of the convolution above, given dy (n, c_out, h_out, w_out)
 * read through dy_strides:
 *   dx (n, c_in, h, w)          = the transposed convolution of dy (NULL: skip)
 *   dweight (c_out, cig, kh, kw) = sum over b of dy (x) x      (NULL: skip)
 *   dbias (c_out)               = sum of dy over b, i, j       (NULL: skip)
 * x is read only for dweight (it may be NULL when dweight is NULL), weight
 * only for dx (it may be NULL when dx is NULL).  dx alone is torch's
 * conv_transpose2d of dy without bias.
 * Arguments: 1-16 as the forward, 17 dy, 18 dy_strides, 19 x, 20 x_strides,
 *   21 weight, 22 dx, 23 dweight, 24 dbias.
 */
int cextend_conv2d_backward_f32(int64_t n, int64_t c_in, int64_t h, int64_t w,
                                int64_t c_out, int64_t kh, int64_t kw, int64_t h_out, int64_t w_out,
                                int64_t stride_h, int64_t stride_w, int64_t pad_h, int64_t pad_w,
                                int64_t dilation_h, int64_t dilation_w, int64_t groups,
                                const float *dy, const int64_t *dy_strides,
                                const float *x, const int64_t *x_strides, const float *weight,
                                float *dx, float *dweight, float *dbias);
int cextend_conv2d_backward_f64(int64_t n, int64_t c_in, int64_t h, int64_t w,
                                int64_t c_out, int64_t kh, int64_t kw, int64_t h_out, int64_t w_out,
                                int64_t stride_h, int64_t stride_w, int64_t pad_h, int64_t pad_w,
                                int64_t dilation_h, int64_t dilation_w, int64_t groups,
                                const double *dy, const int64_t *dy_strides,
                                const double *x, const int64_t *x_strides, const double *weight,
                                double *dx, double *dweight, double *dbias);

/* Max pooling (torch's max_pool2d): each output is the max over the window
 * rows i*stride_h - pad_h + p*dilation_h (p < kh), columns likewise, that
 * lie inside the image; indices (NULL: skip) gets its flat row*w + column
 * index in the (h, w) plane.  As torch: a NaN always wins (so the last NaN
 * of a window), otherwise the first maximum in row-major window order; a
 * window with no element inside the image gives -inf and the index torch
 * gives (its first in-range row and column, past the plane's end).
 * Arguments: 1 n, 2 c, 3 h, 4 w, 5 h_out, 6 w_out, 7 kh, 8 kw, 9 stride_h,
 *   10 stride_w, 11 pad_h, 12 pad_w, 13 dilation_h, 14 dilation_w, 15 x,
 *   16 x_strides, 17 y, 18 indices.
 */
int cextend_max_pool2d_forward_f32(int64_t n, int64_t c, int64_t h, int64_t w, int64_t h_out, int64_t w_out,
                                   int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w,
                                   int64_t pad_h, int64_t pad_w, int64_t dilation_h, int64_t dilation_w,
                                   const float *x, const int64_t *x_strides, float *y, int64_t *indices);
int cextend_max_pool2d_forward_f64(int64_t n, int64_t c, int64_t h, int64_t w, int64_t h_out, int64_t w_out,
                                   int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w,
                                   int64_t pad_h, int64_t pad_w, int64_t dilation_h, int64_t dilation_w,
                                   const double *x, const int64_t *x_strides, double *y, int64_t *indices);
/* dx (n, c, h, w) = 0, then dx[plane][indices[o]] += dy[o] for every
 * output o of the plane, in order.  An index outside [0, h*w) (only the
 * forward's empty windows make one) contributes nothing.
 * indices: (n, c, h_out, w_out) contiguous.
 * Arguments: 1 n, 2 c, 3 h, 4 w, 5 h_out, 6 w_out, 7 dy, 8 dy_strides,
 *   9 indices, 10 dx.
 */
int cextend_max_pool2d_backward_f32(int64_t n, int64_t c, int64_t h, int64_t w, int64_t h_out, int64_t w_out,
                                    const float *dy, const int64_t *dy_strides, const int64_t *indices,
                                    float *dx);
int cextend_max_pool2d_backward_f64(int64_t n, int64_t c, int64_t h, int64_t w, int64_t h_out, int64_t w_out,
                                    const double *dy, const int64_t *dy_strides, const int64_t *indices,
                                    double *dx);

/* Average pooling (torch's avg_pool2d): window rows [i*stride_h - pad_h,
 * + kh) cut at h + pad_h (so ceil_mode windows do not count padding past
 * it), columns likewise; the sum of its in-image elements is divided by
 * divisor_override if > 0, else by the window's size including padding
 * (count_include_pad 1) or its in-image element count (0).  A window with
 * no in-image element gives 0.  The backward spreads dy[o] / divisor over
 * the window's in-image elements.
 * Forward arguments:  1 n, 2 c, 3 h, 4 w, 5 h_out, 6 w_out, 7 kh, 8 kw,
 *   9 stride_h, 10 stride_w, 11 pad_h, 12 pad_w, 13 count_include_pad,
 *   14 divisor_override, 15 x, 16 x_strides, 17 y.
 * Backward: the same with 15 dy, 16 dy_strides, 17 dx (n, c, h, w).
 */
int cextend_avg_pool2d_forward_f32(int64_t n, int64_t c, int64_t h, int64_t w, int64_t h_out, int64_t w_out,
                                   int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w,
                                   int64_t pad_h, int64_t pad_w, int count_include_pad, int64_t divisor_override,
                                   const float *x, const int64_t *x_strides, float *y);
int cextend_avg_pool2d_forward_f64(int64_t n, int64_t c, int64_t h, int64_t w, int64_t h_out, int64_t w_out,
                                   int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w,
                                   int64_t pad_h, int64_t pad_w, int count_include_pad, int64_t divisor_override,
                                   const double *x, const int64_t *x_strides, double *y);
int cextend_avg_pool2d_backward_f32(int64_t n, int64_t c, int64_t h, int64_t w, int64_t h_out, int64_t w_out,
                                    int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w,
                                    int64_t pad_h, int64_t pad_w, int count_include_pad, int64_t divisor_override,
                                    const float *dy, const int64_t *dy_strides, float *dx);
int cextend_avg_pool2d_backward_f64(int64_t n, int64_t c, int64_t h, int64_t w, int64_t h_out, int64_t w_out,
                                    int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w,
                                    int64_t pad_h, int64_t pad_w, int count_include_pad, int64_t divisor_override,
                                    const double *dy, const int64_t *dy_strides, double *dx);

/* Adaptive average pooling (torch's adaptive_avg_pool2d): output row i
 * averages input rows [floor(i*h/h_out), ceil((i+1)*h/h_out)), columns
 * likewise.  h and w must be >= 1 when the output has elements.  The
 * backward spreads dy[o] / window size over the window.
 * Arguments: 1 n, 2 c, 3 h, 4 w, 5 h_out, 6 w_out, 7 x (dy), 8 x_strides
 *   (dy_strides), 9 y (dx, (n, c, h, w)).
 */
int cextend_adaptive_avg_pool2d_forward_f32(int64_t n, int64_t c, int64_t h, int64_t w, int64_t h_out,
                                            int64_t w_out, const float *x, const int64_t *x_strides, float *y);
int cextend_adaptive_avg_pool2d_forward_f64(int64_t n, int64_t c, int64_t h, int64_t w, int64_t h_out,
                                            int64_t w_out, const double *x, const int64_t *x_strides, double *y);
int cextend_adaptive_avg_pool2d_backward_f32(int64_t n, int64_t c, int64_t h, int64_t w, int64_t h_out,
                                             int64_t w_out, const float *dy, const int64_t *dy_strides, float *dx);
int cextend_adaptive_avg_pool2d_backward_f64(int64_t n, int64_t c, int64_t h, int64_t w, int64_t h_out,
                                             int64_t w_out, const double *dy, const int64_t *dy_strides, double *dx);

/* Batch normalisation over (n, c, s) data (s: the product of the spatial
 * sizes), read through x_strides (an int64_t[3]: batch, channel, spatial).
 * training 1: mean and biased variance of each channel over its n*s
 *   values (two passes, accumulated in double), then the running stats,
 *   when given, are updated in the same call:
 *     running_mean = (1 - momentum) * running_mean + momentum * mean
 *     running_var  = (1 - momentum) * running_var + momentum * var * m/(m-1)
 *   with m = n*s (m >= 1 whenever n*c*s > 0).
 * training 0: mean and var are running_mean and running_var (required).
 * y = (x - mean) / sqrt(var + eps) * weight + bias, contiguous (n, c, s);
 * weight NULL: 1, bias NULL: 0.  save_mean and save_invstd (c each, NULL:
 * skip) receive the mean and 1/sqrt(var + eps) the backward needs.
 * Arguments: 1 n, 2 c, 3 s, 4 x, 5 x_strides, 6 weight, 7 bias,
 *   8 running_mean, 9 running_var, 10 training, 11 momentum, 12 eps, 13 y,
 *   14 save_mean, 15 save_invstd.
 */
int cextend_batch_norm_forward_f32(int64_t n, int64_t c, int64_t s, const float *x, const int64_t *x_strides,
                                   const float *weight, const float *bias, float *running_mean,
                                   float *running_var, int training, double momentum, double eps,
                                   float *y, float *save_mean, float *save_invstd);
int cextend_batch_norm_forward_f64(int64_t n, int64_t c, int64_t s, const double *x, const int64_t *x_strides,
                                   const double *weight, const double *bias, double *running_mean,
                                   double *running_var, int training, double momentum, double eps,
                                   double *y, double *save_mean, double *save_invstd);
/* Backward, from the forward's save_mean and save_invstd, with
 * xhat = (x - mean) * invstd and sums over each channel's n*s values:
 *   dbias   = sum dy                                       (NULL: skip)
 *   dweight = sum dy * xhat                                (NULL: skip)
 *   dx = weight * invstd * (dy - dbias/m - xhat * dweight/m)   training 1
 *   dx = weight * invstd * dy                                 training 0
 * (NULL: skip; contiguous (n, c, s)); weight NULL means 1.
 * Arguments: 1 n, 2 c, 3 s, 4 dy, 5 dy_strides, 6 x, 7 x_strides,
 *   8 weight, 9 save_mean, 10 save_invstd, 11 training, 12 dx, 13 dweight,
 *   14 dbias.
 */
int cextend_batch_norm_backward_f32(int64_t n, int64_t c, int64_t s, const float *dy, const int64_t *dy_strides,
                                    const float *x, const int64_t *x_strides, const float *weight,
                                    const float *save_mean, const float *save_invstd, int training,
                                    float *dx, float *dweight, float *dbias);
int cextend_batch_norm_backward_f64(int64_t n, int64_t c, int64_t s, const double *dy, const int64_t *dy_strides,
                                    const double *x, const int64_t *x_strides, const double *weight,
                                    const double *save_mean, const double *save_invstd, int training,
                                    double *dx, double *dweight, double *dbias);

/* ---- recurrent cells: the pointwise part of a time step, fused ------------
 * torch's _thnn_fused_lstm_cell and _thnn_fused_gru_cell and their
 * backward: everything a step computes after its two GEMMs (the linear
 * kernels' x W_ih^T + b_ih and h W_hh^T + b_hh), in one pass.
 * Shapes (H = hidden): the gates are batch x G*H (G = 4 for LSTM in the
 * order i, f, g, o; G = 3 for GRU in the order r, z, n), read through a
 * row stride (ld_input, ld_hidden >= max(1, G*H)), so a row-sliced view
 * (one time step of a batch-first projection) runs in place; the biases
 * are G*H vectors; every other operand is C-contiguous: batch x H, the
 * LSTM workspace batch x 4H, the GRU workspace batch x 5H.  Outputs do not
 * overlap inputs or each other.  The arithmetic is torch's CPU cells',
 * operation by operation (no fused multiply-adds), so results agree with
 * torch's to a rounding and are the same bits for any thread count.
 *
 * lstm_cell_forward: gates = input_gates + hidden_gates (+ input_bias)
 *   (+ hidden_bias); i, f, o = sigmoid, g = tanh of their gates;
 *   cy = f * cx + i * g; hy = o * tanh(cy); workspace = [i, f, g, o].
 *   NULL: each bias (none), workspace (not written).
 *   Args: 1 batch, 2 hidden, 3 input_gates, 4 ld_input, 5 hidden_gates,
 *   6 ld_hidden, 7 input_bias, 8 hidden_bias, 9 cx, 10 hy, 11 cy, 12 workspace.
 * lstm_cell_backward: from the forward's cx, cy and workspace,
 *   grad_gates (batch x 4H, the gradient of both gate inputs; a bias's is
 *   its column sums) and grad_cx.  NULL: grad_hy or grad_cy (an absent
 *   path, as autograd's: no 0 * NaN), cy (recomputed from the workspace
 *   and cx, the same bits), grad_gates or grad_cx (not computed).
 *   Args: 1 batch, 2 hidden, 3 grad_hy, 4 grad_cy, 5 cx, 6 cy, 7 workspace,
 *   8 grad_gates, 9 grad_cx.
 * gru_cell_forward: r = sigmoid(hg_r + ig_r), z = sigmoid(hg_z + ig_z),
 *   n = tanh(ig_n + r * hg_n), hy = (hx - n) * z + n, each gate with its
 *   bias added first; workspace = [r, z, n, hx, hg_n].
 *   NULL: each bias (none), workspace (not written).
 *   Args: 1 batch, 2 hidden, 3 input_gates, 4 ld_input, 5 hidden_gates,
 *   6 ld_hidden, 7 input_bias, 8 hidden_bias, 9 hx, 10 hy, 11 workspace.
 * gru_cell_backward: from the workspace, the gradients of the input gates,
 *   the hidden gates (batch x 3H each) and of hx through the pointwise
 *   math alone (the GEMM's share is the linear backward's).  NULL: each
 *   output (not computed).
 *   Args: 1 batch, 2 hidden, 3 grad_hy, 4 workspace, 5 grad_input_gates,
 *   6 grad_hidden_gates, 7 grad_hx.
 */
int cextend_lstm_cell_forward_f32(int64_t batch, int64_t hidden, const float *input_gates, int64_t ld_input,
                                  const float *hidden_gates, int64_t ld_hidden, const float *input_bias,
                                  const float *hidden_bias, const float *cx, float *hy, float *cy,
                                  float *workspace);
int cextend_lstm_cell_forward_f64(int64_t batch, int64_t hidden, const double *input_gates, int64_t ld_input,
                                  const double *hidden_gates, int64_t ld_hidden, const double *input_bias,
                                  const double *hidden_bias, const double *cx, double *hy, double *cy,
                                  double *workspace);
int cextend_lstm_cell_backward_f32(int64_t batch, int64_t hidden, const float *grad_hy, const float *grad_cy,
                                   const float *cx, const float *cy, const float *workspace, float *grad_gates,
                                   float *grad_cx);
int cextend_lstm_cell_backward_f64(int64_t batch, int64_t hidden, const double *grad_hy, const double *grad_cy,
                                   const double *cx, const double *cy, const double *workspace,
                                   double *grad_gates, double *grad_cx);
int cextend_gru_cell_forward_f32(int64_t batch, int64_t hidden, const float *input_gates, int64_t ld_input,
                                 const float *hidden_gates, int64_t ld_hidden, const float *input_bias,
                                 const float *hidden_bias, const float *hx, float *hy, float *workspace);
int cextend_gru_cell_forward_f64(int64_t batch, int64_t hidden, const double *input_gates, int64_t ld_input,
                                 const double *hidden_gates, int64_t ld_hidden, const double *input_bias,
                                 const double *hidden_bias, const double *hx, double *hy, double *workspace);
int cextend_gru_cell_backward_f32(int64_t batch, int64_t hidden, const float *grad_hy, const float *workspace,
                                  float *grad_input_gates, float *grad_hidden_gates, float *grad_hx);
int cextend_gru_cell_backward_f64(int64_t batch, int64_t hidden, const double *grad_hy, const double *workspace,
                                  double *grad_input_gates, double *grad_hidden_gates, double *grad_hx);

/* ---- CUDA (optional) -------------------------------------------------------
 * Built by nvcc into a separate library (`make cuda`, CEXTEND_CUDA=1) that
 * cextend.cuda loads; the CPU module's cdef stops at the marker below.
 * The same status codes; CEXTEND_ERR_CUDA carries CUDA's message.  Pointer
 * arguments of the kernels are device pointers; the linear, add,
 * mul_constant and pool entry points take exactly the CPU signatures.
 * Every launch is checked, and work is queued on the default stream
 * (results are ready for the next call or a copy to the host).
 */
/* CEXTEND_CUDA_API_BEGIN */
const char *cextend_cuda_last_error(void);
int cextend_cuda_device_count(int *count);
int cextend_cuda_malloc(void **ptr, int64_t bytes);
int cextend_cuda_free(void *ptr);
/* kind: 0 host to device, 1 device to host, 2 device to device */
int cextend_cuda_memcpy(void *dst, const void *src, int64_t bytes, int kind);
int cextend_cuda_synchronize(void);

int cextend_cuda_linear_forward_f32(int64_t n, int64_t k, int64_t m,
                                    const float *x, int64_t ldx, int transx,
                                    const float *w, int64_t ldw, int transw,
                                    const float *b, float *y, int64_t ldy);
int cextend_cuda_linear_forward_f64(int64_t n, int64_t k, int64_t m,
                                    const double *x, int64_t ldx, int transx,
                                    const double *w, int64_t ldw, int transw,
                                    const double *b, double *y, int64_t ldy);
int cextend_cuda_linear_backward_f32(int64_t n, int64_t k, int64_t m,
                                     const float *dy, int64_t lddy, int transdy,
                                     const float *x, int64_t ldx, int transx,
                                     const float *w, int64_t ldw, int transw,
                                     float *dx, int64_t lddx, float *dw, int64_t lddw, float *db);
int cextend_cuda_linear_backward_f64(int64_t n, int64_t k, int64_t m,
                                     const double *dy, int64_t lddy, int transdy,
                                     const double *x, int64_t ldx, int transx,
                                     const double *w, int64_t ldw, int transw,
                                     double *dx, int64_t lddx, double *dw, int64_t lddw, double *db);
int cextend_cuda_add_forward_f32(int64_t count, const float *a, const float *b, float *out);
int cextend_cuda_add_forward_f64(int64_t count, const double *a, const double *b, double *out);
int cextend_cuda_add_backward_f32(int64_t count, const float *grad_out, float *grad_a, float *grad_b);
int cextend_cuda_add_backward_f64(int64_t count, const double *grad_out, double *grad_a, double *grad_b);
int cextend_cuda_mul_constant_forward_f32(int64_t count, const float *x, float c, float *out);
int cextend_cuda_mul_constant_forward_f64(int64_t count, const double *x, double c, double *out);
int cextend_cuda_mul_constant_backward_f32(int64_t count, const float *grad_out, float c, float *grad_x);
int cextend_cuda_mul_constant_backward_f64(int64_t count, const double *grad_out, double c, double *grad_x);
int cextend_cuda_global_max_pool_forward_f32(int64_t planes, int64_t plane_size,
                                             const float *x, float *values, int64_t *indices);
int cextend_cuda_global_max_pool_forward_f64(int64_t planes, int64_t plane_size,
                                             const double *x, double *values, int64_t *indices);
int cextend_cuda_global_max_pool_backward_f32(int64_t planes, int64_t plane_size,
                                              const float *grad_values, const int64_t *indices,
                                              float *grad_x);
int cextend_cuda_global_max_pool_backward_f64(int64_t planes, int64_t plane_size,
                                              const double *grad_values, const int64_t *indices,
                                              double *grad_x);
/* Engine helpers: out = value; y += alpha * x; out = a op b (op 0 add,
 * 1 subtract, 2 multiply; b == NULL: the scalar s instead, swapped when
 * reversed); sums over the middle axis of (outer, reduce, inner), each
 * output summed in index order (deterministic, no atomics); relu and its
 * backward; dtype casts; a strided gather into contiguous dst (strides in
 * elements, 0 for broadcast dims; at most 8 dims). */
int cextend_cuda_fill_f32(int64_t count, float value, float *out);
int cextend_cuda_fill_f64(int64_t count, double value, double *out);
int cextend_cuda_axpy_f32(int64_t count, float alpha, const float *x, float *y);
int cextend_cuda_axpy_f64(int64_t count, double alpha, const double *x, double *y);
int cextend_cuda_binary_f32(int op, int64_t count, const float *a, const float *b, float s, int reversed, float *out);
int cextend_cuda_binary_f64(int op, int64_t count, const double *a, const double *b, double s, int reversed, double *out);
int cextend_cuda_sum_f32(int64_t outer, int64_t reduce, int64_t inner, const float *x, float *out);
int cextend_cuda_sum_f64(int64_t outer, int64_t reduce, int64_t inner, const double *x, double *out);
int cextend_cuda_relu_f32(int64_t count, const float *x, float *out);
int cextend_cuda_relu_f64(int64_t count, const double *x, double *out);
int cextend_cuda_relu_backward_f32(int64_t count, const float *x, const float *grad_out, float *grad_x);
int cextend_cuda_relu_backward_f64(int64_t count, const double *x, const double *grad_out, double *grad_x);
int cextend_cuda_cast_f32_f64(int64_t count, const float *src, double *dst);
int cextend_cuda_cast_f64_f32(int64_t count, const double *src, float *dst);
int cextend_cuda_strided_copy(int ndim, const int64_t *shape, const int64_t *strides,
                              int64_t elem_size, const void *src, void *dst);
/* CEXTEND_CUDA_API_END */

#ifdef __cplusplus
}
#endif

#endif /* CEXTEND_H */
