// conv2d(dtype, shape, weight_shape, out, a, weight, bias, stride, padding, dilation, groups)
//
// Forward convolution (cross-correlation) of a (N, C, H, W) input with a contiguous
// (O, C/groups, KH, KW) weight into a contiguous (N, O, OH, OW) output: per image and group,
// im2col into a (C/groups * KH * KW, OH * OW) buffer, then one OpenBLAS gemm
// out[g] = weight[g] @ columns (a 1x1 stride-1 unpadded convolution reads the input directly).
// Tasks of images (several per gemm when the output plane is small) run in parallel, each an
// im2col and a single-threaded gemm (parallel_tasks); fewer tasks than threads run one after
// another with OpenBLAS threading each gemm.
//
// The two halves of its gradient, with the same geometry and the same batching:
//   conv2d_input_backward(dtype, shape, weight_shape, grad_input, grad, weight, stride, padding, dilation, groups)
//     columns = weight[g]^T @ grad[g] (gemm), then col2im adds each column back into its input pixel;
//   conv2d_weight_backward(dtype, shape, weight_shape, grad_weight, grad, a, stride, padding, dilation, groups)
//     grad_weight[g] = sum over images of grad[g] @ im2col(a)[g]^T (computed transposed, in per-chunk partials).
// grad_input, grad_weight, grad and weight are contiguous; a may have any strides.
// conv2d also takes bfloat16 where the CPU has bf16 dot products (conv2d_bf16). One-group bf16
// and strided float32 forwards run DirectConv (conv_direct.h) on AVX-512 instead of im2col.
#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <memory>
#include <vector>

#include "bf16_gemm.h"
#include "conv_direct.h"
#include "conv_geometry.h"
#include "families.h"
#include "simd.h"

namespace tp {

namespace {

// C (m, n) = A (m, k) @ B (k, n) + beta * C, row-major, A or B transposed as asked, with the
// OpenBLAS thread count parallel_tasks chose (one inside its parallel chunks).
template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
          T beta, T* c, int64_t ldc) {
    const auto at = ta ? CblasTrans : CblasNoTrans, bt = tb ? CblasTrans : CblasNoTrans;
    if constexpr (std::is_same_v<T, float>)
        scipy_cblas_sgemm(CblasRowMajor, at, bt, (int)m, (int)n, (int)k, 1.0f, a, (int)lda, b, (int)ldb, beta, c,
                          (int)ldc);
    else
        scipy_cblas_dgemm(CblasRowMajor, at, bt, (int)m, (int)n, (int)k, 1.0, a, (int)lda, b, (int)ldb, beta, c,
                          (int)ldc);
}

// Output positions per gemm below which several images share one gemm: a gemm packs the whole
// weight once per call, which small output planes would not amortize.
constexpr int64_t kBatchColumns = 512;

// d[0, n) = s[0, n) for the short runs im2col copies (an output row: 24 floats on the CNN step's
// conv, 442k runs a call): 16-byte moves inline, where a memcpy call per run cost 15% of the conv.
template <class T> inline void copy_run(T* d, const T* s, int64_t n) {
    constexpr int64_t kLanes = 16 / sizeof(T);
    if (n < kLanes) {
        for (int64_t i = 0; i < n; ++i) d[i] = s[i];
        return;
    }
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) std::memcpy(d + i, s + i, 16);
    if (i < n) std::memcpy(d + n - kLanes, s + n - kLanes, 16);  // the last lanes, overlapping
}

// Columns of one image's channel group (rows `ld` apart): row (c, ki, kj) holds, for every output position, the
// input value that kernel tap (ki, kj) of channel c sees there (0 in the padding).
template <class T>
void im2col(const ConvGeometry& g, const T* in, const int64_t* st, T* col, int64_t ld) {
    const int64_t taps = g.kh * g.kw, rows = g.cg * taps;
    // On the calling thread: it runs inside parallel_tasks.
    {
        for (int64_t r = 0; r < rows; ++r) {
            const int64_t c = r / taps, ki = (r % taps) / g.kw, kj = r % g.kw;
            const T* src = in + c * st[1];
            T* dst = col + r * ld;
            // Output columns whose input column iw = x * s - p + kj * d lies in [0, W).
            const int64_t off = kj * g.d[1] - g.p[1];
            int64_t lo = off >= 0 ? 0 : (-off + g.s[1] - 1) / g.s[1];
            int64_t hi = g.w - off <= 0 ? 0 : (g.w - off + g.s[1] - 1) / g.s[1];
            lo = std::min(lo, g.ow);
            hi = std::max(lo, std::min(hi, g.ow));
            for (int64_t y = 0; y < g.oh; ++y) {
                T* d = dst + y * g.ow;
                const int64_t ih = y * g.s[0] - g.p[0] + ki * g.d[0];
                if (ih < 0 || ih >= g.h) {
                    std::fill(d, d + g.ow, T(0));
                    continue;
                }
                std::fill(d, d + lo, T(0));
                std::fill(d + hi, d + g.ow, T(0));
                const T* s = src + ih * st[2];
                if (g.s[1] == 1 && st[3] == 1) {
                    copy_run(d + lo, s + lo + off, hi - lo);
                } else if (g.s[1] == 2 && st[3] == 1) {
                    // A constant stride lets the compiler gather with shuffles instead of one
                    // load and store per element (stride-2 convolutions, about 30% faster).
                    const T* sp = s + lo * 2 + off;
                    for (int64_t x = 0; x < hi - lo; ++x) d[lo + x] = sp[2 * x];
                } else {
                    const int64_t step = g.s[1] * st[3];
                    const T* sp = s + (lo * g.s[1] + off) * st[3];
                    for (int64_t x = lo; x < hi; ++x, sp += step) d[x] = *sp;
                }
            }
        }
    }
}

// The adjoint of im2col: adds each column row (c, ki, kj) back into the input pixels its taps
// read, into one image's contiguous (C/groups, H, W) block `img` (padding taps are dropped).
template <class T>
void col2im(const ConvGeometry& g, const T* col, int64_t ld, T* img) {
    const int64_t taps = g.kh * g.kw, rows = g.cg * taps;
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t c = r / taps, ki = (r % taps) / g.kw, kj = r % g.kw;
        const T* src = col + r * ld;
        T* dst = img + c * g.h * g.w;
        const int64_t off = kj * g.d[1] - g.p[1];
        int64_t lo = off >= 0 ? 0 : (-off + g.s[1] - 1) / g.s[1];
        int64_t hi = g.w - off <= 0 ? 0 : (g.w - off + g.s[1] - 1) / g.s[1];
        lo = std::min(lo, g.ow);
        hi = std::max(lo, std::min(hi, g.ow));
        for (int64_t y = 0; y < g.oh; ++y) {
            const int64_t ih = y * g.s[0] - g.p[0] + ki * g.d[0];
            if (ih < 0 || ih >= g.h) continue;
            const T* s = src + y * g.ow;
            T* d = dst + ih * g.w + off;
            if (g.s[1] == 1) {
                for (int64_t x = lo; x < hi; ++x) d[x] += s[x];
            } else {
                for (int64_t x = lo; x < hi; ++x) d[x * g.s[1]] += s[x];
            }
        }
    }
}

// Images per gemm: enough to give the gemm kBatchColumns columns when the plane is small.
int64_t images_per_gemm(const ConvGeometry& g) {
    const int64_t plane = g.oh * g.ow;
    return std::max<int64_t>(1, std::min<int64_t>(g.n, kBatchColumns / std::max<int64_t>(plane, 1)));
}

