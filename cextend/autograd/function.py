"""Function: a differentiable op with static forward/backward and a ctx.

    class MulConstant(Function):
        @staticmethod
        def forward(ctx, tensor, constant):
            ctx.constant = constant
            return tensor * constant

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * ctx.constant, None

`MulConstant.apply(x, 2.0)` runs forward with history recording off and,
if any Tensor input requires grad, makes the ctx (an instance of the
generated node class `MulConstantBackward`) the outputs' grad_fn.
"""
import functools
import warnings

from cextend._device import DeviceArray

from cextend.autograd import grad_mode
from cextend.autograd.graph import Node, gradient_edge

_INPLACE_LEAF_ERROR = ("a leaf Variable that requires grad is being used in an in-place operation; "
                       "wrap it in `with cextend.no_grad():` or modify .data")


class BackwardCFunction(Node):
    """The ctx handed to forward/backward, and the backward node in the graph."""

    _forward_cls = None
    # Defaults at class level (see Node): set on the instance only when used.
    to_save = None
    _saved = None
    _saved_versions = None
    _freed = False
    _dirty = ()
    _non_differentiable = ()
    _output_meta = ()
    materialize_grads = True
    needs_input_grad = ()

    @property
    def num_outputs(self):
        return len(self._output_meta)

    # -- the ctx API ------------------------------------------------------
    def save_for_backward(self, *tensors):
        """Keep tensors (or None) for backward; modifying one in place later
        makes backward raise instead of computing a wrong gradient."""
        from cextend.tensor import Tensor
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError("save_for_backward can only save Tensors or None, but argument %d "
                                "is of type %s" % (i, type(t).__name__))
        self.to_save = tensors

    def mark_dirty(self, *tensors):
        """Declare the inputs forward modified in place (and returns)."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        """Declare outputs that never carry a gradient (e.g. argmax indices)."""
        self._non_differentiable = tensors

    def set_materialize_grads(self, value):
        """If False, backward receives None (not zeros) for outputs without a gradient."""
        self.materialize_grads = bool(value)

    @property
    def saved_tensors(self):
        if self._freed:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved "
                "tensors after they have already been freed). Saved intermediate values of the "
                "graph are freed when you call .backward() or autograd.grad(). Specify "
                "retain_graph=True if you need to backward through the graph a second time or "
                "if you need to access saved tensors after calling backward.")
        if self._saved is None:
            return tuple(self.to_save or ())
        for t, version in zip(self._saved, self._saved_versions):
            if t is not None and t._version != version:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an "
                    "inplace operation: [%s %s]%s, is at version %d; expected version %d instead. "
                    "Hint: clone() the tensor before modifying it in place."
                    % (t.dtype.name, list(t.shape),
                       ", which is output %d of %s" % (t._output_nr, t._grad_fn.name())
                       if t._grad_fn is not None else "", t._version, version))
        return self._saved

    # -- the node API -----------------------------------------------------
    def apply(self, grads):
        if self.materialize_grads:
            grads = [g if g is not None else _zeros(meta) for g, meta in zip(grads, self._output_meta)]
        result = self._forward_cls.backward(self, *grads)
        return _normalize_gradients(self, result)

    def _release(self):
        if self._saved is not None:
            self._saved = None
            self._freed = True


def _zeros(meta):
    """A zero gradient for an output that received none, on its device."""
    import numpy as np
    from cextend.tensor import _wrap
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
        if g is not None and meta is None:
            raise RuntimeError("function %s returned a gradient different than None at position %d, "
                               "but the corresponding forward input was not a Tensor"
                               % (node.name(), i + 1))
    return result


class Function:
    """Base class for differentiable ops; subclass with static forward/backward."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._backward_cls = type(cls.__name__ + "Backward", (BackwardCFunction,),
                                 {"_forward_cls": cls, "__module__": cls.__module__})

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError("You must implement the forward function for a custom Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement the backward function for a custom Function.")

    def __call__(self, *args):
        """Legacy style (torch < 0.4): MyFunction()(a, b) with forward(self, ...).

        Runs as a new-style Function whose ctx starts with this instance's
        attributes, so self.save_for_backward, self.saved_tensors and
        attributes set in __init__ all work.
        """
        warnings.warn("Legacy autograd function with non-static forward method is deprecated. "
                      "Please use new-style autograd function with static forward method "
                      "(%s.apply)." % type(self).__name__, DeprecationWarning, stacklevel=2)
        return type(self)._apply(args, vars(self))

    @classmethod
    def apply(cls, *args, **kwargs):
        if kwargs:
            raise TypeError("%s.apply() takes positional arguments only, got keyword(s) %s"
                            % (cls.__name__, ", ".join(sorted(kwargs))))
        return cls._apply(args)

    @classmethod
    def _apply(cls, args, state=None):
        ctx = cls._backward_cls()
        if state:
            ctx.__dict__.update(state)
        grad_enabled = grad_mode.is_grad_enabled()
        if grad_enabled:
            needs = tuple([type(a) in _TENSOR_TYPES and a._requires_grad for a in args]) \
                if _all_plain(args) else tuple([isinstance(a, _Tensor()) and a._requires_grad for a in args])
            ctx.needs_input_grad = needs
            grad_mode._set_enabled(False)
            try:
                outputs = cls.forward(ctx, *args)
            finally:
                grad_mode._set_enabled(True)
            requires_grad = True in needs
        else:
            ctx.needs_input_grad = (False,) * len(args)
            outputs = cls.forward(ctx, *args)
            requires_grad = False
        if (not requires_grad and type(outputs) is _Tensor() and not ctx._dirty
                and all(a is not outputs for a in args)):
            return outputs          # nothing to record: the common no-grad case
        return _wrap_outputs(ctx, args, outputs, requires_grad, _Tensor())


