/*
 * python/quick_linear.c -- ops.linear_forward and linear_backward's common case in C
 * (cextend._engine.linear_forward, linear_backward).
 *
 * A (1, 8) layer's product is 64 multiply-adds, about 50 ns in the kernel; through cffi its call
 * cost about 2 us, most of it four ffi.from_buffer (a cdata object around each array's buffer),
 * the output's np.empty and the conversion of seven arguments.  Here the same entry points of
 * cextend.h, their addresses handed over once by _backend (the one module that talks to cffi),
 * are called on the arrays' buffers directly, with the GIL released as cffi releases it.
 *
 * Plain operands only: numpy arrays (not subclasses), C-contiguous, of numpy's own float32 or
 * float64 dtype object, all of one dtype, x (n, k), w (m, k), b (m,) or None, outside a
 * captured step.  Anything else -- and a kernel's refusal (a misaligned view) -- returns None,
 * and _backend's Python path runs as before: it copies, raises or records, so this file holds
 * no semantics of its own.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../cextend.h"
#include "engine.h"

typedef __typeof__(cextend_linear_forward_contiguous_f32) forward_f32_fn;
typedef __typeof__(cextend_linear_forward_contiguous_f64) forward_f64_fn;
typedef __typeof__(cextend_linear_backward_f32) backward_f32_fn;
typedef __typeof__(cextend_linear_backward_f64) backward_f64_fn;

static PyTypeObject *ndarray_type;      /* numpy.ndarray */
static PyObject *empty;                 /* numpy.empty */
static PyObject *dtype_f32, *dtype_f64; /* np.dtype(np.float32), np.dtype(np.float64) */
static PyObject *capture_module;        /* cextend._capture */
static PyObject *s_dtype;               /* "dtype" */
static forward_f32_fn *forward_f32;
static forward_f64_fn *forward_f64;
static backward_f32_fn *backward_f32;
static backward_f64_fn *backward_f64;

const char cx_configure_linear_doc[] =
    "configure_linear(ndarray, empty, float32, float64, capture_module, forward_f32, forward_f64,\n"
    "                 backward_f32, backward_f64)\n\n"
    "numpy's array type, np.empty and the two dtypes; the capture module; the addresses (ints) of\n"
    "cextend.h's cextend_linear_forward_contiguous_* and cextend_linear_backward_* (_backend calls\n"
    "this once).";

PyObject *cx_configure_linear(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *array_type, *empty_fn, *f32, *f64, *capture, *addresses[4];
    if (!PyArg_ParseTuple(args, "O!OOOOO!O!O!O!:configure_linear", &PyType_Type, &array_type, &empty_fn, &f32,
                          &f64, &capture, &PyLong_Type, &addresses[0], &PyLong_Type, &addresses[1], &PyLong_Type,
                          &addresses[2], &PyLong_Type, &addresses[3]))
        return NULL;
    if (!s_dtype && !(s_dtype = PyUnicode_InternFromString("dtype")))
        return NULL;
    void *pointers[4];
    for (int i = 0; i < 4; ++i) {
        pointers[i] = PyLong_AsVoidPtr(addresses[i]);
        if (!pointers[i])
            return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_ValueError, "configure_linear: a NULL kernel address");
    }
    PyObject *keep[] = {array_type, empty_fn, f32, f64, capture};
    PyObject **slots[] = {(PyObject **)&ndarray_type, &empty, &dtype_f32, &dtype_f64, &capture_module};
    for (int i = 0; i < 5; ++i) {
        Py_INCREF(keep[i]);
        Py_XSETREF(*slots[i], keep[i]);
    }
    forward_f32 = (forward_f32_fn *)pointers[0];
    forward_f64 = (forward_f64_fn *)pointers[1];
    backward_f32 = (backward_f32_fn *)pointers[2];
    backward_f64 = (backward_f64_fn *)pointers[3];
    Py_RETURN_NONE;
}

/* An operand's buffer when it is a plain array of `ndim` dimensions, C-contiguous, native float32
 * or float64: 1 (view held: release it; *kind is 'f' or 'd'), 0 (not plain: nothing held, no
 * error), -1 (error).  kind NULL: an array made here, of a known dtype.  The dtype is compared by
 * identity, as the cffi path's quick check does (an equal but distinct dtype object, a
 * non-native byte order say, is declined); asking the buffer for its format instead would have
 * numpy build a format string for every array, and keep it as long as the array lives. */
