// AVX2 helpers shared by the fused and elementwise kernels: runtime detection and eight-lane float32
// exp, log, sigmoid, tanh, erf and the normal CDF.
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
// applied as two factors so that results down to the subnormals stay right. No blends: x is
// clamped to [-104, 89] first (max/min return their second operand when one is NaN, so NaN
// passes through and stays NaN), and beyond ln(FLT_MAX) = 88.72 the two factors overflow to +inf,
// below -103.97 they underflow to 0, as the true values round. n = round(x / ln2) by adding
// 1.5 * 2^23 (whose low mantissa bits are then n): the blends and the rounding instruction were
// 15% of exp's time (and of erf's, tanh's, sigmoid's) on Zen 4.
TP_AVX2 inline __m256 exp8(__m256 x) {
    const __m256 xc = _mm256_min_ps(_mm256_set1_ps(89.0f), _mm256_max_ps(_mm256_set1_ps(-104.0f), x));
    const __m256 magic = _mm256_set1_ps(12582912.0f);
    const __m256 t = _mm256_fmadd_ps(xc, _mm256_set1_ps(1.44269504088896341f), magic);
    const __m256 n = _mm256_sub_ps(t, magic);
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
    const __m256i ni = _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_castps_si256(magic));
    const __m256i n1 = _mm256_srai_epi32(ni, 1);
    const __m256i n2 = _mm256_sub_epi32(ni, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(y, s1), s2);
}

// Polynomial p(z) = c[0] + c[1] z + ... by Horner's rule with FMAs.
template <int N> TP_AVX2 inline __m256 horner8(__m256 z, const float (&c)[N]) {
    __m256 p = _mm256_set1_ps(c[N - 1]);
    for (int i = N - 2; i >= 0; --i) p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(c[i]));
    return p;
}

// Natural log of eight floats: Cephes logf (x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(1 + f)
// by a degree-8 polynomial, e ln2 added in two parts). Subnormals are scaled by 2^23 first; 0
// gives -inf, negative numbers and NaN give NaN, +inf stays +inf.
TP_AVX2 inline __m256 log8(__m256 x) {
    static constexpr float poly[] = {3.3333331174e-1f, -2.4999993993e-1f, 2.0000714765e-1f, -1.6668057665e-1f,
                                     1.4249322787e-1f, -1.2420140846e-1f, 1.1676998740e-1f, -1.1514610310e-1f,
                                     7.0376836292e-2f};
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 subnormal = _mm256_cmp_ps(x, _mm256_set1_ps(1.17549435e-38f), _CMP_LT_OQ);
    const __m256 xs = _mm256_blendv_ps(x, _mm256_mul_ps(x, _mm256_set1_ps(8388608.0f)), subnormal);
    const __m256i bits = _mm256_castps_si256(xs);
    __m256 e = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(bits, 23), _mm256_set1_epi32(126)));
    e = _mm256_sub_ps(e, _mm256_and_ps(subnormal, _mm256_set1_ps(23.0f)));
    __m256 m = _mm256_castsi256_ps(_mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi32(0x007fffff)),
                                                   _mm256_set1_epi32(0x3f000000)));  // in [0.5, 1)
    const __m256 low = _mm256_cmp_ps(m, _mm256_set1_ps(0.707106781186547524f), _CMP_LT_OQ);
    e = _mm256_sub_ps(e, _mm256_and_ps(low, one));
    m = _mm256_sub_ps(_mm256_add_ps(m, _mm256_and_ps(low, m)), one);  // 2m - 1 or m - 1
    const __m256 z = _mm256_mul_ps(m, m);
    __m256 y = _mm256_mul_ps(_mm256_mul_ps(m, z), horner8(m, poly));
    y = _mm256_fmadd_ps(e, _mm256_set1_ps(-2.12194440e-4f), y);
    y = _mm256_fnmadd_ps(z, _mm256_set1_ps(0.5f), y);
    __m256 r = _mm256_add_ps(m, y);
    r = _mm256_fmadd_ps(e, _mm256_set1_ps(0.693359375f), r);
    r = _mm256_blendv_ps(r, _mm256_set1_ps(-kInfF), _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_EQ_OQ));
    r = _mm256_blendv_ps(r, x, _mm256_cmp_ps(x, _mm256_set1_ps(kInfF), _CMP_EQ_OQ));
    const __m256 invalid = _mm256_or_ps(_mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ), _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    return _mm256_blendv_ps(r, _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN()), invalid);
}

