"""Program features about autograd itself: saving then mutating, writing
values that require grad into plain buffers, custom Functions, grad mode,
hooks, retain_grad, detach/.data, and every way of running backward.
"""
import numpy as np

from . import features as F
from . import functions
from . import values as V
from .program import Stmt


def _requires_grad(t):
    return t.requires_grad and t.dtype.is_floating_point


def differentiable(gen, reuse=0.6, shape=None):
    """A float tensor that requires grad: a live one, or a new leaf and
    (mostly) a non-leaf computed from it.  Returns (expression, tensor)."""
    if gen.coin(reuse):
        expr, t = gen.pick(lambda t: _requires_grad(t) and (shape is None or tuple(t.shape) == shape))
        if expr is not None:
            return expr, t
    shape = shape if shape is not None else F._shape(gen)
    leaf = yield from gen.tensor(shape, gen.float_dtype(), requires_grad=True, reuse=0)
    if gen.coin(0.7):
        leaf = yield from gen.assign(gen.choice(("%s * 1", "%s.clone()", "%s + 0", "%s * 2")) % leaf, "layout")
    return leaf, gen.value(leaf)


def weights(gen, shape, dtype):
    """A literal tensor of weights (non-uniform gradients make errors visible)."""
    a = V.nice(gen.rng, shape)
    return V.tensor_source(a, dtype) if shape else V.scalar_source(float(a))


def loss_of(gen, expr, t):
    """A scalar computed from t (sum, weighted sum, mean, or t itself if 0-d)."""
    if t.dim() == 0 and gen.coin(0.5):
        return expr
    kind = gen.weighted({"sum": 3, "weighted": 3, "mean": 1})
    if kind == "weighted":
        return "(%s * %s).sum()" % (expr, weights(gen, tuple(t.shape), V.dtype_of(t)))
    return "%s.%s()" % (expr, kind)


# -- saving, then mutating -----------------------------------------------------------

SAVING = ("%s * %s", "%s.exp()", "%s.sigmoid()", "%s.tanh()", "%s.pow(2)", "%s ** 3", "%s.relu()",
          "%s.sum()", "%s.max()", "%s.abs()", "%s.sqrt()", "%s / 2", "%s.clone()", "ExpSaveOutput.apply(%s)",
          "%s.sin()", "%s[0]", "%s.t()" , "%s.reshape(-1)")


def save_then_mutate(gen):
    """z = f(y); then y, a view of y, y's base, or z changes in place; then backward."""
    y, t = yield from differentiable(gen, reuse=0.5)
    if t is None:
        return
    # x[0] of a 0-d tensor is the documented deviation (loss.data[0]): not generated
    form = gen.choice(SAVING if t.dim() else tuple(f for f in SAVING if f != "%s[0]"))
    z = yield from gen.assign(form % ((y, y) if form.count("%s") == 2 else y), "save", form.replace("%s", "y"))
    zt = gen.value(z)
    base = _named_base(gen, t)
    target = gen.weighted({"y": 4, "view of y": 2, "base of y": 1 if base is not None else 0,
                           "z": 1 if zt is not None and zt.dim() else 0, "y.data": 1, "y under no_grad": 1})
    if target == "y":
        expr = y
    elif target == "view of y":
        expr = yield from gen.assign((yield from F.view_op(gen, t, y)), "view")
    elif target == "base of y":
        expr = base
    elif target == "z":
        expr = z
    elif target == "y.data":
        expr = y + ".data"
    else:
        op = gen.choice(("add_(1)", "mul_(2)", "zero_()"))
        yield Stmt("with torch.no_grad():\n    %s.%s" % (y, op), "save", "no_grad " + op)
        expr = None
    if expr is not None:
        et = gen.value(expr)
        if isinstance(et, (tuple, list)) and et:
            expr, et = expr + "[0]", et[0]
        if et is None or isinstance(et, (tuple, list)):
            return
        if gen.aliases_grad_result(et):
            expr = yield from gen.protect(expr, et)
            et = gen.value(expr)
        yield from F.inplace_on(gen, expr, et, gen.choice(("add_", "mul_", "setitem", "zero_", "self", "table")))
    zt = gen.value(z)
    if zt is not None and _requires_grad(zt):
        yield Stmt("%s.backward()" % loss_of(gen, z, zt), "backward", "backward after mutation")


def _named_base(gen, t):
    """The expression of the program value that t is a view of, if any (torch's
    private _base can also be an internal tensor the program never saw)."""
    if t._base is None:
        return None
    for expr, value in gen.tensors():
        if value is t._base:
            return expr
    return None


