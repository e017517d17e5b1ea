/*
 * generic/gemm.c -- the GEMM engine behind every Linear product:
 *     C[M x N] = A[M x K] . B[K x N]  (+ bias[N]),  beta = 0
 * (see internal.h for the strides).  The BLIS plan:
 *
 *   for jc in N by nc:                     B block kc x nc   -> L3
 *     for pc in K by kc:                   (k is never split across threads)
 *       pack B[pc:, jc:] into nr-wide micro-panels
 *       for ic in M by mc:                 A block mc x kc   -> L2
 *         pack A[ic:, pc:] into mr-tall micro-panels
 *         for jr in nc by nr:              B micro-panel     -> L1
 *           for ir in mc by mr:            microkernel: an mr x nr tile of C
 *
 * The first k block writes C (plus the bias: the fused epilogue), later
 * ones add to it.  Edge tiles are computed whole into a scratch tile and
 * the valid part copied out with the same additions, so every element of C
 * sees one fixed sequence of operations: results do not depend on the
 * operands' layout, on packing, or on how many threads split the output.
 *
 * Tiny products (up to TINY_WORK multiply-adds) skip packing altogether:
 * the plan's tiny path computes each element with the microkernel's own
 * arithmetic.  Small products: when M is small and B's rows are
 * contiguous, packing B would cost about as much as the product, so the
 * microkernel reads B's rows in place (only a ragged last panel is packed).
 */

#define PLAN CX_PASTE(cx_plan, SFX)

/* Up to this many multiply-adds (in one k block), the plan's unpacked
 * tiny path beats packing: scalar FMAs at about two a cycle against a
 * packed path's ~150 ns of fixed cost (a 1x8x8 Linear is 64). */
#define TINY_WORK 1024
/* Up to this many row panels, reading B in place beats packing it. */
#define SMALL_M_PANELS 4
/* Packing row-contiguous B reads this many micro-panels of a row at once. */
#ifndef PACK_ROW_PANELS
#define PACK_ROW_PANELS 8
#endif
/* Pack buffers up to this size live on the stack. */
#ifndef STACK_SCRATCH_BYTES
#define STACK_SCRATCH_BYTES (32 * 1024)
#endif

/* The plan of an instruction set for a product of M rows. */
static const PLAN *CX_FN(plan_for)(int isa, int64_t M)
{
    const PLAN *plan = &CX_PASTE(cx_plan_generic, SFX);
#if defined(CX_HAVE_X86_KERNELS)
    if (isa == CEXTEND_ISA_AVX512)
        plan = &CX_PASTE(cx_plan_avx512, SFX);
    else if (isa == CEXTEND_ISA_AVX2)
        plan = &CX_PASTE(cx_plan_avx2, SFX);
#endif
    (void)isa;
    return plan->few_rows && M < plan->few_rows_below ? plan->few_rows : plan;
}

