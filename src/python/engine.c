/*
 * python/engine.c -- the backward engine's inner loop (cextend._engine).
 *
 * A training step's backward() runs every reachable node once: count each
 * node's incoming edges, then run the ready nodes, most recent first, from
 * a heap.  In Python that bookkeeping cost about as much per node as a
 * small node's own arithmetic; here it is a few attribute reads.  The loop
 * is cextend/autograd/engine.py's, statement for statement: the same
 * ready-queue keys, the same order of calls into Python (node.apply,
 * node._release, the hook and gradient-fitting helpers), the same checks.
 * Anything unusual -- a hook, anomaly mode, a gradient that must be
 * summed to a broadcast shape or cast -- is handed to engine.py's helpers,
 * so this file holds the common path only and no semantics of its own.
 *
 * The forward side's counterpart, record(), is autograd/record.py's
 * record() for the common case (one output, inputs that are plain tensors,
 * numbers or None): a node per op, its edges and input metadata.  Any
 * other input (a view; an object neither a tensor nor a number) is handed
 * to record.py's _edge_and_meta.
 *
 * binary() is arithmetic.Binary.__call__'s common case (a float Tensor with a number or a
 * Tensor of its dtype): the Python fast path's calls in its order, so that a chain of small
 * elementwise ops pays for numpy's ufunc and the node, not for the interpreter between them.
 * Anything else it declines, and the Python definition runs.
 *
 * It is a CPython extension, not part of the cffi module: the loop holds
 * Python objects (nodes, gradients), which cffi's C side cannot.  It keeps
 * no state between passes; the helpers it calls are set once, at import.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>    /* T_OBJECT_EX: Tensor's slots, which wrap() sets */

#include "engine.h"

/* engine.py's helpers and types, set by configure_backward(). */
static PyObject *accumulate_grad_type;  /* AccumulateGrad */
static PyObject *accumulate_grad_init;  /* its __init__, as graph.py defines it */
static PyObject *s_init;                /* "__init__" */
static PyObject *tensor_type;           /* Tensor */
static PyObject *hooked_inputs;         /* (node, grads) -> grads, after tensor hooks and retain_grad */
static PyObject *hooked_run;            /* (node, grads) -> results, with node hooks or anomaly checks */
static PyObject *store_checked;         /* engine._store: fit the gradient, then store it */
static PyObject *add_gradients;         /* engine._add(a, b, create_graph) */
static PyObject *anomaly_state;         /* anomaly_mode._state: [enabled, check_nan] */

/* record.py's helpers, set by configure_record(). */
static PyObject *no_edge;               /* record.NO_EDGE: (None, 0) */
static PyObject *edge_and_meta;         /* record._edge_and_meta(x) -> (edge, meta) */
static PyObject *node_numbers;          /* graph._sequence: itertools.count() */
static PyObject *builtin_node_type;     /* record.BuiltinNode */
static PyObject *builtin_node_apply;    /* BuiltinNode.apply, as the class holds it */
static PyObject *apply_general;         /* BuiltinNode._apply_general(node, grads): the other cases */
static PyObject *saved_tensor_type;     /* graph.SavedTensor */
static PyObject *freed_marker;          /* record._FREED: a node's _saved once released */
static PyObject *freed_message;         /* graph.FREED_MESSAGE */

static PyObject *s_base, *s_requires_grad, *s_grad_fn, *s_output_nr, *s_accumulator, *s_saved, *s_zero,
                *s_empty, *s_multi_output, *s_kind, *s_unpack, *s_backward;
static PyObject *s_next_functions, *s_num_outputs, *s_seq, *s_runs_first, *s_tensor_hooks, *s_retained,
                *s_variable, *s_hooks, *s_pre_hooks, *s_post_hooks, *s_apply, *s_release, *s_input_meta,
                *s_data, *s_shape, *s_dtype;

/* The ready queue: a binary min-heap on each node's key (-sequence number,
 * or a count below every -seq for nodes that run first).  Keys are unique,
 * so the order is heapq's on (key, node) tuples. */
typedef struct {
    long long key;
    PyObject *node;     /* owned */
} Ready;

typedef struct {
    Ready *items;
    Py_ssize_t size, capacity;
} Heap;

static int heap_push(Heap *heap, long long key, PyObject *node)
{
    if (heap->size == heap->capacity) {
        Py_ssize_t capacity = heap->capacity ? 2 * heap->capacity : 16;
        Ready *items = PyMem_Realloc(heap->items, (size_t)capacity * sizeof(Ready));
        if (!items) {
            PyErr_NoMemory();
            return -1;
        }
        heap->items = items;
        heap->capacity = capacity;
    }
    Py_ssize_t i = heap->size++;
    while (i > 0) {
        Py_ssize_t parent = (i - 1) / 2;
        if (heap->items[parent].key <= key)
            break;
        heap->items[i] = heap->items[parent];
        i = parent;
    }
    Py_INCREF(node);
    heap->items[i].key = key;
    heap->items[i].node = node;
    return 0;
}

/* The node with the smallest key; the caller owns the reference. */
static PyObject *heap_pop(Heap *heap)
{
    PyObject *top = heap->items[0].node;
    Ready last = heap->items[--heap->size];
    Py_ssize_t i = 0, n = heap->size;
    for (;;) {
        Py_ssize_t child = 2 * i + 1;
        if (child >= n)
            break;
        if (child + 1 < n && heap->items[child + 1].key < heap->items[child].key)
            child++;
        if (last.key <= heap->items[child].key)
            break;
        heap->items[i] = heap->items[child];
        i = child;
    }
    if (n > 0)
        heap->items[i] = last;
    return top;
}

static void heap_clear(Heap *heap)
{
    for (Py_ssize_t i = 0; i < heap->size; ++i)
        Py_DECREF(heap->items[i].node);
    PyMem_Free(heap->items);
}

/* getattr(obj, name) as a truth value: 1, 0, or -1 with an exception. */
static int attr_true(PyObject *obj, PyObject *name)
{
    PyObject *value = PyObject_GetAttr(obj, name);
    if (!value)
        return -1;
    int truth = PyObject_IsTrue(value);
    Py_DECREF(value);
    return truth;
}

/* (first() if node._runs_first else -node._seq), as engine.py keys a ready node. */
static int ready_key(PyObject *node, long long *first, long long *key)
{
    int runs_first = attr_true(node, s_runs_first);
    if (runs_first < 0)
        return -1;
    if (runs_first) {
        *key = (*first)++;
        return 0;
    }
    PyObject *seq = PyObject_GetAttr(node, s_seq);
    if (!seq)
        return -1;
    long long value = PyLong_AsLongLong(seq);
    Py_DECREF(seq);
    if (value == -1 && PyErr_Occurred())
        return -1;
    *key = -value;
    return 0;
}

/* One edge (child, nr), unpacked as `for child, nr in edges` would; borrowed
 * references into a tuple or list edge, new ones otherwise (*owned set). */
static int unpack_edge(PyObject *edge, PyObject **child, PyObject **nr)
{
    PyObject *items = PySequence_Fast(edge, "cannot unpack non-iterable edge");
    if (!items)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(items);
    if (n != 2) {
        Py_DECREF(items);
        PyErr_Format(PyExc_ValueError, n < 2 ? "not enough values to unpack (expected 2, got %zd)"
                                             : "too many values to unpack (expected 2)", n);
        return -1;
    }
    *child = PySequence_Fast_GET_ITEM(items, 0);
    *nr = PySequence_Fast_GET_ITEM(items, 1);
    Py_INCREF(*child);
    Py_INCREF(*nr);
    Py_DECREF(items);
    return 0;
}

/* node.next_functions as a fast sequence (new reference). */
static PyObject *edges_of(PyObject *node)
{
    PyObject *edges = PyObject_GetAttr(node, s_next_functions);
    if (!edges)
        return NULL;
    PyObject *fast = PySequence_Fast(edges, "next_functions must be a sequence of edges");
    Py_DECREF(edges);
    return fast;
}

