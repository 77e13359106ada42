// Fused kernels for composite nn ops (the backend overrides the decomposition; autograd uses the
// op's own derivative):
//   softmax(dtype, log, outer, size, inner, out, a)          softmax / log_softmax over `size`
//   max_pool2d(dtype, shape, out, indices, a, kernel, stride, padding, dilation)
//   avg_pool2d(dtype, shape, out, a, kernel, stride, padding, count_include_pad, divisor)
//   max_pool2d_backward(dtype, shape, out_hw, grad_input, grad, a, kernel, stride, padding, dilation)
//   max_pool2d_with_indices_backward(dtype, shape, out_hw, grad_input, grad, indices)
//   layer_norm(dtype, rows, cols, out, a, weight, bias, eps)
//   cross_entropy(dtype, n, c, r, reduction, out, a, target, weight, ignore_index, label_smoothing)
//   cross_entropy_backward(dtype, n, c, r, reduction, out, grad, a, target, weight, ignore_index, label_smoothing)
//   smooth_l1_loss(dtype, shape, reduction, beta, out, a, b)
//   smooth_l1_loss_backward(dtype, shape, reduction, beta, out, grad, a, b)
//   gelu(dtype, tanh_form, n, out, grad, a)                  gelu, or its gradient when grad is given (stride 1 or 0)
// float32 and float64 only; operands are (storage, offset, strides) tuples checked against their
// storage before any read. float32 exp is a polynomial (Cephes expf, about 1 ulp) evaluated
// sixteen lanes at a time with AVX-512 or eight with AVX2+FMA where the CPU has them (simd.h):
// libm's scalar expf was 4x slower than NumPy.
#include <atomic>
#include <vector>

#include "families.h"
#include "simd.h"

namespace tp {

namespace {

// --- one contiguous row --------------------------------------------------------------------
// float32 rows run on the widest lanes the CPU has (simd_lanes.inc's array loops).
template <class T> T row_max(const T* x, int64_t n) {
#ifdef TP_X86_SIMD
    if constexpr (std::is_same_v<T, float>) TP_RETURN_WIDEST_LANES(max_of(x, n));
#endif
    T m = -std::numeric_limits<T>::infinity();
    for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
    return m;
}

template <class T> double row_expsum(const T* x, T* y, int64_t n, T shift) {
#ifdef TP_X86_SIMD
    if constexpr (std::is_same_v<T, float>) TP_RETURN_WIDEST_LANES(exp_sum(x, y, n, shift));
#endif
    double s = 0;
    for (int64_t i = 0; i < n; ++i) {
        T e = std::exp(x[i] - shift);
        if (y) y[i] = e;
        s += e;
    }
    return s;
}

template <class T> void row_scale(T* y, int64_t n, T factor) {
#ifdef TP_X86_SIMD
    if constexpr (std::is_same_v<T, float>) TP_RETURN_WIDEST_LANES(scale(y, n, factor));
#endif
    for (int64_t i = 0; i < n; ++i) y[i] *= factor;
}

// y = (x - shift) - c, rounded as the decomposition rounds it.
template <class T> void row_shift_twice(const T* x, T* y, int64_t n, T shift, T c) {
#ifdef TP_X86_SIMD
    if constexpr (std::is_same_v<T, float>) TP_RETURN_WIDEST_LANES(shift_twice(x, y, n, shift, c));
#endif
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - shift) - c;
}

// softmax (or log_softmax) of one contiguous row; x and y may be the same buffer.
template <class T> void softmax_row(const T* x, T* y, int64_t n, bool log) {
    const T m = row_max(x, n);
    if (log) return row_shift_twice(x, y, n, m, static_cast<T>(std::log(row_expsum<T>(x, nullptr, n, m))));
    row_scale(y, n, static_cast<T>(1.0 / row_expsum<T>(x, y, n, m)));
}

#ifdef TP_X86_SIMD
// float32 softmax over a dim whose neighbours along `inner` are adjacent (dim 0 of a matrix): a
// vector of columns at a time (simd_lanes.inc's softmax_columns), strips of columns over threads.
void softmax_strip(const float* x, int64_t x_step, float* y, int64_t y_step, int64_t rows, int64_t width, bool log) {
    TP_RETURN_WIDEST_LANES(softmax_columns(x, x_step, y, y_step, rows, width, log));
}

void softmax_columns_f32(int64_t outer, int64_t size, int64_t inner, Operand& out, Operand& a, bool log) {
    const int64_t *as = a.strides, *os = out.strides;
    const float* A = reinterpret_cast<const float*>(a.data);
    float* O = reinterpret_cast<float*>(out.data);
    const int64_t lanes = have_avx512() ? lanes16::kLanes : lanes8::kLanes;
    const int64_t strips = (inner + lanes - 1) / lanes, tasks = outer * strips;
    const int64_t nchunks = outer * size * inner >= PARALLEL_THRESHOLD ? g_num_threads * CHUNKS_PER_THREAD : 1;
    parallel_chunks(tasks, nchunks, [&](int64_t, int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) {
            const int64_t o = t / strips, j = (t % strips) * lanes;
            softmax_strip(A + o * as[0] + j, as[1], O + o * os[0] + j, os[1], size, std::min(lanes, inner - j), log);
        }
    });
}
#endif

// Rows are (outer, inner) pairs; a row whose elements are not adjacent goes through a buffer
// (or, float32 on AVX2, runs a vector of columns at a time where the inner neighbours are adjacent).
template <class T> void softmax_T(int64_t outer, int64_t size, int64_t inner, Operand& out, Operand& a, bool log) {
    const int64_t rows = outer * inner;
    const int64_t *as = a.strides, *os = out.strides;
    const T* A = reinterpret_cast<const T*>(a.data);
    T* O = reinterpret_cast<T*>(out.data);
    const bool direct = (size == 1 || (as[1] == 1 && os[1] == 1));
#ifdef TP_X86_SIMD
    if constexpr (std::is_same_v<T, float>) {
        if (!direct && inner > 1 && as[2] == 1 && os[2] == 1 && have_avx2())
            return softmax_columns_f32(outer, size, inner, out, a, log);
    }
#endif
    const int64_t nchunks = rows * size >= PARALLEL_THRESHOLD ? g_num_threads * CHUNKS_PER_THREAD : 1;
    parallel_chunks(rows, nchunks, [&](int64_t, int64_t r0, int64_t r1) {
        std::vector<T> buf(direct ? 0 : static_cast<size_t>(size));
        for (int64_t r = r0; r < r1; ++r) {
            const int64_t o = r / inner, i = r % inner;
            const T* x = A + o * as[0] + i * as[2];
            T* y = O + o * os[0] + i * os[2];
            if (direct) {
                softmax_row<T>(x, y, size, log);
                continue;
            }
            for (int64_t k = 0; k < size; ++k) buf[k] = x[k * as[1]];
            softmax_row<T>(buf.data(), buf.data(), size, log);
            for (int64_t k = 0; k < size; ++k) y[k * os[1]] = buf[k];
        }
    });
}

// A tuple of n ints, each >= minimum.
void parse_ints(PyObject* o, int64_t* v, int n, int64_t minimum, const char* fname, const char* what) {
    int64_t tmp[MAX_DIMS];
    int got = parse_shape(o, tmp, fname, what);  // also rejects negative values
    if (got != n) value_error(std::string(fname) + ": " + what + " must have " + std::to_string(n) + " values");
    for (int i = 0; i < n; ++i) {
        if (tmp[i] < minimum)
            value_error(std::string(fname) + ": " + what + " must be >= " + std::to_string(minimum));
        v[i] = tmp[i];
    }
}

