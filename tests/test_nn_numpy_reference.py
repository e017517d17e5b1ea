"""nn ops against float64 numpy references written from their definitions
(losses in float32 and float64 with error bounds that grow with the number
of terms: |ours - ref| <= c (k + K) u sum|parts|), softmax, layer_norm,
and dropout's statistics.  Needs no torch."""
import warnings

import numpy as np
import pytest

import cextend as cx
import cextend.nn.functional as F
from cextend.autograd import gradcheck, gradgradcheck

DTYPES = (np.float32, np.float64)
REDUCTIONS = ("mean", "sum", "none")


def _reduce(terms, reduction):
    if reduction == "none":
        return terms
    return terms.sum() if reduction == "sum" else terms.mean()


def _log_softmax_ref(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


# name -> (the loss terms, the size of what they are computed from: rounding
# errors scale with the parts of a difference, not with the difference)
REFERENCES = {
    "mse_loss": lambda x, t: ((x - t) ** 2, (x - t) ** 2),
    "l1_loss": lambda x, t: (np.abs(x - t), np.abs(x - t)),
    "smooth_l1_loss": lambda x, t: (np.where(np.abs(x - t) < 1, 0.5 * (x - t) ** 2, np.abs(x - t) - 0.5),
                                    np.abs(x - t) ** 2 + np.abs(x - t) + 0.5),
    "huber_loss": lambda x, t: (np.where(np.abs(x - t) < 1, 0.5 * (x - t) ** 2, np.abs(x - t) - 0.5),
                                np.abs(x - t) ** 2 + np.abs(x - t) + 0.5),
    "binary_cross_entropy": lambda p, y: (-(y * np.log(p) + (1 - y) * np.log1p(-p)),
                                          np.abs(y * np.log(p)) + np.abs((1 - y) * np.log1p(-p))),
    "binary_cross_entropy_with_logits": lambda x, y: ((1 - y) * x + np.logaddexp(0, -x),
                                                      np.abs((1 - y) * x) + np.logaddexp(0, -x)),
    "kl_div": lambda logq, p: (p * (np.log(p) - logq), np.abs(p * np.log(p)) + np.abs(p * logq)),
}
NUMPY_SHAPES = ((1,), (2, 3), (7, 1, 5), (257,), (64, 33))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", NUMPY_SHAPES, ids=str)
@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_loss_against_float64_numpy(name, shape, reduction, dtype):
    rng = np.random.default_rng(len(shape) * 7 + shape[-1])
    if name == "binary_cross_entropy":
        x, t = rng.uniform(0.01, 0.99, shape), rng.uniform(0, 1, shape)
    elif name == "kl_div":
        x, t = np.log(rng.uniform(0.01, 1, shape)), rng.uniform(0.01, 1, shape)
    else:
        x, t = rng.uniform(-3, 3, shape), rng.uniform(-3, 3, shape)
    x, t = x.astype(dtype).astype(np.float64), t.astype(dtype).astype(np.float64)   # exactly representable
    terms, size = REFERENCES[name](x, t)
    ref = _reduce(terms, reduction)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # kl_div's 'mean' warning
        ours = getattr(F, name)(cx.from_numpy(x.astype(dtype)), cx.from_numpy(t.astype(dtype)),
                                reduction=reduction).numpy()
    assert ours.dtype == np.dtype(dtype)
    # Each term has a few roundings (c), the sum of K terms adds K more.
    u = np.finfo(dtype).eps / 2
    k = 1 if reduction == "none" else terms.size
    bound = 8 * u * size if reduction == "none" else (8 + k) * u * _reduce(size, reduction)
    assert np.all(np.abs(ours.astype(np.float64) - ref) <= bound + 1e-300)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shapes", [((5, 4), (5,)), ((4,), ()), ((3, 6, 2, 2), (3, 2, 2)), ((129, 10), (129,))],
                         ids=str)
