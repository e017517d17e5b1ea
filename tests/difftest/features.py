"""Program features beyond single table ops: operators with mixed dtypes,
views (indexing and the view ops), and in-place changes of bases and views.

Each feature is a generator of statements (see generator.py): it yields
the statements that make its operands, then its own, and may look at the
live values in between.
"""
import numpy as np

from . import values as V
from .program import Stmt

SHAPES = ((), (1,), (3,), (4,), (5,), (2, 3), (3, 1), (1, 3), (2, 2), (3, 4), (2, 1, 3), (2, 3, 2),
          (0,), (0, 3), (1, 1))
ANY_DTYPE = {"float32": 5, "float64": 2, "int64": 2, "bool": 1}
BINARY = ("+", "-", "*", "/", "**", "//", "%", "<", "<=", ">", ">=", "==", "!=")
ARITHMETIC = ("+", "-", "*", "/", "**", "//", "%")


def _shape(gen):
    return gen.choice(SHAPES)


def partner_shape(gen, shape):
    """A shape that broadcasts with `shape` (rarely one that does not)."""
    options = [shape, shape, shape[1:] if shape else (), tuple(1 if gen.coin(0.5) else s for s in shape),
               (1,) + shape, ()]
    if gen.coin(0.04):
        return (7,)
    return gen.choice(options)


def some_tensor(gen, dtypes=ANY_DTYPE, where=None, reuse=0.5):
    """An existing tensor (if any fits) or a new one: (expression, torch tensor)."""
    if gen.coin(reuse):
        expr, t = gen.pick(where or (lambda t: V.dtype_of(t) in dtypes))
        if expr is not None:
            return expr, t
    expr = yield from gen.tensor(_shape(gen), gen.weighted(dtypes), reuse=0)
    return expr, gen.value(expr)


def writable(gen, expr, t, p=0.85):
    """An in-place target: mostly not a leaf requiring grad (torch raises there),
    never a result of autograd.grad (see Gen.protect)."""
    if t is not None and t.is_leaf and t.requires_grad and gen.coin(p):
        expr = yield from gen.assign("%s.clone()" % expr, "layout")
        t = gen.value(expr)
    if t is not None and gen.aliases_grad_result(t):
        expr = yield from gen.protect(expr, t)
        t = gen.value(expr)
    return expr, t


# -- operators ----------------------------------------------------------------------

def operand_like(gen, shape, kinds=None):
    """The other operand of a binary op: a tensor, a 0-d tensor or a number."""
    kind = gen.weighted(kinds or {"tensor": 4, "0-d": 2, "number": 3})
    if kind == "number":
        return V.scalar_source(gen.number())
    if kind == "0-d":
        return (yield from gen.tensor((), gen.weighted(ANY_DTYPE), reuse=0.2))
    return (yield from gen.tensor(partner_shape(gen, shape), gen.weighted(ANY_DTYPE), reuse=0.3))


def arith(gen):
    """a OP b with tensors of any dtype, 0-d tensors and Python numbers, both orders."""
    left, t = yield from some_tensor(gen)
    if t is None:
        return
    if gen.coin(0.1):
        form = gen.choice(("-%s", "abs(%s)", "~%s", "+%s"))
        yield from gen.assign(form % left, "arith", form.replace("%s", "x"))
        return
    op = gen.choice(BINARY)
    right = yield from operand_like(gen, tuple(t.shape))
    if op in ARITHMETIC and gen.coin(0.15) and "[" not in left:
        left, t = yield from writable(gen, left, t)
        yield Stmt("%s %s= %s" % (left, op, right), "inplace", "x %s= y" % op)
        return
    if gen.coin(0.4):
        left, right = right, left
    yield from gen.assign("%s %s %s" % (left, op, right), "arith", "x %s y" % op)


# -- views --------------------------------------------------------------------------

def _slice(gen, size):
    start = gen.choice(("", "", "1", "-1", str(gen.integer(0, max(size, 1)))))
    stop = gen.choice(("", "", "-1", str(gen.integer(0, size + 1))))
    step = gen.choice(("", "", "2", "3")) if not gen.coin(0.02) else "-1"
    text = start + ":" + stop
    return text + (":" + step if step else "")


