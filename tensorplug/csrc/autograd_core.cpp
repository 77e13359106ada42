// tensorplug's compiled autograd core (issue 14): recording a graph node in the forward's common
// case, and the backward engine's loop.
//
// Measured with callgrind before this module, `(g * h).sum().backward()` on 4 floats cost 242,000
// instructions (PyTorch: 204,000), and `g * h` alone 46,000 where `a + b` without a graph costs
// 5,200: recording a node was most of a small op, and the engine's bookkeeping (dependency
// counts, the ready queue, gradient buffers) most of a small backward. Both are mechanical steps
// that need no decision, written here in C over the same Python objects:
//   - RecordingKernel: the Autograd kernel of a primitive op (derivatives.py's autograd_kernel)
//     for an out-of-place call whose output is fresh: it finds the inputs' gradient edges, saves
//     the inputs, runs the kernel below Autograd and attaches a FormulaNode to the output. Every
//     other case (in-place, views, integer results, anomaly mode, an input edge it cannot read,
//     saved-tensor hooks pushed somewhere) calls the Python kernel it wraps, which holds every
//     rule and error message.
//     With `composite=True` it is instead the Autograd kernel of a composite op with an explicit
//     derivative (ops/_composite.py's register_derivative): kernel(below, *args) -> output, the
//     op run below Autograd with the Autograd bit masked off, the node attached to its output.
//   - run_graph: engine.py's _dependencies + _run_ready for a backward without `inputs=` or
//     anomaly checks: it counts dependencies, runs ready nodes newest first, sums gradients that
//     meet at one input, and hands complete leaf gradients to engine._accumulate_into_leaf. A
//     FormulaNode's backward (unpacking its saved tensors with their version checks, calling its
//     formula, releasing them) runs here too; other nodes' backward, hooks and leaves stay Python.
// The objects are the Python classes' (Node, FormulaNode, SavedTensor, AutogradMeta), their
// fields read and written at their slot offsets (slots.h), so Python and C build the same graph
// and either may run it.
#include "hotpath_api.h"
#include "slots.h"

#include <queue>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace {

using tp_slots::get;
using tp_slots::put;
using tp_slots::put_new;
using tp_slots::replace;

enum TensorSlot {
    T_STORAGE, T_SHAPE, T_STRIDE, T_DTYPE, T_DEVICE, T_KEYS, T_VERSION, T_BASE, T_GRAD, T_GRAD_FN, T_AUTOGRAD,
    T_OFFSET, T_NUM
};
const char* const kTensorSlots[T_NUM] = {"_storage", "_shape", "_stride", "_dtype", "_device", "_keys",
                                         "_version_ref", "_base", "grad", "grad_fn", "_autograd", "_offset"};
enum NodeSlot { N_NEXT, N_SEQUENCE, N_PRE_HOOKS, N_HOOKS, N_TRACE, N_NUM };
const char* const kNodeSlots[N_NUM] = {"next_functions", "_sequence_nr", "_pre_hooks", "_hooks", "_forward_trace"};
enum FormulaSlot { F_FORMULA, F_SAVED, F_OUTPUT, F_EXTRA, F_OP_NAME, F_NUM };
const char* const kFormulaSlots[F_NUM] = {"formula", "saved", "output", "extra", "op_name"};
enum SavedSlot { S_TENSOR, S_VERSION, S_IS_OUTPUT, S_OP_NAME, S_HOOKED, S_NUM };
const char* const kSavedSlots[S_NUM] = {"_tensor", "_version", "_is_output", "_op_name", "_hooked"};
enum MetaSlot { M_OUTPUT_NR, M_ACCUMULATOR, M_HOOKS, M_POST_HOOKS, M_NUM };
const char* const kMetaSlots[M_NUM] = {"output_nr", "accumulator", "hooks", "post_accumulate_hooks"};

struct Bound {
    PyTypeObject *tensor = nullptr, *dtype, *node, *formula_node, *saved_tensor, *meta, *accumulate_grad, *tensor_meta;
    Py_ssize_t tensor_slot[T_NUM], node_slot[N_NUM], formula_slot[F_NUM], saved_slot[S_NUM], meta_slot[M_NUM];
    Py_ssize_t dtype_is_floating, leaf_variable, tensor_meta_shape, tensor_meta_dtype;
    long long autograd_mask;
    PyObject* sequence;       // graph._sequence, the counter Node.__init__ draws from
    PyObject* anomaly_mode;   // graph.anomaly_mode (its .enabled)
    PyObject* gradient_edge;  // graph.gradient_edge: the edges this module does not read itself
    PyObject* no_edge;        // graph.NO_EDGE
    PyObject* accumulate;     // engine._accumulate_into_leaf(leaf, grad, create_graph)
    PyObject* apply;          // engine._apply(node, grads, retain_graph): nodes with hooks
    PyObject* add;            // engine._add(a, b): gradients that are not both tensors
    PyObject* add_into;       // engine._add_into(a, b): a += b, recording nothing
    PyObject* add_table;      // the add operator's table and lookup, for accumulating in C
    PyObject* add_lookup;
    PyObject* add_dtypes;     // dtypes add computes in their own dtype (its fast path's)
    const TensorplugHotpathAPI* hotpath;
    PyObject* zero;
    PyObject* one;
    PyObject* str_enabled;
    PyObject* str_backward;
    PyObject* str_release;
    PyObject* str_unpack;
    PyObject* str_num_outputs;
    PyObject* empty_tuple;
};
Bound g;

// Whether some thread has saved-tensor hooks pushed (autograd.graph.saved_tensors_hooks): every
// recording then goes to the Python kernels, whose SavedTensor calls the pack hook. Set by
// saved_hooks.py through set_saved_hooks_active; one load per recorded op when unset.
bool g_saved_hooks_active = false;

inline bool is_tensor(PyObject* o) { return PyObject_TypeCheck(o, g.tensor); }
inline PyObject* tslot(PyObject* t, TensorSlot s) { return get(t, g.tensor_slot[s]); }
inline PyObject* nslot(PyObject* n, NodeSlot s) { return get(n, g.node_slot[s]); }

// Whether `t`'s key set has the Autograd key; -1 with an error set when it is not an int.
int requires_grad(PyObject* t) {
    const long long keys = PyLong_AsLongLong(tslot(t, T_KEYS));
    if (keys == -1 && PyErr_Occurred()) return -1;
    return (keys & g.autograd_mask) != 0;
}

bool anomaly_enabled() {
    PyObject* enabled = PyObject_GetAttr(g.anomaly_mode, g.str_enabled);
    if (!enabled) {
        PyErr_Clear();
        return true;  // unknown: the Python path decides
    }
    const bool on = PyObject_IsTrue(enabled) != 0;
    Py_DECREF(enabled);
    return on;
}

