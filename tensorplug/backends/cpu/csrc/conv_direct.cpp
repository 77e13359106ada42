// DirectConv (conv_direct.h): phase copies of the input and a micro-kernel over them.
#include "conv_direct.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>

#include "bf16_gemm.h"
#include "bf16_round.h"
#include "simd.h"
#include "transpose16.h"

namespace tp {

#ifdef TP_X86_SIMD

namespace {

// A micro-kernel's accumulators: R vectors of 16 output channels (its strip of the weight) for P
// positions of an output row, R * P <= kMaxAccumulators, which leaves registers for the R weight
// vectors and a broadcast input word.
// Two vectors: two weight loads and P broadcasts a step for 2 * P multiply-adds (four vectors of 7
// measured the same, within the noise of a busy machine).
constexpr int kMaxVectors = 2;
constexpr int kMaxPositions = 14;
constexpr int kMaxAccumulators = 28;

using BlockFn = void (*)(const uint32_t*, int64_t, const uint32_t*, const int64_t*, int64_t, float*, int64_t);

inline float load_word_as_float(const uint32_t* p) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
}

namespace fma32 {
#define TP_DIRECT_TARGET TP_AVX512
#define TP_DIRECT_STEP(acc, w, b) _mm512_fmadd_ps(_mm512_castsi512_ps(w), _mm512_castsi512_ps(b), acc)
#include "conv_direct_block.inc"
#undef TP_DIRECT_STEP
#undef TP_DIRECT_TARGET
}  // namespace fma32

namespace dot16 {
#define TP_DIRECT_TARGET TP_BF16_DOT
#define TP_DIRECT_STEP(acc, w, b) _mm512_dpbf16_ps(acc, (__m512bh)(w), (__m512bh)(b))
#include "conv_direct_block.inc"
#undef TP_DIRECT_STEP
#undef TP_DIRECT_TARGET
}  // namespace dot16

// d[i] = word(i * step) for i < count; a constant step lets the compiler gather with shuffles.
template <int64_t kStep, class Word> inline void copy_words(uint32_t* d, int64_t count, int64_t step, Word word) {
    for (int64_t i = 0; i < count; ++i) d[i] = word(i * (kStep ? kStep : step));
}

// d0[x] = row[2x - p1] and d1[x] = row[2x + 1 - p1] for x < wq, zeros outside [0, w): a float32
// row's two column phases of stride 2 from one read of it, sixteen columns of each at a time
// (reading the row once per phase, eight and then one word at a time, was 12% of a call).
TP_AVX512 void copy_column_pairs(const float* row, int64_t w, int64_t p1, int64_t wq, uint32_t* d0, uint32_t* d1) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    for (int64_t x0 = 0; x0 < wq; x0 += 16) {
        // Lanes [from, to) of the 32 words from row + i0 lie in the row; the rest (padding) load as
        // zeros and are never touched, so no lane reads outside it.
        const int64_t i0 = 2 * x0 - p1, from = std::clamp<int64_t>(-i0, 0, 32), to = std::clamp<int64_t>(w - i0, 0, 32);
        const uint64_t live = to > from ? ((uint64_t(1) << (to - from)) - 1) << from : 0;
        const __m512 lo = _mm512_maskz_loadu_ps(static_cast<__mmask16>(live), row + i0);
        const __m512 hi = _mm512_maskz_loadu_ps(static_cast<__mmask16>(live >> 16), row + i0 + 16);
        const __mmask16 out = wq - x0 >= 16 ? 0xffff : static_cast<__mmask16>((1u << (wq - x0)) - 1);
        _mm512_mask_storeu_ps(reinterpret_cast<float*>(d0 + x0), out, _mm512_permutex2var_ps(lo, even, hi));
        _mm512_mask_storeu_ps(reinterpret_cast<float*>(d1 + x0), out, _mm512_permutex2var_ps(lo, odd, hi));
    }
}

