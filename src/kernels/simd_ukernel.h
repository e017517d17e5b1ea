/*
 * simd_ukernel.h -- the register-blocked microkernel, written once over a
 * vector abstraction and instantiated per ISA and dtype by avx2.c and
 * avx512.c (see internal.h for the contract).
 *
 * Expects: REAL, VEC, VL (elements per vector), MR (rows), NV (vectors per
 * row, NR = NV * VL), TARGET (a target attribute), UKERNEL (the name) and
 * the operations V_ZERO, V_LOAD, V_STORE, V_BCAST, V_FMA, V_ADD; A_STEP, if
 * defined, is the packed panel's row count when MR is smaller (an edge
 * kernel computing a tile's first MR rows).
 *
 * C is row-major, so a tile row is NV vectors: each step p loads NV vectors
 * of B and, for each of the MR rows, broadcasts one A value and issues NV
 * fused multiply-adds.  The MR * NV accumulators stay in registers.
 */

TARGET static void UKERNEL(int64_t kc, const REAL *restrict a, const REAL *restrict b, int64_t b_rs,
                           REAL *restrict c, int64_t ldc, const REAL *restrict bias, int accumulate)
{
    VEC acc[MR][NV];
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v)
            acc[i][v] = V_ZERO();
    /* The tile of C is read (accumulate) or written at the end: start
     * bringing its lines in now, while the k loop computes. */
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
        _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + i * ldc + NV * VL - 1), _MM_HINT_T0);
    }

    for (int64_t p = 0; p < kc; ++p) {
        VEC bv[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v)
            bv[v] = V_LOAD(b + v * VL);
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i) {
            const VEC ai = V_BCAST(a[i]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v)
                acc[i][v] = V_FMA(ai, bv[v], acc[i][v]);
        }
#ifdef A_STEP
        a += A_STEP;        /* an edge kernel: fewer rows of a full panel */
#else
        a += MR;
#endif
        b += b_rs;
    }

#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
        REAL *row = c + i * ldc;
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
            VEC out = acc[i][v];
            if (accumulate)
                out = V_ADD(V_LOAD(row + v * VL), out);
            else if (bias)
                out = V_ADD(out, V_LOAD(bias + v * VL));
            V_STORE(row + v * VL, out);
        }
    }
}

#ifdef TINY
/*
 * A whole product too small to be worth packing (see cx_tiny_* in
 * internal.h): each C[i][j] is the same fused multiply-add chain from +0
 * over p that UKERNEL computes, then + bias[j], so the bits match the
 * packed path exactly.  Eight columns advance together to hide the FMA
 * latency; FMA1 is the scalar fused multiply-add.
 */
TARGET static void TINY(int64_t M, int64_t N, int64_t K, const REAL *a, int64_t rsa, int64_t csa,
                        const REAL *b, int64_t rsb, int64_t csb, const REAL *bias, REAL *c, int64_t ldc)
{
    for (int64_t j0 = 0; j0 < N; j0 += 8) {
        const int64_t width = N - j0 < 8 ? N - j0 : 8;
        /* A narrow last group repeats its last column in the spare lanes
         * (computed, never stored), so all eight chains stay in registers. */
        int64_t col[8];
        for (int j = 0; j < 8; ++j)
            col[j] = (j0 + (j < width ? j : width - 1)) * csb;
        for (int64_t i = 0; i < M; ++i) {
            const REAL *row = a + i * rsa;
            REAL acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            for (int64_t p = 0; p < K; ++p) {
                const REAL x = row[p * csa], *bp = b + p * rsb;
#pragma GCC unroll 8
                for (int j = 0; j < 8; ++j)
                    acc[j] = FMA1(x, bp[col[j]], acc[j]);
            }
            REAL *out = c + i * ldc + j0;
            for (int64_t j = 0; j < width; ++j)
                out[j] = bias ? acc[j] + bias[j0 + j] : acc[j];
        }
    }
}
#endif
