// matmul(dtype, batch, m, n, k, out, a, b): out[b] = a[b] @ b[b]
// linear(dtype, m, n, k, out, a, w, bias): out = a @ w^T + bias (the fused linear op)
// float32/float64 go to OpenBLAS (scipy_cblas_*gemm) whenever each operand is a BLAS layout
// (one unit stride, a valid leading dim), else through a contiguous copy, in blocks of single-
// threaded calls on our own threads (blas_matmul); float16/bfloat16 products big enough to
// repay it are widened to float32 copies for the same sgemm (half_matmul), or, for bfloat16 on a CPU
// with bf16 dot products, multiplied as they are (bf16_matmul); tiny matrices and the
// other dtypes use a cache-friendly i-k-j loop accumulating in float (16-bit floats) or int64.
#include <algorithm>
#include <climits>
#include <memory>
#include <vector>

#include <cblas.h>

#include "bf16_gemm.h"
#include "families.h"

namespace tp {

namespace {

struct BlasLayout {
    bool ok;
    bool trans;
    int64_t ld;
};

// A rows x cols matrix with element strides (rs, cs), as row-major BLAS sees it.
BlasLayout blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
    // A dim of size 1 has no meaningful stride: pick whatever makes the layout valid.
    int64_t r1 = rows == 1 ? std::max<int64_t>(cols, 1) : rs;
    int64_t c1 = cols == 1 ? 1 : cs;
    if (c1 == 1 && r1 >= std::max<int64_t>(1, cols) && r1 <= INT_MAX) return {true, false, r1};
    int64_t r2 = rows == 1 ? 1 : rs;
    int64_t c2 = cols == 1 ? std::max<int64_t>(rows, 1) : cs;
    if (r2 == 1 && c2 >= std::max<int64_t>(1, rows) && c2 <= INT_MAX) return {true, true, c2};
    return {false, false, 0};
}

template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T* c,
          int64_t ldc) {
    const auto TA = ta ? CblasTrans : CblasNoTrans;
    const auto TB = tb ? CblasTrans : CblasNoTrans;
    if constexpr (std::is_same_v<T, float>)
        scipy_cblas_sgemm(CblasRowMajor, TA, TB, (int)m, (int)n, (int)k, 1.0f, a, (int)lda, b, (int)ldb, 0.0f, c,
                          (int)ldc);
    else
        scipy_cblas_dgemm(CblasRowMajor, TA, TB, (int)m, (int)n, (int)k, 1.0, a, (int)lda, b, (int)ldb, 0.0, c,
                          (int)ldc);
}

template <class T> using mm_acc_t = std::conditional_t<is_floating<T>, compute_t<T>, int64_t>;

// out (m x n) = a (m x k) @ b (k x n); strides in elements; row is a scratch row of n accumulators.
template <class T>
void naive_mm(const T* a, int64_t ars, int64_t acs, const T* b, int64_t brs, int64_t bcs, T* o, int64_t ors,
              int64_t ocs, int64_t m, int64_t n, int64_t k, mm_acc_t<T>* row) {
    using A = mm_acc_t<T>;
    for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) row[j] = A(0);
        for (int64_t p = 0; p < k; ++p) {
            const A av = static_cast<A>(to_c(a[i * ars + p * acs]));
            const T* bp = b + p * brs;
            if (bcs == 1) {
                for (int64_t j = 0; j < n; ++j) row[j] += av * static_cast<A>(to_c(bp[j]));
            } else {
                for (int64_t j = 0; j < n; ++j) row[j] += av * static_cast<A>(to_c(bp[j * bcs]));
            }
        }
        for (int64_t j = 0; j < n; ++j) o[i * ors + j * ocs] = convert<T>(row[j]);
    }
}

