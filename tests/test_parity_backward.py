"""Torch parity of backward(): its inputs= argument (repeated inputs, the
root among them, a base written through an expanded view), and how
gradients accumulate into .grad (no aliasing, create_graph, None).
"""
import numpy as np
import pytest

import cextend as torch

from parity_helpers import each_lib, _both, _same


def test_grad_buffers_do_not_alias_the_root_gradient_or_each_other():
    def program(lib):
        a = lib.ones(3, requires_grad=True)
        b = lib.ones(3, requires_grad=True)
        g = lib.ones(3)
        (a + b).backward(g, create_graph=True)
        (a * 1).backward(g)
        return a.grad, b.grad, g
    ours, theirs = _both(program)
    np.testing.assert_array_equal(ours[0].numpy(), [2, 2, 2])
    np.testing.assert_array_equal(ours[1].numpy(), [1, 1, 1])
    np.testing.assert_array_equal(ours[2].numpy(), [1, 1, 1])
    _same(ours, theirs)


def test_second_backward_after_create_graph_accumulates_into_a_writable_grad():
    def program(lib):
        x = lib.ones(3, requires_grad=True)
        x.sum().backward(create_graph=True)
        (x * 2).sum().backward()
        return (x.grad,)
    ours, theirs = _both(program)
    np.testing.assert_array_equal(ours[0].numpy(), [3, 3, 3])
    _same(ours, theirs)


def test_norm_zero_leaves_grad_none_and_a_leaf_moved_into_the_graph_raises():
    x = torch.randn(3, 4, requires_grad=True)
    x.norm(0).backward()
    assert x.grad is None
    leaf = torch.zeros(2, requires_grad=True)
    copy = leaf.clone()
    leaf.detach_()
    leaf.add_(copy)
    with pytest.raises(RuntimeError, match="leaf variable has been moved into the graph interior"):
        leaf.sum().backward()


@pytest.mark.disagreement("D53")
@each_lib
def test_backward_accumulates_once_into_an_input_listed_twice(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    x.sum().backward(inputs=[x, x])
    assert x.grad.tolist() == [1.0, 1.0]


def test_backward_with_the_root_among_inputs_runs_and_frees_its_node():
    x = torch.tensor(0.6875, requires_grad=True)
    y = x.abs()
    y.backward(inputs=[y])
    assert y.grad.item() == 1.0 and x.grad is None
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    r = torch.tensor(2.1875, requires_grad=True).clone().acosh_()
    r.backward(inputs=[r])          # no derivative is computed: acosh_'s missing one does not raise
    assert r.grad.item() == 1.0


def test_a_not_implemented_derivative_node_raises_when_run_as_a_captured_root():
    v = torch.tensor([1.625, 1.75, 1.4375], requires_grad=True).clone()
    v.floor_divide_(-1)
    with pytest.raises(RuntimeError, match="derivative for aten::floor_divide_? is not implemented"):
        v.mean().backward(inputs=[v])


def test_backward_with_inputs_at_a_base_written_through_an_expanded_view_copies_nothing():
    # torch runs the base's CopySlices with no output wanted: fn is called,
    # nothing is copied into the expanded region, so nothing raises (seed
    # 13301, program 11297); a full backward does copy and raises
    v2 = torch.tensor([1.0, -1.25, 0.75], requires_grad=True)
    v3 = v2 * 2
    v5 = v3.expand(2, -1)
    v5.zero_()
    v5.sum().backward(inputs=[v3], retain_graph=True)
    np.testing.assert_array_equal(v3.grad.numpy(), [2.0, 2.0, 2.0])
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        v5.sum().backward()
    assert v2.grad is None


# -- autograd.grad computes only the gradients on the way to its inputs (torch's
# task_should_compute_output): a derivative that raises is not taken for an input not asked for

@each_lib
def test_grad_skips_a_derivative_no_requested_input_needs(lib):
    a = lib.ones(3, requires_grad=True)
    b = lib.tensor(2.0, requires_grad=True)
    t = lib.tensor(4)                          # int64: the derivative for b raises
    y = a.addcdiv(b, t)
    (ga,) = lib.autograd.grad(y.sum(), [a], retain_graph=True)
    np.testing.assert_array_equal(ga.numpy(), np.ones(3))
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        lib.autograd.grad(y.sum(), [b], retain_graph=True)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        y.sum().backward()


@each_lib
def test_grad_through_an_in_place_op_on_a_view_asks_its_node_for_the_requested_inputs_only(lib):
    x = lib.zeros(4, requires_grad=True)
    b = lib.tensor(0.5, requires_grad=True)
    base = x.clone()
    view = base[1:3]
    view.addcdiv_(b, lib.tensor(3))             # a CopySlices around addcdiv's node
    (gx,) = lib.autograd.grad((base * lib.arange(4.0)).sum(), [x], create_graph=True)
    np.testing.assert_array_equal(gx.detach().numpy(), [0.0, 1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        lib.autograd.grad((base * 2.0).sum(), [b])
