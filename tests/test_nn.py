"""nn: Module registration and state, Linear, Sequential, losses, training."""
import math

import numpy as np
import pytest

import cextend as cx
import cextend.nn as nn
import cextend.nn.functional as F
from cextend.autograd import gradcheck


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.scale = nn.Parameter(cx.ones(3))
        self.register_buffer("steps", cx.zeros(1))

    def forward(self, x):
        return self.fc(x) * self.scale


def test_registration_and_traversal():
    m = nn.Sequential(Block(), nn.ReLU(), nn.Linear(3, 2, bias=False))
    names = [n for n, _ in m.named_parameters()]
    assert names == ["0.scale", "0.fc.weight", "0.fc.bias", "2.weight"]
    assert len(list(m.parameters())) == 4
    assert [n for n, _ in m.named_buffers()] == ["0.steps"]
    assert len(list(m.children())) == 3 and len(list(m.modules())) == 5
    assert m[2].bias is None and len(m) == 3


def test_shared_parameters_are_listed_once():
    lin = nn.Linear(2, 2)
    m = nn.Sequential(lin, lin)
    assert len(list(m.parameters())) == 2


def test_assignment_rules():
    m = Block()
    with pytest.raises(TypeError, match="cannot assign"):
        m.scale = cx.ones(3)               # a plain Tensor cannot replace a Parameter
    m.scale = None
    assert m.scale is None and [n for n, _ in m.named_parameters()][-1] == "fc.bias"

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(cx.ones(1))
    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()


def test_state_dict_round_trip():
    a, b = Block(), Block()
    a.steps.fill_(3)
    state = a.state_dict()
    assert list(state) == ["scale", "steps", "fc.weight", "fc.bias"]
    assert not any(t.requires_grad for t in state.values())
    b.load_state_dict(state)
    for (na, ta), (nb, tb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert na == nb
        np.testing.assert_array_equal(ta.numpy(), tb.numpy())
    x = cx.randn(2, 4)
    np.testing.assert_array_equal(a(x).detach().numpy(), b(x).detach().numpy())


def test_load_state_dict_errors():
    m = Block()
    state = m.state_dict()
    del state["fc.bias"]
    state["extra"] = cx.zeros(1)
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "fc.bias"') as info:
        m.load_state_dict(state)
    assert 'Unexpected key(s) in state_dict: "extra"' in str(info.value)
    result = m.load_state_dict(state, strict=False)
    assert result.missing_keys == ["fc.bias"] and result.unexpected_keys == ["extra"]
    bad = m.state_dict()
    bad["fc.weight"] = cx.zeros(4, 3)
    with pytest.raises(RuntimeError, match=r"size mismatch for fc.weight: copying a param with shape "
                                           r"cextend.Size\(\[4, 3\]\) from checkpoint, the shape in current model is "
                                           r"cextend.Size\(\[3, 4\]\)"):
        m.load_state_dict(bad)


def test_repr_uses_extra_repr():
    m = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
    assert repr(m) == ("Sequential(\n  (0): Linear(in_features=4, out_features=3, bias=True)\n"
                       "  (1): ReLU()\n)")


def test_train_eval_zero_grad_and_casts():
    m = Block()
    assert m.training and not m.eval().fc.training and m.train().fc.training
    m(cx.randn(2, 4)).sum().backward()
    assert m.fc.weight.grad is not None
    m.zero_grad()
    assert m.fc.weight.grad is None
    m.double()
    assert m.fc.weight.dtype is cx.float64 and m.steps.dtype is cx.float64


def test_linear_init_matches_torch_bounds_and_shapes():
    lin = nn.Linear(25, 7)
    bound = 1 / math.sqrt(25)
    assert lin.weight.shape == (7, 25) and lin.bias.shape == (7,)
    assert np.abs(lin.weight.detach().numpy()).max() <= bound
    assert np.abs(lin.bias.detach().numpy()).max() <= bound
    assert lin.weight.dtype is cx.float32
    assert lin(cx.randn(2, 3, 25)).shape == (2, 3, 7)
    assert nn.Linear(3, 2, dtype=cx.double).weight.dtype is cx.float64


def test_losses_match_numpy():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((5, 4))
    target = np.array([0, 3, 1, 1, 2])
    x = cx.tensor(logits, requires_grad=True)
    loss = nn.CrossEntropyLoss()(x, cx.tensor(target))
    shifted = logits - logits.max(1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
    expected = -logp[np.arange(5), target].mean()
    assert loss.item() == pytest.approx(expected, rel=1e-12)
    loss.backward()
    softmax = np.exp(logp)
    onehot = np.eye(4)[target]
    np.testing.assert_allclose(x.grad.numpy(), (softmax - onehot) / 5, rtol=1e-10, atol=1e-15)
    a, b = rng.standard_normal((3, 2)), rng.standard_normal((3, 2))
    assert nn.MSELoss()(cx.tensor(a), cx.tensor(b)).item() == pytest.approx(((a - b) ** 2).mean())
    assert nn.MSELoss(reduction="sum")(cx.tensor(a), cx.tensor(b)).item() == pytest.approx(((a - b) ** 2).sum())


def test_cross_entropy_is_stable_and_checks_targets():
    big = cx.tensor([[1000.0, 0.0], [-1000.0, 0.0]], dtype=cx.double)
    loss = F.cross_entropy(big, cx.tensor([0, 1]))
    assert np.isfinite(loss.item()) and loss.item() == pytest.approx(0.0)
    with pytest.raises(IndexError, match="Target 5 is out of bounds."):
        F.cross_entropy(big, cx.tensor([0, 5]))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got Float"):
        F.cross_entropy(big, cx.tensor([0.0, 1.0]))
    assert gradcheck(lambda t: F.cross_entropy(t, cx.tensor([1, 0])), (cx.randn(2, 3, dtype=cx.double, requires_grad=True),))


def test_small_mlp_trains_to_low_loss():
    cx.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 2)).astype(np.float32)
    y = (np.sin(x[:, :1] * 2) + x[:, 1:] ** 2).astype(np.float32)
    model = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 1))
    opt = cx.optim.Adam(model.parameters(), lr=0.02)
    inputs, targets = cx.from_numpy(x), cx.from_numpy(y)
    first = None
    for _ in range(300):
        opt.zero_grad()
        loss = nn.MSELoss()(model(inputs), targets)
        first = first if first is not None else loss.item()
        loss.backward()
        opt.step()
    assert loss.item() < 0.02 * first


