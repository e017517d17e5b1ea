"""Losses against torch 2.13: values, dtypes, gradients of input and target,
warnings and errors.  (The float64 numpy references are in
test_nn_losses_numpy.py, which runs without torch.)"""
import numpy as np
import pytest

import cextend as cx
import cextend.nn.functional as F
from nn_parity import Fixed, Layout, check, same_error, torch

TF = torch.nn.functional
DTYPES = (np.float32, np.float64)
REDUCTIONS = ("mean", "sum", "none")
SHAPES = ((3, 4), (), (13,), (2, 3, 5), (0, 4), (1, 1), (31, 7))


def rand(shape, low=-2.0, high=2.0, seed=0):
    return np.asarray(np.random.default_rng(seed).uniform(low, high, shape))


# -- regression losses --------------------------------------------------------------------------

REGRESSION = {
    "mse_loss": ({},),
    "l1_loss": ({},),
    "smooth_l1_loss": ({}, {"beta": 0.5}, {"beta": 0.0}, {"beta": 3.0}),
    "huber_loss": ({}, {"delta": 0.3}, {"delta": 2.5}),
}
REGRESSION_CASES = [(n, i) for n, kws in REGRESSION.items() for i in range(len(kws))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name,k", REGRESSION_CASES, ids=["%s-%d" % c for c in REGRESSION_CASES])
def test_regression_loss_matches_torch(name, k, shape, reduction, dtype):
    kwargs = dict(REGRESSION[name][k], reduction=reduction)
    check(getattr(F, name), getattr(TF, name), [rand(shape, seed=1), rand(shape, seed=2)], kwargs, dtype=dtype)


@pytest.mark.parametrize("layout", (Layout.transposed, Layout.sliced), ids=lambda f: f.__name__)
@pytest.mark.parametrize("name", sorted(REGRESSION))
def test_regression_loss_reads_strided_inputs(name, layout):
    check(getattr(F, name), getattr(TF, name), [rand((5, 6), seed=3), rand((5, 6), seed=4)],
          REGRESSION[name][-1], layout=layout)


@pytest.mark.parametrize("name", sorted(REGRESSION))
def test_target_broadcasts_with_torchs_warning(name):
    check(getattr(F, name), getattr(TF, name), [rand((3, 4)), rand((4,), seed=5)])
    check(getattr(F, name), getattr(TF, name), [rand((3, 1)), rand((3, 4), seed=5)], {"reduction": "none"})


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_elementwise_weight_argument(name, reduction):
    args = [rand((3, 4)), rand((3, 4), seed=1)]
    check(getattr(F, name), getattr(TF, name), args, {"reduction": reduction,
                                                       "weight": Fixed(rand((3, 4), 0.1, 2, seed=2))})
    same_error(getattr(F, name), getattr(TF, name), args, {"weight": Fixed(rand((4,), seed=2))})
    same_error(getattr(F, name), getattr(TF, name), args, {"weight": Fixed(rand((3, 4), seed=2)),
                                                           "reduction": "avg"})


LEGACY = [(None, None), (True, None), (False, None), (None, True), (None, False), (True, False),
          (False, True), (False, False), (True, True)]


@pytest.mark.parametrize("size_average,reduce", LEGACY)
@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss", "binary_cross_entropy",
                                  "binary_cross_entropy_with_logits", "kl_div", "nll_loss", "cross_entropy"])
def test_legacy_size_average_and_reduce(name, size_average, reduce):
    """size_average/reduce override reduction, with torch's deprecation text."""
    if name in ("nll_loss", "cross_entropy"):
        args = [rand((4, 3)), Fixed(np.array([0, 2, 1, 1]))]
    elif name == "binary_cross_entropy":
        args = [rand((4, 3), 0.05, 0.95), rand((4, 3), 0, 1, seed=1)]
    else:
        args = [rand((4, 3)), rand((4, 3), 0, 1, seed=1)]
    kwargs = {"size_average": size_average, "reduce": reduce, "reduction": "sum"}
    check(getattr(F, name), getattr(TF, name), args, kwargs)


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
                                  "binary_cross_entropy_with_logits", "kl_div", "nll_loss", "cross_entropy"])