// |x| and the sign bit of x, for the odd functions below.
TP_AVX2 inline __m256 abs8(__m256 x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x); }
TP_AVX2 inline __m256 with_sign8(__m256 magnitude, __m256 x) {
    return _mm256_or_ps(magnitude, _mm256_and_ps(_mm256_set1_ps(-0.0f), x));
}

// sigmoid: 1 / (1 + exp(-x)), the scalar kernel's formula (0 at -inf, 1 at +inf, NaN stays NaN).
TP_AVX2 inline __m256 sigmoid8(__m256 x) {
    const __m256 one = _mm256_set1_ps(1.0f);
    return _mm256_div_ps(one, _mm256_add_ps(one, exp8(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

// tanh: for |x| < 0.5 its Taylor series to x^15 (the next term is below 1e-8 of the value), else
// 1 - 2 / (exp(2|x|) + 1); the sign put back, so -0.0 stays -0.0 and NaN stays NaN. At most 3.2
// ulp from the true value over [-12, 12] and [1e-40, 30] (checked against float64).
TP_AVX2 inline __m256 tanh8(__m256 x) {
    static constexpr float taylor[] = {-1.0f / 3, 2.0f / 15, -17.0f / 315, 62.0f / 2835, -1382.0f / 155925,
                                       21844.0f / 6081075, -929569.0f / 638512875};
    const __m256 a = abs8(x), z = _mm256_mul_ps(a, a), one = _mm256_set1_ps(1.0f);
    const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(a, z), horner8(z, taylor), a);
    const __m256 e = exp8(_mm256_add_ps(a, a));
    const __m256 large = _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
    return with_sign8(_mm256_blendv_ps(large, small, _mm256_cmp_ps(a, _mm256_set1_ps(0.5f), _CMP_LT_OQ)), x);
}

// erf: for |x| < 1 Cephes erff's odd polynomial x P(x^2) (seven coefficients), else Abramowitz
// and Stegun 7.1.26 (1 - t P(t) exp(-x^2), t = 1 / (1 + 0.3275911 |x|), absolute error below
// 1.5e-7 where erf is above 0.84), computed only when a lane needs it (the lanes' answers do not
// depend on which others share their vector); odd, so -0.0 stays -0.0; +-inf give +-1 and NaN
// stays NaN. At most 2.2e-7 relative from the true value (checked against float64).
TP_AVX2 inline __m256 erf8(__m256 x) {
    static constexpr float small_poly[] = {1.128379165726710f, -3.761262582423300e-1f, 1.128358514861418e-1f,
                                           -2.685381193529856e-2f, 5.188327685732524e-3f, -8.010193625184903e-4f,
                                           7.853861353153693e-5f};
    static constexpr float tail[] = {0.254829592f, -0.284496736f, 1.421413741f, -1.453152027f, 1.061405429f};
    const __m256 a = abs8(x), z = _mm256_mul_ps(a, a), one = _mm256_set1_ps(1.0f);
    const __m256 is_small = _mm256_cmp_ps(a, one, _CMP_LT_OQ);
    const __m256 small = _mm256_mul_ps(a, horner8(z, small_poly));
    if (_mm256_movemask_ps(is_small) == 0xff) return with_sign8(small, x);
    const __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(_mm256_set1_ps(0.3275911f), a, one));
    const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), z));
    const __m256 large = _mm256_fnmadd_ps(_mm256_mul_ps(t, horner8(t, tail)), e, one);
    return with_sign8(_mm256_blendv_ps(large, small, is_small), x);
}

