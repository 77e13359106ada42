// The OpenCL backend's kernel launch, in C (issue 14).
//
// PyOpenCL's generated invoker packs the scalar arguments with struct.pack, sets them through its
// bindings and wraps the returned cl_event in a Python Event: 4-15 us of host time per launch on
// PoCL (more for the strided kernels' thirty arguments), where the OpenCL calls themselves take
// about 2 us. A small training step launches ten to forty kernels, so that was most of its time.
//
// A Kernel here is called exactly as a PyOpenCL kernel is, `kernel(queue, global_size,
// local_size, *args)`, and launches the same cl_kernel: buffers are read through their `int_ptr`
// (any PyOpenCL memory object), scalars are converted to the C type the kernel declares (the
// `spec`, one character per argument, from kernels.py's signatures), and no event is created
// (nothing in the backend waits on a launch's event; synchronization is per queue). `read` and
// `write` are the blocking host copies the same way.
//
// The OpenCL entry points come from the library PyOpenCL itself loaded (`bind(path)`, with the
// path read from /proc/self/maps by the Python side), so this module links against no OpenCL
// and loads where there is none; without `bind` the backend keeps PyOpenCL's kernels.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace {

// The few OpenCL types used, as the OpenCL headers define them (no headers needed to build).
using cl_int = int32_t;
using cl_uint = uint32_t;
using cl_handle = void*;
using SetKernelArg = cl_int (*)(cl_handle kernel, cl_uint index, size_t size, const void* value);
using EnqueueNDRangeKernel = cl_int (*)(cl_handle queue, cl_handle kernel, cl_uint dims, const size_t* offset,
                                        const size_t* global, const size_t* local, cl_uint waits,
                                        const void* wait_list, void* event);

using EnqueueBuffer = cl_int (*)(cl_handle queue, cl_handle buffer, cl_uint blocking, size_t offset, size_t size,
                                 void* host, cl_uint waits, const void* wait_list, void* event);

SetKernelArg set_kernel_arg = nullptr;
EnqueueNDRangeKernel enqueue_nd_range_kernel = nullptr;
EnqueueBuffer enqueue_read_buffer = nullptr;   // clEnqueueReadBuffer
EnqueueBuffer enqueue_write_buffer = nullptr;  // clEnqueueWriteBuffer (its host pointer is const)
PyObject* int_ptr_name = nullptr;  // "int_ptr"

struct Kernel {
    PyObject_HEAD
    vectorcallfunc vectorcall;  // kernel_call: calls skip building an argument tuple
    cl_handle handle;
    PyObject* spec;    // bytes: one type character per kernel argument
    PyObject* name;    // str, for error messages
    PyObject* owner;   // the PyOpenCL kernel, kept alive as long as its handle is used
};

// The OpenCL handle of a PyOpenCL object (queue, buffer): its int_ptr.
bool handle_of(PyObject* object, cl_handle* out) {
    PyObject* value = PyObject_GetAttr(object, int_ptr_name);
    if (!value) return false;
    *out = reinterpret_cast<cl_handle>(static_cast<uintptr_t>(PyLong_AsUnsignedLongLong(value)));
    Py_DECREF(value);
    return !PyErr_Occurred();
}

// global_size / local_size: a tuple of 1 to 3 ints (local_size may be None: the runtime picks).
int sizes_of(PyObject* sizes, size_t* out, const char* what) {
    if (!PyTuple_Check(sizes) || PyTuple_GET_SIZE(sizes) < 1 || PyTuple_GET_SIZE(sizes) > 3) {
        PyErr_Format(PyExc_TypeError, "opencl launch: %s must be a tuple of 1 to 3 ints", what);
        return 0;
    }
    const Py_ssize_t dims = PyTuple_GET_SIZE(sizes);
    for (Py_ssize_t i = 0; i < dims; ++i) {
        const long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(sizes, i));
        if (v < 0) {
            if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "opencl launch: negative %s", what);
            return 0;
        }
        out[i] = static_cast<size_t>(v);
    }
    return static_cast<int>(dims);
}