// Image n's phases (conv_direct.h) into q, units x s0 x s1 planes of hq x wq words: rows outside
// the input and columns in the padding are zeros. AVX-512 lets the compiler gather a stride-2
// row and interleave two bf16 channels sixteen words at a time (SSE took 15% of a call).
TP_AVX512 void copy_phases(const ConvGeometry& g, bool bf16, int64_t units, int64_t hq, int64_t wq, const void* in,
                           const int64_t* st, int64_t n, uint32_t* q) {
    const int64_t plane_words = hq * wq, cstep = g.s[1] * st[3];
    if (!bf16 && g.s[1] == 2 && st[3] == 1) {
        for (int64_t u = 0; u < units; ++u)
            for (int64_t a = 0; a < g.s[0]; ++a) {
                uint32_t* even = q + (u * g.s[0] + a) * 2 * plane_words;
                for (int64_t y = 0; y < hq; ++y) {
                    uint32_t* d0 = even + y * wq;
                    uint32_t* d1 = d0 + plane_words;
                    const int64_t ih = y * g.s[0] + a - g.p[0];
                    if (ih < 0 || ih >= g.h) {
                        std::fill(d0, d0 + wq, 0u);
                        std::fill(d1, d1 + wq, 0u);
                    } else {
                        copy_column_pairs(static_cast<const float*>(in) + n * st[0] + u * st[1] + ih * st[2], g.w,
                                          g.p[1], wq, d0, d1);
                    }
                }
            }
        return;
    }
    for (int64_t u = 0; u < units; ++u)
        for (int64_t a = 0; a < g.s[0]; ++a)
            for (int64_t b = 0; b < g.s[1]; ++b) {
                uint32_t* plane = q + ((u * g.s[0] + a) * g.s[1] + b) * plane_words;
                const int64_t first = (g.p[1] - b + g.s[1] - 1) / g.s[1];
                const int64_t lo = std::clamp<int64_t>(g.p[1] > b ? first : 0, 0, wq);
                const int64_t hi = std::clamp<int64_t>((g.w + g.p[1] - b + g.s[1] - 1) / g.s[1], lo, wq);
                for (int64_t y = 0; y < hq; ++y) {
                    uint32_t* d = plane + y * wq;
                    const int64_t ih = y * g.s[0] + a - g.p[0];
                    if (ih < 0 || ih >= g.h) {
                        std::fill(d, d + wq, 0u);
                        continue;
                    }
                    std::fill(d, d + lo, 0u);
                    std::fill(d + hi, d + wq, 0u);
                    const int64_t row = n * st[0] + ih * st[2] + (lo * g.s[1] + b - g.p[1]) * st[3];
                    auto copy = [&](auto word) {
                        if (cstep == 1) copy_words<1>(d + lo, hi - lo, 1, word);
                        else if (cstep == 2) copy_words<2>(d + lo, hi - lo, 2, word);
                        else copy_words<0>(d + lo, hi - lo, cstep, word);
                    };
                    if (!bf16) {
                        const float* s = static_cast<const float*>(in) + row + u * st[1];
                        copy([s](int64_t j) { uint32_t v; std::memcpy(&v, s + j, 4); return v; });
                    } else if (2 * u + 1 < g.c) {
                        const uint16_t* s0 = static_cast<const uint16_t*>(in) + row + 2 * u * st[1];
                        const uint16_t* s1 = s0 + st[1];
                        copy([s0, s1](int64_t j) { return uint32_t(s0[j]) | (uint32_t(s1[j]) << 16); });
                    } else {
                        const uint16_t* s0 = static_cast<const uint16_t*>(in) + row + 2 * u * st[1];
                        copy([s0](int64_t j) { return uint32_t(s0[j]); });
                    }
                }
            }
}

// Input rows [first, last) of image n (row r: channel r / h, input row r % h) towards L2, for a
// contiguous row: the phase copy of the next image then finds them there instead of waiting on
// memory (its first load was 7% of a stride-2 call's samples).
void prefetch_rows(const ConvGeometry& g, const void* in, const int64_t* st, int64_t n, int64_t first, int64_t last,
                   int64_t element_bytes) {
    if (st[3] != 1) return;
    for (int64_t r = first; r < last; ++r) {
        const char* row = static_cast<const char*>(in) + (n * st[0] + (r / g.h) * st[1] + (r % g.h) * st[2]) * element_bytes;
        for (int64_t b = 0; b < g.w * element_bytes; b += 64) _mm_prefetch(row + b, _MM_HINT_T1);
    }
}

