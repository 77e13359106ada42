// Whole recurrent layer directions in one call each (issue 14): lstm_forward / lstm_backward,
// gru_forward / gru_backward, rnn_forward / rnn_backward (Elman, tanh or relu).
//
// A Python loop over time steps made ~15 tensor ops and as many autograd nodes per step: an LSTM
// ran 14-16x slower than PyTorch. Here each step is one GEMM (h_{t-1} @ W_hh^T added to the
// step's input projection) and one pass over the gates; backward walks the steps in reverse with
// one GEMM for dh and accumulates dW_hh in two GEMMs at the end. Gates are PyTorch's: (i, f, g, o)
// for the LSTM, (r, z, n) for the GRU. `projected` already holds x W_ih^T + b_ih + b_hh for every
// step, except for the GRU, whose r multiplies the n part of h W_hh^T + b_hh: there b_hh is an
// operand and the GEMM adds onto it.
#include <cmath>
#include <cstring>
#include <vector>

#include <cblas.h>

#include "families.h"
#include "simd.h"

namespace tp {

namespace {

template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T beta,
          T* c, int64_t ldc) {
    if (m == 0 || n == 0) return;
    sync_blas_threads();
    const auto at = ta ? CblasTrans : CblasNoTrans, bt = tb ? CblasTrans : CblasNoTrans;
    if constexpr (std::is_same_v<T, float>)
        scipy_cblas_sgemm(CblasRowMajor, at, bt, (int)m, (int)n, (int)k, 1.0f, a, (int)lda, b, (int)ldb, beta, c,
                          (int)ldc);
    else
        scipy_cblas_dgemm(CblasRowMajor, at, bt, (int)m, (int)n, (int)k, 1.0, a, (int)lda, b, (int)ldb, beta, c,
                          (int)ldc);
}

template <class T> inline T sigmoid(T x) { return T(1) / (T(1) + std::exp(-x)); }

// The gates of one batch row, elements [j0, j1) of each: scalar libm (float64, and float32
// without AVX2).
template <class T> void gates_row(T* g, const T* cprev, T* c, T* h, int64_t H, int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) {
        const T i = sigmoid(g[j]), f = sigmoid(g[H + j]), gg = std::tanh(g[2 * H + j]), o = sigmoid(g[3 * H + j]);
        g[j] = i, g[H + j] = f, g[2 * H + j] = gg, g[3 * H + j] = o;
        const T cn = f * cprev[j] + i * gg;
        c[j] = cn;
        h[j] = o * std::tanh(cn);
    }
}

#ifdef TP_X86_SIMD
// Five exps per element made libm's scalar expf most of the LSTM's time; eight lanes at a time
// with the softmax kernels' polynomial exp (about 1 ulp).

// tanh as (1 - e^-2|x|) / (1 + e^-2|x|) with x's sign; below |x| = 1/16, where that difference
// cancels, the series x - x^3/3 + 2x^5/15 (next term under 1e-9 relative).
TP_AVX2 inline __m256 tanh8(__m256 x) {
    const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
    const __m256 ax = _mm256_andnot_ps(sign, x);
    const __m256 t = lanes8::exp(_mm256_mul_ps(ax, _mm256_set1_ps(-2.0f)));
    __m256 r = _mm256_div_ps(_mm256_sub_ps(one, t), _mm256_add_ps(one, t));
    const __m256 x2 = _mm256_mul_ps(x, x);
    __m256 series = _mm256_fmadd_ps(x2, _mm256_set1_ps(2.0f / 15.0f), _mm256_set1_ps(-1.0f / 3.0f));
    series = _mm256_mul_ps(ax, _mm256_fmadd_ps(series, x2, one));
    r = _mm256_blendv_ps(r, series, _mm256_cmp_ps(ax, _mm256_set1_ps(0.0625f), _CMP_LT_OQ));
    return _mm256_or_ps(r, _mm256_and_ps(sign, x));
}

TP_AVX2 void gates_row_avx2(float* g, const float* cprev, float* c, float* h, int64_t H) {
    int64_t j = 0;
    for (; j + 8 <= H; j += 8) {
        const __m256 i = lanes8::sigmoid(_mm256_loadu_ps(g + j)), f = lanes8::sigmoid(_mm256_loadu_ps(g + H + j));
        const __m256 gg = tanh8(_mm256_loadu_ps(g + 2 * H + j)), o = lanes8::sigmoid(_mm256_loadu_ps(g + 3 * H + j));
        _mm256_storeu_ps(g + j, i);
        _mm256_storeu_ps(g + H + j, f);
        _mm256_storeu_ps(g + 2 * H + j, gg);
        _mm256_storeu_ps(g + 3 * H + j, o);
        const __m256 cn = _mm256_add_ps(_mm256_mul_ps(f, _mm256_loadu_ps(cprev + j)), _mm256_mul_ps(i, gg));
        _mm256_storeu_ps(c + j, cn);
        _mm256_storeu_ps(h + j, _mm256_mul_ps(o, tanh8(cn)));
    }
    gates_row<float>(g, cprev, c, h, H, j, H);
}

