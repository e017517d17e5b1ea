"""Views and in-place changes: how history is rewritten when storage is shared.

A view (x[1:], x.t(), x.view(...)) shares its base's storage and version
counter.  It remembers its root base and `view_fn`, a function that
replays the chain of view ops from the base, differentiably.

An in-place op on a view changes the base's values too, so it rewrites
the *base's* history (torch's rebase_history): the base's grad_fn becomes
a CopySlices node, which sends the base's old gradient around the view's
region and the region's gradient through the in-place op's backward.
Every other view of that base then has a stale grad_fn; it is rebuilt by
replaying view_fn on the base the next time it is needed (the version
counter tells).  The checks that torch makes before such a rewrite live
here too, with torch's messages.
"""
from cextend.autograd import grad_mode
from cextend.autograd.graph import FREED_MESSAGE, Node, gradient_edge
from cextend.tensor import Tensor, _wrap
from cextend._memory_format import contiguous_format
from cextend._overlap import SELF_OVERLAP_MESSAGE
from cextend.autograd.engine import fit_gradient

# How a view came to be: rules for modifying it in place later.
DEFAULT = 0
NO_GRAD_MODE = 1        # made while grad mode was off
MULTI_OUTPUT = 2        # one of several views returned by one op (split, chunk, unbind)
IN_CUSTOM_FUNCTION = 3  # made inside a custom Function's forward and returned

_NO_EDGE = (None, 0)


def make_view(base, array, view_fn, multi_output=None):
    """A Tensor for `array`, a view into base's storage made by the op that
    view_fn replays.  multi_output: "Output i of Op" when the op returns
    several views (split, chunk, unbind)."""
    out = _wrap(array)
    out._version_counter = base._version_counter
    root = base._base
    if root is None:
        out._base = base
        out._view_fn = view_fn
        parent = DEFAULT
    else:
        out._base = root
        parent_fn = base._view_fn
        out._view_fn = (lambda t: view_fn(parent_fn(t))) if parent_fn is not None else view_fn
        parent = base._creation_meta
        if parent != DEFAULT:
            out._creation_meta_op = base._creation_meta_op
    # torch's propagate_creation_meta: the newest restriction wins.
    if not grad_mode.is_grad_enabled():
        meta = NO_GRAD_MODE
    elif multi_output is not None:
        meta = MULTI_OUTPUT
        out._creation_meta_op = multi_output
    else:
        meta = parent
    if meta != DEFAULT:
        out._creation_meta = meta
    out._grad_fn_version = out._version_counter[0]
    return out


def _refusal(tensor, indirect):
    """torch's handle_view_on_rebase message for a view it will not rebase."""
    meta = tensor._creation_meta
    what = "its base or another view of its base has been" if indirect else "is being"
    name = tensor._creation_meta_op or "Output 0 of a view op"
    if meta == NO_GRAD_MODE or tensor._grad_fn is None:
        message = "A view was created in no_grad mode and %s modified inplace with grad mode enabled." % what
    else:
        message = "%s is a view and %s modified inplace." % (name, what)
    if meta == MULTI_OUTPUT:
        message += (" This view is the output of a function that returns multiple views. Such functions "
                    "do not allow the output views to be modified inplace. You should replace the "
                    "inplace operation by an out-of-place one.")
    elif meta == NO_GRAD_MODE:
        message += (" Given that this use case is ambiguous and error-prone, it is forbidden. You can "
                    "clarify your code by moving both the view and the inplace either both inside the "
                    "no_grad block (if you don't want the inplace to be tracked) or both outside (if "
                    "you want the inplace to be tracked).")
    else:
        message += (" This view was created inside a custom Function (or because an input was returned "
                    "as-is) and the autograd logic to handle view+inplace would override the custom "
                    "backward associated with the custom Function, leading to incorrect gradients. "
                    "This behavior is forbidden. You can fix this by cloning the output of the custom "
                    "Function.")
    return RuntimeError(message)


def _current_grad_fn(self):
    """Tensor._current_grad_fn: grad_fn, rebuilt first if this view's base
    changed in place (defined here, with the view machinery it runs)."""
    if self._view_fn is not None and self._grad_fn_version != self._version_counter[0]:
        regenerate(self)
    return self._grad_fn


Tensor._current_grad_fn = _current_grad_fn


def regenerate(view):
    """Rebuild a view's grad_fn from its base's current history (the base,
    or another view of it, was modified in place)."""
    base = view._base
    if view._grad_fn is None and not base.requires_grad:
        return
    if view._creation_meta != DEFAULT:
        raise _refusal(view, indirect=True)
    view._grad_fn_version = view._version_counter[0]
    old_fn, old_nr = view._grad_fn, view._output_nr
    if not base.requires_grad or base._data.dtype.kind not in "fV":
        # torch regenerates the view's AsStridedBackward all the same, with
        # the base's gradient edge: absent (the base stopped requiring grad),
        # or into an integer base (fill_ gave it a value requiring grad), where
        # no gradient is defined.  The view keeps a grad_fn; nothing flows.
        view._grad_fn = AsStridedBackward0(base)
        view._output_nr = 0
        view._requires_grad = True
    else:
        with grad_mode.enable_grad():
            replay = view._view_fn(base)
        view._grad_fn = replay._grad_fn
        view._output_nr = replay._output_nr
        view._requires_grad = True
    move_retained(view, old_fn, old_nr)


def move_retained(tensor, old_fn, old_nr):
    """retain_grad() follows a tensor to its new grad_fn (as torch moves the hook)."""
    if not tensor._retains_grad or tensor._grad_fn is None:
        return
    if old_fn is not None and old_fn._retained:
        refs = old_fn._retained.get(old_nr, [])
        refs[:] = [ref for ref in refs if ref() is not tensor]
    tensor._grad_fn._retain(tensor._output_nr, tensor)