def test_bad_reduction_raises_as_torch(name):
    if name in ("nll_loss", "cross_entropy"):
        args = [rand((4, 3)), Fixed(np.array([0, 2, 1, 1]))]
    else:
        args = [rand((4, 3), 0.05, 0.95), rand((4, 3), 0, 1, seed=1)]
    same_error(getattr(F, name), getattr(TF, name), args, {"reduction": "avg"})
    check(getattr(F, name), getattr(TF, name), args, {"reduction": "elementwise_mean"}, warns=False)


def test_regression_argument_errors_match_torch():
    args = [rand((3, 4)), rand((3, 4), seed=1)]
    same_error(F.smooth_l1_loss, TF.smooth_l1_loss, args, {"beta": -1.0})
    same_error(F.huber_loss, TF.huber_loss, args, {"delta": 0.0})
    same_error(F.huber_loss, TF.huber_loss, args, {"delta": -2.0})
    same_error(F.mse_loss, TF.mse_loss, [rand((3, 4)), rand((2, 4))])
    ints = [np.array([1, 2, 3]), np.array([1, 0, 3])]
    for name in ("mse_loss", "smooth_l1_loss", "l1_loss", "huber_loss"):
        same_error(getattr(F, name), getattr(TF, name), ints)


@pytest.mark.parametrize("name", sorted(REGRESSION))
def test_mixed_dtypes_follow_torch(name):
    f32, f64 = rand((3,)).astype(np.float32), rand((3,), seed=1)
    ours, theirs = getattr(F, name), getattr(TF, name)
    check(ours, theirs, [Fixed(f32), Fixed(f64)], dtype=None)
    check(ours, theirs, [Fixed(f64), Fixed(f32)], dtype=None)
    check(ours, theirs, [Fixed(f32), Fixed(np.array([0, 1, 1]))], dtype=None)
    if name == "huber_loss":   # computes into the input's dtype
        same_error(ours, theirs, [Fixed(np.array([0, 1, 1])), Fixed(f32)])
    else:
        check(ours, theirs, [Fixed(np.array([0, 1, 1])), Fixed(f32)], dtype=None)


# -- binary cross-entropy ---------------------------------------------------------------------------

BCE_SHAPES = ((3, 4), (), (17,), (2, 3, 5), (0, 3))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", BCE_SHAPES, ids=str)
def test_binary_cross_entropy_matches_torch(shape, reduction, dtype):
    p, y = rand(shape, 0.02, 0.98, seed=1), rand(shape, 0, 1, seed=2)
    check(F.binary_cross_entropy, TF.binary_cross_entropy, [p, y], {"reduction": reduction}, dtype=dtype)
    if len(shape) >= 1:
        w = Fixed(rand(shape[-1:], 0.1, 3, seed=3), cast=True)
        check(F.binary_cross_entropy, TF.binary_cross_entropy, [p, y], {"reduction": reduction, "weight": w},
              dtype=dtype)


def test_binary_cross_entropy_clamps_log_at_minus_100():
    """p = 0 or 1 exactly: torch clamps each log at -100, so the loss is finite."""
    p = np.array([0.0, 1.0, 0.0, 1.0, 0.5])
    y = np.array([1.0, 0.0, 0.0, 1.0, 0.5])
    mine, _ = check(F.binary_cross_entropy, TF.binary_cross_entropy, [p, y], {"reduction": "none"})
    np.testing.assert_array_equal(mine.detach().numpy()[:4], [100.0, 100.0, 0.0, 0.0])


def test_binary_cross_entropy_errors_match_torch():
    p, y = rand((3, 4), 0.1, 0.9), rand((3, 4), 0, 1, seed=1)
    same_error(F.binary_cross_entropy, TF.binary_cross_entropy, [rand((3, 4), 0.5, 1.5), y])
    same_error(F.binary_cross_entropy, TF.binary_cross_entropy, [np.array([0.5, np.nan]), np.array([0.0, 1.0])])
    same_error(F.binary_cross_entropy, TF.binary_cross_entropy, [p, rand((4,), 0, 1)])
    same_error(F.binary_cross_entropy, TF.binary_cross_entropy, [Fixed(p.astype(np.float32)), Fixed(y)])
    same_error(F.binary_cross_entropy, TF.binary_cross_entropy, [p, y], {"weight": rand((4,), 0, 1)})


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", BCE_SHAPES, ids=str)
def test_bce_with_logits_matches_torch(shape, reduction, dtype):
    x, y = rand(shape, -5, 5, seed=1), rand(shape, 0, 1, seed=2)
    ours, theirs = F.binary_cross_entropy_with_logits, TF.binary_cross_entropy_with_logits
    check(ours, theirs, [x, y], {"reduction": reduction}, dtype=dtype)
    if len(shape) >= 1:
        check(ours, theirs, [x, y], {"reduction": reduction,
                                     "weight": Fixed(rand(shape, 0.1, 2, seed=3), cast=True),
                                     "pos_weight": Fixed(rand(shape[-1:], 0.2, 4, seed=4), cast=True)},
              dtype=dtype)


