"""layer_norm, dropout, embedding, one_hot and normalize against torch 2.13
and float64 numpy (values, gradients, errors), plus dropout's statistics."""
import numpy as np
import pytest

import cextend as cx
import cextend.nn.functional as F
from cextend.autograd import gradgradcheck
from nn_parity import Fixed, Layout, check, same_error, torch

TF = torch.nn.functional
DTYPES = (np.float32, np.float64)


def rand(shape, low=-2.0, high=2.0, seed=0):
    return np.asarray(np.random.default_rng(seed).uniform(low, high, shape))


# -- layer_norm ---------------------------------------------------------------------------------------

LN_CASES = [((3, 4), (4,)), ((2, 3, 5), (5,)), ((2, 3, 5), (3, 5)), ((7,), (7,)), ((0, 4), (4,)),
            ((4, 1), (1,)), ((2, 2, 2, 3), (2, 3)), ((64, 129), (129,))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("affine", ["none", "weight", "bias", "both"])
@pytest.mark.parametrize("shapes", LN_CASES, ids=str)
def test_layer_norm_matches_torch(shapes, affine, dtype):
    xs, ns = shapes
    w = rand(ns, 0.5, 2, seed=1) if affine in ("weight", "both") else None
    b = rand(ns, seed=2) if affine in ("bias", "both") else None
    # One normalized element: the gradient is exactly 0, which torch's float32 reaches
    # only up to rstd * u = 316 * 6e-8.
    tolerance = (2e-5, 1e-4) if np.prod(ns) == 1 and dtype == np.float32 else None
    check(F.layer_norm, TF.layer_norm, [rand(xs, seed=3) * 3 + 1, list(ns), w, b], dtype=dtype,
          tolerance=tolerance)


@pytest.mark.parametrize("layout", (Layout.transposed, Layout.sliced), ids=lambda f: f.__name__)
def test_layer_norm_reads_strided_inputs(layout):
    check(F.layer_norm, TF.layer_norm, [rand((5, 6)), (6,), rand((6,), seed=1), rand((6,), seed=2)],
          {"eps": 1e-3}, layout=layout)


def test_layer_norm_of_a_constant_row_is_the_bias():
    x = np.full((2, 5), 3.0)
    check(F.layer_norm, TF.layer_norm, [x, (5,), rand((5,)), rand((5,), seed=1)])


def test_layer_norm_double_backward_matches_torch():
    """The backward recomputes mean and variance from x in Tensor ops, so a graph of
    the gradient differentiates through them (torch's layer_norm double backward)."""
    def second(lib, functional):
        def f(x, w, b):
            gx, gw = lib.autograd.grad(functional.layer_norm(x, (4,), w, b).pow(3).sum(), (x, w),
                                       create_graph=True)
            return (gx * gx).sum() + (gw * x[0]).sum()
        return f
    check(second(cx, F), second(torch, TF), [rand((3, 4)), rand((4,), 0.5, 2, seed=1), rand((4,), seed=2)])
    x = cx.tensor(rand((3, 4)), requires_grad=True)
    w = cx.tensor(rand((4,), 0.5, 2, seed=1), requires_grad=True)
    assert gradgradcheck(lambda a, c: F.layer_norm(a, (4,), c, None, 1e-3), (x, w))


LN_ERRORS = [
    ("shape", (3, 4), (3,), None, None),
    ("too many dims", (4,), (2, 4), None, None),
    ("weight shape", (3, 4), (4,), Fixed(np.ones(3)), None),
    ("bias shape", (3, 4), (4,), None, Fixed(np.ones(3))),
    ("weight dtype", (3, 4), (4,), Fixed(np.ones(4, np.float32)), None),
]


@pytest.mark.parametrize("case", LN_ERRORS, ids=[c[0] for c in LN_ERRORS])
def test_layer_norm_errors_match_torch(case):
    _, xs, ns, w, b = case
    same_error(F.layer_norm, TF.layer_norm, [rand(xs), ns, w, b])


def test_layer_norm_dtype_errors_match_torch():
    same_error(F.layer_norm, TF.layer_norm, [Fixed(np.ones((2, 3), np.float32)), (3,), Fixed(np.ones(3))])
    same_error(F.layer_norm, TF.layer_norm, [Fixed(np.ones((2, 3), np.int64)), (3,)])
    same_error(F.layer_norm, TF.layer_norm, [rand((2, 3)), 3])


# -- dropout --------------------------------------------------------------------------------------------

def test_dropout_identity_cases_return_the_input_as_torch():
    for lib, functional in ((cx, F), (torch, TF)):
        x = lib.ones(3, 4, requires_grad=True)
        assert functional.dropout(x, 0.5, training=False) is x
        assert functional.dropout(x, 0.0) is x
        y = x.detach().clone()
        assert functional.dropout(y, 0.5, inplace=True) is y


def test_dropout_with_p_one_gives_signed_zeros_as_torch():
    check(lambda t: F.dropout(t, 1.0), lambda t: TF.dropout(t, 1.0), [rand((3, 4))])
    ours = F.dropout(cx.tensor([-1.0, 2.0]), 1.0).numpy()
    assert np.signbit(ours).tolist() == [True, False]


def test_dropout_inplace_writes_the_input():
    cx.manual_seed(3)
    x = cx.randn(10, 10, requires_grad=True)
    y = x * 1
    out = F.dropout(y, 0.5, inplace=True)
    assert out is y and type(y.grad_fn).__name__ == "MulBackward0"
    assert (y.detach().numpy() == 0).any()
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), (y.detach().numpy() != 0) * 2.0)


