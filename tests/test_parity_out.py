"""Torch parity of out= arguments: how out is resized, and which outs
torch refuses for ops without a derivative.
"""
import numpy as np
import pytest

import cextend as torch


def test_matmul_of_a_vector_and_a_matrix_resizes_out_as_torch():
    # torch runs mm_out(out, a.unsqueeze(0), b).squeeze_(0): out becomes a
    # contiguous block where it starts, with the resize warning
    buf = torch.zeros(6)
    window = buf[::2]
    with pytest.warns(UserWarning, match="resized"):
        result = torch.matmul(torch.ones(2), torch.ones(2, 3), out=window)
    assert result is window and window.stride() == (1,) and tuple(window.shape) == (3,)
    np.testing.assert_array_equal(buf.numpy(), [2, 2, 2, 0, 0, 0])


def test_out_resized_to_zero_dims_is_writable():
    out = torch.zeros((0,), dtype=torch.bool)
    torch.logical_not(torch.tensor(-0.125), out=out)
    out.fill_(torch.tensor(-0.75))
    assert out.shape == () and out.item() is True


def test_floor_divide_out_refuses_only_a_leaf_requiring_grad():
    leaf = torch.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        torch.floor_divide(torch.ones(2), 1.5, out=leaf)
    out = torch.zeros(2, requires_grad=True) * 1
    result = torch.floor_divide(torch.tensor([3.0, -3.0], requires_grad=True), 1.75, out=out)
    assert result is out and out.grad_fn is not None
    np.testing.assert_array_equal(out.detach().numpy(), [1.0, -2.0])


def test_floor_divide_refuses_a_view_of_a_leaf_requiring_grad_as_out():
    leaf = torch.tensor([[1.5, 2.0, -0.25, 2.5]], requires_grad=True)
    view = leaf[:, ::2]
    with pytest.raises(RuntimeError, match="functions with out=... arguments don't support automatic"):
        torch.floor_divide(view, 1.75, out=view)
    out = torch.zeros(1, 2)
    torch.floor_divide(view, 1.75, out=out)        # a fresh out takes the not-implemented history
    assert out.requires_grad
    np.testing.assert_array_equal(out.detach().numpy(), np.floor_divide([[1.5, -0.25]], 1.75))