PyObject* py_softmax(PyObject* const* args, Py_ssize_t nargs) {
    const char* fname = "softmax";
    check_nargs(nargs, 7, fname);
    int dtype = float_dtype(args[0], fname);
    int is_log = PyObject_IsTrue(args[1]);
    if (is_log < 0) throw PythonErrorSet{};
    int64_t shape[3];
    for (int i = 0; i < 3; ++i) {
        shape[i] = arg_int(args[2 + i], fname, "size");
        if (shape[i] < 0) value_error("softmax: sizes must be >= 0");
    }
    Operand out, a;
    parse_operand(args[5], dtype, 3, shape, out, fname, "out", false, true);
    parse_operand(args[6], dtype, 3, shape, a, fname, "a", false, false);
    if (numel_of(3, shape) == 0) return none();
    ReleaseGil nogil(numel_of(3, shape) >= PARALLEL_THRESHOLD);
    if (dtype == kFloat32) softmax_T<float>(shape[0], shape[1], shape[2], out, a, is_log);
    else softmax_T<double>(shape[0], shape[1], shape[2], out, a, is_log);
    return none();
}

// --- pooling -------------------------------------------------------------------------------
// Taps of a window along one dim: k in [lo, hi) land inside [0, size).
struct TapRange {
    int64_t start, lo, hi;
};
TapRange taps(int64_t o, int64_t stride, int64_t pad, int64_t dil, int64_t k, int64_t size) {
    const int64_t start = o * stride - pad;
    int64_t lo = start >= 0 ? 0 : (-start + dil - 1) / dil;
    int64_t hi = size - start <= 0 ? 0 : std::min<int64_t>(k, (size - start + dil - 1) / dil);
    return {start, lo, std::max(lo, hi)};
}

struct PoolGeometry {
    int64_t n, c, h, w, oh, ow;
    int64_t k[2], s[2], p[2], d[2];
};

// One output row's window maxima and their flat indices, tap by tap (row-major tap order) over
// the whole row, which keeps the inner loop short and branch-light. A value replaces the current
// maximum when it is larger, or when it is NaN (so the last NaN wins).
struct RowTaps {
    std::vector<int64_t> xlo, xhi, first;  // per kj: outputs whose tap lies inside; per x: its first tap
};

RowTaps row_taps(const PoolGeometry& g) {
    RowTaps t;
    t.xlo.resize(static_cast<size_t>(g.k[1]));
    t.xhi.resize(static_cast<size_t>(g.k[1]));
    t.first.resize(static_cast<size_t>(g.ow));
    for (int64_t kj = 0; kj < g.k[1]; ++kj) {
        const int64_t off = kj * g.d[1] - g.p[1];  // iw = x * s + off must lie in [0, W)
        int64_t lo = off >= 0 ? 0 : (-off + g.s[1] - 1) / g.s[1];
        int64_t hi = g.w - off <= 0 ? 0 : (g.w - off + g.s[1] - 1) / g.s[1];
        t.xlo[kj] = std::min(lo, g.ow);
        t.xhi[kj] = std::max(t.xlo[kj], std::min(hi, g.ow));
    }
    for (int64_t x = 0; x < g.ow; ++x) {
        const TapRange cr = taps(x, g.s[1], g.p[1], g.d[1], g.k[1], g.w);
        t.first[x] = cr.lo < cr.hi ? cr.start + cr.lo * g.d[1] : -1;
    }
    return t;
}

// take ? a : b through bit masks. Whether a tap beats the running maximum is a coin toss on real
// data; GCC compiles a ?: on floats into a branch, and its mispredictions cost 3-5 ns a tap
// (max_pool2d of 64x64x24x24, one thread: 13 ms, as long as PyTorch, before; 7 ms with selects).
template <class T> inline T select_bits(bool take, T a, T b) {
    using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    Bits ab, bb;
    std::memcpy(&ab, &a, sizeof(T));
    std::memcpy(&bb, &b, sizeof(T));
    const Bits mask = Bits(0) - Bits(take);
    const Bits r = (ab & mask) | (bb & ~mask);
    T out;
    std::memcpy(&out, &r, sizeof(T));
    return out;
}

inline int64_t select_index(bool take, int64_t a, int64_t b) { return b ^ ((a ^ b) & -int64_t(take)); }

// A value replaces the running maximum when it is larger, or when it is NaN: PyTorch 2.13's rule
// (`val > max || isnan(val)`), so of equal maxima the first wins and of several NaN the last.
template <class T> inline bool beats(T v, T cur) { return (v > cur) | (v != v); }

template <class T>
void row_argmax(const PoolGeometry& g, const T* plane, const int64_t* as, int64_t y, const RowTaps& t, T* m,
                int64_t* best) {
    const TapRange rr = taps(y, g.s[0], g.p[0], g.d[0], g.k[0], g.h);
    const int64_t first_row = rr.start + rr.lo * g.d[0];
    for (int64_t x = 0; x < g.ow; ++x) {
        m[x] = -std::numeric_limits<T>::infinity();
        best[x] = rr.lo < rr.hi && t.first[x] >= 0 ? first_row * g.w + t.first[x] : -1;
    }
    for (int64_t ki = rr.lo; ki < rr.hi; ++ki) {
        const int64_t ih = rr.start + ki * g.d[0];
        const T* row = plane + ih * as[2];
        for (int64_t kj = 0; kj < g.k[1]; ++kj) {
            const int64_t off = kj * g.d[1] - g.p[1];
            const int64_t xlo = t.xlo[kj], xhi = t.xhi[kj], step = g.s[1] * as[3];
            const T* src = row + (xlo * g.s[1] + off) * as[3];
            int64_t at = ih * g.w + xlo * g.s[1] + off;
            for (int64_t x = xlo; x < xhi; ++x, src += step, at += g.s[1]) {
                const T v = *src, cur = m[x];
                const bool take = beats(v, cur);
                m[x] = select_bits(take, v, cur);
                best[x] = select_index(take, at, best[x]);
            }
        }
    }
}

int64_t pool_chunks(const PoolGeometry& g) {
    const int64_t work = g.n * g.c * g.oh * g.ow * g.k[0] * g.k[1];
    return work >= PARALLEL_THRESHOLD ? g_num_threads * CHUNKS_PER_THREAD : 1;
}

// Each output is the maximum of its window's taps inside the input (padding is -inf): the first
// maximum in row-major tap order, or the last NaN where the window holds any; its index is the
// tap's flat position h * W + w in the input plane (the first tap inside the input when every
// value is -inf).
template <class T>
void max_pool_T(const PoolGeometry& g, Operand& out, Operand* indices, Operand& a) {
    const int64_t *as = a.strides, *os = out.strides;
    const T* A = reinterpret_cast<const T*>(a.data);
    T* O = reinterpret_cast<T*>(out.data);
    const RowTaps t = row_taps(g);
    parallel_chunks(g.n * g.c, pool_chunks(g), [&](int64_t, int64_t p0, int64_t p1) {
        std::vector<T> m(static_cast<size_t>(g.ow));
        std::vector<int64_t> best(static_cast<size_t>(g.ow));
        for (int64_t pl = p0; pl < p1; ++pl) {
            const int64_t ni = pl / g.c, ci = pl % g.c;
            const T* plane = A + ni * as[0] + ci * as[1];
            T* oplane = O + ni * os[0] + ci * os[1];
            int64_t* iplane = indices ? reinterpret_cast<int64_t*>(indices->data) + ni * indices->strides[0] +
                                            ci * indices->strides[1]
                                      : nullptr;
            for (int64_t y = 0; y < g.oh; ++y) {
                row_argmax<T>(g, plane, as, y, t, m.data(), best.data());
                for (int64_t x = 0; x < g.ow; ++x) oplane[y * os[2] + x * os[3]] = m[x];
                if (iplane)
                    for (int64_t x = 0; x < g.ow; ++x) iplane[y * indices->strides[2] + x * indices->strides[3]] = best[x];
            }
        }
    });
}