/* engine._graph's counts: how many edges enter each node reachable from the roots. */
static PyObject *count_dependencies(PyObject *roots)
{
    PyObject *dependencies = PyDict_New(), *seen = PySet_New(roots), *stack = PySequence_List(roots);
    if (!dependencies || !seen || !stack)
        goto fail;
    while (PyList_GET_SIZE(stack)) {
        Py_ssize_t top = PyList_GET_SIZE(stack) - 1;
        PyObject *node = PyList_GET_ITEM(stack, top);
        Py_INCREF(node);
        if (PyList_SetSlice(stack, top, top + 1, NULL) < 0) {
            Py_DECREF(node);
            goto fail;
        }
        PyObject *edges = edges_of(node);
        Py_DECREF(node);
        if (!edges)
            goto fail;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(edges); ++i) {
            PyObject *child, *nr;
            if (unpack_edge(PySequence_Fast_GET_ITEM(edges, i), &child, &nr) < 0) {
                Py_DECREF(edges);
                goto fail;
            }
            Py_DECREF(nr);
            int ok = 0;
            if (child != Py_None) {
                PyObject *count = PyDict_GetItemWithError(dependencies, child);
                long previous = count ? PyLong_AsLong(count) : 0;
                PyObject *next = PyErr_Occurred() ? NULL : PyLong_FromLong(previous + 1);
                ok = next ? PyDict_SetItem(dependencies, child, next) : -1;
                Py_XDECREF(next);
                if (ok == 0) {
                    int known = PySet_Contains(seen, child);
                    if (known < 0)
                        ok = -1;
                    else if (!known)
                        ok = (PySet_Add(seen, child) < 0 || PyList_Append(stack, child) < 0) ? -1 : 0;
                }
            }
            Py_DECREF(child);
            if (ok < 0) {
                Py_DECREF(edges);
                goto fail;
            }
        }
        Py_DECREF(edges);
    }
    Py_DECREF(seen);
    Py_DECREF(stack);
    return dependencies;
fail:
    Py_XDECREF(dependencies);
    Py_XDECREF(seen);
    Py_XDECREF(stack);
    return NULL;
}

/* [None] * n */
static PyObject *nones(PyObject *node)
{
    PyObject *count = PyObject_GetAttr(node, s_num_outputs);
    if (!count)
        return NULL;
    Py_ssize_t n = PyLong_AsSsize_t(count);
    Py_DECREF(count);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    PyObject *list = PyList_New(n < 0 ? 0 : n);
    if (!list)
        return NULL;
    for (Py_ssize_t i = 0; i < n; ++i) {
        Py_INCREF(Py_None);
        PyList_SET_ITEM(list, i, Py_None);
    }
    return list;
}

/* Whether g is a Tensor of meta's (shape, dtype): 1 yes, 0 no, -1 error. */
static int fits(PyObject *g, PyObject *meta)
{
    if ((PyObject *)Py_TYPE(g) != tensor_type || !PyTuple_CheckExact(meta) || PyTuple_GET_SIZE(meta) < 2)
        return 0;
    PyObject *data = PyObject_GetAttr(g, s_data);
    if (!data)
        return -1;
    int same = 0;
    PyObject *shape = PyObject_GetAttr(data, s_shape);
    if (shape) {
        same = PyObject_RichCompareBool(shape, PyTuple_GET_ITEM(meta, 0), Py_EQ);
        Py_DECREF(shape);
        if (same == 1) {
            PyObject *dtype = PyObject_GetAttr(data, s_dtype);
            same = dtype ? PyObject_RichCompareBool(dtype, PyTuple_GET_ITEM(meta, 1), Py_EQ) : -1;
            Py_XDECREF(dtype);
        }
    } else {
        same = -1;
    }
    Py_DECREF(data);
    return same;
}

/* engine._store: node's gradient i into child's input buffer at nr. */
static int store(PyObject *buffers, PyObject *node, Py_ssize_t i, PyObject *g, PyObject *meta, PyObject *child,
                 PyObject *nr, PyObject *create_graph)
{
    int plain = meta == Py_None ? 1 : fits(g, meta);
    if (plain < 0)
        return -1;
    PyObject *buf = NULL;
    Py_ssize_t slot = -1;
    if (plain) {
        slot = PyLong_Check(nr) ? PyLong_AsSsize_t(nr) : -1;
        if (slot == -1 && PyErr_Occurred())
            PyErr_Clear();          /* engine._store raises what Python would */
        buf = PyDict_GetItemWithError(buffers, child);
        if (!buf && PyErr_Occurred())
            return -1;
        if (!buf) {
            PyObject *fresh = nones(child);
            if (!fresh)
                return -1;
            int st = PyDict_SetItem(buffers, child, fresh);
            Py_DECREF(fresh);
            if (st < 0)
                return -1;
            buf = fresh;        /* the dict holds it */
        }
        if (!PyList_CheckExact(buf) || slot < 0 || slot >= PyList_GET_SIZE(buf))
            plain = 0;
    }
    if (!plain) {
        PyObject *index = PyLong_FromSsize_t(i);
        if (!index)
            return -1;
        PyObject *done = PyObject_CallFunctionObjArgs(store_checked, buffers, node, index, g, meta, child, nr,
                                                      create_graph, NULL);
        Py_DECREF(index);
        Py_XDECREF(done);
        return done ? 0 : -1;
    }
    PyObject *current = PyList_GET_ITEM(buf, slot);
    PyObject *total;
    Py_INCREF(buf);             /* _add runs Python: hold what it could let go of */
    if (current == Py_None) {
        Py_INCREF(g);
        total = g;
    } else {
        Py_INCREF(current);
        total = PyObject_CallFunctionObjArgs(add_gradients, current, g, create_graph, NULL);
        Py_DECREF(current);
        if (total && slot >= PyList_GET_SIZE(buf)) {
            Py_CLEAR(total);
            PyErr_SetString(PyExc_IndexError, "list assignment index out of range");
        }
        if (!total) {
            Py_DECREF(buf);
            return -1;
        }
    }
    PyObject *old = PyList_GET_ITEM(buf, slot);
    PyList_SET_ITEM(buf, slot, total);
    Py_DECREF(old);
    Py_DECREF(buf);
    return 0;
}

/* Whether node's input gradients go through Python first (tensor hooks, retain_grad, a leaf's hooks). */
static int has_tensor_hooks(PyObject *node)
{
    int truth = attr_true(node, s_tensor_hooks);
    if (truth)
        return truth;
    if ((truth = attr_true(node, s_retained)))
        return truth;
    if ((PyObject *)Py_TYPE(node) != accumulate_grad_type)
        return 0;
    PyObject *variable = PyObject_GetAttr(node, s_variable);
    if (!variable)
        return -1;
    truth = attr_true(variable, s_hooks);
    Py_DECREF(variable);
    return truth;
}

/* Whether node runs through engine._run (its pre- or post-hooks, or anomaly detection). */
static int needs_hooked_run(PyObject *node)
{
    PyObject *hooks = PyObject_GetAttr(node, s_pre_hooks);
    if (!hooks)
        return -1;
    int hooked = hooks != Py_None;
    Py_DECREF(hooks);
    if (hooked)
        return 1;
    if (!(hooks = PyObject_GetAttr(node, s_post_hooks)))
        return -1;
    hooked = hooks != Py_None;
    Py_DECREF(hooks);
    if (hooked)
        return 1;
    PyObject *enabled = PySequence_GetItem(anomaly_state, 0);
    if (!enabled)
        return -1;
    int truth = PyObject_IsTrue(enabled);
    Py_DECREF(enabled);
    return truth;
}

/* After node ran: store each wanted gradient, and make children whose inputs are complete ready. */
static int pass_on(PyObject *buffers, PyObject *node, PyObject *results, PyObject *dependencies, Heap *ready,
                   long long *first, PyObject *create_graph)
{
    PyObject *metas = PyObject_GetAttr(node, s_input_meta);
    if (!metas)
        return -1;
    PyObject *edges = edges_of(node);
    if (!edges) {
        Py_DECREF(metas);
        return -1;
    }
    int st = 0;
    Py_ssize_t count = PyTuple_CheckExact(results) ? PyTuple_GET_SIZE(results) : PyObject_Size(results);
    if (count < 0)
        st = -1;
    for (Py_ssize_t i = 0; st == 0 && i < PySequence_Fast_GET_SIZE(edges); ++i) {
        PyObject *child, *nr;
        if (unpack_edge(PySequence_Fast_GET_ITEM(edges, i), &child, &nr) < 0) {
            st = -1;
            break;
        }
        if (child != Py_None) {
            PyObject *g = NULL;
            if (i < count)
                g = PyTuple_CheckExact(results) ? (Py_INCREF(PyTuple_GET_ITEM(results, i)),
                                                   PyTuple_GET_ITEM(results, i))
                                                : PySequence_GetItem(results, i);
            if (i < count && !g) {
                st = -1;
            } else if (g && g != Py_None) {
                PyObject *meta = PySequence_GetItem(metas, i);
                st = meta ? store(buffers, node, i, g, meta, child, nr, create_graph) : -1;
                Py_XDECREF(meta);
            }
            Py_XDECREF(g);
            if (st == 0) {
                PyObject *count_obj = PyDict_GetItemWithError(dependencies, child);
                long left = count_obj ? PyLong_AsLong(count_obj) - 1 : -1;
                if (!count_obj) {
                    if (!PyErr_Occurred())
                        PyErr_SetObject(PyExc_KeyError, child);
                    st = -1;
                } else if (PyErr_Occurred()) {
                    st = -1;
                } else {
                    PyObject *value = PyLong_FromLong(left);
                    st = value ? PyDict_SetItem(dependencies, child, value) : -1;
                    Py_XDECREF(value);
                    long long key;
                    if (st == 0 && left == 0)
                        st = (ready_key(child, first, &key) < 0 || heap_push(ready, key, child) < 0) ? -1 : 0;
                }
            }
        }
        Py_DECREF(child);
        Py_DECREF(nr);
    }
    Py_DECREF(edges);
    Py_DECREF(metas);
    return st;
}

