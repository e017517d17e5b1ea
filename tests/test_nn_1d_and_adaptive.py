"""1-D pooling, adaptive max pooling, conv_transpose1d and the alpha dropouts
(cextend/nn/functional_1d.py): values against float64 numpy loops written from
the definitions, gradcheck / gradgradcheck in float64, and against torch 2.13
(values, indices, gradients, bad-argument errors with their types and
messages, module reprs); the torch tests skip, saying why, without torch."""
import itertools

import numpy as np
import pytest

import cextend as cx
import cextend.nn as nn
import cextend.nn.functional as F
from cextend.autograd import gradcheck, gradgradcheck

try:
    import torch
    tF = torch.nn.functional
except ImportError:         # the numpy-reference tests still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed: the torch-parity tests need it")
DTYPES = [np.float32, np.float64]


def _distinct(rng, shape):
    """Distinct values (a max's gradient is undefined at ties)."""
    n = int(np.prod(shape))
    return (rng.permutation(n).reshape(shape) / max(n, 1) - 0.5 + rng.uniform(0, 1e-4, shape)).astype(np.float64)


def _layout(a, kind):
    """The same values in a contiguous, transposed or sliced array."""
    if kind == "transposed" and a.ndim >= 2:
        return np.ascontiguousarray(np.swapaxes(a, -1, -2)).swapaxes(-1, -2)
    if kind == "sliced":
        big = np.full(a.shape[:-1] + (2 * a.shape[-1] + 1,), np.nan, a.dtype)
        big[..., 1::2] = a
        return big[..., 1::2]
    return a


def _tol(dtype):
    return 3e-6 if dtype == np.float32 else 1e-13


# -- numpy references from the definitions --------------------------------------------------

