// binary(op, dtype, shape, out, a, b), compare(op, dtype, shape, out, a, b),
// where(dtype, shape, out, cond, a, b)
#include "elementwise.h"
#include "families.h"
#include "ops.h"

namespace tp {

namespace {

// ----- integer helpers: Python semantics, no UB (the caller rules out division by zero) -----
template <class T> T int_floordiv(T a, T b) {
    if constexpr (std::is_unsigned_v<T>) {
        return static_cast<T>(a / b);
    } else {
        int64_t x = a, y = b;
        if (y == -1) return static_cast<T>(static_cast<int64_t>(0ULL - static_cast<uint64_t>(x)));
        int64_t q = x / y;
        if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
        return static_cast<T>(q);
    }
}

template <class T> T int_remainder(T a, T b) {
    if constexpr (std::is_unsigned_v<T>) {
        return static_cast<T>(a % b);
    } else {
        int64_t x = a, y = b;
        if (y == -1) return 0;
        int64_t r = x % y;
        if (r != 0 && ((r < 0) != (y < 0))) r += y;
        return static_cast<T>(r);
    }
}

template <class T> T int_fmod(T a, T b) {
    if constexpr (std::is_unsigned_v<T>) {
        return static_cast<T>(a % b);
    } else {
        int64_t x = a, y = b;
        if (y == -1) return 0;
        return static_cast<T>(x % y);
    }
}

template <class T> T int_pow(T a, T b) {
    if constexpr (std::is_signed_v<T>) {
        // A negative exponent (the contract, as PyTorch): 1 for base 1, +-1 for base -1, else 0.
        if (b < 0) return a == 1 ? T(1) : a == -1 ? ((b & 1) ? T(-1) : T(1)) : T(0);
    }
    uint64_t base = static_cast<uint64_t>(static_cast<int64_t>(a));
    uint64_t e = static_cast<uint64_t>(static_cast<int64_t>(b));
    uint64_t r = 1;
    while (e) {
        if (e & 1) r *= base;
        base *= base;
        e >>= 1;
    }
    return static_cast<T>(r);
}

template <class T> T int_lshift(T a, T b) {
    constexpr int64_t bits = sizeof(T) * 8;
    int64_t s = static_cast<int64_t>(b);
    if (s < 0 || s >= bits) return 0;
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) << s);
}

template <class T> T int_rshift(T a, T b) {
    constexpr int64_t bits = sizeof(T) * 8;
    int64_t s = static_cast<int64_t>(b);
    if (s < 0 || s >= bits) {
        if constexpr (std::is_signed_v<T>) return a < 0 ? T(-1) : T(0);
        return 0;
    }
    return static_cast<T>(a >> s);
}

// ----- float helpers: Python's float // and % -----
template <class C> C py_floordiv(C a, C b) {
    if (b == 0) return a / b;
    C mod = std::fmod(a, b);
    C div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
    if (div == 0) return std::copysign(C(0), a / b);
    C fl = std::floor(div);
    if (div - fl > C(0.5)) fl += 1;
    return fl;
}

// The contract's remainder (PyTorch's): fmod, moved by b when nonzero and of the other sign; an
// exact multiple keeps fmod's zero, signed like a (Python's % would sign it like b).
template <class C> C py_remainder(C a, C b) {
    C mod = std::fmod(a, b);
    if (mod != 0 && ((b < 0) != (mod < 0))) mod += b;
    return mod;
}

bool binary_out_is_bool(int op) { return op == B_LOGICAL_AND || op == B_LOGICAL_OR || op == B_LOGICAL_XOR; }

bool binary_supported(int op, int dtype) {
    switch (op) {
        case B_LOGICAL_AND: case B_LOGICAL_OR: case B_LOGICAL_XOR: case B_ADD: case B_MUL: case B_MAXIMUM:
        case B_MINIMUM:
            return true;
        case B_SUB: case B_FLOOR_DIVIDE: case B_REMAINDER: case B_FMOD: case B_POW:
            return dtype != kBool;
        case B_DIV: case B_ATAN2: case B_COPYSIGN: case B_HYPOT: case B_RELU_BACKWARD:
            return is_float_dtype(dtype);
        case B_BITWISE_AND: case B_BITWISE_OR: case B_BITWISE_XOR:
            return !is_float_dtype(dtype);
        case B_LSHIFT: case B_RSHIFT:
            return is_int_dtype(dtype);
        default:
            return false;
    }
}