// A leaf's new AccumulateGrad, held by the graph and weakly by the leaf's AutogradMeta, as
// graph.gradient_edge makes it (PyTorch keeps the accumulator weakly too: a leaf used in each
// step's forward gets a new one per step). Returns the edge (accumulator, 0).
PyObject* new_accumulator(PyObject* t, PyObject* meta) {
    PyObject* sequence_nr = PyIter_Next(g.sequence);
    PyObject* accumulator = sequence_nr ? g.accumulate_grad->tp_alloc(g.accumulate_grad, 0) : nullptr;
    if (!accumulator) {
        Py_XDECREF(sequence_nr);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "tensorplug: the node sequence ended");
        return nullptr;
    }
    const Py_ssize_t* n = g.node_slot;
    put(accumulator, n[N_NEXT], g.empty_tuple);
    put_new(accumulator, n[N_SEQUENCE], sequence_nr);
    put(accumulator, n[N_PRE_HOOKS], Py_None);
    put(accumulator, n[N_HOOKS], Py_None);
    put(accumulator, n[N_TRACE], Py_None);
    put(accumulator, g.leaf_variable, t);
    PyObject* ref = PyWeakref_NewRef(accumulator, nullptr);
    PyObject* edge = ref ? PyTuple_Pack(2, accumulator, g.zero) : nullptr;
    Py_DECREF(accumulator);  // the edge holds it
    if (!edge) {
        Py_XDECREF(ref);
        return nullptr;
    }
    replace(meta, g.meta_slot[M_ACCUMULATOR], ref);
    Py_DECREF(ref);
    return edge;
}

// The edge a gradient for `t` flows into, as graph.gradient_edge gives it. New reference.
PyObject* gradient_edge(PyObject* t) {
    PyObject* grad_fn = tslot(t, T_GRAD_FN);
    PyObject* meta = tslot(t, T_AUTOGRAD);
    if (grad_fn != Py_None && meta == Py_None) return PyTuple_Pack(2, grad_fn, g.zero);
    if (grad_fn != Py_None && Py_TYPE(meta) == g.meta) {
        PyObject* output_nr = get(meta, g.meta_slot[M_OUTPUT_NR]);
        if (output_nr) return PyTuple_Pack(2, grad_fn, output_nr);
    }
    if (grad_fn == Py_None && Py_TYPE(meta) == g.meta) {  // a leaf that was used before
        PyObject* ref = get(meta, g.meta_slot[M_ACCUMULATOR]);
        if (ref && PyWeakref_CheckRef(ref)) {
            PyObject* accumulator = PyWeakref_GetObject(ref);  // borrowed
            if (accumulator && accumulator != Py_None) return PyTuple_Pack(2, accumulator, g.zero);
        }
        if (ref) return new_accumulator(t, meta);  // its last graph is gone: a new accumulator
    }
    return PyObject_CallOneArg(g.gradient_edge, t);
}

// A SavedTensor of an input, as SavedTensor(t, op_name) makes it. New reference.
PyObject* save_input(PyObject* t, PyObject* op_name) {
    PyObject* version_ref = tslot(t, T_VERSION);
    if (!PyList_CheckExact(version_ref) || PyList_GET_SIZE(version_ref) < 1) {
        PyErr_SetString(PyExc_TypeError, "tensorplug: a tensor's _version_ref is not a one-element list");
        return nullptr;
    }
    PyObject* saved = g.saved_tensor->tp_alloc(g.saved_tensor, 0);
    if (!saved) return nullptr;
    const Py_ssize_t* s = g.saved_slot;
    put(saved, s[S_TENSOR], t);
    put(saved, s[S_VERSION], PyList_GET_ITEM(version_ref, 0));
    put(saved, s[S_IS_OUTPUT], Py_False);
    put(saved, s[S_OP_NAME], op_name);
    put(saved, s[S_HOOKED], Py_None);  // no pack hook: the tensor itself is kept
    return saved;
}

// derivatives._extra(args, keep): the arguments a formula may read besides saved tensors, with
// every tensor not in `keep` replaced by its TensorMeta (shape and dtype). New reference.
PyObject* extra_arguments(PyObject* const* inputs, Py_ssize_t ninputs, PyObject* keep) {
    PyObject* extra = PyTuple_New(ninputs);
    for (Py_ssize_t i = 0; extra && i < ninputs; ++i) {
        PyObject* a = inputs[i];
        bool kept = !is_tensor(a);
        for (Py_ssize_t k = 0, n = PyTuple_GET_SIZE(keep); !kept && k < n; ++k) {
            PyObject* index = PyTuple_GET_ITEM(keep, k);
            kept = PyLong_CheckExact(index) && PyLong_AsSsize_t(index) == i;
        }
        PyObject* item;
        if (kept) {
            item = (Py_INCREF(a), a);
        } else if ((item = g.tensor_meta->tp_alloc(g.tensor_meta, 0))) {
            put(item, g.tensor_meta_shape, tslot(a, T_SHAPE));
            put(item, g.tensor_meta_dtype, tslot(a, T_DTYPE));
        }
        if (!item) Py_CLEAR(extra);
        else PyTuple_SET_ITEM(extra, i, item);
    }
    return extra;
}

// ----- RecordingKernel ----------------------------------------------------------------------
constexpr int kMaxPositions = 8;

struct RecordingKernel {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject* fallback;      // derivatives.py's autograd_kernel: every case not handled here
    PyObject* table;         // Operator.table
    PyObject* lookup;        // Operator.lookup
    PyObject* formula;
    PyObject* op_name;       // the op's name, as FormulaNode.op_name
    PyObject* node_name;     // SavedTensor's op name for messages ("MulBackward0")
    PyObject* keep;          // the extra arguments' spec (a tuple), or None: no extras
    int save_inputs, save_output;
    int composite;           // a composite op's kernel(below, *args) -> output (see the top)
    int npositions;
    int positions[kMaxPositions];  // the differentiable arguments (indices after `out`)
};

PyObject* call_fallback(RecordingKernel* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
    return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

// An operator's kernel for key set `key` (an int): table[key], or lookup(key) on a miss, as
// Operator.lookup does. New reference.
PyObject* kernel_for(PyObject* table, PyObject* lookup, PyObject* key) {
    PyObject* kernel = PyDict_GetItemWithError(table, key);
    if (kernel) {
        Py_INCREF(kernel);
        return kernel;
    }
    return PyErr_Occurred() ? nullptr : PyObject_CallOneArg(lookup, key);
}

// Runs kernel(out, *args) below Autograd; args[0] is `below`. New reference to its result.
PyObject* run_below(RecordingKernel* self, PyObject* const* args, Py_ssize_t nargs) {
    PyObject* kernel = kernel_for(self->table, self->lookup, args[0]);  // the kernel below Autograd
    if (!kernel) return nullptr;
    PyObject* done = PyObject_Vectorcall(kernel, args + 1, nargs - 1, nullptr);
    Py_DECREF(kernel);
    return done;
}

// The node FormulaNode(op_name, formula, edges, saved, saved_out, extra) would be, made
// without its __init__. Steals the four references.
PyObject* new_formula_node(RecordingKernel* self, PyObject* edges, PyObject* saved, PyObject* saved_out,
                           PyObject* extra) {
    PyObject* sequence_nr = PyIter_Next(g.sequence);
    PyObject* node = sequence_nr ? g.formula_node->tp_alloc(g.formula_node, 0) : nullptr;
    if (!node) {
        Py_XDECREF(sequence_nr);
        Py_DECREF(edges);
        Py_DECREF(saved);
        Py_DECREF(saved_out);
        Py_DECREF(extra);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "tensorplug: the node sequence ended");
        return nullptr;
    }
    const Py_ssize_t *n = g.node_slot, *f = g.formula_slot;
    put_new(node, n[N_NEXT], edges);
    put_new(node, n[N_SEQUENCE], sequence_nr);
    put(node, n[N_PRE_HOOKS], Py_None);
    put(node, n[N_HOOKS], Py_None);
    put(node, n[N_TRACE], Py_None);
    put(node, f[F_FORMULA], self->formula);
    put_new(node, f[F_SAVED], saved);
    put_new(node, f[F_OUTPUT], saved_out);
    put_new(node, f[F_EXTRA], extra);
    put(node, f[F_OP_NAME], self->op_name);
    return node;
}

