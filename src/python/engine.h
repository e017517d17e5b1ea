/*
 * python/engine.h -- what the files of cextend._engine share: engine.c (the backward loop, op
 * recording, wrap), version.c (tensors' version counters) and quick_linear.c (the Linear
 * kernels' common case).
 */
#ifndef CEXTEND_PYTHON_ENGINE_H
#define CEXTEND_PYTHON_ENGINE_H

#include <Python.h>

/* -- version.c ------------------------------------------------------------------------------ */

extern PyTypeObject cx_version_counter_type;

/* A new counter at 0 (a new reference), or NULL with an exception set. */
PyObject *cx_version_counter_new(void);

/* counter's value + 1: 0, or -1 with an exception set (TypeError when it is not a
 * VersionCounter, OverflowError at 2**63 - 1). */
int cx_version_bump(PyObject *counter);

/* -- engine.c ------------------------------------------------------------------------------- */

/* Whether cextend._capture (capture_module) is recording a step: 1, 0, or -1 with an
 * exception set. */
int cx_capturing(PyObject *capture_module);

/* -- quick_linear.c ------------------------------------------------------------------------- */

PyObject *cx_configure_linear(PyObject *self, PyObject *args);
PyObject *cx_quick_linear_forward(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *cx_quick_linear_backward(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
extern const char cx_configure_linear_doc[], cx_quick_linear_forward_doc[], cx_quick_linear_backward_doc[];

#endif