// The gradient of max_pool_T: each output's gradient added to the input element its maximum came
// from. grad_input is contiguous; planes run in parallel (a window never leaves its plane).
template <class T>
void max_pool_backward_T(const PoolGeometry& g, Operand& grad_input, Operand& grad, Operand& a) {
    const int64_t *as = a.strides, *gs = grad.strides;
    const T* A = reinterpret_cast<const T*>(a.data);
    const T* G = reinterpret_cast<const T*>(grad.data);
    T* O = reinterpret_cast<T*>(grad_input.data);
    const RowTaps t = row_taps(g);
    parallel_chunks(g.n * g.c, pool_chunks(g), [&](int64_t, int64_t p0, int64_t p1) {
        std::vector<T> m(static_cast<size_t>(g.ow));
        std::vector<int64_t> best(static_cast<size_t>(g.ow));
        for (int64_t pl = p0; pl < p1; ++pl) {
            const int64_t ni = pl / g.c, ci = pl % g.c;
            const T* plane = A + ni * as[0] + ci * as[1];
            const T* gplane = G + ni * gs[0] + ci * gs[1];
            T* oplane = O + pl * g.h * g.w;
            std::fill(oplane, oplane + g.h * g.w, T(0));
            for (int64_t y = 0; y < g.oh; ++y) {
                row_argmax<T>(g, plane, as, y, t, m.data(), best.data());
                for (int64_t x = 0; x < g.ow; ++x)
                    if (best[x] >= 0) oplane[best[x]] += gplane[y * gs[2] + x * gs[3]];
            }
        }
    });
}

// The PyTorch divisor: the window clipped to the padded input, or to the input itself when
// padding is not counted, unless a divisor is given.
template <class T>
void avg_pool_T(const PoolGeometry& g, Operand& out, Operand& a, bool count_include_pad, int64_t divisor) {
    const int64_t *as = a.strides, *os = out.strides;
    const T* A = reinterpret_cast<const T*>(a.data);
    T* O = reinterpret_cast<T*>(out.data);
    const int64_t planes = g.n * g.c;
    const int64_t work = planes * g.oh * g.ow * g.k[0] * g.k[1];
    const int64_t nchunks = work >= PARALLEL_THRESHOLD ? g_num_threads * CHUNKS_PER_THREAD : 1;
    parallel_chunks(planes, nchunks, [&](int64_t, int64_t p0, int64_t p1) {
        for (int64_t pl = p0; pl < p1; ++pl) {
            const int64_t ni = pl / g.c, ci = pl % g.c;
            const T* plane = A + ni * as[0] + ci * as[1];
            T* oplane = O + ni * os[0] + ci * os[1];
            for (int64_t y = 0; y < g.oh; ++y) {
                const int64_t h0 = y * g.s[0] - g.p[0];
                const int64_t h1 = std::min(h0 + g.k[0], g.h + g.p[0]);
                const int64_t hs = std::max<int64_t>(h0, 0), he = std::min(h1, g.h);
                for (int64_t x = 0; x < g.ow; ++x) {
                    const int64_t w0 = x * g.s[1] - g.p[1];
                    const int64_t w1 = std::min(w0 + g.k[1], g.w + g.p[1]);
                    const int64_t ws = std::max<int64_t>(w0, 0), we = std::min(w1, g.w);
                    double total = 0;
                    for (int64_t ih = hs; ih < he; ++ih)
                        for (int64_t iw = ws; iw < we; ++iw) total += plane[ih * as[2] + iw * as[3]];
                    int64_t count = divisor > 0 ? divisor
                                    : count_include_pad ? (h1 - h0) * (w1 - w0)
                                                        : std::max<int64_t>(he - hs, 0) * std::max<int64_t>(we - ws, 0);
                    oplane[y * os[2] + x * os[3]] = static_cast<T>(total) / static_cast<T>(count);
                }
            }
        }
    });
}

// Shared argument parsing: dtype, shape (N, C, H, W), out_hw (OH, OW), out (N, C, OH, OW), a
// (N, C, H, W) and kernel, stride, padding. Taps are clipped to the input, so any window
// parameters are memory-safe.
int parse_pool(PyObject* const* args, PoolGeometry& g, const char* fname, int a_pos, int window_pos, Operand& out,
               Operand& a) {
    int dtype = float_dtype(args[0], fname);
    int64_t shape[MAX_DIMS], out_hw[2];
    if (parse_shape(args[1], shape, fname) != 4) value_error(std::string(fname) + ": shape must be (N, C, H, W)");
    parse_ints(args[2], out_hw, 2, 0, fname, "out_hw");
    parse_ints(args[window_pos], g.k, 2, 1, fname, "kernel");
    parse_ints(args[window_pos + 1], g.s, 2, 1, fname, "stride");
    parse_ints(args[window_pos + 2], g.p, 2, 0, fname, "padding");
    g.n = shape[0], g.c = shape[1], g.h = shape[2], g.w = shape[3], g.oh = out_hw[0], g.ow = out_hw[1];
    int64_t oshape[4] = {g.n, g.c, g.oh, g.ow};
    parse_operand(args[3], dtype, 4, oshape, out, fname, "out", false, true);
    parse_operand(args[a_pos], dtype, 4, shape, a, fname, "a", false, false);
    return dtype;
}

PyObject* py_max_pool2d(PyObject* const* args, Py_ssize_t nargs) {
    // max_pool2d(dtype, shape, out_hw, out, indices, a, kernel, stride, padding, dilation)
    const char* fname = "max_pool2d";
    check_nargs(nargs, 10, fname);
    PoolGeometry g;
    Operand out, a, idx;
    int dtype = parse_pool(args, g, fname, 5, 6, out, a);
    parse_ints(args[9], g.d, 2, 1, fname, "dilation");
    Operand* indices = nullptr;
    if (args[4] != Py_None) {
        int64_t oshape[4] = {g.n, g.c, g.oh, g.ow};
        parse_operand(args[4], kInt64, 4, oshape, idx, fname, "indices", false, true);
        indices = &idx;
    }
    const int64_t total = g.n * g.c * g.oh * g.ow;
    if (total == 0) return none();
    ReleaseGil nogil(total * g.k[0] * g.k[1] >= PARALLEL_THRESHOLD);
    if (dtype == kFloat32) max_pool_T<float>(g, out, indices, a);
    else max_pool_T<double>(g, out, indices, a);
    return none();
}

PyObject* py_max_pool2d_backward(PyObject* const* args, Py_ssize_t nargs) {
    // max_pool2d_backward(dtype, shape, out_hw, grad_input, grad, a, kernel, stride, padding, dilation)
    const char* fname = "max_pool2d_backward";
    check_nargs(nargs, 10, fname);
    PoolGeometry g;
    Operand grad_input, grad, a;
    int dtype = float_dtype(args[0], fname);
    int64_t shape[MAX_DIMS], out_hw[2];
    if (parse_shape(args[1], shape, fname) != 4) value_error("max_pool2d_backward: shape must be (N, C, H, W)");
    parse_ints(args[2], out_hw, 2, 0, fname, "out_hw");
    parse_ints(args[6], g.k, 2, 1, fname, "kernel");
    parse_ints(args[7], g.s, 2, 1, fname, "stride");
    parse_ints(args[8], g.p, 2, 0, fname, "padding");
    parse_ints(args[9], g.d, 2, 1, fname, "dilation");
    g.n = shape[0], g.c = shape[1], g.h = shape[2], g.w = shape[3], g.oh = out_hw[0], g.ow = out_hw[1];
    int64_t oshape[4] = {g.n, g.c, g.oh, g.ow};
    parse_operand(args[3], dtype, 4, shape, grad_input, fname, "grad_input", false, true);
    const int64_t* st = grad_input.strides;
    if ((g.w > 1 && st[3] != 1) || (g.h > 1 && st[2] != g.w) || (g.c > 1 && st[1] != g.h * g.w) ||
        (g.n > 1 && st[0] != g.c * g.h * g.w))
        value_error("max_pool2d_backward: grad_input must be contiguous");
    parse_operand(args[4], dtype, 4, oshape, grad, fname, "grad", false, false);
    parse_operand(args[5], dtype, 4, shape, a, fname, "a", false, false);
    if (numel_of(4, shape) == 0) return none();
    ReleaseGil nogil(numel_of(4, shape) >= PARALLEL_THRESHOLD);
    if (dtype == kFloat32) max_pool_backward_T<float>(g, grad_input, grad, a);
    else max_pool_backward_T<double>(g, grad_input, grad, a);
    return none();
}