// tanh in place over x[0, n) eight at a time; returns how many it did (the tail is the caller's).
TP_AVX2 int64_t tanh_span_avx2(float* x, int64_t n) {
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) _mm256_storeu_ps(x + j, tanh8(_mm256_loadu_ps(x + j)));
    return j;
}
#endif

// acts (L, N, 4H) holds the activated gates afterwards; hs, cs (L, N, H) the states.
template <class T>
void lstm_forward_T(int64_t L, int64_t N, int64_t H, const T* projected, const T* w_hh, const T* h0, const T* c0,
                    T* hs, T* cs, T* acts) {
    const int64_t G = 4 * H;
    for (int64_t t = 0; t < L; ++t) {
        T* gates = acts + t * N * G;
        std::memcpy(gates, projected + t * N * G, sizeof(T) * N * G);
        const T* hprev = t ? hs + (t - 1) * N * H : h0;
        const T* cprev = t ? cs + (t - 1) * N * H : c0;
        gemm<T>(false, true, N, G, H, hprev, H, w_hh, H, T(1), gates, G);
        T* h = hs + t * N * H;
        T* c = cs + t * N * H;
        parallel_range(N, N * H >= PARALLEL_THRESHOLD / 8 ? 1 : N + 1, [&](int64_t n0, int64_t n1) {
            for (int64_t n = n0; n < n1; ++n) {
#ifdef TP_X86_SIMD
                if constexpr (std::is_same_v<T, float>) {
                    if (have_avx2()) {
                        gates_row_avx2(gates + n * G, cprev + n * H, c + n * H, h + n * H, H);
                        continue;
                    }
                }
#endif
                gates_row<T>(gates + n * G, cprev + n * H, c + n * H, h + n * H, H, 0, H);
            }
        });
    }
}

// grad_projected (L, N, 4H), grad_w_hh (4H, H), grad_h0, grad_c0 (N, H) are written.
template <class T>
void lstm_backward_T(int64_t L, int64_t N, int64_t H, const T* w_hh, const T* h0, const T* c0, const T* hs, const T* cs,
                     const T* acts, const T* grad_hs, const T* grad_hn, const T* grad_cn, T* grad_projected,
                     T* grad_w_hh, T* grad_h0, T* grad_c0) {
    const int64_t G = 4 * H;
    std::vector<T> dh(grad_hn, grad_hn + N * H), dc(grad_cn, grad_cn + N * H);
    for (int64_t t = L - 1; t >= 0; --t) {
        const T* a = acts + t * N * G;
        const T* c = cs + t * N * H;
        const T* cprev = t ? cs + (t - 1) * N * H : c0;
        const T* gh = grad_hs + t * N * H;
        T* dg = grad_projected + t * N * G;
        parallel_range(N, N * H >= PARALLEL_THRESHOLD / 8 ? 1 : N + 1, [&](int64_t n0, int64_t n1) {
            for (int64_t n = n0; n < n1; ++n) {
                for (int64_t j = 0; j < H; ++j) {
                    const int64_t k = n * H + j;
                    const T* g = a + n * G;
                    const T i = g[j], f = g[H + j], gg = g[2 * H + j], o = g[3 * H + j];
                    const T tc = std::tanh(c[k]);
                    const T dhk = dh[k] + gh[k];
                    const T dct = dc[k] + dhk * o * (T(1) - tc * tc);
                    T* d = dg + n * G;
                    d[j] = dct * gg * i * (T(1) - i);
                    d[H + j] = dct * cprev[k] * f * (T(1) - f);
                    d[2 * H + j] = dct * i * (T(1) - gg * gg);
                    d[3 * H + j] = dhk * tc * o * (T(1) - o);
                    dc[k] = dct * f;
                }
            }
        });
        gemm<T>(false, false, N, H, G, dg, G, w_hh, H, T(0), dh.data(), H);  // dh_{t-1} = dG_t @ W_hh
    }
    // dW_hh = sum_t dG_t^T h_{t-1}: steps 1.. in one GEMM over the stacked states, step 0 with h0.
    gemm<T>(true, false, G, H, N, grad_projected, G, h0, H, T(0), grad_w_hh, H);
    if (L > 1) gemm<T>(true, false, G, H, (L - 1) * N, grad_projected + N * G, G, hs, H, T(1), grad_w_hh, H);
    if (N * H == 0 || G * H == 0) std::fill(grad_w_hh, grad_w_hh + G * H, T(0));
    std::copy(dh.begin(), dh.end(), grad_h0);
    std::copy(dc.begin(), dc.end(), grad_c0);
}