// fn(chunk, first_task, end_task) over `tasks` tasks of images, in parallel. Each task is a
// single-threaded im2col/col2im and gemm on data that stays in the core's cache; threading the
// gemms inside OpenBLAS instead left the im2col and the copies on one thread while OpenBLAS's
// other thread spun (the CNN step's convolutions ran 2x slower than PyTorch's). The chunks
// depend only on the tasks and tp.get_num_threads(), never on the machine's load; at most
// `per_thread` chunks a thread (more chunks rebalance a busy core, fewer keep fewer partials).
// Fewer tasks than threads (one large image) run one after another, OpenBLAS threading each gemm.
// Returns the number of chunks (the weight gradient keeps a partial per chunk).
template <class F> int64_t parallel_tasks(int64_t tasks, F&& fn, int64_t per_thread = CHUNKS_PER_THREAD) {
    int64_t nchunks = 1;
#ifdef _OPENMP
    if (tasks >= g_num_threads) {
        serial_blas();
        nchunks = std::min<int64_t>(tasks, int64_t(g_num_threads) * per_thread);
    } else {
        sync_blas_threads();
    }
#else
    sync_blas_threads();  // no threads of our own: OpenBLAS threads each gemm
#endif
    return parallel_chunks(tasks, nchunks, fn);
}

// grad (N, O, plane) rows og..og+og of images n0..n0+nb side by side: (og, nb * plane).
template <class T>
void gather_grad(const ConvGeometry& g, const T* G, int64_t n0, int64_t nb, int64_t gi, T* buf) {
    const int64_t og = g.o / g.groups, plane = g.oh * g.ow, ld = nb * plane;
    for (int64_t j = 0; j < nb; ++j)
        for (int64_t oc = 0; oc < og; ++oc)
            std::memcpy(buf + oc * ld + j * plane, G + ((n0 + j) * g.o + gi * og + oc) * plane,
                        static_cast<size_t>(plane) * sizeof(T));
}

// An uninitialized scratch buffer (a std::vector would zero it first).
template <class T> std::unique_ptr<T[]> scratch(int64_t n) { return std::unique_ptr<T[]>(new T[std::max<int64_t>(n, 1)]); }

#ifdef TP_X86_SIMD
// ---------------------------------------------------------------------------------------------
// Winograd F(4x4, 3x3) for float32 3x3 stride-1 undilated ungrouped convolutions (Lavin and Gray,
// "Fast Algorithms for Convolutional Neural Networks", 2016; interpolation points 0, +-1, +-2, inf).
// im2col + sgemm is bound by OpenBLAS at about 90 GFLOP/s a core on the CNN step's thin shapes;
// Winograd does the same convolution with 4x fewer multiplications. Each 4x4 output tile is
//   Y = A^T [ sum_c (G g_oc G^T) . (B^T d_c B) ] A        (d_c: the 6x6 input patch of channel c),
// and the sum over channels at each of the 36 transformed positions xi is a GEMM:
//   M[xi] (O x T) = U[xi] (O x C) @ V[xi] (C x T)   over the T tiles of a task of images.
// The two gradients are the same computation's adjoints (the transforms are linear), with the
// same GEMMs transposed:
//   input:  dV[xi] = U[xi]^T @ Yh[xi], Yh = A dY A^T per tile; d_c += B dV_c B^T (tiles overlap: added);
//   weight: dU[xi] = sum over tiles Yh[xi] @ V[xi]^T, dg = G^T dU G.
// Accuracy (float32, random data, against float64, the CNN step's second layer on 16 images): max
// error 4.1e-6 of the largest output, 3.5e-6 for either gradient, against 2-6e-7 on im2col (the
// transforms scale values by up to 100 before rounding); up to 1.5e-5 in other trials. The larger
// tiles F(6x6, 3x3) would be about 10x worse again. Non-finite results (an inf or NaN input, or
// an overflow in the transformed domain, where values grow up to 100x) make the whole op rerun on
// im2col, so infs and NaNs come out where direct convolution puts them.
// The transforms run on 8 tiles at once (one AVX2 lane each); TENSORPLUG_WINOGRAD=0 turns the
// path off (exact im2col results, or to compare timings).
namespace wino {

constexpr int kM = 4, kN = 6, kXi = kN * kN;

// The one-dimensional transforms, on 8 tiles at once: x[k * s] in, o[i * os] out. The matrices:
//   B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1]
//   G   = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1]
//   A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]
// written out with their common subexpressions (a generic product over the matrices' entries,
// zeros included, made the transforms cost as much as the GEMMs).
TP_AVX2 inline __m256 k8(float c) { return _mm256_set1_ps(c); }

struct ApplyBT {  // B^T x: 6 -> 6
    static constexpr int rows = 6, cols = 6;
    TP_AVX2 static inline void apply(const __m256* x, int s, __m256* o, int os) {
        const __m256 d0 = x[0], d1 = x[s], d2 = x[2 * s], d3 = x[3 * s], d4 = x[4 * s], d5 = x[5 * s];
        const __m256 a = d4 - d2, b = d3 - d1;
        o[0] = (d4 - k8(5) * d2) + k8(4) * d0;
        o[os] = (d3 + d4) - k8(4) * (d1 + d2);
        o[2 * os] = (d4 - d3) + k8(4) * (d1 - d2);
        o[3 * os] = a + k8(2) * b;
        o[4 * os] = a - k8(2) * b;
        o[5 * os] = (d5 - k8(5) * d3) + k8(4) * d1;
    }
};
struct ApplyB {  // B x (the adjoint of B^T): 6 -> 6
    static constexpr int rows = 6, cols = 6;
    TP_AVX2 static inline void apply(const __m256* x, int s, __m256* o, int os) {
        const __m256 x0 = x[0], x1 = x[s], x2 = x[2 * s], x3 = x[3 * s], x4 = x[4 * s], x5 = x[5 * s];
        o[0] = k8(4) * x0;
        o[os] = k8(4) * (x2 - x1 + x5) + k8(2) * (x4 - x3);
        o[2 * os] = -(k8(5) * x0 + k8(4) * (x1 + x2) + (x3 + x4));
        o[3 * os] = (x1 - x2) + k8(2) * (x3 - x4) - k8(5) * x5;
        o[4 * os] = x0 + (x1 + x2) + (x3 + x4);
        o[5 * os] = x5;
    }
};
struct ApplyG {  // G g: 3 -> 6
    static constexpr int rows = 6, cols = 3;
    TP_AVX2 static inline void apply(const __m256* x, int s, __m256* o, int os) {
        const __m256 g0 = x[0], g1 = x[s], g2 = x[2 * s];
        const __m256 e = g0 + g2, f = k8(1.f / 24) * g0 + k8(1.f / 6) * g2, h = k8(1.f / 12) * g1;
        o[0] = k8(1.f / 4) * g0;
        o[os] = k8(-1.f / 6) * (e + g1);
        o[2 * os] = k8(-1.f / 6) * (e - g1);
        o[3 * os] = f + h;
        o[4 * os] = f - h;
        o[5 * os] = g2;
    }
};
struct ApplyGT {  // G^T x (the adjoint of G): 6 -> 3
    static constexpr int rows = 3, cols = 6;
    TP_AVX2 static inline void apply(const __m256* x, int s, __m256* o, int os) {
        const __m256 x0 = x[0], x1 = x[s], x2 = x[2 * s], x3 = x[3 * s], x4 = x[4 * s], x5 = x[5 * s];
        o[0] = k8(1.f / 4) * x0 - k8(1.f / 6) * (x1 + x2) + k8(1.f / 24) * (x3 + x4);
        o[os] = k8(1.f / 6) * (x2 - x1) + k8(1.f / 12) * (x3 - x4);
        o[2 * os] = k8(1.f / 6) * ((x3 + x4) - (x1 + x2)) + x5;
    }
};
struct ApplyAT {  // A^T m: 6 -> 4
    static constexpr int rows = 4, cols = 6;
    TP_AVX2 static inline void apply(const __m256* x, int s, __m256* o, int os) {
        const __m256 m0 = x[0], m1 = x[s], m2 = x[2 * s], m3 = x[3 * s], m4 = x[4 * s], m5 = x[5 * s];
        const __m256 p12 = m1 + m2, n12 = m1 - m2, p34 = m3 + m4, n34 = m3 - m4;
        o[0] = m0 + p12 + p34;
        o[os] = n12 + k8(2) * n34;
        o[2 * os] = p12 + k8(4) * p34;
        o[3 * os] = n12 + k8(8) * n34 + m5;
    }
};
struct ApplyA {  // A y (the adjoint of A^T): 4 -> 6
    static constexpr int rows = 6, cols = 4;
    TP_AVX2 static inline void apply(const __m256* x, int s, __m256* o, int os) {
        const __m256 y0 = x[0], y1 = x[s], y2 = x[2 * s], y3 = x[3 * s];
        const __m256 e = y0 + y2, f = y1 + y3, g = y0 + k8(4) * y2, h = k8(2) * y1 + k8(8) * y3;
        o[0] = y0;
        o[os] = e + f;
        o[2 * os] = e - f;
        o[3 * os] = g + h;
        o[4 * os] = g - h;
        o[5 * os] = y3;
    }
};

// out (R x R, row-major) = L in L^T for in (K x K, row-major): L on each column, then on each row.
template <class L> TP_AVX2 inline void sandwich(const __m256* in, __m256* out) {
    constexpr int R = L::rows, K = L::cols;
    __m256 tmp[R * K];
    for (int l = 0; l < K; ++l) L::apply(in + l, K, tmp + l, K);
    for (int i = 0; i < R; ++i) L::apply(tmp + i * K, 1, out + i * R, 1);
}

inline bool enabled() {
    static const bool on = [] {
        const char* env = std::getenv("TENSORPLUG_WINOGRAD");
        return !(env && env[0] == '0');
    }();
    return on;
}

// Where tile t of a task lies: its image (from the task's first), the top-left input pixel of its
// 6x6 patch (may be in the padding) and of its 4x4 output tile.
struct Tile {
    int64_t image, y, x;  // output tile origin (y, x); the input patch starts at (y - p0, x - p1)
};

struct Plan {
    int64_t th, tw, per_image, images, tiles, padded;  // tiles per row/column/image; per task
};

Plan plan(const ConvGeometry& g) {
    Plan p;
    p.th = (g.oh + kM - 1) / kM, p.tw = (g.ow + kM - 1) / kM, p.per_image = p.th * p.tw;
    // Enough tiles per task for OpenBLAS to amortize packing each GEMM's operands (about 64 columns).
    p.images = std::max<int64_t>(1, std::min<int64_t>(g.n, (64 + p.per_image - 1) / p.per_image));
    p.tiles = p.images * p.per_image;
    p.padded = (p.tiles + 7) / 8 * 8;
    return p;
}

inline Tile tile_at(const Plan& p, int64_t t) {
    const int64_t r = t % p.per_image;
    return Tile{t / p.per_image, (r / p.tw) * kM, (r % p.tw) * kM};
}

// Lane buffers: 8 tiles' values side by side, one __m256 per element.
struct alignas(32) Lanes {
    float v[kXi][8];
    TP_AVX2 __m256 load(int e) const { return _mm256_load_ps(v[e]); }
};

// Lanes <-> rows: 8 tiles' rows of 4 (or up to 8) floats and the 4 (8) vectors of one element
// from each tile, by unpacks and shuffles instead of scalar moves through a buffer (the moves
// were half of the transforms' instructions).
// q[j] lane l = row l's element j, for the rows of lanes l and l + 4 in y[l] (low and high halves).
TP_AVX2 inline void transpose4(const __m256* y, __m256* q) {
    const __m256 t0 = _mm256_unpacklo_ps(y[0], y[1]), t1 = _mm256_unpackhi_ps(y[0], y[1]);
    const __m256 t2 = _mm256_unpacklo_ps(y[2], y[3]), t3 = _mm256_unpackhi_ps(y[2], y[3]);
    q[0] = _mm256_shuffle_ps(t0, t2, 0x44), q[1] = _mm256_shuffle_ps(t0, t2, 0xEE);
    q[2] = _mm256_shuffle_ps(t1, t3, 0x44), q[3] = _mm256_shuffle_ps(t1, t3, 0xEE);
}
// Rows of 4 floats of lanes 0..7 -> 4 vectors (element j of every lane).
TP_AVX2 inline void gather4(const float* const* row, __m256* q) {
    __m256 y[4];
    for (int l = 0; l < 4; ++l)
        y[l] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(row[l])), _mm_loadu_ps(row[l + 4]), 1);
    transpose4(y, q);
}
// 4 vectors (element j of every lane) -> rows of 4 floats of lanes 0..7.
TP_AVX2 inline void scatter4(const __m256* q, float* const* row) {
    __m256 y[4];
    transpose4(q, y);  // the same shuffles take the lanes back to rows
    for (int l = 0; l < 4; ++l) {
        _mm_storeu_ps(row[l], _mm256_castps256_ps128(y[l]));
        _mm_storeu_ps(row[l + 4], _mm256_extractf128_ps(y[l], 1));
    }
}
// 8x8: r[l] (lane l's row) <-> e[j] (element j of every lane); its own inverse.
TP_AVX2 inline void transpose8(const __m256* r, __m256* e) {
    __m256 t[8], s[8];
    for (int i = 0; i < 8; i += 2) t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]), t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    for (int i = 0; i < 8; i += 4) {
        s[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44), s[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        s[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44), s[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int j = 0; j < 4; ++j) {
        e[j] = _mm256_permute2f128_ps(s[j], s[j + 4], 0x20);
        e[j + 4] = _mm256_permute2f128_ps(s[j], s[j + 4], 0x31);
    }
}
// The first 6 floats of a row (a masked load: never touches the 2 after).
TP_AVX2 inline __m256i mask6() { return _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0); }