def test_dropout_errors_match_torch():
    for p in (-0.1, 1.5):
        same_error(F.dropout, TF.dropout, [rand((3,))], {"p": p})
    same_error(F.dropout, TF.dropout, [rand((3,))], {"inplace": True})       # a leaf that requires grad
    same_error(F.dropout, TF.dropout, [np.array([1, 2, 3])])
    check(F.dropout, TF.dropout, [np.array([1, 2, 3])], {"training": False})


# -- embedding -----------------------------------------------------------------------------------------

EMBEDDING = [
    ({}, np.array([[0, 2, 4], [4, 3, 0]])),
    ({"padding_idx": 0}, np.array([0, 2, 2, 4, 0, 1])),
    ({"padding_idx": -1}, np.array([[4, 2], [4, 4]])),
    ({"scale_grad_by_freq": True}, np.array([1, 3, 1, 1, 0])),
    ({"padding_idx": 2, "scale_grad_by_freq": True}, np.array([2, 2, 1, 3, 1])),
    ({}, np.array(3)),
    ({}, np.zeros((0,), np.int64)),
    ({}, np.zeros((2, 0, 3), np.int64)),
    ({}, np.array([1, 4, 0], np.int32)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(EMBEDDING)))
def test_embedding_matches_torch(case, dtype):
    kwargs, idx = EMBEDDING[case]
    check(F.embedding, TF.embedding, [Fixed(idx), rand((5, 3))], kwargs, dtype=dtype)


def test_embedding_double_backward_matches_torch():
    idx = Fixed(np.array([[0, 2, 4], [4, 2, 0]]))

    def second(lib, functional):
        def f(w, g):
            (gw,) = lib.autograd.grad(functional.embedding(lib.from_numpy(idx.array), w, padding_idx=2,
                                                           scale_grad_by_freq=True), w, g, create_graph=True)
            return (gw * gw).sum()
        return f
    check(second(cx, F), second(torch, TF), [rand((5, 3)), rand((2, 3, 3), seed=1)])


def test_embedding_max_norm_renormalises_the_looked_up_rows_in_place():
    idx = Fixed(np.array([[0, 2], [2, 3]]))
    w = rand((5, 4), -3, 3)
    for norm_type in (2.0, 1.0, 3.0):
        mine, ref = check(F.embedding, TF.embedding, [idx, Fixed(w)], {"max_norm": 1.5, "norm_type": norm_type})
        ours_w, theirs_w = cx.from_numpy(w.copy()), torch.from_numpy(w.copy())
        F.embedding(cx.from_numpy(idx.array), ours_w, max_norm=1.5, norm_type=norm_type)
        TF.embedding(torch.from_numpy(idx.array), theirs_w, max_norm=1.5, norm_type=norm_type)
        np.testing.assert_allclose(ours_w.numpy(), theirs_w.numpy(), rtol=1e-12)
        np.testing.assert_array_equal(ours_w.numpy()[[1, 4]], w[[1, 4]])   # rows not looked up


def test_embedding_errors_match_torch():
    w = rand((5, 3))
    same_error(F.embedding, TF.embedding, [Fixed(np.array([0, 5])), w])
    same_error(F.embedding, TF.embedding, [Fixed(np.array([0, -1])), w])
    same_error(F.embedding, TF.embedding, [Fixed(np.array([0.0, 1.0])), w])
    same_error(F.embedding, TF.embedding, [Fixed(np.array([0, 1], np.uint8)), w])
    same_error(F.embedding, TF.embedding, [Fixed(np.array([0, 1])), w], {"padding_idx": 5})
    same_error(F.embedding, TF.embedding, [Fixed(np.array([0, 1])), w], {"padding_idx": -6})
    same_error(F.embedding, TF.embedding, [Fixed(np.array([0, 1])), rand((5,))])


# -- one_hot and normalize ---------------------------------------------------------------------------