/* ---- a builtin op's node: BuiltinNode.apply --------------------------------------------------- */

/* Whether g is a tensor of bfloat16 (its array's dtype kind "V"): 1, 0, or -1 with an exception. */
static int holds_bfloat16(PyObject *g)
{
    PyObject *data = PyObject_GetAttr(g, s_data);
    PyObject *dtype = data ? PyObject_GetAttr(data, s_dtype) : NULL;
    PyObject *kind = dtype ? PyObject_GetAttr(dtype, s_kind) : NULL;
    Py_XDECREF(data);
    Py_XDECREF(dtype);
    if (!kind)
        return -1;
    int is_v = PyUnicode_Check(kind) && PyUnicode_GetLength(kind) == 1 && PyUnicode_READ_CHAR(kind, 0) == 'V';
    Py_DECREF(kind);
    return is_v;
}

/* BuiltinNode.apply for one output: node.backward(grads[0], *unpacked saved values), as a tuple.
 * A node of several outputs, or a bfloat16 gradient, takes _apply_general (Python). */
static PyObject *apply_builtin(PyObject *node, PyObject *grads)
{
    PyObject *saved = PyObject_GetAttr(node, s_saved);
    if (!saved)
        return NULL;
    if (saved == freed_marker) {
        Py_DECREF(saved);
        PyErr_SetObject(PyExc_RuntimeError, freed_message);
        return NULL;
    }
    int multi = attr_true(node, s_multi_output);
    PyObject *g = multi ? NULL : PySequence_GetItem(grads, 0);
    int general = multi < 0 || (!multi && !g) ? -1 : multi;
    if (general == 0 && g == Py_None) {
        Py_DECREF(g);
        Py_DECREF(saved);
        /* no gradient came: none goes on, one None per edge */
        PyObject *edges = PyObject_GetAttr(node, s_next_functions);
        Py_ssize_t n = edges ? PyObject_Size(edges) : -1;
        Py_XDECREF(edges);
        if (n < 0)
            return NULL;
        PyObject *nothing = PyTuple_New(n);
        for (Py_ssize_t i = 0; nothing && i < n; ++i) {
            Py_INCREF(Py_None);
            PyTuple_SET_ITEM(nothing, i, Py_None);
        }
        return nothing;
    }
    if (general == 0)
        general = holds_bfloat16(g);
    if (general != 0) {
        Py_XDECREF(g);
        Py_DECREF(saved);
        return general < 0 ? NULL : PyObject_CallFunctionObjArgs(apply_general, node, grads, NULL);
    }
    PyObject *values = PySequence_Fast(saved, "a node's saved values must be a sequence");
    Py_DECREF(saved);
    if (!values) {
        Py_DECREF(g);
        return NULL;
    }
    /* node.backward(g, *saved): the arguments after a free slot the call may use */
    Py_ssize_t n = PySequence_Fast_GET_SIZE(values), nargs = n + 2;
    PyObject *small[8], **args = nargs + 1 <= 8 ? small : PyMem_New(PyObject *, nargs + 1);
    PyObject *result = NULL;
    if (!args) {
        PyErr_NoMemory();
        goto done;
    }
    args[1] = node;
    args[2] = g;
    Py_ssize_t unpacked = 0;
    for (; unpacked < n; ++unpacked) {
        PyObject *value = PySequence_Fast_GET_ITEM(values, unpacked);
        if ((PyObject *)Py_TYPE(value) == saved_tensor_type) {
            if (!(value = PyObject_CallMethodOneArg(value, s_unpack, node)))
                break;
        } else {
            Py_INCREF(value);
        }
        args[3 + unpacked] = value;
    }
    if (unpacked == n)
        result = PyObject_VectorcallMethod(s_backward, args + 1, (size_t)nargs | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                           NULL);
    for (Py_ssize_t i = 0; i < unpacked; ++i)
        Py_DECREF(args[3 + i]);
    if (args != small)
        PyMem_Free(args);
    if (result && !PyTuple_CheckExact(result)) {
        PyObject *one = PyTuple_Pack(1, result);
        Py_DECREF(result);
        result = one;
    }
done:
    Py_DECREF(values);
    Py_DECREF(g);
    return result;
}

PyDoc_STRVAR(builtin_apply_doc,
"builtin_apply(node, grads)\n\n"
"BuiltinNode.apply: node.backward(grads[0], *its saved values unpacked), as a tuple.");

static PyObject *builtin_apply(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "builtin_apply() takes 2 arguments (%zd given)", nargs);
        return NULL;
    }
    if (!builtin_node_type) {
        PyErr_SetString(PyExc_RuntimeError, "cextend._engine.configure_record() was not called");
        return NULL;
    }
    return apply_builtin(args[0], args[1]);
}

static int accumulate_leaf_quickly(PyObject *node, PyObject *grads);

/* node.apply(grads), through apply_builtin when node's class keeps BuiltinNode's apply, and
 * AccumulateGrad's common case here. */
static PyObject *apply_node(PyObject *node, PyObject *grads)
{
    if ((PyObject *)Py_TYPE(node) == accumulate_grad_type) {
        const int done = accumulate_leaf_quickly(node, grads);
        if (done < 0)
            return NULL;
        if (done)
            return PyTuple_New(0);      /* AccumulateGrad.apply's () */
    }
    if (builtin_node_type && PyObject_TypeCheck(node, (PyTypeObject *)builtin_node_type)) {
        PyObject *apply = PyObject_GetAttr((PyObject *)Py_TYPE(node), s_apply);
        if (!apply)
            return NULL;
        Py_DECREF(apply);
        if (apply == builtin_node_apply)
            return apply_builtin(node, grads);
    }
    return PyObject_CallMethodOneArg(node, s_apply, grads);
}

/* buffers.pop(key, None): *value is the popped value (owned) or NULL. */
static int dict_pop(PyObject *dict, PyObject *key, PyObject **value)
{
    PyObject *found = PyDict_GetItemWithError(dict, key);
    *value = NULL;
    if (!found)
        return PyErr_Occurred() ? -1 : 0;
    Py_INCREF(found);
    if (PyDict_DelItem(dict, key) < 0) {
        Py_DECREF(found);
        return -1;
    }
    *value = found;
    return 0;
}

/* One node: its gradients (through its tensor hooks), apply, release, pass on. */
static int run_node(PyObject *buffers, PyObject *node, PyObject *dependencies, Heap *ready, long long *first,
                    int retain_graph, PyObject *create_graph)
{
    PyObject *grads;
    if (dict_pop(buffers, node, &grads) < 0)
        return -1;
    if (grads) {            /* buffers.pop(node, None) or [None] * node.num_outputs */
        int truth = PyObject_IsTrue(grads);
        if (truth <= 0) {
            Py_DECREF(grads);
            if (truth < 0)
                return -1;
            grads = NULL;
        }
    }
    if (!grads && !(grads = nones(node)))
        return -1;
    int hooked = has_tensor_hooks(node);
    if (hooked) {
        PyObject *hooked_grads = hooked < 0 ? NULL : PyObject_CallFunctionObjArgs(hooked_inputs, node, grads, NULL);
        Py_DECREF(grads);
        if (!(grads = hooked_grads))
            return -1;
    }
    PyObject *results = NULL;
    int hooked_call = needs_hooked_run(node);
    if (hooked_call == 0)
        results = apply_node(node, grads);
    else if (hooked_call > 0)
        results = PyObject_CallFunctionObjArgs(hooked_run, node, grads, NULL);
    Py_DECREF(grads);
    if (!results)
        return -1;
    if (!retain_graph) {
        PyObject *done = PyObject_CallMethodNoArgs(node, s_release);
        if (!done) {
            Py_DECREF(results);
            return -1;
        }
        Py_DECREF(done);
    }
    int st = pass_on(buffers, node, results, dependencies, ready, first, create_graph);
    Py_DECREF(results);
    return st;
}

/* A ready-queue key below any -seq: torch's UINT64_MAX priority (engine._FIRST). */
#define FIRST (-(1LL << 62))

PyDoc_STRVAR(accumulate_doc,
"accumulate(buffers, root_nodes, retain_graph, create_graph)\n\n"
"engine._accumulate_pass's loop: run every node reachable from root_nodes,\n"
"storing gradients into buffers (node -> list of input gradients).");