// --- GRU ------------------------------------------------------------------------------------------
// One batch row of the gate pass, elements [j0, j1): p the row's input projection (3H), rec its
// h W_hh^T + b_hh (3H); writes h and act = (r, z, n, rec_n) (4H), what backward reads.
template <class T>
void gru_row(const T* p, const T* rec, const T* hprev, T* h, T* act, int64_t H, int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) {
        const T r = sigmoid(p[j] + rec[j]), z = sigmoid(p[H + j] + rec[H + j]), hn = rec[2 * H + j];
        const T n = std::tanh(p[2 * H + j] + r * hn);
        act[j] = r, act[H + j] = z, act[2 * H + j] = n, act[3 * H + j] = hn;
        h[j] = (T(1) - z) * n + z * hprev[j];
    }
}

#ifdef TP_X86_SIMD
TP_AVX2 void gru_row_avx2(const float* p, const float* rec, const float* hprev, float* h, float* act, int64_t H) {
    const __m256 one = _mm256_set1_ps(1.0f);
    int64_t j = 0;
    for (; j + 8 <= H; j += 8) {
        const __m256 r = lanes8::sigmoid(_mm256_add_ps(_mm256_loadu_ps(p + j), _mm256_loadu_ps(rec + j)));
        const __m256 z = lanes8::sigmoid(_mm256_add_ps(_mm256_loadu_ps(p + H + j), _mm256_loadu_ps(rec + H + j)));
        const __m256 hn = _mm256_loadu_ps(rec + 2 * H + j);
        const __m256 n = tanh8(_mm256_fmadd_ps(r, hn, _mm256_loadu_ps(p + 2 * H + j)));
        _mm256_storeu_ps(act + j, r);
        _mm256_storeu_ps(act + H + j, z);
        _mm256_storeu_ps(act + 2 * H + j, n);
        _mm256_storeu_ps(act + 3 * H + j, hn);
        _mm256_storeu_ps(h + j, _mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(one, z), n),
                                              _mm256_mul_ps(z, _mm256_loadu_ps(hprev + j))));
    }
    gru_row<float>(p, rec, hprev, h, act, H, j, H);
}
#endif

// hs (L, N, H) and acts (L, N, 4H) are written.
template <class T>
void gru_forward_T(int64_t L, int64_t N, int64_t H, const T* projected, const T* w_hh, const T* b_hh, const T* h0,
                   T* hs, T* acts) {
    const int64_t G = 3 * H, A = 4 * H;
    std::vector<T> rec(N * G);
    for (int64_t t = 0; t < L; ++t) {
        for (int64_t n = 0; n < N; ++n) std::memcpy(rec.data() + n * G, b_hh, sizeof(T) * G);
        const T* hprev = t ? hs + (t - 1) * N * H : h0;
        gemm<T>(false, true, N, G, H, hprev, H, w_hh, H, T(1), rec.data(), G);
        const T* p = projected + t * N * G;
        T* h = hs + t * N * H;
        T* a = acts + t * N * A;
        parallel_range(N, N * H >= PARALLEL_THRESHOLD / 8 ? 1 : N + 1, [&](int64_t n0, int64_t n1) {
            for (int64_t n = n0; n < n1; ++n) {
#ifdef TP_X86_SIMD
                if constexpr (std::is_same_v<T, float>) {
                    if (have_avx2()) {
                        gru_row_avx2(p + n * G, rec.data() + n * G, hprev + n * H, h + n * H, a + n * A, H);
                        continue;
                    }
                }
#endif
                gru_row<T>(p + n * G, rec.data() + n * G, hprev + n * H, h + n * H, a + n * A, H, 0, H);
            }
        });
    }
}