static inline int64_t CX_FN(min64)(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static inline int64_t CX_FN(round_up)(int64_t x, int64_t multiple)
{
    return (x + multiple - 1) / multiple * multiple;
}

/* pack_a with rsa == 1: A[i][p] = a[i + p * csa].  Always inlined with a
 * constant mr, so a full panel's step is a fixed-size copy. */
static inline __attribute__((always_inline)) void CX_FN(pack_a_cols)(int64_t mc, int64_t kc, const REAL *a,
                                                                     int64_t csa, const int mr,
                                                                     REAL *restrict ap)
{
    for (int64_t ir = 0; ir < mc; ir += mr, ap += (int64_t)mr * kc) {
        const int64_t rows = CX_FN(min64)(mr, mc - ir);
        const REAL *src = a + ir;
        if (rows == mr) {
            for (int64_t p = 0; p < kc; ++p)
                __builtin_memcpy(ap + p * mr, src + p * csa, (size_t)mr * sizeof(REAL));
        } else {
            for (int64_t p = 0; p < kc; ++p) {
                for (int64_t i = 0; i < rows; ++i)
                    ap[p * mr + i] = src[p * csa + i];
                for (int64_t i = rows; i < mr; ++i)
                    ap[p * mr + i] = 0;
            }
        }
    }
}

/* The block size for an extent split into ceil(extent / most) blocks of
 * about equal size, rounded up to a multiple of unit; never above most
 * when most is a multiple of unit (every plan's mc and nc are). */
static inline int64_t CX_FN(balanced)(int64_t extent, int64_t most, int64_t unit)
{
    if (extent <= most)
        return most;
    const int64_t blocks = (extent + most - 1) / most;
    return CX_FN(min64)(most, CX_FN(round_up)((extent + blocks - 1) / blocks, unit));
}

/* The most columns of one packed block of B: the plan's nc, or fewer where
 * the plan's rule caps the block on this CPU (cpu_cache.c).  A multiple of
 * nr. */
int64_t CX_FN(cx_gemm_nc)(const PLAN *plan)
{
    const int64_t cap = cx_b_block_cap_bytes(plan->b_block);
    if (cap <= 0)
        return plan->nc;
    const int64_t fits = cap / (plan->kc * (int64_t)sizeof(REAL)) / plan->nr * plan->nr;
    return fits < plan->nr ? plan->nr : CX_FN(min64)(fits, plan->nc);
}

/* A[0:mc, 0:kc] (strides rsa, csa) -> mr-row micro-panels, each kc steps of
 * mr values; rows past mc are zero so edge tiles compute harmlessly. */
static void CX_FN(pack_a)(const PLAN *plan, int64_t mc, int64_t kc, const REAL *a, int64_t rsa,
                          int64_t csa, int mr, REAL *restrict ap)
{
    if (csa == 1 && rsa != 1 && plan->pack_a_rows) {
        plan->pack_a_rows(mc, kc, a, rsa, ap);      /* transposing in registers */
        return;
    }
    if (rsa == 1) {
        /* Columns contiguous (A = dy^T for dW): each step of a full panel
         * is one copy of mr adjacent values, of a size known here so that
         * it compiles to a few vector moves instead of a memmove call. */
        switch (mr) {
        case 4: CX_FN(pack_a_cols)(mc, kc, a, csa, 4, ap); return;
        case 6: CX_FN(pack_a_cols)(mc, kc, a, csa, 6, ap); return;
        case 8: CX_FN(pack_a_cols)(mc, kc, a, csa, 8, ap); return;
        default: break;
        }
    }
    for (int64_t ir = 0; ir < mc; ir += mr) {
        const int64_t rows = CX_FN(min64)(mr, mc - ir);
        const REAL *src = a + ir * rsa;
        if (csa == 1) {
            for (int64_t i = 0; i < rows; ++i) {
                const REAL *row = src + i * rsa;
                for (int64_t p = 0; p < kc; ++p)
                    ap[p * mr + i] = row[p];
            }
        } else {
            for (int64_t p = 0; p < kc; ++p)
                for (int64_t i = 0; i < rows; ++i)
                    ap[p * mr + i] = src[i * rsa + p * csa];
        }
        for (int64_t p = 0; p < kc; ++p)
            for (int64_t i = rows; i < mr; ++i)
                ap[p * mr + i] = 0;
        ap += (int64_t)mr * kc;
    }
}

/* B[0:kc, 0:nc] with contiguous rows (csb == 1): a straight copy into
 * micro-panels.  Each row is read PACK_ROW_PANELS panels' worth at a time,
 * in runs the hardware prefetcher follows; going one panel at a time down
 * rows a page or more apart (a 2048-wide W) kept missing the cache. */
static inline __attribute__((always_inline)) void CX_FN(pack_b_rows_nr)(int64_t kc, int64_t nc, const REAL *b,
                                                                         int64_t rsb, const int nr,
                                                                         const int nr_const, REAL *restrict bp)
{
    const int64_t group = (int64_t)nr * PACK_ROW_PANELS;
    for (int64_t j0 = 0; j0 < nc; j0 += group) {
        const int64_t width = CX_FN(min64)(group, nc - j0);
        REAL *panels = bp + j0 * kc;                /* j0 is a multiple of nr */
        for (int64_t p = 0; p < kc; ++p) {
            const REAL *row = b + p * rsb + j0;
            for (int64_t jr = 0; jr < width; jr += nr) {
                const int64_t cols = CX_FN(min64)(nr, width - jr);
                REAL *dst = panels + jr * kc + p * nr;
                if (cols == nr && nr_const) {
                    /* A constant size: a few vector moves, not a memcpy call. */
                    __builtin_memcpy(dst, row + jr, nr_const * sizeof(REAL));
                    continue;
                }
                for (int64_t j = 0; j < cols; ++j)
                    dst[j] = row[jr + j];
                for (int64_t j = cols; j < nr; ++j)
                    dst[j] = 0;
            }
        }
    }
}

static void CX_FN(pack_b_rows)(int64_t kc, int64_t nc, const REAL *b, int64_t rsb, int nr,
                               REAL *restrict bp)
{
    switch (nr) {
    case 4: CX_FN(pack_b_rows_nr)(kc, nc, b, rsb, 4, 4, bp); break;
    case 8: CX_FN(pack_b_rows_nr)(kc, nc, b, rsb, 8, 8, bp); break;
    case 16: CX_FN(pack_b_rows_nr)(kc, nc, b, rsb, 16, 16, bp); break;
    case 32: CX_FN(pack_b_rows_nr)(kc, nc, b, rsb, 32, 32, bp); break;
    default: CX_FN(pack_b_rows_nr)(kc, nc, b, rsb, nr, 0, bp); break;
    }
}

/* B[0:kc, 0:nc] (strides rsb, csb) -> nr-column micro-panels, each kc rows
 * of nr values; columns past nc are zero. */
static void CX_FN(pack_b)(const PLAN *plan, int64_t kc, int64_t nc, const REAL *b, int64_t rsb,
                          int64_t csb, int nr, REAL *restrict bp)
{
    if (csb == 1) {
        CX_FN(pack_b_rows)(kc, nc, b, rsb, nr, bp);
        return;
    }
    if (rsb == 1 && plan->pack_b_cols) {
        plan->pack_b_cols(kc, nc, b, csb, bp);      /* transposing in registers */
        return;
    }
    /* Transposing without the ISA's help (B = W^T in the forward pass on
     * the portable plan): eight columns at a time, so eight source streams
     * advance together and each step writes eight adjacent values. */
    for (int64_t jr = 0; jr < nc; jr += nr) {
        const int64_t cols = CX_FN(min64)(nr, nc - jr);
        const REAL *src = b + jr * csb;
        int64_t j = 0;
        for (; j + 8 <= cols; j += 8) {
            const REAL *c0 = src + j * csb;
            for (int64_t p = 0; p < kc; ++p) {
                REAL *dst = bp + p * nr + j;
                const REAL *s = c0 + p * rsb;
                for (int q = 0; q < 8; ++q)
                    dst[q] = s[q * csb];
            }
        }
        for (; j < cols; ++j) {
            const REAL *col = src + j * csb;
            for (int64_t p = 0; p < kc; ++p)
                bp[p * nr + j] = col[p * rsb];
        }
        for (int64_t p = 0; p < kc; ++p)
            for (int64_t jj = cols; jj < nr; ++jj)
                bp[p * nr + jj] = 0;
        bp += (int64_t)nr * kc;
    }
}

/* One mr x nr tile of C, through a scratch tile when it is ragged. */
static inline void CX_FN(tile)(const PLAN *plan, int64_t kc, const REAL *ap, const REAL *bpanel,
                               int64_t b_rs, REAL *c, int64_t ldc, int64_t rows, int64_t cols,
                               const REAL *bias, int accumulate)
{
    if (rows == plan->mr && cols == plan->nr) {
        plan->run(kc, ap, bpanel, b_rs, c, ldc, bias, accumulate);
        return;
    }
    REAL scratch[CX_MAX_TILE] __attribute__((aligned(64)));
    if (plan->run_narrow && 2 * cols <= plan->nr)   /* only the columns' half this tile has */
        plan->run_narrow(kc, ap, bpanel, b_rs, scratch, plan->nr, NULL, 0);
    else if (plan->run_rows)    /* only the rows this tile has */
        plan->run_rows(rows, kc, ap, bpanel, b_rs, scratch, plan->nr, NULL, 0);
    else
        plan->run(kc, ap, bpanel, b_rs, scratch, plan->nr, NULL, 0);
    for (int64_t i = 0; i < rows; ++i) {
        REAL *out = c + i * ldc;
        const REAL *acc = scratch + i * plan->nr;
        for (int64_t j = 0; j < cols; ++j) {
            if (accumulate)
                out[j] = out[j] + acc[j];
            else
                out[j] = bias ? acc[j] + bias[j] : acc[j];
        }
    }
}

/* The loop nest on one chunk of C, with this thread's pack buffers. */
static void CX_FN(gemm_chunk)(const PLAN *plan, int pack_b_whole, int64_t nc_most,
                              int64_t M, int64_t N, int64_t K,
                              const REAL *a, int64_t rsa, int64_t csa,
                              const REAL *b, int64_t rsb, int64_t csb,
                              const REAL *bias, REAL *c, int64_t ldc, REAL *ap, REAL *bp)
{
    const int mr = plan->mr, nr = plan->nr;
    /* Blocks of equal size (at most the plan's): N = 4096 as 2 x 2048, not
     * 4080 + 16, whose sliver would repack all of A for one micro-panel;
     * likewise M.  Only the blocking changes: no element's arithmetic. */
    const int64_t nc_step = CX_FN(balanced)(N, nc_most, nr);
    const int64_t mc_step = CX_FN(balanced)(M, plan->mc, mr);
    /* B = W^T (the forward pass) is packed by transposing, reading W at
     * memory speed: where the plan says so, each micro-panel is packed
     * just before the first row block uses it, while its lines are still
     * in L1, instead of the whole block first (see the plans).  A single
     * row block needs only that one panel.  Row-contiguous B keeps the
     * whole-block copy, which streams rows. */
    const int lazy_b = pack_b_whole && csb != 1 && plan->pack_wt_by_panel;
    const int one_row_block = mc_step >= M;
    for (int64_t jc = 0; jc < N; jc += nc_step) {
        const int64_t nc = CX_FN(min64)(nc_step, N - jc);
        for (int64_t pc = 0; pc < K; pc += plan->kc) {
            const int64_t kc = CX_FN(min64)(plan->kc, K - pc);
            const int accumulate = pc > 0;
            const REAL *b_block = b + pc * rsb + jc * csb;
            if (pack_b_whole && !lazy_b)
                CX_FN(pack_b)(plan, kc, nc, b_block, rsb, csb, nr, bp);
            for (int64_t ic = 0; ic < M; ic += mc_step) {
                const int64_t mc = CX_FN(min64)(mc_step, M - ic);
                CX_FN(pack_a)(plan, mc, kc, a + ic * rsa + pc * csa, rsa, csa, mr, ap);
                for (int64_t jr = 0; jr < nc; jr += nr) {
                    const int64_t cols = CX_FN(min64)(nr, nc - jr);
                    REAL *slot = lazy_b && one_row_block ? bp : bp + (jr / nr) * nr * kc;
                    if (lazy_b && ic == 0)
                        CX_FN(pack_b)(plan, kc, cols, b_block + jr * csb, rsb, csb, nr, slot);
                    const REAL *bpanel = slot;
                    int64_t b_rs = nr;
                    if (!pack_b_whole) {
                        if (cols == nr) {
                            bpanel = b_block + jr;          /* B's rows in place */
                            b_rs = rsb;
                        } else {
                            CX_FN(pack_b)(plan, kc, cols, b_block + jr, rsb, 1, nr, bp);
                            bpanel = bp;
                        }
                    }
                    const REAL *bias_j = (!accumulate && bias) ? bias + jc + jr : NULL;
                    for (int64_t ir = 0; ir < mc; ir += mr) {
                        const int64_t rows = CX_FN(min64)(mr, mc - ir);
                        CX_FN(tile)(plan, kc, ap + (ir / mr) * mr * kc, bpanel, b_rs,
                                    c + (ic + ir) * ldc + jc + jr, ldc, rows, cols, bias_j, accumulate);
                    }
                }
            }
        }
    }
}

int CX_FN(cx_gemm_transpose_pads_less)(int64_t M, int64_t N)
{
    const int isa = cx_isa_current();
    if (isa == CEXTEND_ISA_REFERENCE)
        return 0;       /* the simple loops have no tiles */
    const PLAN *as_is = CX_FN(plan_for)(isa, M), *transposed = CX_FN(plan_for)(isa, N);
    return CX_FN(round_up)(N, transposed->mr) * CX_FN(round_up)(M, transposed->nr) <
           CX_FN(round_up)(M, as_is->mr) * CX_FN(round_up)(N, as_is->nr);
}

int CX_FN(cx_gemm)(int64_t M, int64_t N, int64_t K,
                   const REAL *a, int64_t rsa, int64_t csa,
                   const REAL *b, int64_t rsb, int64_t csb,
                   const REAL *bias, REAL *c, int64_t ldc)
{
    if (M == 0 || N == 0)
        return CEXTEND_OK;
    const int isa = cx_isa_current();
    if (isa == CEXTEND_ISA_REFERENCE)
        return CX_FN(cx_gemm_reference)(M, N, K, a, rsa, csa, b, rsb, csb, bias, c, ldc);
    if (K == 0) {
        for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j)
                c[i * ldc + j] = bias ? bias[j] : (REAL)0;
        return CEXTEND_OK;
    }
    const PLAN *plan = CX_FN(plan_for)(isa, M);
    if (K <= plan->kc && (double)M * (double)N * (double)K <= TINY_WORK) {
        plan->tiny(M, N, K, a, rsa, csa, b, rsb, csb, bias, c, ldc);
        return CEXTEND_OK;
    }
    const int64_t mr = plan->mr, nr = plan->nr;
    const int pack_b_whole = !(csb == 1 && M <= SMALL_M_PANELS * mr);

    /* Split the output into column chunks (multiples of nr), or row chunks
     * (multiples of mr) when it is narrow.  The k loop is never split. */
    int threads = cx_threads_for((double)M * (double)N * (double)K);
    int split_columns = 1;
    int64_t chunk = N;
    if (threads > 1) {
        if (N >= (int64_t)threads * nr * 2) {
            chunk = CX_FN(round_up)((N + threads - 1) / threads, nr);
        } else if (M >= (int64_t)threads * mr * 2) {
            split_columns = 0;
            chunk = CX_FN(round_up)((M + threads - 1) / threads, mr);
        } else {
            threads = 1;
        }
    }
    const int64_t extent = split_columns ? N : M;
    const int chunks = (int)((extent + chunk - 1) / chunk);

    /* Every thread's pack buffers are allocated before any of C is written,
     * so running out of memory leaves the output untouched.  Small problems
     * use the stack: a heap round trip costs more than their whole product. */
    const int64_t kc = CX_FN(min64)(plan->kc, K);
    const int64_t rows = split_columns ? M : chunk, cols = split_columns ? chunk : N;
    const int64_t a_size = CX_FN(round_up)(CX_FN(min64)(plan->mc, rows), mr) * kc;
    const int64_t nc_most = CX_FN(cx_gemm_nc)(plan);
    const int64_t b_size = pack_b_whole ? CX_FN(round_up)(CX_FN(min64)(nc_most, cols), nr) * kc : nr * kc;
    const int64_t per_chunk = CX_FN(round_up)(a_size + b_size, 64 / (int64_t)sizeof(REAL));
    const int64_t total = per_chunk * chunks;
    REAL small[STACK_SCRATCH_BYTES / sizeof(REAL)] __attribute__((aligned(64)));
    REAL *scratch = small;
    if (total > (int64_t)(sizeof small / sizeof(REAL))) {
        scratch = cx_scratch(CX_SCRATCH_GEMM, (size_t)total * sizeof(REAL));
        if (!scratch)
            return cx_fail(CEXTEND_ERR_NOMEM, "cx_gemm", "cannot allocate %lld bytes of packing buffers",
                           (long long)(total * (int64_t)sizeof(REAL)));
    }

    if (threads == 1) {
        CX_FN(gemm_chunk)(plan, pack_b_whole, nc_most, M, N, K, a, rsa, csa, b, rsb, csb, bias, c, ldc,
                          scratch, scratch + a_size);
    } else {
#pragma omp parallel for num_threads(threads) schedule(static, 1)
        for (int t = 0; t < chunks; ++t) {
            REAL *ap = scratch + t * per_chunk, *bp = ap + a_size;
            const int64_t start = t * chunk, size = CX_FN(min64)(chunk, extent - start);
            if (split_columns)
                CX_FN(gemm_chunk)(plan, pack_b_whole, nc_most, M, size, K, a, rsa, csa, b + start * csb, rsb, csb,
                                  bias ? bias + start : NULL, c + start, ldc, ap, bp);
            else
                CX_FN(gemm_chunk)(plan, pack_b_whole, nc_most, size, N, K, a + start * rsa, rsa, csa, b, rsb, csb,
                                  bias, c + start * ldc, ldc, ap, bp);
        }
    }
    if (scratch != small)
        cx_scratch_done(CX_SCRATCH_GEMM);
    return CEXTEND_OK;
}

#undef PLAN
