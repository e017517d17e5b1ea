"""What a statement leaves behind, described library-independently, and
the comparison of two such descriptions.

A value is described as a small tree: tensors by dtype, shape, values,
requires_grad, whether grad_fn is None and their .grad; sequences by kind
and items; numbers, Sizes and dtypes by value.  Objects without a common
meaning (hook handles) are not compared.

Tolerances are dtype-aware: ints and bools exactly; floats with NaN
positions equal, infinities equal (sign included), zeros of the same sign
(a separate field, "zero sign": 1/x tells them apart), and finite elements
within rtol*|t| + atol*max(1, max|t|), the tolerance growing with the
tensor's size as a stand-in for reduction length.  Program data sit on a
dyadic grid, so most results are exact and this bound is rarely used.
"""
import numpy as np

# Exceptions torch raises for bad input, and cextend's documented ones.
_CATEGORIES = (IndexError, TypeError, ValueError, RuntimeError)
# float32's allows for a 1-ulp difference (pow, exp) amplified by the next op
# (sin of 870.0: 6e-5); real bugs are far larger.
_BASE_TOLERANCE = {"float32": 2.5e-5, "float64": 1e-12, "float16": 1e-3, "bfloat16": 1e-2}


def error_category(error):
    for cls in _CATEGORIES:
        if isinstance(error, cls):
            return cls.__name__
    return "other:" + type(error).__name__


def caught_alike(torch_error, cextend_error):
    """Whether an `except` written for torch's error catches cextend's: the
    same category, or a class that is also torch's (cextend's ArgumentError
    is a ValueError and a RuntimeError)."""
    for cls in _CATEGORIES:
        if isinstance(torch_error, cls):
            return isinstance(cextend_error, cls)
    return type(torch_error) is type(cextend_error)


def describe_error(error):
    text = str(error).strip().splitlines()
    return "%s: %s" % (type(error).__name__, text[0][:160] if text else "")


def dtype_name(dtype):
    return str(dtype).split(".")[-1]


class Describer:
    """Describes values of one library (its Tensor, Size and dtype types)."""

    def __init__(self, lib):
        self.Tensor = lib.Tensor
        self.dtype = lib.dtype
        self.is_torch = lib.__name__ == "torch"

    def read(self, t):
        """t's values as a numpy array of its own.  torch's .numpy() marks the
        tensor's storage not resizable (numpy holds a pointer), so reading torch's
        tensor itself would make a later out= resize of it fail: read a clone."""
        if self.is_torch:
            return t.detach().clone().numpy(force=True)
        return np.array(t.detach().numpy(force=True), copy=True)

    def __call__(self, value, with_grad=True):
        if isinstance(value, self.Tensor):
            return self.tensor(value, with_grad)
        if value is None:
            return ("none",)
        if isinstance(value, (bool, np.bool_)):
            return ("bool", bool(value))
        if isinstance(value, (int, np.integer)):
            return ("int", int(value))
        if isinstance(value, (float, np.floating)):
            return ("float", float(value))
        if isinstance(value, str):
            return ("str", value)
        if isinstance(value, self.dtype):
            return ("dtype", dtype_name(value))
        if isinstance(value, tuple) and type(value).__name__ == "Size":
            return ("size", tuple(int(s) for s in value))
        if isinstance(value, (tuple, list)):
            kind = type(value).__name__ if type(value) not in (tuple, list) else "sequence"
            return ("seq", kind, tuple(self(v, with_grad) for v in value))
        return ("object",)

    def tensor(self, t, with_grad):
        # A tensor whose dtype or shape cannot even be read is a finding, not a tester error.
        info = {"dtype": _attempt(lambda: dtype_name(t.dtype)), "shape": _attempt(lambda: tuple(t.shape))}
        if isinstance(info["dtype"], _Failed) or isinstance(info["shape"], _Failed):
            return ("tensor", info)
        # force=True: torch's lazily zero gradients (ZeroTensor) read as zeros.
        info["values"] = _attempt(lambda: self.read(t))
        info["requires_grad"] = _attempt(lambda: bool(t.requires_grad))
        info["grad_fn is None"] = _attempt(lambda: t.grad_fn is None)
        if with_grad:
            info["grad"] = _attempt(lambda: self(t.grad, with_grad=False))
        return ("tensor", info)


class _Failed:
    """Reading an attribute raised: compared by exception category."""

    def __init__(self, error):
        self.category = error_category(error)
        self.text = describe_error(error)

    def __eq__(self, other):
        return isinstance(other, _Failed) and other.category == self.category

    def __repr__(self):
        return "<raised %s>" % self.text


def _attempt(read):
    try:
        return read()
    except Exception as error:      # noqa: BLE001 -- an attribute that raises is itself compared
        return _Failed(error)


class Difference:
    """One way two descriptions differ: where (path), what (field) and both sides."""

    __slots__ = ("path", "field", "torch", "cextend")

    def __init__(self, path, field, torch, cextend):
        self.path, self.field, self.torch, self.cextend = path, field, torch, cextend

    def __repr__(self):
        return "%s %s: torch %s, cextend %s" % (self.path, self.field, self.torch, self.cextend)