def test_bce_with_logits_is_stable_for_huge_logits():
    x = np.array([-1e4, -800.0, -50.0, 0.0, 50.0, 800.0, 1e4])
    y = np.array([0.0, 1.0, 0.3, 0.5, 0.7, 0.0, 1.0])
    for dtype in DTYPES:
        mine, _ = check(F.binary_cross_entropy_with_logits, TF.binary_cross_entropy_with_logits, [x, y],
                        {"reduction": "none", "pos_weight": Fixed(np.array([2.0]), cast=True)}, dtype=dtype)
        assert np.isfinite(mine.detach().numpy()).all()


def test_bce_with_logits_dtype_follows_target_as_torch():
    ours, theirs = F.binary_cross_entropy_with_logits, TF.binary_cross_entropy_with_logits
    f32, f64 = rand((3,)).astype(np.float32), rand((3,), 0, 1, seed=1)
    # log_sigmoid runs in the input's float32, so the float64 result carries its rounding
    check(ours, theirs, [Fixed(f32), Fixed(f64)], dtype=None, tolerance=(2e-5, 2e-6))
    check(ours, theirs, [Fixed(f64), Fixed(f32.clip(0, 1))], dtype=None)
    same_error(ours, theirs, [Fixed(f32), Fixed(np.array([0, 1, 1]))])
    same_error(ours, theirs, [Fixed(np.array([0, 1, 1])), Fixed(f32)])


def test_bce_with_logits_errors_match_torch():
    ours, theirs = F.binary_cross_entropy_with_logits, TF.binary_cross_entropy_with_logits
    x, y = rand((3, 4)), rand((3, 4), 0, 1, seed=1)
    same_error(ours, theirs, [x, rand((4,), 0, 1)])
    same_error(ours, theirs, [x, y], {"weight": rand((3, 4), 0, 1)})
    same_error(ours, theirs, [x, y], {"pos_weight": rand((4,), 0, 1)})


# -- kl_div ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS + ("batchmean",))
@pytest.mark.parametrize("shape", ((3, 4), (), (7,), (2, 3, 5), (0, 4)), ids=str)
def test_kl_div_matches_torch(shape, reduction, dtype):
    logq = np.asarray(np.log(rand(shape, 0.05, 1, seed=1)))
    p = rand(shape, 0.05, 1, seed=2)
    check(F.kl_div, TF.kl_div, [logq, p], {"reduction": reduction}, dtype=dtype)
    check(F.kl_div, TF.kl_div, [logq, np.asarray(np.log(p))], {"reduction": reduction, "log_target": True},
          dtype=dtype)


def test_kl_div_with_zero_targets():
    """0 log 0 = 0 in the value; the gradient wrt such a target is NaN (0/0) in torch too."""
    logq, p = np.log(rand((2, 4), 0.1, 1)), np.array([[0.0, 0.5, 0.5, 0.0], [1.0, 0.0, 0.0, 0.0]])
    check(F.kl_div, TF.kl_div, [logq, p], {"reduction": "batchmean"})
    check(F.kl_div, TF.kl_div, [logq, Fixed(p)], {"reduction": "sum"})
    same_error(F.kl_div, TF.kl_div, [Fixed(np.array([1, 2])), rand((2,))])


# -- nll_loss and cross_entropy ----------------------------------------------------------------------

def classes(shape, n, seed=0, ignore=None):
    t = np.random.default_rng(seed).integers(0, n, shape)
    if ignore is not None and t.size:
        t.flat[::3] = ignore
    return Fixed(t.astype(np.int64))