// Every tile of a task, and whether its input patch lies inside the image (no bounds checks).
// The transforms below run channel by channel over all tiles, so that each of the 36 rows of a
// transformed buffer (the GEMMs' operands, up to 700 KB a task) is written or read in order:
// with the tiles outside and the channels inside, every store hit a new cache line.
struct TileList {
    std::vector<Tile> at;
    std::vector<char> inside;
    TileList(const ConvGeometry& g, const Plan& p, int64_t nb) : at(nb * p.per_image), inside(at.size()) {
        for (size_t t = 0; t < at.size(); ++t) {
            at[t] = tile_at(p, static_cast<int64_t>(t));
            const int64_t y0 = at[t].y - g.p[0], x0 = at[t].x - g.p[1];
            inside[t] = y0 >= 0 && x0 >= 0 && y0 + kN <= g.h && x0 + kN <= g.w;
        }
    }
    int64_t size() const { return static_cast<int64_t>(at.size()); }
    // Tiles t0..t0+7 all have their patch inside the image / their 4x4 output inside the plane.
    bool all_inside(int64_t t0) const {
        for (int l = 0; l < 8; ++l)
            if (!inside[t0 + l]) return false;
        return true;
    }
    bool all_full(int64_t t0, const ConvGeometry& g) const {
        for (int l = 0; l < 8; ++l)
            if (at[t0 + l].y + kM > g.oh || at[t0 + l].x + kM > g.ow) return false;
        return true;
    }
};

// V[xi][c][t] = B^T d B for the task's nb images starting at `in` (image stride st[0]); tiles past
// the last are zero.
TP_AVX2 void input_transform(const ConvGeometry& g, const Plan& p, const float* in, const int64_t* st, int64_t nb,
                             float* V) {
    const TileList tl(g, p, nb);
    Lanes buf;
    __m256 x[kXi], y[kXi];
    for (int64_t c = 0; c < g.c; ++c) {
        const float* src = in + c * st[1];
        for (int64_t t0 = 0; t0 < p.padded; t0 += 8) {
            const int lanes = static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(8, tl.size() - t0)));
            if (lanes == 8 && st[3] == 1 && tl.all_inside(t0)) {
                const float* row[8];
                for (int lane = 0; lane < 8; ++lane) {
                    const Tile& t = tl.at[t0 + lane];
                    row[lane] = src + t.image * st[0] + (t.y - g.p[0]) * st[2] + (t.x - g.p[1]);
                }
                for (int r = 0; r < kN; ++r) {
                    __m256 rows[8], e[8];
                    for (int lane = 0; lane < 8; ++lane) rows[lane] = _mm256_maskload_ps(row[lane] + r * st[2], mask6());
                    transpose8(rows, e);
                    for (int q = 0; q < kN; ++q) x[r * kN + q] = e[q];
                }
                sandwich<ApplyBT>(x, y);
                for (int e = 0; e < kXi; ++e) _mm256_storeu_ps(V + (e * g.c + c) * p.padded + t0, y[e]);
                continue;
            }
            for (int lane = 0; lane < lanes; ++lane) {
                const Tile& t = tl.at[t0 + lane];
                const int64_t y0 = t.y - g.p[0], x0 = t.x - g.p[1];
                const float* img = src + t.image * st[0];
                if (tl.inside[t0 + lane]) {
                    const float* patch = img + y0 * st[2] + x0 * st[3];
                    for (int r = 0; r < kN; ++r)
                        for (int q = 0; q < kN; ++q) buf.v[r * kN + q][lane] = patch[r * st[2] + q * st[3]];
                } else {
                    for (int r = 0; r < kN; ++r)
                        for (int q = 0; q < kN; ++q) {
                            const int64_t iy = y0 + r, ix = x0 + q;
                            buf.v[r * kN + q][lane] =
                                iy >= 0 && iy < g.h && ix >= 0 && ix < g.w ? img[iy * st[2] + ix * st[3]] : 0.f;
                        }
                }
            }
            for (int lane = lanes; lane < 8; ++lane)
                for (int e = 0; e < kXi; ++e) buf.v[e][lane] = 0;
            for (int e = 0; e < kXi; ++e) x[e] = buf.load(e);
            sandwich<ApplyBT>(x, y);
            for (int e = 0; e < kXi; ++e) _mm256_storeu_ps(V + (e * g.c + c) * p.padded + t0, y[e]);
        }
    }
}