// Sets argument `index` from `value` as the type character `type` says; false with an exception.
bool set_argument(Kernel* self, cl_uint index, char type, PyObject* value) {
    union {
        int64_t i64;
        uint64_t u64;
        int32_t i32;
        uint32_t u32;
        int16_t i16;
        uint16_t u16;
        int8_t i8;
        uint8_t u8;
        float f32;
        double f64;
        cl_handle mem;
    } arg;
    size_t size;
    switch (type) {
        case 'm':
            if (value == Py_None) {
                arg.mem = nullptr;
            } else if (!handle_of(value, &arg.mem)) {
                return false;
            }
            size = sizeof(cl_handle);
            break;
        case 'q': arg.i64 = PyLong_AsLongLong(value); size = 8; break;
        case 'Q': arg.u64 = PyLong_AsUnsignedLongLongMask(value); size = 8; break;
        case 'i': arg.i32 = static_cast<int32_t>(PyLong_AsLong(value)); size = 4; break;
        case 'I': arg.u32 = static_cast<uint32_t>(PyLong_AsUnsignedLongMask(value)); size = 4; break;
        case 'h': arg.i16 = static_cast<int16_t>(PyLong_AsLong(value)); size = 2; break;
        case 'H': arg.u16 = static_cast<uint16_t>(PyLong_AsUnsignedLongMask(value)); size = 2; break;
        case 'b': arg.i8 = static_cast<int8_t>(PyLong_AsLong(value)); size = 1; break;
        case 'B': arg.u8 = static_cast<uint8_t>(PyLong_AsUnsignedLongMask(value)); size = 1; break;
        case 'f': arg.f32 = static_cast<float>(PyFloat_AsDouble(value)); size = 4; break;
        case 'd': arg.f64 = PyFloat_AsDouble(value); size = 8; break;
        default:
            PyErr_Format(PyExc_ValueError, "opencl launch: unknown argument type '%c'", type);
            return false;
    }
    if (PyErr_Occurred()) {
        PyErr_Format(PyExc_TypeError, "opencl launch of %U: argument %u does not convert to '%c'", self->name,
                     index, type);
        return false;
    }
    const cl_int status = set_kernel_arg(self->handle, index, size, &arg);
    if (status != 0) {
        PyErr_Format(PyExc_RuntimeError, "opencl: clSetKernelArg(%U, %u) failed with error %d", self->name, index,
                     status);
        return false;
    }
    return true;
}

PyObject* kernel_call(PyObject* o, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
    auto* self = reinterpret_cast<Kernel*>(o);
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    const Py_ssize_t count = PyBytes_GET_SIZE(self->spec);
    if (kwnames || nargs != 3 + count) {
        PyErr_Format(PyExc_TypeError, "opencl launch of %U takes (queue, global_size, local_size) and %zd kernel "
                     "arguments, got %zd positional%s", self->name, count, nargs - 3, kwnames ? " and keywords" : "");
        return nullptr;
    }
    cl_handle queue;
    if (!handle_of(args[0], &queue)) return nullptr;
    size_t global[3], local[3];
    const int dims = sizes_of(args[1], global, "global_size");
    if (!dims) return nullptr;
    const bool has_local = args[2] != Py_None;
    if (has_local && sizes_of(args[2], local, "local_size") != dims) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "opencl launch of %U: global and local sizes differ in dims", self->name);
        return nullptr;
    }
    const char* spec = PyBytes_AS_STRING(self->spec);
    for (Py_ssize_t i = 0; i < count; ++i)
        if (!set_argument(self, static_cast<cl_uint>(i), spec[i], args[3 + i])) return nullptr;
    const cl_int status = enqueue_nd_range_kernel(queue, self->handle, static_cast<cl_uint>(dims), nullptr, global,
                                                  has_local ? local : nullptr, 0, nullptr, nullptr);
    if (status != 0) {
        PyErr_Format(PyExc_RuntimeError, "opencl: clEnqueueNDRangeKernel(%U) failed with error %d", self->name,
                     status);
        return nullptr;
    }
    Py_RETURN_NONE;
}

int kernel_init(PyObject* o, PyObject* args, PyObject* kwargs) {
    auto* self = reinterpret_cast<Kernel*>(o);
    static const char* keywords[] = {"owner", "spec", "name", nullptr};
    PyObject *owner, *spec, *name;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OSU", const_cast<char**>(keywords), &owner, &spec, &name))
        return -1;
    if (!set_kernel_arg) {
        PyErr_SetString(PyExc_RuntimeError, "opencl launch: bind() the OpenCL library first");
        return -1;
    }
    cl_handle handle;
    if (!handle_of(owner, &handle)) return -1;
    self->handle = handle;
    self->vectorcall = kernel_call;
    Py_INCREF(owner);
    Py_INCREF(spec);
    Py_INCREF(name);
    Py_XSETREF(self->owner, owner);
    Py_XSETREF(self->spec, spec);
    Py_XSETREF(self->name, name);
    return 0;
}

void kernel_dealloc(PyObject* o) {
    auto* self = reinterpret_cast<Kernel*>(o);
    Py_XDECREF(self->owner);
    Py_XDECREF(self->spec);
    Py_XDECREF(self->name);
    Py_TYPE(o)->tp_free(o);
}

PyObject* kernel_repr(PyObject* o) {
    return PyUnicode_FromFormat("<opencl kernel %U>", reinterpret_cast<Kernel*>(o)->name);
}

PyObject* kernel_get_owner(PyObject* o, void*) {
    PyObject* owner = reinterpret_cast<Kernel*>(o)->owner;
    Py_INCREF(owner);
    return owner;
}

