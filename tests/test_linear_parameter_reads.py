"""nn.Linear's forward reads its weight and bias from the parameter
registry instead of through Module.__getattr__ (about 1 us a read).  Every
way a program can change what `layer.weight` / `layer.bias` mean must
still be seen by the forward: reassigning, deleting, replacing with a
plain tensor, a subclass's property, bias=False.  Each case is compared
with F.linear on the tensors the attribute reads return, to the bit, and
with torch where it is installed.
"""
import numpy as np
import pytest

import cextend as cx
import cextend.nn.functional as F
from cextend.nn import Linear, Parameter

try:
    import torch
except ImportError:
    torch = None


def data(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def same(a, b):
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


@pytest.mark.parametrize("shape", [(1, 8, 8), (0, 5, 3), (7, 13, 1), (4, 1, 6), (3, 2, 9, 5)])
def test_forward_is_f_linear_of_the_attributes(shape):
    *batch, k, m = shape
    rng = np.random.default_rng(len(shape))
    layer = Linear(k, m)
    x = cx.from_numpy(data(rng, *batch, k))
    same(layer(x), F.linear(x, layer.weight, layer.bias))


def test_reassigned_parameters_are_used():
    rng = np.random.default_rng(1)
    layer = Linear(5, 3)
    x = cx.from_numpy(data(rng, 4, 5))
    layer.weight = Parameter(cx.from_numpy(data(rng, 3, 5)))
    layer.bias = Parameter(cx.from_numpy(data(rng, 3)))
    same(layer(x), F.linear(x, layer.weight, layer.bias))
    layer.bias = None
    same(layer(x), F.linear(x, layer.weight, None))


def test_no_bias():
    rng = np.random.default_rng(2)
    layer = Linear(6, 4, bias=False)
    x = cx.from_numpy(data(rng, 2, 6))
    assert layer.bias is None
    same(layer(x), F.linear(x, layer.weight, None))


def test_weight_replaced_by_a_plain_tensor_is_used():
    # weight_norm's way: the parameter is deleted and a computed tensor set in its place.
    rng = np.random.default_rng(3)
    layer = Linear(5, 3)
    x = cx.from_numpy(data(rng, 4, 5))
    computed = cx.from_numpy(data(rng, 3, 5))
    del layer.weight
    layer.weight = computed
    assert "weight" not in layer._parameters
    same(layer(x), F.linear(x, computed, layer.bias))


def test_deleted_bias_raises_as_the_attribute_read_does():
    layer = Linear(5, 3)
    del layer.bias
    with pytest.raises(AttributeError, match="bias"):
        layer(cx.ones(2, 5))


def test_a_subclass_property_is_used():
    # A parametrization's way: the class is a subclass whose property computes the weight.
    class Doubled(Linear):
        def __init__(self, k, m):
            super().__init__(k, m)
            self.original = self._parameters.pop("weight")

        @property
        def weight(self):
            return self.original * 2

    rng = np.random.default_rng(4)
    layer = Doubled(5, 3)
    x = cx.from_numpy(data(rng, 4, 5))
    same(layer(x), F.linear(x, layer.original * 2, layer.bias))


def test_gradients_reach_the_registered_parameters():
    rng = np.random.default_rng(5)
    layer = Linear(5, 3)
    x = cx.from_numpy(data(rng, 4, 5))
    layer(x).sum().backward()
    np.testing.assert_array_equal(layer.weight.grad.numpy(), np.tile(x.numpy().sum(0), (3, 1)))
    np.testing.assert_array_equal(layer.bias.grad.numpy(), np.full(3, 4, np.float32))


@pytest.mark.skipif(torch is None, reason="torch not installed")
def test_same_program_as_torch():
    rng = np.random.default_rng(6)
    w, b, w2, x = data(rng, 3, 5), data(rng, 3), data(rng, 3, 5), data(rng, 4, 5)
    results = []
    for lib in (cx, torch):
        layer = lib.nn.Linear(5, 3)
        layer.weight = lib.nn.Parameter(lib.from_numpy(w.copy()))
        layer.bias = lib.nn.Parameter(lib.from_numpy(b.copy()))
        xt = lib.from_numpy(x.copy())
        first = layer(xt)
        del layer.weight
        layer.weight = lib.from_numpy(w2.copy())
        second = layer(xt)
        layer.bias = None
        third = layer(xt)
        results.append([t.detach().numpy() for t in (first, second, third)])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)


def test_a_subclass_property_shadowing_a_registered_weight_is_used():
    # The registry still holds "weight", but the class's property is what the attribute reads.
    class Tripled(Linear):
        @property
        def weight(self):
            registered = self._parameters.get("weight")
            if registered is None:
                raise AttributeError("weight")          # while __init__ registers it
            return registered * 3

    rng = np.random.default_rng(7)
    layer = Tripled(5, 3)
    assert "weight" in layer._parameters
    x = cx.from_numpy(data(rng, 4, 5))
    same(layer(x), F.linear(x, layer._parameters["weight"] * 3, layer.bias))
