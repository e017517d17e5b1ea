"""gradcheck and gradgradcheck: analytical gradients against finite differences.

Same names, keywords and defaults as torch.autograd's.  The slow (default)
mode compares every element of the Jacobian of every differentiable output
with respect to every input that requires grad; fast_mode compares one
random projection u^T J v per pair and falls back to the full comparison
(and its report) when that fails.
"""
import warnings

import numpy as np

from cextend.autograd import engine
from cextend._device import DeviceArray
from cextend._factories import randn
from cextend.tensor import Size, Tensor, _wrap

_WORST_SHOWN = 5


class GradcheckError(RuntimeError):
    """Raised by gradcheck/gradgradcheck when raise_exception=True."""


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _tensor_cls():
    return Tensor


def _differentiable_inputs(inputs):
    Tensor = _tensor_cls()
    return [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]


def _differentiable_outputs(outputs):
    Tensor = _tensor_cls()
    return [o for o in outputs if isinstance(o, Tensor) and o.requires_grad]


def _evaluate(func, inputs):
    """func's floating-point outputs as float64 arrays.

    Grad mode is left as the caller has it (as torch does): func may itself
    differentiate, as gradgradcheck's does.
    """
    Tensor = _tensor_cls()
    outputs = _as_tuple(func(*inputs))
    return [np.array(o._data, dtype=np.float64) for o in outputs
            if isinstance(o, Tensor) and o.is_floating_point()]


def _numerical_jacobians(func, inputs, diff_inputs, output_mask, eps):
    """J[j][i]: (numel of input j, numel of output i), by central differences."""
    jacobians = []
    shapes = [o.shape for o in _evaluate(func, inputs)]
    for x in diff_inputs:
        data = x._data
        rows = None
        for flat in range(data.size):
            index = np.unravel_index(flat, data.shape)
            original = data[index].copy()
            data[index] = original - eps
            minus = _evaluate(func, inputs)
            data[index] = original + eps
            plus = _evaluate(func, inputs)
            data[index] = original
            _check_perturbed_shapes(minus, plus, shapes, eps, tuple(int(i) for i in index))
            diffs = [((p - m) / (2 * eps)).ravel() for p, m, keep in zip(plus, minus, output_mask) if keep]
            if rows is None:
                rows = [np.zeros((data.size, d.size)) for d in diffs]
            for row, d in zip(rows, diffs):
                row[flat] = d
        if rows is None:    # an empty input: no perturbations, empty Jacobians
            rows = [np.zeros((0, o.size)) for o, keep in zip(_evaluate(func, inputs), output_mask) if keep]
        jacobians.append(rows)
    return jacobians


def _check_perturbed_shapes(minus, plus, shapes, eps, index=None):
    """Finite differences mean nothing where a perturbation changes an
    output's shape (func depends on its inputs' values that way): raise, as
    torch's gradcheck does, rather than subtract misaligned outputs."""
    where = "" if index is None else " on index %s" % (index,)
    for m, p, shape in zip(minus, plus, shapes):
        if m.shape != p.shape:
            raise AssertionError("Expected `func` to return outputs with the same shape when inputs are "
                                 "perturbed%s by %s, but got: shapes %s and %s."
                                 % (where, eps, _size(m.shape), _size(p.shape)))
        if m.shape != shape:
            raise RuntimeError("Expected `func` to return outputs of the same shape with and without "
                               "perturbing its inputs%s by %s, but got: shapes %s unperturbed and %s "
                               "perturbed." % (where, eps, _size(shape), _size(m.shape)))


def _size(shape):
    return Size(shape)


def _analytical_jacobians(outputs, diff_inputs, check_grad_dtypes):
    """J[j][i] filled column by column: one backward per output element."""
    jacobians = [[np.zeros((x.numel(), o.numel())) for o in outputs] for x in diff_inputs]
    for i, out in enumerate(outputs):
        for r in range(out.numel()):
            onehot = np.zeros(out._data.size, out._data.dtype)
            onehot[r] = 1
            grads = engine.grad(out, diff_inputs, grad_outputs=_like(onehot.reshape(out._data.shape), out),
                                retain_graph=True, allow_unused=True)
            for j, (x, g) in enumerate(zip(diff_inputs, grads)):
                if g is None:
                    continue
                if check_grad_dtypes and g.dtype != x.dtype:
                    raise GradcheckError("Gradient has dtype mismatch: input %d is %s but its gradient "
                                         "is %s" % (j, x.dtype.name, g.dtype.name))
                jacobians[j][i][:, r] = np.asarray(g._data, np.float64).ravel()
    return jacobians


def _like(array, tensor):
    """A host array as a Tensor on `tensor`'s device (gradcheck perturbs and
    builds cotangents on the host, then copies them over)."""
    return _wrap(DeviceArray.from_host(array) if tensor.is_cuda else array)


