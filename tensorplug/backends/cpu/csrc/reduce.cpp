// reduce(op, in_dtype, out_dtype, shape, a, out, dims) and cumulative(op, dtype, shape, out, a, dim)
//
// The input's dims are split into kept dims K and reduced dims R, each coalesced. Two schedules:
// - inner: each output element reduces its R elements (threads over outputs, or over chunks of R
//   with per-thread partials when there are few outputs); contiguous float sums are blocked.
// - outer: when the innermost input dim is kept and contiguous (sum over dim 0 of a matrix), rows
//   are accumulated into a block of accumulators, which vectorizes.
#include <vector>

#include "families.h"
#include "ops.h"
#include "simd.h"

namespace tp {

namespace {

template <class T> using sum_acc_t = std::conditional_t<is_floating<T>, double, int64_t>;

template <class T> struct SumOp {
    using A = sum_acc_t<T>;
    static A init() { return 0; }
    static void step(A& a, T x, int64_t) { a += static_cast<A>(to_c(x)); }
    static void merge(A& a, const A& b) { a += b; }
};
template <class T> struct ProdOp {
    using A = sum_acc_t<T>;
    static A init() { return 1; }
    static void step(A& a, T x, int64_t) { a *= static_cast<A>(to_c(x)); }
    static void merge(A& a, const A& b) { a *= b; }
};
template <class T> struct MaxOp {
    using A = compute_t<T>;
    static A init() {
        if constexpr (is_floating<T>) return -std::numeric_limits<A>::infinity();
        else return std::numeric_limits<A>::lowest();
    }
    static void step(A& a, T v, int64_t) { combine(a, to_c(v)); }
    static void combine(A& a, A x) {
        a = (x > a || x != x) ? x : a;  // NaN sticks once seen
    }
    static void merge(A& a, const A& b) { combine(a, b); }
};
template <class T> struct MinOp {
    using A = compute_t<T>;
    static A init() {
        if constexpr (is_floating<T>) return std::numeric_limits<A>::infinity();
        else return std::numeric_limits<A>::max();
    }
    static void step(A& a, T v, int64_t) { combine(a, to_c(v)); }
    static void combine(A& a, A x) {
        a = (x < a || x != x) ? x : a;
    }
    static void merge(A& a, const A& b) { combine(a, b); }
};
template <class T> struct AllOp {
    using A = bool;
    static A init() { return true; }
    static void step(A& a, T x, int64_t) { a = a && (to_c(x) != 0); }
    static void merge(A& a, const A& b) { a = a && b; }
};
template <class T> struct AnyOp {
    using A = bool;
    static A init() { return false; }
    static void step(A& a, T x, int64_t) { a = a || (to_c(x) != 0); }
    static void merge(A& a, const A& b) { a = a || b; }
};
template <class C> struct ArgAcc {
    C v;
    int64_t i;
};
// First occurrence wins; a NaN counts as the extreme, so the first NaN wins.
template <class T, bool IsMax> struct ArgOp {
    using C = compute_t<T>;
    using A = ArgAcc<C>;
    static A init() { return A{C(0), -1}; }
    static bool better(C x, C cur) {
        if (cur != cur) return false;
        if (x != x) return true;
        return IsMax ? x > cur : x < cur;
    }
    static void step(A& a, T v, int64_t pos) {
        C x = to_c(v);
        if (a.i < 0 || better(x, a.v)) {
            a.v = x;
            a.i = pos;
        }
    }
    static void merge(A& a, const A& b) {
        if (b.i < 0) return;
        if (a.i < 0 || better(b.v, a.v)) a = b;
    }
};

template <class A> struct is_arg_acc : std::false_type {};
template <class C> struct is_arg_acc<ArgAcc<C>> : std::true_type {};

template <class V> void store_as(int dtype, char* p, V v) {
    TP_DISPATCH(dtype, O, *reinterpret_cast<O*>(p) = convert<O>(v));
}

#ifdef TP_X86_SIMD
// The AVX2 blocked float32 sum: 32 float lanes over blocks of 1024 (each lane adds 32 values in
// float), each block's lanes widened into double accumulators without a horizontal sum. Folding
// every block of 256 into one double through 16 dependent adds (the portable loop below) made a
// sum of 1e7 floats compute-bound (0.74 ms on 2 threads against PyTorch's 0.62).
TP_AVX2 double sum_f32_contig_avx2(const float* p, int64_t n) {
    __m256d d0 = _mm256_setzero_pd(), d1 = d0, d2 = d0, d3 = d0;
    int64_t i = 0;
    for (; i + 1024 <= n; i += 1024) {
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int b = 0; b < 1024; b += 32) {
            a0 = _mm256_add_ps(a0, _mm256_loadu_ps(p + i + b));
            a1 = _mm256_add_ps(a1, _mm256_loadu_ps(p + i + b + 8));
            a2 = _mm256_add_ps(a2, _mm256_loadu_ps(p + i + b + 16));
            a3 = _mm256_add_ps(a3, _mm256_loadu_ps(p + i + b + 24));
        }
        const __m256 lo = _mm256_add_ps(a0, a1), hi = _mm256_add_ps(a2, a3);
        d0 = _mm256_add_pd(d0, _mm256_cvtps_pd(_mm256_castps256_ps128(lo)));
        d1 = _mm256_add_pd(d1, _mm256_cvtps_pd(_mm256_extractf128_ps(lo, 1)));
        d2 = _mm256_add_pd(d2, _mm256_cvtps_pd(_mm256_castps256_ps128(hi)));
        d3 = _mm256_add_pd(d3, _mm256_cvtps_pd(_mm256_extractf128_ps(hi, 1)));
    }
    alignas(32) double lanes[4];
    _mm256_store_pd(lanes, _mm256_add_pd(_mm256_add_pd(d0, d1), _mm256_add_pd(d2, d3)));
    double total = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
    for (; i < n; ++i) total += p[i];
    return total;
}
#endif

// Blocked float32 sum: 16 float lanes over blocks of 256 (vectorizes), blocks summed in double.
double sum_f32_contig(const float* p, int64_t n) {
#ifdef TP_X86_SIMD
    if (n >= 1024 && have_avx2()) return sum_f32_contig_avx2(p, n);
#endif
    double total = 0.0;
    int64_t i = 0;
    for (; i + 256 <= n; i += 256) {
        float acc[16] = {0};
        for (int b = 0; b < 256; b += 16)
            for (int k = 0; k < 16; ++k) acc[k] += p[i + b + k];
        double s = 0.0;
        for (int k = 0; k < 16; ++k) s += acc[k];
        total += s;
    }
    for (; i < n; ++i) total += p[i];
    return total;
}

double sum_f64_contig(const double* p, int64_t n) {
    double acc[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; ++k) acc[k] += p[i + k];
    double total = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < n; ++i) total += p[i];
    return total;
}

