"""Recording built-in ops into the graph: torch's generated autograd code, by hand.

A builtin op computes its result with numpy, then, if grad mode is on and
an input requires grad, records one BuiltinNode: edges to the inputs'
gradient paths, the values its backward needs (as SavedTensors, checked
against in-place changes), and itself as the output's grad_fn.  In-place
ops record the same node and then rebase the modified tensor's history
(views.rebase_history), which is what keeps views and bases consistent.
"""
import numpy as np

from cextend import _capture, _engine
from cextend._bfloat16 import upcast_grad
from cextend._overlap import check_no_partial, check_not_self_overlapping
from cextend._promotion import _torch_name, check_inplace_cast
from cextend.autograd import views
from cextend.autograd.anomaly_mode import _state as anomaly_state, forward_trace
from cextend.autograd.engine import grad as autograd_grad
from cextend.autograd.grad_mode import _state as _grad_state, enable_grad
from cextend.autograd.graph import FREED_MESSAGE, Node, SavedTensor, _sequence, gradient_edge
from cextend.tensor import _wrap

NO_EDGE = (None, 0)
_FREED = ("freed",)
_new = object.__new__
_next_seq = _sequence.__next__


class BuiltinNode(Node):
    """The backward of a builtin op.

    Subclasses define `backward(self, grad, *saved)` (one output) or
    `backward(self, grads, *saved)` with `multi_output = True`, returning
    one gradient (or None) per forward input.  `self.needs(i)` says
    whether input i wants a gradient.
    """

    _saved = ()
    multi_output = False

    def apply(self, grads):
        # Compiled (src/python/engine.c), and called from there directly by the backward loop:
        # a freed node raises; no gradient gives None for every input; else
        # self.backward(grads[0], *saved values unpacked), as a tuple.  Several outputs, or a
        # bfloat16 gradient (computed in float32), go through _apply_general.
        return _builtin_apply(self, grads)

    def _apply_general(self, grads):
        saved = self._saved
        if saved is _FREED:
            raise RuntimeError(FREED_MESSAGE)
        if self.multi_output:
            if all(g is None for g in grads):
                return (None,) * len(self.next_functions)
            grads = [upcast_grad(g) for g in grads]
            result = self.backward(grads, *[s.unpack(self) if type(s) is SavedTensor else s for s in saved])
        else:
            g = grads[0]
            if g is None:
                return (None,) * len(self.next_functions)
            if g._data.dtype.kind == "V":
                g = upcast_grad(g)
            result = self.backward(g, *[s.unpack(self) if type(s) is SavedTensor else s for s in saved])
        return result if type(result) is tuple else (result,)

    def backward(self, grad, *saved):
        raise NotImplementedError

    def needs(self, i):
        # torch's task_should_compute_output: an edge, and, in a pass that computes only some
        # inputs' gradients (autograd.grad, backward(inputs=)), one on the way to them
        child = self.next_functions[i][0]
        return child is not None and (self._wanted is None or child in self._wanted)

    computes_unwanted_outputs = False

    def _unpack_saved(self):
        saved = self._saved
        if saved is _FREED:
            raise RuntimeError(FREED_MESSAGE)
        for s in saved:
            if type(s) is SavedTensor:
                s.unpack(self)

    _keeps_wrapped_number = False    # see Binary._saved

    def _release(self):
        # Only saved tensors are freed (as torch's SavedVariables): a node that
        # kept just numbers can run again, unless a number stands for one of
        # torch's wrapped-number tensors (x * 2 saves the 2 as a tensor).
        saved = self._saved
        if saved and saved is not _FREED and (self._keeps_wrapped_number or SavedTensor in map(type, saved)):
            self._saved = _FREED


def torch_node_name(name):
    """torch's generated nodes carry the overload's number: SinBackward0,
    SumBackward1 (sum(dim)); a name given without one is overload 0.  Its
    hand-written nodes (CopyBackwards) have none."""
    return name + "0" if name.endswith("Backward") else name


def node_class(name, backward, multi_output=False):
    """A BuiltinNode subclass named like torch's (SinBackward0) around `backward`."""
    return type(torch_node_name(name), (BuiltinNode,), {"backward": backward, "multi_output": multi_output,
                                                        "__module__": __name__})


def overload(cls, number):
    """cls as torch names another overload of its op (SumBackward1 for
    sum(dim)): the same node under that name."""
    return renamed(cls, cls.__name__.rstrip("0123456789") + str(number))


def renamed(cls, name):
    """The same node under torch's name for the op that made it (reshape's
    view is torch's ViewBackward0)."""
    found = _RENAMED.get((cls, name))
    if found is None:
        found = _RENAMED[(cls, name)] = type(name, (cls,), {"__module__": cls.__module__,
                                                            "name": lambda node: type(node).__name__})
    return found


