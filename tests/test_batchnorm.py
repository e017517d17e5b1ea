"""batch_norm kernels against float64 numpy, in training and evaluation mode.

The statistics are accumulated in double, so even float32 results are
within a few units in the last place of |xhat * w| + |b|, whatever the
channel's offset; the running stats are updated in the same call with
torch's momentum rule and unbiased variance.
"""
import numpy as np
import pytest

import cextend
from cextend import _backend, ops
from helpers import DTYPES, poisoned
from nn_reference import batch_norm, batch_stats

SHAPES = [(4, 3), (5, 2, 7), (3, 4, 5, 6), (1, 3, 2, 5), (2, 1, 1, 1), (0, 3, 4), (6, 0, 2), (2, 5, 1, 13, 3)]


def _inputs(shape, dtype, seed, offset=0.0):
    rng = np.random.default_rng(seed)
    c = shape[1]
    x = (offset + rng.standard_normal(shape) * rng.uniform(0.5, 3.0)).astype(dtype)
    return (x, rng.standard_normal(c).astype(dtype), rng.standard_normal(c).astype(dtype),
            rng.standard_normal(c).astype(dtype), rng.uniform(0.5, 2.0, c).astype(dtype))


def _ulps(dtype):
    return 8 * np.finfo(dtype).eps / 2


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("affine", [True, False])
def test_training_forward_and_running_stats(shape, affine, dtype):
    x, w, b, running_mean, running_var = _inputs(shape, dtype, seed=sum(shape))
    w, b = (w, b) if affine else (None, None)
    m = shape[0] * int(np.prod(shape[2:]))
    if m == 1:
        pytest.skip("one value per channel: training is rejected (see test_errors)")
    rm, rv = running_mean.copy(), running_var.copy()
    n, c, s = shape[0], shape[1], int(np.prod(shape[2:]))
    y, save_mean, save_invstd = poisoned((n, c, s), dtype), poisoned(c, dtype), poisoned(c, dtype)
    if c:
        _backend.batch_norm_forward(x.reshape(n, c, s), w, b, rm, rv, True, 0.3, 1e-5, y, save_mean, save_invstd)
    mean, var, _ = batch_stats(x)
    ref, xhat = batch_norm(x, mean, var, w, b, 1e-5)
    bound = np.abs(xhat) * (1 if w is None else np.abs(w.astype(np.float64)).reshape((1, -1) + (1,) * (x.ndim - 2)))
    bound = bound + (0 if b is None else np.abs(b.astype(np.float64)).reshape((1, -1) + (1,) * (x.ndim - 2))) + 1
    assert not np.isnan(y).any()
    np.testing.assert_array_less(np.abs(y.reshape(x.shape) - ref), _ulps(dtype) * bound + 1e-300)
    if m == 0:
        np.testing.assert_array_equal(rm, running_mean)
        np.testing.assert_array_equal(rv, running_var)
        return
    tol = dict(rtol=_ulps(dtype), atol=_ulps(dtype))
    np.testing.assert_allclose(save_mean, mean, **tol)
    np.testing.assert_allclose(save_invstd, 1 / np.sqrt(var + 1e-5), **tol)
    np.testing.assert_allclose(rm, 0.7 * running_mean.astype(np.float64) + 0.3 * mean, **tol)
    np.testing.assert_allclose(rv, 0.7 * running_var.astype(np.float64) + 0.3 * var * m / (m - 1), **tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_evaluation_forward_uses_the_running_stats(shape, dtype):
    x, w, b, running_mean, running_var = _inputs(shape, dtype, seed=1)
    rm, rv = running_mean.copy(), running_var.copy()
    y, save_mean, save_invstd = ops.batch_norm_forward(x, rm, rv, w, b, training=False, eps=1e-3)
    np.testing.assert_array_equal(rm, running_mean)          # not updated
    np.testing.assert_array_equal(rv, running_var)
    ref, xhat = batch_norm(x, running_mean, running_var, w, b, 1e-3)
    scale = np.abs(w.astype(np.float64)).reshape((1, -1) + (1,) * (x.ndim - 2))
    np.testing.assert_array_less(np.abs(y - ref), _ulps(dtype) * (np.abs(xhat) * scale + np.abs(b).reshape(scale.shape) + 1))
    np.testing.assert_array_equal(save_mean, running_mean)


def test_float32_statistics_survive_a_large_offset():
    """Two passes in double: a channel at 1e4 with unit spread keeps its
    variance (a one-pass float32 sum of squares would lose it)."""
    x, w, b, _, _ = _inputs((64, 2, 16, 16), np.float32, seed=3, offset=1e4)
    y, _, save_invstd = ops.batch_norm_forward(x, None, None, w, b, training=True)
    mean, var, _ = batch_stats(x)
    ref, _ = batch_norm(x, mean, var, w, b, 1e-5)
    np.testing.assert_allclose(save_invstd, 1 / np.sqrt(var + 1e-5), rtol=1e-6)
    np.testing.assert_allclose(y, ref, rtol=0, atol=2e-5 * np.abs(ref).max())


def _reference_backward(dy, x, w, mean, invstd, training):
    dy, x = dy.astype(np.float64), x.astype(np.float64)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    axes = (0,) + tuple(range(2, x.ndim))
    m = x.size // max(x.shape[1], 1) if x.shape[1] else 0
    xhat = (x - mean.reshape(shape)) * invstd.reshape(shape)
    db = dy.sum(axis=axes)
    dw = (dy * xhat).sum(axis=axes)
    scale = (1.0 if w is None else w.astype(np.float64).reshape(shape)) * invstd.reshape(shape)
    if training and m:
        dx = scale * (dy - db.reshape(shape) / m - xhat * dw.reshape(shape) / m)
    else:
        dx = scale * dy
    bound_sums = (np.abs(dy).sum(axis=axes), np.abs(dy * xhat).sum(axis=axes))
    return dx, dw, db, bound_sums, scale, xhat


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_backward_matches_reference(shape, training, affine, dtype):
    x, w, _, running_mean, running_var = _inputs(shape, dtype, seed=7)
    w = w if affine else None
    m = shape[0] * int(np.prod(shape[2:]))
    if training and m == 1:
        pytest.skip("one value per channel: training is rejected")
    _, save_mean, save_invstd = ops.batch_norm_forward(x, running_mean.copy(), running_var.copy(), w,
                                                       training=training)
    dy = np.random.default_rng(8).standard_normal(shape).astype(dtype)
    n, c, s = shape[0], shape[1], int(np.prod(shape[2:]))
    dx, dw, db = poisoned((n, c, s), dtype), poisoned(c, dtype), poisoned(c, dtype)
    if c:
        _backend.batch_norm_backward(dy.reshape(n, c, s), x.reshape(n, c, s), w, save_mean, save_invstd,
                                     training, dx, dw, db)
    ref_dx, ref_dw, ref_db, (abs_db, abs_dw), scale, xhat = _reference_backward(
        dy, x, w, save_mean.astype(np.float64), save_invstd.astype(np.float64), training)
    u = _ulps(dtype)
    assert not (np.isnan(dw).any() or np.isnan(db).any() or np.isnan(dx).any())
    np.testing.assert_array_less(np.abs(db - ref_db), u * abs_db + 1e-300)
    np.testing.assert_array_less(np.abs(dw - ref_dw), u * abs_dw + 1e-300)
    if m:
        bound = np.abs(scale) * (np.abs(dy) + (abs_db.reshape(scale.shape) + np.abs(xhat) *
                                                abs_dw.reshape(scale.shape)) / m)
        np.testing.assert_array_less(np.abs(dx.reshape(shape) - ref_dx), 2 * u * bound + 1e-300)


@pytest.mark.parametrize("dtype", DTYPES)
def test_layouts_and_threads_give_bitwise_the_same_answer(dtype):
    x, w, b, running_mean, running_var = _inputs((16, 6, 64, 31), dtype, seed=9)
    dy = np.random.default_rng(10).standard_normal(x.shape).astype(dtype)

    def run(x, dy):
        rm, rv = running_mean.copy(), running_var.copy()
        y, mean, invstd = ops.batch_norm_forward(x, rm, rv, w, b, training=True)
        grads = ops.batch_norm_backward(dy, x, w, mean, invstd, training=True)
        return (y, mean, invstd, rm, rv) + grads

    reference = run(x, dy)
    wide = np.full((16, 9, 64, 31), np.nan, dtype)
    wide[:, 2:8] = x
    channels_last = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    for name, view in [("channel_sliced", wide[:, 2:8]), ("channels_last", channels_last)]:
        for got, ref in zip(run(view, dy), reference):
            np.testing.assert_array_equal(got, ref, err_msg=name)
    before = cextend.get_num_threads()
    try:
        for threads in (1, 2, 3):
            cextend.set_num_threads(threads)
            for got, ref in zip(run(x, dy), reference):
                np.testing.assert_array_equal(got, ref)
    finally:
        cextend.set_num_threads(before)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(64, 32, 4, 4), (16, 6, 64, 31), (5, 3, 1, 7)])