def basic_key(gen, shape):
    """An index of ints, slices, None and Ellipsis for `shape`."""
    parts, ellipsis = [], False
    nd = len(shape)
    for d in range(gen.integer(1, max(1, nd))):
        size = shape[d] if d < nd else 1
        kind = gen.weighted({"int": 3, "slice": 3, "all": 1, "none": 1, "ellipsis": 0 if ellipsis else 1})
        if kind == "int" and nd == 0:
            # x[0] of a 0-d tensor is the documented deviation (loss.data[0]):
            # never generated; other integers raise in both libraries
            parts.append(gen.choice(("-1", "1")))
        elif kind == "int":
            bound = size if not gen.coin(0.03) else size + 1
            parts.append(str(gen.integer(-bound, bound - 1)) if bound else "0")
        elif kind == "slice":
            parts.append(_slice(gen, size))
        elif kind == "all":
            parts.append(":")
        elif kind == "none":
            parts.append("None")
        else:
            parts.append("...")
            ellipsis = True
    return ", ".join(parts)


def advanced_key(gen, t):
    """Yields the index tensors an advanced index needs; returns the key."""
    shape = tuple(t.shape)
    size = shape[0] if shape else 0
    kind = gen.weighted({"list": 2, "tensor": 3, "mask": 2, "pair": 1 if len(shape) >= 2 else 0,
                         "later": 1 if len(shape) >= 2 else 0})
    count = gen.integer(1, 4)

    def indices(n):
        if n == 0:
            return [0] * count if gen.coin(0.2) else []
        return [gen.integer(-n, n - 1) for _ in range(count)]
    if kind == "list":
        return repr(indices(size))
    if kind == "tensor":
        name = gen.name()
        yield Stmt("%s = torch.tensor(%s, dtype=torch.int64)" % (name, indices(size)), "leaf")
        return name
    if kind == "mask":
        mask_shape = shape if gen.coin(0.6) or not shape else shape[:1]
        name = yield from gen.leaf(gen.rng.random(mask_shape) - 0.4, "bool", False)
        return name
    if kind == "pair":
        return "%s, %s" % (indices(size), [gen.integer(-shape[1], shape[1] - 1) if shape[1] else 0
                                          for _ in range(count)])
    name = gen.name()
    yield Stmt("%s = torch.tensor(%s, dtype=torch.int64)" % (name, indices(shape[1])), "leaf")
    return ":, " + name