// The gradient edges of the op's differentiable inputs, as a tuple: the input's edge where it
// requires grad, NO_EDGE elsewhere (a position past the call's arguments, or no tensor, has
// none). Null when no input requires grad (no error set: the op then records nothing) or on an
// error. New reference.
PyObject* input_edges(RecordingKernel* self, PyObject* const* inputs, Py_ssize_t ninputs) {
    bool need[kMaxPositions];
    int needed = 0;
    for (int k = 0; k < self->npositions; ++k) {
        const int position = self->positions[k];
        need[k] = false;
        if (position >= ninputs || !is_tensor(inputs[position])) continue;
        const int r = requires_grad(inputs[position]);
        if (r < 0) return nullptr;
        need[k] = r;
        needed += r;
    }
    if (!needed) return nullptr;
    PyObject* edges = PyTuple_New(self->npositions);
    if (!edges) return nullptr;
    for (int k = 0; k < self->npositions; ++k) {
        PyObject* edge = need[k] ? gradient_edge(inputs[self->positions[k]]) : (Py_INCREF(g.no_edge), g.no_edge);
        if (!edge) {
            Py_DECREF(edges);
            return nullptr;
        }
        PyTuple_SET_ITEM(edges, k, edge);
    }
    return edges;
}

PyObject* record(RecordingKernel* self, PyObject* const* args, Py_ssize_t nargs) {
    PyObject* out = args[1];
    PyObject* const* inputs = args + 2;
    const Py_ssize_t ninputs = nargs - 2;
    PyObject* edges = input_edges(self, inputs, ninputs);
    if (!edges) return PyErr_Occurred() ? nullptr : run_below(self, args, nargs);
    PyObject* saved;
    if (self->save_inputs) {
        saved = PyTuple_New(ninputs);
        for (Py_ssize_t i = 0; saved && i < ninputs; ++i) {
            PyObject* item = is_tensor(inputs[i]) ? save_input(inputs[i], self->node_name)
                                                  : (Py_INCREF(inputs[i]), inputs[i]);
            if (!item) Py_CLEAR(saved);
            else PyTuple_SET_ITEM(saved, i, item);
        }
    } else {
        saved = (Py_INCREF(g.empty_tuple), g.empty_tuple);
    }
    if (!saved) {
        Py_DECREF(edges);
        return nullptr;
    }
    PyObject* done = run_below(self, args, nargs);
    PyObject* saved_out = nullptr;
    if (done) {
        Py_DECREF(done);
        saved_out = self->save_output
                        ? PyObject_CallFunctionObjArgs(reinterpret_cast<PyObject*>(g.saved_tensor), out,
                                                       self->node_name, Py_True, nullptr)
                        : (Py_INCREF(Py_None), Py_None);
    }
    PyObject* extra = nullptr;
    if (saved_out) {
        if (self->keep == Py_None) {
            extra = (Py_INCREF(g.empty_tuple), g.empty_tuple);
        } else {
            extra = extra_arguments(inputs, ninputs, self->keep);
        }
    }
    if (!extra) {
        Py_DECREF(edges);
        Py_DECREF(saved);
        Py_XDECREF(saved_out);
        return nullptr;
    }
    PyObject* node = new_formula_node(self, edges, saved, saved_out, extra);
    if (!node) return nullptr;
    // set_history(out, node): a fresh output (no AutogradMeta, checked by the caller) needs no
    // output_nr.
    PyObject* keys = PyLong_FromLongLong(PyLong_AsLongLong(tslot(out, T_KEYS)) | g.autograd_mask);
    if (!keys) {
        Py_DECREF(node);
        return nullptr;
    }
    replace(out, g.tensor_slot[T_GRAD_FN], node);
    Py_DECREF(node);
    replace(out, g.tensor_slot[T_KEYS], keys);
    Py_DECREF(keys);
    Py_RETURN_NONE;
}

// Runs op(*args) below Autograd with the Autograd bit of the thread's mask cleared (nested ops
// of a decomposition are covered by the op's own derivative), restoring the mask even on an
// error. args[0] is `below`. New reference to the output.
PyObject* run_composite_below(RecordingKernel* self, PyObject* const* args, Py_ssize_t nargs) {
    PyObject* kernel = kernel_for(self->table, self->lookup, args[0]);
    if (!kernel) return nullptr;
    const long long previous = g.hotpath->thread_mask();
    g.hotpath->set_thread_mask(previous & ~g.autograd_mask);
    PyObject* out = PyObject_Vectorcall(kernel, args + 1, nargs - 1, nullptr);
    g.hotpath->set_thread_mask(previous);
    Py_DECREF(kernel);
    return out;
}

// set_history(out, node) of graph.py: out becomes the node's output 0.
bool attach_node(PyObject* out, PyObject* node) {
    if (!is_tensor(out)) {
        // What the Python kernel's `t.grad_fn = node` raises for an output that is no tensor.
        return PyObject_SetAttrString(out, "grad_fn", node) == 0;
    }
    PyObject* keys = PyLong_FromLongLong(PyLong_AsLongLong(tslot(out, T_KEYS)) | g.autograd_mask);
    if (!keys) return false;
    replace(out, g.tensor_slot[T_GRAD_FN], node);
    replace(out, g.tensor_slot[T_KEYS], keys);
    Py_DECREF(keys);
    PyObject* meta = tslot(out, T_AUTOGRAD);
    if (meta != Py_None && PyObject_TypeCheck(meta, g.meta)) replace(meta, g.meta_slot[M_OUTPUT_NR], g.zero);
    return true;
}

// A composite op's Autograd kernel: register_derivative's autograd_kernel without its frames.
// args[0] is `below`, the rest the op's arguments (positional: keywords go to the Python kernel).
PyObject* record_composite(RecordingKernel* self, PyObject* const* args, Py_ssize_t nargs) {
    PyObject* const* inputs = args + 1;
    const Py_ssize_t ninputs = nargs - 1;
    PyObject* edges = input_edges(self, inputs, ninputs);
    if (!edges) return PyErr_Occurred() ? nullptr : run_composite_below(self, args, nargs);
    // Every argument is saved (tensors with their versions): the formula gets them all.
    PyObject* saved = PyTuple_New(ninputs);
    for (Py_ssize_t i = 0; saved && i < ninputs; ++i) {
        PyObject* item = is_tensor(inputs[i]) ? save_input(inputs[i], self->node_name) : (Py_INCREF(inputs[i]), inputs[i]);
        if (!item) Py_CLEAR(saved);
        else PyTuple_SET_ITEM(saved, i, item);
    }
    PyObject* out = saved ? run_composite_below(self, args, nargs) : nullptr;
    PyObject* saved_out = nullptr;
    if (out) {
        saved_out = self->save_output
                        ? PyObject_CallFunctionObjArgs(reinterpret_cast<PyObject*>(g.saved_tensor), out,
                                                       self->node_name, Py_True, nullptr)
                        : (Py_INCREF(Py_None), Py_None);
    }
    PyObject* extra = saved_out ? PyDict_New() : nullptr;  // the call's (absent) keyword arguments
    if (!extra) {
        Py_DECREF(edges);
        Py_XDECREF(saved);
        Py_XDECREF(saved_out);
        Py_XDECREF(out);
        return nullptr;
    }
    PyObject* node = new_formula_node(self, edges, saved, saved_out, extra);
    if (!node || !attach_node(out, node)) {
        Py_XDECREF(node);
        Py_DECREF(out);
        return nullptr;
    }
    Py_DECREF(node);
    return out;
}

