/*
 * internal.h -- helpers shared by cextend's C sources; not part of the API.
 *
 * Internal symbols are prefixed cx_ and hidden from the shared object, so
 * the only exported names are the cextend_ entry points of cextend.h.
 */
#ifndef CEXTEND_INTERNAL_H
#define CEXTEND_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "cextend.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define CX_INTERNAL __attribute__((visibility("hidden")))
#define CX_PRINTF(fmt_pos, args_pos) __attribute__((format(printf, fmt_pos, args_pos)))
#else
#define CX_INTERNAL
#define CX_PRINTF(fmt_pos, args_pos)
#endif

/* Record "fn: message" as this thread's last error and return status. */
CX_INTERNAL int cx_fail(int status, const char *fn, const char *fmt, ...) CX_PRINTF(3, 4);

/* Argument `pos` (1-based) named `name` of `fn` is illegal: returns -pos. */
CX_INTERNAL int cx_illegal(const char *fn, int pos, const char *name, const char *fmt, ...)
    CX_PRINTF(4, 5);

/* A size argument must be >= 0. Returns 0 or -pos. */
CX_INTERNAL int cx_check_size(const char *fn, int pos, const char *name, int64_t value);

/*
 * A rows x cols operand described BLAS-style (see cextend.h).  Checks, in
 * this order: the transpose flag is 0 or 1 (trans_pos 0 means the operand
 * has no flag and is never transposed); the pointer is non-NULL if the
 * operand holds elements (nullable: NULL means "skip" and is accepted);
 * the leading dimension covers a stored row; the byte span of the operand
 * fits in a ptrdiff_t.  Returns 0 or minus the position of the bad argument.
 */
CX_INTERNAL int cx_check_matrix(const char *fn, const char *name, int nullable,
                                const void *ptr, int ptr_pos,
                                int64_t rows, int64_t cols,
                                int64_t ld, int ld_pos, const char *ld_name,
                                int trans, int trans_pos, const char *trans_name,
                                size_t elem_size);

/* A vector of count contiguous elements; same rules as cx_check_matrix.
 * An overflowing byte count is blamed on count_pos (the size argument). */
CX_INTERNAL int cx_check_vector(const char *fn, const char *name, int nullable,
                                const void *ptr, int ptr_pos,
                                int64_t count, int count_pos, const char *count_name,
                                size_t elem_size);

/*
 * Whole-argument-list validation of each entry point, shared by the CPU
 * kernels and the CUDA library so both report the same statuses and
 * messages.  Positions and names are those of cextend.h; es is the element
 * size.  Each returns 0 or the (negative) status.
 */
CX_INTERNAL int cx_validate_linear_forward(const char *fn, size_t es, int64_t n, int64_t k, int64_t m,
                                           const void *x, int64_t ldx, int transx,
                                           const void *w, int64_t ldw, int transw,
                                           const void *b, const void *y, int64_t ldy);
CX_INTERNAL int cx_validate_linear_forward_contiguous(const char *fn, size_t es, int64_t n, int64_t k,
                                                      int64_t m, const void *x, const void *w,
                                                      const void *b, const void *y);
CX_INTERNAL int cx_validate_linear_backward(const char *fn, size_t es, int64_t n, int64_t k, int64_t m,
                                            const void *dy, int64_t lddy, int transdy,
                                            const void *x, int64_t ldx, int transx,
                                            const void *w, int64_t ldw, int transw,
                                            const void *dx, int64_t lddx, const void *dw, int64_t lddw,
                                            const void *db);
CX_INTERNAL int cx_validate_add_forward(const char *fn, size_t es, int64_t count,
                                        const void *a, const void *b, const void *out);
CX_INTERNAL int cx_validate_add_backward(const char *fn, size_t es, int64_t count,
                                         const void *grad_out, const void *grad_a, const void *grad_b);
CX_INTERNAL int cx_validate_unary(const char *fn, size_t es, int64_t count, const void *in,
                                  const char *in_name, const void *out, const char *out_name);
CX_INTERNAL int cx_validate_pool_forward(const char *fn, size_t es, int64_t planes, int64_t plane_size,
                                         const void *x, const void *values, const void *indices);
