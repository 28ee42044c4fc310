/* qkv.kernels._exp.h: the float32 exponential of the kernel, forward (_fused.c) and backward (_backward.c), one lane
 * (qkv_exp1), 8 lanes (AVX2+FMA, qkv_exp8) and 16 lanes (AVX-512F, qkv_exp16).
 *
 * Cephes' expf polynomial and range reduction (√2 folded into the coefficients; x clamped to
 * [−88, 89]: below ln(FLT_MIN) exactly 0, −inf → 0, NaN kept); one definition for both sources,
 * so the backward's P = exp(S − lse) rounds as the forward's does. ≤ 2 ulps against float64 exp
 * over [−87.3, 88.7] (tests/test_fused.py measures it through _fused.exp). */
#ifndef QKV_EXP_H
#define QKV_EXP_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define QKV_X86 1
#include <immintrin.h>
#endif

#define QKV_EXP_LO (-88.0f)
#define QKV_EXP_HI 89.0f
#define QKV_LOG2E 1.44269504088896341f
#define QKV_LN2_HI 0.693359375f
#define QKV_LN2_LO (-2.12194440e-4f)
#define QKV_SQRT2 1.41421356237309505f
#define QKV_Q0 (1.9875691500e-4f * QKV_SQRT2)
#define QKV_Q1 (1.3981999507e-3f * QKV_SQRT2)
#define QKV_Q2 (8.3334519073e-3f * QKV_SQRT2)
#define QKV_Q3 (4.1665795894e-2f * QKV_SQRT2)
#define QKV_Q4 (1.6666665459e-1f * QKV_SQRT2)
#define QKV_Q5 (5.0000001201e-1f * QKV_SQRT2)

static inline float qkv_exp1(float x)
{
    if (x != x)
        return x;
    x = x < QKV_EXP_LO ? QKV_EXP_LO : (x > QKV_EXP_HI ? QKV_EXP_HI : x);
    float n = floorf(x * QKV_LOG2E);
    float t = n + 0.5f;
    float r = x - t * QKV_LN2_HI;
    r = r - t * QKV_LN2_LO;
    float p = QKV_Q0;
    p = p * r + QKV_Q1;
    p = p * r + QKV_Q2;
    p = p * r + QKV_Q3;
    p = p * r + QKV_Q4;
    p = p * r + QKV_Q5;
    float y = p * (r * r) + (r * QKV_SQRT2 + QKV_SQRT2);
    uint32_t bits = (uint32_t)((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return y * scale;
}

#ifdef QKV_X86
__attribute__((target("avx2,fma"))) static inline __m256 qkv_exp8(__m256 x)
{
    x = _mm256_max_ps(_mm256_set1_ps(QKV_EXP_LO), x);
    x = _mm256_min_ps(_mm256_set1_ps(QKV_EXP_HI), x);
    __m256 n = _mm256_floor_ps(_mm256_mul_ps(x, _mm256_set1_ps(QKV_LOG2E)));
    __m256 t = _mm256_add_ps(n, _mm256_set1_ps(0.5f));
    __m256 r = _mm256_fnmadd_ps(t, _mm256_set1_ps(QKV_LN2_HI), x);
    r = _mm256_fnmadd_ps(t, _mm256_set1_ps(QKV_LN2_LO), r);
    __m256 p = _mm256_set1_ps(QKV_Q0);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(QKV_Q1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(QKV_Q2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(QKV_Q3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(QKV_Q4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(QKV_Q5));
    __m256 y = _mm256_fmadd_ps(r, _mm256_set1_ps(QKV_SQRT2), _mm256_set1_ps(QKV_SQRT2));
    y = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), y);
    __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(y, _mm256_castsi256_ps(bits));
}

__attribute__((target("avx512f"))) static inline __m512 qkv_exp16(__m512 x)
{
    x = _mm512_max_ps(_mm512_set1_ps(QKV_EXP_LO), x);
    x = _mm512_min_ps(_mm512_set1_ps(QKV_EXP_HI), x);
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(QKV_LOG2E)), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    __m512 t = _mm512_add_ps(n, _mm512_set1_ps(0.5f));
    __m512 r = _mm512_fnmadd_ps(t, _mm512_set1_ps(QKV_LN2_HI), x);
    r = _mm512_fnmadd_ps(t, _mm512_set1_ps(QKV_LN2_LO), r);
    __m512 p = _mm512_set1_ps(QKV_Q0);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(QKV_Q1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(QKV_Q2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(QKV_Q3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(QKV_Q4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(QKV_Q5));
    __m512 y = _mm512_fmadd_ps(r, _mm512_set1_ps(QKV_SQRT2), _mm512_set1_ps(QKV_SQRT2));
    y = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), y);
    __m512i bits = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(y, _mm512_castsi512_ps(bits));
}
#endif

#endif