def test_every_isa_gives_bitwise_the_same_answer(shape, dtype):
    """The kernels are compiled for plain x86-64, AVX2 and AVX-512 alike; wider vectors must
    not change a bit (no FMA contraction, the same order of additions), training or not,
    contiguous or channel-sliced."""
    x, w, b, running_mean, running_var = _inputs(shape, dtype, seed=11)
    dy = np.random.default_rng(12).standard_normal(shape).astype(dtype)
    wide = np.full((shape[0], shape[1] + 3) + shape[2:], np.nan, dtype)
    wide[:, 1:shape[1] + 1] = x

    def run(x, training):
        rm, rv = running_mean.copy(), running_var.copy()
        y, mean, invstd = ops.batch_norm_forward(x, rm, rv, w, b, training=training)
        return (y, mean, invstd, rm, rv) + ops.batch_norm_backward(dy, x, w, mean, invstd, training=training)

    before = _backend.get_isa()
    answers = {}
    try:
        for isa in _backend.available_isas():
            _backend.set_isa(isa)
            for training in (True, False):
                answers[isa, training, "contiguous"] = run(x, training)
                answers[isa, training, "sliced"] = run(wide[:, 1:shape[1] + 1], training)
    finally:
        _backend.set_isa(before)
    for (isa, training, layout), got in answers.items():
        for a, ref in zip(got, answers[_backend.available_isas()[0], training, "contiguous"]):
            np.testing.assert_array_equal(a, ref, err_msg="%s, training=%s, %s" % (isa, training, layout))