def index_then_mutate(gen):
    """z = y[idx]; idx changes in place; backward (torch raises: idx is saved)."""
    y, t = yield from differentiable(gen, reuse=0.5)
    if t is None or not t.dim() or not t.shape[0]:
        return
    n = t.shape[0]
    idx = gen.name()
    yield Stmt("%s = torch.tensor(%s, dtype=torch.int64)" % (idx, [gen.integer(0, n - 1) for _ in range(gen.integer(1, 3))]), "leaf")
    z = yield from gen.assign("%s[%s]" % (y, idx), "view", "getitem")
    yield Stmt("%s.%s" % (idx, gen.choice(("zero_()", "fill_(%d)" % gen.integer(0, n - 1), "add_(0)"))),
               "inplace", "index mutation")
    zt = gen.value(z)
    if zt is not None:
        yield Stmt("%s.backward()" % loss_of(gen, z, zt), "backward", "backward after index mutation")


# -- writing values that require grad into plain buffers ------------------------------

def buffer_setitem(gen):
    """buf = zeros(...); buf[key] = w * 2 (w requires grad); then buf is used."""
    shape = gen.choice(((3,), (4,), (2, 3), (3, 2), (2, 2, 2)))
    dtype = gen.float_dtype()
    buf = gen.name()
    yield Stmt("%s = torch.zeros(%s, dtype=torch.%s)" % (buf, ", ".join(map(str, shape)), dtype), "leaf")
    for _ in range(gen.integer(1, 2)):
        kind = gen.weighted({"row": 3, "element": 2, "index": 2, "mask": 1, "copy row": 2, "column": 1})
        if kind == "row":
            w, _ = yield from differentiable(gen, shape=shape[1:])
            yield Stmt("%s[%d] = %s" % (buf, gen.integer(0, shape[0] - 1), gen.choice(("%s", "%s * 2")) % w),
                       "buffer", "setitem row")
        elif kind == "element":
            w, wt = yield from differentiable(gen)
            key = ", ".join(str(gen.integer(0, s - 1)) for s in shape)
            yield Stmt("%s[%s] = %s.sum()" % (buf, key, w), "buffer", "setitem element")
        elif kind == "index":
            idx = gen.name()
            rows = [gen.integer(0, shape[0] - 1) for _ in range(gen.integer(1, 2))]
            yield Stmt("%s = torch.tensor(%s, dtype=torch.int64)" % (idx, rows), "leaf")
            w, _ = yield from differentiable(gen, shape=(len(rows),) + shape[1:])
            yield Stmt("%s[%s] = %s" % (buf, idx, w), "buffer", "setitem index")
        elif kind == "mask":
            mask = yield from gen.leaf(gen.rng.random(shape) - 0.5, "bool", False)
            w, _ = yield from differentiable(gen, shape=())
            yield Stmt("%s[%s] = %s" % (buf, mask, w), "buffer", "setitem mask")
        elif kind == "copy row":
            w, _ = yield from differentiable(gen)
            ones = "torch.ones(%s, dtype=torch.%s)" % (", ".join(map(str, shape[1:])) or "()", dtype)
            yield Stmt("%s[0].copy_(%s.sum() * %s)" % (buf, w, ones), "buffer", "copy_ into row")
        elif len(shape) >= 2:
            w, _ = yield from differentiable(gen, shape=(shape[0],) + shape[2:])
            yield Stmt("%s[:, %d] = %s" % (buf, gen.integer(0, shape[1] - 1), w), "buffer", "setitem column")
    bt = gen.value(buf)
    if bt is not None and gen.coin(0.6) and _requires_grad(bt):
        yield Stmt("%s.backward()" % loss_of(gen, buf, bt), "backward", "backward through buffer")


# -- custom Functions --------------------------------------------------------------

def custom_function(gen):
    name = gen.choice(list(functions.SIGNATURES))
    args = []
    first = None
    for code in functions.SIGNATURES[name]:
        if code == "T":
            if gen.coin(0.2):
                expr, t = yield from F.some_tensor(gen, {"float32": 2, "float64": 1}, reuse=0.5)
            else:
                expr, t = yield from differentiable(gen, reuse=0.5)
            if t is None:
                return
            if name in functions.MUTATE_INPUT:
                expr = yield from gen.protect(expr, t)
            first = t
            args.append(expr)
        elif code == "S":
            shape = F.partner_shape(gen, tuple(first.shape)) if gen.coin(0.3) else tuple(first.shape)
            args.append((yield from gen.tensor(shape, V.dtype_of(first), reuse=0.3)))
        else:
            args.append(V.scalar_source(gen.choice((2.0, 0.5, -1.0, 3, 0.0))))
    yield from gen.assign("%s.apply(%s)" % (name, ", ".join(args)), "function", name)


# -- grad mode ----------------------------------------------------------------------

