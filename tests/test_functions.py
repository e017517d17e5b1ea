"""The C-backed Functions: values, gradients, needs_input_grad, dtypes."""
import numpy as np
import pytest

import cextend as cx
from cextend import ops
from cextend.autograd import grad, gradcheck, gradgradcheck
from cextend.functions import Add, GlobalMaxPool, LinearFunction, MulConstant
from helpers import assert_gradients, assert_product_close, over_layouts


@pytest.mark.parametrize("dtype", [cx.float32, cx.float64])
def test_linear_matches_the_reference_in_both_dtypes(dtype):
    x = cx.randn(7, 5, dtype=dtype, requires_grad=True)
    w = cx.randn(3, 5, dtype=dtype, requires_grad=True)
    b = cx.randn(3, dtype=dtype, requires_grad=True)
    y = LinearFunction.apply(x, w, b)
    assert y.dtype is dtype
    assert_product_close(y.detach().numpy(), x.detach().numpy(), w.detach().numpy().T, dtype.numpy,
                         b.detach().numpy())
    g = np.random.default_rng(0).standard_normal((7, 3)).astype(dtype.numpy)
    y.backward(cx.from_numpy(g))
    assert_product_close(x.grad.numpy(), g, w.detach().numpy(), dtype.numpy)
    assert_product_close(w.grad.numpy(), g.T, x.detach().numpy(), dtype.numpy)
    assert_product_close(b.grad.numpy(), np.ones(7), g, dtype.numpy)


def test_linear_backward_computes_only_what_is_needed(monkeypatch):
    calls = []
    real = ops.linear_backward

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(ops, "linear_backward", spy)
    x = cx.randn(4, 3, dtype=cx.double)                    # no grad: dx is not computed
    w = cx.randn(2, 3, dtype=cx.double, requires_grad=True)
    b = cx.randn(2, dtype=cx.double)
    LinearFunction.apply(x, w, b).sum().backward()
    assert calls == [{"input": False, "weight": True, "bias": False}]


def test_linear_on_batched_and_strided_inputs():
    x = cx.randn(2, 3, 6, dtype=cx.double, requires_grad=True)
    w = cx.from_numpy(np.random.default_rng(1).standard_normal((3, 4)).T).requires_grad_()  # (4, 3), transposed
    y = LinearFunction.apply(x[:, :, ::2], w, None)
    assert y.shape == (2, 3, 4)
    assert gradcheck(lambda a, m: LinearFunction.apply(a[:, :, ::2], m), (x, w))
    assert gradgradcheck(lambda a, m: LinearFunction.apply(a[:, :, ::2], m), (x, w))


def test_linear_double_backward_matches_python_composition():
    x = cx.randn(4, 3, dtype=cx.double, requires_grad=True)
    w = cx.randn(2, 3, dtype=cx.double, requires_grad=True)
    y = LinearFunction.apply(x, w)
    gx, = grad((y * y).sum(), x, create_graph=True)
    ggw, = grad(gx.sum(), w)
    y2 = x.mm(w.t())
    gx2, = grad((y2 * y2).sum(), x, create_graph=True)
    ggw2, = grad(gx2.sum(), w)
    np.testing.assert_allclose(ggw.numpy(), ggw2.numpy(), rtol=1e-12, atol=1e-12)


def test_mul_constant_accepts_scalars_and_one_element_tensors():
    x = cx.randn(3, dtype=cx.double, requires_grad=True)
    y = MulConstant.apply(x, cx.tensor([2.0]))
    assert "MulConstantBackward" in repr(y)
    np.testing.assert_allclose(y.detach().numpy(), 2 * x.detach().numpy())
    with pytest.raises(TypeError, match="constant must be"):
        MulConstant.apply(x, cx.ones(2))
    with pytest.raises(TypeError, match="constant must be a real number"):
        MulConstant.apply(x, "2")


def test_add_requires_matching_shapes_and_dtypes():
    a = cx.randn(2, 3, dtype=cx.double, requires_grad=True)
    with pytest.raises(ValueError, match="same shape"):
        Add.apply(a, cx.randn(3, dtype=cx.double))
    with pytest.raises(TypeError, match="all operands must share one dtype"):
        Add.apply(a, cx.randn(2, 3))
    b = cx.randn(2, 3, dtype=cx.double, requires_grad=True)
    Add.apply(a, b).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.ones((2, 3)))
    np.testing.assert_array_equal(b.grad.numpy(), np.ones((2, 3)))
    assert a.grad._data is not b.grad._data         # never shared storage


def test_global_max_pool_values_indices_and_gradients():
    x = cx.randn(2, 3, 4, 5, dtype=cx.double, requires_grad=True)
    values, indices = GlobalMaxPool.apply(x)
    flat = x.detach().numpy().reshape(2, 3, 20)
    np.testing.assert_array_equal(values.detach().numpy(), flat.max(-1))
    np.testing.assert_array_equal(indices.numpy(), flat.argmax(-1))
    assert indices.dtype is cx.int64 and not indices.requires_grad
    assert gradcheck(lambda t: GlobalMaxPool.apply(t)[0], (x,))
    assert gradgradcheck(lambda t: GlobalMaxPool.apply(t)[0], (x,))


def test_c_functions_reject_non_tensors_by_name():
    with pytest.raises(TypeError, match="input must be a cextend Tensor"):
        LinearFunction.apply(np.ones((2, 2)), cx.ones(2, 2))
    with pytest.raises(TypeError, match="input must be a cextend Tensor"):
        GlobalMaxPool.apply([1.0])


# The extension-ffi example Functions on every input layout:
# name -> (function of the inputs, input shapes).
C_FUNCTIONS = {
    "linear": (lambda x, w, b: LinearFunction.apply(x, w, b), [(5, 4), (3, 4), (3,)]),
    "linear_no_bias": (lambda x, w: LinearFunction.apply(x, w), [(5, 4), (3, 4)]),
    "linear_batched": (lambda x, w, b: LinearFunction.apply(x, w, b), [(2, 3, 4), (3, 4), (3,)]),
    "mul_constant": (lambda a: MulConstant.apply(a, 2.5), [(3, 4)]),
    "add": (lambda a, b: Add.apply(a, b), [(3, 4), (3, 4)]),
    "global_max_pool": (lambda a: GlobalMaxPool.apply(a)[0], [(2, 3, 3, 4)]),
}


@over_layouts(C_FUNCTIONS)
def test_c_functions_gradcheck_and_gradgradcheck_on_every_layout(name, layout):
    assert_gradients(*C_FUNCTIONS[name], layout)