// A (batch, rows, cols) operand with strides st as a contiguous copy, for the layouts BLAS
// cannot read.
template <class T> std::vector<T> dense_copy(const T* p, int64_t batch, int64_t rows, int64_t cols, const int64_t* st) {
    std::vector<T> d(static_cast<size_t>(batch * rows * cols));
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t i = 0; i < rows; ++i)
            for (int64_t j = 0; j < cols; ++j) d[(b * rows + i) * cols + j] = p[b * st[0] + i * st[1] + j * st[2]];
    return d;
}

// Products below this many multiply-adds run as one OpenBLAS call on the calling thread.
constexpr int64_t kParallelGemmWork = int64_t(1) << 21;
// Output blocks per thread: enough for a busy core's share to move to the other thread, few
// enough that each block still amortizes packing the operand it shares with the others.
constexpr int64_t kGemmBlocksPerThread = 2;
// Block edges are multiples of this (OpenBLAS's float32 micro-kernels are 16 or 8 rows wide).
constexpr int64_t kGemmBlockAlign = 16;

// Each product is split into blocks of rows or columns of its output (the longer side), and
// the blocks of every product run as single-threaded OpenBLAS calls on our own threads. With
// OpenBLAS threading each call instead, its threads spin beside ours, a busy core slows the
// equal shares it splits every call into (2-thread sgemm fell from 129-148 to 64-69 GFLOP/s
// with the other core busy; issue 14), and a batch of small products ran one after another.
// The blocks depend only on the shapes and tp.get_num_threads(), so results do not depend on
// the machine's load.
template <class T>
void blas_matmul(int64_t batch, int64_t m, int64_t n, int64_t k, Operand& out, Operand& a, Operand& b) {
    const int64_t *os = out.strides, *as = a.strides, *bs = b.strides;
    const T* Ap = reinterpret_cast<const T*>(a.data);
    const T* Bp = reinterpret_cast<const T*>(b.data);
    BlasLayout la = blas_layout(m, k, as[1], as[2]);
    BlasLayout lb = blas_layout(k, n, bs[1], bs[2]);
    BlasLayout lo = blas_layout(m, n, os[1], os[2]);
    if (lo.trans) lo.ok = false;
    int64_t abatch = as[0], bbatch = bs[0];
    std::vector<T> ta, tb, to;
    if (!la.ok) {
        ta = dense_copy(Ap, batch, m, k, as);
        Ap = ta.data();
        la = {true, false, std::max<int64_t>(k, 1)};
        abatch = m * k;
    }
    if (!lb.ok) {
        tb = dense_copy(Bp, batch, k, n, bs);
        Bp = tb.data();
        lb = {true, false, std::max<int64_t>(n, 1)};
        bbatch = k * n;
    }
    T* O = reinterpret_cast<T*>(out.data);
    T* C = O;
    int64_t cbatch = os[0], ldc = lo.ld;
    if (!lo.ok) {
        to.resize(static_cast<size_t>(batch * m * n));
        C = to.data();
        cbatch = m * n;
        ldc = std::max<int64_t>(n, 1);
    }
    // Products first, then blocks of rows or columns, for kGemmBlocksPerThread tasks a thread.
    int64_t mblocks = 1, nblocks = 1;
    const int64_t work = batch * m * n * std::max<int64_t>(k, 1);
    const int64_t want =
        work >= kParallelGemmWork && g_num_threads > 1 ? int64_t(g_num_threads) * kGemmBlocksPerThread : 1;
    if (batch < want) {
        const int64_t per_product = (want + batch - 1) / batch;
        const int64_t side = std::max(m, n);
        const int64_t blocks = std::max<int64_t>(1, std::min(per_product, side / kGemmBlockAlign));
        (m >= n ? mblocks : nblocks) = blocks;
    }
    const int64_t mstep = (m + mblocks - 1) / mblocks, nstep = (n + nblocks - 1) / nblocks;
    const int64_t mb = (mstep + kGemmBlockAlign - 1) / kGemmBlockAlign * kGemmBlockAlign;
    const int64_t nb = (nstep + kGemmBlockAlign - 1) / kGemmBlockAlign * kGemmBlockAlign;
    mblocks = (m + mb - 1) / mb;
    nblocks = (n + nb - 1) / nb;
    const int64_t per_batch = mblocks * nblocks, tasks = batch * per_batch;
    serial_blas();
    parallel_chunks(tasks, want > 1 ? tasks : 1, [&](int64_t, int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) {
            const int64_t bi = t / per_batch, i0 = (t % per_batch) / nblocks * mb, j0 = (t % nblocks) * nb;
            const int64_t rows = std::min(mb, m - i0), cols = std::min(nb, n - j0);
            // Row i0 of A (row i0 * lda, or column i0 when A is transposed); column j0 of B.
            const T* A = Ap + bi * abatch + i0 * (la.trans ? 1 : la.ld);
            const T* B = Bp + bi * bbatch + j0 * (lb.trans ? lb.ld : 1);
            gemm<T>(la.trans, lb.trans, rows, cols, k, A, la.ld, B, lb.ld, C + bi * cbatch + i0 * ldc + j0, ldc);
        }
    });
    if (!lo.ok)
        for (int64_t bi = 0; bi < batch; ++bi)
            for (int64_t i = 0; i < m; ++i)
                for (int64_t j = 0; j < n; ++j) O[bi * os[0] + i * os[1] + j * os[2]] = to[(bi * m + i) * n + j];
}