def _mismatch_report(i, j, numerical, analytical, atol, rtol, x, out):
    error = np.abs(analytical - numerical)
    allowed = atol + rtol * np.abs(numerical)
    failed = ~(error <= allowed)            # NaN counts as a failure
    excess = np.where(failed, np.nan_to_num(error - allowed, nan=np.inf), -np.inf)
    worst = np.argsort(excess, axis=None)[::-1][:min(_WORST_SHOWN, int(failed.sum()))]
    lines = ["Jacobian mismatch for output %d with respect to input %d," % (i, j),
             "%d of %d Jacobian elements differ by more than atol + rtol * |numerical| "
             "(atol=%g, rtol=%g)." % (failed.sum(), failed.size, atol, rtol),
             "Worst elements (input index -> output index): numerical, analytical, abs error, allowed:"]
    for flat in worst:
        row, col = np.unravel_index(flat, numerical.shape)
        lines.append("  %s -> %s: %.10g, %.10g, %.3g, %.3g" % (
            tuple(int(v) for v in np.unravel_index(row, x.shape)),
            tuple(int(v) for v in np.unravel_index(col, out.shape)),
            numerical[row, col], analytical[row, col], error[row, col], allowed[row, col]))
    if numerical.size <= 64:
        lines.append("numerical:%s" % np.array2string(numerical, precision=6, separator=", "))
        lines.append("analytical:%s" % np.array2string(analytical, precision=6, separator=", "))
    if x._data.dtype != np.float64:
        lines.append("Hint: input %d is %s; finite differences with eps are too coarse below float64. "
                     "Run gradcheck on float64 inputs (.double())." % (j, x.dtype.name))
    return "\n".join(lines)


def _fail(message, raise_exception):
    if raise_exception:
        raise GradcheckError(message)
    return False


def _check_undefined_grad(func, inputs, diff_inputs):
    """Backward must treat an undefined (None) output gradient as zero."""
    outputs = _differentiable_outputs(_as_tuple(func(*inputs)))
    for i, out in enumerate(outputs):
        roots = [(e, None) for e in [engine.gradient_edge(out)]]
        edges = [engine.gradient_edge(x) for x in diff_inputs]
        grads = engine.execute(roots, retain_graph=True, create_graph=False, capture=edges)
        for j, g in enumerate(grads):
            if g is not None and np.any(np.asarray(g._data) != 0):
                return ("Expected backward function to handle undefined output grads: with output %d's "
                        "gradient undefined, input %d's gradient is not zero" % (i, j))
    return None


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False, check_forward_ad=False,
              check_backward_ad=True, fast_mode=False, masked=None):
    """Check the gradients of func at inputs against central finite differences.

    Returns True; on a mismatch raises GradcheckError (or returns False with
    raise_exception=False) with a report of the worst elements.
    """
    for flag, name in ((check_batched_grad, "check_batched_grad"),
                       (check_batched_forward_grad, "check_batched_forward_grad"),
                       (check_forward_ad, "check_forward_ad")):
        if flag:
            raise NotImplementedError("cextend's gradcheck has no forward-mode or batched gradients; "
                                      "%s=True is not supported" % name)
    inputs = _as_tuple(inputs)
    diff_inputs = _differentiable_inputs(inputs)
    if not diff_inputs:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none "
                         "of them have requires_grad=True.")
    for j, x in enumerate(diff_inputs):
        if x._data.dtype != np.float64:
            warnings.warn("Input #%d requires gradient and is not a double precision floating point. "
                          "This check will likely fail if all the inputs are not of double precision "
                          "floating point." % j, stacklevel=2)
    if not check_backward_ad:
        return True
    if fast_mode and _fast_check(func, inputs, diff_inputs, eps, atol, rtol, nondet_tol):
        problem = _check_undefined_grad(func, inputs, diff_inputs) if check_undefined_grad else None
        return _fail(problem, raise_exception) if problem else True
    return _slow_check(func, inputs, diff_inputs, eps, atol, rtol, raise_exception, nondet_tol,
                       check_undefined_grad, check_grad_dtypes)


