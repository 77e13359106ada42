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

namespace tp {

#ifdef TP_X86_SIMD

namespace {

// Output channels a micro-kernel keeps (its strip of the weight) and 16-word vectors of output
// positions: 8 x 3 accumulators leave registers for the three vectors of the input, and a step
// has 24 multiply-adds against 3 loads and 8 broadcasts.
constexpr int kStripRows = 8;
constexpr int kMaxVectors = 3;
constexpr int64_t kBlockPositions = 16 * kMaxVectors;

using BlockFn = void (*)(const uint32_t*, const uint32_t*, const int64_t*, int64_t, float*, int64_t);

#define TP_BF16_DOT __attribute__((target("avx2,fma,avx512f,avx512dq,avx512bw,avx512vl,avx512bf16")))

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

// Image n's phases (conv_direct.h) into q, units x s0 x s1 planes of hq x wq words: rows outside
// the input and columns in the padding are zeros. AVX-512 lets the compiler gather a stride-2
// row and interleave two bf16 channels sixteen words at a time (SSE took 15% of a call).
TP_AVX512 void copy_phases(const ConvGeometry& g, bool bf16, int64_t units, int64_t hq, int64_t wq, const void* in,
                           const int64_t* st, int64_t n, uint32_t* q) {
    const int64_t plane_words = hq * wq, cstep = g.s[1] * st[3];
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

}  // namespace

struct DirectConv::Plan {
    ConvGeometry g;
    bool bf16;
    int64_t units;      // channels (float32) or channel pairs (bf16) per phase set
    int64_t hq, wq;     // a phase's rows and columns
    int64_t plane;      // hq * wq
    int64_t planes;     // units * s0 * s1
    int64_t padded;     // output positions computed (oh rows of wq), rounded up to a vector
    int64_t steps;      // taps * units
    std::vector<int64_t> off;     // per step: where its words start in the phase copy
    std::vector<uint32_t> weight; // per strip of kStripRows output channels: [step][kStripRows]
    std::vector<float> bias;      // o values, or empty
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
    p.padded = (g.oh * p.wq + 15) / 16 * 16;
    const int64_t taps = g.kh * g.kw;
    p.steps = taps * p.units;
    p.off.resize(p.steps);
    const int64_t strips = (g.o + kStripRows - 1) / kStripRows;
    p.weight.assign(strips * p.steps * kStripRows, 0u);
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
                    uint32_t& dst = p.weight[((o / kStripRows) * p.steps + k) * kStripRows + o % kStripRows];
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
}

DirectConv::~DirectConv() = default;

void DirectConv::run(const void* in, const int64_t* st, int64_t n0, int64_t n1, void* out) const {
    const Plan& p = *plan_;
    const ConvGeometry& g = p.g;
    // The last phase's last taps read past it, by up to a vector and a tap column offset: zeros,
    // in dropped positions.
    const int64_t words = p.planes * p.plane, slack = p.wq - g.ow + 16;
    std::unique_ptr<uint32_t[]> q(new uint32_t[words + slack]);
    std::fill(q.get() + words, q.get() + words + slack, 0u);
    std::unique_ptr<float[]> c(new float[g.o * p.padded]);
    const auto& blocks = p.bf16 ? dot16::kBlocks : fma32::kBlocks;
    for (int64_t n = n0; n < n1; ++n) {
        copy_phases(g, p.bf16, p.units, p.hq, p.wq, in, st, n, q.get());
        // Position blocks outside, strips inside: a block's words stay in cache for every strip.
        for (int64_t pos = 0; pos < p.padded; pos += kBlockPositions) {
            const int64_t vectors = std::min<int64_t>(kMaxVectors, (p.padded - pos) / 16);
            for (int64_t o0 = 0; o0 < g.o; o0 += kStripRows) {
                const int64_t rows = std::min<int64_t>(kStripRows, g.o - o0);
                blocks[(rows - 1) * kMaxVectors + vectors - 1](p.weight.data() + o0 * p.steps, q.get() + pos,
                                                               p.off.data(), p.steps, c.get() + o0 * p.padded + pos,
                                                               p.padded);
            }
        }
        // Each output row is the first ow of its wq computed positions, plus the bias.
        for (int64_t o = 0; o < g.o; ++o) {
            const float add = p.bias.empty() ? -0.0f : p.bias[o];  // -0 adds nothing, even to -0
            for (int64_t y = 0; y < g.oh; ++y) {
                const float* src = c.get() + o * p.padded + y * p.wq;
                const int64_t at = ((n * g.o + o) * g.oh + y) * g.ow;
                if (p.bf16) {
                    round_to_bf16(src, add, static_cast<uint16_t*>(out) + at, g.ow);
                } else {
                    float* dst = static_cast<float*>(out) + at;
                    for (int64_t x = 0; x < g.ow; ++x) dst[x] = src[x] + add;
                }
            }
        }
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
