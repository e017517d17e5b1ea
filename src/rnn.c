/*
 * rnn.c -- the pointwise part of a recurrent cell's time step, fused: what
 * torch's _thnn_fused_lstm_cell and _thnn_fused_gru_cell compute (and their
 * backward), after the two GEMMs of the step (x W_ih^T + b_ih and
 * h W_hh^T + b_hh, which the linear kernels compute).  One call per step
 * replaces a dozen elementwise passes.
 * Instantiates generic/rnn.c once per dtype (TH's generic/ pattern).
 *
 * Every output element depends only on the inputs at its own (row, unit),
 * so the work splits across threads anywhere and the results are the same
 * bits for any thread count.  float32 computes in float with libm's
 * float functions, float64 in double.
 */
#include <math.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "nn_internal.h"

/* Gates per hidden unit: LSTM's i, f, g, o; GRU's r, z, n; GRU's workspace
 * keeps r, z, n, hx and the hidden gate n (with its bias). */
#define CX_LSTM_GATES 4
#define CX_GRU_GATES 3
#define CX_GRU_WORKSPACE 5

/* An activation costs about as much as this many plain element passes:
 * the thread count is chosen for batch * hidden * CX_RNN_COST elements. */
#define CX_RNN_COST 8.0

/* Units of a row that a part of the work handles at once (its temporaries
 * are a few arrays of this length on the stack). */
#define CX_RNN_CHUNK 256

/*
 * The checks shared by the four entry points, element size es.
 * cx_rnn_check_sizes: batch and hidden are sizes, and gates * hidden
 * elements per row fit (blamed on hidden, argument 2).
 */
static int cx_rnn_check_sizes(const char *fn, int64_t batch, int64_t hidden, int gates)
{
    int st;
    if ((st = cx_check_size(fn, 1, "batch", batch)) || (st = cx_check_size(fn, 2, "hidden", hidden)))
        return st;
    int64_t width, total;
    if (__builtin_mul_overflow(hidden, (int64_t)gates, &width) ||
        __builtin_mul_overflow(width, batch, &total))
        return cx_illegal(fn, 2, "hidden", "%lld rows of %d x %lld gates overflow an element count",
                          (long long)batch, gates, (long long)hidden);
    return 0;
}

/* A C-contiguous batch x cols operand (cols = gates * hidden); an
 * impossible byte span is blamed on hidden (argument 2). */
static int cx_rnn_check_dense(const char *fn, const char *name, int nullable, const void *ptr, int pos,
                              int64_t batch, int64_t cols, size_t es)
{
    return cx_check_matrix(fn, name, nullable, ptr, pos, batch, cols, cols > 1 ? cols : 1, 2, "hidden",
                           0, 0, "", es);
}

/* A gate operand: batch x cols with a row stride ld (ld >= max(1, cols)). */
static int cx_rnn_check_gates(const char *fn, const char *name, int nullable, const void *ptr, int pos,
                              int64_t batch, int64_t cols, int64_t ld, int ld_pos, const char *ld_name,
                              size_t es)
{
    return cx_check_matrix(fn, name, nullable, ptr, pos, batch, cols, ld, ld_pos, ld_name, 0, 0, "", es);
}

static int cx_validate_lstm_forward(const char *fn, size_t es, int64_t batch, int64_t hidden,
                                    const void *input_gates, int64_t ld_input, const void *hidden_gates,
                                    int64_t ld_hidden, const void *input_bias, const void *hidden_bias,
                                    const void *cx, const void *hy, const void *cy, const void *workspace)
{
    int st;
    if ((st = cx_rnn_check_sizes(fn, batch, hidden, CX_LSTM_GATES)))
        return st;
    const int64_t width = CX_LSTM_GATES * hidden;
    if ((st = cx_rnn_check_gates(fn, "input_gates", 0, input_gates, 3, batch, width, ld_input, 4, "ld_input", es)) ||
        (st = cx_rnn_check_gates(fn, "hidden_gates", 0, hidden_gates, 5, batch, width, ld_hidden, 6, "ld_hidden",
                                 es)) ||
        (st = cx_check_vector(fn, "input_bias", 1, input_bias, 7, width, 2, "hidden", es)) ||
        (st = cx_check_vector(fn, "hidden_bias", 1, hidden_bias, 8, width, 2, "hidden", es)) ||
        (st = cx_rnn_check_dense(fn, "cx", 0, cx, 9, batch, hidden, es)) ||
        (st = cx_rnn_check_dense(fn, "hy", 0, hy, 10, batch, hidden, es)) ||
        (st = cx_rnn_check_dense(fn, "cy", 0, cy, 11, batch, hidden, es)) ||
        (st = cx_rnn_check_dense(fn, "workspace", 1, workspace, 12, batch, width, es)))
        return st;
    return 0;
}