// kernel(below, out, *args), as the dispatcher calls an Autograd kernel.
PyObject* recording_call(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
    auto* self = reinterpret_cast<RecordingKernel*>(callable);
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (g_saved_hooks_active) return call_fallback(self, args, nargsf, kwnames);
    if (self->composite) {
        if (!g.tensor || kwnames || nargs < 1 || !PyLong_CheckExact(args[0]) || anomaly_enabled())
            return call_fallback(self, args, nargsf, kwnames);
        return record_composite(self, args, nargs);
    }
    if (!g.tensor || kwnames || nargs < 2 || !PyLong_CheckExact(args[0]) || !is_tensor(args[1]))
        return call_fallback(self, args, nargsf, kwnames);
    PyObject* out = args[1];
    for (int k = 0; k < self->npositions; ++k) {
        const int position = self->positions[k];
        if (position >= nargs - 2 || args[2 + position] == out) return call_fallback(self, args, nargsf, kwnames);
    }
    // A fresh floating output that no graph knows yet; anything else is the Python kernel's.
    PyObject* dtype = tslot(out, T_DTYPE);
    if (Py_TYPE(dtype) != g.dtype || get(dtype, g.dtype_is_floating) != Py_True || tslot(out, T_BASE) != Py_None ||
        tslot(out, T_AUTOGRAD) != Py_None || tslot(out, T_GRAD_FN) != Py_None)
        return call_fallback(self, args, nargsf, kwnames);
    const int out_requires = requires_grad(out);
    if (out_requires != 0 || anomaly_enabled()) {
        if (out_requires < 0) PyErr_Clear();
        return call_fallback(self, args, nargsf, kwnames);
    }
    return record(self, args, nargs);
}

PyObject* recording_get(PyObject* self, PyObject* obj, PyObject*) {
    if (!obj || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

// Introspection (__name__, __qualname__, __doc__) is the Python kernel's.
PyObject* recording_getattro(PyObject* self, PyObject* name) {
    PyObject* found = PyObject_GenericGetAttr(self, name);
    if (found || !PyErr_ExceptionMatches(PyExc_AttributeError)) return found;
    PyErr_Clear();
    return PyObject_GetAttr(reinterpret_cast<RecordingKernel*>(self)->fallback, name);
}

PyObject* recording_repr(PyObject* self) {
    return PyUnicode_FromFormat("<recording kernel %R>", reinterpret_cast<RecordingKernel*>(self)->fallback);
}

#define TP_RECORDING_FIELDS(X) X(fallback) X(table) X(lookup) X(formula) X(op_name) X(node_name) X(keep)

int recording_traverse(PyObject* o, visitproc visit, void* arg) {
    auto* self = reinterpret_cast<RecordingKernel*>(o);
#define TP_VISIT(field) Py_VISIT(self->field);
    TP_RECORDING_FIELDS(TP_VISIT)
#undef TP_VISIT
    return 0;
}

int recording_clear(PyObject* o) {
    auto* self = reinterpret_cast<RecordingKernel*>(o);
#define TP_CLEAR(field) Py_CLEAR(self->field);
    TP_RECORDING_FIELDS(TP_CLEAR)
#undef TP_CLEAR
    return 0;
}

void recording_dealloc(PyObject* o) {
    PyObject_GC_UnTrack(o);
    recording_clear(o);
    Py_TYPE(o)->tp_free(o);
}

PyObject* recording_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
    static const char* names[] = {"fallback", "table", "lookup", "formula", "op_name", "node_name",
                                  "positions", "save_inputs", "save_output", "keep", "composite", nullptr};
    PyObject *fallback, *table, *lookup, *formula, *op_name, *node_name, *positions, *keep;
    int save_inputs, save_output, composite = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!OOUUO!ppO|$p:RecordingKernel", const_cast<char**>(names),
                                     &fallback, &PyDict_Type, &table, &lookup, &formula, &op_name, &node_name,
                                     &PyTuple_Type, &positions, &save_inputs, &save_output, &keep, &composite))
        return nullptr;
    const Py_ssize_t n = PyTuple_GET_SIZE(positions);
    if (n < 1 || n > kMaxPositions) {
        PyErr_Format(PyExc_ValueError, "RecordingKernel: 1 to %d differentiable positions", kMaxPositions);
        return nullptr;
    }
    if (keep != Py_None && !PyTuple_Check(keep)) {
        PyErr_SetString(PyExc_TypeError, "RecordingKernel: keep is a tuple or None");
        return nullptr;
    }
    auto* self = reinterpret_cast<RecordingKernel*>(type->tp_alloc(type, 0));
    if (!self) return nullptr;
    self->vectorcall = recording_call;
    self->npositions = static_cast<int>(n);
    for (Py_ssize_t k = 0; k < n; ++k) {
        const long position = PyLong_AsLong(PyTuple_GET_ITEM(positions, k));
        if (position < 0 || position > 64) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "RecordingKernel: positions are argument indices (0 to 64)");
            Py_DECREF(self);
            return nullptr;
        }
        self->positions[k] = static_cast<int>(position);
    }
    self->save_inputs = save_inputs;
    self->save_output = save_output;
    self->composite = composite;
    PyObject* fields[7] = {fallback, table, lookup, formula, op_name, node_name, keep};
    PyObject** slots[7] = {&self->fallback, &self->table, &self->lookup, &self->formula, &self->op_name,
                           &self->node_name, &self->keep};
    for (int i = 0; i < 7; ++i) {
        Py_INCREF(fields[i]);
        *slots[i] = fields[i];
    }
    return reinterpret_cast<PyObject*>(self);
}

PyTypeObject RecordingKernelType = [] {
    PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
    t.tp_name = "tensorplug._autograd_core.RecordingKernel";
    t.tp_doc = "RecordingKernel(fallback, table, lookup, formula, op_name, node_name, positions, save_inputs, "
               "save_output, keep, *, composite=False): a primitive's Autograd kernel with its common case in C "
               "(with composite=True, a composite op's: kernel(below, *args) -> output).";
    t.tp_basicsize = sizeof(RecordingKernel);
    t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR;
    t.tp_vectorcall_offset = offsetof(RecordingKernel, vectorcall);
    t.tp_call = PyVectorcall_Call;
    t.tp_descr_get = recording_get;
    t.tp_getattro = recording_getattro;
    t.tp_repr = recording_repr;
    t.tp_traverse = recording_traverse;
    t.tp_clear = recording_clear;
    t.tp_dealloc = recording_dealloc;
    t.tp_new = recording_new;
    return t;
}();

// ----- the engine loop ----------------------------------------------------------------------
// Ready nodes run newest first (the largest sequence number), as engine.py's heap orders them.
struct Ready {
    long long sequence_nr;
    PyObject* node;  // strong reference while queued
    bool operator<(const Ready& other) const { return sequence_nr < other.sequence_nr; }
};

