/*
 * conv_small.c -- convolution patches of small float32 planes: a plane of
 * at most 16 values (the CNN demo's 4x4 maps) is one AVX-512 vector (two
 * AVX2 ones), and each kernel tap's patch row for one image a permutation
 * of it, zero where the tap reads padding.  One load, then a permute and a
 * store a tap, in place of zero-padding the plane into scratch and copying
 * rows of 4 values (pad_input + im2col: 54 of the demo's 160 us second
 * convolution); col2im's adjoint sums the taps in registers, in the same
 * order as the generic loop, where that loop's adds into overlapping rows
 * of a scratch plane waited on each other through memory.
 *
 * Values only move (im2col), or are added in the generic loop's order
 * (col2im: each position gets its taps in (p, q) order from +0.0; a tap that
 * does not reach it adds +0.0, which changes no sum that is never -0.0, and
 * one starting from +0.0 never is), so the bits are the generic path's.
 */
#include <string.h>

#include "../nn_internal.h"

#if defined(CX_HAVE_X86_KERNELS)
#include <immintrin.h>

#define LANES 16

/* For tap t = p * kw + q: where each output position's value comes from in
 * the plane (im2col: lane l of the patch reads plane[from[t][l]]), and where
 * each plane position's gradient comes from in the patch (col2im: lane e of
 * the plane adds patch[to[t][e]]), with the lanes that have one. */
typedef struct {
    int32_t from[CX_CONV_SMALL_TAPS][LANES], to[CX_CONV_SMALL_TAPS][LANES];
    uint16_t from_mask[CX_CONV_SMALL_TAPS], to_mask[CX_CONV_SMALL_TAPS];
    int64_t taps;
} cx_small_taps;

static void small_taps(const cx_conv2d_geometry *g, cx_small_taps *m)
{
    m->taps = g->kh * g->kw;
    for (int64_t t = 0; t < m->taps; ++t) {
        const int64_t p = t / g->kw, q = t % g->kw;
        m->from_mask[t] = m->to_mask[t] = 0;
        for (int l = 0; l < LANES; ++l)
            m->from[t][l] = m->to[t][l] = 0;
        for (int64_t l = 0; l < g->h_out * g->w_out; ++l) {
            const int64_t r = (l / g->w_out) * g->stride_h - g->pad_h + p * g->dilation_h;
            const int64_t s = (l % g->w_out) * g->stride_w - g->pad_w + q * g->dilation_w;
            if (r < 0 || r >= g->h || s < 0 || s >= g->w)
                continue;
            const int64_t e = r * g->w + s;         /* one output position per plane position and tap */
            m->from[t][l] = (int32_t)e;
            m->from_mask[t] |= (uint16_t)(1u << l);
            m->to[t][e] = (int32_t)l;
            m->to_mask[t] |= (uint16_t)(1u << e);
        }
    }
}

int cx_conv_small_planes(const cx_conv2d_geometry *g, const int64_t *xs)
{
    return g->h * g->w >= 1 && g->h * g->w <= LANES && g->h_out * g->w_out <= LANES &&
           g->kh * g->kw <= CX_CONV_SMALL_TAPS && (g->h == 1 || xs[2] == g->w) && (g->w == 1 || xs[3] == 1);
}

CX_TARGET_AVX512 void cx_im2col_small_f32(const cx_conv2d_geometry *g, const float *x, const int64_t *xs,
                                           int64_t b0, int64_t nb, int64_t c0, int64_t c_lo, int64_t c_hi,
                                           float *col)
{
    cx_small_taps m;
    small_taps(g, &m);
    const int64_t L = g->h_out * g->w_out, NL = nb * L;
    const __mmask16 plane_mask = (__mmask16)((1u << (g->h * g->w)) - 1), out_mask = (__mmask16)((1u << L) - 1);
    for (int64_t c = c_lo; c < c_hi; ++c)
        for (int64_t b = 0; b < nb; ++b) {
            const __m512 plane = _mm512_maskz_loadu_ps(plane_mask, x + (b0 + b) * xs[0] + (c0 + c) * xs[1]);
            float *dst = col + c * m.taps * NL + b * L;
            for (int64_t t = 0; t < m.taps; ++t, dst += NL) {
                const __m512i from = _mm512_loadu_si512(m.from[t]);
                _mm512_mask_storeu_ps(dst, out_mask, _mm512_maskz_permutexvar_ps(m.from_mask[t], from, plane));
            }
        }
}

CX_TARGET_AVX512 void cx_col2im_small_f32(const cx_conv2d_geometry *g, const float *col, int64_t b0, int64_t nb,
                                           int64_t c0, int64_t c_lo, int64_t c_hi, float *dx)
{
    cx_small_taps m;
    small_taps(g, &m);
    const int64_t L = g->h_out * g->w_out, NL = nb * L, hw = g->h * g->w;
    const __mmask16 plane_mask = (__mmask16)((1u << hw) - 1), out_mask = (__mmask16)((1u << L) - 1);
    for (int64_t c = c_lo; c < c_hi; ++c)
        for (int64_t b = 0; b < nb; ++b) {
            const float *src = col + c * m.taps * NL + b * L;
            __m512 acc = _mm512_setzero_ps();
            for (int64_t t = 0; t < m.taps; ++t, src += NL) {
                const __m512 patch = _mm512_maskz_loadu_ps(out_mask, src);
                const __m512i to = _mm512_loadu_si512(m.to[t]);
                acc = _mm512_add_ps(acc, _mm512_maskz_permutexvar_ps(m.to_mask[t], to, patch));
            }
            _mm512_mask_storeu_ps(dx + ((b0 + b) * g->c_in + c0 + c) * hw, plane_mask, acc);
        }
}