// max_pool2d's gradient through the forward's indices: each output's gradient added to the
// input element its index names, plane by plane (an index never leaves its plane). Training
// keeps the forward's indices for this, where max_pool2d_backward searches every window again
// (CNN step, one thread: 13 ms against 2 ms). An index outside the plane raises IndexError
// after the pass; grad_input is contiguous and written in full.
template <class T>
bool max_pool_indices_backward_T(int64_t planes, int64_t hw, int64_t ohw, const int64_t* os, Operand& grad_input,
                                 Operand& grad, Operand& indices, int64_t* bad_index) {
    const int64_t *gs = grad.strides, *is = indices.strides;
    const T* G = reinterpret_cast<const T*>(grad.data);
    const int64_t* I = reinterpret_cast<const int64_t*>(indices.data);
    T* O = reinterpret_cast<T*>(grad_input.data);
    const int64_t c = os[1], ow = os[3];
    std::atomic<bool> bad{false};
    const int64_t nchunks = planes * (hw + ohw) >= PARALLEL_THRESHOLD ? g_num_threads * CHUNKS_PER_THREAD : 1;
    parallel_chunks(planes, nchunks, [&](int64_t, int64_t p0, int64_t p1) {
        for (int64_t pl = p0; pl < p1; ++pl) {
            const int64_t ni = pl / c, ci = pl % c;
            const T* gp = G + ni * gs[0] + ci * gs[1];
            const int64_t* ip = I + ni * is[0] + ci * is[1];
            T* op = O + pl * hw;
            std::fill(op, op + hw, T(0));
            for (int64_t y = 0; y < os[2]; ++y)
                for (int64_t x = 0; x < ow; ++x) {
                    const int64_t at = ip[y * is[2] + x * is[3]];
                    if (static_cast<uint64_t>(at) >= static_cast<uint64_t>(hw)) {
                        if (!bad.exchange(true)) *bad_index = at;
                        continue;
                    }
                    op[at] += gp[y * gs[2] + x * gs[3]];
                }
        }
    });
    return bad.load();
}

PyObject* py_max_pool2d_with_indices_backward(PyObject* const* args, Py_ssize_t nargs) {
    // max_pool2d_with_indices_backward(dtype, shape, out_hw, grad_input, grad, indices)
    const char* fname = "max_pool2d_with_indices_backward";
    check_nargs(nargs, 6, fname);
    int dtype = float_dtype(args[0], fname);
    int64_t shape[MAX_DIMS], out_hw[2];
    if (parse_shape(args[1], shape, fname) != 4)
        value_error("max_pool2d_with_indices_backward: shape must be (N, C, H, W)");
    parse_ints(args[2], out_hw, 2, 0, fname, "out_hw");
    int64_t oshape[4] = {shape[0], shape[1], out_hw[0], out_hw[1]};
    Operand grad_input, grad, indices;
    parse_operand(args[3], dtype, 4, shape, grad_input, fname, "grad_input", false, true);
    const int64_t* st = grad_input.strides;
    if ((shape[3] > 1 && st[3] != 1) || (shape[2] > 1 && st[2] != shape[3]) ||
        (shape[1] > 1 && st[1] != shape[2] * shape[3]) || (shape[0] > 1 && st[0] != shape[1] * shape[2] * shape[3]))
        value_error("max_pool2d_with_indices_backward: grad_input must be contiguous");
    parse_operand(args[4], dtype, 4, oshape, grad, fname, "grad", false, false);
    parse_operand(args[5], kInt64, 4, oshape, indices, fname, "indices", false, false);
    if (numel_of(4, shape) == 0) return none();
    const int64_t planes = shape[0] * shape[1], hw = shape[2] * shape[3], ohw = out_hw[0] * out_hw[1];
    int64_t bad_index = 0;
    bool bad;
    {
        ReleaseGil nogil(planes * (hw + ohw) >= PARALLEL_THRESHOLD);
        if (dtype == kFloat32)
            bad = max_pool_indices_backward_T<float>(planes, hw, ohw, oshape, grad_input, grad, indices, &bad_index);
        else
            bad = max_pool_indices_backward_T<double>(planes, hw, ohw, oshape, grad_input, grad, indices, &bad_index);
    }
    if (bad)
        raise(PyExc_IndexError, "max_pool2d_with_indices_backward: index " + std::to_string(bad_index) +
                                    " is out of bounds for a plane of " + std::to_string(hw) + " elements");
    return none();
}

PyObject* py_avg_pool2d(PyObject* const* args, Py_ssize_t nargs) {
    // avg_pool2d(dtype, shape, out_hw, out, a, kernel, stride, padding, count_include_pad, divisor)
    const char* fname = "avg_pool2d";
    check_nargs(nargs, 10, fname);
    PoolGeometry g;
    Operand out, a;
    int dtype = parse_pool(args, g, fname, 4, 5, out, a);
    g.d[0] = g.d[1] = 1;
    int include_pad = PyObject_IsTrue(args[8]);
    if (include_pad < 0) throw PythonErrorSet{};
    int64_t divisor = arg_int(args[9], fname, "divisor");
    if (divisor < 0) value_error("avg_pool2d: divisor must be >= 0 (0: none)");
    const int64_t total = g.n * g.c * g.oh * g.ow;
    if (total == 0) return none();
    ReleaseGil nogil(total * g.k[0] * g.k[1] >= PARALLEL_THRESHOLD);
    if (dtype == kFloat32) avg_pool_T<float>(g, out, a, include_pad, divisor);
    else avg_pool_T<double>(g, out, a, include_pad, divisor);
    return none();
}

// --- cross_entropy -------------------------------------------------------------------------
// Row (n, r) of a (N, C, R) input against class index t = target[n, r]: with p = log_softmax of
// the row, loss = -(sum_c q_c p_c), q_c = (1 - s) w_t [c == t] + (s / C) w_c (w = 1 without
// weights), and 0 where t is ignore_index (then w_t counts as 0). mean divides the summed losses
// by the summed w_t, as the composite op does; sums are in double, in row order.
template <class T>
void cross_entropy_T(int64_t n, int64_t c, int64_t r, int reduction, Operand& out, Operand& a, Operand& target,
                     const Operand* weight, int64_t ignore_index, double smoothing) {
    const int64_t *as = a.strides, *ts = target.strides;
    const T* A = reinterpret_cast<const T*>(a.data);
    const int64_t* Tg = reinterpret_cast<const int64_t*>(target.data);
    const T* W = weight ? reinterpret_cast<const T*>(weight->data) : nullptr;
    const int64_t ws = weight ? weight->strides[0] : 0;
    const int64_t rows = n * r;
    std::vector<double> losses(static_cast<size_t>(rows)), weights(static_cast<size_t>(rows));
    std::vector<int64_t> bad(static_cast<size_t>(rows), 0);
    double w_all = 0;  // sum of w_c, for the smoothing term
    if (W)
        for (int64_t k = 0; k < c; ++k) w_all += W[k * ws];
    else
        w_all = static_cast<double>(c);
    const bool direct = c == 1 || as[1] == 1;
    const int64_t nchunks = rows * c >= PARALLEL_THRESHOLD ? g_num_threads * CHUNKS_PER_THREAD : 1;
    parallel_chunks(rows, nchunks, [&](int64_t, int64_t r0, int64_t r1) {
        std::vector<T> buf(direct ? 0 : static_cast<size_t>(c));
        for (int64_t row = r0; row < r1; ++row) {
            const int64_t ni = row / r, ri = row % r;
            const int64_t t = Tg[ni * ts[0] + ri * ts[1]];
            if (t == ignore_index) {
                losses[row] = weights[row] = 0;
                continue;
            }
            if (t < 0 || t >= c) {
                bad[row] = 1;
                continue;
            }
            const T* x = A + ni * as[0] + ri * as[2];
            if (!direct) {
                for (int64_t k = 0; k < c; ++k) buf[k] = x[k * as[1]];
                x = buf.data();
            }
            const T m = row_max<T>(x, c);
            const double lse = static_cast<double>(m) + std::log(row_expsum<T>(x, nullptr, c, m));
            const double wt = W ? static_cast<double>(W[t * ws]) : 1.0;
            double loss = (1.0 - smoothing) * wt * (lse - static_cast<double>(x[t]));
            if (smoothing != 0) {
                double dot = 0;  // sum_c w_c x_c
                for (int64_t k = 0; k < c; ++k) dot += (W ? static_cast<double>(W[k * ws]) : 1.0) * x[k];
                loss += smoothing / static_cast<double>(c) * (w_all * lse - dot);
            }
            losses[row] = loss;
            weights[row] = wt;
        }
    });
    for (int64_t row = 0; row < rows; ++row)
        if (bad[row]) {
            const int64_t t = Tg[(row / r) * ts[0] + (row % r) * ts[1]];
            raise(PyExc_IndexError, "cross_entropy: target " + std::to_string(t) + " is out of bounds for " +
                                        std::to_string(c) + " classes");
        }
    T* O = reinterpret_cast<T*>(out.data);
    if (reduction == 0) {
        for (int64_t row = 0; row < rows; ++row) O[(row / r) * out.strides[0] + (row % r) * out.strides[1]] = static_cast<T>(losses[row]);
        return;
    }
    double total = 0, wsum = 0;
    for (int64_t row = 0; row < rows; ++row) total += losses[row], wsum += weights[row];
    *O = static_cast<T>(reduction == 1 ? total / wsum : total);
}

