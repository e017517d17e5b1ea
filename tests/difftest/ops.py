"""The op vocabulary, derived from cextend's op table (cextend._ops.registry).

Every entry with difftest=True is callable by generated programs.  Its
samples are templates: they give the argument structure (which arguments
are tensors, their shapes, the dims and sizes) and values in the op's
domain; a program then varies them: the values (0, +-inf, NaN, ties), the
dtypes (float32, float64, mixed, and int64/bool for integer_inputs ops,
rarely for others: errors and promotion must match too), the layout
(transposed, sliced, expanded views), live tensors of the program as
operands, Python numbers for 0-d operands, and the spelling: torch.NAME,
Tensor.NAME, an alias, or the in-place Tensor.NAME_.
"""
import inspect

import numpy as np

from cextend._ops.registry import OPS, Const

from . import calls
from . import values as V
from .allowlist import (CONSTANT_ROWS, FINITE_PARAMETERS, NAN_BUGS, NAN_SIGNS, OVERFLOW_EDGE, PADDED_CONVS, POLES,
                        TORCH_BUGS)
from .features import writable
from .program import Stmt

# Families whose Python-number arguments are operands (vary their values);
# elsewhere numbers are dims and sizes (kept).
NUMBER_FAMILIES = ("arithmetic", "comparison", "pointwise")


def vocabulary():
    return [info for info in OPS.values() if info.difftest]


def without_samples():
    """Table entries the tester cannot drive (no samples)."""
    return sorted(info.name for info in vocabulary() if info.samples is None)


def samples(info, rng):
    return list(info.samples(rng)) if info.samples is not None else []


