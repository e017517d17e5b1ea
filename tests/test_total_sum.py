"""A float tensor's total, x.sum() with no dim (a loss), from one C call
(cextend_sum_*, src/generic/training.c) instead of numpy's reduction.

The result is specified as numpy's np.sum to the bit (the path it replaces),
so numpy is the reference for the bits; math.fsum, the exactly rounded sum,
checks that it is a sum at all.  Strided, transposed and broadcast data
keep numpy's path, with the same answer.
"""
import math
import warnings

import numpy as np
import pytest

import cextend as cx
from cextend import _backend
from cextend._C import ffi, lib

DTYPES = [np.float32, np.float64]
# Around the pairwise sum's cut-offs: 8 (a stretch summed in order), 128 (the
# largest stretch of 8 partial sums) and the halving of longer ones.
SIZES = [0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 127, 128, 129, 130, 136, 255, 256, 257, 263, 1000, 1021,
         4096, 4097, 65537]
SHAPES = [(0, 3), (3, 0), (1, 1), (5, 7), (17, 1, 33), (2, 3, 4, 5), (300, 300), (64, 10), (1, 8)]


def bits(value):
    value = np.asarray(value)
    return value.view(np.uint32 if value.dtype == np.float32 else np.uint64).item()


def wide(rng, shape, dtype):
    """Values over six orders of magnitude and both signs: rounding shows."""
    size = int(np.prod(shape))
    return (rng.standard_normal(size) * 10.0 ** rng.uniform(-3, 3, size)).reshape(shape).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", SIZES)
def test_total_is_numpys_sum_to_the_bit(size, dtype):
    x = wide(np.random.default_rng(size), (size,), dtype)
    total = _backend.total_sum(x)
    assert type(total) is np.ndarray and total.shape == () and total.dtype == dtype
    assert bits(total) == bits(np.sum(x))
    exact = math.fsum(x.astype(np.float64))
    bound = max(size, 1) * np.finfo(dtype).eps * float(np.abs(x.astype(np.float64)).sum())
    assert abs(float(total) - exact) <= bound


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_tensor_sum_takes_the_c_path_and_keeps_numpys_bits(shape, dtype, monkeypatch):
    calls = []
    real = _backend.total_sum
    monkeypatch.setattr(_backend, "total_sum", lambda data: calls.append(data.shape) or real(data))
    data = wide(np.random.default_rng(len(shape)), shape, dtype)
    got = cx.from_numpy(data).sum()
    assert calls == [shape]
    assert got.dtype == cx.float32 if dtype == np.float32 else got.dtype == cx.float64
    assert got.shape == ()
    assert bits(got.numpy()) == bits(np.sum(data))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("values,expect", [
    ([-0.0], 0.0), ([-0.0] * 9, 0.0), ([], 0.0), ([np.nan, 1.0], np.nan), ([np.inf, 1.0], np.inf),
    ([np.inf, -np.inf], np.nan), ([-np.inf] * 130, -np.inf), ([1e-45, 1e-45], None), ([3e38] * 20, None),
])
def test_special_values_as_numpy_without_warnings(values, expect, dtype):
    x = np.array(values, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        total = _backend.total_sum(x)
        tensor_total = cx.from_numpy(x).sum().numpy()
    with np.errstate(all="ignore"):
        want = np.sum(x)
    for got in (total, tensor_total):
        assert bits(got) == bits(want)      # a NaN too: the same additions make the same NaN
    if expect is not None:
        assert np.array_equal(np.asarray(want), np.asarray(expect, dtype), equal_nan=True)
        if not np.isnan(expect):
            assert np.signbit(want) == np.signbit(np.asarray(expect, dtype))


def layouts(rng, dtype):
    base = wide(rng, (37, 29), dtype)
    yield "transposed", base.T
    yield "sliced", base[::2, 1::3]
    yield "reversed", base[::-1]
    yield "broadcast", np.broadcast_to(base[0], (5, 29))
    yield "column", base[:, 3]


@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_data_keeps_numpys_path_and_answer(dtype):
    for name, view in layouts(np.random.default_rng(3), dtype):
        assert _backend.total_sum(view) is None, name
    x = cx.from_numpy(wide(np.random.default_rng(4), (37, 29), dtype))
    for view in (x.t(), x[::2, 1::3], x[:, 3], x.flip(0), x.expand(3, 37, 29)):
        assert bits(view.sum().numpy()) == bits(np.sum(view.numpy()))


@pytest.mark.parametrize("dtype", DTYPES)
def test_read_only_data_is_summed(dtype):
    x = wide(np.random.default_rng(5), (200,), dtype)
    x.setflags(write=False)
    assert bits(_backend.total_sum(x)) == bits(np.sum(x))


@pytest.mark.parametrize("data", [np.arange(6, dtype=np.int64), np.ones(4, np.float16),
                                  np.ones(3, ">f4"), np.ones(3, np.complex64), [1.0, 2.0]])
def test_other_dtypes_are_not_taken(data):
    assert _backend.total_sum(data) is None


@pytest.mark.parametrize("sfx,ctype", [("f32", "float"), ("f64", "double")])
def test_empty_input_may_be_null(sfx, ctype):
    total = ffi.new(ctype + "[1]", [7.0])
    assert getattr(lib, "cextend_sum_" + sfx)(0, ffi.NULL, total) == 0
    assert total[0] == 0.0 and math.copysign(1.0, total[0]) == 1.0


@pytest.mark.parametrize("dtype", DTYPES)
def test_gradient_of_the_total_is_ones(dtype):
    data = wide(np.random.default_rng(6), (7, 13), dtype)
    x = cx.tensor(data, requires_grad=True)
    loss = (x * 3).sum()
    loss.backward()
    assert x.grad.dtype == x.dtype
    np.testing.assert_array_equal(x.grad.numpy(), np.full(data.shape, 3, dtype))
    assert bits(loss.detach().numpy()) == bits(np.sum(data * dtype(3)))


def test_close_to_torch():
    torch = pytest.importorskip("torch")
    for dtype in DTYPES:
        data = wide(np.random.default_rng(7), (1000,), dtype)
        ours = float(cx.from_numpy(data).sum())
        theirs = float(torch.from_numpy(data).sum())
        exact = math.fsum(data.astype(np.float64))
        scale = float(np.abs(data.astype(np.float64)).sum()) * np.finfo(dtype).eps * 32
        assert abs(ours - exact) <= scale and abs(theirs - exact) <= scale