static int plain_array(PyObject *obj, int ndim, int writable, char *kind, Py_buffer *view)
{
    if (Py_TYPE(obj) != ndarray_type)
        return 0;
    if (kind) {
        PyObject *dtype = PyObject_GetAttr(obj, s_dtype);
        if (!dtype)
            return -1;
        *kind = dtype == dtype_f32 ? 'f' : dtype == dtype_f64 ? 'd' : 0;
        Py_DECREF(dtype);
        if (!*kind)
            return 0;
    }
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0)) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_BufferError) && !PyErr_ExceptionMatches(PyExc_ValueError))
            return -1;
        PyErr_Clear();          /* strided, or read-only where writing: the Python path's case */
        return 0;
    }
    if (view->ndim != ndim) {
        PyBuffer_Release(view);
        return 0;
    }
    return 1;
}

/* np.empty(shape, dtype) for a kind of float ('f': float32, 'd': float64). */
static PyObject *new_array(int ndim, Py_ssize_t rows, Py_ssize_t cols, char kind)
{
    PyObject *shape = ndim == 1 ? Py_BuildValue("(n)", rows) : Py_BuildValue("(nn)", rows, cols);
    if (!shape)
        return NULL;
    PyObject *call[2] = {shape, kind == 'f' ? dtype_f32 : dtype_f64};
    PyObject *array = PyObject_Vectorcall(empty, call, 2, NULL);
    Py_DECREF(shape);
    return array;
}

/* Buffers to release on the way out. */
typedef struct {
    Py_buffer views[7];
    int held;
} Held;

static void release_all(Held *held)
{
    while (held->held > 0)
        PyBuffer_Release(&held->views[--held->held]);
}

/* plain_array into the next free view; 1, 0 or -1 as plain_array. */
static int hold(Held *held, PyObject *obj, int ndim, int writable, char *kind, Py_buffer **view)
{
    Py_buffer *slot = &held->views[held->held];
    const int st = plain_array(obj, ndim, writable, kind, slot);
    if (st == 1) {
        held->held += 1;
        *view = slot;
    }
    return st;
}

static int configured(void)
{
    if (forward_f32)
        return 1;
    PyErr_SetString(PyExc_RuntimeError, "configure_linear() has not run");
    return 0;
}

const char cx_quick_linear_forward_doc[] =
    "linear_forward(x, w, b)\n\n"
    "x . w^T + b as a new array for plain operands (see quick_linear.c), else None.";

PyObject *cx_quick_linear_forward(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 3)
        return PyErr_Format(PyExc_TypeError, "linear_forward() takes 3 arguments (x, w, b), got %zd", nargs);
    if (!configured())
        return NULL;
    PyObject *x = args[0], *w = args[1], *b = args[2], *y = NULL, *answer = NULL;
    Held held = {.held = 0};
    Py_buffer *xv, *wv, *bv = NULL, *yv;
    int st = cx_capturing(capture_module);
    if (st != 0)
        goto done;              /* recording a step (the Python path notes the call), or an error */
    char kind = 0, w_kind = 0, b_kind = 0;
    if ((st = hold(&held, x, 2, 0, &kind, &xv)) != 1 || (st = hold(&held, w, 2, 0, &w_kind, &wv)) != 1)
        goto done;
    const Py_ssize_t n = xv->shape[0], k = xv->shape[1], m = wv->shape[0];
    if (w_kind != kind || wv->shape[1] != k) {
        st = 0;
        goto done;
    }
    if (b != Py_None) {
        if ((st = hold(&held, b, 1, 0, &b_kind, &bv)) != 1)
            goto done;
        if (b_kind != kind || bv->shape[0] != m) {
            st = 0;
            goto done;
        }
    }
    if (!(y = new_array(2, n, m, kind))) {
        st = -1;
        goto done;
    }
    if ((st = hold(&held, y, 2, 1, NULL, &yv)) != 1)
        goto done;
    int status;
    Py_BEGIN_ALLOW_THREADS
    if (kind == 'f')
        status = forward_f32(n, k, m, xv->buf, wv->buf, bv ? bv->buf : NULL, yv->buf);
    else
        status = forward_f64(n, k, m, xv->buf, wv->buf, bv ? bv->buf : NULL, yv->buf);
    Py_END_ALLOW_THREADS
    if (status == CEXTEND_OK) {
        answer = y;
        y = NULL;
    }
    /* else a refusal (a misaligned view, say): the Python path explains or copies */