// n split into ceil(n / most) parts of sizes differing by at most one.
std::vector<int64_t> balanced_parts(int64_t n, int64_t most) {
    const int64_t parts = (n + most - 1) / most;
    std::vector<int64_t> sizes(parts, n / parts);
    for (int64_t i = 0; i < n % parts; ++i) ++sizes[i];
    return sizes;
}

// One image's results, channels in lanes ([position][vectors * 16] floats, positions rounded up to
// a 16 x 16 tile), into its output planes with the bias: float32, or bf16 rounded once.
TP_AVX512 void write_output(const float* c, int64_t positions, int64_t vectors, int64_t channels, const float* bias,
                            bool bf16, void* out) {
    const int64_t ldc = vectors * 16;
    for (int64_t p0 = 0; p0 < positions; p0 += 16) {
        const int64_t live = std::min<int64_t>(16, positions - p0);
        const __mmask16 mask = live == 16 ? 0xffff : static_cast<__mmask16>((1u << live) - 1);
        for (int64_t v = 0; v < vectors; ++v) {
            __m512i r[16];
#pragma GCC unroll 16
            for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(c + (p0 + i) * ldc + 16 * v);
            transpose16_words(r);
            // Unrolled with constant indices, so that r stays in registers.
#pragma GCC unroll 16
            for (int i = 0; i < 16; ++i) {
                const int64_t o = 16 * v + i, at = o * positions + p0;
                if (o >= channels) break;
                const float add = bias ? bias[o] : -0.0f;  // -0 adds nothing, even to -0
                const __m512 x = _mm512_add_ps(_mm512_castsi512_ps(r[i]), _mm512_set1_ps(add));
                if (bf16) _mm512_mask_cvtepi32_storeu_epi16(static_cast<uint16_t*>(out) + at, mask, bf16_words(x));
                else _mm512_mask_storeu_ps(static_cast<float*>(out) + at, mask, x);
            }
        }
    }
}

}  // namespace

struct DirectConv::Plan {
    ConvGeometry g;
    bool bf16;
    int64_t units;      // channels (float32) or channel pairs (bf16) per phase set
    int64_t hq, wq;     // a phase's rows and columns
    int64_t plane;      // hq * wq
    int64_t planes;     // units * s0 * s1
    int64_t vectors;    // output channels in 16-lane vectors, the last one zero-padded
    int64_t steps;      // taps * units
    std::vector<int64_t> off;     // per step: where its words start in the phase copy
    std::vector<uint32_t> weight; // [step][vectors * 16]
    std::vector<float> bias;      // o values, or empty
    std::vector<int64_t> strips;  // vectors per strip, in order
    std::vector<int64_t> runs;    // positions per block of an output row, in order
};

bool direct_conv_applies(const ConvGeometry& g, bool bf16) {
    return g.groups == 1 && g.c > 0 && g.o > 0 && g.oh > 0 && g.ow > 0 && have_avx512() && (!bf16 || have_bf16_dot());
}

