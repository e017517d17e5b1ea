"""opcheck's own numeric tests: gradients, memory layouts, determinism.

test_gradcheck: gradcheck (and gradgradcheck where backward is itself
differentiable) in float64; a failure names the argument and the worst
elements as (input index) -> (output index) with numerical and analytical
values.  test_layouts: the sample re-run from transposed and sliced
storage, with a stride-0 (expanded) grad_output, and with zero-size and
size-1 variants the op accepts; every result must equal the contiguous run.
test_determinism: bitwise-equal results over repeated calls and over 1..N
threads.  test_float32: the float32 kernels against the float64 ones on
the same (float32-representable) inputs, to float32's accuracy, and
gradcheck in float32 with tolerances loose enough for its rounding.
"""
import ctypes
import os
import warnings

import numpy as np

from cextend._backend import get_num_threads, set_num_threads
from cextend.autograd import GradcheckError, gradcheck, gradgradcheck
from cextend.autograd import grad as autograd_grad
from cextend.autograd.grad_mode import enable_grad
from cextend.library import _samples
from cextend.tensor import Tensor, _wrap


# -- gradcheck ---------------------------------------------------------------

def _as_float64(tensor, _name=None):
    data = _samples.host(tensor)
    if data.dtype.kind != "f":
        return _samples.copy_tensor(tensor)
    return _samples.new_leaf(np.array(data, dtype=np.float64, order="K"), tensor)


def check_gradcheck(op, args, kwargs, **_):
    positional, keyword_only = _samples.copy_args(op, args, kwargs)
    positional = tuple(_samples.map_tensors(v, _as_float64) for v in positional)
    keyword_only = {n: _samples.map_tensors(v, _as_float64) for n, v in keyword_only.items()}
    needing = _samples.leaves(op, positional)
    if not needing:
        return                  # no input requires grad: nothing to check (as torch)
    if op._backward_fn is None:
        raise RuntimeError("%s: %r requires grad but the op has no autograd formula (register_autograd)"
                           % (op._qualname, needing[0][0]))
    labels = [label for label, _ in needing]
    inputs = [t for _, t in needing]

    def function(*diff):
        replaced = dict(zip(map(id, inputs), diff))
        args = tuple(_samples.map_tensors(v, lambda t, _n=None: replaced.get(id(t), t)) for v in positional)
        result = op(*args, **keyword_only)
        return tuple(o for o in _samples.outputs_of(result) if o.is_floating_point())

    try:
        function(*inputs)
    except Exception as error:
        raise RuntimeError("%s cannot run in float64, which gradcheck needs: %s: %s"
                           % (op._qualname, type(error).__name__, error)) from error
    _run_check(gradcheck, function, inputs, labels, op, "gradcheck")
    if _second_derivatives_apply(function, inputs):
        _run_check(gradgradcheck, function, inputs, labels, op, "gradgradcheck")


def _run_check(check, function, inputs, labels, op, what):
    try:
        check(function, tuple(inputs), raise_exception=True)
    except GradcheckError as error:
        names = ", ".join("input %d is %r" % (j, label) for j, label in enumerate(labels))
        if what == "gradgradcheck":
            names += ", then one grad_output per output"
        raise GradcheckError("%s of %s in float64 failed (%s):\n%s" % (what, op._qualname, names, error)) from None


def _second_derivatives_apply(function, inputs):
    """True if backward is itself differentiable: its gradients carry history that
    reaches an autograd formula (not once_differentiable, not an op without one)."""
    with enable_grad():
        outputs = [o for o in function(*inputs) if o.requires_grad]
        if not outputs:
            return False
        try:
            grads = autograd_grad(outputs, inputs, _samples.grad_outputs_for(outputs), create_graph=True,
                                  allow_unused=True)
            carried = [g for g in grads if g is not None and g.requires_grad]
            if not carried:
                return False
            autograd_grad(carried, inputs, _samples.grad_outputs_for(carried, seed=99), allow_unused=True)
            return True
        except RuntimeError as error:
            text = str(error)
            if "once_differentiable" in text or "no autograd formula was registered" in text:
                return False
            raise


# -- layouts -----------------------------------------------------------------

def _transposed(array):
    """The same values, stored with the dimensions in reverse order."""
    storage = np.empty(array.shape[::-1], dtype=array.dtype)
    view = storage.transpose()
    view[...] = array
    return view, "transposed storage"


