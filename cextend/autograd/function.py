"""Function: a user-defined differentiable op with static forward/backward.

    class MulConstant(Function):
        @staticmethod
        def forward(ctx, tensor, constant):
            ctx.constant = constant
            return tensor * constant

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * ctx.constant, None

`MulConstant.apply(x, 2.0)` runs forward with grad mode off and, if any
Tensor input requires grad, makes the ctx (an instance of the generated
node class `MulConstantBackward`) the outputs' grad_fn.  The torch >= 2.0
style, `forward(*args)` without ctx plus `setup_context(ctx, inputs,
output)`, works too.

How outputs are connected follows torch's custom_function.cpp: an input
returned unchanged becomes a view of it; outputs marked dirty take the
node as their (rebased) history; outputs marked non-differentiable, and
non-Tensor outputs, get none (and backward receives None for the latter).
"""
import functools
import warnings

from cextend import _capture
from cextend._device import DeviceArray

from cextend.autograd import grad_mode, views
from cextend.autograd.anomaly_mode import _state as anomaly_state, forward_trace
from cextend.autograd.graph import FREED_MESSAGE, Node, SavedTensor, gradient_edge
from cextend.tensor import Tensor, _wrap

_NO_EDGE = (None, 0)
_NO_META = None


class FunctionCtx:
    """The ctx API (save_for_backward, mark_dirty, ...), shared by every node class."""

    def save_for_backward(self, *tensors):
        """Keep tensors (or None) for backward; modifying one in place later
        makes backward raise instead of computing a wrong gradient."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError("save_for_backward can only save variables, but argument %d is of "
                                "type %s" % (i, type(t).__name__))
        self.to_save = tensors

    def save_for_forward(self, *tensors):
        self.saved_for_forward = tensors

    def mark_dirty(self, *tensors):
        """Declare the inputs forward modified in place (and returns)."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        """Declare outputs that never carry a gradient (e.g. argmax indices)."""
        self._non_differentiable = tensors

    def set_materialize_grads(self, value):
        """If False, backward receives None (not zeros) for outputs without a gradient."""
        self.materialize_grads = bool(value)


class BackwardCFunction(Node, FunctionCtx):
    """The ctx handed to forward/backward, and the backward node in the graph."""

    _forward_cls = None
    # Defaults at class level (see Node): set on the instance only when used.
    to_save = None
    _saved = None
    _freed = False
    _dirty = ()
    _non_differentiable = ()
    _output_meta = ()
    materialize_grads = True
    needs_input_grad = ()

    @property
    def num_outputs(self):
        return len(self._output_meta)

    @property
    def saved_tensors(self):
        if self._freed:
            raise RuntimeError(FREED_MESSAGE)
        if self._saved is None:
            return tuple(self.to_save or ())
        return tuple(None if s is None else s.unpack(self) for s in self._saved)

    saved_variables = saved_tensors

    def name(self):
        return type(self).__name__

    # -- the node API -----------------------------------------------------
    def apply(self, grads):
        grads = list(grads)
        for i, meta in enumerate(self._output_meta):
            if meta is _NO_META:
                grads[i] = None             # non-Tensor outputs: always None
            elif grads[i] is None and self.materialize_grads:
                grads[i] = _zeros(meta)
        result = self._forward_cls.backward(self, *grads)
        return _normalize_gradients(self, result)

    def _release(self):
        if self._saved is not None:
            self._saved = None
            self._freed = True


def _zeros(meta):
    """A zero gradient for an output that received none, on its device."""
    import numpy as np
    shape, dtype, on_device = meta
    if not on_device:
        return _wrap(np.zeros(shape, dtype))
    zeros = DeviceArray(shape, dtype)
    zeros[...] = 0
    return _wrap(zeros)


def _normalize_gradients(node, result):
    """One gradient per forward argument: extra trailing Nones are dropped,
    anything else that does not line up is an error naming the function."""
    if not isinstance(result, tuple):
        result = (result,)
    expected = len(node.next_functions)
    if len(result) > expected and all(g is None for g in result[expected:]):
        result = result[:expected]
    if len(result) != expected:
        raise RuntimeError("function %s returned an incorrect number of gradients (expected %d, got %d)"
                           % (node.name(), expected, len(result)))
    for i, (g, meta) in enumerate(zip(result, node._input_meta)):
        if g is None:
            continue
        if meta is None:
            if isinstance(g, Tensor) or node.next_functions[i][0] is not None:
                raise RuntimeError("function %s returned a gradient different than None at position %d, "
                                   "but the corresponding forward input was not a Variable"
                                   % (node.name(), i + 1))
        elif not isinstance(g, Tensor):
            raise TypeError("function %s returned a %s as gradient %d; expected a Tensor or None"
                            % (node.name(), type(g).__name__, i))
    return result


class Function(FunctionCtx):
    """Base class for differentiable ops; subclass with static forward/backward."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # a Function standing for a builtin (F.conv2d's) may take torch's node name
        name = cls.__dict__.get("_torch_node_name") or cls.__name__ + "Backward"
        cls._backward_cls = type(name, (BackwardCFunction,), {"_forward_cls": cls, "__module__": cls.__module__})

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    def __call__(self, *args):
        """Legacy style (torch < 0.4): MyFunction()(a, b) with forward(self, ...).

        Runs as a new-style Function whose ctx starts with this instance's
        attributes, so self.save_for_backward, self.saved_tensors and
        attributes set in __init__ all work.
        """
        warnings.warn("Legacy autograd function with non-static forward method is deprecated. "
                      "Please use new-style autograd function with static forward method "
                      "(%s.apply)." % type(self).__name__, DeprecationWarning, stacklevel=2)
        return type(self)._apply(args, {}, vars(self))

    @classmethod
    def apply(cls, *args, **kwargs):
        return cls._apply(args, kwargs)

    @classmethod
    def _uses_setup_context(cls):
        return cls.setup_context is not Function.setup_context

    @classmethod
    def _apply(cls, args, kwargs, state=None):
        ctx = cls._backward_cls()
        if state:
            ctx.__dict__.update(state)
        grad_enabled = grad_mode.is_grad_enabled()
        needs = tuple([isinstance(a, Tensor) and a.requires_grad for a in args]) if grad_enabled \
            else (False,) * len(args)
        ctx.needs_input_grad = needs
        requires_grad = True in needs
        grad_mode._set_enabled(False)
        try:
            if cls._uses_setup_context():
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args if not kwargs else args + tuple(kwargs.values()), outputs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        finally:
            grad_mode._set_enabled(grad_enabled)
        return _wrap_outputs(ctx, args, outputs, requires_grad, Tensor)


