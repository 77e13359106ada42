// Kernel objects that take tensors: the CPU table's entries for the unary, binary, compare and
// reduce families (issue 14, the per-op hot path).
//
// kernels.py's Python adapters turn each tensor into (storage, offset, strides) with
// backends.api.strided and call the family's entry point; for a 4-element `a + b` the adapter cost
// more than the addition. A TensorKernel does the same reading in C. It reads the fields that
// `strided` names (`_storage`, `_offset`, `_stride`) plus `_shape` and `_dtype`, at the slot offsets
// their member descriptors give, found once per tensor class. Whatever it does not cover goes to
// the Python adapter, which stays the reference:
//   - a tensor class whose fields are not plain slots;
//   - keyword arguments;
//   - a 16-bit float tensor with a Python number in add/sub/mul/div, computed in float32.
// Every operand then passes the same checks as in the entry points (fill_operand), so a
// malformed tensor raises instead of reaching memory it does not own.
#include "families.h"
#include "ops.h"

#include <structmember.h>  // after Python.h (through common.h), which it needs

namespace tp {
namespace {

enum Family : int { kUnaryFamily = 0, kBinaryFamily = 1, kCompareFamily = 2, kReduceFamily = 3 };

struct FieldOffsets {
    PyTypeObject* type;
    Py_ssize_t storage, offset, stride, shape, dtype;
};

// Tensor classes seen so far (Tensor, nn.Parameter, ...); their types are kept alive, so a cached
// pointer never names another class.
constexpr int kMaxClasses = 32;
FieldOffsets g_classes[kMaxClasses];
int g_num_classes = 0;

// The offset of slot `name` in instances of `type`, or -1 when it is not a plain object slot.
Py_ssize_t slot_offset(PyTypeObject* type, const char* name) {
    PyObject* descr = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), name);
    if (!descr) {
        PyErr_Clear();
        return -1;
    }
    Py_ssize_t offset = -1;
    if (Py_TYPE(descr) == &PyMemberDescr_Type) {
        const PyMemberDef* member = reinterpret_cast<PyMemberDescrObject*>(descr)->d_member;
        if (member->type == T_OBJECT_EX && !(member->flags & READONLY)) offset = member->offset;
    }
    Py_DECREF(descr);
    return offset;
}

// The field offsets of a tensor class, or null for anything else (numbers included).
const FieldOffsets* tensor_fields(PyTypeObject* type) {
    for (int i = 0; i < g_num_classes; ++i)
        if (g_classes[i].type == type) return &g_classes[i];
    if (g_num_classes == kMaxClasses || type == &PyLong_Type || type == &PyFloat_Type || type == &PyBool_Type)
        return nullptr;
    FieldOffsets f{type, slot_offset(type, "_storage"), slot_offset(type, "_offset"), slot_offset(type, "_stride"),
                   slot_offset(type, "_shape"), slot_offset(type, "_dtype")};
    if (f.storage < 0 || f.offset < 0 || f.stride < 0 || f.shape < 0 || f.dtype < 0) return nullptr;
    Py_INCREF(type);
    g_classes[g_num_classes] = f;
    return &g_classes[g_num_classes++];
}

inline PyObject* field(PyObject* tensor, Py_ssize_t offset) {
    return *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(tensor) + offset);
}

// Dtype objects seen so far and their codes, matched by name once.
constexpr int kMaxDTypeObjects = 64;
PyObject* g_dtype_objects[kMaxDTypeObjects];
int g_dtype_codes[kMaxDTypeObjects];
int g_num_dtype_objects = 0;

// The kernel dtype code of a frontend dtype object, or -1 when the kernels have no such dtype.
int dtype_code(PyObject* dtype) {
    for (int i = 0; i < g_num_dtype_objects; ++i)
        if (g_dtype_objects[i] == dtype) return g_dtype_codes[i];
    PyObject* name = PyObject_GetAttrString(dtype, "name");
    if (!name) {
        PyErr_Clear();
        return -1;
    }
    const char* text = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : nullptr;
    int code = -1;
    for (int c = 0; text && c < kNumDTypes; ++c)
        if (std::strcmp(text, kDTypeName[c]) == 0) code = c;
    if (!text) PyErr_Clear();
    Py_DECREF(name);
    if (code >= 0 && g_num_dtype_objects < kMaxDTypeObjects) {
        Py_INCREF(dtype);
        g_dtype_objects[g_num_dtype_objects] = dtype;
        g_dtype_codes[g_num_dtype_objects++] = code;
    }
    return code;
}

struct TensorKernel {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    int family;
    int op;
    bool widen;  // 16-bit floats with a Python number compute in float32 (the adapter does that)
    PyObject* adapter;
};

