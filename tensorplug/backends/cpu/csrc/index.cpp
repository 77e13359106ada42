// gather, scatter, index_get, index_put. Index values are int64; a negative value wraps once
// (idx + size); a value still out of range raises IndexError naming it. Writes check every index
// before touching `self`, so a failed call leaves it unchanged.
#include <atomic>
#include <vector>

#include "families.h"

namespace tp {

namespace {

template <class U> inline void copy_elem(char* dst, const char* src) {
    *reinterpret_cast<U*>(dst) = *reinterpret_cast<const U*>(src);
}

using CopyFn = void (*)(char*, const char*);
CopyFn copier(int itemsize) {
    switch (itemsize) {
        case 1: return copy_elem<uint8_t>;
        case 2: return copy_elem<uint16_t>;
        case 4: return copy_elem<uint32_t>;
        default: return copy_elem<uint64_t>;
    }
}

template <class T> void add_elem(char* dst, const char* src) {
    T* d = reinterpret_cast<T*>(dst);
    const T s = *reinterpret_cast<const T*>(src);
    if constexpr (is_bool<T>) *d = *d || s;
    else *d = convert<T>(to_c(*d) + to_c(s));
}

CopyFn adder(int dtype) {
    CopyFn f = nullptr;
    TP_DISPATCH(dtype, T, f = add_elem<T>);
    return f;
}

[[noreturn]] void index_error(const char* prefix, int64_t v, int dim, int64_t size) {
    raise(PyExc_IndexError, std::string(prefix) + "index " + std::to_string(v) + " is out of bounds for dimension " +
                                std::to_string(dim) + " with size " + std::to_string(size));
}

// Checks every value of an int64 operand over `shape` against [-size, size); raises on the first bad one.
void check_indices(const Operand& idx, int nd, const int64_t* shape, int64_t size, int dim, const char* prefix) {
    Loop<1> L;
    Operand* ops[1] = {const_cast<Operand*>(&idx)};
    int isz[1] = {8};
    L.init(nd, shape, ops, isz);
    if (L.numel == 0) return;
    bool bad = false;
    int64_t bad_value = 0;
    auto f = [&](char** p, int64_t n, const int64_t* s) {
        if (bad) return;
        for (int64_t i = 0; i < n; ++i) {
            const int64_t v = *reinterpret_cast<const int64_t*>(p[0] + i * s[0]);
            if (v < -size || v >= size) {
                bad = true;
                bad_value = v;
                return;
            }
        }
    };
    L.run_range(0, L.numel, f);
    if (bad) index_error(prefix, bad_value, dim, size);
}

inline int64_t wrap_index(int64_t v, int64_t size) { return v < 0 ? v + size : v; }

// Shared parsing for gather and scatter: the shape of index, the shape of the indexed tensor.
void check_same_ndim_and_fit(int nd, const int64_t* shape, int nd2, const int64_t* shape2, int dim, const char* fname) {
    if (nd != nd2) value_error(std::string(fname) + ": index and input must have the same number of dims");
    for (int d = 0; d < nd; ++d)
        if (d != dim && shape[d] > shape2[d])
            value_error(std::string(fname) + ": index size " + std::to_string(shape[d]) + " exceeds input size " +
                        std::to_string(shape2[d]) + " in dimension " + std::to_string(d));
}

int64_t parse_dim(PyObject* o, int nd, const char* fname) {
    int64_t dim = arg_int(o, fname, "dim");
    const int64_t n = std::max(nd, 1);
    if (dim < -n || dim >= n) value_error(std::string(fname) + ": dim " + std::to_string(dim) + " is out of range");
    return dim < 0 ? dim + n : dim;
}

// A 0-d gather/scatter acts on one element: treat it as 1-d of size 1.
void promote_0d(int& nd, int64_t* shape, int64_t* shape2, Operand* const* ops, int nops) {
    if (nd != 0) return;
    nd = 1;
    shape[0] = 1;
    shape2[0] = 1;
    for (int i = 0; i < nops; ++i) ops[i]->strides[0] = 0;
}

// gather(dtype, dim, shape, out, a, a_shape, index)
PyObject* py_gather(PyObject* const* args, Py_ssize_t nargs) {
    const char* fname = "gather";
    check_nargs(nargs, 7, fname);
    int dtype = arg_dtype(args[0], fname);
    int64_t shape[MAX_DIMS], a_shape[MAX_DIMS];
    int nd = parse_shape(args[2], shape, fname);
    int nda = parse_shape(args[5], a_shape, fname, "a_shape");
    int dim = static_cast<int>(parse_dim(args[1], nd, fname));
    Operand out, a, index;
    parse_operand(args[3], dtype, nd, shape, out, fname, "out", false, true);
    parse_operand(args[4], dtype, nda, a_shape, a, fname, "a", false, false);
    parse_operand(args[6], kInt64, nd, shape, index, fname, "index", false, false);
    check_same_ndim_and_fit(nd, shape, nda, a_shape, dim, fname);
    Operand* all[3] = {&out, &a, &index};
    promote_0d(nd, shape, a_shape, all, 3);
    if (numel_of(nd, shape) == 0) return none();
    if (a_shape[dim] == 0) check_indices(index, nd, shape, 0, dim, "gather: ");
    const int64_t dim_stride = a.strides[dim] * kItemSize[dtype];
    const int64_t dim_size = a_shape[dim];
    a.strides[dim] = 0;
    Loop<3> L;
    Operand* ops[3] = {&out, &index, &a};
    int isz[3] = {kItemSize[dtype], 8, kItemSize[dtype]};
    L.init(nd, shape, ops, isz);
    CopyFn cp = copier(kItemSize[dtype]);
    std::atomic<bool> bad{false};
    {
        ReleaseGil nogil(L.numel >= PARALLEL_THRESHOLD);
        L.run([&](char** p, int64_t n, const int64_t* s) {
            for (int64_t i = 0; i < n; ++i) {
                int64_t v = *reinterpret_cast<const int64_t*>(p[1] + i * s[1]);
                v = wrap_index(v, dim_size);
                if (v < 0 || v >= dim_size) {
                    bad.store(true, std::memory_order_relaxed);
                    return;
                }
                cp(p[0] + i * s[0], p[2] + i * s[2] + v * dim_stride);
            }
        });
    }
    if (bad.load()) check_indices(index, nd, shape, dim_size, dim, "gather: ");
    return none();
}

// scatter(dtype, dim, reduce, shape, self, self_shape, index, src)
PyObject* py_scatter(PyObject* const* args, Py_ssize_t nargs) {
    const char* fname = "scatter";
    check_nargs(nargs, 8, fname);
    int dtype = arg_dtype(args[0], fname);
    int64_t reduce = arg_int(args[2], fname, "reduce");
    if (reduce != 0 && reduce != 1) value_error("scatter: reduce must be 0 (assign) or 1 (add)");
    int64_t shape[MAX_DIMS], self_shape[MAX_DIMS];
    int nd = parse_shape(args[3], shape, fname);
    int nds = parse_shape(args[5], self_shape, fname, "self_shape");
    int dim = static_cast<int>(parse_dim(args[1], nd, fname));
    Operand self, index, src;
    parse_operand(args[4], dtype, nds, self_shape, self, fname, "self", false, true);
    parse_operand(args[6], kInt64, nd, shape, index, fname, "index", false, false);
    parse_operand(args[7], dtype, nd, shape, src, fname, "src", true, false);
    check_same_ndim_and_fit(nd, shape, nds, self_shape, dim, fname);
    Operand* all[3] = {&self, &index, &src};
    promote_0d(nd, shape, self_shape, all, 3);
    if (numel_of(nd, shape) == 0) return none();
    const int64_t dim_size = self_shape[dim];
    check_indices(index, nd, shape, dim_size, dim, "scatter: ");
    const int64_t dim_stride = self.strides[dim] * kItemSize[dtype];
    self.strides[dim] = 0;
    Loop<3> L;
    Operand* ops[3] = {&self, &index, &src};
    int isz[3] = {kItemSize[dtype], 8, kItemSize[dtype]};
    L.init(nd, shape, ops, isz);
    CopyFn fn = reduce == 0 ? copier(kItemSize[dtype]) : adder(dtype);
    ReleaseGil nogil(L.numel >= PARALLEL_THRESHOLD);
    // Serial: duplicate indices must accumulate (add) or resolve in order (assign: last wins).
    auto f = [&](char** p, int64_t n, const int64_t* s) {
        for (int64_t i = 0; i < n; ++i) {
            const int64_t v = wrap_index(*reinterpret_cast<const int64_t*>(p[1] + i * s[1]), dim_size);
            fn(p[0] + i * s[0] + v * dim_stride, p[2] + i * s[2]);
        }
    };
    L.run_range(0, L.numel, f);
    return none();
}

// Advanced indexing over the first k dims of self: k int64 index operands of shape `shape`.
struct Advanced {
    int k = 0;
    int nd = 0;  // ndim of `shape`
    int64_t shape[MAX_DIMS];
    int64_t self_shape[MAX_DIMS];
    int self_nd = 0;
    std::vector<Operand> indices;  // constructed in place, never copied
    explicit Advanced(size_t n) : indices(n) {}
};

void parse_advanced(Advanced& adv, PyObject* indices_obj, const char* fname) {
    if (!PyTuple_Check(indices_obj) && !PyList_Check(indices_obj))
        raise(PyExc_TypeError, std::string(fname) + ": indices must be a list of operands");
    PyObject** items = PySequence_Fast_ITEMS(indices_obj);
    if (adv.k > adv.self_nd) value_error(std::string(fname) + ": more indices than dims");
    for (int j = 0; j < adv.k; ++j)
        parse_operand(items[j], kInt64, adv.nd, adv.shape, adv.indices[j], fname, "index", false, false);
    for (int j = 0; j < adv.k; ++j)
        check_indices(adv.indices[j], adv.nd, adv.shape, adv.self_shape[j], j, "");
}

// Calls fn(self_offset_bytes, p) for every position p in `shape` (serially or over threads).
template <class F>
void for_positions(const Advanced& adv, const Operand& self, int isz, bool parallel, F fn) {
    const int64_t total = numel_of(adv.nd, adv.shape);
    parallel_range(total, parallel ? 1 : std::numeric_limits<int64_t>::max(), [&](int64_t b, int64_t e) {
        int64_t coord[MAX_DIMS];
        for (int64_t p = b; p < e; ++p) {
            int64_t rem = p;
            for (int d = adv.nd - 1; d >= 0; --d) {
                coord[d] = rem % adv.shape[d];
                rem /= adv.shape[d];
            }
            int64_t off = 0;
            for (int j = 0; j < adv.k; ++j) {
                const Operand& ix = adv.indices[j];
                const char* ip = ix.data;
                for (int d = 0; d < adv.nd; ++d) ip += coord[d] * ix.strides[d] * 8;
                const int64_t v = wrap_index(*reinterpret_cast<const int64_t*>(ip), adv.self_shape[j]);
                off += v * self.strides[j] * isz;
            }
            fn(off, coord);
        }
    });
}

// index_get(dtype, out, self, self_shape, indices, shape) and
// index_put(dtype, self, self_shape, indices, shape, values, accumulate)
template <bool Put> PyObject* index_entry(PyObject* const* args, Py_ssize_t nargs) {
    const char* fname = Put ? "index_put" : "index_get";
    check_nargs(nargs, Put ? 7 : 6, fname);
    int dtype = arg_dtype(args[0], fname);
    const int isz = kItemSize[dtype];
    PyObject* self_obj = Put ? args[1] : args[2];
    PyObject* self_shape_obj = Put ? args[2] : args[3];
    PyObject* indices_obj = Put ? args[3] : args[4];
    PyObject* shape_obj = Put ? args[4] : args[5];
    if (!PyTuple_Check(indices_obj) && !PyList_Check(indices_obj))
        raise(PyExc_TypeError, std::string(fname) + ": indices must be a list of operands");
    Advanced adv(static_cast<size_t>(PySequence_Fast_GET_SIZE(indices_obj)));
    adv.k = static_cast<int>(adv.indices.size());
    adv.self_nd = parse_shape(self_shape_obj, adv.self_shape, fname, "self_shape");
    adv.nd = parse_shape(shape_obj, adv.shape, fname);
    Operand self, vals;
    parse_operand(self_obj, dtype, adv.self_nd, adv.self_shape, self, fname, "self", false, Put);
    // values/out shape: shape + self_shape[k:]
    const int tail = adv.self_nd - std::min(adv.k, adv.self_nd);
    if (adv.nd + tail > MAX_DIMS) value_error(std::string(fname) + ": too many dims");
    int64_t vshape[MAX_DIMS];
    for (int d = 0; d < adv.nd; ++d) vshape[d] = adv.shape[d];
    for (int t = 0; t < tail; ++t) vshape[adv.nd + t] = adv.self_shape[adv.k + t];
    const int vnd = adv.nd + tail;
    if (Put) {
        parse_operand(args[5], dtype, vnd, vshape, vals, fname, "values", true, false);
    } else {
        parse_operand(args[1], dtype, vnd, vshape, vals, fname, "out", false, true);
    }
    parse_advanced(adv, indices_obj, fname);
    const bool accumulate = Put && PyObject_IsTrue(args[6]) == 1;
    if (numel_of(vnd, vshape) == 0) return none();

    // The trailing block: self's dims k.. against values' dims nd..; only the base pointers move.
    Operand tail_self, tail_vals;
    for (int t = 0; t < tail; ++t) {
        tail_self.strides[t] = self.strides[adv.k + t];
        tail_vals.strides[t] = vals.strides[adv.nd + t];
    }
    tail_self.data = self.data;
    tail_vals.data = vals.data;
    Loop<2> L;
    Operand* ops[2] = {&tail_self, &tail_vals};
    int isizes[2] = {isz, isz};
    L.init(tail, vshape + adv.nd, ops, isizes);
    const int64_t total = numel_of(vnd, vshape);
    CopyFn fn = accumulate ? adder(dtype) : copier(isz);
    ReleaseGil nogil(total >= PARALLEL_THRESHOLD);
    for_positions(adv, self, isz, !Put && total >= PARALLEL_THRESHOLD, [&](int64_t self_off, const int64_t* coord) {
        char* vbase = vals.data;
        for (int d = 0; d < adv.nd; ++d) vbase += coord[d] * vals.strides[d] * isz;
        char* sbase = self.data + self_off;
        auto f = [&](char** p, int64_t n, const int64_t* s) {
            for (int64_t i = 0; i < n; ++i) {
                if (Put) fn(p[0] + i * s[0], p[1] + i * s[1]);
                else fn(p[1] + i * s[1], p[0] + i * s[0]);
            }
        };
        char* base[2] = {sbase, vbase};
        L.run_range_at(base, 0, L.numel, f);
    });
    return none();
}

PyObject* py_index_get(PyObject* const* args, Py_ssize_t nargs) { return index_entry<false>(args, nargs); }
PyObject* py_index_put(PyObject* const* args, Py_ssize_t nargs) { return index_entry<true>(args, nargs); }

}  // namespace

void register_index(std::vector<PyMethodDef>& methods) {
    methods.push_back(fast_method<py_gather>("gather", "gather(dtype, dim, shape, out, a, a_shape, index)."));
    methods.push_back(fast_method<py_scatter>(
        "scatter", "scatter(dtype, dim, reduce, shape, self, self_shape, index, src): reduce 0 assign, 1 add."));
    methods.push_back(
        fast_method<py_index_get>("index_get", "index_get(dtype, out, self, self_shape, indices, shape)."));
    methods.push_back(fast_method<py_index_put>(
        "index_put", "index_put(dtype, self, self_shape, indices, shape, values, accumulate)."));
}

}  // namespace tp
