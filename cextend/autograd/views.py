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
from cextend.autograd.graph import Node, gradient_edge

# How a view came to be: rules for modifying it in place later.
DEFAULT = 0
NO_GRAD_MODE = 1        # made while grad mode was off
MULTI_OUTPUT = 2        # one of several views returned by one op (split, chunk, unbind)
IN_CUSTOM_FUNCTION = 3  # made inside a custom Function's forward and returned

_NO_EDGE = (None, 0)


def make_view(base, array, view_fn, multi_output=None):
    """A Tensor for `array`, a view into base's storage made by the op that
    view_fn replays.  multi_output: the op's name when it returns several views."""
    from cextend.tensor import _wrap
    out = _wrap(array)
    out._version_counter = base._version_counter
    root = base._base
    if root is None:
        out._base = base
        out._view_fn = view_fn
        meta = DEFAULT
    else:
        out._base = root
        parent_fn = base._view_fn
        out._view_fn = (lambda t: view_fn(parent_fn(t))) if parent_fn is not None else view_fn
        meta = base._creation_meta
    if not grad_mode.is_grad_enabled():
        meta = meta or NO_GRAD_MODE
        # torch: a view made without grad mode of a tensor that requires
        # grad still reports requires_grad (and has no grad_fn).
        out._requires_grad = base.requires_grad
    elif multi_output is not None:
        meta = meta or MULTI_OUTPUT
        out._creation_meta_op = multi_output
    out._creation_meta = meta
    out._grad_fn_version = out._version_counter[0]
    return out


def regenerate(view):
    """Rebuild a view's grad_fn from its base's current history."""
    view._grad_fn_version = view._version_counter[0]
    if view._creation_meta == NO_GRAD_MODE:
        return
    base = view._base
    if not base.requires_grad:
        view._grad_fn = None
        return
    with grad_mode.enable_grad():
        replay = view._view_fn(base)
    view._grad_fn = replay._grad_fn
    view._output_nr = replay._output_nr
    view._requires_grad = True


def check_inplace(tensor, requires_grad):
    """torch's checks before an in-place op that will record history."""
    if not (requires_grad and grad_mode.is_grad_enabled()):
        return
    if tensor._view_fn is not None:
        meta = tensor._creation_meta
        if meta == NO_GRAD_MODE:
            raise RuntimeError(
                "A view was created in no_grad mode and is being modified inplace with grad mode "
                "enabled. Given that this use case is ambiguous and error-prone, it is forbidden. "
                "You can clarify your code by moving both the view and the inplace either both "
                "inside the no_grad block (if you don't want the inplace to be tracked) or both "
                "outside (if you want the inplace to be tracked).")
        if meta == MULTI_OUTPUT:
            raise RuntimeError(
                "Output 0 of %s is a view and is being modified inplace. This view is the output of "
                "a function that returns multiple views. Such functions do not allow the output "
                "views to be modified inplace. You should replace the inplace operation by an "
                "out-of-place one." % getattr(tensor, "_creation_meta_op", "a view op"))
        if meta == IN_CUSTOM_FUNCTION:
            raise RuntimeError(
                "%s is a view and is being modified inplace. This view was created inside a custom "
                "Function (or because an input was returned as-is) and the autograd logic to handle "
                "view+inplace would override the custom backward associated with the custom "
                "Function, leading to incorrect gradients. This behavior is forbidden. You can fix "
                "this by cloning the output of the custom Function."
                % getattr(tensor, "_creation_meta_op", "Output 0"))
        base = tensor._base
        if base._grad_fn is None and base._requires_grad:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
    elif tensor._grad_fn is None and tensor._requires_grad:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")


def rebase_history(tensor, node, output_nr=0):
    """After an in-place op recorded as `node`, `tensor` (or its base) takes that history."""
    if tensor._view_fn is None:
        tensor._grad_fn = node
        tensor._output_nr = output_nr
        tensor._requires_grad = True
        return
    base = tensor._base
    copy_slices = CopySlices(base, tensor, node)
    base._grad_fn = copy_slices
    base._output_nr = 0
    base._requires_grad = True
    tensor._grad_fn_version = -1     # rebuilt from the base on next use
    tensor._requires_grad = True


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
        self.next_functions = (gradient_edge(base) or _NO_EDGE,) + tuple(fn.next_functions[1:])
        self._input_meta = ((base._data.shape, base._data.dtype),) + tuple(fn._input_meta[1:])

    def name(self):
        return "CopySlices"

    def apply(self, grads):
        from cextend.autograd.engine import fit_gradient
        if grads[0] is None:
            return (None,) * len(self.next_functions)
        result = grads[0].clone()
        region = self.view_fn(result)
        results = self.fn.apply([region.clone()])
        first = results[0] if results else None
        if first is None:
            region.zero_()
        else:
            region.copy_(fit_gradient(self.fn, 0, first, self.view_meta))
        return (result,) + tuple(results[1:])

    def _release(self):
        self.fn._release()