static PyObject *accumulate(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *buffers, *roots, *create_graph;
    int retain_graph;
    if (!PyArg_ParseTuple(args, "O!OpO:accumulate", &PyDict_Type, &buffers, &roots, &retain_graph, &create_graph))
        return NULL;
    if (!tensor_type) {
        PyErr_SetString(PyExc_RuntimeError, "cextend._engine.configure_backward() was not called");
        return NULL;
    }
    PyObject *dependencies = count_dependencies(roots);
    if (!dependencies)
        return NULL;
    Heap ready = {NULL, 0, 0};
    long long first = FIRST;
    int st = 0;
    PyObject *root_list = PySequence_Fast(roots, "root_nodes must be a sequence");
    if (!root_list)
        st = -1;
    for (Py_ssize_t i = 0; st == 0 && i < PySequence_Fast_GET_SIZE(root_list); ++i) {
        PyObject *node = PySequence_Fast_GET_ITEM(root_list, i);
        PyObject *count = PyDict_GetItemWithError(dependencies, node);
        int pending = count ? PyObject_IsTrue(count) : (PyErr_Occurred() ? -1 : 0);
        long long key;
        if (pending < 0)
            st = -1;
        else if (!pending)
            st = (ready_key(node, &first, &key) < 0 || heap_push(&ready, key, node) < 0) ? -1 : 0;
    }
    Py_XDECREF(root_list);
    while (st == 0 && ready.size) {
        PyObject *node = heap_pop(&ready);
        st = run_node(buffers, node, dependencies, &ready, &first, retain_graph, create_graph);
        Py_DECREF(node);
    }
    heap_clear(&ready);
    Py_DECREF(dependencies);
    if (st < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* ---- recording: record.py's record() for the common case ---------------------------------- */

/* (edge, meta) of one forward input, as record._edge_and_meta gives them (new references). */
static PyObject *new_accumulator(PyObject *variable);

static int input_edge(PyObject *x, PyObject **edge, PyObject **meta)
{
    *edge = *meta = NULL;
    if (x == Py_None || PyFloat_CheckExact(x) || PyLong_CheckExact(x) || PyBool_Check(x))
        goto no_edge;                       /* a number: getattr(x, "_data", None) is None */
    if (!PyObject_TypeCheck(x, (PyTypeObject *)tensor_type))
        goto in_python;
    PyObject *base = PyObject_GetAttr(x, s_base);
    if (!base)
        return -1;
    Py_DECREF(base);
    if (base != Py_None)
        goto in_python;                     /* a view: its grad_fn may need rebuilding */
    int requires = attr_true(x, s_requires_grad);
    if (requires < 0)
        return -1;
    if (!requires)
        goto no_edge;
    PyObject *node = PyObject_GetAttr(x, s_grad_fn), *nr;
    if (!node)
        return -1;
    if (node != Py_None) {
        if (!(nr = PyObject_GetAttr(x, s_output_nr))) {
            Py_DECREF(node);
            return -1;
        }
    } else {
        /* a leaf: its AccumulateGrad, if one is alive (gradient_edge makes one otherwise) */
        Py_DECREF(node);
        PyObject *ref = PyObject_GetAttr(x, s_accumulator);
        if (!ref)
            return -1;
        node = ref == Py_None ? (Py_INCREF(Py_None), Py_None) : PyObject_CallNoArgs(ref);
        Py_DECREF(ref);
        if (!node)
            return -1;
        if (node == Py_None) {        /* none alive: a new one, as graph.gradient_edge makes it */
            Py_DECREF(node);
            if (!(node = new_accumulator(x)))
                return -1;
            PyObject *weak = PyWeakref_NewRef(node, NULL);
            int set = weak ? PyObject_SetAttr(x, s_accumulator, weak) : -1;
            Py_XDECREF(weak);
            if (set < 0) {
                Py_DECREF(node);
                return -1;
            }
        }
        Py_INCREF(s_zero);
        nr = s_zero;
    }
    *edge = PyTuple_Pack(2, node, nr);
    Py_DECREF(node);
    Py_DECREF(nr);
    if (!*edge)
        return -1;
    PyObject *data = PyObject_GetAttr(x, s_data), *shape = NULL, *dtype = NULL;
    if (data) {
        shape = PyObject_GetAttr(data, s_shape);
        dtype = shape ? PyObject_GetAttr(data, s_dtype) : NULL;
        Py_DECREF(data);
    }
    *meta = dtype ? PyTuple_Pack(2, shape, dtype) : NULL;
    Py_XDECREF(shape);
    Py_XDECREF(dtype);
    if (!*meta) {
        Py_CLEAR(*edge);
        return -1;
    }
    return 0;
no_edge:
    Py_INCREF(no_edge);
    Py_INCREF(Py_None);
    *edge = no_edge;
    *meta = Py_None;
    return 0;
in_python:;
    PyObject *pair = PyObject_CallOneArg(edge_and_meta, x);
    if (!pair)
        return -1;
    if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2) {
        Py_DECREF(pair);
        PyErr_SetString(PyExc_TypeError, "_edge_and_meta must return an (edge, meta) pair");
        return -1;
    }
    *edge = PyTuple_GET_ITEM(pair, 0);
    *meta = PyTuple_GET_ITEM(pair, 1);
    Py_INCREF(*edge);
    Py_INCREF(*meta);
    Py_DECREF(pair);
    return 0;
}

PyDoc_STRVAR(record_doc,
"record(node_cls, inputs, out, saved)\n\n"
"record.record for one floating-point output with anomaly detection off: a new node_cls\n"
"numbered in creation order, one edge and input meta per input, made out's grad_fn.");

static PyObject *record_node(PyObject *node_cls, PyObject *inputs, PyObject *out, PyObject *saved);

static PyObject *record(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *node_cls, *inputs, *out, *saved;
    if (!PyArg_ParseTuple(args, "O!OOO:record", &PyType_Type, &node_cls, &inputs, &out, &saved))
        return NULL;
    if (!node_numbers || !tensor_type) {
        PyErr_SetString(PyExc_RuntimeError, "cextend._engine.configure_record() was not called");
        return NULL;
    }
    return record_node(node_cls, inputs, out, saved);
}

/* record()'s work, its arguments checked (node_cls a type). */
static PyObject *record_node(PyObject *node_cls, PyObject *inputs, PyObject *out, PyObject *saved)
{
    PyObject *items = PySequence_Fast(inputs, "inputs must be a sequence");
    if (!items)
        return NULL;
    /* object.__new__(node_cls): no __init__ code runs (one node per op) */
    PyObject *node = PyBaseObject_Type.tp_new((PyTypeObject *)node_cls, s_empty, NULL);
    PyObject *number = node ? PyIter_Next(node_numbers) : NULL;
    if (node && !number && !PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "the node numbers ran out");
    int st = number ? PyObject_SetAttr(node, s_seq, number) : -1;
    Py_XDECREF(number);
    Py_ssize_t n = PySequence_Fast_GET_SIZE(items);
    PyObject *edges = st ? NULL : PyTuple_New(n), *metas = edges ? PyTuple_New(n) : NULL;
    if (!metas)
        st = -1;
    for (Py_ssize_t i = 0; st == 0 && i < n; ++i) {
        PyObject *edge, *meta;
        st = input_edge(PySequence_Fast_GET_ITEM(items, i), &edge, &meta);
        if (st == 0) {
            PyTuple_SET_ITEM(edges, i, edge);
            PyTuple_SET_ITEM(metas, i, meta);
        }
    }
    Py_DECREF(items);
    if (st == 0)
        st = PyObject_SetAttr(node, s_next_functions, edges);
    if (st == 0)
        st = PyObject_SetAttr(node, s_input_meta, metas);
    Py_XDECREF(edges);
    Py_XDECREF(metas);
    if (st == 0)
        st = PyObject_SetAttr(out, s_grad_fn, node);
    if (st == 0)
        st = PyObject_SetAttr(out, s_requires_grad, Py_True);
    if (st == 0) {
        int keep = PyObject_IsTrue(saved);
        st = keep < 0 ? -1 : keep ? PyObject_SetAttr(node, s_saved, saved) : 0;
    }
    if (st < 0) {
        Py_XDECREF(node);
        return NULL;
    }
    return node;
}

PyDoc_STRVAR(configure_record_doc,
"configure_record(NO_EDGE, edge_and_meta, node_numbers, BuiltinNode, apply_general, SavedTensor,\n"
"                 FREED, FREED_MESSAGE)\n\n"
"record.py's helpers and types record() and builtin_apply() call into (record.py calls this once).");

static PyObject *configure_record(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *objects[8];
    if (!PyArg_ParseTuple(args, "OOOO!OOOU:configure_record", &objects[0], &objects[1], &objects[2], &PyType_Type,
                          &objects[3], &objects[4], &objects[5], &objects[6], &objects[7]))
        return NULL;
    PyObject *apply = PyObject_GetAttr(objects[3], s_apply);
    if (!apply)
        return NULL;
    PyObject **slots[8] = {&no_edge, &edge_and_meta, &node_numbers, &builtin_node_type, &apply_general,
                           &saved_tensor_type, &freed_marker, &freed_message};
    for (int i = 0; i < 8; ++i) {
        Py_INCREF(objects[i]);
        Py_XSETREF(*slots[i], objects[i]);
    }
    Py_XSETREF(builtin_node_apply, apply);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(configure_backward_doc,
"configure_backward(AccumulateGrad, Tensor, hooked_inputs, hooked_run, store, add, anomaly_state)\n\n"
"The types and engine.py helpers the loop calls into (engine.py calls this once).");

static PyObject *configure_backward(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *objects[7];
    if (!PyArg_ParseTuple(args, "OOOOOOO:configure_backward", &objects[0], &objects[1], &objects[2], &objects[3],
                          &objects[4], &objects[5], &objects[6]))
        return NULL;
    PyObject **slots[7] = {&accumulate_grad_type, &tensor_type, &hooked_inputs, &hooked_run, &store_checked,
                           &add_gradients, &anomaly_state};
    for (int i = 0; i < 7; ++i) {
        Py_INCREF(objects[i]);
        Py_XSETREF(*slots[i], objects[i]);
    }
    PyObject *init = PyObject_GetAttr(accumulate_grad_type, s_init);
    if (!init)
        return NULL;
    Py_XSETREF(accumulate_grad_init, init);
    Py_RETURN_NONE;
}

/* AccumulateGrad(variable): while the class keeps the __init__ graph.py gave it (number the node,
 * keep the variable), that __init__'s work without its Python frame; else the class is called. */
static PyObject *new_accumulator(PyObject *variable)
{
    PyObject *init = PyObject_GetAttr(accumulate_grad_type, s_init);
    if (!init)
        return NULL;
    Py_DECREF(init);
    if (init != accumulate_grad_init || !node_numbers)
        return PyObject_CallOneArg(accumulate_grad_type, variable);
    PyObject *node = PyBaseObject_Type.tp_new((PyTypeObject *)accumulate_grad_type, s_empty, NULL);
    if (!node)
        return NULL;
    PyObject *number = PyIter_Next(node_numbers);
    if (!number && !PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "the node numbers ran out");
    if (!number || PyObject_SetAttr(node, s_seq, number) < 0 || PyObject_SetAttr(node, s_variable, variable) < 0) {
        Py_XDECREF(number);
        Py_DECREF(node);
        return NULL;
    }
    Py_DECREF(number);
    return node;
}

/* -- wrap(): tensor._wrap for a plain array ------------------------------------------------ */

/* Tensor's slots as tensor._wrap sets them, in this order; their offsets in the object. */
enum { WRAP_DATA, WRAP_REQUIRES_GRAD, WRAP_GRAD_FN, WRAP_OUTPUT_NR, WRAP_VERSION, WRAP_BASE, WRAP_SLOTS };
static const char *const wrap_slot_names[WRAP_SLOTS] = {"_data", "_requires_grad", "_grad_fn", "_output_nr",
                                                        "_version_counter", "_base"};
static Py_ssize_t wrap_offsets[WRAP_SLOTS];
static PyTypeObject *wrap_tensor_type;   /* Tensor */
static PyObject *wrap_array_types;       /* (np.ndarray, DeviceArray) */
static PyObject *wrap_capture_module;    /* cextend._capture: its _active is None unless capturing */
static PyObject *wrap_python;            /* tensor._wrap, the definition: every other case */
static PyObject *s_active;

PyDoc_STRVAR(configure_wrap_doc,
"configure_wrap(Tensor, array_types, capture_module, python_wrap)\n\n"
"Tensor's slot layout and the Python _wrap that wrap() stands in for (tensor.py calls this once).");

static PyObject *configure_wrap(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *tensor, *array_types, *capture_module, *python;
    if (!PyArg_ParseTuple(args, "O!O!OO:configure_wrap", &PyType_Type, &tensor, &PyTuple_Type, &array_types,
                          &capture_module, &python))
        return NULL;
    Py_ssize_t offsets[WRAP_SLOTS];
    for (int i = 0; i < WRAP_SLOTS; ++i) {
        /* Each must be a slot of Tensor's own (a member descriptor holding an object). */
        PyObject *descr = PyObject_GetAttrString(tensor, wrap_slot_names[i]);
        if (!descr)
            return NULL;
        const int is_slot = Py_IS_TYPE(descr, &PyMemberDescr_Type) &&
                            ((PyMemberDescrObject *)descr)->d_member->type == T_OBJECT_EX;
        if (is_slot)
            offsets[i] = ((PyMemberDescrObject *)descr)->d_member->offset;
        Py_DECREF(descr);
        if (!is_slot)
            return PyErr_Format(PyExc_TypeError, "configure_wrap: Tensor.%s is not a slot", wrap_slot_names[i]);
    }
    memcpy(wrap_offsets, offsets, sizeof offsets);
    Py_INCREF(tensor);
    Py_XSETREF(wrap_tensor_type, (PyTypeObject *)tensor);
    Py_INCREF(array_types);
    Py_XSETREF(wrap_array_types, array_types);
    Py_INCREF(capture_module);
    Py_XSETREF(wrap_capture_module, capture_module);
    Py_INCREF(python);
    Py_XSETREF(wrap_python, python);
    Py_RETURN_NONE;
}

static PyObject *new_tensor(PyObject *array);

int cx_capturing(PyObject *capture_module)
{
    PyObject *active = PyObject_GetAttr(capture_module, s_active);
    if (!active)
        return -1;
    const int on = active != Py_None;
    Py_DECREF(active);
    return on;
}

static int capturing(void)
{
    return cx_capturing(wrap_capture_module);
}

PyDoc_STRVAR(wrap_doc,
"wrap(array, requires_grad=False)\n\n"
"tensor._wrap: a Tensor around array, no copy, no checks.  A numpy or device array, outside a\n"
"capture, with requires_grad left out, is set up here; anything else calls the Python definition.");

static PyObject *wrap(PyObject *self, PyObject *const *args, Py_ssize_t nargsf, PyObject *kwnames)
{
    (void)self;
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (!wrap_tensor_type)
        return PyErr_Format(PyExc_RuntimeError, "wrap: configure_wrap() has not run");
    int plain = nargs == 1 && !kwnames;
    if (plain) {
        PyObject *kind = (PyObject *)Py_TYPE(args[0]);
        plain = kind == PyTuple_GET_ITEM(wrap_array_types, 0) || kind == PyTuple_GET_ITEM(wrap_array_types, 1);
    }
    if (plain) {
        const int on = capturing();
        if (on < 0)
            return NULL;
        plain = !on;
    }
    if (!plain)
        return PyObject_Vectorcall(wrap_python, args, nargsf, kwnames);
    return new_tensor(args[0]);
}

/* _wrap(array)'s Tensor, for a numpy or device array (a new reference). */
static PyObject *new_tensor(PyObject *array)
{
    PyObject *version = cx_version_counter_new();
    if (!version)
        return NULL;
    PyObject *t = wrap_tensor_type->tp_alloc(wrap_tensor_type, 0);
    if (!t) {
        Py_DECREF(version);
        return NULL;
    }
    PyObject *values[WRAP_SLOTS] = {array, Py_False, Py_None, s_zero, version, Py_None};
    for (int i = 0; i < WRAP_SLOTS; ++i) {
        if (i != WRAP_VERSION)
            Py_INCREF(values[i]);        /* the new counter's one reference passes to the slot */
        *(PyObject **)((char *)t + wrap_offsets[i]) = values[i];
    }
    return t;
}

/* -- AccumulateGrad.apply's common case ------------------------------------------------------ */

static PyObject *leaf_apply;        /* AccumulateGrad.apply, as graph.py defines it */
static PyObject *grad_state;        /* _grad_state._state: its enabled is this thread's grad mode */
static PyObject *s_enabled, *s_grad, *s_post_accumulate_hooks, *s_dict, *s_grad_lock, *s_acquire, *s_release_lock,
                *s_array_base;

PyDoc_STRVAR(configure_leaves_doc,
"configure_leaves(apply, grad_state)\n\n"
"AccumulateGrad.apply, which the loop's leaf path stands in for while a class keeps it, and the\n"
"thread's grad mode (graph.py calls this once).");

static PyObject *configure_leaves(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *apply, *state;
    if (!PyArg_ParseTuple(args, "OO:configure_leaves", &apply, &state))
        return NULL;
    Py_INCREF(apply);
    Py_XSETREF(leaf_apply, apply);
    Py_INCREF(state);
    Py_XSETREF(grad_state, state);
    Py_RETURN_NONE;
}

/* Whether array is a numpy array with these buffer properties (PyBUF_* flags): asking for its
 * buffer is how C learns them without numpy's headers.  A refusal, whatever its reason, is a
 * no: the caller then leaves the case to Python. */
static int array_has(PyObject *array, int flags)
{
    if ((PyObject *)Py_TYPE(array) != PyTuple_GET_ITEM(wrap_array_types, 0))
        return 0;
    Py_buffer view;
    if (PyObject_GetBuffer(array, &view, flags) < 0) {
        PyErr_Clear();
        return 0;
    }
    PyBuffer_Release(&view);
    return 1;
}

/* A truth read off obj.name: 1, 0, or -1 on an error. */
static int attr_is(PyObject *obj, PyObject *name, PyObject *value)
{
    PyObject *found = PyObject_GetAttr(obj, name);
    if (!found)
        return -1;
    const int same = found == value;
    Py_DECREF(found);
    return same;
}

/* Holds the leaf's grad lock (graph.grad_lock, which the Python path makes on a leaf's first
 * accumulation): 1 when taken, 0 when the leaf has none yet (nothing taken), -1 on an error.
 * *lock receives a new reference to release with release_grad_lock. */
static int take_grad_lock(PyObject *variable, PyObject **lock)
{
    *lock = NULL;
    PyObject *dict = PyObject_GetAttr(variable, s_dict);
    if (!dict)
        return -1;
    PyObject *found = PyDict_GetItemWithError(dict, s_grad_lock);
    Py_DECREF(dict);
    if (!found)
        return PyErr_Occurred() ? -1 : 0;
    Py_INCREF(found);
    PyObject *held = PyObject_CallMethodNoArgs(found, s_acquire);
    if (!held) {
        Py_DECREF(found);
        return -1;
    }
    Py_DECREF(held);
    *lock = found;
    return 1;
}

/* Releases what take_grad_lock took; st is the caller's status, returned (-1 if releasing failed). */
static int release_grad_lock(PyObject *lock, int st)
{
    PyObject *released = PyObject_CallMethodNoArgs(lock, s_release_lock);
    Py_DECREF(lock);
    if (!released)
        return -1;
    Py_DECREF(released);
    return st;
}

/* .grad becomes a new Tensor around data (the first gradient of a step, stolen): 1 when done, 0
 * when Python must do it, -1 on an error.  data is a writable C-contiguous array of its own that
 * only the engine's gradient holds, and the leaf's array is C-contiguous (the layout contract
 * asks nothing more of the gradient). */
static int steal_first_gradient(PyObject *variable, PyObject *data)
{
    int st;
    if ((st = array_has(data, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS)) <= 0 ||    /* a numpy array first */
        (st = attr_is(data, s_array_base, Py_None)) <= 0)
        return st;
    PyObject *own = PyObject_GetAttr(variable, s_data);
    if (!own)
        return -1;
    st = array_has(own, PyBUF_C_CONTIGUOUS);
    Py_DECREF(own);
    PyObject *lock;
    if (st <= 0 || (st = take_grad_lock(variable, &lock)) <= 0)
        return st;
    st = attr_is(variable, s_grad, Py_None);   /* again, under the lock */
    if (st > 0) {
        PyObject *t = new_tensor(data);
        if (!t || PyObject_SetAttr(variable, s_grad, t) < 0)
            st = -1;
        Py_XDECREF(t);
    }
    return release_grad_lock(lock, st);
}

/* Gradients at least this long are added with the GIL released, as numpy's add would. */
#define ADD_WITHOUT_GIL_FROM 65536

/* sum[i] += addend[i] over n float32 or float64 elements: one IEEE addition each, as numpy's
 * add does them (the build has no -ffast-math), so the bits are the Python path's. */
static void add_in_place(void *sum, const void *addend, Py_ssize_t n, int is_double)
{
    if (is_double) {
        double *s = sum;
        const double *a = addend;
        for (Py_ssize_t i = 0; i < n; ++i)
            s[i] += a[i];
    } else {
        float *s = sum;
        const float *a = addend;
        for (Py_ssize_t i = 0; i < n; ++i)
            s[i] += a[i];
    }
}

/* graph.accumulate_into's in-place case, for a .grad that is a plain Tensor around a writable
 * C-contiguous float32/float64 numpy array and a gradient of the same dtype and shape, also
 * C-contiguous, whose memory is either the .grad's own or apart from it: under the leaf's grad
 * lock, .grad's array += the gradient's, and .grad's version goes up.  1 when done, 0 when
 * Python must do it (nothing changed), -1 on an error. */
static int add_to_existing_gradient(PyObject *variable, PyObject *current, PyObject *data)
{
    if (Py_TYPE(current) != wrap_tensor_type)
        return 0;
    PyObject *held = *(PyObject **)((char *)current + wrap_offsets[WRAP_DATA]);
    PyObject *array_type = PyTuple_GET_ITEM(wrap_array_types, 0);
    if (!held || (PyObject *)Py_TYPE(held) != array_type || (PyObject *)Py_TYPE(data) != array_type)
        return 0;
    Py_buffer sum, addend;
    const int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT;
    if (PyObject_GetBuffer(held, &sum, flags | PyBUF_WRITABLE) < 0) {
        PyErr_Clear();
        return 0;
    }
    if (PyObject_GetBuffer(data, &addend, flags) < 0) {
        PyErr_Clear();
        PyBuffer_Release(&sum);
        return 0;
    }
    int st = 0;
    const char *format = sum.format ? sum.format : "B";
    const int is_double = strcmp(format, "d") == 0;
    int same = (is_double || strcmp(format, "f") == 0) && addend.format && strcmp(addend.format, format) == 0 &&
               sum.ndim == addend.ndim && sum.len == addend.len;
    for (int d = 0; same && d < sum.ndim; ++d)
        same = sum.shape[d] == addend.shape[d];
    /* numpy copies an addend that partly overlaps the sum first; identical memory adds as is */
    const char *s0 = sum.buf, *a0 = addend.buf;
    if (same && s0 != a0 && s0 < a0 + addend.len && a0 < s0 + sum.len)
        same = 0;
    PyObject *lock = NULL;
    if (same && (st = take_grad_lock(variable, &lock)) > 0) {
        PyObject *now = PyObject_GetAttr(variable, s_grad);       /* again, under the lock */
        if (!now)
            st = -1;
        else if (now != current)
            st = 0;
        Py_XDECREF(now);
        if (st > 0) {
            const Py_ssize_t n = sum.len / sum.itemsize;
            if (n >= ADD_WITHOUT_GIL_FROM) {
                Py_BEGIN_ALLOW_THREADS
                add_in_place(sum.buf, addend.buf, n, is_double);
                Py_END_ALLOW_THREADS
            } else {
                add_in_place(sum.buf, addend.buf, n, is_double);
            }
            /* current._version_counter.bump() */
            PyObject *version = *(PyObject **)((char *)current + wrap_offsets[WRAP_VERSION]);
            if (!version) {
                PyErr_SetString(PyExc_RuntimeError, "a .grad has no _version_counter");
                st = -1;
            } else if (cx_version_bump(version) < 0) {
                st = -1;
            }
        }
        st = release_grad_lock(lock, st);
    }
    PyBuffer_Release(&addend);
    PyBuffer_Release(&sum);
    return st;
}

/*
 * graph.AccumulateGrad.apply's common cases: the leaf requires grad, has no history and no
 * post-accumulate hooks; grad mode is off and no capture runs; the gradient is a plain Tensor.
 * The first gradient of a step is stolen (steal_first_gradient), a later one added into .grad
 * (add_to_existing_gradient), each as accumulate_into does it.  Returns 1 when done, 0 when apply
 * must run in Python (nothing was changed), -1 on an error.
 */
static int accumulate_leaf_quickly(PyObject *node, PyObject *grads)
{
    if (!leaf_apply || !wrap_tensor_type || !PyList_CheckExact(grads) || PyList_GET_SIZE(grads) != 1)
        return 0;
    PyObject *grad = PyList_GET_ITEM(grads, 0);
    if (Py_TYPE(grad) != wrap_tensor_type)
        return 0;
    PyObject *data = *(PyObject **)((char *)grad + wrap_offsets[WRAP_DATA]);     /* borrowed */
    if (!data)
        return 0;
    /* only the engine's list holds the gradient and its array: they may become .grad */
    const int stealable = Py_REFCNT(grad) == 1 && Py_REFCNT(data) == 1;
    PyObject *apply = PyObject_GetAttr((PyObject *)Py_TYPE(node), s_apply);
    if (!apply)
        return -1;
    Py_DECREF(apply);
    if (apply != leaf_apply)
        return 0;
    int st;
    if ((st = capturing()) != 0 || (st = attr_true(grad_state, s_enabled)) != 0)
        return st < 0 ? -1 : 0;
    PyObject *variable = PyObject_GetAttr(node, s_variable);
    if (!variable)
        return -1;
    Py_INCREF(data);        /* held while Python code (a property, a lock) may run */
    PyObject *current = NULL;
    int done = 0;
    if ((st = attr_true(variable, s_requires_grad)) <= 0 || (st = attr_is(variable, s_grad_fn, Py_None)) <= 0 ||
        (st = attr_true(variable, s_post_accumulate_hooks)) != 0)
        goto out;       /* apply's other branches (it raises for a history, runs the hooks) */
    if (!(current = PyObject_GetAttr(variable, s_grad))) {
        st = -1;
        goto out;
    }
    if (current == Py_None)
        st = stealable ? steal_first_gradient(variable, data) : 0;
    else
        st = add_to_existing_gradient(variable, current, data);
    done = st > 0;
out:
    Py_XDECREF(current);
    Py_DECREF(data);
    Py_DECREF(variable);
    return st < 0 ? -1 : done;
}

/* -- binary(): Binary.__call__'s common case ------------------------------------------------- */

static PyObject *float_dtypes;     /* numpy's float16, float32 and float64 dtypes */
static PyObject *fpe_state;        /* numpy's floating-point error state, a context variable */
static PyObject *fpe_ignore;       /* its value with every error ignored (_fpe.py's silence()) */
static PyObject *layout_of_two;    /* _layout.torch_layout(value, (a, b)) */
static PyObject *layout_with_number;   /* _layout.with_number_layout(value, a) */
static PyObject *as_array;         /* np.asarray */
static PyObject *s_node, *s_overloads, *s_check, *s_compute, *s_saves, *s_ndim;

PyDoc_STRVAR(configure_binary_doc,
"configure_binary(float_dtypes, fpe_state, fpe_ignore, torch_layout, with_number_layout, asarray)\n\n"
"The float dtypes binary() takes, numpy's error-state variable with the value that silences it,\n"
"and the Python helpers it lays results out with (arithmetic.py calls this once).");

static PyObject *configure_binary(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *dtypes, *state, *ignore, *two, *number, *asarray;
    if (!PyArg_ParseTuple(args, "O!O!OOOO:configure_binary", &PyTuple_Type, &dtypes, &PyContextVar_Type, &state,
                          &ignore, &two, &number, &asarray))
        return NULL;
    Py_INCREF(two);
    Py_XSETREF(layout_of_two, two);
    Py_INCREF(number);
    Py_XSETREF(layout_with_number, number);
    Py_INCREF(asarray);
    Py_XSETREF(as_array, asarray);
    Py_INCREF(dtypes);
    Py_XSETREF(float_dtypes, dtypes);
    Py_INCREF(state);
    Py_XSETREF(fpe_state, state);
    Py_INCREF(ignore);
    Py_XSETREF(fpe_ignore, ignore);
    Py_RETURN_NONE;
}

/* A Tensor slot's value, borrowed (NULL if never set). */
static PyObject *slot_of(PyObject *tensor, int which)
{
    return *(PyObject **)((char *)tensor + wrap_offsets[which]);
}

static PyTypeObject *plain_subclass;    /* the last Tensor subclass found to keep Tensor's slots */

/* Whether x is a Tensor, or of a subclass (Parameter) whose _data, _base and _requires_grad are
 * still Tensor's own slots, so that reading the slots is reading the attributes: 1, 0, or -1. */
static int slots_are_attributes(PyObject *x)
{
    PyTypeObject *type = Py_TYPE(x);
    if (type == wrap_tensor_type || type == plain_subclass)
        return 1;
    if (!PyType_IsSubtype(type, wrap_tensor_type))
        return 0;
    const int names[] = {WRAP_DATA, WRAP_BASE, WRAP_REQUIRES_GRAD};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
        PyObject *own = PyObject_GetAttrString((PyObject *)type, wrap_slot_names[names[i]]);
        PyObject *base = own ? PyObject_GetAttrString((PyObject *)wrap_tensor_type, wrap_slot_names[names[i]]) : NULL;
        const int same = own == base;
        Py_XDECREF(own);
        Py_XDECREF(base);
        if (!base)
            return -1;
        if (!same)
            return 0;
    }
    Py_INCREF(type);
    Py_XSETREF(plain_subclass, type);
    return 1;
}

/* A plain (not a view) Tensor's numpy array, a new reference (a call into Python may rebind
 * the slot); NULL when x is anything else, or on an error (then with the exception set). */
static PyObject *plain_array(PyObject *x)
{
    const int plain = slots_are_attributes(x);
    if (plain <= 0 || slot_of(x, WRAP_BASE) != Py_None)
        return NULL;
    PyObject *data = slot_of(x, WRAP_DATA);
    if (!data || (PyObject *)Py_TYPE(data) != PyTuple_GET_ITEM(wrap_array_types, 0))
        return NULL;
    Py_INCREF(data);
    return data;
}

/* Whether the array's dtype object is one of float_dtypes (1), not (0), or -1 on an error.
 * *dtype gets it (a new reference) when 1. */
static int float_dtype(PyObject *array, PyObject **dtype)
{
    PyObject *dt = PyObject_GetAttr(array, s_dtype);
    if (!dt)
        return -1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(float_dtypes); ++i)
        if (dt == PyTuple_GET_ITEM(float_dtypes, i)) {
            *dtype = dt;
            return 1;
        }
    Py_DECREF(dt);
    return 0;
}

