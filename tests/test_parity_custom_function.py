"""Torch parity of custom autograd Functions: non-Tensor outputs,
mark_non_differentiable and mark_dirty, numpy inside forward, the
setup_context style, and gradcheck's undefined-gradient check.
"""
import numpy as np
import pytest

import cextend as cx
from cextend.autograd import Function, gradcheck


def test_a_non_tensor_output_gets_none_in_backward():
    seen = []

    class WithNumber(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, 3.0

        @staticmethod
        def backward(ctx, g, g_number):
            seen.append(g_number)
            return g * 2

    x = cx.ones(2, requires_grad=True)
    out, number = WithNumber.apply(x)
    assert number == 3.0
    out.sum().backward()
    assert seen == [None]
    np.testing.assert_array_equal(x.grad.numpy(), [2, 2])


def test_mark_non_differentiable_on_a_returned_input_gives_a_new_tensor_without_grad():
    class PassThrough(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_non_differentiable(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    x = cx.ones(2, requires_grad=True)
    y = x * 1
    out = PassThrough.apply(y)
    assert out is not y and not out.requires_grad and out.grad_fn is None


def test_mark_dirty_on_an_input_that_is_not_returned_raises():
    class Sneaky(Function):
        @staticmethod
        def forward(ctx, x, y):
            x.mul_(2)
            ctx.mark_dirty(x)
            return y * 1

        @staticmethod
        def backward(ctx, g):
            return None, g

    x = cx.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="marked as dirty during the forward method were not returned"):
        Sneaky.apply(x * 1, x)


def test_numpy_inside_a_custom_forward_is_allowed():
    class ViaNumpy(Function):
        @staticmethod
        def forward(ctx, x):
            return cx.from_numpy(np.exp(x.numpy()))

        @staticmethod
        def backward(ctx, g):
            return g

    x = cx.zeros(2, requires_grad=True)
    out = ViaNumpy.apply(x)
    assert out.requires_grad
    with pytest.raises(RuntimeError, match="Can't call numpy"):
        x.numpy()


def test_a_setup_context_style_function_gets_its_inputs_in_setup_context():
    class Scale(Function):
        @staticmethod
        def forward(x, k):
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    x = cx.ones(2, requires_grad=True)
    Scale.apply(x, 3.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3, 3])


# -- gradcheck(fast_mode=True) also checks undefined output gradients ------------------------------

class _IgnoresUndefined(Function):
    """Right whenever its output's gradient is defined, but it returns a
    non-zero gradient when that gradient is undefined (None): only the
    undefined-gradient check can see this."""

    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return cx.ones_like(x) if g is None else g * 2


def _ignores_undefined(x):
    return _IgnoresUndefined.apply(x)


@pytest.mark.parametrize("fast_mode", [False, True])
def test_gradcheck_runs_the_undefined_gradient_check_in_both_modes(fast_mode):
    x = cx.randn(3, dtype=cx.double, requires_grad=True)
    assert not gradcheck(_ignores_undefined, (x,), fast_mode=fast_mode, raise_exception=False)