def no_grad(gen):
    """Another feature's own statement run under no_grad (its operands are made outside)."""
    inner = gen.choice((F.arith, F.view, F.inplace, _op_call))
    for stmt in inner(gen):
        if stmt.family in ("leaf", "layout"):
            yield stmt
        else:
            mode = gen.choice(("torch.no_grad()", "torch.no_grad()", "torch.enable_grad()",
                               "torch.set_grad_enabled(False)"))
            yield Stmt("with %s:\n    %s" % (mode, stmt.code.replace("\n", "\n    ")), stmt.family,
                       "%s [%s]" % (stmt.op, mode.split("(")[0].split(".")[-1]))


def _op_call(gen):
    from .ops import op_call
    return op_call(gen)


# -- hooks, retain_grad, detach, requires_grad_ ----------------------------------------

HOOKS = ("lambda g: g * 2", "lambda g: None", "lambda g: g + 1", "lambda g: g.clone().zero_()")


def autograd_misc(gen):
    kind = gen.weighted({"retain_grad": 3, "hook": 4, "remove hook": 1, "detach": 2, "data": 1,
                         "requires_grad_": 2, "grad = None": 1, "use grad": 2, "detach_": 1,
                         "grad of leaf in-place": 1})
    if kind == "remove hook":
        if gen.handles:
            yield Stmt("h%d.remove()" % gen.integer(0, gen.handles - 1), "autograd", kind)
        return
    if kind in ("requires_grad_",):
        expr, t = gen.pick()
        if expr is None:
            return
        arg = "" if gen.coin(0.7) else gen.choice(("False", "True"))
        yield Stmt("%s.requires_grad_(%s)" % (expr, arg), "autograd", kind)
        return
    if kind in ("grad = None", "use grad", "grad of leaf in-place"):
        expr, t = gen.pick(lambda t: t.is_leaf and t.grad is not None)
        if expr is None:
            return
        if kind == "grad = None":
            yield Stmt("%s.grad = None" % expr, "autograd", kind)
        elif kind == "use grad":
            yield from gen.assign(gen.choice(("%s.grad * 1", "%s.grad", "%s.grad.clone()")) % expr,
                                  "autograd", kind)
        else:
            yield Stmt("%s.grad.%s" % (expr, gen.choice(("zero_()", "mul_(2)", "add_(1)"))), "autograd", kind)
        return
    expr, t = yield from differentiable(gen, reuse=0.7)
    if t is None:
        return
    if kind == "retain_grad":
        yield Stmt("%s.retain_grad()" % expr, "autograd", kind)
    elif kind == "hook":
        yield Stmt("%s = %s.register_hook(%s)" % (gen.handle(), expr, gen.choice(HOOKS)), "autograd",
                   "register_hook " + ("leaf" if t.is_leaf else "non-leaf"))
        gen.note_hook(t)
    elif kind == "detach":
        yield from gen.assign(expr + gen.choice((".detach()", ".detach().requires_grad_()")), "autograd", kind)
    elif kind == "data":
        yield from gen.assign(expr + ".data", "autograd", kind)
    elif kind == "detach_":
        yield Stmt("%s.detach_()" % expr, "autograd", kind)


# -- backward ------------------------------------------------------------------------

def backward(gen):
    """One way of running backward (more may follow in the program)."""
    expr, t = yield from differentiable(gen, reuse=0.8)
    if t is None:
        return
    kind = gen.weighted({"plain": 3, "gradient": 2, "retain twice": 2, "create_graph": 3, "grad": 3,
                         "grad create_graph": 2, "inputs": 2, "two roots": 1})
    loss = loss_of(gen, expr, t)
    if kind == "plain":
        yield Stmt("%s.backward()" % loss, "backward", kind)
    elif kind == "gradient":
        yield Stmt("%s.backward(%s)" % (expr, weights(gen, tuple(t.shape), V.dtype_of(t))), "backward", kind)
    elif kind == "retain twice":
        yield Stmt("%s.backward(retain_graph=True)" % loss, "backward", kind)
        yield Stmt("%s.backward()" % loss_of(gen, expr, t), "backward", "second backward")
    elif kind == "create_graph":
        yield Stmt("%s.backward(create_graph=True)" % loss, "backward", kind)
        if gen.coin(0.7):
            yield Stmt("%s.backward()" % loss_of(gen, expr, t), "backward", "plain after create_graph")
    elif kind in ("grad", "grad create_graph"):
        inputs = _inputs(gen, for_autograd_grad=True)
        if not inputs:
            return
        create = kind == "grad create_graph"
        options = "allow_unused=%s" % gen.choice(("True", "False"))
        if create:
            options += ", create_graph=True"
        elif gen.coin(0.3):
            options += ", retain_graph=True"
        grads = yield from gen.assign("torch.autograd.grad(%s, [%s], %s)" % (loss, ", ".join(inputs), options),
                                      "backward", "autograd.grad" + (" create_graph" if create else ""))
        gen.note_grad_results(grads)
        gt = gen.value(grads)
        if create and gt and gt[0] is not None and _requires_grad(gt[0]):
            yield Stmt("%s.backward()" % loss_of(gen, grads + "[0]", gt[0]), "backward", "double backward")
    elif kind == "inputs":
        inputs = _inputs(gen)
        yield Stmt("%s.backward(inputs=[%s])" % (loss, ", ".join(inputs)), "backward", kind)
    else:
        other, ot = gen.pick(_requires_grad)
        yield Stmt("torch.autograd.backward([%s, %s])" % (loss, loss_of(gen, other, ot)), "backward", kind)


