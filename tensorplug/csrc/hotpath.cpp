// tensorplug's compiled hot path (issue 14): the dispatch state, tensor allocation and the
// elementwise ops' common case, in C.
//
// An elementwise op on small tensors is mostly bookkeeping: check the operands, allocate the
// result, compute the key set, look the kernel up, call it. In Python that took about 1.5 us for
// a 4-element `a + b`, against PyTorch's 1.0-1.2 us. This module does the same steps in C for the
// cases that need no decision:
//   - local_state: the thread's dispatch state (dispatcher/_state.py), whose `include` and
//     `mask` live in C++ thread_local storage, read here without a Python attribute lookup;
//   - empty_tensor(shape, dtype, device): tensor.py's _empty_tensor for a device whose backend is
//     loaded and a dtype it declares;
//   - ElementwiseOp: the fast path of elementwise.py's unary and binary functions (tensors of one
//     dtype and device and the same shape, or a floating tensor and a Python number);
//   - CompositeOp: a composite op's dispatching call (ops/_composite.py) for positional arguments;
//   - tensor_ndim and detached: Tensor.ndim's and Tensor.data's getters;
//   - item_method: Tensor.item for one element in host memory (a CPU storage);
//   - tensor_from_list: tp.tensor() of a flat list of Python floats, ints or bools.
// Every other case calls the Python function it wraps, which stays the reference and holds every
// rule and error message. The dispatch itself is unchanged: the key set is (operand keys |
// thread's include) & thread's mask, and the kernel comes from the operator's table (or its
// lookup on a miss), so autograd, the profiler, fallthroughs and plugin backends see every call.
//
// Objects' fields are read and written at the slot offsets of their classes' member descriptors,
// found once in bind(); bind() refuses classes whose fields are not plain slots.
#include "hotpath_api.h"
#include "slots.h"

#include <cstdint>
#include <cstring>
#include <initializer_list>

namespace {

using tp_slots::get;
using tp_slots::put;
using tp_slots::slot_offset;

// Tensor's slots, in tensor.py's order.
enum TensorSlot {
    T_STORAGE, T_SHAPE, T_STRIDE, T_OFFSET, T_DTYPE, T_DEVICE, T_KEYS, T_VERSION, T_BASE, T_GRAD, T_GRAD_FN,
    T_AUTOGRAD, T_NUM_SLOTS
};
const char* const kTensorSlots[T_NUM_SLOTS] = {"_storage", "_shape", "_stride", "_offset", "_dtype", "_device",
                                               "_keys", "_version_ref", "_base", "grad", "grad_fn", "_autograd"};

struct Bound {
    PyTypeObject* tensor = nullptr;
    PyTypeObject* device = nullptr;
    PyTypeObject* dtype = nullptr;
    Py_ssize_t tensor_slot[T_NUM_SLOTS];
    Py_ssize_t device_backend, device_dtypes, device_keymask, device_index;
    Py_ssize_t dtype_itemsize;
    PyObject* layouts = nullptr;         // shapes._layout_cache: shape -> (strides, numel)
    PyObject* contiguous_layout = nullptr;
    PyObject* empty_fallback = nullptr;  // tensor._empty_tensor
    PyObject* zero = nullptr;
    PyObject* str_allocate = nullptr;
    PyObject* str_out = nullptr;
};
Bound g;

inline bool is_tensor(PyObject* o) { return g.tensor && PyObject_TypeCheck(o, g.tensor); }
inline PyObject* tslot(PyObject* t, TensorSlot s) { return get(t, g.tensor_slot[s]); }

PyObject* g_saved_masks_key = nullptr;  // the thread state dict's key for saved_masks

// ----- the thread's dispatch state ----------------------------------------------------------
// Key sets are ints (dispatcher/_keys.py); every key bit is below 63, so a long long holds one.
// New threads start with nothing forced on and every key allowed.
struct ThreadState {
    long long include = 0;
    long long mask = -1;
};
thread_local ThreadState t_state;

struct DispatchState {
    PyObject_HEAD
};

bool set_keys(PyObject* value, long long* dst, const char* name) {
    if (!value || !PyLong_Check(value)) {
        PyErr_Format(PyExc_TypeError, "local_state.%s must be an int key set", name);
        return false;
    }
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow) {
        PyErr_Format(PyExc_OverflowError, "local_state.%s does not fit in 64 bits", name);
        return false;
    }
    if (v == -1 && PyErr_Occurred()) return false;
    *dst = v;
    return true;
}

PyObject* state_get_include(PyObject*, void*) { return PyLong_FromLongLong(t_state.include); }
PyObject* state_get_mask(PyObject*, void*) { return PyLong_FromLongLong(t_state.mask); }
int state_set_include(PyObject*, PyObject* v, void*) { return set_keys(v, &t_state.include, "include") ? 0 : -1; }
int state_set_mask(PyObject*, PyObject* v, void*) { return set_keys(v, &t_state.mask, "mask") ? 0 : -1; }

// Masks saved by nested context managers (grad modes, ExcludeKeys): a list per thread, kept in
// the thread's state dict so that it dies with the thread.
PyObject* state_get_saved_masks(PyObject*, void*) {
    PyObject* dict = PyThreadState_GetDict();
    if (!dict) {
        PyErr_SetString(PyExc_RuntimeError, "local_state: no thread state dict");
        return nullptr;
    }
    PyObject* saved = PyDict_GetItemWithError(dict, g_saved_masks_key);
    if (saved) {
        Py_INCREF(saved);
        return saved;
    }
    if (PyErr_Occurred()) return nullptr;
    saved = PyList_New(0);
    if (saved && PyDict_SetItem(dict, g_saved_masks_key, saved) < 0) Py_CLEAR(saved);
    return saved;
}

