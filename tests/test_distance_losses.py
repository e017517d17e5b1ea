"""cosine_similarity, pairwise_distance, triplet_margin_loss (+ _with_distance)
and ctc_loss, functional and modules (cextend/_ops/distance.py,
cextend/_ops/nn_ctc.py, cextend/nn/distance_losses.py).

The stated answers are numpy float64 references: the distances written out,
and for CTC a brute force over every alignment of a short input (the sum
over all paths that collapse to the target), independent of the alpha
recursion, with the gradient through log_softmax as p - (posterior of each
label at each step).  Each program runs on cextend and, where torch 2.13 is
installed, on torch (`each_lib`).
"""
import itertools
import warnings

import numpy as np
import pytest

import cextend as cx
from cextend.autograd import gradcheck, gradgradcheck

from parity_helpers import each_lib, inf, real_torch, with_torch

RNG = np.random.default_rng(11)


def _np(t):
    return np.array(t.detach().numpy())


def _t(lib, a, requires_grad=False):
    t = lib.from_numpy(np.array(a))
    return t.requires_grad_() if requires_grad else t


def _escaped(words):
    return "".join("\\" + ch if ch in "()[].'" else ch for ch in words)


# -- cosine_similarity ---------------------------------------------------------------------------

def _ref_cosine(a, b, dim=1, eps=1e-8):
    a, b = np.broadcast_arrays(a, b)
    na = np.maximum(np.sqrt((a * a).sum(axis=dim, keepdims=True)), eps)
    nb = np.maximum(np.sqrt((b * b).sum(axis=dim, keepdims=True)), eps)
    return ((a / na) * (b / nb)).sum(axis=dim)


COSINE_CASES = [((3, 4), (3, 4), 1), ((3, 4), (4,), 1), ((3, 4), (4,), 0), ((2, 3, 5), (2, 1, 5), -1),
                ((7,), (7,), 0), ((0, 3), (0, 3), 1), ((2, 1, 3), (1, 4, 3), 2), ((5, 2), (5, 2), 0)]


@each_lib
@pytest.mark.parametrize("sa,sb,dim", COSINE_CASES, ids=str)
def test_cosine_similarity_matches_the_reference(lib, sa, sb, dim):
    a, b = RNG.standard_normal(sa), RNG.standard_normal(sb)
    x, y = _t(lib, a, True), _t(lib, b, True)
    out = lib.nn.functional.cosine_similarity(x, y, dim=dim)
    want = _ref_cosine(a, b, dim)
    assert tuple(out.shape) == want.shape and out.dtype == lib.float64
    np.testing.assert_allclose(_np(out), want, rtol=1e-12, atol=1e-14)
    if out.numel():
        gx, gy = lib.autograd.grad(out.sum(), [x, y])
        aa, bb = np.broadcast_arrays(a, b)
        na = np.sqrt((aa * aa).sum(axis=dim, keepdims=True))
        nb = np.sqrt((bb * bb).sum(axis=dim, keepdims=True))
        cos = np.expand_dims(want, dim)
        want_gx = bb / (na * nb) - cos * aa / (na * na)
        np.testing.assert_allclose(_np(gx), _sum_to(want_gx, sa), rtol=1e-10, atol=1e-12)
        assert tuple(gy.shape) == sb


def _sum_to(a, shape):
    lead = a.ndim - len(shape)
    a = a.sum(axis=tuple(range(lead))) if lead else a
    keep = tuple(i for i, n in enumerate(shape) if n == 1 and a.shape[i] != 1)
    return a.sum(axis=keep, keepdims=True) if keep else a