// Yh[xi][o][t] = A dY A^T for the task's nb images of the contiguous grad (N, O, OH, OW) from
// `grad`; output positions past the edges and tiles past the last are zero.
TP_AVX2 void grad_transform(const ConvGeometry& g, const Plan& p, const float* grad, int64_t nb, float* Yh) {
    const TileList tl(g, p, nb);
    const int64_t plane = g.oh * g.ow;
    Lanes buf;
    __m256 x[kM * kM], y[kXi];
    for (int64_t o = 0; o < g.o; ++o) {
        for (int64_t t0 = 0; t0 < p.padded; t0 += 8) {
            const int lanes = static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(8, tl.size() - t0)));
            if (lanes == 8 && tl.all_full(t0, g)) {
                const float* row[8];
                for (int lane = 0; lane < 8; ++lane) {
                    const Tile& t = tl.at[t0 + lane];
                    row[lane] = grad + (t.image * g.o + o) * plane + t.y * g.ow + t.x;
                }
                for (int r = 0; r < kM; ++r) {
                    gather4(row, x + r * kM);
                    for (int lane = 0; lane < 8; ++lane) row[lane] += g.ow;
                }
                sandwich<ApplyA>(x, y);
                for (int e = 0; e < kXi; ++e) _mm256_storeu_ps(Yh + (e * g.o + o) * p.padded + t0, y[e]);
                continue;
            }
            for (int lane = 0; lane < lanes; ++lane) {
                const Tile& t = tl.at[t0 + lane];
                const float* src = grad + (t.image * g.o + o) * plane + t.y * g.ow + t.x;
                const int64_t rows = std::min<int64_t>(kM, g.oh - t.y), cols = std::min<int64_t>(kM, g.ow - t.x);
                if (rows == kM && cols == kM) {
                    for (int r = 0; r < kM; ++r)
                        for (int q = 0; q < kM; ++q) buf.v[r * kM + q][lane] = src[r * g.ow + q];
                } else {
                    for (int r = 0; r < kM; ++r)
                        for (int q = 0; q < kM; ++q) buf.v[r * kM + q][lane] = r < rows && q < cols ? src[r * g.ow + q] : 0.f;
                }
            }
            for (int lane = lanes; lane < 8; ++lane)
                for (int e = 0; e < kM * kM; ++e) buf.v[e][lane] = 0;
            for (int e = 0; e < kM * kM; ++e) x[e] = buf.load(e);
            sandwich<ApplyA>(x, y);
            for (int e = 0; e < kXi; ++e) _mm256_storeu_ps(Yh + (e * g.o + o) * p.padded + t0, y[e]);
        }
    }
}

// Non-finite lanes of v show as NaN in the running `acc` (inf * 0 and NaN * 0 are NaN).
TP_AVX2 inline __m256 track(__m256 acc, __m256 v) { return _mm256_add_ps(acc, _mm256_mul_ps(v, _mm256_setzero_ps())); }
TP_AVX2 inline bool finite(__m256 acc) { return _mm256_movemask_ps(_mm256_cmp_ps(acc, acc, _CMP_UNORD_Q)) == 0; }

// out (nb images, contiguous (N, O, OH, OW) from `out`) = A^T M A + bias, cropped at the edges.
// Returns false when a result is not finite.
TP_AVX2 bool output_transform(const ConvGeometry& g, const Plan& p, const float* M, int64_t nb, const float* bias,
                              int64_t bs, float* out) {
    const TileList tl(g, p, nb);
    const int64_t plane = g.oh * g.ow;
    Lanes buf;
    __m256 x[kXi], y[kM * kM], acc = _mm256_setzero_ps();
    for (int64_t o = 0; o < g.o; ++o) {
        const __m256 b = _mm256_set1_ps(bias ? bias[o * bs] : 0.f);
        for (int64_t t0 = 0; t0 < tl.size(); t0 += 8) {
            for (int e = 0; e < kXi; ++e) x[e] = _mm256_loadu_ps(M + (e * g.o + o) * p.padded + t0);
            sandwich<ApplyAT>(x, y);
            for (int e = 0; e < kM * kM; ++e) {
                if (bias) y[e] = _mm256_add_ps(y[e], b);
                acc = track(acc, y[e]);
            }
            if (t0 + 8 <= tl.size() && tl.all_full(t0, g)) {
                float* row[8];
                for (int lane = 0; lane < 8; ++lane) {
                    const Tile& t = tl.at[t0 + lane];
                    row[lane] = out + (t.image * g.o + o) * plane + t.y * g.ow + t.x;
                }
                for (int r = 0; r < kM; ++r) {
                    scatter4(y + r * kM, row);
                    for (int lane = 0; lane < 8; ++lane) row[lane] += g.ow;
                }
                continue;
            }
            for (int e = 0; e < kM * kM; ++e) _mm256_store_ps(buf.v[e], y[e]);
            for (int lane = 0; lane < 8 && t0 + lane < tl.size(); ++lane) {
                const Tile& t = tl.at[t0 + lane];
                float* dst = out + (t.image * g.o + o) * plane + t.y * g.ow + t.x;
                const int64_t rows = std::min<int64_t>(kM, g.oh - t.y), cols = std::min<int64_t>(kM, g.ow - t.x);
                for (int64_t r = 0; r < rows; ++r)
                    for (int64_t q = 0; q < cols; ++q) dst[r * g.ow + q] = buf.v[r * kM + q][lane];
            }
        }
    }
    return finite(acc);
}

