"""Torch parity of saved tensors: what each op saves for its backward (so an
in-place change of it before backward raises, or does not), what a backward
frees (so a second one raises), and graphs that save their own output
being freed without the cycle collector.
"""
import gc
import weakref

import numpy as np
import pytest

import cextend as cx
import cextend as torch     # the tests written against torch's API spell cextend `torch`
from cextend.autograd import Function

from parity_helpers import real_torch


def test_indexing_saves_the_index_tensor_and_checks_its_version():
    x = cx.ones(3, requires_grad=True)
    idx = cx.tensor([0, 0])
    y = x[idx]
    idx[1] = 2
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_list_indices_are_saved_like_tensors():
    # torch turns [0, 1] into a tensor and saves it: freed by a backward,
    # so a second backward through the same node raises
    x = torch.tensor([[3.0, 1.0], [-2.5, 1.25]], requires_grad=True)
    picked = x[[0, -2, 1, -1]]
    picked.abs().sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        picked.unbind(-2)[2].sum().backward()
    y = x[[1, 0]]
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[4.0, 4.0], [0.0, 4.0]])      # abs: sign (+2, -2), then 2 x 1


MODIFIED = "modified by an inplace operation"


def test_take_saves_its_input_and_checks_its_version():
    # torch's take_backward(grad, self, index) reads self: it is saved, and
    # an in-place change before backward raises (seed 12101, program 9842)
    x = torch.tensor([-1.625, 0.8125, -0.0, 0.5, -0.625], requires_grad=True)
    y = x.take(torch.tensor([-1, 2]))
    with torch.no_grad():
        x.mul_(2)
    with pytest.raises(RuntimeError, match=MODIFIED):
        y.sum().backward()


def test_gather_saves_its_input():
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x.gather(1, torch.tensor([[0], [1]]))
    with torch.no_grad():
        x.add_(0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_index_copy_saves_its_source_and_checks_its_version():
    w = torch.ones(3, 2, requires_grad=True)
    source = w * 1
    y = torch.zeros(3, 4).index_copy(1, torch.tensor([0, 2]), source)
    source.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    x = torch.zeros(3, 4, requires_grad=True)
    plain = torch.ones(3, 2)
    y = x.index_copy(1, torch.tensor([0, 2]), plain)
    plain.add_(1)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.tile([0., 1., 0., 1.], (3, 1)))


def test_index_add_saves_source_for_its_own_gradient():
    def run(source_requires_grad):
        a = torch.tensor([1.0, 2.0], requires_grad=source_requires_grad)
        b = torch.zeros(3, requires_grad=True)
        y = b.index_add(0, torch.tensor([0, 1]), a)
        with torch.no_grad():
            a.zero_()
        y.sum().backward()
        return b
    np.testing.assert_array_equal(run(False).grad.numpy(), [1, 1, 1])
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        run(True)


@pytest.mark.parametrize("accumulate", [True, False])
def test_put_saves_source_only_for_its_own_gradient(accumulate):
    def run(needs):
        x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=needs == "self")
        s = torch.tensor([5.0, 6.0], requires_grad=needs == "source")
        y = torch.put(x, torch.tensor([1, 2]), s, accumulate)
        with torch.no_grad():
            s.add_(1)
        y.sum().backward()
        return x, s
    x, _ = run("self")
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 1], [1, 1]] if accumulate else [[1, 0], [0, 1]])
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        run("source")


def test_sort_saves_the_indices_it_returns():
    v = torch.tensor(-0.9375, requires_grad=True)
    values, indices = torch.sort(v)
    indices.mul_(indices)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        (values * 1.75).sum().backward()


def test_cummax_saves_its_input():
    x = torch.randn(4, 3, requires_grad=True)
    part = x[::2]
    values, _ = part.cummax(0)
    with torch.no_grad():
        part.zero_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        values.sum().backward()


def test_cumprod_gradient_at_the_first_zero_reads_the_saved_result():
    # torch reads the product before the first zero from the saved output:
    # a change to it through .data (no version bump) shows in the gradient
    x = torch.tensor([[1.6875, -0.0]], dtype=torch.float64, requires_grad=True).t()
    y = x.cumprod(0)
    y.data.mul_(2.0)
    y.sum().backward()
    assert x.grad is None
    leaf = torch.tensor([1.6875, 0.0], dtype=torch.float64, requires_grad=True)
    out = leaf.cumprod(0)
    out.data.mul_(2.0)
    out.backward(torch.tensor([1.0, 1.0], dtype=torch.float64))
    np.testing.assert_allclose(leaf.grad.numpy(), [2.0 * 1.6875 / 1.6875, 2.0 * 1.6875])


