"""The reverse-mode engine behind Tensor.backward, autograd.backward and grad.

From the roots, find every node the gradients must pass through, count
each node's incoming edges, then run nodes whose gradients are complete,
most recently created first (Kahn's algorithm on a heap).  Each node's
results are checked against its forward inputs (count, type, shape; a
broadcastable shape is summed back, a dtype is cast) in one place, here.
With `inputs` given, only nodes on a path to them run, and gradients are
captured there instead of accumulated into leaves.

Hooks run as torch runs them: a tensor's hooks (Tensor.register_hook) see
its gradient before the node that consumes it (or before accumulation
into a leaf's .grad, or capture by autograd.grad); retain_grad stores the
result after those hooks; Node.register_prehook/register_hook wrap apply.
"""
import heapq
import itertools

import numpy as np

from cextend.autograd import anomaly_mode, grad_mode
from cextend import _bfloat16, _dtype
from cextend import _capture, _engine
from cextend._device import filled_like
from cextend._fpe import quietly
from cextend.autograd.graph import AccumulateGrad, grad_lock, gradient_edge
from cextend.tensor import Tensor, _wrap

UNDEFINED = object()     # a root gradient that is "undefined" (None), for gradcheck


def _as_tuple(value):
    if value is None:
        return ()
    if isinstance(value, (tuple, list)):
        return tuple(value)
    return (value,)


def _root_gradients(tensors, grads, Tensor, ones_like):
    if len(grads) != len(tensors):
        raise RuntimeError("got %d tensors and %d gradients" % (len(tensors), len(grads)))
    roots = []
    for i, (t, g) in enumerate(zip(tensors, grads)):
        if not isinstance(t, Tensor):
            raise TypeError("element %d of tensors is a %s, not a Tensor" % (i, type(t).__name__))
        edge = gradient_edge(t)
        if edge is None:
            raise RuntimeError("element %d of tensors does not require grad and does not have a grad_fn" % i)
        if g is UNDEFINED:
            g = None
        elif g is None:
            if t._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not _dtype.is_floating(t._data.dtype):
                raise RuntimeError("grad can be implicitly created only for real scalar outputs but got %s"
                                   % t.dtype.name)
            g = ones_like(t)
        else:
            if not isinstance(g, Tensor):
                raise TypeError("gradient %d must be a Tensor or None, got %s" % (i, type(g).__name__))
            if g._data.shape != t._data.shape:
                raise RuntimeError("Mismatch in shape: grad_output[%d] has a shape of %s and output[%d] "
                                   "has a shape of %s." % (i, list(g.shape), i, list(t.shape)))
            if g._data.dtype != t._data.dtype:
                g = g.to(t.dtype)
        roots.append((edge, g))
    return roots


def _graph(root_nodes):
    """Every node reachable from the roots, and how many edges enter each."""
    dependencies = {}
    seen = set(root_nodes)
    stack = list(root_nodes)
    order = []
    while stack:
        node = stack.pop()
        order.append(node)
        for child, _ in node.next_functions:
            if child is not None:
                dependencies[child] = dependencies.get(child, 0) + 1
                if child not in seen:
                    seen.add(child)
                    stack.append(child)
    return order, dependencies


def _prune(order, targets):
    """The nodes on a path to a capture target, with edges counted among them only."""
    reachable = set(order)
    needed = {t for t in targets if t in reachable}
    changed = True
    while changed:                  # children mostly follow parents in `order`
        changed = False
        for node in reversed(order):
            if node not in needed and any(c in needed for c, _ in node.next_functions if c is not None):
                needed.add(node)
                changed = True
    dependencies = {}
    for node in needed:
        for child, _ in node.next_functions:
            if child in needed:
                dependencies[child] = dependencies.get(child, 0) + 1
    return needed, dependencies


def _is_expandable(shape, target):
    if len(shape) > len(target):
        return False
    return all(s == t or s == 1 for s, t in zip(reversed(shape), reversed(target)))


def fit_gradient(node, i, g, meta):
    """A gradient made to fit its forward input's shape and dtype, or an error."""
    if not isinstance(g, Tensor):
        raise TypeError("function %s returned a %s as gradient %d; expected a Tensor or None"
                        % (node.name(), type(g).__name__, i))
    shape, dtype = meta[0], meta[1]
    if g._data.shape != shape:
        if not _is_expandable(shape, g._data.shape):
            raise RuntimeError("Function %s returned an invalid gradient at index %d - got %s but "
                               "expected shape compatible with %s"
                               % (node.name(), i, list(g._data.shape), list(shape)))
        g = g.sum_to_size(shape)
    if g._data.dtype != dtype:
        g = g.to(dtype)
    return g