PyGetSetDef kStateGetSet[] = {
    {"include", state_get_include, state_set_include, "Keys forced on for every call in this thread.", nullptr},
    {"mask", state_get_mask, state_set_mask, "Keys allowed in this thread (excluding a key clears its bit).",
     nullptr},
    {"saved_masks", state_get_saved_masks, nullptr, "This thread's stack of masks to restore.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyTypeObject DispatchStateType = [] {
    PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
    t.tp_name = "tensorplug._hotpath.DispatchState";
    t.tp_doc = "The dispatch state of the calling thread: include, mask, saved_masks.";
    t.tp_basicsize = sizeof(DispatchState);
    t.tp_flags = Py_TPFLAGS_DEFAULT;
    t.tp_getset = kStateGetSet;
    return t;
}();

// ----- empty_tensor -------------------------------------------------------------------------
PyObject* call_empty_fallback(PyObject* shape, PyObject* dtype, PyObject* dev) {
    PyObject* args[3] = {shape, dtype, dev};
    return PyObject_Vectorcall(g.empty_fallback, args, 3, nullptr);
}

PyObject* empty_tensor(PyObject* shape, PyObject* dtype, PyObject* dev) {
    if (!g.tensor || Py_TYPE(dev) != g.device || Py_TYPE(dtype) != g.dtype || !PyTuple_CheckExact(shape))
        return g.tensor ? call_empty_fallback(shape, dtype, dev)
                        : (PyErr_SetString(PyExc_RuntimeError, "_hotpath: bind() was not called"), nullptr);
    PyObject* backend = get(dev, g.device_backend);
    PyObject* dtypes = get(dev, g.device_dtypes);
    if (!backend || backend == Py_None || !dtypes || !PyAnySet_Check(dtypes) || PySet_Contains(dtypes, dtype) != 1)
        return call_empty_fallback(shape, dtype, dev);
    PyObject* layout = PyDict_GetItemWithError(g.layouts, shape);  // borrowed
    if (layout) {
        Py_INCREF(layout);
    } else {
        if (PyErr_Occurred()) return nullptr;
        layout = PyObject_CallOneArg(g.contiguous_layout, shape);
        if (!layout) return nullptr;
    }
    PyObject* itemsize = get(dtype, g.dtype_itemsize);
    long long numel = -1, nbytes = -1;
    if (PyTuple_CheckExact(layout) && PyTuple_GET_SIZE(layout) == 2 && itemsize) {
        int overflow = 0;
        numel = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(layout, 1), &overflow);
        const long long size = PyLong_AsLongLong(itemsize);
        if (overflow || numel < 0 || size <= 0 || numel > (1LL << 62) / size) numel = -1;
        else nbytes = numel * size;
        PyErr_Clear();
    }
    if (nbytes < 0) {  // a layout or size this path does not handle: the Python function decides
        Py_DECREF(layout);
        return call_empty_fallback(shape, dtype, dev);
    }
    PyObject* storage = nullptr;
    PyObject* allocate = PyObject_GetAttr(backend, g.str_allocate);
    PyObject* nbytes_obj = PyLong_FromLongLong(nbytes);
    if (allocate && nbytes_obj) {
        PyObject* args[2] = {nbytes_obj, get(dev, g.device_index) ? get(dev, g.device_index) : Py_None};
        storage = PyObject_Vectorcall(allocate, args, 2, nullptr);
    }
    Py_XDECREF(allocate);
    Py_XDECREF(nbytes_obj);
    PyObject* version = storage ? PyList_New(1) : nullptr;
    PyObject* t = version ? g.tensor->tp_alloc(g.tensor, 0) : nullptr;
    if (!t) {
        Py_XDECREF(storage);
        Py_XDECREF(version);
        Py_DECREF(layout);
        return nullptr;
    }
    Py_INCREF(g.zero);
    PyList_SET_ITEM(version, 0, g.zero);
    const Py_ssize_t* s = g.tensor_slot;
    *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(t) + s[T_STORAGE]) = storage;  // steals
    put(t, s[T_SHAPE], shape);
    put(t, s[T_STRIDE], PyTuple_GET_ITEM(layout, 0));
    put(t, s[T_OFFSET], g.zero);
    put(t, s[T_DTYPE], dtype);
    put(t, s[T_DEVICE], dev);
    put(t, s[T_KEYS], get(dev, g.device_keymask));
    *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(t) + s[T_VERSION]) = version;  // steals
    put(t, s[T_BASE], Py_None);
    put(t, s[T_GRAD], Py_None);
    put(t, s[T_GRAD_FN], Py_None);
    put(t, s[T_AUTOGRAD], Py_None);
    Py_DECREF(layout);
    return t;
}

PyObject* py_empty_tensor(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "empty_tensor() takes 3 arguments (%zd given)", nargs);
        return nullptr;
    }
    return empty_tensor(args[0], args[1], args[2]);
}

// ----- the dispatch step --------------------------------------------------------------------
// (keys | thread's include) & thread's mask, as dispatcher._operator computes it.
inline long long thread_keys(long long keys) { return (keys | t_state.include) & t_state.mask; }

// The operator's kernel for `keys`: table[keys], or lookup(keys) on a miss. New reference.
PyObject* kernel_for(PyObject* table, PyObject* lookup, long long keys) {
    PyObject* key = PyLong_FromLongLong(keys);
    if (!key) return nullptr;
    PyObject* kernel = PyDict_GetItemWithError(table, key);
    if (kernel) {
        Py_INCREF(kernel);
    } else if (!PyErr_Occurred()) {
        kernel = PyObject_CallOneArg(lookup, key);
    }
    Py_DECREF(key);
    return kernel;
}

// ----- ElementwiseOp ------------------------------------------------------------------------
struct ElementwiseOp {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    int arity;               // 1: f(input, *, out=None); 2: f(input, other, *, out=None)
    PyObject* function;      // the Python function: every case this object does not cover
    PyObject* table;         // Operator.table
    PyObject* lookup;        // Operator.lookup
    PyObject* fast_dtypes;   // dtypes computed in the input's dtype
    PyObject* number_dtypes; // floating dtypes that take a Python number as it is
    PyObject* out_dtype;     // the result's dtype when it is always one (bool), else None
    static constexpr const char* kind = "elementwise op";
    template <class F> void each_field(F f) {
        for (PyObject** field : {&function, &table, &lookup, &fast_dtypes, &number_dtypes, &out_dtype}) f(*field);
    }
};

PyObject* call_function(ElementwiseOp* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
    return PyObject_Vectorcall(self->function, args, nargsf, kwnames);
}

// The integers a Python int may be and still pass as a number (the Python path raises
// OverflowError for the rest, as PyTorch does).
bool int_in_range(PyObject* n) {
    int overflow = 0;
    PyLong_AsLongLongAndOverflow(n, &overflow);
    return overflow == 0;
}