def test_sgn_saves_its_input_as_torch():
    # torch's SgnBackward saves self and the result: changing the input in
    # place before backward raises, though the real gradient is zero
    x = torch.tensor([[1.0, -2.0], [0.0, 3.0]], requires_grad=True)
    v = x.transpose(0, 1) * 1
    r = torch.sgn(v)
    with torch.no_grad():
        v.zero_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        r.sum().backward()
    y = x * 1
    y.sgn().sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 2)))


def test_addcdiv_always_saves_tensor2_and_addcmul_neither():
    # read by two of torch's formulas, so saved whatever gradient is wanted
    x = torch.randn(3, requires_grad=True).clone()
    t1, t2 = torch.randn(3), torch.rand(3) + 1
    y = x.addcdiv(t1, t2)
    with torch.no_grad():
        t2.mul_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    x = torch.randn(3, requires_grad=True).clone()
    t1, t2 = torch.randn(3), torch.rand(3) + 1
    y = x.addcmul(t1, t2)
    with torch.no_grad():
        t2.mul_(1)
    y.sum().backward()                  # addcmul keeps neither


# -- clamp's (Number, Number) overload -------------------------------------------------------------

@pytest.mark.parametrize("bounds", [("t", -1), (-1, "t")])
def test_clamp_reads_a_zero_dim_bound_beside_a_number_as_a_number(bounds):
    # torch matches clamp_(Scalar, Scalar): nothing is saved, so changing the
    # 0-d bound before backward does not raise
    m = torch.tensor(-1.75)
    low, high = (m if b == "t" else b for b in bounds)
    x = torch.tensor([[1.25], [0.5], [-3.0]], requires_grad=True)
    y = x.clone().clamp_(low, high)
    m.fill_(5.0)
    y.sum().backward()
    a = np.array([[1.25], [0.5], [-3.0]])
    lo, hi = (-1.75, -1) if bounds[0] == "t" else (-1, -1.75)
    inside = (a >= lo) & (a <= hi)
    np.testing.assert_array_equal(x.grad.numpy(), inside.astype(np.float32))
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        x.clamp(torch.tensor([[0.0], [1.0], [2.0]]), 2)


@pytest.mark.parametrize("shapes, modified", [(((1, 3, 4), (3, 4, 2)), "b"), (((2, 1, 3, 4), (3, 4, 2)), "b"),
                                              (((3, 4), (2, 4, 2)), "b")])
def test_matmul_saves_copies_where_torch_copies(shapes, modified):
    # torch's matmul expands and reshapes (or folds) its operands; where that
    # copies, an in-place change to the original afterwards does not matter
    sa, sb = shapes
    a = torch.ones(*sa, requires_grad=modified == "b") * 1.5
    b = torch.ones(*sb, requires_grad=modified == "a") * 0.5
    y = torch.matmul(a, b)
    (b if modified == "b" else a).add_(1)
    y.sum().backward()


@pytest.mark.parametrize("shapes", [((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (1, 4, 2))])
def test_matmul_saves_a_view_where_torch_does(shapes):
    # (2, 3, 4) @ (1, 4, 2): torch squeezes b (it requires grad) and folds a,
    # a view of it
    a = torch.ones(*shapes[0]) * 1.0
    b = torch.ones(*shapes[1], requires_grad=True) * 0.5
    y = torch.matmul(a, b)
    a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


# -- y.mul_(y) / y.div_(y): torch raises at backward (the saved operand changed) -------------------

@pytest.mark.parametrize("op", ["mul_", "div_"])
def test_in_place_mul_or_div_with_itself_as_operand_raises_at_backward(op):
    x = cx.tensor([3.0], requires_grad=True)
    y = x * 1
    getattr(y, op)(y)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    if real_torch is not None:
        tx = real_torch.tensor([3.0], requires_grad=True)
        ty = tx * 1
        getattr(ty, op)(ty)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            ty.sum().backward()


def test_in_place_add_with_itself_saves_nothing_and_backward_runs():
    x = cx.tensor([3.0], requires_grad=True)
    y = x * 1
    y.add_(y)
    y.sum().backward()
    assert x.grad.item() == 2.0


def test_an_operand_requiring_grad_without_an_edge_is_still_saved():
    # a view made under no_grad of a tensor requiring grad: torch saves it
    # for pow's backward, which then frees it
    y = torch.tensor([[1.0, 2.0]]).mv(torch.tensor([3.0, 1.0], requires_grad=True))
    with torch.no_grad():
        v = y.view(1, 1)
    z = v.pow(2)
    z.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        z.mean().backward()


# -- what div and pow save for a view made under no_grad -------------------------------------------

def _no_grad_view():
    w = torch.tensor([3.0, 1.0], requires_grad=True)
    y = torch.tensor([[1.0, 2.0]]).mv(w)
    with torch.no_grad():
        v = y.view(1, 1)
    assert v.requires_grad and v.grad_fn is None
    return v


@pytest.mark.parametrize("program", ["v / v", "v.pow(v)", "v / 2"])
def test_div_and_pow_save_unguarded_operands_without_an_edge(program):
    # torch's generated code saves div's `other` and pow's operands whatever
    # the edges (both formulas read them): a second backward finds them freed
    v = _no_grad_view()      # noqa: F841 - eval(program) reads it
    z = eval(program)
    z.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        z.sum().backward()


@pytest.mark.parametrize("program", ["v * v", "v * 2"])
def test_mul_of_a_no_grad_view_saves_nothing_so_backward_runs_twice(program):
    v = _no_grad_view()      # noqa: F841 - eval(program) reads it
    z = eval(program)
    z.sum().backward()
    z.sum().backward()          # nothing saved: a product reads each operand for the other's gradient


@pytest.mark.parametrize("program", ["v / v", "v.pow(v)", "v / torch.tensor([[2.0]], requires_grad=True)"])
def test_a_saved_no_grad_view_changed_in_place_is_refused_as_torch(program):
    v = _no_grad_view()
    z = eval(program)
    with torch.no_grad():
        v.add_(1)
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and its base or another view"):
        z.sum().backward()


def test_div_by_a_number_keeps_no_copy_of_a_no_grad_view():
    v = _no_grad_view()
    z = v / 2
    with torch.no_grad():
        v.add_(1)               # self is not saved (only other's gradient would read it)
    z.sum().backward()


FREED = "backward through the graph a second time"


# -- an in-place op made from a copy behaves as torch's one node -----------------------------------

@pytest.mark.parametrize("op", ["logit_", "erfinv_", "sigmoid_"])
def test_backward_with_inputs_frees_the_in_place_ops_saved_tensors(op):
    # backward(inputs=[x]) runs x's grad_fn (torch's LogitBackward0 for
    # x.logit_()), which frees what it saved: a second backward through it
    # raises (seed 12101, program 17690)
    x0 = torch.tensor([[0.25, 0.5], [0.75, 0.125]], requires_grad=True)
    x = x0 * 1
    getattr(x, op)()
    x.sum().backward(inputs=[x])
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 2)))
    with pytest.raises(RuntimeError, match=FREED):
        x.sum().backward()