def _add(a, b, create_graph):
    if a is None:
        return b
    if create_graph:
        return a + b
    if a._data.dtype.kind == "V":
        return _wrap(_bfloat16.add_arrays(a._data, b._data))
    total = quietly(np.add, a._data, b._data)
    if _capture._active is not None:
        array = total if type(total) is np.ndarray else np.asarray(total)      # 0-d: a numpy scalar
        _capture.computed(np.add, (a._data, b._data), array, direct=array is total)
        total = array
    return _wrap(total)


def _tensor_hooks(node, grads):
    """Tensor.register_hook hooks of node's outputs (a leaf's own, for its
    accumulator), then retain_grad, which sees the hooked gradient."""
    hooks = node._tensor_hooks
    if hooks:
        for nr, fns in hooks.items():
            for fn in list(fns):
                # torch calls a hook even when its output got no gradient (None)
                new = fn(grads[nr])
                if new is not None:
                    grads[nr] = new
    if type(node) is AccumulateGrad:
        leaf_hooks = node.variable._hooks
        if leaf_hooks and grads[0] is not None:
            for fn in list(leaf_hooks):
                new = fn(grads[0])
                if new is not None:
                    grads[0] = new
    if node._retained:
        _retain_grads(node, grads)
    return grads


def _run(node, grads, compute=True):
    """node.apply(grads) between its pre- and post-hooks.  compute=False:
    nothing it would return is wanted; a builtin node then only reads its
    saved tensors (their version checks) and returns no gradients."""
    if node._pre_hooks:
        for hook in list(node._pre_hooks):
            new = hook(tuple(grads))
            if new is not None:
                grads = list(new)
    if compute:
        results = anomaly_mode.run_checked(node, grads) if anomaly_mode._state[0] else node.apply(grads)
    else:
        node._unpack_saved()
        results = (None,) * len(node.next_functions)
    if node._post_hooks:
        for hook in list(node._post_hooks):
            new = hook(tuple(results), tuple(grads))
            if new is not None:
                results = tuple(new)
    return results