/* Whether an array of two or more dimensions gives an elementwise result with a number in
 * another layout than numpy's (not C-contiguous, or a dimension of 1: see with_number_layout),
 * 1 or 0, or -1 on an error. */
static int numbers_layout_differs(PyObject *data)
{
    if (!array_has(data, PyBUF_C_CONTIGUOUS))
        return 1;
    PyObject *shape = PyObject_GetAttr(data, s_shape);
    if (!shape)
        return -1;
    int ones = 0;
    for (Py_ssize_t i = 0; PyTuple_Check(shape) && i < PyTuple_GET_SIZE(shape) && !ones; ++i) {
        const Py_ssize_t extent = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
        if (extent == -1 && PyErr_Occurred()) {
            Py_DECREF(shape);
            return -1;
        }
        ones = extent == 1;
    }
    Py_DECREF(shape);
    return ones;
}

PyDoc_STRVAR(binary_doc,
"binary(op, input, other)\n\n"
"arithmetic.Binary.__call__(op, input, other) for its commonest case, or None to say the Python\n"
"definition must run: input a plain float Tensor, other a Python float or int or a plain\n"
"Tensor of the very same dtype, no capture running, anomaly mode off where a node is recorded.\n"
"The same calls in the same order as the Python path: op.check, op.compute with numpy's\n"
"floating-point errors silenced, the result wrapped, the node recorded, op._saved.  numpy's\n"
"ValueError or MemoryError (shapes that do not broadcast, a result too big) returns None, so\n"
"the Python path computes again and raises its own error.");