def _new_shapes(shape):
    """Shapes with the same number of elements (view/reshape targets)."""
    n = int(np.prod(shape)) if shape else 1
    out = [(n,), (-1,), (1,) + shape, shape + (1,)]
    if len(shape) >= 2:
        out.append((shape[0] * shape[1],) + shape[2:])
        out.append(shape[:-2] + (-1,))
        out.append(tuple(reversed(shape)) if int(np.prod(shape)) == n else shape)
    if n and n % 2 == 0:
        out.append((2, n // 2))
    return out


def view_op(gen, t, expr):
    """A view (or view-like) op applicable to t: its source."""
    shape = tuple(t.shape)
    nd = len(shape)
    table = {"index": 6, "advanced": 3, "element": 2, "view": 2, "reshape": 2, "unsqueeze": 2, "squeeze": 1,
             "expand": 2, "t": 1 if nd <= 2 else 0, "permute": 2 if nd >= 2 else 0, "transpose": 1 if nd >= 2 else 0,
             "narrow": 2 if nd else 0, "select": 2 if nd else 0, "split": 1 if nd else 0,
             "chunk": 1 if nd else 0, "unbind": 1 if nd else 0, "diagonal": 1 if nd >= 2 else 0,
             "flatten": 1, "movedim": 1 if nd >= 2 else 0, "T": 1 if nd >= 2 else 0,
             "detach": 1, "data": 1, "contiguous": 1, "view_as": 1, "expand_as": 1}
    kind = gen.weighted(table)
    d = gen.integer(-nd, nd - 1) if nd else 0
    size = shape[d] if nd else 0
    if kind == "index":
        return "%s[%s]" % (expr, basic_key(gen, shape))
    if kind == "advanced":
        return "%s[%s]" % (expr, (yield from advanced_key(gen, t)))
    if kind == "element":
        if not nd or 0 in shape:
            return "%s[...]" % expr
        return "%s[%s]" % (expr, ", ".join(str(gen.integer(-s, s - 1)) for s in shape))
    if kind in ("view", "reshape"):
        return "%s.%s(%s)" % (expr, kind, ", ".join(map(str, gen.choice(_new_shapes(shape)))))
    if kind == "unsqueeze":
        return "%s.unsqueeze(%d)" % (expr, gen.integer(-nd - 1, nd))
    if kind == "squeeze":
        return "%s.squeeze(%s)" % (expr, "" if gen.coin(0.4) or not nd else str(d))
    if kind == "expand":
        sizes = [gen.choice((1, 2, 3)) if s == 1 else gen.choice((s, -1)) for s in shape]
        if gen.coin(0.4):
            sizes = [2] + sizes
        return "%s.expand(%s)" % (expr, ", ".join(map(str, sizes)))
    if kind == "t":
        return expr + ".t()"
    if kind == "T":
        return expr + gen.choice((".T", ".mT"))
    if kind == "permute":
        return "%s.permute(%s)" % (expr, ", ".join(str(int(i)) for i in gen.rng.permutation(nd)))
    if kind == "transpose":
        return "%s.transpose(%d, %d)" % (expr, d, gen.integer(-nd, nd - 1))
    if kind == "narrow":
        start = gen.integer(0, size)
        return "%s.narrow(%d, %d, %d)" % (expr, d, start, gen.integer(0, size - start))
    if kind == "select":
        return "%s.select(%d, %d)" % (expr, d, gen.integer(-size, size - 1) if size else 0)
    if kind == "split":
        return "%s.split(%s, %d)" % (expr, gen.choice((1, 2, 3)) if gen.coin(0.7) else _sections(gen, size), d)
    if kind == "chunk":
        return "%s.chunk(%d, %d)" % (expr, gen.integer(1, 3), d)
    if kind == "unbind":
        return "%s.unbind(%d)" % (expr, d)
    if kind == "diagonal":
        return "%s.diagonal(%d, %d, %d)" % (expr, gen.integer(-1, 1), 0, 1) if gen.coin(0.5) else expr + ".diagonal()"
    if kind == "flatten":
        return expr + ".flatten()"
    if kind == "movedim":
        return "%s.movedim(%d, %d)" % (expr, d, gen.integer(-nd, nd - 1))
    if kind in ("detach", "contiguous"):
        return "%s.%s()" % (expr, kind)
    if kind == "data":
        return expr + ".data"
    other, o = gen.pick(lambda o: o.numel() == t.numel() if kind == "view_as" else True)
    if other is None:
        return expr + ".clone()"
    return "%s.%s(%s)" % (expr, kind, other)


def _sections(gen, size):
    first = gen.integer(0, size)
    return repr([first, size - first])


def view(gen):
    """A view of a live tensor (or of a new one)."""
    expr, t = yield from some_tensor(gen, reuse=0.75)
    if t is None:
        return
    text = yield from view_op(gen, t, expr)
    yield from gen.assign(text, "view", _view_name(text, expr))


def _view_name(text, expr):
    rest = text[len(expr):]
    if rest.startswith("["):
        return "getitem"
    return rest.lstrip(".").split("(")[0]


# -- in place -----------------------------------------------------------------------

INPLACE = {"add_": 4, "sub_": 2, "mul_": 4, "div_": 2, "pow_": 2, "clamp_": 2, "copy_": 3, "fill_": 2,
           "zero_": 1, "masked_fill_": 2, "setitem": 5, "table": 3, "self": 3}


def inplace(gen):
    """An in-place op on a live tensor: a base, a view, an output of split."""
    expr, t = yield from some_tensor(gen, reuse=0.8)
    if t is None:
        return
    expr, t = yield from writable(gen, expr, t, p=0.8)
    if t is None:
        return
    yield from inplace_on(gen, expr, t)


def inplace_on(gen, expr, t, kind=None):
    shape = tuple(t.shape)
    kind = kind or gen.weighted(INPLACE)
    if kind == "self":
        op = gen.choice(("add_", "sub_", "mul_", "div_", "pow_", "copy_"))
        yield from gen.assign("%s.%s(%s)" % (expr, op, expr), "inplace", op + "(self)")
        return
    if kind in ("add_", "sub_", "mul_", "div_"):
        other = yield from operand_like(gen, shape)
        alpha = ", alpha=%s" % gen.choice(("2", "-1", "0.5")) if kind in ("add_", "sub_") and gen.coin(0.2) else ""
        yield from gen.assign("%s.%s(%s%s)" % (expr, kind, other, alpha), "inplace", kind)
    elif kind == "pow_":
        other = yield from operand_like(gen, shape, {"number": 4, "0-d": 1, "tensor": 1})
        yield from gen.assign("%s.pow_(%s)" % (expr, other), "inplace", kind)
    elif kind == "clamp_":
        low, high = gen.choice((("-1", "1"), ("0", "None"), ("None", "0.5"), ("1", "-1"), ("nan", "None")))
        if gen.coin(0.2):
            low = yield from gen.tensor(partner_shape(gen, shape), V.dtype_of(t), reuse=0.2)
        yield from gen.assign("%s.clamp_(%s, %s)" % (expr, low, high), "inplace", kind)
    elif kind == "copy_":
        src = yield from gen.tensor(partner_shape(gen, shape), gen.weighted(ANY_DTYPE), reuse=0.4)
        yield from gen.assign("%s.copy_(%s)" % (expr, src), "inplace", kind)
    elif kind == "fill_":
        value = yield from operand_like(gen, (), {"number": 3, "0-d": 2})
        yield from gen.assign("%s.fill_(%s)" % (expr, value), "inplace", kind)
    elif kind == "zero_":
        yield from gen.assign("%s.zero_()" % expr, "inplace", kind)
    elif kind == "masked_fill_":
        mask = yield from gen.leaf(gen.rng.random(partner_shape(gen, shape)) - 0.5, "bool", False)
        value = yield from operand_like(gen, (), {"number": 3, "0-d": 2})
        yield from gen.assign("%s.masked_fill_(%s, %s)" % (expr, mask, value), "inplace", kind)
    elif kind == "setitem":
        yield from setitem(gen, expr, t)
    else:
        yield from table_inplace(gen, expr, t)


def setitem(gen, expr, t):
    """expr[key] = value, with a basic or an advanced key."""
    if gen.coin(0.6) or not t.dim():
        key = basic_key(gen, tuple(t.shape)) if t.dim() else "..."
    else:
        key = yield from advanced_key(gen, t)
    region = gen.value("%s[%s]" % (expr, key))
    if region is None or gen.coin(0.3):
        value = V.scalar_source(gen.number())
    else:
        value = yield from gen.tensor(partner_shape(gen, tuple(region.shape)), gen.weighted(ANY_DTYPE), reuse=0.3)
    yield Stmt("%s[%s] = %s" % (expr, key, value), "inplace", "setitem")


def table_inplace(gen, expr, t):
    """An in-place form from the op table: x.NAME_(...) with the op's sample as template."""
    from .ops import VOCABULARY, samples
    candidates = [info for info in VOCABULARY if info.inplace is not None and info.call is None]
    info = gen.choice(candidates)
    found = [s for s in samples(info, gen.rng) if s.args and not s.kwargs]
    if not found:
        return
    sample = gen.choice(found)
    from .ops import steer_clear
    if not steer_clear(gen, info.name, [expr]):
        return
    args = []
    for a in sample.args[1:]:
        if isinstance(a, np.ndarray):
            args.append((yield from gen.tensor(partner_shape(gen, tuple(t.shape)), gen.weighted(ANY_DTYPE),
                                               template=None, reuse=0.3)))
        elif isinstance(a, (bool, int, float)):
            args.append(V.scalar_source(gen.number(a)))
        else:
            return
    yield from gen.assign("%s.%s_(%s)" % (expr, info.name, ", ".join(args)), "inplace", info.name + "_")
