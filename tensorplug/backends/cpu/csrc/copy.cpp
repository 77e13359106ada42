// copy(shape, dst_dtype, dst, src_dtype, src) with conversion; fill(dtype, shape, out, value)
#include "bf16_round.h"
#include "families.h"

namespace tp {

namespace {

template <class D, class S> void copy_loop(const Loop<2>& L) {
    L.run([](char** p, int64_t n, const int64_t* s) {
        constexpr int64_t sd = sizeof(D), ss = sizeof(S);
        if constexpr (std::is_same_v<D, S>) {
            if (s[0] == sd && s[1] == ss) {
                if (p[0] != p[1]) std::memmove(p[0], p[1], static_cast<size_t>(n * sd));
                return;
            }
        }
        if (s[0] == sd && s[1] == ss) {
            D* d = reinterpret_cast<D*>(p[0]);
            const S* a = reinterpret_cast<const S*>(p[1]);
#ifdef TP_X86_SIMD
            // autocast's float32 -> bfloat16 input casts
            if constexpr (std::is_same_v<D, bf16_t> && std::is_same_v<S, float>)
                if (have_avx512()) return round_to_bf16(a, -0.0f, reinterpret_cast<uint16_t*>(d), n);
#endif
            for (int64_t i = 0; i < n; ++i) d[i] = convert<D>(a[i]);
            return;
        }
        if (s[0] == sd && s[1] == 0) {
            D* d = reinterpret_cast<D*>(p[0]);
            const D v = convert<D>(*reinterpret_cast<const S*>(p[1]));
            for (int64_t i = 0; i < n; ++i) d[i] = v;
            return;
        }
        for (int64_t i = 0; i < n; ++i)
            *reinterpret_cast<D*>(p[0] + i * s[0]) = convert<D>(*reinterpret_cast<const S*>(p[1] + i * s[1]));
    });
}

PyObject* py_copy(PyObject* const* args, Py_ssize_t nargs) {
    check_nargs(nargs, 5, "copy");
    int64_t shape[MAX_DIMS];
    int nd = parse_shape(args[0], shape, "copy");
    int dst_dtype = arg_dtype(args[1], "copy");
    int src_dtype = arg_dtype(args[3], "copy");
    Operand dst, src;
    parse_operand(args[2], dst_dtype, nd, shape, dst, "copy", "dst", false, true);
    parse_operand(args[4], src_dtype, nd, shape, src, "copy", "src", true, false);
    Loop<2> L;
    Operand* ops[2] = {&dst, &src};
    int isz[2] = {kItemSize[dst_dtype], kItemSize[src_dtype]};
    L.init(nd, shape, ops, isz);
    if (L.numel == 0) return none();
    ReleaseGil nogil(L.numel >= PARALLEL_THRESHOLD);
    TP_DISPATCH(dst_dtype, D, TP_DISPATCH(src_dtype, S, copy_loop<D, S>(L)));
    return none();
}

PyObject* py_fill(PyObject* const* args, Py_ssize_t nargs) {
    check_nargs(nargs, 4, "fill");
    int dtype = arg_dtype(args[0], "fill");
    int64_t shape[MAX_DIMS];
    int nd = parse_shape(args[1], shape, "fill");
    Operand out, value;
    parse_operand(args[2], dtype, nd, shape, out, "fill", "out", false, true);
    if (PyTuple_Check(args[3])) raise(PyExc_TypeError, "fill: value must be a number");
    parse_operand(args[3], dtype, nd, shape, value, "fill", "value", true, false);
    Loop<2> L;
    Operand* ops[2] = {&out, &value};
    int isz[2] = {kItemSize[dtype], kItemSize[dtype]};
    L.init(nd, shape, ops, isz);
    if (L.numel == 0) return none();
    ReleaseGil nogil(L.numel >= PARALLEL_THRESHOLD);
    TP_DISPATCH(dtype, T, copy_loop<T, T>(L));
    return none();
}

}  // namespace

void register_copy(std::vector<PyMethodDef>& methods) {
    methods.push_back(fast_method<py_copy>(
        "copy", "copy(shape, dst_dtype, dst, src_dtype, src): strided copy with conversion; src may be a number."));
    methods.push_back(fast_method<py_fill>("fill", "fill(dtype, shape, out, value)."));
}

}  // namespace tp
