// AVX2 helpers shared by the fused kernels: runtime detection and an eight-lane float32 exp.
// x86-64 only (TP_X86_SIMD); elsewhere (or with -DTP_NO_X86_SIMD, how CI checks that path
// compiles) callers take their scalar loops.
#pragma once

#include <limits>

#include "common.h"

#if (defined(__x86_64__) || defined(__i386__)) && !defined(TP_NO_X86_SIMD)
#define TP_X86_SIMD 1
#include <immintrin.h>

namespace tp {

inline constexpr float kInfF = std::numeric_limits<float>::infinity();

inline bool have_avx2() {
    static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return yes;
}

#define TP_AVX2 __attribute__((target("avx2,fma")))

// exp of eight floats: Cephes expf (x = n ln2 + r, |r| <= ln2/2, degree-5 polynomial), with 2^n
// applied as two factors so that results down to the subnormals stay right. x > 88.72 gives
// +inf, x < -103.97 gives 0, NaN stays NaN.
TP_AVX2 inline __m256 exp8(__m256 x) {
    const __m256 hi = _mm256_set1_ps(88.72283935546875f);
    const __m256 lo = _mm256_set1_ps(-103.97208404541016f);
    __m256 xc = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
    __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), xc);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 y = _mm256_set1_ps(1.9875691500e-4f);
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.3981999507e-3f));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(8.3334519073e-3f));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(4.1665795894e-2f));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.6666665459e-1f));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(5.0000001201e-1f));
    y = _mm256_fmadd_ps(y, _mm256_mul_ps(r, r), r);
    y = _mm256_add_ps(y, _mm256_set1_ps(1.0f));
    __m256i ni = _mm256_cvtps_epi32(n);
    __m256i n1 = _mm256_srai_epi32(ni, 1);
    __m256i n2 = _mm256_sub_epi32(ni, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    y = _mm256_mul_ps(_mm256_mul_ps(y, s1), s2);
    y = _mm256_blendv_ps(y, _mm256_set1_ps(kInfF), _mm256_cmp_ps(x, hi, _CMP_GT_OQ));
    y = _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps(x, lo, _CMP_LT_OQ));
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

// The last n < 8 elements, padded with `fill`, and their store back.
TP_AVX2 inline __m256 load_tail(const float* x, int64_t n, float fill) {
    alignas(32) float buf[8];
    for (int i = 0; i < 8; ++i) buf[i] = i < n ? x[i] : fill;
    return _mm256_load_ps(buf);
}
TP_AVX2 inline void store_tail(float* y, __m256 v, int64_t n) {
    alignas(32) float buf[8];
    _mm256_store_ps(buf, v);
    for (int64_t i = 0; i < n; ++i) y[i] = buf[i];
}

}  // namespace tp

#endif  // x86