def test_cross_entropy_against_float64_numpy(shapes, reduction, dtype):
    xs, ts = shapes
    rng = np.random.default_rng(xs[0])
    class_dim = 0 if len(xs) == 1 else 1
    n = xs[class_dim]
    x = rng.uniform(-4, 4, xs).astype(dtype).astype(np.float64)
    t = rng.integers(0, n, ts)
    if t.size > 1:
        t.flat[0] = -100
    w = rng.uniform(0.5, 2, n).astype(dtype).astype(np.float64)
    logp = _log_softmax_ref(x, class_dim)
    picked = np.take_along_axis(np.moveaxis(logp, class_dim, -1), np.where(t < 0, 0, t)[..., None], -1)[..., 0]
    wt = np.where(t < 0, 0.0, w[np.where(t < 0, 0, t)])
    terms = -wt * picked
    ref = terms if reduction == "none" else terms.sum() if reduction == "sum" else terms.sum() / wt.sum()
    ours = F.cross_entropy(cx.from_numpy(x.astype(dtype)), cx.from_numpy(t), cx.from_numpy(w.astype(dtype)),
                           reduction=reduction).numpy()
    u = np.finfo(dtype).eps / 2
    k = n + (1 if reduction == "none" else t.size)
    if reduction == "none":
        scale = np.abs(terms) + wt * np.abs(x).max()
    else:
        scale = np.sum(np.abs(terms)) + wt.sum() * np.abs(x).max()
    if reduction == "mean":
        scale = scale / wt.sum()
    assert np.all(np.abs(ours.astype(np.float64) - ref) <= 8 * k * u * scale)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_weighted_bce_with_logits_against_float64_numpy(reduction, dtype):
    rng = np.random.default_rng(3)
    x, y = rng.uniform(-6, 6, (37, 5)), rng.uniform(0, 1, (37, 5))
    w, pw = rng.uniform(0.2, 2, (37, 5)), rng.uniform(0.2, 4, (5,))
    x, y, w, pw = (a.astype(dtype).astype(np.float64) for a in (x, y, w, pw))
    log_weight = 1 + (pw - 1) * y
    terms = w * ((1 - y) * x + log_weight * np.logaddexp(0, -x))
    size = w * (np.abs((1 - y) * x) + log_weight * np.logaddexp(0, -x))
    ours = F.binary_cross_entropy_with_logits(*(cx.from_numpy(a.astype(dtype)) for a in (x, y, w)),
                                              pos_weight=cx.from_numpy(pw.astype(dtype)),
                                              reduction=reduction).numpy()
    u = np.finfo(dtype).eps / 2
    k = 1 if reduction == "none" else terms.size
    bound = 12 * u * size if reduction == "none" else (12 + k) * u * _reduce(size, reduction)
    assert np.all(np.abs(ours.astype(np.float64) - _reduce(terms, reduction)) <= bound)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_label_smoothing_against_float64_numpy(reduction):
    rng = np.random.default_rng(4)
    n, c, eps = 23, 6, 0.15
    x = rng.uniform(-3, 3, (n, c))
    t = rng.integers(0, c, n)
    t[::5] = -100
    w = rng.uniform(0.5, 2, c)
    logp = _log_softmax_ref(x, 1)
    kept = t != -100
    safe = np.where(kept, t, 0)
    nll = np.where(kept, -w[safe] * logp[np.arange(n), safe], 0.0)
    smooth = np.where(kept, -(logp * w).sum(1), 0.0)
    if reduction == "none":
        ref = (1 - eps) * nll + eps / c * smooth
    elif reduction == "sum":
        ref = (1 - eps) * nll.sum() + eps / c * smooth.sum()
    else:
        ref = ((1 - eps) * nll.sum() + eps / c * smooth.sum()) / w[safe][kept].sum()
    ours = F.cross_entropy(cx.tensor(x), cx.tensor(t), cx.tensor(w), label_smoothing=eps,
                           reduction=reduction).numpy()
    np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-14)


def test_softmax_rows_sum_to_one_in_float64():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((50, 37)) * 10
    y = F.softmax(cx.tensor(x), 1).numpy()
    ref = np.exp(x - x.max(1, keepdims=True))
    ref /= ref.sum(1, keepdims=True)
    np.testing.assert_allclose(y, ref, rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(F.log_softmax(cx.tensor(x), 1).numpy(), np.log(ref), rtol=1e-12, atol=1e-15)


def test_layer_norm_against_float64_numpy():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 7, 33)) * 5 + 3
    w, b = rng.standard_normal((7, 33)), rng.standard_normal((7, 33))
    ours = F.layer_norm(cx.tensor(x), (7, 33), cx.tensor(w), cx.tensor(b), eps=1e-6).numpy()
    mean = x.mean(axis=(1, 2), keepdims=True)
    var = ((x - mean) ** 2).mean(axis=(1, 2), keepdims=True)
    ref = (x - mean) / np.sqrt(var + 1e-6) * w + b
    np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-12 * 7 * 33)


def test_dropout_zeroes_a_fraction_p_and_scales_the_rest():
    cx.manual_seed(0)
    x = cx.ones(200, 500)
    for p in (0.1, 0.5, 0.9):
        y = F.dropout(x, p).numpy()
        kept = y != 0
        n = y.size
        # the kept fraction is binomial: 5 standard deviations
        assert abs(kept.mean() - (1 - p)) < 5 * np.sqrt(p * (1 - p) / n)
        np.testing.assert_array_equal(y[kept], np.float32(1) / np.float32(1 - p))


