"""Where torch has no answer, cextend's is checked on its own.

When torch fails one of its own INTERNAL ASSERTs (a torch bug) in a
backward that cextend runs, there is nothing to compare with.  The
gradients cextend accumulated are then checked against finite differences
of the same program, run again in cextend: each leaf element whose .grad
the statement changed is perturbed right after the statement that made
the leaf, the program is replayed, and the backward's roots are read
instead of differentiated.  The objective is sum(root * grad_tensor) over
the roots the statement passed (a grad_tensor of None is a 1 for a
scalar root), so its derivative is what backward accumulates.

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
    """Raised by the capturing backward: the roots and their weights."""

    def __init__(self, pairs):
        Exception.__init__(self)
        self.pairs = pairs


def _run(statements, ns):
    for stmt in statements:
        exec(stmt.compiled, ns)


def _leaves(ns, lib):
    """name -> leaf tensor requiring grad, for the program's named values."""
    out = {}
    for name, value in ns.items():
        if name.startswith("v") and name[1:].isdigit() and isinstance(value, lib.Tensor) and value.is_leaf \
                and value.requires_grad and str(value.dtype).split(".")[-1] in _EPS:
            out[name] = value
    return out


def _grads(leaves):
    return {name: None if t.grad is None else np.array(t.grad.detach().numpy(), dtype=np.float64)
            for name, t in leaves.items()}


def _objective(lib, stmt, ns):
    """sum(root * grad_tensor) of the roots stmt passes to backward, in float64."""
    tensor_cls, autograd = lib.Tensor, lib.autograd
    original = tensor_cls.backward, autograd.backward

    def tensor_backward(self, gradient=None, *args, **kwargs):
        raise _Captured([(self, gradient)])

    def autograd_backward(tensors, grad_tensors=None, *args, **kwargs):
        tensors = [tensors] if isinstance(tensors, tensor_cls) else list(tensors)
        grads = [None] * len(tensors) if grad_tensors is None else (
            [grad_tensors] if isinstance(grad_tensors, tensor_cls) else list(grad_tensors))
        raise _Captured(list(zip(tensors, grads)))

    tensor_cls.backward, autograd.backward = tensor_backward, autograd_backward
    try:
        exec(stmt.compiled, ns)
    except _Captured as captured:
        total = 0.0
        for root, weight in captured.pairs:
            r = np.asarray(root.detach().numpy(), dtype=np.float64)
            w = np.ones_like(r) if weight is None else np.asarray(weight.detach().numpy(), dtype=np.float64)
            total += float((r * w).sum())
        return total
    finally:
        tensor_cls.backward, autograd.backward = original
    return None


def _replay(lib, namespace, history, stmt, leaf_name, index, delta):
    """The objective with leaf_name's element `index` moved by delta when it is made."""
    ns = namespace(lib)
    moved = False
    for s in history:
        exec(s.compiled, ns)
        if not moved and leaf_name in ns:
            with lib.no_grad():
                flat = ns[leaf_name].view(-1)
                flat[index] = flat[index] + delta
            moved = True
    return _objective(lib, stmt, ns)


def _holds_float32(ns, lib):
    return any(isinstance(v, lib.Tensor) and str(v.dtype).split(".")[-1] != "float64"
               for name, v in ns.items() if name.startswith("v") and name[1:].isdigit())


def _integer_history(ns, lib):
    """Whether an integer tensor carries history (masked_fill_ gave it a
    value requiring grad): the program is piecewise constant there, while
    the derivative formulas pass the gradient through, so finite
    differences cannot judge it."""
    return any(isinstance(v, lib.Tensor) and v.requires_grad and not v.is_floating_point()
               for name, v in ns.items() if name.startswith("v") and name[1:].isdigit())


def is_backward(code):
    return ".backward(" in code and "autograd.grad(" not in code


def gradients_hold(lib, namespace, history, stmt):
    """Whether the .grad a backward statement accumulates in cextend (lib)
    matches finite differences of the program; True where nothing can be
    checked (no leaf's .grad changed, or no finite gradient)."""
    ns = namespace(lib)
    _run(history, ns)
    leaves = _leaves(ns, lib)
    before = _grads(leaves)
    try:
        exec(stmt.compiled, ns)
    except Exception:       # noqa: BLE001 -- not replayable: the session's outcome stands
        return False
    if _integer_history(ns, lib):
        return True
    after = _grads(leaves)
    changed = [name for name in leaves if after[name] is not None and
               (before[name] is None or not np.array_equal(before[name], after[name], equal_nan=True))]
    # float32 anywhere in the program carries its rounding into the objective
    dtype = "float32" if _holds_float32(ns, lib) else "float64"
    eps, rtol = _EPS[dtype], _RTOL[dtype]
    for name in changed[:_MAX_LEAVES]:
        delta = (after[name] - (0 if before[name] is None else before[name])).reshape(-1)
        for index in range(min(delta.size, _MAX_ELEMENTS)):
            if not np.isfinite(delta[index]):
                continue
            centre = _replay(lib, namespace, history, stmt, name, index, 0.0)
            up = _replay(lib, namespace, history, stmt, name, index, eps)
            down = _replay(lib, namespace, history, stmt, name, index, -eps)
            if centre is None or up is None or down is None or not np.isfinite([centre, up, down]).all():
                continue
            estimates = ((up - down) / (2 * eps), (up - centre) / eps, (centre - down) / eps)
            scale = max(1.0, abs(delta[index]), max(abs(e) for e in estimates))
            if not any(abs(delta[index] - e) <= rtol * scale for e in estimates):
                return False
    return True