struct Graph {
    std::unordered_map<PyObject*, long> counts;  // edges into each node not yet delivered
    std::unordered_set<PyObject*> queued;
    std::priority_queue<Ready> ready;
    PyObject* buffers;  // dict node -> list of gradients per output (engine.py's buffers)
    bool retain_graph, create_graph;

    ~Graph() {
        while (!ready.empty()) {
            Py_DECREF(ready.top().node);
            ready.pop();
        }
    }
};

bool is_node(PyObject* o) { return PyObject_TypeCheck(o, g.node); }

// The edges (node, input_nr) of `node`, checked once: a tuple of pairs whose first item is a
// Node or None. Borrowed.
PyObject* edges_of(PyObject* node) {
    PyObject* edges = nslot(node, N_NEXT);
    if (!edges || !PyTuple_Check(edges)) {
        PyErr_Format(PyExc_TypeError, "autograd: %R.next_functions is not a tuple", node);
        return nullptr;
    }
    const Py_ssize_t n = PyTuple_GET_SIZE(edges);
    for (Py_ssize_t i = 0; i < n; ++i) {
        PyObject* edge = PyTuple_GET_ITEM(edges, i);
        if (!PyTuple_Check(edge) || PyTuple_GET_SIZE(edge) != 2 ||
            (PyTuple_GET_ITEM(edge, 0) != Py_None && !is_node(PyTuple_GET_ITEM(edge, 0)))) {
            PyErr_Format(PyExc_TypeError, "autograd: %R has an edge that is not (node, input_nr)", node);
            return nullptr;
        }
    }
    return edges;
}

bool count_dependencies(Graph& graph, PyObject* roots) {
    std::unordered_set<PyObject*> seen;
    std::vector<PyObject*> stack;
    const Py_ssize_t nroots = PyList_GET_SIZE(roots);
    for (Py_ssize_t i = 0; i < nroots; ++i) {
        PyObject* node = PyList_GET_ITEM(roots, i);
        if (seen.insert(node).second) stack.push_back(node);
    }
    while (!stack.empty()) {
        PyObject* node = stack.back();
        stack.pop_back();
        PyObject* edges = edges_of(node);
        if (!edges) return false;
        for (Py_ssize_t i = 0, n = PyTuple_GET_SIZE(edges); i < n; ++i) {
            PyObject* next = PyTuple_GET_ITEM(PyTuple_GET_ITEM(edges, i), 0);
            if (next == Py_None) continue;
            ++graph.counts[next];
            if (seen.insert(next).second) stack.push_back(next);
        }
    }
    return true;
}

bool push_ready(Graph& graph, PyObject* node) {
    const long long sequence_nr = PyLong_AsLongLong(nslot(node, N_SEQUENCE));
    if (sequence_nr == -1 && PyErr_Occurred()) return false;
    Py_INCREF(node);
    graph.ready.push({sequence_nr, node});
    return true;
}

// buffers.pop(node, [None]) as a tuple. New reference.
PyObject* pop_gradients(Graph& graph, PyObject* node) {
    PyObject* slots = PyDict_GetItemWithError(graph.buffers, node);
    if (!slots) {
        if (PyErr_Occurred()) return nullptr;
        return PyTuple_Pack(1, Py_None);
    }
    PyObject* grads = PyList_AsTuple(slots);
    if (!grads || PyDict_DelItem(graph.buffers, node) < 0) {
        Py_XDECREF(grads);
        return nullptr;
    }
    return grads;
}

// The number of elements of a tensor whose shape is a tuple of ints; -1 on anything else.
long long numel_of(PyObject* t) {
    PyObject* shape = tslot(t, T_SHAPE);
    if (!shape || !PyTuple_CheckExact(shape)) return -1;
    long long n = 1;
    for (Py_ssize_t i = 0, d = PyTuple_GET_SIZE(shape); i < d; ++i) n *= PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
    return PyErr_Occurred() ? (PyErr_Clear(), -1) : n;
}

// Whether the view `grad` is the only way to its base's memory: the base is no view, nothing but
// the view holds it, and both cover the same elements from the same offset. The backward of a
// 2-D matrix product ends in such a view (the squeeze of its batch of one), and so does a
// reshape after a sum; the engine may then take the view as a tensor of its own.
bool sole_view(PyObject* grad, PyObject* base) {
    if (Py_TYPE(base) != g.tensor || Py_REFCNT(base) != 1 || tslot(base, T_BASE) != Py_None ||
        tslot(base, T_STORAGE) != tslot(grad, T_STORAGE))
        return false;
    const int same_offset = PyObject_RichCompareBool(tslot(base, T_OFFSET), tslot(grad, T_OFFSET), Py_EQ);
    if (same_offset != 1) return PyErr_Occurred() ? (PyErr_Clear(), false) : false;
    const long long n = numel_of(grad);
    return n >= 0 && n == numel_of(base);
}

// Whether `grad` may become `leaf.grad` itself instead of a copy (PyTorch steals it too): only
// the engine holds it (`holders` references) and its memory (directly, or as the sole view of
// a base nothing else holds), and it has the leaf's dtype, shape and strides.
bool may_steal(PyObject* leaf, PyObject* grad, Py_ssize_t holders) {
    if (Py_TYPE(grad) != g.tensor || Py_REFCNT(grad) != holders) return false;
    PyObject* base = tslot(grad, T_BASE);
    const bool view = base != Py_None;
    if (view && !sole_view(grad, base)) return false;
    PyObject* storage = tslot(grad, T_STORAGE);
    if (!storage || Py_REFCNT(storage) != (view ? 2 : 1) || tslot(grad, T_DTYPE) != tslot(leaf, T_DTYPE)) return false;
    return PyObject_RichCompareBool(tslot(grad, T_STRIDE), tslot(leaf, T_STRIDE), Py_EQ) == 1;
}

// `target += grad` as elementwise.binary_inplace's fast path does it: both of one shape, dtype
// and device, separate memory, a target with no repeated elements; the kernel comes from add's
// table for the thread's key set (so the profiler sees it) and the target's version moves on.
// 1 when done, 0 when the Python function must do it, -1 on an error.
int add_in_place(PyObject* target, PyObject* grad) {
    PyObject* dtype = tslot(target, T_DTYPE);
    PyObject* shape = tslot(target, T_SHAPE);
    PyObject* strides = tslot(target, T_STRIDE);
    PyObject* version_ref = tslot(target, T_VERSION);
    if (dtype != tslot(grad, T_DTYPE) || tslot(target, T_DEVICE) != tslot(grad, T_DEVICE) ||
        tslot(target, T_STORAGE) == tslot(grad, T_STORAGE) || !PyTuple_CheckExact(strides) ||
        !PyList_CheckExact(version_ref) || PyList_GET_SIZE(version_ref) < 1 || PySet_Contains(g.add_dtypes, dtype) != 1)
        return PyErr_Occurred() ? (PyErr_Clear(), 0) : 0;
    if (shape != tslot(grad, T_SHAPE) && PyObject_RichCompareBool(shape, tslot(grad, T_SHAPE), Py_EQ) != 1)
        return PyErr_Occurred() ? (PyErr_Clear(), 0) : 0;
    for (Py_ssize_t i = 0, n = PyTuple_GET_SIZE(strides); i < n; ++i)
        if (PyLong_AsLongLong(PyTuple_GET_ITEM(strides, i)) == 0) return 0;
    const long long keys_a = PyLong_AsLongLong(tslot(target, T_KEYS));
    const long long keys_b = PyLong_AsLongLong(tslot(grad, T_KEYS));
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    PyObject* key = PyLong_FromLongLong(g.hotpath->thread_keys(keys_a | keys_b));
    if (!key) return -1;
    PyObject* kernel = kernel_for(g.add_table, g.add_lookup, key);
    Py_DECREF(key);
    if (!kernel) return -1;
    PyObject* args[3] = {target, target, grad};
    PyObject* done = PyObject_Vectorcall(kernel, args, 3, nullptr);
    Py_DECREF(kernel);
    if (!done) return -1;
    Py_DECREF(done);
    PyObject* version = PyNumber_Add(PyList_GET_ITEM(version_ref, 0), g.one);
    if (!version) return -1;
    PyList_SetItem(version_ref, 0, version);  // steals
    return 1;
}