DirectConv::DirectConv(const ConvGeometry& g, bool bf16, const void* weight, const float* bias) : plan_(new Plan) {
    Plan& p = *plan_;
    p.g = g;
    p.bf16 = bf16;
    p.units = bf16 ? (g.c + 1) / 2 : g.c;
    p.hq = g.oh + (g.kh - 1) * g.d[0] / g.s[0];
    p.wq = g.ow + (g.kw - 1) * g.d[1] / g.s[1];
    p.plane = p.hq * p.wq;
    p.planes = p.units * g.s[0] * g.s[1];
    p.vectors = (g.o + 15) / 16;
    const int64_t taps = g.kh * g.kw, ldw = p.vectors * 16;
    p.steps = taps * p.units;
    p.off.resize(p.steps);
    p.weight.assign(p.steps * ldw, 0u);
    const float* wf = static_cast<const float*>(weight);
    const uint16_t* wh = static_cast<const uint16_t*>(weight);
    for (int64_t ki = 0; ki < g.kh; ++ki)
        for (int64_t kj = 0; kj < g.kw; ++kj) {
            const int64_t tap = ki * g.kw + kj, yy = ki * g.d[0], xx = kj * g.d[1];
            const int64_t phase = (yy % g.s[0]) * g.s[1] + xx % g.s[1];
            for (int64_t u = 0; u < p.units; ++u) {
                const int64_t k = tap * p.units + u;
                p.off[k] = (u * g.s[0] * g.s[1] + phase) * p.plane + (yy / g.s[0]) * p.wq + xx / g.s[1];
                for (int64_t o = 0; o < g.o; ++o) {
                    uint32_t& dst = p.weight[k * ldw + o];
                    if (!bf16) {
                        std::memcpy(&dst, wf + ((o * g.c + u) * g.kh + ki) * g.kw + kj, 4);
                        continue;
                    }
                    const int64_t c0 = 2 * u, c1 = 2 * u + 1;
                    dst = wh[((o * g.c + c0) * g.kh + ki) * g.kw + kj];
                    if (c1 < g.c) dst |= uint32_t(wh[((o * g.c + c1) * g.kh + ki) * g.kw + kj]) << 16;
                }
            }
        }
    if (bias) p.bias.assign(bias, bias + g.o);
    p.strips = balanced_parts(p.vectors, kMaxVectors);
    p.runs = balanced_parts(g.ow, std::min<int64_t>(kMaxPositions, kMaxAccumulators / p.strips.front()));
}

DirectConv::~DirectConv() = default;

void DirectConv::run(const void* in, const int64_t* st, int64_t n0, int64_t n1, void* out) const {
    const Plan& p = *plan_;
    const ConvGeometry& g = p.g;
    const int64_t positions = g.oh * g.ow, ldc = p.vectors * 16;
    std::unique_ptr<uint32_t[]> q(new uint32_t[p.planes * p.plane]);
    // Rows past the last position fill write_output's last tile: zeros, never stored.
    std::unique_ptr<float[]> c(new float[(positions + 15) / 16 * 16 * ldc]());
    const auto& blocks = p.bf16 ? dot16::kBlocks : fma32::kBlocks;
    const size_t image_bytes = size_t(g.o * positions) * (p.bf16 ? 2 : 4);
    for (int64_t n = n0; n < n1; ++n) {
        copy_phases(g, p.bf16, p.units, p.hq, p.wq, in, st, n, q.get());
        const int64_t rows = g.c * g.h, rows_per_step = (rows + g.oh - 1) / g.oh;
        for (int64_t y = 0; y < g.oh; ++y) {
            if (n + 1 < n1)
                prefetch_rows(g, in, st, n + 1, std::min(rows, y * rows_per_step), std::min(rows, (y + 1) * rows_per_step),
                              p.bf16 ? 2 : 4);
            for (int64_t x = 0, i = 0; x < g.ow; x += p.runs[i++]) {
                const uint32_t* at = q.get() + y * p.wq + x;
                float* dst = c.get() + (y * g.ow + x) * ldc;
                for (int64_t v = 0, s = 0; v < p.vectors; v += p.strips[s++])
                    blocks[(p.strips[s] - 1) * kMaxPositions + p.runs[i] - 1](
                        p.weight.data() + 16 * v, ldc, at, p.off.data(), p.steps, dst + 16 * v, ldc);
            }
        }
        write_output(c.get(), positions, p.vectors, g.o, p.bias.empty() ? nullptr : p.bias.data(), p.bf16,
                     static_cast<char*>(out) + n * image_bytes);
    }
}

#else

bool direct_conv_applies(const ConvGeometry&, bool) { return false; }

struct DirectConv::Plan {};

DirectConv::DirectConv(const ConvGeometry&, bool, const void*, const float*) {
    value_error("conv2d: this build has no direct convolution kernels");
}

DirectConv::~DirectConv() = default;

void DirectConv::run(const void*, const int64_t*, int64_t, int64_t, void*) const {}

#endif  // TP_X86_SIMD

}  // namespace tp
