/*
 * simd_pack.h -- packing B when its columns are contiguous, written once
 * over a vector abstraction and instantiated per ISA and dtype by avx2.c
 * and avx512.c (after simd_ukernel.h, with the same macros plus
 * V_TRANSPOSE and PACK_B_COLS, the function's name).
 *
 * The forward pass multiplies by W^T: B[p][j] = w[j][p], so each column j
 * of B is a contiguous row of W, while a micro-panel wants nr values of
 * one row p side by side.  Element by element that is a strided gather,
 * one load and one store per value; here VL columns x VL rows are loaded
 * as VL vectors, transposed in registers (V_TRANSPOSE) and stored as VL
 * micro-panel rows.  Values are only moved, so the packed panel (and every
 * result) is bitwise what the portable loop produces.
 */

/* B[0:kc, 0:nc], B[p][j] = b[p + j * csb], into nr-column micro-panels
 * (each kc rows of nr values, columns past nc zero).  See cx_pack_cols_*. */
TARGET static void PACK_B_COLS(int64_t kc, int64_t nc, const REAL *restrict b, int64_t csb,
                               REAL *restrict bp)
{
    enum { NR = NV * VL };
    for (int64_t jr = 0; jr < nc; jr += NR, bp += NR * kc) {
        const int64_t cols = nc - jr < NR ? nc - jr : NR;
        const REAL *panel = b + jr * csb;
        int64_t p = 0;
        if (cols == NR) {
            for (; p + VL <= kc; p += VL) {
#pragma GCC unroll 4
                for (int v = 0; v < NV; ++v) {
                    VEC r[VL];
#pragma GCC unroll 16
                    for (int q = 0; q < VL; ++q) {
                        /* VL rows a page or more apart defeat the hardware
                         * prefetcher: ask for each row's next lines. */
                        _mm_prefetch((const char *)(panel + (v * VL + q) * csb + p + 2 * VL), _MM_HINT_T0);
                        r[q] = V_LOAD(panel + (v * VL + q) * csb + p);
                    }
                    V_TRANSPOSE(r);
#pragma GCC unroll 16
                    for (int q = 0; q < VL; ++q)
                        V_STORE(bp + (p + q) * NR + v * VL, r[q]);
                }
            }
        }
        /* The ragged rest: the last kc % VL rows, or a narrow last panel. */
        for (; p < kc; ++p) {
            REAL *dst = bp + p * NR;
            for (int64_t j = 0; j < cols; ++j)
                dst[j] = panel[j * csb + p];
            for (int64_t j = cols; j < NR; ++j)
                dst[j] = 0;
        }
    }
}

#ifdef PACK_A_ROWS
#ifndef A_WIDTH
#define A_WIDTH MR
#endif
/*
 * A[0:mc, 0:kc] with A[i][p] = a[i * rsa + p] (rows contiguous: x in the
 * forward pass, dy for dx) into mr-row micro-panels (kc steps of mr
 * values, rows past mc zero).  A_WIDTH steps of a panel's MR rows at a
 * time are loaded as MR A-vectors of A_WIDTH elements (AVEC, A_LOAD),
 * padded with zero rows (A_ZERO) where MR is less, transposed as
 * A_WIDTH x A_WIDTH (A_TRANSPOSE), and each step's first MR values
 * stored (A_STORE).  A_WIDTH is MR unless given.  These macros are
 * undefined at the end of this header.
 */
TARGET static void PACK_A_ROWS(int64_t mc, int64_t kc, const REAL *restrict a, int64_t rsa,
                               REAL *restrict ap)
{
    for (int64_t ir = 0; ir < mc; ir += MR, ap += MR * kc) {
        const int64_t rows = mc - ir < MR ? mc - ir : MR;
        const REAL *panel = a + ir * rsa;
        int64_t p = 0;
        if (rows == MR) {
            for (; p + A_WIDTH <= kc; p += A_WIDTH) {
                AVEC r[A_WIDTH];
#pragma GCC unroll 16
                for (int q = 0; q < MR; ++q)
                    r[q] = A_LOAD(panel + q * rsa + p);
#if A_WIDTH > MR
#pragma GCC unroll 16
                for (int q = MR; q < A_WIDTH; ++q)
                    r[q] = A_ZERO();
#endif
                A_TRANSPOSE(r);
#pragma GCC unroll 16
                for (int q = 0; q < A_WIDTH; ++q)
                    A_STORE(ap + (p + q) * MR, r[q]);
            }
        }
        for (; p < kc; ++p) {
            REAL *dst = ap + p * MR;
            for (int64_t i = 0; i < rows; ++i)
                dst[i] = panel[i * rsa + p];
            for (int64_t i = rows; i < MR; ++i)
                dst[i] = 0;
        }
    }
}
/* The template's parameters are used up: the next instance defines its own. */
#undef PACK_A_ROWS
#undef AVEC
#undef A_WIDTH
#undef A_LOAD
#undef A_ZERO
#undef A_STORE
#undef A_TRANSPOSE
#undef PACK_A_ROWS_OWN_WIDTH
#endif