// grad_input (nb images, contiguous (N, C, H, W) from `gi`, zeroed here) += B dV B^T of each tile,
// at its 6x6 patch, dropping the padding. Returns false when a result is not finite.
TP_AVX2 bool input_adjoint(const ConvGeometry& g, const Plan& p, const float* dV, int64_t nb, float* gi) {
    const TileList tl(g, p, nb);
    const int64_t image = g.c * g.h * g.w;
    std::fill(gi, gi + nb * image, 0.f);
    Lanes buf;
    __m256 x[kXi], y[kXi], acc = _mm256_setzero_ps();
    for (int64_t c = 0; c < g.c; ++c) {
        for (int64_t t0 = 0; t0 < tl.size(); t0 += 8) {
            for (int e = 0; e < kXi; ++e) x[e] = _mm256_loadu_ps(dV + (e * g.c + c) * p.padded + t0);
            sandwich<ApplyB>(x, y);
            for (int e = 0; e < kXi; ++e) acc = track(acc, y[e]);
            if (t0 + 8 <= tl.size() && tl.all_inside(t0)) {
                // Each lane's 6 rows of 6, added lane by lane (neighbouring tiles overlap).
                __m256 rows[kN][8];
                for (int r = 0; r < kN; ++r) {
                    __m256 e[8];
                    for (int q = 0; q < kN; ++q) e[q] = y[r * kN + q];
                    e[6] = e[7] = _mm256_setzero_ps();
                    transpose8(e, rows[r]);
                }
                for (int lane = 0; lane < 8; ++lane) {
                    const Tile& t = tl.at[t0 + lane];
                    float* dst = gi + t.image * image + c * g.h * g.w + (t.y - g.p[0]) * g.w + (t.x - g.p[1]);
                    for (int r = 0; r < kN; ++r, dst += g.w)
                        _mm256_maskstore_ps(dst, mask6(), _mm256_add_ps(_mm256_maskload_ps(dst, mask6()), rows[r][lane]));
                }
                continue;
            }
            for (int e = 0; e < kXi; ++e) _mm256_store_ps(buf.v[e], y[e]);
            for (int lane = 0; lane < 8 && t0 + lane < tl.size(); ++lane) {
                const Tile& t = tl.at[t0 + lane];
                const int64_t y0 = t.y - g.p[0], x0 = t.x - g.p[1];
                float* dst = gi + t.image * image + c * g.h * g.w;
                const int64_t r0 = std::max<int64_t>(0, -y0), r1 = std::min<int64_t>(kN, g.h - y0);
                const int64_t q0 = std::max<int64_t>(0, -x0), q1 = std::min<int64_t>(kN, g.w - x0);
                for (int64_t r = r0; r < r1; ++r)
                    for (int64_t q = q0; q < q1; ++q) dst[(y0 + r) * g.w + x0 + q] += buf.v[r * kN + q][lane];
            }
        }
    }
    return finite(acc);
}

// U[xi][o][c] = G g_oc G^T for the contiguous (O, C, 3, 3) weight.
TP_AVX2 void weight_transform(const ConvGeometry& g, const float* W, float* U) {
    const int64_t pairs = g.o * g.c;
    Lanes buf;
    __m256 x[9], y[kXi];
    for (int64_t p0 = 0; p0 < pairs; p0 += 8) {
        for (int lane = 0; lane < 8; ++lane)
            for (int e = 0; e < 9; ++e) buf.v[e][lane] = p0 + lane < pairs ? W[(p0 + lane) * 9 + e] : 0.f;
        for (int e = 0; e < 9; ++e) x[e] = buf.load(e);
        sandwich<ApplyG>(x, y);
        for (int e = 0; e < kXi; ++e) {
            _mm256_store_ps(buf.v[e], y[e]);
            for (int lane = 0; lane < 8 && p0 + lane < pairs; ++lane) U[e * pairs + p0 + lane] = buf.v[e][lane];
        }
    }
}

// grad_weight (O, C, 3, 3) = G^T dU G of dU[xi][o][c]. Returns false when a result is not finite.
TP_AVX2 bool weight_adjoint(const ConvGeometry& g, const float* dU, float* out) {
    const int64_t pairs = g.o * g.c;
    Lanes buf;
    __m256 x[kXi], y[9], acc = _mm256_setzero_ps();
    for (int64_t p0 = 0; p0 < pairs; p0 += 8) {
        for (int e = 0; e < kXi; ++e) {
            for (int lane = 0; lane < 8; ++lane) buf.v[e][lane] = p0 + lane < pairs ? dU[e * pairs + p0 + lane] : 0.f;
            x[e] = buf.load(e);
        }
        sandwich<ApplyGT>(x, y);
        for (int e = 0; e < 9; ++e) {
            acc = track(acc, y[e]);
            _mm256_store_ps(buf.v[e], y[e]);
        }
        for (int lane = 0; lane < 8 && p0 + lane < pairs; ++lane)
            for (int e = 0; e < 9; ++e) out[(p0 + lane) * 9 + e] = buf.v[e][lane];
    }
    return finite(acc);
}

}  // namespace wino

// Whether a convolution takes the Winograd path: float32 on an AVX2 CPU, 3x3, stride 1, no
// dilation, one group, and enough channels on both sides for the transforms to pay (the CNN
// step's first layer, 1 input channel, stays on im2col; see docs/performance.md).
template <class T> bool use_winograd(const ConvGeometry& g) {
    if constexpr (!std::is_same_v<T, float>) return false;
    return wino::enabled() && have_avx2() && g.kh == 3 && g.kw == 3 && g.s[0] == 1 && g.s[1] == 1 && g.d[0] == 1 &&
           g.d[1] == 1 && g.groups == 1 && g.c >= 4 && g.o >= 4 && g.oh >= 1 && g.ow >= 1;
}

// Whether the weight holds an exact zero (a PixelCNN or causal mask, a pruned kernel). Such a
// weight stays on im2col, where a zero tap leaves its input out of every sum as PyTorch's
// convolutions do; Winograd's transforms mix every tap into every transformed value, so ~1e-7 of
// a masked input's value reached the output and the input gradient, and an autoregressive
// model's check that no output depends on a later input failed (found by tests/programs/pixelcnn.py).
bool has_exact_zero(const ConvGeometry& g, const float* W) {
    const float* end = W + g.o * g.c * 9;
    return std::find(W, end, 0.f) != end;
}

// The U transform of the weight, shared by every task.
std::unique_ptr<float[]> winograd_weight(const ConvGeometry& g, const float* W) {
    auto U = scratch<float>(wino::kXi * g.o * g.c);
    wino::weight_transform(g, W, U.get());
    return U;
}

// Forward on the Winograd path; false (and out partly written) when a result is not finite, and
// false at once for a weight with an exact zero.
bool conv2d_winograd(const ConvGeometry& g, float* out, const float* A, const int64_t* st, const float* W,
                     const float* bias, int64_t bs) {
    if (has_exact_zero(g, W)) return false;
    const wino::Plan p = wino::plan(g);
    const auto U = winograd_weight(g, W);
    std::atomic<bool> ok{true};
    parallel_tasks((g.n + p.images - 1) / p.images, [&](int64_t, int64_t t0, int64_t t1) {
        auto V = scratch<float>(wino::kXi * g.c * p.padded);
        auto M = scratch<float>(wino::kXi * g.o * p.padded);
        for (int64_t n0 = t0 * p.images; n0 < std::min(g.n, t1 * p.images); n0 += p.images) {
            const int64_t nb = std::min(p.images, g.n - n0);
            wino::input_transform(g, p, A + n0 * st[0], st, nb, V.get());
            for (int xi = 0; xi < wino::kXi; ++xi)
                gemm<float>(false, false, g.o, p.padded, g.c, U.get() + xi * g.o * g.c, g.c,
                            V.get() + xi * g.c * p.padded, p.padded, 0.f, M.get() + xi * g.o * p.padded, p.padded);
            if (!wino::output_transform(g, p, M.get(), nb, bias, bs, out + n0 * g.o * g.oh * g.ow)) ok = false;
        }
    });
    return ok;
}

// Input gradient on the Winograd path (contiguous grad); false when a result is not finite, and
// false at once for a weight with an exact zero.
bool conv2d_input_backward_winograd(const ConvGeometry& g, float* out, const float* G, const float* W) {
    if (has_exact_zero(g, W)) return false;
    const wino::Plan p = wino::plan(g);
    const auto U = winograd_weight(g, W);
    std::atomic<bool> ok{true};
    parallel_tasks((g.n + p.images - 1) / p.images, [&](int64_t, int64_t t0, int64_t t1) {
        auto Yh = scratch<float>(wino::kXi * g.o * p.padded);
        auto dV = scratch<float>(wino::kXi * g.c * p.padded);
        for (int64_t n0 = t0 * p.images; n0 < std::min(g.n, t1 * p.images); n0 += p.images) {
            const int64_t nb = std::min(p.images, g.n - n0);
            wino::grad_transform(g, p, G + n0 * g.o * g.oh * g.ow, nb, Yh.get());
            // dV[xi] (C, tiles) = U[xi]^T (C, O) @ Yh[xi] (O, tiles)
            for (int xi = 0; xi < wino::kXi; ++xi)
                gemm<float>(true, false, g.c, p.padded, g.o, U.get() + xi * g.o * g.c, g.c,
                            Yh.get() + xi * g.o * p.padded, p.padded, 0.f, dV.get() + xi * g.c * p.padded, p.padded);
            if (!wino::input_adjoint(g, p, dV.get(), nb, out + n0 * g.c * g.h * g.w)) ok = false;
        }
    });
    return ok;
}

