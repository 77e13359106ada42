// sort(dtype, shape, values_out, indices_out, a, dim, descending, stable)
//
// Sorts every line of `a` along `dim` into values_out (a's dtype) and indices_out (int64), both of
// a's shape. NaN sorts as the largest value (last ascending, first descending). Equal keys keep
// their original order whether or not `stable` is asked for (ties break on the index), so the
// result never depends on the thread count. Each line is copied into a buffer before anything is
// written, so values_out may even alias `a`.
#include <algorithm>
#include <atomic>
#include <utility>
#include <vector>

#include "families.h"

namespace tp {

namespace {

template <class K> inline bool is_nan_key(K v) {
    if constexpr (std::is_floating_point_v<K>) return v != v;
    else return false;
}

// Strict order on (key, index): NaN above everything, ties broken by the original index.
template <class K> struct Ascending {
    bool operator()(const std::pair<K, int64_t>& x, const std::pair<K, int64_t>& y) const {
        const bool xn = is_nan_key(x.first), yn = is_nan_key(y.first);
        if (xn || yn) return (xn == yn) ? x.second < y.second : yn;
        if (x.first < y.first) return true;
        if (y.first < x.first) return false;
        return x.second < y.second;
    }
};
template <class K> struct Descending {
    bool operator()(const std::pair<K, int64_t>& x, const std::pair<K, int64_t>& y) const {
        const bool xn = is_nan_key(x.first), yn = is_nan_key(y.first);
        if (xn || yn) return (xn == yn) ? x.second < y.second : xn;
        if (y.first < x.first) return true;
        if (x.first < y.first) return false;
        return x.second < y.second;
    }
};

template <class T>
void sort_lines(const Loop<3>& L, int64_t len, int64_t sv, int64_t si, int64_t sa, bool descending,
                std::atomic<bool>& out_of_memory) {
    using K = compute_t<T>;
    // Threads over chunks of lines; each chunk owns its buffer.
    const bool parallel = L.numel > 1 && L.numel * len >= PARALLEL_THRESHOLD && g_num_threads > 1;
    const int64_t nchunks = parallel ? g_num_threads * CHUNKS_PER_THREAD : 1;
    parallel_chunks(L.numel, nchunks, [&](int64_t, int64_t begin, int64_t end) {
        std::vector<std::pair<K, int64_t>> buf;
        try {
            buf.resize(static_cast<size_t>(len));
        } catch (const std::bad_alloc&) {
            out_of_memory.store(true, std::memory_order_relaxed);
            return;
        }
        auto f = [&](char** p, int64_t n, const int64_t* s) {
            for (int64_t i = 0; i < n; ++i) {
                char* v = p[0] + i * s[0];
                char* ix = p[1] + i * s[1];
                const char* a = p[2] + i * s[2];
                for (int64_t j = 0; j < len; ++j)
                    buf[j] = {to_c(*reinterpret_cast<const T*>(a + j * sa)), j};
                if (descending) std::sort(buf.begin(), buf.end(), Descending<K>());
                else std::sort(buf.begin(), buf.end(), Ascending<K>());
                for (int64_t j = 0; j < len; ++j) {
                    *reinterpret_cast<T*>(v + j * sv) = convert<T>(buf[j].first);
                    *reinterpret_cast<int64_t*>(ix + j * si) = buf[j].second;
                }
            }
        };
        L.run_range(begin, end, f);
    });
}

bool arg_bool(PyObject* o, const char* fname, const char* what) {
    if (!PyBool_Check(o)) raise(PyExc_TypeError, std::string(fname) + ": " + what + " must be a bool");
    return o == Py_True;
}

PyObject* py_sort(PyObject* const* args, Py_ssize_t nargs) {
    const char* fname = "sort";
    check_nargs(nargs, 8, fname);
    int dtype = arg_dtype(args[0], fname);
    int64_t shape[MAX_DIMS];
    int nd = parse_shape(args[1], shape, fname);
    Operand values, indices, a;
    parse_operand(args[2], dtype, nd, shape, values, fname, "values", false, true);
    parse_operand(args[3], kInt64, nd, shape, indices, fname, "indices", false, true);
    parse_operand(args[4], dtype, nd, shape, a, fname, "a", false, false);
    int64_t dim = arg_int(args[5], fname, "dim");
    bool descending = arg_bool(args[6], fname, "descending");
    arg_bool(args[7], fname, "stable");  // every sort here is stable
    if (values.storage == indices.storage)
        value_error("sort: values and indices must not share storage");
    if (nd == 0) {
        if (dim != 0 && dim != -1) value_error("sort: dim " + std::to_string(dim) + " is out of range for a 0-d tensor");
        TP_DISPATCH(dtype, T, *reinterpret_cast<T*>(values.data) = *reinterpret_cast<const T*>(a.data));
        *reinterpret_cast<int64_t*>(indices.data) = 0;
        return none();
    }
    if (dim < 0 || dim >= nd) value_error("sort: dim " + std::to_string(dim) + " is out of range");
    if (numel_of(nd, shape) == 0) return none();
    const int64_t len = shape[dim];
    int64_t lines_shape[MAX_DIMS];
    for (int d = 0; d < nd; ++d) lines_shape[d] = d == dim ? 1 : shape[d];
    Loop<3> L;
    Operand* ops[3] = {&values, &indices, &a};
    int isz[3] = {kItemSize[dtype], 8, kItemSize[dtype]};
    L.init(nd, lines_shape, ops, isz);
    const int64_t sv = values.strides[dim] * isz[0], si = indices.strides[dim] * 8, sa = a.strides[dim] * isz[2];
    std::atomic<bool> out_of_memory{false};
    {
        ReleaseGil nogil(L.numel * len >= PARALLEL_THRESHOLD);
        TP_DISPATCH(dtype, T, sort_lines<T>(L, len, sv, si, sa, descending, out_of_memory));
    }
    if (out_of_memory.load()) raise(PyExc_MemoryError, "sort: out of memory for a line of " + std::to_string(len) + " elements");
    return none();
}

}  // namespace

void register_sort(std::vector<PyMethodDef>& methods) {
    methods.push_back(fast_method<py_sort>(
        "sort", "sort(dtype, shape, values, indices, a, dim, descending, stable): sort lines along dim; NaN largest."));
}

}  // namespace tp