def _sliced(array):
    """The same values at every other element of a larger, poisoned buffer."""
    shape = array.shape[:-1] + (2 * array.shape[-1] + 1,)
    poison = np.nan if array.dtype.kind == "f" else (np.iinfo(array.dtype).max if array.dtype.kind in "iu" else 0)
    storage = np.full(shape, poison, dtype=array.dtype)
    view = storage[..., 1::2]
    view[...] = array
    return view, "a slice with step 2 (every other element of a larger buffer)"


def _variants(array):
    if array.ndim >= 2 and array.size > 1:
        yield _transposed(array)
    if array.ndim >= 1 and array.size > 0:
        yield _sliced(array)


def _tensor_slots(op, positional):
    """(label, argument index, list index or None, tensor) for every Tensor argument."""
    slots = []
    for i, (name, value) in enumerate(zip(op._positional, positional)):
        if isinstance(value, Tensor):
            slots.append((name, i, None, value))
        elif isinstance(value, list):
            slots.extend(("%s[%d]" % (name, k), i, k, v) for k, v in enumerate(value) if isinstance(v, Tensor))
    return slots


def _replace(positional, index, list_index, tensor):
    args = list(positional)
    if list_index is None:
        args[index] = tensor
    else:
        args[index] = list(args[index])
        args[index][list_index] = tensor
    return tuple(args)


def _fresh(positional):
    return tuple(_samples.map_tensors(v, _samples.copy_tensor) for v in positional)


def _contiguous_copy(tensor, _name=None):
    data = _samples.host(tensor)
    return _samples.new_leaf(np.ascontiguousarray(data).copy(), tensor)