// Runs kernel(result, operands...) for a new result of `shape`, `dtype` on `dev`; the key set
// is `keys` with the thread's state applied. Returns the result, or null with an error set, or
// Py_NotImplemented (not a new reference) when the slow path must decide.
PyObject* run(ElementwiseOp* self, PyObject* shape, PyObject* dtype, PyObject* dev, long long keys,
              PyObject* const* operands, int n) {
    const long long dispatch_keys = thread_keys(keys);
    PyObject* result = empty_tensor(shape, self->out_dtype == Py_None ? dtype : self->out_dtype, dev);
    if (!result) return nullptr;
    PyObject* kernel = kernel_for(self->table, self->lookup, dispatch_keys);
    if (!kernel) {
        Py_DECREF(result);
        return nullptr;
    }
    PyObject* args[3] = {result, operands[0], n > 1 ? operands[1] : nullptr};
    PyObject* done = PyObject_Vectorcall(kernel, args, 1 + n, nullptr);
    Py_DECREF(kernel);
    if (!done) {
        Py_DECREF(result);
        return nullptr;
    }
    Py_DECREF(done);
    return result;
}

long long keys_of(PyObject* t, bool* ok) {
    int overflow = 0;
    const long long k = PyLong_AsLongLongAndOverflow(tslot(t, T_KEYS), &overflow);
    if (overflow || (k == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        *ok = false;
    }
    return k;
}

PyObject* unary_fast(ElementwiseOp* self, PyObject* input) {
    if (!is_tensor(input)) return Py_NotImplemented;
    PyObject* dtype = tslot(input, T_DTYPE);
    if (PySet_Contains(self->fast_dtypes, dtype) != 1) return PyErr_Occurred() ? nullptr : Py_NotImplemented;
    bool ok = true;
    const long long keys = keys_of(input, &ok);
    if (!ok) return Py_NotImplemented;
    return run(self, tslot(input, T_SHAPE), dtype, tslot(input, T_DEVICE), keys, &input, 1);
}

PyObject* binary_fast(ElementwiseOp* self, PyObject* a, PyObject* b) {
    const bool a_tensor = is_tensor(a), b_tensor = is_tensor(b);
    bool ok = true;
    if (a_tensor && b_tensor) {
        PyObject* dtype = tslot(a, T_DTYPE);
        PyObject* shape = tslot(a, T_SHAPE);
        if (dtype != tslot(b, T_DTYPE) || tslot(a, T_DEVICE) != tslot(b, T_DEVICE)) return Py_NotImplemented;
        if (shape != tslot(b, T_SHAPE)) {
            const int same = PyObject_RichCompareBool(shape, tslot(b, T_SHAPE), Py_EQ);
            if (same != 1) return same < 0 ? nullptr : Py_NotImplemented;  // broadcasting: Python
        }
        if (PySet_Contains(self->fast_dtypes, dtype) != 1) return PyErr_Occurred() ? nullptr : Py_NotImplemented;
        const long long keys = keys_of(a, &ok) | keys_of(b, &ok);
        if (!ok) return Py_NotImplemented;
        PyObject* operands[2] = {a, b};
        return run(self, shape, dtype, tslot(a, T_DEVICE), keys, operands, 2);
    }
    // A floating tensor and a Python float or int (loss arithmetic, optimizer updates): the
    // number goes to the kernel as a float and the result keeps the tensor's dtype.
    PyObject* tensor = a_tensor ? a : b_tensor ? b : nullptr;
    PyObject* number = a_tensor ? b : a;
    if (!tensor || !(PyFloat_CheckExact(number) || (PyLong_CheckExact(number) && int_in_range(number))))
        return Py_NotImplemented;
    PyObject* dtype = tslot(tensor, T_DTYPE);
    if (PySet_Contains(self->number_dtypes, dtype) != 1) return PyErr_Occurred() ? nullptr : Py_NotImplemented;
    const long long keys = keys_of(tensor, &ok);
    if (!ok) return Py_NotImplemented;
    PyObject* value = PyFloat_CheckExact(number) ? (Py_INCREF(number), number) : PyNumber_Float(number);
    if (!value) return nullptr;
    PyObject* operands[2] = {a_tensor ? tensor : value, a_tensor ? value : tensor};
    PyObject* result = run(self, tslot(tensor, T_SHAPE), dtype, tslot(tensor, T_DEVICE), keys, operands, 2);
    Py_DECREF(value);
    return result;
}

// Keyword arguments this path accepts: out=None only.
bool only_out_none(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
    if (!kwnames) return true;
    const Py_ssize_t n = PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject* name = PyTuple_GET_ITEM(kwnames, i);
        if (args[nargs + i] != Py_None || PyUnicode_Compare(name, g.str_out) != 0) {
            PyErr_Clear();
            return false;
        }
    }
    return true;
}

PyObject* elementwise_call(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
    auto* self = reinterpret_cast<ElementwiseOp*>(callable);
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (!g.tensor || nargs != self->arity || !only_out_none(args, nargs, kwnames))
        return call_function(self, args, nargsf, kwnames);
    PyObject* result = self->arity == 1 ? unary_fast(self, args[0]) : binary_fast(self, args[0], args[1]);
    if (result == Py_NotImplemented) return call_function(self, args, nargsf, kwnames);
    return result;
}