// grad_projected (L, N, 3H), grad_w_hh (3H, H), grad_b_hh (3H), grad_h0 (N, H) are written.
template <class T>
void gru_backward_T(int64_t L, int64_t N, int64_t H, const T* w_hh, const T* h0, const T* hs, const T* acts,
                    const T* grad_hs, const T* grad_hn, T* grad_projected, T* grad_w_hh, T* grad_b_hh, T* grad_h0) {
    const int64_t G = 3 * H, A = 4 * H;
    std::vector<T> dh(grad_hn, grad_hn + N * H);
    // The gradient of every step's h W_hh^T + b_hh: it differs from grad_projected only in the n
    // part (r scales it), and it is kept whole so that dW_hh and db_hh come from it at the end.
    std::vector<T> drec(L * N * G);
    for (int64_t t = L - 1; t >= 0; --t) {
        const T* a = acts + t * N * A;
        const T* hprev = t ? hs + (t - 1) * N * H : h0;
        const T* gh = grad_hs + t * N * H;
        T* dp = grad_projected + t * N * G;
        T* dr = drec.data() + t * N * G;
        parallel_range(N, N * H >= PARALLEL_THRESHOLD / 8 ? 1 : N + 1, [&](int64_t n0, int64_t n1) {
            for (int64_t n = n0; n < n1; ++n) {
                const T* g = a + n * A;
                T* dpn = dp + n * G;
                T* drn = dr + n * G;
                for (int64_t j = 0; j < H; ++j) {
                    const int64_t k = n * H + j;
                    const T r = g[j], z = g[H + j], nn = g[2 * H + j], hn = g[3 * H + j];
                    const T d = dh[k] + gh[k];
                    const T d_n = d * (T(1) - z) * (T(1) - nn * nn);
                    const T d_r = d_n * hn * r * (T(1) - r);
                    const T d_z = d * (hprev[k] - nn) * z * (T(1) - z);
                    dpn[j] = d_r, dpn[H + j] = d_z, dpn[2 * H + j] = d_n;
                    drn[j] = d_r, drn[H + j] = d_z, drn[2 * H + j] = d_n * r;
                    dh[k] = d * z;
                }
            }
        });
        gemm<T>(false, false, N, H, G, dr, G, w_hh, H, T(1), dh.data(), H);  // dh_{t-1} += dRec_t @ W_hh
    }
    gemm<T>(true, false, G, H, N, drec.data(), G, h0, H, T(0), grad_w_hh, H);
    if (L > 1) gemm<T>(true, false, G, H, (L - 1) * N, drec.data() + N * G, G, hs, H, T(1), grad_w_hh, H);
    if (N * H == 0 || G * H == 0) std::fill(grad_w_hh, grad_w_hh + G * H, T(0));
    std::fill(grad_b_hh, grad_b_hh + G, T(0));
    for (int64_t row = 0; row < L * N; ++row) {
        const T* d = drec.data() + row * G;
        for (int64_t j = 0; j < G; ++j) grad_b_hh[j] += d[j];
    }
    std::copy(dh.begin(), dh.end(), grad_h0);
}

// --- Elman RNN ------------------------------------------------------------------------------------
// relu keeps NaN and -0.0, as the relu op does.
template <class T> inline T relu(T x) { return x < T(0) ? T(0) : x; }

template <class T> void tanh_span(T* x, int64_t n) {
    int64_t j = 0;
#ifdef TP_X86_SIMD
    if constexpr (std::is_same_v<T, float>) {
        if (have_avx2()) j = tanh_span_avx2(x, n);
    }
#endif
    for (; j < n; ++j) x[j] = std::tanh(x[j]);
}

// hs (L, N, H) is written: h_t = act(projected_t + h_{t-1} W_hh^T).
template <class T>
void rnn_forward_T(int64_t L, int64_t N, int64_t H, bool tanh_act, const T* projected, const T* w_hh, const T* h0,
                   T* hs) {
    for (int64_t t = 0; t < L; ++t) {
        T* h = hs + t * N * H;
        std::memcpy(h, projected + t * N * H, sizeof(T) * N * H);
        gemm<T>(false, true, N, H, H, t ? hs + (t - 1) * N * H : h0, H, w_hh, H, T(1), h, H);
        parallel_range(N, N * H >= PARALLEL_THRESHOLD / 8 ? 1 : N + 1, [&](int64_t n0, int64_t n1) {
            if (tanh_act)
                tanh_span<T>(h + n0 * H, (n1 - n0) * H);
            else
                for (int64_t k = n0 * H; k < n1 * H; ++k) h[k] = relu(h[k]);
        });
    }
}