// Weight gradient on the Winograd path: each chunk of tasks sums dU over its tiles into its own
// partial, the partials are added in chunk order (as on im2col, the result depends on the thread
// setting, never on the load). False when a result is not finite.
bool conv2d_weight_backward_winograd(const ConvGeometry& g, float* out, const float* G, const float* A,
                                     const int64_t* st) {
    const wino::Plan p = wino::plan(g);
    const int64_t tasks = (g.n + p.images - 1) / p.images, size = wino::kXi * g.o * g.c;
    const int64_t per_thread = size * int64_t(sizeof(float)) > (int64_t(1) << 20) ? 1 : CHUNKS_PER_THREAD;
    const int64_t most = std::min<int64_t>(tasks, int64_t(g_num_threads) * per_thread);
    std::vector<std::unique_ptr<float[]>> partials(static_cast<size_t>(std::max<int64_t>(most, 1)));
    const int64_t nchunks = parallel_tasks(tasks, [&](int64_t chunk, int64_t t0, int64_t t1) {
        partials[chunk] = scratch<float>(size);
        float* acc = partials[chunk].get();
        auto V = scratch<float>(wino::kXi * g.c * p.padded);
        auto Yh = scratch<float>(wino::kXi * g.o * p.padded);
        for (int64_t n0 = t0 * p.images; n0 < std::min(g.n, t1 * p.images); n0 += p.images) {
            const int64_t nb = std::min(p.images, g.n - n0);
            wino::input_transform(g, p, A + n0 * st[0], st, nb, V.get());
            wino::grad_transform(g, p, G + n0 * g.o * g.oh * g.ow, nb, Yh.get());
            // dU[xi] (O, C) (+)= Yh[xi] (O, tiles) @ V[xi]^T (tiles, C)
            for (int xi = 0; xi < wino::kXi; ++xi)
                gemm<float>(false, true, g.o, g.c, p.padded, Yh.get() + xi * g.o * p.padded, p.padded,
                            V.get() + xi * g.c * p.padded, p.padded, n0 == t0 * p.images ? 0.f : 1.f,
                            acc + xi * g.o * g.c, g.c);
        }
    }, per_thread);
    float* total = partials[0].get();
    for (int64_t c = 1; c < nchunks; ++c) {
        const float* part = partials[c].get();
        for (int64_t i = 0; i < size; ++i) total[i] += part[i];
    }
    return wino::weight_adjoint(g, total, out);
}

#endif  // TP_X86_SIMD
#ifndef TP_X86_SIMD
template <class T> bool use_winograd(const ConvGeometry&) { return false; }
#endif

template <class T> void conv2d_input_backward_T(const ConvGeometry& g, Operand& out, Operand& grad, Operand& weight) {
    const T* G = reinterpret_cast<const T*>(grad.data);
    const T* Wt = reinterpret_cast<const T*>(weight.data);
    T* O = reinterpret_cast<T*>(out.data);
    const int64_t og = g.o / g.groups, k = g.cg * g.kh * g.kw, plane = g.oh * g.ow, image = g.c * g.h * g.w;
    if (k == 0 || og == 0) {
        std::fill(O, O + g.n * image, T(0));
        return;
    }
#ifdef TP_X86_SIMD
    if constexpr (std::is_same_v<T, float>)
        if (use_winograd<T>(g) && conv2d_input_backward_winograd(g, O, G, Wt)) return;
#endif
    const int64_t batch = images_per_gemm(g);
    parallel_tasks((g.n + batch - 1) / batch, [&](int64_t, int64_t t0, int64_t t1) {
        auto col = scratch<T>(k * plane * batch);
        auto buf = scratch<T>(batch > 1 ? og * plane * batch : 0);
        for (int64_t n0 = t0 * batch; n0 < std::min(g.n, t1 * batch); n0 += batch) {
            const int64_t nb = std::min(batch, g.n - n0), ld = nb * plane;
            std::fill(O + n0 * image, O + (n0 + nb) * image, T(0));
            for (int64_t gi = 0; gi < g.groups; ++gi) {
                const T* B = G + (n0 * g.o + gi * og) * plane;
                if (nb > 1) {
                    gather_grad<T>(g, G, n0, nb, gi, buf.get());
                    B = buf.get();
                }
                // columns (k, nb * plane) = weight[g]^T (k, og) @ grad[g] (og, nb * plane)
                gemm<T>(true, false, k, ld, og, Wt + gi * og * k, k, B, ld, T(0), col.get(), ld);
                for (int64_t j = 0; j < nb; ++j)
                    col2im<T>(g, col.get() + j * plane, ld, O + (n0 + j) * image + gi * g.cg * g.h * g.w);
            }
        }
    });
}

template <class T>
void conv2d_weight_backward_T(const ConvGeometry& g, Operand& out, Operand& grad, Operand& a) {
    const T* G = reinterpret_cast<const T*>(grad.data);
    const T* A = reinterpret_cast<const T*>(a.data);
    T* O = reinterpret_cast<T*>(out.data);
    const int64_t* st = a.strides;
    const int64_t og = g.o / g.groups, k = g.cg * g.kh * g.kw, plane = g.oh * g.ow, size = g.o * k;
    if (g.n == 0 || plane == 0) {
        std::fill(O, O + size, T(0));
        return;
    }
#ifdef TP_X86_SIMD
    if constexpr (std::is_same_v<T, float>)
        if (use_winograd<T>(g) && conv2d_weight_backward_winograd(g, O, G, A, st)) return;
#endif
    const int64_t batch = images_per_gemm(g), tasks = (g.n + batch - 1) / batch;
    // Each chunk of tasks sums its images' gradients into its own partial, transposed: (k, og)
    // per group, from columns (k, plane) @ grad^T (plane, og), which OpenBLAS runs at 84 GFLOP/s
    // a core against 65 for grad @ columns^T on the CNN step's shapes. The partials are added in
    // chunk order, so the sum does not depend on the machine's load. A large weight gets one
    // chunk a thread: each chunk holds a partial of the weight's size.
    const int64_t per_thread = size * int64_t(sizeof(T)) > (int64_t(1) << 20) ? 1 : CHUNKS_PER_THREAD;
    const int64_t most = std::min<int64_t>(tasks, int64_t(g_num_threads) * per_thread);
    std::vector<std::unique_ptr<T[]>> partials(static_cast<size_t>(std::max<int64_t>(most, 1)));
    const int64_t nchunks = parallel_tasks(tasks, [&](int64_t chunk, int64_t t0, int64_t t1) {
        partials[chunk] = scratch<T>(size);
        T* acc = partials[chunk].get();
        auto col = scratch<T>(k * plane * batch);
        auto buf = scratch<T>(batch > 1 ? og * plane * batch : 0);
        for (int64_t n0 = t0 * batch; n0 < std::min(g.n, t1 * batch); n0 += batch) {
            const int64_t nb = std::min(batch, g.n - n0), ld = nb * plane;
            for (int64_t gi = 0; gi < g.groups; ++gi) {
                for (int64_t j = 0; j < nb; ++j)
                    im2col<T>(g, A + (n0 + j) * st[0] + gi * g.cg * st[1], st, col.get() + j * plane, ld);
                const T* B = G + (n0 * g.o + gi * og) * plane;
                if (nb > 1) {
                    gather_grad<T>(g, G, n0, nb, gi, buf.get());
                    B = buf.get();
                }
                // partial[g] (k, og) (+)= columns (k, nb * plane) @ grad[g]^T (nb * plane, og)
                gemm<T>(false, true, k, og, ld, col.get(), ld, B, ld, n0 == t0 * batch ? T(0) : T(1),
                        acc + gi * k * og, og);
            }
        }
    }, per_thread);
    parallel_range(size, PARALLEL_THRESHOLD, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {  // i = (gi * og + oc) * k + kk
            const int64_t gi = i / (og * k), oc = (i / k) % og, kk = i % k;
            const int64_t at = (gi * k + kk) * og + oc;
            T sum = partials[0][at];
            for (int64_t c = 1; c < nchunks; ++c) sum += partials[c][at];
            O[i] = sum;
        }
    });
}

