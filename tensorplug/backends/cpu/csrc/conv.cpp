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
#include <cblas.h>

#include <climits>
#include <memory>
#include <vector>

#include "families.h"

namespace tp {

namespace {

struct ConvGeometry {
    int64_t n, c, h, w, o, cg, kh, kw, oh, ow, groups;
    int64_t s[2], p[2], d[2];
};

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

template <class T> void conv2d_input_backward_T(const ConvGeometry& g, Operand& out, Operand& grad, Operand& weight) {
    const T* G = reinterpret_cast<const T*>(grad.data);
    const T* Wt = reinterpret_cast<const T*>(weight.data);
    T* O = reinterpret_cast<T*>(out.data);
    const int64_t og = g.o / g.groups, k = g.cg * g.kh * g.kw, plane = g.oh * g.ow, image = g.c * g.h * g.w;
    if (k == 0 || og == 0) {
        std::fill(O, O + g.n * image, T(0));
        return;
    }
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
    int dtype = float_dtype(args[0], fname);
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
    if (dtype == kFloat32) conv2d_T<float>(g, out, a, weight, bp);
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