def compare(path, t, c, loosest=None, zero_sign=True):
    """Differences between descriptions t (torch) and c (cextend).  loosest:
    the least precise float dtype the program holds, if that is looser than
    a tensor's own (float32 data computed into float64 keeps float32's error).
    zero_sign: whether the sign of zeros counts (not in gradients: where a
    gradient is zero, its sign follows each backward formula's arithmetic)."""
    if t[0] != c[0]:
        return [Difference(path, "type", _short(t), _short(c))]
    kind = t[0]
    if kind == "object":
        return []
    if kind == "tensor":
        return _compare_tensors(path, t[1], c[1], loosest, zero_sign)
    if kind == "seq":
        if t[1] != c[1] or len(t[2]) != len(c[2]):
            return [Difference(path, "type", "%s of %d" % (t[1], len(t[2])), "%s of %d" % (c[1], len(c[2])))]
        out = []
        for i, (a, b) in enumerate(zip(t[2], c[2])):
            out.extend(compare("%s[%d]" % (path, i), a, b, loosest, zero_sign))
        return out
    if kind == "float":
        if not _close_arrays(np.array([t[1]]), np.array([c[1]]), loosest or "float64"):
            return [Difference(path, "value", repr(t[1]), repr(c[1]))]
        return []
    if t != c:
        return [Difference(path, "value", repr(t[1:]), repr(c[1:]))]
    return []


def _short(d):
    if d[0] == "tensor":
        return "tensor %s %s" % (d[1]["dtype"], list(d[1]["shape"]))
    if d[0] == "seq":
        return "%s of %d" % (d[1], len(d[2]))
    return repr(d if len(d) > 1 else d[0])


def _compare_tensors(path, t, c, loosest, zero_sign=True):
    for field in ("dtype", "shape"):
        if t[field] != c[field]:
            return [Difference(path, field, t[field], c[field])]
    if isinstance(t["dtype"], _Failed) or isinstance(t["shape"], _Failed):
        return []           # both unreadable, alike
    out = []
    tv, cv = t["values"], c["values"]
    if isinstance(tv, _Failed) or isinstance(cv, _Failed):
        if tv != cv:
            out.append(Difference(path, "values", tv, cv))
    elif not _values_equal(tv, cv, _looser(t["dtype"], loosest)):
        out.append(Difference(path, "values", _show(tv), _show(cv)))
    elif zero_sign and _zero_signs_differ(tv, cv):
        out.append(Difference(path, "zero sign", _show(tv), _show(cv)))
    for field in ("requires_grad", "grad_fn is None"):
        if t[field] != c[field]:
            out.append(Difference(path, field, t[field], c[field]))
    if "grad" in t:
        tg, cg = t["grad"], c["grad"]
        if isinstance(tg, _Failed) or isinstance(cg, _Failed):
            if tg != cg:
                out.append(Difference(path + ".grad", "access", tg, cg))
        else:
            out.extend(compare(path + ".grad", tg, cg, loosest, zero_sign=False))
    return out


def _show(a):
    return np.array2string(np.asarray(a), precision=6, threshold=40, separator=", ").replace("\n", "")


def _looser(dtype, loosest):
    if loosest is None or dtype not in _BASE_TOLERANCE:
        return dtype
    return loosest if _BASE_TOLERANCE[loosest] > _BASE_TOLERANCE[dtype] else dtype


def _values_equal(tv, cv, dtype):
    if tv.shape != cv.shape:
        return False
    if tv.dtype == cv.dtype and tv.tobytes() == cv.tobytes():
        return True         # the usual case (exact arithmetic on grid values), and the cheap one
    if tv.dtype.kind not in "fc":
        return bool(np.array_equal(tv, cv))
    return _close_arrays(tv, cv, dtype)


def _zero_signs_differ(tv, cv):
    """Where both are zero, whether the signs differ (1 / x tells -0.0 from
    +0.0: -inf or inf).  Called after the values compared equal."""
    if tv.dtype.kind != "f" or cv.dtype.kind != "f" or tv.tobytes() == cv.tobytes():
        return False
    both = (tv == 0) & (cv == 0)
    return bool(both.any()) and not np.array_equal(np.signbit(tv[both]), np.signbit(cv[both]))


def tolerance(dtype, size):
    """(rtol, atol) for `size` elements of `dtype`: grows with the size,
    a stand-in for the reduction length behind each element."""
    base = _BASE_TOLERANCE.get(dtype, 1e-5)
    factor = max(4.0, size / 4.0)
    return base * factor, base * factor


def _close_arrays(tv, cv, dtype):
    tv = tv.astype(np.float64)
    cv = cv.astype(np.float64)
    tn, cn = np.isnan(tv), np.isnan(cv)
    if not np.array_equal(tn, cn):
        return False
    inf = np.isinf(tv) | np.isinf(cv)
    if not np.array_equal(tv[inf], cv[inf]):
        return False
    finite = ~(tn | inf)
    if not finite.any():
        return True
    a, b = tv[finite], cv[finite]
    rtol, atol = tolerance(dtype, tv.size)
    magnitude = max(1.0, float(np.abs(a).max()))
    return bool(np.all(np.abs(a - b) <= rtol * np.abs(a) + atol * magnitude))
