// The bf16 GEMM of bf16_gemm.h. Both operands are packed as pairs of consecutive k values in one
// 32-bit word (vdpbf16ps multiplies lane pairs): a in strips of kRows rows, b in panels of kCols
// columns, pair by pair, zero-padded past m, n and an odd k (0 * 0 adds nothing). A micro-kernel
// keeps a kRows x kCols block of c in 24 vector registers and, per pair, broadcasts one word of
// each row of a against two vectors of b.
#include "bf16_gemm.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <utility>

#include "common.h"
#include "simd.h"
#include "transpose16.h"

namespace tp {

#ifdef TP_X86_SIMD

bool have_bf16_dot() {
    static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
    return yes;
}

namespace {

constexpr int kRows = 12;
constexpr int kCols = 32;
// Pairs of k per pass over c: a panel's block of b (128 x 32 words, 16 KB) stays in L1 while
// every strip of a runs against it.
constexpr int64_t kDepth = 128;
// Products below this many multiply-adds run on the calling thread.
constexpr int64_t kParallelWork = int64_t(1) << 21;

// pack's full strips of lines with adjacent k values, `full` whole pairs a line: 16 lines x 16
// pairs at a time through transpose16_words (scalar word moves were 14% of a linear layer's time).
template <int W> TP_BF16_DOT void pack_adjacent(const uint16_t* base, int64_t lines, int64_t full, uint32_t* out) {
    for (int64_t p0 = 0; p0 < full; p0 += 16) {
        const int64_t pairs = std::min<int64_t>(16, full - p0);
        const __mmask16 live = pairs == 16 ? 0xffff : static_cast<__mmask16>((1u << pairs) - 1);
        for (int g = 0; g < W; g += 16) {
            const int rows = std::min(16, W - g);
            __m512i r[16];
            for (int i = 0; i < 16; ++i)
                r[i] = i < rows ? _mm512_maskz_loadu_epi32(live, base + (g + i) * lines + 2 * p0) : _mm512_setzero_si512();
            transpose16_words(r);
            const __mmask16 cols = rows == 16 ? 0xffff : static_cast<__mmask16>((1u << rows) - 1);
            for (int64_t j = 0; j < pairs; ++j) _mm512_mask_storeu_epi32(out + (p0 + j) * W + g, cols, r[j]);
        }
    }
}

// Rows (or columns) [first, first + W) of an operand, each `lines` elements apart and its k
// values `step` apart, as W-word groups pair by pair; lines past `count` and the high half of an
// odd k's last pair are zeros. Lines whose k values are adjacent (a row-major a, or a linear
// layer's weight as b) are read one at a time, a pair per word; otherwise the loop runs across
// the lines (a row-major b: two rows interleaved, W adjacent elements at a time).
template <int W>
TP_BF16_DOT void pack(const uint16_t* x, int64_t lines, int64_t step, int64_t first, int64_t count, int64_t k,
                  uint32_t* out) {
    const int64_t full = k / 2, pairs = (k + 1) / 2, live = std::max<int64_t>(0, std::min<int64_t>(W, count - first));
    const uint16_t* base = x + first * lines;
    if (step == 1 && live == W) {
        pack_adjacent<W>(base, lines, full, out);
        if (k % 2)
            for (int i = 0; i < W; ++i) out[full * W + i] = base[i * lines + k - 1];
        return;
    }
    if (step == 1 || live < W) {
        for (int i = 0; i < W; ++i) {
            uint32_t* dst = out + i;
            if (i >= live) {
                for (int64_t p = 0; p < pairs; ++p) dst[p * W] = 0u;
                continue;
            }
            const uint16_t* src = base + i * lines;
            if (step == 1) {
                for (int64_t p = 0; p < full; ++p) std::memcpy(dst + p * W, src + 2 * p, 4);
            } else {
                for (int64_t p = 0; p < full; ++p)
                    dst[p * W] = uint32_t(src[2 * p * step]) | (uint32_t(src[(2 * p + 1) * step]) << 16);
            }
            if (k % 2) dst[full * W] = src[(k - 1) * step];
        }
        return;
    }
    for (int64_t p = 0; p < pairs; ++p) {
        const uint16_t* lo = base + 2 * p * step;
        const uint16_t* hi = lo + step;
        uint32_t* dst = out + p * W;
        if (2 * p + 1 < k) {
            for (int i = 0; i < W; ++i) dst[i] = uint32_t(lo[i * lines]) | (uint32_t(hi[i * lines]) << 16);
        } else {
            for (int i = 0; i < W; ++i) dst[i] = lo[i * lines];
        }
    }
}

// c rows [0, R) x columns [0, cols) (+)= strip a @ panel b over `pairs` pairs.
template <int R>
TP_BF16_DOT void micro_kernel(const uint32_t* a, const uint32_t* b, int64_t pairs, float* c, int64_t ldc, int cols,
                          bool accumulate) {
    const __mmask16 m0 = cols >= 16 ? 0xffff : static_cast<__mmask16>((1u << cols) - 1);
    const __mmask16 m1 = cols >= 32 ? 0xffff : cols <= 16 ? 0 : static_cast<__mmask16>((1u << (cols - 16)) - 1);
    __m512 acc[R][2];
#pragma GCC unroll 12
    for (int i = 0; i < R; ++i) {
        acc[i][0] = accumulate ? _mm512_maskz_loadu_ps(m0, c + i * ldc) : _mm512_setzero_ps();
        acc[i][1] = accumulate ? _mm512_maskz_loadu_ps(m1, c + i * ldc + 16) : _mm512_setzero_ps();
    }
    for (int64_t p = 0; p < pairs; ++p, a += kRows, b += kCols) {
        const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b), b1 = (__m512bh)_mm512_loadu_si512(b + 16);
#pragma GCC unroll 12
        for (int i = 0; i < R; ++i) {
            const __m512bh ai = (__m512bh)_mm512_set1_epi32(static_cast<int>(a[i]));
            acc[i][0] = _mm512_dpbf16_ps(acc[i][0], ai, b0);
            acc[i][1] = _mm512_dpbf16_ps(acc[i][1], ai, b1);
        }
    }
#pragma GCC unroll 12
    for (int i = 0; i < R; ++i) {
        _mm512_mask_storeu_ps(c + i * ldc, m0, acc[i][0]);
        _mm512_mask_storeu_ps(c + i * ldc + 16, m1, acc[i][1]);
    }
}

using MicroKernel = void (*)(const uint32_t*, const uint32_t*, int64_t, float*, int64_t, int, bool);

template <int... R> constexpr auto kernels_for(std::integer_sequence<int, R...>) {
    return std::array<MicroKernel, sizeof...(R)>{&micro_kernel<R + 1>...};
}
// kKernel[r - 1] handles a strip of r rows (the last strip of a may be short).
constexpr auto kKernel = kernels_for(std::make_integer_sequence<int, kRows>{});

}  // namespace

