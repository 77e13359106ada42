// x86 SIMD for the fused and elementwise kernels: runtime detection and float32 exp, log,
// sigmoid, tanh, erf and the normal CDF, eight lanes at a time (AVX2+FMA, namespace lanes8) or
// sixteen (AVX-512, namespace lanes16). The formulas are written once (simd_lanes.inc) over a
// handful of primitives that each width defines (simd_avx2.h, simd_avx512.h); the .inc is
// included once per width because a function's target ISA cannot be a template parameter, and
// the 8-lane code must not be compiled with AVX-512 enabled (the compiler would use its
// instructions on CPUs that lack them).
// x86-64 only (TP_X86_SIMD); elsewhere (or with -DTP_NO_X86_SIMD, how CI checks that path
// compiles) callers take their scalar loops.
#pragma once

#include <cstdlib>
#include <limits>

#include "common.h"

#if (defined(__x86_64__) || defined(__i386__)) && !defined(TP_NO_X86_SIMD)
#define TP_X86_SIMD 1
#include <immintrin.h>

namespace tp {

inline constexpr float kInfF = std::numeric_limits<float>::infinity();

// The widest lanes this process may use: TENSORPLUG_CPU_LANES=8 keeps an AVX-512 CPU on its
// AVX2 paths (how the tests reach them on such a CPU), 1 on the scalar loops.
inline int lanes_cap() {
    static const int cap = [] {
        const char* env = std::getenv("TENSORPLUG_CPU_LANES");
        return env && env[0] ? std::atoi(env) : 16;
    }();
    return cap;
}

inline bool have_avx2() {
    static const bool yes = lanes_cap() >= 8 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return yes;
}

// F for the 16-lane arithmetic, DQ for its float bit operations and sign masks, BW and VL come
// with both on every CPU that has them (Skylake-SP and later, Zen 4).
inline bool have_avx512() {
    static const bool yes = lanes_cap() >= 16 && have_avx2() && __builtin_cpu_supports("avx512f") &&
                            __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
                            __builtin_cpu_supports("avx512vl");
    return yes;
}

#define TP_AVX2 __attribute__((target("avx2,fma")))
#define TP_AVX512 __attribute__((target("avx2,fma,avx512f,avx512dq,avx512bw,avx512vl")))
// TP_AVX512 plus the bf16 dot product (vdpbf16ps); every CPU with it has the rest (Cooper Lake, Zen 4).
#define TP_BF16_DOT __attribute__((target("avx2,fma,avx512f,avx512dq,avx512bw,avx512vl,avx512bf16")))

// The lane-wise function that elementwise kernels map over a run (lanesN::map_function).
enum class LaneFunction { exp, log, sigmoid, tanh, erf };

}  // namespace tp

#include "simd_avx2.h"
#include "simd_avx512.h"

namespace tp::lanes8 {
#define TP_LANES TP_AVX2
#include "simd_lanes.inc"
#undef TP_LANES
}  // namespace tp::lanes8

namespace tp::lanes16 {
#define TP_LANES TP_AVX512
#include "simd_lanes.inc"
#undef TP_LANES
}  // namespace tp::lanes16

// `return` the widest lanes' call (lanes16::call or lanes8::call) where the CPU runs one; falls
// through to the caller's scalar loop otherwise.
#define TP_RETURN_WIDEST_LANES(call)             \
    do {                                         \
        if (have_avx512()) return lanes16::call; \
        if (have_avx2()) return lanes8::call;    \
    } while (0)

#endif  // x86
