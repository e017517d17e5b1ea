"""nn modules against torch 2.13: constructor arguments and defaults, repr,
parameters/buffers/state_dict keys, initialisation, forward and backward
with the same weights, train/eval, and the legacy loss arguments."""
import pickle
import warnings

import numpy as np
import pytest

import cextend as cx
import cextend.nn as nn
from nn_parity import torch

tnn = torch.nn


def pair(name, *args, **kwargs):
    """The same module built in both libraries (cextend's from cextend.nn)."""
    with warnings.catch_warnings(record=True) as ours_w:
        warnings.simplefilter("always")
        ours = getattr(nn, name)(*_lib(args, cx), **_lib(kwargs, cx))
    with warnings.catch_warnings(record=True) as theirs_w:
        warnings.simplefilter("always")
        theirs = getattr(tnn, name)(*_lib(args, torch), **_lib(kwargs, torch))
    assert [str(w.message) for w in ours_w] == [str(w.message) for w in theirs_w]
    return ours, theirs


def _lib(values, lib):
    def convert(v):
        if isinstance(v, np.ndarray):
            return lib.from_numpy(v.copy())
        return v
    if isinstance(values, dict):
        return {k: convert(v) for k, v in values.items()}
    return [convert(v) for v in values]


def copy_state(ours, theirs):
    """torch's parameters and buffers into ours (same names, same values)."""
    state = {k: cx.from_numpy(v.detach().numpy().copy()) for k, v in theirs.state_dict().items()}
    ours.load_state_dict(state)


def same_forward(ours, theirs, *arrays, rtol=1e-10, atol=1e-12, grad=True):
    xs = [cx.from_numpy(a.copy()).requires_grad_(a.dtype.kind == "f" and grad) for a in arrays]
    ts = [torch.from_numpy(a.copy()).requires_grad_(a.dtype.kind == "f" and grad) for a in arrays]
    y, r = ours(*xs), theirs(*ts)
    assert tuple(y.shape) == tuple(r.shape) and y.dtype.name == str(r.dtype)[6:]
    np.testing.assert_allclose(y.detach().numpy(), r.detach().numpy(), rtol=rtol, atol=atol, equal_nan=True)
    if grad and r.requires_grad:
        g = np.random.default_rng(0).standard_normal(tuple(r.shape))
        y.backward(cx.from_numpy(g.astype(y.detach().numpy().dtype)))
        r.backward(torch.from_numpy(g.astype(r.detach().numpy().dtype)))
        for x, t in zip(xs, ts):
            if t.grad is not None:
                np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=atol)
        if isinstance(ours, nn.Module):
            for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
                np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=rtol, atol=atol, err_msg=name)
    return y, r


def rand(shape, low=-2.0, high=2.0, seed=0):
    return np.asarray(np.random.default_rng(seed).uniform(low, high, shape))


ACTIVATION_MODULES = [
    ("Softmax", (), {"dim": 1}), ("Softmax", (), {}), ("LogSoftmax", (0,), {}), ("Softmin", (1,), {}),
    ("GELU", (), {}), ("GELU", ("tanh",), {}), ("LeakyReLU", (), {}), ("LeakyReLU", (0.2, True), {}),
    ("ELU", (), {}), ("ELU", (0.5,), {"inplace": True}), ("CELU", (0.7,), {}), ("SELU", (), {"inplace": True}),
    ("Softplus", (), {}), ("Softplus", (2.0, 5.0), {}), ("SiLU", (), {}), ("Mish", (True,), {}),
    ("Hardtanh", (), {}), ("Hardtanh", (-2.0, 0.5), {"inplace": True}), ("Hardtanh", (), {"min_value": -3.0}),
    ("ReLU6", (), {}), ("ReLU6", (True,), {}), ("LogSigmoid", (), {}), ("ReLU", (), {}), ("ReLU", (True,), {}),
    ("Tanh", (), {}), ("Sigmoid", (), {}),
]