_TENSOR_TYPES = set()


def _Tensor():
    from cextend.tensor import Tensor
    return Tensor


def _all_plain(args):
    """Every argument's type is known: a Tensor (or Parameter) or not one at all."""
    for a in args:
        t = type(a)
        if t not in _TENSOR_TYPES and t not in _PLAIN_TYPES:
            if isinstance(a, _Tensor()):
                _TENSOR_TYPES.add(t)
            else:
                return False
    return True


_PLAIN_TYPES = {int, float, bool, str, tuple, type(None), slice}


def _connect_inputs(ctx, args, Tensor):
    """ctx's edges to each argument's gradient path, and each Tensor
    argument's (shape, dtype) so the engine can check gradients against it."""
    edges = []
    metas = []
    for a, need in zip(args, ctx.needs_input_grad):
        if need:
            edges.append(gradient_edge(a))
            metas.append((a._data.shape, a._data.dtype))
        else:
            edges.append(_NO_EDGE)
            metas.append((a._data.shape, a._data.dtype) if isinstance(a, Tensor) else None)
    ctx.next_functions = tuple(edges)
    ctx._input_meta = tuple(metas)


def _wrap_single(ctx, args, out, requires_grad):
    """_wrap_outputs for the common case: one Tensor output, nothing dirty
    or marked non-differentiable."""
    for a in args:
        if a is out:
            out = out._alias()      # returning an input unchanged: a new Tensor, same storage
            break
    data = out._data
    if requires_grad:
        _connect_inputs(ctx, args, type(out))
        if data.dtype.kind == "f":
            out._grad_fn = ctx
            out._requires_grad = True
        if ctx.to_save is not None:
            ctx._saved = ctx.to_save
            ctx._saved_versions = tuple([t._version_counter.value if t is not None else 0
                                         for t in ctx.to_save])
            ctx.to_save = None
    ctx._output_meta = ((data.shape, data.dtype, type(data) is DeviceArray),)
    return out


def _wrap_outputs(ctx, args, outputs, requires_grad, Tensor):
    """Connect forward's outputs to the graph through ctx (if any input needs grad)."""
    if type(outputs) is Tensor and not ctx._dirty and not ctx._non_differentiable:
        return _wrap_single(ctx, args, outputs, requires_grad)
    is_tuple = isinstance(outputs, tuple)
    outs = outputs if is_tuple else (outputs,)
    dirty = {id(t) for t in ctx._dirty}
    non_diff = {id(t) for t in ctx._non_differentiable}
    if requires_grad:
        _connect_inputs(ctx, args, Tensor)
    result = []
    meta = []
    for i, out in enumerate(outs):
        if not isinstance(out, Tensor):
            result.append(out)
            meta.append(_NO_META)
            continue
        if id(out) in dirty:
            _check_inplace(out, requires_grad or out._requires_grad)
            out._bump_version()
        elif any(a is out for a in args):
            out = out._alias()      # returning an input unchanged: a new Tensor, same storage
        if requires_grad and id(out) not in non_diff and out._data.dtype.kind == "f":
            out._grad_fn = ctx
            out._output_nr = i
            out._requires_grad = True
        meta.append((out._data.shape, out._data.dtype, type(out._data) is DeviceArray))
        result.append(out)
    ctx._output_meta = tuple(meta)
    if requires_grad and ctx.to_save is not None:
        ctx._saved = ctx.to_save
        ctx._saved_versions = tuple([t._version_counter.value if t is not None else 0
                                     for t in ctx.to_save])
        ctx.to_save = None
    return tuple(result) if is_tuple else result[0]


_NO_EDGE = (None, 0)
_NO_META = ((), None, False)


def _check_inplace(tensor, records_history):
    """In-place changes the graph cannot account for raise instead of giving wrong gradients."""
    if not (grad_mode.is_grad_enabled() and records_history):
        return
    if tensor._grad_fn is None and tensor._requires_grad:
        raise RuntimeError(_INPLACE_LEAF_ERROR)
    if tensor._base is not None and (tensor._requires_grad or tensor._base._requires_grad):
        raise RuntimeError("in-place operations on a view of a tensor that requires grad are not "
                           "supported by cextend; use the out-of-place op instead")


def once_differentiable(backward):
    """Decorate a backward that is not itself differentiable: it runs with
    history off, and a double backward through its results raises."""
    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        from cextend.tensor import Tensor
        with grad_mode.no_grad():
            result = backward(ctx, *grads)
        history = [g for g in grads if isinstance(g, Tensor) and g._requires_grad]
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
        return result._alias()

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("trying to differentiate twice a function that was marked with "
                           "@once_differentiable")