@each_lib
def test_cosine_similarity_small_norms_integers_and_module(lib):
    F = lib.nn.functional
    a = RNG.standard_normal((3, 4))
    zero = F.cosine_similarity(lib.zeros(3, 4, dtype=lib.float64), _t(lib, a))
    np.testing.assert_array_equal(_np(zero), np.zeros(3))
    tiny = _t(lib, a * 1e-10, True)                       # norm below eps: clamped, the gradient still flows
    out = F.cosine_similarity(tiny, _t(lib, a))
    np.testing.assert_allclose(_np(out), _ref_cosine(a * 1e-10, a), rtol=1e-12)
    g, = lib.autograd.grad(out.sum(), [tiny])
    assert np.isfinite(_np(g)).all()
    ints = F.cosine_similarity(lib.tensor([[1, 2], [3, 4]]), lib.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=lib.float64))
    assert ints.dtype == lib.float64
    np.testing.assert_allclose(_np(ints), [1 / np.sqrt(5), 4 / 5], rtol=1e-15)
    m = lib.nn.CosineSimilarity(dim=0, eps=1e-6)
    np.testing.assert_allclose(_np(m(_t(lib, a), _t(lib, a[::-1].copy()))), _ref_cosine(a, a[::-1], 0, 1e-6),
                               rtol=1e-12)
    t = _t(lib, a).t()                                     # a transposed operand
    np.testing.assert_allclose(_np(F.cosine_similarity(t, t * 2, dim=0)), np.ones(3), rtol=1e-15)


@each_lib
@pytest.mark.parametrize("expr,error,words", [
    ("F.cosine_similarity(i, i)", RuntimeError, "expected common dtype to be floating point, yet common dtype is Long"),
    ("F.cosine_similarity(i > 0, i > 0)", RuntimeError, "yet common dtype is Bool"),
    ("F.cosine_similarity(x, torch.ones(3, 5))", RuntimeError, "The size of tensor a (4) must match the size of tensor b (5)"),
    ("F.cosine_similarity(x, x, dim=2)", IndexError, "Dimension out of range"),
    ("F.cosine_similarity(x, 2.0)", TypeError, "must be Tensor"),
    ("F.pairwise_distance(x, torch.ones(3, 5))", RuntimeError, "must match the size of tensor b (5)"),
    ("F.pairwise_distance(i > 0, i > 0)", RuntimeError, "Subtraction, the `-` operator, with two bool tensors is not supported"),
    ("F.triplet_margin_loss(x, x, x, margin=0)", ValueError, "margin must be greater than 0, got 0"),
    ("F.triplet_margin_loss(x, x, torch.ones(4))", RuntimeError, "The anchor, positive, and negative tensors are expected to have the same number of dimensions, but got: anchor 2D, positive 2D, and negative 1D inputs"),
    ("F.triplet_margin_loss(x, x, x, reduction='bad')", ValueError, "bad is not a valid value for reduction"),
    ("F.triplet_margin_with_distance_loss(x, x, x, margin=-1.0)", ValueError, "margin must be greater than 0, got -1.0"),
    ("F.triplet_margin_with_distance_loss(x, x, x, reduction='avg')", ValueError, "avg is not a valid value for reduction"),
    ("torch.nn.TripletMarginLoss(margin=-2)", ValueError, "TripletMarginLoss: expected margin to be greater than 0, got -2 instead"),
])
def test_distance_and_triplet_errors(lib, expr, error, words):
    env = dict(torch=lib, F=lib.nn.functional, x=lib.ones(3, 4), i=lib.tensor([[1, 2], [3, 4]]))
    with pytest.raises(error, match=_escaped(words)):
        eval(expr, env)


# -- pairwise_distance ---------------------------------------------------------------------------

def _ref_pairwise(a, b, p=2.0, eps=1e-6, keepdim=False):
    d = np.abs(a - b + eps)
    axis = max(np.ndim(a), np.ndim(b)) - 1
    if d.ndim == 0:
        return (d != 0).astype(d.dtype) if p == 0 else d
    if d.shape[axis] == 0 and (p < 0 or p == inf):
        return None                 # no identity: refused
    if p == inf:
        r = d.max(axis=axis, keepdims=keepdim, initial=0)
    elif p == -inf:
        r = d.min(axis=axis, keepdims=keepdim)
    elif p == 0:
        r = (d != 0).sum(axis=axis, keepdims=keepdim).astype(d.dtype)
    else:
        with np.errstate(divide="ignore"):
            r = (d ** p).sum(axis=axis, keepdims=keepdim) ** (1 / p)
    return r