// grad_projected (L, N, H), grad_w_hh (H, H), grad_h0 (N, H) are written.
template <class T>
void rnn_backward_T(int64_t L, int64_t N, int64_t H, bool tanh_act, const T* w_hh, const T* h0, const T* hs,
                    const T* grad_hs, const T* grad_hn, T* grad_projected, T* grad_w_hh, T* grad_h0) {
    std::vector<T> dh(grad_hn, grad_hn + N * H);
    for (int64_t t = L - 1; t >= 0; --t) {
        const T* h = hs + t * N * H;
        const T* gh = grad_hs + t * N * H;
        T* dp = grad_projected + t * N * H;
        // The derivative from the output: tanh' = 1 - h^2; relu' = [h > 0] (0 at 0, as PyTorch).
        if (tanh_act)
            for (int64_t k = 0; k < N * H; ++k) dp[k] = (dh[k] + gh[k]) * (T(1) - h[k] * h[k]);
        else
            for (int64_t k = 0; k < N * H; ++k) dp[k] = h[k] > T(0) ? dh[k] + gh[k] : T(0);
        gemm<T>(false, false, N, H, H, dp, H, w_hh, H, T(0), dh.data(), H);  // dh_{t-1} = dPre_t @ W_hh
    }
    gemm<T>(true, false, H, H, N, grad_projected, H, h0, H, T(0), grad_w_hh, H);
    if (L > 1) gemm<T>(true, false, H, H, (L - 1) * N, grad_projected + N * H, H, hs, H, T(1), grad_w_hh, H);
    if (N * H == 0) std::fill(grad_w_hh, grad_w_hh + H * H, T(0));
    std::copy(dh.begin(), dh.end(), grad_h0);
}

// A contiguous operand of the given shape (the Python side passes .contiguous() tensors).
char* contiguous(PyObject* o, int dtype, int ndim, const int64_t* shape, Operand& op, const char* fname,
                 const char* what, bool writable) {
    parse_operand(o, dtype, ndim, shape, op, fname, what, false, writable);
    int64_t expected = 1;
    for (int d = ndim - 1; d >= 0; --d) {
        if (shape[d] != 1 && op.strides[d] != expected && numel_of(ndim, shape) != 0)
            value_error(std::string(fname) + ": " + what + " must be contiguous");
        expected *= shape[d];
    }
    return op.data;
}

PyObject* py_lstm_forward(PyObject* const* args, Py_ssize_t nargs) {
    // lstm_forward(dtype, L, N, H, projected, w_hh, h0, c0, hs, cs, acts)
    const char* fname = "lstm_forward";
    check_nargs(nargs, 11, fname);
    const int dtype = float_dtype(args[0], fname);
    const int64_t L = arg_int(args[1], fname, "L"), N = arg_int(args[2], fname, "N"), H = arg_int(args[3], fname, "H");
    if (L < 0 || N < 0 || H < 0) value_error("lstm_forward: sizes must be >= 0");
    const int64_t sg[3] = {L, N, 4 * H}, sw[2] = {4 * H, H}, ss[2] = {N, H}, sh[3] = {L, N, H};
    Operand p, w, h0, c0, hs, cs, acts;
    char* pp = contiguous(args[4], dtype, 3, sg, p, fname, "projected", false);
    char* wp = contiguous(args[5], dtype, 2, sw, w, fname, "w_hh", false);
    char* h0p = contiguous(args[6], dtype, 2, ss, h0, fname, "h0", false);
    char* c0p = contiguous(args[7], dtype, 2, ss, c0, fname, "c0", false);
    char* hsp = contiguous(args[8], dtype, 3, sh, hs, fname, "hs", true);
    char* csp = contiguous(args[9], dtype, 3, sh, cs, fname, "cs", true);
    char* ap = contiguous(args[10], dtype, 3, sg, acts, fname, "acts", true);
    if (L * N * H == 0) return none();
    ReleaseGil nogil(true);
    if (dtype == kFloat32)
        lstm_forward_T<float>(L, N, H, (const float*)pp, (const float*)wp, (const float*)h0p, (const float*)c0p,
                              (float*)hsp, (float*)csp, (float*)ap);
    else
        lstm_forward_T<double>(L, N, H, (const double*)pp, (const double*)wp, (const double*)h0p, (const double*)c0p,
                               (double*)hsp, (double*)csp, (double*)ap);
    return none();
}

