"""add and mul_constant (extension-ffi's example ops) against numpy."""
import numpy as np
import pytest

from cextend import ops
from helpers import DTYPES, poisoned

SHAPES = [(0,), (1,), (7,), (3, 5), (2, 0, 4), (4, 13, 17), (1031,)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_add_is_exact(shape, dtype):
    rng = np.random.default_rng(len(shape))
    a = rng.standard_normal(shape).astype(dtype)
    b = rng.standard_normal(shape).astype(dtype)
    out = ops.add_forward(a, b, out=poisoned(shape, dtype))
    np.testing.assert_array_equal(out, a + b)     # one rounding, as numpy's
    g = rng.standard_normal(shape).astype(dtype)
    grad_a, grad_b = ops.add_backward(g)
    np.testing.assert_array_equal(grad_a, g)
    np.testing.assert_array_equal(grad_b, g)
    assert ops.add_backward(g, a=False)[0] is None
    assert ops.add_backward(g, b=False)[1] is None


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("c", [2.5, -1, 0.0, 1e-3])
def test_mul_constant_is_exact(shape, c, dtype):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype(dtype)
    out = ops.mul_constant_forward(x, c, out=poisoned(shape, dtype))
    np.testing.assert_array_equal(out, x * dtype(c))
    np.testing.assert_array_equal(ops.mul_constant_backward(x, c), x * dtype(c))


@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_inputs_are_read_correctly(dtype):
    rng = np.random.default_rng(9)
    a = rng.standard_normal((6, 8)).astype(dtype)
    b = rng.standard_normal((8, 6)).astype(dtype)
    np.testing.assert_array_equal(ops.add_forward(a[:, ::2], b.T[:, ::2]), a[:, ::2] + b.T[:, ::2])
    np.testing.assert_array_equal(ops.mul_constant_forward(a[::-1], 3.0), a[::-1] * 3)
    bcast = np.broadcast_to(np.arange(4, dtype=dtype), (3, 4))
    np.testing.assert_array_equal(ops.add_forward(bcast, bcast), bcast * 2)


@pytest.mark.parametrize("dtype", DTYPES)
def test_in_place_and_overlapping_outputs(dtype):
    a = np.arange(10, dtype=dtype)
    b = np.ones(10, dtype)
    ops.add_forward(a, b, out=a)
    np.testing.assert_array_equal(a, np.arange(10) + 1)
    # out overlapping a shifted view of the input: same as copying the input first.
    base = np.arange(12, dtype=dtype)
    expected = base[:10] * 2
    ops.mul_constant_forward(base[:10], 2, out=base[2:])
    np.testing.assert_array_equal(base[2:], expected)


def test_nan_and_inf_propagate():
    x = np.array([np.nan, np.inf, -np.inf, 1.0])
    np.testing.assert_array_equal(ops.mul_constant_forward(x, 2.0), x * 2)
    with np.errstate(invalid="ignore"):          # inf + -inf is NaN, as IEEE says
        expected = x + x[::-1]
    np.testing.assert_array_equal(ops.add_forward(x, x[::-1]), expected)