template <class T> void binary_T(int op, const Loop<3>& L) {
    using C = compute_t<T>;
    constexpr bool F = is_floating<T>;
    constexpr bool I = is_integer<T>;
    constexpr bool B = is_bool<T>;
    switch (op) {
        case B_ADD:
            if constexpr (B) run_binary<T, T>(L, [](C a, C b) { return a || b; });
            else run_binary<T, T>(L, [](C a, C b) { return a + b; });
            break;
        case B_SUB:
            if constexpr (!B) run_binary<T, T>(L, [](C a, C b) { return a - b; });
            break;
        case B_MUL:
            if constexpr (B) run_binary<T, T>(L, [](C a, C b) { return a && b; });
            else run_binary<T, T>(L, [](C a, C b) { return a * b; });
            break;
        case B_DIV:
            if constexpr (F) run_binary<T, T>(L, [](C a, C b) { return a / b; });
            break;
        case B_FLOOR_DIVIDE:
            if constexpr (F) run_binary<T, T>(L, [](C a, C b) { return py_floordiv(a, b); });
            else if constexpr (I) run_binary<T, T>(L, [](C a, C b) { return int_floordiv<T>(a, b); });
            break;
        case B_REMAINDER:
            if constexpr (F) run_binary<T, T>(L, [](C a, C b) { return py_remainder(a, b); });
            else if constexpr (I) run_binary<T, T>(L, [](C a, C b) { return int_remainder<T>(a, b); });
            break;
        case B_FMOD:
            if constexpr (F) run_binary<T, T>(L, [](C a, C b) { return std::fmod(a, b); });
            else if constexpr (I) run_binary<T, T>(L, [](C a, C b) { return int_fmod<T>(a, b); });
            break;
        case B_POW:
            if constexpr (F) run_binary<T, T>(L, [](C a, C b) { return std::pow(a, b); });
            else if constexpr (I) run_binary<T, T>(L, [](C a, C b) { return int_pow<T>(a, b); });
            break;
        case B_MAXIMUM:
            if constexpr (F) run_binary<T, T>(L, [](C a, C b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); });
            else run_binary<T, T>(L, [](C a, C b) { return a > b ? a : b; });
            break;
        case B_MINIMUM:
            if constexpr (F) run_binary<T, T>(L, [](C a, C b) { return a != a ? a : (b != b ? b : (a < b ? a : b)); });
            else run_binary<T, T>(L, [](C a, C b) { return a < b ? a : b; });
            break;
        case B_ATAN2:
            if constexpr (F) run_binary<T, T>(L, [](C a, C b) { return std::atan2(a, b); });
            break;
        case B_COPYSIGN:
            if constexpr (F) run_binary<T, T>(L, [](C a, C b) { return std::copysign(a, b); });
            break;
        case B_HYPOT:
            if constexpr (F) run_binary<T, T>(L, [](C a, C b) { return std::hypot(a, b); });
            break;
        case B_BITWISE_AND:
            if constexpr (!F) run_binary<T, T>(L, [](C a, C b) { return static_cast<C>(a & b); });
            break;
        case B_BITWISE_OR:
            if constexpr (!F) run_binary<T, T>(L, [](C a, C b) { return static_cast<C>(a | b); });
            break;
        case B_BITWISE_XOR:
            if constexpr (!F) run_binary<T, T>(L, [](C a, C b) { return static_cast<C>(a ^ b); });
            break;
        case B_LSHIFT:
            if constexpr (I) run_binary<T, T>(L, [](C a, C b) { return int_lshift<T>(a, b); });
            break;
        case B_RSHIFT:
            if constexpr (I) run_binary<T, T>(L, [](C a, C b) { return int_rshift<T>(a, b); });
            break;
        case B_RELU_BACKWARD:  // a the gradient, b relu's output: NaN outputs pass the gradient
            if constexpr (F) run_binary<T, T>(L, [](C a, C b) { return b <= C(0) ? C(0) : a; });
            break;
        case B_LOGICAL_AND:
            run_binary<bool, T>(L, [](C a, C b) { return (a != 0) && (b != 0); });
            break;
        case B_LOGICAL_OR:
            run_binary<bool, T>(L, [](C a, C b) { return (a != 0) || (b != 0); });
            break;
        case B_LOGICAL_XOR:
            run_binary<bool, T>(L, [](C a, C b) { return (a != 0) != (b != 0); });
            break;
        default:
            break;
    }
}