def _slow_check(func, inputs, diff_inputs, eps, atol, rtol, raise_exception, nondet_tol,
                check_undefined_grad, check_grad_dtypes):
    Tensor = _tensor_cls()
    all_outputs = [o for o in _as_tuple(func(*inputs)) if isinstance(o, Tensor) and o.is_floating_point()]
    output_mask = [o.requires_grad for o in all_outputs]
    outputs = [o for o in all_outputs if o.requires_grad]
    numerical = _numerical_jacobians(func, inputs, diff_inputs, output_mask if outputs else
                                     [True] * len(all_outputs), eps)
    if not outputs:
        for j, rows in enumerate(numerical):
            for i, n in enumerate(rows):
                if np.any(np.abs(n) > atol):
                    return _fail("Numerical gradient for function expected to be zero: output %d does "
                                 "not require grad, but depends on input %d" % (i, j), raise_exception)
        return True
    analytical = _analytical_jacobians(outputs, diff_inputs, check_grad_dtypes)
    for j, x in enumerate(diff_inputs):
        for i, out in enumerate(outputs):
            n, a = numerical[j][i], analytical[j][i]
            if not np.all(np.abs(a - n) <= atol + rtol * np.abs(n)):
                return _fail(_mismatch_report(i, j, n, a, atol, rtol, x, out), raise_exception)
    repeat = _analytical_jacobians(_differentiable_outputs(_as_tuple(func(*inputs))), diff_inputs,
                                   check_grad_dtypes)
    for j in range(len(diff_inputs)):
        for i in range(len(outputs)):
            spread = np.max(np.abs(repeat[j][i] - analytical[j][i]), initial=0.0)
            if not spread <= nondet_tol:
                return _fail("Backward is not reentrant, i.e., running backward with same input and "
                             "grad_output multiple times gives different values, although analytical "
                             "gradient matches numerical gradient. The tolerance for nondeterminism was "
                             "%g; output %d, input %d differ by %g." % (nondet_tol, i, j, spread),
                             raise_exception)
    if check_undefined_grad:
        problem = _check_undefined_grad(func, inputs, diff_inputs)
        if problem:
            return _fail(problem, raise_exception)
    return True


def _fast_check(func, inputs, diff_inputs, eps, atol, rtol, nondet_tol):
    """True when u^T J v agrees with finite differences along v for every pair."""
    rng = np.random.default_rng(0)
    outputs = _differentiable_outputs(_as_tuple(func(*inputs)))
    if not outputs:
        return False
    Tensor = _tensor_cls()
    keep = [isinstance(o, Tensor) and o.requires_grad
            for o in _as_tuple(func(*inputs)) if isinstance(o, Tensor) and o.is_floating_point()]
    shapes = [o.shape for o in _evaluate(func, inputs)]
    for x in diff_inputs:
        v = rng.standard_normal(x._data.shape)
        v /= max(np.linalg.norm(v), 1e-300)
        original = np.array(x._data, copy=True)      # a host copy, also of a device tensor
        x._data[...] = original - eps * v
        minus = _evaluate(func, inputs)
        x._data[...] = original + eps * v
        plus = _evaluate(func, inputs)
        x._data[...] = original
        _check_perturbed_shapes(minus, plus, shapes, eps)
        minus = [m for m, k in zip(minus, keep) if k]
        plus = [p for p, k in zip(plus, keep) if k]
        for out, p, m in zip(outputs, plus, minus):
            u = rng.standard_normal(out._data.shape)
            u /= max(np.linalg.norm(u), 1e-300)
            numerical = float(np.sum(u * (p - m) / (2 * eps)))
            values = []
            for _ in range(2):
                g, = engine.grad(out, [x], grad_outputs=_like(u.astype(out._data.dtype), out),
                                 retain_graph=True, allow_unused=True)
                values.append(0.0 if g is None else float(np.sum(np.asarray(g._data, np.float64) * v)))
            if abs(values[0] - values[1]) > nondet_tol:
                return False
            if not abs(values[0] - numerical) <= atol + rtol * abs(numerical):
                return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False, masked=False):
    """gradcheck of the gradients: checks second derivatives of func.

    grad_outputs default to random float64 tensors that require grad, so
    the derivatives with respect to them are checked too.
    """
    if check_fwd_over_rev:
        raise NotImplementedError("cextend has no forward-mode AD; check_fwd_over_rev=True is not supported")
    inputs = _as_tuple(inputs)
    outputs = _differentiable_outputs(_as_tuple(func(*inputs)))
    if grad_outputs is None:
        grad_outputs = []
        for out in outputs:
            g = randn(out.shape, dtype=out.dtype)
            if gen_non_contig_grad_outputs and g.dim() >= 1 and g.numel() > 1:
                g = randn(tuple(out.shape) + (2,), dtype=out.dtype)[..., 0]
            grad_outputs.append(g.requires_grad_())
    grad_outputs = _as_tuple(grad_outputs)
    count = len(inputs)

    def first_derivatives(*args):
        primal, cotangents = args[:count], args[count:]
        outs = _differentiable_outputs(_as_tuple(func(*primal)))
        grads = engine.grad(outs, _differentiable_inputs(primal), cotangents,
                            create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    if not check_rev_over_rev:
        return True
    return gradcheck(first_derivatives, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad, check_grad_dtypes=check_grad_dtypes,
                     fast_mode=fast_mode)