@pytest.mark.parametrize("case", ACTIVATION_MODULES, ids=lambda c: "%s%s%s" % c)
def test_activation_modules_match_torch(case):
    name, args, kwargs = case
    ours, theirs = pair(name, *args, **kwargs)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == []
    x = rand((4, 5))
    if getattr(ours, "inplace", False):
        # in place on a leaf is refused by both; through a non-leaf both work
        def wrap(module, lib):
            return lambda t: module(t * 1)
        same_forward(wrap(ours, cx), wrap(theirs, torch), x)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            same_forward(ours, theirs, x)


def test_softmax_module_warns_at_the_callers_line():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nn.Softmax()(cx.randn(2, 3))
    assert caught[0].filename == __file__
    assert "Implicit dimension choice for softmax" in str(caught[0].message)


def test_hardtanh_refuses_an_empty_range_as_torch():
    for lib in (nn, tnn):
        with pytest.raises(AssertionError, match=r"max_val \(1.0\) must be greater than min_val \(1.0\)"):
            lib.Hardtanh(1.0, 1.0)


# -- LayerNorm --------------------------------------------------------------------------------------

@pytest.mark.parametrize("args,kwargs", [((4,), {}), (([3, 4],), {"eps": 1e-3}), ((4,), {"elementwise_affine": False}),
                                         ((4,), {"bias": False}), (((2, 4),), {"dtype": "double"})], ids=str)
def test_layer_norm_module_matches_torch(args, kwargs):
    if kwargs.get("dtype") == "double":
        ours, theirs = nn.LayerNorm(*args, dtype=cx.double), tnn.LayerNorm(*args, dtype=torch.double)
    else:
        ours, theirs = pair("LayerNorm", *args, **kwargs)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy(), err_msg=name)   # ones / zeros
        assert p.dtype.name == str(q.dtype)[6:]
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for q in theirs.parameters():
            q.uniform_(0.5, 2.0, generator=generator)
    copy_state(ours, theirs)
    x = rand((3, 5) + ours.normalized_shape).astype(np.float64 if kwargs.get("dtype") else np.float32)
    # float32 input gradients are differences of terms of size ~ rstd |g w| (a few units):
    # a few ulps of those, not of the (smaller) result.
    same_forward(ours, theirs, x, rtol=1e-5, atol=2e-5 if x.dtype == np.float32 else 1e-12)


# -- Dropout -----------------------------------------------------------------------------------------

def test_dropout_module_train_and_eval():
    ours, theirs = pair("Dropout", 0.25)
    assert repr(ours) == repr(theirs) == "Dropout(p=0.25, inplace=False)"
    assert repr(nn.Dropout(0.1, True)) == repr(tnn.Dropout(0.1, True))
    x = cx.ones(100, 100)
    cx.manual_seed(0)
    y = ours(x).numpy()
    assert 0.2 < (y == 0).mean() < 0.3
    ours.eval()
    assert ours(x) is x
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        nn.Dropout(1.5)


def test_dropout_inside_a_model_follows_model_train_eval():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    x = cx.randn(64, 4)
    model.eval()
    np.testing.assert_array_equal(model(x).detach().numpy(), model[0](x).detach().numpy())
    model.train()
    assert (model(x).detach().numpy() == 0).any()


# -- Embedding --------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [{}, {"padding_idx": 0}, {"padding_idx": -2}, {"max_norm": 1.0},
                                    {"scale_grad_by_freq": True, "norm_type": 1.0}, {"sparse": True}], ids=str)
def test_embedding_module_matches_torch(kwargs):
    ours, theirs = pair("Embedding", 6, 3, **kwargs)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == ["weight"]
    assert ours.padding_idx == theirs.padding_idx
    w = ours.weight.detach().numpy()
    assert w.dtype == np.float32 and w.shape == (6, 3)
    if ours.padding_idx is not None:
        assert not w[ours.padding_idx].any()
    if kwargs.get("sparse"):
        return
    copy_state(ours, theirs)
    same_forward(ours, theirs, np.array([[0, 2, 4], [4, 5, 0]]), rtol=1e-6)