// True when pred holds for any element b touches (stride-0 dims are visited once).
template <class T, class P> bool operand_any(const Operand& b, int nd, const int64_t* shape, P pred) {
    int64_t shp[MAX_DIMS];
    for (int d = 0; d < nd; ++d) shp[d] = b.strides[d] == 0 ? 1 : shape[d];
    Loop<1> L;
    Operand* ops[1] = {const_cast<Operand*>(&b)};
    int isz[1] = {static_cast<int>(sizeof(T))};
    L.init(nd, shp, ops, isz);
    bool found = false;
    auto f = [&](char** p, int64_t n, const int64_t* s) {
        for (int64_t i = 0; i < n && !found; ++i)
            if (pred(*reinterpret_cast<const T*>(p[0] + i * s[0]))) found = true;
    };
    L.run_range(0, L.numel, f);
    return found;
}

void check_integer_operands(int op, int dtype, const Operand& b, int nd, const int64_t* shape) {
    if (!is_int_dtype(dtype)) return;
    if (op == B_FLOOR_DIVIDE || op == B_REMAINDER || op == B_FMOD) {
        bool zero = false;
        TP_DISPATCH(dtype, T, zero = operand_any<T>(b, nd, shape, [](T v) { return v == 0; }));
        if (zero)
            raise(PyExc_ZeroDivisionError, std::string("integer division by zero in ") + kBinaryOpNames[op].name);
    }
}

template <class T> void compare_T(int op, const Loop<3>& L) {
    using C = compute_t<T>;
    switch (op) {
        case C_EQ: run_binary<bool, T>(L, [](C a, C b) { return a == b; }); break;
        case C_NE: run_binary<bool, T>(L, [](C a, C b) { return a != b; }); break;
        case C_LT: run_binary<bool, T>(L, [](C a, C b) { return a < b; }); break;
        case C_LE: run_binary<bool, T>(L, [](C a, C b) { return a <= b; }); break;
        case C_GT: run_binary<bool, T>(L, [](C a, C b) { return a > b; }); break;
        case C_GE: run_binary<bool, T>(L, [](C a, C b) { return a >= b; }); break;
        default: break;
    }
}

}  // namespace

// Checks and runs binary op `op` (compare op when is_compare) in `dtype` over parsed operands.
void apply_binary(bool is_compare, int op, int dtype, int nd, const int64_t* shape, Operand& out, Operand& a,
                Operand& b) {
    if (op < 0 || op >= (is_compare ? int(C_NUM_OPS) : int(B_NUM_OPS)))
        value_error(std::string(is_compare ? "compare" : "binary") + ": invalid op code " + std::to_string(op));
    if (!is_compare && !binary_supported(op, dtype))
        value_error(std::string("binary: ") + kBinaryOpNames[op].name + " is not supported for dtype " +
                    kDTypeName[dtype]);
    Loop<3> L;
    Operand* ops[3] = {&out, &a, &b};
    const int out_dtype = binary_out_dtype(is_compare, op, dtype);
    int isz[3] = {kItemSize[out_dtype], kItemSize[dtype], kItemSize[dtype]};
    L.init(nd, shape, ops, isz);
    if (L.numel == 0) return;
    if (!is_compare) check_integer_operands(op, dtype, b, nd, shape);
    ReleaseGil nogil(L.numel >= PARALLEL_THRESHOLD);
    if (is_compare) {
        TP_DISPATCH(dtype, T, compare_T<T>(op, L));
    } else {
        TP_DISPATCH(dtype, T, binary_T<T>(op, L));
    }
}

int binary_out_dtype(bool is_compare, int op, int dtype) {
    return (is_compare || binary_out_is_bool(op)) ? kBool : dtype;
}