// The maximum or minimum of n contiguous elements, folded into acc, on 16 running values: one
// NaN-sticky compare-and-select chain for the whole row ran at one element per several cycles
// (amax over the last dim of 128x10000 float32: 3.2 ms, NumPy 0.07); independent chains
// vectorize. Any order gives the same value (a NaN anywhere gives NaN).
#ifdef TP_X86_SIMD
// float32 in vector lanes (simd_lanes.inc's extreme_of), where the CPU has AVX2.
template <bool Largest> float extreme_f32(const float* p, int64_t n) {
    TP_RETURN_WIDEST_LANES(extreme_of<Largest>(p, n));
    return std::numeric_limits<float>::quiet_NaN();  // not reached: callers check have_avx2()
}
#endif

#ifdef TP_X86_SIMD
// argmax/argmin of n contiguous floats: the extreme in lanes, then its first occurrence (a NaN
// counts as the extreme, so the first NaN): two passes over a row that stays in cache, where one
// compare-and-branch chain per row ran at several cycles an element.
template <bool Largest> int64_t first_extreme_f32(const float* p, int64_t n) {
    const float m = extreme_f32<Largest>(p, n);
    int64_t i = 0;
    if (m != m)
        while (p[i] == p[i]) ++i;
    else
        while (p[i] != m) ++i;
    return i;
}
#endif

template <class Op> struct float_arg_op : std::false_type {};
template <bool IsMax> struct float_arg_op<ArgOp<float, IsMax>> : std::true_type {
    static constexpr bool largest = IsMax;
};

template <class T> constexpr bool is_extreme_op = false;
template <class T> constexpr bool is_extreme_op<MaxOp<T>> = true;
template <class T> constexpr bool is_extreme_op<MinOp<T>> = true;

