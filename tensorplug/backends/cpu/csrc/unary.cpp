// unary(op, dtype, shape, out, a)
#include <algorithm>

#include "elementwise.h"
#include "families.h"
#include "ops.h"
#include "simd.h"

namespace tp {

namespace {

// Inverse error function: a single-precision rational start (Giles, "Approximating the erfinv
// function", 2010) refined by two Newton steps, on erfc near +-1 where erf loses precision.
double erfinv_double(double y) {
    if (!(y > -1.0 && y < 1.0)) {
        if (y == 1.0) return std::numeric_limits<double>::infinity();
        if (y == -1.0) return -std::numeric_limits<double>::infinity();
        return std::numeric_limits<double>::quiet_NaN();
    }
    if (y == 0.0) return y;
    double w = -std::log((1.0 - y) * (1.0 + y));
    double p;
    if (w < 5.0) {
        w -= 2.5;
        p = 2.81022636e-08;
        p = 3.43273939e-07 + p * w;
        p = -3.5233877e-06 + p * w;
        p = -4.39150654e-06 + p * w;
        p = 0.00021858087 + p * w;
        p = -0.00125372503 + p * w;
        p = -0.00417768164 + p * w;
        p = 0.246640727 + p * w;
        p = 1.50140941 + p * w;
    } else {
        w = std::sqrt(w) - 3.0;
        p = -0.000200214257;
        p = 0.000100950558 + p * w;
        p = 0.00134934322 + p * w;
        p = -0.00367342844 + p * w;
        p = 0.00573950773 + p * w;
        p = -0.0076224613 + p * w;
        p = 0.00943887047 + p * w;
        p = 1.00167406 + p * w;
        p = 2.83297682 + p * w;
    }
    const double sign = y < 0 ? -1.0 : 1.0;
    const double ay = std::fabs(y);
    double x = std::fabs(p * y);
    const double two_over_sqrt_pi = 1.1283791670955126;
    for (int i = 0; i < 2; ++i) {
        double deriv = two_over_sqrt_pi * std::exp(-x * x);
        if (deriv == 0.0) break;
        if (ay <= 0.5)
            x -= (std::erf(x) - ay) / deriv;
        else
            x += (std::erfc(x) - (1.0 - ay)) / deriv;
    }
    return sign * x;
}

bool unary_out_is_bool(int op) {
    return op == U_LOGICAL_NOT || op == U_ISNAN || op == U_ISINF || op == U_ISFINITE;
}

bool unary_supported(int op, int dtype) {
    if (is_float_dtype(dtype)) return op != U_BITWISE_NOT;
    switch (op) {
        case U_ABS: case U_SIGN: case U_FLOOR: case U_CEIL: case U_ROUND: case U_TRUNC: case U_SQUARE:
        case U_LOGICAL_NOT: case U_BITWISE_NOT: case U_ISNAN: case U_ISINF: case U_ISFINITE:
            return true;
        case U_NEG: case U_RELU:
            return dtype != kBool;
        default:
            return false;
    }
}

#ifdef TP_X86_SIMD
// float32 exp, log, sigmoid, tanh and erf sixteen lanes at a time on AVX-512 CPUs, eight on AVX2
// ones (libm's scalar calls were 2.8-6x slower than PyTorch's vectorized ones; erf made gelu
// 10x); simd_lanes.inc's map keeps an element's value independent of its layout and position.
// True when the op ran on lanes (float32 on an AVX2 CPU).
template <class T> bool unary_lanes(const Loop<2>& L, LaneFunction fn) {
    if constexpr (!std::is_same_v<T, float>) {
        return false;
    } else {
        if (!have_avx2()) return false;
        L.run([&](char** p, int64_t n, const int64_t* s) {
            const float* x = reinterpret_cast<const float*>(p[1]);
            float* y = reinterpret_cast<float*>(p[0]);
            const int64_t xs = s[1] / 4, ys = s[0] / 4;  // bytes to elements
            if (have_avx512()) lanes16::map_function(fn, x, xs, y, ys, n);
            else lanes8::map_function(fn, x, xs, y, ys, n);
        });
        return true;
    }
}
#define TP_ON_LANES(f) if (unary_lanes<T>(L, LaneFunction::f)) break
#else
#define TP_ON_LANES(f) (void)0
#endif

#define FLOAT_ONLY(...)                        \
    if constexpr (is_floating<T>) __VA_ARGS__; \
    break

template <class T> void unary_T(int op, const Loop<2>& L) {
    using C = compute_t<T>;
    switch (op) {
        case U_NEG:
            if constexpr (!is_bool<T>) run_unary<T, T>(L, [](C x) { return -x; });
            break;
        case U_ABS:
            if constexpr (is_floating<T>)
                run_unary<T, T>(L, [](C x) { return std::fabs(x); });
            else if constexpr (std::is_signed_v<T>)
                run_unary<T, T>(L, [](C x) { return x < 0 ? static_cast<C>(-x) : x; });
            else
                run_unary<T, T>(L, [](C x) { return x; });
            break;
        case U_SIGN:
            if constexpr (is_floating<T>)
                run_unary<T, T>(L, [](C x) { return static_cast<C>((x > 0) - (x < 0)); });  // NaN: 0, as PyTorch
            else if constexpr (is_bool<T>)
                run_unary<T, T>(L, [](C x) { return x; });
            else
                run_unary<T, T>(L, [](C x) { return static_cast<C>((x > 0) - (x < 0)); });
            break;
        case U_EXP:
            TP_ON_LANES(exp);
            FLOAT_ONLY(run_unary<T, T>(L, [](C x) { return std::exp(x); }));
        case U_EXP2: FLOAT_ONLY(run_unary<T, T>(L, [](C x) { return std::exp2(x); }));
        case U_LOG:
            TP_ON_LANES(log);
            FLOAT_ONLY(run_unary<T, T>(L, [](C x) { return std::log(x); }));
        case U_LOG2: FLOAT_ONLY(run_unary<T, T>(L, [](C x) { return std::log2(x); }));
        case U_LOG10: FLOAT_ONLY(run_unary<T, T>(L, [](C x) { return std::log10(x); }));
        case U_LOG1P: FLOAT_ONLY(run_unary<T, T>(L, [](C x) { return std::log1p(x); }));
        case U_EXPM1: FLOAT_ONLY(run_unary<T, T>(L, [](C x) { return std::expm1(x); }));
        case U_SQRT: FLOAT_ONLY(run_unary<T, T>(L, [](C x) { return std::sqrt(x); }));
        case U_RSQRT: FLOAT_ONLY(run_unary<T, T>(L, [](C x) { return C(1) / std::sqrt(x); }));
        case U_SIN: FLOAT_ONLY(run_unary<T, T>(L, [](C x) { return std::sin(x); }));
        case U_COS: FLOAT_ONLY(run_unary<T, T>(L, [](C x) { return std::cos(x); }));
        case U_TAN: FLOAT_ONLY(run_unary<T, T>(L, [](C x) { return std::tan(x); }));
        case U_ASIN: FLOAT_ONLY(run_unary<T, T>(L, [](C x) { return std::asin(x); }));
        case U_ACOS: FLOAT_ONLY(run_unary<T, T>(L, [](C x) { return std::acos(x); }));
        case U_ATAN: FLOAT_ONLY(run_unary<T, T>(L, [](C x) { return std::atan(x); }));
        case U_SINH: FLOAT_ONLY(run_unary<T, T>(L, [](C x) { return std::sinh(x); }));
        case U_COSH: FLOAT_ONLY(run_unary<T, T>(L, [](C x) { return std::cosh(x); }));
        case U_TANH:
            TP_ON_LANES(tanh);
            FLOAT_ONLY(run_unary<T, T>(L, [](C x) { return std::tanh(x); }));
        case U_SIGMOID:
            TP_ON_LANES(sigmoid);
            FLOAT_ONLY(run_unary<T, T>(L, [](C x) { return C(1) / (C(1) + std::exp(-x)); }));
        case U_ERF:
            TP_ON_LANES(erf);
            FLOAT_ONLY(run_unary<T, T>(L, [](C x) { return std::erf(x); }));
        case U_ERFINV:
            FLOAT_ONLY(run_unary<T, T>(L, [](C x) { return static_cast<C>(erfinv_double(static_cast<double>(x))); }));
        case U_RECIPROCAL: FLOAT_ONLY(run_unary<T, T>(L, [](C x) { return C(1) / x; }));
        case U_FLOOR:
            if constexpr (is_floating<T>) run_unary<T, T>(L, [](C x) { return std::floor(x); });
            else run_unary<T, T>(L, [](C x) { return x; });
            break;
        case U_CEIL:
            if constexpr (is_floating<T>) run_unary<T, T>(L, [](C x) { return std::ceil(x); });
            else run_unary<T, T>(L, [](C x) { return x; });
            break;
        case U_ROUND:  // half to even: nearbyint under the default rounding mode
            if constexpr (is_floating<T>) run_unary<T, T>(L, [](C x) { return std::nearbyint(x); });
            else run_unary<T, T>(L, [](C x) { return x; });
            break;
        case U_TRUNC:
            if constexpr (is_floating<T>) run_unary<T, T>(L, [](C x) { return std::trunc(x); });
            else run_unary<T, T>(L, [](C x) { return x; });
            break;
        case U_SQUARE:
            if constexpr (is_bool<T>) run_unary<T, T>(L, [](C x) { return x; });
            else run_unary<T, T>(L, [](C x) { return x * x; });
            break;
        case U_RELU:
            // -0.0 and NaN stay as they are, as in PyTorch
            if constexpr (!is_bool<T>) run_unary<T, T>(L, [](C x) { return x < 0 ? C(0) : x; });
            break;
        case U_LOGICAL_NOT:
            run_unary<bool, T>(L, [](C x) { return !(x != 0); });
            break;
        case U_BITWISE_NOT:
            if constexpr (is_bool<T>) run_unary<T, T>(L, [](C x) { return !x; });
            else if constexpr (is_integer<T>) run_unary<T, T>(L, [](C x) { return static_cast<C>(~x); });
            break;
        case U_ISNAN:
            if constexpr (is_floating<T>) run_unary<bool, T>(L, [](C x) { return x != x; });
            else run_unary<bool, T>(L, [](C) { return false; });
            break;
        case U_ISINF:
            if constexpr (is_floating<T>) run_unary<bool, T>(L, [](C x) { return std::isinf(x); });
            else run_unary<bool, T>(L, [](C) { return false; });
            break;
        case U_ISFINITE:
            if constexpr (is_floating<T>) run_unary<bool, T>(L, [](C x) { return std::isfinite(x); });
            else run_unary<bool, T>(L, [](C) { return true; });
            break;
        default:
            break;
    }
}

}  // namespace

void apply_unary(int op, int dtype, int nd, const int64_t* shape, Operand& out, Operand& a) {
    if (op < 0 || op >= U_NUM_OPS) value_error("unary: invalid op code " + std::to_string(op));
    if (!unary_supported(op, dtype))
        value_error(std::string("unary: ") + kUnaryOpNames[op].name + " is not supported for dtype " +
                    kDTypeName[dtype]);
    Loop<2> L;
    Operand* ops[2] = {&out, &a};
    int isz[2] = {kItemSize[unary_out_dtype(op, dtype)], kItemSize[dtype]};
    L.init(nd, shape, ops, isz);
    if (L.numel == 0) return;
    ReleaseGil nogil(L.numel >= PARALLEL_THRESHOLD);
    TP_DISPATCH(dtype, T, unary_T<T>(op, L));
}

int unary_out_dtype(int op, int dtype) { return unary_out_is_bool(op) ? kBool : dtype; }

namespace {

PyObject* py_unary(PyObject* const* args, Py_ssize_t nargs) {
    check_nargs(nargs, 5, "unary");
    const int op = static_cast<int>(arg_int(args[0], "unary", "op"));
    if (op < 0 || op >= U_NUM_OPS) value_error("unary: invalid op code " + std::to_string(op));
    int dtype = arg_dtype(args[1], "unary");
    int64_t shape[MAX_DIMS];
    int nd = parse_shape(args[2], shape, "unary");
    Operand out, a;
    parse_operand(args[3], unary_out_dtype(op, dtype), nd, shape, out, "unary", "out", false, true);
    parse_operand(args[4], dtype, nd, shape, a, "unary", "a", true, false);
    apply_unary(op, dtype, nd, shape, out, a);
    return none();
}

}  // namespace

void register_unary(std::vector<PyMethodDef>& methods) {
    methods.push_back(fast_method<py_unary>(
        "unary", "unary(op, dtype, shape, out, a): out = op(a); logical_not/isnan/isinf/isfinite write bool."));
}

}  // namespace tp
