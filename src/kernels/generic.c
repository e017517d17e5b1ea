/*
 * generic.c -- portable C microkernels (4 x 8 float32, 4 x 4 float64) for
 * any architecture.  Plain loops over a local accumulator tile that the
 * compiler keeps in registers and vectorises with the baseline ISA; built
 * with -ffp-contract=off semantics (ISO C), so no FMA is introduced.
 */
#include "../internal.h"

#define DEFINE_GENERIC_UKERNEL(NAME, REAL, MR, NR)                                            \
    static void NAME(int64_t kc, const REAL *restrict a, const REAL *restrict b, int64_t b_rs, \
                     REAL *restrict c, int64_t ldc, const REAL *restrict bias, int accumulate) \
    {                                                                                         \
        REAL acc[MR][NR] = {{0}};                                                             \
        for (int64_t p = 0; p < kc; ++p) {                                                    \
            for (int i = 0; i < MR; ++i)                                                      \
                for (int j = 0; j < NR; ++j)                                                  \
                    acc[i][j] += a[i] * b[j];                                                 \
            a += MR;                                                                          \
            b += b_rs;                                                                        \
        }                                                                                     \
        for (int i = 0; i < MR; ++i)                                                          \
            for (int j = 0; j < NR; ++j) {                                                    \
                REAL *out = c + i * ldc + j;                                                  \
                if (accumulate)                                                               \
                    *out = *out + acc[i][j];                                                  \
                else                                                                          \
                    *out = bias ? acc[i][j] + bias[j] : acc[i][j];                            \
            }                                                                                 \
    }

DEFINE_GENERIC_UKERNEL(ukernel_generic_f32, float, 4, 8)
DEFINE_GENERIC_UKERNEL(ukernel_generic_f64, double, 4, 4)

/* The unpacked path for tiny products: the same separate multiply and add
 * from 0 over p as the microkernels above, then + bias, so the bits match. */
#define DEFINE_GENERIC_TINY(NAME, REAL)                                                        \
    static void NAME(int64_t M, int64_t N, int64_t K, const REAL *a, int64_t rsa, int64_t csa, \
                     const REAL *b, int64_t rsb, int64_t csb, const REAL *bias, REAL *c,        \
                     int64_t ldc)                                                              \
    {                                                                                          \
        for (int64_t i = 0; i < M; ++i)                                                        \
            for (int64_t j = 0; j < N; ++j) {                                                  \
                REAL acc = 0;                                                                  \
                for (int64_t p = 0; p < K; ++p)                                                \
                    acc += a[i * rsa + p * csa] * b[p * rsb + j * csb];                        \
                c[i * ldc + j] = bias ? acc + bias[j] : acc;                                   \
            }                                                                                  \
    }

DEFINE_GENERIC_TINY(tiny_generic_f32, float)
DEFINE_GENERIC_TINY(tiny_generic_f64, double)

const cx_plan_f32 cx_plan_generic_f32 = {4, 8, 256, 128, 2048, ukernel_generic_f32, NULL, NULL, tiny_generic_f32, NULL, NULL, 0, CX_B_BLOCK_IN_L3, NULL, 0};
const cx_plan_f64 cx_plan_generic_f64 = {4, 4, 256, 128, 2048, ukernel_generic_f64, NULL, NULL, tiny_generic_f64, NULL, NULL, 0, CX_B_BLOCK_IN_L3, NULL, 0};