PyObject* py_cross_entropy(PyObject* const* args, Py_ssize_t nargs) {
    // cross_entropy(dtype, n, c, r, reduction, out, a, target, weight, ignore_index, label_smoothing)
    const char* fname = "cross_entropy";
    check_nargs(nargs, 11, fname);
    int dtype = float_dtype(args[0], fname);
    int64_t shape[3];
    for (int i = 0; i < 3; ++i) {
        shape[i] = arg_int(args[1 + i], fname, "size");
        if (shape[i] < 0) value_error("cross_entropy: sizes must be >= 0");
    }
    const int64_t reduction = arg_int(args[4], fname, "reduction");
    if (reduction < 0 || reduction > 2) value_error("cross_entropy: reduction must be 0 (none), 1 (mean) or 2 (sum)");
    const int64_t rows_shape[2] = {shape[0], shape[2]};
    Operand out, a, target, weight;
    parse_operand(args[5], dtype, reduction == 0 ? 2 : 0, rows_shape, out, fname, "out", false, true);
    parse_operand(args[6], dtype, 3, shape, a, fname, "a", false, false);
    parse_operand(args[7], kInt64, 2, rows_shape, target, fname, "target", false, false);
    const Operand* wp = nullptr;
    if (args[8] != Py_None) {
        parse_operand(args[8], dtype, 1, shape + 1, weight, fname, "weight", false, false);
        wp = &weight;
    }
    const int64_t ignore_index = arg_int(args[9], fname, "ignore_index");
    const double smoothing = arg_double(args[10], fname, "label_smoothing");
    if (shape[1] == 0) value_error("cross_entropy: there must be at least one class");
    ReleaseGil nogil(numel_of(3, shape) >= PARALLEL_THRESHOLD);
    if (dtype == kFloat32) cross_entropy_T<float>(shape[0], shape[1], shape[2], (int)reduction, out, a, target, wp, ignore_index, smoothing);
    else cross_entropy_T<double>(shape[0], shape[1], shape[2], (int)reduction, out, a, target, wp, ignore_index, smoothing);
    return none();
}

// --- cross_entropy_backward ----------------------------------------------------------------
// The gradient of cross_entropy with respect to its input, in one pass per row instead of the
// decomposition's softmax, products, scatter_add and their temporaries: row (n, r) gets
// scale * (softmax(x) * sum_c q_c - q) with q as above, scale the loss's gradient (divided by the
// summed w_t for mean). A row whose target is ignore_index gets scale 0. out is contiguous (N, C, R).
template <class T>
void cross_entropy_backward_T(int64_t n, int64_t c, int64_t r, int reduction, Operand& out, Operand& grad, Operand& a,
                              Operand& target, const Operand* weight, int64_t ignore_index, double smoothing) {
    const int64_t *as = a.strides, *ts = target.strides;
    const T* A = reinterpret_cast<const T*>(a.data);
    const T* G = reinterpret_cast<const T*>(grad.data);
    const int64_t* Tg = reinterpret_cast<const int64_t*>(target.data);
    const T* W = weight ? reinterpret_cast<const T*>(weight->data) : nullptr;
    const int64_t ws = weight ? weight->strides[0] : 0;
    T* O = reinterpret_cast<T*>(out.data);
    const int64_t rows = n * r;
    // Targets first: an out-of-range one raises before anything is written, and mean needs the
    // summed w_t (in row order, in double, as the forward kernel sums it).
    double wsum = 0, w_all = 0;
    for (int64_t row = 0; row < rows; ++row) {
        const int64_t t = Tg[(row / r) * ts[0] + (row % r) * ts[1]];
        if (t == ignore_index) continue;
        if (t < 0 || t >= c)
            raise(PyExc_IndexError, "cross_entropy: target " + std::to_string(t) + " is out of bounds for " +
                                        std::to_string(c) + " classes");
        wsum += W ? static_cast<double>(W[t * ws]) : 1.0;
    }
    if (W)
        for (int64_t k = 0; k < c; ++k) w_all += W[k * ws];
    else
        w_all = static_cast<double>(c);
    const double total_scale = reduction == 0 ? 0.0 : static_cast<double>(*G) / (reduction == 1 ? wsum : 1.0);
    const bool direct = r == 1 && (c == 1 || as[1] == 1);
    const int64_t nchunks = rows * c >= PARALLEL_THRESHOLD ? g_num_threads * CHUNKS_PER_THREAD : 1;
    parallel_chunks(rows, nchunks, [&](int64_t, int64_t r0, int64_t r1) {
        std::vector<T> buf(direct ? 0 : static_cast<size_t>(c));
        for (int64_t row = r0; row < r1; ++row) {
            const int64_t ni = row / r, ri = row % r;
            T* y = direct ? O + ni * c : buf.data();
            const int64_t t = Tg[ni * ts[0] + ri * ts[1]];
            const T* x = A + ni * as[0] + ri * as[2];
            if (!direct) {
                for (int64_t k = 0; k < c; ++k) y[k] = x[k * as[1]];
                x = y;
            }
            // An ignored row has scale 0: its gradient is 0, or NaN where its softmax is (a NaN
            // or +inf logit), as the decomposition and PyTorch give.
            const bool ignored = t == ignore_index;
            const double row_grad = reduction == 0 ? static_cast<double>(G[ni * grad.strides[0] + ri * grad.strides[1]])
                                                   : total_scale;
            const double scale = ignored ? 0.0 : row_grad;
            const double wt = ignored ? 0.0 : W ? static_cast<double>(W[t * ws]) : 1.0;
            const double qsum = (1.0 - smoothing) * wt + smoothing / static_cast<double>(c) * w_all;
            const T m = row_max<T>(x, c);
            const double sum = row_expsum<T>(x, y, c, m);  // y = exp(x - m)
            const T factor = static_cast<T>(scale * qsum / sum);
            row_scale(y, c, factor);
            if (smoothing != 0 && !ignored) {
                const double spread = scale * smoothing / static_cast<double>(c);
                for (int64_t k = 0; k < c; ++k)
                    y[k] -= static_cast<T>(spread * (W ? static_cast<double>(W[k * ws]) : 1.0));
            }
            if (!ignored) y[t] -= static_cast<T>(scale * (1.0 - smoothing) * wt);
            if (!direct)
                for (int64_t k = 0; k < c; ++k) O[(ni * c + k) * r + ri] = y[k];
        }
    });
}