def _custom_node_type():
    import torch        # only a generator that runs programs gets here: torch is there
    return torch.autograd.function.BackwardCFunction


def _inputs(gen, for_autograd_grad=False):
    """Tensors to differentiate with respect to.  autograd.grad gets no
    non-leaf with a hook: torch is inconsistent there (allowlist.py, D26)."""
    found = gen.tensors(_requires_grad)
    if for_autograd_grad:
        found = [(e, t) for e, t in found if t.is_leaf or not gen.is_hooked(t)]
    else:
        # backward(inputs=[an output of a custom Function]), then an in-place op on a
        # view of that output and another backward, crashes torch 2.13 (SIGSEGV in its
        # engine; allowlist.py): no custom Function output is passed as an input
        custom = _custom_node_type()
        found = [(e, t) for e, t in found if not isinstance(t.grad_fn, custom)]
    leaves = [e for e, t in found if t.is_leaf]
    pool = leaves if leaves and gen.coin(0.7) else [e for e, _ in found]
    count = min(len(pool), gen.integer(1, 3))
    picked = [pool[int(i)] for i in gen.rng.choice(len(pool), count, replace=False)]
    return picked


def finale(gen):
    """The program's last backward, from a tensor that requires grad."""
    expr, t = gen.pick(_requires_grad)
    if expr is None:
        return
    yield Stmt("%s.backward()" % loss_of(gen, expr, t), "backward", "final backward")


# -- edge values ------------------------------------------------------------------

SPECIAL_VALUES = (0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, float("inf"), float("-inf"), float("nan"))
AT_SPECIALS = ("{x} ** 0", "{x} ** 0.0", "{x} ** -1", "{x} ** 0.5", "{x} ** -1.5", "{x} ** 2", "{x} ** 3",
               "0.0 ** {x}", "(-2.0) ** {x}", "2.0 ** {x}", "{x} ** {y}", "{x}.pow({y})", "{x}.relu()",
               "torch.relu({x})", "{x}.max()", "{x}.min()", "{x}.amax()", "{x}.amin()", "{x}.max(0)[0]",
               "{x}.min(0)[0]", "{x}.abs()", "1 / {x}", "{x} / 0", "{x} / {y}", "{x}.clamp(0, 1)",
               "{x}.clamp(min=0)", "{x}.sqrt()", "{x}.log()", "{x}.exp()", "{x}.sigmoid()", "{x}.tanh()",
               "{x}.sum()", "{x}.mean()", "{x}.maximum({y})", "{x}.minimum({y})", "{x} * 0", "{x}.sign()",
               "{x}.reciprocal()", "{x}.rsqrt()", "torch.where({x} > 0, {x}, {y})", "{x}.square()",
               "{x}.atan2({y})", "{x} % {y}", "{x}.fmod({y})", "{x}.amax(0, keepdim=True)")


def at_specials(gen):
    """Pointwise ops and reductions at 0, -0, +-inf, NaN and ties, with gradients."""
    dtype = gen.float_dtype()
    n = gen.integer(2, 6)
    pick = [SPECIAL_VALUES[int(i)] for i in gen.rng.integers(0, len(SPECIAL_VALUES), n)]
    x = yield from gen.leaf(np.array(pick), dtype, True)
    form = gen.choice(AT_SPECIALS)
    y = x
    if "{y}" in form:
        other = [SPECIAL_VALUES[int(i)] for i in gen.rng.integers(0, len(SPECIAL_VALUES), n)]
        y = yield from gen.leaf(np.array(other), gen.choice((dtype, dtype, "float64")), gen.coin(0.7))
    z = yield from gen.assign(form.format(x=x, y=y), "specials", form.format(x="x", y="y"))
    zt = gen.value(z)
    if zt is not None and hasattr(zt, "requires_grad") and _requires_grad(zt):
        yield Stmt("%s.backward()" % loss_of(gen, z, zt), "backward", "backward at specials")
