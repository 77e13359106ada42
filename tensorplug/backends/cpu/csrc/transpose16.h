// A 16 x 16 block of 32-bit words transposed in AVX-512 registers: the bf16 GEMM's packing turns
// rows of pairs into columns, the direct convolution its channel-lane results into output rows.
#pragma once

#include "simd.h"

#ifdef TP_X86_SIMD

namespace tp {

// r[j] = column j of the 16 x 16 words r[0..16): pairs of rows interleaved by words, then by
// word pairs, then the 128-bit lanes gathered across four registers. The loops unroll completely
// so that the arrays live in registers (rolled, -O2 kept them on the stack: a spill a shuffle).
TP_AVX512 inline void transpose16_words(__m512i* r) {
    __m512i t[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    // u[4 * i + c]'s lane L: column 4 * L + c of rows 4 * i .. 4 * i + 3
    __m512i u[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; i += 4) {
        u[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
        u[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        u[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        u[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
        const __m512i even0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x88), odd0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xdd);
        const __m512i even1 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x88);
        const __m512i odd1 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xdd);
        r[c] = _mm512_shuffle_i32x4(even0, even1, 0x88);
        r[4 + c] = _mm512_shuffle_i32x4(odd0, odd1, 0x88);
        r[8 + c] = _mm512_shuffle_i32x4(even0, even1, 0xdd);
        r[12 + c] = _mm512_shuffle_i32x4(odd0, odd1, 0xdd);
    }
}

}  // namespace tp

#endif  // TP_X86_SIMD