@each_lib
@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.5, inf, -inf, 0.0, -1.0])
@pytest.mark.parametrize("sa,sb,keepdim", [((3, 4), (3, 4), False), ((3, 4), (4,), True), ((4,), (2, 1, 4), False),
                                           ((), (), False), ((0, 3), (0, 3), False), ((3, 0), (3, 0), True),
                                           ((5, 13), (5, 13), False)], ids=str)
def test_pairwise_distance_matches_the_reference(lib, p, sa, sb, keepdim):
    a, b = RNG.standard_normal(sa), RNG.standard_normal(sb)
    x, y = _t(lib, a, True), _t(lib, b, True)
    want = _ref_pairwise(a, b, p, 1e-6, keepdim)
    if want is None:
        with pytest.raises(RuntimeError, match="because this dimension is empty"):
            lib.nn.functional.pairwise_distance(x, y, p, 1e-6, keepdim)
        return
    out = lib.nn.functional.pairwise_distance(x, y, p, 1e-6, keepdim)
    assert tuple(out.shape) == np.shape(want) and out.dtype == lib.float64
    np.testing.assert_allclose(_np(out), want, rtol=1e-12, atol=1e-14)
    if out.numel() and p in (1.0, 2.0):
        gx, = lib.autograd.grad(out.sum(), [x])
        d = np.broadcast_to(a - b + 1e-6, np.broadcast_shapes(sa, sb))
        local = np.sign(d) if p == 1.0 else d / np.expand_dims(_ref_pairwise(a, b, 2.0), -1) if d.ndim else np.sign(d)
        np.testing.assert_allclose(_np(gx), _sum_to(local, sa), rtol=1e-10, atol=1e-12)


@each_lib
def test_pairwise_distance_integers_module_and_node_name(lib):
    F = lib.nn.functional
    ints = F.pairwise_distance(lib.tensor([[1, 2], [3, 4]]), lib.tensor([[1, 2], [0, 0]]), eps=0)
    assert ints.dtype == lib.float32
    np.testing.assert_allclose(_np(ints), [0.0, 5.0])
    m = lib.nn.PairwiseDistance(p=1, eps=0.0, keepdim=True)
    np.testing.assert_array_equal(_np(m(lib.ones(2, 3), lib.zeros(2, 3))), [[3.0], [3.0]])
    x = lib.ones(2, 3, requires_grad=True)
    assert type(F.pairwise_distance(x, lib.zeros(2, 3)).grad_fn).__name__ == "NormBackward1"
    assert lib.pairwise_distance(x, x).shape == (2,) and lib.cosine_similarity(x, x + 1).shape == (2,)


def test_distance_gradcheck_and_gradgradcheck():
    a = cx.from_numpy(RNG.standard_normal((3, 4))).requires_grad_()
    b = cx.from_numpy(RNG.standard_normal((4,))).requires_grad_()
    for fn in (lambda x, y: cx.nn.functional.cosine_similarity(x.t().t(), y),
               lambda x, y: cx.nn.functional.pairwise_distance(x, y, 3.0),
               lambda x, y: cx.nn.functional.triplet_margin_loss(x, y.expand(3, 4), x.flip(0), margin=2.0, swap=True)):
        assert gradcheck(fn, (a, b))
        assert gradgradcheck(fn, (a, b))


# -- triplet_margin_loss ---------------------------------------------------------------------------