def test_embedding_weight_is_standard_normal():
    cx.manual_seed(0)
    w = nn.Embedding(1000, 50).weight.detach().numpy()
    assert abs(w.mean()) < 5 * 1 / np.sqrt(w.size) and abs(w.std() - 1) < 0.01


def test_embedding_from_pretrained_and_weight_argument():
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    ours = nn.Embedding.from_pretrained(cx.from_numpy(table.copy()), padding_idx=1)
    theirs = tnn.Embedding.from_pretrained(torch.from_numpy(table.copy()), padding_idx=1)
    assert repr(ours) == repr(theirs)
    assert not ours.weight.requires_grad
    same_forward(ours, theirs, np.array([3, 1, 1, 0]))
    assert nn.Embedding.from_pretrained(cx.from_numpy(table), freeze=False).weight.requires_grad
    for lib, module in ((cx, nn), (torch, tnn)):
        with pytest.raises(AssertionError, match="Shape of weight does not match"):
            module.Embedding(3, 3, _weight=lib.ones(4, 3))
        with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
            module.Embedding(3, 3, padding_idx=3)
        with pytest.raises(AssertionError, match="Embeddings parameter is expected to be 2-dimensional"):
            module.Embedding.from_pretrained(lib.ones(3))


def test_embedding_padding_row_is_never_updated():
    emb = nn.Embedding(5, 2, padding_idx=0)
    opt = cx.optim.SGD(emb.parameters(), lr=1.0)
    emb(cx.tensor([0, 1, 0, 2])).sum().backward()
    opt.step()
    assert not emb.weight.detach().numpy()[0].any()


# -- Flatten / Unflatten ------------------------------------------------------------------------------

@pytest.mark.parametrize("name,args", [("Flatten", ()), ("Flatten", (0, 1)), ("Flatten", (2,)),
                                       ("Unflatten", (1, (2, 3))), ("Unflatten", (-2, [3, -1]))], ids=str)
def test_flatten_modules_match_torch(name, args):
    ours, theirs = pair(name, *args)
    assert repr(ours) == repr(theirs)
    same_forward(ours, theirs, rand((2, 6, 2) if name == "Unflatten" else (2, 3, 2, 2)))


def test_unflatten_checks_its_size_argument_as_torch():
    for module in (nn, tnn):
        with pytest.raises(TypeError, match="unflattened_size must be a tuple of ints, but found type int"):
            module.Unflatten(1, 3)
        with pytest.raises(TypeError, match="but found element of type float at pos 1"):
            module.Unflatten(1, (3, 2.0))


# -- losses ------------------------------------------------------------------------------------------

def class_target(shape=(5,), n=4, seed=0):
    return np.random.default_rng(seed).integers(0, n, shape)


LOSS_MODULES = [
    ("L1Loss", (), {}, "regression"), ("MSELoss", (), {"reduction": "sum"}, "regression"),
    ("MSELoss", (False,), {}, "regression"), ("MSELoss", (None, False), {}, "regression"),
    ("SmoothL1Loss", (), {"beta": 0.5}, "regression"), ("HuberLoss", ("none", 2.0), {}, "regression"),
    ("BCELoss", (), {"weight": rand((4,), 0.5, 2)}, "probability"), ("BCELoss", (), {"size_average": False}, "probability"),
    ("BCEWithLogitsLoss", (), {"pos_weight": rand((4,), 0.5, 2)}, "regression01"),
    ("BCEWithLogitsLoss", (rand((5, 4), 0.5, 2),), {"reduce": False}, "regression01"),
    ("KLDivLoss", (), {"reduction": "batchmean"}, "kl"), ("KLDivLoss", (), {"log_target": True, "reduction": "sum"}, "kl"),
    ("NLLLoss", (), {}, "classes"), ("NLLLoss", (rand((4,), 0.5, 2),), {"ignore_index": 1}, "classes"),
    ("NLLLoss", (None, True, -100, False), {}, "classes"),
    ("CrossEntropyLoss", (), {}, "classes"), ("CrossEntropyLoss", (), {"label_smoothing": 0.1, "weight": rand((4,), 0.5, 2)}, "classes"),
    ("CrossEntropyLoss", (None, False), {"ignore_index": 2}, "classes"),
    ("CrossEntropyLoss", (), {"reduction": "none"}, "soft"),
]