template <class Op, class T> void extreme_contig(typename Op::A& acc, const T* p, int64_t n) {
#ifdef TP_X86_SIMD
    if constexpr (std::is_same_v<T, float>) {
        if (have_avx2()) {
            Op::combine(acc, extreme_f32<std::is_same_v<Op, MaxOp<float>>>(p, n));
            return;
        }
    }
#endif
    constexpr int kChains = 16;
    typename Op::A chain[kChains];
    for (auto& c : chain) c = Op::init();
    int64_t i = 0;
    for (; i + kChains <= n; i += kChains)
        for (int k = 0; k < kChains; ++k) Op::combine(chain[k], to_c(p[i + k]));
    for (; i < n; ++i) Op::combine(acc, to_c(p[i]));
    for (const auto& c : chain) Op::combine(acc, c);
}

struct Geom {
    int nk = 0, nr = 0;
    int64_t kshape[MAX_DIMS], ka[MAX_DIMS], ko[MAX_DIMS];  // kept dims: a and out byte strides
    int64_t rshape[MAX_DIMS], ra[MAX_DIMS];                // reduced dims: a byte strides
    int64_t kn = 1, rn = 1;
    char* a = nullptr;
    char* out = nullptr;
};

// acc <- reduction of the R elements with linear R indices [b, e) starting at base.
template <class Op, class T>
void reduce_R(typename Op::A& acc, const char* base, const Geom& g, int64_t b, int64_t e) {
    if (b >= e) return;
    if (g.nr == 0) {
        Op::step(acc, *reinterpret_cast<const T*>(base), 0);
        return;
    }
    const int nd = g.nr;
    int64_t idx[MAX_DIMS];
    int64_t rem = b;
    const char* p = base;
    for (int d = nd - 1; d >= 0; --d) {
        idx[d] = rem % g.rshape[d];
        rem /= g.rshape[d];
        p += idx[d] * g.ra[d];
    }
    const int64_t inner = g.rshape[nd - 1], is = g.ra[nd - 1];
    int64_t pos = b;
    while (pos < e) {
        int64_t n = std::min(inner - idx[nd - 1], e - pos);
        bool done = false;
        if constexpr (std::is_same_v<Op, SumOp<float>>) {
            if (is == 4) {
                acc += sum_f32_contig(reinterpret_cast<const float*>(p), n);
                done = true;
            }
        } else if constexpr (std::is_same_v<Op, SumOp<double>>) {
            if (is == 8) {
                acc += sum_f64_contig(reinterpret_cast<const double*>(p), n);
                done = true;
            }
        } else if constexpr (float_arg_op<Op>::value) {
#ifdef TP_X86_SIMD
            if (is == 4 && have_avx2()) {
                const float* x = reinterpret_cast<const float*>(p);
                const int64_t k = first_extreme_f32<float_arg_op<Op>::largest>(x, n);
                Op::merge(acc, typename Op::A{x[k], pos + k});
                done = true;
            }
#endif
        } else if constexpr (is_extreme_op<Op>) {
            if (is == static_cast<int64_t>(sizeof(T))) {
                extreme_contig<Op, T>(acc, reinterpret_cast<const T*>(p), n);
                done = true;
            }
        }
        if (!done)
            for (int64_t i = 0; i < n; ++i) Op::step(acc, *reinterpret_cast<const T*>(p + i * is), pos + i);
        pos += n;
        if (pos >= e) break;
        p += n * is;
        idx[nd - 1] += n;
        int d = nd - 1;
        while (d > 0 && idx[d] >= g.rshape[d]) {
            p -= g.rshape[d] * g.ra[d];
            idx[d] = 0;
            --d;
            ++idx[d];
            p += g.ra[d];
        }
    }
}

template <class Op> void finish(int op, int out_dtype, char* p, const typename Op::A& acc, int64_t rn) {
    if constexpr (is_arg_acc<typename Op::A>::value) {
        (void)op;
        (void)rn;
        store_as<int64_t>(out_dtype, p, acc.i);
    } else {
        if (op == R_MEAN) {
            store_as<double>(out_dtype, p, static_cast<double>(acc) / static_cast<double>(rn));
        } else {
            store_as<typename Op::A>(out_dtype, p, acc);
        }
    }
}