static PyObject *binary(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 3)
        return PyErr_Format(PyExc_TypeError, "binary() takes 3 arguments (%zd given)", nargs);
    if (!float_dtypes || !as_array || !wrap_tensor_type || !grad_state || !anomaly_state || !node_numbers)
        Py_RETURN_NONE;                     /* not configured yet: the Python path */
    PyObject *op = args[0], *input = args[1], *other = args[2];
    const int other_is_tensor = !(PyFloat_CheckExact(other) || PyLong_CheckExact(other));
    /* Owned: op.check and op.compute run Python code, which may rebind a tensor's _data. */
    PyObject *data = plain_array(input), *raw = NULL;
    if (data && other_is_tensor)
        raw = plain_array(other);
    else if (data)
        Py_INCREF(raw = other);
    PyObject *dtype = NULL, *node_cls = NULL, *value = NULL, *result = NULL, *answer = NULL;
    int st = PyErr_Occurred() ? -1 : 0;
    if (!raw)
        goto python_or_fail;
    st = float_dtype(data, &dtype);
    if (st <= 0)
        goto python_or_fail;
    PyObject *ndim_object = PyObject_GetAttr(data, s_ndim);
    if (!ndim_object)
        goto out;
    const long ndim = PyLong_AsLong(ndim_object);
    Py_DECREF(ndim_object);
    if (ndim == -1 && PyErr_Occurred())
        goto out;
    if (other_is_tensor) {
        PyObject *other_dtype = PyObject_GetAttr(raw, s_dtype);
        if (!other_dtype)
            goto out;
        st = other_dtype == dtype;
        Py_DECREF(other_dtype);
        if (!st)
            goto python;
    }
    if ((st = capturing()) != 0)
        goto python_or_fail;
    /* Whether a node is recorded: it is decided before computing, so that a case the Python path
     * must record (anomaly mode) is left to it whole. */
    if (!(node_cls = PyObject_GetAttr(op, s_node)))
        goto out;
    int recording = node_cls != Py_None;
    if (recording && (st = attr_true(grad_state, s_enabled)) <= 0) {
        if (st < 0)
            goto out;
        recording = 0;
    }
    for (int i = 0; recording && i < 1 + other_is_tensor; ++i) {
        PyObject *requires = slot_of(i ? other : input, WRAP_REQUIRES_GRAD);
        if (!requires)
            goto python;                    /* unset: Python's getattr raises */
        if ((st = PyObject_IsTrue(requires)) < 0)
            goto out;
        if (st)
            break;
        if (i == other_is_tensor)
            recording = 0;                  /* neither requires grad */
    }
    if (recording) {
        PyObject *anomaly = PySequence_GetItem(anomaly_state, 0);
        if (!anomaly)
            goto out;
        st = PyObject_IsTrue(anomaly);
        Py_DECREF(anomaly);
        if (st != 0)
            goto python_or_fail;
    }
    PyObject *check = PyObject_GetAttr(op, s_check);
    if (!check)
        goto out;
    if (check != Py_None) {
        PyObject *checked = PyObject_CallFunctionObjArgs(check, input, other, dtype, NULL);
        Py_DECREF(check);
        if (!checked)
            goto out;
        Py_DECREF(checked);
    } else {
        Py_DECREF(check);
    }
    PyObject *compute = PyObject_GetAttr(op, s_compute);
    if (!compute)
        goto out;
    PyObject *token = PyContextVar_Set(fpe_state, fpe_ignore);
    if (!token) {
        Py_DECREF(compute);
        goto out;
    }
    value = PyObject_CallFunctionObjArgs(compute, data, raw, NULL);
    Py_DECREF(compute);
    /* compute's error, if any, waits while the error state is restored */
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *pending = PyErr_GetRaisedException();
    st = PyContextVar_Reset(fpe_state, token);
    if (st < 0)
        Py_XDECREF(pending);
    else
        PyErr_SetRaisedException(pending);
