"""Global max pool forward/backward against numpy's max/argmax."""
import numpy as np
import pytest

from cextend import ops
from helpers import DTYPES

SHAPES = [(2, 3, 4, 4), (1, 1, 1, 1), (3, 5, 7), (0, 3, 2, 2), (2, 1, 13, 1), (4, 9, 31, 17)]


def reference(x):
    flat = x.reshape(x.shape[:-2] + (x.shape[-2] * x.shape[-1],))
    return flat.max(-1), flat.argmax(-1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_forward_matches_argmax(shape, dtype):
    x = np.random.default_rng(1).standard_normal(shape).astype(dtype)
    values, indices = ops.global_max_pool_forward(x)
    ref_values, ref_indices = reference(x)
    assert values.dtype == dtype and indices.dtype == np.int64
    np.testing.assert_array_equal(values, ref_values)
    np.testing.assert_array_equal(indices, ref_indices)


@pytest.mark.parametrize("dtype", DTYPES)
def test_ties_take_the_lowest_index_and_nan_wins(dtype):
    x = np.zeros((1, 4, 2, 3), dtype)
    x[0, 1, 1, 2] = np.nan                  # NaN beats everything...
    x[0, 1, 0, 0] = 5
    x[0, 2, 0, 1] = np.nan                  # ...and the first NaN wins
    x[0, 2, 1, 1] = np.nan
    x[0, 3] = -np.inf                        # all -inf: index 0
    values, indices = ops.global_max_pool_forward(x)
    np.testing.assert_array_equal(indices, reference(x)[1])
    np.testing.assert_array_equal(indices[0], [0, 5, 1, 0])
    assert np.isnan(values[0, 1]) and np.isnan(values[0, 2])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_backward_scatters_to_the_argmax(shape, dtype):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape).astype(dtype)
    _, indices = ops.global_max_pool_forward(x)
    g = rng.standard_normal(shape[:-2]).astype(dtype)
    grad_x = ops.global_max_pool_backward(g, indices, shape)
    expected = np.zeros(shape[:-2] + (shape[-2] * shape[-1],), dtype)
    np.put_along_axis(expected, indices[..., None], g[..., None], axis=-1)
    np.testing.assert_array_equal(grad_x, expected.reshape(shape))


@pytest.mark.parametrize("dtype", DTYPES)
def test_non_contiguous_input(dtype):
    x = np.random.default_rng(3).standard_normal((3, 2, 6, 5)).astype(dtype)
    view = x.transpose(1, 0, 3, 2)[:, :, ::2]
    values, indices = ops.global_max_pool_forward(view)
    np.testing.assert_array_equal(indices, reference(np.ascontiguousarray(view))[1])


def test_out_of_range_indices_are_rejected_by_c():
    g = np.ones((1, 2))
    with pytest.raises(ValueError, match=r"argument 4 \(indices\).*outside \[0, 4\)"):
        ops.global_max_pool_backward(g, np.array([[0, 4]]), (1, 2, 2, 2))
    with pytest.raises(ValueError, match="indices"):
        ops.global_max_pool_backward(g, np.array([[-1, 0]]), (1, 2, 2, 2))


def test_empty_planes_are_rejected():
    with pytest.raises(ValueError, match="x has empty"):
        ops.global_max_pool_forward(np.ones((2, 3, 0, 4)))