def _spellings(info, first_is_tensor):
    names = (info.name,) + info.aliases
    forms = []
    if info.module:
        forms += [("module", n) for n in names]
    if info.method and first_is_tensor and info.call is None:
        forms += [("method", n) for n in names]
    if info.inplace is not None and first_is_tensor and info.call is None:
        forms += [("inplace", info.name)] * max(1, len(forms) // 2)
    return forms


def _plan(gen, info):
    table = {"float32": 45, "float64": 25, "mixed": 10}
    table["int"] = 20 if info.integer_inputs else 4
    return gen.weighted(table)


def op_call(gen):
    """One call of a table op, its operands made first."""
    info = gen.choice(VOCABULARY)
    found = samples(info, gen.rng)
    if not found:
        return
    sample = gen.choice(found)
    plan = _plan(gen, info)
    first_is_tensor = bool(sample.args) and isinstance(sample.args[0], (np.ndarray, Const))
    form, spelling = gen.choice(_spellings(info, first_is_tensor) or [("module", info.name)])
    args = []
    for i, a in enumerate(sample.args):
        args.append((yield from _argument(gen, info, a, plan, i, form == "inplace" and i == 0)))
    kwargs = []
    for key, a in sample.kwargs.items():
        kwargs.append("%s=%s" % (key, (yield from _argument(gen, info, a, plan, 1, False))))
    if not steer_clear(gen, info.name, args, sample.kwargs):
        return
    if info.call is not None:           # the table says how to call it (calls.py)
        text = "%s(%s)" % (calls.name_of(info), ", ".join(["torch"] + args + kwargs))
    elif form == "module" and takes_out(info) and gen.coin(0.2):
        yield from out_call(gen, info, spelling, args, kwargs)
        return
    elif form == "module":
        text = "torch.%s(%s)" % (spelling, ", ".join(args + kwargs))
    else:
        suffix = "_" if form == "inplace" else ""
        text = "%s.%s%s(%s)" % (args[0], spelling, suffix, ", ".join(args[1:] + kwargs))
    op = info.name + ("_" if form == "inplace" else "")
    yield from gen.assign(text, "op", op)


# -- out= -------------------------------------------------------------------------

def takes_out(info):
    """Whether cextend's function for the op has an `out` parameter (torch's
    functions take out= for every op of the table that has one)."""
    try:
        return "out" in inspect.signature(info.function).parameters
    except (TypeError, ValueError):
        return False


OUT_KINDS = {"exact": 8, "other dtype": 2, "empty": 2, "wrong shape": 1, "strided": 2, "an input": 1,
             "expanded": 0.4, "requires grad": 0.6}


def out_call(gen, info, spelling, args, kwargs):
    """torch.NAME(..., out=o): o of the result's shape and dtype or not
    (torch resizes, casts where it can, refuses the rest), strided, one of
    the inputs, expanded or requiring grad; under no_grad or not.  Then,
    sometimes, whether the result `is` o."""
    plain = "torch.%s(%s)" % (spelling, ", ".join(args + kwargs))
    result = gen.value(plain)          # what the op gives without out= (in torch)
    if hasattr(result, "shape"):
        results = [result]
    elif isinstance(result, tuple) and result and all(hasattr(r, "shape") for r in result):
        results = list(result)
    else:
        yield from gen.assign(plain, "op", info.name)
        return
    outs = []
    for r in results:
        outs.append((yield from _out_tensor(gen, r, args, len(results) == 1)))
    out = outs[0] if len(outs) == 1 else "(%s)" % ", ".join(outs)
    text = "torch.%s(%s)" % (spelling, ", ".join(args + kwargs + ["out=" + out]))
    name = gen.name()
    code = "%s = %s" % (name, text)
    if gen.coin(0.4):
        code = "with torch.no_grad():\n    " + code
    yield Stmt(code, "op", info.name + " out=")
    returned = gen.value(name)
    if returned is not None and gen.coin(0.5):
        first = name if len(outs) == 1 else name + "[0]"
        yield from gen.assign("%s is %s" % (first, outs[0]), "op", "out is result")


def _out_tensor(gen, result, args, single):
    shape, dtype = tuple(result.shape), V.dtype_of(result)
    kind = gen.weighted(OUT_KINDS if single else {"exact": 6, "other dtype": 1, "empty": 2, "wrong shape": 1})
    if kind == "other dtype":
        dtype = gen.choice([d for d in ("float32", "float64", "int64", "bool") if d != dtype])
    if kind == "empty":
        return (yield from gen.leaf(np.zeros((0,)), dtype, False))
    if kind == "wrong shape":
        n = int(np.prod(shape)) if shape else 1
        wrong = gen.choice(((n + 1,), (2,) + shape, (1,) * (len(shape) + 1) if n != 1 else (3,)))
        return (yield from gen.leaf(V.nice(gen.rng, wrong), dtype, False))
    if kind == "an input":
        for a in args:
            t = gen.value(a)
            if hasattr(t, "shape") and tuple(t.shape) == shape and V.dtype_of(t) == dtype:
                expr, _ = yield from writable(gen, a, t)
                return expr
    if kind in ("strided", "expanded") and shape:
        layout = "expanded" if kind == "expanded" else gen.choice(("transposed", "sliced"))
        expr = yield from gen.tensor(shape, dtype, requires_grad=False, layout=layout, reuse=0)
        return expr
    return (yield from gen.leaf(V.nice(gen.rng, shape), dtype, kind == "requires grad"))


def _argument(gen, info, a, plan, position, inplace_target):
    """Yields the statements an argument needs; returns its source."""
    if isinstance(a, np.ndarray) and a.dtype.kind == "f":
        scalar_ok = position > 0 and info.family in NUMBER_FAMILIES
        expr = yield from gen.operand_of_shape(a.shape, plan, template=a, scalar_ok=scalar_ok,
                                               reuse=0.0 if inplace_target else 0.3,
                                               layouts=info.layouts if position == 0 else None)
        if inplace_target:
            expr = yield from _writable(gen, expr)
        return expr
    if isinstance(a, Const):
        array = a.array
        if array.dtype == np.bool_:
            if gen.coin(0.5):
                array = gen.rng.random(array.shape) < 0.5
            return (yield from gen.leaf(array.astype(np.float64), "bool", False))
        if array.dtype.kind == "f":
            return (yield from gen.leaf(array, gen.float_dtype(), False))
        return (yield from _int_leaf(gen, array))
    if isinstance(a, (bool, np.bool_)):
        return repr(bool(a))
    if isinstance(a, (int, float, np.integer, np.floating)):
        if info.family in NUMBER_FAMILIES:
            return V.scalar_source(gen.number(a))
        if isinstance(a, (int, np.integer)) and gen.coin(0.03):
            return repr(int(a) + gen.choice((-1, 1)))       # out of range, sometimes
        return V.scalar_source(a)
    return repr(a)


def steer_clear(gen, name, args, kwargs=None):
    """Keep away from where torch itself is wrong or both are noise (the
    allowlist's TORCH_BUGS, POLES, PADDED_CONVS, NAN_BUGS, NAN_SIGNS, CONSTANT_ROWS,
    FINITE_PARAMETERS and OVERFLOW_EDGE):
    may rewrite args; False to give up.  kwargs: the sample's keyword values
    (not their sources)."""
    values = [gen.value(a) for a in args]
    tensors = [(i, t) for i, t in enumerate(values) if hasattr(t, "stride")]
    if name in PADDED_CONVS and _padded(kwargs or {}):
        for _, t in tensors:
            if t.dtype.is_floating_point and not bool(t.detach().isfinite().all()):
                return False
    if name in NAN_BUGS or name in NAN_SIGNS:
        for _, t in tensors:
            if t.dtype.is_floating_point and bool(t.detach().isnan().any()):
                return False
    if name in FINITE_PARAMETERS:
        for i, t in tensors:
            if i > 0 and t.dtype.is_floating_point and not bool(t.detach().isfinite().all()):
                return False
    if name in OVERFLOW_EDGE:
        for _, t in tensors:
            if str(t.dtype) == "torch.float32" and bool((t.detach() >= 2.0 ** 127).any()):
                return False
    if name in CONSTANT_ROWS and tensors and _has_constant_row(tensors[0][1], values[1] if len(values) > 1 else None):
        return False
    if name in POLES:
        for _, t in tensors:
            data = t.detach().double().numpy()
            if (np.isfinite(data) & (data <= 0) & (data == np.round(data))).any():
                return False
    if name == "sgn" and any(t.requires_grad for _, t in tensors):
        return False
    if name in TORCH_BUGS:
        for i, t in tensors:
            strided_weight = name == "batch_norm" and i == 3 and not t.is_contiguous()
            if (t.numel() > 1 and 0 in t.stride()) or strided_weight:
                args[i] = "%s.contiguous()" % args[i]
    return True


def _padded(kwargs):
    return any(k in kwargs and kwargs[k] not in (0, (0, 0), "valid") for k in ("padding", "output_padding"))


def _int_leaf(gen, array):
    name = gen.name()
    yield Stmt("%s = torch.tensor(%s, dtype=torch.int64)" % (name, V.literal(array)), "leaf")
    return name


def _writable(gen, expr):
    """An in-place target: mostly not a leaf that requires grad (torch raises on those)."""
    t = gen.value(expr)
    if t is not None and t.is_leaf and t.requires_grad and gen.coin(0.85):
        expr = yield from gen.assign("%s.clone()" % expr, "layout")
    return (yield from gen.protect(expr))


VOCABULARY = vocabulary()


def _has_constant_row(t, normalized_shape):
    """A group of layer_norm's input (its last len(normalized_shape) dims)
    whose values are all equal (float32), or holding its own mean (float64)."""
    if not t.dtype.is_floating_point or t.dim() == 0:
        return False
    dims = len(normalized_shape) if isinstance(normalized_shape, (list, tuple)) else 1
    data = t.detach().numpy().reshape(-1, int(np.prod(t.shape[t.dim() - dims:]) if dims <= t.dim() else 1))
    if not data.size or data.shape[1] <= 1:
        return False
    if str(t.dtype) != "torch.float32":
        # a value equal to its group's mean: its normalised value is 0 in
        # exact arithmetic, rounding noise of torch's Welford mean (1e-17,
        # which a later pow(-1.5) makes 4e25 against inf)
        with np.errstate(all="ignore"):
            return bool((data == data.astype(np.float64).mean(1, keepdims=True)).any())
    return bool((data.max(1) == data.min(1)).any())