def test_errors():
    x = np.zeros((1, 3))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        ops.batch_norm_forward(x, training=True)
    with pytest.raises(ValueError, match="running_mean and running_var must be given in evaluation mode"):
        ops.batch_norm_forward(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="running_mean should contain 3 elements"):
        ops.batch_norm_forward(np.zeros((2, 3)), np.zeros(2), np.ones(3))
    with pytest.raises(TypeError, match="running_var must have dtype float64"):
        ops.batch_norm_forward(np.zeros((2, 3)), np.zeros(3), np.ones(3, np.float32))
    with pytest.raises(ValueError, match="running_mean is read-only"):
        frozen = np.zeros(3)
        frozen.flags.writeable = False
        ops.batch_norm_forward(np.zeros((2, 3)), frozen, np.ones(3), training=True)
    with pytest.raises(ValueError, match="running_var must be contiguous"):
        ops.batch_norm_forward(np.zeros((2, 3)), np.zeros(3), np.ones(6)[::2], training=True)
    with pytest.raises(ValueError, match=r"x must have at least 2 dimension"):
        ops.batch_norm_forward(np.zeros(3), training=True)
    with pytest.raises(ValueError, match="w should contain 3 elements"):
        ops.batch_norm_forward(np.zeros((2, 3)), None, None, np.ones(4), training=True)
    with pytest.raises(ValueError, match="grad_out must have shape"):
        ops.batch_norm_backward(np.zeros((2, 2)), np.zeros((2, 3)), None, np.zeros(3), np.ones(3), training=True)