def _ref_max_pool1d(x, k, s, p, d, ceil):
    """Loops over windows: the first maximum (NaN wins, last NaN), position along L."""
    length = x.shape[-1]
    out = (length + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    if ceil and (out - 1) * s >= length + p:
        out -= 1
    values = np.full(x.shape[:-1] + (out,), -np.inf)
    index = np.zeros(x.shape[:-1] + (out,), np.int64)
    for lead in np.ndindex(*x.shape[:-1]):
        for o in range(out):
            inside = [o * s - p + j * d for j in range(k) if 0 <= o * s - p + j * d < length]
            best, best_i = -np.inf, (inside[0] if inside else length)
            for pos in inside:
                v = x[lead + (pos,)]
                if v > best or np.isnan(v):
                    best, best_i = v, pos
            values[lead + (o,)], index[lead + (o,)] = best, best_i
    return values, index


def _ref_avg_pool1d(x, k, s, p, ceil, count_include_pad):
    length = x.shape[-1]
    out = (length + 2 * p - k + (s - 1 if ceil else 0)) // s + 1
    if ceil and (out - 1) * s >= length + p:
        out -= 1
    y = np.zeros(x.shape[:-1] + (out,))
    for o in range(out):
        start, end = o * s - p, min(o * s - p + k, length + p)
        pool = end - start
        lo, hi = max(start, 0), min(end, length)
        y[..., o] = x[..., lo:hi].sum(-1) / (pool if count_include_pad else hi - lo)
    return y


def _adaptive_windows(size, out):
    return [((i * size) // out, -(-((i + 1) * size) // out)) for i in range(out)]


def _ref_adaptive_max2d(x, oh, ow):
    h, w = x.shape[-2:]
    values = np.zeros(x.shape[:-2] + (oh, ow))
    index = np.zeros(x.shape[:-2] + (oh, ow), np.int64)
    for lead in np.ndindex(*x.shape[:-2]):
        for i, (h0, h1) in enumerate(_adaptive_windows(h, oh)):
            for j, (w0, w1) in enumerate(_adaptive_windows(w, ow)):
                best, best_i = -np.inf, h0 * w + w0
                for r in range(h0, h1):
                    for c in range(w0, w1):
                        v = x[lead + (r, c)]
                        if v > best or np.isnan(v):
                            best, best_i = v, r * w + c
                values[lead + (i, j)], index[lead + (i, j)] = best, best_i
    return values, index


def _ref_adaptive_avg1d(x, out):
    y = np.zeros(x.shape[:-1] + (out,))
    for i, (a, b) in enumerate(_adaptive_windows(x.shape[-1], out)):
        y[..., i] = x[..., a:b].mean(-1)
    return y


def _ref_conv_transpose1d(x, w, b, s, p, op, g, d):
    """Scatter each input element times its kernel into the (uncropped) output."""
    n, c_in, length = x.shape
    cog, k = w.shape[1], w.shape[2]
    full = (length - 1) * s + d * (k - 1) + 1 + op
    y = np.zeros((n, cog * g, full + p))
    cig = c_in // g
    for grp in range(g):
        for ci in range(grp * cig, (grp + 1) * cig):
            for i in range(length):
                for t in range(k):
                    y[:, grp * cog:(grp + 1) * cog, i * s + t * d] += np.outer(x[:, ci, i], w[ci, :, t])
    y = y[:, :, p:p + (length - 1) * s - 2 * p + d * (k - 1) + op + 1]
    return y if b is None else y + b[None, :, None]


# -- values against the references (no torch) ------------------------------------------------

POOL_CASES = [((2, 3, 7), 3, 2, 1, 1, True), ((2, 3, 7), 2, None, 0, 1, False), ((1, 1, 1), 1, 1, 0, 1, False),
              ((3, 13), 3, 2, 1, 2, True), ((2, 2, 11), 4, 3, 2, 1, True), ((0, 2, 5), 2, 1, 1, 1, False),
              ((2, 1, 17), 5, 4, 2, 3, True), ((4, 2), 2, 3, 1, 1, True)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("case", POOL_CASES)
def test_max_pool1d_matches_loops(case, layout, dtype):
    shape, k, s, p, d, ceil = case
    x = _distinct(np.random.default_rng(1), shape).astype(dtype)
    values, index = F.max_pool1d(cx.from_numpy(_layout(x, layout)), k, s, p, d, ceil, return_indices=True)
    ref_v, ref_i = _ref_max_pool1d(x.astype(np.float64), k, s if s is not None else k, p, d, ceil)
    assert values.numpy().dtype == dtype and index.numpy().dtype == np.int64
    np.testing.assert_array_equal(values.numpy(), ref_v.astype(dtype))
    np.testing.assert_array_equal(index.numpy(), ref_i)
    np.testing.assert_array_equal(F.max_pool1d(cx.from_numpy(x), k, s, p, d, ceil).numpy(), ref_v.astype(dtype))


def test_max_pool1d_nan_wins_and_first_maximum_among_ties():
    x = np.array([[[1., np.nan, 3., np.nan, 2., -np.inf, -np.inf, -np.inf, 5., 5., 0., 7.]]])
    for k, s, p, d, ceil in [(3, 1, 1, 1, False), (2, 2, 1, 1, True), (3, 2, 1, 2, True), (4, 3, 2, 1, True)]:
        values, index = F.max_pool1d(cx.from_numpy(x), k, s, p, d, ceil, return_indices=True)
        ref_v, ref_i = _ref_max_pool1d(x[0], k, s, p, d, ceil)
        np.testing.assert_array_equal(values.numpy()[0], ref_v)
        np.testing.assert_array_equal(index.numpy()[0], ref_i)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("case", POOL_CASES)
@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool1d_matches_loops(case, layout, dtype, count_include_pad):
    shape, k, s, p, _, ceil = case
    x = np.random.default_rng(2).standard_normal(shape).astype(dtype)
    y = F.avg_pool1d(cx.from_numpy(_layout(x, layout)), k, s, p, ceil, count_include_pad)
    ref = _ref_avg_pool1d(x.astype(np.float64), k, s if s is not None else k, p, ceil, count_include_pad)
    assert y.numpy().dtype == dtype
    np.testing.assert_allclose(y.numpy(), ref, rtol=0, atol=4 * k * _tol(dtype))


ADAPTIVE_CASES = [((2, 3, 7), 3), ((3, 5), 7), ((1, 1, 1), 1), ((2, 2, 13), 5), ((0, 3, 4), 2), ((2, 3, 6), 6),
                  ((2, 2, 5), 0)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("case", ADAPTIVE_CASES)
def test_adaptive_pool1d_matches_loops(case, layout, dtype):
    shape, out = case
    x = _distinct(np.random.default_rng(3), shape).astype(dtype)
    xc = cx.from_numpy(_layout(x, layout))
    np.testing.assert_allclose(F.adaptive_avg_pool1d(xc, out).numpy(), _ref_adaptive_avg1d(x.astype(np.float64), out),
                               rtol=0, atol=8 * _tol(dtype))
    values, index = F.adaptive_max_pool1d(xc, out, return_indices=True)
    ref_v, ref_i = _ref_adaptive_max2d(x[..., None, :].astype(np.float64), 1, out)
    np.testing.assert_array_equal(values.numpy(), ref_v[..., 0, :].astype(dtype))
    np.testing.assert_array_equal(index.numpy(), ref_i[..., 0, :])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("shape,out", [((2, 3, 5, 7), (3, 2)), ((3, 4, 4), 3), ((1, 1, 1, 1), 1),
                                       ((2, 2, 7, 11), (7, 13)), ((0, 2, 3, 3), 2), ((2, 3, 5), (None, 2)),
                                       ((2, 2, 5, 4), (0, 3))])
def test_adaptive_max_pool2d_matches_loops(shape, out, layout, dtype):
    x = _distinct(np.random.default_rng(4), shape).astype(dtype)
    x.flat[::7] = np.nan if x.size else 0       # NaN wins, the last one of a window
    values, index = F.adaptive_max_pool2d(cx.from_numpy(_layout(x, layout)), out, return_indices=True)
    oh, ow = (out, out) if isinstance(out, int) else (shape[-2] if out[0] is None else out[0], out[1])
    ref_v, ref_i = _ref_adaptive_max2d(x.astype(np.float64), oh, ow)
    np.testing.assert_array_equal(values.numpy(), ref_v.astype(dtype))
    np.testing.assert_array_equal(index.numpy(), ref_i)
    assert index.dtype == cx.int64


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", [((2, 4, 5), (4, 3, 3), True, 2, 1, 1, 1, 1), ((4, 3), (4, 1, 2), False, 1, 0, 0, 2, 2),
                                  ((1, 2, 1), (2, 2, 1), True, 1, 0, 0, 1, 1), ((0, 2, 5), (2, 3, 3), True, 3, 1, 2, 1, 1),
                                  ((2, 6, 7), (6, 2, 4), True, 3, 2, 1, 3, 2)])
def test_conv_transpose1d_matches_scatter(case, dtype):
    xs, ws, has_bias, s, p, op, g, d = case
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype)
    b = rng.standard_normal(ws[1] * g).astype(dtype) if has_bias else None
    for layout in ("contiguous", "transposed", "sliced"):
        y = F.conv_transpose1d(cx.from_numpy(_layout(x, layout)), cx.from_numpy(w),
                               None if b is None else cx.from_numpy(b), s, p, op, g, d)
        x3 = x if x.ndim == 3 else x[None]
        ref = _ref_conv_transpose1d(x3.astype(np.float64), w.astype(np.float64), None if b is None else
                                    b.astype(np.float64), s, p, op, g, d)
        ref = ref if x.ndim == 3 else ref[0]
        bound = 4 * ws[0] * ws[2] * _tol(dtype) * (np.abs(x).max(initial=1) * np.abs(w).max() + 1)
        assert y.numpy().dtype == dtype
        np.testing.assert_allclose(y.numpy(), ref, rtol=0, atol=bound)


# -- gradients ----------------------------------------------------------------------------

def _leaf(a, layout="contiguous"):
    return cx.from_numpy(_layout(a, layout)).requires_grad_()


GRAD_CASES = [
    ("max_pool1d", lambda x: F.max_pool1d(x, 3, 2, 1, 2, True), (2, 2, 9)),
    ("max_pool1d unbatched", lambda x: F.max_pool1d(x, 2, 1, 1), (3, 5)),
    ("avg_pool1d", lambda x: F.avg_pool1d(x, 3, 2, 1, True, False), (2, 2, 8)),
    ("avg_pool1d unbatched", lambda x: F.avg_pool1d(x, 2), (3, 5)),
    ("adaptive_avg_pool1d", lambda x: F.adaptive_avg_pool1d(x, 4), (2, 2, 7)),
    ("adaptive_max_pool1d", lambda x: F.adaptive_max_pool1d(x, 4), (2, 2, 7)),
    ("adaptive_max_pool1d unbatched", lambda x: F.adaptive_max_pool1d(x, 6), (3, 5)),
    ("adaptive_max_pool2d", lambda x: F.adaptive_max_pool2d(x, (3, 2)), (2, 2, 5, 7)),
    ("adaptive_max_pool2d unbatched", lambda x: F.adaptive_max_pool2d(x, (None, 4)), (2, 3, 5)),
]


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("name,fn,shape", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradcheck_and_gradgradcheck(name, fn, shape, layout):
    x = _leaf(_distinct(np.random.default_rng(6), shape), layout)
    assert gradcheck(fn, (x,), eps=1e-6, atol=1e-5)
    assert gradgradcheck(fn, (x,), eps=1e-6, atol=1e-5)


def test_conv_transpose1d_gradcheck_and_gradgradcheck():
    rng = np.random.default_rng(7)
    x, w, b = _leaf(rng.standard_normal((2, 4, 5))), _leaf(rng.standard_normal((4, 3, 3))), _leaf(rng.standard_normal(6))

    def fn(x, w, b):
        return F.conv_transpose1d(x, w, b, stride=2, padding=1, output_padding=1, groups=2, dilation=1)
    assert gradcheck(fn, (x, w, b), eps=1e-6, atol=1e-5)
    assert gradgradcheck(fn, (x, w, b), eps=1e-6, atol=1e-5)
    xu = _leaf(rng.standard_normal((4, 6)), "transposed")
    assert gradcheck(lambda x, w: F.conv_transpose1d(x, w, dilation=2), (xu, w), eps=1e-6, atol=1e-5)


def test_adaptive_max_gradient_goes_to_the_argmax_of_each_window():
    x = _leaf(_distinct(np.random.default_rng(8), (2, 3, 5, 7)))
    values, index = F.adaptive_max_pool2d(x, (3, 4), return_indices=True)
    g = np.random.default_rng(9).standard_normal((2, 3, 3, 4))
    values.backward(cx.from_numpy(g))
    expected = np.zeros((2, 3, 35))
    for n, c in np.ndindex(2, 3):
        np.add.at(expected[n, c], index.numpy()[n, c].ravel(), g[n, c].ravel())
    np.testing.assert_array_equal(x.grad.numpy(), expected.reshape(2, 3, 5, 7))


# -- modules ----------------------------------------------------------------------------------

def test_modules_run_their_functional_forms():
    rng = np.random.default_rng(10)
    x = cx.from_numpy(_distinct(rng, (2, 3, 9)).astype(np.float32))
    v, i = nn.MaxPool1d(3, 2, 1, return_indices=True, ceil_mode=True)(x)
    ev, ei = F.max_pool1d(x, 3, 2, 1, ceil_mode=True, return_indices=True)
    np.testing.assert_array_equal(v.numpy(), ev.numpy())
    np.testing.assert_array_equal(i.numpy(), ei.numpy())
    np.testing.assert_array_equal(nn.AvgPool1d(2, padding=1, count_include_pad=False)(x).numpy(),
                                  F.avg_pool1d(x, 2, padding=1, count_include_pad=False).numpy())
    np.testing.assert_array_equal(nn.AdaptiveAvgPool1d(4)(x).numpy(), F.adaptive_avg_pool1d(x, 4).numpy())
    np.testing.assert_array_equal(nn.AdaptiveMaxPool1d(4)(x).numpy(), F.adaptive_max_pool1d(x, 4).numpy())
    x4 = cx.from_numpy(_distinct(rng, (2, 3, 5, 6)).astype(np.float32))
    v, i = nn.AdaptiveMaxPool2d((2, None), return_indices=True)(x4)
    assert tuple(v.shape) == (2, 3, 2, 6) and tuple(i.shape) == (2, 3, 2, 6)
    layer = nn.ConvTranspose1d(3, 4, 3, stride=2)
    assert tuple(layer.weight.shape) == (3, 4, 3) and tuple(layer(x).shape) == (2, 4, 19)
    assert tuple(layer(x, output_size=[20]).shape) == (2, 4, 20)
    assert tuple(layer(x[0], output_size=[4, 20]).shape) == (4, 20)
    with pytest.raises(ValueError, match="requested an output size of"):
        layer(x, output_size=[21])
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose1d'):
        nn.ConvTranspose1d(3, 4, 3, padding_mode="reflect")


# -- alpha dropout ------------------------------------------------------------------------------

_ALPHA = 1.7580993408473766


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", [0.2, 0.5, 0.9])
def test_alpha_dropout_keeps_a_x_plus_b_or_sets_the_saturation_value(dtype, p):
    x = np.random.default_rng(11).standard_normal((64, 50)).astype(dtype)
    xt = cx.from_numpy(x).requires_grad_()
    y = F.alpha_dropout(xt, p, training=True)
    a = 1 / np.sqrt((_ALPHA ** 2 * p + 1) * (1 - p))
    c = dtype
    kept = (x * c(a) + c(_ALPHA * a * p)).astype(dtype)
    dropped = c(c(-1) * c(_ALPHA * a) + c(_ALPHA * a * p))
    out = y.detach().numpy()
    is_kept = out == kept
    assert np.all(is_kept | (out == dropped))
    assert abs(is_kept.mean() - (1 - p)) < 0.05
    y.sum().backward()
    np.testing.assert_array_equal(xt.grad.numpy(), np.where(is_kept, c(a), 0).astype(dtype))


def test_alpha_dropout_keeps_mean_and_variance_of_selu_outputs():
    cx.manual_seed(0)
    x = cx.from_numpy(np.random.default_rng(12).standard_normal((400, 500)))
    for fn, inp in ((F.alpha_dropout, x), (F.feature_alpha_dropout, x.view(400, 500, 1))):
        y = fn(inp, 0.3, True).numpy()
        assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02


def test_feature_alpha_dropout_drops_whole_channels():
    y = F.feature_alpha_dropout(cx.zeros(8, 16, 5), 0.5, True).numpy()
    assert np.all(y == y[:, :, :1])
    assert len(np.unique(y)) == 2
    y1 = F.feature_alpha_dropout(cx.zeros(64, 5), 0.5, True).numpy()      # (N, C): one draw per element
    assert len(np.unique(y1)) == 2 and not np.all(y1 == y1[:, :1])


def test_alpha_dropout_identity_cases_and_errors():
    x = cx.randn(3, 4)
    assert F.alpha_dropout(x) is x                         # training defaults to False
    assert F.alpha_dropout(x, 0.0, True) is x
    assert F.feature_alpha_dropout(x, 0.5, False) is x
    assert F.feature_alpha_dropout(cx.ones(0), 0.5, True).shape == (0,)
    z = F.alpha_dropout(cx.tensor([1.0, float("nan"), float("inf")]), 1.0, True).numpy()
    assert z[0] == 0 and np.isnan(z[1]) and np.isnan(z[2])
    y = x.clone()
    assert F.alpha_dropout(y, 0.5, True, inplace=True) is y
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.alpha_dropout(x, 1.5)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got -0.1"):
        nn.AlphaDropout(-0.1)
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions in the input"):
        F.feature_alpha_dropout(cx.ones(3), 0.5, True)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        F.alpha_dropout(cx.ones(3, dtype=cx.int64), 0.5, True)
    layer = nn.AlphaDropout(0.5, inplace=True)
    layer.eval()
    assert layer(x) is x
    layer.train()
    y = x.clone()
    assert layer(y) is not y                                 # torch's AlphaDropout ignores inplace


# -- against torch 2.13 --------------------------------------------------------------------------

def _both(fn_c, fn_t, arrays, dtype, layout="contiguous", grad=True):
    ours = [cx.from_numpy(_layout(a.astype(dtype), layout)).requires_grad_(grad) for a in arrays]
    theirs = [torch.from_numpy(_layout(a.astype(dtype), layout)).requires_grad_(grad) for a in arrays]
    y, yt = fn_c(*ours), fn_t(*theirs)
    ys, yts = (y, yt) if isinstance(y, tuple) else ((y,), (yt,))
    for a, b in zip(ys, yts):
        assert tuple(a.shape) == tuple(b.shape)
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=_tol(dtype) * 10,
                                   atol=_tol(dtype) * 10)
    if grad and ys[0].numel():
        g = np.random.default_rng(0).standard_normal(tuple(ys[0].shape)).astype(dtype)
        ys[0].backward(cx.from_numpy(g))
        yts[0].backward(torch.from_numpy(g))
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=_tol(dtype) * 10, atol=_tol(dtype) * 10)


TORCH_CASES = []
for _shape, _k, _s, _p, _d, _ceil in POOL_CASES:
    TORCH_CASES.append(("max_pool1d", _shape, dict(kernel_size=_k, stride=_s, padding=_p, dilation=_d,
                                                   ceil_mode=_ceil, return_indices=True)))
    TORCH_CASES.append(("avg_pool1d", _shape, dict(kernel_size=_k, stride=_s, padding=_p, ceil_mode=_ceil,
                                                   count_include_pad=_d == 1)))
for _shape, _out in ADAPTIVE_CASES:
    TORCH_CASES.append(("adaptive_avg_pool1d", _shape, dict(output_size=_out)))
    TORCH_CASES.append(("adaptive_max_pool1d", _shape, dict(output_size=_out, return_indices=True)))
for _shape, _out in [((2, 3, 5, 7), (3, 2)), ((3, 4, 4), 3), ((2, 2, 7, 11), (7, 13)), ((0, 2, 3, 3), 2),
                     ((2, 3, 5), (None, 2)), ((2, 2, 5, 4), (0, 3)), ((1, 2, 13, 1), (4, 1))]:
    TORCH_CASES.append(("adaptive_max_pool2d", _shape, dict(output_size=_out, return_indices=True)))


@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("name,shape,kwargs", TORCH_CASES)
def test_pools_match_torch(name, shape, kwargs, layout, dtype):
    x = _distinct(np.random.default_rng(13), shape)
    _both(lambda t: getattr(F, name)(t, **kwargs), lambda t: getattr(tF, name)(t, **kwargs), [x], dtype, layout)


@needs_torch
@pytest.mark.parametrize("name,kwargs", [("max_pool1d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                                              return_indices=True)),
                                         ("adaptive_max_pool1d", dict(output_size=4, return_indices=True)),
                                         ("adaptive_max_pool2d", dict(output_size=(2, 3), return_indices=True))])
def test_max_pools_match_torch_on_nan_inf_and_ties(name, kwargs):
    rng = np.random.default_rng(14)
    shape = (3, 4, 9) if name != "adaptive_max_pool2d" else (3, 4, 3, 5)
    for _ in range(20):
        x = rng.choice([0.0, -0.0, 1.0, 1.0, -np.inf, np.inf, np.nan, 2.0], size=shape)
        ours = getattr(F, name)(cx.from_numpy(x), **kwargs)
        theirs = getattr(tF, name)(torch.from_numpy(x), **kwargs)
        np.testing.assert_array_equal(ours[0].numpy(), theirs[0].numpy())
        np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy())


@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("xs,ws,bias,kwargs", [
    ((2, 4, 5), (4, 3, 3), True, dict(stride=2, padding=1, output_padding=1, groups=1, dilation=1)),
    ((4, 7), (4, 1, 2), False, dict(groups=2, dilation=2)),
    ((0, 2, 5), (2, 3, 3), True, dict(stride=3, padding=1, output_padding=2)),
    ((2, 6, 1), (6, 2, 4), True, dict(stride=3, padding=2, output_padding=1, groups=3, dilation=2)),
    ((1, 3, 11), (3, 5, 1), True, dict(stride=(2,), padding=(0,), output_padding=[1])),
])
def test_conv_transpose1d_matches_torch(xs, ws, bias, kwargs, layout, dtype):
    rng = np.random.default_rng(15)
    arrays = [rng.standard_normal(xs), rng.standard_normal(ws)] + ([rng.standard_normal(ws[1] * kwargs.get("groups", 1))]
                                                                  if bias else [])
    _both(lambda *t: F.conv_transpose1d(*t, **kwargs), lambda *t: tF.conv_transpose1d(*t, **kwargs), arrays, dtype,
          layout)


@needs_torch
def test_integer_pools_match_torch():
    x = np.random.default_rng(16).integers(-20, 20, (2, 3, 9))
    for kwargs in (dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
                   dict(kernel_size=2), dict(kernel_size=3, padding=1)):
        np.testing.assert_array_equal(F.avg_pool1d(cx.from_numpy(x), **kwargs).numpy(),
                                      tF.avg_pool1d(torch.from_numpy(x), **kwargs).numpy())
    v, i = F.max_pool1d(cx.from_numpy(x), 3, 2, 1, return_indices=True)
    tv, ti = tF.max_pool1d(torch.from_numpy(x), 3, 2, 1, return_indices=True)
    np.testing.assert_array_equal(v.numpy(), tv.numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    w = np.random.default_rng(17).integers(-3, 3, (3, 2, 2))
    np.testing.assert_array_equal(F.conv_transpose1d(cx.from_numpy(x), cx.from_numpy(w), stride=2).numpy(),
                                  tF.conv_transpose1d(torch.from_numpy(x), torch.from_numpy(w), stride=2).numpy())


_X = np.random.default_rng(18).standard_normal((2, 3, 7))
BAD_CALLS = [
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, 0)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, -1)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, 2, 0)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, 2, -1, -1)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, 2, 1, -1, 0)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, 2, 1, 2, 0)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, 3, 1, 2, 2)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, 2, 1, 0, 0)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, 9)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, 3, 1, 0, 4)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x[0], 9, return_indices=True)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x.unsqueeze(0), 2)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x[0, 0], 2)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x[:, :0], 2)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x[:, :, :0], 2)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x[0, :0], 2)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, (2, 2))),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, ())),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, 2, (1, 1))),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, 2, 1, (1, 1))),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, 2, 1, 0, (1, 1))),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, 2.0)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x.long(), 2)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x > 0, 2, return_indices=True)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, 0, return_indices=True)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, 2, 0, return_indices=True)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, 2, -1, return_indices=True)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, 2, 1, -1, return_indices=True)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, 2, 1, 2, return_indices=True)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, 3, 1, 2, 2, return_indices=True)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, 2, 1, 0, 0, return_indices=True)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, 9, return_indices=True)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x[0], 9, return_indices=True)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x[:0], 9, return_indices=True)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x.unsqueeze(0), 2, return_indices=True)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x[0, 0], 2, return_indices=True)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x[:, :0], 2, return_indices=True)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x[0, :0], 2, return_indices=True)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x[:, :, :0], 2, return_indices=True)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, (2, 2), return_indices=True)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, 2, (1, 1), return_indices=True)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, 2, 1, (1, 1), return_indices=True)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, 2, 1, 0, (1, 1), return_indices=True)),
    ("max_pool1d", lambda lib, x: lib.nn.functional.max_pool1d(x, 3, 1, 0, 4, return_indices=True)),
    ("avg_pool1d", lambda lib, x: lib.nn.functional.avg_pool1d(x, 0)),
    ("avg_pool1d", lambda lib, x: lib.nn.functional.avg_pool1d(x, -1)),
    ("avg_pool1d", lambda lib, x: lib.nn.functional.avg_pool1d(x, 0, 1)),
    ("avg_pool1d", lambda lib, x: lib.nn.functional.avg_pool1d(x, 2, 0)),
    ("avg_pool1d", lambda lib, x: lib.nn.functional.avg_pool1d(x, 2, -1)),
    ("avg_pool1d", lambda lib, x: lib.nn.functional.avg_pool1d(x, 2, 1, -1)),
    ("avg_pool1d", lambda lib, x: lib.nn.functional.avg_pool1d(x, 2, 1, 2)),
    ("avg_pool1d", lambda lib, x: lib.nn.functional.avg_pool1d(x, 9)),
    ("avg_pool1d", lambda lib, x: lib.nn.functional.avg_pool1d(x[0], 20)),
    ("avg_pool1d", lambda lib, x: lib.nn.functional.avg_pool1d(x[:0], 20)),
    ("avg_pool1d", lambda lib, x: lib.nn.functional.avg_pool1d(x.unsqueeze(0), 2)),
    ("avg_pool1d", lambda lib, x: lib.nn.functional.avg_pool1d(x[0, 0], 2)),
    ("avg_pool1d", lambda lib, x: lib.nn.functional.avg_pool1d(x[:, :0], 2)),
    ("avg_pool1d", lambda lib, x: lib.nn.functional.avg_pool1d(x[:, :, :0], 2)),
    ("avg_pool1d", lambda lib, x: lib.nn.functional.avg_pool1d(x, (2, 2))),
    ("avg_pool1d", lambda lib, x: lib.nn.functional.avg_pool1d(x, 2, (1, 1))),
    ("avg_pool1d", lambda lib, x: lib.nn.functional.avg_pool1d(x, 2, 1, (1, 1))),
    ("avg_pool1d", lambda lib, x: lib.nn.functional.avg_pool1d(x > 0, 2)),
    ("adaptive_avg_pool1d", lambda lib, x: lib.nn.functional.adaptive_avg_pool1d(x, -1)),
    ("adaptive_avg_pool1d", lambda lib, x: lib.nn.functional.adaptive_avg_pool1d(x, (2, 2))),
    ("adaptive_avg_pool1d", lambda lib, x: lib.nn.functional.adaptive_avg_pool1d(x.unsqueeze(0), 2)),
    ("adaptive_avg_pool1d", lambda lib, x: lib.nn.functional.adaptive_avg_pool1d(x[0, 0], 2)),
    ("adaptive_avg_pool1d", lambda lib, x: lib.nn.functional.adaptive_avg_pool1d(x[:, :, :0], 2)),
    ("adaptive_avg_pool1d", lambda lib, x: lib.nn.functional.adaptive_avg_pool1d(x[0, :, :0], 2)),
    ("adaptive_avg_pool1d", lambda lib, x: lib.nn.functional.adaptive_avg_pool1d(x[:, :, :0], -1)),
    ("adaptive_avg_pool1d", lambda lib, x: lib.nn.functional.adaptive_avg_pool1d(x, None)),
    ("adaptive_avg_pool1d", lambda lib, x: lib.nn.functional.adaptive_avg_pool1d(x.long(), 2)),
    ("adaptive_max_pool1d", lambda lib, x: lib.nn.functional.adaptive_max_pool1d(x, -1)),
    ("adaptive_max_pool1d", lambda lib, x: lib.nn.functional.adaptive_max_pool1d(x, (2, 2))),
    ("adaptive_max_pool1d", lambda lib, x: lib.nn.functional.adaptive_max_pool1d(x.unsqueeze(0), 2)),
    ("adaptive_max_pool1d", lambda lib, x: lib.nn.functional.adaptive_max_pool1d(x[0, 0], 2)),
    ("adaptive_max_pool1d", lambda lib, x: lib.nn.functional.adaptive_max_pool1d(x[:, :0], 2)),
    ("adaptive_max_pool1d", lambda lib, x: lib.nn.functional.adaptive_max_pool1d(x[:, :, :0], 2)),
    ("adaptive_max_pool1d", lambda lib, x: lib.nn.functional.adaptive_max_pool1d(x[0, :, :0], 2)),
    ("adaptive_max_pool1d", lambda lib, x: lib.nn.functional.adaptive_max_pool1d(x[:, :, :0], -1)),
    ("adaptive_max_pool1d", lambda lib, x: lib.nn.functional.adaptive_max_pool1d(x, None)),
    ("adaptive_max_pool1d", lambda lib, x: lib.nn.functional.adaptive_max_pool1d(x, 2.0)),
    ("adaptive_max_pool1d", lambda lib, x: lib.nn.functional.adaptive_max_pool1d(x, (None,))),
    ("adaptive_max_pool1d", lambda lib, x: lib.nn.functional.adaptive_max_pool1d(x.long(), 2)),
    ("adaptive_max_pool2d", lambda lib, x: lib.nn.functional.adaptive_max_pool2d(x, -1)),
    ("adaptive_max_pool2d", lambda lib, x: lib.nn.functional.adaptive_max_pool2d(x, (2,))),
    ("adaptive_max_pool2d", lambda lib, x: lib.nn.functional.adaptive_max_pool2d(x, (1, 2, 3))),
    ("adaptive_max_pool2d", lambda lib, x: lib.nn.functional.adaptive_max_pool2d(x[None, None], 2)),
    ("adaptive_max_pool2d", lambda lib, x: lib.nn.functional.adaptive_max_pool2d(x[0], 2)),
    ("adaptive_max_pool2d", lambda lib, x: lib.nn.functional.adaptive_max_pool2d(x[:, :0, None], 2)),
    ("adaptive_max_pool2d", lambda lib, x: lib.nn.functional.adaptive_max_pool2d(x[:, :, None, :0], 2)),
    ("adaptive_max_pool2d", lambda lib, x: lib.nn.functional.adaptive_max_pool2d(x[:, :0], -1)),
    ("adaptive_max_pool2d", lambda lib, x: lib.nn.functional.adaptive_max_pool2d(x.long(), -1)),
    ("adaptive_max_pool2d", lambda lib, x: lib.nn.functional.adaptive_max_pool2d(x.long(), 2)),
]
_W = np.random.default_rng(19).standard_normal((3, 2, 3))
BAD_CONV = [
    lambda lib, x, w: lib.nn.functional.conv_transpose1d(x.unsqueeze(0), w),
    lambda lib, x, w: lib.nn.functional.conv_transpose1d(x[0, 0], w),
    lambda lib, x, w: lib.nn.functional.conv_transpose1d(x, w[0]),
    lambda lib, x, w: lib.nn.functional.conv_transpose1d(x, w.unsqueeze(0)),
    lambda lib, x, w: lib.nn.functional.conv_transpose1d(x, lib.cat([w, w[:1]])),
    lambda lib, x, w: lib.nn.functional.conv_transpose1d(x, w, groups=2),
    lambda lib, x, w: lib.nn.functional.conv_transpose1d(x, w, groups=0),
    lambda lib, x, w: lib.nn.functional.conv_transpose1d(x, w, stride=0),
    lambda lib, x, w: lib.nn.functional.conv_transpose1d(x, w, stride=-1),
    lambda lib, x, w: lib.nn.functional.conv_transpose1d(x, w, padding=-1),
    lambda lib, x, w: lib.nn.functional.conv_transpose1d(x, w, output_padding=-1),
    lambda lib, x, w: lib.nn.functional.conv_transpose1d(x, w, stride=2, output_padding=2),
    lambda lib, x, w: lib.nn.functional.conv_transpose1d(x, w, w[0, 0]),
    lambda lib, x, w: lib.nn.functional.conv_transpose1d(x, w, w[:2, :1]),
    lambda lib, x, w: lib.nn.functional.conv_transpose1d(x, w, stride=(1, 1)),
    lambda lib, x, w: lib.nn.functional.conv_transpose1d(x, w, padding=(1, 1)),
    lambda lib, x, w: lib.nn.functional.conv_transpose1d(x, w, padding="same"),
    lambda lib, x, w: lib.nn.functional.conv_transpose1d(x[:, :, :0], w),
    lambda lib, x, w: lib.nn.functional.conv_transpose1d(x[:, :0], w[:0]),
    lambda lib, x, w: lib.nn.functional.conv_transpose1d(x, w.double()),
    lambda lib, x, w: lib.nn.functional.conv_transpose1d(x, w, padding=9),
]


