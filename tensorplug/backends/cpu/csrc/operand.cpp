// Argument parsing and validation shared by every entry point. Everything a kernel trusts
// (dtype codes, stride counts, the extent each operand touches) is checked here.
#include "common.h"
#include "ops.h"

namespace tp {

const int kItemSize[kNumDTypes] = {1, 1, 1, 2, 4, 8, 2, 4, 8, 2, 2, 4, 8, 1, 1, 1, 1};
const char* const kDTypeName[kNumDTypes] = {"bool",    "uint8",   "int8",    "int16",   "int32",
                                            "int64",   "float16", "float32", "float64", "bfloat16",
                                            "uint16",  "uint32",  "uint64",  "float8_e4m3fn",
                                            "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"};

const OpName kUnaryOpNames[U_NUM_OPS] = {
    {"neg", U_NEG},         {"abs", U_ABS},       {"sign", U_SIGN},
    {"exp", U_EXP},         {"exp2", U_EXP2},     {"log", U_LOG},
    {"log2", U_LOG2},       {"log10", U_LOG10},   {"log1p", U_LOG1P},
    {"expm1", U_EXPM1},     {"sqrt", U_SQRT},     {"rsqrt", U_RSQRT},
    {"sin", U_SIN},         {"cos", U_COS},       {"tan", U_TAN},
    {"asin", U_ASIN},       {"acos", U_ACOS},     {"atan", U_ATAN},
    {"sinh", U_SINH},       {"cosh", U_COSH},     {"tanh", U_TANH},
    {"sigmoid", U_SIGMOID}, {"erf", U_ERF},       {"floor", U_FLOOR},
    {"ceil", U_CEIL},       {"round", U_ROUND},   {"trunc", U_TRUNC},
    {"reciprocal", U_RECIPROCAL}, {"square", U_SQUARE}, {"logical_not", U_LOGICAL_NOT},
    {"bitwise_not", U_BITWISE_NOT}, {"isnan", U_ISNAN}, {"isinf", U_ISINF},
    {"isfinite", U_ISFINITE}, {"erfinv", U_ERFINV}, {"relu", U_RELU},
};

const OpName kBinaryOpNames[B_NUM_OPS] = {
    {"add", B_ADD},
    {"sub", B_SUB},
    {"mul", B_MUL},
    {"div", B_DIV},
    {"floor_divide", B_FLOOR_DIVIDE},
    {"remainder", B_REMAINDER},
    {"fmod", B_FMOD},
    {"pow", B_POW},
    {"maximum", B_MAXIMUM},
    {"minimum", B_MINIMUM},
    {"atan2", B_ATAN2},
    {"bitwise_and", B_BITWISE_AND},
    {"bitwise_or", B_BITWISE_OR},
    {"bitwise_xor", B_BITWISE_XOR},
    {"logical_and", B_LOGICAL_AND},
    {"logical_or", B_LOGICAL_OR},
    {"logical_xor", B_LOGICAL_XOR},
    {"copysign", B_COPYSIGN},
    {"hypot", B_HYPOT},
    {"bitwise_left_shift", B_LSHIFT},
    {"bitwise_right_shift", B_RSHIFT},
    {"relu_backward", B_RELU_BACKWARD},
};

const OpName kCompareOpNames[C_NUM_OPS] = {{"eq", C_EQ}, {"ne", C_NE}, {"lt", C_LT},
                                           {"le", C_LE}, {"gt", C_GT}, {"ge", C_GE}};

const OpName kReduceOpNames[R_NUM_OPS] = {{"sum", R_SUM},       {"prod", R_PROD},     {"amax", R_AMAX},
                                          {"amin", R_AMIN},     {"all", R_ALL},       {"any", R_ANY},
                                          {"argmax", R_ARGMAX}, {"argmin", R_ARGMIN}, {"mean", R_MEAN}};

const OpName kCumulativeOpNames[CUM_NUM_OPS] = {{"cumsum", CUM_SUM}, {"cumprod", CUM_PROD}};

int g_num_threads = 1;

namespace {
std::string type_name(PyObject* o) { return Py_TYPE(o)->tp_name; }
}  // namespace

void check_nargs(Py_ssize_t n, Py_ssize_t expected, const char* fname) {
    if (n != expected)
        raise(PyExc_TypeError, std::string(fname) + "() takes " + std::to_string(expected) + " arguments (" +
                                   std::to_string(n) + " given)");
}

int64_t arg_int(PyObject* o, const char* fname, const char* what) {
    if (PyLong_Check(o)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow) value_error(std::string(fname) + ": " + what + " does not fit in 64 bits");
        return v;
    }
    if (PyIndex_Check(o) && !PyFloat_Check(o)) {
        PyObject* i = PyNumber_Index(o);
        if (!i) throw PythonErrorSet{};
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(i, &overflow);
        Py_DECREF(i);
        if (overflow) value_error(std::string(fname) + ": " + what + " does not fit in 64 bits");
        return v;
    }
    raise(PyExc_TypeError, std::string(fname) + ": " + what + " must be an int, got " + type_name(o));
}

