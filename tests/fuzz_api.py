"""Fuzz cextend's public API with arbitrary arguments (run in a subprocess).

    python tests/fuzz_api.py --examples 300        # what `make test` runs
    python tests/fuzz_api.py --examples 20000      # what `make fuzz` runs

Every call must return or raise one of the documented Python exceptions;
anything else fails here, and a crash (a signal) fails the caller, which
sees this process die.  Prints the example count and exception tally.
"""
import argparse
import collections
import sys

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

import cextend as cx
from cextend import ops
from cextend.functions import Add, GlobalMaxPool, LinearFunction, MulConstant

DOCUMENTED = (TypeError, ValueError, RuntimeError, IndexError, MemoryError, OverflowError,
              NotImplementedError)
DTYPES = [np.float32, np.float64, np.float16, np.int64, np.int32, np.bool_, np.complex64, ">f4", ">f8",
          object]
LAYOUTS = ["contiguous", "fortran", "sliced", "reversed", "broadcast", "misaligned", "readonly", "zero_size"]
tally = collections.Counter()


def shaped_array(dtype, shape, layout, seed):
    rng = np.random.default_rng(seed)
    shape = tuple(shape)
    dtype = np.dtype(dtype)
    base = rng.standard_normal(shape) * 3
    if dtype == object:
        return base.astype(object)
    arr = base.astype(dtype)
    if layout == "fortran":
        arr = np.asfortranarray(arr)
    elif layout == "sliced" and arr.ndim:
        wide = np.zeros(shape[:-1] + (2 * shape[-1],), dtype)
        wide[..., ::2] = arr
        arr = wide[..., ::2]
    elif layout == "reversed" and arr.ndim:
        arr = arr[::-1]
    elif layout == "broadcast" and arr.ndim:
        arr = np.broadcast_to(arr[:1] if shape[0] else arr, shape)
    elif layout == "misaligned" and arr.size and dtype.itemsize > 1:
        raw = np.zeros(arr.nbytes + 1, np.uint8)
        arr = np.frombuffer(raw.data, dtype=dtype, count=arr.size, offset=1).reshape(shape)
    elif layout == "readonly":
        arr.flags.writeable = False
    elif layout == "zero_size":
        arr = np.zeros(shape[:-1] + (0,), dtype) if arr.ndim else arr
    return arr


dims = st.integers(0, 6)
arrays = st.builds(shaped_array, st.sampled_from(DTYPES), st.lists(dims, max_size=4),
                   st.sampled_from(LAYOUTS), st.integers(0, 2 ** 32 - 1))
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=3),
                    st.complex_numbers(allow_nan=True), st.lists(st.floats(), max_size=3))


def to_tensor(a):
    try:
        return cx.tensor(a)
    except DOCUMENTED:
        return a


values = st.one_of(arrays, scalars, arrays.map(to_tensor))


@st.composite
def linear_like(draw):
    """Mostly consistent (n, k, m) shapes, so calls reach the kernels."""
    n, k, m = draw(dims), draw(dims), draw(dims)
    dtype = draw(st.sampled_from(DTYPES[:3]))
    mk = lambda shape: shaped_array(dtype, shape, draw(st.sampled_from(LAYOUTS)), draw(st.integers(0, 99)))
    x, w, b, dy = mk((n, k)), mk((m, k)), mk((m,)), mk((n, m))
    if draw(st.booleans()):
        x = draw(values)
    return x, w, b, dy


TARGETS = {
    "linear_forward": lambda d: ops.linear_forward(*d.draw(linear_like())[:3]),
    "linear_forward_out": lambda d: ops.linear_forward(*d.draw(linear_like())[:3], out=d.draw(values)),
    "linear_backward": lambda d: (lambda x, w, b, dy: ops.linear_backward(
        dy, x, w, input=d.draw(st.booleans()), weight=d.draw(st.booleans()), bias=d.draw(st.booleans())))(
        *d.draw(linear_like())),
    "add_forward": lambda d: ops.add_forward(d.draw(values), d.draw(values), out=d.draw(st.none() | arrays)),
    "add_backward": lambda d: ops.add_backward(d.draw(values), a=d.draw(st.booleans())),
    "mul_constant_forward": lambda d: ops.mul_constant_forward(d.draw(values), d.draw(values | scalars)),
    "mul_constant_backward": lambda d: ops.mul_constant_backward(d.draw(values), d.draw(scalars)),
    "pool_forward": lambda d: ops.global_max_pool_forward(d.draw(values)),
    "pool_backward": lambda d: ops.global_max_pool_backward(
        d.draw(values), d.draw(arrays | st.builds(lambda s: np.full(s, 3, np.int64), st.lists(dims, max_size=3))),
        d.draw(st.lists(st.integers(-2, 6), max_size=5) | scalars)),
    "LinearFunction": lambda d: LinearFunction.apply(*[to_tensor(a) for a in d.draw(linear_like())[:3]]),
    "MulConstant": lambda d: MulConstant.apply(d.draw(values), d.draw(values | scalars)),
    "Add": lambda d: Add.apply(d.draw(values), d.draw(values)),
    "GlobalMaxPool": lambda d: GlobalMaxPool.apply(d.draw(values)),
    "tensor": lambda d: cx.tensor(d.draw(values)),
    "linear_module": lambda d: cx.nn.Linear(d.draw(dims), d.draw(dims))(d.draw(values)),
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    @settings(max_examples=args.examples, deadline=None, database=None, derandomize=args.seed == 0,
              suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(sorted(TARGETS)), st.data())
    def fuzz(name, data):
        try:
            TARGETS[name](data)
            tally[(name, "ok")] += 1
        except DOCUMENTED as error:
            tally[(name, type(error).__name__)] += 1

    np.seterr(all="ignore")
    fuzz()
    total = sum(tally.values())
    outcomes = collections.Counter()
    for (_, outcome), count in tally.items():
        outcomes[outcome] += count
    print("fuzz: %d calls, 0 crashes, 0 undocumented exceptions; outcomes %s"
          % (total, dict(sorted(outcomes.items()))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