def _outcome(lib, fn, *arrays):
    tensors = [lib.from_numpy(a.astype(np.float32)) for a in arrays]
    try:
        fn(lib, *tensors)
    except Exception as error:          # noqa: BLE001 -- the exception is what is compared
        return type(error), str(error).splitlines()[0]
    return None, None


@needs_torch
@pytest.mark.parametrize("index", range(len(BAD_CALLS)))
def test_bad_pool_arguments_raise_torchs_error(index):
    name, fn = BAD_CALLS[index]
    ours, theirs = _outcome(cx, fn, _X), _outcome(torch, fn, _X)
    assert ours == theirs


@needs_torch
@pytest.mark.parametrize("index", range(len(BAD_CONV)))
def test_bad_conv_transpose1d_arguments_raise_torchs_error_type(index):
    """Types always; messages where torch's are its own (float32 runs on
    oneDNN, whose dtype and descriptor messages are not reproduced)."""
    ours, theirs = _outcome(cx, BAD_CONV[index], _X, _W), _outcome(torch, BAD_CONV[index], _X, _W)
    assert ours[0] is theirs[0] and theirs[0] is not None
    if "MKLDNN" not in theirs[1] and "primitive" not in theirs[1] and "descriptor" not in theirs[1]:
        # torch names an argument's position only when it was passed by position
        assert ours[1].replace(" (position 5)", "") == theirs[1]