double arg_double(PyObject* o, const char* fname, const char* what) {
    if (PyFloat_Check(o)) return PyFloat_AS_DOUBLE(o);
    double d = PyFloat_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        raise(PyExc_TypeError, std::string(fname) + ": " + what + " must be a number, got " + type_name(o));
    }
    return d;
}

int arg_dtype(PyObject* o, const char* fname) {
    int64_t d = arg_int(o, fname, "dtype");
    if (d < 0 || d >= kNumDTypes) value_error(std::string(fname) + ": invalid dtype code " + std::to_string(d));
    return static_cast<int>(d);
}

int parse_shape(PyObject* o, int64_t* shape, const char* fname, const char* what) {
    if (!PyTuple_Check(o) && !PyList_Check(o))
        raise(PyExc_TypeError, std::string(fname) + ": " + what + " must be a tuple of ints, got " + type_name(o));
    Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    if (n > MAX_DIMS)
        value_error(std::string(fname) + ": " + what + " has " + std::to_string(n) + " dims; at most " +
                    std::to_string(MAX_DIMS) + " are supported");
    PyObject** items = PySequence_Fast_ITEMS(o);
    for (Py_ssize_t i = 0; i < n; ++i) {
        int64_t v = arg_int(items[i], fname, what);
        if (v < 0) value_error(std::string(fname) + ": " + what + " has a negative size " + std::to_string(v));
        shape[i] = v;
    }
    return static_cast<int>(n);
}

void scalar_to_dtype(PyObject* o, int dtype, void* dst, const char* fname) {
    if (PyFloat_Check(o)) {
        double d = PyFloat_AS_DOUBLE(o);
        TP_DISPATCH(dtype, T, *static_cast<T*>(dst) = convert<T>(d));
        return;
    }
    if (PyLong_Check(o) || (PyIndex_Check(o))) {
        PyObject* i = PyLong_Check(o) ? (Py_INCREF(o), o) : PyNumber_Index(o);
        if (!i) throw PythonErrorSet{};
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(i, &overflow);
        if (overflow > 0 && dtype == kUInt64) {
            // Above int64: uint64 takes Python ints up to 2^64 - 1.
            unsigned long long u = PyLong_AsUnsignedLongLong(i);
            Py_DECREF(i);
            if (u == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
                PyErr_Clear();
                value_error(std::string(fname) + ": integer scalar is out of range for uint64");
            }
            *static_cast<uint64_t*>(dst) = static_cast<uint64_t>(u);
            return;
        }
        if (overflow) {
            if (is_float_dtype(dtype)) {
                double d = PyLong_AsDouble(i);
                Py_DECREF(i);
                if (d == -1.0 && PyErr_Occurred()) throw PythonErrorSet{};
                TP_DISPATCH(dtype, T, *static_cast<T*>(dst) = convert<T>(d));
                return;
            }
            Py_DECREF(i);
            value_error(std::string(fname) + ": integer scalar is out of range for " + kDTypeName[dtype]);
        }
        Py_DECREF(i);
        int64_t iv = v;
        TP_DISPATCH(dtype, T, *static_cast<T*>(dst) = convert<T>(iv));
        return;
    }
    double d = PyFloat_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        raise(PyExc_TypeError, std::string(fname) + ": expected a number, got " + type_name(o));
    }
    TP_DISPATCH(dtype, T, *static_cast<T*>(dst) = convert<T>(d));
}