// engine._accumulate_into_leaf's common cases: no hooks, a gradient of the leaf's shape and
// device, no create_graph. Returns 1 when done, 0 when the Python function must decide (it moves
// a 0-d CPU leaf's gradient back from another device), -1 on an error.
int accumulate_plainly(Graph& graph, PyObject* leaf, PyObject* grad, Py_ssize_t holders) {
    if (graph.create_graph || !is_tensor(leaf) || !is_tensor(grad)) return 0;
    if (tslot(leaf, T_DEVICE) != tslot(grad, T_DEVICE)) return 0;
    PyObject* meta = tslot(leaf, T_AUTOGRAD);
    if (meta != Py_None && (Py_TYPE(meta) != g.meta || get(meta, g.meta_slot[M_HOOKS]) != Py_None ||
                            get(meta, g.meta_slot[M_POST_HOOKS]) != Py_None))
        return 0;
    PyObject* shape = tslot(leaf, T_SHAPE);
    if (tslot(grad, T_SHAPE) != shape) {
        const int same = PyObject_RichCompareBool(tslot(grad, T_SHAPE), shape, Py_EQ);
        if (same != 1) {
            PyErr_Clear();
            return 0;  // the Python function raises its message
        }
    }
    PyObject* current = tslot(leaf, T_GRAD);
    if (current == Py_None) {
        if (!may_steal(leaf, grad, holders)) return 0;  // the Python function clones it
        // A sole view drops its base (freed here): .grad is then a tensor of its own, as a copy
        // would have been.
        if (tslot(grad, T_BASE) != Py_None) replace(grad, g.tensor_slot[T_BASE], Py_None);
        replace(leaf, g.tensor_slot[T_GRAD], grad);
        return 1;
    }
    if (!is_tensor(current)) return 0;
    const int added = add_in_place(current, grad);
    if (added) return added;
    PyObject* call[2] = {current, grad};
    PyObject* done = PyObject_Vectorcall(g.add_into, call, 2, nullptr);
    Py_XDECREF(done);
    return done ? 1 : -1;
}

// Runs a leaf's accumulator with its complete gradient. `results`, when not null, is the tuple
// of gradients being delivered (it holds references to the gradient too).
bool run_leaf(Graph& graph, PyObject* node, PyObject* results = nullptr) {
    PyObject* grads = pop_gradients(graph, node);
    if (!grads) return false;
    PyObject* grad = PyTuple_GET_SIZE(grads) ? PyTuple_GET_ITEM(grads, 0) : Py_None;
    bool ok = true;
    if (grad != Py_None) {
        PyObject* leaf = get(node, g.leaf_variable);
        if (!leaf) leaf = Py_None;
        Py_ssize_t holders = 1;  // `grads`
        for (Py_ssize_t i = 0, n = results ? PyTuple_GET_SIZE(results) : 0; i < n; ++i)
            holders += PyTuple_GET_ITEM(results, i) == grad;
        const int done_here = accumulate_plainly(graph, leaf, grad, holders);
        if (done_here == 0) {
            PyObject* call[3] = {leaf, grad, graph.create_graph ? Py_True : Py_False};
            PyObject* done = PyObject_Vectorcall(g.accumulate, call, 3, nullptr);
            ok = done != nullptr;
            Py_XDECREF(done);
        } else {
            ok = done_here == 1;
        }
    }
    Py_DECREF(grads);
    return ok;
}

// A saved input's tensor after its version check; the Python unpack for everything else (an
// output, a released or modified tensor: it raises PyTorch's messages). New reference.
PyObject* unpack(PyObject* saved, PyObject* node) {
    const Py_ssize_t* s = g.saved_slot;
    PyObject* t = get(saved, s[S_TENSOR]);
    if (get(saved, s[S_IS_OUTPUT]) == Py_False && t && t != Py_None) {
        PyObject* version_ref = tslot(t, T_VERSION);
        PyObject* version = get(saved, s[S_VERSION]);
        if (PyList_CheckExact(version_ref) && PyList_GET_SIZE(version_ref) >= 1 && version &&
            PyList_GET_ITEM(version_ref, 0) == version) {
            Py_INCREF(t);
            return t;
        }
    }
    PyObject* call[2] = {saved, node};  // unpack() for an input, unpack(node) for the output
    return PyObject_VectorcallMethod(g.str_unpack, call, node ? 2 : 1, nullptr);
}

// FormulaNode.backward(grads), without its frame.
PyObject* formula_backward(PyObject* node, PyObject* grads) {
    const Py_ssize_t* f = g.formula_slot;
    PyObject* edges = nslot(node, N_NEXT);
    const Py_ssize_t nedges = PyTuple_GET_SIZE(edges);
    PyObject* grad = PyTuple_GET_SIZE(grads) ? PyTuple_GET_ITEM(grads, 0) : Py_None;
    if (grad == Py_None) {
        PyObject* nones = PyTuple_New(nedges);
        for (Py_ssize_t i = 0; nones && i < nedges; ++i) PyTuple_SET_ITEM(nones, i, (Py_INCREF(Py_None), Py_None));
        return nones;
    }
    PyObject* saved = get(node, f[F_SAVED]);
    PyObject* output = get(node, f[F_OUTPUT]);
    if (!saved || !PyTuple_Check(saved) || !output) return PyObject_CallMethodOneArg(node, g.str_backward, grads);
    const Py_ssize_t nsaved = PyTuple_GET_SIZE(saved);
    PyObject* inputs = PyTuple_New(nsaved);
    for (Py_ssize_t i = 0; inputs && i < nsaved; ++i) {
        PyObject* s = PyTuple_GET_ITEM(saved, i);
        PyObject* item = Py_TYPE(s) == g.saved_tensor ? unpack(s, nullptr) : (Py_INCREF(s), s);
        if (!item) Py_CLEAR(inputs);
        else PyTuple_SET_ITEM(inputs, i, item);
    }
    PyObject* out = inputs ? (output == Py_None ? (Py_INCREF(Py_None), Py_None) : unpack(output, node)) : nullptr;
    PyObject* needs = out ? PyTuple_New(nedges) : nullptr;
    for (Py_ssize_t i = 0; needs && i < nedges; ++i) {
        PyObject* need = PyTuple_GET_ITEM(PyTuple_GET_ITEM(edges, i), 0) != Py_None ? Py_True : Py_False;
        Py_INCREF(need);
        PyTuple_SET_ITEM(needs, i, need);
    }
    PyObject* results = nullptr;
    if (needs) {
        PyObject* call[5] = {grad, inputs, out, get(node, f[F_EXTRA]), needs};
        results = PyObject_Vectorcall(get(node, f[F_FORMULA]), call, 5, nullptr);
    }
    Py_XDECREF(inputs);
    Py_XDECREF(out);
    Py_XDECREF(needs);
    return results;
}