@needs_torch
def test_module_reprs_match_torch():
    def both(name, *args, **kwargs):
        return repr(getattr(nn, name)(*args, **kwargs)), repr(getattr(torch.nn, name)(*args, **kwargs))

    for name, args, kwargs in [("MaxPool1d", (3,), {}), ("MaxPool1d", ((3,), 2, 1, 2, True, True), {}),
                               ("AvgPool1d", (3,), {}), ("AvgPool1d", (3, 2, 1, True, False), {}),
                               ("AvgPool1d", ((4,),), dict(stride=[2])),
                               ("AdaptiveAvgPool1d", (3,), {}), ("AdaptiveMaxPool1d", (3, True), {}),
                               ("AdaptiveMaxPool2d", ((3, None),), {}), ("AdaptiveMaxPool2d", (2, True), {}),
                               ("AlphaDropout", (), {}), ("FeatureAlphaDropout", (0.2, True), {}),
                               ("ConvTranspose1d", (2, 4, 3), {}),
                               ("ConvTranspose1d", (2, 4, 3, 2, 1, 1, 2, False, 2), {})]:
        ours, theirs = both(name, *args, **kwargs)
        assert ours == theirs


@needs_torch
@pytest.mark.parametrize("unbatched", [False, True])
def test_conv_transpose1d_layer_loads_torch_state_and_matches(unbatched):
    torch.manual_seed(0)
    ref = torch.nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2, dilation=2).double()
    ours = nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2, dilation=2, dtype=cx.float64)
    ours.load_state_dict({k: cx.from_numpy(v.detach().numpy()) for k, v in ref.state_dict().items()})
    x = np.random.default_rng(20).standard_normal((4, 9) if unbatched else (2, 4, 9))
    for size in (None, [20], [19]):
        _both(lambda t: ours(t, output_size=size), lambda t: ref(t, output_size=size), [x], np.float64)