PyGetSetDef kernel_getset[] = {
    {"owner", kernel_get_owner, nullptr, "The PyOpenCL kernel this one launches.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyTypeObject KernelType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// bind(path): the OpenCL entry points from the library at `path` (already loaded by PyOpenCL).
PyObject* bind(PyObject*, PyObject* arg) {
    const char* path = PyUnicode_AsUTF8(arg);
    if (!path) return nullptr;
    void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        PyErr_Format(PyExc_OSError, "opencl launch: cannot load %s: %s", path, dlerror());
        return nullptr;
    }
    auto set = reinterpret_cast<SetKernelArg>(dlsym(library, "clSetKernelArg"));
    auto enqueue = reinterpret_cast<EnqueueNDRangeKernel>(dlsym(library, "clEnqueueNDRangeKernel"));
    auto read_buffer = reinterpret_cast<EnqueueBuffer>(dlsym(library, "clEnqueueReadBuffer"));
    auto write_buffer = reinterpret_cast<EnqueueBuffer>(dlsym(library, "clEnqueueWriteBuffer"));
    if (!set || !enqueue || !read_buffer || !write_buffer) {
        PyErr_Format(PyExc_OSError, "opencl launch: %s lacks one of clSetKernelArg, clEnqueueNDRangeKernel, "
                     "clEnqueueReadBuffer, clEnqueueWriteBuffer", path);
        return nullptr;  // the library stays loaded: it is PyOpenCL's, which stays loaded too
    }
    set_kernel_arg = set;
    enqueue_nd_range_kernel = enqueue;
    enqueue_read_buffer = read_buffer;
    enqueue_write_buffer = write_buffer;
    Py_RETURN_NONE;
}

// read(queue, buffer, offset, host) / write(queue, buffer, offset, host): a blocking copy of
// len(host) bytes between the buffer at `offset` and the contiguous host object, without an event
// and with the GIL released while the queue drains (a loss's .item() every step).
PyObject* copy_blocking(PyObject* const* args, Py_ssize_t nargs, bool to_host) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "opencl copy takes (queue, buffer, offset, host)");
        return nullptr;
    }
    if (!enqueue_read_buffer) {
        PyErr_SetString(PyExc_RuntimeError, "opencl copy: bind() the OpenCL library first");
        return nullptr;
    }
    cl_handle queue, buffer;
    if (!handle_of(args[0], &queue) || !handle_of(args[1], &buffer)) return nullptr;
    const long long offset = PyLong_AsLongLong(args[2]);
    if (offset < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "opencl copy: negative offset");
        return nullptr;
    }
    Py_buffer host;
    if (PyObject_GetBuffer(args[3], &host, (to_host ? PyBUF_WRITABLE : PyBUF_SIMPLE) | PyBUF_C_CONTIGUOUS) < 0)
        return nullptr;
    cl_int status = 0;
    if (host.len > 0) {
        EnqueueBuffer copy = to_host ? enqueue_read_buffer : enqueue_write_buffer;
        Py_BEGIN_ALLOW_THREADS
        status = copy(queue, buffer, 1, static_cast<size_t>(offset), static_cast<size_t>(host.len), host.buf, 0,
                      nullptr, nullptr);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&host);
    if (status != 0) {
        PyErr_Format(PyExc_RuntimeError, "opencl: clEnqueue%sBuffer of %zd bytes failed with error %d",
                     to_host ? "Read" : "Write", host.len, status);
        return nullptr;
    }
    Py_RETURN_NONE;
}

PyObject* host_read(PyObject*, PyObject* const* args, Py_ssize_t nargs) { return copy_blocking(args, nargs, true); }
PyObject* host_write(PyObject*, PyObject* const* args, Py_ssize_t nargs) { return copy_blocking(args, nargs, false); }

PyMethodDef methods[] = {
    {"bind", bind, METH_O, "Take clSetKernelArg and clEnqueueNDRangeKernel from the OpenCL library at this path."},
    {"read", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(host_read)), METH_FASTCALL,
     "read(queue, buffer, offset, host): copy len(host) bytes from the buffer at offset, blocking."},
    {"write", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(host_write)), METH_FASTCALL,
     "write(queue, buffer, offset, host): copy the host bytes into the buffer at offset, blocking."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_opencl_launch", "The OpenCL backend's kernel launch, in C.", -1,
                      methods};

}  // namespace

PyMODINIT_FUNC PyInit__opencl_launch() {
    KernelType.tp_name = "tensorplug.backends.opencl._opencl_launch.Kernel";
    KernelType.tp_basicsize = sizeof(Kernel);
    KernelType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
    KernelType.tp_doc = "Kernel(owner, spec, name): launches the PyOpenCL kernel `owner` as owner(queue, "
                        "global_size, local_size, *args) would, without an event.";
    KernelType.tp_new = PyType_GenericNew;
    KernelType.tp_init = kernel_init;
    KernelType.tp_dealloc = kernel_dealloc;
    KernelType.tp_repr = kernel_repr;
    KernelType.tp_call = PyVectorcall_Call;
    KernelType.tp_vectorcall_offset = offsetof(Kernel, vectorcall);
    KernelType.tp_getset = kernel_getset;
    int_ptr_name = PyUnicode_InternFromString("int_ptr");
    if (!int_ptr_name) return nullptr;
    PyObject* m = PyModule_Create(&module);
    if (!m) return nullptr;
    if (PyType_Ready(&KernelType) < 0 || PyModule_AddObjectRef(m, "Kernel", reinterpret_cast<PyObject*>(&KernelType)) < 0) {
        Py_DECREF(m);
        return nullptr;
    }
    return m;
}
