"""MulConstant: tensor * constant on the C kernel (the "Extending PyTorch" example)."""
import numbers

from cextend import ops
from cextend.autograd.function import Function
from cextend.ops import cuda as _on_device
from cextend.functions._tensors import data, wrap
from cextend.tensor import Tensor


def _scalar(constant):
    if isinstance(constant, Tensor):
        if constant.numel() != 1:
            raise TypeError("constant must be a number or a one-element Tensor, got a Tensor of shape %s"
                            % list(constant.shape))
        return constant.item()
    if isinstance(constant, bool) or not isinstance(constant, numbers.Real):
        raise TypeError("constant must be a real number, got %s" % type(constant).__name__)
    return constant


class MulConstant(Function):
    """tensor * constant; the constant is not differentiated (its gradient is None)."""

    @staticmethod
    def forward(ctx, tensor, constant):
        ctx.constant = _scalar(constant)
        x = data(tensor, "tensor")
        if tensor.is_cuda:
            return wrap(_on_device.mul_constant(x, ctx.constant))
        return wrap(ops.mul_constant_forward(x, ctx.constant))

    @staticmethod
    def backward(ctx, grad_output):
        # Linear in its input, so the backward is the op itself: differentiable.
        return MulConstant.apply(grad_output, ctx.constant), None
