// The _kernels module: registers every family's fast-call entry points, the Storage type, the
// op-code tables and the thread controls.
#include <pybind11/pybind11.h>

#include <cblas.h>

#include "families.h"
#include "ops.h"

namespace py = pybind11;

namespace tp {
namespace {

py::dict op_table(const OpName* names, int n) {
    py::dict d;
    for (int i = 0; i < n; ++i) d[py::str(names[i].name)] = names[i].code;
    return d;
}

void set_num_threads(int n) {
    if (n < 1) throw py::value_error("set_num_threads: n must be >= 1, got " + std::to_string(n));
#ifdef _OPENMP
    omp_set_num_threads(n);
#endif
    scipy_openblas_set_num_threads(n);
    g_num_threads = n;
    reset_thread_monitor();
}

}  // namespace
}  // namespace tp

PYBIND11_MODULE(_kernels, m) {
    using namespace tp;
    m.doc() = "tensorplug CPU kernels: caching allocator, elementwise, reductions, matmul, indexing, random.";

    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const KernelError& e) {
            PyErr_SetString(e.type, e.msg.c_str());
        } catch (const PythonErrorSet&) {
        }
    });

    // PyMethodDef entries must outlive the module: the vector is never freed.
    auto* methods = new std::vector<PyMethodDef>();
    register_storage(m.ptr(), *methods);
    register_unary(*methods);
    register_binary(*methods);
    register_copy(*methods);
    register_reduce(*methods);
    register_matmul(*methods);
    register_index(*methods);
    register_random(*methods);
    register_sort(*methods);
    register_nn(*methods);
    register_conv(*methods);
    register_rnn(*methods);
    register_optim(*methods);
    register_ctc(*methods);
    register_tensor_kernels(*methods);
    py::str modname("tensorplug.backends.cpu._kernels");
    for (PyMethodDef& def : *methods) {
        PyObject* f = PyCFunction_NewEx(&def, nullptr, modname.ptr());
        if (!f) throw py::error_already_set();
        m.attr(def.ml_name) = py::reinterpret_steal<py::object>(f);
    }

#ifdef _OPENMP
    g_num_threads = omp_get_max_threads();
#endif
    m.def("set_num_threads", &set_num_threads, py::arg("n"),
          "Set the thread count of the OpenMP kernels and of OpenBLAS together.");
    m.def("get_num_threads", []() { return g_num_threads; }, "Threads the kernels use on a quiet machine.");
    m.def("active_threads", &active_threads,
          "Threads a parallel kernel would run on now: fewer than get_num_threads() while other processes keep "
          "cores busy (TENSORPLUG_ADAPTIVE_THREADS=0 turns that off).");
    m.def(
        "philox4x32",
        [](py::object seed, py::object counter) {
            uint32_t key[2], ctr[4] = {0, 0, 0, 0}, out[4];
            if (py::isinstance<py::tuple>(seed)) {
                auto t = seed.cast<py::tuple>();
                if (t.size() != 2) throw py::value_error("philox4x32: a seed tuple has 2 words");
                key[0] = t[0].cast<uint32_t>();
                key[1] = t[1].cast<uint32_t>();
            } else {
                uint64_t s = static_cast<uint64_t>(arg_int(seed.ptr(), "philox4x32", "seed"));
                key[0] = static_cast<uint32_t>(s);
                key[1] = static_cast<uint32_t>(s >> 32);
            }
            if (py::isinstance<py::tuple>(counter)) {
                auto t = counter.cast<py::tuple>();
                if (t.size() != 4) throw py::value_error("philox4x32: a counter tuple has 4 words");
                for (int i = 0; i < 4; ++i) ctr[i] = t[i].cast<uint32_t>();
            } else {
                uint64_t c = static_cast<uint64_t>(arg_int(counter.ptr(), "philox4x32", "counter"));
                ctr[0] = static_cast<uint32_t>(c);
                ctr[1] = static_cast<uint32_t>(c >> 32);
            }
            philox4x32_10(ctr, key, out);
            return py::make_tuple(out[0], out[1], out[2], out[3]);
        },
        py::arg("seed"), py::arg("counter"),
        "Philox4x32-10 of one block. seed: int (key = lo32, hi32) or 2-tuple of words; counter: int "
        "(counter = lo32, hi32, 0, 0) or 4-tuple of words. Returns 4 ints.");

    m.attr("MAX_DIMS") = MAX_DIMS;
    m.attr("UNARY_OPS") = op_table(kUnaryOpNames, U_NUM_OPS);
    m.attr("BINARY_OPS") = op_table(kBinaryOpNames, B_NUM_OPS);
    m.attr("COMPARE_OPS") = op_table(kCompareOpNames, C_NUM_OPS);
    m.attr("REDUCE_OPS") = op_table(kReduceOpNames, R_NUM_OPS);
    m.attr("CUMULATIVE_OPS") = op_table(kCumulativeOpNames, CUM_NUM_OPS);
    py::dict dtypes;
    for (int i = 0; i < kNumDTypes; ++i) dtypes[py::str(kDTypeName[i])] = i;
    m.attr("DTYPES") = dtypes;
}
