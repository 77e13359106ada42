// Shared definitions for the CPU kernels: dtypes, 16-bit float types, errors, operand parsing
// and the strided N-d loop that every elementwise family runs on.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace tp {

// Arrays of this many dims live on the stack: no heap allocation on the hot path.
constexpr int MAX_DIMS = 32;

// Above this many elements a kernel releases the GIL and may use several threads.
constexpr int64_t PARALLEL_THRESHOLD = 32768;

enum DType : int {
    kBool = 0,
    kUInt8 = 1,
    kInt8 = 2,
    kInt16 = 3,
    kInt32 = 4,
    kInt64 = 5,
    kFloat16 = 6,
    kFloat32 = 7,
    kFloat64 = 8,
    kBFloat16 = 9,
    kUInt16 = 10,
    kUInt32 = 11,
    kUInt64 = 12,
    kFloat8E4M3FN = 13,
    kFloat8E5M2 = 14,
    kFloat8E4M3FNUZ = 15,
    kFloat8E5M2FNUZ = 16,
    kNumDTypes = 17,
};

extern const int kItemSize[kNumDTypes];
extern const char* const kDTypeName[kNumDTypes];

inline bool is_float8_dtype(int d) { return d >= kFloat8E4M3FN && d <= kFloat8E5M2FNUZ; }
// The floats narrower than float32, whose arithmetic with a Python number runs in float32.
inline bool is_narrow_float_dtype(int d) { return d == kFloat16 || d == kBFloat16 || is_float8_dtype(d); }
inline bool is_float_dtype(int d) { return d == kFloat32 || d == kFloat64 || is_narrow_float_dtype(d); }
inline bool is_int_dtype(int d) { return (d >= kUInt8 && d <= kInt64) || (d >= kUInt16 && d <= kUInt64); }

// ---------------------------------------------------------------------------------------------
// Errors. Kernels throw KernelError; the Python entry points turn it into the named exception.
struct KernelError {
    PyObject* type;
    std::string msg;
};
// Thrown when a Python error is already set (for example by a failed conversion).
struct PythonErrorSet {};

[[noreturn]] inline void raise(PyObject* type, const std::string& msg) { throw KernelError{type, msg}; }
[[noreturn]] inline void value_error(const std::string& msg) { raise(PyExc_ValueError, msg); }

// ---------------------------------------------------------------------------------------------
// 16-bit floats: storage types that convert to and from float with round-to-nearest-even.
inline uint32_t f32_bits(float f) { uint32_t x; std::memcpy(&x, &f, 4); return x; }
inline float bits_f32(uint32_t x) { float f; std::memcpy(&f, &x, 4); return f; }