PyObject* py_lstm_backward(PyObject* const* args, Py_ssize_t nargs) {
    // lstm_backward(dtype, L, N, H, w_hh, h0, c0, hs, cs, acts, grad_hs, grad_hn, grad_cn,
    //               grad_projected, grad_w_hh, grad_h0, grad_c0)
    const char* fname = "lstm_backward";
    check_nargs(nargs, 17, fname);
    const int dtype = float_dtype(args[0], fname);
    const int64_t L = arg_int(args[1], fname, "L"), N = arg_int(args[2], fname, "N"), H = arg_int(args[3], fname, "H");
    if (L < 1 || N < 0 || H < 0) value_error("lstm_backward: L must be >= 1 and sizes >= 0");
    const int64_t sg[3] = {L, N, 4 * H}, sw[2] = {4 * H, H}, ss[2] = {N, H}, sh[3] = {L, N, H};
    Operand w, h0, c0, hs, cs, acts, ghs, ghn, gcn, gp, gw, gh0, gc0;
    char* wp = contiguous(args[4], dtype, 2, sw, w, fname, "w_hh", false);
    char* h0p = contiguous(args[5], dtype, 2, ss, h0, fname, "h0", false);
    char* c0p = contiguous(args[6], dtype, 2, ss, c0, fname, "c0", false);
    char* hsp = contiguous(args[7], dtype, 3, sh, hs, fname, "hs", false);
    char* csp = contiguous(args[8], dtype, 3, sh, cs, fname, "cs", false);
    char* ap = contiguous(args[9], dtype, 3, sg, acts, fname, "acts", false);
    char* ghsp = contiguous(args[10], dtype, 3, sh, ghs, fname, "grad_hs", false);
    char* ghnp = contiguous(args[11], dtype, 2, ss, ghn, fname, "grad_hn", false);
    char* gcnp = contiguous(args[12], dtype, 2, ss, gcn, fname, "grad_cn", false);
    char* gpp = contiguous(args[13], dtype, 3, sg, gp, fname, "grad_projected", true);
    char* gwp = contiguous(args[14], dtype, 2, sw, gw, fname, "grad_w_hh", true);
    char* gh0p = contiguous(args[15], dtype, 2, ss, gh0, fname, "grad_h0", true);
    char* gc0p = contiguous(args[16], dtype, 2, ss, gc0, fname, "grad_c0", true);
    ReleaseGil nogil(true);
    if (dtype == kFloat32)
        lstm_backward_T<float>(L, N, H, (const float*)wp, (const float*)h0p, (const float*)c0p, (const float*)hsp,
                               (const float*)csp, (const float*)ap, (const float*)ghsp, (const float*)ghnp,
                               (const float*)gcnp, (float*)gpp, (float*)gwp, (float*)gh0p, (float*)gc0p);
    else
        lstm_backward_T<double>(L, N, H, (const double*)wp, (const double*)h0p, (const double*)c0p, (const double*)hsp,
                                (const double*)csp, (const double*)ap, (const double*)ghsp, (const double*)ghnp,
                                (const double*)gcnp, (double*)gpp, (double*)gwp, (double*)gh0p, (double*)gc0p);
    return none();
}

PyObject* py_gru_forward(PyObject* const* args, Py_ssize_t nargs) {
    // gru_forward(dtype, L, N, H, projected, w_hh, b_hh, h0, hs, acts)
    const char* fname = "gru_forward";
    check_nargs(nargs, 10, fname);
    const int dtype = float_dtype(args[0], fname);
    const int64_t L = arg_int(args[1], fname, "L"), N = arg_int(args[2], fname, "N"), H = arg_int(args[3], fname, "H");
    if (L < 0 || N < 0 || H < 0) value_error("gru_forward: sizes must be >= 0");
    const int64_t sp[3] = {L, N, 3 * H}, sw[2] = {3 * H, H}, sb[1] = {3 * H}, ss[2] = {N, H}, sh[3] = {L, N, H},
                  sa[3] = {L, N, 4 * H};
    Operand p, w, b, h0, hs, acts;
    char* pp = contiguous(args[4], dtype, 3, sp, p, fname, "projected", false);
    char* wp = contiguous(args[5], dtype, 2, sw, w, fname, "w_hh", false);
    char* bp = contiguous(args[6], dtype, 1, sb, b, fname, "b_hh", false);
    char* h0p = contiguous(args[7], dtype, 2, ss, h0, fname, "h0", false);
    char* hsp = contiguous(args[8], dtype, 3, sh, hs, fname, "hs", true);
    char* ap = contiguous(args[9], dtype, 3, sa, acts, fname, "acts", true);
    if (L * N * H == 0) return none();
    ReleaseGil nogil(true);
    if (dtype == kFloat32)
        gru_forward_T<float>(L, N, H, (const float*)pp, (const float*)wp, (const float*)bp, (const float*)h0p,
                             (float*)hsp, (float*)ap);
    else
        gru_forward_T<double>(L, N, H, (const double*)pp, (const double*)wp, (const double*)bp, (const double*)h0p,
                              (double*)hsp, (double*)ap);
    return none();
}