def _connect_inputs(ctx, args, Tensor):
    """ctx's edges to each argument's gradient path, and each Tensor
    argument's (shape, dtype) so the engine can check gradients against it."""
    if anomaly_state[0]:
        ctx._anomaly_trace = forward_trace()
    edges = []
    metas = []
    for a, need in zip(args, ctx.needs_input_grad):
        edge = gradient_edge(a) if need else None
        if edge is not None:
            edges.append(edge)
            metas.append((a._data.shape, a._data.dtype))
        else:
            edges.append(_NO_EDGE)
            metas.append((a._data.shape, a._data.dtype) if isinstance(a, Tensor) else None)
    ctx.next_functions = tuple(edges)
    ctx._input_meta = tuple(metas)


def _view_as_self(t):
    """A new Tensor that is a view of all of t (what returning an input gives)."""
    with grad_mode.no_grad():
        out = views.make_view(t, t._data if type(t._data) is DeviceArray else t._data.view(),
                              lambda x: x.view_as(x))
    out._requires_grad = False
    return out


def _wrap_outputs(ctx, args, outputs, requires_grad, Tensor):
    """Connect forward's outputs to the graph through ctx (if any input needs grad)."""
    is_tuple = isinstance(outputs, tuple)
    outs = outputs if is_tuple else (outputs,)
    input_ids = {id(a) for a in args if isinstance(a, Tensor)}
    dirty_ids = {id(t) for t in ctx._dirty}
    output_ids = {id(o) for o in outs if isinstance(o, Tensor)}
    if dirty_ids - output_ids:
        raise RuntimeError("Some elements marked as dirty during the forward method were not returned as "
                           "output. The inputs that are modified inplace must all be outputs of the "
                           "Function.")
    non_diff = {id(t) for t in ctx._non_differentiable}
    for t in ctx._dirty:
        t._version_counter.bump()
        if _capture._active is not None:
            _capture.in_place(t)
    if requires_grad:
        _connect_inputs(ctx, args, Tensor)
    tensor_outputs = sum(1 for o in outs if isinstance(o, Tensor))
    result = []
    metas = []
    for i, out in enumerate(outs):
        if not isinstance(out, Tensor):
            result.append(out)
            metas.append(_NO_META)
            continue
        is_input = id(out) in input_ids
        is_dirty = id(out) in dirty_ids
        differentiable = requires_grad and id(out) not in non_diff and out._data.dtype.kind == "f"
        if not differentiable:
            if is_dirty and out._grad_fn is None and out._requires_grad and grad_mode.is_grad_enabled():
                raise RuntimeError("a leaf Variable that requires grad has been used in an in-place "
                                   "operation.")
            if is_input and not is_dirty:
                out = _view_as_self(out) if not out.requires_grad else _detached_alias(out)
            elif out.requires_grad and not is_input:
                out._grad_fn = None
                out._requires_grad = False
        elif is_dirty:
            views.check_inplace(out, True)
            if out._view_fn is not None and tensor_outputs > 1:
                raise RuntimeError("If your Function modifies inplace an input that is a view of another "
                                   "Tensor, your Function cannot return more than one Tensor. This is not "
                                   "supported by the current autograd engine. You should either make sure "
                                   "the input is not a view (using .clone() for example) or make your "
                                   "Function only return one Tensor.")
            out._grad = None    # torch resets a modified input's .grad once its checks pass (custom_function.cpp)
            views.rebase_history(out, ctx, i)
        elif is_input:
            out = _view_as_self(out)
            _set_history(out, ctx, i)
        else:
            _set_history(out, ctx, i)
        metas.append((out._data.shape, out._data.dtype, type(out._data) is DeviceArray))
        result.append(out)
    ctx._output_meta = tuple(metas)
    if requires_grad:
        _save_variables(ctx, result)
    return tuple(result) if is_tuple else result[0]