// One operand: a tensor read through its fields (checked like a (storage, offset, strides)
// tuple) or a Python number.
void tensor_operand(PyObject* x, const FieldOffsets* fields, int dtype, int nd, const int64_t* shape, Operand& op,
                    const char* fname, const char* what, bool writable) {
    if (!fields) {
        parse_operand(x, dtype, nd, shape, op, fname, what, true, false);
        return;
    }
    fill_operand(field(x, fields->storage), field(x, fields->offset), field(x, fields->stride), dtype, nd, shape, op,
                 fname, what, writable);
}

bool fields_set(PyObject* x, const FieldOffsets* f) {
    return field(x, f->storage) && field(x, f->offset) && field(x, f->stride) && field(x, f->shape) &&
           field(x, f->dtype);
}

PyObject* call_adapter(TensorKernel* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
    return PyObject_Vectorcall(self->adapter, args, nargsf, kwnames);
}

// Called inside a catch handler: sets the Python exception for the C++ one being handled.
PyObject* kernel_error() {
    try {
        throw;
    } catch (const KernelError& e) {
        PyErr_SetString(e.type, e.msg.c_str());
    } catch (const PythonErrorSet&) {
    } catch (const std::bad_alloc&) {
        PyErr_SetString(PyExc_MemoryError, "cpu: out of memory");
    } catch (const std::exception& e) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (...) {
        PyErr_SetString(PyExc_RuntimeError, "cpu: unknown C++ exception");
    }
    return nullptr;
}


// kernel(out, a, dims): `out` has a's shape with size 1 on each reduced dim (reductions.py's
// kept-dims output), read with stride 0 there, as the adapter passes it to reduce().
PyObject* reduce_call(TensorKernel* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
    PyObject* out = args[0];
    PyObject* a = args[1];
    const FieldOffsets* fo = tensor_fields(Py_TYPE(out));
    const FieldOffsets* fa = is_py_scalar(a) ? nullptr : tensor_fields(Py_TYPE(a));
    if (!fo || !fa || !fields_set(out, fo) || !fields_set(a, fa)) return call_adapter(self, args, nargsf, kwnames);
    const int in_dtype = dtype_code(field(a, fa->dtype)), out_dtype = dtype_code(field(out, fo->dtype));
    if (in_dtype < 0 || out_dtype < 0) return call_adapter(self, args, nargsf, kwnames);
    const char* fname = "reduce";
    try {
        int64_t shape[MAX_DIMS], kept[MAX_DIMS];
        const int nd = parse_shape(field(a, fa->shape), shape, fname);
        bool reduced[MAX_DIMS];
        const int ndims = parse_dims(args[2], nd, reduced, fname);
        if (parse_shape(field(out, fo->shape), kept, fname) != nd) return call_adapter(self, args, nargsf, kwnames);
        for (int d = 0; d < nd; ++d)
            if (kept[d] != (reduced[d] ? 1 : shape[d])) return call_adapter(self, args, nargsf, kwnames);
        Operand x, o;
        tensor_operand(a, fa, in_dtype, nd, shape, x, fname, "a", false);
        tensor_operand(out, fo, out_dtype, nd, kept, o, fname, "out", true);
        for (int d = 0; d < nd; ++d)
            if (reduced[d]) o.strides[d] = 0;
        apply_reduce(self->op, in_dtype, out_dtype, nd, shape, x, o, reduced, ndims);
    } catch (...) {
        return kernel_error();
    }
    Py_RETURN_NONE;
}