PyObject* py_gru_backward(PyObject* const* args, Py_ssize_t nargs) {
    // gru_backward(dtype, L, N, H, w_hh, h0, hs, acts, grad_hs, grad_hn,
    //              grad_projected, grad_w_hh, grad_b_hh, grad_h0)
    const char* fname = "gru_backward";
    check_nargs(nargs, 14, fname);
    const int dtype = float_dtype(args[0], fname);
    const int64_t L = arg_int(args[1], fname, "L"), N = arg_int(args[2], fname, "N"), H = arg_int(args[3], fname, "H");
    if (L < 1 || N < 0 || H < 0) value_error("gru_backward: L must be >= 1 and sizes >= 0");
    const int64_t sp[3] = {L, N, 3 * H}, sw[2] = {3 * H, H}, sb[1] = {3 * H}, ss[2] = {N, H}, sh[3] = {L, N, H},
                  sa[3] = {L, N, 4 * H};
    Operand w, h0, hs, acts, ghs, ghn, gp, gw, gb, gh0;
    char* wp = contiguous(args[4], dtype, 2, sw, w, fname, "w_hh", false);
    char* h0p = contiguous(args[5], dtype, 2, ss, h0, fname, "h0", false);
    char* hsp = contiguous(args[6], dtype, 3, sh, hs, fname, "hs", false);
    char* ap = contiguous(args[7], dtype, 3, sa, acts, fname, "acts", false);
    char* ghsp = contiguous(args[8], dtype, 3, sh, ghs, fname, "grad_hs", false);
    char* ghnp = contiguous(args[9], dtype, 2, ss, ghn, fname, "grad_hn", false);
    char* gpp = contiguous(args[10], dtype, 3, sp, gp, fname, "grad_projected", true);
    char* gwp = contiguous(args[11], dtype, 2, sw, gw, fname, "grad_w_hh", true);
    char* gbp = contiguous(args[12], dtype, 1, sb, gb, fname, "grad_b_hh", true);
    char* gh0p = contiguous(args[13], dtype, 2, ss, gh0, fname, "grad_h0", true);
    ReleaseGil nogil(true);
    if (dtype == kFloat32)
        gru_backward_T<float>(L, N, H, (const float*)wp, (const float*)h0p, (const float*)hsp, (const float*)ap,
                              (const float*)ghsp, (const float*)ghnp, (float*)gpp, (float*)gwp, (float*)gbp,
                              (float*)gh0p);
    else
        gru_backward_T<double>(L, N, H, (const double*)wp, (const double*)h0p, (const double*)hsp, (const double*)ap,
                               (const double*)ghsp, (const double*)ghnp, (double*)gpp, (double*)gwp, (double*)gbp,
                               (double*)gh0p);
    return none();
}

PyObject* py_rnn_forward(PyObject* const* args, Py_ssize_t nargs) {
    // rnn_forward(dtype, L, N, H, tanh, projected, w_hh, h0, hs)
    const char* fname = "rnn_forward";
    check_nargs(nargs, 9, fname);
    const int dtype = float_dtype(args[0], fname);
    const int64_t L = arg_int(args[1], fname, "L"), N = arg_int(args[2], fname, "N"), H = arg_int(args[3], fname, "H");
    const bool tanh_act = arg_int(args[4], fname, "tanh") != 0;
    if (L < 0 || N < 0 || H < 0) value_error("rnn_forward: sizes must be >= 0");
    const int64_t sw[2] = {H, H}, ss[2] = {N, H}, sh[3] = {L, N, H};
    Operand p, w, h0, hs;
    char* pp = contiguous(args[5], dtype, 3, sh, p, fname, "projected", false);
    char* wp = contiguous(args[6], dtype, 2, sw, w, fname, "w_hh", false);
    char* h0p = contiguous(args[7], dtype, 2, ss, h0, fname, "h0", false);
    char* hsp = contiguous(args[8], dtype, 3, sh, hs, fname, "hs", true);
    if (L * N * H == 0) return none();
    ReleaseGil nogil(true);
    if (dtype == kFloat32)
        rnn_forward_T<float>(L, N, H, tanh_act, (const float*)pp, (const float*)wp, (const float*)h0p, (float*)hsp);
    else
        rnn_forward_T<double>(L, N, H, tanh_act, (const double*)pp, (const double*)wp, (const double*)h0p,
                              (double*)hsp);
    return none();
}