// A (batch, rows, cols) operand with strides st widened to a contiguous float32 copy.
template <class T> void widen(const T* p, int64_t batch, int64_t rows, int64_t cols, const int64_t* st, float* d) {
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t i = 0; i < rows; ++i) {
            const T* row = p + b * st[0] + i * st[1];
            float* drow = d + (b * rows + i) * cols;
            for (int64_t j = 0; j < cols; ++j) drow[j] = static_cast<float>(to_c(row[j * st[2]]));
        }
}

// float16/bfloat16: the loop below runs at ~1 GFLOP/s (autocast's matmuls, 48x slower than
// float32 on a 256x512x512 product), so widen both operands to float32, multiply with sgemm
// (float32 accumulation, as the loop and PyTorch's CPU kernels do) and round each result once.
// The copies cost O(mk + kn + mn) beside the product's O(mnk).
template <class T>
void half_matmul(int64_t batch, int64_t m, int64_t n, int64_t k, Operand& out, Operand& a, Operand& b) {
    std::vector<float> fa(static_cast<size_t>(batch * m * k)), fb(static_cast<size_t>(batch * k * n)),
        fo(static_cast<size_t>(batch * m * n));
    widen(reinterpret_cast<const T*>(a.data), batch, m, k, a.strides, fa.data());
    widen(reinterpret_cast<const T*>(b.data), batch, k, n, b.strides, fb.data());
    Operand wa, wb, wo;
    wa.data = reinterpret_cast<char*>(fa.data());
    wb.data = reinterpret_cast<char*>(fb.data());
    wo.data = reinterpret_cast<char*>(fo.data());
    const int64_t sa[3] = {m * k, k, 1}, sb[3] = {k * n, n, 1}, so[3] = {m * n, n, 1};
    std::copy(sa, sa + 3, wa.strides);
    std::copy(sb, sb + 3, wb.strides);
    std::copy(so, so + 3, wo.strides);
    blas_matmul<float>(batch, m, n, k, wo, wa, wb);
    T* O = reinterpret_cast<T*>(out.data);
    const int64_t* os = out.strides;
    for (int64_t bi = 0; bi < batch; ++bi)
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) O[bi * os[0] + i * os[1] + j * os[2]] = convert<T>(fo[(bi * m + i) * n + j]);
}