// SavedTensor.release(): drop the tensor, or what a pack hook made of it.
void release_saved(PyObject* saved) {
    replace(saved, g.saved_slot[S_TENSOR], Py_None);
    replace(saved, g.saved_slot[S_HOOKED], Py_None);
}

// FormulaNode.release(): drop the saved tensors.
void formula_release(PyObject* node) {
    PyObject* saved = get(node, g.formula_slot[F_SAVED]);
    if (saved && PyTuple_Check(saved))
        for (Py_ssize_t i = 0, n = PyTuple_GET_SIZE(saved); i < n; ++i) {
            PyObject* s = PyTuple_GET_ITEM(saved, i);
            if (Py_TYPE(s) == g.saved_tensor) release_saved(s);
        }
    PyObject* output = get(node, g.formula_slot[F_OUTPUT]);
    if (output && Py_TYPE(output) == g.saved_tensor) release_saved(output);
}

// node.backward(grads), releasing its saved tensors afterwards (even on an error) unless the
// graph is retained. New reference to a tuple of gradients, one per edge.
PyObject* run_node(Graph& graph, PyObject* node, PyObject* grads) {
    PyObject* results;
    if (nslot(node, N_PRE_HOOKS) != Py_None || nslot(node, N_HOOKS) != Py_None || nslot(node, N_TRACE) != Py_None) {
        PyObject* call[3] = {node, grads, graph.retain_graph ? Py_True : Py_False};
        results = PyObject_Vectorcall(g.apply, call, 3, nullptr);  // releases itself
    } else {
        const bool formula = Py_TYPE(node) == g.formula_node;
        results = formula ? formula_backward(node, grads) : PyObject_CallMethodOneArg(node, g.str_backward, grads);
        if (!graph.retain_graph) {
            if (formula) {
                PyObject *type, *value, *traceback;
                PyErr_Fetch(&type, &value, &traceback);  // freeing tensors must not see an error set
                formula_release(node);
                PyErr_Restore(type, value, traceback);
            } else {
                PyObject *type, *value, *traceback;
                PyErr_Fetch(&type, &value, &traceback);  // release even when backward raised
                PyObject* done = PyObject_CallMethodNoArgs(node, g.str_release);
                if (!done) {
                    Py_XDECREF(results);
                    results = nullptr;
                    Py_XDECREF(type);
                    Py_XDECREF(value);
                    Py_XDECREF(traceback);
                    return nullptr;
                }
                Py_DECREF(done);
                PyErr_Restore(type, value, traceback);
            }
        }
    }
    if (results && !PyTuple_Check(results)) {
        PyObject* one = PyTuple_Pack(1, results);
        Py_DECREF(results);
        results = one;
    }
    return results;
}

// Adds `grad` into output `nr`'s slot of `next`'s buffer (created at its output count).
bool deliver(Graph& graph, PyObject* next, Py_ssize_t nr, PyObject* grad) {
    PyObject* slots = PyDict_GetItemWithError(graph.buffers, next);
    if (!slots) {
        if (PyErr_Occurred()) return false;
        PyObject* count_obj = PyObject_GetAttr(next, g.str_num_outputs);
        if (!count_obj) return false;
        Py_ssize_t count = PyLong_AsSsize_t(count_obj);
        Py_DECREF(count_obj);
        if (count == -1 && PyErr_Occurred()) return false;
        if (count <= nr) count = nr + 1;
        PyObject* fresh = PyList_New(count);
        if (!fresh) return false;
        for (Py_ssize_t i = 0; i < count; ++i) PyList_SET_ITEM(fresh, i, (Py_INCREF(Py_None), Py_None));
        const int stored = PyDict_SetItem(graph.buffers, next, fresh);
        Py_DECREF(fresh);
        if (stored < 0) return false;
        slots = fresh;  // the dict holds it
    } else if (!PyList_CheckExact(slots)) {
        PyErr_SetString(PyExc_TypeError, "autograd: a gradient buffer is not a list");
        return false;
    }
    while (PyList_GET_SIZE(slots) <= nr)
        if (PyList_Append(slots, Py_None) < 0) return false;
    PyObject* current = PyList_GET_ITEM(slots, nr);
    PyObject* sum;
    if (current == Py_None) {
        sum = (Py_INCREF(grad), grad);
    } else if (is_tensor(current) && is_tensor(grad)) {
        sum = PyNumber_Add(current, grad);
    } else {
        PyObject* call[2] = {current, grad};
        sum = PyObject_Vectorcall(g.add, call, 2, nullptr);
    }
    if (!sum) return false;
    return PyList_SetItem(slots, nr, sum) == 0;  // steals sum
}

bool run_loop(Graph& graph) {
    while (!graph.ready.empty()) {
        PyObject* node = graph.ready.top().node;  // the reference moves here
        graph.ready.pop();
        if (Py_TYPE(node) == g.accumulate_grad) {  // a root that is a leaf: backward() on a leaf
            const bool ok = run_leaf(graph, node);
            Py_DECREF(node);
            if (!ok) return false;
            continue;
        }
        PyObject* grads = pop_gradients(graph, node);
        PyObject* results = grads ? run_node(graph, node, grads) : nullptr;
        Py_XDECREF(grads);
        PyObject* edges = results ? edges_of(node) : nullptr;
        if (!edges) {
            Py_XDECREF(results);
            Py_DECREF(node);
            return false;
        }
        Py_INCREF(edges);
        const Py_ssize_t n = std::min(PyTuple_GET_SIZE(edges), PyTuple_GET_SIZE(results));
        bool ok = true;
        for (Py_ssize_t i = 0; ok && i < n; ++i) {
            PyObject* edge = PyTuple_GET_ITEM(edges, i);
            PyObject* next = PyTuple_GET_ITEM(edge, 0);
            if (next == Py_None) continue;
            PyObject* grad = PyTuple_GET_ITEM(results, i);
            if (grad != Py_None) {
                const Py_ssize_t nr = PyLong_AsSsize_t(PyTuple_GET_ITEM(edge, 1));
                ok = !(nr < 0 && PyErr_Occurred()) && nr >= 0 && deliver(graph, next, nr, grad);
                if (!ok) {
                    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "autograd: a negative input_nr");
                    break;
                }
            }
            if (--graph.counts[next] == 0 && graph.queued.insert(next).second) {
                // As in PyTorch, a leaf's gradient is accumulated as soon as it is complete (its
                // post-accumulate hooks, DDP's bucket trigger, fire early).
                ok = Py_TYPE(next) == g.accumulate_grad ? run_leaf(graph, next, results) : push_ready(graph, next);
            }
        }
        Py_DECREF(edges);
        Py_DECREF(results);
        Py_DECREF(node);
        if (!ok) return false;
    }
    return true;
}