PyObject* py_rnn_backward(PyObject* const* args, Py_ssize_t nargs) {
    // rnn_backward(dtype, L, N, H, tanh, w_hh, h0, hs, grad_hs, grad_hn, grad_projected, grad_w_hh, grad_h0)
    const char* fname = "rnn_backward";
    check_nargs(nargs, 13, fname);
    const int dtype = float_dtype(args[0], fname);
    const int64_t L = arg_int(args[1], fname, "L"), N = arg_int(args[2], fname, "N"), H = arg_int(args[3], fname, "H");
    const bool tanh_act = arg_int(args[4], fname, "tanh") != 0;
    if (L < 1 || N < 0 || H < 0) value_error("rnn_backward: L must be >= 1 and sizes >= 0");
    const int64_t sw[2] = {H, H}, ss[2] = {N, H}, sh[3] = {L, N, H};
    Operand w, h0, hs, ghs, ghn, gp, gw, gh0;
    char* wp = contiguous(args[5], dtype, 2, sw, w, fname, "w_hh", false);
    char* h0p = contiguous(args[6], dtype, 2, ss, h0, fname, "h0", false);
    char* hsp = contiguous(args[7], dtype, 3, sh, hs, fname, "hs", false);
    char* ghsp = contiguous(args[8], dtype, 3, sh, ghs, fname, "grad_hs", false);
    char* ghnp = contiguous(args[9], dtype, 2, ss, ghn, fname, "grad_hn", false);
    char* gpp = contiguous(args[10], dtype, 3, sh, gp, fname, "grad_projected", true);
    char* gwp = contiguous(args[11], dtype, 2, sw, gw, fname, "grad_w_hh", true);
    char* gh0p = contiguous(args[12], dtype, 2, ss, gh0, fname, "grad_h0", true);
    ReleaseGil nogil(true);
    if (dtype == kFloat32)
        rnn_backward_T<float>(L, N, H, tanh_act, (const float*)wp, (const float*)h0p, (const float*)hsp,
                              (const float*)ghsp, (const float*)ghnp, (float*)gpp, (float*)gwp, (float*)gh0p);
    else
        rnn_backward_T<double>(L, N, H, tanh_act, (const double*)wp, (const double*)h0p, (const double*)hsp,
                               (const double*)ghsp, (const double*)ghnp, (double*)gpp, (double*)gwp, (double*)gh0p);
    return none();
}

}  // namespace

void register_rnn(std::vector<PyMethodDef>& methods) {
    methods.push_back(fast_method<py_lstm_forward>(
        "lstm_forward", "lstm_forward(dtype, L, N, H, projected, w_hh, h0, c0, hs, cs, acts): one LSTM layer "
                        "direction over L steps; every operand contiguous."));
    methods.push_back(fast_method<py_lstm_backward>(
        "lstm_backward", "lstm_backward(dtype, L, N, H, w_hh, h0, c0, hs, cs, acts, grad_hs, grad_hn, grad_cn, "
                         "grad_projected, grad_w_hh, grad_h0, grad_c0): its gradients."));
    methods.push_back(fast_method<py_gru_forward>(
        "gru_forward", "gru_forward(dtype, L, N, H, projected, w_hh, b_hh, h0, hs, acts): one GRU layer direction "
                       "over L steps (acts: r, z, n, h W_hn^T + b_hn per step); every operand contiguous."));
    methods.push_back(fast_method<py_gru_backward>(
        "gru_backward", "gru_backward(dtype, L, N, H, w_hh, h0, hs, acts, grad_hs, grad_hn, grad_projected, "
                        "grad_w_hh, grad_b_hh, grad_h0): its gradients."));
    methods.push_back(fast_method<py_rnn_forward>(
        "rnn_forward", "rnn_forward(dtype, L, N, H, tanh, projected, w_hh, h0, hs): one Elman RNN layer direction "
                       "over L steps, tanh (tanh=1) or relu (tanh=0); every operand contiguous."));
    methods.push_back(fast_method<py_rnn_backward>(
        "rnn_backward", "rnn_backward(dtype, L, N, H, tanh, w_hh, h0, hs, grad_hs, grad_hn, grad_projected, "
                        "grad_w_hh, grad_h0): its gradients."));
}

}  // namespace tp