@pytest.mark.parametrize("shape", [(4, 7), (7,), (2, 3, 7), (0, 7)])
def test_linear_shape_error_names_the_layer_and_the_input(shape):
    """Phrased for the user of the layer, then torch's own words (issue 16.7)."""
    rows = int(np.prod(shape[:-1]))
    with pytest.raises(RuntimeError) as info:
        nn.Linear(10, 3)(cx.randn(*shape))
    message = str(info.value)
    assert message.startswith("Linear(in_features=10, out_features=3) got input with last dimension 7, "
                              "expected 10 (input shape %s;" % list(shape)), message
    assert message.endswith("mat1 and mat2 shapes cannot be multiplied (%dx7 and 10x3))" % rows), message
    with pytest.raises(RuntimeError, match=r"Linear\(in_features=10, out_features=3\) got a 0-d input; "
                                           r"expected shape \(\*, 10\)"):
        nn.Linear(10, 3)(cx.tensor(1.0))
    nn.Linear(7, 3)(cx.randn(*shape))       # the right width passes


def test_linear_follows_its_weight_as_torch_does():
    # the layer's own shape message is added only where F.linear fails; a weight replaced by
    # one of another width is what the product uses (torch's forward is F.linear alone)
    layer = nn.Linear(10, 3)
    with cx.no_grad():
        layer.weight = nn.Parameter(cx.randn(3, 4))
    x = cx.randn(2, 4)
    np.testing.assert_allclose(layer(x).detach().numpy(),
                               x.numpy() @ layer.weight.detach().numpy().T + layer.bias.detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="mat1 and mat2 must have the same dtype"):
        nn.Linear(4, 3)(cx.randn(2, 4, dtype=cx.float64))    # not a shape problem: torch's words alone