_RENAMED = {}


def zeros_grad(g):
    """An exact zero gradient shaped like g, outside any graph (torch's
    zeros_like(grad): an inf or NaN incoming gradient must not become NaN)."""
    return _wrap(np.zeros(g._data.shape, g._data.dtype))


# -- backward ops: torch's *_backward functions, recorded under create_graph ----------

class FormulaNode(BuiltinNode):
    """A backward op (convolution_backward's kin) recorded as torch's one
    *BackwardBackward0 node, computed by a kernel, whose derivative is that
    of the same backward written in Tensor ops: `formulas(mask, *inputs)`
    gives its outputs (None where mask says not wanted), and the node's
    gradient is their vector-Jacobian product with the incoming gradients,
    taken by a nested autograd.grad.  Under create_graph the formulas run
    on the saved tensors themselves, so the result differentiates again.
    The node's saved values are its inputs, positionally (None where an
    input is a constant of the formulas)."""

    multi_output = True
    differentiable = ()         # the inputs the formulas differentiate

    def formulas(self, mask, *inputs):
        raise NotImplementedError

    def backward(self, grads, *inputs):
        result = [None] * len(self.next_functions)
        wanted = [i for i in self.differentiable if self.needs(i)]
        if not wanted:
            return tuple(result)
        outer = _grad_state.enabled
        with enable_grad():
            leaves = [t if t is None or (outer and t.requires_grad) else t.detach().requires_grad_()
                      for t in inputs]
            outputs = self.formulas([g is not None for g in grads], *leaves)
        pairs = [(out, g) for out, g in zip(outputs, grads) if g is not None and out is not None]
        if pairs:
            found = autograd_grad([out for out, _ in pairs], [leaves[i] for i in wanted],
                                  grad_outputs=[g for _, g in pairs], create_graph=outer, allow_unused=True)
            for i, g in zip(wanted, found):
                result[i] = g
        return tuple(result)


class MaskedBackwardNode(BuiltinNode):
    """threshold_backward and kin recorded under create_graph
    (ThresholdBackwardBackward0, ...): the gradient scaled elementwise by a
    function of a saved tensor (`scale(grad, saved)`, on arrays), linear in
    the gradient; the saved tensor gets zeros (torch's zeros_like(self))."""

    def backward(self, gg, saved):
        return (masked_backward(type(self), gg, saved, self.scale) if self.needs(0) else None,
                _wrap(np.zeros(saved._data.shape, saved._data.dtype)) if self.needs(1) else None)


def masked_backward(node_cls, grad, saved, scale):
    """scale(grad, saved) as a recorded op of (grad, saved): node_cls, a
    MaskedBackwardNode, under create_graph."""
    value = scale(grad._data, saved._data)
    if _capture._active is not None:
        _capture.computed(scale, (grad._data, saved._data), value)
    out = _wrap(value)
    if needs_grad(grad, saved):
        node = record(node_cls, (grad, saved), out)
        node.scale = scale
        node._saved = (save(saved),)
    return out


def masked_backward_node(name):
    """The MaskedBackwardNode class named name (ThresholdBackwardBackward0)."""
    return type(name, (MaskedBackwardNode,), {"__module__": __name__})


def not_implemented(name, message, error=RuntimeError, whole_node=False):
    """A node for an op torch has no derivative for: backward raises, as torch's does.
    whole_node: torch records its NotImplemented node ("derivative for
    aten::... is not implemented"), which raises whenever it runs; else the
    op's generated node holds a not_implemented(...) formula, which raises
    only where a gradient is wanted."""
    def backward(node, grads, *saved):
        raise error(message)
    cls = node_class(name, backward, multi_output=True)
    cls.not_implemented = True
    cls.computes_unwanted_outputs = whole_node
    if whole_node:
        cls._runs_first = True      # torch's NotImplemented node runs as soon as it is ready
    return cls


def requires_grad(x):
    """Whether x is a Tensor that requires grad (rebuilding a stale view's history)."""
    if x._base is None:
        return x._requires_grad
    return x.requires_grad


def needs_grad(*xs):
    """Grad mode is on and some Tensor among xs requires grad."""
    if not _grad_state.enabled:
        return False
    for x in xs:
        if getattr(x, "_data", None) is not None and (x._requires_grad if x._base is None
                                                       else x.requires_grad):
            return True
    return False


def new_node(node_cls):
    """A node without running Python __init__ code (one is made per op)."""
    node = _new(node_cls)
    node._seq = _next_seq()
    return node