// Pointers of kept-index k into a and out.
inline void kept_ptrs(const Geom& g, int64_t k, const char*& a, char*& o) {
    a = g.a;
    o = g.out;
    for (int d = g.nk - 1; d >= 0; --d) {
        int64_t i = k % g.kshape[d];
        k /= g.kshape[d];
        a += i * g.ka[d];
        o += i * g.ko[d];
    }
}

template <class Op, class T> void reduce_inner(const Geom& g, int op, int out_dtype) {
    using A = typename Op::A;
    const int64_t work = g.kn * g.rn;
    if (g.kn >= 2 * g_num_threads || work < PARALLEL_THRESHOLD || g_num_threads == 1) {
        const int64_t threshold = work >= PARALLEL_THRESHOLD ? 1 : std::numeric_limits<int64_t>::max();
        parallel_range(g.kn, threshold, [&](int64_t kb, int64_t ke) {
            for (int64_t k = kb; k < ke; ++k) {
                const char* a;
                char* o;
                kept_ptrs(g, k, a, o);
                A acc = Op::init();
                reduce_R<Op, T>(acc, a, g, 0, g.rn);
                finish<Op>(op, out_dtype, o, acc, g.rn);
            }
        });
        return;
    }
    // Few outputs, long reductions: split each reduction in fixed chunks over threads, merge the
    // chunk partials in order (deterministic; argmax keeps the first occurrence).
    struct alignas(64) Partial {
        A v;
    };
    const int64_t nchunks = g_num_threads * CHUNKS_PER_THREAD;
    std::vector<Partial> partial(static_cast<size_t>(nchunks));
    for (int64_t k = 0; k < g.kn; ++k) {
        const char* a;
        char* o;
        kept_ptrs(g, k, a, o);
        for (auto& p : partial) p.v = Op::init();
        parallel_chunks(g.rn, nchunks, [&](int64_t c, int64_t b, int64_t e) {
            reduce_R<Op, T>(partial[static_cast<size_t>(c)].v, a, g, b, e);
        });
        A acc = Op::init();
        for (auto& p : partial) Op::merge(acc, p.v);
        finish<Op>(op, out_dtype, o, acc, g.rn);
    }
}

template <class Op, class T> void reduce_outer(const Geom& g, int op, int out_dtype) {
    using A = typename Op::A;
    const int64_t C = g.kshape[g.nk - 1];
    const int64_t KO = g.kn / C;
    const int64_t work = g.kn * g.rn;
    const bool parallel = work >= PARALLEL_THRESHOLD && g_num_threads > 1;
    // Column blocks wide enough that each row segment streams (prefetch-friendly), small enough
    // that the accumulators stay in L2, and enough of them for every thread.
    int64_t CB = parallel ? (C + g_num_threads - 1) / g_num_threads : C;
    CB = std::min<int64_t>(std::max<int64_t>(CB, 512), 16384);
    const int64_t nb = (C + CB - 1) / CB;
    parallel_range(KO * nb, parallel ? 1 : std::numeric_limits<int64_t>::max(), [&](int64_t wb, int64_t we) {
        struct Slot {
            A v;
        };
        std::vector<Slot> accbuf(static_cast<size_t>(std::min(CB, C)));
        Slot* acc = accbuf.data();
        for (int64_t w = wb; w < we; ++w) {
            const int64_t ko = w / nb, cb = w % nb;
            const int64_t len = std::min(CB, C - cb * CB);
            const char* a;
            char* o;
            kept_ptrs(g, ko * C + cb * CB, a, o);
            for (int64_t j = 0; j < len; ++j) acc[j].v = Op::init();
            int64_t idx[MAX_DIMS] = {0};
            const char* row = a;
            for (int64_t r = 0; r < g.rn; ++r) {
                const T* x = reinterpret_cast<const T*>(row);
                for (int64_t j = 0; j < len; ++j) Op::step(acc[j].v, x[j], r);
                int d = g.nr - 1;
                row += g.ra[d];
                ++idx[d];
                while (d > 0 && idx[d] >= g.rshape[d]) {
                    row -= g.rshape[d] * g.ra[d];
                    idx[d] = 0;
                    --d;
                    ++idx[d];
                    row += g.ra[d];
                }
            }
            for (int64_t j = 0; j < len; ++j) finish<Op>(op, out_dtype, o + j * g.ko[g.nk - 1], acc[j].v, g.rn);
        }
    });
}