// run_graph(roots, buffers, retain_graph, create_graph): engine.py's _dependencies and
// _run_ready for a backward without captures or anomaly checks. `roots` is a list of nodes,
// `buffers` holds their seeded gradients.
PyObject* py_run_graph(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (!g.tensor) {
        PyErr_SetString(PyExc_RuntimeError, "_autograd_core: bind() was not called");
        return nullptr;
    }
    if (nargs != 4 || !PyList_CheckExact(args[0]) || !PyDict_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "run_graph(roots: list, buffers: dict, retain_graph, create_graph)");
        return nullptr;
    }
    for (Py_ssize_t i = 0, n = PyList_GET_SIZE(args[0]); i < n; ++i)
        if (!is_node(PyList_GET_ITEM(args[0], i))) {
            PyErr_SetString(PyExc_TypeError, "run_graph: roots must be autograd nodes");
            return nullptr;
        }
    Graph graph;
    graph.buffers = args[1];
    graph.retain_graph = PyObject_IsTrue(args[2]) == 1;
    graph.create_graph = PyObject_IsTrue(args[3]) == 1;
    if (!count_dependencies(graph, args[0])) return nullptr;
    for (Py_ssize_t i = 0, n = PyList_GET_SIZE(args[0]); i < n; ++i) {
        PyObject* node = PyList_GET_ITEM(args[0], i);
        auto found = graph.counts.find(node);
        if ((found == graph.counts.end() || found->second == 0) && graph.queued.insert(node).second)
            if (!push_ready(graph, node)) return nullptr;
    }
    if (!run_loop(graph)) return nullptr;
    Py_RETURN_NONE;
}

// ----- bind ---------------------------------------------------------------------------------
PyObject* py_bind(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    static const char* usage =
        "bind(Tensor, dtype, Node, FormulaNode, SavedTensor, AutogradMeta, AccumulateGrad, autograd_mask, "
        "sequence, anomaly_mode, gradient_edge, NO_EDGE, TensorMeta, accumulate, apply, add, add_into, add_table, "
        "add_lookup, add_dtypes)";
    if (nargs != 20 || !PyDict_CheckExact(args[17]) || !PyFrozenSet_CheckExact(args[19])) {
        PyErr_SetString(PyExc_TypeError, usage);
        return nullptr;
    }
    for (int i = 0; i < 7; ++i)
        if (!PyType_Check(args[i])) {
            PyErr_SetString(PyExc_TypeError, usage);
            return nullptr;
        }
    Bound b;
    auto type = [&](int i) { return reinterpret_cast<PyTypeObject*>(args[i]); };
    b.tensor = type(0);
    b.dtype = type(1);
    b.node = type(2);
    b.formula_node = type(3);
    b.saved_tensor = type(4);
    b.meta = type(5);
    b.accumulate_grad = type(6);
    if (!tp_slots::slot_offsets(b.tensor, kTensorSlots, T_NUM, b.tensor_slot) ||
        !tp_slots::slot_offsets(b.node, kNodeSlots, N_NUM, b.node_slot) ||
        !tp_slots::slot_offsets(b.formula_node, kFormulaSlots, F_NUM, b.formula_slot) ||
        !tp_slots::slot_offsets(b.saved_tensor, kSavedSlots, S_NUM, b.saved_slot) ||
        !tp_slots::slot_offsets(b.meta, kMetaSlots, M_NUM, b.meta_slot) ||
        (b.dtype_is_floating = tp_slots::slot_offset(b.dtype, "is_floating_point")) < 0 ||
        (b.leaf_variable = tp_slots::slot_offset(b.accumulate_grad, "variable")) < 0)
        return nullptr;
    if (!PyType_IsSubtype(b.formula_node, b.node) || !PyType_IsSubtype(b.accumulate_grad, b.node)) {
        PyErr_SetString(PyExc_TypeError, "bind: FormulaNode and AccumulateGrad must be Nodes");
        return nullptr;
    }
    b.autograd_mask = PyLong_AsLongLong(args[7]);
    if (b.autograd_mask == -1 && PyErr_Occurred()) return nullptr;
    b.sequence = args[8];
    b.anomaly_mode = args[9];
    b.gradient_edge = args[10];
    b.no_edge = args[11];
    if (!PyType_Check(args[12])) {
        PyErr_SetString(PyExc_TypeError, usage);
        return nullptr;
    }
    b.tensor_meta = reinterpret_cast<PyTypeObject*>(args[12]);
    if ((b.tensor_meta_shape = tp_slots::slot_offset(b.tensor_meta, "shape")) < 0 ||
        (b.tensor_meta_dtype = tp_slots::slot_offset(b.tensor_meta, "dtype")) < 0)
        return nullptr;
    b.accumulate = args[13];
    b.apply = args[14];
    b.add = args[15];
    b.add_into = args[16];
    b.add_table = args[17];
    b.add_lookup = args[18];
    b.add_dtypes = args[19];
    b.hotpath = static_cast<const TensorplugHotpathAPI*>(PyCapsule_Import(TENSORPLUG_HOTPATH_CAPSULE, 0));
    if (!b.hotpath) return nullptr;
    b.zero = PyLong_FromLong(0);
    b.one = PyLong_FromLong(1);
    b.str_enabled = PyUnicode_InternFromString("enabled");
    b.str_backward = PyUnicode_InternFromString("backward");
    b.str_release = PyUnicode_InternFromString("release");
    b.str_unpack = PyUnicode_InternFromString("unpack");
    b.str_num_outputs = PyUnicode_InternFromString("num_outputs");
    b.empty_tuple = PyTuple_New(0);
    if (!b.zero || !b.str_enabled || !b.str_backward || !b.str_release || !b.str_unpack || !b.str_num_outputs ||
        !b.empty_tuple)
        return nullptr;
    // Bound once per process; the objects live as long as the interpreter.
    for (int i = 0; i < 20; ++i) Py_INCREF(args[i]);
    g = b;
    Py_RETURN_NONE;
}

// set_saved_hooks_active(flag): whether recordings must go to the Python kernels (see
// g_saved_hooks_active).
PyObject* py_set_saved_hooks_active(PyObject*, PyObject* flag) {
    const int on = PyObject_IsTrue(flag);
    if (on < 0) return nullptr;
    g_saved_hooks_active = on != 0;
    Py_RETURN_NONE;
}

PyMethodDef kMethods[] = {
    {"bind", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_bind)), METH_FASTCALL,
     "bind(...): the autograd classes whose slots this module reads and writes, and the Python functions it "
     "calls for the cases it does not handle."},
    {"run_graph", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_run_graph)), METH_FASTCALL,
     "run_graph(roots, buffers, retain_graph, create_graph): run the backward pass from the root nodes, whose "
     "seeded gradients are in buffers (node -> list per output)."},
    {"set_saved_hooks_active", py_set_saved_hooks_active, METH_O,
     "set_saved_hooks_active(flag): while true, every recording runs the Python kernel (saved-tensor hooks are "
     "pushed somewhere)."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "_autograd_core",
                       "The autograd's compiled core (autograd_core.cpp).", -1, kMethods};

}  // namespace

PyMODINIT_FUNC PyInit__autograd_core() {
    if (PyType_Ready(&RecordingKernelType) < 0) return nullptr;
    PyObject* m = PyModule_Create(&kModule);
    if (!m) return nullptr;
    Py_INCREF(&RecordingKernelType);
    if (PyModule_AddObject(m, "RecordingKernel", reinterpret_cast<PyObject*>(&RecordingKernelType)) < 0) {
        Py_DECREF(&RecordingKernelType);
        Py_DECREF(m);
        return nullptr;
    }
    return m;
}