// Forward on DirectConv (conv_direct.h): the weight packed once, tasks of images in parallel.
template <class B> void conv2d_direct(const ConvGeometry& g, bool bf16, Operand& out, Operand& a, Operand& weight,
                                      const Operand* bias) {
    std::vector<float> b;
    if (bias)
        for (int64_t oc = 0; oc < g.o; ++oc) b.push_back(static_cast<float>(reinterpret_cast<const B*>(bias->data)[oc * bias->strides[0]]));
    const DirectConv conv(g, bf16, weight.data, bias ? b.data() : nullptr);
    parallel_tasks(g.n, [&](int64_t, int64_t t0, int64_t t1) { conv.run(a.data, a.strides, t0, t1, out.data); });
}

template <class T> void conv2d_T(const ConvGeometry& g, Operand& out, Operand& a, Operand& weight, const Operand* bias) {
    const T* A = reinterpret_cast<const T*>(a.data);
    const T* Wt = reinterpret_cast<const T*>(weight.data);
    T* O = reinterpret_cast<T*>(out.data);
    const int64_t* st = a.strides;
    const int64_t og = g.o / g.groups, k = g.cg * g.kh * g.kw, plane = g.oh * g.ow;
    // A 1x1, stride-1, unpadded convolution's columns are the input's own rows, when each
    // channel's plane is one contiguous run.
    const bool direct = g.kh == 1 && g.kw == 1 && g.s[0] == 1 && g.s[1] == 1 && g.p[0] == 0 && g.p[1] == 0 &&
                        (g.w == 1 || st[3] == 1) && (g.h == 1 || st[2] == g.w) &&
                        (g.cg == 1 || st[1] >= plane) && (g.cg == 1 ? plane : st[1]) <= INT_MAX;
    const T* B = bias ? reinterpret_cast<const T*>(bias->data) : nullptr;
    const int64_t bs = bias ? bias->strides[0] : 0;
    if (k == 0) {  // no input channels: the output is the bias (or zero)
        for (int64_t i = 0; i < g.n * g.o; ++i)
            std::fill(O + i * plane, O + (i + 1) * plane, B ? B[(i % g.o) * bs] : T(0));
        return;
    }
#ifdef TP_X86_SIMD
    if constexpr (std::is_same_v<T, float>)
        if (use_winograd<T>(g) && conv2d_winograd(g, O, A, st, Wt, B, bs)) return;
#endif
    // Strided float32 convolutions: im2col's copy and sgemm's packing cost about as much as the
    // arithmetic (docs/performance.md); stride 1 has Winograd or im2col.
    if (std::is_same_v<T, float> && (g.s[0] > 1 || g.s[1] > 1) && direct_conv_applies(g, false))
        return conv2d_direct<T>(g, false, out, a, weight, bias);
    // Small output planes make thin gemms: several images then share one gemm (columns side by
    // side, K x (batch * plane)) whose result is copied into place.
    const int64_t batch = direct ? 1 : images_per_gemm(g);
    parallel_tasks((g.n + batch - 1) / batch, [&](int64_t, int64_t t0, int64_t t1) {
        auto col = scratch<T>(direct ? 0 : k * plane * batch);
        auto tmp = scratch<T>(batch > 1 ? og * plane * batch : 0);
        for (int64_t n0 = t0 * batch; n0 < std::min(g.n, t1 * batch); n0 += batch) {
            const int64_t nb = std::min(batch, g.n - n0);
            if (B && nb == 1) {
                T* oimg = O + n0 * g.o * plane;
                for (int64_t oc = 0; oc < g.o; ++oc) std::fill(oimg + oc * plane, oimg + (oc + 1) * plane, B[oc * bs]);
            }
            for (int64_t gi = 0; gi < g.groups; ++gi) {
                const T* Wg = Wt + gi * og * k;
                if (nb == 1) {
                    const T* in = A + n0 * st[0] + gi * g.cg * st[1];
                    const T* cols = col.get();
                    int64_t ldb = plane;
                    if (direct) {
                        cols = in;
                        if (g.cg > 1) ldb = st[1];
                    } else {
                        im2col<T>(g, in, st, col.get(), plane);
                    }
                    gemm<T>(false, false, og, plane, k, Wg, k, cols, ldb, B ? T(1) : T(0),
                            O + (n0 * g.o + gi * og) * plane, plane);
                    continue;
                }
                const int64_t ld = nb * plane;
                for (int64_t j = 0; j < nb; ++j)
                    im2col<T>(g, A + (n0 + j) * st[0] + gi * g.cg * st[1], st, col.get() + j * plane, ld);
                gemm<T>(false, false, og, ld, k, Wg, k, col.get(), ld, T(0), tmp.get(), ld);
                for (int64_t j = 0; j < nb; ++j)
                    for (int64_t oc = 0; oc < og; ++oc) {
                        const T* src = tmp.get() + oc * ld + j * plane;
                        T* dst = O + ((n0 + j) * g.o + gi * og + oc) * plane;
                        const T add = B ? B[(gi * og + oc) * bs] : T(0);
                        for (int64_t p = 0; p < plane; ++p) dst[p] = src[p] + add;
                    }
            }
        }
    });
}

// bfloat16 (autocast's convolutions) where the CPU has bf16 dot products: DirectConv for one
// group; otherwise, per task of images, im2col of the bf16 input and bf16_gemm (float32 sums), the bias added in float32 and each
// result rounded once, as the float32 kernels on widened copies did, without the copies and at
// about twice sgemm's arithmetic speed.
void conv2d_bf16(const ConvGeometry& g, Operand& out, Operand& a, Operand& weight, const Operand* bias) {
    const uint16_t* A = reinterpret_cast<const uint16_t*>(a.data);
    const uint16_t* Wt = reinterpret_cast<const uint16_t*>(weight.data);
    const bf16_t* B = bias ? reinterpret_cast<const bf16_t*>(bias->data) : nullptr;
    bf16_t* O = reinterpret_cast<bf16_t*>(out.data);
    const int64_t* st = a.strides;
    const int64_t og = g.o / g.groups, k = g.cg * g.kh * g.kw, plane = g.oh * g.ow, batch = images_per_gemm(g);
    const int64_t bs = bias ? bias->strides[0] : 0;
    if (direct_conv_applies(g, true)) return conv2d_direct<bf16_t>(g, true, out, a, weight, bias);
    parallel_tasks((g.n + batch - 1) / batch, [&](int64_t, int64_t t0, int64_t t1) {
        auto col = scratch<uint16_t>(k * plane * batch);
        auto acc = scratch<float>(og * plane * batch);
        for (int64_t n0 = t0 * batch; n0 < std::min(g.n, t1 * batch); n0 += batch) {
            const int64_t nb = std::min(batch, g.n - n0), ld = nb * plane;
            for (int64_t gi = 0; gi < g.groups; ++gi) {
                for (int64_t j = 0; j < nb; ++j)
                    im2col<uint16_t>(g, A + (n0 + j) * st[0] + gi * g.cg * st[1], st, col.get() + j * plane, ld);
                // acc (og, nb * plane) = weight[g] (og, k) @ columns (k, nb * plane)
                bf16_gemm(og, ld, k, Wt + gi * og * k, k, 1, col.get(), ld, 1, acc.get(), ld, false);
                for (int64_t j = 0; j < nb; ++j)
                    for (int64_t oc = 0; oc < og; ++oc) {
                        const float* src = acc.get() + oc * ld + j * plane;
                        bf16_t* dst = O + ((n0 + j) * g.o + gi * og + oc) * plane;
                        if (B) {
                            const float add = B[(gi * og + oc) * bs];
                            for (int64_t p = 0; p < plane; ++p) dst[p] = bf16_t::from_float(src[p] + add);
                        } else {
                            for (int64_t p = 0; p < plane; ++p) dst[p] = bf16_t::from_float(src[p]);
                        }
                    }
            }
        }
    });
}

