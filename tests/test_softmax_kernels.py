"""The row kernels of a classifier's loss (src/generic/softmax.c): softmax,
log_softmax, their backward, and nll_loss forward and backward.

References are float64 numpy formulas computed independently of the
kernels (float32 results within a few ulps of them), the numpy path the
kernels replace (which stays for other layouts and dtypes), and torch 2.13
where it is installed.  The C API is also called directly with bad
arguments: each gives a status and writes nothing.
"""
import numpy as np
import pytest

import cextend as cx
import cextend.nn.functional as F
from cextend import _backend
from cextend._C import ffi, lib
from cextend._errors import ArgumentError

try:
    import torch
except ImportError:
    torch = None

DTYPES = [np.float32, np.float64]
SHAPES = [(1, 1), (1, 7), (5, 1), (3, 13), (32, 10), (17, 257), (0, 4), (4, 0), (300, 1001)]


def tolerance(dtype):
    return dict(rtol=2e-6, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-13, atol=1e-13)


def reference_softmax(x, log):
    x = x.astype(np.float64)
    shifted = x - x.max(axis=-1, keepdims=True)
    total = np.exp(shifted).sum(axis=-1, keepdims=True)
    return shifted - np.log(total) if log else np.exp(shifted) / total


def inputs(rng, shape, dtype, scale=3.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("log", [False, True])
def test_softmax_rows_match_a_float64_reference(dtype, shape, log):
    rng = np.random.default_rng(hash(shape) % 1000)
    x = inputs(rng, shape, dtype)
    out = _backend.softmax_rows(x, log)
    assert out.dtype == dtype and out.shape == shape and out.flags.c_contiguous
    if x.size:
        np.testing.assert_allclose(out, reference_softmax(x, log), **tolerance(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("log", [False, True])
def test_softmax_rows_backward_matches_a_float64_reference(dtype, log):
    rng = np.random.default_rng(3)
    for shape in SHAPES:
        x, g = inputs(rng, shape, dtype), inputs(rng, shape, dtype, 1.0)
        y = _backend.softmax_rows(x, log)
        grad = _backend.softmax_backward_rows(g, y, log)
        y64, g64 = y.astype(np.float64), g.astype(np.float64)
        if log:
            expected = g64 - np.exp(y64) * g64.sum(-1, keepdims=True)
        else:
            expected = y64 * (g64 - (g64 * y64).sum(-1, keepdims=True))
        np.testing.assert_allclose(grad, expected, rtol=tolerance(dtype)["rtol"] * 10,
                                   atol=tolerance(dtype)["atol"] * 10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_nan_and_infinite_rows_as_torch(dtype):
    x = np.array([[1.0, np.nan, 2.0], [np.nan, 1.0, 2.0], [-np.inf] * 3, [np.inf, 0.0, 1.0],
                  [-np.inf, 0.0, 1.0]], dtype)
    for log in (False, True):
        out = _backend.softmax_rows(x, log)
        assert np.isnan(out[:4]).all()          # NaN anywhere, all -inf, or a +inf: the row is NaN
        finite = reference_softmax(np.array([[0.0, 1.0]]), log)[0]
        np.testing.assert_allclose(out[4, 1:], finite, **tolerance(dtype))
        assert out[4, 0] == (-np.inf if log else 0.0)
        if torch is not None:
            theirs = (torch.log_softmax if log else torch.softmax)(torch.from_numpy(x), -1).numpy()
            np.testing.assert_array_equal(np.isnan(out), np.isnan(theirs))


def test_results_do_not_depend_on_the_thread_count():
    rng = np.random.default_rng(5)
    x, g = inputs(rng, (2000, 301), np.float32), inputs(rng, (2000, 301), np.float32)
    previous = cx.get_num_threads()
    try:
        results = []
        for threads in (1, 2):
            cx.set_num_threads(threads)
            y = _backend.softmax_rows(x, True)
            results.append((y, _backend.softmax_backward_rows(g, y, True), _backend.softmax_rows(x, False)))
    finally:
        cx.set_num_threads(previous)
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def _exponentials(y):
    """exp(y) as the kernels compute it: log_softmax's gradient of a one-hot incoming
    gradient in the last column is -exp(y) elsewhere (the product by 1.0 is exact)."""
    rows = np.zeros((y.size, 2), y.dtype)
    rows[:, 0] = y
    g = np.zeros_like(rows)
    g[:, 1] = 1
    return -_backend.softmax_backward_rows(g, rows, True)[:, 0]


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_exponential_is_accurate_and_ieee_at_the_edges(dtype):
    if np.finfo(np.longdouble).nmant <= np.finfo(np.float64).nmant:
        pytest.skip("long double is no wider than double here: no exact reference")
    rng = np.random.default_rng(11)
    top = 88.7 if dtype == np.float32 else 709.7
    y = np.concatenate([rng.uniform(-top - 15, top, 200000), rng.standard_normal(20000) * 1e-3,
                        [0.0, -0.0, 1e-30, -1e-30, top, -top]]).astype(dtype)
    ours = _exponentials(y)
    exact = np.exp(y.astype(np.longdouble))
    spacing = np.spacing(exact.astype(dtype)).astype(np.longdouble)
    ulps = np.abs(ours.astype(np.longdouble) - exact) / np.where(spacing > 0, spacing, 1)
    # faithfully rounded (libm's is correctly rounded but a scalar call; torch's vectorised one
    # is within 1 ulp too), subnormal results within one of their spacing
    assert ulps.max() <= 1
    with np.errstate(over="ignore"):
        special = np.array([-np.inf, np.inf, np.nan, 1e4, -1e4], dtype)
        np.testing.assert_array_equal(_exponentials(special), np.exp(special))


@pytest.mark.parametrize("dtype", DTYPES)
def test_results_do_not_depend_on_the_instruction_set(dtype):
    rng = np.random.default_rng(13)
    x, g = inputs(rng, (37, 301), dtype, 20.0), inputs(rng, (37, 301), dtype)
    previous = _backend.get_isa()
    results = {}
    try:
        for isa in _backend.available_isas():
            _backend.set_isa(isa)
            y = _backend.softmax_rows(x, True)
            results[isa] = (y, _backend.softmax_backward_rows(g, y, True), _backend.softmax_rows(x, False),
                            _backend.softmax_backward_rows(g, _backend.softmax_rows(x, False), False))
    finally:
        _backend.set_isa(previous)
    first = next(iter(results.values()))
    for isa, got in results.items():
        for a, b in zip(got, first):
            np.testing.assert_array_equal(a, b, err_msg=isa)


def test_operands_the_kernels_do_not_take_are_handed_back():
    x = np.ones((4, 6))
    assert _backend.softmax_rows(x.T, True) is None                  # not C-contiguous
    assert _backend.softmax_rows(x[:, ::2], True) is None
    assert _backend.softmax_rows(x.astype(np.float16), True) is None
    assert _backend.softmax_rows(np.ones(()), True) is None
    assert _backend.softmax_backward_rows(x, x.astype(np.float32), True) is None
    assert _backend.softmax_backward_rows(x, np.ones((4, 5)), True) is None
    t = np.zeros(4, np.int64)
    assert _backend.nll_rows_supported(x, t, None, -100)
    assert not _backend.nll_rows_supported(x.T.copy(), t, None, -100)       # 4 targets, 6 rows
    assert not _backend.nll_rows_supported(x, t.astype(np.int32), None, -100)
    assert not _backend.nll_rows_supported(x, t, np.ones(6, np.float32), -100)
    assert not _backend.nll_rows_supported(x, t, None, 2 ** 63)
    assert not _backend.nll_rows_supported(np.ones((4, 6, 2)), t, None, -100)


# -- the functional ops on both paths ------------------------------------------------------

@pytest.mark.parametrize("dtype", [cx.float32, cx.float64])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_ops_and_gradients_on_every_layout(dtype, layout, fn):
    rng = np.random.default_rng(11)
    base = rng.standard_normal((9, 14)) * 2
    typed = base.astype(dtype.numpy)
    # Fortran order is a transposed layout: only the contiguous one reaches the C kernels
    data = {"contiguous": typed, "transposed": np.asfortranarray(typed), "sliced": typed[:, ::2]}[layout]
    x = cx.from_numpy(data).requires_grad_()
    g = rng.standard_normal(x.shape)
    for dim in (-1, 0):
        y = getattr(F, fn)(x, dim)
        expected = np.moveaxis(reference_softmax(np.moveaxis(x.detach().numpy(), dim, -1), fn == "log_softmax"),
                               -1, dim)
        np.testing.assert_allclose(y.detach().numpy(), expected, **tolerance(dtype.numpy))
        x.grad = None
        (y * cx.from_numpy(g.astype(dtype.numpy))).sum().backward()
        y64 = expected
        if fn == "log_softmax":
            grad = g - np.exp(y64) * g.sum(dim, keepdims=True)
        else:
            grad = y64 * (g - (g * y64).sum(dim, keepdims=True))
        np.testing.assert_allclose(x.grad.numpy(), grad, rtol=1e-5 if dtype == cx.float32 else 1e-12,
                                   atol=1e-5 if dtype == cx.float32 else 1e-12)


@np.errstate(divide="ignore", invalid="ignore")       # nothing picked: 0 / 0, as torch's
def nll_reference(x, target, weight, ignore_index, reduction):
    x = x.astype(np.float64)
    rows = np.arange(len(target))
    valid = target != ignore_index
    w = np.ones(x.shape[1]) if weight is None else weight.astype(np.float64)
    picked = np.where(valid, -w[np.where(valid, target, 0)] * x[rows, np.where(valid, target, 0)], 0.0)
    total_weight = np.where(valid, w[np.where(valid, target, 0)], 0.0).sum()
    grad = np.zeros_like(x)
    scale = 1 / total_weight if reduction == "mean" else 1.0
    grad[rows[valid], target[valid]] = -w[target[valid]] * scale
    if reduction == "none":
        return picked, grad
    if reduction == "sum":
        return picked.sum(), grad
    return picked.sum() / total_weight, grad


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss_matches_a_float64_reference(dtype, reduction, weighted):
    rng = np.random.default_rng(7)
    for rows, classes in [(1, 1), (5, 3), (32, 10), (0, 4), (97, 31)]:
        x = inputs(rng, (rows, classes), dtype)
        target = rng.integers(0, classes, rows)
        target[::3] = -100 if rows > 2 else target[::3]
        weight = rng.uniform(0.5, 2.0, classes).astype(dtype) if weighted else None
        xt = cx.from_numpy(x.copy()).requires_grad_()
        loss = F.nll_loss(xt, cx.from_numpy(target), None if weight is None else cx.from_numpy(weight),
                          reduction=reduction)
        expected, grad = nll_reference(x, target, weight, -100, reduction)
        assert loss.dtype.numpy == dtype
        if rows or reduction != "mean":
            np.testing.assert_allclose(loss.detach().numpy(), expected, **tolerance(dtype))
        else:
            assert np.isnan(loss.item())        # nothing to average: 0 / 0, as torch's
        loss.backward(cx.ones_like(loss))
        if rows:
            np.testing.assert_allclose(xt.grad.numpy(), grad, **tolerance(dtype))


def test_ignored_rows_are_plus_zero_even_with_nan_gradients():
    x = cx.from_numpy(np.array([[np.nan, 1.0], [2.0, 3.0], [np.inf, np.nan]])).requires_grad_()
    loss = F.nll_loss(x, cx.tensor([1, 1, 5]), ignore_index=5, reduction="none")
    values = loss.detach().numpy()
    np.testing.assert_array_equal(values[:2], [-1.0, -3.0])
    assert values[2] == 0.0 and not np.signbit(values[2])     # skipped, not -0.0 * inf
    loss.backward(cx.from_numpy(np.array([1.0, np.nan, np.nan])))
    grad = x.grad.numpy()
    np.testing.assert_array_equal(grad[0], [0.0, -1.0])
    assert np.isnan(grad[1, 1]) and grad[1, 0] == 0.0
    assert (grad[2] == 0.0).all() and not np.signbit(grad[2]).any()


def test_out_of_range_targets_raise_index_error_and_write_nothing():
    x = cx.randn(4, 5, requires_grad=True)
    for bad in (5, -1, 2 ** 40):
        with pytest.raises(IndexError, match="Target %d is out of bounds" % bad):
            F.cross_entropy(x, cx.tensor([0, bad, 1, 2]))
    assert x.grad is None


def test_all_ignored_mean_is_nan_and_its_gradient_is_zero():
    x = cx.randn(3, 4, dtype=cx.float64, requires_grad=True)
    loss = F.cross_entropy(x, cx.tensor([-100, -100, -100]))
    assert np.isnan(loss.item())
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((3, 4)))


def test_cross_entropy_gradchecks_through_the_kernels():
    rng = np.random.default_rng(2)
    x = cx.from_numpy(rng.standard_normal((6, 5))).requires_grad_()
    target = cx.tensor([0, 4, -100, 2, 2, 1])
    weight = cx.from_numpy(rng.uniform(0.5, 2, 5))
    for reduction in ("mean", "sum", "none"):
        fn = lambda t: F.cross_entropy(t, target, weight=weight, reduction=reduction)  # noqa: E731
        assert cx.autograd.gradcheck(fn, (x,))
        assert cx.autograd.gradgradcheck(fn, (x,))


# -- the C API, called directly --------------------------------------------------------------

def _buffers(dtype, n):
    ctype = "float[]" if dtype == np.float32 else "double[]"
    return ffi.new(ctype, max(n, 1))


@pytest.mark.parametrize("dtype", DTYPES)
def test_bad_arguments_give_a_status_and_write_nothing(dtype):
    sfx = "f32" if dtype == np.float32 else "f64"
    softmax = getattr(lib, "cextend_softmax_rows_" + sfx)
    backward = getattr(lib, "cextend_softmax_backward_rows_" + sfx)
    nll_forward = getattr(lib, "cextend_nll_forward_" + sfx)
    nll_backward = getattr(lib, "cextend_nll_backward_" + sfx)
    x, out = _buffers(dtype, 6), _buffers(dtype, 6)
    out[0] = 42
    assert softmax(-1, 3, x, out, 1) == -1
    assert softmax(2, -3, x, out, 1) == -2
    assert softmax(2, 3, ffi.NULL, out, 1) == -3
    assert softmax(2, 3, x, ffi.NULL, 1) == -4
    assert softmax(2, 3, x, out, 2) == -5
    assert softmax(2 ** 62, 2 ** 62, x, out, 1) == -2           # rows * cols overflows
    assert backward(2, 3, x, x, out, 7) == -6
    assert out[0] == 42
    assert softmax(0, 3, ffi.NULL, ffi.NULL, 0) == 0            # nothing to read or write
    target = ffi.new("int64_t[]", [0, 5])
    total, bad = _buffers(dtype, 1), ffi.new("int64_t *")
    assert nll_forward(2, 3, x, target, ffi.NULL, -100, 3, out, total, bad) == -7
    assert nll_forward(2, 3, x, ffi.NULL, ffi.NULL, -100, 1, out, total, bad) == -4
    assert nll_forward(2, 3, x, target, ffi.NULL, -100, 1, out, total, bad) == 0
    assert bad[0] == 1 and out[0] == 42                          # the bad row, and nothing written
    assert nll_backward(2, 3, x, target, ffi.NULL, -100, 1, total, out) == -4
    message = ffi.string(lib.cextend_last_error()).decode()
    assert "target" in message and "row 1 holds 5" in message
    assert nll_backward(2, 3, x, ffi.new("int64_t[]", [0, 1]), ffi.NULL, -100, 1, ffi.NULL, out) == -8
    assert out[0] == 42


def test_a_failing_status_raises_argument_error():
    with pytest.raises(ArgumentError, match="rows"):
        _backend.check(lib.cextend_softmax_rows_f64(-1, 1, ffi.NULL, ffi.NULL, 0))


# -- torch --------------------------------------------------------------------------------------

@pytest.mark.skipif(torch is None, reason="torch is not installed")
@pytest.mark.parametrize("dtype", DTYPES)
def test_cross_entropy_matches_torch(dtype):
    rng = np.random.default_rng(13)
    for rows, classes in [(32, 10), (7, 3), (1, 1), (128, 1000)]:
        x = inputs(rng, (rows, classes), dtype)
        target = rng.integers(0, classes, rows)
        target[0] = -100
        weight = rng.uniform(0.5, 2, classes).astype(dtype)
        for reduction in ("mean", "sum", "none"):
            for w in (None, weight):
                results = []
                for lib_ in (cx, torch):
                    xt = lib_.from_numpy(x.copy()).requires_grad_()
                    loss = lib_.nn.functional.cross_entropy(
                        xt, lib_.from_numpy(target), weight=None if w is None else lib_.from_numpy(w),
                        reduction=reduction)
                    loss.backward(lib_.from_numpy(np.linspace(0.5, 1.5, loss.numel()).astype(dtype)
                                                  .reshape(tuple(loss.shape))))
                    results.append((loss.detach().numpy(), xt.grad.numpy(), loss.grad_fn.name(),
                                    loss.grad_fn.next_functions[0][0].name()))
                ours, theirs = results
                np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5 if dtype == np.float32 else 1e-12)
                np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-5, atol=1e-6 if dtype == np.float32
                                           else 1e-13)
                assert ours[2:] == theirs[2:] == ("NllLossBackward0", "LogSoftmaxBackward0")