@each_lib
@pytest.mark.parametrize("kw", [{}, dict(margin=2.0, swap=True, reduction="none"), dict(p=1, reduction="sum"),
                                dict(p=3, eps=1e-3, margin=0.5), dict(swap=True, margin=4.0)], ids=str)
def test_triplet_margin_loss_matches_the_reference(lib, kw):
    a, p, n = (RNG.standard_normal((6, 5)) for _ in range(3))
    out = lib.nn.functional.triplet_margin_loss(_t(lib, a), _t(lib, p), _t(lib, n), **kw)
    norm, eps = kw.get("p", 2), kw.get("eps", 1e-6)
    d_ap, d_an = _ref_pairwise(a, p, norm, eps), _ref_pairwise(a, n, norm, eps)
    if kw.get("swap"):
        d_an = np.minimum(d_an, _ref_pairwise(p, n, norm, eps))
    loss = np.maximum(kw.get("margin", 1.0) + d_ap - d_an, 0)
    want = {"none": loss, "sum": loss.sum(), "mean": loss.mean()}[kw.get("reduction", "mean")]
    np.testing.assert_allclose(_np(out), want, rtol=1e-12, atol=1e-14)
    module = lib.nn.TripletMarginLoss(**{k: v for k, v in kw.items()})
    np.testing.assert_allclose(_np(module(_t(lib, a), _t(lib, p), _t(lib, n))), want, rtol=1e-12, atol=1e-14)