inline uint16_t f32_to_f16(float f) {
    uint32_t x = f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return static_cast<uint16_t>(sign | (ax > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to infinity
    if (ax < 0x38800000u) {
        // Subnormal half: adding 0.5f puts the half's last unit at the float's last bit, so the
        // float addition performs the round-to-nearest-even for us.
        float af = bits_f32(ax) + 0.5f;
        return static_cast<uint16_t>(sign | (f32_bits(af) - 0x3f000000u));
    }
    uint32_t odd = (ax >> 13) & 1u;
    ax += 0xc8000fffu + odd;  // rebias the exponent and round
    return static_cast<uint16_t>(sign | (ax >> 13));
}

inline float f16_to_f32(uint16_t h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu;
    uint32_t m = h & 0x3ffu;
    if (e == 0) {
        float f = static_cast<float>(m) * 5.9604644775390625e-08f;  // m * 2^-24
        return bits_f32(f32_bits(f) | sign);
    }
    if (e == 31) return bits_f32(sign | 0x7f800000u | (m << 13));
    return bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

inline uint16_t f32_to_bf16(float f) {
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>(x >> 16);
}

inline float bf16_to_f32(uint16_t b) { return bits_f32(static_cast<uint32_t>(b) << 16); }

// double -> float rounding to odd, so that a second rounding to a 16-bit float is exact RNE.
inline float f64_to_f32_odd(double d) {
    float f = static_cast<float>(d);
    if (static_cast<double>(f) != d && d == d && std::isfinite(f)) {
        uint32_t x = f32_bits(f);
        if (std::fabs(static_cast<double>(f)) > std::fabs(d)) x -= 1;
        x |= 1u;
        f = bits_f32(x);
    }
    return f;
}

struct half_t {
    uint16_t x;
    static half_t from_float(float f) { half_t h; h.x = f32_to_f16(f); return h; }
    operator float() const { return f16_to_f32(x); }
};
struct bf16_t {
    uint16_t x;
    static bf16_t from_float(float f) { bf16_t h; h.x = f32_to_bf16(f); return h; }
    operator float() const { return bf16_to_f32(x); }
};

// ---------------------------------------------------------------------------------------------
// 8-bit floats (docs/dtypes.md). Three flavours of special values:
//  - kIeee (e5m2): infinities and NaNs as IEEE 754; overflow rounds to infinity.
//  - kFiniteNan (e4m3fn): no infinity, S.1111.111 is NaN; overflow and infinities saturate to
//    the largest finite value, as PyTorch's conversion does.
//  - kUnsignedZeroNan (the fnuz types): no infinity and no -0; 0x80 is the only NaN, and
//    overflow, infinities and NaN all become it.
enum Float8Flavour { kIeee, kFiniteNan, kUnsignedZeroNan };

template <int MantissaBits, int Bias, Float8Flavour Flavour> struct float8_t {
    uint8_t x;
    static constexpr int kMantissaBits = MantissaBits;
    static constexpr uint32_t kMantissaMask = (1u << MantissaBits) - 1u;
    // The code of the largest finite magnitude.
    static constexpr uint32_t kMaxCode = Flavour == kIeee ? (0x7cu - 1u) : Flavour == kFiniteNan ? 0x7eu : 0x7fu;

    static uint8_t nan_code(uint32_t sign) { return static_cast<uint8_t>(Flavour == kUnsignedZeroNan ? 0x80u : (sign | 0x7fu)); }

    static uint8_t overflow_code(uint32_t sign) {
        if constexpr (Flavour == kIeee) return static_cast<uint8_t>(sign | 0x7cu);
        else if constexpr (Flavour == kFiniteNan) return static_cast<uint8_t>(sign | kMaxCode);
        else return 0x80u;
    }

    static float8_t from_float(float f) {
        float8_t r;
        const uint32_t bits = f32_bits(f);
        const uint32_t sign = (bits >> 24) & 0x80u;
        const uint32_t abits = bits & 0x7fffffffu;
        uint32_t code;
        if (abits > 0x7f800000u) { r.x = nan_code(sign); return r; }
        if (abits == 0x7f800000u) { r.x = overflow_code(sign); return r; }
        // Below the smallest normal the spacing is fixed: scale to units of the last place
        // (exact, a power of two) and round to the nearest even integer there.
        const float smallest_normal = std::ldexp(1.0f, 1 - Bias);
        const float af = bits_f32(abits);
        if (af < smallest_normal) {
            code = static_cast<uint32_t>(std::nearbyint(std::ldexp(af, Bias - 1 + MantissaBits)));
        } else {
            // Round float32's significand to MantissaBits bits, to nearest even; a carry moves
            // into the exponent field as it should. Then rebias the exponent.
            constexpr int drop = 23 - MantissaBits;
            const uint32_t rounded = abits + ((1u << (drop - 1)) - 1u) + ((abits >> drop) & 1u);
            const uint32_t rebias = static_cast<uint32_t>(127 - Bias) << MantissaBits;
            code = (rounded >> drop) - rebias;
        }
        if (code > kMaxCode) { r.x = overflow_code(sign); return r; }
        if constexpr (Flavour == kUnsignedZeroNan) {
            if (code == 0) { r.x = 0; return r; }  // no negative zero
        }
        r.x = static_cast<uint8_t>(sign | code);
        return r;
    }

    operator float() const {
        const uint32_t sign = static_cast<uint32_t>(x & 0x80u) << 24;
        const uint32_t e = (x >> MantissaBits) & (0x7fu >> MantissaBits);
        const uint32_t m = x & kMantissaMask;
        const uint32_t top_exponent = 0x7fu >> MantissaBits;
        if constexpr (Flavour == kUnsignedZeroNan) {
            if (x == 0x80u) return std::numeric_limits<float>::quiet_NaN();
        } else if constexpr (Flavour == kFiniteNan) {
            if (e == top_exponent && m == kMantissaMask) return bits_f32(sign | 0x7fc00000u);
        } else {
            if (e == top_exponent) return bits_f32(sign | (m ? 0x7fc00000u : 0x7f800000u));
        }
        if (e == 0) {
            const float magnitude = std::ldexp(static_cast<float>(m), 1 - Bias - MantissaBits);
            return bits_f32(f32_bits(magnitude) | sign);
        }
        return bits_f32(sign | ((e + 127u - Bias) << 23) | (m << (23 - MantissaBits)));
    }
};
using f8e4m3fn_t = float8_t<3, 7, kFiniteNan>;
using f8e5m2_t = float8_t<2, 15, kIeee>;
using f8e4m3fnuz_t = float8_t<3, 8, kUnsignedZeroNan>;
using f8e5m2fnuz_t = float8_t<2, 16, kUnsignedZeroNan>;

template <class T> constexpr bool is_float8 = std::is_same_v<T, f8e4m3fn_t> || std::is_same_v<T, f8e5m2_t> ||
                                              std::is_same_v<T, f8e4m3fnuz_t> || std::is_same_v<T, f8e5m2fnuz_t>;
template <class T> constexpr bool is_half_like = std::is_same_v<T, half_t> || std::is_same_v<T, bf16_t> || is_float8<T>;

// Significand bits (the implicit one included) of the float types narrower than float64;
// float32's 24 for any other type (an integer T only reaches it in discarded branches).
template <class T> struct significand_bits { static constexpr int value = 24; };
template <> struct significand_bits<half_t> { static constexpr int value = 11; };
template <> struct significand_bits<bf16_t> { static constexpr int value = 8; };
template <int M, int B, Float8Flavour F> struct significand_bits<float8_t<M, B, F>> { static constexpr int value = M + 1; };
template <class T> constexpr bool is_floating = std::is_floating_point_v<T> || is_half_like<T>;
template <class T> constexpr bool is_bool = std::is_same_v<T, bool>;
template <class T> constexpr bool is_integer = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// The type arithmetic on T is done in: float for the 16-bit floats, T otherwise.
template <class T> struct compute_type { using type = T; };
template <> struct compute_type<half_t> { using type = float; };
template <> struct compute_type<bf16_t> { using type = float; };
template <int M, int B, Float8Flavour F> struct compute_type<float8_t<M, B, F>> { using type = float; };
template <class T> using compute_t = typename compute_type<T>::type;

template <class T> inline compute_t<T> to_c(T v) { return static_cast<compute_t<T>>(v); }

// Conversion between any two dtypes (torch/C semantics: float -> int truncates toward zero,
// anything -> bool is != 0 so NaN is true). Out-of-range float -> int goes through int64.
template <class D, class S> inline D convert(S s) {
    if constexpr (std::is_same_v<D, S>) {
        return s;
    } else if constexpr (is_bool<D>) {
        return to_c(s) != 0;
    } else if constexpr (is_float8<D>) {
        // Through float32, as PyTorch converts (a float64 is rounded twice).
        return D::from_float(static_cast<float>(to_c(s)));
    } else if constexpr (is_half_like<D>) {
        if constexpr (std::is_same_v<S, double> || std::is_same_v<S, int64_t> || std::is_same_v<S, int32_t> ||
                      std::is_same_v<S, uint64_t> || std::is_same_v<S, uint32_t>) {
            return D::from_float(f64_to_f32_odd(static_cast<double>(s)));
        } else {
            return D::from_float(static_cast<float>(to_c(s)));
        }
    } else if constexpr (std::is_floating_point_v<D>) {
        return static_cast<D>(to_c(s));
    } else {
        if constexpr (is_floating<S> && std::is_same_v<D, uint64_t>) {
            // uint64 holds values up to 2^64: convert those directly; negative ones wrap
            // through int64 as for the other integer types; beyond both, 0 (as PyTorch).
            double d = static_cast<double>(to_c(s));
            if (d >= 0.0 && d < 18446744073709551616.0) return static_cast<uint64_t>(d);
            if (d >= -9223372036854775808.0 && d < 0.0) return static_cast<uint64_t>(static_cast<int64_t>(d));
            return 0;
        } else if constexpr (is_floating<S>) {
            double d = static_cast<double>(to_c(s));
            int64_t v = (d >= -9223372036854775808.0 && d < 9223372036854775808.0)
                            ? static_cast<int64_t>(d)
                            : std::numeric_limits<int64_t>::min();
            return static_cast<D>(v);
        } else {
            return static_cast<D>(s);
        }
    }
}

// Calls the body with T bound to the C++ type of a dtype code.
#define TP_DTYPE_CASE(code, ctype, T, ...) \
    case code: {                            \
        using T = ctype;                    \
        __VA_ARGS__;                        \
        break;                              \
    }
#define TP_DISPATCH(dtype, T, ...)                           \
    switch (dtype) {                                         \
        TP_DTYPE_CASE(::tp::kBool, bool, T, __VA_ARGS__)     \
        TP_DTYPE_CASE(::tp::kUInt8, uint8_t, T, __VA_ARGS__) \
        TP_DTYPE_CASE(::tp::kInt8, int8_t, T, __VA_ARGS__)   \
        TP_DTYPE_CASE(::tp::kInt16, int16_t, T, __VA_ARGS__) \
        TP_DTYPE_CASE(::tp::kInt32, int32_t, T, __VA_ARGS__) \
        TP_DTYPE_CASE(::tp::kInt64, int64_t, T, __VA_ARGS__) \
        TP_DTYPE_CASE(::tp::kFloat16, ::tp::half_t, T, __VA_ARGS__) \
        TP_DTYPE_CASE(::tp::kFloat32, float, T, __VA_ARGS__) \
        TP_DTYPE_CASE(::tp::kFloat64, double, T, __VA_ARGS__) \
        TP_DTYPE_CASE(::tp::kBFloat16, ::tp::bf16_t, T, __VA_ARGS__) \
        TP_DTYPE_CASE(::tp::kUInt16, uint16_t, T, __VA_ARGS__) \
        TP_DTYPE_CASE(::tp::kUInt32, uint32_t, T, __VA_ARGS__) \
        TP_DTYPE_CASE(::tp::kUInt64, uint64_t, T, __VA_ARGS__) \
        TP_DTYPE_CASE(::tp::kFloat8E4M3FN, ::tp::f8e4m3fn_t, T, __VA_ARGS__) \
        TP_DTYPE_CASE(::tp::kFloat8E5M2, ::tp::f8e5m2_t, T, __VA_ARGS__) \
        TP_DTYPE_CASE(::tp::kFloat8E4M3FNUZ, ::tp::f8e4m3fnuz_t, T, __VA_ARGS__) \
        TP_DTYPE_CASE(::tp::kFloat8E5M2FNUZ, ::tp::f8e5m2fnuz_t, T, __VA_ARGS__) \
        default:                                             \
            ::tp::value_error("invalid dtype code");         \
    }

// ---------------------------------------------------------------------------------------------
// Storage: a Python object owning (or borrowing) host memory.
struct StorageObject {
    PyObject_HEAD
    char* data;
    int64_t nbytes;
    int64_t block_size;  // > 0 when the memory is a caching-allocator block
    int readonly;
    int has_view;        // wrap(): the buffer of the wrapped object, released on dealloc
    Py_buffer view;
    PyObject* weakreflist;
};
extern PyTypeObject* StorageType;

PyObject* storage_alloc(int64_t nbytes);

// ---------------------------------------------------------------------------------------------
// Argument parsing for the fast-call entry points.
int64_t arg_int(PyObject* o, const char* fname, const char* what);
double arg_double(PyObject* o, const char* fname, const char* what);
int arg_dtype(PyObject* o, const char* fname);
// arg_dtype restricted to float32 and float64 (the fused kernels' dtypes); ValueError otherwise.
int float_dtype(PyObject* o, const char* fname);
int parse_shape(PyObject* o, int64_t* shape, const char* fname, const char* what = "shape");
void check_nargs(Py_ssize_t n, Py_ssize_t expected, const char* fname);
inline bool is_py_scalar(PyObject* o) { return PyLong_Check(o) || PyFloat_Check(o) || PyBool_Check(o); }

// An operand: (storage, offset, strides) or a Python scalar turned into a stride-0 operand.
struct Operand {
    char* data;  // address of the element at `offset`
    int64_t strides[MAX_DIMS];  // in elements
    StorageObject* storage;
    bool is_scalar;
    alignas(16) char scalar_buf[16];
    Operand() = default;
    Operand(const Operand&) = delete;
    Operand& operator=(const Operand&) = delete;
};

void parse_operand(PyObject* o, int dtype, int ndim, const int64_t* shape, Operand& op, const char* fname,
                   const char* what, bool allow_scalar, bool writable);
// The checks of parse_operand on an operand's three parts (a tensor's storage, offset, strides).
void fill_operand(PyObject* storage, PyObject* offset, PyObject* strides, int dtype, int ndim, const int64_t* shape,
                  Operand& op, const char* fname, const char* what, bool writable);
// Store a Python number converted to `dtype` at dst.
void scalar_to_dtype(PyObject* o, int dtype, void* dst, const char* fname);

inline int64_t numel_of(int ndim, const int64_t* shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= shape[i];
    return n;
}

// ---------------------------------------------------------------------------------------------
// Threads and the GIL.
extern int g_num_threads;  // the user's setting: tp.set_num_threads (default: every core)

// Threads to run a parallel region on now: g_num_threads, or fewer while other processes keep
// cores busy (threads.cpp). Use it for how many threads run, never for how work is chunked.
int active_threads();
// Gives OpenBLAS the same thread count before a GEMM (a call only when the count changed).
void sync_blas_threads();
// OpenBLAS on the calling thread only, for GEMMs inside our own parallel regions (the next
// sync_blas_threads restores the count).
void serial_blas();
// Forget the measured load (after tp.set_num_threads).
void reset_thread_monitor();
bool adaptive_threads_enabled();

struct ReleaseGil {
    PyThreadState* state = nullptr;
    explicit ReleaseGil(bool on) {
        if (on) state = PyEval_SaveThread();
    }
    ~ReleaseGil() {
        if (state) PyEval_RestoreThread(state);
    }
    ReleaseGil(const ReleaseGil&) = delete;
    ReleaseGil& operator=(const ReleaseGil&) = delete;
};

// fn(chunk, begin, end) for fixed chunks of [0, total) (boundaries depend only on total and
// nchunks, so results never depend on the thread count or on scheduling), handed out dynamically:
// on a shared 2-core machine a descheduled thread must not hold back the whole op. Returns the
// number of chunks made (fewer than asked when total is small).
template <class F> int64_t parallel_chunks(int64_t total, int64_t nchunks, F&& fn) {
    if (total <= 0) return 0;
    nchunks = std::max<int64_t>(1, std::min(nchunks, total));
    const int64_t chunk = (total + nchunks - 1) / nchunks;
    nchunks = (total + chunk - 1) / chunk;
#ifdef _OPENMP
    const int threads = nchunks > 1 && g_num_threads > 1 ? active_threads() : 1;
    if (threads > 1) {
        const int nt = static_cast<int>(std::min<int64_t>(threads, nchunks));
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
        for (int64_t c = 0; c < nchunks; ++c) fn(c, c * chunk, std::min(total, (c + 1) * chunk));
        return nchunks;
    }
#endif
    for (int64_t c = 0; c < nchunks; ++c) fn(c, c * chunk, std::min(total, (c + 1) * chunk));
    return nchunks;
}

// Chunks per thread in parallel_range: enough to rebalance when a core is busy elsewhere.
constexpr int64_t CHUNKS_PER_THREAD = 4;

// fn(begin, end) over [0, total): in one call when small, else in chunks over threads.
template <class F> void parallel_range(int64_t total, int64_t threshold, F&& fn) {
    if (total <= 0) return;
    if (total >= threshold && g_num_threads > 1) {
        parallel_chunks(total, g_num_threads * CHUNKS_PER_THREAD,
                        [&](int64_t, int64_t b, int64_t e) { fn(b, e); });
        return;
    }
    fn(int64_t(0), total);
}

// ---------------------------------------------------------------------------------------------
// The strided N-d loop: N operands over one shape, strides in bytes, dims coalesced.
template <int N> struct Loop {
    int ndim;
    int64_t numel;
    int64_t shape[MAX_DIMS];
    int64_t st[N][MAX_DIMS];
    char* ptr[N];

    // ops[i] strides are in elements; itemsize[i] converts them to bytes.
    void init(int nd, const int64_t* shp, Operand* const* ops, const int* itemsize) {
        numel = numel_of(nd, shp);
        ndim = 0;
        for (int i = 0; i < N; ++i) ptr[i] = ops[i]->data;
        for (int d = 0; d < nd; ++d) {
            if (shp[d] == 1) continue;
            if (ndim > 0) {
                bool merge = true;
                for (int i = 0; i < N; ++i)
                    if (st[i][ndim - 1] != ops[i]->strides[d] * itemsize[i] * shp[d]) merge = false;
                if (merge) {
                    shape[ndim - 1] *= shp[d];
                    for (int i = 0; i < N; ++i) st[i][ndim - 1] = ops[i]->strides[d] * itemsize[i];
                    continue;
                }
            }
            shape[ndim] = shp[d];
            for (int i = 0; i < N; ++i) st[i][ndim] = ops[i]->strides[d] * itemsize[i];
            ++ndim;
        }
        if (ndim == 0) {
            ndim = 1;
            shape[0] = 1;
            for (int i = 0; i < N; ++i) st[i][0] = 0;
        }
    }

    // f(char* p[N], int64_t n, const int64_t s[N]) for each inner run of the linear range.
    template <class F> void run_range(int64_t begin, int64_t end, F& f) const { run_range_at(ptr, begin, end, f); }

    // As run_range, with the operands' base pointers given instead of ptr.
    template <class F> void run_range_at(char* const* base, int64_t begin, int64_t end, F& f) const {
        const int nd = ndim;
        const int64_t inner = shape[nd - 1];
        int64_t idx[MAX_DIMS];
        char* p[N];
        int64_t is[N];
        int64_t rem = begin;
        for (int d = nd - 1; d >= 0; --d) {
            idx[d] = rem % shape[d];
            rem /= shape[d];
        }
        for (int i = 0; i < N; ++i) {
            p[i] = base[i];
            for (int d = 0; d < nd; ++d) p[i] += idx[d] * st[i][d];
            is[i] = st[i][nd - 1];
        }
        int64_t pos = begin;
        while (pos < end) {
            int64_t n = std::min(inner - idx[nd - 1], end - pos);
            f(p, n, is);
            pos += n;
            if (pos >= end) break;
            for (int i = 0; i < N; ++i) p[i] += n * is[i];
            idx[nd - 1] += n;
            int d = nd - 1;
            while (d > 0 && idx[d] >= shape[d]) {
                for (int i = 0; i < N; ++i) p[i] -= shape[d] * st[i][d];
                idx[d] = 0;
                --d;
                ++idx[d];
                for (int i = 0; i < N; ++i) p[i] += st[i][d];
            }
        }
    }

    template <class F> void run(F&& f) const {
        parallel_range(numel, PARALLEL_THRESHOLD, [&](int64_t b, int64_t e) { run_range(b, e, f); });
    }
};

// Fixed-size fast-call entry point type and the wrapper that turns C++ errors into Python ones.
using FastFn = PyObject* (*)(PyObject* const*, Py_ssize_t);

template <FastFn F> PyObject* guarded(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    try {
        return F(args, nargs);
    } catch (const KernelError& e) {
        PyErr_SetString(e.type, e.msg.c_str());
    } catch (const PythonErrorSet&) {
    } catch (const std::bad_alloc&) {
        PyErr_SetString(PyExc_MemoryError, "cpu: out of memory");
    } catch (const std::exception& e) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
    }
    return nullptr;
}

inline PyObject* none() { Py_RETURN_NONE; }

}  // namespace tp
