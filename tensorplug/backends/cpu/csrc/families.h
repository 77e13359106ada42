// Each kernel family appends its fast-call entry points to the module's method table.
#pragma once

#include <vector>

#include "common.h"

namespace tp {

void register_storage(PyObject* module, std::vector<PyMethodDef>& methods);
void register_unary(std::vector<PyMethodDef>& methods);
void register_binary(std::vector<PyMethodDef>& methods);
void register_copy(std::vector<PyMethodDef>& methods);
void register_reduce(std::vector<PyMethodDef>& methods);
void register_matmul(std::vector<PyMethodDef>& methods);
void register_index(std::vector<PyMethodDef>& methods);
void register_random(std::vector<PyMethodDef>& methods);
void register_sort(std::vector<PyMethodDef>& methods);
void register_nn(std::vector<PyMethodDef>& methods);
void register_conv(std::vector<PyMethodDef>& methods);
void register_rnn(std::vector<PyMethodDef>& methods);
void register_optim(std::vector<PyMethodDef>& methods);
void register_ctc(std::vector<PyMethodDef>& methods);
void register_tensor_kernels(std::vector<PyMethodDef>& methods);

// The unary, binary and compare families over parsed operands, shared by their entry points and
// by the tensor kernels (tensor_kernel.cpp). Each checks the op and dtype, then runs the loop.
void apply_unary(int op, int dtype, int nd, const int64_t* shape, Operand& out, Operand& a);
int unary_out_dtype(int op, int dtype);
void apply_binary(bool is_compare, int op, int dtype, int nd, const int64_t* shape, Operand& out, Operand& a,
                  Operand& b);
int binary_out_dtype(bool is_compare, int op, int dtype);
// The reduce family (reduce.cpp): `out` has a's shape with stride 0 on every reduced dim.
void apply_reduce(int op, int in_dtype, int out_dtype, int nd, const int64_t* shape, Operand& a, Operand& out,
                  const bool* reduced, int ndims);
// A sorted tuple of distinct dims in [0, nd) into `reduced`; returns how many.
int parse_dims(PyObject* o, int nd, bool* reduced, const char* fname);

// Philox4x32-10: counter (4 words) and key (2 words) -> 4 words.
void philox4x32_10(const uint32_t ctr_in[4], const uint32_t key_in[2], uint32_t out[4]);

template <FastFn F> PyMethodDef fast_method(const char* name, const char* doc) {
    return PyMethodDef{name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(guarded<F>)), METH_FASTCALL,
                       doc};
}

}  // namespace tp