def execute(roots, retain_graph, create_graph, capture=None, run_captured=False):
    """Run the graph from roots [((node, nr), grad)].

    capture: None to accumulate into leaves (_accumulate_pass), or a list
    of edges whose total incoming gradient is returned (leaves' .grad
    untouched).
    run_captured: run the captured nodes too (backward(inputs=...)).
    """
    buffers = {}
    root_nodes = []
    for (node, nr), g in roots:
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * node.num_outputs
            root_nodes.append(node)
        buf[nr] = _add(buf[nr], g, create_graph) if g is not None else buf[nr]
    if capture is None:
        _accumulate_pass(buffers, root_nodes, retain_graph, create_graph)
        return None
    order, _ = _graph(root_nodes)
    target_nodes = {node for node, _ in capture}
    needed, dependencies = _prune(order, target_nodes)
    if len(roots) == 1 and root_nodes[0] not in needed:
        _lone_root_hooks(root_nodes[0], buffers[root_nodes[0]], create_graph)
    root_nodes = [n for n in root_nodes if n in needed]
    # most recent node first, as torch's ready queue orders them (key -seq);
    # a node that only accumulates (AccumulateGrad) or only raises (torch's
    # NotImplemented) goes before all others, as its sequence number
    # UINT64_MAX does in torch, and among those the first made ready goes
    # first (key FIRST + a count of them, below every -seq)
    first = itertools.count(_FIRST).__next__
    ready = [(first() if n._runs_first else -n._seq, n) for n in root_nodes if not dependencies.get(n)]
    heapq.heapify(ready)
    heappop, heappush = heapq.heappop, heapq.heappush
    captured = {}
    previous_mode = grad_mode.is_grad_enabled()
    grad_mode._set_enabled(create_graph)
    try:
        while ready:
            node = heappop(ready)[1]
            grads = buffers.pop(node, None) or [None] * node.num_outputs
            if node._tensor_hooks or node._retained or (type(node) is AccumulateGrad and
                                                        node.variable._hooks):
                grads = _tensor_hooks(node, grads)
            if node in target_nodes:
                for nr, g in enumerate(grads):
                    captured[(node, nr)] = g
            edges = node.next_functions
            if (type(node) is not AccumulateGrad and any(c in needed for c, _ in edges)) \
                    or (run_captured and type(node) is AccumulateGrad and node in target_nodes):
                # backward(inputs=[leaf]) accumulates through the leaf's own
                # node, as torch's does: its pre-, post- and post-accumulate
                # hooks run
                node._wanted = needed
                try:
                    if node._pre_hooks is None and node._post_hooks is None and not anomaly_mode._state[0]:
                        results = node.apply(grads)
                    else:
                        results = _run(node, grads)
                finally:
                    del node._wanted
                if not retain_graph:
                    node._release()
                metas = node._input_meta
                for i, g in enumerate(results):
                    if g is None:
                        continue
                    child, nr = edges[i]
                    if child is not None and child in needed:
                        _store(buffers, node, i, g, metas[i], child, nr, create_graph)
            elif run_captured and node in target_nodes and type(node) is not AccumulateGrad:
                # backward(inputs=[non-leaf]): torch runs the input's grad_fn
                # (for its retain_grad hook) with none of its outputs wanted:
                # a builtin node only unpacks its saved tensors (checking
                # their versions) and computes nothing, so a derivative torch
                # lacks does not raise; a custom Function's backward runs
                # (its pre- and post-hooks run either way, the post-hooks
                # seeing no gradients).  A copy standing for torch's one
                # node of x.op_() (recorded as x.copy_(op(x)): inplace_via)
                # reads and frees op's node, which saved the operands, too
                fused = getattr(getattr(node, "fn", node), "_fused", None)
                if node.computes_unwanted_outputs:
                    _run(node, grads)
                else:
                    _run(node, grads, compute=False)
                if not retain_graph:
                    node._release()
                if fused is not None:
                    fused._unpack_saved()
                    if not retain_graph:
                        fused._release()
            for child, _ in edges:
                if child is not None:
                    left = dependencies.get(child)
                    if left is not None:
                        left -= 1
                        dependencies[child] = left
                        if left == 0:
                            heappush(ready, (first() if child._runs_first else -child._seq, child))
    finally:
        grad_mode._set_enabled(previous_mode)
    return [captured.get(edge) for edge in capture]


_FIRST = -(1 << 62)         # a ready-queue key below any -seq: torch's UINT64_MAX priority


def _store(buffers, node, i, g, meta, child, nr, create_graph):
    """node's gradient i, checked against its forward input (fit_gradient),
    added into child's input buffer at nr."""
    if meta is not None and (type(g) is not Tensor or g._data.shape != meta[0] or g._data.dtype != meta[1]):
        g = fit_gradient(node, i, g, meta)
    buf = buffers.get(child)
    if buf is None:
        buf = buffers[child] = [None] * child.num_outputs
    buf[nr] = g if buf[nr] is None else _add(buf[nr], g, create_graph)


def _accumulate_pass(buffers, root_nodes, retain_graph, create_graph):
    """execute() without capture (backward() into the leaves' .grad), the
    common case of a training step: every reachable node runs, so the loop
    needs none of the capture bookkeeping, and each edge is visited once
    (its gradient stored, then its count of pending inputs lowered).  The
    loop is C (cextend._engine, src/python/engine.c): the same ready-queue
    order as execute()'s, and the same calls into Python -- node.apply and
    _release, and the helpers below for hooks, anomaly mode and gradients
    that need fitting -- with only the bookkeeping between them compiled."""
    previous_mode = grad_mode.is_grad_enabled()
    grad_mode._set_enabled(create_graph)
    try:
        _engine.accumulate(buffers, root_nodes, retain_graph, create_graph)
    finally:
        grad_mode._set_enabled(previous_mode)


def _hooked_inputs(node, grads):
    """A node's input gradients through its tensor hooks and retain_grad (the C loop's call)."""
    if _capture._active is not None:
        _capture.refuse("a tensor hook (or retain_grad) runs in backward")
    return _tensor_hooks(node, grads)


def _hooked_run(node, grads):
    """node run between its pre- and post-hooks, or under anomaly detection (the C loop's call)."""
    if _capture._active is not None:
        _capture.refuse("a node hook (or anomaly detection) runs in backward")
    return _run(node, grads)


