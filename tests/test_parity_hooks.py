"""Torch parity of tensor hooks and retain_grad: what a hook sees and
changes, removing a hook, and a retained .grad reset by mark_dirty.
"""
import numpy as np
import pytest

import cextend as cx

from parity_helpers import each_lib, _both, _same


def test_register_hook_and_retain_grad_see_the_hooked_gradient():
    def program(lib):
        x = lib.ones(3, requires_grad=True)
        y = x * 2
        y.retain_grad()
        y.register_hook(lambda g: g * 10)
        (y * 1).sum().backward()
        return y.grad, x.grad
    ours, theirs = _both(program)
    np.testing.assert_array_equal(ours[0].numpy(), [10, 10, 10])
    np.testing.assert_array_equal(ours[1].numpy(), [20, 20, 20])
    _same(ours, theirs)


def test_leaf_hook_scales_and_can_be_removed():
    x = cx.ones(3, requires_grad=True)
    handle = x.register_hook(lambda g: g * 3)
    (x * 1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3, 3, 3])
    handle.remove()
    (x * 1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [4, 4, 4])


@pytest.mark.disagreement("D50")
@each_lib
def test_mark_dirty_resets_the_dirty_tensors_retained_grad(lib):
    class MulDirty(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.mark_dirty(x)
            ctx.k = k
            return x.mul_(k)

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    a = lib.tensor([[1.0, 2.0]], requires_grad=True)
    b = a * 1
    b.retain_grad()
    b.sum().backward()
    assert b.grad is not None
    c = MulDirty.apply(b, 0.5)
    assert b.grad is None and c.grad is None
