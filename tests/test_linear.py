"""Linear forward/backward kernels against a float64 numpy reference."""
import itertools

import numpy as np
import pytest

from cextend import _backend, ops
from helpers import DTYPES, assert_product_close, layouts, poisoned

SIZES = (0, 1, 2, 7, 13, 64, 97)
SHAPES = [(n, k, m) for n, k, m in itertools.product(SIZES, repeat=3)
          if n * k * m <= 97 * 97 * 13]
WIDE_SHAPES = [(3, 311, 257), (257, 5, 301), (129, 257, 65)]


def operands(rng, n, k, m, dtype):
    x = rng.standard_normal((n, k)).astype(dtype)
    w = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal(m).astype(dtype)
    return x, w, b


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,k,m", SHAPES + WIDE_SHAPES)
def test_forward_matches_reference(n, k, m, dtype):
    rng = np.random.default_rng(n * 10007 + k * 101 + m)
    x, w, b = operands(rng, n, k, m, dtype)
    for bias in (b, None):
        out = poisoned((n, m), dtype)
        y = ops.linear_forward(x, w, bias, out=out)
        assert y is out
        assert_product_close(y, x, w.T, dtype, bias)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,k,m", SHAPES[::3] + WIDE_SHAPES)
def test_backward_matches_reference(n, k, m, dtype):
    rng = np.random.default_rng(n * 7919 + k * 31 + m)
    x, w, _ = operands(rng, n, k, m, dtype)
    dy = rng.standard_normal((n, m)).astype(dtype)
    dx, dw, db = poisoned((n, k), dtype), poisoned((m, k), dtype), poisoned(m, dtype)
    _backend.linear_backward(dy, x, w, dx, dw, db)
    assert_product_close(dx, dy, w, dtype)
    assert_product_close(dw, dy.T, x, dtype)
    assert_product_close(db, np.ones(n), dy, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("wanted", list(itertools.product((False, True), repeat=3)))
def test_backward_computes_exactly_the_requested_gradients(wanted, dtype):
    rng = np.random.default_rng(5)
    x, w, _ = operands(rng, 6, 5, 4, dtype)
    dy = rng.standard_normal((6, 4)).astype(dtype)
    grads = ops.linear_backward(dy, x, w, input=wanted[0], weight=wanted[1], bias=wanted[2])
    full = ops.linear_backward(dy, x, w)
    for want, got, ref in zip(wanted, grads, full):
        if want:
            np.testing.assert_array_equal(got, ref)
        else:
            assert got is None


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_layout_gives_bitwise_the_contiguous_answer(dtype):
    rng = np.random.default_rng(11)
    n, k, m = 9, 13, 7
    x, w, b = operands(rng, n, k, m, dtype)
    dy = rng.standard_normal((n, m)).astype(dtype)
    y_ref = ops.linear_forward(x, w, b)
    grads_ref = ops.linear_backward(dy, x, w)
    for (xn, xv), (wn, wv) in itertools.product(list(layouts(x)), list(layouts(w))):
        np.testing.assert_array_equal(ops.linear_forward(xv, wv, b), y_ref, err_msg="%s/%s" % (xn, wn))
    for (dn, dv), (xn, xv) in itertools.product(list(layouts(dy)), list(layouts(x))):
        for got, ref in zip(ops.linear_backward(dv, xv, w), grads_ref):
            np.testing.assert_array_equal(got, ref, err_msg="%s/%s" % (dn, xn))


@pytest.mark.parametrize("dtype", DTYPES)
def test_sliced_bias_and_sliced_rows(dtype):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((10, 6)).astype(dtype)
    w = rng.standard_normal((8, 12)).astype(dtype)[:, ::2]     # column-sliced: copied
    b = rng.standard_normal(16).astype(dtype)[::2]              # strided bias: copied
    y = ops.linear_forward(x[::2], w, b)
    assert_product_close(y, x[::2], w.T, dtype, b)


@pytest.mark.parametrize("dtype", DTYPES)
def test_batched_input_is_flattened(dtype):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 5, 6)).astype(dtype)
    w = rng.standard_normal((4, 6)).astype(dtype)
    b = rng.standard_normal(4).astype(dtype)
    y = ops.linear_forward(x, w, b)
    assert y.shape == (2, 3, 5, 4)
    assert_product_close(y.reshape(-1, 4), x.reshape(-1, 6), w.T, dtype, b)
    dy = rng.standard_normal(y.shape).astype(dtype)
    dx, dw, db = ops.linear_backward(dy, x, w)
    assert dx.shape == x.shape
    assert_product_close(dx.reshape(-1, 6), dy.reshape(-1, 4), w, dtype)
    assert_product_close(dw, dy.reshape(-1, 4).T, x.reshape(-1, 6), dtype)
    # A non-contiguous batched input (transposed inner dims) is reshaped by copy.
    xt = np.ascontiguousarray(x.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
    np.testing.assert_array_equal(ops.linear_forward(xt, w, b), y)


@pytest.mark.parametrize("dtype", DTYPES)
def test_one_dimensional_input(dtype):
    x = np.arange(3, dtype=dtype)
    w = np.ones((2, 3), dtype)
    np.testing.assert_array_equal(ops.linear_forward(x, w), np.array([3, 3], dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_zero_sizes(dtype):
    # K = 0: the output is the bias (or zeros); N = 0 / M = 0: empty outputs.
    b = np.arange(3, dtype=dtype)
    y = ops.linear_forward(np.empty((4, 0), dtype), np.empty((3, 0), dtype), b,
                           out=poisoned((4, 3), dtype))
    np.testing.assert_array_equal(y, np.tile(b, (4, 1)))
    assert ops.linear_forward(np.empty((0, 5), dtype), np.ones((3, 5), dtype)).shape == (0, 3)
    assert ops.linear_forward(np.ones((4, 5), dtype), np.empty((0, 5), dtype)).shape == (4, 0)
    dx, dw, db = ops.linear_backward(np.empty((0, 3), dtype), np.empty((0, 5), dtype),
                                     np.ones((3, 5), dtype))
    assert dx.shape == (0, 5)
    np.testing.assert_array_equal(dw, np.zeros((3, 5), dtype))
    np.testing.assert_array_equal(db, np.zeros(3, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_out_overlapping_an_input_reads_the_inputs_first(dtype):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((5, 5)).astype(dtype)
    w = rng.standard_normal((5, 5)).astype(dtype)
    expected = ops.linear_forward(x, w)
    ops.linear_forward(x, w, out=x)        # in place over the input
    np.testing.assert_array_equal(x, expected)


def test_nan_and_inf_propagate_only_where_the_math_says():
    x = np.array([[1.0, np.nan], [1.0, 2.0]])
    w = np.array([[1.0, 0.0], [np.inf, 1.0]])
    y = ops.linear_forward(x, w)
    # Row 0 meets the NaN; row 1 meets inf * 1 in column 1 only.
    assert np.isnan(y[0]).all()
    assert y[1, 0] == 1.0 and y[1, 1] == np.inf