def test_dropout_is_seeded_by_manual_seed():
    x = cx.randn(50, 40)
    cx.manual_seed(123)
    a = F.dropout(x, 0.3).numpy()
    b = F.dropout(x, 0.3).numpy()
    cx.manual_seed(123)
    np.testing.assert_array_equal(F.dropout(x, 0.3).numpy(), a)
    assert not np.array_equal(a, b)


def test_dropout_gradient_is_the_same_mask():
    cx.manual_seed(1)
    x = cx.randn(30, 20, dtype=cx.double, requires_grad=True)
    y = F.dropout(x, 0.4)
    assert type(y.grad_fn).__name__ == "MulBackward0"
    g = cx.randn(30, 20, dtype=cx.double)
    (gx,) = cx.autograd.grad(y, x, g)
    mask = y.detach().numpy() / x.detach().numpy()
    np.testing.assert_allclose(gx.numpy(), g.numpy() * mask, rtol=1e-12)


    def seeded(t):          # the same mask on every call, so finite differences see it
        cx.manual_seed(2)
        return F.dropout(t, 0.4)
    assert gradcheck(seeded, (x[:4, :5].detach().requires_grad_(),))
    assert gradgradcheck(seeded, (x[:4, :5].detach().requires_grad_(),))


def test_embedding_sparse_gradients_are_refused_clearly():
    with pytest.raises(NotImplementedError, match="sparse"):
        F.embedding(cx.tensor([0, 1]), cx.randn(3, 2), sparse=True)


# cross_entropy's common case (an (N, C) batch, class indices, no weight or smoothing) runs
# log_softmax's and nll_loss's kernels directly: the same values, gradients, graph and errors
# as the two ops composed, and float64 numpy's values within the rounding bound.

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(1, 1), (7, 1), (5, 4), (129, 10), (32, 1000)], ids=str)
def test_unweighted_cross_entropy_is_log_softmax_then_nll(shape, reduction, dtype):
    rng = np.random.default_rng(shape[0] * shape[1])
    n, c = shape
    x = rng.uniform(-20, 20, shape).astype(dtype)
    t = rng.integers(0, c, n)
    if n > 2:
        t[1] = -100         # ignored: no loss, a zero gradient row
    xs = [cx.from_numpy(x.copy()).requires_grad_() for _ in range(2)]
    fused = F.cross_entropy(xs[0], cx.from_numpy(t), reduction=reduction)
    composed = F.nll_loss(F.log_softmax(xs[1], 1), cx.from_numpy(t), reduction=reduction)
    assert fused.grad_fn.name() == composed.grad_fn.name() == "NllLossBackward0"
    assert fused.grad_fn.next_functions[0][0].name() == "LogSoftmaxBackward0"
    np.testing.assert_array_equal(fused.detach().numpy(), composed.detach().numpy())
    g = rng.standard_normal(fused.shape).astype(dtype)
    fused.backward(cx.from_numpy(g))
    composed.backward(cx.from_numpy(g.copy()))
    np.testing.assert_array_equal(xs[0].grad.numpy(), xs[1].grad.numpy())

    x64 = x.astype(np.float64)
    terms = np.where(t < 0, 0.0, -np.take_along_axis(_log_softmax_ref(x64, 1), np.maximum(t, 0)[:, None], 1)[:, 0])
    kept = np.count_nonzero(t >= 0)
    ref = terms if reduction == "none" else terms.sum() if reduction == "sum" else terms.sum() / kept
    u = np.finfo(dtype).eps / 2
    scale = np.abs(terms) + np.abs(x64).max() if reduction == "none" else \
        (np.abs(terms).sum() + kept * np.abs(x64).max()) / (kept if reduction == "mean" else 1)
    assert np.all(np.abs(fused.detach().numpy().astype(np.float64) - ref) <= 8 * (c + n) * u * scale)


def test_cross_entropy_on_a_strided_batch_and_a_bad_target():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 9)).astype(np.float32)
    t = rng.integers(0, 5, 6)
    # a column slice is not contiguous: the general path, the same loss to rounding
    wide = cx.from_numpy(x)[:, :5]
    dense = cx.from_numpy(np.ascontiguousarray(x[:, :5]))
    np.testing.assert_allclose(F.cross_entropy(wide, cx.from_numpy(t)).numpy(),
                               F.cross_entropy(dense, cx.from_numpy(t)).numpy(), rtol=1e-6)
    t[3] = 5
    with pytest.raises(IndexError, match="Target 5 is out of bounds"):
        F.cross_entropy(dense, cx.from_numpy(t))
    all_ignored = cx.from_numpy(np.full(6, -100))
    assert np.isnan(F.cross_entropy(dense, all_ignored).item())
    assert F.cross_entropy(dense, all_ignored, reduction="sum").item() == 0.0
