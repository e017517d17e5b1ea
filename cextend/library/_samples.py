"""Sample arguments for opcheck: copies, re-layouts, runs and bitwise comparisons."""
import numpy as np

from cextend.autograd import grad as autograd_grad
from cextend.autograd.grad_mode import enable_grad, no_grad
from cextend.tensor import Tensor, _wrap


def _tensor_cls():
    return Tensor


def host(tensor):
    """A tensor's values as a numpy array (copied from the device if needed)."""
    data = tensor._data
    return data if isinstance(data, np.ndarray) else np.asarray(data)


def new_leaf(array, like):
    """A fresh leaf over array with like's requires_grad."""
    t = _wrap(array)
    if like.requires_grad and t.is_floating_point():
        t.requires_grad_()
    return t


def map_tensors(value, fn, name=None):
    """value with fn(tensor, name) applied to every Tensor (inside lists too)."""
    Tensor = _tensor_cls()
    if isinstance(value, Tensor):
        return fn(value, name)
    if isinstance(value, list):
        return [map_tensors(v, fn, name) for v in value]
    if isinstance(value, tuple):
        return tuple(map_tensors(v, fn, name) for v in value)
    return value


def copy_tensor(t, _name=None):
    """An independent leaf with the same values, dtype, layout and requires_grad."""
    data = t._data
    if isinstance(data, np.ndarray):
        return new_leaf(np.array(data, copy=True, order="K"), t)
    copy = t.detach().clone()
    return copy.requires_grad_() if t.requires_grad else copy


def copy_args(op, args, kwargs):
    """(positional, keyword_only) bound to op's signature, every Tensor copied."""
    positional, keyword_only = op._bind(args, kwargs or {})
    return (tuple(map_tensors(v, copy_tensor, n) for n, v in zip(op._positional, positional)),
            {n: map_tensors(v, copy_tensor, n) for n, v in keyword_only.items()})


def call(op, positional, keyword_only):
    return op(*positional, **keyword_only)


def outputs_of(result):
    """The Tensor outputs of an op call, as a list."""
    Tensor = _tensor_cls()
    items = result if isinstance(result, (tuple, list)) else (result,)
    return [o for o in items if isinstance(o, Tensor)]


def leaves(op, positional):
    """(label, tensor) for every Tensor argument that requires grad."""
    found = []
    for name, value in zip(op._positional, positional):
        values = value if isinstance(value, list) else [value]
        for k, v in enumerate(values):
            if isinstance(v, _tensor_cls()) and v.requires_grad:
                found.append(("%s[%d]" % (name, k) if isinstance(value, list) else name, v))
    return found


def grad_outputs_for(outputs, seed=1234):
    """A fixed random cotangent per differentiable output."""
    rng = np.random.default_rng(seed)
    return [_wrap(rng.standard_normal(host(o).shape).astype(host(o).dtype)) for o in outputs]


class Run:
    """One call's outputs and gradients as host arrays; labels name the inputs."""

    def __init__(self, outputs, grads, labels):
        self.outputs = outputs
        self.grads = grads          # None: no backward was run
        self.labels = labels


def run(op, positional, keyword_only, grad_outputs=None, backward=True):
    """The Run of one call.

    Gradients are taken with respect to every argument that requires grad,
    with the given cotangents (default: fixed random ones), if the op has
    an autograd formula.
    """
    with enable_grad():
        result = call(op, positional, keyword_only)
    outputs = outputs_of(result)
    arrays = [np.array(host(o)) for o in outputs]
    grads = None
    found_leaves = leaves(op, positional)
    differentiable = [o for o in outputs if o.requires_grad]
    if backward and found_leaves and differentiable and op._backward_fn is not None:
        cotangents = grad_outputs if grad_outputs is not None else grad_outputs_for(differentiable)
        found = autograd_grad(differentiable, [t for _, t in found_leaves], cotangents, allow_unused=True)
        grads = [None if g is None else np.array(host(g)) for g in found]
    return Run(arrays, grads, [label for label, _ in found_leaves])


def first_difference(reference, got, atol=None, rtol=None):
    """None if got equals reference (bitwise, or within atol/rtol if given), else a description."""
    reference, got = np.asarray(reference), np.asarray(got)
    if reference.shape != got.shape:
        return "shape %s where the reference has %s" % (got.shape, reference.shape)
    if reference.dtype != got.dtype:
        return "dtype %s where the reference has %s" % (got.dtype, reference.dtype)
    if atol is None:
        same = (reference == got) | (np.isnan(reference) & np.isnan(got)) if reference.dtype.kind in "fc" \
            else reference == got
        same = same & (np.signbit(reference) == np.signbit(got)) if reference.dtype.kind == "f" else same
    else:
        same = np.isclose(got, reference, atol=atol, rtol=rtol, equal_nan=True)
    if np.all(same):
        return None
    bad = np.argwhere(~same)
    index = tuple(int(i) for i in bad[0])
    text = ("at index %s: %r where the reference has %r (%d of %d elements differ)"
            % (index, got[index].item(), reference[index].item(), len(bad), reference.size))
    if reference.dtype.kind == "f" and _only_rounding(reference, got):
        text += (" by rounding only (a few units in the last place); if the kernel legitimately rounds "
                 "differently here, pass atol and rtol to opcheck")
    return text


def _only_rounding(reference, got):
    """True if every difference is within 64 units in the last place of the largest value."""
    with np.errstate(invalid="ignore"):
        difference = np.abs(reference.astype(np.float64) - got.astype(np.float64))
        scale = np.max(np.abs(reference), initial=0.0)
    return bool(np.all(np.isfinite(difference)) and scale > 0 and
                np.max(difference) <= 64 * np.finfo(reference.dtype).eps * scale)


def compare_runs(reference, got, what, atol=None, rtol=None):
    """Raise AssertionError naming the first output or gradient of got that differs from reference."""
    if len(reference.outputs) != len(got.outputs):
        raise AssertionError("%s: the op returned %d tensors, the reference run %d"
                             % (what, len(got.outputs), len(reference.outputs)))
    for i, (r, g) in enumerate(zip(reference.outputs, got.outputs)):
        problem = first_difference(r, g, atol, rtol)
        if problem:
            raise AssertionError("%s: output %d differs %s" % (what, i, problem))
    for label, r, g in zip(reference.labels, reference.grads or [], got.grads or []):
        if r is None or g is None:
            if (r is None) != (g is None):
                raise AssertionError("%s: the gradient of %r is %s here but %s in the reference run"
                                     % (what, label, "None" if g is None else "defined",
                                        "None" if r is None else "defined"))
            continue
        problem = first_difference(r, g, atol, rtol)
        if problem:
            raise AssertionError("%s: the gradient of %r differs %s" % (what, label, problem))


def no_grad_call(op, positional, keyword_only):
    with no_grad():
        return call(op, positional, keyword_only)