// bfloat16 where the CPU has bf16 dot products: bf16_gemm reads the operands at their strides
// (no widened copies) and sums in float32, and each result is rounded once, as in half_matmul.
// It runs at about twice sgemm's speed (docs/performance.md).
void bf16_matmul(int64_t batch, int64_t m, int64_t n, int64_t k, Operand& out, Operand& a, Operand& b) {
    std::unique_ptr<float[]> fo(new float[static_cast<size_t>(m * n)]);
    const uint16_t* A = reinterpret_cast<const uint16_t*>(a.data);
    const uint16_t* B = reinterpret_cast<const uint16_t*>(b.data);
    bf16_t* O = reinterpret_cast<bf16_t*>(out.data);
    const int64_t *as = a.strides, *bs = b.strides, *os = out.strides;
    for (int64_t bi = 0; bi < batch; ++bi) {
        bf16_gemm(m, n, k, A + bi * as[0], as[1], as[2], B + bi * bs[0], bs[1], bs[2], fo.get(), n, true);
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) O[bi * os[0] + i * os[1] + j * os[2]] = convert<bf16_t>(fo[i * n + j]);
    }
}

template <class T> void matmul_T(int64_t batch, int64_t m, int64_t n, int64_t k, Operand& out, Operand& a, Operand& b) {
    T* O = reinterpret_cast<T*>(out.data);
    const T* Ap = reinterpret_cast<const T*>(a.data);
    const T* Bp = reinterpret_cast<const T*>(b.data);
    const int64_t *os = out.strides, *as = a.strides, *bs = b.strides;
    constexpr bool blas = std::is_same_v<T, float> || std::is_same_v<T, double>;
    const bool fits_int = m <= INT_MAX && n <= INT_MAX && k <= INT_MAX;
    const bool tiny = m * n * k <= 4096;
    if constexpr (blas) {
        if (fits_int && !tiny) return blas_matmul<T>(batch, m, n, k, out, a, b);
    }
    if constexpr (std::is_same_v<T, bf16_t>) {
        if (fits_int && !tiny && have_bf16_dot()) return bf16_matmul(batch, m, n, k, out, a, b);
    }
    if constexpr (is_half_like<T>) {
        if (fits_int && !tiny) return half_matmul<T>(batch, m, n, k, out, a, b);
    }
    const int64_t work = batch * m * n * std::max<int64_t>(k, 1);
    parallel_range(batch, work >= PARALLEL_THRESHOLD ? 1 : std::numeric_limits<int64_t>::max(),
                   [&](int64_t b0, int64_t b1) {
                       std::vector<mm_acc_t<T>> row(static_cast<size_t>(n));
                       for (int64_t bi = b0; bi < b1; ++bi)
                           naive_mm<T>(Ap + bi * as[0], as[1], as[2], Bp + bi * bs[0], bs[1], bs[2], O + bi * os[0],
                                       os[1], os[2], m, n, k, row.data());
                   });
}

PyObject* py_matmul(PyObject* const* args, Py_ssize_t nargs) {
    const char* fname = "matmul";
    check_nargs(nargs, 8, fname);
    int dtype = arg_dtype(args[0], fname);
    if (dtype == kBool) value_error("matmul: bool is not supported");
    int64_t batch = arg_int(args[1], fname, "batch"), m = arg_int(args[2], fname, "m"),
            n = arg_int(args[3], fname, "n"), k = arg_int(args[4], fname, "k");
    if (batch < 0 || m < 0 || n < 0 || k < 0) value_error("matmul: sizes must be >= 0");
    int64_t oshape[3] = {batch, m, n}, ashape[3] = {batch, m, k}, bshape[3] = {batch, k, n};
    Operand out, a, b;
    parse_operand(args[5], dtype, 3, oshape, out, fname, "out", false, true);
    parse_operand(args[6], dtype, 3, ashape, a, fname, "a", false, false);
    parse_operand(args[7], dtype, 3, bshape, b, fname, "b", false, false);
    if (batch == 0 || m == 0 || n == 0) return none();
    ReleaseGil nogil(batch * m * n * k >= PARALLEL_THRESHOLD);
    TP_DISPATCH(dtype, T, if constexpr (!is_bool<T>) matmul_T<T>(batch, m, n, k, out, a, b));
    return none();
}