PyObject* tensor_kernel_call(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
    auto* self = reinterpret_cast<TensorKernel*>(callable);
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (self->family == kReduceFamily)
        return kwnames || nargs != 3 ? call_adapter(self, args, nargsf, kwnames) : reduce_call(self, args, nargsf, kwnames);
    const bool unary = self->family == kUnaryFamily;
    if (kwnames || nargs != (unary ? 2 : 3)) return call_adapter(self, args, nargsf, kwnames);
    PyObject* out = args[0];
    PyObject* a = args[1];
    PyObject* b = unary ? nullptr : args[2];
    const FieldOffsets* fo = tensor_fields(Py_TYPE(out));
    const FieldOffsets* fa = is_py_scalar(a) ? nullptr : tensor_fields(Py_TYPE(a));
    const FieldOffsets* fb = (!b || is_py_scalar(b)) ? nullptr : tensor_fields(Py_TYPE(b));
    const bool a_number = !fa, b_number = b && !fb;
    if (!fo || !fields_set(out, fo) || (a_number && !is_py_scalar(a)) || (fa && !fields_set(a, fa)) ||
        (b_number && !is_py_scalar(b)) || (fb && !fields_set(b, fb)) || (a_number && (unary || b_number)))
        return call_adapter(self, args, nargsf, kwnames);
    const int dtype = dtype_code(field(fa ? a : b, (fa ? fa : fb)->dtype));
    if (dtype < 0 || (self->widen && (a_number || b_number) && is_narrow_float_dtype(dtype)))
        return call_adapter(self, args, nargsf, kwnames);
    const char* fname = unary ? "unary" : self->family == kCompareFamily ? "compare" : "binary";
    try {
        int64_t shape[MAX_DIMS];
        const int nd = parse_shape(field(out, fo->shape), shape, fname);
        Operand o, x, y;
        if (unary) {
            tensor_operand(out, fo, unary_out_dtype(self->op, dtype), nd, shape, o, fname, "out", true);
            tensor_operand(a, fa, dtype, nd, shape, x, fname, "a", false);
            apply_unary(self->op, dtype, nd, shape, o, x);
        } else {
            const bool compare = self->family == kCompareFamily;
            tensor_operand(out, fo, binary_out_dtype(compare, self->op, dtype), nd, shape, o, fname, "out", true);
            tensor_operand(a, fa, dtype, nd, shape, x, fname, "a", false);
            tensor_operand(b, fb, dtype, nd, shape, y, fname, "b", false);
            apply_binary(compare, self->op, dtype, nd, shape, o, x, y);
        }
    } catch (...) {
        return kernel_error();
    }
    Py_RETURN_NONE;
}

// Attributes the kernel object lacks (__qualname__, __module__ for explain() and the profiler)
// are the adapter's.
PyObject* tensor_kernel_getattro(PyObject* self, PyObject* name) {
    PyObject* found = PyObject_GenericGetAttr(self, name);
    if (found || !PyErr_ExceptionMatches(PyExc_AttributeError)) return found;
    PyErr_Clear();
    return PyObject_GetAttr(reinterpret_cast<TensorKernel*>(self)->adapter, name);
}

void tensor_kernel_dealloc(PyObject* self) {
    Py_XDECREF(reinterpret_cast<TensorKernel*>(self)->adapter);
    Py_TYPE(self)->tp_free(self);
}

PyTypeObject TensorKernelType = [] {
    PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
    t.tp_name = "tensorplug.backends.cpu._kernels.TensorKernel";
    t.tp_basicsize = sizeof(TensorKernel);
    t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
    t.tp_vectorcall_offset = offsetof(TensorKernel, vectorcall);
    t.tp_call = PyVectorcall_Call;
    t.tp_getattro = tensor_kernel_getattro;
    t.tp_dealloc = tensor_kernel_dealloc;
    return t;
}();

PyObject* py_tensor_kernel(PyObject* const* args, Py_ssize_t nargs) {
    check_nargs(nargs, 4, "tensor_kernel");
    const int64_t family = arg_int(args[0], "tensor_kernel", "family");
    const int64_t op = arg_int(args[1], "tensor_kernel", "op");
    const int64_t limit = family == kUnaryFamily    ? int64_t{U_NUM_OPS}
                          : family == kBinaryFamily ? int64_t{B_NUM_OPS}
                          : family == kReduceFamily ? int64_t{R_NUM_OPS}
                                                    : int64_t{C_NUM_OPS};
    if (family < kUnaryFamily || family > kReduceFamily || op < 0 || op >= limit)
        value_error("tensor_kernel: invalid family " + std::to_string(family) + " or op " + std::to_string(op));
    if (!PyCallable_Check(args[2])) raise(PyExc_TypeError, "tensor_kernel: adapter must be callable");
    if (!TensorKernelType.tp_dict && PyType_Ready(&TensorKernelType) < 0) throw PythonErrorSet{};
    auto* k = PyObject_New(TensorKernel, &TensorKernelType);
    if (!k) throw PythonErrorSet{};
    k->vectorcall = tensor_kernel_call;
    k->family = static_cast<int>(family);
    k->op = static_cast<int>(op);
    k->widen = PyObject_IsTrue(args[3]) == 1;
    Py_INCREF(args[2]);
    k->adapter = args[2];
    return reinterpret_cast<PyObject*>(k);
}

}  // namespace

void register_tensor_kernels(std::vector<PyMethodDef>& methods) {
    methods.push_back(fast_method<py_tensor_kernel>(
        "tensor_kernel",
        "tensor_kernel(family, op, adapter, widen) -> a kernel called as adapter is, with tensors: family 0 "
        "unary (out, a), 1 binary and 2 compare (out, a, b), 3 reduce (out, a, dims); what it does not cover goes "
        "to adapter."));
}

}  // namespace tp