#else
    PyObject *type, *error, *trace;
    PyErr_Fetch(&type, &error, &trace);
    st = PyContextVar_Reset(fpe_state, token);
    if (st < 0) {
        Py_XDECREF(type);
        Py_XDECREF(error);
        Py_XDECREF(trace);
    } else {
        PyErr_Restore(type, error, trace);
    }
#endif
    Py_DECREF(token);
    if (st < 0)
        goto out;
    if (!value) {
        if (PyErr_ExceptionMatches(PyExc_ValueError) || PyErr_ExceptionMatches(PyExc_MemoryError)) {
            PyErr_Clear();
            goto python;                    /* the Python path raises its own words */
        }
        goto out;
    }
    if (ndim > 1) {
        /* torch's memory layout for the result, as the Python path lays it out */
        PyObject *laid = NULL;
        if (other_is_tensor) {
            if (array_has(data, PyBUF_C_CONTIGUOUS) && array_has(raw, PyBUF_C_CONTIGUOUS))
                goto laid_out;              /* torch_layout's first test: numpy's layout is torch's */
            PyObject *pair = PyTuple_Pack(2, data, raw);
            laid = pair ? PyObject_CallFunctionObjArgs(layout_of_two, value, pair, NULL) : NULL;
            Py_XDECREF(pair);
        } else {
            if ((st = numbers_layout_differs(data)) < 0)
                goto out;
            if (!st)
                goto laid_out;
            laid = PyObject_CallFunctionObjArgs(layout_with_number, value, data, NULL);
        }
        if (!laid)
            goto out;
        Py_SETREF(value, laid);
    }