@pytest.mark.parametrize("case", [(np.array([0, 2, 1]), -1), (np.array([[0, 3], [1, 1]]), 5), (np.array(2), 3),
                                  (np.zeros((0,), np.int64), 4), (np.array([0, 0]), 1)], ids=str)
def test_one_hot_matches_torch(case):
    values, n = case
    check(F.one_hot, TF.one_hot, [Fixed(values), n])


def test_one_hot_errors_match_torch():
    for values, n in ((np.array([0.0, 2.0]), -1), (np.array([0, 2], np.int32), -1), (np.array([0, -2]), -1),
                      (np.array([0, 5]), 3), (np.zeros((0,), np.int64), -1), (np.array([0, 0]), 0)):
        same_error(F.one_hot, TF.one_hot, [Fixed(values), n])


NORMALIZE = [({}, (3, 4)), ({"p": 1.0}, (3, 4)), ({"p": 3.0, "dim": 0}, (3, 4)), ({"dim": -1}, (2, 3, 5)),
             ({"p": float("inf")}, (3, 4)), ({"p": 0.5}, (3, 4)), ({"p": 1.5, "dim": 2}, (2, 3, 5)),
             ({"dim": 0}, (6,)), ({"eps": 10.0}, (3, 4))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(NORMALIZE)))
def test_normalize_matches_torch(case, dtype):
    kwargs, shape = NORMALIZE[case]
    check(F.normalize, TF.normalize, [rand(shape, seed=case) + 0.05], kwargs, dtype=dtype)


def test_normalize_of_a_zero_row_is_zero_with_a_zero_gradient():
    x = np.array([[0.0, 0.0, 0.0], [1.0, -2.0, 2.0]])
    check(F.normalize, TF.normalize, [x])


def test_normalize_out_and_errors():
    x = rand((3, 4))
    out = cx.empty(3, 4, dtype=cx.double)
    result = F.normalize(cx.tensor(x), out=out)
    assert result is out
    np.testing.assert_allclose(out.numpy(), x / np.linalg.norm(x, axis=1, keepdims=True), rtol=1e-14)
    same_error(F.normalize, TF.normalize, [Fixed(np.ones((2, 3), np.int64))])
    same_error(F.normalize, TF.normalize, [rand((2, 3))], {"dim": 2})


FEATURE_DROPOUT = [("dropout1d", (2, 5, 7)), ("dropout1d", (5, 7)), ("dropout2d", (2, 5, 3, 4)),
                   ("dropout2d", (2, 5, 6)), ("dropout3d", (2, 5, 2, 3, 2)), ("dropout3d", (5, 2, 3, 2))]


@pytest.mark.filterwarnings("ignore:dropout2d. Received a 3D input")
@pytest.mark.parametrize("name,shape", FEATURE_DROPOUT, ids=str)
def test_feature_dropout_zeroes_whole_channels(name, shape):
    cx.manual_seed(4)
    x = cx.randn(*shape, requires_grad=True)
    y = getattr(F, name)(x, 0.5)
    # dropout2d reads 3-D input as batched (N, C, L); the others as unbatched (C, ...)
    batched = name == "dropout2d" or len(shape) == {"dropout1d": 3, "dropout3d": 5}[name]
    channels = y.detach().numpy().reshape(shape[:2] + (-1,) if batched else (1, shape[0], -1))
    values = x.detach().numpy().reshape(channels.shape)
    for row_y, row_x in zip(channels.reshape(-1, channels.shape[-1]), values.reshape(-1, channels.shape[-1])):
        assert not row_y.any() or np.allclose(row_y, row_x * 2)
    assert 0 < (channels == 0).all(-1).sum() < channels.shape[0] * channels.shape[1]
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), (y.detach().numpy() != 0) * 2.0)


@pytest.mark.parametrize("name,shape", FEATURE_DROPOUT + [("dropout2d", (5, 7)), ("dropout3d", (2, 3, 4))],
                         ids=str)
def test_feature_dropout_eval_warnings_and_p1_match_torch(name, shape):
    check(getattr(F, name), getattr(TF, name), [rand(shape)], {"training": False})
    check(getattr(F, name), getattr(TF, name), [rand(shape)], {"p": 1.0})


def test_feature_dropout_errors_match_torch():
    same_error(F.dropout1d, TF.dropout1d, [rand((2, 3, 4, 5))])
    same_error(F.dropout2d, TF.dropout2d, [rand((3,))])
    same_error(F.dropout2d, TF.dropout2d, [rand((2, 3, 4, 4))], {"p": 2.0})
    for module in ("Dropout1d", "Dropout2d", "Dropout3d"):
        ours, theirs = getattr(cx.nn, module)(0.2, True), getattr(torch.nn, module)(0.2, True)
        assert repr(ours) == repr(theirs)
