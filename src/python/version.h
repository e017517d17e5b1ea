/*
 * python/version.h -- the version counter type (version.c), for engine.c, which creates one
 * for every tensor it wraps and bumps .grad's when it adds into it.
 */
#ifndef CEXTEND_PYTHON_VERSION_H
#define CEXTEND_PYTHON_VERSION_H

#include <Python.h>

extern PyTypeObject cx_version_counter_type;

/* A new counter at 0 (a new reference), or NULL with an exception set. */
PyObject *cx_version_counter_new(void);

/* counter's value + 1: 0, or -1 with TypeError when it is not a VersionCounter. */
int cx_version_bump(PyObject *counter);

#endif