def test_backward_with_inputs_frees_an_in_place_op_on_a_view():
    x0 = torch.tensor([[0.25, 0.5], [0.75, 0.125]], requires_grad=True)
    x = x0 * 1
    x[0].logit_()
    x.sum().backward(inputs=[x])
    with pytest.raises(RuntimeError, match=FREED):
        x.sum().backward()


def test_backward_with_inputs_and_retain_graph_keeps_the_saved_tensors():
    a = np.array([[0.25, 0.5], [0.75, 0.125]])
    x0 = torch.tensor(a, requires_grad=True)
    x = x0 * 1
    x.logit_()
    x.sum().backward(inputs=[x], retain_graph=True)
    x.sum().backward()
    np.testing.assert_allclose(x0.grad.numpy(), 1 / (a * (1 - a)), rtol=1e-6)


def test_backward_with_inputs_at_a_base_still_frees_its_copy_slices():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    y[:2].mul_(3)
    y.sum().backward(inputs=[y])
    with pytest.raises(RuntimeError, match=FREED):
        y.sum().backward()


# -- matmul of a matrix and a vector is torch's one MvBackward0 node -------------------------------

@pytest.mark.parametrize("make", [lambda a, v: a @ v, lambda a, v: torch.mv(a, v), lambda a, v: v @ v])
def test_backward_with_inputs_frees_mv_and_dot(make):
    # torch's MvBackward0 / DotBackward0 save both operands: running it with
    # nothing wanted (backward(inputs=[y])) frees them (seed 13501, program 13476)
    a = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    v = torch.tensor([1.0, -1.0, 0.5], requires_grad=True)
    y = make(a, v)
    assert y.grad_fn.name() in ("MvBackward0", "DotBackward0")
    y.sum().backward(inputs=[y])
    with pytest.raises(RuntimeError, match=FREED):
        y.sum().backward()


# -- saving an output creates no reference cycle ---------------------------------------------------

@pytest.mark.parametrize("op", ["tanh", "sigmoid", "exp", "sqrt"])
def test_a_graph_that_saves_its_output_is_freed_without_the_cycle_collector(op):
    x = cx.ones(4, requires_grad=True)
    gc.disable()
    try:
        y = getattr(x, op)()
        node = weakref.ref(y.grad_fn)
        del y
        assert node() is None, "the graph outlived its output: a reference cycle"
    finally:
        gc.enable()


def test_custom_function_saving_its_output_is_freed_without_the_cycle_collector():
    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            out = x * x
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, g):
            out, = ctx.saved_tensors
            return g * 2 * out.sqrt()

    x = cx.ones(2, requires_grad=True)
    gc.disable()
    try:
        y = Square.apply(x)
        node = weakref.ref(y.grad_fn)
        del y
        assert node() is None
    finally:
        gc.enable()