def _edge_and_meta(x):
    data = getattr(x, "_data", None)
    if data is None:
        return NO_EDGE, None
    if x._base is None:
        if not x._requires_grad:
            return NO_EDGE, None
        fn = x._grad_fn
        if fn is not None:
            return (fn, x._output_nr), (data.shape, data.dtype)
    elif not x.requires_grad:
        return NO_EDGE, None
    edge = gradient_edge(x)
    if edge is None:        # e.g. a view made under no_grad: requires grad, yet no path
        return NO_EDGE, None
    return edge, (data.shape, data.dtype)


def connect(node, inputs):
    """Give node one edge (and input meta) per forward input."""
    if anomaly_state[0]:
        node._anomaly_trace = forward_trace()
    if len(inputs) == 2:
        edge_a, meta_a = _edge_and_meta(inputs[0])
        edge_b, meta_b = _edge_and_meta(inputs[1])
        node.next_functions = (edge_a, edge_b)
        node._input_meta = (meta_a, meta_b)
        return node
    edges = []
    metas = []
    for x in inputs:
        edge, meta = _edge_and_meta(x)
        edges.append(edge)
        metas.append(meta)
    node.next_functions = tuple(edges)
    node._input_meta = tuple(metas)
    return node


def _check_differentiable_output(out):
    """torch refuses to attach history to a new integer tensor, or to a
    view of an integer tensor that fill_ gave a value requiring grad."""
    if out._data.dtype.kind not in "fV":
        raise RuntimeError("Autograd not support dtype: %s" % _torch_name(out._data.dtype))


def record(node_cls, inputs, out, saved=()):
    """Record node_cls as out's grad_fn (out: one Tensor, or a tuple of them)."""
    if type(out) is not tuple:
        if out._data.dtype.kind != "f":     # bfloat16 (V2) passes the check
            _check_differentiable_output(out)
        elif not anomaly_state[0]:
            # the common case, compiled (src/python/engine.c): what the lines below do
            return _engine.record(node_cls, inputs, out, saved)
    else:
        # views of an integer tensor (chunk, split, unbind) carry its history:
        # refused as one; other integer outputs (max's indices) are not
        # differentiable and stay out of the graph
        for o in out:
            if o is not None and o._base is not None:
                _check_differentiable_output(o)
    node = _new(node_cls)       # new_node(), inline: one per op
    node._seq = _next_seq()
    connect(node, inputs)
    if type(out) is tuple:
        node.num_outputs = len(out)
        for i, o in enumerate(out):
            if o is not None and o._data.dtype.kind in "fV":
                o._grad_fn = node
                o._output_nr = i
                o._requires_grad = True
    else:
        out._grad_fn = node
        out._requires_grad = True
    if saved:
        node._saved = saved
    return node


def save(x):
    """x as kept by a node: Tensors through SavedTensor, anything else as is."""
    return SavedTensor(x) if getattr(x, "_data", None) is not None else x


def save_output(out):
    return SavedTensor(out, is_output=True)


def check_writable(t, check_overlap=True):
    data = t._data
    flags = getattr(data, "flags", None)
    if flags is None:
        return
    if check_overlap:
        check_not_self_overlapping(data)
    if not flags.writeable:
        raise RuntimeError("unsupported operation: the tensor's memory is read-only (e.g. a numpy "
                           "array with writeable=False); clone() it before writing in place")


def prepare_inplace(t, others=(), result=None, check_overlap=True, differentiable=True):
    """The checks every in-place op makes; returns whether it records history.

    result: the numpy dtype the op computes in (checked castable to t's dtype).
    check_overlap: refuse a t whose elements share memory (an expanded
    tensor), and operands that partially overlap t.
    differentiable: False where the op records nothing whatever its operands
    (torch's copy_ into an integer tensor): no view checks either.
    """
    check_writable(t, check_overlap)
    if check_overlap:
        check_no_partial(t._data, others)
    if result is not None and result != t._data.dtype:
        check_inplace_cast(result, t._data.dtype)
    recording = differentiable and needs_grad(t, *others)
    views.check_inplace(t, recording)
    return recording


def finish_inplace(t, node, output_nr=0):
    """Bump t's version and move its history to node (after the data changed)."""
    t._version_counter.bump()
    if _capture._active is not None:
        _capture.in_place(t)
    if node is not None:
        views.rebase_history(t, node, output_nr)
    return t


_engine.configure_record(NO_EDGE, _edge_and_meta, _sequence, BuiltinNode, BuiltinNode._apply_general, SavedTensor,
                         _FREED, FREED_MESSAGE)
_builtin_apply = _engine.builtin_apply