// The standard normal CDF Phi(x), for gelu = x Phi(x). The lower tail Phi(-|x|) is a degree-7
// polynomial in each of eight intervals of width 0.8 over [0, 6.4), fitted for relative error by
// tools/fit_normal_cdf.py (which prints the table below); each lane picks its interval's
// coefficients with one permute per degree, so there is no branch, division or exp. erf8 (and
// PyTorch's erf) forms 1 + erf(x / sqrt 2), which cancels for negative x; the lower tail directly
// keeps gelu within 2.1 ulp of float64 for x >= 0, 2.6 over [-1, 0) and 71 over [-4, -3], where
// PyTorch is 10^4 ulp off. Beyond 6.4 the tail is 0 (gelu(-6.4) is -2.6e-10). NaN stays NaN
// (the mask compares false), Phi(+inf) is 1 and Phi(-0.0) is 1/2.
TP_AVX2 inline __m256 normal_cdf8(__m256 x) {
    static constexpr float kLowerTail[8][8] = {
        {0.5f, 0.211855397f, 0.0547992885f, 0.00819753669f, 0.000687138061f, 3.16711375e-05f, 7.93309425e-07f, 1.07165539e-08f},
        {-0.319154114f, -0.231753215f, -0.0887365192f, -0.0179157015f, -0.00190728053f, -0.000107055574f, -3.16757996e-06f, -4.93855907e-08f},
        {5.32641252e-06f, 0.0741606057f, 0.0567887761f, 0.0172003116f, 0.00244148262f, 0.000171170628f, 6.06278491e-06f, 1.0970885e-07f},
        {0.0340037793f, 0.00890096277f, -0.0147462161f, -0.00910513662f, -0.00188107509f, -0.000170470827f, -7.31425916e-06f, -1.53533932e-07f},
        {0.000142488512f, -0.00933363196f, -0.00140467577f, 0.00256132591f, 0.000947440218f, 0.000116058232f, 6.05538889e-06f, 1.45769121e-07f},
        {-0.0035455355f, 0.000320039399f, 0.00190671091f, -0.000153943271f, -0.000312587479f, -5.45690673e-05f, -3.42284375e-06f, -9.23800485e-08f},
        {0.000287338218f, 0.000817122171f, -0.000435902097f, -0.000128420405f, 6.22211155e-05f, 1.63518944e-05f, 1.19947913e-06f, 3.52942955e-08f},
        {0.000116101066f, -0.000167997685f, 2.60749439e-05f, 3.11664444e-05f, -5.66754079e-06f, -2.36310075e-06f, -1.95562194e-07f, -6.11156281e-09f},
    };
    const __m256 a = abs8(x), scale = _mm256_set1_ps(1.25f);
    const __m256i interval = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_mul_ps(a, scale), _mm256_set1_ps(7.9999995f)));
    // t from the exact product (one rounding), so the polynomial sees where a lies in its interval.
    const __m256 t = _mm256_fmsub_ps(a, scale, _mm256_cvtepi32_ps(interval));
    __m256 lower = _mm256_permutevar8x32_ps(_mm256_loadu_ps(kLowerTail[7]), interval);
    for (int i = 6; i >= 0; --i)
        lower = _mm256_fmadd_ps(lower, t, _mm256_permutevar8x32_ps(_mm256_loadu_ps(kLowerTail[i]), interval));
    lower = _mm256_and_ps(lower, _mm256_cmp_ps(a, _mm256_set1_ps(6.4f), _CMP_LT_OQ));
    // blendv picks by the sign bit: x < 0 (and -0.0) takes the lower tail itself.
    return _mm256_blendv_ps(_mm256_sub_ps(_mm256_set1_ps(1.0f), lower), lower, x);
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
