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
import numpy as np

from cextend._ops.registry import OPS, Const, Sample

from . import values as V
from .allowlist import POLES, TORCH_BUGS
from .program import Stmt

# Families whose Python-number arguments are operands (vary their values);
# elsewhere numbers are dims and sizes (kept).
NUMBER_FAMILIES = ("arithmetic", "comparison", "pointwise")


def _a(rng, *shape):
    return rng.uniform(-2, 2, shape)


# Ops whose entry has no samples yet (reported to the lead): templates here.
FALLBACK_SAMPLES = {
    "reshape": lambda rng: [Sample(_a(rng, 3, 4), (4, 3)), Sample(_a(rng, 2, 3, 2), (-1,)),
                            Sample(_a(rng, 6), (2, -1, 1)), Sample(_a(rng), (1,))],
    "view": lambda rng: [Sample(_a(rng, 3, 4), (4, 3)), Sample(_a(rng, 2, 3, 2), (6, -1)),
                         Sample(_a(rng, 6), (2, 3))],
    "clamp": lambda rng: [Sample(_a(rng, 3, 4), -0.5, 0.5), Sample(_a(rng, 3, 4), min=-1.0),
                          Sample(_a(rng, 3, 4), max=0.25), Sample(_a(rng, 3, 4), _a(rng, 3, 4), _a(rng, 4))],
    "clamp_min": lambda rng: [Sample(_a(rng, 3, 4), 0.0)],
    "clamp_max": lambda rng: [Sample(_a(rng, 3, 4), 0.5)],
}


def vocabulary():
    return [info for info in OPS.values() if info.difftest]


def without_samples():
    """Table entries the tester drives from FALLBACK_SAMPLES (or cannot drive)."""
    return sorted(info.name for info in vocabulary() if info.samples is None)


def samples(info, rng):
    if info.samples is not None:
        return list(info.samples(rng))
    make = FALLBACK_SAMPLES.get(info.name)
    return make(rng) if make else []


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
    if not steer_clear(gen, info.name, args):
        return
    if info.call is not None:           # the op takes a sequence of tensors
        text = "torch.%s([%s]%s)" % (spelling, ", ".join(args), "".join(", " + k for k in kwargs))
    elif form == "module":
        text = "torch.%s(%s)" % (spelling, ", ".join(args + kwargs))
    else:
        suffix = "_" if form == "inplace" else ""
        text = "%s.%s%s(%s)" % (args[0], spelling, suffix, ", ".join(args[1:] + kwargs))
    op = info.name + ("_" if form == "inplace" else "")
    yield from gen.assign(text, "op", op)


def _argument(gen, info, a, plan, position, inplace_target):
    """Yields the statements an argument needs; returns its source."""
    if isinstance(a, np.ndarray) and a.dtype.kind == "f":
        scalar_ok = position > 0 and info.family in NUMBER_FAMILIES
        expr = yield from gen.operand_of_shape(a.shape, plan, template=a, scalar_ok=scalar_ok,
                                               reuse=0.0 if inplace_target else 0.3)
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


def steer_clear(gen, name, args):
    """Keep away from where torch itself is wrong or both are noise (the
    allowlist's TORCH_BUGS and POLES): may rewrite args; False to give up."""
    values = [gen.value(a) for a in args]
    tensors = [(i, t) for i, t in enumerate(values) if hasattr(t, "stride")]
    if name in POLES:
        for _, t in tensors:
            data = t.detach().double().numpy()
            if (np.isfinite(data) & (data <= 0) & (data == np.round(data))).any():
                return False
    if name in TORCH_BUGS:
        for i, t in tensors:
            if t.numel() > 1 and 0 in t.stride():
                args[i] = "%s.contiguous()" % args[i]
    return True


def _int_leaf(gen, array):
    name = gen.name()
    yield Stmt("%s = torch.tensor(%s, dtype=torch.int64)" % (name, V.literal(array)), "leaf")
    return name


def _writable(gen, expr):
    """An in-place target: mostly not a leaf that requires grad (torch raises on those)."""
    t = gen.value(expr)
    if t is not None and t.is_leaf and t.requires_grad and gen.coin(0.85):
        expr = yield from gen.assign("%s.clone()" % expr, "layout")
    return expr


VOCABULARY = vocabulary()
