// bfloat16 matrix products on the CPU's bf16 dot-product instruction (AVX512_BF16's vdpbf16ps:
// two bf16 products a lane added into a float32 accumulator, twice float32 FMA's arithmetic a
// cycle). Widening to float32 for sgemm cost 2.3-2.5x PyTorch's time on autocast's linear layers.
#pragma once

#include <cstdint>

namespace tp {

// Whether bf16_gemm runs here: an x86-64 build with its SIMD paths on a CPU with AVX512_BF16.
bool have_bf16_dot();

// c (m x n float32, rows ldc apart, unit column stride) = a (m x k) @ b (k x n), operands given as
// bfloat16 bit patterns with element strides (row, column). Sums in float32; as the instruction
// does, subnormal bf16 inputs count as zero. With may_thread, threads over blocks of c when the
// product is large enough to pay for it (callers already inside parallel tasks pass false). Call
// only where have_bf16_dot().
void bf16_gemm(int64_t m, int64_t n, int64_t k, const uint16_t* a, int64_t ars, int64_t acs, const uint16_t* b,
               int64_t brs, int64_t bcs, float* c, int64_t ldc, bool may_thread);

}  // namespace tp