// Sum of float32 rows into a block of columns: rows are added in float for up to 32 rows (fast,
// SIMD-friendly, small cache footprint), then folded into double accumulators for accuracy.
void reduce_outer_sum_f32(const Geom& g, int op, int out_dtype) {
    constexpr int RB = 32;
    const int64_t C = g.kshape[g.nk - 1];
    const int64_t KO = g.kn / C;
    const bool parallel = g.kn * g.rn >= PARALLEL_THRESHOLD && g_num_threads > 1;
    // Whole rows when they fit in L2 (rows then stream from memory), split between threads.
    int64_t CB = parallel && KO < g_num_threads ? (C + g_num_threads - 1) / g_num_threads : C;
    CB = std::min<int64_t>(std::max<int64_t>(CB, 2048), 32768);
    const int64_t nb = (C + CB - 1) / CB;
    parallel_range(KO * nb, parallel ? 1 : std::numeric_limits<int64_t>::max(), [&](int64_t wb, int64_t we) {
        std::vector<float> fbuf(static_cast<size_t>(std::min(CB, C)));
        std::vector<double> dbuf(static_cast<size_t>(std::min(CB, C)));
        float* facc = fbuf.data();
        double* dacc = dbuf.data();
        for (int64_t w = wb; w < we; ++w) {
            const int64_t ko = w / nb, cb = w % nb;
            const int64_t len = std::min(CB, C - cb * CB);
            const char* a;
            char* o;
            kept_ptrs(g, ko * C + cb * CB, a, o);
            for (int64_t j = 0; j < len; ++j) {
                facc[j] = 0.0f;
                dacc[j] = 0.0;
            }
            int64_t idx[MAX_DIMS] = {0};
            const char* row = a;
            int pending = 0;
            for (int64_t r = 0; r < g.rn; ++r) {
                const float* x = reinterpret_cast<const float*>(row);
                for (int64_t j = 0; j < len; ++j) facc[j] += x[j];
                if (++pending == RB) {
                    for (int64_t j = 0; j < len; ++j) {
                        dacc[j] += facc[j];
                        facc[j] = 0.0f;
                    }
                    pending = 0;
                }
                int d = g.nr - 1;
                row += g.ra[d];
                ++idx[d];
                while (d > 0 && idx[d] >= g.rshape[d]) {
                    row -= g.rshape[d] * g.ra[d];
                    idx[d] = 0;
                    --d;
                    ++idx[d];
                    row += g.ra[d];
                }
            }
            for (int64_t j = 0; j < len; ++j)
                finish<SumOp<float>>(op, out_dtype, o + j * g.ko[g.nk - 1], dacc[j] + facc[j], g.rn);
        }
    });
}

template <class Op, class T> void reduce_run(const Geom& g, int op, int out_dtype, bool allow_outer) {
    const bool outer = allow_outer && g.nk >= 1 && g.nr >= 1 && g.rn > 1 &&
                       g.ka[g.nk - 1] == static_cast<int64_t>(sizeof(T)) && g.kshape[g.nk - 1] >= 8;
    if constexpr (std::is_same_v<Op, SumOp<float>>) {
        if (outer) {
            reduce_outer_sum_f32(g, op, out_dtype);
            return;
        }
    }
    if (outer) reduce_outer<Op, T>(g, op, out_dtype);
    else reduce_inner<Op, T>(g, op, out_dtype);
}

template <class T> void reduce_T(int op, const Geom& g, int out_dtype) {
    switch (op) {
        case R_SUM: case R_MEAN: reduce_run<SumOp<T>, T>(g, op, out_dtype, true); break;
        case R_PROD: reduce_run<ProdOp<T>, T>(g, op, out_dtype, true); break;
        case R_AMAX: reduce_run<MaxOp<T>, T>(g, op, out_dtype, true); break;
        case R_AMIN: reduce_run<MinOp<T>, T>(g, op, out_dtype, true); break;
        case R_ALL: reduce_run<AllOp<T>, T>(g, op, out_dtype, true); break;
        case R_ANY: reduce_run<AnyOp<T>, T>(g, op, out_dtype, true); break;
        case R_ARGMAX: reduce_run<ArgOp<T, true>, T>(g, op, out_dtype, false); break;
        case R_ARGMIN: reduce_run<ArgOp<T, false>, T>(g, op, out_dtype, false); break;
        default: break;
    }
}

}  // namespace

