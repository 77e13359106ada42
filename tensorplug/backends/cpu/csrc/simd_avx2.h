// The primitives simd_lanes.inc is written over, eight float32 lanes with AVX2+FMA (included by
// simd.h only). simd_avx512.h defines the same names for sixteen lanes; keep the two in step.
#pragma once

namespace tp::lanes8 {

using Vec = __m256;
using Mask = __m256;  // all-ones or all-zeros lanes
using Ints = __m256i;
using DoubleSum = __m256d[2];
constexpr int kLanes = 8;

TP_AVX2 inline Vec splat(float v) { return _mm256_set1_ps(v); }
TP_AVX2 inline Ints splat_int(int v) { return _mm256_set1_epi32(v); }
TP_AVX2 inline Vec load(const float* p) { return _mm256_loadu_ps(p); }
TP_AVX2 inline void store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
// The first n < 8 elements, the other lanes `fill`; and their store back.
TP_AVX2 inline Vec load_tail(const float* p, int64_t n, float fill) {
    alignas(32) float buf[8];
    for (int i = 0; i < 8; ++i) buf[i] = i < n ? p[i] : fill;
    return _mm256_load_ps(buf);
}
TP_AVX2 inline void store_tail(float* p, Vec v, int64_t n) {
    alignas(32) float buf[8];
    _mm256_store_ps(buf, v);
    for (int64_t i = 0; i < n; ++i) p[i] = buf[i];
}

TP_AVX2 inline Vec fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }    // a b + c
TP_AVX2 inline Vec fnma(Vec a, Vec b, Vec c) { return _mm256_fnmadd_ps(a, b, c); }  // c - a b
TP_AVX2 inline Vec fms(Vec a, Vec b, Vec c) { return _mm256_fmsub_ps(a, b, c); }    // a b - c
// b where either is NaN (the instructions' rule: NaN passes through as the second operand).
TP_AVX2 inline Vec minimum(Vec a, Vec b) { return _mm256_min_ps(a, b); }
TP_AVX2 inline Vec maximum(Vec a, Vec b) { return _mm256_max_ps(a, b); }
// 1 / d, correctly rounded (vdivps).
TP_AVX2 inline Vec reciprocal(Vec d) { return _mm256_div_ps(_mm256_set1_ps(1.0f), d); }

TP_AVX2 inline Vec bit_and(Vec a, Vec b) { return _mm256_and_ps(a, b); }
TP_AVX2 inline Vec bit_andnot(Vec a, Vec b) { return _mm256_andnot_ps(a, b); }  // ~a & b
TP_AVX2 inline Vec bit_or(Vec a, Vec b) { return _mm256_or_ps(a, b); }

TP_AVX2 inline Mask less(Vec a, Vec b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
TP_AVX2 inline Mask equal(Vec a, Vec b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); }
TP_AVX2 inline Mask is_nan(Vec a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
TP_AVX2 inline Mask either(Mask a, Mask b) { return _mm256_or_ps(a, b); }
TP_AVX2 inline bool all_of(Mask m) { return _mm256_movemask_ps(m) == 0xff; }
TP_AVX2 inline Vec select(Mask m, Vec if_true, Vec if_false) { return _mm256_blendv_ps(if_false, if_true, m); }
// By x's sign bit (-0.0 and NaNs with the bit set count as negative).
TP_AVX2 inline Vec select_negative(Vec x, Vec if_negative, Vec otherwise) {
    return _mm256_blendv_ps(otherwise, if_negative, x);
}

TP_AVX2 inline Ints to_bits(Vec v) { return _mm256_castps_si256(v); }
TP_AVX2 inline Vec from_bits(Ints v) { return _mm256_castsi256_ps(v); }
TP_AVX2 inline Ints add_int(Ints a, Ints b) { return _mm256_add_epi32(a, b); }
TP_AVX2 inline Ints sub_int(Ints a, Ints b) { return _mm256_sub_epi32(a, b); }
TP_AVX2 inline Ints and_int(Ints a, Ints b) { return _mm256_and_si256(a, b); }
TP_AVX2 inline Ints or_int(Ints a, Ints b) { return _mm256_or_si256(a, b); }
TP_AVX2 inline Ints shift_left(Ints a, int n) { return _mm256_slli_epi32(a, n); }
TP_AVX2 inline Ints shift_right(Ints a, int n) { return _mm256_srli_epi32(a, n); }
TP_AVX2 inline Ints shift_right_signed(Ints a, int n) { return _mm256_srai_epi32(a, n); }
TP_AVX2 inline Vec to_float(Ints a) { return _mm256_cvtepi32_ps(a); }
TP_AVX2 inline Ints truncate_to_int(Vec a) { return _mm256_cvttps_epi32(a); }
// table[index] per lane, index in [0, 8).
TP_AVX2 inline Vec lookup8(const float* table, Ints index) {
    return _mm256_permutevar8x32_ps(_mm256_loadu_ps(table), index);
}

TP_AVX2 inline float max_of(Vec v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}
// Sums of float32 lanes kept in double: two accumulators of four.
TP_AVX2 inline void clear(DoubleSum& s) { s[0] = s[1] = _mm256_setzero_pd(); }
TP_AVX2 inline void accumulate(DoubleSum& s, Vec v) {
    s[0] = _mm256_add_pd(s[0], _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    s[1] = _mm256_add_pd(s[1], _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}
// s += v^2 per lane (squared in double).
TP_AVX2 inline void accumulate_squares(DoubleSum& s, Vec v) {
    const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v)), hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
    s[0] = _mm256_add_pd(s[0], _mm256_mul_pd(lo, lo));
    s[1] = _mm256_add_pd(s[1], _mm256_mul_pd(hi, hi));
}
// Each lane's sum, in lane order.
TP_AVX2 inline void store_lanes(double* out, const DoubleSum& s) {
    _mm256_storeu_pd(out, s[0]);
    _mm256_storeu_pd(out + 4, s[1]);
}
TP_AVX2 inline double total(const DoubleSum& s) {
    alignas(32) double lanes[4];
    _mm256_store_pd(lanes, _mm256_add_pd(s[0], s[1]));
    return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
}

}  // namespace tp::lanes8
