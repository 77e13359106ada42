// Direct (im2col-free) forward convolutions for one group on AVX-512: float32 on FMAs, bfloat16 on
// the bf16 dot-product instruction (vdpbf16ps, float32 sums). The input is copied once into its
// stride phases, zero-padded: for stride (s0, s1), phase (a, b) of channel c holds
// in[c][y * s0 + a - p0][x * s1 + b - p1] at row y, column x, so every kernel tap reads a phase at
// stride 1 and, with each phase's rows laid end to end, a tap's values for consecutive output
// positions are consecutive words. A micro-kernel then runs a GEMM with output channels in the
// vector lanes (16 a vector, the weight zero-padded to a multiple of 16) and a block of positions of
// one output row broadcast from those words, read in place at each tap's offset: no im2col buffer,
// no packing of the input and no lane spent on a position that is dropped. Each image's results
// are then transposed 16 x 16 into its output planes.
// bfloat16 packs two adjacent channels into one word (the instruction's pairs), so k runs over
// (tap, channel pair); float32 over (tap, channel).
#pragma once

#include <cstdint>
#include <memory>

#include "conv_geometry.h"

namespace tp {

// Whether DirectConv runs this convolution here: one group, some channels on both sides, and the
// CPU's AVX-512 (float32) or AVX512_BF16 (bfloat16).
bool direct_conv_applies(const ConvGeometry& g, bool bf16);

class DirectConv {
  public:
    // Packs the contiguous weight (float32 or bf16 bit patterns); bias (o float32 values) may be null.
    DirectConv(const ConvGeometry& g, bool bf16, const void* weight, const float* bias);
    ~DirectConv();
    // Images [n0, n1) of the input (element strides st) into the contiguous output (float32, or
    // bf16 bit patterns each rounded once from its float32 sum plus the bias). Safe to call from
    // several threads on disjoint images.
    void run(const void* in, const int64_t* st, int64_t n0, int64_t n1, void* out) const;

  private:
    struct Plan;
    std::unique_ptr<Plan> plan_;
};

}  // namespace tp