PyObject* py_cross_entropy_backward(PyObject* const* args, Py_ssize_t nargs) {
    // cross_entropy_backward(dtype, n, c, r, reduction, out, grad, a, target, weight, ignore_index, label_smoothing)
    const char* fname = "cross_entropy_backward";
    check_nargs(nargs, 12, fname);
    int dtype = float_dtype(args[0], fname);
    int64_t shape[3];
    for (int i = 0; i < 3; ++i) {
        shape[i] = arg_int(args[1 + i], fname, "size");
        if (shape[i] < 0) value_error("cross_entropy_backward: sizes must be >= 0");
    }
    const int64_t reduction = arg_int(args[4], fname, "reduction");
    if (reduction < 0 || reduction > 2)
        value_error("cross_entropy_backward: reduction must be 0 (none), 1 (mean) or 2 (sum)");
    const int64_t rows_shape[2] = {shape[0], shape[2]};
    Operand out, grad, a, target, weight;
    parse_operand(args[5], dtype, 3, shape, out, fname, "out", false, true);
    parse_operand(args[6], dtype, reduction == 0 ? 2 : 0, rows_shape, grad, fname, "grad", false, false);
    parse_operand(args[7], dtype, 3, shape, a, fname, "a", false, false);
    parse_operand(args[8], kInt64, 2, rows_shape, target, fname, "target", false, false);
    const Operand* wp = nullptr;
    if (args[9] != Py_None) {
        parse_operand(args[9], dtype, 1, shape + 1, weight, fname, "weight", false, false);
        wp = &weight;
    }
    const int64_t ignore_index = arg_int(args[10], fname, "ignore_index");
    const double smoothing = arg_double(args[11], fname, "label_smoothing");
    if (shape[1] == 0) value_error("cross_entropy_backward: there must be at least one class");
    if (out.strides[2] != 1 || out.strides[1] != shape[2] || out.strides[0] != shape[1] * shape[2])
        value_error("cross_entropy_backward: out must be contiguous");
    if (numel_of(3, shape) == 0) return none();
    ReleaseGil nogil(numel_of(3, shape) >= PARALLEL_THRESHOLD);
    if (dtype == kFloat32)
        cross_entropy_backward_T<float>(shape[0], shape[1], shape[2], (int)reduction, out, grad, a, target, wp,
                                        ignore_index, smoothing);
    else
        cross_entropy_backward_T<double>(shape[0], shape[1], shape[2], (int)reduction, out, grad, a, target, wp,
                                         ignore_index, smoothing);
    return none();
}

// --- smooth_l1_loss ------------------------------------------------------------------------
// One pass instead of the decomposition's nine kernels (sub, abs, compare, where, the arithmetic
// of both branches, sum and the mean's division) and five for the gradient: on the small
// regression step of issue 14 each kernel cost more than the arithmetic of all of them.
// Per element, with d = a - b and z = |d|: 0.5 z^2 / beta where z < beta, else z - 0.5 beta, in
// PyTorch's order of operations (beta = 0 never takes the first branch: L1). The reductions add
// in double, per fixed chunk of elements (partial sums added in chunk order), so the result
// does not depend on the thread count or the load.
constexpr int64_t kLossChunk = 1 << 15;

template <class T> inline T smooth_l1_value(T d, T beta) {
    const T z = std::abs(d);
    return z < beta ? T(0.5) * z * z / beta : z - T(0.5) * beta;
}

// d/dd of the loss: d / beta inside (-beta, beta), -1 or 1 outside; NaN stays NaN. beta = 0 is
// L1's derivative sign(d), 0 at d = 0 (as PyTorch, whose smooth_l1_loss is l1_loss at beta = 0).
template <class T> inline T smooth_l1_slope(T d, T beta) {
    if (beta == T(0)) return d > T(0) ? T(1) : d < T(0) ? T(-1) : d;  // d: 0 stays 0, NaN stays NaN
    return d <= -beta ? T(-1) : d >= beta ? T(1) : d / beta;
}