// Bound as a method (Tensor.__add__ = add): a + b calls add(a, b).
PyObject* op_get(PyObject* self, PyObject* obj, PyObject*) {
    if (!obj || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

// Introspection (__name__, __doc__, spec, inspect.signature through __wrapped__) is the Python
// function's. `Op` is a C op object with the Python function in its `function` field.
template <class Op> PyObject* op_getattro(PyObject* self, PyObject* name) {
    PyObject* function = reinterpret_cast<Op*>(self)->function;
    if (PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, "__wrapped__") == 0) {
        Py_INCREF(function);
        return function;
    }
    if (PyUnicode_Check(name) && (PyUnicode_CompareWithASCIIString(name, "__doc__") == 0 ||
                                  PyUnicode_CompareWithASCIIString(name, "__module__") == 0))
        return PyObject_GetAttr(function, name);
    PyObject* found = PyObject_GenericGetAttr(self, name);
    if (found || !PyErr_ExceptionMatches(PyExc_AttributeError)) return found;
    PyErr_Clear();
    return PyObject_GetAttr(function, name);
}

template <class Op> PyObject* op_repr(PyObject* self) {
    return PyUnicode_FromFormat("<%s %R>", Op::kind, reinterpret_cast<Op*>(self)->function);
}

// The garbage collector's hooks of an op object, over the fields its each_field names.
template <class Op> int op_traverse(PyObject* o, visitproc visit, void* arg) {
    int result = 0;
    reinterpret_cast<Op*>(o)->each_field([&](PyObject* field) {
        if (!result && field) result = visit(field, arg);
    });
    return result;
}

template <class Op> int op_clear(PyObject* o) {
    reinterpret_cast<Op*>(o)->each_field([](PyObject*& field) { Py_CLEAR(field); });
    return 0;
}

template <class Op> void op_dealloc(PyObject* o) {
    PyObject_GC_UnTrack(o);
    op_clear<Op>(o);
    Py_TYPE(o)->tp_free(o);
}

// The type object of an op object: callable by vectorcall, a method when set on a class, with
// the introspection and garbage-collector hooks above.
template <class Op> PyTypeObject op_type(const char* name, const char* doc, newfunc make) {
    PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
    t.tp_name = name;
    t.tp_doc = doc;
    t.tp_basicsize = sizeof(Op);
    t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR;
    t.tp_vectorcall_offset = offsetof(Op, vectorcall);
    t.tp_call = PyVectorcall_Call;
    t.tp_descr_get = op_get;
    t.tp_getattro = op_getattro<Op>;
    t.tp_repr = op_repr<Op>;
    t.tp_traverse = op_traverse<Op>;
    t.tp_clear = op_clear<Op>;
    t.tp_dealloc = op_dealloc<Op>;
    t.tp_new = make;
    return t;
}

PyObject* elementwise_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
    static const char* names[] = {"function", "arity", "table", "lookup", "fast_dtypes", "number_dtypes",
                                  "out_dtype", nullptr};
    PyObject *function, *table, *lookup, *fast, *number, *out_dtype;
    int arity;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OiO!OO!O!O:ElementwiseOp", const_cast<char**>(names), &function,
                                     &arity, &PyDict_Type, &table, &lookup, &PyFrozenSet_Type, &fast,
                                     &PyFrozenSet_Type, &number, &out_dtype))
        return nullptr;
    if (arity != 1 && arity != 2) {
        PyErr_SetString(PyExc_ValueError, "ElementwiseOp: arity must be 1 or 2");
        return nullptr;
    }
    if (!PyCallable_Check(function) || !PyCallable_Check(lookup)) {
        PyErr_SetString(PyExc_TypeError, "ElementwiseOp: function and lookup must be callable");
        return nullptr;
    }
    auto* self = reinterpret_cast<ElementwiseOp*>(type->tp_alloc(type, 0));
    if (!self) return nullptr;
    self->vectorcall = elementwise_call;
    self->arity = arity;
    PyObject* fields[6] = {function, table, lookup, fast, number, out_dtype};
    PyObject** slots[6] = {&self->function, &self->table, &self->lookup, &self->fast_dtypes, &self->number_dtypes,
                           &self->out_dtype};
    for (int i = 0; i < 6; ++i) {
        Py_INCREF(fields[i]);
        *slots[i] = fields[i];
    }
    return reinterpret_cast<PyObject*>(self);
}

PyTypeObject ElementwiseOpType = op_type<ElementwiseOp>(
    "tensorplug._hotpath.ElementwiseOp",
    "ElementwiseOp(function, arity, table, lookup, fast_dtypes, number_dtypes, out_dtype): function "
    "with its common case in C.",
    elementwise_new);

// ----- FullReduction ------------------------------------------------------------------------
// The common case of reductions.py's sum: `t.sum()` of a floating tensor with at least one dim,
// every dim reduced into the input's dtype (every loss). The kernel reduces into a kept-dims
// output and the result is its 0-d alias, which takes over the output's graph node, as
// reductions._reduce and _as_scalar do; anything else calls the Python function.
struct FullReduction {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject* function;     // the Python function: every case this object does not cover
    PyObject* table;        // Operator.table
    PyObject* lookup;       // Operator.lookup
    PyObject* fast_dtypes;  // dtypes that reduce into themselves
    static constexpr const char* kind = "full reduction";
    template <class F> void each_field(F f) {
        for (PyObject** field : {&function, &table, &lookup, &fast_dtypes}) f(*field);
    }
};

constexpr int kMaxReducedDims = 8;
PyObject* g_kept_shapes[kMaxReducedDims + 1];  // (1,) * n
PyObject* g_every_dim[kMaxReducedDims + 1];    // tuple(range(n))
PyObject* g_empty_tuple = nullptr;

// A 0-d tensor over `out`'s element, sharing its storage, version counter and graph node.
PyObject* scalar_alias(PyObject* out) {
    PyObject* t = g.tensor->tp_alloc(g.tensor, 0);
    if (!t) return nullptr;
    const Py_ssize_t* s = g.tensor_slot;
    put(t, s[T_STORAGE], tslot(out, T_STORAGE));
    put(t, s[T_SHAPE], g_empty_tuple);
    put(t, s[T_STRIDE], g_empty_tuple);
    put(t, s[T_OFFSET], tslot(out, T_OFFSET));
    put(t, s[T_DTYPE], tslot(out, T_DTYPE));
    put(t, s[T_DEVICE], tslot(out, T_DEVICE));
    put(t, s[T_KEYS], tslot(out, T_KEYS));  // with Autograd's bit when a node was recorded
    put(t, s[T_VERSION], tslot(out, T_VERSION));
    put(t, s[T_BASE], Py_None);
    put(t, s[T_GRAD], Py_None);
    put(t, s[T_GRAD_FN], tslot(out, T_GRAD_FN));
    put(t, s[T_AUTOGRAD], Py_None);
    return t;
}

PyObject* full_reduction_fast(FullReduction* self, PyObject* input) {
    if (!is_tensor(input)) return Py_NotImplemented;
    PyObject* shape = tslot(input, T_SHAPE);
    PyObject* dtype = tslot(input, T_DTYPE);
    if (!PyTuple_CheckExact(shape)) return Py_NotImplemented;
    const Py_ssize_t ndim = PyTuple_GET_SIZE(shape);
    if (ndim < 1 || ndim > kMaxReducedDims) return Py_NotImplemented;
    if (PySet_Contains(self->fast_dtypes, dtype) != 1) return PyErr_Occurred() ? nullptr : Py_NotImplemented;
    bool ok = true;
    const long long keys = keys_of(input, &ok);
    if (!ok) return Py_NotImplemented;
    PyObject* out = empty_tensor(g_kept_shapes[ndim], dtype, tslot(input, T_DEVICE));
    if (!out) return nullptr;
    PyObject* kernel = kernel_for(self->table, self->lookup, thread_keys(keys));
    PyObject* done = nullptr;
    if (kernel) {
        PyObject* args[3] = {out, input, g_every_dim[ndim]};
        done = PyObject_Vectorcall(kernel, args, 3, nullptr);
        Py_DECREF(kernel);
    }
    PyObject* result = done ? scalar_alias(out) : nullptr;
    Py_XDECREF(done);
    Py_DECREF(out);
    return result;
}