/* AVX2: the 16 lanes as two halves of 8.  Lane l of a permuted half takes
 * value idx[l] of the plane's two halves: both halves permuted by idx % 8,
 * the upper one chosen where idx >= 8, then zeroed where masked off.
 * Partial planes and patches go through 16-value buffers (AVX2's masked
 * stores are slow on some CPUs). */
CX_TARGET_AVX2 static inline __m256 permute16_avx2(__m256 lo, __m256 hi, const int32_t *idx, const int32_t *keep)
{
    const __m256i i = _mm256_loadu_si256((const __m256i *)idx);
    const __m256 upper = _mm256_castsi256_ps(_mm256_cmpgt_epi32(i, _mm256_set1_epi32(7)));
    const __m256 v = _mm256_blendv_ps(_mm256_permutevar8x32_ps(lo, i), _mm256_permutevar8x32_ps(hi, i), upper);
    return _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_loadu_si256((const __m256i *)keep)));
}

/* Lane masks as all-ones words, for the AND above. */
static void lane_words(uint16_t mask, int32_t *words)
{
    for (int l = 0; l < LANES; ++l)
        words[l] = (mask >> l) & 1 ? -1 : 0;
}

CX_TARGET_AVX2 void cx_im2col_small_avx2_f32(const cx_conv2d_geometry *g, const float *x, const int64_t *xs,
                                             int64_t b0, int64_t nb, int64_t c0, int64_t c_lo, int64_t c_hi,
                                             float *col)
{
    cx_small_taps m;
    small_taps(g, &m);
    int32_t keep[CX_CONV_SMALL_TAPS][LANES];
    for (int64_t t = 0; t < m.taps; ++t)
        lane_words(m.from_mask[t], keep[t]);
    const int64_t L = g->h_out * g->w_out, NL = nb * L, hw = g->h * g->w;
    float plane[LANES] = {0}, patch[LANES];
    for (int64_t c = c_lo; c < c_hi; ++c)
        for (int64_t b = 0; b < nb; ++b) {
            memcpy(plane, x + (b0 + b) * xs[0] + (c0 + c) * xs[1], (size_t)hw * sizeof(float));
            const __m256 lo = _mm256_loadu_ps(plane), hi = _mm256_loadu_ps(plane + 8);
            float *dst = col + c * m.taps * NL + b * L;
            for (int64_t t = 0; t < m.taps; ++t, dst += NL) {
                const __m256 first = permute16_avx2(lo, hi, m.from[t], keep[t]);
                const __m256 second = permute16_avx2(lo, hi, m.from[t] + 8, keep[t] + 8);
                if (L == LANES) {
                    _mm256_storeu_ps(dst, first);
                    _mm256_storeu_ps(dst + 8, second);
                } else {
                    _mm256_storeu_ps(patch, first);
                    _mm256_storeu_ps(patch + 8, second);
                    memcpy(dst, patch, (size_t)L * sizeof(float));
                }
            }
        }
}

CX_TARGET_AVX2 void cx_col2im_small_avx2_f32(const cx_conv2d_geometry *g, const float *col, int64_t b0, int64_t nb,
                                             int64_t c0, int64_t c_lo, int64_t c_hi, float *dx)
{
    cx_small_taps m;
    small_taps(g, &m);
    int32_t keep[CX_CONV_SMALL_TAPS][LANES];
    for (int64_t t = 0; t < m.taps; ++t)
        lane_words(m.to_mask[t], keep[t]);
    const int64_t L = g->h_out * g->w_out, NL = nb * L, hw = g->h * g->w;
    float patch[LANES] = {0}, plane[LANES];
    for (int64_t c = c_lo; c < c_hi; ++c)
        for (int64_t b = 0; b < nb; ++b) {
            const float *src = col + c * m.taps * NL + b * L;
            __m256 first = _mm256_setzero_ps(), second = _mm256_setzero_ps();
            for (int64_t t = 0; t < m.taps; ++t, src += NL) {
                __m256 lo, hi;
                if (L == LANES) {
                    lo = _mm256_loadu_ps(src);
                    hi = _mm256_loadu_ps(src + 8);
                } else {
                    memcpy(patch, src, (size_t)L * sizeof(float));
                    lo = _mm256_loadu_ps(patch);
                    hi = _mm256_loadu_ps(patch + 8);
                }
                first = _mm256_add_ps(first, permute16_avx2(lo, hi, m.to[t], keep[t]));
                second = _mm256_add_ps(second, permute16_avx2(lo, hi, m.to[t] + 8, keep[t] + 8));
            }
            float *out = dx + ((b0 + b) * g->c_in + c0 + c) * hw;
            if (hw == LANES) {
                _mm256_storeu_ps(out, first);
                _mm256_storeu_ps(out + 8, second);
            } else {
                _mm256_storeu_ps(plane, first);
                _mm256_storeu_ps(plane + 8, second);
                memcpy(out, plane, (size_t)hw * sizeof(float));
            }
        }
}

#endif