template <class T> double smooth_l1_sum_run(const char* a, const char* b, int64_t n, int64_t sa, int64_t sb, T beta) {
    double acc[4] = {0, 0, 0, 0};
    int64_t i = 0;
    if (sa == static_cast<int64_t>(sizeof(T)) && sb == static_cast<int64_t>(sizeof(T))) {
        const T* x = reinterpret_cast<const T*>(a);
        const T* y = reinterpret_cast<const T*>(b);
        for (; i + 4 <= n; i += 4)
            for (int j = 0; j < 4; ++j) acc[j] += smooth_l1_value<T>(x[i + j] - y[i + j], beta);
        for (; i < n; ++i) acc[0] += smooth_l1_value<T>(x[i] - y[i], beta);
    } else {
        for (; i < n; ++i)
            acc[0] += smooth_l1_value<T>(*reinterpret_cast<const T*>(a + i * sa) - *reinterpret_cast<const T*>(b + i * sb),
                                         beta);
    }
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

template <class T> void smooth_l1_loss_T(int nd, const int64_t* shape, int reduction, T beta, Operand& out, Operand& a,
                                         Operand& b) {
    T* O = reinterpret_cast<T*>(out.data);
    constexpr int s = sizeof(T);
    if (reduction == 0) {
        Loop<3> L;
        Operand* ops[3] = {&out, &a, &b};
        const int isz[3] = {s, s, s};
        L.init(nd, shape, ops, isz);
        L.run([beta](char** p, int64_t n, const int64_t* st) {
            for (int64_t i = 0; i < n; ++i)
                *reinterpret_cast<T*>(p[0] + i * st[0]) = smooth_l1_value<T>(
                    *reinterpret_cast<const T*>(p[1] + i * st[1]) - *reinterpret_cast<const T*>(p[2] + i * st[2]), beta);
        });
        return;
    }
    Loop<2> L;
    Operand* ops[2] = {&a, &b};
    const int isz[2] = {s, s};
    L.init(nd, shape, ops, isz);
    const int64_t nchunks = (L.numel + kLossChunk - 1) / kLossChunk;
    std::vector<double> partial(static_cast<size_t>(std::max<int64_t>(nchunks, 1)), 0.0);
    parallel_chunks(L.numel, nchunks, [&](int64_t c, int64_t begin, int64_t end) {
        double total = 0;
        auto add = [&](char** p, int64_t n, const int64_t* st) { total += smooth_l1_sum_run<T>(p[0], p[1], n, st[0], st[1], beta); };
        L.run_range(begin, end, add);
        partial[c] = total;
    });
    double total = 0;
    for (double v : partial) total += v;
    // The mean of no elements is NaN (0 / 0), as PyTorch's.
    *O = static_cast<T>(reduction == 1 ? total / static_cast<double>(L.numel) : total);
}

// grad_input = slope(a - b) * g, g the incoming gradient per element (reduction 0; any strides,
// stride 0 where it was broadcast) or the 0-d gradient, divided by the element count for mean.
template <class T> void smooth_l1_loss_backward_T(int nd, const int64_t* shape, int reduction, T beta, Operand& out,
                                                  Operand& grad, Operand& a, Operand& b) {
    constexpr int s = sizeof(T);
    if (reduction == 0) {
        Loop<4> L;
        Operand* ops[4] = {&out, &grad, &a, &b};
        const int isz[4] = {s, s, s, s};
        L.init(nd, shape, ops, isz);
        L.run([beta](char** p, int64_t n, const int64_t* st) {
            for (int64_t i = 0; i < n; ++i) {
                const T d = *reinterpret_cast<const T*>(p[2] + i * st[2]) - *reinterpret_cast<const T*>(p[3] + i * st[3]);
                *reinterpret_cast<T*>(p[0] + i * st[0]) =
                    smooth_l1_slope<T>(d, beta) * *reinterpret_cast<const T*>(p[1] + i * st[1]);
            }
        });
        return;
    }
    Loop<3> L;
    Operand* ops[3] = {&out, &a, &b};
    const int isz[3] = {s, s, s};
    L.init(nd, shape, ops, isz);
    // The decomposition's order: the loss's gradient times 1 / count, then per element.
    const T g = *reinterpret_cast<const T*>(grad.data);
    const T scale = reduction == 1 && L.numel > 0 ? g * static_cast<T>(1.0 / static_cast<double>(L.numel)) : g;
    L.run([beta, scale](char** p, int64_t n, const int64_t* st) {
        for (int64_t i = 0; i < n; ++i) {
            const T d = *reinterpret_cast<const T*>(p[1] + i * st[1]) - *reinterpret_cast<const T*>(p[2] + i * st[2]);
            *reinterpret_cast<T*>(p[0] + i * st[0]) = smooth_l1_slope<T>(d, beta) * scale;
        }
    });
}

// The arguments both entry points share: dtype, shape, reduction (0 none, 1 mean, 2 sum) and
// beta >= 0 (the frontend refuses a negative one; checked again so no kernel sees it).
struct LossArgs {
    int dtype, nd, reduction;
    int64_t shape[MAX_DIMS];
    double beta;
};

LossArgs parse_loss_args(PyObject* const* args, const char* fname) {
    LossArgs l;
    l.dtype = float_dtype(args[0], fname);
    l.nd = parse_shape(args[1], l.shape, fname);
    const int64_t reduction = arg_int(args[2], fname, "reduction");
    if (reduction < 0 || reduction > 2)
        value_error(std::string(fname) + ": reduction must be 0 (none), 1 (mean) or 2 (sum)");
    l.reduction = static_cast<int>(reduction);
    l.beta = arg_double(args[3], fname, "beta");
    if (!(l.beta >= 0)) value_error(std::string(fname) + ": beta must be >= 0");
    return l;
}

PyObject* py_smooth_l1_loss(PyObject* const* args, Py_ssize_t nargs) {
    // smooth_l1_loss(dtype, shape, reduction, beta, out, a, b)
    const char* fname = "smooth_l1_loss";
    check_nargs(nargs, 7, fname);
    const LossArgs l = parse_loss_args(args, fname);
    Operand out, a, b;
    parse_operand(args[4], l.dtype, l.reduction == 0 ? l.nd : 0, l.shape, out, fname, "out", false, true);
    parse_operand(args[5], l.dtype, l.nd, l.shape, a, fname, "a", false, false);
    parse_operand(args[6], l.dtype, l.nd, l.shape, b, fname, "b", false, false);
    const int64_t n = numel_of(l.nd, l.shape);
    if (n == 0 && l.reduction == 0) return none();
    ReleaseGil nogil(n >= PARALLEL_THRESHOLD);
    if (l.dtype == kFloat32)
        smooth_l1_loss_T<float>(l.nd, l.shape, l.reduction, static_cast<float>(l.beta), out, a, b);
    else
        smooth_l1_loss_T<double>(l.nd, l.shape, l.reduction, l.beta, out, a, b);
    return none();
}

PyObject* py_smooth_l1_loss_backward(PyObject* const* args, Py_ssize_t nargs) {
    // smooth_l1_loss_backward(dtype, shape, reduction, beta, out, grad, a, b)
    const char* fname = "smooth_l1_loss_backward";
    check_nargs(nargs, 8, fname);
    const LossArgs l = parse_loss_args(args, fname);
    Operand out, grad, a, b;
    parse_operand(args[4], l.dtype, l.nd, l.shape, out, fname, "out", false, true);
    parse_operand(args[5], l.dtype, l.reduction == 0 ? l.nd : 0, l.shape, grad, fname, "grad", false, false);
    parse_operand(args[6], l.dtype, l.nd, l.shape, a, fname, "a", false, false);
    parse_operand(args[7], l.dtype, l.nd, l.shape, b, fname, "b", false, false);
    const int64_t n = numel_of(l.nd, l.shape);
    if (n == 0) return none();
    ReleaseGil nogil(n >= PARALLEL_THRESHOLD);
    if (l.dtype == kFloat32)
        smooth_l1_loss_backward_T<float>(l.nd, l.shape, l.reduction, static_cast<float>(l.beta), out, grad, a, b);
    else
        smooth_l1_loss_backward_T<double>(l.nd, l.shape, l.reduction, l.beta, out, grad, a, b);
    return none();
}

// --- layer_norm ----------------------------------------------------------------------------
// One row; Unit = 1 promises unit strides everywhere, so that the loops vectorize. The sums are
// four interleaved double partial sums (no reassociation is needed for the compiler to keep them).
template <class T, int Unit>
void normalize_row(const T* x, T* y, int64_t n, int64_t xs, int64_t ys, const T* W, const T* B, double eps,
                   int64_t ws = 1, int64_t bs = 1) {
    if (Unit) xs = ys = ws = bs = 1;
    double s[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int j = 0; j < 4; ++j) s[j] += x[(i + j) * xs];
    for (; i < n; ++i) s[0] += x[i * xs];
    const T mean = static_cast<T>(((s[0] + s[1]) + (s[2] + s[3])) / static_cast<double>(n));
    double q[4] = {0, 0, 0, 0};
    for (i = 0; i + 4 <= n; i += 4)
        for (int j = 0; j < 4; ++j) {
            const double c = x[(i + j) * xs] - mean;
            q[j] += c * c;
        }
    for (; i < n; ++i) {
        const double c = x[i * xs] - mean;
        q[0] += c * c;
    }
    const T var = static_cast<T>(((q[0] + q[1]) + (q[2] + q[3])) / static_cast<double>(n));
    const T rstd = static_cast<T>(1.0 / std::sqrt(static_cast<double>(var + static_cast<T>(eps))));
    if (W && B) {
        for (i = 0; i < n; ++i) y[i * ys] = (x[i * xs] - mean) * rstd * W[i * ws] + B[i * bs];
    } else if (W) {
        for (i = 0; i < n; ++i) y[i * ys] = (x[i * xs] - mean) * rstd * W[i * ws];
    } else if (B) {
        for (i = 0; i < n; ++i) y[i * ys] = (x[i * xs] - mean) * rstd + B[i * bs];
    } else {
        for (i = 0; i < n; ++i) y[i * ys] = (x[i * xs] - mean) * rstd;
    }
}

template <class T> void normalize_contiguous_row(const T* x, T* y, int64_t n, const T* W, const T* B, double eps) {
#ifdef TP_X86_SIMD
    if constexpr (std::is_same_v<T, float>) TP_RETURN_WIDEST_LANES(layer_norm_row(x, y, n, W, B, eps));
#endif
    normalize_row<T, 1>(x, y, n, 1, 1, W, B, eps);
}

// Each row: mean and (biased) variance in double, two passes; out = (x - mean) * rstd * w + b.
// Weight and bias are 1-d (stride 0 or more).
template <class T>
void layer_norm_T(int64_t rows, int64_t cols, Operand& out, Operand& a, const Operand* w, const Operand* b, double eps) {
    const T* A = reinterpret_cast<const T*>(a.data);
    T* O = reinterpret_cast<T*>(out.data);
    const T* W = w ? reinterpret_cast<const T*>(w->data) : nullptr;
    const T* B = b ? reinterpret_cast<const T*>(b->data) : nullptr;
    const int64_t ws = w ? w->strides[0] : 0, bs = b ? b->strides[0] : 0;
    const int64_t nchunks = rows * cols >= PARALLEL_THRESHOLD ? g_num_threads * CHUNKS_PER_THREAD : 1;
    parallel_chunks(rows, nchunks, [&](int64_t, int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const T* x = A + r * a.strides[0];
            T* y = O + r * out.strides[0];
            const int64_t xs = a.strides[1], ys = out.strides[1];
            if (xs == 1 && ys == 1 && (!W || ws == 1 || cols == 1) && (!B || bs == 1 || cols == 1))
                normalize_contiguous_row<T>(x, y, cols, W, B, eps);
            else
                normalize_row<T, 0>(x, y, cols, xs, ys, W, B, eps, ws, bs);
        }
    });
}

PyObject* py_layer_norm(PyObject* const* args, Py_ssize_t nargs) {
    // layer_norm(dtype, rows, cols, out, a, weight, bias, eps); weight and bias may be None
    const char* fname = "layer_norm";
    check_nargs(nargs, 8, fname);
    int dtype = float_dtype(args[0], fname);
    int64_t shape[2] = {arg_int(args[1], fname, "rows"), arg_int(args[2], fname, "cols")};
    if (shape[0] < 0 || shape[1] < 0) value_error("layer_norm: sizes must be >= 0");
    double eps = arg_double(args[7], fname, "eps");
    Operand out, a, w, b;
    parse_operand(args[3], dtype, 2, shape, out, fname, "out", false, true);
    parse_operand(args[4], dtype, 2, shape, a, fname, "a", false, false);
    const Operand *wp = nullptr, *bp = nullptr;
    if (args[5] != Py_None) {
        parse_operand(args[5], dtype, 1, shape + 1, w, fname, "weight", false, false);
        wp = &w;
    }
    if (args[6] != Py_None) {
        parse_operand(args[6], dtype, 1, shape + 1, b, fname, "bias", false, false);
        bp = &b;
    }
    if (shape[0] == 0 || shape[1] == 0) return none();
    ReleaseGil nogil(shape[0] * shape[1] >= PARALLEL_THRESHOLD);
    if (dtype == kFloat32) layer_norm_T<float>(shape[0], shape[1], out, a, wp, bp, eps);
    else layer_norm_T<double>(shape[0], shape[1], out, a, wp, bp, eps);
    return none();
}