def _detached_alias(t):
    out = _wrap(t._data)
    out._version_counter = t._version_counter
    return out


def _set_history(out, ctx, output_nr):
    out._grad_fn = ctx
    out._output_nr = output_nr
    out._requires_grad = True
    if out._view_fn is not None:
        # A view made inside forward: in-place changes to it later would
        # bypass the custom backward, so torch forbids them.
        out._grad_fn_version = out._version_counter[0]
        out._creation_meta = views.IN_CUSTOM_FUNCTION
        out._creation_meta_op = "Output %d of %s" % (output_nr, ctx._forward_cls.__name__)


def _save_variables(ctx, outputs):
    """Turn ctx.to_save into SavedTensors: outputs of ctx are saved without
    their grad_fn (no ctx <-> output cycle), everything else as is."""
    if ctx.to_save is None:
        return
    output_ids = {id(o): o for o in outputs if o is not None and hasattr(o, "_data")}
    saved = []
    for t in ctx.to_save:
        if t is None:
            saved.append(None)
        elif id(t) in output_ids and t._grad_fn is ctx:
            saved.append(SavedTensor(t, is_output=True))
        else:
            saved.append(SavedTensor(t, check_detached=False))     # torch's ctx keeps no such check
    ctx._saved = tuple(saved)
    ctx.to_save = None


def once_differentiable(backward):
    """Decorate a backward that is not itself differentiable: it runs with
    history off, and a double backward through its results raises."""
    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        with grad_mode.no_grad():
            result = backward(ctx, *grads)
        history = [g for g in grads if isinstance(g, Tensor) and g.requires_grad]
        if not (grad_mode.is_grad_enabled() and history):
            return result
        outs = result if isinstance(result, tuple) else (result,)
        wrapped = tuple(_DelayedError.apply(g, *history) if isinstance(g, Tensor) else g for g in outs)
        return wrapped if isinstance(result, tuple) else wrapped[0]
    return wrapper


class _DelayedError(Function):
    """Passes a once_differentiable result through, connected to the grads
    it was computed from, so differentiating it again raises."""

    @staticmethod
    def forward(ctx, result, *history):
        return result.clone()

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("trying to differentiate twice a function that was marked with "
                           "@once_differentiable")


class InplaceFunction(Function):
    """torch.autograd.function.InplaceFunction: a Function with an `inplace` flag."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace


class NestedIOFunction(Function):
    pass
