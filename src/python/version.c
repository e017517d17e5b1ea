/*
 * python/version.c -- a tensor's version counter (cextend._engine.VersionCounter).
 *
 * torch keeps one counter per storage (VariableVersion: a shared C++ integer), bumped by every
 * in-place change and compared by saved tensors and views.  Ours was a one-item list holding a
 * Python int: past 256 each bump made a new int object, so an optimizer step left a fresh block
 * behind for every parameter it updated (a captured training step's only allocations but three).
 * Here the count is a C integer: bump() allocates nothing and is one step under the GIL.
 *
 * It still reads and writes like the list it replaces (counter[0], counter[0] = n), so code
 * written against the list keeps working.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>

#include "engine.h"

typedef struct {
    PyObject_HEAD
    long long value;
} VersionCounter;

static PyObject *version_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    long long start = 0;
    static char *keywords[] = {"value", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|L:VersionCounter", keywords, &start))
        return NULL;
    if (start < 0)
        return PyErr_Format(PyExc_ValueError, "VersionCounter: value must be >= 0, got %lld", start);
    VersionCounter *counter = (VersionCounter *)type->tp_alloc(type, 0);
    if (counter)
        counter->value = start;
    return (PyObject *)counter;
}

static Py_ssize_t version_length(PyObject *self)
{
    (void)self;
    return 1;
}

/* Only index 0 (or -1, which the sequence protocol turns into 0) exists, as in [n]. */
static int version_index_ok(Py_ssize_t index)
{
    if (index == 0)
        return 1;
    PyErr_SetString(PyExc_IndexError, "VersionCounter index out of range (it holds one value, at 0)");
    return 0;
}

static PyObject *version_item(PyObject *self, Py_ssize_t index)
{
    if (!version_index_ok(index))
        return NULL;
    return PyLong_FromLongLong(((VersionCounter *)self)->value);
}

static int version_set_item(PyObject *self, Py_ssize_t index, PyObject *value)
{
    if (!value) {
        PyErr_SetString(PyExc_TypeError, "a VersionCounter's value cannot be deleted");
        return -1;
    }
    if (!version_index_ok(index))
        return -1;
    if (!PyLong_Check(value)) {
        PyErr_Format(PyExc_TypeError, "a version must be an int, got %.100s", Py_TYPE(value)->tp_name);
        return -1;
    }
    const long long next = PyLong_AsLongLong(value);
    if (next == -1 && PyErr_Occurred())
        return -1;
    if (next < 0) {
        PyErr_Format(PyExc_ValueError, "a version must be >= 0, got %lld", next);
        return -1;
    }
    ((VersionCounter *)self)->value = next;
    return 0;
}

/* value + 1, refused at the top of the range rather than wrapping to a negative count. */
static int version_increment(VersionCounter *counter)
{
    if (counter->value == LLONG_MAX) {
        PyErr_SetString(PyExc_OverflowError, "a VersionCounter cannot count past 2**63 - 1");
        return -1;
    }
    counter->value += 1;
    return 0;
}

int cx_version_bump(PyObject *counter)
{
    if (!PyObject_TypeCheck(counter, &cx_version_counter_type)) {
        PyErr_Format(PyExc_TypeError, "a tensor's _version_counter must be a VersionCounter, got %.100s",
                     Py_TYPE(counter)->tp_name);
        return -1;
    }
    return version_increment((VersionCounter *)counter);
}

PyObject *cx_version_counter_new(void)
{
    VersionCounter *counter = PyObject_New(VersionCounter, &cx_version_counter_type);
    if (counter)
        counter->value = 0;
    return (PyObject *)counter;
}

static PyObject *version_bump(PyObject *self, PyObject *unused)
{
    (void)unused;
    if (version_increment((VersionCounter *)self) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* copy and pickle rebuild it from its value, as they did the list. */
static PyObject *version_reduce(PyObject *self, PyObject *unused)
{
    (void)unused;
    return Py_BuildValue("(O(L))", (PyObject *)Py_TYPE(self), ((VersionCounter *)self)->value);
}

static PyObject *version_repr(PyObject *self)
{
    return PyUnicode_FromFormat("VersionCounter(%lld)", ((VersionCounter *)self)->value);
}

static PySequenceMethods version_sequence = {
    .sq_length = version_length,
    .sq_item = version_item,
    .sq_ass_item = version_set_item,
};

static PyMethodDef version_methods[] = {
    {"bump", version_bump, METH_NOARGS, "bump()\n\nAdd one: an in-place change of the tensors sharing this counter."},
    {"__reduce__", version_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(version_doc,
"VersionCounter(value=0)\n\n"
"The count of in-place changes of one storage, shared by a tensor and its views (torch's\n"
"VariableVersion).  counter[0] reads it, bump() adds one.");

PyTypeObject cx_version_counter_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cextend._engine.VersionCounter",
    .tp_basicsize = sizeof(VersionCounter),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = version_doc,
    .tp_new = version_new,
    .tp_repr = version_repr,
    .tp_as_sequence = &version_sequence,
    .tp_methods = version_methods,
};