CX_INTERNAL int cx_validate_pool_backward(const char *fn, size_t es, int64_t planes, int64_t plane_size,
                                          const void *grad_values, const void *indices, const void *grad_x);

/* Strides (in elements) of the logical element [i][j] of a BLAS-style operand. */
static inline void cx_strides(int64_t ld, int trans, int64_t *row_stride, int64_t *col_stride)
{
    *row_stride = trans ? 1 : ld;
    *col_stride = trans ? ld : 1;
}

/* The instruction set in use (a CEXTEND_ISA_* value, never AUTO). */
CX_INTERNAL int cx_isa_current(void);
/* Where a plan keeps its packed block of B: the rule measured for its
 * kernels (cpu_cache.c). */
enum {
    CX_B_BLOCK_IN_L3 = 0,           /* the plan's nc on every CPU */
    CX_B_BLOCK_L2_ON_INTEL = 1,     /* at most L2's size on Intel CPUs */
    CX_B_BLOCK_TWICE_L2_ON_AMD = 2, /* at most twice L2's size on AMD CPUs */
    CX_B_BLOCK_SIX_L2_ON_AMD = 3,   /* at most six times L2's size on AMD CPUs */
    CX_B_BLOCK_RULES = 4
};
/* The largest packed block of B a rule allows on this CPU, in bytes, or
 * 0: no limit. */
CX_INTERNAL int64_t cx_b_block_cap_bytes(int rule);

/* A 64-byte aligned buffer of at least `bytes` for this thread's temporary
 * of one kind (scratch.c: kept between calls, so no page faults each
 * call), or NULL when memory runs out.  Valid until this thread's next
 * request of the same kind; cx_scratch_done(kind) when the call ends. */
enum { CX_SCRATCH_GEMM, CX_SCRATCH_CONV, CX_SCRATCH_KINDS };
CX_INTERNAL void *cx_scratch(int kind, size_t bytes);
CX_INTERNAL void cx_scratch_done(int kind);
/* Threads to use for a problem of `work` multiply-adds (1 for small ones). */
CX_INTERNAL int cx_threads_for(double work);

/*
 * A microkernel computes one MR x NR tile of C from a packed A micro-panel
 * (kc steps of MR values) and a B micro-panel (kc rows of NR values, row p
 * at b + p * b_rs: packed, or B itself when its rows are contiguous):
 *     accumulate == 0:  C = acc (+ bias[j] when bias != NULL)
 *     accumulate == 1:  C = C + acc
 * where acc[i][j] is the fused multiply-add chain over p = 0..kc-1 from 0.
 * Every tile of every product follows this arithmetic, which is why results
 * never depend on layout, packing or the number of threads.
 */
typedef void (*cx_ukernel_f32)(int64_t kc, const float *a, const float *b, int64_t b_rs,
                               float *c, int64_t ldc, const float *bias, int accumulate);
typedef void (*cx_ukernel_f64)(int64_t kc, const double *a, const double *b, int64_t b_rs,
                               double *c, int64_t ldc, const double *bias, int accumulate);

/* The same tile for a ragged edge: only C's first `rows` rows (1 <= rows
 * <= MR) are computed and written, each with the arithmetic above, from
 * the same packed micro-panels (A's steps still MR values apart). */
typedef void (*cx_ukernel_rows_f32)(int64_t rows, int64_t kc, const float *a, const float *b, int64_t b_rs,
                                    float *c, int64_t ldc, const float *bias, int accumulate);
typedef void (*cx_ukernel_rows_f64)(int64_t rows, int64_t kc, const double *a, const double *b, int64_t b_rs,
                                    double *c, int64_t ldc, const double *bias, int accumulate);

/*
 * Packs B[0:kc, 0:nc] where B[p][j] = b[p + j * csb] (every column
 * contiguous: W^T in the forward pass) into the nr-column micro-panels the
 * microkernel reads (kc rows of nr values each, columns past nc zero).
 */
typedef void (*cx_pack_cols_f32)(int64_t kc, int64_t nc, const float *b, int64_t csb, float *bp);
typedef void (*cx_pack_cols_f64)(int64_t kc, int64_t nc, const double *b, int64_t csb, double *bp);
/* Packs A[0:mc, 0:kc] where A[i][p] = a[i * rsa + p] (every row contiguous)
 * into the mr-row micro-panels the microkernel reads. */