# (input shape, target shape)
CLASS_SHAPES = [((4, 3), (4,)), ((3,), ()), ((2, 5, 3), (2, 3)), ((2, 3, 4, 2), (2, 4, 2)),
                ((2, 3, 2, 2, 3), (2, 2, 2, 3)), ((0, 3), (0,)), ((1, 1), (1,)), ((37, 11), (37,))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shapes", CLASS_SHAPES, ids=str)
@pytest.mark.parametrize("name", ["nll_loss", "cross_entropy"])
def test_class_index_losses_match_torch(name, shapes, reduction, dtype):
    xs, ts = shapes
    n = xs[0] if len(xs) == 1 else xs[1]
    ours, theirs = getattr(F, name), getattr(TF, name)
    x = rand(xs, seed=1)
    check(ours, theirs, [x, classes(ts, n, seed=2)], {"reduction": reduction}, dtype=dtype)
    w = Fixed(rand((n,), 0.1, 3, seed=3), cast=True)
    check(ours, theirs, [x, classes(ts, n, seed=2, ignore=-100)], {"reduction": reduction, "weight": w},
          dtype=dtype)
    if n > 1:
        check(ours, theirs, [x, classes(ts, n, seed=4, ignore=1)], {"reduction": reduction, "ignore_index": 1},
              dtype=dtype)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shapes", CLASS_SHAPES, ids=str)
def test_label_smoothing_matches_torch(shapes, reduction):
    xs, ts = shapes
    n = xs[0] if len(xs) == 1 else xs[1]
    x = rand(xs, seed=1)
    for smoothing in (0.1, 0.5, 1.0):
        check(F.cross_entropy, TF.cross_entropy, [x, classes(ts, n, seed=2)],
              {"reduction": reduction, "label_smoothing": smoothing})
        check(F.cross_entropy, TF.cross_entropy, [x, classes(ts, n, seed=2, ignore=-100)],
              {"reduction": reduction, "label_smoothing": smoothing,
               "weight": Fixed(rand((n,), 0.1, 3, seed=3))})
    check(F.cross_entropy, TF.cross_entropy, [x, classes(ts, n, seed=2)], {"label_smoothing": -0.2})


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("xs", [(4, 3), (3,), (2, 5, 3), (2, 3, 2, 2), (0, 3), (37, 11)], ids=str)
def test_probability_targets_match_torch(xs, reduction, dtype):
    x = rand(xs, seed=1)
    p = rand(xs, 0, 1, seed=2)
    n = xs[0] if len(xs) == 1 else xs[1]
    check(F.cross_entropy, TF.cross_entropy, [x, p], {"reduction": reduction}, dtype=dtype)
    check(F.cross_entropy, TF.cross_entropy, [x, p], {"reduction": reduction, "label_smoothing": 0.3,
                                                      "weight": Fixed(rand((n,), 0.1, 3, seed=3), cast=True)},
          dtype=dtype)


def test_all_targets_ignored_gives_nan_mean_as_torch():
    x = rand((3, 4))
    t = Fixed(np.array([-100, -100, -100]))
    for name in ("nll_loss", "cross_entropy"):
        check(getattr(F, name), getattr(TF, name), [x, t])
        check(getattr(F, name), getattr(TF, name), [x, t], {"reduction": "sum"})
        check(getattr(F, name), getattr(TF, name), [x, t], {"label_smoothing": 0.2} if name == "cross_entropy" else {})


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_one_dim_input_with_a_one_element_target(reduction):
    """(C,) input, (1,) target: torch reads it as the 0-d target.  Only the value: torch's
    own backward (and its weighted forward) fail on this shape with "size mismatch"."""
    for name in ("nll_loss", "cross_entropy"):
        check(getattr(F, name), getattr(TF, name), [rand((3,)), Fixed(np.array([2]))], {"reduction": reduction},
              grad=False)


def test_byte_targets_are_class_indices():
    check(F.nll_loss, TF.nll_loss, [rand((3, 4)), Fixed(np.array([0, 3, 1], np.uint8))])


CLASS_ERRORS = [
    ("out of range", (3, 4), np.array([0, 4, 1]), {}),
    ("negative", (3, 4), np.array([0, -1, 1]), {}),
    ("out of range, spatial", (2, 3, 4), np.array([[0, 1, 3, 1], [0, 0, 0, 0]]), {}),
    ("float target", (3, 4), np.array([0.0, 1.0, 1.0]), {}),
    ("int32 target", (3, 4), np.array([0, 1, 1], np.int32), {}),
    ("batch mismatch", (3, 4), np.array([0, 1]), {}),
    ("0-d target with batch", (2, 3), np.array(1), {}),
    ("1-d input, 1-d target", (3,), np.array([1, 2]), {}),
    ("2-d target", (2, 3), np.array([[1], [0]]), {}),
    ("spatial target shape", (2, 3, 4), np.array([1, 0]), {}),
    ("spatial target mismatch", (2, 3, 4), np.zeros((2, 5), np.int64), {}),
    ("4-d input, 2-d target", (2, 3, 4, 5), np.zeros((2, 4), np.int64), {}),
    ("4-d input, wrong target", (2, 3, 4, 5), np.zeros((2, 4, 4), np.int64), {}),
    ("5-d input, wrong target", (2, 3, 4, 5, 2), np.zeros((2, 4, 4, 2), np.int64), {}),
    ("weight size", (2, 3), np.array([0, 1]), {"weight": Fixed(np.ones(4))}),
    ("weight dims", (2, 3), np.array([0, 1]), {"weight": Fixed(np.ones((1, 3)))}),
    ("weight dtype", (2, 3), np.array([0, 1]), {"weight": Fixed(np.ones(3, np.float32))}),
    ("weight requires grad", (2, 3), np.array([0, 1]), {"weight": np.ones(3)}),
]


@pytest.mark.parametrize("name", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize("case", CLASS_ERRORS, ids=[c[0] for c in CLASS_ERRORS])
def test_class_index_errors_match_torch(name, case):
    _, xs, t, kwargs = case
    same_error(getattr(F, name), getattr(TF, name), [rand(xs), Fixed(t)], kwargs)


def test_other_class_loss_errors_match_torch():
    same_error(F.nll_loss, TF.nll_loss, [rand(()), Fixed(np.array(1))])
    same_error(F.nll_loss, TF.nll_loss, [Fixed(np.ones((2, 3), np.int64)), Fixed(np.array([0, 1]))])
    same_error(F.cross_entropy, TF.cross_entropy, [rand(()), Fixed(np.array(1))])
    same_error(F.cross_entropy, TF.cross_entropy, [rand((3, 4)), Fixed(np.array([0, 1, 2]))],
               {"label_smoothing": 1.5})
    same_error(F.cross_entropy, TF.cross_entropy, [rand((3, 4)), rand((3, 4), 0, 1)], {"label_smoothing": 1.5})
    same_error(F.cross_entropy, TF.cross_entropy, [rand((3, 4)), rand((3, 4), 0, 1)], {"ignore_index": 1})
    same_error(F.cross_entropy, TF.cross_entropy, [rand((3, 4)), Fixed(np.ones((3, 4), np.int64))])
    same_error(F.cross_entropy, TF.cross_entropy, [Fixed(np.ones((2, 3), np.int64)), Fixed(np.array([0, 1]))])


def test_cross_entropy_with_huge_logits_is_finite():
    x = np.array([[1e4, 0.0, -1e4], [-800.0, 800.0, 0.0]])
    for dtype in DTYPES:
        mine, _ = check(F.cross_entropy, TF.cross_entropy, [x, Fixed(np.array([2, 0]))], dtype=dtype)
        assert np.isfinite(mine.item())


def test_nll_loss_backward_of_backward():
    """nll_loss is linear: its double backward is nll_loss of the grad-grad (checked by torch)."""
    x = rand((4, 3))
    t = Fixed(np.array([0, 2, -100, 1]))
    w = Fixed(rand((3,), 0.5, 2, seed=1))
    for reduction in REDUCTIONS:
        def ours(a):
            (g,) = cx.autograd.grad(F.nll_loss(a, cx.from_numpy(t.array), cx.from_numpy(w.array),
                                               reduction=reduction).sum(), a, create_graph=True)
            return (g * g.detach().sin()).sum() + g.sum()

        def theirs(a):
            (g,) = torch.autograd.grad(TF.nll_loss(a, torch.from_numpy(t.array), torch.from_numpy(w.array),
                                                   reduction=reduction).sum(), a, create_graph=True)
            return (g * g.detach().sin()).sum() + g.sum()
        check(ours, theirs, [x])