PyObject* full_reduction_call(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
    auto* self = reinterpret_cast<FullReduction*>(callable);
    if (!g.tensor || kwnames || PyVectorcall_NARGS(nargsf) != 1)
        return PyObject_Vectorcall(self->function, args, nargsf, kwnames);
    PyObject* result = full_reduction_fast(self, args[0]);
    if (result == Py_NotImplemented) return PyObject_Vectorcall(self->function, args, nargsf, kwnames);
    return result;
}

PyObject* full_reduction_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
    static const char* names[] = {"function", "table", "lookup", "fast_dtypes", nullptr};
    PyObject *function, *table, *lookup, *fast;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!OO!:FullReduction", const_cast<char**>(names), &function,
                                     &PyDict_Type, &table, &lookup, &PyFrozenSet_Type, &fast))
        return nullptr;
    if (!PyCallable_Check(function) || !PyCallable_Check(lookup)) {
        PyErr_SetString(PyExc_TypeError, "FullReduction: function and lookup must be callable");
        return nullptr;
    }
    auto* self = reinterpret_cast<FullReduction*>(type->tp_alloc(type, 0));
    if (!self) return nullptr;
    self->vectorcall = full_reduction_call;
    PyObject* fields[4] = {function, table, lookup, fast};
    PyObject** slots[4] = {&self->function, &self->table, &self->lookup, &self->fast_dtypes};
    for (int i = 0; i < 4; ++i) {
        Py_INCREF(fields[i]);
        *slots[i] = fields[i];
    }
    return reinterpret_cast<PyObject*>(self);
}

PyTypeObject FullReductionType = op_type<FullReduction>(
    "tensorplug._hotpath.FullReduction",
    "FullReduction(function, table, lookup, fast_dtypes): a reduction whose call with the input alone "
    "(every dim, the input's dtype) runs in C.",
    full_reduction_new);

// ----- CompositeOp --------------------------------------------------------------------------
// A composite op's call (ops/_composite.py's `call`): the key set of its tensor arguments (also
// inside lists and tuples, as tensor.keyset_from_args finds them) with the thread's state
// applied, then the op's kernel for it. Calls with keywords go to the Python function.
struct CompositeOp {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject* function;  // _composite.py's call: keyword arguments, and introspection
    PyObject* table;     // Operator.table
    PyObject* lookup;    // Operator.lookup
    static constexpr const char* kind = "composite op";
    template <class F> void each_field(F f) {
        for (PyObject** field : {&function, &table, &lookup}) f(*field);
    }
};

// OR of the keys of the tensors in `items` (a list's or tuple's); false when a key set is not a
// 64-bit int (the Python function then decides).
bool add_item_keys(PyObject* const* items, Py_ssize_t n, long long* keys) {
    bool ok = true;
    for (Py_ssize_t i = 0; ok && i < n; ++i)
        if (is_tensor(items[i])) *keys |= keys_of(items[i], &ok);
    return ok;
}

PyObject* composite_call(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
    auto* self = reinterpret_cast<CompositeOp*>(callable);
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (!g.tensor || kwnames) return PyObject_Vectorcall(self->function, args, nargsf, kwnames);
    long long keys = 0;
    bool ok = true;
    for (Py_ssize_t i = 0; ok && i < nargs; ++i) {
        PyObject* a = args[i];
        if (is_tensor(a)) keys |= keys_of(a, &ok);
        else if (PyTuple_Check(a)) ok = add_item_keys(&PyTuple_GET_ITEM(a, 0), PyTuple_GET_SIZE(a), &keys);
        else if (PyList_Check(a)) ok = add_item_keys(PySequence_Fast_ITEMS(a), PyList_GET_SIZE(a), &keys);
    }
    if (!ok) return PyObject_Vectorcall(self->function, args, nargsf, kwnames);
    PyObject* kernel = kernel_for(self->table, self->lookup, thread_keys(keys));
    if (!kernel) return nullptr;
    PyObject* result = PyObject_Vectorcall(kernel, args, nargs, nullptr);
    Py_DECREF(kernel);
    return result;
}

PyObject* composite_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
    static const char* names[] = {"function", "table", "lookup", nullptr};
    PyObject *function, *table, *lookup;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!O:CompositeOp", const_cast<char**>(names), &function,
                                     &PyDict_Type, &table, &lookup))
        return nullptr;
    if (!PyCallable_Check(function) || !PyCallable_Check(lookup)) {
        PyErr_SetString(PyExc_TypeError, "CompositeOp: function and lookup must be callable");
        return nullptr;
    }
    auto* self = reinterpret_cast<CompositeOp*>(type->tp_alloc(type, 0));
    if (!self) return nullptr;
    self->vectorcall = composite_call;
    PyObject* fields[3] = {function, table, lookup};
    PyObject** slots[3] = {&self->function, &self->table, &self->lookup};
    for (int i = 0; i < 3; ++i) {
        Py_INCREF(fields[i]);
        *slots[i] = fields[i];
    }
    return reinterpret_cast<PyObject*>(self);
}

PyTypeObject CompositeOpType = op_type<CompositeOp>(
    "tensorplug._hotpath.CompositeOp",
    "CompositeOp(function, table, lookup): a composite op's call, dispatched in C unless it has keyword "
    "arguments.",
    composite_new);

// Tensor.ndim: len(t._shape), without a Python getter's frame (kernel adapters and the
// frontend's checks read it on every call).
PyObject* py_tensor_ndim(PyObject*, PyObject* t) {
    PyObject* shape = is_tensor(t) ? tslot(t, T_SHAPE) : nullptr;
    if (!shape || !PyTuple_Check(shape)) {
        PyErr_Format(PyExc_TypeError, "ndim: expected a Tensor with a shape, got %R", Py_TYPE(t));
        return nullptr;
    }
    return PyLong_FromSsize_t(PyTuple_GET_SIZE(shape));
}