typedef void (*cx_pack_rows_f32)(int64_t mc, int64_t kc, const float *a, int64_t rsa, float *ap);
typedef void (*cx_pack_rows_f64)(int64_t mc, int64_t kc, const double *a, int64_t rsa, double *ap);
/* The whole product C = A.B (+ bias), cx_gemm's contract, for K <= kc,
 * without packing: the microkernel's arithmetic element by element, for
 * products so small that packing would cost more than they do. */
typedef void (*cx_tiny_f32)(int64_t M, int64_t N, int64_t K, const float *a, int64_t rsa, int64_t csa,
                            const float *b, int64_t rsb, int64_t csb, const float *bias, float *c,
                            int64_t ldc);
typedef void (*cx_tiny_f64)(int64_t M, int64_t N, int64_t K, const double *a, int64_t rsa, int64_t csa,
                            const double *b, int64_t rsb, int64_t csb, const double *bias, double *c,
                            int64_t ldc);

/* A microkernel with its register block (mr x nr) and cache blocks:
 * kc (a B micro-panel of kc x nr stays in L1), mc (a packed mc x kc block
 * of A stays in L2), nc (a packed kc x nc block of B stays in L3, or
 * smaller where the plan's b_block rule caps it on this CPU), and the
 * ISA's own packing of column-contiguous B and row-contiguous A (NULL: the
 * portable loops), its unpacked path for tiny products, and optionally a
 * kernel for tiles with fewer than mr rows and one for a ragged last panel
 * of at most nr / 2 columns (a classifier's 10 outputs).  A plan whose
 * tile is slow on few rows names the plan those products use instead;
 * both have the same kc, so every element is the same sum in the same
 * order either way: the same bits. */
typedef struct cx_plan_f32 {
    int mr, nr;
    int64_t kc, mc, nc;
    cx_ukernel_f32 run;
    cx_pack_cols_f32 pack_b_cols;
    cx_pack_rows_f32 pack_a_rows;
    cx_tiny_f32 tiny;
    cx_ukernel_rows_f32 run_rows;       /* NULL: edge tiles run the whole tile */
    cx_ukernel_f32 run_narrow;          /* a tile's first nr / 2 columns; NULL: the whole tile */
    int pack_wt_by_panel;               /* pack B = W^T a micro-panel at a time, as first used */
    int b_block;                        /* a CX_B_BLOCK_* rule: nc capped by cx_b_block_cap_bytes */
    const struct cx_plan_f32 *few_rows; /* the plan for products of fewer than */
    int64_t few_rows_below;             /* these rows; NULL, 0: this one */
} cx_plan_f32;
typedef struct cx_plan_f64 {
    int mr, nr;
    int64_t kc, mc, nc;
    cx_ukernel_f64 run;
    cx_pack_cols_f64 pack_b_cols;
    cx_pack_rows_f64 pack_a_rows;
    cx_tiny_f64 tiny;
    cx_ukernel_rows_f64 run_rows;
    cx_ukernel_f64 run_narrow;
    int pack_wt_by_panel;
    int b_block;
    const struct cx_plan_f64 *few_rows;
    int64_t few_rows_below;
} cx_plan_f64;

CX_INTERNAL extern const cx_plan_f32 cx_plan_generic_f32;
CX_INTERNAL extern const cx_plan_f64 cx_plan_generic_f64;
#if defined(__x86_64__) || defined(__i386__)
#define CX_HAVE_X86_KERNELS 1
CX_INTERNAL extern const cx_plan_f32 cx_plan_avx2_f32, cx_plan_avx512_f32;
CX_INTERNAL extern const cx_plan_f64 cx_plan_avx2_f64, cx_plan_avx512_f64;
/* A kernel written once in portable C is compiled again under each of
 * these (the compiler vectorises each copy for that instruction set) and
 * the copy for cx_isa_current() runs.  Only for loops whose results do not
 * depend on the vector width (selects, or the same operation order). */
#define CX_TARGET_AVX2 __attribute__((target("avx2")))
#define CX_TARGET_AVX512 __attribute__((target("avx512f")))
#endif