namespace {

// Shared entry for binary and compare: (op, dtype, shape, out, a, b).
template <bool IsCompare> PyObject* binary_entry(PyObject* const* args, Py_ssize_t nargs) {
    const char* fname = IsCompare ? "compare" : "binary";
    check_nargs(nargs, 6, fname);
    const int op = static_cast<int>(arg_int(args[0], fname, "op"));
    int dtype = arg_dtype(args[1], fname);
    int64_t shape[MAX_DIMS];
    int nd = parse_shape(args[2], shape, fname);
    if (op < 0 || op >= (IsCompare ? int(C_NUM_OPS) : int(B_NUM_OPS)))
        value_error(std::string(fname) + ": invalid op code " + std::to_string(op));
    Operand out, a, b;
    parse_operand(args[3], binary_out_dtype(IsCompare, op, dtype), nd, shape, out, fname, "out", false, true);
    parse_operand(args[4], dtype, nd, shape, a, fname, "a", true, false);
    parse_operand(args[5], dtype, nd, shape, b, fname, "b", true, false);
    apply_binary(IsCompare, op, dtype, nd, shape, out, a, b);
    return none();
}

PyObject* py_binary(PyObject* const* args, Py_ssize_t nargs) { return binary_entry<false>(args, nargs); }
PyObject* py_compare(PyObject* const* args, Py_ssize_t nargs) { return binary_entry<true>(args, nargs); }

template <class U> void where_loop(const Loop<4>& L) {
    L.run([](char** p, int64_t n, const int64_t* s) {
        constexpr int64_t su = sizeof(U);
        if (s[0] == su && s[1] == 1 && s[2] == su && s[3] == su) {
            U* o = reinterpret_cast<U*>(p[0]);
            const bool* c = reinterpret_cast<const bool*>(p[1]);
            const U* a = reinterpret_cast<const U*>(p[2]);
            const U* b = reinterpret_cast<const U*>(p[3]);
            for (int64_t i = 0; i < n; ++i) o[i] = c[i] ? a[i] : b[i];
            return;
        }
        for (int64_t i = 0; i < n; ++i) {
            bool c = *reinterpret_cast<const bool*>(p[1] + i * s[1]);
            *reinterpret_cast<U*>(p[0] + i * s[0]) = *reinterpret_cast<const U*>((c ? p[2] + i * s[2] : p[3] + i * s[3]));
        }
    });
}

PyObject* py_where(PyObject* const* args, Py_ssize_t nargs) {
    check_nargs(nargs, 6, "where");
    int dtype = arg_dtype(args[0], "where");
    int64_t shape[MAX_DIMS];
    int nd = parse_shape(args[1], shape, "where");
    Operand out, cond, a, b;
    parse_operand(args[2], dtype, nd, shape, out, "where", "out", false, true);
    parse_operand(args[3], kBool, nd, shape, cond, "where", "cond", true, false);
    parse_operand(args[4], dtype, nd, shape, a, "where", "a", true, false);
    parse_operand(args[5], dtype, nd, shape, b, "where", "b", true, false);
    Loop<4> L;
    Operand* ops[4] = {&out, &cond, &a, &b};
    const int s = kItemSize[dtype];
    int isz[4] = {s, 1, s, s};
    L.init(nd, shape, ops, isz);
    if (L.numel == 0) return none();
    ReleaseGil nogil(L.numel >= PARALLEL_THRESHOLD);
    switch (s) {
        case 1: where_loop<uint8_t>(L); break;
        case 2: where_loop<uint16_t>(L); break;
        case 4: where_loop<uint32_t>(L); break;
        default: where_loop<uint64_t>(L); break;
    }
    return none();
}

}  // namespace

void register_binary(std::vector<PyMethodDef>& methods) {
    methods.push_back(fast_method<py_binary>(
        "binary", "binary(op, dtype, shape, out, a, b): out = op(a, b); a and b may be numbers."));
    methods.push_back(fast_method<py_compare>("compare", "compare(op, dtype, shape, out, a, b): bool out."));
    methods.push_back(fast_method<py_where>("where", "where(dtype, shape, out, cond, a, b): out = cond ? a : b."));
}

}  // namespace tp