int parse_dims(PyObject* o, int nd, bool* reduced, const char* fname) {
    if (!PyTuple_Check(o) && !PyList_Check(o)) raise(PyExc_TypeError, std::string(fname) + ": dims must be a tuple");
    Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    PyObject** items = PySequence_Fast_ITEMS(o);
    for (int d = 0; d < nd; ++d) reduced[d] = false;
    int64_t prev = -1;
    for (Py_ssize_t i = 0; i < n; ++i) {
        int64_t d = arg_int(items[i], fname, "dim");
        if (d < 0 || d >= nd) value_error(std::string(fname) + ": dim " + std::to_string(d) + " is out of range");
        if (d <= prev) value_error(std::string(fname) + ": dims must be sorted and unique");
        reduced[d] = true;
        prev = d;
    }
    return static_cast<int>(n);
}

PyObject* py_reduce(PyObject* const* args, Py_ssize_t nargs) {
    const char* fname = "reduce";
    check_nargs(nargs, 7, fname);
    int64_t op64 = arg_int(args[0], fname, "op");
    if (op64 < 0 || op64 >= R_NUM_OPS) value_error("reduce: invalid op code " + std::to_string(op64));
    int in_dtype = arg_dtype(args[1], fname);
    int out_dtype = arg_dtype(args[2], fname);
    int64_t shape[MAX_DIMS];
    int nd = parse_shape(args[3], shape, fname);
    Operand a, out;
    parse_operand(args[4], in_dtype, nd, shape, a, fname, "a", false, false);
    parse_operand(args[5], out_dtype, nd, shape, out, fname, "out", false, true);
    bool reduced[MAX_DIMS];
    int ndims = parse_dims(args[6], nd, reduced, fname);
    apply_reduce(static_cast<int>(op64), in_dtype, out_dtype, nd, shape, a, out, reduced, ndims);
    return none();
}

void apply_reduce(int op, int in_dtype, int out_dtype, int nd, const int64_t* shape, Operand& a, Operand& out,
                  const bool* reduced, int ndims) {
    const char* opname = kReduceOpNames[op].name;
    if (ndims == 0) value_error("reduce: dims must not be empty");
    if ((op == R_ARGMAX || op == R_ARGMIN) && ndims != 1)
        value_error(std::string("reduce: ") + opname + " reduces exactly one dim");
    if (op == R_MEAN && !is_float_dtype(in_dtype)) value_error("reduce: mean needs a floating dtype");
    for (int d = 0; d < nd; ++d)
        if (reduced[d] && out.strides[d] != 0 && shape[d] > 1)
            value_error("reduce: out must have stride 0 on every reduced dim");

    Geom g;
    const int ia = kItemSize[in_dtype], io = kItemSize[out_dtype];
    int64_t kept_numel = 1, red_numel = 1;
    for (int d = 0; d < nd; ++d) {
        if (reduced[d]) red_numel *= shape[d];
        else kept_numel *= shape[d];
    }
    if (kept_numel == 0) return;
    if (red_numel == 0 && (op == R_AMAX || op == R_AMIN || op == R_ARGMAX || op == R_ARGMIN))
        value_error(std::string(opname) +
                    ": cannot reduce over an empty dimension (the operation has no identity)");
    for (int d = 0; d < nd; ++d) {
        if (shape[d] == 1) continue;
        if (reduced[d]) {
            const int64_t sa = a.strides[d] * ia;
            if (g.nr > 0 && g.ra[g.nr - 1] == sa * shape[d]) {
                g.rshape[g.nr - 1] *= shape[d];
                g.ra[g.nr - 1] = sa;
            } else {
                g.rshape[g.nr] = shape[d];
                g.ra[g.nr] = sa;
                ++g.nr;
            }
        } else {
            const int64_t sa = a.strides[d] * ia, so = out.strides[d] * io;
            if (g.nk > 0 && g.ka[g.nk - 1] == sa * shape[d] && g.ko[g.nk - 1] == so * shape[d]) {
                g.kshape[g.nk - 1] *= shape[d];
                g.ka[g.nk - 1] = sa;
                g.ko[g.nk - 1] = so;
            } else {
                g.kshape[g.nk] = shape[d];
                g.ka[g.nk] = sa;
                g.ko[g.nk] = so;
                ++g.nk;
            }
        }
    }
    g.kn = kept_numel;
    g.rn = red_numel;
    g.a = a.data;
    g.out = out.data;
    if (red_numel == 0) g.nr = 0;  // nothing is read: every output is the identity
    ReleaseGil nogil(kept_numel * red_numel >= PARALLEL_THRESHOLD);
    if (red_numel == 0) {
        // reduce_R reads one element when nr == 0; an empty reduction must read none.
        for (int64_t k = 0; k < g.kn; ++k) {
            const char* pa;
            char* po;
            kept_ptrs(g, k, pa, po);
            switch (op) {
                case R_SUM: case R_ANY: store_as<int64_t>(out_dtype, po, 0); break;
                case R_PROD: case R_ALL: store_as<int64_t>(out_dtype, po, 1); break;
                case R_MEAN: store_as<double>(out_dtype, po, std::numeric_limits<double>::quiet_NaN()); break;
                default: break;
            }
        }
        return;
    }
    TP_DISPATCH(in_dtype, T, reduce_T<T>(op, g, out_dtype));
    return;
}