/* The largest register block of any plan: the size of an edge tile buffer. */
#define CX_MAX_TILE (16 * 32)

/*
 * The GEMM behind every Linear product, one per dtype:
 *     C[i][j] = sum_p A[i][p] * B[p][j]  (+ bias[j] if bias != NULL)
 * for i < M, j < N, p < K, with A[i][p] = a[i*rsa + p*csa],
 * B[p][j] = b[p*rsb + j*csb], C[i][j] = c[i*ldc + j].  beta = 0: C is
 * only written.  Callers have validated every argument; M, N, K may be 0.
 * Returns CEXTEND_OK or CEXTEND_ERR_NOMEM.
 */
CX_INTERNAL int cx_gemm_f32(int64_t M, int64_t N, int64_t K,
                            const float *a, int64_t rsa, int64_t csa,
                            const float *b, int64_t rsb, int64_t csb,
                            const float *bias, float *c, int64_t ldc);
CX_INTERNAL int cx_gemm_f64(int64_t M, int64_t N, int64_t K,
                            const double *a, int64_t rsa, int64_t csa,
                            const double *b, int64_t rsb, int64_t csb,
                            const double *bias, double *c, int64_t ldc);
/* Whether cx_gemm, on the instruction set in use, pads its register tiles
 * less computing an M x N product's transpose (N x M): for a caller free
 * to compute either. */
CX_INTERNAL int cx_gemm_transpose_pads_less_f32(int64_t M, int64_t N);
CX_INTERNAL int cx_gemm_transpose_pads_less_f64(int64_t M, int64_t N);
/* A plan's nc on this CPU: capped where cx_b_block_cap_bytes says. */
CX_INTERNAL int64_t cx_gemm_nc_f32(const cx_plan_f32 *plan);
CX_INTERNAL int64_t cx_gemm_nc_f64(const cx_plan_f64 *plan);
/* The simple loops behind the "reference" ISA (same contract). */
CX_INTERNAL int cx_gemm_reference_f32(int64_t M, int64_t N, int64_t K,
                                      const float *a, int64_t rsa, int64_t csa,
                                      const float *b, int64_t rsb, int64_t csb,
                                      const float *bias, float *c, int64_t ldc);
CX_INTERNAL int cx_gemm_reference_f64(int64_t M, int64_t N, int64_t K,
                                      const double *a, int64_t rsa, int64_t csa,
                                      const double *b, int64_t rsb, int64_t csb,
                                      const double *bias, double *c, int64_t ldc);

/* sums[j] = sum_i A[i][j] for an M x N operand A[i][j] = a[i*rs + j*cs]. */
CX_INTERNAL void cx_column_sums_f32(int64_t M, int64_t N, const float *a,
                                    int64_t rs, int64_t cs, float *sums);
CX_INTERNAL void cx_column_sums_f64(int64_t M, int64_t N, const double *a,
                                    int64_t rs, int64_t cs, double *sums);

/* Token pasting for the generic/ sources, which are compiled once per dtype
 * with REAL (the element type) and SFX (f32 or f64) defined. */
#define CX_PASTE_(a, b) a##_##b
#define CX_PASTE(a, b) CX_PASTE_(a, b)
#define CX_FN(name) CX_PASTE(name, SFX)
/* The copy of a generic/ kernel compiled once per instruction set (plain,
 * CX_TARGET_AVX2 and CX_TARGET_AVX512, named name, name_avx2 and
 * name_avx512) for the one in use. */
#if defined(CX_HAVE_X86_KERNELS)
#define CX_FN_FOR_ISA(name)                                                                                 \
    (cx_isa_current() >= CEXTEND_ISA_AVX512 ? CX_FN(name##_avx512)                                          \
     : cx_isa_current() >= CEXTEND_ISA_AVX2 ? CX_FN(name##_avx2) : CX_FN(name))
#else
#define CX_FN_FOR_ISA(name) CX_FN(name)
#endif
#define CX_STR_(x) #x
#define CX_STR(x) CX_STR_(x)

#ifdef __cplusplus
}
#endif

#endif /* CEXTEND_INTERNAL_H */