def _lone_root_hooks(node, grads, create_graph):
    """torch hands a lone root straight to its node, which runs its tensor
    hooks (retain_grad's too) before finding that no input needs it."""
    if node._tensor_hooks or node._retained or (type(node) is AccumulateGrad and node.variable._hooks):
        previous_mode = grad_mode.is_grad_enabled()
        grad_mode._set_enabled(create_graph)
        try:
            _tensor_hooks(node, list(grads))
        finally:
            grad_mode._set_enabled(previous_mode)


def _retain_grads(node, grads):
    for nr, refs in node._retained.items():
        g = grads[nr]
        for ref in refs:
            tensor = ref()
            if tensor is not None and g is not None:
                # torch's retains_grad hook: a private copy, then out-of-place sums.
                with grad_lock(tensor):
                    tensor._grad = g.clone() if tensor._grad is None else tensor._grad + g


def _ones_like(t):
    if t._data.dtype.kind == "V":
        return _wrap(_bfloat16.filled(t._data.shape, 1.0))     # np's "1" would be the bits 0x0001
    ones = filled_like(t._data.shape, t._data.dtype, 1, like=t._data)
    if _capture._active is not None:
        _capture.fill(ones, 1)
    return _wrap(ones)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate d(tensors)/d(leaf) into each leaf's .grad (or only into `inputs`)."""
    tensors = _as_tuple(tensors)
    grad_tensors = _as_tuple(grad_tensors) or (None,) * len(tensors)
    if retain_graph is None:
        retain_graph = create_graph
    if _capture._active is not None and (create_graph or inputs is not None):
        _capture.refuse("backward() records a graph of the gradient or takes inputs=")
    roots = _root_gradients(tensors, grad_tensors, Tensor, _ones_like)
    if inputs is None:
        execute(roots, retain_graph, create_graph)
        return
    inputs = _as_tuple(inputs)
    if not inputs:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    edges = _input_edges(inputs, Tensor)
    for t in inputs:
        if t.grad_fn is not None:
            t.retain_grad()     # as torch: a non-leaf input keeps its .grad from now on
    # leaves accumulate in the pass, through their AccumulateGrad nodes
    # (inputs=[x, x] runs x's node, and so accumulates, once, as in torch)
    execute(roots, retain_graph, create_graph, capture=edges, run_captured=True)


def _input_edges(inputs, Tensor):
    edges = []
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise TypeError("input %d is a %s, not a Tensor" % (i, type(t).__name__))
        edge = gradient_edge(t)
        if edge is None:
            if not t.requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            edge = (None, 0)        # requires grad but no path (a view made under no_grad)
        edges.append(edge)
    return edges


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of outputs with respect to inputs, as a tuple (no .grad is touched)."""
    if is_grads_batched:
        raise NotImplementedError("cextend.autograd.grad does not support is_grads_batched=True")
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    grad_outputs = _as_tuple(grad_outputs) or (None,) * len(outputs)
    if retain_graph is None:
        retain_graph = create_graph
    if _capture._active is not None:
        _capture.refuse("the step calls autograd.grad()")
    roots = _root_gradients(outputs, grad_outputs, Tensor, _ones_like)
    results = execute(roots, retain_graph, create_graph, capture=_input_edges(inputs, Tensor))
    final = []
    for t, g in zip(inputs, results):
        if g is None:
            if materialize_grads:
                g = t.new_zeros(t.shape)
            elif not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in "
                                   "the graph. Set allow_unused=True if this is the desired behavior.")
        final.append(g)
    return tuple(final)


def _tensor_backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradient of this tensor into the leaves' .grad."""
    if gradient is None and inputs is None and create_graph is False:
        # loss.backward(): backward()'s steps for one implicit root, without its tuples
        edge = gradient_edge(self)
        data = self._data
        if edge is not None and data.dtype.kind == "f" and data.size == 1:
            node, nr = edge
            buffer = [None] * node.num_outputs
            buffer[nr] = _ones_like(self)
            _accumulate_pass({node: buffer}, [node], bool(retain_graph), False)
            return
    backward((self,), None if gradient is None else (gradient,), retain_graph, create_graph, inputs)


Tensor.backward = _tensor_backward      # the engine owns backward; tensor.py stays the data structure
_engine.configure_backward(AccumulateGrad, Tensor, _hooked_inputs, _hooked_run, _store, _add, anomaly_mode._state)
