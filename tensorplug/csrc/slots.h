// Reading and writing the fields of Python classes with __slots__ from C (hotpath.cpp,
// autograd_core.cpp).
//
// A slot is a member descriptor with a fixed offset in the instance: C finds the offset once and
// then reads the field as a pointer, without an attribute lookup. Only plain, writable object
// slots qualify (T_OBJECT_EX); anything else (a property, a class attribute) is refused when the
// offsets are found, so a renamed field fails loudly at import instead of corrupting memory.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <structmember.h>  // after Python.h, which it needs

namespace tp_slots {

// The offset of slot `name` of `type`, or -1 with TypeError set.
inline Py_ssize_t slot_offset(PyTypeObject* type, const char* name) {
    PyObject* descr = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), name);
    if (!descr) return -1;
    Py_ssize_t offset = -1;
    if (Py_TYPE(descr) == &PyMemberDescr_Type) {
        const PyMemberDef* member = reinterpret_cast<PyMemberDescrObject*>(descr)->d_member;
        if (member->type == T_OBJECT_EX && !(member->flags & READONLY)) offset = member->offset;
    }
    Py_DECREF(descr);
    if (offset < 0) PyErr_Format(PyExc_TypeError, "tensorplug: %s.%s is not a plain slot", type->tp_name, name);
    return offset;
}

// Offsets of `count` slots named in `names`; false with TypeError set when one is not a slot.
inline bool slot_offsets(PyTypeObject* type, const char* const* names, int count, Py_ssize_t* offsets) {
    for (int i = 0; i < count; ++i)
        if ((offsets[i] = slot_offset(type, names[i])) < 0) return false;
    return true;
}

// The slot's value (borrowed; null when the slot was never set).
inline PyObject* get(PyObject* o, Py_ssize_t offset) {
    return *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(o) + offset);
}

// Stores a new reference into a slot of a freshly allocated object (the slot is still empty).
inline void put(PyObject* o, Py_ssize_t offset, PyObject* value) {
    Py_INCREF(value);
    *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(o) + offset) = value;
}

// Stores a reference it takes over (steals) into an empty slot.
inline void put_new(PyObject* o, Py_ssize_t offset, PyObject* value) {
    *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(o) + offset) = value;
}

// Replaces a slot's value (new reference to `value`), releasing the old one.
inline void replace(PyObject* o, Py_ssize_t offset, PyObject* value) {
    PyObject** field = reinterpret_cast<PyObject**>(reinterpret_cast<char*>(o) + offset);
    PyObject* old = *field;
    Py_INCREF(value);
    *field = value;
    Py_XDECREF(old);
}

}  // namespace tp_slots
