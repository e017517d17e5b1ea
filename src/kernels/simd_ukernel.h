/*
 * simd_ukernel.h -- the register-blocked microkernel, written once over a
 * vector abstraction and instantiated per ISA and dtype by avx2.c and
 * avx512.c (see internal.h for the contract).
 *
 * Expects: REAL, VEC, VL (elements per vector), MR (rows), NV (vectors per
 * row, NR = NV * VL), TARGET (a target attribute), UKERNEL (the name) and
 * the operations V_ZERO, V_LOAD, V_STORE, V_BCAST, V_FMA, V_ADD.
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
        a += MR;
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