def _layout_runs(op, positional, keyword_only, atol, rtol, context=""):
    """Every Tensor argument in each other layout must give the contiguous run's results."""
    base = tuple(_samples.map_tensors(v, _contiguous_copy) for v in positional)
    reference = _samples.run(op, _fresh(base), keyword_only)
    for label, index, list_index, tensor in _tensor_slots(op, base):
        data = _samples.host(tensor)
        if not isinstance(tensor._data, np.ndarray):
            continue
        for view, description in _variants(data):
            moved = _samples.new_leaf(view, tensor)
            args = _replace(_fresh(base), index, list_index, moved)
            what = "%r given as %s (shape %s, strides %s)%s" % (
                label, description, tuple(view.shape), tuple(s // view.itemsize for s in view.strides), context)
            try:
                got = _samples.run(op, args, keyword_only)
            except Exception as error:
                raise AssertionError("%s: the op raised %s: %s. An op must accept non-contiguous tensors: "
                                     "call .contiguous() before handing one to C"
                                     % (what, type(error).__name__, error)) from error
            try:
                _samples.compare_runs(reference, got, what, atol, rtol)
            except AssertionError as error:
                raise AssertionError("%s. A kernel that reads a strided tensor as if it were contiguous does "
                                     "this: pass .contiguous() to C, or pass and use the strides"
                                     % error) from None
    return reference


def _expanded_grad_output(op, positional, keyword_only, reference, atol, rtol):
    """Backward with a stride-0 grad_output must match the same values stored contiguously."""
    if reference.grads is None:
        return
    args = _fresh(positional)
    with enable_grad():
        outputs = [o for o in _samples.outputs_of(_samples.call(op, args, keyword_only)) if o.requires_grad]
    rng = np.random.default_rng(7)
    cotangents, contiguous = [], []
    for out in outputs:
        data = _samples.host(out)
        expanded = _expanded(rng.standard_normal((1,) + data.shape[1:]).astype(data.dtype), data.shape)
        cotangents.append(_wrap(expanded))
        contiguous.append(_wrap(np.ascontiguousarray(expanded).copy()))
    expected = _samples.run(op, _fresh(positional), keyword_only, grad_outputs=contiguous)
    got = _samples.run(op, _fresh(positional), keyword_only, grad_outputs=cotangents)
    _samples.compare_runs(expected, got, "backward with an expanded (stride-0) grad_output", atol, rtol)


def _expanded(row, shape):
    """row repeated along dimension 0 with stride 0, as x.expand() makes it.

    The storage behind it is as large as the full shape and poisoned past the
    row, so a kernel that reads it as contiguous gets wrong values, not
    memory it does not own.
    """
    if len(shape) == 0:
        return row.reshape(())
    storage = np.full(max(int(np.prod(shape)), row.size, 1), np.nan if row.dtype.kind == "f" else 0, row.dtype)
    storage[:row.size] = row.ravel()
    strides = (0,) + tuple(s for s in np.empty(row.shape[1:], row.dtype).strides)
    view = np.lib.stride_tricks.as_strided(storage, shape=shape, strides=strides)
    view.flags.writeable = False
    return view


def _shrunk(op, positional, old, new, seed):
    """positional with every dimension of size `old` made `new`, with fresh random values."""
    rng = np.random.default_rng(seed)

    def shrink(tensor, _name=None):
        data = _samples.host(tensor)
        shape = tuple(new if s == old else s for s in data.shape)
        if data.dtype.kind == "f":
            values = rng.standard_normal(shape).astype(data.dtype)
        elif data.dtype.kind in "iu":
            values = np.zeros(shape, data.dtype)        # 0 indexes any non-empty dimension
        else:
            values = np.zeros(shape, data.dtype)
        return _samples.new_leaf(values, tensor)
    return tuple(_samples.map_tensors(v, shrink) for v in positional)


def check_layouts(op, args, kwargs, atol=None, rtol=None, **_):
    positional, keyword_only = _samples.copy_args(op, args, kwargs)
    reference = _layout_runs(op, positional, keyword_only, atol, rtol)
    _expanded_grad_output(op, positional, keyword_only, reference, atol, rtol)
    sizes = sorted({s for _, _, _, t in _tensor_slots(op, positional) for s in _samples.host(t).shape if s > 1})
    for k, old in enumerate(sizes):
        for new in (0, 1):
            small = _shrunk(op, positional, old, new, seed=k * 2 + new)
            try:
                _samples.run(op, _fresh(small), keyword_only)
            except Exception:
                continue        # the op does not accept these shapes; that is its right
            context = " with every dimension of size %d made %d" % (old, new)
            _layout_runs(op, small, keyword_only, atol, rtol, context)


# -- determinism -------------------------------------------------------------

def _openmp():
    """libgomp, if something in this process loaded it (user kernels may use OpenMP)."""
    try:
        lib = ctypes.CDLL("libgomp.so.1", mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        lib.omp_get_max_threads.restype = ctypes.c_int
        return lib
    except (OSError, AttributeError):
        return None


def _set_threads(count, openmp):
    set_num_threads(count)
    if openmp is not None:
        openmp.omp_set_num_threads(ctypes.c_int(count))


def check_determinism(op, args, kwargs, repeats=3, **_):
    positional, keyword_only = _samples.copy_args(op, args, kwargs)
    first = _samples.run(op, _fresh(positional), keyword_only)
    for repeat in range(1, repeats):
        _samples.compare_runs(first, _samples.run(op, _fresh(positional), keyword_only),
                              "repeated call %d with the same inputs" % (repeat + 1))
    openmp = _openmp()
    saved = (get_num_threads(), openmp.omp_get_max_threads() if openmp is not None else None)
    most = min(8, max(4, saved[0]))
    try:
        _set_threads(1, openmp)
        single = _samples.run(op, _fresh(positional), keyword_only)
        for count in range(2, most + 1):
            _set_threads(count, openmp)
            got = _samples.run(op, _fresh(positional), keyword_only)
            try:
                _samples.compare_runs(single, got, "with %d threads (against 1 thread)" % count)
            except AssertionError as error:
                raise AssertionError("%s. Results must be bitwise identical for any thread count: split the "
                                     "work so that each element's reduction order does not depend on how many "
                                     "threads there are" % error) from None
    finally:
        set_num_threads(saved[0])
        if openmp is not None:
            openmp.omp_set_num_threads(ctypes.c_int(saved[1]))


# -- float32 -----------------------------------------------------------------

# float32 results are compared with the float64 run relative to the largest
# value of each tensor: a kernel's rounding grows with its sums, but a wrong
# formula (a 3 for a 2) is off by far more than this.
_FLOAT32_TOLERANCE = 1e-4


def _converter(dtype):
    def convert(tensor, _name=None):
        data = _samples.host(tensor)
        if data.dtype.kind != "f" or not isinstance(tensor._data, np.ndarray):
            return _samples.copy_tensor(tensor)
        return _samples.new_leaf(np.array(data, dtype=dtype, order="K"), tensor)
    return convert


def sample_as(op, args, kwargs, dtype):
    """(positional, keyword_only): fresh copies with every floating tensor converted to dtype."""
    positional, keyword_only = _samples.copy_args(op, args, kwargs)
    convert = _converter(dtype)
    return (tuple(_samples.map_tensors(v, convert) for v in positional),
            {n: _samples.map_tensors(v, convert) for n, v in keyword_only.items()})


def has_floating_tensors(op, args, kwargs):
    positional, keyword_only = _samples.copy_args(op, args, kwargs)
    found = []
    for value in list(positional) + list(keyword_only.values()):
        _samples.map_tensors(value, lambda t, _n=None: found.append(t.is_floating_point()))
    return any(found)


def check_float32(op, args, kwargs, **_):
    """float32 outputs and gradients against float64 ones, then gradcheck in float32.

    An op that refuses float32 inputs (raises) passes: it cannot be silently
    wrong there.  The comparison runs the float64 kernels on the float32
    inputs' exact values, so only the kernels' rounding separates the runs.
    """
    if not has_floating_tensors(op, args, kwargs):
        return
    single = sample_as(op, args, kwargs, np.float32)
    try:
        got = _samples.run(op, *single)
    except Exception:
        return                          # float32 is refused: nothing runs wrong silently
    double = (tuple(_samples.map_tensors(v, _converter(np.float64)) for v in single[0]),
              {n: _samples.map_tensors(v, _converter(np.float64)) for n, v in single[1].items()})
    try:
        reference = _samples.run(op, *double, grad_outputs=_float64_cotangents(op, single))
    except Exception:
        reference = None                # a float32-only op: gradcheck below is its check
    if reference is not None:
        _compare_float32(reference, got, op)
    _gradcheck_float32(op, single)


def _float64_cotangents(op, single):
    """The float32 run's cotangents (grad_outputs_for's fixed ones), in float64."""
    with enable_grad():
        result = _samples.call(op, *sample_as_copies(single))
    outputs = [o for o in _samples.outputs_of(result) if o.requires_grad]
    return [_wrap(_samples.host(g).astype(np.float64)) for g in _samples.grad_outputs_for(outputs)]


def sample_as_copies(sample):
    positional, keyword_only = sample
    return (tuple(_samples.map_tensors(v, _samples.copy_tensor) for v in positional),
            {n: _samples.map_tensors(v, _samples.copy_tensor) for n, v in keyword_only.items()})


def _compare_float32(reference, got, op):
    pairs = [("output %d" % i, r, g) for i, (r, g) in enumerate(zip(reference.outputs, got.outputs))]
    pairs += [("the gradient of %r" % label, r, g)
              for label, r, g in zip(reference.labels, reference.grads or [], got.grads or [])
              if r is not None and g is not None]
    for what, r, g in pairs:
        if r.dtype.kind != "f":
            problem = _samples.first_difference(r, g)
        else:
            scale = float(np.max(np.abs(r[np.isfinite(r)]), initial=0.0)) or 1.0
            problem = _samples.first_difference(r, g.astype(np.float64), atol=_FLOAT32_TOLERANCE * scale,
                                                rtol=_FLOAT32_TOLERANCE)
        if problem:
            raise AssertionError("%s in float32: %s differs from the float64 run on the same values %s "
                                 "(tolerance %g of the largest value): the float32 kernel computes "
                                 "something else" % (op._qualname, what, problem, _FLOAT32_TOLERANCE))


def _gradcheck_float32(op, single):
    positional, keyword_only = sample_as_copies(single)
    needing = _samples.leaves(op, positional)
    if not needing or op._backward_fn is None:
        return
    labels = [label for label, _ in needing]
    inputs = [t for _, t in needing]

    def function(*diff):
        replaced = dict(zip(map(id, inputs), diff))
        args = tuple(_samples.map_tensors(v, lambda t, _n=None: replaced.get(id(t), t)) for v in positional)
        return tuple(o for o in _samples.outputs_of(op(*args, **keyword_only)) if o.is_floating_point())

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)      # "not double precision": known, hence the tolerances
        try:
            gradcheck(function, tuple(inputs), eps=1e-3, atol=1e-2, rtol=1e-2, raise_exception=True)
        except GradcheckError as error:
            names = ", ".join("input %d is %r" % (j, label) for j, label in enumerate(labels))
            raise GradcheckError("gradcheck of %s in float32 (eps 1e-3, atol and rtol 1e-2) failed (%s):\n%s"
                                 % (op._qualname, names, error)) from None