done:
    release_all(&held);
    Py_XDECREF(y);
    if (st < 0)
        return NULL;
    if (!answer)
        Py_RETURN_NONE;
    return answer;
}

const char cx_quick_linear_backward_doc[] =
    "linear_backward(dy, x, w, want_dx, want_dw, want_db)\n\n"
    "(dx, dw, db) as new arrays (None where not wanted) for plain dy (n, m), x (n, k), w (m, k)\n"
    "(see quick_linear.c), else None.";

PyObject *cx_quick_linear_backward(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 6)
        return PyErr_Format(PyExc_TypeError,
                            "linear_backward() takes 6 arguments (dy, x, w, want_dx, want_dw, want_db), got %zd",
                            nargs);
    if (!configured())
        return NULL;
    int want[3];
    for (int i = 0; i < 3; ++i)
        if ((want[i] = PyObject_IsTrue(args[3 + i])) < 0)
            return NULL;
    PyObject *out[3] = {NULL, NULL, NULL}, *answer = NULL;
    Held held = {.held = 0};
    Py_buffer *dyv, *xv, *wv, *outv[3] = {NULL, NULL, NULL};
    int st = cx_capturing(capture_module);
    if (st != 0)
        goto done;
    char kind = 0, dy_kind = 0, w_kind = 0;
    if ((st = hold(&held, args[0], 2, 0, &dy_kind, &dyv)) != 1 ||
        (st = hold(&held, args[1], 2, 0, &kind, &xv)) != 1 || (st = hold(&held, args[2], 2, 0, &w_kind, &wv)) != 1)
        goto done;
    const Py_ssize_t n = xv->shape[0], k = xv->shape[1], m = wv->shape[0];
    if (dy_kind != kind || w_kind != kind || wv->shape[1] != k || dyv->shape[0] != n ||
        dyv->shape[1] != m) {
        st = 0;
        goto done;
    }
    const Py_ssize_t rows[3] = {n, m, m}, cols[3] = {k, k, 0};
    for (int i = 0; i < 3; ++i) {
        if (!want[i])
            continue;
        if (!(out[i] = new_array(i == 2 ? 1 : 2, rows[i], cols[i], kind))) {
            st = -1;
            goto done;
        }
        if ((st = hold(&held, out[i], i == 2 ? 1 : 2, 1, NULL, &outv[i])) != 1)
            goto done;
    }
    void *dx = outv[0] ? outv[0]->buf : NULL, *dw = outv[1] ? outv[1]->buf : NULL,
         *db = outv[2] ? outv[2]->buf : NULL;
    const int64_t ldm = m ? m : 1, ldk = k ? k : 1;
    int status;
    Py_BEGIN_ALLOW_THREADS
    if (kind == 'f')
        status = backward_f32(n, k, m, dyv->buf, ldm, 0, xv->buf, ldk, 0, wv->buf, ldk, 0, dx, ldk, dw, ldk, db);
    else
        status = backward_f64(n, k, m, dyv->buf, ldm, 0, xv->buf, ldk, 0, wv->buf, ldk, 0, dx, ldk, dw, ldk, db);
    Py_END_ALLOW_THREADS
    if (status == CEXTEND_OK)
        answer = PyTuple_Pack(3, out[0] ? out[0] : Py_None, out[1] ? out[1] : Py_None,
                              out[2] ? out[2] : Py_None);
    if (status == CEXTEND_OK && !answer)
        st = -1;
done:
    release_all(&held);
    for (int i = 0; i < 3; ++i)
        Py_XDECREF(out[i]);
    if (st < 0) {
        Py_XDECREF(answer);
        return NULL;
    }
    if (!answer)
        Py_RETURN_NONE;
    return answer;
}