@each_lib
def test_triplet_losses_legacy_reduction_broadcast_and_custom_distance(lib):
    F = lib.nn.functional
    a, p, n = RNG.standard_normal((4, 3)), RNG.standard_normal((1, 3)), RNG.standard_normal((4, 1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        summed = F.triplet_margin_loss(_t(lib, a), _t(lib, p), _t(lib, n), size_average=False)
    assert any("size_average and reduce args will be deprecated" in str(w.message) for w in caught)
    want = np.maximum(1 + _ref_pairwise(a, p) - _ref_pairwise(a, n), 0).sum()
    np.testing.assert_allclose(_np(summed), want, rtol=1e-12)
    empty = F.triplet_margin_loss(lib.zeros(0, 3), lib.zeros(0, 3), lib.zeros(0, 3))
    assert np.isnan(_np(empty))
    dist = lambda x, y: 1 - F.cosine_similarity(x, y)
    out = F.triplet_margin_with_distance_loss(_t(lib, a), _t(lib, a * 2), _t(lib, -a), distance_function=dist,
                                              swap=True, reduction="none")
    np.testing.assert_allclose(_np(out), np.zeros(4), atol=1e-12)          # 1 + 0 - 2 < 0
    module = lib.nn.TripletMarginWithDistanceLoss(margin=3.0)
    np.testing.assert_allclose(_np(module(_t(lib, a), _t(lib, a), _t(lib, a))), 3.0, rtol=1e-12)


# -- ctc_loss ------------------------------------------------------------------------------------

def _collapse(path, blank):
    out, prev = [], None
    for c in path:
        if c != prev and c != blank:
            out.append(c)
        prev = c
    return out


def _ref_ctc(lp, target, blank):
    """(-log P(target), gamma): every path of len(lp) steps summed (lp: (T, C) log probs);
    gamma[t, c] = P(paths through c at t that give target) / P(target)."""
    steps, classes = lp.shape
    total = 0.0
    gamma = np.zeros((steps, classes))
    prob = np.exp(lp)
    for path in itertools.product(range(classes), repeat=steps):
        if _collapse(path, blank) == list(target):
            weight = np.prod(prob[np.arange(steps), path])
            total += weight
            gamma[np.arange(steps), path] += weight
    return -np.log(total) if total else inf, gamma / total if total else gamma


def _log_softmax(z, axis=-1):
    z = z - z.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


@each_lib
@pytest.mark.parametrize("layout", ["padded", "concatenated"])
@pytest.mark.parametrize("blank", [0, 2])
def test_ctc_loss_matches_the_brute_force_reference(lib, layout, blank):
    steps, classes = 5, 4
    targets = [[1, 3, 3], [3], [], [1, 1]]
    if blank == 2:
        targets = [[1, 3, 0], [3], [], [0, 0]]
    input_lengths = [5, 4, 3, 5]
    logits = RNG.standard_normal((steps, len(targets), classes))
    lp = _log_softmax(logits)
    want, gammas = zip(*(_ref_ctc(lp[:il, b], tg, blank) for b, (il, tg) in enumerate(zip(input_lengths, targets))))
    if layout == "padded":
        tg = np.zeros((len(targets), 4), np.int64)
        for b, t in enumerate(targets):
            tg[b, :len(t)] = t
    else:
        tg = np.array([c for t in targets for c in t], np.int64)
    lengths = np.array([len(t) for t in targets])
    z = _t(lib, logits, True)
    out = lib.nn.functional.ctc_loss(z.log_softmax(2), _t(lib, tg), _t(lib, np.array(input_lengths)),
                                     _t(lib, lengths), blank=blank, reduction="none")
    np.testing.assert_allclose(_np(out), want, rtol=1e-12)
    weights = RNG.uniform(0.5, 2, len(targets))
    g, = lib.autograd.grad(out, [z], _t(lib, weights))
    p = np.exp(lp)
    for b, il in enumerate(input_lengths):
        np.testing.assert_allclose(_np(g)[:il, b], (p[:il, b] - gammas[b]) * weights[b], rtol=1e-9, atol=1e-12)
        np.testing.assert_array_equal(_np(g)[il:, b], 0.0)
    for reduction, reduce in (("sum", np.sum), ("mean", lambda v: np.mean(v / np.maximum(lengths, 1)))):
        r = lib.nn.functional.ctc_loss(_t(lib, lp), _t(lib, tg), tuple(input_lengths), tuple(lengths.tolist()),
                                       blank=blank, reduction=reduction)
        np.testing.assert_allclose(_np(r), reduce(np.array(want)), rtol=1e-12)


@each_lib
def test_ctc_loss_raw_log_probs_gradient_is_torchs_formula(lib):
    # torch's gradient assumes log-softmaxed input: exp(lp) - posterior, per step and class
    lp = _log_softmax(RNG.standard_normal((4, 1, 3)))
    x = _t(lib, lp, True)
    loss = lib.nn.functional.ctc_loss(x, lib.tensor([[1, 2]]), lib.tensor([4]), lib.tensor([2]), reduction="sum")
    g, = lib.autograd.grad(loss, [x])
    _, gamma = _ref_ctc(lp[:, 0], [1, 2], 0)
    np.testing.assert_allclose(_np(g)[:, 0], np.exp(lp[:, 0]) - gamma, rtol=1e-9, atol=1e-12)
    assert type(loss.grad_fn.next_functions[0][0]).__name__ == "CtcLossBackward0"


@each_lib
def test_ctc_loss_unbatched_impossible_and_empty_cases(lib):
    F = lib.nn.functional
    lp = _log_softmax(RNG.standard_normal((5, 4)))
    want, _ = _ref_ctc(lp, [1, 2, 2], 0)
    out = F.ctc_loss(_t(lib, lp), lib.tensor([1, 2, 2]), lib.tensor(5), lib.tensor(3), reduction="none")
    assert tuple(out.shape) == ()
    np.testing.assert_allclose(_np(out), want, rtol=1e-12)
    batched = F.ctc_loss(_t(lib, lp[:, None]), lib.tensor([[1, 2, 2]]), lib.tensor([5]), lib.tensor([3]),
                         reduction="none")
    np.testing.assert_allclose(_np(out), _np(batched)[0], rtol=1e-15)
    x = _t(lib, _log_softmax(RNG.standard_normal((3, 2, 3))), True)
    tg, il, tl = lib.tensor([[1, 1, 1], [2, 0, 0]]), lib.tensor([3, 3]), lib.tensor([3, 1])
    impossible = F.ctc_loss(x, tg, il, tl, reduction="none")            # 1 1 1 needs 5 steps
    assert _np(impossible)[0] == inf and np.isfinite(_np(impossible)[1])
    zeroed = F.ctc_loss(x, tg, il, tl, reduction="none", zero_infinity=True)
    assert _np(zeroed)[0] == 0.0 and type(zeroed.grad_fn).__name__ == "WhereBackward0"
    g, = lib.autograd.grad(zeroed.sum(), [x])
    np.testing.assert_array_equal(_np(g)[:, 0], 0.0)
    none = F.ctc_loss(x, tg, lib.tensor([0, 0]), lib.tensor([0, 1]), reduction="none")
    assert _np(none)[0] == 0.0 and np.signbit(_np(none)[0]) and _np(none)[1] == inf      # -log 1 = -0.0, as torch
    empty_targets = F.ctc_loss(x, lib.zeros(0, dtype=lib.int64), il, lib.tensor([0, 0]), reduction="none")
    np.testing.assert_allclose(_np(empty_targets), -_np(x)[:, :, 0].sum(axis=0), rtol=1e-12)
    as_int32 = F.ctc_loss(x, tg.int(), il.int(), tl.int(), reduction="none")
    np.testing.assert_array_equal(_np(as_int32), _np(impossible))
    m = lib.nn.CTCLoss(blank=0, reduction="sum", zero_infinity=True)
    np.testing.assert_allclose(_np(m(x, tg, il, tl)), _np(zeroed).sum(), rtol=1e-15)


@each_lib
@pytest.mark.parametrize("expr,error,words", [
    ("F.ctc_loss(lp, tg, il, tl, blank=5)", RuntimeError, "blank must be in label range"),
    ("F.ctc_loss(lp, tg, il.float(), tl)", RuntimeError, "input_lengths must be integral"),
    ("F.ctc_loss(lp, tg, il, tl.float())", RuntimeError, "target_lengths must be integral"),
    ("F.ctc_loss(lp, tg, torch.tensor([6, 7]), tl)", RuntimeError, "Expected input_lengths to have value at most 6, but got value 7"),
    ("F.ctc_loss(lp, tg, torch.tensor([6, -1]), tl)", RuntimeError, "Expected input_lengths to have value at least 0, but got value -1"),
    ("F.ctc_loss(lp, tg, il, torch.tensor([4, 2]))", RuntimeError, "Expected tensor to have size at least 4 at dimension 1, but got size 3 for argument #2 'targets'"),
    ("F.ctc_loss(lp, tg, il, torch.tensor([-1, 2]))", RuntimeError, "Expected target_lengths to have value at least 0, but got value -1"),
    ("F.ctc_loss(lp, tg, il, torch.tensor([3, 2, 1]))", RuntimeError, "target_lengths must be of size batch_size"),
    ("F.ctc_loss(lp, tg, torch.tensor([3]), tl)", RuntimeError, "input_lengths must be of size batch_size"),
    ("F.ctc_loss(lp, torch.tensor([1, 2, 2, 3]), il, tl)", RuntimeError, "Expected tensor to have size 5 at dimension 0, but got size 4 for argument #2 'targets'"),
    ("F.ctc_loss(lp, torch.zeros(2, 2, 2, dtype=torch.int64), il, tl)", RuntimeError, "Expected 1 to 2 dimensions, but got 3-dimensional tensor for argument #2 'targets'"),
    ("F.ctc_loss(lp.unsqueeze(0), tg, il, tl)", RuntimeError, "Expected 3-dimensional tensor, but got 5-dimensional tensor for argument #1 'log_probs'"),
    ("F.ctc_loss(lp.half(), tg, il, tl)", NotImplementedError, "\"ctc_loss_cpu\" not implemented for 'Half'"),
    ("F.ctc_loss(lp, tg, il, tl, reduction='bad')", ValueError, "bad is not a valid value for reduction"),
    ("F.ctc_loss(torch.ones(6, 0, 5), torch.zeros(0, 3, dtype=torch.int64), torch.zeros(0, dtype=torch.int64), torch.zeros(0, dtype=torch.int64))", RuntimeError, "log_probs tensor must not be empty"),
])
def test_ctc_loss_errors(lib, expr, error, words):
    env = dict(torch=lib, F=lib.nn.functional, lp=lib.zeros(6, 2, 5).log_softmax(2), tg=lib.tensor([[1, 2, 2], [3, 1, 0]]),
               il=lib.tensor([6, 4]), tl=lib.tensor([3, 2]))
    with pytest.raises(error, match=_escaped(words)):
        eval(expr, env)


def test_ctc_loss_gradcheck_through_log_softmax_and_no_double_backward():
    z = cx.from_numpy(RNG.standard_normal((5, 2, 4))).requires_grad_()
    args = (cx.tensor([1, 3, 3, 2]), cx.tensor([5, 4]), cx.tensor([3, 1]))
    fn = lambda z: cx.nn.functional.ctc_loss(z.log_softmax(2), *args, blank=0)
    assert gradcheck(fn, (z,))
    g, = cx.autograd.grad(fn(z), [z], create_graph=True)
    with pytest.raises(RuntimeError, match="derivative for aten::_ctc_loss_backward is not implemented"):
        g.sum().backward()


@with_torch
def test_ctc_loss_longer_sequences_float32_and_float64_match_torch():
    steps, batch, classes, longest = 40, 4, 6, 9
    logits = RNG.standard_normal((steps, batch, classes))
    targets = RNG.integers(1, classes, (batch, longest))
    il = np.array([40, 31, 25, 40])
    tl = np.array([9, 4, 7, 1])
    for dtype, rtol in ((np.float64, 1e-12), (np.float32, 2e-5)):
        results = []
        for lib in (cx, real_torch):
            z = lib.from_numpy(logits.astype(dtype)).requires_grad_()
            loss = lib.nn.functional.ctc_loss(z.log_softmax(2), lib.from_numpy(targets), lib.from_numpy(il),
                                              lib.from_numpy(tl), blank=0, reduction="mean")
            loss.backward()
            results.append((_np(loss), _np(z.grad)))
        for ours, theirs in zip(*results):
            assert ours.dtype == theirs.dtype == dtype
            np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=rtol * 1e-2)


@with_torch
@pytest.mark.parametrize("name", ["cosine_similarity", "pairwise_distance", "triplet_margin_loss"])
def test_float32_distances_match_torch(name):
    a, b, c = (RNG.standard_normal((9, 7)).astype(np.float32) * 10 for _ in range(3))
    results = []
    for lib in (cx, real_torch):
        x, y, z = (lib.from_numpy(v.copy()).requires_grad_() for v in (a, b, c))
        F = lib.nn.functional
        out = {"cosine_similarity": lambda: F.cosine_similarity(x, y.t().contiguous().t()),
               "pairwise_distance": lambda: F.pairwise_distance(x, y, 3.0),
               "triplet_margin_loss": lambda: F.triplet_margin_loss(x, y, z, margin=5.0, swap=True)}[name]()
        out.sum().backward()
        results.append([_np(out), _np(x.grad), _np(y.grad)])
    for ours, theirs in zip(*results):
        assert ours.dtype == theirs.dtype == np.float32
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_ctc_loss_rejects_targets_outside_the_classes():
    # torch reads whatever memory such a label points at; cextend refuses it
    with pytest.raises(IndexError, match="out of range"):
        cx.nn.functional.ctc_loss(cx.zeros(4, 1, 3).log_softmax(2), cx.tensor([[1, 7]]), cx.tensor([4]), cx.tensor([2]))