// Tensor.data's getter: t.detach() (a tensor over the same memory, version counter and layout,
// outside the graph, with t as its base) without its two frames; a manual SGD step reads
// p.data for every parameter. Devices and dtypes empty_tensor does not cover go to detach().
PyObject* py_detached(PyObject*, PyObject* t) {
    if (!is_tensor(t)) {
        PyErr_Format(PyExc_TypeError, "data: expected a Tensor, got %R", Py_TYPE(t));
        return nullptr;
    }
    PyObject* dev = tslot(t, T_DEVICE);
    PyObject* dtype = tslot(t, T_DTYPE);
    PyObject* dtypes = dev && Py_TYPE(dev) == g.device ? get(dev, g.device_dtypes) : nullptr;
    PyObject* keymask = dtypes ? get(dev, g.device_keymask) : nullptr;
    const int declared = dtypes && PyAnySet_Check(dtypes) ? PySet_Contains(dtypes, dtype) : 0;
    if (declared != 1 || !keymask || !PyLong_CheckExact(keymask) || PyObject_Not(keymask)) {
        PyErr_Clear();
        return PyObject_CallMethod(t, "detach", nullptr);
    }
    PyObject* out = g.tensor->tp_alloc(g.tensor, 0);
    if (!out) return nullptr;
    const Py_ssize_t* s = g.tensor_slot;
    const TensorSlot shared[] = {T_STORAGE, T_SHAPE, T_STRIDE, T_OFFSET, T_DTYPE, T_DEVICE, T_VERSION};
    for (TensorSlot slot : shared) put(out, s[slot], tslot(t, slot));
    put(out, s[T_KEYS], keymask);
    put(out, s[T_BASE], t);
    put(out, s[T_GRAD], Py_None);
    put(out, s[T_GRAD_FN], Py_None);
    put(out, s[T_AUTOGRAD], Py_None);
    return out;
}

// ----- Tensor.item ---------------------------------------------------------------------------
// A loss read once per step: in Python, to_host's NumPy view and its .item() were 1.7 us against
// PyTorch's 0.3. Here, for a tensor of one element whose storage is host memory exporting a
// buffer (the storage types a backend registered with add_host_storage), the element is read
// from the buffer and boxed as NumPy's .item() would box it. Everything else (other devices, the
// meta device, numel != 1, dtypes not listed) calls the Python method, which holds the errors.
enum ItemKind {
    K_BOOL, K_I8, K_I16, K_I32, K_I64, K_U8, K_F16, K_BF16, K_F32, K_F64, K_C64, K_C128, K_U16, K_U32, K_U64,
    K_NUM_KINDS
};
const char* const kItemKindNames[K_NUM_KINDS] = {"bool",    "int8",      "int16",      "int32",  "int64",
                                                 "uint8",   "float16",   "bfloat16",   "float32", "float64",
                                                 "complex64", "complex128", "uint16",  "uint32", "uint64"};
const int kItemKindSizes[K_NUM_KINDS] = {1, 1, 2, 4, 8, 1, 2, 2, 4, 8, 8, 16, 2, 4, 8};

constexpr int kMaxHostStorages = 4;
PyTypeObject* g_host_storages[kMaxHostStorages] = {};
PyObject* g_item_kinds = nullptr;     // dtype -> ItemKind (an int)
PyObject* g_item_fallback = nullptr;  // methods._item

bool is_host_storage(PyObject* storage) {
    for (PyTypeObject* type : g_host_storages)
        if (type && Py_TYPE(storage) == type) return true;
    return false;
}

template <class T> T load(const char* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

PyObject* box_element(int kind, const char* p) {
    switch (kind) {
        case K_BOOL: return PyBool_FromLong(*p != 0);
        case K_I8: return PyLong_FromLong(load<int8_t>(p));
        case K_I16: return PyLong_FromLong(load<int16_t>(p));
        case K_I32: return PyLong_FromLong(load<int32_t>(p));
        case K_I64: return PyLong_FromLongLong(load<int64_t>(p));
        case K_U8: return PyLong_FromLong(load<uint8_t>(p));
        case K_U16: return PyLong_FromLong(load<uint16_t>(p));
        case K_U32: return PyLong_FromUnsignedLong(load<uint32_t>(p));
        case K_U64: return PyLong_FromUnsignedLongLong(load<uint64_t>(p));
        case K_F16: return PyFloat_FromDouble(PyFloat_Unpack2(p, PY_LITTLE_ENDIAN));
        case K_BF16: {  // the upper half of a float32
            const uint32_t bits = uint32_t(load<uint16_t>(p)) << 16;
            return PyFloat_FromDouble(load<float>(reinterpret_cast<const char*>(&bits)));
        }
        case K_F32: return PyFloat_FromDouble(load<float>(p));
        case K_F64: return PyFloat_FromDouble(load<double>(p));
        case K_C64: return PyComplex_FromDoubles(load<float>(p), load<float>(p + 4));
        case K_C128: return PyComplex_FromDoubles(load<double>(p), load<double>(p + 8));
        default: return nullptr;
    }
}

// The element's value, or nullptr without an error set when this path does not apply.
PyObject* host_item(PyObject* t) {
    PyObject* shape = tslot(t, T_SHAPE);
    PyObject* storage = tslot(t, T_STORAGE);
    PyObject* offset_obj = tslot(t, T_OFFSET);
    PyObject* dtype = tslot(t, T_DTYPE);
    if (!shape || !PyTuple_CheckExact(shape) || !storage || !is_host_storage(storage) || !offset_obj ||
        !PyLong_CheckExact(offset_obj) || !dtype)
        return nullptr;
    for (Py_ssize_t d = 0; d < PyTuple_GET_SIZE(shape); ++d) {
        PyObject* extent = PyTuple_GET_ITEM(shape, d);
        if (!PyLong_CheckExact(extent) || PyLong_AsLong(extent) != 1) {
            PyErr_Clear();
            return nullptr;
        }
    }
    PyObject* kind_obj = PyDict_GetItemWithError(g_item_kinds, dtype);
    if (!kind_obj) {
        PyErr_Clear();
        return nullptr;
    }
    const long kind = PyLong_AsLong(kind_obj);
    const long long offset = PyLong_AsLongLong(offset_obj);
    if (kind < 0 || kind >= K_NUM_KINDS || offset < 0) {
        PyErr_Clear();
        return nullptr;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(storage, &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        return nullptr;
    }
    const long long size = kItemKindSizes[kind];
    PyObject* value = nullptr;
    if (offset <= (static_cast<long long>(view.len) - size) / size)  // the element lies inside the buffer
        value = box_element(static_cast<int>(kind), static_cast<const char*>(view.buf) + offset * size);
    PyBuffer_Release(&view);
    return value;
}

PyObject* tensor_item(PyObject* self, PyObject*) {
    if (is_tensor(self) && g_item_kinds) {
        if (PyObject* value = host_item(self)) return value;
        if (PyErr_Occurred()) return nullptr;
    }
    return PyObject_CallOneArg(g_item_fallback, self);
}

PyMethodDef kItemDef = {"item", tensor_item, METH_NOARGS,
                        "The value of a one-element tensor as a Python number."};

// item_method(fallback, dtypes): Tensor.item's descriptor. dtypes maps each dtype the fast path
// reads to its name (one of kItemKindNames); the others go to fallback(t).
PyObject* py_item_method(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyCallable_Check(args[0]) || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "item_method(fallback, {dtype: name})");
        return nullptr;
    }
    if (!g.tensor) {
        PyErr_SetString(PyExc_RuntimeError, "_hotpath: bind() was not called");
        return nullptr;
    }
    PyObject* kinds = PyDict_New();
    if (!kinds) return nullptr;
    PyObject *dtype, *name;
    Py_ssize_t pos = 0;
    while (PyDict_Next(args[1], &pos, &dtype, &name)) {
        int kind = 0;
        while (kind < K_NUM_KINDS && !(PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, kItemKindNames[kind]) == 0))
            ++kind;
        PyObject* code = kind < K_NUM_KINDS ? PyLong_FromLong(kind) : nullptr;
        if (!code) {
            if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "item_method: no element reader for %R", name);
            Py_DECREF(kinds);
            return nullptr;
        }
        const int failed = PyDict_SetItem(kinds, dtype, code);
        Py_DECREF(code);
        if (failed) {
            Py_DECREF(kinds);
            return nullptr;
        }
    }
    Py_XSETREF(g_item_kinds, kinds);
    Py_INCREF(args[0]);
    Py_XSETREF(g_item_fallback, args[0]);
    return PyDescr_NewMethod(g.tensor, &kItemDef);
}