laid_out:
    if ((PyObject *)Py_TYPE(value) != PyTuple_GET_ITEM(wrap_array_types, 0)) {
        PyObject *array = PyObject_CallOneArg(as_array, value);     /* numpy gave a scalar */
        if (!array)
            goto out;
        Py_SETREF(value, array);
        if ((PyObject *)Py_TYPE(value) != PyTuple_GET_ITEM(wrap_array_types, 0))
            goto python;
    }
    if (!(result = new_tensor(value)))
        goto out;
    if (!recording)
        goto done;
    PyObject *overloads = PyObject_GetAttr(op, s_overloads);
    if (!overloads)
        goto out;
    if (overloads != Py_None) {
        /* Binary._node: torch names the node by overload, (self is a tensor, other is) */
        PyObject *key = PyTuple_Pack(2, Py_True, other_is_tensor ? Py_True : Py_False);
        PyObject *named = key ? PyObject_CallMethod(overloads, "get", "OO", key, node_cls) : NULL;
        Py_XDECREF(key);
        Py_DECREF(overloads);
        if (!named)
            goto out;
        Py_SETREF(node_cls, named);
    } else {
        Py_DECREF(overloads);
    }
    if (!PyType_Check(node_cls)) {
        PyErr_SetString(PyExc_TypeError, "binary(): an op's node must be a class");
        goto out;
    }
    PyObject *inputs = PyTuple_Pack(2, input, other);
    PyObject *node = inputs ? record_node(node_cls, inputs, result, s_empty) : NULL;
    Py_XDECREF(inputs);
    if (!node)
        goto out;
    PyObject *saves = PyObject_GetAttr(op, s_saves);
    st = saves ? 0 : -1;
    if (saves && saves != Py_None) {
        PyObject *values = PyObject_CallMethodObjArgs(op, s_saved, node, input, other, result, input, NULL);
        st = values ? PyObject_SetAttr(node, s_saved, values) : -1;
        Py_XDECREF(values);
    }
    Py_XDECREF(saves);
    Py_DECREF(node);
    if (st < 0)
        goto out;
done:
    answer = result;
    result = NULL;
    goto out;
python_or_fail:
    if (st < 0)
        goto out;
python:
    Py_INCREF(Py_None);
    answer = Py_None;
out:        /* every way out; answer is still NULL after an error */
    Py_XDECREF(data);
    Py_XDECREF(raw);
    Py_XDECREF(dtype);
    Py_XDECREF(node_cls);
    Py_XDECREF(value);
    Py_XDECREF(result);
    return answer;
}

static PyMethodDef methods[] = {
    {"configure_leaves", configure_leaves, METH_VARARGS, configure_leaves_doc},
    {"configure_wrap", configure_wrap, METH_VARARGS, configure_wrap_doc},
    {"wrap", (PyCFunction)(void (*)(void))wrap, METH_FASTCALL | METH_KEYWORDS, wrap_doc},
    {"accumulate", accumulate, METH_VARARGS, accumulate_doc},
    {"configure_backward", configure_backward, METH_VARARGS, configure_backward_doc},
    {"record", record, METH_VARARGS, record_doc},
    {"configure_record", configure_record, METH_VARARGS, configure_record_doc},
    {"builtin_apply", (PyCFunction)(void (*)(void))builtin_apply, METH_FASTCALL, builtin_apply_doc},
    {"configure_binary", configure_binary, METH_VARARGS, configure_binary_doc},
    {"binary", (PyCFunction)(void (*)(void))binary, METH_FASTCALL, binary_doc},
    {"configure_linear", cx_configure_linear, METH_VARARGS, cx_configure_linear_doc},
    {"linear_forward", (PyCFunction)(void (*)(void))cx_quick_linear_forward, METH_FASTCALL,
     cx_quick_linear_forward_doc},
    {"linear_backward", (PyCFunction)(void (*)(void))cx_quick_linear_backward, METH_FASTCALL,
     cx_quick_linear_backward_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "cextend._engine",
    "The autograd engine's loop and op recording in C (see cextend/autograd/engine.py, record.py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__engine(void)
{
    struct {
        PyObject **name;
        const char *text;
    } names[] = {
        {&s_next_functions, "next_functions"}, {&s_num_outputs, "num_outputs"}, {&s_seq, "_seq"},
        {&s_runs_first, "_runs_first"}, {&s_tensor_hooks, "_tensor_hooks"}, {&s_retained, "_retained"},
        {&s_variable, "variable"}, {&s_hooks, "_hooks"}, {&s_pre_hooks, "_pre_hooks"},
        {&s_post_hooks, "_post_hooks"}, {&s_apply, "apply"}, {&s_release, "_release"},
        {&s_input_meta, "_input_meta"}, {&s_data, "_data"}, {&s_shape, "shape"}, {&s_dtype, "dtype"},
        {&s_base, "_base"}, {&s_requires_grad, "_requires_grad"}, {&s_grad_fn, "_grad_fn"},
        {&s_output_nr, "_output_nr"}, {&s_accumulator, "_accumulator"}, {&s_saved, "_saved"},
        {&s_multi_output, "multi_output"}, {&s_kind, "kind"}, {&s_unpack, "unpack"}, {&s_backward, "backward"},
        {&s_active, "_active"}, {&s_enabled, "enabled"}, {&s_grad, "_grad"},
        {&s_post_accumulate_hooks, "_post_accumulate_hooks"}, {&s_dict, "__dict__"}, {&s_grad_lock, "_grad_lock"},
        {&s_acquire, "acquire"}, {&s_release_lock, "release"}, {&s_array_base, "base"},
        {&s_node, "node"}, {&s_overloads, "overloads"}, {&s_check, "check"}, {&s_compute, "compute"},
        {&s_saves, "saves"}, {&s_ndim, "ndim"}, {&s_init, "__init__"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i)
        if (!*names[i].name && !(*names[i].name = PyUnicode_InternFromString(names[i].text)))
            return NULL;
    if (!s_zero && !(s_zero = PyLong_FromLong(0)))
        return NULL;
    if (!s_empty && !(s_empty = PyTuple_New(0)))
        return NULL;
    if (PyType_Ready(&cx_version_counter_type) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    Py_INCREF(&cx_version_counter_type);
    if (PyModule_AddObject(m, "VersionCounter", (PyObject *)&cx_version_counter_type) < 0) {
        Py_DECREF(&cx_version_counter_type);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