// One layer: the product exactly as matmul computes it (so the result rounds as the
// decomposition's `input @ weight.t() + bias` does), then the bias added to every row. One call
// instead of the decomposition's transpose view, product and broadcast add: on the small layers
// of issue 14 those calls, not the arithmetic, were the cost.
template <class T> void linear_T(int64_t m, int64_t n, int64_t k, Operand& out, Operand& a, Operand& w, const Operand* bias) {
    matmul_T<T>(1, m, n, k, out, a, w);
    if (!bias) return;
    T* O = reinterpret_cast<T*>(out.data);
    const T* B = reinterpret_cast<const T*>(bias->data);
    const int64_t ors = out.strides[1], ocs = out.strides[2], bs = bias->strides[0];
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) O[i * ors + j * ocs] += B[j * bs];
}

// A 2-d operand as matmul's (batch, row, col) operand of batch 1; `transposed` swaps its dims.
void as_single_batch(Operand& op, bool transposed) {
    const int64_t rows = op.strides[0], cols = op.strides[1];
    op.strides[0] = 0;
    op.strides[1] = transposed ? cols : rows;
    op.strides[2] = transposed ? rows : cols;
}

PyObject* py_linear(PyObject* const* args, Py_ssize_t nargs) {
    // linear(dtype, m, n, k, out, a, w, bias): out (m, n), a (m, k), w (n, k), bias (n,) or None
    const char* fname = "linear";
    check_nargs(nargs, 8, fname);
    const int dtype = float_dtype(args[0], fname);
    const int64_t m = arg_int(args[1], fname, "m"), n = arg_int(args[2], fname, "n"), k = arg_int(args[3], fname, "k");
    if (m < 0 || n < 0 || k < 0) value_error("linear: sizes must be >= 0");
    const int64_t oshape[2] = {m, n}, ashape[2] = {m, k}, wshape[2] = {n, k};
    Operand out, a, w, bias;
    parse_operand(args[4], dtype, 2, oshape, out, fname, "out", false, true);
    parse_operand(args[5], dtype, 2, ashape, a, fname, "a", false, false);
    parse_operand(args[6], dtype, 2, wshape, w, fname, "w", false, false);
    const Operand* bp = nullptr;
    if (args[7] != Py_None) {
        parse_operand(args[7], dtype, 1, oshape + 1, bias, fname, "bias", false, false);
        bp = &bias;
    }
    if (m == 0 || n == 0) return none();
    as_single_batch(out, false);
    as_single_batch(a, false);
    as_single_batch(w, true);
    ReleaseGil nogil(m * n * k >= PARALLEL_THRESHOLD);
    if (dtype == kFloat32) linear_T<float>(m, n, k, out, a, w, bp);
    else linear_T<double>(m, n, k, out, a, w, bp);
    return none();
}

PyObject* py_has_bf16_dot(PyObject* const*, Py_ssize_t nargs) {
    check_nargs(nargs, 0, "has_bf16_dot");
    return PyBool_FromLong(have_bf16_dot());
}

}  // namespace

void register_matmul(std::vector<PyMethodDef>& methods) {
    methods.push_back(fast_method<py_matmul>(
        "matmul", "matmul(dtype, batch, m, n, k, out, a, b): operands carry (batch, row, col) strides."));
    methods.push_back(fast_method<py_linear>(
        "linear", "linear(dtype, m, n, k, out, a, w, bias): out (m, n) = a (m, k) @ w (n, k)^T + bias (n,); bias may "
                  "be None."));
    methods.push_back(fast_method<py_has_bf16_dot>(
        "has_bf16_dot", "has_bf16_dot(): whether bfloat16 matmul and conv2d run on the CPU's bf16 dot products."));
}

}  // namespace tp
