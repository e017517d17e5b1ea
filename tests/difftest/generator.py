"""The program generator's core: choices, the live values, operands.

Generation runs interleaved with execution: a feature is a Python
generator that yields statements; the runner executes each in both
libraries before resuming it, so a feature can look at what exists now
(in torch's namespace: shapes, dtypes, requires_grad) before writing the
next statement.  The statements are the program; replaying them needs no
generator (that is how shrinking works).
"""
import numpy as np

from . import values as V
from .program import Stmt
from .session import value_names


class Gen:
    def __init__(self, rng, ns):
        self.rng = rng
        self.ns = ns            # torch's namespace: what the program has made so far
        self.count = 0
        self.handles = 0
        self.grad_results = []      # torch tensors autograd.grad returned (see protect)
        self.hooked = []            # torch tensors a hook was registered on

    # -- choices ----------------------------------------------------------------
    def coin(self, p=0.5):
        return self.rng.random() < p

    def choice(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def weighted(self, table):
        """One key of {key: weight}."""
        total = sum(table.values())
        r = self.rng.random() * total
        for key, weight in table.items():
            r -= weight
            if r < 0:
                return key
        return key

    def integer(self, low, high):
        """An int in [low, high]."""
        return int(self.rng.integers(low, high + 1))

    def name(self):
        self.count += 1
        return "v%d" % (self.count - 1)

    def handle(self):
        self.handles += 1
        return "h%d" % (self.handles - 1)

    # -- what exists ----------------------------------------------------------------
    def tensors(self, where=None):
        """[(expression, torch tensor)] for the live tensors, tuple items included."""
        import torch
        out = []
        for name in value_names(self.ns):
            value = self.ns[name]
            if isinstance(value, torch.Tensor):
                out.append((name, value))
            elif isinstance(value, (tuple, list)):
                out.extend(("%s[%d]" % (name, i), v) for i, v in enumerate(value) if isinstance(v, torch.Tensor))
        out = [(e, t) for e, t in out if _usable(t)]
        if where is not None:
            out = [(e, t) for e, t in out if where(t)]
        # autograd.grad's results are read through a clone: torch's may be
        # expanded views (of a 0-d gradient), cextend's are ordinary tensors,
        # so what a view, contiguous() or requires_grad_() of them shares
        # differs (the documented deviation D25); the results themselves are
        # compared where autograd.grad returns them
        return [(e + ".clone(memory_format=torch.contiguous_format)" if any(t is r for r in self.grad_results)
                 else e, t) for e, t in out]

    def pick(self, where=None, prefer_recent=True):
        """(expression, tensor) of a live tensor, or (None, None)."""
        found = self.tensors(where)
        if not found:
            return None, None
        if prefer_recent and self.coin(0.5):
            return found[-1 - int(self.rng.integers(min(3, len(found))))]
        return self.choice(found)

    # -- data -----------------------------------------------------------------------
    def data(self, shape, template=None, p_special=0.3):
        """float64 values for a tensor of `shape`: the template's (on the grid) or nice ones."""
        if template is not None and self.coin(0.7):
            a = V.grid(np.broadcast_to(template, shape))
        else:
            a = V.nice(self.rng, shape)
        return V.inject(self.rng, a, p_special)

    def float_dtype(self):
        return "float32" if self.coin(0.65) else "float64"

    def dtype(self, plan):
        if plan == "mixed":
            return self.float_dtype()
        if plan == "int":
            return self.choice(("int64", "int64", "bool", "float32"))
        return plan

    def number(self, template=None):
        """A Python number operand: the template, or an awkward one."""
        if template is not None and self.coin(0.5):
            return template
        return self.choice((0, 1, 2, -1, 3, 0.5, -1.5, 2.0, 0.0, -0.0, True, float("inf"),
                            float("-inf"), float("nan"), 0.25))

    # -- statements that make tensors ----------------------------------------------
    def leaf(self, a, dtype, requires_grad):
        """Yields the statement making a leaf from array a; returns its name."""
        name = self.name()
        rg = requires_grad and dtype in V.FLOAT_DTYPES
        yield Stmt("%s = %s" % (name, V.tensor_source(a, dtype, rg)), "leaf")
        return name

    def tensor(self, shape, dtype, template=None, requires_grad=None, layout=None, reuse=0.3, layouts=None):
        """Yields the statements making a tensor of shape and dtype (a leaf, a
        view of one, or a live tensor reused); returns its expression.
        layouts: the op table's accepted input layouts (OpInfo.layouts)."""
        shape = tuple(shape)
        contiguous_only = layouts is not None and tuple(layouts) == ("contiguous",)
        if reuse and self.coin(reuse):
            expr, _ = self.pick(lambda t: tuple(t.shape) == shape and V.dtype_of(t) == dtype
                                and (not contiguous_only or t.is_contiguous()))
            if expr is not None:
                return expr
        if requires_grad is None:
            requires_grad = dtype in V.FLOAT_DTYPES and self.coin(0.65)
        if layout is None:
            accepted = ("contiguous", "transposed", "sliced") if layouts is None else layouts
            layout = self.weighted({"plain": 6, "transposed": 1 if "transposed" in accepted else 0,
                                    "sliced": 1 if "sliced" in accepted else 0,
                                    "expanded": 0 if contiguous_only else 1})
        a = self.data(shape, template)
        if layout == "transposed" and len(shape) >= 2:
            base = yield from self.leaf(np.swapaxes(a, -1, -2), dtype, requires_grad)
            view = self.choice(("%s.transpose(-1, -2)", "%s.mT") if len(shape) > 2 else
                               ("%s.t()", "%s.transpose(0, 1)", "%s.T"))
            return (yield from self.assign(view % base, "layout"))
        if layout == "sliced" and len(shape) >= 1:
            d = int(self.rng.integers(len(shape)))
            wide = list(shape)
            wide[d] = 2 * shape[d]
            full = V.nice(self.rng, wide)
            idx = [slice(None)] * len(shape)
            idx[d] = slice(None, None, 2)
            full[tuple(idx)] = a
            base = yield from self.leaf(full, dtype, requires_grad)
            key = ", ".join([":"] * d + ["::2"])
            return (yield from self.assign("%s[%s]" % (base, key), "layout"))
        if layout == "expanded" and any(s > 1 for s in shape):
            d = self.choice([i for i, s in enumerate(shape) if s > 1])
            small = list(shape)
            small[d] = 1
            base = yield from self.leaf(a[tuple(slice(0, 1) if i == d else slice(None)
                                                for i in range(len(shape)))], dtype, requires_grad)
            return (yield from self.assign("%s.expand(%s)" % (base, ", ".join(map(str, shape))), "layout"))
        return (yield from self.leaf(a, dtype, requires_grad))

    def assign(self, expression, family, op=""):
        """Yields `vN = expression`; returns vN."""
        name = self.name()
        yield Stmt("%s = %s" % (name, expression), family, op)
        return name

    def operand_of_shape(self, shape, plan="float32", template=None, scalar_ok=False, **kw):
        """A tensor operand (or, for shape () and scalar_ok, sometimes a Python number)."""
        if shape == () and scalar_ok and self.coin(0.3):
            t = None if template is None else float(np.asarray(template))
            return V.scalar_source(self.number(t))
        return (yield from self.tensor(shape, self.dtype(plan), template, **kw))

    # -- what the generator steers around (allowlist.py's notes on D25 and D26) -----------
    def note_grad_results(self, expr):
        """Remember what torch.autograd.grad returned into `expr`."""
        results = self.value(expr)
        if isinstance(results, (tuple, list)):
            self.grad_results.extend(r for r in results if hasattr(r, "untyped_storage"))

    def aliases_grad_result(self, t):
        if not hasattr(t, "untyped_storage") or not self.grad_results:
            return False
        ptr = t.untyped_storage().data_ptr()
        return any(r.untyped_storage().data_ptr() == ptr for r in self.grad_results)

    def protect(self, expr, t=None):
        """An in-place target: a clone of expr where it shares memory with a
        result of autograd.grad (torch's may be an expanded view).  Yields
        the clone's statement; returns the expression to write into."""
        t = self.value(expr) if t is None else t
        if self.aliases_grad_result(t):
            expr = yield from self.assign("%s.clone()" % expr, "layout")
        return expr

    def note_hook(self, t):
        self.hooked.append(t)

    def is_hooked(self, t):
        return any(h is t for h in self.hooked)

    def value(self, expr):
        """What expr is in torch's namespace now (None if it does not exist,
        or is a tensor torch refuses to use)."""
        try:
            value = eval(expr, self.ns)
        except Exception:       # noqa: BLE001 -- a statement before failed in both libraries
            return None
        if isinstance(value, (tuple, list)):
            return value if all(_usable(v) for v in value) else None
        return value if _usable(value) else None


def _usable(t):
    """False for a tensor whose autograd metadata torch refuses to read (a
    view it will not rebase): the generator cannot look at it, though the
    program may still use it."""
    import torch
    if not isinstance(t, torch.Tensor):
        return True
    try:
        t.grad_fn
        t.is_leaf
        t.requires_grad
    except RuntimeError:
        return False
    return True