int float_dtype(PyObject* o, const char* fname) {
    const int dtype = arg_dtype(o, fname);
    if (dtype != kFloat32 && dtype != kFloat64)
        value_error(std::string(fname) + ": only float32 and float64 are supported, got " + kDTypeName[dtype]);
    return dtype;
}

void fill_operand(PyObject* st, PyObject* offset_obj, PyObject* strides, int dtype, int ndim, const int64_t* shape,
                  Operand& op, const char* fname, const char* what, bool writable) {
    if (Py_TYPE(st) != StorageType && !PyObject_TypeCheck(st, StorageType))
        raise(PyExc_TypeError, std::string(fname) + ": " + what + " storage must be a Storage, got " + type_name(st));
    auto* s = reinterpret_cast<StorageObject*>(st);
    int64_t offset = arg_int(offset_obj, fname, "offset");
    if (!PyTuple_Check(strides) && !PyList_Check(strides))
        raise(PyExc_TypeError, std::string(fname) + ": " + what + " strides must be a tuple of ints");
    Py_ssize_t ns = PySequence_Fast_GET_SIZE(strides);
    if (ns != ndim)
        value_error(std::string(fname) + ": " + what + " has " + std::to_string(ns) + " strides for a " +
                    std::to_string(ndim) + "-d shape");
    if (writable && s->readonly) value_error(std::string(fname) + ": " + what + " is read-only");
    if (offset < 0) value_error(std::string(fname) + ": " + what + " has a negative offset");
    PyObject** items = PySequence_Fast_ITEMS(strides);
    bool empty = false;
    __int128 last = offset;
    for (int d = 0; d < ndim; ++d) {
        int64_t sd = arg_int(items[d], fname, "stride");
        if (sd < 0) value_error(std::string(fname) + ": " + what + " has a negative stride");
        op.strides[d] = sd;
        if (shape[d] == 0) empty = true;
        last += static_cast<__int128>(shape[d] > 0 ? shape[d] - 1 : 0) * sd;
    }
    const int isz = kItemSize[dtype];
    if (!empty && (last + 1) * isz > s->nbytes)
        value_error(std::string(fname) + ": " + what + " reaches element " + std::to_string((long long)last) +
                    " but its storage holds " + std::to_string(s->nbytes / isz) + " " + kDTypeName[dtype] +
                    " elements");
    op.storage = s;
    op.is_scalar = false;
    op.data = empty ? s->data : s->data + offset * isz;
}

void parse_operand(PyObject* o, int dtype, int ndim, const int64_t* shape, Operand& op, const char* fname,
                   const char* what, bool allow_scalar, bool writable) {
    if (PyTuple_Check(o) && PyTuple_GET_SIZE(o) == 3) {
        fill_operand(PyTuple_GET_ITEM(o, 0), PyTuple_GET_ITEM(o, 1), PyTuple_GET_ITEM(o, 2), dtype, ndim, shape, op,
                     fname, what, writable);
        return;
    }
    if (allow_scalar && !PyTuple_Check(o)) {
        scalar_to_dtype(o, dtype, op.scalar_buf, fname);
        op.is_scalar = true;
        op.storage = nullptr;
        op.data = op.scalar_buf;
        for (int d = 0; d < ndim; ++d) op.strides[d] = 0;
        return;
    }
    raise(PyExc_TypeError, std::string(fname) + ": " + what + " must be a (storage, offset, strides) tuple" +
                               (allow_scalar ? " or a number" : "") + ", got " + type_name(o));
}

}  // namespace tp