bool is_contiguous(int ndim, const int64_t* shape, const int64_t* strides) {
    // A tensor without elements is contiguous whatever its strides say (as in PyTorch).
    if (numel_of(ndim, shape) == 0) return true;
    int64_t expected = 1;
    for (int d = ndim - 1; d >= 0; --d) {
        if (shape[d] != 1 && strides[d] != expected) return false;
        expected *= shape[d];
    }
    return true;
}

void parse_pair(PyObject* o, int64_t* v, int64_t minimum, const char* what) {
    int64_t tmp[MAX_DIMS];
    if (parse_shape(o, tmp, "conv2d", what) != 2) value_error(std::string("conv2d: ") + what + " must have 2 values");
    for (int i = 0; i < 2; ++i) {
        if (tmp[i] < minimum) value_error(std::string("conv2d: ") + what + " must be >= " + std::to_string(minimum));
        v[i] = tmp[i];
    }
}

// The geometry of a call: args[1] the input shape (N, C, H, W), args[2] the weight shape
// (O, C/groups, KH, KW), args[at..at+3] stride, padding, dilation and groups; checked so that
// every size the kernels derive is consistent and fits BLAS.
ConvGeometry parse_geometry(PyObject* const* args, int at, const char* fname) {
    int64_t shape[MAX_DIMS], wshape[MAX_DIMS];
    const std::string name(fname);
    if (parse_shape(args[1], shape, fname) != 4) value_error(name + ": shape must be (N, C, H, W)");
    if (parse_shape(args[2], wshape, fname, "weight_shape") != 4)
        value_error(name + ": weight_shape must be (O, C/groups, KH, KW)");
    ConvGeometry g;
    g.n = shape[0], g.c = shape[1], g.h = shape[2], g.w = shape[3];
    g.o = wshape[0], g.cg = wshape[1], g.kh = wshape[2], g.kw = wshape[3];
    parse_pair(args[at], g.s, 1, "stride");
    parse_pair(args[at + 1], g.p, 0, "padding");
    parse_pair(args[at + 2], g.d, 1, "dilation");
    g.groups = arg_int(args[at + 3], fname, "groups");
    if (g.groups < 1 || g.o % g.groups || g.cg * g.groups != g.c || g.kh < 1 || g.kw < 1)
        value_error(name + ": channels, groups and weight shape do not match");
    const int64_t eh = g.d[0] * (g.kh - 1) + 1, ew = g.d[1] * (g.kw - 1) + 1;
    if (eh > g.h + 2 * g.p[0] || ew > g.w + 2 * g.p[1]) value_error(name + ": the kernel is larger than the padded input");
    g.oh = (g.h + 2 * g.p[0] - eh) / g.s[0] + 1;
    g.ow = (g.w + 2 * g.p[1] - ew) / g.s[1] + 1;
    const int64_t k = g.cg * g.kh * g.kw, plane = g.oh * g.ow;
    if (k > INT_MAX || plane > INT_MAX || g.o > INT_MAX || k * plane > (int64_t(1) << 40))
        value_error(name + ": sizes are too large for BLAS");
    return g;
}

// A contiguous operand of `shape`.
void parse_contiguous(PyObject* o, int dtype, const int64_t* shape, Operand& op, const char* fname, const char* what,
                      bool writable) {
    parse_operand(o, dtype, 4, shape, op, fname, what, false, writable);
    if (!is_contiguous(4, shape, op.strides)) value_error(std::string(fname) + ": " + what + " must be contiguous");
}

PyObject* py_conv2d(PyObject* const* args, Py_ssize_t nargs) {
    // conv2d(dtype, shape, weight_shape, out, a, weight, bias, stride, padding, dilation, groups)
    const char* fname = "conv2d";
    check_nargs(nargs, 11, fname);
    const int dtype = arg_dtype(args[0], fname) == kBFloat16 && have_bf16_dot() ? kBFloat16 : float_dtype(args[0], fname);
    const ConvGeometry g = parse_geometry(args, 7, fname);
    int64_t shape[4] = {g.n, g.c, g.h, g.w}, wshape[4] = {g.o, g.cg, g.kh, g.kw}, oshape[4] = {g.n, g.o, g.oh, g.ow};
    Operand out, a, weight, bias;
    parse_contiguous(args[3], dtype, oshape, out, fname, "out", true);
    parse_operand(args[4], dtype, 4, shape, a, fname, "a", false, false);
    parse_contiguous(args[5], dtype, wshape, weight, fname, "weight", false);
    const Operand* bp = nullptr;
    if (args[6] != Py_None) {
        parse_operand(args[6], dtype, 1, wshape, bias, fname, "bias", false, false);
        bp = &bias;
    }
    if (numel_of(4, oshape) == 0) return none();
    ReleaseGil nogil(true);
    if (dtype == kBFloat16) conv2d_bf16(g, out, a, weight, bp);
    else if (dtype == kFloat32) conv2d_T<float>(g, out, a, weight, bp);
    else conv2d_T<double>(g, out, a, weight, bp);
    return none();
}

PyObject* py_conv2d_input_backward(PyObject* const* args, Py_ssize_t nargs) {
    // conv2d_input_backward(dtype, shape, weight_shape, grad_input, grad, weight, stride, padding, dilation, groups)
    const char* fname = "conv2d_input_backward";
    check_nargs(nargs, 10, fname);
    int dtype = float_dtype(args[0], fname);
    const ConvGeometry g = parse_geometry(args, 6, fname);
    int64_t shape[4] = {g.n, g.c, g.h, g.w}, wshape[4] = {g.o, g.cg, g.kh, g.kw}, oshape[4] = {g.n, g.o, g.oh, g.ow};
    Operand out, grad, weight;
    parse_contiguous(args[3], dtype, shape, out, fname, "grad_input", true);
    parse_contiguous(args[4], dtype, oshape, grad, fname, "grad", false);
    parse_contiguous(args[5], dtype, wshape, weight, fname, "weight", false);
    if (numel_of(4, shape) == 0) return none();
    ReleaseGil nogil(true);
    if (dtype == kFloat32) conv2d_input_backward_T<float>(g, out, grad, weight);
    else conv2d_input_backward_T<double>(g, out, grad, weight);
    return none();
}

PyObject* py_conv2d_weight_backward(PyObject* const* args, Py_ssize_t nargs) {
    // conv2d_weight_backward(dtype, shape, weight_shape, grad_weight, grad, a, stride, padding, dilation, groups)
    const char* fname = "conv2d_weight_backward";
    check_nargs(nargs, 10, fname);
    int dtype = float_dtype(args[0], fname);
    const ConvGeometry g = parse_geometry(args, 6, fname);
    int64_t shape[4] = {g.n, g.c, g.h, g.w}, wshape[4] = {g.o, g.cg, g.kh, g.kw}, oshape[4] = {g.n, g.o, g.oh, g.ow};
    Operand out, grad, a;
    parse_contiguous(args[3], dtype, wshape, out, fname, "grad_weight", true);
    parse_contiguous(args[4], dtype, oshape, grad, fname, "grad", false);
    parse_operand(args[5], dtype, 4, shape, a, fname, "a", false, false);
    if (numel_of(4, wshape) == 0) return none();
    ReleaseGil nogil(true);
    if (dtype == kFloat32) conv2d_weight_backward_T<float>(g, out, grad, a);
    else conv2d_weight_backward_T<double>(g, out, grad, a);
    return none();
}

}  // namespace

void register_conv(std::vector<PyMethodDef>& methods) {
    methods.push_back(fast_method<py_conv2d>(
        "conv2d", "conv2d(dtype, shape, weight_shape, out, a, weight, bias, stride, padding, dilation, groups): "
                  "out (N, O, OH, OW) and weight contiguous; bias may be None."));
    methods.push_back(fast_method<py_conv2d_input_backward>(
        "conv2d_input_backward",
        "conv2d_input_backward(dtype, shape, weight_shape, grad_input, grad, weight, stride, padding, dilation, "
        "groups): grad_input (N, C, H, W), grad and weight contiguous."));
    methods.push_back(fast_method<py_conv2d_weight_backward>(
        "conv2d_weight_backward",
        "conv2d_weight_backward(dtype, shape, weight_shape, grad_weight, grad, a, stride, padding, dilation, "
        "groups): grad_weight (O, C/groups, KH, KW) and grad contiguous."));
}

}  // namespace tp