// add_host_storage(type): tensors whose storage is of this type keep their elements in host
// memory, at the buffer's start plus offset * itemsize (the CPU backend registers its Storage).
PyObject* py_add_host_storage(PyObject*, PyObject* type) {
    if (!PyType_Check(type) || !reinterpret_cast<PyTypeObject*>(type)->tp_as_buffer ||
        !reinterpret_cast<PyTypeObject*>(type)->tp_as_buffer->bf_getbuffer) {
        PyErr_SetString(PyExc_TypeError, "add_host_storage: expected a type that exports a buffer");
        return nullptr;
    }
    for (PyTypeObject*& slot : g_host_storages) {
        if (slot == reinterpret_cast<PyTypeObject*>(type)) Py_RETURN_NONE;
        if (!slot) {
            Py_INCREF(type);
            slot = reinterpret_cast<PyTypeObject*>(type);
            Py_RETURN_NONE;
        }
    }
    PyErr_SetString(PyExc_RuntimeError, "add_host_storage: too many storage types");
    return nullptr;
}

// ----- tp.tensor of a flat list --------------------------------------------------------------
// tp.tensor([1.0, 2.0, 3.0]) went through np.asarray, a dtype conversion and a copy: 6 us against
// PyTorch's 4. A flat list whose items are all exactly float, all exactly int (within int64) or
// all bool is written here straight into a new tensor in host memory, with the dtype PyTorch
// infers (the default float dtype, int64, bool). Anything else returns None and the Python
// factory decides, errors included.
enum ListKind { L_FLOAT, L_INT, L_BOOL };

PyObject* py_tensor_from_list(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    // tensor_from_list(data, float_dtype, float64, int64, bool, device) -> Tensor or None
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "tensor_from_list(data, float_dtype, float64, int64, bool, device)");
        return nullptr;
    }
    PyObject* data = args[0];
    if (!g.tensor || !PyList_CheckExact(data) || PyList_GET_SIZE(data) == 0) Py_RETURN_NONE;
    const Py_ssize_t n = PyList_GET_SIZE(data);
    PyObject* first = PyList_GET_ITEM(data, 0);
    const ListKind kind = PyFloat_CheckExact(first) ? L_FLOAT : PyBool_Check(first) ? L_BOOL
                        : PyLong_CheckExact(first) ? L_INT : ListKind(-1);
    if (kind == ListKind(-1)) Py_RETURN_NONE;
    for (Py_ssize_t i = 1; i < n; ++i) {
        PyObject* v = PyList_GET_ITEM(data, i);
        const bool same = kind == L_FLOAT ? PyFloat_CheckExact(v) : kind == L_BOOL ? PyBool_Check(v) : PyLong_CheckExact(v);
        if (!same) Py_RETURN_NONE;
    }
    // float data takes the default dtype when it is float32 or float64; half defaults go to Python.
    PyObject* dtype = kind == L_FLOAT ? args[1] : kind == L_INT ? args[3] : args[4];
    const bool as_double = kind == L_FLOAT && dtype == args[2];
    if (kind == L_FLOAT && !as_double && get(dtype, g.dtype_itemsize) != nullptr &&
        PyLong_AsLong(get(dtype, g.dtype_itemsize)) != 4)
        Py_RETURN_NONE;
    PyObject* shape = PyTuple_New(1);
    if (!shape) return nullptr;
    PyTuple_SET_ITEM(shape, 0, PyLong_FromSsize_t(n));
    if (!PyTuple_GET_ITEM(shape, 0)) {
        Py_DECREF(shape);
        return nullptr;
    }
    PyObject* t = empty_tensor(shape, dtype, args[5]);
    Py_DECREF(shape);
    if (!t) return nullptr;
    PyObject* storage = tslot(t, T_STORAGE);
    Py_buffer view;
    if (!storage || !is_host_storage(storage) || PyObject_GetBuffer(storage, &view, PyBUF_WRITABLE) < 0) {
        PyErr_Clear();
        Py_DECREF(t);
        Py_RETURN_NONE;  // another device's memory: the Python factory copies it there
    }
    bool ok = true;
    char* out = static_cast<char*>(view.buf);
    for (Py_ssize_t i = 0; i < n && ok; ++i) {
        PyObject* v = PyList_GET_ITEM(data, i);
        if (kind == L_BOOL) {
            out[i] = v == Py_True;
        } else if (kind == L_INT) {
            int overflow = 0;
            const long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
            ok = !overflow;  // beyond int64: the Python factory raises PyTorch's error
            std::memcpy(out + i * 8, &x, 8);
        } else if (as_double) {
            const double x = PyFloat_AS_DOUBLE(v);
            std::memcpy(out + i * 8, &x, 8);
        } else {
            const float x = static_cast<float>(PyFloat_AS_DOUBLE(v));  // rounded once, as NumPy's cast
            std::memcpy(out + i * 4, &x, 4);
        }
    }
    PyBuffer_Release(&view);
    if (!ok) {
        Py_DECREF(t);
        Py_RETURN_NONE;
    }
    return t;
}