void bf16_gemm(int64_t m, int64_t n, int64_t k, const uint16_t* a, int64_t ars, int64_t acs, const uint16_t* b,
               int64_t brs, int64_t bcs, float* c, int64_t ldc, bool may_thread) {
    const int64_t pairs = (k + 1) / 2, strips = (m + kRows - 1) / kRows, panels = (n + kCols - 1) / kCols;
    const bool parallel = may_thread && m * n * k >= kParallelWork && g_num_threads > 1;
    const int64_t chunks = parallel ? int64_t(g_num_threads) * CHUNKS_PER_THREAD : 1;
    std::unique_ptr<uint32_t[]> ap(new uint32_t[std::max<int64_t>(strips * pairs * kRows, 1)]);
    std::unique_ptr<uint32_t[]> bp(new uint32_t[std::max<int64_t>(panels * pairs * kCols, 1)]);
    parallel_chunks(strips + panels, chunks, [&](int64_t, int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) {
            if (t < strips) pack<kRows>(a, ars, acs, t * kRows, m, k, ap.get() + t * pairs * kRows);
            else pack<kCols>(b, bcs, brs, (t - strips) * kCols, n, k, bp.get() + (t - strips) * pairs * kCols);
        }
    });
    // Tasks split the longer side of c (in strips or panels); each runs its panels one after
    // another against every strip, kDepth pairs at a time.
    const bool by_panels = panels >= strips;
    parallel_chunks(by_panels ? panels : strips, chunks, [&](int64_t, int64_t t0, int64_t t1) {
        const int64_t q0 = by_panels ? t0 : 0, q1 = by_panels ? t1 : panels;
        const int64_t s0 = by_panels ? 0 : t0, s1 = by_panels ? strips : t1;
        for (int64_t p0 = 0; p0 < std::max<int64_t>(pairs, 1); p0 += kDepth) {
            const int64_t depth = std::min(kDepth, pairs - p0);
            for (int64_t q = q0; q < q1; ++q) {
                const uint32_t* panel = bp.get() + (q * pairs + p0) * kCols;
                const int cols = static_cast<int>(std::min<int64_t>(kCols, n - q * kCols));
                for (int64_t s = s0; s < s1; ++s) {
                    const int rows = static_cast<int>(std::min<int64_t>(kRows, m - s * kRows));
                    kKernel[rows - 1](ap.get() + (s * pairs + p0) * kRows, panel, depth,
                                      c + s * kRows * ldc + q * kCols, ldc, cols, p0 > 0);
                }
            }
        }
    });
}

#else

bool have_bf16_dot() { return false; }

void bf16_gemm(int64_t, int64_t, int64_t, const uint16_t*, int64_t, int64_t, const uint16_t*, int64_t, int64_t, float*,
               int64_t, bool) {
    value_error("bf16_gemm: this build has no x86 SIMD paths");
}

#endif  // TP_X86_SIMD

}  // namespace tp