@needs_torch
@pytest.mark.parametrize("dtype,tdtype", [(np.float32, "float32"), (np.float64, "float64")])
def test_alpha_dropout_values_are_torchs_two_values_for_zero_input(dtype, tdtype):
    """With x = 0 the output is the kept offset or the dropped value: both
    computed in the input's dtype exactly as torch's."""
    for p in (0.1, 0.5, 0.75):
        ours = np.unique(F.alpha_dropout(cx.zeros(200, 5, dtype=getattr(cx, tdtype)), p, True).numpy())
        theirs = np.unique(tF.alpha_dropout(torch.zeros(200, 5, dtype=getattr(torch, tdtype)), p, True).numpy())
        np.testing.assert_array_equal(ours, theirs)
        ours = np.unique(F.feature_alpha_dropout(cx.zeros(200, 5, 3, dtype=getattr(cx, tdtype)), p, True).numpy())
        theirs = np.unique(tF.feature_alpha_dropout(torch.zeros(200, 5, 3, dtype=getattr(torch, tdtype)), p,
                                                    True).numpy())
        np.testing.assert_array_equal(ours, theirs)


@needs_torch
def test_alpha_dropout_errors_match_torch():
    for fn in (lambda lib: lib.nn.functional.alpha_dropout(lib.ones(3), 1.5, True),
               lambda lib: lib.nn.functional.feature_alpha_dropout(lib.ones(3), 0.5, True),
               lambda lib: lib.nn.functional.alpha_dropout(lib.ones(3, dtype=lib.int64), 0.5, True),
               lambda lib: lib.nn.AlphaDropout(2)):
        outcomes = []
        for lib in (cx, torch):
            try:
                fn(lib)
                outcomes.append(None)
            except Exception as error:      # noqa: BLE001
                outcomes.append((type(error), str(error)))
        assert outcomes[0] == outcomes[1] and outcomes[0] is not None


def test_every_case_has_its_own_reference():
    """The case grids above are not empty (a parametrize over nothing passes)."""
    assert len(POOL_CASES) >= 8 and len(BAD_CALLS) >= 60 and len(BAD_CONV) >= 20
    assert all(isinstance(c, tuple) for c in itertools.chain(POOL_CASES, ADAPTIVE_CASES))
