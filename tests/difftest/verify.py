"""Where torch has no answer, cextend's is checked on its own.

When torch fails one of its own INTERNAL ASSERTs (a torch bug) in a
backward or autograd.grad that cextend runs, there is nothing to compare
with.  The gradients cextend gives (accumulated into leaves' .grad, or
returned by grad for its inputs) are then checked against finite
differences of the same program, run again in cextend: each element is
perturbed right after the statement that made its tensor, the program is
replayed, and the statement's roots are read instead of differentiated.
The objective is sum(root * weight) over the roots the statement passed
(a weight of None is a 1 for a scalar root), so its derivative is the
gradient.

Program data sit on a dyadic grid, so a perturbed element may sit at a
kink (relu at 0, a tie of max): a gradient is accepted when it matches
the central, forward or backward difference.  Where an integer tensor
carries history the program is piecewise constant and nothing is checked.
"""
import numpy as np

_EPS = {"float64": 1e-6, "float32": 1e-2}
_RTOL = {"float64": 1e-5, "float32": 2e-2}
_MAX_ELEMENTS = 6       # per leaf
_MAX_LEAVES = 3


class _Captured(Exception):
    """Raised by the capturing backward or grad: the roots and their weights."""

    def __init__(self, pairs):
        Exception.__init__(self)
        self.pairs = pairs


def _run(statements, ns):
    for stmt in statements:
        try:
            exec(stmt.compiled, ns)
        except Exception:       # noqa: BLE001 -- both libraries raised there: the program went on
            pass


def _named(ns, lib):
    return {name: v for name, v in ns.items()
            if name.startswith("v") and name[1:].isdigit() and isinstance(v, lib.Tensor)}


def _floating(t):
    return str(t.dtype).split(".")[-1] in _EPS


def _array(t):
    return np.array(t.detach().numpy(), dtype=np.float64)


def _as_list(x, tensor_cls):
    return [x] if isinstance(x, tensor_cls) else list(x)


def _objective(lib, stmt, ns):
    """sum(root * weight) of the roots stmt passes to backward (or grad), in float64."""
    tensor_cls, autograd = lib.Tensor, lib.autograd
    original = tensor_cls.backward, autograd.backward, autograd.grad

    def pairs(roots, weights):
        roots = _as_list(roots, tensor_cls)
        weights = [None] * len(roots) if weights is None else _as_list(weights, tensor_cls)
        return list(zip(roots, weights))

    def tensor_backward(self, gradient=None, *args, **kwargs):
        raise _Captured(pairs(self, gradient))

    def autograd_backward(tensors, grad_tensors=None, *args, **kwargs):
        raise _Captured(pairs(tensors, grad_tensors))

    def autograd_grad(outputs, inputs, grad_outputs=None, *args, **kwargs):
        raise _Captured(pairs(outputs, grad_outputs))

    tensor_cls.backward, autograd.backward, autograd.grad = tensor_backward, autograd_backward, autograd_grad
    try:
        exec(stmt.compiled, ns)
    except _Captured as captured:
        total = 0.0
        for root, weight in captured.pairs:
            r = _array(root)
            total += float((r * (np.ones_like(r) if weight is None else _array(weight))).sum())
        return total
    except Exception:       # noqa: BLE001 -- a perturbed program that fails has no value there
        return None
    finally:
        tensor_cls.backward, autograd.backward, autograd.grad = original
    return None


def _replay(lib, namespace, history, stmt, name, index, delta):
    """The objective with `name`'s element `index` moved by delta right after it is made."""
    ns = namespace(lib)
    moved = False
    for s in history:
        try:
            exec(s.compiled, ns)
        except Exception:       # noqa: BLE001 -- as in the session
            pass
        if not moved and name in ns:
            with lib.no_grad():
                flat = ns[name].view(-1)
                flat[index] = flat[index] + delta
            moved = True
    return _objective(lib, stmt, ns)


def _holds_float32(ns, lib):
    return any(str(v.dtype).split(".")[-1] != "float64" for v in _named(ns, lib).values())


def _integer_history(ns, lib):
    """Whether an integer tensor carries history (masked_fill_ gave it a
    value requiring grad): the program is piecewise constant there, while
    the derivative formulas pass the gradient through, so finite
    differences cannot judge it."""
    return any(v.requires_grad and not v.is_floating_point() for v in _named(ns, lib).values())


def is_gradient_statement(code):
    return ".backward(" in code or "autograd.grad(" in code


def _accumulated(lib, ns, stmt):
    """[(name, gradient)] a backward statement accumulated into the named leaves' .grad."""
    leaves = {name: t for name, t in _named(ns, lib).items() if t.is_leaf and t.requires_grad and _floating(t)}
    before = {name: None if t.grad is None else _array(t.grad) for name, t in leaves.items()}
    exec(stmt.compiled, ns)
    out = []
    for name, t in leaves.items():
        if t.grad is not None:
            after = _array(t.grad)
            if before[name] is None or not np.array_equal(before[name], after, equal_nan=True):
                out.append((name, after - (0 if before[name] is None else before[name])))
    return out


def _returned(lib, ns, stmt):
    """[(name, gradient)] an autograd.grad statement returned for its named inputs."""
    autograd, seen = lib.autograd, {}
    original = autograd.grad

    def spy(outputs, inputs, *args, **kwargs):
        result = original(outputs, inputs, *args, **kwargs)
        seen["inputs"], seen["result"] = _as_list(inputs, lib.Tensor), result
        return result
    autograd.grad = spy
    try:
        exec(stmt.compiled, ns)
    finally:
        autograd.grad = original
    names = _named(ns, lib)
    out = []
    for t, g in zip(seen.get("inputs", ()), seen.get("result", ())):
        name = next((n for n, v in names.items() if v is t), None)
        if name is not None and g is not None and _floating(t):
            out.append((name, _array(g)))
    return out


def gradients_hold(lib, namespace, history, stmt):
    """Whether the gradients a backward (or autograd.grad) statement gives
    in cextend (lib) match finite differences of the program; True where
    nothing can be checked (no gradient, or none finite)."""
    ns = namespace(lib)
    _run(history, ns)
    if _integer_history(ns, lib):
        return True
    gather = _returned if "autograd.grad(" in stmt.code else _accumulated
    try:
        gradients = gather(lib, ns, stmt)
    except Exception:       # noqa: BLE001 -- not replayable: nothing to excuse it with
        return False
    # float32 anywhere in the program carries its rounding into the objective
    dtype = "float32" if _holds_float32(ns, lib) else "float64"
    eps, rtol = _EPS[dtype], _RTOL[dtype]
    for name, gradient in gradients[:_MAX_LEAVES]:
        flat = gradient.reshape(-1)
        for index in range(min(flat.size, _MAX_ELEMENTS)):
            if not np.isfinite(flat[index]):
                continue
            values = [_replay(lib, namespace, history, stmt, name, index, d) for d in (0.0, eps, -eps)]
            if any(v is None for v in values) or not np.isfinite(values).all():
                continue
            centre, up, down = values
            estimates = ((up - down) / (2 * eps), (up - centre) / eps, (centre - down) / eps)
            scale = max(1.0, abs(flat[index]), max(abs(e) for e in estimates))
            if not any(abs(flat[index] - e) <= rtol * scale for e in estimates):
                return False
    return True
