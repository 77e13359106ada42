// The shape of one 2-D convolution, shared by the im2col, Winograd and direct kernels.
#pragma once

#include <cstdint>

namespace tp {

// Input (n, c, h, w), weight (o, cg = c / groups, kh, kw), output (n, o, oh, ow); stride s,
// padding p and dilation d as (rows, columns).
struct ConvGeometry {
    int64_t n, c, h, w, o, cg, kh, kw, oh, ow, groups;
    int64_t s[2], p[2], d[2];
};

}  // namespace tp
