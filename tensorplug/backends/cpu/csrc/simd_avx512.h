// The primitives simd_lanes.inc is written over, sixteen float32 lanes with AVX-512 F/DQ/BW/VL
// (included by simd.h only): the names and meanings of simd_avx2.h, where the comments are.
#pragma once

namespace tp::lanes16 {

using Vec = __m512;
using Mask = __mmask16;
using Ints = __m512i;
using DoubleSum = __m512d[2];
constexpr int kLanes = 16;

TP_AVX512 inline Vec splat(float v) { return _mm512_set1_ps(v); }
TP_AVX512 inline Ints splat_int(int v) { return _mm512_set1_epi32(v); }
TP_AVX512 inline Vec load(const float* p) { return _mm512_loadu_ps(p); }
TP_AVX512 inline void store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
// Masked: the lanes past n are never read or written.
TP_AVX512 inline Vec load_tail(const float* p, int64_t n, float fill) {
    return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), static_cast<__mmask16>((1u << n) - 1), p);
}
TP_AVX512 inline void store_tail(float* p, Vec v, int64_t n) {
    _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1), v);
}

TP_AVX512 inline Vec fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
TP_AVX512 inline Vec fnma(Vec a, Vec b, Vec c) { return _mm512_fnmadd_ps(a, b, c); }
TP_AVX512 inline Vec fms(Vec a, Vec b, Vec c) { return _mm512_fmsub_ps(a, b, c); }
TP_AVX512 inline Vec minimum(Vec a, Vec b) { return _mm512_min_ps(a, b); }
TP_AVX512 inline Vec maximum(Vec a, Vec b) { return _mm512_max_ps(a, b); }
// vrcp14ps (relative error below 2^-14) and one Newton step, whose error is its square (2^-28)
// plus the step's rounding: a vdivps per 16 floats cost more than the rest of sigmoid on Zen 4.
// d = +inf gives 0 (the step alone would give inf * 0 = NaN); NaN stays NaN.
TP_AVX512 inline Vec reciprocal(Vec d) {
    const __m512 r = _mm512_rcp14_ps(d);
    const __m512 refined = _mm512_fmadd_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(1.0f)), r);
    return _mm512_mask_mov_ps(refined, _mm512_cmp_ps_mask(d, _mm512_set1_ps(kInfF), _CMP_EQ_OQ), r);
}

TP_AVX512 inline Vec bit_and(Vec a, Vec b) { return _mm512_and_ps(a, b); }
TP_AVX512 inline Vec bit_andnot(Vec a, Vec b) { return _mm512_andnot_ps(a, b); }
TP_AVX512 inline Vec bit_or(Vec a, Vec b) { return _mm512_or_ps(a, b); }

TP_AVX512 inline Mask less(Vec a, Vec b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
TP_AVX512 inline Mask equal(Vec a, Vec b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
TP_AVX512 inline Mask is_nan(Vec a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
TP_AVX512 inline Mask either(Mask a, Mask b) { return static_cast<Mask>(a | b); }
TP_AVX512 inline bool all_of(Mask m) { return m == 0xffff; }
TP_AVX512 inline Vec select(Mask m, Vec if_true, Vec if_false) { return _mm512_mask_mov_ps(if_false, m, if_true); }
TP_AVX512 inline Vec select_negative(Vec x, Vec if_negative, Vec otherwise) {
    return _mm512_mask_mov_ps(otherwise, _mm512_movepi32_mask(_mm512_castps_si512(x)), if_negative);
}

TP_AVX512 inline Ints to_bits(Vec v) { return _mm512_castps_si512(v); }
TP_AVX512 inline Vec from_bits(Ints v) { return _mm512_castsi512_ps(v); }
TP_AVX512 inline Ints add_int(Ints a, Ints b) { return _mm512_add_epi32(a, b); }
TP_AVX512 inline Ints sub_int(Ints a, Ints b) { return _mm512_sub_epi32(a, b); }
TP_AVX512 inline Ints and_int(Ints a, Ints b) { return _mm512_and_si512(a, b); }
TP_AVX512 inline Ints or_int(Ints a, Ints b) { return _mm512_or_si512(a, b); }
TP_AVX512 inline Ints shift_left(Ints a, int n) { return _mm512_slli_epi32(a, n); }
TP_AVX512 inline Ints shift_right(Ints a, int n) { return _mm512_srli_epi32(a, n); }
TP_AVX512 inline Ints shift_right_signed(Ints a, int n) { return _mm512_srai_epi32(a, n); }
TP_AVX512 inline Vec to_float(Ints a) { return _mm512_cvtepi32_ps(a); }
TP_AVX512 inline Ints truncate_to_int(Vec a) { return _mm512_cvttps_epi32(a); }
// Indices below 8 read only the table's first eight floats (the upper half is left undefined).
TP_AVX512 inline Vec lookup8(const float* table, Ints index) {
    return _mm512_permutexvar_ps(index, _mm512_castps256_ps512(_mm256_loadu_ps(table)));
}

TP_AVX512 inline float max_of(Vec v) { return _mm512_reduce_max_ps(v); }
TP_AVX512 inline void clear(DoubleSum& s) { s[0] = s[1] = _mm512_setzero_pd(); }
TP_AVX512 inline void accumulate(DoubleSum& s, Vec v) {
    s[0] = _mm512_add_pd(s[0], _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
    s[1] = _mm512_add_pd(s[1], _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)));
}
TP_AVX512 inline void accumulate_squares(DoubleSum& s, Vec v) {
    const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v)), hi = _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1));
    s[0] = _mm512_add_pd(s[0], _mm512_mul_pd(lo, lo));
    s[1] = _mm512_add_pd(s[1], _mm512_mul_pd(hi, hi));
}
TP_AVX512 inline void store_lanes(double* out, const DoubleSum& s) {
    _mm512_storeu_pd(out, s[0]);
    _mm512_storeu_pd(out + 8, s[1]);
}
TP_AVX512 inline double total(const DoubleSum& s) {
    alignas(64) double lanes[8];
    _mm512_store_pd(lanes, _mm512_add_pd(s[0], s[1]));
    return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
}

}  // namespace tp::lanes16