bool make_reduction_shapes() {
    g_empty_tuple = PyTuple_New(0);
    if (!g_empty_tuple) return false;
    for (int n = 0; n <= kMaxReducedDims; ++n) {
        g_kept_shapes[n] = PyTuple_New(n);
        g_every_dim[n] = PyTuple_New(n);
        if (!g_kept_shapes[n] || !g_every_dim[n]) return false;
        for (int d = 0; d < n; ++d) {
            PyTuple_SET_ITEM(g_kept_shapes[n], d, PyLong_FromLong(1));
            PyTuple_SET_ITEM(g_every_dim[n], d, PyLong_FromLong(d));
        }
    }
    return true;
}

// ----- bind ---------------------------------------------------------------------------------
PyObject* py_bind(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "bind(tensor, device, dtype, layouts, contiguous_layout, empty_fallback)");
        return nullptr;
    }
    for (int i = 0; i < 3; ++i) {
        if (!PyType_Check(args[i])) {
            PyErr_SetString(PyExc_TypeError, "bind: the first three arguments are classes");
            return nullptr;
        }
    }
    if (!PyDict_Check(args[3]) || !PyCallable_Check(args[4]) || !PyCallable_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError, "bind: layouts is a dict; contiguous_layout and empty_fallback callables");
        return nullptr;
    }
    Bound b;
    b.tensor = reinterpret_cast<PyTypeObject*>(args[0]);
    b.device = reinterpret_cast<PyTypeObject*>(args[1]);
    b.dtype = reinterpret_cast<PyTypeObject*>(args[2]);
    for (int i = 0; i < T_NUM_SLOTS; ++i)
        if ((b.tensor_slot[i] = slot_offset(b.tensor, kTensorSlots[i])) < 0) return nullptr;
    if ((b.device_backend = slot_offset(b.device, "_backend")) < 0 ||
        (b.device_dtypes = slot_offset(b.device, "_dtypes")) < 0 ||
        (b.device_keymask = slot_offset(b.device, "_keymask")) < 0 ||
        (b.device_index = slot_offset(b.device, "index")) < 0 ||
        (b.dtype_itemsize = slot_offset(b.dtype, "itemsize")) < 0)
        return nullptr;
    b.layouts = args[3];
    b.contiguous_layout = args[4];
    b.empty_fallback = args[5];
    b.zero = PyLong_FromLong(0);
    b.str_allocate = PyUnicode_InternFromString("allocate");
    b.str_out = PyUnicode_InternFromString("out");
    if (!b.zero || !b.str_allocate || !b.str_out) return nullptr;
    // Bound once per process; the objects live as long as the interpreter.
    for (int i = 0; i < 6; ++i) Py_INCREF(args[i]);
    g = b;
    Py_RETURN_NONE;
}

long long api_thread_keys(long long keys) { return thread_keys(keys); }
long long api_thread_mask() { return t_state.mask; }
void api_set_thread_mask(long long mask) { t_state.mask = mask; }
TensorplugHotpathAPI g_api = {api_thread_keys, api_thread_mask, api_set_thread_mask};

PyMethodDef kMethods[] = {
    {"bind", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_bind)), METH_FASTCALL,
     "bind(Tensor, device, dtype, layout_cache, contiguous_layout, empty_fallback): the classes whose slots this "
     "module reads and writes, and the Python objects it shares with them."},
    {"empty_tensor", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_empty_tensor)), METH_FASTCALL,
     "empty_tensor(shape, dtype, device) -> a new contiguous tensor with uninitialized memory; device must be "
     "canonical."},
    {"tensor_ndim", py_tensor_ndim, METH_O, "tensor_ndim(t) -> len(t.shape): Tensor.ndim's getter."},
    {"detached", py_detached, METH_O, "detached(t) -> t.detach(): Tensor.data's getter."},
    {"item_method", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_item_method)), METH_FASTCALL,
     "item_method(fallback, {dtype: name}) -> Tensor.item's descriptor: one element of a host storage read in C, "
     "every other case fallback(t)."},
    {"tensor_from_list", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_tensor_from_list)),
     METH_FASTCALL,
     "tensor_from_list(data, float_dtype, float64, int64, bool, device) -> a new host tensor of a flat list of "
     "floats, ints or bools, or None for anything else."},
    {"add_host_storage", py_add_host_storage, METH_O,
     "add_host_storage(type): a storage type whose buffer holds its tensors' elements in host memory."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "_hotpath", "The frontend's compiled hot path (hotpath.cpp).", -1,
                       kMethods};

}  // namespace

PyMODINIT_FUNC PyInit__hotpath() {
    if (PyType_Ready(&ElementwiseOpType) < 0 || PyType_Ready(&FullReductionType) < 0 ||
        PyType_Ready(&CompositeOpType) < 0 ||
        PyType_Ready(&DispatchStateType) < 0 || !make_reduction_shapes())
        return nullptr;
    g_saved_masks_key = PyUnicode_InternFromString("tensorplug._hotpath.saved_masks");
    if (!g_saved_masks_key) return nullptr;
    PyObject* m = PyModule_Create(&kModule);
    if (!m) return nullptr;
    PyObject* state = PyType_GenericNew(&DispatchStateType, nullptr, nullptr);
    Py_INCREF(&ElementwiseOpType);
    if (!state || PyModule_AddObject(m, "local_state", state) < 0 ||
        PyModule_AddObject(m, "ElementwiseOp", reinterpret_cast<PyObject*>(&ElementwiseOpType)) < 0 ||
        PyModule_AddObject(m, "FullReduction", (Py_INCREF(&FullReductionType),
                                                reinterpret_cast<PyObject*>(&FullReductionType))) < 0 ||
        PyModule_AddObject(m, "CompositeOp", (Py_INCREF(&CompositeOpType),
                                              reinterpret_cast<PyObject*>(&CompositeOpType))) < 0 ||
        PyModule_AddObject(m, "_C_API", PyCapsule_New(&g_api, TENSORPLUG_HOTPATH_CAPSULE, nullptr)) < 0) {
        Py_XDECREF(state);
        Py_DECREF(&ElementwiseOpType);
        Py_DECREF(m);
        return nullptr;
    }
    return m;
}
