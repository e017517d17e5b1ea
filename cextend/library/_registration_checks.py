"""opcheck's torch-derived tests: the op does what its registration says.

test_schema: arguments not in mutates_args are left bit-for-bit unchanged,
declared mutations bump version counters, outputs alias nothing, and the
result has the schema's type.  test_autograd_registration: inputs that
require grad meet an autograd formula whose gradients have the inputs'
shapes and dtypes.  test_faketensor: the fake implementation gives the
kernel's output shapes and dtypes.
"""
import numpy as np

from cextend.autograd import grad as autograd_grad
from cextend.autograd.grad_mode import enable_grad, no_grad
from cextend.library import _samples
from cextend.library._custom_op import aliasing_problem
from cextend.tensor import Tensor


def _snapshots(op, positional):
    return [(name, t, _samples.host(t).tobytes(), t._version) for name, t in op._tensors(positional)]


def check_schema(op, args, kwargs, **_):
    positional, keyword_only = _samples.copy_args(op, args, kwargs)
    before = _snapshots(op, positional)
    kernel = op._kernel(positional)
    with no_grad():
        result = kernel(*positional, **keyword_only)          # the kernel itself: nothing between
    for name, tensor, snapshot, _ in before:
        if name not in op._mutated and _samples.host(tensor).tobytes() != snapshot:
            raise RuntimeError("Argument %s is not defined as mutable but was mutated (%s wrote to %r; add "
                               "%r to mutates_args, or write to a new tensor instead)"
                               % (name, op._qualname, name, name))
    problem = aliasing_problem(op, positional, result)
    if problem:
        raise RuntimeError(problem)
    _check_return_type(op, result)
    positional, keyword_only = _samples.copy_args(op, args, kwargs)
    before = _snapshots(op, positional)
    with no_grad():
        op(*positional, **keyword_only)
    for name, tensor, _, version in before:
        if name in op._mutated and tensor._version == version:
            raise RuntimeError("%s mutates %r but its version counter was not bumped" % (op._qualname, name))


def _check_return_type(op, result):
    returns = op._schema.rsplit("-> ", 1)[1]
    if returns == "()":
        expected_ok = result is None
    elif returns == "Tensor":
        expected_ok = isinstance(result, Tensor)
    elif returns == "Tensor[]":
        expected_ok = isinstance(result, list) and all(isinstance(r, Tensor) for r in result)
    elif returns.startswith("("):
        count = len([p for p in returns.strip("()").split(",") if p.strip()])
        expected_ok = isinstance(result, tuple) and len(result) == count
    else:
        expected_ok = not isinstance(result, (Tensor, tuple, list))
    if not expected_ok:
        raise RuntimeError("%s returned %s, but its schema says it returns %s"
                           % (op._qualname, _describe(result), returns))


def _describe(value):
    if isinstance(value, (tuple, list)):
        return "a %s of %d values" % (type(value).__name__, len(value))
    return "None" if value is None else "a %s" % type(value).__name__


def check_autograd_registration(op, args, kwargs, **_):
    positional, keyword_only = _samples.copy_args(op, args, kwargs)
    needing = _samples.leaves(op, positional)
    if not needing:
        return                  # nothing requires grad: nothing to register (as torch)
    if op._backward_fn is None:
        raise RuntimeError("%s: argument %r requires grad, but the op has no autograd formula, so backward "
                           "through it would fail. Register one with %s.register_autograd(backward, "
                           "setup_context=...), or pass inputs that do not require grad"
                           % (op._qualname, needing[0][0], op.__name__))
    with enable_grad():
        result = op(*positional, **keyword_only)
    outputs = _samples.outputs_of(result)
    floating = [o for o in outputs if o.is_floating_point()]
    recorded = [o for o in floating if o.requires_grad and o.grad_fn is not None]
    if not floating:
        return
    if not recorded:
        raise RuntimeError("%s: no output requires grad although %r does; the call was not recorded for "
                           "autograd" % (op._qualname, needing[0][0]))
    inputs = [t for _, t in needing]
    grads = autograd_grad(recorded, inputs, _samples.grad_outputs_for(recorded), allow_unused=True)
    for (label, tensor), g in zip(needing, grads):
        if g is not None and (tuple(g.shape) != tuple(tensor.shape) or g.dtype != tensor.dtype):
            raise RuntimeError("%s: backward returned a gradient of shape %s and dtype %s for %r, which has "
                               "shape %s and dtype %s" % (op._qualname, tuple(g.shape), g.dtype.name, label,
                                                          tuple(tensor.shape), tensor.dtype.name))
    positional, keyword_only = _samples.copy_args(op, args, kwargs)
    with no_grad():
        quiet = _samples.outputs_of(op(*positional, **keyword_only))
    if any(o.requires_grad for o in quiet):
        raise RuntimeError("%s: under no_grad() an output still requires grad" % op._qualname)


def _poisoned(tensor, _name=None):
    """A copy with the same metadata whose values are garbage: a fake impl must not read them."""
    data = _samples.host(tensor)
    fill = np.nan if data.dtype.kind == "f" else -(2 ** 31) + 7 if data.dtype.kind in "iu" else 0
    array = np.full(data.shape, fill, dtype=data.dtype) if data.dtype.kind in "fiu" else np.array(data)
    return _samples.new_leaf(array, tensor)


def check_faketensor(op, args, kwargs, **_):
    positional, keyword_only = _samples.copy_args(op, args, kwargs)
    with no_grad():
        real = op(*positional, **keyword_only)
    fake_positional = tuple(_samples.map_tensors(v, _poisoned) for v in positional)
    fake_keyword = {n: _samples.map_tensors(v, _poisoned) for n, v in keyword_only.items()}
    fake = op._run_fake(*fake_positional, **fake_keyword)
    _compare_metadata(op, fake, real)


def _compare_metadata(op, fake, real):
    fakes = fake if isinstance(fake, (tuple, list)) else (fake,)
    reals = real if isinstance(real, (tuple, list)) else (real,)
    prefix = "When comparing the output of %s on fake and real tensors, found" % op._qualname
    if len(fakes) != len(reals):
        raise RuntimeError("%s mismatched number of outputs: %d (fake) and %d (real)"
                           % (prefix, len(fakes), len(reals)))
    for i, (f, r) in enumerate(zip(fakes, reals)):
        if isinstance(f, Tensor) != isinstance(r, Tensor):
            raise RuntimeError("%s output %d is %s (fake) but %s (real)" % (prefix, i, _describe(f), _describe(r)))
        if not isinstance(r, Tensor):
            continue
        if tuple(f.shape) != tuple(r.shape):
            raise RuntimeError("%s mismatched tensor metadata for output %d: Shapes %s and %s are not equal!"
                               % (prefix, i, tuple(f.shape), tuple(r.shape)))
        if f.dtype != r.dtype:
            raise RuntimeError("%s mismatched tensor metadata for output %d: Dtypes %s and %s are not equal!"
                               % (prefix, i, f.dtype.name, r.dtype.name))
        if f.device != r.device:
            raise RuntimeError("%s mismatched tensor metadata for output %d: Devices %s and %s are not equal!"
                               % (prefix, i, f.device, r.device))