def check_inplace(tensor, requires_grad):
    """torch's checks before an in-place op that will record history."""
    if not (requires_grad and grad_mode.is_grad_enabled()):
        return
    if tensor._view_fn is not None:
        if tensor._creation_meta != DEFAULT:
            raise _refusal(tensor, indirect=False)
        base = tensor._base
        if tensor.requires_grad and base._grad_fn is None:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
    elif tensor._grad_fn is None and tensor._requires_grad:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")


def rebase_history(tensor, node, output_nr=0):
    """After an in-place op recorded as `node`, `tensor` (or its base) takes that history."""
    if tensor._view_fn is None:
        old_fn, old_nr = tensor._grad_fn, tensor._output_nr
        tensor._grad_fn = node
        tensor._output_nr = output_nr
        tensor._requires_grad = True
        move_retained(tensor, old_fn, old_nr)
        return
    base = tensor._base
    copy_slices = CopySlices(base, tensor, node)
    old_fn, old_nr = base._grad_fn, base._output_nr
    base._grad_fn = copy_slices
    base._output_nr = 0
    base._requires_grad = True
    move_retained(base, old_fn, old_nr)
    tensor._grad_fn_version = -1     # rebuilt from the base on next use
    tensor._requires_grad = True


class AsStridedBackward0(Node):
    """A view's grad_fn regenerated where no gradient can reach its base:
    the base stopped requiring grad (base.detach_(), then an in-place op),
    or is an integer tensor.  torch's AsStridedBackward0, passing nothing on."""

    def __init__(self, base):
        super().__init__()
        self.next_functions = ((gradient_edge(base) or _NO_EDGE) if base.requires_grad else _NO_EDGE,)
        self._input_meta = ((base._data.shape, base._data.dtype),)

    def apply(self, grads):
        return (None,)


def _clone_in_order(g, order):
    """A (differentiable) copy of g laid out with dims `order` slowest first."""
    import numpy as np
    data = g._data
    if type(data) is not np.ndarray or order == tuple(range(data.ndim)):
        return g.clone(memory_format=contiguous_format)
    inverse = tuple(np.argsort(order))
    return g.permute(*order).clone(memory_format=contiguous_format).permute(*inverse)


class CopySlices(Node):
    """The base's grad_fn after an in-place op `fn` on one of its views.

    Gradient of the base's new value, G: outside the view's region it is
    the gradient of the base's old value; inside, it goes through fn's
    backward, whose first result is the gradient of the view's old value
    (written back into the region) and whose others go to fn's other inputs.
    """

    def __init__(self, base, view, fn):
        super().__init__()
        self.view_fn = view._view_fn
        self.fn = fn
        self.view_meta = (view._data.shape, view._data.dtype)
        # the base's dim order (slowest first): the gradient buffer is laid out
        # like the base, so replaying the view ops on it gives views, not copies
        strides = base._data.strides if hasattr(base._data, "strides") else ()
        self.base_order = tuple(sorted(range(len(strides)), key=lambda d: -abs(strides[d])))
        # torch's CopySlices makes the base's gradient buffer with the base's
        # strides: an expanded base (stride 0) then refuses the copy into it
        shape = base._data.shape
        self.base_overlaps = (0 not in shape) and any(st == 0 and n > 1 for st, n in zip(strides, shape))
        self.next_functions = (gradient_edge(base) or _NO_EDGE,) + tuple(fn.next_functions[1:])
        self._input_meta = ((base._data.shape, base._data.dtype),) + tuple(fn._input_meta[1:])

    def name(self):
        return "torch::autograd::CopySlices"     # torch's name(); its repr says CopySlices

    def apply(self, grads):
        if self.fn is None:
            raise RuntimeError(FREED_MESSAGE)
        if grads[0] is None:
            return (None,) * len(self.next_functions)
        if self.base_overlaps:
            raise RuntimeError(SELF_OVERLAP_MESSAGE)
        result = _clone_in_order(grads[0], self.base_order)
        region = self.view_fn(result)
        wanted = self._wanted
        if wanted is None:
            results = self.fn.apply([region.clone()])
        else:
            # fn computes the region's gradient always (its edge 0 is the view's old history),
            # its other inputs' as this node is asked for them
            self.fn._wanted = wanted | {self.fn.next_functions[0][0]}
            try:
                results = self.fn.apply([region.clone()])
            finally:
                del self.fn._wanted
        first = results[0] if results else None
        if first is None:
            region.zero_()
        else:
            region.copy_(fit_gradient(self.fn, 0, first, self.view_meta))
        return (result,) + tuple(results[1:])

    # Run with none of its outputs wanted (backward(inputs=[base])), torch's
    # CopySlices calls fn but copies nothing into the region: a builtin fn
    # then only reads its saved tensors, and an expanded region is no error.
    @property
    def computes_unwanted_outputs(self):
        return self.fn is not None and self.fn.computes_unwanted_outputs

    def _unpack_saved(self):
        if self.fn is None:
            raise RuntimeError(FREED_MESSAGE)
        self.fn._unpack_saved()

    def _release(self):
        # as torch's CopySlices: a second backward through it raises
        if self.fn is not None:
            self.fn._release()
            self.fn = None


def forget_base(t):
    """t, a view of a fresh intermediate nobody else holds, made a tensor of
    its own: where torch reshapes its result in place (squeeze_ after a
    matmul with a vector, conv1d's squeeze), the result is no view and
    detach_() works on it."""
    t._base = None
    t._view_fn = None
    t._creation_meta = DEFAULT
    # the version counter stays shared: where the intermediate is saved
    # (max pooling's indices), torch saved this very tensor, and an
    # in-place change to it must show there
    return t
