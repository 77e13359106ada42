// matmul(dtype, batch, m, n, k, out, a, b): out[b] = a[b] @ b[b]
// float32/float64 go to OpenBLAS (scipy_cblas_*gemm) whenever each operand is a BLAS layout
// (one unit stride, a valid leading dim), else through a contiguous copy; tiny matrices and the
// other dtypes use a cache-friendly i-k-j loop accumulating in float (16-bit floats) or int64.
#include <climits>
#include <vector>

#include <cblas.h>

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
    sync_blas_threads();
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

template <class T> void matmul_T(int64_t batch, int64_t m, int64_t n, int64_t k, Operand& out, Operand& a, Operand& b) {
    T* O = reinterpret_cast<T*>(out.data);
    const T* Ap = reinterpret_cast<const T*>(a.data);
    const T* Bp = reinterpret_cast<const T*>(b.data);
    const int64_t *os = out.strides, *as = a.strides, *bs = b.strides;
    constexpr bool blas = std::is_same_v<T, float> || std::is_same_v<T, double>;
    const bool fits_int = m <= INT_MAX && n <= INT_MAX && k <= INT_MAX;
    const bool tiny = m * n * k <= 4096;
    if constexpr (blas) {
        if (fits_int && !tiny) {
            BlasLayout la = blas_layout(m, k, as[1], as[2]);
            BlasLayout lb = blas_layout(k, n, bs[1], bs[2]);
            BlasLayout lo = blas_layout(m, n, os[1], os[2]);
            if (lo.trans) lo.ok = false;
            std::vector<T> ta, tb, to;
            if (!la.ok) ta.resize(static_cast<size_t>(m * k));
            if (!lb.ok) tb.resize(static_cast<size_t>(k * n));
            if (!lo.ok) to.resize(static_cast<size_t>(m * n));
            for (int64_t bi = 0; bi < batch; ++bi) {
                const T* A = Ap + bi * as[0];
                const T* B = Bp + bi * bs[0];
                T* C = O + bi * os[0];
                bool tra = la.trans, trb = lb.trans;
                int64_t lda = la.ld, ldb = lb.ld, ldc = lo.ld;
                if (!la.ok) {
                    for (int64_t i = 0; i < m; ++i)
                        for (int64_t p = 0; p < k; ++p) ta[i * k + p] = A[i * as[1] + p * as[2]];
                    A = ta.data();
                    tra = false;
                    lda = std::max<int64_t>(k, 1);
                }
                if (!lb.ok) {
                    for (int64_t p = 0; p < k; ++p)
                        for (int64_t j = 0; j < n; ++j) tb[p * n + j] = B[p * bs[1] + j * bs[2]];
                    B = tb.data();
                    trb = false;
                    ldb = std::max<int64_t>(n, 1);
                }
                T* Cw = lo.ok ? C : to.data();
                if (!lo.ok) ldc = std::max<int64_t>(n, 1);
                gemm<T>(tra, trb, m, n, k, A, lda, B, ldb, Cw, ldc);
                if (!lo.ok)
                    for (int64_t i = 0; i < m; ++i)
                        for (int64_t j = 0; j < n; ++j) C[i * os[1] + j * os[2]] = to[i * n + j];
            }
            return;
        }
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

}  // namespace

void register_matmul(std::vector<PyMethodDef>& methods) {
    methods.push_back(fast_method<py_matmul>(
        "matmul", "matmul(dtype, batch, m, n, k, out, a, b): operands carry (batch, row, col) strides."));
}

}  // namespace tp