static int cx_validate_lstm_backward(const char *fn, size_t es, int64_t batch, int64_t hidden,
                                     const void *grad_hy, const void *grad_cy, const void *cx, const void *cy,
                                     const void *workspace, const void *grad_gates, const void *grad_cx)
{
    int st;
    if ((st = cx_rnn_check_sizes(fn, batch, hidden, CX_LSTM_GATES)))
        return st;
    const int64_t width = CX_LSTM_GATES * hidden;
    if ((st = cx_rnn_check_dense(fn, "grad_hy", 1, grad_hy, 3, batch, hidden, es)) ||
        (st = cx_rnn_check_dense(fn, "grad_cy", 1, grad_cy, 4, batch, hidden, es)) ||
        (st = cx_rnn_check_dense(fn, "cx", 0, cx, 5, batch, hidden, es)) ||
        (st = cx_rnn_check_dense(fn, "cy", 1, cy, 6, batch, hidden, es)) ||
        (st = cx_rnn_check_dense(fn, "workspace", 0, workspace, 7, batch, width, es)) ||
        (st = cx_rnn_check_dense(fn, "grad_gates", 1, grad_gates, 8, batch, width, es)) ||
        (st = cx_rnn_check_dense(fn, "grad_cx", 1, grad_cx, 9, batch, hidden, es)))
        return st;
    return 0;
}

static int cx_validate_gru_forward(const char *fn, size_t es, int64_t batch, int64_t hidden,
                                   const void *input_gates, int64_t ld_input, const void *hidden_gates,
                                   int64_t ld_hidden, const void *input_bias, const void *hidden_bias,
                                   const void *hx, const void *hy, const void *workspace)
{
    int st;
    if ((st = cx_rnn_check_sizes(fn, batch, hidden, CX_GRU_WORKSPACE)))
        return st;
    const int64_t width = CX_GRU_GATES * hidden;
    if ((st = cx_rnn_check_gates(fn, "input_gates", 0, input_gates, 3, batch, width, ld_input, 4, "ld_input", es)) ||
        (st = cx_rnn_check_gates(fn, "hidden_gates", 0, hidden_gates, 5, batch, width, ld_hidden, 6, "ld_hidden",
                                 es)) ||
        (st = cx_check_vector(fn, "input_bias", 1, input_bias, 7, width, 2, "hidden", es)) ||
        (st = cx_check_vector(fn, "hidden_bias", 1, hidden_bias, 8, width, 2, "hidden", es)) ||
        (st = cx_rnn_check_dense(fn, "hx", 0, hx, 9, batch, hidden, es)) ||
        (st = cx_rnn_check_dense(fn, "hy", 0, hy, 10, batch, hidden, es)) ||
        (st = cx_rnn_check_dense(fn, "workspace", 1, workspace, 11, batch, CX_GRU_WORKSPACE * hidden, es)))
        return st;
    return 0;
}

static int cx_validate_gru_backward(const char *fn, size_t es, int64_t batch, int64_t hidden,
                                    const void *grad_hy, const void *workspace, const void *grad_input_gates,
                                    const void *grad_hidden_gates, const void *grad_hx)
{
    int st;
    if ((st = cx_rnn_check_sizes(fn, batch, hidden, CX_GRU_WORKSPACE)))
        return st;
    const int64_t width = CX_GRU_GATES * hidden;
    if ((st = cx_rnn_check_dense(fn, "grad_hy", 0, grad_hy, 3, batch, hidden, es)) ||
        (st = cx_rnn_check_dense(fn, "workspace", 0, workspace, 4, batch, CX_GRU_WORKSPACE * hidden, es)) ||
        (st = cx_rnn_check_dense(fn, "grad_input_gates", 1, grad_input_gates, 5, batch, width, es)) ||
        (st = cx_rnn_check_dense(fn, "grad_hidden_gates", 1, grad_hidden_gates, 6, batch, width, es)) ||
        (st = cx_rnn_check_dense(fn, "grad_hx", 1, grad_hx, 7, batch, hidden, es)))
        return st;
    return 0;
}

/* The element range [start, end) of the flattened batch x hidden units that
 * thread t of n computes (contiguous, whole rows or parts of rows). */
static inline void cx_rnn_share(int64_t total, int t, int n, int64_t *start, int64_t *end)
{
    const int64_t base = total / n, extra = total % n;
    *start = (int64_t)t * base + (t < extra ? t : extra);
    *end = *start + base + (t < extra ? 1 : 0);
}

/* The clamps in vector_math.h are selects; GCC vectorises a loop holding
 * them only when told that floating-point operations do not trap (that
 * changes no value).  Every function from here on is compiled so, so the
 * always-inline helpers inline into the cell loops. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

#include "vector_math.h"

/* The loops are compiled for plain x86-64 and again for AVX2 (wider
 * vectors, the same operations: no FMA contraction under -std=c11), and
 * the AVX2 copy runs when the GEMM's instruction set is AVX2 or better
 * (CEXTEND_ISA=generic picks the plain copy; the bits are the same). */
#if defined(CX_HAVE_X86_KERNELS)
#define CX_RNN_AVX2 1
static int cx_rnn_use_avx2(void)
{
    return cx_isa_current() >= CEXTEND_ISA_AVX2;
}
#else
#define CX_RNN_AVX2 0
#endif

#define REAL float
#define SFX f32
#define CX_SIGMOID cx_sigmoid_f32
#define CX_TANH cx_tanh_f32
#include "generic/rnn.c"
#undef REAL
#undef SFX
#undef CX_SIGMOID
#undef CX_TANH

#define REAL double
#define SFX f64
#define CX_SIGMOID cx_sigmoid_f64
#define CX_TANH cx_tanh_f64
#include "generic/rnn.c"
#undef REAL
#undef SFX
#undef CX_SIGMOID
#undef CX_TANH