@pytest.mark.parametrize("case", LOSS_MODULES, ids=lambda c: "%s%s%s" % c[:3])
def test_loss_modules_match_torch(case):
    name, args, kwargs, kind = case
    ours, theirs = pair(name, *args, **kwargs)
    assert repr(ours) == repr(theirs) == name + "()"
    assert ours.reduction == theirs.reduction
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for key in ("ignore_index", "label_smoothing", "beta", "delta", "log_target"):
        assert getattr(ours, key, None) == getattr(theirs, key, None)
    x = rand((5, 4), seed=1)
    if kind == "regression":
        target = rand((5, 4), seed=2)
    elif kind == "regression01":
        target = rand((5, 4), 0, 1, seed=2)
    elif kind == "probability":
        x, target = rand((5, 4), 0.05, 0.95, seed=1), rand((5, 4), 0, 1, seed=2)
    elif kind == "kl":
        target = rand((5, 4), -2, 0, seed=2) if ours.log_target else rand((5, 4), 0.1, 1, seed=2)
    elif kind == "soft":
        target = rand((5, 4), 0, 1, seed=2)
    else:
        target = class_target()
    same_forward(ours, theirs, x, target)


def test_loss_weight_is_a_buffer_that_follows_dtype_casts():
    ours = nn.CrossEntropyLoss(weight=cx.tensor([1.0, 2.0, 3.0]))
    assert [name for name, _ in ours.named_buffers()] == ["weight"]
    ours.double()
    assert ours.weight.dtype == cx.double
    loss = ours(cx.randn(4, 3, dtype=cx.double), cx.tensor([0, 1, 2, 1]))
    assert loss.dtype == cx.double
    bce = nn.BCEWithLogitsLoss(pos_weight=cx.ones(3))
    assert list(bce.state_dict()) == ["pos_weight"]


def test_legacy_loss_arguments_warn_once_at_construction():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loss = nn.MSELoss(size_average=False)
    assert [str(w.message) for w in caught] == [
        "size_average and reduce args will be deprecated, please use reduction='sum' instead."]
    # attributed to the loss's constructor, as torch's is (so it shows once per process)
    assert caught[0].filename.endswith("cextend/nn/loss.py")
    assert loss.reduction == "sum"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss(cx.randn(3), cx.randn(3))        # no warning at call time


def test_loss_modules_pickle_and_old_import_paths():
    from cextend.nn.modules.loss import _Loss, _WeightedLoss
    from cextend.nn.modules.activation import GELU

    class Custom(_Loss):
        def forward(self, input, target):
            return (input - target).abs().sum()
    assert Custom().reduction == "mean" and issubclass(nn.NLLLoss, _WeightedLoss)
    assert isinstance(nn.GELU(), GELU)
    restored = pickle.loads(pickle.dumps(nn.CrossEntropyLoss(weight=cx.ones(3), label_smoothing=0.2)))
    assert restored.label_smoothing == 0.2 and restored.weight.shape == (3,)


def test_a_small_classifier_trains_with_the_new_layers():
    cx.manual_seed(0)
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 10, (64, 5))
    labels = (tokens.sum(1) % 3)
    model = nn.Sequential(nn.Embedding(10, 8), nn.Flatten(), nn.LayerNorm(40), nn.Linear(40, 32), nn.GELU(),
                          nn.Dropout(0.1), nn.Linear(32, 3))
    opt = cx.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.05)
    x, y = cx.from_numpy(tokens), cx.from_numpy(labels)
    first = None
    for _ in range(150):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        first = first if first is not None else loss.item()
    model.eval()
    accuracy = (model(x).argmax(1).numpy() == labels).mean()
    assert loss.item() < 0.5 * first and accuracy > 0.9