namespace {

// ----- cumulative -----
template <class T> void cumulative_T(int op, const Loop<2>& L, int64_t len, int64_t so, int64_t sa) {
    using A = sum_acc_t<T>;
    L.run([&](char** p, int64_t n, const int64_t* s) {
        for (int64_t i = 0; i < n; ++i) {
            char* o = p[0] + i * s[0];
            const char* a = p[1] + i * s[1];
            A acc = op == CUM_SUM ? A(0) : A(1);
            for (int64_t j = 0; j < len; ++j) {
                A x = static_cast<A>(to_c(*reinterpret_cast<const T*>(a + j * sa)));
                if (op == CUM_SUM) acc += x;
                else acc *= x;
                *reinterpret_cast<T*>(o + j * so) = convert<T>(acc);
            }
        }
    });
}

PyObject* py_cumulative(PyObject* const* args, Py_ssize_t nargs) {
    const char* fname = "cumulative";
    check_nargs(nargs, 6, fname);
    int64_t op = arg_int(args[0], fname, "op");
    if (op < 0 || op >= CUM_NUM_OPS) value_error("cumulative: invalid op code " + std::to_string(op));
    int dtype = arg_dtype(args[1], fname);
    int64_t shape[MAX_DIMS];
    int nd = parse_shape(args[2], shape, fname);
    Operand out, a;
    parse_operand(args[3], dtype, nd, shape, out, fname, "out", false, true);
    parse_operand(args[4], dtype, nd, shape, a, fname, "a", false, false);
    int64_t dim = arg_int(args[5], fname, "dim");
    if (nd == 0 && (dim == 0 || dim == -1)) {
        // A 0-d tensor is its own cumulative sum or product.
        if (dtype == kBool && op == CUM_SUM) value_error("cumulative: bool is not supported; cast to int64 first");
        TP_DISPATCH(dtype, T, *reinterpret_cast<T*>(out.data) = *reinterpret_cast<const T*>(a.data));
        return none();
    }
    if (dim < 0 || dim >= nd) value_error("cumulative: dim " + std::to_string(dim) + " is out of range");
    if (dtype == kBool) value_error("cumulative: bool is not supported; cast to int64 first");
    const int64_t len = shape[dim];
    int64_t lines_shape[MAX_DIMS];
    for (int d = 0; d < nd; ++d) lines_shape[d] = d == dim ? 1 : shape[d];
    if (numel_of(nd, shape) == 0) return none();
    Loop<2> L;
    Operand* ops[2] = {&out, &a};
    int isz[2] = {kItemSize[dtype], kItemSize[dtype]};
    L.init(nd, lines_shape, ops, isz);
    const int64_t so = out.strides[dim] * isz[0], sa = a.strides[dim] * isz[1];
    ReleaseGil nogil(L.numel * len >= PARALLEL_THRESHOLD);
    TP_DISPATCH(dtype, T, if constexpr (!is_bool<T>) cumulative_T<T>(static_cast<int>(op), L, len, so, sa));
    return none();
}

}  // namespace

void register_reduce(std::vector<PyMethodDef>& methods) {
    methods.push_back(fast_method<py_reduce>(
        "reduce", "reduce(op, in_dtype, out_dtype, shape, a, out, dims): out has stride 0 on reduced dims."));
    methods.push_back(fast_method<py_cumulative>("cumulative", "cumulative(op, dtype, shape, out, a, dim)."));
}

}  // namespace tp