// --- gelu ----------------------------------------------------------------------------------
// x Phi(x) and its derivative Phi(x) + x phi(x) (tanh: PyTorch's approximation and its exact
// derivative), one pass over contiguous data instead of the decomposition's five; the same
// arithmetic order as the decomposition (nn/_activations.py). float32 runs on the widest lanes
// (simd_lanes.inc's gelu_map; one formula for every position: the tail is padded): the exact form
// as x normal_cdf(x) (no erf: 1 + erf cancels for negative x, and erf's branch, division and exp
// made the forward 1.3x PyTorch's), the tanh form with tanh, the slope's density with exp.
constexpr double kSqrtHalf = 0.70710678118654752440, kSqrt2OverPi = 0.79788456080286535588,
                 kInvSqrt2Pi = 0.39894228040143267794, kGeluCubic = 0.044715;

template <class T> inline T gelu_value(T x, bool tanh_form) {
    if (tanh_form) {
        const T inner = (x + x * x * x * static_cast<T>(kGeluCubic)) * static_cast<T>(kSqrt2OverPi);
        return x * static_cast<T>(0.5) * (std::tanh(inner) + static_cast<T>(1));
    }
    return x * static_cast<T>(0.5) * (std::erf(x * static_cast<T>(kSqrtHalf)) + static_cast<T>(1));
}

template <class T> inline T gelu_slope(T x, bool tanh_form) {
    if (tanh_form) {
        const T k = static_cast<T>(kSqrt2OverPi), c = static_cast<T>(kGeluCubic);
        const T t = std::tanh((x + x * x * x * c) * k);
        const T du = k * (static_cast<T>(1) + static_cast<T>(3) * c * x * x);
        return static_cast<T>(0.5) * (static_cast<T>(1) + t) + static_cast<T>(0.5) * x * (static_cast<T>(1) - t * t) * du;
    }
    const T cdf = static_cast<T>(0.5) * (std::erf(x * static_cast<T>(kSqrtHalf)) + static_cast<T>(1));
    return cdf + x * std::exp(x * x * static_cast<T>(-0.5)) * static_cast<T>(kInvSqrt2Pi);
}

template <class T>
void gelu_T(int64_t n, bool tanh_form, T* out, const T* grad, int64_t grad_step, const T* a) {
    parallel_range(n, PARALLEL_THRESHOLD, [&](int64_t b, int64_t e) {
#ifdef TP_X86_SIMD
        if constexpr (std::is_same_v<T, float>)
            TP_RETURN_WIDEST_LANES(gelu_map(a + b, grad ? grad + b * grad_step : nullptr, grad_step, out + b, e - b, tanh_form));
#endif
        for (int64_t i = b; i < e; ++i)
            out[i] = grad ? grad[i * grad_step] * gelu_slope<T>(a[i], tanh_form) : gelu_value<T>(a[i], tanh_form);
    });
}

PyObject* py_gelu(PyObject* const* args, Py_ssize_t nargs) {
    // gelu(dtype, tanh_form, n, out, grad_or_None, a): contiguous operands of n elements
    const char* fname = "gelu";
    check_nargs(nargs, 6, fname);
    const int dtype = arg_dtype(args[0], fname);
    if (dtype != kFloat32 && dtype != kFloat64) value_error("gelu: float32 and float64 only");
    const bool tanh_form = arg_int(args[1], fname, "tanh_form") != 0;
    int64_t shape[1] = {arg_int(args[2], fname, "n")};
    if (shape[0] < 0) value_error("gelu: n must be >= 0");
    Operand out, grad, a;
    parse_operand(args[3], dtype, 1, shape, out, fname, "out", false, true);
    const bool backward = args[4] != Py_None;
    if (backward) parse_operand(args[4], dtype, 1, shape, grad, fname, "grad", false, false);
    parse_operand(args[5], dtype, 1, shape, a, fname, "a", false, false);
    if (shape[0] == 0) return none();
    if (out.strides[0] != 1 || a.strides[0] != 1 || (backward && grad.strides[0] != 1 && grad.strides[0] != 0))
        value_error("gelu: contiguous operands only (and a gradient of stride 0)");
    const int64_t grad_step = backward ? grad.strides[0] : 0;
    ReleaseGil nogil(shape[0] >= PARALLEL_THRESHOLD);
    if (dtype == kFloat32)
        gelu_T<float>(shape[0], tanh_form, reinterpret_cast<float*>(out.data),
                      backward ? reinterpret_cast<const float*>(grad.data) : nullptr, grad_step,
                      reinterpret_cast<const float*>(a.data));
    else
        gelu_T<double>(shape[0], tanh_form, reinterpret_cast<double*>(out.data),
                       backward ? reinterpret_cast<const double*>(grad.data) : nullptr, grad_step,
                       reinterpret_cast<const double*>(a.data));
    return none();
}

}  // namespace

void register_nn(std::vector<PyMethodDef>& methods) {
    methods.push_back(fast_method<py_gelu>(
        "gelu", "gelu(dtype, tanh_form, n, out, grad, a): out = gelu(a), or grad * gelu'(a) when grad is not None "
                "(contiguous operands of n elements; grad may have stride 0)."));
    methods.push_back(fast_method<py_softmax>(
        "softmax", "softmax(dtype, log, outer, size, inner, out, a): (log_)softmax over dim 1 of (outer, size, inner)."));
    methods.push_back(fast_method<py_max_pool2d>(
        "max_pool2d", "max_pool2d(dtype, shape, out_hw, out, indices, a, kernel, stride, padding, dilation); "
                      "indices may be None."));
    methods.push_back(fast_method<py_max_pool2d_backward>(
        "max_pool2d_backward", "max_pool2d_backward(dtype, shape, out_hw, grad_input, grad, a, kernel, stride, padding, "
                               "dilation): grad_input (N, C, H, W) contiguous."));
    methods.push_back(fast_method<py_max_pool2d_with_indices_backward>(
        "max_pool2d_with_indices_backward", "max_pool2d_with_indices_backward(dtype, shape, out_hw, grad_input, grad, "
                                            "indices): grad_input (N, C, H, W) contiguous."));
    methods.push_back(fast_method<py_cross_entropy>(
        "cross_entropy", "cross_entropy(dtype, n, c, r, reduction, out, a, target, weight, ignore_index, "
                         "label_smoothing): reduction 0 none (out (N, R)), 1 mean, 2 sum (out 0-d)."));
    methods.push_back(fast_method<py_cross_entropy_backward>(
        "cross_entropy_backward", "cross_entropy_backward(dtype, n, c, r, reduction, out, grad, a, target, weight, "
                                  "ignore_index, label_smoothing): out (N, C, R) contiguous; grad (N, R) for "
                                  "reduction 0, else 0-d."));
    methods.push_back(fast_method<py_smooth_l1_loss>(
        "smooth_l1_loss", "smooth_l1_loss(dtype, shape, reduction, beta, out, a, b): reduction 0 none (out of a's "
                          "shape), 1 mean, 2 sum (out 0-d)."));
    methods.push_back(fast_method<py_smooth_l1_loss_backward>(
        "smooth_l1_loss_backward", "smooth_l1_loss_backward(dtype, shape, reduction, beta, out, grad, a, b): the "
                                   "gradient of a into out (a's shape); grad of a's shape for reduction 0, else 0-d."));
    methods.push_back(fast_method<py_avg_pool2d>(
        "avg_pool2d", "avg_pool2d(dtype, shape, out_hw, out, a, kernel, stride, padding, count_include_pad, divisor); "
                      "divisor 0: none."));
    methods.push_back(fast_method<py_layer_norm>(
        "layer_norm", "layer_norm(dtype, rows, cols, out, a, weight, bias, eps): normalize each row of (rows, cols)."));
}

}  // namespace tp
