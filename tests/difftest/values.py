"""Data for generated programs: values chosen to make the two libraries'
arithmetic exact, plus the awkward points where they tend to differ.

Values sit on a grid of multiples of 1/16 in a small range, so sums,
products and most reductions are exact in float32 and float64 alike:
a mismatch then means a different computation, not a different rounding.
On top of that, some elements are replaced by 0, -0, +-inf, NaN, +-1 or
a duplicate (ties for max/min, sort, argmax).
"""
import numpy as np

SPECIALS = (0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -2.0)
FLOAT_DTYPES = ("float32", "float64")


def grid(a, step=16):
    """a rounded to multiples of 1/step (float64)."""
    return np.round(np.asarray(a, dtype=np.float64) * step) / step


def nice(rng, shape, low=-3.0, high=3.0):
    return grid(rng.uniform(low, high, shape), 4)


def inject(rng, a, p=0.3):
    """Some elements of a (float64) replaced by special values or ties."""
    a = np.array(a, dtype=np.float64)
    if a.size == 0 or rng.random() >= p:
        return a
    flat = a.reshape(-1)
    for _ in range(int(rng.integers(1, min(3, flat.size) + 1))):
        i = int(rng.integers(flat.size))
        if rng.random() < 0.25 and flat.size > 1:
            flat[i] = flat[int(rng.integers(flat.size))]          # a tie
        else:
            flat[i] = SPECIALS[int(rng.integers(len(SPECIALS)))]
    return a


def cast(a, dtype):
    """a (float64) as `dtype`; integers and bools from finite values only."""
    a = np.asarray(a, dtype=np.float64)
    if dtype in FLOAT_DTYPES:
        return a.astype(dtype)
    finite = np.where(np.isfinite(a), a, 0.0)
    if dtype == "bool":
        return finite > 0
    return np.round(finite * 2).astype(np.int64)


def _number(x):
    if isinstance(x, (bool, np.bool_)):
        return repr(bool(x))
    if isinstance(x, (int, np.integer)):
        return repr(int(x))
    x = float(x)
    if x != x:
        return "nan"
    if x in (np.inf, -np.inf):
        return "inf" if x > 0 else "-inf"
    return repr(x)


def literal(a):
    """Python source for the values of array a (nested lists, nan/inf names)."""
    a = np.asarray(a)
    if a.ndim == 0:
        return _number(a.item())
    return "[" + ", ".join(literal(x) for x in a) + "]"


def scalar_source(x):
    """Source of a Python number (nan and inf are names in the program)."""
    return _number(x)


def tensor_source(a, dtype, requires_grad=False):
    """Source of a leaf made from array a, cast to dtype ('float32', ...)."""
    a = cast(a, dtype)
    rg = ", requires_grad=True" if requires_grad else ""
    if a.size == 0:
        return "torch.zeros(%r, dtype=torch.%s%s)" % (tuple(a.shape), dtype, rg)
    return "torch.tensor(%s, dtype=torch.%s%s)" % (literal(a), dtype, rg)


def dtype_of(t):
    """'float32', 'int64', ... for a tensor of either library."""
    return str(t.dtype).split(".")[-1]
