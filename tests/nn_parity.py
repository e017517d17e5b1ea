"""Running one call in cextend and in torch 2.13 and comparing everything a
program can see: the value (shape, dtype, numbers, NaN places), the
gradient of every input that requires grad, the warnings, and, for bad
input, the exception type and message.

Arguments are described once with numpy: a float ndarray becomes a
tensor of the test's dtype that requires grad; Fixed(array) becomes a
tensor that does not (targets, indices, class weights); anything else is
passed through.  Both libraries get the same numbers.
"""
import re
import warnings

import numpy as np
import pytest

import cextend as cx

torch = pytest.importorskip("torch", reason="torch 2.13 is the reference for the nn parity tests; "
                            "install it with .venv/bin/pip install torch==2.13.0")

TORCH_DTYPES = {np.dtype(np.float32): torch.float32, np.dtype(np.float64): torch.float64,
                np.dtype(np.float16): torch.float16, np.dtype(np.int64): torch.int64,
                np.dtype(np.int32): torch.int32, np.dtype(np.uint8): torch.uint8,
                np.dtype(np.bool_): torch.bool}
# Forward and gradient tolerances: float32 results of sums of a few hundred
# terms may differ from torch's (different summation order) by a few ulps
# of the sum's magnitude.
TOLERANCES = {np.dtype(np.float64): (1e-10, 1e-12), np.dtype(np.float32): (2e-5, 2e-6),
              np.dtype(np.float16): (2e-3, 2e-3)}


class Fixed:
    """An argument that becomes a tensor which does not require grad."""

    def __init__(self, array, cast=False):
        self.array = np.asarray(array)
        self.cast = cast      # take the test's float dtype (class weights, soft targets)


class Layout:
    """How float inputs are laid out in memory for cextend (torch gets a copy)."""

    @staticmethod
    def contiguous(a):
        return a.copy()

    @staticmethod
    def transposed(a):
        # Same values, stored transposed: a view whose strides are reversed.
        if a.ndim < 2:
            return a.copy()
        return np.ascontiguousarray(np.swapaxes(a, 0, -1)).swapaxes(0, -1)

    @staticmethod
    def sliced(a):
        # Same values, every other element of a bigger (NaN-filled) buffer.
        if a.ndim == 0:
            return a.copy()
        big = np.full(a.shape[:-1] + (2 * a.shape[-1],), np.nan, a.dtype)
        big[..., ::2] = a
        return big[..., ::2]


def _build(args, kwargs, dtype, lib, layout):
    made = []

    def convert(a):
        if isinstance(a, Fixed):
            arr = a.array.astype(dtype) if a.cast else a.array
            if lib == "torch":
                return torch.from_numpy(arr.copy())
            return cx.from_numpy(arr.copy())
        if isinstance(a, np.ndarray) and a.dtype.kind == "f":
            arr = a.astype(dtype)
            if lib == "torch":
                t = torch.from_numpy(arr.copy()).requires_grad_()
            else:
                t = cx.from_numpy(layout(arr)).requires_grad_()
            made.append(t)
            return t
        if isinstance(a, np.ndarray):
            return torch.from_numpy(a.copy()) if lib == "torch" else cx.from_numpy(a.copy())
        return a

    return [convert(a) for a in args], {k: convert(v) for k, v in kwargs.items()}, made


def _normalise(message):
    return re.sub(r"\btorch\b", "cextend", str(message))


# The core's mean() of an empty tensor lets numpy's "Mean of empty slice"
# RuntimeWarning through (reported to the lead; torch is silent).  It is the
# one warning not compared.
_CORE_LEAKS = ("Mean of empty slice",)


def _warnings(caught):
    return [_normalise(w.message) for w in caught if str(w.message) not in _CORE_LEAKS]


def call_both(ours, theirs, args, kwargs=None, dtype=np.float64, layout=Layout.contiguous):
    """(our result, torch's result, our leaves, torch's leaves, our warnings, torch's warnings)."""
    kwargs = kwargs or {}
    c_args, c_kwargs, c_leaves = _build(args, kwargs, dtype, "cextend", layout)
    t_args, t_kwargs, t_leaves = _build(args, kwargs, dtype, "torch", layout)
    with warnings.catch_warnings(record=True) as ours_w:
        warnings.simplefilter("always")
        mine = ours(*c_args, **c_kwargs)
    with warnings.catch_warnings(record=True) as theirs_w:
        warnings.simplefilter("always")
        ref = theirs(*t_args, **t_kwargs)
    return mine, ref, c_leaves, t_leaves, _warnings(ours_w), _warnings(theirs_w)


def assert_same_tensor(mine, ref, tolerance=None):
    assert isinstance(mine, cx.Tensor), type(mine)
    assert tuple(mine.shape) == tuple(ref.shape), (tuple(mine.shape), tuple(ref.shape))
    assert mine.dtype.name == str(ref.dtype).replace("torch.", ""), (mine.dtype, ref.dtype)
    a, b = mine.detach().numpy(), ref.detach().numpy()
    if a.dtype.kind != "f":
        np.testing.assert_array_equal(a, b)
        return
    rtol, atol = tolerance or TOLERANCES[a.dtype]
    np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=atol,
                               equal_nan=True)


def check(ours, theirs, args, kwargs=None, dtype=np.float64, grad=True, layout=Layout.contiguous,
          tolerance=None, warns=True):
    """Same value, dtype, grad_fn presence, warnings and gradients as torch."""
    mine, ref, c_leaves, t_leaves, c_warn, t_warn = call_both(ours, theirs, args, kwargs, dtype, layout)
    assert_same_tensor(mine, ref, tolerance)
    assert mine.requires_grad == ref.requires_grad
    if warns:
        assert c_warn == t_warn
    if grad and ref.requires_grad and c_leaves:
        rng = np.random.default_rng(7)
        g = rng.standard_normal(tuple(ref.shape)).astype(mine.detach().numpy().dtype)
        c_grads = cx.autograd.grad(mine, c_leaves, cx.from_numpy(g.copy()), allow_unused=True)
        t_grads = torch.autograd.grad(ref, t_leaves, torch.from_numpy(g.copy()), allow_unused=True)
        for cg, tg in zip(c_grads, t_grads):
            if tg is None:
                assert cg is None or not np.any(cg.numpy())
                continue
            assert_same_tensor(cg, tg, tolerance)
    return mine, ref


def same_error(ours, theirs, args=(), kwargs=None, dtype=np.float64):
    """Both raise, the same exception type and message (torch spelled cextend)."""
    kwargs = kwargs or {}
    c_args, c_kwargs, _ = _build(args, kwargs, dtype, "cextend", Layout.contiguous)
    t_args, t_kwargs, _ = _build(args, kwargs, dtype, "torch", Layout.contiguous)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as theirs_info:
            theirs(*t_args, **t_kwargs)
        with pytest.raises(Exception) as ours_info:
            ours(*c_args, **c_kwargs)
    assert type(ours_info.value) is type(theirs_info.value), (ours_info.value, theirs_info.value)
    assert _normalise(ours_info.value) == _normalise(theirs_info.value)
